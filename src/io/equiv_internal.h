/* Internal interface between the equivalence checker (equiv.c) and its
 * helpers (equiv_util.c). */
#ifndef MIL_IO_EQUIV_INTERNAL_H
#define MIL_IO_EQUIV_INTERNAL_H

#include "mil/equiv.h"

/* A pointer -> pointer map (open addressing, malloc-backed). Zero-initialize. */
typedef struct io_pmap {
  const void **k;
  const void **v;
  size_t cap, n;
} io_pmap;
size_t io_phash(const void *p);
/* The value stored for key, or NULL. */
const void *io_pmap_get(const io_pmap *m, const void *key);
/* Inserts or overwrites; false on out of memory. */
bool io_pmap_put(io_pmap *m, const void *key, const void *val);
void io_pmap_free(io_pmap *m);

/* The tolerances of opt (NULL = defaults: 1e-6 relative, 1 ulp). */
void io_equiv_defaults(const mil_equiv_options *o, double *rel, int *ulps);
/* Index of the first element of two tensor values that differs beyond the
 * tolerances; -1 when close; -2 when dtype or shape differ. */
int64_t io_tensor_diff(const mil_value *a, const mil_value *b, double rel, int ulps);
/* Any two values (containers recursively, depth capped). */
bool io_value_close_depth(const mil_value *a, const mil_value *b, double rel, int ulps, int depth);
/* "fp32 (2, 3) [0.1, 0.2, ...]" around element `at`, for messages. */
void io_value_summary(const mil_value *v, int64_t at, char *buf, size_t n);

#endif
