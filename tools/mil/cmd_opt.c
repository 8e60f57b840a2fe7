/* mil opt IN [-o OUT] [--pipeline NAME | --passes P1,P2] [options]:
 * run a pass pipeline over a model, like coremltools'
 * PassPipelineManager.apply_pipeline. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "load.h"
#include "mil/model.h"
#include "mil/ops.h"
#include "mil/passes.h"
#include "mil/text.h"
#include "opt_summary.h"

static void help(void) {
  printf("usage: mil opt IN -o OUT [--pipeline NAME | --passes P1,P2,...] [options]\n\n"
         "Optimize model IN (.mil, .mlmodel or .mlpackage) with a pass pipeline and write\n"
         "the result to OUT (.mil, .mlmodel, .mlpackage, or - for complete-form MIL text\n"
         "on standard output; -o is required). Pass and pipeline names are coremltools';\n"
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
         "  --inline-weights         .mil or - output: every const value in the text (default:\n"
         "                           weights in OUT's weight file, e.g. net.weight.bin beside\n"
         "                           net.mil, or for -, references to the input's weight file)\n"
         "  --target iOS15..iOS18    retarget the program to that opset first (also iOS26),\n"
         "                           as ct.convert(minimum_deployment_target=...): every op\n"
         "                           must exist there; needed to write a CoreML3/CoreML4\n"
         "                           program as .mlpackage/.mlmodel\n"
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
  int target; /* --target: opset version to retarget to, or 0 */
  bool verify_each, print_all, timing, stats, quiet, skip_missing, inline_weights;
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
  /* an unknown pass or key, or a value of the wrong type, is a bad option value */
  return st == MIL_OK ? CLI_OK : st == MIL_ERR_NOMEM ? CLI_FAIL : CLI_USAGE;
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

/* True when the comma-separated list holds a non-blank item. */
static bool has_name(const char *list) {
  for (; *list; list++)
    if (*list != ',' && *list != ' ') return true;
  return false;
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
      if (a->out) return cli_usage_error("opt", "%s given twice ('%s', then '%s')", s, a->out, argv[i + 1]);
      a->out = argv[++i];
    } else if (strcmp(s, "--pipeline") == 0 || strncmp(s, "--pipeline=", 11) == 0) {
      if (s[10] != '=') NEED_VALUE(s);
      if (a->pipeline) return cli_usage_error("opt", "--pipeline given twice");
      a->pipeline = s[10] == '=' ? s + 11 : argv[++i];
    } else if (strcmp(s, "--passes") == 0 || strncmp(s, "--passes=", 9) == 0) {
      if (s[8] != '=') NEED_VALUE(s);
      if (a->passes) return cli_usage_error("opt", "--passes given twice");
      a->passes = s[8] == '=' ? s + 9 : argv[++i];
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
    } else if (strcmp(s, "--inline-weights") == 0) {
      a->inline_weights = true;
    } else if (strcmp(s, "--target") == 0 || strncmp(s, "--target=", 9) == 0) {
      const char *v = s[8] == '=' ? s + 9 : NULL;
      if (!v) {
        NEED_VALUE(s);
        v = argv[++i];
      }
      int r = cli_parse_target("opt", v, &a->target);
      if (r != CLI_OK) return r;
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
  if (!a->out) return cli_usage_error("opt", "missing -o OUT (.mil, .mlmodel, .mlpackage, or - for standard output)");
  if (!cli_output_format_ok(a->out, true))
    return cli_usage_error("opt", "-o %s: unknown output format; choose one of .mil, .mlmodel, .mlpackage, -", a->out);
  if (a->passes && !has_name(a->passes))
    return cli_usage_error("opt", "--passes names no pass (give P1,P2,...; `mil passes` lists them)");
  if (a->print_after && !has_name(a->print_after))
    return cli_usage_error("opt", "--print-after names no pass");
  return CLI_OK;
}




/* Every name of --print-after must be a pass of the pipeline (with or
 * without "common::"); otherwise a usage error listing the pipeline's passes. */
static int check_print_after(const mil_pipeline *pl, const char *list) {
  char *copy = strdup(list);
  if (!copy) return CLI_FAIL;
  int rc = CLI_OK;
  for (char *save = NULL, *t = strtok_r(copy, ",", &save); t && rc == CLI_OK; t = strtok_r(NULL, ",", &save)) {
    while (*t == ' ') t++;
    char *e = t + strlen(t);
    while (e > t && e[-1] == ' ') *--e = 0;
    if (!*t) continue;
    const mil_pass_def *def = mil_pass_lookup(t);
    bool found = false;
    for (int32_t i = 0; def && !found && i < mil_pipeline_n_passes(pl); i++)
      found = strcmp(mil_pipeline_pass_at(pl, i), def->name) == 0;
    if (found) continue;
    fprintf(stderr, "mil opt: --print-after: %s '%s'; the pipeline '%s' runs:", def ? "the pipeline does not run" : "no pass",
            t, mil_pipeline_name(pl));
    for (int32_t i = 0; i < mil_pipeline_n_passes(pl); i++) {
      const char *pi = mil_pipeline_pass_at(pl, i);
      int32_t k = 0;
      while (k < i && strcmp(mil_pipeline_pass_at(pl, k), pi) != 0) k++;
      if (k == i) fprintf(stderr, "%s %s", i ? "," : "", pi); /* each pass once */
    }
    fprintf(stderr, "\nTry 'mil opt --help'.\n");
    rc = CLI_USAGE;
  }
  free(copy);
  return rc;
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

/* The observers `mil opt` installs on the pipeline run, in this order:
 * the progress line (the pass being run, its number, the op count and the
 * time so far; cleared after each pass so that printed programs and
 * messages start on a clean line), --verify-each (the library's verifier,
 * timed here) and --print-after / --print-after-all. */
typedef struct opt_hooks {
  opt_progress *pg;
  double t_start;
  mil_pass_verifier ver;
  mil_pass_observer ver_obs;
  double verify_s;
  bool print_all;
  const char *print_after;
} opt_hooks;

static void progress_before(void *ud, const mil_pipeline *pl, int32_t index, int32_t n, const char *pass,
                            mil_program *p, int64_t ops) {
  (void)pl, (void)p;
  opt_hooks *h = ud;
  opt_progress_show(h->pg, "[%d/%d] %s  (%lld ops, %.1f s)", (int)(index + 1), (int)n, pass, (long long)ops,
                    opt_now() - h->t_start);
}

static mil_status progress_after(void *ud, const mil_pipeline *pl, const mil_pass_record *r, mil_program *p,
                                 mil_diag *d) {
  (void)pl, (void)r, (void)p, (void)d;
  opt_progress_clear(((opt_hooks *)ud)->pg);
  return MIL_OK;
}

static void verify_before(void *ud, const mil_pipeline *pl, int32_t index, int32_t n, const char *pass,
                          mil_program *p, int64_t ops) {
  opt_hooks *h = ud;
  h->ver_obs.before(h->ver_obs.ud, pl, index, n, pass, p, ops);
}

static mil_status verify_after(void *ud, const mil_pipeline *pl, const mil_pass_record *r, mil_program *p,
                               mil_diag *d) {
  opt_hooks *h = ud;
  double t0 = opt_now();
  mil_status st = h->ver_obs.after(h->ver_obs.ud, pl, r, p, d);
  h->verify_s += opt_now() - t0;
  return st;
}

/* `name` (a full pass name) is listed in the comma-separated list, with or
 * without "common::". */
static bool in_name_list(const char *list, const char *name) {
  if (!list) return false;
  const char *p = list;
  while (*p) {
    const char *c = strchr(p, ',');
    size_t n = c ? (size_t)(c - p) : strlen(p);
    char item[256];
    if (n < sizeof item) {
      memcpy(item, p, n);
      item[n] = 0;
      char *s = item;
      while (isspace((unsigned char)*s)) s++;
      char *e = s + strlen(s);
      while (e > s && isspace((unsigned char)e[-1])) *--e = 0;
      if (*s && (strcmp(s, name) == 0 || (!strstr(s, "::") && strncmp(name, "common::", 8) == 0 &&
                                           strcmp(name + 8, s) == 0)))
        return true;
    }
    if (!c) break;
    p = c + 1;
  }
  return false;
}

static mil_status print_after(void *ud, const mil_pipeline *pl, const mil_pass_record *r, mil_program *p,
                              mil_diag *d) {
  (void)pl;
  opt_hooks *h = ud;
  if (!h->print_all && !in_name_list(h->print_after, r->pass)) return MIL_OK;
  mil_print_options popt = {MIL_PRINT_COMPLETE, true};
  if (fprintf(stderr, "# after pass #%d %s (%lld changes, %lld ops)\n", r->index, r->pass, (long long)r->changes,
              (long long)r->ops_after) < 0 ||
      mil_print_program_file(p, &popt, stderr) != MIL_OK)
    return mil_diag_error(d, MIL_ERR_IO, "printing the program after pass '%s' failed", r->pass);
  return MIL_OK;
}

static mil_status run_pipeline(mil_pipeline *pl, mil_program *p, const opt_args *a, opt_progress *pg,
                               mil_pipeline_report *rep, mil_diag *d) {
  opt_hooks h;
  memset(&h, 0, sizeof h);
  h.pg = pg;
  h.t_start = opt_now();
  h.ver_obs = mil_pass_verifier_observer(&h.ver);
  h.print_all = a->print_all;
  h.print_after = a->print_after;
  mil_pass_observer obs[3];
  int32_t n = 0;
  obs[n++] = (mil_pass_observer){progress_before, progress_after, &h};
  if (a->verify_each) obs[n++] = (mil_pass_observer){verify_before, verify_after, &h};
  if (a->print_all || a->print_after) obs[n++] = (mil_pass_observer){NULL, print_after, &h};
  mil_pipeline_run_options ro = {obs, n};
  mil_status st = mil_pipeline_run(pl, p, &ro, rep, d);
  rep->verify_seconds = h.verify_s;
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
  size_t loc_from = (size_t)-1; /* first message to locate in the input file */
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
  mil_status bst = build_pipeline(&a, &pl, &d);
  if (bst != MIL_OK) {
    /* an unknown pipeline or pass name is a bad option value (d lists the choices) */
    if (bst == MIL_ERR_NOT_FOUND) rc = CLI_USAGE;
    goto out;
  }
  if (a.print_after && (rc = check_print_after(pl, a.print_after)) != CLI_OK) goto out;
  rc = CLI_FAIL;
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
  mil_status lst = cli_load_any(a.in, &m, &d);
  sum.load_s = opt_now() - t0;
  opt_progress_clear(&pg);
  if (lst != MIL_OK) goto out;
  /* retargeted before the pipeline: passes see the target's opset, as in
   * ct.convert(minimum_deployment_target=...) */
  if (a.target && mil_program_retarget(m.program, a.target, &d) != MIL_OK) goto out;
  if (a.target && m.model && mil_model_set_spec_version(m.model, a.target) != MIL_OK) goto out;
  int spec = m.model ? mil_model_spec_version(m.model) : 0;
  if (summary && opt_census_take(m.program, spec, &before)) sum.before = &before;

  t0 = opt_now();
  loc_from = d.count;
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
  mil_status wst = cli_write_output(a.out, a.in, &m, a.inline_weights, &d);
  sum.save_s = opt_now() - t0;
  opt_progress_clear(&pg);
  if (wst != MIL_OK) goto out;
  sum.saved = true;
  rc = CLI_OK;
out:
  opt_progress_clear(&pg);
  /* messages of the pipeline and the final validation name the file (and
   * line:column in a .mil), so repeats of one finding print once */
  if (loc_from != (size_t)-1) cli_diag_locate(&d, loc_from, a.in);
  cli_print_diag_ex(&d, !a.quiet);
  if (summary && sum.pipeline && (sum.before || rc == CLI_OK)) {
    sum.total_s = opt_now() - t_begin;
    opt_summary_print(stderr, &sum);
  }
  if (rc == CLI_OK && !a.quiet)
    opt_print_written(stderr, a.out, m.program, m.model ? mil_model_spec_version(m.model) : 0, opt_now() - t_begin);
  opt_census_free(&before);
  opt_census_free(&after);
  mil_pipeline_report_free(&rep);
  mil_pipeline_free(pl);
  cli_unload(&m);
  mil_diag_clear(&d);
  free(a.popts);
  return rc;
}
