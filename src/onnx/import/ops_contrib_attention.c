/* ONNX Runtime's attention ops (com.microsoft, docs/ContribOperators.md):
 *
 *   Attention          input @ weights (+ bias) split into Q, K, V
 *                      (qkv_hidden_sizes, or thirds); past (2, B, N, P, H)
 *                      in front of K / V; present = stack(K, V).
 *   MultiHeadAttention query (B, S, D) with key / value (B, L, D), BNSH
 *                      key / value (B, N, L, H), packed QKV (B, S, N, 3, H)
 *                      or packed KV (B, L, N, 2, H); bias (3 D); past_key /
 *                      past_value in front; present_key / present_value.
 *   GroupQueryAttention query / key / value (or packed QKV), kv_num_heads
 *                      heads of K / V repeated for the query heads; causal
 *                      (default), local_window_size, softcap; do_rotary
 *                      with cos_cache / sin_cache at position_ids, or at
 *                      positions P .. P+S-1;
 *                      past_key / past_value (B, kv_heads, P, H) in front
 *                      (a dense cache: every row's seqlens_k is P + S - 1),
 *                      keys after seqlens_k[b] masked.
 *   RotaryEmbedding    (input, position_ids, cos_cache, sin_cache): 3-D
 *                      (B, S, N * H) or BNSH input, position_ids (B, S) or
 *                      (1) = offset of position 0; halves or interleaved.
 *
 * Masks follow the spec: Attention / MultiHeadAttention add
 * mask_filter_value (-10000) where mask_index / key_padding_mask masks a key
 * ((B) lengths, (2 B) ends and starts, (B, T) or (B, S, T) 0 / 1) and where
 * unidirectional hides a later key; GroupQueryAttention masks with -inf.
 * Scores are softmax(Q K^T * scale + bias) V: from iOS18 with the default
 * scale (1 / sqrt(head_size)) and no softcap, MIL's
 * scaled_dot_product_attention, as coremltools' torch frontend maps
 * F.scaled_dot_product_attention; otherwise matmul, mul, add, softmax,
 * matmul as it decomposes it for earlier targets. */
#include <math.h>
#include <string.h>

#include "onnx/import/import_internal.h"

static int64_t dim(const mil_var *v, int32_t i) { return v->type->dims[i].size; }

/* x[..., a:b:step] on the last axis */
static mil_var *last_slice(onnx_ctx *c, mil_var *x, int64_t a, int64_t b, int64_t step) {
  int32_t r = onnx_rank(x);
  if (r < 1 || r > 8) return NULL;
  int64_t be[8] = {0}, en[8] = {0}, st[8] = {1, 1, 1, 1, 1, 1, 1, 1};
  mil_value *m = mil_value_new_tensor(c->p, MIL_DT_BOOL, 1, (int64_t[]){r}, false, NULL);
  if (!m) return NULL;
  for (int32_t i = 0; i < r - 1; i++) mil_value_set_i64(m, i, 1);
  be[r - 1] = a;
  en[r - 1] = b;
  st[r - 1] = step;
  return ONNX_OP(c, "slice_by_index", A("x", x), K("begin", onnx_i32s(c, r, be)), K("end", onnx_i32s(c, r, en)),
                 K("stride", onnx_i32s(c, r, st)), K("begin_mask", m), K("end_mask", m));
}

/* (B, S, N * H) -> (B, N, S, H) */
static mil_var *split_heads(onnx_ctx *c, mil_var *x, int64_t N) {
  if (!x || onnx_rank(x) != 3 || !mil_type_is_static(x->type) || N <= 0 || dim(x, 2) % N) return NULL;
  mil_var *r = ONNX_OP(c, "reshape", A("x", x), K("shape", onnx_i32s(c, 4, (int64_t[]){dim(x, 0), dim(x, 1), N, dim(x, 2) / N})));
  return ONNX_OP(c, "transpose", A("x", r), K("perm", onnx_i32s(c, 4, (int64_t[]){0, 2, 1, 3})));
}

/* (B, N, S, H) -> (B, S, N * H) */
static mil_var *merge_heads(onnx_ctx *c, mil_var *y) {
  if (!y) return NULL;
  int64_t B = dim(y, 0), N = dim(y, 1), S = dim(y, 2), H = dim(y, 3);
  y = ONNX_OP(c, "transpose", A("x", y), K("perm", onnx_i32s(c, 4, (int64_t[]){0, 2, 1, 3})));
  return ONNX_OP(c, "reshape", A("x", y), K("shape", onnx_i32s(c, 3, (int64_t[]){B, S, N * H})));
}

/* packed (B, S, N, k, H) -> its part i as (B, N, S, H) */
static mil_var *unpack(onnx_ctx *c, mil_var *x, int64_t i) {
  int64_t B = dim(x, 0), S = dim(x, 1), N = dim(x, 2), H = dim(x, 4);
  mil_var *p = ONNX_OP(c, "slice_by_index", A("x", x), K("begin", onnx_i32s(c, 5, (int64_t[]){0, 0, 0, i, 0})),
                       K("end", onnx_i32s(c, 5, (int64_t[]){B, S, N, i + 1, H})));
  p = ONNX_OP(c, "reshape", A("x", p), K("shape", onnx_i32s(c, 4, (int64_t[]){B, S, N, H})));
  return ONNX_OP(c, "transpose", A("x", p), K("perm", onnx_i32s(c, 4, (int64_t[]){0, 2, 1, 3})));
}

/* (B, kvh, T, H) with each head repeated g times */
static mil_var *repeat_heads(onnx_ctx *c, mil_var *x, int64_t g) {
  if (g == 1 || !x) return x;
  int64_t B = dim(x, 0), N = dim(x, 1), T = dim(x, 2), H = dim(x, 3);
  mil_var *r = ONNX_OP(c, "expand_dims", A("x", x), K("axes", onnx_i32s(c, 1, (int64_t[]){2})));
  r = ONNX_OP(c, "tile", A("x", r), K("reps", onnx_i32s(c, 5, (int64_t[]){1, 1, g, 1, 1})));
  return ONNX_OP(c, "reshape", A("x", r), K("shape", onnx_i32s(c, 4, (int64_t[]){B, N * g, T, H})));
}

static mil_var *add_bias(onnx_ctx *c, mil_var *a, mil_var *b) {
  if (!a) return b;
  if (!b) return a;
  return ONNX_OP(c, "add", A("x", a), A("y", b));
}

/* The (S, T) causal bias: query i (at position P + i) sees keys j with
 * P + i - window < j <= P + i, its last `window` keys (GroupQueryAttention's
 * local_window_size, as ONNX Runtime's kernel counts it; window <= 0: all). */
static mil_var *causal_bias(onnx_ctx *c, mil_dtype dt, int64_t S, int64_t T, int64_t window, double fill) {
  mil_value *cm = mil_value_new_tensor(c->p, dt, 2, (int64_t[]){S, T}, false, NULL);
  if (!cm) return NULL;
  int64_t P = T - S;
  for (int64_t i = 0; i < S; i++)
    for (int64_t j = 0; j < T; j++) {
      bool vis = j <= P + i && (window <= 0 || j > P + i - window);
      mil_value_set_f64(cm, i * T + j, vis ? 0 : fill);
    }
  return onnx_const(c, cm);
}

/* bool vis (B, T) or (B, S, T) -> additive (B, 1, 1, T) / (B, 1, S, T) */
static mil_var *vis_bias(onnx_ctx *c, mil_var *vis, mil_dtype dt, double fill) {
  if (!vis || !mil_type_is_static(vis->type)) return NULL;
  /* select's type is the broadcast of a and b: a is zeros of vis's shape */
  int64_t shp[3];
  for (int32_t i = 0; i < onnx_rank(vis); i++) shp[i] = dim(vis, i);
  mil_value *z = mil_value_new_tensor(c->p, dt, onnx_rank(vis), shp, false, NULL);
  if (!z) return NULL;
  mil_var *b = ONNX_OP(c, "select", A("cond", vis), A("a", onnx_const(c, z)), K("b", onnx_fscalar(c, dt, fill)));
  if (onnx_rank(vis) == 2) return ONNX_OP(c, "expand_dims", A("x", b), K("axes", onnx_i32s(c, 2, (int64_t[]){1, 2})));
  return ONNX_OP(c, "expand_dims", A("x", b), K("axes", onnx_i32s(c, 1, (int64_t[]){1})));
}

/* keys 0 .. T-1 as a (T) int32 var */
static mil_var *key_positions(onnx_ctx *c, int64_t T) {
  return ONNX_OP(c, "range_1d", K("start", onnx_i32(c, 0)), K("end", onnx_i32(c, T)), K("step", onnx_i32(c, 1)));
}

/* An Attention / MultiHeadAttention mask input as an additive bias, NULL
 * with an error for a format it cannot take. */
static mil_var *mask_bias(onnx_ctx *c, mil_var *m, const char *what, int64_t B, int64_t S, int64_t T, mil_dtype dt, double fill) {
  int32_t r = onnx_rank(m);
  if (r < 1 || r > 3 || !mil_type_is_static(m->type)) {
    onnx_fail(c, MIL_ERR_UNSUPPORTED, "%s of rank %d: supported are static (B), (2 B), (B, T) and (B, S, T) masks", what, r);
    return NULL;
  }
  m = onnx_cast(c, m, MIL_DT_INT32);
  if (r == 1 && (dim(m, 0) == B || dim(m, 0) == 2 * B)) {
    mil_var *pos = key_positions(c, T);
    mil_var *end = m, *vis;
    if (dim(m, 0) == 2 * B) end = ONNX_OP(c, "slice_by_index", A("x", m), K("begin", onnx_i32s(c, 1, (int64_t[]){0})), K("end", onnx_i32s(c, 1, (int64_t[]){B})));
    vis = ONNX_OP(c, "less", A("x", pos), A("y", ONNX_OP(c, "expand_dims", A("x", end), K("axes", onnx_i32s(c, 1, (int64_t[]){1})))));
    if (dim(m, 0) == 2 * B) {
      mil_var *start = ONNX_OP(c, "slice_by_index", A("x", m), K("begin", onnx_i32s(c, 1, (int64_t[]){B})), K("end", onnx_i32s(c, 1, (int64_t[]){2 * B})));
      start = ONNX_OP(c, "expand_dims", A("x", start), K("axes", onnx_i32s(c, 1, (int64_t[]){1})));
      vis = ONNX_OP(c, "logical_and", A("x", vis), A("y", ONNX_OP(c, "greater_equal", A("x", pos), A("y", start))));
    }
    return vis_bias(c, vis, dt, fill);
  }
  if ((r == 2 && dim(m, 0) == B && dim(m, 1) == T) || (r == 3 && dim(m, 0) == B && dim(m, 1) == S && dim(m, 2) == T))
    return vis_bias(c, ONNX_OP(c, "greater", A("x", m), K("y", onnx_i32(c, 0))), dt, fill);
  onnx_fail(c, MIL_ERR_UNSUPPORTED,
            "%s: supported shapes are (%lld), (%lld), (%lld, %lld) and (%lld, %lld, %lld); found rank %d", what,
            (long long)B, (long long)(2 * B), (long long)B, (long long)T, (long long)B, (long long)S, (long long)T, r);
  return NULL;
}

static double attr_scale(const onnx_node *n) {
  const Onnx__AttributeProto *a = onnx_attr(n, "scale");
  return a && a->f != 0 ? a->f : -1;
}

/* Rotates BNSH x by cos / sin ((S, r/2) or (B, S, r/2)): halves of the
 * first r channels, or even / odd channels when interleaved. */
static mil_var *rotate(onnx_ctx *c, mil_var *x, mil_var *cosv, mil_var *sinv, int64_t rot, bool interleaved) {
  if (!x || !cosv || !sinv) return NULL;
  int64_t H = dim(x, 3);
  if (onnx_rank(cosv) == 3) {
    cosv = ONNX_OP(c, "expand_dims", A("x", cosv), K("axes", onnx_i32s(c, 1, (int64_t[]){1})));
    sinv = ONNX_OP(c, "expand_dims", A("x", sinv), K("axes", onnx_i32s(c, 1, (int64_t[]){1})));
  }
  mil_var *x1 = interleaved ? last_slice(c, x, 0, rot, 2) : last_slice(c, x, 0, rot / 2, 1);
  mil_var *x2 = interleaved ? last_slice(c, x, 1, rot, 2) : last_slice(c, x, rot / 2, rot, 1);
  mil_var *re = ONNX_OP(c, "sub", A("x", ONNX_OP(c, "mul", A("x", x1), A("y", cosv))), A("y", ONNX_OP(c, "mul", A("x", x2), A("y", sinv))));
  mil_var *im = ONNX_OP(c, "add", A("x", ONNX_OP(c, "mul", A("x", x2), A("y", cosv))), A("y", ONNX_OP(c, "mul", A("x", x1), A("y", sinv))));
  mil_var *r;
  if (interleaved) {
    r = ONNX_OP(c, "stack", AT("values", ((mil_var *[]){re, im}), 2), K("axis", onnx_i32(c, -1)));
    r = ONNX_OP(c, "reshape", A("x", r), K("shape", onnx_i32s(c, 4, (int64_t[]){dim(x, 0), dim(x, 1), dim(x, 2), rot})));
  } else
    r = ONNX_OP(c, "concat", AT("values", ((mil_var *[]){re, im}), 2), K("axis", onnx_i32(c, -1)));
  if (r && rot < H) r = ONNX_OP(c, "concat", AT("values", ((mil_var *[]){r, last_slice(c, x, rot, H, 1)}), 2), K("axis", onnx_i32(c, -1)));
  return r;
}

static mil_status conv_rotary(onnx_ctx *c, onnx_node *n) {
  mil_var *x = onnx_req(c, n, 0), *pos = onnx_req(c, n, 1), *cc = onnx_req(c, n, 2), *sc = onnx_req(c, n, 3);
  if (!x || !pos || !cc || !sc) return MIL_ERR_INVALID;
  int32_t rank = onnx_rank(x);
  if ((rank != 3 && rank != 4) || !mil_type_is_static(x->type))
    return ONNX_UNSUP(c, "input 0 (input) must be a static 3-D (batch, sequence, hidden) or 4-D (batch, heads, sequence, head_size) tensor");
  if (onnx_rank(cc) != 2 || !mil_type_is_static(cc->type)) return onnx_fail(c, MIL_ERR_INVALID, "input 2 (cos_cache) must be a static 2-D tensor");
  if (onnx_attr_i(n, "is_packed_batching", 0)) return ONNX_UNSUP(c, "is_packed_batching");
  int64_t N = onnx_attr_i(n, "num_heads", 0), rot = onnx_attr_i(n, "rotary_embedding_dim", 0), half = dim(cc, 1);
  mil_var *xx = x;
  if (rank == 3) {
    int64_t H = N > 0 ? dim(x, 2) / N : 2 * half;
    if (H <= 0 || dim(x, 2) % H) return onnx_fail(c, MIL_ERR_INVALID, "hidden size %lld is not a multiple of head size %lld", (long long)dim(x, 2), (long long)H);
    xx = split_heads(c, x, dim(x, 2) / H);
  }
  if (!xx) return MIL_ERR_TYPE;
  int64_t H = dim(xx, 3), S = dim(xx, 2);
  if (rot <= 0) rot = H;
  if (rot > H || rot % 2 || rot / 2 > half)
    return onnx_fail(c, MIL_ERR_INVALID, "rotary_embedding_dim %lld for head size %lld and a cos_cache of %lld columns", (long long)rot,
                     (long long)H, (long long)half);
  pos = onnx_cast(c, pos, MIL_DT_INT32);
  if (onnx_rank(pos) == 1 && dim(pos, 0) == 1) /* the offset of position 0 */
    pos = ONNX_OP(c, "add", A("x", key_positions(c, S)), A("y", pos));
  else if (onnx_rank(pos) != 2)
    return onnx_fail(c, MIL_ERR_INVALID, "input 1 (position_ids) must be (1) or (batch, sequence); found rank %d", onnx_rank(pos));
  mil_var *cosv = ONNX_OP(c, "gather", A("x", cc), A("indices", pos), K("axis", onnx_i32(c, 0)));
  mil_var *sinv = ONNX_OP(c, "gather", A("x", sc), A("indices", pos), K("axis", onnx_i32(c, 0)));
  if (cosv && half > rot / 2) {
    cosv = last_slice(c, cosv, 0, rot / 2, 1);
    sinv = last_slice(c, sinv, 0, rot / 2, 1);
  }
  mil_var *y = rotate(c, xx, cosv, sinv, rot, onnx_attr_i(n, "interleaved", 0) != 0);
  if (y && rank == 3) y = merge_heads(c, y);
  return onnx_set_out(c, n, 0, y);
}

/* past (2, B, N, P, H) -> part i (B, N, P, H) */
static mil_var *past_part(onnx_ctx *c, mil_var *past, int64_t i) {
  int64_t e[5] = {i + 1, dim(past, 1), dim(past, 2), dim(past, 3), dim(past, 4)};
  mil_var *p = ONNX_OP(c, "slice_by_index", A("x", past), K("begin", onnx_i32s(c, 5, (int64_t[]){i, 0, 0, 0, 0})), K("end", onnx_i32s(c, 5, e)));
  return ONNX_OP(c, "squeeze", A("x", p), K("axes", onnx_i32s(c, 1, (int64_t[]){0})));
}

/* Attention and MultiHeadAttention's common end: the additive bias of the
 * mask (`what` names its input in messages), of `unidirectional` and of the
 * attention_bias input ab, then attention over q (B, N, S, H), k, v
 * (B, N, T, H) and the heads merged into output 0. */
static mil_status mask_and_attend(onnx_ctx *c, onnx_node *n, mil_var *q, mil_var *k, mil_var *v, mil_var *mask,
                                  const char *what, mil_var *ab, mil_dtype dt, int64_t B, int64_t S) {
  double fill = onnx_attr_f(n, "mask_filter_value", -10000.0f);
  int64_t T = dim(k, 2);
  mil_var *bias = NULL;
  if (mask && !(bias = mask_bias(c, mask, what, B, S, T, dt, fill))) return MIL_ERR_UNSUPPORTED;
  if (onnx_attr_i(n, "unidirectional", 0)) {
    mil_var *cb = causal_bias(c, dt, S, T, -1, fill);
    if (!cb) return MIL_ERR_NOMEM;
    bias = add_bias(c, bias, cb);
  }
  bias = add_bias(c, bias, ab);
  return onnx_set_out(c, n, 0, merge_heads(c, onnx_attend(c, q, k, v, bias, attr_scale(n), 0)));
}

static mil_status conv_attention(onnx_ctx *c, onnx_node *n) {
  mil_var *x = onnx_req(c, n, 0), *w = onnx_req(c, n, 1), *b = onnx_in(n, 2), *mask = onnx_in(n, 3), *past = onnx_in(n, 4),
          *ab = onnx_in(n, 5);
  if (!x || !w) return MIL_ERR_INVALID;
  if (onnx_attr_i(n, "past_present_share_buffer", 0) || onnx_in(n, 6))
    return ONNX_UNSUP(c, "past_present_share_buffer / input 6 (past_sequence_length): a shared KV buffer");
  if (onnx_attr_i(n, "do_rotary", 0)) return ONNX_UNSUP(c, "do_rotary");
  if (onnx_rank(x) != 3 || !mil_type_is_static(x->type) || onnx_rank(w) != 2 || !mil_type_is_static(w->type))
    return ONNX_UNSUP(c, "needs a static 3-D input 0 (input) and 2-D input 1 (weights)");
  int64_t N = onnx_attr_i(n, "num_heads", 0), D3 = dim(w, 1), sz[3] = {D3 / 3, D3 / 3, D3 / 3};
  const int64_t *qs;
  if (onnx_attr_ints(n, "qkv_hidden_sizes", &qs) == 3) memcpy(sz, qs, sizeof sz);
  if (N <= 0 || sz[0] + sz[1] + sz[2] != D3 || sz[0] != sz[1] || sz[0] % N || sz[2] % N)
    return onnx_fail(c, MIL_ERR_INVALID, "num_heads %lld and qkv_hidden_sizes do not split weights of %lld columns", (long long)N, (long long)D3);
  mil_var *qkv = ONNX_OP(c, "matmul", A("x", x), A("y", w));
  if (b) qkv = ONNX_OP(c, "add", A("x", qkv), A("y", b));
  mil_var *q = split_heads(c, last_slice(c, qkv, 0, sz[0], 1), N);
  mil_var *k = split_heads(c, last_slice(c, qkv, sz[0], 2 * sz[0], 1), N);
  mil_var *v = split_heads(c, last_slice(c, qkv, 2 * sz[0], D3, 1), N);
  if (!q || !k || !v) return MIL_ERR_TYPE;
  if (past) {
    if (onnx_rank(past) != 5 || !mil_type_is_static(past->type)) return ONNX_UNSUP(c, "input 4 (past) must be a static (2, B, N, P, H) tensor");
    mil_var *pk = past_part(c, past, 0), *pv = past_part(c, past, 1);
    k = ONNX_OP(c, "concat", AT("values", ((mil_var *[]){pk, k}), 2), K("axis", onnx_i32(c, 2)));
    v = ONNX_OP(c, "concat", AT("values", ((mil_var *[]){pv, v}), 2), K("axis", onnx_i32(c, 2)));
    if (!k || !v) return MIL_ERR_TYPE;
  }
  if (onnx_out_used(n, 1)) {
    mil_status st = onnx_set_out(c, n, 1, ONNX_OP(c, "stack", AT("values", ((mil_var *[]){k, v}), 2), K("axis", onnx_i32(c, 0))));
    if (st != MIL_OK) return st;
  }
  return mask_and_attend(c, n, q, k, v, mask, "input 3 (mask_index)", ab, onnx_dtype(x), dim(x, 0), dim(x, 1));
}

static mil_status conv_mha(onnx_ctx *c, onnx_node *n) {
  mil_var *q = onnx_req(c, n, 0), *k = onnx_in(n, 1), *v = onnx_in(n, 2), *b = onnx_in(n, 3), *mask = onnx_in(n, 4), *ab = onnx_in(n, 5),
          *pk = onnx_in(n, 6), *pv = onnx_in(n, 7);
  if (!q) return MIL_ERR_INVALID;
  if (onnx_in(n, 8) || onnx_in(n, 9)) return ONNX_UNSUP(c, "input 8 (past_sequence_length) / 9 (cache_indirection): a shared KV buffer or beam search");
  if (onnx_out_used(n, 3)) return ONNX_UNSUP(c, "output 3 (qk)");
  if (!mil_type_is_static(q->type) || (k && !mil_type_is_static(k->type)) || (v && !mil_type_is_static(v->type)))
    return ONNX_UNSUP(c, "needs static query / key / value shapes");
  int64_t N = onnx_attr_i(n, "num_heads", 0);
  if (N <= 0) return onnx_fail(c, MIL_ERR_INVALID, "num_heads must be positive");
  int32_t rq = onnx_rank(q), rk = k ? onnx_rank(k) : 0;
  bool bnsh_kv = rk == 4;
  if (b && (rq == 5 || rk == 5 || bnsh_kv)) return ONNX_UNSUP(c, "input 3 (bias) with packed or BNSH key / value");
  if ((rq == 5 && (dim(q, 2) != N || dim(q, 3) != 3)) || (rk == 5 && (dim(k, 2) != N || dim(k, 3) != 2)))
    return onnx_fail(c, MIL_ERR_INVALID, "packed %s must be (B, L, %lld, %d, H)", rq == 5 ? "QKV input 0 (query)" : "KV input 1 (key)",
                     (long long)N, rq == 5 ? 3 : 2);
  if (rq == 5) { /* packed QKV */
    if (k || v) return onnx_fail(c, MIL_ERR_INVALID, "packed QKV query with a key or value");
    k = unpack(c, q, 1), v = unpack(c, q, 2), q = unpack(c, q, 0);
  } else {
    if (rq != 3 || !k) return ONNX_UNSUP(c, "input 0 (query) must be (B, S, D) with a key, or packed QKV (B, S, N, 3, H)");
    int64_t D = dim(q, 2);
    mil_var *bq = b ? last_slice(c, b, 0, D, 1) : NULL;
    if (bq) q = ONNX_OP(c, "add", A("x", q), A("y", bq));
    q = split_heads(c, q, N);
    if (rk == 5) { /* packed KV */
      if (v) return onnx_fail(c, MIL_ERR_INVALID, "packed KV key with a value");
      v = unpack(c, k, 1), k = unpack(c, k, 0);
    } else if (!bnsh_kv) {
      if (rk != 3 || !v || onnx_rank(v) != 3) return ONNX_UNSUP(c, "input 1 (key) / 2 (value) must be (B, L, D), (B, N, L, H) or packed KV");
      if (b) {
        int64_t Dk = dim(k, 2);
        k = ONNX_OP(c, "add", A("x", k), A("y", last_slice(c, b, D, D + Dk, 1)));
        v = ONNX_OP(c, "add", A("x", v), A("y", last_slice(c, b, D + Dk, D + Dk + dim(v, 2), 1)));
      }
      k = split_heads(c, k, N);
      v = split_heads(c, v, N);
    } else if (!v || onnx_rank(v) != 4)
      return onnx_fail(c, MIL_ERR_INVALID, "a 4-D key needs a 4-D value");
  }
  if (!q || !k || !v) return MIL_ERR_TYPE;
  if ((pk != NULL) != (pv != NULL)) return onnx_fail(c, MIL_ERR_INVALID, "input 6 (past_key) and 7 (past_value) go together");
  if (pk) {
    if (bnsh_kv) return ONNX_UNSUP(c, "input 6 (past_key) with a BNSH key");
    k = ONNX_OP(c, "concat", AT("values", ((mil_var *[]){pk, k}), 2), K("axis", onnx_i32(c, 2)));
    v = ONNX_OP(c, "concat", AT("values", ((mil_var *[]){pv, v}), 2), K("axis", onnx_i32(c, 2)));
    if (!k || !v) return MIL_ERR_TYPE;
  }
  mil_status st = MIL_OK;
  if (onnx_out_used(n, 1)) st = onnx_set_out(c, n, 1, k);
  if (st == MIL_OK && onnx_out_used(n, 2)) st = onnx_set_out(c, n, 2, v);
  if (st != MIL_OK) return st;
  return mask_and_attend(c, n, q, k, v, mask, "input 4 (key_padding_mask)", ab, onnx_dtype(q), dim(q, 0), dim(q, 2));
}

static mil_status conv_gqa(onnx_ctx *c, onnx_node *n) {
  mil_var *q = onnx_req(c, n, 0), *k = onnx_in(n, 1), *v = onnx_in(n, 2), *pk = onnx_in(n, 3), *pv = onnx_in(n, 4),
          *seqlens = onnx_in(n, 5), *total = onnx_in(n, 6), *cc = onnx_in(n, 7), *sc = onnx_in(n, 8), *ab = onnx_in(n, 10);
  if (!q) return MIL_ERR_INVALID;
  static const char *const refused[] = {NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
                                        "head_sink", "k_scale", "v_scale", "q_norm_weight", "k_norm_weight"};
  for (int32_t i = 11; i < n->n_in && i < 16; i++)
    if (onnx_in(n, i)) return ONNX_UNSUP(c, "input %d (%s)", i, refused[i]);
  if (onnx_attr_i(n, "smooth_softmax", 0) || onnx_attr_i(n, "sliding_window_cache", 0) || onnx_attr_i(n, "qk_output", 0) ||
      onnx_out_used(n, 3))
    return ONNX_UNSUP(c, "smooth_softmax / sliding_window_cache / qk_output");
  int64_t N = onnx_attr_i(n, "num_heads", 0), KV = onnx_attr_i(n, "kv_num_heads", 0);
  if (N <= 0 || KV <= 0 || N % KV) return onnx_fail(c, MIL_ERR_INVALID, "num_heads %lld / kv_num_heads %lld", (long long)N, (long long)KV);
  if (onnx_rank(q) != 3 || !mil_type_is_static(q->type)) return ONNX_UNSUP(c, "input 0 (query) must be a static (B, S, D) tensor");
  if (!k) { /* packed QKV: D = (N + 2 KV) H */
    int64_t D = dim(q, 2), H = D / (N + 2 * KV);
    if (v || H * (N + 2 * KV) != D) return onnx_fail(c, MIL_ERR_INVALID, "packed QKV of %lld columns for %lld + 2 x %lld heads", (long long)D, (long long)N, (long long)KV);
    k = last_slice(c, q, N * H, (N + KV) * H, 1);
    v = last_slice(c, q, (N + KV) * H, D, 1);
    q = last_slice(c, q, 0, N * H, 1);
  }
  if (!v) return onnx_fail(c, MIL_ERR_INVALID, "input 1 (key) without input 2 (value)");
  q = split_heads(c, q, N);
  k = split_heads(c, k, KV);
  v = split_heads(c, v, KV);
  if (!q || !k || !v) return ONNX_UNSUP(c, "needs static (B, S, D) query / key / value whose widths split into the heads");
  int64_t B = dim(q, 0), S = dim(q, 2), H = dim(q, 3), P = 0;
  if (dim(k, 0) != B || dim(k, 2) != S || dim(k, 3) != H || !mil_type_equal(k->type, v->type))
    return onnx_fail(c, MIL_ERR_INVALID, "key / value must be (%lld, %lld, %lld x %lld) for a (%lld, %lld, %lld x %lld) query",
                     (long long)B, (long long)S, (long long)KV, (long long)H, (long long)B, (long long)S, (long long)N, (long long)H);
  if ((pk != NULL) != (pv != NULL)) return onnx_fail(c, MIL_ERR_INVALID, "input 3 (past_key) and 4 (past_value) go together");
  if (pk) {
    if (onnx_rank(pk) != 4 || !mil_type_is_static(pk->type) || dim(pk, 1) != KV || dim(pk, 3) != H)
      return ONNX_UNSUP(c, "input 3 (past_key) must be a static (B, %lld, P, %lld) tensor", (long long)KV, (long long)H);
    if (onnx_dtype(pk) != onnx_dtype(q)) return ONNX_UNSUP(c, "input 3 (past_key): a quantized KV cache");
    P = dim(pk, 2);
  }
  int64_t *tv;
  int32_t tn;
  if (total && onnx_val_ints(c, total, &tv, &tn) && tn == 1 && tv[0] != P + S)
    return ONNX_UNSUP(c, "input 6 (total_sequence_length) is %lld, not past %lld + new %lld: a shared KV buffer (past_key of max length)",
                      (long long)tv[0], (long long)P, (long long)S);
  if (onnx_attr_i(n, "do_rotary", 0)) {
    if (!cc || !sc || onnx_rank(cc) != 2 || !mil_type_is_static(cc->type))
      return onnx_fail(c, MIL_ERR_INVALID, "do_rotary needs 2-D input 7 (cos_cache) and 8 (sin_cache)");
    int64_t half = dim(cc, 1);
    if (dim(cc, 0) < P + S || 2 * half > H)
      return onnx_fail(c, MIL_ERR_INVALID, "cos_cache (%lld, %lld) for positions up to %lld and head size %lld", (long long)dim(cc, 0),
                       (long long)half, (long long)(P + S), (long long)H);
    mil_var *cs, *sn, *pos = onnx_in(n, 9);
    if (pos && pk) /* ONNX Runtime's kernel reads them otherwise than as rows then */
      return ONNX_UNSUP(c, "input 9 (position_ids) together with input 3 (past_key)");
    if (pos) { /* position_ids (B, S): the rows of the caches */
      if (onnx_rank(pos) != 2 || dim(pos, 0) != B || dim(pos, 1) != S)
        return onnx_fail(c, MIL_ERR_INVALID, "input 9 (position_ids) must be (%lld, %lld)", (long long)B, (long long)S);
      pos = onnx_cast(c, pos, MIL_DT_INT32);
      cs = ONNX_OP(c, "gather", A("x", cc), A("indices", pos), K("axis", onnx_i32(c, 0)));
      sn = ONNX_OP(c, "gather", A("x", sc), A("indices", pos), K("axis", onnx_i32(c, 0)));
    } else { /* positions P .. P+S-1 */
      cs = ONNX_OP(c, "slice_by_index", A("x", cc), K("begin", onnx_i32s(c, 2, (int64_t[]){P, 0})), K("end", onnx_i32s(c, 2, (int64_t[]){P + S, half})));
      sn = ONNX_OP(c, "slice_by_index", A("x", sc), K("begin", onnx_i32s(c, 2, (int64_t[]){P, 0})), K("end", onnx_i32s(c, 2, (int64_t[]){P + S, half})));
    }
    bool il = onnx_attr_i(n, "rotary_interleaved", 0) != 0;
    q = rotate(c, q, cs, sn, 2 * half, il);
    k = rotate(c, k, cs, sn, 2 * half, il);
    if (!q || !k) return MIL_ERR_TYPE;
  }
  if (pk) {
    k = ONNX_OP(c, "concat", AT("values", ((mil_var *[]){pk, k}), 2), K("axis", onnx_i32(c, 2)));
    v = ONNX_OP(c, "concat", AT("values", ((mil_var *[]){pv, v}), 2), K("axis", onnx_i32(c, 2)));
    if (!k || !v) return MIL_ERR_TYPE;
  }
  mil_status st = MIL_OK;
  if (onnx_out_used(n, 1)) st = onnx_set_out(c, n, 1, k);
  if (st == MIL_OK && onnx_out_used(n, 2)) st = onnx_set_out(c, n, 2, v);
  if (st != MIL_OK) return st;
  mil_dtype dt = onnx_dtype(q);
  int64_t T = P + S, win = onnx_attr_i(n, "local_window_size", -1);
  mil_var *bias = NULL;
  if (onnx_attr_i(n, "causal", 1) && !(bias = causal_bias(c, dt, S, T, win, -INFINITY))) return MIL_ERR_NOMEM;
  if (seqlens) { /* keys after seqlens_k[b] are padding */
    if (onnx_rank(seqlens) != 1 || dim(seqlens, 0) != B) return onnx_fail(c, MIL_ERR_INVALID, "input 5 (seqlens_k) must be (%lld)", (long long)B);
    mil_var *last = ONNX_OP(c, "expand_dims", A("x", onnx_cast(c, seqlens, MIL_DT_INT32)), K("axes", onnx_i32s(c, 1, (int64_t[]){1})));
    bias = add_bias(c, bias, vis_bias(c, ONNX_OP(c, "less_equal", A("x", key_positions(c, T)), A("y", last)), dt, -INFINITY));
  }
  bias = add_bias(c, bias, ab);
  k = repeat_heads(c, k, N / KV);
  v = repeat_heads(c, v, N / KV);
  return onnx_set_out(c, n, 0, merge_heads(c, onnx_attend(c, q, k, v, bias, attr_scale(n), onnx_attr_f(n, "softcap", 0))));
}

#define MS "com.microsoft"
const onnx_op_entry onnx_ops_contrib_attention[] = {
    {"Attention", MS, 1, 1, conv_attention, "matmul, add, scaled_dot_product_attention (iOS18) / matmul, softmax"},
    {"MultiHeadAttention", MS, 1, 1, conv_mha, "scaled_dot_product_attention (iOS18) / matmul, softmax"},
    {"GroupQueryAttention", MS, 1, 1, conv_gqa, "tile, scaled_dot_product_attention (iOS18) / matmul, softmax"},
    {"RotaryEmbedding", MS, 1, 1, conv_rotary, "gather, slice_by_index, mul, sub, add, concat"},
    {NULL, NULL, 0, 0, NULL, NULL},
};
