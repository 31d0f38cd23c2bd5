// REQUIRES: mpi
// RUN: kvcache-opt %s -kvcache-to-cpu > %t.mlir
// RUN: %mpirun2 mlir-runner %t.mlir -e main -entry-point-result=void \
// RUN:     -shared-libs=%mlir_c_runner_utils,%libmpi | FileCheck %s
// Every run a message of its own (pages of 512 bytes):
// RUN: kvcache-opt %s -kvcache-to-cpu="checked=true transfer-direct-bytes=512" > %t.direct.mlir
// RUN: %mpirun2 mlir-runner %t.direct.mlir -e main -entry-point-result=void \
// RUN:     -shared-libs=%mlir_c_runner_utils,%libmpi | FileCheck %s
// Runs of 4 pages and more direct, shorter ones packed 8 pages at most:
// RUN: kvcache-opt %s -kvcache-to-cpu="transfer-direct-bytes=2048 transfer-staging-bytes=4096" > %t.mixed.mlir
// RUN: %mpirun2 mlir-runner %t.mixed.mlir -e main -entry-point-result=void \
// RUN:     -shared-libs=%mlir_c_runner_utils,%libmpi | FileCheck %s

// Rank 0 sends the pages of sequences [1, 0] of an f16 collection to rank
// 1, which receives them into other page ids through other tables: 3, 65
// and 200 pages (sequence 1 holds 2 pages, sequence 0 `n`), in runs of one
// page (the receiver's first 20 ids count down) and of many (the rest):
// all packed into one message by default, each run a message of its own,
// or both.
// Rank 1 compares every element of every received page with the value
// rank 0 wrote there, f(page, element) = (7 * page + element) mod 1024,
// and counts the elements still holding its own fill, -1: exactly the
// pages it did not receive.

// CHECK-DAG: pages 3 mismatches 0 untouched 64768
// CHECK-DAG: pages 65 mismatches 0 untouched 48896
// CHECK-DAG: pages 200 mismatches 0 untouched 14336

!blocks = memref<256x2x2x4x2x8xf16>
!flat = memref<256x256xf16>
!coll = !kvcache.paged_collection<f16, num_heads = 2, head_size = 8, page_size = 4>

// The value rank 0 stores at element `e` of page `p`.
func.func private @value(%p: index, %e: index) -> f16 {
  %c7 = arith.constant 7 : index
  %c1024 = arith.constant 1024 : index
  %x = arith.muli %p, %c7 : index
  %y = arith.addi %x, %e : index
  %z = arith.remui %y, %c1024 : index
  %i = arith.index_cast %z : index to i32
  %f = arith.sitofp %i : i32 to f16
  return %f : f16
}

// Page i of the list rank 0 sends: sequence 1's pages 120, 121, then
// sequence 0's, 10.. for its first 100 pages and 150.. after.
func.func private @source_page(%i: index) -> index {
  %c2 = arith.constant 2 : index
  %c100 = arith.constant 100 : index
  %c120 = arith.constant 120 : index
  %c10 = arith.constant 10 : index
  %c50 = arith.constant 50 : index
  %first = arith.cmpi ult, %i, %c2 : index
  %j = arith.subi %i, %c2 : index
  %low = arith.cmpi ult, %j, %c100 : index
  %a = arith.addi %c120, %i : index
  %b = arith.addi %c10, %j : index
  %c = arith.addi %c50, %j : index
  %bc = arith.select %low, %b, %c : index
  %r = arith.select %first, %a, %bc : index
  return %r : index
}

// Receiver's page for entry i: 255 - i for the first 20, then 30 + i.
func.func private @destination_page(%i: index) -> index {
  %c20 = arith.constant 20 : index
  %c255 = arith.constant 255 : index
  %c30 = arith.constant 30 : index
  %down = arith.cmpi ult, %i, %c20 : index
  %a = arith.subi %c255, %i : index
  %b = arith.addi %c30, %i : index
  %r = arith.select %down, %a, %b : index
  return %r : index
}

func.func @send(%blocks: !blocks, %n: index, %rank: i32) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c4 = arith.constant 4 : index
  %c200 = arith.constant 200 : index
  %c0_i32 = arith.constant 0 : i32
  %lengths = memref.alloc() : memref<2xi32>
  // n pages: n * 4 - 1 tokens; sequence 1 holds 8 tokens (2 pages).
  %tokens = arith.muli %n, %c4 : index
  %tokens1 = arith.subi %tokens, %c1 : index
  %t32 = arith.index_cast %tokens1 : index to i32
  memref.store %t32, %lengths[%c0] : memref<2xi32>
  %eight = arith.constant 8 : i32
  memref.store %eight, %lengths[%c1] : memref<2xi32>
  %table = memref.alloc() : memref<2x200xi32>
  scf.for %j = %c0 to %c200 step %c1 {
    %j2 = arith.addi %j, %c2 : index
    %p0 = func.call @source_page(%j2) : (index) -> index
    %p1 = func.call @source_page(%j) : (index) -> index
    %p0_32 = arith.index_cast %p0 : index to i32
    %p1_32 = arith.index_cast %p1 : index to i32
    memref.store %p0_32, %table[%c0, %j] : memref<2x200xi32>
    memref.store %p1_32, %table[%c1, %j] : memref<2x200xi32>
  }
  %lengths_dyn = memref.cast %lengths : memref<2xi32> to memref<?xi32>
  %table_dyn = memref.cast %table : memref<2x200xi32> to memref<?x?xi32>
  %blocks_dyn = memref.cast %blocks : !blocks to memref<?x2x?x4x2x8xf16>
  %c = kvcache.paged_collection %blocks_dyn, %lengths_dyn, %table_dyn, %c0_i32, %c0_i32
      : memref<?x2x?x4x2x8xf16>, memref<?xi32>, memref<?x?xi32> -> !coll
  %sequences = memref.alloc() : memref<2xi32>
  %one = arith.constant 1 : i32
  memref.store %one, %sequences[%c0] : memref<2xi32>
  memref.store %c0_i32, %sequences[%c1] : memref<2xi32>
  %sequences_dyn = memref.cast %sequences : memref<2xi32> to memref<?xi32>
  kvcache.send_pages %c, %sequences_dyn, %rank : !coll, memref<?xi32>
  memref.dealloc %sequences : memref<2xi32>
  memref.dealloc %table : memref<2x200xi32>
  memref.dealloc %lengths : memref<2xi32>
  return
}

func.func @recv(%blocks: !blocks, %count: index, %rank: i32) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c0_i32 = arith.constant 0 : i32
  %dst = memref.alloc(%count) : memref<?xi32>
  scf.for %i = %c0 to %count step %c1 {
    %p = func.call @destination_page(%i) : (index) -> index
    %p32 = arith.index_cast %p : index to i32
    memref.store %p32, %dst[%i] : memref<?xi32>
  }
  // The receiver's own metadata: nothing of it is sent.
  %lengths = memref.alloc() : memref<1xi32>
  memref.store %c0_i32, %lengths[%c0] : memref<1xi32>
  %table = memref.alloc() : memref<1x1xi32>
  memref.store %c0_i32, %table[%c0, %c0] : memref<1x1xi32>
  %lengths_dyn = memref.cast %lengths : memref<1xi32> to memref<?xi32>
  %table_dyn = memref.cast %table : memref<1x1xi32> to memref<?x?xi32>
  %blocks_dyn = memref.cast %blocks : !blocks to memref<?x2x?x4x2x8xf16>
  %c = kvcache.paged_collection %blocks_dyn, %lengths_dyn, %table_dyn, %c0_i32, %c0_i32
      : memref<?x2x?x4x2x8xf16>, memref<?xi32>, memref<?x?xi32> -> !coll
  kvcache.recv_pages %c, %dst, %rank : !coll, memref<?xi32>
  memref.dealloc %table : memref<1x1xi32>
  memref.dealloc %lengths : memref<1xi32>
  memref.dealloc %dst : memref<?xi32>
  return
}

// Mismatches of the received pages and the count of -1 elements.
func.func @compare(%flat: !flat, %count: index) -> (index, index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c256 = arith.constant 256 : index
  %minus1 = arith.constant -1.0 : f16
  %bad = scf.for %i = %c0 to %count step %c1 iter_args(%acc = %c0) -> index {
    %src = func.call @source_page(%i) : (index) -> index
    %dst = func.call @destination_page(%i) : (index) -> index
    %r = scf.for %e = %c0 to %c256 step %c1 iter_args(%a = %acc) -> index {
      %want = func.call @value(%src, %e) : (index, index) -> f16
      %got = memref.load %flat[%dst, %e] : !flat
      %ne = arith.cmpf une, %want, %got : f16
      %inc = arith.select %ne, %c1, %c0 : index
      %next = arith.addi %a, %inc : index
      scf.yield %next : index
    }
    scf.yield %r : index
  }
  %untouched = scf.for %p = %c0 to %c256 step %c1 iter_args(%acc = %c0) -> index {
    %r = scf.for %e = %c0 to %c256 step %c1 iter_args(%a = %acc) -> index {
      %got = memref.load %flat[%p, %e] : !flat
      %eq = arith.cmpf oeq, %got, %minus1 : f16
      %inc = arith.select %eq, %c1, %c0 : index
      %next = arith.addi %a, %inc : index
      scf.yield %next : index
    }
    scf.yield %r : index
  }
  return %bad, %untouched : index, index
}

func.func @main() {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %c256 = arith.constant 256 : index
  %zero = arith.constant 0 : i32
  %one = arith.constant 1 : i32
  mpi.init
  %comm = mpi.comm_world : !mpi.comm
  %rank = mpi.comm_rank(%comm) : i32
  %blocks = memref.alloc() : !blocks
  %flat = memref.collapse_shape %blocks [[0], [1, 2, 3, 4, 5]] : !blocks into !flat
  %ns = arith.constant dense<[1, 63, 198]> : vector<3xindex>
  %is_sender = arith.cmpi eq, %rank, %zero : i32
  scf.for %k = %c0 to %c3 step %c1 {
    %n = vector.extract %ns[%k] : index from vector<3xindex>
    %count = arith.addi %n, %c2 : index
    scf.if %is_sender {
      scf.for %p = %c0 to %c256 step %c1 {
        scf.for %e = %c0 to %c256 step %c1 {
          %v = func.call @value(%p, %e) : (index, index) -> f16
          memref.store %v, %flat[%p, %e] : !flat
        }
      }
      func.call @send(%blocks, %n, %one) : (!blocks, index, i32) -> ()
    } else {
      %minus1 = arith.constant -1.0 : f16
      linalg.fill ins(%minus1 : f16) outs(%blocks : !blocks)
      func.call @recv(%blocks, %count, %zero) : (!blocks, index, i32) -> ()
      %bad, %untouched = func.call @compare(%flat, %count) : (!flat, index) -> (index, index)
      vector.print str "pages "
      vector.print %count : index punctuation <no_punctuation>
      vector.print str " mismatches "
      vector.print %bad : index punctuation <no_punctuation>
      vector.print str " untouched "
      vector.print %untouched : index
    }
  }
  memref.dealloc %blocks : !blocks
  mpi.finalize
  return
}
