//===- KVCacheInterfaces.td - kvcache op interfaces --------*- tablegen -*-===//
//
// Part of the kvcache-mlir project.
//
//===----------------------------------------------------------------------===//

#ifndef KVCACHE_IR_KVCACHEINTERFACES_TD
#define KVCACHE_IR_KVCACHEINTERFACES_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/Interfaces.td"

def KVCache_KernelOpInterface : OpInterface<"KernelOpInterface"> {
  let cppNamespace = "::mlir::kvcache";
  let description = [{
    An op lowered to whole kernels (loops on the CPU, GPU kernels):
    convert-kvcache-to-scf or convert-kvcache-to-gpu must lower it before
    convert-kvcache-to-memref.
  }];
  let methods = [
    InterfaceMethod<
      "The operands of the op's GPU kernel, in the order of its parameters "
      "(docs/KernelABI.md)",
      "::llvm::SmallVector<::mlir::Value>", "getKernelOperands", (ins), [{}],
      [{ return ::llvm::SmallVector<::mlir::Value>($_op->getOperands()); }]>
  ];
}

def KVCache_ArgumentChecksOpInterface
    : OpInterface<"ArgumentChecksOpInterface"> {
  let cppNamespace = "::mlir::kvcache";
  let description = [{
    An op whose operands must agree with each other at run time beyond what
    its verifier can see (docs/Contract.md, section 5.1): the extents of its
    memrefs, the contents of offsets and page pairs, the metadata of its
    caches. `emitArgumentChecks` emits the checks as IR (kvcache access ops,
    `arith`, `scf`, `memref`), in an order that never reads out of bounds,
    through a `KVCheckReporter` that decides what a failed check does.
    `kvcache-generate-argument-checks` calls it for every op that has it:
    the kernel ops, `get_key_cache`/`get_value_cache` (the layer index) and
    the collection constructors (a quantized collection's scales).
  }];
  let methods = [
    InterfaceMethod<[{
        Emits the op's checks at the builder's insertion point. `operands`
        maps the op's operands to the values the checks read (an empty
        mapping: the operands themselves, for checks placed right before the
        op). The checks run in phases: `reporter.guard` moves the insertion
        point to where every earlier check held, so later reads may rely on
        them. The insertion point may be left inside the last guard.
      }],
      "void", "emitArgumentChecks",
      (ins "::mlir::OpBuilder &":$builder,
           "const ::mlir::IRMapping &":$operands,
           "::mlir::kvcache::KVCheckReporter &":$reporter)>
  ];
}

def KVCache_AttentionOpInterface : OpInterface<"AttentionOpInterface"> {
  let cppNamespace = "::mlir::kvcache";
  let description = [{
    Paged attention over a ragged batch with the clauses of
    docs/Contract.md section 3.3: `attention_ragged` (a K and a V cache) and
    `mla_attention_ragged` (the K cache of an MLA collection, whose first
    `v_head_size` elements of each row are the value). The CPU loops and
    the GPU kernels lower both through this interface: the value rows are
    `getValueHeadSize()` elements from the start of `getValueCache()`'s
    rows, and `getValueCache()` is `getKeyCache()` when the keys are the
    values.
  }];
  let methods = [
    InterfaceMethod<"The queries `[T, q_heads, head_size]`",
      "::mlir::TypedValue<::mlir::ShapedType>", "getQ">,
    InterfaceMethod<"The layer's key cache",
      "::mlir::TypedValue<::mlir::kvcache::KVCacheTypeInterface>",
      "getKeyCache">,
    InterfaceMethod<"The cache the value rows are read from (the key cache "
                    "for MLA)",
      "::mlir::TypedValue<::mlir::kvcache::KVCacheTypeInterface>",
      "getValueCache">,
    InterfaceMethod<"Elements of a value row (and of an output row), from "
                    "the start of a row of getValueCache()",
      "int64_t", "getValueHeadSize">,
    InterfaceMethod<"The ragged row offsets `[batch + 1]`",
      "::mlir::TypedValue<::mlir::ShapedType>", "getRowOffsets">,
    InterfaceMethod<"The output `[T, q_heads, getValueHeadSize()]`",
      "::mlir::TypedValue<::mlir::ShapedType>", "getOut">,
    InterfaceMethod<"The log-sum-exp `[T, q_heads]`, or null",
      "::mlir::TypedValue<::mlir::ShapedType>", "getLse">,
    InterfaceMethod<"The split-KV scratch space, or null",
      "::mlir::TypedValue<::mlir::MemRefType>", "getWorkspace">,
    InterfaceMethod<"The sink logits `[q_heads]`, or null",
      "::mlir::TypedValue<::mlir::ShapedType>", "getSinks">,
    InterfaceMethod<"The ALiBi slopes `[q_heads]`, or null",
      "::mlir::TypedValue<::mlir::ShapedType>", "getAlibi">,
    InterfaceMethod<"The score scale", "::llvm::APFloat", "getScale">,
    InterfaceMethod<"The soft cap, if any",
      "::std::optional<::llvm::APFloat>", "getSoftcap">,
    InterfaceMethod<"The sliding window, if any",
      "::std::optional<uint64_t>", "getWindow">,
    InterfaceMethod<"The chunk size, if any",
      "::std::optional<uint64_t>", "getChunk">,
    InterfaceMethod<"Whether rows see the cached tokens only",
      "bool", "getNoncausal">,
    InterfaceMethod<"The cos/sin table of the rope clause on q, or null",
      "::mlir::TypedValue<::mlir::ShapedType>", "getCosSin">,
    InterfaceMethod<"The rope clause's rotary position of each row, or null",
      "::mlir::TypedValue<::mlir::ShapedType>", "getPositions">,
    InterfaceMethod<"The rope clause's rotary dims, if any",
      "::std::optional<uint64_t>", "getRotaryDims">,
    InterfaceMethod<"The rope clause's pairing, if any",
      "::std::optional<::llvm::StringRef>", "getStyle">
  ];
}

//===----------------------------------------------------------------------===//
// Collection and cache type interfaces (MAX's KVCollectionT and KVCacheT)
//===----------------------------------------------------------------------===//

// The static parameters every collection and layer cache type answers. A
// type whose ODS parameters have these names satisfies them with the
// generated getters.
defvar KVCache_ParameterMethods = [
  InterfaceMethod<"The element type of the cache",
    "::mlir::Type", "getElementType">,
  InterfaceMethod<"The number of KV heads",
    "int64_t", "getNumHeads">,
  InterfaceMethod<"The number of elements of one head row",
    "int64_t", "getHeadSize">,
  InterfaceMethod<[{
      The number of token slots of one page, or `ShapedType::kDynamic` when
      the type has no pages of a static size (a continuous-batching cache:
      one block of run-time size per sequence).
    }],
    "int64_t", "getPageSize">,
  InterfaceMethod<"Whether the cache is K-only (MLA): kv_dim 1",
    "bool", "getMla">,
  InterfaceMethod<"1 when every write is checked at run time, else 0",
    "int64_t", "getAssertWriteMode">,
  InterfaceMethod<[{
      The scales of a quantized cache (docs/Contract.md, section 8); none by
      default (a float or raw cache). A kind with scales lowers to a sixth
      value, the scales memref.
    }],
    "::mlir::kvcache::KVScales", "getScales", (ins), [{}],
    [{ return ::mlir::kvcache::KVScales(); }]>,
  InterfaceMethod<[{
      The kind name (MAX's `name_str`): "paged", "continuous", or a user
      type's own.
    }],
    "::llvm::StringRef", "getKindName">,
  InterfaceMethod<[{
      Appends the types of the values a value of this type lowers to
      (convert-kvcache-to-memref; the kernel ABI), in order.
    }],
    "void", "getLoweredTypes",
    (ins "::llvm::SmallVectorImpl<::mlir::Type> &":$types)>,
  InterfaceMethod<[{
      The names of the values `getLoweredTypes` returns, in the same order:
      the kernel ABI's parameter names (docs/KernelABI.md), which hosts such
      as the Python package show and match arrays by. The paged and
      continuous kinds name theirs "blocks", "cache_lengths",
      "lookup_table", "max_seq_length", "max_cache_length" and, with
      `scales`, "scales". A host that slices one layer's K or V out of a
      collection's values (docs/Contract.md, section 7.1) does it for the
      values named "blocks" and "scales". The default names none (an empty
      list): hosts then number the values.
    }],
    "::llvm::SmallVector<::llvm::StringRef>", "getLoweredNames", (ins), [{}],
    [{ return {}; }]>,
  InterfaceMethod<[{
      Emits `cache_lengths[batch]` (unsigned) as an `index`, given the
      lowered values of a value of this type. With `checks` (not null), also
      emits the run-time checks of the read (the batch index).
    }],
    "::mlir::Value", "buildCacheLength",
    (ins "::mlir::OpBuilder &":$builder, "::mlir::Location":$loc,
         "::mlir::ValueRange":$lowered, "::mlir::Value":$batch,
         "::mlir::kvcache::KVRuntimeChecks *":$checks)>,
  InterfaceMethod<[{
      Emits the batch's largest number of new tokens (`max_seq_length`,
      unsigned) as an `index`, given the lowered values.
    }],
    "::mlir::Value", "buildMaxSeqLength",
    (ins "::mlir::OpBuilder &":$builder, "::mlir::Location":$loc,
         "::mlir::ValueRange":$lowered)>,
  InterfaceMethod<[{
      Emits the batch's largest cache length plus new tokens
      (`max_cache_length`, unsigned) as an `index`, given the lowered values.
    }],
    "::mlir::Value", "buildMaxCacheLength",
    (ins "::mlir::OpBuilder &":$builder, "::mlir::Location":$loc,
         "::mlir::ValueRange":$lowered)>,
  InterfaceMethod<[{
      Emits the number of physical pages (blocks) as an `index`, given the
      lowered values.
    }],
    "::mlir::Value", "buildNumPages",
    (ins "::mlir::OpBuilder &":$builder, "::mlir::Location":$loc,
         "::mlir::ValueRange":$lowered)>,
  InterfaceMethod<[{
      Whether the kind implements `buildNumSequences` and `buildCapacity`,
      which `kvcache.num_sequences`, `kvcache.capacity` and the argument
      checks (`kvcache-generate-argument-checks`) need. False by default:
      the argument checks of a kernel op on such a kind leave out the rules
      about its sequences (their number, capacity and pages).
    }],
    "bool", "describesSequences", (ins), [{}], [{ return false; }]>,
  InterfaceMethod<[{
      Emits, as an `index`, the number of sequences the metadata describes
      (`kvcache.num_sequences`): every sequence `b` below it has a cache
      length (`buildCacheLength`) and a row of the page table
      (`buildCapacity`), given the lowered values. Null by default (see
      `describesSequences`).
    }],
    "::mlir::Value", "buildNumSequences",
    (ins "::mlir::OpBuilder &":$builder, "::mlir::Location":$loc,
         "::mlir::ValueRange":$lowered), [{}], [{ return {}; }]>,
  InterfaceMethod<[{
      Emits, as an `index`, the number of token positions sequence `batch`
      can address (`kvcache.capacity`), given the lowered values and a
      `batch` below the number of sequences: `buildLookup` of any token
      below it reads the metadata in bounds (the page it returns is the
      caller's to check against `buildNumPages`). Null by default (see
      `describesSequences`).
    }],
    "::mlir::Value", "buildCapacity",
    (ins "::mlir::OpBuilder &":$builder, "::mlir::Location":$loc,
         "::mlir::ValueRange":$lowered, "::mlir::Value":$batch), [{}],
    [{ return {}; }]>,
];

def KVCache_KVCacheTypeInterface : TypeInterface<"KVCacheTypeInterface"> {
  let cppNamespace = "::mlir::kvcache";
  let description = [{
    The K or the V of one layer of a KV cache collection (MAX's `KVCacheT`).
    Every access and kernel op takes any type implementing it; the lowering
    (convert-kvcache-to-memref, and through it the CPU, GPU and emulator
    pipelines and checked mode) asks the type for everything that depends on
    where a token lives:

    - `getLoweredTypes`: the values a cache value lowers to;
    - `getBlocks`: among them, the layer's 4-D view
      `[pages, page_slots, num_heads, head_size]` that `page_load`,
      `page_store` and `tile` address by (page, slot);
    - `buildLookup`: token `t` of sequence `b` to (page, slot);
    - `buildCacheLength`, `buildMaxSeqLength`, `buildMaxCacheLength`,
      `buildNumPages`: the metadata.
  }];
  let methods = !listconcat(KVCache_ParameterMethods, [
    InterfaceMethod<[{
        The layer's `[pages, page_slots, num_heads, head_size]` view among the
        lowered values `lowered`: a memref whose inner dims
        `[num_heads, head_size]` are contiguous, indexed by the (page, slot)
        `buildLookup` returns.
      }],
      "::mlir::Value", "getBlocks", (ins "::mlir::ValueRange":$lowered)>,
    InterfaceMethod<[{
        Emits the (page, slot) of token `token` of sequence `batch`, both
        `index` and below 2^32 (GPU kernels pass them between threads as
        i32), given the lowered values. With `checks` (not null), also
        emits the run-time checks of the lookup (batch index, the page-table
        entry read, the resulting page and slot).
      }],
      "::std::pair<::mlir::Value, ::mlir::Value>", "buildLookup",
      (ins "::mlir::OpBuilder &":$builder, "::mlir::Location":$loc,
           "::mlir::ValueRange":$lowered, "::mlir::Value":$batch,
           "::mlir::Value":$token,
           "::mlir::kvcache::KVRuntimeChecks *":$checks)>,
  ]);
}

def KVCache_KVCollectionTypeInterface
    : TypeInterface<"KVCollectionTypeInterface"> {
  let cppNamespace = "::mlir::kvcache";
  let description = [{
    A whole KV cache, every layer, K and V (MAX's `KVCollectionT`):
    `get_key_cache`/`get_value_cache` take any type implementing it and
    return its `getLayerCacheType()`; `buildLayerCache` lowers them.
    `copy_pages` takes collections with pages of a static size.
  }];
  let methods = !listconcat(KVCache_ParameterMethods, [
    InterfaceMethod<[{
        The type of one layer's K or V cache, with every parameter of this
        collection: a type implementing `KVCacheTypeInterface`.
      }],
      "::mlir::Type", "getLayerCacheType">,
    InterfaceMethod<[{
        Emits the lowered values of the K (`kv` 0) or V (`kv` 1) cache of
        layer `layer`, given the lowered values of the collection. With
        `checks` (not null), also checks the layer index.
      }],
      "::llvm::SmallVector<::mlir::Value>", "buildLayerCache",
      (ins "::mlir::OpBuilder &":$builder, "::mlir::Location":$loc,
           "::mlir::ValueRange":$lowered, "::mlir::Value":$layer,
           "int64_t":$kv, "::mlir::kvcache::KVRuntimeChecks *":$checks)>,
    InterfaceMethod<[{
        Emits the number of layers as an `index`, given the lowered values.
      }],
      "::mlir::Value", "buildNumLayers",
      (ins "::mlir::OpBuilder &":$builder, "::mlir::Location":$loc,
           "::mlir::ValueRange":$lowered)>,
  ]);
}

def KVCache_CollectionOpInterface : OpInterface<"CollectionOpInterface"> {
  let cppNamespace = "::mlir::kvcache";
  let description = [{
    An op that builds a collection (a value of a type implementing
    `KVCollectionTypeInterface`) from the values it lowers to: its operands,
    in the order of the type's `getLoweredTypes`. convert-kvcache-to-memref
    replaces it by its operands, cast to the lowered types.
  }];
  let methods = [
    InterfaceMethod<"The i32 largest number of new tokens of the batch",
      "::mlir::Value", "getMaxSeqLength">,
    InterfaceMethod<"The i32 largest cache length plus new tokens",
      "::mlir::Value", "getMaxCacheLength">,
    InterfaceMethod<[{
        The number of layers when the operands fix it, for verifying
        constant layer indices.
      }],
      "::std::optional<int64_t>", "getStaticNumLayers", (ins), [{}],
      [{ return ::std::nullopt; }]>,
    InterfaceMethod<[{
        The operands that hold the cache's data, which the writing ops
        update in place: `blocks` (by default the first operand), then
        `scales` when the type has them. In the tensor form
        (docs/Contract.md section 3.5) bufferization writes their buffers;
        the other operands are only read.
      }],
      "::llvm::SmallVector<::mlir::OpOperand *>", "getCacheDataOperands",
      (ins), [{}], [{
        return {&$_op->getOpOperand(0)};
      }]>,
  ];

  let extraClassDeclaration = [{
    /// Whether the collection is built from tensors (docs/Contract.md
    /// section 3.5): the ops that write it return the updated collection.
    bool isTensorForm() {
      return ::llvm::isa<::mlir::TensorType>(
          getCacheDataOperands().front()->get().getType());
    }
  }];
}

def KVCache_CacheWriterOpInterface : OpInterface<"CacheWriterOpInterface"> {
  let cppNamespace = "::mlir::kvcache";
  let description = [{
    An op that writes a cache (`store_ragged`, `copy_pages`,
    `rope_ragged`): a layer cache or a collection operand. On a collection
    built from tensors (docs/Contract.md section 3.5) it returns the updated
    collection, which the later ops use instead of the one it wrote;
    bufferization replaces that result by the collection written in place,
    and kvcache-bufferize checks that no collection value is used after a
    write supersedes it.
  }];
  let methods = [
    InterfaceMethod<"The layer cache or collection the op writes",
      "::mlir::Value", "getWrittenCache">,
    InterfaceMethod<[{
        The updated collection the op returns (on a collection built from
        tensors), or null.
      }],
      "::mlir::Value", "getUpdatedCollection", (ins), [{}], [{
        for (::mlir::Value result : $_op->getResults())
          if (::llvm::isa<::mlir::kvcache::KVCollectionTypeInterface>(
                  result.getType()))
            return result;
        return {};
      }]>,
  ];
}

#endif // KVCACHE_IR_KVCACHEINTERFACES_TD
