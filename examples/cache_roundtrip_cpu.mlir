// Runs on the CPU (scripts/demo.sh): builds a paged KV cache of 2 sequences
// over 5 pages of 4 tokens, appends one decode token per sequence through
// kvcache.store, and reads the keys back through kvcache.load.
//
//   kvcache-opt -kvcache-to-cpu examples/cache_roundtrip_cpu.mlir |
//     mlir-runner -e main -entry-point-result=void \
//       -shared-libs=libmlir_c_runner_utils.so,libmlir_runner_utils.so

!collection = !kvcache.paged_collection<f32, num_heads = 2, head_size = 8, page_size = 4>
!cache = !kvcache.paged_cache<f32, num_heads = 2, head_size = 8, page_size = 4>

// Sequence 0 holds 5 tokens (pages 3, 1), sequence 1 holds 2 (page 0);
// unused columns point at the null page 4.
memref.global "private" constant @lookup_table_init : memref<2x2xi32> = dense<[[3, 1], [0, 4]]>
memref.global "private" constant @cache_lengths_init : memref<2xi32> = dense<[5, 2]>

// Writes the new token of sequence `batch` (at position cache_length) with
// value 100 * batch + 10 * head + element.
func.func @append_token(%key_cache: !cache, %batch: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c8 = arith.constant 8 : index
  %position = kvcache.cache_length %key_cache[%batch] : !cache
  scf.for %head = %c0 to %c2 step %c1 {
    scf.for %element = %c0 to %c8 step %c1 {
      %value_index = affine.apply affine_map<(b, h, d) -> (b * 100 + h * 10 + d)>(%batch, %head, %element)
      %value_int = arith.index_cast %value_index : index to i32
      %value = arith.sitofp %value_int : i32 to f32
      kvcache.store %value, %key_cache[%batch, %head, %position, %element] : !cache, f32
    }
  }
  return
}

func.func @main() {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c4 = arith.constant 4 : index
  %zero = arith.constant 0.0 : f32
  %blocks = memref.alloc() : memref<5x2x1x4x2x8xf32>
  linalg.fill ins(%zero : f32) outs(%blocks : memref<5x2x1x4x2x8xf32>)
  %lookup_table_init = memref.get_global @lookup_table_init : memref<2x2xi32>
  %cache_lengths_init = memref.get_global @cache_lengths_init : memref<2xi32>
  %lookup_table = memref.cast %lookup_table_init : memref<2x2xi32> to memref<?x?xi32>
  %cache_lengths = memref.cast %cache_lengths_init : memref<2xi32> to memref<?xi32>
  %max_seq_length = arith.constant 1 : i32
  %max_cache_length = arith.constant 6 : i32
  %collection = kvcache.paged_collection %blocks, %cache_lengths, %lookup_table, %max_seq_length, %max_cache_length
      : memref<5x2x1x4x2x8xf32>, memref<?xi32>, memref<?x?xi32> -> !collection
  %key_cache = kvcache.get_key_cache %collection[%c0] : !collection

  scf.for %batch = %c0 to %c2 step %c1 {
    func.call @append_token(%key_cache, %batch) : (!cache, index) -> ()
    // Read head 1 of the new token back, 4 elements at a time.
    %position = kvcache.cache_length %key_cache[%batch] : !cache
    %low = kvcache.load %key_cache[%batch, %c1, %position, %c0] : !cache -> vector<4xf32>
    %high = kvcache.load %key_cache[%batch, %c1, %position, %c4] : !cache -> vector<4xf32>
    %page, %slot = kvcache.lookup %key_cache[%batch, %position] : !cache
    vector.print %page : index
    vector.print %slot : index
    vector.print %low : vector<4xf32>
    vector.print %high : vector<4xf32>
  }
  memref.dealloc %blocks : memref<5x2x1x4x2x8xf32>
  return
}
