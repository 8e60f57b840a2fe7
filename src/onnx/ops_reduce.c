/* ONNX reductions: Reduce* (axes an attribute before opset 13 for
 * ReduceSum and before 18 for the others, an optional input after;
 * noop_with_empty_axes), ArgMax / ArgMin. MIL ops: reduce_* and
 * reduce_argmax / reduce_argmin, as coremltools' torch frontend. */
#include <string.h>

#include "onnx/import_internal.h"

static mil_status conv_reduce(onnx_ctx *c, onnx_node *n) {
  mil_var *x = onnx_req(c, n, 0);
  if (!x) return MIL_ERR_INVALID;
  int input_since = strcmp(n->op_type, "ReduceSum") == 0 ? 13 : 18;
  bool keep = onnx_attr_i(n, "keepdims", 1) != 0;
  int64_t *axes = NULL;
  int32_t k = -1;
  if (n->opset < input_since) {
    const int64_t *a;
    k = onnx_attr_ints(n, "axes", &a);
    axes = (int64_t *)a;
  } else if (onnx_in(n, 1)) {
    if (!onnx_val_ints(c, onnx_in(n, 1), &axes, &k)) return ONNX_UNSUP(c, "axes not known at conversion time");
  }
  if (k == 0) k = -1;
  if (k < 0 && n->opset >= input_since && onnx_attr_i(n, "noop_with_empty_axes", 0))
    return onnx_set_out(c, n, 0, ONNX_OP(c, "identity", A("x", x)));
  mil_dtype dt = onnx_dtype(x);
  mil_var *xx = dt == MIL_DT_BOOL ? onnx_cast(c, x, MIL_DT_INT32) : x;
  mil_var *r;
  if (onnx_rank(x) == 0) r = ONNX_OP(c, "identity", A("x", xx));
  else if (k < 0) r = ONNX_OP(c, n->entry->mil_ops, A("x", xx), K("keep_dims", onnx_bool(c, keep)));
  else r = ONNX_OP(c, n->entry->mil_ops, A("x", xx), K("axes", onnx_i32s(c, k, axes)), K("keep_dims", onnx_bool(c, keep)));
  return onnx_set_out(c, n, 0, onnx_cast(c, r, dt));
}

static mil_status conv_arg(onnx_ctx *c, onnx_node *n) {
  mil_var *x = onnx_req(c, n, 0);
  if (!x) return MIL_ERR_INVALID;
  int64_t axis = onnx_attr_i(n, "axis", 0);
  bool keep = onnx_attr_i(n, "keepdims", 1) != 0;
  if (onnx_attr_i(n, "select_last_index", 0)) {
    /* the last extreme: the first one of the reversed axis, counted back */
    if (!onnx_axis(&axis, onnx_rank(x))) return onnx_fail(c, MIL_ERR_INVALID, "axis out of range");
    int64_t dim = x->type->dims[axis].size;
    if (dim < 0) return ONNX_UNSUP(c, "select_last_index=1 along a symbolic dim");
    mil_var *rev = ONNX_OP(c, "reverse", A("x", x), K("axes", onnx_i32s(c, 1, &axis)));
    mil_var *i = ONNX_OP(c, n->entry->mil_ops, A("x", rev), K("axis", onnx_i32(c, axis)), K("keep_dims", onnx_bool(c, keep)));
    return onnx_set_out(c, n, 0, ONNX_OP(c, "sub", K("x", onnx_i32(c, dim - 1)), A("y", i)));
  }
  return onnx_set_out(c, n, 0, ONNX_OP(c, n->entry->mil_ops, A("x", x), K("axis", onnx_i32(c, axis)),
                                       K("keep_dims", onnx_bool(c, keep))));
}

const onnx_op_entry onnx_ops_reduce[] = {
    {"ReduceSum", "", 1, 0, conv_reduce, "reduce_sum"},
    {"ReduceMean", "", 1, 0, conv_reduce, "reduce_mean"},
    {"ReduceMax", "", 1, 0, conv_reduce, "reduce_max"},
    {"ReduceMin", "", 1, 0, conv_reduce, "reduce_min"},
    {"ReduceProd", "", 1, 0, conv_reduce, "reduce_prod"},
    {"ReduceL1", "", 1, 0, conv_reduce, "reduce_l1_norm"},
    {"ReduceL2", "", 1, 0, conv_reduce, "reduce_l2_norm"},
    {"ReduceLogSum", "", 1, 0, conv_reduce, "reduce_log_sum"},
    {"ReduceLogSumExp", "", 1, 0, conv_reduce, "reduce_log_sum_exp"},
    {"ReduceSumSquare", "", 1, 0, conv_reduce, "reduce_sum_square"},
    {"ArgMax", "", 1, 0, conv_arg, "reduce_argmax"},
    {"ArgMin", "", 1, 0, conv_arg, "reduce_argmin"},
    {NULL, NULL, 0, 0, NULL, NULL},
};
