// REQUIRES: ptxas
// RUN: rm -rf %t && mkdir -p %t
// RUN: kvcache-compile %s --cubin -o %t/kernels.ptx
// RUN: test -s %t/kernels.ptx
// RUN: test -s %t/kernels.cubin
// RUN: FileCheck %s --input-file=%t/kernels.ptx
// RUN: kvcache-compile %s --cubin --chip sm_80 -o %t/kernels.sm_80.ptx
// RUN: test -s %t/kernels.sm_80.cubin
// RUN: kvcache-compile %s --cubin --checked -o %t/checked.ptx
// RUN: test -s %t/checked.cubin
// RUN: env PATH=/nonexistent kvcache-compile %s --cubin -o %t/fallback.ptx
// RUN: test -s %t/fallback.cubin

// --cubin also assembles the PTX with NVIDIA's ptxas into OUT.cubin (the -o
// name with the extension replaced), for the --chip given; without ptxas on
// PATH the tool falls back to /usr/local/cuda/bin. (That --cubin fails with
// a message when ptxas is in neither place is not tested: the fallback finds
// it wherever this test runs.)

// CHECK: .target sm_90
// CHECK: .visible .entry read_keys(

!cache = !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>

module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @read_keys(%cache: !cache, %batch: index, %out: memref<?x8x128xf16>) kernel {
      %token = gpu.block_id x
      %head = gpu.thread_id y
      %chunk = gpu.thread_id x
      %c8 = arith.constant 8 : index
      %element = arith.muli %chunk, %c8 : index
      %keys = kvcache.load %cache[%batch, %head, %token, %element] : !cache -> vector<8xf16>
      vector.store %keys, %out[%token, %head, %element] {alignment = 16} : memref<?x8x128xf16>, vector<8xf16>
      gpu.return
    }
  }
}
