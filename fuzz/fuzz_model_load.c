/* Fuzz target: the input bytes are a .mil file loaded through the model
 * loader (mil_model_load: the path mil validate, info, print, run and convert
 * take). Loading must succeed, or fail with a message naming the file; a
 * loaded model is freed. Any crash, sanitizer report (such as a message
 * printed from freed memory) or hang is a bug. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mil/mil.h"
#include "mil/model.h"

static char g_path[256];

static void die(const char *what, const char *detail) {
  fprintf(stderr, "fuzz_model_load: %s: %s\n", what, detail ? detail : "");
  abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (!g_path[0]) snprintf(g_path, sizeof g_path, "/tmp/mil-fuzz-load-%ld.mil", (long)getpid());
  FILE *f = fopen(g_path, "wb");
  if (!f) die("cannot write", g_path);
  if (size && fwrite(data, 1, size, f) != size) die("short write", g_path);
  fclose(f);
  mil_diag d;
  mil_diag_init(&d);
  mil_model *m = NULL;
  mil_status st = mil_model_load(g_path, &m, &d);
  if (st != MIL_OK) {
    const char *msg = mil_diag_first_error(&d);
    if (m) die("failed load returned a model", msg);
    if (!msg || !strstr(msg, g_path)) die("error without the file name", msg);
  } else {
    if (!m || !mil_model_program(m)) die("load returned no model", NULL);
    mil_model_free(m);
  }
  mil_diag_clear(&d);
  return 0;
}
