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

typedef struct cpos {
  double v;
  int i;
} cpos;

static int cmp_cpos(const void *a, const void *b) {
  const cpos *x = a, *y = b;
  return x->v < y->v ? -1 : x->v > y->v ? 1 : x->i - y->i;
}

/* Nearest center of each scalar point: the nearest is one of the two
 * centers around it in sorted order; equal distances go to the lower
 * center index, as the scan over all centers does. */
static void assign1d(const double *X, const int64_t *order, int64_t n, const double *C, int k, int32_t *labels) {
  cpos s[256];
  int m = 0;
  for (int c = 0; c < k; c++) s[c] = (cpos){C[c], c};
  qsort(s, (size_t)k, sizeof *s, cmp_cpos);
  for (int c = 0; c < k; c++)
    if (m == 0 || s[c].v != s[m - 1].v) s[m++] = s[c]; /* equal centers: the lowest index */
  /* points in ascending order: the center at or below each moves up only */
  int lo = 0;
  for (int64_t p = 0; p < n; p++) {
    int64_t i = order[p];
    double x = X[i];
    while (lo + 1 < m && s[lo + 1].v <= x) lo++;
    int best = lo;
    if (lo + 1 < m) {
      double a = x - s[lo].v, b = x - s[lo + 1].v;
      double da = a * a, db = b * b;
      if (db < da || (db == da && s[lo + 1].i < s[lo].i)) best = lo + 1;
    }
    labels[i] = s[best].i;
  }
}

static void assign(const double *X, const int64_t *order, int64_t n, int d, const double *C, int k,
                   int32_t *labels) {
  if (order) {
    assign1d(X, order, n, C, k, labels);
    return;
  }
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

/* ---------- k-means++ on scalars ----------
 * The same choices as the general seeding below, computed per candidate
 * only over the points the candidate would take over: in one dimension
 * those form an interval around it in sorted order. The running potential
 * and the prefix sums the candidates are drawn from are kept as sums over
 * blocks of the points in index order. */

/* Prefix sums of the points' potentials in index order: the values and
 * sums over blocks of 64. */
typedef struct fen {
  double *val, *blk;
  int64_t n;
} fen;

static void fen_add(fen *f, int64_t i, double v) {
  f->val[i] += v;
  f->blk[i >> 6] += v;
}

/* first index whose prefix sum (inclusive) reaches v: searchsorted("left") */
static int64_t fen_search(const fen *f, double v) {
  double acc = 0;
  int64_t nb = (f->n + 63) >> 6;
  for (int64_t b = 0; b < nb; b++) {
    if (acc + f->blk[b] >= v) {
      for (int64_t i = b << 6; i < f->n && i < (b + 1) << 6; i++)
        if ((acc += f->val[i]) >= v) return i;
      return (b + 1) << 6 < f->n ? (b + 1) << 6 : f->n;
    }
    acc += f->blk[b];
  }
  return f->n;
}

/* What a candidate at sorted position p0 would save: the points around it
 * (in sorted order, xs / cs) closer to it than to their center. With
 * apply, they move to it (cs and the prefix sums over index order). */
static double cell_gain(const double *xs, double *cs, const int64_t *idx, int64_t n, fen *f, int64_t p0,
                        bool apply) {
  double c = xs[p0], gain = 0;
  for (int dir = -1; dir <= 1; dir += 2) {
    for (int64_t p = p0 + (dir > 0); p >= 0 && p < n; p += dir) {
      double u = xs[p] - c, dd = u * u;
      if (!(dd < cs[p])) {
        if (dd > cs[p]) break;
        continue; /* equal: no change, the interval may go on */
      }
      gain += cs[p] - dd;
      if (apply) {
        fen_add(f, idx[p], dd - cs[p]);
        cs[p] = dd;
      }
    }
  }
  return gain;
}

/* Stable LSD radix sort of the points' indices by their float value (the
 * float bits mapped to an unsigned order, 3 passes of 11 bits). */
static bool radix_order(const float *x, int64_t n, int64_t *order) {
  uint32_t *key = malloc((size_t)n * sizeof *key);
  int64_t *tmp = malloc((size_t)n * sizeof *tmp);
  if (!key || !tmp) {
    free(key), free(tmp);
    return false;
  }
  for (int64_t i = 0; i < n; i++) {
    uint32_t b;
    memcpy(&b, &x[i], 4);
    key[i] = b & 0x80000000u ? ~b : b | 0x80000000u;
    order[i] = i;
  }
  for (int pass = 0; pass < 3; pass++) {
    int sh = pass * 11;
    int64_t cnt[2049] = {0};
    for (int64_t i = 0; i < n; i++) cnt[((key[order[i]] >> sh) & 2047) + 1]++;
    for (int b = 0; b < 2048; b++) cnt[b + 1] += cnt[b];
    for (int64_t i = 0; i < n; i++) tmp[cnt[(key[order[i]] >> sh) & 2047]++] = order[i];
    memcpy(order, tmp, (size_t)n * sizeof *order);
  }
  free(key), free(tmp);
  return true;
}

static bool seed_1d(const double *X, const int64_t *order, int64_t n, int k, int trials, mt *rng, int64_t first,
                    double *C) {
  double *xs = malloc((size_t)n * sizeof *xs), *cs = malloc((size_t)n * sizeof *cs);
  int64_t *rank = malloc((size_t)n * sizeof *rank);
  fen f = {calloc((size_t)n, sizeof(double)), calloc((size_t)(n + 63) / 64, sizeof(double)), n};
  bool ok = xs && cs && rank && f.val && f.blk;
  if (ok) {
    for (int64_t p = 0; p < n; p++) {
      xs[p] = X[order[p]];
      rank[order[p]] = p;
    }
    double pot = 0;
    for (int64_t i = 0; i < n; i++) {
      double u = X[i] - X[first], dd = u * u;
      cs[rank[i]] = dd;
      pot += dd;
      fen_add(&f, i, dd);
    }
    C[0] = X[first];
    for (int c = 1; c < k; c++) {
      int64_t ids[64];
      double best_pot = 0;
      int best = 0;
      for (int t = 0; t < trials; t++) {
        int64_t id = fen_search(&f, mt_double(rng) * pot);
        ids[t] = id > n - 1 ? n - 1 : id;
      }
      for (int t = 0; t < trials; t++) {
        double pt = pot - cell_gain(xs, cs, order, n, &f, rank[ids[t]], false);
        if (t == 0 || pt < best_pot) best_pot = pt, best = t;
      }
      cell_gain(xs, cs, order, n, &f, rank[ids[best]], true);
      pot = best_pot;
      C[c] = X[ids[best]];
    }
  }
  free(xs), free(cs), free(rank), free(f.val), free(f.blk);
  return ok;
}

bool cw_kmeans_sklearn(const float *pts, int64_t n, int d, int k, float *centers_out, int32_t *labels) {
  double *X = malloc((size_t)(n * d) * sizeof *X), *mean = calloc((size_t)d, sizeof *mean);
  double *C = malloc((size_t)(k * d) * sizeof *C), *Cn = malloc((size_t)(k * d) * sizeof *Cn);
  double *closest = malloc((size_t)n * sizeof *closest), *cum = malloc((size_t)n * sizeof *cum);
  double *cand = malloc((size_t)n * sizeof *cand), *best_d = malloc((size_t)n * sizeof *best_d);
  double *wsum = malloc((size_t)k * sizeof *wsum);
  int32_t *old = malloc((size_t)n * sizeof *old);
  int64_t *order = NULL; /* scalar points: ascending order */
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
    int trials = 2 + (int)log((double)k);
    if (d == 1 && trials <= 64) {
      ok = (order = malloc((size_t)n * sizeof *order)) && radix_order(pts, n, order) &&
           seed_1d(X, order, n, k, trials, &rng, first, C);
      goto lloyd;
    }
    memcpy(C, X + first * d, (size_t)d * sizeof *C);
    double pot = 0;
    for (int64_t i = 0; i < n; i++) pot += closest[i] = dist2(X + i * d, C, d);
    int64_t ids[64];
    double tp[64];
    for (int c = 1; c < k; c++) {
      double r[64];
      for (int t = 0; t < trials; t++) r[t] = mt_double(&rng) * pot;
      acc = 0;
      for (int64_t i = 0; i < n; i++) cum[i] = acc += closest[i];
      for (int t = 0; t < trials; t++) {
        int64_t id = search_left(cum, n, r[t]);
        ids[t] = id > n - 1 ? n - 1 : id;
        tp[t] = 0;
      }
      /* the potential each candidate would leave, all candidates in one pass */
      if (d == 1) {
        for (int64_t i = 0; i < n; i++) {
          double xi = X[i], ci = closest[i];
          for (int t = 0; t < trials; t++) {
            double u = xi - X[ids[t]], dd = u * u;
            tp[t] += dd < ci ? dd : ci;
          }
        }
      } else {
        for (int64_t i = 0; i < n; i++)
          for (int t = 0; t < trials; t++) {
            double dd = dist2(X + i * d, X + ids[t] * d, d);
            tp[t] += dd < closest[i] ? dd : closest[i];
          }
      }
      int best = 0;
      for (int t = 1; t < trials; t++)
        if (tp[t] < tp[best]) best = t;
      pot = tp[best];
      const double *cb = X + ids[best] * d;
      for (int64_t i = 0; i < n; i++) {
        double dd = dist2(X + i * d, cb, d);
        if (dd < closest[i]) closest[i] = dd;
      }
      memcpy(C + c * d, cb, (size_t)d * sizeof *C);
    }
  lloyd:
    /* Lloyd */
    for (int64_t i = 0; ok && i < n; i++) old[i] = -1;
    bool strict = false;
    for (int it = 0; ok && it < 300; it++) {
      assign(X, order, n, d, C, k, labels);
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
    if (ok && !strict) assign(X, order, n, d, C, k, labels);
    for (int c = 0; c < k; c++)
      for (int j = 0; j < d; j++) centers_out[c * d + j] = (float)(C[c * d + j] + mean[j]);
  }
  free(X), free(mean), free(C), free(Cn), free(closest), free(cum), free(cand), free(best_d), free(wsum), free(old), free(order);
  return ok;
}
