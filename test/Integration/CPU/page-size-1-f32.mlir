// RUN: kvcache-opt %s -kvcache-to-cpu \
// RUN: | mlir-runner -e main -entry-point-result=void \
// RUN:     -shared-libs=%mlir_c_runner_utils,%mlir_runner_utils \
// RUN: | %python %S/reference.py %s | FileCheck %s
// RUN: kvcache-opt %s -kvcache-to-cpu=checked=true \
// RUN: | mlir-runner -e main -entry-point-result=void \
// RUN:     -shared-libs=%mlir_c_runner_utils,%mlir_runner_utils \
// RUN: | %python %S/reference.py %s | FileCheck %s

// Reads of an f32 cache with one token per page, checked against the numpy
// model of reference.py: every token of every sequence, head, layer, K and V,
// with scalar, vector<2>, vector<4> and vector<8> loads; lookups of every
// lookup-table column; loads through the padding columns, which point at the
// null page 7; the metadata. Sequence 1 is empty. Caches cross func.call.

// CHECK-NOT: MISMATCH
// CHECK: OK 1311 records

// REFERENCE: {"dtype": "f32", "num_pages": 8, "kv_dim": 2, "num_layers": 3, "page_size": 1, "num_heads": 2, "head_size": 8, "cache_lengths": [3, 0, 4], "lookup_table": [[4, 0, 2, 7, 7], [7, 7, 7, 7, 7], [1, 5, 3, 6, 7]], "max_seq_length": 2, "max_cache_length": 5, "fill": [1, 16777216, 0], "sweep_widths": [1, 2, 4, 8]}

!blocks = memref<?x2x?x1x2x8xf32>
!collection = !kvcache.paged_collection<f32, num_heads = 2, head_size = 8, page_size = 1>
!cache = !kvcache.paged_cache<f32, num_heads = 2, head_size = 8, page_size = 1>

memref.global "private" constant @cache_lengths : memref<3xi32> = dense<[3, 0, 4]>
memref.global "private" constant @lookup_table : memref<3x5xi32> =
    dense<[[4, 0, 2, 7, 7], [7, 7, 7, 7, 7], [1, 5, 3, 6, 7]]>

// blocks[p, kv, l, s, h, d] = flat index of [p, kv, l, s, h, d].
func.func @fill(%blocks: !blocks) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c8 = arith.constant 8 : index
  %num_pages = memref.dim %blocks, %c0 : !blocks
  %num_layers = memref.dim %blocks, %c2 : !blocks
  scf.for %p = %c0 to %num_pages step %c1 {
    scf.for %kv = %c0 to %c2 step %c1 {
      scf.for %l = %c0 to %num_layers step %c1 {
        scf.for %h = %c0 to %c2 step %c1 {
          scf.for %d = %c0 to %c8 step %c1 {
            %flat = affine.apply affine_map<(p, kv, l, h, d)[layers] -> ((((p * 2 + kv) * layers + l) * 2 + h) * 8 + d)>(%p, %kv, %l, %h, %d)[%num_layers]
            %flat_i64 = arith.index_cast %flat : index to i64
            %value = arith.sitofp %flat_i64 : i64 to f32
            memref.store %value, %blocks[%p, %kv, %l, %c0, %h, %d] : !blocks
          }
        }
      }
    }
  }
  return
}

// Prints "TAG ( kv, l, b, h, t, d ) " for a record whose value follows.
func.func @begin_sweep(%kv: index, %l: index, %b: index, %h: index, %t: index, %d: index) {
  vector.print str "sweep "
  %coords = vector.from_elements %kv, %l, %b, %h, %t, %d : vector<6xindex>
  vector.print %coords : vector<6xindex> punctuation <no_punctuation>
  vector.print str " "
  return
}
func.func @begin_load(%kv: index, %l: index, %b: index, %h: index, %t: index, %d: index) {
  vector.print str "load "
  %coords = vector.from_elements %kv, %l, %b, %h, %t, %d : vector<6xindex>
  vector.print %coords : vector<6xindex> punctuation <no_punctuation>
  vector.print str " "
  return
}

// Every element of every cached token of `cache`, read W = 1, 2, 4, 8 at a time.
func.func @sweep(%cache: !cache, %kv: index, %l: index, %batch: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c4 = arith.constant 4 : index
  %c5 = arith.constant 5 : index
  %c7 = arith.constant 7 : index
  %c8 = arith.constant 8 : index
  scf.for %b = %c0 to %batch step %c1 {
    %length = kvcache.cache_length %cache[%b] : !cache
    scf.for %h = %c0 to %c2 step %c1 {
      scf.for %t = %c0 to %length step %c1 {
        scf.for %d = %c0 to %c8 step %c1 {
          %x = kvcache.load %cache[%b, %h, %t, %d] : !cache -> f32
          func.call @begin_sweep(%kv, %l, %b, %h, %t, %d) : (index, index, index, index, index, index) -> ()
          vector.print %x : f32
        }
        scf.for %d = %c0 to %c7 step %c2 {
          %x = kvcache.load %cache[%b, %h, %t, %d] : !cache -> vector<2xf32>
          func.call @begin_sweep(%kv, %l, %b, %h, %t, %d) : (index, index, index, index, index, index) -> ()
          vector.print %x : vector<2xf32>
        }
        scf.for %d = %c0 to %c5 step %c4 {
          %x = kvcache.load %cache[%b, %h, %t, %d] : !cache -> vector<4xf32>
          func.call @begin_sweep(%kv, %l, %b, %h, %t, %d) : (index, index, index, index, index, index) -> ()
          vector.print %x : vector<4xf32>
        }
        %x = kvcache.load %cache[%b, %h, %t, %c0] : !cache -> vector<8xf32>
        func.call @begin_sweep(%kv, %l, %b, %h, %t, %c0) : (index, index, index, index, index, index) -> ()
        vector.print %x : vector<8xf32>
      }
    }
  }
  return
}

// Every lookup-table column of every sequence, with a lookup and a page_load
// past the cached tokens (padding columns: the null page).
func.func @lookups(%cache: !cache, %kv: index, %l: index, %batch: index, %columns: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  scf.for %b = %c0 to %batch step %c1 {
    %length = kvcache.cache_length %cache[%b] : !cache
    scf.for %t = %c0 to %columns step %c1 {
      %page, %slot = kvcache.lookup %cache[%b, %t] : !cache
      vector.print str "lookup "
      %coords = vector.from_elements %b, %t : vector<2xindex>
      vector.print %coords : vector<2xindex> punctuation <no_punctuation>
      vector.print str " "
      %resolved = vector.from_elements %page, %slot : vector<2xindex>
      vector.print %resolved : vector<2xindex>
    }
    scf.for %t = %length to %columns step %c1 {
      %page, %slot = kvcache.lookup %cache[%b, %t] : !cache
      %x = kvcache.page_load %cache[%page, %slot, %c1, %c0] : !cache -> vector<8xf32>
      func.call @begin_load(%kv, %l, %b, %c1, %t, %c0) : (index, index, index, index, index, index) -> ()
      vector.print %x : vector<8xf32>
    }
  }
  return
}

func.func @main() {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %c5 = arith.constant 5 : index
  %max_seq_length = arith.constant 2 : i32
  %max_cache_length = arith.constant 5 : i32
  %storage = memref.alloc() : memref<8x2x3x1x2x8xf32>
  %blocks = memref.cast %storage : memref<8x2x3x1x2x8xf32> to !blocks
  func.call @fill(%blocks) : (!blocks) -> ()
  %lengths_global = memref.get_global @cache_lengths : memref<3xi32>
  %table_global = memref.get_global @lookup_table : memref<3x5xi32>
  %cache_lengths = memref.cast %lengths_global : memref<3xi32> to memref<?xi32>
  %lookup_table = memref.cast %table_global : memref<3x5xi32> to memref<?x?xi32>
  %collection = kvcache.paged_collection %blocks, %cache_lengths, %lookup_table, %max_seq_length, %max_cache_length
      : !blocks, memref<?xi32>, memref<?x?xi32> -> !collection

  scf.for %b = %c0 to %c3 step %c1 {
    %length = kvcache.cache_length %collection[%b] : !collection
    vector.print str "cache_length "
    %coords = vector.from_elements %b : vector<1xindex>
    vector.print %coords : vector<1xindex> punctuation <no_punctuation>
    vector.print str " "
    vector.print %length : index
  }
  %seq = kvcache.max_seq_length %collection : !collection
  %ctx = kvcache.max_cache_length %collection : !collection
  %maxima = vector.from_elements %seq, %ctx : vector<2xindex>
  vector.print str "max_lengths "
  vector.print %maxima : vector<2xindex>

  scf.for %l = %c0 to %c3 step %c1 {
    %key_cache = kvcache.get_key_cache %collection[%l] : !collection
    %value_cache = kvcache.get_value_cache %collection[%l] : !collection
    func.call @sweep(%key_cache, %c0, %l, %c3) : (!cache, index, index, index) -> ()
    func.call @sweep(%value_cache, %c1, %l, %c3) : (!cache, index, index, index) -> ()
  }
  %key_cache = kvcache.get_key_cache %collection[%c2] : !collection
  %value_cache = kvcache.get_value_cache %collection[%c1] : !collection
  func.call @lookups(%key_cache, %c0, %c2, %c3, %c5) : (!cache, index, index, index, index) -> ()
  func.call @lookups(%value_cache, %c1, %c1, %c3, %c5) : (!cache, index, index, index, index) -> ()
  vector.print str "done\n"
  memref.dealloc %storage : memref<8x2x3x1x2x8xf32>
  return
}
