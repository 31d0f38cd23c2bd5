// RUN: kvcache-opt %s -kvcache-to-ptx -o %t.host.mlir
// RUN: kvcache-compile %t.host.mlir -o %t.ptx
// RUN: FileCheck %s --input-file=%t.ptx

// The kernel ops on the CSR kind of the test_kv dialect compiled to PTX.
// kvcache-compile does not register test dialects: kvcache-opt runs
// kvcache-to-ptx (after which no test_kv type or op is left), and
// kvcache-compile collects the PTX of the resulting gpu.binary.
// csr-kernels-ptxas.test assembles it.
//
// A CSR cache is 6 values (docs/Contract.md, section 7: what its
// getLoweredTypes states): the blocks view (11 parameters), kv_indptr,
// kv_indices, cache_lengths (5 each), max_seq_length and max_cache_length
// (.u32): 28 kernel parameters (pointers at 0, 11, 16, 21), 32 for a
// collection (blocks: 15 parameters; pointers at 0, 15, 20, 25).

// CHECK: .target sm_90

// CHECK-LABEL: .visible .entry store_store_ragged(
// CHECK: .param .u64 store_store_ragged_param_10,
// CHECK-NEXT: .param .u64 .ptr .align 1 store_store_ragged_param_11,
// CHECK: .param .u64 .ptr .align 1 store_store_ragged_param_16,
// CHECK: .param .u64 .ptr .align 1 store_store_ragged_param_21,
// CHECK: .param .u32 store_store_ragged_param_26,
// CHECK-NEXT: .param .u32 store_store_ragged_param_27,
// CHECK-NEXT: .param .u64 .ptr .align 1 store_store_ragged_param_28,
func.func @store(%c: !test_kv.csr_collection<f16, num_heads = 2, head_size = 64, page_size = 16>,
                 %new: memref<?x2x64xf16>, %offsets: memref<?xi32>) {
  %c1 = arith.constant 1 : index
  %v = kvcache.get_value_cache %c[%c1] : !test_kv.csr_collection<f16, num_heads = 2, head_size = 64, page_size = 16>
  kvcache.store_ragged %v, %new, %offsets
      : !test_kv.csr_cache<f16, num_heads = 2, head_size = 64, page_size = 16>, memref<?x2x64xf16>, memref<?xi32>
  return
}

// An assert_write_mode = 1 cache checks its writes with device asserts.
// CHECK-LABEL: .visible .entry store_checked_store_ragged(
// CHECK: call.uni{{.*}} __assertfail
func.func @store_checked(%c: !test_kv.csr_collection<bf16, num_heads = 1, head_size = 128, page_size = 5, assert_write_mode = 1>,
                          %new: memref<?x1x128xbf16>, %offsets: memref<?xi32>) {
  %c0 = arith.constant 0 : index
  %k = kvcache.get_key_cache %c[%c0] : !test_kv.csr_collection<bf16, num_heads = 1, head_size = 128, page_size = 5, assert_write_mode = 1>
  kvcache.store_ragged %k, %new, %offsets
      : !test_kv.csr_cache<bf16, num_heads = 1, head_size = 128, page_size = 5, assert_write_mode = 1>, memref<?x1x128xbf16>, memref<?xi32>
  return
}

// CHECK-LABEL: .visible .entry copy_copy_pages(
// CHECK: .param .u64 copy_copy_pages_param_14,
// CHECK-NEXT: .param .u64 .ptr .align 1 copy_copy_pages_param_15,
// CHECK: .param .u32 copy_copy_pages_param_30,
// CHECK-NEXT: .param .u32 copy_copy_pages_param_31,
// CHECK-NEXT: .param .u64 .ptr .align 1 copy_copy_pages_param_32,
func.func @copy(%c: !test_kv.csr_collection<f32, num_heads = 4, head_size = 32, page_size = 8, mla = true>,
                %pairs: memref<?x2xi32>) {
  kvcache.copy_pages %c, %pairs : !test_kv.csr_collection<f32, num_heads = 4, head_size = 32, page_size = 8, mla = true>, memref<?x2xi32>
  return
}

// CHECK-LABEL: .visible .entry attention_attention_ragged(
// CHECK: cp.async
// CHECK-LABEL: .visible .entry attention_attention_merge(
func.func @attention(%c: !test_kv.csr_collection<f16, num_heads = 2, head_size = 128, page_size = 16>,
                     %q: memref<?x8x128xf16>, %offsets: memref<?xi32>, %out: memref<?x8x128xf16>,
                     %workspace: memref<?xf32>) {
  %c0 = arith.constant 0 : index
  %k = kvcache.get_key_cache %c[%c0] : !test_kv.csr_collection<f16, num_heads = 2, head_size = 128, page_size = 16>
  %v = kvcache.get_value_cache %c[%c0] : !test_kv.csr_collection<f16, num_heads = 2, head_size = 128, page_size = 16>
  kvcache.attention_ragged %q, %k, %v, %offsets, %out, %workspace {scale = 0.0883883 : f32}
      : memref<?x8x128xf16>, !test_kv.csr_cache<f16, num_heads = 2, head_size = 128, page_size = 16>,
        !test_kv.csr_cache<f16, num_heads = 2, head_size = 128, page_size = 16>, memref<?xi32>,
        memref<?x8x128xf16>, memref<?xf32>
  return
}
