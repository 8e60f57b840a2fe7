/* mil print [--complete] [--blob-refs] FILE */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "load.h"

static void help(void) {
  printf("usage: mil print [--complete [--inline-weights]] MODEL\n\n"
         "Print MODEL (.mil, .mlmodel or .mlpackage) as MIL text.\n"
         "Default: coremltools' print(program) form, byte for byte (const ops hidden,\n"
         "small consts shown inline). --complete: the lossless form (const ops with\n"
         "values, operands by name), which `mil` reads back; consts stored in a weight\n"
         "file print as @blob(\"file\", offset) unless --inline-weights is given.\n");
}

int cmd_print(int argc, char **argv) {
  const char *path = NULL;
  mil_print_options opt = {MIL_PRINT_COREMLTOOLS, false};
  bool inline_weights = false;
  for (int i = 1; i < argc; i++) {
    if (cli_is_help(argv[i])) {
      help();
      return CLI_OK;
    } else if (strcmp(argv[i], "--complete") == 0) {
      opt.form = MIL_PRINT_COMPLETE;
    } else if (strcmp(argv[i], "--inline-weights") == 0) {
      inline_weights = true;
    } else if (argv[i][0] == '-' && argv[i][1]) {
      return cli_usage_error("print", "unknown option '%s'", argv[i]);
    } else if (!path) {
      path = argv[i];
    } else {
      return cli_usage_error("print", "unexpected argument '%s'", argv[i]);
    }
  }
  if (!path) return cli_usage_error("print", "missing MODEL");
  opt.blob_refs = opt.form == MIL_PRINT_COMPLETE && !inline_weights;
  cli_loaded m;
  mil_diag d = {0};
  if (cli_load(path, &m, &d) != MIL_OK) {
    cli_print_diag(&d);
    mil_diag_clear(&d);
    return CLI_FAIL;
  }
  mil_status st = mil_print_program_file(m.program, &opt, stdout);
  if (fflush(stdout) != 0) st = MIL_ERR_IO;
  cli_unload(&m);
  mil_diag_clear(&d);
  if (st != MIL_OK) {
    fprintf(stderr, "mil: error: writing to standard output failed\n");
    return CLI_FAIL;
  }
  return CLI_OK;
}
