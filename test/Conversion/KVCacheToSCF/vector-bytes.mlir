// RUN: kvcache-opt %s -convert-kvcache-to-scf | FileCheck %s --check-prefix=DEFAULT
// RUN: kvcache-opt %s -convert-kvcache-to-scf=vector-bytes=16 | FileCheck %s --check-prefix=SIXTEEN
// RUN: not kvcache-opt %s -convert-kvcache-to-scf=vector-bytes=24 2>&1 | FileCheck %s --check-prefix=BAD

// The CPU loops move up to a cache line (64 bytes) per access by default,
// claiming only the 16-byte alignment every memref has.

// DEFAULT-LABEL: func.func @gather
// DEFAULT: vector.store %{{.*}} {alignment = 16 : i64} : memref<?x8x128xf16>, vector<32xf16>
// SIXTEEN-LABEL: func.func @gather
// SIXTEEN: vector.store %{{.*}} {alignment = 16 : i64} : memref<?x8x128xf16>, vector<8xf16>
// BAD: convert-kvcache-to-scf: vector-bytes must be a power of two, got 24
func.func @gather(%k: !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, %out: memref<?x8x128xf16>, %offsets: memref<?xi32>) {
  kvcache.gather_ragged %k, %out, %offsets : !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, memref<?x8x128xf16>, memref<?xi32>
  return
}
