//===- GPUEmulator.cpp - runs NVVM kernels on the CPU, with checks -------===//
//
// Part of the kvcache-mlir project.
//
// The runtime behind `kvcache-emulate-nvvm` (libKVCacheGPUEmulator.so). A
// launch runs every block, one after another; the threads of a block are
// fibers that switch only where a GPU thread would wait for others: at a
// barrier and at a warp-collective operation (shuffle, ldmatrix, mma.sync),
// where each lane deposits its operands and the last lane to arrive computes
// every lane's result. Memory accesses of the kernel call
// __kvemu_access first, which checks them (races, cp.async hazards, shared
// bounds, uninitialized shared reads) and counts the traffic profile.
//
// Race rule: two accesses of one launch to the same byte, at least one a
// write, by different threads conflict when they come from different
// blocks, or from one block within one barrier interval. Each byte keeps
// its last write and up to two reads (by different threads).
//
// Fibers: stacks are mmap'd once (with a guard page) and reused; a fiber
// starts through makecontext/setcontext and then switches with
// _setjmp/_longjmp (a signal-mask syscall per switch would cost 10x).
//
//===----------------------------------------------------------------------===//

#undef _FORTIFY_SOURCE // longjmp between stacks is what fibers do.

#include "KVCache/ExecutionEngine/GPUEmulator.h"

#include <algorithm>
#include <ctime>
#include <cmath>
#include <csignal>
#include <csetjmp>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define KVEMU_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define KVEMU_ASAN 1
#endif
#ifdef KVEMU_ASAN
#include <sanitizer/common_interface_defs.h>
#endif

#define KVEMU_EXPORT extern "C" __attribute__((visibility("default")))

namespace {

//===----------------------------------------------------------------------===//
// Constants shared with the pass (EmulateNVVM.cpp)
//===----------------------------------------------------------------------===//

constexpr int32_t kAccessWrite = 1;
constexpr int32_t kAccessAtomic = 2;
constexpr int32_t kAccessSpaceShift = 8;
constexpr uint32_t kSharedSpace = 3;

enum SpecialRegister {
  TidX, TidY, TidZ, NtidX, NtidY, NtidZ, CtaidX, CtaidY, CtaidZ, NctaidX,
  NctaidY, NctaidZ, LaneId, WarpSize, WarpId, NWarpId, LaneMaskEq,
  LaneMaskLe, LaneMaskLt, LaneMaskGe, LaneMaskGt, DynamicSmemSize
};

enum ShuffleKind { Bfly = 0, Up = 1, Down = 2, Idx = 3 };

/// Flags of `__kvemu_mma` (the pass's EmulatorMmaFlags): the shape
/// m16n8k16 (else m16n8k8), bf16 multiplicands (else f16), f16 accumulator
/// C and result D (else f32).
constexpr int32_t kMmaK16 = 1;
constexpr int32_t kMmaBF16 = 2;
constexpr int32_t kMmaAccumulatorF16 = 4;
constexpr int32_t kMmaResultF16 = 8;

constexpr size_t kStackBytes = 1 << 20;
constexpr size_t kPageBytes = 4096;
constexpr size_t kSharedAlign = 128;
constexpr size_t kRedZone = 128;
constexpr uint32_t kMaxThreads = 1024;

//===----------------------------------------------------------------------===//
// Reports
//===----------------------------------------------------------------------===//

struct Reports {
  std::string text;
  int errors = 0;
  jmp_buf *trap = nullptr;
  std::set<std::tuple<std::string, const char *, const char *>> seen;
  bool atexitInstalled = false;
};
Reports &reports() {
  static Reports *instance = new Reports;
  return *instance;
}

/// Aborts without the crash report a host tool may have installed for
/// SIGABRT (mlir-runner prints a stack dump and asks for a bug report):
/// the report line already said what went wrong.
[[noreturn]] void abortQuietly() {
  std::fflush(nullptr);
  std::signal(SIGABRT, SIG_DFL);
  std::abort();
}

void exitWithFailure() {
  std::fflush(nullptr);
  _exit(1);
}

//===----------------------------------------------------------------------===//
// Launch state
//===----------------------------------------------------------------------===//

struct Dim3 {
  uint32_t x = 1, y = 1, z = 1;
};

/// One access as the shadow memory remembers it.
struct AccessRecord {
  uint32_t launch = 0; // 0: none
  uint32_t block = 0;
  uint32_t interval = 0;
  uint32_t thread = 0;
  const char *site = nullptr;
};

struct ByteShadow {
  AccessRecord write;
  AccessRecord reads[2];
};

struct PendingCopy {
  uint8_t *dst;
  std::vector<uint8_t> data;
  const char *site;
};

enum class ThreadState { Ready, AtBarrier, AtWarpCollective, Done };

/// The warp-collective operations: every lane of the member mask (all 32
/// for ldmatrix and mma.sync, which are `.sync.aligned`) waits at the same
/// site until the last one arrives.
enum class WarpCollective { Shuffle, LdMatrix, Mma };

/// The most 32-bit registers a lane deposits (mma.sync: 4 of A, 2 of B, 4
/// of C) and receives (ldmatrix .x4, mma.sync's f32 D).
constexpr int kMaxCollectiveWords = 10;
constexpr int kMaxCollectiveResults = 4;

struct Fiber {
  jmp_buf context;
  ucontext_t start;
  char *stack = nullptr;
  ThreadState state = ThreadState::Ready;
  bool started = false;
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
  // cp.async: copies not yet committed, then committed groups (oldest first).
  std::vector<PendingCopy> uncommitted;
  std::vector<std::vector<PendingCopy>> groups;
  // Profile: executions of each access site by this thread.
  std::unordered_map<const char *, uint32_t> executions;
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

struct Profile {
  uint64_t globalLoadBytes = 0, globalStoreBytes = 0;
  uint64_t loadSectors = 0, storeSectors = 0;
  uint64_t idealLoadSectors = 0, idealStoreSectors = 0;
  uint64_t bankConflicts = 0, barriers = 0, cpAsyncBytes = 0;
};

struct Emulator {
  // Fibers (reused across launches).
  std::vector<std::unique_ptr<Fiber>> fibers;
  Fiber *current = nullptr;
  jmp_buf scheduler;
#ifdef KVEMU_ASAN
  bool trapSwitchPending = false;
  void *schedulerFakeStack = nullptr;
  const void *mainStackBottom = nullptr;
  size_t mainStackSize = 0;
#endif

  // The launch.
  bool active = false;
  uint32_t launchId = 0;
  const char *kernel = "";
  Dim3 grid, block, blockId;
  uint32_t blockLinear = 0;
  uint32_t threads = 0;
  uint32_t interval = 0;
  enum class Order { Forward, Reverse, Random } order = Order::Forward;
  std::mt19937_64 random;
  bool continueOnError = false;
  std::string profilePath;
  bool profiling = false;
  Profile profile;
  std::unordered_map<InstructionKey, InstructionAccesses, InstructionKeyHash>
      instructions;

  // Shared memory of the running block.
  std::vector<uint8_t> arena;
  std::vector<int32_t> owner;    // allocation of each byte, -1: red zone
  std::vector<uint8_t> written;  // initialized bytes
  std::vector<int32_t> inFlight; // thread + 1 of a pending cp.async, or 0
  std::vector<ByteShadow> sharedShadow;
  std::vector<size_t> sharedOffsets;
  uint64_t sharedBytes = 0;
  int32_t dynamicSharedBytes = 0;

  // Totals over the process, printed at exit with KVCACHE_EMU_STATS=1.
  struct Totals {
    uint64_t launches = 0, blocks = 0, threads = 0, switches = 0,
             accesses = 0;
    double seconds = 0;
  } totals;
  bool statsInstalled = false;

  // Global memory shadow, by 4 KiB page.
  std::unordered_map<uintptr_t, std::unique_ptr<ByteShadow[]>> pages;
  uintptr_t lastPage = ~uintptr_t(0);
  ByteShadow *lastShadow = nullptr;
};

Emulator &emu() {
  static Emulator *instance = new Emulator;
  return *instance;
}

//===----------------------------------------------------------------------===//
// Failure reports
//===----------------------------------------------------------------------===//

std::string describeThread(const Fiber &fiber) {
  char text[64];
  std::snprintf(text, sizeof(text), "(%u,%u,%u)", fiber.id.x, fiber.id.y,
                fiber.id.z);
  return text;
}

void deliver(const std::string &line, bool fatal) {
  Reports &r = reports();
  r.text += line;
  r.text += '\n';
  ++r.errors;
  if (r.trap && (fatal || !emu().continueOnError)) {
    Emulator &e = emu();
    e.active = false;
#ifdef KVEMU_ASAN
    // Leaving the fiber for good: its fake stack goes; kvcache_emu_set_trap,
    // the host's first call after landing, finishes the switch.
    if (e.current) {
      e.trapSwitchPending = true;
      __sanitizer_start_switch_fiber(nullptr, e.mainStackBottom,
                                     e.mainStackSize);
    }
#endif
    e.current = nullptr;
    longjmp(*r.trap, 1);
  }
  if (!r.trap) {
    std::fputs(line.c_str(), stderr);
    std::fputc('\n', stderr);
    std::fflush(stderr);
  }
  if (fatal || !emu().continueOnError)
    abortQuietly();
  if (!r.trap && !r.atexitInstalled) {
    r.atexitInstalled = true;
    std::atexit(exitWithFailure);
  }
}

/// Reports a failed check of `kind` by `first` (and `second`, when two
/// threads are involved) at `site`; `otherSite` only tells reports apart.
void fail(const char *kind, const Fiber *first, const Fiber *second,
          const char *site, const char *otherSite = nullptr) {
  Emulator &e = emu();
  if (e.continueOnError &&
      !reports().seen.insert({kind, site, otherSite}).second)
    return;
  char blockText[64];
  std::snprintf(blockText, sizeof(blockText), "(%u,%u,%u)", e.blockId.x,
                e.blockId.y, e.blockId.z);
  std::string line = std::string("kvcache gpu emulator: ") + kind +
                     ": kernel " + e.kernel + " block " + blockText;
  if (first && second)
    line += " threads " + describeThread(*first) + " and " +
            describeThread(*second);
  else if (first)
    line += " thread " + describeThread(*first);
  line += std::string(" at ") + (site ? site : "unknown");
  deliver(line, /*fatal=*/false);
}

/// A thread identity from a record of this launch.
Fiber *fiberOf(const AccessRecord &record) {
  Emulator &e = emu();
  if (record.block != e.blockLinear || record.thread >= e.fibers.size())
    return nullptr;
  return e.fibers[record.thread].get();
}

void failWithRecord(const char *kind, const AccessRecord &other,
                    const char *site) {
  Emulator &e = emu();
  Fiber *otherFiber = fiberOf(other);
  if (otherFiber || other.launch == 0) {
    fail(kind, e.current, otherFiber, site, other.site);
    return;
  }
  // The other thread ran in an earlier block of this launch.
  Fiber stub;
  uint32_t bx = e.block.x, by = e.block.y;
  stub.id = {other.thread % bx, (other.thread / bx) % by,
             other.thread / (bx * by)};
  fail(kind, e.current, &stub, site, other.site);
}

//===----------------------------------------------------------------------===//
// Fibers
//===----------------------------------------------------------------------===//

void fiberMain();

// AddressSanitizer must know which stack runs (its stack-bound checks and
// the unpoisoning at every longjmp use them): each switch is announced
// (start) before it and completed (finish) on the other side. The scheduler
// records the main stack's bounds when a fiber first runs; a fiber keeps its
// fake stack across the switches it resumes from.
#ifdef KVEMU_ASAN
/// On a fiber, right after switching to it from the scheduler.
void finishSwitchOnFiber(void *fakeStack) {
  Emulator &e = emu();
  __sanitizer_finish_switch_fiber(fakeStack, &e.mainStackBottom,
                                  &e.mainStackSize);
}
#endif

void ensureFibers(uint32_t count) {
  Emulator &e = emu();
  while (e.fibers.size() < count) {
    auto fiber = std::make_unique<Fiber>();
    void *memory = mmap(nullptr, kStackBytes + kPageBytes,
                        PROT_READ | PROT_WRITE,
                        MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (memory == MAP_FAILED) {
      std::fputs("kvcache gpu emulator: cannot map a thread stack\n", stderr);
      abortQuietly();
    }
    mprotect(memory, kPageBytes, PROT_NONE); // guard page below the stack
    fiber->stack = static_cast<char *>(memory) + kPageBytes;
    fiber->linear = e.fibers.size();
    e.fibers.push_back(std::move(fiber));
  }
}

/// Runs `fiber` until it waits or finishes.
void switchTo(Fiber &fiber) {
  Emulator &e = emu();
  e.current = &fiber;
  ++e.totals.switches;
  if (_setjmp(e.scheduler) == 0) {
#ifdef KVEMU_ASAN
    __sanitizer_start_switch_fiber(&e.schedulerFakeStack, fiber.stack,
                                   kStackBytes);
#endif
    if (!fiber.started) {
      fiber.started = true;
      getcontext(&fiber.start);
      fiber.start.uc_stack.ss_sp = fiber.stack;
      fiber.start.uc_stack.ss_size = kStackBytes;
      fiber.start.uc_link = nullptr;
      makecontext(&fiber.start, fiberMain, 0);
      setcontext(&fiber.start);
    }
    _longjmp(fiber.context, 1);
  }
#ifdef KVEMU_ASAN
  __sanitizer_finish_switch_fiber(e.schedulerFakeStack, nullptr, nullptr);
#endif
  e.current = nullptr;
}

/// Back to the scheduler; returns when the scheduler resumes this fiber.
void yieldToScheduler() {
  Emulator &e = emu();
  Fiber *self = e.current;
  if (_setjmp(self->context) == 0) {
#ifdef KVEMU_ASAN
    __sanitizer_start_switch_fiber(&self->fakeStack, e.mainStackBottom,
                                   e.mainStackSize);
#endif
    _longjmp(e.scheduler, 1);
  }
#ifdef KVEMU_ASAN
  finishSwitchOnFiber(self->fakeStack);
#endif
  e.current = self;
}

void (*currentEntry)(void **) = nullptr;
void **currentParams = nullptr;

void fiberMain() {
#ifdef KVEMU_ASAN
  finishSwitchOnFiber(nullptr);
#endif
  Emulator &e = emu();
  currentEntry(currentParams);
  Fiber *self = e.current;
  self->state = ThreadState::Done;
#ifdef KVEMU_ASAN
  // The fiber ends: its fake stack goes.
  __sanitizer_start_switch_fiber(nullptr, e.mainStackBottom, e.mainStackSize);
#endif
  _longjmp(e.scheduler, 1);
}

//===----------------------------------------------------------------------===//
// Memory checks
//===----------------------------------------------------------------------===//

AccessRecord currentRecord(const char *site) {
  Emulator &e = emu();
  AccessRecord record;
  record.launch = e.launchId;
  record.block = e.blockLinear;
  record.interval = e.interval;
  record.thread = e.current ? e.current->linear : 0;
  record.site = site;
  return record;
}

bool conflicts(const AccessRecord &earlier, const AccessRecord &now) {
  if (earlier.launch != now.launch || earlier.launch == 0)
    return false;
  if (earlier.block != now.block)
    return true;
  return earlier.thread != now.thread && earlier.interval == now.interval;
}

/// Checks one byte access against its shadow and records it.
bool checkByte(ByteShadow &shadow, const AccessRecord &now, bool write) {
  if (conflicts(shadow.write, now)) {
    failWithRecord("race", shadow.write, now.site);
    return false;
  }
  if (write) {
    for (AccessRecord &read : shadow.reads)
      if (conflicts(read, now)) {
        failWithRecord("race", read, now.site);
        return false;
      }
    shadow.write = now;
    shadow.reads[0] = shadow.reads[1] = AccessRecord();
    return true;
  }
  AccessRecord *slot = nullptr;
  for (AccessRecord &read : shadow.reads)
    if (read.launch == now.launch && read.block == now.block &&
        read.thread == now.thread)
      slot = &read;
  if (!slot)
    for (AccessRecord &read : shadow.reads)
      if (read.launch != now.launch)
        slot = slot ? slot : &read;
  if (!slot)
    slot = &shadow.reads[1];
  *slot = now;
  return true;
}

ByteShadow *globalShadow(uintptr_t address) {
  Emulator &e = emu();
  uintptr_t page = address / kPageBytes;
  if (page != e.lastPage) {
    std::unique_ptr<ByteShadow[]> &entry = e.pages[page];
    if (!entry)
      entry.reset(new ByteShadow[kPageBytes]);
    e.lastPage = page;
    e.lastShadow = entry.get();
  }
  return e.lastShadow + address % kPageBytes;
}

void recordInstruction(uintptr_t address, uint32_t bytes, bool shared,
                       bool store, const char *site, uint32_t phase) {
  Emulator &e = emu();
  Fiber &fiber = *e.current;
  uint32_t execution = fiber.executions[site]++;
  InstructionAccesses &accesses =
      e.instructions[{fiber.linear / 32, site, execution, phase}];
  accesses.shared = shared;
  accesses.store = store;
  accesses.ranges.push_back({address, bytes});
  if (!shared) {
    (store ? e.profile.globalStoreBytes : e.profile.globalLoadBytes) += bytes;
  }
}

/// Adds the block's warp-level instructions to the launch's counters.
void finishInstructions() {
  Emulator &e = emu();
  for (auto &[key, accesses] : e.instructions) {
    std::vector<uintptr_t> bytes;
    for (auto [address, size] : accesses.ranges)
      for (uint32_t i = 0; i < size; ++i)
        bytes.push_back(address + i);
    std::sort(bytes.begin(), bytes.end());
    bytes.erase(std::unique(bytes.begin(), bytes.end()), bytes.end());
    uint64_t distinct = bytes.size();
    if (accesses.shared) {
      std::vector<uintptr_t> words;
      for (uintptr_t byte : bytes)
        words.push_back(byte / 4);
      words.erase(std::unique(words.begin(), words.end()), words.end());
      uint64_t perBank[32] = {};
      for (uintptr_t word : words)
        ++perBank[word % 32];
      uint64_t wavefronts = *std::max_element(perBank, perBank + 32);
      uint64_t ideal = (distinct + 127) / 128;
      if (wavefronts > ideal)
        e.profile.bankConflicts += wavefronts - ideal;
      continue;
    }
    std::vector<uintptr_t> sectors;
    for (uintptr_t byte : bytes)
      sectors.push_back(byte / 32);
    sectors.erase(std::unique(sectors.begin(), sectors.end()), sectors.end());
    uint64_t ideal = (distinct + 31) / 32;
    if (accesses.store) {
      e.profile.storeSectors += sectors.size();
      e.profile.idealStoreSectors += ideal;
    } else {
      e.profile.loadSectors += sectors.size();
      e.profile.idealLoadSectors += ideal;
    }
  }
  e.instructions.clear();
}

bool inArena(uintptr_t address) {
  Emulator &e = emu();
  uintptr_t begin = reinterpret_cast<uintptr_t>(e.arena.data());
  return address >= begin && address < begin + e.arena.size();
}

/// Checks that [address, address + bytes) lies inside one shared allocation;
/// returns its offset in the arena or -1 after a report.
int64_t sharedOffset(uintptr_t address, uint64_t bytes, const char *site) {
  Emulator &e = emu();
  uintptr_t begin = reinterpret_cast<uintptr_t>(e.arena.data());
  if (!inArena(address) || address + bytes > begin + e.arena.size()) {
    fail("shared bounds", e.current, nullptr, site);
    return -1;
  }
  size_t offset = address - begin;
  int32_t allocation = e.owner[offset];
  for (uint64_t i = 0; i < bytes; ++i)
    if (e.owner[offset + i] < 0 || e.owner[offset + i] != allocation) {
      fail("shared bounds", e.current, nullptr, site);
      return -1;
    }
  return offset;
}

void checkInFlight(size_t offset, uint64_t bytes, const char *site) {
  Emulator &e = emu();
  for (uint64_t i = 0; i < bytes; ++i)
    if (int32_t owner = e.inFlight[offset + i]) {
      fail("cp.async", e.current, e.fibers[owner - 1].get(), site);
      return;
    }
}

/// Checks and counts an access of shared memory by the current thread (in
/// profile phase `phase` of its warp instruction); returns whether it lies
/// inside a shared allocation.
bool sharedAccess(uintptr_t address, uint64_t bytes, bool write, bool atomic,
                  const char *site, uint32_t phase = 0) {
  Emulator &e = emu();
  int64_t offset = sharedOffset(address, bytes, site);
  if (offset < 0)
    return false;
  checkInFlight(offset, bytes, site);
  if (!write)
    for (uint64_t i = 0; i < bytes; ++i)
      if (!e.written[offset + i]) {
        fail("uninitialized", e.current, nullptr, site);
        break;
      }
  if (!atomic) {
    AccessRecord now = currentRecord(site);
    for (uint64_t i = 0; i < bytes; ++i)
      if (!checkByte(e.sharedShadow[offset + i], now, write))
        break;
  }
  if (write)
    std::memset(&e.written[offset], 1, bytes);
  if (e.profiling)
    recordInstruction(address, bytes, /*shared=*/true, write, site, phase);
  return true;
}

void globalAccess(uintptr_t address, uint64_t bytes, bool write, bool atomic,
                  const char *site) {
  Emulator &e = emu();
  if (!atomic) {
    AccessRecord now = currentRecord(site);
    for (uint64_t i = 0; i < bytes; ++i)
      if (!checkByte(*globalShadow(address + i), now, write))
        break;
  }
  if (e.profiling)
    recordInstruction(address, bytes, /*shared=*/false, write, site,
                      /*phase=*/0);
}

/// The copies of `fiber` in the oldest committed group land.
void retireOldestGroup(Fiber &fiber) {
  Emulator &e = emu();
  std::vector<PendingCopy> group = std::move(fiber.groups.front());
  fiber.groups.erase(fiber.groups.begin());
  for (PendingCopy &copy : group) {
    size_t offset = copy.dst - e.arena.data();
    for (size_t i = 0; i < copy.data.size(); ++i)
      e.inFlight[offset + i] = 0;
    AccessRecord now = currentRecord(copy.site);
    for (size_t i = 0; i < copy.data.size(); ++i)
      if (!checkByte(e.sharedShadow[offset + i], now, /*write=*/true))
        break;
    std::memcpy(copy.dst, copy.data.data(), copy.data.size());
    std::memset(&e.written[offset], 1, copy.data.size());
  }
}

//===----------------------------------------------------------------------===//
// Scheduling a block
//===----------------------------------------------------------------------===//

std::vector<uint32_t> threadOrder() {
  Emulator &e = emu();
  std::vector<uint32_t> order(e.threads);
  for (uint32_t i = 0; i < e.threads; ++i)
    order[i] = i;
  if (e.order == Emulator::Order::Reverse)
    std::reverse(order.begin(), order.end());
  else if (e.order == Emulator::Order::Random)
    std::shuffle(order.begin(), order.end(), e.random);
  return order;
}

/// The source lane and validity of `shuffle` for `lane` (PTX shfl.sync).
std::pair<uint32_t, bool> shuffleSource(const Fiber &fiber, uint32_t lane) {
  uint32_t b = fiber.shuffleB & 31, c = fiber.shuffleC & 31;
  uint32_t segmask = (fiber.shuffleC >> 8) & 31;
  int32_t maxLane = (lane & segmask) | (c & ~segmask);
  int32_t minLane = lane & segmask;
  int32_t j = 0;
  bool valid = false;
  switch (fiber.shuffleKind) {
  case Up:
    j = int32_t(lane) - int32_t(b);
    valid = j >= maxLane;
    break;
  case Down:
    j = int32_t(lane) + int32_t(b);
    valid = j <= maxLane;
    break;
  case Bfly:
    j = int32_t(lane ^ b);
    valid = j <= maxLane;
    break;
  default:
    j = minLane | int32_t(b & ~segmask);
    valid = j <= maxLane;
    break;
  }
  return {valid ? uint32_t(j) : lane, valid};
}

/// Gives every lane of `mask` in the warp at `warpBase` its shuffle result.
void completeShuffle(uint32_t warpBase, uint32_t mask) {
  Emulator &e = emu();
  for (uint32_t lane = 0; lane < 32; ++lane) {
    if (!(mask >> lane & 1))
      continue;
    Fiber &member = *e.fibers[warpBase + lane];
    auto [source, valid] = shuffleSource(member, lane);
    if (valid && !(mask >> source & 1)) {
      fail("shuffle", &member, e.fibers[warpBase + source].get(),
           member.waitSite);
      source = lane;
    }
    uint32_t value = e.fibers[warpBase + source]->shuffleValue;
    member.shuffleResult = uint64_t(value) | (uint64_t(valid) << 32);
  }
}

/// ldmatrix .m8n8 .b16: lane 8m + r deposited row r of matrix m (16 bytes,
/// 8 elements). Without .trans, lane l receives elements 2(l%4) and
/// 2(l%4)+1 of row l/4 of each matrix; with .trans, elements l/4 of rows
/// 2(l%4) and 2(l%4)+1 (the matrix transposed). Lower half first.
void completeLdMatrix(uint32_t warpBase) {
  Emulator &e = emu();
  uint32_t matrices = e.fibers[warpBase]->ldmatrixCount;
  bool transpose = e.fibers[warpBase]->ldmatrixTranspose;
  auto element = [&](uint32_t rowLane, uint32_t column) {
    const uint32_t *row = e.fibers[warpBase + rowLane]->collectiveWords;
    return uint32_t(row[column / 2] >> (16 * (column % 2)) & 0xffff);
  };
  for (uint32_t lane = 0; lane < 32; ++lane) {
    Fiber &member = *e.fibers[warpBase + lane];
    uint32_t group = lane / 4, pair = 2 * (lane % 4);
    for (uint32_t matrix = 0; matrix < matrices; ++matrix) {
      uint32_t rows = 8 * matrix;
      member.collectiveResults[matrix] =
          transpose ? element(rows + pair, group) |
                          element(rows + pair + 1, group) << 16
                    : element(rows + group, pair) |
                          element(rows + group, pair + 1) << 16;
    }
  }
}

/// IEEE binary16 to binary32 (exact).
float halfToFloat(uint32_t half) {
  uint32_t exponent = half >> 10 & 0x1f, mantissa = half & 0x3ff;
  float magnitude;
  if (exponent == 0) {
    magnitude = std::ldexp(float(mantissa), -24);
  } else {
    uint32_t bits = exponent == 0x1f ? 0x7f800000 | mantissa << 13
                                     : (exponent + 112) << 23 | mantissa << 13;
    std::memcpy(&magnitude, &bits, 4);
  }
  return half & 0x8000 ? -magnitude : magnitude;
}

/// binary32 to binary16, rounding to nearest even (as cvt.rn.f16.f32).
uint32_t floatToHalf(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, 4);
  uint32_t sign = bits >> 16 & 0x8000, magnitude = bits & 0x7fffffff;
  if (magnitude > 0x7f800000) // NaN: quiet, payload kept where it fits
    return sign | 0x7e00 | (magnitude >> 13 & 0x3ff);
  if (magnitude >= 0x477ff000) // rounds past 65504: infinity
    return sign | 0x7c00;
  if (magnitude < 0x38800000) // below 2^-14: a subnormal half (or zero)
    return sign | uint32_t(std::nearbyint(std::fabs(value) * 0x1p24f));
  uint32_t rounded = magnitude + 0xfff + (magnitude >> 13 & 1);
  return sign | ((rounded >> 13) - (112 << 10));
}

/// The value of 16-bit element `index` (0: the lower half) of `word`,
/// a bf16 or f16.
float multiplicand(uint32_t word, uint32_t index, bool bf16) {
  uint32_t bits = word >> (16 * index) & 0xffff;
  if (!bf16)
    return halfToFloat(bits);
  bits <<= 16;
  float value;
  std::memcpy(&value, &bits, 4);
  return value;
}

/// Row and column of one element of a fragment.
struct FragmentCoord {
  uint32_t row, col;
};

// The fragments of mma.m16n8k16 and mma.m16n8k8 with f16/bf16
// multiplicands (PTX ISA, "Matrix Fragments for mma.m16n8k16 with floating
// point type" and "for mma.m16n8k8"): groupID = lane / 4, threadID_in_group
// = lane % 4, each .b32 register of A and B holding two 16-bit elements
// (lower half first).

/// A (16 x k): element i (0..k/2-1) of `lane`: row groupID (+8 for
/// i % 4 >= 2), column 2 threadID_in_group + i % 2 (+8 for i >= 4).
FragmentCoord fragmentA(uint32_t lane, uint32_t i) {
  return {lane / 4 + 8 * (i / 2 % 2), 2 * (lane % 4) + i % 2 + 8 * (i / 4)};
}

/// B (k x 8): element i (0..k/4-1): row 2 threadID_in_group + i % 2 (+8
/// for i >= 2), column groupID.
FragmentCoord fragmentB(uint32_t lane, uint32_t i) {
  return {2 * (lane % 4) + i % 2 + 8 * (i / 2), lane / 4};
}

/// C and D (16 x 8): element i (0..3): row groupID (+8 for i >= 2), column
/// 2 threadID_in_group + i % 2. f32: one register each; f16: two a
/// register.
FragmentCoord fragmentC(uint32_t lane, uint32_t i) {
  return {lane / 4 + 8 * (i / 2), 2 * (lane % 4) + i % 2};
}

/// mma.sync D = A B + C for the warp at `warpBase`. Lane registers
/// deposited: A in words 0..k/4-1, B in 4..4+k/8-1, C in 6..9 (f32) or 6..7
/// (f16x2). D[r][c] is C[r][c] converted to f32, then
/// fma(A[r][0], B[0][c], .), ..., fma(A[r][k-1], B[k-1][c], .) in f32 (the
/// products of f16 or bf16 values are exact in f32), rounded once to f16
/// for an f16 D. The GPU's order and rounding of the sum are unspecified.
void completeMma(uint32_t warpBase) {
  Emulator &e = emu();
  int32_t flags = e.fibers[warpBase]->mmaFlags;
  uint32_t k = flags & kMmaK16 ? 16 : 8;
  bool bf16 = flags & kMmaBF16;
  bool accumulatorF16 = flags & kMmaAccumulatorF16;
  bool resultF16 = flags & kMmaResultF16;
  float a[16][16], b[16][8], d[16][8];
  for (uint32_t lane = 0; lane < 32; ++lane) {
    const uint32_t *words = e.fibers[warpBase + lane]->collectiveWords;
    for (uint32_t i = 0; i < k / 2; ++i) {
      FragmentCoord at = fragmentA(lane, i);
      a[at.row][at.col] = multiplicand(words[i / 2], i % 2, bf16);
    }
    for (uint32_t i = 0; i < k / 4; ++i) {
      FragmentCoord at = fragmentB(lane, i);
      b[at.row][at.col] = multiplicand(words[4 + i / 2], i % 2, bf16);
    }
    for (uint32_t i = 0; i < 4; ++i) {
      FragmentCoord at = fragmentC(lane, i);
      float c;
      if (accumulatorF16)
        c = halfToFloat(words[6 + i / 2] >> (16 * (i % 2)) & 0xffff);
      else
        std::memcpy(&c, &words[6 + i], 4);
      d[at.row][at.col] = c;
    }
  }
  for (uint32_t row = 0; row < 16; ++row)
    for (uint32_t col = 0; col < 8; ++col)
      for (uint32_t i = 0; i < k; ++i)
        d[row][col] = std::fma(a[row][i], b[i][col], d[row][col]);
  for (uint32_t lane = 0; lane < 32; ++lane) {
    uint32_t *results = e.fibers[warpBase + lane]->collectiveResults;
    std::fill_n(results, kMaxCollectiveResults, 0u);
    for (uint32_t i = 0; i < 4; ++i) {
      FragmentCoord at = fragmentC(lane, i);
      if (resultF16)
        results[i / 2] |= floatToHalf(d[at.row][at.col]) << (16 * (i % 2));
      else
        std::memcpy(&results[i], &d[at.row][at.col], 4);
    }
  }
}

/// Completes the warp-collective operation of the warp of `fiber` when
/// every lane of its member mask has arrived; returns whether it did.
/// Lanes that exited, are missing from the block, or wait at another
/// collective site are reported as `shuffle`.
bool tryCompleteWarpCollective(Fiber &fiber) {
  Emulator &e = emu();
  uint32_t warpBase = fiber.linear & ~31u;
  uint32_t mask = fiber.memberMask;
  for (uint32_t lane = 0; lane < 32; ++lane) {
    if (!(mask >> lane & 1))
      continue;
    uint32_t linear = warpBase + lane;
    if (linear >= e.threads) {
      fail("shuffle", &fiber, nullptr, fiber.waitSite);
      return false;
    }
    Fiber &member = *e.fibers[linear];
    if (member.state == ThreadState::Done) {
      fail("shuffle", &fiber, &member, fiber.waitSite);
      return false;
    }
    if (member.state != ThreadState::AtWarpCollective)
      return false;
  }
  for (uint32_t lane = 0; lane < 32; ++lane) {
    if (!(mask >> lane & 1))
      continue;
    Fiber &member = *e.fibers[warpBase + lane];
    if (member.memberMask != mask || member.waitSite != fiber.waitSite) {
      fail("shuffle", &fiber, &member, fiber.waitSite, member.waitSite);
      return false;
    }
  }
  switch (fiber.collective) {
  case WarpCollective::Shuffle:
    completeShuffle(warpBase, mask);
    break;
  case WarpCollective::LdMatrix:
    completeLdMatrix(warpBase);
    break;
  case WarpCollective::Mma:
    completeMma(warpBase);
    break;
  }
  for (uint32_t lane = 0; lane < 32; ++lane)
    if (mask >> lane & 1)
      e.fibers[warpBase + lane]->state = ThreadState::Ready;
  return true;
}

/// Waits (as `fiber`, whose operands are deposited) until its warp
/// completes the collective operation at `site` over `mask`.
void joinWarpCollective(Fiber &fiber, WarpCollective collective, uint32_t mask,
                        const char *site) {
  fiber.collective = collective;
  fiber.memberMask = mask;
  fiber.waitSite = site;
  fiber.state = ThreadState::AtWarpCollective;
  if (!tryCompleteWarpCollective(fiber))
    yieldToScheduler();
  fiber.state = ThreadState::Ready;
}

/// Every thread waits: completes the barrier, or reports why it cannot.
/// Returns false when the block cannot go on.
bool resolveWaiting() {
  Emulator &e = emu();
  Fiber *atBarrier = nullptr, *done = nullptr;
  for (uint32_t i = 0; i < e.threads; ++i) {
    Fiber &fiber = *e.fibers[i];
    if (fiber.state == ThreadState::AtWarpCollective) {
      // Its warp cannot complete the collective: name a missing lane.
      uint32_t warpBase = fiber.linear & ~31u;
      for (uint32_t lane = 0; lane < 32; ++lane) {
        if (!(fiber.memberMask >> lane & 1))
          continue;
        uint32_t linear = warpBase + lane;
        Fiber *member = linear < e.threads ? e.fibers[linear].get() : nullptr;
        if (!member || member->state != ThreadState::AtWarpCollective) {
          e.current = &fiber;
          fail("shuffle", &fiber, member, fiber.waitSite);
          e.current = nullptr;
          return false;
        }
      }
      continue;
    }
    if (fiber.state == ThreadState::AtBarrier && !atBarrier)
      atBarrier = &fiber;
    if (fiber.state == ThreadState::Done && !done)
      done = &fiber;
  }
  if (!atBarrier)
    return false;
  e.current = atBarrier;
  if (done) {
    fail("barrier", atBarrier, done, atBarrier->waitSite);
    e.current = nullptr;
    return false;
  }
  for (uint32_t i = 0; i < e.threads; ++i) {
    Fiber &fiber = *e.fibers[i];
    if (fiber.waitSite != atBarrier->waitSite) {
      fail("barrier", atBarrier, &fiber, atBarrier->waitSite, fiber.waitSite);
      e.current = nullptr;
      return false;
    }
  }
  e.current = nullptr;
  ++e.interval;
  ++e.profile.barriers;
  for (uint32_t i = 0; i < e.threads; ++i)
    e.fibers[i]->state = ThreadState::Ready;
  return true;
}

void runBlock() {
  Emulator &e = emu();
  e.interval = 0;
  std::fill(e.written.begin(), e.written.end(), 0);
  std::fill(e.inFlight.begin(), e.inFlight.end(), 0);
  std::fill(e.sharedShadow.begin(), e.sharedShadow.end(), ByteShadow());
  for (uint32_t i = 0; i < e.threads; ++i) {
    Fiber &fiber = *e.fibers[i];
    fiber.state = ThreadState::Ready;
    fiber.started = false;
    fiber.waitSite = nullptr;
    fiber.id = {i % e.block.x, (i / e.block.x) % e.block.y,
                i / (e.block.x * e.block.y)};
    fiber.uncommitted.clear();
    fiber.groups.clear();
    fiber.executions.clear();
  }
  while (true) {
    bool ran = false;
    for (uint32_t i : threadOrder()) {
      Fiber &fiber = *e.fibers[i];
      if (fiber.state != ThreadState::Ready)
        continue;
      switchTo(fiber);
      ran = true;
    }
    if (ran)
      continue;
    bool allDone = true;
    for (uint32_t i = 0; i < e.threads; ++i)
      allDone &= e.fibers[i]->state == ThreadState::Done;
    if (allDone)
      break;
    if (!resolveWaiting())
      break; // reported; with KVCACHE_EMU_ON_ERROR=continue, skip the block
  }
  if (e.profiling)
    finishInstructions();
}

//===----------------------------------------------------------------------===//
// Launch set-up
//===----------------------------------------------------------------------===//

void readEnvironment() {
  Emulator &e = emu();
  const char *order = std::getenv("KVCACHE_EMU_ORDER");
  e.order = Emulator::Order::Forward;
  if (order && std::strcmp(order, "reverse") == 0) {
    e.order = Emulator::Order::Reverse;
  } else if (order && std::strncmp(order, "random", 6) == 0) {
    e.order = Emulator::Order::Random;
    uint64_t seed = order[6] == ':' ? std::strtoull(order + 7, nullptr, 0) : 0;
    e.random.seed(seed);
  } else if (order && *order && std::strcmp(order, "forward") != 0) {
    deliver(std::string("kvcache gpu emulator: KVCACHE_EMU_ORDER=") + order +
                " is not one of forward, reverse, random:<seed>",
            /*fatal=*/true);
  }
  const char *onError = std::getenv("KVCACHE_EMU_ON_ERROR");
  e.continueOnError = onError && std::strcmp(onError, "continue") == 0;
  const char *profile = std::getenv("KVCACHE_EMU_PROFILE");
  e.profilePath = profile ? profile : "";
  e.profiling = !e.profilePath.empty();
}

void layOutSharedMemory(const int64_t *sizes, int32_t count,
                        int32_t dynamicBytes) {
  Emulator &e = emu();
  e.sharedOffsets.clear();
  size_t total = kRedZone;
  e.sharedBytes = 0;
  for (int32_t i = 0; i < count; ++i) {
    size_t size = sizes[i] ? size_t(sizes[i]) : size_t(dynamicBytes);
    total = (total + kSharedAlign - 1) / kSharedAlign * kSharedAlign;
    e.sharedOffsets.push_back(total);
    total += size + kRedZone;
    e.sharedBytes += size;
  }
  // 128-byte aligned data, so bank and alignment behave as on the GPU.
  e.arena.assign(total + kSharedAlign, 0);
  uintptr_t base = reinterpret_cast<uintptr_t>(e.arena.data());
  size_t shift = (kSharedAlign - base % kSharedAlign) % kSharedAlign;
  e.owner.assign(e.arena.size(), -1);
  for (int32_t i = 0; i < count; ++i) {
    e.sharedOffsets[i] += shift;
    size_t size = sizes[i] ? size_t(sizes[i]) : size_t(dynamicBytes);
    std::fill_n(e.owner.begin() + e.sharedOffsets[i], size, i);
  }
  e.written.assign(e.arena.size(), 0);
  e.inFlight.assign(e.arena.size(), 0);
  e.sharedShadow.assign(e.arena.size(), ByteShadow());
}

void writeProfile() {
  Emulator &e = emu();
  FILE *file = std::fopen(e.profilePath.c_str(), "a");
  if (!file) {
    std::fprintf(stderr, "kvcache gpu emulator: cannot open %s\n",
                 e.profilePath.c_str());
    return;
  }
  const Profile &p = e.profile;
  std::fprintf(
      file,
      "{\"kernel\": \"%s\", \"grid\": [%u, %u, %u], \"block\": [%u, %u, %u], "
      "\"shared_bytes\": %llu, \"global_load_bytes\": %llu, "
      "\"global_store_bytes\": %llu, \"load_sectors\": %llu, "
      "\"store_sectors\": %llu, \"ideal_load_sectors\": %llu, "
      "\"ideal_store_sectors\": %llu, \"shared_bank_conflicts\": %llu, "
      "\"barriers\": %llu, \"cp_async_bytes\": %llu}\n",
      e.kernel, e.grid.x, e.grid.y, e.grid.z, e.block.x, e.block.y, e.block.z,
      (unsigned long long)e.sharedBytes, (unsigned long long)p.globalLoadBytes,
      (unsigned long long)p.globalStoreBytes,
      (unsigned long long)p.loadSectors, (unsigned long long)p.storeSectors,
      (unsigned long long)p.idealLoadSectors,
      (unsigned long long)p.idealStoreSectors,
      (unsigned long long)p.bankConflicts, (unsigned long long)p.barriers,
      (unsigned long long)p.cpAsyncBytes);
  std::fclose(file);
}

[[noreturn]] void launchError(const char *kernel, const char *site,
                              const char *what) {
  std::string line = std::string("kvcache gpu emulator: launch: kernel ") +
                     kernel + " " + what + " at " + (site ? site : "unknown");
  deliver(line, /*fatal=*/true);
  abortQuietly();
}

/// CPU time of this thread (the fibers run on it): wall time on a shared
/// machine would measure the neighbours.
double cpuSeconds() {
  timespec now;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
  return now.tv_sec + now.tv_nsec * 1e-9;
}

/// KVCACHE_EMU_STATS=1: what the emulator did, at exit, to stderr.
void printStatistics() {
  const Emulator::Totals &t = emu().totals;
  std::fprintf(stderr,
               "kvcache gpu emulator: %llu launches, %llu blocks, %llu "
               "threads, %llu thread switches, %llu memory accesses checked, "
               "%.3f CPU seconds in kernels (%.1f million switches/s)\n",
               (unsigned long long)t.launches, (unsigned long long)t.blocks,
               (unsigned long long)t.threads,
               (unsigned long long)t.switches,
               (unsigned long long)t.accesses, t.seconds,
               t.seconds > 0 ? t.switches / t.seconds / 1e6 : 0.0);
}

Fiber &self() {
  Emulator &e = emu();
  if (!e.current) {
    std::fputs("kvcache gpu emulator: a device function was called outside "
               "a kernel launch\n",
               stderr);
    abortQuietly();
  }
  return *e.current;
}

} // namespace

//===----------------------------------------------------------------------===//
// The interface of the rewritten kernels (see EmulateNVVM.cpp)
//===----------------------------------------------------------------------===//

KVEMU_EXPORT void __kvemu_launch(void (*entry)(void **), const char *kernel,
                                 const int64_t *sharedSizes,
                                 int32_t numShared, int64_t gx, int64_t gy,
                                 int64_t gz, int64_t bx, int64_t by,
                                 int64_t bz, int32_t dynamicSharedBytes,
                                 void **params, const char *site) {
  Emulator &e = emu();
  if (e.active)
    launchError(kernel, site, "launched from inside a kernel");
  readEnvironment();
  if (gx <= 0 || gy <= 0 || gz <= 0 || bx <= 0 || by <= 0 || bz <= 0)
    launchError(kernel, site,
                "has an empty grid or block (a launch error on the GPU)");
  if (gx > 0x7fffffff || gy > 65535 || gz > 65535 || bx > 1024 ||
      by > 1024 || bz > 64 || bx * by * bz > kMaxThreads)
    launchError(kernel, site,
                "exceeds the GPU's grid or block limits (a launch error)");
  if (dynamicSharedBytes < 0)
    launchError(kernel, site, "has a negative dynamic shared memory size");
  e.active = true;
  ++e.launchId;
  // Records of earlier launches never conflict: dropping them bounds the
  // shadow (72 bytes per byte of global memory touched) to about 600 MB.
  if (e.pages.size() > 2048) {
    e.pages.clear();
    e.lastPage = ~uintptr_t(0);
  }
  e.kernel = kernel;
  e.grid = {uint32_t(gx), uint32_t(gy), uint32_t(gz)};
  e.block = {uint32_t(bx), uint32_t(by), uint32_t(bz)};
  e.threads = uint32_t(bx * by * bz);
  e.profile = Profile();
  e.instructions.clear();
  e.dynamicSharedBytes = dynamicSharedBytes;
  layOutSharedMemory(sharedSizes, numShared, dynamicSharedBytes);
  ensureFibers(e.threads);
  currentEntry = entry;
  currentParams = params;

  double started = cpuSeconds();
  uint64_t blocks = uint64_t(gx) * gy * gz;
  std::vector<uint64_t> order(blocks);
  for (uint64_t i = 0; i < blocks; ++i)
    order[i] = i;
  if (e.order == Emulator::Order::Reverse)
    std::reverse(order.begin(), order.end());
  else if (e.order == Emulator::Order::Random)
    std::shuffle(order.begin(), order.end(), e.random);
  for (uint64_t linear : order) {
    e.blockLinear = uint32_t(linear);
    e.blockId = {uint32_t(linear % gx), uint32_t((linear / gx) % gy),
                 uint32_t(linear / (gx * gy))};
    runBlock();
  }
  if (e.profiling)
    writeProfile();
  e.active = false;
  ++e.totals.launches;
  e.totals.blocks += blocks;
  e.totals.threads += blocks * e.threads;
  e.totals.seconds += cpuSeconds() - started;
  if (!e.statsInstalled && std::getenv("KVCACHE_EMU_STATS")) {
    e.statsInstalled = true;
    std::atexit(printStatistics);
  }
}

KVEMU_EXPORT void *__kvemu_shared(int32_t index) {
  Emulator &e = emu();
  return e.arena.data() + e.sharedOffsets[index];
}

KVEMU_EXPORT int32_t __kvemu_sreg(int32_t reg) {
  Emulator &e = emu();
  Fiber &fiber = self();
  uint32_t lane = fiber.linear % 32;
  switch (reg) {
  case TidX: return fiber.id.x;
  case TidY: return fiber.id.y;
  case TidZ: return fiber.id.z;
  case NtidX: return e.block.x;
  case NtidY: return e.block.y;
  case NtidZ: return e.block.z;
  case CtaidX: return e.blockId.x;
  case CtaidY: return e.blockId.y;
  case CtaidZ: return e.blockId.z;
  case NctaidX: return e.grid.x;
  case NctaidY: return e.grid.y;
  case NctaidZ: return e.grid.z;
  case LaneId: return lane;
  case WarpSize: return 32;
  case WarpId: return fiber.linear / 32;
  case NWarpId: return (e.threads + 31) / 32;
  case LaneMaskEq: return int32_t(1u << lane);
  case LaneMaskLe: return int32_t(lane == 31 ? ~0u : (2u << lane) - 1);
  case LaneMaskLt: return int32_t((1u << lane) - 1);
  case LaneMaskGe: return int32_t(~((1u << lane) - 1));
  case LaneMaskGt: return int32_t(lane == 31 ? 0u : ~((2u << lane) - 1));
  case DynamicSmemSize: return e.dynamicSharedBytes;
  default: break;
  }
  std::fprintf(stderr, "kvcache gpu emulator: unknown special register %d\n",
               reg);
  abortQuietly();
}

KVEMU_EXPORT void __kvemu_barrier(const char *site) {
  Fiber &fiber = self();
  fiber.state = ThreadState::AtBarrier;
  fiber.waitSite = site;
  yieldToScheduler();
}

KVEMU_EXPORT int64_t __kvemu_shfl(int32_t kind, int32_t mask, int32_t value,
                                  int32_t b, int32_t c, const char *site) {
  Fiber &fiber = self();
  fiber.shuffleKind = kind;
  fiber.shuffleValue = uint32_t(value);
  fiber.shuffleB = uint32_t(b);
  fiber.shuffleC = uint32_t(c);
  if (!(uint32_t(mask) >> (fiber.linear % 32) & 1)) {
    fail("shuffle", &fiber, nullptr, site);
    return int64_t(uint32_t(value));
  }
  joinWarpCollective(fiber, WarpCollective::Shuffle, uint32_t(mask), site);
  return int64_t(fiber.shuffleResult);
}

/// ldmatrix.sync.aligned.m8n8.x{1,2,4}{.trans}.shared.b16: lanes 0 to
/// 8 `matrices` - 1 each read their 16-byte row at `row` (a checked shared
/// read, one profile phase per matrix); the others' addresses are ignored.
/// Writes `matrices` registers to `fragments`.
KVEMU_EXPORT void __kvemu_ldmatrix(void *row, int32_t matrices,
                                   int32_t transpose, uint32_t *fragments,
                                   const char *site) {
  Fiber &fiber = self();
  uint32_t lane = fiber.linear % 32;
  std::fill_n(fiber.collectiveWords, kMaxCollectiveWords, 0u);
  uintptr_t address = reinterpret_cast<uintptr_t>(row);
  if (lane < 8 * uint32_t(matrices) &&
      sharedAccess(address, 16, /*write=*/false, /*atomic=*/false, site,
                   /*phase=*/lane / 8))
    std::memcpy(fiber.collectiveWords, row, 16);
  fiber.ldmatrixCount = uint32_t(matrices);
  fiber.ldmatrixTranspose = transpose != 0;
  joinWarpCollective(fiber, WarpCollective::LdMatrix, ~0u, site);
  std::copy_n(fiber.collectiveResults, matrices, fragments);
}

/// mma.sync.aligned.{m16n8k16,m16n8k8}.row.col with f16 or bf16
/// multiplicands and f16 or f32 C and D (`flags`, kMma*): this lane's
/// registers of A (k/4 used), B (k/8 used) and C (4 f32, or 2 f16x2), as
/// bits. Writes D's registers (4 or 2) to `result`.
KVEMU_EXPORT void __kvemu_mma(int32_t flags, uint32_t a0, uint32_t a1,
                              uint32_t a2, uint32_t a3, uint32_t b0,
                              uint32_t b1, uint32_t c0, uint32_t c1,
                              uint32_t c2, uint32_t c3, uint32_t *result,
                              const char *site) {
  Fiber &fiber = self();
  uint32_t registers[kMaxCollectiveWords] = {a0, a1, a2, a3, b0,
                                             b1, c0, c1, c2, c3};
  std::copy_n(registers, kMaxCollectiveWords, fiber.collectiveWords);
  fiber.mmaFlags = flags;
  joinWarpCollective(fiber, WarpCollective::Mma, ~0u, site);
  std::copy_n(fiber.collectiveResults, flags & kMmaResultF16 ? 2 : 4, result);
}

KVEMU_EXPORT void __kvemu_access(void *pointer, int64_t bytes, int32_t flags,
                                 const char *site) {
  Emulator &e = emu();
  self();
  uintptr_t address = reinterpret_cast<uintptr_t>(pointer);
  bool write = flags & kAccessWrite;
  bool atomic = flags & kAccessAtomic;
  uint32_t space = uint32_t(flags) >> kAccessSpaceShift;
  if (bytes <= 0)
    return;
  ++e.totals.accesses;
  if (space == kSharedSpace || inArena(address))
    sharedAccess(address, uint64_t(bytes), write, atomic, site);
  else
    globalAccess(address, uint64_t(bytes), write, atomic, site);
}

KVEMU_EXPORT void __kvemu_cp_async(void *dst, const void *src, int32_t bytes,
                                   int32_t sourceBytes, const char *site) {
  Emulator &e = emu();
  Fiber &fiber = self();
  uintptr_t address = reinterpret_cast<uintptr_t>(dst);
  int64_t offset = sharedOffset(address, uint64_t(bytes), site);
  if (offset < 0)
    return;
  checkInFlight(offset, bytes, site);
  sourceBytes = std::max(0, std::min(sourceBytes, bytes));
  if (sourceBytes > 0) {
    globalAccess(reinterpret_cast<uintptr_t>(src), uint64_t(sourceBytes),
                 /*write=*/false, /*atomic=*/false, site);
    e.profile.cpAsyncBytes += uint64_t(sourceBytes);
  }
  PendingCopy copy{static_cast<uint8_t *>(dst),
                   std::vector<uint8_t>(size_t(bytes), 0), site};
  if (sourceBytes > 0)
    std::memcpy(copy.data.data(), src, size_t(sourceBytes));
  for (int32_t i = 0; i < bytes; ++i)
    e.inFlight[offset + i] = int32_t(fiber.linear) + 1;
  fiber.uncommitted.push_back(std::move(copy));
}

KVEMU_EXPORT void __kvemu_cp_async_commit() {
  Fiber &fiber = self();
  fiber.groups.push_back(std::move(fiber.uncommitted));
  fiber.uncommitted.clear();
}

KVEMU_EXPORT void __kvemu_cp_async_wait(int32_t pending, const char *site) {
  Fiber &fiber = self();
  (void)site;
  while (fiber.groups.size() > size_t(std::max(pending, 0)))
    retireOldestGroup(fiber);
}

KVEMU_EXPORT void __kvemu_assertfail(const char *message, const char *file,
                                     int32_t line, const char *function,
                                     int64_t charSize) {
  (void)charSize;
  Emulator &e = emu();
  char text[4096];
  const Fiber *fiber = e.current;
  std::snprintf(text, sizeof(text),
                "%s:%d: %s: block: [%u,%u,%u], thread: [%u,%u,%u] Assertion "
                "`%s` failed.",
                file ? file : "", line, function ? function : "", e.blockId.x,
                e.blockId.y, e.blockId.z, fiber ? fiber->id.x : 0,
                fiber ? fiber->id.y : 0, fiber ? fiber->id.z : 0,
                message ? message : "");
  deliver(text, /*fatal=*/true);
  abortQuietly();
}

KVEMU_EXPORT int32_t __kvemu_vprintf(const char *format, const char *args) {
  // CUDA's vprintf: arguments packed in a buffer, each aligned to its size.
  std::string out;
  size_t offset = 0;
  auto take = [&](size_t size) {
    offset = (offset + size - 1) / size * size;
    const char *at = args + offset;
    offset += size;
    return at;
  };
  for (const char *p = format; *p; ++p) {
    if (*p != '%') {
      out += *p;
      continue;
    }
    std::string spec = "%";
    ++p;
    while (*p && std::strchr("-+ #0123456789.", *p))
      spec += *p++;
    int longs = 0;
    while (*p == 'l' || *p == 'h' || *p == 'z') {
      longs += *p == 'l' || *p == 'z';
      ++p;
    }
    char conversion = *p;
    if (!conversion)
      break;
    char buffer[512];
    switch (conversion) {
    case '%':
      out += '%';
      continue;
    case 'd': case 'i': case 'u': case 'x': case 'X': case 'o': case 'c': {
      long long value = 0;
      if (longs) {
        std::memcpy(&value, take(8), 8);
      } else {
        int32_t small;
        std::memcpy(&small, take(4), 4);
        value = conversion == 'd' || conversion == 'i'
                    ? (long long)small
                    : (long long)(uint32_t)small;
      }
      std::snprintf(buffer, sizeof(buffer), (spec + "ll" + conversion).c_str(),
                    value);
      if (conversion == 'c')
        std::snprintf(buffer, sizeof(buffer), "%c", char(value));
      break;
    }
    case 'f': case 'e': case 'g': case 'F': case 'E': case 'G': case 'a': {
      double value;
      std::memcpy(&value, take(8), 8);
      std::snprintf(buffer, sizeof(buffer), (spec + conversion).c_str(),
                    value);
      break;
    }
    case 's': {
      const char *value;
      std::memcpy(&value, take(8), 8);
      std::snprintf(buffer, sizeof(buffer), (spec + 's').c_str(),
                    value ? value : "(null)");
      break;
    }
    case 'p': {
      void *value;
      std::memcpy(&value, take(8), 8);
      std::snprintf(buffer, sizeof(buffer), "%p", value);
      break;
    }
    default:
      buffer[0] = 0;
      break;
    }
    out += buffer;
  }
  std::fputs(out.c_str(), stdout);
  return int32_t(out.size());
}

// Approximate math as the GPU's special function unit computes it: the
// tests compare with tolerances, and FTZ flushes subnormals to zero.
namespace {
float flush(float x) { return std::fpclassify(x) == FP_SUBNORMAL ? 0.0f : x; }
} // namespace

KVEMU_EXPORT float __kvemu_ex2_approx_f32(float x) { return std::exp2(x); }
KVEMU_EXPORT float __kvemu_ex2_approx_ftz_f32(float x) {
  return flush(std::exp2(flush(x)));
}
KVEMU_EXPORT float __kvemu_lg2_approx_f(float x) { return std::log2(x); }
KVEMU_EXPORT float __kvemu_lg2_approx_ftz_f(float x) {
  return flush(std::log2(flush(x)));
}
KVEMU_EXPORT float __kvemu_rcp_approx_ftz_f(float x) {
  return flush(1.0f / flush(x));
}
KVEMU_EXPORT float __kvemu_rsqrt_approx_f(float x) {
  return 1.0f / std::sqrt(x);
}
KVEMU_EXPORT float __kvemu_rsqrt_approx_ftz_f(float x) {
  return flush(1.0f / std::sqrt(flush(x)));
}
KVEMU_EXPORT float __kvemu_sqrt_approx_f(float x) { return std::sqrt(x); }
KVEMU_EXPORT float __kvemu_fmax_f(float a, float b) { return std::fmax(a, b); }
KVEMU_EXPORT float __kvemu_fmin_f(float a, float b) { return std::fmin(a, b); }

// libdevice functions (__nv_*).
KVEMU_EXPORT float __kvemu_nv_expf(float x) { return std::exp(x); }
KVEMU_EXPORT float __kvemu_nv_exp2f(float x) { return std::exp2(x); }
KVEMU_EXPORT float __kvemu_nv_logf(float x) { return std::log(x); }
KVEMU_EXPORT float __kvemu_nv_log2f(float x) { return std::log2(x); }
KVEMU_EXPORT float __kvemu_nv_sqrtf(float x) { return std::sqrt(x); }
KVEMU_EXPORT float __kvemu_nv_rsqrtf(float x) { return 1.0f / std::sqrt(x); }
KVEMU_EXPORT float __kvemu_nv_powf(float x, float y) { return std::pow(x, y); }
KVEMU_EXPORT float __kvemu_nv_fabsf(float x) { return std::fabs(x); }
KVEMU_EXPORT float __kvemu_nv_tanhf(float x) { return std::tanh(x); }
KVEMU_EXPORT float __kvemu_nv_sinf(float x) { return std::sin(x); }
KVEMU_EXPORT float __kvemu_nv_cosf(float x) { return std::cos(x); }
KVEMU_EXPORT float __kvemu_nv_erff(float x) { return std::erf(x); }
KVEMU_EXPORT float __kvemu_nv_fmaxf(float a, float b) { return std::fmax(a, b); }
KVEMU_EXPORT float __kvemu_nv_fminf(float a, float b) { return std::fmin(a, b); }
KVEMU_EXPORT double __kvemu_nv_exp(double x) { return std::exp(x); }
KVEMU_EXPORT double __kvemu_nv_log(double x) { return std::log(x); }
KVEMU_EXPORT double __kvemu_nv_sqrt(double x) { return std::sqrt(x); }
KVEMU_EXPORT double __kvemu_nv_tanh(double x) { return std::tanh(x); }

//===----------------------------------------------------------------------===//
// Host side of MLIR's GPU runtime calls (gpu-to-llvm): device memory is host
// memory, streams and events are no-ops.
//===----------------------------------------------------------------------===//

KVEMU_EXPORT void *mgpuStreamCreate() {
  static int stream;
  return &stream;
}
KVEMU_EXPORT void mgpuStreamDestroy(void *) {}
KVEMU_EXPORT void mgpuStreamSynchronize(void *) {}
KVEMU_EXPORT void mgpuStreamWaitEvent(void *, void *) {}
KVEMU_EXPORT void *mgpuEventCreate() {
  static int event;
  return &event;
}
KVEMU_EXPORT void mgpuEventDestroy(void *) {}
KVEMU_EXPORT void mgpuEventSynchronize(void *) {}
KVEMU_EXPORT void mgpuEventRecord(void *, void *) {}
KVEMU_EXPORT void mgpuSetDefaultDevice(int32_t) {}
KVEMU_EXPORT void *mgpuMemAlloc(uint64_t bytes, void *, bool) {
  void *memory = nullptr;
  if (posix_memalign(&memory, 256, bytes ? bytes : 1) != 0)
    return nullptr;
  return memory;
}
KVEMU_EXPORT void mgpuMemFree(void *pointer, void *) { std::free(pointer); }
KVEMU_EXPORT void mgpuMemcpy(void *dst, void *src, size_t bytes, void *) {
  std::memmove(dst, src, bytes);
}
KVEMU_EXPORT void mgpuMemset32(void *dst, uint32_t value, size_t count,
                               void *) {
  auto *words = static_cast<uint32_t *>(dst);
  std::fill(words, words + count, value);
}
KVEMU_EXPORT void mgpuMemset16(void *dst, uint16_t value, size_t count,
                               void *) {
  auto *halves = static_cast<uint16_t *>(dst);
  std::fill(halves, halves + count, value);
}

//===----------------------------------------------------------------------===//
// Control interface (GPUEmulator.h)
//===----------------------------------------------------------------------===//

KVEMU_EXPORT void kvcache_emu_set_trap(void *env) {
#ifdef KVEMU_ASAN
  Emulator &e = emu();
  if (e.trapSwitchPending) {
    e.trapSwitchPending = false;
    __sanitizer_finish_switch_fiber(nullptr, nullptr, nullptr);
  }
#endif
  reports().trap = static_cast<jmp_buf *>(env);
}

KVEMU_EXPORT const char *kvcache_emu_reports(void) {
  return reports().text.c_str();
}

KVEMU_EXPORT int kvcache_emu_error_count(void) { return reports().errors; }

KVEMU_EXPORT void kvcache_emu_clear_reports(void) {
  Reports &r = reports();
  r.text.clear();
  r.errors = 0;
  r.seen.clear();
}
