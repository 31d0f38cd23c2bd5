//===- StructuralConversion.cpp - 1:N type conversion of gpu ops -*- C++ -*-=//
//
// Part of the kvcache-mlir project.
//
//===----------------------------------------------------------------------===//

#include "StructuralConversion.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Transforms/DialectConversion.h"

using namespace mlir;

namespace {

/// Converts the argument and result types of a `gpu.func`. Workgroup and
/// private attributions follow the arguments in the entry block and keep
/// their types (the generic function pattern does not know about them).
struct GPUFuncSignatureConversion : OpConversionPattern<gpu::GPUFuncOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(gpu::GPUFuncOp op, OpAdaptor,
                  ConversionPatternRewriter &rewriter) const override {
    FunctionType type = op.getFunctionType();
    Block &entry = op.getBody().front();
    unsigned numInputs = type.getNumInputs();
    TypeConverter::SignatureConversion conversion(entry.getNumArguments());
    for (auto [index, argType] : llvm::enumerate(type.getInputs()))
      if (failed(getTypeConverter()->convertSignatureArg(index, argType,
                                                         conversion)))
        return rewriter.notifyMatchFailure(op, "argument type not converted");
    for (unsigned index = numInputs; index < entry.getNumArguments(); ++index)
      conversion.addInputs(index, entry.getArgument(index).getType());
    SmallVector<Type> results;
    if (failed(getTypeConverter()->convertTypes(type.getResults(), results)))
      return rewriter.notifyMatchFailure(op, "result type not converted");

    ArrayRef<Type> converted = conversion.getConvertedTypes();
    unsigned numNewInputs =
        converted.size() - (entry.getNumArguments() - numInputs);
    // Argument attributes follow their argument; pieces of a decomposed
    // argument get none.
    SmallVector<Attribute> argAttrs;
    if (ArrayAttr oldAttrs = op.getAllArgAttrs()) {
      argAttrs.assign(numNewInputs, rewriter.getDictionaryAttr({}));
      for (unsigned index = 0; index < numInputs; ++index) {
        auto mapping = conversion.getInputMapping(index);
        if (mapping && mapping->size == 1)
          argAttrs[mapping->inputNo] = oldAttrs[index];
      }
    }
    auto newType = FunctionType::get(
        op.getContext(), converted.take_front(numNewInputs), results);
    if (failed(rewriter.convertRegionTypes(&op.getBody(), *getTypeConverter(),
                                           &conversion)))
      return failure();
    rewriter.modifyOpInPlace(op, [&] {
      op.setFunctionTypeAttr(TypeAttr::get(newType));
      if (!argAttrs.empty())
        op.setAllArgAttrs(argAttrs);
    });
    return success();
  }
};

/// Flattens the kernel operands of a `gpu.launch_func`.
struct LaunchFuncConversion : OpConversionPattern<gpu::LaunchFuncOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(gpu::LaunchFuncOp op, OneToNOpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    SmallVector<Value> operands;
    for (ValueRange values : adaptor.getKernelOperands())
      llvm::append_range(operands, values);
    rewriter.modifyOpInPlace(
        op, [&] { op.getKernelOperandsMutable().assign(operands); });
    return success();
  }
};

/// Flattens the operands of a `gpu.return`.
struct GPUReturnConversion : OpConversionPattern<gpu::ReturnOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(gpu::ReturnOp op, OneToNOpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    SmallVector<Value> operands;
    for (ValueRange values : adaptor.getOperands())
      llvm::append_range(operands, values);
    rewriter.replaceOpWithNewOp<gpu::ReturnOp>(op, operands);
    return success();
  }
};

} // namespace

void mlir::kvcache::populateGPUStructuralTypeConversions(
    const TypeConverter &typeConverter, RewritePatternSet &patterns) {
  patterns.add<GPUFuncSignatureConversion, LaunchFuncConversion,
               GPUReturnConversion>(typeConverter, patterns.getContext());
}

void mlir::kvcache::configureGPUStructuralLegality(
    ConversionTarget &target, const TypeConverter &typeConverter) {
  target.addDynamicallyLegalOp<gpu::GPUFuncOp>([&](gpu::GPUFuncOp op) {
    return typeConverter.isSignatureLegal(op.getFunctionType());
  });
}
