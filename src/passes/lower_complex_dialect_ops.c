/* common::lower_complex_dialect_ops — rewrite the complex-number dialect
 * ops (complex, complex_real, complex_fft, complex_stft, ...) with core
 * ops on separate real and imaginary parts. A complex value becomes a
 * (real, imaginary) pair of real tensors; an FFT becomes matrix products
 * with the cosine and sine DFT matrices; an STFT becomes convolutions.
 *
 *   main(%x: (1, 2, 3, fp32)(Tensor)) {
 *     block0() {
 *       %c: (1, 2, 3, complex64)(Tensor) = complex(real_data=%x, imag_data=%x, name="c")
 *       %r: (1, 2, 3, fp32)(Tensor) = complex_real(data=%c, name="r")
 *     } -> (%r)
 *   }
 *
 * becomes
 *
 *   main(%x: (1, 2, 3, fp32)(Tensor)) {
 *     block0() {
 *       %r: (1, 2, 3, fp32)(Tensor) = identity(x=%x, name="identity_0")
 *     } -> (%r)
 *   }
 *
 * An FFT along dim d of n points: swap d to the front (transpose with the
 * perm coremltools builds, which keeps a negative d), trim or zero-pad to
 * n, flatten to (n, -1), multiply by cos(2 pi (i j mod n) / n) and
 * sin(...), combine (re = C a + S b, im = -(S a - C b); inverse:
 * re = C a - S b, im = S a + C b), restore the shape, swap back, and divide
 * by n or sqrt(n) as `norm` asks. rfft keeps the first n // 2 + 1 outputs;
 * irfft first restores the conjugate-symmetric half.
 *
 * Only the ops at the top level of each function body are lowered (as
 * coremltools does). A function output of complex dtype is an error
 * (MIL_ERR_UNSUPPORTED), as is a complex value read by an op that is not
 * a complex dialect op.
 *
 * Mirrors coremltools/converters/mil/mil/passes/defs/lower_complex_dialect_ops.py
 * and ops/defs/complex_dialect_ops.py (fft_canonicalize_shapes_dims).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "passes/pass_internal.h"

#define PASS "lower_complex_dialect_ops"

typedef struct lc {
  pass_bld b;
  mil_op *at;      /* the op being lowered: everything goes before it */
  mil_status st;   /* first error */
  pass_ptrmap re;  /* complex var -> real part */
  pass_ptrmap im;  /* complex var -> imaginary part */
} lc;

typedef struct cpair {
  mil_var *re, *im;
} cpair;

/* ---------- building ---------- */

static mil_var *mk(lc *c, const char *type, int32_t n, const pass_barg *a) {
  if (c->st != MIL_OK) return NULL;
  mil_status st = MIL_OK;
  mil_var *v = pass_bld_var(&c->b, NULL, c->at, type, NULL, n, a, &st);
  if (!v) c->st = st != MIL_OK ? st : MIL_ERR_NOMEM;
  return v;
}

static mil_value *chk(lc *c, mil_value *v) {
  if (!v && c->st == MIL_OK) c->st = mil_diag_error(c->b.d, MIL_ERR_NOMEM, PASS ": out of memory");
  return v;
}

static mil_value *f32(lc *c, double x) { return chk(c, mil_value_new_scalar_f64(c->b.p, MIL_DT_FP32, x)); }
static mil_value *i32(lc *c, int64_t x) { return chk(c, pass_bld_i32(c->b.p, x)); }
static mil_value *i32s(lc *c, int32_t n, const int64_t *x) { return chk(c, pass_bld_i32s(c->b.p, n, x)); }
static mil_value *str(lc *c, const char *s) { return chk(c, pass_bld_str(c->b.p, s)); }

/* mb.const(val=v) without a name: "const_<k>". */
static mil_var *konst(lc *c, mil_value *v) {
  if (c->st != MIL_OK || !v) return NULL;
  pass_names *names = pass_bld_names(&c->b);
  const char *n = names ? pass_names_fresh(names, c->b.p, "const") : NULL;
  mil_var *k = n ? pass_const_named_before(c->at, names, n, v) : NULL;
  if (!k) c->st = mil_diag_error(c->b.d, MIL_ERR_NOMEM, PASS ": out of memory");
  return k;
}

static mil_var *unary(lc *c, const char *type, mil_var *x) {
  pass_barg a[] = {PASS_BV("x", x)};
  return mk(c, type, 1, a);
}
static mil_var *binv(lc *c, const char *type, mil_var *x, mil_var *y) {
  pass_barg a[] = {PASS_BV("x", x), PASS_BV("y", y)};
  return mk(c, type, 2, a);
}
static mil_var *bink(lc *c, const char *type, mil_var *x, mil_value *y) {
  pass_barg a[] = {PASS_BV("x", x), PASS_BK("y", y)};
  return mk(c, type, 2, a);
}
static mil_var *cast(lc *c, mil_var *x, const char *dt) {
  pass_barg a[] = {PASS_BV("x", x), PASS_BK("dtype", str(c, dt))};
  return mk(c, "cast", 2, a);
}
static mil_var *reshape(lc *c, mil_var *x, int32_t n, const int64_t *shape) {
  pass_barg a[] = {PASS_BV("x", x), PASS_BK("shape", i32s(c, n, shape))};
  return mk(c, "reshape", 2, a);
}
static mil_var *transpose(lc *c, mil_var *x, int32_t n, const int64_t *perm) {
  pass_barg a[] = {PASS_BV("x", x), PASS_BK("perm", i32s(c, n, perm))};
  return mk(c, "transpose", 2, a);
}
static mil_var *matmul(lc *c, mil_var *x, mil_var *y) {
  pass_barg a[] = {PASS_BV("x", x), PASS_BV("y", y)};
  return mk(c, "matmul", 2, a);
}
static mil_var *range_i(lc *c, int64_t start, int64_t end, int64_t step) {
  pass_barg a[] = {PASS_BK("start", i32(c, start)), PASS_BK("end", i32(c, end)), PASS_BK("step", i32(c, step))};
  return mk(c, "range_1d", 3, a);
}
static mil_var *gather(lc *c, mil_var *x, mil_var *idx, int64_t axis) {
  pass_barg a[] = {PASS_BV("x", x), PASS_BV("indices", idx), PASS_BK("axis", i32(c, axis))};
  return mk(c, "gather", 3, a);
}
static mil_var *concat2(lc *c, mil_var *x, mil_var *y, int64_t axis) {
  mil_var *vals[2] = {x, y};
  pass_barg a[] = {{.name = "values", .vars = vals, .n = 2}, PASS_BK("axis", i32(c, axis))};
  return mk(c, "concat", 2, a);
}
static mil_var *fill_shape(lc *c, int32_t n, const int64_t *shape, double value) {
  pass_barg a[] = {PASS_BK("shape", i32s(c, n, shape)), PASS_BK("value", f32(c, value))};
  return mk(c, "fill", 2, a);
}
static mil_var *expand(lc *c, mil_var *x, int64_t axis) {
  pass_barg a[] = {PASS_BV("x", x), PASS_BK("axes", i32s(c, 1, &axis))};
  return mk(c, "expand_dims", 2, a);
}

static int32_t rank_of(const mil_var *v) { return v && v->type && v->type->kind == MIL_TYPE_TENSOR ? v->type->rank : -1; }
static int64_t dim_of(const mil_var *v, int64_t d) {
  int32_t r = rank_of(v);
  if (r < 0) return -1;
  if (d < 0) d += r;
  return d >= 0 && d < r ? v->type->dims[d].size : -1;
}

/* ---------- FFT helpers ---------- */

/* coremltools' fft_canonicalize_shapes_dims on a tensor of rank r and dims
 * `shape`: fills shapes/dims (at most 64), returns their count or -1. */
static int32_t canon_shapes_dims(lc *c, const mil_var *data, const mil_value *shapes, const mil_value *dims, bool c2r,
                                 int64_t *out_shapes, int64_t *out_dims) {
  int32_t r = rank_of(data);
  if (r < 0 || !mil_type_is_static(data->type) || r > 64) return -1;
  int32_t ns = shapes ? (int32_t)shapes->numel : -1, nd = dims ? (int32_t)dims->numel : -1;
  if (ns > 64 || nd > 64) return -1;
  for (int32_t i = 0; i < nd; i++) {
    int64_t d = mil_value_get_i64(dims, i);
    if (d < -r || d >= r) return -1;
    out_dims[i] = d;
  }
  int32_t n;
  if (shapes) {
    for (int32_t i = 0; i < ns; i++)
      if (mil_value_get_i64(shapes, i) <= 0 && mil_value_get_i64(shapes, i) != -1) return -1;
    if (!dims) {
      for (int32_t i = 0; i < ns; i++) out_dims[i] = r - ns + i;
    } else if (ns != nd) {
      return -1;
    }
    n = ns;
    for (int32_t i = 0; i < n; i++) {
      int64_t s = mil_value_get_i64(shapes, i);
      out_shapes[i] = s != -1 ? s : dim_of(data, out_dims[i]);
    }
  } else if (!dims) {
    n = r;
    for (int32_t i = 0; i < r; i++) {
      out_dims[i] = i;
      out_shapes[i] = data->type->dims[i].size;
    }
  } else {
    n = nd;
    for (int32_t i = 0; i < n; i++) out_shapes[i] = dim_of(data, out_dims[i]);
  }
  if (!shapes && c2r && n > 0) out_shapes[n - 1] = 2 * (dim_of(data, out_dims[n - 1]) - 1);
  (void)c;
  return n;
}

/* Trims or zero-pads x to `size` along dim (coremltools' _resize_data). */
static mil_var *resize(lc *c, mil_var *x, int64_t dim, int64_t size) {
  int64_t have = dim_of(x, dim);
  if (size < have) return gather(c, x, range_i(c, 0, size, 1), dim);
  if (size > have) {
    int32_t r = rank_of(x);
    int64_t zs[64];
    for (int32_t i = 0; i < r && i < 64; i++) zs[i] = x->type->dims[i].size;
    zs[dim < 0 ? dim + r : dim] = size - have;
    return concat2(c, x, fill_shape(c, r, zs, 0.0), dim);
  }
  return x;
}

/* cos and sin of the DFT angles (coremltools' _calculate_dft_matrix). */
static void dft_matrix(lc *c, mil_var *n_fft, bool onesided, mil_var **cos_b, mil_var **sin_b) {
  mil_var *n = cast(c, n_fft, "fp32"), *end = n;
  if (onesided) end = bink(c, "add", bink(c, "floor_div", n, f32(c, 2.0)), f32(c, 1.0));
  pass_barg ax[] = {PASS_BK("start", f32(c, 0.0)), PASS_BV("end", end), PASS_BK("step", f32(c, 1.0))};
  mil_var *tx = mk(c, "range_1d", 3, ax);
  pass_barg ay[] = {PASS_BK("start", f32(c, 0.0)), PASS_BV("end", n), PASS_BK("step", f32(c, 1.0))};
  mil_var *ty = mk(c, "range_1d", 3, ay);
  int64_t sx[2] = {-1, 1}, sy[2] = {1, -1};
  tx = reshape(c, tx, 2, sx);
  ty = reshape(c, ty, 2, sy);
  mil_var *base = matmul(c, tx, ty);
  base = binv(c, "mod", base, n);
  base = bink(c, "mul", base, f32(c, 2 * M_PI));
  base = binv(c, "real_div", base, n);
  *cos_b = unary(c, "cos", base);
  *sin_b = unary(c, "sin", base);
}

/* coremltools' _fft_1d. */
static cpair fft_1d(lc *c, mil_var *re, mil_var *im, const mil_value *nv, const mil_value *dv, const char *norm,
                    bool inverse) {
  cpair out = {NULL, NULL};
  int64_t shapes[64], dims[64];
  if (c->st != MIL_OK || !re || !im) return out;
  if (canon_shapes_dims(c, re, nv, dv, false, shapes, dims) < 1) {
    c->st = mil_diag_error(c->b.d, MIL_ERR_UNSUPPORTED, PASS ": op '%s': cannot work out the FFT length and dim",
                           c->at->name);
    return out;
  }
  int64_t n = shapes[0], dim = dims[0];
  int32_t r = rank_of(re);
  int64_t axes[64];
  for (int32_t i = 0; i < r; i++) axes[i] = i;
  axes[0] = dim;
  axes[dim < 0 ? dim + r : dim] = 0;
  mil_var *tr = transpose(c, re, r, axes);
  mil_var *ti = transpose(c, im, r, axes);
  tr = resize(c, tr, 0, n);
  ti = resize(c, ti, 0, n);
  if (c->st != MIL_OK) return out;
  int64_t orig[64];
  for (int32_t i = 0; i < r; i++) orig[i] = tr->type->dims[i].size;
  int64_t flat[2] = {orig[0], -1};
  mil_var *rr = reshape(c, tr, 2, flat), *ri = reshape(c, ti, 2, flat);
  pass_barg na[] = {PASS_BK("x", i32(c, orig[0])), PASS_BK("dtype", str(c, "fp32"))};
  mil_var *N = mk(c, "cast", 2, na);
  mil_var *cb = NULL, *sb = NULL;
  dft_matrix(c, N, false, &cb, &sb);
  mil_var *real, *imag;
  if (!inverse) {
    mil_var *a = matmul(c, cb, rr), *b = matmul(c, sb, ri);
    real = binv(c, "add", a, b);
    a = matmul(c, sb, rr);
    b = matmul(c, cb, ri);
    imag = bink(c, "mul", binv(c, "sub", a, b), f32(c, -1.0));
  } else {
    mil_var *a = matmul(c, cb, rr), *b = matmul(c, sb, ri);
    real = binv(c, "sub", a, b);
    a = matmul(c, sb, rr);
    b = matmul(c, cb, ri);
    imag = binv(c, "add", a, b);
  }
  real = reshape(c, real, r, orig);
  imag = reshape(c, imag, r, orig);
  real = transpose(c, real, r, axes);
  imag = transpose(c, imag, r, axes);
  if (norm) {
    mil_var *scale = NULL;
    if (!inverse && (strcmp(norm, "forward") == 0 || strcmp(norm, "ortho") == 0))
      scale = strcmp(norm, "forward") == 0 ? N : unary(c, "sqrt", N);
    if (inverse && (strcmp(norm, "backward") == 0 || strcmp(norm, "ortho") == 0))
      scale = strcmp(norm, "backward") == 0 ? N : unary(c, "sqrt", N);
    if (scale) {
      real = binv(c, "real_div", real, scale);
      imag = binv(c, "real_div", imag, scale);
    }
  }
  out.re = real;
  out.im = imag;
  return out;
}

/* coremltools' _rfft_1d. */
static cpair rfft_1d(lc *c, mil_var *x, const mil_value *nv, const mil_value *dv, const char *norm) {
  pass_barg fa[] = {PASS_BV("shape", unary(c, "shape", x)), PASS_BK("value", f32(c, 0.0))};
  mil_var *zeros = mk(c, "fill", 2, fa);
  cpair p = fft_1d(c, x, zeros, nv, dv, norm, false);
  if (c->st != MIL_OK) return p;
  int64_t d = dv ? mil_value_get_i64(dv, 0) : -1;
  int64_t keep = dim_of(p.re, d) / 2 + 1;
  mil_var *idx = range_i(c, 0, keep, 1);
  p.re = gather(c, p.re, idx, d);
  p.im = gather(c, p.im, idx, d);
  return p;
}

/* coremltools' _restore_conj. */
static cpair restore_conj(lc *c, cpair in, const mil_value *nv, int64_t dim) {
  int64_t size = 2 * (dim_of(in.re, dim) - 1);
  if (nv) {
    size = mil_value_get_i64(nv, 0);
    in.re = resize(c, in.re, dim, size / 2 + 1);
    in.im = resize(c, in.im, dim, size / 2 + 1);
  }
  if (c->st != MIL_OK) return in;
  int64_t len = dim_of(in.re, dim);
  int64_t end = size % 2 == 0 ? len - 2 : len - 1;
  if (end > 0) {
    mil_var *idx = range_i(c, end, 0, -1);
    mil_var *rm = gather(c, in.re, idx, dim), *imm = gather(c, in.im, idx, dim);
    imm = bink(c, "mul", imm, f32(c, -1.0));
    in.re = concat2(c, in.re, rm, dim);
    in.im = concat2(c, in.im, imm, dim);
  }
  return in;
}

/* ---------- the ops ---------- */

static const char *norm_of(const mil_op *op) {
  const mil_value *v = pass_input_value(op, "norm");
  return v && v->type && v->type->dtype == MIL_DT_STRING && v->numel == 1 ? mil_value_get_str(v, 0) : NULL;
}

static bool is_complex(const mil_var *v) { return v && v->type && v->type->kind == MIL_TYPE_TENSOR && mil_dtype_is_complex(v->type->dtype); }

/* The (real, imaginary) parts of a complex input, or false. */
static bool parts(lc *c, mil_var *v, cpair *out) {
  out->re = pass_ptrmap_get(&c->re, v);
  out->im = pass_ptrmap_get(&c->im, v);
  if (out->re && out->im) return true;
  if (c->st == MIL_OK)
    c->st = mil_diag_error(c->b.d, MIL_ERR_UNSUPPORTED, PASS ": op '%s' (%s): input %%%s is a complex value that was not lowered",
                           c->at->name, c->at->type, v ? v->name : "?");
  return false;
}

/* A real-valued input as (x, zeros like x) when not complex. */
static bool parts_or_real(lc *c, mil_var *v, cpair *out) {
  if (is_complex(v)) return parts(c, v, out);
  out->re = v;
  mil_var *shape = unary(c, "shape", v);
  mil_var *zero = konst(c, f32(c, 0.0));
  mil_var *value = cast(c, zero, mil_dtype_name(pass_bld_dtype(v)));
  pass_barg fa[] = {PASS_BV("shape", shape), PASS_BV("value", value)};
  out->im = mk(c, "fill", 2, fa);
  return c->st == MIL_OK;
}

static cpair lower_nd(lc *c, cpair p, const mil_op *op, bool inverse) {
  int64_t shapes[64], dims[64];
  int32_t n = canon_shapes_dims(c, p.re, pass_input_value(op, "shapes"), pass_input_value(op, "dims"), false, shapes, dims);
  if (n < 0) {
    c->st = mil_diag_error(c->b.d, MIL_ERR_UNSUPPORTED, PASS ": op '%s': cannot work out the FFT shapes and dims", op->name);
    return p;
  }
  for (int32_t i = 0; i < n && c->st == MIL_OK; i++) {
    mil_value *sv = i32(c, shapes[i]), *dv = i32(c, dims[i]);
    konst(c, sv);
    konst(c, dv);
    p = fft_1d(c, p.re, p.im, sv, dv, norm_of(op), inverse);
  }
  return p;
}

static cpair lower_stft(lc *c, const mil_op *op) {
  cpair out = {NULL, NULL};
  mil_var *in = mil_op_input_var(op, "input");
  bool cplx = is_complex(in);
  const mil_value *nfv = pass_input_value(op, "n_fft"), *winv = pass_input_value(op, "win_length");
  const mil_value *onev = pass_input_value(op, "onesided"), *normv = pass_input_value(op, "normalized");
  mil_var *n_fft = mil_op_input_var(op, "n_fft"), *hop = mil_op_input_var(op, "hop_length");
  mil_var *win_len = mil_op_input_var(op, "win_length"), *window = mil_op_input_var(op, "window");
  bool onesided = onev && mil_value_get_i64(onev, 0) != 0;
  if (!nfv || !n_fft || (winv && mil_value_get_i64(winv, 0) > mil_value_get_i64(nfv, 0)) || (cplx && onesided)) {
    c->st = mil_diag_error(c->b.d, MIL_ERR_INVALID, PASS ": op '%s' (complex_stft): invalid n_fft, win_length or onesided",
                           op->name);
    return out;
  }
  cpair x;
  if (cplx) {
    if (!parts(c, in, &x)) return out;
  } else {
    x.re = in;
    x.im = NULL;
  }
  if (!hop) hop = bink(c, "floor_div", n_fft, i32(c, 4));
  bool up = rank_of(x.re) == 1;
  if (up) {
    x.re = expand(c, x.re, 0);
    if (x.im) x.im = expand(c, x.im, 0);
  }
  mil_var *cb = NULL, *sb = NULL;
  dft_matrix(c, n_fft, onesided, &cb, &sb);
  if (win_len && winv) {
    int64_t nf = mil_value_get_i64(nfv, 0), wl = mil_value_get_i64(winv, 0);
    int64_t nl = (nf - wl) / 2, nr = nf - wl - nl;
    mil_var *left = fill_shape(c, 1, &nl, 0.0);
    if (!window) window = fill_shape(c, 1, &wl, 1.0);
    mil_var *right = fill_shape(c, 1, &nr, 0.0);
    mil_var *vals[3] = {left, window, right};
    pass_barg a[] = {{.name = "values", .vars = vals, .n = 3}, PASS_BK("axis", i32(c, 0))};
    window = mk(c, "concat", 2, a);
  }
  if (window) {
    cb = binv(c, "mul", window, cb);
    sb = binv(c, "mul", window, sb);
  }
  pass_barg sa[] = {PASS_BK("x", f32(c, 0.0)), PASS_BV("y", sb)};
  sb = mk(c, "sub", 2, sa);
  cb = expand(c, cb, 1);
  sb = expand(c, sb, 1);
  mil_var *hs = expand(c, hop, 0);
  mil_var *sig = expand(c, x.re, 1);
#define CONV(xv, wv)                                                                                          \
  mk(c, "conv", 4,                                                                                            \
     (pass_barg[]){PASS_BV("x", xv), PASS_BV("weight", wv), PASS_BV("strides", hs), PASS_BK("pad_type", str(c, "valid"))})
  mil_var *cwr = CONV(sig, cb), *swr = CONV(sig, sb);
  mil_var *re = cwr, *im = swr;
  if (x.im) {
    mil_var *sigi = expand(c, x.im, 1);
    mil_var *cwi = CONV(sigi, cb), *swi = CONV(sigi, sb);
    re = binv(c, "sub", cwr, swi);
    im = binv(c, "add", swr, cwi);
  }
#undef CONV
  if (up) {
    int64_t z = 0;
    pass_barg q1[] = {PASS_BV("x", re), PASS_BK("axes", i32s(c, 1, &z))};
    re = mk(c, "squeeze", 2, q1);
    pass_barg q2[] = {PASS_BV("x", im), PASS_BK("axes", i32s(c, 1, &z))};
    im = mk(c, "squeeze", 2, q2);
  }
  if (normv && mil_value_get_i64(normv, 0) != 0) {
    mil_var *div = unary(c, "sqrt", cast(c, n_fft, "fp32"));
    re = binv(c, "real_div", re, div);
    im = binv(c, "real_div", im, div);
  }
  out.re = re;
  out.im = im;
  return out;
}

/* Lowers one op. Complex results are recorded in the maps (the op stays
 * until the end); real results replace the op, which is removed. */
static mil_status lower(lc *c, mil_op *op) {
  const char *t = op->type;
  if (strncmp(t, "complex", 7) != 0 || op->n_outputs < 1) return MIL_OK;
  c->at = op;
  mil_var *res = NULL;
  cpair cp = {NULL, NULL};
  bool complex_result = true;
  mil_var *data = mil_op_input_var(op, "data");
  if (strcmp(t, "complex") == 0) {
    cp.re = mil_op_input_var(op, "real_data");
    cp.im = mil_op_input_var(op, "imag_data");
  } else if (strcmp(t, "complex_real") == 0 || strcmp(t, "complex_imag") == 0) {
    complex_result = false;
    cpair in;
    if (parts(c, data, &in)) res = unary(c, "identity", t[8] == 'r' ? in.re : in.im);
  } else if (strcmp(t, "complex_fft") == 0) {
    cpair in;
    if (parts_or_real(c, data, &in))
      cp = fft_1d(c, in.re, in.im, pass_input_value(op, "n"), pass_input_value(op, "dim"), norm_of(op), false);
  } else if (strcmp(t, "complex_fftn") == 0) {
    cpair in;
    if (parts_or_real(c, data, &in)) cp = lower_nd(c, in, op, false);
  } else if (strcmp(t, "complex_rfft") == 0) {
    cp = rfft_1d(c, data, pass_input_value(op, "n"), pass_input_value(op, "dim"), norm_of(op));
  } else if (strcmp(t, "complex_rfftn") == 0) {
    int64_t shapes[64], dims[64];
    int32_t n = canon_shapes_dims(c, data, pass_input_value(op, "shapes"), pass_input_value(op, "dims"), false, shapes, dims);
    if (n < 1) return c->st = mil_diag_error(c->b.d, MIL_ERR_UNSUPPORTED, PASS ": op '%s': bad shapes/dims", op->name);
    mil_value *sv = i32(c, shapes[n - 1]), *dv = i32(c, dims[n - 1]);
    konst(c, sv);
    konst(c, dv);
    cp = rfft_1d(c, data, sv, dv, norm_of(op));
    for (int32_t i = 0; i < n - 1 && c->st == MIL_OK; i++) {
      mil_value *s2 = i32(c, shapes[i]), *d2 = i32(c, dims[i]);
      konst(c, s2);
      konst(c, d2);
      cp = fft_1d(c, cp.re, cp.im, s2, d2, norm_of(op), false);
    }
  } else if (strcmp(t, "complex_ifft") == 0) {
    cpair in;
    if (parts(c, data, &in))
      cp = fft_1d(c, in.re, in.im, pass_input_value(op, "n"), pass_input_value(op, "dim"), norm_of(op), true);
  } else if (strcmp(t, "complex_ifftn") == 0) {
    cpair in;
    if (parts(c, data, &in)) cp = lower_nd(c, in, op, true);
  } else if (strcmp(t, "complex_irfft") == 0) {
    complex_result = false;
    cpair in;
    const mil_value *nv = pass_input_value(op, "n"), *dv = pass_input_value(op, "dim");
    int64_t dim = dv ? mil_value_get_i64(dv, 0) : -1;
    if (parts(c, data, &in)) {
      in = restore_conj(c, in, nv, dim);
      int64_t shapes[64], dims[64];
      if (canon_shapes_dims(c, data, nv, dv, true, shapes, dims) < 1) {
        if (c->st == MIL_OK) c->st = mil_diag_error(c->b.d, MIL_ERR_UNSUPPORTED, PASS ": op '%s': bad n/dim", op->name);
      } else {
        mil_value *sv = i32(c, shapes[0]), *d2 = i32(c, dims[0]);
        konst(c, sv);
        konst(c, d2);
        res = fft_1d(c, in.re, in.im, sv, d2, norm_of(op), true).re;
      }
    }
  } else if (strcmp(t, "complex_irfftn") == 0) {
    complex_result = false;
    cpair in;
    int64_t shapes[64], dims[64];
    if (parts(c, data, &in)) {
      int32_t n = canon_shapes_dims(c, in.re, pass_input_value(op, "shapes"), pass_input_value(op, "dims"), true, shapes, dims);
      if (n < 1) return c->st = mil_diag_error(c->b.d, MIL_ERR_UNSUPPORTED, PASS ": op '%s': bad shapes/dims", op->name);
      for (int32_t i = 0; i < n - 1 && c->st == MIL_OK; i++) {
        mil_value *s2 = i32(c, shapes[i]), *d2 = i32(c, dims[i]);
        konst(c, s2);
        konst(c, d2);
        in = fft_1d(c, in.re, in.im, s2, d2, norm_of(op), true);
      }
      mil_value *sv = i32(c, shapes[n - 1]), *dv = i32(c, dims[n - 1]);
      konst(c, sv);
      konst(c, dv);
      in = restore_conj(c, in, sv, dims[n - 1]);
      in = fft_1d(c, in.re, in.im, sv, dv, norm_of(op), true);
      res = c->st == MIL_OK ? resize(c, in.re, dims[n - 1], shapes[n - 1]) : NULL;
    }
  } else if (strcmp(t, "complex_stft") == 0) {
    cp = lower_stft(c, op);
  } else if (strcmp(t, "complex_shape") == 0) {
    complex_result = false;
    cpair in;
    if (parts(c, mil_op_input_var(op, "x"), &in)) res = unary(c, "shape", in.re);
  } else if (strcmp(t, "complex_abs") == 0) {
    complex_result = false;
    cpair in;
    if (parts(c, mil_op_input_var(op, "x"), &in)) {
      mil_var *a = unary(c, "square", in.re), *b = unary(c, "square", in.im);
      res = unary(c, "sqrt", binv(c, "add", a, b));
    }
  } else {
    return MIL_OK; /* no lowering known */
  }
  if (c->st != MIL_OK) return c->st;
  if (complex_result) {
    if (!cp.re || !cp.im) return c->st = mil_diag_error(c->b.d, MIL_ERR_INVALID, PASS ": op '%s' could not be lowered", op->name);
    if (!pass_ptrmap_put(&c->re, op->outputs[0], cp.re) || !pass_ptrmap_put(&c->im, op->outputs[0], cp.im))
      return c->st = mil_diag_error(c->b.d, MIL_ERR_NOMEM, PASS ": out of memory");
    c->b.changes++;
    return MIL_OK;
  }
  if (!res) return c->st = mil_diag_error(c->b.d, MIL_ERR_INVALID, PASS ": op '%s' could not be lowered", op->name);
  int r = pass_bld_try_replace(&c->b, op, op->outputs[0], res);
  if (r < 0) return (mil_status)(-r);
  if (r == 0) return mil_diag_error(c->b.d, MIL_ERR_INVALID, PASS ": unable to lower complex dialect op '%s'", op->name);
  c->b.changes++;
  return pass_remove_ops(&op, 1, c->b.d);
}

static mil_status run(mil_program *p, const mil_pass_options *o, mil_pass_stats *stats, mil_diag *d) {
  (void)o;
  lc c = {.b = {.p = p, .d = d, .pass = PASS}};
  mil_status st = MIL_OK;
  for (int32_t i = 0; i < p->n_functions && st == MIL_OK; i++) {
    mil_function *f = p->functions[i];
    mil_block *b = mil_function_body(f);
    if (!b) continue;
    for (int32_t k = 0; k < b->n_outputs; k++)
      if (is_complex(b->outputs[k].var)) {
        st = mil_diag_error(d, MIL_ERR_UNSUPPORTED,
                            PASS ": function '%s': output %%%s is complex; MIL has no complex model outputs, extract the "
                            "real and imaginary parts explicitly",
                            f->name, b->outputs[k].var->name);
        break;
      }
    if (st != MIL_OK) break;
    int32_t n = 0;
    mil_op **ops = malloc(((size_t)b->n_ops + 1) * sizeof *ops);
    if (!ops) {
      st = mil_diag_error(d, MIL_ERR_NOMEM, PASS ": out of memory");
      break;
    }
    /* only complex* ops are lowered, and only their outputs get parts */
    for (mil_op *op = b->first; op; op = op->next)
      if (strncmp(op->type, "complex", 7) == 0) ops[n++] = op;
    for (int32_t k = 0; k < n && st == MIL_OK; k++)
      if (ops[k]->block == b) st = lower(&c, ops[k]);
    /* the ops with complex results, last first, once nothing reads them */
    for (int32_t k = n - 1; k >= 0 && st == MIL_OK; k--) {
      mil_op *op = ops[k];
      if (op->block != b || !op->n_outputs || !pass_ptrmap_get(&c.re, op->outputs[0])) continue;
      for (const mil_use *u = op->outputs[0]->uses; u; u = u->next_use)
        if (u->op && u->op->block) {
          st = mil_diag_error(d, MIL_ERR_UNSUPPORTED,
                              PASS ": the complex value %%%s is read by op '%s' (%s), which has no real-valued form",
                              op->outputs[0]->name, u->op->name, u->op->type);
          break;
        }
      if (st == MIL_OK) st = pass_remove_ops(&op, 1, d);
    }
    free(ops);
  }
  pass_ptrmap_free(&c.re);
  pass_ptrmap_free(&c.im);
  pass_bld_free(&c.b);
  if (stats) stats->changes += c.b.changes;
  return st;
}

static const char *const k_anchors[] = {"complex", "complex_abs", "complex_fft", "complex_fftn", "complex_ifft",
    "complex_ifftn", "complex_imag", "complex_irfft", "complex_irfftn", "complex_real", "complex_rfft", "complex_rfftn",
    "complex_shape", "complex_stft", NULL};
const mil_pass_def pass_def_lower_complex_dialect_ops = {
    "common::" PASS, "rewrite complex-number ops with real-valued ops", NULL, 0, run, k_anchors};
