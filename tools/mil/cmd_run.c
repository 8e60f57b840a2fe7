/* mil run MODEL --input NAME=FILE.npy|FILE.pb ... : runs a function of a
 * model on the CPU reference interpreter (mil/interp.h) and writes its
 * outputs as .npy or ONNX TensorProto .pb files. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "cli.h"
#include "mil/onnx.h"
#include "load.h"
#include "run_common.h"
#include "run_dict.h"
#include "run_pipeline.h"
#include "mil/utils.h"

static void help(void) {
  printf("usage: mil run MODEL [--input NAME=FILE.npy|FILE.pb]... [--function NAME]\n"
         "               [--output-dir DIR] [--output-format npy|pb] [--seed S] [--random-inputs]\n"
         "               [--max-value-bytes N] [--no-write] [--runs N] [--profile] [--profile-top N]\n"
         "               [--threads N]\n\n"
         "Run MODEL (.mlpackage, .mlmodel or .mil) on the CPU reference interpreter.\n"
         "Each output is written to DIR/<output name>.npy (or .pb; DIR defaults to the\n"
         "current directory; '/' in names becomes '_', control characters and invalid\n"
         "UTF-8 become %%hh) and summarized on stdout: name, shape, dtype, min, max and\n"
         "mean. A classifier's class label and probability dictionary (classify) are\n"
         "printed and written as DIR/<name>.json. A Pipeline model (.mlpackage, e.g. from\n"
         "`mil pipeline`) runs its stages in order, each fed the pipeline inputs and the\n"
         "outputs of the stages before it; the last stage's outputs are written.\n\n"
         "  --input NAME=FILE      value of input NAME from a .npy file or an ONNX\n"
         "                         TensorProto .pb (either dialect); FILE alone when the\n"
         "                         function has one input; a numeric array of another\n"
         "                         dtype is converted to the input's dtype. For a model\n"
         "                         converted from ONNX, NAME may also be the ONNX name\n"
         "                         the conversion renamed (onnx::Flatten_0 for\n"
         "                         onnx__Flatten_0: metadata com.libmil.onnx_names);\n"
         "                         outputs keep the model's names\n"
         "  --output-format F      npy (default) or pb (ONNX TensorProto, raw_data, named\n"
         "                         after the output)\n"
         "  --function NAME        function to run (default: main, or the only one)\n"
         "  --output-dir DIR       where to write the outputs\n"
         "  --no-write             only print the summaries\n"
         "  --random-inputs        fill inputs not given with random values\n"
         "  --seed S               seed of --random-inputs and of random ops (default 0)\n"
         "  --max-value-bytes N    refuse (exit 1, nothing written) to materialize any\n"
         "                         single value larger than N bytes (default: half of\n"
         "                         the physical memory); the total is not bounded\n"
         "  --runs N               run N times on the same inputs (default 1) and print\n"
         "                         the first and the best run time to stderr\n"
         "  --profile              print to stderr the time per op type and the 20\n"
         "                         slowest ops (per run; the runs after the first when\n"
         "                         --runs is above 1)\n"
         "  --profile-top N        --profile, listing the N slowest ops\n"
         "  --threads N            threads one op may use (1 to 1024; default: the\n"
         "                         environment variable MIL_NUM_THREADS, else the\n"
         "                         number of CPUs): oneDNN, OpenBLAS and the large\n"
         "                         elementwise kernels\n");
}

/* DIR/NAME.EXT with '/' in NAME replaced by '_' and control bytes or
 * invalid UTF-8 by %hh (mil_escape, MIL_ESCAPE_FILE_NAME). */
static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

/* Runs ip `runs` times (profiling the runs after the first when there
 * are several), printing the times to stderr when runs > 1. */
static mil_status run_timed(mil_interp *ip, uint64_t runs, bool profile, uint64_t top, mil_diag *d) {
  double first = 0, best = 0;
  mil_status st = MIL_OK;
  if (profile && runs <= 1 && (st = mil_interp_set_profile(ip, true)) != MIL_OK) return st;
  for (uint64_t k = 0; k < runs && st == MIL_OK; k++) {
    double t0 = now_ms();
    st = mil_interp_run(ip, NULL, d);
    double ms = now_ms() - t0;
    if (k == 0) first = best = ms;
    else if (ms < best) best = ms;
    if (k == 0 && profile && runs > 1 && st == MIL_OK) st = mil_interp_set_profile(ip, true);
  }
  if (st != MIL_OK) return st;
  if (runs > 1) fprintf(stderr, "runs: %llu, first %.3f ms, best %.3f ms\n", (unsigned long long)runs, first, best);
  if (profile) mil_interp_profile_report(ip, stderr, (int)top);
  return MIL_OK;
}

static char *out_path(const char *dir, const char *name, const char *ext) {
  size_t k = mil_escape(name, NULL, 0, MIL_ESCAPE_FILE_NAME);
  size_t n = strlen(dir) + k + strlen(ext) + 3;
  char *p = malloc(n);
  if (!p) return NULL;
  size_t l = (size_t)snprintf(p, n, "%s/", dir);
  mil_escape(name, p + l, n - l, MIL_ESCAPE_FILE_NAME);
  snprintf(p + l + k, n - l - k, ".%s", ext);
  return p;
}

int cmd_run(int argc, char **argv) {
  const char *model = NULL, *function = NULL, *outdir = ".", *format = "npy";
  bool write = true, random_inputs = false, profile = false;
  uint64_t seed = 0, max_value_bytes = 0, runs = 1, threads = 0, top = 20;
  cli_input_arg *ins = calloc((size_t)argc + 1, sizeof *ins);
  int n_ins = 0;
  if (!ins) return CLI_FAIL;
  int rc = CLI_OK;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (cli_is_help(a)) {
      help();
      goto done;
    }
    bool more = i + 1 < argc;
    if (!strcmp(a, "--input") && more) {
      if ((rc = cli_add_input_arg("run", argv[++i], ins, &n_ins)) != CLI_OK) goto done;
    } else if (!strcmp(a, "--function") && more) function = argv[++i];
    else if (!strcmp(a, "--output-dir") && more) outdir = argv[++i];
    else if (!strcmp(a, "--output-format") && more) format = argv[++i];
    else if (!strcmp(a, "--seed") && more) {
      if ((rc = cli_parse_u64("run", a, argv[++i], &seed)) != CLI_OK) goto done;
    } else if (!strcmp(a, "--max-value-bytes") && more) {
      if ((rc = cli_parse_u64("run", a, argv[++i], &max_value_bytes)) != CLI_OK) goto done;
      if (max_value_bytes == 0 || max_value_bytes > (uint64_t)MIL_TENSOR_MAX_BYTES) {
        rc = cli_usage_error("run", "--max-value-bytes is %s; expected 1 to %lld", argv[i], (long long)MIL_TENSOR_MAX_BYTES);
        goto done;
      }
    } else if (!strcmp(a, "--runs") && more) {
      if ((rc = cli_parse_u64("run", a, argv[++i], &runs)) != CLI_OK) goto done;
      if (runs == 0 || runs > 1000000) {
        rc = cli_usage_error("run", "--runs is %s; expected 1 to 1000000", argv[i]);
        goto done;
      }
    } else if (!strcmp(a, "--threads") && more) {
      if ((rc = cli_parse_u64("run", a, argv[++i], &threads)) != CLI_OK) goto done;
      if (threads == 0 || threads > MIL_INTERP_MAX_THREADS) {
        rc = cli_usage_error("run", "--threads is %s; expected 1 to %d", argv[i], MIL_INTERP_MAX_THREADS);
        goto done;
      }
    } else if (!strcmp(a, "--profile-top") && more) {
      if ((rc = cli_parse_u64("run", a, argv[++i], &top)) != CLI_OK) goto done;
      if (top == 0 || top > 1000000) {
        rc = cli_usage_error("run", "--profile-top is %s; expected 1 to 1000000", argv[i]);
        goto done;
      }
      profile = true;
    } else if (!strcmp(a, "--profile")) profile = true;
    else if (!strcmp(a, "--no-write")) write = false;
    else if (!strcmp(a, "--random-inputs")) random_inputs = true;
    else if (a[0] == '-' && a[1]) {
      rc = cli_usage_error("run", "unknown or incomplete option '%s'", a);
      goto done;
    } else if (!model) model = a;
    else {
      rc = cli_usage_error("run", "unexpected argument '%s'", a);
      goto done;
    }
  }
  if (!model) {
    rc = cli_usage_error("run", "missing MODEL");
    goto done;
  }
  if (strcmp(format, "npy") != 0 && strcmp(format, "pb") != 0) {
    rc = cli_usage_error("run", "--output-format is '%s'; expected npy or pb", format);
    goto done;
  }
  bool pb = !strcmp(format, "pb");
  mil_diag d;
  mil_diag_init(&d);
  cli_loaded m;
  mil_interp *ip = NULL;
  cli_tensor *kept = NULL;
  /* a Pipeline model: every stage but the last runs here, the last below */
  cli_pipe pipe;
  memset(&pipe, 0, sizeof pipe);
  if (threads) { /* also the default of the interpreters a pipeline's earlier stages run on */
    char tb[24];
    snprintf(tb, sizeof tb, "%llu", (unsigned long long)threads);
    setenv("MIL_NUM_THREADS", tb, 1);
  }
  bool is_pipe = mil_utils_is_pipeline(model);
  uint64_t prs = seed;
  mil_status st = is_pipe ? cli_pipeline_run_prefix(model, ins, n_ins, random_inputs ? &prs : NULL, seed,
                                                     max_value_bytes, &pipe, &d)
                          : cli_load(model, &m, &d);
  if (is_pipe) {
    memset(&m, 0, sizeof m);
    if (st == MIL_OK) m.program = mil_model_program(pipe.stages[pipe.n - 1]);
    else cli_pipeline_free(&pipe);
  }
  size_t from = d.count; /* messages from here on come after loading */
  if (st == MIL_OK) {
    /* an ONNX input name the import renamed: the model's name */
    for (int k = 0; k < n_ins; k++) {
      char *mn = ins[k].name && m.model ? mil_onnx_model_name(m.model, false, ins[k].name) : NULL;
      if (mn) {
        free((void *)ins[k].name);
        ins[k].name = mn;
      }
    }
    st = mil_interp_new(m.program, function, &ip, &d);
    if (st == MIL_OK) {
      mil_interp_set_seed(ip, seed);
      if (threads) mil_interp_set_threads(ip, (int32_t)threads);
      if (max_value_bytes) mil_interp_set_max_value_bytes(ip, (int64_t)max_value_bytes);
      kept = calloc((size_t)mil_interp_n_inputs(ip) + 1, sizeof *kept);
      uint64_t rs = is_pipe ? prs : seed;
      const mil_function_desc *fd = m.model && !is_pipe ? mil_model_function_desc(m.model, function) : NULL;
      st = !kept    ? MIL_ERR_NOMEM
           : is_pipe ? cli_pipeline_feed(&pipe, ip, ins, n_ins, random_inputs ? &rs : NULL, kept, &d)
                     : cli_set_inputs_described(ip, fd, ins, n_ins, random_inputs ? &rs : NULL, kept, &d);
    }
    /* the weight files still cover their mappings (a truncated one would raise SIGBUS) */
    if (st == MIL_OK && m.model) st = mil_model_check_weights(m.model, &d);
    if (st == MIL_OK) st = run_timed(ip, runs, profile, top, &d);
    if (st == MIL_OK && write && mkdir(outdir, 0777) != 0 && errno != EEXIST)
      st = mil_diag_error(&d, MIL_ERR_IO, "%s: cannot create the output directory: %s", outdir, strerror(errno));
    for (int32_t i = 0; st == MIL_OK && i < mil_interp_n_outputs(ip); i++) {
      const char *name = mil_interp_output_name(ip, i);
      const mil_tensor *t = mil_interp_output_at(ip, i);
      char *jp = write ? out_path(outdir, name, "json") : NULL;
      bool special = cli_classifier_output(ip, i, jp, &st, &d); /* classify's label and dictionary: JSON */
      free(jp);
      if (special) continue;
      cli_print_summary(name, t);
      if (!write) continue;
      char *p = out_path(outdir, name, format);
      mil_onnx_write_opts wo = {MIL_ONNX_DIALECT_ONNX, MIL_ONNX_ENC_RAW, 0, name, NULL};
      st = !p ? MIL_ERR_NOMEM
           : pb ? mil_onnx_tensor_write(p, t->dtype, t->rank, t->shape, t->data, &wo, &d)
                : mil_npy_write(p, t->dtype, t->rank, t->shape, t->data, &d);
      free(p);
    }
    for (int32_t i = 0; kept && i < mil_interp_n_inputs(ip); i++) cli_tensor_free(&kept[i]);
    free(kept);
    mil_interp_free(ip);
    if (is_pipe) cli_pipeline_free(&pipe);
    else cli_unload(&m);
    cli_diag_locate(&d, from, model);
  }
  cli_print_diag(&d);
  mil_diag_clear(&d);
  rc = st == MIL_OK ? CLI_OK : CLI_FAIL;
done:
  for (int i = 0; i < n_ins; i++) free((void *)ins[i].name);
  free(ins);
  return rc;
}
