// RUN: kvcache-opt %s -split-input-file --one-shot-bufferize="bufferize-function-boundaries function-boundary-type-conversion=identity-layout-map" | FileCheck %s
// RUN: %mlir_opt --load-dialect-plugin=%kvcache_plugin %s -split-input-file --one-shot-bufferize="bufferize-function-boundaries function-boundary-type-conversion=identity-layout-map" | FileCheck %s

// one-shot-bufferize turns the kernel ops' tensor form into their memref form
// (docs/Contract.md section 3.5), in kvcache-opt and in the stock mlir-opt
// with the plugin, in place: an init that is not read again is written where
// it is, with no copy and no allocation.

!k = !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>

// CHECK-LABEL: func.func @attention
// CHECK-SAME: (%[[Q:.*]]: memref<?x32x128xf16>, %[[K:.*]]: !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, %[[O:.*]]: memref<3xi32>, %[[OUT:.*]]: memref<?x32x128xf16>, %[[LSE:.*]]: memref<?x32xf32>, %[[WS:.*]]: memref<?xf32>, %[[S:.*]]: memref<32xf32>, %[[A:.*]]: memref<32xf32>)
// CHECK-NOT: memref.alloc
// CHECK-NOT: memref.copy
// CHECK: kvcache.attention_ragged %[[Q]], %[[K]], %[[K]], %[[O]], %[[OUT]], %[[WS]] sinks(%[[S]]) alibi(%[[A]]) lse(%[[LSE]]) {scale = 1.250000e-01 : f32, window = 64 : i64} : memref<?x32x128xf16>, !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, memref<3xi32>, memref<?x32x128xf16>, memref<?xf32>, memref<32xf32>, memref<32xf32>, memref<?x32xf32>{{$}}
// CHECK-NEXT: return %[[OUT]], %[[LSE]]
func.func @attention(%q: tensor<?x32x128xf16>, %k: !k, %o: tensor<3xi32>,
                     %out: tensor<?x32x128xf16>, %lse: tensor<?x32xf32>,
                     %ws: memref<?xf32>, %s: tensor<32xf32>, %a: tensor<32xf32>)
    -> (tensor<?x32x128xf16>, tensor<?x32xf32>) {
  %r:2 = kvcache.attention_ragged %q, %k, %k, %o, %out, %ws sinks(%s) alibi(%a) lse(%lse)
      {scale = 0.125 : f32, window = 64 : i64}
      : tensor<?x32x128xf16>, !k, !k, tensor<3xi32>, tensor<?x32x128xf16>, memref<?xf32>, tensor<32xf32>, tensor<32xf32>, tensor<?x32xf32> -> tensor<?x32x128xf16>, tensor<?x32xf32>
  return %r#0, %r#1 : tensor<?x32x128xf16>, tensor<?x32xf32>
}

// -----

!m = !kvcache.paged_cache<bf16, num_heads = 1, head_size = 576, page_size = 64, mla = true>

// mla_attention_ragged: q of head_size, out of v_head_size elements.
// CHECK-LABEL: func.func @mla_attention
// CHECK-SAME: (%[[Q:.*]]: memref<?x16x576xbf16>, %[[K:.*]]: !kvcache.paged_cache<bf16, num_heads = 1, head_size = 576, page_size = 64, mla = true>, %[[O:.*]]: memref<3xi32>, %[[OUT:.*]]: memref<?x16x512xbf16>, %[[LSE:.*]]: memref<?x16xf32>)
// CHECK-NOT: memref.alloc
// CHECK-NOT: memref.copy
// CHECK: kvcache.mla_attention_ragged %[[Q]], %[[K]], %[[O]], %[[OUT]] lse(%[[LSE]]) {scale = 1.250000e-01 : f32, v_head_size = 512 : i64} : memref<?x16x576xbf16>, !kvcache.paged_cache<bf16, num_heads = 1, head_size = 576, page_size = 64, mla = true>, memref<3xi32>, memref<?x16x512xbf16>, memref<?x16xf32>{{$}}
// CHECK-NEXT: return %[[OUT]], %[[LSE]]
func.func @mla_attention(%q: tensor<?x16x576xbf16>, %k: !m, %o: tensor<3xi32>,
                         %out: tensor<?x16x512xbf16>, %lse: tensor<?x16xf32>)
    -> (tensor<?x16x512xbf16>, tensor<?x16xf32>) {
  %r:2 = kvcache.mla_attention_ragged %q, %k, %o, %out lse(%lse)
      {scale = 0.125 : f32, v_head_size = 512 : i64}
      : tensor<?x16x576xbf16>, !m, tensor<3xi32>, tensor<?x16x512xbf16>, tensor<?x16xf32> -> tensor<?x16x512xbf16>, tensor<?x16xf32>
  return %r#0, %r#1 : tensor<?x16x512xbf16>, tensor<?x16xf32>
}

// -----

// merge_states in place (out = out_a, lse = lse_a) needs no copy either: it
// reads each (row, head) of out_a and lse_a before it writes it.
// CHECK-LABEL: func.func @merge_in_place
// CHECK-SAME: (%[[A:.*]]: memref<?x32x128xf16>, %[[LA:.*]]: memref<?x32xf32>, %[[B:.*]]: memref<?x32x128xf16>, %[[LB:.*]]: memref<?x32xf32>)
// CHECK-NOT: memref.alloc
// CHECK-NOT: memref.copy
// CHECK: kvcache.merge_states %[[A]], %[[LA]], %[[B]], %[[LB]], %[[A]], %[[LA]] : memref<?x32x128xf16>, memref<?x32xf32>, memref<?x32x128xf16>, memref<?x32xf32>, memref<?x32x128xf16>, memref<?x32xf32>{{$}}
// CHECK-NEXT: return %[[A]], %[[LA]]
func.func @merge_in_place(%a: tensor<?x32x128xf16>, %la: tensor<?x32xf32>,
                          %b: tensor<?x32x128xf16>, %lb: tensor<?x32xf32>)
    -> (tensor<?x32x128xf16>, tensor<?x32xf32>) {
  %m:2 = kvcache.merge_states %a, %la, %b, %lb, %a, %la
      : tensor<?x32x128xf16>, tensor<?x32xf32>, tensor<?x32x128xf16>, tensor<?x32xf32>, tensor<?x32x128xf16>, tensor<?x32xf32> -> tensor<?x32x128xf16>, tensor<?x32xf32>
  return %m#0, %m#1 : tensor<?x32x128xf16>, tensor<?x32xf32>
}

// -----

// A gather into a fresh tensor writes the one allocation tensor.empty
// becomes, uncopied.
!k = !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>
// CHECK-LABEL: func.func @gather_into_empty
// CHECK-SAME: (%[[K:.*]]: !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, %[[O:.*]]: memref<3xi32>, %[[N:.*]]: index)
// CHECK-NEXT: %[[ALLOC:.*]] = memref.alloc(%[[N]]) {{.*}} : memref<?x8x128xf16>
// CHECK-NEXT: kvcache.gather_ragged %[[K]], %[[ALLOC]], %[[O]] : !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, memref<?x8x128xf16>, memref<3xi32>{{$}}
// CHECK-NEXT: return %[[ALLOC]]
func.func @gather_into_empty(%k: !k, %o: tensor<3xi32>, %n: index) -> tensor<?x8x128xf16> {
  %e = tensor.empty(%n) : tensor<?x8x128xf16>
  %g = kvcache.gather_ragged %k, %e, %o : !k, tensor<?x8x128xf16>, tensor<3xi32> -> tensor<?x8x128xf16>
  return %g : tensor<?x8x128xf16>
}

// -----

// An init read again after the op is copied first (the positive control of
// the CHECK-NOTs above): the op writes the copy.
!k = !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>
// CHECK-LABEL: func.func @init_read_again
// CHECK-SAME: (%[[K:.*]]: !kvcache.paged_cache<{{.*}}>, %[[O:.*]]: memref<3xi32>, %[[OUT:.*]]: memref<?x8x128xf16>)
// CHECK: %[[COPY:.*]] = memref.alloc
// CHECK: memref.copy %[[OUT]], %[[COPY]]
// CHECK: kvcache.gather_ragged %[[K]], %[[COPY]], %[[O]]
// CHECK: return %[[COPY]], %[[OUT]]
func.func @init_read_again(%k: !k, %o: tensor<3xi32>, %out: tensor<?x8x128xf16>)
    -> (tensor<?x8x128xf16>, tensor<?x8x128xf16>) {
  %g = kvcache.gather_ragged %k, %out, %o : !k, tensor<?x8x128xf16>, tensor<3xi32> -> tensor<?x8x128xf16>
  return %g, %out : tensor<?x8x128xf16>, tensor<?x8x128xf16>
}

// -----

// store_ragged and copy_pages only read their tensors; the collection they
// write is a memref handle in this form.
!c = !kvcache.paged_collection<f16, num_heads = 8, head_size = 128, page_size = 16>
!k = !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>
// CHECK-LABEL: func.func @store_and_copy
// CHECK-SAME: (%[[K:.*]]: !kvcache.paged_cache<{{.*}}>, %[[C:.*]]: !kvcache.paged_collection<{{.*}}>, %[[ROWS:.*]]: memref<?x8x128xf16>, %[[O:.*]]: memref<3xi32>, %[[P:.*]]: memref<?x2xi32>)
// CHECK-NEXT: kvcache.store_ragged %[[K]], %[[ROWS]], %[[O]] : !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, memref<?x8x128xf16>, memref<3xi32>{{$}}
// CHECK-NEXT: kvcache.copy_pages %[[C]], %[[P]] : !kvcache.paged_collection<f16, num_heads = 8, head_size = 128, page_size = 16>, memref<?x2xi32>{{$}}
// CHECK-NEXT: return
func.func @store_and_copy(%k: !k, %c: !c, %rows: tensor<?x8x128xf16>, %o: tensor<3xi32>, %p: tensor<?x2xi32>) {
  kvcache.store_ragged %k, %rows, %o : !k, tensor<?x8x128xf16>, tensor<3xi32>
  kvcache.copy_pages %c, %p : !c, tensor<?x2xi32>
  return
}

// -----

// store_ragged's rope clause: its table and positions are read like the rows.
!k = !kvcache.paged_cache<f8E4M3FN, num_heads = 8, head_size = 128, page_size = 16, scales = token_head>
// CHECK-LABEL: func.func @store_rope
// CHECK-SAME: (%[[K:.*]]: !kvcache.paged_cache<{{.*}}>, %[[ROWS:.*]]: memref<?x8x128xbf16>, %[[O:.*]]: memref<3xi32>, %[[CS:.*]]: memref<?x64xf32>, %[[P:.*]]: memref<?xi32>)
// CHECK-NEXT: kvcache.store_ragged %[[K]], %[[ROWS]], %[[O]] rope(%[[CS]]) positions(%[[P]]) {rotary_dims = 64 : i64, style = "half"} : !kvcache.paged_cache<f8E4M3FN, num_heads = 8, head_size = 128, page_size = 16, scales = token_head>, memref<?x8x128xbf16>, memref<3xi32>, memref<?x64xf32>, memref<?xi32>{{$}}
// CHECK-NEXT: return
func.func @store_rope(%k: !k, %rows: tensor<?x8x128xbf16>, %o: tensor<3xi32>, %cs: tensor<?x64xf32>, %p: tensor<?xi32>) {
  kvcache.store_ragged %k, %rows, %o rope(%cs) positions(%p) {rotary_dims = 64 : i64, style = "half"}
      : !k, tensor<?x8x128xbf16>, tensor<3xi32>, tensor<?x64xf32>, tensor<?xi32>
  return
}

// -----

// attention_ragged's rope clause: its table and positions are read like q.
!k = !kvcache.paged_cache<bf16, num_heads = 8, head_size = 128, page_size = 16>
// CHECK-LABEL: func.func @attention_rope
// CHECK-SAME: (%[[Q:.*]]: memref<?x32x128xbf16>, %[[K:.*]]: !kvcache.paged_cache<{{.*}}>, %[[O:.*]]: memref<3xi32>, %[[OUT:.*]]: memref<?x32x128xbf16>, %[[CS:.*]]: memref<?x64xf32>, %[[P:.*]]: memref<?xi32>)
// CHECK-NOT: memref.alloc
// CHECK-NOT: memref.copy
// CHECK: kvcache.attention_ragged %[[Q]], %[[K]], %[[K]], %[[O]], %[[OUT]] rope(%[[CS]]) positions(%[[P]]) {rotary_dims = 64 : i64, scale = 1.250000e-01 : f32, style = "half"} : memref<?x32x128xbf16>, !kvcache.paged_cache<bf16, num_heads = 8, head_size = 128, page_size = 16>, !kvcache.paged_cache<bf16, num_heads = 8, head_size = 128, page_size = 16>, memref<3xi32>, memref<?x32x128xbf16>, memref<?x64xf32>, memref<?xi32>{{$}}
// CHECK-NEXT: return %[[OUT]]
func.func @attention_rope(%q: tensor<?x32x128xbf16>, %k: !k, %o: tensor<3xi32>, %out: tensor<?x32x128xbf16>,
                          %cs: tensor<?x64xf32>, %p: tensor<?xi32>) -> tensor<?x32x128xbf16> {
  %r = kvcache.attention_ragged %q, %k, %k, %o, %out rope(%cs) positions(%p) {rotary_dims = 64 : i64, scale = 0.125 : f32, style = "half"}
      : tensor<?x32x128xbf16>, !k, !k, tensor<3xi32>, tensor<?x32x128xbf16>, tensor<?x64xf32>, tensor<?xi32> -> tensor<?x32x128xbf16>
  return %r : tensor<?x32x128xbf16>
}

// -----

// rope_ragged into a distinct init writes it where it is, uncopied.
!k = !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>
// CHECK-LABEL: func.func @rope_into_init
// CHECK-SAME: (%[[Q:.*]]: memref<?x32x128xf16>, %[[K:.*]]: !kvcache.paged_cache<{{.*}}>, %[[O:.*]]: memref<3xi32>, %[[CS:.*]]: memref<?x128xf32>, %[[INIT:.*]]: memref<?x32x128xf16>)
// CHECK-NOT: memref.alloc
// CHECK-NOT: memref.copy
// CHECK: kvcache.rope_ragged %[[Q]], %[[K]], %[[O]], %[[CS]], %[[INIT]] {rotary_dims = 128 : i64, style = "interleaved"} : memref<?x32x128xf16>, !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, memref<3xi32>, memref<?x128xf32>, memref<?x32x128xf16>{{$}}
// CHECK-NEXT: return %[[INIT]]
func.func @rope_into_init(%q: tensor<?x32x128xf16>, %k: !k, %o: tensor<3xi32>, %cs: tensor<?x128xf32>,
                          %init: tensor<?x32x128xf16>) -> tensor<?x32x128xf16> {
  %r = kvcache.rope_ragged %q, %k, %o, %cs, %init {rotary_dims = 128 : i64, style = "interleaved"}
      : tensor<?x32x128xf16>, !k, tensor<3xi32>, tensor<?x128xf32>, tensor<?x32x128xf16> -> tensor<?x32x128xf16>
  return %r : tensor<?x32x128xf16>
}
