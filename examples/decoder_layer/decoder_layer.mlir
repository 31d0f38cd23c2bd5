// A Llama-style decoder layer on tensors: RMSNorm, q/k/v projections,
// rotary embedding, the step's K and V rows stored into a paged cache,
// paged attention over each sequence's whole context (GQA: 4 query heads
// per KV head), output projection, residual, RMSNorm, SwiGLU MLP, residual.
// bf16 activations, f32 accumulation; weights, the rotary tables and the
// cache are arguments. run.py instantiates it for other sizes by rewriting
// the aliases and `scale` below (the defaults: 2 KV heads of 32, 8 query
// heads, pages of 16 tokens, any hidden and MLP sizes).
//
// The collection is built from memref arguments; the rest is on tensors,
// which the pipelines bufferize first (docs/Contract.md 3.5): @decoder_layer
// writes `out` in place and returns nothing once lowered.
//
//   kvcache-opt examples/decoder_layer/decoder_layer.mlir -kvcache-to-cpu

!blocks = memref<?x2x?x16x2x32xbf16, strided<[?, ?, ?, 64, 32, 1], offset: ?>>
!collection = !kvcache.paged_collection<bf16, num_heads = 2, head_size = 32, page_size = 16>
!cache = !kvcache.paged_cache<bf16, num_heads = 2, head_size = 32, page_size = 16>
!q_heads = tensor<?x8x32xbf16>
!kv_heads = tensor<?x2x32xbf16>
!attn_rows = tensor<?x256xbf16>

#rows = affine_map<(t, k) -> (t, k)>
#row = affine_map<(t, k) -> (t)>
#column = affine_map<(t, k) -> (k)>
#heads = affine_map<(t, h, d) -> (t, h, d)>

// x @ w with f32 accumulation: [T, K] x [K, N] -> [T, N].
func.func private @project(%x: tensor<?x?xbf16>, %w: tensor<?x?xbf16>)
    -> tensor<?x?xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f32
  %t = tensor.dim %x, %c0 : tensor<?x?xbf16>
  %n = tensor.dim %w, %c1 : tensor<?x?xbf16>
  %init = tensor.empty(%t, %n) : tensor<?x?xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%init : tensor<?x?xf32>) -> tensor<?x?xf32>
  %y = linalg.matmul ins(%x, %w : tensor<?x?xbf16>, tensor<?x?xbf16>)
                     outs(%acc : tensor<?x?xf32>) -> tensor<?x?xf32>
  return %y : tensor<?x?xf32>
}

// RMSNorm of each row, in f32: bf16(x / sqrt(mean(x^2) + 1e-5) * w).
func.func private @rms_norm(%x: tensor<?x?xbf16>, %w: tensor<?xbf16>)
    -> tensor<?x?xbf16> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f32
  %eps = arith.constant 1.0e-5 : f32
  %t = tensor.dim %x, %c0 : tensor<?x?xbf16>
  %k = tensor.dim %x, %c1 : tensor<?x?xbf16>
  %k_i = arith.index_cast %k : index to i64
  %k_f = arith.uitofp %k_i : i64 to f32
  %sums_init = tensor.empty(%t) : tensor<?xf32>
  %zeros = linalg.fill ins(%zero : f32) outs(%sums_init : tensor<?xf32>) -> tensor<?xf32>
  %sums = linalg.generic {indexing_maps = [#rows, #row],
                          iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<?x?xbf16>) outs(%zeros : tensor<?xf32>) {
  ^bb0(%v: bf16, %sum: f32):
    %f = arith.extf %v : bf16 to f32
    %square = arith.mulf %f, %f : f32
    %next = arith.addf %sum, %square : f32
    linalg.yield %next : f32
  } -> tensor<?xf32>
  %init = tensor.empty(%t, %k) : tensor<?x?xbf16>
  %y = linalg.generic {indexing_maps = [#rows, #row, #column, #rows],
                       iterator_types = ["parallel", "parallel"]}
      ins(%x, %sums, %w : tensor<?x?xbf16>, tensor<?xf32>, tensor<?xbf16>)
      outs(%init : tensor<?x?xbf16>) {
  ^bb0(%v: bf16, %sum: f32, %g: bf16, %unused: bf16):
    %mean = arith.divf %sum, %k_f : f32
    %shifted = arith.addf %mean, %eps : f32
    %root = math.sqrt %shifted : f32
    %f = arith.extf %v : bf16 to f32
    %normed = arith.divf %f, %root : f32
    %gain = arith.extf %g : bf16 to f32
    %scaled = arith.mulf %normed, %gain : f32
    %rounded = arith.truncf %scaled : f32 to bf16
    linalg.yield %rounded : bf16
  } -> tensor<?x?xbf16>
  return %y : tensor<?x?xbf16>
}

// The projected rows `acc` [T, H * D] (f32, rounded to bf16 first) as heads
// [T, H, D] (the shape of `init`), each head rotated by its row's position
// (rotate-half pairs (i, i + D/2); `cos`, `sin`: [positions, D/2]).
func.func private @rope(%acc: tensor<?x?xf32>, %positions: tensor<?xi32>,
                        %cos: tensor<?x?xf32>, %sin: tensor<?x?xf32>,
                        %init: tensor<?x?x?xbf16>) -> tensor<?x?x?xbf16> {
  %c2 = arith.constant 2 : index
  %d = tensor.dim %init, %c2 : tensor<?x?x?xbf16>
  %half = arith.divui %d, %c2 : index
  %y = linalg.generic {indexing_maps = [#heads],
                       iterator_types = ["parallel", "parallel", "parallel"]}
      outs(%init : tensor<?x?x?xbf16>) {
  ^bb0(%unused: bf16):
    %t = linalg.index 0 : index
    %h = linalg.index 1 : index
    %i = linalg.index 2 : index
    %base = arith.muli %h, %d : index
    %column = arith.addi %base, %i : index
    %low = arith.cmpi ult, %i, %half : index
    %up = arith.addi %column, %half : index
    %down = arith.subi %column, %half : index
    %partner = arith.select %low, %up, %down : index
    %i_high = arith.subi %i, %half : index
    %pair = arith.select %low, %i, %i_high : index
    %p_i32 = tensor.extract %positions[%t] : tensor<?xi32>
    %p = arith.index_cast %p_i32 : i32 to index
    %c = tensor.extract %cos[%p, %pair] : tensor<?x?xf32>
    %s = tensor.extract %sin[%p, %pair] : tensor<?x?xf32>
    %x_acc = tensor.extract %acc[%t, %column] : tensor<?x?xf32>
    %x_bf16 = arith.truncf %x_acc : f32 to bf16
    %x = arith.extf %x_bf16 : bf16 to f32
    %y_acc = tensor.extract %acc[%t, %partner] : tensor<?x?xf32>
    %y_bf16 = arith.truncf %y_acc : f32 to bf16
    %other = arith.extf %y_bf16 : bf16 to f32
    // rotate_half(x) = (-x[D/2:], x[:D/2])
    %minus_s = arith.negf %s : f32
    %signed_s = arith.select %low, %minus_s, %s : f32
    %xc = arith.mulf %x, %c : f32
    %os = arith.mulf %other, %signed_s : f32
    %r = arith.addf %xc, %os : f32
    %rounded = arith.truncf %r : f32 to bf16
    linalg.yield %rounded : bf16
  } -> tensor<?x?x?xbf16>
  return %y : tensor<?x?x?xbf16>
}

// The projected rows `acc` [T, H * D] as bf16 heads [T, H, D] (`init`).
func.func private @split_heads(%acc: tensor<?x?xf32>, %init: tensor<?x?x?xbf16>)
    -> tensor<?x?x?xbf16> {
  %c2 = arith.constant 2 : index
  %d = tensor.dim %init, %c2 : tensor<?x?x?xbf16>
  %y = linalg.generic {indexing_maps = [#heads],
                       iterator_types = ["parallel", "parallel", "parallel"]}
      outs(%init : tensor<?x?x?xbf16>) {
  ^bb0(%unused: bf16):
    %t = linalg.index 0 : index
    %h = linalg.index 1 : index
    %i = linalg.index 2 : index
    %base = arith.muli %h, %d : index
    %column = arith.addi %base, %i : index
    %v = tensor.extract %acc[%t, %column] : tensor<?x?xf32>
    %rounded = arith.truncf %v : f32 to bf16
    linalg.yield %rounded : bf16
  } -> tensor<?x?x?xbf16>
  return %y : tensor<?x?x?xbf16>
}

// bf16(x + bf16(acc)) into `init`: a residual connection.
func.func private @residual(%x: tensor<?x?xbf16>, %acc: tensor<?x?xf32>,
                            %init: tensor<?x?xbf16>) -> tensor<?x?xbf16> {
  %y = linalg.generic {indexing_maps = [#rows, #rows, #rows],
                       iterator_types = ["parallel", "parallel"]}
      ins(%x, %acc : tensor<?x?xbf16>, tensor<?x?xf32>)
      outs(%init : tensor<?x?xbf16>) {
  ^bb0(%v: bf16, %a: f32, %unused: bf16):
    %a_bf16 = arith.truncf %a : f32 to bf16
    %a_f = arith.extf %a_bf16 : bf16 to f32
    %v_f = arith.extf %v : bf16 to f32
    %sum = arith.addf %v_f, %a_f : f32
    %rounded = arith.truncf %sum : f32 to bf16
    linalg.yield %rounded : bf16
  } -> tensor<?x?xbf16>
  return %y : tensor<?x?xbf16>
}

// SwiGLU: bf16(silu(g) * u) of the rounded projections g and u.
func.func private @swiglu(%gate: tensor<?x?xf32>, %up: tensor<?x?xf32>)
    -> tensor<?x?xbf16> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %one = arith.constant 1.0 : f32
  %t = tensor.dim %gate, %c0 : tensor<?x?xf32>
  %f = tensor.dim %gate, %c1 : tensor<?x?xf32>
  %init = tensor.empty(%t, %f) : tensor<?x?xbf16>
  %y = linalg.generic {indexing_maps = [#rows, #rows, #rows],
                       iterator_types = ["parallel", "parallel"]}
      ins(%gate, %up : tensor<?x?xf32>, tensor<?x?xf32>)
      outs(%init : tensor<?x?xbf16>) {
  ^bb0(%g_acc: f32, %u_acc: f32, %unused: bf16):
    %g_bf16 = arith.truncf %g_acc : f32 to bf16
    %g = arith.extf %g_bf16 : bf16 to f32
    %u_bf16 = arith.truncf %u_acc : f32 to bf16
    %u = arith.extf %u_bf16 : bf16 to f32
    %minus_g = arith.negf %g : f32
    %e = math.exp %minus_g : f32
    %denominator = arith.addf %one, %e : f32
    %silu = arith.divf %g, %denominator : f32
    %product = arith.mulf %silu, %u : f32
    %rounded = arith.truncf %product : f32 to bf16
    linalg.yield %rounded : bf16
  } -> tensor<?x?xbf16>
  return %y : tensor<?x?xbf16>
}

// One layer over a step's rows `x` [T, hidden] (row_offsets: each
// sequence's rows; positions: each row's position in its sequence) into
// `out` [T, hidden]. Weights [in, out]: wq [hidden, 8 * 32], wk and wv
// [hidden, 2 * 32], wo [8 * 32, hidden], w_gate and w_up [hidden, mlp],
// w_down [mlp, hidden].
func.func @decoder_layer(
    %blocks: !blocks, %cache_lengths: memref<?xi32>, %lookup_table: memref<?x?xi32>,
    %max_seq_length: i32, %max_cache_length: i32, %layer: index,
    %x: tensor<?x?xbf16>, %row_offsets: tensor<?xi32>, %positions: tensor<?xi32>,
    %cos: tensor<?x?xf32>, %sin: tensor<?x?xf32>,
    %attn_norm: tensor<?xbf16>, %wq: tensor<?x?xbf16>, %wk: tensor<?x?xbf16>,
    %wv: tensor<?x?xbf16>, %wo: tensor<?x?xbf16>, %mlp_norm: tensor<?xbf16>,
    %w_gate: tensor<?x?xbf16>, %w_up: tensor<?x?xbf16>, %w_down: tensor<?x?xbf16>,
    %out: tensor<?x?xbf16>) -> tensor<?x?xbf16> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %collection = kvcache.paged_collection %blocks, %cache_lengths, %lookup_table,
      %max_seq_length, %max_cache_length
      : !blocks, memref<?xi32>, memref<?x?xi32> -> !collection
  %key_cache = kvcache.get_key_cache %collection[%layer] : !collection
  %value_cache = kvcache.get_value_cache %collection[%layer] : !collection
  %t = tensor.dim %x, %c0 : tensor<?x?xbf16>
  %hidden = tensor.dim %x, %c1 : tensor<?x?xbf16>

  // Attention block.
  %normed = func.call @rms_norm(%x, %attn_norm)
      : (tensor<?x?xbf16>, tensor<?xbf16>) -> tensor<?x?xbf16>
  %q_acc = func.call @project(%normed, %wq)
      : (tensor<?x?xbf16>, tensor<?x?xbf16>) -> tensor<?x?xf32>
  %k_acc = func.call @project(%normed, %wk)
      : (tensor<?x?xbf16>, tensor<?x?xbf16>) -> tensor<?x?xf32>
  %v_acc = func.call @project(%normed, %wv)
      : (tensor<?x?xbf16>, tensor<?x?xbf16>) -> tensor<?x?xf32>
  %q_empty = tensor.empty(%t) : !q_heads
  %q_init = tensor.cast %q_empty : !q_heads to tensor<?x?x?xbf16>
  %q_rotated = func.call @rope(%q_acc, %positions, %cos, %sin, %q_init)
      : (tensor<?x?xf32>, tensor<?xi32>, tensor<?x?xf32>, tensor<?x?xf32>,
         tensor<?x?x?xbf16>) -> tensor<?x?x?xbf16>
  %q = tensor.cast %q_rotated : tensor<?x?x?xbf16> to !q_heads
  %k_empty = tensor.empty(%t) : !kv_heads
  %k_init = tensor.cast %k_empty : !kv_heads to tensor<?x?x?xbf16>
  %k_rotated = func.call @rope(%k_acc, %positions, %cos, %sin, %k_init)
      : (tensor<?x?xf32>, tensor<?xi32>, tensor<?x?xf32>, tensor<?x?xf32>,
         tensor<?x?x?xbf16>) -> tensor<?x?x?xbf16>
  %k = tensor.cast %k_rotated : tensor<?x?x?xbf16> to !kv_heads
  %v_empty = tensor.empty(%t) : !kv_heads
  %v_init = tensor.cast %v_empty : !kv_heads to tensor<?x?x?xbf16>
  %v_split = func.call @split_heads(%v_acc, %v_init)
      : (tensor<?x?xf32>, tensor<?x?x?xbf16>) -> tensor<?x?x?xbf16>
  %v = tensor.cast %v_split : tensor<?x?x?xbf16> to !kv_heads
  kvcache.store_ragged %key_cache, %k, %row_offsets
      : !cache, !kv_heads, tensor<?xi32>
  kvcache.store_ragged %value_cache, %v, %row_offsets
      : !cache, !kv_heads, tensor<?xi32>
  %attn_init = tensor.empty(%t) : !q_heads
  %attn = kvcache.attention_ragged %q, %key_cache, %value_cache, %row_offsets,
      %attn_init {scale = 0.176776695 : f32}
      : !q_heads, !cache, !cache, tensor<?xi32>, !q_heads -> !q_heads
  %attn_static = tensor.collapse_shape %attn [[0], [1, 2]] : !q_heads into !attn_rows
  %attn_rows = tensor.cast %attn_static : !attn_rows to tensor<?x?xbf16>
  %o_acc = func.call @project(%attn_rows, %wo)
      : (tensor<?x?xbf16>, tensor<?x?xbf16>) -> tensor<?x?xf32>
  %h_init = tensor.empty(%t, %hidden) : tensor<?x?xbf16>
  %h = func.call @residual(%x, %o_acc, %h_init)
      : (tensor<?x?xbf16>, tensor<?x?xf32>, tensor<?x?xbf16>) -> tensor<?x?xbf16>

  // MLP block.
  %h_normed = func.call @rms_norm(%h, %mlp_norm)
      : (tensor<?x?xbf16>, tensor<?xbf16>) -> tensor<?x?xbf16>
  %gate = func.call @project(%h_normed, %w_gate)
      : (tensor<?x?xbf16>, tensor<?x?xbf16>) -> tensor<?x?xf32>
  %up = func.call @project(%h_normed, %w_up)
      : (tensor<?x?xbf16>, tensor<?x?xbf16>) -> tensor<?x?xf32>
  %act = func.call @swiglu(%gate, %up)
      : (tensor<?x?xf32>, tensor<?x?xf32>) -> tensor<?x?xbf16>
  %down = func.call @project(%act, %w_down)
      : (tensor<?x?xbf16>, tensor<?x?xbf16>) -> tensor<?x?xf32>
  %y = func.call @residual(%h, %down, %out)
      : (tensor<?x?xbf16>, tensor<?x?xf32>, tensor<?x?xbf16>) -> tensor<?x?xbf16>
  return %y : tensor<?x?xbf16>
}
