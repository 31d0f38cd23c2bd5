// The fp8 kernels bench/gpu/check_quantized.py runs on the GPU and compares
// bit for bit with the numpy codec of kvcache.reference: store_ragged
// quantizing f16 rows into an fp8 cache with token_head scales (amax / max
// finite per head row, correctly rounded division, round to nearest even,
// saturation), gather_ragged dequantizing them back to f16. Compiled for
// sm_90 (the cvt fp8x2 instructions) and sm_80 (integer conversions).
// Kernels (docs/KernelABI.md): <f>_store_ragged (cache + token_head scales,
// rows, row_offsets), <f>_gather_ragged (cache + scales, out, ctx_offsets),
// block 256, any grid (a grid-stride loop over rows).

!e4m3 = !kvcache.paged_cache<f8E4M3FN, num_heads = 8, head_size = 128, page_size = 16, scales = token_head>
!e5m2 = !kvcache.paged_cache<f8E5M2, num_heads = 8, head_size = 128, page_size = 16, scales = token_head>

func.func @e4m3(%cache: !e4m3, %rows: memref<?x8x128xf16>, %offsets: memref<?xi32>,
                %out: memref<?x8x128xf16>) {
  kvcache.store_ragged %cache, %rows, %offsets : !e4m3, memref<?x8x128xf16>, memref<?xi32>
  kvcache.gather_ragged %cache, %out, %offsets : !e4m3, memref<?x8x128xf16>, memref<?xi32>
  return
}

func.func @e5m2(%cache: !e5m2, %rows: memref<?x8x128xf16>, %offsets: memref<?xi32>,
                %out: memref<?x8x128xf16>) {
  kvcache.store_ragged %cache, %rows, %offsets : !e5m2, memref<?x8x128xf16>, memref<?xi32>
  kvcache.gather_ragged %cache, %out, %offsets : !e5m2, memref<?x8x128xf16>, memref<?xi32>
  return
}
