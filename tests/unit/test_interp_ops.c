/* The interpreter runs every op of the registry: for every variant of
 * every opset (mil_op_def_at), mil_interp_supports_op says it has a
 * kernel or value inference; and classify returns its class label and
 * probability dictionary (coremltools ops/defs/iOS15/classify.py). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "interp_fixture.h"
#include "mil/ops.h"

static void test_every_registry_op_runs(void **state) {
  (void)state;
  size_t n = mil_op_def_count(), missing = 0;
  assert_true(n > 200);
  for (size_t i = 0; i < n; i++) {
    const mil_op_def *def = mil_op_def_at(i);
    /* the variant applies from its opset on; CoreML3 is the oldest a function can have */
    int v = def->opset < MIL_IOS13 ? MIL_IOS13 : def->opset;
    if (!mil_interp_supports_op(def->type, v)) {
      printf("  no kernel or value inference: %s (%s, %s)\n", def->type, mil_opset_target_name(v), def->family);
      missing++;
    }
  }
  printf("%zu op variants, %zu cannot run\n", n, missing);
  assert_int_equal(missing, 0);
}

/* main[CoreML5](%probs: (n, fp32)) -> classify(probabilities=%probs, classes=labels) */
static mil_program *classify_prog(int n, const char *const *labels, const int64_t *ints) {
  mil_program *p = mil_program_new(NULL);
  mil_function *f = mil_function_new(p, "main", "CoreML5");
  int64_t shape[1] = {n};
  mil_var *probs = mil_function_add_input(f, "probs", mil_type_tensor_shape(p, MIL_DT_FP32, 1, shape));
  mil_dtype kt = labels ? MIL_DT_STRING : MIL_DT_INT64;
  const mil_value *items[8];
  for (int i = 0; i < n; i++)
    items[i] = labels ? mil_value_new_string(p, labels[i]) : mil_value_new_scalar_i64(p, MIL_DT_INT64, ints[i]);
  const mil_type *lt = mil_type_list(p, mil_type_scalar(p, kt), (mil_dim){n, NULL, false});
  mil_op *op = mil_op_new(p, "classify", "c");
  mil_op_add_input(op, "probabilities", probs);
  mil_op_add_input_value(op, "classes", mil_value_new_list(p, lt, n, items));
  mil_var *label = mil_op_add_output(op, "label", mil_type_scalar(p, kt));
  mil_var *dict = mil_op_add_output(op, "probs_dict", mil_type_dict(p, mil_type_scalar(p, kt),
                                                                    mil_type_scalar(p, MIL_DT_FP64)));
  mil_block *b = mil_function_body(f);
  mil_block_append(b, op);
  mil_var *outs[2] = {label, dict};
  assert_int_equal(mil_block_set_outputs(b, 2, outs), MIL_OK);
  return p;
}

static void run_classify(mil_program *p, const float *probs, int n, mil_interp **out) {
  mil_diag d;
  mil_diag_init(&d);
  if (mil_interp_new(p, NULL, out, &d) != MIL_OK) fail_msg("interp_new: %s", mil_diag_first_error(&d));
  int64_t shape[1] = {n};
  mil_tensor t = {MIL_DT_FP32, 1, shape, probs, (size_t)n * sizeof(float), n};
  assert_int_equal(mil_interp_set_input(*out, "probs", &t, &d), MIL_OK);
  if (mil_interp_run(*out, NULL, &d) != MIL_OK) fail_msg("run: %s", mil_diag_first_error(&d));
  mil_diag_clear(&d);
}

static void test_classify_strings(void **state) {
  (void)state;
  static const char *const labels[] = {"cat", "dog", "fox"};
  static const float probs[] = {0.2f, 0.7f, 0.1f};
  mil_program *p = classify_prog(3, labels, NULL);
  mil_interp *ip = NULL;
  run_classify(p, probs, 3, &ip);
  mil_program_free(p); /* the outputs are the interpreter's own copies */
  const mil_tensor *label = mil_interp_output_at(ip, 0);
  assert_non_null(label);
  assert_int_equal(label->dtype, MIL_DT_STRING);
  assert_int_equal(label->rank, 0);
  assert_string_equal(((const char *const *)label->data)[0], "dog");
  assert_null(mil_interp_output_dict(ip, 0));
  const mil_interp_dict *dict = mil_interp_output_dict(ip, 1);
  assert_non_null(dict);
  assert_int_equal(dict->key_dtype, MIL_DT_STRING);
  assert_int_equal(dict->n, 3);
  for (int i = 0; i < 3; i++) {
    assert_string_equal(dict->str_keys[i], labels[i]);
    assert_true(fabs(dict->values[i] - (double)probs[i]) < 1e-9);
  }
  const mil_tensor *vals = mil_interp_output(ip, "probs_dict");
  assert_non_null(vals);
  assert_int_equal(vals->dtype, MIL_DT_FP64);
  assert_int_equal(vals->numel, 3);
  assert_true(fabs(((const double *)vals->data)[1] - 0.7) < 1e-6);
  /* a second run replaces the outputs */
  static const float probs2[] = {0.5f, 0.2f, 0.5f};
  mil_diag d;
  mil_diag_init(&d);
  int64_t shape[1] = {3};
  mil_tensor t = {MIL_DT_FP32, 1, shape, probs2, sizeof probs2, 3};
  assert_int_equal(mil_interp_set_input(ip, "probs", &t, &d), MIL_OK);
  assert_int_equal(mil_interp_run(ip, NULL, &d), MIL_OK);
  assert_string_equal(((const char *const *)mil_interp_output_at(ip, 0)->data)[0], "cat"); /* first of the ties */
  mil_diag_clear(&d);
  mil_interp_free(ip);
}

static void test_classify_int64(void **state) {
  (void)state;
  static const int64_t classes[] = {10, 20, 30, 40};
  static const float probs[] = {0.1f, 0.2f, 0.3f, 0.4f};
  mil_program *p = classify_prog(4, NULL, classes);
  mil_interp *ip = NULL;
  run_classify(p, probs, 4, &ip);
  const mil_tensor *label = mil_interp_output_at(ip, 0);
  assert_int_equal(label->dtype, MIL_DT_INT64);
  assert_int_equal(((const int64_t *)label->data)[0], 40);
  const mil_interp_dict *dict = mil_interp_output_dict(ip, 1);
  assert_non_null(dict);
  assert_int_equal(dict->key_dtype, MIL_DT_INT64);
  assert_null(dict->str_keys);
  for (int i = 0; i < 4; i++) assert_int_equal(dict->int_keys[i], classes[i]);
  mil_interp_free(ip);
  mil_program_free(p);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_every_registry_op_runs),
      cmocka_unit_test(test_classify_strings),
      cmocka_unit_test(test_classify_int64),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
