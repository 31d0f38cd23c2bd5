//===- GenerateArgumentChecks.cpp - kvcache-generate-argument-checks ------===//
//
// Part of the kvcache-mlir project.
//
// The check routine `kvcache_check_<F>` of every public function with kernel
// ops, and checked mode: F calls it at entry and checks every other op with
// argument checks just before the op, stopping the call before any write of
// a bad op. What is checked is the ops' (ArgumentChecksOpInterface); how a
// failure is reported is ArgumentCheckRuntime's.
//
//===----------------------------------------------------------------------===//

#include "ArgumentCheckRuntime.h"
#include "KVCache/IR/KVCacheOps.h"
#include "KVCache/Transforms/Passes.h"

#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/SetVector.h"

namespace mlir::kvcache {
#define GEN_PASS_DEF_KVCACHEGENERATEARGUMENTCHECKS
#include "KVCache/Transforms/Passes.h.inc"
} // namespace mlir::kvcache

using namespace mlir;
using namespace mlir::kvcache;

/// Whether `op` runs on a GPU (inside a gpu.launch or a gpu.module): the
/// argument checks are host code.
static bool isDeviceCode(Operation *op) {
  return op->getParentOfType<gpu::LaunchOp>() ||
         op->getParentOfType<gpu::GPUModuleOp>();
}

/// Whether `op` may write memory (unknown effects count).
static bool mayWriteMemory(Operation *op) {
  std::optional<SmallVector<MemoryEffects::EffectInstance>> effects =
      getEffectsRecursively(op);
  return !effects ||
         llvm::any_of(*effects, [](const MemoryEffects::EffectInstance &e) {
           return isa<MemoryEffects::Write>(e.getEffect());
         });
}

/// Adds to `slice` the ops `value` comes from, operands first, when it
/// comes from the arguments of `entry` through side-effect-free ops of
/// `entry` without regions; false otherwise.
static bool collectArgumentSlice(Value value, Block &entry,
                                 llvm::SetVector<Operation *> &slice) {
  if (auto argument = dyn_cast<BlockArgument>(value))
    return argument.getOwner() == &entry;
  Operation *def = value.getDefiningOp();
  if (slice.contains(def))
    return true;
  if (def->getBlock() != &entry || def->getNumRegions() != 0 ||
      !isMemoryEffectFree(def))
    return false;
  for (Value operand : def->getOperands())
    if (!collectArgumentSlice(operand, entry, slice))
      return false;
  slice.insert(def);
  return true;
}

namespace {

/// What the check routine of a function checks: the kernel ops of its entry
/// block that no other write precedes and whose operands come from its
/// arguments (`kernelOps`), and the ops their operands come from (`slice`,
/// in order).
struct Coverage {
  SmallVector<Operation *> kernelOps;
  llvm::SetVector<Operation *> slice;

  bool covers(Operation *op) const {
    return slice.contains(op) || llvm::is_contained(kernelOps, op);
  }
};

} // namespace

static Coverage getCoverage(func::FuncOp function) {
  Coverage coverage;
  Block &entry = function.getBody().front();
  for (Operation &op : entry) {
    if (isa<KernelOpInterface>(op)) {
      // Kernel ops write only cache pages and their outputs, never what
      // the checks of a later op read.
      llvm::SetVector<Operation *> slice;
      if (llvm::all_of(op.getOperands(), [&](Value operand) {
            return collectArgumentSlice(operand, entry, slice);
          })) {
        coverage.kernelOps.push_back(&op);
        coverage.slice.insert_range(slice);
      }
      continue;
    }
    if (mayWriteMemory(&op))
      break;
  }
  return coverage;
}

/// Whether `function` contains a kernel op outside GPU code.
static bool hasKernelOps(func::FuncOp function) {
  return function
      .walk([](KernelOpInterface op) {
        return isDeviceCode(op) ? WalkResult::advance()
                                : WalkResult::interrupt();
      })
      .wasInterrupted();
}

//===----------------------------------------------------------------------===//
// The check routine
//===----------------------------------------------------------------------===//

/// Emits `op`'s checks through `reporter`, then a guard for what follows.
static void emitChecks(OpBuilder &builder, Operation *op,
                       const IRMapping &operands, MessageReporter &reporter) {
  auto checks = dyn_cast<ArgumentChecksOpInterface>(op);
  if (!checks)
    return;
  reporter.setOp(op);
  checks.emitArgumentChecks(builder, operands, reporter);
  reporter.guard(builder, op->getLoc());
}

/// `kvcache_check_<F>(F's arguments, %message: memref<?xi8>) -> i32`: the
/// checks of the ops `coverage` lists, each op of the slice checked before
/// it is cloned (its clone may read what its checks bound).
static FailureOr<func::FuncOp> buildCheckRoutine(func::FuncOp function,
                                                 const Coverage &coverage) {
  auto module = function->getParentOfType<ModuleOp>();
  std::string name = ("kvcache_check_" + function.getName()).str();
  if (llvm::is_contained(getCheckedModeSymbols(), name))
    return function.emitError("kvcache-generate-argument-checks: the check "
                              "routine of @")
           << function.getName() << " would be @" << name
           << ", a name checked mode reserves: rename the function";
  Type messageType = MemRefType::get({ShapedType::kDynamic},
                                     OpBuilder(function).getI8Type());
  SmallVector<Type> inputs(function.getArgumentTypes());
  inputs.push_back(messageType);
  auto type = FunctionType::get(function.getContext(), inputs,
                                {OpBuilder(function).getI32Type()});
  func::FuncOp routine;
  if (Operation *existing = module.lookupSymbol(name)) {
    // A declaration of the routine (code of the module that calls it)
    // becomes the definition; anything else is a clash.
    routine = dyn_cast<func::FuncOp>(existing);
    if (!routine || !routine.isExternal() || routine.getFunctionType() != type)
      return function.emitError("kvcache-generate-argument-checks: cannot "
                                "add the check routine @")
             << name << " of @" << function.getName()
             << ": the module has a symbol of that name (only a declaration "
                "of type "
             << type << " may precede it)";
    routine.setPublic();
  }
  OpBuilder builder(function);
  builder.setInsertionPointAfter(function);
  Location loc = function.getLoc();
  if (!routine)
    routine = func::FuncOp::create(builder, loc, name, type);
  if (Attribute cInterface = function->getAttr("llvm.emit_c_interface"))
    routine->setAttr("llvm.emit_c_interface", cInterface);
  Block *body = routine.addEntryBlock();
  IRMapping mapping;
  mapping.map(function.getArguments(), body->getArguments().drop_back());
  builder.setInsertionPointToStart(body);
  Value flag = memref::AllocaOp::create(
      builder, loc, MemRefType::get({}, builder.getI1Type()));
  memref::StoreOp::create(builder, loc,
                          arith::ConstantIntOp::create(builder, loc, 0, 1),
                          flag);
  Value failed = memref::LoadOp::create(builder, loc, flag);
  Value result =
      arith::ExtUIOp::create(builder, loc, builder.getI32Type(), failed);
  func::ReturnOp::create(builder, loc, result);
  builder.setInsertionPoint(failed.getDefiningOp());

  MessageReporter reporter(module, function.getName(), body->getArguments().back(),
                           flag);
  for (Operation &op : function.getBody().front()) {
    if (!coverage.covers(&op))
      continue;
    emitChecks(builder, &op, mapping, reporter);
    if (coverage.slice.contains(&op))
      builder.clone(op, mapping);
  }
  return routine;
}

//===----------------------------------------------------------------------===//
// Checked mode
//===----------------------------------------------------------------------===//

namespace {

/// Instruments one function for checked mode: a message buffer and a flag
/// at entry, the checks in place, and the exits of a call that failed in
/// capture mode.
class CheckedFunction {
public:
  explicit CheckedFunction(func::FuncOp function)
      : function(function), builder(function),
        module(function->getParentOfType<ModuleOp>()),
        mayReturn(llvm::none_of(function.getResultTypes(), [](Type type) {
          return KVCacheParams::isCacheType(type);
        })) {}

  /// Adds the entry call of `routine` (if any) and the checks of `ops`;
  /// nothing when neither checks anything.
  LogicalResult instrument(func::FuncOp routine, ArrayRef<Operation *> ops);

private:
  /// At the builder's insertion point (after the buffer and the flag): the
  /// call of `routine`, then the exit when a failure is recorded.
  void emitEntry(func::FuncOp routine);
  /// Checks `op` in place; returns the scf.if holding its checks (the call
  /// leaves right after it when one failed), null when it has none.
  Operation *checkInPlace(Operation *op);
  /// Splits `op`'s block before `op` (after it: `after`) and leaves the
  /// call there when a failure is recorded.
  void exitIfRecorded(Operation *op, bool after);
  Block *getExitBlock();

  func::FuncOp function;
  OpBuilder builder;
  ModuleOp module;
  Value message, flag;
  Block *exitBlock = nullptr;
  /// Whether the function can leave early after a failure in capture mode:
  /// one returning a cache value cannot (no value to return), its failures
  /// print and abort in capture mode too.
  bool mayReturn;
};

} // namespace

LogicalResult CheckedFunction::instrument(func::FuncOp routine,
                                          ArrayRef<Operation *> ops) {
  Region &body = function.getBody();
  // A callee in capture mode may have failed too: the calls of the input.
  llvm::SetVector<Operation *> exits;
  for (auto call : body.getOps<func::CallOp>())
    if (module.lookupSymbol<func::FuncOp>(call.getCallee()))
      exits.insert(call);
  Location loc = function.getLoc();
  builder.setInsertionPointToStart(&body.front());
  Value buffer = memref::AllocaOp::create(
      builder, loc, MemRefType::get({kMessageBytes}, builder.getI8Type()));
  message = memref::CastOp::create(
      builder, loc,
      MemRefType::get({ShapedType::kDynamic}, builder.getI8Type()), buffer);
  flag = memref::AllocaOp::create(builder, loc,
                                  MemRefType::get({}, builder.getI1Type()));
  SmallVector<std::pair<Operation *, Operation *>> checked;
  for (Operation *op : ops)
    if (Operation *checks = checkInPlace(op))
      checked.push_back({op, checks});
  if (!routine && checked.empty()) {
    // Nothing to check after all (constructors without scales).
    flag.getDefiningOp()->erase();
    message.getDefiningOp()->erase();
    buffer.getDefiningOp()->erase();
    return success();
  }
  defineCheckedModeRuntime(builder, module);
  Operation *entryPoint = flag.getDefiningOp();
  if (checked.empty()) {
    entryPoint = message.getDefiningOp();
    flag.getDefiningOp()->erase();
  } else {
    builder.setInsertionPointAfter(entryPoint);
    memref::StoreOp::create(builder, loc,
                            arith::ConstantIntOp::create(builder, loc, 0, 1),
                            flag);
  }
  if (!mayReturn)
    exits.clear();
  for (auto [op, checks] : checked) {
    if (!mayReturn)
      continue;
    if (op->getParentRegion() == &body) {
      exitIfRecorded(checks, /*after=*/true);
      continue;
    }
    // Inside a loop or conditional the call cannot leave at once: a kernel
    // op (no results) is skipped, the call leaves after the enclosing op.
    if (op->getNumResults() == 0) {
      builder.setInsertionPoint(op);
      Value skip = emitFailureRecorded(builder, op->getLoc());
      auto ifOp = scf::IfOp::create(builder, op->getLoc(), skip,
                                    /*withElseRegion=*/true);
      op->moveBefore(ifOp.elseBlock()->getTerminator());
    }
    exits.insert(body.findAncestorOpInRegion(*op));
  }
  for (Operation *op : exits)
    exitIfRecorded(op, /*after=*/true);
  builder.setInsertionPointAfter(entryPoint);
  emitEntry(routine);
  return success();
}

void CheckedFunction::emitEntry(func::FuncOp routine) {
  Location loc = function.getLoc();
  if (routine) {
    SmallVector<Value> arguments(function.getArguments());
    arguments.push_back(message);
    Value status =
        func::CallOp::create(builder, loc, routine, arguments).getResult(0);
    Value failed = arith::CmpIOp::create(
        builder, loc, arith::CmpIPredicate::ne, status,
        arith::ConstantIntOp::create(builder, loc, builder.getI32Type(), 0));
    auto ifOp = scf::IfOp::create(builder, loc, failed, /*withElse=*/false);
    OpBuilder::InsertionGuard guard(builder);
    builder.setInsertionPoint(ifOp.thenBlock()->getTerminator());
    emitFailureCall(builder, loc, message, mayReturn);
  }
  // A call while a failure is recorded (capture mode) does nothing.
  if (mayReturn)
    exitIfRecorded(&*builder.getInsertionPoint(), /*after=*/false);
}

namespace {

/// Where the in-place checks of an op go, and the side-effect-free ops
/// between there and the op that its operands come from (cloned for the
/// checks, in order).
struct CheckPoint {
  Operation *point;
  SmallVector<Operation *> slice;
};

} // namespace

/// The in-place checks of `op` go as early as its operands allow in its
/// block of the function's body: above the kernel ops and side-effect-free
/// ops before it (kernel ops write only cache pages and their outputs,
/// never what the checks read; the side-effect-free ops its operands come
/// from are cloned), so that a failing check stops the call before those
/// write; never above `floor` (what the checks use: the message buffer and
/// the flag). Inside a loop or a conditional, right before `op`.
static CheckPoint getCheckPoint(Operation *op, Region &body,
                                Operation *floor) {
  CheckPoint found{op, {}};
  if (op->getParentRegion() != &body)
    return found;
  llvm::SmallPtrSet<Value, 8> needed(op->operand_begin(), op->operand_end());
  for (Operation *previous = op->getPrevNode(); previous;
       previous = previous->getPrevNode()) {
    if (previous == floor)
      break;
    if (llvm::any_of(previous->getResults(),
                     [&](Value result) { return needed.contains(result); })) {
      if (previous->getNumRegions() != 0 || !isMemoryEffectFree(previous))
        break;
      found.slice.push_back(previous);
      needed.insert(previous->operand_begin(), previous->operand_end());
    } else if (!isa<KernelOpInterface>(previous) &&
               mayWriteMemory(previous)) {
      break;
    }
    found.point = previous;
  }
  std::reverse(found.slice.begin(), found.slice.end());
  return found;
}

Operation *CheckedFunction::checkInPlace(Operation *op) {
  Location loc = op->getLoc();
  CheckPoint where = getCheckPoint(op, function.getBody(), flag.getDefiningOp());
  Operation *point = where.point;
  builder.setInsertionPoint(point);
  // The flag is cleared once, at entry, never here: another thread may
  // have set it (a check inside a parallel loop), and a set flag only makes
  // this op report that failure too.
  Operation *first = arith::ConstantIntOp::create(builder, loc, 0, 1);
  // A function that cannot leave early checks even after a failure.
  Value recorded = mayReturn ? emitFailureRecorded(builder, loc)
                             : first->getResult(0);
  auto ifOp = scf::IfOp::create(builder, loc, recorded, /*withElse=*/true);
  builder.setInsertionPoint(ifOp.elseBlock()->getTerminator());
  Value failed = memref::LoadOp::create(builder, loc, flag);
  auto report = scf::IfOp::create(builder, loc, failed, /*withElse=*/false);
  {
    OpBuilder::InsertionGuard guard(builder);
    builder.setInsertionPoint(report.thenBlock()->getTerminator());
    emitFailureCall(builder, loc, message, mayReturn);
  }
  builder.setInsertionPoint(failed.getDefiningOp());
  IRMapping operands;
  for (Operation *definition : where.slice)
    builder.clone(*definition, operands);
  MessageReporter reporter(module, function.getName(), message, flag);
  reporter.setOp(op);
  cast<ArgumentChecksOpInterface>(op).emitArgumentChecks(builder, operands,
                                                         reporter);
  if (reporter.getNumChecks() != 0)
    return ifOp;
  // Nothing to check: no trace of it (what was inserted before `point`,
  // from `first` to the scf.if, erased users first).
  SmallVector<Operation *> inserted;
  for (Operation *it = first; it != point; it = it->getNextNode())
    inserted.push_back(it);
  for (Operation *it : llvm::reverse(inserted))
    it->erase();
  return nullptr;
}

Block *CheckedFunction::getExitBlock() {
  if (exitBlock)
    return exitBlock;
  Region &body = function.getBody();
  exitBlock = builder.createBlock(&body, body.end());
  Location loc = function.getLoc();
  SmallVector<Value> results;
  for (Type type : function.getResultTypes())
    results.push_back(ub::PoisonOp::create(builder, loc, type));
  func::ReturnOp::create(builder, loc, results);
  return exitBlock;
}

void CheckedFunction::exitIfRecorded(Operation *op, bool after) {
  Block *block = op->getBlock();
  Block::iterator split = after ? std::next(op->getIterator())
                                : op->getIterator();
  Block *rest = block->splitBlock(split);
  Block *exit = getExitBlock();
  builder.setInsertionPointToEnd(block);
  Location loc = op->getLoc();
  Value recorded = emitFailureRecorded(builder, loc);
  cf::CondBranchOp::create(builder, loc, recorded, exit, ValueRange{}, rest,
                           ValueRange{});
}

//===----------------------------------------------------------------------===//
// The pass
//===----------------------------------------------------------------------===//

namespace {

struct GenerateArgumentChecksPass
    : kvcache::impl::KVCacheGenerateArgumentChecksBase<
          GenerateArgumentChecksPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (failed(verifyKernelOpsInMemRefForm(module, getArgument())))
      return signalPassFailure();
    if (checked)
      for (StringRef name : getCheckedModeSymbols())
        if (Operation *symbol = module.lookupSymbol(name)) {
          symbol->emitError("kvcache-generate-argument-checks: checked mode "
                            "defines @")
              << name << ", which the module has already: rename it";
          return signalPassFailure();
        }
    // The input's functions with a body: a routine the pass builds (also
    // into a declaration of the input) is not one of them.
    SmallVector<func::FuncOp> functions;
    for (func::FuncOp function : module.getOps<func::FuncOp>())
      if (!function.isExternal())
        functions.push_back(function);
    for (func::FuncOp function : functions)
      if (failed(processFunction(function)))
        return signalPassFailure();
  }

  LogicalResult processFunction(func::FuncOp function) {
    Coverage coverage;
    func::FuncOp routine;
    if (function.isPublic() && hasKernelOps(function)) {
      coverage = getCoverage(function);
      FailureOr<func::FuncOp> built = buildCheckRoutine(function, coverage);
      if (failed(built))
        return failure();
      routine = *built;
    }
    if (!checked)
      return success();
    SmallVector<Operation *> inPlace;
    function.walk([&](ArgumentChecksOpInterface op) {
      if (!coverage.covers(op) && !isDeviceCode(op))
        inPlace.push_back(op);
    });
    return CheckedFunction(function).instrument(routine, inPlace);
  }
};

} // namespace
