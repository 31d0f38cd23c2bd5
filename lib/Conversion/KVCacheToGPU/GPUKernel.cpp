//===- GPUKernel.cpp - a kernel op's GPU kernel and its launch ------------===//
//
// Part of the kvcache-mlir project.
//
//===----------------------------------------------------------------------===//

#include "GPUKernel.h"

#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/FunctionInterfaces.h"

using namespace mlir;
using namespace mlir::kvcache;

/// The kernel module of the module around `op`, created at its end when
/// missing; null (with an error) when the name is taken by another symbol.
static gpu::GPUModuleOp getOrCreateKernelModule(Operation *op) {
  auto module = op->getParentOfType<ModuleOp>();
  if (!module) {
    op->emitOpError("must be inside a builtin.module to be lowered to GPU "
                    "kernels");
    return {};
  }
  Operation *existing = SymbolTable::lookupSymbolIn(module, kKernelModuleName);
  if (auto kernels = dyn_cast_or_null<gpu::GPUModuleOp>(existing))
    return kernels;
  if (existing) {
    op->emitOpError("cannot be lowered to a GPU kernel: symbol @")
        << kKernelModuleName
        << " is taken by something other than a gpu.module; rename it";
    return {};
  }
  MLIRContext *ctx = op->getContext();
  module->setAttr(gpu::GPUDialect::getContainerModuleAttrName(),
                  UnitAttr::get(ctx));
  OpBuilder builder(ctx);
  builder.setInsertionPointToEnd(module.getBody());
  return gpu::GPUModuleOp::create(builder, module.getLoc(), kKernelModuleName);
}

/// Block id (kind 0), thread id (1), grid size (2) or block size (3) in
/// dimension `dim`.
static Value createId(OpBuilder &builder, Location loc, unsigned kind,
                      gpu::Dimension dim) {
  switch (kind) {
  case 0:
    return gpu::BlockIdOp::create(builder, loc, dim);
  case 1:
    return gpu::ThreadIdOp::create(builder, loc, dim);
  case 2:
    return gpu::GridDimOp::create(builder, loc, dim);
  default:
    return gpu::BlockDimOp::create(builder, loc, dim);
  }
}

GPUKernel::GPUKernel(gpu::GPUFuncOp function, Location loc)
    : function(function), bodyBuilder(function.getContext()),
      k{bodyBuilder, loc} {
  bodyBuilder.setInsertionPoint(function.getBody().front().getTerminator());
  // Every id at the top of the kernel, read once (unused ones fold away),
  // in the order gpu-kernel-outlining creates them.
  for (unsigned kind = 0; kind < 4; ++kind)
    for (auto dim : {gpu::Dimension::x, gpu::Dimension::y, gpu::Dimension::z})
      ids[kind][static_cast<unsigned>(dim)] =
          createId(bodyBuilder, loc, kind, dim);
}

std::unique_ptr<GPUKernel> GPUKernel::create(OpBuilder &host, Operation *op,
                                             StringRef name,
                                             ValueRange operands,
                                             const LaunchShape &shape) {
  gpu::GPUModuleOp kernels = getOrCreateKernelModule(op);
  if (!kernels)
    return nullptr;
  MLIRContext *ctx = op->getContext();
  Location loc = getKernelLoc(op);
  std::string symbol = name.str();
  if (auto enclosing = op->getParentOfType<FunctionOpInterface>())
    symbol = (enclosing.getName() + "_" + name).str();

  OpBuilder detached(ctx);
  auto function = gpu::GPUFuncOp::create(
      detached, loc, symbol,
      FunctionType::get(ctx, TypeRange(operands), TypeRange{}));
  function->setAttr(gpu::GPUDialect::getKernelFuncAttrName(),
                    UnitAttr::get(ctx));
  function.setKnownBlockSizeAttr(DenseI32ArrayAttr::get(
      ctx, {static_cast<int32_t>(shape.threads), 1, 1}));
  detached.setInsertionPointToEnd(&function.getBody().front());
  gpu::ReturnOp::create(detached, loc);
  // Renames the kernel `<symbol>_0`, `_1`, ... when the name is taken.
  SymbolTable(kernels).insert(function);

  Value one = arith::ConstantIndexOp::create(host, loc, 1);
  Value threads = arith::ConstantIndexOp::create(host, loc, shape.threads);
  Value dynamicSharedBytes;
  if (shape.dynamicSharedBytes > 0)
    dynamicSharedBytes = arith::ConstantIntOp::create(
        host, loc, host.getI32Type(), shape.dynamicSharedBytes);
  gpu::LaunchFuncOp::create(host, loc, function,
                            gpu::KernelDim3{shape.gridX, shape.gridY,
                                            shape.gridZ},
                            gpu::KernelDim3{threads, one, one},
                            dynamicSharedBytes, operands);

  std::unique_ptr<GPUKernel> kernel(new GPUKernel(function, loc));
  kernel->dynamicSharedBytes = shape.dynamicSharedBytes;
  for (auto [operand, param] :
       llvm::zip(operands, function.getArguments()))
    if (!kernel->mapping.contains(operand))
      kernel->mapping.map(operand, param);
  return kernel;
}

Value GPUKernel::blockId(gpu::Dimension dim) {
  return ids[0][static_cast<unsigned>(dim)];
}
Value GPUKernel::threadId(gpu::Dimension dim) {
  return ids[1][static_cast<unsigned>(dim)];
}
Value GPUKernel::gridDim(gpu::Dimension dim) {
  return ids[2][static_cast<unsigned>(dim)];
}
Value GPUKernel::blockDim(gpu::Dimension dim) {
  return ids[3][static_cast<unsigned>(dim)];
}

Value GPUKernel::addSharedBuffer(ArrayRef<int64_t> shape, Type elementType) {
  auto type = MemRefType::get(
      shape, elementType, MemRefLayoutAttrInterface(),
      gpu::AddressSpaceAttr::get(function.getContext(),
                                 gpu::AddressSpace::Workgroup));
  return function.addWorkgroupAttribution(type, k.loc);
}

Value GPUKernel::addDynamicSharedBuffer(ArrayRef<int64_t> shape,
                                        Type elementType) {
  MLIRContext *ctx = function.getContext();
  auto workgroup =
      gpu::AddressSpaceAttr::get(ctx, gpu::AddressSpace::Workgroup);
  if (!dynamicShared) {
    // At the top of the kernel, before the ids: every buffer's view can
    // use it.
    OpBuilder::InsertionGuard guard(k.b);
    k.b.setInsertionPointToStart(&function.getBody().front());
    dynamicShared = gpu::DynamicSharedMemoryOp::create(
        k.b, k.loc,
        MemRefType::get({ShapedType::kDynamic}, k.b.getI8Type(),
                        MemRefLayoutAttrInterface(), workgroup));
  }
  auto type =
      MemRefType::get(shape, elementType, MemRefLayoutAttrInterface(), workgroup);
  int64_t bytes = type.getNumElements() *
                  llvm::divideCeil(elementType.getIntOrFloatBitWidth(), 8);
  int64_t offset = llvm::alignTo(dynamicSharedUsed, 16);
  dynamicSharedUsed = offset + bytes;
  assert(dynamicSharedUsed <= dynamicSharedBytes &&
         "the launch's dynamic shared memory cannot hold the buffer");
  OpBuilder::InsertionGuard guard(k.b);
  k.b.setInsertionPointAfter(dynamicShared.getDefiningOp());
  return memref::ViewOp::create(k.b, k.loc, type, dynamicShared,
                                arith::ConstantIndexOp::create(k.b, k.loc, offset),
                                ValueRange{});
}

void GPUKernel::forEachBatchRow(
    Value rows, Value offsets,
    function_ref<void(Value row, Value numSequences)> body) {
  Value numRows = memref::DimOp::create(k.b, k.loc, rows, 0);
  Value numSequences = k.numSequences(offsets);
  Value firstRow = k.loadOffset(offsets, k.index(0));
  Value endRow = k.loadOffset(offsets, numSequences);
  k.forLoop(blockId(gpu::Dimension::x), numRows, gridDim(gpu::Dimension::x),
            [&](Value row) {
              Value inBatch = k.andi(k.uge(row, firstRow), k.ult(row, endRow));
              k.ifThen(inBatch, [&] { body(row, numSequences); });
            });
}

LogicalResult mlir::kvcache::emitGuardedKernel(
    OpBuilder &builder, Operation *op, Value run, const LaunchShape &shape,
    function_ref<void(GPUKernel &)> body) {
  KernelBuilder host{builder, getKernelLoc(op)};
  LogicalResult result = success();
  host.ifThen(run, [&] {
    std::unique_ptr<GPUKernel> kernel = GPUKernel::create(
        builder, op, op->getName().stripDialect(),
        cast<KernelOpInterface>(op).getKernelOperands(), shape);
    if (!kernel) {
      result = failure();
      return;
    }
    body(*kernel);
  });
  return result;
}
