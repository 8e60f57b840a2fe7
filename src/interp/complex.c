/* Kernels of the complex dialect (coremltools ops/defs/complex_dialect_ops.py,
 * with the semantics its lowering pass passes/defs/lower_complex_dialect_ops.py
 * gives them). These ops live only inside coremltools before
 * common::lower_complex_dialect_ops rewrites them into real ops, so they
 * run here only to check programs before that pass. complex64 values are
 * stored as (real, imaginary) fp32 pairs; they cannot be interpreter inputs
 * or outputs of a saved model.
 *
 *   complex, complex_real, complex_imag, complex_abs  elementwise
 *   complex_fft / ifft / rfft / irfft (n, dim) and the n-dimensional
 *     fftn / ifftn / rfftn / irfftn (shapes, dims): discrete Fourier
 *     transforms computed directly (O(n^2) per line), each axis zero-padded
 *     or trimmed to its length first; rfft keeps n/2 + 1 bins, irfft reads
 *     n/2 + 1 bins as a Hermitian spectrum and returns n real values (n
 *     defaults to 2 (bins - 1)); rfftn transforms the last of its dims with
 *     rfft and then the others, irfftn the others first and the last with
 *     irfft, like numpy. norm: "backward" (1/n on the inverse), "forward"
 *     (1/n on the forward transform), "ortho" (1/sqrt(n) on both).
 *   complex_stft: frames of n_fft samples every hop_length (default
 *     n_fft / 4), no centering, times the window (win_length zeros-padded
 *     on both sides to n_fft, ones when no window is given), X[f, t] =
 *     sum_k w[k] x[t hop + k] e^(-2 pi i f k / n_fft), f < n_fft / 2 + 1 when
 *     onesided, divided by sqrt(n_fft) when normalized. */
#include <complex.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "interp/interp_internal.h"

#define FFT_MAX_DIMS 16

typedef double _Complex cplx;

/* A complex tensor being transformed (malloc'ed elements). */
typedef struct ctensor {
  cplx *d;
  int32_t rank;
  int64_t shape[MIL_INTERP_MAX_RANK];
} ctensor;

#ifndef M_PI
#define M_PI 3.14159265358979323846
#endif

static int64_t ct_numel(const ctensor *t) { return interp_numel(t->rank, t->shape); }

/* Input `name` (fp32 / fp16 or complex64) as a complex tensor. */
static mil_status ct_load(interp_run *r, mil_infer_ctx *c, const char *name, ctensor *t) {
  const mil_value *v = interp_in(c, name);
  if (!v) return MIL_ERR_INVALID;
  t->rank = interp_vshape(v, t->shape);
  int64_t n = v->numel;
  t->d = malloc((size_t)(n ? n : 1) * sizeof *t->d);
  if (!t->d) return interp_nomem(c);
  if (v->type->dtype == MIL_DT_COMPLEX64) {
    const float *f = mil_value_data(v);
    for (int64_t k = 0; k < n; k++) t->d[k] = f[2 * k] + f[2 * k + 1] * I;
    return MIL_OK;
  }
  float *tmp;
  const float *f = interp_f32(r, v, &tmp);
  if (!f) {
    free(t->d);
    return interp_fail(c, MIL_ERR_UNSUPPORTED, "input '%s' must be fp32 or complex64", name);
  }
  for (int64_t k = 0; k < n; k++) t->d[k] = f[k];
  free(tmp);
  return MIL_OK;
}

/* Output 0 from t: complex64 pairs, or the real parts for an fp32 output. */
static mil_status ct_store(interp_run *r, mil_infer_ctx *c, const ctensor *t) {
  mil_value *o = interp_new_shape(r, c->out[0]->dtype, t->rank, t->shape, t->rank == 0 && c->out[0]->is_scalar);
  if (!o) return interp_nomem(c);
  int64_t n = ct_numel(t);
  if (c->out[0]->dtype == MIL_DT_COMPLEX64) {
    float *f = mil_value_data_mut(o);
    for (int64_t k = 0; k < n; k++) f[2 * k] = (float)creal(t->d[k]), f[2 * k + 1] = (float)cimag(t->d[k]);
  } else {
    float *f = malloc((size_t)(n ? n : 1) * sizeof *f);
    if (!f) return interp_nomem(c);
    for (int64_t k = 0; k < n; k++) f[k] = (float)creal(t->d[k]);
    interp_store_f32(o, f, n);
    free(f);
  }
  c->val[0] = o;
  return MIL_OK;
}

/* ---------- elementwise ---------- */

static mil_status k_complex(interp_run *r, mil_infer_ctx *c) {
  ctensor re, im;
  mil_status st = ct_load(r, c, "real_data", &re);
  if (st != MIL_OK) return st;
  if ((st = ct_load(r, c, "imag_data", &im)) != MIL_OK) {
    free(re.d);
    return st;
  }
  int64_t n = ct_numel(&re);
  if (ct_numel(&im) != n) st = interp_fail(c, MIL_ERR_INVALID, "real_data and imag_data differ in size");
  for (int64_t k = 0; st == MIL_OK && k < n; k++) re.d[k] = creal(re.d[k]) + creal(im.d[k]) * I;
  if (st == MIL_OK) st = ct_store(r, c, &re);
  free(re.d), free(im.d);
  return st;
}

/* part: 'r' real, 'i' imaginary, 'a' magnitude, of input `name`. */
static mil_status part(interp_run *r, mil_infer_ctx *c, const char *name, char which) {
  ctensor t;
  mil_status st = ct_load(r, c, name, &t);
  if (st != MIL_OK) return st;
  for (int64_t k = 0; k < ct_numel(&t); k++)
    t.d[k] = which == 'r' ? creal(t.d[k]) : which == 'i' ? cimag(t.d[k]) : cabs(t.d[k]);
  st = ct_store(r, c, &t);
  free(t.d);
  return st;
}

static mil_status k_complex_real(interp_run *r, mil_infer_ctx *c) { return part(r, c, "data", 'r'); }
static mil_status k_complex_imag(interp_run *r, mil_infer_ctx *c) { return part(r, c, "data", 'i'); }
static mil_status k_complex_abs(interp_run *r, mil_infer_ctx *c) { return part(r, c, "x", 'a'); }

/* ---------- Fourier transforms ---------- */

typedef enum dft_kind { DFT_C2C, DFT_R2C, DFT_C2R } dft_kind;

/* Transforms t along axis with length n (inverse: sign +1). R2C keeps
 * n/2 + 1 bins; C2R reads n/2 + 1 bins as a Hermitian spectrum. */
static bool dft_axis(ctensor *t, int32_t axis, int64_t n, bool inverse, dft_kind kind, const char *norm) {
  int64_t len = t->shape[axis], outer = 1, inner = 1;
  for (int32_t i = 0; i < axis; i++) outer *= t->shape[i];
  for (int32_t i = axis + 1; i < t->rank; i++) inner *= t->shape[i];
  int64_t take = kind == DFT_C2R ? n / 2 + 1 : n, out_len = kind == DFT_R2C ? n / 2 + 1 : n;
  /* 1/n on the forward transform for "forward", on the inverse for "backward" */
  bool forward_norm = strcmp(norm, "forward") == 0, ortho = strcmp(norm, "ortho") == 0;
  double scale = ortho ? 1 / sqrt((double)n) : (forward_norm ? !inverse : inverse) ? 1 / (double)n : 1;
  int64_t total = outer * out_len * inner;
  cplx *out = malloc((size_t)(total > 0 ? total : 1) * sizeof *out);
  cplx *line = malloc((size_t)(n ? n : 1) * sizeof *line), *tw = malloc((size_t)(n ? n : 1) * sizeof *tw);
  if (!out || !line || !tw) {
    free(out), free(line), free(tw);
    return false;
  }
  double sgn = inverse ? 1 : -1;
  for (int64_t k = 0; k < n; k++) tw[k] = cexp(sgn * 2 * M_PI * (double)k / (double)n * I);
  for (int64_t o = 0; o < outer; o++)
    for (int64_t in = 0; in < inner; in++) {
      for (int64_t k = 0; k < n; k++) line[k] = 0;
      for (int64_t k = 0; k < take && k < len; k++) line[k] = t->d[(o * len + k) * inner + in];
      if (kind == DFT_C2R)
        for (int64_t k = take; k < n; k++) line[k] = conj(line[n - k]);
      for (int64_t j = 0; j < out_len; j++) {
        cplx s = 0;
        for (int64_t k = 0; k < n; k++) s += line[k] * tw[(j * k) % n];
        out[(o * out_len + j) * inner + in] = kind == DFT_C2R ? creal(s) * scale : s * scale;
      }
    }
  free(line), free(tw), free(t->d);
  t->d = out;
  t->shape[axis] = out_len;
  return true;
}

/* The axes and lengths a transform covers (the registry's fft_canon):
 * n / dim for the 1-D ops, shapes / dims for the n-dimensional ones. */
static int fft_plan(mil_infer_ctx *c, const ctensor *t, bool single, bool c2r, int32_t *axes, int64_t *lens) {
  int64_t sv[FFT_MAX_DIMS], dv[FFT_MAX_DIMS];
  int ns = op_has(c, single ? "n" : "shapes") ? op_ints(c, single ? "n" : "shapes", sv, FFT_MAX_DIMS) : -1;
  int nd = single ? 1 : op_has(c, "dims") ? op_ints(c, "dims", dv, FFT_MAX_DIMS) : -1;
  if (single) dv[0] = op_int(c, "dim", -1);
  if (ns >= 0 && nd < 0) {
    nd = ns;
    for (int i = 0; i < nd; i++) dv[i] = t->rank - ns + i;
  } else if (nd < 0) {
    nd = t->rank < FFT_MAX_DIMS ? t->rank : FFT_MAX_DIMS;
    for (int i = 0; i < nd; i++) dv[i] = i;
  }
  if (ns >= 0 && ns != nd) return -1;
  for (int i = 0; i < nd; i++) {
    axes[i] = (int32_t)(dv[i] < 0 ? dv[i] + t->rank : dv[i]);
    if (axes[i] < 0 || axes[i] >= t->rank) return -1;
    lens[i] = ns >= 0 ? sv[i] : t->shape[axes[i]];
  }
  if (ns < 0 && c2r && nd > 0) lens[nd - 1] = 2 * (t->shape[axes[nd - 1]] - 1);
  for (int i = 0; i < nd; i++)
    if (lens[i] <= 0) return -1;
  return nd;
}

/* kind: 'f' fft, 'i' ifft, 'r' rfft, 'c' irfft. */
static mil_status fft(interp_run *r, mil_infer_ctx *c, char kind, bool single) {
  ctensor t;
  mil_status st = ct_load(r, c, "data", &t);
  if (st != MIL_OK) return st;
  int32_t axes[FFT_MAX_DIMS];
  int64_t lens[FFT_MAX_DIMS];
  int n = fft_plan(c, &t, single, kind == 'c', axes, lens);
  const char *norm = op_str(c, "norm", "backward");
  bool ok = n >= 0;
  bool inverse = kind == 'i' || kind == 'c';
  if (ok && kind == 'r') ok = dft_axis(&t, axes[n - 1], lens[n - 1], false, DFT_R2C, norm);
  for (int i = 0; ok && i < n; i++) {
    if ((kind == 'r' || kind == 'c') && i == n - 1) break;
    ok = dft_axis(&t, axes[i], lens[i], inverse, DFT_C2C, norm);
  }
  if (ok && kind == 'c' && n > 0) ok = dft_axis(&t, axes[n - 1], lens[n - 1], true, DFT_C2R, norm);
  if (!ok) st = n < 0 ? interp_fail(c, MIL_ERR_INVALID, "invalid transform lengths or dims") : interp_nomem(c);
  if (st == MIL_OK) st = ct_store(r, c, &t);
  free(t.d);
  return st;
}

static mil_status k_fft(interp_run *r, mil_infer_ctx *c) { return fft(r, c, 'f', true); }
static mil_status k_fftn(interp_run *r, mil_infer_ctx *c) { return fft(r, c, 'f', false); }
static mil_status k_ifft(interp_run *r, mil_infer_ctx *c) { return fft(r, c, 'i', true); }
static mil_status k_ifftn(interp_run *r, mil_infer_ctx *c) { return fft(r, c, 'i', false); }
static mil_status k_rfft(interp_run *r, mil_infer_ctx *c) { return fft(r, c, 'r', true); }
static mil_status k_rfftn(interp_run *r, mil_infer_ctx *c) { return fft(r, c, 'r', false); }
static mil_status k_irfft(interp_run *r, mil_infer_ctx *c) { return fft(r, c, 'c', true); }
static mil_status k_irfftn(interp_run *r, mil_infer_ctx *c) { return fft(r, c, 'c', false); }

/* ---------- stft ---------- */

static mil_status k_stft(interp_run *r, mil_infer_ctx *c) {
  ctensor x;
  mil_status st = ct_load(r, c, "input", &x);
  if (st != MIL_OK) return st;
  int64_t nfft = op_int(c, "n_fft", 0), hop = op_has(c, "hop_length") ? op_int(c, "hop_length", 0) : nfft / 4;
  bool onesided = op_bool(c, "onesided", true), normalized = op_bool(c, "normalized", false);
  int64_t len = x.rank ? x.shape[x.rank - 1] : 0, batch = x.rank == 2 ? x.shape[0] : 1;
  int64_t frames = nfft > 0 && hop > 0 && len >= nfft ? (len - nfft) / hop + 1 : 0, bins = onesided ? nfft / 2 + 1 : nfft;
  double *w = nfft > 0 ? malloc((size_t)nfft * sizeof *w) : NULL;
  if (!w || hop <= 0) {
    free(x.d), free(w);
    return w ? interp_fail(c, MIL_ERR_INVALID, "n_fft %lld and hop_length %lld must be positive", (long long)nfft,
                           (long long)hop)
             : interp_nomem(c);
  }
  /* the window: win_length centered in n_fft with zeros around; ones when none is given */
  int64_t wl = op_has(c, "win_length") ? op_int(c, "win_length", nfft) : nfft, left = (nfft - wl) / 2;
  const mil_value *wv = op_has(c, "window") ? op_val(c, "window") : NULL;
  for (int64_t k = 0; k < nfft; k++) {
    int64_t j = k - (op_has(c, "win_length") ? left : 0);
    w[k] = j < 0 || j >= (wv ? wv->numel : wl) ? 0 : wv ? mil_value_get_f64(wv, j) : 1;
  }
  ctensor out = {NULL, x.rank == 2 ? 3 : 2, {0}};
  int32_t k0 = 0;
  if (x.rank == 2) out.shape[k0++] = batch;
  out.shape[k0] = bins;
  out.shape[k0 + 1] = frames;
  int64_t total = batch * bins * frames;
  out.d = malloc((size_t)(total > 0 ? total : 1) * sizeof *out.d);
  if (!out.d) {
    free(x.d), free(w);
    return interp_nomem(c);
  }
  double scale = normalized ? 1 / sqrt((double)nfft) : 1;
  for (int64_t b = 0; b < batch; b++)
    for (int64_t f = 0; f < bins; f++)
      for (int64_t t = 0; t < frames; t++) {
        cplx s = 0;
        for (int64_t k = 0; k < nfft; k++)
          s += w[k] * x.d[b * len + t * hop + k] * cexp(-2 * M_PI * (double)((f * k) % nfft) / (double)nfft * I);
        out.d[(b * bins + f) * frames + t] = s * scale;
      }
  st = ct_store(r, c, &out);
  free(x.d), free(w), free(out.d);
  return st;
}

const interp_kernel interp_kernels_complex[] = {
    {"complex", k_complex, 0},           {"complex_abs", k_complex_abs, 0},     {"complex_fft", k_fft, 0},
    {"complex_fftn", k_fftn, 0},         {"complex_ifft", k_ifft, 0},           {"complex_ifftn", k_ifftn, 0},
    {"complex_imag", k_complex_imag, 0}, {"complex_irfft", k_irfft, 0},         {"complex_irfftn", k_irfftn, 0},
    {"complex_real", k_complex_real, 0}, {"complex_rfft", k_rfft, 0},           {"complex_rfftn", k_rfftn, 0},
    {"complex_stft", k_stft, 0},
};
INTERP_FAMILY_COUNT(complex);
