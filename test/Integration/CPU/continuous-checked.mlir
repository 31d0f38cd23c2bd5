// Run-time checks of the continuous-batching kind on the CPU: a token past
// block_tokens, a batch index past the lookup table and a lookup-table entry
// past num_blocks each stop a checked program with a message naming the op,
// the value and the bound; a write through an assert_write_mode = 1 cache is
// checked without checked=true. Without checks the good entry point runs and
// reads back what it stored (the token at slot t of the sequence's block).

// RUN: kvcache-opt %s -kvcache-to-cpu -o %t.unchecked.mlir
// RUN: mlir-runner %t.unchecked.mlir -e good -entry-point-result=void \
// RUN:     -shared-libs=%mlir_c_runner_utils,%mlir_runner_utils \
// RUN: | FileCheck %s --check-prefix=GOOD
// RUN: kvcache-opt %s -kvcache-to-cpu=checked=true -o %t.mlir
// RUN: mlir-runner %t.mlir -e good -entry-point-result=void \
// RUN:     -shared-libs=%mlir_c_runner_utils,%mlir_runner_utils \
// RUN: | FileCheck %s --check-prefix=GOOD
// RUN: not --crash mlir-runner %t.mlir -e bad_token -entry-point-result=void \
// RUN:     -shared-libs=%mlir_c_runner_utils,%mlir_runner_utils 2>&1 \
// RUN: | FileCheck %s --check-prefix=TOKEN
// RUN: not --crash mlir-runner %t.mlir -e bad_batch -entry-point-result=void \
// RUN:     -shared-libs=%mlir_c_runner_utils,%mlir_runner_utils 2>&1 \
// RUN: | FileCheck %s --check-prefix=BATCH
// RUN: not --crash mlir-runner %t.mlir -e bad_block -entry-point-result=void \
// RUN:     -shared-libs=%mlir_c_runner_utils,%mlir_runner_utils 2>&1 \
// RUN: | FileCheck %s --check-prefix=BLOCK
// RUN: not --crash mlir-runner %t.unchecked.mlir -e bad_write -entry-point-result=void \
// RUN:     -shared-libs=%mlir_c_runner_utils,%mlir_runner_utils 2>&1 \
// RUN: | FileCheck %s --check-prefix=WRITE

// GOOD: ( 1, 2, 3, 4 )
// GOOD-NEXT: ( 0, 0, 0, 0 )
// GOOD-NEXT: good completed
// TOKEN: kvcache run-time check failed: kvcache.load (kvcache.lookup) at {{.*}}continuous-checked.mlir:{{[0-9]+}}:{{[0-9]+}}: token position 3 is out of range: block_tokens is 3
// TOKEN-NOT: completed
// BATCH: kvcache run-time check failed: kvcache.load (kvcache.lookup) at {{.*}}: batch index 2 is out of range: the size of lookup_table is 2
// BLOCK: kvcache run-time check failed: kvcache.load (kvcache.lookup) at {{.*}}: block (lookup_table entry) 7 is out of range: num_blocks is 3
// WRITE: kvcache run-time check failed: kvcache.store (kvcache.lookup) at {{.*}}: token position 3 is out of range: block_tokens is 3

!blocks = memref<?x2x?x?x2x4xf32>
!collection = !kvcache.continuous_collection<f32, num_heads = 2, head_size = 4>
!checked_collection = !kvcache.continuous_collection<f32, num_heads = 2, head_size = 4, assert_write_mode = 1>
!cache = !kvcache.continuous_cache<f32, num_heads = 2, head_size = 4>
!checked_cache = !kvcache.continuous_cache<f32, num_heads = 2, head_size = 4, assert_write_mode = 1>

// 3 blocks of 3 token slots, 1 layer, 2 sequences in blocks 2 and 0.
memref.global "private" constant @cache_lengths : memref<2xi32> = dense<[2, 1]>
memref.global "private" constant @lookup_table : memref<2xi32> = dense<[2, 0]>
memref.global "private" constant @bad_table : memref<2xi32> = dense<[2, 7]>
// Indices the verifier cannot see.
memref.global "private" constant @two : memref<index> = dense<2>
memref.global "private" constant @three : memref<index> = dense<3>

// Blocks in a buffer one block larger than `blocks` (reads past it in the
// unchecked runs stay inside the allocation; only checked runs use them).
func.func @blocks() -> !blocks {
  %storage = memref.alloc() : memref<4x2x1x3x2x4xf32>
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%storage : memref<4x2x1x3x2x4xf32>)
  %view = memref.subview %storage[0, 0, 0, 0, 0, 0] [3, 2, 1, 3, 2, 4] [1, 1, 1, 1, 1, 1]
      : memref<4x2x1x3x2x4xf32> to memref<3x2x1x3x2x4xf32, strided<[48, 24, 24, 8, 4, 1]>>
  %blocks = memref.cast %view : memref<3x2x1x3x2x4xf32, strided<[48, 24, 24, 8, 4, 1]>> to !blocks
  return %blocks : !blocks
}

func.func @collection(%table_name: memref<2xi32>) -> !collection {
  %s = arith.constant 1 : i32
  %m = arith.constant 3 : i32
  %blocks = func.call @blocks() : () -> !blocks
  %lengths_static = memref.get_global @cache_lengths : memref<2xi32>
  %lengths = memref.cast %lengths_static : memref<2xi32> to memref<?xi32>
  %table = memref.cast %table_name : memref<2xi32> to memref<?xi32>
  %c = kvcache.continuous_collection %blocks, %lengths, %table, %s, %m
      : !blocks, memref<?xi32>, memref<?xi32> -> !collection
  return %c : !collection
}

func.func @key_cache() -> !cache {
  %table = memref.get_global @lookup_table : memref<2xi32>
  %c = func.call @collection(%table) : (memref<2xi32>) -> !collection
  %layer = arith.constant 0 : index
  %k = kvcache.get_key_cache %c[%layer] : !collection
  return %k : !cache
}

func.func @good() {
  %k = func.call @key_cache() : () -> !cache
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %x = arith.constant dense<[1.0, 2.0, 3.0, 4.0]> : vector<4xf32>
  // Token 2 of sequence 0 (its last slot), head 1.
  kvcache.store %x, %k[%c0, %c1, %c2, %c0] : !cache, vector<4xf32>
  %y = kvcache.load %k[%c0, %c1, %c2, %c0] : !cache -> vector<4xf32>
  vector.print %y : vector<4xf32>
  // The same slot of sequence 1's block: untouched.
  %z = kvcache.load %k[%c1, %c1, %c2, %c0] : !cache -> vector<4xf32>
  vector.print %z : vector<4xf32>
  vector.print str "good completed\n"
  return
}

func.func @bad_token() {
  %k = func.call @key_cache() : () -> !cache
  %c0 = arith.constant 0 : index
  %three_ref = memref.get_global @three : memref<index>
  %t = memref.load %three_ref[] : memref<index>
  %y = kvcache.load %k[%c0, %c0, %t, %c0] : !cache -> vector<4xf32>
  vector.print %y : vector<4xf32>
  vector.print str "bad_token completed\n"
  return
}

func.func @bad_batch() {
  %k = func.call @key_cache() : () -> !cache
  %c0 = arith.constant 0 : index
  %two_ref = memref.get_global @two : memref<index>
  %b = memref.load %two_ref[] : memref<index>
  %y = kvcache.load %k[%b, %c0, %c0, %c0] : !cache -> vector<4xf32>
  vector.print %y : vector<4xf32>
  return
}

func.func @bad_block() {
  %table = memref.get_global @bad_table : memref<2xi32>
  %c = func.call @collection(%table) : (memref<2xi32>) -> !collection
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %k = kvcache.get_key_cache %c[%c0] : !collection
  %y = kvcache.load %k[%c1, %c0, %c0, %c0] : !cache -> vector<4xf32>
  vector.print %y : vector<4xf32>
  return
}

// assert_write_mode = 1: the store is checked without checked=true.
func.func @bad_write() {
  %s = arith.constant 1 : i32
  %m = arith.constant 3 : i32
  %blocks = func.call @blocks() : () -> !blocks
  %lengths_static = memref.get_global @cache_lengths : memref<2xi32>
  %lengths = memref.cast %lengths_static : memref<2xi32> to memref<?xi32>
  %table_static = memref.get_global @lookup_table : memref<2xi32>
  %table = memref.cast %table_static : memref<2xi32> to memref<?xi32>
  %c = kvcache.continuous_collection %blocks, %lengths, %table, %s, %m
      : !blocks, memref<?xi32>, memref<?xi32> -> !checked_collection
  %c0 = arith.constant 0 : index
  %k = kvcache.get_key_cache %c[%c0] : !checked_collection
  %three_ref = memref.get_global @three : memref<index>
  %t = memref.load %three_ref[] : memref<index>
  %x = arith.constant dense<1.0> : vector<4xf32>
  kvcache.store %x, %k[%c0, %c0, %t, %c0] : !checked_cache, vector<4xf32>
  vector.print str "bad_write completed\n"
  return
}
