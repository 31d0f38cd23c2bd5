// Access ops on a continuous-batching cache inside user GPU kernels
// (gpu.func), run on the emulated GPU: @copy_kv loads K rows with
// kvcache.load and stores them + 1000 into V with kvcache.store; @tile_sum
// sums a kvcache.tile of 3 rows (any height: blocks have no static page
// size). f32 cache of 3 blocks of 6 token slots (block_tokens dynamic in the
// type), 1 layer, 2 heads of 4; blocks[p, kv, 0, s, h, d] starts as its flat
// index p*96 + kv*48 + s*8 + h*4 + d. Sequence 0 owns block 2, sequence 1
// block 0; block 1 belongs to no one and must stay as it was. Same output in
// three orders, unchecked and checked. @bad reads token 6 of sequence 0: the
// checked build stops at the device-side assertion (token >= block_tokens).

// RUN: kvcache-opt %s -kvcache-to-emulated-gpu -o %t.mlir
// RUN: kvcache-opt %s -kvcache-to-emulated-gpu=checked=true -o %t.checked.mlir
// RUN: %emu_run %t.mlir -e main | FileCheck %s
// RUN: env KVCACHE_EMU_ORDER=reverse %emu_run %t.mlir -e main | FileCheck %s
// RUN: env KVCACHE_EMU_ORDER=random:41 %emu_run %t.checked.mlir -e main | FileCheck %s
// RUN: not --crash %emu_run %t.checked.mlir -e bad 2>&1 | FileCheck %s --check-prefix=BAD

// BAD: continuous-access-ops-run.mlir:{{[0-9]+}}: kvcache.load: block: [6,0,0], thread: [0,0,0] Assertion `kvcache run-time check failed: kvcache.load (kvcache.lookup) at {{.*}}continuous-access-ops-run.mlir:{{[0-9]+}}:{{[0-9]+}}: token position is out of range (must be below block_tokens)` failed.
// BAD-NOT: bad completed

// The tile sums of sequence 1, tokens 3..5: 402 (head 0) and 450 (head 1).
// CHECK: ( 402, 450 )
// V of blocks 0, 1, 2 (slot, head): block 0 all copied, block 1 untouched,
// block 2 copied for tokens 0..3 only.
// CHECK: ( 1000, 1001, 1002, 1003 )
// CHECK-NEXT: ( 1004, 1005, 1006, 1007 )
// CHECK-NEXT: ( 1008, 1009, 1010, 1011 )
// CHECK-NEXT: ( 1012, 1013, 1014, 1015 )
// CHECK-NEXT: ( 1016, 1017, 1018, 1019 )
// CHECK-NEXT: ( 1020, 1021, 1022, 1023 )
// CHECK-NEXT: ( 1024, 1025, 1026, 1027 )
// CHECK-NEXT: ( 1028, 1029, 1030, 1031 )
// CHECK-NEXT: ( 1032, 1033, 1034, 1035 )
// CHECK-NEXT: ( 1036, 1037, 1038, 1039 )
// CHECK-NEXT: ( 1040, 1041, 1042, 1043 )
// CHECK-NEXT: ( 1044, 1045, 1046, 1047 )
// CHECK-NEXT: ( 144, 145, 146, 147 )
// CHECK-NEXT: ( 148, 149, 150, 151 )
// CHECK-NEXT: ( 152, 153, 154, 155 )
// CHECK-NEXT: ( 156, 157, 158, 159 )
// CHECK-NEXT: ( 160, 161, 162, 163 )
// CHECK-NEXT: ( 164, 165, 166, 167 )
// CHECK-NEXT: ( 168, 169, 170, 171 )
// CHECK-NEXT: ( 172, 173, 174, 175 )
// CHECK-NEXT: ( 176, 177, 178, 179 )
// CHECK-NEXT: ( 180, 181, 182, 183 )
// CHECK-NEXT: ( 184, 185, 186, 187 )
// CHECK-NEXT: ( 188, 189, 190, 191 )
// CHECK-NEXT: ( 1192, 1193, 1194, 1195 )
// CHECK-NEXT: ( 1196, 1197, 1198, 1199 )
// CHECK-NEXT: ( 1200, 1201, 1202, 1203 )
// CHECK-NEXT: ( 1204, 1205, 1206, 1207 )
// CHECK-NEXT: ( 1208, 1209, 1210, 1211 )
// CHECK-NEXT: ( 1212, 1213, 1214, 1215 )
// CHECK-NEXT: ( 1216, 1217, 1218, 1219 )
// CHECK-NEXT: ( 1220, 1221, 1222, 1223 )
// CHECK-NEXT: ( 272, 273, 274, 275 )
// CHECK-NEXT: ( 276, 277, 278, 279 )
// CHECK-NEXT: ( 280, 281, 282, 283 )
// CHECK-NEXT: ( 284, 285, 286, 287 )
// CHECK-NOT: (

!collection = !kvcache.continuous_collection<f32, num_heads = 2, head_size = 4>
!cache = !kvcache.continuous_cache<f32, num_heads = 2, head_size = 4>
!storage = memref<3x2x1x6x2x4xf32>
!blocks = memref<?x2x?x?x2x4xf32>
!tile = memref<3x4xf32, strided<[8, 1], offset: ?>>

module attributes {gpu.container_module} {
  memref.global "private" constant @lookup_table : memref<2xi32> = dense<[2, 0]>
  memref.global "private" constant @cache_lengths : memref<2xi32> = dense<[4, 6]>

  gpu.module @kernels {
    // Block x: token x of sequence %batch; thread x: head x.
    gpu.func @copy_kv(%keys: !cache, %values: !cache, %batch: index) kernel
        attributes {known_block_size = array<i32: 2, 1, 1>} {
      %token = gpu.block_id x
      %head = gpu.thread_id x
      %c0 = arith.constant 0 : index
      %offset = arith.constant dense<1000.0> : vector<4xf32>
      %k = kvcache.load %keys[%batch, %head, %token, %c0] : !cache -> vector<4xf32>
      %v = arith.addf %k, %offset : vector<4xf32>
      kvcache.store %v, %values[%batch, %head, %token, %c0] : !cache, vector<4xf32>
      gpu.return
    }
    // Thread x: the sum of the tile of head x, tokens %first..%first+2.
    gpu.func @tile_sum(%keys: !cache, %batch: index, %first: index, %out: memref<2xf32>) kernel
        attributes {known_block_size = array<i32: 2, 1, 1>} {
      %head = gpu.thread_id x
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c3 = arith.constant 3 : index
      %zero = arith.constant 0.0 : f32
      %tile = kvcache.tile %keys[%batch, %first, %head] : !cache -> !tile
      %sum = scf.for %row = %c0 to %c3 step %c1 iter_args(%acc = %zero) -> (f32) {
        %x = vector.load %tile[%row, %c0] : !tile, vector<4xf32>
        %s = vector.reduction <add>, %x : vector<4xf32> into f32
        %next = arith.addf %acc, %s : f32
        scf.yield %next : f32
      }
      memref.store %sum, %out[%head] : memref<2xf32>
      gpu.return
    }
  }

  // The collection over a fresh blocks buffer, each element its flat index.
  func.func @collection(%storage: !storage) -> !collection {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c288 = arith.constant 288 : index
    %flat = memref.collapse_shape %storage [[0, 1, 2, 3, 4, 5]] : !storage into memref<288xf32>
    scf.for %i = %c0 to %c288 step %c1 {
      %i32 = arith.index_cast %i : index to i32
      %value = arith.sitofp %i32 : i32 to f32
      memref.store %value, %flat[%i] : memref<288xf32>
    }
    %blocks = memref.cast %storage : !storage to !blocks
    %table_global = memref.get_global @lookup_table : memref<2xi32>
    %table = memref.alloc() {alignment = 64 : i64} : memref<2xi32>
    memref.copy %table_global, %table : memref<2xi32> to memref<2xi32>
    %lengths_global = memref.get_global @cache_lengths : memref<2xi32>
    %lengths = memref.alloc() {alignment = 64 : i64} : memref<2xi32>
    memref.copy %lengths_global, %lengths : memref<2xi32> to memref<2xi32>
    %lookup_table = memref.cast %table : memref<2xi32> to memref<?xi32>
    %cache_lengths = memref.cast %lengths : memref<2xi32> to memref<?xi32>
    %max_seq_length = arith.constant 0 : i32
    %max_cache_length = arith.constant 6 : i32
    %c = kvcache.continuous_collection %blocks, %cache_lengths, %lookup_table, %max_seq_length, %max_cache_length
        : !blocks, memref<?xi32>, memref<?xi32> -> !collection
    return %c : !collection
  }

  func.func @main() {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c3 = arith.constant 3 : index
    %c4 = arith.constant 4 : index
    %c6 = arith.constant 6 : index
    %storage = memref.alloc() {alignment = 64 : i64} : !storage
    %collection = call @collection(%storage) : (!storage) -> !collection
    %k = kvcache.get_key_cache %collection[%c0] : !collection
    %v = kvcache.get_value_cache %collection[%c0] : !collection
    // Sequence 0 (block 2): tokens 0..3; sequence 1 (block 0): all 6 slots.
    gpu.launch_func @kernels::@copy_kv blocks in (%c4, %c1, %c1) threads in (%c2, %c1, %c1)
        args(%k : !cache, %v : !cache, %c0 : index)
    gpu.launch_func @kernels::@copy_kv blocks in (%c6, %c1, %c1) threads in (%c2, %c1, %c1)
        args(%k : !cache, %v : !cache, %c1 : index)
    %sums = memref.alloc() {alignment = 64 : i64} : memref<2xf32>
    gpu.launch_func @kernels::@tile_sum blocks in (%c1, %c1, %c1) threads in (%c2, %c1, %c1)
        args(%k : !cache, %c1 : index, %c3 : index, %sums : memref<2xf32>)
    %sum_vector = vector.load %sums[%c0] : memref<2xf32>, vector<2xf32>
    vector.print %sum_vector : vector<2xf32>
    // V of every block, slot and head.
    scf.for %p = %c0 to %c3 step %c1 {
      scf.for %s = %c0 to %c6 step %c1 {
        scf.for %h = %c0 to %c2 step %c1 {
          %row = vector.load %storage[%p, %c1, %c0, %s, %h, %c0] : !storage, vector<4xf32>
          vector.print %row : vector<4xf32>
        }
      }
    }
    memref.dealloc %sums : memref<2xf32>
    memref.dealloc %storage : !storage
    return
  }

  func.func @bad() {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c7 = arith.constant 7 : index
    %storage = memref.alloc() {alignment = 64 : i64} : !storage
    %collection = call @collection(%storage) : (!storage) -> !collection
    %k = kvcache.get_key_cache %collection[%c0] : !collection
    %v = kvcache.get_value_cache %collection[%c0] : !collection
    // Tokens 0..6 of a block of 6 slots: block 6 reads past it.
    gpu.launch_func @kernels::@copy_kv blocks in (%c7, %c1, %c1) threads in (%c2, %c1, %c1)
        args(%k : !cache, %v : !cache, %c0 : index)
    vector.print str "bad completed\n"
    memref.dealloc %storage : !storage
    return
  }
}
