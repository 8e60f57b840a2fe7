/* Op family "quantization_ops" (coremltools ops/defs/iOS17/
 * quantization_ops.py): quantize (value inference: coremltools'
 * quantize_by_scale_and_zp) and dequantize (no value inference; its
 * materialized value is op_constexpr_materialize's, like the constexpr ops). */
#include <string.h>

#include "ops/compression_internal.h"

/* _check_scale_zp_shapes */
static mil_status check_scale_zp(mil_infer_ctx *c) {
  const mil_type *in = op_type(c, "input"), *sc = op_type(c, "scale"), *zp = op_type(c, "zero_point");
  bool has_axis = op_has(c, "axis");
  if (sc->rank == 0) {
    if (has_axis) return op_fail(c, "axis should not be provided to %s if scale/zp are scalars", c->def->type);
    if (zp && zp->rank != 0) return op_fail(c, "zero_point should be a scalar if scale is a scalar, got %s", op_tstr(c, zp));
    return MIL_OK;
  }
  if (sc->rank != 1) return op_fail(c, "Params scale & zero_point should both be scalars or vectors, got scale %s", op_tstr(c, sc));
  int64_t axis;
  if (!has_axis) return op_fail(c, "axis should be provided to %s if scale/zp are not scalars", c->def->type);
  if (!op_need_int(c, "axis", &axis) || !op_need_rank(c, "input", in)) return MIL_ERR_TYPE;
  if (axis < -in->rank || axis >= in->rank)
    return op_fail(c, "Parameter axis needs to be in the range -input.rank <= axis < input.rank (axis %lld, input %s)",
                   (long long)axis, op_tstr(c, in));
  int64_t n = in->dims[axis < 0 ? axis + in->rank : axis].size;
  if (sc->dims[0].size != n)
    return op_fail(c,
                   "Parameter scale, if vector, needs to have same size as the dimension size along the parameter "
                   "input (scale %s, input %s, axis %lld)",
                   op_tstr(c, sc), op_tstr(c, in), (long long)axis);
  if (zp) {
    if (zp->rank != 1) return op_fail(c, "zero_point should be a vector if scale is a vector, got %s", op_tstr(c, zp));
    if (zp->dims[0].size != n)
      return op_fail(c,
                     "Parameter zero_point, if vector, needs to have same size as the dimension size along the "
                     "parameter input (zero_point %s, input %s)",
                     op_tstr(c, zp), op_tstr(c, in));
  }
  return MIL_OK;
}

static mil_status infer_quantize(mil_infer_ctx *c) {
  const char *s = op_str(c, "output_dtype", NULL);
  mil_dtype out;
  if (!s) return op_fail(c, "input 'output_dtype' must be a known string");
  if (!mil_dtype_from_name(s, strlen(s), &out) || (out != MIL_DT_UINT8 && out != MIL_DT_INT8))
    return op_fail(c, "\"quantize\" op: unrecognized output dtype \"%s\" (expected uint8 or int8)", s);
  const mil_type *zp = op_type(c, "zero_point");
  if (zp && zp->dtype != out)
    return op_fail(c, "output_dtype & zero_point dtype mismatch: %s, %s", s, mil_dtype_name(zp->dtype));
  const mil_value *sc = op_in_value(c, "scale");
  if (sc) {
    bool all_zero = true;
    for (int64_t i = 0; i < sc->numel && all_zero; i++) all_zero = mil_value_get_f64(sc, i) == 0;
    if (all_zero) return op_fail(c, "quantize op: scale cannot be 0");
  }
  mil_status st = check_scale_zp(c);
  if (st) return st;
  const mil_type *in = op_type(c, "input");
  op_set_out(c, 0, op_tensor(c, out, in->rank, in->dims));
  return MIL_OK;
}

static mil_status fold_quantize(mil_infer_ctx *c) {
  const mil_value *x = op_val(c, "input"), *sc = op_val(c, "scale"), *zp = op_val(c, "zero_point");
  int64_t axis = 0;
  if (!x || !sc || (op_has(c, "zero_point") && !zp)) return MIL_OK;
  if (op_has(c, "axis") && !op_known_int(c, "axis", &axis)) return MIL_OK;
  op_set_val(c, 0, cx_quantize(c->prog, x, zp, sc, axis, c->out[0]->dtype, NULL));
  return MIL_OK;
}

static mil_status infer_dequantize(mil_infer_ctx *c) {
  mil_status st = check_scale_zp(c);
  if (st) return st;
  const mil_type *in = op_type(c, "input");
  op_set_out(c, 0, op_tensor(c, op_type(c, "scale")->dtype, in->rank, in->dims));
  return MIL_OK;
}

#define TIN(n, d, tv) IN_SPEC(n, MIL_IK_TENSOR, d, tv, 0, NULL)
#define TC(n, d, tv) IN_SPEC(n, MIL_IK_TENSOR, d, tv, MIL_IF_CONST, NULL)
#define TOPT(n, d, tv) IN_SPEC(n, MIL_IK_TENSOR, d, tv, MIL_IF_CONST | MIL_IF_OPTIONAL, NULL)
#define Q8 (MIL_DTB(MIL_DT_UINT8) | MIL_DTB(MIL_DT_INT8))

static const mil_input_spec in_quantize[] = {TIN("input", MIL_DTS_FLOAT, "SrcT"), TOPT("zero_point", Q8, "DstT"),
                                             TC("scale", MIL_DTS_FLOAT, "SrcT"), TOPT("axis", MIL_DTS_INT32, NULL),
                                             TC("output_dtype", MIL_DTS_STRING, NULL)};
static const mil_input_spec in_dequantize[] = {TIN("input", Q8, "SrcT"), TOPT("zero_point", Q8, "SrcT"),
                                               TC("scale", MIL_DTS_FLOAT, "DstT"), TOPT("axis", MIL_DTS_INT32, NULL)};

#define N(a) (int32_t)(sizeof a / sizeof a[0])

const mil_op_def op_defs_quantization_ops[] = {
    {"quantize", MIL_IOS17, "quantization_ops", in_quantize, N(in_quantize), 1, infer_quantize, fold_quantize, NULL,
     "Affine quantization to int8/uint8: round(input / scale) + zero_point, clipped."},
    {"dequantize", MIL_IOS17, "quantization_ops", in_dequantize, N(in_dequantize), 1, infer_dequantize, NULL, NULL,
     "Affine dequantization: (input - zero_point) * scale."},
};
OP_FAMILY_COUNT(quantization_ops);
