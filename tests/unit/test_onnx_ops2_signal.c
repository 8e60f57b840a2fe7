/* ONNX's signal ops against their formulas computed here in double:
 *  - HannWindow / HammingWindow / BlackmanWindow, periodic and symmetric
 *    (ONNX 1.12's node tests computed them with pi = 3.1415, see
 *    tests/onnx_known_failures.txt);
 *  - a onesided DFT of a real signal (the node tests are two-sided). */
#include <math.h>

#include "onnx_ops2_util.h"

static const double PI = 3.14159265358979323846;

static void test_windows(void **state) {
  (void)state;
  static const char *const ops[3] = {"HannWindow", "HammingWindow", "BlackmanWindow"};
  static const double coef[3][3] = {{0.5, 0.5, 0}, {25.0 / 46, 21.0 / 46, 0}, {0.42, 0.5, 0.08}};
  g_opset = 17;
  for (int o = 0; o < 3; o++)
    for (int periodic = 0; periodic <= 1; periodic++) {
      io in = {"size", ONNX__TENSOR_PROTO__DATA_TYPE__INT32, 0, {0}};
      io out = {"y", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 1, {12}};
      const char *names[1] = {"periodic"};
      const int64_t pv[1] = {periodic};
      const int64_t *vals[1] = {pv};
      int cnt[1] = {-1};
      size_t len;
      uint8_t *buf = model(ops[o], &in, 1, &out, names, vals, cnt, 1, &len);
      int32_t size = 12;
      float y[12];
      run(buf, len, &in, 1, (void *[]){&size}, MIL_DT_FP32, y, 12);
      double N = periodic ? 12 : 11;
      for (int i = 0; i < 12; i++) {
        double t = 2 * PI * i / N;
        double want = coef[o][0] - coef[o][1] * cos(t) + coef[o][2] * cos(2 * t);
        assert_true(fabs(y[i] - want) <= 1e-6);
      }
      free(buf);
    }
  g_opset = 0;
}

static void test_dft_onesided(void **state) {
  (void)state;
  enum { L = 9, KB = L / 2 + 1 };
  g_opset = 17;
  io in = {"x", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 3, {2, L, 1}};
  io out = {"y", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 3, {2, KB, 2}};
  const char *names[1] = {"onesided"};
  const int64_t one[1] = {1};
  const int64_t *vals[1] = {one};
  int cnt[1] = {-1};
  size_t len;
  uint8_t *buf = model("DFT", &in, 1, &out, names, vals, cnt, 1, &len);
  float x[2 * L], y[2 * KB * 2];
  for (int i = 0; i < 2 * L; i++) x[i] = (float)sin(0.7 * i) + (float)(i % 3);
  run(buf, len, &in, 1, (void *[]){x}, MIL_DT_FP32, y, 2 * KB * 2);
  for (int b = 0; b < 2; b++)
    for (int k = 0; k < KB; k++) {
      double re = 0, im = 0;
      for (int m = 0; m < L; m++) {
        re += x[b * L + m] * cos(2 * PI * k * m / L);
        im -= x[b * L + m] * sin(2 * PI * k * m / L);
      }
      assert_true(fabs(y[(b * KB + k) * 2] - re) <= 1e-4);
      assert_true(fabs(y[(b * KB + k) * 2 + 1] - im) <= 1e-4);
    }
  free(buf);
  g_opset = 0;
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_windows),
      cmocka_unit_test(test_dft_onesided),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
