//===- Passes.td - kvcache dialect transforms --------------*- tablegen -*-===//
//
// Part of the kvcache-mlir project.
//
//===----------------------------------------------------------------------===//

#ifndef KVCACHE_TRANSFORMS_PASSES_TD
#define KVCACHE_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def KVCacheExpandAccesses : Pass<"kvcache-expand-accesses"> {
  let summary = "Split load/store into lookup + page_load/page_store";
  let description = [{
    Rewrites every `kvcache.load` into `kvcache.lookup` + `kvcache.page_load`
    and every `kvcache.store` into `kvcache.lookup` + `kvcache.page_store`;
    likewise `kvcache.load_scale` / `kvcache.store_scale` (quantized caches)
    into `kvcache.lookup` + `kvcache.page_load_scale` /
    `kvcache.page_store_scale`.
    Lookups are pure while they are `kvcache` ops, so `cse` and
    loop-invariant code motion then share one lookup-table read per token
    when a loop walks `head_size` or the heads. Once lowered, a lookup-table
    `memref.load` next to stores into `blocks` can no longer be moved:
    nothing proves the two memrefs do not alias.

    Before:
    ```mlir
    %x = kvcache.load %k[%b, %h, %t, %d] : !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16> -> vector<8xf16>
    ```
    After:
    ```mlir
    %page, %slot = kvcache.lookup %k[%b, %t] : !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>
    %x = kvcache.page_load %k[%page, %slot, %h, %d] : !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16> -> vector<8xf16>
    ```
  }];
}

def KVCacheGenerateArgumentChecks
    : Pass<"kvcache-generate-argument-checks", "::mlir::ModuleOp"> {
  let summary = "Check the operands of kernel ops against each other at run "
                "time: a check routine per function, and checked mode";
  let description = [{
    For every public `func.func @F` with a body that contains kernel ops,
    adds the public function

    ```mlir
    func.func @kvcache_check_F(<F's arguments>, %message: memref<?xi8>) -> i32
    ```

    (with `llvm.emit_c_interface` when `F` has it). It checks the rules of
    docs/Contract.md section 5.1 (`ArgumentChecksOpInterface`) for the
    kernel ops of F's entry block that no other write precedes and whose
    operands come from F's arguments through side-effect-free ops (cloned
    into the routine, their own checks first: a layer index, a quantized
    collection's scales), and returns 0, or 1 with the message of the first
    failed rule (function, op, location, operand, both extents) in
    `message`, NUL-terminated and truncated to its size. It writes nothing
    else.

    With `checked=true`, F also calls its routine at entry, and every other
    op with `ArgumentChecksOpInterface` is checked in place (as early as its
    operands allow, above kernel ops that precede it), so that a failing
    call writes nothing. A failure prints the message to stderr and aborts,
    or, in capture mode, records it and returns from F (with poison results;
    a function returning a cache value prints and aborts in capture mode
    too). The module gets the public functions `kvcache_check_capture(i32)`
    (1: capture mode on, 0: off; both clear the recorded message) and
    `kvcache_check_failure() -> !llvm.ptr` (the recorded message, "" when
    none); their names and those of the private helpers are reserved. The
    pipelines run this pass first: kvcache-to-cpu and
    kvcache-to-emulated-gpu with their `checked`, kvcache-to-ptx without
    (the host cannot read device memory).

    Before:
    ```mlir
    func.func @step(%k: !cache, %new: memref<?x8x128xf16>, %offsets: memref<?xi32>) {
      kvcache.store_ragged %k, %new, %offsets : !cache, memref<?x8x128xf16>, memref<?xi32>
      return
    }
    ```
    After (the routine only, unchecked):
    ```mlir
    func.func @kvcache_check_step(%k: !cache, %new: memref<?x8x128xf16>, %offsets: memref<?xi32>, %message: memref<?xi8>) -> i32 {
      // the offsets, the rows of %new, the sequences of %k and the pages
      // the op writes, each failure formatted into %message by snprintf
      ...
    }
    ```
  }];
  let options = [
    Option<"checked", "checked", "bool", /*default=*/"false",
           "Also check at run time in the functions themselves (checked "
           "mode): F calls its check routine at entry and checks every "
           "other op with argument checks in place">,
  ];
  let dependentDialects = [
    "::mlir::LLVM::LLVMDialect", "::mlir::arith::ArithDialect",
    "::mlir::func::FuncDialect", "::mlir::memref::MemRefDialect",
    "::mlir::scf::SCFDialect", "::mlir::ub::UBDialect",
  ];
}

def KVCacheMergeGPUModules
    : Pass<"kvcache-merge-gpu-modules", "::mlir::ModuleOp"> {
  let summary = "Merge every gpu.module into the first one";
  let description = [{
    Moves the symbols of every `gpu.module` into the first one and updates
    the `gpu.launch_func` ops that name them, so that serialization produces
    one `gpu.binary` (one PTX file) holding every kernel. Definitions whose
    names are already taken are renamed (`name_0`, `name_1`, ...); duplicate
    declarations are dropped. `kvcache-to-ptx` runs it after kernel
    outlining, which creates one `gpu.module` per launch.
  }];
  let dependentDialects = ["::mlir::gpu::GPUDialect"];
}

def KVCacheBufferize : Pass<"kvcache-bufferize", "::mlir::ModuleOp"> {
  let summary = "Bufferize a tensor-level module: one-shot-bufferize with "
                "identity layouts at function boundaries, then drop the "
                "results that return an argument";
  let description = [{
    The first step of the pipelines (docs/Contract.md section 3.5). A module
    with no value of a tensor type is left as it is. Otherwise it runs
    one-shot-bufferize with `bufferize-function-boundaries` and
    `function-boundary-type-conversion=identity-layout-map` (the kernel
    ops' verifiers need identity layouts); a value whose bufferization
    fails is an error. Then every function with a body, public or private,
    loses each result that all its returns give as the same argument of its
    entry block (a destination-style function: its tensor results were its
    init arguments), and calls of it in the module use that operand
    instead: a caller supplies the outputs, as for the memref form.

    Before (after one-shot-bufferize):
    ```mlir
    func.func @attend(%q: memref<?x32x128xf16>, ..., %out: memref<?x32x128xf16>) -> memref<?x32x128xf16> {
      kvcache.attention_ragged %q, %k, %v, %offsets, %out {scale = 0.0883883 : f32} : ...
      return %out : memref<?x32x128xf16>
    }
    ```
    After:
    ```mlir
    func.func @attend(%q: memref<?x32x128xf16>, ..., %out: memref<?x32x128xf16>) {
      kvcache.attention_ragged %q, %k, %v, %offsets, %out {scale = 0.0883883 : f32} : ...
      return
    }
    ```

    With `gpu-alloc`, the buffers bufferization creates (`tensor.empty`,
    copies) are `gpu.alloc` and its copies `gpu.memcpy`: device memory, for
    a program whose every access to them runs on the GPU
    (`kvcache-to-ptx{linalg-to-gpu=true}`).

    With `dealloc` (the default), the buffers bufferization creates are
    freed: every function with a body in which bufferization allocated and
    that frees no memory itself (no op with a free effect, such as a
    hand-written `memref.dealloc`) gets upstream's ownership-based
    deallocation (`ownership-based-buffer-deallocation`, then
    `buffer-deallocation-simplification` and
    `bufferization-lower-deallocations`, on those functions only). Its
    function boundary ABI holds: a function never frees its arguments, and
    its caller owns the buffers it returns. A function that frees memory
    itself is left as it is, with a warning if bufferization allocated in
    it: those buffers are not freed (ownership-based deallocation rejects
    such functions). With `gpu-alloc`, the `memref.dealloc` of a
    `gpu.alloc`'d buffer becomes a `gpu.dealloc`; a deallocation that may
    free or copy device memory on the host (a buffer not traced to its
    allocation, a `bufferization.clone`) is an error.

    First, every `shard.grid` of the module that no op uses goes: what
    `shard-partition` leaves of a head-sharded module (docs/Contract.md
    section 3.7), whose per-device functions use none, and which no
    lowering takes; the partitioned module so lowers as it is. A grid that
    an op still uses (a collective of the shard dialect not lowered yet) is
    an error: run `convert-shard-to-mpi` first.
  }];
  let options = [
    Option<"gpuAlloc", "gpu-alloc", "bool", /*default=*/"false",
           "Allocate the buffers bufferization creates with gpu.alloc and "
           "copy them with gpu.memcpy instead of host memory">,
    Option<"dealloc", "dealloc", "bool", /*default=*/"true",
           "Free the buffers bufferization creates, in the functions that "
           "free no memory themselves (ownership-based deallocation)">
  ];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::bufferization::BufferizationDialect",
    "::mlir::func::FuncDialect",
    "::mlir::gpu::GPUDialect",
    "::mlir::memref::MemRefDialect",
    "::mlir::scf::SCFDialect"
  ];
}

def KVCacheInlineAllocaScopes : Pass<"kvcache-inline-alloca-scopes"> {
  let summary = "Inline the memref.alloca_scope ops that allocate nothing";
  let description = [{
    Replaces each `memref.alloca_scope` whose body holds no `memref.alloca`
    (outside nested allocation scopes) by its body. `convert-scf-to-openmp`
    wraps every parallel iteration in such a scope, and a scope must stay a
    single block, so `convert-scf-to-cf` cannot lower the loops inside one;
    `kvcache-to-cpu{parallel=true}` runs this pass in between. A scope that
    does allocate is an error: hoist the `memref.alloca` out of the
    `scf.parallel` loop (the kernel ops' loops allocate nothing).

    Before:
    ```mlir
    omp.loop_nest (%i) : index = (%c0) to (%n) step (%c1) {
      memref.alloca_scope {
        scf.for %j = %c0 to %m step %c1 { ... }
      }
      omp.yield
    }
    ```
    After:
    ```mlir
    omp.loop_nest (%i) : index = (%c0) to (%n) step (%c1) {
      scf.for %j = %c0 to %m step %c1 { ... }
      omp.yield
    }
    ```
  }];
  let dependentDialects = ["::mlir::memref::MemRefDialect"];
}

def KVCacheLowerGPUMath
    : Pass<"kvcache-lower-gpu-math", "::mlir::gpu::GPUModuleOp"> {
  let summary = "Lower math ops in GPU kernels to code that needs no libdevice";
  let description = [{
    `convert-gpu-to-nvvm` turns every `math` op of a kernel into a call of
    a libdevice function (`__nv_expf`, even `__nv_fabsf`), which
    `gpu-module-to-binary` links only from the CUDA toolkit that `CUDA_HOME`
    names; without one the calls stay external and ptxas rejects the PTX.
    This pass, which both GPU pipelines run on every `gpu.module` before
    `convert-gpu-to-nvvm`, lowers the common ones without libdevice:
    - exactly, to the LLVM intrinsic that the NVPTX backend selects one
      instruction for: `math.absf`, `ceil`, `floor`, `trunc`, `roundeven`,
      `round`, `fma`, `copysign`, `sqrt` (IEEE `sqrt.rn`); `math.rsqrt` to
      `1 / sqrt` (both correctly rounded);
    - to MLIR's f32 polynomial approximations: `math.exp`, `expm1`, `log`,
      `log2`, `log1p`, `tanh`, `erf`, `erfc` (f16 and bf16 through f32; a few
      f32 ulp; measured by test/python/test_gpu_math.py).

    The other math ops (`sin`, `cos`, `tan`, `powf`, `exp2`, `log10`,
    `atan`, ...) still become libdevice calls and need `CUDA_HOME` for
    `kvcache-to-ptx` (the emulator provides them). No options.

    An op that computes on floats of 8 bits or fewer (`f8E4M3FN`, `f8E5M2`,
    ...) is an error at that op: LLVM has no such float type, and
    `convert-gpu-to-nvvm` would make integer operands of float instructions.
    Arithmetic, math and comparisons count, and so do the `vector` dialect's
    (`reduction`, `contract`, `fma`, ...) and the conversions that
    `kvcache-fp8-to-nvvm`, run before this pass by both GPU pipelines, left
    (it lowers `arith.extf` of `f8E4M3FN` and `f8E5M2` codes to f16 and f32,
    and `arith.truncf` from f32 of values clamped to +-max_finite); moving,
    selecting and bitcasting fp8 values is fine. The message says to
    compute in f16 or f32.

    Before:
    ```mlir
    %r = math.sqrt %x : f32
    ```
    After:
    ```mlir
    %r = llvm.intr.sqrt(%x) : (f32) -> f32
    ```
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::LLVM::LLVMDialect",
    "::mlir::math::MathDialect",
    "::mlir::vector::VectorDialect"
  ];
}

def KVCacheCheckLibdevice
    : Pass<"kvcache-check-libdevice", "::mlir::gpu::GPUModuleOp"> {
  let summary = "Check that libdevice can be linked where a kernel calls it";
  let description = [{
    `gpu-module-to-binary` links libdevice (the `__nv_*` functions that
    `convert-gpu-to-nvvm` calls for the math ops `kvcache-lower-gpu-math`
    leaves, such as `math.sin`) from the CUDA toolkit named by `CUDA_ROOT`,
    `CUDA_HOME` or `CUDA_PATH`. With none of them set it links nothing and
    says nothing, and ptxas later rejects the PTX's external call. This
    pass, which `kvcache-to-ptx` runs on every `gpu.module` right before
    `gpu-module-to-binary`, fails at the first call of a `__nv_` function
    when `nvvm/libdevice/libdevice.10.bc` is not in that toolkit (or in
    `toolkit`, where given), and says what to set. A module whose
    `#nvvm.target` links files of the user's own is not checked; nor is the
    emulated GPU, which provides the `__nv_` functions itself.

    Example diagnostic (at the `math.sin` the call came from):
    ```
    error: this op became a call of the libdevice function '__nv_sinf', and no CUDA toolkit is named to link libdevice from: set CUDA_HOME to a CUDA toolkit that has nvvm/libdevice/libdevice.10.bc (only for PTX: the emulated GPU needs none), or use the math ops that kvcache-lower-gpu-math lowers without libdevice
    ```
  }];
  let options = [
    Option<"toolkit", "toolkit", "std::string", /*default=*/"\"\"",
           "The CUDA toolkit gpu-module-to-binary is given with its "
           "`toolkit` option (default: the one the environment names)">,
  ];
}

def KVCacheCheckRegistrations
    : Pass<"kvcache-check-registrations", "::mlir::ModuleOp"> {
  let summary = "Check that the context has what a GPU pipeline needs";
  let description = [{
    The first pass of `kvcache-to-ptx` and `kvcache-to-emulated-gpu`
    (`pipeline`). It changes nothing; it fails, naming what the context's
    dialect registry lacks and the call that adds it
    (`mlir::kvcache::registerAllDialectsAndPasses`, KVCache/InitAll.h), when
    a later pass of the pipeline would fail far from the cause or crash
    without it:
    - both pipelines: the `ConvertToLLVMPatternInterface` of arith, cf,
      func, math, memref, nvvm, ub and vector, through which
      `convert-gpu-to-nvvm` and `gpu-to-llvm` lower the kernels and the host
      code (without cf's, a kernel's branches stay unconverted: "type
      mismatch for bb argument");
    - `kvcache-to-ptx`: also the NVVM target attribute's
      `gpu::TargetAttrInterface` and the LLVM IR translations of the
      builtin, gpu, llvm and nvvm dialects, which `gpu-module-to-binary`
      serializes kernels with (a crash in `serializeToObject` without
      them).

    Example diagnostic:
    ```
    error: kvcache-to-ptx needs, in the MLIRContext's dialect registry: the ConvertToLLVMPatternInterface of 'cf' (mlir::cf::registerConvertControlFlowToLLVMInterface); ...; call mlir::kvcache::registerAllDialectsAndPasses(registry) (KVCache/InitAll.h) on the registry the context is made with
    ```
  }];
  let options = [
    Option<"pipeline", "pipeline", "std::string", "\"kvcache-to-ptx\"",
           "The pipeline whose needs are checked: kvcache-to-ptx or "
           "kvcache-to-emulated-gpu">,
  ];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::cf::ControlFlowDialect",
    "::mlir::func::FuncDialect",
    "::mlir::gpu::GPUDialect",
    "::mlir::LLVM::LLVMDialect",
    "::mlir::math::MathDialect",
    "::mlir::memref::MemRefDialect",
    "::mlir::NVVM::NVVMDialect",
    "::mlir::ub::UBDialect",
    "::mlir::vector::VectorDialect",
  ];
}

#endif // KVCACHE_TRANSFORMS_PASSES_TD
