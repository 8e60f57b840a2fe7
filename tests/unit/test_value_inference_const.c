/* Inputs that must be constant accept any value the ops' value inference
 * knows (coremltools' const=True inputs take a var whose .val is known):
 * argsort(ascending=logical_not(x=const True)), as coremltools' torch
 * frontend writes for torch.sort(descending=...), validates from MIL text;
 * a value computed from a function input is still refused, and the message
 * names the input's dtype. The validator lends values only while it runs. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "mil/mil.h"
#include "mil/ops.h"
#include "mil/text.h"

static mil_program *parse(const char *text) {
  mil_program *p = NULL;
  mil_diag d = {0};
  if (mil_parse_program(text, strlen(text), NULL, &p, &d) != MIL_OK) fail_msg("parse: %s", mil_diag_first_error(&d));
  mil_diag_clear(&d);
  return p;
}

/* Validates text; returns the first error (malloc'ed) or NULL when valid. */
static char *validate(const char *text) {
  mil_program *p = parse(text);
  mil_diag d = {0};
  mil_status st = mil_program_validate(p, &d);
  char *r = st == MIL_OK ? NULL : strdup(mil_diag_first_error(&d) ? mil_diag_first_error(&d) : "?");
  /* no value is left on an op output of the program */
  for (mil_op *op = mil_function_body(p->functions[0])->first; op; op = op->next)
    if (!mil_op_is_const(op))
      for (int32_t i = 0; i < op->n_outputs; i++) assert_null(op->outputs[i]->val);
  mil_diag_clear(&d);
  mil_program_free(p);
  return r;
}

static void test_argsort_ascending_from_logical_not(void **state) {
  (void)state;
  char *e = validate("main[CoreML7](%x: (2, 3, fp32)(Tensor)) {\n"
                     "  block0() {\n"
                     "    %t: (bool)(Tensor) = const(val=True, name=\"t\")\n"
                     "    %nt: (bool)(Tensor) = logical_not(x=%t, name=\"nt\")\n"
                     "    %y: (2, 3, int32)(Tensor) = argsort(x=%x, axis=-1, ascending=%nt, name=\"y\")\n"
                     "  } -> (%y)\n"
                     "}\n");
  if (e) fail_msg("%s", e);
}

/* registry-level const inputs (reduce axes, keep_dims) and op-level ones
 * (topk k, expand_dims axes) through chains of value inference */
static void test_other_const_inputs(void **state) {
  (void)state;
  char *e = validate("main[CoreML7](%x: (2, 3, 4, fp32)(Tensor)) {\n"
                     "  block0() {\n"
                     "    %a: (1, int32)(Tensor) = const(val=[1], name=\"a\")\n"
                     "    %b: (1, int32)(Tensor) = const(val=[1], name=\"b\")\n"
                     "    %ax: (1, int32)(Tensor) = add(x=%a, y=%b, name=\"ax\")\n"
                     "    %f: (bool)(Tensor) = const(val=False, name=\"f\")\n"
                     "    %kd: (bool)(Tensor) = logical_not(x=%f, name=\"kd\")\n"
                     "    %r: (2, 3, 1, fp32)(Tensor) = reduce_sum(x=%x, axes=%ax, keep_dims=%kd, name=\"r\")\n"
                     "    %s: (3, int32)(Tensor) = shape(x=%x, name=\"s\")\n"
                     "    %i: (int32)(Tensor) = const(val=0, name=\"i\")\n"
                     "    %k: (int32)(Tensor) = gather(x=%s, indices=%i, axis=0, name=\"k\")\n"
                     "    %tv: (2, 3, 2, fp32)(Tensor), %ti: (2, 3, 2, int32)(Tensor) = topk(x=%x, k=%k, axis=-1, name=\"t\")\n"
                     "    %e: (1, int32)(Tensor) = sub(x=%a, y=%b, name=\"e\")\n"
                     "    %y: (1, 2, 3, 1, fp32)(Tensor) = expand_dims(x=%r, axes=%e, name=\"y\")\n"
                     "  } -> (%y, %tv)\n"
                     "}\n");
  if (e) fail_msg("%s", e);
}

static void test_run_time_value_refused(void **state) {
  (void)state;
  char *e = validate("main[CoreML7](%x: (2, 3, fp32)(Tensor), %b: (bool)(Tensor)) {\n"
                     "  block0() {\n"
                     "    %nt: (bool)(Tensor) = logical_not(x=%b, name=\"nt\")\n"
                     "    %y: (2, 3, int32)(Tensor) = argsort(x=%x, ascending=%nt, name=\"y\")\n"
                     "  } -> (%y)\n"
                     "}\n");
  assert_non_null(e);
  assert_non_null(strstr(e, "input 'ascending' must be a compile-time constant, but %nt is computed at run time"));
  free(e);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_argsort_ascending_from_logical_not),
      cmocka_unit_test(test_other_const_inputs),
      cmocka_unit_test(test_run_time_value_refused),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
