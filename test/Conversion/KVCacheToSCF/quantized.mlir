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

// -----

// store_ragged of float rows quantizes (docs/Contract.md 2.2). token_head:
// a first pass over the row's heads reads each group (4 chunks of 16) into
// registers, takes its amax (maxnumf: NaN drops out; a tree, then a
// NaN-free reduction) and writes the scale amax / 448 (1 when amax = 0); a
// second pass reads each scale back and the chunks again, divides them by
// it (a division, not a reciprocal), encodes them in integer and f32
// arithmetic and stores the group's codes as one vector: the codes' low
// bytes gathered by shuffles of pairs of chunks, no truncation.
!t = !kvcache.paged_cache<f8E4M3FN, num_heads = 2, head_size = 64, page_size = 4, scales = token_head>
// CHECK-LABEL: func.func @store_token_head(
// CHECK: %[[PAGE:.*]], %[[SLOT:.*]] = kvcache.lookup
// CHECK: scf.for %[[H:.*]] = %{{.*}} to %{{.*}} step
// CHECK: scf.for %[[G:.*]] = %{{.*}} to %{{.*}} step %c64
// CHECK-NOT: scf.for
// CHECK: vector.load %{{.*}} : memref<?x2x64xf32>, vector<16xf32>
// CHECK: %[[A0:.*]] = arith.maxnumf
// CHECK: vector.load
// CHECK: %[[A1:.*]] = arith.maxnumf
// CHECK: vector.load
// CHECK: %[[A2:.*]] = arith.maxnumf
// CHECK: vector.load
// CHECK: %[[A3:.*]] = arith.maxnumf
// CHECK-NOT: vector.load
// CHECK: %[[M0:.*]] = arith.maxnumf %[[A0]], %[[A3]] : vector<16xf32>
// CHECK: %[[M1:.*]] = arith.maxnumf %[[A1]], %[[A2]] : vector<16xf32>
// CHECK: %[[M:.*]] = arith.maxnumf %[[M0]], %[[M1]] : vector<16xf32>
// CHECK: %[[MAX:.*]] = vector.reduction <maxnumf>, %[[M]] fastmath<nnan> : vector<16xf32> into f32
// CHECK: %[[Q:.*]] = arith.divf %[[MAX]], %{{.*}} : f32
// CHECK: %[[ZERO:.*]] = arith.cmpf oeq, %[[MAX]]
// CHECK: %[[SCALE:.*]] = arith.select %[[ZERO]], %{{.*}}, %[[Q]] : f32
// CHECK: kvcache.page_store_scale %[[SCALE]], %{{.*}}[%[[PAGE]], %[[SLOT]], %[[H]], %[[G]]]
// CHECK-NOT: kvcache.page_store
// CHECK: scf.for %[[H2:.*]] = %{{.*}} to %{{.*}} step
// CHECK: scf.for %[[G2:.*]] = %{{.*}} to %{{.*}} step %c64
// CHECK-NOT: scf.for
// CHECK: %[[SCALE2:.*]] = kvcache.page_load_scale %{{.*}}[%[[PAGE]], %[[SLOT]], %[[H2]], %[[G2]]]
// CHECK: vector.load
// CHECK: %[[SPLAT:.*]] = vector.broadcast %[[SCALE2]] : f32 to vector<16xf32>
// CHECK: arith.divf %{{.*}}, %[[SPLAT]] : vector<16xf32>
// CHECK: arith.minui
// CHECK: arith.maxui
// CHECK: arith.addf
// CHECK-NOT: arith.trunci
// CHECK-COUNT-3: arith.divf %{{.*}}, %[[SPLAT]] : vector<16xf32>
// CHECK-NOT: arith.trunci
// CHECK: %[[B0:.*]] = vector.bitcast %{{.*}} : vector<16xi32> to vector<64xi8>
// CHECK: %[[B1:.*]] = vector.bitcast %{{.*}} : vector<16xi32> to vector<64xi8>
// CHECK: %[[P0:.*]] = vector.shuffle %[[B0]], %[[B1]] [0, 4, 8, {{.*}}, 120, 124] : vector<64xi8>, vector<64xi8>
// CHECK: %[[P1:.*]] = vector.shuffle {{.*}} : vector<64xi8>, vector<64xi8>
// CHECK: %[[ALL:.*]] = vector.shuffle %[[P0]], %[[P1]] [0, 1, {{.*}}, 62, 63] : vector<32xi8>, vector<32xi8>
// CHECK: %[[CODES:.*]] = arith.bitcast %[[ALL]] : vector<64xi8> to vector<64xf8E4M3FN>
// CHECK: %[[AT:.*]] = arith.addi %[[G2]], %c0
// CHECK: kvcache.page_store %[[CODES]], %{{.*}}[%[[PAGE]], %[[SLOT]], %[[H2]], %[[AT]]] : !kvcache.paged_cache<{{.*}}>, vector<64xf8E4M3FN>
// CHECK-NOT: kvcache.page_store
// CHECK: return
func.func @store_token_head(%k: !t, %new: memref<?x2x64xf32>, %offsets: memref<?xi32>) {
  kvcache.store_ragged %k, %new, %offsets : !t, memref<?x2x64xf32>, memref<?xi32>
  return
}

// -----

// f16 rows into a token_head cache: the amax on the halves' bits, two
// chunks of 32 side by side: |x|'s bits plus 0x3FF (a NaN wraps to a
// negative i16), a signed maximum, the bias taken off again.
!h = !kvcache.paged_cache<f8E5M2, num_heads = 2, head_size = 128, page_size = 4, scales = token_head>
// CHECK-LABEL: func.func @store_token_head_f16(
// CHECK: %[[C0:.*]] = vector.load %{{.*}} : memref<?x2x128xf16>, vector<32xf16>
// CHECK: %[[C1:.*]] = vector.load %{{.*}} : memref<?x2x128xf16>, vector<32xf16>
// CHECK: %[[C2:.*]] = vector.load %{{.*}} : memref<?x2x128xf16>, vector<32xf16>
// CHECK: %[[C3:.*]] = vector.load %{{.*}} : memref<?x2x128xf16>, vector<32xf16>
// CHECK-NOT: arith.extf
// CHECK: %[[P0:.*]] = vector.shuffle %[[C0]], %[[C1]] [0, 1, {{.*}}, 63] : vector<32xf16>, vector<32xf16>
// CHECK: %[[B0:.*]] = arith.bitcast %[[P0]] : vector<64xf16> to vector<64xi16>
// CHECK: %[[A0:.*]] = arith.andi %[[B0]], %{{.*}} : vector<64xi16>
// CHECK: %[[M0:.*]] = arith.addi %[[A0]], %{{.*}} : vector<64xi16>
// CHECK: vector.shuffle %[[C2]], %[[C3]]
// CHECK: %[[M1:.*]] = arith.addi
// CHECK: %[[M:.*]] = arith.maxsi %[[M0]], %[[M1]] : vector<64xi16>
// CHECK: %[[TOP:.*]] = vector.reduction <maxsi>, %[[M]] : vector<64xi16> into i16
// CHECK: %[[BIAS:.*]] = arith.constant 1023 : i16
// CHECK: %[[NONNEG:.*]] = arith.maxsi %[[TOP]], %[[BIAS]] : i16
// CHECK: %[[BITS:.*]] = arith.subi %[[NONNEG]], %[[BIAS]] : i16
// CHECK: %[[HALF:.*]] = arith.bitcast %[[BITS]] : i16 to f16
// CHECK: %[[AMAX:.*]] = arith.extf %[[HALF]] : f16 to f32
// CHECK: arith.divf %[[AMAX]]
// CHECK: kvcache.page_store_scale
// CHECK: return
func.func @store_token_head_f16(%k: !h, %new: memref<?x2x128xf16>, %offsets: memref<?xi32>) {
  kvcache.store_ragged %k, %new, %offsets : !h, memref<?x2x128xf16>, memref<?xi32>
  return
}

// -----

// tensor: the layer's scale is read, never written; f16 rows widen to f32.
!s = !kvcache.paged_cache<i8, num_heads = 2, head_size = 64, page_size = 4, scales = tensor>
// CHECK-LABEL: func.func @store_tensor(
// CHECK-NOT: page_store_scale
// CHECK: %[[SCALE:.*]] = kvcache.page_load_scale
// CHECK: %[[ROW:.*]] = vector.load %{{.*}} : memref<?x2x64xf16>, vector<32xf16>
// CHECK: %[[WIDE:.*]] = arith.extf %[[ROW]] : vector<32xf16> to vector<32xf32>
// CHECK: %[[SPLAT:.*]] = vector.broadcast %[[SCALE]]
// CHECK: arith.divf %[[WIDE]], %[[SPLAT]]
// CHECK: kvcache.page_store %{{.*}} : !kvcache.paged_cache<{{.*}}>, vector<32xi8>
// CHECK-NOT: page_store_scale
// CHECK: return
func.func @store_tensor(%k: !s, %new: memref<?x2x64xf16>, %offsets: memref<?xi32>) {
  kvcache.store_ragged %k, %new, %offsets : !s, memref<?x2x64xf16>, memref<?xi32>
  return
}

// -----

// block<8>: a scale per 8 elements, chunks of 8 within each group.
!b = !kvcache.paged_cache<f8E5M2, num_heads = 2, head_size = 64, page_size = 4, scales = block<8>>
// CHECK-LABEL: func.func @store_block(
// CHECK: scf.for %{{.*}} = %{{.*}} to %{{.*}} step %c8
// CHECK: vector.load %{{.*}} : memref<?x2x64xbf16>, vector<8xbf16>
// CHECK: kvcache.page_store_scale
// CHECK: kvcache.page_store %{{.*}} : !kvcache.paged_cache<{{.*}}>, vector<8xf8E5M2>
func.func @store_block(%k: !b, %new: memref<?x2x64xbf16>, %offsets: memref<?xi32>) {
  kvcache.store_ragged %k, %new, %offsets : !b, memref<?x2x64xbf16>, memref<?xi32>
  return
}

// -----

// attention_ragged over a quantized cache reads K and V rows as f32 in the
// kernel; q and out are bf16 here. token_head: a head row is one scale
// group: the decode kernel converts its codes (through f16) and folds the
// block's 16 row scales into each head's scores (K) and its softmax
// weights (V) instead of multiplying every element. The f16 of an E4M3FN
// code is its value / 2^8: the scales are multiplied by 2^8 instead.
!t = !kvcache.paged_cache<f8E4M3FN, num_heads = 2, head_size = 64, page_size = 4, scales = token_head>
// CHECK-LABEL: func.func @attention_token_head(
// CHECK: vector.load %{{.*}} : memref<?x4x64xbf16>, vector<64xbf16>
// The decode kernel (pages of 4: a lookup per key): the codes of a key.
// CHECK: %[[KCODES:.*]] = kvcache.page_load %arg1{{.*}} -> vector<64xf8E4M3FN>
// CHECK: arith.bitcast %[[KCODES]] : vector<64xf8E4M3FN> to vector<64xi8>
// CHECK: %[[K:.*]] = arith.extf %{{.*}} : vector<64xf16> to vector<64xf32>
// CHECK-NOT: kvcache.page_load_scale
// CHECK: vector.extract_strided_slice %[[K]] {offsets = [0], sizes = [16], strides = [1]}
// The block's 16 K scales, one vector times 2^8, multiply each of the
// pass's 2 heads' vector of scores.
// CHECK-COUNT-16: kvcache.page_load_scale %arg1
// CHECK-NEXT: %[[KS:.*]] = vector.from_elements
// CHECK-NEXT: %[[C256:.*]] = arith.constant dense<2.560000e+02> : vector<16xf32>
// CHECK-NEXT: %[[KSCALES:.*]] = arith.mulf %[[KS]], %[[C256]] : vector<16xf32>
// CHECK-NEXT: arith.mulf %{{.*}}, %[[KSCALES]] : vector<16xf32>
// CHECK-NEXT: arith.select
// CHECK-NEXT: arith.mulf %{{.*}}, %[[KSCALES]] : vector<16xf32>
// The V scales multiply the weights P V takes.
// CHECK-COUNT-16: kvcache.page_load_scale %arg2
// CHECK-NEXT: %[[VS:.*]] = vector.from_elements
// CHECK-NEXT: %[[C256V:.*]] = arith.constant dense<2.560000e+02> : vector<16xf32>
// CHECK-NEXT: %[[VSCALES:.*]] = arith.mulf %[[VS]], %[[C256V]] : vector<16xf32>
// CHECK: %[[W:.*]] = arith.mulf %{{.*}}, %[[VSCALES]] : vector<16xf32>
// CHECK: vector.store %[[W]], %{{.*}}[%c0{{.*}}, %c0{{.*}}] : memref<2x16xf32>, vector<16xf32>
// CHECK: kvcache.page_load %arg2{{.*}} -> vector<16xf8E4M3FN>
// CHECK: arith.truncf %{{.*}} : vector<64xf32> to vector<64xbf16>
// CHECK: vector.store %{{.*}} : memref<?x4x64xbf16>, vector<64xbf16>
func.func @attention_token_head(%q: memref<?x4x64xbf16>, %k: !t, %v: !t, %offsets: memref<?xi32>, %out: memref<?x4x64xbf16>) {
  kvcache.attention_ragged %q, %k, %v, %offsets, %out {scale = 0.125 : f32}
      : memref<?x4x64xbf16>, !t, !t, memref<?xi32>, memref<?x4x64xbf16>
  return
}

// -----

// block<32>: two loads of one group each, put together.
!b = !kvcache.paged_cache<i8, num_heads = 2, head_size = 64, page_size = 4, scales = block<32>>
// CHECK-LABEL: func.func @attention_block(
// CHECK: %[[LO:.*]] = kvcache.page_load %{{.*}}[%{{.*}}, %{{.*}}, %{{.*}}, %c0{{.*}}] : {{.*}} -> vector<32xf32>
// CHECK: %[[ROW:.*]] = vector.insert_strided_slice %[[LO]], %{{.*}} {offsets = [0], strides = [1]} : vector<32xf32> into vector<64xf32>
// CHECK: %[[HI:.*]] = kvcache.page_load %{{.*}}[%{{.*}}, %{{.*}}, %{{.*}}, %c32{{.*}}] : {{.*}} -> vector<32xf32>
// CHECK: vector.insert_strided_slice %[[HI]], %[[ROW]] {offsets = [32], strides = [1]} : vector<32xf32> into vector<64xf32>
func.func @attention_block(%q: memref<?x2x64xf32>, %k: !b, %v: !b, %offsets: memref<?xi32>, %out: memref<?x2x64xf32>) {
  kvcache.attention_ragged %q, %k, %v, %offsets, %out {scale = 0.125 : f32}
      : memref<?x2x64xf32>, !b, !b, memref<?xi32>, memref<?x2x64xf32>
  return
}
