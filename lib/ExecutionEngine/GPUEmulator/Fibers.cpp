//===- Fibers.cpp - the GPU emulator's threads as fibers -----------------===//
//
// Part of the kvcache-mlir project.
//
// Each GPU thread of a block is a fiber. Stacks are mmap'd once (with a
// guard page) and reused; a fiber first starts through makecontext and
// setcontext, and then switches with __builtin_setjmp/__builtin_longjmp,
// also to start its thread again in the next block (the signal-mask system
// calls of swapcontext or setcontext would cost 10x a switch; libc's
// _longjmp, intercepted by AddressSanitizer, makes a system call per switch
// there: see SwitchPoint). A switch from the scheduler abandons no
// instrumented frame with locals (enter's context is static); when a failure
// ends the launch on a fiber, endLaunchOnFiber unpoisons that stack.
//
// AddressSanitizer must know which stack runs (its stack-bound checks and
// the unpoisoning at every longjmp use them): each switch is announced
// (start) before it and completed (finish) on the other side. The scheduler
// records the main stack's bounds when a fiber first runs; a fiber keeps its
// fake stack across the switches it resumes from. A fiber that leaves for
// good (its thread finished, or a failure ended the launch) destroys its
// fake stack; one left suspended by an ended launch or a block given up
// after a report takes its fake stack back when it restarts, and its stack
// is unpoisoned then: the frames abandoned there never returned.
//
//===----------------------------------------------------------------------===//

#undef _FORTIFY_SOURCE // longjmp between stacks is what fibers do.

#include "Runtime.h"

#include <cstdio>

#include <sys/mman.h>
#include <ucontext.h>

#ifdef KVEMU_ASAN
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#endif

using namespace mlir::kvcache::emulator;

namespace {

/// On the scheduler's side of a switch (switchTo, enter): AddressSanitizer
/// would call __asan_handle_no_return before each __builtin_longjmp (a
/// noreturn call), which asks the kernel for the signal stack (sigaltstack)
/// and unpoisons the rest of the stack. They access no memory of their own
/// worth checking. The fibers' side keeps it: without it there, a call after
/// a device assert had ended a launch read stale redzones on a fiber's
/// stack (test_emulator.py under the sanitizers).
#define KVEMU_SWITCHES_STACKS __attribute__((no_sanitize("address")))

constexpr size_t kStackBytes = 1 << 20;
constexpr size_t kGuardBytes = 4096;

#ifdef KVEMU_ASAN
/// On `fiber`, right after switching to it from the scheduler.
void finishSwitchOnFiber(Fiber &fiber) {
  FiberPool &pool = theProcess.fibers;
  __sanitizer_finish_switch_fiber(fiber.fakeStack, &pool.mainStackBottom,
                                  &pool.mainStackSize);
  fiber.fakeStack = nullptr;
}
#endif

/// Back to the scheduler for good.
[[noreturn]] void leaveFiber() {
  FiberPool &pool = theProcess.fibers;
#ifdef KVEMU_ASAN
  // The fiber ends: its fake stack goes.
  __sanitizer_start_switch_fiber(nullptr, pool.mainStackBottom,
                                 pool.mainStackSize);
#endif
  __builtin_longjmp(pool.scheduler, 1);
}

/// The bottom frame of a fiber's stack, which never returns.
void fiberMain() {
  // Every later start of the fiber lands here (switchTo).
  __builtin_setjmp(theProcess.fibers.current->restart);
  Fiber &fiber = *theProcess.fibers.current;
#ifdef KVEMU_ASAN
  finishSwitchOnFiber(fiber);
#endif
  theLaunch->entry(theLaunch->params);
  fiber.state = ThreadState::Done;
  leaveFiber();
}

/// Runs fiberMain on `fiber`'s stack for the first time.
[[noreturn]] KVEMU_SWITCHES_STACKS void enter(Fiber &fiber) {
  // Not a local: setcontext leaves this frame for good, and the redzones
  // AddressSanitizer puts around a local would stay on the scheduler's
  // stack. Read by setcontext only.
  static ucontext_t start;
  getcontext(&start);
  start.uc_stack.ss_sp = fiber.stack;
  start.uc_stack.ss_size = kStackBytes;
  start.uc_link = nullptr;
  makecontext(&start, fiberMain, 0);
  fiber.entered = true;
  setcontext(&start);
  abortQuietly(); // setcontext returns only when it fails
}

} // namespace

void mlir::kvcache::emulator::ensureFibers(uint32_t count) {
  std::vector<std::unique_ptr<Fiber>> &fibers = theProcess.fibers.fibers;
  while (fibers.size() < count) {
    auto fiber = std::make_unique<Fiber>();
    void *memory = mmap(nullptr, kStackBytes + kGuardBytes,
                        PROT_READ | PROT_WRITE,
                        MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (memory == MAP_FAILED) {
      std::fputs("kvcache gpu emulator: cannot map a thread stack\n", stderr);
      abortQuietly();
    }
    mprotect(memory, kGuardBytes, PROT_NONE); // guard page below the stack
    fiber->stack = static_cast<char *>(memory) + kGuardBytes;
    fiber->linear = fibers.size();
    fibers.push_back(std::move(fiber));
  }
}

void mlir::kvcache::emulator::resetFiber(Fiber &fiber, Dim3 id) {
#ifdef KVEMU_ASAN
  // Left suspended, or abandoned by a failure: the redzones of its
  // instrumented frames must not outlive them.
  if (fiber.started && fiber.state != ThreadState::Done)
    __asan_unpoison_memory_region(fiber.stack, kStackBytes);
#endif
  fiber.state = ThreadState::Ready;
  fiber.started = false;
  fiber.waitSite = nullptr;
  fiber.id = id;
  fiber.copies.clear();
  fiber.groupSizes.clear();
  fiber.committedCopies = 0;
  fiber.executions.clear();
}

KVEMU_SWITCHES_STACKS void mlir::kvcache::emulator::switchTo(Fiber &fiber) {
  FiberPool &pool = theProcess.fibers;
  pool.current = &fiber;
  ++theProcess.totals.switches;
  if (__builtin_setjmp(pool.scheduler) == 0) {
#ifdef KVEMU_ASAN
    __sanitizer_start_switch_fiber(&pool.schedulerFakeStack, fiber.stack,
                                   kStackBytes);
#endif
    if (!fiber.started) {
      fiber.started = true;
      if (!fiber.entered)
        enter(fiber);
      __builtin_longjmp(fiber.restart, 1);
    }
    __builtin_longjmp(fiber.context, 1);
  }
#ifdef KVEMU_ASAN
  __sanitizer_finish_switch_fiber(pool.schedulerFakeStack, nullptr, nullptr);
#endif
  pool.current = nullptr;
}

void mlir::kvcache::emulator::yieldToScheduler() {
  FiberPool &pool = theProcess.fibers;
  Fiber *fiber = pool.current;
  if (__builtin_setjmp(fiber->context) == 0) {
#ifdef KVEMU_ASAN
    __sanitizer_start_switch_fiber(&fiber->fakeStack, pool.mainStackBottom,
                                   pool.mainStackSize);
#endif
    __builtin_longjmp(pool.scheduler, 1);
  }
#ifdef KVEMU_ASAN
  finishSwitchOnFiber(*fiber);
#endif
  pool.current = fiber;
}

void mlir::kvcache::emulator::endLaunchOnFiber() {
#ifdef KVEMU_ASAN
  // The instrumented frames this abandons (the failing runtime call's)
  // keep their redzones poisoned: clear the whole stack here, not only
  // what AddressSanitizer's noreturn handling before leaveFiber clears (the
  // rest of the stack, when that call is not inlined into a longjmp).
  __asan_unpoison_memory_region(theProcess.fibers.current->stack,
                                kStackBytes);
#endif
  leaveFiber();
}
