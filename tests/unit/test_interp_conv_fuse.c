/* Activation fusion of conv (src/interp/fuse.c, conv_dnnl.c): a conv whose
 * only reader is clip / relu / relu6 applies it itself; the results must
 * equal a naive reference written here (fp32: conv sums of multiples of
 * 1/8 are exact in any order, so the comparison is exact; SiLU, a conv
 * read by a sigmoid and a mul, within the sigmoid's error bound; hard
 * swish exactly) and be
 * bit-identical to the unfused run (MIL_INTERP_NO_FUSE) in fp32 and fp16,
 * also with a NaN in the input (NaN where the unfused run has NaN) (and with MIL_INTERP_DNNL_POSTOP, the
 * activation inside oneDNN's kernel, without NaN). A conv read by two ops, or returned by the
 * block, is not fused (its own output stays pre-activation). Convs whose
 * result only the next conv reads pass it in NHWC order (conv chains):
 * the same results through oneDNN and through the other paths. Then forks of
 * one interpreter run the program in several threads at once, several runs
 * each (the interpreters' buffer pools and work buffers reused), every run
 * bit-identical to a lone run. */
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
#include "text_buf.h"
#include "mil/interp.h"
#include "mil/mil.h"
#include "mil/text.h"

#define CIN 8
#define H 12
#define C1 16 /* conv 3x3 pad 1 -> clip(-0.5, 0.75) */
#define H2 6  /* depthwise 3x3 stride 2 pad 1 -> relu */
#define C3 8  /* 1x1 -> relu6 */
#define C4 8  /* 3x3 pad 1, read by relu and add: not fused */

static float wval(int i) { return (float)((i * 37 + 11) % 17 - 8) / 8.0f; }
static float xval(int i) { return (float)((i * 53 + 7) % 19 - 9) / 4.0f; }
static float bval(int i) { return (float)(i % 5 - 2) / 4.0f; }


static char *program_text(const char *dt) {
  text_buf b = {malloc(1 << 20), 0, 1 << 20};
  assert_non_null(b.s);
  text_put(&b, "main[CoreML6](%%x: (1, %d, %d, %d, %s)(Tensor)) {\n  block0() {\n", CIN, H, H, dt);
  text_put_weight(&b, dt, "w1", C1, CIN, 3, 0, wval);
  text_put(&b, "    %%b1: (%d, %s)*(Tensor) = const(val=[", C1, dt);
  for (int o = 0; o < C1; o++) text_put(&b, "%s%g", o ? ", " : "", bval(o));
  text_put(&b, "], name=\"b1\")\n");
  text_put(&b, "    %%lo: (%s)*(Scalar) = const(val=-0.5, name=\"lo\")\n", dt);
  text_put(&b, "    %%hi: (%s)*(Scalar) = const(val=0.75, name=\"hi\")\n", dt);
  text_put_weight(&b, dt, "w2", C1, 1, 3, 3, wval);
  text_put_weight(&b, dt, "w3", C3, C1, 1, 5, wval);
  text_put_weight(&b, dt, "w4", C4, C3, 3, 7, wval);
  text_put(&b,
      "    %%c1: (1, %d, %d, %d, %s)(Tensor) = conv(x=%%x, weight=%%w1, bias=%%b1, strides=[1, 1], "
      "pad_type=\"custom\", pad=[1, 1, 1, 1], dilations=[1, 1], groups=1, name=\"c1\")\n"
      "    %%a1: (1, %d, %d, %d, %s)(Tensor) = clip(x=%%c1, alpha=%%lo, beta=%%hi, name=\"a1\")\n",
      C1, H, H, dt, C1, H, H, dt);
  text_put(&b,
      "    %%c2: (1, %d, %d, %d, %s)(Tensor) = conv(x=%%a1, weight=%%w2, strides=[2, 2], pad_type=\"custom\", "
      "pad=[1, 1, 1, 1], dilations=[1, 1], groups=%d, name=\"c2\")\n"
      "    %%a2: (1, %d, %d, %d, %s)(Tensor) = relu(x=%%c2, name=\"a2\")\n",
      C1, H2, H2, dt, C1, C1, H2, H2, dt);
  text_put(&b,
      "    %%c3: (1, %d, %d, %d, %s)(Tensor) = conv(x=%%a2, weight=%%w3, strides=[1, 1], pad_type=\"valid\", "
      "dilations=[1, 1], groups=1, name=\"c3\")\n"
      "    %%a3: (1, %d, %d, %d, %s)(Tensor) = relu6(x=%%c3, name=\"a3\")\n",
      C3, H2, H2, dt, C3, H2, H2, dt);
  text_put(&b,
      "    %%c4: (1, %d, %d, %d, %s)(Tensor) = conv(x=%%a3, weight=%%w4, strides=[1, 1], pad_type=\"custom\", "
      "pad=[1, 1, 1, 1], dilations=[1, 1], groups=1, name=\"c4\")\n"
      "    %%a4: (1, %d, %d, %d, %s)(Tensor) = relu(x=%%c4, name=\"a4\")\n"
      "    %%s: (1, %d, %d, %d, %s)(Tensor) = add(x=%%c4, y=%%a4, name=\"s\")\n",
      C4, H2, H2, dt, C4, H2, H2, dt, C4, H2, H2, dt);
  /* c5: a block output (not fused), read by a relu too */
  text_put(&b,
      "    %%c5: (1, %d, %d, %d, %s)(Tensor) = conv(x=%%a3, weight=%%w4, strides=[1, 1], pad_type=\"custom\", "
      "pad=[1, 1, 1, 1], dilations=[1, 1], groups=1, name=\"c5\")\n"
      "    %%a5: (1, %d, %d, %d, %s)(Tensor) = relu(x=%%c5, name=\"a5\")\n",
      C4, H2, H2, dt, C4, H2, H2, dt);
  /* c6: SiLU as PyTorch exports it, the mul's operands in the other order */
  text_put(&b,
      "    %%c6: (1, %d, %d, %d, %s)(Tensor) = conv(x=%%a3, weight=%%w4, strides=[1, 1], pad_type=\"custom\", "
      "pad=[1, 1, 1, 1], dilations=[1, 1], groups=1, name=\"c6\")\n"
      "    %%g6: (1, %d, %d, %d, %s)(Tensor) = sigmoid(x=%%c6, name=\"g6\")\n"
      "    %%m6: (1, %d, %d, %d, %s)(Tensor) = mul(x=%%g6, y=%%c6, name=\"m6\")\n",
      C4, H2, H2, dt, C4, H2, H2, dt, C4, H2, H2, dt);
  /* c7: hard swish, sigmoid_hard with alpha 0.2 and beta 0.5 */
  text_put(&b, "    %%ha: (%s)*(Scalar) = const(val=0.2, name=\"ha\")\n", dt);
  text_put(&b, "    %%hb: (%s)*(Scalar) = const(val=0.5, name=\"hb\")\n", dt);
  text_put(&b,
      "    %%c7: (1, %d, %d, %d, %s)(Tensor) = conv(x=%%a3, weight=%%w4, strides=[1, 1], pad_type=\"custom\", "
      "pad=[1, 1, 1, 1], dilations=[1, 1], groups=1, name=\"c7\")\n"
      "    %%g7: (1, %d, %d, %d, %s)(Tensor) = sigmoid_hard(x=%%c7, alpha=%%ha, beta=%%hb, name=\"g7\")\n"
      "    %%m7: (1, %d, %d, %d, %s)(Tensor) = mul(x=%%c7, y=%%g7, name=\"m7\")\n",
      C4, H2, H2, dt, C4, H2, H2, dt, C4, H2, H2, dt);
  text_put(&b, "  } -> (%%s, %%c5, %%a5, %%m6, %%m7)\n}\n");
  return b.s;
}

static mil_program *parse(const char *dt) {
  char *text = program_text(dt);
  mil_program *p = ifix_parse(text, "fuse.mil");
  free(text);
  return p;
}

/* ---- reference (fp32, double sums: exact for these values) ---- */

static void conv_ref(const float *x, int cin, int h, const float *w, int wseed, const float *bias, int cout, int k,
                     int s, int pad, int groups, float *y) {
  int oh = (h + 2 * pad - k) / s + 1, cg = cin / groups, og = cout / groups;
  (void)w;
  for (int o = 0; o < cout; o++)
    for (int i = 0; i < oh; i++)
      for (int j = 0; j < oh; j++) {
        double acc = bias ? bias[o] : 0.0;
        for (int c = 0; c < cg; c++)
          for (int u = 0; u < k; u++)
            for (int v = 0; v < k; v++) {
              int hh = i * s - pad + u, ww = j * s - pad + v;
              if (hh < 0 || hh >= h || ww < 0 || ww >= h) continue;
              acc += (double)wval(wseed + ((o * cg + c) * k + u) * k + v) * x[((o / og * cg + c) * h + hh) * h + ww];
            }
        y[(o * oh + i) * oh + j] = (float)acc;
      }
}

static float clipf(float v, float lo, float hi) { return v < lo ? lo : v > hi ? hi : v; }

#define NX (CIN * H * H)
#define NS (C4 * H2 * H2)

/* s, c5, a5 of the program on x */
static void reference(const float *x, float *s, float *c5, float *a5) {
  static float c1[C1 * H * H], c2[C1 * H2 * H2], c3[C3 * H2 * H2], c4[NS];
  float b1[C1];
  for (int o = 0; o < C1; o++) b1[o] = bval(o);
  conv_ref(x, CIN, H, NULL, 0, b1, C1, 3, 1, 1, 1, c1);
  for (int i = 0; i < C1 * H * H; i++) c1[i] = clipf(c1[i], -0.5f, 0.75f);
  conv_ref(c1, C1, H, NULL, 3, NULL, C1, 3, 2, 1, C1, c2);
  for (int i = 0; i < C1 * H2 * H2; i++) c2[i] = c2[i] < 0 ? 0 : c2[i];
  conv_ref(c2, C1, H2, NULL, 5, NULL, C3, 1, 1, 0, 1, c3);
  for (int i = 0; i < C3 * H2 * H2; i++) c3[i] = clipf(c3[i], 0, 6);
  conv_ref(c3, C3, H2, NULL, 7, NULL, C4, 3, 1, 1, 1, c4);
  for (int i = 0; i < NS; i++) {
    float r = c4[i] < 0 ? 0 : c4[i];
    s[i] = c4[i] + r;
    c5[i] = c4[i];
    a5[i] = r;
  }
}

/* ---- running ---- */

typedef struct outs {
  uint8_t b[5][NS * 4]; /* the outputs' bytes (fp16: the first half) */
  size_t n[5];
} outs;

static mil_status run(mil_interp *ip, bool fp16, const float *x, outs *o, mil_diag *d) {
  int64_t shape[4] = {1, CIN, H, H};
  uint16_t xh[NX];
  mil_tensor t = {MIL_DT_FP32, 4, shape, x, sizeof(float) * NX, NX};
  if (fp16) {
    mil_fp32_to_fp16_array(x, xh, NX);
    t = (mil_tensor){MIL_DT_FP16, 4, shape, xh, sizeof xh, NX};
  }
  mil_status st = mil_interp_set_input(ip, "x", &t, d);
  if (st == MIL_OK) st = mil_interp_run(ip, NULL, d);
  if (st != MIL_OK) return st;
  memset(o, 0, sizeof *o);
  for (int i = 0; i < 5; i++) {
    const mil_tensor *r = mil_interp_output_at(ip, i);
    assert_true(r->nbytes <= sizeof o->b[i]);
    memcpy(o->b[i], r->data, r->nbytes);
    o->n[i] = r->nbytes;
  }
  return MIL_OK;
}

/* one fresh interpreter's outputs (two runs: the second reuses the cached
 * primitives and the pool; both must agree) */
static void run_fresh(mil_program *p, bool fp16, const float *x, const char *env, outs *o) {
  if (env) setenv(env, "1", 1);
  mil_diag d;
  mil_diag_init(&d);
  mil_interp *ip = NULL;
  if (mil_interp_new(p, NULL, &ip, &d) != MIL_OK) fail_msg("interpreter: %s", mil_diag_first_error(&d));
  outs again;
  if (run(ip, fp16, x, o, &d) != MIL_OK || run(ip, fp16, x, &again, &d) != MIL_OK)
    fail_msg("run: %s", mil_diag_first_error(&d));
  assert_memory_equal(o, &again, sizeof again);
  mil_interp_free(ip);
  mil_diag_clear(&d);
  if (env) unsetenv(env);
}

static void inputs(float *x, bool with_nan) {
  for (int i = 0; i < NX; i++) x[i] = xval(i);
  if (with_nan) x[3 * H + 5] = NAN, x[CIN * H * H - 7] = NAN;
}

static void test_fused_fp32_equals_reference(void **state) {
  (void)state;
  mil_program *p = parse("fp32");
  float x[NX], s[NS], c5[NS], a5[NS];
  inputs(x, false);
  reference(x, s, c5, a5);
  outs o;
  run_fresh(p, false, x, NULL, &o);
  const float *got[3] = {(const float *)o.b[0], (const float *)o.b[1], (const float *)o.b[2]};
  const float *want[3] = {s, c5, a5};
  for (int k = 0; k < 3; k++) {
    assert_int_equal(o.n[k], sizeof s);
    for (int i = 0; i < NS; i++)
      if (got[k][i] != want[k][i]) fail_msg("output %d [%d]: %g, want %g", k, i, got[k][i], want[k][i]);
  }
  /* SiLU: x * sigmoid(x) within the vectorized sigmoid's 4 ulp */
  const float *m6 = (const float *)o.b[3];
  for (int i = 0; i < NS; i++) {
    double want_m = c5[i] / (1.0 + exp(-(double)c5[i]));
    if (fabs(m6[i] - want_m) > 1e-6 * (1.0 + fabs(want_m))) fail_msg("silu [%d]: %g, want %g", i, m6[i], want_m);
  }
  /* hard swish: x * min(max(0.2 x + 0.5, 0), 1), each step rounded to
   * fp32 as numpy's float32 (coremltools' value inference) */
  const float *m7 = (const float *)o.b[4];
  for (int i = 0; i < NS; i++) {
    float p = 0.2f * c5[i];
    float g = p + 0.5f;
    g = g < 0 ? 0.0f : g > 1 ? 1.0f : g;
    float want_h = c5[i] * g;
    if (m7[i] != want_h) fail_msg("hard swish [%d]: %g, want %g", i, m7[i], want_h);
  }
  /* c5 is the conv's own output (a block output: not fused): negatives stay */
  bool neg = false;
  for (int i = 0; i < NS; i++) neg |= got[1][i] < 0;
  assert_true(neg);
  mil_program_free(p);
}

static bool is_nan(const uint8_t *p, bool fp16) {
  if (fp16) {
    uint16_t h;
    memcpy(&h, p, 2);
    return (h & 0x7c00) == 0x7c00 && (h & 0x3ff);
  }
  float f;
  memcpy(&f, p, 4);
  return f != f;
}

/* fused (env NULL, or the switch env set) against MIL_INTERP_NO_FUSE */
static void check_same_as_unfused(const char *dt, bool with_nan, const char *env) {
  mil_program *p = parse(dt);
  bool fp16 = strcmp(dt, "fp16") == 0;
  float x[NX];
  inputs(x, with_nan);
  outs fused, plain;
  run_fresh(p, fp16, x, env, &fused);
  run_fresh(p, fp16, x, "MIL_INTERP_NO_FUSE", &plain);
  for (int k = 0; k < 5; k++) {
    assert_int_equal(fused.n[k], plain.n[k]);
    size_t es = fp16 ? 2 : 4;
    for (size_t i = 0; i < fused.n[k]; i += es) {
      if (memcmp(fused.b[k] + i, plain.b[k] + i, es) == 0) continue;
      /* equal bits, or NaN in both (a NaN's sign and payload are not
       * specified: mul's operand order may pick either NaN) */
      if (is_nan(fused.b[k] + i, fp16) && is_nan(plain.b[k] + i, fp16)) continue;
      fail_msg("%s%s: output %d element %zu differs from the unfused run", dt, with_nan ? " with NaN" : "", k, i / es);
    }
  }
  if (with_nan) { /* the NaN reached the outputs */
    bool any = false;
    for (size_t i = 0; i < fused.n[0]; i += fp16 ? 2 : 4) any |= is_nan(fused.b[0] + i, fp16);
    assert_true(any);
  }
  mil_program_free(p);
}

static void test_fused_equals_unfused(void **state) {
  (void)state;
  check_same_as_unfused("fp32", false, NULL);
  check_same_as_unfused("fp16", false, NULL);
}

/* MIL_INTERP_DNNL_POSTOP: the activation inside oneDNN's kernel, the same
 * results (no NaN here: that switch turns a NaN into the lower bound) */
static void test_postop_equals_unfused(void **state) {
  (void)state;
  check_same_as_unfused("fp32", false, "MIL_INTERP_DNNL_POSTOP");
  check_same_as_unfused("fp16", false, "MIL_INTERP_DNNL_POSTOP");
}

/* Conv chains (fuse.c): c1 -> clip -> c2 and c2 -> relu -> c3 pass their
 * values in NHWC order; with oneDNN off (MIL_INTERP_NO_DNNL_CONV) the
 * other paths convert at the chain's ends: the same results. */
static void test_chain_fallback_equals_unfused(void **state) {
  (void)state;
  check_same_as_unfused("fp32", false, "MIL_INTERP_NO_DNNL_CONV");
  check_same_as_unfused("fp16", false, "MIL_INTERP_NO_DNNL_CONV");
  check_same_as_unfused("fp32", false, "MIL_INTERP_DW_DIRECT");
}

static void test_fused_equals_unfused_nan(void **state) {
  (void)state;
  check_same_as_unfused("fp32", true, NULL);
  check_same_as_unfused("fp16", true, NULL);
}

/* ---- several threads predicting at once ---- */

#define N_THREADS 4
#define N_RUNS 5

typedef struct worker {
  mil_interp *ip;
  bool fp16;
  const float *x;
  const outs *want;
  int bad;
} worker;

static void *work(void *arg) {
  worker *w = arg;
  mil_diag d;
  mil_diag_init(&d);
  outs *o = malloc(sizeof *o);
  fork_threads_wait();
  for (int r = 0; r < N_RUNS && o; r++)
    if (run(w->ip, w->fp16, w->x, o, &d) != MIL_OK || memcmp(o, w->want, sizeof *o) != 0) w->bad++;
  if (!o) w->bad++;
  free(o);
  mil_diag_clear(&d);
  return NULL;
}

static void threads_case(const char *dt) {
  mil_program *p = parse(dt);
  bool fp16 = strcmp(dt, "fp16") == 0;
  float x[NX];
  inputs(x, false);
  outs want;
  run_fresh(p, fp16, x, NULL, &want);
  mil_diag d;
  mil_diag_init(&d);
  mil_interp *root = NULL;
  assert_int_equal(mil_interp_new(p, NULL, &root, &d), MIL_OK); /* a fresh family: the threads race to plan and cache */
  worker w[N_THREADS];
  for (int k = 0; k < N_THREADS; k++) w[k] = (worker){NULL, fp16, x, &want, 0};
  fork_threads_run(root, N_THREADS, w, sizeof w[0], work, &d);
  for (int k = 0; k < N_THREADS; k++) assert_int_equal(w[k].bad, 0);
  mil_interp_free(root);
  mil_diag_clear(&d);
  mil_program_free(p);
}

static void test_forks_in_threads_identical(void **state) {
  (void)state;
  threads_case("fp32");
  threads_case("fp16");
}

int main(void) {
  unsetenv("MIL_INTERP_NO_FUSE"); /* the defaults are under test */
  unsetenv("MIL_INTERP_DNNL_POSTOP");
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_fused_fp32_equals_reference),
      cmocka_unit_test(test_fused_equals_unfused),
      cmocka_unit_test(test_postop_equals_unfused),
      cmocka_unit_test(test_chain_fallback_equals_unfused),
      cmocka_unit_test(test_fused_equals_unfused_nan),
      cmocka_unit_test(test_forks_in_threads_identical),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
