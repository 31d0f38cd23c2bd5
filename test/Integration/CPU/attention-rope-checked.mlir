// A rotary position past the rows of the cos_sin table of attention_ragged's
// rope clause on q under -kvcache-to-cpu=checked=true (docs/Contract.md
// 5.3): the program stops at the row that would read it, naming the
// position and the bound.

// RUN: kvcache-opt %s -kvcache-to-cpu=checked=true -o %t.mlir
// RUN: not --crash mlir-runner %t.mlir -e main -entry-point-result=void \
// RUN:     -shared-libs=%mlir_c_runner_utils,%mlir_runner_utils 2>&1 \
// RUN: | FileCheck %s

!collection = !kvcache.paged_collection<f32, num_heads = 1, head_size = 4, page_size = 2>
!cache = !kvcache.paged_cache<f32, num_heads = 1, head_size = 4, page_size = 2>

memref.global "private" constant @cache_lengths : memref<1xi32> = dense<[1]>
memref.global "private" constant @lookup_table : memref<1x1xi32> = dense<[[0]]>
memref.global "private" constant @row_offsets : memref<2xi32> = dense<[0, 1]>
// Row 0 at table row 4 of 4.
memref.global "private" constant @positions : memref<1xi32> = dense<[4]>
memref.global "private" constant @cos_sin : memref<4x2xf32> = dense<1.0>

func.func @main() {
  %blocks = memref.alloc() : memref<1x2x1x2x1x4xf32>
  %q = memref.alloc() : memref<1x1x4xf32>
  %out = memref.alloc() : memref<1x1x4xf32>
  %lengths = memref.get_global @cache_lengths : memref<1xi32>
  %table = memref.get_global @lookup_table : memref<1x1xi32>
  %offsets = memref.get_global @row_offsets : memref<2xi32>
  %positions = memref.get_global @positions : memref<1xi32>
  %cos_sin = memref.get_global @cos_sin : memref<4x2xf32>
  %max_seq_length = arith.constant 1 : i32
  %max_cache_length = arith.constant 2 : i32
  %c0 = arith.constant 0 : index
  %collection = kvcache.paged_collection %blocks, %lengths, %table, %max_seq_length, %max_cache_length
      : memref<1x2x1x2x1x4xf32>, memref<1xi32>, memref<1x1xi32> -> !collection
  %k = kvcache.get_key_cache %collection[%c0] : !collection
  %v = kvcache.get_value_cache %collection[%c0] : !collection
  // CHECK: kvcache run-time check failed: kvcache.attention_ragged at {{.*}}attention-rope-checked.mlir:[[@LINE+1]]:3: rotary position 4 is out of range: max_positions (the rows of cos_sin) is 4
  kvcache.attention_ragged %q, %k, %v, %offsets, %out rope(%cos_sin) positions(%positions) {rotary_dims = 2 : i64, scale = 1.0 : f32, style = "half"}
      : memref<1x1x4xf32>, !cache, !cache, memref<2xi32>, memref<1x1x4xf32>, memref<4x2xf32>, memref<1xi32>
  vector.print str "completed\n"
  return
}
