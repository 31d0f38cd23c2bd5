// RUN: kvcache-opt %s | kvcache-opt | FileCheck %s
// RUN: kvcache-opt %s -mlir-print-op-generic | kvcache-opt | FileCheck %s

// kvcache.send_pages and kvcache.recv_pages print and parse back, on plain
// and quantized collections.

!coll = !kvcache.paged_collection<f16, num_heads = 8, head_size = 128, page_size = 16>
!quant = !kvcache.paged_collection<f8E4M3FN, num_heads = 2, head_size = 64, page_size = 4, scales = block<32>>

// CHECK-LABEL: func.func @transfer
func.func @transfer(%c: !coll, %q: !quant, %sequences: memref<?xi32>,
                    %dst: memref<3xi32>, %rank: i32) {
  // CHECK: kvcache.send_pages %{{.*}}, %{{.*}}, %{{.*}} : !kvcache.paged_collection<f16, num_heads = 8, head_size = 128, page_size = 16>, memref<?xi32>
  kvcache.send_pages %c, %sequences, %rank : !coll, memref<?xi32>
  // CHECK: kvcache.recv_pages %{{.*}}, %{{.*}}, %{{.*}} : !kvcache.paged_collection<f16, num_heads = 8, head_size = 128, page_size = 16>, memref<3xi32>
  kvcache.recv_pages %c, %dst, %rank : !coll, memref<3xi32>
  // CHECK: kvcache.send_pages {{.*}} : !kvcache.paged_collection<f8E4M3FN, num_heads = 2, head_size = 64, page_size = 4, scales = block<32>>, memref<?xi32>
  kvcache.send_pages %q, %sequences, %rank : !quant, memref<?xi32>
  // CHECK: kvcache.recv_pages {{.*}} : !kvcache.paged_collection<f8E4M3FN, num_heads = 2, head_size = 64, page_size = 4, scales = block<32>>, memref<3xi32>
  kvcache.recv_pages %q, %dst, %rank : !quant, memref<3xi32>
  return
}
