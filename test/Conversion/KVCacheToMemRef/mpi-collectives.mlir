// RUN: kvcache-opt %s -kvcache-mpi-to-llvm | FileCheck %s
// RUN: kvcache-opt %s -kvcache-mpi-to-llvm='implementation=MPICH' | FileCheck %s --check-prefix=MPICH

// The mpi ops of the shard dialect's collectives (convert-shard-to-mpi):
// for OpenMPI, MPI_SUM is the global ompi_mpi_op_sum (as OpenMPI's mpi.h
// defines it; MLIR 22's lowering alone declares ompi_mpi_sum, which the
// library lacks) and the communicator MPI_Comm_split returns is read as a
// pointer (MLIR 22's lowering reads an i32, MPICH's handle, truncating
// it). MPICH keeps the upstream lowering: integer handles and constants.

// CHECK-DAG: llvm.mlir.global external @ompi_mpi_op_sum() {{.*}} : !llvm.struct<"ompi_predefined_op_t", opaque>
// CHECK-NOT: @ompi_mpi_sum
// CHECK-LABEL: func.func @reduce(
// CHECK: %[[NEW:.*]] = llvm.alloca %{{.*}} x !llvm.ptr
// CHECK: llvm.call @MPI_Comm_split(%{{.*}}, %{{.*}}, %{{.*}}, %[[NEW]])
// CHECK: %[[COMM:.*]] = llvm.load %[[NEW]] : !llvm.ptr -> !llvm.ptr
// CHECK: %[[HANDLE:.*]] = llvm.ptrtoint %[[COMM]] : !llvm.ptr to i64
// CHECK: %[[SUM:.*]] = llvm.mlir.addressof @ompi_mpi_op_sum
// CHECK: %[[ARG:.*]] = llvm.inttoptr %[[HANDLE]] : i64 to !llvm.ptr
// CHECK: llvm.call @MPI_Allreduce(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[SUM]], %[[ARG]])

// MPICH-LABEL: func.func @reduce(
// MPICH: llvm.call @MPI_Comm_split
// MPICH: llvm.load %{{.*}} : !llvm.ptr -> i32
// MPICH: llvm.call @MPI_Allreduce
func.func @reduce(%buffer: memref<80xf32>, %color: i32, %key: i32) {
  %world = mpi.comm_world : !mpi.comm
  %comm = mpi.comm_split(%world, %color, %key) : !mpi.comm
  mpi.allreduce(%buffer, %buffer, MPI_SUM, %comm) : memref<80xf32>, memref<80xf32>
  return
}
