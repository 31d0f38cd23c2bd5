// RUN: rm -f %t.ptx
// RUN: kvcache-compile %s -o %t.ptx
// RUN: FileCheck %s --check-prefixes=CHECK,SM90 --input-file=%t.ptx
// RUN: kvcache-compile %s -o - | FileCheck %s --check-prefixes=CHECK,SM90
// RUN: kvcache-compile %s | FileCheck %s --check-prefixes=CHECK,SM90
// RUN: kvcache-compile < %s | FileCheck %s --check-prefixes=CHECK,SM90
// RUN: kvcache-compile %s --opt-level 0 -o - | FileCheck %s --check-prefixes=CHECK,SM90
// RUN: kvcache-compile %s --checked -o - | FileCheck %s --check-prefixes=CHECK,SM90
// RUN: kvcache-compile %s --chip sm_80 -o - | FileCheck %s --check-prefixes=CHECK,SM80
// RUN: kvcache-compile %s --chip sm_100 -o - | FileCheck %s --check-prefixes=CHECK,SM100
// RUN: kvcache-compile %s --chip sm_120 -o - | FileCheck %s --check-prefixes=CHECK,SM120
// RUN: kvcache-compile --help | FileCheck %s --check-prefix=HELP

// kvcache-compile writes one PTX file holding every kernel of the input: the
// kernels of both gpu.modules and the outlined gpu.launch, after one PTX
// header, to the -o file or, with `-o -` or no -o, to stdout; the input may
// come from stdin. --chip picks the target and the PTX ISA version it needs.

// SM90: .version 8.0
// SM90-NEXT: .target sm_90
// SM80: .version 8.0
// SM80-NEXT: .target sm_80
// SM100: .version 8.6
// SM100-NEXT: .target sm_100
// SM120: .version 8.7
// SM120-NEXT: .target sm_120
// CHECK-NEXT: .address_size 64
// CHECK-NOT: .version
// CHECK-DAG: .visible .entry read_keys(
// CHECK-DAG: .visible .entry write_keys(
// CHECK-DAG: .visible .entry host_kernel(
// CHECK-NOT: .version

// HELP: USAGE: kvcache-compile [options] <input .mlir>
// HELP-DAG: --checked
// HELP-DAG: --chip=<string>
// HELP-DAG: --cubin
// HELP-DAG: -o <filename>
// HELP-DAG: --opt-level=<uint>

!cache = !kvcache.paged_cache<f16, num_heads = 2, head_size = 64, page_size = 4>

module attributes {gpu.container_module} {
  gpu.module @readers {
    gpu.func @read_keys(%cache: !cache, %batch: index, %out: memref<?x2x64xf16>) kernel {
      %token = gpu.block_id x
      %head = gpu.thread_id y
      %chunk = gpu.thread_id x
      %c8 = arith.constant 8 : index
      %element = arith.muli %chunk, %c8 : index
      %keys = kvcache.load %cache[%batch, %head, %token, %element] : !cache -> vector<8xf16>
      vector.store %keys, %out[%token, %head, %element] {alignment = 16} : memref<?x2x64xf16>, vector<8xf16>
      gpu.return
    }
  }
  gpu.module @writers {
    gpu.func @write_keys(%cache: !cache, %batch: index, %new: memref<?x2x64xf16>) kernel {
      %token = gpu.block_id x
      %head = gpu.thread_id y
      %chunk = gpu.thread_id x
      %c8 = arith.constant 8 : index
      %element = arith.muli %chunk, %c8 : index
      %keys = vector.load %new[%token, %head, %element] {alignment = 16} : memref<?x2x64xf16>, vector<8xf16>
      kvcache.store %keys, %cache[%batch, %head, %token, %element] : !cache, vector<8xf16>
      gpu.return
    }
  }
  func.func @host(%cache: !cache, %batch: index, %token: index, %out: memref<?xf16>) {
    %c1 = arith.constant 1 : index
    gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
               threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
      %x = kvcache.load %cache[%batch, %tx, %token, %tx] : !cache -> f16
      memref.store %x, %out[%tx] : memref<?xf16>
      gpu.terminator
    }
    return
  }
}
