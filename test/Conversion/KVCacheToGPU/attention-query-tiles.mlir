// RUN: kvcache-opt %s -convert-kvcache-to-gpu=chip=sm_90 -canonicalize | FileCheck %s
// RUN: kvcache-opt %s -convert-kvcache-to-gpu=chip=sm_75 -canonicalize | FileCheck %s --check-prefix=SM75

// With tensor cores the host picks, from max_seq_length alone, the decode
// kernel (fewer than 2 rows, or rows x group under one 16-row mma tile) or
// the query-tile kernel (8 warps, K and V in 2 stages of 32 keys of 128 + 8
// f16 elements); the merge kernel follows either when the context was
// split. sm_75 has no tensor cores: the decode kernel only.

!cache = !kvcache.paged_cache<f16, num_heads = 2, head_size = 128, page_size = 16>

// CHECK-LABEL: func.func @gqa4(
// CHECK: %[[ROWS:.*]] = kvcache.max_seq_length %arg1
// CHECK: %[[FEW:.*]] = arith.cmpi ult, %[[ROWS]], %c2 : index
// CHECK: %[[PAIRS:.*]] = arith.muli %[[ROWS]], %c4 : index
// CHECK: %[[SHORT:.*]] = arith.cmpi ult, %[[PAIRS]], %c16 : index
// CHECK: %[[DECODE:.*]] = arith.ori %[[FEW]], %[[SHORT]] : i1
// CHECK: %[[SPLITS:.*]] = scf.if %[[DECODE]] -> (index) {
// CHECK: gpu.launch_func @kvcache_kernels::@gqa4_attention_ragged blocks in
// CHECK: } else {
// CHECK: %[[SLOTS:.*]] = arith.ceildivui %[[ROWS]], %c32 : index
// CHECK: gpu.launch_func @kvcache_kernels::@gqa4_attention_tiles blocks in ({{.*}}) threads in (%c256, %c1, %c1) args
// CHECK: }
// CHECK: arith.cmpi ugt, %[[SPLITS]], %c1
// CHECK: gpu.launch_func @kvcache_kernels::@gqa4_attention_merge

// CHECK-LABEL: gpu.func @gqa4_attention_tiles(
// CHECK-SAME: workgroup(%{{.*}} : memref<2x32x136xf16, #gpu.address_space<workgroup>>, %{{.*}} : memref<2x32x136xf16, #gpu.address_space<workgroup>>)
// CHECK-SAME: known_block_size = array<i32: 256, 1, 1>
// CHECK: kvcache.max_seq_length

// SM75-LABEL: func.func @gqa4(
// SM75-NOT: attention_tiles
func.func @gqa4(%q: memref<?x8x128xf16>, %k: !cache, %v: !cache, %offsets: memref<?xi32>,
                %out: memref<?x8x128xf16>, %ws: memref<?xf32>) {
  kvcache.attention_ragged %q, %k, %v, %offsets, %out, %ws {scale = 0.0883883 : f32}
      : memref<?x8x128xf16>, !cache, !cache, memref<?xi32>, memref<?x8x128xf16>, memref<?xf32>
  return
}
