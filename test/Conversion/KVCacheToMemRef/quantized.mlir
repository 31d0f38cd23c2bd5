// RUN: kvcache-opt %s -convert-kvcache-to-memref -canonicalize | FileCheck %s --check-prefixes=CHECK,NEUTRAL
// RUN: kvcache-opt %s -convert-kvcache-to-memref -kvcache-fp8-to-integer -canonicalize | FileCheck %s --check-prefixes=CHECK,INTEGER

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

// The scale ops read and write the sixth value: scales[] (tensor),
// scales[page, slot, head] (token_head), scales[page, slot, head, d / G]
// (block<G>).
!b = !kvcache.paged_cache<i8, num_heads = 2, head_size = 64, page_size = 4, scales = block<16>>
!t = !kvcache.paged_cache<f8E5M2, num_heads = 2, head_size = 64, page_size = 4, scales = tensor>
!h = !kvcache.continuous_cache<f8E4M3FN, num_heads = 2, head_size = 64, scales = token_head>
// CHECK-LABEL: func.func @scale_ops(
// CHECK-SAME: %[[BS:[a-z0-9]+]]: memref<?x4x2x4xf32, strided<[?, 8, 4, 1], offset: ?>>,
// CHECK-SAME: %[[TS:[a-z0-9]+]]: memref<f32, strided<[], offset: ?>>,
// CHECK-SAME: %[[HS:[a-z0-9]+]]: memref<?x?x2xf32, strided<[?, 2, 1], offset: ?>>, %[[I:[a-z0-9]+]]: index, %[[J:[a-z0-9]+]]: index, %[[X:[a-z0-9]+]]: f32)
// CHECK: %[[G:.*]] = arith.divui %[[J]], %c16 : index
// CHECK: %[[B:.*]] = memref.load %[[BS]][%[[I]], %[[J]], %[[I]], %[[G]]]
// CHECK: %[[T:.*]] = memref.load %[[TS]][] : memref<f32, strided<[], offset: ?>>
// CHECK: %[[H:.*]] = memref.load %[[HS]][%[[I]], %[[J]], %[[I]]]
// CHECK: memref.store %[[X]], %[[BS]][%[[I]], %[[J]], %[[I]], %{{.*}}]
// CHECK: return %[[B]], %[[T]], %[[H]]
func.func @scale_ops(%b: !b, %t: !t, %h: !h, %i: index, %j: index, %x: f32) -> (f32, f32, f32) {
  %0 = kvcache.page_load_scale %b[%i, %j, %i, %j] : !b -> f32
  %1 = kvcache.page_load_scale %t[%i, %j, %i, %j] : !t -> f32
  %2 = kvcache.page_load_scale %h[%i, %j, %i, %j] : !h -> f32
  kvcache.page_store_scale %x, %b[%i, %j, %i, %j] : !b
  return %0, %1, %2 : f32, f32, f32
}

// A dequantizing load: the codes, as f32 (i8: sitofp), times the vector's
// scale, rounded to the result type.
// CHECK-LABEL: func.func @dequantize_i8(
// CHECK: %[[CODES:.*]] = vector.load %arg0[%arg6, %arg7, %arg6, %arg7] {alignment = 4 : i64} : {{.*}}, vector<4xi8>
// CHECK: %[[F:.*]] = arith.sitofp %[[CODES]] : vector<4xi8> to vector<4xf32>
// CHECK: %[[S:.*]] = memref.load %arg5[
// CHECK: %[[SV:.*]] = vector.broadcast %[[S]] : f32 to vector<4xf32>
// CHECK: %[[V:.*]] = arith.mulf %[[F]], %[[SV]] : vector<4xf32>
// CHECK: arith.truncf %[[V]] : vector<4xf32> to vector<4xbf16>
func.func @dequantize_i8(%b: !b, %i: index, %j: index) -> vector<4xbf16> {
  %0 = kvcache.page_load %b[%i, %j, %i, %j] : !b -> vector<4xbf16>
  return %0 : vector<4xbf16>
}

// fp8 codes decode target-neutrally, through f16 (which holds every fp8
// value): arith.extf to f16, then to f32, times the scale. The fp8 lowering
// passes (kvcache-fp8-to-integer, kvcache-fp8-to-nvvm) choose the
// instructions.
// CHECK-LABEL: func.func @dequantize_e5m2(
// CHECK: %[[CODES:.*]] = memref.load %arg0[
// NEUTRAL: %[[H:.*]] = arith.extf %[[CODES]] : f8E5M2 to f16
// NEUTRAL: %[[F:.*]] = arith.extf %[[H]] : f16 to f32
// With the integer lowering, in 16-bit lanes: an E5M2 code is the high
// byte of an f16, extended to f32 (the chip's conversion).
// INTEGER: %[[BYTE:.*]] = arith.bitcast %[[CODES]] : f8E5M2 to i8
// INTEGER: %[[WORD:.*]] = arith.extui %[[BYTE]] : i8 to i16
// INTEGER: %[[BITS:.*]] = arith.shli %[[WORD]], %c8_i16 : i16
// INTEGER: %[[HALF:.*]] = arith.bitcast %[[BITS]] : i16 to f16
// INTEGER: %[[F:.*]] = arith.extf %[[HALF]] : f16 to f32
// CHECK: %[[S:.*]] = memref.load %arg5[] : memref<f32, strided<[], offset: ?>>
// CHECK: arith.mulf %[[F]], %[[S]] : f32
func.func @dequantize_e5m2(%t: !t, %i: index, %j: index) -> f32 {
  %0 = kvcache.page_load %t[%i, %j, %i, %j] : !t -> f32
  return %0 : f32
}

// E4M3FN with the integer lowering: the code sign-extended and shifted into
// an f16's sign, exponent and mantissa is the value / 2^8, but for bit 14, a
// copy of the sign: bit 14 of shifted + 0x80 (16384 = 0x4000 picks it),
// xor-ed in, clears it for every value and sets it for magnitude 0x7F (the
// add carries out of bits 13..7 only there), which makes the NaN code an f16
// NaN; extended to f32, times 2^8, times the token's scale.
!e4 = !kvcache.paged_cache<f8E4M3FN, num_heads = 2, head_size = 64, page_size = 4, scales = token_head>
// CHECK-LABEL: func.func @dequantize_e4m3(
// NEUTRAL: %[[CODES:.*]] = vector.load {{.*}} vector<8xf8E4M3FN>
// NEUTRAL: %[[H:.*]] = arith.extf %[[CODES]] : vector<8xf8E4M3FN> to vector<8xf16>
// NEUTRAL: %[[F:.*]] = arith.extf %[[H]] : vector<8xf16> to vector<8xf32>
// NEUTRAL: %[[S:.*]] = memref.load %arg5
// NEUTRAL: %[[SV:.*]] = vector.broadcast %[[S]] : f32 to vector<8xf32>
// NEUTRAL: arith.mulf %[[F]], %[[SV]] : vector<8xf32>
// INTEGER-DAG: %[[C128:.*]] = arith.constant dense<128> : vector<8xi16>
// INTEGER-DAG: %[[BIT14:.*]] = arith.constant dense<16384> : vector<8xi16>
// INTEGER: %[[BYTE:.*]] = arith.bitcast %{{.*}} : vector<8xf8E4M3FN> to vector<8xi8>
// INTEGER: %[[WIDE:.*]] = arith.extsi %[[BYTE]] : vector<8xi8> to vector<8xi16>
// INTEGER: %[[SHIFTED:.*]] = arith.shli %[[WIDE]], %{{.*}} : vector<8xi16>
// INTEGER: %[[CARRIED:.*]] = arith.addi %[[SHIFTED]], %[[C128]] : vector<8xi16>
// INTEGER: %[[PICKED:.*]] = arith.andi %[[CARRIED]], %[[BIT14]] : vector<8xi16>
// INTEGER: %[[FIXED:.*]] = arith.xori %[[SHIFTED]], %[[PICKED]] : vector<8xi16>
// INTEGER-NOT: arith.cmpi
// INTEGER: %[[HALF:.*]] = arith.bitcast %[[FIXED]] : vector<8xi16> to vector<8xf16>
// INTEGER: %[[F:.*]] = arith.extf %[[HALF]] : vector<8xf16> to vector<8xf32>
// INTEGER: %[[V:.*]] = arith.mulf %[[F]], %{{.*}} : vector<8xf32>
// INTEGER: arith.mulf %[[V]], %{{.*}} : vector<8xf32>
func.func @dequantize_e4m3(%t: !e4, %i: index, %j: index) -> vector<8xf32> {
  %0 = kvcache.page_load %t[%i, %j, %i, %j] : !e4 -> vector<8xf32>
  return %0 : vector<8xf32>
}
