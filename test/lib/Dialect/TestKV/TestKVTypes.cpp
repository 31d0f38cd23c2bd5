//===- TestKVTypes.cpp - test_kv types --------------------------*- C++ -*-===//
//
// Part of the kvcache-mlir project.
//
// Parameters, verification, kind name and layer type of the CSR kind.
//
//===----------------------------------------------------------------------===//

#include "TestKVDialect.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/MathExtras.h"

using namespace mlir;
using namespace mlir::test_kv;

#define GET_TYPEDEF_CLASSES
#include "TestKVOpsTypes.cpp.inc"

void TestKVDialect::registerTypes() {
  addTypes<
#define GET_TYPEDEF_LIST
#include "TestKVOpsTypes.cpp.inc"
      >();
}

/// The rules of the paged kind (docs/Contract.md, section 4.1), for element
/// types the lowerings accept.
static LogicalResult
verifyCSRParams(function_ref<InFlightDiagnostic()> emitError, Type elementType,
                int64_t numHeads, int64_t headSize, int64_t pageSize,
                int64_t assertWriteMode) {
  if (!elementType.isF32() && !elementType.isF16() && !elementType.isBF16())
    return emitError() << "unsupported element type " << elementType
                       << "; expected f32, f16 or bf16";
  int64_t pageElements = 1;
  for (auto [name, value] :
       {std::pair<StringRef, int64_t>{"num_heads", numHeads},
        {"head_size", headSize},
        {"page_size", pageSize}}) {
    if (value <= 0)
      return emitError() << "expected " << name << " > 0, got " << value;
    if (llvm::MulOverflow(pageElements, value, pageElements) ||
        pageElements >= (int64_t(1) << 31))
      return emitError() << "expected page_size * num_heads * head_size < "
                            "2^31 elements (one page of one layer)";
  }
  if (assertWriteMode != 0 && assertWriteMode != 1)
    return emitError() << "expected assert_write_mode to be 0 or 1, got "
                       << assertWriteMode;
  return success();
}

LogicalResult
CSRCollectionType::verify(function_ref<InFlightDiagnostic()> emitError,
                          Type elementType, int64_t numHeads, int64_t headSize,
                          int64_t pageSize, bool, int64_t assertWriteMode) {
  return verifyCSRParams(emitError, elementType, numHeads, headSize, pageSize,
                         assertWriteMode);
}

LogicalResult CSRCacheType::verify(function_ref<InFlightDiagnostic()> emitError,
                                   Type elementType, int64_t numHeads,
                                   int64_t headSize, int64_t pageSize, bool,
                                   int64_t assertWriteMode) {
  return verifyCSRParams(emitError, elementType, numHeads, headSize, pageSize,
                         assertWriteMode);
}

StringRef CSRCollectionType::getKindName() const { return "csr"; }
StringRef CSRCacheType::getKindName() const { return "csr"; }

Type CSRCollectionType::getLayerCacheType() const {
  return CSRCacheType::get(getContext(), getElementType(), getNumHeads(),
                           getHeadSize(), getPageSize(), getMla(),
                           getAssertWriteMode());
}
