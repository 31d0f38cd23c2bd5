//===- EmulatorABI.h - calling convention of the GPU emulator ---*- C++ -*-===//
//
// Part of the kvcache-mlir project.
//
// The one definition of the interface between `kvcache-emulate-nvvm` (the
// pass that rewrites NVVM kernels into CPU code, lib/Conversion/
// NVVMToEmulator) and the runtime that code calls (libKVCacheGPUEmulator.so,
// lib/ExecutionEngine/GPUEmulator): the flags and codes the calls pass, and
// the signature of every runtime entry point. Both sides include this file;
// neither writes a constant or a signature of its own.
//
// Like SparseTensor's Enums.h, it depends on no MLIR or LLVM header: the
// runtime is plain C++. The pass derives the LLVM-dialect type of each entry
// point from the C declarations below (decltype), so a signature changed here
// changes the calls the pass emits, and a runtime definition that disagrees
// with its declaration does not compile.
//
//===----------------------------------------------------------------------===//

#ifndef KVCACHE_EXECUTIONENGINE_EMULATORABI_H
#define KVCACHE_EXECUTIONENGINE_EMULATORABI_H

#include <cstdint>

namespace mlir {
namespace kvcache {
namespace emulator {

//===----------------------------------------------------------------------===//
// Flags and codes
//===----------------------------------------------------------------------===//

/// Flags of `__kvemu_access`: what the access does, and (shifted by
/// kAccessSpaceShift) the NVPTX address space of its pointer.
enum AccessFlags : int32_t {
  kAccessWrite = 1,
  kAccessAtomic = 2,
};
constexpr int32_t kAccessSpaceShift = 8;

/// NVPTX address spaces the emulator models.
enum class AddressSpace : uint32_t {
  Generic = 0,
  Global = 1,
  Shared = 3,
  Constant = 4,
  Local = 5,
};

/// Flags of `__kvemu_mma`: the shape m16n8k16 (else m16n8k8), bf16
/// multiplicands (else f16), an f16 accumulator C and an f16 result D (else
/// f32).
enum MmaFlags : int32_t {
  kMmaK16 = 1,
  kMmaBF16 = 2,
  kMmaAccumulatorF16 = 4,
  kMmaResultF16 = 8,
};

/// The `kind` of `__kvemu_shfl`: PTX shfl.sync's modes.
enum class ShuffleKind : int32_t {
  Bfly = 0,
  Up = 1,
  Down = 2,
  Idx = 3,
};

/// The `format` of the fp8 conversions.
enum class Fp8Format : int32_t {
  E4M3FN = 0,
  E5M2 = 1,
};

/// Special registers `__kvemu_sreg` answers: each enumerator with the suffix
/// of its `nvvm.read.ptx.sreg.` op.
#define KVEMU_SPECIAL_REGISTERS(X)                                             \
  X(TidX, "tid.x")                                                             \
  X(TidY, "tid.y")                                                             \
  X(TidZ, "tid.z")                                                             \
  X(NtidX, "ntid.x")                                                           \
  X(NtidY, "ntid.y")                                                           \
  X(NtidZ, "ntid.z")                                                           \
  X(CtaidX, "ctaid.x")                                                         \
  X(CtaidY, "ctaid.y")                                                         \
  X(CtaidZ, "ctaid.z")                                                         \
  X(NctaidX, "nctaid.x")                                                       \
  X(NctaidY, "nctaid.y")                                                       \
  X(NctaidZ, "nctaid.z")                                                       \
  X(LaneId, "laneid")                                                          \
  X(WarpSize, "warpsize")                                                      \
  X(WarpId, "warpid")                                                          \
  X(NWarpId, "nwarpid")                                                        \
  X(LaneMaskEq, "lanemask.eq")                                                 \
  X(LaneMaskLe, "lanemask.le")                                                 \
  X(LaneMaskLt, "lanemask.lt")                                                 \
  X(LaneMaskGe, "lanemask.ge")                                                 \
  X(LaneMaskGt, "lanemask.gt")                                                 \
  X(DynamicSmemSize, "dynamic.smem.size")

enum class SpecialRegister : int32_t {
#define KVEMU_ENUMERATOR(name, suffix) name,
  KVEMU_SPECIAL_REGISTERS(KVEMU_ENUMERATOR)
#undef KVEMU_ENUMERATOR
};

/// The `nvvm.read.ptx.sreg.` suffix of each SpecialRegister, by its value.
constexpr const char *kSpecialRegisterNames[] = {
#define KVEMU_NAME(name, suffix) suffix,
    KVEMU_SPECIAL_REGISTERS(KVEMU_NAME)
#undef KVEMU_NAME
};

//===----------------------------------------------------------------------===//
// Entry points
//===----------------------------------------------------------------------===//

/// The GPU operations of a rewritten kernel and the host's launch. `site` is
/// the address of a NUL-terminated "file:line:col" string, one per operation:
/// the runtime tells operations apart by it.
#define KVEMU_RUNTIME_FUNCTIONS(X)                                             \
  X(__kvemu_launch)                                                            \
  X(__kvemu_shared)                                                            \
  X(__kvemu_sreg)                                                              \
  X(__kvemu_barrier)                                                           \
  X(__kvemu_shfl)                                                              \
  X(__kvemu_access)                                                            \
  X(__kvemu_cp_async)                                                          \
  X(__kvemu_cp_async_commit)                                                   \
  X(__kvemu_cp_async_wait)                                                     \
  X(__kvemu_ldmatrix)                                                          \
  X(__kvemu_mma)                                                               \
  X(__kvemu_cvt_f32x2_to_f8x2)                                                 \
  X(__kvemu_cvt_f8x2_to_f16x2)

/// Runtime functions that replace a device function without a body or an
/// `llvm.nvvm.*` intrinsic: each with the name it replaces. A call of any
/// other bodiless function or intrinsic is a compile-time error of the pass.
#define KVEMU_DEVICE_FUNCTIONS(X)                                              \
  X(__kvemu_assertfail, "__assertfail")                                        \
  X(__kvemu_vprintf, "vprintf")                                                \
  X(__kvemu_nv_expf, "__nv_expf")                                              \
  X(__kvemu_nv_exp2f, "__nv_exp2f")                                            \
  X(__kvemu_nv_logf, "__nv_logf")                                              \
  X(__kvemu_nv_log2f, "__nv_log2f")                                            \
  X(__kvemu_nv_sqrtf, "__nv_sqrtf")                                            \
  X(__kvemu_nv_rsqrtf, "__nv_rsqrtf")                                          \
  X(__kvemu_nv_powf, "__nv_powf")                                              \
  X(__kvemu_nv_fabsf, "__nv_fabsf")                                            \
  X(__kvemu_nv_tanhf, "__nv_tanhf")                                            \
  X(__kvemu_nv_sinf, "__nv_sinf")                                              \
  X(__kvemu_nv_cosf, "__nv_cosf")                                              \
  X(__kvemu_nv_erff, "__nv_erff")                                              \
  X(__kvemu_nv_fmaxf, "__nv_fmaxf")                                            \
  X(__kvemu_nv_fminf, "__nv_fminf")                                            \
  X(__kvemu_nv_exp, "__nv_exp")                                                \
  X(__kvemu_nv_log, "__nv_log")                                                \
  X(__kvemu_nv_sqrt, "__nv_sqrt")                                              \
  X(__kvemu_nv_tanh, "__nv_tanh")                                              \
  X(__kvemu_ex2_approx_f32, "llvm.nvvm.ex2.approx.f32")                        \
  X(__kvemu_ex2_approx_ftz_f32, "llvm.nvvm.ex2.approx.ftz.f32")                \
  X(__kvemu_lg2_approx_f, "llvm.nvvm.lg2.approx.f")                            \
  X(__kvemu_lg2_approx_ftz_f, "llvm.nvvm.lg2.approx.ftz.f")                    \
  X(__kvemu_rcp_approx_ftz_f, "llvm.nvvm.rcp.approx.ftz.f")                    \
  X(__kvemu_rsqrt_approx_f, "llvm.nvvm.rsqrt.approx.f")                        \
  X(__kvemu_rsqrt_approx_ftz_f, "llvm.nvvm.rsqrt.approx.ftz.f")                \
  X(__kvemu_sqrt_approx_f, "llvm.nvvm.sqrt.approx.f")                          \
  X(__kvemu_fmax_f, "llvm.nvvm.fmax.f")                                        \
  X(__kvemu_fmin_f, "llvm.nvvm.fmin.f")

} // namespace emulator
} // namespace kvcache
} // namespace mlir

extern "C" {

/// Runs kernel `entry` (the pass's `__kvemu_entry_<module>_<kernel>`, which
/// unpacks `params`) on a grid gx x gy x gz of blocks bx x by x bz.
/// `sharedSizes` holds the bytes of each of the kernel module's `numShared`
/// shared-memory globals in index order, 0 for the dynamic one, which gets
/// `dynamicSharedBytes`.
void __kvemu_launch(void (*entry)(void **), const char *kernel,
                    const int64_t *sharedSizes, int32_t numShared, int64_t gx,
                    int64_t gy, int64_t gz, int64_t bx, int64_t by, int64_t bz,
                    int32_t dynamicSharedBytes, void **params,
                    const char *site);
/// The calling block's copy of shared-memory global `index`.
void *__kvemu_shared(int32_t index);
/// The value of special register `reg` (a SpecialRegister).
int32_t __kvemu_sreg(int32_t reg);
/// bar.sync 0 / barrier0.
void __kvemu_barrier(const char *site);
/// shfl.sync of `kind` (a ShuffleKind) over the lanes of `mask`: the value in
/// the low 32 bits, whether the source lane was in range in bit 32.
int64_t __kvemu_shfl(int32_t kind, int32_t mask, int32_t value,
                     int32_t laneOrOffset, int32_t maskAndClamp,
                     const char *site);
/// Checks and counts an access of `bytes` bytes at `pointer`; `flags` are
/// AccessFlags with the address space at kAccessSpaceShift.
void __kvemu_access(void *pointer, int64_t bytes, int32_t flags,
                    const char *site);
/// cp.async of `bytes` into shared `dst`, of which the first `sourceBytes`
/// come from `src` and the rest are zero.
void __kvemu_cp_async(void *dst, const void *src, int32_t bytes,
                      int32_t sourceBytes, const char *site);
void __kvemu_cp_async_commit(void);
/// cp.async.wait_group `pending`.
void __kvemu_cp_async_wait(int32_t pending, const char *site);
/// ldmatrix.sync.aligned.m8n8.x{1,2,4}{.trans}.shared.b16: this lane's row
/// address; writes `matrices` registers to `fragments`.
void __kvemu_ldmatrix(void *row, int32_t matrices, int32_t transpose,
                      uint32_t *fragments, const char *site);
/// mma.sync.aligned m16n8k16 / m16n8k8 row.col (`flags`: MmaFlags): this
/// lane's registers of A, B and C as bits; writes D's 4 (f16 D: 2) registers
/// to `result`.
void __kvemu_mma(int32_t flags, uint32_t a0, uint32_t a1, uint32_t a2,
                 uint32_t a3, uint32_t b0, uint32_t b1, uint32_t c0,
                 uint32_t c1, uint32_t c2, uint32_t c3, uint32_t *result,
                 const char *site);
/// cvt.rn.satfinite.{e4m3x2,e5m2x2}.f32 (`format`: Fp8Format): the two codes
/// in the low 16 bits, `high`'s in the upper byte of those; the rest zero.
/// (Integers narrower than 32 bits would need `zeroext`/`signext` on both
/// sides of LLVM's C calling convention: the ABI has none.)
uint32_t __kvemu_cvt_f32x2_to_f8x2(int32_t format, float high, float low);
/// cvt.rn.f16x2.{e4m3x2,e5m2x2}: `codes` in the low 16 bits (the rest
/// ignored); the f16 of the lower byte in the lower half of the result.
uint32_t __kvemu_cvt_f8x2_to_f16x2(int32_t format, uint32_t codes);

/// The device functions of KVEMU_DEVICE_FUNCTIONS, with the signatures of
/// the functions they replace.
void __kvemu_assertfail(const char *message, const char *file, int32_t line,
                        const char *function, int64_t charSize);
int32_t __kvemu_vprintf(const char *format, const char *args);
float __kvemu_nv_expf(float x);
float __kvemu_nv_exp2f(float x);
float __kvemu_nv_logf(float x);
float __kvemu_nv_log2f(float x);
float __kvemu_nv_sqrtf(float x);
float __kvemu_nv_rsqrtf(float x);
float __kvemu_nv_powf(float x, float y);
float __kvemu_nv_fabsf(float x);
float __kvemu_nv_tanhf(float x);
float __kvemu_nv_sinf(float x);
float __kvemu_nv_cosf(float x);
float __kvemu_nv_erff(float x);
float __kvemu_nv_fmaxf(float a, float b);
float __kvemu_nv_fminf(float a, float b);
double __kvemu_nv_exp(double x);
double __kvemu_nv_log(double x);
double __kvemu_nv_sqrt(double x);
double __kvemu_nv_tanh(double x);
float __kvemu_ex2_approx_f32(float x);
float __kvemu_ex2_approx_ftz_f32(float x);
float __kvemu_lg2_approx_f(float x);
float __kvemu_lg2_approx_ftz_f(float x);
float __kvemu_rcp_approx_ftz_f(float x);
float __kvemu_rsqrt_approx_f(float x);
float __kvemu_rsqrt_approx_ftz_f(float x);
float __kvemu_sqrt_approx_f(float x);
float __kvemu_fmax_f(float a, float b);
float __kvemu_fmin_f(float a, float b);

} // extern "C"

#endif // KVCACHE_EXECUTIONENGINE_EMULATORABI_H
