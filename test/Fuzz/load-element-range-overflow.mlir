// Found by kvcache-fuzz (UBSan): the verifier of kvcache.load computed the
// end of the element range, d + W, for a constant d near INT64_MAX: signed
// overflow (lib/IR/KVCacheOps.cpp, the "element range [" message).
// RUN: not kvcache-opt %s 2>&1 | FileCheck %s

// CHECK: error: 'kvcache.load' op element range [9223372036854775807,
func.func @t(%k: !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, %b: index, %h: index, %t: index) {
  %d = arith.constant 9223372036854775807 : index
  %x = kvcache.load %k[%b, %h, %t, %d] : !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16> -> f16
  return
}
