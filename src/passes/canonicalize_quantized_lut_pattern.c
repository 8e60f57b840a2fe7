/* common::canonicalize_quantized_lut_pattern — a palettized weight whose
 * palette holds quantized values can be written two ways:
 *
 *   dequantize first:  lut(int8) -> constexpr_blockwise_shift_scale -> lut(fp16) -> constexpr_lut_to_dense
 *   palettize first:   lut(int8) -> constexpr_lut_to_dense -> dense(int8) -> constexpr_blockwise_shift_scale
 *
 * They agree for per-tensor and per-channel quantization. The pass writes
 * every such pair in the dequantize-first order before iOS26 (the
 * palettize-first order from iOS26 on).
 *
 *   main[CoreML8]() {
 *     block0() {
 *       %w: (8, 4, int8)(Tensor) = constexpr_lut_to_dense(indices=%idx, lut=%lut, name="constexpr_lut_to_dense_0")
 *       %s: (1, 1, fp16)*(Tensor) = const(val=[[2.0]], name="s")
 *       %ws: (8, 4, fp16)(Tensor) = constexpr_blockwise_shift_scale(data=%w, scale=%s, name="constexpr_blockwise_shift_scale_0")
 *     } -> (%ws)
 *   }
 *
 * becomes
 *
 *   main[CoreML8]() {
 *     block0() {
 *       %constexpr_blockwise_shift_scale_1_scale_0: (1, 1, 1, 1, fp16)*(Tensor) = const(val=[[[[2.0]]]], name="constexpr_blockwise_shift_scale_1_scale_0")
 *       %constexpr_blockwise_shift_scale_1: (8, 4, 16, 1, fp16)(Tensor) = constexpr_blockwise_shift_scale(data=%lut, scale=%constexpr_blockwise_shift_scale_1_scale_0, name="constexpr_blockwise_shift_scale_1")
 *       %ws: (8, 4, fp16)(Tensor) = constexpr_lut_to_dense(indices=%idx, lut=%constexpr_blockwise_shift_scale_1, name="constexpr_lut_to_dense_1")
 *       %s: (1, 1, fp16)*(Tensor) = const(val=[[2.0]], name="s")
 *     } -> (%ws)
 *   }
 *
 * Conditions: the first op's output is read by exactly one op, of the
 * other kind. Moving the scale onto the palette gives it two trailing
 * 1-dims; when it is not all 1s the palette must be const and is repeated
 * along the axes where the scale is longer (skipped when that is not a
 * whole multiple). Moving it back onto the dense weight needs its last two
 * dims to be 1. A new op keeps the old op's name unless that name contains
 * the op type (then it gets a fresh one).
 *
 * Mirrors coremltools/converters/mil/mil/passes/defs/optimize_quantization.py
 * (canonicalize_quantized_lut_pattern).
 */
#include <stdlib.h>
#include <string.h>

#include "passes/fuse_util_internal.h"
#include "passes/pass_internal.h"

#define PASS "canonicalize_quantized_lut_pattern"
#define LUT "constexpr_lut_to_dense"
#define SHIFT "constexpr_blockwise_shift_scale"

/* Repeats every element of v `k` times along `axis` (numpy repeat). */
static mil_value *repeat(mil_program *p, const mil_value *v, int32_t axis, int64_t k) {
  const mil_type *t = v->type;
  int32_t r = t->rank;
  int64_t shape[64], outer = 1, inner = 1;
  for (int32_t i = 0; i < r; i++) {
    shape[i] = t->dims[i].size;
    if (i < axis) outer *= shape[i];
    if (i > axis) inner *= shape[i];
  }
  int64_t len = shape[axis];
  shape[axis] *= k;
  mil_value *out = mil_value_new_tensor(p, t->dtype, r, shape, false, NULL);
  if (!out) return NULL;
  int64_t o = 0;
  for (int64_t a = 0; a < outer; a++)
    for (int64_t j = 0; j < len; j++)
      for (int64_t rep = 0; rep < k; rep++)
        for (int64_t in = 0; in < inner; in++)
          mil_value_set_f64(out, o++, mil_value_get_f64(v, (a * len + j) * inner + in));
  return out;
}

static const char *kept_name(const mil_op *op) { return strstr(op->name, op->type) ? NULL : op->name; }

/* v reshaped to `rank` dims from shape. */
static const mil_value *reshaped(mil_program *p, const mil_value *v, int32_t rank, const int64_t *shape) {
  return pass_bld_reshape(p, v, rank, shape);
}

static int reorder(pass_bld *c, mil_op *op1, mil_op *op2) {
  mil_program *p = c->p;
  const char *n1 = kept_name(op1), *n2 = kept_name(op2);
  mil_status st = MIL_OK;
  mil_var *nv;
  if (strcmp(op1->type, SHIFT) == 0) {
    /* shift_scale(palette) -> lut  ==>  lut -> shift_scale(dense) */
    const mil_value *scale = pass_input_value(op1, "scale");
    if (!scale || !scale->type || scale->type->rank < 2) return 0;
    int32_t r = scale->type->rank;
    if (scale->type->dims[r - 2].size != 1 || scale->type->dims[r - 1].size != 1) return 0;
    int64_t shape[2] = {1, 1};
    const mil_value *ns = reshaped(p, scale, 2, shape);
    const mil_value *off = pass_input_value(op1, "offset");
    const mil_value *no = off ? reshaped(p, off, 2, shape) : NULL;
    if (!ns || (off && !no)) return 0;
    pass_barg a1[] = {PASS_BV("indices", mil_op_input_var(op2, "indices")), PASS_BV("lut", mil_op_input_var(op1, "data"))};
    mil_var *d1 = pass_bld_var(c, NULL, op2, LUT, n1, 2, a1, &st);
    if (!d1) return -(int)st;
    pass_barg a2[] = {PASS_BV("data", d1), PASS_BK("scale", ns),
                      off ? PASS_BK("offset", no) : PASS_BV("offset", mil_op_input_var(op1, "offset"))};
    nv = pass_bld_var(c, NULL, op2, SHIFT, n2, 3, a2, &st);
  } else {
    /* lut -> shift_scale(dense)  ==>  shift_scale(palette) -> lut */
    const mil_value *scale = pass_input_value(op2, "scale");
    if (!scale || !scale->type || scale->type->rank < 0 || scale->type->rank > 62) return 0;
    int32_t r = scale->type->rank + 2;
    int64_t shape[64];
    bool all_one = true;
    for (int32_t i = 0; i < r - 2; i++) {
      shape[i] = scale->type->dims[i].size;
      if (shape[i] != 1) all_one = false;
    }
    shape[r - 2] = shape[r - 1] = 1;
    const mil_value *ns = reshaped(p, scale, r, shape);
    const mil_value *off = pass_input_value(op2, "offset");
    const mil_value *no = off ? reshaped(p, off, r, shape) : NULL;
    if (!ns || (off && !no)) return 0;
    mil_var *lut_var = mil_op_input_var(op1, "lut");
    const mil_value *lut_val = NULL;
    if (!all_one) {
      lut_val = lut_var ? lut_var->val : NULL;
      if (!lut_val || !lut_val->type) return 0;
      int32_t lr = lut_val->type->rank;
      for (int32_t i = 0; i < r && i < lr; i++) {
        int64_t s = shape[i], l = lut_val->type->dims[i].size;
        if (s > l) {
          if (l <= 0 || s % l != 0) return 0;
          if (!(lut_val = repeat(p, lut_val, i, s / l))) return -(int)MIL_ERR_NOMEM;
        }
      }
    }
    pass_barg a1[] = {lut_val ? PASS_BK("data", lut_val) : PASS_BV("data", lut_var), PASS_BK("scale", ns),
                      off ? PASS_BK("offset", no) : PASS_BV("offset", mil_op_input_var(op2, "offset"))};
    mil_var *d1 = pass_bld_var(c, NULL, op1, SHIFT, n1, 3, a1, &st);
    if (!d1) return -(int)st;
    pass_barg a2[] = {PASS_BV("indices", mil_op_input_var(op1, "indices")), PASS_BV("lut", d1)};
    nv = pass_bld_var(c, NULL, op1, LUT, n2, 2, a2, &st);
  }
  if (!nv) return -(int)st;
  pass_replace_uses_after(op2, op2->outputs[0], nv);
  mil_op *dead[2] = {op1, op2};
  st = pass_remove_ops(dead, 2, c->d);
  return st != MIL_OK ? -(int)st : 1;
}

static int transform(pass_bld *c, mil_op *op) {
  bool ios26 = pass_op_opset(op) >= MIL_IOS26;
  const char *first = ios26 ? SHIFT : LUT, *second = ios26 ? LUT : SHIFT;
  if (strcmp(op->type, first) != 0 || op->n_outputs < 1 || pass_n_op_uses(op->outputs[0]) != 1) return 0;
  mil_op *child = pass_only_child_op(op->outputs[0]);
  if (!child || strcmp(child->type, second) != 0 || child->n_outputs < 1) return 0;
  return reorder(c, op, child);
}

/* The op types transform() can rewrite at (it returns 0 at any other). */
static const char *const k_types[] = {"constexpr_lut_to_dense", "constexpr_blockwise_shift_scale", NULL};
/* The op types no rewrite can do without. */
static const char *const k_required[] = {"constexpr_lut_to_dense", "constexpr_blockwise_shift_scale", NULL};

static mil_status run(mil_program *p, const mil_pass_options *o, mil_pass_stats *stats, mil_diag *d) {
  (void)o;
  pass_walk_spec ws = {PASS, k_types, false, PASS_WALK_NESTED_ONCE, true, k_required};
  return pass_bld_walk(p, d, &ws, transform, stats);
}

static const char *const k_anchors[] = {"constexpr_lut_to_dense", NULL};
const mil_pass_def pass_def_canonicalize_quantized_lut_pattern = {
    "common::" PASS, "rewrite dequantize-of-LUT patterns into the canonical order", NULL, 0, run, k_anchors};
