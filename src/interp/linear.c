/* Kernels of the "linear" family: matmul and linear in fp32 through BLAS
 * sgemm (fp16 operands are widened and the result rounded to fp16).
 * Integer operands are left to the registry's value inference (numpy
 * matmul semantics, ops/linear.c). einsum runs through value inference.
 *
 * matmul follows numpy.matmul (coremltools iOS15/linear.py matmul):
 * transpose_x / transpose_y swap the last two axes, a rank-1 x gets a
 * leading 1 and a rank-1 y a trailing 1 (both dropped from the result),
 * and the leading (batch) axes broadcast.
 *
 * interp_sgemm goes through oneDNN's dnnl_sgemm when the build found
 * libdnnl (MIL_HAVE_DNNL), else OpenBLAS's cblas_sgemm: both sum in fp32,
 * in their own order. */
#include <cblas.h>
#include <stdlib.h>
#ifdef MIL_HAVE_DNNL
#include <dnnl.h>
#endif
#include <string.h>

#include "interp/interp_internal.h"

void interp_sgemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const float *a, int64_t lda,
                  const float *b, int64_t ldb, float beta, float *c, int64_t ldc) {
  if (m <= 0 || n <= 0) return;
  if (k <= 0) {
    for (int64_t i = 0; i < m; i++)
      for (int64_t j = 0; j < n; j++) c[i * ldc + j] = beta == 0 ? 0 : beta * c[i * ldc + j];
    return;
  }
#ifdef MIL_HAVE_DNNL
  /* oneDNN's sgemm (row-major) chooses its kernels from the CPU's
   * instruction sets; OpenBLAS stays the fallback. */
  if (dnnl_sgemm(ta ? 'T' : 'N', tb ? 'T' : 'N', m, n, k, alpha, a, lda, b, ldb, beta, c, ldc) == dnnl_success)
    return;
#endif
  cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, (blasint)m, (blasint)n,
              (blasint)k, alpha, a, (blasint)lda, b, (blasint)ldb, beta, c, (blasint)ldc);
}

/* BLAS takes 32-bit sizes: larger operands go to value inference. */
static bool blas_ok(int64_t x) { return x >= 0 && x < (INT64_C(1) << 31); }

static mil_status k_matmul(interp_run *r, mil_infer_ctx *c) {
  const mil_value *x = op_val(c, "x"), *y = op_val(c, "y");
  if (!x || !y || x->kind != MIL_VAL_TENSOR || y->kind != MIL_VAL_TENSOR) return INTERP_DECLINE;
  mil_dtype xd = x->type->dtype, yd = y->type->dtype;
  if ((xd != MIL_DT_FP32 && xd != MIL_DT_FP16) || (yd != MIL_DT_FP32 && yd != MIL_DT_FP16)) return INTERP_DECLINE;
  bool tx = op_bool(c, "transpose_x", false), ty = op_bool(c, "transpose_y", false);
  int64_t xs[MIL_INTERP_MAX_RANK + 1], ys[MIL_INTERP_MAX_RANK + 1];
  int32_t xr = interp_vshape(x, xs), yr = interp_vshape(y, ys);
  if (xr < 1 || yr < 1) return INTERP_DECLINE;
  if (xr == 1) {
    tx = false;
    xs[1] = xs[0];
    xs[0] = 1;
    xr = 2;
  }
  if (yr == 1) {
    ty = false;
    ys[1] = 1;
    yr = 2;
  }
  int64_t M = tx ? xs[xr - 1] : xs[xr - 2], K = tx ? xs[xr - 2] : xs[xr - 1];
  int64_t K2 = ty ? ys[yr - 1] : ys[yr - 2], N = ty ? ys[yr - 2] : ys[yr - 1];
  if (K != K2)
    return interp_fail(c, MIL_ERR_TYPE, "inner dimensions differ: x has %lld, y has %lld", (long long)K, (long long)K2);
  if (!blas_ok(M) || !blas_ok(N) || !blas_ok(K)) return INTERP_DECLINE;
  int32_t bxr = xr - 2, byr = yr - 2, br = bxr > byr ? bxr : byr;
  int64_t bs[MIL_INTERP_MAX_RANK], sx[MIL_INTERP_MAX_RANK], sy[MIL_INTERP_MAX_RANK];
  int64_t nb = 1, stx = 1, sty = 1;
  for (int32_t i = br - 1; i >= 0; i--) {
    int32_t ix = i - (br - bxr), iy = i - (br - byr);
    int64_t dx = ix >= 0 ? xs[ix] : 1, dy = iy >= 0 ? ys[iy] : 1;
    if (dx != dy && dx != 1 && dy != 1)
      return interp_fail(c, MIL_ERR_TYPE, "batch dimensions %lld and %lld do not broadcast", (long long)dx,
                         (long long)dy);
    bs[i] = dx > dy ? dx : dy;
    if (dx == 0 || dy == 0) bs[i] = 0;
    sx[i] = dx == 1 ? 0 : stx;
    sy[i] = dy == 1 ? 0 : sty;
    stx *= dx;
    sty *= dy;
    nb *= bs[i];
  }
  float *tmpx, *tmpy = NULL;
  const float *xf = interp_f32(r, x, &tmpx), *yf = NULL;
  /* y with no batch axes: x's batches stacked into one product, through
   * oneDNN's primitive with y packed once when y is a const (linear_dnnl.c) */
  bool stack = nb > 0 && sty == 1 && !tx && blas_ok(nb * M) && br == bxr;
  interp_fout o;
  float *out = xf ? interp_fout_begin(r, c, 0, &o) : NULL;
  bool done = out && o.v->numel == nb * M * N && stack && interp_linear_dnnl(r, xf, y, ty, NULL, out, nb * M, K, N);
  if (out && !done && !(yf = interp_f32(r, y, &tmpy))) {
    interp_fout_abort(&o);
    out = NULL;
  }
  if (!out || o.v->numel != nb * M * N) {
    if (out) interp_fout_abort(&o);
    free(tmpx);
    free(tmpy);
    return out ? INTERP_DECLINE : interp_nomem(c);
  }
  int64_t mk = M * K, kn = K * N, mn = M * N;
  if (stack && !done) {
    interp_sgemm(false, ty, nb * M, N, K, 1.0f, xf, K, yf, ty ? K : N, 0.0f, out, N);
  } else if (!stack) {
    int64_t idx[MIL_INTERP_MAX_RANK] = {0};
    int64_t ox = 0, oy = 0;
    for (int64_t b = 0; b < nb; b++) {
      interp_sgemm(tx, ty, M, N, K, 1.0f, xf + ox * mk, tx ? M : K, yf + oy * kn, ty ? K : N, 0.0f, out + b * mn, N);
      for (int32_t i = br - 1; i >= 0; i--) {
        idx[i]++;
        ox += sx[i];
        oy += sy[i];
        if (idx[i] < bs[i]) break;
        ox -= sx[i] * bs[i];
        oy -= sy[i] * bs[i];
        idx[i] = 0;
      }
    }
  }
  free(tmpx);
  free(tmpy);
  c->val[0] = interp_fout_end(&o);
  return MIL_OK;
}

static mil_status k_linear(interp_run *r, mil_infer_ctx *c) {
  const mil_value *x = interp_fin(c, "x"), *w = interp_fin(c, "weight");
  const mil_value *b = op_has(c, "bias") ? interp_fin(c, "bias") : NULL;
  if (!x || !w || (op_has(c, "bias") && !b) || x->type->rank < 1 || w->type->rank != 2) return INTERP_DECLINE;
  int64_t N = w->type->dims[0].size, K = w->type->dims[1].size;
  if (x->type->dims[x->type->rank - 1].size != K || (b && b->numel != N)) return INTERP_DECLINE;
  int64_t M = K ? x->numel / K : 0;
  if (!blas_ok(M) || !blas_ok(N) || !blas_ok(K)) return INTERP_DECLINE;
  float *tx, *tw = NULL, *tb = NULL;
  const float *xf = interp_f32(r, x, &tx), *bf = b ? interp_f32(r, b, &tb) : NULL, *wf = NULL;
  interp_fout o;
  float *out = xf && (!b || bf) ? interp_fout_begin(r, c, 0, &o) : NULL;
  /* a const weight: packed once, the bias added by the primitive
   * (linear_dnnl.c); else sgemm and the bias added here */
  bool done = out && K > 0 && interp_linear_dnnl(r, xf, w, true, bf, out, M, K, N);
  if (out && !done && K > 0 && !(wf = interp_f32(r, w, &tw))) {
    interp_fout_abort(&o);
    out = NULL;
  }
  if (!out) {
    free(tx), free(tw), free(tb);
    return interp_nomem(c);
  }
  if (!done) {
    if (K == 0) memset(out, 0, (size_t)(M * N) * sizeof *out);
    else interp_sgemm(false, true, M, N, K, 1.0f, xf, K, wf, K, 0.0f, out, N);
    if (bf)
      for (int64_t i = 0; i < M; i++)
        for (int64_t j = 0; j < N; j++) out[i * N + j] += bf[j];
  }
  free(tx), free(tw), free(tb);
  c->val[0] = interp_fout_end(&o);
  return MIL_OK;
}

const interp_kernel interp_kernels_linear[] = {
    {"linear", k_linear, 0},
    {"matmul", k_matmul, 0},
};
INTERP_FAMILY_COUNT(linear);
