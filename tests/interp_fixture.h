/* Test helper: running a MIL text program on the reference interpreter and
 * checking its outputs. Header-only (static functions); include after
 * cmocka.h. */
#ifndef MIL_TESTS_INTERP_FIXTURE_H
#define MIL_TESTS_INTERP_FIXTURE_H

#include <math.h>
#include <string.h>

#include "mil/interp.h"
#include "mil/mil.h"
#include "mil/text.h"

typedef struct ifix {
  mil_program *p;
  mil_interp *ip;
  mil_diag d;
} ifix;

/* The program of MIL text `text` (file name `name` in messages); the test
 * fails with the parser's message (and the text) when it does not parse. */
static inline mil_program *ifix_parse(const char *text, const char *name) {
  mil_diag d;
  mil_diag_init(&d);
  mil_parse_options po = {name, NULL};
  mil_program *p = NULL;
  if (mil_parse_program(text, strlen(text), &po, &p, &d) != MIL_OK)
    fail_msg("parse: %s\n%s", mil_diag_first_error(&d), text);
  mil_diag_clear(&d);
  return p;
}

static inline void ifix_open(ifix *f, const char *text) {
  mil_diag_init(&f->d);
  mil_parse_options po = {"test.mil", NULL};
  if (mil_parse_program(text, strlen(text), &po, &f->p, &f->d) != MIL_OK)
    fail_msg("parse: %s\n%s", mil_diag_first_error(&f->d), text);
  if (mil_interp_new(f->p, NULL, &f->ip, &f->d) != MIL_OK) fail_msg("interp_new: %s", mil_diag_first_error(&f->d));
}

static inline void ifix_close(ifix *f) {
  mil_interp_free(f->ip);
  mil_program_free(f->p);
  mil_diag_clear(&f->d);
}

static inline void ifix_set(ifix *f, const char *name, mil_dtype dt, int rank, const int64_t *shape,
                            const void *data) {
  int64_t n = 1;
  for (int i = 0; i < rank; i++) n *= shape[i];
  mil_tensor t = {dt, rank, shape, data, (size_t)n * mil_dtype_size(dt), n};
  if (mil_interp_set_input(f->ip, name, &t, &f->d) != MIL_OK) fail_msg("set_input: %s", mil_diag_first_error(&f->d));
}

static inline void ifix_run(ifix *f) {
  if (mil_interp_run(f->ip, NULL, &f->d) != MIL_OK) fail_msg("run: %s", mil_diag_first_error(&f->d));
}

static inline double ifix_elem(const mil_tensor *t, int64_t i) {
  switch (t->dtype) {
  case MIL_DT_FP32: return ((const float *)t->data)[i];
  case MIL_DT_FP16: return mil_fp16_to_fp32(((const uint16_t *)t->data)[i]);
  case MIL_DT_FP64: return ((const double *)t->data)[i];
  case MIL_DT_INT32: return ((const int32_t *)t->data)[i];
  case MIL_DT_INT64: return (double)((const int64_t *)t->data)[i];
  default: fail_msg("unexpected dtype %s", mil_dtype_name(t->dtype));
  }
  return 0;
}

/* Output i has the given shape and values within tol. */
static inline void ifix_expect(ifix *f, int i, int rank, const int64_t *shape, int n, const double *want, double tol) {
  const mil_tensor *t = mil_interp_output_at(f->ip, i);
  assert_non_null(t);
  if (t->rank != rank) fail_msg("output %d: rank %d, expected %d", i, t->rank, rank);
  for (int k = 0; k < rank; k++)
    if (t->shape[k] != shape[k])
      fail_msg("output %d: dim %d is %lld, expected %lld", i, k, (long long)t->shape[k], (long long)shape[k]);
  if (t->numel != n) fail_msg("output %d: %lld elements, expected %d", i, (long long)t->numel, n);
  for (int k = 0; k < n; k++)
    if (!(fabs(ifix_elem(t, k) - want[k]) <= tol))
      fail_msg("output %d element %d: got %.9g, expected %.9g", i, k, ifix_elem(t, k), want[k]);
}

#endif
