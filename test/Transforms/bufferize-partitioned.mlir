// A head-sharded module, partitioned (docs/Contract.md section 3.7), lowers
// as it is: kvcache-bufferize drops the shard.grid that shard-partition
// leaves and that the per-device function no longer uses, so kvcache-to-cpu
// takes the module and its LLVM dialect translates to LLVM IR.

// RUN: kvcache-opt %s --pass-pipeline='builtin.module(func.func(sharding-propagation,shard-partition),kvcache-bufferize)' | FileCheck %s
// RUN: kvcache-opt %s --pass-pipeline='builtin.module(func.func(sharding-propagation,shard-partition))' \
// RUN:   | FileCheck %s --check-prefix=PART
// RUN: kvcache-opt %s --pass-pipeline='builtin.module(func.func(sharding-propagation,shard-partition))' \
// RUN:   | kvcache-opt -kvcache-to-cpu | mlir-translate --mlir-to-llvmir | FileCheck %s --check-prefix=LLVM

// PART: shard.grid @grid(shape = 2)
// CHECK-NOT: shard.
// CHECK-LABEL: func.func @attend(
// CHECK-SAME: %{{.*}}: memref<?x8x64xf16>, %{{.*}}: memref<?x2x1x16x4x64xf16>, %{{.*}}: memref<2xi32>, %{{.*}}: memref<2x4xi32>, %{{.*}}: i32, %{{.*}}: memref<3xi32>, %{{.*}}: memref<?x8x64xf16>)
// CHECK: kvcache.attention_ragged {{.*}} : memref<?x8x64xf16>, !kvcache.paged_cache<f16, num_heads = 4, head_size = 64, page_size = 16>
// CHECK-NOT: shard.
// LLVM: define void @attend(
shard.grid @grid(shape = 2)
func.func @attend(%q: tensor<?x16x64xf16>, %blocks: tensor<?x2x1x16x8x64xf16>,
                  %lengths: tensor<2xi32>, %table: tensor<2x4xi32>, %n: i32,
                  %offsets: tensor<3xi32>, %out: tensor<?x16x64xf16>) -> tensor<?x16x64xf16> {
  %l = arith.constant 0 : index
  %s = shard.sharding @grid split_axes = [[], [], [], [], [0]] : !shard.sharding
  %b = shard.shard %blocks to %s : tensor<?x2x1x16x8x64xf16>
  %c = kvcache.paged_collection %b, %lengths, %table, %n, %n
      : tensor<?x2x1x16x8x64xf16>, tensor<2xi32>, tensor<2x4xi32> -> !kvcache.paged_collection<f16, num_heads = 8, head_size = 64, page_size = 16>
  %k = kvcache.get_key_cache %c[%l] : !kvcache.paged_collection<f16, num_heads = 8, head_size = 64, page_size = 16>
  %v = kvcache.get_value_cache %c[%l] : !kvcache.paged_collection<f16, num_heads = 8, head_size = 64, page_size = 16>
  %o = kvcache.attention_ragged %q, %k, %v, %offsets, %out {scale = 0.125 : f32}
      : tensor<?x16x64xf16>, !kvcache.paged_cache<f16, num_heads = 8, head_size = 64, page_size = 16>, !kvcache.paged_cache<f16, num_heads = 8, head_size = 64, page_size = 16>, tensor<3xi32>, tensor<?x16x64xf16> -> tensor<?x16x64xf16>
  return %o : tensor<?x16x64xf16>
}
