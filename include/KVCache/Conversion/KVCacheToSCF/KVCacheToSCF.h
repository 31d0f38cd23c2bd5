//===- KVCacheToSCF.h - kvcache kernel ops to loops -------------*- C++ -*-===//
//
// Part of the kvcache-mlir project.
//
//===----------------------------------------------------------------------===//

#ifndef KVCACHE_CONVERSION_KVCACHETOSCF_KVCACHETOSCF_H
#define KVCACHE_CONVERSION_KVCACHETOSCF_KVCACHETOSCF_H

namespace mlir {
class RewritePatternSet;

namespace kvcache {

/// Patterns lowering the kernel ops (store_ragged, gather_ragged,
/// copy_pages, attention_ragged) to scf loops over kvcache access ops, for
/// CPU execution.
void populateKVCacheToSCFConversionPatterns(RewritePatternSet &patterns);

/// The attention_ragged part of the above: an online-softmax loop nest.
void populateAttentionToSCFConversionPatterns(RewritePatternSet &patterns);

} // namespace kvcache
} // namespace mlir

#endif // KVCACHE_CONVERSION_KVCACHETOSCF_KVCACHETOSCF_H
