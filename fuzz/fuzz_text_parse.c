/* Fuzz target: the input bytes are MIL text. Parsing must either fail with
 * exactly one positioned error, or succeed; an accepted program is printed
 * in the complete form, which must parse back to an identical program
 * (tests/prog_equal.h) and print to the same text. Any crash, sanitizer
 * report or mismatch is a bug. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mil/text.h"
#include "prog_equal.h"

static void die(const char *what, const char *detail) {
  fprintf(stderr, "fuzz_text_parse: %s: %s\n", what, detail ? detail : "");
  abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  mil_diag d;
  mil_diag_init(&d);
  mil_program *p = NULL;
  /* @blob paths resolve against a directory that does not exist */
  mil_parse_options opt = {.filename = "fuzz.mil", .base_dir = "/nonexistent-mil-fuzz"};
  mil_status st = mil_parse_program((const char *)data, size, &opt, &p, &d);
  if (st != MIL_OK) {
    const char *msg = mil_diag_first_error(&d);
    if (p) die("failed parse returned a program", msg);
    if (d.n_errors != 1 || !msg) die("failed parse without exactly one error", msg);
    if (strncmp(msg, "fuzz.mil:", 9) != 0) die("error message without position", msg);
    mil_diag_clear(&d);
    return 0;
  }
  if (d.n_errors) die("successful parse recorded an error", mil_diag_first_error(&d));
  mil_diag_clear(&d);

  mil_print_options po = {.form = MIL_PRINT_COMPLETE, .blob_refs = false};
  mil_buf t1 = {0}, t2 = {0};
  mil_print_program(p, &po, &t1);
  if (t1.oom) die("print", "out of memory");
  mil_program *q = NULL;
  mil_parse_options opt2 = {.filename = "printed.mil", .base_dir = "/nonexistent-mil-fuzz"};
  if (mil_parse_program(t1.data ? t1.data : "", t1.len, &opt2, &q, &d) != MIL_OK) {
    fprintf(stderr, "printed text:\n%s\n", t1.data ? t1.data : "");
    die("printed program does not parse", mil_diag_first_error(&d));
  }
  char why[512];
  if (!prog_equal(p, q, why, sizeof why)) {
    fprintf(stderr, "printed text:\n%s\n", t1.data);
    die("re-parsed program differs", why);
  }
  mil_print_program(q, &po, &t2);
  if (t1.len != t2.len || memcmp(t1.data, t2.data, t1.len) != 0) die("second print differs", NULL);
  mil_buf_free(&t1);
  mil_buf_free(&t2);
  mil_diag_clear(&d);
  mil_program_free(p);
  mil_program_free(q);
  return 0;
}
