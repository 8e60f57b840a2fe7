/* ONNX Runtime's fused normalizations (docs/ContribOperators.md), as its
 * transformer optimizer and GenAI builder write them:
 *
 *   SkipLayerNormalization (com.microsoft): s = input + skip (+ bias);
 *     output = LayerNorm(s over the last axis) * gamma (+ beta); optional
 *     outputs mean, inv_std_var (input's shape with a last axis of 1) and
 *     input_skip_bias_sum = s. epsilon defaults to 1e-12.
 *   SkipSimplifiedLayerNormalization (com.microsoft): the same with an RMS
 *     norm (no mean, no beta): output = s / sqrt(mean(s^2) + eps) * gamma;
 *     outputs inv_std_var and input_skip_bias_sum.
 *   SimplifiedLayerNormalization (ai.onnx 1, where ONNX Runtime registers
 *     it): x / sqrt(mean(x^2, axes from axis) + eps) * scale,
 *     epsilon 1e-5; optional output inv_std_var.
 *   EmbedLayerNormalization (com.microsoft): word_embedding[input_ids] +
 *     position_embedding[position_ids, or 0 .. S-1] (+ segment_embedding[
 *     segment_ids]) layer-normalized with gamma / beta (epsilon 1e-12);
 *     mask_index is the count of 1s in each row of mask (zeros without a
 *     mask); embedding_sum is the sum before the norm.
 *
 * A LayerNorm with constant gamma / beta is MIL's layer_norm, as
 * coremltools' torch frontend maps layer_norm; otherwise, and when the
 * statistics are outputs, it is spelled out. The RMS norm is coremltools'
 * torch rms_norm pattern: x is divided by its largest magnitude m before it
 * is squared (no fp16 overflow above 256), with the epsilon carried exactly
 * (sqrt(eps) / m squared, m at least sqrt(eps)). */
#include <math.h>
#include <string.h>

#include "onnx/import/import_internal.h"

/* a (2) bool tensor {a, b} */
static mil_value *mask2(onnx_ctx *c, bool a, bool b) {
  mil_value *m = mil_value_new_tensor(c->p, MIL_DT_BOOL, 1, (int64_t[]){2}, false, NULL);
  if (m) {
    mil_value_set_i64(m, 0, a);
    mil_value_set_i64(m, 1, b);
  }
  return m;
}

static mil_var *last_mean(onnx_ctx *c, mil_var *x) {
  return ONNX_OP(c, "reduce_mean", A("x", x), K("axes", onnx_i32s(c, 1, (int64_t[]){-1})), K("keep_dims", onnx_bool(c, true)));
}

/* Layer norm over the last axis: *y, and *mean / *inv (NULL when not
 * wanted) */
static mil_status layer_norm_last(onnx_ctx *c, mil_var *x, mil_var *g, mil_var *b, double eps, mil_var **y, mil_var **mean,
                                  mil_var **inv) {
  mil_dtype dt = onnx_dtype(x);
  int32_t r = onnx_rank(x);
  if (r < 1) return ONNX_UNSUP(c, "input 0 needs a known rank of at least 1");
  int64_t H = x->type->dims[r - 1].size;
  bool exact = !mean && !inv && g->val && onnx_rank(g) == 1 && g->type->dims[0].size == H && (!b || (b->val && mil_type_equal(b->type, g->type)));
  if (exact) {
    pass_barg args[5] = {A("x", x), K("axes", onnx_i32s(c, 1, (int64_t[]){-1})), A("gamma", g), K("epsilon", onnx_fscalar(c, dt, eps)),
                         A("beta", b)};
    *y = onnx_op(c, "layer_norm", b ? 5 : 4, args);
    return *y ? MIL_OK : MIL_ERR_TYPE;
  }
  mil_var *mu = last_mean(c, x);
  mil_var *d = ONNX_OP(c, "sub", A("x", x), A("y", mu));
  mil_var *var = last_mean(c, ONNX_OP(c, "mul", A("x", d), A("y", d)));
  mil_var *is = ONNX_OP(c, "rsqrt", A("x", ONNX_OP(c, "add", A("x", var), K("y", onnx_fscalar(c, dt, eps)))));
  mil_var *r0 = ONNX_OP(c, "mul", A("x", ONNX_OP(c, "mul", A("x", d), A("y", is))), A("y", g));
  if (b) r0 = ONNX_OP(c, "add", A("x", r0), A("y", b));
  *y = r0;
  if (mean) *mean = mu;
  if (inv) *inv = is;
  return r0 ? MIL_OK : MIL_ERR_TYPE;
}

/* RMS norm of x over axes [axis, rank): *y = x / rms * g (g may be NULL),
 * *inv = 1 / rms when inv is set. */
static mil_status rms_norm(onnx_ctx *c, mil_var *x, int64_t axis, mil_var *g, double eps, mil_var **y, mil_var **inv) {
  int32_t r = onnx_rank(x);
  if (r < 1 || r > MIL_INTERP_MAX_RANK_ONNX) return ONNX_UNSUP(c, "input 0 needs a known rank of 1 to %d", MIL_INTERP_MAX_RANK_ONNX);
  if (!onnx_axis(&axis, r)) return onnx_fail(c, MIL_ERR_INVALID, "axis out of range for rank %d", r);
  int64_t axes[MIL_INTERP_MAX_RANK_ONNX];
  int32_t k = r - (int32_t)axis;
  for (int32_t i = 0; i < k; i++) axes[i] = axis + i;
  mil_dtype dt = onnx_dtype(x);
  double se = sqrt(eps > 0 ? eps : 0);
  mil_var *m = ONNX_OP(c, "reduce_max", A("x", ONNX_OP(c, "abs", A("x", x))), K("axes", onnx_i32s(c, k, axes)), K("keep_dims", onnx_bool(c, true)));
  if (se > 0) m = ONNX_OP(c, "maximum", A("x", m), K("y", onnx_fscalar(c, dt, se)));
  mil_var *xs = ONNX_OP(c, "real_div", A("x", x), A("y", m));
  mil_var *ms = ONNX_OP(c, "reduce_mean", A("x", ONNX_OP(c, "mul", A("x", xs), A("y", xs))), K("axes", onnx_i32s(c, k, axes)),
                        K("keep_dims", onnx_bool(c, true)));
  if (se > 0) {
    mil_var *e = ONNX_OP(c, "real_div", K("x", onnx_fscalar(c, dt, se)), A("y", m));
    ms = ONNX_OP(c, "add", A("x", ms), A("y", ONNX_OP(c, "mul", A("x", e), A("y", e))));
  }
  mil_var *rm = ONNX_OP(c, "sqrt", A("x", ms)); /* rms / m */
  mil_var *out = ONNX_OP(c, "real_div", A("x", xs), A("y", rm));
  if (g) out = ONNX_OP(c, "mul", A("x", out), A("y", g));
  *y = out;
  if (inv) *inv = ONNX_OP(c, "real_div", A("x", ONNX_OP(c, "real_div", K("x", onnx_fscalar(c, dt, 1)), A("y", m))), A("y", rm));
  return out ? MIL_OK : MIL_ERR_TYPE;
}

/* input + skip (+ bias) */
static mil_var *skip_sum(onnx_ctx *c, onnx_node *n, mil_var *x, mil_var *skip, mil_var *bias) {
  (void)n;
  mil_var *s = ONNX_OP(c, "add", A("x", x), A("y", skip));
  return bias ? ONNX_OP(c, "add", A("x", s), A("y", bias)) : s;
}

static mil_status conv_skip_layer_norm(onnx_ctx *c, onnx_node *n) {
  mil_var *x = onnx_req(c, n, 0), *skip = onnx_req(c, n, 1), *g = onnx_req(c, n, 2), *b = onnx_in(n, 3), *bias = onnx_in(n, 4);
  if (!x || !skip || !g) return MIL_ERR_INVALID;
  double eps = onnx_attr_f(n, "epsilon", 1e-12f);
  mil_var *s = skip_sum(c, n, x, skip, bias);
  if (!s) return MIL_ERR_TYPE;
  bool stats = onnx_out_used(n, 1) || onnx_out_used(n, 2);
  mil_var *y = NULL, *mean = NULL, *inv = NULL;
  mil_status st = layer_norm_last(c, s, g, b, eps, &y, stats ? &mean : NULL, stats ? &inv : NULL);
  if (st == MIL_OK) st = onnx_set_out(c, n, 0, y);
  if (st == MIL_OK && onnx_out_used(n, 1)) st = onnx_set_out(c, n, 1, onnx_cast(c, mean, MIL_DT_FP32));
  if (st == MIL_OK && onnx_out_used(n, 2)) st = onnx_set_out(c, n, 2, onnx_cast(c, inv, MIL_DT_FP32));
  if (st == MIL_OK && onnx_out_used(n, 3)) st = onnx_set_out(c, n, 3, s);
  return st;
}

static mil_status conv_skip_simplified(onnx_ctx *c, onnx_node *n) {
  mil_var *x = onnx_req(c, n, 0), *skip = onnx_req(c, n, 1), *g = onnx_req(c, n, 2), *bias = onnx_in(n, 3);
  if (!x || !skip || !g) return MIL_ERR_INVALID;
  if (onnx_out_used(n, 1)) return ONNX_UNSUP(c, "output 1 (mean): an RMS norm has no mean (ONNX Runtime computes none either)");
  double eps = onnx_attr_f(n, "epsilon", 1e-12f);
  mil_var *s = skip_sum(c, n, x, skip, bias);
  if (!s) return MIL_ERR_TYPE;
  mil_var *y = NULL, *inv = NULL;
  mil_status st = rms_norm(c, s, -1, g, eps, &y, onnx_out_used(n, 2) ? &inv : NULL);
  if (st == MIL_OK) st = onnx_set_out(c, n, 0, y);
  if (st == MIL_OK && onnx_out_used(n, 2)) st = onnx_set_out(c, n, 2, onnx_cast(c, inv, MIL_DT_FP32));
  if (st == MIL_OK && onnx_out_used(n, 3)) st = onnx_set_out(c, n, 3, s);
  return st;
}

static mil_status conv_simplified(onnx_ctx *c, onnx_node *n) {
  mil_var *x = onnx_req(c, n, 0), *g = onnx_req(c, n, 1);
  if (!x || !g) return MIL_ERR_INVALID;
  double eps = onnx_attr_f(n, "epsilon", 1e-5f);
  mil_var *y = NULL, *inv = NULL;
  mil_status st = rms_norm(c, x, onnx_attr_i(n, "axis", -1), g, eps, &y, onnx_out_used(n, 1) ? &inv : NULL);
  if (st == MIL_OK) st = onnx_set_out(c, n, 0, y);
  if (st == MIL_OK && onnx_out_used(n, 1)) st = onnx_set_out(c, n, 1, onnx_cast(c, inv, MIL_DT_FP32));
  return st;
}

static mil_status conv_embed_layer_norm(onnx_ctx *c, onnx_node *n) {
  mil_var *ids = onnx_req(c, n, 0), *seg = onnx_in(n, 1), *we = onnx_req(c, n, 2), *pe = onnx_req(c, n, 3), *se = onnx_in(n, 4),
          *g = onnx_req(c, n, 5), *b = onnx_req(c, n, 6), *mask = onnx_in(n, 7), *pos = onnx_in(n, 8);
  if (!ids || !we || !pe || !g || !b) return MIL_ERR_INVALID;
  if (onnx_rank(ids) != 2 || !mil_type_is_static(ids->type))
    return ONNX_UNSUP(c, "input 0 (input_ids) must be a static (batch, sequence) tensor");
  if (onnx_rank(we) != 2 || onnx_rank(pe) != 2) return onnx_fail(c, MIL_ERR_INVALID, "word_embedding and position_embedding must be 2-D");
  if ((seg == NULL) != (se == NULL))
    return onnx_fail(c, MIL_ERR_INVALID, "input 1 (segment_ids) and input 4 (segment_embedding) go together");
  int64_t B = ids->type->dims[0].size, S = ids->type->dims[1].size;
  mil_var *sum = ONNX_OP(c, "gather", A("x", we), A("indices", onnx_cast(c, ids, MIL_DT_INT32)), K("axis", onnx_i32(c, 0)));
  mil_var *p;
  if (pos) p = ONNX_OP(c, "gather", A("x", pe), A("indices", onnx_cast(c, pos, MIL_DT_INT32)), K("axis", onnx_i32(c, 0)));
  else {
    if (pe->type->dims[0].size >= 0 && pe->type->dims[0].size < S)
      return onnx_fail(c, MIL_ERR_INVALID, "position_embedding has %lld rows for a sequence of %lld",
                       (long long)pe->type->dims[0].size, (long long)S);
    p = ONNX_OP(c, "slice_by_index", A("x", pe), K("begin", onnx_i32s(c, 2, (int64_t[]){0, 0})),
                K("end", onnx_i32s(c, 2, (int64_t[]){S, 0})), K("end_mask", mask2(c, false, true)));
  }
  sum = ONNX_OP(c, "add", A("x", sum), A("y", p));
  if (seg) {
    mil_var *sv = ONNX_OP(c, "gather", A("x", se), A("indices", onnx_cast(c, seg, MIL_DT_INT32)), K("axis", onnx_i32(c, 0)));
    sum = ONNX_OP(c, "add", A("x", sum), A("y", sv));
  }
  if (!sum) return MIL_ERR_TYPE;
  mil_var *y = NULL;
  mil_status st = layer_norm_last(c, sum, g, b, onnx_attr_f(n, "epsilon", 1e-12f), &y, NULL, NULL);
  if (st == MIL_OK) st = onnx_set_out(c, n, 0, y);
  if (st == MIL_OK && onnx_out_used(n, 1)) {
    mil_var *mi;
    if (mask) {
      mil_var *one = ONNX_OP(c, "equal", A("x", onnx_cast(c, mask, MIL_DT_INT32)), K("y", onnx_i32(c, 1)));
      mi = ONNX_OP(c, "reduce_sum", A("x", onnx_cast(c, one, MIL_DT_INT32)), K("axes", onnx_i32s(c, 1, (int64_t[]){1})),
                   K("keep_dims", onnx_bool(c, false)));
    } else {
      mil_value *z = mil_value_new_tensor(c->p, MIL_DT_INT32, 1, &B, false, NULL);
      if (!z) return MIL_ERR_NOMEM;
      mi = onnx_const(c, z);
    }
    st = onnx_set_out(c, n, 1, mi);
  }
  if (st == MIL_OK && onnx_out_used(n, 2)) st = onnx_set_out(c, n, 2, sum);
  return st;
}

#define MS "com.microsoft"
const onnx_op_entry onnx_ops_contrib_norm[] = {
    {"SkipLayerNormalization", MS, 1, 1, conv_skip_layer_norm, "add, layer_norm / reduce_mean, sub, mul, rsqrt"},
    {"SkipSimplifiedLayerNormalization", MS, 1, 1, conv_skip_simplified, "add, abs, reduce_max, real_div, mul, reduce_mean, sqrt"},
    {"SimplifiedLayerNormalization", "", 1, 0, conv_simplified, "abs, reduce_max, real_div, mul, reduce_mean, sqrt"},
    {"EmbedLayerNormalization", MS, 1, 1, conv_embed_layer_norm, "gather, add, layer_norm, equal, reduce_sum"},
    {NULL, NULL, 0, 0, NULL, NULL},
};
