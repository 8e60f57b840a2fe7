/* Pruning arithmetic: coremltools/optimize/coreml/_quantization_passes.py
 * (prune_weights.compress_by_threshold, compress_by_magnitude with block
 * sparsity, compress_by_nm_sparsity) with numpy's semantics: np.percentile
 * (linear interpolation between the two nearest ranks), fp16 magnitudes
 * computed in fp16, a stable order for n:m ties (numpy sorts vectors of at
 * most 16 elements by insertion). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "compress/compress_internal.h"

/* The k-th smallest (0-based) of n non-negative floats, by their bit
 * patterns (ordered like the values for non-negative floats): a histogram
 * of the high 16 bits, then of the low 16 bits inside the chosen bucket.
 * Two passes, no copy. */
static float kth_smallest(const float *x, int64_t n, int64_t k, uint32_t *hist) {
  memset(hist, 0, 65536 * sizeof *hist);
  for (int64_t i = 0; i < n; i++) {
    uint32_t b;
    memcpy(&b, &x[i], 4);
    hist[b >> 16]++;
  }
  uint32_t hi = 0;
  int64_t below = 0;
  while (below + hist[hi] <= k) below += hist[hi++];
  memset(hist, 0, 65536 * sizeof *hist);
  for (int64_t i = 0; i < n; i++) {
    uint32_t b;
    memcpy(&b, &x[i], 4);
    if (b >> 16 == hi) hist[b & 0xffff]++;
  }
  uint32_t lo = 0;
  while (below + hist[lo] <= k) below += hist[lo++];
  uint32_t bits = hi << 16 | lo;
  float r;
  memcpy(&r, &bits, 4);
  return r;
}

/* np.percentile(x, q) (method "linear") of non-negative x, q in [0, 100]:
 * the two order statistics around (n - 1) * q / 100, interpolated. */
static double percentile(const float *x, int64_t n, double q, bool *oom) {
  uint32_t *hist = malloc(65536 * sizeof *hist);
  if (!hist) {
    *oom = true;
    return 0;
  }
  double vi = (double)(n - 1) * (q / 100.0);
  double lo = floor(vi);
  int64_t i0 = (int64_t)lo, i1 = i0 + 1 < n ? i0 + 1 : n - 1;
  double g = vi - lo;
  double a = kth_smallest(x, n, i0, hist), b = i1 == i0 ? a : kth_smallest(x, n, i1, hist), diff = b - a;
  free(hist);
  return g >= 0.5 ? b - diff * (1 - g) : a + diff * g;
}

/* Zeroes the elements whose magnitude is at most the q-th percentile of
 * mag (coremltools' np.where(magnitude_map <= np.percentile(...), 0, val)). */
static bool prune_by_map(const cw_weight *w, float *val, const float *mag, double q) {
  if (q == 100) {
    for (int64_t i = 0; i < w->n; i++) val[i] = 0.0f * val[i];
    return true;
  }
  if (q == 0) return true;
  bool oom = false;
  double t = percentile(mag, w->n, q, &oom);
  if (oom) return false;
  /* mag <= t in double is mag <= the largest float not above t */
  float tf = (float)t;
  if ((double)tf > t) tf = nextafterf(tf, -INFINITY);
  for (int64_t i = 0; i < w->n; i++) val[i] = mag[i] <= tf ? 0.0f : val[i];
  return true;
}

/* Block magnitudes along axis `dim` (_apply_block_sparsity): the l2 norm
 * of each run of block_size elements along dim (the last run padded with
 * zeros), repeated over the run. */
static void block_magnitude(const cw_weight *w, const float *absw, int64_t bs, int32_t dim, float *out) {
  int64_t outer = 1, inner = 1, ch = w->shape[dim];
  for (int32_t a = 0; a < dim; a++) outer *= w->shape[a];
  for (int32_t a = dim + 1; a < w->rank; a++) inner *= w->shape[a];
  for (int64_t o = 0; o < outer; o++)
    for (int64_t b0 = 0; b0 < ch; b0 += bs)
      for (int64_t r = 0; r < inner; r++) {
        float acc = 0;
        for (int64_t c = b0; c < b0 + bs && c < ch; c++) {
          float x = absw[(o * ch + c) * inner + r];
          float sq = cw_r(w, x * x);
          acc = c == b0 ? sq : cw_r(w, acc + sq);
        }
        float m = cw_r(w, sqrtf(acc));
        for (int64_t c = b0; c < b0 + bs && c < ch; c++) out[(o * ch + c) * inner + r] = m;
      }
}

int cw_prune_magnitude(const cw_weight *w, const mil_op_compress_config *cfg, float *val) {
  memcpy(val, w->w, (size_t)w->n * sizeof *val);
  float *mag = malloc((size_t)(w->n ? w->n : 1) * sizeof *mag);
  if (!mag) return -1;
  for (int64_t i = 0; i < w->n; i++) mag[i] = fabsf(w->w[i]);
  if (cfg->has_prune_block_size) {
    int32_t dim = (int32_t)cfg->dim;
    if (w->rank < 2 || w->rank > 5 || dim >= w->rank || (double)cfg->prune_block_size > (double)w->shape[dim] / 2) {
      free(mag);
      return 0;
    }
    float *bm = malloc((size_t)w->n * sizeof *bm);
    if (!bm) {
      free(mag);
      return -1;
    }
    block_magnitude(w, mag, cfg->prune_block_size, dim, bm);
    free(mag);
    mag = bm;
  }
  bool ok = prune_by_map(w, val, mag, cfg->target_sparsity * 100);
  free(mag);
  return ok ? 1 : -1;
}

int cw_prune_threshold(const cw_weight *w, const mil_op_compress_config *cfg, float *val) {
  /* the threshold compares at the weight's precision (numpy casts the
   * Python float to the array's dtype) */
  float t = w->is_half ? mil_fp16_to_fp32(mil_fp64_to_fp16(cfg->threshold)) : (float)cfg->threshold;
  int64_t zeros = 0;
  for (int64_t i = 0; i < w->n; i++) {
    val[i] = fabsf(w->w[i]) <= t ? 0.0f : w->w[i];
    zeros += val[i] == 0;
  }
  return (double)zeros / (double)w->n < cfg->minimum_sparsity_percentile ? 0 : 1;
}

int cw_prune_n_m(const cw_weight *w, const mil_op_compress_config *cfg, float *val) {
  int64_t n = cfg->n_m_ratio[0], m = cfg->n_m_ratio[1];
  int32_t rank = w->rank;
  if (rank < 2 || rank > 5 || m < 1) return 0;
  /* vectors of m run along axis 1 (dim 1) or 0 (dim 0), over the
   * transposed [*K, C_out, C_in] layout: row = (k, other channel) */
  int32_t ax = cfg->dim == 0 ? 0 : 1, other = 1 - ax;
  int64_t ch = w->shape[ax];
  if ((double)m > (double)ch / 2) return 0;
  memcpy(val, w->w, (size_t)w->n * sizeof *val);
  int64_t kn = 1;
  for (int32_t a = 2; a < rank; a++) kn *= w->shape[a];
  int64_t co = w->shape[0], ci = w->shape[1];
  int64_t idx[64];
  float mag[64];
  if (m > 64) return 0;
  for (int64_t k = 0; k < kn; k++)
    for (int64_t o = 0; o < w->shape[other]; o++)
      for (int64_t c0 = 0; c0 < ch; c0 += m) {
        int64_t len = m;
        for (int64_t j = 0; j < m; j++) {
          int64_t c = c0 + j;
          if (c < ch) {
            int64_t i0 = ax == 1 ? o : c, i1 = ax == 1 ? c : o;
            idx[j] = (i0 * ci + i1) * kn + k;
            mag[j] = fabsf(w->w[idx[j]]);
          } else {
            idx[j] = -1;
            mag[j] = 0.0f;
          }
        }
        (void)co;
        /* stable argsort, the n smallest are pruned */
        int64_t ord[64];
        for (int64_t j = 0; j < len; j++) {
          int64_t t = j;
          while (t > 0 && mag[ord[t - 1]] > mag[j]) {
            ord[t] = ord[t - 1];
            t--;
          }
          ord[t] = j;
        }
        for (int64_t j = 0; j < n && j < len; j++)
          if (idx[ord[j]] >= 0) val[idx[ord[j]]] = val[idx[ord[j]]] * 0.0f;
      }
  return 1;
}
