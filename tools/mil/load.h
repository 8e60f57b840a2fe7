/* Loading any model the CLI accepts (.mil, .mlmodel, .mlpackage). */
#ifndef MIL_CLI_LOAD_H
#define MIL_CLI_LOAD_H

#include "mil/mil.h"
#include "mil/model.h"

typedef struct cli_loaded {
  mil_program *program; /* borrowed from model when model != NULL */
  void *model;          /* mil_model * for .mlmodel / .mlpackage */
} cli_loaded;

/* Loads path by its extension. On failure d holds the reason. */
mil_status cli_load(const char *path, cli_loaded *out, mil_diag *d);
void cli_unload(cli_loaded *m);
/* Every check `mil validate` runs on a loaded program. */
mil_status cli_validate_program(const mil_program *p, mil_diag *d);

/* cli_load, except that .mil text is parsed directly (any opset). */
mil_status cli_load_any(const char *path, cli_loaded *out, mil_diag *d);
/* Writes m to `out` by its extension (.mil complete-form text, .mlmodel,
 * .mlpackage; "-" for text on standard output), atomically through a
 * temporary sibling (cmd_opt.c). */
mil_status cli_write_output(const char *out, cli_loaded *m, mil_diag *d);

#endif
