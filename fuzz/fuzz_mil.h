/* Shared helpers of the text-driven fuzz targets: a failure report that
 * aborts (libFuzzer keeps the input), and parsing the input as MIL text
 * with @blob paths pointed at a directory that does not exist. */
#ifndef MIL_FUZZ_MIL_H
#define MIL_FUZZ_MIL_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "mil/mil.h"
#include "mil/ops.h"
#include "mil/text.h"

static inline void fuzz_die(const char *target, const char *what, const char *detail) {
  fprintf(stderr, "%s: %s: %s\n", target, what, detail ? detail : "");
  abort();
}

/* The input parsed and, when `validate`, validated; NULL otherwise. */
static inline mil_program *fuzz_parse(const uint8_t *data, size_t size, bool validate) {
  mil_diag d;
  mil_diag_init(&d);
  mil_program *p = NULL;
  mil_parse_options opt = {.filename = "fuzz.mil", .base_dir = "/nonexistent-mil-fuzz"};
  if (mil_parse_program((const char *)data, size, &opt, &p, &d) != MIL_OK ||
      (validate && mil_program_validate(p, &d) != MIL_OK)) {
    mil_program_free(p);
    p = NULL;
  }
  mil_diag_clear(&d);
  return p;
}

#endif
