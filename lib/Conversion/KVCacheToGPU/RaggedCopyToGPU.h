//===- RaggedCopyToGPU.h - store/gather_ragged to GPU kernels ---*- C++ -*-===//
//
// Part of the kvcache-mlir project.
//
//===----------------------------------------------------------------------===//

#ifndef KVCACHE_LIB_CONVERSION_KVCACHETOGPU_RAGGEDCOPYTOGPU_H
#define KVCACHE_LIB_CONVERSION_KVCACHETOGPU_RAGGEDCOPYTOGPU_H

#include "KVCache/Conversion/KVCacheToGPU/KVCacheToGPU.h"

namespace mlir::kvcache {

/// The store_ragged and gather_ragged part of convert-kvcache-to-gpu.
void populateRaggedCopyToGPUConversionPatterns(RewritePatternSet &patterns,
                                               const GPUKernelTarget &target);

/// The rope_ragged part: one kernel, block x on rows x, x + gridDim.x, ...
void populateRopeToGPUConversionPatterns(RewritePatternSet &patterns,
                                         const GPUKernelTarget &target);

} // namespace mlir::kvcache

#endif // KVCACHE_LIB_CONVERSION_KVCACHETOGPU_RAGGEDCOPYTOGPU_H
