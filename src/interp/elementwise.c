/* Fast paths of the elementwise families (coremltools
 * ops/defs/iOS15/elementwise_binary.py and elementwise_unary.py) for fp16
 * and fp32 tensors: computed in fp32, rounded once at the output. Other
 * dtypes (int32 arithmetic, bool logic, casts) and the ops not listed here
 * run through the registry's value inference.
 *
 * Binary ops broadcast numpy-style; the output shape is the inferred one.
 * Unary ops with an epsilon (rsqrt, inverse, log) add it as coremltools
 * defines them: 1/sqrt(x+eps), 1/(x+eps), log(x+eps). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "interp/elementwise_internal.h"
#include "interp/vmath.h"

/* ---------------- unary maps (shared with activation.c) ---------------- */

/* A unary map is split across the run's threads above this many elements
 * per thread (each element is computed alone: the same results on any
 * number of threads). */
#define MAP_MIN_PER_THREAD (1 << 16)

/* x and y fp32, or both fp16 (half): then blocks are converted to fp32 in
 * the cache, fn applied and rounded back (the same bits as converting
 * whole tensors). */
typedef struct map_job {
  interp_unary_fn fn;
  const void *x;
  void *y;
  const float *p;
  bool half;
} map_job;

static void map_part(void *ctx, int64_t lo, int64_t hi) {
  map_job *j = ctx;
  if (!j->half) {
    j->fn((const float *)j->x + lo, (float *)j->y + lo, hi - lo, j->p);
    return;
  }
  float fx[1024], fy[1024];
  for (int64_t i = lo; i < hi; i += 1024) {
    int64_t m = hi - i < 1024 ? hi - i : 1024;
    mil_fp16_to_fp32_array((const uint16_t *)j->x + i, fx, (size_t)m);
    j->fn(fx, fy, m, j->p);
    mil_fp32_to_fp16_array(fy, (uint16_t *)j->y + i, (size_t)m);
  }
}

mil_status interp_map(interp_run *r, mil_infer_ctx *c, interp_unary_fn fn, const float *p) {
  const mil_value *x = interp_fin(c, "x");
  if (!x || !c->out[0] || c->out[0]->kind != MIL_TYPE_TENSOR || !mil_dtype_is_float(c->out[0]->dtype))
    return INTERP_DECLINE;
  if (x->kind == MIL_VAL_TENSOR && x->type->dtype == MIL_DT_FP16 && c->out[0]->dtype == MIL_DT_FP16) {
    mil_value *v = interp_new_value(r, c->out[0]);
    if (!v) return interp_nomem(c);
    if (v->numel != x->numel) return INTERP_DECLINE;
    map_job job = {fn, mil_value_data(x), mil_value_data_mut(v), p, true};
    interp_parallel(x->numel, MAP_MIN_PER_THREAD, 16, map_part, &job);
    c->val[0] = v;
    return MIL_OK;
  }
  float *tx;
  const float *xf = interp_f32(r, x, &tx);
  interp_fout o;
  float *out = xf ? interp_fout_begin_uninit(r, c, 0, &o) : NULL; /* fn writes every element */
  if (!out || o.v->numel != x->numel) {
    if (out) interp_fout_abort(&o);
    free(tx);
    return out ? INTERP_DECLINE : interp_nomem(c);
  }
  map_job job = {fn, xf, out, p, false};
  interp_parallel(x->numel, MAP_MIN_PER_THREAD, 16, map_part, &job);
  free(tx);
  c->val[0] = interp_fout_end(&o);
  return MIL_OK;
}

/* Scalar float parameter `name` (dflt when absent); false when present
 * but not a known one-element float value. */
bool interp_fparam(const mil_infer_ctx *c, const char *name, float dflt, float *out) {
  *out = dflt;
  if (!op_has(c, name)) return true;
  const mil_value *v = op_val(c, name);
  if (!v || v->kind != MIL_VAL_TENSOR || v->numel != 1 || !mil_dtype_is_float(v->type->dtype)) return false;
  *out = (float)mil_value_get_f64(v, 0);
  return true;
}

#define UNARY(name, expr)                                                     \
  static void u_##name(const float *x, float *y, int64_t n, const float *p) { \
    (void)p;                                                                  \
    for (int64_t i = 0; i < n; i++) {                                         \
      float v = x[i];                                                         \
      y[i] = (expr);                                                          \
    }                                                                         \
  }
UNARY(abs, fabsf(v))
UNARY(exp2, exp2f(v))
UNARY(sqrt, sqrtf(v))
UNARY(rsqrt, 1.0f / sqrtf(v + p[0]))
UNARY(inverse, 1.0f / (v + p[0]))
UNARY(log, logf(v + p[0]))
UNARY(square, v * v)
UNARY(tanh, tanhf(v))
UNARY(erf, erff(v))
UNARY(sin, sinf(v))
UNARY(cos, cosf(v))
UNARY(floor, floorf(v))
UNARY(ceil, ceilf(v))
UNARY(sign, v > 0 ? 1.0f : v < 0 ? -1.0f : v)
UNARY(clip, (v < p[0] ? p[0] : v) > p[1] ? p[1] : (v < p[0] ? p[0] : v))
UNARY(threshold, v < p[0] ? p[0] : v)
#undef UNARY
static void u_exp(const float *x, float *y, int64_t n, const float *p) { (void)p, interp_vexp(x, y, n); }

static mil_status unary_eps(interp_run *r, mil_infer_ctx *c, interp_unary_fn fn, float dflt) {
  float eps;
  if (!interp_fparam(c, "epsilon", dflt, &eps)) return INTERP_DECLINE;
  return interp_map(r, c, fn, &eps);
}

#define KU(name) \
  static mil_status k_##name(interp_run *r, mil_infer_ctx *c) { return interp_map(r, c, u_##name, NULL); }
KU(abs)
KU(exp)
KU(exp2)
KU(sqrt)
KU(square)
KU(tanh)
KU(erf)
KU(sin)
KU(cos)
KU(floor)
KU(ceil)
KU(sign)
#undef KU
static mil_status k_rsqrt(interp_run *r, mil_infer_ctx *c) { return unary_eps(r, c, u_rsqrt, 1e-12f); }
static mil_status k_inverse(interp_run *r, mil_infer_ctx *c) { return unary_eps(r, c, u_inverse, 1e-4f); }
static mil_status k_log(interp_run *r, mil_infer_ctx *c) { return unary_eps(r, c, u_log, 1e-45f); }

static mil_status k_clip(interp_run *r, mil_infer_ctx *c) {
  float p[2];
  if (!interp_fparam(c, "alpha", 0, &p[0]) || !interp_fparam(c, "beta", 0, &p[1])) return INTERP_DECLINE;
  return interp_map(r, c, u_clip, p);
}

static mil_status k_threshold(interp_run *r, mil_infer_ctx *c) {
  float a;
  if (!interp_fparam(c, "alpha", 0, &a)) return INTERP_DECLINE;
  return interp_map(r, c, u_threshold, &a);
}

/* ---------------- binary ---------------- */

typedef enum bop { B_ADD, B_SUB, B_MUL, B_DIV, B_MAX, B_MIN, B_POW, B_EQ, B_NE, B_LT, B_LE, B_GT, B_GE } bop;

static inline float fbin(bop k, float a, float b) {
  switch (k) {
  case B_ADD: return a + b;
  case B_SUB: return a - b;
  case B_MUL: return a * b;
  case B_DIV: return a / b;
  case B_MAX: return isnan(a) || isnan(b) ? NAN : (a > b ? a : b);
  case B_MIN: return isnan(a) || isnan(b) ? NAN : (a < b ? a : b);
  case B_POW: return powf(a, b);
  case B_EQ: return a == b;
  case B_NE: return a != b;
  case B_LT: return a < b;
  case B_LE: return a <= b;
  case B_GT: return a > b;
  case B_GE: return a >= b;
  }
  return 0;
}

/* One contiguous run of n outputs with input steps sa, sb (0 or 1): 16
 * lanes where the CPU has AVX-512F, 8 with AVX2 (the same operations on each
 * element: the same bits). */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
__attribute__((target_clones("avx512f", "avx2", "default")))
#endif
static void bin_run(bop k, const float *a, int64_t sa, const float *b, int64_t sb, float *y, int64_t n) {
  if (sa == 1 && sb == 1) {
    switch (k) {
    case B_ADD: for (int64_t i = 0; i < n; i++) y[i] = a[i] + b[i]; return;
    case B_MUL: for (int64_t i = 0; i < n; i++) y[i] = a[i] * b[i]; return;
    case B_SUB: for (int64_t i = 0; i < n; i++) y[i] = a[i] - b[i]; return;
    default: break;
    }
  } else if (sa == 1 && sb == 0) {
    float bv = b[0];
    switch (k) {
    case B_ADD: for (int64_t i = 0; i < n; i++) y[i] = a[i] + bv; return;
    case B_MUL: for (int64_t i = 0; i < n; i++) y[i] = a[i] * bv; return;
    case B_SUB: for (int64_t i = 0; i < n; i++) y[i] = a[i] - bv; return;
    case B_DIV: for (int64_t i = 0; i < n; i++) y[i] = a[i] / bv; return;
    case B_POW:
      /* x^2 and x^1 exactly as the correctly rounded power (value
       * inference: pow in double, rounded once) */
      if (bv == 2.0f) {
        for (int64_t i = 0; i < n; i++) y[i] = a[i] * a[i];
        return;
      }
      if (bv == 1.0f) {
        for (int64_t i = 0; i < n; i++) y[i] = a[i];
        return;
      }
      break;
    default: break;
    }
  } else if (sa == 0 && sb == 1) {
    float av = a[0];
    switch (k) {
    case B_ADD: for (int64_t i = 0; i < n; i++) y[i] = av + b[i]; return;
    case B_MUL: for (int64_t i = 0; i < n; i++) y[i] = av * b[i]; return;
    case B_SUB: for (int64_t i = 0; i < n; i++) y[i] = av - b[i]; return;
    case B_DIV: for (int64_t i = 0; i < n; i++) y[i] = av / b[i]; return;
    default: break;
    }
  }
  for (int64_t i = 0; i < n; i++) y[i] = fbin(k, a[i * sa], b[i * sb]);
}

/* fp16 operands and output: each run converted in blocks that stay in the
 * cache, computed in fp32 as bin_run does and rounded once at the output
 * (the same bits as converting whole tensors, without their fp32 copies). */
#define H_BLOCK 1024
static void bin_run_h(bop k, const uint16_t *a, int64_t sa, const uint16_t *b, int64_t sb, uint16_t *y, int64_t n) {
  float fa[H_BLOCK], fb[H_BLOCK], fy[H_BLOCK];
  for (int64_t i = 0; i < n; i += H_BLOCK) {
    int64_t m = n - i < H_BLOCK ? n - i : H_BLOCK;
    if (sa) mil_fp16_to_fp32_array(a + i, fa, (size_t)m);
    else fa[0] = interp_h2f(a[0]);
    if (sb) mil_fp16_to_fp32_array(b + i, fb, (size_t)m);
    else fb[0] = interp_h2f(b[0]);
    bin_run(k, fa, sa, fb, sb, fy, m);
    mil_fp32_to_fp16_array(fy, y + i, (size_t)m);
  }
}

/* fp16, a full operand (rows x inner, contiguous) against one row of
 * `inner` values repeated for every row (b when row_is_b, else a): the
 * row widened once, the full operand widened and the output rounded a few
 * rows at a time (a squeeze-and-excite gate over an NHWC region value:
 * rows are pixels, inner the channels). The same fp32 operations as
 * bin_run_h. false when out of memory. */
static bool bin_rows_h(bop k, const uint16_t *full, const uint16_t *row, bool row_is_b, uint16_t *y, int64_t rows,
                       int64_t inner) {
  float *rw = malloc((size_t)inner * sizeof *rw);
  if (!rw) return false;
  mil_fp16_to_fp32_array(row, rw, (size_t)inner);
  float fa[4 * H_BLOCK], fy[4 * H_BLOCK];
  int64_t per = 4 * H_BLOCK / inner;
  for (int64_t r0 = 0; r0 < rows; r0 += per) {
    int64_t nr = rows - r0 < per ? rows - r0 : per, n = nr * inner;
    mil_fp16_to_fp32_array(full + r0 * inner, fa, (size_t)n);
    for (int64_t j = 0; j < nr; j++) {
      const float *f = fa + j * inner;
      bin_run(k, row_is_b ? f : rw, 1, row_is_b ? rw : f, 1, fy + j * inner, inner);
    }
    mil_fp32_to_fp16_array(fy, y + r0 * inner, (size_t)n);
  }
  free(rw);
  return true;
}

/* One run of n outputs at element offsets oy, oa, ob: fp32 (h false) or
 * fp16 (h true) pointers. */
static void bin_run_at(bop k, bool h, const void *a, int64_t oa, int64_t sa, const void *b, int64_t ob, int64_t sb,
                       void *y, int64_t oy, int64_t n) {
  if (h) bin_run_h(k, (const uint16_t *)a + oa, sa, (const uint16_t *)b + ob, sb, (uint16_t *)y + oy, n);
  else bin_run(k, (const float *)a + oa, sa, (const float *)b + ob, sb, (float *)y + oy, n);
}

/* Computes y = a (op) b over the broadcast shape `shape` (rank r); a, b
 * and y are fp32, or all fp16 when h is true. */
/* With nhwc (an op of a conv chain's NHWC region, fuse.c; rank 4), every
 * shape is walked as [N, H, W, C]: the region's operands are stored so,
 * and the others read the same in either order. */
static bool bin_broadcast(bop k, bool h, const void *a, const mil_value *va, const void *b, const mil_value *vb,
                          int32_t r, const int64_t *shape_in, void *y, bool nhwc) {
  int64_t as[MIL_INTERP_MAX_RANK], bs[MIL_INTERP_MAX_RANK], sa[MIL_INTERP_MAX_RANK], sb[MIL_INTERP_MAX_RANK];
  int64_t shape[MIL_INTERP_MAX_RANK];
  int32_t ra = interp_vshape(va, as), rb = interp_vshape(vb, bs);
  if (ra > r || rb > r || r > MIL_INTERP_MAX_RANK) return false;
  for (int32_t i = 0; i < r; i++) shape[i] = shape_in[i];
  if (nhwc && r == 4) { /* right-aligned to rank 4, then C moved last */
    int64_t *d[3] = {shape, as, bs};
    int32_t *rk[3] = {&r, &ra, &rb};
    for (int q = 0; q < 3; q++) {
      int64_t t[4] = {1, 1, 1, 1};
      for (int32_t i = 0; i < *rk[q]; i++) t[4 - *rk[q] + i] = d[q][i];
      d[q][0] = t[0], d[q][1] = t[2], d[q][2] = t[3], d[q][3] = t[1];
      *rk[q] = 4;
    }
  }
  int64_t sta = 1, stb = 1;
  for (int32_t i = r - 1; i >= 0; i--) {
    int32_t ia = i - (r - ra), ib = i - (r - rb);
    int64_t da = ia >= 0 ? as[ia] : 1, db = ib >= 0 ? bs[ib] : 1;
    if ((da != 1 && da != shape[i]) || (db != 1 && db != shape[i])) return false;
    sa[i] = da == 1 ? 0 : sta;
    sb[i] = db == 1 ? 0 : stb;
    sta *= da;
    stb *= db;
  }
  int64_t total = interp_numel(r, shape);
  if (r == 0 || total == 0) {
    if (total) bin_run_at(k, h, a, 0, 0, b, 0, 0, y, 0, 1);
    return true;
  }
  /* Coalesce: drop size-1 dimensions and merge neighbours that both
   * operands step through as one ([N,C,H,W] x [N,C,1,1] becomes
   * [N*C, H*W] with b constant along each run of H*W outputs). */
  int64_t cs[MIL_INTERP_MAX_RANK], ca[MIL_INTERP_MAX_RANK], cb[MIL_INTERP_MAX_RANK];
  int32_t m = 0;
  for (int32_t i = 0; i < r; i++) {
    if (shape[i] == 1) continue;
    if (m > 0 && ca[m - 1] == sa[i] * shape[i] && cb[m - 1] == sb[i] * shape[i]) {
      cs[m - 1] *= shape[i];
      ca[m - 1] = sa[i];
      cb[m - 1] = sb[i];
      continue;
    }
    cs[m] = shape[i], ca[m] = sa[i], cb[m] = sb[i];
    m++;
  }
  if (m == 0) cs[0] = 1, ca[0] = cb[0] = 0, m = 1;
  int64_t inner = cs[m - 1], idx[MIL_INTERP_MAX_RANK] = {0}, oa = 0, ob = 0;
  if (h && m == 2 && inner <= 4 * H_BLOCK && ca[1] == 1 && cb[1] == 1) { /* a repeated row, few values at a time */
    if (ca[0] == inner && cb[0] == 0) return bin_rows_h(k, a, b, true, y, cs[0], inner);
    if (cb[0] == inner && ca[0] == 0) return bin_rows_h(k, b, a, false, y, cs[0], inner);
  }
  for (int64_t o = 0; o < total; o += inner) {
    bin_run_at(k, h, a, oa, ca[m - 1], b, ob, cb[m - 1], y, o, inner);
    for (int32_t i = m - 2; i >= 0; i--) {
      idx[i]++;
      oa += ca[i];
      ob += cb[i];
      if (idx[i] < cs[i]) break;
      oa -= ca[i] * cs[i];
      ob -= cb[i] * cs[i];
      idx[i] = 0;
    }
  }
  return true;
}

static mil_status binary(interp_run *r, mil_infer_ctx *c, bop k) {
  const mil_value *x = interp_fin(c, "x"), *y = interp_fin(c, "y");
  int64_t shape[MIL_INTERP_MAX_RANK];
  int32_t rank;
  if (!x || !y || !interp_shape(c->out[0], shape, &rank)) return INTERP_DECLINE;
  bool cmp = k >= B_EQ, nhwc = (r->nhwc & INTERP_NHWC_OUT) && rank == 4;
  if (!cmp && x->kind == MIL_VAL_TENSOR && y->kind == MIL_VAL_TENSOR && x->type->dtype == MIL_DT_FP16 &&
      y->type->dtype == MIL_DT_FP16 && c->out[0] && c->out[0]->kind == MIL_TYPE_TENSOR &&
      c->out[0]->dtype == MIL_DT_FP16) {
    mil_value *v = interp_new_value(r, c->out[0]);
    if (!v) return interp_nomem(c);
    if (!bin_broadcast(k, true, mil_value_data(x), x, mil_value_data(y), y, rank, shape, mil_value_data_mut(v), nhwc))
      return INTERP_DECLINE;
    c->val[0] = v;
    return MIL_OK;
  }
  float *tx, *ty, *cbuf = NULL;
  const float *xf = interp_f32(r, x, &tx), *yf = interp_f32(r, y, &ty);
  interp_fout o;
  mil_value *bv = NULL;
  float *out = NULL;
  if (xf && yf) {
    if (cmp) {
      bv = interp_new_value(r, c->out[0]);
      out = cbuf = bv ? malloc((size_t)(bv->numel ? bv->numel : 1) * sizeof *cbuf) : NULL;
    } else {
      out = interp_fout_begin_uninit(r, c, 0, &o); /* bin_broadcast writes every element, or fails */
    }
  }
  if (!out) {
    free(tx), free(ty);
    return interp_nomem(c);
  }
  bool ok = bin_broadcast(k, false, xf, x, yf, y, rank, shape, out, nhwc);
  free(tx), free(ty);
  if (!ok) {
    if (cmp) free(cbuf);
    else interp_fout_abort(&o);
    return INTERP_DECLINE;
  }
  if (cmp) {
    uint8_t *d = mil_value_data_mut(bv);
    for (int64_t i = 0; i < bv->numel; i++) d[i] = cbuf[i] != 0;
    free(cbuf);
    c->val[0] = bv;
  } else {
    c->val[0] = interp_fout_end(&o);
  }
  return MIL_OK;
}

#define KB(name, kind) \
  static mil_status k_##name(interp_run *r, mil_infer_ctx *c) { return binary(r, c, kind); }
KB(add, B_ADD)
KB(sub, B_SUB)
KB(mul, B_MUL)
KB(real_div, B_DIV)
KB(maximum, B_MAX)
KB(minimum, B_MIN)
KB(pow, B_POW)
KB(equal, B_EQ)
KB(not_equal, B_NE)
KB(less, B_LT)
KB(less_equal, B_LE)
KB(greater, B_GT)
KB(greater_equal, B_GE)
#undef KB

const interp_kernel interp_kernels_elementwise[] = {
    {"abs", k_abs, 0},
    {"add", k_add, 0},
    {"ceil", k_ceil, 0},
    {"clip", k_clip, 0},
    {"cos", k_cos, 0},
    {"equal", k_equal, 0},
    {"erf", k_erf, 0},
    {"exp", k_exp, 0},
    {"exp2", k_exp2, 0},
    {"floor", k_floor, 0},
    {"greater", k_greater, 0},
    {"greater_equal", k_greater_equal, 0},
    {"inverse", k_inverse, 0},
    {"less", k_less, 0},
    {"less_equal", k_less_equal, 0},
    {"log", k_log, 0},
    {"maximum", k_maximum, 0},
    {"minimum", k_minimum, 0},
    {"mul", k_mul, 0},
    {"not_equal", k_not_equal, 0},
    {"pow", k_pow, 0},
    {"real_div", k_real_div, 0},
    {"rsqrt", k_rsqrt, 0},
    {"sign", k_sign, 0},
    {"sin", k_sin, 0},
    {"sqrt", k_sqrt, 0},
    {"square", k_square, 0},
    {"sub", k_sub, 0},
    {"tanh", k_tanh, 0},
    {"threshold", k_threshold, 0},
};
INTERP_FAMILY_COUNT(elementwise);
