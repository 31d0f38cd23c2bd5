//===- ArgumentABI.cpp - arguments as their types lower them ----*- C++ -*-===//
//
// Part of the kvcache-mlir project.
//
// Asks the type interfaces of a kvcache argument for its lowered values and
// describes each from its MLIR type, so that Python packs any kind that
// implements the interfaces (the test dialect's included) without knowing
// its layout.
//
//===----------------------------------------------------------------------===//

#include "ArgumentABI.h"

#include "KVCache/IR/KVCacheTypes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinTypes.h"

#include <pybind11/stl.h>

#include <stdexcept>
#include <string>

namespace py = pybind11;

namespace mlir::kvcache::python {
namespace {

/// `printable` as MLIR prints it (a type, an attribute, KVScales).
template <typename Printable>
std::string printed(const Printable &printable) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << printable;
  return text;
}

py::object staticOrNone(int64_t value) {
  if (ShapedType::isDynamic(value))
    return py::none();
  return py::int_(value);
}

py::list staticsOrNone(ArrayRef<int64_t> values) {
  py::list list;
  for (int64_t value : values)
    list.append(staticOrNone(value));
  return list;
}

/// Fills the keys every value has: its element or scalar type, its width
/// and its class.
void describeElement(Type element, py::dict &value) {
  value["element"] = printed(element);
  if (isa<IndexType>(element))
    value["bits"] = 64; // the host's and the kernels' index (KernelABI.md)
  else if (element.isIntOrFloat())
    value["bits"] = element.getIntOrFloatBitWidth();
  else
    value["bits"] = py::none();
  value["integer"] = isa<IntegerType, IndexType>(element);
  value["float"] = isa<FloatType>(element);
}

/// The layout of `type` in words: "identity", "strided" or the attribute.
std::string layoutName(MemRefType type) {
  MemRefLayoutAttrInterface layout = type.getLayout();
  if (layout.isIdentity())
    return "identity";
  if (isa<StridedLayoutAttr>(layout))
    return "strided";
  return printed(Attribute(layout));
}

void describeMemRef(MemRefType type, py::dict &value) {
  value["kind"] = "memref";
  describeElement(type.getElementType(), value);
  value["rank"] = type.getRank();
  value["shape"] = staticsOrNone(type.getShape());
  SmallVector<int64_t> strides;
  int64_t offset = 0;
  if (succeeded(type.getStridesAndOffset(strides, offset))) {
    value["strides"] = staticsOrNone(strides);
    value["offset"] = staticOrNone(offset);
  } else {
    value["strides"] = py::none();
    value["offset"] = py::none();
  }
  value["identity"] = type.getLayout().isIdentity();
  value["layout"] = layoutName(type);
  Attribute space = type.getMemorySpace();
  value["memory_space"] = space ? py::object(py::str(printed(space)))
                                : py::object(py::none());
}

/// One value of type `type` named `name`, or None when it is neither a
/// memref nor an integer, index or float scalar.
py::object describeValue(Type type, const std::string &name) {
  py::dict value;
  value["name"] = name;
  value["type"] = printed(type);
  if (auto memref = dyn_cast<MemRefType>(type)) {
    describeMemRef(memref, value);
    return value;
  }
  if (!isa<IntegerType, IndexType, FloatType>(type))
    return py::none();
  value["kind"] = "scalar";
  describeElement(type, value);
  return value;
}

/// What a collection or layer cache type's interface answers, and its
/// lowered values named by getLoweredNames (numbered when it names none).
template <typename CacheInterface>
void describeCache(CacheInterface cache, const char *role,
                   py::dict &argument) {
  py::dict params;
  params["kind"] = cache.getKindName().str();
  params["role"] = role;
  params["element_type"] = printed(cache.getElementType());
  params["num_heads"] = cache.getNumHeads();
  params["head_size"] = cache.getHeadSize();
  params["page_size"] = staticOrNone(cache.getPageSize());
  params["mla"] = cache.getMla();
  params["assert_write_mode"] = cache.getAssertWriteMode();
  KVScales scales = cache.getScales();
  params["scales"] = scales ? py::object(py::str(printed(scales)))
                            : py::object(py::none());
  argument["cache"] = params;

  SmallVector<Type> types;
  cache.getLoweredTypes(types);
  SmallVector<StringRef> names = cache.getLoweredNames();
  if (!names.empty() && names.size() != types.size())
    throw std::runtime_error(
        printed(Type(cache)) + ": getLoweredNames names " +
        std::to_string(names.size()) + " values, getLoweredTypes has " +
        std::to_string(types.size()));
  py::list values;
  for (auto [index, type] : llvm::enumerate(types)) {
    std::string name = names.empty() ? "value" + std::to_string(index)
                                     : names[index].str();
    py::object value = describeValue(type, name);
    if (value.is_none()) { // a lowered type Python has no value for
      argument["values"] = py::none();
      return;
    }
    values.append(value);
  }
  argument["values"] = values;
}

} // namespace

py::dict describeArgument(Type type) {
  py::dict argument;
  argument["type"] = printed(type);
  if (auto collection = dyn_cast<KVCollectionTypeInterface>(type)) {
    describeCache(collection, "collection", argument);
    return argument;
  }
  if (auto cache = dyn_cast<KVCacheTypeInterface>(type)) {
    describeCache(cache, "cache", argument);
    return argument;
  }
  argument["cache"] = py::none();
  py::object value = describeValue(type, "");
  if (value.is_none()) {
    argument["values"] = py::none();
    return argument;
  }
  py::list values;
  values.append(value);
  argument["values"] = values;
  return argument;
}

py::list describeFunctions(ModuleOp module) {
  py::list functions;
  for (auto func : module.getBody()->getOps<func::FuncOp>()) {
    py::list arguments;
    for (Type type : func.getArgumentTypes())
      arguments.append(describeArgument(type));
    functions.append(py::make_tuple(func.getName().str(), arguments));
  }
  return functions;
}

} // namespace mlir::kvcache::python
