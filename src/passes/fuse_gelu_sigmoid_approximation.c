/* common::fuse_gelu_sigmoid_approximation — replace the sigmoid
 * approximation of GELU, y = x * sigmoid(1.702 * x), by
 * gelu(mode="SIGMOID_APPROXIMATION").
 *
 *   %k: (fp32)*(Scalar) = const(val=1.702, name="k")
 *   %s: (2, 3, fp32)(Tensor) = mul(x=%x, y=%k, name="s")
 *   %g: (2, 3, fp32)(Tensor) = sigmoid(x=%s, name="g")
 *   %y: (2, 3, fp32)(Tensor) = mul(x=%x, y=%g, name="y")
 *
 * becomes
 *
 *   %k: (fp32)*(Scalar) = const(val=1.702, name="k")
 *   %y_mode_0: (string)*(Scalar) = const(val="SIGMOID_APPROXIMATION", name="y_mode_0")
 *   %y: (2, 3, fp32)(Tensor) = gelu(x=%x, mode=%y_mode_0, name="y")
 *
 * The gelu is inserted where the 1.702 mul was and named after the final
 * mul's output. Conditions: one operand of the final mul is a sigmoid
 * output, the other (x) is what the sigmoid's input mul multiplies by a
 * scalar within 0.01 of 1.702; neither the sigmoid nor the 1.702 mul
 * output is an output of the block. coremltools does not check that the
 * sigmoid and the scaling mul have no other readers (its removal then
 * fails); such patterns are left alone here.
 *
 * Mirrors coremltools/converters/mil/mil/passes/defs/optimize_gelu_sigmoid.py.
 */
#include <string.h>

#include "passes/fuse_util_internal.h"

static bool near(const mil_var *v) { return v && pass_var_is_scalar(v, 1.702, 0.01); }

static int fuse(pass_fuse_ctx *c, mil_op *op) {
  if (strcmp(op->type, "mul") != 0 || op->n_outputs != 1) return 0;
  mil_var *mx = mil_op_input_var(op, "x"), *my = mil_op_input_var(op, "y");
  if (!mx || !my) return 0;
  mil_var *sig, *root;
  if (mx->op && strcmp(mx->op->type, "sigmoid") == 0) {
    sig = mx;
    root = my;
  } else if (my->op && strcmp(my->op->type, "sigmoid") == 0) {
    sig = my;
    root = mx;
  } else {
    return 0;
  }
  mil_op *sop = sig->op;
  mil_block *b = op->block;
  if (pass_fuse_is_output_of(sop->outputs[0], b)) return 0;
  mil_var *sx = mil_op_input_var(sop, "x");
  mil_op *scale = sx ? sx->op : NULL;
  if (!scale || strcmp(scale->type, "mul") != 0 || scale->n_outputs != 1) return 0;
  mil_var *kx = mil_op_input_var(scale, "x"), *ky = mil_op_input_var(scale, "y");
  bool x_const = near(kx), y_const = near(ky);
  if (!x_const && !y_const) return 0;
  if ((x_const ? ky : kx) != root) return 0;
  if (pass_fuse_is_output_of(scale->outputs[0], b)) return 0;
  if (sop->block != b || scale->block != b || pass_only_child_op(sop->outputs[0]) != op ||
      pass_only_child_op(scale->outputs[0]) != sop)
    return 0;
  mil_op *ops[3] = {scale, sop, op};
  return pass_fuse_gelu(c, root, "SIGMOID_APPROXIMATION", scale, ops, 3);
}

/* The op types fuse() can rewrite at (it returns 0 at any other). */
static const char *const k_types[] = {"mul", NULL};
/* The op types no rewrite can do without. */
static const char *const k_required[] = {"sigmoid", NULL};

static mil_status run(mil_program *p, const mil_pass_options *o, mil_pass_stats *st, mil_diag *d) {
  (void)o;
  mil_status s = pass_infer_marked_values(p, d);
  if (s != MIL_OK) return s;
  pass_fuse_ctx c = {.p = p, .d = d, .pass = "fuse_gelu_sigmoid_approximation", .lazy_names = true};
  s = pass_fuse_run_types(&c, fuse, true, false, k_types, k_required, st);
  pass_fuse_ctx_free(&c);
  return s;
}

static const char *const k_anchors[] = {"sigmoid", NULL};
const mil_pass_def pass_def_fuse_gelu_sigmoid_approximation = {
    "common::fuse_gelu_sigmoid_approximation", "replace x * sigmoid(1.702 * x) by gelu(mode=SIGMOID_APPROXIMATION)",
    NULL, 0, run, k_anchors};
