/* ONNX MatMulInteger / ConvInteger / QLinearMatMul with an inner length
 * beyond what one fp32 dot product holds exactly (K * 255 * 255 >= 2^24,
 * where the importer splits the second operand): the outputs must equal
 * the int32 sums computed here. ONNX's node tests (the conformance
 * runner) only have short ones. */
#include "onnx_ops2_util.h"

static uint64_t g_rng = 0x9E3779B97F4A7C15ULL;
static int32_t rnd(int32_t lo, int32_t hi) {
  g_rng ^= g_rng << 13;
  g_rng ^= g_rng >> 7;
  g_rng ^= g_rng << 17;
  return lo + (int32_t)((g_rng >> 33) % (uint64_t)(hi - lo + 1));
}

enum { U8 = ONNX__TENSOR_PROTO__DATA_TYPE__UINT8, I8 = ONNX__TENSOR_PROTO__DATA_TYPE__INT8,
       I32 = ONNX__TENSOR_PROTO__DATA_TYPE__INT32 };

/* MatMulInteger [3, 400] x [400, 2], extreme values (sums near 400 * 255^2). */
static void test_matmul_integer_long(void **state) {
  (void)state;
  enum { M = 3, KK = 400, N = 2 };
  io ins[4] = {{"A", U8, 2, {M, KK}}, {"B", U8, 2, {KK, N}}, {"a_zero_point", U8, 0, {0}}, {"b_zero_point", U8, 0, {0}}};
  io out = {"Y", I32, 2, {M, N}};
  size_t len;
  uint8_t *buf = model("MatMulInteger", ins, 4, &out, NULL, NULL, NULL, 0, &len);
  static int32_t a[M * KK], b[KK * N];
  int32_t azp = 0, bzp = 255, y[M * N];
  for (int i = 0; i < M * KK; i++) a[i] = i % 7 == 0 ? rnd(0, 255) : 255;
  for (int i = 0; i < KK * N; i++) b[i] = i % 5 == 0 ? rnd(0, 255) : 0;
  run(buf, len, ins, 4, (void *[]){a, b, &azp, &bzp}, MIL_DT_INT32, y, M * N);
  for (int i = 0; i < M; i++)
    for (int j = 0; j < N; j++) {
      int64_t s = 0;
      for (int k = 0; k < KK; k++) s += (int64_t)(a[i * KK + k] - azp) * (b[k * N + j] - bzp);
      assert_int_equal(y[i * N + j], s);
    }
  free(buf);
}

/* ConvInteger x [1, 64, 4, 4] (uint8), w [2, 64, 3, 3] (int8, K = 576), pads 1. */
static void test_conv_integer_long(void **state) {
  (void)state;
  enum { C = 64, H = 4, W = 4, M = 2 };
  io ins[3] = {{"x", U8, 4, {1, C, H, W}}, {"w", I8, 4, {M, C, 3, 3}}, {"x_zero_point", U8, 0, {0}}};
  io out = {"y", I32, 4, {1, M, H, W}};
  const char *names[1] = {"pads"};
  const int64_t pads[4] = {1, 1, 1, 1};
  const int64_t *vals[1] = {pads};
  int cnt[1] = {4};
  size_t len;
  uint8_t *buf = model("ConvInteger", ins, 3, &out, names, vals, cnt, 1, &len);
  static int32_t x[C * H * W], w[M * C * 9];
  int32_t xzp = 255, y[M * H * W];
  for (int i = 0; i < C * H * W; i++) x[i] = i % 3 ? 0 : rnd(0, 255);
  for (int i = 0; i < M * C * 9; i++) w[i] = i % 4 ? -128 : rnd(-128, 127);
  run(buf, len, ins, 3, (void *[]){x, w, &xzp}, MIL_DT_INT32, y, M * H * W);
  for (int m = 0; m < M; m++)
    for (int i = 0; i < H; i++)
      for (int j = 0; j < W; j++) {
        int64_t s = 0;
        for (int ch = 0; ch < C; ch++)
          for (int ki = 0; ki < 3; ki++)
            for (int kj = 0; kj < 3; kj++) {
              int yy = i + ki - 1, xx = j + kj - 1;
              if (yy < 0 || yy >= H || xx < 0 || xx >= W) continue;
              s += (int64_t)(x[(ch * H + yy) * W + xx] - xzp) * w[((m * C + ch) * 3 + ki) * 3 + kj];
            }
        assert_int_equal(y[(m * H + i) * W + j], s);
      }
  free(buf);
}

/* QLinearMatMul [2, 300] x [300, 2] to int8: round half to even of
 * acc * scale, plus the zero point, saturated to [-128, 127]. */
static void test_qlinear_matmul_int8(void **state) {
  (void)state;
  enum { M = 2, KK = 300, N = 2 };
  io ins[8] = {{"a", U8, 2, {M, KK}},          {"a_scale", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 0, {0}},
               {"a_zero_point", U8, 0, {0}},   {"b", U8, 2, {KK, N}},
               {"b_scale", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 0, {0}},
               {"b_zero_point", U8, 0, {0}},   {"y_scale", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 0, {0}},
               {"y_zero_point", I8, 0, {0}}};
  io out = {"y", I8, 2, {M, N}};
  size_t len;
  uint8_t *buf = model("QLinearMatMul", ins, 8, &out, NULL, NULL, NULL, 0, &len);
  static int32_t a[M * KK], b[KK * N];
  for (int i = 0; i < M * KK; i++) a[i] = rnd(0, 255);
  for (int i = 0; i < KK * N; i++) b[i] = rnd(0, 255);
  int32_t azp = 128, bzp = 128, yzp = -3, y[M * N];
  float as = 0.5f, bs = 0.25f, ys = 64.0f;
  run(buf, len, ins, 8, (void *[]){a, &as, &azp, b, &bs, &bzp, &ys, &yzp}, MIL_DT_INT32, y, M * N);
  for (int i = 0; i < M; i++)
    for (int j = 0; j < N; j++) {
      int64_t s = 0;
      for (int k = 0; k < KK; k++) s += (int64_t)(a[i * KK + k] - azp) * (b[k * N + j] - bzp);
      /* scale 1/512: exact in binary, so the rounding is that of s / 512 */
      double q = (double)s / 512.0, r = q - (double)(int64_t)q;
      int64_t rq = (int64_t)q;
      if (r > 0.5 || (r == 0.5 && (rq & 1))) rq++;
      else if (r < -0.5 || (r == -0.5 && (rq & 1))) rq--;
      rq += yzp;
      if (rq < -128) rq = -128;
      if (rq > 127) rq = 127;
      assert_int_equal(y[i * N + j], rq);
    }
  free(buf);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_matmul_integer_long),
      cmocka_unit_test(test_conv_integer_long),
      cmocka_unit_test(test_qlinear_matmul_int8),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
