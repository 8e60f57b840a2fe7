/* softmax's kernel (src/interp/activation.c) against a double reference
 * along the last axis and along a middle axis: rows holding an attention
 * mask's -inf, differences below -87.33 (whose exp is below fp32's
 * smallest normal: taken as 0) and ordinary values; every result within
 * 1e-6 of the reference (absolute) and the masked ones exactly 0. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "interp/vmath.h"
#include "interp_fixture.h"
#include "mil/interp.h"
#include "mil/mil.h"
#include "mil/text.h"

#define R 6
#define N 37

static void run_axis(int axis) {
  char prog[512];
  snprintf(prog, sizeof prog,
           "main[CoreML6](%%x: (%d, %d, fp32)(Tensor)) {\n  block0() {\n"
           "    %%y: (%d, %d, fp32)(Tensor) = softmax(x=%%x, axis=%d, name=\"y\")\n  } -> (%%y)\n}\n",
           R, N, R, N, axis);
  mil_diag d;
  mil_diag_init(&d);
  mil_program *p = ifix_parse(prog, "softmax.mil");
  float x[R * N];
  uint32_t s = 5;
  for (int i = 0; i < R * N; i++) {
    s = s * 1664525u + 1013904223u;
    x[i] = (float)(s >> 8) / 16777216.0f * 8.0f - 4.0f;
  }
  for (int j = 0; j < N; j++) { /* row 1: a causal mask; row 2: far below the max */
    if (j > 5) x[1 * N + j] = -INFINITY;
    if (j % 3 == 0) x[2 * N + j] = -100.0f;
  }
  x[2 * N + 1] = 20.0f;
  mil_interp *ip = NULL;
  assert_int_equal(mil_interp_new(p, NULL, &ip, &d), MIL_OK);
  const int64_t shape[2] = {R, N};
  mil_tensor t = {MIL_DT_FP32, 2, shape, x, sizeof x, R * N};
  assert_int_equal(mil_interp_set_input(ip, "x", &t, &d), MIL_OK);
  if (mil_interp_run(ip, NULL, &d) != MIL_OK) fail_msg("%s", mil_diag_first_error(&d));
  const float *y = mil_interp_output_at(ip, 0)->data;
  int outer = axis == 1 || axis == -1 ? R : N, len = axis == 1 || axis == -1 ? N : R;
  for (int a = 0; a < outer; a++) {
    double mx = -INFINITY, sum = 0;
    for (int j = 0; j < len; j++) {
      double v = axis == 0 ? x[j * N + a] : x[a * N + j];
      mx = v > mx ? v : mx;
    }
    for (int j = 0; j < len; j++) sum += exp((axis == 0 ? x[j * N + a] : x[a * N + j]) - mx);
    for (int j = 0; j < len; j++) {
      int k = axis == 0 ? j * N + a : a * N + j;
      double want = exp(x[k] - mx) / sum;
      if (fabs(y[k] - want) > 1e-6) fail_msg("axis %d: y[%d] = %.9g, want %.9g", axis, k, (double)y[k], want);
      if (isinf(x[k]) && y[k] != 0.0f) fail_msg("axis %d: masked y[%d] = %g", axis, k, (double)y[k]);
    }
  }
  mil_interp_free(ip);
  mil_program_free(p);
  mil_diag_clear(&d);
}

static void test_softmax_masked(void **state) {
  (void)state;
  run_axis(-1);
  run_axis(0);
}

/* The AVX-512 row (softmax_row.c) against the portable one, bit for bit:
 * every length from 1 to 80 (the 16-wide loops' tails, the 8-wide sum's
 * tail) and 197, 1000; rows with NaN, +-inf, -inf masks, +-0, differences
 * below the flush bound, large and tiny values. And against softmax in
 * double: within 1e-5 relative where the row is finite. */
static float row_val(uint32_t *st, int kind) {
  *st = *st * 1664525u + 1013904223u;
  float u = (float)(*st >> 8) / 16777216.0f; /* [0, 1) */
  switch (kind) {
  case 0: return (u - 0.5f) * 20.0f;
  case 1: return u < 0.1f ? -INFINITY : (u - 0.5f) * 8.0f;         /* a mask */
  case 2: return u < 0.05f ? NAN : (u - 0.5f) * 8.0f;               /* NaN */
  case 3: return u < 0.3f ? (u < 0.15f ? 0.0f : -0.0f) : -200.0f * u; /* zeros, flushed ones */
  case 4: return u < 0.02f ? INFINITY : (u - 0.5f) * 3e4f;          /* +inf, wide range */
  default: return (u - 0.5f) * 1e-30f;                              /* tiny */
  }
}

static void test_softmax_row_bodies(void **state) {
  (void)state;
  float s[1000] = {0}, a[1000], b[1000];
  bool have512 = interp_softmax_row_avx512(s, a, 0);
  if (!have512) print_message("no AVX-512 on this CPU: the portable row only\n");
  static const int64_t extra[] = {197, 1000};
  uint32_t st = 12345;
  for (int kind = 0; kind < 6; kind++)
    for (int64_t t = 0; t < 82; t++) {
      int64_t n = t < 80 ? t + 1 : extra[t - 80];
      for (int64_t j = 0; j < n; j++) s[j] = row_val(&st, kind);
      interp_softmax_row_portable(s, a, n);
      if (have512) {
        assert_true(interp_softmax_row_avx512(s, b, n));
        if (memcmp(a, b, (size_t)n * sizeof *a) != 0)
          fail_msg("kind %d, n %lld: the AVX-512 row differs from the portable one", kind, (long long)n);
      }
      bool finite = true;
      double mx = -INFINITY, sum = 0;
      for (int64_t j = 0; j < n; j++) finite = finite && isfinite(s[j]), mx = s[j] > mx ? s[j] : mx;
      if (!finite) continue;
      for (int64_t j = 0; j < n; j++) sum += exp((double)s[j] - mx);
      for (int64_t j = 0; j < n; j++) {
        double want = exp((double)s[j] - mx) / sum;
        if ((double)s[j] - mx < -87.33) want = 0; /* flushed: below fp32's normals */
        if (fabs(a[j] - want) > 1e-5 * want + 1e-37) /* t = x - mx rounds in fp32 */
          fail_msg("kind %d, n %lld: y[%lld] = %g, want %g", kind, (long long)n, (long long)j, a[j], want);
      }
    }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_softmax_masked),
      cmocka_unit_test(test_softmax_row_bodies),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
