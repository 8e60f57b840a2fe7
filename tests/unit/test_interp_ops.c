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
  assert_true(mil_interp_output_is_label(ip, 0));
  assert_false(mil_interp_output_is_label(ip, 1));
  const mil_interp_dict *dict = mil_interp_output_dict(ip, 1);
  assert_non_null(dict);
  assert_int_equal(dict->key_dtype, MIL_DT_INT64);
  assert_null(dict->str_keys);
  for (int i = 0; i < 4; i++) assert_int_equal(dict->int_keys[i], classes[i]);
  mil_interp_free(ip);
  mil_program_free(p);
}

/* ---------- complex dialect ---------- */

/* Runs `body` (ops on %x, ending in outputs %re and %im) on x and checks
 * both outputs. */
static void run_complex(const char *xtype, const int64_t *xs, int xr, const float *x, const char *body,
                        const char *out_type, int orank, const int64_t *os, int n, const double *want_re,
                        const double *want_im) {
  char text[2048];
  snprintf(text, sizeof text,
           "main[CoreML5](%%x: (%s)(Tensor)) {\n  block0() {\n%s"
           "    %%re: (%s)(Tensor) = complex_real(data=%%c, name=\"re\")\n"
           "    %%im: (%s)(Tensor) = complex_imag(data=%%c, name=\"im\")\n"
           "  } -> (%%re, %%im)\n}\n",
           xtype, body, out_type, out_type);
  ifix f;
  ifix_open(&f, text);
  ifix_set(&f, "x", MIL_DT_FP32, xr, xs, x);
  ifix_run(&f);
  ifix_expect(&f, 0, orank, os, n, want_re, 1e-4);
  ifix_expect(&f, 1, orank, os, n, want_im, 1e-4);
  ifix_close(&f);
}

static void test_complex_fft(void **state) {
  (void)state;
  static const float x[] = {1, 2, 3, 4};
  static const int64_t s4[] = {4}, s3[] = {3};
  /* DFT of [1, 2, 3, 4]: [10, -2+2i, -2, -2-2i] */
  run_complex("4,fp32", s4, 1, x, "    %c: (4,complex64)(Tensor) = complex_fft(data=%x, name=\"c\")\n", "4,fp32", 1,
              s4, 4, (const double[]){10, -2, -2, -2}, (const double[]){0, 2, 0, -2});
  run_complex("4,fp32", s4, 1, x,
              "    %c: (4,complex64)(Tensor) = complex_fft(data=%x, norm=\"ortho\", name=\"c\")\n", "4,fp32", 1,
              s4, 4, (const double[]){5, -1, -1, -1}, (const double[]){0, 1, 0, -1});
  run_complex("4,fp32", s4, 1, x, "    %c: (3,complex64)(Tensor) = complex_rfft(data=%x, name=\"c\")\n", "3,fp32", 1,
              s3, 3, (const double[]){10, -2, -2}, (const double[]){0, 2, 0});
  /* ifft(fft(x)) = x; irfft(rfft(x)) = x */
  run_complex("4,fp32", s4, 1, x,
              "    %f: (4,complex64)(Tensor) = complex_fft(data=%x, name=\"f\")\n"
              "    %c: (4,complex64)(Tensor) = complex_ifft(data=%f, name=\"c\")\n",
              "4,fp32", 1, s4, 4, (const double[]){1, 2, 3, 4}, (const double[]){0, 0, 0, 0});
  run_complex("4,fp32", s4, 1, x,
              "    %f: (3,complex64)(Tensor) = complex_rfft(data=%x, name=\"f\")\n"
              "    %r: (4,fp32)(Tensor) = complex_irfft(data=%f, name=\"r\")\n"
              "    %z: (4,fp32)(Tensor) = mul(x=%r, y=0.0, name=\"z\")\n"
              "    %c: (4,complex64)(Tensor) = complex(real_data=%r, imag_data=%z, name=\"c\")\n",
              "4,fp32", 1, s4, 4, (const double[]){1, 2, 3, 4}, (const double[]){0, 0, 0, 0});
  /* 2-D: [[1, 2], [3, 4]] -> [[10, -2], [-4, 0]] */
  static const int64_t s22[] = {2, 2};
  run_complex("2, 2, fp32", s22, 2, x, "    %c: (2, 2, complex64)(Tensor) = complex_fftn(data=%x, name=\"c\")\n",
              "2, 2, fp32", 2, s22, 4, (const double[]){10, -2, -4, 0}, (const double[]){0, 0, 0, 0});
  /* zero-padded to n = 8 (rfftn over the last axis only): X[k] = sum x[t] e^(-i pi k t / 4),
   * X[1] = 1 - sqrt 2 - (3 + 3 sqrt 2) i, X[3] = 1 + sqrt 2 + (3 - 3 sqrt 2) i */
  static const int64_t s5[] = {5};
  run_complex("4,fp32", s4, 1, x,
              "    %c: (5,complex64)(Tensor) = complex_rfftn(data=%x, shapes=[8], name=\"c\")\n", "5,fp32", 1,
              s5, 5, (const double[]){10, 1 - 1.41421356, -2, 1 + 1.41421356, -2},
              (const double[]){0, -3 - 3 * 1.41421356, 2, 3 - 3 * 1.41421356, 0});
}

static void test_complex_stft_abs(void **state) {
  (void)state;
  static const float x[] = {1, 2, 3, 4, 5, 6, 7, 8};
  static const int64_t s8[] = {8}, s33[] = {3, 3};
  /* frames [1 2 3 4], [3 4 5 6], [5 6 7 8]: bins [sum, -2+2i, -2] */
  run_complex("8,fp32", s8, 1, x,
              "    %c: (3, 3, complex64)(Tensor) = complex_stft(input=%x, n_fft=4, hop_length=2, name=\"c\")\n",
              "3, 3, fp32", 2, s33, 9, (const double[]){10, 18, 26, -2, -2, -2, -2, -2, -2},
              (const double[]){0, 0, 0, 2, 2, 2, 0, 0, 0});
  static const char *text = "main[CoreML5](%x: (2,fp32)(Tensor)) {\n  block0() {\n"
                            "    %c: (2,complex64)(Tensor) = complex(real_data=%x, imag_data=[4.0, -12.0], name=\"c\")\n"
                            "    %a: (2,fp32)(Tensor) = complex_abs(x=%c, name=\"a\")\n"
                            "  } -> (%a)\n}\n";
  static const float re[] = {3, 5};
  static const int64_t s2[] = {2};
  ifix f;
  ifix_open(&f, text);
  ifix_set(&f, "x", MIL_DT_FP32, 1, s2, re);
  ifix_run(&f);
  ifix_expect(&f, 0, 1, s2, 2, (const double[]){5, 13}, 1e-5);
  ifix_close(&f);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_every_registry_op_runs),
      cmocka_unit_test(test_classify_strings),
      cmocka_unit_test(test_classify_int64),
      cmocka_unit_test(test_complex_fft),
      cmocka_unit_test(test_complex_stft_abs),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
