// RUN: kvcache-opt %s -kvcache-to-cpu \
// RUN: | mlir-runner -e main -entry-point-result=void \
// RUN:     -shared-libs=%mlir_c_runner_utils,%mlir_runner_utils \
// RUN: | %python %S/reference.py %s | FileCheck %s
// RUN: kvcache-opt %s -kvcache-to-cpu=checked=true \
// RUN: | mlir-runner -e main -entry-point-result=void \
// RUN:     -shared-libs=%mlir_c_runner_utils,%mlir_runner_utils \
// RUN: | %python %S/reference.py %s | FileCheck %s

// Reads of an f16 cache with three tokens per page (not a power of two),
// checked against the numpy model of reference.py: every element of every
// cached token, K and V, both layers, both heads, with every vector width
// from 1 to 8 (vector<3xf16>, vector<5xf16>, ... included: d is a multiple of
// W, d + W <= head_size). Sequence 0 (6 tokens) and 3 (3 tokens) end exactly
// on a page boundary, sequence 1 is empty, sequence 2 fills part of its last
// page; padding columns point at the null page 8. Also every lookup, and
// 3-row and 1-row tiles of every page of every sequence.

// CHECK-NOT: MISMATCH
// CHECK: OK 5994 records

// REFERENCE: {"dtype": "f16", "num_pages": 9, "kv_dim": 2, "num_layers": 2, "page_size": 3, "num_heads": 2, "head_size": 16, "cache_lengths": [6, 0, 7, 3], "lookup_table": [[2, 5, 8], [8, 8, 8], [0, 7, 3], [6, 8, 8]], "max_seq_length": 1, "max_cache_length": 8, "fill": [7919, 4093, 2046], "sweep_widths": [1, 2, 3, 4, 5, 6, 7, 8]}

!blocks = memref<?x2x?x3x2x16xf16>
!collection = !kvcache.paged_collection<f16, num_heads = 2, head_size = 16, page_size = 3>
!cache = !kvcache.paged_cache<f16, num_heads = 2, head_size = 16, page_size = 3>
!tile3 = memref<3x16xf16, strided<[32, 1], offset: ?>>
!tile1 = memref<1x16xf16, strided<[32, 1], offset: ?>>

memref.global "private" constant @cache_lengths : memref<4xi32> = dense<[6, 0, 7, 3]>
memref.global "private" constant @lookup_table : memref<4x3xi32> =
    dense<[[2, 5, 8], [8, 8, 8], [0, 7, 3], [6, 8, 8]]>

// blocks[p, kv, l, s, h, d] = (flat * 7919) mod 4093 - 2046, exact in f16.
func.func @fill(%blocks: !blocks) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %c16 = arith.constant 16 : index
  %mul = arith.constant 7919 : i64
  %mod = arith.constant 4093 : i64
  %sub = arith.constant 2046 : i64
  %num_pages = memref.dim %blocks, %c0 : !blocks
  %num_layers = memref.dim %blocks, %c2 : !blocks
  scf.for %p = %c0 to %num_pages step %c1 {
    scf.for %kv = %c0 to %c2 step %c1 {
      scf.for %l = %c0 to %num_layers step %c1 {
        scf.for %s = %c0 to %c3 step %c1 {
          scf.for %h = %c0 to %c2 step %c1 {
            scf.for %d = %c0 to %c16 step %c1 {
              %flat = affine.apply affine_map<(p, kv, l, s, h, d)[layers] -> (((((p * 2 + kv) * layers + l) * 3 + s) * 2 + h) * 16 + d)>(%p, %kv, %l, %s, %h, %d)[%num_layers]
              %flat_i64 = arith.index_cast %flat : index to i64
              %product = arith.muli %flat_i64, %mul : i64
              %hash = arith.remui %product, %mod : i64
              %centered = arith.subi %hash, %sub : i64
              %value = arith.sitofp %centered : i64 to f16
              memref.store %value, %blocks[%p, %kv, %l, %s, %h, %d] : !blocks
            }
          }
        }
      }
    }
  }
  return
}

// Prints "sweep ( kv, l, b, h, t, d ) "; the loaded value follows.
func.func @begin_sweep(%kv: index, %l: index, %b: index, %h: index, %t: index, %d: index) {
  vector.print str "sweep "
  %coords = vector.from_elements %kv, %l, %b, %h, %t, %d : vector<6xindex>
  vector.print %coords : vector<6xindex> punctuation <no_punctuation>
  vector.print str " "
  return
}

// Prints "tile ( kv, l, b, t, h, r ) ( row )".
func.func @print_tile_row(%row: vector<16xf16>, %kv: index, %l: index, %b: index, %t: index, %h: index, %r: index) {
  vector.print str "tile "
  %coords = vector.from_elements %kv, %l, %b, %t, %h, %r : vector<6xindex>
  vector.print %coords : vector<6xindex> punctuation <no_punctuation>
  vector.print str " "
  vector.print %row : vector<16xf16>
  return
}

// Every element of every cached token, W = 1 .. 8 elements at a time.
func.func @sweep(%cache: !cache, %kv: index, %l: index, %batch: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %c4 = arith.constant 4 : index
  %c5 = arith.constant 5 : index
  %c6 = arith.constant 6 : index
  %c7 = arith.constant 7 : index
  %c8 = arith.constant 8 : index
  %c9 = arith.constant 9 : index
  %c10 = arith.constant 10 : index
  %c11 = arith.constant 11 : index
  %c12 = arith.constant 12 : index
  %c13 = arith.constant 13 : index
  %c14 = arith.constant 14 : index
  %c15 = arith.constant 15 : index
  %c16 = arith.constant 16 : index
  scf.for %b = %c0 to %batch step %c1 {
    %length = kvcache.cache_length %cache[%b] : !cache
    scf.for %h = %c0 to %c2 step %c1 {
      scf.for %t = %c0 to %length step %c1 {
        scf.for %d = %c0 to %c16 step %c1 {
          %x = kvcache.load %cache[%b, %h, %t, %d] : !cache -> f16
          func.call @begin_sweep(%kv, %l, %b, %h, %t, %d) : (index, index, index, index, index, index) -> ()
          vector.print %x : f16
        }
        scf.for %d = %c0 to %c15 step %c2 {
          %x = kvcache.load %cache[%b, %h, %t, %d] : !cache -> vector<2xf16>
          func.call @begin_sweep(%kv, %l, %b, %h, %t, %d) : (index, index, index, index, index, index) -> ()
          vector.print %x : vector<2xf16>
        }
        scf.for %d = %c0 to %c14 step %c3 {
          %x = kvcache.load %cache[%b, %h, %t, %d] : !cache -> vector<3xf16>
          func.call @begin_sweep(%kv, %l, %b, %h, %t, %d) : (index, index, index, index, index, index) -> ()
          vector.print %x : vector<3xf16>
        }
        scf.for %d = %c0 to %c13 step %c4 {
          %x = kvcache.load %cache[%b, %h, %t, %d] : !cache -> vector<4xf16>
          func.call @begin_sweep(%kv, %l, %b, %h, %t, %d) : (index, index, index, index, index, index) -> ()
          vector.print %x : vector<4xf16>
        }
        scf.for %d = %c0 to %c12 step %c5 {
          %x = kvcache.load %cache[%b, %h, %t, %d] : !cache -> vector<5xf16>
          func.call @begin_sweep(%kv, %l, %b, %h, %t, %d) : (index, index, index, index, index, index) -> ()
          vector.print %x : vector<5xf16>
        }
        scf.for %d = %c0 to %c11 step %c6 {
          %x = kvcache.load %cache[%b, %h, %t, %d] : !cache -> vector<6xf16>
          func.call @begin_sweep(%kv, %l, %b, %h, %t, %d) : (index, index, index, index, index, index) -> ()
          vector.print %x : vector<6xf16>
        }
        scf.for %d = %c0 to %c10 step %c7 {
          %x = kvcache.load %cache[%b, %h, %t, %d] : !cache -> vector<7xf16>
          func.call @begin_sweep(%kv, %l, %b, %h, %t, %d) : (index, index, index, index, index, index) -> ()
          vector.print %x : vector<7xf16>
        }
        scf.for %d = %c0 to %c9 step %c8 {
          %x = kvcache.load %cache[%b, %h, %t, %d] : !cache -> vector<8xf16>
          func.call @begin_sweep(%kv, %l, %b, %h, %t, %d) : (index, index, index, index, index, index) -> ()
          vector.print %x : vector<8xf16>
        }
      }
    }
  }
  return
}

// Every lookup-table column through 3-row tiles, and each token again
// through 1-row tiles.
func.func @tiles(%cache: !cache, %kv: index, %l: index, %batch: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %c9 = arith.constant 9 : index
  scf.for %b = %c0 to %batch step %c1 {
    scf.for %h = %c0 to %c2 step %c1 {
      scf.for %t = %c0 to %c9 step %c3 {
        %tile = kvcache.tile %cache[%b, %t, %h] : !cache -> !tile3
        scf.for %r = %c0 to %c3 step %c1 {
          %row = vector.load %tile[%r, %c0] : !tile3, vector<16xf16>
          func.call @print_tile_row(%row, %kv, %l, %b, %t, %h, %r) : (vector<16xf16>, index, index, index, index, index, index) -> ()
        }
      }
      scf.for %t = %c0 to %c9 step %c1 {
        %tile = kvcache.tile %cache[%b, %t, %h] : !cache -> !tile1
        %row = vector.load %tile[%c0, %c0] : !tile1, vector<16xf16>
        func.call @print_tile_row(%row, %kv, %l, %b, %t, %h, %c0) : (vector<16xf16>, index, index, index, index, index, index) -> ()
      }
    }
  }
  return
}

func.func @main() {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %c4 = arith.constant 4 : index
  %c9 = arith.constant 9 : index
  %max_seq_length = arith.constant 1 : i32
  %max_cache_length = arith.constant 8 : i32
  %storage = memref.alloc() : memref<9x2x2x3x2x16xf16>
  %blocks = memref.cast %storage : memref<9x2x2x3x2x16xf16> to !blocks
  func.call @fill(%blocks) : (!blocks) -> ()
  %lengths_global = memref.get_global @cache_lengths : memref<4xi32>
  %table_global = memref.get_global @lookup_table : memref<4x3xi32>
  %cache_lengths = memref.cast %lengths_global : memref<4xi32> to memref<?xi32>
  %lookup_table = memref.cast %table_global : memref<4x3xi32> to memref<?x?xi32>
  %collection = kvcache.paged_collection %blocks, %cache_lengths, %lookup_table, %max_seq_length, %max_cache_length
      : !blocks, memref<?xi32>, memref<?x?xi32> -> !collection

  %seq = kvcache.max_seq_length %collection : !collection
  %ctx = kvcache.max_cache_length %collection : !collection
  %maxima = vector.from_elements %seq, %ctx : vector<2xindex>
  vector.print str "max_lengths "
  vector.print %maxima : vector<2xindex>

  scf.for %l = %c0 to %c2 step %c1 {
    %key_cache = kvcache.get_key_cache %collection[%l] : !collection
    %value_cache = kvcache.get_value_cache %collection[%l] : !collection
    func.call @sweep(%key_cache, %c0, %l, %c4) : (!cache, index, index, index) -> ()
    func.call @sweep(%value_cache, %c1, %l, %c4) : (!cache, index, index, index) -> ()
    func.call @tiles(%key_cache, %c0, %l, %c4) : (!cache, index, index, index) -> ()
    func.call @tiles(%value_cache, %c1, %l, %c4) : (!cache, index, index, index) -> ()
  }

  %value_cache = kvcache.get_value_cache %collection[%c1] : !collection
  scf.for %b = %c0 to %c4 step %c1 {
    %length = kvcache.cache_length %value_cache[%b] : !cache
    vector.print str "cache_length "
    %coords = vector.from_elements %b : vector<1xindex>
    vector.print %coords : vector<1xindex> punctuation <no_punctuation>
    vector.print str " "
    vector.print %length : index
    scf.for %t = %c0 to %c9 step %c1 {
      %page, %slot = kvcache.lookup %value_cache[%b, %t] : !cache
      vector.print str "lookup "
      %where = vector.from_elements %b, %t : vector<2xindex>
      vector.print %where : vector<2xindex> punctuation <no_punctuation>
      vector.print str " "
      %resolved = vector.from_elements %page, %slot : vector<2xindex>
      vector.print %resolved : vector<2xindex>
    }
  }
  vector.print str "done\n"
  memref.dealloc %storage : memref<9x2x2x3x2x16xf16>
  return
}
