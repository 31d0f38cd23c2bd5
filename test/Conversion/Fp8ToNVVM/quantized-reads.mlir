// RUN: kvcache-opt %s -convert-kvcache-to-memref -kvcache-fp8-to-nvvm=chip=sm_89 -canonicalize | FileCheck %s
// RUN: kvcache-opt %s -convert-kvcache-to-memref -kvcache-fp8-to-nvvm=chip=sm_80 -canonicalize | FileCheck %s --check-prefix=SOFTWARE

// The dequantizing reads of convert-kvcache-to-memref, lowered for a chip
// with fp8 conversion instructions (the GPU pipelines run
// kvcache-fp8-to-nvvm{chip} right after it): inside GPU code fp8 codes are
// decoded two at a time by nvvm.convert.f8x2.to.f16x2 (exact: f16 holds
// every fp8 value), extended to f32 and multiplied by the scale; host code,
// i8 codes and older chips keep the integer decoder.

!k = !kvcache.paged_cache<f8E4M3FN, num_heads = 2, head_size = 32, page_size = 4, scales = token_head>
!e = !kvcache.paged_cache<f8E5M2, num_heads = 2, head_size = 32, page_size = 4, scales = tensor>
!i = !kvcache.paged_cache<i8, num_heads = 2, head_size = 32, page_size = 4, scales = tensor>

// CHECK-LABEL: gpu.func @vector_read(
// CHECK: %[[CODES:.*]] = vector.load {{.*}} vector<8xf8E4M3FN>
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
// CHECK: %[[SCALE:.*]] = memref.load
// CHECK: %[[SCALES:.*]] = vector.broadcast %[[SCALE]] : f32 to vector<8xf32>
// CHECK: arith.mulf %[[VALUES]], %[[SCALES]] : vector<8xf32>
// CHECK-NOT: arith.shli
// CHECK: gpu.return
// SOFTWARE-LABEL: gpu.func @vector_read(
// SOFTWARE-NOT: nvvm.convert
// SOFTWARE: arith.shli
// SOFTWARE: gpu.return

// A scalar read converts a pair holding the code twice and keeps half 0.
// CHECK-LABEL: gpu.func @scalar_read(
// CHECK: %[[CODE:.*]] = memref.load {{.*}}xf8E5M2
// CHECK: %[[BYTE:.*]] = arith.bitcast %[[CODE]] : f8E5M2 to i8
// CHECK: %[[PAIR:.*]] = vector.broadcast %[[BYTE]] : i8 to vector<2xi8>
// CHECK: %[[HALVES:.*]] = nvvm.convert.f8x2.to.f16x2 %[[PAIR]] : vector<2xi8>(f8E5M2) -> vector<2xf16>
// CHECK: %[[HALF:.*]] = vector.extract %[[HALVES]][0]
// CHECK: arith.extf %[[HALF]] : f16 to f32
// i8 codes are converted exactly by sitofp, on any chip.
// CHECK: vector.load {{.*}} vector<4xi8>
// CHECK-NOT: nvvm.convert
// CHECK: arith.sitofp {{.*}} : vector<4xi8> to vector<4xf32>
// CHECK: gpu.return
module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @vector_read(%k: !k, %page: index, %slot: index, %h: index, %d: index, %out: memref<8xf32>) kernel {
      %x = kvcache.page_load %k[%page, %slot, %h, %d] : !k -> vector<8xf32>
      %c0 = arith.constant 0 : index
      vector.store %x, %out[%c0] : memref<8xf32>, vector<8xf32>
      gpu.return
    }
    gpu.func @scalar_read(%e: !e, %i: !i, %page: index, %slot: index, %h: index, %d: index, %out: memref<8xf32>) kernel {
      %x = kvcache.page_load %e[%page, %slot, %h, %d] : !e -> f32
      %c0 = arith.constant 0 : index
      memref.store %x, %out[%c0] : memref<8xf32>
      %y = kvcache.page_load %i[%page, %slot, %h, %d] : !i -> vector<4xf32>
      vector.store %y, %out[%c0] : memref<8xf32>, vector<4xf32>
      gpu.return
    }
  }

  // Host code: the integer decoder whatever the chip.
  // CHECK-LABEL: func.func @host(
  // CHECK-NOT: nvvm.convert
  // CHECK: arith.shli
  // CHECK: return
  func.func @host(%k: !k, %page: index, %slot: index, %h: index, %d: index) -> vector<8xf32> {
    %x = kvcache.page_load %k[%page, %slot, %h, %d] : !k -> vector<8xf32>
    return %x : vector<8xf32>
  }
}
