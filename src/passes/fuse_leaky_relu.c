/* common::fuse_leaky_relu — replace max(alpha * x, x) with 0 <= alpha <= 1
 * by leaky_relu.
 *
 *   %a: (fp32)*(Scalar) = const(val=0.2, name="a")
 *   %m: (2, 3, fp32)(Tensor) = mul(x=%x, y=%a, name="m")
 *   %y: (2, 3, fp32)(Tensor) = maximum(x=%m, y=%x, name="y")
 *
 * becomes
 *
 *   %a: (fp32)*(Scalar) = const(val=0.2, name="a")
 *   %y_alpha_0: (fp32)*(Scalar) = const(val=0.2, name="y_alpha_0")
 *   %y: (2, 3, fp32)(Tensor) = leaky_relu(x=%x, alpha=%y_alpha_0, name="y")
 *
 * Conditions: one operand of the mul is a known single value in [0, 1]
 * (x is checked first), the mul output is not an output of the block and
 * is read exactly once, by a maximum whose other operand is the mul's other
 * operand. The leaky_relu (alpha: a new const holding the alpha value) is
 * inserted before the maximum and named after its output.
 *
 * Mirrors coremltools/converters/mil/mil/passes/defs/optimize_activation.py
 * (fuse_leaky_relu).
 */
#include <string.h>

#include "passes/fuse_util_internal.h"

static int fuse(pass_fuse_ctx *c, mil_op *op) {
  if (strcmp(op->type, "mul") != 0 || op->n_outputs != 1) return 0;
  /* the maximum reading it first: few muls have one */
  mil_op *mx_op = pass_fuse_child_of_type(op, "maximum");
  if (!mx_op) return 0;
  mil_var *mx = mil_op_input_var(op, "x"), *my = mil_op_input_var(op, "y");
  if (!mx || !my) return 0;
  mil_var *alpha, *parent;
  if (pass_var_scalar_in(mx, 0, 1)) {
    alpha = mx;
    parent = my;
  } else if (pass_var_scalar_in(my, 0, 1)) {
    alpha = my;
    parent = mx;
  } else {
    return 0;
  }
  mil_var *out = op->outputs[0];
  if (pass_fuse_is_output_of(out, op->block)) return 0;
  if (mx_op->n_outputs != 1 || mx_op->block != op->block) return 0;
  mil_var *a = mil_op_input_var(mx_op, "x"), *b = mil_op_input_var(mx_op, "y");
  if (!((a == out && b == parent) || (b == out && a == parent))) return 0;
  mil_var *res = mx_op->outputs[0];
  mil_op *mark = mx_op->prev;
  mil_var *ac = pass_fuse_const(c, mx_op, res->name, "alpha", alpha->val);
  mil_op *lr = ac ? pass_fuse_new_op(c, mx_op, "leaky_relu", res->name) : NULL;
  if (!lr) return -(int)MIL_ERR_NOMEM;
  mil_op_add_input(lr, "x", parent);
  mil_op_add_input(lr, "alpha", ac);
  mil_status st = pass_fuse_finish(c, lr);
  if (st == MIL_ERR_NOMEM) return -(int)st;
  int r = 0;
  if (st == MIL_OK && mil_type_equal(lr->outputs[0]->type, res->type)) {
    mil_op *rm[2] = {op, mx_op};
    r = pass_fuse_replace_and_remove(c, mx_op, res, lr->outputs[0], rm, 2);
  }
  if (r == 0) pass_fuse_rollback(mx_op, mark);
  return r;
}

/* The op types fuse() can rewrite at (it returns 0 at any other). */
static const char *const k_types[] = {"mul", NULL};
/* The op types no rewrite can do without. */
static const char *const k_required[] = {"maximum", NULL};

static mil_status run(mil_program *p, const mil_pass_options *o, mil_pass_stats *st, mil_diag *d) {
  (void)o;
  mil_status s = pass_infer_marked_values(p, d);
  if (s != MIL_OK) return s;
  pass_fuse_ctx c = {.p = p, .d = d, .pass = "fuse_leaky_relu", .lazy_names = true};
  s = pass_fuse_run_types(&c, fuse, true, false, k_types, k_required, st);
  pass_fuse_ctx_free(&c);
  return s;
}

static const char *const k_anchors[] = {"maximum", NULL};
const mil_pass_def pass_def_fuse_leaky_relu = {"common::fuse_leaky_relu",
                                               "replace maximum(alpha * x, x) with 0 <= alpha <= 1 by leaky_relu",
                                               NULL, 0, run, k_anchors};
