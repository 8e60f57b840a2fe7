/* Op family "complex_dialect" (coremltools ops/defs/complex_dialect_ops.py):
 * ops on complex64 tensors that exist only inside coremltools' IR. The pass
 * common::lower_complex_dialect_ops rewrites them into real-valued core ops
 * (a complex tensor becomes a pair of real and imaginary fp32 tensors), so
 * they never reach a saved model.
 *
 *   %c: (4, 8, complex64)(Tensor) = complex(real_data=%re, imag_data=%im, name="c")
 *   %f: (4, 5, complex64)(Tensor) = complex_rfft(data=%x, dim=-1, norm="backward", name="f")   x: (4, 8, fp32)
 */
#include <string.h>

#include "ops/ops_defaults.h"
#include "ops/ops_internal.h"

#define DTS_C64 MIL_DTB(MIL_DT_COMPLEX64)
#define DTS_FP32 MIL_DTB(MIL_DT_FP32)
#define FFT_MAX 16

static const mil_input_spec k_complex_in[] = {
    IN_SPEC("real_data", MIL_IK_TENSOR, DTS_FP32, "T", 0, NULL),
    IN_SPEC("imag_data", MIL_IK_TENSOR, DTS_FP32, "T", 0, NULL),
};
static const mil_input_spec k_data_c64_in[] = {
    IN_SPEC("data", MIL_IK_TENSOR, DTS_C64, "T", 0, NULL),
};
static const mil_input_spec k_x_c64_in[] = {
    IN_SPEC("x", MIL_IK_TENSOR, DTS_C64, "T", 0, NULL),
};
#define FFT1_IN(name, dts)                                                                                          \
  static const mil_input_spec name[] = {                                                                           \
      IN_SPEC("data", MIL_IK_TENSOR, dts, "T", 0, NULL),                                                           \
      IN_SPEC("n", MIL_IK_TENSOR, MIL_DTS_INT32, NULL, MIL_IF_CONST | MIL_IF_OPTIONAL, "None"),                     \
      IN_SPEC("dim", MIL_IK_TENSOR, MIL_DTS_INT32, NULL, MIL_IF_CONST | MIL_IF_OPTIONAL, "-1"),                     \
      IN_SPEC("norm", MIL_IK_TENSOR, MIL_DTS_STRING, NULL, MIL_IF_CONST | MIL_IF_OPTIONAL, "\"backward\""),         \
  }
#define FFTN_IN(name, dts)                                                                                          \
  static const mil_input_spec name[] = {                                                                           \
      IN_SPEC("data", MIL_IK_TENSOR, dts, "T", 0, NULL),                                                           \
      IN_SPEC("shapes", MIL_IK_TENSOR, MIL_DTS_INT32, NULL, MIL_IF_CONST | MIL_IF_OPTIONAL, "None"),                \
      IN_SPEC("dims", MIL_IK_TENSOR, MIL_DTS_INT32, NULL, MIL_IF_CONST | MIL_IF_OPTIONAL, "None"),                  \
      IN_SPEC("norm", MIL_IK_TENSOR, MIL_DTS_STRING, NULL, MIL_IF_CONST | MIL_IF_OPTIONAL, "\"backward\""),         \
  }
FFT1_IN(k_fft_in, DTS_FP32 | DTS_C64);
FFTN_IN(k_fftn_in, DTS_FP32 | DTS_C64);
FFT1_IN(k_rfft_in, DTS_FP32);
FFTN_IN(k_rfftn_in, DTS_FP32);
FFT1_IN(k_ifft_in, DTS_C64);
FFTN_IN(k_ifftn_in, DTS_C64);
static const mil_input_spec k_stft_in[] = {
    IN_SPEC("input", MIL_IK_TENSOR, DTS_FP32 | DTS_C64, "T", 0, NULL),
    IN_SPEC("n_fft", MIL_IK_TENSOR, MIL_DTS_INT32, NULL, MIL_IF_CONST, NULL),
    IN_SPEC("hop_length", MIL_IK_TENSOR, MIL_DTS_INT32, NULL, MIL_IF_CONST | MIL_IF_OPTIONAL, "None"),
    IN_SPEC("win_length", MIL_IK_TENSOR, MIL_DTS_INT32, NULL, MIL_IF_CONST | MIL_IF_OPTIONAL, "None"),
    IN_SPEC("window", MIL_IK_TENSOR, DTS_FP32, NULL, MIL_IF_CONST | MIL_IF_OPTIONAL, "None"),
    IN_SPEC("normalized", MIL_IK_TENSOR, MIL_DTS_BOOL, NULL, MIL_IF_CONST | MIL_IF_OPTIONAL, "False"),
    IN_SPEC("onesided", MIL_IK_TENSOR, MIL_DTS_BOOL, NULL, MIL_IF_CONST | MIL_IF_OPTIONAL, "True"),
};

static const mil_type *known_rank(mil_infer_ctx *c, const char *name) {
  const mil_type *t = op_type(c, name);
  if (t->rank < 0 || t->rank > OP_MAX_RANK) {
    op_fail(c, "input '%s' must have a known rank of at most %d, got %s", name, OP_MAX_RANK, op_tstr(c, t));
    return NULL;
  }
  return t;
}

/* ---- complex, complex_real / imag / abs, complex_shape ---- */

static bool same_shape(const mil_type *a, const mil_type *b) {
  if (a->rank != b->rank) return false;
  for (int32_t i = 0; i < a->rank; i++) {
    const mil_dim *x = &a->dims[i], *y = &b->dims[i];
    if (x->size != y->size) return false;
    if (x->size < 0 && (!x->sym || !y->sym || strcmp(x->sym, y->sym) != 0)) return false;
  }
  return true;
}

static mil_status infer_complex(mil_infer_ctx *c) {
  const mil_type *re = op_type(c, "real_data"), *im = op_type(c, "imag_data");
  if (!same_shape(re, im))
    return op_fail(c, "inputs 'real_data' %s and 'imag_data' %s must have the same shape", op_tstr(c, re),
                   op_tstr(c, im));
  op_set_out(c, 0, op_tensor(c, MIL_DT_COMPLEX64, re->rank, re->dims));
  return MIL_OK;
}

static mil_status part_of(mil_infer_ctx *c, const char *name) {
  const mil_type *t = op_type(c, name);
  op_set_out(c, 0, op_tensor(c, MIL_DT_FP32, t->rank, t->dims));
  return MIL_OK;
}
static mil_status infer_part(mil_infer_ctx *c) { return part_of(c, "data"); }
static mil_status infer_abs(mil_infer_ctx *c) { return part_of(c, "x"); }

static mil_status infer_shape(mil_infer_ctx *c) {
  const mil_type *x = known_rank(c, "x");
  if (!x) return MIL_ERR_TYPE;
  mil_dim d = op_dim(x->rank);
  op_set_out(c, 0, op_tensor(c, MIL_DT_INT32, 1, &d));
  return MIL_OK;
}

static mil_status fold_shape_value(mil_infer_ctx *c) {
  const mil_type *x = op_type(c, "x");
  if (!mil_type_is_static(x)) {
    c->mark[0] = MIL_MARK_SYMBOLIC;
    return MIL_OK;
  }
  int64_t n = x->rank;
  mil_value *v = op_new_value(c, MIL_DT_INT32, 1, &n, false);
  if (!v) return MIL_ERR_NOMEM;
  for (int32_t i = 0; i < x->rank; i++) mil_value_set_i64(v, i, x->dims[i].size);
  c->val[0] = v;
  return MIL_OK;
}

/* ---- FFTs ---- */

/* Which transform lengths (shapes) along which dims (coremltools
 * fft_canonicalize_shapes_dims): `single` for the 1-D variants (inputs n /
 * dim, dim defaulting to -1), `c2r` for the inverse real transforms (the
 * last length defaults to 2 * (size - 1)). Dims come back normalized. */
static mil_status fft_canon(mil_infer_ctx *c, const mil_type *x, bool single, bool c2r, mil_dim *shapes,
                            int64_t *dims, int *count) {
  int64_t sv[FFT_MAX], dv[FFT_MAX];
  int ns = -1, nd = -1;
  const char *sname = single ? "n" : "shapes", *dname = single ? "dim" : "dims";
  if (op_has(c, sname)) {
    ns = op_ints(c, sname, sv, FFT_MAX);
    if (ns < 0) return op_fail(c, "input '%s' must be known int32 values (at most %d)", sname, FFT_MAX);
  }
  if (single) {
    nd = 1;
    dv[0] = op_int(c, "dim", -1);
  } else if (op_has(c, "dims")) {
    nd = op_ints(c, "dims", dv, FFT_MAX);
    if (nd < 0) return op_fail(c, "input 'dims' must be known int32 values (at most %d)", FFT_MAX);
  }
  int32_t r = x->rank;
  for (int i = 0; i < nd; i++)
    if (dv[i] < -r || dv[i] >= r)
      return op_fail(c, "invalid dim %lld in '%s' for data %s", (long long)dv[i], dname, op_tstr(c, x));
  for (int i = 0; i < ns; i++)
    if (sv[i] <= 0) return op_fail(c, "invalid length %lld in '%s' (must be positive)", (long long)sv[i], sname);
  int n;
  if (ns >= 0) {
    if (nd < 0) {
      if (ns > r) return op_fail(c, "input '%s' has %d lengths but data %s has rank %d", sname, ns, op_tstr(c, x), r);
      for (int i = 0; i < ns; i++) dv[i] = r - ns + i;
      nd = ns;
    } else if (ns != nd) {
      return op_fail(c, "inputs '%s' (%d values) and '%s' (%d values) must have the same length", sname, ns, dname, nd);
    }
    n = ns;
    for (int i = 0; i < n; i++) {
      dims[i] = dv[i] < 0 ? dv[i] + r : dv[i];
      shapes[i] = op_dim(sv[i]);
    }
  } else {
    if (nd < 0) {
      nd = r > FFT_MAX ? FFT_MAX : r;
      for (int i = 0; i < nd; i++) dv[i] = i;
    }
    n = nd;
    for (int i = 0; i < n; i++) {
      dims[i] = dv[i] < 0 ? dv[i] + r : dv[i];
      shapes[i] = x->dims[dims[i]];
    }
    if (c2r && n > 0) {
      const mil_dim *last = &x->dims[dims[n - 1]];
      shapes[n - 1] = last->size >= 0 ? op_dim(2 * (last->size - 1)) : op_dim_sym(c);
    }
  }
  *count = n;
  return MIL_OK;
}

static bool norm_ok(mil_infer_ctx *c) {
  const char *s = op_str(c, "norm", "backward");
  return strcmp(s, "forward") == 0 || strcmp(s, "backward") == 0 || strcmp(s, "ortho") == 0;
}

/* kind: 'f' fft (any input, complex output), 'r' rfft (real in, complex out,
 * last transformed dim halved), 'i' ifft (complex -> complex), 'c' irfft
 * (complex -> fp32, c2r lengths). */
static mil_status infer_fft(mil_infer_ctx *c, char kind, bool single) {
  const mil_type *x = known_rank(c, "data");
  if (!x) return MIL_ERR_TYPE;
  if (kind == 'f' && !norm_ok(c))
    return op_fail(c, "input 'norm' must be \"forward\", \"backward\" or \"ortho\", got \"%s\"",
                   op_str(c, "norm", "?"));
  mil_dim shapes[FFT_MAX], out[OP_MAX_RANK];
  int64_t dims[FFT_MAX];
  int n = 0;
  mil_status st = fft_canon(c, x, single, kind == 'c', shapes, dims, &n);
  if (st != MIL_OK) return st;
  for (int32_t i = 0; i < x->rank; i++) out[i] = x->dims[i];
  for (int i = 0; i < n; i++) out[dims[i]] = shapes[i];
  if (kind == 'r' && n > 0) {
    int64_t d = dims[n - 1];
    if (single) op_axis(op_int(c, "dim", -1), x->rank, &d);
    out[d] = out[d].size >= 0 ? op_dim(out[d].size / 2 + 1) : op_dim_sym(c);
  }
  mil_dtype dt = kind == 'c' ? MIL_DT_FP32 : MIL_DT_COMPLEX64;
  op_set_out(c, 0, op_tensor(c, dt, x->rank, out));
  return MIL_OK;
}

static mil_status infer_fft1(mil_infer_ctx *c) { return infer_fft(c, 'f', true); }
static mil_status infer_fftn(mil_infer_ctx *c) { return infer_fft(c, 'f', false); }
static mil_status infer_rfft1(mil_infer_ctx *c) { return infer_fft(c, 'r', true); }
static mil_status infer_rfftn(mil_infer_ctx *c) { return infer_fft(c, 'r', false); }
static mil_status infer_ifft1(mil_infer_ctx *c) { return infer_fft(c, 'i', true); }
static mil_status infer_ifftn(mil_infer_ctx *c) { return infer_fft(c, 'i', false); }
static mil_status infer_irfft1(mil_infer_ctx *c) { return infer_fft(c, 'c', true); }
static mil_status infer_irfftn(mil_infer_ctx *c) { return infer_fft(c, 'c', false); }

static mil_status defaults_fft1(mil_infer_ctx *c) {
  mil_status st = op_add_default_int(c, "dim", -1);
  return st == MIL_OK ? op_add_default_str(c, "norm", "backward") : st;
}
static mil_status defaults_fftn(mil_infer_ctx *c) { return op_add_default_str(c, "norm", "backward"); }

/* ---- stft ---- */

static int64_t floor_div(int64_t a, int64_t b) {
  int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

static mil_status infer_stft(mil_infer_ctx *c) {
  const mil_type *x = known_rank(c, "input");
  if (!x) return MIL_ERR_TYPE;
  if (x->rank < 1) return op_fail(c, "input 'input' must be at least rank 1, got %s", op_tstr(c, x));
  int64_t n_fft = op_int(c, "n_fft", 0);
  int64_t hop = op_has(c, "hop_length") ? op_int(c, "hop_length", 0) : floor_div(n_fft, 4);
  if (hop == 0) return op_fail(c, "the hop length must not be 0 (n_fft %lld)", (long long)n_fft);
  int64_t window = n_fft;
  if (op_bool(c, "onesided", true)) window = floor_div(window, 2) + 1;
  const mil_dim *last = &x->dims[x->rank - 1];
  mil_dim dims[3];
  int32_t k = 0;
  if (x->rank == 2) dims[k++] = x->dims[0];
  dims[k++] = op_dim(window);
  dims[k++] = last->size >= 0 ? op_dim(floor_div(last->size - n_fft, hop) + 1) : op_dim_sym(c);
  op_set_out(c, 0, op_tensor(c, MIL_DT_COMPLEX64, k, dims));
  return MIL_OK;
}

static mil_status defaults_stft(mil_infer_ctx *c) {
  mil_status st = op_add_default_bool(c, "normalized", false);
  return st == MIL_OK ? op_add_default_bool(c, "onesided", true) : st;
}

#define CX(name, in, n, infer, fold, dflt, doc) {#name, MIL_IOS13, "complex_dialect", in, n, 1, infer, fold, dflt, doc}

const mil_op_def op_defs_complex_dialect[] = {
    CX(complex, k_complex_in, 2, infer_complex, NULL, NULL, "complex64 tensor from real and imaginary fp32 parts"),
    CX(complex_abs, k_x_c64_in, 1, infer_abs, NULL, NULL, "magnitude of a complex tensor (fp32)"),
    CX(complex_fft, k_fft_in, 4, infer_fft1, NULL, defaults_fft1, "1-D discrete Fourier transform along dim"),
    CX(complex_fftn, k_fftn_in, 4, infer_fftn, NULL, defaults_fftn, "N-D discrete Fourier transform over dims"),
    CX(complex_ifft, k_ifft_in, 4, infer_ifft1, NULL, defaults_fft1, "1-D inverse Fourier transform along dim"),
    CX(complex_ifftn, k_ifftn_in, 4, infer_ifftn, NULL, defaults_fftn, "N-D inverse Fourier transform over dims"),
    CX(complex_imag, k_data_c64_in, 1, infer_part, NULL, NULL, "imaginary part of a complex tensor (fp32)"),
    CX(complex_irfft, k_ifft_in, 4, infer_irfft1, NULL, defaults_fft1, "1-D inverse of rfft (real fp32 output)"),
    CX(complex_irfftn, k_ifftn_in, 4, infer_irfftn, NULL, defaults_fftn, "N-D inverse of rfftn (real fp32 output)"),
    CX(complex_real, k_data_c64_in, 1, infer_part, NULL, NULL, "real part of a complex tensor (fp32)"),
    CX(complex_rfft, k_rfft_in, 4, infer_rfft1, NULL, defaults_fft1,
        "1-D Fourier transform of real input (half spectrum)"),
    CX(complex_rfftn, k_rfftn_in, 4, infer_rfftn, NULL, defaults_fftn,
        "N-D Fourier transform of real input (half spectrum on the last dim)"),
    CX(complex_shape, k_x_c64_in, 1, infer_shape, fold_shape_value, NULL, "shape of a complex tensor (int32)"),
    CX(complex_stft, k_stft_in, 7, infer_stft, NULL, defaults_stft,
        "short-time Fourier transform (complex64 [batch,] freq, frames)"),
};
OP_FAMILY_COUNT(complex_dialect);
