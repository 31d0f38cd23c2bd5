//===- RuntimeChecks.cpp - run-time bound checks ----------------*- C++ -*-===//
//
// Part of the kvcache-mlir project.
//
//===----------------------------------------------------------------------===//

#include "RuntimeChecks.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/xxhash.h"

using namespace mlir;
using namespace mlir::kvcache;

std::string mlir::kvcache::describeLocation(Location loc) {
  if (auto fileLoc = loc->findInstanceOf<FileLineColLoc>())
    return (fileLoc.getFilename().getValue() + ":" +
            Twine(fileLoc.getLine()) + ":" + Twine(fileLoc.getColumn()))
        .str();
  return "";
}

RuntimeChecker::RuntimeChecker(OpBuilder &builder, Operation *op,
                               RunsOn where)
    : builder(builder), op(op), loc(op->getLoc()),
      onDevice(where == RunsOn::Device) {}

void RuntimeChecker::checkLess(Value value, Value bound, StringRef what,
                               StringRef boundName) {
  Value ok = arith::CmpIOp::create(builder, loc, arith::CmpIPredicate::ult,
                                   value, bound);
  emitFailure(ok,
              (what + " %lld is out of range: " + boundName + " is %lld")
                  .str(),
              (what + " is out of range (must be below " + boundName + ")")
                  .str(),
              value, bound);
}

void RuntimeChecker::checkLess(Value value, int64_t bound, StringRef what,
                               StringRef boundName) {
  checkLess(value, arith::ConstantIndexOp::create(builder, loc, bound), what,
            boundName);
}

void RuntimeChecker::checkMultiple(Value value, int64_t divisor,
                                   StringRef what) {
  Value divisorValue = arith::ConstantIndexOp::create(builder, loc, divisor);
  Value remainder = arith::RemUIOp::create(builder, loc, value, divisorValue);
  Value zero = arith::ConstantIndexOp::create(builder, loc, 0);
  Value ok = arith::CmpIOp::create(builder, loc, arith::CmpIPredicate::eq,
                                   remainder, zero);
  emitFailure(ok, (what + " %lld is not a multiple of %lld").str(),
              (what + " is not a multiple of " + Twine(divisor)).str(), value,
              divisorValue);
}

void RuntimeChecker::checkNoNaNForI8(Value hasNaN, Value row,
                                     Value element) {
  Value ok = arith::XOrIOp::create(
      builder, loc, hasNaN, arith::ConstantIntOp::create(builder, loc, 1, 1));
  emitFailure(ok,
              "a NaN in row %lld (chunk at element %lld) of the values: an "
              "i8 cache cannot hold it (stored as 0)",
              "a NaN in the values: an i8 cache cannot hold it (stored as 0)",
              row, element);
}

LLVM::LLVMFuncOp
mlir::kvcache::getOrDeclareFunction(OpBuilder &builder, ModuleOp module,
                                    StringRef name,
                                    LLVM::LLVMFunctionType type) {
  if (auto func = module.lookupSymbol<LLVM::LLVMFuncOp>(name))
    return func;
  OpBuilder::InsertionGuard guard(builder);
  builder.setInsertionPointToStart(module.getBody());
  return LLVM::LLVMFuncOp::create(builder, module.getLoc(), name, type);
}

Value mlir::kvcache::getStringAddress(OpBuilder &builder, Location loc,
                                      ModuleOp module, StringRef text) {
  std::string name =
      "__kvcache_check_message_" + llvm::utohexstr(llvm::xxh3_64bits(text));
  auto global = module.lookupSymbol<LLVM::GlobalOp>(name);
  if (!global) {
    OpBuilder::InsertionGuard guard(builder);
    builder.setInsertionPointToStart(module.getBody());
    std::string bytes = text.str();
    bytes.push_back('\0');
    auto type = LLVM::LLVMArrayType::get(builder.getI8Type(), bytes.size());
    global = LLVM::GlobalOp::create(builder, loc, type, /*isConstant=*/true,
                                    LLVM::Linkage::Private, name,
                                    builder.getStringAttr(bytes));
  }
  return LLVM::AddressOfOp::create(builder, loc, global);
}

void RuntimeChecker::emitFailure(Value ok, StringRef hostFormat,
                                 StringRef deviceText, Value value,
                                 Value bound) {
  std::string where = describeLocation(loc);
  std::string prefix = op->getName().getStringRef().str();
  // kvcache-expand-accesses names a lookup after the load or store it
  // came from.
  if (auto nameLoc = dyn_cast<NameLoc>(loc))
    prefix = nameLoc.getName().str() + " (" + prefix + ")";
  if (!where.empty())
    prefix += " at " + where;
  if (onDevice) {
    // No formatted values on the device: say which check failed.
    cf::AssertOp::create(builder, loc, ok,
                         "kvcache run-time check failed: " + prefix + ": " +
                             deviceText.str());
    return;
  }
  auto module = op->getParentOfType<ModuleOp>();
  MLIRContext *ctx = builder.getContext();
  auto ptrType = LLVM::LLVMPointerType::get(ctx);
  auto i32 = builder.getI32Type();
  auto i64 = builder.getI64Type();
  LLVM::LLVMFuncOp dprintf = getOrDeclareFunction(
      builder, module, "dprintf",
      LLVM::LLVMFunctionType::get(i32, {i32, ptrType}, /*isVarArg=*/true));
  LLVM::LLVMFuncOp abort = getOrDeclareFunction(
      builder, module, "abort",
      LLVM::LLVMFunctionType::get(LLVM::LLVMVoidType::get(ctx), {}));
  Value failed = arith::XOrIOp::create(
      builder, loc, ok, arith::ConstantIntOp::create(builder, loc, 1, 1));
  auto ifOp = scf::IfOp::create(builder, loc, failed, /*withElse=*/false);
  OpBuilder::InsertionGuard guard(builder);
  builder.setInsertionPointToStart(&ifOp.getThenRegion().front());
  Value format = getStringAddress(
      builder, loc, module,
      "kvcache run-time check failed: " + prefix + ": " + hostFormat.str() +
          "\n");
  Value stderrFd = LLVM::ConstantOp::create(builder, loc, i32, 2);
  Value value64 = arith::IndexCastOp::create(builder, loc, i64, value);
  Value bound64 = arith::IndexCastOp::create(builder, loc, i64, bound);
  LLVM::CallOp::create(builder, loc, dprintf,
                       ValueRange{stderrFd, format, value64, bound64});
  LLVM::CallOp::create(builder, loc, abort, ValueRange{});
}
