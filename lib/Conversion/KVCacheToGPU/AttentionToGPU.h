//===- AttentionToGPU.h - attention_ragged to GPU kernels -------*- C++ -*-===//
//
// Part of the kvcache-mlir project.
//
//===----------------------------------------------------------------------===//

#ifndef KVCACHE_LIB_CONVERSION_KVCACHETOGPU_ATTENTIONTOGPU_H
#define KVCACHE_LIB_CONVERSION_KVCACHETOGPU_ATTENTIONTOGPU_H

#include "KVCache/Conversion/KVCacheToGPU/KVCacheToGPU.h"

namespace mlir::kvcache {

/// The attention_ragged part of convert-kvcache-to-gpu.
void populateAttentionToGPUConversionPatterns(RewritePatternSet &patterns,
                                              const GPUKernelTarget &target);
/// The merge_states part of convert-kvcache-to-gpu (MergeStatesToGPU.cpp).
void populateMergeStatesToGPUConversionPatterns(RewritePatternSet &patterns,
                                                const GPUKernelTarget &target);

} // namespace mlir::kvcache

#endif // KVCACHE_LIB_CONVERSION_KVCACHETOGPU_ATTENTIONTOGPU_H
