//===- Shadow.h - per-byte shadow of the GPU emulator's checks --*- C++ -*-===//
//
// Part of the kvcache-mlir project.
//
// Private to lib/ExecutionEngine/GPUEmulator. What the race check remembers
// of each byte of GPU memory, and the per-byte helpers of the checks. They
// run for every byte of every access and stay inline in this header, as
// compiler-rt's sanitizers keep theirs: out-of-line calls here cost a third
// more instructions over a kernel.
//
// Race rule: two accesses to the same byte, at least one a write, by
// different threads conflict when they come from different blocks, or from
// one block within one barrier interval, of one epoch: a launch for global
// memory, one block's run for shared memory. Each byte keeps its last write
// and up to two reads (by different threads). A record of another epoch
// never conflicts and counts as no record, so neither shadow is cleared
// when an epoch ends: stale records are as good as zeros.
//
//===----------------------------------------------------------------------===//

#ifndef KVCACHE_LIB_EXECUTIONENGINE_GPUEMULATOR_SHADOW_H
#define KVCACHE_LIB_EXECUTIONENGINE_GPUEMULATOR_SHADOW_H

#include <cstddef>
#include <cstdint>
#include <unordered_map>
#include <vector>

namespace mlir::kvcache::emulator {

/// One access as the shadow memory remembers it.
struct AccessRecord {
  uint32_t epoch = 0; // 0: none
  uint32_t block = 0;
  uint32_t interval = 0;
  uint32_t thread = 0;
  const char *site = nullptr;
};

struct ByteShadow {
  AccessRecord write;
  AccessRecord reads[2];
};

inline bool conflicts(const AccessRecord &earlier, const AccessRecord &now) {
  if (earlier.epoch != now.epoch || earlier.epoch == 0)
    return false;
  if (earlier.block != now.block)
    return true;
  return earlier.thread != now.thread && earlier.interval == now.interval;
}

/// Checks one byte access against its shadow and records it; returns the
/// earlier access it conflicts with (recording nothing), or null.
inline const AccessRecord *checkByte(ByteShadow &shadow,
                                     const AccessRecord &now, bool write) {
  if (conflicts(shadow.write, now))
    return &shadow.write;
  if (write) {
    for (AccessRecord &read : shadow.reads)
      if (conflicts(read, now))
        return &read;
    shadow.write = now;
    shadow.reads[0] = shadow.reads[1] = AccessRecord();
    return nullptr;
  }
  // The thread's own read record, else one of another epoch, else the
  // second.
  AccessRecord *slot = nullptr;
  for (AccessRecord &read : shadow.reads)
    if (read.epoch == now.epoch && read.block == now.block &&
        read.thread == now.thread)
      slot = &read;
  if (!slot)
    for (AccessRecord &read : shadow.reads)
      if (read.epoch != now.epoch)
        slot = slot ? slot : &read;
  if (!slot)
    slot = &shadow.reads[1];
  *slot = now;
  return nullptr;
}

/// Checks `bytes` consecutive bytes whose shadows start at `shadow`; returns
/// the first conflict, or null when there is none.
inline const AccessRecord *checkBytes(ByteShadow *shadow, size_t bytes,
                                      const AccessRecord &now, bool write) {
  for (size_t i = 0; i < bytes; ++i)
    if (const AccessRecord *other = checkByte(shadow[i], now, write))
      return other;
  return nullptr;
}

/// The shadow of global memory (any host address), by 4 KiB page, made on
/// first touch in a launch. Pages of shadow come from large zero-filled
/// mappings and are reused, without clearing, by later launches.
class GlobalShadow {
public:
  static constexpr size_t kPageBytes = 4096;

  /// The shadow of the byte at `address`; the shadows of the following
  /// bytes of its page follow it.
  ByteShadow *at(uintptr_t address) {
    uintptr_t page = address / kPageBytes;
    if (page != lastPage) [[unlikely]]
      lookUp(page);
    return lastShadow + address % kPageBytes;
  }

  /// At the start of a launch: records of earlier launches never conflict,
  /// so every page goes back to the spares, to be handed out again as the
  /// launch touches memory. The shadow (72 bytes per byte of memory) holds
  /// as much as the largest launch touched, and only memory beyond that is
  /// ever cleared.
  void startLaunch();

private:
  void lookUp(uintptr_t page);
  ByteShadow *newPage();

  std::unordered_map<uintptr_t, ByteShadow *> pages;
  /// Pages whose records were dropped: stale, so as good as zero-filled.
  std::vector<ByteShadow *> spare;
  /// The untouched rest of the last mapping.
  ByteShadow *fresh = nullptr;
  size_t freshPages = 0;
  uintptr_t lastPage = ~uintptr_t(0);
  ByteShadow *lastShadow = nullptr;
};

} // namespace mlir::kvcache::emulator

#endif // KVCACHE_LIB_EXECUTIONENGINE_GPUEMULATOR_SHADOW_H
