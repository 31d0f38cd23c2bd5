// REQUIRES: mpi
// RUN: kvcache-opt %s -kvcache-to-cpu=checked=true > %t.checked.mlir
// RUN: not %mpirun2 mlir-runner %t.checked.mlir -e count -entry-point-result=void \
// RUN:     -shared-libs=%mlir_c_runner_utils,%libmpi 2>&1 | FileCheck %s --check-prefix=COUNT
// RUN: not %mpirun2 mlir-runner %t.checked.mlir -e range -entry-point-result=void \
// RUN:     -shared-libs=%mlir_c_runner_utils,%libmpi 2>&1 | FileCheck %s --check-prefix=RANGE
// RUN: not %mpirun2 mlir-runner %t.checked.mlir -e repeated -entry-point-result=void \
// RUN:     -shared-libs=%mlir_c_runner_utils,%libmpi 2>&1 | FileCheck %s --check-prefix=REPEATED
// RUN: kvcache-opt %s -kvcache-to-cpu > %t.mlir
// RUN: %mpirun2 mlir-runner %t.mlir -e count -entry-point-result=void \
// RUN:     -shared-libs=%mlir_c_runner_utils,%libmpi 2>&1 | FileCheck %s --check-prefix=UNCHECKED

// recv_pages in checked mode reports a page count that differs from the
// sender's, a destination id out of range and one given twice before it
// writes (the receiver prints its blocks only after recv_pages returns: a
// failed check aborts first). Unchecked, a count that differs from the
// sender's writes nothing and the program goes on: every element of the
// receiver still holds its fill.

// COUNT: kvcache run-time check failed: kvcache.recv_pages at {{.*}}transfer-checked.mlir:{{[0-9]+}}:{{[0-9]+}}: 'dst_pages' holds 2 page ids, but the sender sends 3 pages
// COUNT-NOT: received
// RANGE: kvcache run-time check failed: kvcache.recv_pages at {{.*}}: destination page id 8 is out of range: num_pages is 8
// RANGE-NOT: received
// REPEATED: kvcache run-time check failed: kvcache.recv_pages at {{.*}}: destination page id 5 appears twice in 'dst_pages' (entry 2 is the second)
// REPEATED-NOT: received
// UNCHECKED: received; untouched 512 of 512

!blocks = memref<8x2x1x2x2x8xf16>
!coll = !kvcache.paged_collection<f16, num_heads = 2, head_size = 8, page_size = 2>

memref.global "private" constant @cache_lengths : memref<1xi32> = dense<[6]>
memref.global "private" constant @lookup_table : memref<1x3xi32> = dense<[[0, 1, 2]]>
// The receiver's destination ids of the three cases.
memref.global "private" constant @count_ids : memref<2xi32> = dense<[4, 5]>
memref.global "private" constant @range_ids : memref<3xi32> = dense<[4, 5, 8]>
memref.global "private" constant @repeated_ids : memref<3xi32> = dense<[5, 4, 5]>

// A collection over `blocks` whose sequence 0 holds 6 tokens in pages
// 0, 1, 2.
func.func private @collection(%blocks: !blocks) -> !coll {
  %c0 = arith.constant 0 : index
  %c0_i32 = arith.constant 0 : i32
  %lengths_m = memref.get_global @cache_lengths : memref<1xi32>
  %table_m = memref.get_global @lookup_table : memref<1x3xi32>
  %l = memref.cast %lengths_m : memref<1xi32> to memref<?xi32>
  %t = memref.cast %table_m : memref<1x3xi32> to memref<?x?xi32>
  %b = memref.cast %blocks : !blocks to memref<?x2x?x2x2x8xf16>
  %c = kvcache.paged_collection %b, %l, %t, %c0_i32, %c0_i32
      : memref<?x2x?x2x2x8xf16>, memref<?xi32>, memref<?x?xi32> -> !coll
  return %c : !coll
}

// Rank 0 sends sequence 0 (3 pages); rank 1 receives into `dst`, then
// prints how many of its elements still hold -1.
func.func private @run(%dst: memref<?xi32>) {
  %c0 = arith.constant 0 : index
  %zero = arith.constant 0 : i32
  %one = arith.constant 1 : i32
  mpi.init
  %comm = mpi.comm_world : !mpi.comm
  %rank = mpi.comm_rank(%comm) : i32
  %blocks = memref.alloc() : !blocks
  %c = func.call @collection(%blocks) : (!blocks) -> !coll
  %is_sender = arith.cmpi eq, %rank, %zero : i32
  scf.if %is_sender {
    %v = arith.constant 2.0 : f16
    linalg.fill ins(%v : f16) outs(%blocks : !blocks)
    %sequences = memref.alloc() : memref<1xi32>
    memref.store %zero, %sequences[%c0] : memref<1xi32>
    %s = memref.cast %sequences : memref<1xi32> to memref<?xi32>
    kvcache.send_pages %c, %s, %one : !coll, memref<?xi32>
    memref.dealloc %sequences : memref<1xi32>
  } else {
    %minus1 = arith.constant -1.0 : f16
    linalg.fill ins(%minus1 : f16) outs(%blocks : !blocks)
    kvcache.recv_pages %c, %dst, %zero : !coll, memref<?xi32>
    %flat = memref.collapse_shape %blocks [[0, 1, 2, 3, 4, 5]] : !blocks into memref<512xf16>
    %c1 = arith.constant 1 : index
    %c512 = arith.constant 512 : index
    %n = scf.for %i = %c0 to %c512 step %c1 iter_args(%a = %c0) -> index {
      %x = memref.load %flat[%i] : memref<512xf16>
      %eq = arith.cmpf oeq, %x, %minus1 : f16
      %inc = arith.select %eq, %c1, %c0 : index
      %next = arith.addi %a, %inc : index
      scf.yield %next : index
    }
    vector.print str "received; untouched "
    vector.print %n : index punctuation <no_punctuation>
    vector.print str " of 512\n"
  }
  memref.dealloc %blocks : !blocks
  mpi.finalize
  return
}

func.func @count() {
  %ids = memref.get_global @count_ids : memref<2xi32>
  %d = memref.cast %ids : memref<2xi32> to memref<?xi32>
  func.call @run(%d) : (memref<?xi32>) -> ()
  return
}

func.func @range() {
  %ids = memref.get_global @range_ids : memref<3xi32>
  %d = memref.cast %ids : memref<3xi32> to memref<?xi32>
  func.call @run(%d) : (memref<?xi32>) -> ()
  return
}

func.func @repeated() {
  %ids = memref.get_global @repeated_ids : memref<3xi32>
  %d = memref.cast %ids : memref<3xi32> to memref<?xi32>
  func.call @run(%d) : (memref<?xi32>) -> ()
  return
}
