//===- BufferizableOpInterfaceImpl.h - kernel op models ---------*- C++ -*-===//
//
// Part of the kvcache-mlir project.
//
//===----------------------------------------------------------------------===//

#ifndef KVCACHE_IR_BUFFERIZABLEOPINTERFACEIMPL_H
#define KVCACHE_IR_BUFFERIZABLEOPINTERFACEIMPL_H

namespace mlir {
class DialectRegistry;

namespace kvcache {

/// Attaches the BufferizableOpInterface external models of the kernel ops,
/// with which one-shot-bufferize turns their tensor form into the memref form
/// (docs/Contract.md section 3.5). registerAllDialects (KVCache/InitAll.h)
/// calls it.
void registerBufferizableOpInterfaceExternalModels(DialectRegistry &registry);

} // namespace kvcache
} // namespace mlir

#endif // KVCACHE_IR_BUFFERIZABLEOPINTERFACEIMPL_H
