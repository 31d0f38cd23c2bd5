// Kernels the GPU check (bench/gpu/run.sh) runs on random paged caches and
// compares with a numpy model of docs/Contract.md section 1. All use a cache
// of 8 KV heads x 128 f16 elements, page size 16, one 16-byte vector per
// thread.

!cache = !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>

gpu.module @kernels {
  // out[token] = K or V rows [token] of sequence `batch`: one block per
  // token, 128 threads.
  gpu.func @read_rows(%cache: !cache, %batch: index, %out: memref<?x8x128xf16>) kernel
      attributes {known_block_size = array<i32: 128, 1, 1>} {
    %token = gpu.block_id x
    %thread = gpu.thread_id x
    %c8 = arith.constant 8 : index
    %c16 = arith.constant 16 : index
    %head = arith.divui %thread, %c16 : index
    %chunk = arith.remui %thread, %c16 : index
    %start = arith.muli %chunk, %c8 : index
    %x = kvcache.load %cache[%batch, %head, %token, %start] : !cache -> vector<8xf16>
    vector.store %x, %out[%token, %head, %start] {alignment = 16} : memref<?x8x128xf16>, vector<8xf16>
    gpu.return
  }

  // Rows of `rows` written at token positions cache_length(batch) + token.
  gpu.func @append_rows(%cache: !cache, %batch: index, %rows: memref<?x8x128xf16>) kernel
      attributes {known_block_size = array<i32: 128, 1, 1>} {
    %token = gpu.block_id x
    %thread = gpu.thread_id x
    %c8 = arith.constant 8 : index
    %c16 = arith.constant 16 : index
    %head = arith.divui %thread, %c16 : index
    %chunk = arith.remui %thread, %c16 : index
    %start = arith.muli %chunk, %c8 : index
    %length = kvcache.cache_length %cache[%batch] : !cache
    %position = arith.addi %length, %token : index
    %x = vector.load %rows[%token, %head, %start] {alignment = 16} : memref<?x8x128xf16>, vector<8xf16>
    kvcache.store %x, %cache[%batch, %head, %position, %start] : !cache, vector<8xf16>
    gpu.return
  }

  // Sums, in f32, head `thread` of the 16 tokens of the tile starting at
  // 16 * block: tile + page arithmetic resolved once per tile.
  gpu.func @tile_head_sums(%cache: !cache, %batch: index, %sums: memref<?x8xf32>) kernel
      attributes {known_block_size = array<i32: 8, 1, 1>} {
    %tile_index = gpu.block_id x
    %head = gpu.thread_id x
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c8 = arith.constant 8 : index
    %c16 = arith.constant 16 : index
    %c128 = arith.constant 128 : index
    %zero = arith.constant 0.0 : f32
    %first = arith.muli %tile_index, %c16 : index
    %tile = kvcache.tile %cache[%batch, %first, %head] : !cache -> memref<16x128xf16, strided<[1024, 1], offset: ?>>
    %sum = scf.for %row = %c0 to %c16 step %c1 iter_args(%acc = %zero) -> (f32) {
      %row_sum = scf.for %d = %c0 to %c128 step %c8 iter_args(%racc = %acc) -> (f32) {
        %v = vector.load %tile[%row, %d] : memref<16x128xf16, strided<[1024, 1], offset: ?>>, vector<8xf16>
        %w = arith.extf %v : vector<8xf16> to vector<8xf32>
        %s = vector.reduction <add>, %w : vector<8xf32> into f32
        %next = arith.addf %racc, %s : f32
        scf.yield %next : f32
      }
      scf.yield %row_sum : f32
    }
    memref.store %sum, %sums[%tile_index, %head] : memref<?x8xf32>
    gpu.return
  }
}
