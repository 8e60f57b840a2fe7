/* `mil`: the libmil command-line tool. Dispatches to subcommands. */
#include <stdarg.h>
#include <stdio.h>
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
CMD(tensor)
#undef CMD

typedef struct cmd_entry {
  const char *name;
  cli_cmd_fn *fn; /* address of the weak symbol (NULL when absent) */
  const char *summary;
} cmd_entry;

static cli_cmd_fn f_print, f_validate, f_convert, f_info, f_opt, f_passes, f_ops, f_diff, f_run, f_verify, f_tensor;

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
    {"tensor", &f_tensor, "describe or convert a tensor file (ONNX TensorProto .pb, .npy)"},
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
  f_tensor = cmd_tensor;
}

static void usage(FILE *out) {
  fprintf(out,
          "usage: mil COMMAND [ARGS...]\n"
          "       mil --help | --version\n\n"
          "Read, validate, optimize, run and write Core ML ML Program (MIL) models.\n\n"
          "commands:\n");
  for (size_t i = 0; i < N_CMDS; i++)
    if (*k_cmds[i].fn) fprintf(out, "  %-10s %s\n", k_cmds[i].name, k_cmds[i].summary);
  fprintf(out, "\nRun 'mil COMMAND --help' for a command's options.\n"
               "Exit status: 0 success, 1 invalid input or failed check, 2 usage error.\n");
}

void cli_print_diag(const mil_diag *d) {
  for (size_t i = 0; i < d->count; i++) {
    const char *sev = d->msgs[i].severity == MIL_SEV_ERROR     ? "error"
                      : d->msgs[i].severity == MIL_SEV_WARNING ? "warning"
                                                               : "note";
    fprintf(stderr, "mil: %s: %s\n", sev, d->msgs[i].text);
  }
  size_t shown = d->count;
  size_t total = d->n_errors + d->n_warnings;
  if (total > shown) fprintf(stderr, "mil: (%zu more messages not shown)\n", total - shown);
}

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
