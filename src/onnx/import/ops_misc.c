/* ONNX ops with a direct MIL counterpart or a short decomposition:
 *   ReverseSequence  reverse_sequence (time_axis -> seq_axis)
 *   Scatter          (opsets 9-10, ScatterElements before its rename)
 *                    scatter_along_axis, mode "update"
 *   Compress         gather of non_zero(condition) along axis (the
 *                    flattened input without axis); a condition shorter
 *                    than the axis drops the rest, as ONNX says
 *   MaxUnpool        scatter of X at its flat indices into zeros of the
 *                    default output size ((in - 1) * stride - pads +
 *                    kernel, which the indices address), reshaped, then
 *                    padded at the end up to output_shape when given
 *   Det              Laplace expansion along the first row over the
 *                    elements gathered from the last two axes (minors
 *                    shared by column set), for matrices up to 5 x 5
 * (coremltools' torch frontend: flip / masked_select / scatter idioms). */
#include <string.h>

#include "onnx/import/import_internal.h"

static mil_status conv_reverse_sequence(onnx_ctx *c, onnx_node *n) {
  mil_var *x = onnx_req(c, n, 0), *len = onnx_req(c, n, 1);
  if (!x || !len) return MIL_ERR_INVALID;
  int64_t ta = onnx_attr_i(n, "time_axis", 0), ba = onnx_attr_i(n, "batch_axis", 1);
  return onnx_set_out(c, n, 0, ONNX_OP(c, "reverse_sequence", A("x", x), A("lengths", onnx_cast(c, len, MIL_DT_INT32)),
                                       K("seq_axis", onnx_i32(c, ta)), K("batch_axis", onnx_i32(c, ba))));
}

static mil_status conv_scatter(onnx_ctx *c, onnx_node *n) {
  mil_var *x = onnx_req(c, n, 0), *idx = onnx_req(c, n, 1), *u = onnx_req(c, n, 2);
  if (!x || !idx || !u) return MIL_ERR_INVALID;
  int64_t axis = onnx_attr_i(n, "axis", 0);
  if (!onnx_axis(&axis, onnx_rank(x))) return onnx_fail(c, MIL_ERR_INVALID, "axis out of range");
  return onnx_set_out(c, n, 0, ONNX_OP(c, "scatter_along_axis", A("data", x), A("indices", onnx_cast(c, idx, MIL_DT_INT32)),
                                       A("updates", u), K("axis", onnx_i32(c, axis)), K("mode", onnx_str(c, "update"))));
}

static mil_status conv_compress(onnx_ctx *c, onnx_node *n) {
  mil_var *x = onnx_req(c, n, 0), *cond = onnx_req(c, n, 1);
  if (!x || !cond) return MIL_ERR_INVALID;
  if (onnx_rank(cond) != 1) return onnx_fail(c, MIL_ERR_INVALID, "condition must be 1-D, got rank %d", (int)onnx_rank(cond));
  int64_t axis = 0;
  if (onnx_attr(n, "axis")) {
    axis = onnx_attr_i(n, "axis", 0);
    if (!onnx_axis(&axis, onnx_rank(x))) return onnx_fail(c, MIL_ERR_INVALID, "axis out of range for rank %d", (int)onnx_rank(x));
  } else
    x = ONNX_OP(c, "reshape", A("x", x), K("shape", onnx_i32s(c, 1, (int64_t[]){-1})));
  /* positions of the true entries: non_zero gives [K, 1] */
  mil_var *nz = ONNX_OP(c, "non_zero", A("x", cond));
  mil_var *idx = ONNX_OP(c, "reshape", A("x", nz), K("shape", onnx_i32s(c, 1, (int64_t[]){-1})));
  return onnx_set_out(c, n, 0, ONNX_OP(c, "gather", A("x", x), A("indices", idx), K("axis", onnx_i32(c, axis))));
}

static mil_status conv_max_unpool(onnx_ctx *c, onnx_node *n) {
  mil_var *x = onnx_req(c, n, 0), *ind = onnx_req(c, n, 1), *oshape = onnx_in(n, 2);
  if (!x || !ind) return MIL_ERR_INVALID;
  int32_t r = onnx_rank(x);
  if (r < 3) return onnx_fail(c, MIL_ERR_INVALID, "X must be [N, C, spatial...], got rank %d", (int)r);
  /* the indices address the default output: (in - 1) * stride - pads + kernel */
  const int64_t *ks, *ss, *ps;
  int32_t nk = onnx_attr_ints(n, "kernel_shape", &ks), ns = onnx_attr_ints(n, "strides", &ss),
          np = onnx_attr_ints(n, "pads", &ps);
  if (nk != r - 2) return onnx_fail(c, MIL_ERR_INVALID, "kernel_shape must have %d values", (int)(r - 2));
  int64_t out[MIL_INTERP_MAX_RANK_ONNX], total = 1;
  for (int32_t i = 0; i < r; i++) {
    int64_t d = x->type->dims[i].size;
    if (d < 0) return ONNX_UNSUP(c, "input dim %d is not known at conversion", (int)i);
    if (i >= 2) {
      int32_t k = i - 2;
      int64_t s = ns == r - 2 ? ss[k] : 1, pb = np == 2 * (r - 2) ? ps[k] : 0, pe = np == 2 * (r - 2) ? ps[k + r - 2] : 0;
      d = (d - 1) * s - pb - pe + ks[k];
    }
    out[i] = d;
    total *= d;
  }
  mil_dtype dt = onnx_dtype(x);
  mil_var *zeros = ONNX_OP(c, "fill", K("shape", onnx_i32s(c, 1, &total)), K("value", onnx_fscalar(c, dt, 0)));
  mil_value *flat = onnx_i32s(c, 1, (int64_t[]){-1});
  mil_var *fi = ONNX_OP(c, "reshape", A("x", onnx_cast(c, ind, MIL_DT_INT32)), K("shape", flat));
  mil_var *fx = ONNX_OP(c, "reshape", A("x", x), K("shape", flat));
  mil_var *y = ONNX_OP(c, "scatter", A("data", zeros), A("indices", fi), A("updates", fx), K("axis", onnx_i32(c, 0)),
                       K("mode", onnx_str(c, "update")));
  y = ONNX_OP(c, "reshape", A("x", y), K("shape", onnx_i32s(c, r, out)));
  if (oshape) {
    /* a larger output_shape: zeros appended at the end of each axis */
    int64_t *os;
    int32_t k;
    bool same = onnx_val_ints(c, oshape, &os, &k) && k == r;
    for (int32_t i = 0; same && i < r; i++) same = os[i] == out[i];
    if (!same) {
      mil_var *extra = ONNX_OP(c, "sub", A("x", onnx_cast(c, oshape, MIL_DT_INT32)), K("y", onnx_i32s(c, r, out)));
      mil_var *col[2] = {onnx_const(c, onnx_i32s(c, r, (int64_t[MIL_INTERP_MAX_RANK_ONNX]){0})),
                         ONNX_OP(c, "reshape", A("x", extra), K("shape", onnx_i32s(c, 2, (int64_t[]){r, 1})))};
      col[0] = ONNX_OP(c, "reshape", A("x", col[0]), K("shape", onnx_i32s(c, 2, (int64_t[]){r, 1})));
      mil_var *p = ONNX_OP(c, "concat", AT("values", col, 2), K("axis", onnx_i32(c, 1)));
      p = ONNX_OP(c, "reshape", A("x", p), K("shape", onnx_i32s(c, 1, (int64_t[]){2 * r})));
      y = ONNX_OP(c, "pad", A("x", y), A("pad", p), K("mode", onnx_str(c, "constant")),
                  K("constant_val", onnx_fscalar(c, dt, 0)));
    }
  }
  return onnx_set_out(c, n, 0, y);
}

#define DET_MAX 5

typedef struct det_ctx {
  onnx_ctx *c;
  int32_t n;
  mil_var *e[DET_MAX][DET_MAX]; /* element (i, j) over the batch dims */
  mil_var *memo[1 << DET_MAX];  /* det of rows n - |cols|.. over column set */
} det_ctx;

/* The determinant of the last |cols| rows restricted to the columns in
 * the bit set cols. */
static mil_var *minor_det(det_ctx *d, unsigned cols) {
  if (d->memo[cols]) return d->memo[cols];
  int32_t k = __builtin_popcount(cols), row = d->n - k;
  mil_var *acc = NULL;
  int32_t sign = 0;
  for (int32_t j = 0; j < d->n; j++) {
    if (!(cols & (1u << j))) continue;
    mil_var *t = d->e[row][j];
    if (k > 1) {
      mil_var *m = minor_det(d, cols & ~(1u << j));
      t = m ? ONNX_OP(d->c, "mul", A("x", t), A("y", m)) : NULL;
    }
    if (!t) return NULL;
    acc = !acc ? t : ONNX_OP(d->c, sign ? "sub" : "add", A("x", acc), A("y", t));
    if (!acc) return NULL;
    sign ^= 1;
  }
  return d->memo[cols] = acc;
}

static mil_status conv_det(onnx_ctx *c, onnx_node *n) {
  mil_var *x = onnx_req(c, n, 0);
  if (!x) return MIL_ERR_INVALID;
  int32_t r = onnx_rank(x);
  if (r < 2) return onnx_fail(c, MIL_ERR_INVALID, "X must be [..., M, M], got rank %d", (int)r);
  int64_t m = x->type->dims[r - 1].size;
  if (m < 0 || x->type->dims[r - 2].size != m)
    return ONNX_UNSUP(c, "the matrix size must be known and square at conversion");
  if (m > DET_MAX) return ONNX_UNSUP(c, "matrices larger than %d x %d (got %lld x %lld)", DET_MAX, DET_MAX, (long long)m, (long long)m);
  if (m == 0) return ONNX_UNSUP(c, "0 x 0 matrices");
  static det_ctx zero;
  det_ctx d = zero;
  d.c = c;
  d.n = (int32_t)m;
  for (int32_t i = 0; i < d.n; i++) {
    mil_var *row = ONNX_OP(c, "gather", A("x", x), K("indices", onnx_i32(c, i)), K("axis", onnx_i32(c, r - 2)));
    for (int32_t j = 0; j < d.n; j++)
      if (!(d.e[i][j] = ONNX_OP(c, "gather", A("x", row), K("indices", onnx_i32(c, j)), K("axis", onnx_i32(c, r - 2)))))
        return MIL_ERR_TYPE;
  }
  return onnx_set_out(c, n, 0, minor_det(&d, (1u << d.n) - 1));
}

const onnx_op_entry onnx_ops_misc[] = {
    {"ReverseSequence", "", 10, 0, conv_reverse_sequence, "reverse_sequence"},
    {"Scatter", "", 9, 10, conv_scatter, "scatter_along_axis"},
    {"Compress", "", 9, 0, conv_compress, "non_zero, reshape, gather"},
    {"MaxUnpool", "", 9, 0, conv_max_unpool, "fill, reshape, scatter, pad"},
    {"Det", "", 11, 0, conv_det, "gather, mul, add, sub"},
    {NULL, NULL, 0, 0, NULL, NULL},
};
