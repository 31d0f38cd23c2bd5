// Found by kvcache-fuzz (UBSan): the type parameters are only checked to be
// > 0, so num_heads * head_size (getRowElements, rowElements) and the strides
// built from it overflow int64_t: in PagedCollectionOp::verify, in
// TileOp::verify (which then accepts a wrapped, negative row stride) and in
// the 1:N type conversion of convert-kvcache-to-memref. The type verifier
// now bounds one page of one layer.
// RUN: not kvcache-opt %s -split-input-file -convert-kvcache-to-memref 2>&1 | FileCheck %s

// CHECK: type-size-overflow.mlir:[[@LINE+1]]:{{[0-9]+}}: error: expected page_size * num_heads * head_size < 2^31 elements
func.func @load(%k: !kvcache.paged_cache<f16, num_heads = 4611686018427387904, head_size = 4, page_size = 16>, %b: index, %h: index, %t: index, %d: index) -> f16 {
  %x = kvcache.load %k[%b, %h, %t, %d] : !kvcache.paged_cache<f16, num_heads = 4611686018427387904, head_size = 4, page_size = 16> -> f16
  return %x : f16
}

// -----

// CHECK: type-size-overflow.mlir:[[@LINE+1]]:{{[0-9]+}}: error: expected page_size * num_heads * head_size < 2^31 elements
func.func @tile(%k: !kvcache.paged_cache<f16, num_heads = 3037000500, head_size = 3037000500, page_size = 16>, %b: index, %t: index, %h: index) {
  %x = kvcache.tile %k[%b, %t, %h] : !kvcache.paged_cache<f16, num_heads = 3037000500, head_size = 3037000500, page_size = 16> -> memref<16x3037000500xf16, strided<[-9223372036709301616, 1], offset: ?>>
  return
}

// -----

// CHECK: type-size-overflow.mlir:[[@LINE+2]]:{{[0-9]+}}: error: expected page_size * num_heads * head_size < 2^31 elements
func.func @collection(%blocks: memref<?x2x?x16x4611686018427387904x4xf16>, %cache_lengths: memref<?xi32>, %lookup_table: memref<?x?xi32>, %max_seq_length: i32, %max_cache_length: i32) {
  %c = kvcache.paged_collection %blocks, %cache_lengths, %lookup_table, %max_seq_length, %max_cache_length : memref<?x2x?x16x4611686018427387904x4xf16>, memref<?xi32>, memref<?x?xi32> -> !kvcache.paged_collection<f16, num_heads = 4611686018427387904, head_size = 4, page_size = 16>
  return
}
