/* ONNX activations: Relu ... Gelu, Softmax / LogSoftmax / Hardmax (with the
 * pre-opset-13 "flatten to 2-D at axis" semantics), Clip, PRelu, Shrink.
 * MIL ops as coremltools' torch frontend emits them (relu, sigmoid,
 * leaky_relu, elu, sigmoid_hard, softplus, softsign, gelu, softmax, clip). */
#include <math.h>
#include <string.h>

#include "onnx/import/import_internal.h"

static mil_status conv_simple(onnx_ctx *c, onnx_node *n) {
  mil_var *x = onnx_req(c, n, 0);
  if (!x) return MIL_ERR_INVALID;
  return onnx_set_out(c, n, 0, ONNX_OP(c, n->entry->mil_ops, A("x", x)));
}

static mil_status conv_leaky_relu(onnx_ctx *c, onnx_node *n) {
  mil_var *x = onnx_req(c, n, 0);
  if (!x) return MIL_ERR_INVALID;
  mil_dtype dt = onnx_dtype(x);
  return onnx_set_out(c, n, 0,
                      ONNX_OP(c, "leaky_relu", A("x", x), K("alpha", onnx_fscalar(c, dt, onnx_attr_f(n, "alpha", 0.01f)))));
}

static mil_status conv_elu(onnx_ctx *c, onnx_node *n) {
  mil_var *x = onnx_req(c, n, 0);
  if (!x) return MIL_ERR_INVALID;
  mil_dtype dt = onnx_dtype(x);
  return onnx_set_out(c, n, 0, ONNX_OP(c, "elu", A("x", x), K("alpha", onnx_fscalar(c, dt, onnx_attr_f(n, "alpha", 1)))));
}

/* Selu: gamma * elu(x, alpha) (coremltools' torch selu). */
static mil_status conv_selu(onnx_ctx *c, onnx_node *n) {
  mil_var *x = onnx_req(c, n, 0);
  if (!x) return MIL_ERR_INVALID;
  mil_dtype dt = onnx_dtype(x);
  mil_var *e = ONNX_OP(c, "elu", A("x", x), K("alpha", onnx_fscalar(c, dt, onnx_attr_f(n, "alpha", 1.67326319217681884765625f))));
  return onnx_set_out(c, n, 0,
                      ONNX_OP(c, "mul", A("x", e), K("y", onnx_fscalar(c, dt, onnx_attr_f(n, "gamma", 1.05070102214813232421875f)))));
}

/* Celu: alpha * elu(x / alpha, 1). */
static mil_status conv_celu(onnx_ctx *c, onnx_node *n) {
  mil_var *x = onnx_req(c, n, 0);
  if (!x) return MIL_ERR_INVALID;
  mil_dtype dt = onnx_dtype(x);
  double a = onnx_attr_f(n, "alpha", 1);
  mil_var *s = ONNX_OP(c, "real_div", A("x", x), K("y", onnx_fscalar(c, dt, a)));
  mil_var *e = ONNX_OP(c, "elu", A("x", s), K("alpha", onnx_fscalar(c, dt, 1)));
  return onnx_set_out(c, n, 0, ONNX_OP(c, "mul", A("x", e), K("y", onnx_fscalar(c, dt, a))));
}

static mil_status conv_hard_sigmoid(onnx_ctx *c, onnx_node *n) {
  mil_var *x = onnx_req(c, n, 0);
  if (!x) return MIL_ERR_INVALID;
  mil_dtype dt = onnx_dtype(x);
  return onnx_set_out(c, n, 0,
                      ONNX_OP(c, "sigmoid_hard", A("x", x), K("alpha", onnx_fscalar(c, dt, onnx_attr_f(n, "alpha", 0.2f))),
                              K("beta", onnx_fscalar(c, dt, onnx_attr_f(n, "beta", 0.5f)))));
}

/* HardSwish: x * sigmoid_hard(x, 1/6, 0.5) (coremltools' torch hardswish). */
static mil_status conv_hard_swish(onnx_ctx *c, onnx_node *n) {
  mil_var *x = onnx_req(c, n, 0);
  if (!x) return MIL_ERR_INVALID;
  mil_dtype dt = onnx_dtype(x);
  mil_var *h = ONNX_OP(c, "sigmoid_hard", A("x", x), K("alpha", onnx_fscalar(c, dt, 1.0 / 6)),
                       K("beta", onnx_fscalar(c, dt, 0.5)));
  return onnx_set_out(c, n, 0, ONNX_OP(c, "mul", A("x", x), A("y", h)));
}

/* Mish: x * tanh(softplus(x)). */
static mil_status conv_mish(onnx_ctx *c, onnx_node *n) {
  mil_var *x = onnx_req(c, n, 0);
  if (!x) return MIL_ERR_INVALID;
  mil_var *t = ONNX_OP(c, "tanh", A("x", ONNX_OP(c, "softplus", A("x", x))));
  return onnx_set_out(c, n, 0, ONNX_OP(c, "mul", A("x", x), A("y", t)));
}

static mil_status conv_gelu(onnx_ctx *c, onnx_node *n) {
  mil_var *x = onnx_req(c, n, 0);
  if (!x) return MIL_ERR_INVALID;
  const char *approx = onnx_attr_s(c, n, "approximate", "none");
  const char *mode = strcmp(approx, "tanh") == 0 ? "TANH_APPROXIMATION" : "EXACT";
  return onnx_set_out(c, n, 0, ONNX_OP(c, "gelu", A("x", x), K("mode", onnx_str(c, mode))));
}

/* PRelu: relu(x) + slope * min(x, 0), broadcasting slope as ONNX does. */
static mil_status conv_prelu(onnx_ctx *c, onnx_node *n) {
  mil_var *x = onnx_req(c, n, 0), *s = onnx_req(c, n, 1);
  if (!x || !s) return MIL_ERR_INVALID;
  int32_t rx = onnx_rank(x);
  if (onnx_rank(s) == 1 && rx > 2 && s->type->dims[0].size > 1 && s->type->dims[0].size == x->type->dims[1].size &&
      (n->opset < 7 || x->type->dims[rx - 1].size != s->type->dims[0].size)) {
    /* a per-channel slope (C): aligned with axis 1 */
    int64_t axes[MIL_INTERP_MAX_RANK_ONNX];
    for (int32_t i = 0; i < rx - 2; i++) axes[i] = i + 1;
    s = ONNX_OP(c, "expand_dims", A("x", s), K("axes", onnx_i32s(c, rx - 2, axes)));
  }
  mil_var *neg = ONNX_OP(c, "minimum", A("x", x), K("y", onnx_fscalar(c, onnx_dtype(x), 0)));
  mil_var *r = ONNX_OP(c, "add", A("x", ONNX_OP(c, "relu", A("x", x))), A("y", ONNX_OP(c, "mul", A("x", neg), A("y", s))));
  return onnx_set_out(c, n, 0, r);
}

/* ThresholdedRelu: x where x > alpha, else 0. */
static mil_status conv_thresholded_relu(onnx_ctx *c, onnx_node *n) {
  mil_var *x = onnx_req(c, n, 0);
  if (!x) return MIL_ERR_INVALID;
  mil_dtype dt = onnx_dtype(x);
  mil_var *m = ONNX_OP(c, "greater", A("x", x), K("y", onnx_fscalar(c, dt, onnx_attr_f(n, "alpha", 1))));
  return onnx_set_out(c, n, 0, ONNX_OP(c, "select", A("cond", m), A("a", x), K("b", onnx_fscalar(c, dt, 0))));
}

/* Shrink: x - bias where x > lambd, x + bias where x < -lambd, else 0. */
static mil_status conv_shrink(onnx_ctx *c, onnx_node *n) {
  mil_var *x = onnx_req(c, n, 0);
  if (!x) return MIL_ERR_INVALID;
  mil_dtype dt = onnx_dtype(x);
  mil_var *xf = onnx_cast(c, x, MIL_DT_FP32);
  double l = onnx_attr_f(n, "lambd", 0.5f), b = onnx_attr_f(n, "bias", 0);
  mil_var *hi = ONNX_OP(c, "greater", A("x", xf), K("y", onnx_f32(c, l)));
  mil_var *lo = ONNX_OP(c, "less", A("x", xf), K("y", onnx_f32(c, -l)));
  mil_var *sub = ONNX_OP(c, "sub", A("x", xf), K("y", onnx_f32(c, b)));
  mil_var *add = ONNX_OP(c, "add", A("x", xf), K("y", onnx_f32(c, b)));
  mil_var *r = ONNX_OP(c, "select", A("cond", lo), A("a", add), K("b", onnx_f32(c, 0)));
  r = ONNX_OP(c, "select", A("cond", hi), A("a", sub), A("b", r));
  return onnx_set_out(c, n, 0, onnx_cast(c, r, dt));
}

/* Clip: attributes min/max before opset 11, optional inputs from 11.
 * Float with const bounds: clip (both bounds given, else maximum /
 * minimum, as coremltools' torch clamp); ints: maximum / minimum. */
static mil_status conv_clip(onnx_ctx *c, onnx_node *n) {
  mil_var *x = onnx_req(c, n, 0);
  if (!x) return MIL_ERR_INVALID;
  mil_dtype dt = onnx_dtype(x);
  mil_var *lo = NULL, *hi = NULL;
  if (n->opset < 11) {
    if (onnx_attr(n, "min")) lo = onnx_const(c, onnx_fscalar(c, dt, onnx_attr_f(n, "min", 0)));
    if (onnx_attr(n, "max")) hi = onnx_const(c, onnx_fscalar(c, dt, onnx_attr_f(n, "max", 0)));
  } else {
    lo = onnx_in(n, 1);
    hi = onnx_in(n, 2);
  }
  mil_var *r;
  if (mil_dtype_is_float(dt) && lo && hi && lo->val && hi->val)
    r = ONNX_OP(c, "clip", A("x", x), A("alpha", lo), A("beta", hi));
  else {
    r = x;
    if (lo) r = ONNX_OP(c, "maximum", A("x", r), A("y", lo));
    if (hi && r) r = ONNX_OP(c, "minimum", A("x", r), A("y", hi));
    if (r == x) r = ONNX_OP(c, "identity", A("x", x));
  }
  return onnx_set_out(c, n, 0, r);
}

/* x seen as 2-D [prod(dims < axis), prod(dims >= axis)] (the softmax
 * family before opset 13); NULL plus *shape when already so. */
static mil_var *flatten2d(onnx_ctx *c, mil_var *x, int64_t axis, mil_var **shape) {
  *shape = onnx_shape_of(c, x);
  int64_t s[2] = {axis == 0 ? 1 : 0, -1};
  if (axis > 0) {
    /* [prod(shape[:axis]), -1] */
    mil_var *head = ONNX_OP(c, "slice_by_index", A("x", *shape), K("begin", onnx_i32s(c, 1, (int64_t[]){0})),
                            K("end", onnx_i32s(c, 1, &axis)));
    mil_var *p = ONNX_OP(c, "reduce_prod", A("x", head), K("axes", onnx_i32s(c, 1, (int64_t[]){0})),
                         K("keep_dims", onnx_bool(c, true)));
    mil_var *parts[2] = {p, onnx_const(c, onnx_i32s(c, 1, (int64_t[]){-1}))};
    mil_var *shp = ONNX_OP(c, "concat", AT("values", parts, 2), K("axis", onnx_i32(c, 0)));
    return ONNX_OP(c, "reshape", A("x", x), A("shape", shp));
  }
  return ONNX_OP(c, "reshape", A("x", x), K("shape", onnx_i32s(c, 2, s)));
}

static mil_var *softmax_like(onnx_ctx *c, onnx_node *n, mil_var *x, int64_t axis) {
  if (strcmp(n->op_type, "Softmax") == 0) return ONNX_OP(c, "softmax", A("x", x), K("axis", onnx_i32(c, axis)));
  if (strcmp(n->op_type, "LogSoftmax") == 0) {
    /* (x - max) - log(sum(exp(x - max))): stable for large inputs */
    mil_var *m = ONNX_OP(c, "reduce_max", A("x", x), K("axes", onnx_i32s(c, 1, &axis)), K("keep_dims", onnx_bool(c, true)));
    mil_var *s = ONNX_OP(c, "sub", A("x", x), A("y", m));
    mil_var *lse = ONNX_OP(c, "log", A("x", ONNX_OP(c, "reduce_sum", A("x", ONNX_OP(c, "exp", A("x", s))),
                                                     K("axes", onnx_i32s(c, 1, &axis)), K("keep_dims", onnx_bool(c, true)))));
    return ONNX_OP(c, "sub", A("x", s), A("y", lse));
  }
  /* Hardmax: one_hot of the argmax */
  mil_var *am = ONNX_OP(c, "reduce_argmax", A("x", x), K("axis", onnx_i32(c, axis)));
  mil_var *sh = onnx_shape_of(c, x);
  mil_var *depth = ONNX_OP(c, "gather", A("x", sh), K("indices", onnx_i32(c, axis)), K("axis", onnx_i32(c, 0)));
  mil_dtype dt = onnx_dtype(x);
  return ONNX_OP(c, "one_hot", A("indices", am), A("one_hot_vector_size", depth), K("axis", onnx_i32(c, axis)),
                 K("on_value", onnx_fscalar(c, dt, 1)), K("off_value", onnx_fscalar(c, dt, 0)));
}

static mil_status conv_softmax(onnx_ctx *c, onnx_node *n) {
  mil_var *x = onnx_req(c, n, 0);
  if (!x) return MIL_ERR_INVALID;
  int32_t rank = onnx_rank(x);
  int64_t axis = onnx_attr_i(n, "axis", n->opset >= 13 ? -1 : 1);
  if (rank < 0) return ONNX_UNSUP(c, "input of unknown rank");
  if (!onnx_axis(&axis, rank)) return onnx_fail(c, MIL_ERR_INVALID, "axis out of range for rank %d", (int)rank);
  if (n->opset >= 13 || axis == rank - 1) return onnx_set_out(c, n, 0, softmax_like(c, n, x, axis));
  mil_var *shape = NULL;
  mil_var *x2 = flatten2d(c, x, axis, &shape);
  if (!x2) return MIL_ERR_TYPE;
  mil_var *r = softmax_like(c, n, x2, 1);
  return onnx_set_out(c, n, 0, r ? ONNX_OP(c, "reshape", A("x", r), A("shape", shape)) : NULL);
}

const onnx_op_entry onnx_ops_activation[] = {
    {"Relu", "", 1, 0, conv_simple, "relu"},
    {"Sigmoid", "", 1, 0, conv_simple, "sigmoid"},
    {"Tanh", "", 1, 0, conv_simple, "tanh"},
    {"Softplus", "", 1, 0, conv_simple, "softplus"},
    {"Softsign", "", 1, 0, conv_simple, "softsign"},
    {"LeakyRelu", "", 1, 0, conv_leaky_relu, "leaky_relu"},
    {"Elu", "", 1, 0, conv_elu, "elu"},
    {"Selu", "", 1, 0, conv_selu, "elu, mul"},
    {"Celu", "", 12, 0, conv_celu, "real_div, elu, mul"},
    {"HardSigmoid", "", 1, 0, conv_hard_sigmoid, "sigmoid_hard"},
    {"HardSwish", "", 14, 0, conv_hard_swish, "sigmoid_hard, mul"},
    {"Mish", "", 18, 0, conv_mish, "softplus, tanh, mul"},
    {"Gelu", "", 20, 0, conv_gelu, "gelu"},
    {"PRelu", "", 1, 0, conv_prelu, "relu, minimum, mul, add"},
    {"ThresholdedRelu", "", 10, 0, conv_thresholded_relu, "greater, select"},
    {"Shrink", "", 9, 0, conv_shrink, "greater, less, select"},
    {"Clip", "", 1, 0, conv_clip, "clip"},
    {"Softmax", "", 1, 0, conv_softmax, "softmax"},
    {"LogSoftmax", "", 1, 0, conv_softmax, "reduce_max, sub, exp, reduce_sum, log"},
    {"Hardmax", "", 1, 0, conv_softmax, "reduce_argmax, one_hot"},
    {NULL, NULL, 0, 0, NULL, NULL},
};
