/* common::dequantize_to_constexpr — a dequantize whose input, scale, zero
 * point and axis are all known at compile time becomes a constexpr op, so
 * the weight stays compressed when the model is saved.
 *
 *   main[CoreML7]() {
 *     block0() {
 *       %q: (2,uint8)*(Tensor) = const(val=[10, 11], name="q")
 *       %s: (fp16)*(Scalar) = const(val=0.5, name="s")
 *       %w: (2,fp16)(Tensor) = dequantize(input=%q, scale=%s, name="w")
 *     } -> (%w)
 *   }
 *
 * becomes (before iOS18: constexpr_affine_dequantize, with the zero point 0
 * of the input's dtype when it had none, and axis 0 or the first non-1 axis
 * of the scale when it had none; scale and zero point squeezed)
 *
 *   main[CoreML7]() {
 *     block0() {
 *       %q: (2,uint8)*(Tensor) = const(val=[10, 11], name="q")
 *       %s: (fp16)*(Scalar) = const(val=0.5, name="s")
 *       %w_affine_dequantized_quantized_data_0: (2,uint8)*(Tensor) = const(val=[10, 11], name="w_affine_dequantized_quantized_data_0")
 *       %w_affine_dequantized_zero_point_0: (uint8)*(Scalar) = const(val=0, name="w_affine_dequantized_zero_point_0")
 *       %w_affine_dequantized_scale_0: (fp16)*(Scalar) = const(val=0.5, name="w_affine_dequantized_scale_0")
 *       %w_affine_dequantized_axis_0: (int32)*(Scalar) = const(val=0, name="w_affine_dequantized_axis_0")
 *       %w: (2,fp16)(Tensor) = constexpr_affine_dequantize(quantized_data=%w_affine_dequantized_quantized_data_0, zero_point=%w_affine_dequantized_zero_point_0, scale=%w_affine_dequantized_scale_0, axis=%w_affine_dequantized_axis_0, name="w_affine_dequantized")
 *     } -> (%w)
 *   }
 *
 * From iOS18 on the op is constexpr_blockwise_shift_scale(data, scale
 * [, offset]) with the scale reshaped to the data's rank, the data stored as
 * int4/uint4 when every value fits, and an offset only for a non-zero zero
 * point. The new op is named "<dequantize>_affine_dequantized".
 *
 * Mirrors coremltools/converters/mil/mil/passes/defs/optimize_quantization.py
 * (dequantize_to_constexpr) and frontend/_utils.py
 * (_construct_constexpr_dequant_op).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "passes/fuse_util_internal.h"
#include "passes/pass_internal.h"

#define PASS "dequantize_to_constexpr"

/* coremltools' construct for opsets before iOS18. */
static mil_op *build_affine(pass_bld *c, mil_op *op, const char *name, const mil_value *data, const mil_value *zp,
                            const mil_value *scale, const mil_value *axis, mil_status *st) {
  mil_program *p = c->p;
  int64_t ax = 0;
  if (axis) {
    ax = mil_value_get_i64(axis, 0);
  } else {
    /* the first axis of the scale with more than one element */
    const mil_type *t = scale->type;
    for (int32_t i = 0; t && i < t->rank; i++)
      if (t->dims[i].size > 1) {
        ax = i;
        break;
      }
  }
  mil_value *axv = pass_bld_i32(p, ax);
  mil_value *sq_scale = pass_bld_squeeze(p, scale);
  mil_value *sq_zp = pass_bld_squeeze(p, zp);
  if (!axv || !sq_scale || !sq_zp) {
    *st = mil_diag_error(c->d, MIL_ERR_NOMEM, PASS ": out of memory");
    return NULL;
  }
  /* affine dequantization takes a scale and zero point of rank <= 1 */
  if (sq_scale->type->rank > 1 || sq_zp->type->rank > 1) {
    *st = MIL_OK;
    return NULL;
  }
  pass_barg args[] = {PASS_BK("quantized_data", data), PASS_BK("zero_point", sq_zp), PASS_BK("scale", sq_scale),
                      PASS_BK("axis", axv)};
  return pass_bld_op(c, NULL, op, "constexpr_affine_dequantize", name, 4, args, st);
}

/* coremltools' construct from iOS18 on. */
static mil_op *build_blockwise(pass_bld *c, mil_op *op, const char *name, const mil_value *data, const mil_value *zp,
                               bool zp_given, const mil_value *scale, const mil_value *axis, mil_status *st) {
  mil_program *p = c->p;
  const mil_type *dt = data->type, *stt = scale->type;
  int32_t rank = dt->rank;
  if (rank < 0 || rank > 64) {
    *st = MIL_OK;
    return NULL;
  }
  const mil_value *sc = scale;
  if (stt->rank != rank) {
    int64_t shape[64];
    for (int32_t i = 0; i < rank; i++) shape[i] = 1;
    if (axis) {
      int64_t a = mil_value_get_i64(axis, 0);
      if (a < 0) a += rank;
      if (a < 0 || a >= rank) {
        *st = MIL_OK;
        return NULL;
      }
      shape[a] = dt->dims[a].size;
    } else {
      if (stt->rank > rank) {
        *st = MIL_OK;
        return NULL;
      }
      for (int32_t i = 0; i < stt->rank; i++) shape[i] = stt->dims[i].size;
    }
    int64_t n = 1;
    for (int32_t i = 0; i < rank; i++) n *= shape[i];
    if (n != scale->numel) {
      *st = MIL_OK;
      return NULL;
    }
    sc = pass_bld_reshape(p, scale, rank, shape);
    if (!sc) goto oom;
  }
  /* store the data as 4-bit when every value fits */
  bool is_unsigned = mil_dtype_is_unsigned(dt->dtype);
  int64_t lo = is_unsigned ? 0 : -8, hi = is_unsigned ? 15 : 7;
  bool fits = data->numel > 0;
  for (int64_t i = 0; i < data->numel && fits; i++) {
    int64_t x = mil_value_get_i64(data, i);
    fits = x >= lo && x <= hi;
  }
  mil_dtype data_dt = dt->dtype;
  const mil_value *d2 = data;
  if (fits && !mil_dtype_is_subbyte(dt->dtype)) {
    data_dt = is_unsigned ? MIL_DT_UINT4 : MIL_DT_INT4;
    if (!(d2 = pass_bld_astype(p, data, data_dt))) goto oom;
  }
  const mil_value *offset = NULL;
  if (zp_given && !pass_bld_all_zero(zp)) {
    int64_t shape[64];
    for (int32_t i = 0; i < sc->type->rank; i++) shape[i] = sc->type->dims[i].size;
    mil_value *o = zp->numel == sc->numel ? pass_bld_reshape(p, zp, sc->type->rank, shape) : NULL;
    if (!o) {
      *st = MIL_OK;
      return NULL;
    }
    if (!mil_dtype_is_float(zp->type->dtype) && !(o = pass_bld_astype(p, o, data_dt))) goto oom;
    offset = o;
  }
  pass_barg args[] = {PASS_BK("data", d2), PASS_BK("scale", sc), PASS_BK("offset", offset)};
  return pass_bld_op(c, NULL, op, "constexpr_blockwise_shift_scale", name, 3, args, st);
oom:
  *st = mil_diag_error(c->d, MIL_ERR_NOMEM, PASS ": out of memory");
  return NULL;
}

static int transform(pass_bld *c, mil_op *op) {
  if (strcmp(op->type, "dequantize") != 0 || op->n_outputs != 1) return 0;
  mil_var *in = mil_op_input_var(op, "input");
  const mil_value *data = pass_input_value(op, "input");
  const mil_value *scale = pass_input_value(op, "scale");
  const mil_value *zp = pass_input_value(op, "zero_point");
  const mil_value *axis = pass_input_value(op, "axis");
  bool has_zp = pass_bld_has(op, "zero_point"), has_axis = pass_bld_has(op, "axis");
  /* can_materialize_val */
  if (!in || !data || !scale || (has_zp && !zp) || (has_axis && !axis)) return 0;
  if (data->kind != MIL_VAL_TENSOR || scale->kind != MIL_VAL_TENSOR || !data->type || !scale->type) return 0;
  bool zp_given = has_zp;
  if (!has_zp) {
    mil_dtype zdt = data->type->dtype == MIL_DT_INT8 ? MIL_DT_INT8 : MIL_DT_UINT8;
    if (!(zp = mil_value_new_scalar_i64(c->p, zdt, 0))) return -(int)MIL_ERR_NOMEM;
  }
  size_t len = strlen(op->name) + 32;
  char *name = malloc(len);
  if (!name) return -(int)MIL_ERR_NOMEM;
  snprintf(name, len, "%s_affine_dequantized", op->name);
  mil_status st = MIL_OK;
  mil_op *nop = pass_op_opset(op) >= MIL_IOS18
                    ? build_blockwise(c, op, name, data, zp, zp_given, scale, has_axis ? axis : NULL, &st)
                    : build_affine(c, op, name, data, zp, scale, has_axis ? axis : NULL, &st);
  free(name);
  if (!nop) return st == MIL_OK ? 0 : -(int)st;
  pass_replace_uses_after(op, op->outputs[0], nop->outputs[0]);
  st = pass_remove_ops(&op, 1, c->d);
  return st != MIL_OK ? -(int)st : 1;
}

/* The op types transform() can rewrite at (it returns 0 at any other). */
static const char *const k_types[] = {"dequantize", NULL};

static mil_status run(mil_program *p, const mil_pass_options *o, mil_pass_stats *stats, mil_diag *d) {
  (void)o;
  mil_status st = pass_infer_marked_values(p, d);
  if (st != MIL_OK) return st;
  pass_walk_spec ws = {PASS, k_types, false, PASS_WALK_NESTED_ONCE, true, NULL};
  return pass_bld_walk(p, d, &ws, transform, stats);
}

static const char *const k_anchors[] = {"dequantize", NULL};
const mil_pass_def pass_def_dequantize_to_constexpr = {
    "common::" PASS, "turn dequantize of a const into constexpr_affine_dequantize", NULL, 0, run, k_anchors};
