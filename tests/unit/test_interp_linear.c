/* Products with a const weight (linear; matmul with a const y), the path
 * of oneDNN's matmul primitive with the weight packed once and cached
 * (src/interp/linear_dnnl.c), against a reference computed here: fp32 and
 * fp16 programs, weights of fewer than 64 elements (widened into the run's
 * scratch by interp_f32, so not a cache key) and larger, several products
 * of the same sizes with different weights in one program (each must get
 * its own primitive), one weight read by a linear and a matmul, matmul's
 * stacked batches, a second run (the cached primitives), the sgemm path
 * (MIL_INTERP_NO_DNNL_MATMUL) and forks of one interpreter in threads.
 * The values are multiples of 1/8 with sums exact in fp32, so every path
 * must give the reference exactly (fp16: its rounding). Also two fp16 convs
 * of one geometry with small weights (the same scratch address for both
 * widened weights once keyed one cached conv primitive for both). */
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
#include "mil/model.h"
#include "mil/text.h"

static float val(int i) { return (float)((i * 37 + 11) % 17 - 8) / 8.0f; }
static float xval(int i) { return (float)((i * 53 + 7) % 19 - 9) / 8.0f; }

typedef struct dims {
  int m, k, n;
} dims;

static const dims CASES[] = {{3, 5, 4}, {1, 7, 9}, {7, 37, 50}, {64, 96, 80}, {5, 64, 1}};

/* A constant of shape (a, b), element (i, j) val(seed + i * b + j). */
static void put_mat(text_buf *b, const char *T, const char *name, int r, int c, int seed) {
  text_put(b, "    %%%s: (%d, %d, %s)*(Tensor) = const(val=[", name, r, c, T);
  for (int i = 0; i < r; i++) {
    text_put(b, "%s[", i ? ", " : "");
    for (int j = 0; j < c; j++) text_put(b, "%s%g", j ? ", " : "", val(seed + i * c + j));
    text_put(b, "]");
  }
  text_put(b, "], name=\"%s\")\n", name);
}

/* x (M, K); w1, w2 (N, K), w3 (K, N), b1 (N):
 *   y1 = linear(x, w1, b1)          y2 = linear(x, w2)
 *   y3 = matmul(x, w3)              y4 = matmul(x, w2, transpose_y)
 *   y5 = matmul(reshape(x, (1, M, K)), w3)   (batches stacked) */
static char *program(const char *T, const dims *d) {
  text_buf b = {malloc(1 << 20), 0, 1 << 20};
  assert_non_null(b.s);
  text_put(&b, "main[CoreML6](%%x: (%d, %d, %s)(Tensor)) {\n  block0() {\n", d->m, d->k, T);
  put_mat(&b, T, "w1", d->n, d->k, 0);
  put_mat(&b, T, "w2", d->n, d->k, 5);
  put_mat(&b, T, "w3", d->k, d->n, 9);
  text_put(&b, "    %%b1: (%d, %s)*(Tensor) = const(val=[", d->n, T);
  for (int j = 0; j < d->n; j++) text_put(&b, "%s%g", j ? ", " : "", val(3 * j + 1));
  text_put(&b, "], name=\"b1\")\n");
  text_put(&b, "    %%s: (3, int32)*(Tensor) = const(val=[1, %d, %d], name=\"s\")\n", d->m, d->k);
  text_put(&b, "    %%y1: (%d, %d, %s)(Tensor) = linear(x=%%x, weight=%%w1, bias=%%b1, name=\"y1\")\n", d->m, d->n, T);
  text_put(&b, "    %%y2: (%d, %d, %s)(Tensor) = linear(x=%%x, weight=%%w2, name=\"y2\")\n", d->m, d->n, T);
  text_put(&b, "    %%y3: (%d, %d, %s)(Tensor) = matmul(x=%%x, y=%%w3, name=\"y3\")\n", d->m, d->n, T);
  text_put(&b, "    %%y4: (%d, %d, %s)(Tensor) = matmul(x=%%x, y=%%w2, transpose_y=True, name=\"y4\")\n", d->m, d->n,
           T);
  text_put(&b, "    %%xr: (1, %d, %d, %s)(Tensor) = reshape(x=%%x, shape=%%s, name=\"xr\")\n", d->m, d->k, T);
  text_put(&b, "    %%y5: (1, %d, %d, %s)(Tensor) = matmul(x=%%xr, y=%%w3, name=\"y5\")\n", d->m, d->n, T);
  text_put(&b, "  } -> (%%y1, %%y2, %%y3, %%y4, %%y5)\n}\n");
  return b.s;
}

/* want[o][i * N + j] for the five outputs, exact (fp16: rounded once) */
static void reference(const dims *d, bool half, float *want[5]) {
  for (int i = 0; i < d->m; i++)
    for (int j = 0; j < d->n; j++) {
      double s1 = val(3 * j + 1), s2 = 0, s3 = 0;
      for (int t = 0; t < d->k; t++) {
        double x = xval(i * d->k + t);
        s1 += x * val(0 + j * d->k + t);
        s2 += x * val(5 + j * d->k + t);
        s3 += x * val(9 + t * d->n + j);
      }
      double s[5] = {s1, s2, s3, s2, s3};
      for (int o = 0; o < 5; o++) {
        float f = (float)s[o];
        want[o][i * d->n + j] = half ? mil_fp16_to_fp32(mil_fp32_to_fp16(f)) : f;
      }
    }
}

static void run_and_check(ifix *f, const dims *d, bool half, const char *what) {
  int64_t shape[2] = {d->m, d->k};
  int nx = d->m * d->k, ny = d->m * d->n;
  float *x = malloc((size_t)nx * sizeof *x);
  uint16_t *xh = malloc((size_t)nx * sizeof *xh);
  float *want[5];
  assert_non_null(x), assert_non_null(xh);
  for (int o = 0; o < 5; o++) assert_non_null(want[o] = malloc((size_t)ny * sizeof(float)));
  for (int i = 0; i < nx; i++) x[i] = xval(i);
  mil_fp32_to_fp16_array(x, xh, (size_t)nx); /* exact: multiples of 1/8 */
  reference(d, half, want);
  for (int r = 0; r < 2; r++) { /* the second run uses the cached primitives */
    ifix_set(f, "x", half ? MIL_DT_FP16 : MIL_DT_FP32, 2, shape, half ? (const void *)xh : (const void *)x);
    ifix_run(f);
    for (int o = 0; o < 5; o++) {
      const mil_tensor *t = mil_interp_output_at(f->ip, o);
      assert_non_null(t);
      if (t->numel != ny) fail_msg("%s (%d, %d, %d) y%d: %lld elements", what, d->m, d->k, d->n, o + 1, (long long)t->numel);
      for (int i = 0; i < ny; i++)
        if (ifix_elem(t, i) != want[o][i])
          fail_msg("%s %s (%d, %d, %d) run %d: y%d[%d] = %g, want %g", what, half ? "fp16" : "fp32", d->m, d->k, d->n,
                   r, o + 1, i, ifix_elem(t, i), want[o][i]);
    }
  }
  for (int o = 0; o < 5; o++) free(want[o]);
  free(x), free(xh);
}

static void check_all(const char *what) {
  for (int h = 0; h < 2; h++)
    for (size_t c = 0; c < sizeof CASES / sizeof *CASES; c++) {
      char *text = program(h ? "fp16" : "fp32", &CASES[c]);
      ifix f;
      ifix_open(&f, text);
      run_and_check(&f, &CASES[c], h, what);
      ifix_close(&f);
      free(text);
    }
}

static void test_products_against_reference(void **state) {
  (void)state;
  check_all("primitive");
}

static void test_products_sgemm(void **state) {
  (void)state;
  setenv("MIL_INTERP_NO_DNNL_MATMUL", "1", 1);
  check_all("sgemm");
  unsetenv("MIL_INTERP_NO_DNNL_MATMUL");
}

#define N_THREADS 4

typedef struct worker {
  mil_interp *ip;
  const dims *d;
  int bad;
} worker;

static void *work(void *arg) {
  worker *w = arg;
  fork_threads_wait();
  ifix f = {NULL, w->ip, {0}};
  mil_diag_init(&f.d);
  /* run_and_check fails through cmocka, which is not for threads: check by hand */
  int64_t shape[2] = {w->d->m, w->d->k};
  int nx = w->d->m * w->d->k, ny = w->d->m * w->d->n;
  float *x = malloc((size_t)nx * sizeof *x), *want[5];
  for (int o = 0; o < 5; o++) want[o] = malloc((size_t)ny * sizeof(float));
  for (int i = 0; i < nx && x; i++) x[i] = xval(i);
  reference(w->d, false, want);
  for (int r = 0; r < 4; r++) {
    mil_tensor t = {MIL_DT_FP32, 2, shape, x, (size_t)nx * sizeof *x, nx};
    if (mil_interp_set_input(w->ip, "x", &t, &f.d) != MIL_OK || mil_interp_run(w->ip, NULL, &f.d) != MIL_OK) {
      w->bad++;
      continue;
    }
    for (int o = 0; o < 5; o++)
      if (memcmp(mil_interp_output_at(w->ip, o)->data, want[o], (size_t)ny * sizeof(float)) != 0) w->bad++;
  }
  for (int o = 0; o < 5; o++) free(want[o]);
  free(x);
  mil_diag_clear(&f.d);
  return NULL;
}

static void test_forks_in_threads(void **state) {
  (void)state;
  const dims *d = &CASES[3];
  char *text = program("fp32", d);
  mil_program *p = ifix_parse(text, "linear.mil");
  mil_diag dg;
  mil_diag_init(&dg);
  mil_interp *root = NULL;
  assert_int_equal(mil_interp_new(p, NULL, &root, &dg), MIL_OK); /* a fresh family: the threads race to cache */
  worker w[N_THREADS];
  for (int k = 0; k < N_THREADS; k++) w[k] = (worker){NULL, d, 0};
  fork_threads_run(root, N_THREADS, w, sizeof w[0], work, &dg);
  for (int k = 0; k < N_THREADS; k++) assert_int_equal(w[k].bad, 0);
  mil_interp_free(root);
  mil_diag_clear(&dg);
  mil_program_free(p);
  free(text);
}

/* Two fp16 convs of one geometry, each weight 2x2x3x3 (36 elements, widened
 * into the run's scratch): each output is its own weight's. */
static void test_small_fp16_conv_weights(void **state) {
  (void)state;
  text_buf b = {malloc(1 << 16), 0, 1 << 16};
  assert_non_null(b.s);
  text_put(&b, "main[CoreML6](%%x: (1, 2, 6, 6, fp16)(Tensor)) {\n  block0() {\n");
  text_put_weight(&b, "fp16", "w1", 2, 2, 3, 0, val);
  text_put_weight(&b, "fp16", "w2", 2, 2, 3, 5, val);
  for (int k = 1; k <= 2; k++)
    text_put(&b, "    %%y%d: (1, 2, 4, 4, fp16)(Tensor) = conv(x=%%x, weight=%%w%d, strides=[1, 1], pad_type=\"valid\", "
             "dilations=[1, 1], groups=1, name=\"y%d\")\n", k, k, k);
  text_put(&b, "  } -> (%%y1, %%y2)\n}\n");
  ifix f;
  ifix_open(&f, b.s);
  uint16_t xh[72];
  for (int i = 0; i < 72; i++) xh[i] = mil_fp32_to_fp16(xval(i));
  int64_t shape[4] = {1, 2, 6, 6};
  for (int r = 0; r < 2; r++) {
    ifix_set(&f, "x", MIL_DT_FP16, 4, shape, xh);
    ifix_run(&f);
    for (int k = 0; k < 2; k++) {
      const mil_tensor *t = mil_interp_output_at(f.ip, k);
      for (int o = 0; o < 2; o++)
        for (int i = 0; i < 4; i++)
          for (int j = 0; j < 4; j++) {
            double s = 0;
            for (int c = 0; c < 2; c++)
              for (int u = 0; u < 3; u++)
                for (int v = 0; v < 3; v++)
                  s += (double)val(5 * k + ((o * 2 + c) * 3 + u) * 3 + v) * xval((c * 6 + i + u) * 6 + j + v);
            double want = mil_fp16_to_fp32(mil_fp32_to_fp16((float)s)), got = ifix_elem(t, (o * 4 + i) * 4 + j);
            if (got != want) fail_msg("run %d: y%d[%d, %d, %d] = %g, want %g", r, k + 1, o, i, j, got, want);
          }
    }
  }
  ifix_close(&f);
  free(b.s);
}

/* A saved package: the weights of a linear (128 x 256) and of a conv (64 x
 * 64 x 3 x 3) live in weight.bin, mapped (64 KiB and more each). Once packed, their pages are given
 * back (mil_value_release_pages); a reduce_sum that reads the same consts
 * after them must still see the file's values (read again), in fp32 and
 * fp16 programs, over two runs. */
#define LN 128
#define LK 256
#define CC 64

static void check_package(const char *T) {
  bool half = T[2] == '1';
  text_buf b = {malloc(1 << 23), 0, 1 << 23};
  assert_non_null(b.s);
  text_put(&b, "main[CoreML7](%%x: (2, %d, %s)(Tensor), %%z: (1, %d, 5, 5, %s)(Tensor)) {\n  block0() {\n", LK, T, CC,
           T);
  put_mat(&b, T, "w", LN, LK, 3);
  text_put_weight(&b, T, "cw", CC, CC, 3, 7, val);
  text_put(&b, "    %%y: (2, %d, %s)(Tensor) = linear(x=%%x, weight=%%w, name=\"y\")\n", LN, T);
  text_put(&b, "    %%c: (1, %d, 3, 3, %s)(Tensor) = conv(x=%%z, weight=%%cw, strides=[1, 1], pad_type=\"valid\", "
           "dilations=[1, 1], groups=1, name=\"c\")\n", CC, T);
  text_put(&b, "    %%s: (%d, %s)(Tensor) = reduce_sum(x=%%w, axes=[1], keep_dims=False, name=\"s\")\n", LN, T);
  text_put(&b, "    %%t: (%d, %s)(Tensor) = reduce_sum(x=%%cw, axes=[1, 2, 3], keep_dims=False, name=\"t\")\n", CC, T);
  text_put(&b, "  } -> (%%y, %%c, %%s, %%t)\n}\n");
  mil_program *p = ifix_parse(b.s, "package.mil");
  free(b.s);
  char dir[512], pkg[600];
  const char *tmp = getenv("TMPDIR");
  snprintf(dir, sizeof dir, "%s/test_interp_linear_XXXXXX", tmp && *tmp ? tmp : "/tmp");
  assert_non_null(mkdtemp(dir));
  snprintf(pkg, sizeof pkg, "%s/m.mlpackage", dir);
  mil_diag d;
  mil_diag_init(&d);
  mil_model *m = NULL;
  assert_int_equal(mil_model_from_program(p, 7, &m, &d), MIL_OK);
  if (mil_model_save(m, pkg, &d) != MIL_OK) fail_msg("save: %s", mil_diag_first_error(&d));
  mil_model_free(m);
  m = NULL;
  if (mil_model_load(pkg, &m, &d) != MIL_OK) fail_msg("load: %s", mil_diag_first_error(&d));
  mil_interp *ip = NULL;
  if (mil_interp_new(mil_model_program(m), NULL, &ip, &d) != MIL_OK) fail_msg("interp: %s", mil_diag_first_error(&d));
  ifix f = {NULL, ip, d};
  float x[2 * LK], z[CC * 25];
  uint16_t xh[2 * LK], zh[CC * 25];
  for (int i = 0; i < 2 * LK; i++) x[i] = xval(i), xh[i] = mil_fp32_to_fp16(x[i]);
  for (int i = 0; i < CC * 25; i++) z[i] = xval(i + 3), zh[i] = mil_fp32_to_fp16(z[i]);
  int64_t xs[2] = {2, LK}, zs[4] = {1, CC, 5, 5};
  for (int r = 0; r < 2; r++) {
    ifix_set(&f, "x", half ? MIL_DT_FP16 : MIL_DT_FP32, 2, xs, half ? (const void *)xh : (const void *)x);
    ifix_set(&f, "z", half ? MIL_DT_FP16 : MIL_DT_FP32, 4, zs, half ? (const void *)zh : (const void *)z);
    ifix_run(&f);
    const mil_tensor *y = mil_interp_output_at(ip, 0), *c = mil_interp_output_at(ip, 1);
    const mil_tensor *s = mil_interp_output_at(ip, 2), *t = mil_interp_output_at(ip, 3);
    for (int i = 0; i < 2; i++)
      for (int j = 0; j < LN; j++) {
        double a = 0;
        for (int k = 0; k < LK; k++) a += (double)x[i * LK + k] * val(3 + j * LK + k);
        double want = half ? mil_fp16_to_fp32(mil_fp32_to_fp16((float)a)) : (float)a;
        if (ifix_elem(y, i * LN + j) != want)
          fail_msg("%s run %d: y[%d, %d] = %g, want %g", T, r, i, j, ifix_elem(y, i * LN + j), want);
      }
    for (int o = 0; o < CC; o++)
      for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++) {
          double a = 0;
          for (int ci = 0; ci < CC; ci++)
            for (int u = 0; u < 3; u++)
              for (int v = 0; v < 3; v++)
                a += (double)val(7 + ((o * CC + ci) * 3 + u) * 3 + v) * z[(ci * 5 + i + u) * 5 + j + v];
          double want = half ? mil_fp16_to_fp32(mil_fp32_to_fp16((float)a)) : (float)a;
          if (ifix_elem(c, (o * 3 + i) * 3 + j) != want)
            fail_msg("%s run %d: c[%d, %d, %d] = %g, want %g", T, r, o, i, j, ifix_elem(c, (o * 3 + i) * 3 + j), want);
        }
    /* the sums of the consts' rows: exact (multiples of 1/8, at most 256 terms) */
    for (int j = 0; j < LN; j++) {
      double a = 0;
      for (int k = 0; k < LK; k++) a += val(3 + j * LK + k);
      if (ifix_elem(s, j) != a) fail_msg("%s run %d: s[%d] = %g, want %g", T, r, j, ifix_elem(s, j), a);
    }
    for (int o = 0; o < CC; o++) {
      double a = 0;
      for (int k = 0; k < CC * 9; k++) a += val(7 + o * CC * 9 + k);
      if (ifix_elem(t, o) != a) fail_msg("%s run %d: t[%d] = %g, want %g", T, r, o, ifix_elem(t, o), a);
    }
  }
  mil_interp_free(ip);
  mil_model_free(m); /* p's too: the first model took it */
  mil_diag_clear(&f.d);
  char cmd[700];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  assert_int_equal(system(cmd), 0);
}

static void test_package_weights_released(void **state) {
  (void)state;
  check_package("fp32");
  check_package("fp16");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_products_against_reference),
      cmocka_unit_test(test_products_sgemm),
      cmocka_unit_test(test_forks_in_threads),
      cmocka_unit_test(test_small_fp16_conv_weights),
      cmocka_unit_test(test_package_weights_released),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
