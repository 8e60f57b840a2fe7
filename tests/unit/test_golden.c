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

#include <cmocka.h>

#include "golden_util.h"

static void test_golden_corpus(void **state) {
  (void)state;
  const char *root = MIL_SHARED_DIR "/corpus/passes";
  DIR *probe = opendir(root);
  if (!probe) {
    printf("skipped: corpus not found (%s)\n", root);
    return;
  }
  closedir(probe);
  golden_known known;
  golden_known_load(MIL_TEST_DATA "/golden_known_failures.txt", &known);
  const char *filter = getenv("MIL_GOLDEN_FILTER");
  golden_totals t;
  golden_run_tree(root, filter, &known, 200, &t);
  golden_print_table(&t);
  int failed = t.failed, rows = t.n_rows;
  golden_totals_free(&t);
  golden_known_free(&known);
  if (filter && *filter && rows == 0) fail_msg("MIL_GOLDEN_FILTER=%s selects no corpus directory", filter);
  assert_int_equal(failed, 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_golden_corpus)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
