// RUN: kvcache-opt %s -kvcache-emulate-nvvm -split-input-file -verify-diagnostics

// Every runtime call has the type of its C declaration in EmulatorABI.h: a
// device function, an intrinsic or a host declaration that disagrees with
// it is a compile-time error, not a call with another ABI (nor a verifier
// failure after the pass).

module attributes {gpu.container_module} {
  gpu.module @kernels {
    // expected-error @below {{'__nv_expf' is declared as '!llvm.func<f64 (f64)>', but the GPU emulator runtime's '__kvemu_nv_expf' is '!llvm.func<f32 (f32)>'}}
    llvm.func @__nv_expf(f64) -> f64
    llvm.func @kernel(%x: f64) attributes {gpu.kernel, nvvm.kernel} {
      %y = llvm.call @__nv_expf(%x) : (f64) -> f64
      llvm.return
    }
  }
}

// -----

module attributes {gpu.container_module} {
  gpu.module @kernels {
    llvm.func @kernel(%x: f64) attributes {gpu.kernel, nvvm.kernel} {
      // expected-error @below {{'llvm.call_intrinsic' op calls 'llvm.nvvm.ex2.approx.f32' as '!llvm.func<f64 (f64)>', but the GPU emulator runtime's '__kvemu_ex2_approx_f32' is '!llvm.func<f32 (f32)>'}}
      %y = llvm.call_intrinsic "llvm.nvvm.ex2.approx.f32"(%x) : (f64) -> f64
      llvm.return
    }
  }
}

// -----

// The result counts too.
module attributes {gpu.container_module} {
  gpu.module @kernels {
    llvm.func @kernel(%x: f32) attributes {gpu.kernel, nvvm.kernel} {
      // expected-error @below {{calls 'llvm.nvvm.fmax.f' as '!llvm.func<void (f32, f32)>', but the GPU emulator runtime's '__kvemu_fmax_f' is '!llvm.func<f32 (f32, f32)>'}}
      llvm.call_intrinsic "llvm.nvvm.fmax.f"(%x, %x) : (f32, f32) -> ()
      llvm.return
    }
  }
}

// -----

module attributes {gpu.container_module} {
  llvm.func @__kvemu_sreg(i64) -> i64
  gpu.module @kernels {
    llvm.func @kernel() attributes {gpu.kernel, nvvm.kernel} {
      // expected-error @below {{'nvvm.read.ptx.sreg.tid.x' op needs the GPU emulator runtime's '__kvemu_sreg' of type '!llvm.func<i32 (i32)>', but the host module defines that symbol otherwise}}
      %tid = nvvm.read.ptx.sreg.tid.x : i32
      llvm.return
    }
  }
}

// -----

// A modelled register read with another result type than the runtime's i32.
module attributes {gpu.container_module} {
  gpu.module @kernels {
    llvm.func @kernel() attributes {gpu.kernel, nvvm.kernel} {
      // expected-error @below {{'nvvm.read.ptx.sreg.tid.x' op reads a special register the GPU emulator does not model}}
      %tid = nvvm.read.ptx.sreg.tid.x : i64
      llvm.return
    }
  }
}

// -----

module attributes {gpu.container_module} {
  gpu.module @kernels {
    llvm.func @kernel(%p: !llvm.ptr, %q: !llvm.ptr, %n: i64) attributes {gpu.kernel, nvvm.kernel} {
      // expected-error @below {{'llvm.intr.memmove' op is not supported by the GPU emulator}}
      "llvm.intr.memmove"(%p, %q, %n) <{isVolatile = false}> : (!llvm.ptr, !llvm.ptr, i64) -> ()
      llvm.return
    }
  }
}
