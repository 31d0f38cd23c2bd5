// RUN: kvcache-opt %s | kvcache-opt | FileCheck %s
// RUN: kvcache-opt %s --mlir-print-op-generic | kvcache-opt | FileCheck %s

// The rope clause of attention_ragged and mla_attention_ragged on q
// (docs/Contract.md 3.3): rope(%cos_sin) and the optional positions(...)
// after the other keyword operands, their types last, the attributes
// rotary_dims and style; with the other clauses, and in the tensor form.

!c = !kvcache.paged_cache<bf16, num_heads = 8, head_size = 128, page_size = 16>
!q = !kvcache.paged_cache<f8E4M3FN, num_heads = 8, head_size = 128, page_size = 16, scales = token_head>
!m = !kvcache.paged_cache<bf16, num_heads = 1, head_size = 576, page_size = 64, mla = true>

// CHECK-LABEL: func.func @rope(
// CHECK: kvcache.attention_ragged %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} rope(%{{.*}}) {rotary_dims = 128 : i64, scale = 1.250000e-01 : f32, style = "interleaved"} : memref<?x32x128xbf16>, !kvcache.paged_cache<bf16, num_heads = 8, head_size = 128, page_size = 16>, !kvcache.paged_cache<bf16, num_heads = 8, head_size = 128, page_size = 16>, memref<?xi32>, memref<?x32x128xbf16>, memref<?x128xf32>{{$}}
func.func @rope(%q: memref<?x32x128xbf16>, %k: !c, %v: !c, %o: memref<?xi32>, %out: memref<?x32x128xbf16>, %cs: memref<?x128xf32>) {
  kvcache.attention_ragged %q, %k, %v, %o, %out rope(%cs) {rotary_dims = 128 : i64, scale = 0.125 : f32, style = "interleaved"}
      : memref<?x32x128xbf16>, !c, !c, memref<?xi32>, memref<?x32x128xbf16>, memref<?x128xf32>
  return
}

// CHECK-LABEL: func.func @every_clause(
// CHECK: kvcache.attention_ragged %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} sinks(%{{.*}}) alibi(%{{.*}}) lse(%{{.*}}) rope(%{{.*}}) positions(%{{.*}}) {rotary_dims = 64 : i64, scale = 1.250000e-01 : f32, style = "half", window = 128 : i64} : memref<?x32x128xf16>, {{.*}}, memref<?xi32>, memref<?x32x128xf16>, memref<?xf32>, memref<32xf32>, memref<32xf32>, memref<?x32xf32>, memref<4096x64xf32>, memref<?xi32>{{$}}
func.func @every_clause(%q: memref<?x32x128xf16>, %k: !q, %o: memref<?xi32>, %out: memref<?x32x128xf16>, %w: memref<?xf32>, %s: memref<32xf32>, %a: memref<32xf32>, %l: memref<?x32xf32>, %cs: memref<4096x64xf32>, %p: memref<?xi32>) {
  kvcache.attention_ragged %q, %k, %k, %o, %out, %w sinks(%s) alibi(%a) lse(%l) rope(%cs) positions(%p)
      {rotary_dims = 64 : i64, scale = 0.125 : f32, style = "half", window = 128 : i64}
      : memref<?x32x128xf16>, !q, !q, memref<?xi32>, memref<?x32x128xf16>, memref<?xf32>, memref<32xf32>, memref<32xf32>, memref<?x32xf32>, memref<4096x64xf32>, memref<?xi32>
  return
}

// CHECK-LABEL: func.func @mla(
// CHECK: kvcache.mla_attention_ragged %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} rope(%{{.*}}) positions(%{{.*}}) {rotary_dims = 64 : i64, scale = 1.250000e-01 : f32, style = "interleaved", v_head_size = 512 : i64} : memref<?x16x576xbf16>, !kvcache.paged_cache<bf16, num_heads = 1, head_size = 576, page_size = 64, mla = true>, memref<?xi32>, memref<?x16x512xbf16>, memref<?x64xf32>, memref<?xi32>{{$}}
func.func @mla(%q: memref<?x16x576xbf16>, %k: !m, %o: memref<?xi32>, %out: memref<?x16x512xbf16>, %cs: memref<?x64xf32>, %p: memref<?xi32>) {
  kvcache.mla_attention_ragged %q, %k, %o, %out rope(%cs) positions(%p) {rotary_dims = 64 : i64, scale = 0.125 : f32, style = "interleaved", v_head_size = 512 : i64}
      : memref<?x16x576xbf16>, !m, memref<?xi32>, memref<?x16x512xbf16>, memref<?x64xf32>, memref<?xi32>
  return
}

// CHECK-LABEL: func.func @tensor_form(
// CHECK: %{{.*}}:2 = kvcache.attention_ragged %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} lse(%{{.*}}) rope(%{{.*}}) positions(%{{.*}}) {rotary_dims = 32 : i64, scale = 1.250000e-01 : f32, style = "half"} : tensor<?x32x128xbf16>, {{.*}}, tensor<?xi32>, tensor<?x32x128xbf16>, tensor<?x32xf32>, tensor<?x32xf32>, tensor<?xi32> -> tensor<?x32x128xbf16>, tensor<?x32xf32>{{$}}
func.func @tensor_form(%q: tensor<?x32x128xbf16>, %k: !c, %o: tensor<?xi32>, %out: tensor<?x32x128xbf16>, %l: tensor<?x32xf32>, %cs: tensor<?x32xf32>, %p: tensor<?xi32>) -> (tensor<?x32x128xbf16>, tensor<?x32xf32>) {
  %r:2 = kvcache.attention_ragged %q, %k, %k, %o, %out lse(%l) rope(%cs) positions(%p) {rotary_dims = 32 : i64, scale = 0.125 : f32, style = "half"}
      : tensor<?x32x128xbf16>, !c, !c, tensor<?xi32>, tensor<?x32x128xbf16>, tensor<?x32xf32>, tensor<?x32xf32>, tensor<?xi32> -> tensor<?x32x128xbf16>, tensor<?x32xf32>
  return %r#0, %r#1 : tensor<?x32x128xbf16>, tensor<?x32xf32>
}
