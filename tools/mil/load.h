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
/* --target NAME of `mil convert` / `mil opt`: "iOS15".."iOS18" or "iOS26"
 * (the ML Program targets, as ct.convert's minimum_deployment_target) into
 * *version (MIL_IOS15..). A usage error (CLI_USAGE, the valid choices
 * listed) otherwise; CLI_OK on success. */
int cli_parse_target(const char *cmd, const char *name, int *version);
/* Every check `mil validate` runs on a loaded program. */
mil_status cli_validate_program(const mil_program *p, mil_diag *d);

#endif
