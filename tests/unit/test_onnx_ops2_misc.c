/* ONNX Det on 3 x 3, 4 x 4 and 5 x 5 matrices (the Laplace expansion the
 * importer builds; ONNX's node tests have only 2 x 2) against the
 * determinants computed here by Gaussian elimination in double, and the
 * clear refusal of larger ones. */
#include <math.h>

#include "onnx_ops2_util.h"

static double det_ref(const float *m, int n) {
  double a[25];
  for (int i = 0; i < n * n; i++) a[i] = m[i];
  double d = 1;
  for (int k = 0; k < n; k++) {
    int p = k;
    for (int i = k + 1; i < n; i++)
      if (fabs(a[i * n + k]) > fabs(a[p * n + k])) p = i;
    if (a[p * n + k] == 0) return 0;
    if (p != k) {
      for (int j = 0; j < n; j++) {
        double t = a[k * n + j];
        a[k * n + j] = a[p * n + j];
        a[p * n + j] = t;
      }
      d = -d;
    }
    d *= a[k * n + k];
    for (int i = k + 1; i < n; i++) {
      double f = a[i * n + k] / a[k * n + k];
      for (int j = k; j < n; j++) a[i * n + j] -= f * a[k * n + j];
    }
  }
  return d;
}

static void test_det_sizes(void **state) {
  (void)state;
  enum { B = 3 };
  uint64_t s = 12345;
  for (int n = 3; n <= 5; n++) {
    io in = {"X", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 3, {B, n, n}};
    io out = {"Y", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 1, {B}};
    size_t len;
    uint8_t *buf = model("Det", &in, 1, &out, NULL, NULL, NULL, 0, &len);
    float x[B * 25], y[B];
    for (int i = 0; i < B * n * n; i++) {
      s = s * 6364136223846793005ULL + 1442695040888963407ULL;
      x[i] = (float)((int)((s >> 33) % 19) - 9) / 4.0f;
    }
    run(buf, len, &in, 1, (void *[]){x}, MIL_DT_FP32, y, B);
    for (int b = 0; b < B; b++) {
      double want = det_ref(x + b * n * n, n);
      assert_true(fabs(y[b] - want) <= 1e-4 + 1e-4 * fabs(want));
    }
    free(buf);
  }
}

static void test_det_too_large(void **state) {
  (void)state;
  io in = {"X", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 2, {6, 6}};
  io out = {"Y", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 0, {0}};
  size_t len;
  uint8_t *buf = model("Det", &in, 1, &out, NULL, NULL, NULL, 0, &len);
  mil_diag d;
  mil_diag_init(&d);
  mil_onnx_options o;
  memset(&o, 0, sizeof o);
  mil_model *m = NULL;
  assert_int_equal(mil_onnx_import_buffer(buf, len, "det.onnx", NULL, &o, &m, &d), MIL_ERR_UNSUPPORTED);
  const char *e = mil_diag_first_error(&d);
  assert_non_null(e);
  assert_non_null(strstr(e, "Det"));
  assert_non_null(strstr(e, "6 x 6"));
  mil_diag_clear(&d);
  free(buf);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_det_sizes),
      cmocka_unit_test(test_det_too_large),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
