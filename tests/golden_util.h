/* The golden pass-case runner (mil-text.md section 4), shared by
 * tests/unit/test_golden.c (the corpus) and tests/unit/test_pass_manager.c
 * (the runner itself, with fixture passes).
 *
 * A case file:
 *   # pass: common::x            or   # pipeline: common::a, common::b, ...
 *   # options: {...}                   (pipeline: {"common::a": {...}})
 *   # origin: ...
 *   # --- input
 *   <complete-form program>
 *   # --- expected
 *   <complete-form program>
 *   # --- expected (coremltools form)
 *   <coremltools print>
 *
 * Case files are split by tests/corpus_util.h. Header-only (static inline
 * functions). */
#ifndef MIL_TESTS_GOLDEN_UTIL_H
#define MIL_TESTS_GOLDEN_UTIL_H

#include <cjson/cJSON.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mil/equiv.h"
#include "mil/mil.h"
#include "mil/passes.h"

#include "corpus_util.h"
#include "golden_kmeans.h"

typedef struct golden_case {
  corpus_case cc;      /* the file, split by tests/corpus_util.h */
  const char *path;
  const char *pass;    /* "# pass:" value, or NULL */
  char **pipeline;     /* "# pipeline:" names */
  int n_pipeline;
  const char *options; /* "# options:" JSON, or NULL */
  const char *input, *expected; /* section texts (not NUL-terminated) */
  size_t input_len, expected_len;
  int input_line, expected_line; /* 1-based line of the first program line */
} golden_case;

typedef struct golden_outcome {
  bool equivalent, identical;
  char msg[1400]; /* why not equivalent (or not identical) */
} golden_outcome;

static inline void golden_case_free(golden_case *c) {
  corpus_case_free(&c->cc);
  for (int i = 0; i < c->n_pipeline; i++) free(c->pipeline[i]);
  free(c->pipeline);
  memset(c, 0, sizeof *c);
}

static inline char *golden_read_file(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  size_t cap = 1 << 16, n = 0;
  char *buf = malloc(cap + 1);
  while (buf) {
    size_t r = fread(buf + n, 1, cap - n, f);
    n += r;
    if (n < cap) break;
    char *nb = realloc(buf, cap * 2 + 1);
    if (!nb) {
      free(buf);
      buf = NULL;
      break;
    }
    buf = nb;
    cap *= 2;
  }
  fclose(f);
  if (buf) buf[n] = 0;
  if (len) *len = n;
  return buf;
}

/* Reads and splits a case. Returns 0, or -1 with a reason in err. */
static inline int golden_case_read(const char *path, golden_case *c, char *err, size_t errn) {
  memset(c, 0, sizeof *c);
  if (corpus_case_load(path, &c->cc) != 0) {
    snprintf(err, errn, "%.400s: cannot read", path);
    return -1;
  }
  c->path = c->cc.path;
  c->pass = c->cc.pass;
  c->options = c->cc.options;
  c->input = c->cc.input.text;
  c->input_len = c->cc.input.len;
  c->input_line = c->cc.input.first_line;
  c->expected = c->cc.expected.text;
  c->expected_len = c->cc.expected.len;
  c->expected_line = c->cc.expected.first_line;
  if (!c->input || !c->expected) {
    snprintf(err, errn, "%.400s: missing '# --- input' or '# --- expected' section", path);
    return -1;
  }
  if (c->cc.pipeline) {
    char *list = strdup(c->cc.pipeline);
    if (!list) {
      snprintf(err, errn, "%.400s: out of memory", path);
      return -1;
    }
    for (char *save = NULL, *t = strtok_r(list, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
      while (*t == ' ') t++;
      char *e = t + strlen(t);
      while (e > t && e[-1] == ' ') *--e = 0;
      if (!*t) continue;
      char **np = realloc(c->pipeline, (size_t)(c->n_pipeline + 1) * sizeof *np);
      if (!np || !(np[c->n_pipeline] = strdup(t))) {
        if (np) c->pipeline = np;
        free(list);
        snprintf(err, errn, "%.400s: out of memory", path);
        return -1;
      }
      c->pipeline = np;
      c->n_pipeline++;
    }
    free(list);
  }
  if (!c->pass && !c->n_pipeline) {
    snprintf(err, errn, "%.400s: no '# pass:' or '# pipeline:' header", path);
    return -1;
  }
  return 0;
}

/* Tests of the runner itself run a fixture pass in place of the pass a
 * case names: golden_alias_from -> golden_alias_to. */
static const char *golden_alias_from, *golden_alias_to;

static inline const char *golden_resolve(const char *name) {
  if (golden_alias_from && golden_alias_to && strcmp(name, golden_alias_from) == 0) return golden_alias_to;
  return name;
}

/* True when every pass the case names is implemented; otherwise writes the
 * first missing pass to missing. */
static inline bool golden_case_runnable(const golden_case *c, const char **missing) {
  if (c->pass) {
    if (!mil_pass_is_implemented(golden_resolve(c->pass))) {
      if (missing) *missing = c->pass;
      return false;
    }
    return true;
  }
  for (int i = 0; i < c->n_pipeline; i++)
    if (!mil_pass_is_implemented(golden_resolve(c->pipeline[i]))) {
      if (missing) *missing = c->pipeline[i];
      return false;
    }
  return true;
}

static inline void golden_diag_msg(const mil_diag *d, char *buf, size_t n) {
  size_t len = 0;
  buf[0] = 0;
  for (size_t i = 0; i < d->count && len + 3 < n; i++)
    if (d->msgs[i].severity == MIL_SEV_ERROR)
      len += (size_t)snprintf(buf + len, n - len, "%s%s", len ? "; " : "", d->msgs[i].text);
}

/* Builds the case's pipeline with its options. */
static inline mil_status golden_pipeline(const golden_case *c, mil_pipeline **pl, mil_diag *d) {
  mil_status st;
  if (c->pass) {
    const char *names[1] = {golden_resolve(c->pass)};
    st = mil_pipeline_new_from_list(c->pass, 1, names, pl, d);
    if (st == MIL_OK && c->options && strcmp(c->options, "{}") != 0)
      st = mil_pipeline_set_options_json(*pl, names[0], c->options, d);
    return st;
  }
  const char **names = malloc((size_t)(c->n_pipeline + 1) * sizeof *names);
  if (!names) return MIL_ERR_NOMEM;
  for (int i = 0; i < c->n_pipeline; i++) names[i] = golden_resolve(c->pipeline[i]);
  st = mil_pipeline_new_from_list("golden", c->n_pipeline, names, pl, d);
  free(names);
  /* Recording condition of the _pipeline_default directory: coremltools keeps
   * const_deduplication's const_threshold as a class attribute, and earlier
   * tests in the recording process had lowered it, so these whole-pipeline
   * runs deduplicated consts of any size. Reproduce that setting (the case
   * header records only options set by the case itself). */
  if (st == MIL_OK && strstr(c->path, "/_pipeline_default/") &&
      !(c->options && strstr(c->options, "const_deduplication")))
    st = mil_pipeline_set_options_json(*pl, "common::const_deduplication", "{\"const_threshold\": 1}", d);
  if (st != MIL_OK || !c->options || strcmp(c->options, "{}") == 0) return st;
  cJSON *j = cJSON_Parse(c->options);
  if (!j || !cJSON_IsObject(j)) {
    cJSON_Delete(j);
    return mil_diag_error(d, MIL_ERR_PARSE, "options are not a JSON object");
  }
  const cJSON *it;
  cJSON_ArrayForEach(it, j) {
    char *txt = cJSON_PrintUnformatted(it);
    st = txt ? mil_pipeline_set_options_json(*pl, golden_resolve(it->string), txt, d) : MIL_ERR_NOMEM;
    free(txt);
    if (st != MIL_OK) break;
  }
  cJSON_Delete(j);
  return st;
}

/* Parses the input, runs the case's pass(es) with verify-each, and compares
 * the result with the expected program. */
static inline void golden_case_run(const golden_case *c, golden_outcome *o) {
  memset(o, 0, sizeof *o);
  mil_diag d;
  mil_diag_init(&d);
  mil_program *in = NULL, *ex = NULL;
  mil_pipeline *pl = NULL;
  mil_parse_options po = {c->path, NULL};
  char dm[1000];
  if (mil_parse_program(c->input, c->input_len, &po, &in, &d) != MIL_OK) {
    golden_diag_msg(&d, dm, sizeof dm);
    snprintf(o->msg, sizeof o->msg, "input (from line %d) does not parse: %s", c->input_line, dm);
    goto out;
  }
  if (mil_parse_program(c->expected, c->expected_len, &po, &ex, &d) != MIL_OK) {
    golden_diag_msg(&d, dm, sizeof dm);
    snprintf(o->msg, sizeof o->msg, "expected (from line %d) does not parse: %s", c->expected_line, dm);
    goto out;
  }
  if (golden_pipeline(c, &pl, &d) != MIL_OK) {
    golden_diag_msg(&d, dm, sizeof dm);
    snprintf(o->msg, sizeof o->msg, "pipeline: %s", dm);
    goto out;
  }
  mil_pass_verifier ver = {0};
  mil_pass_observer vobs = mil_pass_verifier_observer(&ver);
  mil_pipeline_run_options ro = {&vobs, 1};
  if (mil_pipeline_run(pl, in, &ro, NULL, &d) != MIL_OK) {
    golden_diag_msg(&d, dm, sizeof dm);
    snprintf(o->msg, sizeof o->msg, "running: %s", dm);
    goto out;
  }
  /* palettization through scikit-learn's k-means: the rule of golden_kmeans.h */
  char kwhy[300] = "";
  if (c->pass && strcmp(c->pass, "compression::palettize_weights") == 0 && c->options &&
      !strstr(c->options, "\"mode\": \"uniform\"") && !strstr(c->options, "\"mode\": \"unique\""))
    golden_kmeans_snap(in, ex, kwhy, sizeof kwhy);
  mil_equiv_options eo = {0};
  eo.name_a = "result";
  eo.name_b = "expected";
  mil_equiv_result r;
  mil_program_compare(in, ex, &eo, &r, NULL);
  o->equivalent = r.equivalent;
  o->identical = r.identical;
  snprintf(o->msg, sizeof o->msg, "%s%s%s", kwhy, kwhy[0] ? "; " : "", r.equivalent ? r.identical_diff : r.diff);
out:
  mil_pipeline_free(pl);
  mil_program_free(in);
  mil_program_free(ex);
  mil_diag_clear(&d);
}

/* ---------- running a corpus directory tree ---------- */

typedef struct golden_row {
  char dir[128];
  int cases, equivalent, identical, failed, known, skipped;
} golden_row;

typedef struct golden_totals {
  golden_row *rows;
  int n_rows;
  int passed, failed, skipped, known, errors;
  int shown; /* failure messages printed so far */
} golden_totals;

static inline int golden_cmp_str(const void *a, const void *b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Sorted names in dir ending with suffix (or directories when suffix is
 * NULL). Returns the count; *out malloc'ed. */
static inline int golden_list(const char *dir, const char *suffix, char ***out) {
  *out = NULL;
  DIR *dd = opendir(dir);
  if (!dd) return -1;
  int n = 0, cap = 0;
  struct dirent *e;
  while ((e = readdir(dd))) {
    if (e->d_name[0] == '.') continue;
    size_t len = strlen(e->d_name);
    if (suffix) {
      size_t sl = strlen(suffix);
      if (len < sl || strcmp(e->d_name + len - sl, suffix) != 0) continue;
    } else {
      char p[4096];
      snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
      DIR *sub = opendir(p);
      if (!sub) continue;
      closedir(sub);
    }
    if (n == cap) {
      cap = cap ? cap * 2 : 64;
      char **nn = realloc(*out, (size_t)cap * sizeof *nn);
      if (!nn) break;
      *out = nn;
    }
    (*out)[n++] = strdup(e->d_name);
  }
  closedir(dd);
  if (*out) qsort(*out, (size_t)n, sizeof **out, golden_cmp_str);
  return n;
}

static inline void golden_free_list(char **l, int n) {
  for (int i = 0; i < n; i++) free(l[i]);
  free(l);
}

/* Known failures: "dir/case.mil  reason" lines; '#' comments. */
typedef struct golden_known {
  char **names;
  int n;
} golden_known;

static inline void golden_known_load(const char *path, golden_known *k) {
  memset(k, 0, sizeof *k);
  char *t = golden_read_file(path, NULL);
  if (!t) return;
  for (char *save = NULL, *l = strtok_r(t, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
    while (*l == ' ' || *l == '\t') l++;
    if (!*l || *l == '#') continue;
    size_t n = strcspn(l, " \t\r");
    char **nn = realloc(k->names, (size_t)(k->n + 1) * sizeof *nn);
    if (!nn) break;
    k->names = nn;
    k->names[k->n] = strndup(l, n);
    if (k->names[k->n]) k->n++;
  }
  free(t);
}

static inline bool golden_known_has(const golden_known *k, const char *name) {
  for (int i = 0; i < k->n; i++)
    if (strcmp(k->names[i], name) == 0) return true;
  return false;
}

static inline void golden_known_free(golden_known *k) { golden_free_list(k->names, k->n); }

/* Runs every case of root/<dir>/ for the directories selected by filter
 * (NULL = all; else a comma-separated list of directory names). */
static inline void golden_run_tree(const char *root, const char *filter, const golden_known *known, int max_shown,
                            golden_totals *t) {
  memset(t, 0, sizeof *t);
  char **dirs;
  int nd = golden_list(root, NULL, &dirs);
  for (int i = 0; i < nd; i++) {
    if (filter && *filter) {
      bool sel = false;
      const char *f = filter;
      size_t dl = strlen(dirs[i]);
      while (*f && !sel) {
        size_t n = strcspn(f, ",");
        sel = n == dl && strncmp(f, dirs[i], n) == 0;
        f += n + (f[n] == ',');
      }
      if (!sel) continue;
    }
    golden_row *nr = realloc(t->rows, (size_t)(t->n_rows + 1) * sizeof *nr);
    if (!nr) break;
    t->rows = nr;
    golden_row *row = &t->rows[t->n_rows++];
    memset(row, 0, sizeof *row);
    snprintf(row->dir, sizeof row->dir, "%s", dirs[i]);
    char dp[4096];
    snprintf(dp, sizeof dp, "%s/%s", root, dirs[i]);
    char **files;
    int nf = golden_list(dp, ".mil", &files);
    for (int k = 0; k < nf; k++) {
      char path[8192], rel[4096], err[512];
      snprintf(path, sizeof path, "%s/%s", dp, files[k]);
      snprintf(rel, sizeof rel, "%s/%s", dirs[i], files[k]);
      row->cases++;
      golden_case c;
      if (golden_case_read(path, &c, err, sizeof err) != 0) {
        row->failed++;
        t->errors++;
        if (t->shown++ < max_shown) printf("  FAIL %s: %s\n", rel, err);
        golden_case_free(&c);
        continue;
      }
      if (!golden_case_runnable(&c, NULL)) {
        row->skipped++;
        golden_case_free(&c);
        continue;
      }
      golden_outcome o;
      golden_case_run(&c, &o);
      bool is_known = golden_known_has(known, rel);
      if (o.equivalent) {
        row->equivalent++;
        if (o.identical) row->identical++;
        /* MIL_GOLDEN_NI=1: list the cases equivalent but not identical */
        else if (getenv("MIL_GOLDEN_NI")) printf("  NI %s: %s\n", rel, o.msg);
        if (is_known) printf("  note: %s passes now; remove it from golden_known_failures.txt\n", rel);
      } else if (is_known) {
        row->known++;
      } else {
        row->failed++;
        if (t->shown++ < max_shown) printf("  FAIL %s: %s\n", rel, o.msg);
      }
      golden_case_free(&c);
    }
    golden_free_list(files, nf);
    t->passed += row->equivalent;
    t->failed += row->failed;
    t->skipped += row->skipped;
    t->known += row->known;
  }
  golden_free_list(dirs, nd);
}

static inline void golden_print_table(const golden_totals *t) {
  printf("%-56s %6s %10s %9s %6s %7s\n", "pass", "cases", "equivalent", "identical", "failed", "skipped");
  for (int i = 0; i < t->n_rows; i++) {
    const golden_row *r = &t->rows[i];
    char failed[32];
    if (r->known) snprintf(failed, sizeof failed, "%d+%dk", r->failed, r->known);
    else snprintf(failed, sizeof failed, "%d", r->failed);
    printf("%-56s %6d %10d %9d %6s %7d\n", r->dir, r->cases, r->equivalent, r->identical, failed, r->skipped);
  }
  printf("golden: %d passed, %d failed, %d skipped", t->passed, t->failed, t->skipped);
  if (t->known) printf(" (%d known failures)", t->known);
  printf("\n");
}

static inline void golden_totals_free(golden_totals *t) {
  free(t->rows);
  memset(t, 0, sizeof *t);
}

#endif
