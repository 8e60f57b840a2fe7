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

const interp_kernel interp_kernels_constexpr[] = {
    {"constexpr_affine_dequantize", k_materialize, INTERP_K_SELF},
    {"constexpr_blockwise_shift_scale", k_materialize, INTERP_K_SELF},
    {"constexpr_cast", k_materialize, INTERP_K_SELF},
    {"constexpr_lut_to_dense", k_materialize, INTERP_K_SELF},
    {"constexpr_lut_to_sparse", k_materialize, INTERP_K_SELF},
    {"constexpr_sparse_blockwise_shift_scale", k_materialize, INTERP_K_SELF},
    {"constexpr_sparse_to_dense", k_materialize, INTERP_K_SELF},
    {"dequantize", k_materialize, INTERP_K_SELF},
};
INTERP_FAMILY_COUNT(constexpr);
