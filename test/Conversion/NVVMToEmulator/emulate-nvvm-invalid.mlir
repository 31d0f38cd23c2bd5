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
