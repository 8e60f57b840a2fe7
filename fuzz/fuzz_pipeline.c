/* Fuzz target: the input bytes are MIL text; a program that parses and
 * validates goes through coremltools' DEFAULT pass pipeline. The pipeline
 * must succeed or fail with a message; a program it accepts must still
 * pass the structural check (mil_program_verify). Any crash, sanitizer
 * report or hang is a bug. */
#include <string.h>

#include "fuzz_mil.h"
#include "mil/mil.h"
#include "mil/ops.h"
#include "mil/passes.h"
#include "mil/text.h"

static void die(const char *what, const char *detail) { fuzz_die("fuzz_pipeline", what, detail); }

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > 8192) return 0; /* small programs: many executions */
  mil_program *p = fuzz_parse(data, size, true);
  if (!p) return 0;
  mil_diag d;
  mil_diag_init(&d);
  mil_pipeline *pl = NULL;
  if (mil_pipeline_new("default", &pl, &d) != MIL_OK) die("no default pipeline", mil_diag_first_error(&d));
  mil_status st = mil_pipeline_run(pl, p, NULL, NULL, &d);
  if (st != MIL_OK && !d.n_errors) die("pipeline failed without a message", mil_status_str(st));
  if (st == MIL_OK) {
    mil_diag_clear(&d);
    if (mil_program_verify(p, &d) != MIL_OK) die("pipeline output is malformed", mil_diag_first_error(&d));
  }
  mil_pipeline_free(pl);
  mil_diag_clear(&d);
  mil_program_free(p);
  return 0;
}
