/* ONNX reductions: Reduce* (axes an attribute before opset 13 for
 * ReduceSum and before 18 for the others, an optional input after;
 * noop_with_empty_axes), ArgMax / ArgMin. MIL ops: reduce_* and
 * reduce_argmax / reduce_argmin, as coremltools' torch frontend. */
#include <string.h>

#include "onnx/import/import_internal.h"

/* Axes computed at run time (their count static): each axis in turn is
 * reduced (keep_dims) and broadcast back where the mask selects it, so the
 * tensor keeps x's shape; then the selected axes are sliced to length 1
 * and, without keepdims, reshaped away (the kept dims found by topk).
 * Right for the reductions that compose axis by axis. */
static mil_status reduce_dynamic(onnx_ctx *c, onnx_node *n, mil_var *x, mil_var *axes, bool keep) {
  const char *op = n->entry->mil_ops;
  if (!strcmp(op, "reduce_log_sum") || !strcmp(op, "reduce_sum_square"))
    return ONNX_UNSUP(c, "%s over axes computed at run time", n->op_type);
  int32_t r = onnx_rank(x);
  if (r <= 0 || r > MIL_INTERP_MAX_RANK_ONNX || onnx_rank(axes) != 1 || axes->type->dims[0].size < 0)
    return ONNX_UNSUP(c, "axes of unknown length");
  int64_t k = axes->type->dims[0].size;
  mil_var *pos;
  mil_var *sel = onnx_axes_mask(c, axes, r, &pos);
  mil_dtype dt = onnx_dtype(x);
  mil_var *y = dt == MIL_DT_BOOL ? onnx_cast(c, x, MIL_DT_INT32) : x;
  mil_var *zero = onnx_const(c, onnx_fscalar(c, onnx_dtype(y), 0));
  for (int64_t a = 0; a < r && y; a++) {
    mil_var *red = ONNX_OP(c, op, A("x", y), K("axes", onnx_i32s(c, 1, &a)), K("keep_dims", onnx_bool(c, true)));
    mil_var *full = ONNX_OP(c, "add", A("x", red), A("y", ONNX_OP(c, "mul", A("x", y), A("y", zero))));
    mil_var *on = ONNX_OP(c, "equal", A("x", ONNX_OP(c, "gather", A("x", sel), K("indices", onnx_i32(c, a)), K("axis", onnx_i32(c, 0)))),
                          K("y", onnx_i32(c, 1)));
    y = ONNX_OP(c, "select", A("cond", on), A("a", full), A("b", y));
  }
  mil_var *shape = onnx_shape_of(c, x);
  mil_var *end = ONNX_OP(c, "select", A("cond", ONNX_OP(c, "equal", A("x", sel), K("y", onnx_i32(c, 1)))), K("a", onnx_i32(c, 1)),
                         A("b", shape));
  mil_value *zeros = mil_value_new_tensor(c->p, MIL_DT_INT32, 1, (int64_t[]){r}, false, NULL);
  y = ONNX_OP(c, "slice_by_index", A("x", y), K("begin", zeros), A("end", end));
  if (!keep && y) {
    int64_t kept = r - k;
    if (kept <= 0) y = ONNX_OP(c, "reshape", A("x", y), K("shape", onnx_i32s(c, 0, NULL)));
    else {
      mil_var *key = onnx_cast(c, ONNX_OP(c, "add", A("x", pos), A("y", ONNX_OP(c, "mul", A("x", sel), K("y", onnx_i32(c, r))))), MIL_DT_FP32);
      mil_op *tk = onnx_op_full(c, "topk", 4, (pass_barg[]){A("x", key), K("k", onnx_i32(c, kept)), K("axis", onnx_i32(c, 0)),
                                                            K("ascending", onnx_bool(c, true))});
      if (!tk) return MIL_ERR_TYPE;
      y = ONNX_OP(c, "reshape", A("x", y), A("shape", ONNX_OP(c, "gather", A("x", shape), A("indices", tk->outputs[1]), K("axis", onnx_i32(c, 0)))));
    }
  }
  return onnx_set_out(c, n, 0, onnx_cast(c, y, dt));
}

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
    mil_var *av = onnx_in(n, 1);
    if (!onnx_val_ints(c, av, &axes, &k)) {
      if (onnx_rank(av) == 1 && av->type->dims[0].size == 0) k = 0; /* empty: static */
      else return reduce_dynamic(c, n, x, av, keep);
    }
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
