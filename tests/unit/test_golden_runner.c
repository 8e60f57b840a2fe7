/* Tests of the golden-case runner (tests/golden_util.h): case splitting,
 * skipping of unimplemented passes, aliasing a case's pass to a fixture,
 * counting equivalent / identical / failed cases, the known-failures list,
 * directory filters, and pipeline cases with per-pass options. The fixture
 * passes live only here and are added with mil_pass_register. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "shared_skip.h"

#include "golden_util.h"
#include "mil/mil.h"
#include "mil/passes.h"

/* relu chain r0..r3 with a dead sigmoid and a dead const */
#include "pass_fixtures.h"

static int setup(void **state) {
  (void)state;
  mil_diag d = {0};
  const mil_pass_def *defs[] = {&k_fixture_dce, &k_fixture_noop, &k_fixture_mark};
  for (size_t i = 0; i < sizeof defs / sizeof defs[0]; i++)
    if (mil_pass_register(defs[i], &d) != MIL_OK) return -1;
  mil_diag_clear(&d);
  return 0;
}

/* ---------- the golden runner, driven by fixtures ---------- */

/* Texts equal once the digits after "block" are dropped. */
static bool same_up_to_block_numbers(const char *a, size_t na, const char *b, size_t nb) {
  size_t i = 0, k = 0;
  while (i < na && k < nb) {
    if (i + 5 <= na && k + 5 <= nb && memcmp(a + i, "block", 5) == 0 && memcmp(b + k, "block", 5) == 0) {
      i += 5;
      k += 5;
      while (i < na && a[i] >= '0' && a[i] <= '9') i++;
      while (k < nb && b[k] >= '0' && b[k] <= '9') k++;
      continue;
    }
    if (a[i] != b[k]) return false;
    i++;
    k++;
  }
  return i == na && k == nb;
}

static void test_golden_runner(void **state) {
  (void)state;
  const char *root = MIL_SHARED_DIR "/corpus/passes";
  char **cases;
  char dir[4096];
  snprintf(dir, sizeof dir, "%s/dead_code_elimination", root);
  int n = golden_list(dir, ".mil", &cases);
  if (n <= 0) {
    shared_skip("the corpus");
    return;
  }
  /* Count independently the cases whose expected program text equals the
   * input up to block numbering (negative cases): a no-op pass passes
   * exactly those. */
  int negative = 0;
  char first_positive[1024] = "";
  for (int i = 0; i < n; i++) {
    char path[8192], err[512];
    snprintf(path, sizeof path, "%s/%s", dir, cases[i]);
    golden_case c;
    assert_int_equal(golden_case_read(path, &c, err, sizeof err), 0);
    assert_string_equal(c.pass, "common::dead_code_elimination");
    if (same_up_to_block_numbers(c.input, c.input_len, c.expected, c.expected_len)) negative++;
    else if (!first_positive[0]) snprintf(first_positive, sizeof first_positive, "%s", cases[i]);
    golden_case_free(&c);
  }
  golden_free_list(cases, n);
  assert_true(first_positive[0]);

  golden_known none = {0};
  golden_totals t;
  /* a no-op stands in for DCE: the negative cases pass, the others fail */
  golden_alias_from = "common::dead_code_elimination";
  golden_alias_to = "fixture::noop";
  golden_run_tree(root, "dead_code_elimination", &none, 0, &t);
  assert_int_equal(t.n_rows, 1);
  assert_int_equal(t.rows[0].cases, n);
  assert_int_equal(t.rows[0].skipped, 0);
  assert_int_equal(t.passed, negative);
  assert_int_equal(t.failed, n - negative);
  assert_true(t.failed > 0);
  golden_totals_free(&t);
  /* the fixture DCE passes them all, but for the cases listed as known
   * failures (duplicate var names the text cannot disambiguate) */
  golden_alias_to = "fixture::dead_code_elimination";
  golden_known listed;
  golden_known_load(MIL_TEST_DATA "/golden_known_failures.txt", &listed);
  int listed_here = 0;
  for (int i = 0; i < listed.n; i++) listed_here += strncmp(listed.names[i], "dead_code_elimination/", 22) == 0;
  golden_run_tree(root, "dead_code_elimination", &listed, 20, &t);
  golden_print_table(&t);
  assert_int_equal(t.failed, 0);
  assert_int_equal(t.known, listed_here);
  assert_int_equal(t.passed, n - listed_here);
  assert_true(t.rows[0].identical > 0);
  golden_totals_free(&t);
  golden_known_free(&listed);
  /* a listed known failure is reported apart and does not count as failed */
  golden_alias_to = "fixture::noop";
  char kpath[] = "/tmp/mil_known_XXXXXX";
  int fd = mkstemp(kpath);
  assert_true(fd >= 0);
  FILE *kf = fdopen(fd, "w");
  fprintf(kf, "# comment\n\ndead_code_elimination/%s   needs the real pass\n", first_positive);
  fclose(kf);
  golden_known one;
  golden_known_load(kpath, &one);
  remove(kpath);
  assert_int_equal(one.n, 1);
  golden_run_tree(root, "dead_code_elimination", &one, 0, &t);
  assert_int_equal(t.known, 1);
  assert_int_equal(t.failed, n - negative - 1);
  golden_totals_free(&t);
  golden_known_free(&one);
  golden_alias_from = golden_alias_to = NULL;
}

/* A pipeline case with per-pass options, in a corpus tree made here. */
static void test_golden_pipeline_case(void **state) {
  (void)state;
  char root[] = "/tmp/mil_golden_XXXXXX";
  assert_non_null(mkdtemp(root));
  char dir[256], path[512];
  snprintf(dir, sizeof dir, "%s/_pipe", root);
  assert_int_equal(mkdir(dir, 0700), 0);
  snprintf(path, sizeof path, "%s/case1.mil", dir);
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  fprintf(f, "# pipeline: fixture::mark, fixture::dead_code_elimination, fixture::noop\n"
             "# options: {\"fixture::mark\": {\"threshold\": 5}}\n"
             "# origin: here\n"
             "# --- input\n%s"
             "# --- expected\n"
             "main[CoreML7](%%x: (2, 3, fp32)(Tensor)) {\n"
             "  block9() {\n"
             "    %%a: (2, 3, fp32)(Tensor) = relu(x=%%x, name=\"a\")\n"
             "    %%b: (2, 3, fp32)(Tensor) = relu(x=%%a, name=\"b\")\n"
             "    %%c: (2, 3, fp32)(Tensor) = relu(x=%%b, name=\"c\")\n"
             "    %%r3: (2, 3, fp32)(Tensor) = relu(x=%%c, name=\"d\")\n"
             "  } -> (%%r3)\n"
             "}\n"
             "# --- expected (coremltools form)\n(not read)\n",
          k_chain);
  fclose(f);
  golden_known none = {0};
  golden_totals t;
  g_seen_threshold = 0;
  golden_run_tree(root, NULL, &none, 5, &t);
  assert_int_equal(t.n_rows, 1);
  assert_string_equal(t.rows[0].dir, "_pipe");
  assert_int_equal(t.passed, 1);
  assert_int_equal(t.rows[0].identical, 0); /* other op names */
  assert_int_equal(g_seen_threshold, 5);
  golden_totals_free(&t);
  /* a filter that selects nothing, and one that selects the directory */
  golden_run_tree(root, "other", &none, 5, &t);
  assert_int_equal(t.n_rows, 0);
  golden_totals_free(&t);
  golden_run_tree(root, "x,_pipe", &none, 5, &t);
  assert_int_equal(t.n_rows, 1);
  golden_totals_free(&t);
  remove(path);
  rmdir(dir);
  rmdir(root);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_golden_runner),
      cmocka_unit_test(test_golden_pipeline_case),
  };
  return shared_exit(cmocka_run_group_tests(tests, setup, NULL));
}
