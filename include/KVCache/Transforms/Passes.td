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

#endif // KVCACHE_TRANSFORMS_PASSES_TD
