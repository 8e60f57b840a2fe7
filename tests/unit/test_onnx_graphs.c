/* Whole ONNX graphs from tests/data/onnx_graphs (written by gen.py there
 * with the onnx package, the expected outputs computed by numpy): each is
 * imported (fp32, the default pipeline), run with the interpreter on the
 * committed inputs and compared with the numpy outputs.
 *   topo_cast_after  the input Cast listed after its users (keep_io_types)
 *   topo_cycle       a real cycle: refused, naming a node on it
 *   if_lstm          an LSTM in both branches of an If on a run-time flag,
 *                    symbolic sequence and batch, outer-scope weights */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "mil/interp.h"
#include "mil/mil.h"
#include "mil/model.h"
#include "mil/npy.h"
#include "mil/onnx.h"

static void path_of(char *buf, size_t n, const char *file) {
  snprintf(buf, n, "%s/data/onnx_graphs/%s", MIL_TEST_DATA, file);
}

static mil_npy *npy(const char *file) {
  char p[1024];
  path_of(p, sizeof p, file);
  mil_diag d;
  mil_diag_init(&d);
  mil_npy *a = NULL;
  if (mil_npy_read(p, &a, &d) != MIL_OK) fail_msg("%s: %s", p, mil_diag_first_error(&d));
  mil_diag_clear(&d);
  return a;
}

static mil_status import(const char *model, mil_model **m, mil_diag *d) {
  char p[1024];
  path_of(p, sizeof p, model);
  mil_onnx_options o;
  memset(&o, 0, sizeof o);
  o.fp32 = true;
  return mil_onnx_import(p, &o, m, d);
}

/* Imports model, feeds case.in<i>.npy to input i (by position), runs, and
 * checks every case.out<i>.npy within tol of the largest magnitude. */
static void run_case(const char *model, const char *cs, int n_in, int n_out, double tol) {
  mil_diag d;
  mil_diag_init(&d);
  mil_model *m = NULL;
  if (import(model, &m, &d) != MIL_OK) fail_msg("%s: %s", model, mil_diag_first_error(&d));
  mil_interp *ip = NULL;
  assert_int_equal(mil_interp_new(mil_model_program(m), NULL, &ip, &d), MIL_OK);
  assert_int_equal(mil_interp_n_inputs(ip), n_in);
  mil_npy *ins[8];
  for (int i = 0; i < n_in; i++) {
    char f[256];
    snprintf(f, sizeof f, "%s.in%d.npy", cs, i);
    ins[i] = npy(f);
    mil_tensor t = {ins[i]->dtype, ins[i]->rank, ins[i]->shape, ins[i]->data, ins[i]->nbytes, ins[i]->numel};
    if (mil_interp_set_input(ip, mil_interp_input_name(ip, i), &t, &d) != MIL_OK)
      fail_msg("%s input %d: %s", cs, i, mil_diag_first_error(&d));
  }
  if (mil_interp_run(ip, NULL, &d) != MIL_OK) fail_msg("%s: %s", cs, mil_diag_first_error(&d));
  assert_int_equal(mil_interp_n_outputs(ip), n_out);
  for (int i = 0; i < n_out; i++) {
    char f[256];
    snprintf(f, sizeof f, "%s.out%d.npy", cs, i);
    mil_npy *want = npy(f);
    const mil_tensor *y = mil_interp_output_at(ip, i);
    assert_int_equal(y->dtype, MIL_DT_FP32);
    assert_int_equal(y->numel, want->numel);
    assert_int_equal(y->rank, want->rank);
    for (int k = 0; k < y->rank; k++) assert_int_equal(y->shape[k], want->shape[k]);
    const float *a = y->data, *b = want->data;
    double big = 0, err = 0;
    for (int64_t k = 0; k < y->numel; k++) {
      big = fmax(big, fabs(b[k]));
      err = fmax(err, fabs((double)a[k] - b[k]));
    }
    if (err > tol * fmax(big, 1e-6)) fail_msg("%s output %d: max error %g (largest %g)", cs, i, err, big);
    mil_npy_free(want);
  }
  for (int i = 0; i < n_in; i++) mil_npy_free(ins[i]);
  mil_interp_free(ip);
  mil_model_free(m);
  mil_diag_clear(&d);
}

static void test_topo_cast_listed_after_users(void **state) {
  (void)state;
  run_case("topo_cast_after.onnx", "topo_cast_after", 1, 1, 1e-3);
}

static void test_topo_cycle_refused(void **state) {
  (void)state;
  mil_diag d;
  mil_diag_init(&d);
  mil_model *m = NULL;
  assert_int_equal(import("topo_cycle.onnx", &m, &d), MIL_ERR_INVALID);
  assert_null(m);
  const char *e = mil_diag_first_error(&d);
  assert_non_null(e);
  assert_non_null(strstr(e, "cycle"));
  assert_true(strstr(e, "relu_in_cycle") || strstr(e, "add_in_cycle"));
  mil_diag_clear(&d);
}

static void test_if_lstm_then(void **state) {
  (void)state;
  run_case("if_lstm.onnx", "if_lstm_then", 4, 2, 1e-5);
}

static void test_if_lstm_else(void **state) {
  (void)state;
  run_case("if_lstm.onnx", "if_lstm_else", 4, 2, 1e-5);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_topo_cast_listed_after_users),
      cmocka_unit_test(test_topo_cycle_refused),
      cmocka_unit_test(test_if_lstm_then),
      cmocka_unit_test(test_if_lstm_else),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
