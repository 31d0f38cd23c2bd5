// REQUIRES: mpi
// Every run of pages packed (the default):
// RUN: kvcache-opt %s -kvcache-to-cpu > %t.mlir
// RUN: %mpirun2 mlir-runner %t.mlir -e main -entry-point-result=void \
// RUN:     -shared-libs=%mlir_c_runner_utils,%libmpi | FileCheck %s
// Every run a non-blocking message of its own (pages of 512 bytes), up to
// 200 in flight at once:
// RUN: kvcache-opt %s -kvcache-to-cpu="checked=true transfer-direct-bytes=512" > %t.direct.mlir
// RUN: %mpirun2 mlir-runner %t.direct.mlir -e main -entry-point-result=void \
// RUN:     -shared-libs=%mlir_c_runner_utils,%libmpi | FileCheck %s
// Runs of 2 and 3 pages direct, single pages as groups of one page, which
// need no packing:
// RUN: kvcache-opt %s -kvcache-to-cpu="transfer-direct-bytes=1024 transfer-staging-bytes=2048" > %t.mixed.mlir
// RUN: %mpirun2 mlir-runner %t.mixed.mlir -e main -entry-point-result=void \
// RUN:     -shared-libs=%mlir_c_runner_utils,%libmpi | FileCheck %s
// Every run short, in groups of 6 pages packed on both sides:
// RUN: kvcache-opt %s -kvcache-to-cpu="transfer-direct-bytes=2048 transfer-staging-bytes=3072" > %t.groups.mlir
// RUN: %mpirun2 mlir-runner %t.groups.mlir -e main -entry-point-result=void \
// RUN:     -shared-libs=%mlir_c_runner_utils,%libmpi | FileCheck %s

// Both page lists cut into short runs that do not line up: rank 0 sends the
// pages of one sequence, entry i from page 3 * ((29 * (i / 3)) mod 67) +
// i mod 3 (runs of 3, shuffled), and rank 1 receives entry i into page
// 4 * ((13 * (i / 4) + 5) mod 53) + i mod 4 (runs of 4, shuffled): the
// pages consecutive on both sides come in runs of 1 to 3. 1, 2, 7, 64 and
// 200 pages. Rank 1 compares every element of every received page with
// the value rank 0 wrote there, f(page, element) = (7 * page + element)
// mod 1024, and counts the elements still holding its own fill, -1:
// exactly the pages it did not receive.

// CHECK: pages 1 mismatches 0 untouched 65280
// CHECK: pages 2 mismatches 0 untouched 65024
// CHECK: pages 7 mismatches 0 untouched 63744
// CHECK: pages 64 mismatches 0 untouched 49152
// CHECK: pages 200 mismatches 0 untouched 14336

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

// Entry i's page: run * ((a * (i / run) + b) mod m) + i mod run.
func.func private @shuffled(%i: index, %run: index, %a: index, %b: index,
                            %m: index) -> index {
  %k = arith.divui %i, %run : index
  %w = arith.remui %i, %run : index
  %x = arith.muli %k, %a : index
  %y = arith.addi %x, %b : index
  %z = arith.remui %y, %m : index
  %s = arith.muli %z, %run : index
  %p = arith.addi %s, %w : index
  return %p : index
}

func.func private @source_page(%i: index) -> index {
  %c3 = arith.constant 3 : index
  %c29 = arith.constant 29 : index
  %c0 = arith.constant 0 : index
  %c67 = arith.constant 67 : index
  %p = func.call @shuffled(%i, %c3, %c29, %c0, %c67) : (index, index, index, index, index) -> index
  return %p : index
}

func.func private @destination_page(%i: index) -> index {
  %c4 = arith.constant 4 : index
  %c13 = arith.constant 13 : index
  %c5 = arith.constant 5 : index
  %c53 = arith.constant 53 : index
  %p = func.call @shuffled(%i, %c4, %c13, %c5, %c53) : (index, index, index, index, index) -> index
  return %p : index
}

// A collection over `blocks` whose sequence 0 holds `lengths[0]` tokens in
// the pages of `table`.
func.func private @collection(%blocks: !blocks, %lengths: memref<1xi32>,
                              %table: memref<1x200xi32>) -> !coll {
  %c0_i32 = arith.constant 0 : i32
  %lengths_dyn = memref.cast %lengths : memref<1xi32> to memref<?xi32>
  %table_dyn = memref.cast %table : memref<1x200xi32> to memref<?x?xi32>
  %blocks_dyn = memref.cast %blocks : !blocks to memref<?x2x?x4x2x8xf16>
  %c = kvcache.paged_collection %blocks_dyn, %lengths_dyn, %table_dyn, %c0_i32, %c0_i32
      : memref<?x2x?x4x2x8xf16>, memref<?xi32>, memref<?x?xi32> -> !coll
  return %c : !coll
}

func.func @send(%blocks: !blocks, %n: index, %rank: i32) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c200 = arith.constant 200 : index
  // n pages: n * 4 - 1 tokens.
  %lengths = memref.alloc() : memref<1xi32>
  %tokens = arith.muli %n, %c4 : index
  %tokens1 = arith.subi %tokens, %c1 : index
  %t32 = arith.index_cast %tokens1 : index to i32
  memref.store %t32, %lengths[%c0] : memref<1xi32>
  %table = memref.alloc() : memref<1x200xi32>
  scf.for %j = %c0 to %c200 step %c1 {
    %p = func.call @source_page(%j) : (index) -> index
    %p32 = arith.index_cast %p : index to i32
    memref.store %p32, %table[%c0, %j] : memref<1x200xi32>
  }
  %c = func.call @collection(%blocks, %lengths, %table) : (!blocks, memref<1xi32>, memref<1x200xi32>) -> !coll
  %sequences = memref.alloc() : memref<1xi32>
  %c0_i32 = arith.constant 0 : i32
  memref.store %c0_i32, %sequences[%c0] : memref<1xi32>
  %sequences_dyn = memref.cast %sequences : memref<1xi32> to memref<?xi32>
  kvcache.send_pages %c, %sequences_dyn, %rank : !coll, memref<?xi32>
  memref.dealloc %sequences : memref<1xi32>
  memref.dealloc %table : memref<1x200xi32>
  memref.dealloc %lengths : memref<1xi32>
  return
}

func.func @recv(%blocks: !blocks, %n: index, %rank: i32) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c0_i32 = arith.constant 0 : i32
  %dst = memref.alloc(%n) : memref<?xi32>
  scf.for %i = %c0 to %n step %c1 {
    %p = func.call @destination_page(%i) : (index) -> index
    %p32 = arith.index_cast %p : index to i32
    memref.store %p32, %dst[%i] : memref<?xi32>
  }
  // The receiver's own metadata: nothing of it is sent.
  %lengths = memref.alloc() : memref<1xi32>
  memref.store %c0_i32, %lengths[%c0] : memref<1xi32>
  %table = memref.alloc() : memref<1x200xi32>
  linalg.fill ins(%c0_i32 : i32) outs(%table : memref<1x200xi32>)
  %c = func.call @collection(%blocks, %lengths, %table) : (!blocks, memref<1xi32>, memref<1x200xi32>) -> !coll
  kvcache.recv_pages %c, %dst, %rank : !coll, memref<?xi32>
  memref.dealloc %table : memref<1x200xi32>
  memref.dealloc %lengths : memref<1xi32>
  memref.dealloc %dst : memref<?xi32>
  return
}

// Mismatches of the received pages and the count of -1 elements.
func.func @compare(%flat: !flat, %n: index) -> (index, index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c256 = arith.constant 256 : index
  %minus1 = arith.constant -1.0 : f16
  %bad = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %c0) -> index {
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
  %c5 = arith.constant 5 : index
  %c256 = arith.constant 256 : index
  %zero = arith.constant 0 : i32
  %one = arith.constant 1 : i32
  mpi.init
  %comm = mpi.comm_world : !mpi.comm
  %rank = mpi.comm_rank(%comm) : i32
  %blocks = memref.alloc() : !blocks
  %flat = memref.collapse_shape %blocks [[0], [1, 2, 3, 4, 5]] : !blocks into !flat
  %ns = arith.constant dense<[1, 2, 7, 64, 200]> : vector<5xindex>
  %is_sender = arith.cmpi eq, %rank, %zero : i32
  scf.if %is_sender {
    scf.for %p = %c0 to %c256 step %c1 {
      scf.for %e = %c0 to %c256 step %c1 {
        %v = func.call @value(%p, %e) : (index, index) -> f16
        memref.store %v, %flat[%p, %e] : !flat
      }
    }
  }
  scf.for %k = %c0 to %c5 step %c1 {
    %n = vector.extract %ns[%k] : index from vector<5xindex>
    scf.if %is_sender {
      func.call @send(%blocks, %n, %one) : (!blocks, index, i32) -> ()
    } else {
      %minus1 = arith.constant -1.0 : f16
      linalg.fill ins(%minus1 : f16) outs(%blocks : !blocks)
      func.call @recv(%blocks, %n, %zero) : (!blocks, index, i32) -> ()
      %bad, %untouched = func.call @compare(%flat, %n) : (!flat, index) -> (index, index)
      vector.print str "pages "
      vector.print %n : index punctuation <no_punctuation>
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
