/* Conv chains (src/interp/fuse.c, conv.c, conv_dnnl.c): a residual network
 * whose values between convs, activations, a scalar mul and residual adds
 * are passed in NHWC order gives the results of the same program run in
 * NCHW order (MIL_INTERP_NO_NHWC), with a squeeze-and-excite gate (a mean
 * over H and W of a region value, a broadcasting mul), a max_pool and a
 * concat along C, in fp32 and fp16, through oneDNN and
 * through the interpreter's own conv loops (MIL_INTERP_NO_DNNL_CONV: they
 * convert at the region's ends), and for a value that leaves the region
 * (a block output read by a conv too). */
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
#define H 10
#define N_X (C * H * H)
#define N_Y (2 * C * H * H)

static float wval(int i) { return (float)((i * 37 + 11) % 17 - 8) / 16.0f; }
static float xval(int i) { return (float)((i * 53 + 7) % 19 - 9) / 8.0f; }


/* x -> conv 3x3 -> relu -> conv 1x1 -> + -> depthwise 3x3 -> * 0.5 -> + ->
 * times sigmoid(mean over H, W) -> concat of its max_pool and itself ->
 * conv 1x1 (2C) -> relu: y; the second add's result is a block output
 * (z) when `leak`, so it and what feeds it stay NCHW. */
static char *program(const char *dt, bool leak) {
  text_buf b = {malloc(1 << 20), 0, 1 << 20};
  assert_non_null(b.s);
  const char *T = dt;
  text_put(&b, "main[CoreML6](%%x: (1, %d, %d, %d, %s)(Tensor)) {\n  block0() {\n", C, H, H, T);
  text_put_weight(&b, T, "w1", C, C, 3, 0, wval);
  text_put_weight(&b, T, "w2", C, C, 1, 3, wval);
  text_put_weight(&b, T, "w3", C, 1, 3, 5, wval);
  text_put_weight(&b, T, "w4", 2 * C, 2 * C, 1, 7, wval);
  text_put(&b, "    %%h: (%s)*(Scalar) = const(val=0.5, name=\"h\")\n", T);
  const char *conv = "conv(x=%%%s, weight=%%%s, strides=[1, 1], pad_type=\"custom\", pad=[%d, %d, %d, %d], "
                     "dilations=[1, 1], groups=%d, name=\"%s\")\n";
  char line[512];
#define OP(name, ch, text) text_put(&b, "    %%%s: (1, %d, %d, %d, %s)(Tensor) = ", name, ch, H, H, T), text_put(&b, "%s", text)
  snprintf(line, sizeof line, conv, "x", "w1", 1, 1, 1, 1, 1, "c1");
  OP("c1", C, line);
  OP("r1", C, "relu(x=%c1, name=\"r1\")\n");
  snprintf(line, sizeof line, conv, "r1", "w2", 0, 0, 0, 0, 1, "c2");
  OP("c2", C, line);
  OP("s1", C, "add(x=%c2, y=%r1, name=\"s1\")\n");
  snprintf(line, sizeof line, conv, "s1", "w3", 1, 1, 1, 1, C, "c3");
  OP("c3", C, line);
  OP("m", C, "mul(x=%c3, y=%h, name=\"m\")\n");
  OP("s2", C, "add(x=%m, y=%s1, name=\"s2\")\n");
  /* squeeze-and-excite: a mean over H and W, its sigmoid as a [1, C, 1, 1] gate */
  text_put(&b, "    %%g: (1, %d, 1, 1, %s)(Tensor) = reduce_mean(x=%%s2, axes=[2, 3], keep_dims=True, name=\"g\")\n", C, T);
  text_put(&b, "    %%gs: (1, %d, 1, 1, %s)(Tensor) = sigmoid(x=%%g, name=\"gs\")\n", C, T);
  OP("t", C, "mul(x=%gs, y=%s2, name=\"t\")\n");
  /* a max_pool and a concat along C of region values */
  OP("p", C, "max_pool(x=%t, kernel_sizes=[3, 2], strides=[1, 1], pad_type=\"custom\", pad=[1, 1, 0, 1], "
             "ceil_mode=False, name=\"p\")\n");
  OP("cc", 2 * C, "concat(values=(%p, %t), axis=1, interleave=False, name=\"cc\")\n");
  snprintf(line, sizeof line, conv, "cc", "w4", 0, 0, 0, 0, 1, "c4");
  OP("c4", 2 * C, line);
  OP("y", 2 * C, "relu(x=%c4, name=\"y\")\n");
#undef OP
  text_put(&b, leak ? "  } -> (%%y, %%s2)\n}\n" : "  } -> (%%y)\n}\n");
  return b.s;
}

/* y (fp32 values; fp16 outputs widened) of one fresh interpreter, two
 * runs that must agree, with env set to "1" during them when given. */
static void run(const char *dt, bool leak, const char *env, const char *env2, float *y) {
  if (env) setenv(env, "1", 1);
  if (env2) setenv(env2, "1", 1);
  char *text = program(dt, leak);
  mil_program *p = ifix_parse(text, "nhwc.mil");
  free(text);
  bool h = dt[2] == '1';
  float x[N_X];
  uint16_t xh[N_X];
  for (int i = 0; i < N_X; i++) x[i] = xval(i);
  mil_fp32_to_fp16_array(x, xh, N_X);
  int64_t shape[4] = {1, C, H, H};
  mil_tensor t = {h ? MIL_DT_FP16 : MIL_DT_FP32, 4, shape, h ? (const void *)xh : (const void *)x,
                  (size_t)N_X * (h ? 2 : 4), N_X};
  mil_diag d;
  mil_diag_init(&d);
  mil_interp *ip = NULL;
  assert_int_equal(mil_interp_new(p, NULL, &ip, &d), MIL_OK);
  float again[N_Y];
  for (int r = 0; r < 2; r++) {
    float *dst = r ? again : y;
    assert_int_equal(mil_interp_set_input(ip, "x", &t, &d), MIL_OK);
    if (mil_interp_run(ip, NULL, &d) != MIL_OK) fail_msg("%s", mil_diag_first_error(&d));
    const mil_tensor *o = mil_interp_output_at(ip, 0);
    assert_int_equal(o->numel, N_Y);
    if (h) mil_fp16_to_fp32_array(o->data, dst, N_Y);
    else memcpy(dst, o->data, sizeof again);
  }
  assert_memory_equal(y, again, sizeof again);
  mil_interp_free(ip);
  mil_diag_clear(&d);
  mil_program_free(p);
  if (env) unsetenv(env);
  if (env2) unsetenv(env2);
}

static void check(const char *dt, bool leak, const char *env) {
  float got[N_Y], want[N_Y];
  run(dt, leak, env, NULL, got);
  run(dt, leak, env, "MIL_INTERP_NO_NHWC", want);
  double big = 0;
  for (int i = 0; i < N_Y; i++) big = fmax(big, fabs(want[i]));
  assert_true(big > 0.5);
  double tol = (dt[2] == '1' ? 2e-3 : 1e-6) * big;
  for (int i = 0; i < N_Y; i++)
    if (!(fabs(got[i] - want[i]) <= tol)) /* a NaN fails too */
      fail_msg("%s%s%s: y[%d] = %g, want %g", dt, leak ? " (s2 an output)" : "", env ? env : "", i, got[i], want[i]);
}

static void test_region_equals_nchw(void **state) {
  (void)state;
  check("fp32", false, NULL);
  check("fp16", false, NULL);
}

static void test_region_fallback_paths(void **state) {
  (void)state;
  check("fp32", false, "MIL_INTERP_NO_DNNL_CONV");
  check("fp16", false, "MIL_INTERP_NO_DNNL_CONV");
  check("fp32", false, "MIL_INTERP_DW_DIRECT");
}

/* MIL_INTERP_BAND_KB=1: every conv of the region runs one output row at a
 * time (conv_dnnl.c: contiguous NHWC rows, each band's activation applied
 * and, in fp16, its rows widened and rounded on their own). */
static void test_region_in_bands(void **state) {
  (void)state;
  check("fp32", false, "MIL_INTERP_BAND_KB");
  check("fp16", false, "MIL_INTERP_BAND_KB");
  check("fp16", true, "MIL_INTERP_BAND_KB");
}

static void test_value_leaving_the_region(void **state) {
  (void)state;
  check("fp32", true, NULL);
  check("fp16", true, NULL);
}

/* Runs p once on x (input "x") in a fresh interpreter and widens its first
 * n outputs (numel each) into out[k]. */
static void run_once(mil_program *p, const mil_tensor *x, int n, float *const *out, int64_t numel) {
  mil_diag d;
  mil_diag_init(&d);
  mil_interp *ip = NULL;
  assert_int_equal(mil_interp_new(p, NULL, &ip, &d), MIL_OK);
  assert_int_equal(mil_interp_set_input(ip, "x", x, &d), MIL_OK);
  if (mil_interp_run(ip, NULL, &d) != MIL_OK) fail_msg("%s", mil_diag_first_error(&d));
  for (int k = 0; k < n; k++) {
    const mil_tensor *o = mil_interp_output_at(ip, k);
    assert_int_equal(o->numel, numel);
    if (o->dtype == MIL_DT_FP16) mil_fp16_to_fp32_array(o->data, out[k], (size_t)numel);
    else memcpy(out[k], o->data, (size_t)numel * sizeof(float));
  }
  mil_interp_free(ip);
  mil_diag_clear(&d);
}

/* x (1, C, RH, RH) -> conv 1x1 (the identity: its output is x, exactly, in
 * any summation order) -> reduce_mean and reduce_sum over H and W (the
 * outputs): the conv writes NHWC and the reductions walk it a pixel at a
 * time (2500 pixels: fp16 rows widened in several chunks, a count not a
 * multiple of the eight lanes); their bits equal the NCHW run's. In fp32,
 * pixels 0 and 2 hold +-2^60 (times a factor of the channel), the others
 * small values: the lanes of pixels 0 and 2 absorb theirs and cancel when
 * the lanes are combined, so the result is the sum of the four lanes that
 * pixels 4 to 7 open, as value inference assigns pixels to lanes. */
#define RH 50
static float eye(int i) { return i % (C + 1) == 0 ? 1.0f : 0.0f; }
static void reduce_run(const char *T, const char *env, float out[2][C]) {
  if (env) setenv(env, "1", 1);
  text_buf b = {malloc(1 << 16), 0, 1 << 16};
  assert_non_null(b.s);
  text_put(&b, "main[CoreML6](%%x: (1, %d, %d, %d, %s)(Tensor)) {\n  block0() {\n", C, RH, RH, T);
  text_put_weight(&b, T, "w", C, C, 1, 0, eye);
  text_put(&b, "    %%c: (1, %d, %d, %d, %s)(Tensor) = conv(x=%%x, weight=%%w, strides=[1, 1], pad_type=\"valid\", "
               "dilations=[1, 1], groups=1, name=\"c\")\n", C, RH, RH, T);
  text_put(&b, "    %%m: (1, %d, 1, 1, %s)(Tensor) = reduce_mean(x=%%c, axes=[2, 3], keep_dims=True, name=\"m\")\n", C, T);
  text_put(&b, "    %%s: (1, %d, %s)(Tensor) = reduce_sum(x=%%c, axes=[-1, -2], keep_dims=False, name=\"s\")\n", C, T);
  text_put(&b, "  } -> (%%m, %%s)\n}\n");
  mil_program *p = ifix_parse(b.s, "reduce.mil");
  free(b.s);
  bool h = T[2] == '1';
  static float x[C * RH * RH];
  static uint16_t xh[C * RH * RH];
  for (int i = 0; i < C * RH * RH; i++) {
    int px = i % (RH * RH);
    x[i] = xval(i) * (1.0f + (float)(i % 7) / 64.0f);
    if (!h && (px == 0 || px == 2)) x[i] = ldexpf(px ? -1.0f : 1.0f, 60) * (1.0f + (float)(i / (RH * RH)) / 16.0f);
  }
  mil_fp32_to_fp16_array(x, xh, C * RH * RH);
  int64_t shape[4] = {1, C, RH, RH};
  mil_tensor t = {h ? MIL_DT_FP16 : MIL_DT_FP32, 4, shape, h ? (const void *)xh : (const void *)x,
                  (size_t)(C * RH * RH) * (h ? 2 : 4), C * RH * RH};
  float *outs[2] = {out[0], out[1]};
  run_once(p, &t, 2, outs, C);
  mil_program_free(p);
  if (env) unsetenv(env);
}

static void test_reductions_bit_equal(void **state) {
  (void)state;
  const char *types[2] = {"fp32", "fp16"};
  for (int i = 0; i < 2; i++) {
    float got[2][C], want[2][C];
    reduce_run(types[i], NULL, got);
    reduce_run(types[i], "MIL_INTERP_NO_NHWC", want);
    assert_true(fabsf(want[1][0]) > 0.0f && isfinite(want[1][0]));
    for (int k = 0; k < 2; k++)
      for (int c = 0; c < C; c++)
        if (memcmp(&got[k][c], &want[k][c], sizeof(float)) != 0)
          fail_msg("%s %s[%d] = %.9g, want %.9g", types[i], k ? "reduce_sum" : "reduce_mean", c, got[k][c], want[k][c]);
  }
}

/* x (1, PC, PH, PH) -> depthwise conv 1x1 (weights 1: the identity, no
 * channel mixing, so a NaN stays in its channel) -> max_pool 3x3 (stride
 * 1, pad 1) -> the same conv: the pool walks NHWC pixels, 64 channels at a
 * time in vector registers and the last 8 apart; with NaN inputs, its bits
 * equal the NCHW run's (NaN where it has NaN). */
#define PC 72
#define PH 9
static float eye_pc(int i) {
  (void)i;
  return 1.0f;
}
static void pool_run(const char *env, float *out) {
  if (env) setenv(env, "1", 1);
  text_buf b = {malloc(1 << 20), 0, 1 << 20};
  assert_non_null(b.s);
  text_put(&b, "main[CoreML6](%%x: (1, %d, %d, %d, fp32)(Tensor)) {\n  block0() {\n", PC, PH, PH);
  text_put_weight(&b, "fp32", "w", PC, 1, 1, 0, eye_pc);
  const char *conv = "conv(x=%%%s, weight=%%w, strides=[1, 1], pad_type=\"valid\", dilations=[1, 1], groups=72, "
                     "name=\"%s\")\n";
  char line[256];
  snprintf(line, sizeof line, conv, "x", "c1");
  text_put(&b, "    %%c1: (1, %d, %d, %d, fp32)(Tensor) = %s", PC, PH, PH, line);
  text_put(&b, "    %%p: (1, %d, %d, %d, fp32)(Tensor) = max_pool(x=%%c1, kernel_sizes=[3, 3], strides=[1, 1], "
               "pad_type=\"custom\", pad=[1, 1, 1, 1], ceil_mode=False, name=\"p\")\n", PC, PH, PH);
  snprintf(line, sizeof line, conv, "p", "c2");
  text_put(&b, "    %%c2: (1, %d, %d, %d, fp32)(Tensor) = %s", PC, PH, PH, line);
  text_put(&b, "  } -> (%%c2)\n}\n");
  mil_program *p = ifix_parse(b.s, "pool.mil");
  free(b.s);
  static float x[PC * PH * PH];
  for (int i = 0; i < PC * PH * PH; i++) x[i] = xval(i * 7 + 3) * (1.0f + (float)(i % 11) / 32.0f);
  x[5 * PH * PH + 4] = NAN, x[70 * PH * PH + 40] = NAN, x[3] = NAN; /* channels 5, 70 (the tail), 0: edge, middle, edge pixels */
  int64_t shape[4] = {1, PC, PH, PH};
  mil_tensor t = {MIL_DT_FP32, 4, shape, x, sizeof x, PC * PH * PH};
  run_once(p, &t, 1, &out, PC * PH * PH);
  mil_program_free(p);
  if (env) unsetenv(env);
}

static void test_max_pool_bit_equal(void **state) {
  (void)state;
  static float got[PC * PH * PH], want[PC * PH * PH];
  pool_run(NULL, got);
  pool_run("MIL_INTERP_NO_NHWC", want);
  int nans = 0;
  for (int i = 0; i < PC * PH * PH; i++) {
    if (isnan(want[i])) nans++;
    if (isnan(got[i]) != isnan(want[i]) || (!isnan(want[i]) && memcmp(&got[i], &want[i], sizeof got[i]) != 0))
      fail_msg("max_pool[%d] = %g, want %g", i, (double)got[i], (double)want[i]);
  }
  if (nans != 6 + 9 + 6) fail_msg("%d NaN outputs, want 21", nans); /* each NaN reaches the pool outputs around it, in its channel */
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_region_equals_nchw),
      cmocka_unit_test(test_region_fallback_paths),
      cmocka_unit_test(test_region_in_bands),
      cmocka_unit_test(test_value_leaving_the_region),
      cmocka_unit_test(test_reductions_bit_equal),
      cmocka_unit_test(test_max_pool_bit_equal),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
