/* Fuzz target: the reference interpreter on small programs with random
 * inputs. The input is MIL text; a program that parses and validates runs
 * its first function once, every input filled with values drawn from a
 * generator seeded by the input bytes (inputs with unknown dims or more than
 * 4,096 elements are skipped), at most 1,000 loop iterations. The run must
 * succeed or fail with a message. Any crash, sanitizer report, hang or
 * run-away allocation is a bug. */
#include <string.h>

#include "fuzz_mil.h"
#include "mil/interp.h"
#include "mil/mil.h"
#include "mil/ops.h"
#include "mil/text.h"

static void die(const char *what, const char *detail) { fuzz_die("fuzz_interp", what, detail); }

static uint64_t next(uint64_t *s) {
  uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

/* Fills an input of static type t with random values; false to skip. */
static bool set_random(mil_interp *ip, const char *name, const mil_type *t, uint64_t *seed, mil_diag *d) {
  if (!t || t->kind != MIL_TYPE_TENSOR || t->rank < 0 || t->rank > 8) return false;
  int64_t shape[8], n = 1;
  for (int32_t i = 0; i < t->rank; i++) {
    if (t->dims[i].size < 0 || t->dims[i].size > 4096) return false;
    shape[i] = t->dims[i].size;
    n *= shape[i];
    if (n > 4096) return false;
  }
  size_t es = mil_dtype_storage_bytes(t->dtype, 1);
  if (t->dtype == MIL_DT_STRING || es == 0 || mil_dtype_bits(t->dtype) < 8) return false;
  uint8_t *buf = calloc((size_t)(n ? n : 1), es);
  if (!buf) return false;
  for (int64_t i = 0; i < n; i++) {
    uint64_t r = next(seed);
    switch (t->dtype) {
    case MIL_DT_FP32: {
      float v = (float)((int64_t)(r % 2001) - 1000) / 100.0f;
      memcpy(buf + i * 4, &v, 4);
      break;
    }
    case MIL_DT_FP16: {
      uint16_t h = mil_fp32_to_fp16((float)((int64_t)(r % 2001) - 1000) / 100.0f);
      memcpy(buf + i * 2, &h, 2);
      break;
    }
    case MIL_DT_BOOL: buf[i] = (uint8_t)(r & 1); break;
    default: { /* small integers of any width */
      int64_t v = (int64_t)(r % 9) - 4;
      memcpy(buf + (size_t)i * es, &v, es <= 8 ? es : 8);
    }
    }
  }
  mil_tensor x = {.dtype = t->dtype, .rank = t->rank, .shape = shape, .data = buf,
                  .nbytes = (size_t)n * es, .numel = n};
  mil_status st = mil_interp_set_input(ip, name, &x, d);
  free(buf);
  return st == MIL_OK;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > 8192) return 0;
  mil_program *p = fuzz_parse(data, size, true);
  if (!p) return 0;
  if (p->n_functions < 1) {
    mil_program_free(p);
    return 0;
  }
  mil_diag d;
  mil_diag_init(&d);
  uint64_t seed = 0x6d696cull;
  for (size_t i = 0; i < size; i++) seed = seed * 131 + data[i];
  mil_interp *ip = NULL;
  if (mil_interp_new(p, p->functions[0]->name, &ip, &d) == MIL_OK) {
    mil_interp_set_max_iterations(ip, 1000);
    mil_interp_set_seed(ip, seed);
    bool all = true;
    for (int32_t i = 0; i < mil_interp_n_inputs(ip) && all; i++)
      all = set_random(ip, mil_interp_input_name(ip, i), mil_interp_input_type(ip, i), &seed, &d);
    if (all) {
      mil_status st = mil_interp_run(ip, NULL, &d);
      if (st != MIL_OK && !d.n_errors) die("run failed without a message", mil_status_str(st));
    }
    mil_interp_free(ip);
  }
  mil_diag_clear(&d);
  mil_program_free(p);
  return 0;
}
