/* Interpreter kernels of slice_by_index (src/interp/tensor.c: a view for a
 * contiguous selection, else copied rows) and of 2-D max_pool's row path
 * (src/interp/pool.c), against expected values computed here from the
 * index rules (Python slices; max over the window's elements inside the
 * input, a NaN in the window giving NaN). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <cmocka.h>

#include "interp_fixture.h"

static const char *SLICE_PROG =
    "main[CoreML6](%x: (1, 6, 3, 4, fp32)(Tensor), %z: (2, 5, 4, int32)(Tensor)) {\n"
    "  block0() {\n"
    "    %a: (1, 3, 3, 4, fp32)(Tensor) = slice_by_index(x=%x, begin=[0, 3, 0, 0], end=[1, 6, 3, 4], name=\"a\")\n"
    "    %a2: (1, 3, 3, 4, fp32)(Tensor) = add(x=%a, y=%a, name=\"a2\")\n"
    "    %b: (1, 3, 3, 2, fp32)(Tensor) = slice_by_index(x=%x, begin=[0, 1, 0, 1], end=[1, 6, 0, 4], "
    "stride=[1, 2, -1, 2], begin_mask=[False, False, True, False], end_mask=[False, False, True, False], name=\"b\")\n"
    "    %c: (3, fp32)(Tensor) = slice_by_index(x=%x, begin=[0, 2, 0, 1], end=[1, 3, 3, 2], "
    "squeeze_mask=[True, True, False, True], name=\"c\")\n"
    "    %d: (2, 2, 4, int32)(Tensor) = slice_by_index(x=%z, begin=[0, -2, 0], end=[2, 5, 4], name=\"d\")\n"
    "  } -> (%a, %a2, %b, %c, %d)\n"
    "}\n";

static void test_slice_by_index(void **state) {
  (void)state;
  ifix f;
  ifix_open(&f, SLICE_PROG);
  float x[72];
  int32_t z[40];
  for (int i = 0; i < 72; i++) x[i] = (float)i;
  for (int i = 0; i < 40; i++) z[i] = 1000 + i;
  int64_t xs[4] = {1, 6, 3, 4}, zs[3] = {2, 5, 4};
  ifix_set(&f, "x", MIL_DT_FP32, 4, xs, x);
  ifix_set(&f, "z", MIL_DT_INT32, 3, zs, z);
  for (int run = 0; run < 2; run++) {
    ifix_run(&f);
    double a[36], a2[36], b[18], c[3], d[16];
    int k = 0;
    for (int ch = 3; ch < 6; ch++) /* x[0, 3:6] */
      for (int i = 0; i < 12; i++, k++) a[k] = ch * 12 + i, a2[k] = 2.0 * a[k];
    k = 0;
    for (int ch = 1; ch < 6; ch += 2) /* x[0, 1:6:2, ::-1, 1:4:2] */
      for (int h = 2; h >= 0; h--)
        for (int w = 1; w < 4; w += 2) b[k++] = ch * 12 + h * 4 + w;
    for (int h = 0; h < 3; h++) c[h] = 2 * 12 + h * 4 + 1; /* x[0, 2, :, 1] */
    k = 0;
    for (int n = 0; n < 2; n++) /* z[:, -2:5, :] = z[:, 3:5, :] */
      for (int ch = 3; ch < 5; ch++)
        for (int w = 0; w < 4; w++) d[k++] = 1000 + (n * 5 + ch) * 4 + w;
    int64_t as[4] = {1, 3, 3, 4}, bs[4] = {1, 3, 3, 2}, cs[1] = {3}, ds[3] = {2, 2, 4};
    ifix_expect(&f, 0, 4, as, 36, a, 0);
    ifix_expect(&f, 1, 4, as, 36, a2, 0);
    ifix_expect(&f, 2, 4, bs, 18, b, 0);
    ifix_expect(&f, 3, 1, cs, 3, c, 0);
    ifix_expect(&f, 4, 3, ds, 16, d, 0);
  }
  ifix_close(&f);
}

#define PH 7
#define PW 9

static const char *POOL_PROG =
    "main[CoreML6](%x: (1, 2, 7, 9, fp32)(Tensor)) {\n"
    "  block0() {\n"
    "    %m: (1, 2, 4, 5, fp32)(Tensor) = max_pool(x=%x, kernel_sizes=[3, 3], strides=[2, 2], pad_type=\"custom\", "
    "pad=[1, 1, 1, 1], ceil_mode=False, name=\"m\")\n"
    "    %n: (1, 2, 6, 7, fp32)(Tensor) = max_pool(x=%x, kernel_sizes=[2, 3], strides=[1, 1], pad_type=\"valid\", "
    "ceil_mode=False, name=\"n\")\n"
    "  } -> (%m, %n)\n"
    "}\n";

/* max over the window rows [h0, h0+kh) x cols [w0, w0+kw) inside the plane */
static double window_max(const float *plane, int h0, int w0, int kh, int kw) {
  double m = -INFINITY;
  bool nan = false;
  for (int h = h0; h < h0 + kh; h++)
    for (int w = w0; w < w0 + kw; w++) {
      if (h < 0 || h >= PH || w < 0 || w >= PW) continue;
      float v = plane[h * PW + w];
      if (v != v) nan = true;
      else if (v > m) m = v;
    }
  return nan ? NAN : m;
}

static void expect_pool(ifix *f, int out, int oh, int ow, int kh, int kw, int s, int pad, const float *x) {
  const mil_tensor *t = mil_interp_output_at(f->ip, out);
  assert_non_null(t);
  assert_int_equal(t->numel, 2 * oh * ow);
  const float *y = t->data;
  for (int ch = 0; ch < 2; ch++)
    for (int i = 0; i < oh; i++)
      for (int j = 0; j < ow; j++) {
        double want = window_max(x + ch * PH * PW, i * s - pad, j * s - pad, kh, kw);
        float got = y[(ch * oh + i) * ow + j];
        if (want != want ? got == got : got != want)
          fail_msg("output %d [%d, %d, %d]: %g, expected %g", out, ch, i, j, got, want);
      }
}

static void test_max_pool_rows(void **state) {
  (void)state;
  ifix f;
  ifix_open(&f, POOL_PROG);
  float x[2 * PH * PW];
  for (int i = 0; i < 2 * PH * PW; i++) x[i] = (float)((i * 29 + 5) % 23) - 11.5f;
  x[10] = NAN;       /* channel 0, row 1, col 1 */
  x[PH * PW + 62] = NAN; /* channel 1, last row */
  x[5] = -INFINITY;
  int64_t xs[4] = {1, 2, PH, PW};
  ifix_set(&f, "x", MIL_DT_FP32, 4, xs, x);
  ifix_run(&f);
  expect_pool(&f, 0, 4, 5, 3, 3, 2, 1, x);
  expect_pool(&f, 1, 6, 7, 2, 3, 1, 0, x);
  ifix_close(&f);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_slice_by_index),
      cmocka_unit_test(test_max_pool_rows),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
