//===- AttentionMerge.cpp - the attention merge kernel ----------*- C++ -*-===//
//
// Part of the kvcache-mlir project.
//
// The second kernel of a split attention: block (row, query head) reads the
// splits' partial states (o unnormalised, m, l) from the workspace, weights
// them by 2^(m - max m) and writes the normalised row. Also the helpers the
// attention kernels share.
//
//===----------------------------------------------------------------------===//

#include "AttentionKernels.h"
#include "../KernelCommon/KernelBuilders.h"

#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Interfaces/FunctionInterfaces.h"

using namespace mlir;
using namespace mlir::kvcache;
using namespace mlir::kvcache::attention;

Attribute attention::workgroupSpace(MLIRContext *ctx) {
  return gpu::AddressSpaceAttr::get(ctx, gpu::AddressSpace::Workgroup);
}

void attention::nameKernel(gpu::LaunchOp launch, Operation *op, StringRef suffix) {
  MLIRContext *ctx = op->getContext();
  std::string name = suffix.str();
  if (auto function = op->getParentOfType<FunctionOpInterface>())
    name = (function.getName() + "_" + suffix).str();
  launch.setFunctionAttr(FlatSymbolRefAttr::get(ctx, name));
  launch.setModuleAttr(FlatSymbolRefAttr::get(ctx, "kvcache_kernels"));
}

void attention::mentionOperands(OpBuilder &b, Location loc, ValueRange operands) {
  for (Value operand : operands) {
    if (isa<MemRefType>(operand.getType()))
      memref::DimOp::create(b, loc, operand, 0);
    else
      NumPagesOp::create(b, loc, operand);
  }
}

void attention::forEachBatchRow(KernelBuilder &k, gpu::LaunchOp launch,
                                Value rows, Value offsets,
                                function_ref<void(Value, Value)> body) {
  OpBuilder &b = k.b;
  Location loc = k.loc;
  Value numRows = memref::DimOp::create(b, loc, rows, 0);
  Value numSequences = getNumSequences(b, loc, offsets);
  Value firstRow = loadOffset(b, loc, offsets, k.index(0));
  Value endRow = loadOffset(b, loc, offsets, numSequences);
  k.forLoop(launch.getBlockIds().x, numRows, launch.getGridSize().x, [&](Value row) {
    Value inBatch = arith::AndIOp::create(
        b, loc,
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::uge, row, firstRow),
        k.ult(row, endRow));
    k.ifThen(inBatch, [&] { body(row, numSequences); });
  });
}

void mlir::kvcache::attention::emitAttentionMergeKernel(
    OpBuilder &builder, AttentionRaggedOp op, const AttentionPlan &plan,
    Value grid, Value splits) {
  Location loc = getKernelLoc(op);
  KernelBuilder k{builder, loc};
  Value out = op.getOut(), offsets = op.getRowOffsets();
  Value workspace = op.getWorkspace();
  int64_t D = plan.headSize;
  int64_t threads = std::min<int64_t>(D, 256);
  auto launch = gpu::LaunchOp::create(builder, loc, grid, k.index(plan.qHeads),
                                      k.index(1), k.index(threads), k.index(1),
                                      k.index(1));
  nameKernel(launch, op, "attention_merge");
  OpBuilder::InsertionGuard guard(builder);
  builder.setInsertionPointToStart(&launch.getBody().front());
  mentionOperands(builder, loc, {workspace, offsets, out});
  Value head = launch.getBlockIds().y;
  Value thread = launch.getThreadIds().x;
  forEachBatchRow(k, launch, out, offsets, [&](Value row, Value) {
    Value rowBase = k.mul(k.add(k.mul(row, k.index(plan.qHeads)), head), splits);
    auto maxLoop = scf::ForOp::create(
        builder, loc, k.index(0), splits, k.index(1),
        ValueRange{k.f32(-std::numeric_limits<float>::infinity())},
        [&](OpBuilder &b, Location l, Value s, ValueRange args) {
          KernelBuilder kb{b, l};
          scf::YieldOp::create(b, l, kb.fmax(args[0], memref::LoadOp::create(
                                                         b, l, workspace,
                                                         kb.add(kb.mul(kb.add(rowBase, s), kb.index(D + 2)), kb.index(D)))
                                                         .getResult()));
        });
    Value max = maxLoop.getResult(0);
    auto sumLoop = scf::ForOp::create(
        builder, loc, k.index(0), splits, k.index(1), ValueRange{k.f32(0)},
        [&](OpBuilder &b, Location l, Value s, ValueRange args) {
          KernelBuilder kb{b, l};
          Value m = memref::LoadOp::create(b, l, workspace,
                                           kb.add(kb.mul(kb.add(rowBase, s), kb.index(D + 2)), kb.index(D)));
          Value partial = memref::LoadOp::create(b, l, workspace,
                                                 kb.add(kb.mul(kb.add(rowBase, s), kb.index(D + 2)), kb.index(D + 1)));
          scf::YieldOp::create(b, l, kb.fadd(args[0], kb.fmul(kb.weight(m, max), partial)));
        });
    Value sum = sumLoop.getResult(0);
    k.forLoop(thread, k.index(D), k.index(threads), [&](Value d) {
      auto accLoop = scf::ForOp::create(
          builder, loc, k.index(0), splits, k.index(1), ValueRange{k.f32(0)},
          [&](OpBuilder &b, Location l, Value s, ValueRange args) {
            KernelBuilder kb{b, l};
            Value base = kb.mul(kb.add(rowBase, s), kb.index(D + 2));
            Value m = memref::LoadOp::create(b, l, workspace, kb.add(base, kb.index(D)));
            Value o = memref::LoadOp::create(b, l, workspace, kb.add(base, d));
            scf::YieldOp::create(b, l, kb.fadd(args[0], kb.fmul(kb.weight(m, max), o)));
          });
      Value result = arith::DivFOp::create(builder, loc, accLoop.getResult(0), sum);
      Value narrow = plan.elementType == builder.getF32Type()
                         ? result
                         : arith::TruncFOp::create(builder, loc, plan.elementType, result).getResult();
      memref::StoreOp::create(builder, loc, narrow, out, ValueRange{row, head, d});
    });
  });
  gpu::TerminatorOp::create(builder, loc);
}
