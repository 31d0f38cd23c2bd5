// Debian's own mlir-opt (not kvcache-opt) loads the kvcache dialect and passes
// from KVCachePlugin.so (MLIR's dialect and pass plugin API) and runs the
// three pipelines; the plugin links libMLIR.so like the tool, so nothing is
// registered twice (stderr stays empty). The CPU result runs in mlir-runner.

// RUN: %mlir_opt --load-dialect-plugin=%kvcache_plugin --load-pass-plugin=%kvcache_plugin %s \
// RUN:     --pass-pipeline='builtin.module(kvcache-to-cpu)' -o %t.cpu.mlir 2> %t.cpu.err
// RUN: count 0 < %t.cpu.err
// RUN: mlir-runner %t.cpu.mlir -e main -entry-point-result=void \
// RUN:     -shared-libs=%mlir_c_runner_utils,%mlir_runner_utils | FileCheck %s

// RUN: %mlir_opt --load-dialect-plugin=%kvcache_plugin --load-pass-plugin=%kvcache_plugin %s \
// RUN:     --pass-pipeline='builtin.module(kvcache-to-ptx{chip=sm_80})' 2> %t.ptx.err \
// RUN: | FileCheck %s --check-prefix=PTX
// RUN: count 0 < %t.ptx.err

// The kernel also runs on the emulated GPU from the stock tool.
// RUN: %mlir_opt --load-dialect-plugin=%kvcache_plugin --load-pass-plugin=%kvcache_plugin %s \
// RUN:     --pass-pipeline='builtin.module(kvcache-to-emulated-gpu)' -o %t.emu.mlir 2> %t.emu.err
// RUN: count 0 < %t.emu.err
// RUN: %emu_run %t.emu.mlir -e main | FileCheck %s

!collection = !kvcache.paged_collection<f32, num_heads = 1, head_size = 4, page_size = 2>
!cache = !kvcache.paged_cache<f32, num_heads = 1, head_size = 4, page_size = 2>

// One sequence of 1 token (pages 1, 0) gets 2 new tokens (positions 1, 2).
memref.global "private" constant @lookup_table_init : memref<1x2xi32> = dense<[[1, 0]]>
memref.global "private" constant @cache_lengths_init : memref<1xi32> = dense<[1]>
memref.global "private" constant @row_offsets_init : memref<2xi32> = dense<[0, 2]>
memref.global "private" constant @new_init : memref<2x1x4xf32> =
    dense<[[[10.0, 11.0, 12.0, 13.0]], [[20.0, 21.0, 22.0, 23.0]]]>

// The kernel op became a launch of a kernel whose PTX is in the gpu.binary.
// PTX-LABEL: llvm.func @append(
// PTX: gpu.launch_func @kvcache_kernels::@append_store_ragged
// PTX: gpu.binary @kvcache_kernels [#gpu.object<#nvvm.target<O = 3, chip = "sm_80", features = "+ptx80">
// PTX-SAME: .target sm_80
// PTX-SAME: .visible .entry append_store_ragged(
func.func @append(%key_cache: !cache, %new: memref<?x1x4xf32>, %row_offsets: memref<?xi32>) {
  kvcache.store_ragged %key_cache, %new, %row_offsets : !cache, memref<?x1x4xf32>, memref<?xi32>
  return
}

// Token 1 lands in page 1, slot 1; token 2 in page 0, slot 0.
// CHECK:      1
// CHECK-NEXT: 1
// CHECK-NEXT: ( 10, 11, 12, 13 )
// CHECK-NEXT: 0
// CHECK-NEXT: 0
// CHECK-NEXT: ( 20, 21, 22, 23 )
func.func @main() {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %zero = arith.constant 0.0 : f32
  %blocks = memref.alloc() : memref<3x2x1x2x1x4xf32>
  linalg.fill ins(%zero : f32) outs(%blocks : memref<3x2x1x2x1x4xf32>)
  %lookup_table_init = memref.get_global @lookup_table_init : memref<1x2xi32>
  %cache_lengths_init = memref.get_global @cache_lengths_init : memref<1xi32>
  %row_offsets_init = memref.get_global @row_offsets_init : memref<2xi32>
  %new_init = memref.get_global @new_init : memref<2x1x4xf32>
  %lookup_table = memref.cast %lookup_table_init : memref<1x2xi32> to memref<?x?xi32>
  %cache_lengths = memref.cast %cache_lengths_init : memref<1xi32> to memref<?xi32>
  %row_offsets = memref.cast %row_offsets_init : memref<2xi32> to memref<?xi32>
  %new = memref.cast %new_init : memref<2x1x4xf32> to memref<?x1x4xf32>
  %max_seq_length = arith.constant 2 : i32
  %max_cache_length = arith.constant 3 : i32
  %collection = kvcache.paged_collection %blocks, %cache_lengths, %lookup_table, %max_seq_length, %max_cache_length
      : memref<3x2x1x2x1x4xf32>, memref<?xi32>, memref<?x?xi32> -> !collection
  %key_cache = kvcache.get_key_cache %collection[%c0] : !collection
  func.call @append(%key_cache, %new, %row_offsets) : (!cache, memref<?x1x4xf32>, memref<?xi32>) -> ()
  scf.for %token = %c1 to %c3 step %c1 {
    %page, %slot = kvcache.lookup %key_cache[%c0, %token] : !cache
    %row = kvcache.load %key_cache[%c0, %c0, %token, %c0] : !cache -> vector<4xf32>
    vector.print %page : index
    vector.print %slot : index
    vector.print %row : vector<4xf32>
  }
  memref.dealloc %blocks : memref<3x2x1x2x1x4xf32>
  return
}
