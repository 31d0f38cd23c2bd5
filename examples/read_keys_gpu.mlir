// A user kernel written with the kvcache access ops, compiled to PTX by
// scripts/demo.sh:
//
//   kvcache-compile examples/read_keys_gpu.mlir -o read_keys.ptx [--chip sm_90]
//
// @gather_keys copies the keys of layer `layer` of the first `num_tokens`
// tokens of sequence `batch` into `out` ([token, head, element]): one block
// per token, 128 threads, each moving 8 f16 elements (16 bytes) with one
// 128-bit load and one 128-bit store.

!collection = !kvcache.paged_collection<f16, num_heads = 8, head_size = 128, page_size = 16>
!cache = !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>

module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @gather_keys(%key_cache: !cache, %batch: index, %out: memref<?x8x128xf16>) kernel
        attributes {known_block_size = array<i32: 128, 1, 1>} {
      %token = gpu.block_id x
      %thread = gpu.thread_id x
      %c8 = arith.constant 8 : index
      %c16 = arith.constant 16 : index
      %head = arith.divui %thread, %c16 : index
      %chunk = arith.remui %thread, %c16 : index
      %element = arith.muli %chunk, %c8 : index
      %keys = kvcache.load %key_cache[%batch, %head, %token, %element] : !cache -> vector<8xf16>
      vector.store %keys, %out[%token, %head, %element] {alignment = 16} : memref<?x8x128xf16>, vector<8xf16>
      gpu.return
    }
  }

  // Host side: builds the collection and launches the kernel on layer 0.
  func.func @launch_gather_keys(%blocks: memref<?x2x?x16x8x128xf16>,
                                %cache_lengths: memref<?xi32>,
                                %lookup_table: memref<?x?xi32>,
                                %max_seq_length: i32, %max_cache_length: i32,
                                %batch: index, %num_tokens: index,
                                %out: memref<?x8x128xf16>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c128 = arith.constant 128 : index
    %collection = kvcache.paged_collection %blocks, %cache_lengths, %lookup_table, %max_seq_length, %max_cache_length
        : memref<?x2x?x16x8x128xf16>, memref<?xi32>, memref<?x?xi32> -> !collection
    %key_cache = kvcache.get_key_cache %collection[%c0] : !collection
    gpu.launch_func @kernels::@gather_keys blocks in (%num_tokens, %c1, %c1) threads in (%c128, %c1, %c1)
        args(%key_cache : !cache, %batch : index, %out : memref<?x8x128xf16>)
    return
  }
}
