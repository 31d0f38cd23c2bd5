// RUN: rm -f %t.ptx
// RUN: not kvcache-compile %s --chip foo -o %t.ptx 2>&1 | FileCheck %s
// RUN: test ! -e %t.ptx

// An unknown --chip is an error (convert-kvcache-to-gpu validates it) and
// no PTX is written: LLVM alone would only warn "'foo' is not a recognized
// processor" and write `.target foo`, which ptxas rejects.

// CHECK: error: {{.*}}foo

!cache = !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>

module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @read(%cache: !cache, %b: index, %t: index, %out: memref<?xf16>) kernel {
      %c0 = arith.constant 0 : index
      %x = kvcache.load %cache[%b, %c0, %t, %c0] : !cache -> f16
      memref.store %x, %out[%c0] : memref<?xf16>
      gpu.return
    }
  }
}
