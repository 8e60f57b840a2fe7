/* mil split: a model cut in two chunks of about equal weight size
 * (coremltools' bisect_model; mil/utils.h mil_utils_bisect), with the
 * output check coremltools runs on macOS done on the interpreter. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "mil/interp.h"
#include "mil/model.h"
#include "mil/utils.h"
#include "run_common.h"

static void help(void) {
  printf("usage: mil split MODEL -o DIR [--no-check] [--seed S]\n\n"
         "Cuts MODEL (one function, main) in two models of about equal weight size, as\n"
         "coremltools' bisect_model: DIR/<name>_chunk1.mlpackage computes the model up to the\n"
         "incision op and returns what the rest needs (fp16 values cast to fp32);\n"
         "DIR/<name>_chunk2.mlpackage takes those and computes the model's outputs.\n"
         "Then checks on the interpreter, with random inputs, that chunk 1 followed by chunk 2\n"
         "gives the model's outputs (PSNR and largest difference per output; exit 1 below 35 dB).\n\n"
         "  -o DIR        output directory (created when missing)\n"
         "  --no-check    skip the output check\n"
         "  --seed S      seed of the random inputs (default 0)\n\n"
         "Example: mil split transformer.mlpackage -o chunks/\n");
}

static double psnr(const mil_tensor *a, const mil_tensor *b, double *maxdiff) {
  double peak = 0, mse = 0;
  *maxdiff = 0;
  for (int64_t i = 0; i < a->numel; i++) {
    double x = cli_tensor_get(a, i), y = cli_tensor_get(b, i);
    if (fabs(x) > peak) peak = fabs(x);
    mse += (x - y) * (x - y);
    if (fabs(x - y) > *maxdiff) *maxdiff = fabs(x - y);
  }
  mse /= a->numel ? (double)a->numel : 1;
  if (mse == 0) return INFINITY;
  return 20 * log10(peak > 0 ? peak : 1) - 10 * log10(mse);
}

static mil_interp *make(const char *path, mil_model **m, mil_diag *d) {
  mil_interp *ip = NULL;
  if (mil_model_load(path, m, d) != MIL_OK || mil_interp_new(mil_model_program(*m), NULL, &ip, d) != MIL_OK)
    return NULL;
  return ip;
}

/* Runs model, chunk1, chunk2 and compares the outputs. */
static int check(const char *model, const char *c1, const char *c2, uint64_t seed, mil_diag *d) {
  mil_model *mm = NULL, *m1 = NULL, *m2 = NULL;
  mil_interp *full = make(model, &mm, d), *i1 = full ? make(c1, &m1, d) : NULL, *i2 = i1 ? make(c2, &m2, d) : NULL;
  int rc = CLI_FAIL;
  cli_tensor kept[64];
  memset(kept, 0, sizeof kept);
  if (!i2 || mil_interp_n_inputs(full) > 64) goto out;
  uint64_t st = seed;
  if (cli_set_inputs(full, NULL, 0, &st, kept, d) != MIL_OK || mil_interp_run(full, NULL, d) != MIL_OK) goto out;
  for (int32_t i = 0; i < mil_interp_n_inputs(i1); i++) {
    const char *n = mil_interp_input_name(i1, i);
    for (int32_t k = 0; k < mil_interp_n_inputs(full); k++)
      if (!strcmp(mil_interp_input_name(full, k), n) && mil_interp_set_input(i1, n, &kept[k].t, d) != MIL_OK) goto out;
  }
  if (mil_interp_run(i1, NULL, d) != MIL_OK) goto out;
  for (int32_t i = 0; i < mil_interp_n_inputs(i2); i++) {
    const char *n = mil_interp_input_name(i2, i);
    const mil_tensor *t = mil_interp_output(i1, n);
    for (int32_t k = 0; !t && k < mil_interp_n_inputs(full); k++)
      if (!strcmp(mil_interp_input_name(full, k), n)) t = &kept[k].t;
    if (!t) {
      mil_diag_error(d, MIL_ERR_INVALID, "%s: input '%s' is neither an output of %s nor a model input", c2, n, c1);
      goto out;
    }
    if (mil_interp_set_input(i2, n, t, d) != MIL_OK) goto out;
  }
  if (mil_interp_run(i2, NULL, d) != MIL_OK) goto out;
  rc = CLI_OK;
  for (int32_t i = 0; i < mil_interp_n_outputs(full); i++) {
    const char *n = mil_interp_output_name(full, i);
    const mil_tensor *a = mil_interp_output_at(full, i), *b = mil_interp_output(i2, n);
    if (!b || b->numel != a->numel) {
      fprintf(stderr, "mil: error: %s: output '%s' missing or of another size\n", c2, cli_esc(n));
      rc = CLI_FAIL;
      continue;
    }
    double md;
    double p = psnr(a, b, &md);
    if (isinf(p)) printf("check %s: chunk1 -> chunk2 vs model: identical (PSNR inf)\n", cli_esc(n));
    else printf("check %s: chunk1 -> chunk2 vs model: PSNR %.1f dB, max |diff| %g\n", cli_esc(n), p, md);
    if (p < 35) rc = CLI_FAIL;
  }
out:
  for (int i = 0; i < 64; i++) cli_tensor_free(&kept[i]);
  mil_interp_free(full);
  mil_interp_free(i1);
  mil_interp_free(i2);
  mil_model_free(mm);
  mil_model_free(m1);
  mil_model_free(m2);
  return rc;
}

int cmd_split(int argc, char **argv) {
  const char *in = NULL, *dir = NULL;
  bool do_check = true;
  uint64_t seed = 0;
  for (int i = 1; i < argc; i++) {
    const char *s = argv[i];
    if (cli_is_help(s)) {
      help();
      return CLI_OK;
    } else if (!strcmp(s, "--no-check")) {
      do_check = false;
    } else if (!strcmp(s, "-o") || !strcmp(s, "--seed")) {
      if (i + 1 >= argc) return cli_usage_error("split", "%s needs a value", s);
      if (s[1] == 'o') dir = argv[++i];
      else if (cli_parse_u64("split", "--seed", argv[++i], &seed)) return CLI_USAGE;
    } else if (s[0] == '-' && s[1]) {
      return cli_usage_error("split", "unknown option '%s'", s);
    } else if (!in) {
      in = s;
    } else {
      return cli_usage_error("split", "unexpected argument '%s'", s);
    }
  }
  if (!in || !dir) return cli_usage_error("split", "expected MODEL and -o DIR");
  /* <dir>/<stem>_chunk1.mlpackage */
  const char *base;
  size_t len = strlen(in);
  while (len > 1 && in[len - 1] == '/') len--;
  char stem[256];
  base = in;
  for (size_t i = 0; i < len; i++)
    if (in[i] == '/') base = in + i + 1;
  size_t sl = (size_t)(in + len - base);
  const char *dot = NULL;
  for (const char *c = base; c < in + len; c++)
    if (*c == '.') dot = c;
  if (dot) sl = (size_t)(dot - base);
  if (sl >= sizeof stem) sl = sizeof stem - 1;
  memcpy(stem, base, sl);
  stem[sl] = 0;
  char p1[4096], p2[4096];
  snprintf(p1, sizeof p1, "%s/%s_chunk1.mlpackage", dir, stem);
  snprintf(p2, sizeof p2, "%s/%s_chunk2.mlpackage", dir, stem);
  mkdir(dir, 0777);
  mil_diag d;
  mil_diag_init(&d);
  mil_model *m = NULL;
  mil_utils_bisect_info info;
  int rc = CLI_FAIL;
  mil_save_cleanup_on_signals();
  if (mil_model_load(in, &m, &d) == MIL_OK && mil_utils_bisect(m, p1, p2, &info, &d) == MIL_OK) {
    printf("incision op: %s (%s), index %d; weights %lld of %lld bytes in chunk 1; %d values passed\n",
           cli_esc(info.op_name), cli_esc(info.op_type), (int)info.op_index, (long long)info.first_chunk_weight_bytes,
           (long long)info.total_weight_bytes, (int)info.n_boundary);
    printf("wrote %s\nwrote %s\n", cli_esc(p1), cli_esc(p2));
    rc = do_check ? check(in, p1, p2, seed, &d) : CLI_OK;
  }
  if (d.n_errors) cli_print_diag(&d);
  mil_model_free(m);
  mil_diag_clear(&d);
  return rc;
}
