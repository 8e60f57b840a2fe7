/* Kernels of the "activation" family (coremltools
 * ops/defs/iOS15/activation.py) for fp16 / fp32 tensors, computed in fp32:
 * relu, relu6, sigmoid, sigmoid_hard, silu (x * sigmoid(x)), gelu (EXACT:
 * 0.5 x (1 + erf(x / sqrt 2)); TANH_APPROXIMATION:
 * 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))); SIGMOID_APPROXIMATION:
 * x sigmoid(1.702 x)), leaky_relu, elu, softplus, softsign and softmax
 * (max-subtracted, along `axis`). silu has no value inference, so its
 * kernel is the only way it runs; the other activations not listed
 * (prelu, clamped_relu, scaled_tanh, ...) run through value inference. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "interp/elementwise_internal.h"
#include "interp/vmath.h"

#define UNARY(name, expr)                                                     \
  static void a_##name(const float *x, float *y, int64_t n, const float *p) { \
    (void)p;                                                                  \
    for (int64_t i = 0; i < n; i++) {                                         \
      float v = x[i];                                                         \
      y[i] = (expr);                                                          \
    }                                                                         \
  }
UNARY(relu, v < 0 ? 0.0f : v)
UNARY(relu6, v < 0 ? 0.0f : v > 6.0f ? 6.0f : v)
UNARY(leaky_relu, v < 0 ? v * p[0] : v)
UNARY(elu, v < 0 ? p[0] * (expf(v) - 1.0f) : v)
UNARY(softplus, log1pf(expf(-fabsf(v))) + (v > 0 ? v : 0.0f))
UNARY(softsign, v / (1.0f + fabsf(v)))
#undef UNARY

/* exp-based activations: vectorized (vmath.h gives their error bounds) */
static void a_sigmoid(const float *x, float *y, int64_t n, const float *p) { (void)p, interp_vsigmoid(x, y, n); }
static void a_silu(const float *x, float *y, int64_t n, const float *p) { (void)p, interp_vsilu(x, y, n); }
static void a_gelu_sigmoid(const float *x, float *y, int64_t n, const float *p) { (void)p, interp_vgelu_sigm(x, y, n); }
static void a_gelu_exact(const float *x, float *y, int64_t n, const float *p) { (void)p, interp_vgelu_erf(x, y, n); }
static void a_gelu_tanh(const float *x, float *y, int64_t n, const float *p) { (void)p, interp_vgelu_tanh(x, y, n); }

#define KA(name) \
  static mil_status k_##name(interp_run *r, mil_infer_ctx *c) { return interp_map(r, c, a_##name, NULL); }
KA(relu)
KA(relu6)
KA(sigmoid)
KA(silu)
KA(softplus)
KA(softsign)
#undef KA

static mil_status k_gelu(interp_run *r, mil_infer_ctx *c) {
  const char *mode = op_str(c, "mode", "EXACT");
  interp_unary_fn fn = strcmp(mode, "TANH_APPROXIMATION") == 0      ? a_gelu_tanh
                       : strcmp(mode, "SIGMOID_APPROXIMATION") == 0 ? a_gelu_sigmoid
                       : strcmp(mode, "EXACT") == 0                 ? a_gelu_exact
                                                                    : NULL;
  if (!fn) return interp_fail(c, MIL_ERR_INVALID, "input 'mode' must be EXACT, TANH_APPROXIMATION or "
                                                  "SIGMOID_APPROXIMATION, got \"%s\"", mode);
  return interp_map(r, c, fn, NULL);
}

static mil_status k_leaky_relu(interp_run *r, mil_infer_ctx *c) {
  float a;
  if (!interp_fparam(c, "alpha", 0.01f, &a)) return INTERP_DECLINE;
  return interp_map(r, c, a_leaky_relu, &a);
}

static mil_status k_elu(interp_run *r, mil_infer_ctx *c) {
  float a;
  if (!interp_fparam(c, "alpha", 1.0f, &a)) return INTERP_DECLINE;
  return interp_map(r, c, a_elu, &a);
}

/* sigmoid_hard: min(max(alpha * x + beta, 0), 1) (defaults 0.2, 0.5),
 * rounded like its value inference (ops/activation.c): after the product
 * and after the sum, to the input's dtype (fp16: through F16C, a block at a
 * time). */
static mil_status k_sigmoid_hard(interp_run *r, mil_infer_ctx *c) {
  const mil_value *x = interp_fin(c, "x");
  float a, b;
  if (!x || !interp_fparam(c, "alpha", 0.2f, &a) || !interp_fparam(c, "beta", 0.5f, &b)) return INTERP_DECLINE;
  mil_value *out = interp_new_value(r, c->out[0]);
  if (!out) return interp_nomem(c);
  if (out->numel != x->numel || out->type->dtype != x->type->dtype) return INTERP_DECLINE;
  if (x->type->dtype == MIL_DT_FP32) {
    const float *xf = mil_value_data(x);
    float *y = mil_value_data_mut(out);
    for (int64_t i = 0; i < x->numel; i++) {
      float p = a * xf[i]; /* two float roundings, as numpy's float32 */
      float v = p + b;
      v = v < 0 ? 0.0f : v; /* then v > 1 ? 1 : v: the clamp in a form that vectorizes (NaN stays NaN) */
      y[i] = v > 1 ? 1.0f : v;
    }
  } else {
    a = interp_h2f(interp_f2h(a));
    b = interp_h2f(interp_f2h(b));
    const uint16_t *xh = mil_value_data(x);
    uint16_t *yh = mil_value_data_mut(out);
    float t[1024];
    for (int64_t i0 = 0; i0 < x->numel; i0 += 1024) {
      size_t n = (size_t)(x->numel - i0 < 1024 ? x->numel - i0 : 1024);
      mil_fp16_to_fp32_array(xh + i0, t, n);
      for (size_t i = 0; i < n; i++) t[i] *= a;
      mil_fp16_round_array(t, n); /* the product rounded to fp16 */
      for (size_t i = 0; i < n; i++) {
        float v = t[i] + b;
        t[i] = v < 0 ? 0.0f : v > 1 ? 1.0f : v; /* clamping a rounded sum = rounding the clamped one */
      }
      mil_fp32_to_fp16_array(t, yh + i0, n);
    }
  }
  c->val[0] = out;
  return MIL_OK;
}

static mil_status k_softmax(interp_run *r, mil_infer_ctx *c) {
  const mil_value *x = interp_fin(c, "x");
  if (!x) return INTERP_DECLINE;
  int64_t shape[MIL_INTERP_MAX_RANK];
  int32_t rank = interp_vshape(x, shape);
  int64_t axis = op_int(c, "axis", -1);
  if (rank == 0) return INTERP_DECLINE;
  if (!op_axis(axis, rank, &axis))
    return interp_fail(c, MIL_ERR_INVALID, "input 'axis' %lld is out of range for rank %d", (long long)axis, rank);
  int64_t outer = 1, n = shape[axis], inner = 1;
  for (int32_t i = 0; i < axis; i++) outer *= shape[i];
  for (int32_t i = (int32_t)axis + 1; i < rank; i++) inner *= shape[i];
  float *tx;
  const float *xf = interp_f32(r, x, &tx);
  interp_fout o;
  float *y = xf ? interp_fout_begin(r, c, 0, &o) : NULL;
  if (!y) {
    free(tx);
    return interp_nomem(c);
  }
  for (int64_t a = 0; a < outer; a++)
    for (int64_t b = 0; b < inner; b++) {
      const float *s = xf + a * n * inner + b;
      float *d = y + a * n * inner + b;
      float mx = -INFINITY;
      double sum = 0;
      if (inner == 1) { /* contiguous: the vectorized row (softmax_row.c) */
        interp_softmax_row(s, d, n);
        continue;
      }
      for (int64_t j = 0; j < n; j++) mx = s[j * inner] > mx ? s[j * inner] : mx;
      for (int64_t j = 0; j < n; j++) {
        float e = expf(s[j * inner] - mx);
        d[j * inner] = e;
        sum += e;
      }
      float inv = (float)(1.0 / sum);
      for (int64_t j = 0; j < n; j++) d[j * inner] *= inv;
    }
  free(tx);
  c->val[0] = interp_fout_end(&o);
  return MIL_OK;
}

const interp_kernel interp_kernels_activation[] = {
    {"elu", k_elu, 0},
    {"gelu", k_gelu, 0},
    {"leaky_relu", k_leaky_relu, 0},
    {"relu", k_relu, 0},
    {"relu6", k_relu6, 0},
    {"sigmoid", k_sigmoid, 0},
    {"sigmoid_hard", k_sigmoid_hard, 0},
    {"silu", k_silu, 0},
    {"softmax", k_softmax, 0},
    {"softplus", k_softplus, 0},
    {"softsign", k_softsign, 0},
};
INTERP_FAMILY_COUNT(activation);
