/* ONNX training optimizers (domain ai.onnx.preview.training, opset 1):
 * Adagrad, Momentum (standard / nesterov), Adam, on n tensors at once
 * (inputs R, T, X1..Xn, G1..Gn, then the state tensors; outputs the new
 * X1..Xn, then the new states). Elementwise, as ONNX defines them, with
 * G' = norm_coefficient * X + G:
 *   Adagrad   r = R / (1 + T * decay_factor); H' = H + G'^2;
 *             X' = X - r * G' / (sqrt(H') + epsilon)
 *   Momentum  V' = alpha * V + (T > 0 ? beta : 1) * G';
 *             X' = X - R * V' (nesterov: X - R * (G' + alpha * V'))
 *   Adam      V' = alpha * V + (1 - alpha) G'; H' = beta * H + (1 - beta) G'^2;
 *             r = T > 0 ? R * sqrt(1 - beta^T) / (1 - alpha^T) : R;
 *             X' = (1 - norm_coefficient_post) (X - r * V' / (sqrt(H') + epsilon)) */
#include <string.h>

#include "onnx/import/import_internal.h"

#define TRAIN_DOMAIN "ai.onnx.preview.training"

/* a float scalar (rank 0) from input v */
static mil_var *scalar(onnx_ctx *c, mil_var *v) {
  v = onnx_cast(c, v, MIL_DT_FP32);
  return onnx_rank(v) > 0 ? ONNX_OP(c, "reshape", A("x", v), K("shape", onnx_i32s(c, 0, NULL))) : v;
}

static mil_var *mulk(onnx_ctx *c, mil_var *x, double k) { return ONNX_OP(c, "mul", A("x", x), K("y", onnx_f32(c, k))); }
static mil_var *add(onnx_ctx *c, mil_var *x, mil_var *y) { return ONNX_OP(c, "add", A("x", x), A("y", y)); }
static mil_var *sub(onnx_ctx *c, mil_var *x, mil_var *y) { return ONNX_OP(c, "sub", A("x", x), A("y", y)); }
static mil_var *mul(onnx_ctx *c, mil_var *x, mil_var *y) { return ONNX_OP(c, "mul", A("x", x), A("y", y)); }

/* the tensor count n of a node with `states` state groups; 0 when the
 * inputs / outputs do not fit */
static int32_t groups(onnx_ctx *c, onnx_node *n, int states) {
  int32_t k = n->n_in - 2;
  if (k <= 0 || k % (2 + states) != 0 || n->n_out != k / (2 + states) * (1 + states)) {
    onnx_fail(c, MIL_ERR_INVALID, "expects R, T, then X, G and %d state tensors per optimized tensor, and %d outputs each",
              states, 1 + states);
    return 0;
  }
  for (int32_t i = 0; i < n->n_in; i++)
    if (!onnx_req(c, n, i)) return 0;
  return k / (2 + states);
}

static mil_var *regularized(onnx_ctx *c, onnx_node *n, mil_var *x, mil_var *g) {
  double nc = onnx_attr_f(n, "norm_coefficient", 0);
  return nc != 0 ? add(c, mulk(c, x, nc), g) : g;
}

static mil_status conv_adagrad(onnx_ctx *c, onnx_node *n) {
  int32_t k = groups(c, n, 1);
  if (!k) return MIL_ERR_INVALID;
  mil_var *R = scalar(c, n->in[0]), *T = scalar(c, n->in[1]);
  double eps = onnx_attr_f(n, "epsilon", 1e-6f);
  mil_var *r = ONNX_OP(c, "real_div", A("x", R),
                       A("y", ONNX_OP(c, "add", A("x", mulk(c, T, onnx_attr_f(n, "decay_factor", 0))), K("y", onnx_f32(c, 1)))));
  for (int32_t i = 0; i < k; i++) {
    mil_var *x = n->in[2 + i], *g = regularized(c, n, x, n->in[2 + k + i]), *h = n->in[2 + 2 * k + i];
    mil_var *h2 = add(c, h, mul(c, g, g));
    mil_var *den = ONNX_OP(c, "add", A("x", ONNX_OP(c, "sqrt", A("x", h2))), K("y", onnx_f32(c, eps)));
    mil_var *x2 = sub(c, x, ONNX_OP(c, "real_div", A("x", mul(c, g, r)), A("y", den)));
    mil_status st = onnx_set_out(c, n, i, x2);
    if (st == MIL_OK) st = onnx_set_out(c, n, k + i, h2);
    if (st != MIL_OK) return st;
  }
  return MIL_OK;
}

static mil_status conv_momentum(onnx_ctx *c, onnx_node *n) {
  int32_t k = groups(c, n, 1);
  if (!k) return MIL_ERR_INVALID;
  mil_var *R = scalar(c, n->in[0]), *T = scalar(c, n->in[1]);
  double alpha = onnx_attr_f(n, "alpha", 0), beta = onnx_attr_f(n, "beta", 0);
  const char *mode = onnx_attr_s(c, n, "mode", "standard");
  bool nesterov = strcmp(mode, "nesterov") == 0;
  if (!nesterov && strcmp(mode, "standard") != 0) return onnx_fail(c, MIL_ERR_INVALID, "mode must be standard or nesterov, got '%s'", mode);
  mil_var *pos = ONNX_OP(c, "greater", A("x", T), K("y", onnx_f32(c, 0)));
  mil_var *b = ONNX_OP(c, "select", A("cond", pos), K("a", onnx_f32(c, beta)), K("b", onnx_f32(c, 1)));
  for (int32_t i = 0; i < k; i++) {
    mil_var *x = n->in[2 + i], *g = regularized(c, n, x, n->in[2 + k + i]), *v = n->in[2 + 2 * k + i];
    mil_var *v2 = add(c, mulk(c, v, alpha), mul(c, g, b));
    mil_var *step = nesterov ? add(c, g, mulk(c, v2, alpha)) : v2;
    mil_status st = onnx_set_out(c, n, i, sub(c, x, mul(c, step, R)));
    if (st == MIL_OK) st = onnx_set_out(c, n, k + i, v2);
    if (st != MIL_OK) return st;
  }
  return MIL_OK;
}

static mil_status conv_adam(onnx_ctx *c, onnx_node *n) {
  int32_t k = groups(c, n, 2);
  if (!k) return MIL_ERR_INVALID;
  mil_var *R = scalar(c, n->in[0]), *T = scalar(c, n->in[1]);
  double alpha = onnx_attr_f(n, "alpha", 0.9f), beta = onnx_attr_f(n, "beta", 0.999f), eps = onnx_attr_f(n, "epsilon", 1e-6f);
  double post = onnx_attr_f(n, "norm_coefficient_post", 0);
  /* r = T > 0 ? R * sqrt(1 - beta^T) / (1 - alpha^T) : R */
  mil_var *bt = ONNX_OP(c, "pow", K("x", onnx_f32(c, beta)), A("y", T)), *at = ONNX_OP(c, "pow", K("x", onnx_f32(c, alpha)), A("y", T));
  mil_var *num = ONNX_OP(c, "sqrt", A("x", ONNX_OP(c, "sub", K("x", onnx_f32(c, 1)), A("y", bt))));
  mil_var *den = ONNX_OP(c, "sub", K("x", onnx_f32(c, 1)), A("y", at));
  mil_var *pos = ONNX_OP(c, "greater", A("x", T), K("y", onnx_f32(c, 0)));
  mil_var *safe = ONNX_OP(c, "select", A("cond", pos), A("a", den), K("b", onnx_f32(c, 1)));
  mil_var *ra = ONNX_OP(c, "real_div", A("x", mul(c, R, num)), A("y", safe));
  mil_var *r = ONNX_OP(c, "select", A("cond", pos), A("a", ra), A("b", R));
  for (int32_t i = 0; i < k; i++) {
    mil_var *x = n->in[2 + i], *g = regularized(c, n, x, n->in[2 + k + i]), *v = n->in[2 + 2 * k + i], *h = n->in[2 + 3 * k + i];
    mil_var *v2 = add(c, mulk(c, v, alpha), mulk(c, g, 1 - alpha));
    mil_var *h2 = add(c, mulk(c, h, beta), mulk(c, mul(c, g, g), 1 - beta));
    mil_var *hs = ONNX_OP(c, "add", A("x", ONNX_OP(c, "sqrt", A("x", h2))), K("y", onnx_f32(c, eps)));
    mil_var *x2 = sub(c, x, mul(c, r, ONNX_OP(c, "real_div", A("x", v2), A("y", hs))));
    if (post != 0) x2 = mulk(c, x2, 1 - post);
    mil_status st = onnx_set_out(c, n, i, x2);
    if (st == MIL_OK) st = onnx_set_out(c, n, k + i, v2);
    if (st == MIL_OK) st = onnx_set_out(c, n, 2 * k + i, h2);
    if (st != MIL_OK) return st;
  }
  return MIL_OK;
}

const onnx_op_entry onnx_ops_training[] = {
    {"Adagrad", TRAIN_DOMAIN, 1, 0, conv_adagrad, "mul, add, real_div, sqrt, sub"},
    {"Momentum", TRAIN_DOMAIN, 1, 0, conv_momentum, "greater, select, mul, add, sub"},
    {"Adam", TRAIN_DOMAIN, 1, 0, conv_adam, "pow, sqrt, sub, greater, select, real_div, mul, add"},
    {NULL, NULL, 0, 0, NULL, NULL},
};
