/* Deferred values: a weight's cast or transpose computed from its source
 * only when its bytes are read.
 *
 * add_fp16_cast casts every fp32 weight of a model to fp16, and coremltools'
 * value inference computes each cast right away (np.astype), as it does the
 * transposes of weights that fusions and reduce_transposes introduce. For
 * a model whose weights are gigabytes, computing them during the pipeline
 * means holding the new copies in memory until the model is saved, and
 * paying for the copies while the graph passes wait. A deferred value holds
 * only a recipe over its source (typically a weight-file view, which costs
 * no memory while its pages are not touched): an optional per-channel
 * scaling (a conv weight with a batch_norm or scale folded into it), an
 * optional matrix transpose, then a conversion. Its bytes come from mil_value_data (computed once and
 * kept) or mil_value_read (computed piecewise, not kept), and the weight
 * writer streams them to the output file; element reads convert the one
 * element. Results are bit-identical to computing eagerly: the same
 * conversion kernels round every element, and a transpose only moves them.
 */
#include <stdlib.h>
#include <string.h>

#include "core/core_internal.h"

typedef enum conv {
  CONV_COPY,        /* same dtype as the source */
  CONV_F32_F16,     /* fp32 -> fp16 */
  CONV_F32_F16_F32, /* fp32 -> fp16 -> fp32: the source rounded to fp16 */
} conv;

/* A per-channel scaling of the source elements (mil_value_new_deferred_scale):
 * element e, in run r = e / run, becomes the source dtype's rounding of the
 * product (in dtype prod) with f[(r % period) * mult + (r / period) / div]. */
struct ir_scale {
  int64_t run, period, mult, div;
  mil_dtype prod; /* fp16, fp32 or fp64 */
  const double *f;
};

/* The source elements whose mask bit is set, in order
 * (mil_value_new_deferred_masked): the mask bits (LSB first, one per
 * source element) and, per block of MASK_BLOCK source elements, how many
 * are kept before it, so a read of any range starts without a scan. */
#define MASK_BLOCK ((int64_t)1 << 14)
struct ir_masked {
  const mil_value *mask; /* kept alive with the value (ir_deferred_mark_extra) */
  const uint8_t *bits;
  const int64_t *before; /* nblocks + 1 entries */
  int64_t nblocks;
};

struct ir_deferred {
  mil_program *p;
  const mil_value *src; /* fp32 or fp16, bytes not deferred */
  const struct ir_masked *masked; /* the only step when set */
  const struct ir_scale *scale; /* applied to the source first, or NULL */
  conv conv;
  /* transposed: the value is src seen as rows x cols, transposed (element
   * (i, j) of the cols x rows result is source element j * cols + i) */
  bool transposed;
  int64_t rows, cols;
};

/* Elements per step when streaming (8 MiB of fp32): large enough for the
 * bulk kernels' threads, small enough to give source pages back as it
 * goes. */
#define PIECE ((size_t)2 << 20)

static size_t src_es(const struct ir_deferred *d) { return d->src->type->dtype == MIL_DT_FP32 ? 4 : 2; }

static mil_dtype out_dtype(const struct ir_deferred *d) {
  return d->conv == CONV_COPY ? d->src->type->dtype : d->conv == CONV_F32_F16 ? MIL_DT_FP16 : MIL_DT_FP32;
}

/* A new deferred value of recipe r and the given shape. */
static mil_value *make(mil_program *p, const struct ir_deferred *r, int32_t rank, const int64_t *shape,
                       bool is_scalar) {
  mil_dtype dt = out_dtype(r);
  const mil_type *t = is_scalar && rank == 0 ? mil_type_scalar(p, dt) : mil_type_tensor_shape(p, dt, rank, shape);
  mil_value *v = ir_arena_alloc(p->arena, sizeof *v);
  struct ir_deferred *d = ir_arena_alloc(p->arena, sizeof *d);
  if (!t || !v || !d) return NULL;
  *d = *r;
  d->p = p;
  v->kind = MIL_VAL_TENSOR;
  v->type = t;
  v->numel = r->src->numel;
  v->nbytes = (size_t)v->numel * (dt == MIL_DT_FP16 ? 2 : 4);
  v->storage = MIL_STORE_ARENA;
  v->deferred = d;
  return v;
}

/* The recipe reading v as it is: v's own, or a plain copy of v's bytes. */
static bool recipe_of(const mil_value *v, struct ir_deferred *r) {
  if (!v || v->kind != MIL_VAL_TENSOR || !v->type) return false;
  if (v->deferred) {
    if (v->deferred->masked) return false; /* no recipe composes with a gather */
    *r = *v->deferred;
    return true;
  }
  mil_dtype dt = v->type->dtype;
  if ((dt != MIL_DT_FP32 && dt != MIL_DT_FP16) || v->numel < 1 || !v->raw ||
      v->nbytes != (size_t)v->numel * (dt == MIL_DT_FP32 ? 4 : 2))
    return false;
  *r = (struct ir_deferred){.src = v, .conv = CONV_COPY};
  return true;
}

static int32_t shape_of(const mil_value *v, int64_t *shape) {
  for (int32_t i = 0; i < v->type->rank && i < 64; i++) shape[i] = v->type->dims[i].size;
  return v->type->rank;
}

mil_value *mil_value_new_deferred_cast(mil_program *p, const mil_value *src, mil_dtype to) {
  struct ir_deferred r;
  if (!p || !recipe_of(src, &r) || src->type->rank > 64) return NULL;
  mil_dtype from = src->type->dtype;
  if (from == MIL_DT_FP32 && to == MIL_DT_FP16 && r.conv == CONV_COPY) r.conv = CONV_F32_F16;
  else if (from == MIL_DT_FP32 && to == MIL_DT_FP16 && r.conv == CONV_F32_F16_F32) r.conv = CONV_F32_F16;
  else if (from == MIL_DT_FP16 && to == MIL_DT_FP32 && r.conv == CONV_F32_F16) r.conv = CONV_F32_F16_F32;
  else return NULL; /* fp16 -> fp32 of fp16 bytes is a plain bulk conversion; no recipe for it */
  int64_t shape[64];
  int32_t rank = shape_of(src, shape);
  return make(p, &r, rank, shape, src->type->is_scalar);
}

mil_value *mil_value_new_deferred_transpose(mil_program *p, const mil_value *src, int32_t rank,
                                            const int64_t *perm) {
  struct ir_deferred r;
  if (!p || !recipe_of(src, &r) || rank != src->type->rank || rank < 1 || rank > 64) return NULL;
  if (r.scale) return NULL; /* the scaling follows the source order; the caller computes the transpose */
  int64_t shape[64], oshape[64];
  shape_of(src, shape);
  /* the perm without size-1 axes must be a rotation: axes k.. then 0..k-1 */
  int32_t keep[64], nk = 0, first = -1;
  for (int32_t i = 0; i < rank; i++) {
    if (perm[i] < 0 || perm[i] >= rank) return NULL;
    oshape[i] = shape[perm[i]];
    if (shape[perm[i]] != 1) keep[nk++] = (int32_t)perm[i];
  }
  int64_t rows = 1, cols = 1;
  for (int32_t i = 0; i < nk; i++) {
    if (i > 0 && keep[i] < keep[i - 1] && first >= 0) return NULL;
    if (i > 0 && keep[i] < keep[i - 1]) first = i; /* where the leading run of source axes starts */
  }
  for (int32_t i = 0; i < nk; i++) {
    /* axes before `first` in the result are the source's trailing ones */
    if (first >= 0 && i < first) cols *= shape[keep[i]];
    else rows *= shape[keep[i]];
  }
  if (first < 0) { /* the order of the axes that matter is unchanged: a reshape of the same bytes */
    rows = 1;
    cols = src->numel;
  } else {
    /* the trailing run must be the source's last axes, in order, after the leading run */
    for (int32_t i = 1; i < first; i++)
      if (keep[i] != keep[i - 1] + 1) return NULL;
    for (int32_t i = first + 1; i < nk; i++)
      if (keep[i] != keep[i - 1] + 1) return NULL;
  }
  if (first >= 0) {
    if (r.transposed) {
      /* transposing back along the same split gives the source order */
      if (rows != r.cols || cols != r.rows) return NULL;
      r.transposed = false;
    } else {
      r.transposed = true;
      r.rows = rows;
      r.cols = cols;
    }
  }
  return make(p, &r, rank, oshape, false);
}

bool mil_value_is_deferred(const mil_value *v) { return v && v->kind == MIL_VAL_TENSOR && v->deferred; }

bool mil_value_deferred_is_permutation(const mil_value *v) {
  return mil_value_is_deferred(v) && v->deferred->conv == CONV_COPY && !v->deferred->scale && !v->deferred->masked;
}

bool mil_value_deferred_is_fp16_rounding(const mil_value *v) {
  return mil_value_is_deferred(v) && v->deferred->conv == CONV_F32_F16_F32 && !v->deferred->scale &&
         !v->deferred->masked;
}

mil_value *mil_value_new_deferred_masked(mil_program *p, const mil_value *src, const mil_value *mask, int64_t nnz) {
  if (!p || !src || !mask || src->kind != MIL_VAL_TENSOR || !src->type || src->deferred || !src->raw ||
      mask->kind != MIL_VAL_TENSOR || !mask->type || mask->deferred || nnz < 1)
    return NULL;
  mil_dtype dt = src->type->dtype, mdt = mask->type->dtype;
  int64_t n = src->numel;
  if ((dt != MIL_DT_FP32 && dt != MIL_DT_FP16) || n < 1 || src->nbytes != (size_t)n * (dt == MIL_DT_FP32 ? 4 : 2) ||
      (mdt != MIL_DT_UINT8 && mdt != MIL_DT_UINT1) || mask->nbytes != (size_t)(n + 7) / 8)
    return NULL;
  const uint8_t *bits = mil_value_data(mask);
  int64_t nb = (n + MASK_BLOCK - 1) / MASK_BLOCK;
  struct ir_masked *m = ir_arena_alloc(p->arena, sizeof *m);
  int64_t *before = ir_arena_alloc(p->arena, (size_t)(nb + 1) * sizeof *before);
  if (!bits || !m || !before) return NULL;
  before[0] = 0;
  for (int64_t b = 0; b < nb; b++) {
    int64_t len = n - b * MASK_BLOCK < MASK_BLOCK ? n - b * MASK_BLOCK : MASK_BLOCK;
    before[b + 1] = before[b] + mil_bits_count(bits + b * (MASK_BLOCK / 8), len);
  }
  if (before[nb] != nnz) return NULL;
  *m = (struct ir_masked){mask, bits, before, nb};
  struct ir_deferred r = {.src = src, .masked = m, .conv = CONV_COPY};
  mil_value *v = make(p, &r, 1, &nnz, false);
  if (!v) return NULL;
  v->numel = nnz;
  v->nbytes = (size_t)nnz * (dt == MIL_DT_FP16 ? 2 : 4);
  return v;
}

/* Kept elements [e0, e0 + n) of a masked recipe into dst: from the block
 * holding kept element e0, eight source elements a step (each stored,
 * the output advancing by its mask bit) while eight more fit in dst. */
#define GATHER(T)                                                                            \
  do {                                                                                       \
    const T *x = (const T *)d->src->raw;                                                     \
    T *o = dst;                                                                              \
    size_t j = 0;                                                                            \
    for (; i < end && j < n; i += 8) {                                                       \
      unsigned mb = bits[i >> 3];                                                            \
      if (skip) { /* drop the kept elements before e0 in this byte */                        \
        unsigned c = (unsigned)__builtin_popcount(mb);                                       \
        if (c <= skip) {                                                                     \
          skip -= c;                                                                         \
          continue;                                                                          \
        }                                                                                    \
        for (; skip; skip--) mb &= mb - 1;                                                   \
      }                                                                                      \
      if (j + 8 <= n && i + 8 <= end) {                                                      \
        for (unsigned e = 0; e < 8; e++) {                                                   \
          o[j] = x[i + e];                                                                   \
          j += (mb >> e) & 1;                                                                \
        }                                                                                    \
      } else {                                                                               \
        for (; mb && j < n; mb &= mb - 1) o[j++] = x[i + (size_t)__builtin_ctz(mb)];          \
      }                                                                                      \
    }                                                                                        \
  } while (0)

static void produce_masked(const struct ir_deferred *d, size_t e0, size_t n, void *dst) {
  const struct ir_masked *m = d->masked;
  /* the last block with `before` at most e0 */
  int64_t lo = 0, hi = m->nblocks - 1;
  while (lo < hi) {
    int64_t mid = (lo + hi + 1) / 2;
    if (m->before[mid] <= (int64_t)e0) lo = mid;
    else hi = mid - 1;
  }
  const uint8_t *bits = m->bits;
  size_t i = (size_t)(lo * MASK_BLOCK), end = (size_t)d->src->numel;
  size_t skip = e0 - (size_t)m->before[lo];
  /* whole 64-element words of the block before kept element e0 */
  while (skip >= 64 && i + 64 <= end) {
    size_t c = (size_t)mil_bits_count(bits + (i >> 3), 64);
    if (c > skip) break;
    skip -= c;
    i += 64;
  }
  if (d->src->type->dtype == MIL_DT_FP16) GATHER(uint16_t);
  else GATHER(uint32_t);
  if (e0 + n == (size_t)m->before[m->nblocks]) mil_value_release_range(d->src, 0, d->src->nbytes);
}

/* ---- per-channel scaling ----
 *
 * numpy computes `(w[i] * f).astype(w.dtype)` on an fp32 array in fp32, or
 * in fp64 for an fp64 factor (then rounded to fp32); on an fp16 array it
 * converts each element to float, multiplies and rounds to fp16 (the
 * product of an fp16 element and an fp16 factor is exact in float, so that
 * is numpy's half multiply; an fp32 product is rounded to fp32 and then to
 * fp16, numpy's two steps), and an fp64 product is rounded to fp16 once.
 * The fp32 loops take eight elements a step with vector extensions (two
 * SSE multiplies); fp16 goes through the F16C converters in pieces that
 * stay in the L1 cache. */

typedef float f32x4 __attribute__((vector_size(16)));

/* out[i] = in[i] * f in fp32 (in and out may be the same array). */
static void mul_f32(const float *in, float *out, size_t n, float f) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    f32x4 x, y;
    memcpy(&x, in + i, sizeof x);
    memcpy(&y, in + i + 4, sizeof y);
    x *= f;
    y *= f;
    memcpy(out + i, &x, sizeof x);
    memcpy(out + i + 4, &y, sizeof y);
  }
  for (; i < n; i++) out[i] = in[i] * f;
}

#define HALF_PIECE 2048

static void mul_f16(const uint16_t *in, uint16_t *out, size_t n, double f, mil_dtype prod) {
  if (prod == MIL_DT_FP64) {
    for (size_t i = 0; i < n; i++) out[i] = mil_fp64_to_fp16((double)mil_fp16_to_fp32(in[i]) * f);
    return;
  }
  float buf[HALF_PIECE], ff = (float)f;
  for (size_t at = 0; at < n; at += HALF_PIECE) {
    size_t len = n - at < HALF_PIECE ? n - at : HALF_PIECE;
    mil_fp16_to_fp32_array(in + at, buf, len);
    mul_f32(buf, buf, len, ff);
    mil_fp32_to_fp16_array(buf, out + at, len);
  }
}

/* Scaled source elements [e, e + n) into dst (source dtype). */
static void scale_range(const struct ir_deferred *d, size_t e, size_t n, void *dst) {
  const struct ir_scale *sc = d->scale;
  bool half = d->src->type->dtype == MIL_DT_FP16;
  const uint8_t *s = d->src->raw;
  uint8_t *o = dst;
  size_t es = half ? 2 : 4, run = (size_t)sc->run;
  while (n) {
    size_t r = e / run, len = run - e % run;
    if (len > n) len = n;
    double f = sc->f[(int64_t)(r % (size_t)sc->period) * sc->mult + (int64_t)(r / (size_t)sc->period) / sc->div];
    if (half) {
      mul_f16((const uint16_t *)(const void *)(s + e * es), (uint16_t *)(void *)o, len, f, sc->prod);
    } else if (sc->prod == MIL_DT_FP32) {
      mul_f32((const float *)(const void *)(s + e * es), (float *)(void *)o, len, (float)f);
    } else {
      const float *in = (const float *)(const void *)(s + e * es);
      float *out = (float *)(void *)o;
      for (size_t i = 0; i < len; i++) out[i] = (float)((double)in[i] * f);
    }
    e += len, n -= len, o += len * es;
  }
}

mil_value *mil_value_new_deferred_scale(mil_program *p, const mil_value *src, const mil_scale_map *map,
                                        const double *factors, int64_t n_factors, mil_dtype product) {
  if (!p || !src || !map || !factors || src->kind != MIL_VAL_TENSOR || !src->type || src->deferred || !src->raw ||
      src->type->rank > 64)
    return NULL;
  mil_dtype dt = src->type->dtype;
  if (dt != MIL_DT_FP32 && dt != MIL_DT_FP16) return NULL;
  if (product != MIL_DT_FP64 && product != MIL_DT_FP32 && !(product == MIL_DT_FP16 && dt == MIL_DT_FP16)) return NULL;
  int64_t n = src->numel;
  if (n < 1 || src->nbytes != (size_t)n * (dt == MIL_DT_FP32 ? 4 : 2) || map->run < 1 || n % map->run != 0 ||
      map->period < 1 || map->div < 1 || map->mult < 0 || n_factors < 1)
    return NULL;
  /* the largest factor index any run asks for */
  int64_t runs = n / map->run, first = runs < map->period ? runs : map->period;
  if ((first - 1) * map->mult + ((runs - 1) / map->period) / map->div >= n_factors) return NULL;
  struct ir_scale *sc = ir_arena_alloc(p->arena, sizeof *sc);
  double *f = ir_arena_alloc(p->arena, (size_t)n_factors * sizeof *f);
  if (!sc || !f) return NULL;
  memcpy(f, factors, (size_t)n_factors * sizeof *f);
  *sc = (struct ir_scale){map->run, map->period, map->mult, map->div, product, f};
  struct ir_deferred r = {.src = src, .scale = sc, .conv = CONV_COPY};
  int64_t shape[64];
  int32_t rank = shape_of(src, shape);
  return make(p, &r, rank, shape, src->type->is_scalar);
}

const mil_value *mil_value_deferred_source(const mil_value *v) {
  return mil_value_is_deferred(v) ? v->deferred->src : NULL;
}

/* n source-dtype elements at s converted into dst. */
static void convert(conv c, mil_dtype sdt, const void *s, void *dst, size_t n) {
  if (c == CONV_COPY) {
    memcpy(dst, s, n * (sdt == MIL_DT_FP32 ? 4 : 2));
  } else if (c == CONV_F32_F16) {
    mil_fp32_to_fp16_array(s, dst, n);
  } else {
    uint16_t tmp[2048];
    for (size_t at = 0; at < n; at += 2048) {
      size_t k = n - at < 2048 ? n - at : 2048;
      mil_fp32_to_fp16_array((const float *)s + at, tmp, k);
      mil_fp16_to_fp32_array(tmp, (float *)dst + at, k);
    }
  }
}

/* Source elements of result elements [e, e + n) of a transposed recipe, in
 * result order, into g: whole result rows 16 at a time (each step reads 16
 * neighbouring source elements of one source row), else a row's part. */
static void gather(const struct ir_deferred *d, size_t e, size_t n, uint8_t *g) {
  size_t es = src_es(d), R = (size_t)d->rows, C = (size_t)d->cols;
  const uint8_t *s = d->src->raw;
  while (n) {
    size_t i = e / R, j = e % R;
    if (j == 0 && n >= 16 * R) {
      for (size_t jj = 0; jj < R; jj++) {
        const uint8_t *sp = s + (jj * C + i) * es;
        if (es == 4)
          for (size_t t = 0; t < 16; t++) memcpy(g + (t * R + jj) * 4, sp + t * 4, 4);
        else
          for (size_t t = 0; t < 16; t++) memcpy(g + (t * R + jj) * 2, sp + t * 2, 2);
      }
      e += 16 * R, n -= 16 * R, g += 16 * R * es;
    } else {
      size_t len = R - j < n ? R - j : n;
      for (size_t jj = 0; jj < len; jj++) memcpy(g + jj * es, s + ((j + jj) * C + i) * es, es);
      e += len, n -= len, g += len * es;
    }
  }
}

/* Result elements [e0, e0 + n) of deferred value v into dst. */
static void produce(const mil_value *v, size_t e0, size_t n, void *dst) {
  const struct ir_deferred *d = v->deferred;
  if (d->masked) {
    produce_masked(d, e0, n, dst);
    return;
  }
  mil_dtype sdt = d->src->type->dtype;
  size_t es = src_es(d), oes = v->nbytes / (size_t)v->numel;
  if (d->scale) { /* never transposed (see mil_value_new_deferred_transpose) */
    if (d->conv == CONV_COPY) {
      scale_range(d, e0, n, dst);
    } else {
      uint8_t tmp[1 << 14];
      size_t k = sizeof tmp / es;
      for (size_t at = 0; at < n; at += k) {
        size_t len = n - at < k ? n - at : k;
        scale_range(d, e0 + at, len, tmp);
        convert(d->conv, sdt, tmp, (uint8_t *)dst + at * oes, len);
      }
    }
    /* a weight-file mapping's pages given back once the last element is
     * read (a scan or the writer went through the whole weight), by the
     * value alone: readers on several threads touch no program state */
    if (e0 + n == (size_t)d->src->numel && !mil_program_keeps_weight_pages(d->p))
      mil_value_release_range(d->src, 0, d->src->nbytes);
    return;
  }
  if (!d->transposed) {
    const uint8_t *s = (const uint8_t *)d->src->raw + e0 * es;
    for (size_t at = 0; at < n; at += PIECE) {
      size_t len = n - at < PIECE ? n - at : PIECE;
      convert(d->conv, sdt, s + at * es, (uint8_t *)dst + at * oes, len);
      /* a weight-file mapping's pages given back once converted */
      mil_program_release_value_pages(d->p, d->src, (e0 + at) * es, len * es);
    }
    return;
  }
  /* through a buffer of 16 result rows at least, filled in source order */
  size_t R = (size_t)d->rows, step = 16 * R > 65536 ? 16 * R : 65536 / R * R;
  uint8_t stack[1 << 14], *g = n * es <= sizeof stack ? stack : malloc((n < step ? n : step) * es);
  if (!g) { /* out of memory: element by element through the stack buffer */
    g = stack;
    step = 1;
  }
  for (size_t at = 0; at < n;) {
    size_t len = n - at < step ? n - at : step;
    if (g == stack && len * es > sizeof stack) len = sizeof stack / es;
    gather(d, e0 + at, len, g);
    convert(d->conv, sdt, g, (uint8_t *)dst + at * oes, len);
    at += len;
  }
  if (g != stack) free(g);
  /* every piece reads across the whole source (a column each): its mapped
   * pages are given back once the last element is read, as above */
  if (e0 + n == (size_t)d->src->numel && !mil_program_keeps_weight_pages(d->p))
    mil_value_release_range(d->src, 0, d->src->nbytes);
}

const void *mil_value_data(const mil_value *v) {
  if (!v || v->kind != MIL_VAL_TENSOR) return NULL;
  if (!v->deferred) return v->raw;
  mil_value *m = (mil_value *)v; /* computing the bytes once does not change the value */
  void *buf = ir_big_alloc(v->deferred->p, v->nbytes, false, &m->big);
  if (!buf) return NULL;
  produce(v, 0, (size_t)v->numel, buf);
  m->raw = buf;
  m->deferred = NULL;
  return buf;
}

bool mil_value_read(const mil_value *v, size_t offset, size_t n, void *dst) {
  if (!v || v->kind != MIL_VAL_TENSOR || offset > v->nbytes || n > v->nbytes - offset) return false;
  if (!n) return true;
  if (!v->deferred) {
    if (!v->raw) return false;
    memcpy(dst, (const char *)v->raw + offset, n);
    return true;
  }
  size_t oes = v->nbytes / (size_t)v->numel;
  uint8_t *out = dst;
  if (offset % oes == 0 && n % oes == 0) {
    produce(v, offset / oes, n / oes, out);
    return true;
  }
  /* unaligned ends: through a small buffer of whole elements */
  uint8_t tmp[4096];
  size_t e = offset / oes, end = offset + n;
  while (offset < end) {
    size_t ne = (end - e * oes + oes - 1) / oes;
    if (ne > sizeof tmp / oes) ne = sizeof tmp / oes;
    produce(v, e, ne, tmp);
    size_t skip = offset - e * oes, take = ne * oes - skip;
    if (take > end - offset) take = end - offset;
    memcpy(out, tmp + skip, take);
    out += take;
    offset += take;
    e += ne;
  }
  return true;
}

double ir_deferred_get_f64(const mil_value *v, int64_t i) {
  uint8_t b[4];
  produce(v, (size_t)i, 1, b);
  if (v->type->dtype == MIL_DT_FP16) {
    uint16_t h;
    memcpy(&h, b, 2);
    return mil_fp16_to_fp32(h);
  }
  float f;
  memcpy(&f, b, 4);
  return f;
}

const mil_value *ir_deferred_mark_source(const mil_value *v) { return v->deferred ? v->deferred->src : NULL; }

const mil_value *ir_deferred_mark_extra(const mil_value *v) {
  return v->deferred && v->deferred->masked ? v->deferred->masked->mask : NULL;
}

static bool same_recipe(const struct ir_deferred *a, const struct ir_deferred *b) {
  return a->src == b->src && a->masked == b->masked && a->scale == b->scale && a->conv == b->conv && a->transposed == b->transposed &&
         (!a->transposed || (a->rows == b->rows && a->cols == b->cols));
}

/* Do a and b (same dtype, nbytes) hold the same bytes? Through buffers
 * when either is deferred, so neither is computed whole. */
bool ir_value_bytes_equal(const mil_value *a, const mil_value *b) {
  if (a->nbytes != b->nbytes) return false;
  if (!a->deferred && !b->deferred) return a->nbytes == 0 || memcmp(a->raw, b->raw, a->nbytes) == 0;
  if (a->deferred && b->deferred && same_recipe(a->deferred, b->deferred)) return true;
  enum { CHUNK = 64 << 10 };
  static _Thread_local uint8_t ba[CHUNK], bb[CHUNK];
  for (size_t at = 0; at < a->nbytes; at += CHUNK) {
    size_t k = a->nbytes - at < CHUNK ? a->nbytes - at : CHUNK;
    const void *pa = a->deferred ? (mil_value_read(a, at, k, ba), ba) : (const uint8_t *)a->raw + at;
    const void *pb = b->deferred ? (mil_value_read(b, at, k, bb), bb) : (const uint8_t *)b->raw + at;
    if (memcmp(pa, pb, k) != 0) return false;
  }
  return true;
}
