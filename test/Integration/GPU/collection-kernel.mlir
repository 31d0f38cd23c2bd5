// RUN: kvcache-compile %s -o %t.ptx
// RUN: FileCheck %s --input-file=%t.ptx \
// RUN:   --implicit-check-not=div. --implicit-check-not=rem.
// RUN: kvcache-compile %s --chip sm_80 -o %t.sm_80.ptx
// RUN: FileCheck %s --input-file=%t.sm_80.ptx \
// RUN:   --implicit-check-not=div. --implicit-check-not=rem.

// A kernel taking a whole !kvcache.paged_collection and selecting the layer
// inside the kernel with get_key_cache/get_value_cache. The collection is 29
// parameters, in the order of the kernel ABI: the 6-D blocks memref
// (allocated and aligned pointer, offset, 6 sizes, 6 strides), cache_lengths
// (5), lookup_table (7), max_seq_length and max_cache_length (.u32 each).
// collection-kernel-ptxas.test assembles the PTX.

!collection = !kvcache.paged_collection<bf16, num_heads = 4, head_size = 64, page_size = 32>
!cache = !kvcache.paged_cache<bf16, num_heads = 4, head_size = 64, page_size = 32>

module attributes {gpu.container_module} {
  gpu.module @kernels {
    // Swaps the K and V of token `block_id` of sequence `batch` in `layer`:
    // 8 threads per head, each moving 8 bf16 (16 bytes) of K and of V.

    // CHECK-LABEL: .visible .entry swap_kv(
    // blocks: memref<?x2x?x32x4x64xbf16, strided<[?, ?, ?, 256, 64, 1], offset: ?>>.
    // CHECK-NEXT: .param .u64 .ptr .align 1 swap_kv_param_0,
    // CHECK-NEXT: .param .u64 .ptr .align 1 swap_kv_param_1,
    // CHECK-NEXT: .param .u64 swap_kv_param_2,
    // CHECK-NEXT: .param .u64 swap_kv_param_3,
    // CHECK-NEXT: .param .u64 swap_kv_param_4,
    // CHECK-NEXT: .param .u64 swap_kv_param_5,
    // CHECK-NEXT: .param .u64 swap_kv_param_6,
    // CHECK-NEXT: .param .u64 swap_kv_param_7,
    // CHECK-NEXT: .param .u64 swap_kv_param_8,
    // CHECK-NEXT: .param .u64 swap_kv_param_9,
    // CHECK-NEXT: .param .u64 swap_kv_param_10,
    // CHECK-NEXT: .param .u64 swap_kv_param_11,
    // CHECK-NEXT: .param .u64 swap_kv_param_12,
    // CHECK-NEXT: .param .u64 swap_kv_param_13,
    // CHECK-NEXT: .param .u64 swap_kv_param_14,
    // cache_lengths: memref<?xi32>.
    // CHECK-NEXT: .param .u64 .ptr .align 1 swap_kv_param_15,
    // CHECK-NEXT: .param .u64 .ptr .align 1 swap_kv_param_16,
    // CHECK-NEXT: .param .u64 swap_kv_param_17,
    // CHECK-NEXT: .param .u64 swap_kv_param_18,
    // CHECK-NEXT: .param .u64 swap_kv_param_19,
    // lookup_table: memref<?x?xi32>.
    // CHECK-NEXT: .param .u64 .ptr .align 1 swap_kv_param_20,
    // CHECK-NEXT: .param .u64 .ptr .align 1 swap_kv_param_21,
    // CHECK-NEXT: .param .u64 swap_kv_param_22,
    // CHECK-NEXT: .param .u64 swap_kv_param_23,
    // CHECK-NEXT: .param .u64 swap_kv_param_24,
    // CHECK-NEXT: .param .u64 swap_kv_param_25,
    // CHECK-NEXT: .param .u64 swap_kv_param_26,
    // max_seq_length, max_cache_length.
    // CHECK-NEXT: .param .u32 swap_kv_param_27,
    // CHECK-NEXT: .param .u32 swap_kv_param_28,
    // %layer, %batch.
    // CHECK-NEXT: .param .u64 swap_kv_param_29,
    // CHECK-NEXT: .param .u64 swap_kv_param_30
    // CHECK-NEXT: )
    // One lookup-table read serves K and V: the four accesses share it.
    // CHECK-NOT: {{\.[bu]16|\.v4\.}}
    // CHECK: shr.u32 %r{{[0-9]+}}, %r{{[0-9]+}}, 5;
    // CHECK-NOT: {{\.[bu]16|\.v4\.}}
    // CHECK: ld.global.b32
    // CHECK-NOT: {{\.[bu]16|\.v4\.|ld\.global\.b32}}
    // CHECK: ld.global.v4.b32 {%r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}}, {{\[}}[[KEY:%rd[0-9]+]]{{\]}};
    // CHECK-NOT: {{\.[bu]16|\.v4\.|ld\.global\.b32}}
    // CHECK: ld.global.v4.b32 {%r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}}, {{\[}}[[VALUE:%rd[0-9]+]]{{\]}};
    // CHECK-NOT: {{\.[bu]16|\.v4\.|ld\.global\.b32}}
    // CHECK: st.global.v4.b32 {{\[}}[[KEY]]{{\]}}, {%r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}};
    // CHECK-NEXT: st.global.v4.b32 {{\[}}[[VALUE]]{{\]}}, {%r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}};
    // CHECK-NEXT: ret;
    gpu.func @swap_kv(%collection: !collection, %layer: index, %batch: index) kernel
        attributes {known_block_size = array<i32: 8, 4, 1>} {
      %token = gpu.block_id x
      %head = gpu.thread_id y
      %chunk = gpu.thread_id x
      %c8 = arith.constant 8 : index
      %element = arith.muli %chunk, %c8 : index
      %keys = kvcache.get_key_cache %collection[%layer] : !collection
      %values = kvcache.get_value_cache %collection[%layer] : !collection
      %k = kvcache.load %keys[%batch, %head, %token, %element] : !cache -> vector<8xbf16>
      %v = kvcache.load %values[%batch, %head, %token, %element] : !cache -> vector<8xbf16>
      kvcache.store %v, %keys[%batch, %head, %token, %element] : !cache, vector<8xbf16>
      kvcache.store %k, %values[%batch, %head, %token, %element] : !cache, vector<8xbf16>
      gpu.return
    }
  }
}
