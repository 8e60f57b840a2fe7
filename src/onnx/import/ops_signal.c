/* ONNX signal ops (opset 17): HannWindow, HammingWindow, BlackmanWindow,
 * DFT, STFT, MelWeightMatrix (formula at conv_mel). MIL has no FFT (coremltools' complex dialect lowers torch's
 * fft ops to real ops only inside its frontend), so:
 *   windows  a0 - a1 cos(2 pi n / N) + a2 cos(4 pi n / N), n = 0..size-1,
 *            N = size (periodic) or size - 1 (symmetric); Hann (0.5, 0.5,
 *            0), Hamming (25/46, 21/46, 0), Blackman (0.42, 0.5, 0.08).
 *            A size known at conversion gives a const computed in double,
 *            else range_1d / cos at run time.
 *   DFT      two matmuls with cos / sin matrices of the transform length
 *            (consts computed in double) along the signal axis moved
 *            last: forward Yr = Xr C + Xi S, Yi = Xi C - Xr S; inverse
 *            Yr = (Xr C - Xi S) / L, Yi = (Xr S + Xi C) / L. dft_length
 *            truncates or zero-pads; onesided keeps L / 2 + 1 bins.
 *   STFT     the frames gathered at start + [0, frame_length) (starts
 *            f * frame_step, computed at run time when frame_step is),
 *            times the window, then the DFT of the frame length (its
 *            matrices computed at run time when frame_length is).
 * DFT's length (signal dim, dft_length) must be known at conversion. */
#include <math.h>
#include <string.h>

#include "onnx/import/import_internal.h"

static const double k_pi = 3.14159265358979323846;

/* ---------- windows ---------- */

static void window_coefs(const char *op, double a[3]) {
  if (strcmp(op, "HannWindow") == 0) a[0] = 0.5, a[1] = 0.5, a[2] = 0;
  else if (strcmp(op, "HammingWindow") == 0) a[0] = 25.0 / 46, a[1] = 21.0 / 46, a[2] = 0;
  else a[0] = 0.42, a[1] = 0.5, a[2] = 0.08;
}

static mil_status conv_window(onnx_ctx *c, onnx_node *n) {
  mil_var *size = onnx_req(c, n, 0);
  if (!size) return MIL_ERR_INVALID;
  bool periodic = onnx_attr_i(n, "periodic", 1) != 0;
  int odt = (int)onnx_attr_i(n, "output_datatype", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT);
  mil_dtype dt = onnx_mil_dtype(odt);
  if (dt == MIL_DT_UNUSED || dt == MIL_DT_STRING)
    return ONNX_UNSUP(c, "output_datatype %d", odt);
  double a[3];
  window_coefs(n->op_type, a);
  int64_t *sv;
  int32_t k;
  mil_var *w;
  if (onnx_val_ints(c, size, &sv, &k) && k == 1) {
    int64_t s = sv[0];
    if (s < 0) return onnx_fail(c, MIL_ERR_INVALID, "size must be >= 0, got %lld", (long long)s);
    double N = periodic ? (double)s : (double)s - 1;
    mil_value *v = mil_value_new_tensor(c->p, MIL_DT_FP32, 1, (int64_t[]){s}, false, NULL);
    if (!v) return MIL_ERR_NOMEM;
    for (int64_t i = 0; i < s; i++) {
      double t = N != 0 ? 2 * k_pi * (double)i / N : 0;
      mil_value_set_f64(v, i, a[0] - a[1] * cos(t) + a[2] * cos(2 * t));
    }
    w = onnx_const(c, v);
  } else {
    mil_var *s = onnx_cast(c, size, MIL_DT_INT32);
    if (onnx_rank(s) > 0) s = ONNX_OP(c, "reshape", A("x", s), K("shape", onnx_i32s(c, 0, NULL)));
    mil_var *idx = onnx_cast(c, ONNX_OP(c, "range_1d", K("start", onnx_i32(c, 0)), A("end", s), K("step", onnx_i32(c, 1))),
                             MIL_DT_FP32);
    mil_var *N = onnx_cast(c, s, MIL_DT_FP32);
    if (!periodic) N = ONNX_OP(c, "sub", A("x", N), K("y", onnx_f32(c, 1)));
    mil_var *t = ONNX_OP(c, "mul", A("x", ONNX_OP(c, "real_div", A("x", idx), A("y", N))), K("y", onnx_f32(c, 2 * k_pi)));
    w = ONNX_OP(c, "sub", K("x", onnx_f32(c, a[0])),
                A("y", ONNX_OP(c, "mul", A("x", ONNX_OP(c, "cos", A("x", t))), K("y", onnx_f32(c, a[1])))));
    if (a[2] != 0) {
      mil_var *t2 = ONNX_OP(c, "mul", A("x", t), K("y", onnx_f32(c, 2)));
      w = ONNX_OP(c, "add", A("x", w),
                  A("y", ONNX_OP(c, "mul", A("x", ONNX_OP(c, "cos", A("x", t2))), K("y", onnx_f32(c, a[2])))));
    }
  }
  return onnx_set_out(c, n, 0, onnx_cast(c, w, dt));
}

/* ---------- the transform ---------- */

/* cos (sin when s) of 2 pi k m / L for rows m < rows, columns k < cols. */
static mil_var *dft_matrix(onnx_ctx *c, int64_t rows, int64_t cols, int64_t L, bool s) {
  mil_value *v = mil_value_new_tensor(c->p, MIL_DT_FP32, 2, (int64_t[]){rows, cols}, false, NULL);
  if (!v) return NULL;
  for (int64_t m = 0; m < rows; m++)
    for (int64_t k = 0; k < cols; k++) {
      double t = 2 * k_pi * (double)((m * k) % L) / (double)L;
      mil_value_set_f64(v, m * cols + k, s ? sin(t) : cos(t));
    }
  return onnx_const(c, v);
}

/* The cos and sin matrices [fl, cols] of a transform length fl known
 * only at run time (fl a rank-0 int32 var): the angles 2 pi ((m k) mod
 * fl) / fl from exact integer products. */
static void dft_matrices_rt(onnx_ctx *c, mil_var *fl, mil_var *cols, mil_var **C, mil_var **S) {
  mil_var *m = ONNX_OP(c, "range_1d", K("start", onnx_i32(c, 0)), A("end", fl), K("step", onnx_i32(c, 1)));
  mil_var *k = ONNX_OP(c, "range_1d", K("start", onnx_i32(c, 0)), A("end", cols), K("step", onnx_i32(c, 1)));
  mil_var *mk = ONNX_OP(c, "mul", A("x", ONNX_OP(c, "expand_dims", A("x", m), K("axes", onnx_i32s(c, 1, (int64_t[]){1})))),
                        A("y", ONNX_OP(c, "expand_dims", A("x", k), K("axes", onnx_i32s(c, 1, (int64_t[]){0})))));
  mil_var *r = ONNX_OP(c, "mod", A("x", mk), A("y", fl));
  mil_var *t = ONNX_OP(c, "real_div", A("x", onnx_cast(c, r, MIL_DT_FP32)), A("y", onnx_cast(c, fl, MIL_DT_FP32)));
  t = ONNX_OP(c, "mul", A("x", t), K("y", onnx_f32(c, 2 * k_pi)));
  /* exact zeros where fp32's pi would leave ~1e-7: sin at r = 0, fl / 2; cos at r = fl / 4, 3 fl / 4 */
  mil_var *sz = ONNX_OP(c, "equal", A("x", ONNX_OP(c, "mod", A("x", ONNX_OP(c, "mul", A("x", r), K("y", onnx_i32(c, 2)))), A("y", fl))),
                        K("y", onnx_i32(c, 0)));
  mil_var *f2 = ONNX_OP(c, "mul", A("x", fl), K("y", onnx_i32(c, 2)));
  mil_var *cz = ONNX_OP(c, "equal", A("x", ONNX_OP(c, "mod", A("x", ONNX_OP(c, "mul", A("x", r), K("y", onnx_i32(c, 4)))), A("y", f2))),
                        A("y", fl));
  *C = ONNX_OP(c, "select", A("cond", cz), K("a", onnx_f32(c, 0)), A("b", ONNX_OP(c, "cos", A("x", t))));
  *S = ONNX_OP(c, "select", A("cond", sz), K("a", onnx_f32(c, 0)), A("b", ONNX_OP(c, "sin", A("x", t))));
}

/* The DFT along the last axis of xr (and xi, NULL for a real signal) with
 * the cos / sin matrices C, S [length, bins] of transform length L; into
 * *yr, *yi. */
static bool dft_last(onnx_ctx *c, mil_var *xr, mil_var *xi, mil_var *C, mil_var *S, int64_t L, bool inverse,
                     mil_var **yr, mil_var **yi) {
  if (!C || !S) return false;
  mil_var *rc = ONNX_OP(c, "matmul", A("x", xr), A("y", C)), *rs = ONNX_OP(c, "matmul", A("x", xr), A("y", S));
  mil_var *ic = xi ? ONNX_OP(c, "matmul", A("x", xi), A("y", C)) : NULL;
  mil_var *is = xi ? ONNX_OP(c, "matmul", A("x", xi), A("y", S)) : NULL;
  if (!inverse) {
    *yr = xi ? ONNX_OP(c, "add", A("x", rc), A("y", is)) : rc;
    *yi = xi ? ONNX_OP(c, "sub", A("x", ic), A("y", rs)) : ONNX_OP(c, "mul", A("x", rs), K("y", onnx_f32(c, -1)));
  } else {
    mil_var *r = xi ? ONNX_OP(c, "sub", A("x", rc), A("y", is)) : rc;
    mil_var *i = xi ? ONNX_OP(c, "add", A("x", rs), A("y", ic)) : rs;
    *yr = ONNX_OP(c, "real_div", A("x", r), K("y", onnx_f32(c, (double)L)));
    *yi = ONNX_OP(c, "real_div", A("x", i), K("y", onnx_f32(c, (double)L)));
  }
  return *yr && *yi;
}

/* [..., 2] of the real and imaginary parts */
static mil_var *complex_pair(onnx_ctx *c, mil_var *yr, mil_var *yi) {
  mil_value *last = onnx_i32s(c, 1, (int64_t[]){-1});
  mil_var *parts[2] = {ONNX_OP(c, "expand_dims", A("x", yr), K("axes", last)),
                       ONNX_OP(c, "expand_dims", A("x", yi), K("axes", last))};
  if (!parts[0] || !parts[1]) return NULL;
  return ONNX_OP(c, "concat", AT("values", parts, 2), K("axis", onnx_i32(c, -1)));
}

/* The real and imaginary planes of x [..., 1 or 2]: *xi NULL for a real one. */
static mil_status planes(onnx_ctx *c, mil_var *x, mil_var **xr, mil_var **xi) {
  int32_t r = onnx_rank(x);
  int64_t comp = r > 0 ? x->type->dims[r - 1].size : -1;
  if (comp != 1 && comp != 2)
    return onnx_fail(c, MIL_ERR_INVALID, "the last dim must be 1 (real) or 2 (complex), got %lld", (long long)comp);
  x = onnx_cast(c, x, MIL_DT_FP32);
  *xr = ONNX_OP(c, "gather", A("x", x), K("indices", onnx_i32(c, 0)), K("axis", onnx_i32(c, -1)));
  *xi = comp == 2 ? ONNX_OP(c, "gather", A("x", x), K("indices", onnx_i32(c, 1)), K("axis", onnx_i32(c, -1))) : NULL;
  return *xr && (comp == 1 || *xi) ? MIL_OK : MIL_ERR_TYPE;
}

/* A scalar int input known at conversion (def when absent). */
static bool known_int(onnx_ctx *c, onnx_node *n, int32_t i, int64_t def, int64_t *out) {
  mil_var *v = onnx_in(n, i);
  *out = def;
  if (!v) return true;
  int64_t *a;
  int32_t k;
  if (!onnx_val_ints(c, v, &a, &k) || k != 1) return false;
  *out = a[0];
  return true;
}

static mil_status conv_dft(onnx_ctx *c, onnx_node *n) {
  mil_var *x = onnx_req(c, n, 0);
  if (!x) return MIL_ERR_INVALID;
  int32_t r = onnx_rank(x);
  if (r < 2) return onnx_fail(c, MIL_ERR_INVALID, "input must be [batch, ..., 1 or 2], got rank %d", (int)r);
  bool inverse = onnx_attr_i(n, "inverse", 0) != 0, onesided = onnx_attr_i(n, "onesided", 0) != 0;
  int64_t axis;
  if (n->opset < 20) axis = onnx_attr_i(n, "axis", 1);
  else if (!known_int(c, n, 2, -2, &axis)) return ONNX_UNSUP(c, "axis not known at conversion");
  if (axis < 0) axis += r;
  if (axis < 0 || axis > r - 2) return onnx_fail(c, MIL_ERR_INVALID, "axis out of range for rank %d", (int)r);
  int64_t N = x->type->dims[axis].size, L;
  if (N < 0) return ONNX_UNSUP(c, "the signal length must be known at conversion");
  if (!known_int(c, n, 1, N, &L)) return ONNX_UNSUP(c, "dft_length not known at conversion");
  if (L < 1) return onnx_fail(c, MIL_ERR_INVALID, "dft_length must be >= 1, got %lld", (long long)L);
  if (onesided && inverse) return ONNX_UNSUP(c, "onesided with inverse");
  mil_var *xr, *xi;
  mil_status st = planes(c, x, &xr, &xi);
  if (st != MIL_OK) return st;
  if (onesided && xi) return ONNX_UNSUP(c, "onesided on a complex signal");
  /* the signal axis last (planes have rank r - 1) */
  int32_t pr = r - 1;
  int64_t perm[MIL_INTERP_MAX_RANK_ONNX];
  for (int32_t i = 0, k = 0; i < pr; i++)
    if (i != axis) perm[k++] = i;
  perm[pr - 1] = axis;
  bool move = axis != pr - 1;
  mil_value *pv = onnx_i32s(c, pr, perm);
  if (move) {
    xr = ONNX_OP(c, "transpose", A("x", xr), K("perm", pv));
    if (xi) xi = ONNX_OP(c, "transpose", A("x", xi), K("perm", pv));
  }
  int64_t m = N < L ? N : L;
  if (m < N) {
    mil_value *b = onnx_i32s(c, pr, (int64_t[MIL_INTERP_MAX_RANK_ONNX]){0});
    int64_t e[MIL_INTERP_MAX_RANK_ONNX];
    bool em[MIL_INTERP_MAX_RANK_ONNX];
    for (int32_t i = 0; i < pr; i++) e[i] = 0, em[i] = i != pr - 1;
    e[pr - 1] = m;
    mil_value *ev = onnx_i32s(c, pr, e), *mv = mil_value_new_tensor(c->p, MIL_DT_BOOL, 1, (int64_t[]){pr}, false, NULL);
    if (!mv) return MIL_ERR_NOMEM;
    for (int32_t i = 0; i < pr; i++) mil_value_set_i64(mv, i, em[i]);
    xr = ONNX_OP(c, "slice_by_index", A("x", xr), K("begin", b), K("end", ev), K("end_mask", mv));
    if (xi) xi = ONNX_OP(c, "slice_by_index", A("x", xi), K("begin", b), K("end", ev), K("end_mask", mv));
  }
  mil_var *yr, *yi;
  int64_t cols = onesided ? L / 2 + 1 : L;
  if (!dft_last(c, xr, xi, dft_matrix(c, m, cols, L, false), dft_matrix(c, m, cols, L, true), L, inverse, &yr, &yi))
    return MIL_ERR_TYPE;
  if (move) {
    int64_t inv[MIL_INTERP_MAX_RANK_ONNX];
    for (int32_t i = 0; i < pr; i++) inv[perm[i]] = i;
    mil_value *iv = onnx_i32s(c, pr, inv);
    yr = ONNX_OP(c, "transpose", A("x", yr), K("perm", iv));
    yi = ONNX_OP(c, "transpose", A("x", yi), K("perm", iv));
  }
  return onnx_set_out(c, n, 0, onnx_cast(c, complex_pair(c, yr, yi), onnx_dtype(x)));
}

/* STFT(signal [batch, length, 1 or 2], frame_step, window, frame_length) */
static mil_status conv_stft(onnx_ctx *c, onnx_node *n) {
  mil_var *x = onnx_req(c, n, 0), *step = onnx_req(c, n, 1), *win = onnx_in(n, 2);
  if (!x || !step) return MIL_ERR_INVALID;
  if (onnx_rank(x) != 3) return onnx_fail(c, MIL_ERR_INVALID, "signal must be [batch, length, 1 or 2], got rank %d",
                                          (int)onnx_rank(x));
  bool onesided = onnx_attr_i(n, "onesided", 1) != 0;
  int64_t W = win && onnx_rank(win) == 1 ? win->type->dims[0].size : -1, fl;
  mil_var *flv = NULL; /* a frame length known only at run time */
  if (!known_int(c, n, 3, W, &fl)) {
    if (W >= 0) fl = W;
    else flv = ONNX_OP(c, "reshape", A("x", onnx_cast(c, onnx_in(n, 3), MIL_DT_INT32)), K("shape", onnx_i32s(c, 0, NULL)));
  }
  if (!flv && fl < 1) return ONNX_UNSUP(c, "the frame length must be given (frame_length or the window's size)");
  if (W >= 0 && W != fl) return onnx_fail(c, MIL_ERR_INVALID, "window has %lld values for frame_length %lld", (long long)W, (long long)fl);
  int64_t T = x->type->dims[1].size;
  if (T < 0) return ONNX_UNSUP(c, "the signal length must be known at conversion");
  if (!flv && T < fl) return onnx_fail(c, MIL_ERR_INVALID, "signal length %lld is shorter than the frame %lld", (long long)T, (long long)fl);
  if (!flv) flv = onnx_const(c, onnx_i32(c, fl));
  mil_var *xr, *xi;
  mil_status st = planes(c, x, &xr, &xi);
  if (st != MIL_OK) return st;
  if (onesided && xi) return ONNX_UNSUP(c, "onesided on a complex signal");
  /* frame starts f * step for f < (T - fl) / step + 1, plus [0, fl) */
  mil_var *s = onnx_cast(c, step, MIL_DT_INT32);
  if (onnx_rank(s) > 0) s = ONNX_OP(c, "reshape", A("x", s), K("shape", onnx_i32s(c, 0, NULL)));
  mil_var *span = ONNX_OP(c, "sub", K("x", onnx_i32(c, T)), A("y", flv));
  mil_var *nf = ONNX_OP(c, "add", A("x", ONNX_OP(c, "floor_div", A("x", span), A("y", s))), K("y", onnx_i32(c, 1)));
  mil_var *starts = ONNX_OP(c, "mul", A("x", ONNX_OP(c, "range_1d", K("start", onnx_i32(c, 0)), A("end", nf),
                                                     K("step", onnx_i32(c, 1)))),
                            A("y", s));
  starts = ONNX_OP(c, "expand_dims", A("x", starts), K("axes", onnx_i32s(c, 1, (int64_t[]){1})));
  mil_var *off = ONNX_OP(c, "range_1d", K("start", onnx_i32(c, 0)), A("end", flv), K("step", onnx_i32(c, 1)));
  mil_var *idx = ONNX_OP(c, "add", A("x", starts), A("y", off)); /* [frames, fl] */
  xr = ONNX_OP(c, "gather", A("x", xr), A("indices", idx), K("axis", onnx_i32(c, 1)));
  if (xi) xi = ONNX_OP(c, "gather", A("x", xi), A("indices", idx), K("axis", onnx_i32(c, 1)));
  if (win) {
    mil_var *wf = onnx_cast(c, win, MIL_DT_FP32);
    xr = ONNX_OP(c, "mul", A("x", xr), A("y", wf));
    if (xi) xi = ONNX_OP(c, "mul", A("x", xi), A("y", wf));
  }
  mil_var *yr, *yi;
  mil_var *C, *S;
  if (flv->val) {
    int64_t cols = onesided ? fl / 2 + 1 : fl;
    C = dft_matrix(c, fl, cols, fl, false);
    S = dft_matrix(c, fl, cols, fl, true);
  } else {
    mil_var *cols = onesided ? ONNX_OP(c, "add", A("x", ONNX_OP(c, "floor_div", A("x", flv), K("y", onnx_i32(c, 2)))), K("y", onnx_i32(c, 1)))
                             : flv;
    dft_matrices_rt(c, flv, cols, &C, &S);
  }
  if (!dft_last(c, xr, xi, C, S, fl, false, &yr, &yi)) return MIL_ERR_TYPE;
  return onnx_set_out(c, n, 0, onnx_cast(c, complex_pair(c, yr, yi), onnx_dtype(x)));
}


/* ---------- mel filter bank ---------- */

/* v as a rank-0 var of dtype dt */
static mil_var *scalar_of(onnx_ctx *c, mil_var *v, mil_dtype dt) {
  v = onnx_cast(c, v, dt);
  return onnx_rank(v) > 0 ? ONNX_OP(c, "reshape", A("x", v), K("shape", onnx_i32s(c, 0, NULL))) : v;
}

/* 0 .. n - 1 (n a rank-0 int32 var) as fp32 */
static mil_var *arange_f(onnx_ctx *c, mil_var *n) {
  return onnx_cast(c, ONNX_OP(c, "range_1d", K("start", onnx_i32(c, 0)), A("end", n), K("step", onnx_i32(c, 1))), MIL_DT_FP32);
}

/* mel(f) = 2595 log10(1 + f / 700) */
static mil_var *to_mel(onnx_ctx *c, mil_var *f) {
  mil_var *l = ONNX_OP(c, "log", A("x", ONNX_OP(c, "add", A("x", ONNX_OP(c, "real_div", A("x", f), K("y", onnx_f32(c, 700)))),
                                               K("y", onnx_f32(c, 1)))));
  return ONNX_OP(c, "mul", A("x", l), K("y", onnx_f32(c, 2595 / log(10.0))));
}

/* MelWeightMatrix(num_mel_bins, dft_length, sample_rate, lower_edge_hertz,
 * upper_edge_hertz) -> [dft_length / 2 + 1, num_mel_bins], as ONNX's
 * reference computes it: M + 2 band edges evenly spaced in mel over
 * [lower, lower + (M + 1) / (M + 2) (upper - lower)], back to hertz and to
 * DFT bins floor((dft_length + 1) hz / sample_rate); band i rises from
 * edge i to edge i + 1 (1 at the center) and falls to edge i + 2. All at
 * run time (the output shape follows the inputs). */
static mil_status conv_mel(onnx_ctx *c, onnx_node *n) {
  mil_var *in[5];
  for (int32_t i = 0; i < 5; i++)
    if (!(in[i] = onnx_req(c, n, i))) return MIL_ERR_INVALID;
  int odt = (int)onnx_attr_i(n, "output_datatype", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT);
  mil_dtype dt = onnx_mil_dtype(odt);
  if (dt == MIL_DT_UNUSED || dt == MIL_DT_STRING) return ONNX_UNSUP(c, "output_datatype %d", odt);
  mil_var *M = scalar_of(c, in[0], MIL_DT_INT32), *D = scalar_of(c, in[1], MIL_DT_INT32);
  mil_var *sr = scalar_of(c, in[2], MIL_DT_FP32), *lo = scalar_of(c, in[3], MIL_DT_FP32), *hi = scalar_of(c, in[4], MIL_DT_FP32);
  mil_var *M2 = ONNX_OP(c, "add", A("x", M), K("y", onnx_i32(c, 2)));
  mil_var *lmel = to_mel(c, lo);
  mil_var *step = ONNX_OP(c, "real_div", A("x", ONNX_OP(c, "sub", A("x", to_mel(c, hi)), A("y", lmel))), A("y", onnx_cast(c, M2, MIL_DT_FP32)));
  mil_var *mel = ONNX_OP(c, "add", A("x", ONNX_OP(c, "mul", A("x", arange_f(c, M2)), A("y", step))), A("y", lmel));
  mil_var *hz = ONNX_OP(c, "mul", A("x", ONNX_OP(c, "sub", A("x", ONNX_OP(c, "exp", A("x", ONNX_OP(c, "mul", A("x", mel), K("y", onnx_f32(c, log(10.0) / 2595)))))),
                                                K("y", onnx_f32(c, 1)))),
                        K("y", onnx_f32(c, 700)));
  mil_var *d1 = onnx_cast(c, ONNX_OP(c, "add", A("x", D), K("y", onnx_i32(c, 1))), MIL_DT_FP32);
  mil_var *bins = ONNX_OP(c, "floor", A("x", ONNX_OP(c, "real_div", A("x", ONNX_OP(c, "mul", A("x", hz), A("y", d1))), A("y", sr))));
  /* edges [1, M]: left, center, right */
  mil_var *e[3];
  mil_var *idx = ONNX_OP(c, "range_1d", K("start", onnx_i32(c, 0)), A("end", M), K("step", onnx_i32(c, 1)));
  for (int k = 0; k < 3; k++) {
    mil_var *ik = k ? ONNX_OP(c, "add", A("x", idx), K("y", onnx_i32(c, k))) : idx;
    e[k] = ONNX_OP(c, "expand_dims", A("x", ONNX_OP(c, "gather", A("x", bins), A("indices", ik), K("axis", onnx_i32(c, 0)))),
                   K("axes", onnx_i32s(c, 1, (int64_t[]){0})));
  }
  mil_var *S = ONNX_OP(c, "add", A("x", ONNX_OP(c, "floor_div", A("x", D), K("y", onnx_i32(c, 2)))), K("y", onnx_i32(c, 1)));
  mil_var *j = ONNX_OP(c, "expand_dims", A("x", arange_f(c, S)), K("axes", onnx_i32s(c, 1, (int64_t[]){1}))); /* [S, 1] */
  mil_var *lc = ONNX_OP(c, "sub", A("x", e[1]), A("y", e[0])), *ch = ONNX_OP(c, "sub", A("x", e[2]), A("y", e[1]));
  mil_var *one = onnx_const(c, onnx_f32(c, 1));
  mil_var *up = ONNX_OP(c, "real_div", A("x", ONNX_OP(c, "sub", A("x", j), A("y", e[0]))), A("y", ONNX_OP(c, "maximum", A("x", lc), A("y", one))));
  mil_var *down = ONNX_OP(c, "real_div", A("x", ONNX_OP(c, "sub", A("x", e[2]), A("y", j))), A("y", ONNX_OP(c, "maximum", A("x", ch), A("y", one))));
  mil_var *in_up = ONNX_OP(c, "logical_and", A("x", ONNX_OP(c, "greater_equal", A("x", j), A("y", e[0]))),
                           A("y", ONNX_OP(c, "less_equal", A("x", j), A("y", e[1]))));
  mil_var *peak = ONNX_OP(c, "equal", A("x", j), A("y", e[1]));
  mil_var *in_down = ONNX_OP(c, "logical_and", A("x", ONNX_OP(c, "greater_equal", A("x", j), A("y", e[1]))),
                             A("y", ONNX_OP(c, "less", A("x", j), A("y", e[2]))));
  in_down = ONNX_OP(c, "logical_and", A("x", in_down), A("y", ONNX_OP(c, "greater", A("x", ch), K("y", onnx_f32(c, 0)))));
  /* rising part (lc > 0), or the single peak when lc == 0; the falling part overrides */
  mil_var *lc0 = ONNX_OP(c, "equal", A("x", lc), K("y", onnx_f32(c, 0)));
  mil_var *w = ONNX_OP(c, "select", A("cond", in_up), A("a", up), K("b", onnx_f32(c, 0)));
  mil_var *pk = ONNX_OP(c, "logical_and", A("x", lc0), A("y", peak));
  w = ONNX_OP(c, "select", A("cond", pk), K("a", onnx_f32(c, 1)), A("b", ONNX_OP(c, "select", A("cond", lc0), K("a", onnx_f32(c, 0)), A("b", w))));
  w = ONNX_OP(c, "select", A("cond", in_down), A("a", down), A("b", w));
  return onnx_set_out(c, n, 0, onnx_cast(c, w, dt));
}

const onnx_op_entry onnx_ops_signal[] = {
    {"HannWindow", "", 17, 0, conv_window, "range_1d, cast, real_div, mul, cos, sub"},
    {"HammingWindow", "", 17, 0, conv_window, "range_1d, cast, real_div, mul, cos, sub"},
    {"BlackmanWindow", "", 17, 0, conv_window, "range_1d, cast, real_div, mul, cos, sub, add"},
    {"DFT", "", 17, 0, conv_dft, "gather, transpose, slice_by_index, matmul, add, sub, real_div, expand_dims, concat"},
    {"MelWeightMatrix", "", 17, 0, conv_mel, "range_1d, log, exp, floor, gather, real_div, select"},
    {"STFT", "", 17, 0, conv_stft, "floor_div, range_1d, mul, add, gather, matmul, sub, expand_dims, concat"},
    {NULL, NULL, 0, 0, NULL, NULL},
};
