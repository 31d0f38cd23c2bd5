// RUN: kvcache-opt %s -kvcache-to-ptx="checked=true" | FileCheck %s

// kvcache-to-ptx adds the check routine but, checked or not, never calls it
// from the host function: on a GPU the offsets and the metadata are device
// memory, which host code cannot read (a host calls the routine on its host
// copies). The kernels' own checks of each access stay (checked=true).

// CHECK-LABEL: llvm.func @store(
// CHECK-NOT: llvm.call @kvcache_check_store
// CHECK: gpu.launch_func
// CHECK: llvm.return
// CHECK-LABEL: llvm.func @kvcache_check_store(
// CHECK-NOT: @kvcache_check_capture
// CHECK-NOT: @__kvcache_check_fail

!cache = !kvcache.paged_cache<f32, num_heads = 1, head_size = 4, page_size = 4>
func.func @store(%k: !cache, %new: memref<?x1x4xf32>, %offsets: memref<?xi32>) {
  kvcache.store_ragged %k, %new, %offsets : !cache, memref<?x1x4xf32>, memref<?xi32>
  return
}
