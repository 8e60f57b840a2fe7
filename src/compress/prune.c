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

/* The ranks np.percentile(x, q) (method "linear") interpolates between for
 * n elements: i0 = floor((n - 1) * q / 100), i1 = i0 + 1 (n - 1 at most),
 * and the weight g of the upper one. */
static void percentile_ranks(int64_t n, double q, int64_t *i0, int64_t *i1, double *g) {
  double vi = (double)(n - 1) * (q / 100.0);
  double lo = floor(vi);
  *i0 = (int64_t)lo;
  *i1 = *i0 + 1 < n ? *i0 + 1 : n - 1;
  *g = vi - lo;
}

/* numpy's linear interpolation between order statistics a and b. */
static double percentile_lerp(double a, double b, double g) {
  double diff = b - a;
  return g >= 0.5 ? b - diff * (1 - g) : a + diff * g;
}

/* np.percentile(x, q) (method "linear") of non-negative x, q in [0, 100]:
 * the two order statistics around (n - 1) * q / 100, interpolated. */
static double percentile(const float *x, int64_t n, double q, bool *oom) {
  uint32_t *hist = malloc(65536 * sizeof *hist);
  if (!hist) {
    *oom = true;
    return 0;
  }
  int64_t i0, i1;
  double g;
  percentile_ranks(n, q, &i0, &i1, &g);
  double a = kth_smallest(x, n, i0, hist), b = i1 == i0 ? a : kth_smallest(x, n, i1, hist);
  free(hist);
  return percentile_lerp(a, b, g);
}

/* The largest float not above t (mag <= t in double is mag <= it). */
static float float_floor(double t) {
  float tf = (float)t;
  if ((double)tf > t) tf = nextafterf(tf, -INFINITY);
  return tf;
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
  float tf = float_floor(t);
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

/* ---------- streamed magnitude pruning ---------- */

/* The magnitude key of an element: its bit pattern without the sign
 * (ordered like |x| for every non-NaN x; NaN keys lie above infinity's). */
static inline uint32_t key32(const uint32_t *x, int64_t i) { return x[i] & 0x7fffffffu; }
static inline uint32_t key16(const uint16_t *x, int64_t i) { return x[i] & 0x7fffu; }

/* The key of the r-th smallest (0-based) in a 65536-bucket histogram whose
 * buckets hold `below` elements less than bucket 0's. */
static uint32_t hist_rank(const uint32_t *hist, int64_t below, int64_t r) {
  uint32_t b = 0;
  while (below + hist[b] <= r) below += hist[b++];
  return b;
}

static float key_value(mil_dtype dt, uint32_t key) {
  if (dt == MIL_DT_FP16) return mil_fp16_to_fp32((uint16_t)key);
  float f;
  memcpy(&f, &key, 4);
  return f;
}

/* The largest key whose value is at most tf (tf >= 0, not NaN). */
static uint32_t key_floor(mil_dtype dt, float tf) {
  if (dt == MIL_DT_FP16) {
    uint32_t h = mil_fp32_to_fp16(tf) & 0x7fffu;
    return h && mil_fp16_to_fp32((uint16_t)h) > tf ? h - 1 : h;
  }
  uint32_t k;
  memcpy(&k, &tf, 4);
  return k;
}

/* Elements whose key is at most `key` (one pass). */
static int64_t count_at_most(const void *raw, mil_dtype dt, int64_t n, uint32_t key) {
  int64_t c = 0;
  if (dt == MIL_DT_FP16)
    for (int64_t i = 0; i < n; i++) c += key16(raw, i) <= key;
  else
    for (int64_t i = 0; i < n; i++) c += key32(raw, i) <= key;
  return c;
}

/* Cumulative count of a 65536-bucket histogram up to bucket `to`. */
static int64_t hist_upto(const uint32_t *hist, uint32_t to) {
  int64_t c = 0;
  for (uint32_t b = 0; b <= to; b++) c += hist[b];
  return c;
}

int cw_prune_magnitude_cut(const void *raw, mil_dtype dt, int64_t n, double q, cw_sparse_cut *cut) {
  if (q >= 100 || n < 1 || (dt != MIL_DT_FP32 && dt != MIL_DT_FP16)) return 0;
  cut->nan = false;
  if (q <= 0) { /* nothing pruned: zeros stay out of the nonzero data */
    for (int64_t i = 0; dt == MIL_DT_FP16 && i < n && !cut->nan; i++) cut->nan = key16(raw, i) > 0x7c00;
    cut->key = 0;
    cut->nnz = n - count_at_most(raw, dt, n, 0);
    return 1;
  }
  int64_t i0, i1;
  double g;
  percentile_ranks(n, q, &i0, &i1, &g);
  /* hi: counts by the high 16 bits of the key (fp32; an fp16 key has
   * none); la / lb: the low 16 bits inside the buckets of ranks i0 / i1 */
  uint32_t *hist = calloc(3 * 65536, sizeof *hist);
  if (!hist) return -1;
  uint32_t *hi = hist, *la = hist + 65536, *lb = hist + 2 * 65536;
  uint32_t ha = 0, hb = 0;
  int64_t below_a = 0, below_b = 0;
  if (dt == MIL_DT_FP16) {
    for (int64_t i = 0; i < n; i++) la[key16(raw, i)]++;
    for (uint32_t k = 0x7c01; k <= 0x7fff && !cut->nan; k++) cut->nan = la[k] != 0;
  } else {
    const uint32_t *x = raw;
    /* even and odd elements count into the two halves of hi (a key's high
     * bits are below 32768), so neighbours of one bucket do not wait on
     * each other's increment */
    int64_t i = 0;
    for (; i + 2 <= n; i += 2) {
      hi[key32(x, i) >> 16]++;
      hi[32768 + (key32(x, i + 1) >> 16)]++;
    }
    if (i < n) hi[key32(x, i) >> 16]++;
    for (uint32_t b = 0; b < 32768; b++) hi[b] += hi[32768 + b];
    while (below_a + hi[ha] <= i0) below_a += hi[ha++];
    hb = ha, below_b = below_a;
    while (below_b + hi[hb] <= i1) below_b += hi[hb++];
    /* few elements fall in buckets ha..hb (no element lies strictly
     * between them): eight are tested at once, the counting is rare */
    uint32_t span = hb - ha;
    for (i = 0; i < n; i += 8) {
      int64_t len = n - i < 8 ? n - i : 8;
      unsigned any = 0;
      if (len == 8)
        for (int e = 0; e < 8; e++) any |= (key32(x, i + e) >> 16) - ha <= span;
      else
        any = 1;
      if (!any) continue;
      for (int64_t e = 0; e < len; e++) {
        uint32_t k = key32(x, i + e), h = k >> 16;
        if (h == ha) la[k & 0xffff]++;
        else if (h == hb) lb[k & 0xffff]++;
      }
    }
  }
  if (hb == ha) lb = la;
  uint32_t a = ha << 16 | hist_rank(la, below_a, i0), b = hb << 16 | hist_rank(lb, below_b, i1);
  double t = percentile_lerp(key_value(dt, a), key_value(dt, b), g);
  float tf = float_floor(t);
  /* mag <= NaN prunes nothing */
  cut->key = tf != tf ? 0 : key_floor(dt, tf);
  uint32_t hc = cut->key >> 16;
  if (cut->key != 0 && (hc == ha || hc == hb))
    cut->nnz = n - ((hc == ha ? below_a : below_b) + hist_upto(hc == ha ? la : lb, cut->key & 0xffff));
  else
    cut->nnz = n - count_at_most(raw, dt, n, cut->key);
  free(hist);
  return 1;
}

/* One element: its bits go to the nonzero data when its key is above the
 * cut (the store is unconditional, the count advances only then). */
#define SPLIT_LOOP(T, KEY)                                                          \
  do {                                                                              \
    const T *x = raw;                                                               \
    T *o = nz;                                                                      \
    int64_t i = 0, j = 0;                                                           \
    for (; i + 8 <= n && j + 8 <= nnz; i += 8) {                                    \
      unsigned m = 0;                                                               \
      for (int e = 0; e < 8; e++) {                                                 \
        unsigned keep = KEY(x, i + e) > key;                                        \
        o[j] = x[i + e];                                                            \
        j += keep;                                                                  \
        m |= keep << e;                                                             \
      }                                                                             \
      mask[i >> 3] = (uint8_t)m;                                                    \
    }                                                                               \
    memset(mask + (i >> 3), 0, (size_t)((n + 7) / 8 - (i >> 3)));                   \
    for (; i < n; i++) {                                                            \
      if (KEY(x, i) <= key) continue;                                               \
      o[j++] = x[i];                                                                \
      mask[i >> 3] |= (uint8_t)(1u << (i & 7));                                     \
    }                                                                               \
  } while (0)

void cw_sparse_split(const void *raw, mil_dtype dt, int64_t n, const cw_sparse_cut *cut, uint8_t *mask, void *nz) {
  uint32_t key = cut->key;
  int64_t nnz = cut->nnz;
  if (dt == MIL_DT_FP16) {
    SPLIT_LOOP(uint16_t, key16);
    /* a NaN goes through fp32 and back as the dense path does */
    uint16_t *o = nz;
    for (int64_t j = 0; cut->nan && j < nnz; j++)
      if ((o[j] & 0x7fff) > 0x7c00) {
        float f;
        mil_fp16_to_fp32_array(&o[j], &f, 1);
        mil_fp32_to_fp16_array(&f, &o[j], 1);
      }
  } else {
    SPLIT_LOOP(uint32_t, key32);
  }
}

/* The mask alone, eight elements a byte. */
#define MASK_LOOP(KEY)                                                   \
  do {                                                                   \
    int64_t i = 0;                                                       \
    for (; i + 8 <= n; i += 8) {                                         \
      unsigned m = 0;                                                    \
      for (int e = 0; e < 8; e++) m |= (unsigned)(KEY(raw, i + e) > key) << e; \
      mask[i >> 3] = (uint8_t)m;                                         \
    }                                                                    \
    if (i < n) {                                                         \
      unsigned m = 0;                                                    \
      for (int e = 0; i + e < n; e++) m |= (unsigned)(KEY(raw, i + e) > key) << e; \
      mask[i >> 3] = (uint8_t)m;                                         \
    }                                                                    \
  } while (0)

void cw_sparse_mask(const void *raw, mil_dtype dt, int64_t n, const cw_sparse_cut *cut, uint8_t *mask) {
  uint32_t key = cut->key;
  if (dt == MIL_DT_FP16) MASK_LOOP(key16);
  else MASK_LOOP(key32);
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
