// RUN: kvcache-compile %s -o %t.ptx
// RUN: FileCheck %s --input-file=%t.ptx \
// RUN:   --implicit-check-not=div. --implicit-check-not=rem.
// RUN: kvcache-compile %s --chip sm_80 -o %t.sm_80.ptx
// RUN: FileCheck %s --input-file=%t.sm_80.ptx \
// RUN:   --implicit-check-not=div. --implicit-check-not=rem.
// RUN: kvcache-opt %s -kvcache-to-ptx | FileCheck %s --check-prefix=HOST

// Host code passing caches to kernels: a gpu.launch_func of a gpu.func
// taking two caches, and a gpu.launch region using a cache it captures, which
// the pipeline outlines into a kernel taking the whole cache (25
// parameters, not only the pieces the body uses). host-launch-ptxas.test
// assembles the PTX.

!collection = !kvcache.paged_collection<f16, num_heads = 8, head_size = 128, page_size = 16>
!cache = !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>

// Both kernels end up in one gpu.binary; the host passes 25 values per cache.
// HOST-NOT: gpu.module
// HOST: gpu.binary @kernels [#gpu.object<#nvvm.target<O = 3, chip = "sm_90", features = "+ptx80">
// HOST-NOT: gpu.binary
// HOST-LABEL: llvm.func @step(
// HOST: gpu.launch_func @kernels::@copy_layer blocks in ({{.*}}) threads in ({{.*}}) : i64 args({{((%[0-9a-z_]+ : !llvm.ptr, ){2}(%[0-9a-z_]+ : i64, ){9}(%[0-9a-z_]+ : !llvm.ptr, ){2}(%[0-9a-z_]+ : i64, ){3}(%[0-9a-z_]+ : !llvm.ptr, ){2}(%[0-9a-z_]+ : i64, ){5}(%[0-9a-z_]+ : i32, ){2}){2}[%]}}{{[0-9a-z_]+}} : i64)
// HOST: gpu.launch_func @kernels::@step_kernel blocks in ({{.*}}) threads in ({{.*}}) : i64 args({{(%[0-9a-z_]+ : !llvm.ptr, ){2}(%[0-9a-z_]+ : i64, ){9}(%[0-9a-z_]+ : !llvm.ptr, ){2}(%[0-9a-z_]+ : i64, ){3}(%[0-9a-z_]+ : !llvm.ptr, ){2}(%[0-9a-z_]+ : i64, ){5}(%[0-9a-z_]+ : i32, ){2}(%[0-9a-z_]+ : i64, )(%[0-9a-z_]+ : !llvm.ptr, ){2}(%[0-9a-z_]+ : i64, ){6}[%]}}{{[0-9a-z_]+}} : i64)
// HOST-NOT: gpu.launch_func

module attributes {gpu.container_module} {
  // CHECK-LABEL: .visible .entry copy_layer(
  // CHECK: .param .u32 copy_layer_param_23,
  // CHECK-NEXT: .param .u32 copy_layer_param_24,
  // CHECK-NEXT: .param .u64 .ptr .align 1 copy_layer_param_25,
  // CHECK: .param .u32 copy_layer_param_48,
  // CHECK-NEXT: .param .u32 copy_layer_param_49,
  // CHECK-NEXT: .param .u64 copy_layer_param_50
  // CHECK-NEXT: )
  // CHECK-NOT: {{\.[bu]16|\.v4\.}}
  // CHECK: ld.global.v4.b32
  // CHECK-NOT: {{\.[bu]16|\.v4\.}}
  // CHECK: st.global.v4.b32
  // CHECK-NEXT: ret;
  gpu.module @kernels {
    gpu.func @copy_layer(%src: !cache, %dst: !cache, %batch: index) kernel
        attributes {known_block_size = array<i32: 16, 8, 1>} {
      %token = gpu.block_id x
      %head = gpu.thread_id y
      %chunk = gpu.thread_id x
      %c8 = arith.constant 8 : index
      %element = arith.muli %chunk, %c8 : index
      %x = kvcache.load %src[%batch, %head, %token, %element] : !cache -> vector<8xf16>
      kvcache.store %x, %dst[%batch, %head, %token, %element] : !cache, vector<8xf16>
      gpu.return
    }
  }

  // The outlined gpu.launch: the captured cache first (25 parameters), then
  // %batch and %out in order of use; the constants are sunk into the kernel.

  // CHECK-LABEL: .visible .entry step_kernel(
  // CHECK-NEXT: .param .u64 .ptr .align 1 step_kernel_param_0,
  // CHECK-NEXT: .param .u64 .ptr .align 1 step_kernel_param_1,
  // CHECK-NEXT: .param .u64 step_kernel_param_2,
  // CHECK-NEXT: .param .u64 step_kernel_param_3,
  // CHECK-NEXT: .param .u64 step_kernel_param_4,
  // CHECK-NEXT: .param .u64 step_kernel_param_5,
  // CHECK-NEXT: .param .u64 step_kernel_param_6,
  // CHECK-NEXT: .param .u64 step_kernel_param_7,
  // CHECK-NEXT: .param .u64 step_kernel_param_8,
  // CHECK-NEXT: .param .u64 step_kernel_param_9,
  // CHECK-NEXT: .param .u64 step_kernel_param_10,
  // CHECK-NEXT: .param .u64 .ptr .align 1 step_kernel_param_11,
  // CHECK-NEXT: .param .u64 .ptr .align 1 step_kernel_param_12,
  // CHECK-NEXT: .param .u64 step_kernel_param_13,
  // CHECK-NEXT: .param .u64 step_kernel_param_14,
  // CHECK-NEXT: .param .u64 step_kernel_param_15,
  // CHECK-NEXT: .param .u64 .ptr .align 1 step_kernel_param_16,
  // CHECK-NEXT: .param .u64 .ptr .align 1 step_kernel_param_17,
  // CHECK-NEXT: .param .u64 step_kernel_param_18,
  // CHECK-NEXT: .param .u64 step_kernel_param_19,
  // CHECK-NEXT: .param .u64 step_kernel_param_20,
  // CHECK-NEXT: .param .u64 step_kernel_param_21,
  // CHECK-NEXT: .param .u64 step_kernel_param_22,
  // CHECK-NEXT: .param .u32 step_kernel_param_23,
  // CHECK-NEXT: .param .u32 step_kernel_param_24,
  // CHECK-NEXT: .param .u64 step_kernel_param_25,
  // CHECK-NEXT: .param .u64 .ptr .align 1 step_kernel_param_26,
  // CHECK-NEXT: .param .u64 .ptr .align 1 step_kernel_param_27,
  // CHECK: .param .u64 step_kernel_param_34
  // CHECK-NEXT: )
  // CHECK-NOT: {{\.[bu]16|\.v4\.}}
  // CHECK: ld.global.v4.b32
  // CHECK-NOT: {{\.[bu]16|\.v4\.}}
  // CHECK: st.global.v4.b32
  // CHECK-NEXT: ret;
  func.func @step(%blocks: memref<?x2x?x16x8x128xf16>, %cache_lengths: memref<?xi32>,
                  %lookup_table: memref<?x?xi32>, %max_seq_length: i32, %max_cache_length: i32,
                  %batch: index, %num_tokens: index, %out: memref<?x8x128xf16>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c8 = arith.constant 8 : index
    %c16 = arith.constant 16 : index
    %collection = kvcache.paged_collection %blocks, %cache_lengths, %lookup_table, %max_seq_length, %max_cache_length
        : memref<?x2x?x16x8x128xf16>, memref<?xi32>, memref<?x?xi32> -> !collection
    // Layer 0's keys copied to layer 1's.
    %keys0 = kvcache.get_key_cache %collection[%c0] : !collection
    %keys1 = kvcache.get_key_cache %collection[%c1] : !collection
    gpu.launch_func @kernels::@copy_layer blocks in (%num_tokens, %c1, %c1) threads in (%c16, %c8, %c1)
        args(%keys0 : !cache, %keys1 : !cache, %batch : index)
    // Layer 1's values read into `out`.
    %values1 = kvcache.get_value_cache %collection[%c1] : !collection
    gpu.launch blocks(%bx, %by, %bz) in (%gx = %num_tokens, %gy = %c1, %gz = %c1)
               threads(%tx, %ty, %tz) in (%sx = %c16, %sy = %c8, %sz = %c1) {
      %element = arith.muli %tx, %c8 : index
      %v = kvcache.load %values1[%batch, %ty, %bx, %element] : !cache -> vector<8xf16>
      vector.store %v, %out[%bx, %ty, %element] {alignment = 16} : memref<?x8x128xf16>, vector<8xf16>
      gpu.terminator
    }
    return
  }
}
