// A planted bug: a shuffle whose member mask names all 32 lanes, executed by lanes 0-15 only.
// The emulator reports it in every order; the fixed kernel runs clean in
// every order and computes the expected result.
// RUN: kvcache-opt %S/Inputs/planted-bugs.mlir -kvcache-to-emulated-gpu > %t.mlir
// RUN: not --crash %emu_run %t.mlir -e partial_shuffle 2>&1 | FileCheck %s --check-prefix=BUG
// RUN: env KVCACHE_EMU_ORDER=reverse not --crash %emu_run %t.mlir -e partial_shuffle 2>&1 | FileCheck %s --check-prefix=BUG
// RUN: env KVCACHE_EMU_ORDER=random:7 not --crash %emu_run %t.mlir -e partial_shuffle 2>&1 | FileCheck %s --check-prefix=BUG
// RUN: %emu_run %t.mlir -e partial_shuffle_fixed 2>&1 | FileCheck %s --check-prefix=FIXED
// RUN: env KVCACHE_EMU_ORDER=reverse %emu_run %t.mlir -e partial_shuffle_fixed 2>&1 | FileCheck %s --check-prefix=FIXED
// RUN: env KVCACHE_EMU_ORDER=random:7 %emu_run %t.mlir -e partial_shuffle_fixed 2>&1 | FileCheck %s --check-prefix=FIXED

// BUG: kvcache gpu emulator: shuffle: kernel partial_warp_shuffle block (0,0,0) threads ({{[0-9]+}},0,0) and ({{[0-9]+}},0,0) at {{.*}}planted-bugs.mlir:136:
// BUG-NOT: kvcache gpu emulator

// FIXED-NOT: kvcache gpu emulator
// FIXED: [1,  0,  3,  2,  5,  4,  7,  6,  9,  8,  11,  10,  13,  12,  15,  14,  -1,  -1,  -1,  -1,  -1,  -1,  -1,  -1,  -1,  -1,  -1,  -1,  -1,  -1,  -1,  -1,  33,  32,  35,  34,  37,  36,  39,  38,  41,  40,  43,  42,  45,  44,  47,  46,  -1,  -1,  -1,  -1,  -1,  -1,  -1,  -1,  -1,  -1,  -1,  -1,  -1,  -1,  -1,  -1,  -1,  -1,  -1,  -1,  -1,  -1,  -1,  -1,  -1,  -1,  -1,  -1,  -1,  -1,  -1,  -1,  -1,  -1,  -1,  -1,  -1,  -1,  -1,  -1,  -1,  -1,  -1,  -1,  -1,  -1,  -1,  -1,  -1,  -1,  -1,  -1,  -1,  -1,  -1,  -1,  -1,  -1,  -1,  -1,  -1,  -1,  -1,  -1,  -1,  -1,  -1,  -1,  -1,  -1,  -1,  -1,  -1,  -1,  -1,  -1,  -1,  -1,  -1,  -1]
