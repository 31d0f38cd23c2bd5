// RUN: kvcache-opt %s -kvcache-mpi-to-llvm | FileCheck %s
// RUN: kvcache-opt %s -kvcache-mpi-to-llvm='implementation=MPICH' | FileCheck %s --check-prefix=MPICH
// RUN: kvcache-opt %s -kvcache-mpi-to-llvm -reconcile-unrealized-casts | FileCheck %s --check-prefix=STORED

// The non-blocking messages of bytes that the page transfers use, which
// MLIR 22 does not lower: MPI_Isend and MPI_Irecv with MPI_INT8_T (as MLIR
// lowers mpi.send of i8), the request written into a slot of the entry
// block (not one per loop iteration) and returned as an i64; MPI_Wait on
// the request with MPI_STATUS_IGNORE. OpenMPI's handles are pointers
// (MPI_INT8_T = &ompi_mpi_int8_t, MPI_STATUS_IGNORE null), MPICH's ints
// (MPI_INT8_T = 0x4c000137 = 1275068727, MPI_STATUS_IGNORE 1).

// CHECK-DAG: llvm.func @MPI_Isend(!llvm.ptr, i32, !llvm.ptr, i32, i32, !llvm.ptr, !llvm.ptr) -> i32
// CHECK-DAG: llvm.func @MPI_Irecv(!llvm.ptr, i32, !llvm.ptr, i32, i32, !llvm.ptr, !llvm.ptr) -> i32
// CHECK-DAG: llvm.func @MPI_Wait(!llvm.ptr, !llvm.ptr) -> i32
// CHECK-DAG: llvm.mlir.global external @ompi_mpi_int8_t() {{.*}} : !llvm.struct<"ompi_predefined_datatype_t", opaque>
// CHECK-LABEL: func.func @messages(
// CHECK-SAME: %[[BYTES:.*]]: memref<?xi8>, %[[TAG:.*]]: i32, %[[PEER:.*]]: i32, %[[N:.*]]: index)
// CHECK-COUNT-3: llvm.alloca %{{.*}} x !llvm.ptr
// CHECK: scf.for
// CHECK: %[[INT8:.*]] = llvm.mlir.addressof @ompi_mpi_int8_t
// CHECK: llvm.call @MPI_Isend(%{{.*}}, %{{.*}}, %[[INT8]], %[[PEER]], %[[TAG]], %{{.*}}, %[[SEND_SLOT:.*]]) :
// CHECK: %[[SENT:.*]] = llvm.load %[[SEND_SLOT]] : !llvm.ptr -> !llvm.ptr
// CHECK: llvm.ptrtoint %[[SENT]] : !llvm.ptr to i64
// CHECK: llvm.call @MPI_Irecv(%{{.*}}, %{{.*}}, %{{.*}}, %[[PEER]], %[[TAG]], %{{.*}}, %{{.*}}) :
// CHECK: %[[REQUEST:.*]] = llvm.inttoptr %{{.*}} : i64 to !llvm.ptr
// CHECK: llvm.store %[[REQUEST]], %[[WAIT_SLOT:.*]] : !llvm.ptr, !llvm.ptr
// CHECK: %[[ZERO:.*]] = llvm.mlir.constant(0 : i64) : i64
// CHECK: %[[IGNORE:.*]] = llvm.inttoptr %[[ZERO]] : i64 to !llvm.ptr
// CHECK: llvm.call @MPI_Wait(%[[WAIT_SLOT]], %[[IGNORE]])
// CHECK: }
// CHECK-NOT: llvm.alloca

// MPICH-DAG: llvm.func @MPI_Isend(!llvm.ptr, i32, i32, i32, i32, i32, !llvm.ptr) -> i32
// MPICH-DAG: llvm.func @MPI_Irecv(!llvm.ptr, i32, i32, i32, i32, i32, !llvm.ptr) -> i32
// MPICH-DAG: llvm.func @MPI_Wait(!llvm.ptr, !llvm.ptr) -> i32
// MPICH-LABEL: func.func @messages(
// MPICH-COUNT-3: llvm.alloca %{{.*}} x i32
// MPICH: scf.for
// MPICH: %[[INT8:.*]] = llvm.mlir.constant(1275068727 : i32) : i32
// MPICH: llvm.call @MPI_Isend(%{{.*}}, %{{.*}}, %[[INT8]], %{{.*}}, %{{.*}}, %{{.*}}, %[[SEND_SLOT:.*]]) :
// MPICH: %[[SENT:.*]] = llvm.load %[[SEND_SLOT]] : !llvm.ptr -> i32
// MPICH: llvm.zext %[[SENT]] : i32 to i64
// MPICH: llvm.call @MPI_Irecv
// MPICH: llvm.trunc %{{.*}} : i64 to i32
// MPICH: %[[ONE:.*]] = llvm.mlir.constant(1 : i64) : i64
// MPICH: %[[IGNORE:.*]] = llvm.inttoptr %[[ONE]] : i64 to !llvm.ptr
// MPICH: llvm.call @MPI_Wait(%{{.*}}, %[[IGNORE]])

// A request kept in memory as the i64 and read back: no cast is left.
// STORED-LABEL: func.func @messages(
// STORED: llvm.call @MPI_Irecv
// STORED: %[[RECEIVED:.*]] = llvm.load
// STORED: %[[HANDLE:.*]] = llvm.ptrtoint %[[RECEIVED]] : !llvm.ptr to i64
// STORED: memref.store %[[HANDLE]], %{{.*}}[%{{.*}}] : memref<1xi64>
// STORED: %[[LOADED:.*]] = memref.load
// STORED: llvm.inttoptr %[[LOADED]] : i64 to !llvm.ptr
// STORED: llvm.call @MPI_Wait
// STORED-NOT: !mpi.request
func.func @messages(%bytes: memref<?xi8>, %tag: i32, %peer: i32, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %comm = mpi.comm_world : !mpi.comm
  %requests = memref.alloca() : memref<1xi64>
  scf.for %i = %c0 to %n step %c1 {
    %sent = mpi.isend(%bytes, %tag, %peer, %comm) : memref<?xi8>, i32, i32 -> !mpi.request
    %received = mpi.irecv(%bytes, %tag, %peer, %comm) : memref<?xi8>, i32, i32 -> !mpi.request
    %handle = builtin.unrealized_conversion_cast %received : !mpi.request to i64
    memref.store %handle, %requests[%c0] : memref<1xi64>
    %loaded = memref.load %requests[%c0] : memref<1xi64>
    %request = builtin.unrealized_conversion_cast %loaded : i64 to !mpi.request
    mpi.wait(%request) : !mpi.request
  }
  return
}

// In an OpenMP parallel region, the slot is the thread's own: in the
// region's entry block, not the function's.
// CHECK-LABEL: func.func @threads(
// CHECK-NOT: llvm.alloca
// CHECK: omp.parallel {
// CHECK-COUNT-2: llvm.alloca %{{.*}} x !llvm.ptr
// CHECK: llvm.call @MPI_Isend
// CHECK: llvm.call @MPI_Wait
func.func @threads(%bytes: memref<?xi8>, %tag: i32, %peer: i32) {
  omp.parallel {
    %comm = mpi.comm_world : !mpi.comm
    %sent = mpi.isend(%bytes, %tag, %peer, %comm) : memref<?xi8>, i32, i32 -> !mpi.request
    mpi.wait(%sent) : !mpi.request
    omp.terminator
  }
  return
}
