// A planted bug: an ldmatrix that lanes 16-31 of the warp skip (ldmatrix
// and mma.sync are .sync.aligned: all 32 lanes take part). Reported as
// `shuffle`, the kind of a warp-collective operation a lane did not take
// part in, at the site of whichever lane completed the warp's wait: the
// skipped x4 load or the x2 load that lanes 16-31 reached instead.
// The emulator reports it in every order; the fixed kernel (@square) runs
// clean in every order and computes A A[:, 0:8].
// RUN: kvcache-opt %S/Inputs/warp-matrix-bugs.mlir -kvcache-to-emulated-gpu > %t.mlir
// RUN: not --crash %emu_run %t.mlir -e divergent_ldmatrix 2>&1 | FileCheck %s --check-prefix=BUG
// RUN: env KVCACHE_EMU_ORDER=reverse not --crash %emu_run %t.mlir -e divergent_ldmatrix 2>&1 | FileCheck %s --check-prefix=BUG
// RUN: env KVCACHE_EMU_ORDER=random:7 not --crash %emu_run %t.mlir -e divergent_ldmatrix 2>&1 | FileCheck %s --check-prefix=BUG
// RUN: %emu_run %t.mlir -e square | %python %S/Inputs/twin_reference.py warp-matrix-bugs | FileCheck %s --check-prefix=FIXED
// RUN: env KVCACHE_EMU_ORDER=reverse %emu_run %t.mlir -e square | %python %S/Inputs/twin_reference.py warp-matrix-bugs | FileCheck %s --check-prefix=FIXED
// RUN: env KVCACHE_EMU_ORDER=random:7 %emu_run %t.mlir -e square | %python %S/Inputs/twin_reference.py warp-matrix-bugs | FileCheck %s --check-prefix=FIXED

// BUG: kvcache gpu emulator: shuffle: kernel divergent_ldmatrix block (0,0,0) threads ({{[0-9]+}},0,0) and ({{[0-9]+}},0,0) at {{.*}}warp-matrix-bugs.mlir:{{(75:19|81:13)}}
// BUG-NOT: kvcache gpu emulator

// FIXED: OK 1 buffers 128 values
