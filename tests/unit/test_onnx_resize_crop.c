/* ONNX Resize with coordinate_transformation_mode tf_crop_and_resize (the
 * gather form, ops_resize_gather.c) on a roi reaching outside the input:
 * ONNX's backend test keeps its roi inside, so the extrapolation_value
 * cases are checked here against the formula of ONNX's Operators.md
 * (x_original = start (L - 1) + i (end - start) (L - 1) / (O - 1); outside
 * [0, L - 1] the output is extrapolation_value), computed in double. */
#include <math.h>

#include "onnx_ops2_util.h"

enum { H = 4, W = 5, OH = 3, OW = 4 };

/* nearest_mode round_prefer_floor of a coordinate: round half down */
static int64_t prefer_floor(double p) { return (int64_t)ceil(p - 0.5); }

static double coord(double start, double end, int64_t L, int64_t O, int64_t i) {
  return O > 1 ? start * (double)(L - 1) + (double)i * (end - start) * (double)(L - 1) / (double)(O - 1)
               : 0.5 * (start + end) * (double)(L - 1);
}

static void test_crop_and_resize_nearest_extrapolation(void **state) {
  (void)state;
  g_opset = 13;
  g_sname = "coordinate_transformation_mode";
  g_sval = "tf_crop_and_resize";
  const char *fn[1] = {"extrapolation_value"};
  g_fnames[0] = fn[0];
  g_fvals[0] = -7.5f;
  g_nf = 1;
  io ins[3] = {{"X", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 4, {1, 1, H, W}},
               {"roi", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 1, {8}},
               {"scales", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 1, {4}}};
  io out = {"Y", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 4, {1, 1, OH, OW}};
  size_t len;
  uint8_t *buf = model("Resize", ins, 3, &out, NULL, NULL, NULL, 0, &len);
  float x[H * W], y[OH * OW];
  for (int i = 0; i < H * W; i++) x[i] = (float)(1 + i);
  /* rows from -0.5 to 0.5 of the input, columns from 0.2 to 1.3 */
  float roi[8] = {0, 0, -0.5f, 0.2f, 1, 1, 0.5f, 1.3f};
  float scales[4] = {1, 1, (float)OH / H, (float)OW / W};
  run(buf, len, ins, 3, (void *[]){x, roi, scales}, MIL_DT_FP32, y, OH * OW);
  int outside = 0;
  for (int64_t i = 0; i < OH; i++)
    for (int64_t j = 0; j < OW; j++) {
      double ph = coord(roi[2], roi[6], H, OH, i), pw = coord(roi[3], roi[7], W, OW, j);
      bool out_of = ph < 0 || ph > H - 1 || pw < 0 || pw > W - 1;
      outside += out_of;
      double want = out_of ? -7.5 : x[prefer_floor(ph) * W + prefer_floor(pw)];
      assert_float_equal(y[i * OW + j], want, 1e-6);
    }
  /* the roi reaches outside on both axes: some outputs extrapolate, not all */
  assert_true(outside > 0 && outside < OH * OW);
  free(buf);
  g_opset = 0;
  g_sname = g_sval = NULL;
  g_nf = 0;
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_crop_and_resize_nearest_extrapolation),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
