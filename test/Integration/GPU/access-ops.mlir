// RUN: kvcache-compile %s -o %t.ptx
// RUN: FileCheck %s --check-prefixes=CHECK,SM90 --input-file=%t.ptx \
// RUN:   --implicit-check-not=div. --implicit-check-not=rem.
// RUN: kvcache-compile %s --chip sm_80 -o %t.sm_80.ptx
// RUN: FileCheck %s --check-prefixes=CHECK,SM80 --input-file=%t.sm_80.ptx \
// RUN:   --implicit-check-not=div. --implicit-check-not=rem.

// User kernels written with the kvcache access ops on an f16 cache with a
// power-of-two page size (16 tokens of 8 heads x 128 elements), compiled to
// PTX; access-ops-ptxas.test assembles the same PTX with ptxas.
//
// What the PTX must show (docs/Contract.md, sections 3.2 and 7):
// - a vector<8xf16> load or store through the cache is one 128-bit global
//   access (ld/st.global.v4.b32), never eight 16-bit ones;
// - with page_size 16 the lookup is a 32-bit shift and mask: no div/rem
//   instruction anywhere in the file (the implicit checks above);
// - a !kvcache.paged_cache argument is 25 parameters, in the order of the
//   kernel ABI: the layer's 4-D blocks view (allocated and aligned pointer,
//   offset, 4 sizes, 4 strides), cache_lengths (5), lookup_table (7),
//   max_seq_length and max_cache_length (.u32 each).

// SM90: .target sm_90
// SM80: .target sm_80
// CHECK: .address_size 64

!cache = !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>
!tile = memref<16x128xf16, strided<[1024, 1], offset: ?>>

module attributes {gpu.container_module} {
  // (a) A reader: block `token`, 128 threads, each loading 8 keys of one head
  // of token `token` of sequence `batch` into `out[token, head, element]`.

  // CHECK-LABEL: .visible .entry read_keys(
  // The cache: the blocks view memref<?x16x8x128xf16, strided<[?, 1024, 128, 1], offset: ?>>.
  // CHECK-NEXT: .param .u64 .ptr .align 1 read_keys_param_0,
  // CHECK-NEXT: .param .u64 .ptr .align 1 read_keys_param_1,
  // CHECK-NEXT: .param .u64 read_keys_param_2,
  // CHECK-NEXT: .param .u64 read_keys_param_3,
  // CHECK-NEXT: .param .u64 read_keys_param_4,
  // CHECK-NEXT: .param .u64 read_keys_param_5,
  // CHECK-NEXT: .param .u64 read_keys_param_6,
  // CHECK-NEXT: .param .u64 read_keys_param_7,
  // CHECK-NEXT: .param .u64 read_keys_param_8,
  // CHECK-NEXT: .param .u64 read_keys_param_9,
  // CHECK-NEXT: .param .u64 read_keys_param_10,
  // cache_lengths: memref<?xi32>.
  // CHECK-NEXT: .param .u64 .ptr .align 1 read_keys_param_11,
  // CHECK-NEXT: .param .u64 .ptr .align 1 read_keys_param_12,
  // CHECK-NEXT: .param .u64 read_keys_param_13,
  // CHECK-NEXT: .param .u64 read_keys_param_14,
  // CHECK-NEXT: .param .u64 read_keys_param_15,
  // lookup_table: memref<?x?xi32>.
  // CHECK-NEXT: .param .u64 .ptr .align 1 read_keys_param_16,
  // CHECK-NEXT: .param .u64 .ptr .align 1 read_keys_param_17,
  // CHECK-NEXT: .param .u64 read_keys_param_18,
  // CHECK-NEXT: .param .u64 read_keys_param_19,
  // CHECK-NEXT: .param .u64 read_keys_param_20,
  // CHECK-NEXT: .param .u64 read_keys_param_21,
  // CHECK-NEXT: .param .u64 read_keys_param_22,
  // max_seq_length, max_cache_length.
  // CHECK-NEXT: .param .u32 read_keys_param_23,
  // CHECK-NEXT: .param .u32 read_keys_param_24,
  // %batch.
  // CHECK-NEXT: .param .u64 read_keys_param_25,
  // %out: memref<?x8x128xf16>.
  // CHECK-NEXT: .param .u64 .ptr .align 1 read_keys_param_26,
  // CHECK-NEXT: .param .u64 .ptr .align 1 read_keys_param_27,
  // CHECK-NEXT: .param .u64 read_keys_param_28,
  // CHECK-NEXT: .param .u64 read_keys_param_29,
  // CHECK-NEXT: .param .u64 read_keys_param_30,
  // CHECK-NEXT: .param .u64 read_keys_param_31,
  // CHECK-NEXT: .param .u64 read_keys_param_32,
  // CHECK-NEXT: .param .u64 read_keys_param_33,
  // CHECK-NEXT: .param .u64 read_keys_param_34
  // CHECK-NEXT: )
  // The logical page, token / 16, in 32 bits; then one lookup-table read.
  // CHECK-NOT: {{\.[bu]16}}
  // CHECK: shr.u32 %r{{[0-9]+}}, %r{{[0-9]+}}, 4;
  // CHECK-NOT: {{\.[bu]16}}
  // CHECK: ld.global.b32
  // CHECK-NOT: {{\.[bu]16|\.v4\.}}
  // CHECK: ld.global.v4.b32 {%r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}}, [%rd{{[0-9]+}}];
  // CHECK-NOT: {{\.[bu]16|\.v4\.}}
  // CHECK: st.global.v4.b32 [%rd{{[0-9]+}}], {%r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}};
  // CHECK-NOT: {{\.[bu]16|\.v4\.}}
  // CHECK: ret;
  gpu.module @readers {
    gpu.func @read_keys(%cache: !cache, %batch: index, %out: memref<?x8x128xf16>) kernel
        attributes {known_block_size = array<i32: 128, 1, 1>} {
      %token = gpu.block_id x
      %thread = gpu.thread_id x
      %c8 = arith.constant 8 : index
      %c16 = arith.constant 16 : index
      %head = arith.divui %thread, %c16 : index
      %chunk = arith.remui %thread, %c16 : index
      %element = arith.muli %chunk, %c8 : index
      %keys = kvcache.load %cache[%batch, %head, %token, %element] : !cache -> vector<8xf16>
      vector.store %keys, %out[%token, %head, %element] {alignment = 16} : memref<?x8x128xf16>, vector<8xf16>
      gpu.return
    }
  }

  // (b) A writer: the inverse of read_keys, from `new[token, head, element]`
  // into the cache. The kernels of both gpu.modules end up in one PTX file.

  // CHECK-LABEL: .visible .entry write_keys(
  // CHECK: .param .u32 write_keys_param_23,
  // CHECK-NEXT: .param .u32 write_keys_param_24,
  // CHECK-NEXT: .param .u64 write_keys_param_25,
  // CHECK: .param .u64 write_keys_param_34
  // CHECK-NEXT: )
  // CHECK-NOT: {{\.[bu]16|\.v4\.}}
  // CHECK: ld.global.v4.b32 {%r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}}, [%rd{{[0-9]+}}];
  // CHECK-NOT: {{\.[bu]16|\.v4\.}}
  // CHECK: shr.u32 %r{{[0-9]+}}, %r{{[0-9]+}}, 4;
  // CHECK-NOT: {{\.[bu]16|\.v4\.}}
  // CHECK: ld.global.b32
  // CHECK-NOT: {{\.[bu]16|\.v4\.}}
  // CHECK: st.global.v4.b32 [%rd{{[0-9]+}}], {%r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}};
  // CHECK-NOT: {{\.[bu]16|\.v4\.}}
  // CHECK: ret;
  gpu.module @writers {
    gpu.func @write_keys(%cache: !cache, %batch: index, %new: memref<?x8x128xf16>) kernel
        attributes {known_block_size = array<i32: 128, 1, 1>} {
      %token = gpu.block_id x
      %thread = gpu.thread_id x
      %c8 = arith.constant 8 : index
      %c16 = arith.constant 16 : index
      %head = arith.divui %thread, %c16 : index
      %chunk = arith.remui %thread, %c16 : index
      %element = arith.muli %chunk, %c8 : index
      %keys = vector.load %new[%token, %head, %element] {alignment = 16} : memref<?x8x128xf16>, vector<8xf16>
      kvcache.store %keys, %cache[%batch, %head, %token, %element] : !cache, vector<8xf16>
      gpu.return
    }

    // (c) Every access op in one kernel: token `src` of K is copied to V
    // through a shared lookup (page_load/page_store), token `dst` of V back to
    // K (load/store), and the 16-row tile of K starting at token
    // 16 * block_id is read row by row with 128-bit vector.loads into `out`.

    // CHECK-LABEL: .visible .entry mixed(
    // Two caches (25 parameters each), three indices, a 3-D memref.
    // CHECK: .param .u32 mixed_param_23,
    // CHECK-NEXT: .param .u32 mixed_param_24,
    // CHECK-NEXT: .param .u64 .ptr .align 1 mixed_param_25,
    // CHECK: .param .u32 mixed_param_48,
    // CHECK-NEXT: .param .u32 mixed_param_49,
    // CHECK-NEXT: .param .u64 mixed_param_50,
    // CHECK-NEXT: .param .u64 mixed_param_51,
    // CHECK-NEXT: .param .u64 mixed_param_52,
    // CHECK-NEXT: .param .u64 .ptr .align 1 mixed_param_53,
    // CHECK: .param .u64 mixed_param_61
    // CHECK-NEXT: )
    // page_load of K, page_store into V, load of V, store into K.
    // CHECK-NOT: {{\.[bu]16|\.v4\.}}
    // CHECK: ld.global.v4.b32
    // CHECK-NOT: {{\.[bu]16|\.v4\.}}
    // CHECK: st.global.v4.b32
    // CHECK-NOT: {{\.[bu]16|\.v4\.}}
    // CHECK: ld.global.v4.b32
    // CHECK-NOT: {{\.[bu]16|\.v4\.}}
    // CHECK: st.global.v4.b32
    // The tile: row r is 2048 bytes (8 heads x 128 f16) after row 0.
    // CHECK-NOT: {{\.[bu]16|\.v4\.}}
    // CHECK: ld.global.v4.b32 {{.*}}, {{\[}}[[TILE:%rd[0-9]+]]{{\]}};
    // CHECK-NEXT: st.global.v4.b32
    // CHECK-NEXT: ld.global.v4.b32 {{.*}}, {{\[}}[[TILE]]+2048{{\]}};
    // CHECK-NOT: {{\.[bu]16}}
    // CHECK: ld.global.v4.b32 {{.*}}, {{\[}}[[TILE]]+30720{{\]}};
    // CHECK-NEXT: st.global.v4.b32
    // CHECK-NEXT: ret;
    gpu.func @mixed(%keys: !cache, %values: !cache, %batch: index, %src: index, %dst: index,
                    %out: memref<?x16x128xf16>) kernel
        attributes {known_block_size = array<i32: 16, 8, 1>} {
      %head = gpu.thread_id y
      %chunk = gpu.thread_id x
      %tile_index = gpu.block_id x
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c8 = arith.constant 8 : index
      %c16 = arith.constant 16 : index
      %element = arith.muli %chunk, %c8 : index
      %page, %slot = kvcache.lookup %keys[%batch, %src] : !cache
      %k = kvcache.page_load %keys[%page, %slot, %head, %element] : !cache -> vector<8xf16>
      kvcache.page_store %k, %values[%page, %slot, %head, %element] : !cache, vector<8xf16>
      %v = kvcache.load %values[%batch, %head, %dst, %element] : !cache -> vector<8xf16>
      kvcache.store %v, %keys[%batch, %head, %dst, %element] : !cache, vector<8xf16>
      %first = arith.muli %tile_index, %c16 : index
      %tile = kvcache.tile %keys[%batch, %first, %head] : !cache -> !tile
      scf.for %row = %c0 to %c16 step %c1 {
        %x = vector.load %tile[%row, %element] {alignment = 16} : !tile, vector<8xf16>
        %token = arith.addi %first, %row : index
        vector.store %x, %out[%token, %head, %element] {alignment = 16} : memref<?x16x128xf16>, vector<8xf16>
      }
      gpu.return
    }
  }
}
