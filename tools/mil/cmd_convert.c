/* mil convert IN OUT: rewrite a model in the format OUT's extension names. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "mil/model.h"

static void help(void) {
  printf("usage: mil convert [--spec-version N] IN OUT\n\n"
         "Read model IN (.mlpackage, .mlmodel or .mil) and write it to OUT, in the\n"
         "format OUT's extension names:\n"
         "  .mlpackage  a Core ML package (Manifest.json, model.mlmodel, weights/weight.bin)\n"
         "  .mlmodel    the bare Model protobuf; large consts go to a weight file of\n"
         "              its own, weights/<name>.<16 hex>.bin next to it (fresh on each\n"
         "              save), where coremltools' MLModel(spec, weights_dir=...) and\n"
         "              `mil` look for them; not inside a .mlpackage\n"
         "  .mil        MIL text in the complete form, every const value in full\n"
         "Consts with at least 10 elements of a weight-file dtype go to weight.bin,\n"
         "as coremltools does. The model description is kept where it still fits the\n"
         "program and synthesized otherwise (a .mil input has none). OUT is replaced\n"
         "atomically (a .mlmodel with its weight file as a pair): a crash or Ctrl-C\n"
         "at any moment leaves the old OUT or the new one, and no temporaries.\n\n"
         "options:\n"
         "  --spec-version N  write specification version N (6..10); default: keep\n"
         "                    the input's (for .mil: the one its opset implies)\n");
}

int cmd_convert(int argc, char **argv) {
  const char *in = NULL, *out = NULL;
  int spec = 0;
  for (int i = 1; i < argc; i++) {
    if (cli_is_help(argv[i])) {
      help();
      return CLI_OK;
    } else if (strcmp(argv[i], "--spec-version") == 0) {
      if (i + 1 >= argc) return cli_usage_error("convert", "--spec-version needs a value");
      char *end;
      long v = strtol(argv[++i], &end, 10);
      if (*end || v < MIL_SPEC_VERSION_MIN || v > MIL_SPEC_VERSION_MAX)
        return cli_usage_error("convert", "--spec-version must be %d..%d, got '%s'", MIL_SPEC_VERSION_MIN,
                               MIL_SPEC_VERSION_MAX, argv[i]);
      spec = (int)v;
    } else if (argv[i][0] == '-' && argv[i][1]) {
      return cli_usage_error("convert", "unknown option '%s'", argv[i]);
    } else if (!in) {
      in = argv[i];
    } else if (!out) {
      out = argv[i];
    } else {
      return cli_usage_error("convert", "unexpected argument '%s'", argv[i]);
    }
  }
  if (!in || !out) return cli_usage_error("convert", "expected IN and OUT");
  mil_diag d;
  mil_diag_init(&d);
  mil_model *m = NULL;
  mil_status st = mil_model_load(in, &m, &d);
  if (st == MIL_OK && spec) st = mil_model_set_spec_version(m, spec);
  if (st == MIL_OK) st = mil_model_save(m, out, &d);
  int rc = CLI_OK;
  if (st != MIL_OK) {
    cli_print_diag(&d);
    if (d.n_errors == 0) fprintf(stderr, "mil: error: convert failed: %s\n", mil_status_str(st));
    rc = CLI_FAIL;
  }
  mil_model_free(m);
  mil_diag_clear(&d);
  return rc;
}
