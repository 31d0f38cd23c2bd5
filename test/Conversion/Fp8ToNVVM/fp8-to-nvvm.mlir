// RUN: kvcache-opt %s -kvcache-fp8-to-nvvm=chip=sm_89 | FileCheck %s
// RUN: kvcache-opt %s -kvcache-fp8-to-nvvm | FileCheck %s
// RUN: kvcache-opt %s -kvcache-fp8-to-nvvm=chip=sm_80 | FileCheck %s --check-prefix=SM80
// RUN: not kvcache-opt %s -kvcache-fp8-to-nvvm=chip=sm_9x 2>&1 | FileCheck %s --check-prefix=BADCHIP

// kvcache-fp8-to-nvvm (sm_90 by default): inside GPU code on sm_89 and
// newer the target-neutral fp8 conversions become NVVM's conversion
// instructions, two codes at a time; odd vectors, host code and older chips
// get the integer lowering of kvcache-fp8-to-integer.

// BADCHIP: error: kvcache-fp8-to-nvvm: unknown chip 'sm_9x'

// Decoding: the codes as bytes, pairs by shuffles, each converted to f16
// (exact), concatenated; the extension to f32 stays.
// CHECK-LABEL: gpu.func @decode(
// CHECK-SAME: %[[CODES:[^:]*]]: vector<8xf8E4M3FN>, %[[CODE:[^:]*]]: f8E5M2, %[[ODD:[^:]*]]: vector<3xf8E4M3FN>
// CHECK: %[[BYTES:.*]] = arith.bitcast %[[CODES]] : vector<8xf8E4M3FN> to vector<8xi8>
// CHECK: %[[P0:.*]] = vector.shuffle %[[BYTES]], %[[BYTES]] [0, 1]
// CHECK: %[[H0:.*]] = nvvm.convert.f8x2.to.f16x2 %[[P0]] : vector<2xi8>(f8E4M3FN) -> vector<2xf16>
// CHECK: vector.shuffle %[[BYTES]], %[[BYTES]] [2, 3]
// CHECK: vector.shuffle %[[BYTES]], %[[BYTES]] [4, 5]
// CHECK: %[[P3:.*]] = vector.shuffle %[[BYTES]], %[[BYTES]] [6, 7]
// CHECK: %[[H3:.*]] = nvvm.convert.f8x2.to.f16x2 %[[P3]]
// CHECK: %[[E0:.*]] = vector.extract %[[H0]][0]
// CHECK: %[[E7:.*]] = vector.extract %[[H3]][1]
// CHECK: %[[HALVES:.*]] = vector.from_elements %[[E0]], {{.*}}, %[[E7]] : vector<8xf16>
// CHECK: %[[VALUES:.*]] = arith.extf %[[HALVES]] : vector<8xf16> to vector<8xf32>
// CHECK: vector.store %[[VALUES]]
// A scalar converts a pair holding the code twice and keeps half 0; to f32
// through f16.
// CHECK: %[[BYTE:.*]] = arith.bitcast %[[CODE]] : f8E5M2 to i8
// CHECK: %[[PAIR:.*]] = vector.broadcast %[[BYTE]] : i8 to vector<2xi8>
// CHECK: %[[SH:.*]] = nvvm.convert.f8x2.to.f16x2 %[[PAIR]] : vector<2xi8>(f8E5M2) -> vector<2xf16>
// CHECK: %[[HALF:.*]] = vector.extract %[[SH]][0]
// CHECK: %[[VALUE:.*]] = arith.extf %[[HALF]] : f16 to f32
// CHECK: memref.store %[[VALUE]]
// An odd vector does not fit the pairs: integers.
// CHECK-NOT: nvvm.convert
// CHECK: arith.bitcast %[[ODD]] : vector<3xf8E4M3FN> to vector<3xi8>
// CHECK: arith.xori
// CHECK: gpu.return
// SM80-LABEL: gpu.func @decode(
// SM80-NOT: nvvm.convert
// SM80: arith.extsi
// SM80: arith.extui
// SM80: arith.extsi
// SM80: gpu.return

// Encoding: the clamp goes (cvt.rn.satfinite saturates), pairs with element
// 2i + 1 first (the upper byte), then NaNs get the contract's code with
// their sign (0x7E for E5M2).
// CHECK-LABEL: gpu.func @encode(
// CHECK-SAME: %[[X:[^:]*]]: vector<4xf32>
// CHECK-NOT: arith.minimumf
// CHECK-NOT: arith.maximumf
// CHECK: %[[X0:.*]] = vector.extract %[[X]][0]
// CHECK: %[[X1:.*]] = vector.extract %[[X]][1]
// CHECK: %[[C0:.*]] = nvvm.convert.f32x2.to.f8x2 %[[X1]], %[[X0]] {rnd = #nvvm.fp_rnd_mode<rn>, sat = #nvvm.sat_mode<satfinite>} : vector<2xi8>(f8E5M2)
// CHECK: nvvm.convert.f32x2.to.f8x2
// CHECK: %[[B0:.*]] = vector.extract %[[C0]][0] : i8
// CHECK: %[[CODES:.*]] = vector.from_elements %[[B0]], {{.*}} : vector<4xi8>
// CHECK: %[[NAN:.*]] = arith.cmpf uno, %[[X]], %[[X]] : vector<4xf32>
// CHECK: %[[BITS:.*]] = arith.bitcast %[[X]] : vector<4xf32> to vector<4xi32>
// CHECK: %[[TOP:.*]] = arith.shrui %[[BITS]]
// CHECK: %[[SIGN:.*]] = arith.andi %[[TOP]]
// CHECK: %[[C126:.*]] = arith.constant dense<126> : vector<4xi32>
// CHECK: %[[SIGNED:.*]] = arith.ori %[[SIGN]], %[[C126]] : vector<4xi32>
// CHECK: %[[NANCODE:.*]] = arith.trunci %[[SIGNED]] : vector<4xi32> to vector<4xi8>
// CHECK: %[[FIXED:.*]] = arith.select %[[NAN]], %[[NANCODE]], %[[CODES]] : vector<4xi1>, vector<4xi8>
// CHECK: %[[OUT:.*]] = arith.bitcast %[[FIXED]] : vector<4xi8> to vector<4xf8E5M2>
// CHECK: vector.store %[[OUT]]
// SM80-LABEL: gpu.func @encode(
// SM80-NOT: nvvm.convert
// SM80: arith.minui
// SM80: arith.trunci
// SM80: gpu.return

// A gpu.launch body is GPU code too.
// CHECK-LABEL: func.func @launch(
// CHECK: gpu.launch
// CHECK: nvvm.convert.f8x2.to.f16x2
// CHECK: gpu.terminator

// Host code: integers, whatever the chip.
// CHECK-LABEL: func.func @host(
// CHECK-NOT: nvvm.convert
// CHECK: arith.extsi
// CHECK: return
module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @decode(%c: vector<8xf8E4M3FN>, %d: f8E5M2, %o: vector<3xf8E4M3FN>, %out: memref<8xf32>, %out2: memref<3xf32>, %out3: memref<f32>) kernel {
      %h = arith.extf %c : vector<8xf8E4M3FN> to vector<8xf16>
      %f = arith.extf %h : vector<8xf16> to vector<8xf32>
      %c0 = arith.constant 0 : index
      vector.store %f, %out[%c0] : memref<8xf32>, vector<8xf32>
      %s = arith.extf %d : f8E5M2 to f32
      memref.store %s, %out3[] : memref<f32>
      %oh = arith.extf %o : vector<3xf8E4M3FN> to vector<3xf16>
      %of = arith.extf %oh : vector<3xf16> to vector<3xf32>
      vector.store %of, %out2[%c0] : memref<3xf32>, vector<3xf32>
      gpu.return
    }
    gpu.func @encode(%x: vector<4xf32>, %out: memref<4xf8E5M2>) kernel {
      %hi = arith.constant dense<57344.0> : vector<4xf32>
      %lo = arith.constant dense<-57344.0> : vector<4xf32>
      %a = arith.minimumf %x, %hi : vector<4xf32>
      %b = arith.maximumf %a, %lo : vector<4xf32>
      %codes = arith.truncf %b : vector<4xf32> to vector<4xf8E5M2>
      %c0 = arith.constant 0 : index
      vector.store %codes, %out[%c0] : memref<4xf8E5M2>, vector<4xf8E5M2>
      gpu.return
    }
  }
  func.func @launch(%c: vector<2xf8E4M3FN>, %out: memref<2xf16>) {
    %one = arith.constant 1 : index
    gpu.launch blocks(%bx, %by, %bz) in (%x = %one, %y = %one, %z = %one) threads(%tx, %ty, %tz) in (%u = %one, %v = %one, %w = %one) {
      %h = arith.extf %c : vector<2xf8E4M3FN> to vector<2xf16>
      %c0 = arith.constant 0 : index
      vector.store %h, %out[%c0] : memref<2xf16>, vector<2xf16>
      gpu.terminator
    }
    return
  }
  func.func @host(%c: vector<8xf8E4M3FN>) -> vector<8xf32> {
    %h = arith.extf %c : vector<8xf8E4M3FN> to vector<8xf16>
    %f = arith.extf %h : vector<8xf16> to vector<8xf32>
    return %f : vector<8xf32>
  }
}
