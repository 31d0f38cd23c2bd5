// A planted bug: ldmatrix row addresses past the shared tile (lanes 16-31).
// The emulator reports it in every order; the fixed kernel (@square) runs
// clean in every order and computes A A[:, 0:8].
// RUN: kvcache-opt %S/Inputs/warp-matrix-bugs.mlir -kvcache-to-emulated-gpu > %t.mlir
// RUN: not --crash %emu_run %t.mlir -e ldmatrix_out_of_bounds 2>&1 | FileCheck %s --check-prefix=BUG
// RUN: env KVCACHE_EMU_ORDER=reverse not --crash %emu_run %t.mlir -e ldmatrix_out_of_bounds 2>&1 | FileCheck %s --check-prefix=BUG
// RUN: env KVCACHE_EMU_ORDER=random:7 not --crash %emu_run %t.mlir -e ldmatrix_out_of_bounds 2>&1 | FileCheck %s --check-prefix=BUG
// RUN: %emu_run %t.mlir -e square | %python %S/Inputs/twin_reference.py warp-matrix-bugs | FileCheck %s --check-prefix=FIXED
// RUN: env KVCACHE_EMU_ORDER=reverse %emu_run %t.mlir -e square | %python %S/Inputs/twin_reference.py warp-matrix-bugs | FileCheck %s --check-prefix=FIXED
// RUN: env KVCACHE_EMU_ORDER=random:7 %emu_run %t.mlir -e square | %python %S/Inputs/twin_reference.py warp-matrix-bugs | FileCheck %s --check-prefix=FIXED

// BUG: kvcache gpu emulator: shared bounds: kernel ldmatrix_out_of_bounds block (0,0,0) thread ({{[0-9]+}},0,0) at {{.*}}warp-matrix-bugs.mlir:161:13
// BUG-NOT: kvcache gpu emulator

// FIXED: OK 1 buffers 128 values
