// RUN: rm -f %t.ptx
// RUN: not kvcache-compile %s -o %t.ptx 2>&1 | FileCheck %s -DFILE=%s
// RUN: test ! -e %t.ptx

// A syntax error is reported at its file:line:col, the tool exits with 1 and
// writes no output file.

!cache = !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>

module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @read(%cache: !cache, %b: index, %h: index, %t: index, %d: index) kernel {
      // CHECK: [[FILE]]:[[@LINE+1]]:46: error: expected ']'
      %x = kvcache.load %cache[%b, %h, %t, %d : !cache -> vector<8xf16>
      gpu.return
    }
  }
}
