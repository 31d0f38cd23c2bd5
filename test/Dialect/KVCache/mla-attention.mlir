// RUN: kvcache-opt %s | kvcache-opt | FileCheck %s
// RUN: kvcache-opt %s --mlir-print-op-generic | kvcache-opt | FileCheck %s

// mla_attention_ragged (docs/Contract.md 4.7): one latent cache, out of
// v_head_size elements per head, attention_ragged's clauses and forms.

!m = !kvcache.paged_cache<bf16, num_heads = 1, head_size = 576, page_size = 64, mla = true>

// CHECK-LABEL: func.func @decode(
// CHECK: kvcache.mla_attention_ragged %{{[a-z0-9]+}}, %{{[a-z0-9]+}}, %{{[a-z0-9]+}}, %{{[a-z0-9]+}} {scale = 1.250000e-01 : f32, v_head_size = 512 : i64} : memref<?x128x576xbf16>, !kvcache.paged_cache<bf16, num_heads = 1, head_size = 576, page_size = 64, mla = true>, memref<?xi32>, memref<?x128x512xbf16>{{$}}
// CHECK: kvcache.mla_attention_ragged %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} sinks(%{{.*}}) alibi(%{{.*}}) lse(%{{.*}}) {scale = 1.250000e-01 : f32, softcap = 3.000000e+01 : f32, v_head_size = 512 : i64, window = 128 : i64} : memref<?x128x576xbf16>, {{.*}}, memref<?xi32>, memref<?x128x512xbf16>, memref<?xf32>, memref<128xf32>, memref<128xf32>, memref<?x128xf32>
func.func @decode(%q: memref<?x128x576xbf16>, %k: !m, %o: memref<?xi32>, %out: memref<?x128x512xbf16>,
                  %ws: memref<?xf32>, %sinks: memref<128xf32>, %slopes: memref<128xf32>, %lse: memref<?x128xf32>) {
  kvcache.mla_attention_ragged %q, %k, %o, %out {scale = 0.125 : f32, v_head_size = 512 : i64}
      : memref<?x128x576xbf16>, !m, memref<?xi32>, memref<?x128x512xbf16>
  kvcache.mla_attention_ragged %q, %k, %o, %out, %ws sinks(%sinks) alibi(%slopes) lse(%lse)
      {scale = 0.125 : f32, v_head_size = 512 : i64, softcap = 30.0 : f32, window = 128 : i64}
      : memref<?x128x576xbf16>, !m, memref<?xi32>, memref<?x128x512xbf16>, memref<?xf32>, memref<128xf32>, memref<128xf32>, memref<?x128xf32>
  return
}

// The tensor form returns out, then lse; the workspace stays a memref.
// CHECK-LABEL: func.func @tensors(
// CHECK: kvcache.mla_attention_ragged %{{.*}} lse(%{{.*}}) {noncausal, scale = 1.250000e-01 : f32, v_head_size = 64 : i64} : tensor<?x16x96xf16>, !kvcache.paged_cache<f8E4M3FN, num_heads = 1, head_size = 96, page_size = 1, mla = true, scales = token_head>, tensor<?xi32>, tensor<?x16x64xf16>, memref<?xf32>, tensor<?x16xf32> -> tensor<?x16x64xf16>, tensor<?x16xf32>
func.func @tensors(%q: tensor<?x16x96xf16>, %k: !kvcache.paged_cache<f8E4M3FN, num_heads = 1, head_size = 96, page_size = 1, mla = true, scales = token_head>,
                   %o: tensor<?xi32>, %out: tensor<?x16x64xf16>, %ws: memref<?xf32>, %lse: tensor<?x16xf32>) -> (tensor<?x16x64xf16>, tensor<?x16xf32>) {
  %r, %l = kvcache.mla_attention_ragged %q, %k, %o, %out, %ws lse(%lse) {noncausal, scale = 0.125 : f32, v_head_size = 64 : i64}
      : tensor<?x16x96xf16>, !kvcache.paged_cache<f8E4M3FN, num_heads = 1, head_size = 96, page_size = 1, mla = true, scales = token_head>, tensor<?xi32>, tensor<?x16x64xf16>, memref<?xf32>, tensor<?x16xf32> -> tensor<?x16x64xf16>, tensor<?x16xf32>
  return %r, %l : tensor<?x16x64xf16>, tensor<?x16xf32>
}
