// Dynamic shared memory (gpu.dynamic_shared_memory) is as large as the
// launch says: a kernel that reverses 64 floats through it runs clean in
// every order with 256 bytes, and the same launch with 128 bytes is reported
// as out of bounds.
// RUN: kvcache-opt %s -kvcache-to-emulated-gpu > %t.mlir
// RUN: %emu_run %t.mlir -e enough 2>&1 | FileCheck %s
// RUN: env KVCACHE_EMU_ORDER=reverse %emu_run %t.mlir -e enough 2>&1 | FileCheck %s
// RUN: env KVCACHE_EMU_ORDER=random:5 %emu_run %t.mlir -e enough 2>&1 | FileCheck %s
// RUN: not --crash %emu_run %t.mlir -e too_small 2>&1 | FileCheck %s --check-prefix=SMALL

// CHECK-NOT: kvcache gpu emulator
// CHECK: [63,  62,  61,  60,  59,  58,  57,  56,  55,  54,  53,  52,  51,  50,  49,  48,  47,  46,  45,  44,  43,  42,  41,  40,  39,  38,  37,  36,  35,  34,  33,  32,  31,  30,  29,  28,  27,  26,  25,  24,  23,  22,  21,  20,  19,  18,  17,  16,  15,  14,  13,  12,  11,  10,  9,  8,  7,  6,  5,  4,  3,  2,  1,  0]
// SMALL: kvcache gpu emulator: shared bounds: kernel reverse block (0,0,0) thread (32,0,0) at {{.*}}dynamic-shared-memory.mlir:[[# @LINE + 11]]:7

module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @reverse(%in: memref<64xf32>, %out: memref<64xf32>) kernel {
      %tid = gpu.thread_id x
      %c0 = arith.constant 0 : index
      %c63 = arith.constant 63 : index
      %bytes = gpu.dynamic_shared_memory : memref<?xi8, #gpu.address_space<workgroup>>
      %tile = memref.view %bytes[%c0][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<64xf32, #gpu.address_space<workgroup>>
      %x = memref.load %in[%tid] : memref<64xf32>
      memref.store %x, %tile[%tid] : memref<64xf32, #gpu.address_space<workgroup>>
      gpu.barrier
      %mirror = arith.subi %c63, %tid : index
      %y = memref.load %tile[%mirror] : memref<64xf32, #gpu.address_space<workgroup>>
      memref.store %y, %out[%tid] : memref<64xf32>
      gpu.return
    }
  }

  func.func @run(%shared_bytes: i32) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c64 = arith.constant 64 : index
    %in = memref.alloc() {alignment = 256 : i64} : memref<64xf32>
    %out = memref.alloc() {alignment = 256 : i64} : memref<64xf32>
    scf.for %i = %c0 to %c64 step %c1 {
      %i32 = arith.index_cast %i : index to i32
      %value = arith.sitofp %i32 : i32 to f32
      memref.store %value, %in[%i] : memref<64xf32>
    }
    gpu.launch_func @kernels::@reverse blocks in (%c1, %c1, %c1) threads in (%c64, %c1, %c1)
        dynamic_shared_memory_size %shared_bytes
        args(%in : memref<64xf32>, %out : memref<64xf32>)
    %unranked = memref.cast %out : memref<64xf32> to memref<*xf32>
    call @printMemrefF32(%unranked) : (memref<*xf32>) -> ()
    return
  }
  func.func @enough() {
    %bytes = arith.constant 256 : i32
    call @run(%bytes) : (i32) -> ()
    return
  }
  func.func @too_small() {
    %bytes = arith.constant 128 : i32
    call @run(%bytes) : (i32) -> ()
    return
  }
  func.func private @printMemrefF32(memref<*xf32>)
}
