//===- KVCacheToMemRef.h - kvcache access ops to memref ---------*- C++ -*-===//
//
// Part of the kvcache-mlir project.
//
//===----------------------------------------------------------------------===//

#ifndef KVCACHE_CONVERSION_KVCACHETOMEMREF_KVCACHETOMEMREF_H
#define KVCACHE_CONVERSION_KVCACHETOMEMREF_KVCACHETOMEMREF_H

#include "mlir/Transforms/DialectConversion.h"

namespace mlir {
class ConversionTarget;
class RewritePatternSet;
class TypeConverter;

namespace kvcache {

/// Adds the kernel ABI decomposition (docs/Contract.md, section 7) of every
/// collection and layer cache type (types implementing
/// KVCollectionTypeInterface or KVCacheTypeInterface) into the values its
/// `getLoweredTypes` names to `typeConverter`. Other types are left to other
/// conversions; combine with an identity conversion
/// (`addConversion([](Type t) { return t; })`) added before this call.
void populateKVCacheToMemRefTypeConversion(TypeConverter &typeConverter);

/// Options of the access-op lowering.
struct KVCacheToMemRefOptions {
  /// Check every access (reads too) at run time.
  bool checked = false;
  /// send_pages, recv_pages: runs of pages of at least this many bytes are
  /// non-blocking messages of their own; shorter ones are packed into
  /// messages of at most `transferStagingBytes` (docs/Contract.md section
  /// 3.6).
  int64_t transferDirectBytes = 128 << 10;
  int64_t transferStagingBytes = 16 << 20;
  /// Deprecated, ignored. Dequantizing reads decode fp8 codes with
  /// target-neutral `arith.extf`; `kvcache-fp8-to-nvvm` (or
  /// populateFp8ToNVVMConversionPatterns, KVCacheToGPU.h) lowers them to the
  /// conversion instructions of sm_89 and newer inside GPU code.
  bool nvvmFp8Conversions = false;
};

/// Patterns lowering every kvcache access op to memref/vector/arith/scf, and
/// the structural patterns that decompose cache values across func, gpu and
/// scf/cf boundaries.
void populateKVCacheToMemRefConversionPatterns(
    TypeConverter &typeConverter, RewritePatternSet &patterns,
    const KVCacheToMemRefOptions &options = {});

/// Marks the kvcache dialect illegal and ops carrying cache types (function
/// signatures, calls, returns, launches, region ops) legal only once their
/// types are converted.
void configureKVCacheToMemRefConversionLegality(ConversionTarget &target,
                                                TypeConverter &typeConverter);

} // namespace kvcache
} // namespace mlir

#endif // KVCACHE_CONVERSION_KVCACHETOMEMREF_KVCACHETOMEMREF_H
