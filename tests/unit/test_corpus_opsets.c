/* Every opset a PyMIL program can carry, through the model loader every
 * `mil` command uses (mil_model_load, as `mil print`, `validate`, `info`,
 * `run` and `convert` do), over the whole golden pass corpus.
 *
 * For the input and the expected program of every case (CoreML3..CoreML8
 * in the corpus), written to a .mil file:
 *  - mil_model_load accepts it, with the specification version its opset
 *    implies (4 for CoreML3 ... 10 for CoreML9);
 *  - mil_program_validate passes (`mil validate`);
 *  - the coremltools form (`mil print`) of the expected program equals the
 *    case's "# --- expected (coremltools form)" section byte for byte, up to
 *    the function body's block number (a process-wide counter in
 *    coremltools), a Python tuple's "(1, 2)" / "(2,)" for the list "[1, 2]" /
 *    "[2]" and the spelling of the same float (see numbers_match);
 *  - the complete form (`mil print --complete`) parses back to an
 *    equivalent program (mil_program_compare).
 * Exceptions (true ones, with their reason) are listed in k_exceptions: they
 * are counted and must still fail, so that a stale entry is noticed.
 * Without the corpus the test reports SKIPPED (exit 77). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "corpus_util.h"
#include "mil/equiv.h"
#include "mil/model.h"
#include "mil/ops.h"
#include "mil/text.h"

typedef struct op_stats {
  long programs, load_fail, validate_fail, print_fail, complete_fail;
  long excepted, stale; /* listed exceptions that failed as listed / that passed */
  long by_opset[11];
  int listed;
} op_stats;

static char g_tmp[4096];

/* Programs whose coremltools form cannot be reproduced from the complete
 * form, and why. */
typedef struct exception {
  const char *file; /* path under corpus/passes */
  const char *section;
  const char *reason;
} exception;

static const exception k_exceptions[] = {
    {"expand_high_rank_reshape_and_transpose/ExpandHighRankReshapeAndTranspose.test_negative_case_9ee728.mil",
     "expected",
     "the test built reshape's shape and transpose's perm (20 elements) as Python tuples, which coremltools' "
     "var_to_str prints in full whatever their size (operation.py: only numpy values over 10 elements are hidden); "
     "the complete form stores a tensor either way, so the printer hides them as it does numpy values"},
};

static const exception *exception_for(const char *file, const char *section) {
  for (size_t i = 0; i < sizeof k_exceptions / sizeof k_exceptions[0]; i++)
    if (!strcmp(k_exceptions[i].file, file) && !strcmp(k_exceptions[i].section, section)) return &k_exceptions[i];
  return NULL;
}

static void report(op_stats *s, const char *path, const char *what, const char *msg) {
  if (s->listed++ < 40) printf("  FAIL %s [%s]: %.600s\n", path, what, msg ? msg : "?");
}

static bool num_char(char c) { return (c >= '0' && c <= '9') || c == '.' || c == 'e' || c == '-' || c == '+'; }

/* At a difference inside a number on both sides: the numbers, read whole,
 * are the same float (coremltools prints the float64 it was given, 1e-05,
 * where the program stores the fp32 value, 9.999999747378752e-06).
 * Advances both past them. */
static bool numbers_match(const char *a, const char **pa, const char *ea, const char *b, const char **pb,
                          const char *eb) {
  const char *sa = *pa, *sb = *pb;
  while (sa > a && num_char(sa[-1])) sa--;
  while (sb > b && num_char(sb[-1])) sb--;
  if (sa - a != 0 && sa[-1] >= 'a' && sa[-1] <= 'z') return false; /* inside a name */
  char buf_a[64], buf_b[64];
  size_t na = 0, nb = 0;
  while (sa + na < ea && num_char(sa[na]) && na < 63) na++;
  while (sb + nb < eb && num_char(sb[nb]) && nb < 63) nb++;
  if (!na || !nb) return false;
  memcpy(buf_a, sa, na);
  memcpy(buf_b, sb, nb);
  buf_a[na] = buf_b[nb] = 0;
  char *xa, *xb;
  double x = strtod(buf_a, &xa), y = strtod(buf_b, &xb);
  if (*xa || *xb || (float)x != (float)y) return false;
  *pa = sa + na;
  *pb = sb + nb;
  return true;
}

/* Byte comparison of printed and recorded coremltools form, where the
 * digits after "block" may differ (coremltools numbers blocks from a
 * process-wide counter). Returns the line of the first difference, or 0. */
static int ct_diff_line(const char *a, size_t na, const char *b, size_t nb) {
  const char *pa = a, *ea = a + na, *pb = b, *eb = b + nb;
  while (ea > a && (ea[-1] == '\n' || ea[-1] == ' ')) ea--;
  while (eb > b && (eb[-1] == '\n' || eb[-1] == ' ')) eb--;
  while (pa < ea && *pa == '\n') pa++;
  while (pb < eb && *pb == '\n') pb++;
  int line = 1;
  while (pa < ea && pb < eb) {
    if (*pa != *pb) {
      /* a Python tuple prints as (1, 2) or (2,) where the value's list is [1, 2] / [2] */
      if (*pa == '[' && *pb == '(') {
        pa++, pb++;
        continue;
      }
      if (*pa == ']' && pb + 1 < eb && pb[0] == ',' && pb[1] == ')') pb++;
      if (*pa == ']' && *pb == ')') {
        pa++, pb++;
        continue;
      }
      if (numbers_match(a, &pa, ea, b, &pb, eb)) continue;
      return line;
    }
    if (*pa == '\n') line++;
    pa++, pb++;
    if (pa - a >= 5 && !strncmp(pa - 5, "block", 5)) /* the digits may differ */
      while ((pa < ea && *pa >= '0' && *pa <= '9') || (pb < eb && *pb >= '0' && *pb <= '9')) {
        if (pa < ea && *pa >= '0' && *pa <= '9') pa++;
        if (pb < eb && *pb >= '0' && *pb <= '9') pb++;
      }
  }
  return pa == ea && pb == eb ? 0 : line;
}

static mil_program *parse_text(const char *text, size_t n, const char *name, mil_diag *d) {
  mil_parse_options po = {.filename = name, .base_dir = NULL};
  mil_program *p = NULL;
  return mil_parse_program(text, n, &po, &p, d) == MIL_OK ? p : NULL;
}

static void check_section(op_stats *s, const char *path, const char *which, const corpus_section *sec,
                          const corpus_section *ct) {
  char file[4200];
  snprintf(file, sizeof file, "%s/%s.mil", g_tmp, which);
  FILE *f = fopen(file, "wb");
  assert_non_null(f);
  assert_int_equal(fwrite(sec->text, 1, sec->len, f), sec->len);
  assert_int_equal(fclose(f), 0);
  s->programs++;
  mil_diag d;
  mil_diag_init(&d);
  mil_model *m = NULL;
  mil_buf ctb = {0}, full = {0};
  mil_program *back = NULL;
  if (mil_model_load(file, &m, &d) != MIL_OK) {
    s->load_fail++;
    report(s, path, which, mil_diag_first_error(&d));
    goto done;
  }
  mil_program *p = mil_model_program(m);
  int v = -1; /* the highest opset's version; several functions need spec 9 (multi-function models) */
  for (int32_t i = 0; i < p->n_functions; i++)
    if (mil_opset_version(p->functions[i]->opset) > v) v = mil_opset_version(p->functions[i]->opset);
  if (p->n_functions > 1 && v >= MIL_IOS13 && v < MIL_IOS18) v = MIL_IOS18;
  if (v < MIL_IOS13 || mil_model_spec_version(m) != v) {
    s->load_fail++;
    report(s, path, which, "specification version differs from the opset's");
    goto done;
  }
  s->by_opset[v]++;
  if (mil_program_validate(p, &d) != MIL_OK) {
    s->validate_fail++;
    report(s, path, which, mil_diag_first_error(&d));
    goto done;
  }
  if (ct && ct->text) {
    mil_print_options po = {MIL_PRINT_COREMLTOOLS, false};
    mil_print_program(p, &po, &ctb);
    assert_false(ctb.oom);
    int line = ct_diff_line(ctb.data, ctb.len, ct->text, ct->len);
    const exception *ex = exception_for(path, which);
    if (line && ex) {
      s->excepted++;
      printf("  exception %s [%s]: %s\n", path, which, ex->reason);
    } else if (!line && ex) {
      s->stale++;
      report(s, path, which, "listed as an exception but its coremltools form now matches");
    } else if (line) {
      char why[256];
      snprintf(why, sizeof why, "coremltools form differs from the recorded one at its line %d", line);
      s->print_fail++;
      report(s, path, which, why);
      goto done;
    }
  }
  mil_print_options po = {MIL_PRINT_COMPLETE, false};
  mil_print_program(p, &po, &full);
  assert_false(full.oom);
  back = parse_text(full.data, full.len, "<printed>", &d);
  mil_equiv_result res;
  if (!back) {
    s->complete_fail++;
    report(s, path, which, mil_diag_first_error(&d));
  } else if (mil_program_compare(p, back, NULL, &res, NULL) != MIL_OK) {
    s->complete_fail++;
    report(s, path, which, res.diff);
  }
done:
  mil_program_free(back);
  mil_buf_free(&ctb);
  mil_buf_free(&full);
  mil_model_free(m);
  mil_diag_clear(&d);
  remove(file);
}

static void test_corpus_opsets(void **state) {
  const char *dir = *state;
  corpus_list l = {0};
  corpus_list_cases(dir, &l);
  op_stats s;
  memset(&s, 0, sizeof s);
  for (size_t i = 0; i < l.n; i++) {
    corpus_case cc;
    assert_int_equal(corpus_case_load(l.paths[i], &cc), 0);
    const char *base = strstr(l.paths[i], "/passes/");
    base = base ? base + 8 : l.paths[i];
    if (cc.input.text) check_section(&s, base, "input", &cc.input, NULL);
    if (cc.expected.text) check_section(&s, base, "expected", &cc.expected, &cc.expected_ct);
    corpus_case_free(&cc);
  }
  size_t n_cases = l.n;
  printf("%zu cases, %ld programs:", l.n, s.programs);
  for (int v = MIL_IOS13; v <= MIL_IOS26; v++)
    if (s.by_opset[v]) printf(" %s %ld", mil_opset_name(v), s.by_opset[v]);
  printf("\nexceptions (listed) %ld, stale exceptions %ld\n", s.excepted, s.stale);
  printf("load failed %ld, validate failed %ld, coremltools form differs %ld, complete form round trip failed %ld\n",
         s.load_fail, s.validate_fail, s.print_fail, s.complete_fail);
  corpus_list_free(&l);
  fflush(stdout);
  assert_true(n_cases > 0);
  assert_int_equal(s.load_fail + s.validate_fail + s.print_fail + s.complete_fail + s.stale, 0);
}

int main(void) {
  const char *dir = corpus_passes_dir();
  if (!dir) {
    printf("SKIPPED: corpus not found (set MIL_SHARED_DIR)\n");
    return 77;
  }
  snprintf(g_tmp, sizeof g_tmp, "%s/mil_opsets_XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
  if (!mkdtemp(g_tmp)) return 1;
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_prestate(test_corpus_opsets, (void *)dir),
  };
  int rc = cmocka_run_group_tests(tests, NULL, NULL);
  rmdir(g_tmp);
  return rc;
}
