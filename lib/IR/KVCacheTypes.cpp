//===- KVCacheTypes.cpp - kvcache dialect types -----------------*- C++ -*-===//
//
// Part of the kvcache-mlir project.
//
//===----------------------------------------------------------------------===//

#include "KVCache/IR/KVCacheTypes.h"
#include "KVCache/IR/KVCacheDialect.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/MathExtras.h"

#include <numeric>

using namespace mlir;
using namespace mlir::kvcache;

#include "KVCache/IR/KVCacheTypeInterfaces.cpp.inc"

#define GET_TYPEDEF_CLASSES
#include "KVCache/IR/KVCacheOpsTypes.cpp.inc"

void KVCacheDialect::registerTypes() {
  addTypes<
#define GET_TYPEDEF_LIST
#include "KVCache/IR/KVCacheOpsTypes.cpp.inc"
      >();
}

llvm::hash_code mlir::kvcache::hash_value(const KVScales &scales) {
  return llvm::hash_combine(static_cast<int>(scales.getKind()),
                            scales.getGroup());
}

llvm::raw_ostream &mlir::kvcache::operator<<(llvm::raw_ostream &os,
                                             const KVScales &scales) {
  switch (scales.getKind()) {
  case KVScales::Kind::None:
    break;
  case KVScales::Kind::Tensor:
    os << "tensor";
    break;
  case KVScales::Kind::TokenHead:
    os << "token_head";
    break;
  case KVScales::Kind::Block:
    os << "block<" << scales.getGroup() << ">";
    break;
  }
  return os;
}

Diagnostic &mlir::kvcache::operator<<(Diagnostic &diag,
                                      const KVScales &scales) {
  std::string text;
  llvm::raw_string_ostream(text) << scales;
  return diag << text;
}

bool mlir::kvcache::isStorageElementType(Type type) {
  return isa<Float8E4M3FNType, Float8E5M2Type>(type) ||
         type.isSignlessInteger(8);
}

/// Checks the parameters common to every cache type (no `pageSize` for the
/// kinds without static pages).
static LogicalResult
verifyCacheParams(function_ref<InFlightDiagnostic()> emitError, Type elementType,
                  int64_t numHeads, int64_t headSize,
                  std::optional<int64_t> optionalPageSize,
                  int64_t assertWriteMode, KVScales scales) {
  bool hasPages = optionalPageSize.has_value();
  int64_t pageSize = optionalPageSize.value_or(1);
  if (!elementType.isF32() && !elementType.isF16() && !elementType.isBF16() &&
      !isStorageElementType(elementType))
    return emitError() << "unsupported element type " << elementType
                       << "; expected f32, f16, bf16, or a storage type "
                          "(f8E4M3FN, f8E5M2, i8)";
  if (scales && !isStorageElementType(elementType))
    return emitError() << "'scales' needs a storage element type (f8E4M3FN, "
                          "f8E5M2 or i8), got "
                       << elementType << "; drop 'scales' for a float cache";
  if (scales.getKind() == KVScales::Kind::Block &&
      (scales.getGroup() <= 0 || headSize % scales.getGroup() != 0))
    return emitError() << "expected the G of 'scales = block<G>' to be > 0 "
                          "and to divide head_size ("
                       << headSize << "), got " << scales.getGroup();
  for (auto [name, value] : {std::pair<StringRef, int64_t>{"num_heads", numHeads},
                             {"head_size", headSize},
                             {"page_size", pageSize}})
    if (value <= 0)
      return emitError() << "expected " << name << " > 0, got " << value;
  // Strides and addresses are products of these sizes: keep one page of one
  // layer (page_size * num_heads * head_size elements; one token row for the
  // kinds without static pages) below 2^31, which also keeps every stride
  // computation far from overflowing int64_t.
  int64_t pageElements = 1;
  for (int64_t value : {numHeads, headSize, pageSize})
    if (llvm::MulOverflow(pageElements, value, pageElements) ||
        pageElements >= (int64_t(1) << 31)) {
      if (!hasPages)
        return emitError() << "expected num_heads * head_size < 2^31 "
                              "elements (one token row), got num_heads = "
                           << numHeads << ", head_size = " << headSize;
      return emitError() << "expected page_size * num_heads * head_size < 2^31 "
                            "elements (one page of one layer), got page_size = "
                         << pageSize << ", num_heads = " << numHeads
                         << ", head_size = " << headSize;
    }
  if (assertWriteMode != 0 && assertWriteMode != 1)
    return emitError() << "expected assert_write_mode to be 0 or 1, got "
                       << assertWriteMode;
  return success();
}

LogicalResult
PagedCollectionType::verify(function_ref<InFlightDiagnostic()> emitError,
                            Type elementType, int64_t numHeads,
                            int64_t headSize, int64_t pageSize, bool mla,
                            int64_t assertWriteMode, KVScales scales) {
  return verifyCacheParams(emitError, elementType, numHeads, headSize,
                           pageSize, assertWriteMode, scales);
}

LogicalResult
PagedCacheType::verify(function_ref<InFlightDiagnostic()> emitError,
                       Type elementType, int64_t numHeads, int64_t headSize,
                       int64_t pageSize, bool mla, int64_t assertWriteMode,
                       KVScales scales) {
  return verifyCacheParams(emitError, elementType, numHeads, headSize,
                           pageSize, assertWriteMode, scales);
}

LogicalResult ContinuousCollectionType::verify(
    function_ref<InFlightDiagnostic()> emitError, Type elementType,
    int64_t numHeads, int64_t headSize, bool mla, int64_t assertWriteMode,
    KVScales scales) {
  return verifyCacheParams(emitError, elementType, numHeads, headSize,
                           /*pageSize=*/std::nullopt, assertWriteMode, scales);
}

LogicalResult ContinuousCacheType::verify(
    function_ref<InFlightDiagnostic()> emitError, Type elementType,
    int64_t numHeads, int64_t headSize, bool mla, int64_t assertWriteMode,
    KVScales scales) {
  return verifyCacheParams(emitError, elementType, numHeads, headSize,
                           /*pageSize=*/std::nullopt, assertWriteMode, scales);
}

KVRuntimeChecks::~KVRuntimeChecks() = default;

KVCacheParams KVCacheParams::get(Type cacheType) {
  auto read = [](auto type) {
    return KVCacheParams{type.getElementType(), type.getNumHeads(),
                         type.getHeadSize(),    type.getPageSize(),
                         type.getMla(),         type.getAssertWriteMode(),
                         type.getScales()};
  };
  if (auto collection = dyn_cast<KVCollectionTypeInterface>(cacheType))
    return read(collection);
  return read(cast<KVCacheTypeInterface>(cacheType));
}

bool KVCacheParams::isCacheType(Type type) {
  return isa<KVCollectionTypeInterface, KVCacheTypeInterface>(type);
}

//===----------------------------------------------------------------------===//
// Kind names and layer types
//===----------------------------------------------------------------------===//

StringRef PagedCollectionType::getKindName() const { return "paged"; }
StringRef PagedCacheType::getKindName() const { return "paged"; }
StringRef ContinuousCollectionType::getKindName() const { return "continuous"; }
StringRef ContinuousCacheType::getKindName() const { return "continuous"; }

Type PagedCollectionType::getLayerCacheType() const {
  return PagedCacheType::get(getContext(), getElementType(), getNumHeads(),
                             getHeadSize(), getPageSize(), getMla(),
                             getAssertWriteMode(), getScales());
}

Type ContinuousCollectionType::getLayerCacheType() const {
  return ContinuousCacheType::get(getContext(), getElementType(),
                                  getNumHeads(), getHeadSize(), getMla(),
                                  getAssertWriteMode(), getScales());
}

uint64_t mlir::kvcache::getAccessAlignment(uint64_t accessBytes,
                                           uint64_t rowBytes) {
  assert(accessBytes > 0 && "an access moves at least one byte");
  // The access's offset is a multiple of both; the buffer's alignment (16)
  // bounds what any offset can add.
  uint64_t offsetMultiple = std::gcd(accessBytes, rowBytes);
  return std::min<uint64_t>(uint64_t(1) << llvm::countr_zero(offsetMultiple),
                            16);
}
