/* common::add_fp16_cast — run fp32 ops in fp16: every fp32 input of an op
 * is cast to fp16, the op is rebuilt on the casts as "<op>_cast_fp16", and
 * each output that became fp16 is cast back to fp32 (cast_optimization
 * later removes the back-and-forth pairs between neighbouring ops).
 *
 *   main(%x: (10, 20, fp32)(Tensor)) {
 *     block0() {
 *       %c: (fp32)*(Scalar) = const(val=2.0, name="c")
 *       %d: (10, 20, fp32)(Tensor) = real_div(x=%x, y=%c, name="d")
 *     } -> (%d)
 *   }
 *
 * becomes
 *
 *   main(%x: (10, 20, fp32)(Tensor)) {
 *     block0() {
 *       %c: (fp32)*(Scalar) = const(val=2.0, name="c")
 *       %x_to_fp16_dtype_0: (string)*(Scalar) = const(val="fp16", name="x_to_fp16_dtype_0")
 *       %x_to_fp16: (10, 20, fp16)(Tensor) = cast(x=%x, dtype=%x_to_fp16_dtype_0, name="x_to_fp16")
 *       %c_to_fp16_dtype_0: (string)*(Scalar) = const(val="fp16", name="c_to_fp16_dtype_0")
 *       %c_to_fp16: (fp16)*(Scalar) = cast(x=%c, dtype=%c_to_fp16_dtype_0, name="c_to_fp16")
 *       %d_cast_fp16: (10, 20, fp16)(Tensor) = real_div(x=%x_to_fp16, y=%c_to_fp16, name="d_cast_fp16")
 *       %d_cast_fp16_to_fp32_dtype_0: (string)*(Scalar) = const(val="fp32", name="d_cast_fp16_to_fp32_dtype_0")
 *       %d: (10, 20, fp32)(Tensor) = cast(x=%d_cast_fp16, dtype=%d_cast_fp16_to_fp32_dtype_0, name="d_cast_fp16_to_fp32")
 *     } -> (%d)
 *   }
 *
 * Left alone: cast, while_loop, cond, the list ops, read_state,
 * coreml_update_state; ops with an fp32 const input holding a finite value
 * beyond fp16's range (|v| > 65504 and < 1e38; larger ones count as
 * infinities); inputs whose type domain has no fp16; from iOS17 on, the
 * alpha/beta of the activations that take them in fp32 and the epsilon of
 * inverse, log and rsqrt. A var read by several ops gets one cast per
 * block. A cast of a known value saturates finite values that overflow to
 * +-65504 and, for fewer than 400 elements, nudges non-zero values that
 * underflow to 0 to the smallest fp16 subnormal of their sign.
 *
 * Options: op_selector (C API: only ops it accepts are cast) or
 * skip_ops_by_type (op types left in fp32, "mul,const"); not both.
 *
 * Mirrors coremltools/converters/mil/mil/passes/defs/quantization.py
 * (add_fp16_cast, FP16ComputePrecision, CastTypeQuantization).
 */
#include <math.h>
#include <string.h>

#include "passes/cast_quantization_internal.h"

#define PASS "add_fp16_cast"

static bool in_list(const char *s, const char *const *list) {
  for (; *list; list++)
    if (strcmp(s, *list) == 0) return true;
  return false;
}

static const char *const k_unsupported[] = {"cast",       "while_loop",  "cond",      "make_list",
                                            "list_gather", "list_scatter", "list_read", "list_write",
                                            "list_length", "read_state",   "coreml_update_state", NULL};
static const char *const k_alpha_ops[] = {"elu", "leaky_relu", "prelu", "thresholded_relu", NULL};
static const char *const k_alpha_beta_ops[] = {"clamped_relu", "linear_activation", "scaled_tanh", "sigmoid_hard",
                                               "softplus_parametric", NULL};
static const char *const k_epsilon_ops[] = {"inverse", "log", "rsqrt", NULL};

/* The bit patterns of float32(65504) and float32(1e38). */
#define F32_BITS_65504 0x477fe000u
#define F32_BITS_1E38 0x7e967699u

/* Whether some element has 65504 < |v| < float32(1e38), tested on the bit
 * patterns (|v| orders like its bits; NaN and infinity lie above 1e38).
 * Per fixed-size block (so the loops vectorize): when the OR of the
 * magnitudes is at most 65504 no element can exceed it, else the elements
 * are counted. */
static bool any_fp16_overflow(const uint32_t *u, int64_t n) {
  enum { BLK = 256 };
  const uint32_t lo = F32_BITS_65504 + 1u, span = F32_BITS_1E38 - lo;
  int64_t i = 0;
  for (; i + BLK <= n; i += BLK) {
    uint32_t any = 0;
    for (int j = 0; j < BLK; j++) any |= u[i + j];
    if ((any & 0x7fffffffu) < lo) continue;
    uint32_t c = 0;
    for (int j = 0; j < BLK; j++) c += ((u[i + j] & 0x7fffffffu) - lo) < span;
    if (c) return true;
  }
  uint32_t c = 0;
  for (; i < n; i++) c += ((u[i] & 0x7fffffffu) - lo) < span;
  return c != 0;
}

/* coremltools' fp16_overflow: an fp32 const input holds a finite value
 * (|v| < 1e38) beyond fp16's largest. numpy compares the float32 array
 * with float32(1e38) and 65504. */
#define SCAN_PIECE ((int64_t)1 << 21) /* elements: 8 MiB of fp32 */

static bool fp16_overflow(const mil_op *op) {
  for (int32_t i = 0; i < op->n_inputs; i++)
    for (int32_t k = 0; k < op->inputs[i].n_args; k++) {
      const mil_var *v = op->inputs[i].args[k].use.var;
      if (!v || !v->val || !pass_castq_is_of(v, MIL_DT_FP32) || !pass_var_is_const(v)) continue;
      if (v->val->kind != MIL_VAL_TENSOR || !v->val->type || v->val->type->dtype != MIL_DT_FP32) continue;
      /* in pieces, each given back once read: the cast reads the weight again,
       * until then it need not stay resident */
      const uint32_t *u = (const uint32_t *)mil_value_data(v->val);
      bool over = false;
      for (int64_t at = 0; at < v->val->numel && !over; at += SCAN_PIECE) {
        int64_t len = v->val->numel - at < SCAN_PIECE ? v->val->numel - at : SCAN_PIECE;
        over = any_fp16_overflow(u + at, len);
        mil_program_release_value_pages(op->program, v->val, (size_t)at * 4, (size_t)len * 4);
      }
      if (over) return true;
    }
  return false;
}

static bool type_ok(const char *type) { return !in_list(type, k_unsupported); }

static bool is_valid_op(const pass_castq *q, const mil_op *op) { return !fp16_overflow(op); }

static const char *should_cast(const pass_castq *q, pass_castq_state *r, const mil_op *op, const mil_input *param) {
  if (!pass_castq_dtype_allowed(r, op, param->name, q->target)) return NULL;
  if (pass_op_opset(op) >= MIL_IOS17) {
    const char *n = param->name;
    if (strcmp(n, "alpha") == 0 && (in_list(op->type, k_alpha_ops) || in_list(op->type, k_alpha_beta_ops)))
      return NULL;
    if (strcmp(n, "beta") == 0 && in_list(op->type, k_alpha_beta_ops)) return NULL;
    if (strcmp(n, "epsilon") == 0 && in_list(op->type, k_epsilon_ops)) return NULL;
  }
  return q->target;
}

/* Smallest fp16 subnormal 2^-24 and smallest fp32 subnormal 2^-149. */
#define FP16_TINY 5.9604644775390625e-08
#define FP32_TINY 1.401298464324817e-45

/* coremltools' _check_overflow_to_inf then _check_underflow_to_zero on the
 * value of a new cast. */
static bool fix_value(const pass_castq *q, mil_program *p, mil_var *x, const mil_var *src) {
  const mil_value *nv = x->val, *ov = src->val;
  if (!nv || !ov || nv->kind != MIL_VAL_TENSOR || ov->kind != MIL_VAL_TENSOR || nv->numel != ov->numel) return true;
  if (!nv->type || nv->type->dtype != MIL_DT_FP16) return true;
  int64_t n = nv->numel;
  bool overflow = false, tiny = false;
  if (ov->type && ov->type->dtype == MIL_DT_FP32) { /* the usual case, on raw bits: weights are large */
    const uint32_t *o = (const uint32_t *)mil_value_data(ov);
    const uint16_t *h = (const uint16_t *)mil_value_data(nv);
    /* an overflow gives an infinite result: look for one first, counting
     * in fixed-size blocks so the loop vectorizes */
    enum { BLK = 256 };
    int64_t i = 0;
    uint32_t n_inf = 0;
    for (; i + BLK <= n && !n_inf; i += BLK) {
      uint16_t c = 0;
      for (int j = 0; j < BLK; j++) c += (h[i + j] & 0x7fffu) == 0x7c00u;
      n_inf = c;
    }
    if (n_inf) i = 0;
    for (; i < n && !overflow; i++)
      overflow = (o[i] & 0x7f800000u) != 0x7f800000u && (h[i] & 0x7fffu) == 0x7c00u;
    /* results with |v| <= 2^-24 only matter for small values */
    for (i = 0; n < 400 && i < n && !tiny; i++) tiny = (h[i] & 0x7fffu) <= 1u;
  } else
    for (int64_t i = 0; i < n; i++) {
      double o = mil_value_get_f64(ov, i), v = mil_value_get_f64(nv, i);
      if (isfinite(o) && isinf(v)) overflow = true;
      if (fabs(v) <= FP16_TINY) tiny = true;
    }
  bool underflow = false;
  if (n < 400 && tiny)
    for (int64_t i = 0; i < n && !underflow; i++) {
      double o = mil_value_get_f64(ov, i), v = mil_value_get_f64(nv, i);
      underflow = !(fabs(o) <= FP32_TINY) && fabs(v) <= FP16_TINY;
    }
  if (!overflow && !underflow) return true;
  mil_value *out = pass_bld_astype(p, nv, MIL_DT_FP16);
  if (!out) return false;
  for (int64_t i = 0; i < n; i++) {
    double o = mil_value_get_f64(ov, i), v = mil_value_get_f64(nv, i);
    if (isfinite(o) && isinf(v)) v = o > 0 ? 65504.0 : (o < 0 ? -65504.0 : v);
    mil_value_set_f64(out, i, v);
  }
  if (n < 400 && tiny)
    for (int64_t i = 0; i < n; i++) {
      double o = mil_value_get_f64(ov, i), v = mil_value_get_f64(out, i);
      if (!(fabs(o) <= FP32_TINY) && fabs(v) <= FP16_TINY) mil_value_set_f64(out, i, o > 0 ? FP16_TINY : -FP16_TINY);
    }
  mil_var_set_value(x, out);
  return true;
}

static const pass_castq k_fp16 = {PASS, "fp32", "fp16", MIL_DT_FP32, type_ok, is_valid_op, should_cast, fix_value};

static mil_status run(mil_program *p, const mil_pass_options *o, mil_pass_stats *stats, mil_diag *d) {
  return pass_castq_run(&k_fp16, p, o, true, stats, d);
}

static const mil_pass_option_def k_options[] = {
    {"op_selector", MIL_POPT_SELECTOR, NULL, false, false, 0, 0, "only ops it accepts are cast (C API only)"},
    {"skip_ops_by_type", MIL_POPT_STRING_LIST, "", false, false, 0, 0,
     "op types left in fp32 (comma-separated, e.g. \"mul,const\")"},
};

const mil_pass_def pass_def_add_fp16_cast = {"common::" PASS,
                                             "run fp32 ops in fp16: cast fp32 inputs to fp16 and results back",
                                             k_options, 2, run, NULL};
