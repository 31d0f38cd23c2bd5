// RUN: kvcache-opt %s -convert-kvcache-to-gpu=chip=sm_90 -canonicalize | FileCheck %s
// RUN: kvcache-opt %s -convert-kvcache-to-gpu=chip=sm_75 -canonicalize | FileCheck %s --check-prefix=SM75
// RUN: kvcache-opt %s -convert-kvcache-to-gpu=chip=sm_90 -canonicalize | FileCheck %s --check-prefix=NC

// With tensor cores the host picks, from max_seq_length alone, the decode
// kernel (fewer than 2 rows, or rows x group under one 16-row mma tile) or
// the query-tile kernel, whose K/V buffers are views of the launch's
// dynamic shared memory (4 stages of 64 keys of 128 + 8 f16 elements, K and
// V: 139,264 bytes; 32 keys, 69,632 bytes, when noncausal); the merge kernel
// follows either when the context was
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
// CHECK-NOT: dynamic_shared_memory_size
// CHECK: } else {
// CHECK: %[[SLOTS:.*]] = arith.ceildivui %[[ROWS]], %c32 : index
// CHECK: gpu.launch_func @kvcache_kernels::@gqa4_attention_tiles blocks in ({{.*}}) threads in (%c256, %c1, %c1) dynamic_shared_memory_size %c139264_i32
// CHECK: }
// CHECK: arith.cmpi ugt, %[[SPLITS]], %c1
// CHECK: gpu.launch_func @kvcache_kernels::@gqa4_attention_merge

// CHECK-LABEL: gpu.func @gqa4_attention_tiles(
// CHECK-NOT: workgroup(
// CHECK: %[[SHARED:.*]] = gpu.dynamic_shared_memory : memref<?xi8, #gpu.address_space<workgroup>>
// CHECK-DAG: memref.view %[[SHARED]][%c0{{.*}}][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<4x64x136xf16, #gpu.address_space<workgroup>>
// CHECK-DAG: memref.view %[[SHARED]][%c69632{{.*}}][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<4x64x136xf16, #gpu.address_space<workgroup>>
// CHECK: kvcache.max_seq_length
// The prologue issues steps 0, 1 and 2 (the loop, step + 3): the lookup
// and the copies of a step past the tile's last are skipped (each of the
// 256 threads copies 4 chunks of a key row).
// CHECK: %[[STEP2:.*]] = arith.cmpi ugt, %{{.*}}, %c2 : index
// CHECK-NEXT: scf.if %[[STEP2]] {
// CHECK-NEXT: kvcache.tile %arg1
// CHECK-COUNT-4: nvgpu.device_async_copy
// CHECK: {{^ *}}}
// CHECK-NEXT: nvvm.cp.async.commit.group

// SM75-LABEL: func.func @gqa4(
// SM75-NOT: attention_tiles
// SM75-NOT: dynamic_shared_memory
func.func @gqa4(%q: memref<?x8x128xf16>, %k: !cache, %v: !cache, %offsets: memref<?xi32>,
                %out: memref<?x8x128xf16>, %ws: memref<?xf32>) {
  kvcache.attention_ragged %q, %k, %v, %offsets, %out, %ws {scale = 0.0883883 : f32}
      : memref<?x8x128xf16>, !cache, !cache, memref<?xi32>, memref<?x8x128xf16>, memref<?xf32>
  return
}

// Noncausal: 32 keys per step (64 spilled), copied by 128 of the 256
// threads, the others committing empty groups.
// NC-LABEL: func.func @noncausal(
// NC: gpu.launch_func @kvcache_kernels::@noncausal_attention_tiles blocks in ({{.*}}) threads in (%c256, %c1, %c1) dynamic_shared_memory_size %c69632_i32
// NC-LABEL: gpu.func @noncausal_attention_tiles(
// NC: memref.view %{{.*}}[%c34816{{.*}}][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<4x32x136xf16, #gpu.address_space<workgroup>>
// NC: %[[STEP2:.*]] = arith.cmpi ugt, %{{.*}}, %c2 : index
// NC-NEXT: %[[COPYING:.*]] = arith.cmpi ult, %thread_id_x, %c128 : index
// NC-NEXT: %[[ISSUED:.*]] = arith.andi %[[STEP2]], %[[COPYING]] : i1
// NC-NEXT: scf.if %[[ISSUED]] {
// NC-NEXT: kvcache.tile %arg1
func.func @noncausal(%q: memref<?x8x128xf16>, %k: !cache, %v: !cache, %offsets: memref<?xi32>,
                     %out: memref<?x8x128xf16>, %ws: memref<?xf32>) {
  kvcache.attention_ragged %q, %k, %v, %offsets, %out, %ws {noncausal, scale = 0.0883883 : f32}
      : memref<?x8x128xf16>, !cache, !cache, memref<?xi32>, memref<?x8x128xf16>, memref<?xf32>
  return
}
