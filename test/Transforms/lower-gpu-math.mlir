// RUN: kvcache-opt %s --pass-pipeline='builtin.module(gpu.module(kvcache-lower-gpu-math))' | FileCheck %s

// The exact math ops become LLVM intrinsic calls (generic
// llvm.call_intrinsic, which convert-gpu-to-nvvm leaves alone), rsqrt
// 1 / sqrt, the transcendental ones of the list MLIR's f32 polynomials (f16
// and bf16 through f32); sin stays for libdevice. Host functions outside
// gpu.module are not touched.

// CHECK-LABEL: gpu.func @exact(
// CHECK-SAME: %[[X:.*]]: f32, %[[Y:.*]]: f32, %[[V:.*]]: vector<4xf32>
// (The rewrite driver hoists constants to the top.)
// CHECK: %[[ONE:.*]] = arith.constant 1.000000e+00 : f32
gpu.module @kernels {
  gpu.func @exact(%x: f32, %y: f32, %v: vector<4xf32>, %i: i32,
                  %out: memref<16xf32>, %vout: memref<vector<4xf32>>) kernel {
    // CHECK: llvm.call_intrinsic "llvm.fabs"(%[[X]]) : (f32) -> f32
    %0 = math.absf %x : f32
    // CHECK: llvm.call_intrinsic "llvm.ceil"(%[[X]])
    %1 = math.ceil %x : f32
    // CHECK: llvm.call_intrinsic "llvm.floor"(%[[X]])
    %2 = math.floor %x : f32
    // CHECK: llvm.call_intrinsic "llvm.trunc"(%[[X]])
    %3 = math.trunc %x : f32
    // CHECK: llvm.call_intrinsic "llvm.roundeven"(%[[X]])
    %4 = math.roundeven %x : f32
    // CHECK: llvm.call_intrinsic "llvm.round"(%[[X]])
    %5 = math.round %x : f32
    // CHECK: llvm.call_intrinsic "llvm.fma"(%[[X]], %[[Y]], %[[X]]) : (f32, f32, f32) -> f32
    %6 = math.fma %x, %y, %x : f32
    // CHECK: llvm.call_intrinsic "llvm.copysign"(%[[X]], %[[Y]])
    %7 = math.copysign %x, %y : f32
    // CHECK: %[[ROOT:.*]] = llvm.call_intrinsic "llvm.sqrt"(%[[X]])
    %8 = math.sqrt %x : f32
    // CHECK: %[[ROOT2:.*]] = llvm.call_intrinsic "llvm.sqrt"(%[[X]])
    // CHECK: arith.divf %[[ONE]], %[[ROOT2]] : f32
    %9 = math.rsqrt %x : f32
    // CHECK: llvm.call_intrinsic "llvm.sqrt"(%[[V]]) : (vector<4xf32>) -> vector<4xf32>
    %10 = math.sqrt %v : vector<4xf32>
    // Integer math is not a libdevice call: left alone.
    // CHECK: math.absi
    %11 = math.absi %i : i32
    %c0 = arith.constant 0 : index
    memref.store %0, %out[%c0] : memref<16xf32>
    memref.store %1, %out[%c0] : memref<16xf32>
    memref.store %2, %out[%c0] : memref<16xf32>
    memref.store %3, %out[%c0] : memref<16xf32>
    memref.store %4, %out[%c0] : memref<16xf32>
    memref.store %5, %out[%c0] : memref<16xf32>
    memref.store %6, %out[%c0] : memref<16xf32>
    memref.store %7, %out[%c0] : memref<16xf32>
    memref.store %8, %out[%c0] : memref<16xf32>
    memref.store %9, %out[%c0] : memref<16xf32>
    memref.store %10, %vout[] : memref<vector<4xf32>>
    %f = arith.sitofp %11 : i32 to f32
    memref.store %f, %out[%c0] : memref<16xf32>
    gpu.return
  }

  // CHECK-LABEL: gpu.func @transcendental(
  gpu.func @transcendental(%x: f32, %h: f16, %out: memref<16xf32>,
                           %hout: memref<4xf16>) kernel {
    // CHECK-NOT: math.exp
    // CHECK-NOT: math.log
    // CHECK-NOT: math.tanh
    // CHECK-NOT: math.erf
    // The polynomials' multiply-adds are intrinsic calls too.
    // CHECK: llvm.call_intrinsic "llvm.fma"
    // CHECK-NOT: math.exp
    // CHECK-NOT: math.log
    // CHECK-NOT: math.tanh
    // CHECK-NOT: math.erf
    // CHECK: math.sin %{{.*}} : f32
    %0 = math.exp %x : f32
    %1 = math.expm1 %x : f32
    %2 = math.log %x : f32
    %3 = math.log2 %x : f32
    %4 = math.log1p %x : f32
    %5 = math.tanh %x : f32
    %6 = math.erf %x : f32
    %7 = math.erfc %x : f32
    %8 = math.sin %x : f32
    // CHECK: arith.extf %{{.*}} : f16 to f32
    // CHECK: arith.truncf %{{.*}} : f32 to f16
    %9 = math.exp %h : f16
    %c0 = arith.constant 0 : index
    memref.store %0, %out[%c0] : memref<16xf32>
    memref.store %1, %out[%c0] : memref<16xf32>
    memref.store %2, %out[%c0] : memref<16xf32>
    memref.store %3, %out[%c0] : memref<16xf32>
    memref.store %4, %out[%c0] : memref<16xf32>
    memref.store %5, %out[%c0] : memref<16xf32>
    memref.store %6, %out[%c0] : memref<16xf32>
    memref.store %7, %out[%c0] : memref<16xf32>
    memref.store %8, %out[%c0] : memref<16xf32>
    memref.store %9, %hout[%c0] : memref<4xf16>
    gpu.return
  }
}

// CHECK-LABEL: func.func @host(
// CHECK: math.sqrt
// CHECK: math.exp
func.func @host(%x: f32) -> f32 {
  %0 = math.sqrt %x : f32
  %1 = math.exp %0 : f32
  return %1 : f32
}

// Vectors: the polynomials build vector constants (with the vector dialect,
// which the pass loads: a crash before).
// CHECK-LABEL: gpu.func @vectors(
// CHECK-NOT: math.exp
// CHECK: arith.constant dense<{{.*}}> : vector<4xf32>
// CHECK: llvm.call_intrinsic "llvm.fma"({{.*}}) : (vector<4xf32>, vector<4xf32>, vector<4xf32>) -> vector<4xf32>
gpu.module @vector_kernels {
  gpu.func @vectors(%v: vector<4xf32>, %out: memref<vector<4xf32>>) kernel {
    %e = math.exp %v : vector<4xf32>
    memref.store %e, %out[] : memref<vector<4xf32>>
    gpu.return
  }
}
