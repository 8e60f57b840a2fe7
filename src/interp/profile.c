/* Per-op profile of interpreter runs (mil_interp_set_profile,
 * mil_interp_profile_report, `mil run --profile`): the wall time of every
 * executed op, summed per op type and per op (by name) over the runs made
 * while profiling is on, like ONNX Runtime's per-node profile.
 *
 * The time of an op covers its type inference, its kernel (or value
 * inference) and the allocation of its outputs; consts and ops inside
 * nested blocks (cond, while_loop bodies) are counted as their own ops, and
 * the control-flow op itself includes them. Consts appear in the per-type
 * table only. The report also gives the largest sum of live activation
 * bytes of a run (memplan.c's large values), the figure a peak RSS is
 * compared with. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "interp/interp_internal.h"

typedef struct prof_entry {
  char *key;   /* op type, or op name */
  char *type;  /* op type (per-op entries) */
  char *shape; /* first output's type (per-op entries) */
  int64_t calls;
  int64_t ns;
} prof_entry;

typedef struct prof_table {
  prof_entry *e;
  size_t cap, n;
} prof_table;

struct interp_profile {
  pthread_mutex_t mu;
  prof_table types, ops;
  int64_t runs;
  int64_t total_ns;
  int64_t peak_bytes; /* the largest live activation bytes of a run */
};

int64_t interp_profile_now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

interp_profile *interp_profile_new(void) {
  interp_profile *p = calloc(1, sizeof *p);
  if (p) pthread_mutex_init(&p->mu, NULL);
  return p;
}

static void table_free(prof_table *t) {
  for (size_t i = 0; i < t->cap; i++) {
    free(t->e[i].key);
    free(t->e[i].type);
    free(t->e[i].shape);
  }
  free(t->e);
  memset(t, 0, sizeof *t);
}

void interp_profile_free(interp_profile *p) {
  if (!p) return;
  table_free(&p->types);
  table_free(&p->ops);
  pthread_mutex_destroy(&p->mu);
  free(p);
}

static size_t hash_str(const char *s) {
  uint64_t h = UINT64_C(1469598103934665603);
  for (; *s; s++) h = (h ^ (unsigned char)*s) * UINT64_C(1099511628211);
  return (size_t)h;
}

static prof_entry *find(prof_table *t, const char *key) {
  if (!t->cap) return NULL;
  for (size_t i = hash_str(key) & (t->cap - 1);; i = (i + 1) & (t->cap - 1))
    if (!t->e[i].key || strcmp(t->e[i].key, key) == 0) return &t->e[i];
}

static bool grow(prof_table *t) {
  size_t ncap = t->cap ? t->cap * 2 : 64;
  prof_table nt = {calloc(ncap, sizeof(prof_entry)), ncap, t->n};
  if (!nt.e) return false;
  for (size_t i = 0; i < t->cap; i++)
    if (t->e[i].key) *find(&nt, t->e[i].key) = t->e[i];
  free(t->e);
  *t = nt;
  return true;
}

static char *dup_or_null(const char *s) {
  if (!s) return NULL;
  size_t n = strlen(s) + 1;
  char *r = malloc(n);
  if (r) memcpy(r, s, n);
  return r;
}

static prof_entry *entry(prof_table *t, const char *key) {
  if ((t->n + 1) * 2 > t->cap && !grow(t)) return NULL;
  prof_entry *e = find(t, key);
  if (!e->key) {
    if (!(e->key = dup_or_null(key))) return NULL;
    t->n++;
  }
  return e;
}

void interp_profile_op(interp_profile *p, const mil_op *op, int64_t ns) {
  if (!p || !op || !op->type) return;
  pthread_mutex_lock(&p->mu);
  prof_entry *e = entry(&p->types, op->type);
  if (e) {
    e->calls++;
    e->ns += ns;
  }
  e = op->name && strcmp(op->type, "const") != 0 ? entry(&p->ops, op->name) : NULL; /* consts: per type only */
  if (e) {
    if (!e->type) e->type = dup_or_null(op->type);
    if (!e->shape && op->n_outputs > 0 && op->outputs[0]->type) {
      char tb[160];
      e->shape = dup_or_null(mil_type_to_string(op->outputs[0]->type, tb, sizeof tb));
    }
    e->calls++;
    e->ns += ns;
  }
  pthread_mutex_unlock(&p->mu);
}

void interp_profile_run(interp_profile *p, int64_t ns) {
  if (!p) return;
  pthread_mutex_lock(&p->mu);
  p->runs++;
  p->total_ns += ns;
  pthread_mutex_unlock(&p->mu);
}

void interp_profile_peak(interp_profile *p, int64_t bytes) {
  if (!p) return;
  pthread_mutex_lock(&p->mu);
  if (bytes > p->peak_bytes) p->peak_bytes = bytes;
  pthread_mutex_unlock(&p->mu);
}

static int by_time(const void *a, const void *b) {
  const prof_entry *x = *(const prof_entry *const *)a, *y = *(const prof_entry *const *)b;
  if (x->ns != y->ns) return x->ns < y->ns ? 1 : -1;
  return strcmp(x->key, y->key);
}

/* The table's entries sorted by total time, slowest first (malloc'ed). */
static prof_entry **sorted(const prof_table *t) {
  prof_entry **v = malloc((t->n ? t->n : 1) * sizeof *v);
  if (!v) return NULL;
  size_t k = 0;
  for (size_t i = 0; i < t->cap; i++)
    if (t->e[i].key) v[k++] = &t->e[i];
  qsort(v, k, sizeof *v, by_time);
  return v;
}

void interp_profile_report(interp_profile *p, FILE *f, int top) {
  if (!p || !f) return;
  pthread_mutex_lock(&p->mu);
  double runs = p->runs > 0 ? (double)p->runs : 1.0, total = (double)p->total_ns / 1e6 / runs, ops_ms = 0;
  for (size_t i = 0; i < p->types.cap; i++)
    if (p->types.e[i].key) ops_ms += (double)p->types.e[i].ns / 1e6 / runs;
  fprintf(f, "profile: %lld run(s), %.3f ms per run (ops %.3f ms, the rest: program copy, inputs, outputs)\n",
          (long long)p->runs, total, ops_ms);
  fprintf(f, "peak live activations: %.1f MB (the largest values of a run held at once by the memory plan; "
          "inputs, weights and kernels' work buffers not counted)\n", (double)p->peak_bytes / 1e6);
  prof_entry **v = sorted(&p->types);
  if (v) {
    fprintf(f, "%-28s %8s %12s %10s %7s\n", "op type", "ops/run", "ms/run", "us/op", "%");
    for (size_t i = 0; i < p->types.n; i++) {
      double ms = (double)v[i]->ns / 1e6 / runs;
      fprintf(f, "%-28s %8.0f %12.3f %10.1f %6.1f%%\n", v[i]->key, (double)v[i]->calls / runs, ms,
              v[i]->calls ? (double)v[i]->ns / 1e3 / (double)v[i]->calls : 0.0, total > 0 ? 100.0 * ms / total : 0.0);
    }
    free(v);
  }
  v = sorted(&p->ops);
  if (v) {
    size_t n = top > 0 && (size_t)top < p->ops.n ? (size_t)top : p->ops.n;
    fprintf(f, "slowest %zu op(s):\n%12s  %-24s %-36s %s\n", n, "ms/run", "type", "op", "output");
    for (size_t i = 0; i < n; i++)
      fprintf(f, "%12.3f  %-24s %-36s %s\n", (double)v[i]->ns / 1e6 / runs, v[i]->type ? v[i]->type : "?",
              v[i]->key, v[i]->shape ? v[i]->shape : "");
    free(v);
  }
  pthread_mutex_unlock(&p->mu);
}
