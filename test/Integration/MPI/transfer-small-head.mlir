// REQUIRES: mpi
// RUN: kvcache-opt %s -kvcache-to-cpu=checked=true > %t.mlir
// RUN: %mpirun2 mlir-runner %t.mlir -e main -entry-point-result=void \
// RUN:     -shared-libs=%mlir_c_runner_utils,%libmpi | FileCheck %s

// An i8 collection whose scales' pages are larger than its pages
// (head_size 2: 2 bytes of codes per head and token, 4 of scale): the
// staging buffer takes both. Rank 0 sends pages 1, 3, 5 (runs of one
// page, packed into one message); rank 1 receives them into pages 6, 2, 4
// and checks every code and scale of its 8 pages: element e of page p
// holds p * 16 + e (codes) and p * 100 + e (scales) where p is the page
// rank 0 wrote it in, and -1 where nothing was received.

// CHECK: mismatches 0

!blocks = memref<8x2x1x2x1x2xi8>
!scales = memref<8x2x1x2x1xf32>
!coll = !kvcache.paged_collection<i8, num_heads = 1, head_size = 2, page_size = 2, scales = token_head>

memref.global "private" constant @cache_lengths : memref<1xi32> = dense<[6]>
memref.global "private" constant @lookup_table : memref<1x3xi32> = dense<[[1, 3, 5]]>
memref.global "private" constant @dst_pages : memref<3xi32> = dense<[6, 2, 4]>
// Rank 1's page p holds rank 0's page source[p] (-1: none).
memref.global "private" constant @source : memref<8xi32> = dense<[-1, -1, 3, -1, 5, -1, 1, -1]>

func.func @main() {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  %c16 = arith.constant 16 : index
  %c100 = arith.constant 100 : index
  %zero = arith.constant 0 : i32
  %one = arith.constant 1 : i32
  mpi.init
  %comm = mpi.comm_world : !mpi.comm
  %rank = mpi.comm_rank(%comm) : i32
  %blocks = memref.alloc() : !blocks
  %scales = memref.alloc() : !scales
  %codes = memref.collapse_shape %blocks [[0], [1, 2, 3, 4, 5]] : !blocks into memref<8x8xi8>
  %flat_scales = memref.collapse_shape %scales [[0], [1, 2, 3, 4]] : !scales into memref<8x4xf32>
  %lengths = memref.get_global @cache_lengths : memref<1xi32>
  %table = memref.get_global @lookup_table : memref<1x3xi32>
  %l = memref.cast %lengths : memref<1xi32> to memref<?xi32>
  %t = memref.cast %table : memref<1x3xi32> to memref<?x?xi32>
  %b = memref.cast %blocks : !blocks to memref<?x2x?x2x1x2xi8>
  %s = memref.cast %scales : !scales to memref<?x2x?x2x1xf32>
  %c = kvcache.paged_collection %b, %l, %t, %zero, %zero, %s
      : memref<?x2x?x2x1x2xi8>, memref<?xi32>, memref<?x?xi32>, memref<?x2x?x2x1xf32> -> !coll
  %is_sender = arith.cmpi eq, %rank, %zero : i32
  scf.if %is_sender {
    scf.for %p = %c0 to %c8 step %c1 {
      %base = arith.muli %p, %c16 : index
      scf.for %e = %c0 to %c8 step %c1 {
        %v = arith.addi %base, %e : index
        %v8 = arith.index_cast %v : index to i8
        memref.store %v8, %codes[%p, %e] : memref<8x8xi8>
      }
      %sbase = arith.muli %p, %c100 : index
      scf.for %e = %c0 to %c4 step %c1 {
        %v = arith.addi %sbase, %e : index
        %v32 = arith.index_cast %v : index to i32
        %f = arith.sitofp %v32 : i32 to f32
        memref.store %f, %flat_scales[%p, %e] : memref<8x4xf32>
      }
    }
    %sequences = memref.alloc() : memref<1xi32>
    memref.store %zero, %sequences[%c0] : memref<1xi32>
    %seqs = memref.cast %sequences : memref<1xi32> to memref<?xi32>
    kvcache.send_pages %c, %seqs, %one : !coll, memref<?xi32>
  } else {
    %m1 = arith.constant -1 : i8
    %m1f = arith.constant -1.0 : f32
    linalg.fill ins(%m1 : i8) outs(%blocks : !blocks)
    linalg.fill ins(%m1f : f32) outs(%scales : !scales)
    %dst = memref.get_global @dst_pages : memref<3xi32>
    %d = memref.cast %dst : memref<3xi32> to memref<?xi32>
    kvcache.recv_pages %c, %d, %zero : !coll, memref<?xi32>
    %source = memref.get_global @source : memref<8xi32>
    %bad = scf.for %p = %c0 to %c8 step %c1 iter_args(%acc = %c0) -> index {
      %src32 = memref.load %source[%p] : memref<8xi32>
      %none = arith.cmpi slt, %src32, %zero : i32
      %src = arith.index_cast %src32 : i32 to index
      %n1 = scf.for %e = %c0 to %c8 step %c1 iter_args(%a = %acc) -> index {
        %base = arith.muli %src, %c16 : index
        %v = arith.addi %base, %e : index
        %v8 = arith.index_cast %v : index to i8
        %want = arith.select %none, %m1, %v8 : i8
        %got = memref.load %codes[%p, %e] : memref<8x8xi8>
        %ne = arith.cmpi ne, %want, %got : i8
        %inc = arith.select %ne, %c1, %c0 : index
        %next = arith.addi %a, %inc : index
        scf.yield %next : index
      }
      %n2 = scf.for %e = %c0 to %c4 step %c1 iter_args(%a = %n1) -> index {
        %base = arith.muli %src, %c100 : index
        %v = arith.addi %base, %e : index
        %v32 = arith.index_cast %v : index to i32
        %f = arith.sitofp %v32 : i32 to f32
        %want = arith.select %none, %m1f, %f : f32
        %got = memref.load %flat_scales[%p, %e] : memref<8x4xf32>
        %ne = arith.cmpf une, %want, %got : f32
        %inc = arith.select %ne, %c1, %c0 : index
        %next = arith.addi %a, %inc : index
        scf.yield %next : index
      }
      scf.yield %n2 : index
    }
    vector.print str "mismatches "
    vector.print %bad : index
  }
  mpi.finalize
  return
}
