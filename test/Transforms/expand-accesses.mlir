// RUN: kvcache-opt %s -kvcache-expand-accesses -split-input-file | FileCheck %s
// RUN: kvcache-opt %s -kvcache-expand-accesses -split-input-file -mlir-print-debuginfo -mlir-print-local-scope | FileCheck %s --check-prefix=LOC
// RUN: kvcache-opt %s -kvcache-expand-accesses -cse -loop-invariant-code-motion -convert-kvcache-to-memref -split-input-file | FileCheck %s --check-prefix=HOIST
// RUN: kvcache-opt %s -cse -loop-invariant-code-motion -convert-kvcache-to-memref -split-input-file | FileCheck %s --check-prefix=NO-EXPAND
// RUN: kvcache-opt %s -kvcache-to-cpu -split-input-file | FileCheck %s --check-prefix=CPU

// kvcache-expand-accesses splits load/store into lookup + page_load/page_store
// so that cse and loop-invariant code motion share the (pure) lookups.

!cache = !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>

// CHECK-LABEL: func.func @load_vector
// CHECK-SAME: (%[[KEY:[a-z0-9_]+]]: !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, %[[BATCH:[a-z0-9_]+]]: index, %[[HEAD:[a-z0-9_]+]]: index, %[[TOKEN:[a-z0-9_]+]]: index, %[[ELEMENT:[a-z0-9_]+]]: index)
// CHECK-NEXT: %[[PAGE:page]], %[[SLOT:slot]] = kvcache.lookup %[[KEY]][%[[BATCH]], %[[TOKEN]]] : !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>
// CHECK-NEXT: %[[X:.*]] = kvcache.page_load %[[KEY]][%[[PAGE]], %[[SLOT]], %[[HEAD]], %[[ELEMENT]]] : !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16> -> vector<8xf16>
// CHECK-NEXT: return %[[X]] : vector<8xf16>
func.func @load_vector(%key: !cache, %batch: index, %head: index, %token: index, %element: index) -> vector<8xf16> {
  %x = kvcache.load %key[%batch, %head, %token, %element] : !cache -> vector<8xf16>
  return %x : vector<8xf16>
}

// CHECK-LABEL: func.func @load_scalar
// CHECK-SAME: (%[[KEY:[a-z0-9_]+]]: !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, %[[BATCH:[a-z0-9_]+]]: index, %[[HEAD:[a-z0-9_]+]]: index, %[[TOKEN:[a-z0-9_]+]]: index, %[[ELEMENT:[a-z0-9_]+]]: index)
// CHECK-NEXT: %[[PAGE:page]], %[[SLOT:slot]] = kvcache.lookup %[[KEY]][%[[BATCH]], %[[TOKEN]]] : !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>
// CHECK-NEXT: %[[X:.*]] = kvcache.page_load %[[KEY]][%[[PAGE]], %[[SLOT]], %[[HEAD]], %[[ELEMENT]]] : !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16> -> f16
// CHECK-NEXT: return %[[X]] : f16
func.func @load_scalar(%key: !cache, %batch: index, %head: index, %token: index, %element: index) -> f16 {
  %x = kvcache.load %key[%batch, %head, %token, %element] : !cache -> f16
  return %x : f16
}

// CHECK-LABEL: func.func @store_vector
// CHECK-SAME: (%[[KEY:[a-z0-9_]+]]: !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, %[[X:[a-z0-9_]+]]: vector<8xf16>, %[[BATCH:[a-z0-9_]+]]: index, %[[HEAD:[a-z0-9_]+]]: index, %[[TOKEN:[a-z0-9_]+]]: index, %[[ELEMENT:[a-z0-9_]+]]: index)
// CHECK-NEXT: %[[PAGE:page]], %[[SLOT:slot]] = kvcache.lookup %[[KEY]][%[[BATCH]], %[[TOKEN]]] : !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>
// CHECK-NEXT: kvcache.page_store %[[X]], %[[KEY]][%[[PAGE]], %[[SLOT]], %[[HEAD]], %[[ELEMENT]]] : !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, vector<8xf16>
// CHECK-NEXT: return
func.func @store_vector(%key: !cache, %x: vector<8xf16>, %batch: index, %head: index, %token: index, %element: index) {
  kvcache.store %x, %key[%batch, %head, %token, %element] : !cache, vector<8xf16>
  return
}

// The cache keeps all its parameters (here mla and assert_write_mode).

// CHECK-LABEL: func.func @store_scalar_mla
// CHECK-SAME: (%[[KEY:[a-z0-9_]+]]: !kvcache.paged_cache<bf16, num_heads = 1, head_size = 576, page_size = 64, mla = true, assert_write_mode = 1>, %[[X:[a-z0-9_]+]]: bf16, %[[BATCH:[a-z0-9_]+]]: index, %[[HEAD:[a-z0-9_]+]]: index, %[[TOKEN:[a-z0-9_]+]]: index, %[[ELEMENT:[a-z0-9_]+]]: index)
// CHECK-NEXT: %[[PAGE:page]], %[[SLOT:slot]] = kvcache.lookup %[[KEY]][%[[BATCH]], %[[TOKEN]]] : !kvcache.paged_cache<bf16, num_heads = 1, head_size = 576, page_size = 64, mla = true, assert_write_mode = 1>
// CHECK-NEXT: kvcache.page_store %[[X]], %[[KEY]][%[[PAGE]], %[[SLOT]], %[[HEAD]], %[[ELEMENT]]] : !kvcache.paged_cache<bf16, num_heads = 1, head_size = 576, page_size = 64, mla = true, assert_write_mode = 1>, bf16
// CHECK-NEXT: return
func.func @store_scalar_mla(%key: !kvcache.paged_cache<bf16, num_heads = 1, head_size = 576, page_size = 64, mla = true, assert_write_mode = 1>,
                            %x: bf16, %batch: index, %head: index, %token: index, %element: index) {
  kvcache.store %x, %key[%batch, %head, %token, %element] : !kvcache.paged_cache<bf16, num_heads = 1, head_size = 576, page_size = 64, mla = true, assert_write_mode = 1>, bf16
  return
}

// Each access gets its own lookup; sharing them is left to cse.

// CHECK-LABEL: func.func @two_accesses
// CHECK: %[[PAGE:page]], %[[SLOT:slot]] = kvcache.lookup
// CHECK-NEXT: %[[X:.*]] = kvcache.page_load %{{.*}}[%[[PAGE]], %[[SLOT]],
// CHECK-NEXT: %[[PAGE_0:page_0]], %[[SLOT_1:slot_1]] = kvcache.lookup
// CHECK-NEXT: kvcache.page_store %[[X]], %{{.*}}[%[[PAGE_0]], %[[SLOT_1]],
// CHECK-NEXT: return
func.func @two_accesses(%key: !cache, %batch: index, %token: index, %head: index, %element: index) {
  %x = kvcache.load %key[%batch, %head, %token, %element] : !cache -> vector<8xf16>
  kvcache.store %x, %key[%batch, %head, %token, %element] : !cache, vector<8xf16>
  return
}

// The lookup is named after the access it came from, so that run-time check
// messages still name the op the user wrote.

// LOC-LABEL: func.func @located
// LOC: kvcache.lookup {{.*}} loc("kvcache.load"("model.py":3:5))
// LOC: kvcache.page_load {{.*}} loc("kvcache.load"("model.py":3:5))
// LOC: kvcache.lookup {{.*}} loc("kvcache.store"("model.py":4:5))
// LOC: kvcache.page_store {{.*}} loc("kvcache.store"("model.py":4:5))
func.func @located(%key: !cache, %x: f16, %batch: index, %head: index, %token: index, %element: index) -> f16 {
  %y = kvcache.load %key[%batch, %head, %token, %element] : !cache -> f16 loc("model.py":3:5)
  kvcache.store %x, %key[%batch, %head, %token, %element] : !cache, f16 loc("model.py":4:5)
  return %y : f16
}

// Page-addressed accesses, lookups, tiles and metadata queries are left alone.

// CHECK-LABEL: func.func @negative_expand_page_accesses
// CHECK-SAME: (%[[KEY:[a-z0-9_]+]]: !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, %[[BATCH:[a-z0-9_]+]]: index, %[[TOKEN:[a-z0-9_]+]]: index, %[[HEAD:[a-z0-9_]+]]: index, %[[ELEMENT:[a-z0-9_]+]]: index)
// CHECK-NEXT: %[[PAGE:page]], %[[SLOT:slot]] = kvcache.lookup %[[KEY]][%[[BATCH]], %[[TOKEN]]]
// CHECK-NEXT: %[[X:.*]] = kvcache.page_load %[[KEY]][%[[PAGE]], %[[SLOT]], %[[HEAD]], %[[ELEMENT]]]
// CHECK-NEXT: kvcache.page_store %[[X]], %[[KEY]][%[[PAGE]], %[[SLOT]], %[[HEAD]], %[[ELEMENT]]]
// CHECK-NEXT: %[[TILE:.*]] = kvcache.tile %[[KEY]][%[[BATCH]], %[[TOKEN]], %[[HEAD]]]
// CHECK-NEXT: %[[LENGTH:.*]] = kvcache.cache_length %[[KEY]][%[[BATCH]]]
// CHECK-NEXT: return %[[TILE]], %[[LENGTH]]
func.func @negative_expand_page_accesses(%key: !cache, %batch: index, %token: index, %head: index, %element: index)
    -> (memref<16x128xf16, strided<[1024, 1], offset: ?>>, index) {
  %page, %slot = kvcache.lookup %key[%batch, %token] : !cache
  %x = kvcache.page_load %key[%page, %slot, %head, %element] : !cache -> vector<8xf16>
  kvcache.page_store %x, %key[%page, %slot, %head, %element] : !cache, vector<8xf16>
  %tile = kvcache.tile %key[%batch, %token, %head] : !cache -> memref<16x128xf16, strided<[1024, 1], offset: ?>>
  %length = kvcache.cache_length %key[%batch] : !cache
  return %tile, %length : memref<16x128xf16, strided<[1024, 1], offset: ?>>, index
}

// -----

// The proof that the expansion pays: 16 tokens x 8 heads x 128 elements of K
// are read in vector<8xf16> steps, heads inside the token loop. After
// expand + cse + LICM the lookup depends on the token only, so the lowered
// code reads the lookup table ONCE per token (16 times) instead of once per
// vector (16 x 8 x 16 = 2048 times).

!cache = !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>

// HOIST-LABEL: func.func @gather_keys
// HOIST-SAME: (%[[VIEW:[a-z0-9_]+]]: memref<?x16x8x128xf16, strided<[?, 1024, 128, 1], offset: ?>>, %{{[a-z0-9_]+}}: memref<?xi32>, %[[LOOKUP_TABLE:[a-z0-9_]+]]: memref<?x?xi32>, %{{[a-z0-9_]+}}: i32, %{{[a-z0-9_]+}}: i32, %[[BATCH:[a-z0-9_]+]]: index, %[[OUT:[a-z0-9_]+]]: memref<16x8x128xf16>)
// HOIST-NOT: memref.load
// HOIST: scf.for %[[TOKEN:[a-z0-9_]+]] =
// HOIST: arith.index_castui %[[TOKEN]] : index to i32
// HOIST: %[[PAGE_I32:.*]] = memref.load %[[LOOKUP_TABLE]][%[[BATCH]], %{{.*}}] : memref<?x?xi32>
// HOIST: %[[PAGE:.*]] = arith.index_castui %[[PAGE_I32]] : i32 to index
// HOIST: %[[SLOT:.*]] = arith.index_castui %{{.*}} : i32 to index
// HOIST-NOT: memref.load
// HOIST: scf.for %[[HEAD:[a-z0-9_]+]] =
// HOIST-NOT: memref.load
// HOIST: scf.for %[[ELEMENT:[a-z0-9_]+]] =
// HOIST-NOT: memref.load
// HOIST: %[[X:.*]] = vector.load %[[VIEW]][%[[PAGE]], %[[SLOT]], %[[HEAD]], %[[ELEMENT]]] {alignment = 16 : i64}
// HOIST-NEXT: vector.store %[[X]], %[[OUT]][%[[TOKEN]], %[[HEAD]], %[[ELEMENT]]]
// HOIST-NOT: memref.load
// HOIST: return

// negative_: without kvcache-expand-accesses the lookup-table load stays in
// the innermost loop, next to the element load: once lowered, nothing can
// hoist it any more.

// NO-EXPAND-LABEL: func.func @gather_keys
// NO-EXPAND-SAME: (%[[VIEW:[a-z0-9_]+]]: memref<?x16x8x128xf16, strided<[?, 1024, 128, 1], offset: ?>>, %{{[a-z0-9_]+}}: memref<?xi32>, %[[LOOKUP_TABLE:[a-z0-9_]+]]: memref<?x?xi32>, %{{[a-z0-9_]+}}: i32, %{{[a-z0-9_]+}}: i32, %[[BATCH:[a-z0-9_]+]]: index, %[[OUT:[a-z0-9_]+]]: memref<16x8x128xf16>)
// NO-EXPAND: scf.for %[[TOKEN:[a-z0-9_]+]] =
// NO-EXPAND-NOT: memref.load
// NO-EXPAND: scf.for %[[HEAD:[a-z0-9_]+]] =
// NO-EXPAND-NOT: memref.load
// NO-EXPAND: scf.for %[[ELEMENT:[a-z0-9_]+]] =
// NO-EXPAND: arith.index_castui %[[TOKEN]] : index to i32
// NO-EXPAND: %[[PAGE_I32:.*]] = memref.load %[[LOOKUP_TABLE]][%[[BATCH]], %{{.*}}] : memref<?x?xi32>
// NO-EXPAND: %[[PAGE:.*]] = arith.index_castui %[[PAGE_I32]] : i32 to index
// NO-EXPAND: %[[X:.*]] = vector.load %[[VIEW]][%[[PAGE]], %{{.*}}, %[[HEAD]], %[[ELEMENT]]]
// NO-EXPAND-NEXT: vector.store %[[X]], %[[OUT]][%[[TOKEN]], %[[HEAD]], %[[ELEMENT]]]

// The kvcache-to-cpu pipeline keeps the one i32 lookup-table load in the
// token loop's body block, ahead of the head and element loops.

// CPU-LABEL: llvm.func @gather_keys
// CPU-NOT: -> i32
// CPU: llvm.br ^[[TOKEN_HEADER:bb[0-9]+]](
// CPU: ^[[TOKEN_HEADER]](%[[TOKEN:[0-9]+]]: i64):
// CPU: llvm.cond_br %{{.*}}, ^[[TOKEN_BODY:bb[0-9]+]], ^[[EXIT:bb[0-9]+]]
// CPU: ^[[TOKEN_BODY]]:
// CPU: llvm.trunc %[[TOKEN]] : i64 to i32
// CPU: %[[PAGE_I32:.*]] = llvm.load %{{.*}} : !llvm.ptr -> i32
// CPU: llvm.zext %[[PAGE_I32]] : i32 to i64
// CPU-NOT: -> i32
// CPU: llvm.br ^[[HEAD_HEADER:bb[0-9]+]](
// CPU-NOT: -> i32
// CPU: ^[[HEAD_HEADER]](%[[HEAD:[0-9]+]]: i64):
// CPU-NOT: -> i32
// CPU: llvm.load %{{.*}} {alignment = 16 : i64} : !llvm.ptr -> vector<8xf16>
// CPU-NOT: -> i32
// CPU: ^[[EXIT]]:
// CPU-NEXT: llvm.return
func.func @gather_keys(%key: !cache, %batch: index, %out: memref<16x8x128xf16>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %c16 = arith.constant 16 : index
  %c128 = arith.constant 128 : index
  scf.for %token = %c0 to %c16 step %c1 {
    scf.for %head = %c0 to %c8 step %c1 {
      scf.for %element = %c0 to %c128 step %c8 {
        %x = kvcache.load %key[%batch, %head, %token, %element] : !cache -> vector<8xf16>
        vector.store %x, %out[%token, %head, %element] : memref<16x8x128xf16>, vector<8xf16>
      }
    }
  }
  return
}

// -----

// On an assert_write_mode = 1 cache a lookup is checked as a write unless it
// serves a read: the lookup of a load is marked `read_only` (and so is
// not merged with the lookup of a store of the same token), that of a store
// is not.

!write_checked = !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16, assert_write_mode = 1>

// CHECK-LABEL: func.func @read_only_lookups
// CHECK: %[[PAGE:.*]], %[[SLOT:.*]] = kvcache.lookup {{.*}} {read_only} : !kvcache.paged_cache<{{.*}}assert_write_mode = 1>
// CHECK-NEXT: kvcache.page_load %{{.*}}[%[[PAGE]], %[[SLOT]],
// CHECK-NEXT: %[[PAGE_W:.*]], %[[SLOT_W:.*]] = kvcache.lookup %{{[a-z0-9_]+}}[%{{[a-z0-9_]+}}, %{{[a-z0-9_]+}}] : !kvcache.paged_cache
// CHECK-NEXT: kvcache.page_store %{{.*}}[%[[PAGE_W]], %[[SLOT_W]],
func.func @read_only_lookups(%key: !write_checked, %batch: index, %token: index, %head: index, %element: index) {
  %x = kvcache.load %key[%batch, %head, %token, %element] : !write_checked -> vector<8xf16>
  kvcache.store %x, %key[%batch, %head, %token, %element] : !write_checked, vector<8xf16>
  return
}

// CHECK-LABEL: func.func @negative_read_only_on_plain_cache
// CHECK-NOT: {read_only}
// CHECK: return
func.func @negative_read_only_on_plain_cache(%key: !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, %batch: index, %token: index, %head: index, %element: index) -> vector<8xf16> {
  %x = kvcache.load %key[%batch, %head, %token, %element] : !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16> -> vector<8xf16>
  return %x : vector<8xf16>
}

// -----

// The scale ops of quantized caches split the same way.
!q = !kvcache.paged_cache<f8E4M3FN, num_heads = 8, head_size = 128, page_size = 16, scales = token_head>
// CHECK-LABEL: func.func @scale_ops(
// CHECK-SAME: %[[K:[a-z0-9]+]]: !kvcache.paged_cache<f8E4M3FN, num_heads = 8, head_size = 128, page_size = 16, scales = token_head>, %[[B:[a-z0-9]+]]: index, %[[H:[a-z0-9]+]]: index, %[[T:[a-z0-9]+]]: index, %[[D:[a-z0-9]+]]: index
// CHECK: %[[PAGE:.*]], %[[SLOT:.*]] = kvcache.lookup %[[K]][%[[B]], %[[T]]]
// CHECK-NEXT: %[[S:.*]] = kvcache.page_load_scale %[[K]][%[[PAGE]], %[[SLOT]], %[[H]], %[[D]]] : {{.*}} -> f32
// CHECK-NEXT: %[[PAGE2:.*]], %[[SLOT2:.*]] = kvcache.lookup %[[K]][%[[B]], %[[T]]]
// CHECK-NEXT: kvcache.page_store_scale %[[S]], %[[K]][%[[PAGE2]], %[[SLOT2]], %[[H]], %[[D]]]
// CHECK-NOT: kvcache.load_scale
// CHECK-NOT: kvcache.store_scale
func.func @scale_ops(%k: !q, %b: index, %h: index, %t: index, %d: index) {
  %s = kvcache.load_scale %k[%b, %h, %t, %d] : !q -> f32
  kvcache.store_scale %s, %k[%b, %h, %t, %d] : !q
  return
}
