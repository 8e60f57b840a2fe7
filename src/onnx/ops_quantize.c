/* ONNX quantization: QuantizeLinear, DequantizeLinear (per tensor, and per
 * axis from opset 13), DynamicQuantizeLinear. The importer holds int8 /
 * uint8 tensors as int32 (as it does every integer type), so the affine
 * maps are spelled out in fp32 (coremltools' torch frontend decomposes
 * quantize_per_tensor the same way before iOS17's quantize op):
 *   dequantize: (x - zero_point) * scale
 *   quantize:   clip(round(x / scale) + zero_point, lo, hi), round half to
 *               even; [lo, hi] = [0, 255] for uint8, [-128, 127] for int8. */
#include <string.h>

#include "onnx/import_internal.h"

/* scale / zero point v (rank 0 or 1) shaped to broadcast along `axis` of x */
static mil_var *along(onnx_ctx *c, onnx_node *n, mil_var *v, mil_var *x) {
  if (!v || onnx_rank(v) != 1 || mil_type_numel(v->type) == 1) return v;
  int32_t r = onnx_rank(x);
  int64_t axis = onnx_attr_i(n, "axis", 1);
  if (!onnx_axis(&axis, r)) return NULL;
  int32_t k = r - 1 - (int32_t)axis;
  if (k == 0) return v;
  int64_t axes[MIL_INTERP_MAX_RANK_ONNX];
  for (int32_t i = 0; i < k; i++) axes[i] = i + 1;
  return ONNX_OP(c, "expand_dims", A("x", v), K("axes", onnx_i32s(c, k, axes)));
}

static mil_status conv_dequantize(onnx_ctx *c, onnx_node *n) {
  mil_var *x = onnx_req(c, n, 0), *s = onnx_req(c, n, 1), *zp = onnx_in(n, 2);
  if (!x || !s) return MIL_ERR_INVALID;
  if (onnx_attr(n, "block_size") && onnx_attr_i(n, "block_size", 0)) return ONNX_UNSUP(c, "blocked quantization");
  mil_var *xf = onnx_cast(c, x, MIL_DT_FP32);
  if (zp) xf = ONNX_OP(c, "sub", A("x", xf), A("y", along(c, n, onnx_cast(c, zp, MIL_DT_FP32), x)));
  mil_var *r = ONNX_OP(c, "mul", A("x", xf), A("y", along(c, n, onnx_cast(c, s, MIL_DT_FP32), x)));
  return onnx_set_out(c, n, 0, r);
}

/* saturating range of the quantized type the zero point (or output_dtype) names */
static void qrange(onnx_ctx *c, onnx_node *n, double *lo, double *hi) {
  int t = n->n_in > 2 && n->proto->input[2][0] ? onnx_declared_elem_type(c, n->proto->input[2]) : 0;
  if (!t) t = (int)onnx_attr_i(n, "output_dtype", ONNX__TENSOR_PROTO__DATA_TYPE__UINT8);
  if (t == ONNX__TENSOR_PROTO__DATA_TYPE__INT8) *lo = -128, *hi = 127;
  else if (t == ONNX__TENSOR_PROTO__DATA_TYPE__INT16) *lo = -32768, *hi = 32767;
  else if (t == ONNX__TENSOR_PROTO__DATA_TYPE__UINT16) *lo = 0, *hi = 65535;
  else *lo = 0, *hi = 255;
}

static mil_status conv_quantize(onnx_ctx *c, onnx_node *n) {
  mil_var *x = onnx_req(c, n, 0), *s = onnx_req(c, n, 1), *zp = onnx_in(n, 2);
  if (!x || !s) return MIL_ERR_INVALID;
  if (onnx_attr(n, "block_size") && onnx_attr_i(n, "block_size", 0)) return ONNX_UNSUP(c, "blocked quantization");
  if (!onnx_attr_i(n, "saturate", 1)) return ONNX_UNSUP(c, "saturate = 0");
  double lo, hi;
  qrange(c, n, &lo, &hi);
  mil_var *q = ONNX_OP(c, "round", A("x", ONNX_OP(c, "real_div", A("x", onnx_cast(c, x, MIL_DT_FP32)),
                                                    A("y", along(c, n, onnx_cast(c, s, MIL_DT_FP32), x)))));
  if (zp) q = ONNX_OP(c, "add", A("x", q), A("y", along(c, n, onnx_cast(c, zp, MIL_DT_FP32), x)));
  q = ONNX_OP(c, "clip", A("x", q), K("alpha", onnx_f32(c, lo)), K("beta", onnx_f32(c, hi)));
  return onnx_set_out(c, n, 0, onnx_cast(c, q, MIL_DT_INT32));
}

/* DynamicQuantizeLinear: uint8 with scale (max(0, max x) - min(0, min x))
 * / 255 and zero point clip(round(-min(0, min x) / scale), 0, 255). */
static mil_status conv_dynamic_quantize(onnx_ctx *c, onnx_node *n) {
  mil_var *x = onnx_req(c, n, 0);
  if (!x) return MIL_ERR_INVALID;
  mil_var *mx = ONNX_OP(c, "maximum", A("x", ONNX_OP(c, "reduce_max", A("x", x))), K("y", onnx_f32(c, 0)));
  mil_var *mn = ONNX_OP(c, "minimum", A("x", ONNX_OP(c, "reduce_min", A("x", x))), K("y", onnx_f32(c, 0)));
  /* ONNX's reference and ONNX Runtime: scale = (max - min) / 255 in fp32,
   * 1 when max == min (an all-zero x). The divisor is a run-time value
   * (a select of equal branches) so that divide_to_multiply does not turn
   * the division into a product with 1/255, which rounds differently and
   * moves x / scale across a .5 boundary now and then. */
  mil_var *same = ONNX_OP(c, "equal", A("x", mx), A("y", mn));
  mil_var *range = ONNX_OP(c, "select", A("cond", same), K("a", onnx_f32(c, 1)), A("b", ONNX_OP(c, "sub", A("x", mx), A("y", mn))));
  mil_var *den = ONNX_OP(c, "select", A("cond", same), K("a", onnx_f32(c, 255)), K("b", onnx_f32(c, 255)));
  mil_var *scale = ONNX_OP(c, "real_div", A("x", range), A("y", den));
  mil_var *zpf = ONNX_OP(c, "clip", A("x", ONNX_OP(c, "round", A("x", ONNX_OP(c, "real_div", A("x", ONNX_OP(c, "mul", A("x", mn), K("y", onnx_f32(c, -1)))), A("y", scale))))),
                         K("alpha", onnx_f32(c, 0)), K("beta", onnx_f32(c, 255)));
  mil_var *q = ONNX_OP(c, "add", A("x", ONNX_OP(c, "round", A("x", ONNX_OP(c, "real_div", A("x", x), A("y", scale))))), A("y", zpf));
  q = ONNX_OP(c, "clip", A("x", q), K("alpha", onnx_f32(c, 0)), K("beta", onnx_f32(c, 255)));
  mil_status st = onnx_set_out(c, n, 0, onnx_cast(c, q, MIL_DT_INT32));
  if (st == MIL_OK) st = onnx_set_out(c, n, 1, scale);
  if (st == MIL_OK) st = onnx_set_out(c, n, 2, onnx_cast(c, zpf, MIL_DT_INT32));
  return st;
}

const onnx_op_entry onnx_ops_quantize[] = {
    {"DequantizeLinear", "", 10, 0, conv_dequantize, "cast, sub, mul"},
    {"QuantizeLinear", "", 10, 0, conv_quantize, "real_div, round, add, clip, cast"},
    {"DynamicQuantizeLinear", "", 11, 0, conv_dynamic_quantize, "reduce_max, reduce_min, real_div, round, clip, cast"},
    {NULL, NULL, 0, 0, NULL, NULL},
};
