//===- EmulatorTestHost.cpp - a C++ host of the GPU emulator's runtime ---===//
//
// Part of the kvcache-mlir project.
//
// kvcache-emulator-test-host: runs hand-written kernels, C++ functions that
// call the runtime's entry points (EmulatorABI.h) as the code of
// kvcache-emulate-nvvm does, through __kvemu_launch, and prints what the
// control interface (GPUEmulator.h) and the kernels' buffers show, for
// test/Integration/GPU/Emulator/capture-mode.test. No JIT is involved: the
// runtime's behaviour at a failure is tested on its own.
//
//   kvcache-emulator-test-host            capture mode, the deprecated trap,
//                                         KVCACHE_EMU_ON_ERROR=continue
//   kvcache-emulator-test-host default    a race without capture: aborts
//
//===----------------------------------------------------------------------===//

#include "KVCache/ExecutionEngine/EmulatorABI.h"
#include "KVCache/ExecutionEngine/GPUEmulator.h"

#include <csetjmp>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <malloc.h>

using namespace mlir::kvcache::emulator;

namespace {

constexpr int32_t kGlobalWrite =
    kAccessWrite | int32_t(AddressSpace::Global) << kAccessSpaceShift;
constexpr int32_t kSharedWrite =
    kAccessWrite | int32_t(AddressSpace::Shared) << kAccessSpaceShift;

int32_t sreg(SpecialRegister reg) { return __kvemu_sreg(int32_t(reg)); }

int32_t linearThread() {
  return sreg(SpecialRegister::TidX) +
         sreg(SpecialRegister::NtidX) * sreg(SpecialRegister::TidY);
}

int32_t linearBlock() {
  return sreg(SpecialRegister::CtaidX) +
         sreg(SpecialRegister::NctaidX) * sreg(SpecialRegister::CtaidY);
}

/// What the kernels write: how many threads ran past their failure point,
/// and one mark per thread of a launch.
int32_t ranPast = 0;
int32_t marks[4 * 64];

/// Every thread writes word 0 of `params[0]`: a race between the first
/// two threads. Those that get past it count themselves.
void racy(void **params) {
  auto *word = static_cast<int32_t *>(params[0]);
  __kvemu_access(word, 4, kGlobalWrite, "host.cpp:racy:store");
  *word = linearThread();
  ++ranPast;
}

/// Every thread writes its own mark.
void mark(void **params) {
  int32_t *slot = &marks[linearBlock() * 64 + linearThread()];
  __kvemu_access(slot, 4, kGlobalWrite, "host.cpp:mark:store");
  *slot = 1;
}

/// Thread (0,0,0) of block (0,0,0) asserts; the others count themselves.
void asserting(void **params) {
  if (linearBlock() == 0 && linearThread() == 0)
    __kvemu_assertfail("tid != 0", "host.cpp", 3, "asserting", 1);
  ++ranPast;
}

/// Threads 0..31 wait at a barrier; thread 32 then writes past the shared
/// allocation, abandoning the waiting ones when that ends the launch; in a
/// launch of 32 threads, every thread gets past the barrier.
void barrierThenOutOfBounds(void **params) {
  auto *shared = static_cast<uint8_t *>(__kvemu_shared(0));
  int32_t thread = linearThread();
  if (thread == 32) {
    __kvemu_access(shared + 256, 4, kSharedWrite, "host.cpp:oob:store");
    ++ranPast;
    return;
  }
  __kvemu_barrier("host.cpp:oob:barrier");
  ++ranPast;
}

/// Thread 0 launches a kernel.
void nested(void **params) {
  if (linearThread() == 0) {
    const int64_t sizes[1] = {0};
    __kvemu_launch(mark, "inner", sizes, 0, 1, 1, 1, 1, 1, 1, 0, nullptr,
                   "host.cpp:nested:launch");
  }
  ++ranPast;
}

void launch(void (*entry)(void **), const char *name, int64_t blocks,
            int64_t threads, void *buffer = nullptr, int64_t sharedBytes = 0) {
  void *params[1] = {buffer};
  const int64_t sizes[1] = {sharedBytes};
  __kvemu_launch(entry, name, sizes, sharedBytes ? 1 : 0, blocks, 1, 1,
                 threads, 1, 1, 0, params, "host.cpp:launch");
}

int32_t countMarks() {
  int32_t count = 0;
  for (int32_t value : marks)
    count += value;
  std::memset(marks, 0, sizeof(marks));
  return count;
}

/// Prints the reports and the error count, then clears them.
void printReports(const char *what) {
  std::printf("%s: errors %d, ran past %d\n%s", what,
              kvcache_emu_error_count(), ranPast, kvcache_emu_reports());
  kvcache_emu_clear_reports();
  ranPast = 0;
}

/// A host call of three launches, the first racy: in capture mode it ends
/// the launch and the two others return at once until the reports are
/// cleared.
void laterLaunchesAreSkipped() {
  int32_t word = 0;
  launch(racy, "racy", 2, 64, &word);
  launch(mark, "mark", 4, 64);
  launch(mark, "mark", 4, 64);
  printReports("race");
  std::printf("marks after the failed call: %d\n", countMarks());
  launch(mark, "mark", 4, 64);
  std::printf("marks after clearing: %d\n", countMarks());
}

/// Heap bytes in use after `launches` failing launches, less before.
long heapGrowth(int launches) {
  int32_t word = 0;
  auto fails = [&] {
    launch(racy, "racy", 1, 64, &word);
    kvcache_emu_clear_reports();
  };
  for (int i = 0; i < 10; ++i)
    fails();
  long before = long(mallinfo2().uordblks);
  for (int i = 0; i < launches; ++i)
    fails();
  ranPast = 0;
  return long(mallinfo2().uordblks) - before;
}

/// The deprecated trap: the failed launch jumps back to `setjmp`.
void trap() {
  static jmp_buf env;
  static volatile int landed = 0;
  int32_t word = 0;
  if (setjmp(env) == 0) {
    kvcache_emu_set_trap(&env);
    launch(racy, "racy", 1, 64, &word);
    std::printf("trap: not taken\n");
  } else {
    landed = 1;
  }
  kvcache_emu_set_trap(nullptr);
  std::printf("trap: landed %d, errors %d\n", landed,
              kvcache_emu_error_count());
  // Without clearing the reports: the next call launches.
  launch(mark, "mark", 1, 64);
  std::printf("marks after the trap: %d\n", countMarks());
  kvcache_emu_clear_reports();
}

int runCaptureMode() {
  kvcache_emu_set_capture(1);
  laterLaunchesAreSkipped();

  launch(asserting, "asserting", 4, 64);
  printReports("assert");

  launch(barrierThenOutOfBounds, "oob", 1, 64, nullptr, 256);
  printReports("abandoned at a barrier");
  launch(barrierThenOutOfBounds, "oob", 1, 32, nullptr, 256);
  printReports("the same kernel, 32 threads");

  launch(nested, "outer", 1, 64);
  printReports("nested");

  long growth = heapGrowth(1000);
  std::printf("heap growth over 1000 failed launches: %s\n",
              growth < 16384 ? "none" : "LEAK");
  if (growth >= 16384)
    std::printf("(%ld bytes)\n", growth);

  setenv("KVCACHE_EMU_ON_ERROR", "continue", 1);
  int32_t word = 0;
  launch(racy, "racy", 1, 64, &word);
  launch(mark, "mark", 1, 64);
  printReports("continue");
  std::printf("marks: %d\n", countMarks());
  unsetenv("KVCACHE_EMU_ON_ERROR");

  kvcache_emu_set_capture(0);
  trap();
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  if (argc > 1 && std::strcmp(argv[1], "default") == 0) {
    int32_t word = 0;
    launch(racy, "racy", 1, 64, &word);
    std::printf("not reached\n");
    return 0;
  }
  return runCaptureMode();
}
