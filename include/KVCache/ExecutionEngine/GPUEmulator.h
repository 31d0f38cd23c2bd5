/*===- GPUEmulator.h - control interface of the GPU emulator -----*- C -*-===*\
|*                                                                            *|
|* Part of the kvcache-mlir project.                                          *|
|*                                                                            *|
|* libKVCacheGPUEmulator.so runs the kernels that `kvcache-emulate-nvvm`      *|
|* rewrote (docs/Contract.md, "Running the GPU kernels without a GPU"). The   *|
|* functions the rewritten code calls are its ABI with the pass               *|
|* (EmulatorABI.h, and MLIR's `mgpu*` calls). This header is for hosts that   *|
|* run such code in-process, as the Python package does: instead of           *|
|* aborting the process, a check failure or a device assert is recorded and   *|
|* ends the launch, and the host reads the reports when its call returns.     *|
|*                                                                            *|
\*===----------------------------------------------------------------------===*/

#ifndef KVCACHE_EXECUTIONENGINE_GPUEMULATOR_H
#define KVCACHE_EXECUTIONENGINE_GPUEMULATOR_H

#ifdef __cplusplus
extern "C" {
#endif

/// Capture mode, on (non-zero `enabled`) or off (the default: a failure's
/// report goes to stderr and the process aborts). In capture mode a report
/// is recorded instead of printed, and a failed check (unless
/// KVCACHE_EMU_ON_ERROR=continue) or a device assert ends the launch: its
/// remaining threads and blocks do not run and `__kvemu_launch` returns to
/// the host code normally. Every later launch then returns at once, without
/// running, until kvcache_emu_clear_reports (or this function) is called:
/// the rest of the host's call runs on without its GPU work, and its
/// results are not to be used when kvcache_emu_error_count() is non-zero.
/// Under KVCACHE_EMU_ON_ERROR=continue, failed checks are recorded and the
/// kernels run on.
void kvcache_emu_set_capture(int enabled);

/// Deprecated: use kvcache_emu_set_capture and check
/// kvcache_emu_error_count() when the call returns.
///
/// With a non-null `env` (a `jmp_buf *` the caller filled with `setjmp`),
/// capture mode, and when a failure ends a launch, `__kvemu_launch`
/// `longjmp`s to `env` with value 1 (from its own frame, on the host's
/// stack, after the emulator's state is cleaned up) instead of returning;
/// the host code between `setjmp` and that launch is skipped. The emulator
/// is ready for the next launch afterwards. Null turns the jump off (and
/// capture mode, unless kvcache_emu_set_capture turned it on).
void kvcache_emu_set_trap(void *env);

/// The report lines recorded since the last kvcache_emu_clear_reports, one
/// per line. Valid until the next call into the emulator.
const char *kvcache_emu_reports(void);

/// Number of check failures and device asserts since the last
/// kvcache_emu_clear_reports.
int kvcache_emu_error_count(void);

/// Forgets recorded reports and errors; launches run again.
void kvcache_emu_clear_reports(void);

#ifdef __cplusplus
}
#endif

#endif /* KVCACHE_EXECUTIONENGINE_GPUEMULATOR_H */
