// RUN: rm -f %t.ptx
// RUN: not kvcache-compile %s -o %t.ptx 2>&1 | FileCheck %s
// RUN: test ! -e %t.ptx

// Host code without any gpu.module, gpu.launch or kvcache kernel op compiles
// fine but has no kernel to write: an error, and no output file.

// CHECK: error: no GPU kernels to compile

!cache = !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>

func.func @host_only(%cache: !cache, %b: index, %h: index, %t: index, %d: index) -> vector<8xf16> {
  %x = kvcache.load %cache[%b, %h, %t, %d] : !cache -> vector<8xf16>
  return %x : vector<8xf16>
}
