/* Loading any model the CLI accepts, and the checks `mil validate` runs. */
#include <string.h>

#include "load.h"
#include "mil/model.h"
#include "mil/onnx.h"
#include "mil/ops.h"

mil_status cli_load_model(const char *path, mil_model **out, mil_diag *d) {
  size_t n = strlen(path);
  /* an ONNX model is converted as `mil convert` does (fp16 precision) */
  bool onnx = n > 5 && strcmp(path + n - 5, ".onnx") == 0;
  return onnx ? mil_onnx_import(path, NULL, out, d) : mil_model_load(path, out, d);
}

mil_status cli_load(const char *path, cli_loaded *out, mil_diag *d) {
  memset(out, 0, sizeof *out);
  mil_model *m = NULL;
  mil_status st = cli_load_model(path, &m, d);
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
