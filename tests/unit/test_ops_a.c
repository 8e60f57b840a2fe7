/* Op registry, families elementwise_binary, elementwise_unary, activation,
 * reduction, control_flow, classify, random, coreml_dialect and
 * complex_dialect: for every variant a valid case whose inferred output
 * type is checked exactly, a rejected case whose error text is checked, and
 * value inference (folding) against values computed by hand.
 *
 * Cases are small complete-form MIL programs. The op under test is named
 * "t"; a case gives the program body (const ops and the op), and either the
 * type the op must infer for its first output or a fragment of the error it
 * must report. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "ops_test_util.h"


#define XY "%x: (2, 3, fp32)(Tensor), %y: (3,fp32)(Tensor)"
#define XI "%x: (2, 3, int32)(Tensor), %y: (3,int32)(Tensor)"
#define XB "%x: (2, 3, bool)(Tensor), %y: (3,bool)(Tensor)"
#define XBAD "%x: (2, 3, fp32)(Tensor), %y: (4,fp32)(Tensor)"
#define F23 "(2, 3, fp32)(Tensor)"
#define B23 "(2, 3, bool)(Tensor)"
#define I23 "(2, 3, int32)(Tensor)"

/* ---- elementwise_binary ---- */

#define BIN(op, in, out) {"CoreML5", in, T(out) op "(x=%x, y=%y, name=\"t\")\n", out, NULL}
#define BIN_BAD(op, in, msg) {"CoreML5", in, T(F23) op "(x=%x, y=%y, name=\"t\")\n", NULL, msg}

static const tcase k_binary[] = {
    BIN("add", XY, F23), BIN_BAD("add", XBAD, "cannot be broadcast"),
    BIN("sub", XI, I23), BIN_BAD("sub", XBAD, "cannot be broadcast"),
    BIN("mul", XY, F23), BIN_BAD("mul", "%x: (2, 3, fp32)(Tensor), %y: (3,int32)(Tensor)", "same dtype"),
    BIN("real_div", XY, F23), BIN_BAD("real_div", XBAD, "cannot be broadcast"),
    BIN("floor_div", XI, I23), BIN_BAD("floor_div", XB, "must have dtype fp16, fp32, int32"),
    BIN("mod", XY, F23), BIN_BAD("mod", XBAD, "cannot be broadcast"),
    BIN("pow", XY, F23), BIN_BAD("pow", XBAD, "cannot be broadcast"),
    BIN("maximum", XI, I23), BIN_BAD("maximum", XBAD, "cannot be broadcast"),
    BIN("minimum", XY, F23), BIN_BAD("minimum", XB, "must have dtype"),
    BIN("equal", XY, B23), BIN_BAD("equal", XBAD, "cannot be broadcast"),
    BIN("not_equal", XI, B23), BIN_BAD("not_equal", XBAD, "cannot be broadcast"),
    BIN("less", XY, B23), BIN_BAD("less", XB, "must have dtype"),
    BIN("less_equal", XY, B23), BIN_BAD("less_equal", XBAD, "cannot be broadcast"),
    BIN("greater", XI, B23), BIN_BAD("greater", XBAD, "cannot be broadcast"),
    BIN("greater_equal", XY, B23), BIN_BAD("greater_equal", XBAD, "cannot be broadcast"),
    BIN("logical_and", XB, B23), BIN_BAD("logical_and", XY, "must have dtype bool"),
    BIN("logical_or", XB, B23), BIN_BAD("logical_or", XI, "must have dtype bool"),
    BIN("logical_xor", XB, B23), BIN_BAD("logical_xor", XY, "must have dtype bool"),
    /* shapes: scalars, scalar with tensor, rank-0 tensors, symbols */
    BIN("add", "%x: (fp32)(Scalar), %y: (fp32)(Scalar)", "(fp32)(Scalar)"),
    BIN("add", "%x: (fp32)(Scalar), %y: (4, 1, fp32)(Tensor)", "(4, 1, fp32)(Tensor)"),
    BIN("add", "%x: (2,fp32)(Tensor), %y: (fp32)(Scalar)", "(2,fp32)(Tensor)"),
    BIN("add", "%x: (fp32)(Tensor), %y: (fp32)(Tensor)", "(fp32)(Tensor)"),
    BIN("mul", "%x: (4, 1, 3, fp32)(Tensor), %y: (5, 1, fp32)(Tensor)", "(4, 5, 3, fp32)(Tensor)"),
    BIN("mul", "%x: (batch, 1, fp32)(Tensor), %y: (3,fp32)(Tensor)", "(batch, 3, fp32)(Tensor)"),
    BIN("mul", "%x: (batch, 3, fp32)(Tensor), %y: (1, 3, fp32)(Tensor)", "(batch, 3, fp32)(Tensor)"),
    BIN("less", "%x: (batch, 3, fp16)(Tensor), %y: (2, 1, fp16)(Tensor)", "(2, 3, bool)(Tensor)"),
    BIN("equal", "%x: (batch, fp32)(Tensor), %y: (batch,fp32)(Tensor)", "(batch,bool)(Tensor)"),
    BIN("add", "%x: (2, 3, fp16)(Tensor), %y: (fp16)(Scalar)", "(2, 3, fp16)(Tensor)"),
    BIN_BAD("add", "%x: (2, 3, fp16)(Tensor), %y: (fp32)(Scalar)", "same dtype"),
};

static void test_elementwise_binary(void **state) {
  (void)state;
  run_cases(k_binary, sizeof k_binary / sizeof k_binary[0]);
}

/* Two different symbols broadcast to a fresh one. */
static void test_binary_fresh_symbol(void **state) {
  (void)state;
  tcase tc = {"CoreML5", "%x: (a, 3, fp32)(Tensor), %y: (b, 3, fp32)(Tensor)", T(F23) "add(x=%x, y=%y, name=\"t\")\n",
              NULL, NULL};
  mil_program *p = parse_case(&tc);
  const mil_type *types[16];
  const mil_value *vals[16];
  char err[512];
  assert_int_equal(infer_t(p, types, vals, err, sizeof err), MIL_OK);
  assert_int_equal(types[0]->rank, 2);
  assert_true(types[0]->dims[0].size < 0);
  assert_non_null(types[0]->dims[0].sym);
  assert_string_not_equal(types[0]->dims[0].sym, "a");
  assert_string_not_equal(types[0]->dims[0].sym, "b");
  assert_int_equal(types[0]->dims[1].size, 3);
  mil_program_free(p);
}

/* ---- elementwise_unary ---- */

#define X1(ty) "%x: " ty
#define UN(op, xty, out) {"CoreML5", X1(xty), T(out) op "(x=%x, name=\"t\")\n", out, NULL}
#define UN_BAD(op, xty, msg) {"CoreML5", X1(xty), T(F23) op "(x=%x, name=\"t\")\n", NULL, msg}
#define XF "(2, 3, fp32)(Tensor)"
#define XH "(2, 3, fp16)(Tensor)"
#define XINT "(2, 3, int32)(Tensor)"
#define XBOOL "(2, 3, bool)(Tensor)"

static const tcase k_unary[] = {
    UN("abs", XINT, I23), UN_BAD("abs", XBOOL, "must have dtype fp16, fp32, int32"),
    UN("acos", XF, F23), UN_BAD("acos", XINT, "must have dtype fp16, fp32"),
    UN("asin", XH, "(2, 3, fp16)(Tensor)"), UN_BAD("asin", XINT, "must have dtype fp16, fp32"),
    UN("atan", XF, F23), UN_BAD("atan", XBOOL, "must have dtype fp16, fp32"),
    UN("atanh", XF, F23), UN_BAD("atanh", XINT, "must have dtype"),
    UN("ceil", XF, F23), UN_BAD("ceil", XINT, "must have dtype"),
    UN("cos", "(fp32)(Scalar)", "(fp32)(Scalar)"), UN_BAD("cos", XINT, "must have dtype"),
    UN("cosh", XF, F23), UN_BAD("cosh", XINT, "must have dtype"),
    UN("erf", XF, F23), UN_BAD("erf", XINT, "must have dtype"),
    UN("exp", "(n, 3, fp32)(Tensor)", "(n, 3, fp32)(Tensor)"), UN_BAD("exp", XINT, "must have dtype"),
    UN("exp2", XINT, I23), UN_BAD("exp2", XBOOL, "must have dtype"),
    UN("floor", XF, F23), UN_BAD("floor", XINT, "must have dtype"),
    UN("round", XF, F23), UN_BAD("round", XINT, "must have dtype"),
    UN("sign", XINT, I23), UN_BAD("sign", XBOOL, "must have dtype"),
    UN("sin", XF, F23), UN_BAD("sin", XINT, "must have dtype"),
    UN("sinh", XF, F23), UN_BAD("sinh", XINT, "must have dtype"),
    UN("sqrt", XF, F23), UN_BAD("sqrt", XINT, "must have dtype"),
    UN("square", XINT, I23), UN_BAD("square", XBOOL, "must have dtype"),
    UN("tan", XF, F23), UN_BAD("tan", XINT, "must have dtype"),
    UN("tanh", XH, "(2, 3, fp16)(Tensor)"), UN_BAD("tanh", XINT, "must have dtype"),
    UN("logical_not", XBOOL, B23), UN_BAD("logical_not", XF, "must have dtype bool"),
    /* clip */
    {"CoreML5", X1(XF), T(F23) "clip(x=%x, alpha=0.0, beta=6.0, name=\"t\")\n", F23, NULL},
    {"CoreML5", X1(XINT), T(I23) "clip(x=%x, alpha=0, beta=6, name=\"t\")\n", NULL, "must have dtype fp16, fp32"},
    {"CoreML5", X1(XF), T(F23) "clip(x=%x, alpha=6.0, beta=0.0, name=\"t\")\n", F23, NULL},
    {"CoreML7", X1(XF), T(F23) "clip(x=%x, alpha=0.0, beta=6.0, name=\"t\")\n", F23, NULL},
    {"CoreML7", X1(XF), T(F23) "clip(x=%x, alpha=6.0, beta=6.0, name=\"t\")\n", NULL,
     "input 'alpha' (6) must be smaller than 'beta' (6)"},
    /* threshold */
    {"CoreML5", X1(XINT), T(I23) "threshold(x=%x, alpha=1, name=\"t\")\n", I23, NULL},
    {"CoreML5", X1(XBOOL), T(B23) "threshold(x=%x, alpha=True, name=\"t\")\n", NULL, "must have dtype"},
    /* epsilon ops: iOS15 epsilon shares x's dtype, iOS17 may differ */
    {"CoreML5", X1(XF), T(F23) "inverse(x=%x, epsilon=0.001, name=\"t\")\n", F23, NULL},
    {"CoreML5", X1(XH), T(XH) "inverse(x=%x, epsilon=0.001, name=\"t\")\n", NULL,
     "input 'epsilon' must have the same dtype as 'x' (fp16)"},
    {"CoreML7", X1(XH), T(XH) "inverse(x=%x, epsilon=0.001, name=\"t\")\n", XH, NULL},
    {"CoreML7", X1(XH), T(XH) "inverse(x=%x, epsilon=1, name=\"t\")\n", NULL, "input 'epsilon' must have dtype"},
    {"CoreML5", X1(XF), T(F23) "log(x=%x, name=\"t\")\n", F23, NULL},
    {"CoreML5", X1(XH), T(XH) "log(x=%x, epsilon=0.001, name=\"t\")\n", NULL, "same dtype as 'x'"},
    {"CoreML7", X1(XH), T(XH) "log(x=%x, epsilon=0.001, name=\"t\")\n", XH, NULL},
    {"CoreML7", X1(XINT), T(I23) "log(x=%x, name=\"t\")\n", NULL, "input 'x' must have dtype fp16, fp32"},
    {"CoreML5", X1(XF), T(F23) "rsqrt(x=%x, epsilon=0.001, name=\"t\")\n", F23, NULL},
    {"CoreML5", X1(XH), T(XH) "rsqrt(x=%x, epsilon=0.001, name=\"t\")\n", NULL, "same dtype as 'x'"},
    {"CoreML7", X1(XH), T(XH) "rsqrt(x=%x, epsilon=0.001, name=\"t\")\n", XH, NULL},
    {"CoreML7", X1(XF), T(F23) "rsqrt(x=%x, epsilon=%x, name=\"t\")\n", NULL, "must be a compile-time constant"},
    /* cast */
    {"CoreML5", X1(XF), T(XH) "cast(x=%x, dtype=\"fp16\", name=\"t\")\n", XH, NULL},
    {"CoreML5", X1("(fp32)(Scalar)"), T("(int32)(Scalar)") "cast(x=%x, dtype=\"int32\", name=\"t\")\n",
     "(int32)(Scalar)", NULL},
    {"CoreML5", X1(XF), T(XH) "cast(x=%x, dtype=\"int8\", name=\"t\")\n", NULL,
     "input 'dtype' must be one of fp16, fp32, int32, bool, got \"int8\""},
    {"CoreML5", X1("(2, 3, int8)(Tensor)"), T(XH) "cast(x=%x, dtype=\"fp16\", name=\"t\")\n", NULL,
     "input 'x' must have dtype"},
    {"CoreML7", X1("(2, 3, int8)(Tensor)"), T(XH) "cast(x=%x, dtype=\"uint16\", name=\"t\")\n",
     "(2, 3, uint16)(Tensor)", NULL},
    {"CoreML7", X1(XF), T(XH) "cast(x=%x, dtype=\"fp64\", name=\"t\")\n", NULL, "got \"fp64\""},
    {"CoreML7", X1(XF), T(XH) "cast(x=%x, dtype=\"float32\", name=\"t\")\n", NULL, "got \"float32\""},
};

static void test_elementwise_unary(void **state) {
  (void)state;
  run_cases(k_unary, sizeof k_unary / sizeof k_unary[0]);
}

/* ---- activation ---- */

#define X4 "%x: (1, 3, 4, 4, fp32)(Tensor)"
#define F4 "(1, 3, 4, 4, fp32)(Tensor)"
#define H4 "(1, 3, 4, 4, fp16)(Tensor)"
#define A_OK(op, args) {"CoreML5", X4, T(F4) op "(x=%x" args ", name=\"t\")\n", F4, NULL}
#define A_BAD(opset, in, op, args, msg) {opset, in, T(F4) op "(x=%x" args ", name=\"t\")\n", NULL, msg}
#define A17(op, args) {"CoreML7", "%x: " H4, T(H4) op "(x=%x" args ", name=\"t\")\n", H4, NULL}
#define A15_MIXED(op, args) \
  {"CoreML5", "%x: " H4, T(H4) op "(x=%x" args ", name=\"t\")\n", NULL, "same dtype as 'x' (fp16)"}

static const tcase k_activation[] = {
    A_OK("clamped_relu", ", alpha=0.1, beta=6.0"), A15_MIXED("clamped_relu", ", alpha=0.1, beta=6.0"),
    A17("clamped_relu", ", alpha=0.1, beta=6.0"), A_BAD("CoreML7", X4, "clamped_relu", ", alpha=1, beta=6.0",
         "input 'alpha' must have dtype"),
    A_OK("elu", ", alpha=1.0"), A15_MIXED("elu", ", alpha=1.0"),
    A17("elu", ", alpha=1.0"), A_BAD("CoreML7", "%x: (1, 3, 4, 4, int32)(Tensor)", "elu", ", alpha=1.0",
         "input 'x' must have dtype"),
    A_OK("gelu", ""), A_OK("gelu", ", mode=\"TANH_APPROXIMATION\""), A_OK("gelu", ", mode=\"SIGMOID_APPROXIMATION\""),
    A_BAD("CoreML5", X4, "gelu", ", mode=\"FAST\"",
         "input 'mode' must be \"EXACT\", \"TANH_APPROXIMATION\" or \"SIGMOID_APPROXIMATION\", got \"FAST\""),
    A_OK("leaky_relu", ", alpha=0.01"), A15_MIXED("leaky_relu", ", alpha=0.01"),
    A17("leaky_relu", ", alpha=0.01"), A_BAD("CoreML7", X4, "leaky_relu", "", "required input 'alpha' is missing"),
    A_OK("linear_activation", ", alpha=2.0, beta=1.0"), A15_MIXED("linear_activation", ", alpha=2.0, beta=1.0"),
    A17("linear_activation", ", alpha=2.0, beta=1.0"), A_BAD("CoreML7", X4, "linear_activation", ", alpha=2.0",
         "required input 'beta' is missing"),
    A_OK("prelu", ", alpha=[0.1, 0.2, 0.3]"),
    A_BAD("CoreML5", X4, "prelu", ", alpha=[0.1, 0.2]",
         "input 'alpha' must have one value per channel of x (dim 1 of (1, 3, 4, 4, fp32)), got 2 values"),
    A_BAD("CoreML5", "%x: (2, 3, fp32)(Tensor)", "prelu", ", alpha=[0.1, 0.2, 0.3]",
         "input 'x' must be rank 3, 4 or 5, got (2, 3, fp32)"),
    A_BAD("CoreML5", "%x: (1, 3, 4, fp32)(Tensor)", "prelu", ", alpha=[0.1, 0.2, 0.3]",
         "one repeated value for a rank 3 x"),
    {"CoreML5", "%x: (1, 3, 4, fp32)(Tensor)",
         T("(1, 3, 4, fp32)(Tensor)") "prelu(x=%x, alpha=[0.5, 0.5, 0.5], name=\"t\")\n", "(1, 3, 4, fp32)(Tensor)",
              NULL},
    A17("prelu", ", alpha=[0.1, 0.2, 0.3]"), A_BAD("CoreML7", "%x: (1, c, 4, 4, fp32)(Tensor)", "prelu",
         ", alpha=[0.1, 0.2, 0.3]", "one value per channel"),
    A_OK("relu", ""), A_BAD("CoreML5", "%x: (1, 3, 4, 4, int32)(Tensor)", "relu", "",
         "input 'x' must have dtype fp16, fp32"),
    {"CoreML5", "%x: (n, 3, fp16)(Tensor)", T("(n, 3, fp16)(Tensor)") "relu(x=%x, name=\"t\")\n",
         "(n, 3, fp16)(Tensor)", NULL},
    A_OK("relu6", ""), A_BAD("CoreML5", X4, "relu6", ", alpha=1.0", "unknown input 'alpha'"),
    A_OK("scaled_tanh", ", alpha=1.0, beta=0.5"), A15_MIXED("scaled_tanh", ", alpha=1.0, beta=0.5"),
    A17("scaled_tanh", ", alpha=1.0, beta=0.5"), A_BAD("CoreML7", X4, "scaled_tanh", ", alpha=%x, beta=0.5",
         "must be a compile-time constant"),
    A_OK("sigmoid", ""), A_BAD("CoreML5", "%x: (2, int32)(Tensor)", "sigmoid", "", "must have dtype"),
    A_OK("sigmoid_hard", ", alpha=0.2, beta=0.5"), A15_MIXED("sigmoid_hard", ", alpha=0.2, beta=0.5"),
    A17("sigmoid_hard", ", alpha=0.2, beta=0.5"), A_BAD("CoreML7", X4, "sigmoid_hard", ", alpha=\"a\", beta=0.5",
         "input 'alpha' must have dtype"),
    A_OK("silu", ""), A_BAD("CoreML5", "%x: (2, bool)(Tensor)", "silu", "", "must have dtype"),
    A_OK("softplus", ""), A_BAD("CoreML5", "%x: (2, int32)(Tensor)", "softplus", "", "must have dtype"),
    A_OK("softplus_parametric", ", alpha=[1.0, 2.0, 3.0], beta=[1.0, 1.0, 1.0]"),
    A_BAD("CoreML5", "%x: (3, 4, fp32)(Tensor)", "softplus_parametric",
         ", alpha=[1.0, 2.0, 3.0], beta=[1.0, 1.0, 1.0]", "input 'x' must be at least rank 3"),
    A_BAD("CoreML5", X4, "softplus_parametric", ", alpha=[1.0, 2.0, 3.0], beta=[1.0, 1.0]",
         "input 'beta' must have one value per channel"),
    A17("softplus_parametric", ", alpha=[1.0, 2.0, 3.0], beta=[1.0, 1.0, 1.0]"),
    A_BAD("CoreML7", X4, "softplus_parametric", ", alpha=1.0, beta=[1.0, 1.0, 1.0]",
         "input 'alpha' must be rank 1, got (fp32)"),
    A_OK("softmax", ", axis=1"), A_OK("softmax", ""),
    A_BAD("CoreML5", X4, "softmax", ", axis=1.0", "input 'axis' must have dtype int32"),
    A_OK("softsign", ""), A_BAD("CoreML5", "%x: (2, int32)(Tensor)", "softsign", "", "must have dtype"),
    A_OK("thresholded_relu", ", alpha=0.5"), A15_MIXED("thresholded_relu", ", alpha=0.5"),
    A17("thresholded_relu", ", alpha=0.5"), A_BAD("CoreML7", X4, "thresholded_relu", ", alpha=0.5, beta=1.0",
         "unknown input 'beta'"),
};

static void test_activation(void **state) {
  (void)state;
  run_cases(k_activation, sizeof k_activation / sizeof k_activation[0]);
}

/* ---- reduction ---- */

#define R_CASE(opset, in, op, args, out) {opset, in, T(F23) op "(x=%x" args ", name=\"t\")\n", out, NULL}
#define R_BAD(opset, in, op, args, msg) {opset, in, T(F23) op "(x=%x" args ", name=\"t\")\n", NULL, msg}
#define RX "%x: (2, n, 4, fp32)(Tensor)"
#define RED_OK(op) R_CASE("CoreML5", RX, op, ", axes=[1], keep_dims=False", "(2, 4, fp32)(Tensor)")

static const tcase k_reduction[] = {
    RED_OK("reduce_l1_norm"), RED_OK("reduce_l2_norm"), RED_OK("reduce_log_sum"), RED_OK("reduce_log_sum_exp"),
    RED_OK("reduce_max"), RED_OK("reduce_mean"), RED_OK("reduce_min"), RED_OK("reduce_prod"), RED_OK("reduce_sum"),
    RED_OK("reduce_sum_square"),
    R_CASE("CoreML5", RX, "reduce_sum", ", axes=[-1, 0], keep_dims=True", "(1, n, 1, fp32)(Tensor)"),
    R_CASE("CoreML5", RX, "reduce_mean", "", "(fp32)(Scalar)"),
    R_CASE("CoreML5", RX, "reduce_mean", ", keep_dims=True", "(1, 1, 1, fp32)(Tensor)"),
    R_CASE("CoreML5", "%x: (2, 3, int32)(Tensor)", "reduce_prod", ", axes=[0, 1], keep_dims=False", "(int32)(Scalar)"),
    R_CASE("CoreML5", RX, "reduce_max", ", axes=[1, 1], keep_dims=False", "(2,fp32)(Tensor)"),
    /* a repeated axis pops twice, like coremltools' list.pop */
    R_CASE("CoreML5", "%x: (2, 3, 4, fp32)(Tensor)", "reduce_sum", ", axes=[0, 0]", "(4,fp32)(Tensor)"),
    R_CASE("CoreML5", "%x: (2, 3, 4, fp32)(Tensor)", "reduce_sum", ", axes=[0, 0], keep_dims=True",
         "(1, 3, 4, fp32)(Tensor)"),
    R_BAD("CoreML5", "%x: (2,fp32)(Tensor)", "reduce_sum", ", axes=[0, 0]",
         "repeats axis 0 and removes more dims than x (2,fp32) has"),
    R_BAD("CoreML5", RX, "reduce_l1_norm", ", axes=[3]", "input 'axes' has axis 3, out of range for x (2, n, 4, fp32)"),
    R_BAD("CoreML5", RX, "reduce_l2_norm", ", axes=[-4]", "out of range"),
    R_BAD("CoreML5", RX, "reduce_log_sum", ", axes=[0], keep_dims=1", "input 'keep_dims' must have dtype bool"),
    R_BAD("CoreML5", "%x: (2, bool)(Tensor)", "reduce_log_sum_exp", "", "input 'x' must have dtype fp16, fp32, int32"),
    R_BAD("CoreML5", RX ", %a: (1,int32)(Tensor)", "reduce_max", ", axes=%a",
         "input 'axes' must be a compile-time constant, but %a is computed at run time"),
    R_BAD("CoreML5", RX, "reduce_mean", ", axes=[0.5]", "input 'axes' must have dtype int32"),
    R_BAD("CoreML5", RX, "reduce_min", ", axis=[0]", "unknown input 'axis'"),
    R_BAD("CoreML5", RX, "reduce_prod", ", axes=[5]", "out of range"),
    R_BAD("CoreML5", RX, "reduce_sum", ", axes=[0, -5]", "out of range"),
    R_BAD("CoreML5", RX, "reduce_sum_square", ", axes=[2], keep_dims=\"no\"", "must have dtype bool"),
    /* argmax / argmin */
    R_CASE("CoreML5", RX, "reduce_argmax", ", axis=1, keep_dims=False", "(2, 4, int32)(Tensor)"),
    R_CASE("CoreML5", RX, "reduce_argmin", ", axis=-1, keep_dims=True", "(2, n, 1, int32)(Tensor)"),
    R_CASE("CoreML5", "%x: (5,fp16)(Tensor)", "reduce_argmax", "", "(int32)(Tensor)"),
    R_BAD("CoreML5", RX, "reduce_argmax", ", axis=3", "input 'axis' (3) is out of range for x (2, n, 4, fp32)"),
    R_BAD("CoreML5", RX, "reduce_argmin", ", axis=[0, 1]", "input 'axis' must be a scalar, got (2,int32)"),
    R_BAD("CoreML5", RX, "reduce_argmin", ", axis=0, output_dtype=\"int32\"", "unknown input 'output_dtype'"),
    R_CASE("CoreML7", RX, "reduce_argmax", ", axis=0, keep_dims=False, output_dtype=\"uint16\"",
         "(n, 4, uint16)(Tensor)"),
    R_CASE("CoreML7", RX, "reduce_argmin", ", axis=0, output_dtype=\"INT32\"", "(n, 4, int32)(Tensor)"),
    R_BAD("CoreML7", RX, "reduce_argmax", ", axis=0, output_dtype=\"int64\"",
         "input 'output_dtype' must be \"int32\" or \"uint16\", got \"int64\""),
    R_BAD("CoreML7", RX, "reduce_argmin", ", axis=-4", "out of range"),
};

static void test_reduction(void **state) {
  (void)state;
  run_cases(k_reduction, sizeof k_reduction / sizeof k_reduction[0]);
}

/* ---- control_flow ---- */

#define MAKE_L                                                                                                 \
  C("two", "(int32)*(Scalar)", "2")                                                                            \
  "    %l: List[?, (2,fp32)](List) = make_list(init_length=1, dynamic_length=True, elem_shape=(%two), "          \
  "dtype=\"fp32\", name=\"l\")\n"

static const tcase k_control_flow[] = {
    /* select: broadcast of a and b (cond's shape is not consulted) */
    {"CoreML5", "%c: (2, 3, bool)(Tensor), %a: (2, 3, fp32)(Tensor), %b: (3,fp32)(Tensor)",
     T(F23) "select(cond=%c, a=%a, b=%b, name=\"t\")\n", F23, NULL},
    {"CoreML5", "%c: (bool)(Scalar), %a: (int32)(Scalar), %b: (int32)(Scalar)",
     T("(int32)(Scalar)") "select(cond=%c, a=%a, b=%b, name=\"t\")\n", "(int32)(Scalar)", NULL},
    {"CoreML5", "%c: (2, 3, bool)(Tensor), %a: (2, 3, fp32)(Tensor), %b: (3,int32)(Tensor)",
     T(F23) "select(cond=%c, a=%a, b=%b, name=\"t\")\n", NULL, "input 'b' must have the same dtype as 'a' (fp32)"},
    {"CoreML5", "%c: (2, 3, fp32)(Tensor), %a: (2, 3, fp32)(Tensor), %b: (3,fp32)(Tensor)",
     T(F23) "select(cond=%c, a=%a, b=%b, name=\"t\")\n", NULL, "input 'cond' must have dtype bool"},
    {"CoreML5", "%c: (2, 3, bool)(Tensor), %a: (2, 3, fp32)(Tensor), %b: (2,fp32)(Tensor)",
     T(F23) "select(cond=%c, a=%a, b=%b, name=\"t\")\n", NULL, "cannot be broadcast"},
    /* cond */
    {"CoreML5", "%p: (bool)(Scalar), %x: (2, 3, fp32)(Tensor)",
     "    %t: (2, 3, fp32)(Tensor) = cond(pred=%p, name=\"t\")\n"
     "      t_true() {\n        %a: (2, 3, fp32)(Tensor) = relu(x=%x, name=\"a\")\n      } -> (%a)\n"
     "      t_false() {\n        %b: (2, 3, fp32)(Tensor) = sigmoid(x=%x, name=\"b\")\n      } -> (%b)\n",
     F23, NULL},
    {"CoreML5", "%p: (bool)(Scalar), %x: (n, 3, fp32)(Tensor), %y: (2, 3, fp32)(Tensor)",
     "    %t: (n, 3, fp32)(Tensor) = cond(pred=%p, name=\"t\")\n"
     "      t_true() {\n        %a: (n, 3, fp32)(Tensor) = relu(x=%x, name=\"a\")\n      } -> (%a)\n"
     "      t_false() {\n        %b: (2, 3, fp32)(Tensor) = relu(x=%y, name=\"b\")\n      } -> (%b)\n",
     "(n, 3, fp32)(Tensor)", NULL},
    {"CoreML5", "%p: (bool)(Scalar), %x: (2, 3, fp32)(Tensor), %y: (3,fp32)(Tensor)",
     "    %t: (2, 3, fp32)(Tensor) = cond(pred=%p, name=\"t\")\n"
     "      t_true() {\n        %a: (2, 3, fp32)(Tensor) = relu(x=%x, name=\"a\")\n      } -> (%a)\n"
     "      t_false() {\n        %b: (3,fp32)(Tensor) = relu(x=%y, name=\"b\")\n      } -> (%b)\n",
     NULL, "true branch output %a is (2, 3, fp32) but false branch output %b is (3,fp32)"},
    {"CoreML5", "%p: (2,fp32)(Tensor), %x: (2, 3, fp32)(Tensor)",
     "    %t: (2, 3, fp32)(Tensor) = cond(pred=%p, name=\"t\")\n"
     "      t_true() {\n        %a: (2, 3, fp32)(Tensor) = relu(x=%x, name=\"a\")\n      } -> (%a)\n"
     "      t_false() {\n        %b: (2, 3, fp32)(Tensor) = relu(x=%x, name=\"b\")\n      } -> (%b)\n",
     NULL, "input 'pred' must have dtype bool"},
    /* while_loop: outputs are the body's outputs */
    {"CoreML5", "%x: (2, 3, fp32)(Tensor)",
     C("i0", "(int32)*(Scalar)", "0")
     "    %t: (int32)(Scalar), %t_1: (2, 3, fp32)(Tensor) = while_loop(loop_vars=(%i0, %x), name=\"t\")\n"
     "      t_cond_block(%i: (int32)(Scalar), %v: (2, 3, fp32)(Tensor)) {\n"
     "        %lt: (bool)(Scalar) = less(x=%i, y=10, name=\"lt\")\n      } -> (%lt)\n"
     "      t_body_block(%i: (int32)(Scalar), %v: (2, 3, fp32)(Tensor)) {\n"
     "        %inc: (int32)(Scalar) = add(x=%i, y=1, name=\"inc\")\n"
     "        %dbl: (2, 3, fp32)(Tensor) = mul(x=%v, y=2.0, name=\"dbl\")\n      } -> (%inc, %dbl)\n",
     "(int32)(Scalar)", NULL},
    {"CoreML5", "%x: (2, 3, fp32)(Tensor)",
     C("i0", "(int32)*(Scalar)", "0")
     "    %t: (int32)(Scalar) = while_loop(loop_vars=(%i0, %x), name=\"t\")\n"
     "      t_cond_block(%i: (int32)(Scalar), %v: (2, 3, fp32)(Tensor)) {\n"
     "        %lt: (bool)(Scalar) = less(x=%i, y=10, name=\"lt\")\n      } -> (%lt)\n"
     "      t_body_block(%i: (int32)(Scalar), %v: (2, 3, fp32)(Tensor)) {\n"
     "        %inc: (int32)(Scalar) = add(x=%i, y=1, name=\"inc\")\n      } -> (%inc)\n",
     NULL, "body block returns 1 values but there are 2 loop_vars"},
    /* lists */
    {"CoreML5", "", C("two", "(int32)*(Scalar)", "2")
     "    %t: List[?, (2,fp32)](List) = make_list(init_length=1, dynamic_length=True, elem_shape=(%two), "
     "dtype=\"fp32\", name=\"t\")\n",
     "List[?, (2,fp32)]", NULL},
    {"CoreML5", "", C("two", "(int32)*(Scalar)", "2") C("s", "(string)*(Scalar)", "\"seq\"")
     "    %t: List[3, (seq, 2, fp16)](List) = make_list(init_length=3, dynamic_length=False, "
     "elem_shape=(%s, %two), dtype=\"fp16\", name=\"t\")\n",
     "List[3, (seq, 2, fp16)]", NULL},
    {"CoreML5", "", C("two", "(int32)*(Scalar)", "2")
     "    %t: List[?, (2,fp32)](List) = make_list(elem_shape=(%two), dtype=\"float\", name=\"t\")\n",
     NULL, "input 'dtype' must name a dtype, got \"float\""},
    {"CoreML5", "%n: (int32)(Scalar)",
     "    %t: List[?, (2,fp32)](List) = make_list(elem_shape=(%n), name=\"t\")\n",
     NULL, "input 'elem_shape' must be a tuple of consts; entry 0 (%n) is not"},
    {"CoreML5", "", MAKE_L
     "    %t: (int32)(Scalar) = list_length(ls=%l, name=\"t\")\n",
     "(int32)(Scalar)", NULL},
    {"CoreML5", "%x: (2,fp32)(Tensor)", "    %t: (int32)(Scalar) = list_length(ls=%x, name=\"t\")\n", NULL,
     "input 'ls' must be a list, got (2,fp32)"},
    {"CoreML5", "%v: (2,fp32)(Tensor)", MAKE_L
     "    %t: List[?, (2,fp32)](List) = list_write(ls=%l, index=0, value=%v, name=\"t\")\n",
     "List[?, (2,fp32)]", NULL},
    {"CoreML5", "%v: (3,fp32)(Tensor)", MAKE_L
     "    %t: List[?, (2,fp32)](List) = list_write(ls=%l, index=0, value=%v, name=\"t\")\n",
     NULL, "input 'value' is (3,fp32) but the list holds (2,fp32)"},
    {"CoreML5", "", MAKE_L
     "    %t: (2,fp32)(Tensor) = list_read(ls=%l, index=0, name=\"t\")\n",
     "(2,fp32)(Tensor)", NULL},
    {"CoreML5", "", MAKE_L
     "    %t: (2,fp32)(Tensor) = list_read(ls=%l, index=0.0, name=\"t\")\n",
     NULL, "input 'index' must have dtype int32"},
    {"CoreML5", "%i: (k,int32)(Tensor)", MAKE_L
     "    %t: (k, 2, fp32)(Tensor) = list_gather(ls=%l, indices=%i, name=\"t\")\n",
     "(k, 2, fp32)(Tensor)", NULL},
    {"CoreML5", "%i: (int32)(Scalar)", MAKE_L
     "    %t: (2,fp32)(Tensor) = list_gather(ls=%l, indices=%i, name=\"t\")\n",
     NULL, "input 'indices' must be at least rank 1, got (int32)"},
    {"CoreML5", "%v: (3, 2, fp32)(Tensor)", MAKE_L
     "    %t: List[?, (2,fp32)](List) = list_scatter(ls=%l, indices=[0, 1, 2], value=%v, name=\"t\")\n",
     "List[?, (2,fp32)]", NULL},
    {"CoreML5", "%v: (3, 2, fp32)(Tensor)", MAKE_L
     "    %t: List[?, (2,fp32)](List) = list_scatter(ls=%l, indices=[0, 1], value=%v, name=\"t\")\n",
     NULL, "cannot scatter"},
    {"CoreML5", "%v: (3, 4, fp32)(Tensor)", MAKE_L
     "    %t: List[?, (2,fp32)](List) = list_scatter(ls=%l, indices=[0, 1, 2], value=%v, name=\"t\")\n",
     NULL, "elements of input 'value' are (4,fp32) but the list holds (2,fp32)"},
    /* const: type of its value; _const_symbolic: declared type, symbolic */
    {"CoreML5", "", C("t", "(2,fp32)*(Tensor)", "[1.0, 2.0]"), "(2,fp32)(Tensor)", NULL},
    {"CoreML5", "", "    %t: (3,int32)^(Tensor) = _const_symbolic(, name=\"t\")\n", "(3,int32)(Tensor)", NULL},
};

static void test_control_flow(void **state) {
  (void)state;
  run_cases(k_control_flow, sizeof k_control_flow / sizeof k_control_flow[0]);
}

/* cond and while_loop produce one type per block output. */
static void test_multi_output_blocks(void **state) {
  (void)state;
  tcase tc = {"CoreML5", "%x: (2, 3, fp32)(Tensor)",
              C("i0", "(int32)*(Scalar)", "0")
              "    %t: (int32)(Scalar), %t_1: (2, 3, fp32)(Tensor) = while_loop(loop_vars=(%i0, %x), name=\"t\")\n"
              "      t_cond_block(%i: (int32)(Scalar), %v: (2, 3, fp32)(Tensor)) {\n"
              "        %lt: (bool)(Scalar) = less(x=%i, y=10, name=\"lt\")\n      } -> (%lt)\n"
              "      t_body_block(%i: (int32)(Scalar), %v: (2, 3, fp32)(Tensor)) {\n"
              "        %inc: (int32)(Scalar) = add(x=%i, y=1, name=\"inc\")\n"
              "        %dbl: (2, 3, fp32)(Tensor) = mul(x=%v, y=2.0, name=\"dbl\")\n      } -> (%inc, %dbl)\n",
              NULL, NULL};
  mil_program *p = parse_case(&tc);
  const mil_type *types[16];
  const mil_value *vals[16];
  char err[512], s[128];
  assert_int_equal(infer_t(p, types, vals, err, sizeof err), MIL_OK);
  type_text(types[1], s, sizeof s);
  assert_string_equal(s, "(2, 3, fp32)(Tensor)");
  mil_diag d;
  mil_diag_init(&d);
  assert_int_equal(mil_program_validate(p, &d), MIL_OK);
  mil_diag_clear(&d);
  mil_program_free(p);

  tcase tc2 = {"CoreML5", "%p: (bool)(Scalar), %x: (2, 3, fp32)(Tensor)",
               "    %t: (2, 3, fp32)(Tensor), %t_1: (int32)(Scalar) = cond(pred=%p, name=\"t\")\n"
               "      t_true() {\n        %a: (2, 3, fp32)(Tensor) = relu(x=%x, name=\"a\")\n"
               "        %one: (int32)*(Scalar) = const(val=1, name=\"one\")\n      } -> (%a, %one)\n"
               "      t_false() {\n        %b: (2, 3, fp32)(Tensor) = sigmoid(x=%x, name=\"b\")\n"
               "        %two: (int32)*(Scalar) = const(val=2, name=\"two\")\n      } -> (%b, %two)\n",
               NULL, NULL};
  p = parse_case(&tc2);
  assert_int_equal(infer_t(p, types, vals, err, sizeof err), MIL_OK);
  type_text(types[1], s, sizeof s);
  assert_string_equal(s, "(int32)(Scalar)");
  mil_program_free(p);
}

/* A const op without a value and a _const_symbolic without any type are
 * rejected (built with the builder: the text form always has both). */
static void test_const_without_value(void **state) {
  (void)state;
  mil_program *p = mil_program_new(NULL);
  mil_function *f = mil_function_new(p, "main", "CoreML5");
  mil_block *b = mil_function_body(f);
  mil_op *op = mil_op_new(p, "const", "c");
  mil_op_add_output(op, "c", mil_type_scalar(p, MIL_DT_FP32));
  mil_block_append(b, op);
  mil_diag d;
  mil_diag_init(&d);
  assert_int_equal(mil_op_infer(op, &d), MIL_ERR_TYPE);
  assert_non_null(strstr(mil_diag_first_error(&d), "a const op must hold a value"));
  mil_diag_clear(&d);
  mil_op *sym = mil_op_new(p, "_const_symbolic", "s");
  mil_block_append(b, sym);
  assert_int_equal(mil_op_infer(sym, &d), MIL_ERR_TYPE);
  assert_non_null(strstr(mil_diag_first_error(&d), "must hold a value or declare its output type"));
  mil_diag_clear(&d);
  mil_program_free(p);
}

/* ---- random ---- */

static const tcase k_random[] = {
    {"CoreML5", "", T("(2, 3, fp32)(Tensor)") "random_uniform(shape=[2, 3], low=0.0, high=1.0, seed=-1, name=\"t\")\n",
     "(2, 3, fp32)(Tensor)", NULL},
    {"CoreML5", "", C("lo", "(fp16)*(Scalar)", "0.0")
     T("(2, 3, fp32)(Tensor)") "random_uniform(shape=[2, 3], low=%lo, high=1.0, name=\"t\")\n",
     NULL, "input 'high' must have the same dtype as 'low' (fp16)"},
    {"CoreML5", "", C("lo", "(fp16)*(Scalar)", "0.0")
     T("(2, 3, fp16)(Tensor)") "random_uniform(shape=[2, 3], low=%lo, name=\"t\")\n",
     NULL, "inputs 'low' (fp16) and 'high' (fp32) must have the same dtype"},
    {"CoreML5", "", C("m", "(fp16)*(Scalar)", "0.0") C("s", "(fp16)*(Scalar)", "1.0")
     T("(4,fp16)(Tensor)") "random_normal(shape=[4], mean=%m, stddev=%s, name=\"t\")\n",
     "(4,fp16)(Tensor)", NULL},
    {"CoreML5", "", T("(4,fp32)(Tensor)") "random_normal(shape=[4.0], name=\"t\")\n",
     NULL, "input 'shape' must have dtype int32"},
    {"CoreML5", "", T("(5, 1, fp32)(Tensor)") "random_bernoulli(shape=[5, 1], prob=0.25, seed=7, name=\"t\")\n",
     "(5, 1, fp32)(Tensor)", NULL},
    {"CoreML5", "", C("shp", "(2, 2, int32)*(Tensor)", "[[1, 2], [3, 4]]")
     T("(5, 1, fp32)(Tensor)") "random_bernoulli(shape=%shp, name=\"t\")\n",
     NULL, "input 'shape' must be rank 1, got (2, 2, int32)"},
    {"CoreML5", "%x: (n, 10, fp32)(Tensor)", T("(n, 3, fp32)(Tensor)") "random_categorical(x=%x, size=3, name=\"t\")\n",
     "(n, 3, fp32)(Tensor)", NULL},
    {"CoreML5", "%x: (n, 10, fp32)(Tensor)", T("(n, 1, fp32)(Tensor)") "random_categorical(x=%x, name=\"t\")\n",
     "(n, 1, fp32)(Tensor)", NULL},
    {"CoreML5", "%x: (n, 10, int32)(Tensor)", T("(n, 1, fp32)(Tensor)") "random_categorical(x=%x, name=\"t\")\n",
     NULL, "input 'x' must have dtype fp16, fp32"},
};

static void test_random(void **state) {
  (void)state;
  run_cases(k_random, sizeof k_random / sizeof k_random[0]);
}

/* An unknown shape value gives one fresh symbol per entry; an unknown
 * shape length gives a variadic dim. */
static void test_random_symbolic_shape(void **state) {
  (void)state;
  tcase tc = {"CoreML5", "%s: (3,int32)(Tensor)", T("(a, b, c, fp32)(Tensor)") "random_normal(shape=%s, name=\"t\")\n",
              NULL, NULL};
  mil_program *p = parse_case(&tc);
  const mil_type *types[16];
  const mil_value *vals[16];
  char err[512];
  assert_int_equal(infer_t(p, types, vals, err, sizeof err), MIL_OK);
  assert_int_equal(types[0]->rank, 3);
  for (int i = 0; i < 3; i++) assert_non_null(types[0]->dims[i].sym);
  assert_string_not_equal(types[0]->dims[0].sym, types[0]->dims[1].sym);
  mil_program_free(p);
  tcase tc2 = {"CoreML5", "%s: (k,int32)(Tensor)", T("(a, fp32)(Tensor)") "random_uniform(shape=%s, name=\"t\")\n",
               NULL, NULL};
  p = parse_case(&tc2);
  assert_int_equal(infer_t(p, types, vals, err, sizeof err), MIL_OK);
  assert_int_equal(types[0]->rank, 1);
  assert_true(types[0]->dims[0].variadic);
  mil_program_free(p);
}

/* An output of unknown rank gets a named variadic symbol, as coremltools'
 * get_new_variadic_symbol gives fill and reshape ("(*is52046,fp32)"), not
 * an anonymous "(*?, fp32)". */
static void test_unknown_rank_is_named(void **state) {
  (void)state;
  static const tcase cases[] = {
      {"CoreML3", "%s: (k,int32)(Tensor)", T("(*a,fp32)(Tensor)") "fill(shape=%s, value=1.5, name=\"t\")\n", NULL,
       NULL},
      {"CoreML7", "%s: (k,int32)(Tensor), %x: (2, 3, fp16)(Tensor)",
       T("(*a,fp16)(Tensor)") "reshape(x=%x, shape=%s, name=\"t\")\n", NULL, NULL},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    mil_program *p = parse_case(&cases[i]);
    const mil_type *types[16];
    const mil_value *vals[16];
    char err[512], buf[128];
    assert_int_equal(infer_t(p, types, vals, err, sizeof err), MIL_OK);
    assert_int_equal(types[0]->rank, 1);
    assert_true(types[0]->dims[0].variadic);
    assert_non_null(types[0]->dims[0].sym);
    mil_type_to_string(types[0], buf, sizeof buf);
    assert_int_equal(strncmp(buf, "(*is", 4), 0);
    assert_null(strchr(buf, '?'));
    mil_program_free(p);
  }
}

/* ---- coreml_dialect ---- */

static const tcase k_coreml_dialect[] = {
    {"CoreML8", "%s: (1, 4, fp16)(State), %v: (1, 4, fp16)(Tensor)",
     T("(1, 4, fp16)(Tensor)") "coreml_update_state(state=%s, value=%v, name=\"t\")\n", "(1, 4, fp16)(Tensor)", NULL},
    {"CoreML8", "%s: (1, 4, fp16)(State), %v: (1, 5, fp16)(Tensor)",
     T("(1, 5, fp16)(Tensor)") "coreml_update_state(state=%s, value=%v, name=\"t\")\n", NULL,
     "input 'state' wraps (1, 4, fp16) but 'value' is (1, 5, fp16)"},
    {"CoreML8", "%s: (1, 4, fp16)(Tensor), %v: (1, 4, fp16)(Tensor)",
     T("(1, 4, fp16)(Tensor)") "coreml_update_state(state=%s, value=%v, name=\"t\")\n", NULL,
     "input 'state' must be a state"},
};

static void test_coreml_dialect(void **state) {
  (void)state;
  run_cases(k_coreml_dialect, sizeof k_coreml_dialect / sizeof k_coreml_dialect[0]);
}

/* ---- complex_dialect ---- */

#define CX "%c: (4, 8, complex64)(Tensor)"
#define RE "%r: (4, 8, fp32)(Tensor)"
#define CT(op, in, args, out) {"CoreML5", in, T(out) op "(" args ", name=\"t\")\n", out, NULL}
#define CT_BAD(op, in, args, msg) {"CoreML5", in, T("(4, 8, fp32)(Tensor)") op "(" args ", name=\"t\")\n", NULL, msg}

static const tcase k_complex[] = {
    CT("complex", RE ", %i: (4, 8, fp32)(Tensor)", "real_data=%r, imag_data=%i", "(4, 8, complex64)(Tensor)"),
    CT_BAD("complex", RE ", %i: (4, 9, fp32)(Tensor)", "real_data=%r, imag_data=%i",
           "inputs 'real_data' (4, 8, fp32) and 'imag_data' (4, 9, fp32) must have the same shape"),
    CT("complex_real", CX, "data=%c", "(4, 8, fp32)(Tensor)"),
    CT_BAD("complex_real", RE, "data=%r", "input 'data' must have dtype complex64"),
    CT("complex_imag", CX, "data=%c", "(4, 8, fp32)(Tensor)"),
    CT_BAD("complex_imag", RE, "data=%r", "must have dtype complex64"),
    CT("complex_abs", CX, "x=%c", "(4, 8, fp32)(Tensor)"),
    CT_BAD("complex_abs", RE, "x=%r", "must have dtype complex64"),
    CT("complex_shape", CX, "x=%c", "(2,int32)(Tensor)"),
    CT_BAD("complex_shape", RE, "x=%r", "must have dtype complex64"),
    CT("complex_fft", RE, "data=%r, dim=-1, norm=\"backward\"", "(4, 8, complex64)(Tensor)"),
    CT("complex_fft", CX, "data=%c, n=16, dim=0, norm=\"ortho\"", "(16, 8, complex64)(Tensor)"),
    CT_BAD("complex_fft", RE, "data=%r, norm=\"both\"",
         "input 'norm' must be \"forward\", \"backward\" or \"ortho\", got \"both\""),
    CT_BAD("complex_fft", RE, "data=%r, dim=2", "invalid dim 2 in 'dim' for data (4, 8, fp32)"),
    CT_BAD("complex_fft", RE, "data=%r, n=0", "invalid length 0 in 'n' (must be positive)"),
    CT("complex_fftn", RE, "data=%r, norm=\"backward\"", "(4, 8, complex64)(Tensor)"),
    CT("complex_fftn", RE, "data=%r, shapes=[6]", "(4, 6, complex64)(Tensor)"),
    CT("complex_fftn", RE, "data=%r, shapes=[6, 10], dims=[1, 0]", "(10, 6, complex64)(Tensor)"),
    CT_BAD("complex_fftn", RE, "data=%r, shapes=[6, 10], dims=[1]",
         "inputs 'shapes' (2 values) and 'dims' (1 values) must have the same length"),
    CT("complex_rfft", RE, "data=%r", "(4, 5, complex64)(Tensor)"),
    CT("complex_rfft", RE, "data=%r, n=10, dim=0", "(6, 8, complex64)(Tensor)"),
    CT_BAD("complex_rfft", CX, "data=%c", "input 'data' must have dtype fp32"),
    CT("complex_rfftn", RE, "data=%r", "(4, 5, complex64)(Tensor)"),
    CT("complex_rfftn", RE, "data=%r, dims=[1, 0]", "(3, 8, complex64)(Tensor)"),
    CT_BAD("complex_rfftn", RE, "data=%r, dims=[3]", "invalid dim 3 in 'dims'"),
    CT("complex_ifft", CX, "data=%c", "(4, 8, complex64)(Tensor)"),
    CT("complex_ifft", CX, "data=%c, n=3", "(4, 3, complex64)(Tensor)"),
    CT_BAD("complex_ifft", RE, "data=%r", "must have dtype complex64"),
    CT("complex_ifftn", CX, "data=%c, shapes=[2, 2]", "(2, 2, complex64)(Tensor)"),
    CT_BAD("complex_ifftn", CX, "data=%c, shapes=[-1]", "invalid length -1 in 'shapes'"),
    CT("complex_irfft", CX, "data=%c", "(4, 14, fp32)(Tensor)"),
    CT("complex_irfft", CX, "data=%c, n=5", "(4, 5, fp32)(Tensor)"),
    CT_BAD("complex_irfft", RE, "data=%r", "must have dtype complex64"),
    CT("complex_irfftn", CX, "data=%c", "(4, 14, fp32)(Tensor)"),
    CT("complex_irfftn", CX, "data=%c, dims=[0]", "(6, 8, fp32)(Tensor)"),
    CT_BAD("complex_irfftn", CX, "data=%c, dims=[0, 5]", "invalid dim 5"),
    CT("complex_stft", "%a: (100,fp32)(Tensor)", "input=%a, n_fft=16", "(9, 22, complex64)(Tensor)"),
    CT("complex_stft", "%a: (2, 100, fp32)(Tensor)", "input=%a, n_fft=16, hop_length=8, onesided=False",
       "(2, 16, 11, complex64)(Tensor)"),
    CT_BAD("complex_stft", "%a: (100,fp32)(Tensor)", "input=%a", "required input 'n_fft' is missing"),
};

static void test_complex_dialect(void **state) {
  (void)state;
  run_cases(k_complex, sizeof k_complex / sizeof k_complex[0]);
}

/* ---- classify (the classes are a literal list value: built here) ---- */

static mil_op *classify_op(mil_program *p, const char **labels, int n, int n_probs) {
  mil_function *f = mil_function_new(p, "main", "CoreML5");
  int64_t shape[1] = {n_probs};
  mil_var *probs = mil_function_add_input(f, "probs", mil_type_tensor_shape(p, MIL_DT_FP32, 1, shape));
  const mil_value *items[8];
  for (int i = 0; i < n; i++) items[i] = mil_value_new_string(p, labels[i]);
  const mil_type *lt = mil_type_list(p, mil_type_scalar(p, MIL_DT_STRING), (mil_dim){n, NULL, false});
  mil_op *op = mil_op_new(p, "classify", "t");
  mil_op_add_input(op, "probabilities", probs);
  mil_op_add_input_value(op, "classes", mil_value_new_list(p, lt, n, items));
  mil_op_add_output(op, "t_0", mil_type_scalar(p, MIL_DT_STRING));
  mil_op_add_output(op, "t_1", mil_type_dict(p, mil_type_scalar(p, MIL_DT_STRING), mil_type_scalar(p, MIL_DT_FP64)));
  mil_block_append(mil_function_body(f), op);
  return op;
}

static void test_classify(void **state) {
  (void)state;
  const char *labels[3] = {"cat", "dog", "fox"};
  mil_program *p = mil_program_new(NULL);
  mil_op *op = classify_op(p, labels, 3, 3);
  const mil_type *types[16];
  const mil_value *vals[16];
  mil_diag d;
  mil_diag_init(&d);
  assert_int_equal(mil_op_infer_types(op, types, vals, &d), MIL_OK);
  assert_true(types[0]->is_scalar && types[0]->dtype == MIL_DT_STRING);
  assert_int_equal(types[1]->kind, MIL_TYPE_DICT);
  assert_int_equal(types[1]->elem->dtype, MIL_DT_STRING);
  assert_int_equal(types[1]->value->dtype, MIL_DT_FP64);
  mil_program_free(p);

  p = mil_program_new(NULL);
  op = classify_op(p, labels, 3, 4);
  assert_int_equal(mil_op_infer_types(op, types, vals, &d), MIL_ERR_TYPE);
  assert_non_null(strstr(mil_diag_first_error(&d),
       "input 'classes' has 3 labels but 'probabilities' (4,fp32) has 4 values"));
  mil_diag_clear(&d);
  mil_program_free(p);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_elementwise_binary),
      cmocka_unit_test(test_binary_fresh_symbol),
      cmocka_unit_test(test_elementwise_unary),
      cmocka_unit_test(test_activation),
      cmocka_unit_test(test_reduction),
      cmocka_unit_test(test_control_flow),
      cmocka_unit_test(test_multi_output_blocks),
      cmocka_unit_test(test_const_without_value),
      cmocka_unit_test(test_random),
      cmocka_unit_test(test_random_symbolic_shape),
      cmocka_unit_test(test_unknown_rank_is_named),
      cmocka_unit_test(test_coreml_dialect),
      cmocka_unit_test(test_complex_dialect),
      cmocka_unit_test(test_classify),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
