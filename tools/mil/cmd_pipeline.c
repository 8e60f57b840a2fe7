/* mil pipeline: ML Programs chained into one Pipeline model (coremltools'
 * make_pipeline; mil/utils.h mil_utils_make_pipeline). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "mil/model.h"
#include "mil/utils.h"

static void help(void) {
  printf("usage: mil pipeline MODEL MODEL... -o OUT.mlpackage\n\n"
         "Writes the models, in order, as one Pipeline model, as coremltools' make_pipeline: its\n"
         "inputs are the models' inputs no earlier model produces, its outputs the models'\n"
         "outputs no later model takes; model i's weights go to weights/<i>-weight.bin.\n"
         "`mil run OUT.mlpackage` runs the stages in order.\n\n"
         "  -o OUT   the pipeline (.mlpackage), written atomically\n\n"
         "Example: mil split big.mlpackage -o chunks/ && mil pipeline chunks/big_chunk1.mlpackage \\\n"
         "             chunks/big_chunk2.mlpackage -o chunks/big_chunked_pipeline.mlpackage\n");
}

int cmd_pipeline(int argc, char **argv) {
  const char *out = NULL;
  const char **paths = calloc((size_t)argc + 1, sizeof *paths);
  int n = 0, rc = CLI_FAIL;
  if (!paths) return CLI_FAIL;
  for (int i = 1; i < argc; i++) {
    const char *s = argv[i];
    if (cli_is_help(s)) {
      help();
      rc = CLI_OK;
      goto done;
    } else if (!strcmp(s, "-o")) {
      if (i + 1 >= argc) {
        rc = cli_usage_error("pipeline", "-o needs a value");
        goto done;
      }
      out = argv[++i];
    } else if (s[0] == '-' && s[1]) {
      rc = cli_usage_error("pipeline", "unknown option '%s'", s);
      goto done;
    } else {
      paths[n++] = s;
    }
  }
  if (n < 2 || !out) {
    rc = cli_usage_error("pipeline", "expected two or more MODELs and -o OUT");
    goto done;
  }
  mil_diag d;
  mil_diag_init(&d);
  mil_save_cleanup_on_signals();
  if (mil_utils_make_pipeline(paths, n, out, &d) == MIL_OK) {
    printf("wrote %s: a pipeline of %d models\n", cli_esc(out), n);
    rc = CLI_OK;
  } else {
    cli_print_diag(&d);
  }
  mil_diag_clear(&d);
done:
  free(paths);
  return rc;
}
