/* Intra-op threads (mil_interp_set_threads, mil/interp.h): the setting's
 * bounds, its default and its inheritance by forks; and a run on 2 threads
 * equals the run on 1 thread: bit for bit for the elementwise kernels (each
 * element is computed alone, whatever the split), within the documented
 * tolerance (a few ulp of the sums) for a matrix product. The tensors are
 * large enough (262144 elements) for the unary maps to be split. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "mil/interp.h"
#include "mil/mil.h"
#include "mil/text.h"

#define C 16
#define HW 128
#define NX (C * HW * HW)

/* x (1, 16, 128, 128) fp32: sigmoid, exp of -|x|/4 (through mul and abs),
 * a squeeze-and-excite style mul by a (1, 16, 1, 1) const, the same
 * sigmoid in fp16, and a (128 x 128) matmul of the last two axes. */
static const char *k_prog =
    "main[CoreML6](%x: (1, 16, 128, 128, fp32)(Tensor)) {\n  block0() {\n"
    "    %s: (1, 16, 128, 128, fp32)(Tensor) = sigmoid(x=%x, name=\"s\")\n"
    "    %a: (1, 16, 128, 128, fp32)(Tensor) = abs(x=%x, name=\"a\")\n"
    "    %q: (fp32)*(Scalar) = const(val=-0.25, name=\"q\")\n"
    "    %aq: (1, 16, 128, 128, fp32)(Tensor) = mul(x=%a, y=%q, name=\"aq\")\n"
    "    %e: (1, 16, 128, 128, fp32)(Tensor) = exp(x=%aq, name=\"e\")\n"
    "    %g: (1, 16, 1, 1, fp32)*(Tensor) = const(val=[[[[0.5]], [[1.5]], [[-2]], [[3]], [[0.25]], [[-1]], [[2]], "
    "[[0.75]], [[1]], [[-0.5]], [[4]], [[0.125]], [[-3]], [[1.25]], [[2.5]], [[-0.25]]]], name=\"g\")\n"
    "    %se: (1, 16, 128, 128, fp32)(Tensor) = mul(x=%s, y=%g, name=\"se\")\n"
    "    %dt: (string)*(Scalar) = const(val=\"fp16\", name=\"dt\")\n"
    "    %xh: (1, 16, 128, 128, fp16)(Tensor) = cast(x=%x, dtype=%dt, name=\"xh\")\n"
    "    %sh: (1, 16, 128, 128, fp16)(Tensor) = sigmoid(x=%xh, name=\"sh\")\n"
    "    %f: (bool)*(Scalar) = const(val=False, name=\"f\")\n"
    "    %m: (1, 16, 128, 128, fp32)(Tensor) = matmul(x=%e, y=%s, transpose_x=%f, transpose_y=%f, name=\"m\")\n"
    "  } -> (%se, %e, %sh, %m)\n}\n";

static mil_program *g_prog;
static float *g_x;

static int setup(void **state) {
  (void)state;
  mil_diag d;
  mil_diag_init(&d);
  mil_parse_options po = {"intra.mil", NULL};
  mil_status st = mil_parse_program(k_prog, strlen(k_prog), &po, &g_prog, &d);
  if (st != MIL_OK) fprintf(stderr, "parse: %s\n", mil_diag_first_error(&d));
  mil_diag_clear(&d);
  g_x = malloc(NX * sizeof *g_x);
  if (!g_x) return -1;
  uint32_t s = 7;
  for (int i = 0; i < NX; i++) {
    s = s * 1664525u + 1013904223u;
    g_x[i] = ((float)(s >> 8) / 16777216.0f - 0.5f) * 24.0f; /* [-12, 12) */
  }
  return st == MIL_OK ? 0 : -1;
}

static int teardown(void **state) {
  (void)state;
  mil_program_free(g_prog);
  free(g_x);
  return 0;
}

static void test_setting(void **state) {
  (void)state;
  mil_diag d;
  mil_diag_init(&d);
  mil_interp *ip = NULL, *fk = NULL;
  assert_int_equal(mil_interp_new(g_prog, NULL, &ip, &d), MIL_OK);
  assert_true(mil_interp_threads(ip) >= 1); /* MIL_NUM_THREADS or the CPUs */
  assert_int_equal(mil_interp_set_threads(ip, -1), MIL_ERR_INVALID);
  assert_int_equal(mil_interp_set_threads(ip, MIL_INTERP_MAX_THREADS + 1), MIL_ERR_INVALID);
  assert_int_equal(mil_interp_set_threads(NULL, 1), MIL_ERR_INVALID);
  assert_int_equal(mil_interp_threads(NULL), 0);
  assert_int_equal(mil_interp_set_threads(ip, 3), MIL_OK);
  assert_int_equal(mil_interp_threads(ip), 3);
  assert_int_equal(mil_interp_fork(ip, &fk, &d), MIL_OK);
  assert_int_equal(mil_interp_threads(fk), 3);
  assert_int_equal(mil_interp_set_threads(ip, 0), MIL_OK); /* back to the default */
  assert_true(mil_interp_threads(ip) >= 1);
  mil_interp_free(fk);
  mil_interp_free(ip);
  mil_diag_clear(&d);
}

typedef struct outs {
  float se[NX], e[NX], m[NX];
  uint16_t sh[NX];
} outs;

static void run_with(int threads, outs *o) {
  mil_diag d;
  mil_diag_init(&d);
  mil_interp *ip = NULL;
  assert_int_equal(mil_interp_new(g_prog, NULL, &ip, &d), MIL_OK);
  assert_int_equal(mil_interp_set_threads(ip, threads), MIL_OK);
  const int64_t shape[4] = {1, C, HW, HW};
  mil_tensor t = {MIL_DT_FP32, 4, shape, g_x, NX * sizeof(float), NX};
  assert_int_equal(mil_interp_set_input(ip, "x", &t, &d), MIL_OK);
  mil_status st = mil_interp_run(ip, NULL, &d);
  if (st != MIL_OK) fprintf(stderr, "run: %s\n", mil_diag_first_error(&d));
  assert_int_equal(st, MIL_OK);
  const mil_tensor *se = mil_interp_output_at(ip, 0), *e = mil_interp_output_at(ip, 1), *sh = mil_interp_output_at(ip, 2),
                   *m = mil_interp_output_at(ip, 3);
  assert_true(se && e && sh && m);
  assert_int_equal(sh->dtype, MIL_DT_FP16);
  memcpy(o->se, se->data, sizeof o->se);
  memcpy(o->e, e->data, sizeof o->e);
  memcpy(o->sh, sh->data, sizeof o->sh);
  memcpy(o->m, m->data, sizeof o->m);
  mil_interp_free(ip);
  mil_diag_clear(&d);
}

static void test_two_threads_equal_one(void **state) {
  (void)state;
  outs *a = malloc(sizeof *a), *b = malloc(sizeof *b);
  assert_non_null(a);
  assert_non_null(b);
  run_with(1, a);
  run_with(2, b);
  /* the values are what they should be (independent of the split):
   * sigmoid * gate and exp(-|x|/4) against libm in double, 4 ulp */
  static const float gate[C] = {0.5f, 1.5f, -2, 3, 0.25f, -1, 2, 0.75f, 1, -0.5f, 4, 0.125f, -3, 1.25f, 2.5f, -0.25f};
  for (int i = 0; i < NX; i += 97) {
    double s = 1.0 / (1.0 + exp(-(double)g_x[i]));
    double want = (double)(float)s * gate[i / (HW * HW)];
    assert_true(fabs(a->se[i] - want) <= 8 * fabs(want) * 1.2e-7 + 1e-30);
    double ew = exp((double)(fabsf(g_x[i]) * -0.25f));
    assert_true(fabs(a->e[i] - ew) <= 2 * ew * 1.2e-7);
  }
  assert_memory_equal(a->se, b->se, sizeof a->se);
  assert_memory_equal(a->e, b->e, sizeof a->e);
  assert_memory_equal(a->sh, b->sh, sizeof a->sh);
  /* matmul: sums of 128 products of values in (0, 1]: within 1e-5
   * relative of each other (the libraries may split the sums) */
  for (int i = 0; i < NX; i++) assert_true(fabsf(a->m[i] - b->m[i]) <= 1e-5f * fabsf(a->m[i]) + 1e-6f);
  free(a), free(b);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_setting),
      cmocka_unit_test(test_two_threads_equal_one),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
