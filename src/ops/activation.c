/* Op family "activation" (coremltools ops/defs/iOS15/activation.py and
 * iOS17/activation.py): relu and friends, sigmoid variants, gelu, softmax,
 * softplus, prelu. The output always has x's type.
 *
 *   %y: (1, 8, 4, 4, fp32)(Tensor) = leaky_relu(x=%x, alpha=0.01, name="y")
 *   %p: (1, 8, fp32)(Tensor) = softmax(x=%x, axis=-1, name="p")
 *
 * The iOS17 variants of the ops with alpha/beta parameters let those have
 * their own float dtype (type domain U) instead of x's. */
#include <math.h>
#include <string.h>

#include "ops/fold_internal.h"
#include "ops/ops_defaults.h"
#include "ops/ops_internal.h"

static const mil_input_spec k_x_in[] = {
    IN_SPEC("x", MIL_IK_TENSOR, MIL_DTS_FLOAT, "T", 0, NULL),
};
static const mil_input_spec k_alpha15_in[] = {
    IN_SPEC("x", MIL_IK_TENSOR, MIL_DTS_FLOAT, "T", 0, NULL),
    IN_SPEC("alpha", MIL_IK_TENSOR, MIL_DTS_FLOAT, "T", MIL_IF_CONST, NULL),
};
static const mil_input_spec k_alpha_beta15_in[] = {
    IN_SPEC("x", MIL_IK_TENSOR, MIL_DTS_FLOAT, "T", 0, NULL),
    IN_SPEC("alpha", MIL_IK_TENSOR, MIL_DTS_FLOAT, "T", MIL_IF_CONST, NULL),
    IN_SPEC("beta", MIL_IK_TENSOR, MIL_DTS_FLOAT, "T", MIL_IF_CONST, NULL),
};
static const mil_input_spec k_alpha17_in[] = {
    IN_SPEC("x", MIL_IK_TENSOR, MIL_DTS_FLOAT, "T", 0, NULL),
    IN_SPEC("alpha", MIL_IK_TENSOR, MIL_DTS_FLOAT, "U", MIL_IF_CONST, NULL),
};
static const mil_input_spec k_alpha_beta17_in[] = {
    IN_SPEC("x", MIL_IK_TENSOR, MIL_DTS_FLOAT, "T", 0, NULL),
    IN_SPEC("alpha", MIL_IK_TENSOR, MIL_DTS_FLOAT, "U", MIL_IF_CONST, NULL),
    IN_SPEC("beta", MIL_IK_TENSOR, MIL_DTS_FLOAT, "U", MIL_IF_CONST, NULL),
};
static const mil_input_spec k_gelu_in[] = {
    IN_SPEC("x", MIL_IK_TENSOR, MIL_DTS_FLOAT, "T", 0, NULL),
    IN_SPEC("mode", MIL_IK_TENSOR, MIL_DTS_STRING, NULL, MIL_IF_CONST | MIL_IF_OPTIONAL, "\"EXACT\""),
};
static const mil_input_spec k_softmax_in[] = {
    IN_SPEC("x", MIL_IK_TENSOR, MIL_DTS_FLOAT, "T", 0, NULL),
    IN_SPEC("axis", MIL_IK_TENSOR, MIL_DTS_INT32, NULL, MIL_IF_CONST | MIL_IF_OPTIONAL, "-1"),
};

/* ---- type inference ---- */

static mil_status infer_like_x(mil_infer_ctx *c) {
  op_set_out(c, 0, op_type(c, "x"));
  return MIL_OK;
}

static mil_status infer_gelu(mil_infer_ctx *c) {
  const char *mode = op_str(c, "mode", "EXACT");
  if (strcmp(mode, "EXACT") != 0 && strcmp(mode, "TANH_APPROXIMATION") != 0 &&
      strcmp(mode, "SIGMOID_APPROXIMATION") != 0)
    return op_fail(c, "input 'mode' must be \"EXACT\", \"TANH_APPROXIMATION\" or \"SIGMOID_APPROXIMATION\", got \"%s\"",
                   mode);
  return infer_like_x(c);
}

/* alpha (or beta) of prelu / softplus_parametric: a known rank-1 value
 * whose length is x's channel dim (axis 1). */
static mil_status check_channel_param(mil_infer_ctx *c, const char *name, const mil_type *x, const mil_value **out) {
  const mil_value *v = op_val(c, name);
  const mil_type *t = op_type(c, name);
  if (!v || v->kind != MIL_VAL_TENSOR || !t) return op_fail(c, "input '%s' must be a known tensor", name);
  if (t->rank != 1) return op_fail(c, "input '%s' must be rank 1, got %s", name, op_tstr(c, t));
  if (x->rank < 2 || x->dims[1].size < 0 || x->dims[1].size != t->dims[0].size)
    return op_fail(c, "input '%s' must have one value per channel of x (dim 1 of %s), got %lld values", name,
                   op_tstr(c, x), (long long)t->dims[0].size);
  *out = v;
  return MIL_OK;
}

static mil_status infer_prelu(mil_infer_ctx *c) {
  const mil_type *x = op_type(c, "x");
  if (x->rank < 3 || x->rank > 5) return op_fail(c, "input 'x' must be rank 3, 4 or 5, got %s", op_tstr(c, x));
  const mil_value *a;
  mil_status st = check_channel_param(c, "alpha", x, &a);
  if (st != MIL_OK) return st;
  if (x->rank == 3 || x->rank == 5) {
    double a0 = mil_value_get_f64(a, 0);
    for (int64_t i = 1; i < a->numel; i++)
      if (fabs(mil_value_get_f64(a, i) - a0) > 1e-5)
        return op_fail(c, "input 'alpha' must hold one repeated value for a rank %d x, got different values at 0 "
                          "and %lld",
                       x->rank, (long long)i);
  }
  return infer_like_x(c);
}

static mil_status infer_softplus_parametric(mil_infer_ctx *c) {
  const mil_type *x = op_type(c, "x");
  if (x->rank < 3) return op_fail(c, "input 'x' must be at least rank 3, got %s", op_tstr(c, x));
  const mil_value *v;
  mil_status st = check_channel_param(c, "alpha", x, &v);
  if (st == MIL_OK) st = check_channel_param(c, "beta", x, &v);
  return st != MIL_OK ? st : infer_like_x(c);
}

/* ---- defaults ---- */

static mil_status defaults_gelu(mil_infer_ctx *c) { return op_add_default_str(c, "mode", "EXACT"); }
static mil_status defaults_softmax(mil_infer_ctx *c) { return op_add_default_int(c, "axis", -1); }

/* ---- value inference ---- */

typedef enum aop {
  A_CLAMPED_RELU, A_ELU, A_LEAKY_RELU, A_LINEAR, A_SCALED_TANH, A_SIGMOID_HARD, A_THRESHOLDED_RELU, A_RELU,
  A_RELU6, A_SIGMOID, A_SOFTPLUS, A_SOFTSIGN, A_GELU_EXACT, A_GELU_TANH, A_GELU_SIGMOID, A_PRELU, A_SOFTPLUS_PARAM
} aop;

static double fmax_nan(double a, double b) { return isnan(a) || isnan(b) ? NAN : (a > b ? a : b); }
static double fmin_nan(double a, double b) { return isnan(a) || isnan(b) ? NAN : (a < b ? a : b); }

/* One element; `r` rounds each intermediate like numpy does for dtype dt. */
static double act(aop k, mil_dtype dt, double x, double a, double b) {
#define R(v) fold_rnd(dt, (v))
  switch (k) {
  case A_CLAMPED_RELU: {
    double p = fmin_nan(fmax_nan(x, 0), b);
    double n = fmin_nan(R(fmin_nan(x, 0) * a), b);
    return R(p + n);
  }
  case A_ELU: return x < 0 ? R(a * R(R(exp(x)) - 1)) : x;
  case A_LEAKY_RELU: return x < 0 ? R(x * a) : x;
  case A_LINEAR: return R(R(a * x) + b);
  case A_SCALED_TANH: return R(a * R(tanh(R(x * b))));
  case A_SIGMOID_HARD: return fmin_nan(fmax_nan(R(R(a * x) + b), 0), 1);
  case A_THRESHOLDED_RELU: return x < a ? 0 : x;
  case A_RELU: return fmax_nan(x, 0);
  case A_RELU6: return fmin_nan(fmax_nan(x, 0), 6);
  case A_SIGMOID: return R(1 / R(1 + R(exp(-x))));
  case A_SOFTPLUS: return R(R(log(R(1 + R(exp(-fabs(x)))))) + fmax_nan(x, 0));
  case A_SOFTSIGN: return R(x / R(1 + fabs(x)));
  case A_GELU_EXACT: /* np.vectorize over Python floats: float64 throughout, rounded once on store */
    return 0.5 * x * (1 + erf(x / sqrt(2.0)));
  case A_GELU_TANH: {
    double t = R(sqrt(2 / M_PI) * R(x + R(0.044715 * R(pow(x, 3)))));
    return R(R(0.5 * x) * R(1 + R(tanh(t))));
  }
  case A_GELU_SIGMOID: return R(x * R(1 / R(1 + R(exp(-R(1.702 * x))))));
  case A_PRELU: return R(fmax_nan(x, 0) + R(fmin_nan(x, 0) * a));
  case A_SOFTPLUS_PARAM: return R(a * R(log(R(1 + R(exp(R(x * b)))))));
  }
#undef R
  return x;
}

static mil_status fold_act(mil_infer_ctx *c, aop k) {
  const mil_value *x = fold_tensor(c, "x");
  if (!x) return MIL_OK;
  const mil_value *a = NULL, *b = NULL;
  if (op_has(c, "alpha") && !(a = fold_tensor(c, "alpha"))) return MIL_OK;
  if (op_has(c, "beta") && !(b = fold_tensor(c, "beta"))) return MIL_OK;
  mil_value *out = fold_out(c, 0);
  if (!out) return MIL_OK;
  int64_t shape[OP_MAX_RANK];
  int32_t rank = fold_shape(out, shape);
  bool per_channel = k == A_PRELU || k == A_SOFTPLUS_PARAM;
  const mil_value *ins[3] = {x, per_channel ? NULL : a, per_channel ? NULL : b};
  fold_iter it;
  if (!fold_iter_init(&it, rank, shape, 3, ins)) return MIL_OK;
  mil_dtype dt = x->type->dtype;
  for (int64_t i = 0; i < out->numel; i++, fold_iter_next(&it)) {
    int64_t ia = it.off[1], ib = it.off[2];
    if (per_channel) ia = ib = rank >= 2 ? it.idx[1] : 0;
    double av = a ? fold_rnd(dt, mil_value_get_f64(a, ia)) : 0;
    double bv = b ? fold_rnd(dt, mil_value_get_f64(b, ib)) : 0;
    mil_value_set_f64(out, i, act(k, dt, mil_value_get_f64(x, it.off[0]), av, bv));
  }
  c->val[0] = out;
  return MIL_OK;
}

#define FOLD_FN(name, kind) \
  static mil_status fold_##name(mil_infer_ctx *c) { return fold_act(c, kind); }
FOLD_FN(clamped_relu, A_CLAMPED_RELU)
FOLD_FN(elu, A_ELU)
FOLD_FN(leaky_relu, A_LEAKY_RELU)
FOLD_FN(linear_activation, A_LINEAR)
FOLD_FN(scaled_tanh, A_SCALED_TANH)
FOLD_FN(sigmoid_hard, A_SIGMOID_HARD)
FOLD_FN(thresholded_relu, A_THRESHOLDED_RELU)
FOLD_FN(relu, A_RELU)
FOLD_FN(relu6, A_RELU6)
FOLD_FN(sigmoid, A_SIGMOID)
FOLD_FN(softplus, A_SOFTPLUS)
FOLD_FN(softsign, A_SOFTSIGN)
FOLD_FN(prelu, A_PRELU)
FOLD_FN(softplus_parametric, A_SOFTPLUS_PARAM)
#undef FOLD_FN

static mil_status fold_gelu(mil_infer_ctx *c) {
  const char *mode = op_str(c, "mode", "EXACT");
  aop k = strcmp(mode, "TANH_APPROXIMATION") == 0      ? A_GELU_TANH
          : strcmp(mode, "SIGMOID_APPROXIMATION") == 0 ? A_GELU_SIGMOID
                                                        : A_GELU_EXACT;
  return fold_act(c, k);
}

/* softmax along one axis: exp(x - max) / sum, the sum accumulated wider
 * and rounded once like numpy's float reductions. */
static mil_status fold_softmax(mil_infer_ctx *c) {
  const mil_value *x = fold_tensor(c, "x");
  if (!x) return MIL_OK;
  mil_value *out = fold_out(c, 0);
  if (!out) return MIL_OK;
  int64_t shape[OP_MAX_RANK], axis;
  int32_t rank = fold_shape(x, shape);
  if (rank == 0 || !op_axis(op_int(c, "axis", -1), rank, &axis)) return MIL_OK;
  int64_t outer = 1, inner = 1, n = shape[axis];
  for (int32_t k = 0; k < axis; k++) outer *= shape[k];
  for (int32_t k = (int32_t)axis + 1; k < rank; k++) inner *= shape[k];
  mil_dtype dt = x->type->dtype;
  for (int64_t o = 0; o < outer; o++)
    for (int64_t in = 0; in < inner; in++) {
      int64_t base = o * n * inner + in;
      double mx = -INFINITY;
      for (int64_t j = 0; j < n; j++) mx = fmax_nan(mx, mil_value_get_f64(x, base + j * inner));
      double sum = 0;
      for (int64_t j = 0; j < n; j++) {
        double e = fold_rnd(dt, exp(fold_rnd(dt, mil_value_get_f64(x, base + j * inner) - mx)));
        mil_value_set_f64(out, base + j * inner, e);
        sum += e;
      }
      sum = fold_rnd(dt, sum);
      for (int64_t j = 0; j < n; j++)
        mil_value_set_f64(out, base + j * inner, fold_rnd(dt, mil_value_get_f64(out, base + j * inner) / sum));
    }
  c->val[0] = out;
  return MIL_OK;
}

#define ACT(name, opset, in, n, infer, dflt, doc) \
  {#name, opset, "activation", in, n, 1, infer, fold_##name, dflt, doc}

const mil_op_def op_defs_activation[] = {
    ACT(clamped_relu, MIL_IOS13, k_alpha_beta15_in, 3, infer_like_x, NULL,
        "min(max(x, 0), beta) + min(min(x, 0) * alpha, beta)"),
    ACT(clamped_relu, MIL_IOS17, k_alpha_beta17_in, 3, infer_like_x, NULL,
        "clamped_relu with alpha/beta of their own float dtype"),
    ACT(elu, MIL_IOS13, k_alpha15_in, 2, infer_like_x, NULL, "x if x > 0 else alpha * (exp(x) - 1)"),
    ACT(elu, MIL_IOS17, k_alpha17_in, 2, infer_like_x, NULL, "elu with alpha of its own float dtype"),
    ACT(gelu, MIL_IOS13, k_gelu_in, 2, infer_gelu, defaults_gelu,
        "Gaussian error linear unit (mode EXACT, TANH_APPROXIMATION, SIGMOID_APPROXIMATION)"),
    ACT(leaky_relu, MIL_IOS13, k_alpha15_in, 2, infer_like_x, NULL, "x if x >= 0 else alpha * x"),
    ACT(leaky_relu, MIL_IOS17, k_alpha17_in, 2, infer_like_x, NULL, "leaky_relu with alpha of its own float dtype"),
    ACT(linear_activation, MIL_IOS13, k_alpha_beta15_in, 3, infer_like_x, NULL, "alpha * x + beta"),
    ACT(linear_activation, MIL_IOS17, k_alpha_beta17_in, 3, infer_like_x, NULL,
        "linear_activation with alpha/beta of their own float dtype"),
    ACT(prelu, MIL_IOS13, k_alpha15_in, 2, infer_prelu, NULL, "x if x >= 0 else alpha[c] * x (per channel, axis 1)"),
    ACT(prelu, MIL_IOS17, k_alpha17_in, 2, infer_prelu, NULL, "prelu with alpha of its own float dtype"),
    ACT(relu, MIL_IOS13, k_x_in, 1, infer_like_x, NULL, "max(x, 0)"),
    ACT(relu6, MIL_IOS13, k_x_in, 1, infer_like_x, NULL, "min(max(x, 0), 6)"),
    ACT(scaled_tanh, MIL_IOS13, k_alpha_beta15_in, 3, infer_like_x, NULL, "alpha * tanh(beta * x)"),
    ACT(scaled_tanh, MIL_IOS17, k_alpha_beta17_in, 3, infer_like_x, NULL,
        "scaled_tanh with alpha/beta of their own float dtype"),
    ACT(sigmoid, MIL_IOS13, k_x_in, 1, infer_like_x, NULL, "1 / (1 + exp(-x))"),
    ACT(sigmoid_hard, MIL_IOS13, k_alpha_beta15_in, 3, infer_like_x, NULL, "min(max(alpha * x + beta, 0), 1)"),
    ACT(sigmoid_hard, MIL_IOS17, k_alpha_beta17_in, 3, infer_like_x, NULL,
        "sigmoid_hard with alpha/beta of their own float dtype"),
    {"silu", MIL_IOS13, "activation", k_x_in, 1, 1, infer_like_x, NULL, NULL, "x * sigmoid(x)"},
    ACT(softplus, MIL_IOS13, k_x_in, 1, infer_like_x, NULL, "log(1 + exp(x))"),
    ACT(softplus_parametric, MIL_IOS13, k_alpha_beta15_in, 3, infer_softplus_parametric, NULL,
        "alpha[c] * log(1 + exp(beta[c] * x)) per channel"),
    ACT(softplus_parametric, MIL_IOS17, k_alpha_beta17_in, 3, infer_softplus_parametric, NULL,
        "softplus_parametric with alpha/beta of their own float dtype"),
    ACT(softmax, MIL_IOS13, k_softmax_in, 2, infer_like_x, defaults_softmax, "exp(x) / sum(exp(x)) along axis"),
    ACT(softsign, MIL_IOS13, k_x_in, 1, infer_like_x, NULL, "x / (1 + |x|)"),
    ACT(thresholded_relu, MIL_IOS13, k_alpha15_in, 2, infer_like_x, NULL, "x if x >= alpha else 0"),
    ACT(thresholded_relu, MIL_IOS17, k_alpha17_in, 2, infer_like_x, NULL,
        "thresholded_relu with alpha of its own float dtype"),
};
OP_FAMILY_COUNT(activation);
