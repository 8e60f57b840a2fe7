/* Test helper for the op-family tests: small complete-form MIL programs
 * whose op under test is named "t" (output %t), checked for the type it
 * infers, the error it reports, or the value it folds to. Everything is
 * static so any test can include this header. */
#ifndef MIL_TESTS_OPS_TEST_UTIL_H
#define MIL_TESTS_OPS_TEST_UTIL_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mil/ops.h"
#include "mil/text.h"

/* (include <cmocka.h> before this header) */

/* A case: the function's opset ("CoreML5" = iOS15, "CoreML7" = iOS17, ...),
 * its inputs, the block body, and either the inferred type of output 0
 * ("(2, 3, fp32)(Tensor)", "(fp32)(Scalar)", "List[?, (2,fp32)]") or a
 * fragment of the expected error. */
typedef struct tcase {
  const char *opset;  /* "CoreML5" (iOS15), "CoreML7" (iOS17), ... */
  const char *inputs; /* function inputs */
  const char *body;   /* ops; the op under test is "t" with output %t */
  const char *want;   /* inferred type of output 0, e.g. "(2, 3, fp32)(Tensor)"; NULL for an error case */
  const char *err;    /* fragment of the expected error; NULL for a valid case */
} tcase;

/* ---- harness ---- */

static inline mil_program *parse_case(const tcase *tc) {
  char text[16384];
  snprintf(text, sizeof text, "main[%s](%s) {\n  block0() {\n%s  } -> (%%t)\n}\n", tc->opset, tc->inputs, tc->body);
  mil_program *p = NULL;
  mil_diag d;
  mil_diag_init(&d);
  mil_parse_options opt = {"case.mil", NULL};
  if (mil_parse_program(text, strlen(text), &opt, &p, &d) != MIL_OK)
    fail_msg("case does not parse: %s\n%s", mil_diag_first_error(&d) ? mil_diag_first_error(&d) : "?", text);
  mil_diag_clear(&d);
  return p;
}

static inline mil_op *find_op(mil_block *b, const char *name) {
  for (mil_op *op = b->first; op; op = op->next) {
    if (op->name && strcmp(op->name, name) == 0) return op;
    for (int32_t k = 0; k < op->n_blocks; k++) {
      mil_op *r = find_op(op->blocks[k], name);
      if (r) return r;
    }
  }
  return NULL;
}

static inline mil_op *op_t(mil_program *p) {
  mil_op *op = find_op(mil_function_body(p->functions[0]), "t");
  assert_non_null(op);
  return op;
}

static inline void type_text(const mil_type *t, char *buf, size_t n) {
  char s[256];
  mil_type_to_string(t, s, sizeof s);
  const char *kind = "(Scalar)";
  if (t->kind == MIL_TYPE_LIST || t->kind == MIL_TYPE_STATE) kind = "";
  else if (t->kind == MIL_TYPE_TENSOR && !t->is_scalar) kind = "(Tensor)";
  size_t l = strlen(s);
  if (l >= n) l = n - 1;
  memcpy(buf, s, l);
  buf[l] = 0;
  strncat(buf, kind, n - l - 1);
}

/* Runs inference on op t; returns the status and fills types/vals and the
 * first error message. */
static inline mil_status infer_t(mil_program *p, const mil_type **types, const mil_value **vals, char *err, size_t en) {
  mil_diag d;
  mil_diag_init(&d);
  mil_status st = mil_op_infer_types(op_t(p), types, vals, &d);
  snprintf(err, en, "%s", mil_diag_first_error(&d) ? mil_diag_first_error(&d) : "");
  mil_diag_clear(&d);
  return st;
}

static inline void run_cases(const tcase *cases, size_t n) {
  int bad = 0;
  for (size_t i = 0; i < n; i++) {
    const tcase *tc = &cases[i];
    mil_program *p = parse_case(tc);
    const mil_type *types[16];
    const mil_value *vals[16];
    char err[1024];
    mil_status st = infer_t(p, types, vals, err, sizeof err);
    if (tc->want) {
      char got[512];
      if (st != MIL_OK) {
        printf("case %zu (%s): expected %s, got error: %s\n", i, op_t(p)->type, tc->want, err);
        bad++;
      } else if (type_text(types[0], got, sizeof got), strcmp(got, tc->want) != 0) {
        printf("case %zu (%s): expected %s, got %s\n", i, op_t(p)->type, tc->want, got);
        bad++;
      }
    } else {
      if (st == MIL_OK) {
        printf("case %zu (%s): expected an error containing \"%s\", got success\n", i, op_t(p)->type, tc->err);
        bad++;
      } else if (!strstr(err, tc->err)) {
        printf("case %zu (%s): expected an error containing \"%s\", got: %s\n", i, op_t(p)->type, tc->err, err);
        bad++;
      }
    }
    mil_program_free(p);
  }
  fflush(stdout);
  assert_int_equal(bad, 0);
}

/* Folds op t and compares its value with `want` (n values, as doubles):
 * exactly when rel_tol is 0, else within rel_tol relative error. */
static inline void expect_fold_tol(const char *opset, const char *inputs, const char *body, mil_dtype dt, int n,
                                   const double *want, double rel_tol) {
  tcase tc = {opset, inputs, body, NULL, NULL};
  mil_program *p = parse_case(&tc);
  const mil_type *types[16];
  const mil_value *vals[16];
  char err[1024];
  mil_status st = infer_t(p, types, vals, err, sizeof err);
  if (st != MIL_OK) fail_msg("fold case failed: %s\n%s", err, body);
  if (!vals[0]) fail_msg("op did not fold:\n%s", body);
  if ((int)vals[0]->type->dtype != (int)dt)
    fail_msg("folded dtype %s, expected %s\n%s", mil_dtype_name(vals[0]->type->dtype), mil_dtype_name(dt), body);
  if (vals[0]->numel != n) fail_msg("folded %lld values, expected %d\n%s", (long long)vals[0]->numel, n, body);
  for (int i = 0; i < n; i++) {
    double g = mil_value_get_f64(vals[0], i);
    bool ok = isnan(want[i]) ? isnan(g) : rel_tol == 0 ? g == want[i] && signbit(g) == signbit(want[i])
                                                       : fabs(g - want[i]) <= rel_tol * fabs(want[i]);
    if (!ok) fail_msg("element %d: got %.17g, expected %.17g\n%s", i, g, want[i], body);
  }
  mil_program_free(p);
}

static inline void expect_fold(const char *opset, const char *inputs, const char *body, mil_dtype dt, int n,
                               const double *want) {
  expect_fold_tol(opset, inputs, body, dt, n, want, 0);
}

/* Infers op t and checks it does not fold. */
static inline void expect_no_fold(const char *opset, const char *inputs, const char *body) {
  tcase tc = {opset, inputs, body, NULL, NULL};
  mil_program *p = parse_case(&tc);
  const mil_type *types[16];
  const mil_value *vals[16];
  char err[1024];
  assert_int_equal(infer_t(p, types, vals, err, sizeof err), MIL_OK);
  assert_null(vals[0]);
  mil_program_free(p);
}

#define X23 "%x: (2, 3, fp32)(Tensor)"
#define T(ty) "    %t: " ty " = "
#define C(name, ty, val) "    %" name ": " ty " = const(val=" val ", name=\"" name "\")\n"

#define FOLD(opset, inputs, body, dt, ...)                                              \
  do {                                                                                 \
    const double w_[] = {__VA_ARGS__};                                                 \
    expect_fold(opset, inputs, body, dt, (int)(sizeof w_ / sizeof w_[0]), w_);         \
  } while (0)
/* Within a relative 1e-6 (transcendental functions: libm and numpy may
 * differ in the last bit). */
#define FOLD_NEAR(opset, inputs, body, dt, ...)                                         \
  do {                                                                                 \
    const double w_[] = {__VA_ARGS__};                                                 \
    expect_fold_tol(opset, inputs, body, dt, (int)(sizeof w_ / sizeof w_[0]), w_, 1e-6); \
  } while (0)

#endif
