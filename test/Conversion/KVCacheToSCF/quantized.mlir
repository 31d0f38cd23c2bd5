// RUN: kvcache-opt %s -split-input-file -convert-kvcache-to-scf | FileCheck %s

// Kernel ops on quantized caches on the CPU (docs/Contract.md 2.2): a
// gather into float rows dequantizes chunk by chunk (page_load with a float
// result, each chunk within one scale group); copy_pages moves per-page
// scales with the pages.

!b = !kvcache.paged_cache<i8, num_heads = 2, head_size = 64, page_size = 4, scales = block<2>>
// f32 rows allow 4-element chunks (16 bytes); block<2> cuts them to 2.
// CHECK-LABEL: func.func @gather_dequantizing(
// CHECK: kvcache.page_load %{{.*}} : !kvcache.paged_cache<i8, num_heads = 2, head_size = 64, page_size = 4, scales = block<2>> -> vector<2xf32>
// CHECK: vector.store %{{.*}} : memref<?x2x64xf32>, vector<2xf32>
func.func @gather_dequantizing(%k: !b, %out: memref<?x2x64xf32>, %offsets: memref<?xi32>) {
  kvcache.gather_ragged %k, %out, %offsets : !b, memref<?x2x64xf32>, memref<?xi32>
  return
}

// -----

!t = !kvcache.paged_cache<f8E4M3FN, num_heads = 2, head_size = 64, page_size = 4, scales = token_head>
// bf16 rows: chunks of vector-bytes (64 by default), one scale per token
// and head.
// CHECK-LABEL: func.func @gather_bf16(
// CHECK: kvcache.page_load %{{.*}} -> vector<32xbf16>
func.func @gather_bf16(%k: !t, %out: memref<?x2x64xbf16>, %offsets: memref<?xi32>) {
  kvcache.gather_ragged %k, %out, %offsets : !t, memref<?x2x64xbf16>, memref<?xi32>
  return
}

// -----

!c = !kvcache.paged_collection<f8E5M2, num_heads = 2, head_size = 64, page_size = 4, scales = block<32>>
// The codes of each slot, then its scales: per head, one per group of 32.
// CHECK-LABEL: func.func @copy_with_scales(
// CHECK: kvcache.page_load %{{.*}} {serves_write} : {{.*}} -> vector<64xf8E5M2>
// CHECK: kvcache.page_store
// CHECK: scf.for %[[H:.*]] = %{{.*}} to %{{.*}} step
// CHECK: scf.for %[[D:.*]] = %{{.*}} to %{{.*}} step %c32
// CHECK-NEXT: %[[S:.*]] = kvcache.page_load_scale %{{.*}}[%{{.*}}, %{{.*}}, %[[H]], %[[D]]]
// CHECK-NEXT: kvcache.page_store_scale %[[S]], %{{.*}}[%{{.*}}, %{{.*}}, %[[H]], %[[D]]]
func.func @copy_with_scales(%c: !c, %pairs: memref<?x2xi32>) {
  kvcache.copy_pages %c, %pairs : !c, memref<?x2xi32>
  return
}

// -----

!c = !kvcache.paged_collection<i8, num_heads = 2, head_size = 64, page_size = 4, scales = tensor>
// Tensor scales belong to the layer, not to a page: nothing to copy.
// CHECK-LABEL: func.func @copy_tensor_scales(
// CHECK-NOT: page_load_scale
// CHECK: return
func.func @copy_tensor_scales(%c: !c, %pairs: memref<?x2xi32>) {
  kvcache.copy_pages %c, %pairs : !c, memref<?x2xi32>
  return
}
