"""IR builders: the `kvcache` IR of common functions, from a CacheConfig.

Each builder returns the text of one `func.func`; a function alone is a valid
module, and `module(...)` joins several into one. Every function takes the
cache as the five operands (six for a quantized cache) of the collection's
constructor op (`kvcache.paged_collection`, or
`kvcache.continuous_collection` for `config.kind == "continuous"`;
docs/Contract.md section 1),

    %blocks:           memref<?xKVxLxPxHxDxelt, strided<[?, ?, ?, H*D, D, 1], offset: ?>>
                       (L is `?` when config.num_layers is None; P is
                       config.page_size, or for a continuous cache
                       config.block_tokens, `?` when None; any block, kv
                       and layer strides, so numpy views work)
    %cache_lengths:    memref<?xi32>
    %lookup_table:     memref<?x?xi32> (paged), memref<?xi32> (continuous)
    %max_seq_length:   i32
    %max_cache_length: i32

then, for a quantized cache (`config.scales` set; docs/Contract.md 2.2), its
f32 scales as the constructor's sixth operand (`scales_type(config)`: any
outer strides, the dims after num_layers contiguous),

    %scales:           tensor:     memref<LxKVxf32, strided<[?, 1], offset: ?>>
                       token_head: memref<?xKVxLxPxHxf32,
                                   strided<[?, ?, ?, H, 1], offset: ?>>
                       block<G>:   memref<?xKVxLxPxHxD/Gxf32,
                                   strided<[?, ?, ?, H*D/G, D/G, 1], offset: ?>>

then `%layer: index` (except copy_pages) and the kernel op's other operands
(destination-passing: nothing is returned). Rows (store_ragged's new rows,
gather_ragged's out, attention's q and out) are of `config.rows_element`:
the cache's dtype, or for a quantized cache f32 by default, f16 or bf16
(`CacheConfig(..., rows_dtype=...)`: quantized by store_ragged, dequantized
by gather_ragged), or its storage type (codes, copied raw). So from Python,

    config = CacheConfig("f16", num_heads=8, head_size=128, page_size=16,
                         q_heads=32)
    ir = builders.decode_step(config)
    cpu = kvcache.CPUModule(ir)
    cpu.decode_step(*cache.arguments(), layer, q, k, v, row_offsets, out)

The same calls serve a continuous cache (`CacheConfig(..., kind="continuous")`
and `reference.random_cache` of it), except copy_pages: a continuous cache
has no pages to copy; and a quantized one, whose `cache.arguments()` are
the six values:

    config = CacheConfig("f8E4M3FN", num_heads=8, head_size=128,
                         scales="token_head", rows_dtype="bf16")
    cpu = kvcache.CPUModule(builders.store_ragged(config))
    cpu.store_ragged(*cache.arguments(), layer, bf16_rows, row_offsets)

Nothing here needs the compiler extension.
"""

from .config import FLOAT_TYPES, CacheConfig

__all__ = ["CacheConfig", "attention_ragged", "blocks_type", "cache_type",
           "collection_type", "copy_pages", "decode_step", "gather_ragged",
           "kernel_names", "kernels", "lookup_table_type", "merge_states",
           "mla_attention_ragged", "module", "mpi_process", "recv_pages",
           "rope_ragged", "rows_type", "scales_type", "send_pages",
           "store_ragged"]

OFFSETS_TYPE = "memref<?xi32>"
CACHE_LENGTHS_TYPE = "memref<?xi32>"
PAIRS_TYPE = "memref<?x2xi32>"
WORKSPACE_TYPE = "memref<?xf32>"


def collection_type(config):
    """`!kvcache.paged_collection<...>` or `!kvcache.continuous_collection<...>`."""
    return f"!kvcache.{config.kind}_collection<{config.type_parameters()}>"


def cache_type(config):
    """`!kvcache.paged_cache<...>` or `!kvcache.continuous_cache<...>`: one
    layer's K or V."""
    return f"!kvcache.{config.kind}_cache<{config.type_parameters()}>"


def _static_or_dynamic(size):
    return "?" if size is None else size


def blocks_type(config):
    """The `blocks` operand of the constructor op: dim 3 is page_size, or
    block_tokens of a continuous cache (`?` when None)."""
    layers = _static_or_dynamic(config.num_layers)
    tokens = _static_or_dynamic(config.page_size if config.has_pages
                                else config.block_tokens)
    H, D = config.num_heads, config.head_size
    return (f"memref<?x{config.kv_dim}x{layers}x{tokens}x{H}x{D}x"
            f"{config.dtype}, strided<[?, ?, ?, {H * D}, {D}, 1], offset: ?>>")


def lookup_table_type(config):
    """`memref<?x?xi32>` ([batch, max_pages]) for a paged cache,
    `memref<?xi32>` ([batch]: the block of each sequence) for a continuous
    one."""
    return "memref<?x?xi32>" if config.has_pages else "memref<?xi32>"


def scales_type(config):
    """The scales operand of a quantized cache's constructor op (None
    without scales): f32, `[L, kv_dim]` (tensor) or `[?, kv_dim, L, P, H]`
    (token_head) then `D/G` (block<G>), L `?` when config.num_layers is
    None, P page_size or block_tokens (`?` when None); the outer strides
    dynamic, so numpy views work."""
    if config.scales is None:
        return None
    layers = _static_or_dynamic(config.num_layers)
    if config.scales == "tensor":
        return (f"memref<{layers}x{config.kv_dim}xf32, strided<[?, 1], "
                "offset: ?>>")
    tokens = _static_or_dynamic(config.page_size if config.has_pages
                                else config.block_tokens)
    H = config.num_heads
    if config.scales == "token_head":
        inner, strides = [H], [H, 1]
    else:
        groups = config.head_size // config.scale_group
        inner, strides = [H, groups], [H * groups, groups, 1]
    dims = "x".join(str(d) for d in [config.kv_dim, layers, tokens] + inner)
    return (f"memref<?x{dims}xf32, strided<[?, ?, ?, "
            f"{', '.join(map(str, strides))}], offset: ?>>")


def rows_type(config, heads=None, head_size=None):
    """`memref<?xHxDxelt>`: ragged rows of `heads` heads (default KV heads)
    of `head_size` elements (default config.head_size) of
    config.rows_element (the cache's dtype, or the float or storage type
    that a quantized cache's rows_dtype chooses)."""
    heads = config.num_heads if heads is None else heads
    head_size = config.head_size if head_size is None else head_size
    return f"memref<?x{heads}x{head_size}x{config.rows_element}>"


def _scale_literal(config, scale):
    value = config.default_scale if scale is None else float(scale)
    return f"{value!r}"


class _Function:
    """Accumulates the arguments and body of one func.func."""

    def __init__(self, config, name):
        if not name.replace("_", "").isalnum() or name[0].isdigit():
            raise ValueError(f"function name must be an identifier, got {name!r}")
        self.config = config
        self.name = name
        self.arguments = []
        self.body = []
        self.layer_caches = set()

    def argument(self, name, type_):
        self.arguments.append(f"%{name}: {type_}")
        return f"%{name}"

    def op(self, text):
        self.body.append(text)

    def collection(self, with_layer=True):
        """The five collection arguments (six with `%scales` for a quantized
        cache), the collection's constructor op (kvcache.paged_collection or
        kvcache.continuous_collection), and `%layer` when the function reads
        one layer."""
        config = self.config
        blocks, table = blocks_type(config), lookup_table_type(config)
        arguments = [("blocks", blocks), ("cache_lengths", CACHE_LENGTHS_TYPE),
                     ("lookup_table", table), ("max_seq_length", "i32"),
                     ("max_cache_length", "i32")]
        if config.scales is not None:
            arguments.append(("scales", scales_type(config)))
        for name, type_ in arguments:
            self.argument(name, type_)
        operands = ", ".join(f"%{name}" for name, _ in arguments)
        memrefs = [type_ for _, type_ in arguments if type_.startswith("memref")]
        self.op(f"%collection = kvcache.{config.kind}_collection {operands} : "
                f"{', '.join(memrefs)} -> {collection_type(config)}")
        if with_layer:
            self.argument("layer", "index")
        return "%collection"

    def layer_cache(self, kv):
        """`%key_cache` or `%value_cache` of `%layer`."""
        if kv not in ("key", "value"):
            raise ValueError(f"kv must be 'key' or 'value', got {kv!r}")
        if kv == "value" and self.config.mla:
            raise ValueError("an mla cache has no value cache (kv_dim 1)")
        result = f"%{kv}_cache"
        if kv not in self.layer_caches:
            self.layer_caches.add(kv)
            self.op(f"{result} = kvcache.get_{kv}_cache %collection[%layer] : "
                    f"{collection_type(self.config)}")
        return result

    def text(self):
        lines = [f"func.func @{self.name}({', '.join(self.arguments)}) {{"]
        lines += [f"  {line}" for line in self.body]
        lines += ["  return", "}"]
        return "\n".join(lines) + "\n"


def _store(fn, kv, values):
    config = fn.config
    fn.op(f"kvcache.store_ragged {fn.layer_cache(kv)}, {values}, %row_offsets : "
          f"{cache_type(config)}, {rows_type(config)}, {OFFSETS_TYPE}")


def _clause_text(clauses, config):
    """(operand text, types text, attribute text) of attention_ragged's
    optional clauses (docs/Contract.md 3.3): `clauses` maps window, chunk,
    noncausal, softcap (attributes) and sinks, alibi, lse (True: the
    operand is a function argument of that name)."""
    unknown = set(clauses) - {"window", "chunk", "noncausal", "softcap",
                              "sinks", "alibi", "lse", "rope"}
    if unknown:
        raise ValueError(f"attention_ragged has no clause {sorted(unknown)[0]!r}; "
                         "the clauses are window, chunk, noncausal, softcap, "
                         "sinks, alibi, lse, rope")
    heads = config.query_heads
    operands, types, attributes = "", "", []
    for name, type_ in (("sinks", f"memref<{heads}xf32>"),
                        ("alibi", f"memref<{heads}xf32>"),
                        ("lse", f"memref<?x{heads}xf32>")):
        if clauses.get(name):
            operands += f" {name}(%{name})"
            types += f", {type_}"
    for name in ("window", "chunk"):
        if clauses.get(name) is not None:
            attributes.append(f"{name} = {int(clauses[name])} : i64")
    if clauses.get("noncausal"):
        attributes.append("noncausal")
    if clauses.get("softcap") is not None:
        attributes.append(f"softcap = {float(clauses['softcap'])!r} : f32")
    if clauses.get("rope"):
        rope_operands, rope_types, rope_attributes = clauses["rope"]
        operands += rope_operands
        types += rope_types
        attributes += rope_attributes
    return operands, types, attributes


def _attention(fn, scale, workspace, clauses=None, v_head_size=None):
    """attention_ragged, or with `v_head_size` mla_attention_ragged."""
    config = fn.config
    mla = v_head_size is not None
    if config.mla != mla:
        raise ValueError(
            "attention_ragged does not take mla caches: mla_attention_ragged "
            "does (docs/Contract.md, section 4.7)" if config.mla else
            "mla_attention_ragged takes the cache of an mla collection "
            "(CacheConfig(..., mla=True)): attention_ragged serves this one")
    if config.is_raw_storage:
        raise ValueError(f"attention_ragged does not take a raw {config.dtype} "
                         "cache (stored codes without scales, docs/Contract.md "
                         "section 2.2): store_ragged/gather_ragged/copy_pages "
                         "serve it")
    if config.rows_element not in FLOAT_TYPES:
        raise ValueError(f"attention_ragged takes f32, f16 or bf16 q and out "
                         f"(docs/Contract.md 4.7), not {config.rows_element} "
                         "codes: set the config's rows_dtype to 'f32', 'f16' "
                         "or 'bf16'")
    q_type = rows_type(config, config.query_heads)
    out_type = rows_type(config, config.query_heads, v_head_size)
    caches = [fn.layer_cache("key")] + ([] if mla else [fn.layer_cache("value")])
    operands = f"%q, {', '.join(caches)}, %row_offsets, %out"
    types = (f"{q_type}, {', '.join([cache_type(config)] * len(caches))}, "
             f"{OFFSETS_TYPE}, {out_type}")
    if workspace:
        operands += ", %workspace"
        types += f", {WORKSPACE_TYPE}"
    extra_operands, extra_types, attributes = _clause_text(clauses or {}, config)
    attributes = [f"scale = {_scale_literal(config, scale)} : f32"] + attributes
    if mla:
        attributes.append(f"v_head_size = {int(v_head_size)} : i64")
    fn.op(f"kvcache.{'mla_' if mla else ''}attention_ragged "
          f"{operands}{extra_operands} "
          f"{{{', '.join(attributes)}}} : {types}{extra_types}")


def store_ragged(config, name="store_ragged", kv="key", style=None,
                 rotary_dims=None, positions=False):
    """`(collection..., %layer, %new: [T, H, D], %row_offsets: [batch+1]
    [, %cos_sin: [P, R] f32] [, %positions: [T] i32])`: appends the rows of
    each sequence after its cached tokens. With `style` ("interleaved" or
    "half"), the clause rope(%cos_sin) rotates them first
    (docs/Contract.md 3.3): their last `rotary_dims` (default head_size)
    elements, at cache_length + row index or at `positions` (True: an
    argument)."""
    fn = _Function(config, name)
    fn.collection()
    fn.argument("new", rows_type(config))
    fn.argument("row_offsets", OFFSETS_TYPE)
    if style is None:
        _store(fn, kv, "%new")
        return fn.text()
    clause, types, attributes = _rope_clause(fn, style, rotary_dims, positions)
    fn.op(f"kvcache.store_ragged {fn.layer_cache(kv)}, %new, %row_offsets"
          f"{clause} {{{', '.join(attributes)}}}"
          f" : {cache_type(config)}, {rows_type(config)}, {OFFSETS_TYPE}{types}")
    return fn.text()


def _rope_clause(fn, style, rotary_dims, positions):
    """(operand text, types text, attributes) of a rope(%cos_sin)
    [positions(%positions)] clause (docs/Contract.md 3.3), its operands
    added to `fn` as arguments: the last `rotary_dims` (default head_size)
    elements rotate, pairs `style`, at `positions` with positions True."""
    rotary_dims = (fn.config.head_size if rotary_dims is None
                   else int(rotary_dims))
    table_type = f"memref<?x{rotary_dims}xf32>"
    operands = f" rope({fn.argument('cos_sin', table_type)})"
    types = f", {table_type}"
    if positions:
        operands += f" positions({fn.argument('positions', OFFSETS_TYPE)})"
        types += f", {OFFSETS_TYPE}"
    return operands, types, [f"rotary_dims = {rotary_dims} : i64",
                             f'style = "{style}"']


def gather_ragged(config, name="gather_ragged", kv="key"):
    """`(collection..., %layer, %out: [T, H, D], %ctx_offsets: [batch+1])`:
    out rows `ctx_offsets[b]..` receive sequence b's tokens 0, 1, ..."""
    fn = _Function(config, name)
    fn.collection()
    fn.argument("out", rows_type(config))
    fn.argument("ctx_offsets", OFFSETS_TYPE)
    fn.op(f"kvcache.gather_ragged {fn.layer_cache(kv)}, %out, %ctx_offsets : "
          f"{cache_type(config)}, {rows_type(config)}, {OFFSETS_TYPE}")
    return fn.text()


def copy_pages(config, name="copy_pages"):
    """`(collection..., %pairs: [n, 2])`: copies page src to dst, every
    layer, K and V. Paged caches only: ValueError for a continuous one."""
    if not config.has_pages:
        raise ValueError(f"copy_pages needs a cache with pages: a {config.kind} "
                         "cache has none (kvcache.copy_pages takes only "
                         "collections with pages)")
    fn = _Function(config, name)
    fn.collection(with_layer=False)
    fn.argument("pairs", PAIRS_TYPE)
    fn.op(f"kvcache.copy_pages %collection, %pairs : {collection_type(config)}, "
          f"{PAIRS_TYPE}")
    return fn.text()


def _transfer(config, name, op, ids):
    if config.kind != "paged":
        raise ValueError(f"{op} moves pages of a paged collection, got a "
                         f"{config.kind} cache")
    fn = _Function(config, name)
    fn.collection(with_layer=False)
    fn.argument(ids, OFFSETS_TYPE)
    fn.argument("rank", "i32")
    fn.op(f"kvcache.{op} %collection, %{ids}, %rank : "
          f"{collection_type(config)}, {OFFSETS_TYPE}")
    return fn.text()


def send_pages(config, name="send_pages"):
    """`(collection..., %sequences: [n], %rank: i32)`: sends the pages of
    the listed sequences (every layer, K and V, per-page scales) to MPI
    rank `rank` (docs/Contract.md 3.6). Paged caches only."""
    return _transfer(config, name, "send_pages", "sequences")


def recv_pages(config, name="recv_pages"):
    """`(collection..., %dst_pages: [n], %rank: i32)`: receives the pages
    rank `rank` sends into pages `dst_pages` (docs/Contract.md 3.6)."""
    return _transfer(config, name, "recv_pages", "dst_pages")


def mpi_process():
    """`@mpi_init()`, `@mpi_rank() -> i32` (the rank in MPI's world
    communicator) and `@mpi_finalize()`: what a process that calls
    send_pages or recv_pages needs around them."""
    return """func.func @mpi_init() {
  mpi.init
  return
}
func.func @mpi_rank() -> i32 {
  %comm = mpi.comm_world : !mpi.comm
  %rank = mpi.comm_rank(%comm) : i32
  return %rank : i32
}
func.func @mpi_finalize() {
  mpi.finalize
  return
}
"""


def attention_ragged(config, name="attention_ragged", scale=None,
                     workspace=False, window=None, chunk=None, noncausal=False,
                     softcap=None, sinks=False, alibi=False, lse=False,
                     v_head_size=None, style=None, rotary_dims=None,
                     positions=False):
    """`(collection..., %layer, %q: [T, Hq, D], %row_offsets, %out: [T, Hq, D]
    [, %workspace: f32] [, %sinks: [Hq]] [, %alibi: [Hq]] [, %lse: [T, Hq]]
    [, %cos_sin: [P, R] f32] [, %positions: [T] i32])`: attention of each
    query row over its sequence (scale default 1/sqrt(head_size)), causal
    unless a clause says otherwise (docs/Contract.md 3.3):
    `window`/`chunk` (ints), `noncausal`, `softcap` (a float) as
    attributes; `sinks`, `alibi`, `lse` True add those f32 operands as
    arguments, in that order. With `style` ("interleaved" or "half"), the
    clause rope(%cos_sin) rotates q first, as store_ragged's rotates rows
    (`rotary_dims`, `positions` as there). With `v_head_size` (an mla
    config): mla_attention_ragged instead, out [T, Hq, v_head_size]."""
    fn = _Function(config, name)
    fn.collection()
    fn.argument("q", rows_type(config, config.query_heads))
    fn.argument("row_offsets", OFFSETS_TYPE)
    fn.argument("out", rows_type(config, config.query_heads, v_head_size))
    if workspace:
        fn.argument("workspace", WORKSPACE_TYPE)
    heads = config.query_heads
    for flag, argument, type_ in ((sinks, "sinks", f"memref<{heads}xf32>"),
                                  (alibi, "alibi", f"memref<{heads}xf32>"),
                                  (lse, "lse", f"memref<?x{heads}xf32>")):
        if flag:
            fn.argument(argument, type_)
    rope = (None if style is None
            else _rope_clause(fn, style, rotary_dims, positions))
    _attention(fn, scale, workspace,
               dict(window=window, chunk=chunk, noncausal=noncausal,
                    softcap=softcap, sinks=sinks, alibi=alibi, lse=lse,
                    rope=rope),
               v_head_size)
    return fn.text()


def mla_attention_ragged(config, v_head_size, name="mla_attention_ragged",
                         **options):
    """`(collection..., %layer, %q: [T, Hq, D], %row_offsets, %out: [T, Hq,
    V] [, %workspace] [, %sinks] [, %alibi] [, %lse])`: absorbed MLA
    attention over the latent rows of an mla config's K cache, their first
    `v_head_size` elements the values (docs/Contract.md 4.7); the options
    are attention_ragged's."""
    return attention_ragged(config, name, v_head_size=v_head_size, **options)


def merge_states(config, name="merge_states", lse=True):
    """`(%out_a, %lse_a, %out_b, %lse_b, %out [, %lse])`, outs [T, Hq, D] of
    config.rows_element, lses [T, Hq] f32: kvcache.merge_states of two
    partial attention results (docs/Contract.md 3.3); pass out_a (lse_a)
    again as out (lse) to merge in place."""
    fn = _Function(config, name)
    out_type = rows_type(config, config.query_heads)
    lse_type = f"memref<?x{config.query_heads}xf32>"
    names = [("out_a", out_type), ("lse_a", lse_type), ("out_b", out_type),
             ("lse_b", lse_type), ("out", out_type)] + (
                 [("lse", lse_type)] if lse else [])
    for argument, type_ in names:
        fn.argument(argument, type_)
    fn.op(f"kvcache.merge_states {', '.join('%' + n for n, _ in names)} : "
          f"{', '.join(t for _, t in names)}")
    return fn.text()


def rope_ragged(config, name="rope_ragged", rotary_dims=None,
                style="interleaved", positions=False, in_place=False):
    """`(collection..., %layer, %q: [T, Hq, D], %row_offsets, %cos_sin:
    [P, R] f32 [, %q_out: [T, Hq, D]] [, %positions: [T] i32])`: rotary
    embedding (docs/Contract.md 3.3) of q's rows into q_out (into q itself
    with `in_place`) and, in place, of the layer's keys the step stored;
    the last `rotary_dims` (default head_size) elements of each head, pairs
    `style` "interleaved" or "half", at cache_length + row index or at
    `positions` (True: an argument)."""
    rotary_dims = config.head_size if rotary_dims is None else int(rotary_dims)
    fn = _Function(config, name)
    fn.collection()
    q_type = rows_type(config, config.query_heads)
    table_type = f"memref<?x{rotary_dims}xf32>"
    q = fn.argument("q", q_type)
    fn.argument("row_offsets", OFFSETS_TYPE)
    fn.argument("cos_sin", table_type)
    q_out = q if in_place else fn.argument("q_out", q_type)
    clause, types = "", ""
    if positions:
        clause = f" positions({fn.argument('positions', OFFSETS_TYPE)})"
        types = f", {OFFSETS_TYPE}"
    fn.op(f"kvcache.rope_ragged %q, {fn.layer_cache('key')}, %row_offsets, "
          f"%cos_sin, {q_out}{clause} {{rotary_dims = {rotary_dims} : i64, "
          f"style = \"{style}\"}} : {q_type}, {cache_type(config)}, "
          f"{OFFSETS_TYPE}, {table_type}, {q_type}{types}")
    return fn.text()


def decode_step(config, name="decode_step", scale=None, workspace=False):
    """One layer of one decode (or prefill) step.

    Standard caches: `(collection..., %layer, %q: [T, Hq, D], %new_keys,
    %new_values: [T, H, D], %row_offsets, %out: [T, Hq, D] [, %workspace])`:
    store the step's K and V rows, then attend.

    mla caches (no attention op for them): `(collection..., %layer,
    %new_keys: [T, H, D], %row_offsets, %context: [C, H, D], %ctx_offsets)`:
    store the step's latent rows, then gather each sequence's whole context
    (what an MLA attention kernel reads).
    """
    fn = _Function(config, name)
    fn.collection()
    if config.mla:
        fn.argument("new_keys", rows_type(config))
        fn.argument("row_offsets", OFFSETS_TYPE)
        fn.argument("context", rows_type(config))
        fn.argument("ctx_offsets", OFFSETS_TYPE)
        _store(fn, "key", "%new_keys")
        fn.op(f"kvcache.gather_ragged %key_cache, %context, %ctx_offsets : "
              f"{cache_type(config)}, {rows_type(config)}, {OFFSETS_TYPE}")
        return fn.text()
    q_type = rows_type(config, config.query_heads)
    fn.argument("q", q_type)
    fn.argument("new_keys", rows_type(config))
    fn.argument("new_values", rows_type(config))
    fn.argument("row_offsets", OFFSETS_TYPE)
    fn.argument("out", q_type)
    if workspace:
        fn.argument("workspace", WORKSPACE_TYPE)
    _store(fn, "key", "%new_keys")
    _store(fn, "value", "%new_values")
    _attention(fn, scale, workspace)
    return fn.text()


def module(*functions):
    """One module holding the given functions (texts from the builders)."""
    return "\n".join(functions)


def _with_attention(config):
    return config.has_attention and config.rows_element in FLOAT_TYPES


def kernels(config, scale=None):
    """A module with a function per kernel op that `config` allows:
    store_ragged (key, and value unless mla), gather_ragged, copy_pages
    (unless continuous) and, unless mla, raw storage or a quantized cache
    with rows of codes, attention_ragged without and with a workspace. The
    function names are the keys of the result of `kernel_names(config)`."""
    functions = [store_ragged(config, "store_keys", "key"),
                 gather_ragged(config, "gather_keys", "key")]
    if config.has_pages:
        functions.append(copy_pages(config, "copy_pages"))
    if not config.mla:
        functions += [store_ragged(config, "store_values", "value"),
                      gather_ragged(config, "gather_values", "value")]
    if _with_attention(config):
        functions += [attention_ragged(config, "attention", scale),
                      attention_ragged(config, "attention_split", scale,
                                       workspace=True)]
    return module(*functions)


def kernel_names(config):
    """{function of `kernels(config)`: the GPU kernels kvcache-to-ptx makes
    of it} (docs/KernelABI.md: `<function>_<op>`)."""
    names = {"store_keys": ["store_keys_store_ragged"],
             "gather_keys": ["gather_keys_gather_ragged"]}
    if config.has_pages:
        names["copy_pages"] = ["copy_pages_copy_pages"]
    if not config.mla:
        names.update({
            "store_values": ["store_values_store_ragged"],
            "gather_values": ["gather_values_gather_ragged"]})
    if _with_attention(config):
        tiles = _has_query_tiles(config)
        names.update({
            "attention": ["attention_attention_ragged"] +
                         (["attention_attention_tiles"] if tiles else []),
            "attention_split": ["attention_split_attention_ragged"] +
                               (["attention_split_attention_tiles"] if tiles else []) +
                               ["attention_split_attention_merge"]})
    return names


def _has_query_tiles(config):
    """Whether attention over `config` has a query-tile kernel on sm_80 and
    newer (docs/KernelABI.md, "Query tiles"): f16/bf16 mma operands (the
    cache's, or q's over a quantized cache with scale groups of 16 or more
    elements), head_size 64, 128 or 256, and a tile of two rows or more."""
    mma = config.rows_element if config.is_quantized else config.dtype
    group = config.scale_group or config.head_size
    if mma not in ("f16", "bf16") or config.head_size not in (64, 128, 256):
        return False
    if config.is_quantized and group % 16:
        return False
    return (64 if config.head_size > 128 else 128) // config.group_size >= 2
