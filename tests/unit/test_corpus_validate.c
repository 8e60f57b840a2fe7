/* The op registry against the golden pass corpus: every program (the input
 * and the expected section of every case under corpus/passes/) must pass
 * mil_program_validate, i.e. every op exists in its function's opset, its
 * inputs fit the op's spec and its declared output types equal the ones
 * inferred from its inputs.
 *
 * Folding is checked too: a non-const op whose output a section marks '*'
 * (value known to coremltools) must fold to a value, and when the expected
 * section holds a const of the same name as an input-section op output
 * (const_elimination replaced the op by its value) the value folded in the
 * input must equal that const's.
 *
 * Prints per-op-type counts, then
 *   validate: N passed, M failed
 *   fold: N matched, M mismatched, K not folded, E folded without '*'
 * Set MIL_CORPUS_OPS=add,conv to print every message about those op types
 * (otherwise the first 3 per op type are shown). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "shared_skip.h"

#include "corpus_util.h"
#include "mil/ops.h"
#include "mil/text.h"

/* ---- per-op-type statistics ---- */

typedef struct op_stat {
  char *type;
  long ok, failed;             /* op instances validated */
  long fold_ok, fold_bad, fold_missing, fold_extra;
  int shown;
} op_stat;

typedef struct stats {
  op_stat *v;
  size_t n, cap;
  long prog_ok, prog_failed, parse_failed;
  long fold_ok, fold_bad, fold_missing, fold_extra;
  const char *filter; /* MIL_CORPUS_OPS */
} stats;

static op_stat *stat_for(stats *s, const char *type) {
  for (size_t i = 0; i < s->n; i++)
    if (strcmp(s->v[i].type, type) == 0) return &s->v[i];
  if (s->n == s->cap) {
    s->cap = s->cap ? s->cap * 2 : 64;
    s->v = realloc(s->v, s->cap * sizeof *s->v);
    assert_non_null(s->v);
  }
  op_stat *o = &s->v[s->n++];
  memset(o, 0, sizeof *o);
  o->type = strdup(type);
  return o;
}

static bool in_filter(const stats *s, const char *type) {
  if (!s->filter) return false;
  size_t n = strlen(type);
  for (const char *p = s->filter; *p;) {
    const char *e = strchr(p, ',');
    size_t l = e ? (size_t)(e - p) : strlen(p);
    if (l == n && strncmp(p, type, n) == 0) return true;
    if (!e) break;
    p = e + 1;
  }
  return false;
}

/* Prints a message about an op type: all of them for filtered types, else
 * the first 3. */
static void show(stats *s, op_stat *o, const char *where, const char *msg) {
  if (in_filter(s, o->type) || (!s->filter && o->shown < 3)) {
    printf("  [%s] %s\n    %s\n", o->type, where, msg);
    o->shown++;
  }
}

/* "... op 'name' (type): ..." -> name and type. */
static bool msg_op(const char *msg, char *name, size_t nn, char *type, size_t tn) {
  const char *p = strstr(msg, "op '");
  if (!p) return false;
  p += 4;
  const char *q = strstr(p, "' (");
  if (!q) return false;
  const char *r = strchr(q + 3, ')');
  if (!r) return false;
  snprintf(name, nn, "%.*s", (int)(q - p), p);
  snprintf(type, tn, "%.*s", (int)(r - (q + 3)), q + 3);
  return true;
}

/* ---- walking ---- */

typedef struct walk_ctx {
  stats *s;
  char **failed_names; /* names of ops with a validation error */
  size_t n_failed;
} walk_ctx;

static int count_op(mil_op *op, void *ud) {
  walk_ctx *w = ud;
  if (mil_op_is_const(op)) return 0;
  op_stat *o = stat_for(w->s, op->type);
  bool bad = false;
  for (size_t i = 0; i < w->n_failed && !bad; i++) bad = strcmp(w->failed_names[i], op->name) == 0;
  if (bad) o->failed++;
  else o->ok++;
  return 0;
}

/* ---- folding ---- */

typedef struct fold_ctx {
  mil_program *p;
  const mil_var **starred; /* non-const op outputs marked '*' in the text */
  size_t n_starred, cap;
} fold_ctx;

static int collect_starred(mil_op *op, void *ud) {
  fold_ctx *f = ud;
  if (mil_op_is_const(op)) return 0;
  for (int32_t i = 0; i < op->n_outputs; i++)
    if (op->outputs[i]->mark == MIL_MARK_VALUE) {
      if (f->n_starred == f->cap) {
        f->cap = f->cap ? f->cap * 2 : 16;
        f->starred = realloc(f->starred, f->cap * sizeof *f->starred);
        assert_non_null(f->starred);
      }
      f->starred[f->n_starred++] = op->outputs[i];
    }
  return 0;
}

static int infer_all(mil_op *op, void *ud) {
  (void)ud;
  if (mil_op_is_const(op)) return 0;
  mil_diag d;
  mil_diag_init(&d);
  mil_op_infer(op, &d);
  mil_diag_clear(&d);
  return 0;
}

static bool was_starred(const fold_ctx *f, const mil_var *v) {
  for (size_t i = 0; i < f->n_starred; i++)
    if (f->starred[i] == v) return true;
  return false;
}

static const mil_var *find_const_var(mil_block *b, const char *name) {
  for (mil_op *op = b->first; op; op = op->next) {
    if (mil_op_is_const(op) && op->n_outputs == 1 && strcmp(op->outputs[0]->name, name) == 0) return op->outputs[0];
    for (int32_t k = 0; k < op->n_blocks; k++) {
      const mil_var *v = find_const_var(op->blocks[k], name);
      if (v) return v;
    }
  }
  return NULL;
}

/* The const named `name` in the function named `func` of the expected program. */
static const mil_var *expected_const(const mil_program *e, const char *func, const char *name) {
  if (!e) return NULL;
  const mil_function *f = mil_program_find_function(e, func);
  return f ? find_const_var(mil_function_body(f), name) : NULL;
}

static const char *func_name(const mil_op *op) {
  const mil_block *b = op->block;
  while (b && !b->func && b->parent) b = b->parent->block;
  return b && b->func ? b->func->name : "";
}

/* Values equal at the precision of their dtype: exact for integers and
 * bool, one ulp for fp16, 1e-6 relative (or 4 ulps) for fp32. */
static bool values_close(const mil_value *a, const mil_value *b, char *why, size_t wn) {
  if (a->kind != MIL_VAL_TENSOR || b->kind != MIL_VAL_TENSOR) return mil_value_equal(a, b);
  if (a->type->dtype != b->type->dtype || a->numel != b->numel) {
    snprintf(why, wn, "dtype/size differ: %s[%lld] vs %s[%lld]", mil_dtype_name(a->type->dtype), (long long)a->numel,
             mil_dtype_name(b->type->dtype), (long long)b->numel);
    return false;
  }
  mil_dtype dt = a->type->dtype;
  if (dt == MIL_DT_STRING) return mil_value_equal(a, b);
  for (int64_t i = 0; i < a->numel; i++) {
    double x = mil_value_get_f64(a, i), y = mil_value_get_f64(b, i);
    if (x == y || (isnan(x) && isnan(y))) continue;
    bool ok = false;
    if (dt == MIL_DT_FP16) {
      int hx = (int)mil_fp32_to_fp16((float)x), hy = (int)mil_fp32_to_fp16((float)y);
      ok = (hx & 0x8000) == (hy & 0x8000) && abs(hx - hy) <= 1;
    } else if (dt == MIL_DT_FP32 || dt == MIL_DT_FP64) {
      double m = fmax(fabs(x), fabs(y));
      ok = fabs(x - y) <= 1e-6 * m;
      if (!ok && dt == MIL_DT_FP32) {
        float fx = (float)x, fy = (float)y;
        int32_t ix, iy;
        memcpy(&ix, &fx, 4);
        memcpy(&iy, &fy, 4);
        ok = (ix < 0) == (iy < 0) && labs((long)ix - (long)iy) <= 4;
      }
    }
    if (!ok) {
      snprintf(why, wn, "element %lld: folded %.9g, expected %.9g", (long long)i, x, y);
      return false;
    }
  }
  return true;
}

typedef struct fold_check {
  stats *s;
  fold_ctx *f;
  const mil_program *expected;
  const char *where;
} fold_check;

static int check_fold(mil_op *op, void *ud) {
  fold_check *fc = ud;
  if (mil_op_is_const(op)) return 0;
  op_stat *o = stat_for(fc->s, op->type);
  for (int32_t i = 0; i < op->n_outputs; i++) {
    const mil_var *v = op->outputs[i];
    bool star = was_starred(fc->f, v);
    if (!star) {
      if (v->val) o->fold_extra++, fc->s->fold_extra++;
      continue;
    }
    if (!v->val) {
      o->fold_missing++, fc->s->fold_missing++;
      char msg[512];
      snprintf(msg, sizeof msg, "%%%s is marked '*' but did not fold", v->name);
      show(fc->s, o, fc->where, msg);
      continue;
    }
    const mil_var *e = expected_const(fc->expected, func_name(op), v->name);
    if (!e || !e->val || e->val->kind != MIL_VAL_TENSOR || v->val->kind != MIL_VAL_TENSOR ||
        e->val->type->dtype != v->val->type->dtype || e->val->numel != v->val->numel)
      continue; /* nothing comparable in the expected program */
    char why[256] = "";
    if (values_close(v->val, e->val, why, sizeof why)) {
      o->fold_ok++, fc->s->fold_ok++;
    } else {
      o->fold_bad++, fc->s->fold_bad++;
      char msg[512];
      snprintf(msg, sizeof msg, "%%%s folds to a different value: %s", v->name, why);
      show(fc->s, o, fc->where, msg);
    }
  }
  return 0;
}

/* ---- one program ---- */

static mil_program *parse_section(const corpus_section *sec, const char *path, mil_diag *d) {
  mil_parse_options opt = {path, NULL};
  mil_program *p = NULL;
  if (mil_parse_program(sec->text, sec->len, &opt, &p, d) != MIL_OK) return NULL;
  return p;
}

static void validate_program(stats *s, mil_program *p, const char *where) {
  mil_diag d;
  mil_diag_init(&d);
  mil_status st = mil_program_validate(p, &d);
  walk_ctx w = {s, NULL, 0};
  if (st != MIL_OK) {
    s->prog_failed++;
    w.failed_names = calloc(d.count + 1, sizeof *w.failed_names);
    bool attributed = false;
    for (size_t i = 0; i < d.count; i++) {
      if (d.msgs[i].severity != MIL_SEV_ERROR) continue;
      char name[256], type[128];
      if (msg_op(d.msgs[i].text, name, sizeof name, type, sizeof type)) {
        w.failed_names[w.n_failed++] = strdup(name);
        show(s, stat_for(s, type), where, d.msgs[i].text);
        attributed = true;
      } else {
        show(s, stat_for(s, "(structure)"), where, d.msgs[i].text);
      }
    }
    if (!attributed) stat_for(s, "(structure)")->failed++;
  } else {
    s->prog_ok++;
  }
  mil_program_walk(p, count_op, &w);
  for (size_t i = 0; i < w.n_failed; i++) free(w.failed_names[i]);
  free(w.failed_names);
  mil_diag_clear(&d);
}

static void run_case(stats *s, const char *path) {
  corpus_case cc;
  if (corpus_case_load(path, &cc) != 0) {
    printf("  cannot read %s\n", path);
    s->parse_failed++;
    return;
  }
  const char *base = strstr(path, "/passes/");
  base = base ? base + 8 : path;
  mil_program *progs[2] = {NULL, NULL};
  const corpus_section *secs[2] = {&cc.input, &cc.expected};
  for (int k = 0; k < 2; k++) {
    if (!secs[k]->text) continue;
    char where[1024];
    snprintf(where, sizeof where, "%s (%s)", base, k == 0 ? "input" : "expected");
    mil_diag d;
    mil_diag_init(&d);
    progs[k] = parse_section(secs[k], path, &d);
    if (!progs[k]) {
      s->parse_failed++;
      show(s, stat_for(s, "(parse)"), where, mil_diag_first_error(&d) ? mil_diag_first_error(&d) : "parse failed");
      stat_for(s, "(parse)")->failed++;
    } else {
      validate_program(s, progs[k], where);
    }
    mil_diag_clear(&d);
  }
  /* folding: the input program (values compared with the expected
   * program's consts), then the expected program (marks only) */
  for (int k = 0; k < 2; k++) {
    if (!progs[k]) continue;
    fold_ctx f = {progs[k], NULL, 0, 0};
    mil_program_walk(progs[k], collect_starred, &f);
    mil_program_walk(progs[k], infer_all, NULL);
    char where[1024];
    snprintf(where, sizeof where, "%s (%s)", base, k == 0 ? "input" : "expected");
    fold_check fc = {s, &f, k == 0 ? progs[1] : NULL, where};
    mil_program_walk(progs[k], check_fold, &fc);
    free(f.starred);
  }
  mil_program_free(progs[0]);
  mil_program_free(progs[1]);
  corpus_case_free(&cc);
}

static int cmp_stat(const void *a, const void *b) {
  return strcmp(((const op_stat *)a)->type, ((const op_stat *)b)->type);
}

static void test_corpus_validate(void **state) {
  (void)state;
  const char *dir = corpus_passes_dir();
  if (!dir) {
    shared_skip("the corpus");
    return;
  }
  corpus_list l = {0};
  corpus_list_cases(dir, &l);
  stats s;
  memset(&s, 0, sizeof s);
  s.filter = getenv("MIL_CORPUS_OPS");
  if (s.filter && !*s.filter) s.filter = NULL;
  printf("%zu cases under %s\n", l.n, dir);
  for (size_t i = 0; i < l.n; i++) run_case(&s, l.paths[i]);
  qsort(s.v, s.n, sizeof *s.v, cmp_stat);
  printf("\nper op type (op instances): validated ok / failed; fold matched / mismatched / not folded / extra\n");
  for (size_t i = 0; i < s.n; i++) {
    const op_stat *o = &s.v[i];
    printf("  %-40s %6ld ok %5ld failed   fold %5ld ok %4ld bad %4ld missing %4ld extra%s\n", o->type, o->ok,
           o->failed, o->fold_ok, o->fold_bad, o->fold_missing, o->fold_extra,
           o->failed || o->fold_bad ? "   <--" : "");
  }
  printf("parse: %ld programs failed to parse\n", s.parse_failed);
  printf("validate: %ld passed, %ld failed\n", s.prog_ok, s.prog_failed + s.parse_failed);
  printf("fold: %ld matched, %ld mismatched, %ld not folded, %ld folded without '*'\n", s.fold_ok, s.fold_bad,
         s.fold_missing, s.fold_extra);
  long failed = s.prog_failed + s.parse_failed, bad = s.fold_bad;
  for (size_t i = 0; i < s.n; i++) free(s.v[i].type);
  free(s.v);
  corpus_list_free(&l);
  fflush(stdout);
  assert_int_equal(failed, 0);
  assert_int_equal(bad, 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_corpus_validate),
  };
  return shared_exit(cmocka_run_group_tests(tests, NULL, NULL));
}
