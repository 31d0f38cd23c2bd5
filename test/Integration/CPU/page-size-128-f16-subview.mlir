// RUN: kvcache-opt %s -kvcache-to-cpu \
// RUN: | mlir-runner -e main -entry-point-result=void \
// RUN:     -shared-libs=%mlir_c_runner_utils,%mlir_runner_utils \
// RUN: | %python %S/reference.py %s | FileCheck %s
// RUN: kvcache-opt %s -kvcache-to-cpu=checked=true \
// RUN: | mlir-runner -e main -entry-point-result=void \
// RUN:     -shared-libs=%mlir_c_runner_utils,%mlir_runner_utils \
// RUN: | %python %S/reference.py %s | FileCheck %s

// An f16 cache with 128 tokens per page whose `blocks` is a memref.subview of
// a bigger buffer (static strides [9216, 3072, 1024, 8, 8, 1], offset 13312;
// the rest of the buffer holds the sentinel 2047). Checked against the numpy
// model of reference.py: every cached token read as vector<8xf16>; a 128-row
// tile (a whole page) and 32-row tiles; stores at the append position, in the
// last slot of a full page and in the null page 3, read back; then a dump of
// the whole buffer. Sequence 0 fills exactly one page (128), sequence 1 is two
// tokens into its second page (130), sequence 2 is empty.

// CHECK-NOT: MISMATCH
// CHECK: OK 1954 records

// REFERENCE: {"dtype": "f16", "num_pages": 4, "kv_dim": 2, "num_layers": 2, "page_size": 128, "num_heads": 1, "head_size": 8, "cache_lengths": [128, 130, 0], "lookup_table": [[1, 3], [2, 0], [3, 3]], "max_seq_length": 3, "max_cache_length": 131, "fill": [7919, 4093, 2046], "layout": {"parent_size": 46080, "offset": 13312, "strides": [9216, 3072, 1024], "sentinel": 2047}, "sweep_widths": [8], "full_dump": true}

!parent = memref<5x3x3x128x1x8xf16>
!blocks = memref<4x2x2x128x1x8xf16, strided<[9216, 3072, 1024, 8, 8, 1], offset: 13312>>
!collection = !kvcache.paged_collection<f16, num_heads = 1, head_size = 8, page_size = 128>
!cache = !kvcache.paged_cache<f16, num_heads = 1, head_size = 8, page_size = 128>
!tile128 = memref<128x8xf16, strided<[8, 1], offset: ?>>
!tile32 = memref<32x8xf16, strided<[8, 1], offset: ?>>

memref.global "private" constant @cache_lengths : memref<3xi32> = dense<[128, 130, 0]>
memref.global "private" constant @lookup_table : memref<3x2xi32> = dense<[[1, 3], [2, 0], [3, 3]]>

// blocks[p, kv, l, s, h, d] = (flat * 7919) mod 4093 - 2046, exact in f16.
func.func @fill(%blocks: !blocks) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  %c128 = arith.constant 128 : index
  %mul = arith.constant 7919 : i64
  %mod = arith.constant 4093 : i64
  %sub = arith.constant 2046 : i64
  scf.for %p = %c0 to %c4 step %c1 {
    scf.for %kv = %c0 to %c2 step %c1 {
      scf.for %l = %c0 to %c2 step %c1 {
        scf.for %s = %c0 to %c128 step %c1 {
          scf.for %d = %c0 to %c8 step %c1 {
            %flat = affine.apply affine_map<(p, kv, l, s, d) -> ((((p * 2 + kv) * 2 + l) * 128 + s) * 8 + d)>(%p, %kv, %l, %s, %d)
            %flat_i64 = arith.index_cast %flat : index to i64
            %product = arith.muli %flat_i64, %mul : i64
            %hash = arith.remui %product, %mod : i64
            %centered = arith.subi %hash, %sub : i64
            %value = arith.sitofp %centered : i64 to f16
            memref.store %value, %blocks[%p, %kv, %l, %s, %c0, %d] : !blocks
          }
        }
      }
    }
  }
  return
}

// Prints "TAG ( kv, l, b, h, t, d ) "; the value follows.
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
func.func @begin_store(%kv: index, %l: index, %b: index, %h: index, %t: index, %d: index) {
  vector.print str "store "
  %coords = vector.from_elements %kv, %l, %b, %h, %t, %d : vector<6xindex>
  vector.print %coords : vector<6xindex> punctuation <no_punctuation>
  vector.print str " "
  return
}

// Prints "tile ( kv, l, b, t, h, r ) ( row )".
func.func @print_tile_row(%row: vector<8xf16>, %kv: index, %l: index, %b: index, %t: index, %h: index, %r: index) {
  vector.print str "tile "
  %coords = vector.from_elements %kv, %l, %b, %t, %h, %r : vector<6xindex>
  vector.print %coords : vector<6xindex> punctuation <no_punctuation>
  vector.print str " "
  vector.print %row : vector<8xf16>
  return
}

// Every cached token, a whole head row (W = 8) at a time.
func.func @sweep(%cache: !cache, %kv: index, %l: index, %batch: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  scf.for %b = %c0 to %batch step %c1 {
    %length = kvcache.cache_length %cache[%b] : !cache
    scf.for %t = %c0 to %length step %c1 {
      %x = kvcache.load %cache[%b, %c0, %t, %c0] : !cache -> vector<8xf16>
      func.call @begin_sweep(%kv, %l, %b, %c0, %t, %c0) : (index, index, index, index, index, index) -> ()
      vector.print %x : vector<8xf16>
    }
  }
  return
}

func.func @print_tile128(%tile: !tile128, %kv: index, %l: index, %b: index, %t: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c128 = arith.constant 128 : index
  scf.for %r = %c0 to %c128 step %c1 {
    %row = vector.load %tile[%r, %c0] : !tile128, vector<8xf16>
    func.call @print_tile_row(%row, %kv, %l, %b, %t, %c0, %r) : (vector<8xf16>, index, index, index, index, index, index) -> ()
  }
  return
}

func.func @print_tile32(%tile: !tile32, %kv: index, %l: index, %b: index, %t: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c32 = arith.constant 32 : index
  scf.for %r = %c0 to %c32 step %c1 {
    %row = vector.load %tile[%r, %c0] : !tile32, vector<8xf16>
    func.call @print_tile_row(%row, %kv, %l, %b, %t, %c0, %r) : (vector<8xf16>, index, index, index, index, index, index) -> ()
  }
  return
}

func.func @main() {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %c4 = arith.constant 4 : index
  %c7 = arith.constant 7 : index
  %c64 = arith.constant 64 : index
  %c96 = arith.constant 96 : index
  %c127 = arith.constant 127 : index
  %c128 = arith.constant 128 : index
  %c130 = arith.constant 130 : index
  %parent_size = arith.constant 46080 : index
  %max_seq_length = arith.constant 3 : i32
  %max_cache_length = arith.constant 131 : i32
  %parent = memref.alloc() {alignment = 64 : i64} : !parent
  %flat_parent = memref.collapse_shape %parent [[0, 1, 2, 3, 4, 5]] : !parent into memref<46080xf16>
  %sentinel = arith.constant 2047.0 : f16
  scf.for %i = %c0 to %parent_size step %c1 {
    memref.store %sentinel, %flat_parent[%i] : memref<46080xf16>
  }
  %blocks = memref.subview %parent[1, 1, 1, 0, 0, 0] [4, 2, 2, 128, 1, 8] [1, 1, 1, 1, 1, 1] : !parent to !blocks
  func.call @fill(%blocks) : (!blocks) -> ()
  %lengths_global = memref.get_global @cache_lengths : memref<3xi32>
  %table_global = memref.get_global @lookup_table : memref<3x2xi32>
  %cache_lengths = memref.cast %lengths_global : memref<3xi32> to memref<?xi32>
  %lookup_table = memref.cast %table_global : memref<3x2xi32> to memref<?x?xi32>
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
    func.call @sweep(%key_cache, %c0, %l, %c3) : (!cache, index, index, index) -> ()
    func.call @sweep(%value_cache, %c1, %l, %c3) : (!cache, index, index, index) -> ()
  }

  %key1 = kvcache.get_key_cache %collection[%c1] : !collection
  %value0 = kvcache.get_value_cache %collection[%c0] : !collection
  %value1 = kvcache.get_value_cache %collection[%c1] : !collection
  %page_tile = kvcache.tile %key1[%c0, %c0, %c0] : !cache -> !tile128
  func.call @print_tile128(%page_tile, %c0, %c1, %c0, %c0) : (!tile128, index, index, index, index) -> ()
  %tail_tile = kvcache.tile %value0[%c1, %c96, %c0] : !cache -> !tile32
  func.call @print_tile32(%tail_tile, %c1, %c0, %c1, %c96) : (!tile32, index, index, index, index) -> ()
  %next_tile = kvcache.tile %value0[%c1, %c128, %c0] : !cache -> !tile32
  func.call @print_tile32(%next_tile, %c1, %c0, %c1, %c128) : (!tile32, index, index, index, index) -> ()

  // The append position of sequence 1, K and V of layer 1.
  %key_row = arith.constant dense<[-2000.0, -1999.0, -1998.0, -1997.0, -1996.0, -1995.0, -1994.0, -1993.0]> : vector<8xf16>
  func.call @begin_store(%c0, %c1, %c1, %c0, %c130, %c0) : (index, index, index, index, index, index) -> ()
  vector.print %key_row : vector<8xf16>
  kvcache.store %key_row, %key1[%c1, %c0, %c130, %c0] : !cache, vector<8xf16>
  %value_row = arith.constant dense<[2000.0, 1999.0, 1998.0, 1997.0, 1996.0, 1995.0, 1994.0, 1993.0]> : vector<8xf16>
  func.call @begin_store(%c1, %c1, %c1, %c0, %c130, %c0) : (index, index, index, index, index, index) -> ()
  vector.print %value_row : vector<8xf16>
  kvcache.store %value_row, %value1[%c1, %c0, %c130, %c0] : !cache, vector<8xf16>
  // The last slot of sequence 0's full page, and token 128 (the null page).
  %scalar = arith.constant 1500.0 : f16
  func.call @begin_store(%c1, %c0, %c0, %c0, %c127, %c7) : (index, index, index, index, index, index) -> ()
  vector.print %scalar : f16
  kvcache.store %scalar, %value0[%c0, %c0, %c127, %c7] : !cache, f16
  %quad = arith.constant dense<[1501.0, 1502.0, 1503.0, 1504.0]> : vector<4xf16>
  func.call @begin_store(%c0, %c1, %c0, %c0, %c128, %c4) : (index, index, index, index, index, index) -> ()
  vector.print %quad : vector<4xf16>
  kvcache.store %quad, %key1[%c0, %c0, %c128, %c4] : !cache, vector<4xf16>

  %key_back = kvcache.load %key1[%c1, %c0, %c130, %c0] : !cache -> vector<8xf16>
  func.call @begin_load(%c0, %c1, %c1, %c0, %c130, %c0) : (index, index, index, index, index, index) -> ()
  vector.print %key_back : vector<8xf16>
  %value_back = kvcache.load %value1[%c1, %c0, %c130, %c0] : !cache -> vector<8xf16>
  func.call @begin_load(%c1, %c1, %c1, %c0, %c130, %c0) : (index, index, index, index, index, index) -> ()
  vector.print %value_back : vector<8xf16>
  %last_back = kvcache.load %value0[%c0, %c0, %c127, %c0] : !cache -> vector<8xf16>
  func.call @begin_load(%c1, %c0, %c0, %c0, %c127, %c0) : (index, index, index, index, index, index) -> ()
  vector.print %last_back : vector<8xf16>
  // Sequence 2's token 0 is the null page's slot 0 too.
  %null_back = kvcache.load %key1[%c2, %c0, %c0, %c0] : !cache -> vector<8xf16>
  func.call @begin_load(%c0, %c1, %c2, %c0, %c0, %c0) : (index, index, index, index, index, index) -> ()
  vector.print %null_back : vector<8xf16>

  scf.for %i = %c0 to %parent_size step %c64 {
    %chunk = vector.load %flat_parent[%i] : memref<46080xf16>, vector<64xf16>
    vector.print str "parent "
    %at = vector.from_elements %i : vector<1xindex>
    vector.print %at : vector<1xindex> punctuation <no_punctuation>
    vector.print str " "
    vector.print %chunk : vector<64xf16>
  }
  vector.print str "done\n"
  memref.dealloc %parent : !parent
  return
}
