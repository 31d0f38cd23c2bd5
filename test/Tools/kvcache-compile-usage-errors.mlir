// RUN: not kvcache-compile %t.does-not-exist.mlir -o - 2>&1 \
// RUN:   | FileCheck %s --check-prefix=NO-INPUT
// RUN: not kvcache-compile %s --cubin -o - 2>&1 >/dev/null \
// RUN:   | FileCheck %s --check-prefix=CUBIN-STDOUT
// RUN: not kvcache-compile %s --no-such-option -o - 2>&1 \
// RUN:   | FileCheck %s --check-prefix=BAD-OPTION

// Command-line mistakes: a missing input file, --cubin without an output
// file to name the cubin after, an unknown option. Each exits with 1.

// NO-INPUT: kvcache-compile: cannot open input file '{{.*}}does-not-exist.mlir'
// CUBIN-STDOUT: kvcache-compile: --cubin needs an output file (-o)
// BAD-OPTION: Unknown command line argument '--no-such-option'

!cache = !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>

module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @read(%cache: !cache, %b: index, %h: index, %t: index, %d: index, %out: memref<8xf16>) kernel {
      %c0 = arith.constant 0 : index
      %x = kvcache.load %cache[%b, %h, %t, %d] : !cache -> vector<8xf16>
      vector.store %x, %out[%c0] : memref<8xf16>, vector<8xf16>
      gpu.return
    }
  }
}
