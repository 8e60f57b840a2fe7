/* A weight file truncated after the model was loaded: mil_blob_file_check
 * and mil_model_check_weights report it (naming the file, its old and new
 * sizes) before anything reads past the new end of the mapping (which would
 * kill the process with SIGBUS); a file replaced by a rename is not
 * affected. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "mil/blob.h"
#include "mil/interp.h"
#include "mil/mil.h"
#include "mil/model.h"
#include "mil/text.h"

static char g_dir[256], g_pkg[300], g_bin[400];

/* A package whose one weight (64 x 64 fp32, 16 KiB) lives in weight.bin. */
static int setup(void **state) {
  (void)state;
  snprintf(g_dir, sizeof g_dir, "%s/mil-trunc.XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
  if (!mkdtemp(g_dir)) return -1;
  snprintf(g_pkg, sizeof g_pkg, "%s/m.mlpackage", g_dir);
  snprintf(g_bin, sizeof g_bin, "%s/Data/com.apple.CoreML/weights/weight.bin", g_pkg);
  size_t cap = 1 << 16, l = 0;
  char *t = malloc(cap);
  if (!t) return -1;
  l += (size_t)snprintf(t + l, cap - l,
                        "main[CoreML7](%%x: (1, 64, fp32)(Tensor)) {\n  block0() {\n"
                        "    %%w: (64, 64, fp32)*(Tensor) = const(val=[");
  for (int i = 0; i < 64; i++) {
    l += (size_t)snprintf(t + l, cap - l, "%s[", i ? ", " : "");
    for (int j = 0; j < 64; j++) l += (size_t)snprintf(t + l, cap - l, "%s%d", j ? ", " : "", (i + j) % 5);
    l += (size_t)snprintf(t + l, cap - l, "]");
  }
  l += (size_t)snprintf(t + l, cap - l,
                        "], name=\"w\")\n    %%y: (1, 64, fp32)(Tensor) = linear(x=%%x, weight=%%w, name=\"y\")\n"
                        "  } -> (%%y)\n}\n");
  mil_diag d;
  mil_diag_init(&d);
  mil_parse_options po = {"t.mil", NULL};
  mil_program *p = NULL;
  mil_model *m = NULL;
  mil_status st = mil_parse_program(t, l, &po, &p, &d);
  free(t);
  if (st == MIL_OK) st = mil_model_from_program(p, 0, &m, &d);
  if (st == MIL_OK) st = mil_model_save(m, g_pkg, &d);
  if (st != MIL_OK) fprintf(stderr, "setup: %s\n", mil_diag_first_error(&d));
  mil_model_free(m);
  mil_diag_clear(&d);
  struct stat sb;
  return st == MIL_OK && stat(g_bin, &sb) == 0 && sb.st_size > 16384 ? 0 : -1;
}

static int teardown(void **state) {
  (void)state;
  char cmd[400];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_dir);
  return system(cmd) == 0 ? 0 : -1;
}

static void copy_file(const char *from, const char *to) {
  FILE *a = fopen(from, "rb"), *b = fopen(to, "wb");
  assert_non_null(a);
  assert_non_null(b);
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, a)) > 0) assert_int_equal(fwrite(buf, 1, n, b), n);
  fclose(a);
  fclose(b);
}

static void test_truncated_weight_file_is_reported(void **state) {
  (void)state;
  char keep[420];
  snprintf(keep, sizeof keep, "%s.orig", g_bin);
  copy_file(g_bin, keep);
  mil_diag d;
  mil_diag_init(&d);
  mil_model *m = NULL;
  assert_int_equal(mil_model_load(g_pkg, &m, &d), MIL_OK);
  assert_int_equal(mil_model_n_weight_files(m), 1);
  assert_int_equal(mil_model_check_weights(m, &d), MIL_OK);
  struct stat sb;
  assert_int_equal(stat(g_bin, &sb), 0);
  long long was = (long long)sb.st_size;
  assert_int_equal(truncate(g_bin, 4096), 0);
  assert_int_equal(mil_model_check_weights(m, &d), MIL_ERR_IO);
  const char *e = mil_diag_first_error(&d);
  if (!strstr(e, "weight.bin") || !strstr(e, "is now 4096 bytes") || !strstr(e, "load the model again"))
    fail_msg("message: %s", e);
  char was_s[64];
  snprintf(was_s, sizeof was_s, "was %lld bytes", was);
  if (!strstr(e, was_s)) fail_msg("message lacks '%s': %s", was_s, e);
  assert_int_equal(mil_blob_file_check(mil_model_weight_file(m, 0), &d), MIL_ERR_IO);
  assert_int_equal(mil_blob_file_check(NULL, &d), MIL_ERR_INVALID);
  /* growing it back to its size makes it whole again (the check is about size) */
  assert_int_equal(truncate(g_bin, was), 0);
  mil_diag_clear(&d);
  assert_int_equal(mil_model_check_weights(m, &d), MIL_OK);
  /* a file replaced by a rename leaves the mapping on the old one: fine */
  char repl[420];
  snprintf(repl, sizeof repl, "%s.new", g_bin);
  FILE *f = fopen(repl, "wb");
  assert_non_null(f);
  fclose(f);
  assert_int_equal(rename(repl, g_bin), 0);
  assert_int_equal(mil_model_check_weights(m, &d), MIL_OK);
  mil_model_free(m);
  mil_diag_clear(&d);
  rename(keep, g_bin);
}

/* A model without weight files has nothing to check. */
static void test_no_weight_files(void **state) {
  (void)state;
  mil_diag d;
  mil_diag_init(&d);
  assert_int_equal(mil_model_check_weights(NULL, &d), MIL_OK);
  mil_diag_clear(&d);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_truncated_weight_file_is_reported),
      cmocka_unit_test(test_no_weight_files),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
