// RUN: kvcache-opt %s -split-input-file -verify-diagnostics --pass-pipeline='builtin.module(gpu.module(kvcache-lower-gpu-math))'
// RUN: kvcache-opt %s -split-input-file -verify-diagnostics -kvcache-to-emulated-gpu -o /dev/null
// RUN: kvcache-opt %s -split-input-file -verify-diagnostics -kvcache-to-ptx -o /dev/null

// Arithmetic on floats of 8 bits or fewer in a kernel is an error at the
// op, in the pass and in the GPU pipelines, which would otherwise lower it
// to float instructions on integers (IR that does not verify). Moving,
// selecting and bitcasting fp8 values is fine, and so are the conversions
// the pipelines lower (last case).

module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @sum(%in: memref<4xf8E5M2>, %out: memref<1xf8E5M2>) kernel {
      %c0 = arith.constant 0 : index
      %v = vector.load %in[%c0] : memref<4xf8E5M2>, vector<4xf8E5M2>
      // expected-error @below {{computes on 'f8E5M2' values, which GPU code cannot (LLVM has no float type of 8 bits or fewer): compute in f16 or f32 instead (the GPU pipelines lower arith.extf of f8E4M3FN and f8E5M2 to f16 and f32}}
      %s = vector.reduction <add>, %v : vector<4xf8E5M2> into f8E5M2
      memref.store %s, %out[%c0] : memref<1xf8E5M2>
      gpu.return
    }
  }
}

// -----

module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @add(%x: f8E4M3FN, %out: memref<1xf8E4M3FN>) kernel {
      %c0 = arith.constant 0 : index
      // expected-error @below {{computes on 'f8E4M3FN' values}}
      %y = arith.addf %x, %x : f8E4M3FN
      memref.store %y, %out[%c0] : memref<1xf8E4M3FN>
      gpu.return
    }
  }
}

// -----

module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @compare(%x: f8E5M2, %out: memref<1xi1>) kernel {
      %c0 = arith.constant 0 : index
      // expected-error @below {{computes on 'f8E5M2' values}}
      %p = arith.cmpf olt, %x, %x : f8E5M2
      memref.store %p, %out[%c0] : memref<1xi1>
      gpu.return
    }
  }
}

// -----

// A math op the pass would otherwise rewrite to an intrinsic call.
module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @abs(%x: vector<2xf8E5M2>, %out: memref<2xf8E5M2>) kernel {
      %c0 = arith.constant 0 : index
      // expected-error @below {{computes on 'f8E5M2' values}}
      %a = math.absf %x : vector<2xf8E5M2>
      vector.store %a, %out[%c0] : memref<2xf8E5M2>, vector<2xf8E5M2>
      gpu.return
    }
  }
}

// -----

// Conversions that kvcache-fp8-to-nvvm does not lower: to f64, and from an
// int.
module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @to_f64(%x: f8E5M2, %out: memref<1xf64>) kernel {
      %c0 = arith.constant 0 : index
      // expected-error @below {{computes on 'f8E5M2' values}}
      %w = arith.extf %x : f8E5M2 to f64
      memref.store %w, %out[%c0] : memref<1xf64>
      gpu.return
    }
  }
}

// -----

module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @from_int(%i: i32, %out: memref<1xf8E4M3FN>) kernel {
      %c0 = arith.constant 0 : index
      // expected-error @below {{computes on 'f8E4M3FN' values}}
      %x = arith.sitofp %i : i32 to f8E4M3FN
      memref.store %x, %out[%c0] : memref<1xf8E4M3FN>
      gpu.return
    }
  }
}

// -----

// No error: fp8 values loaded, selected, bitcast, extracted and stored.
module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @moves(%in: memref<8xf8E5M2>, %out: memref<8xf8E5M2>, %c: i1) kernel {
      %c0 = arith.constant 0 : index
      %c4 = arith.constant 4 : index
      %k = arith.constant dense<1.0> : vector<4xf8E5M2>
      %v = vector.load %in[%c0] : memref<8xf8E5M2>, vector<4xf8E5M2>
      %s = arith.select %c, %v, %k : vector<4xf8E5M2>
      %b = arith.bitcast %s : vector<4xf8E5M2> to vector<4xi8>
      %back = arith.bitcast %b : vector<4xi8> to vector<4xf8E5M2>
      %e = vector.extract %back[1] : f8E5M2 from vector<4xf8E5M2>
      memref.store %e, %out[%c4] : memref<8xf8E5M2>
      vector.store %back, %out[%c0] : memref<8xf8E5M2>, vector<4xf8E5M2>
      gpu.return
    }
  }
}
