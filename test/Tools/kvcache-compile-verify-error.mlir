// RUN: rm -f %t.ptx
// RUN: not kvcache-compile %s -o %t.ptx 2>&1 | FileCheck %s -DFILE=%s
// RUN: test ! -e %t.ptx

// An op the verifier rejects is reported at its file:line:col with the op's
// message, and no output file is written.

!cache = !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>

module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @read(%cache: !cache, %b: index, %h: index, %t: index, %out: memref<8xf16>) kernel {
      %c0 = arith.constant 0 : index
      %c124 = arith.constant 124 : index
      // CHECK: [[FILE]]:[[@LINE+1]]:12: error: 'kvcache.load' op element range [124, 132) exceeds head_size = 128
      %x = kvcache.load %cache[%b, %h, %t, %c124] : !cache -> vector<8xf16>
      vector.store %x, %out[%c0] : memref<8xf16>, vector<8xf16>
      gpu.return
    }
  }
}
