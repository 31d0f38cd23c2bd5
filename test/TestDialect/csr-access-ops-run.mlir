// RUN: kvcache-opt %s -kvcache-to-cpu | mlir-runner -e main -entry-point-result=void \
// RUN:     -shared-libs=%mlir_c_runner_utils,%mlir_runner_utils | FileCheck %s
// RUN: kvcache-opt %s -kvcache-to-cpu=checked=true | mlir-runner -e main -entry-point-result=void \
// RUN:     -shared-libs=%mlir_c_runner_utils,%mlir_runner_utils | FileCheck %s

// The access and metadata ops on a CSR collection of the test_kv dialect,
// executed on the CPU. Four pages of 2 tokens, one head of 2 f32, one
// layer; blocks[p, kv, 0, s, 0, d] = 1000 kv + 100 p + 10 s + d.
// kv_indptr = [1, 3, 4], kv_indices = [3, 2, 0, 1]: sequence 0 owns pages
// (2, 0), sequence 1 owns page (1); page 3 is a decoy entry before them.

// lookup: token 3 of sequence 0 is logical page 1 -> kv_indices[1 + 1] = 0,
// slot 1; token 1 of sequence 1 -> kv_indices[3] = 1, slot 1.
// CHECK: ( 0, 1 )
// CHECK-NEXT: ( 1, 1 )
// load K of token 2 of sequence 0: page 0, slot 0.
// CHECK-NEXT: ( 0, 1 )
// load V of token 0 of sequence 1: page 1, slot 0.
// CHECK-NEXT: ( 1100, 1101 )
// store K of token 1 of sequence 0 (page 2, slot 1), read back from blocks.
// CHECK-NEXT: ( -1, -2 )
// tile of tokens 0..1 of sequence 0: page 2, slots 0 and 1.
// CHECK-NEXT: ( 200, 201 )
// CHECK-NEXT: ( -1, -2 )
// page_load of V at (page 3, slot 1).
// CHECK-NEXT: ( 1310, 1311 )
// cache_length of both sequences, max_seq_length, max_cache_length,
// num_pages, num_layers.
// CHECK-NEXT: ( 3, 1, 5, 7, 4, 1 )

!collection = !test_kv.csr_collection<f32, num_heads = 1, head_size = 2, page_size = 2>
!cache = !test_kv.csr_cache<f32, num_heads = 1, head_size = 2, page_size = 2>
!storage = memref<4x2x1x2x1x2xf32>
!blocks = memref<?x2x?x2x1x2xf32>

memref.global "private" constant @cache_lengths : memref<2xi32> = dense<[3, 1]>
memref.global "private" constant @kv_indptr : memref<3xi32> = dense<[1, 3, 4]>
memref.global "private" constant @kv_indices : memref<4xi32> = dense<[3, 2, 0, 1]>

func.func @fill(%storage: !storage) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c4 = arith.constant 4 : index
  scf.for %p = %c0 to %c4 step %c1 {
    scf.for %kv = %c0 to %c2 step %c1 {
      scf.for %s = %c0 to %c2 step %c1 {
        scf.for %d = %c0 to %c2 step %c1 {
          %value = affine.apply affine_map<(kv, p, s, d) -> (kv * 1000 + p * 100 + s * 10 + d)>(%kv, %p, %s, %d)
          %i = arith.index_cast %value : index to i32
          %x = arith.sitofp %i : i32 to f32
          memref.store %x, %storage[%p, %kv, %c0, %s, %c0, %d] : !storage
        }
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
  %max_seq_length = arith.constant 5 : i32
  %max_cache_length = arith.constant 7 : i32
  %storage = memref.alloc() {alignment = 64 : i64} : !storage
  func.call @fill(%storage) : (!storage) -> ()
  %blocks = memref.cast %storage : !storage to !blocks
  %lengths_global = memref.get_global @cache_lengths : memref<2xi32>
  %lengths = memref.cast %lengths_global : memref<2xi32> to memref<?xi32>
  %indptr_global = memref.get_global @kv_indptr : memref<3xi32>
  %indptr = memref.cast %indptr_global : memref<3xi32> to memref<?xi32>
  %indices_global = memref.get_global @kv_indices : memref<4xi32>
  %indices = memref.cast %indices_global : memref<4xi32> to memref<?xi32>
  %c = test_kv.csr_collection %blocks, %indptr, %indices, %lengths, %max_seq_length, %max_cache_length
      : !blocks, memref<?xi32>, memref<?xi32>, memref<?xi32> -> !collection
  %k = kvcache.get_key_cache %c[%c0] : !collection
  %v = kvcache.get_value_cache %c[%c0] : !collection

  %page0, %slot0 = kvcache.lookup %k[%c0, %c3] : !cache
  %where0 = vector.from_elements %page0, %slot0 : vector<2xindex>
  vector.print %where0 : vector<2xindex>
  %page1, %slot1 = kvcache.lookup %v[%c1, %c1] : !cache
  %where1 = vector.from_elements %page1, %slot1 : vector<2xindex>
  vector.print %where1 : vector<2xindex>

  %key = kvcache.load %k[%c0, %c0, %c2, %c0] : !cache -> vector<2xf32>
  vector.print %key : vector<2xf32>
  %value = kvcache.load %v[%c1, %c0, %c0, %c0] : !cache -> vector<2xf32>
  vector.print %value : vector<2xf32>

  %new = arith.constant dense<[-1.0, -2.0]> : vector<2xf32>
  kvcache.store %new, %k[%c0, %c0, %c1, %c0] : !cache, vector<2xf32>
  %stored = vector.load %storage[%c2, %c0, %c0, %c1, %c0, %c0] : !storage, vector<2xf32>
  vector.print %stored : vector<2xf32>

  %tile = kvcache.tile %k[%c0, %c0, %c0] : !cache -> memref<2x2xf32, strided<[2, 1], offset: ?>>
  scf.for %r = %c0 to %c2 step %c1 {
    %row = vector.load %tile[%r, %c0] : memref<2x2xf32, strided<[2, 1], offset: ?>>, vector<2xf32>
    vector.print %row : vector<2xf32>
  }

  %decoy = kvcache.page_load %v[%c3, %c1, %c0, %c0] : !cache -> vector<2xf32>
  vector.print %decoy : vector<2xf32>

  %n0 = kvcache.cache_length %k[%c0] : !cache
  %n1 = kvcache.cache_length %c[%c1] : !collection
  %s = kvcache.max_seq_length %k : !cache
  %m = kvcache.max_cache_length %c : !collection
  %p = kvcache.num_pages %v : !cache
  %l = kvcache.num_layers %c : !collection
  %metadata = vector.from_elements %n0, %n1, %s, %m, %p, %l : vector<6xindex>
  vector.print %metadata : vector<6xindex>
  memref.dealloc %storage : !storage
  return
}
