/* ONNX Runtime's com.microsoft fused activations and matmul, as its
 * transformer optimizer writes them (docs/ContribOperators.md):
 *
 *   Gelu       x * 0.5 * (1 + erf(x / sqrt(2)))          gelu EXACT
 *   BiasGelu   Gelu(A + B)                                 add, gelu EXACT
 *   FastGelu   tanh approximation of Gelu(X + bias)        add, gelu TANH_APPROXIMATION
 *   QuickGelu  x * sigmoid(alpha * x), alpha 1.702         gelu SIGMOID_APPROXIMATION
 *              (other alphas: mul, sigmoid, mul)
 *   BiasAdd    X + bias + skip                             add, add
 *   FusedMatMul alpha * op(A) @ op(B): transA / transB swap the last two
 *              axes, transBatchA / transBatchB move axis 0 in front of the
 *              last one first                                transpose, matmul, mul
 *
 * The gelu modes are those coremltools' torch frontend gives F.gelu
 * (approximate "none" / "tanh"); MIL's SIGMOID_APPROXIMATION is
 * x * sigmoid(1.702 x), QuickGelu's default. */
#include <math.h>
#include <string.h>

#include "onnx/import/import_internal.h"

static mil_var *gelu(onnx_ctx *c, mil_var *x, const char *mode) {
  return ONNX_OP(c, "gelu", A("x", x), K("mode", onnx_str(c, mode)));
}

static mil_status conv_gelu(onnx_ctx *c, onnx_node *n) {
  mil_var *x = onnx_req(c, n, 0);
  if (!x) return MIL_ERR_INVALID;
  return onnx_set_out(c, n, 0, gelu(c, x, "EXACT"));
}

static mil_status conv_bias_gelu(onnx_ctx *c, onnx_node *n) {
  mil_var *x = onnx_req(c, n, 0), *b = onnx_req(c, n, 1);
  if (!x || !b) return MIL_ERR_INVALID;
  return onnx_set_out(c, n, 0, gelu(c, ONNX_OP(c, "add", A("x", x), A("y", b)), "EXACT"));
}

static mil_status conv_fast_gelu(onnx_ctx *c, onnx_node *n) {
  mil_var *x = onnx_req(c, n, 0), *b = onnx_in(n, 1);
  if (!x) return MIL_ERR_INVALID;
  if (b) x = ONNX_OP(c, "add", A("x", x), A("y", b));
  return onnx_set_out(c, n, 0, gelu(c, x, "TANH_APPROXIMATION"));
}

static mil_status conv_quick_gelu(onnx_ctx *c, onnx_node *n) {
  mil_var *x = onnx_req(c, n, 0);
  if (!x) return MIL_ERR_INVALID;
  double alpha = onnx_attr_f(n, "alpha", 1.702f);
  if (fabs(alpha - 1.702) < 1e-6) return onnx_set_out(c, n, 0, gelu(c, x, "SIGMOID_APPROXIMATION"));
  mil_var *s = ONNX_OP(c, "sigmoid", A("x", ONNX_OP(c, "mul", A("x", x), K("y", onnx_fscalar(c, onnx_dtype(x), alpha)))));
  return onnx_set_out(c, n, 0, ONNX_OP(c, "mul", A("x", x), A("y", s)));
}

static mil_status conv_bias_add(onnx_ctx *c, onnx_node *n) {
  mil_var *x = onnx_req(c, n, 0), *b = onnx_req(c, n, 1), *s = onnx_req(c, n, 2);
  if (!x || !b || !s) return MIL_ERR_INVALID;
  mil_var *r = ONNX_OP(c, "add", A("x", x), A("y", b));
  return onnx_set_out(c, n, 0, ONNX_OP(c, "add", A("x", r), A("y", s)));
}

/* x with axis 0 moved in front of the last axis: (d0, d1 .. dr-2, dr-1) ->
 * (d1 .. dr-2, d0, dr-1), the batch transpose of FusedMatMul. */
static mil_var *batch_transpose(onnx_ctx *c, mil_var *x) {
  int32_t r = onnx_rank(x);
  if (r < 3) return x;
  int64_t perm[MIL_INTERP_MAX_RANK_ONNX];
  for (int32_t i = 0; i < r - 2; i++) perm[i] = i + 1;
  perm[r - 2] = 0;
  perm[r - 1] = r - 1;
  return ONNX_OP(c, "transpose", A("x", x), K("perm", onnx_i32s(c, r, perm)));
}

static mil_status conv_fused_matmul(onnx_ctx *c, onnx_node *n) {
  mil_var *a = onnx_req(c, n, 0), *b = onnx_req(c, n, 1);
  if (!a || !b) return MIL_ERR_INVALID;
  int32_t ra = onnx_rank(a), rb = onnx_rank(b);
  if (ra < 1 || rb < 1 || ra > MIL_INTERP_MAX_RANK_ONNX || rb > MIL_INTERP_MAX_RANK_ONNX)
    return ONNX_UNSUP(c, "inputs A and B need a known rank of 1 to %d (found %d and %d)", MIL_INTERP_MAX_RANK_ONNX, ra, rb);
  bool ta = onnx_attr_i(n, "transA", 0) != 0, tb = onnx_attr_i(n, "transB", 0) != 0;
  if (onnx_attr_i(n, "transBatchA", 0)) a = batch_transpose(c, a);
  if (onnx_attr_i(n, "transBatchB", 0)) b = batch_transpose(c, b);
  if ((ta && ra < 2) || (tb && rb < 2)) return onnx_fail(c, MIL_ERR_INVALID, "transA / transB on a rank-1 input");
  mil_var *y = ONNX_OP(c, "matmul", A("x", a), A("y", b), K("transpose_x", onnx_bool(c, ta)),
                       K("transpose_y", onnx_bool(c, tb)));
  double alpha = onnx_attr_f(n, "alpha", 1.0f);
  if (y && alpha != 1.0) y = ONNX_OP(c, "mul", A("x", y), K("y", onnx_fscalar(c, onnx_dtype(y), alpha)));
  return onnx_set_out(c, n, 0, y);
}

#define MS "com.microsoft"
const onnx_op_entry onnx_ops_contrib_activation[] = {
    {"Gelu", MS, 1, 1, conv_gelu, "gelu"},
    {"BiasGelu", MS, 1, 1, conv_bias_gelu, "add, gelu"},
    {"FastGelu", MS, 1, 1, conv_fast_gelu, "add, gelu (TANH_APPROXIMATION)"},
    {"QuickGelu", MS, 1, 1, conv_quick_gelu, "gelu (SIGMOID_APPROXIMATION) / mul, sigmoid"},
    {"BiasAdd", MS, 1, 1, conv_bias_add, "add"},
    {"FusedMatMul", MS, 1, 1, conv_fused_matmul, "transpose, matmul, mul"},
    {NULL, NULL, 0, 0, NULL, NULL},
};
