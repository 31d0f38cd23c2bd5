//===- Scheduler.cpp - the GPU emulator's launches and blocks ------------===//
//
// Part of the kvcache-mlir project.
//
// A launch runs every block, one after another, in KVCACHE_EMU_ORDER. A
// block runs its threads (fibers) in that order until each finishes or
// waits; when all wait, the barrier they wait at completes (the next
// barrier interval), or the block cannot go on and that is reported. A
// failure that ends the launch (capture mode) stops it after the switch
// back from the failing thread; __kvemu_launch returns normally, and later
// launches return at once until the host clears the reports.
//
//===----------------------------------------------------------------------===//

#include "Runtime.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <numeric>

using namespace mlir::kvcache::emulator;

Process &mlir::kvcache::emulator::theProcess = *new Process;
Launch *mlir::kvcache::emulator::theLaunch = nullptr;
Block *mlir::kvcache::emulator::theBlock = nullptr;

namespace {

/// 0 .. count - 1 in the launch's order: the order blocks run in, and
/// threads resume in after each barrier.
template <typename Index>
std::vector<Index> ordered(Launch &launch, Index count) {
  std::vector<Index> order(count);
  std::iota(order.begin(), order.end(), Index(0));
  if (launch.order == Order::Reverse)
    std::reverse(order.begin(), order.end());
  else if (launch.order == Order::Random)
    std::shuffle(order.begin(), order.end(), launch.random);
  return order;
}

/// Every thread waits: completes the barrier, or reports why it cannot.
/// Returns false when the block cannot go on. The block ends either way
/// after a report: a failure that ends the launch has marked it failed.
bool resolveWaiting(Launch &launch, Block &block) {
  const Fiber *atBarrier = nullptr, *done = nullptr;
  for (uint32_t i = 0; i < launch.threads; ++i) {
    const Fiber &fiber = fiberAt(i);
    if (fiber.state == ThreadState::AtWarpCollective) {
      // Its warp cannot complete the collective: name a missing lane.
      const Fiber *missing = nullptr;
      if (findMissingLane(fiber, missing)) {
        (void)fail("shuffle", &fiber.id, missing ? &missing->id : nullptr,
                   fiber.waitSite);
        return false;
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
  if (done) {
    (void)fail("barrier", &atBarrier->id, &done->id, atBarrier->waitSite);
    return false;
  }
  for (uint32_t i = 0; i < launch.threads; ++i) {
    const Fiber &fiber = fiberAt(i);
    if (fiber.waitSite != atBarrier->waitSite) {
      (void)fail("barrier", &atBarrier->id, &fiber.id, atBarrier->waitSite,
                 fiber.waitSite);
      return false;
    }
  }
  ++block.interval;
  ++launch.profile.counters.barriers;
  for (uint32_t i = 0; i < launch.threads; ++i)
    fiberAt(i).state = ThreadState::Ready;
  return true;
}

void runBlock(Launch &launch, Block &block) {
  ++launch.blocksRun;
  block.interval = 0;
  std::fill_n(block.atWarpCollective, kMaxThreads / 32, 0u);
  block.pendingCopies = 0;
  resetSharedMemory(block.shared);
  Dim3 size = launch.block;
  for (uint32_t i = 0; i < launch.threads; ++i)
    resetFiber(fiberAt(i), {i % size.x, (i / size.x) % size.y,
                            i / (size.x * size.y)});
  while (true) {
    bool ran = false;
    for (uint32_t i : ordered(launch, launch.threads)) {
      Fiber &fiber = fiberAt(i);
      if (fiber.state != ThreadState::Ready)
        continue;
      switchTo(fiber);
      if (launch.failed)
        return;
      ran = true;
    }
    if (ran)
      continue;
    bool allDone = true;
    for (uint32_t i = 0; i < launch.threads; ++i)
      allDone &= fiberAt(i).state == ThreadState::Done;
    if (allDone)
      break;
    if (!resolveWaiting(launch, block))
      break; // reported; with KVCACHE_EMU_ON_ERROR=continue, skip the block
  }
  if (!launch.profile.path.empty())
    finishInstructions(launch.profile);
}

/// Reads the launch's options from the environment.
Status readOptions(Launch &launch) {
  const char *order = std::getenv("KVCACHE_EMU_ORDER");
  if (order && std::strcmp(order, "reverse") == 0) {
    launch.order = Order::Reverse;
  } else if (order && std::strncmp(order, "random", 6) == 0) {
    launch.order = Order::Random;
    uint64_t seed = order[6] == ':' ? std::strtoull(order + 7, nullptr, 0) : 0;
    launch.random.seed(seed);
  } else if (order && *order && std::strcmp(order, "forward") != 0) {
    return failFatally(std::string("kvcache gpu emulator: KVCACHE_EMU_ORDER=") +
                       order + " is not one of forward, reverse, random:<seed>");
  }
  const char *onError = std::getenv("KVCACHE_EMU_ON_ERROR");
  launch.continueOnError = onError && std::strcmp(onError, "continue") == 0;
  const char *profile = std::getenv("KVCACHE_EMU_PROFILE");
  launch.profile.path = profile ? profile : "";
  return Status::Ok;
}

/// Why a launch of this grid and block fails on a GPU, or null.
const char *launchError(const int64_t grid[3], const int64_t block[3],
                        int32_t dynamicSharedBytes) {
  if (*std::min_element(grid, grid + 3) <= 0 ||
      *std::min_element(block, block + 3) <= 0)
    return "has an empty grid or block (a launch error on the GPU)";
  if (grid[0] > 0x7fffffff || grid[1] > 65535 || grid[2] > 65535 ||
      block[0] > 1024 || block[1] > 1024 || block[2] > 64 ||
      block[0] * block[1] * block[2] > kMaxThreads)
    return "exceeds the GPU's grid or block limits (a launch error)";
  if (dynamicSharedBytes < 0)
    return "has a negative dynamic shared memory size";
  return nullptr;
}

Status failLaunch(const char *kernel, const char *site, const char *what) {
  return failFatally(std::string("kvcache gpu emulator: launch: kernel ") +
                     kernel + " " + what + " at " + (site ? site : "unknown"));
}

/// Runs every block of `launch`, whose shared memory `block` holds.
Status runBlocks(Launch &launch, Block &block) {
  theLaunch = &launch;
  theBlock = &block;
  double started = cpuSeconds();
  Dim3 grid = launch.grid;
  uint64_t blocks = uint64_t(grid.x) * grid.y * grid.z;
  for (uint64_t linear : ordered(launch, blocks)) {
    block.linear = uint32_t(linear);
    block.id = {uint32_t(linear % grid.x), uint32_t((linear / grid.x) % grid.y),
                uint32_t(linear / (uint64_t(grid.x) * grid.y))};
    runBlock(launch, block);
    if (launch.failed)
      break;
  }
  if (!launch.profile.path.empty() && !launch.failed)
    writeProfile(launch, block.shared.bytes);
  theLaunch = nullptr;
  theBlock = nullptr;
  Totals &totals = theProcess.totals;
  ++totals.launches;
  totals.blocks += launch.blocksRun;
  totals.threads += uint64_t(launch.blocksRun) * launch.threads;
  totals.seconds += cpuSeconds() - started;
  installStatistics();
  return launch.failed ? Status::EndLaunch : Status::Ok;
}

Status launchKernel(void (*entry)(void **), const char *kernel,
                    const int64_t *sharedSizes, int32_t numShared,
                    const int64_t grid[3], const int64_t block[3],
                    int32_t dynamicSharedBytes, void **params,
                    const char *site) {
  Launch launch;
  if (Status status = readOptions(launch); status != Status::Ok)
    return status;
  if (const char *error = launchError(grid, block, dynamicSharedBytes))
    return failLaunch(kernel, site, error);
  launch.entry = entry;
  launch.params = params;
  launch.kernel = kernel;
  launch.grid = {uint32_t(grid[0]), uint32_t(grid[1]), uint32_t(grid[2])};
  launch.block = {uint32_t(block[0]), uint32_t(block[1]), uint32_t(block[2])};
  launch.threads = uint32_t(block[0] * block[1] * block[2]);
  launch.id = ++theProcess.lastLaunchId;
  launch.dynamicSharedBytes = dynamicSharedBytes;
  theProcess.globalShadow.startLaunch();
  Block running;
  layOutSharedMemory(running.shared, sharedSizes, numShared,
                     dynamicSharedBytes);
  ensureFibers(launch.threads);
  return runBlocks(launch, running);
}

} // namespace

//===----------------------------------------------------------------------===//
// Entry points
//===----------------------------------------------------------------------===//

KVEMU_EXPORT void __kvemu_launch(void (*entry)(void **), const char *kernel,
                                 const int64_t *sharedSizes,
                                 int32_t numShared, int64_t gx, int64_t gy,
                                 int64_t gz, int64_t bx, int64_t by,
                                 int64_t bz, int32_t dynamicSharedBytes,
                                 void **params, const char *site) {
  if (theLaunch) {
    // Called by a thread of the running launch, which this failure ends.
    (void)failLaunch(kernel, site, "launched from inside a kernel");
    endLaunchOnFiber();
  }
  if (theProcess.reports.stopped)
    return; // a failure ended an earlier launch of the host's call
  const int64_t grid[3] = {gx, gy, gz}, block[3] = {bx, by, bz};
  if (endsLaunch(launchKernel(entry, kernel, sharedSizes, numShared, grid,
                              block, dynamicSharedBytes, params, site)))
    leaveThroughTrap();
}

KVEMU_EXPORT int32_t __kvemu_sreg(int32_t reg) {
  const Fiber &fiber = self();
  const Launch &launch = *theLaunch;
  const Block &block = *theBlock;
  uint32_t lane = fiber.linear % 32;
  switch (SpecialRegister(reg)) {
  case SpecialRegister::TidX: return fiber.id.x;
  case SpecialRegister::TidY: return fiber.id.y;
  case SpecialRegister::TidZ: return fiber.id.z;
  case SpecialRegister::NtidX: return launch.block.x;
  case SpecialRegister::NtidY: return launch.block.y;
  case SpecialRegister::NtidZ: return launch.block.z;
  case SpecialRegister::CtaidX: return block.id.x;
  case SpecialRegister::CtaidY: return block.id.y;
  case SpecialRegister::CtaidZ: return block.id.z;
  case SpecialRegister::NctaidX: return launch.grid.x;
  case SpecialRegister::NctaidY: return launch.grid.y;
  case SpecialRegister::NctaidZ: return launch.grid.z;
  case SpecialRegister::LaneId: return lane;
  case SpecialRegister::WarpSize: return 32;
  case SpecialRegister::WarpId: return fiber.linear / 32;
  case SpecialRegister::NWarpId: return (launch.threads + 31) / 32;
  case SpecialRegister::LaneMaskEq: return int32_t(1u << lane);
  case SpecialRegister::LaneMaskLe:
    return int32_t(lane == 31 ? ~0u : (2u << lane) - 1);
  case SpecialRegister::LaneMaskLt: return int32_t((1u << lane) - 1);
  case SpecialRegister::LaneMaskGe: return int32_t(~((1u << lane) - 1));
  case SpecialRegister::LaneMaskGt:
    return int32_t(lane == 31 ? 0u : ~((2u << lane) - 1));
  case SpecialRegister::DynamicSmemSize: return launch.dynamicSharedBytes;
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
