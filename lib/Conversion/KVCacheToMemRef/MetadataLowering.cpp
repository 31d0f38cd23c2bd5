//===- MetadataLowering.cpp - lowering of the metadata queries --*- C++ -*-===//
//
// Part of the kvcache-mlir project.
//
// The metadata queries of convert-kvcache-to-memref, each one call of its
// kind's hook (KVCollectionTypeInterface, KVCacheTypeInterface).
//
//===----------------------------------------------------------------------===//

#include "MetadataLowering.h"
#include "KVCache/IR/KVCacheOps.h"

#include "mlir/Transforms/DialectConversion.h"

using namespace mlir;
using namespace mlir::kvcache;

namespace {

/// The metadata read by `max_seq_length`, `max_cache_length`, `num_pages`,
/// `num_sequences`.
enum class Metadata { MaxSeqLength, MaxCacheLength, NumPages, NumSequences };

} // namespace

static Value buildMetadata(OpBuilder &builder, Location loc, Type type,
                           ValueRange lowered, Metadata which) {
  return callMetadataHook(type, [&](auto cache) -> Value {
    switch (which) {
    case Metadata::MaxSeqLength:
      return cache.buildMaxSeqLength(builder, loc, lowered);
    case Metadata::MaxCacheLength:
      return cache.buildMaxCacheLength(builder, loc, lowered);
    case Metadata::NumPages:
      return cache.buildNumPages(builder, loc, lowered);
    case Metadata::NumSequences:
      return cache.buildNumSequences(builder, loc, lowered);
    }
    llvm_unreachable("unknown metadata");
  });
}

namespace {

/// max_seq_length / max_cache_length / num_pages / num_sequences: a
/// metadata hook.
template <typename OpTy, Metadata Which>
struct MetadataLowering : OpConversionPattern<OpTy> {
  using OpConversionPattern<OpTy>::OpConversionPattern;
  LogicalResult
  matchAndRewrite(OpTy op,
                  typename OpTy::template GenericAdaptor<ArrayRef<ValueRange>>
                      adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    rewriter.replaceOp(op, buildMetadata(rewriter, op.getLoc(),
                                         op->getOperand(0).getType(),
                                         adaptor.getOperands().front(), Which));
    return success();
  }
};

struct NumLayersLowering : OpConversionPattern<NumLayersOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(NumLayersOp op, OneToNOpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto type = cast<KVCollectionTypeInterface>(op.getCollection().getType());
    rewriter.replaceOp(op, type.buildNumLayers(rewriter, op.getLoc(),
                                               adaptor.getCollection()));
    return success();
  }
};

/// capacity: the kind's hook for the sequence.
struct CapacityLowering : OpConversionPattern<CapacityOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(CapacityOp op, OneToNOpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Value capacity =
        callMetadataHook(op.getCache().getType(), [&](auto cache) {
          return cache.buildCapacity(rewriter, op.getLoc(), adaptor.getCache(),
                                     adaptor.getBatch().front());
        });
    rewriter.replaceOp(op, capacity);
    return success();
  }
};

} // namespace

void mlir::kvcache::populateMetadataLoweringPatterns(
    const TypeConverter &typeConverter, RewritePatternSet &patterns) {
  patterns.add<MetadataLowering<MaxSeqLengthOp, Metadata::MaxSeqLength>,
               MetadataLowering<MaxCacheLengthOp, Metadata::MaxCacheLength>,
               MetadataLowering<NumPagesOp, Metadata::NumPages>,
               MetadataLowering<NumSequencesOp, Metadata::NumSequences>,
               NumLayersLowering, CapacityLowering>(typeConverter,
                                                    patterns.getContext());
}
