/* Permuting the axes of a tensor (transpose and the block rearrangements
 * of tensor.c), for elements of any size.
 *
 * The permutation is first simplified: axes of size 1 are dropped and
 * output axes that stay neighbours in the input are merged. Then:
 *  - when the last output axis is the input's last (a run of contiguous
 *    elements), rows are copied;
 *  - else, for 1-, 2-, 4- and 8-byte elements, the two axes that are the
 *    innermost of the input and of the output are transposed tile by tile
 *    (each tile read along input rows and written along output rows, both
 *    within the cache), for every index of the other axes;
 *  - else element by element along the last output axis.
 * Every path copies each element once: the result is the same bytes. */
#include <stdint.h>
#include <string.h>

#include "interp/interp_internal.h"

#define TILE 16

/* dst[i * ds + j] = src[j * ss + i] for i < ni, j < nj: a tile transpose
 * of elements of type T. */
#define TILE_T(name, T)                                                                                     \
  static void name(const void *src, void *dst, int64_t ni, int64_t nj, int64_t ss, int64_t ds) {          \
    const T *s = src;                                                                                       \
    T *d = dst;                                                                                             \
    for (int64_t j0 = 0; j0 < nj; j0 += TILE) {                                                             \
      int64_t j1 = j0 + TILE < nj ? j0 + TILE : nj;                                                         \
      for (int64_t i0 = 0; i0 < ni; i0 += TILE) {                                                           \
        int64_t i1 = i0 + TILE < ni ? i0 + TILE : ni;                                                       \
        for (int64_t i = i0; i < i1; i++)                                                                   \
          for (int64_t j = j0; j < j1; j++) d[i * ds + j] = s[j * ss + i];                                  \
      }                                                                                                     \
    }                                                                                                       \
  }
TILE_T(tile8, uint8_t)
TILE_T(tile16, uint16_t)
TILE_T(tile32, uint32_t)
TILE_T(tile64, uint64_t)

/* Advances the index idx over the axes (all but `skip_a` and `skip_b`,
 * the last first) of sizes os, moving the offsets by the source strides ss
 * and the output strides ds. False when the last index has been passed. */
static bool next_index(int32_t n, const int64_t *os, const int64_t *ss, const int64_t *ds, int32_t skip_a,
                       int32_t skip_b, int64_t *idx, int64_t *soff, int64_t *doff) {
  for (int32_t k = n - 1; k >= 0; k--) {
    if (k == skip_a || k == skip_b) continue;
    idx[k]++;
    *soff += ss[k];
    *doff += ds[k];
    if (idx[k] < os[k]) return true;
    *soff -= ss[k] * os[k];
    *doff -= ds[k] * os[k];
    idx[k] = 0;
  }
  return false;
}

void interp_permute(const void *src, void *dst, size_t es, int32_t n, const int64_t *xs, const int64_t *perm) {
  int64_t st[MIL_INTERP_MAX_RANK], os[MIL_INTERP_MAX_RANK], ss[MIL_INTERP_MAX_RANK], ds[MIL_INTERP_MAX_RANK];
  int64_t idx[MIL_INTERP_MAX_RANK] = {0};
  int64_t s = 1, total = 1;
  for (int32_t i = n - 1; i >= 0; i--) {
    st[i] = s;
    s *= xs[i];
  }
  /* the output's axes (size, source stride): size-1 axes dropped,
   * neighbours that are neighbours in the source merged */
  int32_t m = 0;
  for (int32_t k = 0; k < n; k++) {
    int64_t size = xs[perm[k]], stride = st[perm[k]];
    total *= size;
    if (size == 1) continue;
    if (m > 0 && ss[m - 1] == stride * size) {
      os[m - 1] *= size;
      ss[m - 1] = stride;
    } else {
      os[m] = size;
      ss[m] = stride;
      m++;
    }
  }
  if (total == 0) return;
  if (m == 0 || (m == 1 && ss[0] == 1)) {
    memcpy(dst, src, (size_t)total * es);
    return;
  }
  s = 1;
  for (int32_t k = m - 1; k >= 0; k--) {
    ds[k] = s;
    s *= os[k];
  }
  const char *sp = src;
  char *dp = dst;
  int64_t soff = 0, doff = 0;
  if (ss[m - 1] == 1) { /* runs of os[m - 1] contiguous elements */
    size_t run = (size_t)os[m - 1] * es;
    do memcpy(dp + doff * es, sp + soff * es, run);
    while (next_index(m, os, ss, ds, m - 1, -1, idx, &soff, &doff));
    return;
  }
  int32_t p = -1; /* the output axis that is the source's innermost */
  for (int32_t k = 0; k < m; k++)
    if (ss[k] == 1) p = k;
  if (p >= 0 && (es == 1 || es == 2 || es == 4 || es == 8)) {
    /* for each index of the other axes: a (os[p], os[m-1]) block of the
     * output, rows ds[p] apart, from source columns ss[m-1] apart */
    do {
      const char *a = sp + soff * (int64_t)es;
      char *b = dp + doff * (int64_t)es;
      if (es == 1) tile8(a, b, os[p], os[m - 1], ss[m - 1], ds[p]);
      else if (es == 2) tile16(a, b, os[p], os[m - 1], ss[m - 1], ds[p]);
      else if (es == 4) tile32(a, b, os[p], os[m - 1], ss[m - 1], ds[p]);
      else tile64(a, b, os[p], os[m - 1], ss[m - 1], ds[p]);
    } while (next_index(m, os, ss, ds, p, m - 1, idx, &soff, &doff));
    return;
  }
  int64_t inner = os[m - 1], step = ss[m - 1];
  do {
    for (int64_t j = 0; j < inner; j++) memcpy(dp + (doff + j) * (int64_t)es, sp + (soff + j * step) * (int64_t)es, es);
  } while (next_index(m, os, ss, ds, m - 1, -1, idx, &soff, &doff));
}
