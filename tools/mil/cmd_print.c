/* mil print [--complete] [--blob-refs] FILE */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "load.h"

static void help(void) {
  printf("usage: mil print [--complete [--inline-weights]] [--function NAME] MODEL\n\n"
         "Print MODEL (.mil, .mlmodel or .mlpackage) as MIL text.\n"
         "Default: coremltools' print(program) form, byte for byte (const ops hidden,\n"
         "small consts shown inline). --complete: the lossless form (const ops with\n"
         "values, operands by name), which `mil` reads back; consts stored in a weight\n"
         "file print as @blob(\"/absolute/path/weight.bin\", offset), which resolves\n"
         "wherever the text is saved, unless --inline-weights is given.\n"
         "--function NAME prints that function only.\n");
}

int cmd_print(int argc, char **argv) {
  const char *path = NULL;
  mil_print_options opt = {MIL_PRINT_COREMLTOOLS, false};
  bool inline_weights = false;
  const char *function = NULL;
  for (int i = 1; i < argc; i++) {
    if (cli_is_help(argv[i])) {
      help();
      return CLI_OK;
    } else if (strcmp(argv[i], "--complete") == 0) {
      opt.form = MIL_PRINT_COMPLETE;
    } else if (strcmp(argv[i], "--inline-weights") == 0) {
      inline_weights = true;
    } else if (strcmp(argv[i], "--function") == 0) {
      if (i + 1 >= argc) return cli_usage_error("print", "--function needs a value");
      if (function) return cli_usage_error("print", "--function given twice");
      function = argv[++i];
    } else if (argv[i][0] == '-' && argv[i][1]) {
      return cli_usage_error("print", "unknown option '%s'", argv[i]);
    } else if (!path) {
      path = argv[i];
    } else {
      return cli_usage_error("print", "unexpected argument '%s'", argv[i]);
    }
  }
  if (!path) return cli_usage_error("print", "missing MODEL");
  if (inline_weights && opt.form != MIL_PRINT_COMPLETE)
    return cli_usage_error("print", "--inline-weights applies to --complete only");
  opt.blob_refs = false;
  cli_loaded m;
  mil_diag d = {0};
  if (cli_load(path, &m, &d) != MIL_OK) {
    cli_print_diag(&d);
    mil_diag_clear(&d);
    return CLI_FAIL;
  }
  cli_blob_paths bp = {.model_path = path, .m = &m};
  mil_print_extra x = {function, opt.form == MIL_PRINT_COMPLETE && !inline_weights ? cli_blob_abs_ref : NULL, &bp};
  mil_status st = mil_print_program_file_with(m.program, &opt, &x, stdout);
  if (st == MIL_ERR_NOT_FOUND) {
    fprintf(stderr, "mil: error: %s has no function '%s'; its functions:", path, function);
    for (int32_t i = 0; i < m.program->n_functions; i++) fprintf(stderr, " %s", m.program->functions[i]->name);
    fprintf(stderr, "\n");
    cli_blob_paths_free(&bp);
    cli_unload(&m);
    mil_diag_clear(&d);
    return CLI_FAIL;
  }
  if (fflush(stdout) != 0) st = MIL_ERR_IO;
  cli_blob_paths_free(&bp);
  cli_unload(&m);
  mil_diag_clear(&d);
  if (st != MIL_OK) {
    fprintf(stderr, "mil: error: writing to standard output failed\n");
    return CLI_FAIL;
  }
  return CLI_OK;
}
