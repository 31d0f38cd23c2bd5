// The decode step of decode_step.mlir on a continuous-batching cache
// (MAX's ContinuousBatchingKVCacheCollection): every sequence owns one block
// of block_tokens token slots (a run-time size: the `?` in dim 3 of
// `blocks`), and the lookup table is 1-D, the block of each sequence. Only
// the types and the constructor differ from the paged step: the ops and
// their lowerings are the same, through the collection type interfaces.
// `scripts/demo.sh` compiles it to PTX (kvcache-compile).

!collection = !kvcache.continuous_collection<f16, num_heads = 8, head_size = 128>
!cache = !kvcache.continuous_cache<f16, num_heads = 8, head_size = 128>

func.func @continuous_decode_step(%blocks: memref<?x2x?x?x8x128xf16>,
                                  %cache_lengths: memref<?xi32>,
                                  %lookup_table: memref<?xi32>,
                                  %max_seq_length: i32, %max_cache_length: i32,
                                  %layer: index,
                                  %q: memref<?x32x128xf16>,
                                  %new_keys: memref<?x8x128xf16>,
                                  %new_values: memref<?x8x128xf16>,
                                  %row_offsets: memref<?xi32>,
                                  %out: memref<?x32x128xf16>,
                                  %workspace: memref<?xf32>) {
  %collection = kvcache.continuous_collection %blocks, %cache_lengths, %lookup_table, %max_seq_length, %max_cache_length
      : memref<?x2x?x?x8x128xf16>, memref<?xi32>, memref<?xi32> -> !collection
  %key_cache = kvcache.get_key_cache %collection[%layer] : !collection
  %value_cache = kvcache.get_value_cache %collection[%layer] : !collection
  kvcache.store_ragged %key_cache, %new_keys, %row_offsets : !cache, memref<?x8x128xf16>, memref<?xi32>
  kvcache.store_ragged %value_cache, %new_values, %row_offsets : !cache, memref<?x8x128xf16>, memref<?xi32>
  kvcache.attention_ragged %q, %key_cache, %value_cache, %row_offsets, %out, %workspace {scale = 0.0883883 : f32}
      : memref<?x32x128xf16>, !cache, !cache, memref<?xi32>, memref<?x32x128xf16>, memref<?xf32>
  return
}
