// One decode step of one layer written with the kvcache dialect: append the
// step's new K/V rows to the paged cache, then attend over each sequence's
// context. `scripts/demo.sh` canonicalizes it and compiles it to PTX
// (kvcache-compile), where each kernel op becomes a kernel:
// decode_step_store_ragged, decode_step_store_ragged_0,
// decode_step_attention_ragged and decode_step_attention_merge.

!collection = !kvcache.paged_collection<f16, num_heads = 8, head_size = 128, page_size = 16>
!cache = !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>

func.func @decode_step(%blocks: memref<?x2x?x16x8x128xf16>,
                       %cache_lengths: memref<?xi32>,
                       %lookup_table: memref<?x?xi32>,
                       %max_seq_length: i32, %max_cache_length: i32,
                       %layer: index,
                       %q: memref<?x32x128xf16>,
                       %new_keys: memref<?x8x128xf16>,
                       %new_values: memref<?x8x128xf16>,
                       %row_offsets: memref<?xi32>,
                       %out: memref<?x32x128xf16>,
                       %workspace: memref<?xf32>) {
  %collection = kvcache.paged_collection %blocks, %cache_lengths, %lookup_table, %max_seq_length, %max_cache_length
      : memref<?x2x?x16x8x128xf16>, memref<?xi32>, memref<?x?xi32> -> !collection
  %key_cache = kvcache.get_key_cache %collection[%layer] : !collection
  %value_cache = kvcache.get_value_cache %collection[%layer] : !collection
  kvcache.store_ragged %key_cache, %new_keys, %row_offsets : !cache, memref<?x8x128xf16>, memref<?xi32>
  kvcache.store_ragged %value_cache, %new_values, %row_offsets : !cache, memref<?x8x128xf16>, memref<?xi32>
  // 32 query heads share the 8 KV heads (GQA group 4); scale = 1/sqrt(128).
  kvcache.attention_ragged %q, %key_cache, %value_cache, %row_offsets, %out, %workspace {scale = 0.0883883 : f32}
      : memref<?x32x128xf16>, !cache, !cache, memref<?xi32>, memref<?x32x128xf16>, memref<?xf32>
  return
}

// Sums head `head` of token `token` of sequence `batch` in f32, reading the
// key cache 8 elements (16 bytes) at a time.
func.func @key_row_sum(%key_cache: !cache, %batch: index, %head: index, %token: index) -> f32 {
  %c0 = arith.constant 0 : index
  %c8 = arith.constant 8 : index
  %c128 = arith.constant 128 : index
  %zero = arith.constant 0.0 : f32
  %sum = scf.for %d = %c0 to %c128 step %c8 iter_args(%acc = %zero) -> (f32) {
    %chunk = kvcache.load %key_cache[%batch, %head, %token, %d] : !cache -> vector<8xf16>
    %wide = arith.extf %chunk : vector<8xf16> to vector<8xf32>
    %partial = vector.reduction <add>, %wide : vector<8xf32> into f32
    %next = arith.addf %acc, %partial : f32
    scf.yield %next : f32
  }
  return %sum : f32
}
