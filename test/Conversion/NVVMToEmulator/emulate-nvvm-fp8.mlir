// RUN: kvcache-opt %s -kvcache-emulate-nvvm | FileCheck %s

// The fp8 conversion instructions become calls of the runtime's conversions,
// whose 16-bit code pairs travel in the low half of an i32 (the ABI widens
// every integer narrower than 32 bits: no zeroext/signext attributes).

// CHECK-LABEL: llvm.func @__kvemu_kernels_encode(
// CHECK-SAME: %[[HIGH:.*]]: f32, %[[LOW:.*]]: f32, %[[OUT:.*]]: !llvm.ptr)
// CHECK: %[[E5M2:.*]] = llvm.mlir.constant(1 : i32) : i32
// CHECK: %[[PACKED:.*]] = llvm.call @__kvemu_cvt_f32x2_to_f8x2(%[[E5M2]], %[[HIGH]], %[[LOW]]) : (i32, f32, f32) -> i32
// CHECK: %[[CODES:.*]] = llvm.trunc %[[PACKED]] : i32 to i16
// CHECK: llvm.store %[[CODES]], %[[OUT]] : i16, !llvm.ptr

// CHECK-LABEL: llvm.func @__kvemu_kernels_decode(
// CHECK-SAME: %[[PAIR:.*]]: vector<2xi8>, %[[HALVES_OUT:.*]]: !llvm.ptr)
// CHECK: %[[E4M3:.*]] = llvm.mlir.constant(0 : i32) : i32
// CHECK: %[[BITS:.*]] = llvm.bitcast %[[PAIR]] : vector<2xi8> to i16
// CHECK: %[[WIDE:.*]] = llvm.zext %[[BITS]] : i16 to i32
// CHECK: %[[HALVES:.*]] = llvm.call @__kvemu_cvt_f8x2_to_f16x2(%[[E4M3]], %[[WIDE]]) : (i32, i32) -> i32
// CHECK: %[[VECTOR:.*]] = llvm.bitcast %[[HALVES]] : i32 to vector<2xf16>
// CHECK: llvm.store %[[VECTOR]], %[[HALVES_OUT]] : vector<2xf16>, !llvm.ptr

module attributes {gpu.container_module} {
  gpu.module @kernels {
    llvm.func @encode(%high: f32, %low: f32, %out: !llvm.ptr) attributes {gpu.kernel, nvvm.kernel} {
      %codes = nvvm.convert.f32x2.to.f8x2 %high, %low {rnd = #nvvm.fp_rnd_mode<rn>, sat = #nvvm.sat_mode<satfinite>} : i16 (f8E5M2)
      llvm.store %codes, %out : i16, !llvm.ptr
      llvm.return
    }
    llvm.func @decode(%pair: vector<2xi8>, %out: !llvm.ptr) attributes {gpu.kernel, nvvm.kernel} {
      %halves = nvvm.convert.f8x2.to.f16x2 %pair : vector<2xi8> (f8E4M3FN) -> vector<2xf16>
      llvm.store %halves, %out : vector<2xf16>, !llvm.ptr
      llvm.return
    }
  }
}
