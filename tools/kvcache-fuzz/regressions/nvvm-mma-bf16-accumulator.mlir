// nvvm.mma.sync with bf16 C operands: MLIR 22's MmaOp::verify throws std::bad_optional_access (accumulator type not inferable; kvcache-fuzz skips it, see hasKnownUpstreamVerifierBug).
module attributes {gpu.container_module} {
  gpu.module @kernels {
    llvm.func @kernel(%a: i32, %c: bf16) attributes {gpu.kernel, nvvm.kernel} {
      %d = nvvm.mma.sync A[%a, %a, %a, %a] B[%a, %a] C[%c, %c, %c, %c] {layoutA = #nvvm.mma_layout<row>, layoutB = #nvvm.mma_layout<col>, multiplicandAPtxType = #nvvm.mma_type<tf32>, multiplicandBPtxType = #nvvm.mma_type<tf32>, shape = #nvvm.shape<m = 16, n = 8, k = 8>} : (i32, i32, bf16) -> !llvm.struct<(bf16, bf16, bf16, bf16)>
      llvm.return
    }
  }
}
