// RUN: kvcache-opt %s | kvcache-opt | FileCheck %s
// RUN: kvcache-opt %s -mlir-print-op-generic | kvcache-opt | FileCheck %s

// The tensor forms of the kernel ops (docs/Contract.md section 3.5): every
// data operand a ranked tensor, the workspace a memref; gather_ragged,
// attention_ragged and merge_states return the new values of their inits
// (`out`, then `lse`) after `->`.

!c = !kvcache.paged_collection<f16, num_heads = 8, head_size = 128, page_size = 16>
!k = !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>

// CHECK-LABEL: func.func @tensor_kernel_ops
func.func @tensor_kernel_ops(%c: !c, %k: !k, %q: tensor<?x32x128xf16>,
                             %rows: tensor<?x8x128xf16>,
                             %offsets: tensor<3xi32>, %pairs: tensor<?x2xi32>,
                             %out: tensor<?x32x128xf16>, %lse: tensor<?x32xf32>,
                             %sinks: tensor<32xf32>, %ws: memref<?xf32>)
    -> (tensor<?x8x128xf16>, tensor<?x32x128xf16>, tensor<?x32x128xf16>,
        tensor<?x32xf32>, tensor<?x32x128xf16>, tensor<?x32xf32>) {
  // CHECK: kvcache.store_ragged %{{.*}}, %{{.*}}, %{{.*}} : !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, tensor<?x8x128xf16>, tensor<3xi32>{{$}}
  kvcache.store_ragged %k, %rows, %offsets : !k, tensor<?x8x128xf16>, tensor<3xi32>
  // CHECK: kvcache.copy_pages %{{.*}}, %{{.*}} : !kvcache.paged_collection<f16, num_heads = 8, head_size = 128, page_size = 16>, tensor<?x2xi32>{{$}}
  kvcache.copy_pages %c, %pairs : !c, tensor<?x2xi32>
  // CHECK: %[[G:.*]] = kvcache.gather_ragged %{{.*}}, %{{.*}}, %{{.*}} : !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, tensor<?x8x128xf16>, tensor<3xi32> -> tensor<?x8x128xf16>
  %g = kvcache.gather_ragged %k, %rows, %offsets : !k, tensor<?x8x128xf16>, tensor<3xi32> -> tensor<?x8x128xf16>
  // CHECK: %[[A:.*]] = kvcache.attention_ragged %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} {scale = 1.250000e-01 : f32} : tensor<?x32x128xf16>, !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, tensor<3xi32>, tensor<?x32x128xf16> -> tensor<?x32x128xf16>
  %a = kvcache.attention_ragged %q, %k, %k, %offsets, %out {scale = 0.125 : f32}
      : tensor<?x32x128xf16>, !k, !k, tensor<3xi32>, tensor<?x32x128xf16> -> tensor<?x32x128xf16>
  // CHECK: %[[B:.*]]:2 = kvcache.attention_ragged %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} sinks(%{{.*}}) lse(%{{.*}}) {noncausal, scale = 1.250000e-01 : f32} : tensor<?x32x128xf16>, !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, tensor<3xi32>, tensor<?x32x128xf16>, memref<?xf32>, tensor<32xf32>, tensor<?x32xf32> -> tensor<?x32x128xf16>, tensor<?x32xf32>
  %b:2 = kvcache.attention_ragged %q, %k, %k, %offsets, %out, %ws sinks(%sinks) lse(%lse)
      {noncausal, scale = 0.125 : f32}
      : tensor<?x32x128xf16>, !k, !k, tensor<3xi32>, tensor<?x32x128xf16>, memref<?xf32>, tensor<32xf32>, tensor<?x32xf32> -> tensor<?x32x128xf16>, tensor<?x32xf32>
  // CHECK: %[[M:.*]]:2 = kvcache.merge_states %[[A]], %[[B]]#1, %[[B]]#0, %[[B]]#1, %{{.*}}, %{{.*}} : tensor<?x32x128xf16>, tensor<?x32xf32>, tensor<?x32x128xf16>, tensor<?x32xf32>, tensor<?x32x128xf16>, tensor<?x32xf32> -> tensor<?x32x128xf16>, tensor<?x32xf32>
  %m:2 = kvcache.merge_states %a, %b#1, %b#0, %b#1, %out, %lse
      : tensor<?x32x128xf16>, tensor<?x32xf32>, tensor<?x32x128xf16>, tensor<?x32xf32>, tensor<?x32x128xf16>, tensor<?x32xf32> -> tensor<?x32x128xf16>, tensor<?x32xf32>
  // CHECK: %[[N:.*]] = kvcache.merge_states %{{.*}} : tensor<?x32x128xf16>, tensor<?x32xf32>, tensor<?x32x128xf16>, tensor<?x32xf32>, tensor<?x32x128xf16> -> tensor<?x32x128xf16>
  %n = kvcache.merge_states %a, %b#1, %b#0, %b#1, %out
      : tensor<?x32x128xf16>, tensor<?x32xf32>, tensor<?x32x128xf16>, tensor<?x32xf32>, tensor<?x32x128xf16> -> tensor<?x32x128xf16>
  return %g, %a, %m#0, %m#1, %n, %b#1 : tensor<?x8x128xf16>, tensor<?x32x128xf16>, tensor<?x32x128xf16>, tensor<?x32xf32>, tensor<?x32x128xf16>, tensor<?x32xf32>
}

// rope_ragged's tensor form: q, the offsets, the table, the init q_out and
// positions are tensors; it returns the new q_out (in place on the init, or
// on q itself), the keys rotate through the cache handle.
!kb = !kvcache.paged_cache<bf16, num_heads = 8, head_size = 128, page_size = 16>
// CHECK-LABEL: func.func @rope
func.func @rope(%k: !kb, %q: tensor<?x32x128xbf16>, %offsets: tensor<3xi32>, %cs: tensor<?x64xf32>,
                %init: tensor<?x32x128xbf16>, %p: tensor<?xi32>) -> (tensor<?x32x128xbf16>, tensor<?x32x128xbf16>) {
  // CHECK: kvcache.rope_ragged %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} positions(%{{.*}}) {rotary_dims = 64 : i64, style = "half"} : tensor<?x32x128xbf16>, !kvcache.paged_cache<bf16, num_heads = 8, head_size = 128, page_size = 16>, tensor<3xi32>, tensor<?x64xf32>, tensor<?x32x128xbf16>, tensor<?xi32> -> tensor<?x32x128xbf16>{{$}}
  %r = kvcache.rope_ragged %q, %k, %offsets, %cs, %init positions(%p) {rotary_dims = 64 : i64, style = "half"}
      : tensor<?x32x128xbf16>, !kb, tensor<3xi32>, tensor<?x64xf32>, tensor<?x32x128xbf16>, tensor<?xi32> -> tensor<?x32x128xbf16>
  // CHECK: kvcache.rope_ragged {{.*}} : tensor<?x32x128xbf16>, {{.*}}, tensor<?x32x128xbf16> -> tensor<?x32x128xbf16>{{$}}
  %s = kvcache.rope_ragged %q, %k, %offsets, %cs, %q {rotary_dims = 64 : i64, style = "interleaved"}
      : tensor<?x32x128xbf16>, !kb, tensor<3xi32>, tensor<?x64xf32>, tensor<?x32x128xbf16> -> tensor<?x32x128xbf16>
  return %r, %s : tensor<?x32x128xbf16>, tensor<?x32x128xbf16>
}
