/* ONNX linear algebra: MatMul, Gemm (transA / transB / alpha / beta).
 * Gemm with a known B and C becomes linear (coremltools' torch addmm /
 * linear), otherwise matmul with transposes plus scaling. */
#include <string.h>

#include "onnx/import_internal.h"

static mil_status conv_matmul(onnx_ctx *c, onnx_node *n) {
  mil_var *a = onnx_req(c, n, 0), *b = onnx_req(c, n, 1);
  if (!a || !b) return MIL_ERR_INVALID;
  return onnx_set_out(c, n, 0, ONNX_OP(c, "matmul", A("x", a), A("y", b)));
}

static mil_status conv_gemm(onnx_ctx *c, onnx_node *n) {
  mil_var *a = onnx_req(c, n, 0), *b = onnx_req(c, n, 1), *cc = onnx_in(n, 2);
  if (!a || !b) return MIL_ERR_INVALID;
  double alpha = onnx_attr_f(n, "alpha", 1), beta = onnx_attr_f(n, "beta", 1);
  bool ta = onnx_attr_i(n, "transA", 0) != 0, tb = onnx_attr_i(n, "transB", 0) != 0;
  mil_dtype dt = onnx_dtype(a);
  mil_var *r;
  bool bias_ok = !cc || (cc->val && onnx_rank(cc) <= 1 && beta == 1);
  if (b->val && !ta && alpha == 1 && bias_ok && onnx_rank(b) == 2) {
    mil_var *w = tb ? b : ONNX_OP(c, "transpose", A("x", b), K("perm", onnx_i32s(c, 2, (int64_t[]){1, 0})));
    int64_t nout = w && w->type->dims[0].size >= 0 ? w->type->dims[0].size : -1;
    if (cc && (nout < 0 || mil_type_numel(cc->type) != nout)) bias_ok = false;
    if (bias_ok && w) {
      r = cc ? ONNX_OP(c, "linear", A("x", a), A("weight", w), A("bias", cc)) : ONNX_OP(c, "linear", A("x", a), A("weight", w));
      return onnx_set_out(c, n, 0, r);
    }
  }
  r = ONNX_OP(c, "matmul", A("x", a), A("y", b), K("transpose_x", onnx_bool(c, ta)), K("transpose_y", onnx_bool(c, tb)));
  if (r && alpha != 1) r = ONNX_OP(c, "mul", A("x", r), K("y", onnx_fscalar(c, dt, alpha)));
  if (r && cc) {
    mil_var *cb = beta == 1 ? cc : ONNX_OP(c, "mul", A("x", cc), K("y", onnx_fscalar(c, dt, beta)));
    r = ONNX_OP(c, "add", A("x", r), A("y", cb));
  }
  return onnx_set_out(c, n, 0, r);
}

const onnx_op_entry onnx_ops_linalg[] = {
    {"MatMul", "", 1, 0, conv_matmul, "matmul"},
    {"Gemm", "", 1, 0, conv_gemm, "linear / matmul"},
    {NULL, NULL, 0, 0, NULL, NULL},
};
