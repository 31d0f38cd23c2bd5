// REQUIRES: mpi
// RUN: kvcache-opt %s -kvcache-to-cpu=checked=true > %t.mlir
// RUN: %mpirun2 mlir-runner %t.mlir -e main -entry-point-result=void \
// RUN:     -shared-libs=%mlir_c_runner_utils,%libmpi | FileCheck %s
// The runs of 4 pages (128 bytes of codes each) as messages of their own,
// the single pages packed:
// RUN: kvcache-opt %s -kvcache-to-cpu="transfer-direct-bytes=256 transfer-staging-bytes=512" > %t.mixed.mlir
// RUN: %mpirun2 mlir-runner %t.mixed.mlir -e main -entry-point-result=void \
// RUN:     -shared-libs=%mlir_c_runner_utils,%libmpi | FileCheck %s

// A quantized collection (i8 codes, token_head scales: one f32 per token
// and head, paged like the codes) moves with its scales. Rank 0 sends the
// pages of sequence 0 (1, 17 and 40 pages; every fifth page stands alone,
// the others come in runs of 4), rank 1 receives them into pages 20 + i,
// then compares every code and every scale with what rank 0 wrote there,
// codes (5 * page + element) mod 127 and scales 1000 * page + element, and
// counts the codes and scales still holding its own fill (-1): those of
// exactly the pages it did not receive.

// CHECK-DAG: pages 1 code mismatches 0 scale mismatches 0 untouched codes 8064 scales 2016
// CHECK-DAG: pages 17 code mismatches 0 scale mismatches 0 untouched codes 6016 scales 1504
// CHECK-DAG: pages 40 code mismatches 0 scale mismatches 0 untouched codes 3072 scales 768

!blocks = memref<64x2x2x4x2x4xi8>
!scales = memref<64x2x2x4x2xf32>
!flat = memref<64x128xi8>
!flat_scales = memref<64x32xf32>
!coll = !kvcache.paged_collection<i8, num_heads = 2, head_size = 4, page_size = 4, scales = token_head>

func.func private @code(%p: index, %e: index) -> i8 {
  %c5 = arith.constant 5 : index
  %c127 = arith.constant 127 : index
  %x = arith.muli %p, %c5 : index
  %y = arith.addi %x, %e : index
  %z = arith.remui %y, %c127 : index
  %i = arith.index_cast %z : index to i8
  return %i : i8
}

func.func private @scale(%p: index, %e: index) -> f32 {
  %c1000 = arith.constant 1000 : index
  %x = arith.muli %p, %c1000 : index
  %y = arith.addi %x, %e : index
  %i = arith.index_cast %y : index to i32
  %f = arith.sitofp %i : i32 to f32
  return %f : f32
}

// Page j of sequence 0 on rank 0: 41 + j / 5 when j is a multiple of 5,
// else j + 1, so runs of 4 pages between single ones.
func.func private @source_page(%j: index) -> index {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c5 = arith.constant 5 : index
  %c41 = arith.constant 41 : index
  %r = arith.remui %j, %c5 : index
  %single = arith.cmpi eq, %r, %c0 : index
  %q = arith.divui %j, %c5 : index
  %a = arith.addi %q, %c41 : index
  %b = arith.addi %j, %c1 : index
  %p = arith.select %single, %a, %b : index
  return %p : index
}

// Entry i of the receiver's dst_pages: 20 + i.
func.func private @destination_page(%i: index) -> index {
  %c20 = arith.constant 20 : index
  %p = arith.addi %c20, %i : index
  return %p : index
}

func.func @collection(%blocks: !blocks, %scales: !scales, %length: index) -> !coll {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c48 = arith.constant 48 : index
  %z = arith.constant 0 : i32
  %lengths = memref.alloc() : memref<1xi32>
  %l32 = arith.index_cast %length : index to i32
  memref.store %l32, %lengths[%c0] : memref<1xi32>
  %table = memref.alloc() : memref<1x48xi32>
  scf.for %j = %c0 to %c48 step %c1 {
    %p = func.call @source_page(%j) : (index) -> index
    %p32 = arith.index_cast %p : index to i32
    memref.store %p32, %table[%c0, %j] : memref<1x48xi32>
  }
  %l = memref.cast %lengths : memref<1xi32> to memref<?xi32>
  %t = memref.cast %table : memref<1x48xi32> to memref<?x?xi32>
  %b = memref.cast %blocks : !blocks to memref<?x2x?x4x2x4xi8>
  %s = memref.cast %scales : !scales to memref<?x2x?x4x2xf32>
  %c = kvcache.paged_collection %b, %l, %t, %z, %z, %s
      : memref<?x2x?x4x2x4xi8>, memref<?xi32>, memref<?x?xi32>, memref<?x2x?x4x2xf32> -> !coll
  return %c : !coll
}

// Counts mismatches over the received pages and the -1 left over all.
func.func @compare(%flat: !flat, %flat_scales: !flat_scales, %count: index) -> (index, index, index, index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c32 = arith.constant 32 : index
  %c64 = arith.constant 64 : index
  %c128 = arith.constant 128 : index
  %m1 = arith.constant -1 : i8
  %m1f = arith.constant -1.0 : f32
  %bad:2 = scf.for %i = %c0 to %count step %c1 iter_args(%bc = %c0, %bs = %c0) -> (index, index) {
    %src = func.call @source_page(%i) : (index) -> index
    %dst = func.call @destination_page(%i) : (index) -> index
    %nc = scf.for %e = %c0 to %c128 step %c1 iter_args(%a = %bc) -> index {
      %want = func.call @code(%src, %e) : (index, index) -> i8
      %got = memref.load %flat[%dst, %e] : !flat
      %ne = arith.cmpi ne, %want, %got : i8
      %inc = arith.select %ne, %c1, %c0 : index
      %next = arith.addi %a, %inc : index
      scf.yield %next : index
    }
    %ns = scf.for %e = %c0 to %c32 step %c1 iter_args(%a = %bs) -> index {
      %want = func.call @scale(%src, %e) : (index, index) -> f32
      %got = memref.load %flat_scales[%dst, %e] : !flat_scales
      %ne = arith.cmpf une, %want, %got : f32
      %inc = arith.select %ne, %c1, %c0 : index
      %next = arith.addi %a, %inc : index
      scf.yield %next : index
    }
    scf.yield %nc, %ns : index, index
  }
  %left:2 = scf.for %p = %c0 to %c64 step %c1 iter_args(%lc = %c0, %ls = %c0) -> (index, index) {
    %nc = scf.for %e = %c0 to %c128 step %c1 iter_args(%a = %lc) -> index {
      %got = memref.load %flat[%p, %e] : !flat
      %eq = arith.cmpi eq, %got, %m1 : i8
      %inc = arith.select %eq, %c1, %c0 : index
      %next = arith.addi %a, %inc : index
      scf.yield %next : index
    }
    %ns = scf.for %e = %c0 to %c32 step %c1 iter_args(%a = %ls) -> index {
      %got = memref.load %flat_scales[%p, %e] : !flat_scales
      %eq = arith.cmpf oeq, %got, %m1f : f32
      %inc = arith.select %eq, %c1, %c0 : index
      %next = arith.addi %a, %inc : index
      scf.yield %next : index
    }
    scf.yield %nc, %ns : index, index
  }
  return %bad#0, %bad#1, %left#0, %left#1 : index, index, index, index
}

func.func @main() {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %c4 = arith.constant 4 : index
  %c32 = arith.constant 32 : index
  %c64 = arith.constant 64 : index
  %c128 = arith.constant 128 : index
  %zero = arith.constant 0 : i32
  %one = arith.constant 1 : i32
  mpi.init
  %comm = mpi.comm_world : !mpi.comm
  %rank = mpi.comm_rank(%comm) : i32
  %blocks = memref.alloc() : !blocks
  %scales = memref.alloc() : !scales
  %flat = memref.collapse_shape %blocks [[0], [1, 2, 3, 4, 5]] : !blocks into !flat
  %flat_scales = memref.collapse_shape %scales [[0], [1, 2, 3, 4]] : !scales into !flat_scales
  %ns = arith.constant dense<[1, 17, 40]> : vector<3xindex>
  %is_sender = arith.cmpi eq, %rank, %zero : i32
  scf.for %k = %c0 to %c3 step %c1 {
    %n = vector.extract %ns[%k] : index from vector<3xindex>
    // n pages: 4 * n - 1 tokens.
    %t = arith.muli %n, %c4 : index
    %tokens = arith.subi %t, %c1 : index
    scf.if %is_sender {
      scf.for %p = %c0 to %c64 step %c1 {
        scf.for %e = %c0 to %c128 step %c1 {
          %v = func.call @code(%p, %e) : (index, index) -> i8
          memref.store %v, %flat[%p, %e] : !flat
        }
        scf.for %e = %c0 to %c32 step %c1 {
          %v = func.call @scale(%p, %e) : (index, index) -> f32
          memref.store %v, %flat_scales[%p, %e] : !flat_scales
        }
      }
      %c = func.call @collection(%blocks, %scales, %tokens) : (!blocks, !scales, index) -> !coll
      %seqs = memref.alloc() : memref<1xi32>
      memref.store %zero, %seqs[%c0] : memref<1xi32>
      %s = memref.cast %seqs : memref<1xi32> to memref<?xi32>
      kvcache.send_pages %c, %s, %one : !coll, memref<?xi32>
    } else {
      %m1 = arith.constant -1 : i8
      %m1f = arith.constant -1.0 : f32
      linalg.fill ins(%m1 : i8) outs(%blocks : !blocks)
      linalg.fill ins(%m1f : f32) outs(%scales : !scales)
      %c = func.call @collection(%blocks, %scales, %c0) : (!blocks, !scales, index) -> !coll
      %dst = memref.alloc(%n) : memref<?xi32>
      scf.for %i = %c0 to %n step %c1 {
        %p = func.call @destination_page(%i) : (index) -> index
        %p32 = arith.index_cast %p : index to i32
        memref.store %p32, %dst[%i] : memref<?xi32>
      }
      kvcache.recv_pages %c, %dst, %zero : !coll, memref<?xi32>
      %r:4 = func.call @compare(%flat, %flat_scales, %n) : (!flat, !flat_scales, index) -> (index, index, index, index)
      vector.print str "pages "
      vector.print %n : index punctuation <no_punctuation>
      vector.print str " code mismatches "
      vector.print %r#0 : index punctuation <no_punctuation>
      vector.print str " scale mismatches "
      vector.print %r#1 : index punctuation <no_punctuation>
      vector.print str " untouched codes "
      vector.print %r#2 : index punctuation <no_punctuation>
      vector.print str " scales "
      vector.print %r#3 : index
    }
  }
  mpi.finalize
  return
}
