// RUN: kvcache-opt %s -convert-kvcache-to-memref -canonicalize | FileCheck %s

// A quantized cache lowers to six values (docs/KernelABI.md): the five of
// any cache, then its scales; a layer cache's scales are the layer's view
// of the collection's (docs/Contract.md, section 8). Raw accesses (stored
// codes) lower as on a cache without scales.

!tensor = !kvcache.paged_collection<f8E5M2, num_heads = 8, head_size = 128, page_size = 16, scales = tensor>
!tensor_cache = !kvcache.paged_cache<f8E5M2, num_heads = 8, head_size = 128, page_size = 16, scales = tensor>
// CHECK-LABEL: func.func @tensor_scales(
// CHECK-SAME: %[[S:[a-z0-9]+]]: memref<?x2xf32, strided<[?, 1], offset: ?>>, %[[LAYER:[a-z0-9]+]]: index)
// CHECK-SAME: -> (memref<?x16x8x128xf8E5M2, strided<[?, 1024, 128, 1], offset: ?>>, memref<?xi32>, memref<?x?xi32>, i32, i32, memref<f32, strided<[], offset: ?>>)
// The V scale of the layer: scales[layer, 1], a 0-D view.
// CHECK: %[[V:.*]] = memref.subview %[[S]][%[[LAYER]], 1] [1, 1] [1, 1] : memref<?x2xf32, strided<[?, 1], offset: ?>> to memref<f32, strided<[], offset: ?>>
// CHECK: return {{.*}}, %[[V]] :
func.func @tensor_scales(%c: !tensor, %layer: index) -> !tensor_cache {
  %v = kvcache.get_value_cache %c[%layer] : !tensor
  return %v : !tensor_cache
}

!token = !kvcache.paged_collection<f8E4M3FN, num_heads = 2, head_size = 64, page_size = 4, scales = token_head>
!token_cache = !kvcache.paged_cache<f8E4M3FN, num_heads = 2, head_size = 64, page_size = 4, scales = token_head>
// CHECK-LABEL: func.func @token_head_scales(
// CHECK-SAME: %[[S:[a-z0-9]+]]: memref<?x2x?x4x2xf32, strided<[?, ?, ?, 2, 1], offset: ?>>, %[[LAYER:[a-z0-9]+]]: index)
// CHECK-SAME: memref<?x4x2xf32, strided<[?, 2, 1], offset: ?>>)
// CHECK: %[[PAGES:.*]] = memref.dim %[[S]], %c0
// CHECK: %[[K:.*]] = memref.subview %[[S]][0, 0, %[[LAYER]], 0, 0] [%[[PAGES]], 1, 1, 4, 2] [1, 1, 1, 1, 1] : memref<?x2x?x4x2xf32, strided<[?, ?, ?, 2, 1], offset: ?>> to memref<?x4x2xf32, strided<[?, 2, 1], offset: ?>>
// CHECK: return {{.*}}, %[[K]] :
func.func @token_head_scales(%c: !token, %layer: index) -> !token_cache {
  %k = kvcache.get_key_cache %c[%layer] : !token
  return %k : !token_cache
}

!block = !kvcache.continuous_collection<i8, num_heads = 2, head_size = 64, scales = block<16>>
!block_cache = !kvcache.continuous_cache<i8, num_heads = 2, head_size = 64, scales = block<16>>
// CHECK-LABEL: func.func @block_scales(
// CHECK-SAME: %[[S:[a-z0-9]+]]: memref<?x2x?x?x2x4xf32, strided<[?, ?, ?, 8, 4, 1], offset: ?>>, %[[LAYER:[a-z0-9]+]]: index)
// CHECK-SAME: memref<?x?x2x4xf32, strided<[?, 8, 4, 1], offset: ?>>)
// CHECK: %[[V:.*]] = memref.subview %[[S]][0, 1, %[[LAYER]], 0, 0, 0] [%{{.*}}, 1, 1, %{{.*}}, 2, 4] [1, 1, 1, 1, 1, 1] : memref<?x2x?x?x2x4xf32, strided<[?, ?, ?, 8, 4, 1], offset: ?>> to memref<?x?x2x4xf32, strided<[?, 8, 4, 1], offset: ?>>
// CHECK: return {{.*}}, %[[V]] :
func.func @block_scales(%c: !block, %layer: index) -> !block_cache {
  %v = kvcache.get_value_cache %c[%layer] : !block
  return %v : !block_cache
}

// The constructor's sixth operand becomes the sixth value, cast to the
// lowered type; a raw load reads the stored codes through the lookup.
!c = !kvcache.paged_collection<f8E4M3FN, num_heads = 2, head_size = 32, page_size = 4, scales = block<16>>
!k = !kvcache.paged_cache<f8E4M3FN, num_heads = 2, head_size = 32, page_size = 4, scales = block<16>>
// CHECK-LABEL: func.func @constructor_and_raw_load(
// CHECK: %[[BLOCKS:.*]] = memref.subview %arg0[0, 1, %arg6, 0, 0, 0]
// CHECK: %[[PAGE32:.*]] = memref.load %arg2[
// CHECK: %[[PAGE:.*]] = arith.index_castui %[[PAGE32]]
// CHECK: vector.load %[[BLOCKS]][%[[PAGE]], {{.*}} : memref<?x4x2x32xf8E4M3FN, strided<[?, 64, 32, 1], offset: ?>>, vector<8xf8E4M3FN>
// CHECK-LABEL: func.func @constructor_returned(
// CHECK: %[[CAST:.*]] = memref.cast %arg5 : memref<3x2x1x4x2x2xf32> to memref<?x2x?x4x2x2xf32, strided<[?, ?, ?, 4, 2, 1], offset: ?>>
// CHECK: return %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[CAST]] :
func.func @constructor_and_raw_load(%blocks: memref<?x2x?x4x2x32xf8E4M3FN>, %cl: memref<?xi32>, %lt: memref<?x?xi32>, %a: i32, %b: i32,
                                    %s: memref<?x2x?x4x2x2xf32>, %i: index) -> vector<8xf8E4M3FN> {
  %c = kvcache.paged_collection %blocks, %cl, %lt, %a, %b, %s : memref<?x2x?x4x2x32xf8E4M3FN>, memref<?xi32>, memref<?x?xi32>, memref<?x2x?x4x2x2xf32> -> !c
  %v = kvcache.get_value_cache %c[%i] : !c
  %x = kvcache.load %v[%i, %i, %i, %i] : !k -> vector<8xf8E4M3FN>
  return %x : vector<8xf8E4M3FN>
}
func.func @constructor_returned(%blocks: memref<3x2x1x4x2x32xf8E4M3FN>, %cl: memref<?xi32>, %lt: memref<?x?xi32>, %a: i32, %b: i32,
                                %s: memref<3x2x1x4x2x2xf32>) -> !c {
  %c = kvcache.paged_collection %blocks, %cl, %lt, %a, %b, %s : memref<3x2x1x4x2x32xf8E4M3FN>, memref<?xi32>, memref<?x?xi32>, memref<3x2x1x4x2x2xf32> -> !c
  return %c : !c
}
