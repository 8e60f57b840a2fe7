/* ONNX losses: NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss
 * (opsets 12, 13, 22: only the accepted types changed).
 *
 * MIL has no loss op; both are decomposed as ONNX's own function bodies
 * define them:
 *   t      = target where target != ignore_index, else 0 (a safe index)
 *   w      = weight[t] (1 without weight) * (target != ignore_index)
 *   loss   = -input[n, t[n, d...], d...] * w       gather_along_axis on axis 1
 *   reduction "none": loss; "sum": sum(loss); "mean": sum(loss) / sum(w)
 * SoftmaxCrossEntropyLoss applies that to log_softmax(scores, axis 1),
 * its optional second output. */
#include <string.h>

#include "onnx/import/import_internal.h"

/* The loss of log-probabilities lp [N, C, d...] against target [N, d...]. */
static mil_var *nll(onnx_ctx *c, onnx_node *n, mil_var *lp, mil_var *target, mil_var *weight) {
  const char *red = onnx_attr_s(c, n, "reduction", "mean");
  if (strcmp(red, "none") != 0 && strcmp(red, "sum") != 0 && strcmp(red, "mean") != 0) {
    onnx_fail(c, MIL_ERR_INVALID, "reduction must be none, sum or mean, got \"%s\"", red);
    return NULL;
  }
  mil_dtype dt = onnx_dtype(lp);
  int32_t rt = onnx_rank(target);
  if (onnx_rank(lp) < 2 || rt != onnx_rank(lp) - 1) {
    onnx_fail(c, MIL_ERR_INVALID, "input must be [N, C, d...] and target [N, d...], got ranks %d and %d",
              (int)onnx_rank(lp), (int)rt);
    return NULL;
  }
  mil_var *t = onnx_cast(c, target, MIL_DT_INT32);
  mil_var *keep = NULL; /* 1 where the target counts, in dt */
  if (onnx_attr(n, "ignore_index")) {
    int64_t ii = onnx_attr_i(n, "ignore_index", 0);
    mil_var *m = ONNX_OP(c, "not_equal", A("x", t), K("y", onnx_i32(c, ii)));
    t = ONNX_OP(c, "mul", A("x", t), A("y", onnx_cast(c, m, MIL_DT_INT32)));
    keep = onnx_cast(c, m, dt);
  }
  mil_var *idx = ONNX_OP(c, "expand_dims", A("x", t), K("axes", onnx_i32s(c, 1, (int64_t[]){1})));
  mil_var *g = ONNX_OP(c, "gather_along_axis", A("x", lp), A("indices", idx), K("axis", onnx_i32(c, 1)));
  g = ONNX_OP(c, "squeeze", A("x", g), K("axes", onnx_i32s(c, 1, (int64_t[]){1})));
  mil_var *w = keep;
  if (weight) {
    mil_var *wt = ONNX_OP(c, "gather", A("x", onnx_cast(c, weight, dt)), A("indices", t), K("axis", onnx_i32(c, 0)));
    w = keep ? ONNX_OP(c, "mul", A("x", wt), A("y", keep)) : wt;
  }
  mil_var *loss = ONNX_OP(c, "mul", A("x", g), K("y", onnx_fscalar(c, dt, -1)));
  if (w) loss = ONNX_OP(c, "mul", A("x", loss), A("y", w));
  if (strcmp(red, "none") == 0) return loss;
  mil_var *sum = ONNX_OP(c, "reduce_sum", A("x", loss), K("keep_dims", onnx_bool(c, false)));
  if (strcmp(red, "sum") == 0) return sum;
  mil_var *den;
  if (w) den = ONNX_OP(c, "reduce_sum", A("x", w), K("keep_dims", onnx_bool(c, false)));
  else {
    /* the element count of target */
    mil_var *cnt = ONNX_OP(c, "reduce_prod", A("x", onnx_shape_of(c, t)), K("keep_dims", onnx_bool(c, false)));
    den = onnx_cast(c, cnt, dt);
  }
  return ONNX_OP(c, "real_div", A("x", sum), A("y", den));
}

static mil_status conv_nll(onnx_ctx *c, onnx_node *n) {
  mil_var *x = onnx_req(c, n, 0), *t = onnx_req(c, n, 1);
  if (!x || !t) return MIL_ERR_INVALID;
  return onnx_set_out(c, n, 0, nll(c, n, x, t, onnx_in(n, 2)));
}

static mil_status conv_sce(onnx_ctx *c, onnx_node *n) {
  mil_var *x = onnx_req(c, n, 0), *t = onnx_req(c, n, 1);
  if (!x || !t) return MIL_ERR_INVALID;
  if (onnx_rank(x) < 2) return onnx_fail(c, MIL_ERR_INVALID, "scores must be [N, C, d...], got rank %d", (int)onnx_rank(x));
  /* log_softmax on axis 1, stable: (x - max) - log(sum(exp(x - max))) */
  mil_var *m = ONNX_OP(c, "reduce_max", A("x", x), K("axes", onnx_i32s(c, 1, (int64_t[]){1})),
                       K("keep_dims", onnx_bool(c, true)));
  mil_var *s = ONNX_OP(c, "sub", A("x", x), A("y", m));
  mil_var *lse = ONNX_OP(c, "log", A("x", ONNX_OP(c, "reduce_sum", A("x", ONNX_OP(c, "exp", A("x", s))),
                                                   K("axes", onnx_i32s(c, 1, (int64_t[]){1})),
                                                   K("keep_dims", onnx_bool(c, true)))));
  mil_var *lp = ONNX_OP(c, "sub", A("x", s), A("y", lse));
  if (!lp) return MIL_ERR_TYPE;
  mil_status st = onnx_set_out(c, n, 0, nll(c, n, lp, t, onnx_in(n, 2)));
  if (st != MIL_OK) return st;
  return onnx_set_out(c, n, 1, lp);
}

const onnx_op_entry onnx_ops_loss[] = {
    {"NegativeLogLikelihoodLoss", "", 12, 0, conv_nll,
     "not_equal, expand_dims, gather_along_axis, squeeze, gather, mul, reduce_sum, real_div"},
    {"SoftmaxCrossEntropyLoss", "", 12, 0, conv_sce,
     "reduce_max, sub, exp, reduce_sum, log, gather_along_axis, gather, mul, real_div"},
    {NULL, NULL, 0, 0, NULL, NULL},
};
