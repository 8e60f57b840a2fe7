/* Benchmark: MIL text parsing and printing throughput.
 *
 *   bench_text [--shared DIR] [--top N] [--synthetic-mb M] [--reps R]
 *
 * Measures mil_parse_program and mil_print_program (complete form) on the
 * N largest programs (default 8) of the golden pass corpus
 * (DIR/corpus/passes; DIR defaults to $MIL_SHARED_DIR, else ../shared) and
 * on a synthetic program of about M MB (default 64) made of large random
 * fp32 consts feeding a chain of ops, which is what big models look like
 * as text. Each figure is the best of R runs (default 5), in MB of text
 * per second. Prints a table; not run by the test suite.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../tests/corpus_util.h"
#include "mil/text.h"

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

typedef struct result {
  double parse_s, print_s, print_ct_s;
  size_t bytes, ct_bytes; /* the text, and its coremltools-form print */
} result;

/* Best-of-reps timings for one text. Returns false when it does not parse. */
static bool measure(const char *text, size_t len, int reps, result *r) {
  r->bytes = len;
  r->parse_s = r->print_s = r->print_ct_s = 1e30;
  for (int i = 0; i < reps; i++) {
    mil_diag d;
    mil_diag_init(&d);
    mil_program *p = NULL;
    double t0 = now_s();
    mil_status st = mil_parse_program(text, len, NULL, &p, &d);
    double t1 = now_s();
    if (st != MIL_OK) {
      fprintf(stderr, "parse failed: %s\n", mil_diag_first_error(&d));
      mil_diag_clear(&d);
      return false;
    }
    mil_diag_clear(&d);
    mil_buf b = {0};
    mil_print_options po = {.form = MIL_PRINT_COMPLETE, .blob_refs = false};
    double t2 = now_s();
    mil_print_program(p, &po, &b);
    double t3 = now_s();
    mil_buf_free(&b);
    po.form = MIL_PRINT_COREMLTOOLS;
    double t4 = now_s();
    mil_print_program(p, &po, &b);
    double t5 = now_s();
    r->ct_bytes = b.len;
    mil_buf_free(&b);
    mil_program_free(p);
    if (t1 - t0 < r->parse_s) r->parse_s = t1 - t0;
    if (t3 - t2 < r->print_s) r->print_s = t3 - t2;
    if (t5 - t4 < r->print_ct_s) r->print_ct_s = t5 - t4;
  }
  return true;
}

static void row(const char *name, const result *r) {
  double mb = (double)r->bytes / 1e6;
  printf("%-60.60s %10zu %10.1f %10.1f %14.1f\n", name, r->bytes, mb / r->parse_s, mb / r->print_s,
         (double)r->ct_bytes / 1e6 / r->print_ct_s);
}

/* A program of about `mb` MB of complete-form text: consts of 256x256
 * random fp32 values, each added to a running activation. */
static char *synthetic(double mb, size_t *len) {
  mil_program *p = mil_program_new(NULL);
  mil_function *f = mil_function_new(p, "main", "CoreML7");
  int64_t shape[2] = {256, 256};
  mil_var *x = mil_function_add_input(f, "x", mil_type_tensor_shape(p, MIL_DT_FP32, 2, shape));
  mil_block *b = mil_function_body(f);
  b->name = mil_program_intern(p, "block0", (size_t)-1);
  /* a printed fp32 element takes about 21 bytes ("0.123456789012345678, ") */
  int n_consts = (int)(mb * 1e6 / (256.0 * 256.0 * 21.0)) + 1;
  uint64_t seed = 88172645463325252ULL;
  mil_var *cur = x;
  for (int k = 0; k < n_consts; k++) {
    mil_value *v = mil_value_new_tensor(p, MIL_DT_FP32, 2, shape, false, NULL);
    float *d = mil_value_data_mut(v);
    for (int i = 0; i < 256 * 256; i++) {
      seed ^= seed << 13;
      seed ^= seed >> 7;
      seed ^= seed << 17;
      d[i] = (float)((double)(seed >> 11) / 9007199254740992.0 * 2.0 - 1.0);
    }
    char name[32];
    snprintf(name, sizeof name, "w_%d", k);
    mil_op *c = mil_const_new(p, name, v);
    mil_block_append(b, c);
    snprintf(name, sizeof name, "add_%d", k);
    mil_op *op = mil_op_new(p, "add", name);
    mil_op_add_input(op, "x", cur);
    mil_op_add_input(op, "y", c->outputs[0]);
    cur = mil_op_add_output(op, name, cur->type);
    mil_block_append(b, op);
  }
  mil_block_set_outputs(b, 1, &cur);
  mil_buf out = {0};
  mil_print_options po = {.form = MIL_PRINT_COMPLETE, .blob_refs = false};
  mil_print_program(p, &po, &out);
  mil_program_free(p);
  *len = out.len;
  return out.data;
}

typedef struct sized {
  char *path;
  size_t len;
} sized;

static int by_len_desc(const void *a, const void *b) {
  size_t x = ((const sized *)a)->len, y = ((const sized *)b)->len;
  return x < y ? 1 : x > y ? -1 : 0;
}

int main(int argc, char **argv) {
  const char *shared = getenv("MIL_SHARED_DIR");
  int top = 8, reps = 5;
  double syn_mb = 64;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--shared") && i + 1 < argc) shared = argv[++i];
    else if (!strcmp(argv[i], "--top") && i + 1 < argc) top = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--synthetic-mb") && i + 1 < argc) syn_mb = atof(argv[++i]);
    else if (!strcmp(argv[i], "--reps") && i + 1 < argc) reps = atoi(argv[++i]);
    else {
      fprintf(stderr, "usage: %s [--shared DIR] [--top N] [--synthetic-mb M] [--reps R]\n", argv[0]);
      return 2;
    }
  }
  if (reps < 1) reps = 1;
  printf("%-60s %10s %10s %10s %14s\n", "program", "bytes", "parse MB/s", "print MB/s", "ct print MB/s");
  printf("(MB of complete-form text per second; the coremltools-form print, which leaves out consts, in MB of\n"
         " its own output per second; best of %d runs)\n", reps);

  char dir[4096];
  snprintf(dir, sizeof dir, "%s/corpus/passes", shared ? shared : "../shared");
  corpus_list l = {0};
  corpus_list_cases(dir, &l);
  if (l.n == 0) {
    printf("(corpus not found at %s: only the synthetic program)\n", dir);
  } else {
    sized *s = calloc(l.n, sizeof *s);
    for (size_t i = 0; i < l.n; i++) {
      struct stat st;
      s[i].path = l.paths[i];
      s[i].len = stat(l.paths[i], &st) == 0 ? (size_t)st.st_size : 0;
    }
    qsort(s, l.n, sizeof *s, by_len_desc);
    size_t total = 0;
    double tp = 0, tpr = 0;
    for (int i = 0; i < top && (size_t)i < l.n; i++) {
      corpus_case c;
      if (corpus_case_load(s[i].path, &c) != 0 || !c.input.text) continue;
      result r;
      if (measure(c.input.text, c.input.len, reps, &r)) {
        const char *base = strrchr(s[i].path, '/');
        row(base ? base + 1 : s[i].path, &r);
        total += r.bytes;
        tp += r.parse_s;
        tpr += r.print_s;
      }
      corpus_case_free(&c);
    }
    if (total) printf("%-60s %10zu %10.1f %10.1f\n", "(corpus programs above, together)", total, total / 1e6 / tp,
                      total / 1e6 / tpr);
    free(s);
  }
  corpus_list_free(&l);

  size_t len = 0;
  char *text = synthetic(syn_mb, &len);
  if (!text) {
    fprintf(stderr, "out of memory building the synthetic program\n");
    return 1;
  }
  result r;
  char name[64];
  snprintf(name, sizeof name, "synthetic: 256x256 fp32 consts, %.0f MB", (double)len / 1e6);
  int syn_reps = reps < 3 ? reps : 3;
  if (measure(text, len, syn_reps, &r)) row(name, &r);
  free(text);
  return 0;
}
