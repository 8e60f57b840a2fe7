/* Reference transposes for the tests of the transpose fold and of deferred
 * values: np.transpose computed from the definition, and the permutations
 * of a rank in order. Header-only (static functions). */
#ifndef MIL_TEST_TRANSPOSE_REF_H
#define MIL_TEST_TRANSPOSE_REF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* np.transpose by definition: output element k (row-major over the output
 * shape) is the source element at the coordinates it names. */
static __attribute__((unused)) void naive_transpose(uint8_t *dst, const uint8_t *src, size_t es, int32_t rank,
                                                    const int64_t *shape, const int64_t *perm) {
  int64_t ist[8], oshape[8], numel = 1;
  for (int32_t i = rank - 1, s = 1; i >= 0; i--) {
    ist[i] = s;
    s *= (int32_t)shape[i];
  }
  for (int32_t i = 0; i < rank; i++) {
    oshape[i] = shape[perm[i]];
    numel *= oshape[i];
  }
  for (int64_t k = 0; k < numel; k++) {
    int64_t rest = k, si = 0;
    for (int32_t d = rank - 1; d >= 0; d--) {
      int64_t c = rest % oshape[d];
      rest /= oshape[d];
      si += c * ist[perm[d]];
    }
    memcpy(dst + (size_t)k * es, src + (size_t)si * es, es);
  }
}

/* Next permutation in lexicographic order; false after the last. */
static __attribute__((unused)) bool next_perm(int32_t n, int64_t *p) {
  int32_t i = n - 2;
  while (i >= 0 && p[i] >= p[i + 1]) i--;
  if (i < 0) return false;
  int32_t j = n - 1;
  while (p[j] <= p[i]) j--;
  int64_t t = p[i];
  p[i] = p[j];
  p[j] = t;
  for (int32_t a = i + 1, b = n - 1; a < b; a++, b--) {
    t = p[a];
    p[a] = p[b];
    p[b] = t;
  }
  return true;
}

#endif
