//===- KVCacheToGPU.h - kvcache kernel ops to GPU kernels -------*- C++ -*-===//
//
// Part of the kvcache-mlir project.
//
//===----------------------------------------------------------------------===//

#ifndef KVCACHE_CONVERSION_KVCACHETOGPU_KVCACHETOGPU_H
#define KVCACHE_CONVERSION_KVCACHETOGPU_KVCACHETOGPU_H

#include <cstdint>
#include <string>

#include "mlir/IR/Diagnostics.h"
#include "mlir/Support/LLVM.h"

namespace mlir {
class RewritePatternSet;

namespace kvcache {

/// The hardware choices of the GPU kernels, in one place.
struct GPUKernelTarget {
  /// NVIDIA architecture the kernels are tuned for.
  std::string chip = "sm_90";
  /// Threads of a data-movement thread block (each moves 16-byte vectors).
  int64_t threadsPerBlock = 256;
  /// Largest grid of a data-movement kernel; more rows or pairs are
  /// visited by a grid-stride loop.
  int64_t maxBlocks = 65535;
  /// Bytes one thread moves per access.
  int64_t vectorBytes = 16;
  /// Chunks (accesses of `vectorBytes`) a lane of store_ragged or
  /// gather_ragged loads before it stores: the rows of a warp's tile.
  int64_t chunksInFlight = 8;
  /// Threads of an attention block (keys in flight x lanes per key).
  int64_t attentionThreads = 128;
  /// Most context splits of one query row (with a workspace).
  int64_t maxSplits = 16;
  /// Keys per split the split count aims at.
  int64_t keysPerSplit = 512;
  /// Streaming multiprocessors of the GPU the split count fills; 0: the
  /// chip's flagship (getFlagshipSMCount).
  int64_t smCount = 0;
  /// Attention of f16/bf16 caches on tensor cores (mma.sync) where the plan
  /// allows; false: always CUDA cores.
  bool tensorCores = true;
  /// A quantizing store_ragged into an i8 cache checks for NaN at run time
  /// (a device assertion).
  bool checked = false;
};

/// The SM count of the flagship data-center part of `chip`'s architecture
/// (sm_90: 132, H100/H200 SXM; sm_80: 108, A100; sm_100: 148, B200; ...),
/// for the split count when the `sm-count` option is 0.
int64_t getFlagshipSMCount(StringRef chip);

/// The compute capability of `chip` (sm_90a -> 90), 0 when `chip` is not
/// sm_XX. cp.async (attention's K/V pipeline) needs 80 or more.
int64_t getChipVersion(StringRef chip);

/// Whether `chip` converts between f32/f16 and fp8 in hardware
/// (cvt.rn.satfinite.e4m3x2.f32 and friends: sm_89 and newer).
bool hasFp8ConversionInstructions(StringRef chip);

/// Checks `chip` for the GPU lowering: sm_XX known to LLVM's NVPTX backend
/// (sm_90a, sm_100f, ... included) and not older than sm_30; says why
/// through `emitError` otherwise.
LogicalResult verifyChip(StringRef chip,
                         function_ref<InFlightDiagnostic()> emitError);

/// Patterns lowering store_ragged, gather_ragged, copy_pages and
/// attention_ragged to kernels written with kvcache access ops: `gpu.func`s
/// in `gpu.module @kvcache_kernels` (created when missing) whose parameters
/// are the op's kernel operands in order, launched by `gpu.launch_func`.
void populateKVCacheToGPUConversionPatterns(RewritePatternSet &patterns,
                                            const GPUKernelTarget &target);

/// Patterns lowering the fp8 conversions the kvcache lowerings leave
/// target-neutral (`arith.extf` of f8E4M3FN or f8E5M2 codes; the clamp to
/// +-max_finite followed by `arith.truncf` that encodes them) for kernels
/// built for `chip`: inside GPU code (a gpu.module or a gpu.launch) on a
/// chip with fp8 conversion instructions (hasFp8ConversionInstructions),
/// `nvvm.convert.f8x2.to.f16x2` and `nvvm.convert.f32x2.to.f8x2` (rn,
/// satfinite) two codes at a time for scalars and 1-D vectors of even
/// length, the NaN codes set as docs/Contract.md says; everything else
/// (host code, older chips, other shapes) in integer arithmetic, as
/// `kvcache-fp8-to-integer` does. The pass is `kvcache-fp8-to-nvvm`.
void populateFp8ToNVVMConversionPatterns(RewritePatternSet &patterns,
                                         StringRef chip);

} // namespace kvcache
} // namespace mlir

#endif // KVCACHE_CONVERSION_KVCACHETOGPU_KVCACHETOGPU_H
