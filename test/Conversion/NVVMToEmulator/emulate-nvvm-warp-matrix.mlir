// RUN: kvcache-opt %s -kvcache-emulate-nvvm | FileCheck %s

// Warp-collective matrix ops become runtime calls that take this lane's
// operands (mma.sync: A, B and C registers as i32, each group padded to 4,
// 2 and 4) and write this lane's result registers to a stack slot made at
// the function's entry.

// CHECK-LABEL: llvm.func @__kvemu_kernels_ldmatrix_x4_trans(
// CHECK-SAME: %[[ROW:.*]]: !llvm.ptr<3>)
// CHECK: %[[REGISTERS:.*]] = llvm.alloca %{{.*}} x !llvm.array<4 x i32>
// CHECK: %[[GENERIC:.*]] = llvm.addrspacecast %[[ROW]] : !llvm.ptr<3> to !llvm.ptr
// CHECK-DAG: %[[FOUR:.*]] = llvm.mlir.constant(4 : i32) : i32
// CHECK-DAG: %[[TRANSPOSE:.*]] = llvm.mlir.constant(1 : i32) : i32
// CHECK: llvm.call @__kvemu_ldmatrix(%[[GENERIC]], %[[FOUR]], %[[TRANSPOSE]], %[[REGISTERS]], %{{.*}}) : (!llvm.ptr, i32, i32, !llvm.ptr, !llvm.ptr) -> ()
// CHECK: %[[SLOT3:.*]] = llvm.getelementptr %[[REGISTERS]][3] : (!llvm.ptr) -> !llvm.ptr, i32
// CHECK: %[[R3:.*]] = llvm.load %[[SLOT3]] : !llvm.ptr -> i32
// CHECK: %[[FRAGMENTS:.*]] = llvm.insertvalue %[[R3]], %{{.*}}[3] : !llvm.struct<(i32, i32, i32, i32)>
// CHECK: llvm.return %[[FRAGMENTS]]

// CHECK-LABEL: llvm.func @__kvemu_kernels_ldmatrix_x1(
// CHECK: %[[REGISTERS:.*]] = llvm.alloca %{{.*}} x !llvm.array<1 x i32>
// CHECK-DAG: %[[ONE:.*]] = llvm.mlir.constant(1 : i32) : i32
// CHECK-DAG: %[[ROW_MAJOR:.*]] = llvm.mlir.constant(0 : i32) : i32
// CHECK: llvm.call @__kvemu_ldmatrix(%{{.*}}, %[[ONE]], %[[ROW_MAJOR]], %[[REGISTERS]], %{{.*}})
// CHECK: %[[R0:.*]] = llvm.load %{{.*}} : !llvm.ptr -> i32
// CHECK: llvm.return %[[R0]] : i32

// m16n8k16, f16 multiplicands, f32 C and D: flags 1 (k16).
// CHECK-LABEL: llvm.func @__kvemu_kernels_mma_f16_f32(
// CHECK-SAME: %[[H:.*]]: vector<2xf16>, %[[X:.*]]: f32)
// CHECK: %[[D:.*]] = llvm.alloca %{{.*}} x !llvm.array<4 x i32>
// CHECK: %[[FLAGS:.*]] = llvm.mlir.constant(1 : i32) : i32
// CHECK: %[[HB:.*]] = llvm.bitcast %[[H]] : vector<2xf16> to i32
// CHECK: %[[XB:.*]] = llvm.bitcast %[[X]] : f32 to i32
// CHECK: llvm.call @__kvemu_mma(%[[FLAGS]], %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[D]], %{{.*}}) : (i32, i32, i32, i32, i32, i32, i32, i32, i32, i32, i32, !llvm.ptr, !llvm.ptr) -> ()
// CHECK: %[[D0:.*]] = llvm.load %{{.*}} : !llvm.ptr -> i32
// CHECK: %[[D0F:.*]] = llvm.bitcast %[[D0]] : i32 to f32
// CHECK: llvm.insertvalue %[[D0F]], %{{.*}}[0] : !llvm.struct<(f32, f32, f32, f32)>

// m16n8k8, f16 C and D: flags 4 | 8; A has 2 registers, B 1, C 2 (the
// rest zeros); D comes back as 2 f16x2 registers.
// CHECK-LABEL: llvm.func @__kvemu_kernels_mma_k8_f16(
// CHECK-SAME: %[[H:.*]]: vector<2xf16>)
// CHECK: %[[D:.*]] = llvm.alloca %{{.*}} x !llvm.array<2 x i32>
// CHECK: %[[FLAGS:.*]] = llvm.mlir.constant(12 : i32) : i32
// CHECK: %[[ZERO:.*]] = llvm.mlir.constant(0 : i32) : i32
// CHECK-COUNT-5: llvm.bitcast %[[H]] : vector<2xf16> to i32
// CHECK: llvm.call @__kvemu_mma(%[[FLAGS]], %{{.*}}, %{{.*}}, %[[ZERO]], %[[ZERO]], %{{.*}}, %[[ZERO]], %{{.*}}, %{{.*}}, %[[ZERO]], %[[ZERO]], %[[D]], %{{.*}})
// CHECK: %[[SLOT1:.*]] = llvm.getelementptr %[[D]][1] : (!llvm.ptr) -> !llvm.ptr, i32
// CHECK: %[[D1:.*]] = llvm.load %[[SLOT1]] : !llvm.ptr -> i32
// CHECK: %[[D1H:.*]] = llvm.bitcast %[[D1]] : i32 to vector<2xf16>
// CHECK: llvm.insertvalue %[[D1H]], %{{.*}}[1] : !llvm.struct<(vector<2xf16>, vector<2xf16>)>

// m16n8k8, bf16 multiplicands (already i32), f32 C and D: flags 2.
// CHECK-LABEL: llvm.func @__kvemu_kernels_mma_bf16_k8(
// CHECK-SAME: %[[W:.*]]: i32, %[[X:.*]]: f32)
// CHECK: %[[FLAGS:.*]] = llvm.mlir.constant(2 : i32) : i32
// CHECK: %[[ZERO:.*]] = llvm.mlir.constant(0 : i32) : i32
// CHECK: llvm.call @__kvemu_mma(%[[FLAGS]], %[[W]], %[[W]], %[[ZERO]], %[[ZERO]], %[[W]], %[[ZERO]], %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}})
// CHECK-NOT: nvvm.

module attributes {gpu.container_module} {
  gpu.module @kernels {
    llvm.func @ldmatrix_x4_trans(%row: !llvm.ptr<3>) -> !llvm.struct<(i32, i32, i32, i32)> {
      %fragments = nvvm.ldmatrix %row {num = 4 : i32, layout = #nvvm.mma_layout<col>, shape = #nvvm.ld_st_matrix_shape<m = 8, n = 8>, eltType = #nvvm.ld_st_matrix_elt_type<b16>} : (!llvm.ptr<3>) -> !llvm.struct<(i32, i32, i32, i32)>
      llvm.return %fragments : !llvm.struct<(i32, i32, i32, i32)>
    }
    llvm.func @ldmatrix_x1(%row: !llvm.ptr<3>) -> i32 {
      %fragment = nvvm.ldmatrix %row {num = 1 : i32, layout = #nvvm.mma_layout<row>, shape = #nvvm.ld_st_matrix_shape<m = 8, n = 8>, eltType = #nvvm.ld_st_matrix_elt_type<b16>} : (!llvm.ptr<3>) -> i32
      llvm.return %fragment : i32
    }
    llvm.func @mma_f16_f32(%h: vector<2xf16>, %x: f32) -> !llvm.struct<(f32, f32, f32, f32)> {
      %d = nvvm.mma.sync A[%h, %h, %h, %h] B[%h, %h] C[%x, %x, %x, %x] {layoutA = #nvvm.mma_layout<row>, layoutB = #nvvm.mma_layout<col>, shape = #nvvm.shape<m = 16, n = 8, k = 16>} : (vector<2xf16>, vector<2xf16>, f32) -> !llvm.struct<(f32, f32, f32, f32)>
      llvm.return %d : !llvm.struct<(f32, f32, f32, f32)>
    }
    llvm.func @mma_k8_f16(%h: vector<2xf16>) -> !llvm.struct<(vector<2xf16>, vector<2xf16>)> {
      %d = nvvm.mma.sync A[%h, %h] B[%h] C[%h, %h] {layoutA = #nvvm.mma_layout<row>, layoutB = #nvvm.mma_layout<col>, shape = #nvvm.shape<m = 16, n = 8, k = 8>} : (vector<2xf16>, vector<2xf16>, vector<2xf16>) -> !llvm.struct<(vector<2xf16>, vector<2xf16>)>
      llvm.return %d : !llvm.struct<(vector<2xf16>, vector<2xf16>)>
    }
    llvm.func @mma_bf16_k8(%w: i32, %x: f32) -> !llvm.struct<(f32, f32, f32, f32)> {
      %d = nvvm.mma.sync A[%w, %w] B[%w] C[%x, %x, %x, %x] {layoutA = #nvvm.mma_layout<row>, layoutB = #nvvm.mma_layout<col>, multiplicandAPtxType = #nvvm.mma_type<bf16>, multiplicandBPtxType = #nvvm.mma_type<bf16>, shape = #nvvm.shape<m = 16, n = 8, k = 8>} : (i32, i32, f32) -> !llvm.struct<(f32, f32, f32, f32)>
      llvm.return %d : !llvm.struct<(f32, f32, f32, f32)>
    }
  }
}
