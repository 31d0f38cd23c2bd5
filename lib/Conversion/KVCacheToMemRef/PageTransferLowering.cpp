//===- PageTransferLowering.cpp - send_pages, recv_pages to mpi -*- C++ -*-===//
//
// Part of the kvcache-mlir project.
//
// kvcache.send_pages and kvcache.recv_pages on the lowered values of a paged
// collection (docs/Contract.md section 3.6): a handshake (the page count and
// size and the source ids one way, the receiver's verdict and destination
// ids back), then the pages (PageTransfer.cpp). The handshake turns the
// direction twice only: each turn waits for the other process to be
// scheduled.
//
//===----------------------------------------------------------------------===//

#include "PageTransferLowering.h"
#include "../KernelCommon/RuntimeChecks.h"
#include "PageTransfer.h"

#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Transforms/DialectConversion.h"

using namespace mlir;
using namespace mlir::kvcache;

namespace {

/// send_pages: the page list of the sequences, the handshake, then the runs.
struct SendPagesLowering : OpConversionPattern<SendPagesOp> {
  SendPagesLowering(const TypeConverter &converter, MLIRContext *ctx,
                    MessageSizes sizes)
      : OpConversionPattern(converter, ctx), sizes(sizes) {}
  LogicalResult
  matchAndRewrite(SendPagesOp op, OneToNOpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    PageTransfer t(rewriter, op, adaptor.getCollection(),
                   adaptor.getRank().front(), sizes);
    Value sequences = adaptor.getSequences().front();
    Value zero = t.index(0), one = t.index(1);
    Value pageSize = t.index(t.params.pageSize);
    // The pages holding each sequence's cache_length tokens.
    auto pagesOf = [&](Value i) {
      Value tokens = t.loadIndex(t.cacheLengths, t.loadIndex(sequences, i));
      return arith::CeilDivUIOp::create(rewriter, t.loc, tokens, pageSize)
          .getResult();
    };
    Value numSequences = t.dim(sequences, 0);
    Value count =
        scf::ForOp::create(
            rewriter, t.loc, zero, numSequences, one, ValueRange{zero},
            [&](OpBuilder &, Location, Value i, ValueRange sum) {
              scf::YieldOp::create(rewriter, t.loc, t.add(sum[0], pagesOf(i)));
            })
            .getResult(0);
    Value src = t.allocIds(count);
    scf::ForOp::create(
        rewriter, t.loc, zero, numSequences, one, ValueRange{zero},
        [&](OpBuilder &, Location, Value i, ValueRange filled) {
          Value sequence = t.loadIndex(sequences, i);
          Value pages = pagesOf(i);
          scf::ForOp::create(
              rewriter, t.loc, zero, pages, one, ValueRange{},
              [&](OpBuilder &, Location, Value j, ValueRange) {
                Value page = memref::LoadOp::create(
                    rewriter, t.loc, t.lookupTable, ValueRange{sequence, j});
                memref::StoreOp::create(rewriter, t.loc, page, src,
                                        t.add(filled[0], j));
                scf::YieldOp::create(rewriter, t.loc);
              });
          scf::YieldOp::create(rewriter, t.loc, t.add(filled[0], pages));
        });
    sendHeader(t, count);
    t.send(src, SourceIdsTag);
    // [verdict, destination ids]: the ids only when the verdict is 1.
    Value reply = t.allocIds(t.add(count, one));
    t.recv(reply, ReplyTag);
    Value accepted = arith::CmpIOp::create(
        rewriter, t.loc, arith::CmpIPredicate::ne,
        memref::LoadOp::create(rewriter, t.loc, reply, ValueRange{zero}),
        t.i32(0));
    auto ifOp = scf::IfOp::create(rewriter, t.loc, accepted, false);
    rewriter.setInsertionPointToStart(ifOp.thenBlock());
    t.transferPairs(/*sending=*/true, src, t.replyIds(reply, count), count);
    rewriter.setInsertionPointAfter(ifOp);
    memref::DeallocOp::create(rewriter, t.loc, reply);
    memref::DeallocOp::create(rewriter, t.loc, src);
    rewriter.eraseOp(op);
    return success();
  }

  /// Sends `[count, bytes per page]` (i64), which the receiver checks.
  static void sendHeader(PageTransfer &t, Value count) {
    auto type = MemRefType::get({2}, t.b.getI64Type());
    Value header = memref::AllocaOp::create(t.b, t.loc, type);
    Value values[] = {count, t.bytesPerPage(t.blocks)};
    for (auto [i, value] : llvm::enumerate(values))
      memref::StoreOp::create(
          t.b, t.loc,
          arith::IndexCastUIOp::create(t.b, t.loc, t.b.getI64Type(), value),
          header, t.index(i));
    t.send(header, HeaderTag);
  }

  MessageSizes sizes;
};

/// recv_pages: the header and the source ids, the checks (checked mode),
/// the verdict with the destination ids, then the runs into the
/// destination pages.
struct RecvPagesLowering : OpConversionPattern<RecvPagesOp> {
  RecvPagesLowering(const TypeConverter &converter, MLIRContext *ctx,
                    bool checked, MessageSizes sizes)
      : OpConversionPattern(converter, ctx), checked(checked), sizes(sizes) {}
  LogicalResult
  matchAndRewrite(RecvPagesOp op, OneToNOpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    PageTransfer t(rewriter, op, adaptor.getCollection(),
                   adaptor.getRank().front(), sizes);
    Value zero = t.index(0);
    Value dstPages = adaptor.getDstPages().front();
    Value count = t.dim(dstPages, 0);
    auto headerType = MemRefType::get({2}, rewriter.getI64Type());
    Value header = memref::AllocaOp::create(rewriter, t.loc, headerType);
    t.recv(header, HeaderTag);
    auto headerAt = [&](int64_t i) -> Value {
      Value value = memref::LoadOp::create(rewriter, t.loc, header,
                                           ValueRange{t.index(i)});
      return arith::IndexCastUIOp::create(rewriter, t.loc,
                                          rewriter.getIndexType(), value);
    };
    Value sentCount = headerAt(0), sentBytes = headerAt(1);
    // The source ids always, whatever the verdict: the sender does not
    // wait for one before it sends them.
    Value src = t.allocIds(sentCount);
    t.recv(src, SourceIdsTag);
    Value pageBytes = t.bytesPerPage(t.blocks);
    Value accepted = arith::AndIOp::create(
        rewriter, t.loc, t.eq(sentCount, count), t.eq(sentBytes, pageBytes));
    if (checked)
      emitChecks(t, count, sentCount, pageBytes, sentBytes, dstPages);
    // [verdict, destination ids] in as many entries as the sender expects;
    // the ids (a dense copy: dst_pages may be strided) when accepted.
    Value reply = t.allocIds(t.add(sentCount, t.index(1)));
    memref::StoreOp::create(rewriter, t.loc,
                            arith::ExtUIOp::create(rewriter, t.loc,
                                                   rewriter.getI32Type(),
                                                   accepted),
                            reply, ValueRange{zero});
    Value dst = t.replyIds(reply, sentCount);
    auto copyIds = scf::IfOp::create(rewriter, t.loc, accepted, false);
    rewriter.setInsertionPointToStart(copyIds.thenBlock());
    memref::CopyOp::create(rewriter, t.loc, dstPages, dst);
    rewriter.setInsertionPointAfter(copyIds);
    t.send(reply, ReplyTag);
    auto ifOp = scf::IfOp::create(rewriter, t.loc, accepted, false);
    rewriter.setInsertionPointToStart(ifOp.thenBlock());
    t.transferPairs(/*sending=*/false, src, dst, count);
    rewriter.setInsertionPointAfter(ifOp);
    memref::DeallocOp::create(rewriter, t.loc, src);
    memref::DeallocOp::create(rewriter, t.loc, reply);
    rewriter.eraseOp(op);
    return success();
  }

  /// Checked mode, before anything is written: the sender's page count and
  /// size, the destination ids (below num_pages, none twice) and the dense
  /// page layout the runs rely on. A failure prints and aborts.
  void emitChecks(PageTransfer &t, Value count, Value sentCount,
                  Value pageBytes, Value sentBytes, Value dstPages) const {
    RuntimeChecker checker(t.b, t.op, RunsOn::Host);
    checker.emitFailure(t.eq(count, sentCount),
                        "'dst_pages' holds %lld page ids, but the sender "
                        "sends %lld pages",
                        "", count, sentCount);
    checker.emitFailure(t.eq(pageBytes, sentBytes),
                        "a page is %lld bytes here, but %lld bytes at the "
                        "sender (a different collection type or num_layers)",
                        "", pageBytes, sentBytes);
    for (Value memref : {t.blocks, t.scales}) {
      if (!memref)
        continue;
      auto metadata =
          memref::ExtractStridedMetadataOp::create(t.b, t.loc, memref);
      Value dense = t.index(1);
      auto type = cast<MemRefType>(memref.getType());
      for (int64_t d = type.getRank() - 1; d >= 0; --d) {
        checker.emitFailure(t.eq(metadata.getStrides()[d], dense),
                            "the pages are not dense: a stride is %lld "
                            "elements, but the dense layout's is %lld",
                            "", metadata.getStrides()[d], dense);
        dense = t.mul(dense, t.dim(memref, d));
      }
    }
    Value numPages = t.dim(t.blocks, 0);
    Value zero = t.index(0), one = t.index(1);
    Value marks = t.allocIds(numPages);
    Value zero32 = t.i32(0);
    scf::ForOp::create(t.b, t.loc, zero, numPages, one, ValueRange{},
                       [&](OpBuilder &, Location, Value page, ValueRange) {
                         memref::StoreOp::create(t.b, t.loc, zero32, marks,
                                                 page);
                         scf::YieldOp::create(t.b, t.loc);
                       });
    scf::ForOp::create(
        t.b, t.loc, zero, count, one, ValueRange{},
        [&](OpBuilder &, Location, Value i, ValueRange) {
          Value page = t.loadIndex(dstPages, i);
          checker.checkLess(page, numPages, "destination page id", "num_pages");
          Value mark = t.loadIndex(marks, page);
          checker.emitFailure(t.eq(mark, zero),
                              "destination page id %lld appears twice in "
                              "'dst_pages' (entry %lld is the second)",
                              "", page, i);
          memref::StoreOp::create(t.b, t.loc, t.i32(1), marks, page);
          scf::YieldOp::create(t.b, t.loc);
        });
    memref::DeallocOp::create(t.b, t.loc, marks);
  }

  bool checked;
  MessageSizes sizes;
};

} // namespace

void mlir::kvcache::populatePageTransferLoweringPatterns(
    const TypeConverter &typeConverter, RewritePatternSet &patterns,
    bool checked, int64_t directBytes, int64_t stagingBytes) {
  MessageSizes sizes{directBytes, stagingBytes};
  patterns.add<SendPagesLowering>(typeConverter, patterns.getContext(), sizes);
  patterns.add<RecvPagesLowering>(typeConverter, patterns.getContext(), checked,
                                  sizes);
}
