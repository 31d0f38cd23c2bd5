// A planted bug: no barrier between the stores that stage a tile and the
// ldmatrix that reads other threads' rows. Reported as `race` at the store
// or at the ldmatrix, whichever of the two threads runs second.
// The emulator reports it in every order; the fixed kernel (@square) runs
// clean in every order and computes A A[:, 0:8].
// RUN: kvcache-opt %S/Inputs/warp-matrix-bugs.mlir -kvcache-to-emulated-gpu > %t.mlir
// RUN: not --crash %emu_run %t.mlir -e racy_ldmatrix 2>&1 | FileCheck %s --check-prefix=BUG
// RUN: env KVCACHE_EMU_ORDER=reverse not --crash %emu_run %t.mlir -e racy_ldmatrix 2>&1 | FileCheck %s --check-prefix=BUG
// RUN: env KVCACHE_EMU_ORDER=random:7 not --crash %emu_run %t.mlir -e racy_ldmatrix 2>&1 | FileCheck %s --check-prefix=BUG
// RUN: %emu_run %t.mlir -e square | %python %S/Inputs/twin_reference.py warp-matrix-bugs | FileCheck %s --check-prefix=FIXED
// RUN: env KVCACHE_EMU_ORDER=reverse %emu_run %t.mlir -e square | %python %S/Inputs/twin_reference.py warp-matrix-bugs | FileCheck %s --check-prefix=FIXED
// RUN: env KVCACHE_EMU_ORDER=random:7 %emu_run %t.mlir -e square | %python %S/Inputs/twin_reference.py warp-matrix-bugs | FileCheck %s --check-prefix=FIXED

// BUG: kvcache gpu emulator: race: kernel racy_ldmatrix block (0,0,0) threads ({{[0-9]+}},0,0) and ({{[0-9]+}},0,0) at {{.*}}warp-matrix-bugs.mlir:{{(23:7|144:13)}}
// BUG-NOT: kvcache gpu emulator

// FIXED: OK 1 buffers 128 values
