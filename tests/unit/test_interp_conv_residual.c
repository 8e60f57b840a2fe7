/* Residual adds fused into their conv (src/interp/fuse.c, conv_act.c): a
 * conv whose only reader is an add of another value of its type, made
 * before the conv, adds that value itself, and a relu or clip that alone
 * reads the sum is applied too. The outputs must be bit-identical to the
 * unfused run (MIL_INTERP_NO_FUSE) in fp32 and fp16, with the conv's output
 * as the add's x or y, on every path the conv can take: NHWC regions
 * (whole and in bands of one row), NCHW (whole and in bands of one row),
 * the interpreter's own loops; with NaN in the input too. An add whose
 * other operand is made after the conv is left alone (and still right). */
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
#include "text_buf.h"
#include "mil/interp.h"
#include "mil/mil.h"
#include "mil/text.h"

#define C 8
#define H 12
#define NX (C * H * H)
#define N_OUT 4

static float wval(int i) { return (float)((i * 37 + 11) % 17 - 8) / 16.0f; }
static float xval(int i) { return (float)((i * 53 + 7) % 19 - 9) / 4.0f; }

/* x -> c1 (3x3) -> relu a; c2 (3x3 of a) + a (the conv as y) -> relu r;
 * c3 (1x1 of r) + r (the conv as x), no activation: s2; c4 (3x3 of s2) +
 * half of s2 made after c4 (not fused): s3; c5 (3x3 of r) + s2 -> clip:
 * s4; c6 (1x1 of s4) + s4 -> relu: z. The outputs are 1x1 convs of s2,
 * s3, s4 and z, so that every value above is read by region ops only and
 * stays in NHWC order (fuse.c) unless MIL_INTERP_NO_NHWC is set. */
static char *program(const char *T) {
  text_buf b = {malloc(1 << 20), 0, 1 << 20};
  assert_non_null(b.s);
  text_put(&b, "main[CoreML6](%%x: (1, %d, %d, %d, %s)(Tensor)) {\n  block0() {\n", C, H, H, T);
  text_put_weight(&b, T, "w1", C, C, 3, 0, wval);
  text_put_weight(&b, T, "w2", C, C, 3, 5, wval);
  text_put_weight(&b, T, "w3", C, C, 1, 9, wval);
  text_put_weight(&b, T, "w4", C, C, 3, 13, wval);
  text_put_weight(&b, T, "w5", C, C, 3, 2, wval);
  text_put_weight(&b, T, "w6", C, C, 1, 7, wval);
  text_put_weight(&b, T, "w7", C, C, 1, 11, wval);
  text_put(&b, "    %%h: (%s)*(Scalar) = const(val=0.5, name=\"h\")\n", T);
  text_put(&b, "    %%lo: (%s)*(Scalar) = const(val=-0.75, name=\"lo\")\n", T);
  text_put(&b, "    %%hi: (%s)*(Scalar) = const(val=1.5, name=\"hi\")\n", T);
  const char *k3 = "conv(x=%%%s, weight=%%%s, strides=[1, 1], pad_type=\"custom\", pad=[1, 1, 1, 1], dilations=[1, 1], "
                   "groups=1, name=\"%s\")\n";
  const char *k1 = "conv(x=%%%s, weight=%%%s, strides=[1, 1], pad_type=\"valid\", dilations=[1, 1], groups=1, "
                   "name=\"%s\")\n";
  char line[512];
#define OP(name, fmt, ...)                                                         \
  do {                                                                             \
    snprintf(line, sizeof line, fmt, __VA_ARGS__);                                 \
    text_put(&b, "    %%%s: (1, %d, %d, %d, %s)(Tensor) = %s", name, C, H, H, T, line); \
  } while (0)
  OP("c1", k3, "x", "w1", "c1");
  OP("a", "relu(x=%%c1, name=\"%s\")\n", "a");
  OP("c2", k3, "a", "w2", "c2");
  OP("s1", "add(x=%%a, y=%%c2, name=\"%s\")\n", "s1");
  OP("r", "relu(x=%%s1, name=\"%s\")\n", "r");
  OP("c3", k1, "r", "w3", "c3");
  OP("s2", "add(x=%%c3, y=%%r, name=\"%s\")\n", "s2");
  OP("c4", k3, "s2", "w4", "c4");
  OP("t", "mul(x=%%s2, y=%%h, name=\"%s\")\n", "t");
  OP("s3", "add(x=%%c4, y=%%t, name=\"%s\")\n", "s3");
  OP("c5", k3, "r", "w5", "c5");
  OP("u", "add(x=%%s2, y=%%c5, name=\"%s\")\n", "u");
  OP("s4", "clip(x=%%u, alpha=%%lo, beta=%%hi, name=\"%s\")\n", "s4");
  OP("c6", k1, "s4", "w6", "c6");
  OP("v", "add(x=%%c6, y=%%s4, name=\"%s\")\n", "v");
  OP("z", "relu(x=%%v, name=\"%s\")\n", "z");
  OP("o1", k1, "s2", "w7", "o1");
  OP("o2", k1, "s3", "w7", "o2");
  OP("o3", k1, "s4", "w7", "o3");
  OP("o4", k1, "z", "w7", "o4");
#undef OP
  text_put(&b, "  } -> (%%o1, %%o2, %%o3, %%o4)\n}\n");
  return b.s;
}

typedef struct outs {
  uint8_t b[N_OUT][NX * 4];
} outs;

/* The outputs' bytes of one fresh interpreter (two runs that must agree),
 * with env and env2 set to val / "1" during them when given. */
static void run(const char *T, bool nan, const char *env, const char *val, const char *env2, outs *o) {
  if (env) setenv(env, val, 1);
  if (env2) setenv(env2, "1", 1);
  char *text = program(T);
  mil_program *p = ifix_parse(text, "residual.mil");
  free(text);
  bool h = T[2] == '1';
  float x[NX];
  uint16_t xh[NX];
  for (int i = 0; i < NX; i++) x[i] = xval(i);
  if (nan) x[2 * H + 3] = NAN, x[NX - 5] = NAN;
  mil_fp32_to_fp16_array(x, xh, NX);
  int64_t shape[4] = {1, C, H, H};
  mil_tensor t = {h ? MIL_DT_FP16 : MIL_DT_FP32, 4, shape, h ? (const void *)xh : (const void *)x,
                  (size_t)NX * (h ? 2 : 4), NX};
  mil_diag d;
  mil_diag_init(&d);
  mil_interp *ip = NULL;
  assert_int_equal(mil_interp_new(p, NULL, &ip, &d), MIL_OK);
  outs again;
  for (int r = 0; r < 2; r++) {
    outs *dst = r ? &again : o;
    memset(dst, 0, sizeof *dst);
    assert_int_equal(mil_interp_set_input(ip, "x", &t, &d), MIL_OK);
    if (mil_interp_run(ip, NULL, &d) != MIL_OK) fail_msg("%s", mil_diag_first_error(&d));
    for (int k = 0; k < N_OUT; k++) {
      const mil_tensor *y = mil_interp_output_at(ip, k);
      assert_int_equal(y->numel, NX);
      memcpy(dst->b[k], y->data, y->nbytes);
    }
  }
  assert_memory_equal(o, &again, sizeof again);
  mil_interp_free(ip);
  mil_diag_clear(&d);
  mil_program_free(p);
  if (env) unsetenv(env);
  if (env2) unsetenv(env2);
}

/* fused (env = val) against unfused (the same env and MIL_INTERP_NO_FUSE):
 * the same bytes; the outputs are not all zero */
static void check(const char *T, bool nan, const char *env, const char *val) {
  outs *got = malloc(sizeof *got), *want = malloc(sizeof *want);
  assert_true(got && want);
  run(T, nan, env, val, NULL, got);
  run(T, nan, env, val, "MIL_INTERP_NO_FUSE", want);
  size_t w = T[2] == '1' ? 2 : 4;
  for (int k = 0; k < N_OUT; k++) {
    bool nonzero = false;
    for (size_t i = 0; i < NX * w; i++) nonzero |= want->b[k][i] != 0;
    assert_true(nonzero);
    for (size_t i = 0; i < NX; i++)
      if (memcmp(got->b[k] + i * w, want->b[k] + i * w, w) != 0)
        fail_msg("%s%s %s=%s: output %d element %zu differs from the unfused run", T, nan ? " (NaN)" : "",
                 env ? env : "-", val ? val : "", k, i);
  }
  free(got), free(want);
}

static void each_type(bool nan, const char *env, const char *val) {
  check("fp32", nan, env, val);
  check("fp16", nan, env, val);
}

static void test_regions(void **state) {
  (void)state;
  each_type(false, NULL, NULL);
  each_type(true, NULL, NULL);
}

static void test_region_bands(void **state) {
  (void)state;
  each_type(false, "MIL_INTERP_BAND_KB", "1"); /* one output row per band: the skip read at each band's offset */
}

static void test_nchw(void **state) {
  (void)state;
  each_type(false, "MIL_INTERP_NO_NHWC", "1");
  each_type(true, "MIL_INTERP_NO_NHWC", "1");
}

/* NCHW in bands of one row: every conv above 0.001 MB (MIL_INTERP_BAND_MB) */
static void test_nchw_bands(void **state) {
  (void)state;
  setenv("MIL_INTERP_BAND_KB", "1", 1);
  each_type(false, "MIL_INTERP_BAND_MB", "0.001");
  setenv("MIL_INTERP_NO_NHWC", "1", 1);
  each_type(false, "MIL_INTERP_BAND_MB", "0.001");
  unsetenv("MIL_INTERP_NO_NHWC");
  unsetenv("MIL_INTERP_BAND_KB");
}

static void test_own_loops(void **state) {
  (void)state;
  each_type(false, "MIL_INTERP_NO_DNNL_CONV", "1");
  each_type(true, "MIL_INTERP_NO_DNNL_CONV", "1");
}

int main(void) {
  unsetenv("MIL_INTERP_NO_FUSE");
  unsetenv("MIL_INTERP_NO_FUSE_ADD");
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_regions),   cmocka_unit_test(test_region_bands), cmocka_unit_test(test_nchw),
      cmocka_unit_test(test_nchw_bands), cmocka_unit_test(test_own_loops),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
