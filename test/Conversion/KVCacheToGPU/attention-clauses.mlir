// RUN: kvcache-opt %s -split-input-file -convert-kvcache-to-gpu=tensor-cores=false | FileCheck %s
// RUN: kvcache-opt %s -split-input-file -convert-kvcache-to-gpu | FileCheck %s --check-prefix=MMA

// The optional clauses of attention_ragged on the GPU (docs/Contract.md 3.3,
// docs/KernelABI.md): the kernel takes sinks, alibi and lse after the
// workspace; the key loop transforms each score (soft cap: tanh from
// ex2.approx and a division; ALiBi: slope * (j - p) from an i32 distance);
// a sink joins the softmax where the row is normalised and lse is written
// there (lg2.approx), in the attention kernel for one split and in the
// merge kernel, which takes sinks and lse after the split count. No libm or
// libdevice math (math.tanh, math.log) anywhere.

!c = !kvcache.paged_cache<f16, num_heads = 2, head_size = 64, page_size = 16>
func.func @all(%q: memref<?x8x64xf16>, %k: !c, %o: memref<?xi32>, %out: memref<?x8x64xf16>, %ws: memref<?xf32>, %sinks: memref<8xf32>, %slopes: memref<8xf32>, %lse: memref<?x8xf32>) {
  kvcache.attention_ragged %q, %k, %k, %o, %out, %ws sinks(%sinks) alibi(%slopes) lse(%lse)
      {scale = 0.125 : f32, softcap = 5.0 : f32, noncausal}
      : memref<?x8x64xf16>, !c, !c, memref<?xi32>, memref<?x8x64xf16>, memref<?xf32>, memref<8xf32>, memref<8xf32>, memref<?x8xf32>
  return
}

// CHECK-LABEL: func.func @all(
// CHECK: gpu.launch_func @kvcache_kernels::@all_attention_ragged
// CHECK-SAME: args(%{{.*}}, %[[WS:arg4]] : memref<?xf32>, %[[SINKS:arg5]] : memref<8xf32>, %arg6 : memref<8xf32>, %[[LSE:arg7]] : memref<?x8xf32>)
// CHECK: gpu.launch_func @kvcache_kernels::@all_attention_merge
// CHECK-SAME: args(%[[WS]] : memref<?xf32>, %arg2 : memref<?xi32>, %arg3 : memref<?x8x64xf16>, %{{.*}} : index, %[[SINKS]] : memref<8xf32>, %[[LSE]] : memref<?x8xf32>)
// CHECK-NOT: math.
// CHECK: gpu.func @all_attention_ragged({{.*}}, %arg6: memref<8xf32>, %arg7: memref<8xf32>, %arg8: memref<?x8xf32>)
// The slopes, loaded once per pass.
// CHECK: memref.load %arg7[
// CHECK: scf.for
// Soft cap: s / c, then 1 - 2 / (1 + 2^(2 log2(e) x)), times c.
// CHECK: arith.divf %{{.*}}, %{{.*}} : f32
// CHECK: arith.constant 2.885390{{.*}} : f32
// CHECK: llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f32"
// CHECK: arith.divf
// ALiBi: the distance j - p as an i32.
// CHECK: arith.index_cast %{{.*}} : index to i32
// CHECK: arith.sitofp %{{.*}} : i32 to f32
// CHECK: llvm.intr.fmuladd
// The sink, then lse, when the row is normalised.
// CHECK: memref.load %arg6[
// CHECK: llvm.call_intrinsic "llvm.nvvm.lg2.approx.ftz.f"
// CHECK: memref.store %{{.*}}, %arg8[
// CHECK: gpu.func @all_attention_merge(%arg0: memref<?xf32>, %arg1: memref<?xi32>, %arg2: memref<?x8x64xf16>, %arg3: index, %arg4: memref<8xf32>, %arg5: memref<?x8xf32>)
// The largest split max, then the sink's logit joins it once.
// CHECK: arith.maximumf
// CHECK: memref.load %arg4[%block_id_y]
// CHECK: arith.maximumf
// CHECK: llvm.call_intrinsic "llvm.nvvm.lg2.approx.ftz.f"
// CHECK: memref.store %{{.*}}, %arg5[
// CHECK-NOT: math.

// The tensor-core kernel takes the same parameters and transforms the
// scores of its mma tiles the same way.
// MMA: gpu.func @all_attention_ragged({{.*}}, %arg6: memref<8xf32>, %arg7: memref<8xf32>, %arg8: memref<?x8xf32>)
// MMA: memref.load %arg7[
// MMA: nvvm.mma.sync
// MMA: llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f32"
// MMA: arith.sitofp %{{.*}} : i32 to f32
// MMA: memref.load %arg6[
// MMA: llvm.call_intrinsic "llvm.nvvm.lg2.approx.ftz.f"
// MMA: memref.store %{{.*}}, %arg8[

// -----

// Without a workspace the merge kernel does not exist; the lse clause alone
// adds one parameter.
!c = !kvcache.paged_cache<f32, num_heads = 2, head_size = 16, page_size = 16>
func.func @lse_only(%q: memref<?x8x16xf32>, %k: !c, %o: memref<?xi32>, %out: memref<?x8x16xf32>, %lse: memref<?x8xf32>) {
  kvcache.attention_ragged %q, %k, %k, %o, %out lse(%lse) {scale = 0.25 : f32}
      : memref<?x8x16xf32>, !c, !c, memref<?xi32>, memref<?x8x16xf32>, memref<?x8xf32>
  return
}

// CHECK-LABEL: func.func @lse_only(
// CHECK: gpu.launch_func @kvcache_kernels::@lse_only_attention_ragged
// CHECK-SAME: %arg3 : memref<?x8x16xf32>, %arg4 : memref<?x8xf32>)
// CHECK-NOT: gpu.launch_func
// CHECK: gpu.func @lse_only_attention_ragged({{.*}}, %arg4: memref<?x8x16xf32>, %arg5: memref<?x8xf32>)
// CHECK-NOT: arith.divf %{{.*}} : f32
// CHECK: llvm.call_intrinsic "llvm.nvvm.lg2.approx.ftz.f"
// CHECK: memref.store %{{.*}}, %arg5[

// -----

// merge_states: block (x, y) merges rows x, x + gridDim.x, ... of head y;
// 16 threads of 8 f16 each would be a half warp, so the block has 32. The
// weights come from ex2.approx and lg2.approx; barriers around thread 0's
// write of lse make the in-place form (lse = lse_a) race-free.
func.func @merge(%a: memref<?x8x128xf16>, %la: memref<?x8xf32>, %b: memref<?x8x128xf16>, %lb: memref<?x8xf32>) {
  kvcache.merge_states %a, %la, %b, %lb, %a, %la : memref<?x8x128xf16>, memref<?x8xf32>, memref<?x8x128xf16>, memref<?x8xf32>, memref<?x8x128xf16>, memref<?x8xf32>
  return
}

// CHECK-LABEL: func.func @merge(
// CHECK: %[[ROWS:.*]] = memref.dim %arg0, %c0
// CHECK: %[[GRID:.*]] = arith.minui %[[ROWS]], %c65535
// CHECK: scf.if
// CHECK: gpu.launch_func @kvcache_kernels::@merge_merge_states blocks in (%[[GRID]], %c8{{.*}}, %c1{{.*}}) threads in (%c32
// CHECK-SAME: args(%arg0 : memref<?x8x128xf16>, %arg1 : memref<?x8xf32>, %arg2 : memref<?x8x128xf16>, %arg3 : memref<?x8xf32>, %arg0 : memref<?x8x128xf16>, %arg1 : memref<?x8xf32>)
// CHECK: gpu.func @merge_merge_states(
// CHECK-SAME: known_block_size = array<i32: 32, 1, 1>
// CHECK: scf.for %[[ROW:.*]] = %block_id_x to %{{.*}} step %grid_dim_x
// CHECK: memref.load %arg1[%[[ROW]], %block_id_y]
// CHECK: memref.load %arg3[%[[ROW]], %block_id_y]
// CHECK: llvm.call_intrinsic "llvm.nvvm.lg2.approx.ftz.f"
// CHECK: scf.for
// CHECK: vector.load %arg0{{.*}} : memref<?x8x128xf16>, vector<8xf16>
// CHECK: vector.load %arg2{{.*}} : memref<?x8x128xf16>, vector<8xf16>
// (out is the host's out_a: the kernel may address it through either
// parameter.)
// CHECK: vector.store %{{.*}}, %arg{{[04]}}{{.*}} : memref<?x8x128xf16>, vector<8xf16>
// CHECK: gpu.barrier
// CHECK: scf.if
// CHECK: memref.store %{{.*}}, %arg{{[15]}}[%[[ROW]], %block_id_y]
// CHECK: gpu.barrier
