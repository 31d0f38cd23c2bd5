// RUN: kvcache-opt %s -split-input-file -convert-kvcache-to-gpu | FileCheck %s

// The GPU design of attention_ragged (GPU-DESIGN.md), read off the IR for a
// decode step with GQA group 4 (32 query heads, 8 KV heads, head 128 f16):
// a block per (row, KV head, split) of 128 threads; in each step of the key
// loop a thread issues ONE cp.async of its 16-byte K slice and ONE of its V
// slice (after one kvcache.tile lookup per key and cache), waits for the
// previous group, reads the two slices from shared memory once and uses them
// for all 4 query heads of the group (4 dot products); partial states merge
// through shared memory; with a workspace a second kernel merges the splits.

!cache = !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>

// CHECK-LABEL: func.func @decode_with_workspace
// CHECK: gpu.launch blocks({{.*}}) in ({{.*}} = %{{.*}}, {{.*}} = %c8, {{.*}} = %{{.*}}) threads({{.*}}) in ({{.*}} = %c128, {{.*}}) module(@kvcache_kernels) function(@decode_with_workspace_attention_ragged) workgroup(%[[K_SHARED:[a-z0-9_]+]] : memref<2x8x128xf16, #gpu.address_space<workgroup>>, %[[V_SHARED:[a-z0-9_]+]] : memref<2x8x128xf16, #gpu.address_space<workgroup>>, %{{[a-z0-9_]+}} : memref<8x4x130xf32, #gpu.address_space<workgroup>>)
// The key loop carries (max, sum, accumulator) for each of the 4 heads.
// CHECK: scf.for {{.*}} iter_args({{.*}}) -> (f32, f32, vector<8xf32>, f32, f32, vector<8xf32>, f32, f32, vector<8xf32>, f32, f32, vector<8xf32>)
// CHECK: kvcache.tile %{{.*}} -> memref<1x128xf16, strided<[1024, 1], offset: ?>>
// CHECK-NOT: kvcache.
// CHECK: nvgpu.device_async_copy %{{.*}}, %[[K_SHARED]][{{.*}}], 8, %{{.*}} {bypassL1}
// CHECK-NEXT: kvcache.tile %{{.*}} -> memref<1x128xf16, strided<[1024, 1], offset: ?>>
// CHECK-NOT: kvcache.
// CHECK: nvgpu.device_async_copy %{{.*}}, %[[V_SHARED]][{{.*}}], 8, %{{.*}} {bypassL1}
// CHECK-NEXT: %[[GROUP:.*]] = nvgpu.device_async_create_group
// CHECK-NEXT: nvgpu.device_async_wait %[[GROUP]] {numGroups = 1 : i32}
// CHECK-NOT: nvgpu.device_async_copy
// CHECK: vector.load %[[K_SHARED]]{{.*}} vector<8xf16>
// CHECK-NEXT: vector.load %[[V_SHARED]]{{.*}} vector<8xf16>
// CHECK-NOT: vector.load
// CHECK-COUNT-4: vector.reduction <add>
// CHECK-NOT: vector.load {{.*}}xf16
// CHECK: scf.yield
// CHECK: gpu.barrier
// CHECK: gpu.launch {{.*}} module(@kvcache_kernels) function(@decode_with_workspace_attention_merge)
func.func @decode_with_workspace(%q: memref<?x32x128xf16>, %k: !cache, %v: !cache, %rows: memref<?xi32>, %out: memref<?x32x128xf16>, %ws: memref<?xf32>) {
  kvcache.attention_ragged %q, %k, %v, %rows, %out, %ws {scale = 0.0883883 : f32}
    : memref<?x32x128xf16>, !cache, !cache, memref<?xi32>, memref<?x32x128xf16>, memref<?xf32>
  return
}

// -----

!cache = !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>

// negative_: without a workspace there is one split and no merge kernel;
// exp2 is NVVM's ex2.approx intrinsic (no libdevice).

// CHECK-LABEL: func.func @negative_no_workspace
// CHECK: gpu.launch blocks({{.*}}) in ({{.*}} = %{{.*}}, {{.*}} = %c8, {{.*}} = %c1{{(_[0-9]+)?}})
// CHECK: llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f32"
// CHECK-NOT: math.exp
// CHECK-NOT: attention_merge
// CHECK: return
func.func @negative_no_workspace(%q: memref<?x32x128xf16>, %k: !cache, %v: !cache, %rows: memref<?xi32>, %out: memref<?x32x128xf16>) {
  kvcache.attention_ragged %q, %k, %v, %rows, %out {scale = 0.0883883 : f32}
    : memref<?x32x128xf16>, !cache, !cache, memref<?xi32>, memref<?x32x128xf16>
  return
}
