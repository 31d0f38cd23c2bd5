// RUN: kvcache-opt %s | FileCheck %s
// RUN: kvcache-opt %s | kvcache-opt | FileCheck %s
// RUN: kvcache-opt %s -mlir-print-op-generic | kvcache-opt | FileCheck %s

// Quantized caches (docs/Contract.md, section 8): the storage types with and
// without `scales`, the collection's sixth operand, and the element types
// each op accepts on them.

// `scales` is printed after the other parameters; the keys may come in any
// order; raw storage caches print no scales.
// CHECK-LABEL: func.func @types
// CHECK-SAME: !kvcache.paged_collection<f8E4M3FN, num_heads = 8, head_size = 128, page_size = 16, scales = token_head>,
// CHECK-SAME: !kvcache.paged_collection<f8E5M2, num_heads = 8, head_size = 128, page_size = 16, scales = tensor>,
// CHECK-SAME: !kvcache.paged_collection<i8, num_heads = 8, head_size = 128, page_size = 16, scales = block<64>>,
// CHECK-SAME: !kvcache.paged_collection<f8E4M3FN, num_heads = 8, head_size = 128, page_size = 16>,
// CHECK-SAME: !kvcache.paged_cache<i8, num_heads = 1, head_size = 576, page_size = 64, mla = true, assert_write_mode = 1, scales = block<576>>,
// CHECK-SAME: !kvcache.continuous_collection<f8E5M2, num_heads = 2, head_size = 64, scales = block<8>>,
// CHECK-SAME: !kvcache.continuous_cache<i8, num_heads = 2, head_size = 64>)
func.func @types(
    %a: !kvcache.paged_collection<f8E4M3FN, num_heads = 8, head_size = 128, page_size = 16, scales = token_head>,
    %b: !kvcache.paged_collection<f8E5M2, scales = tensor, num_heads = 8, head_size = 128, page_size = 16>,
    %c: !kvcache.paged_collection<i8, num_heads = 8, head_size = 128, page_size = 16, scales = block<64>>,
    %d: !kvcache.paged_collection<f8E4M3FN, num_heads = 8, head_size = 128, page_size = 16>,
    %e: !kvcache.paged_cache<i8, scales = block<576>, mla = true, num_heads = 1, head_size = 576, page_size = 64, assert_write_mode = 1>,
    %f: !kvcache.continuous_collection<f8E5M2, num_heads = 2, head_size = 64, scales = block<8>>,
    %g: !kvcache.continuous_cache<i8, num_heads = 2, head_size = 64>) {
  return
}

// The sixth operand, one shape per kind: [num_layers, kv_dim] (tensor),
// [num_pages, kv_dim, num_layers, page_size, num_heads] (token_head), and
// head_size / G more (block<G>); static num_layers or strided outer dims
// are fine. The layer caches keep the scales.
!tensor = !kvcache.paged_collection<f8E5M2, num_heads = 8, head_size = 128, page_size = 16, scales = tensor>
!token = !kvcache.paged_collection<f8E4M3FN, num_heads = 8, head_size = 128, page_size = 16, scales = token_head>
!block = !kvcache.paged_collection<i8, num_heads = 8, head_size = 128, page_size = 16, scales = block<32>>
!cblock = !kvcache.continuous_collection<f8E5M2, num_heads = 2, head_size = 64, scales = block<8>>
// CHECK-LABEL: func.func @collections
// CHECK: kvcache.paged_collection %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : memref<?x2x?x16x8x128xf8E5M2>, memref<?xi32>, memref<?x?xi32>, memref<4x2xf32> -> !kvcache.paged_collection<f8E5M2, num_heads = 8, head_size = 128, page_size = 16, scales = tensor>
// CHECK: kvcache.paged_collection {{.*}} : memref<?x2x?x16x8x128xf8E4M3FN>, memref<?xi32>, memref<?x?xi32>, memref<?x2x?x16x8xf32, strided<[?, ?, ?, 8, 1], offset: ?>> -> !kvcache.paged_collection<f8E4M3FN, num_heads = 8, head_size = 128, page_size = 16, scales = token_head>
// CHECK: kvcache.paged_collection {{.*}} : memref<?x2x?x16x8x128xi8>, memref<?xi32>, memref<?x?xi32>, memref<?x2x3x16x8x4xf32> -> !kvcache.paged_collection<i8, num_heads = 8, head_size = 128, page_size = 16, scales = block<32>>
// CHECK: kvcache.continuous_collection {{.*}} : memref<?x2x?x?x2x64xf8E5M2>, memref<?xi32>, memref<?xi32>, memref<?x2x?x?x2x8xf32> -> !kvcache.continuous_collection<f8E5M2, num_heads = 2, head_size = 64, scales = block<8>>
// CHECK: kvcache.get_value_cache %{{.*}}[%{{.*}}] : !kvcache.paged_collection<i8, num_heads = 8, head_size = 128, page_size = 16, scales = block<32>>
func.func @collections(
    %bf5: memref<?x2x?x16x8x128xf8E5M2>, %bf4: memref<?x2x?x16x8x128xf8E4M3FN>,
    %bi8: memref<?x2x?x16x8x128xi8>, %bc: memref<?x2x?x?x2x64xf8E5M2>,
    %lengths: memref<?xi32>, %table: memref<?x?xi32>, %blocks_of: memref<?xi32>,
    %msl: i32, %mcl: i32, %st: memref<4x2xf32>,
    %sh: memref<?x2x?x16x8xf32, strided<[?, ?, ?, 8, 1], offset: ?>>,
    %sb: memref<?x2x3x16x8x4xf32>, %sc: memref<?x2x?x?x2x8xf32>, %layer: index)
    -> !kvcache.paged_cache<i8, num_heads = 8, head_size = 128, page_size = 16, scales = block<32>> {
  %t = kvcache.paged_collection %bf5, %lengths, %table, %msl, %mcl, %st
      : memref<?x2x?x16x8x128xf8E5M2>, memref<?xi32>, memref<?x?xi32>, memref<4x2xf32> -> !tensor
  %h = kvcache.paged_collection %bf4, %lengths, %table, %msl, %mcl, %sh
      : memref<?x2x?x16x8x128xf8E4M3FN>, memref<?xi32>, memref<?x?xi32>, memref<?x2x?x16x8xf32, strided<[?, ?, ?, 8, 1], offset: ?>> -> !token
  %b = kvcache.paged_collection %bi8, %lengths, %table, %msl, %mcl, %sb
      : memref<?x2x?x16x8x128xi8>, memref<?xi32>, memref<?x?xi32>, memref<?x2x3x16x8x4xf32> -> !block
  %c = kvcache.continuous_collection %bc, %lengths, %blocks_of, %msl, %mcl, %sc
      : memref<?x2x?x?x2x64xf8E5M2>, memref<?xi32>, memref<?xi32>, memref<?x2x?x?x2x8xf32> -> !cblock
  %v = kvcache.get_value_cache %b[%layer] : !block
  return %v : !kvcache.paged_cache<i8, num_heads = 8, head_size = 128, page_size = 16, scales = block<32>>
}

// Reads return the stored codes or, as f32/f16/bf16, dequantized values (a
// vector within one scale group); writes take stored codes; tiles are raw.
!k = !kvcache.paged_cache<f8E4M3FN, num_heads = 8, head_size = 128, page_size = 16, scales = block<32>>
// CHECK-LABEL: func.func @accesses
// CHECK: kvcache.load {{.*}} -> vector<16xf8E4M3FN>
// CHECK: kvcache.load {{.*}} -> vector<32xf32>
// CHECK: kvcache.load {{.*}} -> f16
// CHECK: kvcache.page_load {{.*}} -> vector<8xbf16>
// CHECK: kvcache.store {{.*}}, vector<16xf8E4M3FN>
// CHECK: kvcache.page_store {{.*}}, f8E4M3FN
// CHECK: kvcache.tile {{.*}} -> memref<16x128xf8E4M3FN, strided<[1024, 1], offset: ?>>
func.func @accesses(%k: !k, %b: index, %h: index, %t: index, %d: index) {
  %raw = kvcache.load %k[%b, %h, %t, %d] : !k -> vector<16xf8E4M3FN>
  %f32 = kvcache.load %k[%b, %h, %t, %d] : !k -> vector<32xf32>
  %f16 = kvcache.load %k[%b, %h, %t, %d] : !k -> f16
  %bf16 = kvcache.page_load %k[%b, %t, %h, %d] : !k -> vector<8xbf16>
  kvcache.store %raw, %k[%b, %h, %t, %d] : !k, vector<16xf8E4M3FN>
  %code = vector.extract %raw[0] : f8E4M3FN from vector<16xf8E4M3FN>
  kvcache.page_store %code, %k[%b, %t, %h, %d] : !k, f8E4M3FN
  %tile = kvcache.tile %k[%b, %t, %h] : !k -> memref<16x128xf8E4M3FN, strided<[1024, 1], offset: ?>>
  return
}

// Kernel ops: float rows quantize / dequantize, stored rows copy raw;
// attention takes f32, f16 or bf16 q/out over any quantized cache.
!q = !kvcache.paged_cache<i8, num_heads = 2, head_size = 64, page_size = 16, scales = token_head>
// CHECK-LABEL: func.func @kernel_ops
// CHECK: kvcache.store_ragged {{.*}} memref<?x2x64xf32>
// CHECK: kvcache.store_ragged {{.*}} memref<?x2x64xi8>
// CHECK: kvcache.gather_ragged {{.*}} memref<?x2x64xbf16>
// CHECK: kvcache.attention_ragged {{.*}} memref<?x8x64xf16>
func.func @kernel_ops(%k: !q, %v: !q, %f: memref<?x2x64xf32>, %codes: memref<?x2x64xi8>,
                      %out: memref<?x2x64xbf16>, %offsets: memref<?xi32>,
                      %qrows: memref<?x8x64xf16>, %orows: memref<?x8x64xf16>) {
  kvcache.store_ragged %k, %f, %offsets : !q, memref<?x2x64xf32>, memref<?xi32>
  kvcache.store_ragged %k, %codes, %offsets : !q, memref<?x2x64xi8>, memref<?xi32>
  kvcache.gather_ragged %k, %out, %offsets : !q, memref<?x2x64xbf16>, memref<?xi32>
  kvcache.attention_ragged %qrows, %k, %v, %offsets, %orows {scale = 0.125 : f32}
      : memref<?x8x64xf16>, !q, !q, memref<?xi32>, memref<?x8x64xf16>
  return
}

// The scale ops: token- or page-addressed, an f32 per element's scale.
// CHECK-LABEL: func.func @scale_ops
// CHECK: %[[S:.*]] = kvcache.load_scale %{{.*}}[%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}] : !kvcache.paged_cache<f8E4M3FN, num_heads = 8, head_size = 128, page_size = 16, scales = block<32>> -> f32
// CHECK: kvcache.store_scale %[[S]], %{{.*}}[%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}] : !kvcache.paged_cache<f8E4M3FN, num_heads = 8, head_size = 128, page_size = 16, scales = block<32>>
// CHECK: %[[P:.*]] = kvcache.page_load_scale %{{.*}} -> f32
// CHECK: kvcache.page_store_scale %[[P]], %{{.*}} : !kvcache.continuous_cache<i8, num_heads = 2, head_size = 64, scales = tensor>
func.func @scale_ops(%k: !k, %c: !kvcache.continuous_cache<i8, num_heads = 2, head_size = 64, scales = tensor>,
                     %b: index, %h: index, %t: index, %d: index) {
  %s = kvcache.load_scale %k[%b, %h, %t, %d] : !k -> f32
  kvcache.store_scale %s, %k[%b, %h, %t, %d] : !k
  %p = kvcache.page_load_scale %c[%b, %t, %h, %d] : !kvcache.continuous_cache<i8, num_heads = 2, head_size = 64, scales = tensor> -> f32
  kvcache.page_store_scale %p, %c[%b, %t, %h, %d] : !kvcache.continuous_cache<i8, num_heads = 2, head_size = 64, scales = tensor>
  return
}
