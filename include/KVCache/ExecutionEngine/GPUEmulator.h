/*===- GPUEmulator.h - control interface of the GPU emulator -----*- C -*-===*\
|*                                                                            *|
|* Part of the kvcache-mlir project.                                          *|
|*                                                                            *|
|* libKVCacheGPUEmulator.so runs the kernels that `kvcache-emulate-nvvm`      *|
|* rewrote (docs/Contract.md, "Running the GPU kernels without a GPU"). The   *|
|* functions the rewritten code calls (`__kvemu_*`, `mgpu*`) are its ABI with *|
|* the pass and are not declared here. This header is for hosts that run such *|
|* code in-process, as the Python package does: instead of aborting, a check  *|
|* failure or a device assert can jump back to the host.                      *|
|*                                                                            *|
\*===----------------------------------------------------------------------===*/

#ifndef KVCACHE_EXECUTIONENGINE_GPUEMULATOR_H
#define KVCACHE_EXECUTIONENGINE_GPUEMULATOR_H

#ifdef __cplusplus
extern "C" {
#endif

/// With a non-null `env` (a `jmp_buf *` the caller filled with `setjmp`),
/// a failed check (unless KVCACHE_EMU_ON_ERROR=continue) or a device assert
/// records its report and `longjmp`s to `env` with value 1 instead of
/// aborting. The emulator is ready for the next launch afterwards. Null
/// restores the default (print to stderr, abort). After a jump lands, call
/// this function (with null or a new buffer) before anything else of the
/// emulator: under AddressSanitizer it completes the switch off the
/// emulated thread's stack.
void kvcache_emu_set_trap(void *env);

/// The report lines recorded since the last kvcache_emu_clear_reports, one
/// per line. Valid until the next call into the emulator.
const char *kvcache_emu_reports(void);

/// Number of check failures since the last kvcache_emu_clear_reports.
int kvcache_emu_error_count(void);

/// Forgets recorded reports and errors.
void kvcache_emu_clear_reports(void);

#ifdef __cplusplus
}
#endif

#endif /* KVCACHE_EXECUTIONENGINE_GPUEMULATOR_H */
