//===- ArgumentABI.h - arguments as the kernel ABI lowers them --*- C++ -*-===//
//
// Part of the kvcache-mlir project.
//
// The description of function arguments that kvcache.abi and kvcache.cpu
// pack numpy arrays by: for a kvcache type (any type implementing
// KVCollectionTypeInterface or KVCacheTypeInterface), the values its
// interface lowers it to (getLoweredTypes, getLoweredNames); memrefs from
// their MemRefType, never from printed text.
//
//===----------------------------------------------------------------------===//

#ifndef KVCACHE_PYTHON_ARGUMENTABI_H
#define KVCACHE_PYTHON_ARGUMENTABI_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Types.h"

#include <pybind11/pybind11.h>

namespace mlir::kvcache::python {

/// A dict describing one argument of type `type`:
///
///   "type":   the type as MLIR prints it;
///   "cache":  None, or for a kvcache type a dict of its interface's
///             answers: "kind" (getKindName), "role" ("collection" or
///             "cache"), "element_type", "num_heads", "head_size",
///             "page_size" (None when dynamic), "mla", "assert_write_mode",
///             "scales" (None, "tensor", "token_head", "block<G>");
///   "values": the values it lowers to, each a dict (below): the lowered
///             values of a kvcache type, the argument itself for a memref
///             or a scalar; None for a type Python cannot pass.
///
/// A value: "name" (the interface's name, "value<i>" for a kind that names
/// none, "" for an argument that is its own value), "type", "kind"
/// ("memref" or "scalar"), "element" (the element or scalar type, printed),
/// "bits" (its width; index is 64, None for a type without one),
/// "integer" and "float" (its class); for a memref also "rank", "shape"
/// and "strides" (None for a dynamic size or stride; strides None when
/// the layout has none), "offset" (None when dynamic), "identity" (the
/// identity layout), "layout" ("identity", "strided" or the attribute
/// printed) and "memory_space" (None for the default).
pybind11::dict describeArgument(Type type);

/// (name, [argument dicts]) of each top-level func.func of `module` (the
/// public ones are what a host calls; private ones are listed too, as
/// kvcache.CPUModule calls those the lowering keeps).
pybind11::list describeFunctions(ModuleOp module);

} // namespace mlir::kvcache::python

#endif // KVCACHE_PYTHON_ARGUMENTABI_H
