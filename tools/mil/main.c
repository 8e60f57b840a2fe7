/* `mil`: the libmil command-line tool. Dispatches to subcommands. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "mil/model.h"

/* Subcommands are defined in cmd_*.c. Weak references let the table list
 * commands whose files are part of the build and skip the others. */
#define CMD(name) int cmd_##name(int argc, char **argv) __attribute__((weak));
CMD(print)
CMD(validate)
CMD(convert)
CMD(info)
CMD(opt)
CMD(passes)
CMD(ops)
CMD(diff)
CMD(run)
CMD(verify)
CMD(graph)
CMD(tensor)
CMD(compress)
CMD(merge)
CMD(edit)
CMD(materialize)
CMD(split)
CMD(pipeline)
#undef CMD

typedef struct cmd_entry {
  const char *name;
  cli_cmd_fn *fn; /* address of the weak symbol (NULL when absent) */
  const char *summary;
} cmd_entry;

static cli_cmd_fn f_print, f_validate, f_convert, f_info, f_opt, f_passes, f_ops, f_diff, f_run, f_verify, f_graph, f_tensor,
    f_compress, f_merge, f_edit, f_materialize, f_split, f_pipeline;

static const cmd_entry k_cmds[] = {
    {"print", &f_print, "print a model as MIL text (coremltools form, or --complete)"},
    {"validate", &f_validate, "check that a model is well formed"},
    {"convert", &f_convert, "convert between .mil, .mlmodel and .mlpackage"},
    {"info", &f_info, "summarize a model: spec version, I/O, ops, weights"},
    {"opt", &f_opt, "optimize a model with a pass pipeline"},
    {"passes", &f_passes, "list graph passes, their options, and the pipelines"},
    {"ops", &f_ops, "list the ops of an opset with their inputs and outputs"},
    {"diff", &f_diff, "tell whether two programs are equivalent"},
    {"run", &f_run, "run a model on the CPU reference interpreter"},
    {"verify", &f_verify, "run two models on the same inputs and compare outputs"},
    {"graph", &f_graph, "draw a program with Graphviz (.svg, .png, .pdf, .dot)"},
    {"tensor", &f_tensor, "describe or convert a tensor file (ONNX TensorProto .pb, .npy)"},
    {"compress", &f_compress, "quantize, palettize, prune or decompress the weights of a model"},
    {"merge", &f_merge, "merge functions of several models into one multifunction model"},
    {"edit", &f_edit, "rename inputs/outputs, switch fp32/fp16 I/O, set metadata"},
    {"materialize", &f_materialize, "fixed-shape functions of a flexible-shape model"},
    {"split", &f_split, "cut a model in two chunks of about equal weight size"},
    {"pipeline", &f_pipeline, "chain models into one Pipeline model"},
};
#define N_CMDS (sizeof k_cmds / sizeof k_cmds[0])

static void bind_commands(void) {
  f_print = cmd_print;
  f_validate = cmd_validate;
  f_convert = cmd_convert;
  f_info = cmd_info;
  f_opt = cmd_opt;
  f_passes = cmd_passes;
  f_ops = cmd_ops;
  f_diff = cmd_diff;
  f_run = cmd_run;
  f_verify = cmd_verify;
  f_graph = cmd_graph;
  f_tensor = cmd_tensor;
  f_compress = cmd_compress;
  f_merge = cmd_merge;
  f_edit = cmd_edit;
  f_materialize = cmd_materialize;
  f_split = cmd_split;
  f_pipeline = cmd_pipeline;
}

static void usage(FILE *out) {
  fprintf(out,
          "usage: mil COMMAND [ARGS...]\n"
          "       mil --help | --version\n\n"
          "Read, validate, optimize, run and write Core ML ML Program (MIL) models.\n\n"
          "commands:\n");
  for (size_t i = 0; i < N_CMDS; i++)
    if (*k_cmds[i].fn) fprintf(out, "  %-12s %s\n", k_cmds[i].name, k_cmds[i].summary);
  fprintf(out, "\nRun 'mil COMMAND --help' for a command's options.\n"
               "Exit status: 0 success, 1 invalid input or failed check, 2 usage error.\n");
}

/* A message with its particulars blanked: quoted names, %vars and numbers.
 * Messages with the same key are repeats of one finding. */
static char *diag_key(const char *t) {
  size_t n = strlen(t);
  char *k = malloc(n + 1), *o = k;
  if (!k) return NULL;
  while (*t) {
    if (*t == '\'') {
      const char *e = strchr(t + 1, '\'');
      if (e) {
        *o++ = '\'';
        t = e;
      }
      *o++ = *t++;
    } else if (*t == '%') {
      *o++ = *t++;
      while (*t && *t != ' ' && *t != ',' && *t != ')' && *t != ':') t++;
    } else if (*t >= '0' && *t <= '9') {
      *o++ = '#';
      while (*t >= '0' && *t <= '9') t++;
    } else {
      *o++ = *t++;
    }
  }
  *o = 0;
  return k;
}

#define DIAG_SHOW_PER_KIND 3 /* warnings of one kind shown before the "and N more" line */

void cli_print_diag_ex(const mil_diag *d, bool warnings) {
  char **keys = calloc(d->count ? d->count : 1, sizeof *keys);
  for (size_t i = 0; i < d->count; i++) {
    const mil_diag_msg *m = &d->msgs[i];
    bool err = m->severity == MIL_SEV_ERROR;
    if (!err && !warnings) continue;
    const char *sev = err ? "error" : m->severity == MIL_SEV_WARNING ? "warning" : "note";
    if (err || !keys) {
      fprintf(stderr, "mil: %s: %s\n", sev, m->text);
      continue;
    }
    /* a warning: once per text, DIAG_SHOW_PER_KIND per kind, then a count */
    keys[i] = diag_key(m->text);
    size_t same_kind = 0;
    bool repeat = false;
    for (size_t k = 0; k < i && !repeat; k++) {
      if (!keys[k] || d->msgs[k].severity != m->severity) continue;
      repeat = strcmp(d->msgs[k].text, m->text) == 0;
      if (keys[i] && strcmp(keys[k], keys[i]) == 0) same_kind++;
    }
    if (repeat || same_kind >= DIAG_SHOW_PER_KIND) continue;
    fprintf(stderr, "mil: %s: %s\n", sev, m->text);
    if (same_kind + 1 < DIAG_SHOW_PER_KIND) continue;
    /* the last one shown of its kind: count the rest (distinct texts) */
    size_t more = 0;
    for (size_t k = i + 1; k < d->count; k++) {
      if (d->msgs[k].severity != m->severity) continue;
      char *kk = diag_key(d->msgs[k].text);
      bool like = kk && keys[i] && strcmp(kk, keys[i]) == 0;
      free(kk);
      if (!like) continue;
      bool seen = false;
      for (size_t j = 0; j < k && !seen; j++) seen = strcmp(d->msgs[j].text, d->msgs[k].text) == 0;
      more += !seen;
    }
    if (more) fprintf(stderr, "mil: %s: ... and %zu more like it\n", sev, more);
  }
  for (size_t i = 0; keys && i < d->count; i++) free(keys[i]);
  free(keys);
  size_t shown = d->count;
  size_t total = warnings ? d->n_errors + d->n_warnings : d->n_errors;
  if (total > shown) fprintf(stderr, "mil: (%zu more messages not stored)\n", total - shown);
}

void cli_print_diag(const mil_diag *d) { cli_print_diag_ex(d, true); }

bool cli_is_help(const char *arg) { return strcmp(arg, "-h") == 0 || strcmp(arg, "--help") == 0; }

int cli_usage_error(const char *cmd, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "mil %s: ", cmd);
  vfprintf(stderr, fmt, ap);
  fprintf(stderr, "\nTry 'mil %s --help'.\n", cmd);
  va_end(ap);
  return CLI_USAGE;
}

int main(int argc, char **argv) {
  bind_commands();
  mil_save_cleanup_on_signals(); /* an interrupted save leaves no temporaries */
  if (argc < 2) {
    usage(stderr);
    return CLI_USAGE;
  }
  const char *c = argv[1];
  if (cli_is_help(c)) {
    usage(stdout);
    return CLI_OK;
  }
  if (strcmp(c, "--version") == 0 || strcmp(c, "-V") == 0) {
    printf("mil %s (libmil %s)\n", MIL_VERSION_STRING, mil_version());
    return CLI_OK;
  }
  for (size_t i = 0; i < N_CMDS; i++)
    if (strcmp(c, k_cmds[i].name) == 0 && *k_cmds[i].fn) return (*k_cmds[i].fn)(argc - 1, argv + 1);
  fprintf(stderr, "mil: unknown command '%s'\nTry 'mil --help'.\n", c);
  return CLI_USAGE;
}
