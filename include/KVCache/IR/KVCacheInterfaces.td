//===- KVCacheInterfaces.td - kvcache op interfaces --------*- tablegen -*-===//
//
// Part of the kvcache-mlir project.
//
//===----------------------------------------------------------------------===//

#ifndef KVCACHE_IR_KVCACHEINTERFACES_TD
#define KVCACHE_IR_KVCACHEINTERFACES_TD

include "mlir/IR/OpBase.td"

def KVCache_KernelOpInterface : OpInterface<"KernelOpInterface"> {
  let cppNamespace = "::mlir::kvcache";
  let description = [{
    An op lowered to whole kernels (loops on the CPU, GPU kernels):
    convert-kvcache-to-scf or convert-kvcache-to-gpu must lower it before
    convert-kvcache-to-memref.
  }];
  let methods = [
    InterfaceMethod<
      "The operands of the op's GPU kernel, in the order of its parameters "
      "(docs/KernelABI.md)",
      "::llvm::SmallVector<::mlir::Value>", "getKernelOperands", (ins), [{}],
      [{ return ::llvm::SmallVector<::mlir::Value>($_op->getOperands()); }]>
  ];
}

#endif // KVCACHE_IR_KVCACHEINTERFACES_TD
