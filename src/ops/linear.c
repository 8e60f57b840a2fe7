/* Op family "linear": linear, matmul (iOS13 and iOS17 variants), einsum.
 * Mirrors coremltools ops/defs/iOS15/linear.py and iOS17/linear.py,
 * including value inference (numpy matmul / einsum semantics). Folding
 * accumulates in double (int64 for integer outputs) and rounds once to the
 * output dtype. Integer arithmetic (int64, wrapped to the output) is used
 * only when every operand is an integer; a float result stored into an
 * integer output truncates toward zero, like numpy's astype. */
#include <string.h>

#include "ops/ops_defaults.h"
#include "ops/ops_internal.h"

static bool dim_same(const mil_dim *a, const mil_dim *b) {
  if (a->size >= 0 || b->size >= 0) return a->size == b->size;
  return a->sym && b->sym && strcmp(a->sym, b->sym) == 0;
}

static bool is_int_dtype(mil_dtype dt) { return mil_dtype_is_int(dt) || dt == MIL_DT_BOOL; }

/* acc + a * b with two's-complement wraparound (no signed overflow) */
static int64_t mac(int64_t acc, int64_t a, int64_t b) { return (int64_t)((uint64_t)acc + (uint64_t)a * (uint64_t)b); }

/* ---------------- linear ---------------- */

static mil_status linear_infer(mil_infer_ctx *c) {
  const mil_type *x = op_type(c, "x"), *w = op_type(c, "weight"), *b = op_type(c, "bias");
  if (w->rank != 2) return op_fail(c, "input 'weight' must be rank 2 (D_out, D_in), got %s", op_tstr(c, w));
  if (x->rank < 0) {
    op_set_out(c, 0, op_tensor(c, x->dtype, -1, NULL));
    return MIL_OK;
  }
  if (x->rank < 1) return op_fail(c, "input 'x' must have rank >= 1, got %s", op_tstr(c, x));
  const mil_dim *xl = &x->dims[x->rank - 1], *wl = &w->dims[1];
  if (xl->size >= 0 && wl->size >= 0 && xl->size != wl->size)
    return op_fail(c, "the last dimension of x (%s) is %lld, which does not match the last dimension of weight (%s)",
                   op_tstr(c, x), (long long)xl->size, op_tstr(c, w));
  if (b) {
    if (b->rank != 1) return op_fail(c, "input 'bias' must be rank 1 (D_out), got %s", op_tstr(c, b));
    if (b->dims[0].size >= 0 && w->dims[0].size >= 0 && b->dims[0].size != w->dims[0].size)
      return op_fail(c, "input 'bias' has %lld values, which does not match the first dimension of weight %s",
                     (long long)b->dims[0].size, op_tstr(c, w));
  }
  mil_dim dims[OP_MAX_RANK];
  if (x->rank > OP_MAX_RANK) return op_fail(c, "input 'x' rank %d is too large", x->rank);
  memcpy(dims, x->dims, (size_t)x->rank * sizeof *dims);
  dims[x->rank - 1] = w->dims[0];
  op_set_out(c, 0, op_tensor(c, x->dtype, x->rank, dims));
  return MIL_OK;
}

static void store(mil_value *v, int64_t i, double f, int64_t n, bool integer) {
  if (integer) mil_value_set_i64(v, i, n);
  else mil_value_set_f64(v, i, f);
}

static mil_status linear_fold(mil_infer_ctx *c) {
  const mil_value *x = op_val(c, "x"), *w = op_val(c, "weight"), *b = op_val(c, "bias");
  if (!x || !w || (op_has(c, "bias") && !b)) return MIL_OK;
  mil_value *out = op_new_out_value(c, 0);
  if (!out) return MIL_OK;
  int64_t dout = w->type->dims[0].size, din = w->type->dims[1].size;
  int64_t rows = dout ? out->numel / dout : 0;
  bool integer = is_int_dtype(out->type->dtype) && is_int_dtype(x->type->dtype) && is_int_dtype(w->type->dtype) &&
                 (!b || is_int_dtype(b->type->dtype));
  for (int64_t r = 0; r < rows; r++)
    for (int64_t o = 0; o < dout; o++) {
      double acc = 0;
      int64_t iacc = 0;
      for (int64_t k = 0; k < din; k++) {
        if (integer) iacc = mac(iacc, mil_value_get_i64(x, r * din + k), mil_value_get_i64(w, o * din + k));
        else acc += mil_value_get_f64(x, r * din + k) * mil_value_get_f64(w, o * din + k);
      }
      int64_t idx = r * dout + o;
      store(out, idx, acc, iacc, integer);
      if (b) { /* numpy adds the bias to the already rounded product */
        if (integer) mil_value_set_i64(out, idx, mac(mil_value_get_i64(out, idx), mil_value_get_i64(b, o), 1));
        else mil_value_set_f64(out, idx, mil_value_get_f64(out, idx) + mil_value_get_f64(b, o));
      }
    }
  c->val[0] = out;
  return MIL_OK;
}

static mil_status linear_defaults(mil_infer_ctx *c) {
  const mil_type *w = op_type(c, "weight");
  if (!w || w->rank != 2 || w->dims[0].size < 0 || op_has(c, "bias")) return MIL_OK;
  int64_t n = w->dims[0].size;
  mil_value *v = mil_value_new_tensor(c->prog, w->dtype, 1, &n, false, NULL);
  if (!v) return MIL_ERR_NOMEM;
  return op_add_default_const(c, "bias", v); /* zero-filled */
}

/* ---------------- matmul ---------------- */

static bool is_const_input(const mil_infer_ctx *c, const char *name) {
  const mil_input *in = op_input(c, name);
  if (!in || !in->n_args) return false;
  if (in->args[0].value) return true;
  const mil_var *v = in->args[0].use.var;
  return v && v->op && mil_op_is_const(v->op);
}

static mil_status bool_input(mil_infer_ctx *c, const char *name, bool *out) {
  *out = false;
  if (!op_has(c, name)) return MIL_OK;
  const mil_value *v = op_val(c, name);
  if (!v || v->kind != MIL_VAL_TENSOR || v->numel != 1) return op_fail(c, "input '%s' must be a known bool", name);
  *out = mil_value_get_i64(v, 0) != 0;
  return MIL_OK;
}

static mil_status matmul_infer(mil_infer_ctx *c) {
  const mil_type *x = op_type(c, "x"), *y = op_type(c, "y");
  mil_dtype out_dt = x->dtype;
  if (c->def->opset >= MIL_IOS17) {
    bool xc = is_const_input(c, "x"), yc = is_const_input(c, "y");
    if (xc == yc && x->dtype != y->dtype)
      return op_fail(c, "when x and y are both %s, their dtypes must match, got x %s and y %s",
                     xc ? "const" : "non-const", op_tstr(c, x), op_tstr(c, y));
    if (xc != yc) out_dt = yc ? x->dtype : y->dtype;
  }
  bool tx, ty;
  mil_status st;
  if ((st = bool_input(c, "transpose_x", &tx)) != MIL_OK) return st;
  if ((st = bool_input(c, "transpose_y", &ty)) != MIL_OK) return st;
  if (x->rank < 0 || y->rank < 0) {
    op_set_out(c, 0, op_tensor(c, out_dt, -1, NULL));
    return MIL_OK;
  }
  int32_t xr = x->rank, yr = y->rank;
  if (xr < 1 || yr < 1) return op_fail(c, "inputs x and y must have rank >= 1, got x %s and y %s", op_tstr(c, x), op_tstr(c, y));
  if (xr > OP_MAX_RANK || yr > OP_MAX_RANK) return op_fail(c, "input rank is too large");
  if (xr == 1 && tx) return op_fail(c, "x is rank 1, but transpose_x is True, which is not allowed");
  if (yr == 1 && ty) return op_fail(c, "y is rank 1, but transpose_y is True, which is not allowed");
  mil_dim xs[OP_MAX_RANK + 1], ys[OP_MAX_RANK + 1];
  int32_t xn = 0, yn = 0;
  if (xr == 1) xs[xn++] = op_dim(1);
  for (int32_t i = 0; i < xr; i++) xs[xn++] = x->dims[i];
  for (int32_t i = 0; i < yr; i++) ys[yn++] = y->dims[i];
  if (yr == 1) ys[yn++] = op_dim(1);
  if (tx) {
    mil_dim t = xs[xn - 1];
    xs[xn - 1] = xs[xn - 2];
    xs[xn - 2] = t;
  }
  if (ty) {
    mil_dim t = ys[yn - 1];
    ys[yn - 1] = ys[yn - 2];
    ys[yn - 2] = t;
  }
  if (xs[xn - 1].size >= 0 && ys[yn - 2].size >= 0 && xs[xn - 1].size != ys[yn - 2].size)
    return op_fail(c, "x %s and y %s cannot be multiplied: inner dimensions %lld and %lld differ", op_tstr(c, x),
                   op_tstr(c, y), (long long)xs[xn - 1].size, (long long)ys[yn - 2].size);
  mil_dim bd[OP_MAX_RANK + 2];
  int32_t br = 0;
  const mil_type *xb = op_tensor(c, x->dtype, xn - 2, xs), *yb = op_tensor(c, y->dtype, yn - 2, ys);
  if ((st = op_broadcast(c, xb, yb, bd, &br)) != MIL_OK) return st;
  bd[br++] = xs[xn - 2];
  bd[br++] = ys[yn - 1];
  if (yr == 1) br--;                                   /* drop the appended dim of a 1-D y */
  if (xr == 1) {                                       /* and the prepended dim of a 1-D x */
    int32_t at = yr != 1 ? br - 2 : br - 1;
    for (int32_t i = at; i < br - 1; i++) bd[i] = bd[i + 1];
    br--;
  }
  op_set_out(c, 0, op_tensor(c, out_dt, br, bd));
  return MIL_OK;
}

/* Flat offset into a broadcast operand: idx = batch index in the output's
 * batch shape ob (rank obr), operand batch shape sb (rank sbr). */
static int64_t bcast_offset(int64_t idx, const int64_t *ob, int32_t obr, const int64_t *sb, int32_t sbr) {
  int64_t off = 0, stride = 1;
  for (int32_t i = obr - 1; i >= 0; i--) {
    int64_t coord = idx % ob[i];
    idx /= ob[i];
    int32_t j = i - (obr - sbr);
    if (j >= 0) {
      if (sb[j] != 1) off += coord * stride;
      stride *= sb[j];
    }
  }
  return off;
}

static mil_status matmul_fold(mil_infer_ctx *c) {
  const mil_value *x = op_val(c, "x"), *y = op_val(c, "y");
  if (!x || !y || x->kind != MIL_VAL_TENSOR || y->kind != MIL_VAL_TENSOR) return MIL_OK;
  bool tx = op_bool(c, "transpose_x", false), ty = op_bool(c, "transpose_y", false);
  mil_value *out = op_new_out_value(c, 0);
  if (!out) return MIL_OK;
  int64_t xs[OP_MAX_RANK + 1], ys[OP_MAX_RANK + 1];
  int32_t xn = 0, yn = 0, xr = x->type->rank, yr = y->type->rank;
  if (xr == 1) xs[xn++] = 1;
  for (int32_t i = 0; i < xr; i++) xs[xn++] = x->type->dims[i].size;
  for (int32_t i = 0; i < yr; i++) ys[yn++] = y->type->dims[i].size;
  if (yr == 1) ys[yn++] = 1;
  /* logical (after transpose) sizes: x is M x K, y is K x N */
  int64_t m = tx ? xs[xn - 1] : xs[xn - 2], kx = tx ? xs[xn - 2] : xs[xn - 1];
  int64_t n = ty ? ys[yn - 2] : ys[yn - 1];
  int64_t xrow = xs[xn - 1], yrow = ys[yn - 1]; /* stored row lengths */
  int64_t ob[OP_MAX_RANK + 2];
  int32_t obr = xn - 2 > yn - 2 ? xn - 2 : yn - 2;
  int64_t nb = 1;
  for (int32_t i = 0; i < obr; i++) {
    int32_t a = i - (obr - (xn - 2)), b = i - (obr - (yn - 2));
    int64_t da = a >= 0 ? xs[a] : 1, db = b >= 0 ? ys[b] : 1;
    ob[i] = da == 1 ? db : da;
    nb *= ob[i];
  }
  bool integer = is_int_dtype(out->type->dtype) && is_int_dtype(x->type->dtype) && is_int_dtype(y->type->dtype);
  int64_t xmat = xs[xn - 1] * xs[xn - 2], ymat = ys[yn - 1] * ys[yn - 2];
  for (int64_t bi = 0; bi < nb; bi++) {
    int64_t xo = bcast_offset(bi, ob, obr, xs, xn - 2) * xmat, yo = bcast_offset(bi, ob, obr, ys, yn - 2) * ymat;
    for (int64_t i = 0; i < m; i++)
      for (int64_t j = 0; j < n; j++) {
        double acc = 0;
        int64_t iacc = 0;
        for (int64_t k = 0; k < kx; k++) {
          int64_t xi = xo + (tx ? k * xrow + i : i * xrow + k);
          int64_t yi = yo + (ty ? j * yrow + k : k * yrow + j);
          if (integer) iacc = mac(iacc, mil_value_get_i64(x, xi), mil_value_get_i64(y, yi));
          else acc += mil_value_get_f64(x, xi) * mil_value_get_f64(y, yi);
        }
        store(out, (bi * m + i) * n + j, acc, iacc, integer);
      }
  }
  c->val[0] = out;
  return MIL_OK;
}

static mil_status matmul_defaults(mil_infer_ctx *c) {
  mil_status st = op_add_default_bool(c, "transpose_x", false);
  return st != MIL_OK ? st : op_add_default_bool(c, "transpose_y", false);
}

/* ---------------- einsum ---------------- */

static const mil_type *arg_type(const mil_arg *a) {
  return a->value ? a->value->type : a->use.var ? a->use.var->type : NULL;
}
static const mil_value *arg_val(const mil_arg *a) { return a->value ? a->value : a->use.var ? a->use.var->val : NULL; }

/* Maps the equation's letters to ids in order of first appearance (over
 * x, y, then the output); returns 0 for "nchw,nwhr->nchr"-shaped (rank 4),
 * 1 for "chw,whr->chr"-shaped (rank 3) equations, -1 otherwise. */
static int einsum_pattern(const char *eq) {
  const char *arrow = strstr(eq, "->");
  if (!arrow || strstr(arrow + 2, "->")) return -1;
  int ids[3][8], lens[3] = {0, 0, 0}, part = 0, next = 0;
  int map[256];
  for (int i = 0; i < 256; i++) map[i] = -1;
  for (const char *p = eq; *p; p++) {
    if (p == arrow) {
      if (part != 1) return -1;
      part = 2;
      p++;
      continue;
    }
    if (*p == ',' && p < arrow) {
      if (++part > 1) return -1;
      continue;
    }
    unsigned char ch = (unsigned char)*p;
    if (map[ch] < 0) map[ch] = next++;
    if (lens[part] >= 8) return -1;
    ids[part][lens[part]++] = map[ch];
  }
  if (part != 2) return -1;
  static const int a4[3][5] = {{0, 1, 2, 3}, {0, 3, 2, 4}, {0, 1, 2, 4}};
  static const int a3[3][3] = {{0, 1, 2}, {2, 1, 3}, {0, 1, 3}};
  bool ok4 = lens[0] == 4 && lens[1] == 4 && lens[2] == 4, ok3 = lens[0] == 3 && lens[1] == 3 && lens[2] == 3;
  for (int p = 0; p < 3 && ok4; p++)
    for (int i = 0; i < 4; i++) ok4 &= ids[p][i] == a4[p][i];
  for (int p = 0; p < 3 && ok3; p++)
    for (int i = 0; i < 3; i++) ok3 &= ids[p][i] == a3[p][i];
  return ok4 ? 0 : ok3 ? 1 : -1;
}

static mil_dim bigger_dim(const mil_dim *a, const mil_dim *b) {
  if (a->size < 0) return *a;
  if (b->size < 0) return *b;
  return a->size > b->size ? *a : *b;
}

static mil_status einsum_infer(mil_infer_ctx *c) {
  const mil_input *in = op_input(c, "values");
  if (!in || in->n_args != 2) return op_fail(c, "input 'values' must hold exactly 2 tensors, got %d", in ? in->n_args : 0);
  const mil_type *x = arg_type(&in->args[0]), *y = arg_type(&in->args[1]);
  if (!x || !y || x->kind != MIL_TYPE_TENSOR || y->kind != MIL_TYPE_TENSOR)
    return op_fail(c, "input 'values' must hold two tensors");
  if (x->dtype != y->dtype)
    return op_fail(c, "the two tensors of 'values' must have the same dtype, got %s and %s", op_tstr(c, x), op_tstr(c, y));
  if (x->rank != y->rank)
    return op_fail(c, "the two tensors of 'values' must have the same rank, got %s and %s", op_tstr(c, x), op_tstr(c, y));
  int32_t r = x->rank;
  if (r != 3 && r != 4) return op_fail(c, "the tensors of 'values' must be rank 3 or 4, got %s", op_tstr(c, x));
  const mil_dim *xd = x->dims, *yd = y->dims;
  if (xd[r - 1].size >= 0 && yd[r - 3].size >= 0 && xd[r - 1].size != yd[r - 3].size)
    return op_fail(c, "input shapes %s and %s are incompatible: x[-1] = %lld but y[-3] = %lld", op_tstr(c, x),
                   op_tstr(c, y), (long long)xd[r - 1].size, (long long)yd[r - 3].size);
  if (xd[r - 2].size != 1 && yd[r - 2].size != 1 && !dim_same(&xd[r - 2], &yd[r - 2]))
    return op_fail(c, "input shapes %s and %s are incompatible at axis -2", op_tstr(c, x), op_tstr(c, y));
  if (r == 4 && xd[0].size != 1 && yd[0].size != 1 && !dim_same(&xd[0], &yd[0]))
    return op_fail(c, "input shapes %s and %s are incompatible at axis -4", op_tstr(c, x), op_tstr(c, y));
  const char *eq = op_str(c, "equation", NULL);
  if (!eq) return op_fail(c, "input 'equation' must be a known string");
  if (einsum_pattern(eq) != (r == 4 ? 0 : 1))
    return op_fail(c, "unsupported einsum equation \"%s\" for rank-%d inputs (supported: \"nchw,nwhr->nchr\", "
                      "\"chw,whr->chr\" and their renamings)",
                   eq, r);
  mil_dim d[4];
  for (int32_t i = 0; i < r; i++) d[i] = op_dim(1);
  d[r - 1] = yd[r - 1];
  d[r - 3] = xd[r - 3];
  d[r - 2] = bigger_dim(&xd[r - 2], &yd[r - 2]);
  if (r == 4) d[0] = bigger_dim(&xd[0], &yd[0]);
  op_set_out(c, 0, op_tensor(c, x->dtype, r, d));
  return MIL_OK;
}

static mil_status einsum_fold(mil_infer_ctx *c) {
  const mil_input *in = op_input(c, "values");
  const mil_value *x = arg_val(&in->args[0]), *y = arg_val(&in->args[1]);
  if (!x || !y) return MIL_OK;
  mil_value *out = op_new_out_value(c, 0);
  if (!out) return MIL_OK;
  bool integer = is_int_dtype(out->type->dtype) && is_int_dtype(x->type->dtype) && is_int_dtype(y->type->dtype);
  int64_t xs[4] = {1, 1, 1, 1}, ys[4] = {1, 1, 1, 1};
  int32_t r = x->type->rank;
  for (int32_t i = 0; i < r; i++) { /* right-aligned into 4 slots */
    xs[4 - r + i] = x->type->dims[i].size;
    ys[4 - r + i] = y->type->dims[i].size;
  }
  if (r == 4) { /* out[a,b,c,e] = sum_d x[a,b,c,d] * y[a,d,c,e] */
    int64_t A = xs[0] > ys[0] ? xs[0] : ys[0], B = xs[1], C = xs[2] > ys[2] ? xs[2] : ys[2], D = xs[3], E = ys[3];
    for (int64_t a = 0; a < A; a++)
      for (int64_t b = 0; b < B; b++)
        for (int64_t cc = 0; cc < C; cc++)
          for (int64_t e = 0; e < E; e++) {
            double acc = 0;
            int64_t iacc = 0;
            for (int64_t dd = 0; dd < D; dd++) {
              int64_t xi = (((xs[0] == 1 ? 0 : a) * B + b) * xs[2] + (xs[2] == 1 ? 0 : cc)) * D + dd;
              int64_t yi = (((ys[0] == 1 ? 0 : a) * D + dd) * ys[2] + (ys[2] == 1 ? 0 : cc)) * E + e;
              if (integer) iacc = mac(iacc, mil_value_get_i64(x, xi), mil_value_get_i64(y, yi));
              else acc += mil_value_get_f64(x, xi) * mil_value_get_f64(y, yi);
            }
            store(out, ((a * B + b) * C + cc) * E + e, acc, iacc, integer);
          }
  } else { /* out[i,j,k] = sum_l x[i,j,l] * y[l,j,k] */
    int64_t I = xs[1], J = xs[2] > ys[2] ? xs[2] : ys[2], L = xs[3], K = ys[3];
    for (int64_t i = 0; i < I; i++)
      for (int64_t j = 0; j < J; j++)
        for (int64_t k = 0; k < K; k++) {
          double acc = 0;
          int64_t iacc = 0;
          for (int64_t l = 0; l < L; l++) {
            int64_t xi = (i * xs[2] + (xs[2] == 1 ? 0 : j)) * L + l;
            int64_t yi = (l * ys[2] + (ys[2] == 1 ? 0 : j)) * K + k;
            if (integer) iacc = mac(iacc, mil_value_get_i64(x, xi), mil_value_get_i64(y, yi));
            else acc += mil_value_get_f64(x, xi) * mil_value_get_f64(y, yi);
          }
          store(out, (i * J + j) * K + k, acc, iacc, integer);
        }
  }
  c->val[0] = out;
  return MIL_OK;
}

/* ---------------- table ---------------- */

#define TN MIL_IK_TENSOR
#define K MIL_IF_CONST
#define O MIL_IF_OPTIONAL
#define FI (MIL_DTS_FLOAT | MIL_DTS_INT32)

static const mil_input_spec k_linear13[] = {
    IN_SPEC("x", TN, FI, "T", 0, NULL),
    IN_SPEC("weight", TN, FI, "T", K, NULL),
    IN_SPEC("bias", TN, FI, "T", K | O, "zeros(weight.shape[0])"),
};
static const mil_input_spec k_linear17[] = {
    IN_SPEC("x", TN, FI, "T", 0, NULL),
    IN_SPEC("weight", TN, FI, "U", K, NULL),
    IN_SPEC("bias", TN, FI, "U", K | O, "zeros(weight.shape[0])"),
};
static const mil_input_spec k_matmul13[] = {
    IN_SPEC("x", TN, FI, "T", 0, NULL),
    IN_SPEC("y", TN, FI, "T", 0, NULL),
    IN_SPEC("transpose_x", TN, MIL_DTS_BOOL, NULL, K | O, "False"),
    IN_SPEC("transpose_y", TN, MIL_DTS_BOOL, NULL, K | O, "False"),
};
static const mil_input_spec k_matmul17[] = {
    IN_SPEC("x", TN, FI, "T", 0, NULL),
    IN_SPEC("y", TN, FI, "U", 0, NULL),
    IN_SPEC("transpose_x", TN, MIL_DTS_BOOL, NULL, K | O, "False"),
    IN_SPEC("transpose_y", TN, MIL_DTS_BOOL, NULL, K | O, "False"),
};
static const mil_input_spec k_einsum[] = {
    IN_SPEC("values", MIL_IK_TUPLE | MIL_IK_TENSOR, MIL_DTS_ANY, NULL, 0, NULL),
    IN_SPEC("equation", TN, MIL_DTS_STRING, NULL, K, NULL),
};

#define N_IN(a) (int32_t)(sizeof a / sizeof a[0])

const mil_op_def op_defs_linear[] = {
    {"einsum", MIL_IOS13, "linear", k_einsum, N_IN(k_einsum), 1, einsum_infer, einsum_fold, NULL,
     "einsum of two rank-3 or rank-4 tensors for the equations \"nchw,nwhr->nchr\" and \"chw,whr->chr\""},
    {"linear", MIL_IOS13, "linear", k_linear13, N_IN(k_linear13), 1, linear_infer, linear_fold, linear_defaults,
     "x @ weight^T + bias over the last axis of x"},
    {"linear", MIL_IOS17, "linear", k_linear17, N_IN(k_linear17), 1, linear_infer, linear_fold, linear_defaults,
     "x @ weight^T + bias; weight and bias may have another dtype than x"},
    {"matmul", MIL_IOS13, "linear", k_matmul13, N_IN(k_matmul13), 1, matmul_infer, matmul_fold, matmul_defaults,
     "batched matrix product with numpy broadcasting and optional transposes of the last two axes"},
    {"matmul", MIL_IOS17, "linear", k_matmul17, N_IN(k_matmul17), 1, matmul_infer, matmul_fold, matmul_defaults,
     "batched matrix product; x and y may differ in dtype when exactly one is const (output takes the other's)"},
};
OP_FAMILY_COUNT(linear);
