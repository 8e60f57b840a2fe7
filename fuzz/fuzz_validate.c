/* Fuzz target: the input bytes are MIL text; a program that parses is
 * validated (structure, then type and value inference of every op, folding
 * bounded by MIL_FOLD_MAX_BYTES). Validation must return a status that
 * agrees with its messages. Any crash, sanitizer report, hang or run-away
 * allocation (libFuzzer's -rss_limit_mb) is a bug. */
#include "fuzz_mil.h"

static void die(const char *what, const char *detail) { fuzz_die("fuzz_validate", what, detail); }

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  mil_program *p = fuzz_parse(data, size, false);
  if (!p) return 0;
  mil_diag d;
  mil_diag_init(&d);
  mil_status st = mil_program_validate(p, &d);
  if (st != MIL_OK && !d.n_errors) die("validation failed without a message", mil_status_str(st));
  if (st == MIL_OK && d.n_errors) die("validation passed with an error", mil_diag_first_error(&d));
  mil_diag_clear(&d);
  mil_program_free(p);
  return 0;
}
