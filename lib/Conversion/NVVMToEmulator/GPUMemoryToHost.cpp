//===- GPUMemoryToHost.cpp - host GPU memory ops on host memory -*- C++ -*-===//
//
// Part of the kvcache-mlir project.
//
// `kvcache-gpu-memory-to-host`: on the emulated GPU device memory is host
// memory, so the synchronous host forms of `gpu.alloc`, `gpu.dealloc`,
// `gpu.memcpy`, `gpu.memset` and `gpu.wait` become memref/linalg ops (or
// nothing). Asynchronous forms stay for gpu-to-llvm, whose `mgpu*` calls the
// emulator runtime provides.
//
//===----------------------------------------------------------------------===//

#include "KVCache/Conversion/Passes.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"

namespace mlir {
#define GEN_PASS_DEF_KVCACHEGPUMEMORYTOHOST
#include "KVCache/Conversion/Passes.h.inc"
} // namespace mlir

using namespace mlir;

namespace {

/// Rewrites one synchronous host GPU memory operation; asynchronous ones
/// (with a token) stay for gpu-to-llvm.
void rewriteHostMemoryOp(Operation *op) {
  if (auto asyncOp = dyn_cast<gpu::AsyncOpInterface>(op);
      !asyncOp || asyncOp.getAsyncToken())
    return;
  OpBuilder builder(op);
  Location loc = op->getLoc();
  if (auto alloc = dyn_cast<gpu::AllocOp>(op)) {
    if (alloc.getHostShared())
      return;
    Value memory = memref::AllocOp::create(
        builder, loc, alloc.getType(), alloc.getDynamicSizes(),
        alloc.getSymbolOperands(), builder.getI64IntegerAttr(256));
    alloc.getMemref().replaceAllUsesWith(memory);
  } else if (auto dealloc = dyn_cast<gpu::DeallocOp>(op)) {
    memref::DeallocOp::create(builder, loc, dealloc.getMemref());
  } else if (auto copy = dyn_cast<gpu::MemcpyOp>(op)) {
    memref::CopyOp::create(builder, loc, copy.getSrc(), copy.getDst());
  } else if (auto set = dyn_cast<gpu::MemsetOp>(op)) {
    linalg::FillOp::create(builder, loc, set.getValue(), set.getDst());
  } else if (!isa<gpu::WaitOp>(op)) {
    return;
  }
  op->erase();
}

struct KVCacheGPUMemoryToHostPass
    : impl::KVCacheGPUMemoryToHostBase<KVCacheGPUMemoryToHostPass> {
  void runOnOperation() override {
    SmallVector<Operation *> ops;
    getOperation().walk([&](Operation *op) {
      if (!op->getParentOfType<gpu::GPUModuleOp>() &&
          isa<gpu::AllocOp, gpu::DeallocOp, gpu::MemcpyOp, gpu::MemsetOp,
              gpu::WaitOp>(op))
        ops.push_back(op);
    });
    for (Operation *op : ops)
      rewriteHostMemoryOp(op);
  }
};

} // namespace
