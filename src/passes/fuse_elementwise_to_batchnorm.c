/* common::fuse_elementwise_to_batchnorm — a per-channel mul followed by a
 * per-channel add on a rank-4 tensor becomes batch_norm.
 *
 *   %g: (1, 3, 1, 1, fp32)*(Tensor) = const(val=[[[[2.0]], [[3.0]], [[4.0]]]], name="g")
 *   %m: (1, 3, 8, 8, fp32)(Tensor) = mul(x=%x, y=%g, name="m")
 *   %b: (3, 1, 1, fp32)*(Tensor) = const(val=[[[1.0]], [[0.0]], [[-1.0]]], name="b")
 *   %y: (1, 3, 8, 8, fp32)(Tensor) = add(x=%m, y=%b, name="y")
 *
 * becomes
 *
 *   %y_mean_0: (3,fp32)*(Tensor) = const(val=[0.0, 0.0, 0.0], name="y_mean_0")
 *   %y_variance_0: (3,fp32)*(Tensor) = const(val=[1.0, 1.0, 1.0], name="y_variance_0")
 *   %y_gamma_0: (3,fp32)*(Tensor) = const(val=[2.0, 3.0, 4.0], name="y_gamma_0")
 *   %y_beta_0: (3,fp32)*(Tensor) = const(val=[1.0, 0.0, -1.0], name="y_beta_0")
 *   %y: (1, 3, 8, 8, fp32)(Tensor) = batch_norm(x=%x, mean=%y_mean_0, variance=%y_variance_0, gamma=%y_gamma_0, beta=%y_beta_0, ..., name="y")
 *
 * Conditions: the mul output is not an output of its block and is read
 * exactly once, by an add; the mul's non-const operand has rank 4; both
 * constants (x checked first in each op) are tensors shaped (1, C, 1, 1)
 * or (C, 1, 1) with the same C > 1. The batch_norm (mean 0, variance 1 in
 * fp32, gamma and beta squeezed) is inserted before the mul and named
 * after the add output.
 *
 * Mirrors coremltools/converters/mil/mil/passes/defs/
 * optimize_elementwise_binary.py (fuse_elementwise_to_batchnorm).
 */
#include <string.h>

#include "passes/fuse_util_internal.h"

/* The known operand of op (x first), or NULL. */
static const mil_value *const_input(const mil_op *op) {
  mil_var *x = mil_op_input_var(op, "x"), *y = mil_op_input_var(op, "y");
  if (x && x->val) return x->val;
  if (y && y->val) return y->val;
  return NULL;
}

/* C when v is a tensor shaped (1, C, 1, 1) or (C, 1, 1), else -1. */
static int64_t channels(const mil_value *v) {
  if (!v || v->kind != MIL_VAL_TENSOR || !v->type || v->type->is_scalar || !mil_dtype_is_float(v->type->dtype))
    return -1;
  const mil_dim *d = v->type->dims;
  int32_t r = v->type->rank;
  if (r == 4 && d[0].size == 1 && d[2].size == 1 && d[3].size == 1) return d[1].size;
  if (r == 3 && d[1].size == 1 && d[2].size == 1) return d[0].size;
  return -1;
}

/* A (C,) tensor of dtype dt with v's elements (or all x when v is NULL). */
static mil_value *vec(mil_program *p, mil_dtype dt, int64_t C, const mil_value *v, double x) {
  mil_value *out = mil_value_new_tensor(p, dt, 1, &C, false, NULL);
  for (int64_t i = 0; out && i < C; i++) mil_value_set_f64(out, i, v ? mil_value_get_f64(v, i) : x);
  return out;
}

static int fuse(pass_fuse_ctx *c, mil_op *mul) {
  if (strcmp(mul->type, "mul") != 0 || mul->n_outputs != 1) return 0;
  mil_op *add = pass_only_child_op(mul->outputs[0]);
  if (!add || strcmp(add->type, "add") != 0 || add->n_outputs != 1) return 0;
  if (pass_fuse_is_output_of(mul->outputs[0], mul->block)) return 0;
  mil_var *mx = mil_op_input_var(mul, "x"), *my = mil_op_input_var(mul, "y");
  if (!mx || !my) return 0;
  mil_var *x = mx->val ? my : mx;
  if (pass_fuse_rank(x) != 4) return 0;
  const mil_value *gamma = const_input(mul), *beta = const_input(add);
  int64_t C = channels(gamma);
  if (C <= 1 || channels(beta) != C) return 0;
  mil_var *res = add->outputs[0];
  mil_op *mark = mul->prev;
  const char *name = res->name;
  mil_value *mean = vec(c->p, MIL_DT_FP32, C, NULL, 0), *var = vec(c->p, MIL_DT_FP32, C, NULL, 1);
  mil_value *g = vec(c->p, gamma->type->dtype, C, gamma, 0), *b = vec(c->p, beta->type->dtype, C, beta, 0);
  mil_var *mc = mean && var && g && b ? pass_fuse_const(c, mul, name, "mean", mean) : NULL;
  mil_var *vc = mc ? pass_fuse_const(c, mul, name, "variance", var) : NULL;
  mil_var *gc = vc ? pass_fuse_const(c, mul, name, "gamma", g) : NULL;
  mil_var *bc = gc ? pass_fuse_const(c, mul, name, "beta", b) : NULL;
  mil_op *bn = bc ? pass_fuse_new_op(c, mul, "batch_norm", name) : NULL;
  if (!bn) return -(int)MIL_ERR_NOMEM;
  mil_op_add_input(bn, "x", x);
  mil_op_add_input(bn, "mean", mc);
  mil_op_add_input(bn, "variance", vc);
  mil_op_add_input(bn, "gamma", gc);
  mil_op_add_input(bn, "beta", bc);
  mil_status st = pass_fuse_finish(c, bn);
  if (st == MIL_ERR_NOMEM) return -(int)st;
  int r = 0;
  if (st == MIL_OK && mil_type_equal(bn->outputs[0]->type, res->type)) {
    mil_op *rm[2] = {mul, add};
    r = pass_fuse_replace_and_remove(c, add, res, bn->outputs[0], rm, 2);
  }
  if (r == 0) pass_fuse_rollback(mul, mark);
  return r;
}

/* The op types fuse() can rewrite at (it returns 0 at any other). */
static const char *const k_types[] = {"mul", NULL};
/* The op types no rewrite can do without. */
static const char *const k_required[] = {"add", NULL};

static mil_status run(mil_program *p, const mil_pass_options *o, mil_pass_stats *st, mil_diag *d) {
  (void)o;
  mil_status s = pass_infer_marked_values(p, d);
  if (s != MIL_OK) return s;
  pass_fuse_ctx c = {.p = p, .d = d, .pass = "fuse_elementwise_to_batchnorm", .lazy_names = true};
  s = pass_fuse_run_types(&c, fuse, true, false, k_types, k_required, st);
  pass_fuse_ctx_free(&c);
  return s;
}

static const char *const k_anchors[] = {"mul", NULL};
const mil_pass_def pass_def_fuse_elementwise_to_batchnorm = {
    "common::fuse_elementwise_to_batchnorm", "replace a per-channel mul + add on a rank-4 tensor by batch_norm", NULL,
    0, run, k_anchors};
