// RUN: kvcache-opt %s -kvcache-to-cpu \
// RUN: | mlir-runner -e main -entry-point-result=void \
// RUN:     -shared-libs=%mlir_c_runner_utils,%mlir_runner_utils \
// RUN: | %python %S/reference.py %s | FileCheck %s

// Cache values crossing region and function boundaries (docs/Contract.md,
// section 3.4),
// checked against the numpy model of reference.py: a collection returned by a
// function, a cache picked by scf.if on a run-time condition, caches carried
// through scf.for iter_args and returned from a function; and the metadata
// read as unsigned i32 (cache_lengths[2] = 2^31, max_seq_length = 2^32 - 1,
// max_cache_length = 3000000000).

// CHECK-NOT: MISMATCH
// CHECK: OK 45 records

// REFERENCE: {"dtype": "f32", "num_pages": 4, "kv_dim": 2, "num_layers": 2, "page_size": 4, "num_heads": 2, "head_size": 4, "cache_lengths": [6, 4, 2147483648], "lookup_table": [[1, 2], [0, 3], [3, 3]], "max_seq_length": 4294967295, "max_cache_length": 3000000000, "fill": [1, 16777216, 0]}

!blocks = memref<?x2x?x4x2x4xf32>
!collection = !kvcache.paged_collection<f32, num_heads = 2, head_size = 4, page_size = 4>
!cache = !kvcache.paged_cache<f32, num_heads = 2, head_size = 4, page_size = 4>

memref.global "private" constant @cache_lengths : memref<3xi32> = dense<[6, 4, -2147483648]>
memref.global "private" constant @lookup_table : memref<3x2xi32> = dense<[[1, 2], [0, 3], [3, 3]]>
// A condition the compiler cannot see: true.
memref.global "private" constant @pick_value : memref<i1> = dense<true>

// blocks[p, kv, l, s, h, d] = flat index of [p, kv, l, s, h, d].
func.func @make_collection() -> !collection {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c512 = arith.constant 512 : index
  %max_seq_length = arith.constant -1 : i32
  %max_cache_length = arith.constant -1294967296 : i32
  %storage = memref.alloc() : memref<4x2x2x4x2x4xf32>
  %flat = memref.collapse_shape %storage [[0, 1, 2, 3, 4, 5]] : memref<4x2x2x4x2x4xf32> into memref<512xf32>
  scf.for %i = %c0 to %c512 step %c1 {
    %i_i64 = arith.index_cast %i : index to i64
    %value = arith.sitofp %i_i64 : i64 to f32
    memref.store %value, %flat[%i] : memref<512xf32>
  }
  %blocks = memref.cast %storage : memref<4x2x2x4x2x4xf32> to !blocks
  %lengths_global = memref.get_global @cache_lengths : memref<3xi32>
  %table_global = memref.get_global @lookup_table : memref<3x2xi32>
  %cache_lengths = memref.cast %lengths_global : memref<3xi32> to memref<?xi32>
  %lookup_table = memref.cast %table_global : memref<3x2xi32> to memref<?x?xi32>
  %collection = kvcache.paged_collection %blocks, %cache_lengths, %lookup_table, %max_seq_length, %max_cache_length
      : !blocks, memref<?xi32>, memref<?x?xi32> -> !collection
  return %collection : !collection
}

func.func @value_cache_of(%collection: !collection, %layer: index) -> !cache {
  %cache = kvcache.get_value_cache %collection[%layer] : !collection
  return %cache : !cache
}

// Prints "load ( kv, l, b, h, t, d ) ( value )" for every token of sequences 0
// and 1, head `h`, read 4 elements at a time.
func.func @print_tokens(%cache: !cache, %kv: index, %l: index, %h: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  scf.for %b = %c0 to %c2 step %c1 {
    %length = kvcache.cache_length %cache[%b] : !cache
    scf.for %t = %c0 to %length step %c1 {
      %x = kvcache.load %cache[%b, %h, %t, %c0] : !cache -> vector<4xf32>
      vector.print str "load "
      %coords = vector.from_elements %kv, %l, %b, %h, %t, %c0 : vector<6xindex>
      vector.print %coords : vector<6xindex> punctuation <no_punctuation>
      vector.print str " "
      vector.print %x : vector<4xf32>
    }
  }
  return
}

func.func @main() {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %collection = call @make_collection() : () -> !collection

  scf.for %b = %c0 to %c3 step %c1 {
    %length = kvcache.cache_length %collection[%b] : !collection
    vector.print str "cache_length "
    %coords = vector.from_elements %b : vector<1xindex>
    vector.print %coords : vector<1xindex> punctuation <no_punctuation>
    vector.print str " "
    vector.print %length : index
  }
  %key0 = kvcache.get_key_cache %collection[%c0] : !collection
  %seq = kvcache.max_seq_length %key0 : !cache
  %ctx = kvcache.max_cache_length %key0 : !cache
  %maxima = vector.from_elements %seq, %ctx : vector<2xindex>
  vector.print str "max_lengths "
  vector.print %maxima : vector<2xindex>

  // scf.if yields the value cache of layer 1 (the condition is true).
  %flag = memref.get_global @pick_value : memref<i1>
  %pick_value = memref.load %flag[] : memref<i1>
  %picked, %picked_kv = scf.if %pick_value -> (!cache, index) {
    %value1 = kvcache.get_value_cache %collection[%c1] : !collection
    scf.yield %value1, %c1 : !cache, index
  } else {
    %key1 = kvcache.get_key_cache %collection[%c1] : !collection
    scf.yield %key1, %c0 : !cache, index
  }
  func.call @print_tokens(%picked, %picked_kv, %c1, %c1) : (!cache, index, index, index) -> ()

  // iter_args: K of layer 0, then V of layer 0, then V of layer 1 after the loop.
  %last = scf.for %l = %c0 to %c2 step %c1 iter_args(%cache = %key0) -> (!cache) {
    %kv = arith.minui %l, %c1 : index
    %layer = arith.subi %l, %kv : index
    func.call @print_tokens(%cache, %kv, %layer, %c0) : (!cache, index, index, index) -> ()
    %next = func.call @value_cache_of(%collection, %l) : (!collection, index) -> !cache
    scf.yield %next : !cache
  }
  func.call @print_tokens(%last, %c1, %c1, %c0) : (!cache, index, index, index) -> ()
  vector.print str "done\n"
  return
}
