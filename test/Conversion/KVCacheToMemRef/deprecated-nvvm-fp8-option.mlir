// RUN: kvcache-opt %s -convert-kvcache-to-memref='nvvm-fp8-conversions=true' -verify-diagnostics | FileCheck %s
// RUN: kvcache-opt %s -convert-kvcache-to-memref | FileCheck %s

// nvvm-fp8-conversions is deprecated: still accepted, it warns and changes
// nothing (the NVVM choice is kvcache-fp8-to-nvvm's, a GPU-side pass that
// runs after this one). A dequantizing read in a kernel decodes its fp8
// codes with target-neutral arith.extf, with or without it.

!k = !kvcache.paged_cache<f8E4M3FN, num_heads = 2, head_size = 32, page_size = 4, scales = token_head>

// CHECK-LABEL: gpu.func @read(
// CHECK: %[[CODES:.*]] = vector.load {{.*}} vector<8xf8E4M3FN>
// CHECK: %[[HALVES:.*]] = arith.extf %[[CODES]] : vector<8xf8E4M3FN> to vector<8xf16>
// CHECK: arith.extf %[[HALVES]] : vector<8xf16> to vector<8xf32>
// CHECK-NOT: nvvm.
// CHECK: gpu.return
// expected-warning@below {{convert-kvcache-to-memref: nvvm-fp8-conversions is deprecated and has no effect: fp8 codes are decoded by arith.extf; run kvcache-fp8-to-nvvm{chip=...} after this pass to decode them with the sm_89+ conversion instructions}}
module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @read(%k: !k, %page: index, %slot: index, %h: index, %d: index, %out: memref<8xf32>) kernel {
      %x = kvcache.page_load %k[%page, %slot, %h, %d] : !k -> vector<8xf32>
      %c0 = arith.constant 0 : index
      vector.store %x, %out[%c0] : memref<8xf32>, vector<8xf32>
      gpu.return
    }
  }
}
