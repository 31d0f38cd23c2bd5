//===- TestKVDialect.td - test_kv dialect definition -------*- tablegen -*-===//
//
// Part of the kvcache-mlir project.
//
//===----------------------------------------------------------------------===//

#ifndef TESTKV_TESTKVDIALECT_TD
#define TESTKV_TESTKVDIALECT_TD

include "mlir/IR/OpBase.td"

def TestKV_Dialect : Dialect {
  let name = "test_kv";
  let cppNamespace = "::mlir::test_kv";
  let summary = "A test-only KV cache kind: a CSR page table";
  let description = [{
    Proves that a collection kind defined outside the kvcache dialect gets
    every kvcache op and lowering by implementing `KVCollectionTypeInterface`
    and `KVCacheTypeInterface`. Its page table is FlashInfer's CSR layout:
    sequence `b` owns the entries `[kv_indptr[b], kv_indptr[b+1])` of one
    flat page list `kv_indices`, so token `t` of sequence `b` lives at

    ```
    blocks[kv_indices[kv_indptr[b] + t floordiv page_size], kv, l, t mod page_size, h, d]
    ```

    Built and registered only in test builds of kvcache-opt.
  }];
  let useDefaultTypePrinterParser = 1;
  let extraClassDeclaration = [{
    void registerTypes();
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::kvcache::KVCacheDialect",
    "::mlir::memref::MemRefDialect",
  ];
}

class TestKV_Op<string mnemonic, list<Trait> traits = []>
    : Op<TestKV_Dialect, mnemonic, traits>;

#endif // TESTKV_TESTKVDIALECT_TD
