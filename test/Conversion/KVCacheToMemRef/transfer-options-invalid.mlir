// The page-transfer options' bad values: an error naming the option, no crash.
// RUN: not kvcache-opt %s -convert-kvcache-to-memref='transfer-direct-bytes=0' 2>&1 | FileCheck %s --check-prefix=BYTES
// RUN: not kvcache-opt %s -convert-kvcache-to-memref='transfer-direct-bytes=4096 transfer-staging-bytes=4095' 2>&1 | FileCheck %s --check-prefix=STAGING
// RUN: not kvcache-opt %s -kvcache-mpi-to-llvm='implementation=IntelMPI' 2>&1 | FileCheck %s --check-prefix=IMPL
// RUN: kvcache-opt %s -kvcache-mpi-to-llvm='implementation=MPICH' | FileCheck %s --check-prefix=MPICH

// BYTES: error: convert-kvcache-to-memref: transfer-direct-bytes must be at least 1, got 0
// STAGING: error: convert-kvcache-to-memref: transfer-staging-bytes must be at least transfer-direct-bytes (4096), got 4095
// IMPL: error: kvcache-mpi-to-llvm: implementation must be OpenMPI or MPICH, got 'IntelMPI'
// MPICH: llvm.func @MPI_Init(!llvm.ptr, !llvm.ptr) -> i32
// MPICH-LABEL: func.func @init
// MPICH: llvm.call @MPI_Init
func.func @init() {
  mpi.init
  return
}
