// RUN: kvcache-opt %s -convert-kvcache-to-gpu | FileCheck %s --check-prefix=NEUTRAL
// RUN: kvcache-opt %s -convert-kvcache-to-gpu -kvcache-fp8-to-nvvm | FileCheck %s
// RUN: kvcache-opt %s -convert-kvcache-to-gpu -kvcache-fp8-to-nvvm='chip=sm_89' | FileCheck %s
// RUN: kvcache-opt %s -convert-kvcache-to-gpu='chip=sm_80' -kvcache-fp8-to-nvvm='chip=sm_80' | FileCheck %s --check-prefix=SM80

// A quantizing store_ragged into an fp8 cache: convert-kvcache-to-gpu
// divides each chunk by its scale (a true division) and encodes the
// quotients target-neutrally, clamped to +-57344 (NaN kept) and truncated.
// NEUTRAL-LABEL: gpu.func @store_store_ragged(
// NEUTRAL: %[[Q:.*]] = arith.divf %{{.*}}, %{{.*}} : vector<8xf32>
// NEUTRAL: %[[MAX:.*]] = arith.constant dense<5.734400e+04> : vector<8xf32>
// NEUTRAL: %[[LOW:.*]] = arith.minimumf %[[Q]], %[[MAX]] : vector<8xf32>
// NEUTRAL: %[[MIN:.*]] = arith.constant dense<-5.734400e+04> : vector<8xf32>
// NEUTRAL: %[[CLAMPED:.*]] = arith.maximumf %[[LOW]], %[[MIN]] : vector<8xf32>
// NEUTRAL: %[[CODES:.*]] = arith.truncf %[[CLAMPED]] : vector<8xf32> to vector<8xf8E5M2>
// NEUTRAL: kvcache.page_store %[[CODES]]
// NEUTRAL-NOT: nvvm.convert

// kvcache-fp8-to-nvvm on sm_89 and newer (sm_90 by default) converts the
// quotients two at a time with nvvm.convert.f32x2.to.f8x2 (rn, satfinite:
// cvt.rn.satfinite.e5m2x2.f32), element 2i + 1 as the first operand (the
// upper byte), then gives NaNs the contract's code with their sign (0x7E for
// E5M2). Older chips use the integer encoder.

// CHECK-LABEL: gpu.func @store_store_ragged(
// CHECK: %[[SCALE:.*]] = kvcache.page_load_scale
// CHECK: %[[DIVISOR:.*]] = vector.broadcast %[[SCALE]] : f32 to vector<8xf32>
// CHECK: %[[Q:.*]] = arith.divf %{{.*}}, %[[DIVISOR]] : vector<8xf32>
// CHECK: %[[Q0:.*]] = vector.extract %[[Q]][0]
// CHECK: %[[Q1:.*]] = vector.extract %[[Q]][1]
// CHECK: %[[P0:.*]] = nvvm.convert.f32x2.to.f8x2 %[[Q1]], %[[Q0]] {rnd = #nvvm.fp_rnd_mode<rn>, sat = #nvvm.sat_mode<satfinite>} : vector<2xi8>(f8E5M2)
// CHECK-COUNT-3: nvvm.convert.f32x2.to.f8x2
// CHECK: %[[B0:.*]] = vector.extract %[[P0]][0] : i8
// CHECK: %[[CODES:.*]] = vector.from_elements %[[B0]], {{.*}} : vector<8xi8>
// CHECK: %[[NAN:.*]] = arith.cmpf uno, %[[Q]], %[[Q]] : vector<8xf32>
// CHECK: %[[BITS:.*]] = arith.bitcast %[[Q]] : vector<8xf32> to vector<8xi32>
// CHECK: arith.shrui %[[BITS]]
// CHECK: %[[SIGNED:.*]] = arith.ori %{{.*}}, %{{.*}} : vector<8xi32>
// CHECK: %[[NANCODE:.*]] = arith.trunci %[[SIGNED]] : vector<8xi32> to vector<8xi8>
// CHECK: %[[FIXED:.*]] = arith.select %[[NAN]], %[[NANCODE]], %[[CODES]] : vector<8xi1>, vector<8xi8>
// CHECK: %[[OUT:.*]] = arith.bitcast %[[FIXED]] : vector<8xi8> to vector<8xf8E5M2>
// CHECK: kvcache.page_store %[[OUT]]

// SM80-LABEL: gpu.func @store_store_ragged(
// SM80-NOT: nvvm.convert
// SM80: arith.divf
// SM80: arith.minui
// SM80: kvcache.page_store
// SM80-NOT: nvvm.convert

!k = !kvcache.paged_cache<f8E5M2, num_heads = 2, head_size = 64, page_size = 16, scales = tensor>
func.func @store(%k: !k, %rows: memref<?x2x64xf16>, %offsets: memref<?xi32>) {
  kvcache.store_ragged %k, %rows, %offsets : !k, memref<?x2x64xf16>, memref<?xi32>
  return
}
