/* The k-means coremltools runs through scikit-learn for palettization
 * (KMeans(n_clusters, init="k-means++", tol=1e-2, n_init=1,
 * random_state=0), coremltools/models/neural_network/quantization_utils.py
 * _get_kmeans_lookup_table_and_weight), written out: numpy's legacy
 * RandomState(0) (MT19937, init_genrand), the greedy k-means++ seeding of
 * sklearn.cluster._kmeans._kmeans_plusplus (first center by
 * randint, then 2 + log(k) candidates per center drawn from
 * the cumulative potential; the first center by randint(n) as the
 * scikit-learn releases coremltools' recorded tests used), and Lloyd iterations until the labels stop
 * changing or the squared center shift falls below tol * mean variance,
 * with a final assignment to the last centers. Computed in double on the
 * mean-centered data; the result may differ from scikit-learn's float32
 * runs in the last bits, so cluster assignments agree and LUTs agree to
 * about 1e-6 relative. Memory O(points + k). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "compress/compress_internal.h"

/* ---------- MT19937 as numpy's RandomState(seed) ---------- */

typedef struct mt {
  uint32_t s[624];
  int i;
} mt;

static void mt_seed(mt *m, uint32_t seed) {
  m->s[0] = seed;
  for (int i = 1; i < 624; i++) m->s[i] = 1812433253u * (m->s[i - 1] ^ (m->s[i - 1] >> 30)) + (uint32_t)i;
  m->i = 624;
}

static uint32_t mt_next(mt *m) {
  if (m->i >= 624) {
    for (int k = 0; k < 624; k++) {
      uint32_t y = (m->s[k] & 0x80000000u) | (m->s[(k + 1) % 624] & 0x7fffffffu);
      m->s[k] = m->s[(k + 397) % 624] ^ (y >> 1) ^ ((y & 1u) ? 0x9908b0dfu : 0u);
    }
    m->i = 0;
  }
  uint32_t y = m->s[m->i++];
  y ^= y >> 11;
  y ^= (y << 7) & 0x9d2c5680u;
  y ^= (y << 15) & 0xefc60000u;
  y ^= y >> 18;
  return y;
}

/* random_sample(): 53-bit double in [0, 1) */
static double mt_double(mt *m) {
  uint32_t a = mt_next(m) >> 5, b = mt_next(m) >> 6;
  return (a * 67108864.0 + b) / 9007199254740992.0;
}

/* ---------- k-means ---------- */

static double dist2(const double *a, const double *b, int d) {
  double s = 0;
  for (int j = 0; j < d; j++) {
    double t = a[j] - b[j];
    s += t * t;
  }
  return s;
}

/* first index with cum[i] >= v (searchsorted side="left") */
static int64_t search_left(const double *cum, int64_t n, double v) {
  int64_t lo = 0, hi = n;
  while (lo < hi) {
    int64_t mid = lo + (hi - lo) / 2;
    if (cum[mid] < v) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

static void assign(const double *X, int64_t n, int d, const double *C, int k, int32_t *labels) {
  for (int64_t i = 0; i < n; i++) {
    int best = 0;
    double bd = dist2(X + i * d, C, d);
    for (int c = 1; c < k; c++) {
      double t = dist2(X + i * d, C + c * d, d);
      if (t < bd) bd = t, best = c;
    }
    labels[i] = best;
  }
}

bool cw_kmeans_sklearn(const float *pts, int64_t n, int d, int k, float *centers_out, int32_t *labels) {
  double *X = malloc((size_t)(n * d) * sizeof *X), *mean = calloc((size_t)d, sizeof *mean);
  double *C = malloc((size_t)(k * d) * sizeof *C), *Cn = malloc((size_t)(k * d) * sizeof *Cn);
  double *closest = malloc((size_t)n * sizeof *closest), *cum = malloc((size_t)n * sizeof *cum);
  double *cand = malloc((size_t)n * sizeof *cand), *best_d = malloc((size_t)n * sizeof *best_d);
  double *wsum = malloc((size_t)k * sizeof *wsum);
  int32_t *old = malloc((size_t)n * sizeof *old);
  bool ok = X && mean && C && Cn && closest && cum && cand && best_d && wsum && old && n >= k && k > 0;
  if (ok) {
    for (int64_t i = 0; i < n * d; i++) X[i] = pts[i];
    for (int64_t i = 0; i < n; i++)
      for (int j = 0; j < d; j++) mean[j] += X[i * d + j];
    for (int j = 0; j < d; j++) mean[j] /= (double)n;
    for (int64_t i = 0; i < n; i++)
      for (int j = 0; j < d; j++) X[i * d + j] -= mean[j];
    /* tol = mean over features of the variance, times 1e-2 */
    double var = 0;
    for (int j = 0; j < d; j++) {
      double s = 0;
      for (int64_t i = 0; i < n; i++) s += X[i * d + j];
      double mu = s / (double)n, v = 0;
      for (int64_t i = 0; i < n; i++) v += (X[i * d + j] - mu) * (X[i * d + j] - mu);
      var += v / (double)n;
    }
    double tol = var / d * 1e-2;
    mt rng;
    mt_seed(&rng, 0);
    /* first center: random_state.randint(n) (masked rejection sampling of
     * 32-bit draws, as numpy's legacy bounded integers) */
    uint64_t rng_max = (uint64_t)(n - 1), mask = rng_max;
    for (int sh = 1; sh < 64; sh <<= 1) mask |= mask >> sh;
    int64_t first = 0;
    if (rng_max > 0) {
      uint64_t v;
      do v = mt_next(&rng) & mask;
      while (v > rng_max);
      first = (int64_t)v;
    }
    double acc;
    memcpy(C, X + first * d, (size_t)d * sizeof *C);
    double pot = 0;
    for (int64_t i = 0; i < n; i++) pot += closest[i] = dist2(X + i * d, C, d);
    int trials = 2 + (int)log((double)k);
    for (int c = 1; c < k; c++) {
      double r[64];
      for (int t = 0; t < trials; t++) r[t] = mt_double(&rng) * pot;
      acc = 0;
      for (int64_t i = 0; i < n; i++) cum[i] = acc += closest[i];
      double best_pot = INFINITY;
      int64_t best_id = 0;
      for (int t = 0; t < trials; t++) {
        int64_t id = search_left(cum, n, r[t]);
        if (id > n - 1) id = n - 1;
        double p = 0;
        for (int64_t i = 0; i < n; i++) {
          double dd = dist2(X + i * d, X + id * d, d);
          cand[i] = dd < closest[i] ? dd : closest[i];
          p += cand[i];
        }
        if (p < best_pot) {
          best_pot = p, best_id = id;
          memcpy(best_d, cand, (size_t)n * sizeof *cand);
        }
      }
      pot = best_pot;
      memcpy(closest, best_d, (size_t)n * sizeof *closest);
      memcpy(C + c * d, X + best_id * d, (size_t)d * sizeof *C);
    }
    /* Lloyd */
    for (int64_t i = 0; i < n; i++) old[i] = -1;
    bool strict = false;
    for (int it = 0; it < 300; it++) {
      assign(X, n, d, C, k, labels);
      memset(Cn, 0, (size_t)(k * d) * sizeof *Cn);
      memset(wsum, 0, (size_t)k * sizeof *wsum);
      for (int64_t i = 0; i < n; i++) {
        wsum[labels[i]] += 1;
        for (int j = 0; j < d; j++) Cn[labels[i] * d + j] += X[i * d + j];
      }
      for (int c = 0; c < k; c++) {
        if (wsum[c] > 0) {
          for (int j = 0; j < d; j++) Cn[c * d + j] /= wsum[c];
        } else {
          /* an empty cluster takes the point farthest from its center */
          int64_t far = 0;
          double fd = -1;
          for (int64_t i = 0; i < n; i++) {
            double t = dist2(X + i * d, C + labels[i] * d, d);
            if (t > fd) fd = t, far = i;
          }
          memcpy(Cn + c * d, X + far * d, (size_t)d * sizeof *Cn);
        }
      }
      double shift = 0;
      for (int c = 0; c < k; c++) shift += dist2(C + c * d, Cn + c * d, d);
      double *t = C;
      C = Cn, Cn = t;
      if (memcmp(labels, old, (size_t)n * sizeof *labels) == 0) {
        strict = true;
        break;
      }
      if (shift <= tol) break;
      memcpy(old, labels, (size_t)n * sizeof *labels);
    }
    if (!strict) assign(X, n, d, C, k, labels);
    for (int c = 0; c < k; c++)
      for (int j = 0; j < d; j++) centers_out[c * d + j] = (float)(C[c * d + j] + mean[j]);
  }
  free(X), free(mean), free(C), free(Cn), free(closest), free(cum), free(cand), free(best_d), free(wsum), free(old);
  return ok;
}
