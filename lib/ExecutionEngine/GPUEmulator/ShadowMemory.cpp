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
// with a red zone after each allocation, and its shadow, cleared for each
// block. Global memory is host memory, shadowed by page (GlobalShadow).
//
//===----------------------------------------------------------------------===//

#include "Runtime.h"

#include <algorithm>
#include <cstdio>
#include <cstring>

using namespace mlir::kvcache::emulator;

namespace {

constexpr size_t kSharedAlign = 128;
constexpr size_t kRedZone = 128;

/// The running thread's access at `site`.
AccessRecord currentRecord(const char *site) {
  AccessRecord record;
  record.epoch = theLaunch->id;
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
  size_t offset = address - shared.begin;
  int32_t allocation = shared.owner[offset];
  for (uint64_t i = 0; i < bytes; ++i)
    if (shared.owner[offset + i] < 0 ||
        shared.owner[offset + i] != allocation) {
      status = fail("shared bounds", &self().id, nullptr, site);
      return -1;
    }
  return offset;
}

/// Reports an access of bytes a pending cp.async will write.
Status checkInFlight(size_t offset, uint64_t bytes, const char *site) {
  const int32_t *inFlight = &theBlock->shared.inFlight[offset];
  for (uint64_t i = 0; i < bytes; ++i)
    if (int32_t owner = inFlight[i])
      return fail("cp.async", &self().id, &fiberAt(owner - 1).id, site);
  return Status::Ok;
}

/// Reports a read of shared bytes no thread of the block wrote.
Status checkWritten(size_t offset, uint64_t bytes, const char *site) {
  const uint8_t *written = &theBlock->shared.written[offset];
  for (uint64_t i = 0; i < bytes; ++i)
    if (!written[i])
      return fail("uninitialized", &self().id, nullptr, site);
  return Status::Ok;
}

Status globalAccess(uintptr_t address, uint64_t bytes, bool write,
                    bool atomic, const char *site) {
  if (!atomic) {
    AccessRecord now = currentRecord(site);
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
  std::vector<PendingCopy> group = std::move(fiber.groups.front());
  fiber.groups.erase(fiber.groups.begin());
  for (PendingCopy &copy : group) {
    size_t offset = copy.dst - shared.arena.data();
    size_t bytes = copy.data.size();
    std::fill_n(&shared.inFlight[offset], bytes, 0);
    AccessRecord now = currentRecord(copy.site);
    if (const AccessRecord *other =
            checkBytes(&shared.shadow[offset], bytes, now, /*write=*/true)) {
      Status status = reportRace(*other, copy.site);
      if (endsLaunch(status))
        return status;
    }
    std::memcpy(copy.dst, copy.data.data(), bytes);
    std::memset(&shared.written[offset], 1, bytes);
  }
  return Status::Ok;
}

/// cp.async of `bytes` into shared `dst` by `fiber`, the first
/// `sourceBytes` from `src`, the rest zeros: checked and taken now, landed
/// by the wait that retires its group.
Status issueCopy(Fiber &fiber, void *dst, const void *src, int32_t bytes,
                 int32_t sourceBytes, const char *site) {
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
  PendingCopy copy{static_cast<uint8_t *>(dst),
                   std::vector<uint8_t>(size_t(bytes), 0), site};
  if (sourceBytes > 0)
    std::memcpy(copy.data.data(), src, size_t(sourceBytes));
  std::fill_n(&shared.inFlight[offset], bytes, int32_t(fiber.linear) + 1);
  fiber.uncommitted.push_back(std::move(copy));
  return Status::Ok;
}

} // namespace

//===----------------------------------------------------------------------===//
// Shadow and shared memory
//===----------------------------------------------------------------------===//

void GlobalShadow::lookUp(uintptr_t page) {
  std::unique_ptr<ByteShadow[]> &shadow = pages[page];
  if (!shadow)
    shadow.reset(new ByteShadow[kPageBytes]);
  lastPage = page;
  lastShadow = shadow.get();
}

void GlobalShadow::startLaunch(size_t maxPages) {
  if (pages.size() <= maxPages)
    return;
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
  // All zeros: no record (a loop of ByteShadow() stores is several times
  // slower than memset's).
  std::memset(static_cast<void *>(shared.shadow.data()), 0,
              shared.shadow.size() * sizeof(ByteShadow));
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
    AccessRecord now = currentRecord(site);
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
  fiber.groups.push_back(std::move(fiber.uncommitted));
  fiber.uncommitted.clear();
}

KVEMU_EXPORT void __kvemu_cp_async_wait(int32_t pending, const char *site) {
  (void)site;
  Fiber &fiber = self();
  while (fiber.groups.size() > size_t(std::max(pending, 0)))
    if (endsLaunch(retireOldestGroup(fiber)))
      endLaunchOnFiber();
}
