/* Loading any model the CLI accepts, and the checks `mil validate` runs. */
#include <string.h>

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
