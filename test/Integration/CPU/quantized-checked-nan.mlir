// A NaN quantized into an i8 cache stores 0; with checked=true the program
// stops instead, on the CPU (a message naming the op, its location, the row
// and the element) and on the emulated GPU (a device assertion).

// RUN: kvcache-opt %s -kvcache-to-cpu -o %t.unchecked.mlir
// RUN: mlir-runner %t.unchecked.mlir -e main -entry-point-result=void \
// RUN:     -shared-libs=%mlir_c_runner_utils,%mlir_runner_utils \
// RUN: | FileCheck %s --check-prefix=UNCHECKED
// RUN: kvcache-opt %s -kvcache-to-cpu=checked=true -o %t.mlir
// RUN: not --crash mlir-runner %t.mlir -e main -entry-point-result=void \
// RUN:     -shared-libs=%mlir_c_runner_utils,%mlir_runner_utils 2>&1 \
// RUN: | FileCheck %s --check-prefix=CHECKED
// RUN: kvcache-opt %s -kvcache-to-emulated-gpu -o %t.gpu.unchecked.mlir
// RUN: %emu_run %t.gpu.unchecked.mlir -e main | FileCheck %s --check-prefix=UNCHECKED
// RUN: kvcache-opt %s -kvcache-to-emulated-gpu=checked=true -o %t.gpu.mlir
// RUN: not --crash %emu_run %t.gpu.mlir -e main 2>&1 | FileCheck %s --check-prefix=GPU

// Row 1 is [1, NaN, -1, 2.5] at scale 0.5: codes 2, 0 (NaN), -2, 5.
// UNCHECKED: ( 2, 0, -2, 5 )
// UNCHECKED-NEXT: ( 0, 0, 0, 0 )
// CHECKED: kvcache run-time check failed: kvcache.store_ragged (kvcache.page_store) at {{.*}}quantized-checked-nan.mlir:{{[0-9]+}}:{{[0-9]+}}: a NaN in row 1 (chunk at element 0) of the values: an i8 cache cannot hold it (stored as 0)
// CHECKED-NOT: ( 2
// GPU: Assertion `kvcache run-time check failed: kvcache.store_ragged (kvcache.page_store) at {{.*}}quantized-checked-nan.mlir:{{[0-9]+}}:{{[0-9]+}}: a NaN in the values: an i8 cache cannot hold it (stored as 0)` failed.

!c = !kvcache.paged_collection<i8, num_heads = 1, head_size = 4, page_size = 2, scales = tensor>
!k = !kvcache.paged_cache<i8, num_heads = 1, head_size = 4, page_size = 2, scales = tensor>
!blocks = memref<2x2x1x2x1x4xi8>

memref.global "private" constant @rows : memref<2x1x4xf32> = dense<[[[3.0, 0.5, 1.0, -0.5]], [[1.0, 0x7FC00000, -1.0, 2.5]]]>
memref.global "private" constant @lengths : memref<1xi32> = dense<0>
memref.global "private" constant @table : memref<1x2xi32> = dense<[[1, 0]]>
memref.global "private" constant @offsets : memref<2xi32> = dense<[0, 2]>

func.func @main() {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0 : i8
  %half = arith.constant 0.5 : f32
  %blocks = memref.alloc() : !blocks
  linalg.fill ins(%zero : i8) outs(%blocks : !blocks)
  %scales = memref.alloc() : memref<1x2xf32>
  linalg.fill ins(%half : f32) outs(%scales : memref<1x2xf32>)
  %lengths_s = memref.get_global @lengths : memref<1xi32>
  %lengths = memref.cast %lengths_s : memref<1xi32> to memref<?xi32>
  %table_s = memref.get_global @table : memref<1x2xi32>
  %table = memref.cast %table_s : memref<1x2xi32> to memref<?x?xi32>
  %offsets_s = memref.get_global @offsets : memref<2xi32>
  %offsets = memref.cast %offsets_s : memref<2xi32> to memref<?xi32>
  %rows_s = memref.get_global @rows : memref<2x1x4xf32>
  %rows = memref.cast %rows_s : memref<2x1x4xf32> to memref<?x1x4xf32>
  %msl = arith.constant 2 : i32
  %c = kvcache.paged_collection %blocks, %lengths, %table, %msl, %msl, %scales
      : !blocks, memref<?xi32>, memref<?x?xi32>, memref<1x2xf32> -> !c
  %k = kvcache.get_key_cache %c[%c0] : !c
  kvcache.store_ragged %k, %rows, %offsets : !k, memref<?x1x4xf32>, memref<?xi32>
  // Token 1 of the sequence: page 1, slot 1; then K of page 0 (untouched).
  %codes = vector.load %blocks[%c1, %c0, %c0, %c1, %c0, %c0] : !blocks, vector<4xi8>
  vector.print %codes : vector<4xi8>
  %other = vector.load %blocks[%c0, %c0, %c0, %c0, %c0, %c0] : !blocks, vector<4xi8>
  vector.print %other : vector<4xi8>
  memref.dealloc %blocks : !blocks
  memref.dealloc %scales : memref<1x2xf32>
  return
}
