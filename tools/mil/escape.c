/* cli_esc: names from a model, escaped for the terminal (mil_escaped). */
#include "cli.h"

const char *cli_esc(const char *s) {
  /* a few calls may share one printf */
  static char bufs[8][512];
  static unsigned k;
  return mil_escaped(s, bufs[k++ % 8], sizeof bufs[0]);
}
