//===- ShadowMemory.cpp - the GPU emulator's memory checks ---------------===//
//
// Part of the kvcache-mlir project.
//
// Every load, store and atomic of a kernel calls __kvemu_access first,
// which checks it and counts it in the profile: races (Shadow.h), reads of
// a cp.async destination before the wait that retires the copy, shared
// accesses outside their allocation and reads of shared bytes no thread of
// the block wrote. Also cp.async itself: the copy is taken when it is
// issued and lands when a wait retires its group.
//
// Shared memory is one arena per launch, 128-byte aligned as on the GPU,
// with a red zone after each allocation; its shadow's records carry the
// block's run as their epoch and are never cleared. Global memory is host
// memory, shadowed by page (GlobalShadow).
//
//===----------------------------------------------------------------------===//

#include "Runtime.h"

#include <algorithm>
#include <cstdio>
#include <cstring>

#include <sys/mman.h>

using namespace mlir::kvcache::emulator;

namespace {

constexpr size_t kSharedAlign = 128;
constexpr size_t kRedZone = 128;
/// Pages of global shadow per mapping (18 MiB).
constexpr size_t kShadowPagesPerMapping = 64;

/// The running thread's access at `site`, a record of epoch `epoch`.
AccessRecord currentRecord(uint32_t epoch, const char *site) {
  AccessRecord record;
  record.epoch = epoch;
  record.block = theBlock->linear;
  record.interval = theBlock->interval;
  record.thread = theProcess.fibers.current->linear;
  record.site = site;
  return record;
}

/// Reports a race of the running thread's access at `site` with `other`.
[[gnu::cold]] Status reportRace(const AccessRecord &other, const char *site) {
  const Dim3 *current = &self().id;
  if (other.block == theBlock->linear)
    return fail("race", current, &fiberAt(other.thread).id, site, other.site);
  // The other thread ran in an earlier block of this launch.
  Dim3 block = theLaunch->block;
  Dim3 thread = {other.thread % block.x, (other.thread / block.x) % block.y,
                 other.thread / (block.x * block.y)};
  return fail("race", current, &thread, site, other.site);
}

/// The offset in the arena of [address, address + bytes) when it lies
/// inside one shared allocation; else -1 after a report of `status`.
int64_t sharedOffset(uintptr_t address, uint64_t bytes, const char *site,
                     Status &status) {
  SharedMemory &shared = theBlock->shared;
  if (!shared.contains(address) || address + bytes > shared.end) {
    status = fail("shared bounds", &self().id, nullptr, site);
    return -1;
  }
  // An allocation's bytes are one run, between red zones: the range is
  // inside one when both its ends are.
  size_t offset = address - shared.begin;
  int32_t allocation = shared.owner[offset];
  if (bytes > 0 &&
      (allocation < 0 || shared.owner[offset + bytes - 1] != allocation)) {
    status = fail("shared bounds", &self().id, nullptr, site);
    return -1;
  }
  return offset;
}

/// Whether one of `count` values at `values` is not zero (a loop without
/// an early exit, which the compiler vectorizes).
template <typename T> bool anyNonZero(const T *values, uint64_t count) {
  T any = 0;
  for (uint64_t i = 0; i < count; ++i)
    any |= values[i];
  return any != 0;
}

/// Reports an access of bytes a pending cp.async will write.
Status checkInFlight(size_t offset, uint64_t bytes, const char *site) {
  const int32_t *inFlight = &theBlock->shared.inFlight[offset];
  if (theBlock->pendingCopies == 0 || !anyNonZero(inFlight, bytes))
    return Status::Ok;
  for (uint64_t i = 0; i < bytes; ++i)
    if (int32_t owner = inFlight[i])
      return fail("cp.async", &self().id, &fiberAt(owner - 1).id, site);
  return Status::Ok;
}

/// Reports a read of shared bytes no thread of the block wrote.
Status checkWritten(size_t offset, uint64_t bytes, const char *site) {
  const uint8_t *written = &theBlock->shared.written[offset];
  uint8_t all = 1;
  for (uint64_t i = 0; i < bytes; ++i)
    all &= written[i];
  return all ? Status::Ok : fail("uninitialized", &self().id, nullptr, site);
}

Status globalAccess(uintptr_t address, uint64_t bytes, bool write,
                    bool atomic, const char *site) {
  if (!atomic) {
    AccessRecord now = currentRecord(theLaunch->id, site);
    GlobalShadow &shadow = theProcess.globalShadow;
    for (uintptr_t at = address, end = address + bytes; at < end;) {
      size_t inPage = std::min<uintptr_t>(
          end - at, GlobalShadow::kPageBytes - at % GlobalShadow::kPageBytes);
      if (const AccessRecord *other =
              checkBytes(shadow.at(at), inPage, now, write)) {
        Status status = reportRace(*other, site);
        if (endsLaunch(status))
          return status;
        break;
      }
      at += inPage;
    }
  }
  if (!theLaunch->profile.path.empty())
    recordInstruction(address, bytes, /*shared=*/false, write, site,
                      /*phase=*/0);
  return Status::Ok;
}

/// The copies of `fiber` in the oldest committed group land.
Status retireOldestGroup(Fiber &fiber) {
  SharedMemory &shared = theBlock->shared;
  uint32_t count = fiber.groupSizes.front();
  for (uint32_t i = 0; i < count; ++i) {
    const PendingCopy &copy = fiber.copies[i];
    size_t offset = copy.dst - shared.arena.data();
    std::fill_n(&shared.inFlight[offset], copy.bytes, 0);
    --theBlock->pendingCopies;
    AccessRecord now = currentRecord(theLaunch->blocksRun, copy.site);
    if (const AccessRecord *other = checkBytes(&shared.shadow[offset],
                                               copy.bytes, now,
                                               /*write=*/true)) {
      Status status = reportRace(*other, copy.site);
      if (endsLaunch(status))
        return status;
    }
    std::memcpy(copy.dst, copy.data, copy.bytes);
    std::memset(&shared.written[offset], 1, copy.bytes);
  }
  fiber.copies.erase(fiber.copies.begin(), fiber.copies.begin() + count);
  fiber.groupSizes.erase(fiber.groupSizes.begin());
  fiber.committedCopies -= count;
  return Status::Ok;
}

/// cp.async of `bytes` into shared `dst` by `fiber`, the first
/// `sourceBytes` from `src`, the rest zeros: checked and taken now, landed
/// by the wait that retires its group.
Status issueCopy(Fiber &fiber, void *dst, const void *src, int32_t bytes,
                 int32_t sourceBytes, const char *site) {
  if (bytes > kMaxCopyBytes) {
    std::fprintf(stderr, "kvcache gpu emulator: cp.async of %d bytes\n",
                 bytes);
    abortQuietly();
  }
  SharedMemory &shared = theBlock->shared;
  Status status = Status::Ok;
  int64_t offset = sharedOffset(reinterpret_cast<uintptr_t>(dst),
                                uint64_t(bytes), site, status);
  if (offset < 0)
    return status;
  status = checkInFlight(offset, bytes, site);
  if (endsLaunch(status))
    return status;
  sourceBytes = std::max(0, std::min(sourceBytes, bytes));
  if (sourceBytes > 0) {
    status = globalAccess(reinterpret_cast<uintptr_t>(src),
                          uint64_t(sourceBytes), /*write=*/false,
                          /*atomic=*/false, site);
    if (endsLaunch(status))
      return status;
    theLaunch->profile.counters.cpAsyncBytes += uint64_t(sourceBytes);
  }
  PendingCopy copy{static_cast<uint8_t *>(dst), site, uint32_t(bytes), {}};
  if (sourceBytes > 0)
    std::memcpy(copy.data, src, size_t(sourceBytes));
  std::fill_n(&shared.inFlight[offset], bytes, int32_t(fiber.linear) + 1);
  ++theBlock->pendingCopies;
  fiber.copies.push_back(copy);
  return Status::Ok;
}

} // namespace

//===----------------------------------------------------------------------===//
// Shadow and shared memory
//===----------------------------------------------------------------------===//

void GlobalShadow::lookUp(uintptr_t page) {
  ByteShadow *&shadow = pages[page];
  if (!shadow)
    shadow = newPage();
  lastPage = page;
  lastShadow = shadow;
}

ByteShadow *GlobalShadow::newPage() {
  if (!spare.empty()) {
    ByteShadow *page = spare.back();
    spare.pop_back();
    return page;
  }
  if (freshPages == 0) {
    // Zero-filled by the kernel as it is touched, in huge pages where it
    // can: cheaper than clearing each page of shadow (288 KiB) ourselves.
    size_t bytes = kShadowPagesPerMapping * kPageBytes * sizeof(ByteShadow);
    void *memory = mmap(nullptr, bytes, PROT_READ | PROT_WRITE,
                        MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (memory == MAP_FAILED) {
      std::fputs("kvcache gpu emulator: cannot map shadow memory\n", stderr);
      abortQuietly();
    }
    madvise(memory, bytes, MADV_HUGEPAGE);
    fresh = static_cast<ByteShadow *>(memory);
    freshPages = kShadowPagesPerMapping;
  }
  ByteShadow *page = fresh;
  fresh += kPageBytes;
  --freshPages;
  return page;
}

void GlobalShadow::startLaunch() {
  for (auto &[page, shadow] : pages)
    spare.push_back(shadow);
  pages.clear();
  lastPage = ~uintptr_t(0);
  lastShadow = nullptr;
}

void mlir::kvcache::emulator::layOutSharedMemory(SharedMemory &shared,
                                                 const int64_t *sizes,
                                                 int32_t count,
                                                 int32_t dynamicBytes) {
  auto sizeOf = [&](int32_t i) {
    return sizes[i] ? size_t(sizes[i]) : size_t(dynamicBytes);
  };
  shared.offsets.clear();
  shared.bytes = 0;
  size_t total = kRedZone;
  for (int32_t i = 0; i < count; ++i) {
    total = (total + kSharedAlign - 1) / kSharedAlign * kSharedAlign;
    shared.offsets.push_back(total);
    total += sizeOf(i) + kRedZone;
    shared.bytes += sizeOf(i);
  }
  // 128-byte aligned data, so bank and alignment behave as on the GPU.
  shared.arena.assign(total + kSharedAlign, 0);
  uintptr_t base = reinterpret_cast<uintptr_t>(shared.arena.data());
  size_t shift = (kSharedAlign - base % kSharedAlign) % kSharedAlign;
  shared.owner.assign(shared.arena.size(), -1);
  for (int32_t i = 0; i < count; ++i) {
    shared.offsets[i] += shift;
    std::fill_n(shared.owner.begin() + shared.offsets[i], sizeOf(i), i);
  }
  shared.written.assign(shared.arena.size(), 0);
  shared.inFlight.assign(shared.arena.size(), 0);
  shared.shadow.assign(shared.arena.size(), ByteShadow());
  shared.begin = base;
  shared.end = base + shared.arena.size();
}

void mlir::kvcache::emulator::resetSharedMemory(SharedMemory &shared) {
  std::fill(shared.written.begin(), shared.written.end(), 0);
  std::fill(shared.inFlight.begin(), shared.inFlight.end(), 0);
}

Status mlir::kvcache::emulator::sharedAccess(uintptr_t address,
                                             uint64_t bytes, bool write,
                                             bool atomic, const char *site,
                                             uint32_t phase, bool &inBounds) {
  SharedMemory &shared = theBlock->shared;
  Status status = Status::Ok;
  int64_t offset = sharedOffset(address, bytes, site, status);
  inBounds = offset >= 0;
  if (!inBounds)
    return status;
  status = checkInFlight(offset, bytes, site);
  if (endsLaunch(status))
    return status;
  if (!write) {
    status = checkWritten(offset, bytes, site);
    if (endsLaunch(status))
      return status;
  }
  if (!atomic) {
    AccessRecord now = currentRecord(theLaunch->blocksRun, site);
    if (const AccessRecord *other =
            checkBytes(&shared.shadow[offset], bytes, now, write)) {
      status = reportRace(*other, site);
      if (endsLaunch(status))
        return status;
    }
  }
  if (write)
    std::memset(&shared.written[offset], 1, bytes);
  if (!theLaunch->profile.path.empty())
    recordInstruction(address, bytes, /*shared=*/true, write, site, phase);
  return Status::Ok;
}

//===----------------------------------------------------------------------===//
// Entry points
//===----------------------------------------------------------------------===//

KVEMU_EXPORT void *__kvemu_shared(int32_t index) {
  SharedMemory &shared = theBlock->shared;
  return shared.arena.data() + shared.offsets[index];
}

KVEMU_EXPORT void __kvemu_access(void *pointer, int64_t bytes, int32_t flags,
                                 const char *site) {
  self();
  if (bytes <= 0)
    return;
  ++theProcess.totals.accesses;
  uintptr_t address = reinterpret_cast<uintptr_t>(pointer);
  bool write = flags & kAccessWrite;
  bool atomic = flags & kAccessAtomic;
  auto space = AddressSpace(uint32_t(flags) >> kAccessSpaceShift);
  Status status;
  if (space == AddressSpace::Shared || theBlock->shared.contains(address)) {
    bool inBounds;
    status = sharedAccess(address, uint64_t(bytes), write, atomic, site,
                          /*phase=*/0, inBounds);
  } else {
    status = globalAccess(address, uint64_t(bytes), write, atomic, site);
  }
  if (endsLaunch(status))
    endLaunchOnFiber();
}

KVEMU_EXPORT void __kvemu_cp_async(void *dst, const void *src, int32_t bytes,
                                   int32_t sourceBytes, const char *site) {
  if (endsLaunch(issueCopy(self(), dst, src, bytes, sourceBytes, site)))
    endLaunchOnFiber();
}

KVEMU_EXPORT void __kvemu_cp_async_commit() {
  Fiber &fiber = self();
  uint32_t issued = uint32_t(fiber.copies.size());
  fiber.groupSizes.push_back(issued - fiber.committedCopies);
  fiber.committedCopies = issued;
}

KVEMU_EXPORT void __kvemu_cp_async_wait(int32_t pending, const char *site) {
  (void)site;
  Fiber &fiber = self();
  while (fiber.groupSizes.size() > size_t(std::max(pending, 0)))
    if (endsLaunch(retireOldestGroup(fiber)))
      endLaunchOnFiber();
}
