#include <string.h>

#include "load.h"

mil_status cli_load(const char *path, cli_loaded *out, mil_diag *d) {
  memset(out, 0, sizeof *out);
  return mil_parse_file(path, &out->program, d);
}

void cli_unload(cli_loaded *m) {
  mil_program_free(m->program);
  memset(m, 0, sizeof *m);
}

mil_status cli_validate_program(const mil_program *p, mil_diag *d) { return mil_program_verify(p, d); }
