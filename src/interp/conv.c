/* Kernels of the "conv" family: conv and conv_transpose for 1, 2 and 3
 * spatial dimensions, in fp32 (fp16 operands widened, the output rounded
 * to fp16).
 *
 * conv: per batch item and group, the input windows are unrolled
 * (im2col: rows C_in/groups * prod(K), columns prod(D_out), a tile of
 * output rows at a time for large 2D outputs) and multiplied by the
 * group's weight rows with sgemm; 1x1 convolutions with unit
 * stride and no padding use the input directly, and depthwise convolutions
 * (one input channel per group) run a direct loop.
 * conv_quantized: the uint8 weights dequantized, then conv.
 * conv_transpose: the transposed product W^T x gives the columns, which are
 * scattered back onto the output (col2im).
 *
 * Padding (coremltools ops/defs/_utils.py aggregated_pad and the conv
 * docs): "valid" none; "custom" pad[2i] before and pad[2i+1] after axis i;
 * "same" a total of max(0, s*ceil(in/s) - in + ek - s) with the odd element
 * after; "same_lower" the odd element before. */
#include <stdlib.h>
#include <string.h>

#include "interp/interp_internal.h"
#include "ops/conv_internal.h"

/* Window geometry with the spatial axes padded to three (D, H, W). */
typedef struct geom {
  int64_t in[3], out[3], k[3], s[3], d[3], pb[3];
} geom;

static mil_status read_geom(mil_infer_ctx *c, const int64_t *xs, const int64_t *ws, const int64_t *os, int k,
                            bool transpose, geom *g) {
  int64_t strides[3], dil[3], pad[6] = {0};
  mil_status st;
  if ((st = op_window_ints(c, "strides", k, 1, strides)) != MIL_OK) return st;
  if ((st = op_window_ints(c, "dilations", k, 1, dil)) != MIL_OK) return st;
  const char *pt = op_str(c, "pad_type", "valid");
  bool custom = strcmp(pt, "custom") == 0, same = strcmp(pt, "same") == 0, lower = strcmp(pt, "same_lower") == 0;
  if (custom && (st = op_window_ints(c, "pad", 2 * k, 0, pad)) != MIL_OK) return st;
  for (int i = 0; i < 3; i++) {
    g->in[i] = g->out[i] = g->k[i] = g->s[i] = g->d[i] = 1;
    g->pb[i] = 0;
  }
  for (int r = 0; r < k; r++) {
    int a = 3 - k + r;
    g->in[a] = xs[2 + r];
    g->out[a] = os[2 + r];
    g->k[a] = ws[2 + r];
    g->s[a] = strides[r];
    g->d[a] = dil[r];
    int64_t ek = (g->k[a] - 1) * g->d[a] + 1, total = 0;
    if (custom) {
      g->pb[a] = pad[2 * r];
      continue;
    }
    if (!transpose && (same || lower)) {
      total = g->s[a] * ((g->in[a] + g->s[a] - 1) / g->s[a]) - g->in[a] + ek - g->s[a];
    } else if (transpose && (same || lower || op_has(c, "output_shape"))) {
      total = g->s[a] * (g->in[a] - 1) + ek - g->out[a];
      if (!(same || lower)) total = 0;
    }
    if (total < 0) total = 0;
    g->pb[a] = lower ? total - total / 2 : total / 2;
  }
  return MIL_OK;
}

/* Unrolls cn channels of one image x (C, D, H, W) into col, for the output
 * rows [h0, h1) of every output depth (the whole output when h0 = 0 and
 * h1 = out[1]): col has cn * prod(K) rows of out[0] * (h1 - h0) * out[2]
 * columns. */
static void im2col(const float *x, int64_t cn, const geom *g, int64_t h0, int64_t h1, float *col) {
  int64_t plane = g->in[0] * g->in[1] * g->in[2];
  int64_t nh = h1 - h0, ncol = g->out[0] * nh * g->out[2];
  int64_t row = 0;
  for (int64_t ch = 0; ch < cn; ch++)
    for (int64_t kd = 0; kd < g->k[0]; kd++)
      for (int64_t kh = 0; kh < g->k[1]; kh++)
        for (int64_t kw = 0; kw < g->k[2]; kw++, row++) {
          float *dst = col + row * ncol;
          const float *src = x + ch * plane;
          for (int64_t od = 0; od < g->out[0]; od++) {
            int64_t id = od * g->s[0] - g->pb[0] + kd * g->d[0];
            for (int64_t oh = h0; oh < h1; oh++) {
              int64_t ih = oh * g->s[1] - g->pb[1] + kh * g->d[1];
              float *drow = dst + (od * nh + oh - h0) * g->out[2];
              if (id < 0 || id >= g->in[0] || ih < 0 || ih >= g->in[1]) {
                memset(drow, 0, (size_t)g->out[2] * sizeof *drow);
                continue;
              }
              const float *srow = src + (id * g->in[1] + ih) * g->in[2];
              int64_t iw = -g->pb[2] + kw * g->d[2];
              for (int64_t ow = 0; ow < g->out[2]; ow++, iw += g->s[2])
                drow[ow] = iw >= 0 && iw < g->in[2] ? srow[iw] : 0.0f;
            }
          }
        }
}

/* Output rows per im2col tile: the unrolled columns of a tile stay under
 * about 8 MB (the whole output when it is 3D or already small), so a
 * high-resolution convolution does not unroll its whole input at once. */
#define CONV_TILE_BYTES ((int64_t)8 << 20)
static int64_t tile_rows(const geom *g, int64_t krows) {
  int64_t per_row = krows * g->out[2] * (int64_t)sizeof(float);
  if (g->out[0] > 1 || per_row <= 0) return g->out[1];
  int64_t rows = CONV_TILE_BYTES / per_row;
  return rows < 1 ? 1 : rows > g->out[1] ? g->out[1] : rows;
}

/* Depthwise: out channel o reads input channel o / mult. Each output row
 * is accumulated from its kernel taps while it stays in the L1 cache; for
 * each tap the valid output columns [lo, hi) are computed once, so the
 * inner loop is a plain multiply-add over a row: 8 columns at a time with
 * AVX2/FMA (unit stride, and stride 2 through a shuffle of 16 inputs) when
 * the CPU has them (checked at run time), else the portable loop. */
typedef void (*dw_row_fn)(float *drow, const float *srow, float wv, int64_t lo, int64_t hi, int64_t s, int64_t win);

static void dw_row_c(float *drow, const float *srow, float wv, int64_t lo, int64_t hi, int64_t s, int64_t win) {
  (void)win;
  if (s == 1)
    for (int64_t ow = lo; ow < hi; ow++) drow[ow] += wv * srow[ow];
  else
    for (int64_t ow = lo; ow < hi; ow++) drow[ow] += wv * srow[ow * s];
}

#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define DW_HAVE_AVX2 1
/* srow points at input column `off` of its row (srow[ow * s] is the input
 * of output column ow); win is how many floats from srow are inside the
 * row's buffer span that may be read (so a 16-float load stays in it). */
__attribute__((target("avx2,fma"))) static void dw_row_avx2(float *drow, const float *srow, float wv, int64_t lo,
                                                            int64_t hi, int64_t s, int64_t win) {
  __m256 w = _mm256_set1_ps(wv);
  int64_t ow = lo;
  if (s == 1) {
    for (; ow + 8 <= hi; ow += 8)
      _mm256_storeu_ps(drow + ow, _mm256_fmadd_ps(w, _mm256_loadu_ps(srow + ow), _mm256_loadu_ps(drow + ow)));
  } else if (s == 2) {
    for (; ow + 8 <= hi && 2 * ow + 16 <= win; ow += 8) {
      __m256 a = _mm256_loadu_ps(srow + 2 * ow), b = _mm256_loadu_ps(srow + 2 * ow + 8);
      __m256 ev = _mm256_shuffle_ps(a, b, _MM_SHUFFLE(2, 0, 2, 0)); /* a0 a2 b0 b2 | a4 a6 b4 b6 */
      ev = _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(ev), _MM_SHUFFLE(3, 1, 2, 0)));
      _mm256_storeu_ps(drow + ow, _mm256_fmadd_ps(w, ev, _mm256_loadu_ps(drow + ow)));
    }
  }
  for (; ow < hi; ow++) drow[ow] = fmaf(wv, srow[ow * s], drow[ow]);
}
#endif

static dw_row_fn dw_row_pick(void) {
#ifdef DW_HAVE_AVX2
  if (interp_cpu(INTERP_CPU_AVX2_FMA)) return dw_row_avx2;
#endif
  return dw_row_c;
}

static void depthwise(const float *x, const float *w, const float *bias, int64_t cout, int64_t mult, const geom *g,
                      float *out) {
  static dw_row_fn row_fn; /* the same choice in every thread: a benign race */
  if (!row_fn) row_fn = dw_row_pick();
  int64_t plane = g->in[0] * g->in[1] * g->in[2], oplane = g->out[0] * g->out[1] * g->out[2];
  int64_t ksz = g->k[0] * g->k[1] * g->k[2];
  int64_t lo[64], hi[64]; /* per kw: valid output columns */
  bool small_k = g->k[2] <= 64;
  for (int64_t kw = 0; small_k && kw < g->k[2]; kw++) {
    int64_t off = kw * g->d[2] - g->pb[2]; /* iw = ow * s + off */
    lo[kw] = off >= 0 ? 0 : (-off + g->s[2] - 1) / g->s[2];
    hi[kw] = g->in[2] - off > 0 ? (g->in[2] - off + g->s[2] - 1) / g->s[2] : 0;
    if (hi[kw] > g->out[2]) hi[kw] = g->out[2];
  }
  for (int64_t o = 0; o < cout; o++) {
    const float *src = x + (o / mult) * plane, *wk = w + o * ksz;
    float *dst = out + o * oplane;
    for (int64_t od = 0; od < g->out[0]; od++)
      for (int64_t oh = 0; oh < g->out[1]; oh++) {
        float *drow = dst + (od * g->out[1] + oh) * g->out[2];
        memset(drow, 0, (size_t)g->out[2] * sizeof *drow);
        for (int64_t kd = 0; kd < g->k[0]; kd++) {
          int64_t id = od * g->s[0] - g->pb[0] + kd * g->d[0];
          if (id < 0 || id >= g->in[0]) continue;
          for (int64_t kh = 0; kh < g->k[1]; kh++) {
            int64_t ih = oh * g->s[1] - g->pb[1] + kh * g->d[1];
            if (ih < 0 || ih >= g->in[1]) continue;
            const float *srow = src + (id * g->in[1] + ih) * g->in[2];
            for (int64_t kw = 0; kw < g->k[2]; kw++) {
              int64_t off = kw * g->d[2] - g->pb[2];
              int64_t l, h;
              if (small_k) {
                l = lo[kw];
                h = hi[kw];
              } else {
                l = off >= 0 ? 0 : (-off + g->s[2] - 1) / g->s[2];
                h = g->in[2] - off > 0 ? (g->in[2] - off + g->s[2] - 1) / g->s[2] : 0;
                if (h > g->out[2]) h = g->out[2];
              }
              if (l >= h) continue;
              /* readable floats from srow + off: to the end of the row */
              row_fn(drow, srow + off, wk[(kd * g->k[1] + kh) * g->k[2] + kw], l, h, g->s[2], g->in[2] - off);
            }
          }
        }
        if (bias) /* added last, as add_bias would, while the row is in the cache */
          for (int64_t ow = 0; ow < g->out[2]; ow++) drow[ow] += bias[o];
      }
  }
}

/* Depthwise 2-D convolution with a small kernel (k <= 7, dilation 1, the
 * stride along W 1 or 2), one output channel at a time: eight output
 * columns accumulate every tap in a register (AVX2/FMA; stride 2 takes the
 * even elements of 16 loaded), so each output is stored once; the columns
 * near the borders, whose windows leave the input, take the same taps in
 * the same order one at a time (fmaf), so a column's result does not depend
 * on which loop computed it. The bias is added last. Plain NCHW in and out:
 * no reorders into a blocked layout (mobilenet_v2: oneDNN's reorders around
 * its depthwise kernels took about a third of the run). */
#ifdef DW_HAVE_AVX2
static bool dw2d_fits(const geom *g) {
  return g->in[0] == 1 && g->out[0] == 1 && g->k[0] == 1 && g->k[1] <= 7 && g->k[2] <= 7 && g->d[1] == 1 &&
         g->d[2] == 1 && (g->s[2] == 1 || g->s[2] == 2) && g->pb[1] >= 0 && g->pb[2] >= 0;
}

static float dw2d_one(const float *src, const float *wk, const geom *g, int64_t ih0, int64_t khlo, int64_t khhi,
                      int64_t ow) {
  float acc = 0.0f;
  int64_t W = g->in[2], KW = g->k[2];
  for (int64_t kh = khlo; kh < khhi; kh++) {
    const float *srow = src + (ih0 + kh) * W;
    for (int64_t kw = 0; kw < KW; kw++) {
      int64_t iw = ow * g->s[2] + kw - g->pb[2];
      if (iw >= 0 && iw < W) acc = fmaf(wk[kh * KW + kw], srow[iw], acc);
    }
  }
  return acc;
}

__attribute__((target("avx2,fma"))) static void dw2d_avx2(const float *x, const float *w, const float *bias,
                                                          int64_t cout, int64_t mult, const geom *g, float *out) {
  int64_t H = g->in[1], W = g->in[2], OH = g->out[1], OW = g->out[2], KH = g->k[1], KW = g->k[2];
  int64_t sw = g->s[2], pl = g->pb[2];
  /* vector starts ow0: every lane's window inside the row, and (stride 2)
   * the 16-float load too: ow0 * sw - pl >= 0 and the last float read,
   * ow0 * sw - pl + (KW - 1) + (sw == 1 ? 7 : 15), at most W - 1 */
  int64_t vlo = (pl + sw - 1) / sw, reach = KW - 1 + (sw == 1 ? 7 : 15);
  int64_t vmax = W - 1 - reach + pl >= 0 ? (W - 1 - reach + pl) / sw : -1; /* largest valid start */
  for (int64_t o = 0; o < cout; o++) {
    const float *src = x + (o / mult) * H * W, *wk = w + o * KH * KW;
    float *dst = out + o * OH * OW;
    float b = bias ? bias[o] : 0.0f;
    for (int64_t oh = 0; oh < OH; oh++) {
      int64_t ih0 = oh * g->s[1] - g->pb[1];
      int64_t khlo = ih0 < 0 ? -ih0 : 0, khhi = H - ih0 < KH ? H - ih0 : KH;
      float *drow = dst + oh * OW;
      int64_t ow = 0;
      for (; ow < OW && ow < vlo; ow++) {
        drow[ow] = dw2d_one(src, wk, g, ih0, khlo, khhi, ow);
        if (bias) drow[ow] += b;
      }
      for (; ow + 8 <= OW && ow <= vmax; ow += 8) {
        __m256 acc = _mm256_setzero_ps();
        for (int64_t kh = khlo; kh < khhi; kh++) {
          const float *p = src + (ih0 + kh) * W + ow * sw - pl;
          const float *wr = wk + kh * KW;
          for (int64_t kw = 0; kw < KW; kw++) {
            __m256 v;
            if (sw == 1) {
              v = _mm256_loadu_ps(p + kw);
            } else {
              __m256 a = _mm256_loadu_ps(p + kw), c = _mm256_loadu_ps(p + kw + 8);
              v = _mm256_shuffle_ps(a, c, _MM_SHUFFLE(2, 0, 2, 0));
              v = _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(v), _MM_SHUFFLE(3, 1, 2, 0)));
            }
            acc = _mm256_fmadd_ps(_mm256_set1_ps(wr[kw]), v, acc);
          }
        }
        if (bias) acc = _mm256_add_ps(acc, _mm256_set1_ps(b));
        _mm256_storeu_ps(drow + ow, acc);
      }
      for (; ow < OW; ow++) {
        drow[ow] = dw2d_one(src, wk, g, ih0, khlo, khhi, ow);
        if (bias) drow[ow] += b;
      }
    }
  }
}

static bool dw2d_cpu(void) { return interp_cpu(INTERP_CPU_AVX2_FMA); }
#endif

typedef struct conv_args {
  const mil_value *x, *w, *b;
  int64_t xs[MIL_INTERP_MAX_RANK], ws[MIL_INTERP_MAX_RANK], os[MIL_INTERP_MAX_RANK];
  int32_t rank;
  int64_t groups;
  geom g;
} conv_args;

/* The op's operands; w and b (when w is not NULL) replace the weight and
 * bias inputs (conv_quantized's dequantized ones). */
static mil_status read_args(mil_infer_ctx *c, bool transpose, conv_args *a, const mil_value *w, const mil_value *b) {
  a->x = interp_fin(c, "x");
  a->w = w ? w : interp_fin(c, "weight");
  a->b = w ? b : op_has(c, "bias") ? interp_fin(c, "bias") : NULL;
  if (!a->x || !a->w || (!w && op_has(c, "bias") && !a->b)) return INTERP_DECLINE;
  int32_t orank;
  a->rank = interp_vshape(a->x, a->xs);
  if (interp_vshape(a->w, a->ws) != a->rank || a->rank < 3 || a->rank > 5 || !interp_shape(c->out[0], a->os, &orank) ||
      orank != a->rank)
    return INTERP_DECLINE;
  a->groups = op_int(c, "groups", 1);
  if (a->groups <= 0 || a->xs[1] % a->groups) return INTERP_DECLINE;
  if (transpose ? a->ws[0] != a->xs[1] : a->ws[1] * a->groups != a->xs[1]) return INTERP_DECLINE;
  if (a->b && a->b->numel != a->os[1]) return INTERP_DECLINE;
  return read_geom(c, a->xs, a->ws, a->os, a->rank - 2, transpose, &a->g);
}

static void add_bias(float *out, const float *bf, int64_t n, int64_t cout, int64_t plane) {
  if (!bf) return;
  for (int64_t b = 0; b < n; b++)
    for (int64_t o = 0; o < cout; o++) {
      float *p = out + (b * cout + o) * plane;
      for (int64_t i = 0; i < plane; i++) p[i] += bf[o];
    }
}

/* NHWC -> NCHW (to_nhwc false) or NCHW -> NHWC of n images of c channels
 * of hw pixels, src and dst distinct. */
static void nhwc_nchw(const float *src, float *dst, int64_t n, int64_t c, int64_t hw, bool to_nhwc) {
  for (int64_t b = 0; b < n; b++) {
    const float *s = src + b * c * hw;
    float *d = dst + b * c * hw;
    for (int64_t ch = 0; ch < c; ch++)
      for (int64_t p = 0; p < hw; p++) {
        if (to_nhwc) d[p * c + ch] = s[ch * hw + p];
        else d[ch * hw + p] = s[p * c + ch];
      }
  }
}

/* conv_run's path for a large fp16 conv whose weight is a const: the
 * input read and the output written as fp16, band by band (the weight
 * reordered to fp32 once, with the primitive; the bias widened). INTERP_DECLINE when oneDNN does not
 * take it (the caller's paths then run). */
static mil_status conv_fp16_banded(interp_run *r, mil_infer_ctx *c, const conv_args *a) {
  const geom *g = &a->g;
  float *tb = NULL;
  const float *bf = a->b ? interp_f32(r, a->b, &tb) : NULL;
  int64_t shape[MIL_INTERP_MAX_RANK];
  int32_t rank;
  mil_value *ov = NULL;
  if ((!a->b || (bf && !tb)) && interp_shape(c->out[0], shape, &rank))
    ov = mil_value_new_tensor_uninit(r->prog, MIL_DT_FP16, rank, shape, false);
  bool ok = ov && interp_conv_dnnl(r, NULL, mil_value_data(a->x), a->w, bf, NULL, mil_value_data_mut(ov), a->xs[0],
                                   a->xs[1], a->os[1], a->groups, g->in, g->out, g->k, g->s, g->d, g->pb);
  free(tb);
  if (!ok) return INTERP_DECLINE;
  c->val[0] = ov;
  return MIL_OK;
}

static mil_status conv_run(interp_run *r, mil_infer_ctx *c, const mil_value *w, const mil_value *b) {
  conv_args a;
  mil_status st = read_args(c, false, &a, w, b);
  if (st != MIL_OK) return st;
  const geom *g = &a.g;
  int64_t n = a.xs[0], cin = a.xs[1], cout = a.os[1], G = a.groups;
  int64_t cg = cin / G, og = cout / G, ksz = g->k[0] * g->k[1] * g->k[2];
  int64_t plane = g->in[0] * g->in[1] * g->in[2], oplane = g->out[0] * g->out[1] * g->out[2];
  if (cout % G) return INTERP_DECLINE;
  bool direct = ksz == 1 && g->s[0] == 1 && g->s[1] == 1 && g->s[2] == 1 && g->pb[0] == 0 && g->pb[1] == 0 &&
                g->pb[2] == 0 && plane == oplane;
  bool dw = cg == 1 && G > 1;
  float *tx, *tw = NULL, *tb = NULL, *col = NULL;
  int lay = r->nhwc; /* a conv of a chain: x and / or the result in NHWC order (fuse.c) */
  /* a large fp16 conv, or one of a chain (NHWC, one image): widened and
   * rounded band by band (conv_dnnl.c) */
  if (a.x->type->dtype == MIL_DT_FP16 && c->out[0]->dtype == MIL_DT_FP16 && a.rank <= 4 &&
      (lay ? n == 1 : interp_conv_dnnl_bands(n, cin, cout, g->in, g->out, g->k)) &&
      interp_cache_is_stable(r->cache, mil_value_data(a.w))) {
    st = conv_fp16_banded(r, c, &a);
    if (st != INTERP_DECLINE) return st;
  }
  const float *xf = interp_f32(r, a.x, &tx), *bf = a.b ? interp_f32(r, a.b, &tb) : NULL, *wf = NULL;
  int64_t th = tile_rows(g, cg * ksz), tcols = g->out[0] * th * g->out[2];
  /* oneDNN's primitive for 1D/2D convs whose weight is a const (reordered
   * once and cached with the primitive; conv_dnnl.c); depthwise too,
   * measured faster than the direct loop below (bench/interp_notes.md) */
  bool dw2d = false;
#ifdef DW_HAVE_AVX2
  dw2d = !lay && dw && dw2d_fits(g) && g->s[2] == 2 && g->out[2] >= 28 && dw2d_cpu() && !getenv("MIL_INTERP_DW_DNNL");
#endif
  bool try_dnnl = (!dw || (!dw2d && !getenv("MIL_INTERP_DW_DIRECT"))) && a.rank <= 4;
  interp_fout o;
  float *out = xf && (!a.b || bf) ? interp_fout_begin_uninit(r, c, 0, &o) : NULL;
  if (out && try_dnnl &&
      interp_conv_dnnl(r, xf, NULL, a.w, bf, out, NULL, n, cin, cout, G, g->in, g->out, g->k, g->s, g->d, g->pb)) {
    free(tx), free(tb);
    c->val[0] = interp_fout_end(&o);
    return MIL_OK;
  }
  /* the other paths read the weight as fp32 */
  if (out && !(wf = interp_f32(r, a.w, &tw))) {
    interp_fout_abort(&o);
    out = NULL;
  }
#ifdef DW_HAVE_AVX2
  if (out && dw2d) {
    for (int64_t b = 0; b < n; b++) dw2d_avx2(xf + b * cin * plane, wf, bf, cout, og, g, out + b * cout * oplane);
    interp_conv_act(r, false, out, o.v->numel, 0); /* the fused activation, if any */
    free(tx), free(tw), free(tb);
    c->val[0] = interp_fout_end(&o);
    return MIL_OK;
  }
#endif
  if (out && !direct && !dw) {
    col = malloc((size_t)(cg * ksz * tcols > 0 ? cg * ksz * tcols : 1) * sizeof *col);
    if (!col) {
      interp_fout_abort(&o);
      out = NULL;
    }
  }
  float *xn = out && (lay & INTERP_NHWC_IN) ? interp_scratch_f32(r, (size_t)(n * cin * plane)) : NULL;
  if (xn) { /* this path reads NCHW */
    nhwc_nchw(xf, xn, n, cin, plane, false);
    xf = xn;
  } else if (lay & INTERP_NHWC_IN) {
    out = NULL;
  }
  if (!out) {
    free(tx), free(tw), free(tb), free(col);
    return interp_nomem(c);
  }
  if (!dw) memset(out, 0, (size_t)o.v->numel * sizeof *out); /* sgemm's beta 0 then never meets stale bytes */
  for (int64_t b = 0; b < n; b++) {
    const float *xb = xf + b * cin * plane;
    float *ob = out + b * cout * oplane;
    if (dw) {
      depthwise(xb, wf, bf, cout, og, g, ob);
      continue;
    }
    for (int64_t gi = 0; gi < G; gi++) {
      const float *src = xb + gi * cg * plane;
      if (direct) {
        interp_sgemm(false, false, og, oplane, cg * ksz, 1.0f, wf + gi * og * cg * ksz, cg * ksz, src, oplane, 0.0f,
                     ob + gi * og * oplane, oplane);
        continue;
      }
      for (int64_t h0 = 0; h0 < g->out[1]; h0 += th) { /* one tile of output rows at a time */
        int64_t h1 = h0 + th < g->out[1] ? h0 + th : g->out[1], nc = g->out[0] * (h1 - h0) * g->out[2];
        im2col(src, cg, g, h0, h1, col);
        interp_sgemm(false, false, og, nc, cg * ksz, 1.0f, wf + gi * og * cg * ksz, cg * ksz, col, nc, 0.0f,
                     ob + gi * og * oplane + h0 * g->out[2], oplane);
      }
    }
  }
  if (!dw) add_bias(out, bf, n, cout, oplane);
  free(tx), free(tw), free(tb), free(col);
  if (lay & INTERP_NHWC_OUT) { /* the reader takes NHWC */
    float *t = interp_scratch_f32(r, (size_t)o.v->numel);
    if (!t) {
      interp_fout_abort(&o);
      return interp_nomem(c);
    }
    memcpy(t, out, (size_t)o.v->numel * sizeof *out);
    nhwc_nchw(t, out, n, cout, oplane, true);
  }
  interp_conv_act(r, false, out, o.v->numel, 0); /* the fused activation, if any (a residual: in the reader's order) */
  c->val[0] = interp_fout_end(&o);
  return MIL_OK;
}

static mil_status k_conv(interp_run *r, mil_infer_ctx *c) { return conv_run(r, c, NULL, NULL); }

/* conv_quantized (iOS15 conv.py, experimental): uint8 weights dequantized
 * as W = W_q * quant_scale + quant_bias ("linear"; scale and bias hold one
 * value, or one per output channel), then an ordinary conv. A "lut"
 * quantization carries no lookup table in the op (the NeuralNetwork layer
 * kept it elsewhere), so it cannot run. The bias, of the weight's uint8
 * domain, is added as its values. */
static mil_status k_conv_quantized(interp_run *r, mil_infer_ctx *c) {
  const char *qt = op_str(c, "quantization_type", "");
  if (strcmp(qt, "linear") != 0)
    return interp_fail(c, MIL_ERR_UNSUPPORTED,
                       "quantization_type \"%s\" cannot run: only \"linear\" (W_q * quant_scale + quant_bias) "
                       "defines the weights from the op's inputs",
                       qt);
  const mil_value *wq = op_val(c, "weight"), *sc = op_val(c, "quant_scale"), *qb = op_val(c, "quant_bias");
  const mil_value *bias = op_has(c, "bias") ? op_val(c, "bias") : NULL;
  if (!wq || wq->kind != MIL_VAL_TENSOR || !sc || !qb || (op_has(c, "bias") && !bias)) return INTERP_DECLINE;
  int64_t ws[MIL_INTERP_MAX_RANK];
  int32_t wr = interp_vshape(wq, ws);
  int64_t cout = wr > 0 ? ws[0] : 0, per = cout > 0 ? wq->numel / cout : 0;
  if ((sc->numel != 1 && sc->numel != cout) || (qb->numel != 1 && qb->numel != cout))
    return interp_fail(c, MIL_ERR_INVALID,
                       "quant_scale (%lld values) and quant_bias (%lld values) must hold 1 or C_out = %lld values",
                       (long long)sc->numel, (long long)qb->numel, (long long)cout);
  mil_value *w = interp_new_shape(r, MIL_DT_FP32, wr, ws, false);
  mil_value *b = NULL;
  if (bias) {
    int64_t bs[MIL_INTERP_MAX_RANK];
    int32_t br = interp_vshape(bias, bs);
    b = interp_new_shape(r, MIL_DT_FP32, br, bs, br == 0);
  }
  if (!w || (bias && !b)) return interp_nomem(c);
  float *wf = mil_value_data_mut(w);
  for (int64_t o = 0; o < cout; o++) {
    double s = mil_value_get_f64(sc, sc->numel == 1 ? 0 : o), z = mil_value_get_f64(qb, qb->numel == 1 ? 0 : o);
    for (int64_t k = 0; k < per; k++) wf[o * per + k] = (float)(mil_value_get_f64(wq, o * per + k) * s + z);
  }
  if (b) {
    float *bf = mil_value_data_mut(b);
    for (int64_t k = 0; k < bias->numel; k++) bf[k] = (float)mil_value_get_f64(bias, k);
  }
  return conv_run(r, c, w, b);
}

/* Adds columns (C, k.., in rows ih0..ih1) back onto the output image
 * (C, out..); the columns hold every input depth of those rows. */
static void col2im(const float *col, int64_t cn, const geom *g, int64_t ih0, int64_t ih1, float *out) {
  int64_t oplane = g->out[0] * g->out[1] * g->out[2], rows = ih1 - ih0;
  int64_t ncol = g->in[0] * rows * g->in[2];
  int64_t row = 0;
  for (int64_t ch = 0; ch < cn; ch++)
    for (int64_t kd = 0; kd < g->k[0]; kd++)
      for (int64_t kh = 0; kh < g->k[1]; kh++)
        for (int64_t kw = 0; kw < g->k[2]; kw++, row++) {
          const float *src = col + row * ncol;
          float *dst = out + ch * oplane;
          for (int64_t id = 0; id < g->in[0]; id++) {
            int64_t od = id * g->s[0] - g->pb[0] + kd * g->d[0];
            if (od < 0 || od >= g->out[0]) continue;
            for (int64_t ih = ih0; ih < ih1; ih++) {
              int64_t oh = ih * g->s[1] - g->pb[1] + kh * g->d[1];
              if (oh < 0 || oh >= g->out[1]) continue;
              const float *srow = src + (id * rows + ih - ih0) * g->in[2];
              float *drow = dst + (od * g->out[1] + oh) * g->out[2];
              for (int64_t iw = 0; iw < g->in[2]; iw++) {
                int64_t ow = iw * g->s[2] - g->pb[2] + kw * g->d[2];
                if (ow >= 0 && ow < g->out[2]) drow[ow] += srow[iw];
              }
            }
          }
        }
}

/* conv_transpose: the output starts as the bias (or zeros); per batch item
 * and group, a tile of input rows at a time (columns of about 1 MB, all
 * rows at once for 3D inputs) gives its columns W_g^T X_g, added onto the
 * output (col2im). The columns are a work buffer of the interpreter. */
static mil_status k_conv_transpose(interp_run *r, mil_infer_ctx *c) {
  conv_args a;
  mil_status st = read_args(c, true, &a, NULL, NULL);
  if (st != MIL_OK) return st;
  const geom *g = &a.g;
  int64_t n = a.xs[0], cin = a.xs[1], cout = a.os[1], G = a.groups;
  int64_t cg = cin / G, og = a.ws[1], ksz = g->k[0] * g->k[1] * g->k[2];
  int64_t plane = g->in[0] * g->in[1] * g->in[2], oplane = g->out[0] * g->out[1] * g->out[2];
  if (og * G != cout) return INTERP_DECLINE;
  int64_t col_row = og * ksz * g->in[2]; /* column values per input row */
  int64_t tile = g->in[0] > 1 ? g->in[1] : (int64_t)(((size_t)1 << 18) / (size_t)(col_row > 0 ? col_row : 1));
  if (tile < 1) tile = 1;
  if (tile > g->in[1]) tile = g->in[1];
  size_t col_bytes = (size_t)(g->in[0] * tile * col_row > 0 ? g->in[0] * tile * col_row : 1) * sizeof(float);
  float *tx, *tw, *tb = NULL, *col = NULL, *own = NULL;
  const float *xf = interp_f32(r, a.x, &tx), *wf = interp_f32(r, a.w, &tw), *bf = a.b ? interp_f32(r, a.b, &tb) : NULL;
  if (xf && wf) {
    col = interp_bufpool_work(r->pool, 3, col_bytes);
    if (!col) col = own = malloc(col_bytes);
  }
  interp_fout o;
  float *out = xf && wf && (!a.b || bf) && col ? interp_fout_begin_uninit(r, c, 0, &o) : NULL;
  if (!out) {
    free(tx), free(tw), free(tb), free(own);
    return interp_nomem(c);
  }
  for (int64_t b = 0; b < n; b++)
    for (int64_t ch = 0; ch < cout; ch++) {
      float *p = out + (b * cout + ch) * oplane, v = bf ? bf[ch] : 0.0f;
      for (int64_t i = 0; i < oplane; i++) p[i] = v;
    }
  for (int64_t b = 0; b < n; b++)
    for (int64_t gi = 0; gi < G; gi++)
      for (int64_t h0 = 0; h0 < g->in[1]; h0 += tile) {
        int64_t h1 = h0 + tile < g->in[1] ? h0 + tile : g->in[1], nc = g->in[0] * (h1 - h0) * g->in[2];
        /* col (og*ksz, nc) = W_g^T (og*ksz, cg) x X_g (cg, the tile's columns) */
        interp_sgemm(true, false, og * ksz, nc, cg, 1.0f, wf + gi * cg * og * ksz, og * ksz,
                     xf + (b * cin + gi * cg) * plane + h0 * g->in[2], plane, 0.0f, col, nc);
        col2im(col, og, g, h0, h1, out + (b * cout + gi * og) * oplane);
      }
  free(tx), free(tw), free(tb), free(own);
  c->val[0] = interp_fout_end(&o);
  return MIL_OK;
}

const interp_kernel interp_kernels_conv[] = {
    {"conv", k_conv, 0},
    {"conv_quantized", k_conv_quantized, 0},
    {"conv_transpose", k_conv_transpose, 0},
};
INTERP_FAMILY_COUNT(conv);
