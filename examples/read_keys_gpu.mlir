// A user kernel written with the kvcache access ops, compiled to PTX by
// scripts/demo.sh:
//
//   kvcache-compile examples/read_keys_gpu.mlir -o read_keys.ptx [--chip sm_90]
//
// and run on the emulated GPU (any CPU, no GPU needed):
//
//   kvcache-opt examples/read_keys_gpu.mlir -kvcache-to-emulated-gpu |
//     mlir-runner -e main -entry-point-result=void \
//       -shared-libs=libmlir_c_runner_utils.so,libmlir_runner_utils.so,build/lib/libKVCacheGPUEmulator.so
//
// @gather_keys copies the keys of layer 0 of the first `num_tokens` tokens of
// sequence `batch` into `out` ([token, head, element]): one block per token,
// 128 threads, each moving 8 f16 elements (16 bytes) with one 128-bit load
// and one 128-bit store. @main fills a 3-page cache, gathers the 20 tokens of
// a sequence whose pages are 2 and 0, and prints two elements of each.

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

  // key[page, slot, head, element] = 512 page + 32 slot + 4 head + element % 4
  // (exact in f16); values are 0.
  func.func private @fill(%storage: memref<3x2x1x16x8x128xf16>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c3 = arith.constant 3 : index
    %c4 = arith.constant 4 : index
    %c8 = arith.constant 8 : index
    %c16 = arith.constant 16 : index
    %c32 = arith.constant 32 : index
    %c128 = arith.constant 128 : index
    %c512 = arith.constant 512 : index
    %zero = arith.constant 0.0 : f16
    scf.for %page = %c0 to %c3 step %c1 {
      scf.for %slot = %c0 to %c16 step %c1 {
        scf.for %head = %c0 to %c8 step %c1 {
          scf.for %element = %c0 to %c128 step %c1 {
            %p = arith.muli %page, %c512 : index
            %s = arith.muli %slot, %c32 : index
            %h = arith.muli %head, %c4 : index
            %e = arith.remui %element, %c4 : index
            %ps = arith.addi %p, %s : index
            %psh = arith.addi %ps, %h : index
            %sum = arith.addi %psh, %e : index
            %i32 = arith.index_cast %sum : index to i32
            %key = arith.sitofp %i32 : i32 to f16
            memref.store %key, %storage[%page, %c0, %c0, %slot, %head, %element] : memref<3x2x1x16x8x128xf16>
            memref.store %zero, %storage[%page, %c1, %c0, %slot, %head, %element] : memref<3x2x1x16x8x128xf16>
          }
        }
      }
    }
    return
  }

  func.func @main() {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c7 = arith.constant 7 : index
    %c20 = arith.constant 20 : index
    %c127 = arith.constant 127 : index
    %storage = memref.alloc() {alignment = 256 : i64} : memref<3x2x1x16x8x128xf16>
    call @fill(%storage) : (memref<3x2x1x16x8x128xf16>) -> ()
    %blocks = memref.cast %storage : memref<3x2x1x16x8x128xf16> to memref<?x2x?x16x8x128xf16>
    %lengths = memref.alloc() {alignment = 256 : i64} : memref<1xi32>
    %table = memref.alloc() {alignment = 256 : i64} : memref<1x2xi32>
    %twenty = arith.constant 20 : i32
    %zero = arith.constant 0 : i32
    %two = arith.constant 2 : i32
    memref.store %twenty, %lengths[%c0] : memref<1xi32>
    memref.store %two, %table[%c0, %c0] : memref<1x2xi32>
    memref.store %zero, %table[%c0, %c1] : memref<1x2xi32>
    %cache_lengths = memref.cast %lengths : memref<1xi32> to memref<?xi32>
    %lookup_table = memref.cast %table : memref<1x2xi32> to memref<?x?xi32>
    %rows = memref.alloc() {alignment = 256 : i64} : memref<20x8x128xf16>
    %out = memref.cast %rows : memref<20x8x128xf16> to memref<?x8x128xf16>
    call @launch_gather_keys(%blocks, %cache_lengths, %lookup_table, %zero, %twenty, %c0, %c20, %out)
        : (memref<?x2x?x16x8x128xf16>, memref<?xi32>, memref<?x?xi32>, i32, i32, index, index, memref<?x8x128xf16>) -> ()
    // Row 0: head 0, element 0 of each token; row 1: head 7, element 127.
    %picked = memref.alloc() : memref<2x20xf32>
    scf.for %token = %c0 to %c20 step %c1 {
      %first = memref.load %rows[%token, %c0, %c0] : memref<20x8x128xf16>
      %last = memref.load %rows[%token, %c7, %c127] : memref<20x8x128xf16>
      %first32 = arith.extf %first : f16 to f32
      %last32 = arith.extf %last : f16 to f32
      memref.store %first32, %picked[%c0, %token] : memref<2x20xf32>
      memref.store %last32, %picked[%c1, %token] : memref<2x20xf32>
    }
    %unranked = memref.cast %picked : memref<2x20xf32> to memref<*xf32>
    call @printMemrefF32(%unranked) : (memref<*xf32>) -> ()
    return
  }
  func.func private @printMemrefF32(memref<*xf32>)
}
