// RUN: kvcache-opt %s -kvcache-to-cpu \
// RUN: | mlir-runner -e main -entry-point-result=void \
// RUN:     -shared-libs=%mlir_c_runner_utils,%mlir_runner_utils \
// RUN: | %python %S/reference.py %s | FileCheck %s
// RUN: kvcache-opt %s -kvcache-to-cpu=checked=true \
// RUN: | mlir-runner -e main -entry-point-result=void \
// RUN:     -shared-libs=%mlir_c_runner_utils,%mlir_runner_utils \
// RUN: | %python %S/reference.py %s | FileCheck %s

// An MLA collection (mla = true: kv_dim 1, keys only, one head) of f32,
// checked against the numpy model of reference.py: every cached element of
// both layers with W = 1, 4, 8 and 16 (the whole head_size); stores of the
// next token of each sequence (sequence 1's token 8 and empty sequence 2's
// token 0 both live in slot 0 of the null page 5: the second store replaces
// the first, as in any page) and a page_store; the stored rows read back;
// then every row of `blocks`, read with memref ops, which shows where the
// writes landed and that nothing else changed.

// CHECK-NOT: MISMATCH
// CHECK: OK 693 records

// REFERENCE: {"dtype": "f32", "num_pages": 6, "kv_dim": 1, "num_layers": 2, "page_size": 4, "num_heads": 1, "head_size": 16, "cache_lengths": [5, 8, 0], "lookup_table": [[3, 1, 5], [0, 2, 5], [5, 5, 5]], "max_seq_length": 1, "max_cache_length": 9, "fill": [1, 16777216, 0], "sweep_widths": [1, 4, 8, 16], "full_dump": true}

!blocks = memref<?x1x?x4x1x16xf32>
!collection = !kvcache.paged_collection<f32, num_heads = 1, head_size = 16, page_size = 4, mla = true>
!cache = !kvcache.paged_cache<f32, num_heads = 1, head_size = 16, page_size = 4, mla = true>

memref.global "private" constant @cache_lengths : memref<3xi32> = dense<[5, 8, 0]>
memref.global "private" constant @lookup_table : memref<3x3xi32> =
    dense<[[3, 1, 5], [0, 2, 5], [5, 5, 5]]>

// blocks[p, 0, l, s, 0, d] = flat index of [p, 0, l, s, 0, d].
func.func @fill(%blocks: !blocks) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c4 = arith.constant 4 : index
  %c16 = arith.constant 16 : index
  %num_pages = memref.dim %blocks, %c0 : !blocks
  %num_layers = memref.dim %blocks, %c2 : !blocks
  scf.for %p = %c0 to %num_pages step %c1 {
    scf.for %l = %c0 to %num_layers step %c1 {
      scf.for %s = %c0 to %c4 step %c1 {
        scf.for %d = %c0 to %c16 step %c1 {
          %flat = affine.apply affine_map<(p, l, s, d)[layers] -> (((p * layers + l) * 4 + s) * 16 + d)>(%p, %l, %s, %d)[%num_layers]
          %flat_i64 = arith.index_cast %flat : index to i64
          %value = arith.sitofp %flat_i64 : i64 to f32
          memref.store %value, %blocks[%p, %c0, %l, %s, %c0, %d] : !blocks
        }
      }
    }
  }
  return
}

// Prints "TAG ( kv, l, b, h, t, d ) "; the value follows.
func.func @begin_sweep(%l: index, %b: index, %t: index, %d: index) {
  %c0 = arith.constant 0 : index
  vector.print str "sweep "
  %coords = vector.from_elements %c0, %l, %b, %c0, %t, %d : vector<6xindex>
  vector.print %coords : vector<6xindex> punctuation <no_punctuation>
  vector.print str " "
  return
}
func.func @begin_load(%l: index, %b: index, %t: index, %d: index) {
  %c0 = arith.constant 0 : index
  vector.print str "load "
  %coords = vector.from_elements %c0, %l, %b, %c0, %t, %d : vector<6xindex>
  vector.print %coords : vector<6xindex> punctuation <no_punctuation>
  vector.print str " "
  return
}
func.func @begin_store(%l: index, %b: index, %t: index, %d: index) {
  %c0 = arith.constant 0 : index
  vector.print str "store "
  %coords = vector.from_elements %c0, %l, %b, %c0, %t, %d : vector<6xindex>
  vector.print %coords : vector<6xindex> punctuation <no_punctuation>
  vector.print str " "
  return
}

// Every element of every cached token, W = 1, 4, 8 and 16 at a time.
func.func @sweep(%cache: !cache, %l: index, %batch: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  %c9 = arith.constant 9 : index
  %c13 = arith.constant 13 : index
  %c16 = arith.constant 16 : index
  scf.for %b = %c0 to %batch step %c1 {
    %length = kvcache.cache_length %cache[%b] : !cache
    scf.for %t = %c0 to %length step %c1 {
      scf.for %d = %c0 to %c16 step %c1 {
        %x = kvcache.load %cache[%b, %c0, %t, %d] : !cache -> f32
        func.call @begin_sweep(%l, %b, %t, %d) : (index, index, index, index) -> ()
        vector.print %x : f32
      }
      scf.for %d = %c0 to %c13 step %c4 {
        %x = kvcache.load %cache[%b, %c0, %t, %d] : !cache -> vector<4xf32>
        func.call @begin_sweep(%l, %b, %t, %d) : (index, index, index, index) -> ()
        vector.print %x : vector<4xf32>
      }
      scf.for %d = %c0 to %c9 step %c8 {
        %x = kvcache.load %cache[%b, %c0, %t, %d] : !cache -> vector<8xf32>
        func.call @begin_sweep(%l, %b, %t, %d) : (index, index, index, index) -> ()
        vector.print %x : vector<8xf32>
      }
      %x = kvcache.load %cache[%b, %c0, %t, %c0] : !cache -> vector<16xf32>
      func.call @begin_sweep(%l, %b, %t, %c0) : (index, index, index, index) -> ()
      vector.print %x : vector<16xf32>
    }
  }
  return
}

// Writes the next token (position cache_length) of every sequence: element
// d of sequence b in layer l gets -(1000 * (l + 1) + 100 * b + d), stored as
// one vector<16>, two vector<8> or sixteen scalars for b = 0, 1, 2.
func.func @append(%cache: !cache, %l: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c8 = arith.constant 8 : index
  %c16 = arith.constant 16 : index
  %steps = arith.constant dense<[0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0, 12.0, 13.0, 14.0, 15.0]> : vector<16xf32>
  %base = affine.apply affine_map<(l) -> (l * 1000 + 1000)>(%l)
  %layer_base = arith.index_cast %base : index to i64
  %base_f32 = arith.sitofp %layer_base : i64 to f32
  %hundred = arith.constant 100.0 : f32
  %b0_base = vector.broadcast %base_f32 : f32 to vector<16xf32>
  %b0_up = arith.addf %b0_base, %steps : vector<16xf32>
  %b0_row = arith.negf %b0_up : vector<16xf32>
  %t0 = kvcache.cache_length %cache[%c0] : !cache
  func.call @begin_store(%l, %c0, %t0, %c0) : (index, index, index, index) -> ()
  vector.print %b0_row : vector<16xf32>
  kvcache.store %b0_row, %cache[%c0, %c0, %t0, %c0] : !cache, vector<16xf32>

  %hundred_vector = vector.broadcast %hundred : f32 to vector<16xf32>
  %b1_row = arith.subf %b0_row, %hundred_vector : vector<16xf32>
  %t1 = kvcache.cache_length %cache[%c1] : !cache
  scf.for %d = %c0 to %c16 step %c8 {
    %half = vector.extract_strided_slice %b1_row {offsets = [0], sizes = [8], strides = [1]} : vector<16xf32> to vector<8xf32>
    %shift = arith.index_cast %d : index to i64
    %shift_f32 = arith.sitofp %shift : i64 to f32
    %shift_vector = vector.broadcast %shift_f32 : f32 to vector<8xf32>
    %piece = arith.subf %half, %shift_vector : vector<8xf32>
    func.call @begin_store(%l, %c1, %t1, %d) : (index, index, index, index) -> ()
    vector.print %piece : vector<8xf32>
    kvcache.store %piece, %cache[%c1, %c0, %t1, %d] : !cache, vector<8xf32>
  }

  %b2_row = arith.subf %b1_row, %hundred_vector : vector<16xf32>
  %t2 = kvcache.cache_length %cache[%c2] : !cache
  scf.for %d = %c0 to %c16 step %c1 {
    %element = vector.extract %b2_row[%d] : f32 from vector<16xf32>
    func.call @begin_store(%l, %c2, %t2, %d) : (index, index, index, index) -> ()
    vector.print %element : f32
    kvcache.store %element, %cache[%c2, %c0, %t2, %d] : !cache, f32
  }

  // Read the three rows back.
  %c3 = arith.constant 3 : index
  scf.for %b = %c0 to %c3 step %c1 {
    %t = kvcache.cache_length %cache[%b] : !cache
    %row = kvcache.load %cache[%b, %c0, %t, %c0] : !cache -> vector<16xf32>
    func.call @begin_load(%l, %b, %t, %c0) : (index, index, index, index) -> ()
    vector.print %row : vector<16xf32>
  }
  return
}

func.func @main() {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %c4 = arith.constant 4 : index
  %c6 = arith.constant 6 : index
  %c8 = arith.constant 8 : index
  %max_seq_length = arith.constant 1 : i32
  %max_cache_length = arith.constant 9 : i32
  %storage = memref.alloc() : memref<6x1x2x4x1x16xf32>
  %blocks = memref.cast %storage : memref<6x1x2x4x1x16xf32> to !blocks
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
    func.call @sweep(%key_cache, %l, %c3) : (!cache, index, index) -> ()
  }
  scf.for %l = %c0 to %c2 step %c1 {
    %key_cache = kvcache.get_key_cache %collection[%l] : !collection
    func.call @append(%key_cache, %l) : (!cache, index) -> ()
  }
  // A page_store of 4 elements at page 2, slot 3, elements 12..15, layer 1.
  %key1 = kvcache.get_key_cache %collection[%c1] : !collection
  %quad = arith.constant dense<[0.5, 1.5, 2.5, 3.5]> : vector<4xf32>
  vector.print str "page_store "
  %where = vector.from_elements %c0, %c1, %c2, %c3, %c0, %c4 : vector<6xindex>
  vector.print %where : vector<6xindex> punctuation <no_punctuation>
  vector.print str " "
  vector.print %quad : vector<4xf32>
  kvcache.page_store %quad, %key1[%c2, %c3, %c0, %c4] : !cache, vector<4xf32>

  scf.for %p = %c0 to %c6 step %c1 {
    scf.for %l = %c0 to %c2 step %c1 {
      scf.for %s = %c0 to %c4 step %c1 {
        %row = vector.load %blocks[%p, %c0, %l, %s, %c0, %c0] : !blocks, vector<16xf32>
        vector.print str "row "
        %at = vector.from_elements %p, %c0, %l, %s, %c0 : vector<5xindex>
        vector.print %at : vector<5xindex> punctuation <no_punctuation>
        vector.print str " "
        vector.print %row : vector<16xf32>
      }
    }
  }
  vector.print str "done\n"
  memref.dealloc %storage : memref<6x1x2x4x1x16xf32>
  return
}
