/* common::fuse_gelu_tanh_approximation — replace the tanh approximation of
 * GELU, y = 0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3))), by
 * gelu(mode="TANH_APPROXIMATION").
 *
 *   %p: (2, 3, fp32)(Tensor) = pow(x=%x, y=%three, name="p")
 *   %m1: (2, 3, fp32)(Tensor) = mul(x=%c044715, y=%p, name="m1")
 *   %a: (2, 3, fp32)(Tensor) = add(x=%x, y=%m1, name="a")
 *   %m2: (2, 3, fp32)(Tensor) = mul(x=%c79788, y=%a, name="m2")
 *   %t: (2, 3, fp32)(Tensor) = tanh(x=%m2, name="t")
 *   %a1: (2, 3, fp32)(Tensor) = add(x=%one, y=%t, name="a1")
 *   %m: (2, 3, fp32)(Tensor) = mul(x=%half, y=%a1, name="m")
 *   %y: (2, 3, fp32)(Tensor) = mul(x=%m, y=%x, name="y")
 *
 * becomes
 *
 *   %y_mode_0: (string)*(Scalar) = const(val="TANH_APPROXIMATION", name="y_mode_0")
 *   %y: (2, 3, fp32)(Tensor) = gelu(x=%x, mode=%y_mode_0, name="y")
 *
 * inserted where the 0.5 mul was. Pattern 2 is the same with the 0.5
 * multiplying x instead: y = (0.5 * x) * (1 + tanh(...)).
 *
 * Matching follows coremltools' generic pattern infrastructure: the root
 * var is the first input of an op (block order) whose consumers have the
 * pattern's op types with exactly the pattern's number of bindings at
 * every step (types only; operand positions are not checked), then the
 * constants are checked (0.5, 3, 0.044715, 0.79788 and 1, tolerance 1e-3).
 * Pattern 1 is applied to the whole program first, then pattern 2.
 *
 * Mirrors coremltools/converters/mil/mil/passes/defs/optimize_activation.py
 * (fuse_gelu_tanh_approximation).
 */
#include <string.h>

#include "passes/fuse_util_internal.h"

enum { POW, MUL_1, ADD, MUL_2, TANH, ADD_1, MUL, MUL_3, N_OPS };

/* y = x * (0.5 * (tanh(...) + 1)) */
static const pass_pat_op ops1[N_OPS] = {
    [POW] = {"pow", "pow", 1, {MUL_1}},     [MUL_1] = {"mul_1", "mul", 1, {ADD}},
    [ADD] = {"add", "add", 1, {MUL_2}},     [MUL_2] = {"mul_2", "mul", 1, {TANH}},
    [TANH] = {"tanh", "tanh", 1, {ADD_1}},  [ADD_1] = {"add_1", "add", 1, {MUL}},
    [MUL] = {"mul", "mul", 1, {MUL_3}},     [MUL_3] = {"mul_3", "mul", 0, {0}},
};
static const pass_pattern pattern1 = {N_OPS, ops1, 3, {POW, ADD, MUL_3}};

/* y = (0.5 * x) * (tanh(...) + 1) */
static const pass_pat_op ops2[N_OPS] = {
    [POW] = {"pow", "pow", 1, {MUL_1}},     [MUL_1] = {"mul_1", "mul", 1, {ADD}},
    [ADD] = {"add", "add", 1, {MUL_2}},     [MUL_2] = {"mul_2", "mul", 1, {TANH}},
    [TANH] = {"tanh", "tanh", 1, {ADD_1}},  [ADD_1] = {"add_1", "add", 1, {MUL_3}},
    [MUL] = {"mul", "mul", 1, {MUL_3}},     [MUL_3] = {"mul_3", "mul", 0, {0}},
};
static const pass_pattern pattern2 = {N_OPS, ops2, 3, {POW, ADD, MUL}};

static bool near(const mil_op *op, const char *in, double x) {
  mil_var *v = mil_op_input_var(op, in);
  return v && pass_var_is_scalar(v, x, 1e-3);
}

static bool either(const mil_op *op, double x) { return near(op, "y", x) || near(op, "x", x); }

static bool constraints(const pass_pat_match *m) {
  return either(m->op[MUL], 0.5) && near(m->op[POW], "y", 3.0) && either(m->op[MUL_1], 0.044715) &&
         either(m->op[MUL_2], 0.79788) && either(m->op[ADD_1], 1.0);
}

static int try_pattern(pass_fuse_ctx *c, mil_op *op) {
  pass_pat_match m;
  if (!pass_pat_detect_prep(c->ud, op, &m) || !constraints(&m)) return 0;
  /* the last op goes last: it is the one whose output is replaced */
  mil_op *ops[PASS_PAT_MAX_SET];
  int n = 0;
  for (int i = 0; i < m.n_set; i++)
    if (m.set[i] != m.final) ops[n++] = m.set[i];
  ops[n++] = m.final;
  return pass_fuse_gelu(c, m.root, "TANH_APPROXIMATION", m.op[MUL], ops, n);
}

static mil_status run(mil_program *p, const mil_pass_options *o, mil_pass_stats *st, mil_diag *d) {
  (void)o;
  static const pass_pattern *const patterns[2] = {&pattern1, &pattern2};
  return pass_pat_run(p, d, "fuse_gelu_tanh_approximation", patterns, 2, try_pattern, st);
}

static const char *const k_anchors[] = {"tanh", NULL};
const mil_pass_def pass_def_fuse_gelu_tanh_approximation = {
    "common::fuse_gelu_tanh_approximation", "replace the tanh approximation of GELU by gelu(mode=TANH_APPROXIMATION)",
    NULL, 0, run, k_anchors};
