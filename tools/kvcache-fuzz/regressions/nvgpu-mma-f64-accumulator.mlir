// nvgpu.mma.sync of f16 with f64 accumulators: it verifies, but convert-nvgpu-to-nvvm makes an nvvm.mma.sync that does not (upstream's bug; kvcache-fuzz now runs the passes of the GPU pipelines' gpu.module(...) one at a time, so this one is upstream's step, not ours).
module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @multiply(%fa: vector<4x2xf16>, %fb: vector<2x2xf16>, %out: memref<2xf64>) kernel {
      %c0 = arith.constant 0 : index
      %zero = arith.constant dense<0.0> : vector<2x2xf64>
      %d = nvgpu.mma.sync(%fa, %fb, %zero) {mmaShape = [16, 8, 16]} : (vector<4x2xf16>, vector<2x2xf16>, vector<2x2xf64>) -> vector<2x2xf64>
      %top = vector.extract %d[0] : vector<2xf64> from vector<2x2xf64>
      vector.store %top, %out[%c0] : memref<2xf64>, vector<2xf64>
      gpu.return
    }
  }
}
