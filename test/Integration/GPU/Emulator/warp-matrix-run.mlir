// Warp-collective matrix ops on the emulated GPU: kernels that stage
// matrices in shared memory (converting f32 inputs to f16 or bf16), load mma
// fragments with ldmatrix (x1, x2, x4, with and without .trans) and multiply
// with mma.sync (nvgpu.mma.sync for f16, nvvm.mma.sync for bf16), as the
// attention kernels will. Inputs/twin_reference.py (warp-matrix) recomputes
// every printed buffer with numpy from the fill formula: plain matrix
// products, and for the fragment dump PTX's ldmatrix register layout. All
// inputs are integers exact in f16 and bf16, so every f32 sum is exact (in
// any order) and an f16 result is the exact sum rounded once. A, B and C of
// the 16x16 products hold distinct values and the fragment dump reads a
// matrix whose elements are all distinct, so a wrong lane or element
// mapping changes the output. Same result in three orders.
// warp-matrix-ptxas.test assembles the same kernels with ptxas.

// RUN: kvcache-opt %s -kvcache-to-emulated-gpu -o %t.mlir
// RUN: rm -f %t.profile
// RUN: env KVCACHE_EMU_PROFILE=%t.profile %emu_run %t.mlir -e main | %python %S/Inputs/twin_reference.py warp-matrix | FileCheck %s
// RUN: env KVCACHE_EMU_ORDER=reverse %emu_run %t.mlir -e main | %python %S/Inputs/twin_reference.py warp-matrix | FileCheck %s
// RUN: env KVCACHE_EMU_ORDER=random:11 %emu_run %t.mlir -e main | %python %S/Inputs/twin_reference.py warp-matrix | FileCheck %s
// RUN: FileCheck %s --check-prefix=PROFILE < %t.profile
// RUN: kvcache-compile %s -o %t.ptx
// RUN: FileCheck %s --check-prefix=PTX --input-file=%t.ptx

// CHECK-NOT: MISMATCH
// CHECK: OK 4 buffers 2816 values

// One line per launch. shared_bytes is the shared memory of all four
// kernels (the emulator gives each launch every shared global of its
// gpu.module). Loads: the f32 inputs and, per lane, 16 bytes of C; stores:
// the f32 outputs. Shared-memory bank conflicts are counted per ldmatrix
// phase (one 8x8 matrix: 8 rows of 16 bytes, ideally one wavefront); every
// staging store is contiguous (none). small_product: A's rows are 32 bytes
// apart, so rows r and r + 4 of a matrix share banks: 1 conflict for each
// of the 4 + 2 matrices of A's x4 and x2 loads; B's rows are contiguous
// (none). bf16_product: the same x4 of A (4), B^T's rows 32 bytes apart in
// an x2 and an x1 load (2 + 1). tiled_product: A's rows are 128 bytes
// apart, all 8 rows of a phase in the same 4 banks (7 conflicts a phase, 28
// an x4 load, 4 loads a warp, 2 warps: 224); B^T's rows are padded to 144
// bytes, 8 rows covering the 32 banks (none). ldmatrix_fragments: rows
// 5 l + 3 mod 32 (32 bytes apart): 1, 2 and 4 conflicts for x1, x2 and x4,
// twice (14).
// PROFILE: {"kernel": "small_product", "grid": [1, 1, 1], "block": [32, 1, 1], "shared_bytes": 9216, "global_load_bytes": 2048, "global_store_bytes": 2048, {{.*}} "shared_bank_conflicts": 6, "barriers": 1, "cp_async_bytes": 0}
// PROFILE-NEXT: {"kernel": "bf16_product", "grid": [1, 1, 1], "block": [32, 1, 1], "shared_bytes": 9216, "global_load_bytes": 2048, "global_store_bytes": 1024, {{.*}} "shared_bank_conflicts": 7, "barriers": 1, "cp_async_bytes": 0}
// PROFILE-NEXT: {"kernel": "tiled_product", "grid": [1, 1, 1], "block": [64, 1, 1], "shared_bytes": 9216, "global_load_bytes": 12288, "global_store_bytes": 2048, {{.*}} "shared_bank_conflicts": 224, "barriers": 1, "cp_async_bytes": 0}
// PROFILE-NEXT: {"kernel": "ldmatrix_fragments", "grid": [1, 1, 1], "block": [32, 1, 1], "shared_bytes": 9216, "global_load_bytes": 2048, "global_store_bytes": 6144, {{.*}} "shared_bank_conflicts": 14, "barriers": 1, "cp_async_bytes": 0}
// PROFILE-NOT: kernel

// The kernels become the PTX matrix instructions they stand for.
// PTX-LABEL: .entry small_product(
// PTX-DAG: ldmatrix.sync.aligned.m8n8.x4.shared.b16
// PTX-DAG: ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16
// PTX-DAG: ldmatrix.sync.aligned.m8n8.x2.shared.b16
// PTX-DAG: ldmatrix.sync.aligned.m8n8.x1.trans.shared.b16
// PTX-DAG: mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32
// PTX-DAG: mma.sync.aligned.m16n8k16.row.col.f16.f16.f16.f16
// PTX-DAG: mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32
// PTX-DAG: mma.sync.aligned.m16n8k8.row.col.f16.f16.f16.f16
// PTX-LABEL: .entry bf16_product(
// PTX-DAG: ldmatrix.sync.aligned.m8n8.x1.shared.b16
// PTX-DAG: mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32
// PTX-DAG: mma.sync.aligned.m16n8k8.row.col.f32.bf16.bf16.f32
// PTX-LABEL: .entry tiled_product(
// PTX-COUNT-8: mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32
// PTX-LABEL: .entry ldmatrix_fragments(
// PTX: ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16

!a_shared = memref<16x16xf16, #gpu.address_space<workgroup>>
!b_shared = memref<16x8xf16, #gpu.address_space<workgroup>>
!a_bf16_shared = memref<16x16xbf16, #gpu.address_space<workgroup>>
!bt_bf16_shared = memref<8x16xbf16, #gpu.address_space<workgroup>>
!a_wide_shared = memref<16x64xf16, #gpu.address_space<workgroup>>
!bt_wide_shared = memref<32x72xf16, #gpu.address_space<workgroup>>
!m_shared = memref<32x16xf16, #gpu.address_space<workgroup>>
!matrix = memref<?x?xf32>
!mma_f32 = !llvm.struct<(f32, f32, f32, f32)>

module attributes {gpu.container_module} {
  gpu.module @kernels {
    // The 16x8 accumulator fragment of this lane at (%row0, %col0) of %c
    // (in PTX, c0, c1 at row lane / 4, columns 2 (lane % 4) + 0, 1; c2, c3
    // eight rows below): row r of the vector is the pair of row
    // lane / 4 + 8 r.
    func.func @accumulator(%c: !matrix, %row0: index, %col0: index) -> vector<2x2xf32> {
      %row, %col = func.call @fragment_position(%row0, %col0) : (index, index) -> (index, index)
      %c8 = arith.constant 8 : index
      %below = arith.addi %row, %c8 : index
      %top = vector.load %c[%row, %col] : !matrix, vector<2xf32>
      %bottom = vector.load %c[%below, %col] : !matrix, vector<2xf32>
      %zero = arith.constant dense<0.0> : vector<2x2xf32>
      %with_top = vector.insert %top, %zero [0] : vector<2xf32> into vector<2x2xf32>
      %acc = vector.insert %bottom, %with_top [1] : vector<2xf32> into vector<2x2xf32>
      return %acc : vector<2x2xf32>
    }
    // Stores this lane's fragment of a 16x8 result at (%row0, %col0).
    func.func @store_result(%d: vector<2x2xf32>, %out: !matrix, %row0: index, %col0: index) {
      %row, %col = func.call @fragment_position(%row0, %col0) : (index, index) -> (index, index)
      %c8 = arith.constant 8 : index
      %below = arith.addi %row, %c8 : index
      %top = vector.extract %d[0] : vector<2xf32> from vector<2x2xf32>
      %bottom = vector.extract %d[1] : vector<2xf32> from vector<2x2xf32>
      vector.store %top, %out[%row, %col] : !matrix, vector<2xf32>
      vector.store %bottom, %out[%below, %col] : !matrix, vector<2xf32>
      return
    }
    // (%row0 + lane / 4, %col0 + 2 (lane % 4)).
    func.func @fragment_position(%row0: index, %col0: index) -> (index, index) {
      %lane = gpu.lane_id
      %c2 = arith.constant 2 : index
      %c4 = arith.constant 4 : index
      %group = arith.divui %lane, %c4 : index
      %pair = arith.remui %lane, %c4 : index
      %pair_col = arith.muli %pair, %c2 : index
      %row = arith.addi %row0, %group : index
      %col = arith.addi %col0, %pair_col : index
      return %row, %col : index, index
    }
    // A bf16 pair as the .b32 register nvvm.mma.sync takes (lower half first).
    func.func @word(%pair: vector<2xbf16>) -> i32 {
      %words = vector.bitcast %pair : vector<2xbf16> to vector<1xi32>
      %word = vector.extract %words[0] : i32 from vector<1xi32>
      return %word : i32
    }
    // nvvm.mma.sync's f32 D as the vector nvgpu.mma.sync would give.
    func.func @mma_result(%d: !mma_f32) -> vector<2x2xf32> {
      %d0 = llvm.extractvalue %d[0] : !mma_f32
      %d1 = llvm.extractvalue %d[1] : !mma_f32
      %d2 = llvm.extractvalue %d[2] : !mma_f32
      %d3 = llvm.extractvalue %d[3] : !mma_f32
      %result = vector.from_elements %d0, %d1, %d2, %d3 : vector<2x2xf32>
      return %result : vector<2x2xf32>
    }
    // Thread %tid of 32 stages row %tid % 16, columns 8 (%tid / 16) .. + 7
    // of the 16x16 A, as f16, and returns that position (its ldmatrix.x4 row).
    func.func @stage_a(%a: !matrix, %sa: !a_shared, %tid: index) -> (index, index) {
      %c8 = arith.constant 8 : index
      %c16 = arith.constant 16 : index
      %row = arith.remui %tid, %c16 : index
      %half = arith.divui %tid, %c16 : index
      %col = arith.muli %half, %c8 : index
      %x = vector.load %a[%row, %col] : !matrix, vector<8xf32>
      %y = arith.truncf %x : vector<8xf32> to vector<8xf16>
      vector.store %y, %sa[%row, %col] : !a_shared, vector<8xf16>
      return %row, %col : index, index
    }

    // out[0:16] = A B + C (m16n8k16, f32 accumulator); out[16:32] = A B + C
    // with f16 accumulator and result; out[32:48] and out[48:64] the same with
    // m16n8k8 on A[:, 0:8] and B[0:8]. A (16x16, row-major) through
    // ldmatrix.x4 (.x2 for k8), B (16x8, k-major) through ldmatrix.x2.trans
    // (.x1.trans for k8). One warp.
    gpu.func @small_product(%a: !matrix, %b: !matrix, %c: !matrix, %out: !matrix)
        workgroup(%sa: !a_shared, %sb: !b_shared) kernel {
      %tid = gpu.thread_id x
      %c0 = arith.constant 0 : index
      %c2 = arith.constant 2 : index
      %c4 = arith.constant 4 : index
      %c16 = arith.constant 16 : index
      %c32 = arith.constant 32 : index
      %c48 = arith.constant 48 : index
      %row, %col = func.call @stage_a(%a, %sa, %tid) : (!matrix, !a_shared, index) -> (index, index)
      // Thread t stages B[t / 2, 4 (t % 2) .. + 3]; lane t points ldmatrix at
      // row t % 16 of B (lanes 16-31 are ignored for x2).
      %b_row = arith.divui %tid, %c2 : index
      %b_quarter = arith.remui %tid, %c2 : index
      %b_col = arith.muli %b_quarter, %c4 : index
      %b_part = vector.load %b[%b_row, %b_col] : !matrix, vector<4xf32>
      %b_half = arith.truncf %b_part : vector<4xf32> to vector<4xf16>
      vector.store %b_half, %sb[%b_row, %b_col] : !b_shared, vector<4xf16>
      gpu.barrier
      %fa = nvgpu.ldmatrix %sa[%row, %col] {numTiles = 4 : i32, transpose = false}
          : !a_shared -> vector<4x2xf16>
      %fb = nvgpu.ldmatrix %sb[%row, %c0] {numTiles = 2 : i32, transpose = true}
          : !b_shared -> vector<2x2xf16>
      %acc = func.call @accumulator(%c, %c0, %c0) : (!matrix, index, index) -> vector<2x2xf32>
      %acc16 = arith.truncf %acc : vector<2x2xf32> to vector<2x2xf16>
      %d = nvgpu.mma.sync(%fa, %fb, %acc) {mmaShape = [16, 8, 16]}
          : (vector<4x2xf16>, vector<2x2xf16>, vector<2x2xf32>) -> vector<2x2xf32>
      %d16 = nvgpu.mma.sync(%fa, %fb, %acc16) {mmaShape = [16, 8, 16]}
          : (vector<4x2xf16>, vector<2x2xf16>, vector<2x2xf16>) -> vector<2x2xf16>
      // m16n8k8: A[:, 0:8] through ldmatrix.x2 (lanes 0-15 point at column 0),
      // B[0:8] through ldmatrix.x1.trans.
      %fa8 = nvgpu.ldmatrix %sa[%row, %col] {numTiles = 2 : i32, transpose = false}
          : !a_shared -> vector<2x2xf16>
      %fb8 = nvgpu.ldmatrix %sb[%row, %c0] {numTiles = 1 : i32, transpose = true}
          : !b_shared -> vector<1x2xf16>
      %d8 = nvgpu.mma.sync(%fa8, %fb8, %acc) {mmaShape = [16, 8, 8]}
          : (vector<2x2xf16>, vector<1x2xf16>, vector<2x2xf32>) -> vector<2x2xf32>
      %d8_16 = nvgpu.mma.sync(%fa8, %fb8, %acc16) {mmaShape = [16, 8, 8]}
          : (vector<2x2xf16>, vector<1x2xf16>, vector<2x2xf16>) -> vector<2x2xf16>
      %d16_wide = arith.extf %d16 : vector<2x2xf16> to vector<2x2xf32>
      %d8_16_wide = arith.extf %d8_16 : vector<2x2xf16> to vector<2x2xf32>
      func.call @store_result(%d, %out, %c0, %c0) : (vector<2x2xf32>, !matrix, index, index) -> ()
      func.call @store_result(%d16_wide, %out, %c16, %c0) : (vector<2x2xf32>, !matrix, index, index) -> ()
      func.call @store_result(%d8, %out, %c32, %c0) : (vector<2x2xf32>, !matrix, index, index) -> ()
      func.call @store_result(%d8_16_wide, %out, %c48, %c0) : (vector<2x2xf32>, !matrix, index, index) -> ()
      gpu.return
    }

    // bf16 through nvvm.mma.sync: out[0:16] = A B + C (m16n8k16),
    // out[16:32] = A[:, 0:8] B[0:8] + C (m16n8k8). B comes transposed (B^T,
    // 8x16, n-major), so ldmatrix loads it without .trans: x2 for k16, x1
    // for k8. One warp.
    gpu.func @bf16_product(%a: !matrix, %bt: !matrix, %c: !matrix, %out: !matrix)
        workgroup(%sa: !a_bf16_shared, %sbt: !bt_bf16_shared) kernel {
      %tid = gpu.thread_id x
      %c0 = arith.constant 0 : index
      %c2 = arith.constant 2 : index
      %c4 = arith.constant 4 : index
      %c8 = arith.constant 8 : index
      %c16 = arith.constant 16 : index
      %row = arith.remui %tid, %c16 : index
      %half = arith.divui %tid, %c16 : index
      %col = arith.muli %half, %c8 : index
      %a_part = vector.load %a[%row, %col] : !matrix, vector<8xf32>
      %a_bf16 = arith.truncf %a_part : vector<8xf32> to vector<8xbf16>
      vector.store %a_bf16, %sa[%row, %col] : !a_bf16_shared, vector<8xbf16>
      // Thread t stages B^T[t / 4, 4 (t % 4) .. + 3].
      %bt_row = arith.divui %tid, %c4 : index
      %bt_quarter = arith.remui %tid, %c4 : index
      %bt_col = arith.muli %bt_quarter, %c4 : index
      %bt_part = vector.load %bt[%bt_row, %bt_col] : !matrix, vector<4xf32>
      %bt_bf16 = arith.truncf %bt_part : vector<4xf32> to vector<4xbf16>
      vector.store %bt_bf16, %sbt[%bt_row, %bt_col] : !bt_bf16_shared, vector<4xbf16>
      gpu.barrier
      %fa = nvgpu.ldmatrix %sa[%row, %col] {numTiles = 4 : i32, transpose = false}
          : !a_bf16_shared -> vector<4x2xbf16>
      // Lane l points at row l % 8 of B^T, column 8 ((l / 8) % 2) for x2 and
      // 0 for x1.
      %n = arith.remui %tid, %c8 : index
      %matrix = arith.divui %tid, %c8 : index
      %k_tile = arith.remui %matrix, %c2 : index
      %k = arith.muli %k_tile, %c8 : index
      %fb = nvgpu.ldmatrix %sbt[%n, %k] {numTiles = 2 : i32, transpose = false}
          : !bt_bf16_shared -> vector<2x2xbf16>
      %fb8 = nvgpu.ldmatrix %sbt[%n, %c0] {numTiles = 1 : i32, transpose = false}
          : !bt_bf16_shared -> vector<1x2xbf16>
      // nvvm.mma.sync takes bf16 pairs as i32 and C as four f32.
      %a_pair0 = vector.extract %fa[0] : vector<2xbf16> from vector<4x2xbf16>
      %a_pair1 = vector.extract %fa[1] : vector<2xbf16> from vector<4x2xbf16>
      %a_pair2 = vector.extract %fa[2] : vector<2xbf16> from vector<4x2xbf16>
      %a_pair3 = vector.extract %fa[3] : vector<2xbf16> from vector<4x2xbf16>
      %b_pair0 = vector.extract %fb[0] : vector<2xbf16> from vector<2x2xbf16>
      %b_pair1 = vector.extract %fb[1] : vector<2xbf16> from vector<2x2xbf16>
      %b8_pair = vector.extract %fb8[0] : vector<2xbf16> from vector<1x2xbf16>
      %a0 = func.call @word(%a_pair0) : (vector<2xbf16>) -> i32
      %a1 = func.call @word(%a_pair1) : (vector<2xbf16>) -> i32
      %a2 = func.call @word(%a_pair2) : (vector<2xbf16>) -> i32
      %a3 = func.call @word(%a_pair3) : (vector<2xbf16>) -> i32
      %b0 = func.call @word(%b_pair0) : (vector<2xbf16>) -> i32
      %b1 = func.call @word(%b_pair1) : (vector<2xbf16>) -> i32
      %b8 = func.call @word(%b8_pair) : (vector<2xbf16>) -> i32
      %acc = func.call @accumulator(%c, %c0, %c0) : (!matrix, index, index) -> vector<2x2xf32>
      %c00 = vector.extract %acc[0, 0] : f32 from vector<2x2xf32>
      %c01 = vector.extract %acc[0, 1] : f32 from vector<2x2xf32>
      %c10 = vector.extract %acc[1, 0] : f32 from vector<2x2xf32>
      %c11 = vector.extract %acc[1, 1] : f32 from vector<2x2xf32>
      %d = nvvm.mma.sync A[%a0, %a1, %a2, %a3] B[%b0, %b1] C[%c00, %c01, %c10, %c11]
          {layoutA = #nvvm.mma_layout<row>, layoutB = #nvvm.mma_layout<col>,
           multiplicandAPtxType = #nvvm.mma_type<bf16>, multiplicandBPtxType = #nvvm.mma_type<bf16>,
           shape = #nvvm.shape<m = 16, n = 8, k = 16>} : (i32, i32, f32) -> !mma_f32
      %d8 = nvvm.mma.sync A[%a0, %a1] B[%b8] C[%c00, %c01, %c10, %c11]
          {layoutA = #nvvm.mma_layout<row>, layoutB = #nvvm.mma_layout<col>,
           multiplicandAPtxType = #nvvm.mma_type<bf16>, multiplicandBPtxType = #nvvm.mma_type<bf16>,
           shape = #nvvm.shape<m = 16, n = 8, k = 8>} : (i32, i32, f32) -> !mma_f32
      %dv = func.call @mma_result(%d) : (!mma_f32) -> vector<2x2xf32>
      %d8v = func.call @mma_result(%d8) : (!mma_f32) -> vector<2x2xf32>
      func.call @store_result(%dv, %out, %c0, %c0) : (vector<2x2xf32>, !matrix, index, index) -> ()
      func.call @store_result(%d8v, %out, %c16, %c0) : (vector<2x2xf32>, !matrix, index, index) -> ()
      gpu.return
    }

    // out (16x32) = A (16x64) B, with B^T (32x64) given: two warps, warp w
    // computes columns 16 w .. 16 w + 15 as two n-tiles, over 4 k-steps of 16
    // (8 mma.sync a warp). A through ldmatrix.x4; both n-tiles of B through
    // one ldmatrix.x4 of B^T (matrix m: n-tile m / 2, k-half m % 2). B^T's
    // rows are padded to 72 elements against bank conflicts; A's are not.
    gpu.func @tiled_product(%a: !matrix, %bt: !matrix, %out: !matrix)
        workgroup(%sa: !a_wide_shared, %sbt: !bt_wide_shared) kernel {
      %tid = gpu.thread_id x
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c2 = arith.constant 2 : index
      %c4 = arith.constant 4 : index
      %c8 = arith.constant 8 : index
      %c16 = arith.constant 16 : index
      %c32 = arith.constant 32 : index
      %c64 = arith.constant 64 : index
      // Thread t stages 8-element vectors v = t + 64 i: row v / 8, column
      // 8 (v % 8); 2 of A and 4 of B^T.
      scf.for %i = %c0 to %c4 step %c1 {
        %base = arith.muli %i, %c64 : index
        %v = arith.addi %base, %tid : index
        %row = arith.divui %v, %c8 : index
        %slot = arith.remui %v, %c8 : index
        %col = arith.muli %slot, %c8 : index
        %in_a = arith.cmpi ult, %i, %c2 : index
        scf.if %in_a {
          %x = vector.load %a[%row, %col] : !matrix, vector<8xf32>
          %y = arith.truncf %x : vector<8xf32> to vector<8xf16>
          vector.store %y, %sa[%row, %col] : !a_wide_shared, vector<8xf16>
        }
        %x = vector.load %bt[%row, %col] : !matrix, vector<8xf32>
        %y = arith.truncf %x : vector<8xf32> to vector<8xf16>
        vector.store %y, %sbt[%row, %col] : !bt_wide_shared, vector<8xf16>
      }
      gpu.barrier
      %warp = arith.divui %tid, %c32 : index
      %lane = arith.remui %tid, %c32 : index
      %a_row = arith.remui %lane, %c16 : index
      %a_half = arith.divui %lane, %c16 : index
      %a_col = arith.muli %a_half, %c8 : index
      %matrix = arith.divui %lane, %c8 : index
      %n_tile = arith.divui %matrix, %c2 : index
      %k_half = arith.remui %matrix, %c2 : index
      %n_in_tile = arith.remui %lane, %c8 : index
      %warp_n = arith.muli %warp, %c16 : index
      %tile_n = arith.muli %n_tile, %c8 : index
      %n_base = arith.addi %warp_n, %tile_n : index
      %b_row = arith.addi %n_base, %n_in_tile : index
      %b_col = arith.muli %k_half, %c8 : index
      %zero = arith.constant dense<0.0> : vector<2x2xf32>
      %no_b = arith.constant dense<0.0> : vector<2x2xf16>
      %d0, %d1 = scf.for %k = %c0 to %c64 step %c16
          iter_args(%acc0 = %zero, %acc1 = %zero) -> (vector<2x2xf32>, vector<2x2xf32>) {
        %a_k = arith.addi %k, %a_col : index
        %fa = nvgpu.ldmatrix %sa[%a_row, %a_k] {numTiles = 4 : i32, transpose = false}
            : !a_wide_shared -> vector<4x2xf16>
        %b_k = arith.addi %k, %b_col : index
        %fb = nvgpu.ldmatrix %sbt[%b_row, %b_k] {numTiles = 4 : i32, transpose = false}
            : !bt_wide_shared -> vector<4x2xf16>
        %b_reg0 = vector.extract %fb[0] : vector<2xf16> from vector<4x2xf16>
        %b_reg1 = vector.extract %fb[1] : vector<2xf16> from vector<4x2xf16>
        %b_reg2 = vector.extract %fb[2] : vector<2xf16> from vector<4x2xf16>
        %b_reg3 = vector.extract %fb[3] : vector<2xf16> from vector<4x2xf16>
        %fb0_first = vector.insert %b_reg0, %no_b [0] : vector<2xf16> into vector<2x2xf16>
        %fb0 = vector.insert %b_reg1, %fb0_first [1] : vector<2xf16> into vector<2x2xf16>
        %fb1_first = vector.insert %b_reg2, %no_b [0] : vector<2xf16> into vector<2x2xf16>
        %fb1 = vector.insert %b_reg3, %fb1_first [1] : vector<2xf16> into vector<2x2xf16>
        %next0 = nvgpu.mma.sync(%fa, %fb0, %acc0) {mmaShape = [16, 8, 16]}
            : (vector<4x2xf16>, vector<2x2xf16>, vector<2x2xf32>) -> vector<2x2xf32>
        %next1 = nvgpu.mma.sync(%fa, %fb1, %acc1) {mmaShape = [16, 8, 16]}
            : (vector<4x2xf16>, vector<2x2xf16>, vector<2x2xf32>) -> vector<2x2xf32>
        scf.yield %next0, %next1 : vector<2x2xf32>, vector<2x2xf32>
      }
      %second = arith.addi %warp_n, %c8 : index
      func.call @store_result(%d0, %out, %c0, %warp_n) : (vector<2x2xf32>, !matrix, index, index) -> ()
      func.call @store_result(%d1, %out, %c0, %second) : (vector<2x2xf32>, !matrix, index, index) -> ()
      gpu.return
    }

    // out[32 %form + lane, 0:8] = this lane's registers, as f32.
    func.func @store_fragments(%fragments: vector<4x2xf16>, %out: !matrix, %form: index) {
      %lane = gpu.lane_id
      %c0 = arith.constant 0 : index
      %c2 = arith.constant 2 : index
      %c4 = arith.constant 4 : index
      %c6 = arith.constant 6 : index
      %c32 = arith.constant 32 : index
      %first = arith.muli %form, %c32 : index
      %row = arith.addi %first, %lane : index
      %wide = arith.extf %fragments : vector<4x2xf16> to vector<4x2xf32>
      %r0 = vector.extract %wide[0] : vector<2xf32> from vector<4x2xf32>
      %r1 = vector.extract %wide[1] : vector<2xf32> from vector<4x2xf32>
      %r2 = vector.extract %wide[2] : vector<2xf32> from vector<4x2xf32>
      %r3 = vector.extract %wide[3] : vector<2xf32> from vector<4x2xf32>
      vector.store %r0, %out[%row, %c0] : !matrix, vector<2xf32>
      vector.store %r1, %out[%row, %c2] : !matrix, vector<2xf32>
      vector.store %r2, %out[%row, %c4] : !matrix, vector<2xf32>
      vector.store %r3, %out[%row, %c6] : !matrix, vector<2xf32>
      return
    }
    // Every ldmatrix form's registers, element by element: lane l points at
    // row (5 l + 3) mod 32, column 8 (l % 2) of M (32x16); out[32 v + l,
    // 2 r + h] = element h of register r of lane l in form v (x1, x2, x4,
    // then the same with .trans), 0 for registers the form does not have.
    gpu.func @ldmatrix_fragments(%m: !matrix, %out: !matrix) workgroup(%sm: !m_shared) kernel {
      %tid = gpu.thread_id x
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c2 = arith.constant 2 : index
      %c3 = arith.constant 3 : index
      %c4 = arith.constant 4 : index
      %c5 = arith.constant 5 : index
      %c8 = arith.constant 8 : index
      %c32 = arith.constant 32 : index
      // Thread t stages 8-element vectors v = t and t + 32: row v / 2,
      // column 8 (v % 2).
      scf.for %i = %c0 to %c2 step %c1 {
        %base = arith.muli %i, %c32 : index
        %v = arith.addi %base, %tid : index
        %row = arith.divui %v, %c2 : index
        %slot = arith.remui %v, %c2 : index
        %col = arith.muli %slot, %c8 : index
        %x = vector.load %m[%row, %col] : !matrix, vector<8xf32>
        %y = arith.truncf %x : vector<8xf32> to vector<8xf16>
        vector.store %y, %sm[%row, %col] : !m_shared, vector<8xf16>
      }
      gpu.barrier
      %scaled = arith.muli %tid, %c5 : index
      %shifted = arith.addi %scaled, %c3 : index
      %row = arith.remui %shifted, %c32 : index
      %odd = arith.remui %tid, %c2 : index
      %col = arith.muli %odd, %c8 : index
      %zero = arith.constant dense<0.0> : vector<4x2xf16>
      %x1 = nvgpu.ldmatrix %sm[%row, %col] {numTiles = 1 : i32, transpose = false} : !m_shared -> vector<1x2xf16>
      %x2 = nvgpu.ldmatrix %sm[%row, %col] {numTiles = 2 : i32, transpose = false} : !m_shared -> vector<2x2xf16>
      %x4 = nvgpu.ldmatrix %sm[%row, %col] {numTiles = 4 : i32, transpose = false} : !m_shared -> vector<4x2xf16>
      %t1 = nvgpu.ldmatrix %sm[%row, %col] {numTiles = 1 : i32, transpose = true} : !m_shared -> vector<1x2xf16>
      %t2 = nvgpu.ldmatrix %sm[%row, %col] {numTiles = 2 : i32, transpose = true} : !m_shared -> vector<2x2xf16>
      %t4 = nvgpu.ldmatrix %sm[%row, %col] {numTiles = 4 : i32, transpose = true} : !m_shared -> vector<4x2xf16>
      %x1_0 = vector.extract %x1[0] : vector<2xf16> from vector<1x2xf16>
      %x1_padded = vector.insert %x1_0, %zero [0] : vector<2xf16> into vector<4x2xf16>
      %x2_0 = vector.extract %x2[0] : vector<2xf16> from vector<2x2xf16>
      %x2_1 = vector.extract %x2[1] : vector<2xf16> from vector<2x2xf16>
      %x2_first = vector.insert %x2_0, %zero [0] : vector<2xf16> into vector<4x2xf16>
      %x2_padded = vector.insert %x2_1, %x2_first [1] : vector<2xf16> into vector<4x2xf16>
      %t1_0 = vector.extract %t1[0] : vector<2xf16> from vector<1x2xf16>
      %t1_padded = vector.insert %t1_0, %zero [0] : vector<2xf16> into vector<4x2xf16>
      %t2_0 = vector.extract %t2[0] : vector<2xf16> from vector<2x2xf16>
      %t2_1 = vector.extract %t2[1] : vector<2xf16> from vector<2x2xf16>
      %t2_first = vector.insert %t2_0, %zero [0] : vector<2xf16> into vector<4x2xf16>
      %t2_padded = vector.insert %t2_1, %t2_first [1] : vector<2xf16> into vector<4x2xf16>
      func.call @store_fragments(%x1_padded, %out, %c0) : (vector<4x2xf16>, !matrix, index) -> ()
      func.call @store_fragments(%x2_padded, %out, %c1) : (vector<4x2xf16>, !matrix, index) -> ()
      func.call @store_fragments(%x4, %out, %c2) : (vector<4x2xf16>, !matrix, index) -> ()
      func.call @store_fragments(%t1_padded, %out, %c3) : (vector<4x2xf16>, !matrix, index) -> ()
      func.call @store_fragments(%t2_padded, %out, %c4) : (vector<4x2xf16>, !matrix, index) -> ()
      func.call @store_fragments(%t4, %out, %c5) : (vector<4x2xf16>, !matrix, index) -> ()
      gpu.return
    }
  }

  // buf[r, c] = ((cols r + c + seed) 7919 mod mod) - sub: for mod a prime
  // (or coprime to 7919) above the element count, all distinct.
  func.func @fill(%buf: !matrix, %seed: i64, %mod: i64, %sub: i64) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %mul = arith.constant 7919 : i64
    %rows = memref.dim %buf, %c0 : !matrix
    %cols = memref.dim %buf, %c1 : !matrix
    scf.for %r = %c0 to %rows step %c1 {
      scf.for %c = %c0 to %cols step %c1 {
        %row_start = arith.muli %r, %cols : index
        %i = arith.addi %row_start, %c : index
        %i64 = arith.index_cast %i : index to i64
        %shifted = arith.addi %i64, %seed : i64
        %product = arith.muli %shifted, %mul : i64
        %hash = arith.remui %product, %mod : i64
        %centered = arith.subi %hash, %sub : i64
        %value = arith.sitofp %centered : i64 to f32
        memref.store %value, %buf[%r, %c] : !matrix
      }
    }
    return
  }
  func.func @filled(%rows: index, %cols: index, %seed: i64, %mod: i64, %sub: i64) -> !matrix {
    %buf = memref.alloc(%rows, %cols) {alignment = 256 : i64} : !matrix
    call @fill(%buf, %seed, %mod, %sub) : (!matrix, i64, i64, i64) -> ()
    return %buf : !matrix
  }
  func.func @print(%buf: !matrix) {
    %unranked = memref.cast %buf : !matrix to memref<*xf32>
    call @printMemrefF32(%unranked) : (memref<*xf32>) -> ()
    return
  }

  func.func @main() {
    %c1 = arith.constant 1 : index
    %c8 = arith.constant 8 : index
    %c16 = arith.constant 16 : index
    %c32 = arith.constant 32 : index
    %c64 = arith.constant 64 : index
    %c192 = arith.constant 192 : index
    %seed0 = arith.constant 0 : i64
    %seed1 = arith.constant 1 : i64
    %seed2 = arith.constant 2 : i64
    %seed3 = arith.constant 3 : i64
    %seed4 = arith.constant 4 : i64
    %seed5 = arith.constant 5 : i64
    %seed6 = arith.constant 6 : i64
    %mod13 = arith.constant 13 : i64
    %mod17 = arith.constant 17 : i64
    %mod131 = arith.constant 131 : i64
    %mod257 = arith.constant 257 : i64
    %mod1021 = arith.constant 1021 : i64
    %mod2039 = arith.constant 2039 : i64
    %sub6 = arith.constant 6 : i64
    %sub8 = arith.constant 8 : i64
    %sub65 = arith.constant 65 : i64
    %sub128 = arith.constant 128 : i64
    %sub510 = arith.constant 510 : i64
    %sub1019 = arith.constant 1019 : i64

    // A (16x16) in [-128, 128], B (16x8) and B^T (8x16) in [-65, 65], C
    // (16x8) in [-510, 510], each with distinct elements.
    %a = call @filled(%c16, %c16, %seed0, %mod257, %sub128) : (index, index, i64, i64, i64) -> !matrix
    %b = call @filled(%c16, %c8, %seed1, %mod131, %sub65) : (index, index, i64, i64, i64) -> !matrix
    %c = call @filled(%c16, %c8, %seed2, %mod1021, %sub510) : (index, index, i64, i64, i64) -> !matrix
    %small = memref.alloc(%c64, %c8) {alignment = 256 : i64} : !matrix
    gpu.launch_func @kernels::@small_product blocks in (%c1, %c1, %c1) threads in (%c32, %c1, %c1)
        args(%a : !matrix, %b : !matrix, %c : !matrix, %small : !matrix)
    call @print(%small) : (!matrix) -> ()

    %bt = call @filled(%c8, %c16, %seed3, %mod131, %sub65) : (index, index, i64, i64, i64) -> !matrix
    %bf16 = memref.alloc(%c32, %c8) {alignment = 256 : i64} : !matrix
    gpu.launch_func @kernels::@bf16_product blocks in (%c1, %c1, %c1) threads in (%c32, %c1, %c1)
        args(%a : !matrix, %bt : !matrix, %c : !matrix, %bf16 : !matrix)
    call @print(%bf16) : (!matrix) -> ()

    // Small values for the 64-long sums: A in [-8, 8], B^T in [-6, 6].
    %wide_a = call @filled(%c16, %c64, %seed4, %mod17, %sub8) : (index, index, i64, i64, i64) -> !matrix
    %wide_bt = call @filled(%c32, %c64, %seed5, %mod13, %sub6) : (index, index, i64, i64, i64) -> !matrix
    %tiled = memref.alloc(%c16, %c32) {alignment = 256 : i64} : !matrix
    gpu.launch_func @kernels::@tiled_product blocks in (%c1, %c1, %c1) threads in (%c64, %c1, %c1)
        args(%wide_a : !matrix, %wide_bt : !matrix, %tiled : !matrix)
    call @print(%tiled) : (!matrix) -> ()

    // M (32x16) in [-1019, 1019], all distinct.
    %m = call @filled(%c32, %c16, %seed6, %mod2039, %sub1019) : (index, index, i64, i64, i64) -> !matrix
    %fragments = memref.alloc(%c192, %c8) {alignment = 256 : i64} : !matrix
    gpu.launch_func @kernels::@ldmatrix_fragments blocks in (%c1, %c1, %c1) threads in (%c32, %c1, %c1)
        args(%m : !matrix, %fragments : !matrix)
    call @print(%fragments) : (!matrix) -> ()

    memref.dealloc %a : !matrix
    memref.dealloc %b : !matrix
    memref.dealloc %c : !matrix
    memref.dealloc %small : !matrix
    memref.dealloc %bt : !matrix
    memref.dealloc %bf16 : !matrix
    memref.dealloc %wide_a : !matrix
    memref.dealloc %wide_bt : !matrix
    memref.dealloc %tiled : !matrix
    memref.dealloc %m : !matrix
    memref.dealloc %fragments : !matrix
    return
  }
  func.func private @printMemrefF32(memref<*xf32>)
}
