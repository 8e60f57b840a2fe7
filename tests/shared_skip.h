/* Test helper: tests that read the shared corpus (MIL_SHARED_DIR, by default
 * ../shared next to the source tree) report SKIPPED to CTest when it is
 * absent, instead of passing without having checked anything.
 *
 * A test function whose data is missing calls shared_skip("what") and
 * returns; main returns shared_exit(cmocka_run_group_tests(...)): the failure
 * count when something failed, else MIL_TEST_SKIP_CODE (77, the tests'
 * SKIP_RETURN_CODE in tests/CMakeLists.txt) when any part was skipped, else 0.
 * Tests that also check things of their own still run those (a failure
 * there is reported as a failure). */
#ifndef MIL_TESTS_SHARED_SKIP_H
#define MIL_TESTS_SHARED_SKIP_H

#include <stdio.h>

#ifndef MIL_SHARED_DIR
#define MIL_SHARED_DIR "../shared"
#endif

#define MIL_TEST_SKIP_CODE 77

static int g_shared_skipped;

/* Notes that a test could not run because `what` (a corpus path) is absent. */
static inline void shared_skip(const char *what) {
  printf("SKIPPED: %s not found (MIL_SHARED_DIR=%s)\n", what, MIL_SHARED_DIR);
  g_shared_skipped++;
}

static inline int shared_exit(int failed) {
  if (failed) return failed;
  if (g_shared_skipped) {
    printf("%d test(s) skipped: the shared corpus is absent\n", g_shared_skipped);
    return MIL_TEST_SKIP_CODE;
  }
  return 0;
}

#endif
