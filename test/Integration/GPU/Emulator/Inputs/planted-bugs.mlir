// Kernels with planted bugs, each next to its fixed version, for the GPU
// emulator's check tests (one test per bug in the directory above). Every
// entry point launches one kernel on in[i] = i and prints `out`.

!shared = memref<64xf32, #gpu.address_space<workgroup>>
!buffer = memref<64xf32>

module attributes {gpu.container_module} {
  gpu.module @kernels {
    // out[t] = in[63 - t] through shared memory (after zeroing it).
    gpu.func @exchange(%in: !buffer, %out: !buffer) workgroup(%tile: !shared) kernel {
      %tid = gpu.thread_id x
      %c63 = arith.constant 63 : index
      %zero = arith.constant 0.0 : f32
      memref.store %zero, %tile[%tid] : !shared
      gpu.barrier
      %x = memref.load %in[%tid] : !buffer
      memref.store %x, %tile[%tid] : !shared
      gpu.barrier
      %mirror = arith.subi %c63, %tid : index
      %y = memref.load %tile[%mirror] : !shared
      memref.store %y, %out[%tid] : !buffer
      gpu.return
    }
    // BUG: no barrier between the write and the other thread's read.
    gpu.func @exchange_racy(%in: !buffer, %out: !buffer) workgroup(%tile: !shared) kernel {
      %tid = gpu.thread_id x
      %c63 = arith.constant 63 : index
      %zero = arith.constant 0.0 : f32
      memref.store %zero, %tile[%tid] : !shared
      gpu.barrier
      %x = memref.load %in[%tid] : !buffer
      memref.store %x, %tile[%tid] : !shared
      %mirror = arith.subi %c63, %tid : index
      %y = memref.load %tile[%mirror] : !shared
      memref.store %y, %out[%tid] : !buffer
      gpu.return
    }

    // out[t] = in[63 - t] through a cp.async copy into shared memory.
    gpu.func @copy_exchange(%in: !buffer, %out: !buffer) workgroup(%tile: !shared) kernel {
      %tid = gpu.thread_id x
      %c63 = arith.constant 63 : index
      %token = nvgpu.device_async_copy %in[%tid], %tile[%tid], 1 : !buffer to !shared
      %group = nvgpu.device_async_create_group %token
      nvgpu.device_async_wait %group {numGroups = 0 : i32}
      gpu.barrier
      %mirror = arith.subi %c63, %tid : index
      %y = memref.load %tile[%mirror] : !shared
      memref.store %y, %out[%tid] : !buffer
      gpu.return
    }
    // BUG: no cp.async wait: the barrier does not retire the copies.
    gpu.func @copy_exchange_nowait(%in: !buffer, %out: !buffer) workgroup(%tile: !shared) kernel {
      %tid = gpu.thread_id x
      %c63 = arith.constant 63 : index
      %token = nvgpu.device_async_copy %in[%tid], %tile[%tid], 1 : !buffer to !shared
      %group = nvgpu.device_async_create_group %token
      gpu.barrier
      %mirror = arith.subi %c63, %tid : index
      %y = memref.load %tile[%mirror] : !shared
      memref.store %y, %out[%tid] : !buffer
      gpu.return
    }

    // out[t] = in[t] + 1, with a barrier every thread reaches.
    gpu.func @uniform_barrier(%in: !buffer, %out: !buffer) kernel {
      %tid = gpu.thread_id x
      %one = arith.constant 1.0 : f32
      %x = memref.load %in[%tid] : !buffer
      gpu.barrier
      %y = arith.addf %x, %one : f32
      memref.store %y, %out[%tid] : !buffer
      gpu.return
    }
    // BUG: only the first warp reaches the barrier.
    gpu.func @divergent_barrier(%in: !buffer, %out: !buffer) kernel {
      %tid = gpu.thread_id x
      %c32 = arith.constant 32 : index
      %one = arith.constant 1.0 : f32
      %x = memref.load %in[%tid] : !buffer
      %first_warp = arith.cmpi ult, %tid, %c32 : index
      scf.if %first_warp {
        gpu.barrier
      }
      %y = arith.addf %x, %one : f32
      memref.store %y, %out[%tid] : !buffer
      gpu.return
    }
    // BUG: the two warps wait at different barriers.
    gpu.func @split_barrier(%in: !buffer, %out: !buffer) kernel {
      %tid = gpu.thread_id x
      %c32 = arith.constant 32 : index
      %one = arith.constant 1.0 : f32
      %x = memref.load %in[%tid] : !buffer
      %first_warp = arith.cmpi ult, %tid, %c32 : index
      scf.if %first_warp {
        gpu.barrier
      } else {
        memref.store %x, %out[%tid] : !buffer
        gpu.barrier
      }
      %y = arith.addf %x, %one : f32
      memref.store %y, %out[%tid] : !buffer
      gpu.return
    }

    // Lanes 0-15 of each warp swap neighbours: out[t] = in[t ^ 1] there,
    // shuffling within a 16-lane segment (member mask 0xffff).
    gpu.func @half_warp_shuffle(%in: !buffer, %out: !buffer) kernel {
      %tid = gpu.thread_id x
      %c16 = arith.constant 16 : index
      %c32 = arith.constant 32 : index
      %c1 = arith.constant 1 : i32
      %width = arith.constant 16 : i32
      %x = memref.load %in[%tid] : !buffer
      %lane = arith.remui %tid, %c32 : index
      %low = arith.cmpi ult, %lane, %c16 : index
      scf.if %low {
        %y, %valid = gpu.shuffle xor %x, %c1, %width : f32
        memref.store %y, %out[%tid] : !buffer
      }
      gpu.return
    }
    // BUG: the shuffle names all 32 lanes but only lanes 0-15 take part.
    gpu.func @partial_warp_shuffle(%in: !buffer, %out: !buffer) kernel {
      %tid = gpu.thread_id x
      %c16 = arith.constant 16 : index
      %c32 = arith.constant 32 : index
      %c1 = arith.constant 1 : i32
      %width = arith.constant 32 : i32
      %x = memref.load %in[%tid] : !buffer
      %lane = arith.remui %tid, %c32 : index
      %low = arith.cmpi ult, %lane, %c16 : index
      scf.if %low {
        %y, %valid = gpu.shuffle xor %x, %c1, %width : f32
        memref.store %y, %out[%tid] : !buffer
      }
      gpu.return
    }

    // out[t] = in[(t + 63) mod 64] through shared memory.
    gpu.func @rotate(%in: !buffer, %out: !buffer) workgroup(%tile: !shared) kernel {
      %tid = gpu.thread_id x
      %c1 = arith.constant 1 : index
      %c64 = arith.constant 64 : index
      %x = memref.load %in[%tid] : !buffer
      %next = arith.addi %tid, %c1 : index
      %wrapped = arith.remui %next, %c64 : index
      memref.store %x, %tile[%wrapped] : !shared
      gpu.barrier
      %y = memref.load %tile[%tid] : !shared
      memref.store %y, %out[%tid] : !buffer
      gpu.return
    }
    // BUG: thread 63 writes one element past the shared array.
    gpu.func @rotate_out_of_bounds(%in: !buffer, %out: !buffer) workgroup(%tile: !shared) kernel {
      %tid = gpu.thread_id x
      %c1 = arith.constant 1 : index
      %x = memref.load %in[%tid] : !buffer
      %next = arith.addi %tid, %c1 : index
      memref.store %x, %tile[%next] : !shared
      gpu.barrier
      %y = memref.load %tile[%tid] : !shared
      memref.store %y, %out[%tid] : !buffer
      gpu.return
    }
    // BUG: shared memory read before anything was written there.
    gpu.func @read_uninitialized(%in: !buffer, %out: !buffer) workgroup(%tile: !shared) kernel {
      %tid = gpu.thread_id x
      %y = memref.load %tile[%tid] : !shared
      memref.store %y, %out[%tid] : !buffer
      gpu.return
    }

    // out[t] = in[t] + block: every (block, thread) its own element.
    gpu.func @own_elements(%in: !buffer, %out: memref<128xf32>) kernel {
      %tid = gpu.thread_id x
      %block = gpu.block_id x
      %c64 = arith.constant 64 : index
      %x = memref.load %in[%tid] : !buffer
      %base = arith.muli %block, %c64 : index
      %index = arith.addi %base, %tid : index
      memref.store %x, %out[%index] : memref<128xf32>
      gpu.return
    }
    // BUG: every thread of the block writes out[0].
    gpu.func @same_element(%in: !buffer, %out: memref<128xf32>) kernel {
      %tid = gpu.thread_id x
      %c0 = arith.constant 0 : index
      %x = memref.load %in[%tid] : !buffer
      memref.store %x, %out[%c0] : memref<128xf32>
      gpu.return
    }
    // BUG: both blocks write out[0..63].
    gpu.func @same_elements_two_blocks(%in: !buffer, %out: memref<128xf32>) kernel {
      %tid = gpu.thread_id x
      %x = memref.load %in[%tid] : !buffer
      memref.store %x, %out[%tid] : memref<128xf32>
      gpu.return
    }
  }

  func.func @missing_barrier() {
    %in, %out = call @inputs() : () -> (!buffer, memref<128xf32>)
    %c1 = arith.constant 1 : index
    %blocks = arith.constant 1 : index
    %threads = arith.constant 64 : index
    %c0 = arith.constant 0 : index
    %first = memref.subview %out[0] [64] [1] : memref<128xf32> to !buffer
    gpu.launch_func @kernels::@exchange_racy blocks in (%blocks, %c1, %c1) threads in (%threads, %c1, %c1)
        args(%in : !buffer, %first : !buffer)
    call @print(%out) : (memref<128xf32>) -> ()
    return
  }

  func.func @missing_barrier_fixed() {
    %in, %out = call @inputs() : () -> (!buffer, memref<128xf32>)
    %c1 = arith.constant 1 : index
    %blocks = arith.constant 1 : index
    %threads = arith.constant 64 : index
    %c0 = arith.constant 0 : index
    %first = memref.subview %out[0] [64] [1] : memref<128xf32> to !buffer
    gpu.launch_func @kernels::@exchange blocks in (%blocks, %c1, %c1) threads in (%threads, %c1, %c1)
        args(%in : !buffer, %first : !buffer)
    call @print(%out) : (memref<128xf32>) -> ()
    return
  }

  func.func @missing_wait() {
    %in, %out = call @inputs() : () -> (!buffer, memref<128xf32>)
    %c1 = arith.constant 1 : index
    %blocks = arith.constant 1 : index
    %threads = arith.constant 64 : index
    %c0 = arith.constant 0 : index
    %first = memref.subview %out[0] [64] [1] : memref<128xf32> to !buffer
    gpu.launch_func @kernels::@copy_exchange_nowait blocks in (%blocks, %c1, %c1) threads in (%threads, %c1, %c1)
        args(%in : !buffer, %first : !buffer)
    call @print(%out) : (memref<128xf32>) -> ()
    return
  }

  func.func @missing_wait_fixed() {
    %in, %out = call @inputs() : () -> (!buffer, memref<128xf32>)
    %c1 = arith.constant 1 : index
    %blocks = arith.constant 1 : index
    %threads = arith.constant 64 : index
    %c0 = arith.constant 0 : index
    %first = memref.subview %out[0] [64] [1] : memref<128xf32> to !buffer
    gpu.launch_func @kernels::@copy_exchange blocks in (%blocks, %c1, %c1) threads in (%threads, %c1, %c1)
        args(%in : !buffer, %first : !buffer)
    call @print(%out) : (memref<128xf32>) -> ()
    return
  }

  func.func @divergent_barrier() {
    %in, %out = call @inputs() : () -> (!buffer, memref<128xf32>)
    %c1 = arith.constant 1 : index
    %blocks = arith.constant 1 : index
    %threads = arith.constant 64 : index
    %c0 = arith.constant 0 : index
    %first = memref.subview %out[0] [64] [1] : memref<128xf32> to !buffer
    gpu.launch_func @kernels::@divergent_barrier blocks in (%blocks, %c1, %c1) threads in (%threads, %c1, %c1)
        args(%in : !buffer, %first : !buffer)
    call @print(%out) : (memref<128xf32>) -> ()
    return
  }

  func.func @split_barrier() {
    %in, %out = call @inputs() : () -> (!buffer, memref<128xf32>)
    %c1 = arith.constant 1 : index
    %blocks = arith.constant 1 : index
    %threads = arith.constant 64 : index
    %c0 = arith.constant 0 : index
    %first = memref.subview %out[0] [64] [1] : memref<128xf32> to !buffer
    gpu.launch_func @kernels::@split_barrier blocks in (%blocks, %c1, %c1) threads in (%threads, %c1, %c1)
        args(%in : !buffer, %first : !buffer)
    call @print(%out) : (memref<128xf32>) -> ()
    return
  }

  func.func @divergent_barrier_fixed() {
    %in, %out = call @inputs() : () -> (!buffer, memref<128xf32>)
    %c1 = arith.constant 1 : index
    %blocks = arith.constant 1 : index
    %threads = arith.constant 64 : index
    %c0 = arith.constant 0 : index
    %first = memref.subview %out[0] [64] [1] : memref<128xf32> to !buffer
    gpu.launch_func @kernels::@uniform_barrier blocks in (%blocks, %c1, %c1) threads in (%threads, %c1, %c1)
        args(%in : !buffer, %first : !buffer)
    call @print(%out) : (memref<128xf32>) -> ()
    return
  }

  func.func @split_barrier_fixed() {
    %in, %out = call @inputs() : () -> (!buffer, memref<128xf32>)
    %c1 = arith.constant 1 : index
    %blocks = arith.constant 1 : index
    %threads = arith.constant 64 : index
    %c0 = arith.constant 0 : index
    %first = memref.subview %out[0] [64] [1] : memref<128xf32> to !buffer
    gpu.launch_func @kernels::@uniform_barrier blocks in (%blocks, %c1, %c1) threads in (%threads, %c1, %c1)
        args(%in : !buffer, %first : !buffer)
    call @print(%out) : (memref<128xf32>) -> ()
    return
  }

  func.func @partial_shuffle() {
    %in, %out = call @inputs() : () -> (!buffer, memref<128xf32>)
    %c1 = arith.constant 1 : index
    %blocks = arith.constant 1 : index
    %threads = arith.constant 64 : index
    %c0 = arith.constant 0 : index
    %first = memref.subview %out[0] [64] [1] : memref<128xf32> to !buffer
    gpu.launch_func @kernels::@partial_warp_shuffle blocks in (%blocks, %c1, %c1) threads in (%threads, %c1, %c1)
        args(%in : !buffer, %first : !buffer)
    call @print(%out) : (memref<128xf32>) -> ()
    return
  }

  func.func @partial_shuffle_fixed() {
    %in, %out = call @inputs() : () -> (!buffer, memref<128xf32>)
    %c1 = arith.constant 1 : index
    %blocks = arith.constant 1 : index
    %threads = arith.constant 64 : index
    %c0 = arith.constant 0 : index
    %first = memref.subview %out[0] [64] [1] : memref<128xf32> to !buffer
    gpu.launch_func @kernels::@half_warp_shuffle blocks in (%blocks, %c1, %c1) threads in (%threads, %c1, %c1)
        args(%in : !buffer, %first : !buffer)
    call @print(%out) : (memref<128xf32>) -> ()
    return
  }

  func.func @shared_out_of_bounds() {
    %in, %out = call @inputs() : () -> (!buffer, memref<128xf32>)
    %c1 = arith.constant 1 : index
    %blocks = arith.constant 1 : index
    %threads = arith.constant 64 : index
    %c0 = arith.constant 0 : index
    %first = memref.subview %out[0] [64] [1] : memref<128xf32> to !buffer
    gpu.launch_func @kernels::@rotate_out_of_bounds blocks in (%blocks, %c1, %c1) threads in (%threads, %c1, %c1)
        args(%in : !buffer, %first : !buffer)
    call @print(%out) : (memref<128xf32>) -> ()
    return
  }

  func.func @shared_out_of_bounds_fixed() {
    %in, %out = call @inputs() : () -> (!buffer, memref<128xf32>)
    %c1 = arith.constant 1 : index
    %blocks = arith.constant 1 : index
    %threads = arith.constant 64 : index
    %c0 = arith.constant 0 : index
    %first = memref.subview %out[0] [64] [1] : memref<128xf32> to !buffer
    gpu.launch_func @kernels::@rotate blocks in (%blocks, %c1, %c1) threads in (%threads, %c1, %c1)
        args(%in : !buffer, %first : !buffer)
    call @print(%out) : (memref<128xf32>) -> ()
    return
  }

  func.func @uninitialized() {
    %in, %out = call @inputs() : () -> (!buffer, memref<128xf32>)
    %c1 = arith.constant 1 : index
    %blocks = arith.constant 1 : index
    %threads = arith.constant 64 : index
    %c0 = arith.constant 0 : index
    %first = memref.subview %out[0] [64] [1] : memref<128xf32> to !buffer
    gpu.launch_func @kernels::@read_uninitialized blocks in (%blocks, %c1, %c1) threads in (%threads, %c1, %c1)
        args(%in : !buffer, %first : !buffer)
    call @print(%out) : (memref<128xf32>) -> ()
    return
  }

  func.func @uninitialized_fixed() {
    %in, %out = call @inputs() : () -> (!buffer, memref<128xf32>)
    %c1 = arith.constant 1 : index
    %blocks = arith.constant 1 : index
    %threads = arith.constant 64 : index
    %c0 = arith.constant 0 : index
    %first = memref.subview %out[0] [64] [1] : memref<128xf32> to !buffer
    gpu.launch_func @kernels::@rotate blocks in (%blocks, %c1, %c1) threads in (%threads, %c1, %c1)
        args(%in : !buffer, %first : !buffer)
    call @print(%out) : (memref<128xf32>) -> ()
    return
  }

  func.func @global_race() {
    %in, %out = call @inputs() : () -> (!buffer, memref<128xf32>)
    %c1 = arith.constant 1 : index
    %blocks = arith.constant 1 : index
    %threads = arith.constant 64 : index
    gpu.launch_func @kernels::@same_element blocks in (%blocks, %c1, %c1) threads in (%threads, %c1, %c1)
        args(%in : !buffer, %out : memref<128xf32>)
    call @print(%out) : (memref<128xf32>) -> ()
    return
  }

  func.func @global_race_blocks() {
    %in, %out = call @inputs() : () -> (!buffer, memref<128xf32>)
    %c1 = arith.constant 1 : index
    %blocks = arith.constant 2 : index
    %threads = arith.constant 64 : index
    gpu.launch_func @kernels::@same_elements_two_blocks blocks in (%blocks, %c1, %c1) threads in (%threads, %c1, %c1)
        args(%in : !buffer, %out : memref<128xf32>)
    call @print(%out) : (memref<128xf32>) -> ()
    return
  }

  func.func @global_race_fixed() {
    %in, %out = call @inputs() : () -> (!buffer, memref<128xf32>)
    %c1 = arith.constant 1 : index
    %blocks = arith.constant 2 : index
    %threads = arith.constant 64 : index
    gpu.launch_func @kernels::@own_elements blocks in (%blocks, %c1, %c1) threads in (%threads, %c1, %c1)
        args(%in : !buffer, %out : memref<128xf32>)
    call @print(%out) : (memref<128xf32>) -> ()
    return
  }

  // in[i] = i, out = -1.
  func.func @inputs() -> (!buffer, memref<128xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c64 = arith.constant 64 : index
    %c128 = arith.constant 128 : index
    %minus_one = arith.constant -1.0 : f32
    %in = memref.alloc() {alignment = 256 : i64} : !buffer
    %out = memref.alloc() {alignment = 256 : i64} : memref<128xf32>
    scf.for %i = %c0 to %c64 step %c1 {
      %i32 = arith.index_cast %i : index to i32
      %value = arith.sitofp %i32 : i32 to f32
      memref.store %value, %in[%i] : !buffer
    }
    scf.for %i = %c0 to %c128 step %c1 {
      memref.store %minus_one, %out[%i] : memref<128xf32>
    }
    return %in, %out : !buffer, memref<128xf32>
  }

  func.func @print(%buffer: memref<128xf32>) {
    %unranked = memref.cast %buffer : memref<128xf32> to memref<*xf32>
    call @printMemrefF32(%unranked) : (memref<*xf32>) -> ()
    return
  }
  func.func private @printMemrefF32(memref<*xf32>)
}
