// A planted bug: a barrier only the first warp reaches (the second warp exits).
// The emulator reports it in every order; the fixed kernel runs clean in
// every order and computes the expected result.
// RUN: kvcache-opt %S/Inputs/planted-bugs.mlir -kvcache-to-emulated-gpu > %t.mlir
// RUN: not --crash %emu_run %t.mlir -e divergent_barrier 2>&1 | FileCheck %s --check-prefix=BUG
// RUN: env KVCACHE_EMU_ORDER=reverse not --crash %emu_run %t.mlir -e divergent_barrier 2>&1 | FileCheck %s --check-prefix=BUG
// RUN: env KVCACHE_EMU_ORDER=random:7 not --crash %emu_run %t.mlir -e divergent_barrier 2>&1 | FileCheck %s --check-prefix=BUG
// RUN: %emu_run %t.mlir -e divergent_barrier_fixed 2>&1 | FileCheck %s --check-prefix=FIXED
// RUN: env KVCACHE_EMU_ORDER=reverse %emu_run %t.mlir -e divergent_barrier_fixed 2>&1 | FileCheck %s --check-prefix=FIXED
// RUN: env KVCACHE_EMU_ORDER=random:7 %emu_run %t.mlir -e divergent_barrier_fixed 2>&1 | FileCheck %s --check-prefix=FIXED

// BUG: kvcache gpu emulator: barrier: kernel divergent_barrier block (0,0,0) threads ({{[0-9]+}},0,0) and ({{[0-9]+}},0,0) at {{.*}}planted-bugs.mlir:84:
// BUG-NOT: kvcache gpu emulator

// FIXED-NOT: kvcache gpu emulator
// FIXED: [1,  2,  3,  4,  5,  6,  7,  8,  9,  10,  11,  12,  13,  14,  15,  16,  17,  18,  19,  20,  21,  22,  23,  24,  25,  26,  27,  28,  29,  30,  31,  32,  33,  34,  35,  36,  37,  38,  39,  40,  41,  42,  43,  44,  45,  46,  47,  48,  49,  50,  51,  52,  53,  54,  55,  56,  57,  58,  59,  60,  61,  62,  63,  64,  -1,  -1,  -1,  -1,  -1,  -1,  -1,  -1,  -1,  -1,  -1,  -1,  -1,  -1,  -1,  -1,  -1,  -1,  -1,  -1,  -1,  -1,  -1,  -1,  -1,  -1,  -1,  -1,  -1,  -1,  -1,  -1,  -1,  -1,  -1,  -1,  -1,  -1,  -1,  -1,  -1,  -1,  -1,  -1,  -1,  -1,  -1,  -1,  -1,  -1,  -1,  -1,  -1,  -1,  -1,  -1,  -1,  -1,  -1,  -1,  -1,  -1,  -1,  -1]
