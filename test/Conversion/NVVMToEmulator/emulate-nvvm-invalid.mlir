// RUN: kvcache-opt %s -kvcache-emulate-nvvm -split-input-file -verify-diagnostics

// What the GPU emulator does not model is a compile-time error, never a
// silent no-op.

module attributes {gpu.container_module} {
  gpu.module @kernels {
    llvm.func @kernel() attributes {gpu.kernel, nvvm.kernel} {
      // expected-error @below {{'nvvm.read.ptx.sreg.clock' op reads a special register the GPU emulator does not model}}
      %clock = nvvm.read.ptx.sreg.clock : i32
      llvm.return
    }
  }
}

// -----

module attributes {gpu.container_module} {
  gpu.module @kernels {
    llvm.func @kernel() attributes {gpu.kernel, nvvm.kernel} {
      // expected-error @below {{'nvvm.fence.sc.cluster' op is not modelled by the GPU emulator}}
      nvvm.fence.sc.cluster
      llvm.return
    }
  }
}

// -----

module attributes {gpu.container_module} {
  gpu.module @kernels {
    llvm.func @kernel(%x: f32) attributes {gpu.kernel, nvvm.kernel} {
      // expected-error @below {{calls 'llvm.nvvm.sin.approx.f', which the GPU emulator does not model}}
      %y = llvm.call_intrinsic "llvm.nvvm.sin.approx.f"(%x) : (f32) -> f32
      llvm.return
    }
  }
}

// -----

module attributes {gpu.container_module} {
  gpu.module @kernels {
    llvm.func @kernel(%x: i32) attributes {gpu.kernel, nvvm.kernel} {
      // expected-error @below {{(inline assembly) is not modelled by the GPU emulator}}
      %y = llvm.inline_asm "mov.u32 $0, $1;", "=r,r" %x : (i32) -> i32
      llvm.return
    }
  }
}

// -----

module attributes {gpu.container_module} {
  gpu.module @kernels {
    // expected-error @below {{'helper' has no body and is not modelled by the GPU emulator: calls of it cannot be emulated}}
    llvm.func @helper(i32)
    llvm.func @kernel(%x: i32) attributes {gpu.kernel, nvvm.kernel} {
      llvm.call @helper(%x) : (i32) -> ()
      llvm.return
    }
  }
}

// -----

module attributes {gpu.container_module} {
  gpu.module @kernels {
    llvm.func @kernel() attributes {gpu.kernel, nvvm.kernel} {
      %c0 = llvm.mlir.constant(0 : i32) : i32
      %c64 = llvm.mlir.constant(64 : i32) : i32
      // expected-error @below {{(a partial or reducing barrier) is not modelled by the GPU emulator}}
      nvvm.barrier id = %c0 number_of_threads = %c64
      llvm.return
    }
  }
}

// -----

module attributes {gpu.container_module} {
  gpu.module @kernels {
    // expected-error @below {{shared memory with an initial value is not supported by the GPU emulator}}
    llvm.mlir.global internal @table(dense<1.0> : tensor<4xf32>) {addr_space = 3 : i32} : !llvm.array<4 x f32>
  }
}

// -----

// Host code must already be in the LLVM dialect.
module attributes {gpu.container_module} {
  gpu.module @kernels {
    llvm.func @kernel(%x: i32) attributes {gpu.kernel, nvvm.kernel} {
      llvm.return
    }
  }
  func.func @host(%x: i32) {
    %c1 = arith.constant 1 : index
    // expected-error @below {{has operands that are not LLVM values yet: lower the host code to the LLVM dialect (gpu-to-llvm) before kvcache-emulate-nvvm}}
    gpu.launch_func @kernels::@kernel blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%x : i32)
    return
  }
}

// -----

module attributes {gpu.container_module} {
  gpu.module @kernels {
    // expected-error @below {{'gpu.func' op must be lowered to the NVVM/LLVM dialects before kvcache-emulate-nvvm (kvcache-to-emulated-gpu does that)}}
    gpu.func @kernel() kernel {
      gpu.return
    }
  }
}

// -----

// A launch outside an llvm.func has no function entry for its argument slots.
module attributes {gpu.container_module} {
  gpu.module @kernels {
    llvm.func @kernel(%x: i32) attributes {gpu.kernel, nvvm.kernel} {
      llvm.return
    }
  }
  func.func @host(%x: i32) {
    %c1 = llvm.mlir.constant(1 : index) : i64
    // expected-error @below {{must be inside an llvm.func}}
    gpu.launch_func @kernels::@kernel blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) : i64 args(%x : i32)
    return
  }
}

// -----

// An address space NVPTX does not have (here -1, i.e. 4294967295) is an
// error, not an access flag built from it (found by kvcache-fuzz).
module attributes {gpu.container_module} {
  gpu.module @kernels {
    llvm.func @kernel(%p: !llvm.ptr<-1>, %v: vector<3xf32>) attributes {gpu.kernel, nvvm.kernel} {
      // expected-error @below {{'llvm.store' op accesses address space 4294967295, which the GPU emulator does not model (0 generic, 1 global, 3 shared, 4 constant, 5 local)}}
      llvm.store %v, %p : vector<3xf32>, !llvm.ptr<-1>
      llvm.return
    }
  }
}

// -----

module attributes {gpu.container_module} {
  gpu.module @kernels {
    llvm.func @kernel(%p: !llvm.ptr<7>) attributes {gpu.kernel, nvvm.kernel} {
      // expected-error @below {{'llvm.load' op accesses address space 7, which the GPU emulator does not model}}
      %x = llvm.load %p : !llvm.ptr<7> -> f32
      llvm.return
    }
  }
}

// -----

// Warp-collective matrix ops the emulator does not model: other ldmatrix
// shapes and element types, other mma.sync shapes and multiplicand types.
module attributes {gpu.container_module} {
  gpu.module @kernels {
    llvm.func @kernel(%p: !llvm.ptr<3>) attributes {gpu.kernel, nvvm.kernel} {
      // expected-error @below {{'nvvm.ldmatrix' op (shape m16n16, b8, 2 matrices) is not modelled by the GPU emulator: it models m8n8 b16 with 1, 2 or 4 matrices}}
      %l = nvvm.ldmatrix %p {num = 2 : i32, layout = #nvvm.mma_layout<col>, shape = #nvvm.ld_st_matrix_shape<m = 16, n = 16>, eltType = #nvvm.ld_st_matrix_elt_type<b8>} : (!llvm.ptr<3>) -> !llvm.struct<(i32, i32, i32, i32)>
      llvm.return
    }
  }
}

// -----

module attributes {gpu.container_module} {
  gpu.module @kernels {
    llvm.func @kernel(%a: vector<2xf16>, %c: vector<2xf16>) attributes {gpu.kernel, nvvm.kernel} {
      // expected-error @below {{'nvvm.mma.sync' op (m8n8k4 row.col f16, f16 accumulator) is not modelled by the GPU emulator: it models m16n8k16 and m16n8k8 row.col with f16 or bf16 multiplicands and f16 or f32 accumulators (bf16: f32)}}
      %d = nvvm.mma.sync A[%a, %a] B[%a, %a] C[%c, %c, %c, %c] {layoutA = #nvvm.mma_layout<row>, layoutB = #nvvm.mma_layout<col>, shape = #nvvm.shape<m = 8, n = 8, k = 4>} : (vector<2xf16>, vector<2xf16>, vector<2xf16>) -> !llvm.struct<(vector<2xf16>, vector<2xf16>, vector<2xf16>, vector<2xf16>)>
      llvm.return
    }
  }
}

// -----

module attributes {gpu.container_module} {
  gpu.module @kernels {
    llvm.func @kernel(%a: i32, %c: i32) attributes {gpu.kernel, nvvm.kernel} {
      // expected-error @below {{'nvvm.mma.sync' op (m16n8k32 row.col s8, s32 accumulator) is not modelled by the GPU emulator}}
      %d = nvvm.mma.sync A[%a, %a, %a, %a] B[%a, %a] C[%c, %c, %c, %c] {layoutA = #nvvm.mma_layout<row>, layoutB = #nvvm.mma_layout<col>, multiplicandAPtxType = #nvvm.mma_type<s8>, multiplicandBPtxType = #nvvm.mma_type<s8>, intOverflowBehavior = #nvvm.mma_int_overflow<satfinite>, shape = #nvvm.shape<m = 16, n = 8, k = 32>} : (i32, i32, i32) -> !llvm.struct<(i32, i32, i32, i32)>
      llvm.return
    }
  }
}

// -----

module attributes {gpu.container_module} {
  gpu.module @kernels {
    llvm.func @kernel(%a: i32, %c: f32) attributes {gpu.kernel, nvvm.kernel} {
      // expected-error @below {{'nvvm.mma.sync' op (m16n8k8 row.col tf32, f32 accumulator) is not modelled by the GPU emulator}}
      %d = nvvm.mma.sync A[%a, %a, %a, %a] B[%a, %a] C[%c, %c, %c, %c] {layoutA = #nvvm.mma_layout<row>, layoutB = #nvvm.mma_layout<col>, multiplicandAPtxType = #nvvm.mma_type<tf32>, multiplicandBPtxType = #nvvm.mma_type<tf32>, shape = #nvvm.shape<m = 16, n = 8, k = 8>} : (i32, i32, f32) -> !llvm.struct<(f32, f32, f32, f32)>
      llvm.return
    }
  }
}

// -----

module attributes {gpu.container_module} {
  gpu.module @kernels {
    llvm.func @kernel(%p: !llvm.ptr<3>, %r: i32) attributes {gpu.kernel, nvvm.kernel} {
      // expected-error @below {{'nvvm.stmatrix' op is not modelled by the GPU emulator}}
      nvvm.stmatrix %p, %r {layout = #nvvm.mma_layout<row>, shape = #nvvm.ld_st_matrix_shape<m = 8, n = 8>, eltType = #nvvm.ld_st_matrix_elt_type<b16>} : !llvm.ptr<3>, i32
      llvm.return
    }
  }
}

// -----

// fp8 conversions: only what kernels use (rn, satfinite, no relu; E4M3FN
// and E5M2) is modelled.
module attributes {gpu.container_module} {
  gpu.module @kernels {
    llvm.func @kernel(%a: f32, %b: f32) attributes {gpu.kernel, nvvm.kernel} {
      // expected-error @below {{'nvvm.convert.f32x2.to.f8x2' op is not modelled by the GPU emulator: it models the conversion to f8E4M3FN or f8E5M2 with rnd = rn, sat = satfinite and no relu}}
      %r = nvvm.convert.f32x2.to.f8x2 %a, %b {relu = true, rnd = #nvvm.fp_rnd_mode<rn>, sat = #nvvm.sat_mode<satfinite>} : i16 (f8E4M3FN)
      llvm.return
    }
  }
}

// -----

module attributes {gpu.container_module} {
  gpu.module @kernels {
    llvm.func @kernel(%a: vector<2xi8>) attributes {gpu.kernel, nvvm.kernel} {
      // expected-error @below {{'nvvm.convert.f8x2.to.f16x2' op is not modelled by the GPU emulator: it models the conversion from f8E4M3FN or f8E5M2 without relu}}
      %r = nvvm.convert.f8x2.to.f16x2 %a {relu = true} : vector<2xi8> (f8E5M2) -> vector<2xf16>
      llvm.return
    }
  }
}
