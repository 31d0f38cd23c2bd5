//===- PageTransferLowering.h - send_pages, recv_pages to mpi ---*- C++ -*-===//
//
// Part of the kvcache-mlir project.
//
//===----------------------------------------------------------------------===//

#ifndef KVCACHE_LIB_CONVERSION_KVCACHETOMEMREF_PAGETRANSFERLOWERING_H
#define KVCACHE_LIB_CONVERSION_KVCACHETOMEMREF_PAGETRANSFERLOWERING_H

#include <cstdint>

namespace mlir {
class RewritePatternSet;
class TypeConverter;

namespace kvcache {

/// Patterns lowering kvcache.send_pages and kvcache.recv_pages to the `mpi`
/// dialect; with `checked`, recv_pages checks the page count and size and
/// the destination ids before it writes. Runs of pages of at least
/// `directBytes` bytes are non-blocking messages of their own, shorter ones
/// are packed into messages of at most `stagingBytes` (at least
/// `directBytes`; docs/Contract.md section 3.6).
void populatePageTransferLoweringPatterns(const TypeConverter &typeConverter,
                                          RewritePatternSet &patterns,
                                          bool checked, int64_t directBytes,
                                          int64_t stagingBytes);

} // namespace kvcache
} // namespace mlir

#endif // KVCACHE_LIB_CONVERSION_KVCACHETOMEMREF_PAGETRANSFERLOWERING_H
