// RUN: kvcache-opt %s -verify-diagnostics -kvcache-to-cpu=bufferize=false
// RUN: not kvcache-opt %s -convert-kvcache-to-scf 2>&1 | FileCheck %s --check-prefix=SCF
// RUN: not kvcache-opt %s -convert-kvcache-to-gpu 2>&1 | FileCheck %s --check-prefix=GPU

// The passes that read the kernel ops' buffers take the memref form
// (docs/Contract.md section 3.5): a tensor-form op is an error that says to
// bufferize first, not a failure deep in the lowering.

// SCF: 'kvcache.gather_ragged' op is in the tensor form, and convert-kvcache-to-scf takes the memref form: bufferize first
// GPU: 'kvcache.gather_ragged' op is in the tensor form, and convert-kvcache-to-gpu takes the memref form: bufferize first
!k = !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>
func.func @gather(%k: !k, %out: tensor<?x8x128xf16>, %o: tensor<?xi32>) -> tensor<?x8x128xf16> {
  // expected-error @below {{'kvcache.gather_ragged' op is in the tensor form, and kvcache-generate-argument-checks takes the memref form: bufferize first (kvcache-bufferize, which the pipelines run unless bufferize=false)}}
  %g = kvcache.gather_ragged %k, %out, %o : !k, tensor<?x8x128xf16>, tensor<?xi32> -> tensor<?x8x128xf16>
  return %g : tensor<?x8x128xf16>
}
