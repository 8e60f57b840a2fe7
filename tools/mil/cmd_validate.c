/* mil validate FILE: load, run the structural verifier (and, when the op
 * registry is built in, the type checks), report every problem. */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "load.h"

static void help(void) {
  printf("usage: mil validate [--quiet] MODEL\n\n"
         "Check that MODEL (.mil, .mlmodel or .mlpackage) is well formed: it loads,\n"
         "every name is defined once per scope and before use, nested blocks only see\n"
         "what encloses them, block outputs are defined, specializations agree.\n"
         "Prints each problem with its function, op and input; exit status 1 if any.\n"
         "Warnings (what Core ML accepts but coremltools would change) are summarized:\n"
         "at most 3 of a kind, then a count. --quiet prints errors only and no summary.\n");
}

int cmd_validate(int argc, char **argv) {
  const char *path = NULL;
  bool quiet = false;
  for (int i = 1; i < argc; i++) {
    if (cli_is_help(argv[i])) {
      help();
      return CLI_OK;
    } else if (strcmp(argv[i], "--quiet") == 0 || strcmp(argv[i], "-q") == 0) {
      quiet = true;
    } else if (argv[i][0] == '-' && argv[i][1]) {
      return cli_usage_error("validate", "unknown option '%s'", argv[i]);
    } else if (!path) {
      path = argv[i];
    } else {
      return cli_usage_error("validate", "unexpected argument '%s'", argv[i]);
    }
  }
  if (!path) return cli_usage_error("validate", "missing MODEL");
  cli_loaded m;
  mil_diag d = {0};
  if (cli_load(path, &m, &d) != MIL_OK) {
    cli_print_diag_ex(&d, !quiet);
    mil_diag_clear(&d);
    return CLI_FAIL;
  }
  size_t from = d.count;
  mil_status st = cli_validate_program(m.program, &d);
  cli_diag_locate(&d, from, path);
  cli_print_diag_ex(&d, !quiet);
  if (!quiet) {
    if (st == MIL_OK)
      printf("%s: valid (%d function%s, %lld ops)\n", path, m.program->n_functions,
             m.program->n_functions == 1 ? "" : "s", (long long)mil_program_count_ops(m.program));
    else
      printf("%s: INVALID (%zu error%s)\n", path, d.n_errors, d.n_errors == 1 ? "" : "s");
  }
  cli_unload(&m);
  mil_diag_clear(&d);
  return st == MIL_OK ? CLI_OK : CLI_FAIL;
}
