// nvvm.mma.sync with n = 2147483647: MLIR 22's MmaOp::verify allocates 4.3 GB before rejecting the shape (kvcache-fuzz skips it, see hasKnownUpstreamVerifierBug).
module attributes {gpu.container_module} {
  gpu.module @kernels {
    llvm.func @kernel(%a: i32, %c: i32) attributes {gpu.kernel, nvvm.kernel} {
      %d = nvvm.mma.sync A[%a, %a, %a, %a] B[%a, %a] C[%c, %c, %c, %c] {layoutA = #nvvm.mma_layout<row>, layoutB = #nvvm.mma_layout<col>, multiplicandAPtxType = #nvvm.mma_type<s8>, multiplicandBPtxType = #nvvm.mma_type<s8>, intOverflowBehavior = #nvvm.mma_int_overflow<satfinite>, shape = #nvvm.shape<m = 16, n = 2147483647, k = 32>} : (i32, i32, i32) -> !llvm.struct<(i32, i32, i32, i32)>
      llvm.return
    }
  }
}
