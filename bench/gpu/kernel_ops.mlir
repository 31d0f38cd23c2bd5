// The kernel ops whose GPU kernels bench/gpu/bench_kernel_ops.py times.
// convert-kvcache-to-gpu names each kernel <function>_<op> and gives it the
// op's operands as parameters, in order (docs/KernelABI.md):
//   bench_store_ragged   (cache, values, row_offsets)    grid min(ceil(rows / 16), 65535), block 256
//   bench_gather_ragged  (cache, out, ctx_offsets)       grid min(ceil(rows / 16), 65535), block 256
// (8 warps of 256 threads, each moving tiles of 2 rows of 8 x 128 f16.)
//   bench_copy_pages     (collection, pairs)             grid (min(pairs, 65535), layers), block 256

!collection = !kvcache.paged_collection<f16, num_heads = 8, head_size = 128, page_size = 16>
!cache = !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>

func.func @bench(%key_cache: !cache, %collection: !collection,
                 %rows: memref<?x8x128xf16>, %offsets: memref<?xi32>,
                 %pairs: memref<?x2xi32>) {
  kvcache.store_ragged %key_cache, %rows, %offsets : !cache, memref<?x8x128xf16>, memref<?xi32>
  kvcache.gather_ragged %key_cache, %rows, %offsets : !cache, memref<?x8x128xf16>, memref<?xi32>
  kvcache.copy_pages %collection, %pairs : !collection, memref<?x2xi32>
  return
}
