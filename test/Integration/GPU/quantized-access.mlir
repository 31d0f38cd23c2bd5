// RUN: kvcache-compile %s -o %t.ptx
// RUN: FileCheck %s --input-file=%t.ptx --implicit-check-not=div. --implicit-check-not=rem.
// RUN: kvcache-compile %s --chip sm_80 -o %t.sm_80.ptx
// RUN: FileCheck %s --check-prefix=SM80 --input-file=%t.sm_80.ptx --implicit-check-not=div. --implicit-check-not=rem.

// A user kernel reading a quantized cache (docs/Contract.md 2.2): an fp8
// token_head cache (8 heads x 128, 16 tokens per page) read as f16 through
// a dequantizing kvcache.load, compiled to PTX (quantized-access-ptxas.test
// assembles it). On sm_90 the chip's cvt.rn.f16x2.e4m3x2 decodes two codes
// at a time (exact, then widened to f32); on sm_80 (SM80), which has no fp8
// instruction, 16-bit integer operations place each code in an f16, which
// cvt.f32.f16 widens, times 2^8 (0f43800000). Then the
// token's and head's scale, rounded to f16.

!cache = !kvcache.paged_cache<f8E4M3FN, num_heads = 8, head_size = 128, page_size = 16, scales = token_head>

module attributes {gpu.container_module} {
  // The cache is 25 + 9 parameters: the five values, then the layer's
  // scales memref<?x16x8xf32, strided<[?, 8, 1], offset: ?>> (pointers,
  // offset, 3 sizes, 3 strides).
  // CHECK-LABEL: .visible .entry read_values(
  // CHECK: .param .u32 read_values_param_24,
  // CHECK-NEXT: .param .u64 .ptr .align 1 read_values_param_25,
  // CHECK-NEXT: .param .u64 .ptr .align 1 read_values_param_26,
  // CHECK-NEXT: .param .u64 read_values_param_27,
  // CHECK-NEXT: .param .u64 read_values_param_28,
  // CHECK-NEXT: .param .u64 read_values_param_29,
  // CHECK-NEXT: .param .u64 read_values_param_30,
  // CHECK-NEXT: .param .u64 read_values_param_31,
  // CHECK-NEXT: .param .u64 read_values_param_32,
  // CHECK-NEXT: .param .u64 read_values_param_33,
  // %batch, then %out.
  // CHECK-NEXT: .param .u64 read_values_param_34,
  // One lookup, the 8 codes in one 64-bit load, 4 conversions of code
  // pairs to f16 pairs, 8 widenings, the scale, 8 multiplies by it,
  // rounding to f16 in pairs, one 16-byte store.
  // CHECK: ld.global.b32
  // CHECK: ld.global.v4.b16
  // CHECK-COUNT-4: cvt.rn.f16x2.e4m3x2
  // CHECK-COUNT-8: cvt.f32.f16
  // CHECK: ld.global.b32
  // CHECK-COUNT-8: mul.rn.f32
  // CHECK-COUNT-4: cvt.rn.f16x2.f32
  // CHECK: st.global.v4.b32
  // CHECK: ret;
  // SM80: .param .u64 read_values_param_34,
  // SM80-NOT: e4m3
  // SM80: ld.global.b32
  // SM80: ld.global.v2.b32
  // SM80-COUNT-8: cvt.f32.f16
  // SM80-COUNT-8: mul.rn.f32 {{.*}}, 0f43800000;
  // SM80: ld.global.b32
  // SM80-COUNT-8: mul.rn.f32
  // SM80-COUNT-4: cvt.rn.f16x2.f32
  // SM80: st.global.v4.b32
  // SM80: ret;
  gpu.module @readers {
    gpu.func @read_values(%cache: !cache, %batch: index, %out: memref<?x8x128xf16>) kernel
        attributes {known_block_size = array<i32: 128, 1, 1>} {
      %token = gpu.block_id x
      %thread = gpu.thread_id x
      %c8 = arith.constant 8 : index
      %c16 = arith.constant 16 : index
      %head = arith.divui %thread, %c16 : index
      %chunk = arith.remui %thread, %c16 : index
      %element = arith.muli %chunk, %c8 : index
      %values = kvcache.load %cache[%batch, %head, %token, %element] : !cache -> vector<8xf16>
      vector.store %values, %out[%token, %head, %element] {alignment = 16} : memref<?x8x128xf16>, vector<8xf16>
      gpu.return
    }
  }
}
