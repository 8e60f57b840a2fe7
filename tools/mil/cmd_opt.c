/* mil opt IN [-o OUT] [--pipeline NAME | --passes P1,P2] [options]:
 * run a pass pipeline over a model, like coremltools'
 * PassPipelineManager.apply_pipeline. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "load.h"
#include "mil/model.h"
#include "mil/passes.h"
#include "opt_summary.h"

/* .mil text is parsed directly: the golden corpus holds programs of opsets
 * older than ML Programs (CoreML3), which the model loader refuses; other
 * formats go through cli_load. */
static mil_status load_any(const char *path, cli_loaded *out, mil_diag *d) {
  size_t n = strlen(path);
  if (n > 4 && strcmp(path + n - 4, ".mil") == 0) {
    memset(out, 0, sizeof *out);
    return mil_parse_file(path, &out->program, d);
  }
  return cli_load(path, out, d);
}

static void help(void) {
  printf("usage: mil opt IN [-o OUT] [--pipeline NAME | --passes P1,P2,...] [options]\n\n"
         "Optimize model IN (.mil, .mlmodel or .mlpackage) with a pass pipeline and write\n"
         "the result to OUT (.mil, .mlmodel, .mlpackage, or - for complete-form MIL text\n"
         "on standard output; default -). Pass and pipeline names are coremltools';\n"
         "`mil passes` lists them.\n\n"
         "options:\n"
         "  --pipeline NAME          a predefined pipeline (default: default; case-insensitive)\n"
         "  --passes P1,P2,...       run exactly these passes (\"common::\" may be left out)\n"
         "  --pass-option PASS:KEY=VALUE\n"
         "                           set an option of a pass (repeatable); VALUE is read as\n"
         "                           JSON when it parses as JSON, else as a string\n"
         "  --compute-precision fp16|fp32\n"
         "                           fp32 drops common::add_fp16_cast and common::add_int16_cast,\n"
         "                           as coremltools' converter does for fp32 precision\n"
         "                           (default fp16: the pipeline as listed)\n"
         "  --skip-missing           leave out passes that are not implemented (with a warning)\n"
         "                           instead of failing\n"
         "  --verify-each            verify (and validate) the program after every pass\n"
         "  --print-after-all        print the program to stderr after every pass\n"
         "  --print-after=P1,P2      print it after the named passes\n"
         "  --timing                 print a table of per-pass times, slowest first\n"
         "  --stats                  print the passes that changed the program and the summary\n"
         "  --quiet                  print nothing but errors\n\n"
         "On a terminal, standard error shows the pass being run (n/N) while the\n"
         "pipeline works, and the run ends with a summary: ops before/after by op type,\n"
         "weight bytes, load / pipeline / save times and peak memory (also printed with\n"
         "--stats when standard error is not a terminal; --quiet silences both).\n");
}

typedef struct opt_args {
  const char *in, *out, *pipeline, *passes, *print_after, *precision;
  const char **popts;
  int n_popts;
  bool verify_each, print_all, timing, stats, quiet, skip_missing;
} opt_args;

/* Splits "PASS:KEY=VALUE" (PASS may contain "::") and sets it. */
static int apply_pass_option(mil_pipeline *pl, const char *spec, mil_diag *d) {
  const char *eq = strchr(spec, '=');
  if (!eq) return cli_usage_error("opt", "--pass-option expects PASS:KEY=VALUE, got '%s'", spec);
  size_t left = (size_t)(eq - spec);
  char *buf = malloc(left + 1);
  if (!buf) return CLI_FAIL;
  memcpy(buf, spec, left);
  buf[left] = 0;
  char *colon = strrchr(buf, ':');
  if (!colon || colon == buf || colon[1] == 0 || (colon > buf && colon[-1] == ':')) {
    free(buf);
    return cli_usage_error("opt", "--pass-option expects PASS:KEY=VALUE, got '%s'", spec);
  }
  *colon = 0;
  mil_status st = mil_pipeline_set_option(pl, buf, colon + 1, eq + 1, d);
  free(buf);
  return st == MIL_OK ? CLI_OK : CLI_FAIL;
}

static mil_status build_pipeline(const opt_args *a, mil_pipeline **out, mil_diag *d) {
  if (!a->passes) return mil_pipeline_new(a->pipeline ? a->pipeline : "default", out, d);
  char *copy = strdup(a->passes);
  if (!copy) return MIL_ERR_NOMEM;
  const char *names[512];
  int32_t n = 0;
  for (char *save = NULL, *t = strtok_r(copy, ",", &save); t && n < 512; t = strtok_r(NULL, ",", &save)) {
    while (*t == ' ') t++;
    if (*t) names[n++] = t;
  }
  mil_status st = mil_pipeline_new_from_list("custom", n, names, out, d);
  free(copy);
  return st;
}

static int cmp_time(const void *x, const void *y) {
  const mil_pass_record *a = x, *b = y;
  return a->seconds < b->seconds ? 1 : a->seconds > b->seconds ? -1 : a->index - b->index;
}

static void print_timing(const mil_pipeline_report *rep) {
  mil_pass_record *r = malloc((size_t)(rep->n_records ? rep->n_records : 1) * sizeof *r);
  if (!r) return;
  memcpy(r, rep->records, (size_t)rep->n_records * sizeof *r);
  qsort(r, (size_t)rep->n_records, sizeof *r, cmp_time);
  fprintf(stderr, "%-4s %-58s %10s %6s %8s\n", "#", "pass", "ms", "%", "changes");
  int32_t skipped = 0;
  for (int32_t i = 0; i < rep->n_records; i++) {
    skipped += r[i].skipped;
    if (r[i].skipped)
      fprintf(stderr, "%-4d %-58s %10.3f %6s %8s\n", r[i].index, r[i].pass, r[i].seconds * 1e3, "", "skipped");
    else
      fprintf(stderr, "%-4d %-58s %10.3f %5.1f%% %8lld\n", r[i].index, r[i].pass, r[i].seconds * 1e3,
              rep->seconds > 0 ? 100.0 * r[i].seconds / rep->seconds : 0.0, (long long)r[i].changes);
  }
  fprintf(stderr, "total %.3f ms in %d passes", rep->seconds * 1e3, (int)rep->n_records);
  if (skipped) fprintf(stderr, " (%d skipped: none of their op types in the program)", (int)skipped);
  if (rep->verify_seconds > 0) fprintf(stderr, " (+ %.3f ms verifying)", rep->verify_seconds * 1e3);
  fprintf(stderr, "\n");
  free(r);
}

/* The op counts come with the summary, which --stats always prints. */
static void print_stats(const mil_pipeline_report *rep) {
  int32_t skipped = 0;
  for (int32_t i = 0; i < rep->n_records; i++) skipped += rep->records[i].skipped;
  fprintf(stderr, "%d of %d pass runs changed the program (%d skipped: none of their op types present):\n",
          (int)rep->n_changed, (int)rep->n_records, (int)skipped);
  for (int32_t i = 0; i < rep->n_records; i++) {
    const mil_pass_record *r = &rep->records[i];
    if (r->changes > 0)
      fprintf(stderr, "  #%-3d %-58s %6lld changes, ops %lld -> %lld\n", r->index, r->pass, (long long)r->changes,
              (long long)r->ops_before, (long long)r->ops_after);
  }
}

static bool ends_with(const char *s, const char *suffix) {
  size_t n = strlen(s), m = strlen(suffix);
  while (n > 1 && s[n - 1] == '/') n--;
  return n >= m && strncmp(s + n - m, suffix, m) == 0;
}

/* Complete-form text to path, atomically (temporary sibling + rename). */
static mil_status write_mil_text(const char *path, const mil_program *p, mil_diag *d) {
  size_t n = strlen(path);
  char *tmp = malloc(n + 16);
  if (!tmp) return MIL_ERR_NOMEM;
  snprintf(tmp, n + 16, "%s.tmpXXXXXX", path);
  int fd = mkstemp(tmp);
  if (fd < 0) {
    free(tmp);
    return mil_diag_error(d, MIL_ERR_IO, "%s: cannot create a temporary file next to it", path);
  }
  FILE *f = fdopen(fd, "w");
  mil_print_options po = {MIL_PRINT_COMPLETE, false};
  mil_status st = f ? mil_print_program_file(p, &po, f) : MIL_ERR_IO;
  if (f && fclose(f) != 0) st = MIL_ERR_IO;
  if (!f) close(fd);
  if (st == MIL_OK && rename(tmp, path) != 0) st = MIL_ERR_IO;
  if (st != MIL_OK) {
    remove(tmp);
    mil_diag_error(d, st, "%s: writing failed", path);
  }
  free(tmp);
  return st;
}

static mil_status write_output(const char *out, cli_loaded *m, mil_diag *d) {
  if (strcmp(out, "-") == 0) {
    mil_print_options po = {MIL_PRINT_COMPLETE, false};
    mil_status st = mil_print_program_file(m->program, &po, stdout);
    if (st == MIL_OK && fflush(stdout) != 0) st = MIL_ERR_IO;
    if (st != MIL_OK) mil_diag_error(d, st, "writing to standard output failed");
    return st;
  }
  /* .mil needs no model: any program prints, whatever its opset or I/O types */
  if (ends_with(out, ".mil")) return write_mil_text(out, m->program, d);
  if (!ends_with(out, ".mlmodel") && !ends_with(out, ".mlpackage"))
    return mil_diag_error(d, MIL_ERR_UNSUPPORTED, "%s: unknown output format (use .mil, .mlmodel, .mlpackage or -)",
                          out);
  if (m->model) return mil_model_save(m->model, out, d);
  /* a program without a model around it: synthesize the description */
  mil_model *nm = NULL;
  mil_status st = mil_model_from_program(m->program, 0, &nm, d);
  m->program = NULL; /* owned by nm now (also on failure) */
  if (st == MIL_OK) st = mil_model_save(nm, out, d);
  m->model = nm;
  if (nm) m->program = mil_model_program(nm);
  return st;
}

static int parse_args(int argc, char **argv, opt_args *a) {
  for (int i = 1; i < argc; i++) {
    const char *s = argv[i];
#define NEED_VALUE(name)                                                       \
  do {                                                                         \
    if (i + 1 >= argc) return cli_usage_error("opt", "%s needs a value", name); \
  } while (0)
    if (cli_is_help(s)) {
      help();
      return -1;
    } else if (strcmp(s, "-o") == 0 || strcmp(s, "--output") == 0) {
      NEED_VALUE(s);
      a->out = argv[++i];
    } else if (strcmp(s, "--pipeline") == 0) {
      NEED_VALUE(s);
      a->pipeline = argv[++i];
    } else if (strncmp(s, "--pipeline=", 11) == 0) {
      a->pipeline = s + 11;
    } else if (strcmp(s, "--passes") == 0) {
      NEED_VALUE(s);
      a->passes = argv[++i];
    } else if (strncmp(s, "--passes=", 9) == 0) {
      a->passes = s + 9;
    } else if (strcmp(s, "--pass-option") == 0 || strncmp(s, "--pass-option=", 14) == 0) {
      const char *v = s[13] == '=' ? s + 14 : NULL;
      if (!v) {
        NEED_VALUE(s);
        v = argv[++i];
      }
      a->popts[a->n_popts++] = v;
    } else if (strcmp(s, "--compute-precision") == 0) {
      NEED_VALUE(s);
      a->precision = argv[++i];
    } else if (strncmp(s, "--compute-precision=", 20) == 0) {
      a->precision = s + 20;
    } else if (strcmp(s, "--print-after") == 0) {
      NEED_VALUE(s);
      a->print_after = argv[++i];
    } else if (strncmp(s, "--print-after=", 14) == 0) {
      a->print_after = s + 14;
    } else if (strcmp(s, "--print-after-all") == 0) {
      a->print_all = true;
    } else if (strcmp(s, "--verify-each") == 0) {
      a->verify_each = true;
    } else if (strcmp(s, "--timing") == 0) {
      a->timing = true;
    } else if (strcmp(s, "--stats") == 0) {
      a->stats = true;
    } else if (strcmp(s, "--quiet") == 0 || strcmp(s, "-q") == 0) {
      a->quiet = true;
    } else if (strcmp(s, "--skip-missing") == 0) {
      a->skip_missing = true;
    } else if (s[0] == '-' && s[1]) {
      return cli_usage_error("opt", "unknown option '%s'", s);
    } else if (!a->in) {
      a->in = s;
    } else {
      return cli_usage_error("opt", "unexpected argument '%s'", s);
    }
#undef NEED_VALUE
  }
  if (!a->in) return cli_usage_error("opt", "missing IN");
  if (a->passes && a->pipeline) return cli_usage_error("opt", "--pipeline and --passes exclude each other");
  if (a->precision && strcmp(a->precision, "fp16") != 0 && strcmp(a->precision, "fp32") != 0)
    return cli_usage_error("opt", "--compute-precision must be fp16 or fp32, got '%s'", a->precision);
  if (!a->out) a->out = "-";
  return CLI_OK;
}




/* Removes the passes that are not implemented; returns how many distinct
 * passes were removed and warns once, listing them. */
static int32_t skip_missing(mil_pipeline *pl, bool quiet) {
  int32_t n = 0;
  size_t len = 0;
  char *names = NULL;
  for (int32_t i = 0; i < mil_pipeline_n_passes(pl); i++) {
    const char *p = mil_pipeline_pass_at(pl, i);
    if (mil_pass_is_implemented(p)) continue;
    size_t add = strlen(p) + 2;
    char *nn = realloc(names, len + add + 1);
    if (nn) {
      names = nn;
      len += (size_t)snprintf(names + len, add + 1, "%s%s", n ? ", " : "", p);
    }
    n++;
    mil_pipeline_remove_pass(pl, p); /* every occurrence */
    i--;
  }
  if (n && !quiet)
    fprintf(stderr, "mil: warning: skipping %d passes that are not implemented: %s\n", (int)n, names ? names : "");
  free(names);
  return n;
}

/* Progress line while the pipeline runs: the pass being run, its number,
 * the op count and the time so far; cleared after each pass so that
 * printed programs and messages start on a clean line. */
typedef struct opt_hooks {
  opt_progress *pg;
  double t_start;
} opt_hooks;

static void before_pass(void *ud, int32_t index, int32_t n, const char *pass, int64_t ops) {
  opt_hooks *h = ud;
  opt_progress_show(h->pg, "[%d/%d] %s  (%lld ops, %.1f s)", (int)(index + 1), (int)n, pass, (long long)ops,
                    opt_now() - h->t_start);
}

static void after_pass(void *ud, const mil_pass_record *r) {
  (void)r;
  opt_progress_clear(((opt_hooks *)ud)->pg);
}

static mil_status run_pipeline(mil_pipeline *pl, mil_program *p, const opt_args *a, opt_progress *pg,
                               mil_pipeline_report *rep, mil_diag *d) {
  opt_hooks h = {pg, opt_now()};
  mil_pipeline_run_options ro = {0};
  ro.verify_each = a->verify_each;
  ro.print_after_all = a->print_all;
  ro.print_after = a->print_after;
  ro.print_file = stderr;
  ro.before_pass = before_pass;
  ro.after_pass = after_pass;
  ro.hook_ud = &h;
  mil_status st = mil_pipeline_run(pl, p, &ro, rep, d);
  opt_progress_clear(pg);
  return st;
}

int cmd_opt(int argc, char **argv) {
  double t_begin = opt_now();
  opt_args a;
  memset(&a, 0, sizeof a);
  a.popts = calloc((size_t)argc + 1, sizeof *a.popts);
  if (!a.popts) return CLI_FAIL;
  int rc = parse_args(argc, argv, &a);
  if (rc != CLI_OK) {
    free(a.popts);
    return rc < 0 ? CLI_OK : rc;
  }
  mil_diag d;
  mil_diag_init(&d);
  mil_pipeline *pl = NULL;
  cli_loaded m;
  memset(&m, 0, sizeof m);
  mil_pipeline_report rep;
  memset(&rep, 0, sizeof rep);
  opt_census before, after;
  memset(&before, 0, sizeof before);
  memset(&after, 0, sizeof after);
  opt_progress pg;
  opt_progress_init(&pg, stderr, !a.quiet);
  /* the summary: on a terminal, or asked for with --stats; never with --quiet */
  bool summary = !a.quiet && (pg.active || a.stats);
  opt_summary sum;
  memset(&sum, 0, sizeof sum);
  sum.in = a.in;
  sum.out = strcmp(a.out, "-") == 0 ? "standard output" : a.out;
  rc = CLI_FAIL;
  if (build_pipeline(&a, &pl, &d) != MIL_OK) goto out;
  sum.pipeline = mil_pipeline_name(pl);
  if (a.precision && strcmp(a.precision, "fp32") == 0) {
    mil_pipeline_remove_pass(pl, "common::add_fp16_cast");
    mil_pipeline_remove_pass(pl, "common::add_int16_cast");
  }
  for (int i = 0; i < a.n_popts; i++) {
    int r = apply_pass_option(pl, a.popts[i], &d);
    if (r != CLI_OK) {
      rc = r;
      goto out;
    }
  }
  if (a.skip_missing) sum.n_skipped = skip_missing(pl, a.quiet);

  opt_progress_show(&pg, "loading %s ...", a.in);
  double t0 = opt_now();
  mil_status lst = load_any(a.in, &m, &d);
  sum.load_s = opt_now() - t0;
  opt_progress_clear(&pg);
  if (lst != MIL_OK) goto out;
  int spec = m.model ? mil_model_spec_version(m.model) : 0;
  if (summary && opt_census_take(m.program, spec, &before)) sum.before = &before;

  t0 = opt_now();
  mil_status st = run_pipeline(pl, m.program, &a, &pg, &rep, &d);
  sum.pipeline_s = opt_now() - t0 - rep.verify_seconds;
  sum.verify_s = rep.verify_seconds;
  sum.rep = &rep;
  sum.n_passes_run = rep.n_records;
  if (!a.quiet && a.timing) print_timing(&rep);
  if (!a.quiet && a.stats) print_stats(&rep);
  if (st == MIL_OK && summary && sum.before && opt_census_take(m.program, spec, &after)) sum.after = &after;
  /* any error, even one a pass reported without failing, and a program that
   * does not validate (an op unknown in its opset, a type error) mean exit 1
   * and nothing written */
  if (st == MIL_OK && d.n_errors) st = MIL_ERR_INVALID;
  if (st == MIL_OK) st = cli_validate_program(m.program, &d);
  if (st != MIL_OK) goto out;

  /* program text on a terminal's stdout must not share a line with the progress line */
  if (strcmp(a.out, "-") != 0) opt_progress_show(&pg, "writing %s ...", sum.out);
  t0 = opt_now();
  mil_status wst = write_output(a.out, &m, &d);
  sum.save_s = opt_now() - t0;
  opt_progress_clear(&pg);
  if (wst != MIL_OK) goto out;
  sum.saved = true;
  rc = CLI_OK;
out:
  opt_progress_clear(&pg);
  if (rc != CLI_OK || (!a.quiet && d.n_warnings)) cli_print_diag(&d);
  if (summary && sum.pipeline && (sum.before || rc == CLI_OK)) {
    sum.total_s = opt_now() - t_begin;
    opt_summary_print(stderr, &sum);
  }
  opt_census_free(&before);
  opt_census_free(&after);
  mil_pipeline_report_free(&rep);
  mil_pipeline_free(pl);
  cli_unload(&m);
  mil_diag_clear(&d);
  free(a.popts);
  return rc;
}
