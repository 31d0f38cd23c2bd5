// RUN: kvcache-opt %s -split-input-file -kvcache-fp8-to-integer | FileCheck %s

// The integer lowering of the target-neutral fp8 conversions that the
// kvcache lowerings emit (lib/Conversion/KernelCommon/Fp8ToInteger.h).

// A decoding to f16 whose users all extend to f32 becomes one decoding to
// f32 per user: an E4M3FN code sign-extended and shifted into an f16 is its
// value / 2^8 (bit 14, a copy of the sign, cleared by xor-ing in bit 14 of
// shifted + 0x80, which sets it for the NaN code), extended to f32, times
// 2^8 in f32.
// CHECK-LABEL: func.func @decode_e4m3_through_f16(
// CHECK-SAME: %[[CODES:.*]]: vector<8xf8E4M3FN>)
// CHECK: %[[BYTES:.*]] = arith.bitcast %[[CODES]] : vector<8xf8E4M3FN> to vector<8xi8>
// CHECK: %[[WIDE:.*]] = arith.extsi %[[BYTES]] : vector<8xi8> to vector<8xi16>
// CHECK: %[[C7:.*]] = arith.constant dense<7> : vector<8xi16>
// CHECK: %[[SHIFTED:.*]] = arith.shli %[[WIDE]], %[[C7]] : vector<8xi16>
// CHECK: %[[C128:.*]] = arith.constant dense<128> : vector<8xi16>
// CHECK: %[[CARRIED:.*]] = arith.addi %[[SHIFTED]], %[[C128]] : vector<8xi16>
// CHECK: %[[BIT14:.*]] = arith.constant dense<16384> : vector<8xi16>
// CHECK: %[[PICKED:.*]] = arith.andi %[[CARRIED]], %[[BIT14]] : vector<8xi16>
// CHECK: %[[FIXED:.*]] = arith.xori %[[SHIFTED]], %[[PICKED]] : vector<8xi16>
// CHECK: %[[HALF:.*]] = arith.bitcast %[[FIXED]] : vector<8xi16> to vector<8xf16>
// CHECK: %[[F:.*]] = arith.extf %[[HALF]] : vector<8xf16> to vector<8xf32>
// CHECK: %[[C256:.*]] = arith.constant dense<2.560000e+02> : vector<8xf32>
// CHECK: %[[V:.*]] = arith.mulf %[[F]], %[[C256]] : vector<8xf32>
// CHECK-NOT: f8E4M3FN> to vector<8xf16>
// CHECK: return %[[V]]
func.func @decode_e4m3_through_f16(%codes: vector<8xf8E4M3FN>) -> vector<8xf32> {
  %h = arith.extf %codes : vector<8xf8E4M3FN> to vector<8xf16>
  %f = arith.extf %h : vector<8xf16> to vector<8xf32>
  return %f : vector<8xf32>
}

// -----

// An E5M2 code is the high byte of an f16, to f32 directly too; each user of
// an f16 decoding gets its own f32 decoding.
// CHECK-LABEL: func.func @decode_e5m2(
// CHECK-SAME: %[[CODE:.*]]: f8E5M2)
// CHECK: %[[BYTE:.*]] = arith.bitcast %[[CODE]] : f8E5M2 to i8
// CHECK: %[[WORD:.*]] = arith.extui %[[BYTE]] : i8 to i16
// CHECK: %[[C8:.*]] = arith.constant 8 : i16
// CHECK: %[[BITS:.*]] = arith.shli %[[WORD]], %[[C8]] : i16
// CHECK: %[[HALF:.*]] = arith.bitcast %[[BITS]] : i16 to f16
// CHECK: %[[A:.*]] = arith.extf %[[HALF]] : f16 to f32
// CHECK: arith.bitcast %[[CODE]] : f8E5M2 to i8
// CHECK: %[[B:.*]] = arith.extf %{{.*}} : f16 to f32
// CHECK: arith.bitcast %[[CODE]] : f8E5M2 to i8
// CHECK: %[[C:.*]] = arith.extf %{{.*}} : f16 to f32
// CHECK-NOT: arith.mulf
// CHECK: return %[[A]], %[[B]], %[[C]]
func.func @decode_e5m2(%code: f8E5M2) -> (f32, f32, f32) {
  %a = arith.extf %code : f8E5M2 to f32
  %h = arith.extf %code : f8E5M2 to f16
  %b = arith.extf %h : f16 to f32
  %c = arith.extf %h : f16 to f32
  return %a, %b, %c : f32, f32, f32
}

// -----

// A decoding to f16 used as f16 (by any user that does not extend it):
// E4M3FN times 2^8 in f16 (exact: every E4M3FN value is an f16), E5M2 its
// bits.
// CHECK-LABEL: func.func @decode_to_f16(
// CHECK: arith.xori
// CHECK: %[[HALF:.*]] = arith.bitcast %{{.*}} : vector<4xi16> to vector<4xf16>
// CHECK: %[[C256:.*]] = arith.constant dense<2.560000e+02> : vector<4xf16>
// CHECK: %[[E4:.*]] = arith.mulf %[[HALF]], %[[C256]] : vector<4xf16>
// CHECK: arith.shli
// CHECK: %[[E5:.*]] = arith.bitcast %{{.*}} : i16 to f16
// CHECK: %[[F:.*]] = arith.extf %[[E5]] : f16 to f32
// CHECK: return %[[E4]], %[[E5]], %[[F]]
func.func @decode_to_f16(%c: vector<4xf8E4M3FN>, %d: f8E5M2) -> (vector<4xf16>, f16, f32) {
  %h = arith.extf %c : vector<4xf8E4M3FN> to vector<4xf16>
  %g = arith.extf %d : f8E5M2 to f16
  %f = arith.extf %g : f16 to f32
  return %h, %g, %f : vector<4xf16>, f16, f32
}

// -----

// The saturating encoding: the clamp (either order) and the truncation
// become the integer encoder of the unclamped values (it saturates itself:
// the magnitude's bits clamped to max_finite's, 0x43E00000 = 448), rounding
// with one f32 add, the sign and NaN code from the f32's top byte (E4M3FN:
// S.1111111 as it is).
// CHECK-LABEL: func.func @encode_e4m3(
// CHECK-SAME: %[[X:.*]]: vector<8xf32>)
// CHECK-NOT: arith.minimumf
// CHECK-NOT: arith.maximumf
// CHECK: %[[BITS:.*]] = arith.bitcast %[[X]] : vector<8xf32> to vector<8xi32>
// CHECK: %[[MAG:.*]] = arith.andi %[[BITS]], %{{.*}} : vector<8xi32>
// CHECK: %[[NAN:.*]] = arith.cmpi ugt, %[[MAG]], %{{.*}} : vector<8xi32>
// CHECK: %[[MAX:.*]] = arith.constant dense<1138753536> : vector<8xi32>
// CHECK: %[[SAT:.*]] = arith.minui %[[MAG]], %[[MAX]] : vector<8xi32>
// CHECK: %[[SUM:.*]] = arith.addf
// CHECK: %[[TOP:.*]] = arith.shrui %[[BITS]], %{{.*}} : vector<8xi32>
// CHECK: %[[WORDS:.*]] = arith.select %[[NAN]], %[[TOP]], %{{.*}} : vector<8xi1>, vector<8xi32>
// CHECK: %[[BYTES:.*]] = arith.trunci %[[WORDS]] : vector<8xi32> to vector<8xi8>
// CHECK: %[[CODES:.*]] = arith.bitcast %[[BYTES]] : vector<8xi8> to vector<8xf8E4M3FN>
// CHECK-NOT: arith.truncf
// CHECK: return %[[CODES]]
func.func @encode_e4m3(%x: vector<8xf32>) -> vector<8xf8E4M3FN> {
  %hi = arith.constant dense<448.0> : vector<8xf32>
  %lo = arith.constant dense<-448.0> : vector<8xf32>
  %a = arith.minimumf %x, %hi : vector<8xf32>
  %b = arith.maximumf %a, %lo : vector<8xf32>
  %c = arith.truncf %b : vector<8xf32> to vector<8xf8E4M3FN>
  return %c : vector<8xf8E4M3FN>
}

// -----

// E5M2 (57344 = 0x47600000); its NaN code S.1111110 is the top byte with
// the last bit flipped.
// CHECK-LABEL: func.func @encode_e5m2(
// CHECK-SAME: %[[Y:.*]]: f32)
// CHECK: %[[BITS:.*]] = arith.bitcast %[[Y]] : f32 to i32
// CHECK: %[[MAX:.*]] = arith.constant 1197473792 : i32
// CHECK: arith.minui %{{.*}}, %[[MAX]] : i32
// CHECK: %[[TOP:.*]] = arith.shrui %[[BITS]]
// CHECK: %[[ONE:.*]] = arith.constant 1 : i32
// CHECK: %[[NANCODE:.*]] = arith.xori %[[TOP]], %[[ONE]] : i32
// CHECK: %[[WORD:.*]] = arith.select %{{.*}}, %[[NANCODE]], %{{.*}} : i32
// CHECK: %[[BYTE:.*]] = arith.trunci %[[WORD]] : i32 to i8
// CHECK: %[[CODE:.*]] = arith.bitcast %[[BYTE]] : i8 to f8E5M2
// CHECK: return %[[CODE]]
func.func @encode_e5m2(%y: f32) -> f8E5M2 {
  %hi = arith.constant 57344.0 : f32
  %lo = arith.constant -57344.0 : f32
  %d = arith.maximumf %y, %lo : f32
  %e = arith.minimumf %d, %hi : f32
  %f = arith.truncf %e : f32 to f8E5M2
  return %f : f8E5M2
}

// -----

// Left alone: a bare truncation (it does not saturate: 500.0 would be NaN
// in E4M3FN), a clamp to the other type's bound, a clamp that drops NaN
// (minnumf/maxnumf), another rounding mode, and a decoding to bf16.
// CHECK-LABEL: func.func @not_lowered(
// CHECK: arith.truncf %{{.*}} : f32 to f8E4M3FN
// CHECK: arith.truncf %{{.*}} : f32 to f8E5M2
// CHECK: arith.truncf %{{.*}} : f32 to f8E4M3FN
// CHECK: arith.truncf %{{.*}} to_nearest_away : f32 to f8E4M3FN
// CHECK: arith.extf %{{.*}} : f8E4M3FN to bf16
// CHECK-NOT: arith.bitcast
func.func @not_lowered(%x: f32, %c: f8E4M3FN) -> (f8E4M3FN, f8E5M2, f8E4M3FN, f8E4M3FN, bf16) {
  %bare = arith.truncf %x : f32 to f8E4M3FN
  %hi = arith.constant 448.0 : f32
  %lo = arith.constant -448.0 : f32
  %a = arith.minimumf %x, %hi : f32
  %b = arith.maximumf %a, %lo : f32
  %other = arith.truncf %b : f32 to f8E5M2
  %n = arith.minnumf %x, %hi : f32
  %m = arith.maxnumf %n, %lo : f32
  %nonan = arith.truncf %m : f32 to f8E4M3FN
  %away = arith.truncf %b to_nearest_away : f32 to f8E4M3FN
  %wide = arith.extf %c : f8E4M3FN to bf16
  return %bare, %other, %nonan, %away, %wide : f8E4M3FN, f8E5M2, f8E4M3FN, f8E4M3FN, bf16
}
