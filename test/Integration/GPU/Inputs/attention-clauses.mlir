// Attention with every optional clause on both attention kernels (the
// CUDA-core kernel: f32 and GQA 4 f16 with head 96; the tensor-core kernel:
// f16 GQA 8 and bf16 MQA 16 at head 128), each with a workspace (attention
// and merge kernels), and merge_states in f32, f16 and bf16.
// attention-clauses-ptxas.test compiles it; test_attention_variants.py runs
// the same clauses on the emulated GPU against the numpy reference.

!f32c = !kvcache.paged_cache<f32, num_heads = 8, head_size = 128, page_size = 16>
!f16c = !kvcache.paged_cache<f16, num_heads = 8, head_size = 96, page_size = 16>
!g8 = !kvcache.paged_cache<f16, num_heads = 4, head_size = 128, page_size = 16>
!mqa = !kvcache.paged_cache<bf16, num_heads = 1, head_size = 128, page_size = 1>

func.func @f32_all(%q: memref<?x32x128xf32>, %k: !f32c, %o: memref<?xi32>, %out: memref<?x32x128xf32>, %ws: memref<?xf32>, %sinks: memref<32xf32>, %slopes: memref<32xf32>, %lse: memref<?x32xf32>) {
  kvcache.attention_ragged %q, %k, %k, %o, %out, %ws sinks(%sinks) alibi(%slopes) lse(%lse)
      {scale = 0.0883883 : f32, softcap = 30.0 : f32, window = 4096 : i64}
      : memref<?x32x128xf32>, !f32c, !f32c, memref<?xi32>, memref<?x32x128xf32>, memref<?xf32>, memref<32xf32>, memref<32xf32>, memref<?x32xf32>
  return
}

func.func @f16_noncausal(%q: memref<?x32x96xf16>, %k: !f16c, %o: memref<?xi32>, %out: memref<?x32x96xf16>, %ws: memref<?xf32>, %sinks: memref<32xf32>, %lse: memref<?x32xf32>) {
  kvcache.attention_ragged %q, %k, %k, %o, %out, %ws sinks(%sinks) lse(%lse)
      {scale = 0.1 : f32, noncausal}
      : memref<?x32x96xf16>, !f16c, !f16c, memref<?xi32>, memref<?x32x96xf16>, memref<?xf32>, memref<32xf32>, memref<?x32xf32>
  return
}

func.func @gqa8_all(%q: memref<?x32x128xf16>, %k: !g8, %o: memref<?xi32>, %out: memref<?x32x128xf16>, %ws: memref<?xf32>, %sinks: memref<32xf32>, %slopes: memref<32xf32>, %lse: memref<?x32xf32>) {
  kvcache.attention_ragged %q, %k, %k, %o, %out, %ws sinks(%sinks) alibi(%slopes) lse(%lse)
      {chunk = 8192 : i64, scale = 0.0883883 : f32, softcap = 50.0 : f32}
      : memref<?x32x128xf16>, !g8, !g8, memref<?xi32>, memref<?x32x128xf16>, memref<?xf32>, memref<32xf32>, memref<32xf32>, memref<?x32xf32>
  return
}

func.func @mqa16_cascade(%q: memref<?x16x128xbf16>, %k: !mqa, %o: memref<?xi32>, %out: memref<?x16x128xbf16>, %ws: memref<?xf32>, %lse: memref<?x16xf32>) {
  kvcache.attention_ragged %q, %k, %k, %o, %out, %ws lse(%lse)
      {noncausal, scale = 0.0883883 : f32}
      : memref<?x16x128xbf16>, !mqa, !mqa, memref<?xi32>, memref<?x16x128xbf16>, memref<?xf32>, memref<?x16xf32>
  return
}

func.func @merge_f32(%a: memref<?x32x128xf32>, %la: memref<?x32xf32>, %b: memref<?x32x128xf32>, %lb: memref<?x32xf32>) {
  kvcache.merge_states %a, %la, %b, %lb, %a, %la : memref<?x32x128xf32>, memref<?x32xf32>, memref<?x32x128xf32>, memref<?x32xf32>, memref<?x32x128xf32>, memref<?x32xf32>
  return
}

func.func @merge_f16(%a: memref<?x32x128xf16>, %la: memref<?x32xf32>, %b: memref<?x32x128xf16>, %lb: memref<?x32xf32>, %out: memref<?x32x128xf16>) {
  kvcache.merge_states %a, %la, %b, %lb, %out : memref<?x32x128xf16>, memref<?x32xf32>, memref<?x32x128xf16>, memref<?x32xf32>, memref<?x32x128xf16>
  return
}

func.func @merge_bf16(%a: memref<?x16x64xbf16>, %la: memref<?x16xf32>, %b: memref<?x16x64xbf16>, %lb: memref<?x16xf32>, %out: memref<?x16x64xbf16>, %lse: memref<?x16xf32>) {
  kvcache.merge_states %a, %la, %b, %lb, %out, %lse : memref<?x16x64xbf16>, memref<?x16xf32>, memref<?x16x64xbf16>, memref<?x16xf32>, memref<?x16x64xbf16>, memref<?x16xf32>
  return
}
