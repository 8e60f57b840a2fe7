/* Round trip of every golden corpus program through the MIL text parser and
 * the complete-form printer: for the "input" and "expected" sections of
 * each case in ../shared/corpus/passes, parse -> print (complete form) ->
 * parse must give an identical program (tests/prog_equal.h), and printing
 * that again must give the same text.
 *
 * The "expected (coremltools form)" sections are parsed too: they must
 * either parse or fail only because they omit large constants ("undefined
 * variable ... coremltools form").
 *
 * MIL_CORPUS_LIMIT=N checks an evenly spread sample of N case files (for
 * slow sanitizer builds); by default every file is checked. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "shared_skip.h"

#include "corpus_util.h"
#include "mil/text.h"
#include "prog_equal.h"

typedef struct rt_stats {
  int passed, failed;
  int ct_parsed, ct_lossy, ct_failed;
  int listed;
} rt_stats;

static void report(rt_stats *s, const char *path, const char *section, const char *msg) {
  if (s->listed++ < 50) printf("  FAIL %s [%s]: %s\n", path, section, msg);
}

/* One complete-form section: parse, print, re-parse, compare. */
static void check_section(rt_stats *s, const char *path, const char *name, const corpus_section *sec) {
  mil_diag d;
  mil_diag_init(&d);
  mil_parse_options opt = {.filename = path, .base_dir = NULL};
  mil_program *a = NULL, *b = NULL;
  mil_buf t1 = {0}, t2 = {0};
  char why[512];
  bool ok = false;
  if (mil_parse_program(sec->text, sec->len, &opt, &a, &d) != MIL_OK) {
    snprintf(why, sizeof why, "parse: %s (section starts at line %d)", mil_diag_first_error(&d), sec->first_line);
    goto done;
  }
  mil_print_options po = {.form = MIL_PRINT_COMPLETE, .blob_refs = false};
  mil_print_program(a, &po, &t1);
  if (t1.oom) {
    snprintf(why, sizeof why, "print: out of memory");
    goto done;
  }
  mil_diag_clear(&d);
  mil_parse_options opt2 = {.filename = "<printed>", .base_dir = NULL};
  if (mil_parse_program(t1.data, t1.len, &opt2, &b, &d) != MIL_OK) {
    snprintf(why, sizeof why, "re-parse of the printed text: %s", mil_diag_first_error(&d));
    goto done;
  }
  if (!prog_equal(a, b, why, sizeof why)) goto done;
  mil_print_program(b, &po, &t2);
  if (t1.len != t2.len || memcmp(t1.data, t2.data, t1.len) != 0) {
    snprintf(why, sizeof why, "second print differs from the first");
    goto done;
  }
  ok = true;
done:
  if (ok) s->passed++;
  else {
    s->failed++;
    report(s, path, name, why);
  }
  mil_buf_free(&t1);
  mil_buf_free(&t2);
  mil_program_free(a);
  mil_program_free(b);
  mil_diag_clear(&d);
}

/* The coremltools-form section: parses, or fails only for want of the
 * large constants it leaves out. */
static void check_ct_section(rt_stats *s, const char *path, const corpus_section *sec) {
  mil_diag d;
  mil_diag_init(&d);
  mil_parse_options opt = {.filename = path, .base_dir = NULL};
  mil_program *p = NULL;
  if (mil_parse_program(sec->text, sec->len, &opt, &p, &d) == MIL_OK) {
    s->ct_parsed++;
  } else {
    const char *msg = mil_diag_first_error(&d);
    if (msg && strstr(msg, "undefined variable") && strstr(msg, "coremltools form")) {
      s->ct_lossy++;
    } else {
      s->ct_failed++;
      report(s, path, "expected (coremltools form)", msg ? msg : "no message");
    }
  }
  mil_program_free(p);
  mil_diag_clear(&d);
}

static void test_corpus_roundtrip(void **state) {
  (void)state;
  const char *dir = corpus_passes_dir();
  if (!dir) {
    shared_skip("the corpus");
    return;
  }
  corpus_list l = {0};
  corpus_list_cases(dir, &l);
  assert_true(l.n > 0);
  size_t step = 1;
  const char *lim = getenv("MIL_CORPUS_LIMIT");
  if (lim && atol(lim) > 0 && (size_t)atol(lim) < l.n) step = l.n / (size_t)atol(lim);
  rt_stats s = {0};
  size_t files = 0;
  for (size_t i = 0; i < l.n; i += step) {
    corpus_case c;
    if (corpus_case_load(l.paths[i], &c) != 0) {
      s.failed++;
      report(&s, l.paths[i], "file", "cannot read");
      continue;
    }
    files++;
    if (!c.input.text || !c.expected.text) {
      s.failed++;
      report(&s, l.paths[i], "file", "missing input or expected section");
    }
    if ((!c.pass && !c.pipeline) || !c.options || !c.origin) {
      s.failed++;
      report(&s, l.paths[i], "header", "missing pass/pipeline, options or origin");
    }
    if (c.input.text) check_section(&s, c.path, "input", &c.input);
    if (c.expected.text) check_section(&s, c.path, "expected", &c.expected);
    if (c.expected_ct.text) check_ct_section(&s, c.path, &c.expected_ct);
    corpus_case_free(&c);
  }
  printf("roundtrip: %d passed, %d failed (%zu case files, input and expected sections)\n", s.passed, s.failed,
         files);
  printf("coremltools form: %d parsed, %d omit large constants, %d failed\n", s.ct_parsed, s.ct_lossy,
         s.ct_failed);
  corpus_list_free(&l);
  assert_int_equal(s.failed, 0);
  assert_int_equal(s.ct_failed, 0);
  assert_true(s.passed > 0);
}

/* corpus_util.h splits a case file into its header fields and sections. */
static void test_corpus_util(void **state) {
  (void)state;
  char path[] = "/tmp/mil_corpus_caseXXXXXX";
  int fd = mkstemp(path);
  assert_true(fd >= 0);
  FILE *f = fdopen(fd, "w");
  fputs("# pass: common::noop_elimination\n"
        "# options: {\"a\": 1}\n"
        "# origin: T.test_x[p=1]\n"
        "# --- input\n"
        "IN1\nIN2\n"
        "# --- expected\n"
        "EX\n"
        "# --- expected (coremltools form)\n"
        "CT\n",
        f);
  fclose(f);
  corpus_case c;
  assert_int_equal(corpus_case_load(path, &c), 0);
  assert_string_equal(c.pass, "common::noop_elimination");
  assert_null(c.pipeline);
  assert_string_equal(c.options, "{\"a\": 1}");
  assert_string_equal(c.origin, "T.test_x[p=1]");
  assert_int_equal(c.input.len, 8);
  assert_memory_equal(c.input.text, "IN1\nIN2\n", 8);
  assert_int_equal(c.input.first_line, 5);
  assert_int_equal(c.expected.len, 3);
  assert_memory_equal(c.expected.text, "EX\n", 3);
  assert_int_equal(c.expected.first_line, 8);
  assert_int_equal(c.expected_ct.len, 3);
  assert_memory_equal(c.expected_ct.text, "CT\n", 3);
  corpus_case_free(&c);
  unlink(path);
  assert_int_equal(corpus_case_load("/nonexistent/case.mil", &c), -1);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_corpus_util),
      cmocka_unit_test(test_corpus_roundtrip),
  };
  return shared_exit(cmocka_run_group_tests(tests, NULL, NULL));
}
