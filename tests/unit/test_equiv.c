/* Tests of program equivalence (mil-text.md section 3): what may differ
 * (names, order of independent ops, const names, symbol names, values
 * within tolerance) and what may not (op types, bindings, values, dead ops,
 * function signatures, output names), the messages, the identical flag, a
 * large program, and a sweep over the golden corpus checked against
 * properties computed from the text alone. */
#include <dirent.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "shared_skip.h"

#include "mil/equiv.h"
#include "mil/mil.h"

static mil_program *parse(const char *text) {
  mil_program *p = NULL;
  mil_diag d = {0};
  if (mil_parse_program(text, strlen(text), NULL, &p, &d) != MIL_OK)
    fail_msg("parse failed: %s\n%s", mil_diag_first_error(&d), text);
  mil_diag_clear(&d);
  return p;
}

/* Compares two texts; returns the result. */
static mil_equiv_result cmp(const char *ta, const char *tb) {
  mil_program *a = parse(ta), *b = parse(tb);
  mil_equiv_result r;
  mil_diag d = {0};
  mil_status st = mil_program_compare(a, b, NULL, &r, &d);
  assert_int_equal(st, r.equivalent ? MIL_OK : MIL_ERR_INVALID);
  if (!r.equivalent) {
    assert_int_equal(d.n_errors, 1);
    assert_non_null(strstr(mil_diag_first_error(&d), r.diff));
  } else {
    assert_int_equal(d.n_errors, 0);
    assert_string_equal(r.diff, "");
  }
  /* symmetric */
  if (!r.equivalent) printf("  diff: %s\n", r.diff);
  mil_equiv_result r2;
  mil_program_compare(b, a, NULL, &r2, NULL);
  assert_int_equal(r.equivalent, r2.equivalent);
  mil_diag_clear(&d);
  mil_program_free(a);
  mil_program_free(b);
  return r;
}

#define HEAD "main[CoreML7](%x: (2, 3, fp32)(Tensor)) {\n  block0() {\n"
#define TAIL "}\n"

static const char *k_base = HEAD
    "    %c: (fp32)*(Scalar) = const(val=2.0, name=\"c\")\n"
    "    %r: (2, 3, fp32)(Tensor) = relu(x=%x, name=\"r\")\n"
    "    %s: (2, 3, fp32)(Tensor) = sigmoid(x=%x, name=\"s\")\n"
    "    %a: (2, 3, fp32)(Tensor) = add(x=%r, y=%c, name=\"a\")\n"
    "    %m: (2, 3, fp32)(Tensor) = mul(x=%a, y=%s, name=\"m\")\n"
    "  } -> (%m)\n" TAIL;

static void test_same(void **state) {
  (void)state;
  mil_equiv_result r = cmp(k_base, k_base);
  assert_true(r.equivalent);
  assert_true(r.identical);
}

static void test_renamed_and_reordered(void **state) {
  (void)state;
  /* other op/var/const names, sigmoid before relu, const moved */
  const char *b = HEAD
      "    %s9: (2, 3, fp32)(Tensor) = sigmoid(x=%x, name=\"sig_7\")\n"
      "    %r9: (2, 3, fp32)(Tensor) = relu(x=%x, name=\"relu_3\")\n"
      "    %two: (fp32)*(Scalar) = const(val=2.0, name=\"two\")\n"
      "    %a9: (2, 3, fp32)(Tensor) = add(x=%r9, y=%two, name=\"add_1\")\n"
      "    %m: (2, 3, fp32)(Tensor) = mul(x=%a9, y=%s9, name=\"mul_0\")\n"
      "  } -> (%m)\n" TAIL;
  mil_equiv_result r = cmp(k_base, b);
  assert_true(r.equivalent);
  assert_false(r.identical);
  assert_non_null(strstr(r.identical_diff, "order"));
}

static void test_counter_names_identical(void **state) {
  (void)state;
  assert_true(mil_names_match_modulo_counters("cast_4", "cast_1"));
  assert_true(mil_names_match_modulo_counters("add_0_y_0", "add_12_y_3"));
  assert_false(mil_names_match_modulo_counters("x_to_fp16", "x_to_fp32"));
  assert_false(mil_names_match_modulo_counters("conv", "conv_1"));
  assert_false(mil_names_match_modulo_counters("relu_1", "gelu_1"));
  const char *b = HEAD
      "    %c: (fp32)*(Scalar) = const(val=2.0, name=\"c\")\n"
      "    %r: (2, 3, fp32)(Tensor) = relu(x=%x, name=\"r\")\n"
      "    %s: (2, 3, fp32)(Tensor) = sigmoid(x=%x, name=\"s\")\n"
      "    %a: (2, 3, fp32)(Tensor) = add(x=%r, y=%c, name=\"a\")\n"
      "    %m_5: (2, 3, fp32)(Tensor) = mul(x=%a, y=%s, name=\"m_9\")\n"
      "  } -> (%m_5)\n" TAIL;
  const char *b2 = HEAD
      "    %c: (fp32)*(Scalar) = const(val=2.0, name=\"c\")\n"
      "    %r: (2, 3, fp32)(Tensor) = relu(x=%x, name=\"r\")\n"
      "    %s: (2, 3, fp32)(Tensor) = sigmoid(x=%x, name=\"s\")\n"
      "    %a: (2, 3, fp32)(Tensor) = add(x=%r, y=%c, name=\"a\")\n"
      "    %m_2: (2, 3, fp32)(Tensor) = mul(x=%a, y=%s, name=\"m_1\")\n"
      "  } -> (%m_2)\n" TAIL;
  /* function output names are significant: m_5 vs m_2 differ */
  mil_equiv_result r = cmp(b, b2);
  assert_false(r.equivalent);
  assert_non_null(strstr(r.diff, "output 0"));
  /* op names with counters are not: identical */
  const char *b3 = HEAD
      "    %c: (fp32)*(Scalar) = const(val=2.0, name=\"c\")\n"
      "    %r: (2, 3, fp32)(Tensor) = relu(x=%x, name=\"r\")\n"
      "    %s: (2, 3, fp32)(Tensor) = sigmoid(x=%x, name=\"s\")\n"
      "    %a: (2, 3, fp32)(Tensor) = add(x=%r, y=%c, name=\"a\")\n"
      "    %m_5: (2, 3, fp32)(Tensor) = mul(x=%a, y=%s, name=\"m_1\")\n"
      "  } -> (%m_5)\n" TAIL;
  r = cmp(b, b3);
  assert_true(r.equivalent);
  assert_true(r.identical);
  /* a non-counter name difference makes it not identical */
  const char *b4 = HEAD
      "    %c: (fp32)*(Scalar) = const(val=2.0, name=\"c\")\n"
      "    %r: (2, 3, fp32)(Tensor) = relu(x=%x, name=\"r\")\n"
      "    %s: (2, 3, fp32)(Tensor) = sigmoid(x=%x, name=\"s\")\n"
      "    %a: (2, 3, fp32)(Tensor) = add(x=%r, y=%c, name=\"plus\")\n"
      "    %m_5: (2, 3, fp32)(Tensor) = mul(x=%a, y=%s, name=\"m_1\")\n"
      "  } -> (%m_5)\n" TAIL;
  r = cmp(b, b4);
  assert_true(r.equivalent);
  assert_false(r.identical);
  assert_non_null(strstr(r.identical_diff, "plus"));
}

static const char *with_const(char *buf, size_t n, const char *cval, const char *dt) {
  snprintf(buf, n,
           "main[CoreML7](%%x: (2, 3, fp32)(Tensor)) {\n  block0() {\n"
           "    %%d: (string)*(Scalar) = const(val=\"%s\", name=\"d\")\n"
           "    %%c: (%s)*(Scalar) = const(val=%s, name=\"c\")\n"
           "    %%r: (2, 3, %s)(Tensor) = cast(x=%%x, dtype=%%d, name=\"r\")\n"
           "    %%a: (2, 3, %s)(Tensor) = add(x=%%r, y=%%c, name=\"a\")\n"
           "  } -> (%%a)\n}\n",
           dt, dt, cval, dt, dt);
  return buf;
}

static void test_const_values(void **state) {
  (void)state;
  char a[4096], b[4096];
  /* fp32: relative 1e-6 */
  mil_equiv_result r = cmp(with_const(a, sizeof a, "1.0", "fp32"), with_const(b, sizeof b, "1.0000005", "fp32"));
  assert_true(r.equivalent);
  r = cmp(with_const(a, sizeof a, "1.0", "fp32"), with_const(b, sizeof b, "1.00001", "fp32"));
  assert_false(r.equivalent);
  assert_non_null(strstr(r.diff, "input 'y'"));
  assert_non_null(strstr(r.diff, "1.00001"));
  assert_non_null(strstr(r.diff, "op 'a' (add)"));
  /* fp16: one ulp (1.0 -> next fp16 is 1.0009765625, two ulps 1.001953125) */
  r = cmp(with_const(a, sizeof a, "1.0", "fp16"), with_const(b, sizeof b, "1.0009765625", "fp16"));
  assert_true(r.equivalent);
  r = cmp(with_const(a, sizeof a, "1.0", "fp16"), with_const(b, sizeof b, "1.001953125", "fp16"));
  assert_false(r.equivalent);
  /* dtype matters */
  r = cmp(with_const(a, sizeof a, "1.0", "fp32"), with_const(b, sizeof b, "1.0", "fp16"));
  assert_false(r.equivalent);
}

static void test_value_close(void **state) {
  (void)state;
  mil_program *p = mil_program_new(NULL);
  int64_t shape[1] = {3};
  float fa[3] = {1.0f, -0.0f, INFINITY}, fb[3] = {1.0f, 0.0f, INFINITY}, fc[3] = {1.0f, 0.0f, -INFINITY};
  mil_value *a = mil_value_new_tensor(p, MIL_DT_FP32, 1, shape, false, fa);
  mil_value *b = mil_value_new_tensor(p, MIL_DT_FP32, 1, shape, false, fb);
  mil_value *c = mil_value_new_tensor(p, MIL_DT_FP32, 1, shape, false, fc);
  assert_true(mil_value_close(a, b, NULL));
  assert_false(mil_value_close(a, c, NULL));
  float n1[1] = {NAN}, n2[1] = {NAN}, z[1] = {0};
  int64_t s1[1] = {1};
  assert_true(mil_value_close(mil_value_new_tensor(p, MIL_DT_FP32, 1, s1, false, n1),
                              mil_value_new_tensor(p, MIL_DT_FP32, 1, s1, false, n2), NULL));
  assert_false(mil_value_close(mil_value_new_tensor(p, MIL_DT_FP32, 1, s1, false, n1),
                               mil_value_new_tensor(p, MIL_DT_FP32, 1, s1, false, z), NULL));
  /* ints exactly */
  int32_t ia[2] = {1, 2}, ib[2] = {1, 3};
  int64_t s2[1] = {2};
  assert_false(mil_value_close(mil_value_new_tensor(p, MIL_DT_INT32, 1, s2, false, ia),
                               mil_value_new_tensor(p, MIL_DT_INT32, 1, s2, false, ib), NULL));
  /* shape matters */
  int64_t s21[2] = {2, 1};
  assert_false(mil_value_close(mil_value_new_tensor(p, MIL_DT_INT32, 1, s2, false, ia),
                               mil_value_new_tensor(p, MIL_DT_INT32, 2, s21, false, ia), NULL));
  /* strings */
  assert_true(mil_value_close(mil_value_new_string(p, "fp16"), mil_value_new_string(p, "fp16"), NULL));
  assert_false(mil_value_close(mil_value_new_string(p, "fp16"), mil_value_new_string(p, "fp32"), NULL));
  /* the relative tolerance is an option */
  mil_equiv_options o = {0};
  o.rel_tol = 1e-3;
  float x1[1] = {1000.0f}, x2[1] = {1000.5f};
  mil_value *v1 = mil_value_new_tensor(p, MIL_DT_FP32, 1, s1, false, x1);
  mil_value *v2 = mil_value_new_tensor(p, MIL_DT_FP32, 1, s1, false, x2);
  assert_false(mil_value_close(v1, v2, NULL));
  assert_true(mil_value_close(v1, v2, &o));
  mil_program_free(p);
}

static void test_binding_differences(void **state) {
  (void)state;
  /* x and y swapped on add */
  const char *b = HEAD
      "    %c: (fp32)*(Scalar) = const(val=2.0, name=\"c\")\n"
      "    %r: (2, 3, fp32)(Tensor) = relu(x=%x, name=\"r\")\n"
      "    %s: (2, 3, fp32)(Tensor) = sigmoid(x=%x, name=\"s\")\n"
      "    %a: (2, 3, fp32)(Tensor) = add(x=%r, y=%c, name=\"a\")\n"
      "    %m: (2, 3, fp32)(Tensor) = mul(x=%s, y=%a, name=\"m\")\n"
      "  } -> (%m)\n" TAIL;
  mil_equiv_result r = cmp(k_base, b);
  assert_false(r.equivalent);
  assert_non_null(strstr(r.diff, "op 'm' (mul)"));
  assert_non_null(strstr(r.diff, "input 'x'"));
  assert_non_null(strstr(r.diff, "op 'a' (add)"));
  assert_non_null(strstr(r.diff, "op 's' (sigmoid)"));
  /* another op type */
  const char *c = HEAD
      "    %c: (fp32)*(Scalar) = const(val=2.0, name=\"c\")\n"
      "    %r: (2, 3, fp32)(Tensor) = relu(x=%x, name=\"r\")\n"
      "    %s: (2, 3, fp32)(Tensor) = tanh(x=%x, name=\"s\")\n"
      "    %a: (2, 3, fp32)(Tensor) = add(x=%r, y=%c, name=\"a\")\n"
      "    %m: (2, 3, fp32)(Tensor) = mul(x=%a, y=%s, name=\"m\")\n"
      "  } -> (%m)\n" TAIL;
  r = cmp(k_base, c);
  assert_false(r.equivalent);
  assert_non_null(strstr(r.diff, "(sigmoid)"));
  assert_non_null(strstr(r.diff, "(tanh)"));
  /* a function input instead of an op output */
  const char *e = HEAD
      "    %c: (fp32)*(Scalar) = const(val=2.0, name=\"c\")\n"
      "    %r: (2, 3, fp32)(Tensor) = relu(x=%x, name=\"r\")\n"
      "    %s: (2, 3, fp32)(Tensor) = sigmoid(x=%x, name=\"s\")\n"
      "    %a: (2, 3, fp32)(Tensor) = add(x=%x, y=%c, name=\"a\")\n"
      "    %m: (2, 3, fp32)(Tensor) = mul(x=%a, y=%s, name=\"m\")\n"
      "  } -> (%m)\n" TAIL;
  r = cmp(k_base, e);
  assert_false(r.equivalent);
  assert_non_null(strstr(r.diff, "function input %x"));
  /* an output type */
  const char *f = HEAD
      "    %c: (fp32)*(Scalar) = const(val=2.0, name=\"c\")\n"
      "    %r: (2, 3, fp32)(Tensor) = relu(x=%x, name=\"r\")\n"
      "    %s: (2, 3, fp32)(Tensor) = sigmoid(x=%x, name=\"s\")\n"
      "    %a: (2, 3, fp32)(Tensor) = add(x=%r, y=%c, name=\"a\")\n"
      "    %m: (6, fp32)(Tensor) = mul(x=%a, y=%s, name=\"m\")\n"
      "  } -> (%m)\n" TAIL;
  r = cmp(k_base, f);
  assert_false(r.equivalent);
  assert_non_null(strstr(r.diff, "type"));
}

static void test_dead_ops(void **state) {
  (void)state;
  /* a dead op in one program only */
  const char *b = HEAD
      "    %c: (fp32)*(Scalar) = const(val=2.0, name=\"c\")\n"
      "    %r: (2, 3, fp32)(Tensor) = relu(x=%x, name=\"r\")\n"
      "    %s: (2, 3, fp32)(Tensor) = sigmoid(x=%x, name=\"s\")\n"
      "    %t: (2, 3, fp32)(Tensor) = tanh(x=%r, name=\"t\")\n"
      "    %a: (2, 3, fp32)(Tensor) = add(x=%r, y=%c, name=\"a\")\n"
      "    %m: (2, 3, fp32)(Tensor) = mul(x=%a, y=%s, name=\"m\")\n"
      "  } -> (%m)\n" TAIL;
  mil_equiv_result r = cmp(k_base, b);
  assert_false(r.equivalent);
  assert_non_null(strstr(r.diff, "'t' (tanh)"));
  assert_non_null(strstr(r.diff, "no counterpart"));
  /* the same dead op in both, reached through differently named vars */
  const char *b2 = HEAD
      "    %c: (fp32)*(Scalar) = const(val=2.0, name=\"c\")\n"
      "    %r2: (2, 3, fp32)(Tensor) = relu(x=%x, name=\"r2\")\n"
      "    %t2: (2, 3, fp32)(Tensor) = tanh(x=%r2, name=\"t2\")\n"
      "    %s: (2, 3, fp32)(Tensor) = sigmoid(x=%x, name=\"s\")\n"
      "    %a: (2, 3, fp32)(Tensor) = add(x=%r2, y=%c, name=\"a\")\n"
      "    %m: (2, 3, fp32)(Tensor) = mul(x=%a, y=%s, name=\"m\")\n"
      "  } -> (%m)\n" TAIL;
  r = cmp(b, b2);
  assert_true(r.equivalent);
  /* a dead op bound differently (tanh of s instead of r) */
  const char *b3 = HEAD
      "    %c: (fp32)*(Scalar) = const(val=2.0, name=\"c\")\n"
      "    %r: (2, 3, fp32)(Tensor) = relu(x=%x, name=\"r\")\n"
      "    %s: (2, 3, fp32)(Tensor) = sigmoid(x=%x, name=\"s\")\n"
      "    %t: (2, 3, fp32)(Tensor) = tanh(x=%s, name=\"t\")\n"
      "    %a: (2, 3, fp32)(Tensor) = add(x=%r, y=%c, name=\"a\")\n"
      "    %m: (2, 3, fp32)(Tensor) = mul(x=%a, y=%s, name=\"m\")\n"
      "  } -> (%m)\n" TAIL;
  r = cmp(b, b3);
  assert_false(r.equivalent);
  /* a dead const counts */
  const char *b4 = HEAD
      "    %c: (fp32)*(Scalar) = const(val=2.0, name=\"c\")\n"
      "    %k: (int32)*(Scalar) = const(val=5, name=\"k\")\n"
      "    %r: (2, 3, fp32)(Tensor) = relu(x=%x, name=\"r\")\n"
      "    %s: (2, 3, fp32)(Tensor) = sigmoid(x=%x, name=\"s\")\n"
      "    %a: (2, 3, fp32)(Tensor) = add(x=%r, y=%c, name=\"a\")\n"
      "    %m: (2, 3, fp32)(Tensor) = mul(x=%a, y=%s, name=\"m\")\n"
      "  } -> (%m)\n" TAIL;
  r = cmp(k_base, b4);
  assert_false(r.equivalent);
  assert_non_null(strstr(r.diff, "const 'k'"));
  /* ... and its value: a dead const of another value does not match */
  const char *b5 = HEAD
      "    %c: (fp32)*(Scalar) = const(val=2.0, name=\"c\")\n"
      "    %k: (int32)*(Scalar) = const(val=6, name=\"k\")\n"
      "    %r: (2, 3, fp32)(Tensor) = relu(x=%x, name=\"r\")\n"
      "    %s: (2, 3, fp32)(Tensor) = sigmoid(x=%x, name=\"s\")\n"
      "    %a: (2, 3, fp32)(Tensor) = add(x=%r, y=%c, name=\"a\")\n"
      "    %m: (2, 3, fp32)(Tensor) = mul(x=%a, y=%s, name=\"m\")\n"
      "  } -> (%m)\n" TAIL;
  r = cmp(b4, b5);
  assert_false(r.equivalent);
  /* two equal consts are not one: const counts must match */
  const char *b6 = HEAD
      "    %c: (fp32)*(Scalar) = const(val=2.0, name=\"c\")\n"
      "    %c2: (fp32)*(Scalar) = const(val=2.0, name=\"c2\")\n"
      "    %r: (2, 3, fp32)(Tensor) = relu(x=%x, name=\"r\")\n"
      "    %s: (2, 3, fp32)(Tensor) = sigmoid(x=%x, name=\"s\")\n"
      "    %a: (2, 3, fp32)(Tensor) = add(x=%r, y=%c2, name=\"a\")\n"
      "    %m: (2, 3, fp32)(Tensor) = mul(x=%a, y=%s, name=\"m\")\n"
      "  } -> (%m)\n" TAIL;
  r = cmp(k_base, b6);
  assert_false(r.equivalent);
}

static void test_function_signature(void **state) {
  (void)state;
  const char *b = "main[CoreML7](%y: (2, 3, fp32)(Tensor)) {\n  block0() {\n"
                  "    %r: (2, 3, fp32)(Tensor) = relu(x=%y, name=\"r\")\n"
                  "  } -> (%r)\n}\n";
  const char *a = "main[CoreML7](%x: (2, 3, fp32)(Tensor)) {\n  block0() {\n"
                  "    %r: (2, 3, fp32)(Tensor) = relu(x=%x, name=\"r\")\n"
                  "  } -> (%r)\n}\n";
  mil_equiv_result r = cmp(a, b);
  assert_false(r.equivalent);
  assert_non_null(strstr(r.diff, "input 0"));
  const char *c = "main[CoreML6](%x: (2, 3, fp32)(Tensor)) {\n  block0() {\n"
                  "    %r: (2, 3, fp32)(Tensor) = relu(x=%x, name=\"r\")\n"
                  "  } -> (%r)\n}\n";
  r = cmp(a, c);
  assert_false(r.equivalent);
  assert_non_null(strstr(r.diff, "opset"));
  const char *e = "other[CoreML7](%x: (2, 3, fp32)(Tensor)) {\n  block0() {\n"
                  "    %r: (2, 3, fp32)(Tensor) = relu(x=%x, name=\"r\")\n"
                  "  } -> (%r)\n}\n";
  r = cmp(a, e);
  assert_false(r.equivalent);
  assert_non_null(strstr(r.diff, "'main'"));
  /* symbolic dims correspond one to one, whatever their names */
  const char *s1 = "main[CoreML7](%x: (is0, 3, fp32)(Tensor)) {\n  block0() {\n"
                   "    %r: (is0, 3, fp32)(Tensor) = relu(x=%x, name=\"r\")\n"
                   "  } -> (%r)\n}\n";
  const char *s2 = "main[CoreML7](%x: (is7, 3, fp32)(Tensor)) {\n  block0() {\n"
                   "    %r: (is7, 3, fp32)(Tensor) = relu(x=%x, name=\"r\")\n"
                   "  } -> (%r)\n}\n";
  const char *s3 = "main[CoreML7](%x: (is7, 3, fp32)(Tensor)) {\n  block0() {\n"
                   "    %r: (is8, 3, fp32)(Tensor) = relu(x=%x, name=\"r\")\n"
                   "  } -> (%r)\n}\n";
  assert_true(cmp(s1, s2).equivalent);
  assert_false(cmp(s1, s3).equivalent);
}

static const char *k_loop = "main[CoreML7](%a: (1, 2, fp32)(Tensor), %b: (1, 2, fp32)(Tensor)) {\n"
                            "  block0() {\n"
                            "    %w: (1, 2, fp32)(Tensor) = while_loop(loop_vars=(%a), name=\"w\")\n"
                            "      cond_block(%ax: (1, 2, fp32)(Tensor)) {\n"
                            "        %ra: (fp32)(Scalar) = reduce_max(x=%ax, name=\"ra\")\n"
                            "        %rb: (fp32)(Scalar) = reduce_max(x=%b, name=\"rb\")\n"
                            "        %lt: (bool)(Scalar) = less(x=%ra, y=%rb, name=\"lt\")\n"
                            "      } -> (%lt)\n"
                            "      body_block(%ax: (1, 2, fp32)(Tensor)) {\n"
                            "        %one: (fp32)*(Scalar) = const(val=1.0, name=\"one\")\n"
                            "        %s: (1, 2, fp32)(Tensor) = add(x=%ax, y=%one, name=\"s\")\n"
                            "      } -> (%s)\n"
                            "  } -> (%w)\n"
                            "}\n";

static void test_nested_blocks(void **state) {
  (void)state;
  /* renamed block inputs, ops and const; reordered reduce_max ops */
  const char *b = "main[CoreML7](%a: (1, 2, fp32)(Tensor), %b: (1, 2, fp32)(Tensor)) {\n"
                  "  block5() {\n"
                  "    %w: (1, 2, fp32)(Tensor) = while_loop(loop_vars=(%a), name=\"while_0\")\n"
                  "      c(%q: (1, 2, fp32)(Tensor)) {\n"
                  "        %mb: (fp32)(Scalar) = reduce_max(x=%b, name=\"mb\")\n"
                  "        %mq: (fp32)(Scalar) = reduce_max(x=%q, name=\"mq\")\n"
                  "        %l: (bool)(Scalar) = less(x=%mq, y=%mb, name=\"l\")\n"
                  "      } -> (%l)\n"
                  "      d(%q: (1, 2, fp32)(Tensor)) {\n"
                  "        %k: (fp32)*(Scalar) = const(val=1.0, name=\"k\")\n"
                  "        %s: (1, 2, fp32)(Tensor) = add(x=%q, y=%k, name=\"s\")\n"
                  "      } -> (%s)\n"
                  "  } -> (%w)\n"
                  "}\n";
  mil_equiv_result r = cmp(k_loop, b);
  assert_true(r.equivalent);
  /* the const hoisted out of the body is a different program */
  const char *c = "main[CoreML7](%a: (1, 2, fp32)(Tensor), %b: (1, 2, fp32)(Tensor)) {\n"
                  "  block0() {\n"
                  "    %one: (fp32)*(Scalar) = const(val=1.0, name=\"one\")\n"
                  "    %w: (1, 2, fp32)(Tensor) = while_loop(loop_vars=(%a), name=\"w\")\n"
                  "      cond_block(%ax: (1, 2, fp32)(Tensor)) {\n"
                  "        %ra: (fp32)(Scalar) = reduce_max(x=%ax, name=\"ra\")\n"
                  "        %rb: (fp32)(Scalar) = reduce_max(x=%b, name=\"rb\")\n"
                  "        %lt: (bool)(Scalar) = less(x=%ra, y=%rb, name=\"lt\")\n"
                  "      } -> (%lt)\n"
                  "      body_block(%ax: (1, 2, fp32)(Tensor)) {\n"
                  "        %s: (1, 2, fp32)(Tensor) = add(x=%ax, y=%one, name=\"s\")\n"
                  "      } -> (%s)\n"
                  "  } -> (%w)\n"
                  "}\n";
  r = cmp(k_loop, c);
  assert_false(r.equivalent);
  /* the comparison inside swapped */
  const char *e = "main[CoreML7](%a: (1, 2, fp32)(Tensor), %b: (1, 2, fp32)(Tensor)) {\n"
                  "  block0() {\n"
                  "    %w: (1, 2, fp32)(Tensor) = while_loop(loop_vars=(%a), name=\"w\")\n"
                  "      cond_block(%ax: (1, 2, fp32)(Tensor)) {\n"
                  "        %ra: (fp32)(Scalar) = reduce_max(x=%ax, name=\"ra\")\n"
                  "        %rb: (fp32)(Scalar) = reduce_max(x=%b, name=\"rb\")\n"
                  "        %lt: (bool)(Scalar) = less(x=%rb, y=%ra, name=\"lt\")\n"
                  "      } -> (%lt)\n"
                  "      body_block(%ax: (1, 2, fp32)(Tensor)) {\n"
                  "        %one: (fp32)*(Scalar) = const(val=1.0, name=\"one\")\n"
                  "        %s: (1, 2, fp32)(Tensor) = add(x=%ax, y=%one, name=\"s\")\n"
                  "      } -> (%s)\n"
                  "  } -> (%w)\n"
                  "}\n";
  r = cmp(k_loop, e);
  assert_false(r.equivalent);
  assert_non_null(strstr(r.diff, "reduce_max"));
  assert_non_null(strstr(r.diff, "op 'lt' (less)")); /* how the two came to correspond */
}

/* A chain of n add/mul/relu ops with a const per binary op and a dead op
 * every 100 ops; `salt` changes every name. */
static mil_program *build_chain(int n, int salt, bool shuffle_consts) {
  mil_program *p = mil_program_new(NULL);
  mil_function *f = mil_function_new(p, "main", "CoreML7");
  int64_t shape[2] = {4, 8};
  const mil_type *t = mil_type_tensor_shape(p, MIL_DT_FP32, 2, shape);
  mil_var *x = mil_function_add_input(f, "x", t);
  mil_block *b = mil_function_body(f);
  mil_var *cur = x;
  char name[64];
  for (int i = 0; i < n; i++) {
    static const char *types[3] = {"add", "mul", "relu"};
    const char *ty = types[i % 3];
    snprintf(name, sizeof name, "%s_%d_%d", ty, i, salt);
    mil_op *op = mil_op_new(p, ty, name);
    mil_op_add_input(op, "x", cur);
    if (i % 3 != 2) {
      char cn[64];
      snprintf(cn, sizeof cn, "c_%d_%d", i, salt);
      mil_op *c = mil_const_new(p, cn, mil_value_new_scalar_f64(p, MIL_DT_FP32, 1.0 + (i % 7)));
      if (shuffle_consts && b->first) mil_block_insert_before(b->first, c);
      else mil_block_append(b, c);
      mil_op_add_input(op, "y", c->outputs[0]);
    }
    mil_var *out = mil_op_add_output(op, name, t);
    mil_block_append(b, op);
    if (i % 100 == 50) {
      snprintf(name, sizeof name, "dead_%d_%d", i, salt);
      mil_op *dead = mil_op_new(p, "sigmoid", name);
      mil_op_add_input(dead, "x", out);
      mil_op_add_output(dead, name, t);
      mil_block_append(b, dead);
    }
    cur = out;
  }
  mil_block_set_outputs(b, 1, &cur);
  /* the output keeps one name in both programs */
  cur->name = mil_program_intern(p, "out", (size_t)-1);
  return p;
}

static void test_large(void **state) {
  (void)state;
  mil_program *a = build_chain(30000, 1, false), *b = build_chain(30000, 2, true);
  assert_int_equal(mil_program_count_ops(a), 30000 + 20000 + 300);
  mil_equiv_result r;
  assert_int_equal(mil_program_compare(a, b, NULL, &r, NULL), MIL_OK);
  assert_true(r.equivalent);
  assert_false(r.identical);
  /* change one const deep in the chain */
  mil_block *bb = mil_function_body(b->functions[0]);
  for (mil_op *op = bb->first; op; op = op->next)
    if (mil_op_is_const(op) && strcmp(op->name, "c_15001_2") == 0) {
      mil_var_set_value(op->outputs[0], mil_value_new_scalar_f64(b, MIL_DT_FP32, 99.0));
      break;
    }
  assert_int_equal(mil_program_compare(a, b, NULL, &r, NULL), MIL_ERR_INVALID);
  printf("  diff: %s\n", r.diff);
  assert_non_null(strstr(r.diff, "op 'mul_15001_1' (mul)"));
  assert_non_null(strstr(r.diff, "input 'y'"));
  assert_non_null(strstr(r.diff, "99.0"));
  mil_program_free(a);
  mil_program_free(b);
}

/* Over the golden corpus: cases whose expected text equals the input
 * (block numbers aside) are equivalent to it; cases where the multiset of
 * op types differs are not. Both are read off the text alone. */
static int op_types(const char *t, size_t n, char (*out)[48], int max) {
  int k = 0;
  for (size_t i = 0; i + 3 < n && k < max; i++) {
    if (!(t[i] == ' ' && t[i + 1] == '=' && t[i + 2] == ' ' && i > 0 && t[i - 1] == ')')) continue;
    size_t j = i + 3, s = j;
    while (j < n && ((t[j] >= 'a' && t[j] <= 'z') || (t[j] >= '0' && t[j] <= '9') || t[j] == '_')) j++;
    if (j < n && t[j] == '(' && j - s < 48) {
      memset(out[k], 0, sizeof out[k]);
      memcpy(out[k], t + s, j - s);
      k++;
    }
  }
  return k;
}

static int cmp_str48(const void *a, const void *b) { return strcmp(a, b); }

static bool same_types(const char *a, size_t na, const char *b, size_t nb) {
  static char ta[20000][48], tb[20000][48];
  int ka = op_types(a, na, ta, 20000), kb = op_types(b, nb, tb, 20000);
  if (ka != kb) return false;
  qsort(ta, (size_t)ka, 48, cmp_str48);
  qsort(tb, (size_t)kb, 48, cmp_str48);
  return memcmp(ta, tb, (size_t)ka * 48) == 0;
}

static bool same_text(const char *a, size_t na, const char *b, size_t nb) {
  size_t i = 0, k = 0;
  while (i < na && k < nb) {
    if (i + 5 <= na && k + 5 <= nb && !memcmp(a + i, "block", 5) && !memcmp(b + k, "block", 5)) {
      i += 5, k += 5;
      while (i < na && a[i] >= '0' && a[i] <= '9') i++;
      while (k < nb && b[k] >= '0' && b[k] <= '9') k++;
      continue;
    }
    if (a[i++] != b[k++]) return false;
  }
  return i == na && k == nb;
}

static char *slurp(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  rewind(f);
  char *s = malloc((size_t)n + 1);
  if (s && fread(s, 1, (size_t)n, f) != (size_t)n) {
    free(s);
    s = NULL;
  }
  if (s) s[n] = 0;
  fclose(f);
  return s;
}

static void test_corpus_sweep(void **state) {
  (void)state;
  const char *root = MIL_SHARED_DIR "/corpus/passes";
  DIR *rd = opendir(root);
  if (!rd) {
    shared_skip("the corpus");
    return;
  }
  int n_same = 0, n_diff = 0, n_other = 0, n_parse = 0;
  struct dirent *de;
  while ((de = readdir(rd))) {
    if (de->d_name[0] == '.') continue;
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/%s", root, de->d_name);
    DIR *dd = opendir(dir);
    if (!dd) continue;
    struct dirent *fe;
    int taken = 0;
    while ((fe = readdir(dd)) && taken < 60) { /* a sample of each directory */
      size_t ln = strlen(fe->d_name);
      if (ln < 5 || strcmp(fe->d_name + ln - 4, ".mil") != 0) continue;
      taken++;
      char path[8192];
      snprintf(path, sizeof path, "%s/%s", dir, fe->d_name);
      char *t = slurp(path);
      assert_non_null(t);
      char *in = strstr(t, "# --- input\n"), *ex = strstr(t, "# --- expected\n"),
           *ct = strstr(t, "# --- expected (coremltools form)\n");
      assert_true(in && ex && ct);
      in += 12;
      size_t nin = (size_t)(ex - in);
      ex += 15;
      size_t nex = (size_t)(ct - ex);
      mil_program *a = NULL, *b = NULL;
      if (mil_parse_program(in, nin, NULL, &a, NULL) != MIL_OK ||
          mil_parse_program(ex, nex, NULL, &b, NULL) != MIL_OK) {
        n_parse++;
        mil_program_free(a);
        mil_program_free(b);
        free(t);
        continue;
      }
      mil_equiv_result r;
      mil_program_compare(a, b, NULL, &r, NULL);
      if (same_text(in, nin, ex, nex)) {
        n_same++;
        if (!r.equivalent) fail_msg("%s: same text, but: %s", path, r.diff);
        if (!r.identical) fail_msg("%s: same text, but not identical: %s", path, r.identical_diff);
      } else if (!same_types(in, nin, ex, nex)) {
        n_diff++;
        if (r.equivalent) fail_msg("%s: op types differ, but equivalent", path);
        assert_true(r.diff[0] != 0);
      } else {
        n_other++;
      }
      mil_program_free(a);
      mil_program_free(b);
      free(t);
    }
    closedir(dd);
  }
  closedir(rd);
  printf("corpus sweep: %d same-text cases equivalent, %d with other op types not, %d undecided, %d unparsed\n",
         n_same, n_diff, n_other, n_parse);
  assert_true(n_same > 100 && n_diff > 100);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_same),          cmocka_unit_test(test_renamed_and_reordered),
      cmocka_unit_test(test_counter_names_identical), cmocka_unit_test(test_const_values),
      cmocka_unit_test(test_value_close),   cmocka_unit_test(test_binding_differences),
      cmocka_unit_test(test_dead_ops),      cmocka_unit_test(test_function_signature),
      cmocka_unit_test(test_nested_blocks), cmocka_unit_test(test_large),
      cmocka_unit_test(test_corpus_sweep),
  };
  return shared_exit(cmocka_run_group_tests(tests, NULL, NULL));
}
