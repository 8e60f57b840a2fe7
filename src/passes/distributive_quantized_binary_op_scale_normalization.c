/* common::distributive_quantized_binary_op_scale_normalization — for a
 * quantized add / sub (dequantize both inputs -> op [-> relu] -> quantize),
 * divide every scale by the scale of y, so that y's dequantize has scale 1
 * and the backend can fuse the single remaining input scale into the op.
 *
 *   main[CoreML7](%qx: (2,uint8)(Tensor), %qy: (2,uint8)(Tensor)) {
 *     block0() {
 *       %sx: (fp32)*(Scalar) = const(val=0.2, name="sx")
 *       %dx: (2,fp32)(Tensor) = dequantize(input=%qx, scale=%sx, name="dx")
 *       %sy: (fp32)*(Scalar) = const(val=0.5, name="sy")
 *       %dy: (2,fp32)(Tensor) = dequantize(input=%qy, scale=%sy, name="dy")
 *       %a: (2,fp32)(Tensor) = add(x=%dx, y=%dy, name="a")
 *       %sz: (fp32)*(Scalar) = const(val=1.0, name="sz")
 *       %dt: (string)*(Scalar) = const(val="uint8", name="dt")
 *       %q: (2,uint8)(Tensor) = quantize(input=%a, scale=%sz, output_dtype=%dt, name="q")
 *     } -> (%q)
 *   }
 *
 * becomes (%dx, %dy and their consts stay for dead_code_elimination; %q's
 * uses read the new quantize, which keeps the output name %q)
 *
 *   ...
 *       %dequantize_0_scale_0: (fp32)*(Scalar) = const(val=0.4, name="dequantize_0_scale_0")
 *       %dequantize_0: (2,fp32)(Tensor) = dequantize(input=%qx, scale=%dequantize_0_scale_0, name="dequantize_0")
 *       %dequantize_1_scale_0: (fp32)*(Scalar) = const(val=1.0, name="dequantize_1_scale_0")
 *       %dequantize_1: (2,fp32)(Tensor) = dequantize(input=%qy, scale=%dequantize_1_scale_0, name="dequantize_1")
 *       %a: (2,fp32)(Tensor) = add(x=%dequantize_0, y=%dequantize_1, name="a")
 *       %quantize_0_scale_0: (fp32)*(Scalar) = const(val=2.0, name="quantize_0_scale_0")
 *       %q: (2,uint8)(Tensor) = quantize(input=%a, scale=%quantize_0_scale_0, output_dtype=%dt, name="quantize_0")
 *     } -> (%q)
 *
 * Conditions: op's x and y are dequantize outputs, op (or the relu that is
 * its only child) has a quantize as its only child, and none of the
 * dequantizes, op and relu is an output of op's block. y's scale must be a
 * scalar (no axis); otherwise x and y swap roles, and when neither works
 * the pattern is left alone. The quotients s_x/s_y and s_z/s_y are computed
 * in fp32 and must stay within fp16's range: at most 65504 and at least
 * its smallest subnormal in magnitude. The new dequantizes only replace the
 * old ones as inputs of op (other readers keep the old ones).
 *
 * Mirrors coremltools/converters/mil/mil/passes/defs/optimize_quantization.py
 * (distributive_quantized_binary_op_scale_normalization).
 */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "passes/fuse_util_internal.h"
#include "passes/pass_internal.h"

#define PASS "distributive_quantized_binary_op_scale_normalization"

/* Smallest positive fp16 subnormal, 2^-24. */
#define FP16_TINY 5.9604644775390625e-08

static bool is_output_of(const mil_var *v, const mil_block *b) {
  for (int32_t i = 0; i < b->n_outputs; i++)
    if (b->outputs[i].var == v) return true;
  return false;
}

static bool feeds_output(const mil_op *op, const mil_block *b) {
  for (int32_t i = 0; i < op->n_outputs; i++)
    if (is_output_of(op->outputs[i], b)) return true;
  return false;
}

/* coremltools' _check_child_op_type. */
static mil_op *child_of_type(const mil_op *op, const char *type) {
  if (op->n_outputs != 1) return NULL;
  mil_op *c = pass_only_child_op(op->outputs[0]);
  return c && strcmp(c->type, type) == 0 ? c : NULL;
}

static mil_op *producer_of_type(const mil_op *op, const char *input, const char *type) {
  mil_var *v = mil_op_input_var(op, input);
  return v && v->op && strcmp(v->op->type, type) == 0 ? v->op : NULL;
}

/* s / s_y in fp32 for every element of s (s_y a single value). Fills out
 * (numel entries); false when a quotient leaves fp16's range. */
static bool divide(const mil_value *s, float sy, double *out) {
  for (int64_t i = 0; i < s->numel; i++) {
    float q = (float)mil_value_get_f64(s, i) / sy;
    double a = fabs((double)q);
    if (a > 65504.0 || a < FP16_TINY) return false; /* NaN passes, as in numpy */
    out[i] = q;
  }
  return true;
}

/* A value shaped like `like` holding vals, in fp16 when like is fp16 and
 * in fp32 otherwise (coremltools' np.float16 / np.float32 conversion, which
 * turns a rank-0 array into a scalar). */
static mil_value *scale_value(mil_program *p, const mil_value *like, const double *vals) {
  const mil_type *t = like->type;
  mil_dtype dt = t->dtype == MIL_DT_FP16 ? MIL_DT_FP16 : MIL_DT_FP32;
  int64_t shape[64];
  int32_t rank = t->rank < 0 ? 0 : (t->rank > 64 ? 64 : t->rank);
  for (int32_t i = 0; i < rank; i++) shape[i] = t->dims[i].size;
  mil_value *v = mil_value_new_tensor(p, dt, rank, shape, rank == 0, NULL);
  if (!v) return NULL;
  for (int64_t i = 0; i < like->numel; i++) mil_value_set_f64(v, i, vals[i]);
  return v;
}

static int transform(pass_bld *c, mil_op *op) {
  if ((strcmp(op->type, "add") != 0 && strcmp(op->type, "sub") != 0) || op->n_outputs != 1) return 0;
  mil_op *tail = child_of_type(op, "relu");
  if (!tail) tail = op;
  mil_op *dx = producer_of_type(op, "x", "dequantize"), *dy = producer_of_type(op, "y", "dequantize");
  if (!dx || !dy) return 0;
  mil_op *qz = child_of_type(tail, "quantize");
  if (!qz) return 0;
  mil_block *b = op->block;
  if (feeds_output(dx, b) || feeds_output(dy, b) || feeds_output(op, b) || (tail != op && feeds_output(tail, b)))
    return 0;
  const mil_value *sz = pass_input_value(qz, "scale");
  if (!sz || sz->kind != MIL_VAL_TENSOR || !sz->type) return 0;
  double *nsx = NULL, *nsz = malloc(((size_t)sz->numel + 1) * sizeof *nsz);
  if (!nsz) return -(int)MIL_ERR_NOMEM;
  bool ok = false;
  for (int attempt = 0; attempt < 2 && !ok; attempt++) {
    if (attempt == 1) {
      mil_op *t = dx;
      dx = dy;
      dy = t;
    }
    const mil_value *sx = pass_input_value(dx, "scale"), *sy = pass_input_value(dy, "scale");
    if (pass_bld_has(dy, "axis") || !sx || !sy || sx->kind != MIL_VAL_TENSOR || !sx->type || sy->numel != 1) continue;
    free(nsx);
    if (!(nsx = malloc(((size_t)sx->numel + 1) * sizeof *nsx))) {
      free(nsz);
      return -(int)MIL_ERR_NOMEM;
    }
    float fy = (float)mil_value_get_f64(sy, 0);
    ok = divide(sx, fy, nsx) && divide(sz, fy, nsz);
  }
  if (!ok) {
    free(nsx);
    free(nsz);
    return 0;
  }
  mil_program *p = c->p;
  const mil_value *sx = pass_input_value(dx, "scale"), *sy = pass_input_value(dy, "scale");
  mil_value *vx = scale_value(p, sx, nsx), *vz = scale_value(p, sz, nsz);
  free(nsx);
  free(nsz);
  double one = 1.0;
  mil_value *vy = NULL;
  if (sy->type->dtype == MIL_DT_FP16) vy = mil_value_new_scalar_f64(p, MIL_DT_FP16, one);
  else vy = mil_value_new_scalar_f64(p, MIL_DT_FP32, one);
  if (!vx || !vz || !vy) return -(int)MIL_ERR_NOMEM;
  mil_status st = MIL_OK;
  pass_barg ax[] = {PASS_BV("input", mil_op_input_var(dx, "input")), PASS_BK("scale", vx),
                    PASS_BV("zero_point", mil_op_input_var(dx, "zero_point")),
                    PASS_BV("axis", mil_op_input_var(dx, "axis"))};
  mil_op *ndx = pass_bld_op(c, NULL, op, "dequantize", NULL, 4, ax, &st);
  if (!ndx) return -(int)st;
  pass_barg ay[] = {PASS_BV("input", mil_op_input_var(dy, "input")), PASS_BK("scale", vy),
                    PASS_BV("zero_point", mil_op_input_var(dy, "zero_point")),
                    PASS_BV("axis", mil_op_input_var(dy, "axis"))};
  mil_op *ndy = pass_bld_op(c, NULL, op, "dequantize", NULL, 4, ay, &st);
  if (!ndy) return -(int)st;
  pass_barg az[] = {PASS_BV("input", mil_op_input_var(qz, "input")), PASS_BK("scale", vz),
                    PASS_BV("zero_point", mil_op_input_var(qz, "zero_point")),
                    PASS_BV("axis", mil_op_input_var(qz, "axis")),
                    PASS_BV("output_dtype", mil_op_input_var(qz, "output_dtype"))};
  mil_op *nqz = pass_bld_op(c, NULL, qz, "quantize", NULL, 5, az, &st);
  if (!nqz) return -(int)st;
  pass_nonrep *nr = pass_bld_nonrep(c);
  if (!nr) return -(int)MIL_ERR_NOMEM;
  /* coremltools checks each replacement just before making it */
  if (!pass_nonrep_can_replace(nr, dx->outputs[0], ndx->outputs[0])) return 1;
  pass_bld_replace_range(b, ndx, op, dx->outputs[0], ndx->outputs[0]);
  if (!pass_nonrep_can_replace(nr, dy->outputs[0], ndy->outputs[0])) return 1;
  pass_bld_replace_range(b, ndy, op, dy->outputs[0], ndy->outputs[0]);
  int r = pass_bld_try_replace(c, qz, qz->outputs[0], nqz->outputs[0]);
  if (r <= 0) return r < 0 ? r : 1;
  st = pass_remove_ops(&qz, 1, c->d);
  return st != MIL_OK ? -(int)st : 1;
}

/* The op types transform() can rewrite at (it returns 0 at any other). */
static const char *const k_types[] = {"add", "sub", NULL};
/* The op types no rewrite can do without. */
static const char *const k_required[] = {"dequantize", "quantize", NULL};

static mil_status run(mil_program *p, const mil_pass_options *o, mil_pass_stats *stats, mil_diag *d) {
  (void)o;
  pass_walk_spec ws = {PASS, k_types, false, PASS_WALK_NESTED_ONCE, true, k_required};
  return pass_bld_walk(p, d, &ws, transform, stats);
}

static const char *const k_anchors[] = {"quantize", NULL};
const mil_pass_def pass_def_distributive_quantized_binary_op_scale_normalization = {
    "common::" PASS, "move a quantized binary op's scale to the other operand", NULL, 0, run, k_anchors};
