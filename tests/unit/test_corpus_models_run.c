/* The reference interpreter on the corpus networks: for every model under
 * MIL_SHARED_DIR/corpus/models/<name>/, runs input.mlpackage (the fp32
 * program coremltools converted from PyTorch) and expected.mlpackage (the
 * same after coremltools' DEFAULT pipeline, an fp16 program) on x.npy and
 * compares each with PyTorch's output y_torch.npy:
 *   fp32: max |a - b| / max |b| <= 1e-3
 *   fp16: |a - b| <= 1e-2 + 1e-2 |b| for every element
 * and prints the max abs / rel errors. The model input is the function's
 * first input. Also drives `mil run` and `mil verify` on tinygpt4: the
 * .npy `mil run` writes matches PyTorch, `mil verify` passes the fp16
 * program within 1e-2 (its default for fp16 models) and fails it at fp32
 * tolerances (exit 1). */
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
#include <sys/wait.h>
#include <unistd.h>
#include <time.h>

#include <cmocka.h>

#include "shared_skip.h"

#include "mil/interp.h"
#include "mil/mil.h"
#include "mil/model.h"
#include "mil/npy.h"

static double get(mil_dtype dt, const void *p, int64_t i) {
  switch (dt) {
  case MIL_DT_FP32: return ((const float *)p)[i];
  case MIL_DT_FP16: return mil_fp16_to_fp32(((const uint16_t *)p)[i]);
  case MIL_DT_INT32: return ((const int32_t *)p)[i];
  default: return NAN;
  }
}

typedef struct errs {
  double max_abs, max_ref, max_rel_elem;
  int64_t outside; /* elements outside atol + rtol |b| */
} errs;

/* Runs model `path` on x and compares its first output with y. */
static bool run_model(const char *path, const mil_npy *x, const mil_npy *y, double rtol, double atol, errs *e,
                      double *ms) {
  mil_diag d;
  mil_diag_init(&d);
  mil_model *m = NULL;
  mil_interp *ip = NULL;
  bool ok = false;
  memset(e, 0, sizeof *e);
  if (mil_model_load(path, &m, &d) != MIL_OK || mil_interp_new(mil_model_program(m), NULL, &ip, &d) != MIL_OK) {
    print_error("%s: %s\n", path, mil_diag_first_error(&d));
    goto out;
  }
  mil_tensor t = {x->dtype, x->rank, x->shape, x->data, x->nbytes, x->numel};
  if (mil_interp_n_inputs(ip) < 1 || mil_interp_set_input(ip, mil_interp_input_name(ip, 0), &t, &d) != MIL_OK) {
    print_error("%s: %s\n", path, mil_diag_first_error(&d) ? mil_diag_first_error(&d) : "no input");
    goto out;
  }
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  if (mil_interp_run(ip, NULL, &d) != MIL_OK) {
    print_error("%s: %s\n", path, mil_diag_first_error(&d));
    goto out;
  }
  clock_gettime(CLOCK_MONOTONIC, &t1);
  *ms = (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
  const mil_tensor *o = mil_interp_output_at(ip, 0);
  if (o->numel != y->numel) {
    print_error("%s: output has %lld elements, y_torch.npy %lld\n", path, (long long)o->numel, (long long)y->numel);
    goto out;
  }
  for (int64_t i = 0; i < o->numel; i++) {
    double a = get(o->dtype, o->data, i), b = get(y->dtype, y->data, i), err = fabs(a - b);
    if (!(err <= e->max_abs)) e->max_abs = isnan(err) ? INFINITY : err;
    if (fabs(b) > e->max_ref) e->max_ref = fabs(b);
    if (b != 0 && err / fabs(b) > e->max_rel_elem) e->max_rel_elem = err / fabs(b);
    if (!(err <= atol + rtol * fabs(b))) e->outside++;
  }
  ok = true;
out:
  mil_interp_free(ip);
  mil_model_free(m);
  mil_diag_clear(&d);
  return ok;
}

static void test_corpus_models(void **state) {
  (void)state;
  char dir[4096];
  snprintf(dir, sizeof dir, "%s/corpus/models", MIL_SHARED_DIR);
  DIR *dp = opendir(dir);
  if (!dp) {
    shared_skip("the corpus");
    return;
  }
  int n_models = 0, failures = 0;
  struct dirent *de;
  char **names = NULL;
  int n_names = 0;
  while ((de = readdir(dp))) {
    if (de->d_name[0] == '.') continue;
    names = realloc(names, (size_t)(n_names + 1) * sizeof *names);
    names[n_names++] = strdup(de->d_name);
  }
  closedir(dp);
  for (int k = 0; k < n_names; k++) {
    char base[4200], px[4300], py[4300], pin[4300], pexp[4300];
    snprintf(base, sizeof base, "%s/%s", dir, names[k]);
    snprintf(px, sizeof px, "%s/x.npy", base);
    snprintf(py, sizeof py, "%s/y_torch.npy", base);
    snprintf(pin, sizeof pin, "%s/input.mlpackage", base);
    snprintf(pexp, sizeof pexp, "%s/expected.mlpackage", base);
    struct stat st;
    if (stat(px, &st) != 0 || stat(py, &st) != 0) continue;
    mil_diag d;
    mil_diag_init(&d);
    mil_npy *x = NULL, *y = NULL;
    if (mil_npy_read(px, &x, &d) != MIL_OK || mil_npy_read(py, &y, &d) != MIL_OK) {
      print_error("%s: %s\n", base, mil_diag_first_error(&d));
      failures++;
    } else {
      n_models++;
      errs e;
      double ms = 0;
      if (!run_model(pin, x, y, 0, 0, &e, &ms)) {
        failures++;
      } else {
        double rel = e.max_ref > 0 ? e.max_abs / e.max_ref : e.max_abs;
        bool pass = rel <= 1e-3;
        printf("%-16s fp32 (input.mlpackage):    max abs %.3g  max abs / max |y| %.3g  %s  (%.1f ms)\n", names[k],
               e.max_abs, rel, pass ? "PASS" : "FAIL", ms);
        failures += !pass;
      }
      if (stat(pexp, &st) == 0) {
        if (!run_model(pexp, x, y, 1e-2, 1e-2, &e, &ms)) {
          failures++;
        } else {
          double rel = e.max_ref > 0 ? e.max_abs / e.max_ref : e.max_abs;
          printf("%-16s fp16 (expected.mlpackage): max abs %.3g  max abs / max |y| %.3g  %lld outside "
                 "1e-2 + 1e-2|y|  %s  (%.1f ms)\n",
                 names[k], e.max_abs, rel, (long long)e.outside, e.outside ? "FAIL" : "PASS", ms);
          failures += e.outside != 0;
        }
      }
    }
    mil_npy_free(x);
    mil_npy_free(y);
    mil_diag_clear(&d);
  }
  for (int k = 0; k < n_names; k++) free(names[k]);
  free(names);
  printf("%d corpus models run, %d failures\n", n_models, failures);
  assert_int_equal(failures, 0);
}

/* Runs a shell command, returns its exit status and its stdout+stderr. */
static int sh(const char *cmd, char *out, size_t n) {
  FILE *f = popen(cmd, "r");
  if (!f) fail_msg("popen failed: %s", cmd);
  size_t len = fread(out, 1, n - 1, f);
  out[len] = 0;
  int st = pclose(f);
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void test_cli_run_verify(void **state) {
  (void)state;
  char m[4096], cmd[16384], out[65536], tmp[] = "/tmp/mil_run_testXXXXXX";
  snprintf(m, sizeof m, "%s/corpus/models/tinygpt4", MIL_SHARED_DIR);
  struct stat st;
  if (stat(m, &st) != 0) {
    shared_skip("the corpus");
    return;
  }
  assert_non_null(mkdtemp(tmp));
  snprintf(cmd, sizeof cmd, "'%s' run '%s/input.mlpackage' --input x='%s/x.npy' --output-dir '%s' 2>&1", MIL_CLI_PATH,
           m, m, tmp);
  assert_int_equal(sh(cmd, out, sizeof out), 0);
  assert_non_null(strstr(out, "(1, 64, 2048) fp32"));
  /* the one .npy written holds the model's output */
  DIR *dp = opendir(tmp);
  assert_non_null(dp);
  struct dirent *de;
  char npy[8192] = "";
  while ((de = readdir(dp)))
    if (strstr(de->d_name, ".npy")) snprintf(npy, sizeof npy, "%s/%s", tmp, de->d_name);
  closedir(dp);
  assert_true(npy[0] != 0);
  mil_diag d;
  mil_diag_init(&d);
  mil_npy *a = NULL, *y = NULL;
  char py[8192];
  snprintf(py, sizeof py, "%s/y_torch.npy", m);
  assert_int_equal(mil_npy_read(npy, &a, &d), MIL_OK);
  assert_int_equal(mil_npy_read(py, &y, &d), MIL_OK);
  assert_int_equal(a->numel, y->numel);
  double max_abs = 0;
  for (int64_t i = 0; i < a->numel; i++) max_abs = fmax(max_abs, fabs(get(a->dtype, a->data, i) - get(y->dtype, y->data, i)));
  assert_true(max_abs < 1e-4);
  unlink(npy);
  rmdir(tmp);
  mil_npy_free(a);
  mil_npy_free(y);
  mil_diag_clear(&d);

  snprintf(cmd, sizeof cmd, "'%s' verify '%s/input.mlpackage' '%s/expected.mlpackage' --rtol 1e-2 --atol 1e-2 2>&1",
           MIL_CLI_PATH, m, m);
  assert_int_equal(sh(cmd, out, sizeof out), 0);
  assert_non_null(strstr(out, "PASS"));
  /* an fp16 model B: the default tolerances follow its precision */
  snprintf(cmd, sizeof cmd, "'%s' verify '%s/input.mlpackage' '%s/expected.mlpackage' 2>&1", MIL_CLI_PATH, m, m);
  assert_int_equal(sh(cmd, out, sizeof out), 0);
  assert_non_null(strstr(out, "PASS: "));
  assert_non_null(strstr(out, "(rtol 0.01, atol 0.01)"));
  /* fp32 tolerances given by hand: fp16 rounding exceeds them */
  snprintf(cmd, sizeof cmd, "'%s' verify '%s/input.mlpackage' '%s/expected.mlpackage' --rtol 1e-3 --atol 1e-4 2>&1",
           MIL_CLI_PATH, m, m);
  assert_int_equal(sh(cmd, out, sizeof out), 1);
  assert_non_null(strstr(out, "FAIL"));
  snprintf(cmd, sizeof cmd, "'%s' run '%s/input.mlpackage' --no-write 2>&1", MIL_CLI_PATH, m);
  assert_int_equal(sh(cmd, out, sizeof out), 1);
  assert_non_null(strstr(out, "input 'x' (1, 64, int32) was not set"));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_corpus_models),
      cmocka_unit_test(test_cli_run_verify),
  };
  return shared_exit(cmocka_run_group_tests(tests, NULL, NULL));
}
