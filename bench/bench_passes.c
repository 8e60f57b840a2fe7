/* Pass benchmark: times every registered pass, the CLEANUP pipeline and the
 * equivalence checker on synthetic programs of about 1k, 10k and 100k ops,
 * so that a pass whose cost grows faster than the program shows up as a
 * rising ns/op across the columns.
 *
 * The programs are chains of add / mul / relu on an (8, 16) fp32 tensor
 * with scalar and tensor consts (some tensor consts repeated, so
 * const_deduplication has work), an identity every 30 ops and add of 0.0
 * every 45 (noop_elimination), a foldable add of two consts every 60
 * (const_elimination), and a dead sigmoid every 20 (dead-code elimination).
 *
 * usage: bench_passes [max_ops]   (default 100000) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mil/equiv.h"
#include "mil/mil.h"
#include "mil/ops.h"
#include "mil/passes.h"

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int64_t g_built; /* ops appended by the helpers below */

static mil_var *konst(mil_program *p, mil_block *b, const char *name, mil_value *v) {
  mil_op *c = mil_const_new(p, name, v);
  mil_block_append(b, c);
  g_built++;
  return c->outputs[0];
}

static mil_var *binary(mil_program *p, mil_block *b, const char *type, const char *name, mil_var *x, mil_var *y,
                       const mil_type *t) {
  mil_op *op = mil_op_new(p, type, name);
  mil_op_add_input(op, "x", x);
  mil_op_add_input(op, "y", y);
  mil_var *out = mil_op_add_output(op, name, t);
  mil_block_append(b, op);
  mil_op_infer(op, NULL); /* values of foldable ops, as a converter leaves them */
  g_built++;
  return out;
}

static mil_var *unary(mil_program *p, mil_block *b, const char *type, const char *name, mil_var *x,
                      const mil_type *t) {
  mil_op *op = mil_op_new(p, type, name);
  mil_op_add_input(op, "x", x);
  mil_var *out = mil_op_add_output(op, name, t);
  mil_block_append(b, op);
  mil_op_infer(op, NULL); /* values of foldable ops, as a converter leaves them */
  g_built++;
  return out;
}

/* A program of about n ops (consts included). */
static mil_program *build(int64_t n) {
  mil_program *p = mil_program_new(NULL);
  mil_function *f = mil_function_new(p, "main", "CoreML7");
  int64_t shape[2] = {8, 16};
  const mil_type *t = mil_type_tensor_shape(p, MIL_DT_FP32, 2, shape);
  const mil_type *ts = mil_type_scalar(p, MIL_DT_FP32);
  mil_var *cur = mil_function_add_input(f, "x", t);
  mil_block *b = mil_function_body(f);
  char name[64], cn[64];
  float tensor[128];
  g_built = 0;
  for (int64_t i = 0; g_built < n; i++) {
    snprintf(name, sizeof name, "op_%lld", (long long)i);
    snprintf(cn, sizeof cn, "c_%lld", (long long)i);
    switch (i % 6) {
    case 0:
    case 3: {
      mil_var *c = konst(p, b, cn, mil_value_new_scalar_f64(p, MIL_DT_FP32, 0.5 + (double)(i % 11)));
      cur = binary(p, b, "add", name, cur, c, t);
      break;
    }
    case 1: {
      for (int k = 0; k < 128; k++) tensor[k] = (float)((i / 6) % 5) * 0.25f + (float)k * 1e-3f;
      mil_var *c = konst(p, b, cn, mil_value_new_tensor(p, MIL_DT_FP32, 2, shape, false, tensor));
      cur = binary(p, b, "mul", name, cur, c, t);
      break;
    }
    default: cur = unary(p, b, "relu", name, cur, t); break;
    }
    if (i % 20 == 7) {
      snprintf(name, sizeof name, "dead_%lld", (long long)i);
      unary(p, b, "sigmoid", name, cur, t);
    }
    if (i % 30 == 11) {
      snprintf(name, sizeof name, "ident_%lld", (long long)i);
      cur = unary(p, b, "identity", name, cur, t);
    }
    if (i % 45 == 13) {
      snprintf(name, sizeof name, "add0_%lld", (long long)i);
      snprintf(cn, sizeof cn, "zero_%lld", (long long)i);
      cur = binary(p, b, "add", name, cur, konst(p, b, cn, mil_value_new_scalar_f64(p, MIL_DT_FP32, 0.0)), t);
    }
    if (i % 60 == 17) {
      snprintf(name, sizeof name, "fold_%lld", (long long)i);
      snprintf(cn, sizeof cn, "fa_%lld", (long long)i);
      mil_var *a = konst(p, b, cn, mil_value_new_scalar_f64(p, MIL_DT_FP32, 2.0));
      snprintf(cn, sizeof cn, "fb_%lld", (long long)i);
      mil_var *c = konst(p, b, cn, mil_value_new_scalar_f64(p, MIL_DT_FP32, 3.0));
      mil_var *s = binary(p, b, "add", name, a, c, ts);
      snprintf(name, sizeof name, "use_%lld", (long long)i);
      cur = binary(p, b, "mul", name, cur, s, t);
    }
  }
  mil_block_set_outputs(b, 1, &cur);
  return p;
}

#define N_SIZES 3
/* Per-pass times of the cleanup pipeline on the largest program. */
static mil_pipeline_report g_cleanup_rep;

typedef struct row {
  const char *name;
  double sec[N_SIZES];
  int64_t changes[N_SIZES];
  bool failed[N_SIZES];
} row;

int main(int argc, char **argv) {
  int64_t max_ops = argc > 1 ? atoll(argv[1]) : 100000;
  int64_t sizes[N_SIZES] = {max_ops / 100, max_ops / 10, max_ops};
  size_t np = mil_pass_count();
  row *rows = calloc(np + 3, sizeof *rows);
  if (!rows) return 1;
  for (size_t i = 0; i < np; i++) rows[i].name = mil_pass_at(i)->name;
  rows[np].name = "pipeline cleanup";
  rows[np + 1].name = "mil_program_clone";
  rows[np + 2].name = "mil_program_compare (vs clone)";
  int64_t actual[N_SIZES];
  mil_pipeline *cleanup = NULL;
  if (mil_pipeline_new("cleanup", &cleanup, NULL) != MIL_OK) return 1;
  char skipped[2048] = "";
  for (int32_t i = 0; i < mil_pipeline_n_passes(cleanup); i++) {
    const char *pn = mil_pipeline_pass_at(cleanup, i);
    if (mil_pass_is_implemented(pn)) continue;
    if (!strstr(skipped, pn)) {
      strncat(skipped, skipped[0] ? ", " : "", sizeof skipped - strlen(skipped) - 1);
      strncat(skipped, pn, sizeof skipped - strlen(skipped) - 1);
    }
    mil_pipeline_remove_pass(cleanup, pn);
    i--;
  }
  for (int s = 0; s < N_SIZES; s++) {
    mil_program *base = build(sizes[s]);
    actual[s] = mil_program_count_ops(base);
    for (size_t i = 0; i < np + 3; i++) {
      double t0 = now();
      mil_program *p = mil_program_clone(base);
      double tc = now() - t0;
      if (!p) return 1;
      mil_diag d = {0};
      mil_status st = MIL_OK;
      double t1 = now();
      if (i < np) {
        st = mil_pass_run(mil_pass_at(i), p, NULL, &rows[i].changes[s], &d);
      } else if (i == np) {
        mil_pipeline_report rep = {0};
        st = mil_pipeline_run(cleanup, p, NULL, &rep, &d);
        rows[i].changes[s] = actual[s] - rep.ops_after;
        if (s == N_SIZES - 1) g_cleanup_rep = rep;
        else mil_pipeline_report_free(&rep);
      } else if (i == np + 1) {
        rows[i].sec[s] = tc;
      } else {
        mil_equiv_result r;
        st = mil_program_compare(base, p, NULL, &r, &d);
      }
      if (i != np + 1) rows[i].sec[s] = now() - t1;
      if (st != MIL_OK) {
        rows[i].failed[s] = true;
        fprintf(stderr, "%s on %lld ops: %s\n", rows[i].name, (long long)actual[s],
                mil_diag_first_error(&d) ? mil_diag_first_error(&d) : mil_status_str(st));
      }
      mil_diag_clear(&d);
      mil_program_free(p);
    }
    mil_program_free(base);
  }
  printf("synthetic chains of add/mul/relu with consts, identities, add-0, foldable adds, dead sigmoids\n");
  printf("%-46s", "ops:");
  for (int s = 0; s < N_SIZES; s++) printf(" %21lld", (long long)actual[s]);
  printf("\n%-46s", "");
  for (int s = 0; s < N_SIZES; s++) printf(" %9s %11s", "ms", "ns/op");
  printf("  changes (largest)\n");
  for (size_t i = 0; i < np + 3; i++) {
    printf("%-46s", rows[i].name);
    for (int s = 0; s < N_SIZES; s++) {
      if (rows[i].failed[s]) printf(" %21s", "failed");
      else printf(" %9.3f %11.1f", rows[i].sec[s] * 1e3, rows[i].sec[s] * 1e9 / (double)actual[s]);
    }
    printf("  %lld\n", (long long)rows[i].changes[N_SIZES - 1]);
  }
  printf("(ops/s = 1e9 / ns/op; a flat ns/op row is linear)\n");
  if (skipped[0]) printf("cleanup ran without the passes not implemented yet: %s\n", skipped);
  printf("cleanup changes column: ops removed\n");
  printf("\ncleanup pipeline on %lld ops, per pass:\n", (long long)actual[N_SIZES - 1]);
  for (int32_t i = 0; i < g_cleanup_rep.n_records; i++) {
    const mil_pass_record *r = &g_cleanup_rep.records[i];
    printf("  #%-3d %-52s %9.3f ms %8lld changes  ops %lld -> %lld\n", r->index, r->pass, r->seconds * 1e3,
           (long long)r->changes, (long long)r->ops_before, (long long)r->ops_after);
  }
  mil_pipeline_report_free(&g_cleanup_rep);
  mil_pipeline_free(cleanup);
  free(rows);
  return 0;
}
