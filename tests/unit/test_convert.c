/* fp32 <-> fp16 conversions (src/core/convert.c).
 *
 * The reference is independent of the code under test: the exact rational
 * value of the fp32 input, rounded to fp16 with ties to even in long double
 * arithmetic by a simple search over the 2^15 fp16 magnitudes (fp16 decode
 * is exact). Checked on fixed cases with known bit patterns, on every fp32
 * pattern in a stride sweep plus dense sweeps around each fp16 rounding
 * boundary, and the array forms against the scalar ones (F16C or not) on
 * every pattern of those sweeps, NaNs included.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "mil/types.h"

static float from_bits(uint32_t u) {
  float f;
  memcpy(&f, &u, 4);
  return f;
}

/* exact value of a finite fp16 magnitude code (0..0x7bff) */
static long double half_value(uint16_t m) {
  int e = (m >> 10) & 0x1f, man = m & 0x3ff;
  return e == 0 ? ldexpl((long double)man, -24) : ldexpl((long double)(1024 + man), e - 25);
}

/* nearest fp16 by binary search over magnitudes, ties to the even code */
static uint16_t ref_fp16(float f) {
  uint16_t sign = signbit(f) ? 0x8000 : 0;
  long double a = fabsl((long double)f);
  if (isinf(f)) return sign | 0x7c00;
  /* fp16 max is 65504; the midpoint to the next (65536 = inf) is 65520 */
  if (a >= 65520.0L) return sign | 0x7c00;
  uint16_t lo = 0, hi = 0x7bff;
  while (lo < hi) { /* largest code with value <= a */
    uint16_t mid = (uint16_t)((lo + hi + 1) / 2);
    if (half_value(mid) <= a) lo = mid;
    else hi = (uint16_t)(mid - 1);
  }
  if (lo == 0x7bff) return sign | lo;
  long double below = half_value(lo), above = half_value((uint16_t)(lo + 1));
  long double d1 = a - below, d2 = above - a;
  uint16_t pick = d1 < d2 ? lo : d2 < d1 ? (uint16_t)(lo + 1) : ((lo & 1) ? (uint16_t)(lo + 1) : lo);
  return sign | pick;
}

static void test_fixed(void **state) {
  (void)state;
  struct {
    float f;
    uint16_t h;
  } k[] = {{0.0f, 0x0000},     {-0.0f, 0x8000},  {1.0f, 0x3c00},         {-2.0f, 0xc000},
           {65504.0f, 0x7bff}, {65519.0f, 0x7bff}, {65520.0f, 0x7c00},    {1e38f, 0x7c00},
           {INFINITY, 0x7c00}, {-INFINITY, 0xfc00}, {5.9604645e-08f, 0x0001}, {2.9802322e-08f, 0x0000},
           {0.1f, 0x2e66},     {6.1035156e-05f, 0x0400}};
  for (size_t i = 0; i < sizeof k / sizeof k[0]; i++) assert_int_equal(mil_fp32_to_fp16(k[i].f), k[i].h);
  /* quiet NaN keeps numpy's pattern; a NaN whose top payload bits are 0 stays NaN */
  assert_int_equal(mil_fp32_to_fp16(from_bits(0x7fc00000u)), 0x7e00);
  assert_int_equal(mil_fp32_to_fp16(from_bits(0xffc00000u)), 0xfe00);
  assert_int_equal(mil_fp32_to_fp16(from_bits(0x7f800001u)), 0x7c01);
}

static void check_range(uint32_t first, uint32_t count, uint32_t stride) {
  enum { CHUNK = 4096 };
  float src[CHUNK];
  uint16_t arr[CHUNK];
  float back[CHUNK];
  uint32_t u = first;
  for (uint32_t done = 0; done < count;) {
    uint32_t n = count - done < CHUNK ? count - done : CHUNK;
    for (uint32_t i = 0; i < n; i++, u += stride) src[i] = from_bits(u);
    mil_fp32_to_fp16_array(src, arr, n);
    mil_fp16_to_fp32_array(arr, back, n);
    for (uint32_t i = 0; i < n; i++) {
      uint16_t s = mil_fp32_to_fp16(src[i]);
      uint32_t bits;
      memcpy(&bits, &src[i], 4);
      if (s != arr[i]) fail_msg("array %04x != scalar %04x for fp32 bits %08x", arr[i], s, bits);
      if (!isnan(src[i]) && s != ref_fp16(src[i]))
        fail_msg("fp32 bits %08x -> %04x, expected %04x", bits, s, ref_fp16(src[i]));
      float w = mil_fp16_to_fp32(arr[i]);
      if (memcmp(&w, &back[i], 4) != 0) fail_msg("fp16 %04x widens differently in the array form", arr[i]);
    }
    done += n;
  }
}

static void test_sweeps(void **state) {
  (void)state;
  check_range(0, 1u << 22, 1021); /* every sign and exponent, scattered mantissas */
  /* dense around the fp16 rounding boundaries: the normal range (13 dropped
   * bits, tie at 0x1000), the subnormal range and the overflow edge */
  check_range(0x3f800000u - 4096, 16384, 1);
  check_range(0x387fe000u, 16384, 1);
  check_range(0x33000000u - 64, 256, 1);
  check_range(0x477fe000u, 16384, 1);
  check_range(0xc77fe000u, 16384, 1);
  check_range(0x7f800000u, 8192, 1); /* inf and NaNs */
  check_range(0xff7ff000u, 8192, 1);
}

static void test_odd_lengths(void **state) {
  (void)state;
  float src[37];
  uint16_t dst[37 + 1];
  for (int i = 0; i < 37; i++) src[i] = (float)i * 0.37f - 3.0f;
  src[9] = NAN;
  dst[37] = 0xabcd;
  mil_fp32_to_fp16_array(src, dst, 37);
  assert_int_equal(dst[37], 0xabcd); /* no write past n */
  for (int i = 0; i < 37; i++) assert_int_equal(dst[i], mil_fp32_to_fp16(src[i]));
}

/* Large arrays are split between threads: every element, both halves and
 * the seam between them, must match the scalar conversion. */
static void test_large_split(void **state) {
  (void)state;
  size_t n = ((size_t)8 << 20) + 13;
  float *src = malloc(n * sizeof *src);
  uint16_t *half = malloc(n * sizeof *half);
  float *back = malloc(n * sizeof *back);
  assert_true(src && half && back);
  uint32_t x = 12345;
  for (size_t i = 0; i < n; i++) {
    x = x * 1664525u + 1013904223u;
    uint32_t u = x;
    memcpy(&src[i], &u, 4);
  }
  mil_fp32_to_fp16_array(src, half, n);
  mil_fp16_to_fp32_array(half, back, n);
  for (size_t i = 0; i < n; i++) {
    if (half[i] != mil_fp32_to_fp16(src[i])) fail_msg("element %zu of %zu converts differently", i, n);
    float w = mil_fp16_to_fp32(half[i]);
    if (memcmp(&w, &back[i], 4) != 0) fail_msg("element %zu widens differently", i);
  }
  free(src);
  free(half);
  free(back);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_fixed),
      cmocka_unit_test(test_sweeps),
      cmocka_unit_test(test_odd_lengths),
      cmocka_unit_test(test_large_split),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
