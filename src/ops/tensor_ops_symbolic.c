/* Symbolic values (coremltools' Var.sym_val) recomputed from the IR.
 *
 * coremltools keeps, next to each var's type, a "sym_val": the value of a
 * small tensor whose elements may be shape symbols (shape(x) of an input
 * (is0, 3) is [is0, 3]). Ops whose value_inference accepts symbolic inputs
 * (precondition allow=SYMBOL: cast, concat, gather, identity, reshape, split,
 * stack, slice_by_index, ...) propagate it; reshape, fill, tile, pad, split
 * and slice_by_size read it to infer shapes. libmil's IR stores only known
 * values and the '^' marker, so this file rebuilds a symbolic value by
 * walking back through the producers of a var, bounded in depth and in total
 * work (no blow-up on hostile graphs). Known elements are stored as doubles
 * (exact for every int32 and float value). */
#include <math.h>
#include <string.h>

#include "ops/tensor_ops_internal.h"

#define SYM_MAX_DEPTH 32
#define SYM_BUDGET 4096

typedef struct sym_eval {
  mil_infer_ctx *c;
  int budget;
} sym_eval;

static bool sv_of_var(sym_eval *E, const mil_var *v, op_symval *out, int depth);
static bool sv_eval_op(sym_eval *E, const mil_op *op, int oi, op_symval *out, int depth);

static bool sv_from_value(const mil_value *v, op_symval *out) {
  if (!v || v->kind != MIL_VAL_TENSOR || v->numel > OP_SYMV_MAX || !op_foldable_dtype(v->type->dtype)) return false;
  if (v->type->rank < 0 || v->type->rank > TOP_RANK) return false;
  out->dtype = v->type->dtype;
  out->scalar = v->type->is_scalar;
  out->opaque = false;
  if (!op_value_shape(v, out->shape, &out->rank)) return false;
  out->n = v->numel;
  for (int64_t i = 0; i < v->numel; i++) out->e[i] = (op_sym){mil_value_get_f64(v, i), NULL, OP_SYM_KNOWN};
  return true;
}

static const mil_type *arg_type(const mil_arg *a) {
  return a->value ? a->value->type : a->use.var ? a->use.var->type : NULL;
}

static bool sv_of_arg(sym_eval *E, const mil_arg *a, op_symval *out, int depth) {
  if (a->value) return sv_from_value(a->value, out);
  return a->use.var && sv_of_var(E, a->use.var, out, depth);
}

static const mil_input *find_in(const mil_op *op, const char *name) { return mil_op_find_input(op, name); }

static bool sv_of_input(sym_eval *E, const mil_op *op, const char *name, op_symval *out, int depth) {
  const mil_input *in = find_in(op, name);
  return in && in->n_args > 0 && sv_of_arg(E, &in->args[0], out, depth);
}

static const mil_type *in_type(const mil_op *op, const char *name) {
  const mil_input *in = find_in(op, name);
  return in && in->n_args > 0 ? arg_type(&in->args[0]) : NULL;
}

/* Known value (literal or var value) of a producer's input. */
static const mil_value *in_value(const mil_op *op, const char *name) {
  const mil_input *in = find_in(op, name);
  if (!in || in->n_args == 0) return NULL;
  if (in->args[0].value) return in->args[0].value;
  return in->args[0].use.var ? in->args[0].use.var->val : NULL;
}

static bool all_known(const op_symval *sv) {
  for (int64_t i = 0; i < sv->n; i++)
    if (sv->e[i].kind != OP_SYM_KNOWN) return false;
  return true;
}

/* Known integer vector input of a producer; count or -1. */
static int in_ints(sym_eval *E, const mil_op *op, const char *name, int64_t *out, int max, int depth) {
  op_symval *sv = op_tmp_alloc(E->c, sizeof *sv);
  if (!sv) return -1;
  int n = -1;
  if (sv_of_input(E, op, name, sv, depth) && all_known(sv) && sv->n <= max) {
    n = (int)sv->n;
    for (int i = 0; i < n; i++) out[i] = op_sym_i64(sv->e[i].x);
  }
  op_tmp_free(E->c, sv, sizeof *sv);
  return n;
}

static bool in_int(sym_eval *E, const mil_op *op, const char *name, int64_t dflt, int64_t *out, int depth) {
  if (!find_in(op, name)) {
    *out = dflt;
    return true;
  }
  int64_t v[1];
  if (in_ints(E, op, name, v, 1, depth) != 1) return false;
  *out = v[0];
  return true;
}

static void set_shape(op_symval *sv, mil_dtype dt, int32_t rank, const int64_t *shape, bool scalar) {
  sv->dtype = dt;
  sv->rank = rank;
  sv->scalar = scalar && rank == 0;
  sv->opaque = false;
  for (int32_t i = 0; i < rank; i++) sv->shape[i] = shape[i];
  sv->n = op_numel(rank, shape);
}

static op_sym anon(void) { return (op_sym){0, NULL, OP_SYM_ANON}; }

/* Applies an index map to a symbolic value (out[k] = in[map[k]]). */
static void sv_apply_map(const op_symval *in, const int64_t *map, op_symval *out) {
  for (int64_t k = 0; k < out->n; k++) out->e[k] = in->e[map[k]];
}

/* ---- per-op symbolic evaluation ---- */

static bool ev_shape(sym_eval *E, const mil_op *op, op_symval *out) {
  const mil_type *t = in_type(op, "x");
  if (!t || t->kind != MIL_TYPE_TENSOR || t->rank < 0 || t->rank > OP_SYMV_MAX) return false;
  int64_t r = t->rank;
  set_shape(out, MIL_DT_INT32, 1, &r, false);
  for (int32_t i = 0; i < t->rank; i++) {
    const mil_dim *d = &t->dims[i];
    if (d->size >= 0) out->e[i] = (op_sym){(double)d->size, NULL, OP_SYM_KNOWN};
    else if (d->sym) out->e[i] = (op_sym){0, d->sym, OP_SYM_NAMED};
    else out->e[i] = anon();
  }
  return true;
}

static double cast_elem(double x, mil_dtype to) {
  if (to == MIL_DT_BOOL) return x != 0;
  if (mil_dtype_is_int(to)) {
    double t = trunc(x);
    int bits = mil_dtype_bits(to);
    if (!isfinite(t)) return mil_dtype_is_unsigned(to) ? 0 : -ldexp(1.0, bits - 1); /* numpy: INT_MIN */
    if (bits >= 64) return t;
    double m = ldexp(1.0, bits);
    double r = fmod(t, m);
    if (r < 0) r += m;
    if (!mil_dtype_is_unsigned(to) && r >= m / 2) r -= m;
    return r;
  }
  if (to == MIL_DT_FP32) return (double)(float)x;
  if (to == MIL_DT_FP16) return mil_fp16_to_fp32(mil_fp64_to_fp16(x));
  return x;
}

static bool ev_cast(sym_eval *E, const mil_op *op, op_symval *out, int depth) {
  const mil_value *dv = in_value(op, "dtype");
  mil_dtype to;
  if (!dv || dv->type->dtype != MIL_DT_STRING) return false;
  const char *s = mil_value_get_str(dv, 0);
  if (!mil_dtype_from_name(s, strlen(s), &to)) return false;
  if (!sv_of_input(E, op, "x", out, depth)) return false;
  if (!all_known(out) && out->rank != 1) return false;
  for (int64_t i = 0; i < out->n; i++)
    if (out->e[i].kind == OP_SYM_KNOWN) out->e[i].x = cast_elem(out->e[i].x, to);
  out->dtype = to;
  return true;
}

/* np.concatenate / np.stack of symbolic values along axis. */
static bool sv_concat(op_symval *const *vals, int n, int64_t axis, bool stack, op_symval *out) {
  int32_t r = vals[0]->rank;
  for (int i = 1; i < n; i++)
    if (vals[i]->rank != r) return false;
  int32_t orank = stack ? r + 1 : r;
  if (orank < 1 || orank > TOP_RANK) return false;
  if (axis < 0) axis += orank;
  if (axis < 0 || axis >= orank) return false;
  int64_t oshape[TOP_RANK];
  if (stack) {
    for (int i = 1; i < n; i++)
      for (int32_t d = 0; d < r; d++)
        if (vals[i]->shape[d] != vals[0]->shape[d]) return false;
    for (int32_t d = 0, k = 0; d < orank; d++) oshape[d] = d == axis ? n : vals[0]->shape[k++];
  } else {
    int64_t tot = 0;
    for (int i = 0; i < n; i++) {
      for (int32_t d = 0; d < r; d++)
        if (d != axis && vals[i]->shape[d] != vals[0]->shape[d]) return false;
      tot += vals[i]->shape[axis];
    }
    for (int32_t d = 0; d < r; d++) oshape[d] = d == axis ? tot : vals[0]->shape[d];
  }
  int64_t total = op_numel(orank, oshape);
  if (total < 0 || total > OP_SYMV_MAX) return false;
  /* outer = product of dims before axis; each input contributes chunks */
  int64_t outer = 1;
  for (int32_t d = 0; d < axis; d++) outer *= oshape[d];
  int64_t k = 0;
  for (int64_t o = 0; o < outer; o++)
    for (int i = 0; i < n; i++) {
      int64_t chunk = vals[i]->n / (outer ? outer : 1);
      for (int64_t j = 0; j < chunk; j++) out->e[k++] = vals[i]->e[o * chunk + j];
    }
  mil_dtype dt = vals[0]->dtype;
  set_shape(out, dt, orank, oshape, false);
  return k == total;
}

static bool ev_concat_like(sym_eval *E, const mil_op *op, op_symval *out, int depth, bool is_stack) {
  const mil_input *in = find_in(op, "values");
  int64_t axis;
  if (!in || in->n_args == 0 || in->n_args > OP_SYMV_MAX || !in_int(E, op, "axis", 0, &axis, depth)) return false;
  if (!is_stack) {
    int64_t il = 0;
    if (!in_int(E, op, "interleave", 0, &il, depth) || il) return false;
  }
  int n = in->n_args;
  op_symval **vals = op_tmp_alloc(E->c, (size_t)n * sizeof *vals);
  if (!vals) return false;
  bool ok = true, all_rank0 = true;
  int got = 0;
  for (int i = 0; i < n && ok; i++) {
    vals[i] = op_tmp_alloc(E->c, sizeof **vals);
    if (!vals[i]) {
      ok = false;
      break;
    }
    got++;
    const mil_type *t = arg_type(&in->args[i]);
    if (!t || t->kind != MIL_TYPE_TENSOR) {
      ok = false;
      break;
    }
    if (t->rank != 0) all_rank0 = false;
    if (sv_of_arg(E, &in->args[i], vals[i], depth)) continue;
    int64_t shape[TOP_RANK];
    int32_t rank;
    if (t->rank == 0) {
      set_shape(vals[i], t->dtype, 0, NULL, true);
      vals[i]->e[0] = anon();
    } else if (!is_stack && op_static_shape(t, shape, &rank) && op_numel(rank, shape) <= 10) {
      set_shape(vals[i], t->dtype, rank, shape, false);
      for (int64_t k = 0; k < vals[i]->n; k++) vals[i]->e[k] = anon();
    } else {
      ok = false;
    }
  }
  if (ok && is_stack) {
    bool any_sym = false;
    for (int i = 0; i < n; i++) any_sym |= !all_known(vals[i]);
    if (any_sym && !all_rank0) ok = false;
  }
  if (ok) ok = sv_concat(vals, n, axis, is_stack || vals[0]->rank == 0, out);
  for (int i = 0; i < got; i++) op_tmp_free(E->c, vals[i], sizeof **vals);
  op_tmp_free(E->c, vals, (size_t)n * sizeof *vals);
  return ok;
}

static bool ev_gather(sym_eval *E, const mil_op *op, op_symval *out, int depth) {
  op_symval *x = op_tmp_alloc(E->c, sizeof *x), *ind = op_tmp_alloc(E->c, sizeof *ind);
  bool ok = false;
  int64_t axis, bd;
  if (x && ind && sv_of_input(E, op, "x", x, depth) && sv_of_input(E, op, "indices", ind, depth) && all_known(ind) &&
      in_int(E, op, "axis", 0, &axis, depth) && in_int(E, op, "batch_dims", 0, &bd, depth)) {
    int64_t iv[OP_SYMV_MAX], map[OP_SYMV_MAX], oshape[TOP_RANK];
    int32_t orank;
    for (int64_t i = 0; i < ind->n; i++) iv[i] = (int64_t)ind->e[i].x;
    if (op_map_gather(x->rank, x->shape, ind->rank, ind->shape, iv, axis, bd, NULL, &orank, oshape) &&
        op_numel(orank, oshape) <= OP_SYMV_MAX &&
        op_map_gather(x->rank, x->shape, ind->rank, ind->shape, iv, axis, bd, map, &orank, oshape)) {
      set_shape(out, x->dtype, orank, oshape, orank == 0);
      sv_apply_map(x, map, out);
      ok = true;
    }
  }
  op_tmp_free(E->c, x, sizeof *x);
  op_tmp_free(E->c, ind, sizeof *ind);
  return ok;
}

static bool ev_slice_by_index(sym_eval *E, const mil_op *op, op_symval *out, int depth) {
  op_symval *x = op_tmp_alloc(E->c, sizeof *x);
  bool ok = false;
  if (x && sv_of_input(E, op, "x", x, depth)) {
    int64_t b[TOP_RANK], e[TOP_RANK], st[TOP_RANK], tmp[TOP_RANK];
    bool bm[TOP_RANK] = {0}, em[TOP_RANK] = {0}, sm[TOP_RANK] = {0};
    int32_t r = x->rank;
    for (int32_t i = 0; i < r; i++) st[i] = 1;
    ok = r >= 1 && in_ints(E, op, "begin", b, TOP_RANK, depth) == r && in_ints(E, op, "end", e, TOP_RANK, depth) == r;
    if (ok && find_in(op, "stride")) ok = in_ints(E, op, "stride", st, TOP_RANK, depth) == r;
    const char *mn[3] = {"begin_mask", "end_mask", "squeeze_mask"};
    bool *mv[3] = {bm, em, sm};
    for (int m = 0; m < 3 && ok; m++)
      if (find_in(op, mn[m])) {
        ok = in_ints(E, op, mn[m], tmp, TOP_RANK, depth) == r;
        for (int32_t i = 0; ok && i < r; i++) mv[m][i] = tmp[i] != 0;
      }
    if (ok) {
      int64_t start[TOP_RANK], step[TOP_RANK], len[TOP_RANK], map[OP_SYMV_MAX], oshape[TOP_RANK];
      int32_t orank = 0;
      for (int32_t i = 0; i < r && ok; i++) {
        if (st[i] == 0) ok = false;
        step[i] = sm[i] ? INT32_MAX : st[i];
        op_py_slice(x->shape[i], !bm[i], b[i], !(em[i] || sm[i]), e[i], step[i], &start[i], &len[i]);
        if (sm[i] && len[i] != 1) ok = false;
        if (!sm[i]) oshape[orank++] = len[i];
      }
      if (ok) {
        op_map_slice(r, x->shape, start, step, len, map);
        set_shape(out, x->dtype, orank, oshape, orank == 0);
        sv_apply_map(x, map, out);
        /* coremltools converts a fully squeezed known element to int32 /
         * fp32 only; other dtypes raise */
        if (orank == 0 && out->e[0].kind == OP_SYM_KNOWN && x->dtype != MIL_DT_INT32 && x->dtype != MIL_DT_INT64 &&
            x->dtype != MIL_DT_FP32 && x->dtype != MIL_DT_FP64)
          ok = false;
      }
    }
  }
  op_tmp_free(E->c, x, sizeof *x);
  return ok;
}

static bool ev_reshape(sym_eval *E, const mil_op *op, op_symval *out, int depth, bool flatten) {
  if (!sv_of_input(E, op, "x", out, depth)) return false;
  int64_t shape[TOP_RANK];
  int n;
  if (flatten) {
    int64_t axis;
    if (!all_known(out) || !in_int(E, op, "axis", 1, &axis, depth)) return false;
    if (axis < 0) axis += out->rank;
    if (axis < 0 || axis > out->rank) return false;
    shape[0] = op_numel((int32_t)axis, out->shape);
    shape[1] = op_numel(out->rank - (int32_t)axis, out->shape + axis);
    n = 2;
  } else {
    n = in_ints(E, op, "shape", shape, TOP_RANK, depth);
    if (n < 0) return false;
    bool ios17 = false;
    const mil_block *b = op->block;
    while (b && !b->func && b->parent) b = b->parent->block;
    if (b && b->func && mil_opset_version(b->func->opset) >= MIL_IOS17) ios17 = true;
    int neg = -1;
    for (int i = 0; i < n; i++) {
      if (shape[i] == 0) {
        if (ios17) {
          int ri = n - 1 - i;
          shape[i] = ri < out->rank ? out->shape[out->rank - 1 - ri] : 1;
        } else {
          if (n != out->rank) return false;
          shape[i] = out->shape[i];
        }
      }
    }
    int64_t rest = 1;
    for (int i = 0; i < n; i++) {
      if (shape[i] == -1) {
        if (neg >= 0) return false;
        neg = i;
      } else {
        if (shape[i] < 0) return false;
        rest *= shape[i];
      }
    }
    if (neg >= 0) shape[neg] = rest ? out->n / rest : 0;
  }
  if (op_numel(n, shape) != out->n) return false;
  out->rank = n;
  out->scalar = false;
  for (int i = 0; i < n; i++) out->shape[i] = shape[i];
  return true;
}

static bool ev_squeeze_expand(sym_eval *E, const mil_op *op, op_symval *out, int depth, bool squeeze) {
  if (!sv_of_input(E, op, "x", out, depth) || !all_known(out)) return false;
  int64_t axes[TOP_RANK];
  int na = find_in(op, "axes") ? in_ints(E, op, "axes", axes, TOP_RANK, depth) : -2;
  if (na == -1) return false;
  int64_t shape[TOP_RANK];
  int32_t r = 0;
  if (squeeze) {
    bool drop[TOP_RANK] = {0};
    for (int32_t i = 0; i < out->rank; i++) drop[i] = na == -2 && out->shape[i] == 1;
    for (int i = 0; i < na; i++) {
      int64_t a = axes[i] < 0 ? axes[i] + out->rank : axes[i];
      if (a < 0 || a >= out->rank) return false;
      drop[a] = out->shape[a] == 1;
    }
    for (int32_t i = 0; i < out->rank; i++)
      if (!drop[i]) shape[r++] = out->shape[i];
  } else {
    if (na < 0) return false;
    int32_t orank = out->rank + na;
    if (orank > TOP_RANK) return false;
    bool ins[TOP_RANK] = {0};
    for (int i = 0; i < na; i++) {
      int64_t a = axes[i] < 0 ? axes[i] + orank : axes[i];
      if (a < 0 || a >= orank) return false;
      ins[a] = true;
    }
    for (int32_t i = 0, k = 0; i < orank; i++) shape[r++] = ins[i] ? 1 : out->shape[k++];
  }
  out->rank = r;
  out->scalar = r == 0;
  for (int32_t i = 0; i < r; i++) out->shape[i] = shape[i];
  return true;
}

static bool ev_split(sym_eval *E, const mil_op *op, int oi, op_symval *out, int depth) {
  op_symval *x = op_tmp_alloc(E->c, sizeof *x);
  bool ok = false;
  int64_t axis, sizes[OP_SYMV_MAX];
  if (x && sv_of_input(E, op, "x", x, depth) && in_int(E, op, "axis", 0, &axis, depth)) {
    if (axis < 0) axis += x->rank;
    int ns = -1;
    if (axis >= 0 && axis < x->rank) {
      if (find_in(op, "split_sizes")) ns = in_ints(E, op, "split_sizes", sizes, OP_SYMV_MAX, depth);
      else {
        int64_t k;
        if (in_int(E, op, "num_splits", 0, &k, depth) && k > 0 && k <= OP_SYMV_MAX && x->shape[axis] % k == 0) {
          ns = (int)k;
          for (int i = 0; i < ns; i++) sizes[i] = x->shape[axis] / k;
        }
      }
    }
    if (ns > oi) {
      int64_t start[TOP_RANK], step[TOP_RANK], len[TOP_RANK], map[OP_SYMV_MAX];
      int64_t off = 0;
      for (int i = 0; i < oi; i++) off += sizes[i];
      for (int32_t d = 0; d < x->rank; d++) {
        start[d] = d == axis ? off : 0;
        step[d] = 1;
        len[d] = d == axis ? sizes[oi] : x->shape[d];
      }
      if (off + sizes[oi] <= x->shape[axis] && sizes[oi] >= 0) {
        op_map_slice(x->rank, x->shape, start, step, len, map);
        set_shape(out, x->dtype, x->rank, len, false);
        sv_apply_map(x, map, out);
        ok = true;
      }
    }
  }
  op_tmp_free(E->c, x, sizeof *x);
  return ok;
}

/* Numeric elementwise binary ops on fully known small values (so that
 * shape arithmetic in an unfolded const subgraph is still seen). */
enum { BIN_ADD, BIN_SUB, BIN_MUL, BIN_MAX, BIN_MIN, BIN_FLOOR_DIV };

static bool ev_binary(sym_eval *E, const mil_op *op, int kind, op_symval *out, int depth) {
  op_symval *y = op_tmp_alloc(E->c, sizeof *y);
  bool ok = false;
  if (y && sv_of_input(E, op, "x", out, depth) && sv_of_input(E, op, "y", y, depth) && all_known(out) &&
      all_known(y) && out->dtype == y->dtype) {
    const op_symval *big = out->n >= y->n ? out : y;
    bool xs = out->n == 1 && out->rank <= big->rank, ys = y->n == 1 && y->rank <= big->rank;
    bool same = out->rank == y->rank && out->n == y->n;
    for (int32_t d = 0; same && d < out->rank; d++) same = out->shape[d] == y->shape[d];
    if (same || xs || ys) {
      op_symval *res = op_tmp_alloc(E->c, sizeof *res);
      if (res) {
        set_shape(res, out->dtype, big->rank, big->shape, out->scalar && y->scalar);
        ok = true;
        for (int64_t k = 0; k < res->n && ok; k++) {
          double a = out->e[out->n == 1 ? 0 : k].x, b = y->e[y->n == 1 ? 0 : k].x, r;
          if (kind == BIN_ADD) r = a + b;
          else if (kind == BIN_SUB) r = a - b;
          else if (kind == BIN_MUL) r = a * b;
          else if (kind == BIN_MAX) r = a > b ? a : b;
          else if (kind == BIN_MIN) r = a < b ? a : b;
          else {
            if (b == 0) {
              ok = false;
              break;
            }
            r = floor(a / b);
          }
          res->e[k] = (op_sym){cast_elem(r, out->dtype), NULL, OP_SYM_KNOWN};
        }
        if (ok) *out = *res;
        op_tmp_free(E->c, res, sizeof *res);
      }
    }
  }
  op_tmp_free(E->c, y, sizeof *y);
  return ok;
}

static bool sv_eval_op(sym_eval *E, const mil_op *op, int oi, op_symval *out, int depth) {
  if (depth > SYM_MAX_DEPTH || --E->budget < 0) return false;
  depth++;
  const char *t = op->type;
  if (oi != 0) return op_str_eq(t, "split") && ev_split(E, op, oi, out, depth);
  /* by the first character: most producers are none of these */
  switch (t[0]) {
  case 'a':
    if (op_str_eq(t, "add")) return ev_binary(E, op, BIN_ADD, out, depth);
    break;
  case 'c':
    if (op_str_eq(t, "cast")) return ev_cast(E, op, out, depth);
    if (op_str_eq(t, "concat")) return ev_concat_like(E, op, out, depth, false);
    break;
  case 'e':
    if (op_str_eq(t, "expand_dims")) return ev_squeeze_expand(E, op, out, depth, false);
    break;
  case 'f':
    if (op_str_eq(t, "flatten2d")) return ev_reshape(E, op, out, depth, true);
    if (op_str_eq(t, "floor_div")) return ev_binary(E, op, BIN_FLOOR_DIV, out, depth);
    break;
  case 'g':
    if (op_str_eq(t, "gather")) return ev_gather(E, op, out, depth);
    break;
  case 'i':
    if (op_str_eq(t, "identity")) return sv_of_input(E, op, "x", out, depth);
    break;
  case 'm':
    if (op_str_eq(t, "mul")) return ev_binary(E, op, BIN_MUL, out, depth);
    if (op_str_eq(t, "maximum")) return ev_binary(E, op, BIN_MAX, out, depth);
    if (op_str_eq(t, "minimum")) return ev_binary(E, op, BIN_MIN, out, depth);
    break;
  case 'r':
    if (op_str_eq(t, "reshape")) return ev_reshape(E, op, out, depth, false);
    break;
  case 's':
    if (op_str_eq(t, "shape")) return ev_shape(E, op, out);
    if (op_str_eq(t, "stack")) return ev_concat_like(E, op, out, depth, true);
    if (op_str_eq(t, "slice_by_index")) return ev_slice_by_index(E, op, out, depth);
    if (op_str_eq(t, "squeeze")) return ev_squeeze_expand(E, op, out, depth, true);
    if (op_str_eq(t, "split")) return ev_split(E, op, oi, out, depth);
    if (op_str_eq(t, "sub")) return ev_binary(E, op, BIN_SUB, out, depth);
    break;
  default: break;
  }
  return false;
}

static bool sv_of_var(sym_eval *E, const mil_var *v, op_symval *out, int depth) {
  if (v->val) return sv_from_value(v->val, out);
  if (v->op && sv_eval_op(E, v->op, v->out_index, out, depth)) return true;
  if (v->mark == MIL_MARK_SYMBOLIC) {
    int64_t shape[TOP_RANK];
    int32_t rank;
    if (!op_static_shape(v->type, shape, &rank) || op_numel(rank, shape) > OP_SYMV_MAX) return false;
    set_shape(out, v->type->dtype, rank, shape, v->type->is_scalar);
    for (int64_t k = 0; k < out->n; k++) out->e[k] = anon();
    out->opaque = true;
    return true;
  }
  return false;
}

bool op_var_symval(mil_infer_ctx *c, const mil_var *v, op_symval *out) {
  sym_eval E = {c, SYM_BUDGET};
  return v && sv_of_var(&E, v, out, 0);
}

bool op_in_symval(mil_infer_ctx *c, const char *name, int arg, op_symval *out) {
  const mil_input *in = op_input(c, name);
  if (!in || arg >= in->n_args) return false;
  sym_eval E = {c, SYM_BUDGET};
  return sv_of_arg(&E, &in->args[arg], out, 0);
}

bool op_self_symval(mil_infer_ctx *c, int out_index, op_symval *out) {
  sym_eval E = {c, SYM_BUDGET};
  return sv_eval_op(&E, c->op, out_index, out, 0);
}

bool op_symval_has_sym(const op_symval *sv) { return !all_known(sv); }

mil_dim op_sym_dim(mil_infer_ctx *c, const op_sym *s) {
  if (s->kind == OP_SYM_KNOWN) return op_dim(op_sym_i64(s->x));
  if (s->kind == OP_SYM_NAMED) return (mil_dim){-1, s->sym, false};
  return op_dim_sym(c);
}

void op_symval_publish(mil_infer_ctx *c, int i, const op_symval *sv) {
  if (op_symval_has_sym(sv)) {
    c->mark[i] = MIL_MARK_SYMBOLIC;
    return;
  }
  const mil_type *t = c->out[i];
  if (!t || t->kind != MIL_TYPE_TENSOR || !op_foldable_dtype(t->dtype)) return;
  mil_value *v = op_new_value(c, t->dtype, sv->rank, sv->shape, t->is_scalar);
  if (!v) return;
  for (int64_t k = 0; k < sv->n; k++) mil_value_set_f64(v, k, sv->e[k].x);
  op_set_val(c, i, v);
}

mil_status op_fold_symbolic(mil_infer_ctx *c) {
  op_symval *sv = op_tmp_alloc(c, sizeof *sv);
  if (!sv) return MIL_OK;
  for (int32_t i = 0; i < c->n_out; i++)
    if (!c->val[i] && op_self_symval(c, i, sv)) op_symval_publish(c, i, sv);
  op_tmp_free(c, sv, sizeof *sv);
  return MIL_OK;
}
