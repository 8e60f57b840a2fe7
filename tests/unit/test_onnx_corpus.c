/* The ONNX importer on the real networks of MIL_SHARED_DIR/corpus/onnx
 * (<model>/<variant>/model.onnx exported by PyTorch, test_data_set_0 with
 * its input and PyTorch's output): each converts with fp32 precision and
 * reproduces PyTorch's output within |a - b| <= 1e-4 (1 + |b|), converts
 * with fp16 precision (add_fp16_cast) within 1e-2 (1 + |b|), and the
 * DEFAULT pipeline run again over the converted program leaves it
 * equivalent (mil_program_compare: the same ops, up to fresh names).
 * Exits 77 (skipped) when the corpus is absent. */
#include <dirent.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cmocka.h>

#include "mil/interp.h"
#include "mil/mil.h"
#include "mil/convert.h"
#include "mil/onnx.h"
#include "mil/onnx_tensor.h"
#include "mil/passes.h"
#include "mil/equiv.h"

static char g_root[4096];

static double elem(mil_dtype dt, const void *p, int64_t i) {
  switch (dt) {
  case MIL_DT_FP32: return ((const float *)p)[i];
  case MIL_DT_FP16: return mil_fp16_to_fp32(((const uint16_t *)p)[i]);
  case MIL_DT_INT32: return ((const int32_t *)p)[i];
  case MIL_DT_INT64: return (double)((const int64_t *)p)[i];
  default: return NAN;
  }
}

/* Runs m on input x (converted to the declared dtype) and returns the
 * largest |a - b| / (1 + |b|) against y; -1 on failure. */
static double run_and_compare(mil_model *m, const mil_onnx_tensor *x, const mil_onnx_tensor *y) {
  mil_diag d;
  mil_diag_init(&d);
  mil_interp *ip = NULL;
  double worst = -1;
  if (mil_interp_new(mil_model_program(m), NULL, &ip, &d) != MIL_OK) goto out;
  const mil_type *t = mil_interp_input_type(ip, 0);
  size_t esz = mil_dtype_size(t->dtype);
  void *buf = malloc(esz * (size_t)x->numel);
  for (int64_t i = 0; i < x->numel; i++) {
    double v = elem(x->dtype, x->data, i);
    if (t->dtype == MIL_DT_INT32) ((int32_t *)buf)[i] = (int32_t)v;
    else if (t->dtype == MIL_DT_FP16) ((uint16_t *)buf)[i] = mil_fp32_to_fp16((float)v);
    else ((float *)buf)[i] = (float)v;
  }
  mil_tensor in = {t->dtype, x->rank, x->shape, buf, esz * (size_t)x->numel, x->numel};
  mil_status st = mil_interp_set_input(ip, mil_interp_input_name(ip, 0), &in, &d);
  if (st == MIL_OK) st = mil_interp_run(ip, NULL, &d);
  free(buf);
  if (st != MIL_OK) goto out;
  const mil_tensor *o = mil_interp_output_at(ip, 0);
  if (!o || o->numel != y->numel) goto out;
  worst = 0;
  for (int64_t i = 0; i < y->numel; i++) {
    double a = elem(o->dtype, o->data, i), b = elem(y->dtype, y->data, i);
    double e = fabs(a - b) / (1 + fabs(b));
    if (!(e <= worst)) worst = isnan(e) ? INFINITY : e;
  }
out:
  if (d.n_errors) printf("  %s\n", mil_diag_first_error(&d));
  mil_interp_free(ip);
  mil_diag_clear(&d);
  return worst;
}

static int n_models;

/* a + "/" + b into out (n bytes); false when it does not fit */
static bool join(char *out, size_t n, const char *a, const char *b) { return snprintf(out, n, "%s/%s", a, b) < (int)n; }

static void check_variant(const char *dir) {
  char path[4096], xin[4096], yout[4096];
  assert_true(join(path, sizeof path, dir, "model.onnx"));
  assert_true(join(xin, sizeof xin, dir, "test_data_set_0/input_0.pb"));
  assert_true(join(yout, sizeof yout, dir, "test_data_set_0/output_0.pb"));
  mil_diag d;
  mil_diag_init(&d);
  mil_onnx_tensor *x = NULL, *y = NULL;
  mil_onnx_read_opts ro;
  memset(&ro, 0, sizeof ro);
  ro.flags = MIL_ONNX_EXACT;
  assert_int_equal(mil_onnx_tensor_read(xin, &ro, &x, &d), MIL_OK);
  assert_int_equal(mil_onnx_tensor_read(yout, &ro, &y, &d), MIL_OK);
  for (int fp16 = 0; fp16 <= 1; fp16++) {
    mil_convert_options o;
    memset(&o, 0, sizeof o);
    o.fp32 = !fp16;
    mil_model *m = NULL;
    mil_status st = mil_convert(path, &o, &m, &d);
    if (st != MIL_OK) printf("  %s\n", mil_diag_first_error(&d));
    assert_int_equal(st, MIL_OK);
    assert_int_equal(mil_program_validate(mil_model_program(m), &d), MIL_OK);
    double err = run_and_compare(m, x, y);
    printf("%-48s %s: max |a - b| / (1 + |b|) = %.3g\n", dir + strlen(g_root) + 1, fp16 ? "fp16" : "fp32", err);
    assert_true(err >= 0);
    assert_true(err <= (fp16 ? 1e-2 : 1e-4));
    if (!fp16) {
      /* the converted program is a fixed point of the pipeline */
      mil_pipeline *pl = NULL;
      mil_pipeline_report rep;
      memset(&rep, 0, sizeof rep);
      mil_program *before = mil_program_clone(mil_model_program(m));
      assert_non_null(before);
      assert_int_equal(mil_pipeline_new("default", &pl, &d), MIL_OK);
      mil_pipeline_remove_pass(pl, "common::add_fp16_cast");
      mil_pipeline_remove_pass(pl, "common::add_int16_cast");
      assert_int_equal(mil_pipeline_run(pl, mil_model_program(m), NULL, &rep, &d), MIL_OK);
      mil_equiv_result res;
      mil_status eq = mil_program_compare(before, mil_model_program(m), NULL, &res, &d);
      if (eq != MIL_OK) printf("  the pipeline changed the converted program: %s\n", res.diff);
      assert_int_equal(eq, MIL_OK);
      mil_program_free(before);
      mil_pipeline_report_free(&rep);
      mil_pipeline_free(pl);
    }
    mil_model_free(m);
  }
  mil_onnx_tensor_free(x);
  mil_onnx_tensor_free(y);
  mil_diag_clear(&d);
  n_models++;
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static size_t list_dirs(const char *dir, char ***out) {
  DIR *dd = opendir(dir);
  size_t n = 0;
  *out = NULL;
  if (!dd) return 0;
  for (struct dirent *e; (e = readdir(dd));) {
    if (e->d_name[0] == '.') continue;
    char p[4096];
    struct stat sb;
    if (!join(p, sizeof p, dir, e->d_name) || stat(p, &sb) != 0 || !S_ISDIR(sb.st_mode)) continue;
    *out = realloc(*out, (n + 1) * sizeof **out);
    (*out)[n++] = strdup(e->d_name);
  }
  closedir(dd);
  qsort(*out, n, sizeof **out, cmp_str);
  return n;
}

static void test_corpus(void **state) {
  (void)state;
  char **models;
  size_t nm = list_dirs(g_root, &models);
  for (size_t i = 0; i < nm; i++) {
    char mdir[4096];
    if (!join(mdir, sizeof mdir, g_root, models[i])) continue;
    char **vars;
    size_t nv = list_dirs(mdir, &vars);
    for (size_t j = 0; j < nv; j++) {
      char vdir[4096];
      if (join(vdir, sizeof vdir, mdir, vars[j])) check_variant(vdir);
      free(vars[j]);
    }
    free(vars);
    free(models[i]);
  }
  free(models);
  assert_true(n_models > 0);
}

int main(void) {
  snprintf(g_root, sizeof g_root, "%s/corpus/onnx", MIL_SHARED_DIR);
  struct stat sb;
  if (stat(g_root, &sb) != 0) {
    printf("SKIPPED: %s not found\n", g_root);
    return 77;
  }
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_corpus)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
