/* max_pool's 2D kernel (src/interp/pool.c: row-wise with the windows that
 * lie inside the input folded without bounds) against a reference written
 * here from coremltools' definition: every output is the largest input in
 * its window (padding never counts), NaN when the window holds a NaN.
 * Geometries: kernels 1..4, strides 1..3, custom pads including pads as
 * large as the kernel allows, ceil_mode, inputs narrower than the kernel
 * plus pads, and a NaN in the input. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "interp_fixture.h"
#include "mil/interp.h"
#include "mil/mil.h"
#include "mil/text.h"

static int64_t out_size(int64_t in, int64_t k, int64_t s, int64_t pb, int64_t pa, bool ceil_mode) {
  int64_t span = in + pb + pa - k;
  if (span < 0) return 0;
  int64_t o = (ceil_mode ? (span + s - 1) / s : span / s) + 1;
  /* coremltools' rule (ops/defs/_utils.py): ceil_mode drops a last window
   * that starts past the input and its left pad, when there is a pad (with
   * no pad it keeps it: its max over no element is -inf) */
  if (ceil_mode && pb + pa > 0 && (o - 1) * s >= in + pb) o--;
  return o;
}

static void run_case(int64_t H, int64_t W, int64_t kh, int64_t kw, int64_t sh, int64_t sw, const int64_t pad[4],
                     bool ceil_mode, bool with_nan) {
  int64_t OH = out_size(H, kh, sh, pad[0], pad[1], ceil_mode), OW = out_size(W, kw, sw, pad[2], pad[3], ceil_mode);
  if (OH <= 0 || OW <= 0) return;
  char prog[2048];
  snprintf(prog, sizeof prog,
           "main[CoreML6](%%x: (1, 2, %lld, %lld, fp32)(Tensor)) {\n  block0() {\n"
           "    %%y: (1, 2, %lld, %lld, fp32)(Tensor) = max_pool(x=%%x, kernel_sizes=[%lld, %lld], strides=[%lld, %lld], "
           "pad_type=\"custom\", pad=[%lld, %lld, %lld, %lld], ceil_mode=%s, name=\"y\")\n  } -> (%%y)\n}\n",
           (long long)H, (long long)W, (long long)OH, (long long)OW, (long long)kh, (long long)kw, (long long)sh,
           (long long)sw, (long long)pad[0], (long long)pad[1], (long long)pad[2], (long long)pad[3],
           ceil_mode ? "True" : "False");
  mil_diag d;
  mil_diag_init(&d);
  mil_program *p = ifix_parse(prog, "pool.mil");
  int64_t n = 2 * H * W;
  float *x = malloc((size_t)n * sizeof *x);
  assert_non_null(x);
  uint32_t s = (uint32_t)(H * 131 + W * 17 + kh * 7 + kw);
  for (int64_t i = 0; i < n; i++) {
    s = s * 1664525u + 1013904223u;
    x[i] = (float)(s >> 8) / 16777216.0f * 10.0f - 5.0f;
  }
  if (with_nan) x[H * W + (H / 2) * W + W / 2] = NAN;
  mil_interp *ip = NULL;
  if (mil_interp_new(p, NULL, &ip, &d) != MIL_OK) fail_msg("%s\n%s", mil_diag_first_error(&d), prog);
  const int64_t shape[4] = {1, 2, H, W};
  mil_tensor t = {MIL_DT_FP32, 4, shape, x, (size_t)n * sizeof *x, n};
  assert_int_equal(mil_interp_set_input(ip, "x", &t, &d), MIL_OK);
  if (mil_interp_run(ip, NULL, &d) != MIL_OK) fail_msg("%s", mil_diag_first_error(&d));
  const mil_tensor *y = mil_interp_output_at(ip, 0);
  assert_int_equal(y->numel, 2 * OH * OW);
  const float *yv = y->data;
  for (int64_t c = 0; c < 2; c++)
    for (int64_t oh = 0; oh < OH; oh++)
      for (int64_t ow = 0; ow < OW; ow++) {
        float m = -INFINITY;
        bool nan = false;
        for (int64_t i = oh * sh - pad[0]; i < oh * sh - pad[0] + kh; i++)
          for (int64_t j = ow * sw - pad[2]; j < ow * sw - pad[2] + kw; j++) {
            if (i < 0 || i >= H || j < 0 || j >= W) continue;
            float v = x[(c * H + i) * W + j];
            if (isnan(v)) nan = true;
            else if (v > m) m = v;
          }
        float got = yv[(c * OH + oh) * OW + ow];
        if (nan ? !isnan(got) : got != m)
          fail_msg("H %lld W %lld k %lldx%lld s %lldx%lld pad %lld,%lld,%lld,%lld ceil %d: y[%lld,%lld,%lld] = %g, want %g",
                   (long long)H, (long long)W, (long long)kh, (long long)kw, (long long)sh, (long long)sw,
                   (long long)pad[0], (long long)pad[1], (long long)pad[2], (long long)pad[3], ceil_mode, (long long)c,
                   (long long)oh, (long long)ow, (double)got, nan ? (double)NAN : (double)m);
      }
  mil_interp_free(ip);
  mil_program_free(p);
  free(x);
  mil_diag_clear(&d);
}

static void test_max_pool_2d(void **state) {
  (void)state;
  const int64_t sizes[][2] = {{7, 9}, {5, 3}, {2, 11}, {12, 12}, {1, 6}};
  int cases = 0;
  for (size_t z = 0; z < sizeof sizes / sizeof sizes[0]; z++)
    for (int64_t k = 1; k <= 4; k++)
      for (int64_t st = 1; st <= 3; st++)
        for (int64_t pd = 0; pd < k; pd++)
          for (int cm = 0; cm < 2; cm++) {
            /* ceil_mode needs symmetric pads */
            const int64_t q = pd / 2, pad[4] = {cm ? q : pd, cm ? q : k - 1 - pd, cm ? q : k - 1 - pd, cm ? q : pd};
            run_case(sizes[z][0], sizes[z][1], k, k == 4 ? 2 : k, st, st == 3 ? 1 : st, pad, cm, (z + k + st) % 3 == 0);
            cases++;
          }
  assert_true(cases > 200);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_max_pool_2d),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
