/* Fuzz target: the input bytes are MIL text; a program that parses and
 * validates goes through coremltools' DEFAULT pass pipeline. The pipeline
 * must succeed or fail with a message; a program it accepts must still
 * pass the structural check (mil_program_verify). Any crash, sanitizer
 * report or hang is a bug. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mil/mil.h"
#include "mil/ops.h"
#include "mil/passes.h"
#include "mil/text.h"

static void die(const char *what, const char *detail) {
  fprintf(stderr, "fuzz_pipeline: %s: %s\n", what, detail ? detail : "");
  abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > 8192) return 0; /* small programs: many executions */
  mil_diag d;
  mil_diag_init(&d);
  mil_program *p = NULL;
  mil_parse_options opt = {.filename = "fuzz.mil", .base_dir = "/nonexistent-mil-fuzz"};
  if (mil_parse_program((const char *)data, size, &opt, &p, &d) != MIL_OK || mil_program_validate(p, &d) != MIL_OK) {
    mil_program_free(p);
    mil_diag_clear(&d);
    return 0;
  }
  mil_diag_clear(&d);
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
