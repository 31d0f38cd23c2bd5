// RUN: kvcache-opt %s -split-input-file -kvcache-inline-alloca-scopes -verify-diagnostics | FileCheck %s

// kvcache-inline-alloca-scopes replaces a memref.alloca_scope that allocates
// nothing by its body (results included), also around calls, whose memory
// effects are unknown (upstream canonicalization keeps those scopes), and
// nested scopes from the inside out. kvcache-to-cpu{parallel=true} runs it
// after convert-scf-to-openmp, which wraps each parallel iteration in a scope.

func.func private @effects(index)

// CHECK-LABEL: func.func @inlined(
// CHECK-SAME: %[[N:.*]]: index
// CHECK-NOT: memref.alloca_scope
// CHECK: scf.for %[[J:.*]] = %{{.*}} to %[[N]]
// CHECK-NEXT: func.call @effects(%[[J]])
// CHECK: %[[R:.*]] = arith.addi %[[N]], %[[N]] : index
// CHECK-NEXT: return %[[R]] : index
func.func @inlined(%n: index) -> index {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %r = memref.alloca_scope -> index {
    memref.alloca_scope {
      scf.for %j = %c0 to %n step %c1 {
        func.call @effects(%j) : (index) -> ()
      }
    }
    %s = arith.addi %n, %n : index
    memref.alloca_scope.return %s : index
  }
  return %r : index
}

// -----

// CHECK-LABEL: func.func @in_parallel_loop(
// CHECK: omp.loop_nest
// CHECK-NOT: memref.alloca_scope
// CHECK: func.call @effects
// CHECK: omp.yield
func.func private @effects(index)
func.func @in_parallel_loop(%n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  omp.parallel {
    omp.wsloop {
      omp.loop_nest (%i) : index = (%c0) to (%n) step (%c1) {
        memref.alloca_scope {
          func.call @effects(%i) : (index) -> ()
        }
        omp.yield
      }
    }
    omp.terminator
  }
  return
}

// -----

// A scope that allocates stays, with an error that says what to do.
func.func @allocates(%n: index) {
  // expected-note @below {{the scope is here}}
  memref.alloca_scope {
    // expected-error @below {{kvcache-inline-alloca-scopes: a stack allocation inside a memref.alloca_scope (the body of a parallel loop under kvcache-to-cpu{parallel=true}) is not supported; allocate outside the scf.parallel loop}}
    %a = memref.alloca() : memref<4xf32>
  }
  return
}
