// kvcache-reduce is mlir-reduce with the kvcache dialect and passes: it cuts
// a module down to what an interestingness script needs (here: a verified
// module that still copies pages).
// RUN: env KVCACHE_OPT=%kvcache_obj_root/bin/kvcache-opt kvcache-reduce %s \
// RUN:   -reduction-tree='traversal-mode=0 test=%S/Inputs/keeps-copy-pages.sh' | FileCheck %s

// CHECK: func.func @copy(
// CHECK-NEXT: kvcache.copy_pages
// CHECK-NOT: kvcache.store_ragged
// CHECK-NOT: kvcache.gather_ragged

!collection = !kvcache.paged_collection<f16, num_heads = 8, head_size = 128, page_size = 16>
!cache = !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>

func.func @store(%cache: !cache, %new: memref<?x8x128xf16>, %offsets: memref<?xi32>) {
  kvcache.store_ragged %cache, %new, %offsets : !cache, memref<?x8x128xf16>, memref<?xi32>
  return
}
func.func @gather(%cache: !cache, %out: memref<?x8x128xf16>, %offsets: memref<?xi32>) {
  kvcache.gather_ragged %cache, %out, %offsets : !cache, memref<?x8x128xf16>, memref<?xi32>
  return
}
func.func @copy(%collection: !collection, %pairs: memref<?x2xi32>) {
  kvcache.copy_pages %collection, %pairs : !collection, memref<?x2xi32>
  return
}
