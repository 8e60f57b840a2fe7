/* common::nullify_redundant_quantization_zero_point — Core ML runs
 * quantization fastest without a zero point, so zero points are removed
 * where that keeps the result:
 *
 *  - a quantize / dequantize with zero point 0 is rebuilt without it;
 *  - a dequantize of a known int8 input with zero point -128 (uint8 with
 *    128) is rebuilt on the input shifted by +128 as uint8 (-128 as int8)
 *    without a zero point;
 *  - quantize(zero point +-128) -> dequantize(the same zero point) becomes
 *    a quantize to the other 8-bit type and a dequantize, neither with a
 *    zero point.
 *
 *   main[CoreML7](%x: (3,fp32)(Tensor)) {
 *     block0() {
 *       %q: (3,int8)*(Tensor) = const(val=[1, -2, 3], name="q")
 *       %s: (fp32)*(Scalar) = const(val=0.5, name="s")
 *       %zp: (int8)*(Scalar) = const(val=-128, name="zp")
 *       %d: (3,fp32)(Tensor) = dequantize(input=%q, zero_point=%zp, scale=%s, name="d")
 *       %a: (3,fp32)(Tensor) = add(x=%x, y=%d, name="a")
 *     } -> (%a)
 *   }
 *
 * becomes
 *
 *   main[CoreML7](%x: (3,fp32)(Tensor)) {
 *     block0() {
 *       %q: (3,int8)*(Tensor) = const(val=[1, -2, 3], name="q")
 *       %s: (fp32)*(Scalar) = const(val=0.5, name="s")
 *       %zp: (int8)*(Scalar) = const(val=-128, name="zp")
 *       %dequantize_0_input_0: (3,uint8)*(Tensor) = const(val=[129, 126, 131], name="dequantize_0_input_0")
 *       %dequantize_0: (3,fp32)(Tensor) = dequantize(input=%dequantize_0_input_0, scale=%s, name="dequantize_0")
 *       %a: (3,fp32)(Tensor) = add(x=%x, y=%dequantize_0, name="a")
 *     } -> (%a)
 *   }
 *
 * The new ops are built before the old ones with fresh names and reuse
 * the scale and axis vars; the quantize -> dequantize rewrite needs the
 * dequantize to be the quantize's only reader. Blocks are swept until the
 * pair rewrite no longer applies.
 *
 * Mirrors coremltools/converters/mil/mil/passes/defs/optimize_quantization.py
 * (nullify_redundant_quantization_zero_point).
 */
#include <string.h>

#include "passes/fuse_util_internal.h"
#include "passes/pass_internal.h"

#define PASS "nullify_redundant_quantization_zero_point"

static bool all_equal(const mil_value *v, double x) {
  if (!v || v->kind != MIL_VAL_TENSOR || v->numel < 1) return v && v->kind == MIL_VAL_TENSOR && v->numel == 0;
  for (int64_t i = 0; i < v->numel; i++)
    if (mil_value_get_f64(v, i) != x) return false;
  return true;
}

/* The op again without its zero point (and with `input` / `output_dtype`
 * replaced when given), before `anchor`. */
static mil_var *rebuild(pass_bld *c, mil_op *op, mil_op *anchor, mil_var *input, const mil_value *input_val,
                        const mil_value *output_dtype, mil_status *st) {
  bool is_q = strcmp(op->type, "quantize") == 0;
  pass_barg a[4];
  int32_t n = 0;
  if (input_val) a[n++] = PASS_BK("input", input_val);
  else a[n++] = PASS_BV("input", input ? input : mil_op_input_var(op, "input"));
  a[n++] = PASS_BV("scale", mil_op_input_var(op, "scale"));
  a[n++] = PASS_BV("axis", mil_op_input_var(op, "axis"));
  if (is_q) {
    if (output_dtype) a[n++] = PASS_BK("output_dtype", output_dtype);
    else a[n++] = PASS_BV("output_dtype", mil_op_input_var(op, "output_dtype"));
  }
  return pass_bld_var(c, NULL, anchor, op->type, NULL, n, a, st);
}

static int replace_remove(pass_bld *c, mil_op *anchor, mil_var *old, mil_var *nv, mil_op **dead, int32_t n_dead) {
  int r = pass_bld_try_replace(c, anchor, old, nv);
  if (r <= 0) return r;
  mil_status st = pass_remove_ops(dead, n_dead, c->d);
  return st != MIL_OK ? -(int)st : 1;
}

static int zp0(pass_bld *c, mil_op *op) {
  if (strcmp(op->type, "quantize") != 0 && strcmp(op->type, "dequantize") != 0) return 0;
  if (!pass_bld_has(op, "zero_point")) return 0;
  const mil_value *zp = pass_input_value(op, "zero_point");
  if (!zp || !all_equal(zp, 0)) return 0;
  mil_status st = MIL_OK;
  mil_var *nv = rebuild(c, op, op, NULL, NULL, NULL, &st);
  if (!nv) return -(int)st;
  return replace_remove(c, op, op->outputs[0], nv, &op, 1);
}

static int zp128_const_dequantize(pass_bld *c, mil_op *op) {
  if (strcmp(op->type, "dequantize") != 0 || !pass_bld_has(op, "zero_point")) return 0;
  const mil_value *zp = pass_input_value(op, "zero_point");
  bool neg = all_equal(zp, -128), pos = all_equal(zp, 128);
  if (!zp || (!neg && !pos)) return 0;
  const mil_value *in = pass_input_value(op, "input");
  if (!in || in->kind != MIL_VAL_TENSOR || !in->type) return 0;
  mil_value *shifted = pass_bld_astype(c->p, in, neg ? MIL_DT_UINT8 : MIL_DT_INT8);
  if (!shifted) return -(int)MIL_ERR_NOMEM;
  for (int64_t i = 0; i < in->numel; i++)
    mil_value_set_i64(shifted, i, (int64_t)(int16_t)mil_value_get_i64(in, i) + (neg ? 128 : -128));
  mil_status st = MIL_OK;
  mil_var *nv = rebuild(c, op, op, NULL, shifted, NULL, &st);
  if (!nv) return -(int)st;
  return replace_remove(c, op, op->outputs[0], nv, &op, 1);
}

static int zp128_pair(pass_bld *c, mil_op *op) {
  if (strcmp(op->type, "quantize") != 0 || !pass_bld_has(op, "zero_point") || op->n_outputs != 1) return 0;
  const mil_value *zp = pass_input_value(op, "zero_point");
  bool neg = all_equal(zp, -128), pos = all_equal(zp, 128);
  if (!zp || (!neg && !pos)) return 0;
  mil_op *dq = pass_only_child_op(op->outputs[0]);
  if (!dq || strcmp(dq->type, "dequantize") != 0 || !pass_bld_has(dq, "zero_point")) return 0;
  const mil_value *dzp = pass_input_value(dq, "zero_point");
  if (!dzp || !all_equal(dzp, neg ? -128 : 128)) return 0;
  mil_value *odt = pass_bld_str(c->p, neg ? "uint8" : "int8");
  if (!odt) return -(int)MIL_ERR_NOMEM;
  mil_status st = MIL_OK;
  mil_var *nq = rebuild(c, op, dq, NULL, NULL, odt, &st);
  mil_var *nd = nq ? rebuild(c, dq, dq, nq, NULL, NULL, &st) : NULL;
  if (!nd) return -(int)st;
  mil_op *dead[2] = {op, dq};
  return replace_remove(c, dq, dq->outputs[0], nd, dead, 2);
}

/* One op: the two single-op rewrites (no need to restart), then the pair
 * rewrite (which makes coremltools walk the block again). */
static int transform(pass_bld *c, mil_op *op) {
  int r = zp0(c, op);
  if (r < 0) return r;
  if (r > 0) {
    c->changes++;
    return 0;
  }
  r = zp128_const_dequantize(c, op);
  if (r < 0) return r;
  if (r > 0) {
    c->changes++;
    return 0;
  }
  return zp128_pair(c, op);
}

/* The op types transform() can rewrite at (it returns 0 at any other). */
static const char *const k_types[] = {"quantize", "dequantize", NULL};

static mil_status run(mil_program *p, const mil_pass_options *o, mil_pass_stats *stats, mil_diag *d) {
  (void)o;
  pass_walk_spec ws = {PASS, k_types, true, PASS_WALK_NESTED_FIXPOINT, true, NULL};
  return pass_bld_walk(p, d, &ws, transform, stats);
}

static const char *const k_anchors[] = {"quantize", "dequantize", NULL};
const mil_pass_def pass_def_nullify_redundant_quantization_zero_point = {
    "common::" PASS, "drop zero points that are 0 (or 128 for uint8)", NULL, 0, run, k_anchors};
