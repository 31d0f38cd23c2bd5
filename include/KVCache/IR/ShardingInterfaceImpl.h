//===- ShardingInterfaceImpl.h - head sharding models -----------*- C++ -*-===//
//
// Part of the kvcache-mlir project.
//
//===----------------------------------------------------------------------===//

#ifndef KVCACHE_IR_SHARDINGINTERFACEIMPL_H
#define KVCACHE_IR_SHARDINGINTERFACEIMPL_H

namespace mlir {
class DialectRegistry;

namespace kvcache {

/// Attaches the shard dialect's ShardingInterface external models of the
/// tensor forms of the collection constructors, `collection_tensors`, the
/// layer accessors, the kernel ops and the metadata ops: the heads are their
/// only shardable dimension (docs/Contract.md, section 3.7).
/// registerAllDialects (KVCache/InitAll.h) calls it.
void registerShardingInterfaceExternalModels(DialectRegistry &registry);

} // namespace kvcache
} // namespace mlir

#endif // KVCACHE_IR_SHARDINGINTERFACEIMPL_H
