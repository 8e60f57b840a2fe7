/* ONNX quantization: QuantizeLinear, DequantizeLinear (per tensor, and per
 * axis from opset 13), DynamicQuantizeLinear. The importer holds int8 /
 * uint8 tensors as int32 (as it does every integer type), so the affine
 * maps are spelled out in fp32 (coremltools' torch frontend decomposes
 * quantize_per_tensor the same way before iOS17's quantize op):
 *   dequantize: (x - zero_point) * scale
 *   quantize:   clip(round(x / scale) + zero_point, lo, hi), round half to
 *               even; [lo, hi] = [0, 255] for uint8, [-128, 127] for int8. */
#include <string.h>

#include "onnx/import/import_internal.h"
#include "onnx/import/ops_quant_internal.h"

/* From iOS17 a QuantizeLinear -> DequantizeLinear pair on an activation
 * becomes MIL's quantize -> dequantize (what coremltools'
 * linear_quantize_activations makes), when the scale and zero point are
 * known, per tensor or per axis, and the quantized tensor only feeds
 * DequantizeLinear nodes of the main graph. Before iOS17, or otherwise,
 * the arithmetic below is kept. DequantizeLinear of an initializer becomes
 * a compression op (ops_quant_weights.c). */

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

/* value v as a new tensor of dtype dt, its shape kept */
static mil_value *as_dtype(onnx_ctx *c, const mil_value *v, mil_dtype dt) {
  if (v->type->dtype == dt) return (mil_value *)v;
  return pass_bld_astype(c->p, v, dt);
}

/* scale (and zero point) known and per tensor (rank 0) or a vector of x's
 * dim along axis (rank 1, more than one value); the one-value vectors of
 * per-tensor parameters are squeezed to scalars by the callers (scalar()). */
static bool simple_params(const onnx_node *n, const mil_value *s, const mil_value *z, const mil_var *x) {
  if (!s || s->kind != MIL_VAL_TENSOR || !s->type || s->type->rank > 1 || (onnx_in(n, 2) && !z)) return false;
  if (onnx_attr_i(n, "block_size", 0) != 0 || onnx_rank(x) < 0) return false;
  if (z && (z->kind != MIL_VAL_TENSOR || !z->type || z->numel != s->numel || z->type->rank > 1)) return false;
  if (s->numel == 1) return true;
  int64_t axis = onnx_attr_i(n, "axis", 1);
  if (!onnx_axis(&axis, onnx_rank(x))) return false;
  return x->type->dims[axis].size == s->numel;
}

/* a one-value parameter as a scalar */
static const mil_value *scalar(onnx_ctx *c, const mil_value *v) {
  return v && v->numel == 1 && v->type->rank == 1 ? pass_bld_squeeze(c->p, v) : v;
}

/* the axis input of quantize / dequantize for a vector scale, or NULL */
static mil_value *q_axis(onnx_ctx *c, const onnx_node *n, const mil_value *s, const mil_var *x) {
  if (s->numel == 1) return NULL;
  int64_t axis = onnx_attr_i(n, "axis", 1);
  if (!onnx_axis(&axis, onnx_rank(x))) return NULL;
  return onnx_i32(c, axis);
}

/* dequantize(x) of a quantize output (MIL int8 / uint8) from iOS17 */
static mil_var *activation_dequantize(onnx_ctx *c, onnx_node *n, mil_var *x, mil_var *s, mil_var *z) {
  mil_dtype xdt = onnx_dtype(x);
  const mil_value *sv = onnx_val(s), *zv = onnx_val(z);
  if (c->target < MIL_IOS17 || (xdt != MIL_DT_INT8 && xdt != MIL_DT_UINT8) || !simple_params(n, sv, zv, x)) return NULL;
  sv = scalar(c, sv), zv = scalar(c, zv);
  mil_value *scale = sv ? as_dtype(c, sv, sv->type->dtype == MIL_DT_FP16 ? MIL_DT_FP16 : MIL_DT_FP32) : NULL;
  mil_value *zp = zv ? as_dtype(c, zv, xdt) : NULL, *axis = scale ? q_axis(c, n, sv, x) : NULL;
  if (!scale || (zv && !zp) || (sv->numel > 1 && !axis)) return NULL;
  pass_barg args[4] = {A("input", x), K("scale", scale)};
  int32_t k = 2;
  if (zp) args[k++] = K("zero_point", zp);
  if (axis) args[k++] = K("axis", axis);
  return onnx_op(c, "dequantize", k, args);
}

static mil_status conv_dequantize(onnx_ctx *c, onnx_node *n) {
  mil_var *x = onnx_req(c, n, 0), *s = onnx_req(c, n, 1), *zp = onnx_in(n, 2);
  if (!x || !s) return MIL_ERR_INVALID;
  mil_var *w = NULL;
  int k = onnx_dequantize_weight(c, n, &w);
  if (k < 0) return (mil_status)-k;
  if (k > 0) return onnx_set_out(c, n, 0, w);
  if ((w = activation_dequantize(c, n, x, s, zp))) return onnx_set_out(c, n, 0, w);
  if (onnx_attr(n, "block_size") && onnx_attr_i(n, "block_size", 0))
    return ONNX_UNSUP(c, "blocked quantization of a tensor computed at run time (only initializers are converted)");
  /* an initializer loaded in its quantized dtype: the arithmetic takes int32 */
  mil_dtype xdt = onnx_dtype(x);
  if (onnx_val(x) && xdt != MIL_DT_INT32 && !mil_dtype_is_float(xdt)) {
    mil_value *wide = pass_bld_astype(c->p, onnx_val(x), MIL_DT_INT32);
    if (!wide || !(x = onnx_const(c, wide))) return MIL_ERR_NOMEM;
  }
  mil_var *xf = onnx_cast(c, x, MIL_DT_FP32);
  if (zp) xf = ONNX_OP(c, "sub", A("x", xf), A("y", along(c, n, onnx_cast(c, zp, MIL_DT_FP32), x)));
  mil_var *r = ONNX_OP(c, "mul", A("x", xf), A("y", along(c, n, onnx_cast(c, s, MIL_DT_FP32), x)));
  return onnx_set_out(c, n, 0, r);
}

/* Whether value `name` of the main graph only feeds DequantizeLinear
 * nodes (and is no graph output), node n being in the main graph. */
static bool only_dequantized(onnx_ctx *c, const onnx_node *n, const char *name) {
  const Onnx__GraphProto *g = c->model ? c->model->graph : NULL;
  if (!g || !name || !name[0]) return false;
  bool in_main = false, used = false;
  for (size_t i = 0; i < g->n_node; i++) {
    const Onnx__NodeProto *m = g->node[i];
    if (m == n->proto) in_main = true;
    for (size_t j = 0; j < m->n_input; j++)
      if (m->input[j] && !strcmp(m->input[j], name)) {
        if (strcmp(m->op_type, "DequantizeLinear") != 0 || (m->domain && m->domain[0] && strcmp(m->domain, "ai.onnx")))
          return false;
        used = true;
      }
    /* a subgraph may read it too */
    for (size_t a = 0; a < m->n_attribute; a++)
      if (m->attribute[a]->g || m->attribute[a]->n_graphs) return false;
  }
  for (size_t i = 0; i < g->n_output; i++)
    if (g->output[i]->name && !strcmp(g->output[i]->name, name)) return false;
  return in_main && used;
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
  const mil_value *sv = onnx_val(s), *zv = onnx_val(zp);
  mil_dtype xdt = onnx_dtype(x), qdt = lo < 0 ? MIL_DT_INT8 : MIL_DT_UINT8;
  if (c->target >= MIL_IOS17 && (hi == 127 || hi == 255) && (xdt == MIL_DT_FP32 || xdt == MIL_DT_FP16) &&
      simple_params(n, sv, zv, x) && only_dequantized(c, n, n->proto->output[0])) {
    sv = scalar(c, sv), zv = scalar(c, zv);
    mil_value *scale = sv ? as_dtype(c, sv, xdt) : NULL, *z = zv ? as_dtype(c, zv, qdt) : NULL;
    mil_value *axis = scale ? q_axis(c, n, sv, x) : NULL;
    if (scale && (!zv || z) && (sv->numel == 1 || axis)) {
      pass_barg args[5] = {A("input", x), K("scale", scale), K("output_dtype", onnx_str(c, mil_dtype_name(qdt)))};
      int32_t k = 3;
      if (z) args[k++] = K("zero_point", z);
      if (axis) args[k++] = K("axis", axis);
      return onnx_set_out(c, n, 0, onnx_op(c, "quantize", k, args));
    }
  }
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
    {"DequantizeLinear", "", 10, 0, conv_dequantize, "constexpr_affine_dequantize, constexpr_blockwise_shift_scale, dequantize, cast, sub, mul"},
    {"QuantizeLinear", "", 10, 0, conv_quantize, "quantize, real_div, round, add, clip, cast"},
    {"DynamicQuantizeLinear", "", 11, 0, conv_dynamic_quantize, "reduce_max, reduce_min, equal, select, real_div, round, clip, cast"},
    {NULL, NULL, 0, 0, NULL, NULL},
};
