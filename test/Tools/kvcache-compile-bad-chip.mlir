// RUN: rm -f %t.ptx
// RUN: not kvcache-compile %s --chip foo -o %t.ptx 2>&1 | FileCheck %s --check-prefix=FOO
// RUN: test ! -e %t.ptx
// RUN: not kvcache-compile %s --chip sm_999 -o %t.ptx 2>&1 | FileCheck %s --check-prefix=UNKNOWN
// RUN: not kvcache-compile %s --chip sm_90f -o %t.ptx 2>&1 | FileCheck %s --check-prefix=UNKNOWN-F
// RUN: not kvcache-compile %s --chip sm_20 -o %t.ptx 2>&1 | FileCheck %s --check-prefix=OLD
// RUN: not kvcache-compile %s --opt-level 4 -o %t.ptx 2>&1 | FileCheck %s --check-prefix=OPT
// RUN: test ! -e %t.ptx
// RUN: not kvcache-opt %s -kvcache-to-ptx=chip=sm_999 2>&1 | FileCheck %s --check-prefix=PIPELINE-CHIP
// RUN: not kvcache-opt %s -kvcache-to-ptx=opt-level=7 2>&1 | FileCheck %s --check-prefix=PIPELINE-OPT
// Chips whose PTX needs a newer ISA than 8.0 (LLVM aborted on them before):
// RUN: kvcache-compile %s --chip sm_100f -o - | FileCheck %s --check-prefix=SM100F
// RUN: kvcache-compile %s --chip sm_110 -o - | FileCheck %s --check-prefix=SM110
// RUN: kvcache-compile %s --chip sm_121a -o - | FileCheck %s --check-prefix=SM121A

// A --chip or --opt-level that LLVM's NVPTX backend cannot take is an error
// before anything runs, and no PTX is written: LLVM alone would warn "'foo'
// is not a recognized processor" and write `.target foo`, or abort (an
// unknown sm_999, an opt-level of 4). The same checks guard the pipeline's
// options.

// FOO: kvcache-compile: error: --chip unknown chip 'foo'; expected sm_XX, e.g. sm_80 or sm_90
// UNKNOWN: kvcache-compile: error: --chip unknown chip 'sm_999': LLVM's NVPTX backend does not know it (e.g. sm_75, sm_80, sm_90, sm_90a, sm_100a)
// UNKNOWN-F: kvcache-compile: error: --chip unknown chip 'sm_90f'
// OLD: kvcache-compile: error: --chip chip 'sm_20' is older than sm_30, the oldest the kernels support (they use warp shuffles)
// OPT: kvcache-compile: error: --opt-level must be 0, 1, 2 or 3, not 4
// PIPELINE-CHIP: kvcache-compile-bad-chip.mlir:{{[0-9]+}}:{{[0-9]+}}: error: convert-kvcache-to-gpu: unknown chip 'sm_999'
// PIPELINE-CHIP-NOT: see current operation
// PIPELINE-OPT: for the --opt-level option: must be 0, 1, 2 or 3, not 7
// SM100F: .version 8.8
// SM100F-NEXT: .target sm_100f
// SM110: .version 9.0
// SM110-NEXT: .target sm_110
// SM121A: .version 8.8
// SM121A-NEXT: .target sm_121a

!cache = !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>

module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @read(%cache: !cache, %b: index, %t: index, %out: memref<?xf16>) kernel {
      %c0 = arith.constant 0 : index
      %x = kvcache.load %cache[%b, %c0, %t, %c0] : !cache -> f16
      memref.store %x, %out[%c0] : memref<?xf16>
      gpu.return
    }
  }
}
