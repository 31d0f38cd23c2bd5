// Kernels with planted bugs around ldmatrix and mma.sync, for the GPU
// emulator's check tests (one test per bug in the directory above), next to
// the correct kernel @square. Every entry point launches one warp on
// A[i, j] = ((16 i + j) 7919 mod 17) - 8 and prints `out` (16x8);
// twin_reference.py warp-matrix-bugs checks @square's result, A A[:, 0:8].

!a = memref<16x16xf32>
!out = memref<16x8xf32>
!tile = memref<16x16xf16, #gpu.address_space<workgroup>>

module attributes {gpu.container_module} {
  gpu.module @kernels {
    // Thread t stages A[t / 2, 8 (t % 2) .. + 7] as f16 (so lane l's
    // ldmatrix row, row l % 16 at column 8 (l / 16), is another thread's).
    func.func @stage(%a: !a, %tile: !tile, %tid: index) {
      %c2 = arith.constant 2 : index
      %c8 = arith.constant 8 : index
      %row = arith.divui %tid, %c2 : index
      %half = arith.remui %tid, %c2 : index
      %col = arith.muli %half, %c8 : index
      %x = vector.load %a[%row, %col] : !a, vector<8xf32>
      %y = arith.truncf %x : vector<8xf32> to vector<8xf16>
      vector.store %y, %tile[%row, %col] : !tile, vector<8xf16>
      return
    }
    // out = A A[:, 0:8] from A's fragment (ldmatrix.x4) and B = A[:, 0:8]'s
    // (ldmatrix.x2.trans of the same tile).
    func.func @multiply(%fa: vector<4x2xf16>, %fb: vector<2x2xf16>, %out: !out) {
      %lane = gpu.lane_id
      %c2 = arith.constant 2 : index
      %c4 = arith.constant 4 : index
      %c8 = arith.constant 8 : index
      %zero = arith.constant dense<0.0> : vector<2x2xf32>
      %d = nvgpu.mma.sync(%fa, %fb, %zero) {mmaShape = [16, 8, 16]}
          : (vector<4x2xf16>, vector<2x2xf16>, vector<2x2xf32>) -> vector<2x2xf32>
      %row = arith.divui %lane, %c4 : index
      %pair = arith.remui %lane, %c4 : index
      %col = arith.muli %pair, %c2 : index
      %below = arith.addi %row, %c8 : index
      %top = vector.extract %d[0] : vector<2xf32> from vector<2x2xf32>
      %bottom = vector.extract %d[1] : vector<2xf32> from vector<2x2xf32>
      vector.store %top, %out[%row, %col] : !out, vector<2xf32>
      vector.store %bottom, %out[%below, %col] : !out, vector<2xf32>
      return
    }

    gpu.func @square(%a: !a, %out: !out) workgroup(%tile: !tile) kernel {
      %tid = gpu.thread_id x
      %c0 = arith.constant 0 : index
      %c8 = arith.constant 8 : index
      %c16 = arith.constant 16 : index
      func.call @stage(%a, %tile, %tid) : (!a, !tile, index) -> ()
      gpu.barrier
      %row = arith.remui %tid, %c16 : index
      %half = arith.divui %tid, %c16 : index
      %col = arith.muli %half, %c8 : index
      %fa = nvgpu.ldmatrix %tile[%row, %col] {numTiles = 4 : i32, transpose = false} : !tile -> vector<4x2xf16>
      %fb = nvgpu.ldmatrix %tile[%row, %c0] {numTiles = 2 : i32, transpose = true} : !tile -> vector<2x2xf16>
      func.call @multiply(%fa, %fb, %out) : (vector<4x2xf16>, vector<2x2xf16>, !out) -> ()
      gpu.return
    }
    // BUG: lanes 16-31 skip the ldmatrix of A, which needs all 32 lanes.
    gpu.func @divergent_ldmatrix(%a: !a, %out: !out) workgroup(%tile: !tile) kernel {
      %tid = gpu.thread_id x
      %c0 = arith.constant 0 : index
      %c8 = arith.constant 8 : index
      %c16 = arith.constant 16 : index
      func.call @stage(%a, %tile, %tid) : (!a, !tile, index) -> ()
      gpu.barrier
      %row = arith.remui %tid, %c16 : index
      %half = arith.divui %tid, %c16 : index
      %col = arith.muli %half, %c8 : index
      %low = arith.cmpi ult, %tid, %c16 : index
      %fa = scf.if %low -> vector<4x2xf16> {
        %loaded = nvgpu.ldmatrix %tile[%row, %col] {numTiles = 4 : i32, transpose = false} : !tile -> vector<4x2xf16>
        scf.yield %loaded : vector<4x2xf16>
      } else {
        %none = arith.constant dense<0.0> : vector<4x2xf16>
        scf.yield %none : vector<4x2xf16>
      }
      %fb = nvgpu.ldmatrix %tile[%row, %c0] {numTiles = 2 : i32, transpose = true} : !tile -> vector<2x2xf16>
      func.call @multiply(%fa, %fb, %out) : (vector<4x2xf16>, vector<2x2xf16>, !out) -> ()
      gpu.return
    }
    // BUG: lane 31 skips the mma.sync and exits.
    gpu.func @divergent_mma(%a: !a, %out: !out) workgroup(%tile: !tile) kernel {
      %tid = gpu.thread_id x
      %c0 = arith.constant 0 : index
      %c8 = arith.constant 8 : index
      %c16 = arith.constant 16 : index
      %c31 = arith.constant 31 : index
      func.call @stage(%a, %tile, %tid) : (!a, !tile, index) -> ()
      gpu.barrier
      %row = arith.remui %tid, %c16 : index
      %half = arith.divui %tid, %c16 : index
      %col = arith.muli %half, %c8 : index
      %fa = nvgpu.ldmatrix %tile[%row, %col] {numTiles = 4 : i32, transpose = false} : !tile -> vector<4x2xf16>
      %fb = nvgpu.ldmatrix %tile[%row, %c0] {numTiles = 2 : i32, transpose = true} : !tile -> vector<2x2xf16>
      %not_last = arith.cmpi ne, %tid, %c31 : index
      scf.if %not_last {
        func.call @multiply(%fa, %fb, %out) : (vector<4x2xf16>, vector<2x2xf16>, !out) -> ()
      }
      gpu.return
    }
    // BUG: only threads 0-15 stage A (rows 0-7); ldmatrix reads rows 8-15
    // too.
    gpu.func @uninitialized_ldmatrix(%a: !a, %out: !out) workgroup(%tile: !tile) kernel {
      %tid = gpu.thread_id x
      %c0 = arith.constant 0 : index
      %c8 = arith.constant 8 : index
      %c16 = arith.constant 16 : index
      %low = arith.cmpi ult, %tid, %c16 : index
      scf.if %low {
        func.call @stage(%a, %tile, %tid) : (!a, !tile, index) -> ()
      }
      gpu.barrier
      %row = arith.remui %tid, %c16 : index
      %half = arith.divui %tid, %c16 : index
      %col = arith.muli %half, %c8 : index
      %fa = nvgpu.ldmatrix %tile[%row, %col] {numTiles = 4 : i32, transpose = false} : !tile -> vector<4x2xf16>
      %fb = nvgpu.ldmatrix %tile[%row, %c0] {numTiles = 2 : i32, transpose = true} : !tile -> vector<2x2xf16>
      func.call @multiply(%fa, %fb, %out) : (vector<4x2xf16>, vector<2x2xf16>, !out) -> ()
      gpu.return
    }
    // BUG: no barrier between staging A and the ldmatrix that reads other
    // threads' rows (the tile is zeroed first, so the reads are initialized
    // but racy).
    gpu.func @racy_ldmatrix(%a: !a, %out: !out) workgroup(%tile: !tile) kernel {
      %tid = gpu.thread_id x
      %c0 = arith.constant 0 : index
      %c2 = arith.constant 2 : index
      %c8 = arith.constant 8 : index
      %c16 = arith.constant 16 : index
      %zero = arith.constant dense<0.0> : vector<8xf16>
      %own_row = arith.divui %tid, %c2 : index
      %own_half = arith.remui %tid, %c2 : index
      %own_col = arith.muli %own_half, %c8 : index
      vector.store %zero, %tile[%own_row, %own_col] : !tile, vector<8xf16>
      gpu.barrier
      func.call @stage(%a, %tile, %tid) : (!a, !tile, index) -> ()
      %row = arith.remui %tid, %c16 : index
      %half = arith.divui %tid, %c16 : index
      %col = arith.muli %half, %c8 : index
      %fa = nvgpu.ldmatrix %tile[%row, %col] {numTiles = 4 : i32, transpose = false} : !tile -> vector<4x2xf16>
      %fb = nvgpu.ldmatrix %tile[%row, %c0] {numTiles = 2 : i32, transpose = true} : !tile -> vector<2x2xf16>
      func.call @multiply(%fa, %fb, %out) : (vector<4x2xf16>, vector<2x2xf16>, !out) -> ()
      gpu.return
    }
    // BUG: lane l points ldmatrix.x4 at row l, not l % 16: lanes 16-31 read
    // past the 16-row tile.
    gpu.func @ldmatrix_out_of_bounds(%a: !a, %out: !out) workgroup(%tile: !tile) kernel {
      %tid = gpu.thread_id x
      %c0 = arith.constant 0 : index
      %c8 = arith.constant 8 : index
      %c16 = arith.constant 16 : index
      func.call @stage(%a, %tile, %tid) : (!a, !tile, index) -> ()
      gpu.barrier
      %row = arith.remui %tid, %c16 : index
      %half = arith.divui %tid, %c16 : index
      %col = arith.muli %half, %c8 : index
      %fa = nvgpu.ldmatrix %tile[%tid, %col] {numTiles = 4 : i32, transpose = false} : !tile -> vector<4x2xf16>
      %fb = nvgpu.ldmatrix %tile[%row, %c0] {numTiles = 2 : i32, transpose = true} : !tile -> vector<2x2xf16>
      func.call @multiply(%fa, %fb, %out) : (vector<4x2xf16>, vector<2x2xf16>, !out) -> ()
      gpu.return
    }
  }

  func.func @inputs() -> (!a, !out) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c16 = arith.constant 16 : index
    %mul = arith.constant 7919 : i64
    %mod = arith.constant 17 : i64
    %sub = arith.constant 8 : i64
    %a = memref.alloc() {alignment = 256 : i64} : !a
    scf.for %i = %c0 to %c16 step %c1 {
      scf.for %j = %c0 to %c16 step %c1 {
        %row_start = arith.muli %i, %c16 : index
        %linear = arith.addi %row_start, %j : index
        %linear64 = arith.index_cast %linear : index to i64
        %product = arith.muli %linear64, %mul : i64
        %hash = arith.remui %product, %mod : i64
        %centered = arith.subi %hash, %sub : i64
        %value = arith.sitofp %centered : i64 to f32
        memref.store %value, %a[%i, %j] : !a
      }
    }
    %out = memref.alloc() {alignment = 256 : i64} : !out
    return %a, %out : !a, !out
  }
  func.func @print(%out: !out) {
    %unranked = memref.cast %out : !out to memref<*xf32>
    call @printMemrefF32(%unranked) : (memref<*xf32>) -> ()
    return
  }

  func.func @square() {
    %a, %out = call @inputs() : () -> (!a, !out)
    %c1 = arith.constant 1 : index
    %c32 = arith.constant 32 : index
    gpu.launch_func @kernels::@square blocks in (%c1, %c1, %c1) threads in (%c32, %c1, %c1)
        args(%a : !a, %out : !out)
    call @print(%out) : (!out) -> ()
    return
  }
  func.func @divergent_ldmatrix() {
    %a, %out = call @inputs() : () -> (!a, !out)
    %c1 = arith.constant 1 : index
    %c32 = arith.constant 32 : index
    gpu.launch_func @kernels::@divergent_ldmatrix blocks in (%c1, %c1, %c1) threads in (%c32, %c1, %c1)
        args(%a : !a, %out : !out)
    call @print(%out) : (!out) -> ()
    return
  }
  func.func @divergent_mma() {
    %a, %out = call @inputs() : () -> (!a, !out)
    %c1 = arith.constant 1 : index
    %c32 = arith.constant 32 : index
    gpu.launch_func @kernels::@divergent_mma blocks in (%c1, %c1, %c1) threads in (%c32, %c1, %c1)
        args(%a : !a, %out : !out)
    call @print(%out) : (!out) -> ()
    return
  }
  func.func @uninitialized_ldmatrix() {
    %a, %out = call @inputs() : () -> (!a, !out)
    %c1 = arith.constant 1 : index
    %c32 = arith.constant 32 : index
    gpu.launch_func @kernels::@uninitialized_ldmatrix blocks in (%c1, %c1, %c1) threads in (%c32, %c1, %c1)
        args(%a : !a, %out : !out)
    call @print(%out) : (!out) -> ()
    return
  }
  func.func @racy_ldmatrix() {
    %a, %out = call @inputs() : () -> (!a, !out)
    %c1 = arith.constant 1 : index
    %c32 = arith.constant 32 : index
    gpu.launch_func @kernels::@racy_ldmatrix blocks in (%c1, %c1, %c1) threads in (%c32, %c1, %c1)
        args(%a : !a, %out : !out)
    call @print(%out) : (!out) -> ()
    return
  }
  func.func @ldmatrix_out_of_bounds() {
    %a, %out = call @inputs() : () -> (!a, !out)
    %c1 = arith.constant 1 : index
    %c32 = arith.constant 32 : index
    gpu.launch_func @kernels::@ldmatrix_out_of_bounds blocks in (%c1, %c1, %c1) threads in (%c32, %c1, %c1)
        args(%a : !a, %out : !out)
    call @print(%out) : (!out) -> ()
    return
  }
  func.func private @printMemrefF32(memref<*xf32>)
}
