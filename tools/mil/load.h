/* Loading any model the CLI accepts (.mil, .mlmodel, .mlpackage, and .onnx through the importer). */
#ifndef MIL_CLI_LOAD_H
#define MIL_CLI_LOAD_H

#include "mil/mil.h"
#include "mil/model.h"

typedef struct cli_loaded {
  mil_program *program; /* borrowed from model when model != NULL */
  void *model;          /* mil_model * for .mlmodel / .mlpackage */
} cli_loaded;

/* Loads path by its extension. On failure d holds the reason. */
/* mil_model_load, or mil_onnx_import (default options) for a .onnx path. */
mil_status cli_load_model(const char *path, mil_model **out, mil_diag *d);
mil_status cli_load(const char *path, cli_loaded *out, mil_diag *d);
void cli_unload(cli_loaded *m);
/* Every check `mil validate` runs on a loaded program. */
mil_status cli_validate_program(const mil_program *p, mil_diag *d);

#endif
