/* Op family "elementwise_unary" (coremltools ops/defs/iOS15/elementwise_unary.py
 * and iOS17/elementwise_unary.py): math functions of one tensor, clip,
 * threshold, inverse / log / rsqrt with an epsilon, logical_not and cast.
 * The output has x's type (cast: x's shape with the requested dtype).
 *
 *   %y: (1, 8, fp32)(Tensor) = rsqrt(x=%x, epsilon=1e-12, name="y")
 *   %z: (1, 8, fp16)(Tensor) = cast(x=%x, dtype="fp16", name="z")
 *
 * iOS17 widens cast to int8/uint8/int16/uint16, lets the epsilon of
 * inverse/log/rsqrt have its own float dtype (U), and makes clip check
 * alpha < beta. */
#include <math.h>
#include <string.h>

#include "ops/fold_internal.h"
#include "ops/ops_defaults.h"
#include "ops/ops_internal.h"

#define DTS_CAST15 (MIL_DTS_FLOAT_INT32 | MIL_DTS_BOOL)
#define DTS_CAST17                                                                                                   \
  (DTS_CAST15 | MIL_DTB(MIL_DT_INT8) | MIL_DTB(MIL_DT_UINT8) | MIL_DTB(MIL_DT_INT16) | MIL_DTB(MIL_DT_UINT16))

static const mil_input_spec k_float_in[] = {
    IN_SPEC("x", MIL_IK_TENSOR, MIL_DTS_FLOAT, "T", 0, NULL),
};
static const mil_input_spec k_with_int_in[] = {
    IN_SPEC("x", MIL_IK_TENSOR, MIL_DTS_FLOAT_INT32, "T", 0, NULL),
};
static const mil_input_spec k_bool_in[] = {
    IN_SPEC("x", MIL_IK_TENSOR, MIL_DTS_BOOL, NULL, 0, NULL),
};
static const mil_input_spec k_clip_in[] = {
    IN_SPEC("x", MIL_IK_TENSOR, MIL_DTS_FLOAT, "T", 0, NULL),
    IN_SPEC("alpha", MIL_IK_TENSOR, MIL_DTS_FLOAT, "T", MIL_IF_CONST, NULL),
    IN_SPEC("beta", MIL_IK_TENSOR, MIL_DTS_FLOAT, "T", MIL_IF_CONST, NULL),
};
static const mil_input_spec k_threshold_in[] = {
    IN_SPEC("x", MIL_IK_TENSOR, MIL_DTS_FLOAT_INT32, "T", 0, NULL),
    IN_SPEC("alpha", MIL_IK_TENSOR, MIL_DTS_FLOAT_INT32, "T", MIL_IF_CONST, NULL),
};
static const mil_input_spec k_inverse15_in[] = {
    IN_SPEC("x", MIL_IK_TENSOR, MIL_DTS_FLOAT, "T", 0, NULL),
    IN_SPEC("epsilon", MIL_IK_TENSOR, MIL_DTS_FLOAT, "T", MIL_IF_CONST | MIL_IF_OPTIONAL, "1e-4"),
};
static const mil_input_spec k_log15_in[] = {
    IN_SPEC("x", MIL_IK_TENSOR, MIL_DTS_FLOAT, "T", 0, NULL),
    IN_SPEC("epsilon", MIL_IK_TENSOR, MIL_DTS_FLOAT, "T", MIL_IF_CONST | MIL_IF_OPTIONAL, "1e-45"),
};
static const mil_input_spec k_rsqrt15_in[] = {
    IN_SPEC("x", MIL_IK_TENSOR, MIL_DTS_FLOAT, "T", 0, NULL),
    IN_SPEC("epsilon", MIL_IK_TENSOR, MIL_DTS_FLOAT, "T", MIL_IF_CONST | MIL_IF_OPTIONAL, "1e-12"),
};
static const mil_input_spec k_inverse17_in[] = {
    IN_SPEC("x", MIL_IK_TENSOR, MIL_DTS_FLOAT, "T", 0, NULL),
    IN_SPEC("epsilon", MIL_IK_TENSOR, MIL_DTS_FLOAT, "U", MIL_IF_CONST | MIL_IF_OPTIONAL, "1e-4"),
};
static const mil_input_spec k_log17_in[] = {
    IN_SPEC("x", MIL_IK_TENSOR, MIL_DTS_FLOAT, "T", 0, NULL),
    IN_SPEC("epsilon", MIL_IK_TENSOR, MIL_DTS_FLOAT, "U", MIL_IF_CONST | MIL_IF_OPTIONAL, "1e-45"),
};
static const mil_input_spec k_rsqrt17_in[] = {
    IN_SPEC("x", MIL_IK_TENSOR, MIL_DTS_FLOAT, "T", 0, NULL),
    IN_SPEC("epsilon", MIL_IK_TENSOR, MIL_DTS_FLOAT, "U", MIL_IF_CONST | MIL_IF_OPTIONAL, "1e-12"),
};
static const mil_input_spec k_cast15_in[] = {
    IN_SPEC("x", MIL_IK_TENSOR, DTS_CAST15, "T", 0, NULL),
    IN_SPEC("dtype", MIL_IK_TENSOR, MIL_DTS_STRING, NULL, MIL_IF_CONST, NULL),
};
static const mil_input_spec k_cast17_in[] = {
    IN_SPEC("x", MIL_IK_TENSOR, DTS_CAST17, "T", 0, NULL),
    IN_SPEC("dtype", MIL_IK_TENSOR, MIL_DTS_STRING, NULL, MIL_IF_CONST, NULL),
};

/* ---- type inference ---- */

static mil_status infer_like_x(mil_infer_ctx *c) {
  op_set_out(c, 0, op_type(c, "x"));
  return MIL_OK;
}

static mil_status infer_clip17(mil_infer_ctx *c) {
  const mil_value *a = op_val(c, "alpha"), *b = op_val(c, "beta");
  if (a && b && a->kind == MIL_VAL_TENSOR && b->kind == MIL_VAL_TENSOR && a->numel >= 1 && b->numel >= 1) {
    double av = mil_value_get_f64(a, 0), bv = mil_value_get_f64(b, 0);
    if (av >= bv) return op_fail(c, "input 'alpha' (%g) must be smaller than 'beta' (%g)", av, bv);
  }
  return infer_like_x(c);
}

/* The dtype names cast accepts: coremltools' supported_dtypes(), i.e. the
 * names of the variant's T domain. */
static bool cast_dtype(const mil_infer_ctx *c, const char *s, mil_dtype *out) {
  static const struct { const char *name; mil_dtype dt; bool ios17; } names[] = {
      {"fp16", MIL_DT_FP16, false}, {"fp32", MIL_DT_FP32, false},  {"int32", MIL_DT_INT32, false},
      {"bool", MIL_DT_BOOL, false}, {"int8", MIL_DT_INT8, true},   {"uint8", MIL_DT_UINT8, true},
      {"int16", MIL_DT_INT16, true}, {"uint16", MIL_DT_UINT16, true},
  };
  bool wide = c->def->opset >= MIL_IOS17;
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
    if (strcmp(names[i].name, s) == 0 && (!names[i].ios17 || wide)) {
      *out = names[i].dt;
      return true;
    }
  return false;
}

static mil_status infer_cast(mil_infer_ctx *c) {
  const char *s = op_str(c, "dtype", NULL);
  if (!s) return op_fail(c, "input 'dtype' must be a known string, got %s", op_tstr(c, op_type(c, "dtype")));
  mil_dtype dt;
  if (!cast_dtype(c, s, &dt))
    return op_fail(c, "input 'dtype' must be one of %s, got \"%s\"",
                   c->def->opset >= MIL_IOS17 ? "fp16, fp32, int8, uint8, int16, uint16, int32, bool"
                                              : "fp16, fp32, int32, bool",
                   s);
  op_set_out(c, 0, op_with_dtype(c, op_type(c, "x"), dt));
  return MIL_OK;
}

/* ---- default inputs ---- */

/* epsilon defaults to a scalar of x's dtype. */
static mil_status eps_default(mil_infer_ctx *c, double v) {
  const mil_type *x = op_type(c, "x");
  if (!x || op_has(c, "epsilon")) return MIL_OK;
  mil_value *val = mil_value_new_scalar_f64(c->prog, x->dtype == MIL_DT_FP16 ? MIL_DT_FP16 : MIL_DT_FP32, v);
  if (!val) return MIL_ERR_NOMEM;
  return op_add_default_const(c, "epsilon", val);
}
static mil_status defaults_inverse(mil_infer_ctx *c) { return eps_default(c, 1e-4); }
static mil_status defaults_log(mil_infer_ctx *c) { return eps_default(c, 1e-45); }
static mil_status defaults_rsqrt(mil_infer_ctx *c) { return eps_default(c, 1e-12); }

/* ---- value inference ---- */

typedef enum uop {
  U_ABS, U_ACOS, U_ASIN, U_ATAN, U_ATANH, U_CEIL, U_COS, U_COSH, U_ERF, U_EXP, U_EXP2, U_FLOOR, U_ROUND,
  U_SIGN, U_SIN, U_SINH, U_SQRT, U_SQUARE, U_TAN, U_TANH
} uop;

static double float_unary(uop k, double x) {
  switch (k) {
  case U_ABS: return fabs(x);
  case U_ACOS: return acos(x);
  case U_ASIN: return asin(x);
  case U_ATAN: return atan(x);
  case U_ATANH: return atanh(x);
  case U_CEIL: return ceil(x);
  case U_COS: return cos(x);
  case U_COSH: return cosh(x);
  case U_ERF: return erf(x);
  case U_EXP: return exp(x);
  case U_EXP2: return exp2(x);
  case U_FLOOR: return floor(x);
  case U_ROUND: return nearbyint(x); /* numpy rounds half to even */
  case U_SIGN: return isnan(x) ? x : (x > 0) - (x < 0);
  case U_SIN: return sin(x);
  case U_SINH: return sinh(x);
  case U_SQRT: return sqrt(x);
  case U_SQUARE: return x * x;
  case U_TAN: return tan(x);
  case U_TANH: return tanh(x);
  }
  return x;
}

static mil_status fold_unary(mil_infer_ctx *c, uop k) {
  const mil_value *x = fold_tensor(c, "x");
  if (!x) return MIL_OK;
  mil_value *out = fold_out(c, 0);
  if (!out) return MIL_OK;
  mil_dtype dt = x->type->dtype;
  for (int64_t i = 0; i < out->numel; i++) {
    if (dt == MIL_DT_INT32 && (k == U_ABS || k == U_SIGN || k == U_SQUARE)) {
      int64_t v = mil_value_get_i64(x, i);
      int64_t r = k == U_ABS ? (v < 0 ? -v : v) : k == U_SIGN ? (v > 0) - (v < 0) : v * v;
      mil_value_set_i64(out, i, r);
    } else if (dt == MIL_DT_INT32) { /* exp2 of ints: float64 result truncated back */
      fold_store_f64(out, i, float_unary(k, (double)mil_value_get_i64(x, i)));
    } else if (k == U_ERF) { /* math.erf in double, rounded once to the dtype */
      mil_value_set_f64(out, i, erf(mil_value_get_f64(x, i)));
    } else {
      mil_value_set_f64(out, i, fold_rnd(dt, float_unary(k, mil_value_get_f64(x, i))));
    }
  }
  c->val[0] = out;
  return MIL_OK;
}

#define FOLD_FN(name, kind) \
  static mil_status fold_##name(mil_infer_ctx *c) { return fold_unary(c, kind); }
FOLD_FN(abs, U_ABS)
FOLD_FN(acos, U_ACOS)
FOLD_FN(asin, U_ASIN)
FOLD_FN(atan, U_ATAN)
FOLD_FN(atanh, U_ATANH)
FOLD_FN(ceil, U_CEIL)
FOLD_FN(cos, U_COS)
FOLD_FN(cosh, U_COSH)
FOLD_FN(erf, U_ERF)
FOLD_FN(exp, U_EXP)
FOLD_FN(exp2, U_EXP2)
FOLD_FN(floor, U_FLOOR)
FOLD_FN(round, U_ROUND)
FOLD_FN(sign, U_SIGN)
FOLD_FN(sin, U_SIN)
FOLD_FN(sinh, U_SINH)
FOLD_FN(sqrt, U_SQRT)
FOLD_FN(square, U_SQUARE)
FOLD_FN(tan, U_TAN)
FOLD_FN(tanh, U_TANH)
#undef FOLD_FN

/* Elementwise op of x and a broadcast const parameter (clip's alpha/beta,
 * threshold's alpha, an epsilon). */
typedef enum pop { P_CLIP, P_THRESHOLD, P_INVERSE, P_LOG, P_RSQRT } pop;

static mil_status fold_param(mil_infer_ctx *c, pop k) {
  const mil_value *x = fold_tensor(c, "x");
  if (!x) return MIL_OK;
  const mil_value *a = NULL, *b = NULL;
  double dflt = 0;
  switch (k) {
  case P_CLIP:
    a = fold_tensor(c, "alpha");
    b = fold_tensor(c, "beta");
    if (!a || !b) return MIL_OK;
    break;
  case P_THRESHOLD:
    a = fold_tensor(c, "alpha");
    if (!a) return MIL_OK;
    break;
  case P_INVERSE: dflt = 1e-4; break;
  case P_LOG: dflt = 1e-45; break;
  case P_RSQRT: dflt = 1e-12; break;
  }
  if (k >= P_INVERSE) {
    a = fold_tensor(c, "epsilon");
    if (!a && op_has(c, "epsilon")) return MIL_OK;
  }
  mil_value *out = fold_out(c, 0);
  if (!out) return MIL_OK;
  int64_t shape[OP_MAX_RANK];
  int32_t rank = fold_shape(out, shape);
  const mil_value *ins[3] = {x, a, b};
  fold_iter it;
  if (!fold_iter_init(&it, rank, shape, 3, ins)) return MIL_OK;
  mil_dtype dt = x->type->dtype;
  double eps_dflt = fold_rnd(dt, dflt);
  for (int64_t i = 0; i < out->numel; i++, fold_iter_next(&it)) {
    if (dt == MIL_DT_INT32) { /* threshold on ints */
      int64_t v = mil_value_get_i64(x, it.off[0]), t = mil_value_get_i64(a, it.off[1]);
      mil_value_set_i64(out, i, v > t ? v : t);
      continue;
    }
    double v = mil_value_get_f64(x, it.off[0]), r;
    double p = a ? mil_value_get_f64(a, it.off[1]) : eps_dflt;
    switch (k) {
    case P_CLIP: {
      double q = mil_value_get_f64(b, it.off[2]);
      r = isnan(v) || isnan(p) ? NAN : (v > p ? v : p);
      r = isnan(r) || isnan(q) ? NAN : (r < q ? r : q);
      break;
    }
    case P_THRESHOLD: r = isnan(v) || isnan(p) ? NAN : (v > p ? v : p); break;
    case P_INVERSE: r = fold_rnd(dt, 1.0 / fold_rnd(dt, v + p)); break;
    case P_LOG: r = fold_rnd(dt, log(fold_rnd(dt, v + p))); break;
    default: r = fold_rnd(dt, 1.0 / fold_rnd(dt, sqrt(fold_rnd(dt, v + p)))); break;
    }
    mil_value_set_f64(out, i, r);
  }
  c->val[0] = out;
  return MIL_OK;
}

static mil_status fold_clip(mil_infer_ctx *c) { return fold_param(c, P_CLIP); }
static mil_status fold_threshold(mil_infer_ctx *c) { return fold_param(c, P_THRESHOLD); }
static mil_status fold_inverse(mil_infer_ctx *c) { return fold_param(c, P_INVERSE); }
static mil_status fold_log(mil_infer_ctx *c) { return fold_param(c, P_LOG); }
static mil_status fold_rsqrt(mil_infer_ctx *c) { return fold_param(c, P_RSQRT); }

static mil_status fold_logical_not(mil_infer_ctx *c) {
  const mil_value *x = fold_tensor(c, "x");
  if (!x) return MIL_OK;
  mil_value *out = fold_out(c, 0);
  if (!out) return MIL_OK;
  for (int64_t i = 0; i < out->numel; i++) mil_value_set_i64(out, i, mil_value_get_i64(x, i) == 0);
  c->val[0] = out;
  return MIL_OK;
}

/* numpy astype: float -> integer converts through a 32-bit integer
 * conversion (NaN / out of range -> INT_MIN on x86) and then wraps to the
 * narrower type; anything -> bool is "nonzero". */
static void cast_store(mil_value *out, int64_t i, mil_dtype src, const mil_value *x, int64_t j) {
  mil_dtype dst = out->type->dtype;
  if (fold_is_float(src)) {
    double v = mil_value_get_f64(x, j);
    if (fold_is_float(dst) || dst == MIL_DT_BOOL) {
      mil_value_set_f64(out, i, dst == MIL_DT_BOOL ? (v != 0 || isnan(v)) : v);
      return;
    }
    int64_t iv = (isnan(v) || v >= 2147483648.0 || v <= -2147483649.0) ? INT32_MIN : (int64_t)v;
    mil_value_set_i64(out, i, iv);
    return;
  }
  mil_value_set_i64(out, i, mil_value_get_i64(x, j));
}

static mil_status fold_cast(mil_infer_ctx *c) {
  const mil_value *x = fold_tensor(c, "x");
  if (!x) {
    /* a rank-1 symbolic value (e.g. a shape) stays symbolic through cast */
    mil_var *xv = op_in(c, "x");
    const mil_type *t = op_type(c, "x");
    if (xv && xv->mark == MIL_MARK_SYMBOLIC && t && t->rank == 1) c->mark[0] = MIL_MARK_SYMBOLIC;
    return MIL_OK;
  }
  mil_dtype from = x->type->dtype;
  const mil_type *ot = c->out[0];
  bool bulk = ot && ot->kind == MIL_TYPE_TENSOR && mil_type_is_static(ot) && ot->rank <= OP_MAX_RANK &&
              ((from == MIL_DT_FP32 && ot->dtype == MIL_DT_FP16) || (from == MIL_DT_FP16 && ot->dtype == MIL_DT_FP32));
  if (bulk && from == MIL_DT_FP32 && x->widened_from && x->widened_from->type == ot &&
      x->widened_from->numel == x->numel) {
    /* fp16 -> fp32 -> fp16 is exact: the value cast up is the answer (values are immutable, so it is
     * shared rather than copied; a weight that add_fp16_cast turns around costs one buffer less) */
    c->val[0] = x->widened_from;
    return MIL_OK;
  }
  if (bulk && (mil_value_is_deferred(x) || (from == MIL_DT_FP32 && (x->file_mapped || x->stable_view) && x->nbytes >= ((size_t)16 << 10)))) {
    /* a weight read from a weight file (or already deferred): its bytes are
     * computed when read (mostly by the weight writer, streaming), and the
     * source costs no memory meanwhile */
    mil_value *out = mil_value_new_deferred_cast(c->prog, x, ot->dtype);
    if (out && out->type == ot) {
      if (from == MIL_DT_FP16) out->widened_from = x;
      c->val[0] = out;
      return MIL_OK;
    }
  }
  if (bulk) { /* weight casts: bulk kernel into bytes not zeroed first, then the source may leave memory */
    int64_t shape[OP_MAX_RANK];
    for (int32_t k = 0; k < ot->rank; k++) shape[k] = ot->dims[k].size;
    mil_value *out = mil_value_new_tensor_uninit(c->prog, ot->dtype, ot->rank, shape, ot->is_scalar && ot->rank == 0);
    if (!out || out->numel != x->numel) return MIL_OK;
    /* in pieces of 4M elements, each piece of a weight-file mapping given
     * back once converted: a large weight never needs to be resident whole */
    const size_t piece = (size_t)4 << 20, n = (size_t)out->numel, in_w = from == MIL_DT_FP32 ? 4 : 2;
    for (size_t at = 0; at < n; at += piece) {
      size_t len = n - at < piece ? n - at : piece;
      if (from == MIL_DT_FP32)
        mil_fp32_to_fp16_array((const float *)mil_value_data(x) + at, (uint16_t *)mil_value_data_mut(out) + at, len);
      else
        mil_fp16_to_fp32_array((const uint16_t *)mil_value_data(x) + at, (float *)mil_value_data_mut(out) + at, len);
      mil_program_release_value_pages(c->prog, x, at * in_w, len * in_w);
    }
    if (from == MIL_DT_FP16) out->widened_from = x;
    c->val[0] = out;
    return MIL_OK;
  }
  mil_value *out = fold_out(c, 0);
  if (!out) return MIL_OK;
  for (int64_t i = 0; i < out->numel; i++) cast_store(out, i, from, x, i);
  c->val[0] = out;
  return MIL_OK;
}

#define UNARY(name, doc) {#name, MIL_IOS13, "elementwise_unary", k_float_in, 1, 1, infer_like_x, fold_##name, NULL, doc}
#define UNARY_INT(name, doc) \
  {#name, MIL_IOS13, "elementwise_unary", k_with_int_in, 1, 1, infer_like_x, fold_##name, NULL, doc}

const mil_op_def op_defs_elementwise_unary[] = {
    UNARY_INT(abs, "absolute value"),
    UNARY(acos, "inverse cosine"),
    UNARY(asin, "inverse sine"),
    UNARY(atan, "inverse tangent"),
    UNARY(atanh, "inverse hyperbolic tangent"),
    UNARY(ceil, "ceiling"),
    {"clip", MIL_IOS13, "elementwise_unary", k_clip_in, 3, 1, infer_like_x, fold_clip, NULL,
     "min(max(x, alpha), beta)"},
    {"clip", MIL_IOS17, "elementwise_unary", k_clip_in, 3, 1, infer_clip17, fold_clip, NULL,
     "min(max(x, alpha), beta); alpha must be smaller than beta"},
    UNARY(cos, "cosine"),
    UNARY(cosh, "hyperbolic cosine"),
    UNARY(erf, "Gauss error function"),
    UNARY(exp, "e ** x"),
    UNARY_INT(exp2, "2 ** x"),
    UNARY(floor, "floor"),
    {"inverse", MIL_IOS13, "elementwise_unary", k_inverse15_in, 2, 1, infer_like_x, fold_inverse, defaults_inverse,
     "1 / (x + epsilon)"},
    {"inverse", MIL_IOS17, "elementwise_unary", k_inverse17_in, 2, 1, infer_like_x, fold_inverse, defaults_inverse,
     "1 / (x + epsilon); epsilon may have another float dtype"},
    {"log", MIL_IOS13, "elementwise_unary", k_log15_in, 2, 1, infer_like_x, fold_log, defaults_log,
     "natural log of (x + epsilon)"},
    {"log", MIL_IOS17, "elementwise_unary", k_log17_in, 2, 1, infer_like_x, fold_log, defaults_log,
     "natural log of (x + epsilon); epsilon may have another float dtype"},
    {"logical_not", MIL_IOS13, "elementwise_unary", k_bool_in, 1, 1, infer_like_x, fold_logical_not, NULL,
     "NOT x on a bool tensor"},
    UNARY(round, "round half to even"),
    {"rsqrt", MIL_IOS13, "elementwise_unary", k_rsqrt15_in, 2, 1, infer_like_x, fold_rsqrt, defaults_rsqrt,
     "1 / sqrt(x + epsilon)"},
    {"rsqrt", MIL_IOS17, "elementwise_unary", k_rsqrt17_in, 2, 1, infer_like_x, fold_rsqrt, defaults_rsqrt,
     "1 / sqrt(x + epsilon); epsilon may have another float dtype"},
    UNARY_INT(sign, "sign (-1, 0, 1)"),
    UNARY(sin, "sine"),
    UNARY(sinh, "hyperbolic sine"),
    UNARY(sqrt, "square root"),
    UNARY_INT(square, "x * x"),
    UNARY(tan, "tangent"),
    UNARY(tanh, "hyperbolic tangent"),
    {"threshold", MIL_IOS13, "elementwise_unary", k_threshold_in, 2, 1, infer_like_x, fold_threshold, NULL,
     "max(x, alpha)"},
    {"cast", MIL_IOS13, "elementwise_unary", k_cast15_in, 2, 1, infer_cast, fold_cast, NULL,
     "converts x to dtype (fp16, fp32, int32, bool)"},
    {"cast", MIL_IOS17, "elementwise_unary", k_cast17_in, 2, 1, infer_cast, fold_cast, NULL,
     "converts x to dtype (adds int8, uint8, int16, uint16)"},
};
OP_FAMILY_COUNT(elementwise_unary);
