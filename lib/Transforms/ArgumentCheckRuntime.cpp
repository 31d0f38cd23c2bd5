//===- ArgumentCheckRuntime.cpp - what the argument checks call -*- C++ -*-===//
//
// Part of the kvcache-mlir project.
//
// Host code only, written with the LLVM dialect's libc calls as the other
// host checks are (KernelCommon/RuntimeChecks.cpp): snprintf formats a
// failed check into a buffer; the handler of checked mode records it
// (capture mode) or prints it to stderr and aborts.
//
//===----------------------------------------------------------------------===//

#include "ArgumentCheckRuntime.h"
#include "../Conversion/KernelCommon/RuntimeChecks.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

using namespace mlir;
using namespace mlir::kvcache;

/// The globals and functions of checked mode (docs/Contract.md, section
/// 5.2): the capture flag, the recorded message, the failure handler.
static constexpr StringLiteral kCaptureGlobal = "__kvcache_check_capture_on";
static constexpr StringLiteral kMessageGlobal = "__kvcache_check_message";
static constexpr StringLiteral kHandler = "__kvcache_check_fail";
static constexpr StringLiteral kAbortHandler = "__kvcache_check_abort";
static constexpr StringLiteral kCaptureFunction = "kvcache_check_capture";
static constexpr StringLiteral kFailureFunction = "kvcache_check_failure";

static Type getPointerType(OpBuilder &builder) {
  return LLVM::LLVMPointerType::get(builder.getContext());
}

/// Declares `int snprintf(char *, size_t, const char *, ...)`.
static LLVM::LLVMFuncOp getSnprintf(OpBuilder &builder, ModuleOp module) {
  Type ptr = getPointerType(builder);
  return getOrDeclareFunction(
      builder, module, "snprintf",
      LLVM::LLVMFunctionType::get(builder.getI32Type(),
                                  {ptr, builder.getI64Type(), ptr},
                                  /*isVarArg=*/true));
}

/// `text` with every '%' doubled, for a printf format.
static std::string escapeFormat(StringRef text) {
  std::string escaped;
  for (char c : text) {
    if (c == '%')
      escaped.push_back('%');
    escaped.push_back(c);
  }
  return escaped;
}

Value mlir::kvcache::getBufferPointer(OpBuilder &builder, Location loc,
                                      Value buffer) {
  auto metadata = memref::ExtractStridedMetadataOp::create(builder, loc, buffer);
  Value base = memref::ExtractAlignedPointerAsIndexOp::create(builder, loc,
                                                              buffer);
  Value address =
      arith::AddIOp::create(builder, loc, base, metadata.getOffset());
  Value address64 =
      arith::IndexCastOp::create(builder, loc, builder.getI64Type(), address);
  return LLVM::IntToPtrOp::create(builder, loc, getPointerType(builder),
                                  address64);
}

//===----------------------------------------------------------------------===//
// MessageReporter
//===----------------------------------------------------------------------===//

void MessageReporter::setOp(Operation *op) {
  prefix = function + ": " + op->getName().getStringRef().str();
  std::string where = describeLocation(op->getLoc());
  if (!where.empty())
    prefix += " at " + where;
  prefix = escapeFormat(prefix) + ": ";
  numChecks = 0;
}

void MessageReporter::check(OpBuilder &builder, Location loc, Value failed,
                            StringRef format, ValueRange values) {
  ++numChecks;
  Value failedBefore = memref::LoadOp::create(builder, loc, flag);
  Value first = arith::XOrIOp::create(
      builder, loc, failedBefore,
      arith::ConstantIntOp::create(builder, loc, 1, 1));
  Value report = arith::AndIOp::create(builder, loc, failed, first);
  auto ifOp = scf::IfOp::create(builder, loc, report, /*withElse=*/false);
  OpBuilder::InsertionGuard guard(builder);
  builder.setInsertionPoint(ifOp.thenBlock()->getTerminator());
  Type i64 = builder.getI64Type();
  SmallVector<Value> arguments = {
      getBufferPointer(builder, loc, message),
      arith::IndexCastOp::create(
          builder, loc, i64, memref::DimOp::create(builder, loc, message, 0)),
      getStringAddress(builder, loc, module, prefix + format.str())};
  for (Value value : values)
    arguments.push_back(arith::IndexCastOp::create(builder, loc, i64, value));
  LLVM::CallOp::create(builder, loc, getSnprintf(builder, module), arguments);
  memref::StoreOp::create(builder, loc,
                          arith::ConstantIntOp::create(builder, loc, 1, 1),
                          flag);
}

void MessageReporter::guard(OpBuilder &builder, Location loc) {
  // An op without checks guards nothing.
  if (numChecks == 0)
    return;
  Value failedBefore = memref::LoadOp::create(builder, loc, flag);
  Value ok = arith::XOrIOp::create(
      builder, loc, failedBefore,
      arith::ConstantIntOp::create(builder, loc, 1, 1));
  auto ifOp = scf::IfOp::create(builder, loc, ok, /*withElse=*/false);
  builder.setInsertionPoint(ifOp.thenBlock()->getTerminator());
}

//===----------------------------------------------------------------------===//
// Checked mode
//===----------------------------------------------------------------------===//

/// An internal zero-initialized global `name` of `type`.
static void defineZeroGlobal(OpBuilder &builder, ModuleOp module,
                             StringRef name, Type type) {
  Location loc = module.getLoc();
  auto global = LLVM::GlobalOp::create(builder, loc, type,
                                       /*isConstant=*/false,
                                       LLVM::Linkage::Internal, name,
                                       Attribute());
  OpBuilder::InsertionGuard guard(builder);
  builder.createBlock(&global.getInitializerRegion());
  LLVM::ReturnOp::create(builder, loc,
                         LLVM::ZeroOp::create(builder, loc, type).getResult());
}

static Value getGlobalAddress(OpBuilder &builder, Location loc,
                              StringRef name) {
  return LLVM::AddressOfOp::create(builder, loc, getPointerType(builder),
                                   name);
}

/// Prints "kvcache run-time check failed: <message>" to stderr, then
/// aborts.
static void emitPrintAndAbort(OpBuilder &builder, ModuleOp module,
                              Value message);

/// `__kvcache_check_fail(message)`: in capture mode, records `message`
/// unless a message is recorded already (the first failure wins); else
/// prints it to stderr and aborts.
static void defineHandler(OpBuilder &builder, ModuleOp module) {
  Location loc = module.getLoc();
  MLIRContext *ctx = builder.getContext();
  Type ptr = getPointerType(builder);
  auto handler = func::FuncOp::create(
      builder, loc, kHandler, FunctionType::get(ctx, {ptr}, {}));
  handler.setPrivate();
  OpBuilder::InsertionGuard guard(builder);
  Block *body = handler.addEntryBlock();
  builder.setInsertionPointToStart(body);
  Value message = body->getArgument(0);
  Type i32 = builder.getI32Type();
  Value on = LLVM::LoadOp::create(builder, loc, i32,
                                  getGlobalAddress(builder, loc, kCaptureGlobal));
  Value capture = arith::CmpIOp::create(
      builder, loc, arith::CmpIPredicate::ne, on,
      arith::ConstantIntOp::create(builder, loc, i32, 0));
  auto ifOp = scf::IfOp::create(builder, loc, capture, /*withElse=*/true);
  builder.setInsertionPoint(ifOp.thenBlock()->getTerminator());
  Value recorded = getGlobalAddress(builder, loc, kMessageGlobal);
  Type i8 = builder.getI8Type();
  Value empty = arith::CmpIOp::create(
      builder, loc, arith::CmpIPredicate::eq,
      LLVM::LoadOp::create(builder, loc, i8, recorded),
      arith::ConstantIntOp::create(builder, loc, i8, 0));
  auto record = scf::IfOp::create(builder, loc, empty, /*withElse=*/false);
  builder.setInsertionPoint(record.thenBlock()->getTerminator());
  LLVM::CallOp::create(
      builder, loc, getSnprintf(builder, module),
      ValueRange{recorded,
                 LLVM::ConstantOp::create(builder, loc, builder.getI64Type(),
                                          kMessageBytes),
                 getStringAddress(builder, loc, module, "%s"), message});
  builder.setInsertionPoint(ifOp.elseBlock()->getTerminator());
  emitPrintAndAbort(builder, module, message);
  builder.setInsertionPointToEnd(body);
  func::ReturnOp::create(builder, loc);
}

/// `__kvcache_check_abort(message)`: prints `message` to stderr and aborts,
/// in capture mode too (the failures of a function that cannot return
/// early: it returns a cache value).
static void defineAbortHandler(OpBuilder &builder, ModuleOp module) {
  Location loc = module.getLoc();
  Type ptr = getPointerType(builder);
  auto handler = func::FuncOp::create(
      builder, loc, kAbortHandler,
      FunctionType::get(builder.getContext(), {ptr}, {}));
  handler.setPrivate();
  OpBuilder::InsertionGuard guard(builder);
  Block *body = handler.addEntryBlock();
  builder.setInsertionPointToStart(body);
  emitPrintAndAbort(builder, module, body->getArgument(0));
  func::ReturnOp::create(builder, loc);
}

static void emitPrintAndAbort(OpBuilder &builder, ModuleOp module,
                              Value message) {
  Location loc = module.getLoc();
  MLIRContext *ctx = builder.getContext();
  Type i32 = builder.getI32Type();
  Type ptr = getPointerType(builder);
  LLVM::LLVMFuncOp dprintf = getOrDeclareFunction(
      builder, module, "dprintf",
      LLVM::LLVMFunctionType::get(i32, {i32, ptr}, /*isVarArg=*/true));
  LLVM::LLVMFuncOp abort = getOrDeclareFunction(
      builder, module, "abort",
      LLVM::LLVMFunctionType::get(LLVM::LLVMVoidType::get(ctx), {}));
  LLVM::CallOp::create(
      builder, loc, dprintf,
      ValueRange{LLVM::ConstantOp::create(builder, loc, i32, 2),
                 getStringAddress(builder, loc, module,
                                  "kvcache run-time check failed: %s\n"),
                 message});
  LLVM::CallOp::create(builder, loc, abort, ValueRange{});
}

/// The public `kvcache_check_capture(%on: i32)` and
/// `kvcache_check_failure() -> !llvm.ptr`.
static void defineCaptureFunctions(OpBuilder &builder, ModuleOp module) {
  Location loc = module.getLoc();
  MLIRContext *ctx = builder.getContext();
  Type i32 = builder.getI32Type();
  Type ptr = getPointerType(builder);
  OpBuilder::InsertionGuard guard(builder);
  auto capture = func::FuncOp::create(builder, loc, kCaptureFunction,
                                      FunctionType::get(ctx, {i32}, {}));
  Block *body = capture.addEntryBlock();
  builder.setInsertionPointToStart(body);
  LLVM::StoreOp::create(builder, loc, body->getArgument(0),
                        getGlobalAddress(builder, loc, kCaptureGlobal));
  LLVM::StoreOp::create(builder, loc,
                        arith::ConstantIntOp::create(builder, loc,
                                                     builder.getI8Type(), 0),
                        getGlobalAddress(builder, loc, kMessageGlobal));
  func::ReturnOp::create(builder, loc);

  builder.setInsertionPointAfter(capture);
  auto failure = func::FuncOp::create(builder, loc, kFailureFunction,
                                      FunctionType::get(ctx, {}, {ptr}));
  body = failure.addEntryBlock();
  builder.setInsertionPointToStart(body);
  func::ReturnOp::create(builder, loc,
                         getGlobalAddress(builder, loc, kMessageGlobal));
}

ArrayRef<StringRef> mlir::kvcache::getCheckedModeSymbols() {
  static const StringRef symbols[] = {kCaptureFunction, kFailureFunction,
                                      kHandler,         kAbortHandler,
                                      kCaptureGlobal,   kMessageGlobal};
  return symbols;
}

void mlir::kvcache::defineCheckedModeRuntime(OpBuilder &builder,
                                             ModuleOp module) {
  if (module.lookupSymbol(kHandler))
    return;
  OpBuilder::InsertionGuard guard(builder);
  builder.setInsertionPointToEnd(module.getBody());
  defineZeroGlobal(builder, module, kCaptureGlobal, builder.getI32Type());
  defineZeroGlobal(builder, module, kMessageGlobal,
                   LLVM::LLVMArrayType::get(builder.getI8Type(), kMessageBytes));
  defineHandler(builder, module);
  builder.setInsertionPointToEnd(module.getBody());
  defineAbortHandler(builder, module);
  builder.setInsertionPointToEnd(module.getBody());
  defineCaptureFunctions(builder, module);
}

void mlir::kvcache::emitFailureCall(OpBuilder &builder, Location loc,
                                    Value buffer, bool mayReturn) {
  func::CallOp::create(builder, loc, mayReturn ? kHandler : kAbortHandler,
                       TypeRange{},
                       getBufferPointer(builder, loc, buffer));
}

Value mlir::kvcache::emitFailureRecorded(OpBuilder &builder, Location loc) {
  Type i8 = builder.getI8Type();
  Value first = LLVM::LoadOp::create(
      builder, loc, i8, getGlobalAddress(builder, loc, kMessageGlobal));
  return arith::CmpIOp::create(builder, loc, arith::CmpIPredicate::ne, first,
                               arith::ConstantIntOp::create(builder, loc, i8, 0));
}
