/* The golden pass-case runner over ../shared/corpus/passes (mil-text.md
 * section 4): for every case whose pass (or every pass of whose pipeline)
 * is implemented, parse the input, run the pass(es) with the recorded
 * options and verification after every pass, and require the result to be
 * equivalent to the expected program. Prints a per-pass table.
 *
 * MIL_GOLDEN_FILTER=<dir>[,<dir>...] runs only those directories.
 * Failures of cases listed in tests/golden_known_failures.txt are reported
 * but do not fail the test. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "shared_skip.h"

#include "golden_util.h"

static void test_golden_corpus(void **state) {
  (void)state;
  const char *root = MIL_SHARED_DIR "/corpus/passes";
  DIR *probe = opendir(root);
  if (!probe) {
    shared_skip("the corpus");
    return;
  }
  closedir(probe);
  golden_known known;
  golden_known_load(MIL_TEST_DATA "/golden_known_failures.txt", &known);
  const char *filter = getenv("MIL_GOLDEN_FILTER");
  golden_totals t;
  /* MIL_GOLDEN_MAX_PRINT: how many failures to list (default 200) */
  const char *mp = getenv("MIL_GOLDEN_MAX_PRINT");
  golden_run_tree(root, filter, &known, mp ? atoi(mp) : 200, &t);
  golden_print_table(&t);
  int failed = t.failed, rows = t.n_rows;
  golden_totals_free(&t);
  golden_known_free(&known);
  if (filter && *filter && rows == 0) fail_msg("MIL_GOLDEN_FILTER=%s selects no corpus directory", filter);
  assert_int_equal(failed, 0);
}

/* The project's own hand-written cases, tests/passes/<pass>/ (same
 * format). Their authors write the exact expected program, so besides
 * equivalence they must be identical (same op order and names). They do not
 * depend on the shared corpus. */
static void test_golden_project_cases(void **state) {
  (void)state;
  const char *root = MIL_TEST_DATA "/passes";
  DIR *probe = opendir(root);
  if (!probe) {
    printf("no project cases (%s)\n", root);
    return;
  }
  closedir(probe);
  golden_known none;
  memset(&none, 0, sizeof none);
  golden_totals t;
  golden_run_tree(root, getenv("MIL_GOLDEN_FILTER"), &none, 200, &t);
  golden_print_table(&t);
  int failed = t.failed, not_identical = 0;
  for (int i = 0; i < t.n_rows; i++)
    if (t.rows[i].identical != t.rows[i].equivalent) {
      printf("  %s: %d case(s) equivalent but not identical\n", t.rows[i].dir,
             t.rows[i].equivalent - t.rows[i].identical);
      not_identical += t.rows[i].equivalent - t.rows[i].identical;
    }
  golden_totals_free(&t);
  assert_int_equal(failed, 0);
  assert_int_equal(not_identical, 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_golden_corpus), cmocka_unit_test(test_golden_project_cases)};
  return shared_exit(cmocka_run_group_tests(tests, NULL, NULL));
}
