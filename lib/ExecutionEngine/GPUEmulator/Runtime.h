//===- Runtime.h - state shared by the GPU emulator's parts -----*- C++ -*-===//
//
// Part of the kvcache-mlir project.
//
// Private to lib/ExecutionEngine/GPUEmulator (libKVCacheGPUEmulator.so, the
// runtime behind `kvcache-emulate-nvvm`). A launch runs every block, one
// after another; the threads of a block are fibers that switch only where
// a GPU thread would wait for others: at a barrier and at a warp-collective
// operation. The parts, one job each:
//
//   Fibers.cpp          stacks, switching, AddressSanitizer's annotations
//   Scheduler.cpp       launches, blocks, thread order, barriers, sregs
//   ShadowMemory.cpp    memory accesses and their checks (races, cp.async
//                       hazards, shared bounds, uninitialized reads)
//   WarpCollectives.cpp shuffle, ldmatrix, mma.sync
//   Profile.cpp         the traffic profile (KVCACHE_EMU_PROFILE)
//   Reports.cpp         failure reports, KVCACHE_EMU_ON_ERROR, statistics
//   DeviceLibrary.cpp   __assertfail, vprintf, libdevice and approximate math
//   Conversions.cpp     the fp8 conversion instructions
//   HostShims.cpp       the host's mgpu* calls
//   Control.cpp         the control interface of in-process hosts
//
// The state has three lifetimes: the Process (what outlives launches), the
// Launch and the running Block; the last two live in the frame of the
// launch on the host's stack, and theLaunch and theBlock point to them
// while it runs.
//
// Errors: a check returns a Status up to the exported function the kernel
// called. When a failure ends the launch (an in-process host captures
// reports), that function, which holds no object with a destructor, leaves
// the thread's fiber for good (endLaunchOnFiber), and __kvemu_launch
// returns normally: no jump ever crosses a frame that owns an object.
//
//===----------------------------------------------------------------------===//

#ifndef KVCACHE_LIB_EXECUTIONENGINE_GPUEMULATOR_RUNTIME_H
#define KVCACHE_LIB_EXECUTIONENGINE_GPUEMULATOR_RUNTIME_H

#include "Shadow.h"

#include "KVCache/ExecutionEngine/EmulatorABI.h"
#include "KVCache/ExecutionEngine/GPUEmulator.h"

#include <csetjmp>
#include <cstdint>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define KVEMU_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define KVEMU_ASAN 1
#endif

/// The library's interface (EmulatorABI.h, GPUEmulator.h, the mgpu* calls):
/// everything else is hidden.
#define KVEMU_EXPORT extern "C" __attribute__((visibility("default")))

namespace mlir::kvcache::emulator {

constexpr uint32_t kMaxThreads = 1024;

struct Dim3 {
  uint32_t x = 1, y = 1, z = 1;
};

/// What a check tells its caller.
enum class [[nodiscard]] Status : uint8_t {
  /// Nothing to report.
  Ok,
  /// A failure was reported; the thread goes on (KVCACHE_EMU_ON_ERROR=
  /// continue).
  Reported,
  /// A failure ended the launch (capture mode): every caller returns at
  /// once, up to the exported function the kernel called, which then calls
  /// endLaunchOnFiber, or up to the scheduler.
  EndLaunch,
};

inline bool endsLaunch(Status status) { return status == Status::EndLaunch; }

//===----------------------------------------------------------------------===//
// Threads (Fibers.cpp)
//===----------------------------------------------------------------------===//

enum class ThreadState { Ready, AtBarrier, AtWarpCollective, Done };

/// The warp-collective operations: every lane of the member mask (all 32
/// for ldmatrix and mma.sync, which are `.sync.aligned`) waits at the same
/// site until the last one arrives.
enum class WarpCollective { Shuffle, LdMatrix, Mma };

/// The most 32-bit registers a lane deposits (mma.sync: 4 of A, 2 of B, 4
/// of C) and receives (ldmatrix .x4, mma.sync's f32 D).
constexpr int kMaxCollectiveWords = 10;
constexpr int kMaxCollectiveResults = 4;

/// The most bytes a cp.async copies (PTX's cp-size: 4, 8 or 16).
constexpr int32_t kMaxCopyBytes = 16;

/// A cp.async copy: its source bytes are read when it is issued.
struct PendingCopy {
  uint8_t *dst;
  const char *site;
  uint32_t bytes;
  uint8_t data[kMaxCopyBytes];
};

/// Where a fiber switch resumes: the buffer of the compiler's
/// __builtin_setjmp / __builtin_longjmp (frame, resume address, stack
/// pointer; the callee-saved registers are saved by the function that calls
/// __builtin_setjmp). Not libc's: AddressSanitizer intercepts _longjmp and
/// then asks the kernel for the signal stack (sigaltstack) and unpoisons the
/// rest of the stack at every switch. Under the sanitizers the kernels of
/// the 16-head tensor-core emulated test ran in 25 s with _longjmp, 12 s
/// with these (and Fibers.cpp's uninstrumented scheduler side); 3.3 s
/// without the sanitizers.
using SwitchPoint = void *[5];

/// One GPU thread: a fiber whose stack is made once and reused by every
/// block of every launch.
struct Fiber {
  SwitchPoint context;
  /// The start of fiberMain, where the thread starts again in later blocks.
  SwitchPoint restart;
  char *stack = nullptr;
  ThreadState state = ThreadState::Ready;
  /// Whether the thread started in the running block.
  bool started = false;
  /// Whether `restart` is set: the fiber ran once.
  bool entered = false;
  uint32_t linear = 0;
  Dim3 id;
  const char *waitSite = nullptr;
  void *fakeStack = nullptr; // AddressSanitizer's, while switched away
  // Warp-collective operation in progress: the lanes it waits for, its
  // operands and its result.
  WarpCollective collective = WarpCollective::Shuffle;
  uint32_t memberMask = 0;
  int32_t shuffleKind = 0;
  uint32_t shuffleValue = 0, shuffleB = 0, shuffleC = 0;
  uint64_t shuffleResult = 0;
  uint32_t ldmatrixCount = 0;
  bool ldmatrixTranspose = false;
  int32_t mmaFlags = 0;
  uint32_t collectiveWords[kMaxCollectiveWords] = {};
  uint32_t collectiveResults[kMaxCollectiveResults] = {};
  // cp.async: the copies issued and not landed, oldest first; the first
  // `committedCopies` of them form the committed groups, of `groupSizes`
  // copies each (oldest first), the rest are not committed yet.
  std::vector<PendingCopy> copies;
  std::vector<uint32_t> groupSizes;
  uint32_t committedCopies = 0;
  // Profile: executions of each access site by this thread.
  std::unordered_map<const char *, uint32_t> executions;
};

/// The threads' fibers and the scheduler's context.
struct FiberPool {
  std::vector<std::unique_ptr<Fiber>> fibers;
  /// The running thread; null on the scheduler.
  Fiber *current = nullptr;
  SwitchPoint scheduler;
#ifdef KVEMU_ASAN
  void *schedulerFakeStack = nullptr;
  const void *mainStackBottom = nullptr;
  size_t mainStackSize = 0;
#endif
};

/// Makes fibers until there are `count`.
void ensureFibers(uint32_t count);
/// Makes `fiber` start the kernel from its beginning at its next switch.
void resetFiber(Fiber &fiber, Dim3 id);
/// On the scheduler: runs `fiber` until it waits, finishes or fails.
void switchTo(Fiber &fiber);
/// On a fiber: back to the scheduler, until it resumes this fiber. The
/// scheduler may never resume it (a failure can end the launch meanwhile):
/// no frame on the fiber's stack at a yield may own an object with a
/// destructor.
void yieldToScheduler();
/// On a fiber, from an exported function with no object left on the
/// fiber's stack: leaves the fiber for good, back to the scheduler, which
/// ends the failed launch.
[[noreturn]] void endLaunchOnFiber();

//===----------------------------------------------------------------------===//
// Reports and statistics (Reports.cpp)
//===----------------------------------------------------------------------===//

struct Reports {
  std::string text;
  int errors = 0;
  /// kvcache_emu_set_capture: record reports instead of printing them, and
  /// end the launch at a failure instead of aborting.
  bool capture = false;
  /// kvcache_emu_set_trap (deprecated): capture, then jump here when a
  /// failure ended a launch.
  jmp_buf *trap = nullptr;
  /// A failure ended a launch: later launches return at once until the
  /// reports are cleared.
  bool stopped = false;
  /// KVCACHE_EMU_ON_ERROR=continue: the (kind, site, other site) reported.
  std::set<std::tuple<std::string, const char *, const char *>> seen;
  bool exitStatusInstalled = false;

  bool capturing() const { return capture || trap; }
};

/// Reports a failed check of `kind` by the thread `first` (and `second`,
/// when two threads are involved) of the running block at `site`;
/// `otherSite` only tells reports apart. Aborts, unless
/// KVCACHE_EMU_ON_ERROR=continue or capture mode.
Status fail(const char *kind, const Dim3 *first, const Dim3 *second,
            const char *site, const char *otherSite = nullptr);
/// Reports a failure that no mode continues after (a device assert, a
/// launch error): aborts, or in capture mode ends the launch.
Status failFatally(const std::string &line);
/// Aborts without the crash report a host tool may have installed for
/// SIGABRT: a report line already said what went wrong.
[[noreturn]] void abortQuietly();

/// Totals over the process, printed at exit with KVCACHE_EMU_STATS=1.
struct Totals {
  uint64_t launches = 0, blocks = 0, threads = 0, switches = 0,
           accesses = 0;
  double seconds = 0;
  bool printAtExit = false;
};

/// CPU time of this thread (the fibers run on it).
double cpuSeconds();
/// Reads KVCACHE_EMU_STATS until it is set, then prints the totals at exit.
void installStatistics();

//===----------------------------------------------------------------------===//
// The process, the launch, the block
//===----------------------------------------------------------------------===//

/// What outlives a launch.
struct Process {
  FiberPool fibers;
  Reports reports;
  GlobalShadow globalShadow;
  Totals totals;
  /// The last launch's id (the epoch of global memory's records).
  uint32_t lastLaunchId = 0;
};

/// Never destroyed: handlers registered with atexit read it.
extern Process &theProcess;

/// Counters of the traffic profile (KVCACHE_EMU_PROFILE).
struct ProfileCounters {
  uint64_t globalLoadBytes = 0, globalStoreBytes = 0;
  uint64_t loadSectors = 0, storeSectors = 0;
  uint64_t idealLoadSectors = 0, idealStoreSectors = 0;
  uint64_t bankConflicts = 0, barriers = 0, cpAsyncBytes = 0;
};

/// One warp-level memory instruction of the profile, or one phase of it
/// where the hardware splits the instruction (ldmatrix: one 8x8 matrix, 8
/// row addresses, per phase).
struct InstructionKey {
  uint32_t warp;
  const char *site;
  uint32_t execution;
  uint32_t phase;
  bool operator==(const InstructionKey &other) const {
    return warp == other.warp && site == other.site &&
           execution == other.execution && phase == other.phase;
  }
};
struct InstructionKeyHash {
  size_t operator()(const InstructionKey &key) const {
    return std::hash<const void *>()(key.site) ^ (size_t(key.warp) << 40) ^
           (size_t(key.execution) * 0x9e3779b97f4a7c15ull) ^
           (size_t(key.phase) << 32);
  }
};
struct InstructionAccesses {
  bool shared = false, store = false;
  std::vector<std::pair<uintptr_t, uint32_t>> ranges;
};

/// The profile of a launch: its counters, and the running block's
/// instructions, added to them when the block ends.
struct Profile {
  std::string path; // empty: not profiling
  ProfileCounters counters;
  std::unordered_map<InstructionKey, InstructionAccesses, InstructionKeyHash>
      instructions;
};

/// KVCACHE_EMU_ORDER.
enum class Order { Forward, Reverse, Random };

/// One __kvemu_launch.
struct Launch {
  void (*entry)(void **) = nullptr;
  void **params = nullptr;
  const char *kernel = "";
  Dim3 grid, block;
  uint32_t threads = 0;
  uint32_t id = 0;
  int32_t dynamicSharedBytes = 0;
  // Options, read from the environment at every launch.
  Order order = Order::Forward;
  bool continueOnError = false;
  /// Blocks and threads in KVCACHE_EMU_ORDER=random:<seed> order.
  std::mt19937_64 random;
  Profile profile;
  /// Blocks started so far (the epoch of shared memory's records).
  uint32_t blocksRun = 0;
  /// A failure ended the launch (capture mode).
  bool failed = false;
};

/// The shared memory of a block: the kernel module's allocations, each
/// followed by a red zone, laid out once per launch and reset per block.
struct SharedMemory {
  std::vector<uint8_t> arena;
  std::vector<int32_t> owner;    // allocation of each byte, -1: red zone
  std::vector<uint8_t> written;  // initialized bytes
  std::vector<int32_t> inFlight; // thread + 1 of a pending cp.async, or 0
  std::vector<ByteShadow> shadow;
  std::vector<size_t> offsets; // of each allocation
  uint64_t bytes = 0;          // in allocations
  uintptr_t begin = 0, end = 0;

  bool contains(uintptr_t address) const {
    return address >= begin && address < end;
  }
};

/// The running block.
struct Block {
  Dim3 id;
  uint32_t linear = 0;
  /// Barrier interval: barriers completed so far.
  uint32_t interval = 0;
  /// The lanes of each warp that wait at a warp-collective operation.
  uint32_t atWarpCollective[kMaxThreads / 32] = {};
  /// cp.async copies issued and not yet retired.
  uint32_t pendingCopies = 0;
  SharedMemory shared;
};

/// The running launch and block; null between launches.
extern Launch *theLaunch;
extern Block *theBlock;

/// Aborts: a device function was called outside a kernel launch.
[[noreturn]] void calledOutsideLaunch();

/// The running thread.
inline Fiber &self() {
  Fiber *fiber = theProcess.fibers.current;
  if (!fiber) [[unlikely]]
    calledOutsideLaunch();
  return *fiber;
}

/// The fiber of thread `linear` of the running block.
inline Fiber &fiberAt(uint32_t linear) {
  return *theProcess.fibers.fibers[linear];
}

//===----------------------------------------------------------------------===//
// Shared memory (ShadowMemory.cpp)
//===----------------------------------------------------------------------===//

/// Lays out the allocations of `sizes` (0: the dynamic one, of
/// `dynamicBytes`).
void layOutSharedMemory(SharedMemory &shared, const int64_t *sizes,
                        int32_t count, int32_t dynamicBytes);
/// A new block: no byte written, no copy in flight.
void resetSharedMemory(SharedMemory &shared);
/// Checks and counts an access of shared memory by the running thread (in
/// profile phase `phase` of its warp instruction); `inBounds`: whether it
/// lies inside a shared allocation.
Status sharedAccess(uintptr_t address, uint64_t bytes, bool write,
                    bool atomic, const char *site, uint32_t phase,
                    bool &inBounds);

//===----------------------------------------------------------------------===//
// Warp-collective operations (WarpCollectives.cpp)
//===----------------------------------------------------------------------===//

/// Whether `fiber`, waiting at a warp-collective operation, names a lane
/// that cannot join it: one missing from the block (null) or not waiting
/// at a warp-collective operation. Sets `missing` to it.
bool findMissingLane(const Fiber &fiber, const Fiber *&missing);

//===----------------------------------------------------------------------===//
// Profile (Profile.cpp)
//===----------------------------------------------------------------------===//

/// Counts an access by the running thread in the profile (phase `phase`
/// of its warp instruction).
void recordInstruction(uintptr_t address, uint32_t bytes, bool shared,
                       bool store, const char *site, uint32_t phase);
/// Adds the block's warp-level instructions to the launch's counters.
void finishInstructions(Profile &profile);
/// Appends the launch's JSON line to its profile file.
void writeProfile(const Launch &launch, uint64_t sharedBytes);

//===----------------------------------------------------------------------===//
// Control (Control.cpp)
//===----------------------------------------------------------------------===//

/// When kvcache_emu_set_trap set a trap: jumps there (a failure ended the
/// launch). Called by __kvemu_launch with no object left in its frame.
void leaveThroughTrap();

} // namespace mlir::kvcache::emulator

#endif // KVCACHE_LIB_EXECUTIONENGINE_GPUEMULATOR_RUNTIME_H
