/* Fuzz target: the input bytes are a .npy file. Reads it from memory; an
 * accepted array is written back with mil_npy_write and must read back with
 * the same dtype, shape and bytes. Any crash, sanitizer report or mismatch
 * is a bug. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mil/npy.h"

static char g_path[256];

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (!g_path[0]) {
    const char *tmp = getenv("TMPDIR");
    snprintf(g_path, sizeof g_path, "%s/fuzz_npy_%ld.npy", tmp && *tmp ? tmp : "/tmp", (long)getpid());
  }
  mil_diag d = {0};
  d.max_msgs = 4;
  mil_npy *a = NULL;
  if (mil_npy_read_mem(data, size, "fuzz.npy", &a, &d) == MIL_OK) {
    if (a->nbytes <= (1u << 20)) {
      if (mil_npy_write(g_path, a->dtype, a->rank, a->shape, a->data, &d) != MIL_OK) abort();
      mil_npy *b = NULL;
      if (mil_npy_read(g_path, &b, &d) != MIL_OK) abort();
      if (b->dtype != a->dtype || b->rank != a->rank || b->nbytes != a->nbytes) abort();
      if (memcmp(b->shape, a->shape, (size_t)a->rank * sizeof a->shape[0]) != 0) abort();
      if (a->nbytes && memcmp(a->data, b->data, a->nbytes) != 0) abort();
      mil_npy_free(b);
      unlink(g_path);
    }
    mil_npy_free(a);
  }
  mil_diag_clear(&d);
  return 0;
}
