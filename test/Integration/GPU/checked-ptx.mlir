// RUN: kvcache-compile %s --checked -o %t.checked.ptx
// RUN: FileCheck %s --check-prefix=CHECKED --input-file=%t.checked.ptx \
// RUN:   --implicit-check-not=global.b16
// RUN: kvcache-compile %s --checked --chip sm_80 -o %t.checked.sm_80.ptx
// RUN: FileCheck %s --check-prefix=CHECKED --input-file=%t.checked.sm_80.ptx \
// RUN:   --implicit-check-not=global.b16
// RUN: kvcache-compile %s -o %t.ptx
// RUN: FileCheck %s --check-prefix=WRITES --input-file=%t.ptx \
// RUN:   --implicit-check-not=global.b16

// Run-time checks in PTX. With --checked (convert-kvcache-to-memref
// {checked=true}) every access is checked, and a failed check is the
// device-side assertion: a call of __assertfail, out of line after the
// kernel's `ret`. Without --checked only accesses through an
// assert_write_mode = 1 cache are checked (its writes, and its lookups, which
// count as writes); kernels on other caches have no check at all. Checked
// accesses stay single 128-bit accesses. checked-ptxas.test assembles both
// builds.

!cache = !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>
!checked_cache = !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16, assert_write_mode = 1>

// CHECKED: .extern .func __assertfail
// WRITES: .extern .func __assertfail

module attributes {gpu.container_module} {
  gpu.module @kernels {
    // CHECKED-LABEL: .visible .entry read_keys(
    // CHECKED: ld.global.v4.b32
    // CHECKED: st.global.v4.b32
    // CHECKED-NEXT: ret;
    // CHECKED: call.uni __assertfail,
    // WRITES-LABEL: .visible .entry read_keys(
    // WRITES-NOT: __assertfail
    // WRITES: ld.global.v4.b32
    // WRITES-NOT: __assertfail
    // WRITES: st.global.v4.b32
    // WRITES-NEXT: ret;
    // WRITES-NOT: __assertfail
    gpu.func @read_keys(%cache: !cache, %batch: index, %out: memref<?x8x128xf16>) kernel
        attributes {known_block_size = array<i32: 16, 8, 1>} {
      %token = gpu.block_id x
      %head = gpu.thread_id y
      %chunk = gpu.thread_id x
      %c8 = arith.constant 8 : index
      %element = arith.muli %chunk, %c8 : index
      %keys = kvcache.load %cache[%batch, %head, %token, %element] : !cache -> vector<8xf16>
      vector.store %keys, %out[%token, %head, %element] {alignment = 16} : memref<?x8x128xf16>, vector<8xf16>
      gpu.return
    }

    // CHECKED-LABEL: .visible .entry write_keys(
    // CHECKED: ld.global.v4.b32
    // CHECKED: st.global.v4.b32
    // CHECKED-NEXT: ret;
    // CHECKED: call.uni __assertfail,
    // WRITES-LABEL: .visible .entry write_keys(
    // WRITES-NOT: __assertfail
    // WRITES: ld.global.v4.b32
    // WRITES-NOT: __assertfail
    // WRITES: st.global.v4.b32
    // WRITES-NEXT: ret;
    // WRITES-NOT: __assertfail
    gpu.func @write_keys(%cache: !cache, %batch: index, %new: memref<?x8x128xf16>) kernel
        attributes {known_block_size = array<i32: 16, 8, 1>} {
      %token = gpu.block_id x
      %head = gpu.thread_id y
      %chunk = gpu.thread_id x
      %c8 = arith.constant 8 : index
      %element = arith.muli %chunk, %c8 : index
      %keys = vector.load %new[%token, %head, %element] {alignment = 16} : memref<?x8x128xf16>, vector<8xf16>
      kvcache.store %keys, %cache[%batch, %head, %token, %element] : !cache, vector<8xf16>
      gpu.return
    }

    // CHECKED-LABEL: .visible .entry copy_checked(
    // CHECKED: ld.global.v4.b32
    // CHECKED: st.global.v4.b32
    // CHECKED-NEXT: ret;
    // CHECKED: call.uni __assertfail,
    // WRITES-LABEL: .visible .entry copy_checked(
    // WRITES: ld.global.v4.b32
    // WRITES: st.global.v4.b32
    // WRITES-NEXT: ret;
    // WRITES: call.uni __assertfail,
    gpu.func @copy_checked(%src: !checked_cache, %dst: !checked_cache, %batch: index) kernel
        attributes {known_block_size = array<i32: 16, 8, 1>} {
      %token = gpu.block_id x
      %head = gpu.thread_id y
      %chunk = gpu.thread_id x
      %c8 = arith.constant 8 : index
      %element = arith.muli %chunk, %c8 : index
      %keys = kvcache.load %src[%batch, %head, %token, %element] : !checked_cache -> vector<8xf16>
      kvcache.store %keys, %dst[%batch, %head, %token, %element] : !checked_cache, vector<8xf16>
      gpu.return
    }
  }
}
