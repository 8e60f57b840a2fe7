/* common::fuse_gelu_exact — replace the exact GELU formula
 * y = 0.5 * x * (1 + erf(x / sqrt(2))) by gelu(mode="EXACT").
 *
 *   %d: (3, 5, fp32)(Tensor) = real_div(x=%x, y=%sqrt2, name="d")     # or mul(x, 1/sqrt(2))
 *   %e: (3, 5, fp32)(Tensor) = erf(x=%d, name="e")
 *   %a: (3, 5, fp32)(Tensor) = add(x=%e, y=%one, name="a")
 *   %m: (3, 5, fp32)(Tensor) = mul(x=%a, y=%half, name="m")
 *   %y: (3, 5, fp32)(Tensor) = mul(x=%m, y=%x, name="y")
 *
 * becomes
 *
 *   %y_mode_0: (string)*(Scalar) = const(val="EXACT", name="y_mode_0")
 *   %y: (3, 5, fp32)(Tensor) = gelu(x=%x, mode=%y_mode_0, name="y")
 *
 * The three accepted arrangements after add(erf, 1) -> mul:
 *   (1) mul(0.5) then mul(x);  (2) mul(x) then mul(0.5);
 *   (3) mul(add, mul(x, 0.5)) where the 0.5 * x product comes from
 *       elsewhere in the block.
 * Constants compare with tolerance 1e-3 (sqrt(2) for real_div, 1/sqrt(2)
 * for mul, 1, 0.5). Each intermediate op is read exactly once by the next
 * one and no op but the last is an output of the block. The gelu takes the
 * name of the last mul's output and is inserted before the op preceding
 * the last one in coremltools' removal list (the 0.5 mul in (1), the x mul
 * in (2), the 0.5 * x mul in (3)).
 *
 * Mirrors coremltools/converters/mil/mil/passes/defs/optimize_activation.py
 * (fuse_gelu_exact).
 */
#include <math.h>
#include <string.h>

#include "passes/fuse_util_internal.h"

static bool near(const mil_var *v, double x) { return v && pass_var_is_scalar(v, x, 1e-3); }

static bool either_near(const mil_op *op, double x) {
  return near(mil_op_input_var(op, "x"), x) || near(mil_op_input_var(op, "y"), x);
}

static bool reads(const mil_op *op, const mil_var *v) {
  return mil_op_input_var(op, "x") == v || mil_op_input_var(op, "y") == v;
}

static int fuse(pass_fuse_ctx *c, mil_op *op) {
  bool is_div = strcmp(op->type, "real_div") == 0;
  if ((!is_div && strcmp(op->type, "mul") != 0) || op->n_outputs != 1) return 0;
  /* the erf child first: most candidates have none, and it is found
   * without looking at the operands */
  mil_op *erf = pass_fuse_child_of_type(op, "erf");
  if (!erf) return 0;
  mil_var *x = mil_op_input_var(op, "x"), *y = mil_op_input_var(op, "y");
  if (!x || !y || (!x->val && !y->val)) return 0;
  mil_var *root = y->val ? x : y;
  if (is_div ? !near(y, sqrt(2.0)) : !(near(x, 1.0 / sqrt(2.0)) || near(y, 1.0 / sqrt(2.0)))) return 0;
  mil_op *ops[6];
  int n = 0;
  ops[n++] = op;
  ops[n++] = erf;
  mil_op *add = pass_fuse_child_of_type(erf, "add");
  if (!add || !either_near(add, 1.0)) return 0;
  ops[n++] = add;
  mil_op *mul = pass_fuse_child_of_type(add, "mul");
  if (!mul || mul->n_outputs != 1) return 0;
  if (either_near(mul, 0.5)) {
    ops[n++] = mul;
    mil_op *mul2 = pass_fuse_child_of_type(mul, "mul");
    if (!mul2 || !reads(mul2, root)) return 0;
    ops[n++] = mul2;
  } else if (reads(mul, root)) {
    ops[n++] = mul;
    mil_op *mul2 = pass_fuse_child_of_type(mul, "mul");
    if (!mul2 || !either_near(mul2, 0.5)) return 0;
    ops[n++] = mul2;
  } else {
    mil_var *mx = mil_op_input_var(mul, "x"), *my = mil_op_input_var(mul, "y");
    mil_var *other = my == add->outputs[0] ? mx : my;
    mil_op *half = other ? other->op : NULL;
    if (!half || strcmp(half->type, "mul") != 0 || half->n_outputs != 1 || !either_near(half, 0.5) ||
        !reads(half, root))
      return 0;
    /* removing it must not strand another reader */
    if (pass_only_child_op(half->outputs[0]) != mul || half->block != op->block) return 0;
    ops[n++] = half;
    ops[n++] = mul;
  }
  for (int i = 0; i < n - 1; i++)
    if (pass_fuse_is_output_of(ops[i]->outputs[0], op->block)) return 0;
  for (int i = 0; i < n; i++)
    if (ops[i]->block != op->block) return 0;
  return pass_fuse_gelu(c, root, "EXACT", ops[n - 2], ops, n);
}

/* The op types fuse() can rewrite at (it returns 0 at any other). */
static const char *const k_types[] = {"real_div", "mul", NULL};
/* The op types no rewrite can do without. */
static const char *const k_required[] = {"erf", "add", "mul", NULL};

static mil_status run(mil_program *p, const mil_pass_options *o, mil_pass_stats *st, mil_diag *d) {
  (void)o;
  mil_status s = pass_infer_marked_values(p, d);
  if (s != MIL_OK) return s;
  pass_fuse_ctx c = {.p = p, .d = d, .pass = "fuse_gelu_exact", .lazy_names = true};
  s = pass_fuse_run_types(&c, fuse, true, false, k_types, k_required, st);
  pass_fuse_ctx_free(&c);
  return s;
}

static const char *const k_anchors[] = {"erf", NULL};
const mil_pass_def pass_def_fuse_gelu_exact = {"common::fuse_gelu_exact",
                                               "replace 0.5 * x * (1 + erf(x / sqrt(2))) by gelu(mode=EXACT)", NULL,
                                               0, run, k_anchors};
