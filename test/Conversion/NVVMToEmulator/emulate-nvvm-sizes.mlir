// RUN: kvcache-opt %s -kvcache-emulate-nvvm | FileCheck %s

// The size each access reports to the runtime is what the access touches:
// a vector<3xf32> store writes 12 bytes (MLIR's type size, 16, would make
// neighbouring stores of other threads look like races). A device assert
// calls the runtime's __kvemu_assertfail.

module attributes {gpu.container_module} {
  gpu.module @device {
    llvm.func @__assertfail(!llvm.ptr, !llvm.ptr, i32, !llvm.ptr, i64)
    llvm.func @kernel(%p: !llvm.ptr<1>, %v: vector<3xf32>, %h: vector<3xf16>,
                      %msg: !llvm.ptr) attributes {nvvm.kernel} {
      llvm.store %v, %p : vector<3xf32>, !llvm.ptr<1>
      %x = llvm.load %p : !llvm.ptr<1> -> vector<3xf16>
      %f = llvm.load %p : !llvm.ptr<1> -> f32
      %line = llvm.mlir.constant(1 : i32) : i32
      %size = llvm.mlir.constant(1 : i64) : i64
      llvm.call @__assertfail(%msg, %msg, %line, %msg, %size) : (!llvm.ptr, !llvm.ptr, i32, !llvm.ptr, i64) -> ()
      llvm.return
    }
  }
}

// CHECK-LABEL: llvm.func @__kvemu_device_kernel(
// CHECK: %[[TWELVE:.*]] = llvm.mlir.constant(12 : i64) : i64
// CHECK: llvm.call @__kvemu_access(%{{.*}}, %[[TWELVE]],
// CHECK-NEXT: llvm.store %{{.*}} : vector<3xf32>, !llvm.ptr<1>
// CHECK: %[[SIX:.*]] = llvm.mlir.constant(6 : i64) : i64
// CHECK: llvm.call @__kvemu_access(%{{.*}}, %[[SIX]],
// CHECK-NEXT: llvm.load %{{.*}} : !llvm.ptr<1> -> vector<3xf16>
// CHECK: %[[FOUR:.*]] = llvm.mlir.constant(4 : i64) : i64
// CHECK: llvm.call @__kvemu_access(%{{.*}}, %[[FOUR]],
// CHECK-NEXT: llvm.load %{{.*}} : !llvm.ptr<1> -> f32
// CHECK: llvm.call @__kvemu_assertfail(
