// A planted bug: no barrier between a thread's write to shared memory and another thread's read of it.
// The emulator reports it in every order; the fixed kernel runs clean in
// every order and computes the expected result.
// RUN: kvcache-opt %S/Inputs/planted-bugs.mlir -kvcache-to-emulated-gpu > %t.mlir
// RUN: not --crash %emu_run %t.mlir -e missing_barrier 2>&1 | FileCheck %s --check-prefix=BUG
// RUN: env KVCACHE_EMU_ORDER=reverse not --crash %emu_run %t.mlir -e missing_barrier 2>&1 | FileCheck %s --check-prefix=BUG
// RUN: env KVCACHE_EMU_ORDER=random:7 not --crash %emu_run %t.mlir -e missing_barrier 2>&1 | FileCheck %s --check-prefix=BUG
// RUN: %emu_run %t.mlir -e missing_barrier_fixed 2>&1 | FileCheck %s --check-prefix=FIXED
// RUN: env KVCACHE_EMU_ORDER=reverse %emu_run %t.mlir -e missing_barrier_fixed 2>&1 | FileCheck %s --check-prefix=FIXED
// RUN: env KVCACHE_EMU_ORDER=random:7 %emu_run %t.mlir -e missing_barrier_fixed 2>&1 | FileCheck %s --check-prefix=FIXED

// With KVCACHE_EMU_ON_ERROR=continue each (kind, site pair) is reported once,
// the program runs to its end and exits with status 1.
// RUN: env KVCACHE_EMU_ON_ERROR=continue not %emu_run %t.mlir -e missing_barrier > %t.out 2> %t.err
// RUN: FileCheck %s --check-prefix=CONTINUE < %t.err
// RUN: FileCheck %s --check-prefix=CONTINUE-OUT < %t.out
// CONTINUE: kvcache gpu emulator: race: kernel exchange_racy {{.*}}planted-bugs.mlir:33:
// CONTINUE: kvcache gpu emulator: race: kernel exchange_racy {{.*}}planted-bugs.mlir:35:
// CONTINUE-NOT: kvcache gpu emulator
// CONTINUE-OUT: data =

// BUG: kvcache gpu emulator: race: kernel exchange_racy block (0,0,0) threads ({{[0-9]+}},0,0) and ({{[0-9]+}},0,0) at {{.*}}planted-bugs.mlir:{{33|35}}:
// BUG-NOT: kvcache gpu emulator

// FIXED-NOT: kvcache gpu emulator
// FIXED: [63,  62,  61,  60,  59,  58,  57,  56,  55,  54,  53,  52,  51,  50,  49,  48,  47,  46,  45,  44,  43,  42,  41,  40,  39,  38,  37,  36,  35,  34,  33,  32,  31,  30,  29,  28,  27,  26,  25,  24,  23,  22,  21,  20,  19,  18,  17,  16,  15,  14,  13,  12,  11,  10,  9,  8,  7,  6,  5,  4,  3,  2,  1,  0,  -1,  -1,  -1,  -1,  -1,  -1,  -1,  -1,  -1,  -1,  -1,  -1,  -1,  -1,  -1,  -1,  -1,  -1,  -1,  -1,  -1,  -1,  -1,  -1,  -1,  -1,  -1,  -1,  -1,  -1,  -1,  -1,  -1,  -1,  -1,  -1,  -1,  -1,  -1,  -1,  -1,  -1,  -1,  -1,  -1,  -1,  -1,  -1,  -1,  -1,  -1,  -1,  -1,  -1,  -1,  -1,  -1,  -1,  -1,  -1,  -1,  -1,  -1,  -1]
