/* The whole-model corpus (../shared/corpus/models/<name>/{input,expected}):
 * every package loads; saving to .mlpackage and to .mlmodel (+ weights) and
 * loading back gives the identical program and description with identical
 * weight bytes; and `mil print` reproduces coremltools' print of each
 * (input.ct.mil / expected.ct.mil) up to the equalities of mil-text.md
 * section 3. Prints "skipped: corpus not found" when the corpus is absent. */
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "mil/mil.h"
#include "mil/model.h"
#include "unit/model_testutil.h"

static char g_models[1024];
static char *g_tmp;

static mil_model *load(const char *path) {
  mil_model *m = NULL;
  mil_diag d = {0};
  mil_status st = mil_model_load(path, &m, &d);
  if (st != MIL_OK) fail_msg("%s: %s", path, mil_diag_first_error(&d) ? mil_diag_first_error(&d) : "load failed");
  mil_diag_clear(&d);
  return m;
}

static void save(mil_model *m, const char *path) {
  mil_diag d = {0};
  mil_status st = mil_model_save(m, path, &d);
  if (st != MIL_OK) fail_msg("%s: %s", path, mil_diag_first_error(&d) ? mil_diag_first_error(&d) : "save failed");
  mil_diag_clear(&d);
}

static bool same_file(const char *a, const char *b) {
  size_t na, nb;
  unsigned char *x = mt_read(a, &na), *y = mt_read(b, &nb);
  bool same = x && y && na == nb && memcmp(x, y, na) == 0;
  free(x);
  free(y);
  return same;
}

typedef struct totals {
  int packages, roundtrips, prints_equal, print_lines, print_mismatches, order_only, weights_identical;
} totals;

static void check_package(const char *name, const char *which, totals *t) {
  char pkg[1200], ct[1200], out_pkg[1200], out_mm[1300], dir_mm[1200];
  snprintf(pkg, sizeof pkg, "%s/%s/%s.mlpackage", g_models, name, which);
  snprintf(ct, sizeof ct, "%s/%s/%s.ct.mil", g_models, name, which);
  if (!mt_exists(pkg)) return;
  mil_model *m = load(pkg);
  t->packages++;

  /* .mlpackage round trip */
  snprintf(out_pkg, sizeof out_pkg, "%s/%s_%s.mlpackage", g_tmp, name, which);
  save(m, out_pkg);
  mil_model *a = load(out_pkg);
  mt_err e = {{0}};
  if (!mt_program_eq(mil_model_program(m), mil_model_program(a), &e)) fail_msg("%s (.mlpackage): %s", pkg, e.msg);
  if (!mt_desc_eq(mil_model_description(m), mil_model_description(a), &e)) fail_msg("%s (.mlpackage): %s", pkg, e.msg);
  assert_int_equal(mil_model_spec_version(m), mil_model_spec_version(a));
  /* coremltools' own weight file is reproduced byte for byte */
  char w_in[1300], w_out[1300];
  snprintf(w_in, sizeof w_in, "%s/Data/com.apple.CoreML/weights/weight.bin", pkg);
  snprintf(w_out, sizeof w_out, "%s/Data/com.apple.CoreML/weights/weight.bin", out_pkg);
  if (mt_exists(w_in)) {
    if (!same_file(w_in, w_out)) fail_msg("%s: rewritten weight.bin differs from the original", pkg);
    t->weights_identical++;
  }

  /* .mlmodel + weights/ round trip */
  snprintf(dir_mm, sizeof dir_mm, "%s/%s_%s_mm", g_tmp, name, which);
  mkdir(dir_mm, 0777);
  snprintf(out_mm, sizeof out_mm, "%s/model.mlmodel", dir_mm);
  save(a, out_mm);
  mil_model *b = load(out_mm);
  if (!mt_program_eq(mil_model_program(m), mil_model_program(b), &e)) fail_msg("%s (.mlmodel): %s", pkg, e.msg);
  if (!mt_desc_eq(mil_model_description(m), mil_model_description(b), &e)) fail_msg("%s (.mlmodel): %s", pkg, e.msg);
  char *w_mm = mt_mlmodel_weights(dir_mm, "model");
  if (mt_exists(w_in) && (!w_mm || !same_file(w_in, w_mm)))
    fail_msg("%s: weights/model.<hex>.bin next to the .mlmodel %s", pkg, w_mm ? "differs" : "is missing");
  free(w_mm);
  t->roundtrips++;

  /* coremltools-form print against coremltools' own */
  if (mt_exists(ct)) {
    size_t n;
    char *want = (char *)mt_read(ct, &n);
    mil_buf buf = {0};
    mil_print_options opt = {MIL_PRINT_COREMLTOOLS, false};
    mil_print_program(mil_model_program(m), &opt, &buf);
    mt_text_cmp r;
    mt_compare_text(buf.data ? buf.data : "", want, &r);
    printf("  %s/%s: %d ops, print: %d lines, %d mismatching, %d differing only in argument order\n", name, which,
           (int)mil_program_count_ops(mil_model_program(m)), r.lines, r.mismatches, r.order_only);
    if (r.mismatches) printf("    first mismatch at %s\n", r.first);
    t->print_lines += r.lines;
    t->print_mismatches += r.mismatches;
    t->order_only += r.order_only;
    if (!r.mismatches && !r.order_only) t->prints_equal++;
    mil_buf_free(&buf);
    free(want);
  }
  mil_model_free(b);
  mil_model_free(a);
  mil_model_free(m);
  mt_rm_rf(out_pkg);
  mt_rm_rf(dir_mm);
}

static void test_corpus_models(void **state) {
  (void)state;
  snprintf(g_models, sizeof g_models, "%s/corpus/models", MIL_SHARED_DIR);
  DIR *dir = opendir(g_models);
  if (!dir) {
    printf("skipped: corpus not found\n");
    return;
  }
  g_tmp = mt_tempdir();
  assert_non_null(g_tmp);
  char *names[256];
  int n = 0;
  struct dirent *de;
  while ((de = readdir(dir)) && n < 256)
    if (de->d_name[0] != '.') names[n++] = strdup(de->d_name);
  closedir(dir);
  qsort(names, (size_t)n, sizeof *names, mt_cmp_str_ptr);
  totals t = {0};
  for (int i = 0; i < n; i++) {
    check_package(names[i], "input", &t);
    check_package(names[i], "expected", &t);
    free(names[i]);
  }
  printf("corpus models: %d packages loaded, %d round trips identical (.mlpackage and .mlmodel), %d weight files "
         "reproduced byte for byte, %d/%d prints equal to coremltools' (%d lines compared, %d mismatching, %d "
         "differing only in argument order)\n",
         t.packages, t.roundtrips, t.weights_identical, t.prints_equal, t.packages, t.print_lines, t.print_mismatches,
         t.order_only);
  mt_rm_rf(g_tmp);
  free(g_tmp);
  assert_int_equal(t.roundtrips, t.packages);
  assert_int_equal(t.print_mismatches, 0);
  assert_int_equal(t.order_only, 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_corpus_models)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
