// RUN: kvcache-opt %s -split-input-file -kvcache-bufferize | FileCheck %s

// kvcache-bufferize on collections built from tensors (docs/Contract.md
// section 3.5): the collection is built from the buffers of its tensors, the
// writes become the memref form and write them in place (no allocation, no
// copy of the cache), their updated collections are the collection they
// wrote, collection_tensors is those buffers, and a function that returns
// them for its own arguments loses those results.

!c = !kvcache.paged_collection<f16, num_heads = 8, head_size = 128, page_size = 16>
!k = !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>

// CHECK-LABEL: func.func @step(
// CHECK-SAME: %[[B:[^:]*]]: memref<?x2x?x16x8x128xf16>, %[[L:[^:]*]]: memref<?xi32>, %[[T:[^:]*]]: memref<?x?xi32>, %[[N:[^:]*]]: i32, %[[Q:[^:]*]]: memref<?x32x128xf16>, %[[NK:[^:]*]]: memref<?x8x128xf16>, %[[NV:[^:]*]]: memref<?x8x128xf16>, %[[O:[^:]*]]: memref<?xi32>, %[[P:[^:]*]]: memref<?x2xi32>, %[[OUT:[^:]*]]: memref<?x32x128xf16>) {
// CHECK-NEXT: %[[L0:.*]] = arith.constant 0 : index
// CHECK-NEXT: %[[C:.*]] = kvcache.paged_collection %[[B]], %[[L]], %[[T]], %[[N]], %[[N]] : memref<?x2x?x16x8x128xf16>, memref<?xi32>, memref<?x?xi32> -> !kvcache.paged_collection<f16, num_heads = 8, head_size = 128, page_size = 16>
// CHECK-NEXT: kvcache.copy_pages %[[C]], %[[P]] : !kvcache.paged_collection<f16, num_heads = 8, head_size = 128, page_size = 16>, memref<?x2xi32>{{$}}
// CHECK-NEXT: %[[K:.*]] = kvcache.get_key_cache %[[C]][%[[L0]]]
// CHECK-NEXT: kvcache.store_ragged %[[K]], %[[NK]], %[[O]] : !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, memref<?x8x128xf16>, memref<?xi32>{{$}}
// CHECK-NEXT: %[[V:.*]] = kvcache.get_value_cache %[[C]][%[[L0]]]
// CHECK-NEXT: kvcache.store_ragged %[[V]], %[[NV]], %[[O]] : !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, memref<?x8x128xf16>, memref<?xi32>{{$}}
// CHECK-NEXT: %[[K2:.*]] = kvcache.get_key_cache %[[C]][%[[L0]]]
// CHECK-NEXT: %[[V2:.*]] = kvcache.get_value_cache %[[C]][%[[L0]]]
// CHECK-NEXT: kvcache.attention_ragged %[[Q]], %[[K2]], %[[V2]], %[[O]], %[[OUT]] {scale = 1.250000e-01 : f32} : memref<?x32x128xf16>, {{.*}}, memref<?x32x128xf16>{{$}}
// CHECK-NEXT: return{{$}}
func.func @step(%blocks: tensor<?x2x?x16x8x128xf16>, %lengths: tensor<?xi32>,
                %table: tensor<?x?xi32>, %n: i32, %q: tensor<?x32x128xf16>,
                %new_k: tensor<?x8x128xf16>, %new_v: tensor<?x8x128xf16>,
                %offsets: tensor<?xi32>, %pairs: tensor<?x2xi32>,
                %out: tensor<?x32x128xf16>)
    -> (tensor<?x2x?x16x8x128xf16>, tensor<?x32x128xf16>) {
  %l0 = arith.constant 0 : index
  %c = kvcache.paged_collection %blocks, %lengths, %table, %n, %n
      : tensor<?x2x?x16x8x128xf16>, tensor<?xi32>, tensor<?x?xi32> -> !c
  %c1 = kvcache.copy_pages %c, %pairs : !c, tensor<?x2xi32> -> !c
  %k = kvcache.get_key_cache %c1[%l0] : !c
  %c2 = kvcache.store_ragged %k, %new_k, %offsets : !k, tensor<?x8x128xf16>, tensor<?xi32> -> !c
  %v = kvcache.get_value_cache %c2[%l0] : !c
  %c3 = kvcache.store_ragged %v, %new_v, %offsets : !k, tensor<?x8x128xf16>, tensor<?xi32> -> !c
  %k3 = kvcache.get_key_cache %c3[%l0] : !c
  %v3 = kvcache.get_value_cache %c3[%l0] : !c
  %o = kvcache.attention_ragged %q, %k3, %v3, %offsets, %out {scale = 0.125 : f32}
      : tensor<?x32x128xf16>, !k, !k, tensor<?xi32>, tensor<?x32x128xf16> -> tensor<?x32x128xf16>
  %b = kvcache.collection_tensors %c3 : !c -> tensor<?x2x?x16x8x128xf16>
  return %b, %o : tensor<?x2x?x16x8x128xf16>, tensor<?x32x128xf16>
}

// A caller passes its cache, and the cache is written in place: its
// result is the argument.
// CHECK-LABEL: func.func @caller(
// CHECK-SAME: %[[B:[^:]*]]: memref<?x2x?x16x8x128xf16>,
// CHECK-NOT: memref.alloc
// CHECK-NOT: memref.copy
// CHECK: call @step(%[[B]], {{.*}}) : ({{.*}}) -> (){{$}}
// CHECK-NEXT: return{{$}}
func.func @caller(%blocks: tensor<?x2x?x16x8x128xf16>, %lengths: tensor<?xi32>,
                  %table: tensor<?x?xi32>, %n: i32, %q: tensor<?x32x128xf16>,
                  %new_k: tensor<?x8x128xf16>, %new_v: tensor<?x8x128xf16>,
                  %offsets: tensor<?xi32>, %pairs: tensor<?x2xi32>,
                  %out: tensor<?x32x128xf16>)
    -> (tensor<?x2x?x16x8x128xf16>, tensor<?x32x128xf16>) {
  %b, %o = func.call @step(%blocks, %lengths, %table, %n, %q, %new_k, %new_v, %offsets, %pairs, %out)
      : (tensor<?x2x?x16x8x128xf16>, tensor<?xi32>, tensor<?x?xi32>, i32, tensor<?x32x128xf16>, tensor<?x8x128xf16>, tensor<?x8x128xf16>, tensor<?xi32>, tensor<?x2xi32>, tensor<?x32x128xf16>) -> (tensor<?x2x?x16x8x128xf16>, tensor<?x32x128xf16>)
  return %b, %o : tensor<?x2x?x16x8x128xf16>, tensor<?x32x128xf16>
}

// -----

// With scales: collection_tensors gives both buffers, both results dropped.
!q = !kvcache.paged_collection<i8, num_heads = 8, head_size = 128, page_size = 16, scales = tensor>
!qk = !kvcache.paged_cache<i8, num_heads = 8, head_size = 128, page_size = 16, scales = tensor>
// CHECK-LABEL: func.func @scaled(
// CHECK-SAME: %[[B:[^:]*]]: memref<?x2x?x16x8x128xi8>, %[[L:[^:]*]]: memref<?xi32>, %[[T:[^:]*]]: memref<?x?xi32>, %[[S:[^:]*]]: memref<?x2xf32>, %[[N:[^:]*]]: i32, %[[R:[^:]*]]: memref<?x8x128xf32>, %[[O:[^:]*]]: memref<?xi32>) {
// CHECK-NOT: memref.alloc
// CHECK-NOT: memref.copy
// CHECK: kvcache.paged_collection %[[B]], %[[L]], %[[T]], %[[N]], %[[N]], %[[S]]
// CHECK: kvcache.store_ragged %{{.*}}, %[[R]], %[[O]] : {{.*}}, memref<?x8x128xf32>, memref<?xi32>{{$}}
// CHECK-NEXT: return{{$}}
func.func @scaled(%blocks: tensor<?x2x?x16x8x128xi8>, %lengths: tensor<?xi32>,
                  %table: tensor<?x?xi32>, %scales: tensor<?x2xf32>, %n: i32,
                  %rows: tensor<?x8x128xf32>, %offsets: tensor<?xi32>)
    -> (tensor<?x2x?x16x8x128xi8>, tensor<?x2xf32>) {
  %l0 = arith.constant 0 : index
  %c = kvcache.paged_collection %blocks, %lengths, %table, %n, %n, %scales
      : tensor<?x2x?x16x8x128xi8>, tensor<?xi32>, tensor<?x?xi32>, tensor<?x2xf32> -> !q
  %k = kvcache.get_key_cache %c[%l0] : !q
  %c1 = kvcache.store_ragged %k, %rows, %offsets : !qk, tensor<?x8x128xf32>, tensor<?xi32> -> !q
  %b, %s = kvcache.collection_tensors %c1 : !q -> tensor<?x2x?x16x8x128xi8>, tensor<?x2xf32>
  return %b, %s : tensor<?x2x?x16x8x128xi8>, tensor<?x2xf32>
}

// -----

// A collection only read (nothing writes it or gives its tensors back)
// leaves its blocks as they are: the caller may read them after the call.
!c = !kvcache.paged_collection<f16, num_heads = 8, head_size = 128, page_size = 16>
!k = !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>
// CHECK-LABEL: func.func private @read_only(
// CHECK-NOT: memref.alloc
// CHECK-NOT: memref.copy
// CHECK: kvcache.gather_ragged
// CHECK-LABEL: func.func @reads_after(
// CHECK-SAME: %[[B:[^:]*]]: memref<?x2x?x16x8x128xf16>,
// CHECK-NOT: memref.alloc
// CHECK-NOT: memref.copy
// CHECK: call @read_only(%[[B]], {{.*}}) : ({{.*}}) -> (){{$}}
// CHECK-NEXT: return{{$}}
func.func private @read_only(%blocks: tensor<?x2x?x16x8x128xf16>, %lengths: tensor<?xi32>, %table: tensor<?x?xi32>, %n: i32,
                             %o: tensor<?xi32>, %out: tensor<?x8x128xf16>) -> tensor<?x8x128xf16> {
  %l0 = arith.constant 0 : index
  %c = kvcache.paged_collection %blocks, %lengths, %table, %n, %n
      : tensor<?x2x?x16x8x128xf16>, tensor<?xi32>, tensor<?x?xi32> -> !c
  %k = kvcache.get_key_cache %c[%l0] : !c
  %g = kvcache.gather_ragged %k, %out, %o : !k, tensor<?x8x128xf16>, tensor<?xi32> -> tensor<?x8x128xf16>
  return %g : tensor<?x8x128xf16>
}
func.func @reads_after(%blocks: tensor<?x2x?x16x8x128xf16>, %lengths: tensor<?xi32>, %table: tensor<?x?xi32>, %n: i32,
                       %o: tensor<?xi32>, %out: tensor<?x8x128xf16>) -> (tensor<?x8x128xf16>, tensor<?x2x?x16x8x128xf16>) {
  %g = func.call @read_only(%blocks, %lengths, %table, %n, %o, %out)
      : (tensor<?x2x?x16x8x128xf16>, tensor<?xi32>, tensor<?x?xi32>, i32, tensor<?xi32>, tensor<?x8x128xf16>) -> tensor<?x8x128xf16>
  return %g, %blocks : tensor<?x8x128xf16>, tensor<?x2x?x16x8x128xf16>
}

// -----

// rope_ragged rotates the keys the step stored in place, in the blocks of
// the argument, and q into `out`: its updated collection is the collection
// it wrote, its new q_out the buffer of `out`.
!b = !kvcache.paged_collection<bf16, num_heads = 2, head_size = 64, page_size = 16>
!bk = !kvcache.paged_cache<bf16, num_heads = 2, head_size = 64, page_size = 16>
// CHECK-LABEL: func.func @rope(
// CHECK-SAME: %[[B:[^:]*]]: memref<?x2x?x16x2x64xbf16>, %[[L:[^:]*]]: memref<?xi32>, %[[T:[^:]*]]: memref<?x?xi32>, %[[N:[^:]*]]: i32, %[[Q:[^:]*]]: memref<?x4x64xbf16>, %[[NK:[^:]*]]: memref<?x2x64xbf16>, %[[O:[^:]*]]: memref<?xi32>, %[[CS:[^:]*]]: memref<?x32xf32>, %[[OUT:[^:]*]]: memref<?x4x64xbf16>) {
// CHECK-NEXT: %[[L0:.*]] = arith.constant 0 : index
// CHECK-NEXT: %[[C:.*]] = kvcache.paged_collection %[[B]], %[[L]], %[[T]], %[[N]], %[[N]] : memref<?x2x?x16x2x64xbf16>, memref<?xi32>, memref<?x?xi32> -> !kvcache.paged_collection<bf16, num_heads = 2, head_size = 64, page_size = 16>
// CHECK-NEXT: %[[K:.*]] = kvcache.get_key_cache %[[C]][%[[L0]]]
// CHECK-NEXT: kvcache.store_ragged %[[K]], %[[NK]], %[[O]] : !kvcache.paged_cache<bf16, num_heads = 2, head_size = 64, page_size = 16>, memref<?x2x64xbf16>, memref<?xi32>{{$}}
// CHECK-NEXT: %[[K1:.*]] = kvcache.get_key_cache %[[C]][%[[L0]]]
// CHECK-NEXT: kvcache.rope_ragged %[[Q]], %[[K1]], %[[O]], %[[CS]], %[[OUT]] {rotary_dims = 32 : i64, style = "half"} : memref<?x4x64xbf16>, !kvcache.paged_cache<bf16, num_heads = 2, head_size = 64, page_size = 16>, memref<?xi32>, memref<?x32xf32>, memref<?x4x64xbf16>{{$}}
// CHECK-NEXT: return{{$}}
func.func @rope(%blocks: tensor<?x2x?x16x2x64xbf16>, %lengths: tensor<?xi32>,
                %table: tensor<?x?xi32>, %n: i32, %q: tensor<?x4x64xbf16>,
                %new_k: tensor<?x2x64xbf16>, %offsets: tensor<?xi32>,
                %cs: tensor<?x32xf32>, %out: tensor<?x4x64xbf16>)
    -> (tensor<?x2x?x16x2x64xbf16>, tensor<?x4x64xbf16>) {
  %l0 = arith.constant 0 : index
  %c = kvcache.paged_collection %blocks, %lengths, %table, %n, %n
      : tensor<?x2x?x16x2x64xbf16>, tensor<?xi32>, tensor<?x?xi32> -> !b
  %k = kvcache.get_key_cache %c[%l0] : !b
  %c1 = kvcache.store_ragged %k, %new_k, %offsets : !bk, tensor<?x2x64xbf16>, tensor<?xi32> -> !b
  %k1 = kvcache.get_key_cache %c1[%l0] : !b
  %r, %c2 = kvcache.rope_ragged %q, %k1, %offsets, %cs, %out {rotary_dims = 32 : i64, style = "half"}
      : tensor<?x4x64xbf16>, !bk, tensor<?xi32>, tensor<?x32xf32>, tensor<?x4x64xbf16> -> tensor<?x4x64xbf16>, !b
  %b = kvcache.collection_tensors %c2 : !b -> tensor<?x2x?x16x2x64xbf16>
  return %b, %r : tensor<?x2x?x16x2x64xbf16>, tensor<?x4x64xbf16>
}
