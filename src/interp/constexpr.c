/* Kernels of the constexpr_* ops (coremltools ops/defs/iOS16/constexpr_ops.py,
 * iOS18/compression.py) and dequantize (iOS17/quantization_ops.py): the
 * op registry's decompression (op_constexpr_materialize, the same code
 * const_elimination and the weight readers use) computes the dense values. */
#include <string.h>

#include "interp/interp_internal.h"
#include "ops/tensor_ops_internal.h"

/* Decompressed weights are cached by output var name across runs: a
 * constexpr op's inputs are consts, so its outputs never change. */
static mil_status k_materialize(interp_run *r, mil_infer_ctx *c) {
  mil_op *op = c->op;
  bool is_constexpr = strncmp(op->type, "constexpr_", 10) == 0;
  for (int32_t i = 0; i < op->n_outputs; i++) {
    const char *name = op->outputs[i]->name;
    const mil_value *v = is_constexpr ? interp_cache_get_value(r->cache, r->prog, name) : NULL;
    if (!v) {
      v = op_constexpr_materialize(op, i, c->diag);
      if (v && is_constexpr) interp_cache_put_value(r->cache, name, v);
    }
    if (!v) return interp_fail(c, MIL_ERR_INVALID, "could not decompress output %d", i);
    c->val[i] = v;
    c->out[i] = v->type;
  }
  return MIL_OK;
}

/* dequantize of a run-time tensor (iOS17 quantization_ops.py; ONNX's
 * DequantizeLinear): (input - zero_point) * scale in fp32, the scale and
 * zero point one value or a vector along axis, written to a run value
 * (not the program, as the materialization of a constant input is). */
static mil_status k_dequantize(interp_run *r, mil_infer_ctx *c) {
  const mil_value *q = op_val(c, "input"), *s = op_val(c, "scale");
  const mil_value *zp = op_has(c, "zero_point") ? op_val(c, "zero_point") : NULL;
  if (!q || !s || q->kind != MIL_VAL_TENSOR || (op_has(c, "zero_point") && !zp)) return INTERP_DECLINE;
  int64_t shape[MIL_INTERP_MAX_RANK], axis = 0;
  int32_t rank = interp_vshape(q, shape);
  const mil_value *ax = op_has(c, "axis") ? op_val(c, "axis") : NULL;
  if (ax) axis = mil_value_get_i64(ax, 0);
  if (axis < 0) axis += rank;
  int64_t inner = 1, n = s->numel;
  if (n > 1) {
    if (axis < 0 || axis >= rank || shape[axis] != n || (zp && zp->numel != n))
      return interp_fail(c, MIL_ERR_INVALID, "scale / zero_point do not match the input's dim along axis %lld",
                         (long long)axis);
    for (int32_t i = (int32_t)axis + 1; i < rank; i++) inner *= shape[i];
  }
  mil_value *out = interp_new_shape(r, s->type->dtype, rank, shape, q->type->is_scalar);
  if (!out) return interp_nomem(c);
  for (int64_t k = 0; k < q->numel; k++) {
    int64_t j = n > 1 ? (k / inner) % n : 0;
    float x = (float)mil_value_get_f64(q, k);
    if (zp) x -= (float)mil_value_get_f64(zp, j);
    mil_value_set_f64(out, k, x * (float)mil_value_get_f64(s, j));
  }
  c->val[0] = out;
  return MIL_OK;
}

const interp_kernel interp_kernels_constexpr[] = {
    {"constexpr_affine_dequantize", k_materialize, INTERP_K_SELF},
    {"constexpr_blockwise_shift_scale", k_materialize, INTERP_K_SELF},
    {"constexpr_cast", k_materialize, INTERP_K_SELF},
    {"constexpr_lut_to_dense", k_materialize, INTERP_K_SELF},
    {"constexpr_lut_to_sparse", k_materialize, INTERP_K_SELF},
    {"constexpr_sparse_blockwise_shift_scale", k_materialize, INTERP_K_SELF},
    {"constexpr_sparse_to_dense", k_materialize, INTERP_K_SELF},
    {"dequantize", k_dequantize, 0},
};
INTERP_FAMILY_COUNT(constexpr);
