//===- Passes.td - kvcache conversion passes ---------------*- tablegen -*-===//
//
// Part of the kvcache-mlir project.
//
//===----------------------------------------------------------------------===//

#ifndef KVCACHE_CONVERSION_PASSES_TD
#define KVCACHE_CONVERSION_PASSES_TD

include "mlir/Pass/PassBase.td"

def ConvertKVCacheToMemRef : Pass<"convert-kvcache-to-memref", "ModuleOp"> {
  let summary = "Lower kvcache access ops to memref, vector, arith and scf";
  let description = [{
    Lowers every access op (`paged_collection`, `get_key_cache`,
    `get_value_cache`, `cache_length`, `max_seq_length`, `max_cache_length`,
    `lookup`, `load`, `store`, `page_load`, `page_store`, `tile`) in host
    functions and in `gpu.func` kernels alike, and decomposes values of the two
    cache types 1:N (the kernel ABI):

    - `!kvcache.paged_collection` becomes its five constructor operands, with
      `blocks` cast to `memref<? x kv_dim x ? x P x H x D x elt,
      strided<[?, ?, ?, H*D, D, 1], offset: ?>>` and the metadata to
      `memref<?xi32>`, `memref<?x?xi32>`, `i32`, `i32`;
    - `!kvcache.paged_cache` becomes the layer's view
      `memref<? x P x H x D x elt, strided<[?, H*D, D, 1], offset: ?>>` (a
      `memref.subview` of `blocks` at `[*, kv, layer, *, *, *]`), followed by
      the same four metadata values.

    Function signatures, calls and returns (`func`, `gpu.func`,
    `gpu.launch_func`, `gpu.return`) and `scf`/`cf` region boundaries are
    rewritten accordingly. A lookup is `lookup_table[b, t / P]` (unsigned i32)
    and `t mod P`, computed in i32 (shifts and masks for a power-of-two page
    size); element addresses are computed in `index`. Vector accesses are
    emitted with the alignment of their whole width.

    Before:
    ```mlir
    %x = kvcache.load %k[%b, %h, %t, %d] : !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16> -> vector<8xf16>
    ```
    After (schematically):
    ```mlir
    %t32 = arith.index_castui %t : index to i32
    %col32 = arith.shrui %t32, %c4 : i32
    %slot32 = arith.andi %t32, %c15 : i32
    %page32 = memref.load %lookup_table[%b, %col] : memref<?x?xi32>
    %page = arith.index_castui %page32 : i32 to index
    %x = vector.load %view[%page, %slot, %h, %d] {alignment = 16 : i64} : memref<?x16x8x128xf16, strided<[?, 1024, 128, 1], offset: ?>>, vector<8xf16>
    ```

    With `checked=true` every access is checked at run time (batch index,
    logical page against the lookup-table columns, physical page against
    `num_pages`, layer, head, slot, element range and vector alignment, tile
    alignment); caches with `assert_write_mode = 1` get the same checks on
    every write. A failed check prints a message naming the op, the bound and
    the source location to stderr and aborts (host code), or fails a device
    assertion (`cf.assert`, inside GPU code).

    A dequantizing read (`page_load` or `load` of floats from a cache with
    scales) multiplies the decoded codes by their scale: i8 codes by
    `arith.sitofp`, fp8 codes by target-neutral `arith.extf` to f16 and then
    to f32, which `kvcache-fp8-to-integer` or `kvcache-fp8-to-nvvm` lower
    afterwards (the pipelines run them right after this pass). The
    `nvvm-fp8-conversions` option, which once chose NVVM's conversion
    instructions here, is deprecated and ignored with a warning: run
    `kvcache-fp8-to-nvvm{chip=...}` after this pass instead.
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::cf::ControlFlowDialect",
    "::mlir::LLVM::LLVMDialect",
    "::mlir::memref::MemRefDialect",
    "::mlir::mpi::MPIDialect",
    "::mlir::scf::SCFDialect",
    "::mlir::vector::VectorDialect",
  ];
  let options = [
    Option<"checked", "checked", "bool", /*default=*/"false",
           "Check every access (reads too) at run time">,
    Option<"transferDirectBytes", "transfer-direct-bytes", "int64_t",
           /*default=*/"128 << 10",
           "send_pages/recv_pages: runs of pages of at least this many bytes "
           "are non-blocking messages of their own; shorter ones are packed">,
    Option<"transferStagingBytes", "transfer-staging-bytes", "int64_t",
           /*default=*/"16 << 20",
           "send_pages/recv_pages: the packed runs go in messages of at most "
           "this many bytes (at least transfer-direct-bytes)">,
    Option<"nvvmFp8Conversions", "nvvm-fp8-conversions", "bool",
           /*default=*/"false",
           "Deprecated, no effect (a warning says so): fp8 codes are decoded "
           "by target-neutral arith.extf, which kvcache-fp8-to-nvvm{chip=...} "
           "lowers to the sm_89+ conversion instructions">,
  ];
}

def KVCacheMPIToLLVM : Pass<"kvcache-mpi-to-llvm", "ModuleOp"> {
  let summary = "Lower the mpi dialect to calls of an MPI library";
  let description = [{
    MLIR's lowering of the `mpi` dialect (the one `kvcache.send_pages` and
    `kvcache.recv_pages` lower to, docs/Contract.md section 3.6) to LLVM
    calls of the MPI C API, for the MPI implementation `implementation`
    (`OpenMPI` or `MPICH`: the symbols of `MPI_COMM_WORLD` and the
    datatypes differ). The upstream lowering reads the implementation from
    a DLTI entry `"MPI:Implementation"` of the module; a module without a
    `dlti.map` gets one for the conversion, removed afterwards (so that
    `mlir-runner`, which does not register DLTI, can parse the result). A
    module without `mpi` ops is left alone. `kvcache-to-cpu` runs it.

    For OpenMPI two of MLIR 22's lowerings are corrected: the globals of the
    reduction ops are OpenMPI's `ompi_mpi_op_<op>` (upstream declares
    `ompi_mpi_<op>`, which the library lacks), and `mpi.comm_split` reads
    the new communicator back as a pointer (upstream reads MPICH's i32
    handle). The shard dialect's collectives, lowered by
    `convert-shard-to-mpi`, use both.

    MLIR 22 does not lower the non-blocking `mpi.isend`, `mpi.irecv` and
    `mpi.wait` that the page transfers use; this pass does, for 1-D memrefs
    of `i8` (`MPI_INT8_T`, as MLIR lowers `mpi.send` of `i8`): `MPI_Isend`,
    `MPI_Irecv` and `MPI_Wait(&request, MPI_STATUS_IGNORE)`. A
    `!mpi.request` becomes an `i64` (OpenMPI's pointer or MPICH's int).
  }];
  let dependentDialects = ["::mlir::DLTIDialect", "::mlir::LLVM::LLVMDialect"];
  let options = [
    Option<"implementation", "implementation", "std::string",
           /*default=*/"\"OpenMPI\"",
           "The MPI library the program links: OpenMPI or MPICH">,
  ];
}

def ConvertKVCacheToSCF : Pass<"convert-kvcache-to-scf"> {
  let summary = "Lower kvcache kernel ops to scf loops over access ops (CPU)";
  let description = [{
    Lowers `kvcache.store_ragged`, `kvcache.gather_ragged`,
    `kvcache.copy_pages`, `kvcache.attention_ragged`,
    `kvcache.merge_states` and `kvcache.rope_ragged` to loop nests written
    with kvcache access ops,
    for CPU execution (`kvcache-to-cpu` runs it first). The outer loop of
    each op is an `scf.parallel` whose iterations write disjoint outputs
    (sequences; page pairs; (sequence, KV head, tile of rows) triples of
    attention, flattened into one index, or (sequence, tile) pairs with
    every KV head for a decode batch of at least 4 sequences per thread
    (`threads`); merge rows), the loops inside it `scf.for`:
    `kvcache-to-cpu{parallel=true}` runs the outer loops on every core,
    otherwise they run in order.

    - `store_ragged` / `gather_ragged`: for each sequence `b` and each of its
      rows `r`, one `kvcache.lookup` of the token (position
      `cache_length(b) + r - offsets[b]` for store, `r - offsets[b]` for
      gather), then the row moves head by head in vectors of up to 16 bytes
      (`page_load` / `page_store` + `vector.load` / `vector.store`);
    - `copy_pages`: for each pair, each layer (`kvcache.num_layers`), K and V
      (K only for MLA), the `[page_size, num_heads, head_size]` block of the
      source page is copied to the destination page;
    - `attention_ragged`: for each (sequence, KV head, tile of rows), a tile
      being up to 128 (row, query head) lanes (rows x the GQA group's
      heads): a tile of at least 16 lanes takes the register-blocked
      row-tile kernel (docs/Design.md, "CPU attention": per block of 16
      keys, K and V rows converted once to f32, the scores of 16 keys x 16
      lanes in registers, the online softmax vectorised across lanes, P V
      with 4 output rows x 4 head vectors in registers), unless the op has
      `softcap` or a group of more than 128 heads; the other
      tiles, and those ops, take the per-row loop: for each query row
      (position `p`) of the tile,
      the query heads of its GQA group (up to 8, else passes of the largest
      divisor of the group up to 8) in one loop over keys `[0, p]`: each K
      and V row is read once, as a vector, for all of them, and each head
      keeps an online softmax in f32 (running max, running sum, rescaled
      accumulator; `scale` folded into q) in loop-carried values. Keys go
      in blocks of 8: each K row, loaded once, gives every head 16 partial
      sums of its dot product (fused multiply-adds, no reduction across a
      vector), and one shuffle tree per head turns the block's 8 x 16 sums
      into its 8 scores; per head one max, one rescale, one vector 2^x
      and 8 fused multiply-adds of the V rows (each loaded once).
      The keys after the last full block go one at a time (their dot
      products reassociable reductions). The K and V rows 8 keys ahead are
      prefetched (a head's rows are num_heads * head_size elements apart: a
      stride the hardware prefetchers miss), and 2^x is inline arithmetic
      (a degree-7 polynomial and the exponent bits: no libm call in the
      loop). The `workspace` is not needed on the CPU;
    - `rope_ragged`: for each sequence and each of its rows, one lookup of
      the row's storage position; then per chunk of W pairs (W the largest
      power of two of at most `vector-bytes` that divides R/2 and the
      rotary offset head_size - R) the chunk's cos and sin, read from the
      row's table row and deinterleaved once, rotate every query head into
      `q_out` and every key head of the cached row in place (products and
      sums in f32, no fused multiply-add, rounded once); `q_out` other than
      `q` first receives the elements that do not rotate. On a cache with
      a `tensor` scale the keys are read dequantized and quantized again.

    On a quantized cache (docs/Contract.md section 2.2) `store_ragged` of
    float rows quantizes each scale group (computing and writing the
    `token_head` / `block<G>` scales first), `gather_ragged` into float rows
    dequantizes, `copy_pages` copies per-page scales, and `attention_ragged`
    reads K and V rows dequantized to f32 (one load per scale group; on a
    `token_head` cache the codes converted and the row's one scale folded
    into the score and the softmax weight). fp8 codes convert through f16
    in 16-bit lanes (E5M2: an f16's high byte; E4M3FN: shifted into an
    f16, times 2^8) with the CPU's own f16 conversion: attention's rows and
    the quantizing store's vectors of up to 4 chunks (packed into one
    store) call these integer codecs directly; other fp8 conversions are
    left target-neutral (`arith.extf`; a clamp and `arith.truncf`) for
    `kvcache-fp8-to-integer`, which `kvcache-to-cpu` runs after
    `convert-kvcache-to-memref`.

    The vector width is the largest power of two of at most `vector-bytes`
    (default 64: a cache line; LLVM splits it into the target's widest
    registers) that divides head_size and the strides of the row memref;
    accesses claim at most the 16-byte alignment every memref has.
    Attention holds a head's q row and accumulator as whole vectors: heads
    of more than 4096 elements are rejected (its compile time grows with
    the head); `merge_states` loops over a head of any static size in
    chunks of at most 64 elements. Empty sequences and zero rows do nothing;
    writes through an `assert_write_mode = 1` cache are checked by
    `convert-kvcache-to-memref`.

    ```mlir
    kvcache.store_ragged %k, %new, %row_offsets : !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, memref<?x8x128xf16>, memref<?xi32>
    ```
    becomes (schematically)
    ```mlir
    scf.parallel (%b) = (%c0) to (%batch) step (%c1) {
      scf.for %r = %first to %end step %c1 {
        %page, %slot = kvcache.lookup %k[%b, %token] : ...
        scf.for %h = %c0 to %c8 step %c1 {
          scf.for %d = %c0 to %c128 step %c8 {
            %x = vector.load %new[%r, %h, %d] {alignment = 16 : i64} : memref<?x8x128xf16>, vector<8xf16>
            kvcache.page_store %x, %k[%page, %slot, %h, %d] : ..., vector<8xf16>
    ```
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::LLVM::LLVMDialect",
    "::mlir::math::MathDialect",
    "::mlir::memref::MemRefDialect",
    "::mlir::scf::SCFDialect",
    "::mlir::vector::VectorDialect",
  ];
  let options = [
    Option<"vectorBytes", "vector-bytes", "int64_t", /*default=*/"64",
           "Largest vector access of the data-movement loops, in bytes (a "
           "power of two; 64 = one cache line)">,
    Option<"checked", "checked", "bool", /*default=*/"false",
           "Stop at run time when store_ragged or rope_ragged quantizes a "
           "NaN into an i8 cache, or rope_ragged reads a rotary position "
           "past its cos_sin table (kvcache-to-cpu{checked=true} sets it)">,
    Option<"threads", "threads", "int64_t", /*default=*/"1",
           "Threads the outer scf.parallel loops will run on: 1 for serial "
           "code, 0 for the OpenMP runtime's count, asked at run time "
           "(omp_get_max_threads; kvcache-to-cpu{parallel=true} passes its "
           "own threads). Attention's decode tasks take whole sequences "
           "(all KV heads) from 4 sequences per thread">,
    Option<"cpuFeatures", "cpu-features", "std::string", /*default=*/"\"\"",
           "Features of the CPU the code will run on, beyond the baseline: "
           "'host' (this machine's, as LLVM sees them) or LLVM feature names "
           "each with + or -, comma-separated (e.g. +avx512bf16). With "
           "avx512bf16 the decode kernel dots bf16 q and K with vdpbf16ps; "
           "the code then needs a CPU that has it">,
  ];
}

def KVCacheFp8ToInteger : Pass<"kvcache-fp8-to-integer"> {
  let summary = "Lower fp8 conversions to integer arithmetic (any target)";
  let description = [{
    The kvcache lowerings leave fp8 conversions target-neutral: a decoding
    is `arith.extf` of `f8E4M3FN` or `f8E5M2` codes (to f16, then to f32),
    an encoding clamps f32 values to the type's +-max_finite with
    `arith.minimumf` and `arith.maximumf` (NaN stays NaN) and truncates them
    with `arith.truncf` (round to nearest even; it does not saturate, hence
    the clamp). This pass lowers both to integer arithmetic on the bits
    that every target runs (`kvcache-to-cpu` runs it after
    `convert-kvcache-to-memref`), with the contract's semantics
    (docs/Contract.md 2.2): round to nearest even, saturation to
    +-max_finite (infinities included), -0 kept, NaN to the type's NaN code
    with its sign (E4M3FN `S.1111.111`, E5M2 `S.11111.10`). A decoding goes
    through f16 in 16-bit lanes (E5M2 codes are an f16's high byte; E4M3FN
    codes shifted into an f16 are their value / 2^8, times 2^8 once
    extended to f32); an `arith.extf` to f16 whose users all extend to f32
    becomes one decoding to f32 per user. The encoding rounds with one f32
    add and takes the sign and the NaN code from the f32's top byte.

    Other fp8 conversions (a bare `arith.truncf` without that clamp, which
    does not saturate; results other than f16 and f32) are left as they are.
    (MLIR's `arith-to-apfloat` calls a runtime function per element and does
    not saturate.)

    ```mlir
    %lo = arith.minimumf %x, %c448 : vector<8xf32>
    %c = arith.maximumf %lo, %cm448 : vector<8xf32>
    %codes = arith.truncf %c : vector<8xf32> to vector<8xf8E4M3FN>
    ```
    becomes (schematically)
    ```mlir
    %bits = arith.bitcast %x : vector<8xf32> to vector<8xi32>
    %mag = arith.andi %bits, %c0x7fffffff : vector<8xi32>
    ...
    %words = arith.select %nan, %top, %signed : vector<8xi1>, vector<8xi32>
    %bytes = arith.trunci %words : vector<8xi32> to vector<8xi8>
    %codes = arith.bitcast %bytes : vector<8xi8> to vector<8xf8E4M3FN>
    ```
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect"];
}

def KVCacheFp8ToNVVM : Pass<"kvcache-fp8-to-nvvm"> {
  let summary = "Lower fp8 conversions to NVVM's conversion instructions in "
                "GPU code, to integer arithmetic elsewhere";
  let description = [{
    The GPU pipelines' lowering of the target-neutral fp8 conversions that
    `kvcache-fp8-to-integer` describes, chosen by `chip` as MLIR's
    `convert-arith-to-amdgpu` chooses by chipset (`kvcache-to-ptx` and
    `kvcache-to-emulated-gpu` run it after `convert-kvcache-to-memref`).
    Inside GPU code (a `gpu.module` or a `gpu.launch` body) on sm_89 and
    newer, scalars and 1-D vectors of even length are converted two at a
    time: a decoding by `nvvm.convert.f8x2.to.f16x2` (exact: f16 holds every
    fp8 value; a scalar converts a pair holding it twice), an encoding by
    `nvvm.convert.f32x2.to.f8x2` with `rn` and `satfinite`
    (cvt.rn.satfinite.e4m3x2.f32: it saturates, so the clamp goes), whose
    NaN codes are then replaced by the contract's (NVIDIA fixes neither
    their sign nor, for E5M2, their mantissa). Host code, older chips and
    other shapes get the integer arithmetic of `kvcache-fp8-to-integer`.

    ```mlir
    %h = arith.extf %codes : vector<4xf8E4M3FN> to vector<4xf16>
    ```
    becomes, inside a `gpu.module` for sm_90,
    ```mlir
    %bytes = arith.bitcast %codes : vector<4xf8E4M3FN> to vector<4xi8>
    %p0 = vector.shuffle %bytes, %bytes [0, 1] : vector<4xi8>, vector<4xi8>
    %h0 = nvvm.convert.f8x2.to.f16x2 %p0 : vector<2xi8>(f8E4M3FN) -> vector<2xf16>
    %p1 = vector.shuffle %bytes, %bytes [2, 3] : vector<4xi8>, vector<4xi8>
    %h1 = nvvm.convert.f8x2.to.f16x2 %p1 : vector<2xi8>(f8E4M3FN) -> vector<2xf16>
    %e0 = vector.extract %h0[0] : f16 from vector<2xf16>
    ...
    %h = vector.from_elements %e0, %e1, %e2, %e3 : vector<4xf16>
    ```
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::NVVM::NVVMDialect",
    "::mlir::vector::VectorDialect",
  ];
  let options = [
    Option<"chip", "chip", "std::string", /*default=*/"\"sm_90\"",
           "NVIDIA architecture of the kernels (sm_XX): from sm_89 GPU code "
           "converts with the fp8 conversion instructions">,
  ];
}

def ConvertKVCacheToGPU : Pass<"convert-kvcache-to-gpu", "ModuleOp"> {
  let summary = "Lower kvcache kernel ops to GPU kernels and their launches";
  let description = [{
    Lowers `kvcache.store_ragged`, `kvcache.gather_ragged`,
    `kvcache.copy_pages`, `kvcache.attention_ragged` and
    `kvcache.merge_states` and `kvcache.rope_ragged` to kernels written
    with kvcache access ops: a `gpu.func` named `<function>_<op>` (`_0`,
    `_1`, ... when taken) in `gpu.module @kvcache_kernels`, whose parameters
    are exactly the op's operands in order (the kernel ABI,
    docs/KernelABI.md), and a `gpu.launch_func` where the op was; the module
    is marked `gpu.container_module`:

    - ragged ops: each warp moves tiles of consecutive rows (as many, up to
      32, as give each thread `chunks-in-flight` 16-byte chunks), visiting
      tiles in a grid-stride loop; blocks of `threads-per-block / 32` warps,
      enough to cover the rows (dim 0 of `values`/`out`), at most
      `max-blocks`. Lane l of a warp resolves row l of its tile: its sequence
      by a binary search over the offsets on the device (no host reads:
      CUDA-graph safe), then one lookup; the lanes moving the row's
      consecutive 16-byte chunks (coalesced) read page and slot by shuffles,
      and every lane loads all its chunks of a tile before it stores them;
    - `copy_pages`: one launch for every pair, layer, K and V: block `(x, y)`
      copies pair `x` (grid-stride) of layer `y`, K then V;
    - `attention_ragged` (flash-decoding): a block per (row, KV head,
      split); the query heads of a GQA group share every K/V load. With
      `tensor-cores` (default) an f16/bf16 cache with head_size 64, 128 or
      256 on sm_80 or newer runs on tensor cores: the group's heads are the
      rows of m16n8k16 `mma.sync` tiles (one pass over K/V for any group,
      multi-query included), K and V stream through padded shared buffers
      (cp.async, K and V in separate groups, `ldmatrix` fragments), one
      softmax rescale per step of keys; 128 threads for groups of up to 64
      heads. Otherwise, on CUDA cores: a block of `attention-threads`
      threads, at most 8 heads per pass over the keys (a larger group takes
      ceil(group / 8) passes); K and V stream through shared memory with
      double-buffered cp.async when a lane's slice is 4, 8 or 16 bytes; with a workspace the context is split (`max-splits`,
      `keys-per-split`; never more splits than fill `sm-count` SMs at the
      kernel's estimated occupancy: a batch that fills the GPU is not split)
      and a second kernel merges the splits. The optional clauses
      (docs/Contract.md 3.3) run in both kernels: the key range starts at
      the window or chunk (or covers the cached tokens, `noncausal`), a soft
      cap (tanh from `ex2.approx`) and ALiBi transform each score, a sink
      joins the softmax once where the row is normalised (the merge kernel
      when split) and `lse` is written there. A head too
      large for one key's partial state in 48 KiB of shared memory, or q with
      2^31 heads or more, is rejected with an error.

    On a quantized cache (docs/Contract.md section 2.2) the ragged ops move
    chunks of the rows' element type: a gather into float rows dequantizes,
    a store of float rows quantizes (the lanes holding one scale group's
    chunks take its amax with xor shuffles: at most 32 of them, a power of
    two, else an error), and `copy_pages` also copies per-page scales, one
    f32 per thread. `attention_ragged` over a quantized cache with f16 or
    bf16 q and scale groups of 16 elements or more runs on tensor cores: the
    codes stream through shared memory by cp.async and each thread
    dequantizes the chunks it copied (`stored * scale`, rounded to q's type)
    into the tile the fragments are read from; otherwise on CUDA cores, K
    and V slices (at most 8 elements a lane) read dequantized straight from
    the cache. fp8 codes are
    encoded and decoded by target-neutral ops (a clamp to +-max_finite and
    `arith.truncf`; `arith.extf`), which `kvcache-fp8-to-nvvm{chip=...}`
    lowers after `convert-kvcache-to-memref`: on sm_89 and newer to the
    chip's conversion instructions (`nvvm.convert.f32x2.to.f8x2`,
    cvt.rn.satfinite.e4m3x2.f32, and `nvvm.convert.f8x2.to.f16x2`), two at
    a time, on older chips to the integer codecs of the CPU.

    - `merge_states`: block `(x, y)` merges rows x, x + gridDim.x, ... of
      query head y, a thread per 16-byte vector of the head; in place is
      safe (a barrier orders the log-sum-exp reads before the write);
    - `rope_ragged`: block x rotates rows x, x + gridDim.x, ... (every
      thread resolves the row: sequence, positions, one lookup), thread t
      the row's chunks of pairs t, t + blockDim.x, ... of its query heads,
      then of its key heads, with the CPU's chunks and arithmetic (the same
      bits); in place is safe (each element is one thread's).

    A launch with no work (no rows, no sequences, no pairs) is skipped. Vector
    widths follow `convert-kvcache-to-scf` (16 bytes when head_size allows).
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::gpu::GPUDialect",
    "::mlir::LLVM::LLVMDialect",
    "::mlir::memref::MemRefDialect",
    "::mlir::NVVM::NVVMDialect",
    "::mlir::nvgpu::NVGPUDialect",
    "::mlir::scf::SCFDialect",
    "::mlir::ub::UBDialect",
    "::mlir::vector::VectorDialect",
  ];
  let options = [
    Option<"chip", "chip", "std::string", /*default=*/"\"sm_90\"",
           "NVIDIA architecture the kernels are tuned for (sm_XX; below "
           "sm_80 attention loads K and V without cp.async)">,
    Option<"threadsPerBlock", "threads-per-block", "int64_t",
           /*default=*/"256",
           "Threads of a data-movement block (32 to 1024)">,
    Option<"maxBlocks", "max-blocks", "int64_t", /*default=*/"65535",
           "Largest grid; more rows or pairs are visited by a grid-stride "
           "loop">,
    Option<"chunksInFlight", "chunks-in-flight", "int64_t", /*default=*/"8",
           "Chunks of 16 bytes (or of the row's vector width) each thread "
           "of store_ragged and gather_ragged loads before it stores; they "
           "set the rows of a warp's tile (1 to 64)">,
    Option<"attentionThreads", "attention-threads", "int64_t",
           /*default=*/"128", "Threads of an attention block (32 to 1024)">,
    Option<"maxSplits", "max-splits", "int64_t", /*default=*/"16",
           "Most context splits per query row when a workspace is given "
           "(>= 1)">,
    Option<"keysPerSplit", "keys-per-split", "int64_t", /*default=*/"512",
           "Keys per split the split count aims at (>= 1)">,
    Option<"smCount", "sm-count", "int64_t", /*default=*/"0",
           "Streaming multiprocessors the attention grid fills: no more "
           "splits than fill them (0: the chip's flagship, 132 for sm_90)">,
    Option<"tensorCores", "tensor-cores", "bool", /*default=*/"true",
           "Attention of f16/bf16 caches with head_size 64, 128 or 256 on "
           "sm_80 or newer runs on tensor cores (ldmatrix + mma.sync); "
           "false: on CUDA cores">,
    Option<"checked", "checked", "bool", /*default=*/"false",
           "Fail a device assertion when store_ragged or rope_ragged "
           "quantizes a NaN into an i8 cache, or rope_ragged reads a rotary "
           "position past its cos_sin table (kvcache-to-ptx{checked=true} "
           "sets it)">,
  ];
}

def KVCacheEmulateNVVM : Pass<"kvcache-emulate-nvvm", "ModuleOp"> {
  let summary = "Turn NVVM kernels into CPU code that runs on the GPU emulator";
  let description = [{
    The last step of `kvcache-to-emulated-gpu`. Its input is what
    `kvcache-to-ptx` has right before `gpu-module-to-binary`: `gpu.module`s
    whose kernels are `llvm.func`s in the NVVM/LLVM dialects, and host code in
    the LLVM dialect whose launches are `gpu.launch_func` with LLVM operands.
    It produces plain LLVM dialect that `mlir-runner` runs with
    `libKVCacheGPUEmulator.so` in `-shared-libs`:

    - every function of every `gpu.module` moves into the host module, renamed
      `__kvemu_<module>_<function>`; each kernel gets an entry
      `__kvemu_entry_<module>_<kernel>(ptr params)` that unpacks a CUDA-style
      parameter array;
    - GPU operations become runtime calls: special registers
      (`nvvm.read.ptx.sreg.*`), barriers (`nvvm.barrier0`, `nvvm.barrier`
      without a thread count), warp shuffles (`nvvm.shfl.sync`), the
      warp-collective matrix ops `nvvm.ldmatrix` (m8n8 b16, x1/x2/x4,
      with or without `.trans`) and `nvvm.mma.sync` (m16n8k16 and m16n8k8
      row.col, f16 or bf16 multiplicands, f16 or f32 accumulators), with
      PTX's fragment layouts, `cp.async` copies, commits and waits,
      `ex2.approx`, device asserts (`__assertfail`), `vprintf` and libdevice
      `__nv_*` math;
    - shared-memory globals (address space 3, static and dynamic) become
      per-block allocations of the runtime, with red zones between them;
    - every load, store, atomic and memory intrinsic of a kernel first calls
      the runtime with its address, size and source location, which checks
      races, `cp.async` hazards, shared-memory bounds and uninitialized reads
      and counts the traffic profile (an `ldmatrix` row read is such a
      shared-memory read);
    - each `gpu.launch_func` becomes a call of `__kvemu_launch`.

    The runtime's interface is one header, KVCache/ExecutionEngine/
    EmulatorABI.h: the flags and codes the calls pass (access and `mma`
    flags, special-register numbers, shuffle modes, fp8 formats) and the C
    declaration of every entry point, from which the pass derives the
    LLVM-dialect type of each call. The ops inside the kernels are rewritten
    by one pattern per op, each visited once (no folding, nothing else
    changes); blocks no path reaches are dropped first, since their ops never
    run.

    Anything the emulator does not model (another `nvvm` op, another
    `ldmatrix` or `mma.sync` shape or type, an `llvm.nvvm.*` intrinsic,
    inline assembly, a call of another function without a body) is a
    compile-time error naming the op, never a silent no-op. So is a
    modelled device function, intrinsic call or host declaration whose type
    is not the runtime's (`__nv_expf` declared `(f64) -> f64`).

    Before (inside a `gpu.module`):
    ```mlir
    %tid = nvvm.read.ptx.sreg.tid.x : i32
    nvvm.barrier0
    %x = llvm.load %p : !llvm.ptr<3> -> f32
    ```
    After (in the host module):
    ```mlir
    %tid = llvm.call @__kvemu_sreg(%c0) : (i32) -> i32
    llvm.call @__kvemu_barrier(%site) : (!llvm.ptr) -> ()
    llvm.call @__kvemu_access(%p0, %c4, %flags, %site) : (!llvm.ptr, i64, i32, !llvm.ptr) -> ()
    %x = llvm.load %p : !llvm.ptr<3> -> f32
    ```
  }];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect"];
}

def KVCacheGPUMemoryToHost : Pass<"kvcache-gpu-memory-to-host", "ModuleOp"> {
  let summary = "Host GPU memory operations to memref operations on host "
                "memory (for the GPU emulator)";
  let description = [{
    On the emulated GPU device memory is host memory. This pass rewrites the
    synchronous host forms that `gpu-to-llvm` leaves alone:
    `gpu.alloc` (not `host_shared`) becomes `memref.alloc` aligned to 256
    bytes, `gpu.dealloc` `memref.dealloc`, `gpu.memcpy` `memref.copy`,
    `gpu.memset` `linalg.fill`, and a `gpu.wait` without a result is erased
    (everything already ran). Asynchronous forms are left to `gpu-to-llvm`,
    whose `mgpu*` runtime calls the emulator provides. `kvcache-to-emulated-gpu`
    runs it before lowering the host code.

    ```mlir
    %dev = gpu.alloc () : memref<64xf32>
    gpu.memcpy %dev, %host : memref<64xf32>, memref<64xf32>
    ```
    becomes
    ```mlir
    %dev = memref.alloc() {alignment = 256 : i64} : memref<64xf32>
    memref.copy %host, %dev : memref<64xf32> to memref<64xf32>
    ```
  }];
  let dependentDialects = [
    "::mlir::linalg::LinalgDialect",
    "::mlir::memref::MemRefDialect",
  ];
}

#endif // KVCACHE_CONVERSION_PASSES_TD
