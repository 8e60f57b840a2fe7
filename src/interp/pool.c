/* Kernels of the "pool" family: max_pool, avg_pool and l2_pool over 1, 2
 * or 3 spatial dimensions, in fp32 (fp16 widened, output rounded).
 *
 * Windows follow coremltools ops/defs/iOS15/pool.py: kernel_sizes,
 * strides, pad_type ("valid", "same", "same_lower", "custom" with pad
 * [before, after] per axis; case-insensitive), ceil_mode. Padding never
 * contributes to max_pool / l2_pool. avg_pool divides by the number of
 * window elements inside the input when exclude_padding_from_average is
 * true, else by the number inside the padded input (a window that ceil_mode
 * lets run past the padding does not count the part beyond it, as
 * PyTorch's avg_pool does). */
#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "interp/interp_internal.h"
#include "ops/conv_internal.h"

typedef enum pool_kind { P_MAX, P_AVG, P_L2 } pool_kind;

typedef struct pgeom {
  int64_t in[3], out[3], k[3], s[3], pb[3], pa[3];
} pgeom;

static mil_status read_pool(mil_infer_ctx *c, const int64_t *xs, const int64_t *os, int k, pgeom *g) {
  int64_t kernel[3], strides[3], pad[6] = {0};
  mil_status st;
  if ((st = op_window_ints(c, "kernel_sizes", k, 1, kernel)) != MIL_OK) return st;
  if ((st = op_window_ints(c, "strides", k, 1, strides)) != MIL_OK) return st;
  char pt[32] = "valid";
  const char *s = op_str(c, "pad_type", "valid");
  size_t l = strlen(s);
  if (l < sizeof pt)
    for (size_t i = 0; i <= l; i++) pt[i] = (char)tolower((unsigned char)s[i]);
  bool custom = strcmp(pt, "custom") == 0, same = strcmp(pt, "same") == 0, lower = strcmp(pt, "same_lower") == 0;
  if (custom && op_has(c, "pad") && (st = op_window_ints(c, "pad", 2 * k, 0, pad)) != MIL_OK) return st;
  for (int i = 0; i < 3; i++) {
    g->in[i] = g->out[i] = g->k[i] = g->s[i] = 1;
    g->pb[i] = g->pa[i] = 0;
  }
  for (int r = 0; r < k; r++) {
    int a = 3 - k + r;
    g->in[a] = xs[2 + r];
    g->out[a] = os[2 + r];
    g->k[a] = kernel[r];
    g->s[a] = strides[r];
    if (custom) {
      g->pb[a] = pad[2 * r];
      g->pa[a] = pad[2 * r + 1];
    } else if (same || lower) {
      int64_t total = g->s[a] * ((g->in[a] + g->s[a] - 1) / g->s[a]) - g->in[a] + g->k[a] - g->s[a];
      if (total < 0) total = 0;
      g->pb[a] = lower ? total - total / 2 : total / 2;
      g->pa[a] = total - g->pb[a];
    }
  }
  return MIL_OK;
}

static void pool_plane(pool_kind kind, bool exclude, const pgeom *g, const float *src, float *dst) {
  for (int64_t od = 0; od < g->out[0]; od++) {
    int64_t d0 = od * g->s[0] - g->pb[0], d1 = d0 + g->k[0];
    int64_t dp = d1 < g->in[0] + g->pa[0] ? d1 : g->in[0] + g->pa[0];
    int64_t dl = d0 < 0 ? 0 : d0, dh = d1 > g->in[0] ? g->in[0] : d1;
    for (int64_t oh = 0; oh < g->out[1]; oh++) {
      int64_t h0 = oh * g->s[1] - g->pb[1], h1 = h0 + g->k[1];
      int64_t hp = h1 < g->in[1] + g->pa[1] ? h1 : g->in[1] + g->pa[1];
      int64_t hl = h0 < 0 ? 0 : h0, hh = h1 > g->in[1] ? g->in[1] : h1;
      for (int64_t ow = 0; ow < g->out[2]; ow++) {
        int64_t w0 = ow * g->s[2] - g->pb[2], w1 = w0 + g->k[2];
        int64_t wp = w1 < g->in[2] + g->pa[2] ? w1 : g->in[2] + g->pa[2];
        int64_t wl = w0 < 0 ? 0 : w0, wh = w1 > g->in[2] ? g->in[2] : w1;
        float acc = kind == P_MAX ? -INFINITY : 0.0f;
        int64_t cnt = 0;
        for (int64_t d = dl; d < dh; d++)
          for (int64_t h = hl; h < hh; h++) {
            const float *row = src + (d * g->in[1] + h) * g->in[2];
            for (int64_t w = wl; w < wh; w++) {
              float v = row[w];
              if (kind == P_MAX) acc = v > acc || isnan(v) ? v : acc;
              else if (kind == P_AVG) acc += v;
              else acc += v * v;
              cnt++;
            }
          }
        float res = acc;
        if (kind == P_AVG) {
          int64_t n = exclude ? cnt : (dp - d0) * (hp - h0) * (wp - w0);
          res = n > 0 ? acc / (float)n : 0.0f;
        } else if (kind == P_L2) {
          res = sqrtf(acc);
        }
        dst[(od * g->out[1] + oh) * g->out[2] + ow] = res;
      }
    }
  }
}

/* max_pool over 1D / 2D planes (no depth window), a row of outputs at a
 * time: for each window row and column kw in the generic loop's order, one
 * pass over the output columns whose window holds that column (ranges
 * computed once), which the compiler vectorizes. Each output sees its
 * elements in the same order through the same expression: the same result,
 * NaN included. */
static void max_plane_2d(const pgeom *g, const float *src, float *dst) {
  int64_t lo[64], hi[64];
  for (int64_t kw = 0; kw < g->k[2]; kw++) { /* iw = ow * s + kw - pb inside [0, in) */
    int64_t off = kw - g->pb[2];
    lo[kw] = off >= 0 ? 0 : (-off + g->s[2] - 1) / g->s[2];
    hi[kw] = g->in[2] - off > 0 ? (g->in[2] - off + g->s[2] - 1) / g->s[2] : 0;
    if (hi[kw] > g->out[2]) hi[kw] = g->out[2];
  }
  int64_t s = g->s[2];
  for (int64_t oh = 0; oh < g->out[1]; oh++) {
    float *drow = dst + oh * g->out[2];
    for (int64_t ow = 0; ow < g->out[2]; ow++) drow[ow] = -INFINITY;
    int64_t h0 = oh * g->s[1] - g->pb[1], h1 = h0 + g->k[1];
    int64_t hl = h0 < 0 ? 0 : h0, hh = h1 > g->in[1] ? g->in[1] : h1;
    for (int64_t h = hl; h < hh; h++)
      for (int64_t kw = 0; kw < g->k[2]; kw++) {
        const float *row = src + h * g->in[2] + kw - g->pb[2];
        if (s == 1)
          for (int64_t ow = lo[kw]; ow < hi[kw]; ow++) {
            float v = row[ow], acc = drow[ow];
            drow[ow] = v > acc || v != v ? v : acc;
          }
        else
          for (int64_t ow = lo[kw]; ow < hi[kw]; ow++) {
            float v = row[ow * s], acc = drow[ow];
            drow[ow] = v > acc || v != v ? v : acc;
          }
      }
  }
}

/* One output pixel of max_nhwc: the maximum over its taps (the pointers
 * to their first channels) of ch channels (a NaN tap value wins, as in the
 * plain loops; a NaN maximum stays). */
static void max_taps_c(const float *const *taps, int nt, int64_t ch, float *acc) {
  for (int64_t c = 0; c < ch; c++) acc[c] = -INFINITY;
  for (int t = 0; t < nt; t++)
    for (int64_t c = 0; c < ch; c++) acc[c] = taps[t][c] > acc[c] || taps[t][c] != taps[t][c] ? taps[t][c] : acc[c];
}

#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define POOL_AVX512 1
/* The same selection 64 channels at a time in four registers (a lane takes
 * the tap's value when it is greater or NaN); the rest by max_taps_c. */
__attribute__((target("avx512f"))) static void max_taps_avx512(const float *const *taps, int nt, int64_t ch,
                                                               float *acc) {
  int64_t c0 = 0;
  for (; c0 + 64 <= ch; c0 += 64) {
    __m512 a[4];
    for (int q = 0; q < 4; q++) a[q] = _mm512_set1_ps(-INFINITY);
    for (int t = 0; t < nt; t++)
      for (int q = 0; q < 4; q++) {
        __m512 v = _mm512_loadu_ps(taps[t] + c0 + 16 * q);
        __mmask16 k = _mm512_cmp_ps_mask(v, a[q], _CMP_GT_OQ) | _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
        a[q] = _mm512_mask_mov_ps(a[q], k, v);
      }
    for (int q = 0; q < 4; q++) _mm512_storeu_ps(acc + c0 + 16 * q, a[q]);
  }
  if (c0 < ch) {
    const float *rest[256];
    for (int t = 0; t < nt; t++) rest[t] = taps[t] + c0;
    max_taps_c(rest, nt, ch - c0, acc + c0);
  }
}
#endif

static void max_taps(const float *const *taps, int nt, int64_t ch, float *acc) {
#ifdef POOL_AVX512
  if (interp_cpu(INTERP_CPU_AVX512F)) {
    max_taps_avx512(taps, nt, ch, acc);
    return;
  }
#endif
  max_taps_c(taps, nt, ch, acc);
}

/* max_pool of a conv chain's NHWC region (fuse.c): x and the result
 * [N, H, W, C]; each output folds its window in the order of the other
 * kernels (rows, then columns; padding never counts), all channels of a
 * pixel at once. */
static void max_nhwc(const pgeom *g, int64_t n, int64_t ch, const float *src, float *dst) {
  const float *taps[256];
  for (int64_t b = 0; b < n; b++)
    for (int64_t oh = 0; oh < g->out[1]; oh++)
      for (int64_t ow = 0; ow < g->out[2]; ow++) {
        float *acc = dst + ((b * g->out[1] + oh) * g->out[2] + ow) * ch;
        int nt = 0;
        for (int64_t kh = 0; kh < g->k[1]; kh++) {
          int64_t h = oh * g->s[1] + kh - g->pb[1];
          if (h < 0 || h >= g->in[1]) continue;
          for (int64_t kw = 0; kw < g->k[2]; kw++) {
            int64_t w = ow * g->s[2] + kw - g->pb[2];
            if (w < 0 || w >= g->in[2]) continue;
            taps[nt++] = src + ((b * g->in[1] + h) * g->in[2] + w) * ch;
            if (nt == 256) { /* a kernel of more than 256 taps: fold them in groups */
              max_taps(taps, nt, ch, acc);
              taps[0] = acc, nt = 1;
            }
          }
        }
        if (nt) max_taps(taps, nt, ch, acc);
        else
          for (int64_t c = 0; c < ch; c++) acc[c] = -INFINITY;
      }
}

static mil_status run_pool(interp_run *r, mil_infer_ctx *c, pool_kind kind) {
  const mil_value *x = interp_fin(c, "x");
  if (!x) return INTERP_DECLINE;
  int64_t xs[MIL_INTERP_MAX_RANK], os[MIL_INTERP_MAX_RANK];
  int32_t rank = interp_vshape(x, xs), orank;
  if (rank < 3 || rank > 5 || !interp_shape(c->out[0], os, &orank) || orank != rank) return INTERP_DECLINE;
  pgeom g;
  mil_status st = read_pool(c, xs, os, rank - 2, &g);
  if (st != MIL_OK) return st;
  bool exclude = op_bool(c, "exclude_padding_from_average", false);
  float *tx;
  const float *xf = interp_f32(r, x, &tx);
  interp_fout o;
  bool nhwc = kind == P_MAX && rank == 4 && (r->nhwc & INTERP_NHWC_OUT);
  /* max_nhwc writes every output element: no zeroed buffer */
  float *out = xf ? (nhwc ? interp_fout_begin_uninit(r, c, 0, &o) : interp_fout_begin(r, c, 0, &o)) : NULL;
  if (!out) {
    free(tx);
    return interp_nomem(c);
  }
  int64_t planes = xs[0] * xs[1], ip = g.in[0] * g.in[1] * g.in[2], opl = g.out[0] * g.out[1] * g.out[2];
  bool rows = kind == P_MAX && g.in[0] == 1 && g.k[0] == 1 && g.pb[0] == 0 && g.out[0] == 1 && g.k[2] <= 64;
  if (nhwc) planes = 0, max_nhwc(&g, xs[0], xs[1], xf, out);
  for (int64_t p = 0; p < planes; p++) {
    if (rows) max_plane_2d(&g, xf + p * ip, out + p * opl);
    else pool_plane(kind, exclude, &g, xf + p * ip, out + p * opl);
  }
  free(tx);
  c->val[0] = interp_fout_end(&o);
  return MIL_OK;
}

static mil_status k_max_pool(interp_run *r, mil_infer_ctx *c) { return run_pool(r, c, P_MAX); }
static mil_status k_avg_pool(interp_run *r, mil_infer_ctx *c) { return run_pool(r, c, P_AVG); }
static mil_status k_l2_pool(interp_run *r, mil_infer_ctx *c) { return run_pool(r, c, P_L2); }

const interp_kernel interp_kernels_pool[] = {
    {"avg_pool", k_avg_pool, 0},
    {"l2_pool", k_l2_pool, 0},
    {"max_pool", k_max_pool, 0},
};
INTERP_FAMILY_COUNT(pool);
