// RUN: kvcache-opt %s -convert-kvcache-to-gpu | FileCheck %s
// RUN: kvcache-opt %s -convert-kvcache-to-gpu='chip=sm_89' | FileCheck %s
// RUN: kvcache-opt %s -convert-kvcache-to-gpu='chip=sm_80' | FileCheck %s --check-prefix=SM80

// A quantizing store_ragged into an fp8 cache on sm_89 and newer (sm_90 by
// default): each chunk's quotients (value / scale, a true division) are
// converted two at a time by nvvm.convert.f32x2.to.f8x2 (rn, satfinite:
// cvt.rn.satfinite.e5m2x2.f32), element 2i + 1 as the first operand (the
// upper byte), then NaNs get the contract's code with their sign (0x7E for
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
