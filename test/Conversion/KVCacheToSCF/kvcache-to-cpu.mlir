// RUN: kvcache-opt %s -kvcache-to-cpu | FileCheck %s \
// RUN:   --implicit-check-not='{{^ *(%[^=]+= )?"?(affine|arith|builtin|cf|func|gpu|kvcache|memref|scf|vector)\.[a-z_]+}}' \
// RUN:   --implicit-check-not='!kvcache.'
// RUN: kvcache-opt %s -kvcache-to-cpu=checked=true | FileCheck %s --check-prefixes=CHECK,CHECKED \
// RUN:   --implicit-check-not='{{^ *(%[^=]+= )?"?(affine|arith|builtin|cf|func|gpu|kvcache|memref|scf|vector)\.[a-z_]+}}' \
// RUN:   --implicit-check-not='!kvcache.'

// The kvcache-to-cpu pipeline (convert-kvcache-to-scf first) lowers every
// kernel op with a CPU lowering to the LLVM dialect alone: no kvcache op or
// type, no scf/cf/arith/memref/vector/func op and no unrealized cast remains
// (the implicit checks), with or without run-time checks. Token rows still
// move as vectors of up to 64 bytes (claiming 16-byte alignment) where
// head_size allows.

!cache = !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>
!collection = !kvcache.paged_collection<f16, num_heads = 8, head_size = 128, page_size = 16>

// CHECKED-DAG: llvm.func @abort()
// CHECKED-DAG: llvm.func @dprintf(i32, !llvm.ptr, ...) -> i32

// CHECK-LABEL: llvm.func @store_ragged(
// CHECK: llvm.load %{{.*}} {alignment = 16 : i64} : !llvm.ptr -> vector<32xf16>
// CHECK: llvm.store %{{.*}}, %{{.*}} {alignment = 16 : i64} : vector<32xf16>, !llvm.ptr
// CHECK-NOT: vector<32xf16>
// CHECK: llvm.return
func.func @store_ragged(%cache: !cache, %new: memref<?x8x128xf16>, %row_offsets: memref<?xi32>) {
  kvcache.store_ragged %cache, %new, %row_offsets : !cache, memref<?x8x128xf16>, memref<?xi32>
  return
}

// CHECK-LABEL: llvm.func @gather_ragged(
// CHECK: llvm.load %{{.*}} {alignment = 16 : i64} : !llvm.ptr -> vector<32xf16>
// CHECK: llvm.store %{{.*}}, %{{.*}} {alignment = 16 : i64} : vector<32xf16>, !llvm.ptr
// CHECK-NOT: vector<32xf16>
// CHECK: llvm.return
func.func @gather_ragged(%cache: !cache, %out: memref<?x8x128xf16>, %ctx_offsets: memref<?xi32>) {
  kvcache.gather_ragged %cache, %out, %ctx_offsets : !cache, memref<?x8x128xf16>, memref<?xi32>
  return
}

// K and V: two copies.

// CHECK-LABEL: llvm.func @copy_pages(
// CHECK: llvm.load %{{.*}} {alignment = 16 : i64} : !llvm.ptr -> vector<32xf16>
// CHECK: llvm.store %{{.*}}, %{{.*}} {alignment = 16 : i64} : vector<32xf16>, !llvm.ptr
// CHECK: llvm.load %{{.*}} {alignment = 16 : i64} : !llvm.ptr -> vector<32xf16>
// CHECK: llvm.store %{{.*}}, %{{.*}} {alignment = 16 : i64} : vector<32xf16>, !llvm.ptr
// CHECK-NOT: vector<32xf16>
// CHECK: llvm.return
func.func @copy_pages(%collection: !collection, %pairs: memref<?x2xi32>) {
  kvcache.copy_pages %collection, %pairs : !collection, memref<?x2xi32>
  return
}

// An MLA collection: K only, one copy.

// CHECK-LABEL: llvm.func @copy_pages_mla(
// CHECK: llvm.load %{{.*}} {alignment = 16 : i64} : !llvm.ptr -> vector<32xbf16>
// CHECK: llvm.store %{{.*}}, %{{.*}} {alignment = 16 : i64} : vector<32xbf16>, !llvm.ptr
// CHECK-NOT: vector<32xbf16>
// CHECK: llvm.return
!mla_collection = !kvcache.paged_collection<bf16, num_heads = 1, head_size = 576, page_size = 64, mla = true>
func.func @copy_pages_mla(%collection: !mla_collection, %pairs: memref<?x2xi32>) {
  kvcache.copy_pages %collection, %pairs : !mla_collection, memref<?x2xi32>
  return
}

// head_size 5: scalar f16 accesses.

// CHECK-LABEL: llvm.func @gather_ragged_head_size_5(
// CHECK-NOT: vector<
// CHECK: llvm.load %{{.*}} : !llvm.ptr -> f16
// CHECK: llvm.store %{{.*}}, %{{.*}} : f16, !llvm.ptr
// CHECK-NOT: vector<
// CHECK: llvm.return
!cache_h5 = !kvcache.paged_cache<f16, num_heads = 2, head_size = 5, page_size = 4>
func.func @gather_ragged_head_size_5(%cache: !cache_h5, %out: memref<?x2x5xf16>, %ctx_offsets: memref<?xi32>) {
  kvcache.gather_ragged %cache, %out, %ctx_offsets : !cache_h5, memref<?x2x5xf16>, memref<?xi32>
  return
}
