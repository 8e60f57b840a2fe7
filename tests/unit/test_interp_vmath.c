/* The interpreter's vectorized math (src/interp/vmath.h) against libm in
 * double: exp within 2 ulp (subnormal results within 2 * 2^-149),
 * sigmoid / silu / the sigmoid form of gelu within 4 ulp (results below
 * 2^-100 in magnitude: within 2^-100), special values
 * (NaN, +-inf, overflow, underflow), for the portable bodies and, on a CPU
 * with AVX2/FMA or AVX-512, the vector bodies; the AVX-512 bodies' results
 * equal the AVX2 bodies' bit for bit, and swish is sigmoid times x. Lengths that are not multiples of 8 check
 * the vector tails; results computed in place must equal out-of-place ones. */
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

#define N 200003

/* distance in ulp of fp32 `got` from the double `want` (rounded to fp32's
 * spacing at want's magnitude; the spacing of the smallest normal below) */
static double ulps(float got, double want) {
  if (isnan(want)) return isnan(got) ? 0 : 1e30;
  if (isinf((float)want) || isinf(got)) return got == (float)want ? 0 : 1e30; /* overflow as fp32 rounds it */
  double a = fabs(want);
  int e;
  frexp(a > 1.1754943508222875e-38 ? a : 1.1754943508222875e-38, &e);
  double spacing = ldexp(1.0, e - 24);
  return fabs((double)got - want) / spacing;
}

static float *inputs(size_t *n) {
  float *x = malloc(N * sizeof *x);
  assert_non_null(x);
  size_t k = 0;
  for (int i = 0; i < 150000; i++) x[k++] = -110.0f + 205.0f * (float)i / 150000.0f; /* the whole range */
  for (int i = 0; i < 40000; i++) x[k++] = -1.0f + 2.0f * (float)i / 40000.0f;       /* near 0 */
  uint32_t s = 12345;
  while (k < N - 12) { /* random bit patterns of moderate magnitude */
    s = s * 1664525u + 1013904223u;
    uint32_t b = (s & 0x807fffffu) | ((uint32_t)(100 + (s >> 24) % 34) << 23);
    memcpy(&x[k++], &b, sizeof b);
  }
  const float sp[] = {0.0f, -0.0f, INFINITY, -INFINITY, NAN, 88.72f, 88.73f, -87.3f, -103.9f, -104.5f, 1e-30f, -1e-30f};
  for (size_t i = 0; i < sizeof sp / sizeof sp[0]; i++) x[k++] = sp[i];
  *n = k;
  return x;
}

typedef void (*vfn)(const float *, float *, int64_t);
typedef double (*rfn)(double);

static double r_exp(double x) { return exp(x); }
static double r_sigmoid(double x) { return 1.0 / (1.0 + exp(-x)); }
static double r_silu(double x) { return x / (1.0 + exp(-x)); }
/* the kernel's fp32 product -1.702f * x, then the rest in double */
static double r_gelu_sigm(double x) { return x / (1.0 + exp((double)(-1.702f * (float)x))); }
/* gelu EXACT: x Phi(x) */
static double r_gelu_erf(double x) { return 0.5 * x * erfc(-x / sqrt(2.0)); }
/* gelu TANH_APPROXIMATION, 0.5 x (1 + tanh u), written as x / (1 + exp(-2u))
 * to keep the negative tail's relative precision in double */
static double r_gelu_tanh(double x) { return x / (1.0 + exp(-2.0 * 0.7978845608028654 * (x + 0.044715 * x * x * x))); }

/* the gelu forms: relative error (results below 2^-100: absolute), over
 * the sweep */
static void check_rel(vfn f, rfn ref, double bound, const char *name) {
  size_t n;
  float *x = inputs(&n), *y = malloc(n * sizeof *y);
  assert_non_null(y);
  f(x, y, (int64_t)n);
  double worst = 0;
  size_t at = 0;
  for (size_t i = 0; i < n; i++) {
    double want = ref((double)x[i]), e;
    if (isnan(want) || isinf(want)) e = (isnan(want) ? isnan(y[i]) : (double)y[i] == want) ? 0 : 1e30;
    else if (fabs(want) < ldexp(1.0, -100)) e = fabs((double)y[i] - want) <= ldexp(1.0, -100) ? 0 : 1e30;
    else e = fabs((double)y[i] - want) / fabs(want);
    if (e > worst) worst = e, at = i;
  }
  printf("%s (%s body): worst relative error %.3g at x = %.9g (got %.9g, want %.9g)\n", name,
         interp_vmath_body(), worst, (double)x[at], (double)y[at], ref((double)x[at]));
  assert_true(worst <= bound);
  free(x), free(y);
}

static void check(vfn f, rfn ref, double bound, const char *name) {
  size_t n;
  float *x = inputs(&n), *y = malloc(n * sizeof *y), *z = malloc(n * sizeof *z);
  assert_non_null(y);
  assert_non_null(z);
  f(x, y, (int64_t)n);
  double worst = 0;
  size_t at = 0;
  for (size_t i = 0; i < n; i++) {
    double want = ref((double)x[i]);
    double u;
    if (f == interp_vexp && fabs(want) < 1.1754943508222875e-38)
      u = fabs((double)y[i] - want) / ldexp(1.0, -149); /* subnormal: absolute, in units of 2^-149 */
    else if (f != interp_vexp && fabs(want) < ldexp(1.0, -100))
      u = fabs((double)y[i] - want) <= ldexp(1.0, -100) ? 0 : 1e30; /* tiny results: absolute */
    else
      u = ulps(y[i], want);
    if (u > worst) worst = u, at = i;
  }
  printf("%s (%s body): worst %.3f ulp at x = %.9g (got %.9g)\n", name, interp_vmath_body(), worst,
         (double)x[at], (double)y[at]);
  assert_true(worst <= bound);
  /* odd lengths (vector tails) and in place give the same values */
  for (int64_t m = 1; m < 20; m++) {
    memcpy(z, x + 1000, (size_t)m * sizeof *z);
    f(z, z, m);
    assert_memory_equal(z, y + 1000, (size_t)m * sizeof *z);
  }
  free(x), free(y), free(z);
}

static void all(void) {
  check(interp_vexp, r_exp, 2.0, "exp");
  check(interp_vsigmoid, r_sigmoid, 4.0, "sigmoid");
  check(interp_vsilu, r_silu, 4.0, "silu");
  check(interp_vgelu_sigm, r_gelu_sigm, 4.0, "gelu_sigmoid");
  check_rel(interp_vgelu_erf, r_gelu_erf, 5e-6, "gelu_erf");
  check_rel(interp_vgelu_tanh, r_gelu_tanh, 2e-5, "gelu_tanh");
}

static void specials(void) {
  const float x[] = {NAN, INFINITY, -INFINITY, 89.0f, -200.0f, 0.0f};
  float y[6];
  interp_vexp(x, y, 6);
  assert_true(isnan(y[0]));
  assert_true(isinf(y[1]) && y[1] > 0);
  assert_true(y[2] == 0.0f);
  assert_true(isinf(y[3]));
  assert_true(y[4] == 0.0f);
  assert_true(y[5] == 1.0f);
  interp_vsigmoid(x, y, 6);
  assert_true(isnan(y[0]));
  assert_true(y[1] == 1.0f && y[2] == 0.0f && y[3] == 1.0f && y[4] == 0.0f && y[5] == 0.5f);
}

/* interp_vswish is interp_vsigmoid followed by an fp32 product, bit for bit */
static void swish_is_sigmoid_times_x(void) {
  size_t n;
  float *x = inputs(&n), *y = malloc(n * sizeof *y), *z = malloc(n * sizeof *z);
  assert_non_null(y);
  assert_non_null(z);
  interp_vswish(x, y, (int64_t)n);
  interp_vsigmoid(x, z, (int64_t)n);
  for (size_t i = 0; i < n; i++) {
    float want = x[i] * z[i];
    if (memcmp(&y[i], &want, sizeof want) != 0 && !(isnan(y[i]) && isnan(want)))
      fail_msg("%s swish(%.9g) = %.9g, want %.9g", interp_vmath_body(), (double)x[i], (double)y[i], (double)want);
  }
  free(x), free(y), free(z);
}

/* interp_vswish_fp16: x rounded to fp16, its sigmoid (interp_vsigmoid)
 * rounded to fp16, their fp32 product, bit for bit */
static void swish_fp16_is_rounded_sigmoid_times_x(void) {
  size_t n;
  float *x = inputs(&n), *y = malloc(n * sizeof *y), *v = malloc(n * sizeof *v), *z = malloc(n * sizeof *z);
  assert_true(y && v && z);
  interp_vswish_fp16(x, y, (int64_t)n);
  for (size_t i = 0; i < n; i++) v[i] = mil_fp16_to_fp32(mil_fp32_to_fp16(x[i]));
  interp_vsigmoid(v, z, (int64_t)n);
  for (size_t i = 0; i < n; i++) {
    float want = v[i] * mil_fp16_to_fp32(mil_fp32_to_fp16(z[i]));
    if (memcmp(&y[i], &want, sizeof want) != 0 && !(isnan(y[i]) && isnan(want)))
      fail_msg("%s swish_fp16(%.9g) = %.9g, want %.9g", interp_vmath_body(), (double)x[i], (double)y[i], (double)want);
  }
  free(x), free(y), free(v), free(z);
}

static void body(int which) {
  if (!interp_vmath_force(which)) {
    interp_vmath_force(INTERP_VM_AUTO);
    skip();
  }
  all();
  specials();
  swish_is_sigmoid_times_x();
  swish_fp16_is_rounded_sigmoid_times_x();
  interp_vmath_force(INTERP_VM_AUTO);
}

static void test_portable(void **st) {
  (void)st;
  assert_true(interp_vmath_force(INTERP_VM_PORTABLE));
  assert_false(interp_vmath_simd());
  body(INTERP_VM_PORTABLE);
}

static void test_avx2(void **st) {
  (void)st;
  body(INTERP_VM_AVX2);
}

static void test_avx512(void **st) {
  (void)st;
  body(INTERP_VM_AVX512);
}

/* The AVX-512 bodies give the AVX2 bodies' bits, every function, every
 * input of the sweep (and the vector tails: odd lengths). */
static void test_avx512_equals_avx2(void **st) {
  (void)st;
  if (!interp_vmath_force(INTERP_VM_AVX512) || !interp_vmath_force(INTERP_VM_AVX2)) {
    interp_vmath_force(INTERP_VM_AUTO);
    skip();
  }
  const vfn fns[] = {interp_vexp, interp_vsigmoid, interp_vsilu, interp_vgelu_sigm, interp_vgelu_erf, interp_vgelu_tanh,
                     interp_vswish, interp_vswish_fp16};
  size_t n;
  float *x = inputs(&n), *a = malloc(n * sizeof *a), *b = malloc(n * sizeof *b);
  assert_non_null(a);
  assert_non_null(b);
  for (size_t f = 0; f < sizeof fns / sizeof fns[0]; f++)
    for (int64_t len = (int64_t)n; len > (int64_t)n - 17; len--) {
      interp_vmath_force(INTERP_VM_AVX2);
      memset(a, 0, n * sizeof *a), memset(b, 0, n * sizeof *b);
      fns[f](x, a, len);
      interp_vmath_force(INTERP_VM_AVX512);
      fns[f](x, b, len);
      for (size_t i = 0; i < n; i++)
        if (memcmp(&a[i], &b[i], sizeof *a) != 0 && !(isnan(a[i]) && isnan(b[i])))
          fail_msg("function %zu, length %lld: x = %.9g: AVX2 %.9g, AVX-512 %.9g", f, (long long)len, (double)x[i],
                   (double)a[i], (double)b[i]);
    }
  interp_vmath_force(INTERP_VM_AUTO);
  free(x), free(a), free(b);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_portable),
      cmocka_unit_test(test_avx2),
      cmocka_unit_test(test_avx512),
      cmocka_unit_test(test_avx512_equals_avx2),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
