//===- RuntimeCalls.cpp - calls of the GPU emulator runtime ---------------===//
//
// Part of the kvcache-mlir project.
//
// The table of the runtime's entry points, built from EmulatorABI.h's
// X-macros and C declarations, and the state the patterns share.
//
//===----------------------------------------------------------------------===//

#include "RuntimeCalls.h"

#include "llvm/ADT/STLExtras.h"

#include <type_traits>

using namespace mlir;
using namespace mlir::kvcache;

//===----------------------------------------------------------------------===//
// The typed table
//===----------------------------------------------------------------------===//

template <typename>
constexpr bool kUnmappedCType = false;

/// The LLVM-dialect type of C type `T` as the runtime's declarations use
/// it. A type without a case does not compile: map it deliberately. Integers
/// narrower than 32 bits (and `bool`) have none on purpose: LLVM's C calling
/// convention passes them with `zeroext`/`signext` attributes that the
/// declarations would have to carry, so the ABI widens them to 32 bits.
template <typename T>
static Type getLLVMType(MLIRContext *context) {
  if constexpr (std::is_void_v<T>)
    return LLVM::LLVMVoidType::get(context);
  else if constexpr (std::is_pointer_v<T>)
    return LLVM::LLVMPointerType::get(context);
  else if constexpr (std::is_same_v<T, float>)
    return Float32Type::get(context);
  else if constexpr (std::is_same_v<T, double>)
    return Float64Type::get(context);
  else if constexpr (llvm::is_one_of<T, int32_t, uint32_t, int64_t,
                                     uint64_t>::value)
    return IntegerType::get(context, 8 * sizeof(T));
  else
    static_assert(kUnmappedCType<T>,
                  "a C type of EmulatorABI.h without an LLVM-dialect type");
}

/// The LLVM-dialect function type of a C function pointer type.
template <typename Function>
struct FunctionTypeBuilder;
template <typename Result, typename... Params>
struct FunctionTypeBuilder<Result (*)(Params...)> {
  static LLVM::LLVMFunctionType get(MLIRContext *context) {
    return LLVM::LLVMFunctionType::get(
        getLLVMType<Result>(context),
        ArrayRef<Type>({getLLVMType<Params>(context)...}));
  }
};

namespace {
/// One entry point of the runtime.
struct RuntimeFunctionInfo {
  StringLiteral name;
  /// The device function or intrinsic it replaces ("" for the runtime's
  /// own operations).
  StringLiteral replaced;
  LLVM::LLVMFunctionType (*getType)(MLIRContext *);
};
} // namespace

/// Every entry point, in the order of RuntimeFunction: `decltype` only reads
/// the declarations, so the pass does not link the runtime.
static constexpr RuntimeFunctionInfo kRuntimeFunctions[] = {
#define KVEMU_RUNTIME_INFO(function)                                           \
  {#function, "", &FunctionTypeBuilder<decltype(&::function)>::get},
#define KVEMU_DEVICE_INFO(function, replaced)                                  \
  {#function, replaced, &FunctionTypeBuilder<decltype(&::function)>::get},
    KVEMU_RUNTIME_FUNCTIONS(KVEMU_RUNTIME_INFO)
        KVEMU_DEVICE_FUNCTIONS(KVEMU_DEVICE_INFO)
#undef KVEMU_DEVICE_INFO
#undef KVEMU_RUNTIME_INFO
};

StringRef mlir::kvcache::getRuntimeFunctionName(RuntimeFunction function) {
  return kRuntimeFunctions[static_cast<unsigned>(function)].name;
}

LLVM::LLVMFunctionType
mlir::kvcache::getRuntimeFunctionType(MLIRContext *context,
                                      RuntimeFunction function) {
  return kRuntimeFunctions[static_cast<unsigned>(function)].getType(context);
}

std::optional<RuntimeFunction>
mlir::kvcache::lookupDeviceFunction(StringRef name) {
  for (auto [index, info] : llvm::enumerate(kRuntimeFunctions))
    if (!info.replaced.empty() && info.replaced == name)
      return static_cast<RuntimeFunction>(index);
  return std::nullopt;
}

//===----------------------------------------------------------------------===//
// Small builders
//===----------------------------------------------------------------------===//

Value mlir::kvcache::createI32Constant(OpBuilder &builder, Location loc,
                                       int64_t value) {
  return LLVM::ConstantOp::create(builder, loc, builder.getI32Type(),
                                  builder.getI32IntegerAttr(value));
}

Value mlir::kvcache::createI64Constant(OpBuilder &builder, Location loc,
                                       int64_t value) {
  return LLVM::ConstantOp::create(builder, loc, builder.getI64Type(),
                                  builder.getI64IntegerAttr(value));
}

Value mlir::kvcache::toGenericPointer(OpBuilder &builder, Location loc,
                                      Value pointer) {
  if (cast<LLVM::LLVMPointerType>(pointer.getType()).getAddressSpace() == 0)
    return pointer;
  return LLVM::AddrSpaceCastOp::create(
      builder, loc, LLVM::LLVMPointerType::get(builder.getContext()), pointer);
}

//===----------------------------------------------------------------------===//
// EmulatorState
//===----------------------------------------------------------------------===//

LogicalResult EmulatorState::checkType(Operation *op, RuntimeFunction function,
                                       LLVM::LLVMFunctionType type,
                                       const Twine &what) {
  LLVM::LLVMFunctionType expected =
      getRuntimeFunctionType(op->getContext(), function);
  if (type == expected)
    return success();
  return reportError(op->emitOpError()
                     << what << " as " << type
                     << ", but the GPU emulator runtime's '"
                     << getRuntimeFunctionName(function) << "' is "
                     << expected);
}

FailureOr<LLVM::LLVMFuncOp> EmulatorState::declare(OpBuilder &builder,
                                                   Operation *op,
                                                   RuntimeFunction function) {
  StringRef name = getRuntimeFunctionName(function);
  LLVM::LLVMFunctionType type =
      getRuntimeFunctionType(builder.getContext(), function);
  if (Operation *existing = host.lookupSymbol(name)) {
    auto func = dyn_cast<LLVM::LLVMFuncOp>(existing);
    if (func && func.getFunctionType() == type)
      return func;
    return reportError(op->emitOpError()
                       << "needs the GPU emulator runtime's '" << name
                       << "' of type " << type
                       << ", but the host module defines that symbol "
                          "otherwise");
  }
  OpBuilder::InsertionGuard guard(builder);
  builder.setInsertionPointToStart(host.getBody());
  return LLVM::LLVMFuncOp::create(builder, host.getLoc(), name, type);
}

FailureOr<LLVM::CallOp> EmulatorState::call(OpBuilder &builder, Operation *op,
                                            RuntimeFunction function,
                                            ValueRange args) {
  LLVM::LLVMFunctionType expected =
      getRuntimeFunctionType(builder.getContext(), function);
  auto actual = LLVM::LLVMFunctionType::get(expected.getReturnType(),
                                            llvm::to_vector(args.getTypes()));
  if (failed(checkType(op, function, actual, "would call the runtime")))
    return failure();
  FailureOr<LLVM::LLVMFuncOp> callee = declare(builder, op, function);
  if (failed(callee))
    return failure();
  return LLVM::CallOp::create(builder, op->getLoc(), *callee, args);
}

LogicalResult EmulatorState::replaceByCall(RewriterBase &rewriter,
                                           Operation *op,
                                           RuntimeFunction function,
                                           ValueRange args) {
  FailureOr<LLVM::CallOp> call = this->call(rewriter, op, function, args);
  if (failed(call))
    return failure();
  rewriter.replaceOp(op, call->getResults());
  return success();
}

void EmulatorState::createStringGlobal(OpBuilder &builder, Location loc,
                                       StringRef name, StringRef text) {
  OpBuilder::InsertionGuard guard(builder);
  builder.setInsertionPointToStart(host.getBody());
  std::string data = text.str();
  data.push_back('\0');
  auto type = LLVM::LLVMArrayType::get(builder.getI8Type(), data.size());
  LLVM::GlobalOp::create(builder, loc, type, /*isConstant=*/true,
                         LLVM::Linkage::Internal, name,
                         builder.getStringAttr(data));
}

Value EmulatorState::stringAddress(OpBuilder &builder, Location loc,
                                   StringRef text) {
  std::string &name = stringGlobals[text];
  if (name.empty()) {
    name = "__kvemu_str_" + std::to_string(stringGlobals.size() - 1);
    createStringGlobal(builder, loc, name, text);
  }
  return LLVM::AddressOfOp::create(
      builder, loc, LLVM::LLVMPointerType::get(builder.getContext()), name);
}

/// "file:line:col" of the first file location inside `loc`, or "unknown".
static std::string describeLocation(Location loc) {
  std::string result = "unknown";
  loc->walk([&](Location inner) {
    if (auto file = dyn_cast<FileLineColLoc>(inner)) {
      result = (file.getFilename().getValue() + ":" + Twine(file.getLine()) +
                ":" + Twine(file.getColumn()))
                   .str();
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  return result;
}

Value EmulatorState::siteAddress(OpBuilder &builder, Location loc) {
  std::string name = "__kvemu_site_" + std::to_string(siteCount++);
  createStringGlobal(builder, loc, name, describeLocation(loc));
  return LLVM::AddressOfOp::create(
      builder, loc, LLVM::LLVMPointerType::get(builder.getContext()), name);
}

LogicalResult EmulatorState::reportError(InFlightDiagnostic &&diagnostic) {
  errorReported = true;
  diagnostic.report();
  return failure();
}

void mlir::kvcache::populateEmulateNVVMPatterns(RewritePatternSet &patterns,
                                                EmulatorState &state) {
  populateKernelOpPatterns(patterns, state);
  populateWarpCollectivePatterns(patterns, state);
  populateFp8ConversionPatterns(patterns, state);
}
