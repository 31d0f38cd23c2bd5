// RUN: kvcache-opt %s -kvcache-to-cpu \
// RUN: | mlir-runner -e main -entry-point-result=void \
// RUN:     -shared-libs=%mlir_c_runner_utils,%mlir_runner_utils \
// RUN: | %python %S/reference.py %s | FileCheck %s
// RUN: kvcache-opt %s -kvcache-to-cpu=checked=true \
// RUN: | mlir-runner -e main -entry-point-result=void \
// RUN:     -shared-libs=%mlir_c_runner_utils,%mlir_runner_utils \
// RUN: | %python %S/reference.py %s | FileCheck %s

// A bf16 cache with 16 tokens per page whose `blocks` is a strided view with
// dynamic outer strides and offset, `strided<[?, ?, ?, 16, 8, 1], offset: ?>`,
// made by memref.reinterpret_cast of a flat buffer: the layer, kv and page
// strides are padded (264, 544, 1112 elements, not 256, 528, 1056), the
// view starts 40 elements in, and the padding holds the sentinel 200. Checked
// against the numpy model of reference.py (an as_strided view of the same
// buffer): every cached element with W = 1, 2, 4, 8; 16-row and 8-row tiles;
// stores (scalar and vectors, K and V, through the padding columns of the
// empty sequence into the null page 4, read back through another sequence's
// padding); a page_store; then a dump of the whole flat buffer, which shows
// where each write landed and that nothing else changed.
// Sequence 0 ends on a page boundary (16), sequence 1 is one token into its
// third page (33), sequence 2 is empty.

// CHECK-NOT: MISMATCH
// CHECK: OK 7452 records

// REFERENCE: {"dtype": "bf16", "num_pages": 5, "kv_dim": 2, "num_layers": 2, "page_size": 16, "num_heads": 2, "head_size": 8, "cache_lengths": [16, 33, 0], "lookup_table": [[3, 4, 4], [0, 2, 1], [4, 4, 4]], "max_seq_length": 7, "max_cache_length": 34, "fill": [31, 251, 125], "layout": {"parent_size": 5576, "offset": 40, "strides": [1112, 544, 264], "sentinel": 200}, "sweep_widths": [1, 2, 4, 8], "full_dump": true}

!blocks = memref<?x2x?x16x2x8xbf16, strided<[?, ?, ?, 16, 8, 1], offset: ?>>
!collection = !kvcache.paged_collection<bf16, num_heads = 2, head_size = 8, page_size = 16>
!cache = !kvcache.paged_cache<bf16, num_heads = 2, head_size = 8, page_size = 16>
!tile16 = memref<16x8xbf16, strided<[16, 1], offset: ?>>
!tile8 = memref<8x8xbf16, strided<[16, 1], offset: ?>>

memref.global "private" constant @cache_lengths : memref<3xi32> = dense<[16, 33, 0]>
memref.global "private" constant @lookup_table : memref<3x3xi32> =
    dense<[[3, 4, 4], [0, 2, 1], [4, 4, 4]]>

// blocks[p, kv, l, s, h, d] = (flat * 31) mod 251 - 125, exact in bf16.
func.func @fill(%blocks: !blocks) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c8 = arith.constant 8 : index
  %c16 = arith.constant 16 : index
  %mul = arith.constant 31 : i64
  %mod = arith.constant 251 : i64
  %sub = arith.constant 125 : i64
  %num_pages = memref.dim %blocks, %c0 : !blocks
  %num_layers = memref.dim %blocks, %c2 : !blocks
  scf.for %p = %c0 to %num_pages step %c1 {
    scf.for %kv = %c0 to %c2 step %c1 {
      scf.for %l = %c0 to %num_layers step %c1 {
        scf.for %s = %c0 to %c16 step %c1 {
          scf.for %h = %c0 to %c2 step %c1 {
            scf.for %d = %c0 to %c8 step %c1 {
              %flat = affine.apply affine_map<(p, kv, l, s, h, d)[layers] -> (((((p * 2 + kv) * layers + l) * 16 + s) * 2 + h) * 8 + d)>(%p, %kv, %l, %s, %h, %d)[%num_layers]
              %flat_i64 = arith.index_cast %flat : index to i64
              %product = arith.muli %flat_i64, %mul : i64
              %hash = arith.remui %product, %mod : i64
              %centered = arith.subi %hash, %sub : i64
              %value = arith.sitofp %centered : i64 to bf16
              memref.store %value, %blocks[%p, %kv, %l, %s, %h, %d] : !blocks
            }
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
func.func @print_tile_row(%row: vector<8xbf16>, %kv: index, %l: index, %b: index, %t: index, %h: index, %r: index) {
  vector.print str "tile "
  %coords = vector.from_elements %kv, %l, %b, %t, %h, %r : vector<6xindex>
  vector.print %coords : vector<6xindex> punctuation <no_punctuation>
  vector.print str " "
  vector.print %row : vector<8xbf16>
  return
}

// Every element of every cached token, W = 1, 2, 4, 8 at a time.
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
          %x = kvcache.load %cache[%b, %h, %t, %d] : !cache -> bf16
          func.call @begin_sweep(%kv, %l, %b, %h, %t, %d) : (index, index, index, index, index, index) -> ()
          vector.print %x : bf16
        }
        scf.for %d = %c0 to %c7 step %c2 {
          %x = kvcache.load %cache[%b, %h, %t, %d] : !cache -> vector<2xbf16>
          func.call @begin_sweep(%kv, %l, %b, %h, %t, %d) : (index, index, index, index, index, index) -> ()
          vector.print %x : vector<2xbf16>
        }
        scf.for %d = %c0 to %c5 step %c4 {
          %x = kvcache.load %cache[%b, %h, %t, %d] : !cache -> vector<4xbf16>
          func.call @begin_sweep(%kv, %l, %b, %h, %t, %d) : (index, index, index, index, index, index) -> ()
          vector.print %x : vector<4xbf16>
        }
        %x = kvcache.load %cache[%b, %h, %t, %c0] : !cache -> vector<8xbf16>
        func.call @begin_sweep(%kv, %l, %b, %h, %t, %c0) : (index, index, index, index, index, index) -> ()
        vector.print %x : vector<8xbf16>
      }
    }
  }
  return
}

// Every page of every sequence through 16-row tiles of head 1, and the second
// half of each page through an 8-row tile of head 0.
func.func @tiles(%cache: !cache, %kv: index, %l: index, %batch: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %c16 = arith.constant 16 : index
  %c48 = arith.constant 48 : index
  scf.for %b = %c0 to %batch step %c1 {
    scf.for %t = %c0 to %c48 step %c16 {
      %tile = kvcache.tile %cache[%b, %t, %c1] : !cache -> !tile16
      scf.for %r = %c0 to %c16 step %c1 {
        %row = vector.load %tile[%r, %c0] : !tile16, vector<8xbf16>
        func.call @print_tile_row(%row, %kv, %l, %b, %t, %c1, %r) : (vector<8xbf16>, index, index, index, index, index, index) -> ()
      }
      %second_half = arith.addi %t, %c8 : index
      %half = kvcache.tile %cache[%b, %second_half, %c0] : !cache -> !tile8
      scf.for %r = %c0 to %c8 step %c1 {
        %row = vector.load %half[%r, %c0] : !tile8, vector<8xbf16>
        func.call @print_tile_row(%row, %kv, %l, %b, %second_half, %c0, %r) : (vector<8xbf16>, index, index, index, index, index, index) -> ()
      }
    }
  }
  return
}

// Stores, each printed first, then reads that must see them.
func.func @stores(%collection: !collection) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %c4 = arith.constant 4 : index
  %c5 = arith.constant 5 : index
  %c6 = arith.constant 6 : index
  %c7 = arith.constant 7 : index
  %c15 = arith.constant 15 : index
  %c16 = arith.constant 16 : index
  %c33 = arith.constant 33 : index
  %key0 = kvcache.get_key_cache %collection[%c0] : !collection
  %value1 = kvcache.get_value_cache %collection[%c1] : !collection
  %key1 = kvcache.get_key_cache %collection[%c1] : !collection

  // The next token of sequence 1 (an append at position cache_length).
  %row = arith.constant dense<[130.0, 131.0, 132.0, 133.0, 134.0, 135.0, 136.0, 137.0]> : vector<8xbf16>
  func.call @begin_store(%c1, %c1, %c1, %c0, %c33, %c0) : (index, index, index, index, index, index) -> ()
  vector.print %row : vector<8xbf16>
  kvcache.store %row, %value1[%c1, %c0, %c33, %c0] : !cache, vector<8xbf16>
  // The last slot of sequence 0's only page.
  %pair = arith.constant dense<[-140.0, -141.0]> : vector<2xbf16>
  func.call @begin_store(%c0, %c0, %c0, %c1, %c15, %c6) : (index, index, index, index, index, index) -> ()
  vector.print %pair : vector<2xbf16>
  kvcache.store %pair, %key0[%c0, %c1, %c15, %c6] : !cache, vector<2xbf16>
  // Sequence 2 is empty: its token 3 is in the null page, which sequence 0's
  // padding column points at too.
  %quad = arith.constant dense<[150.0, 151.0, 152.0, 153.0]> : vector<4xbf16>
  func.call @begin_store(%c0, %c1, %c2, %c1, %c3, %c4) : (index, index, index, index, index, index) -> ()
  vector.print %quad : vector<4xbf16>
  kvcache.store %quad, %key1[%c2, %c1, %c3, %c4] : !cache, vector<4xbf16>
  %scalar = arith.constant 160.0 : bf16
  func.call @begin_store(%c1, %c1, %c1, %c1, %c7, %c5) : (index, index, index, index, index, index) -> ()
  vector.print %scalar : bf16
  kvcache.store %scalar, %value1[%c1, %c1, %c7, %c5] : !cache, bf16
  // A page_store at page 2, slot 5 (token 21 of sequence 1).
  %page_quad = arith.constant dense<[170.0, 171.0, 172.0, 173.0]> : vector<4xbf16>
  vector.print str "page_store "
  %where = vector.from_elements %c0, %c1, %c2, %c5, %c1, %c4 : vector<6xindex>
  vector.print %where : vector<6xindex> punctuation <no_punctuation>
  vector.print str " "
  vector.print %page_quad : vector<4xbf16>
  kvcache.page_store %page_quad, %key1[%c2, %c5, %c1, %c4] : !cache, vector<4xbf16>

  %appended = kvcache.load %value1[%c1, %c0, %c33, %c0] : !cache -> vector<8xbf16>
  func.call @begin_load(%c1, %c1, %c1, %c0, %c33, %c0) : (index, index, index, index, index, index) -> ()
  vector.print %appended : vector<8xbf16>
  %last_slot = kvcache.load %key0[%c0, %c1, %c15, %c0] : !cache -> vector<8xbf16>
  func.call @begin_load(%c0, %c0, %c0, %c1, %c15, %c0) : (index, index, index, index, index, index) -> ()
  vector.print %last_slot : vector<8xbf16>
  // Token 19 of sequence 0 is slot 3 of the null page as well.
  %c19 = arith.constant 19 : index
  %through_null = kvcache.load %key1[%c0, %c1, %c19, %c4] : !cache -> vector<4xbf16>
  func.call @begin_load(%c0, %c1, %c0, %c1, %c19, %c4) : (index, index, index, index, index, index) -> ()
  vector.print %through_null : vector<4xbf16>
  %c21 = arith.constant 21 : index
  %paged = kvcache.load %key1[%c1, %c1, %c21, %c4] : !cache -> vector<4xbf16>
  func.call @begin_load(%c0, %c1, %c1, %c1, %c21, %c4) : (index, index, index, index, index, index) -> ()
  vector.print %paged : vector<4xbf16>
  return
}

func.func @main() {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %c8 = arith.constant 8 : index
  %parent_size = arith.constant 5576 : index
  %max_seq_length = arith.constant 7 : i32
  %max_cache_length = arith.constant 34 : i32
  %parent = memref.alloc() {alignment = 64 : i64} : memref<5576xbf16>
  %sentinel = arith.constant 200.0 : bf16
  scf.for %i = %c0 to %parent_size step %c1 {
    memref.store %sentinel, %parent[%i] : memref<5576xbf16>
  }
  // Passed through a call so that the offset, sizes and strides stay dynamic.
  %offset, %num_pages, %num_layers, %page_stride, %kv_stride, %layer_stride = func.call @layout() : () -> (index, index, index, index, index, index)
  %blocks = memref.reinterpret_cast %parent to offset: [%offset], sizes: [%num_pages, 2, %num_layers, 16, 2, 8], strides: [%page_stride, %kv_stride, %layer_stride, 16, 8, 1]
      : memref<5576xbf16> to !blocks
  func.call @fill(%blocks) : (!blocks) -> ()
  %lengths_global = memref.get_global @cache_lengths : memref<3xi32>
  %table_global = memref.get_global @lookup_table : memref<3x3xi32>
  %cache_lengths = memref.cast %lengths_global : memref<3xi32> to memref<?xi32>
  %lookup_table = memref.cast %table_global : memref<3x3xi32> to memref<?x?xi32>
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
    func.call @tiles(%key_cache, %c0, %l, %c3) : (!cache, index, index, index) -> ()
    func.call @tiles(%value_cache, %c1, %l, %c3) : (!cache, index, index, index) -> ()
  }
  func.call @stores(%collection) : (!collection) -> ()

  scf.for %i = %c0 to %parent_size step %c8 {
    %chunk = vector.load %parent[%i] : memref<5576xbf16>, vector<8xbf16>
    vector.print str "parent "
    %at = vector.from_elements %i : vector<1xindex>
    vector.print %at : vector<1xindex> punctuation <no_punctuation>
    vector.print str " "
    vector.print %chunk : vector<8xbf16>
  }
  vector.print str "done\n"
  memref.dealloc %parent : memref<5576xbf16>
  return
}

// offset, num_pages, num_layers and the padded page, kv and layer strides.
func.func private @layout() -> (index, index, index, index, index, index) attributes {no_inline} {
  %offset = arith.constant 40 : index
  %num_pages = arith.constant 5 : index
  %num_layers = arith.constant 2 : index
  %page_stride = arith.constant 1112 : index
  %kv_stride = arith.constant 544 : index
  %layer_stride = arith.constant 264 : index
  return %offset, %num_pages, %num_layers, %page_stride, %kv_stride, %layer_stride : index, index, index, index, index, index
}
