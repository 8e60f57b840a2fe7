/* The weight arithmetic of the fusion passes (src/passes/fuse_weight.c):
 * which output channel scales each element of a conv / conv_transpose
 * weight, and the per-channel products in numpy's dtypes (bit patterns
 * below were computed with numpy), the vector loops' tails and pieces
 * included. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "mil/mil.h"
#include "passes/fuse_util_internal.h"

static float f32_of(uint32_t u) {
  float f;
  memcpy(&f, &u, 4);
  return f;
}

static uint32_t bits_of(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  return u;
}

static mil_value *tensor(mil_program *p, mil_dtype dt, int32_t rank, const int64_t *shape, const void *data) {
  mil_value *v = mil_value_new_tensor(p, dt, rank, shape, false, data);
  assert_non_null(v);
  return v;
}

static void test_layouts(void **state) {
  (void)state;
  mil_program *p = mil_program_new(NULL);
  pass_wrows L;
  /* conv weight (Cout=3, Cin=2, 1, 2): runs of 4 elements, run r = channel r */
  int64_t s1[4] = {3, 2, 1, 2};
  assert_true(pass_wrows_conv(tensor(p, MIL_DT_FP32, 4, s1, NULL)->type, false, 1, &L));
  assert_int_equal(L.cout, 3);
  assert_int_equal(L.run, 4);
  assert_int_equal(L.n_runs, 3);
  /* conv_transpose (Cin=4, Cout/groups=1, 1), groups 2: Cout = 2; the
   * (1, 4, 1) transpose reshaped to (2, 2, 1) puts input channels 0-1 in
   * row 0 and 2-3 in row 1; factors 10 and 100 show each element's row */
  int64_t s2[3] = {4, 1, 1};
  const float w2[4] = {1, 2, 3, 4};
  mil_value *v2 = tensor(p, MIL_DT_FP32, 3, s2, w2);
  assert_true(pass_wrows_conv(v2->type, true, 2, &L));
  assert_int_equal(L.cout, 2);
  const double f2[2] = {10, 100};
  mil_value *o2 = pass_weight_scale(p, v2, &L, f2, MIL_DT_FP32);
  assert_non_null(o2);
  const float want2[4] = {10, 20, 300, 400};
  assert_memory_equal(mil_value_data(o2), want2, sizeof want2);
  /* (Cin=2, Cout=3, 1), groups 1: element (a, b) sits at (b, a) of the
   * (3, 2, 1) transpose, so its row is b */
  int64_t s3[3] = {2, 3, 1};
  const float w3[6] = {1, 1, 1, 2, 2, 2};
  mil_value *v3 = tensor(p, MIL_DT_FP32, 3, s3, w3);
  assert_true(pass_wrows_conv(v3->type, true, 1, &L));
  assert_int_equal(L.cout, 3);
  const double f3[3] = {1, 10, 100};
  mil_value *o3 = pass_weight_scale(p, v3, &L, f3, MIL_DT_FP32);
  const float want3[6] = {1, 10, 100, 2, 20, 200};
  assert_memory_equal(mil_value_data(o3), want3, sizeof want3);
  /* Cin not divisible by groups, a rank-2 weight and groups 0 are refused */
  assert_false(pass_wrows_conv(v3->type, true, 4, &L));
  int64_t s4[2] = {2, 2};
  assert_false(pass_wrows_conv(tensor(p, MIL_DT_FP32, 2, s4, NULL)->type, false, 1, &L));
  assert_false(pass_wrows_conv(v2->type, false, 0, &L));
  mil_program_free(p);
}

/* numpy's fp32 weight * fp32 scale and * fp64 scale:
 * np.float32(0.1) * np.float32(0.1) = 0x3c23d70b,
 * np.float32(np.float64(np.float32(0.1)) * 0.1) = 0x3c23d70a */
static void test_fp32_products(void **state) {
  (void)state;
  mil_program *p = mil_program_new(NULL);
  int64_t s[3] = {1, 1, 1};
  const float w = 0.1f;
  mil_value *v = tensor(p, MIL_DT_FP32, 3, s, &w);
  pass_wrows L;
  assert_true(pass_wrows_conv(v->type, false, 1, &L));
  const double f32[1] = {(double)0.1f}, f64[1] = {0.1};
  mil_value *a = pass_weight_scale(p, v, &L, f32, MIL_DT_FP32), *b = pass_weight_scale(p, v, &L, f64, MIL_DT_FP64);
  assert_int_equal(a->type->dtype, MIL_DT_FP32);
  assert_int_equal(b->type->dtype, MIL_DT_FP32);
  assert_int_equal(bits_of(*(const float *)mil_value_data(a)), 0x3c23d70bu);
  assert_int_equal(bits_of(*(const float *)mil_value_data(b)), 0x3c23d70au);
  mil_program_free(p);
}

/* numpy's fp16 weight * fp32 scale rounds twice (fp32, then the astype to
 * fp16), which differs from one rounding of the exact product:
 * h = 0xc11e, f = 0xbeb7f05e: np.float16(np.float32(h) * f) = 0x3b5a,
 * np.float16(np.float64(h) * np.float64(f)) = 0x3b5b. */
static void test_fp16_products(void **state) {
  (void)state;
  mil_program *p = mil_program_new(NULL);
  int64_t s[3] = {1, 1, 1};
  const uint16_t h = 0xc11e;
  mil_value *v = tensor(p, MIL_DT_FP16, 3, s, &h);
  pass_wrows L;
  assert_true(pass_wrows_conv(v->type, false, 1, &L));
  const double f[1] = {(double)f32_of(0xbeb7f05eu)};
  mil_value *a = pass_weight_scale(p, v, &L, f, MIL_DT_FP32), *b = pass_weight_scale(p, v, &L, f, MIL_DT_FP64);
  assert_int_equal(a->type->dtype, MIL_DT_FP16);
  assert_int_equal(*(const uint16_t *)mil_value_data(a), 0x3b5a);
  assert_int_equal(*(const uint16_t *)mil_value_data(b), 0x3b5b);
  mil_program_free(p);
}

/* Long runs (vector steps, tails, fp16 pieces) against the scalar
 * conversions element by element. */
static void test_long_runs(void **state) {
  (void)state;
  mil_program *p = mil_program_new(NULL);
  enum { CO = 3, CI = 1501 }; /* runs of 1501 * 3 elements: neither a multiple of 8 nor of a piece */
  int64_t s[4] = {CO, CI, 1, 3};
  size_t n = (size_t)CO * CI * 3;
  float *w32 = malloc(n * sizeof *w32);
  uint16_t *w16 = malloc(n * sizeof *w16);
  assert_non_null(w32);
  assert_non_null(w16);
  for (size_t i = 0; i < n; i++) {
    w32[i] = (float)sin((double)i * 0.37) * 3.0f;
    w16[i] = mil_fp32_to_fp16(w32[i]);
  }
  w32[5] = NAN;
  mil_value *v32 = tensor(p, MIL_DT_FP32, 4, s, w32), *v16 = tensor(p, MIL_DT_FP16, 4, s, w16);
  pass_wrows L;
  assert_true(pass_wrows_conv(v32->type, false, 1, &L));
  assert_int_equal(L.run, (int64_t)CI * 3);
  const double f[CO] = {(double)1.7f, (double)-0.3f, (double)1e-3f};
  const float *o32 = mil_value_data(pass_weight_scale(p, v32, &L, f, MIL_DT_FP32));
  const uint16_t *o16 = mil_value_data(pass_weight_scale(p, v16, &L, f, MIL_DT_FP32));
  for (size_t i = 0; i < n; i++) {
    float x = (float)f[i / L.run];
    if (i == 5) assert_true(isnan(o32[i]));
    else assert_int_equal(bits_of(o32[i]), bits_of(w32[i] * x));
    assert_int_equal(o16[i], mil_fp32_to_fp16(mil_fp16_to_fp32(w16[i]) * x));
  }
  /* one factor for every element */
  pass_wrows_all((int64_t)n, &L);
  const double g[1] = {(double)0.77f};
  o32 = mil_value_data(pass_weight_scale(p, v32, &L, g, MIL_DT_FP32));
  for (size_t i = 6; i < n; i++) assert_int_equal(bits_of(o32[i]), bits_of(w32[i] * 0.77f));
  free(w32);
  free(w16);
  mil_program_free(p);
}

static void test_negate_and_share(void **state) {
  (void)state;
  mil_program *p = mil_program_new(NULL);
  int64_t s[1] = {4};
  const float w[4] = {1.5f, 0.0f, -2.0f, NAN};
  const uint16_t h[4] = {0x3c00, 0x0000, 0xc000, 0x7e01};
  mil_value *v = tensor(p, MIL_DT_FP32, 1, s, w), *vh = tensor(p, MIL_DT_FP16, 1, s, h);
  const uint32_t *n32 = mil_value_data(pass_weight_negate(p, v));
  assert_int_equal(n32[0], bits_of(-1.5f));
  assert_int_equal(n32[1], 0x80000000u); /* -0.0 */
  assert_int_equal(n32[2], bits_of(2.0f));
  assert_int_equal(n32[3], bits_of(w[3]) ^ 0x80000000u);
  const uint16_t *n16 = mil_value_data(pass_weight_negate(p, vh));
  const uint16_t want[4] = {0xbc00, 0x8000, 0x4000, 0xfe01};
  assert_memory_equal(n16, want, sizeof want);
  /* an unchanged weight is shared, an fp64 one rounded to fp32 */
  assert_ptr_equal(pass_weight_as_const(p, v), v);
  const double d[4] = {0.1, 1, 2, 3};
  const mil_value *c = pass_weight_as_const(p, tensor(p, MIL_DT_FP64, 1, s, d));
  assert_int_equal(c->type->dtype, MIL_DT_FP32);
  assert_true(((const float *)mil_value_data(c))[0] == 0.1f);
  mil_program_free(p);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_layouts),          cmocka_unit_test(test_fp32_products),
      cmocka_unit_test(test_fp16_products),    cmocka_unit_test(test_long_runs),
      cmocka_unit_test(test_negate_and_share),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
