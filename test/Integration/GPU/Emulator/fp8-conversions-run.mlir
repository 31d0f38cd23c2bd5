// The fp8 conversion instructions of sm_89+ on the emulated GPU, worked
// out by hand from their definitions (round to nearest, ties to the even
// code, saturate to +-max_finite): nvvm.convert.f32x2.to.f8x2
// (cvt.rn.satfinite.{e4m3,e5m2}x2.f32: the first operand's code in the
// upper byte) and nvvm.convert.f8x2.to.f16x2 (cvt.rn.f16x2.{e4m3,e5m2}x2:
// byte i to half i). A NaN becomes 0x7F, its sign dropped, for both types:
// the emulator's model (PTX promises only a NaN); kernels set NaN codes
// themselves. kvcache-compile turns the same kernel into those
// instructions, which ptxas accepts for sm_90.

// RUN: kvcache-opt %s -kvcache-to-emulated-gpu -o %t.mlir
// RUN: %emu_run %t.mlir -e main | FileCheck %s
// RUN: kvcache-compile %s -o %t.ptx
// RUN: FileCheck %s --check-prefix=PTX --input-file=%t.ptx
// RUN: %if ptxas %{ %ptxas -arch=sm_90 %t.ptx -o %t.cubin %}

// e4m3 (1, -2): 0x38C0; (448, 464: the tie above 448 saturates): 0x7E7E;
// (+inf, -inf): 0x7EFE; (NaN, -NaN): 0x7F7F; (-0, 2^-10: the tie between
// 0 and 2^-9 goes to 0): 0x8000; (1.5 * 2^-9: the tie between codes 1 and
// 2 goes to 2, 0.75 * 2^-9 to code 1): 0x0201.
// e5m2 (1, 57344): 0x3C7B; (60000, -inf): 0x7BFB; (NaN, 2^-17: the tie
// goes to 0): 0x7F00; (-0.75 * 2^-16, 1.25 * 2^-16): 0x8101.
// Decoding: e4m3 0x7F01 -> (NaN 0x7FFF, 2^-9 0x1800); e4m3 0xFE80 ->
// (-448 0xDF00, -0 0x8000); e5m2 0x0180 -> (2^-16, an f16 subnormal,
// 0x0100; -0 0x8000); e5m2 0xFC7D -> (-inf 0xFC00, NaN 0x7FFF).
// CHECK: [14528,  32382,  32510,  32639,  32768,  513,  15483,  31739,  32512,  33025,  2147424256,  -553615360,  16809984,  -67076097]

// PTX-LABEL: .entry main_kernel(
// PTX-COUNT-6: cvt.rn.satfinite.e4m3x2.f32
// PTX-COUNT-4: cvt.rn.satfinite.e5m2x2.f32
// PTX-COUNT-2: cvt.rn.f16x2.e4m3x2
// PTX-COUNT-2: cvt.rn.f16x2.e5m2x2

module attributes {gpu.container_module} {
  func.func @main() {
    %c1 = arith.constant 1 : index
    %out = gpu.alloc host_shared () : memref<14xi32>
    gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
               threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
      %one = arith.constant 1.0 : f32
      %minus_two = arith.constant -2.0 : f32
      %f448 = arith.constant 448.0 : f32
      %f464 = arith.constant 464.0 : f32
      %inf = arith.constant 0x7F800000 : f32
      %minus_inf = arith.constant 0xFF800000 : f32
      %nan = arith.constant 0x7FC00000 : f32
      %minus_nan = arith.constant 0xFFC00000 : f32
      %minus_zero = arith.constant -0.0 : f32
      %e4m3_tie_zero = arith.constant 0x3A800000 : f32    // 2^-10
      %e4m3_tie_two = arith.constant 0x3B400000 : f32     // 1.5 * 2^-9
      %e4m3_one_step = arith.constant 0x3AC00000 : f32    // 0.75 * 2^-9
      %f57344 = arith.constant 57344.0 : f32
      %f60000 = arith.constant 60000.0 : f32
      %e5m2_tie_zero = arith.constant 0x37000000 : f32    // 2^-17
      %e5m2_minus = arith.constant 0xB7400000 : f32       // -0.75 * 2^-16
      %e5m2_one_step = arith.constant 0x37A00000 : f32    // 1.25 * 2^-16

      %r0 = nvvm.convert.f32x2.to.f8x2 %one, %minus_two {rnd = #nvvm.fp_rnd_mode<rn>, sat = #nvvm.sat_mode<satfinite>} : i16 (f8E4M3FN)
      %r1 = nvvm.convert.f32x2.to.f8x2 %f448, %f464 {rnd = #nvvm.fp_rnd_mode<rn>, sat = #nvvm.sat_mode<satfinite>} : i16 (f8E4M3FN)
      %r2 = nvvm.convert.f32x2.to.f8x2 %inf, %minus_inf {rnd = #nvvm.fp_rnd_mode<rn>, sat = #nvvm.sat_mode<satfinite>} : i16 (f8E4M3FN)
      %r3 = nvvm.convert.f32x2.to.f8x2 %nan, %minus_nan {rnd = #nvvm.fp_rnd_mode<rn>, sat = #nvvm.sat_mode<satfinite>} : i16 (f8E4M3FN)
      %r4 = nvvm.convert.f32x2.to.f8x2 %minus_zero, %e4m3_tie_zero {rnd = #nvvm.fp_rnd_mode<rn>, sat = #nvvm.sat_mode<satfinite>} : i16 (f8E4M3FN)
      %r5 = nvvm.convert.f32x2.to.f8x2 %e4m3_tie_two, %e4m3_one_step {rnd = #nvvm.fp_rnd_mode<rn>, sat = #nvvm.sat_mode<satfinite>} : i16 (f8E4M3FN)
      %r6 = nvvm.convert.f32x2.to.f8x2 %one, %f57344 {rnd = #nvvm.fp_rnd_mode<rn>, sat = #nvvm.sat_mode<satfinite>} : i16 (f8E5M2)
      %r7 = nvvm.convert.f32x2.to.f8x2 %f60000, %minus_inf {rnd = #nvvm.fp_rnd_mode<rn>, sat = #nvvm.sat_mode<satfinite>} : i16 (f8E5M2)
      %r8 = nvvm.convert.f32x2.to.f8x2 %nan, %e5m2_tie_zero {rnd = #nvvm.fp_rnd_mode<rn>, sat = #nvvm.sat_mode<satfinite>} : i16 (f8E5M2)
      %r9 = nvvm.convert.f32x2.to.f8x2 %e5m2_minus, %e5m2_one_step {rnd = #nvvm.fp_rnd_mode<rn>, sat = #nvvm.sat_mode<satfinite>} : i16 (f8E5M2)
      %c0 = arith.constant 0 : index
      %c2 = arith.constant 2 : index
      %c3 = arith.constant 3 : index
      %c4 = arith.constant 4 : index
      %c5 = arith.constant 5 : index
      %c6 = arith.constant 6 : index
      %c7 = arith.constant 7 : index
      %c8 = arith.constant 8 : index
      %c9 = arith.constant 9 : index
      %c10 = arith.constant 10 : index
      %c11 = arith.constant 11 : index
      %c12 = arith.constant 12 : index
      %c13 = arith.constant 13 : index
      %w0 = arith.extui %r0 : i16 to i32
      memref.store %w0, %out[%c0] : memref<14xi32>
      %w1 = arith.extui %r1 : i16 to i32
      memref.store %w1, %out[%c1] : memref<14xi32>
      %w2 = arith.extui %r2 : i16 to i32
      memref.store %w2, %out[%c2] : memref<14xi32>
      %w3 = arith.extui %r3 : i16 to i32
      memref.store %w3, %out[%c3] : memref<14xi32>
      %w4 = arith.extui %r4 : i16 to i32
      memref.store %w4, %out[%c4] : memref<14xi32>
      %w5 = arith.extui %r5 : i16 to i32
      memref.store %w5, %out[%c5] : memref<14xi32>
      %w6 = arith.extui %r6 : i16 to i32
      memref.store %w6, %out[%c6] : memref<14xi32>
      %w7 = arith.extui %r7 : i16 to i32
      memref.store %w7, %out[%c7] : memref<14xi32>
      %w8 = arith.extui %r8 : i16 to i32
      memref.store %w8, %out[%c8] : memref<14xi32>
      %w9 = arith.extui %r9 : i16 to i32
      memref.store %w9, %out[%c9] : memref<14xi32>

      %d0 = arith.constant dense<[1, 127]> : vector<2xi8>      // 0x7F01
      %d1 = arith.constant dense<[-128, -2]> : vector<2xi8>    // 0xFE80
      %d2 = arith.constant dense<[-128, 1]> : vector<2xi8>     // 0x0180
      %d3 = arith.constant dense<[125, -4]> : vector<2xi8>     // 0xFC7D
      %h0 = nvvm.convert.f8x2.to.f16x2 %d0 : vector<2xi8> (f8E4M3FN) -> vector<2xf16>
      %h1 = nvvm.convert.f8x2.to.f16x2 %d1 : vector<2xi8> (f8E4M3FN) -> vector<2xf16>
      %h2 = nvvm.convert.f8x2.to.f16x2 %d2 : vector<2xi8> (f8E5M2) -> vector<2xf16>
      %h3 = nvvm.convert.f8x2.to.f16x2 %d3 : vector<2xi8> (f8E5M2) -> vector<2xf16>
      %b0 = vector.bitcast %h0 : vector<2xf16> to vector<1xi32>
      %v0 = vector.extract %b0[0] : i32 from vector<1xi32>
      memref.store %v0, %out[%c10] : memref<14xi32>
      %b1 = vector.bitcast %h1 : vector<2xf16> to vector<1xi32>
      %v1 = vector.extract %b1[0] : i32 from vector<1xi32>
      memref.store %v1, %out[%c11] : memref<14xi32>
      %b2 = vector.bitcast %h2 : vector<2xf16> to vector<1xi32>
      %v2 = vector.extract %b2[0] : i32 from vector<1xi32>
      memref.store %v2, %out[%c12] : memref<14xi32>
      %b3 = vector.bitcast %h3 : vector<2xf16> to vector<1xi32>
      %v3 = vector.extract %b3[0] : i32 from vector<1xi32>
      memref.store %v3, %out[%c13] : memref<14xi32>
      gpu.terminator
    }
    %unranked = memref.cast %out : memref<14xi32> to memref<*xi32>
    call @printMemrefI32(%unranked) : (memref<*xi32>) -> ()
    return
  }
  func.func private @printMemrefI32(memref<*xi32>)
}
