// nvvm.mma.sync in the generic form without multiplicandAPtxType: MLIR 22's MmaOp::verify throws std::bad_optional_access (kvcache-fuzz skips it, see hasKnownUpstreamVerifierBug).
llvm.func @f(%w: i32, %x: f32) -> !llvm.struct<(f32, f32, f32, f32)> {
  %d = "nvvm.mma.sync"(%w, %w, %w, %x, %x, %x, %x) <{layoutA = #nvvm.mma_layout<row>, layoutB = #nvvm.mma_layout<col>, shape = #nvvm.shape<m = 16, n = 8, k = 8>, operandSegmentSizes = array<i32: 2, 1, 4>}> : (i32, i32, i32, f32, f32, f32, f32) -> !llvm.struct<(f32, f32, f32, f32)>
  llvm.return %d : !llvm.struct<(f32, f32, f32, f32)>
}
