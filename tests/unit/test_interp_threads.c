/* The interpreter's thread-safety contract (mil/interp.h "Threads"):
 * forks of one interpreter (mil_interp_fork) share the program copy and
 * the caches (fp32 copies of fp16 weights, decompressed constexpr weights)
 * and run at the same time in several threads; every thread's results must
 * equal, bit for bit, what one interpreter computes alone for the same
 * input. Also: states shared across a family and outliving the
 * interpreter that made them, and mil_interp_clear_inputs. */
#include <pthread.h>
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

#define N_THREADS 8
#define N_RUNS 12
#define ROWS 4
#define COLS 64

/* fp16 bit pattern of a small multiple of 1/16 in [-0.5, 0.5] (exact in fp16). */
static uint16_t h16(int k) { return mil_fp32_to_fp16((float)k / 16.0f); }

/* x (4, 64) fp32 -> cast fp16 -> linear with an fp16 weight (64 x 64, a const
 * the interpreter widens once into its cache) -> relu -> matmul with a
 * constexpr_affine_dequantize weight (decompressed once into the cache) ->
 * cast fp32. Two outputs: the hidden layer and the result. */
static char *program_text(void) {
  size_t cap = 1 << 20, l = 0;
  char *s = malloc(cap);
  assert_non_null(s);
  l += (size_t)snprintf(s + l, cap - l,
                        "main[CoreML6](%%x: (%d, %d, fp32)(Tensor)) {\n  block0() {\n"
                        "    %%dt: (string)*(Scalar) = const(val=\"fp16\", name=\"dt\")\n"
                        "    %%xh: (%d, %d, fp16)(Tensor) = cast(x=%%x, dtype=%%dt, name=\"xh\")\n"
                        "    %%w: (%d, %d, fp16)*(Tensor) = const(val=[",
                        ROWS, COLS, ROWS, COLS, COLS, COLS);
  for (int i = 0; i < COLS; i++) {
    l += (size_t)snprintf(s + l, cap - l, "%s[", i ? ", " : "");
    for (int j = 0; j < COLS; j++)
      l += (size_t)snprintf(s + l, cap - l, "%s%g", j ? ", " : "", mil_fp16_to_fp32(h16((i * 7 + j * 3) % 17 - 8)));
    l += (size_t)snprintf(s + l, cap - l, "]");
  }
  l += (size_t)snprintf(s + l, cap - l,
                        "], name=\"w\")\n"
                        "    %%h: (%d, %d, fp16)(Tensor) = linear(x=%%xh, weight=%%w, name=\"h\")\n"
                        "    %%r: (%d, %d, fp16)(Tensor) = relu(x=%%h, name=\"r\")\n"
                        "    %%q: (%d, %d, uint8)*(Tensor) = const(val=[",
                        ROWS, COLS, ROWS, COLS, COLS, COLS);
  for (int i = 0; i < COLS; i++) {
    l += (size_t)snprintf(s + l, cap - l, "%s[", i ? ", " : "");
    for (int j = 0; j < COLS; j++) l += (size_t)snprintf(s + l, cap - l, "%s%d", j ? ", " : "", (i * 5 + j * 11) % 256);
    l += (size_t)snprintf(s + l, cap - l, "]");
  }
  l += (size_t)snprintf(s + l, cap - l,
                        "], name=\"q\")\n"
                        "    %%zp: (uint8)*(Scalar) = const(val=128, name=\"zp\")\n"
                        "    %%sc: (fp16)*(Scalar) = const(val=0.0078125, name=\"sc\")\n"
                        "    %%ax: (int32)*(Scalar) = const(val=0, name=\"ax\")\n"
                        "    %%w2: (%d, %d, fp16)(Tensor) = constexpr_affine_dequantize(quantized_data=%%q, "
                        "zero_point=%%zp, scale=%%sc, axis=%%ax, name=\"w2\")\n"
                        "    %%f: (bool)*(Scalar) = const(val=False, name=\"f\")\n"
                        "    %%m: (%d, %d, fp16)(Tensor) = matmul(x=%%r, y=%%w2, transpose_x=%%f, transpose_y=%%f, "
                        "name=\"m\")\n"
                        "    %%dt32: (string)*(Scalar) = const(val=\"fp32\", name=\"dt32\")\n"
                        "    %%y: (%d, %d, fp32)(Tensor) = cast(x=%%m, dtype=%%dt32, name=\"y\")\n"
                        "  } -> (%%r, %%y)\n}\n",
                        COLS, COLS, ROWS, COLS, ROWS, COLS);
  assert_true(l < cap);
  return s;
}

/* Input k: distinct values per thread. */
static void input_of(int k, float *x) {
  for (int i = 0; i < ROWS * COLS; i++) x[i] = (float)(((i * 13 + k * 29) % 23) - 11) / 8.0f;
}

typedef struct result {
  uint16_t r[ROWS * COLS];
  float y[ROWS * COLS];
} result;

static mil_program *g_prog;
static result g_want[N_THREADS];

static mil_status run_one(mil_interp *ip, int k, result *out, mil_diag *d) {
  float x[ROWS * COLS];
  input_of(k, x);
  const int64_t shape[2] = {ROWS, COLS};
  mil_tensor t = {MIL_DT_FP32, 2, shape, x, sizeof x, ROWS * COLS};
  mil_status st = mil_interp_set_input(ip, "x", &t, d);
  if (st == MIL_OK) st = mil_interp_run(ip, NULL, d);
  if (st != MIL_OK) return st;
  const mil_tensor *r = mil_interp_output_at(ip, 0), *y = mil_interp_output_at(ip, 1);
  if (!r || !y || r->nbytes != sizeof out->r || y->nbytes != sizeof out->y) return MIL_ERR_INVALID;
  memcpy(out->r, r->data, sizeof out->r);
  memcpy(out->y, y->data, sizeof out->y);
  return MIL_OK;
}

static int setup(void **state) {
  (void)state;
  char *text = program_text();
  mil_diag d;
  mil_diag_init(&d);
  mil_parse_options po = {"threads.mil", NULL};
  mil_status st = mil_parse_program(text, strlen(text), &po, &g_prog, &d);
  if (st != MIL_OK) fprintf(stderr, "parse: %s\n", mil_diag_first_error(&d));
  free(text);
  /* the reference: one interpreter per input, alone, in this thread */
  for (int k = 0; st == MIL_OK && k < N_THREADS; k++) {
    mil_interp *ip = NULL;
    st = mil_interp_new(g_prog, NULL, &ip, &d);
    if (st == MIL_OK) st = run_one(ip, k, &g_want[k], &d);
    if (st != MIL_OK) fprintf(stderr, "reference run %d: %s\n", k, mil_diag_first_error(&d));
    mil_interp_free(ip);
  }
  mil_diag_clear(&d);
  return st == MIL_OK ? 0 : -1;
}

static int teardown(void **state) {
  (void)state;
  mil_program_free(g_prog);
  return 0;
}

/* The reference is not trivial: relu zeroes some of the hidden layer and
 * keeps others, and inputs differ in what they produce. */
static void test_reference_is_informative(void **state) {
  (void)state;
  int zeros = 0, pos = 0;
  for (int i = 0; i < ROWS * COLS; i++) {
    float v = mil_fp16_to_fp32(g_want[0].r[i]);
    zeros += v == 0.0f;
    pos += v > 0.0f;
  }
  assert_true(zeros > 0 && pos > 0);
  assert_memory_not_equal(g_want[0].y, g_want[1].y, sizeof g_want[0].y);
  /* one element by hand: h[0][0] = sum_j x[0][j] * w[0][j] (all exact in fp16) */
  float x[ROWS * COLS];
  input_of(0, x);
  double h = 0;
  for (int j = 0; j < COLS; j++) h += (double)x[j] * ((double)((0 * 7 + j * 3) % 17 - 8) / 16.0);
  assert_true(mil_fp16_to_fp32(g_want[0].r[0]) == (float)(h > 0 ? h : 0));
}

typedef struct worker {
  mil_interp *ip;
  int k;
  int mismatches;
  mil_status st;
  char err[256];
} worker;

static pthread_barrier_t g_start;

static void *work(void *arg) {
  worker *w = arg;
  mil_diag d;
  mil_diag_init(&d);
  pthread_barrier_wait(&g_start);
  for (int n = 0; n < N_RUNS && w->st == MIL_OK; n++) {
    result got;
    w->st = run_one(w->ip, w->k, &got, &d);
    if (w->st != MIL_OK) {
      snprintf(w->err, sizeof w->err, "%s", mil_diag_first_error(&d) ? mil_diag_first_error(&d) : "?");
      break;
    }
    if (memcmp(&got, &g_want[w->k], sizeof got) != 0) w->mismatches++;
  }
  mil_diag_clear(&d);
  return NULL;
}

/* N threads, each with its own fork of one interpreter (created before the
 * first run, so the threads fill the shared caches concurrently), each its
 * own input, N_RUNS runs each: every result equals the lone run's. */
static void test_forks_in_threads_match_single_thread(void **state) {
  (void)state;
  mil_diag d;
  mil_diag_init(&d);
  mil_interp *root = NULL;
  assert_int_equal(mil_interp_new(g_prog, NULL, &root, &d), MIL_OK);
  worker w[N_THREADS];
  pthread_t th[N_THREADS];
  memset(w, 0, sizeof w);
  for (int k = 0; k < N_THREADS; k++) {
    w[k].k = k;
    w[k].st = MIL_OK;
    assert_int_equal(k == 0 ? MIL_OK : mil_interp_fork(root, &w[k].ip, &d), MIL_OK);
    if (k == 0) w[k].ip = root;
  }
  assert_int_equal(pthread_barrier_init(&g_start, NULL, N_THREADS), 0);
  for (int k = 0; k < N_THREADS; k++) assert_int_equal(pthread_create(&th[k], NULL, work, &w[k]), 0);
  for (int k = 0; k < N_THREADS; k++) pthread_join(th[k], NULL);
  pthread_barrier_destroy(&g_start);
  for (int k = 0; k < N_THREADS; k++) {
    if (w[k].st != MIL_OK) fail_msg("thread %d: %s", k, w[k].err);
    if (w[k].mismatches) fail_msg("thread %d: %d of %d runs differ from the single-thread result", k, w[k].mismatches, N_RUNS);
  }
  /* the forks outlive the interpreter they were made from */
  mil_interp_free(root);
  result got;
  assert_int_equal(run_one(w[3].ip, 5, &got, &d), MIL_OK);
  assert_memory_equal(&got, &g_want[5], sizeof got);
  for (int k = 1; k < N_THREADS; k++) mil_interp_free(w[k].ip);
  mil_diag_clear(&d);
}

/* A fork starts without inputs, and mil_interp_clear_inputs forgets them:
 * the run fails naming the input instead of reusing an earlier one. */
static void test_fork_and_clear_need_inputs(void **state) {
  (void)state;
  mil_diag d;
  mil_diag_init(&d);
  mil_interp *ip = NULL, *fk = NULL;
  assert_int_equal(mil_interp_new(g_prog, NULL, &ip, &d), MIL_OK);
  result got;
  assert_int_equal(run_one(ip, 2, &got, &d), MIL_OK);
  assert_int_equal(mil_interp_fork(ip, &fk, &d), MIL_OK);
  assert_int_equal(mil_interp_run(fk, NULL, &d), MIL_ERR_INVALID);
  assert_non_null(strstr(mil_diag_first_error(&d), "input 'x'"));
  mil_diag_clear(&d);
  assert_int_equal(mil_interp_run(ip, NULL, &d), MIL_OK); /* inputs stay set across runs */
  mil_interp_clear_inputs(ip);
  assert_int_equal(mil_interp_run(ip, NULL, &d), MIL_ERR_INVALID);
  if (!strstr(mil_diag_first_error(&d), "input 'x' (4, 64, fp32) was not set")) fail_msg("%s", mil_diag_first_error(&d));
  assert_null(mil_interp_output_at(ip, 0));
  mil_interp_clear_inputs(NULL);
  mil_interp_free(fk);
  assert_int_equal(mil_interp_fork(NULL, &fk, &d), MIL_ERR_INVALID);
  assert_null(fk);
  mil_interp_free(ip);
  mil_diag_clear(&d);
}

/* A state made by one interpreter serves its forks and outlives it; an
 * interpreter of another mil_interp_new refuses it. */
static void test_state_shared_by_family(void **state) {
  (void)state;
  static const char *text = "main[CoreML8](%s: (2,fp16)(State), %x: (2,fp16)(Tensor)) {\n  block0() {\n"
                            "    %r: (2,fp16)(Tensor) = read_state(input=%s, name=\"r\")\n"
                            "    %a: (2,fp16)(Tensor) = add(x=%r, y=%x, name=\"a\")\n"
                            "    %u: (2,fp16)(Tensor) = coreml_update_state(state=%s, value=%a, name=\"u\")\n"
                            "  } -> (%u)\n}\n";
  mil_diag d;
  mil_diag_init(&d);
  mil_program *p = NULL;
  mil_parse_options po = {"state.mil", NULL};
  if (mil_parse_program(text, strlen(text), &po, &p, &d) != MIL_OK) fail_msg("parse: %s", mil_diag_first_error(&d));
  mil_interp *ip = NULL, *fk = NULL, *other = NULL;
  mil_interp_state *s = NULL;
  assert_int_equal(mil_interp_new(p, NULL, &ip, &d), MIL_OK);
  assert_int_equal(mil_interp_new(p, NULL, &other, &d), MIL_OK);
  assert_int_equal(mil_interp_fork(ip, &fk, &d), MIL_OK);
  assert_int_equal(mil_interp_state_new(ip, &s, &d), MIL_OK);
  mil_interp_free(ip); /* the state keeps the shared program alive */
  const uint16_t one[2] = {mil_fp32_to_fp16(1.0f), mil_fp32_to_fp16(2.0f)};
  const int64_t shape[1] = {2};
  mil_tensor t = {MIL_DT_FP16, 1, shape, one, sizeof one, 2};
  assert_int_equal(mil_interp_set_input(fk, "x", &t, &d), MIL_OK);
  for (int n = 0; n < 3; n++) assert_int_equal(mil_interp_run(fk, s, &d), MIL_OK);
  const mil_tensor *sv = mil_interp_state_get(s, "s");
  assert_non_null(sv);
  assert_true(mil_fp16_to_fp32(((const uint16_t *)sv->data)[0]) == 3.0f);
  assert_true(mil_fp16_to_fp32(((const uint16_t *)sv->data)[1]) == 6.0f);
  assert_int_equal(mil_interp_state_set(s, "s", &t, &d), MIL_OK);
  assert_int_equal(mil_interp_set_input(other, "x", &t, &d), MIL_OK);
  assert_int_equal(mil_interp_run(other, s, &d), MIL_ERR_INVALID);
  assert_non_null(strstr(mil_diag_first_error(&d), "another program copy"));
  mil_interp_free(fk);
  mil_interp_free(other);
  mil_interp_state_free(s);
  mil_program_free(p);
  mil_diag_clear(&d);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_reference_is_informative),
      cmocka_unit_test(test_forks_in_threads_match_single_thread),
      cmocka_unit_test(test_fork_and_clear_need_inputs),
      cmocka_unit_test(test_state_shared_by_family),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
