// attention_ragged kernels for the GPU check and benchmark
// (bench/gpu/bench_attention.py): f16, 8 KV heads x 128, GQA group 4
// (32 query heads), one kernel set per page size; and four shapes that take
// other paths of the lowering: @mqa64 (1 KV head, 64 query heads: 8 passes
// of 8 heads), @group9 (2 KV heads x 64, 18 query heads: 2 passes of 5
// heads, the last slot of the second pass masked), @tiny (heads of 1
// element: 128 keys per step, merged in a loop), @d96 (head size 96: 16
// lanes of 6 elements, no cp.async). Kernels and parameters
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

!mqa = !kvcache.paged_cache<f16, num_heads = 1, head_size = 128, page_size = 16>
func.func @mqa64(%q: memref<?x64x128xf16>, %k: !mqa, %v: !mqa, %rows: memref<?xi32>, %out: memref<?x64x128xf16>, %ws: memref<?xf32>) {
  kvcache.attention_ragged %q, %k, %v, %rows, %out, %ws {scale = 0.0883883 : f32}
    : memref<?x64x128xf16>, !mqa, !mqa, memref<?xi32>, memref<?x64x128xf16>, memref<?xf32>
  return
}

!group9 = !kvcache.paged_cache<f16, num_heads = 2, head_size = 64, page_size = 16>
func.func @group9(%q: memref<?x18x64xf16>, %k: !group9, %v: !group9, %rows: memref<?xi32>, %out: memref<?x18x64xf16>, %ws: memref<?xf32>) {
  kvcache.attention_ragged %q, %k, %v, %rows, %out, %ws {scale = 0.125 : f32}
    : memref<?x18x64xf16>, !group9, !group9, memref<?xi32>, memref<?x18x64xf16>, memref<?xf32>
  return
}

!tiny = !kvcache.paged_cache<f16, num_heads = 8, head_size = 1, page_size = 16>
func.func @tiny(%q: memref<?x256x1xf16>, %k: !tiny, %v: !tiny, %rows: memref<?xi32>, %out: memref<?x256x1xf16>, %ws: memref<?xf32>) {
  kvcache.attention_ragged %q, %k, %v, %rows, %out, %ws {scale = 1.0 : f32}
    : memref<?x256x1xf16>, !tiny, !tiny, memref<?xi32>, memref<?x256x1xf16>, memref<?xf32>
  return
}

!d96 = !kvcache.paged_cache<f16, num_heads = 8, head_size = 96, page_size = 16>
func.func @d96(%q: memref<?x32x96xf16>, %k: !d96, %v: !d96, %rows: memref<?xi32>, %out: memref<?x32x96xf16>, %ws: memref<?xf32>) {
  kvcache.attention_ragged %q, %k, %v, %rows, %out, %ws {scale = 0.1 : f32}
    : memref<?x32x96xf16>, !d96, !d96, memref<?xi32>, memref<?x32x96xf16>, memref<?xf32>
  return
}
