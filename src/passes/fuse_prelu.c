/* common::fuse_prelu — recognize y = a * relu(-1 * x) + relu(x), the
 * decomposed form of prelu, and replace it by a prelu.
 *
 * Pattern 1 (x of rank 4, a of shape (C, 1, 1) or (1, C, 1, 1)):
 *
 *   %n: (1, 3, 4, 4, fp32)(Tensor) = mul(x=%x, y=%minus1, name="n")
 *   %r1: (1, 3, 4, 4, fp32)(Tensor) = relu(x=%n, name="r1")
 *   %m: (1, 3, 4, 4, fp32)(Tensor) = mul(x=%r1, y=%a, name="m")
 *   %r2: (1, 3, 4, 4, fp32)(Tensor) = relu(x=%x, name="r2")
 *   %y: (1, 3, 4, 4, fp32)(Tensor) = add(x=%r2, y=%m, name="y")
 *
 * becomes
 *
 *   %y_alpha_0: (3,fp32)*(Tensor) = const(val=<-a flattened>, name="y_alpha_0")
 *   %y: (1, 3, 4, 4, fp32)(Tensor) = prelu(x=%x, alpha=%y_alpha_0, name="y")
 *
 * Pattern 2 (channel last): the same applied to transpose(x, perm=(0, 2, 3,
 * 1)) with a of C elements along its last axis becomes prelu(x) (fresh
 * name "prelu_<k>") followed by transpose(perm=(0, 2, 3, 1)) named after
 * the add output.
 *
 * Matching follows coremltools' generic pattern infrastructure (op types
 * and exact consumer counts from the root var; see fuse_util_internal.h),
 * then: output rank 4 (pattern 1: input rank 4 too), the negating mul has
 * a scalar within 1e-3 of -1, the scaling mul has a known operand (x
 * checked first) of the shapes above. New ops go before the add.
 *
 * Mirrors coremltools/converters/mil/mil/passes/defs/optimize_activation.py
 * (fuse_prelu, FusePreluPattern1/2).
 */
#include <string.h>

#include "passes/fuse_util_internal.h"

enum { TRANSPOSE, NEG, RELU1, ALPHA_MUL, RELU2, OUT_OP, N_OPS };

static const pass_pat_op ops1[N_OPS] = {
    [TRANSPOSE] = {"transpose", "transpose", 0, {0}}, /* unused in pattern 1 */
    [NEG] = {"neg", "mul", 1, {RELU1}},
    [RELU1] = {"relu1", "relu", 1, {ALPHA_MUL}},
    [ALPHA_MUL] = {"alpha_mul", "mul", 1, {OUT_OP}},
    [RELU2] = {"relu2", "relu", 1, {OUT_OP}},
    [OUT_OP] = {"out_op", "add", 0, {0}},
};
static const pass_pattern pattern1 = {N_OPS, ops1, 2, {NEG, RELU2}};

static const pass_pat_op ops2[N_OPS] = {
    [TRANSPOSE] = {"transpose", "transpose", 2, {NEG, RELU2}},
    [NEG] = {"neg", "mul", 1, {RELU1}},
    [RELU1] = {"relu1", "relu", 1, {ALPHA_MUL}},
    [ALPHA_MUL] = {"alpha_mul", "mul", 1, {OUT_OP}},
    [RELU2] = {"relu2", "relu", 1, {OUT_OP}},
    [OUT_OP] = {"out_op", "add", 0, {0}},
};
static const pass_pattern pattern2 = {N_OPS, ops2, 1, {TRANSPOSE}};

static bool near(const mil_op *op, const char *in, double x) {
  mil_var *v = mil_op_input_var(op, in);
  return v && pass_var_is_scalar(v, x, 1e-3);
}

/* The known operand of the scaling mul (x first), or NULL. */
static const mil_value *alpha_of(const pass_pat_match *m) {
  mil_var *x = mil_op_input_var(m->op[ALPHA_MUL], "x"), *y = mil_op_input_var(m->op[ALPHA_MUL], "y");
  if (x && x->val) return x->val;
  if (y && y->val) return y->val;
  return NULL;
}

static bool numeric_tensor(const mil_value *a) {
  return a && a->kind == MIL_VAL_TENSOR && a->type && a->type->rank >= 0 && mil_dtype_is_float(a->type->dtype);
}

static bool constraints(const pass_pat_match *m, bool channel_last) {
  if (channel_last) {
    const mil_value *perm = pass_input_value(m->op[TRANSPOSE], "perm");
    static const int64_t want[4] = {0, 2, 3, 1};
    if (!perm || perm->kind != MIL_VAL_TENSOR || perm->numel != 4) return false;
    for (int i = 0; i < 4; i++)
      if (mil_value_get_i64(perm, i) != want[i]) return false;
  } else if (pass_fuse_rank(m->root) != 4) {
    return false;
  }
  if (pass_fuse_rank(m->final->outputs[0]) != 4) return false;
  if (!near(m->op[NEG], "y", -1) && !near(m->op[NEG], "x", -1)) return false;
  const mil_value *a = alpha_of(m);
  if (!numeric_tensor(a)) return false;
  int32_t r = a->type->rank;
  if (channel_last) return r >= 1 && a->numel == a->type->dims[r - 1].size;
  return (r == 3 || r == 4) && a->numel == a->type->dims[r - 3].size;
}

static int try_pattern(pass_fuse_ctx *c, mil_op *op) {
  const pass_pat_prep *pp = c->ud;
  bool channel_last = pp->pat == &pattern2;
  pass_pat_match m;
  if (!pass_pat_detect_prep(pp, op, &m) || !constraints(&m, channel_last)) return 0;
  const mil_value *a = alpha_of(&m);
  int64_t n = a->numel;
  mil_value *alpha = mil_value_new_tensor(c->p, a->type->dtype, 1, &n, false, NULL);
  if (!alpha) return -(int)MIL_ERR_NOMEM;
  for (int64_t i = 0; i < n; i++) mil_value_set_f64(alpha, i, -mil_value_get_f64(a, i));
  mil_op *out_op = m.final;
  mil_var *res = out_op->outputs[0];
  mil_op *mark = out_op->prev;
  mil_op *pr = pass_fuse_new_op(c, out_op, "prelu", channel_last ? NULL : res->name);
  mil_var *ac = pr ? pass_fuse_const(c, pr, pr->name, "alpha", alpha) : NULL;
  if (!ac) return -(int)MIL_ERR_NOMEM;
  mil_op_add_input(pr, "x", m.root);
  mil_op_add_input(pr, "alpha", ac);
  mil_status st = pass_fuse_finish(c, pr);
  mil_var *result = st == MIL_OK ? pr->outputs[0] : NULL;
  if (st == MIL_OK && channel_last) {
    mil_var *pc = pass_fuse_const(c, out_op, res->name, "perm", pass_input_value(m.op[TRANSPOSE], "perm"));
    mil_op *t = pc ? pass_fuse_new_op(c, out_op, "transpose", res->name) : NULL;
    if (!t) return -(int)MIL_ERR_NOMEM;
    mil_op_add_input(t, "x", pr->outputs[0]);
    mil_op_add_input(t, "perm", pc);
    st = pass_fuse_finish(c, t);
    result = st == MIL_OK ? t->outputs[0] : NULL;
  }
  if (st == MIL_ERR_NOMEM) return -(int)st;
  int r = 0;
  if (result && mil_type_equal(result->type, res->type)) {
    mil_op *rm[PASS_PAT_MAX_SET];
    int k = 0;
    for (int i = 0; i < m.n_set; i++)
      if (m.set[i] != out_op) rm[k++] = m.set[i];
    rm[k++] = out_op;
    r = pass_fuse_replace_and_remove(c, out_op, res, result, rm, k);
  }
  if (r == 0) pass_fuse_rollback(out_op, mark);
  return r;
}

static mil_status run(mil_program *p, const mil_pass_options *o, mil_pass_stats *st, mil_diag *d) {
  (void)o;
  static const pass_pattern *const patterns[2] = {&pattern1, &pattern2};
  return pass_pat_run(p, d, "fuse_prelu", patterns, 2, try_pattern, st);
}

static const char *const k_anchors[] = {"relu", NULL};
const mil_pass_def pass_def_fuse_prelu = {"common::fuse_prelu",
                                          "replace a * relu(-x) + relu(x) (optionally after a channel-last "
                                          "transpose) by prelu",
                                          NULL, 0, run, k_anchors};
