/* Value inference (folding) of the elementwise_binary, elementwise_unary,
 * activation, reduction, control_flow and complex_dialect families: known
 * inputs must fold to the values numpy computes in coremltools (dtype
 * rules, per-operation fp16 rounding, int32 wrap-around and floor
 * semantics), here written out by hand. */
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

#define OP1(ty, call) T(ty) call "\n"
#define FP32 MIL_DT_FP32
#define FP16 MIL_DT_FP16
#define I32 MIL_DT_INT32
#define BOOL MIL_DT_BOOL

static void test_fold_binary(void **state) {
  (void)state;
  FOLD("CoreML5", "", OP1("(2,fp32)(Tensor)", "add(x=[1.5, 2.25], y=[0.25, -1.0], name=\"t\")"), FP32, 1.75, 1.25);
  /* int32 wraps around */
  FOLD("CoreML5", "", OP1("(int32)(Scalar)", "add(x=2147483647, y=1, name=\"t\")"), I32, -2147483648.0);
  /* fp16: each result rounds to half (2049 -> 2048, 2051 -> 2052: ties to even) */
  FOLD("CoreML5", "", C("a", "(2,fp16)*(Tensor)", "[2048.0, 2048.0]") C("b", "(2,fp16)*(Tensor)", "[1.0, 3.0]")
       OP1("(2,fp16)(Tensor)", "add(x=%a, y=%b, name=\"t\")"), FP16, 2048, 2052);
  FOLD("CoreML5", "", OP1("(2,int32)(Tensor)", "sub(x=[5, -5], y=[7, 7], name=\"t\")"), I32, -2, -12);
  /* broadcasting (2, 2) * (2,) */
  FOLD("CoreML5", "", C("m", "(2, 2, fp32)*(Tensor)", "[[1.0, 2.0], [3.0, 4.0]]")
       OP1("(2, 2, fp32)(Tensor)", "mul(x=%m, y=[10.0, 100.0], name=\"t\")"), FP32, 10, 200, 30, 400);
  /* a scalar with a tensor */
  FOLD("CoreML5", "", OP1("(3,fp32)(Tensor)", "mul(x=0.5, y=[2.0, 4.0, -6.0], name=\"t\")"), FP32, 1, 2, -3);
  /* real_div: fp32 rounding; int32 quotient truncated */
  FOLD("CoreML5", "", OP1("(fp32)(Scalar)", "real_div(x=1.0, y=3.0, name=\"t\")"), FP32, (double)(1.0f / 3.0f));
  FOLD("CoreML5", "", OP1("(2,int32)(Tensor)", "real_div(x=[7, -7], y=[2, 2], name=\"t\")"), I32, 3, -3);
  /* floor_div / mod: Python semantics */
  FOLD("CoreML5", "", OP1("(4,int32)(Tensor)", "floor_div(x=[7, -7, 7, -7], y=[2, 2, -2, -2], name=\"t\")"), I32, 3,
       -4, -4, 3);
  FOLD("CoreML5", "", OP1("(2,fp32)(Tensor)", "floor_div(x=[7.5, -7.5], y=[2.0, 2.0], name=\"t\")"), FP32, 3, -4);
  FOLD("CoreML5", "", OP1("(4,int32)(Tensor)", "mod(x=[7, -7, 7, -7], y=[3, 3, -3, -3], name=\"t\")"), I32, 1, 2,
       -2, -1);
  FOLD("CoreML5", "", OP1("(2,fp32)(Tensor)", "mod(x=[5.5, -5.5], y=[2.0, 2.0], name=\"t\")"), FP32, 1.5, 0.5);
  /* integer division by zero gives 0 like numpy */
  FOLD("CoreML5", "", OP1("(2,int32)(Tensor)", "floor_div(x=[5, 5], y=[0, 2], name=\"t\")"), I32, 0, 2);
  FOLD("CoreML5", "", OP1("(2,fp32)(Tensor)", "pow(x=[2.0, 9.0], y=[3.0, 0.5], name=\"t\")"), FP32, 8, 3);
  FOLD("CoreML5", "", OP1("(2,int32)(Tensor)", "pow(x=[2, 3], y=[10, 3], name=\"t\")"), I32, 1024, 27);
  /* numpy refuses integers to negative powers: no value */
  expect_no_fold("CoreML5", "", OP1("(int32)(Scalar)", "pow(x=2, y=-1, name=\"t\")"));
  FOLD("CoreML5", "", OP1("(2,int32)(Tensor)", "maximum(x=[1, 5], y=[3, 2], name=\"t\")"), I32, 3, 5);
  FOLD("CoreML5", "", OP1("(2,fp32)(Tensor)", "minimum(x=[1.0, 5.0], y=[3.0, 2.0], name=\"t\")"), FP32, 1, 2);
  FOLD("CoreML5", "", OP1("(3,bool)(Tensor)", "equal(x=[1, 2, 3], y=2, name=\"t\")"), BOOL, 0, 1, 0);
  FOLD("CoreML5", "", OP1("(3,bool)(Tensor)", "not_equal(x=[1, 2, 3], y=2, name=\"t\")"), BOOL, 1, 0, 1);
  FOLD("CoreML5", "", OP1("(3,bool)(Tensor)", "less(x=[1.0, 2.0, 3.0], y=2.0, name=\"t\")"), BOOL, 1, 0, 0);
  FOLD("CoreML5", "", OP1("(3,bool)(Tensor)", "less_equal(x=[1.0, 2.0, 3.0], y=2.0, name=\"t\")"), BOOL, 1, 1, 0);
  FOLD("CoreML5", "", OP1("(3,bool)(Tensor)", "greater(x=[1, 2, 3], y=2, name=\"t\")"), BOOL, 0, 0, 1);
  FOLD("CoreML5", "", OP1("(3,bool)(Tensor)", "greater_equal(x=[1, 2, 3], y=2, name=\"t\")"), BOOL, 0, 1, 1);
  FOLD("CoreML5", "", OP1("(4,bool)(Tensor)",
       "logical_and(x=[True, True, False, False], y=[True, False, True, False], name=\"t\")"),
       BOOL, 1, 0, 0, 0);
  FOLD("CoreML5", "", OP1("(4,bool)(Tensor)",
       "logical_or(x=[True, True, False, False], y=[True, False, True, False], name=\"t\")"),
       BOOL, 1, 1, 1, 0);
  FOLD("CoreML5", "", OP1("(4,bool)(Tensor)",
       "logical_xor(x=[True, True, False, False], y=[True, False, True, False], name=\"t\")"),
       BOOL, 0, 1, 1, 0);
  /* an unknown input: no value */
  expect_no_fold("CoreML5", "%x: (2,fp32)(Tensor)", OP1("(2,fp32)(Tensor)", "add(x=%x, y=[1.0, 2.0], name=\"t\")"));
}

/* "[v0, v1, ...]": n floats as MIL text (nine digits round-trip a float). */
static void floats_text(char *out, size_t cap, const float *v, int n) {
  size_t len = 0;
  for (int i = 0; i < n && len < cap; i++)
    len += (size_t)snprintf(out + len, cap - len, "%s%.9g", i ? ", " : "[", (double)v[i]);
  if (len < cap) snprintf(out + len, cap - len, "]");
}

/* Folds of 100 fp32 elements take the vector loops (same shapes, or a
 * single element on either side): each element is numpy's float32 result,
 * the double result rounded once. */
static void test_fold_binary_large(void **state) {
  (void)state;
  enum { N = 100 };
  static char av[N * 24], bv[N * 24], body[4 * N * 24];
  float a[N], b[N];
  for (int i = 0; i < N; i++) {
    a[i] = (float)(i * 0.37 - 5.1);
    b[i] = (float)(1.3 + i * 0.011);
  }
  floats_text(av, sizeof av, a, N);
  floats_text(bv, sizeof bv, b, N);
  static const struct {
    const char *call;
    char op;
    int sx, sy; /* a single element 0.7 on that side */
  } cases[] = {
      {"add(x=%a, y=%b", '+', 0, 0},       {"sub(x=%a, y=%b", '-', 0, 0},  {"mul(x=%a, y=%b", '*', 0, 0},
      {"real_div(x=%a, y=%b", '/', 0, 0},  {"mul(x=0.7, y=%a", '*', 1, 0}, {"add(x=%a, y=[0.7]", '+', 0, 1},
      {"sub(x=%a, y=0.7", '-', 0, 1},      {"sub(x=0.7, y=%a", '-', 1, 0}, {"real_div(x=%a, y=0.7", '/', 0, 1},
  };
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    snprintf(body, sizeof body, "    %%a: (%d,fp32)*(Tensor) = const(val=%s, name=\"a\")\n"
             "    %%b: (%d,fp32)*(Tensor) = const(val=%s, name=\"b\")\n"
             "    %%t: (%d,fp32)(Tensor) = %s, name=\"t\")\n", N, av, N, bv, N, cases[c].call);
    double want[N];
    for (int i = 0; i < N; i++) {
      double x = cases[c].sx ? (double)0.7f : a[i], y = cases[c].sy ? (double)0.7f : cases[c].sx ? a[i] : b[i];
      double r = cases[c].op == '+' ? x + y : cases[c].op == '-' ? x - y : cases[c].op == '*' ? x * y : x / y;
      want[i] = (double)(float)r;
    }
    expect_fold("CoreML5", "", body, FP32, N, want);
  }
}

/* Comparisons of 64 elements and more take a direct loop over fp32 data:
 * the same answers as the element-by-element fold (equal values, either
 * operand a single element). */
static void test_fold_compare_large(void **state) {
  (void)state;
  enum { N = 100 };
  static char av[N * 24], bv[N * 24], body[4 * N * 24];
  float a[N], b[N];
  for (int i = 0; i < N; i++) {
    a[i] = i % 7 == 3 ? 0.7f : (float)(i * 0.37 - 5.1);
    b[i] = i % 5 == 0 ? a[i] : (float)(1.3 - i * 0.011);
  }
  floats_text(av, sizeof av, a, N);
  floats_text(bv, sizeof bv, b, N);
  static const struct {
    const char *call;
    int op;      /* 0 ==, 1 !=, 2 <, 3 <=, 4 >, 5 >= */
    char sx, sy; /* each operand: 'a', 'b', or 's' for the single element 0.7 */
  } cases[] = {
      {"equal(x=%a, y=0.7", 0, 'a', 's'},     {"not_equal(x=0.7, y=%a", 1, 's', 'a'},
      {"equal(x=%a, y=%b", 0, 'a', 'b'},      {"less(x=%a, y=%b", 2, 'a', 'b'},
      {"less_equal(x=%a, y=%b", 3, 'a', 'b'}, {"greater(x=%a, y=[0.7]", 4, 'a', 's'},
      {"greater_equal(x=0.7, y=%b", 5, 's', 'b'},
  };
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    snprintf(body, sizeof body, "    %%a: (%d,fp32)*(Tensor) = const(val=%s, name=\"a\")\n"
             "    %%b: (%d,fp32)*(Tensor) = const(val=%s, name=\"b\")\n"
             "    %%t: (%d,bool)(Tensor) = %s, name=\"t\")\n", N, av, N, bv, N, cases[c].call);
    double want[N];
    for (int i = 0; i < N; i++) {
      float x = cases[c].sx == 'a' ? a[i] : cases[c].sx == 'b' ? b[i] : 0.7f;
      float y = cases[c].sy == 'a' ? a[i] : cases[c].sy == 'b' ? b[i] : 0.7f;
      int op = cases[c].op;
      bool r = op == 0 ? x == y : op == 1 ? x != y : op == 2 ? x < y : op == 3 ? x <= y : op == 4 ? x > y : x >= y;
      want[i] = r;
    }
    expect_fold("CoreML5", "", body, BOOL, N, want);
  }
}

/* select of 64 elements and more copies the chosen elements' bytes: a
 * vector cond with vector or single-element a and b, and a single cond. */
static void test_fold_select_large(void **state) {
  (void)state;
  enum { N = 70 };
  static char cv[N * 8], av[N * 24], body[4 * N * 24];
  bool cond[N];
  float a[N];
  size_t lc = 0;
  for (int i = 0; i < N; i++) {
    cond[i] = i % 3 == 1;
    a[i] = (float)(i * 0.37 - 5.1);
    lc += (size_t)snprintf(cv + lc, sizeof cv - lc, "%s%s", i ? ", " : "[", cond[i] ? "True" : "False");
  }
  snprintf(cv + lc, sizeof cv - lc, "]");
  floats_text(av, sizeof av, a, N);
  static const struct {
    const char *call;
    char sc, sa, sb; /* 'v' the vector const, or the single element: cond true, a -1.5, b 2.5 */
  } cases[] = {
      {"select(cond=%c, a=%a, b=2.5", 'v', 'v', 's'},
      {"select(cond=%c, a=-1.5, b=%a", 'v', 's', 'v'},
      {"select(cond=True, a=%a, b=2.5", 's', 'v', 's'},
  };
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    snprintf(body, sizeof body, "    %%c: (%d,bool)*(Tensor) = const(val=%s, name=\"c\")\n"
             "    %%a: (%d,fp32)*(Tensor) = const(val=%s, name=\"a\")\n"
             "    %%t: (%d,fp32)(Tensor) = %s, name=\"t\")\n", N, cv, N, av, N, cases[k].call);
    double want[N];
    for (int i = 0; i < N; i++) {
      bool t = cases[k].sc == 'v' ? cond[i] : true;
      want[i] = t ? (cases[k].sa == 'v' ? a[i] : -1.5) : (cases[k].sb == 'v' ? a[i] : 2.5);
    }
    expect_fold("CoreML5", "", body, FP32, N, want);
  }
}

static void test_fold_unary(void **state) {
  (void)state;
  FOLD("CoreML5", "", OP1("(2,int32)(Tensor)", "abs(x=[-3, 4], name=\"t\")"), I32, 3, 4);
  FOLD("CoreML5", "", OP1("(2,fp32)(Tensor)", "abs(x=[-3.5, 0.0], name=\"t\")"), FP32, 3.5, 0);
  FOLD("CoreML5", "", OP1("(fp32)(Scalar)", "acos(x=1.0, name=\"t\")"), FP32, 0);
  FOLD("CoreML5", "", OP1("(fp32)(Scalar)", "asin(x=1.0, name=\"t\")"), FP32, (double)(float)M_PI_2);
  FOLD("CoreML5", "", OP1("(fp32)(Scalar)", "atan(x=1.0, name=\"t\")"), FP32, (double)(float)M_PI_4);
  FOLD_NEAR("CoreML5", "", OP1("(fp32)(Scalar)", "atanh(x=0.5, name=\"t\")"), FP32, 0.5493061443340549); /* ln(3)/2 */
  FOLD("CoreML5", "", OP1("(2,fp32)(Tensor)", "ceil(x=[-1.5, 1.2], name=\"t\")"), FP32, -1, 2);
  FOLD("CoreML5", "", OP1("(fp32)(Scalar)", "cos(x=0.0, name=\"t\")"), FP32, 1);
  FOLD("CoreML5", "", OP1("(fp32)(Scalar)", "cosh(x=0.0, name=\"t\")"), FP32, 1);
  FOLD_NEAR("CoreML5", "", OP1("(2,fp32)(Tensor)", "erf(x=[0.0, 1.0], name=\"t\")"), FP32, 0, 0.8427007929497149);
  FOLD("CoreML5", "", OP1("(fp32)(Scalar)", "exp(x=1.0, name=\"t\")"), FP32, (double)(float)M_E);
  /* exp2 of int32 computes in float64 and truncates back */
  FOLD("CoreML5", "", OP1("(2,int32)(Tensor)", "exp2(x=[3, -1], name=\"t\")"), I32, 8, 0);
  FOLD("CoreML5", "", OP1("(2,fp32)(Tensor)", "floor(x=[-1.5, 1.7], name=\"t\")"), FP32, -2, 1);
  /* round half to even */
  FOLD("CoreML5", "", OP1("(4,fp32)(Tensor)", "round(x=[0.5, 1.5, 2.5, -0.5], name=\"t\")"), FP32, 0, 2, 2, -0.0);
  FOLD("CoreML5", "", OP1("(3,int32)(Tensor)", "sign(x=[-2, 0, 3], name=\"t\")"), I32, -1, 0, 1);
  FOLD("CoreML5", "", OP1("(fp32)(Scalar)", "sin(x=0.0, name=\"t\")"), FP32, 0);
  FOLD("CoreML5", "", OP1("(fp32)(Scalar)", "sinh(x=0.0, name=\"t\")"), FP32, 0);
  FOLD("CoreML5", "", OP1("(2,fp32)(Tensor)", "sqrt(x=[2.0, 16.0], name=\"t\")"), FP32, (double)(float)M_SQRT2, 4);
  FOLD("CoreML5", "", OP1("(2,int32)(Tensor)", "square(x=[-3, 65536], name=\"t\")"), I32, 9, 0); /* 2^32 wraps */
  FOLD("CoreML5", "", OP1("(fp32)(Scalar)", "tan(x=0.0, name=\"t\")"), FP32, 0);
  FOLD("CoreML5", "", OP1("(fp32)(Scalar)", "tanh(x=0.0, name=\"t\")"), FP32, 0);
  FOLD("CoreML5", "", OP1("(2,bool)(Tensor)", "logical_not(x=[True, False], name=\"t\")"), BOOL, 0, 1);
  FOLD("CoreML5", "", OP1("(3,fp32)(Tensor)", "clip(x=[-1.0, 3.0, 9.0], alpha=0.0, beta=6.0, name=\"t\")"), FP32, 0,
       3, 6);
  FOLD("CoreML7", "", OP1("(3,fp32)(Tensor)", "clip(x=[-1.0, 3.0, 9.0], alpha=-0.5, beta=6.0, name=\"t\")"), FP32,
       -0.5, 3, 6);
  FOLD("CoreML5", "", OP1("(2,int32)(Tensor)", "threshold(x=[1, 5], alpha=3, name=\"t\")"), I32, 3, 5);
  FOLD("CoreML5", "", OP1("(2,fp32)(Tensor)", "inverse(x=[4.0, -0.5], epsilon=0.0, name=\"t\")"), FP32, 0.25, -2);
  /* the default epsilon 1e-4, added in fp32 */
  FOLD("CoreML5", "", OP1("(fp32)(Scalar)", "inverse(x=1.0, name=\"t\")"), FP32, (double)(1.0f / (1.0f + 1e-4f)));
  FOLD("CoreML7", "", OP1("(fp32)(Scalar)", "inverse(x=2.0, epsilon=0.0, name=\"t\")"), FP32, 0.5);
  FOLD("CoreML5", "", OP1("(2,fp32)(Tensor)", "log(x=[1.0, 8.0], name=\"t\")"), FP32, 0,
       (double)(float)(3 * M_LN2));
  FOLD("CoreML7", "", OP1("(fp32)(Scalar)", "log(x=1.0, epsilon=0.0, name=\"t\")"), FP32, 0);
  FOLD("CoreML5", "", OP1("(fp32)(Scalar)", "rsqrt(x=4.0, epsilon=0.0, name=\"t\")"), FP32, 0.5);
  FOLD("CoreML7", "", OP1("(fp32)(Scalar)", "rsqrt(x=0.25, epsilon=0.0, name=\"t\")"), FP32, 2);
  /* fp16 epsilon op: x + eps rounds to half first (1 + 2^-12 -> 1) */
  FOLD("CoreML5", "", C("h", "(fp16)*(Scalar)", "1.0") C("e", "(fp16)*(Scalar)", "0.000244140625")
       OP1("(fp16)(Scalar)", "rsqrt(x=%h, epsilon=%e, name=\"t\")"), FP16, 1);
}

static void test_fold_cast(void **state) {
  (void)state;
  /* float -> int truncates toward zero */
  FOLD("CoreML5", "", OP1("(3,int32)(Tensor)", "cast(x=[1.7, -1.7, 2.5], dtype=\"int32\", name=\"t\")"), I32, 1, -1,
       2);
  /* fp32 -> fp16: nearest half of 0.1 is 0.0999755859375 */
  FOLD("CoreML5", "", OP1("(fp16)(Scalar)", "cast(x=0.1, dtype=\"fp16\", name=\"t\")"), FP16, 0.0999755859375);
  FOLD("CoreML5", "", OP1("(3,bool)(Tensor)", "cast(x=[0, 5, -1], dtype=\"bool\", name=\"t\")"), BOOL, 0, 1, 1);
  FOLD("CoreML5", "", OP1("(2,fp32)(Tensor)", "cast(x=[True, False], dtype=\"fp32\", name=\"t\")"), FP32, 1, 0);
  /* iOS17 narrow ints wrap */
  FOLD("CoreML7", "", OP1("(2,uint8)(Tensor)", "cast(x=[300, -1], dtype=\"uint8\", name=\"t\")"), MIL_DT_UINT8, 44,
       255);
  FOLD("CoreML7", "", OP1("(fp32)(Scalar)", "cast(x=200.0, dtype=\"int8\", name=\"t\")"), MIL_DT_INT8, -56);
  FOLD("CoreML7", "", OP1("(2,int16)(Tensor)", "cast(x=[40000, -3], dtype=\"int16\", name=\"t\")"), MIL_DT_INT16,
       -25536, -3);
}

/* cast keeps a rank-1 symbolic value symbolic ('^'). */
static void test_fold_cast_symbolic(void **state) {
  (void)state;
  tcase tc = {"CoreML5", "",
              "    %s: (2,int32)^(Tensor) = _const_symbolic(, name=\"s\")\n" OP1("(2,fp32)(Tensor)",
                   "cast(x=%s, dtype=\"fp32\", name=\"t\")"),
              NULL, NULL};
  mil_program *p = parse_case(&tc);
  mil_diag d;
  mil_diag_init(&d);
  mil_op *s = find_op(mil_function_body(p->functions[0]), "s");
  assert_int_equal(mil_op_infer(s, &d), MIL_OK);
  assert_int_equal(s->outputs[0]->mark, MIL_MARK_SYMBOLIC);
  mil_op *t = op_t(p);
  assert_int_equal(mil_op_infer(t, &d), MIL_OK);
  assert_null(t->outputs[0]->val);
  assert_int_equal(t->outputs[0]->mark, MIL_MARK_SYMBOLIC);
  mil_diag_clear(&d);
  mil_program_free(p);
}

#define A(args) "(x=" args ", name=\"t\")"

static void test_fold_activation(void **state) {
  (void)state;
  FOLD("CoreML5", "", OP1("(2,fp32)(Tensor)", "relu" A("[-1.0, 2.0]")), FP32, 0, 2);
  FOLD("CoreML5", "", OP1("(3,fp32)(Tensor)", "relu6" A("[-1.0, 3.0, 7.0]")), FP32, 0, 3, 6);
  FOLD("CoreML5", "", OP1("(2,fp32)(Tensor)", "leaky_relu" A("[-2.0, 2.0], alpha=0.5")), FP32, -1, 2);
  FOLD("CoreML7", "", OP1("(2,fp32)(Tensor)", "leaky_relu" A("[-2.0, 2.0], alpha=0.25")), FP32, -0.5, 2);
  FOLD("CoreML5", "", OP1("(2,fp32)(Tensor)", "elu" A("[0.0, 3.0], alpha=1.0")), FP32, 0, 3);
  FOLD_NEAR("CoreML5", "", OP1("(fp32)(Scalar)", "elu" A("-1.0, alpha=2.0")), FP32, 2 * (0.36787944117144233 - 1));
  FOLD_NEAR("CoreML7", "", OP1("(fp32)(Scalar)", "elu" A("-1.0, alpha=1.0")), FP32, 0.36787944117144233 - 1);
  FOLD("CoreML5", "", OP1("(fp32)(Scalar)", "sigmoid" A("0.0")), FP32, 0.5);
  FOLD("CoreML5", "", OP1("(2,fp32)(Tensor)", "softsign" A("[1.0, -3.0]")), FP32, 0.5, -0.75);
  FOLD_NEAR("CoreML5", "", OP1("(fp32)(Scalar)", "softplus" A("0.0")), FP32, M_LN2);
  FOLD("CoreML5", "", OP1("(3,fp32)(Tensor)", "clamped_relu" A("[-2.0, 3.0, 8.0], alpha=0.5, beta=6.0")), FP32, -1, 3,
       6);
  FOLD("CoreML7", "", OP1("(3,fp32)(Tensor)", "clamped_relu" A("[-2.0, 3.0, 8.0], alpha=0.5, beta=6.0")), FP32, -1, 3,
       6);
  FOLD("CoreML5", "", OP1("(2,fp32)(Tensor)", "linear_activation" A("[1.0, -1.0], alpha=2.0, beta=1.0")), FP32, 3, -1);
  FOLD("CoreML7", "", OP1("(2,fp32)(Tensor)", "linear_activation" A("[1.0, -1.0], alpha=2.0, beta=1.0")), FP32, 3, -1);
  FOLD("CoreML5", "", OP1("(fp32)(Scalar)", "scaled_tanh" A("0.0, alpha=2.0, beta=1.0")), FP32, 0);
  FOLD_NEAR("CoreML7", "", OP1("(fp32)(Scalar)", "scaled_tanh" A("1.0, alpha=2.0, beta=0.5")), FP32,
            2 * 0.46211715726000974); /* 2 tanh(0.5) */
  FOLD("CoreML5", "", OP1("(3,fp32)(Tensor)", "sigmoid_hard" A("[-2.0, 0.0, 2.0], alpha=0.5, beta=0.5")), FP32, 0, 0.5,
       1);
  FOLD("CoreML7", "", OP1("(3,fp32)(Tensor)", "sigmoid_hard" A("[-2.0, 0.0, 2.0], alpha=0.5, beta=0.5")), FP32, 0, 0.5,
       1);
  FOLD("CoreML5", "", OP1("(3,fp32)(Tensor)", "thresholded_relu" A("[0.5, 1.0, 2.0], alpha=1.0")), FP32, 0, 1, 2);
  FOLD("CoreML7", "", OP1("(3,fp32)(Tensor)", "thresholded_relu" A("[0.5, 1.0, 2.0], alpha=1.0")), FP32, 0, 1, 2);
  /* per-channel alpha on axis 1 */
  FOLD("CoreML5", "", C("px", "(1, 2, 1, 2, fp32)*(Tensor)", "[[[[-1.0, 4.0]], [[-1.0, -2.0]]]]")
       OP1("(1, 2, 1, 2, fp32)(Tensor)", "prelu" A("%px, alpha=[0.5, 0.25]")), FP32, -0.5, 4, -0.25, -0.5);
  FOLD("CoreML7", "", C("px", "(1, 2, 1, 1, fp32)*(Tensor)", "[[[[-1.0]], [[-1.0]]]]")
       OP1("(1, 2, 1, 1, fp32)(Tensor)", "prelu" A("%px, alpha=[0.5, 0.25]")), FP32, -0.5, -0.25);
  FOLD_NEAR("CoreML5", "", C("sx", "(1, 2, 1, fp32)*(Tensor)", "[[[0.0], [0.0]]]")
            OP1("(1, 2, 1, fp32)(Tensor)", "softplus_parametric" A("%sx, alpha=[1.0, 2.0], beta=[1.0, 3.0]")), FP32,
            M_LN2, 2 * M_LN2);
  FOLD_NEAR("CoreML7", "", C("sx", "(1, 2, 1, fp32)*(Tensor)", "[[[0.0], [0.0]]]")
            OP1("(1, 2, 1, fp32)(Tensor)", "softplus_parametric" A("%sx, alpha=[1.0, 2.0], beta=[1.0, 3.0]")), FP32,
            M_LN2, 2 * M_LN2);
  FOLD("CoreML5", "", C("sm", "(2, 2, fp32)*(Tensor)", "[[0.0, 1.0], [0.0, 1.0]]")
       OP1("(2, 2, fp32)(Tensor)", "softmax" A("%sm, axis=0")), FP32, 0.5, 0.5, 0.5, 0.5);
  FOLD("CoreML5", "", OP1("(4,fp32)(Tensor)", "softmax" A("[3.0, 3.0, 3.0, 3.0]")), FP32, 0.25, 0.25, 0.25, 0.25);
  FOLD_NEAR("CoreML5", "", OP1("(2,fp32)(Tensor)", "gelu" A("[0.0, 1.0]")), FP32, 0, 0.8413447460685429);
  FOLD_NEAR("CoreML5", "", OP1("(2,fp32)(Tensor)", "gelu" A("[0.0, 1.0], mode=\"TANH_APPROXIMATION\"")), FP32, 0,
            0.8411919906082768);
  FOLD_NEAR("CoreML5", "", OP1("(fp32)(Scalar)", "gelu" A("1.0, mode=\"SIGMOID_APPROXIMATION\"")), FP32,
            0.8457957659328212); /* 1 / (1 + e^-1.702) */
  /* silu has no value inference in coremltools */
  expect_no_fold("CoreML5", "", OP1("(fp32)(Scalar)", "silu" A("1.0")));
}

#define M23 C("m", "(2, 3, fp32)*(Tensor)", "[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]")
#define M23I C("m", "(2, 3, int32)*(Tensor)", "[[1, 2, 3], [4, 5, 6]]")
#define RED(op, args) op "(x=%m" args ", name=\"t\")"

static void test_fold_reduction(void **state) {
  (void)state;
  FOLD("CoreML5", "", M23 OP1("(2,fp32)(Tensor)", RED("reduce_sum", ", axes=[1], keep_dims=False")), FP32, 6, 15);
  FOLD("CoreML5", "", M23 OP1("(1, 3, fp32)(Tensor)", RED("reduce_mean", ", axes=[0], keep_dims=True")), FP32, 2.5,
       3.5, 4.5);
  FOLD("CoreML5", "", M23 OP1("(2,fp32)(Tensor)", RED("reduce_max", ", axes=[-1]")), FP32, 3, 6);
  FOLD("CoreML5", "", M23 OP1("(3,fp32)(Tensor)", RED("reduce_min", ", axes=[0]")), FP32, 1, 2, 3);
  FOLD("CoreML5", "", M23 OP1("(2,fp32)(Tensor)", RED("reduce_prod", ", axes=[1]")), FP32, 6, 120);
  FOLD("CoreML5", "", M23 OP1("(fp32)(Scalar)", RED("reduce_sum_square", "")), FP32, 91);
  FOLD("CoreML5", "", C("m", "(2, 2, fp32)*(Tensor)", "[[-3.0, 4.0], [1.0, -2.0]]")
       OP1("(2,fp32)(Tensor)", RED("reduce_l1_norm", ", axes=[1]")), FP32, 7, 3);
  FOLD("CoreML5", "", C("m", "(2, 2, fp32)*(Tensor)", "[[-3.0, 4.0], [6.0, 8.0]]")
       OP1("(2,fp32)(Tensor)", RED("reduce_l2_norm", ", axes=[1]")), FP32, 5, 10);
  FOLD_NEAR("CoreML5", "", C("m", "(2,fp32)*(Tensor)", "[1.0, 1.0]") OP1("(fp32)(Scalar)", RED("reduce_log_sum", "")),
            FP32, M_LN2);
  FOLD_NEAR("CoreML5", "", C("m", "(2,fp32)*(Tensor)", "[100.0, 100.0]")
            OP1("(fp32)(Scalar)", RED("reduce_log_sum_exp", "")), FP32, 100 + M_LN2);
  /* int32: sums wrap, the mean truncates */
  FOLD("CoreML5", "", M23I OP1("(int32)(Scalar)", RED("reduce_sum", "")), I32, 21);
  FOLD("CoreML5", "", M23I OP1("(int32)(Scalar)", RED("reduce_mean", "")), I32, 3);
  FOLD("CoreML5", "", M23I OP1("(2,int32)(Tensor)", RED("reduce_max", ", axes=[1]")), I32, 3, 6);
  /* fp16: the mean of 2048 and 2050 is 2049 in float, which rounds to the even half 2048 */
  FOLD("CoreML5", "", C("m", "(2,fp16)*(Tensor)", "[2048.0, 2050.0]") OP1("(fp16)(Scalar)", RED("reduce_mean", "")),
       FP16, 2048);
  /* argmax / argmin: first extreme index */
  FOLD("CoreML5", "", C("m", "(2, 3, fp32)*(Tensor)", "[[1.0, 9.0, 3.0], [7.0, 2.0, 7.0]]")
       OP1("(2,int32)(Tensor)", RED("reduce_argmax", ", axis=-1")), I32, 1, 0);
  FOLD("CoreML5", "", C("m", "(2, 3, fp32)*(Tensor)", "[[1.0, 9.0, 3.0], [7.0, 2.0, 7.0]]")
       OP1("(2, 1, int32)(Tensor)", RED("reduce_argmin", ", axis=1, keep_dims=True")), I32, 0, 1);
  FOLD("CoreML7", "", C("m", "(2, 3, fp32)*(Tensor)", "[[1.0, 9.0, 3.0], [7.0, 2.0, 7.0]]")
       OP1("(3,uint16)(Tensor)", RED("reduce_argmax", ", axis=0, output_dtype=\"uint16\"")), MIL_DT_UINT16, 1, 0, 1);
  FOLD("CoreML7", "", C("m", "(2, 3, fp32)*(Tensor)", "[[1.0, 9.0, 3.0], [7.0, 2.0, 7.0]]")
       OP1("(3,int32)(Tensor)", RED("reduce_argmin", ", axis=0")), I32, 0, 1, 0);
}

static void test_fold_control_flow(void **state) {
  (void)state;
  FOLD("CoreML5", "", OP1("(2,fp32)(Tensor)", "select(cond=[True, False], a=[1.0, 2.0], b=[3.0, 4.0], name=\"t\")"),
       FP32, 1, 4);
  FOLD("CoreML5", "", OP1("(2,int32)(Tensor)", "select(cond=[False, True], a=7, b=[3, 4], name=\"t\")"), I32, 3, 7);
  FOLD("CoreML5", "", C("t", "(2,int32)*(Tensor)", "[5, 6]"), I32, 5, 6);
  /* a known pred folds to the taken branch's values */
  FOLD("CoreML5", "%x: (2,fp32)(Tensor)",
       C("p", "(bool)*(Scalar)", "False")
       "    %t: (int32)(Scalar) = cond(pred=%p, name=\"t\")\n"
       "      t_true() {\n        %one: (int32)*(Scalar) = const(val=1, name=\"one\")\n      } -> (%one)\n"
       "      t_false() {\n        %two: (int32)*(Scalar) = const(val=2, name=\"two\")\n      } -> (%two)\n",
       I32, 2);
  /* list_length: known for a fixed-length list only */
  FOLD("CoreML5", "", C("two", "(int32)*(Scalar)", "2")
       "    %l: List[3, (2,fp32)](List) = make_list(init_length=3, dynamic_length=False, elem_shape=(%two), "
       "name=\"l\")\n"
       OP1("(int32)(Scalar)", "list_length(ls=%l, name=\"t\")"), I32, 3);
  expect_no_fold("CoreML5", "", C("two", "(int32)*(Scalar)", "2")
                 "    %l: List[?, (2,fp32)](List) = make_list(init_length=3, dynamic_length=True, elem_shape=(%two), "
                 "name=\"l\")\n"
                 OP1("(int32)(Scalar)", "list_length(ls=%l, name=\"t\")"));
}

static void test_fold_complex_shape(void **state) {
  (void)state;
  FOLD("CoreML5", "%c: (4, 8, complex64)(Tensor)", OP1("(2,int32)(Tensor)", "complex_shape(x=%c, name=\"t\")"), I32, 4,
       8);
  tcase tc = {"CoreML5", "%c: (n, 8, complex64)(Tensor)", OP1("(2,int32)(Tensor)", "complex_shape(x=%c, name=\"t\")"),
              NULL, NULL};
  mil_program *p = parse_case(&tc);
  mil_diag d;
  mil_diag_init(&d);
  assert_int_equal(mil_op_infer(op_t(p), &d), MIL_OK);
  assert_null(op_t(p)->outputs[0]->val);
  assert_int_equal(op_t(p)->outputs[0]->mark, MIL_MARK_SYMBOLIC);
  mil_diag_clear(&d);
  mil_program_free(p);
}

/* Default inputs become const ops named "<op>_<input>_0" before the op. */
static void test_defaults(void **state) {
  (void)state;
  tcase tc = {"CoreML5", "%x: (2, 3, fp16)(Tensor)", OP1("(2, 3, fp16)(Tensor)", "rsqrt(x=%x, name=\"t\")"), NULL,
       NULL};
  mil_program *p = parse_case(&tc);
  mil_diag d;
  mil_diag_init(&d);
  mil_op *t = op_t(p);
  assert_int_equal(mil_op_add_defaults(t, &d), MIL_OK);
  mil_var *eps = mil_op_input_var(t, "epsilon");
  assert_non_null(eps);
  assert_string_equal(eps->name, "t_epsilon_0");
  assert_true(eps->val && eps->val->type->dtype == MIL_DT_FP16);
  assert_true(mil_value_get_f64(eps->val, 0) == (double)mil_fp16_to_fp32(mil_fp32_to_fp16(1e-12f)));
  assert_ptr_equal(eps->op->next, t);
  mil_program_free(p);

  tcase tc2 = {"CoreML5", "%x: (2, 3, fp32)(Tensor)", OP1("(fp32)(Scalar)", "reduce_sum(x=%x, name=\"t\")"), NULL,
       NULL};
  p = parse_case(&tc2);
  t = op_t(p);
  assert_int_equal(mil_op_add_defaults(t, &d), MIL_OK);
  assert_null(mil_op_input_var(t, "axes")); /* default None: not materialized */
  mil_var *kd = mil_op_input_var(t, "keep_dims");
  assert_non_null(kd);
  assert_string_equal(kd->name, "t_keep_dims_0");
  assert_int_equal(mil_value_get_i64(kd->val, 0), 0);
  mil_program_free(p);

  tcase tc3 = {"CoreML5", "%s: (2,int32)(Tensor)", OP1("(a, b, fp32)(Tensor)", "random_normal(shape=%s, name=\"t\")"),
               NULL, NULL};
  p = parse_case(&tc3);
  t = op_t(p);
  assert_int_equal(mil_op_add_defaults(t, &d), MIL_OK);
  assert_true(mil_value_get_f64(mil_op_input_var(t, "mean")->val, 0) == 0.0);
  assert_true(mil_value_get_f64(mil_op_input_var(t, "stddev")->val, 0) == 1.0);
  assert_int_equal(mil_value_get_i64(mil_op_input_var(t, "seed")->val, 0), -1);
  assert_int_equal(t->inputs[1].name[0], 'm'); /* spec order: shape, mean, stddev, seed */
  mil_diag_clear(&d);
  mil_program_free(p);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_fold_binary),
      cmocka_unit_test(test_fold_binary_large),
      cmocka_unit_test(test_fold_compare_large),
      cmocka_unit_test(test_fold_select_large),
      cmocka_unit_test(test_fold_unary),
      cmocka_unit_test(test_fold_cast),
      cmocka_unit_test(test_fold_cast_symbolic),
      cmocka_unit_test(test_fold_activation),
      cmocka_unit_test(test_fold_reduction),
      cmocka_unit_test(test_fold_control_flow),
      cmocka_unit_test(test_fold_complex_shape),
      cmocka_unit_test(test_defaults),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
