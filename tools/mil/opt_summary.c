/* `mil opt` observability: progress line and end-of-run summary. */
#include "opt_summary.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "mil/blob.h"
#include "mil/model.h"
#include "mil/ops.h"
#include "ptr_map.h"

double opt_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* ------------------------------------------------------------------------ */
/* Progress line                                                              */
/* ------------------------------------------------------------------------ */

void opt_progress_init(opt_progress *pg, FILE *f, bool enabled) {
  memset(pg, 0, sizeof *pg);
  pg->f = f;
  pg->active = enabled && f && isatty(fileno(f));
  pg->width = 80;
  struct winsize ws;
  if (pg->active && ioctl(fileno(f), TIOCGWINSZ, &ws) == 0 && ws.ws_col >= 20) pg->width = ws.ws_col;
}

void opt_progress_show(opt_progress *pg, const char *fmt, ...) {
  if (!pg->active) return;
  char line[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  /* never wrap: a wrapped line cannot be rewritten with '\r' */
  size_t max = (size_t)(pg->width - 1) < sizeof line - 1 ? (size_t)(pg->width - 1) : sizeof line - 1;
  if (strlen(line) > max) line[max] = 0;
  fprintf(pg->f, "\r%s\033[K", line);
  fflush(pg->f);
  pg->shown = true;
}

void opt_progress_clear(opt_progress *pg) {
  if (!pg->active || !pg->shown) return;
  fputs("\r\033[K", pg->f);
  fflush(pg->f);
  pg->shown = false;
}

/* ------------------------------------------------------------------------ */
/* Census                                                                     */
/* ------------------------------------------------------------------------ */

/* Op types are interned per program, so one program's ops of a type share a
 * pointer: a small open-addressing table keyed by that pointer maps them to
 * a census slot. */
typedef struct census_walk {
  opt_census *c;
  const char **keys; /* interned type pointers */
  int32_t *slot;     /* census index of keys[i] */
  size_t cap;        /* power of two */
  int spec;
  bool oom;
} census_walk;

static bool census_grow(census_walk *w) {
  size_t ncap = w->cap ? w->cap * 2 : 64;
  const char **nk = calloc(ncap, sizeof *nk);
  int32_t *ns = calloc(ncap, sizeof *ns);
  if (!nk || !ns) {
    free(nk);
    free(ns);
    return false;
  }
  for (size_t i = 0; i < w->cap; i++) {
    if (!w->keys[i]) continue;
    size_t h = ptr_map_hash(w->keys[i]) & (ncap - 1);
    while (nk[h]) h = (h + 1) & (ncap - 1);
    nk[h] = w->keys[i];
    ns[h] = w->slot[i];
  }
  free(w->keys);
  free(w->slot);
  w->keys = nk;
  w->slot = ns;
  w->cap = ncap;
  return true;
}

static int32_t census_type_slot(census_walk *w, const char *type) {
  if ((size_t)w->c->n_types * 2 + 2 > w->cap && !census_grow(w)) return -1;
  size_t h = ptr_map_hash(type) & (w->cap - 1);
  while (w->keys[h]) {
    if (w->keys[h] == type) return w->slot[h];
    h = (h + 1) & (w->cap - 1);
  }
  opt_census *c = w->c;
  if (c->n_types == c->cap_types) {
    int32_t ncap = c->cap_types ? c->cap_types * 2 : 32;
    char **nt = realloc(c->types, (size_t)ncap * sizeof *nt);
    if (!nt) return -1;
    c->types = nt;
    int64_t *nc = realloc(c->counts, (size_t)ncap * sizeof *nc);
    if (!nc) return -1;
    c->counts = nc;
    c->cap_types = ncap;
  }
  char *copy = strdup(type);
  if (!copy) return -1;
  int32_t s = c->n_types++;
  c->types[s] = copy;
  c->counts[s] = 0;
  w->keys[h] = type;
  w->slot[h] = s;
  return s;
}

static int census_visit(mil_op *op, void *ud) {
  census_walk *w = ud;
  int32_t s = census_type_slot(w, op->type ? op->type : "?");
  if (s < 0) {
    w->oom = true;
    return 1;
  }
  w->c->counts[s]++;
  w->c->ops++;
  if (mil_op_is_const(op) && op->n_outputs == 1) {
    const mil_value *v = op->outputs[0]->val;
    if (v && mil_blob_should_store(v, w->spec)) {
      w->c->weight_bytes += v->nbytes;
      w->c->n_weights++;
    }
  }
  return 0;
}

bool opt_census_take(mil_program *p, int spec_version, opt_census *c) {
  memset(c, 0, sizeof *c);
  if (!p) return true;
  census_walk w;
  memset(&w, 0, sizeof w);
  w.c = c;
  w.spec = spec_version;
  if (w.spec <= 0 && p->n_functions > 0) w.spec = mil_spec_version_for_opset(p->functions[0]->opset);
  if (w.spec <= 0) w.spec = MIL_SPEC_VERSION_MIN;
  mil_program_walk(p, census_visit, &w);
  free(w.keys);
  free(w.slot);
  return !w.oom;
}

void opt_census_free(opt_census *c) {
  for (int32_t i = 0; i < c->n_types; i++) free(c->types[i]);
  free(c->types);
  free(c->counts);
  memset(c, 0, sizeof *c);
}

/* ------------------------------------------------------------------------ */
/* Summary                                                                    */
/* ------------------------------------------------------------------------ */

const char *opt_fmt_bytes(uint64_t n, char *buf, size_t len) {
  static const char *const units[] = {"B", "KB", "MB", "GB", "TB"};
  double x = (double)n;
  int u = 0;
  while (x >= 1000.0 && u < 4) x /= 1000.0, u++;
  if (u == 0) snprintf(buf, len, "%llu B", (unsigned long long)n);
  else snprintf(buf, len, "%.*f %s", x < 10 ? 2 : x < 100 ? 1 : 0, x, units[u]);
  return buf;
}

static const char *fmt_secs(double s, char *buf, size_t len) {
  if (s < 1e-3) snprintf(buf, len, "%.0f us", s * 1e6);
  else if (s < 1.0) snprintf(buf, len, "%.1f ms", s * 1e3);
  else snprintf(buf, len, "%.2f s", s);
  return buf;
}

typedef struct type_row {
  const char *type;
  int64_t before, after;
} type_row;

static int64_t abs64(int64_t x) { return x < 0 ? -x : x; }

/* Biggest absolute change first, then most ops after, then name. */
static int cmp_row(const void *x, const void *y) {
  const type_row *a = x, *b = y;
  int64_t da = abs64(a->after - a->before), db = abs64(b->after - b->before);
  if (da != db) return da < db ? 1 : -1;
  if (a->after != b->after) return a->after < b->after ? 1 : -1;
  return strcmp(a->type, b->type);
}

/* Joins the two censuses by type name. Returns the row count, or -1. */
static int32_t join_rows(const opt_census *b, const opt_census *a, type_row **out) {
  int32_t cap = b->n_types + (a ? a->n_types : 0);
  type_row *r = calloc((size_t)(cap ? cap : 1), sizeof *r);
  if (!r) return -1;
  int32_t n = 0;
  for (int32_t i = 0; i < b->n_types; i++) r[n++] = (type_row){b->types[i], b->counts[i], 0};
  for (int32_t i = 0; a && i < a->n_types; i++) {
    int32_t j = 0;
    while (j < n && strcmp(r[j].type, a->types[i]) != 0) j++;
    if (j == n) r[n++] = (type_row){a->types[i], 0, 0};
    r[j].after = a->counts[i];
  }
  qsort(r, (size_t)n, sizeof *r, cmp_row);
  *out = r;
  return n;
}

static long peak_rss_kb(void) {
  struct rusage ru;
  if (getrusage(RUSAGE_SELF, &ru) != 0) return 0;
  return ru.ru_maxrss; /* kilobytes on Linux */
}

enum { MAX_TYPE_ROWS = 10 };

void opt_summary_print(FILE *f, const opt_summary *s) {
  char b1[32], b2[32], b3[32], b4[32];
  const opt_census *cb = s->before, *ca = s->after;
  fprintf(f, "-- mil opt: %s -> %s (pipeline %s: %d pass runs", s->in, s->saved ? s->out : "(not written)",
          s->pipeline, (int)s->n_passes_run);
  if (s->n_skipped) fprintf(f, ", %d passes skipped as not implemented", (int)s->n_skipped);
  fprintf(f, ")\n");
  if (cb) {
    int64_t after = ca ? ca->ops : s->rep ? s->rep->ops_after : cb->ops;
    int64_t delta = after - cb->ops;
    fprintf(f, "ops: %lld before, %lld after", (long long)cb->ops, (long long)after);
    if (cb->ops > 0) fprintf(f, " (%+lld, %+.1f%%)", (long long)delta, 100.0 * (double)delta / (double)cb->ops);
    fprintf(f, "\n");
    type_row *rows = NULL;
    int32_t n = join_rows(cb, ca, &rows);
    if (n > 0) {
      int32_t changed = 0;
      for (int32_t i = 0; i < n; i++) changed += rows[i].before != rows[i].after;
      int32_t show = changed < MAX_TYPE_ROWS ? changed : MAX_TYPE_ROWS;
      if (show > 0) fprintf(f, "  %-32s %10s %10s %10s\n", "op type", "before", "after", "change");
      for (int32_t i = 0; i < show; i++)
        fprintf(f, "  %-32s %10lld %10lld %+10lld\n", cli_esc(rows[i].type), (long long)rows[i].before,
                (long long)rows[i].after, (long long)(rows[i].after - rows[i].before));
      if (changed > show) fprintf(f, "  ... %d more op types changed\n", (int)(changed - show));
      fprintf(f, "  %d op types, %d changed\n", (int)n, (int)changed);
    }
    free(rows);
    uint64_t wa = ca ? ca->weight_bytes : cb->weight_bytes;
    fprintf(f, "weights: %s before, %s after (%lld -> %lld tensors stored in weight.bin)\n",
            opt_fmt_bytes(cb->weight_bytes, b1, sizeof b1), opt_fmt_bytes(wa, b2, sizeof b2),
            (long long)cb->n_weights, (long long)(ca ? ca->n_weights : cb->n_weights));
  }
  fprintf(f, "time: load %s, pipeline %s", fmt_secs(s->load_s, b1, sizeof b1), fmt_secs(s->pipeline_s, b2, sizeof b2));
  if (s->verify_s > 0) fprintf(f, " (+ %s verifying)", fmt_secs(s->verify_s, b3, sizeof b3));
  fprintf(f, ", save %s, total %s", fmt_secs(s->save_s, b3, sizeof b3), fmt_secs(s->total_s, b4, sizeof b4));
  if (cb && s->pipeline_s > 0) fprintf(f, " (%.0f ops/s in the pipeline)", (double)cb->ops / s->pipeline_s);
  fprintf(f, "\n");
  if (s->rep && s->rep->n_records > 0) {
    const mil_pass_record *slow = &s->rep->records[0];
    for (int32_t i = 1; i < s->rep->n_records; i++)
      if (s->rep->records[i].seconds > slow->seconds) slow = &s->rep->records[i];
    fprintf(f, "slowest pass: #%d %s, %s (%.0f%% of the pipeline); %d of %d pass runs changed the program\n",
            (int)slow->index, slow->pass, fmt_secs(slow->seconds, b1, sizeof b1),
            s->rep->seconds > 0 ? 100.0 * slow->seconds / s->rep->seconds : 0.0, (int)s->rep->n_changed,
            (int)s->rep->n_records);
  }
  long kb = peak_rss_kb();
  if (kb > 0) fprintf(f, "peak memory: %s\n", opt_fmt_bytes((uint64_t)kb * 1024u, b1, sizeof b1));
}

void opt_print_written(FILE *f, const char *out, mil_program *p, int spec_version, double seconds) {
  opt_census c;
  memset(&c, 0, sizeof c);
  bool ok = opt_census_take(p, spec_version, &c);
  const char *opset = p && p->n_functions ? p->functions[0]->opset : NULL;
  int spec = spec_version ? spec_version : opset ? mil_spec_version_for_opset(opset) : 0;
  int ver = opset ? mil_opset_version(opset) : -1;
  char bytes[32];
  if (ok)
    fprintf(f, "mil: wrote %s (spec %d%s%s): %lld ops, %lld weights (%s) in %.2f s\n",
            strcmp(out, "-") == 0 ? "standard output" : cli_esc(out), spec, ver >= 0 ? ", " : "",
            ver >= 0 ? mil_opset_target_name(ver) : "", (long long)c.ops, (long long)c.n_weights,
            opt_fmt_bytes(c.weight_bytes, bytes, sizeof bytes), seconds);
  else
    fprintf(f, "mil: wrote %s in %.2f s\n", strcmp(out, "-") == 0 ? "standard output" : cli_esc(out), seconds);
  opt_census_free(&c);
}
