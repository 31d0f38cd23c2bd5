// RUN: kvcache-opt %s -convert-kvcache-to-memref -split-input-file | FileCheck %s --check-prefix=UNCHECKED
// RUN: kvcache-opt %s -convert-kvcache-to-memref=checked=true -split-input-file | FileCheck %s --check-prefix=CHECKED
// RUN: kvcache-opt %s -kvcache-expand-accesses -convert-kvcache-to-memref=checked=true -split-input-file | FileCheck %s --check-prefix=EXPANDED

// Run-time checks (docs/Contract.md, section 5). With checked=true every
// access checks its indices; without it only writes through an
// assert_write_mode = 1 cache are checked. A failed check on the host prints a
// message naming the op, its location, the value and the bound to stderr
// (dprintf to fd 2) and aborts: "<what> %lld is out of range: <bound name> is
// %lld". In device code it is a cf.assert without the values: "<what> is out
// of range (must be below <bound name>)" or "<what> is not a multiple of <N>".
// Ops carry explicit locations so that the messages are exact.

!cache = !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>

// CHECKED-DAG: llvm.mlir.global private constant @[[POSITION_MSG:__kvcache_check_message_[0-9A-F]+]]("kvcache run-time check failed: kvcache.load at attention.py:10:5: token position %lld is out of range: 2^32 (positions are unsigned 32-bit) is %lld\0A\00")
// CHECKED-DAG: llvm.mlir.global private constant @[[BATCH_MSG:__kvcache_check_message_[0-9A-F]+]]("kvcache run-time check failed: kvcache.load at attention.py:10:5: batch index %lld is out of range: the number of lookup_table rows is %lld\0A\00")
// CHECKED-DAG: llvm.mlir.global private constant @[[COLUMN_MSG:__kvcache_check_message_[0-9A-F]+]]("kvcache run-time check failed: kvcache.load at attention.py:10:5: logical page (token / page_size) %lld is out of range: the number of lookup_table columns is %lld\0A\00")
// CHECKED-DAG: llvm.mlir.global private constant @[[ENTRY_MSG:__kvcache_check_message_[0-9A-F]+]]("kvcache run-time check failed: kvcache.load at attention.py:10:5: physical page (lookup_table entry) %lld is out of range: num_pages is %lld\0A\00")
// CHECKED-DAG: llvm.mlir.global private constant @[[HEAD_MSG:__kvcache_check_message_[0-9A-F]+]]("kvcache run-time check failed: kvcache.load at attention.py:10:5: head index %lld is out of range: num_heads is %lld\0A\00")
// CHECKED-DAG: llvm.mlir.global private constant @[[ELEMENT_MSG:__kvcache_check_message_[0-9A-F]+]]("kvcache run-time check failed: kvcache.load at attention.py:10:5: first element index %lld is out of range: head_size - vector width + 1 is %lld\0A\00")
// CHECKED-DAG: llvm.mlir.global private constant @[[ALIGN_MSG:__kvcache_check_message_[0-9A-F]+]]("kvcache run-time check failed: kvcache.load at attention.py:10:5: first element index %lld is not a multiple of %lld\0A\00")
// CHECKED-DAG: llvm.func @abort()
// CHECKED-DAG: llvm.func @dprintf(i32, !llvm.ptr, ...) -> i32

// CHECKED-LABEL: func.func @load_vector
// CHECKED-SAME: (%[[VIEW:[a-z0-9_]+]]: memref<?x16x8x128xf16, strided<[?, 1024, 128, 1], offset: ?>>, %{{[a-z0-9_]+}}: memref<?xi32>, %[[LOOKUP_TABLE:[a-z0-9_]+]]: memref<?x?xi32>, %{{[a-z0-9_]+}}: i32, %{{[a-z0-9_]+}}: i32, %[[BATCH:[a-z0-9_]+]]: index, %[[HEAD:[a-z0-9_]+]]: index, %[[TOKEN:[a-z0-9_]+]]: index, %[[ELEMENT:[a-z0-9_]+]]: index)
// Lookup: first of all, the token position fits in 32 bits, in full.
// CHECKED-NEXT: %[[TWO_POW_32:.*]] = arith.constant 4294967296 : index
// CHECKED-NEXT: %[[POSITION_OK:.*]] = arith.cmpi ult, %[[TOKEN]], %[[TWO_POW_32]] : index
// CHECKED-NEXT: %[[POSITION_TRUE:.*]] = arith.constant true
// CHECKED-NEXT: %[[POSITION_BAD:.*]] = arith.xori %[[POSITION_OK]], %[[POSITION_TRUE]] : i1
// CHECKED-NEXT: scf.if %[[POSITION_BAD]] {
// CHECKED-NEXT:   %[[POSITION_FORMAT:.*]] = llvm.mlir.addressof @[[POSITION_MSG]] : !llvm.ptr
// CHECKED-NEXT:   %[[POSITION_STDERR:.*]] = llvm.mlir.constant(2 : i32) : i32
// CHECKED-NEXT:   %[[POSITION_VALUE:.*]] = arith.index_cast %[[TOKEN]] : index to i64
// CHECKED-NEXT:   %[[POSITION_BOUND:.*]] = arith.index_cast %[[TWO_POW_32]] : index to i64
// CHECKED-NEXT:   llvm.call @dprintf(%[[POSITION_STDERR]], %[[POSITION_FORMAT]], %[[POSITION_VALUE]], %[[POSITION_BOUND]]) vararg(!llvm.func<i32 (i32, ptr, ...)>) : (i32, !llvm.ptr, i64, i64) -> i32
// CHECKED-NEXT:   llvm.call @abort() : () -> ()
// CHECKED-NEXT: }
// CHECKED-NEXT: arith.index_castui %[[TOKEN]] : index to i32
// CHECKED-NOT: llvm.mlir.addressof
// Lookup: batch < lookup_table rows, in full.
// CHECKED: %[[ROWS:.*]] = memref.dim %[[LOOKUP_TABLE]], %{{.*}} : memref<?x?xi32>
// CHECKED: %[[BATCH_OK:.*]] = arith.cmpi ult, %[[BATCH]], %[[ROWS]] : index
// CHECKED: %[[TRUE:.*]] = arith.constant true
// CHECKED: %[[BATCH_BAD:.*]] = arith.xori %[[BATCH_OK]], %[[TRUE]] : i1
// CHECKED: scf.if %[[BATCH_BAD]] {
// CHECKED:   %[[FORMAT:.*]] = llvm.mlir.addressof @[[BATCH_MSG]] : !llvm.ptr
// CHECKED:   %[[STDERR:.*]] = llvm.mlir.constant(2 : i32) : i32
// CHECKED:   %[[VALUE:.*]] = arith.index_cast %[[BATCH]] : index to i64
// CHECKED:   %[[BOUND:.*]] = arith.index_cast %[[ROWS]] : index to i64
// CHECKED:   llvm.call @dprintf(%[[STDERR]], %[[FORMAT]], %[[VALUE]], %[[BOUND]]) vararg(!llvm.func<i32 (i32, ptr, ...)>) : (i32, !llvm.ptr, i64, i64) -> i32
// CHECKED:   llvm.call @abort() : () -> ()
// CHECKED: }
// CHECKED-NOT: llvm.mlir.addressof
// Lookup: logical page < columns, then the entry < num_pages.
// CHECKED: %[[COLUMNS:.*]] = memref.dim %[[LOOKUP_TABLE]], %{{.*}} : memref<?x?xi32>
// CHECKED: arith.cmpi ult, %{{.*}}, %[[COLUMNS]] : index
// CHECKED: llvm.mlir.addressof @[[COLUMN_MSG]]
// CHECKED-NOT: llvm.mlir.addressof
// CHECKED: %[[PAGE_I32:.*]] = memref.load %[[LOOKUP_TABLE]][%[[BATCH]], %{{.*}}] : memref<?x?xi32>
// CHECKED: %[[PAGE:.*]] = arith.index_castui %[[PAGE_I32]] : i32 to index
// CHECKED: %[[NUM_PAGES:.*]] = memref.dim %[[VIEW]], %{{.*}}
// CHECKED: arith.cmpi ult, %[[PAGE]], %[[NUM_PAGES]] : index
// CHECKED: llvm.mlir.addressof @[[ENTRY_MSG]]
// Element access: no second page check (the lookup checked the entry) and no
// slot check (token mod 16 < 16); head < 8, element <= 128 - 8,
// element % 8 == 0. No other message is referenced in between.
// CHECKED-NOT: llvm.mlir.addressof
// CHECKED-NOT: arith.cmpi ult, %[[PAGE]],
// CHECKED: %[[SLOT:.*]] = arith.index_castui %{{.*}} : i32 to index
// CHECKED-NOT: llvm.mlir.addressof
// CHECKED-NOT: arith.cmpi ult, %[[PAGE]],
// CHECKED-NOT: arith.cmpi ult, %[[SLOT]],
// CHECKED: %[[C8:.*]] = arith.constant 8 : index
// CHECKED: arith.cmpi ult, %[[HEAD]], %[[C8]] : index
// CHECKED: llvm.mlir.addressof @[[HEAD_MSG]]
// CHECKED-NOT: llvm.mlir.addressof
// CHECKED: %[[C121:.*]] = arith.constant 121 : index
// CHECKED: arith.cmpi ult, %[[ELEMENT]], %[[C121]] : index
// CHECKED: llvm.mlir.addressof @[[ELEMENT_MSG]]
// CHECKED-NOT: llvm.mlir.addressof
// CHECKED: %[[WIDTH:.*]] = arith.constant 8 : index
// CHECKED: %[[REMAINDER:.*]] = arith.remui %[[ELEMENT]], %[[WIDTH]] : index
// CHECKED: %[[ZERO:.*]] = arith.constant 0 : index
// CHECKED: arith.cmpi eq, %[[REMAINDER]], %[[ZERO]] : index
// CHECKED: llvm.mlir.addressof @[[ALIGN_MSG]]
// CHECKED-NOT: llvm.mlir.addressof
// CHECKED-NOT: arith.cmpi ult, %[[PAGE]],
// CHECKED-NOT: arith.cmpi ult, %[[SLOT]],
// CHECKED: vector.load %[[VIEW]][%[[PAGE]], %[[SLOT]], %[[HEAD]], %[[ELEMENT]]] {alignment = 16 : i64}
// CHECKED-NEXT: return

// Without checked=true: no checks, no message, no declarations.
// UNCHECKED-NOT: llvm.mlir.global
// UNCHECKED-NOT: llvm.func
// UNCHECKED-LABEL: func.func @load_vector
// UNCHECKED-NOT: arith.cmpi
// UNCHECKED-NOT: scf.if
// UNCHECKED-NOT: dprintf
// UNCHECKED: vector.load
// UNCHECKED-NOT: scf.if
// UNCHECKED: return
func.func @load_vector(%key: !cache, %batch: index, %head: index, %token: index, %element: index) -> vector<8xf16> {
  %x = kvcache.load %key[%batch, %head, %token, %element] : !cache -> vector<8xf16> loc("attention.py":10:5)
  return %x : vector<8xf16>
}

// After kvcache-expand-accesses the checks still name the load, the token
// position first. The page_load gets its page and slot as operands and checks
// them itself.

// EXPANDED-DAG: llvm.mlir.global private constant @[[X_POSITION_MSG:__kvcache_check_message_[0-9A-F]+]]("kvcache run-time check failed: kvcache.load (kvcache.lookup) at attention.py:10:5: token position %lld is out of range: 2^32 (positions are unsigned 32-bit) is %lld\0A\00")
// EXPANDED-DAG: llvm.mlir.global private constant @[[X_BATCH_MSG:__kvcache_check_message_[0-9A-F]+]]("kvcache run-time check failed: kvcache.load (kvcache.lookup) at attention.py:10:5: batch index %lld is out of range: the number of lookup_table rows is %lld\0A\00")
// EXPANDED-DAG: llvm.mlir.global private constant @[[X_ENTRY_MSG:__kvcache_check_message_[0-9A-F]+]]("kvcache run-time check failed: kvcache.load (kvcache.lookup) at attention.py:10:5: physical page (lookup_table entry) %lld is out of range: num_pages is %lld\0A\00")
// EXPANDED-DAG: llvm.mlir.global private constant @[[X_PAGE_MSG:__kvcache_check_message_[0-9A-F]+]]("kvcache run-time check failed: kvcache.load (kvcache.page_load) at attention.py:10:5: physical page %lld is out of range: num_pages is %lld\0A\00")
// EXPANDED-DAG: llvm.mlir.global private constant @[[X_SLOT_MSG:__kvcache_check_message_[0-9A-F]+]]("kvcache run-time check failed: kvcache.load (kvcache.page_load) at attention.py:10:5: slot %lld is out of range: page_size is %lld\0A\00")
// EXPANDED-DAG: llvm.mlir.global private constant @[[X_HEAD_MSG:__kvcache_check_message_[0-9A-F]+]]("kvcache run-time check failed: kvcache.load (kvcache.page_load) at attention.py:10:5: head index %lld is out of range: num_heads is %lld\0A\00")
// EXPANDED-LABEL: func.func @load_vector
// EXPANDED-NEXT: arith.constant 4294967296 : index
// EXPANDED: llvm.mlir.addressof @[[X_POSITION_MSG]]
// EXPANDED: llvm.mlir.addressof @[[X_BATCH_MSG]]
// EXPANDED: llvm.mlir.addressof @[[X_ENTRY_MSG]]
// EXPANDED: llvm.mlir.addressof @[[X_PAGE_MSG]]
// EXPANDED: llvm.mlir.addressof @[[X_SLOT_MSG]]
// EXPANDED: llvm.mlir.addressof @[[X_HEAD_MSG]]
// EXPANDED: vector.load

// -----

// A scalar access has no alignment check. A store, like a load, checks its
// lookup (token position first) and then neither the page again nor the slot.

!cache = !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>

// CHECKED-DAG: llvm.mlir.global private constant @[[POSITION_MSG:__kvcache_check_message_[0-9A-F]+]]("kvcache run-time check failed: kvcache.store at decode.py:3:1: token position %lld is out of range: 2^32 (positions are unsigned 32-bit) is %lld\0A\00")
// CHECKED-DAG: llvm.mlir.global private constant @[[BATCH_MSG:__kvcache_check_message_[0-9A-F]+]]("kvcache run-time check failed: kvcache.store at decode.py:3:1: batch index %lld is out of range: the number of lookup_table rows is %lld\0A\00")
// CHECKED-DAG: llvm.mlir.global private constant @[[COLUMN_MSG:__kvcache_check_message_[0-9A-F]+]]("kvcache run-time check failed: kvcache.store at decode.py:3:1: logical page (token / page_size) %lld is out of range: the number of lookup_table columns is %lld\0A\00")
// CHECKED-DAG: llvm.mlir.global private constant @[[ENTRY_MSG:__kvcache_check_message_[0-9A-F]+]]("kvcache run-time check failed: kvcache.store at decode.py:3:1: physical page (lookup_table entry) %lld is out of range: num_pages is %lld\0A\00")
// CHECKED-DAG: llvm.mlir.global private constant @[[HEAD_MSG:__kvcache_check_message_[0-9A-F]+]]("kvcache run-time check failed: kvcache.store at decode.py:3:1: head index %lld is out of range: num_heads is %lld\0A\00")
// CHECKED-DAG: llvm.mlir.global private constant @[[ELEMENT_MSG:__kvcache_check_message_[0-9A-F]+]]("kvcache run-time check failed: kvcache.store at decode.py:3:1: first element index %lld is out of range: head_size - vector width + 1 is %lld\0A\00")
// CHECKED-LABEL: func.func @store_scalar
// CHECKED-SAME: %[[TOKEN:[a-z0-9_]+]]: index, %[[ELEMENT:[a-z0-9_]+]]: index)
// CHECKED-NEXT: %[[TWO_POW_32:.*]] = arith.constant 4294967296 : index
// CHECKED-NEXT: arith.cmpi ult, %[[TOKEN]], %[[TWO_POW_32]] : index
// CHECKED: llvm.mlir.addressof @[[POSITION_MSG]]
// CHECKED-NOT: llvm.mlir.addressof
// CHECKED: llvm.mlir.addressof @[[BATCH_MSG]]
// CHECKED-NOT: llvm.mlir.addressof
// CHECKED: llvm.mlir.addressof @[[COLUMN_MSG]]
// CHECKED-NOT: llvm.mlir.addressof
// CHECKED: %[[PAGE_I32:.*]] = memref.load
// CHECKED-NEXT: %[[PAGE:.*]] = arith.index_castui %[[PAGE_I32]] : i32 to index
// CHECKED: arith.cmpi ult, %[[PAGE]], %{{.*}} : index
// CHECKED: llvm.mlir.addressof @[[ENTRY_MSG]]
// CHECKED-NOT: llvm.mlir.addressof
// CHECKED-NOT: arith.cmpi ult, %[[PAGE]],
// CHECKED: %[[SLOT:.*]] = arith.index_castui %{{.*}} : i32 to index
// CHECKED-NOT: llvm.mlir.addressof
// CHECKED-NOT: arith.cmpi ult, %[[PAGE]],
// CHECKED-NOT: arith.cmpi ult, %[[SLOT]],
// CHECKED: llvm.mlir.addressof @[[HEAD_MSG]]
// CHECKED-NOT: llvm.mlir.addressof
// CHECKED: %[[C128:.*]] = arith.constant 128 : index
// CHECKED: arith.cmpi ult, %[[ELEMENT]], %[[C128]] : index
// CHECKED: llvm.mlir.addressof @[[ELEMENT_MSG]]
// CHECKED-NOT: arith.remui
// CHECKED-NOT: llvm.mlir.addressof
// CHECKED-NOT: arith.cmpi ult, %[[PAGE]],
// CHECKED-NOT: arith.cmpi ult, %[[SLOT]],
// CHECKED: memref.store %{{.*}}, %{{.*}}[%[[PAGE]], %[[SLOT]], %{{.*}}, %[[ELEMENT]]]

// UNCHECKED-NOT: llvm.mlir.global
// UNCHECKED-LABEL: func.func @store_scalar
// UNCHECKED-NOT: scf.if
// UNCHECKED: memref.store
// UNCHECKED-NEXT: return
func.func @store_scalar(%key: !cache, %x: f16, %batch: index, %head: index, %token: index, %element: index) {
  kvcache.store %x, %key[%batch, %head, %token, %element] : !cache, f16 loc("decode.py":3:1)
  return
}

// -----

// page_load / page_store check the element access only, without a lookup:
// the page and the slot are given, so both are checked.

!cache = !kvcache.paged_cache<bf16, num_heads = 2, head_size = 64, page_size = 32>

// CHECKED-DAG: llvm.mlir.global private constant @[[LOAD_PAGE_MSG:__kvcache_check_message_[0-9A-F]+]]("kvcache run-time check failed: kvcache.page_load at copy.py:1:1: physical page %lld is out of range: num_pages is %lld\0A\00")
// CHECKED-DAG: llvm.mlir.global private constant @[[LOAD_SLOT_MSG:__kvcache_check_message_[0-9A-F]+]]("kvcache run-time check failed: kvcache.page_load at copy.py:1:1: slot %lld is out of range: page_size is %lld\0A\00")
// CHECKED-DAG: llvm.mlir.global private constant @[[LOAD_HEAD_MSG:__kvcache_check_message_[0-9A-F]+]]("kvcache run-time check failed: kvcache.page_load at copy.py:1:1: head index %lld is out of range: num_heads is %lld\0A\00")
// CHECKED-DAG: llvm.mlir.global private constant @[[LOAD_ELEMENT_MSG:__kvcache_check_message_[0-9A-F]+]]("kvcache run-time check failed: kvcache.page_load at copy.py:1:1: first element index %lld is out of range: head_size - vector width + 1 is %lld\0A\00")
// CHECKED-DAG: llvm.mlir.global private constant @[[LOAD_ALIGN_MSG:__kvcache_check_message_[0-9A-F]+]]("kvcache run-time check failed: kvcache.page_load at copy.py:1:1: first element index %lld is not a multiple of %lld\0A\00")
// CHECKED-DAG: llvm.mlir.global private constant @[[STORE_PAGE_MSG:__kvcache_check_message_[0-9A-F]+]]("kvcache run-time check failed: kvcache.page_store at copy.py:2:1: physical page %lld is out of range: num_pages is %lld\0A\00")
// CHECKED-DAG: llvm.mlir.global private constant @[[STORE_SLOT_MSG:__kvcache_check_message_[0-9A-F]+]]("kvcache run-time check failed: kvcache.page_store at copy.py:2:1: slot %lld is out of range: page_size is %lld\0A\00")
// CHECKED-LABEL: func.func @page_load_store
// CHECKED-SAME: (%[[VIEW:[a-z0-9_]+]]: memref<?x32x2x64xbf16, strided<[?, 128, 64, 1], offset: ?>>, %{{[a-z0-9_]+}}: memref<?xi32>, %{{[a-z0-9_]+}}: memref<?x?xi32>, %{{[a-z0-9_]+}}: i32, %{{[a-z0-9_]+}}: i32, %[[PAGE:[a-z0-9_]+]]: index, %[[SLOT:[a-z0-9_]+]]: index, %[[HEAD:[a-z0-9_]+]]: index, %[[ELEMENT:[a-z0-9_]+]]: index)
// CHECKED-NOT: memref.load
// CHECKED-NOT: arith.constant 4294967296
// CHECKED: %[[NUM_PAGES:.*]] = memref.dim %[[VIEW]], %{{.*}}
// CHECKED: arith.cmpi ult, %[[PAGE]], %[[NUM_PAGES]] : index
// CHECKED: llvm.mlir.addressof @[[LOAD_PAGE_MSG]]
// CHECKED: %[[C32:.*]] = arith.constant 32 : index
// CHECKED: arith.cmpi ult, %[[SLOT]], %[[C32]] : index
// CHECKED: llvm.mlir.addressof @[[LOAD_SLOT_MSG]]
// CHECKED: arith.cmpi ult, %[[HEAD]], %{{.*}} : index
// CHECKED: llvm.mlir.addressof @[[LOAD_HEAD_MSG]]
// CHECKED: %[[C61:.*]] = arith.constant 61 : index
// CHECKED: arith.cmpi ult, %[[ELEMENT]], %[[C61]] : index
// CHECKED: llvm.mlir.addressof @[[LOAD_ELEMENT_MSG]]
// CHECKED: arith.remui %[[ELEMENT]], %{{.*}} : index
// CHECKED: llvm.mlir.addressof @[[LOAD_ALIGN_MSG]]
// CHECKED: %[[X:.*]] = vector.load %[[VIEW]][%[[PAGE]], %[[SLOT]], %[[HEAD]], %[[ELEMENT]]] {alignment = 8 : i64}
// CHECKED-NOT: arith.constant 4294967296
// CHECKED: arith.cmpi ult, %[[PAGE]], %{{.*}} : index
// CHECKED: llvm.mlir.addressof @[[STORE_PAGE_MSG]]
// CHECKED: arith.cmpi ult, %[[SLOT]], %{{.*}} : index
// CHECKED: llvm.mlir.addressof @[[STORE_SLOT_MSG]]
// CHECKED: vector.store %[[X]], %[[VIEW]][%[[PAGE]], %[[SLOT]], %[[HEAD]], %[[ELEMENT]]] {alignment = 8 : i64}

// UNCHECKED-LABEL: func.func @page_load_store
// UNCHECKED-NOT: scf.if
// UNCHECKED: vector.load
// UNCHECKED-NEXT: vector.store
// UNCHECKED-NEXT: return
func.func @page_load_store(%key: !cache, %page: index, %slot: index, %head: index, %element: index) {
  %x = kvcache.page_load %key[%page, %slot, %head, %element] : !cache -> vector<4xbf16> loc("copy.py":1:1)
  kvcache.page_store %x, %key[%page, %slot, %head, %element] : !cache, vector<4xbf16> loc("copy.py":2:1)
  return
}

// -----

// Metadata and layer accesses: cache_length checks the batch index,
// get_*_cache the layer index; max_* read no memory and check nothing.

!collection = !kvcache.paged_collection<f32, num_heads = 2, head_size = 64, page_size = 4>
!cache = !kvcache.paged_cache<f32, num_heads = 2, head_size = 64, page_size = 4>

// CHECKED-DAG: llvm.mlir.global private constant @[[LENGTH_MSG:__kvcache_check_message_[0-9A-F]+]]("kvcache run-time check failed: kvcache.cache_length at meta.py:1:1: batch index %lld is out of range: the size of cache_lengths is %lld\0A\00")
// CHECKED-DAG: llvm.mlir.global private constant @[[LAYER_MSG:__kvcache_check_message_[0-9A-F]+]]("kvcache run-time check failed: kvcache.get_value_cache at meta.py:2:1: layer index %lld is out of range: num_layers is %lld\0A\00")
// CHECKED-LABEL: func.func @metadata
// CHECKED-SAME: (%[[BLOCKS:[a-z0-9_]+]]: memref<?x2x?x4x2x64xf32, strided<[?, ?, ?, 128, 64, 1], offset: ?>>, %[[CACHE_LENGTHS:[a-z0-9_]+]]: memref<?xi32>, %{{[a-z0-9_]+}}: memref<?x?xi32>, %{{[a-z0-9_]+}}: i32, %{{[a-z0-9_]+}}: i32, %[[BATCH:[a-z0-9_]+]]: index, %[[LAYER:[a-z0-9_]+]]: index)
// CHECKED: %[[BATCH_SIZE:.*]] = memref.dim %[[CACHE_LENGTHS]], %{{.*}} : memref<?xi32>
// CHECKED: arith.cmpi ult, %[[BATCH]], %[[BATCH_SIZE]] : index
// CHECKED: llvm.mlir.addressof @[[LENGTH_MSG]]
// CHECKED: memref.load %[[CACHE_LENGTHS]][%[[BATCH]]]
// CHECKED: %[[C2:.*]] = arith.constant 2 : index
// CHECKED: %[[NUM_LAYERS:.*]] = memref.dim %[[BLOCKS]], %[[C2]]
// CHECKED: arith.cmpi ult, %[[LAYER]], %[[NUM_LAYERS]] : index
// CHECKED: llvm.mlir.addressof @[[LAYER_MSG]]
// CHECKED: memref.subview %[[BLOCKS]][0, 1, %[[LAYER]], 0, 0, 0]
// CHECKED-NOT: scf.if
// CHECKED: return

// UNCHECKED-LABEL: func.func @metadata
// UNCHECKED-NOT: scf.if
// UNCHECKED: return
func.func @metadata(%collection: !collection, %batch: index, %layer: index) -> (index, index, !cache) {
  %length = kvcache.cache_length %collection[%batch] : !collection loc("meta.py":1:1)
  %value = kvcache.get_value_cache %collection[%layer] : !collection loc("meta.py":2:1)
  %max_seq_length = kvcache.max_seq_length %value : !cache
  return %length, %max_seq_length, %value : index, index, !cache
}

// -----

// tile: the first token is a multiple of T, the head is in range, and the
// lookup is checked (token position first).

!cache = !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>

// CHECKED-DAG: llvm.mlir.global private constant @[[TOKEN_MSG:__kvcache_check_message_[0-9A-F]+]]("kvcache run-time check failed: kvcache.tile at tile.py:7:1: first token of the tile %lld is not a multiple of %lld\0A\00")
// CHECKED-DAG: llvm.mlir.global private constant @[[HEAD_MSG:__kvcache_check_message_[0-9A-F]+]]("kvcache run-time check failed: kvcache.tile at tile.py:7:1: head index %lld is out of range: num_heads is %lld\0A\00")
// CHECKED-DAG: llvm.mlir.global private constant @[[POSITION_MSG:__kvcache_check_message_[0-9A-F]+]]("kvcache run-time check failed: kvcache.tile at tile.py:7:1: token position %lld is out of range: 2^32 (positions are unsigned 32-bit) is %lld\0A\00")
// CHECKED-DAG: llvm.mlir.global private constant @[[BATCH_MSG:__kvcache_check_message_[0-9A-F]+]]("kvcache run-time check failed: kvcache.tile at tile.py:7:1: batch index %lld is out of range: the number of lookup_table rows is %lld\0A\00")
// CHECKED-DAG: llvm.mlir.global private constant @[[COLUMN_MSG:__kvcache_check_message_[0-9A-F]+]]("kvcache run-time check failed: kvcache.tile at tile.py:7:1: logical page (token / page_size) %lld is out of range: the number of lookup_table columns is %lld\0A\00")
// CHECKED-DAG: llvm.mlir.global private constant @[[ENTRY_MSG:__kvcache_check_message_[0-9A-F]+]]("kvcache run-time check failed: kvcache.tile at tile.py:7:1: physical page (lookup_table entry) %lld is out of range: num_pages is %lld\0A\00")
// CHECKED-LABEL: func.func @tile
// CHECKED-SAME: %[[BATCH:[a-z0-9_]+]]: index, %[[TOKEN:[a-z0-9_]+]]: index, %[[HEAD:[a-z0-9_]+]]: index)
// CHECKED: %[[ROWS:.*]] = arith.constant 8 : index
// CHECKED: %[[REMAINDER:.*]] = arith.remui %[[TOKEN]], %[[ROWS]] : index
// CHECKED: arith.cmpi eq, %[[REMAINDER]], %{{.*}} : index
// CHECKED: llvm.mlir.addressof @[[TOKEN_MSG]]
// CHECKED: arith.cmpi ult, %[[HEAD]], %{{.*}} : index
// CHECKED: llvm.mlir.addressof @[[HEAD_MSG]]
// CHECKED-NOT: llvm.mlir.addressof
// CHECKED: %[[TWO_POW_32:.*]] = arith.constant 4294967296 : index
// CHECKED: arith.cmpi ult, %[[TOKEN]], %[[TWO_POW_32]] : index
// CHECKED: llvm.mlir.addressof @[[POSITION_MSG]]
// CHECKED-NOT: llvm.mlir.addressof
// CHECKED: arith.cmpi ult, %[[BATCH]], %{{.*}} : index
// CHECKED: llvm.mlir.addressof @[[BATCH_MSG]]
// CHECKED-NOT: llvm.mlir.addressof
// CHECKED: llvm.mlir.addressof @[[COLUMN_MSG]]
// CHECKED-NOT: llvm.mlir.addressof
// CHECKED: llvm.mlir.addressof @[[ENTRY_MSG]]
// CHECKED-NOT: llvm.mlir.addressof
// CHECKED: memref.subview

// UNCHECKED-LABEL: func.func @tile
// UNCHECKED-NOT: scf.if
// UNCHECKED: memref.subview
func.func @tile(%key: !cache, %batch: index, %token: index, %head: index) -> memref<8x128xf16, strided<[1024, 1], offset: ?>> {
  %tile = kvcache.tile %key[%batch, %token, %head] : !cache -> memref<8x128xf16, strided<[1024, 1], offset: ?>> loc("tile.py":7:1)
  return %tile : memref<8x128xf16, strided<[1024, 1], offset: ?>>
}

// -----

// A lookup of its own is checked like the lookup inside a load: the token
// position first, then the batch index, the logical page and the entry.

!cache = !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>

// CHECKED-DAG: llvm.mlir.global private constant @[[POSITION_MSG:__kvcache_check_message_[0-9A-F]+]]("kvcache run-time check failed: kvcache.lookup at lookup.py:2:3: token position %lld is out of range: 2^32 (positions are unsigned 32-bit) is %lld\0A\00")
// CHECKED-DAG: llvm.mlir.global private constant @[[BATCH_MSG:__kvcache_check_message_[0-9A-F]+]]("kvcache run-time check failed: kvcache.lookup at lookup.py:2:3: batch index %lld is out of range: the number of lookup_table rows is %lld\0A\00")
// CHECKED-DAG: llvm.mlir.global private constant @[[COLUMN_MSG:__kvcache_check_message_[0-9A-F]+]]("kvcache run-time check failed: kvcache.lookup at lookup.py:2:3: logical page (token / page_size) %lld is out of range: the number of lookup_table columns is %lld\0A\00")
// CHECKED-DAG: llvm.mlir.global private constant @[[ENTRY_MSG:__kvcache_check_message_[0-9A-F]+]]("kvcache run-time check failed: kvcache.lookup at lookup.py:2:3: physical page (lookup_table entry) %lld is out of range: num_pages is %lld\0A\00")
// CHECKED-LABEL: func.func @lookup
// CHECKED-SAME: (%[[VIEW:[a-z0-9_]+]]: memref<?x16x8x128xf16, strided<[?, 1024, 128, 1], offset: ?>>, %{{[a-z0-9_]+}}: memref<?xi32>, %[[LOOKUP_TABLE:[a-z0-9_]+]]: memref<?x?xi32>, %{{[a-z0-9_]+}}: i32, %{{[a-z0-9_]+}}: i32, %[[BATCH:[a-z0-9_]+]]: index, %[[TOKEN:[a-z0-9_]+]]: index)
// CHECKED-NEXT: %[[TWO_POW_32:.*]] = arith.constant 4294967296 : index
// CHECKED-NEXT: %[[POSITION_OK:.*]] = arith.cmpi ult, %[[TOKEN]], %[[TWO_POW_32]] : index
// CHECKED: %[[POSITION_FORMAT:.*]] = llvm.mlir.addressof @[[POSITION_MSG]] : !llvm.ptr
// CHECKED: %[[POSITION_VALUE:.*]] = arith.index_cast %[[TOKEN]] : index to i64
// CHECKED: %[[POSITION_BOUND:.*]] = arith.index_cast %[[TWO_POW_32]] : index to i64
// CHECKED: llvm.call @dprintf(%{{.*}}, %[[POSITION_FORMAT]], %[[POSITION_VALUE]], %[[POSITION_BOUND]])
// CHECKED-NOT: llvm.mlir.addressof
// CHECKED: arith.cmpi ult, %[[BATCH]], %{{.*}} : index
// CHECKED: llvm.mlir.addressof @[[BATCH_MSG]]
// CHECKED-NOT: llvm.mlir.addressof
// CHECKED: llvm.mlir.addressof @[[COLUMN_MSG]]
// CHECKED-NOT: llvm.mlir.addressof
// CHECKED: %[[PAGE_I32:.*]] = memref.load %[[LOOKUP_TABLE]][%[[BATCH]], %{{.*}}] : memref<?x?xi32>
// CHECKED-NEXT: %[[PAGE:.*]] = arith.index_castui %[[PAGE_I32]] : i32 to index
// CHECKED: %[[NUM_PAGES:.*]] = memref.dim %[[VIEW]], %{{.*}}
// CHECKED: arith.cmpi ult, %[[PAGE]], %[[NUM_PAGES]] : index
// CHECKED: llvm.mlir.addressof @[[ENTRY_MSG]]
// CHECKED-NOT: llvm.mlir.addressof
// CHECKED: %[[SLOT:.*]] = arith.index_castui %{{.*}} : i32 to index
// CHECKED-NEXT: return %[[PAGE]], %[[SLOT]] : index, index

// UNCHECKED-NOT: llvm.mlir.global
// UNCHECKED-NOT: llvm.func
// UNCHECKED-LABEL: func.func @lookup
// UNCHECKED-NOT: arith.cmpi
// UNCHECKED-NOT: scf.if
// UNCHECKED: memref.load
// UNCHECKED-NOT: scf.if
// UNCHECKED: return
func.func @lookup(%key: !cache, %batch: index, %token: index) -> (index, index) {
  %page, %slot = kvcache.lookup %key[%batch, %token] : !cache loc("lookup.py":2:3)
  return %page, %slot : index, index
}

// -----

// assert_write_mode = 1: writes are checked even without checked=true; reads
// are not. A lookup counts as a write there: after kvcache-expand-accesses a
// store is a lookup and a page_store, and the write must stay fully checked.

!cache = !kvcache.paged_cache<f32, num_heads = 2, head_size = 64, page_size = 4, assert_write_mode = 1>

// CHECKED-DAG: llvm.mlir.global private constant @{{.*}}("kvcache run-time check failed: kvcache.load at write_mode.py:1:1: batch index %lld is out of range: the number of lookup_table rows is %lld\0A\00")
// CHECKED-DAG: llvm.mlir.global private constant @{{.*}}("kvcache run-time check failed: kvcache.page_load at write_mode.py:2:1: head index %lld is out of range: num_heads is %lld\0A\00")

// UNCHECKED-DAG: llvm.mlir.global private constant @[[STORE_POSITION_MSG:__kvcache_check_message_[0-9A-F]+]]("kvcache run-time check failed: kvcache.store at write_mode.py:3:1: token position %lld is out of range: 2^32 (positions are unsigned 32-bit) is %lld\0A\00")
// UNCHECKED-DAG: llvm.mlir.global private constant @[[STORE_BATCH_MSG:__kvcache_check_message_[0-9A-F]+]]("kvcache run-time check failed: kvcache.store at write_mode.py:3:1: batch index %lld is out of range: the number of lookup_table rows is %lld\0A\00")
// UNCHECKED-DAG: llvm.mlir.global private constant @[[STORE_COLUMN_MSG:__kvcache_check_message_[0-9A-F]+]]("kvcache run-time check failed: kvcache.store at write_mode.py:3:1: logical page (token / page_size) %lld is out of range: the number of lookup_table columns is %lld\0A\00")
// UNCHECKED-DAG: llvm.mlir.global private constant @[[STORE_ENTRY_MSG:__kvcache_check_message_[0-9A-F]+]]("kvcache run-time check failed: kvcache.store at write_mode.py:3:1: physical page (lookup_table entry) %lld is out of range: num_pages is %lld\0A\00")
// UNCHECKED-DAG: llvm.mlir.global private constant @[[STORE_HEAD_MSG:__kvcache_check_message_[0-9A-F]+]]("kvcache run-time check failed: kvcache.store at write_mode.py:3:1: head index %lld is out of range: num_heads is %lld\0A\00")
// UNCHECKED-DAG: llvm.mlir.global private constant @[[STORE_ELEMENT_MSG:__kvcache_check_message_[0-9A-F]+]]("kvcache run-time check failed: kvcache.store at write_mode.py:3:1: first element index %lld is out of range: head_size - vector width + 1 is %lld\0A\00")
// UNCHECKED-DAG: llvm.mlir.global private constant @[[STORE_ALIGN_MSG:__kvcache_check_message_[0-9A-F]+]]("kvcache run-time check failed: kvcache.store at write_mode.py:3:1: first element index %lld is not a multiple of %lld\0A\00")
// UNCHECKED-DAG: llvm.mlir.global private constant @[[PAGE_STORE_PAGE_MSG:__kvcache_check_message_[0-9A-F]+]]("kvcache run-time check failed: kvcache.page_store at write_mode.py:4:1: physical page %lld is out of range: num_pages is %lld\0A\00")
// UNCHECKED-DAG: llvm.mlir.global private constant @[[PAGE_STORE_SLOT_MSG:__kvcache_check_message_[0-9A-F]+]]("kvcache run-time check failed: kvcache.page_store at write_mode.py:4:1: slot %lld is out of range: page_size is %lld\0A\00")
// UNCHECKED-DAG: llvm.mlir.global private constant @[[PAGE_STORE_HEAD_MSG:__kvcache_check_message_[0-9A-F]+]]("kvcache run-time check failed: kvcache.page_store at write_mode.py:4:1: head index %lld is out of range: num_heads is %lld\0A\00")
// UNCHECKED-DAG: llvm.mlir.global private constant @[[PAGE_STORE_ELEMENT_MSG:__kvcache_check_message_[0-9A-F]+]]("kvcache run-time check failed: kvcache.page_store at write_mode.py:4:1: first element index %lld is out of range: head_size - vector width + 1 is %lld\0A\00")
// UNCHECKED-DAG: llvm.mlir.global private constant @[[LOOKUP_POSITION_MSG:__kvcache_check_message_[0-9A-F]+]]("kvcache run-time check failed: kvcache.lookup at write_mode.py:5:1: token position %lld is out of range: 2^32 (positions are unsigned 32-bit) is %lld\0A\00")
// UNCHECKED-DAG: llvm.mlir.global private constant @[[LOOKUP_BATCH_MSG:__kvcache_check_message_[0-9A-F]+]]("kvcache run-time check failed: kvcache.lookup at write_mode.py:5:1: batch index %lld is out of range: the number of lookup_table rows is %lld\0A\00")
// UNCHECKED-DAG: llvm.mlir.global private constant @[[LOOKUP_COLUMN_MSG:__kvcache_check_message_[0-9A-F]+]]("kvcache run-time check failed: kvcache.lookup at write_mode.py:5:1: logical page (token / page_size) %lld is out of range: the number of lookup_table columns is %lld\0A\00")
// UNCHECKED-DAG: llvm.mlir.global private constant @[[LOOKUP_ENTRY_MSG:__kvcache_check_message_[0-9A-F]+]]("kvcache run-time check failed: kvcache.lookup at write_mode.py:5:1: physical page (lookup_table entry) %lld is out of range: num_pages is %lld\0A\00")
// UNCHECKED-DAG: llvm.func @abort()
// UNCHECKED-DAG: llvm.func @dprintf(i32, !llvm.ptr, ...) -> i32

// UNCHECKED-LABEL: func.func @write_mode_reads
// UNCHECKED-NOT: scf.if
// UNCHECKED-NOT: dprintf
// UNCHECKED: memref.load %{{.*}} : memref<?x?xi32>
// UNCHECKED: vector.load
// UNCHECKED: memref.load %{{.*}} : memref<?x4x2x64xf32, strided<[?, 128, 64, 1], offset: ?>>
// UNCHECKED-NOT: scf.if
// UNCHECKED: return
func.func @write_mode_reads(%key: !cache, %batch: index, %head: index, %token: index, %page: index, %slot: index, %element: index) -> (vector<4xf32>, f32) {
  %x = kvcache.load %key[%batch, %head, %token, %element] : !cache -> vector<4xf32> loc("write_mode.py":1:1)
  %y = kvcache.page_load %key[%page, %slot, %head, %element] : !cache -> f32 loc("write_mode.py":2:1)
  return %x, %y : vector<4xf32>, f32
}

// UNCHECKED-LABEL: func.func @write_mode_store
// UNCHECKED-SAME: (%[[VIEW:[a-z0-9_]+]]: memref<?x4x2x64xf32, strided<[?, 128, 64, 1], offset: ?>>, %{{[a-z0-9_]+}}: memref<?xi32>, %[[LOOKUP_TABLE:[a-z0-9_]+]]: memref<?x?xi32>, %{{[a-z0-9_]+}}: i32, %{{[a-z0-9_]+}}: i32, %[[X:[a-z0-9_]+]]: vector<4xf32>, %[[BATCH:[a-z0-9_]+]]: index, %[[HEAD:[a-z0-9_]+]]: index, %[[TOKEN:[a-z0-9_]+]]: index, %[[ELEMENT:[a-z0-9_]+]]: index)
// UNCHECKED-NEXT: %[[TWO_POW_32:.*]] = arith.constant 4294967296 : index
// UNCHECKED-NEXT: arith.cmpi ult, %[[TOKEN]], %[[TWO_POW_32]] : index
// UNCHECKED: llvm.mlir.addressof @[[STORE_POSITION_MSG]]
// UNCHECKED-NOT: llvm.mlir.addressof
// UNCHECKED: %[[ROWS:.*]] = memref.dim %[[LOOKUP_TABLE]], %{{.*}} : memref<?x?xi32>
// UNCHECKED: %[[BATCH_OK:.*]] = arith.cmpi ult, %[[BATCH]], %[[ROWS]] : index
// UNCHECKED: %[[BATCH_BAD:.*]] = arith.xori %[[BATCH_OK]], %{{.*}} : i1
// UNCHECKED: scf.if %[[BATCH_BAD]] {
// UNCHECKED:   %[[FORMAT:.*]] = llvm.mlir.addressof @[[STORE_BATCH_MSG]] : !llvm.ptr
// UNCHECKED:   llvm.call @dprintf(%{{.*}}, %[[FORMAT]], %{{.*}}, %{{.*}})
// UNCHECKED:   llvm.call @abort() : () -> ()
// UNCHECKED: }
// UNCHECKED-NOT: llvm.mlir.addressof
// UNCHECKED: llvm.mlir.addressof @[[STORE_COLUMN_MSG]]
// UNCHECKED-NOT: llvm.mlir.addressof
// UNCHECKED: %[[PAGE_I32:.*]] = memref.load %[[LOOKUP_TABLE]]
// UNCHECKED-NEXT: %[[PAGE:.*]] = arith.index_castui %[[PAGE_I32]] : i32 to index
// UNCHECKED: llvm.mlir.addressof @[[STORE_ENTRY_MSG]]
// No second page check, no slot check.
// UNCHECKED-NOT: llvm.mlir.addressof
// UNCHECKED-NOT: arith.cmpi ult, %[[PAGE]],
// UNCHECKED: %[[SLOT:.*]] = arith.index_castui %{{.*}} : i32 to index
// UNCHECKED-NOT: llvm.mlir.addressof
// UNCHECKED-NOT: arith.cmpi ult, %[[PAGE]],
// UNCHECKED-NOT: arith.cmpi ult, %[[SLOT]],
// UNCHECKED: llvm.mlir.addressof @[[STORE_HEAD_MSG]]
// UNCHECKED-NOT: llvm.mlir.addressof
// UNCHECKED: llvm.mlir.addressof @[[STORE_ELEMENT_MSG]]
// UNCHECKED-NOT: llvm.mlir.addressof
// UNCHECKED: llvm.mlir.addressof @[[STORE_ALIGN_MSG]]
// UNCHECKED-NOT: llvm.mlir.addressof
// UNCHECKED-NOT: arith.cmpi ult, %[[PAGE]],
// UNCHECKED-NOT: arith.cmpi ult, %[[SLOT]],
// UNCHECKED: vector.store %[[X]], %[[VIEW]][%[[PAGE]], %[[SLOT]], %[[HEAD]], %[[ELEMENT]]] {alignment = 16 : i64}
func.func @write_mode_store(%key: !cache, %x: vector<4xf32>, %batch: index, %head: index, %token: index, %element: index) {
  kvcache.store %x, %key[%batch, %head, %token, %element] : !cache, vector<4xf32> loc("write_mode.py":3:1)
  return
}

// UNCHECKED-LABEL: func.func @write_mode_page_store
// UNCHECKED-SAME: (%[[VIEW:[a-z0-9_]+]]: memref<?x4x2x64xf32, strided<[?, 128, 64, 1], offset: ?>>, %{{[a-z0-9_]+}}: memref<?xi32>, %{{[a-z0-9_]+}}: memref<?x?xi32>, %{{[a-z0-9_]+}}: i32, %{{[a-z0-9_]+}}: i32, %[[X:[a-z0-9_]+]]: f32, %[[PAGE:[a-z0-9_]+]]: index, %[[SLOT:[a-z0-9_]+]]: index, %[[HEAD:[a-z0-9_]+]]: index, %[[ELEMENT:[a-z0-9_]+]]: index)
// UNCHECKED: arith.cmpi ult, %[[PAGE]], %{{.*}} : index
// UNCHECKED: llvm.mlir.addressof @[[PAGE_STORE_PAGE_MSG]]
// UNCHECKED: %[[C4:.*]] = arith.constant 4 : index
// UNCHECKED: arith.cmpi ult, %[[SLOT]], %[[C4]] : index
// UNCHECKED: llvm.mlir.addressof @[[PAGE_STORE_SLOT_MSG]]
// UNCHECKED: arith.cmpi ult, %[[HEAD]], %{{.*}} : index
// UNCHECKED: llvm.mlir.addressof @[[PAGE_STORE_HEAD_MSG]]
// UNCHECKED: %[[C64:.*]] = arith.constant 64 : index
// UNCHECKED: arith.cmpi ult, %[[ELEMENT]], %[[C64]] : index
// UNCHECKED: llvm.mlir.addressof @[[PAGE_STORE_ELEMENT_MSG]]
// UNCHECKED: memref.store %[[X]], %[[VIEW]][%[[PAGE]], %[[SLOT]], %[[HEAD]], %[[ELEMENT]]]
func.func @write_mode_page_store(%key: !cache, %x: f32, %page: index, %slot: index, %head: index, %element: index) {
  kvcache.page_store %x, %key[%page, %slot, %head, %element] : !cache, f32 loc("write_mode.py":4:1)
  return
}

// UNCHECKED-LABEL: func.func @write_mode_lookup
// UNCHECKED-NEXT: arith.constant 4294967296 : index
// UNCHECKED: llvm.mlir.addressof @[[LOOKUP_POSITION_MSG]]
// UNCHECKED-NOT: llvm.mlir.addressof
// UNCHECKED: llvm.mlir.addressof @[[LOOKUP_BATCH_MSG]]
// UNCHECKED-NOT: llvm.mlir.addressof
// UNCHECKED: llvm.mlir.addressof @[[LOOKUP_COLUMN_MSG]]
// UNCHECKED-NOT: llvm.mlir.addressof
// UNCHECKED: llvm.mlir.addressof @[[LOOKUP_ENTRY_MSG]]
// UNCHECKED-NOT: llvm.mlir.addressof
// UNCHECKED: return
func.func @write_mode_lookup(%key: !cache, %batch: index, %token: index) -> (index, index) {
  %page, %slot = kvcache.lookup %key[%batch, %token] : !cache loc("write_mode.py":5:1)
  return %page, %slot : index, index
}

// -----

// Device code (gpu.module, gpu.launch bodies) asserts with cf.assert; the
// message names the op and the bound, without the values.

!cache = !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>
!write_checked = !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16, assert_write_mode = 1>

// CHECKED-LABEL: module attributes {gpu.container_module}
// CHECKED-NOT: llvm.mlir.global
// CHECKED-NOT: llvm.func @dprintf
// UNCHECKED-LABEL: module attributes {gpu.container_module}
// UNCHECKED-NOT: llvm.mlir.global
// UNCHECKED-NOT: llvm.func @dprintf
module attributes {gpu.container_module} {
  gpu.module @kernels {
    // CHECKED-LABEL: gpu.func @read_kernel
    // CHECKED-SAME: %[[BATCH:[a-z0-9_]+]]: index, %[[TOKEN:[a-z0-9_]+]]: index, %{{[a-z0-9_]+}}: memref<?xf16>) kernel
    // CHECKED-NEXT: %[[THREAD:.*]] = gpu.thread_id x
    // CHECKED-NEXT: %[[TWO_POW_32:.*]] = arith.constant 4294967296 : index
    // CHECKED-NEXT: %[[POSITION_OK:.*]] = arith.cmpi ult, %[[TOKEN]], %[[TWO_POW_32]] : index
    // CHECKED-NEXT: cf.assert %[[POSITION_OK]], "kvcache run-time check failed: kvcache.load at kernel.py:4:7: token position is out of range (must be below 2^32 (positions are unsigned 32-bit))"
    // CHECKED-NOT: cf.assert
    // CHECKED: %[[BATCH_OK:.*]] = arith.cmpi ult, %[[BATCH]], %{{.*}} : index
    // CHECKED-NEXT: cf.assert %[[BATCH_OK]], "kvcache run-time check failed: kvcache.load at kernel.py:4:7: batch index is out of range (must be below the number of lookup_table rows)"
    // CHECKED-NOT: cf.assert
    // CHECKED: cf.assert %{{.*}}, "kvcache run-time check failed: kvcache.load at kernel.py:4:7: logical page (token / page_size) is out of range (must be below the number of lookup_table columns)"
    // CHECKED-NOT: cf.assert
    // CHECKED: cf.assert %{{.*}}, "kvcache run-time check failed: kvcache.load at kernel.py:4:7: physical page (lookup_table entry) is out of range (must be below num_pages)"
    // No second page check and no slot check of the load's own.
    // CHECKED-NOT: cf.assert
    // CHECKED-NOT: physical page is out of range
    // CHECKED-NOT: slot is out of range
    // CHECKED: %[[HEAD_OK:.*]] = arith.cmpi ult, %[[THREAD]], %{{.*}} : index
    // CHECKED-NEXT: cf.assert %[[HEAD_OK]], "kvcache run-time check failed: kvcache.load at kernel.py:4:7: head index is out of range (must be below num_heads)"
    // CHECKED-NOT: cf.assert
    // CHECKED: cf.assert %{{.*}}, "kvcache run-time check failed: kvcache.load at kernel.py:4:7: first element index is out of range (must be below head_size - vector width + 1)"
    // CHECKED-NOT: cf.assert
    // CHECKED: cf.assert %{{.*}}, "kvcache run-time check failed: kvcache.load at kernel.py:4:7: first element index is not a multiple of 8"
    // CHECKED-NOT: cf.assert
    // CHECKED-NOT: scf.if
    // CHECKED-NOT: llvm.call
    // CHECKED: vector.load
    // CHECKED: gpu.return

    // UNCHECKED-LABEL: gpu.func @read_kernel
    // UNCHECKED-NOT: cf.assert
    // UNCHECKED: gpu.return
    gpu.func @read_kernel(%key: !cache, %batch: index, %token: index, %out: memref<?xf16>) kernel {
      %thread = gpu.thread_id x
      %x = kvcache.load %key[%batch, %thread, %token, %thread] : !cache -> vector<8xf16> loc("kernel.py":4:7)
      vector.store %x, %out[%thread] : memref<?xf16>, vector<8xf16>
      gpu.return
    }

    // A write through an assert_write_mode = 1 cache in a device function.

    // CHECKED-LABEL: gpu.func @write_function
    // CHECKED: cf.assert %{{.*}}, "kvcache run-time check failed: kvcache.page_store at kernel.py:9:7: physical page is out of range (must be below num_pages)"
    // CHECKED: cf.assert %{{.*}}, "kvcache run-time check failed: kvcache.page_store at kernel.py:9:7: slot is out of range (must be below page_size)"

    // UNCHECKED-LABEL: gpu.func @write_function
    // UNCHECKED-SAME: %[[PAGE:[a-z0-9_]+]]: index, %[[SLOT:[a-z0-9_]+]]: index, %[[HEAD:[a-z0-9_]+]]: index, %[[ELEMENT:[a-z0-9_]+]]: index)
    // UNCHECKED: %[[PAGE_OK:.*]] = arith.cmpi ult, %[[PAGE]], %{{.*}} : index
    // UNCHECKED: cf.assert %[[PAGE_OK]], "kvcache run-time check failed: kvcache.page_store at kernel.py:9:7: physical page is out of range (must be below num_pages)"
    // UNCHECKED: %[[SLOT_OK:.*]] = arith.cmpi ult, %[[SLOT]], %{{.*}} : index
    // UNCHECKED: cf.assert %[[SLOT_OK]], "kvcache run-time check failed: kvcache.page_store at kernel.py:9:7: slot is out of range (must be below page_size)"
    // UNCHECKED: %[[HEAD_OK:.*]] = arith.cmpi ult, %[[HEAD]], %{{.*}} : index
    // UNCHECKED: cf.assert %[[HEAD_OK]], "kvcache run-time check failed: kvcache.page_store at kernel.py:9:7: head index is out of range (must be below num_heads)"
    // UNCHECKED: %[[ELEMENT_OK:.*]] = arith.cmpi ult, %[[ELEMENT]], %{{.*}} : index
    // UNCHECKED: cf.assert %[[ELEMENT_OK]], "kvcache run-time check failed: kvcache.page_store at kernel.py:9:7: first element index is out of range (must be below head_size - vector width + 1)"
    // UNCHECKED-NOT: llvm.call
    // UNCHECKED: memref.store
    // UNCHECKED: gpu.return
    gpu.func @write_function(%key: !write_checked, %x: f16, %page: index, %slot: index, %head: index, %element: index) {
      kvcache.page_store %x, %key[%page, %slot, %head, %element] : !write_checked, f16 loc("kernel.py":9:7)
      gpu.return
    }
  }

  // CHECKED-LABEL: func.func @launch_body
  // CHECKED: gpu.launch
  // CHECKED: cf.assert %{{.*}}, "kvcache run-time check failed: kvcache.cache_length at launch.py:2:9: batch index is out of range (must be below the size of cache_lengths)"
  // CHECKED-NOT: dprintf
  // CHECKED: gpu.terminator

  // UNCHECKED-LABEL: func.func @launch_body
  // UNCHECKED-NOT: cf.assert
  // UNCHECKED: gpu.terminator
  func.func @launch_body(%key: !cache, %batch: index, %out: memref<?xindex>) {
    %c1 = arith.constant 1 : index
    gpu.launch blocks(%bx, %by, %bz) in (%grid_x = %c1, %grid_y = %c1, %grid_z = %c1)
               threads(%tx, %ty, %tz) in (%block_x = %c1, %block_y = %c1, %block_z = %c1) {
      %length = kvcache.cache_length %key[%batch] : !cache loc("launch.py":2:9)
      memref.store %length, %out[%tx] : memref<?xindex>
      gpu.terminator
    }
    return
  }
}
