// RUN: kvcache-compile %s -o %t.ptx
// RUN: FileCheck %s --input-file=%t.ptx \
// RUN:   --implicit-check-not=div. --implicit-check-not=rem.
// RUN: kvcache-compile %s --chip sm_80 -o %t.sm_80.ptx
// RUN: FileCheck %s --input-file=%t.sm_80.ptx \
// RUN:   --implicit-check-not=div. --implicit-check-not=rem.

// Page sizes that are not powers of two: the lookup splits the token
// position in 32 bits (token positions fit in i32), so LLVM turns the
// constant divisor into a 32-bit mul.hi sequence: no div/rem instruction, and
// no 64-bit division in particular. page-size-3-5-ptxas.test assembles the
// PTX.

!cache3 = !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 3>
!cache5 = !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 5>

module attributes {gpu.container_module} {
  gpu.module @kernels {
    // Token `block_id` of a page-size-3 cache copied to the same position of a
    // page-size-5 cache: one 128-bit load and one 128-bit store.

    // CHECK-LABEL: .visible .entry copy_3_to_5(
    // CHECK: .param .u32 copy_3_to_5_param_23,
    // CHECK-NEXT: .param .u32 copy_3_to_5_param_24,
    // CHECK: .param .u32 copy_3_to_5_param_48,
    // CHECK-NEXT: .param .u32 copy_3_to_5_param_49,
    // CHECK-NEXT: .param .u64 copy_3_to_5_param_50
    // CHECK-NEXT: )
    // CHECK-NOT: {{\.[bu]16|\.v4\.}}
    // CHECK: mul.hi.u32
    // CHECK-NOT: {{\.[bu]16|\.v4\.}}
    // CHECK: ld.global.b32
    // CHECK-NOT: {{\.[bu]16|\.v4\.}}
    // CHECK: ld.global.v4.b32 {%r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}}, [%rd{{[0-9]+}}];
    // CHECK-NOT: {{\.[bu]16|\.v4\.}}
    // CHECK: mul.hi.u32
    // CHECK-NOT: {{\.[bu]16|\.v4\.}}
    // CHECK: ld.global.b32
    // CHECK-NOT: {{\.[bu]16|\.v4\.}}
    // CHECK: st.global.v4.b32 [%rd{{[0-9]+}}], {%r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}};
    // CHECK-NOT: {{\.[bu]16|\.v4\.}}
    // CHECK: ret;
    gpu.func @copy_3_to_5(%src: !cache3, %dst: !cache5, %batch: index) kernel
        attributes {known_block_size = array<i32: 128, 1, 1>} {
      %token = gpu.block_id x
      %thread = gpu.thread_id x
      %c8 = arith.constant 8 : index
      %c16 = arith.constant 16 : index
      %head = arith.divui %thread, %c16 : index
      %chunk = arith.remui %thread, %c16 : index
      %element = arith.muli %chunk, %c8 : index
      %x = kvcache.load %src[%batch, %head, %token, %element] : !cache3 -> vector<8xf16>
      kvcache.store %x, %dst[%batch, %head, %token, %element] : !cache5, vector<8xf16>
      gpu.return
    }

    // Lookups of a token position passed as an index parameter (any 32-bit
    // value, not a block id LLVM knows to be small): truncated to 32 bits,
    // then the unsigned magic-number division by 3 and by 5.

    // CHECK-LABEL: .visible .entry lookups(
    // CHECK: ld.param.b64 [[TOKEN64:%rd[0-9]+]], [lookups_param_51];
    // CHECK-NEXT: cvt.u32.u64 [[TOKEN:%r[0-9]+]], [[TOKEN64]];
    // CHECK-NEXT: mul.hi.u32 [[Q3:%r[0-9]+]], [[TOKEN]], -1431655765;
    // CHECK-NEXT: shr.u32 [[PAGE3:%r[0-9]+]], [[Q3]], 1;
    // CHECK: mul.wide.u32 %rd{{[0-9]+}}, [[PAGE3]], 4;
    // CHECK: ld.global.b32
    // CHECK: mul.hi.u32 [[Q5:%r[0-9]+]], [[TOKEN]], -858993459;
    // CHECK-NEXT: shr.u32 [[PAGE5:%r[0-9]+]], [[Q5]], 2;
    // CHECK: mul.wide.u32 %rd{{[0-9]+}}, [[PAGE5]], 4;
    // CHECK: ld.global.b32
    // CHECK: st.global.v4.b32
    // CHECK-NEXT: ret;
    gpu.func @lookups(%src: !cache3, %dst: !cache5, %batch: index, %token: index,
                      %out: memref<4xi32>) kernel {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c2 = arith.constant 2 : index
      %c3 = arith.constant 3 : index
      %page3, %slot3 = kvcache.lookup %src[%batch, %token] : !cache3
      %page5, %slot5 = kvcache.lookup %dst[%batch, %token] : !cache5
      %results = vector.from_elements %page3, %slot3, %page5, %slot5 : vector<4xindex>
      %results32 = arith.index_cast %results : vector<4xindex> to vector<4xi32>
      vector.store %results32, %out[%c0] {alignment = 16} : memref<4xi32>, vector<4xi32>
      gpu.return
    }
  }
}
