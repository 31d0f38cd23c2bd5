// RUN: kvcache-opt %s -kvcache-to-ptx | FileCheck %s --check-prefix=OFF
// RUN: kvcache-opt %s -kvcache-to-ptx=linalg-to-gpu=true | FileCheck %s --check-prefix=HOST
// RUN: kvcache-compile %s --linalg-to-gpu -o %t.ptx
// RUN: FileCheck %s --input-file=%t.ptx --check-prefix=PTX
// RUN: kvcache-opt %s -kvcache-to-emulated-gpu=linalg-to-gpu=true -o %t.emu.mlir
// RUN: %emu_run %t.emu.mlir -e main | FileCheck %s --check-prefix=OUT

// The pipelines' option linalg-to-gpu: the linalg ops of a tensor-level
// program (a fill, a matmul and a generic in @mm; the generics that make
// main's inputs) become GPU kernels: parallel loops tiled 16 x 16, tiles on
// blocks, elements on threads (the matmul's reduction a loop in each
// thread); bufferization's buffers are gpu.alloc (mgpuMemAlloc under
// kvcache-to-ptx). Without the option the linalg ops stay host code.
// linalg-to-gpu-ptxas.test assembles the PTX.

// OFF-NOT: gpu.binary
// OFF-NOT: gpu.launch_func
// OFF-NOT: mgpuMemAlloc

// HOST-LABEL: llvm.func @mm(
// HOST: llvm.call @mgpuMemAlloc
// HOST: gpu.launch_func @mm_kernel::@mm_kernel blocks
// HOST: gpu.launch_func @mm_kernel::@mm_kernel_0 blocks
// HOST: gpu.launch_func @mm_kernel::@mm_kernel_1 blocks
// HOST-NOT: gpu.launch_func
// HOST: gpu.binary @mm_kernel
// HOST-NOT: gpu.binary
// HOST-LABEL: llvm.func @main(
// HOST: gpu.launch_func @mm_kernel::@main_kernel blocks
// HOST: gpu.launch_func @mm_kernel::@main_kernel_0 blocks

// The fill, the matmul (a thread's loop over k: a multiply and an add per
// step), the generic, then main's two generics.
// PTX: .visible .entry mm_kernel(
// PTX: .visible .entry mm_kernel_0(
// PTX: mov.u32 {{.*}}%ctaid.x
// PTX: mov.u32 {{.*}}%tid.x
// PTX: mul.rn.f32
// PTX-NEXT: add.rn.f32
// PTX: .visible .entry mm_kernel_1(
// PTX: .visible .entry main_kernel(
// PTX: .visible .entry main_kernel_0(

#id = affine_map<(i, j) -> (i, j)>

// relu(a @ b) + 1 into `out`.
func.func @mm(%a: tensor<?x?xf32>, %b: tensor<?x?xf32>, %out: tensor<?x?xf32>)
    -> tensor<?x?xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : f32
  %m = tensor.dim %a, %c0 : tensor<?x?xf32>
  %n = tensor.dim %b, %c1 : tensor<?x?xf32>
  %init = tensor.empty(%m, %n) : tensor<?x?xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%init : tensor<?x?xf32>) -> tensor<?x?xf32>
  %p = linalg.matmul ins(%a, %b : tensor<?x?xf32>, tensor<?x?xf32>)
                     outs(%acc : tensor<?x?xf32>) -> tensor<?x?xf32>
  %r = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%p : tensor<?x?xf32>) outs(%out : tensor<?x?xf32>) {
  ^bb0(%x: f32, %unused: f32):
    %relu = arith.maximumf %x, %zero : f32
    %y = arith.addf %relu, %one : f32
    linalg.yield %y : f32
  } -> tensor<?x?xf32>
  return %r : tensor<?x?xf32>
}

// a[i, k] = i + k (20 x 3), b[k, j] = j - k (3 x 18): (a @ b)[i, j] =
// 3ij - 3i + 3j - 5 (numpy agrees). Prints out[0, 0] (relu(-5) + 1),
// out[19, 17], out[3, 5] and the sum of every element (partial tiles: 20
// rows, 18 columns).
// OUT: 1
// OUT-NEXT: 959
// OUT-NEXT: 47
// OUT-NEXT: 85400
func.func @main() {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %c5 = arith.constant 5 : index
  %c17 = arith.constant 17 : index
  %c18 = arith.constant 18 : index
  %c19 = arith.constant 19 : index
  %c20 = arith.constant 20 : index
  %zero = arith.constant 0.0 : f32
  %a_empty = tensor.empty() : tensor<20x3xf32>
  %a = linalg.generic {indexing_maps = [#id], iterator_types = ["parallel", "parallel"]}
      outs(%a_empty : tensor<20x3xf32>) {
  ^bb0(%unused: f32):
    %i = linalg.index 0 : index
    %k = linalg.index 1 : index
    %s = arith.addi %i, %k : index
    %s_i = arith.index_cast %s : index to i32
    %v = arith.sitofp %s_i : i32 to f32
    linalg.yield %v : f32
  } -> tensor<20x3xf32>
  %b_empty = tensor.empty() : tensor<3x18xf32>
  %b = linalg.generic {indexing_maps = [#id], iterator_types = ["parallel", "parallel"]}
      outs(%b_empty : tensor<3x18xf32>) {
  ^bb0(%unused: f32):
    %k = linalg.index 0 : index
    %j = linalg.index 1 : index
    %d = arith.subi %j, %k : index
    %d_i = arith.index_cast %d : index to i32
    %v = arith.sitofp %d_i : i32 to f32
    linalg.yield %v : f32
  } -> tensor<3x18xf32>
  %a_d = tensor.cast %a : tensor<20x3xf32> to tensor<?x?xf32>
  %b_d = tensor.cast %b : tensor<3x18xf32> to tensor<?x?xf32>
  %out_init = tensor.empty(%c20, %c18) : tensor<?x?xf32>
  %out = func.call @mm(%a_d, %b_d, %out_init)
      : (tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>) -> tensor<?x?xf32>
  %buffer = bufferization.to_buffer %out : tensor<?x?xf32> to memref<?x?xf32>
  %first = memref.load %buffer[%c0, %c0] : memref<?x?xf32>
  %last = memref.load %buffer[%c19, %c17] : memref<?x?xf32>
  %inner = memref.load %buffer[%c3, %c5] : memref<?x?xf32>
  %sum = scf.for %i = %c0 to %c20 step %c1 iter_args(%s = %zero) -> f32 {
    %row = scf.for %j = %c0 to %c18 step %c1 iter_args(%t = %s) -> f32 {
      %v = memref.load %buffer[%i, %j] : memref<?x?xf32>
      %next = arith.addf %t, %v : f32
      scf.yield %next : f32
    }
    scf.yield %row : f32
  }
  vector.print %first : f32
  vector.print %last : f32
  vector.print %inner : f32
  vector.print %sum : f32
  return
}
