// Found by kvcache-fuzz (a crash in CI): merge_states held a whole head as
// one vector, so a head of 2^62 elements (a shape the memref type allows)
// made the CPU pipeline build a vector<4611686018427387904xf32>, and MLIR's
// vector-to-LLVM lowering aborted ("SmallVector unable to grow"); a head
// of 65536 built 65536-lane vectors. The CPU kernel now loops over the head
// in chunks of at most 64 elements, whatever its size.
// RUN: ulimit -t 30; kvcache-opt %s -split-input-file -kvcache-to-cpu | FileCheck %s

// CHECK-LABEL: llvm.func @merge_huge(
// CHECK: llvm.load %{{.*}} : !llvm.ptr -> vector<64xf16>
// CHECK-NOT: vector<4611686018427387904x
func.func @merge_huge(%a: memref<?x4x4611686018427387904xf16>, %la: memref<?x4xf32>, %b: memref<?x4x4611686018427387904xf16>, %lb: memref<?x4xf32>) {
  kvcache.merge_states %a, %la, %b, %lb, %a, %la : memref<?x4x4611686018427387904xf16>, memref<?x4xf32>, memref<?x4x4611686018427387904xf16>, memref<?x4xf32>, memref<?x4x4611686018427387904xf16>, memref<?x4xf32>
  return
}

// -----

// CHECK-LABEL: llvm.func @merge_large(
// CHECK: llvm.load %{{.*}} : !llvm.ptr -> vector<64xbf16>
// CHECK-NOT: vector<65536x
func.func @merge_large(%a: memref<?x2x65536xbf16>, %la: memref<?x2xf32>, %b: memref<?x2x65536xbf16>, %lb: memref<?x2xf32>, %out: memref<?x2x65536xbf16>) {
  kvcache.merge_states %a, %la, %b, %lb, %out : memref<?x2x65536xbf16>, memref<?x2xf32>, memref<?x2x65536xbf16>, memref<?x2xf32>, memref<?x2x65536xbf16>
  return
}
