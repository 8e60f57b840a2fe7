/* common::reorder_lut_per_channel_scale — a palettized weight with a
 * per-output-channel scale (constexpr_lut_to_dense ->
 * constexpr_blockwise_shift_scale -> linear / matmul / conv) is rewritten
 * so the op reads the unscaled palettized weight and its output is
 * multiplied by the scale, the order the Neural Engine wants.
 *
 *   main[CoreML8](%x: (3, 4, fp16)(Tensor)) {
 *     block0() {
 *       %w: (2, 4, fp16)(Tensor) = constexpr_lut_to_dense(indices=%idx, lut=%lut, name="w")
 *       %s: (2, 1, fp16)*(Tensor) = const(val=[[1.0], [2.0]], name="s")
 *       %ws: (2, 4, fp16)(Tensor) = constexpr_blockwise_shift_scale(data=%w, scale=%s, name="ws")
 *       %tx: (bool)*(Scalar) = const(val=False, name="tx")
 *       %ty: (bool)*(Scalar) = const(val=True, name="ty")
 *       %m: (2, 3, fp16)(Tensor) = matmul(x=%ws, y=%x, transpose_x=%tx, transpose_y=%ty, name="m")
 *     } -> (%m)
 *   }
 *
 * becomes (the new matmul reads %w; %ws is removed)
 *
 *   main[CoreML8](%x: (3, 4, fp16)(Tensor)) {
 *     block0() {
 *       %w: (2, 4, fp16)(Tensor) = constexpr_lut_to_dense(indices=%idx, lut=%lut, name="w")
 *       %s: (2, 1, fp16)*(Tensor) = const(val=[[1.0], [2.0]], name="s")
 *       %tx: (bool)*(Scalar) = const(val=False, name="tx")
 *       %ty: (bool)*(Scalar) = const(val=True, name="ty")
 *       %matmul_0: (2, 3, fp16)(Tensor) = matmul(x=%w, y=%x, transpose_x=%tx, transpose_y=%ty, name="matmul_0")
 *       %mul_0_y_0: (2, 1, fp16)*(Tensor) = const(val=[[1.0], [2.0]], name="mul_0_y_0")
 *       %m: (2, 3, fp16)(Tensor) = mul(x=%matmul_0, y=%mul_0_y_0, name="mul_0")
 *     } -> (%m)
 *   }
 *
 * Conditions: the lut output is read by exactly one op, a
 * constexpr_blockwise_shift_scale of float data without a non-zero
 * offset; every reader of the scaled weight is a linear, matmul or conv;
 * the readers agree on the weight's output-channel axis (0; for matmul -1
 * or -2 depending on the operand and its transpose flag) and the scale has
 * size 1 on every other axis. The multiplier is the scale, transposed for
 * linear and for a matmul operand whose output axis comes first after
 * transposition, and shaped (1, C, 1, 1) for conv; a const bias of linear
 * and conv is divided by the scale.
 *
 * Mirrors coremltools/converters/mil/mil/passes/defs/optimize_quantization.py
 * (reorder_lut_per_channel_scale) and coremltools/optimize/coreml/_utils.py
 * (select_input_output_channel_axis).
 */
#include <stdlib.h>
#include <string.h>

#include "passes/fuse_util_internal.h"
#include "passes/pass_internal.h"

#define PASS "reorder_lut_per_channel_scale"

static bool bool_input(const mil_op *op, const char *name) {
  const mil_value *v = pass_input_value(op, name);
  return v && v->numel == 1 && mil_value_get_i64(v, 0) != 0;
}

static int32_t var_rank(const mil_var *v) {
  return v->type && v->type->kind == MIL_TYPE_TENSOR ? v->type->rank : -1;
}

/* coremltools' select_input_output_channel_axis: the output-channel axis
 * of op's output as its readers use it; false when they disagree (None)
 * or the axis cannot be told. */
static bool output_axis(const mil_op *op, int64_t *out_axis, int64_t *in_axis, int depth) {
  if (op->n_outputs < 1 || depth > 64) return false;
  mil_var *v = op->outputs[0];
  int32_t rank = var_rank(v);
  bool have_o = false, have_i = false, conflict_o = false, conflict_i = false;
  int64_t so = 0, si = 1;
  for (const mil_use *u = v->uses; u; u = u->next_use) {
    const mil_op *c = u->op;
    if (!c) continue;
    int64_t o = 0, i = 1;
    if (strcmp(c->type, "conv_transpose") == 0) {
      o = 1;
      i = 0;
    } else if (strcmp(c->type, "matmul") == 0) {
      if (mil_op_input_var(c, "y") == v) {
        bool t = bool_input(c, "transpose_y");
        o = t ? -2 : -1;
        i = t ? -1 : -2;
      } else {
        bool t = bool_input(c, "transpose_x");
        o = t ? -1 : -2;
        i = t ? -2 : -1;
      }
    } else if (strncmp(c->type, "constexpr_", 10) == 0) {
      /* coremltools unpacks the nested (input, output) pair crosswise */
      int64_t co, ci;
      if (!output_axis(c, &co, &ci, depth + 1)) return false;
      i = co;
      o = ci;
    }
    if (o < 0) o += rank;
    if (i < 0) i += rank;
    if (have_o && o != so) conflict_o = true;
    if (have_i && i != si) conflict_i = true;
    so = o;
    si = i;
    have_o = have_i = true;
  }
  if (conflict_o || conflict_i) return false;
  *out_axis = have_o ? so : 0;
  *in_axis = have_i ? si : 1;
  return true;
}

/* v with its axes reversed (numpy .T). */
static mil_value *transpose_value(mil_program *p, const mil_value *v) {
  const mil_type *t = v->type;
  int32_t r = t->rank;
  if (r <= 1) return (mil_value *)v;
  if (r > 16) return NULL;
  int64_t shape[16], strides[16];
  for (int32_t i = 0; i < r; i++) shape[i] = t->dims[r - 1 - i].size;
  int64_t s = 1;
  for (int32_t i = r - 1; i >= 0; i--) {
    strides[i] = s;
    s *= t->dims[i].size;
  }
  mil_value *out = mil_value_new_tensor(p, t->dtype, r, shape, false, NULL);
  if (!out) return NULL;
  int64_t idx[16] = {0};
  for (int64_t k = 0; k < v->numel; k++) {
    /* idx indexes out; source index uses the reversed axes */
    int64_t src = 0;
    for (int32_t a = 0; a < r; a++) src += idx[a] * strides[r - 1 - a];
    mil_value_set_f64(out, k, mil_value_get_f64(v, src));
    for (int32_t a = r - 1; a >= 0; a--) {
      if (++idx[a] < shape[a]) break;
      idx[a] = 0;
    }
  }
  return out;
}

/* bias / squeeze(scale) in bias's dtype (scale a scalar or as many
 * elements as bias). NULL when the shapes do not broadcast. */
static mil_value *divide_bias(mil_program *p, const mil_value *bias, const mil_value *scale) {
  if (scale->numel != 1 && scale->numel != bias->numel) return NULL;
  mil_value *out = pass_bld_astype(p, bias, bias->type->dtype);
  if (!out) return NULL;
  bool f16 = bias->type->dtype == MIL_DT_FP16 && scale->type->dtype == MIL_DT_FP16;
  for (int64_t i = 0; i < bias->numel; i++) {
    double s = mil_value_get_f64(scale, scale->numel == 1 ? 0 : i);
    double q = f16 ? (double)((float)mil_value_get_f64(bias, i) / (float)s) : mil_value_get_f64(bias, i) / s;
    if (bias->type->dtype == MIL_DT_FP32) q = (double)(float)q;
    mil_value_set_f64(out, i, q);
  }
  return out;
}

/* Moves the scale behind one reader (coremltools' _help_move_scale).
 * Returns 1, 0 when the reader cannot take it, -(status). */
static int move_scale(pass_bld *c, mil_op *lut, mil_op *scale_op, mil_op *out_op) {
  mil_program *p = c->p;
  const mil_value *sv = pass_input_value(scale_op, "scale");
  mil_var *w = scale_op->outputs[0], *lw = lut->outputs[0];
  const mil_value *mulv = sv;
  const char *weight_input = "weight";
  const mil_value *new_bias = NULL;
  if (strcmp(out_op->type, "linear") == 0) {
    mulv = transpose_value(p, sv);
  } else if (strcmp(out_op->type, "matmul") == 0) {
    if (mil_op_input_var(out_op, "y") == w) {
      weight_input = "y";
      if (bool_input(out_op, "transpose_y")) mulv = transpose_value(p, sv);
    } else {
      weight_input = "x";
      if (bool_input(out_op, "transpose_x")) mulv = transpose_value(p, sv);
    }
  } else {
    mil_value *sq = pass_bld_squeeze(p, sv);
    if (!sq) return -(int)MIL_ERR_NOMEM;
    if (sq->type->rank > 1) return 0;
    int64_t shape[4] = {1, sq->numel, 1, 1};
    mulv = pass_bld_reshape(p, sq, 4, shape);
  }
  if (!mulv) return -(int)MIL_ERR_NOMEM;
  if (strcmp(out_op->type, "matmul") != 0) {
    const mil_value *bias = pass_input_value(out_op, "bias");
    if (bias && bias->kind == MIL_VAL_TENSOR) {
      mil_value *sq = pass_bld_squeeze(p, mulv);
      if (!sq) return -(int)MIL_ERR_NOMEM;
      if (!(new_bias = divide_bias(p, bias, sq))) return 0;
    }
  }
  /* the reader again, with the unscaled weight (and the new bias) */
  pass_barg args[16];
  int32_t n = 0;
  for (int32_t i = 0; i < out_op->n_inputs && n < 16; i++) {
    const mil_input *in = &out_op->inputs[i];
    if (in->n_args < 1) continue;
    if (strcmp(in->name, weight_input) == 0) args[n++] = PASS_BV(in->name, lw);
    else if (new_bias && strcmp(in->name, "bias") == 0) args[n++] = PASS_BK(in->name, new_bias);
    else if (in->args[0].use.var) args[n++] = PASS_BV(in->name, in->args[0].use.var);
    else args[n++] = PASS_BK(in->name, in->args[0].value);
  }
  mil_status st = MIL_OK;
  mil_var *unscaled = pass_bld_var(c, NULL, out_op, out_op->type, NULL, n, args, &st);
  if (!unscaled) return -(int)st;
  pass_barg margs[] = {PASS_BV("x", unscaled), PASS_BK("y", mulv)};
  mil_var *scaled = pass_bld_var(c, NULL, out_op, "mul", NULL, 2, margs, &st);
  if (!scaled) return -(int)st;
  pass_replace_uses_after(out_op, out_op->outputs[0], scaled);
  return 1;
}

static int transform(pass_bld *c, mil_op *op) {
  if (strcmp(op->type, "constexpr_lut_to_dense") != 0 || op->n_outputs < 1) return 0;
  mil_op *scale_op = pass_only_child_op(op->outputs[0]);
  if (!scale_op || strcmp(scale_op->type, "constexpr_blockwise_shift_scale") != 0 || scale_op->n_outputs < 1) return 0;
  mil_var *data = mil_op_input_var(scale_op, "data");
  if (!data || !mil_dtype_is_float(pass_bld_dtype(data))) return 0;
  const mil_value *off = pass_input_value(scale_op, "offset");
  if (off && !pass_bld_all_zero(off)) return 0;
  const mil_value *sv = pass_input_value(scale_op, "scale");
  if (!sv || sv->kind != MIL_VAL_TENSOR || !sv->type) return 0;
  /* every reader must take the scale behind it */
  mil_op *readers[64];
  int32_t nr = pass_child_ops(scale_op->outputs[0], readers, 64);
  if (nr > 64) return 0;
  for (int32_t i = 0; i < nr; i++) {
    const char *t = readers[i]->type;
    if (strcmp(t, "linear") != 0 && strcmp(t, "matmul") != 0 && strcmp(t, "conv") != 0) return 0;
    int64_t oa, ia;
    if (!output_axis(scale_op, &oa, &ia, 0)) return 0;
    if (oa < 0) oa += sv->type->rank;
    for (int32_t a = 0; a < sv->type->rank; a++)
      if (a != oa && sv->type->dims[a].size != 1) return 0;
  }
  for (int32_t i = 0; i < nr; i++) {
    int r = move_scale(c, op, scale_op, readers[i]);
    if (r <= 0) return r;
    mil_status st = pass_remove_ops(&readers[i], 1, c->d);
    if (st != MIL_OK) return -(int)st;
  }
  mil_status st = pass_remove_ops(&scale_op, 1, c->d);
  return st != MIL_OK ? -(int)st : 1;
}

/* The op types transform() can rewrite at (it returns 0 at any other). */
static const char *const k_types[] = {"constexpr_lut_to_dense", NULL};
/* The op types no rewrite can do without. */
static const char *const k_required[] = {"constexpr_blockwise_shift_scale", NULL};

static mil_status run(mil_program *p, const mil_pass_options *o, mil_pass_stats *stats, mil_diag *d) {
  (void)o;
  pass_walk_spec ws = {PASS, k_types, false, PASS_WALK_NESTED_ONCE, true, k_required};
  return pass_bld_walk(p, d, &ws, transform, stats);
}

static const char *const k_anchors[] = {"constexpr_lut_to_dense", NULL};
const mil_pass_def pass_def_reorder_lut_per_channel_scale = {
    "common::" PASS, "move a per-channel scale after a LUT dequantization", NULL, 0, run, k_anchors};
