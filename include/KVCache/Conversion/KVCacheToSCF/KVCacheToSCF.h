//===- KVCacheToSCF.h - kvcache kernel ops to loops -------------*- C++ -*-===//
//
// Part of the kvcache-mlir project.
//
//===----------------------------------------------------------------------===//

#ifndef KVCACHE_CONVERSION_KVCACHETOSCF_KVCACHETOSCF_H
#define KVCACHE_CONVERSION_KVCACHETOSCF_KVCACHETOSCF_H

#include <cstdint>

namespace mlir {
class RewritePatternSet;

namespace kvcache {

/// Patterns lowering the kernel ops (store_ragged, gather_ragged,
/// copy_pages, attention_ragged, merge_states, rope_ragged) to scf loops
/// over kvcache access ops, for CPU execution.
/// `vectorBytes` bounds the vector accesses of the data-movement loops;
/// with `checked`, a quantizing store_ragged into an i8 cache stops the
/// program on a NaN. `threads` is the number of threads the outer
/// scf.parallel loops will run on (1: serial code; 0: the OpenMP runtime's
/// count, which attention then asks at run time with omp_get_max_threads,
/// declared in the module): attention's decode tasks take whole sequences
/// when there are at least 4 sequences per thread. `bf16Dot`: the code
/// will run on a CPU with AVX512-BF16 (LLVM feature `avx512bf16`), whose
/// dot product of bf16 pairs (vdpbf16ps) the decode kernel then uses for
/// q . K of a bf16 cache (convert-kvcache-to-scf{cpu-features}).
void populateKVCacheToSCFConversionPatterns(RewritePatternSet &patterns,
                                            int64_t vectorBytes = 64,
                                            bool checked = false,
                                            int64_t threads = 1,
                                            bool bf16Dot = false);

/// The attention_ragged part of the above: an online-softmax loop nest
/// (with `checked`, a rope clause's rotary position past the table's rows
/// stops the program; `threads` and `bf16Dot` as above).
void populateAttentionToSCFConversionPatterns(RewritePatternSet &patterns,
                                              bool checked = false,
                                              int64_t threads = 1,
                                              bool bf16Dot = false);

/// The rope_ragged part: one pass over the step's rows (`vectorBytes` and
/// `checked` as above; with `checked`, a rotary position past the table's
/// rows stops the program).
void populateRopeToSCFConversionPatterns(RewritePatternSet &patterns,
                                         int64_t vectorBytes, bool checked);

/// The merge_states part: a loop over rows and query heads.
void populateMergeStatesToSCFConversionPatterns(RewritePatternSet &patterns);

} // namespace kvcache
} // namespace mlir

#endif // KVCACHE_CONVERSION_KVCACHETOSCF_KVCACHETOSCF_H
