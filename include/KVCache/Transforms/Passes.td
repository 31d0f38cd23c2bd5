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

#endif // KVCACHE_TRANSFORMS_PASSES_TD
