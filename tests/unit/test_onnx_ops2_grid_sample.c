/* ONNX GridSample where its semantics differ from MIL resample's own
 * (onnx/reference/ops/op_grid_sample.py, docs/Operators.md GridSample):
 * nearest rounds the unnormalized point half to even, and reflection
 * reflects about the borders [-0.5, d-0.5] without align_corners, [0, d-1]
 * with it. The expected values are worked out here from those definitions
 * on a one-row image, so each point's unnormalized x is exact. */
#include <math.h>

#include "onnx_ops2_util.h"

/* GridSample (opset 16) of X (1, 1, 1, w) at the n points (gx[i], 0),
 * with align_corners, mode and padding_mode (NULL: the default). */
static void grid_sample(const float *xv, int w, const float *gx, int n, int align, const char *mode, const char *pad,
                        float *y) {
  const int F = ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT;
  io ins[2] = {{"X", F, 4, {1, 1, 1, w}}, {"G", F, 4, {1, 1, n, 2}}};
  io out = {"Y", F, 4, {1, 1, 1, n}};
  float grid[16];
  for (int i = 0; i < n; i++) grid[2 * i] = gx[i], grid[2 * i + 1] = 0;
  g_opset = 16;
  g_sname = mode ? "mode" : pad ? "padding_mode" : NULL;
  g_sval = mode ? mode : pad;
  g_sname2 = mode && pad ? "padding_mode" : NULL;
  g_sval2 = pad;
  const char *names[1] = {"align_corners"};
  const int64_t av[1] = {align}, *vals[1] = {av};
  const int cnt[1] = {-1};
  size_t len;
  uint8_t *buf = model("GridSample", ins, 2, &out, names, vals, cnt, 1, &len);
  g_opset = 0, g_sname = g_sval = g_sname2 = g_sval2 = NULL;
  run(buf, len, ins, 2, (void *[]){(void *)xv, grid}, MIL_DT_FP32, y, n);
  free(buf);
}

/* nearest, zeros, no align_corners on w = 4: x = ((g + 1) 4 - 1) / 2 =
 * -0.5, 1.5, 2.5, 0.5, 3.5 round half to even to 0, 2, 2, 0, 4; pixel 4
 * is outside (0). Rounding half up would read 20, 30, 40, 20 and 0. */
static void test_grid_sample_nearest_half_even(void **state) {
  (void)state;
  const float x[4] = {10, 20, 30, 40}, g[5] = {-1, 0, 0.5f, -0.5f, 1};
  float y[5];
  grid_sample(x, 4, g, 5, 0, "nearest", NULL, y);
  const float want[5] = {10, 30, 30, 10, 0};
  for (int i = 0; i < 5; i++) assert_true(y[i] == want[i]);
}

/* nearest, reflection, align_corners on w = 4: x = (g + 1) / 2 * 3 =
 * -0.75, 3.75, 1.5, 0.75, 3 round to -1, 4, 2, 1, 3; -1 and 4 reflect
 * about [0, 3] to 1 and 2. */
static void test_grid_sample_nearest_reflection(void **state) {
  (void)state;
  const float x[4] = {10, 20, 30, 40}, g[5] = {-1.5f, 1.5f, 0, -0.5f, 1};
  float y[5];
  grid_sample(x, 4, g, 5, 1, "nearest", "reflection", y);
  const float want[5] = {20, 30, 30, 20, 40};
  for (int i = 0; i < 5; i++) assert_true(y[i] == want[i]);
}

/* bilinear, reflection, no align_corners on w = 3 (borders -0.5, 2.5):
 * x = ((g + 1) 3 - 1) / 2 = -0.5 (taps -1 and 0, -1 reflecting to 0),
 * -2 (reflects to 1), 4 (to 1), 3.25 (to 1.75: 2 * 0.25 + 3 * 0.75),
 * -3.5 (reflects twice, to 2.5: taps 2 and 3, 3 reflecting to 2).
 * Reflecting about the edge pixels' centers would give 1, 3, 1, 2.25, 2. */
static void test_grid_sample_reflection_edges(void **state) {
  (void)state;
  const float x[3] = {1, 2, 3}, g[5] = {-1, -2, 2, 1.5f, -3};
  float y[5];
  grid_sample(x, 3, g, 5, 0, NULL, "reflection", y);
  const float want[5] = {1, 2, 2, 2.75f, 3};
  for (int i = 0; i < 5; i++) assert_true(fabsf(y[i] - want[i]) <= 1e-6f);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_grid_sample_nearest_half_even),
      cmocka_unit_test(test_grid_sample_nearest_reflection),
      cmocka_unit_test(test_grid_sample_reflection_edges),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
