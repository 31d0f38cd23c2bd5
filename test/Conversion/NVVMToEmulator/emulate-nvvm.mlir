// RUN: kvcache-opt %s -kvcache-emulate-nvvm | FileCheck %s

// A kernel in the NVVM/LLVM dialects and its LLVM-level launch become host
// functions calling the GPU emulator runtime.

// CHECK-NOT: gpu.module
// CHECK-NOT: gpu.container_module
// CHECK-DAG: llvm.mlir.global internal constant @__kvemu_kernels_shared_sizes(dense<[256, 0]> : tensor<2xi64>)
// CHECK-DAG: llvm.mlir.global internal constant @[[NAME:__kvemu_str_[0-9]+]]("kernel\00")

// CHECK-LABEL: llvm.func @host(
// CHECK-SAME: %[[HOST_IN:.*]]: !llvm.ptr, %[[HOST_N:.*]]: i32)
// CHECK: %[[SLOT_IN:.*]] = llvm.alloca %{{.*}} x !llvm.ptr
// CHECK: %[[SLOT_N:.*]] = llvm.alloca %{{.*}} x i32
// CHECK: %[[PARAMS_ARRAY:.*]] = llvm.alloca %{{.*}} x !llvm.array<2 x ptr>
// CHECK: llvm.store %[[HOST_IN]], %[[SLOT_IN]]
// CHECK: llvm.store %[[HOST_N]], %[[SLOT_N]]
// CHECK: %[[ENTRY:.*]] = llvm.mlir.addressof @__kvemu_entry_kernels_kernel
// CHECK: %[[KERNEL_NAME:.*]] = llvm.mlir.addressof @[[NAME]]
// CHECK: llvm.call @__kvemu_launch(%[[ENTRY]], %[[KERNEL_NAME]], %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[PARAMS_ARRAY]], %{{.*}})
// CHECK-NOT: gpu.launch_func

// CHECK-LABEL: llvm.func @__kvemu_kernels_kernel(
// CHECK-SAME: %[[IN:.*]]: !llvm.ptr, %[[N:.*]]: i32)
// CHECK-NOT: nvvm.
// CHECK: %[[TID:.*]] = llvm.call @__kvemu_sreg(%{{.*}}) : (i32) -> i32
// CHECK: %[[TILE:.*]] = llvm.call @__kvemu_shared(%{{.*}}) : (i32) -> !llvm.ptr
// CHECK: %[[TILE3:.*]] = llvm.addrspacecast %[[TILE]] : !llvm.ptr to !llvm.ptr<3>
// CHECK: %[[SIZE4:.*]] = llvm.mlir.constant(4 : i64) : i64
// CHECK: %[[READ:.*]] = llvm.mlir.constant(0 : i32) : i32
// CHECK: %[[SITE:.*]] = llvm.mlir.addressof @__kvemu_site_{{[0-9]+}} : !llvm.ptr
// CHECK: llvm.call @__kvemu_access(%[[IN]], %[[SIZE4]], %[[READ]], %[[SITE]])
// CHECK: %[[X:.*]] = llvm.load %[[IN]] : !llvm.ptr -> f32
// CHECK: %[[GENERIC:.*]] = llvm.addrspacecast %[[TILE3]] : !llvm.ptr<3> to !llvm.ptr
// CHECK: %[[WRITE_SHARED:.*]] = llvm.mlir.constant(769 : i32) : i32
// CHECK: llvm.call @__kvemu_access(%[[GENERIC]], %{{.*}}, %[[WRITE_SHARED]], %{{.*}})
// CHECK: llvm.store %[[X]], %[[TILE3]]
// CHECK: llvm.call @__kvemu_barrier(%{{.*}}) : (!llvm.ptr) -> ()
// CHECK: %[[BITS:.*]] = llvm.bitcast %[[X]] : f32 to i32
// CHECK: %[[PACKED:.*]] = llvm.call @__kvemu_shfl(%{{.*}}, %{{.*}}, %[[BITS]], %{{.*}}, %{{.*}}, %{{.*}}) : (i32, i32, i32, i32, i32, !llvm.ptr) -> i64
// CHECK: llvm.call @__kvemu_cp_async(%{{.*}}, %{{.*}}, %{{.*}}, %[[N]], %{{.*}}) : (!llvm.ptr, !llvm.ptr, i32, i32, !llvm.ptr) -> ()
// CHECK: llvm.call @__kvemu_cp_async_commit() : () -> ()
// CHECK: llvm.call @__kvemu_cp_async_wait(%{{.*}}, %{{.*}}) : (i32, !llvm.ptr) -> ()
// CHECK: llvm.call @__kvemu_ex2_approx_ftz_f32(%{{.*}}) : (f32) -> f32
// CHECK: llvm.call @__kvemu_assertfail(
// CHECK: llvm.return

// CHECK-LABEL: llvm.func @__kvemu_entry_kernels_kernel(
// CHECK-SAME: %[[PARAMS:.*]]: !llvm.ptr)
// CHECK: %[[SLOT0:.*]] = llvm.getelementptr %[[PARAMS]][0] : (!llvm.ptr) -> !llvm.ptr, !llvm.ptr
// CHECK: %[[P0:.*]] = llvm.load %[[SLOT0]] : !llvm.ptr -> !llvm.ptr
// CHECK: %[[A0:.*]] = llvm.load %[[P0]] : !llvm.ptr -> !llvm.ptr
// CHECK: %[[SLOT1:.*]] = llvm.getelementptr %[[PARAMS]][1] : (!llvm.ptr) -> !llvm.ptr, !llvm.ptr
// CHECK: %[[P1:.*]] = llvm.load %[[SLOT1]] : !llvm.ptr -> !llvm.ptr
// CHECK: %[[A1:.*]] = llvm.load %[[P1]] : !llvm.ptr -> i32
// CHECK: llvm.call @__kvemu_kernels_kernel(%[[A0]], %[[A1]])


module attributes {gpu.container_module} {
  gpu.module @kernels {
    llvm.mlir.global internal @tile() {addr_space = 3 : i32} : !llvm.array<64 x f32>
    llvm.mlir.global external @dynamic() {addr_space = 3 : i32, alignment = 16 : i64} : !llvm.array<0 x i8>
    llvm.mlir.global internal constant @message("failed\00") {addr_space = 0 : i32}
    llvm.func @__assertfail(!llvm.ptr, !llvm.ptr, i32, !llvm.ptr, i64)
    llvm.func @kernel(%in: !llvm.ptr, %n: i32) attributes {gpu.kernel, nvvm.kernel} {
      %tid = nvvm.read.ptx.sreg.tid.x : i32
      %tile = llvm.mlir.addressof @tile : !llvm.ptr<3>
      %x = llvm.load %in : !llvm.ptr -> f32
      llvm.store %x, %tile : f32, !llvm.ptr<3>
      nvvm.barrier0
      %all = llvm.mlir.constant(-1 : i32) : i32
      %one = llvm.mlir.constant(1 : i32) : i32
      %clamp = llvm.mlir.constant(31 : i32) : i32
      %y = nvvm.shfl.sync bfly %all, %x, %one, %clamp : f32 -> f32
      %global = llvm.addrspacecast %in : !llvm.ptr to !llvm.ptr<1>
      nvvm.cp.async.shared.global %tile, %global, 4, cache = ca, %n : !llvm.ptr<3>, !llvm.ptr<1>, i32
      nvvm.cp.async.commit.group
      nvvm.cp.async.wait.group 0
      %z = llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f32"(%y) : (f32) -> f32
      %text = llvm.mlir.addressof @message : !llvm.ptr
      %c0 = llvm.mlir.constant(0 : i64) : i64
      llvm.call @__assertfail(%text, %text, %n, %text, %c0) : (!llvm.ptr, !llvm.ptr, i32, !llvm.ptr, i64) -> ()
      llvm.return
    }
  }
  llvm.func @host(%in: !llvm.ptr, %n: i32) {
    %c1 = llvm.mlir.constant(1 : index) : i64
    %c64 = llvm.mlir.constant(64 : index) : i64
    gpu.launch_func @kernels::@kernel blocks in (%c1, %c1, %c1) threads in (%c64, %c1, %c1) : i64
        args(%in : !llvm.ptr, %n : i32)
    llvm.return
  }
}
