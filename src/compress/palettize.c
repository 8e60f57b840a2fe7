/* Palettization: coremltools/optimize/coreml/_quantization_passes.py
 * (palettize_weights.grouped_channelwise_compress, _get_lut_and_indices,
 * _get_nbits_for_unique_mode) and optimize/_utils.py
 * (reshape_weight_for_vector_lut): the weight's channel axis is swapped to
 * the front, split into groups of channels, each group's elements (or
 * vectors of cluster_dim elements along the channel axis) get a LUT of
 * 2^nbits entries (k-means, uniform, unique) and an index per element. */
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "compress/compress_internal.h"

static const int k_nbits[] = {1, 2, 3, 4, 6, 8};

void cw_lut_free(cw_lut *l) {
  free(l->lut);
  free(l->idx);
  memset(l, 0, sizeof *l);
}

/* np.swapaxes(w, 0, ax) as a new row-major array with shape `sh`. */
static float *swap_front(const cw_weight *w, int32_t ax, int64_t *sh) {
  float *s = malloc((size_t)(w->n ? w->n : 1) * sizeof *s);
  if (!s) return NULL;
  for (int32_t a = 0; a < w->rank; a++) sh[a] = w->shape[a];
  sh[0] = w->shape[ax], sh[ax] = w->shape[0];
  int64_t idx[MIL_CFG_MAX_RANK] = {0}, stride[MIL_CFG_MAX_RANK];
  int64_t st = 1;
  for (int32_t a = w->rank - 1; a >= 0; a--) stride[a] = st, st *= w->shape[a];
  for (int64_t i = 0; i < w->n; i++) {
    /* idx is the position in the swapped array; the source swaps 0 and ax */
    int64_t off = 0;
    for (int32_t a = 0; a < w->rank; a++) {
      int32_t src = a == 0 ? ax : a == ax ? 0 : a;
      off += idx[a] * stride[src];
    }
    s[i] = w->w[off];
    cw_next_index(idx, sh, w->rank);
  }
  return s;
}

/* The vectors of a group (gs x rest elements, row-major) as rows of cd:
 * vector (i0', r) holds elements (i0' * cd + j, r). */
static void vectorize(const float *g, int64_t gs, int64_t rest, int cd, float *out) {
  for (int64_t i0 = 0; i0 < gs / cd; i0++)
    for (int64_t r = 0; r < rest; r++)
      for (int j = 0; j < cd; j++) out[((i0 * rest) + r) * cd + j] = g[(i0 * cd + j) * rest + r];
}

typedef struct vrow {
  const float *v;
  int cd;
  int64_t i;
} vrow;

static int cmp_rows(const void *a, const void *b) {
  const vrow *x = a, *y = b;
  for (int j = 0; j < x->cd; j++) {
    if (x->v[j] < y->v[j]) return -1;
    if (x->v[j] > y->v[j]) return 1;
  }
  return x->i < y->i ? -1 : x->i > y->i;
}

/* np.unique(pts, axis=0, return_inverse=True): distinct rows sorted
 * lexicographically; returns their count, writes the inverse to inv and
 * the distinct rows to uniq (both may be NULL). -1 on out of memory. */
static int64_t unique_rows(const float *pts, int64_t n, int cd, float *uniq, int32_t *inv, double *counts) {
  vrow *r = malloc((size_t)(n ? n : 1) * sizeof *r);
  if (!r) return -1;
  for (int64_t i = 0; i < n; i++) r[i] = (vrow){pts + i * cd, cd, i};
  qsort(r, (size_t)n, sizeof *r, cmp_rows);
  int64_t u = -1;
  for (int64_t i = 0; i < n; i++) {
    if (i == 0 || memcmp(r[i].v, r[i - 1].v, (size_t)cd * sizeof(float)) != 0) {
      bool same = i > 0;
      for (int j = 0; same && j < cd; j++) same = r[i].v[j] == r[i - 1].v[j]; /* -0 == +0 */
      if (!same) {
        u++;
        if (uniq) memcpy(uniq + u * cd, r[i].v, (size_t)cd * sizeof(float));
        if (counts) counts[u] = 0;
      }
    }
    if (inv) inv[r[i].i] = (int32_t)u;
    if (counts) counts[u] += 1;
  }
  free(r);
  return u + 1;
}

/* One group: LUT (P x cd floats at the weight's precision) and labels. */
static int group_lut(const cw_weight *w, const mil_op_compress_config *cfg, int nbits, const float *pts, int64_t np_,
                     int cd, float *lut, int32_t *lab) {
  int64_t P = (int64_t)1 << nbits, nel = np_ * cd;
  memset(lut, 0, (size_t)(P * cd) * sizeof *lut);
  switch (cfg->mode) {
  case MIL_CMODE_UNIFORM: {
    float lo = INFINITY, hi = -INFINITY;
    for (int64_t i = 0; i < nel; i++) lo = fminf(lo, pts[i]), hi = fmaxf(hi, pts[i]);
    float levels = (float)(P - 1);
    float range = cw_r(w, hi - lo);
    /* numpy: (val_max - val_min) / ((1 << nbits) - 1) is a float64 scalar
     * (the Python int counts as int64), so the step is not rounded to the
     * weight's dtype */
    double scale = (double)range / (double)(P - 1);
    for (int64_t i = 0; i < nel; i++) {
      float q = rintf(cw_r(w, cw_r(w, cw_r(w, pts[i] - lo) / range) * levels));
      lab[i] = isnan(q) ? 0 : (int32_t)(uint8_t)(int32_t)q;
    }
    /* np.array(range(P)) * scale + val_min in float64, cast to the weight's dtype */
    for (int64_t k = 0; k < P; k++) {
      double x = (double)k * scale + (double)lo;
      lut[k] = w->is_half ? mil_fp16_to_fp32(mil_fp64_to_fp16(x)) : (float)x;
    }
    return 1;
  }
  case MIL_CMODE_UNIQUE: {
    int64_t u = unique_rows(pts, np_, cd, lut, lab, NULL);
    return u < 0 ? -1 : 1;
  }
  default: {
    /* k-means: kmeans1d on the unique values weighted by their counts for
     * fp16 scalars of >= 10000 elements, scikit-learn's KMeans otherwise */
    if (cd == 1 && nel >= 10000 && w->is_half) {
      float *uv = malloc((size_t)nel * sizeof *uv);
      double *cnt = malloc((size_t)nel * sizeof *cnt), *x = NULL, *cen = NULL;
      uint32_t *cl = NULL;
      int64_t u = uv && cnt ? unique_rows(pts, np_, 1, uv, lab, cnt) : -1;
      int r = -1;
      if (u > 0 && (x = malloc((size_t)u * sizeof *x)) && (cen = malloc((size_t)P * sizeof *cen)) &&
          (cl = malloc((size_t)u * sizeof *cl))) {
        for (int64_t i = 0; i < u; i++) x[i] = uv[i];
        size_t kk = (size_t)(u < P ? u : P);
        if (cw_kmeans1d(x, cnt, (size_t)u, kk, cl, cen)) {
          for (size_t k = 0; k < kk; k++) lut[k] = mil_fp16_to_fp32(mil_fp64_to_fp16(cen[k]));
          for (int64_t i = 0; i < nel; i++) lab[i] = (int32_t)cl[lab[i]];
          r = 1;
        }
      }
      free(uv), free(cnt), free(x), free(cen), free(cl);
      return r;
    }
    int64_t k = nel < P ? nel : P;
    if (np_ < k) return 0; /* scikit-learn refuses fewer samples than clusters */
    float *cen = malloc((size_t)(k * cd) * sizeof *cen);
    if (!cen || !cw_kmeans_sklearn(pts, np_, cd, (int)k, cen, lab)) {
      free(cen);
      return -1;
    }
    for (int64_t i = 0; i < k * cd; i++) lut[i] = cw_r(w, cen[i]);
    free(cen);
    return 1;
  }
  }
}

/* The groups to palettize, shared by the worker threads. */
typedef struct pal_job {
  const cw_weight *w;
  const mil_op_compress_config *cfg;
  int nbits;
  const float *s; /* swapped weight */
  int64_t gel, group_size, rest;
  int cd;
  int64_t gpts, P;
  float *lut;
  int32_t *sidx;
  int64_t G, next;
  int result; /* 1, or the first 0 / -1 */
  pthread_mutex_t mu;
} pal_job;

static void *pal_worker(void *arg) {
  pal_job *j = arg;
  float *pts = malloc((size_t)(j->gel ? j->gel : 1) * sizeof *pts);
  int32_t *lab = malloc((size_t)(j->gpts ? j->gpts : 1) * sizeof *lab);
  for (;;) {
    pthread_mutex_lock(&j->mu);
    int64_t g = j->result > 0 && pts && lab ? j->next++ : j->G;
    if (!pts || !lab) j->result = -1;
    pthread_mutex_unlock(&j->mu);
    if (g >= j->G) break;
    if (j->cd > 1) vectorize(j->s + g * j->gel, j->group_size, j->rest, j->cd, pts);
    else memcpy(pts, j->s + g * j->gel, (size_t)j->gel * sizeof *pts);
    int r = group_lut(j->w, j->cfg, j->nbits, pts, j->gpts, j->cd, j->lut + g * j->P * j->cd, lab);
    if (r > 0) memcpy(j->sidx + g * j->gpts, lab, (size_t)j->gpts * sizeof *lab);
    pthread_mutex_lock(&j->mu);
    if (r <= 0 && j->result > 0) j->result = r;
    pthread_mutex_unlock(&j->mu);
  }
  free(pts), free(lab);
  return NULL;
}

int cw_palettize(const cw_weight *w, const mil_op_compress_config *cfg, int32_t ch_axis, int64_t group_size,
                 cw_lut *out) {
  memset(out, 0, sizeof *out);
  int32_t rank = w->rank;
  int cd = (int)cfg->cluster_dim;
  if (ch_axis < 0) ch_axis += rank;
  if (ch_axis < 0 || ch_axis >= rank) return 0;
  int64_t chn = w->shape[ch_axis];
  if (group_size == 0) group_size = chn;
  if (chn % group_size != 0 || group_size % cd != 0) return 0;
  int64_t G = chn / group_size, sh[MIL_CFG_MAX_RANK];
  float *s = swap_front(w, ch_axis, sh);
  if (!s) return -1;
  int64_t rest = w->n / (chn ? chn : 1), gel = group_size * rest, gpts = gel / cd;
  float *pts = malloc((size_t)(gel ? gel : 1) * sizeof *pts);
  int nbits = cfg->nbits;
  int r = pts ? 1 : -1;
  /* unique mode: the largest nbits any group needs */
  if (r > 0 && cfg->mode == MIL_CMODE_UNIQUE) {
    nbits = 0;
    for (int64_t g = 0; g < G && r > 0; g++) {
      if (cd > 1) vectorize(s + g * gel, group_size, rest, cd, pts);
      else memcpy(pts, s + g * gel, (size_t)gel * sizeof *pts);
      int64_t u = unique_rows(pts, gpts, cd, NULL, NULL, NULL);
      if (u < 0) r = -1;
      int nb = 0;
      for (int i = 0; i < 6 && !nb; i++)
        if (u <= (1 << k_nbits[i])) nb = k_nbits[i];
      if (!nb) r = 0; /* more than 256 distinct values: skipped */
      if (nb > nbits) nbits = nb;
    }
  }
  int64_t P = (int64_t)1 << nbits;
  if (r > 0) {
    out->lut = malloc((size_t)(G * P * cd) * sizeof *out->lut);
    out->idx = malloc((size_t)(w->n / cd ? w->n / cd : 1) * sizeof *out->idx);
    if (!out->lut || !out->idx) r = -1;
  }
  int32_t *sidx = r > 0 ? malloc((size_t)(w->n / cd ? w->n / cd : 1) * sizeof *sidx) : NULL;
  if (r > 0 && !sidx) r = -1;
  if (r > 0) {
    /* groups are independent (each k-means starts from random_state 0):
     * they are spread over worker threads, which gives the same result */
    pal_job job = {w, cfg, nbits, s, gel, group_size, rest, cd, gpts, P, out->lut, sidx, G, 0, 1, PTHREAD_MUTEX_INITIALIZER};
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    int nt = G > 1 && gel >= 4096 ? (int)(ncpu < 1 ? 1 : ncpu > 8 ? 8 : ncpu) : 1;
    if (nt > G) nt = (int)G;
    pthread_t th[8];
    int started = 0;
    for (int t = 1; t < nt; t++)
      if (pthread_create(&th[t], NULL, pal_worker, &job) == 0) started++;
    pal_worker(&job);
    for (int t = 1; t <= started; t++) pthread_join(th[t], NULL);
    r = job.result;
  }
  if (r > 0) {
    /* indices: swapped layout [chn / cd, ...] back to the weight's layout */
    int64_t ish[MIL_CFG_MAX_RANK] = {0};
    for (int32_t a = 0; a < rank; a++) ish[a] = sh[a];
    ish[0] /= cd;
    out->idx_rank = rank;
    for (int32_t a = 0; a < rank; a++) out->idx_shape[a] = w->shape[a];
    out->idx_shape[ch_axis] /= cd;
    int64_t idx[MIL_CFG_MAX_RANK] = {0}, stride[MIL_CFG_MAX_RANK], st = 1;
    for (int32_t a = rank - 1; a >= 0; a--) stride[a] = st, st *= out->idx_shape[a];
    for (int64_t i = 0; i < w->n / cd; i++) {
      int64_t off = 0;
      for (int32_t a = 0; a < rank; a++) {
        int32_t dst = a == 0 ? ch_axis : a == ch_axis ? 0 : a;
        off += idx[a] * stride[dst];
      }
      out->idx[off] = (uint8_t)sidx[i];
      cw_next_index(idx, ish, rank);
    }
    out->nbits = nbits;
    out->groups = G;
    out->cd = cd;
    out->lut_rank = rank + 2;
    for (int32_t a = 0; a < rank; a++) out->lut_shape[a] = 1;
    out->lut_shape[ch_axis] = G;
    out->lut_shape[rank] = P;
    out->lut_shape[rank + 1] = cd;
    out->vector_axis = ch_axis;
  }
  free(s), free(pts), free(sidx);
  if (r <= 0) cw_lut_free(out);
  return r;
}
