// attention_ragged kernels for the GPU check and benchmark
// (bench/gpu/bench_attention.py): f16, 8 KV heads x 128, GQA group 4
// (32 query heads), one kernel set per page size. Kernels and parameters
// (docs/KernelABI.md):
//   <function>_attention_ragged (q, key_cache, value_cache, row_offsets, out[, workspace])
//       grid (min(rows, 65535), kv_heads, splits), block .maxntid
//   <function>_attention_merge  (workspace, row_offsets, out, splits)
//       grid (min(rows, 65535), q_heads), block .maxntid

!cache1 = !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 1>
!cache16 = !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>
!cache128 = !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 128>
!cache256 = !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 256>

func.func @page1(%q: memref<?x32x128xf16>, %k: !cache1, %v: !cache1, %rows: memref<?xi32>, %out: memref<?x32x128xf16>, %ws: memref<?xf32>) {
  kvcache.attention_ragged %q, %k, %v, %rows, %out, %ws {scale = 0.0883883 : f32}
    : memref<?x32x128xf16>, !cache1, !cache1, memref<?xi32>, memref<?x32x128xf16>, memref<?xf32>
  return
}
func.func @page16(%q: memref<?x32x128xf16>, %k: !cache16, %v: !cache16, %rows: memref<?xi32>, %out: memref<?x32x128xf16>, %ws: memref<?xf32>) {
  kvcache.attention_ragged %q, %k, %v, %rows, %out, %ws {scale = 0.0883883 : f32}
    : memref<?x32x128xf16>, !cache16, !cache16, memref<?xi32>, memref<?x32x128xf16>, memref<?xf32>
  return
}
func.func @page128(%q: memref<?x32x128xf16>, %k: !cache128, %v: !cache128, %rows: memref<?xi32>, %out: memref<?x32x128xf16>, %ws: memref<?xf32>) {
  kvcache.attention_ragged %q, %k, %v, %rows, %out, %ws {scale = 0.0883883 : f32}
    : memref<?x32x128xf16>, !cache128, !cache128, memref<?xi32>, memref<?x32x128xf16>, memref<?xf32>
  return
}
func.func @page256(%q: memref<?x32x128xf16>, %k: !cache256, %v: !cache256, %rows: memref<?xi32>, %out: memref<?x32x128xf16>, %ws: memref<?xf32>) {
  kvcache.attention_ragged %q, %k, %v, %rows, %out, %ws {scale = 0.0883883 : f32}
    : memref<?x32x128xf16>, !cache256, !cache256, memref<?xi32>, memref<?x32x128xf16>, memref<?xf32>
  return
}
