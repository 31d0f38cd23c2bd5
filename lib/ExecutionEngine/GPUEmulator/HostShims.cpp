//===- HostShims.cpp - the host's GPU runtime calls, on host memory ------===//
//
// Part of the kvcache-mlir project.
//
// The host side of MLIR's GPU runtime calls (gpu-to-llvm's mgpu* functions)
// for emulated code: device memory is host memory, streams and events are
// no-ops (kernels run when they are launched).
//
//===----------------------------------------------------------------------===//

#include "Runtime.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

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
