//===- StructuralConversion.h - 1:N type conversion of gpu ops --*- C++ -*-===//
//
// Part of the kvcache-mlir project.
//
//===----------------------------------------------------------------------===//

#ifndef KVCACHE_LIB_CONVERSION_KVCACHETOMEMREF_STRUCTURALCONVERSION_H
#define KVCACHE_LIB_CONVERSION_KVCACHETOMEMREF_STRUCTURALCONVERSION_H

namespace mlir {
class ConversionTarget;
class RewritePatternSet;
class TypeConverter;

namespace kvcache {

/// Patterns applying a (1:N) type conversion to `gpu.func` signatures,
/// `gpu.launch_func` kernel operands and `gpu.return` operands: MLIR 22 has
/// no upstream structural conversion for the GPU dialect.
void populateGPUStructuralTypeConversions(const TypeConverter &typeConverter,
                                          RewritePatternSet &patterns);

/// Marks `gpu.func` legal once its signature is converted.
void configureGPUStructuralLegality(ConversionTarget &target,
                                    const TypeConverter &typeConverter);

} // namespace kvcache
} // namespace mlir

#endif // KVCACHE_LIB_CONVERSION_KVCACHETOMEMREF_STRUCTURALCONVERSION_H
