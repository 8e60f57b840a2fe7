/* mil_format_double: Python's repr() of a double.
 *
 * Fixed cases list what CPython prints for each value. The sweeps compare
 * against an independent reference built from the C library: for each
 * digit count p = 1..17 it takes the correctly rounded p-digit decimal
 * (snprintf "%.*e") and its two neighbours, keeps the ones strtod reads
 * back as the same double, and stops at the first p that has one: those are
 * the shortest digits (the correctly rounded one is also the closest).
 */
#include <float.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "mil/text.h"

static double bits_to_double(uint64_t b) {
  double d;
  memcpy(&d, &b, sizeof d);
  return d;
}

static double f32_bits(uint32_t b) {
  float f;
  memcpy(&f, &b, sizeof f);
  return f;
}

static void expect(double v, const char *want) {
  char out[32];
  memset(out, 'x', sizeof out);
  int n = mil_format_double(out, v);
  if (strcmp(out, want) != 0 || n != (int)strlen(want)) {
    fail_msg("value %.17g: got \"%s\" (%d), want \"%s\"", v, out, n, want);
  }
}

static void test_fixed(void **state) {
  (void)state;
  expect(0.0, "0.0");
  expect(-0.0, "-0.0");
  expect(1.0, "1.0");
  expect(2.0, "2.0");
  expect(100.0, "100.0");
  expect(-1.5, "-1.5");
  expect(0.5, "0.5");
  expect(0.125, "0.125");
  expect(1234.5, "1234.5");
  expect(123456.0, "123456.0");
  expect(-123.456, "-123.456");
  expect(0.1, "0.1");
  expect(0.2, "0.2");
  expect(0.3, "0.3");
  expect(0.1 + 0.2, "0.30000000000000004");
  expect(1.0 / 3.0, "0.3333333333333333");
  expect(2.0 / 3.0, "0.6666666666666666");
  expect(4.35, "4.35");
  expect(2.675, "2.675");
  expect(3.141592653589793, "3.141592653589793");
  expect(1.0000000000000002, "1.0000000000000002");
  expect(0.9999999999999999, "0.9999999999999999");
  expect(2251799813685248.5, "2251799813685248.5");
  /* positional down to 1e-4, exponent form below */
  expect(0.001, "0.001");
  expect(0.0001, "0.0001");
  expect(0.00012, "0.00012");
  expect(0.00015, "0.00015");
  expect(1e-05, "1e-05");
  expect(1.5e-07, "1.5e-07");
  expect(1e-07, "1e-07");
  expect(9.5367431640625e-07, "9.5367431640625e-07");
  expect(1e-100, "1e-100");
  /* positional below 1e16, exponent form from there */
  expect(1e15, "1000000000000000.0");
  expect(9007199254740992.0, "9007199254740992.0");
  expect(1e16, "1e+16");
  expect(1.5e16, "1.5e+16");
  expect(18014398509481984.0, "1.8014398509481984e+16");
  expect(123456789012345680.0, "1.2345678901234568e+17");
  expect(9223372036854775808.0, "9.223372036854776e+18");
  expect(18446744073709551616.0, "1.8446744073709552e+19");
  expect(1e21, "1e+21");
  expect(1e22, "1e+22");
  expect(1e23, "1e+23");
  expect(1e100, "1e+100");
  expect(1267650600228229401496703205376.0, "1.2676506002282294e+30");
  /* extremes */
  expect(bits_to_double(1), "5e-324");
  expect(bits_to_double(2), "1e-323");
  expect(DBL_MIN, "2.2250738585072014e-308");
  expect(DBL_MAX, "1.7976931348623157e+308");
  expect(ldexp(1.0, -1000), "9.332636185032189e-302");
  expect(INFINITY, "inf");
  expect(-INFINITY, "-inf");
  expect(NAN, "nan");
  expect(-NAN, "nan");
  /* float32 values widened to double */
  expect((double)0.1f, "0.10000000149011612");
  expect((double)0.2f, "0.20000000298023224");
  expect((double)0.3f, "0.30000001192092896");
  expect((double)FLT_MAX, "3.4028234663852886e+38");
  expect((double)FLT_MIN, "1.1754943508222875e-38");
  expect(f32_bits(1), "1.401298464324817e-45");
  expect((double)1.5f, "1.5");
  /* float16 values widened to double */
  expect(65504.0, "65504.0");
  expect(ldexp(1.0, -24), "5.960464477539063e-08");
  expect(ldexp(1.0, -14), "6.103515625e-05");
  expect(0.0999755859375, "0.0999755859375"); /* fp16 nearest 0.1 */
}

/* ---------- reference ---------- */

typedef struct ref {
  uint64_t digits; /* without trailing zeros */
  int exp10;       /* value = digits * 10^exp10 */
} ref;

static bool reads_back(uint64_t d, int p, int x, double v) {
  char buf[64];
  snprintf(buf, sizeof buf, "%llue%d", (unsigned long long)d, x - (p - 1));
  return strtod(buf, NULL) == v;
}

static ref reference(double v) {
  ref r = {0, 0};
  double a = fabs(v);
  for (int p = 1; p <= 17; p++) {
    char buf[64];
    snprintf(buf, sizeof buf, "%.*e", p - 1, a);
    uint64_t d = 0;
    const char *s = buf;
    for (; *s && *s != 'e'; s++)
      if (*s >= '0' && *s <= '9') d = d * 10 + (uint64_t)(*s - '0');
    int x = atoi(s + 1);
    uint64_t cand[3] = {d, d + 1, d - 1};
    for (int i = 0; i < 3; i++) {
      uint64_t c = cand[i];
      int cx = x, cp = p;
      if (c == 0) continue;
      if (reads_back(c, cp, cx, a)) {
        r.digits = c;
        r.exp10 = cx - (cp - 1);
        while (r.digits % 10 == 0) {
          r.digits /= 10;
          r.exp10++;
        }
        return r;
      }
    }
  }
  fail_msg("reference found no digits for %.17g", v);
  return r;
}

/* Splits repr text into digits/exponent and checks its layout rules. */
static void check_one(double v) {
  if (v == 0) return;
  char out[32];
  int n = mil_format_double(out, v);
  assert_int_equal(n, (int)strlen(out));
  if (strtod(out, NULL) != v) fail_msg("%.17g printed as %s does not read back", v, out);
  ref want = reference(v);
  const char *s = out;
  if (*s == '-') s++;
  uint64_t d = 0;
  int frac = 0, nd = 0;
  bool dot = false;
  for (; *s && *s != 'e'; s++) {
    if (*s == '.') {
      dot = true;
      continue;
    }
    if (nd > 0 || *s != '0') nd++;
    d = d * 10 + (uint64_t)(*s - '0');
    if (dot) frac++;
  }
  int x = *s == 'e' ? atoi(s + 1) : 0;
  int e10 = x - frac;
  while (d && d % 10 == 0) {
    d /= 10;
    e10++;
  }
  if (d != want.digits || e10 != want.exp10)
    fail_msg("%.17g: got %s, want digits %llu e%d", v, out, (unsigned long long)want.digits, want.exp10);
  /* repr() layout: exponent form exactly when the exponent is < -4 or >= 16 */
  char tmp[40];
  int len = snprintf(tmp, sizeof tmp, "%llu", (unsigned long long)want.digits);
  int sci = want.exp10 + len - 1;
  bool has_e = strchr(out, 'e') != NULL;
  if (has_e != (sci < -4 || sci >= 16)) fail_msg("%.17g: layout of %s (exponent %d)", v, out, sci);
  if (!has_e && !strchr(out, '.')) fail_msg("%.17g: %s lacks a '.'", v, out);
}

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static uint64_t rng(void) {
  rng_state ^= rng_state << 13;
  rng_state ^= rng_state >> 7;
  rng_state ^= rng_state << 17;
  return rng_state;
}

static void test_random_doubles(void **state) {
  (void)state;
  for (int i = 0; i < 100000; i++) {
    double v = bits_to_double(rng());
    if (isnan(v) || isinf(v) || v == 0) continue;
    check_one(v);
  }
  /* values near 1: the usual magnitudes of weights */
  for (int i = 0; i < 50000; i++) {
    double v = bits_to_double((rng() & 0x000fffffffffffffull) | ((uint64_t)(1013 + rng() % 20) << 52));
    check_one(v);
  }
}

static void test_powers_of_two(void **state) {
  (void)state;
  for (int e = -1074; e <= 1023; e++) {
    double v = ldexp(1.0, e);
    check_one(v);
    check_one(nextafter(v, 0));
    if (e < 1023) check_one(nextafter(v, INFINITY));
  }
  /* powers of ten and their neighbours (exact-product corner cases) */
  for (int e = -323; e <= 308; e++) {
    char buf[16];
    snprintf(buf, sizeof buf, "1e%d", e);
    double v = strtod(buf, NULL);
    check_one(v);
    check_one(nextafter(v, 0));
    check_one(nextafter(v, INFINITY));
  }
  /* integers and 5^k multiples, where the scaled value is an exact integer */
  double p5 = 1;
  for (int k = 0; k < 23; k++, p5 *= 5) {
    for (int s = -60; s <= 80; s += 7) check_one(ldexp(p5, s));
  }
  for (int i = 1; i < 3000; i++) check_one((double)i * 1e17);
}

static void test_subnormals(void **state) {
  (void)state;
  for (uint64_t b = 1; b < 20000; b++) check_one(bits_to_double(b));
  for (int i = 0; i < 20000; i++) check_one(bits_to_double(rng() & 0x000fffffffffffffull));
}

static void test_float32_widened(void **state) {
  (void)state;
  for (int i = 0; i < 100000; i++) {
    uint32_t b = (uint32_t)rng();
    double v = f32_bits(b);
    if (isnan(v) || isinf(v) || v == 0) continue;
    check_one(v);
  }
  for (uint32_t b = 1; b < 5000; b++) check_one(f32_bits(b));
}

static double half_bits(uint16_t h) {
  int e = (h >> 10) & 31, m = h & 1023;
  double v = e ? ldexp(1024 + m, e - 25) : ldexp(m, -24);
  return h >> 15 ? -v : v;
}

static void test_float16_all(void **state) {
  (void)state;
  for (uint32_t h = 0; h < 65536; h++) {
    if (((h >> 10) & 31) == 31) continue;
    double v = half_bits((uint16_t)h);
    if (v == 0) continue;
    check_one(v);
  }
  /* spot checks of fp16 values in text */
  expect(half_bits(0x3c00), "1.0");
  expect(half_bits(0x3555), "0.333251953125");
  expect(half_bits(0xc000), "-2.0");
  expect(half_bits(0x0001), "5.960464477539063e-08");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_fixed),         cmocka_unit_test(test_random_doubles),
      cmocka_unit_test(test_powers_of_two), cmocka_unit_test(test_subnormals),
      cmocka_unit_test(test_float32_widened), cmocka_unit_test(test_float16_all),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
