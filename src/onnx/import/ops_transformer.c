/* ONNX's transformer ops of opset 23: Attention and RotaryEmbedding
 * (RMSNormalization is in ops_normalization.c).
 *
 * Attention: 3-D inputs (batch, seq, heads * head_size, with q_num_heads /
 * kv_num_heads) are split into heads first; past_key / past_value are
 * concatenated in front; grouped key / value heads are repeated. From
 * iOS18 with the default scale, no softcap and no extra outputs it becomes
 * scaled_dot_product_attention (as coremltools' torch frontend maps
 * F.scaled_dot_product_attention); otherwise, and before iOS18, it is
 * decomposed: softmax(Q K^T * scale + mask) V, with the causal mask
 * aligned top-left as ONNX specifies.
 *
 * RotaryEmbedding: x1 * cos - x2 * sin, x2 * cos + x1 * sin over the first
 * rotary_embedding_dim channels of each head (halves, or even / odd
 * channels when interleaved), cos / sin gathered at position_ids. */
#include <math.h>
#include <string.h>

#include "onnx/import/import_internal.h"

/* (B, S, N * H) -> (B, N, S, H) */
static mil_var *split_heads(onnx_ctx *c, mil_var *x, int64_t heads) {
  const mil_type *t = x->type;
  int64_t B = t->dims[0].size, S = t->dims[1].size, E = t->dims[2].size;
  if (B < 0 || S < 0 || E < 0 || heads <= 0 || E % heads) return NULL;
  mil_var *r = ONNX_OP(c, "reshape", A("x", x), K("shape", onnx_i32s(c, 4, (int64_t[]){B, S, heads, E / heads})));
  return ONNX_OP(c, "transpose", A("x", r), K("perm", onnx_i32s(c, 4, (int64_t[]){0, 2, 1, 3})));
}

/* (B, kvh, S, H) with each head repeated `g` times: (B, kvh * g, S, H) */
static mil_var *repeat_heads(onnx_ctx *c, mil_var *x, int64_t g) {
  if (g == 1) return x;
  const mil_type *t = x->type;
  int64_t B = t->dims[0].size, N = t->dims[1].size, S = t->dims[2].size, H = t->dims[3].size;
  mil_var *r = ONNX_OP(c, "expand_dims", A("x", x), K("axes", onnx_i32s(c, 1, (int64_t[]){2})));
  r = ONNX_OP(c, "tile", A("x", r), K("reps", onnx_i32s(c, 5, (int64_t[]){1, 1, g, 1, 1})));
  return ONNX_OP(c, "reshape", A("x", r), K("shape", onnx_i32s(c, 4, (int64_t[]){B, N * g, S, H})));
}

/* softmax(q k^T * scale + bias) v on (B, N, S, H) q and (B, N, T, H) k, v
 * (k / v heads already repeated); scale < 0: 1 / sqrt(H). From iOS18, with
 * the default scale and no softcap, scaled_dot_product_attention (as
 * coremltools maps F.scaled_dot_product_attention); otherwise matmul, mul,
 * (tanh softcap,) add, softmax, matmul. NULL when an operand is NULL or a
 * build fails (recorded). */
mil_var *onnx_attend(onnx_ctx *c, mil_var *q, mil_var *k, mil_var *v, mil_var *bias, double scale, double softcap) {
  if (!q || !k || !v) return NULL;
  mil_dtype dt = onnx_dtype(q);
  if (c->target >= MIL_IOS18 && scale < 0 && softcap <= 0)
    return bias ? ONNX_OP(c, "scaled_dot_product_attention", A("query", q), A("key", k), A("value", v), A("attn_mask", bias))
                : ONNX_OP(c, "scaled_dot_product_attention", A("query", q), A("key", k), A("value", v));
  if (scale < 0) scale = 1.0 / sqrt((double)q->type->dims[3].size);
  mil_var *s = ONNX_OP(c, "matmul", A("x", q), A("y", k), K("transpose_y", onnx_bool(c, true)));
  s = ONNX_OP(c, "mul", A("x", s), K("y", onnx_fscalar(c, dt, scale)));
  if (softcap > 0)
    s = ONNX_OP(c, "mul", A("x", ONNX_OP(c, "tanh", A("x", ONNX_OP(c, "real_div", A("x", s), K("y", onnx_fscalar(c, dt, softcap)))))),
                K("y", onnx_fscalar(c, dt, softcap)));
  if (bias) s = ONNX_OP(c, "add", A("x", s), A("y", bias));
  s = ONNX_OP(c, "softmax", A("x", s), K("axis", onnx_i32(c, -1)));
  return ONNX_OP(c, "matmul", A("x", s), A("y", v));
}

static mil_status conv_attention(onnx_ctx *c, onnx_node *n) {
  mil_var *q = onnx_req(c, n, 0), *k = onnx_req(c, n, 1), *v = onnx_req(c, n, 2), *mask = onnx_in(n, 3);
  mil_var *pk = onnx_in(n, 4), *pv = onnx_in(n, 5);
  if (!q || !k || !v) return MIL_ERR_INVALID;
  if (onnx_out_used(n, 3)) return ONNX_UNSUP(c, "the qk_matmul_output output");
  if (n->n_in > 6 && onnx_in(n, 6)) return ONNX_UNSUP(c, "nonpad_kv_seqlen");
  bool three_d = onnx_rank(q) == 3;
  if (three_d) {
    int64_t qh = onnx_attr_i(n, "q_num_heads", 0), kvh = onnx_attr_i(n, "kv_num_heads", 0);
    q = split_heads(c, q, qh);
    k = split_heads(c, k, kvh);
    v = split_heads(c, v, kvh);
    if (!q || !k || !v) return ONNX_UNSUP(c, "3-D inputs need static shapes and q_num_heads / kv_num_heads");
  }
  if (onnx_rank(q) != 4 || onnx_rank(k) != 4 || onnx_rank(v) != 4 || !mil_type_is_static(q->type) ||
      !mil_type_is_static(k->type))
    return ONNX_UNSUP(c, "needs static 4-D (batch, heads, seq, head_size) inputs");
  if (pk) k = ONNX_OP(c, "concat", AT("values", ((mil_var *[]){pk, k}), 2), K("axis", onnx_i32(c, 2)));
  if (pv) v = ONNX_OP(c, "concat", AT("values", ((mil_var *[]){pv, v}), 2), K("axis", onnx_i32(c, 2)));
  if (!k || !v) return MIL_ERR_TYPE;
  mil_status st = onnx_set_out(c, n, 1, k);
  if (st == MIL_OK) st = onnx_set_out(c, n, 2, v);
  if (st != MIL_OK) return st;
  int64_t qh = q->type->dims[1].size, kvh = k->type->dims[1].size, Sq = q->type->dims[2].size, Skv = k->type->dims[2].size;
  int64_t hs = q->type->dims[3].size;
  if (kvh <= 0 || qh % kvh) return onnx_fail(c, MIL_ERR_INVALID, "%lld query heads for %lld key heads", (long long)qh, (long long)kvh);
  k = repeat_heads(c, k, qh / kvh);
  v = repeat_heads(c, v, qh / kvh);
  mil_dtype dt = onnx_dtype(q);
  const Onnx__AttributeProto *sa = onnx_attr(n, "scale");
  double scale = sa ? sa->f : 1.0 / sqrt((double)hs);
  double softcap = onnx_attr_f(n, "softcap", 0);
  bool causal = onnx_attr_i(n, "is_causal", 0) != 0;
  /* the additive mask: bool (true = attend) or float, plus the causal part */
  mil_var *bias = NULL;
  if (mask) bias = onnx_dtype(mask) == MIL_DT_BOOL
                       ? ONNX_OP(c, "select", A("cond", mask), K("a", onnx_fscalar(c, dt, 0)), K("b", onnx_fscalar(c, dt, -INFINITY)))
                       : mask;
  if (causal) {
    mil_value *cm = mil_value_new_tensor(c->p, dt, 2, (int64_t[]){Sq, Skv}, false, NULL);
    if (!cm) return MIL_ERR_NOMEM;
    for (int64_t i = 0; i < Sq; i++)
      for (int64_t j = 0; j < Skv; j++) mil_value_set_f64(cm, i * Skv + j, j <= i ? 0 : -INFINITY);
    mil_var *cv = onnx_const(c, cm);
    bias = bias ? ONNX_OP(c, "add", A("x", bias), A("y", cv)) : cv;
  }
  mil_var *y = onnx_attend(c, q, k, v, bias, sa ? scale : -1, softcap);
  if (y && three_d) {
    const mil_type *t = y->type;
    y = ONNX_OP(c, "transpose", A("x", y), K("perm", onnx_i32s(c, 4, (int64_t[]){0, 2, 1, 3})));
    y = ONNX_OP(c, "reshape", A("x", y), K("shape", onnx_i32s(c, 3, (int64_t[]){t->dims[0].size, Sq, qh * t->dims[3].size})));
  }
  return onnx_set_out(c, n, 0, y);
}

/* x[..., a:b:step] on the last axis of a rank-r var */
static mil_var *last_slice(onnx_ctx *c, mil_var *x, int64_t a, int64_t b, int64_t step) {
  int32_t r = onnx_rank(x);
  int64_t be[8] = {0}, en[8] = {0}, st[8] = {1, 1, 1, 1, 1, 1, 1, 1};
  mil_value *m = mil_value_new_tensor(c->p, MIL_DT_BOOL, 1, (int64_t[]){r}, false, NULL);
  if (!m || r > 8) return NULL;
  for (int32_t i = 0; i < r - 1; i++) mil_value_set_i64(m, i, 1);
  be[r - 1] = a;
  en[r - 1] = b;
  st[r - 1] = step;
  return ONNX_OP(c, "slice_by_index", A("x", x), K("begin", onnx_i32s(c, r, be)), K("end", onnx_i32s(c, r, en)),
                 K("stride", onnx_i32s(c, r, st)), K("begin_mask", m), K("end_mask", m));
}

static mil_status conv_rotary(onnx_ctx *c, onnx_node *n) {
  mil_var *x = onnx_req(c, n, 0), *cosc = onnx_req(c, n, 1), *sinc = onnx_req(c, n, 2), *pos = onnx_in(n, 3);
  if (!x || !cosc || !sinc) return MIL_ERR_INVALID;
  if (!mil_type_is_static(x->type)) return ONNX_UNSUP(c, "needs a static input shape");
  bool interleaved = onnx_attr_i(n, "interleaved", 0) != 0;
  int32_t rank = onnx_rank(x);
  const mil_type *t = x->type;
  mil_var *xx = x;
  int64_t heads = onnx_attr_i(n, "num_heads", 0);
  if (rank == 3) {
    /* (B, S, N * H) -> (B, S, N, H) */
    if (heads <= 0 || t->dims[2].size % heads) return ONNX_UNSUP(c, "3-D input without num_heads");
    xx = ONNX_OP(c, "reshape", A("x", x), K("shape", onnx_i32s(c, 4, (int64_t[]){t->dims[0].size, t->dims[1].size, heads, t->dims[2].size / heads})));
  } else if (rank != 4) return onnx_fail(c, MIL_ERR_INVALID, "input must have rank 3 or 4");
  int64_t H = xx->type->dims[3].size, rot = onnx_attr_i(n, "rotary_embedding_dim", 0);
  if (rot <= 0) rot = H;
  if (rot > H || rot % 2) return onnx_fail(c, MIL_ERR_INVALID, "rotary_embedding_dim %lld for head size %lld", (long long)rot, (long long)H);
  /* cos / sin (B, S, rot/2), as (B, S, 1, rot/2) for (B, S, N, H) or (B, 1, S, rot/2) for (B, N, S, H) */
  if (pos) {
    pos = onnx_cast(c, pos, MIL_DT_INT32);
    cosc = ONNX_OP(c, "gather", A("x", cosc), A("indices", pos), K("axis", onnx_i32(c, 0)));
    sinc = ONNX_OP(c, "gather", A("x", sinc), A("indices", pos), K("axis", onnx_i32(c, 0)));
  }
  if (cosc && onnx_rank(cosc) == 3 && cosc->type->dims[2].size > rot / 2) {
    cosc = last_slice(c, cosc, 0, rot / 2, 1);
    sinc = last_slice(c, sinc, 0, rot / 2, 1);
  }
  int64_t ax = rank == 3 ? 2 : 1;
  cosc = ONNX_OP(c, "expand_dims", A("x", cosc), K("axes", onnx_i32s(c, 1, &ax)));
  sinc = ONNX_OP(c, "expand_dims", A("x", sinc), K("axes", onnx_i32s(c, 1, &ax)));
  if (!xx || !cosc || !sinc) return MIL_ERR_TYPE;
  mil_var *x1 = interleaved ? last_slice(c, xx, 0, rot, 2) : last_slice(c, xx, 0, rot / 2, 1);
  mil_var *x2 = interleaved ? last_slice(c, xx, 1, rot, 2) : last_slice(c, xx, rot / 2, rot, 1);
  mil_var *re = ONNX_OP(c, "sub", A("x", ONNX_OP(c, "mul", A("x", x1), A("y", cosc))), A("y", ONNX_OP(c, "mul", A("x", x2), A("y", sinc))));
  mil_var *im = ONNX_OP(c, "add", A("x", ONNX_OP(c, "mul", A("x", x2), A("y", cosc))), A("y", ONNX_OP(c, "mul", A("x", x1), A("y", sinc))));
  mil_var *r;
  if (interleaved) {
    /* (..., rot/2, 2) -> (..., rot) */
    mil_var *st = ONNX_OP(c, "stack", AT("values", ((mil_var *[]){re, im}), 2), K("axis", onnx_i32(c, -1)));
    const mil_type *xt = xx->type;
    r = ONNX_OP(c, "reshape", A("x", st), K("shape", onnx_i32s(c, 4, (int64_t[]){xt->dims[0].size, xt->dims[1].size, xt->dims[2].size, rot})));
  } else r = ONNX_OP(c, "concat", AT("values", ((mil_var *[]){re, im}), 2), K("axis", onnx_i32(c, -1)));
  if (r && rot < H) r = ONNX_OP(c, "concat", AT("values", ((mil_var *[]){r, last_slice(c, xx, rot, H, 1)}), 2), K("axis", onnx_i32(c, -1)));
  if (r && rank == 3) r = ONNX_OP(c, "reshape", A("x", r), K("shape", onnx_i32s(c, 3, (int64_t[]){t->dims[0].size, t->dims[1].size, t->dims[2].size})));
  return onnx_set_out(c, n, 0, r);
}

const onnx_op_entry onnx_ops_transformer[] = {
    {"Attention", "", 23, 0, conv_attention, "scaled_dot_product_attention (iOS18) / matmul, softmax"},
    {"RotaryEmbedding", "", 23, 0, conv_rotary, "slice_by_index, mul, sub, add, concat"},
    {NULL, NULL, 0, 0, NULL, NULL},
};
