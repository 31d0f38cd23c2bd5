// RUN: kvcache-opt %s -convert-kvcache-to-memref | FileCheck %s

// On an assert_write_mode = 1 cache (without checked=true) the inherent unit
// attributes decide which reads are checked like writes: `serves_write` makes
// a cache_length or a page_load checked, `read_only` makes a lookup
// unchecked.

!write_checked = !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16, assert_write_mode = 1>

// CHECK-DAG: llvm.mlir.global private constant @{{.*}}("kvcache run-time check failed: kvcache.cache_length at write.py:1:1: batch index %lld is out of range: the size of cache_lengths is %lld\0A\00")
// CHECK-DAG: llvm.mlir.global private constant @{{.*}}("kvcache run-time check failed: kvcache.page_load at write.py:2:1: physical page %lld is out of range: num_pages is %lld\0A\00")
// CHECK-DAG: llvm.mlir.global private constant @{{.*}}("kvcache run-time check failed: kvcache.lookup at write.py:3:1: physical page (lookup_table entry) %lld is out of range: num_pages is %lld\0A\00")

// CHECK-LABEL: func.func @cache_length_serves_write
// CHECK: scf.if
// CHECK: llvm.call @abort
// CHECK: memref.load
// CHECK: return
func.func @cache_length_serves_write(%k: !write_checked, %b: index) -> index {
  %n = kvcache.cache_length %k[%b] {serves_write} : !write_checked loc("write.py":1:1)
  return %n : index
}

// CHECK-LABEL: func.func @cache_length_read
// CHECK-NOT: scf.if
// CHECK: return
func.func @cache_length_read(%k: !write_checked, %b: index) -> index {
  %n = kvcache.cache_length %k[%b] : !write_checked
  return %n : index
}

// CHECK-LABEL: func.func @page_load_serves_write
// CHECK: scf.if
// CHECK: llvm.call @abort
// CHECK: vector.load
// CHECK: return
func.func @page_load_serves_write(%k: !write_checked, %page: index, %slot: index, %h: index, %d: index) -> vector<8xf16> {
  %x = kvcache.page_load %k[%page, %slot, %h, %d] {serves_write} : !write_checked -> vector<8xf16> loc("write.py":2:1)
  return %x : vector<8xf16>
}

// CHECK-LABEL: func.func @page_load_read
// CHECK-NOT: scf.if
// CHECK: return
func.func @page_load_read(%k: !write_checked, %page: index, %slot: index, %h: index, %d: index) -> vector<8xf16> {
  %x = kvcache.page_load %k[%page, %slot, %h, %d] : !write_checked -> vector<8xf16>
  return %x : vector<8xf16>
}

// CHECK-LABEL: func.func @lookup_of_write
// CHECK: scf.if
// CHECK: llvm.call @abort
// CHECK: return
func.func @lookup_of_write(%k: !write_checked, %b: index, %t: index) -> (index, index) {
  %page, %slot = kvcache.lookup %k[%b, %t] : !write_checked loc("write.py":3:1)
  return %page, %slot : index, index
}

// CHECK-LABEL: func.func @lookup_read_only
// CHECK-NOT: scf.if
// CHECK: return
func.func @lookup_read_only(%k: !write_checked, %b: index, %t: index) -> (index, index) {
  %page, %slot = kvcache.lookup %k[%b, %t] {read_only} : !write_checked
  return %page, %slot : index, index
}
