//===- Control.cpp - the GPU emulator's control interface ----------------===//
//
// Part of the kvcache-mlir project.
//
// GPUEmulator.h: hosts that run emulated code in-process capture the
// reports instead of letting a failure abort the process.
//
//===----------------------------------------------------------------------===//

#include "Runtime.h"

using namespace mlir::kvcache::emulator;

void mlir::kvcache::emulator::leaveThroughTrap() {
  Reports &reports = theProcess.reports;
  if (!reports.trap)
    return;
  // The host's call ends here: its next call launches again.
  reports.stopped = false;
  longjmp(*reports.trap, 1);
}

KVEMU_EXPORT void kvcache_emu_set_capture(int enabled) {
  Reports &reports = theProcess.reports;
  reports.capture = enabled != 0;
  reports.stopped = false;
}

KVEMU_EXPORT void kvcache_emu_set_trap(void *env) {
  theProcess.reports.trap = static_cast<jmp_buf *>(env);
}

KVEMU_EXPORT const char *kvcache_emu_reports(void) {
  return theProcess.reports.text.c_str();
}

KVEMU_EXPORT int kvcache_emu_error_count(void) {
  return theProcess.reports.errors;
}

KVEMU_EXPORT void kvcache_emu_clear_reports(void) {
  Reports &reports = theProcess.reports;
  reports.text.clear();
  reports.errors = 0;
  reports.seen.clear();
  reports.stopped = false;
}
