/* conv through the interpreter (oneDNN's convolution primitive when the
 * build has it, else im2col + sgemm or the depthwise loop) against a naive
 * reference loop written here: groups, depthwise, stride 2, dilation,
 * asymmetric custom pads, bias, 1D; the same cases run in bands of
 * output rows (the path of large activations, forced small here); forks of one interpreter running
 * the same convs in several threads at once, bit-identical to one run. */
#include <math.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "fork_threads.h"
#include "interp_fixture.h"
#include "mil/interp.h"
#include "mil/mil.h"
#include "mil/text.h"

typedef struct cfg {
  int n, cin, h, w, cout, kh, kw, sh, sw, dh, dw, pt, pb, pl, pr, groups, bias, one_d;
} cfg;

/* small exact values: multiples of 1/8 in [-1, 1] */
static float wval(int i) { return (float)((i * 37 + 11) % 17 - 8) / 8.0f; }
static float xval(int i) { return (float)((i * 53 + 7) % 19 - 9) / 8.0f; }
static float bval(int i) { return (float)(i % 5 - 2) / 4.0f; }

static int oh_of(const cfg *c) { return (c->h + c->pt + c->pb - ((c->kh - 1) * c->dh + 1)) / c->sh + 1; }
static int ow_of(const cfg *c) { return (c->w + c->pl + c->pr - ((c->kw - 1) * c->dw + 1)) / c->sw + 1; }

static void reference(const cfg *c, const float *x, float *y) {
  int oh = oh_of(c), ow = ow_of(c), cg = c->cin / c->groups, og = c->cout / c->groups;
  for (int b = 0; b < c->n; b++)
    for (int o = 0; o < c->cout; o++)
      for (int i = 0; i < oh; i++)
        for (int j = 0; j < ow; j++) {
          double acc = c->bias ? bval(o) : 0.0;
          int gi = o / og;
          for (int ci = 0; ci < cg; ci++)
            for (int u = 0; u < c->kh; u++)
              for (int v = 0; v < c->kw; v++) {
                int hh = i * c->sh - c->pt + u * c->dh, ww = j * c->sw - c->pl + v * c->dw;
                if (hh < 0 || hh >= c->h || ww < 0 || ww >= c->w) continue;
                acc += (double)wval(((o * cg + ci) * c->kh + u) * c->kw + v) *
                       x[((b * c->cin + gi * cg + ci) * c->h + hh) * c->w + ww];
              }
          y[((b * c->cout + o) * oh + i) * ow + j] = (float)acc;
        }
}

static const char *g_dt = "fp32"; /* the programs' float type: "fp32" or "fp16" (inputs, weights, output) */

static char *program_text(const cfg *c) {
  size_t cap = 1 << 22, l = 0;
  char *s = malloc(cap);
  assert_non_null(s);
  int cg = c->cin / c->groups, oh = oh_of(c), ow = ow_of(c);
  if (c->one_d) {
    l += (size_t)snprintf(s + l, cap - l, "main[CoreML6](%%x: (%d, %d, %d, fp32)(Tensor)) {\n  block0() {\n"
                          "    %%w: (%d, %d, %d, fp32)*(Tensor) = const(val=[", c->n, c->cin, c->w, c->cout, cg, c->kw);
    for (int o = 0; o < c->cout; o++) {
      l += (size_t)snprintf(s + l, cap - l, "%s[", o ? ", " : "");
      for (int ci = 0; ci < cg; ci++) {
        l += (size_t)snprintf(s + l, cap - l, "%s[", ci ? ", " : "");
        for (int v = 0; v < c->kw; v++)
          l += (size_t)snprintf(s + l, cap - l, "%s%g", v ? ", " : "", wval((o * cg + ci) * c->kw + v));
        l += (size_t)snprintf(s + l, cap - l, "]");
      }
      l += (size_t)snprintf(s + l, cap - l, "]");
    }
  } else {
    l += (size_t)snprintf(s + l, cap - l, "main[CoreML6](%%x: (%d, %d, %d, %d, fp32)(Tensor)) {\n  block0() {\n"
                          "    %%w: (%d, %d, %d, %d, fp32)*(Tensor) = const(val=[",
                          c->n, c->cin, c->h, c->w, c->cout, cg, c->kh, c->kw);
    for (int o = 0; o < c->cout; o++) {
      l += (size_t)snprintf(s + l, cap - l, "%s[", o ? ", " : "");
      for (int ci = 0; ci < cg; ci++) {
        l += (size_t)snprintf(s + l, cap - l, "%s[", ci ? ", " : "");
        for (int u = 0; u < c->kh; u++) {
          l += (size_t)snprintf(s + l, cap - l, "%s[", u ? ", " : "");
          for (int v = 0; v < c->kw; v++)
            l += (size_t)snprintf(s + l, cap - l, "%s%g", v ? ", " : "", wval(((o * cg + ci) * c->kh + u) * c->kw + v));
          l += (size_t)snprintf(s + l, cap - l, "]");
        }
        l += (size_t)snprintf(s + l, cap - l, "]");
      }
      l += (size_t)snprintf(s + l, cap - l, "]");
    }
  }
  l += (size_t)snprintf(s + l, cap - l, "], name=\"w\")\n");
  if (c->bias) {
    l += (size_t)snprintf(s + l, cap - l, "    %%b: (%d, fp32)*(Tensor) = const(val=[", c->cout);
    for (int o = 0; o < c->cout; o++) l += (size_t)snprintf(s + l, cap - l, "%s%g", o ? ", " : "", bval(o));
    l += (size_t)snprintf(s + l, cap - l, "], name=\"b\")\n");
  }
  if (c->one_d)
    l += (size_t)snprintf(s + l, cap - l,
                          "    %%y: (%d, %d, %d, fp32)(Tensor) = conv(x=%%x, weight=%%w%s, strides=[%d], "
                          "pad_type=\"custom\", pad=[%d, %d], dilations=[%d], groups=%d, name=\"y\")\n",
                          c->n, c->cout, ow, c->bias ? ", bias=%b" : "", c->sw, c->pl, c->pr, c->dw, c->groups);
  else
    l += (size_t)snprintf(s + l, cap - l,
                          "    %%y: (%d, %d, %d, %d, fp32)(Tensor) = conv(x=%%x, weight=%%w%s, strides=[%d, %d], "
                          "pad_type=\"custom\", pad=[%d, %d, %d, %d], dilations=[%d, %d], groups=%d, name=\"y\")\n",
                          c->n, c->cout, oh, ow, c->bias ? ", bias=%b" : "", c->sh, c->sw, c->pt, c->pb, c->pl, c->pr,
                          c->dh, c->dw, c->groups);
  l += (size_t)snprintf(s + l, cap - l, "  } -> (%%y)\n}\n");
  return s;
}

static mil_program *parse(const cfg *c) {
  char *text = program_text(c);
  for (char *q = text; g_dt[2] == '1' && (q = strstr(q, "fp32)")) != NULL; q += 5) q[2] = '1', q[3] = '6';
  mil_program *p = ifix_parse(text, "conv.mil");
  free(text);
  return p;
}

static mil_status run(mil_interp *ip, const cfg *c, const float *x, float *y, mil_diag *d) {
  int64_t shape[4] = {c->n, c->cin, c->one_d ? c->w : c->h, c->w};
  int64_t numel = (int64_t)c->n * c->cin * (c->one_d ? 1 : c->h) * c->w;
  bool h = g_dt[2] == '1';
  uint16_t *xh = h ? malloc((size_t)numel * sizeof *xh) : NULL;
  if (xh) mil_fp32_to_fp16_array(x, xh, (size_t)numel);
  mil_tensor t = {h ? MIL_DT_FP16 : MIL_DT_FP32, c->one_d ? 3 : 4, shape, h ? (const void *)xh : (const void *)x,
                  (size_t)numel * (h ? 2 : 4), numel};
  mil_status st = mil_interp_set_input(ip, "x", &t, d);
  if (st == MIL_OK) st = mil_interp_run(ip, NULL, d);
  free(xh);
  if (st != MIL_OK) return st;
  const mil_tensor *o = mil_interp_output_at(ip, 0);
  if (h) mil_fp16_to_fp32_array(o->data, y, (size_t)o->numel); /* exact */
  else memcpy(y, o->data, o->nbytes);
  return MIL_OK;
}

static const cfg CASES[] = {
    /* n cin h w cout kh kw sh sw dh dw  pt pb pl pr  groups bias 1d */
    {1, 8, 13, 11, 16, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0},  /* plain 3x3, bias */
    {2, 6, 15, 12, 9, 3, 2, 2, 2, 1, 1, 0, 2, 1, 0, 3, 1, 0},   /* groups 3, stride 2, asymmetric pads */
    {1, 8, 14, 14, 8, 3, 3, 2, 1, 1, 1, 1, 0, 1, 1, 8, 1, 0},   /* depthwise, stride (2, 1) */
    {1, 4, 12, 12, 8, 3, 3, 1, 1, 2, 3, 2, 1, 3, 2, 4, 1, 0},   /* depthwise multiplier 2, dilation */
    {1, 5, 17, 16, 7, 3, 5, 1, 2, 2, 1, 3, 0, 0, 2, 1, 0, 0},   /* dilation (2, 1), no bias */
    {1, 16, 7, 7, 32, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 0},   /* 1x1 */
    {2, 6, 1, 20, 4, 1, 3, 1, 2, 1, 2, 0, 0, 2, 1, 2, 1, 1},    /* 1D, groups 2, stride 2, dilation 2 */
    {1, 8, 60, 64, 8, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 8, 1, 0},   /* depthwise 3x3 stride 2, wide rows (register kernel) */
    {2, 4, 30, 70, 8, 5, 5, 2, 2, 1, 1, 2, 2, 2, 1, 4, 0, 0},   /* depthwise 5x5 stride 2, multiplier 2, odd width */
    {1, 3, 9, 10, 6, 3, 3, 1, 1, 1, 1, 3, 4, 1, 1, 1, 1, 0},    /* pads beyond the kernel: rows of padding only */
    {1, 12, 40, 33, 10, 5, 3, 3, 1, 2, 1, 4, 1, 1, 1, 2, 1, 0}, /* stride 3, dilation 2, groups 2 */
};

static void check_cases(void) {
  for (size_t k = 0; k < sizeof CASES / sizeof *CASES; k++) {
    const cfg *c = &CASES[k];
    mil_program *p = parse(c);
    int hin = c->one_d ? 1 : c->h, nx = c->n * c->cin * hin * c->w, ny = c->n * c->cout * oh_of(c) * ow_of(c);
    float *x = malloc((size_t)nx * sizeof *x), *y = malloc((size_t)ny * sizeof *y), *want = malloc((size_t)ny * sizeof *y);
    for (int i = 0; i < nx; i++) x[i] = xval(i);
    cfg rc = *c;
    if (c->one_d) rc.h = 1;
    reference(&rc, x, want);
    if (g_dt[2] == '1') { /* the fp32 sums are exact (multiples of 1/64): the fp16 result is their rounding */
      uint16_t *hw = malloc((size_t)ny * sizeof *hw);
      assert_non_null(hw);
      mil_fp32_to_fp16_array(want, hw, (size_t)ny);
      mil_fp16_to_fp32_array(hw, want, (size_t)ny);
      free(hw);
    }
    mil_diag d;
    mil_diag_init(&d);
    mil_interp *ip = NULL;
    assert_int_equal(mil_interp_new(p, NULL, &ip, &d), MIL_OK);
    for (int r = 0; r < 2; r++) { /* the second run uses the cached primitive */
      mil_status st = run(ip, c, x, y, &d);
      if (st != MIL_OK) fail_msg("case %zu: %s", k, mil_diag_first_error(&d));
      for (int i = 0; i < ny; i++)
        if (fabsf(y[i] - want[i]) > (g_dt[2] == '1' ? 0.0f : 1e-4f * (1.0f + fabsf(want[i]))))
          fail_msg("case %zu run %d: y[%d] = %g, want %g", k, r, i, y[i], want[i]);
    }
    mil_interp_free(ip);
    mil_diag_clear(&d);
    mil_program_free(p);
    free(x), free(y), free(want);
  }
}

static void test_conv_against_reference(void **state) {
  (void)state;
  check_cases();
}

/* Every activation counts as large (MIL_INTERP_BAND_MB=0) and the bands
 * are a few rows (MIL_INTERP_BAND_KB=2): first, middle and last bands with
 * their own pads, a band of one row, bands that start in the padding. */
static void test_conv_banded_against_reference(void **state) {
  (void)state;
  setenv("MIL_INTERP_BAND_MB", "0", 1);
  for (int kb = 0; kb < 3; kb++) {
    setenv("MIL_INTERP_BAND_KB", kb == 0 ? "0" : kb == 1 ? "2" : "16", 1);
    check_cases();
  }
  unsetenv("MIL_INTERP_BAND_MB");
  unsetenv("MIL_INTERP_BAND_KB");
}

/* The same cases as fp16 programs (exact: each result is its fp32 sum
 * rounded once), whole and in bands (fp16 rows widened and rounded band
 * by band). */
static void test_conv_fp16(void **state) {
  (void)state;
  g_dt = "fp16";
  check_cases();
  setenv("MIL_INTERP_BAND_MB", "0", 1);
  setenv("MIL_INTERP_BAND_KB", "2", 1);
  check_cases();
  unsetenv("MIL_INTERP_BAND_MB");
  unsetenv("MIL_INTERP_BAND_KB");
  g_dt = "fp32";
}

#define N_THREADS 4
#define N_RUNS 6

typedef struct worker {
  mil_interp *ip;
  const cfg *c;
  const float *x;
  const float *want;
  int ny;
  int bad;
} worker;

static void *work(void *arg) {
  worker *w = arg;
  mil_diag d;
  mil_diag_init(&d);
  float *y = malloc((size_t)w->ny * sizeof *y);
  fork_threads_wait();
  for (int r = 0; r < N_RUNS && y; r++)
    if (run(w->ip, w->c, w->x, y, &d) != MIL_OK || memcmp(y, w->want, (size_t)w->ny * sizeof *y) != 0) w->bad++;
  if (!y) w->bad++;
  free(y);
  mil_diag_clear(&d);
  return NULL;
}

static void test_forks_in_threads_identical(void **state) {
  (void)state;
  const cfg *c = &CASES[1];
  mil_program *p = parse(c);
  int nx = c->n * c->cin * c->h * c->w, ny = c->n * c->cout * oh_of(c) * ow_of(c);
  float *x = malloc((size_t)nx * sizeof *x), *want = malloc((size_t)ny * sizeof *want);
  for (int i = 0; i < nx; i++) x[i] = xval(i);
  mil_diag d;
  mil_diag_init(&d);
  mil_interp *alone = NULL, *root = NULL;
  assert_int_equal(mil_interp_new(p, NULL, &alone, &d), MIL_OK);
  assert_int_equal(run(alone, c, x, want, &d), MIL_OK);
  mil_interp_free(alone);
  assert_int_equal(mil_interp_new(p, NULL, &root, &d), MIL_OK); /* a fresh family: the threads race to cache */
  worker w[N_THREADS];
  for (int k = 0; k < N_THREADS; k++) w[k] = (worker){NULL, c, x, want, ny, 0};
  fork_threads_run(root, N_THREADS, w, sizeof w[0], work, &d);
  for (int k = 0; k < N_THREADS; k++) assert_int_equal(w[k].bad, 0);
  mil_interp_free(root);
  mil_diag_clear(&d);
  mil_program_free(p);
  free(x), free(want);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_conv_against_reference),
      cmocka_unit_test(test_conv_banded_against_reference),
      cmocka_unit_test(test_conv_fp16),
      cmocka_unit_test(test_forks_in_threads_identical),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
