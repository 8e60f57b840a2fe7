/* Loading any model the CLI accepts, and the checks `mil validate` runs. */
#include <string.h>

#include "cli.h"
#include "load.h"
#include "mil/model.h"
#include "mil/ops.h"

mil_status cli_load(const char *path, cli_loaded *out, mil_diag *d) {
  memset(out, 0, sizeof *out);
  mil_model *m = NULL;
  mil_status st = mil_model_load(path, &m, d);
  if (st != MIL_OK) return st;
  out->model = m;
  out->program = mil_model_program(m);
  return MIL_OK;
}

void cli_unload(cli_loaded *m) {
  if (m->model) mil_model_free(m->model);
  else mil_program_free(m->program);
  memset(m, 0, sizeof *m);
}

mil_status cli_validate_program(const mil_program *p, mil_diag *d) { return mil_program_validate(p, d); }

int cli_parse_target(const char *cmd, const char *name, int *version) {
  for (int v = MIL_IOS15; v <= MIL_IOS26; v++)
    if (name && !strcmp(name, mil_opset_target_name(v))) {
      *version = v;
      return CLI_OK;
    }
  return cli_usage_error(cmd, "--target must be one of iOS15, iOS16, iOS17, iOS18, iOS26, got '%s'",
                         name ? name : "");
}
