/* reduce_mean / reduce_sum: the interpreter's kernel (src/interp/reduction.c,
 * the input at run time) against value inference (src/ops/reduction.c,
 * the same input as a const, mil_op_infer_types) bit for bit, over trailing
 * axes of fp16 tensors (elements from 2^-10 to 2^10, both signs) and fp32
 * ones whose rows cancel (2^30, values near 2^-20, -2^30: a different
 * order of the additions gives another result), with group lengths that
 * are not multiples of the kernel's eight partial sums. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "interp_fixture.h"
#include "mil/interp.h"
#include "mil/mil.h"
#include "mil/ops.h"
#include "mil/text.h"

#define A 3
#define B 5
#define C 37
#define N (A * B * C)

static void one(const char *op, const char *dt, const char *axes, const char *oshape) {
  static float x[N];
  uint32_t s = 77;
  for (int i = 0; i < N; i++) {
    s = s * 1664525u + 1013904223u;
    int e = (int)((s >> 8) % 61) - 30;
    float m = 1.0f + (float)((s >> 16) & 0xff) / 256.0f;
    x[i] = ((s >> 3) & 1 ? -1.0f : 1.0f) * ldexpf(m, strcmp(dt, "fp16") == 0 ? e / 3 : e);
    /* fp32: each row starts with 2^30 and ends with -2^30, between them
     * values near 2^-20 that a double sum next to 2^30 rounds (to 2^-22):
     * the order of the additions decides the result */
    if (strcmp(dt, "fp32") == 0 && i % C == 0) x[i] = ldexpf(1.0f, 30);
    if (strcmp(dt, "fp32") == 0 && i % C == C - 1) x[i] = -ldexpf(1.0f, 30);
    if (strcmp(dt, "fp32") == 0 && i % C != 0 && i % C != C - 1) x[i] = ldexpf(m, -20);
  }
  /* the kernel: x an input */
  char *text = malloc(64 * N + 1024);
  assert_non_null(text);
  snprintf(text, 64 * N + 1024,
           "main[CoreML6](%%x: (%d, %d, %d, %s)(Tensor)) {\n  block0() {\n"
           "    %%y: %s = %s(x=%%x, axes=%s, keep_dims=False, name=\"y\")\n  } -> (%%y)\n}\n",
           A, B, C, dt, oshape, op, axes);
  mil_program *p = ifix_parse(text, "reduce.mil");
  mil_diag d;
  mil_diag_init(&d);
  mil_interp *ip = NULL;
  assert_int_equal(mil_interp_new(p, NULL, &ip, &d), MIL_OK);
  const int64_t shape[3] = {A, B, C};
  uint16_t xh[N];
  bool h = strcmp(dt, "fp16") == 0;
  for (int i = 0; i < N; i++) xh[i] = mil_fp32_to_fp16(x[i]);
  mil_tensor t = {h ? MIL_DT_FP16 : MIL_DT_FP32, 3, shape, h ? (void *)xh : (void *)x, (size_t)N * (h ? 2 : 4), N};
  assert_int_equal(mil_interp_set_input(ip, "x", &t, &d), MIL_OK);
  if (mil_interp_run(ip, NULL, &d) != MIL_OK) fail_msg("%s", mil_diag_first_error(&d));
  const mil_tensor *y = mil_interp_output_at(ip, 0);
  /* value inference: x a const */
  size_t at = (size_t)snprintf(text, 64 * N + 1024, "main[CoreML6]() {\n  block0() {\n    %%x: (%d, %d, %d, %s)*(Tensor) = const(val=[", A, B, C, dt);
  for (int i = 0; i < N; i++) { /* nested: one list per dimension */
    const char *open = i % (B * C) == 0 ? "[[" : i % C == 0 ? "[" : "";
    const char *sep = i == 0 ? "" : i % (B * C) == 0 ? "]], " : i % C == 0 ? "], " : ", ";
    at += (size_t)snprintf(text + at, 64 * N + 1024 - at, "%s%s%.9g", sep, open,
                           h ? (double)mil_fp16_to_fp32(xh[i]) : (double)x[i]);
  }
  snprintf(text + at, 64 * N + 1024 - at,
           "]]], name=\"x\")\n    %%y: %s = %s(x=%%x, axes=%s, keep_dims=False, name=\"y\")\n  } -> (%%y)\n}\n", oshape, op, axes);
  mil_program *q = ifix_parse(text, "reduce.mil");
  mil_function *f = mil_program_find_function(q, "main");
  mil_op *r = NULL;
  for (mil_op *o = mil_function_body(f)->first; o; o = o->next)
    if (!strcmp(o->type, op)) r = o;
  assert_non_null(r);
  const mil_type *types[1];
  const mil_value *vals[1] = {NULL};
  assert_int_equal(mil_op_infer_types(r, types, vals, &d), MIL_OK);
  assert_non_null(vals[0]);
  assert_int_equal(vals[0]->numel, y->numel);
  size_t es = h ? 2 : 4;
  if (memcmp(mil_value_data(vals[0]), y->data, (size_t)y->numel * es) != 0)
    fail_msg("%s %s axes %s: the kernel's result differs from value inference's", op, dt, axes);
  mil_interp_free(ip);
  mil_program_free(p);
  mil_program_free(q);
  free(text);
  mil_diag_clear(&d);
}

static void test_kernel_equals_value_inference(void **state) {
  (void)state;
  const char *dts[] = {"fp32", "fp16"};
  for (int k = 0; k < 2; k++) {
    char o1[64], o2[64];
    snprintf(o1, sizeof o1, "(%d, %d, %s)(Tensor)", A, B, dts[k]);
    snprintf(o2, sizeof o2, "(%d, %s)(Tensor)", A, dts[k]);
    one("reduce_mean", dts[k], "[2]", o1);
    one("reduce_sum", dts[k], "[2]", o1);
    one("reduce_mean", dts[k], "[1, 2]", o2);
    one("reduce_sum", dts[k], "[-1, -2]", o2);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_kernel_equals_value_inference),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
