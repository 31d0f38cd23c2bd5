// RUN: env -u CUDA_ROOT -u CUDA_PATH CUDA_HOME=%t.none kvcache-opt %s -split-input-file -verify-diagnostics --pass-pipeline='builtin.module(gpu.module(kvcache-check-libdevice))'
// RUN: rm -rf %t.toolkit && mkdir -p %t.toolkit/nvvm/libdevice && touch %t.toolkit/nvvm/libdevice/libdevice.10.bc
// RUN: env -u CUDA_ROOT -u CUDA_PATH CUDA_HOME=%t.toolkit kvcache-opt %s -split-input-file --pass-pipeline='builtin.module(gpu.module(kvcache-check-libdevice))' | FileCheck %s --check-prefix=FOUND
// RUN: env -u CUDA_ROOT -u CUDA_PATH CUDA_HOME=%t.none kvcache-opt %s -split-input-file --pass-pipeline='builtin.module(gpu.module(kvcache-check-libdevice{toolkit=%t.toolkit}))' | FileCheck %s --check-prefix=FOUND

// A call of a libdevice function where the toolkit CUDA_HOME names has no
// libdevice is an error at the call (the math op it came from); with a
// toolkit that has one (the environment's or the `toolkit` option's), or
// with no __nv_ call, the module passes unchanged.

// FOUND-LABEL: gpu.module @sin
// FOUND: llvm.call @__nv_sinf
gpu.module @sin {
  llvm.func @__nv_sinf(f32) -> f32
  llvm.func @kernel(%x: f32) -> f32 {
    // expected-error @+1 {{this op became a call of the libdevice function '__nv_sinf', and '}}
    %y = llvm.call @__nv_sinf(%x) : (f32) -> f32
    llvm.return %y : f32
  }
}

// -----

// Only the first call is reported.
// FOUND-LABEL: gpu.module @two
gpu.module @two {
  llvm.func @__nv_cosf(f32) -> f32
  llvm.func @kernel(%x: f32) -> f32 {
    // expected-error @+1 {{'__nv_cosf'}}
    %y = llvm.call @__nv_cosf(%x) : (f32) -> f32
    %z = llvm.call @__nv_cosf(%y) : (f32) -> f32
    llvm.return %z : f32
  }
}

// -----

// Calls of other functions need no libdevice.
// FOUND-LABEL: gpu.module @other
gpu.module @other {
  llvm.func @helper(f32) -> f32
  llvm.func @kernel(%x: f32) -> f32 {
    %y = llvm.call @helper(%x) : (f32) -> f32
    llvm.return %y : f32
  }
}

// -----

// A target that links the user's own bitcode is not checked.
// FOUND-LABEL: gpu.module @linked
gpu.module @linked [#nvvm.target<link = ["mylib.bc"]>] {
  llvm.func @__nv_sinf(f32) -> f32
  llvm.func @kernel(%x: f32) -> f32 {
    %y = llvm.call @__nv_sinf(%x) : (f32) -> f32
    llvm.return %y : f32
  }
}
