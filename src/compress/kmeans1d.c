/* Exact optimal 1-D k-means of weighted points (the algorithm of the
 * kmeans1d package coremltools vendors, deps/kmeans1d): sorted values,
 * prefix sums of w, w*x and w*x*x in double, the dynamic program
 * D[k][i] = min_j D[k-1][j-1] + cost(j, i) with each row's minima found by
 * the SMAWK algorithm (the matrix is totally monotone), ties to the first
 * column, centroids as running weighted means. Memory: two rows of D and a
 * k x n table of split points (uint32). */
#include <stdlib.h>
#include <string.h>

#include "compress/compress_internal.h"

typedef struct km_cost {
  const double *cw, *cs, *cs2; /* prefix sums, n + 1 entries */
  const double *dprev;         /* D[k-1] */
} km_cost;

static double seg_weight(const km_cost *c, size_t i, size_t j) { return i <= j ? c->cw[j + 1] - c->cw[i] : 0.0; }

static double seg_cost(const km_cost *c, size_t i, size_t j) {
  if (j < i) return 0.0;
  double w = seg_weight(c, i, j);
  double s = c->cs[j + 1] - c->cs[i];
  double mu = s / w;
  double r = c->cs2[j + 1] - c->cs2[i];
  r += w * (mu * mu);
  r -= (2 * mu) * s;
  return r;
}

/* C(i, j): cost of rows 0..i when the last cluster starts at j. */
static double lookup(const km_cost *c, size_t i, size_t j) {
  size_t col = (j == 0 || i < j - 1) ? i : j - 1;
  return c->dprev[col] + seg_cost(c, j, i);
}

static size_t find_col(const size_t *cols, size_t n, size_t v) {
  size_t lo = 0, hi = n;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    if (cols[mid] < v) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/* Row minima of the rows x cols submatrix into result[row]. */
static bool smawk(const km_cost *c, const size_t *rows, size_t nr, const size_t *cols, size_t nc, size_t *result) {
  if (nr == 0) return true;
  size_t *live = malloc((nc ? nc : 1) * sizeof *live);
  size_t *odd = malloc((nr / 2 + 1) * sizeof *odd);
  if (!live || !odd) {
    free(live), free(odd);
    return false;
  }
  size_t nl = 0;
  for (size_t k = 0; k < nc; k++) {
    size_t col = cols[k];
    while (nl > 0) {
      size_t row = rows[nl - 1];
      if (lookup(c, row, col) >= lookup(c, row, live[nl - 1])) break;
      nl--;
    }
    if (nl < nr) live[nl++] = col;
  }
  size_t no = 0;
  for (size_t i = 1; i < nr; i += 2) odd[no++] = rows[i];
  bool ok = smawk(c, odd, no, live, nl, result);
  free(odd);
  if (!ok) {
    free(live);
    return false;
  }
  size_t start = 0;
  for (size_t r = 0; r < nr; r += 2) {
    size_t row = rows[r];
    size_t stop = nl - 1;
    if (r < nr - 1) stop = find_col(live, nl, result[rows[r + 1]]);
    size_t arg = live[start];
    double mn = lookup(c, row, arg);
    for (size_t k = start + 1; k <= stop; k++) {
      double v = lookup(c, row, live[k]);
      if (v < mn) arg = live[k], mn = v;
    }
    result[row] = arg;
    start = stop;
  }
  free(live);
  return true;
}

bool cw_kmeans1d(const double *x, const double *wt, size_t n, size_t k, uint32_t *clusters, double *centroids) {
  if (k > n) k = n;
  size_t *order = malloc(n * sizeof *order);
  double *cw = malloc((n + 1) * sizeof *cw), *cs = malloc((n + 1) * sizeof *cs), *cs2 = malloc((n + 1) * sizeof *cs2);
  double *d0 = malloc(n * sizeof *d0), *d1 = malloc(n * sizeof *d1);
  uint32_t *T = malloc(k * n * sizeof *T);
  size_t *rows = malloc(n * sizeof *rows), *res = malloc(n * sizeof *res);
  bool ok = order && cw && cs && cs2 && d0 && d1 && T && rows && res;
  if (ok) {
    /* x is sorted ascending already (np.unique's values) */
    cw[0] = cs[0] = cs2[0] = 0;
    for (size_t i = 0; i < n; i++) {
      cw[i + 1] = wt[i] + cw[i];
      cs[i + 1] = wt[i] * x[i] + cs[i];
      cs2[i + 1] = wt[i] * x[i] * x[i] + cs2[i];
      rows[i] = i;
    }
    km_cost c = {cw, cs, cs2, NULL};
    for (size_t i = 0; i < n; i++) d0[i] = seg_cost(&c, 0, i), T[i] = 0;
    for (size_t kk = 1; kk < k && ok; kk++) {
      c.dprev = d0;
      ok = smawk(&c, rows, n, rows, n, res);
      for (size_t i = 0; ok && i < n; i++) {
        d1[i] = lookup(&c, i, res[i]);
        T[kk * n + i] = (uint32_t)res[i];
      }
      double *t = d0;
      d0 = d1, d1 = t;
    }
    if (ok) {
      size_t t = n, kk = k - 1, nn = n - 1;
      for (;;) {
        size_t t_ = t;
        t = T[kk * n + nn];
        double cen = 0.0;
        for (size_t i = t; i < t_; i++) {
          clusters[i] = (uint32_t)kk;
          cen += (x[i] - cen) * seg_weight(&c, i, i) / seg_weight(&c, t, i);
        }
        centroids[kk] = cen;
        if (t == 0) break;
        kk -= 1;
        nn = t - 1;
      }
    }
  }
  free(order), free(cw), free(cs), free(cs2), free(d0), free(d1), free(T), free(rows), free(res);
  return ok;
}
