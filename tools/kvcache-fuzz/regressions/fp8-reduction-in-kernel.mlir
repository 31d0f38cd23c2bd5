// vector.reduction on f8E5M2 in a kernel: convert-gpu-to-nvvm made llvm.intr.vector.reduce.fadd on i8 (IR that does not verify) inside the GPU pipelines' gpu.module(...) step; kvcache-lower-gpu-math now rejects arithmetic on floats of 8 bits or fewer.
module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @sum(%in: memref<4xf8E5M2>, %out: memref<1xf8E5M2>) kernel {
      %c0 = arith.constant 0 : index
      %v = vector.load %in[%c0] : memref<4xf8E5M2>, vector<4xf8E5M2>
      %s = vector.reduction <add>, %v : vector<4xf8E5M2> into f8E5M2
      memref.store %s, %out[%c0] : memref<1xf8E5M2>
      gpu.return
    }
  }
}
