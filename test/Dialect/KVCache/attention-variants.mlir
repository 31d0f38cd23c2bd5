// RUN: kvcache-opt %s | kvcache-opt | FileCheck %s
// RUN: kvcache-opt %s --mlir-print-op-generic | kvcache-opt | FileCheck %s

// attention_ragged's optional clauses (docs/Contract.md 3.3): keyword
// operands in the order sinks, alibi, lse after the workspace; attributes
// printed in the dictionary's (alphabetical) order; the types list every
// operand in operand order. And merge_states, in place.

!c = !kvcache.paged_cache<bf16, num_heads = 8, head_size = 128, page_size = 16>

// CHECK-LABEL: func.func @every_clause(
// CHECK: kvcache.attention_ragged %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} sinks(%{{.*}}) alibi(%{{.*}}) lse(%{{.*}}) {scale = 1.250000e-01 : f32, softcap = 3.000000e+01 : f32, window = 4096 : i64} : memref<?x32x128xbf16>, !kvcache.paged_cache<bf16, num_heads = 8, head_size = 128, page_size = 16>, !kvcache.paged_cache<bf16, num_heads = 8, head_size = 128, page_size = 16>, memref<?xi32>, memref<?x32x128xbf16>, memref<?xf32>, memref<32xf32>, memref<32xf32>, memref<?x32xf32>
func.func @every_clause(%q: memref<?x32x128xbf16>, %k: !c, %v: !c, %o: memref<?xi32>, %out: memref<?x32x128xbf16>,
                        %ws: memref<?xf32>, %sinks: memref<32xf32>, %slopes: memref<32xf32>, %lse: memref<?x32xf32>) {
  kvcache.attention_ragged %q, %k, %v, %o, %out, %ws sinks(%sinks) alibi(%slopes) lse(%lse)
      {scale = 0.125 : f32, softcap = 30.0 : f32, window = 4096 : i64}
      : memref<?x32x128xbf16>, !c, !c, memref<?xi32>, memref<?x32x128xbf16>, memref<?xf32>, memref<32xf32>, memref<32xf32>, memref<?x32xf32>
  return
}

// Without a workspace the clause operands' types follow out's.
// CHECK-LABEL: func.func @some_clauses(
// CHECK: kvcache.attention_ragged %{{[a-z0-9]+}}, %{{[a-z0-9]+}}, %{{[a-z0-9]+}}, %{{[a-z0-9]+}}, %{{[a-z0-9]+}} alibi(%{{.*}}) {chunk = 8192 : i64, scale = 1.250000e-01 : f32} : memref<?x32x128xbf16>, {{.*}}, memref<?xi32>, memref<?x32x128xbf16>, memref<32xf32>
// CHECK: kvcache.attention_ragged %{{[a-z0-9]+}}, %{{[a-z0-9]+}}, %{{[a-z0-9]+}}, %{{[a-z0-9]+}}, %{{[a-z0-9]+}} lse(%{{.*}}) {noncausal, scale = 1.250000e-01 : f32} : memref<?x32x128xbf16>, {{.*}}, memref<?xi32>, memref<?x32x128xbf16>, memref<?x32xf32>
// CHECK: kvcache.attention_ragged %{{[a-z0-9]+}}, %{{[a-z0-9]+}}, %{{[a-z0-9]+}}, %{{[a-z0-9]+}}, %{{[a-z0-9]+}} {scale = 1.250000e-01 : f32} : memref<?x32x128xbf16>, {{.*}}, memref<?xi32>, memref<?x32x128xbf16>{{$}}
func.func @some_clauses(%q: memref<?x32x128xbf16>, %k: !c, %v: !c, %o: memref<?xi32>, %out: memref<?x32x128xbf16>,
                        %slopes: memref<32xf32>, %lse: memref<?x32xf32>) {
  kvcache.attention_ragged %q, %k, %v, %o, %out alibi(%slopes) {scale = 0.125 : f32, chunk = 8192 : i64}
      : memref<?x32x128xbf16>, !c, !c, memref<?xi32>, memref<?x32x128xbf16>, memref<32xf32>
  kvcache.attention_ragged %q, %k, %v, %o, %out lse(%lse) {noncausal, scale = 0.125 : f32}
      : memref<?x32x128xbf16>, !c, !c, memref<?xi32>, memref<?x32x128xbf16>, memref<?x32xf32>
  kvcache.attention_ragged %q, %k, %v, %o, %out {scale = 0.125 : f32}
      : memref<?x32x128xbf16>, !c, !c, memref<?xi32>, memref<?x32x128xbf16>
  return
}

// CHECK-LABEL: func.func @merge(
// CHECK: kvcache.merge_states %[[A:.*]], %[[LA:.*]], %{{.*}}, %{{.*}}, %[[A]], %[[LA]] : memref<?x32x128xf16>, memref<?x32xf32>, memref<?x32x128xf16>, memref<?x32xf32>, memref<?x32x128xf16>, memref<?x32xf32>
// CHECK: kvcache.merge_states %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{[a-z0-9]+}} : memref<4x32x128xf32>, memref<4x32xf32>, memref<4x32x128xf32>, memref<4x32xf32>, memref<4x32x128xf32>{{$}}
func.func @merge(%a: memref<?x32x128xf16>, %la: memref<?x32xf32>, %b: memref<?x32x128xf16>, %lb: memref<?x32xf32>,
                 %c: memref<4x32x128xf32>, %lc: memref<4x32xf32>) {
  kvcache.merge_states %a, %la, %b, %lb, %a, %la : memref<?x32x128xf16>, memref<?x32xf32>, memref<?x32x128xf16>, memref<?x32xf32>, memref<?x32x128xf16>, memref<?x32xf32>
  kvcache.merge_states %c, %lc, %c, %lc, %c : memref<4x32x128xf32>, memref<4x32xf32>, memref<4x32x128xf32>, memref<4x32xf32>, memref<4x32x128xf32>
  return
}
