/* The interpreter's fp16 elementwise kernels (src/interp/elementwise.c:
 * fp16 operands and output computed in fp32 blocks, rounded once at the
 * output) against a reference computed here element by element: each
 * fp16 input widened exactly, the op in fp32, rounded to fp16 (to nearest
 * even). Binary ops over numpy broadcasting (a (2, 3, 4, 1050) tensor with
 * a (1, 3, 1, 1) one, with a (1, 1, 1, 1050) row repeated for each of its
 * 24 rows on either side, with a scalar, and two equal shapes whose inner
 * run is longer than a block), unary maps (clip, relu, abs) and sigmoid (whose
 * fp32 kernel is tested in test_interp_vmath: here the fp16 path must give
 * its values rounded). NaN and infinities among the inputs. */
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
#include "mil/types.h"

#define N0 2
#define N1 3
#define N2 4
#define N3 1050
#define NX (N0 * N1 * N2 * N3)

static const char *k_prog =
    "main[CoreML6](%x: (2, 3, 4, 1050, fp16)(Tensor), %y: (2, 3, 4, 1050, fp16)(Tensor), "
    "%g: (1, 3, 1, 1, fp16)(Tensor), %w: (1, 1, 1, 1050, fp16)(Tensor)) {\n  block0() {\n"
    "    %add: (2, 3, 4, 1050, fp16)(Tensor) = add(x=%x, y=%y, name=\"add\")\n"
    "    %mul: (2, 3, 4, 1050, fp16)(Tensor) = mul(x=%x, y=%g, name=\"mul\")\n"
    "    %sub: (2, 3, 4, 1050, fp16)(Tensor) = sub(x=%g, y=%x, name=\"sub\")\n"
    "    %h: (fp16)*(Scalar) = const(val=0.333, name=\"h\")\n"
    "    %div: (2, 3, 4, 1050, fp16)(Tensor) = real_div(x=%x, y=%h, name=\"div\")\n"
    "    %mx: (2, 3, 4, 1050, fp16)(Tensor) = maximum(x=%x, y=%y, name=\"mx\")\n"
    "    %lo: (fp16)*(Scalar) = const(val=-1.5, name=\"lo\")\n"
    "    %hi: (fp16)*(Scalar) = const(val=6.0, name=\"hi\")\n"
    "    %clip: (2, 3, 4, 1050, fp16)(Tensor) = clip(x=%x, alpha=%lo, beta=%hi, name=\"clip\")\n"
    "    %relu: (2, 3, 4, 1050, fp16)(Tensor) = relu(x=%x, name=\"relu\")\n"
    "    %abs: (2, 3, 4, 1050, fp16)(Tensor) = abs(x=%x, name=\"abs\")\n"
    "    %sig: (2, 3, 4, 1050, fp16)(Tensor) = sigmoid(x=%x, name=\"sig\")\n"
    "    %rs: (2, 3, 4, 1050, fp16)(Tensor) = sub(x=%x, y=%w, name=\"rs\")\n"
    "    %sr: (2, 3, 4, 1050, fp16)(Tensor) = sub(x=%w, y=%x, name=\"sr\")\n"
    "  } -> (%add, %mul, %sub, %div, %mx, %clip, %relu, %abs, %sig, %rs, %sr)\n}\n";

static uint16_t g_x[NX], g_y[NX], g_g[N1], g_w[N3];

static float h2f(uint16_t h) { return mil_fp16_to_fp32(h); }
static uint16_t f2h(float f) { return mil_fp32_to_fp16(f); }

/* fp16 bits equal, any NaN equal to any NaN */
static void same(const uint16_t *got, const uint16_t *want, const char *name) {
  for (int i = 0; i < NX; i++) {
    bool gn = isnan(h2f(got[i])), wn = isnan(h2f(want[i]));
    if (gn && wn) continue;
    if (got[i] != want[i])
      fail_msg("%s[%d]: got 0x%04x (%g), want 0x%04x (%g)", name, i, got[i], (double)h2f(got[i]), want[i],
               (double)h2f(want[i]));
  }
}

static void test_fp16_elementwise(void **state) {
  (void)state;
  uint32_t s = 99;
  for (int i = 0; i < NX; i++) {
    s = s * 1664525u + 1013904223u;
    g_x[i] = f2h(((float)(s >> 8) / 16777216.0f - 0.5f) * 40.0f);
    s = s * 1664525u + 1013904223u;
    g_y[i] = f2h(((float)(s >> 8) / 16777216.0f - 0.5f) * 3000.0f);
  }
  g_x[5] = f2h(NAN), g_x[77] = f2h(INFINITY), g_y[78] = f2h(-INFINITY), g_x[1000] = f2h(65504.0f);
  g_y[1000] = f2h(65504.0f); /* the sum overflows to inf */
  g_g[0] = f2h(0.5f), g_g[1] = f2h(-3.25f), g_g[2] = f2h(1000.0f);
  for (int i = 0; i < N3; i++) g_w[i] = f2h((float)(i % 37) * 0.37f - 5.0f);
  g_w[3] = f2h(INFINITY);
  mil_diag d;
  mil_diag_init(&d);
  mil_program *p = ifix_parse(k_prog, "fp16.mil");
  mil_interp *ip = NULL;
  assert_int_equal(mil_interp_new(p, NULL, &ip, &d), MIL_OK);
  const int64_t sh[4] = {N0, N1, N2, N3}, gs[4] = {1, N1, 1, 1};
  mil_tensor tx = {MIL_DT_FP16, 4, sh, g_x, sizeof g_x, NX}, ty = {MIL_DT_FP16, 4, sh, g_y, sizeof g_y, NX};
  mil_tensor tg = {MIL_DT_FP16, 4, gs, g_g, sizeof g_g, N1};
  const int64_t ws[4] = {1, 1, 1, N3};
  mil_tensor tw = {MIL_DT_FP16, 4, ws, g_w, sizeof g_w, N3};
  assert_int_equal(mil_interp_set_input(ip, "x", &tx, &d), MIL_OK);
  assert_int_equal(mil_interp_set_input(ip, "y", &ty, &d), MIL_OK);
  assert_int_equal(mil_interp_set_input(ip, "g", &tg, &d), MIL_OK);
  assert_int_equal(mil_interp_set_input(ip, "w", &tw, &d), MIL_OK);
  if (mil_interp_run(ip, NULL, &d) != MIL_OK) fail_msg("%s", mil_diag_first_error(&d));
  static uint16_t want[NX];
  static float fx[NX], fs[NX];
  const float third = h2f(f2h(0.333f));
  for (int k = 0; k < 11; k++) {
    const mil_tensor *o = mil_interp_output_at(ip, k);
    assert_non_null(o);
    assert_int_equal(o->dtype, MIL_DT_FP16);
    assert_int_equal(o->numel, NX);
    for (int i = 0; i < NX; i++) {
      float a = h2f(g_x[i]), b = h2f(g_y[i]), c = h2f(g_g[(i / (N2 * N3)) % N1]), r = 0;
      switch (k) {
      case 0: r = a + b; break;
      case 1: r = a * c; break;
      case 2: r = c - a; break;
      case 3: r = a / third; break;
      case 4: r = isnan(a) || isnan(b) ? NAN : a > b ? a : b; break;
      case 5: r = a < -1.5f ? -1.5f : a > 6.0f ? 6.0f : a; break;
      case 6: r = a < 0 ? 0.0f : a; break;
      case 7: r = fabsf(a); break;
      case 9: r = a - h2f(g_w[i % N3]); break;
      case 10: r = h2f(g_w[i % N3]) - a; break;
      case 8: fx[i] = a; break;
      default: break;
      }
      want[i] = f2h(r);
    }
    if (k == 8) {
      interp_vsigmoid(fx, fs, NX);
      for (int i = 0; i < NX; i++) want[i] = f2h(fs[i]);
    }
    if (k == 5 || k == 6) want[5] = ((const uint16_t *)o->data)[5]; /* clip / relu of NaN: the kernel's choice */
    static const char *names[] = {"add",  "mul",  "sub",     "real_div", "maximum",    "clip",
                                  "relu", "abs",  "sigmoid", "sub (row as y)", "sub (row as x)"};
    same(o->data, want, names[k]);
  }
  assert_true(isinf(h2f(((const uint16_t *)mil_interp_output_at(ip, 0)->data)[1000])));
  mil_interp_free(ip);
  mil_program_free(p);
  mil_diag_clear(&d);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_fp16_elementwise),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
