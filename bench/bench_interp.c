/* Benchmark of the reference interpreter.
 *
 *   bench_interp [SHARED_DIR] [RUNS]
 *
 * 1. Inference time of every corpus model (SHARED_DIR/corpus/models/<name>/
 *    input.mlpackage and expected.mlpackage on x.npy; SHARED_DIR defaults to
 *    $MIL_SHARED_DIR): the first run (which also widens fp16 weights once)
 *    and the median of RUNS further runs (default 5).
 * 2. GFLOP/s of the matmul and conv kernels, timed through the interpreter
 *    on one-op programs (so the figures include the per-run program copy
 *    and the op dispatch): fp32 and fp16 matmul 512x512x512, linear
 *    (64 x 2048 x 256), conv 3x3 64->64 on 56x56, 1x1 conv 128->128 on
 *    28x28, depthwise 3x3 on 144x56x56. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "mil/interp.h"
#include "mil/mil.h"
#include "mil/model.h"
#include "mil/npy.h"
#include "mil/text.h"

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static int cmp_d(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* First-run time and median of `runs` further runs, in ms; false on error. */
static bool time_runs(mil_interp *ip, int runs, double *first, double *median) {
  mil_diag d;
  mil_diag_init(&d);
  double *t = calloc((size_t)runs + 1, sizeof *t);
  bool ok = t != NULL;
  for (int i = 0; ok && i <= runs; i++) {
    double t0 = now_ms();
    if (mil_interp_run(ip, NULL, &d) != MIL_OK) {
      fprintf(stderr, "run failed: %s\n", mil_diag_first_error(&d));
      ok = false;
    }
    t[i] = now_ms() - t0;
  }
  if (ok) {
    *first = t[0];
    qsort(t + 1, (size_t)runs, sizeof *t, cmp_d);
    *median = runs ? t[1 + runs / 2] : t[0];
  }
  free(t);
  mil_diag_clear(&d);
  return ok;
}

static void bench_model(const char *dir, const char *name, const char *which, int runs) {
  char path[4096], xp[4096];
  snprintf(path, sizeof path, "%s/%s/%s.mlpackage", dir, name, which);
  snprintf(xp, sizeof xp, "%s/%s/x.npy", dir, name);
  mil_diag d;
  mil_diag_init(&d);
  mil_model *m = NULL;
  mil_interp *ip = NULL;
  mil_npy *x = NULL;
  double t_load = now_ms(), first = 0, med = 0;
  if (mil_model_load(path, &m, &d) != MIL_OK || mil_interp_new(mil_model_program(m), NULL, &ip, &d) != MIL_OK ||
      mil_npy_read(xp, &x, &d) != MIL_OK) {
    fprintf(stderr, "%s: %s\n", path, mil_diag_first_error(&d));
    goto out;
  }
  t_load = now_ms() - t_load;
  mil_tensor t = {x->dtype, x->rank, x->shape, x->data, x->nbytes, x->numel};
  if (mil_interp_set_input(ip, mil_interp_input_name(ip, 0), &t, &d) != MIL_OK) {
    fprintf(stderr, "%s: %s\n", path, mil_diag_first_error(&d));
    goto out;
  }
  if (time_runs(ip, runs, &first, &med))
    printf("%-14s %-9s load+setup %7.1f ms   first run %7.1f ms   median of %d runs %7.1f ms\n", name, which, t_load,
           first, runs, med);
out:
  mil_npy_free(x);
  mil_interp_free(ip);
  mil_model_free(m);
  mil_diag_clear(&d);
}

/* Runs a one-op program (text, or a built program p taken over) whose
 * inputs are filled with small values. */
static void bench_prog(const char *label, const char *text, mil_program *p, double flops, int runs) {
  mil_diag d;
  mil_diag_init(&d);
  mil_interp *ip = NULL;
  void **bufs = NULL;
  if ((!p && mil_parse_program(text, strlen(text), NULL, &p, &d) != MIL_OK) ||
      mil_interp_new(p, NULL, &ip, &d) != MIL_OK) {
    fprintf(stderr, "%s: %s\n", label, mil_diag_first_error(&d));
    goto out;
  }
  bufs = calloc((size_t)mil_interp_n_inputs(ip) + 1, sizeof *bufs);
  for (int32_t i = 0; bufs && i < mil_interp_n_inputs(ip); i++) {
    const mil_type *ty = mil_interp_input_type(ip, i);
    int64_t shape[8], n = 1;
    for (int32_t k = 0; k < ty->rank; k++) n *= shape[k] = ty->dims[k].size;
    size_t es = mil_dtype_size(ty->dtype);
    bufs[i] = malloc((size_t)n * es);
    for (int64_t e = 0; bufs[i] && e < n; e++) {
      float v = (float)((e * 7919) % 201 - 100) / 100.0f;
      if (ty->dtype == MIL_DT_FP16) ((uint16_t *)bufs[i])[e] = mil_fp32_to_fp16(v);
      else ((float *)bufs[i])[e] = v;
    }
    mil_tensor t = {ty->dtype, ty->rank, shape, bufs[i], (size_t)n * es, n};
    if (!bufs[i] || mil_interp_set_input(ip, mil_interp_input_name(ip, i), &t, &d) != MIL_OK) {
      fprintf(stderr, "%s: %s\n", label, mil_diag_first_error(&d));
      goto out;
    }
  }
  double first, med;
  if (time_runs(ip, runs, &first, &med))
    printf("%-40s median %8.2f ms   %7.2f GFLOP/s\n", label, med, flops / (med * 1e6));
out:
  for (int32_t i = 0; bufs && ip && i < mil_interp_n_inputs(ip); i++) free(bufs[i]);
  free(bufs);
  mil_interp_free(ip);
  mil_program_free(p);
  mil_diag_clear(&d);
}

static void bench_op(const char *label, const char *text, double flops, int runs) {
  bench_prog(label, text, NULL, flops, runs);
}

/* linear needs a const weight: x (m, k) -> (m, n) with weight (n, k) built
 * through the IR API. */
static mil_program *linear_prog(int64_t m, int64_t n, int64_t k) {
  mil_program *p = mil_program_new(NULL);
  mil_function *f = p ? mil_function_new(p, "main", "CoreML7") : NULL;
  if (!f) return p;
  int64_t xs[2] = {m, k}, ws[2] = {n, k}, ys[2] = {m, n};
  mil_var *x = mil_function_add_input(f, "x", mil_type_tensor_shape(p, MIL_DT_FP32, 2, xs));
  mil_value *wv = mil_value_new_tensor(p, MIL_DT_FP32, 2, ws, false, NULL);
  float *w = wv ? mil_value_data_mut(wv) : NULL;
  for (int64_t i = 0; w && i < n * k; i++) w[i] = (float)((i * 31) % 17 - 8) / 8.0f;
  mil_block *b = mil_function_body(f);
  mil_op *wop = wv ? mil_const_new(p, "w", wv) : NULL;
  mil_op *op = mil_op_new(p, "linear", "y");
  if (!x || !wop || !op) return p;
  mil_block_append(b, wop);
  mil_op_add_input(op, "x", x);
  mil_op_add_input(op, "weight", wop->outputs[0]);
  mil_var *y = mil_op_add_output(op, "y", mil_type_tensor_shape(p, MIL_DT_FP32, 2, ys));
  mil_block_append(b, op);
  mil_block_set_outputs(b, 1, &y);
  return p;
}

#define PROG(in, body, out) "main[CoreML7](" in ") {\n  block0() {\n" body "  } -> (" out ")\n}\n"

int main(int argc, char **argv) {
  const char *shared = argc > 1 ? argv[1] : getenv("MIL_SHARED_DIR");
  int runs = argc > 2 ? atoi(argv[2]) : 5;
  if (runs < 1) runs = 1;
  char dir[4096];
  struct stat st;
  if (shared && snprintf(dir, sizeof dir, "%s/corpus/models", shared) > 0 && stat(dir, &st) == 0) {
    static const char *models[] = {"mobilenet_v2", "squeezenet1_1", "tinygpt4", "tinyllama4"};
    printf("== corpus models (input = fp32 program, expected = fp16 program after DEFAULT)\n");
    for (size_t i = 0; i < sizeof models / sizeof models[0]; i++) {
      bench_model(dir, models[i], "input", runs);
      bench_model(dir, models[i], "expected", runs);
    }
  } else {
    printf("corpus not found (pass SHARED_DIR or set MIL_SHARED_DIR): skipping the model benchmark\n");
  }
  printf("== kernels (timed through the interpreter)\n");
  bench_op("matmul fp32 512x512x512",
           PROG("%a: (512, 512, fp32)(Tensor), %b: (512, 512, fp32)(Tensor)",
                "    %y: (512, 512, fp32)(Tensor) = matmul(x=%a, y=%b, name=\"y\")\n", "%y"),
           2.0 * 512 * 512 * 512, runs);
  bench_op("matmul fp16 512x512x512",
           PROG("%a: (512, 512, fp16)(Tensor), %b: (512, 512, fp16)(Tensor)",
                "    %y: (512, 512, fp16)(Tensor) = matmul(x=%a, y=%b, name=\"y\")\n", "%y"),
           2.0 * 512 * 512 * 512, runs);
  bench_prog("linear fp32 64x256 -> 2048", NULL, linear_prog(64, 2048, 256), 2.0 * 64 * 2048 * 256, runs);
  bench_op("conv fp32 3x3 64->64 56x56",
           PROG("%x: (1, 64, 56, 56, fp32)(Tensor), %w: (64, 64, 3, 3, fp32)(Tensor)",
                "    %y: (1, 64, 56, 56, fp32)(Tensor) = conv(x=%x, weight=%w, pad_type=\"same\", name=\"y\")\n",
                "%y"),
           2.0 * 64 * 56 * 56 * 64 * 9, runs);
  bench_op("conv fp32 1x1 128->128 28x28",
           PROG("%x: (1, 128, 28, 28, fp32)(Tensor), %w: (128, 128, 1, 1, fp32)(Tensor)",
                "    %y: (1, 128, 28, 28, fp32)(Tensor) = conv(x=%x, weight=%w, pad_type=\"valid\", name=\"y\")\n",
                "%y"),
           2.0 * 128 * 28 * 28 * 128, runs);
  bench_op("conv fp32 depthwise 3x3 144ch 56x56",
           PROG("%x: (1, 144, 56, 56, fp32)(Tensor), %w: (144, 1, 3, 3, fp32)(Tensor)",
                "    %y: (1, 144, 56, 56, fp32)(Tensor) = conv(x=%x, weight=%w, groups=144, pad_type=\"same\", "
                "name=\"y\")\n",
                "%y"),
           2.0 * 144 * 56 * 56 * 9, runs);
  return 0;
}
