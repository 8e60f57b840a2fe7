/* ONNX Runtime's com.microsoft contrib ops (and ai.onnx
 * SimplifiedLayerNormalization) of optimized exports through the importer:
 * each case of tests/data/onnx_contrib (cases.txt; one-node models built
 * with the onnx package's helpers by gen.py, whose expected outputs are
 * numpy computations of the contrib-op spec, checked against ONNX Runtime by
 * tools/ort/contrib_check.py) is converted for iOS15 and iOS18 (the
 * matmul / softmax and the scaled_dot_product_attention forms of the
 * attention ops), in fp32 and in the default fp16 precision, run with the
 * interpreter on test_data_set_0/input_*.pb and compared with output_*.pb:
 * the largest difference relative to the largest expected magnitude is at
 * most 1e-4 in fp32 and 3e-2 in fp16 (integer outputs exactly). Prints
 * the measured errors. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "mil/interp.h"
#include "mil/mil.h"
#include "mil/convert.h"
#include "mil/onnx.h"
#include "mil/onnx_tensor.h"
#include "mil/ops.h"

#define DATA MIL_TEST_DATA "/data/onnx_contrib"

static double elem(mil_dtype dt, const void *p, int64_t i) {
  switch (dt) {
  case MIL_DT_FP32: return ((const float *)p)[i];
  case MIL_DT_FP16: return mil_fp16_to_fp32(((const uint16_t *)p)[i]);
  case MIL_DT_INT32: return ((const int32_t *)p)[i];
  case MIL_DT_INT64: return (double)((const int64_t *)p)[i];
  case MIL_DT_BOOL: return ((const uint8_t *)p)[i] != 0;
  default: return NAN;
  }
}

static mil_onnx_tensor *read_pb(const char *dir, const char *kind, int i) {
  char path[4096];
  snprintf(path, sizeof path, "%s/test_data_set_0/%s_%d.pb", dir, kind, i);
  if (access(path, R_OK) != 0) return NULL;
  mil_diag d;
  mil_diag_init(&d);
  mil_onnx_read_opts o;
  memset(&o, 0, sizeof o);
  o.flags = MIL_ONNX_EXACT;
  mil_onnx_tensor *t = NULL;
  mil_status st = mil_onnx_tensor_read(path, &o, &t, &d);
  if (st != MIL_OK) printf("  %s\n", mil_diag_first_error(&d));
  assert_int_equal(st, MIL_OK);
  mil_diag_clear(&d);
  return t;
}

/* Converts case `name` for target / precision, runs it and returns the
 * largest relative error over its float outputs (integer outputs must be
 * exact). */
static double run_case(const char *name, int target, bool fp32) {
  char dir[2048], path[4096];
  snprintf(dir, sizeof dir, "%s/%s", DATA, name);
  snprintf(path, sizeof path, "%s/model.onnx", dir);
  mil_diag d;
  mil_diag_init(&d);
  mil_convert_options o;
  memset(&o, 0, sizeof o);
  o.fp32 = fp32;
  o.target = target;
  mil_model *m = NULL;
  mil_status st = mil_convert(path, &o, &m, &d);
  if (st != MIL_OK) printf("  %s: %s\n", name, mil_diag_first_error(&d));
  assert_int_equal(st, MIL_OK);
  mil_interp *ip = NULL;
  st = mil_interp_new(mil_model_program(m), NULL, &ip, &d);
  if (st != MIL_OK) printf("  %s: %s\n", name, mil_diag_first_error(&d));
  assert_int_equal(st, MIL_OK);
  for (int i = 0; i < mil_interp_n_inputs(ip); i++) {
    mil_onnx_tensor *t = read_pb(dir, "input", i);
    assert_non_null(t);
    mil_dtype want = mil_interp_input_type(ip, i)->dtype;
    size_t esz = mil_dtype_size(want);
    void *buf = malloc(esz * (size_t)(t->numel ? t->numel : 1));
    for (int64_t k = 0; k < t->numel; k++) {
      double v = elem(t->dtype, t->data, k);
      if (want == MIL_DT_FP32) ((float *)buf)[k] = (float)v;
      else if (want == MIL_DT_FP16) ((uint16_t *)buf)[k] = mil_fp32_to_fp16((float)v);
      else if (want == MIL_DT_INT32) ((int32_t *)buf)[k] = (int32_t)v;
      else fail_msg("%s: input %d has dtype %d", name, i, (int)want);
    }
    mil_tensor in = {want, t->rank, t->shape, buf, esz * (size_t)t->numel, t->numel};
    st = mil_interp_set_input(ip, mil_interp_input_name(ip, i), &in, &d);
    if (st != MIL_OK) printf("  %s: %s\n", name, mil_diag_first_error(&d));
    assert_int_equal(st, MIL_OK);
    free(buf);
    mil_onnx_tensor_free(t);
  }
  st = mil_interp_run(ip, NULL, &d);
  if (st != MIL_OK) printf("  %s: %s\n", name, mil_diag_first_error(&d));
  assert_int_equal(st, MIL_OK);
  double worst = 0;
  int n_out = mil_interp_n_outputs(ip);
  for (int i = 0; i < n_out; i++) {
    mil_onnx_tensor *t = read_pb(dir, "output", i);
    assert_non_null(t);
    const mil_tensor *y = mil_interp_output_at(ip, i);
    assert_non_null(y);
    assert_int_equal(y->numel, t->numel);
    assert_int_equal(y->rank, t->rank);
    for (int32_t k = 0; k < t->rank; k++) assert_int_equal(y->shape[k], t->shape[k]);
    double big = 0, err = 0;
    for (int64_t k = 0; k < t->numel; k++) {
      double a = elem(y->dtype, y->data, k), b = elem(t->dtype, t->data, k);
      if (!isfinite(a)) fail_msg("%s output %d element %lld is %g (expected %g)", name, i, (long long)k, a, b);
      if (t->dtype == MIL_DT_INT32 && a != b)
        fail_msg("%s output %d element %lld is %g, expected %g", name, i, (long long)k, a, b);
      big = fmax(big, fabs(b));
      err = fmax(err, fabs(a - b));
    }
    if (big > 0) worst = fmax(worst, err / big);
    mil_onnx_tensor_free(t);
  }
  assert_null(read_pb(dir, "input", mil_interp_n_inputs(ip))); /* every input file fed */
  assert_null(read_pb(dir, "output", n_out));                  /* every output compared */
  mil_interp_free(ip);
  mil_model_free(m);
  mil_diag_clear(&d);
  return worst;
}

static void test_case(void **state) {
  const char *name = *state;
  static const int targets[2] = {MIL_IOS15, MIL_IOS18};
  double e[4];
  for (int t = 0; t < 2; t++) {
    e[2 * t] = run_case(name, targets[t], true);
    e[2 * t + 1] = run_case(name, targets[t], false);
  }
  printf("  %-28s fp32 %.1e / %.1e  fp16 %.1e / %.1e (iOS15 / iOS18)\n", name, e[0], e[2], e[1], e[3]);
  for (int t = 0; t < 2; t++) {
    if (e[2 * t] > 1e-4) fail_msg("%s fp32 (target %d): error %g of the largest value", name, targets[t], e[2 * t]);
    if (e[2 * t + 1] > 3e-2) fail_msg("%s fp16 (target %d): error %g of the largest value", name, targets[t], e[2 * t + 1]);
  }
}

/* A refused input names the node and the input. */
static void test_refusal_names_input(void **state) {
  (void)state;
  char path[4096];
  snprintf(path, sizeof path, "%s/refuse_mha_qk/model.onnx", DATA);
  mil_diag d;
  mil_diag_init(&d);
  mil_model *m = NULL;
  assert_int_equal(mil_onnx_import(path, NULL, &m, &d), MIL_ERR_UNSUPPORTED);
  const char *msg = mil_diag_first_error(&d);
  printf("  %s\n", msg);
  assert_non_null(strstr(msg, "MultiHeadAttention"));
  assert_non_null(strstr(msg, "the_mha"));
  assert_non_null(strstr(msg, "key_padding_mask"));
  mil_diag_clear(&d);
}

int main(void) {
  FILE *f = fopen(DATA "/cases.txt", "r");
  if (!f) {
    fprintf(stderr, "no %s/cases.txt\n", DATA);
    return 1;
  }
  static char names[64][160];
  static struct CMUnitTest tests[66];
  static void *states[64];
  int n = 0;
  char line[128];
  while (n < 64 && fgets(line, sizeof line, f)) {
    if (line[0] == '#' || line[0] == '\n') continue;
    line[strcspn(line, "\r\n")] = 0;
    snprintf(names[n], sizeof names[n], "%s", line);
    states[n] = names[n];
    tests[n] = (struct CMUnitTest){names[n], test_case, NULL, NULL, states[n]};
    n++;
  }
  fclose(f);
  tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_refusal_names_input);
  return _cmocka_run_group_tests("onnx_contrib", tests, (size_t)n, NULL, NULL);
}
