/* reshape (iOS15, iOS17) and reshape_like (iOS16, iOS17) of the
 * tensor_transformation family. Mirrors coremltools
 * ops/defs/iOS15/tensor_transformation.py (reshape: _get_type_val,
 * replace_zeros_in_shape, replace_neg_one_in_shape,
 * enforce_volumetric_constraint), iOS16/iOS17 tensor_transformation.py.
 *
 * The symbolic solver: when x's shape or the target shape holds symbols,
 * coremltools asks sympy to solve volume(x) == volume(target) for each
 * symbol of the target. Volumes here are monomials (coefficient times a
 * product of symbols), which is all reshape ever builds; a solution that is
 * a single symbol keeps its name, a constant becomes a size, and any other
 * expression becomes a fresh symbol. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "ops/tensor_transformation_internal.h"

#define VOL_MAX (TOP_RANK * 2)

typedef struct vsym {
  const char *name; /* named symbol, or NULL */
  int id;           /* anonymous symbols: unique id */
  int exp;
} vsym;

typedef struct vol {
  double coeff;
  int n;
  vsym t[VOL_MAX];
} vol;

static bool vsym_eq(const vsym *a, const vsym *b) {
  if (a->name || b->name) return a->name && b->name && strcmp(a->name, b->name) == 0;
  return a->id == b->id;
}

static void vol_mul_sym(vol *v, const vsym *s, int exp) {
  for (int i = 0; i < v->n; i++)
    if (vsym_eq(&v->t[i], s)) {
      v->t[i].exp += exp;
      return;
    }
  if (v->n < VOL_MAX) {
    v->t[v->n] = *s;
    v->t[v->n++].exp = exp;
  }
}

/* One target entry: a known size, or a symbol. */
typedef struct tgt {
  bool known;
  int64_t size;
  vsym s;
} tgt;

/* enforce_volumetric_constraint: resolves symbols of the target shape. */
static void solve_volume(const vol *left, tgt *shape, int n) {
  vol right = {1, 0, {{0}}};
  for (int i = 0; i < n; i++) {
    if (shape[i].known) right.coeff *= (double)shape[i].size;
    else vol_mul_sym(&right, &shape[i].s, 1);
  }
  bool right_sym = false;
  for (int i = 0; i < right.n; i++) right_sym |= right.t[i].exp != 0;
  if (!right_sym) return;
  tgt orig[TOP_RANK];
  memcpy(orig, shape, (size_t)n * sizeof *shape);
  for (int i = 0; i < n; i++) {
    if (orig[i].known) continue;
    const vsym *t = &orig[i].s;
    int et = 0;
    for (int k = 0; k < right.n; k++)
      if (vsym_eq(&right.t[k], t)) et = right.t[k].exp;
    if (et != 1 || right.coeff == 0) continue;
    /* solution = left / (right / t) */
    vol sol = *left;
    sol.coeff = left->coeff / right.coeff;
    bool free_ok = true;
    for (int k = 0; k < right.n; k++) {
      if (vsym_eq(&right.t[k], t)) continue;
      bool in_left = false;
      for (int j = 0; j < left->n; j++) in_left |= vsym_eq(&left->t[j], &right.t[k]) && left->t[j].exp != 0;
      if (!in_left) free_ok = false;
      vol_mul_sym(&sol, &right.t[k], -right.t[k].exp);
    }
    if (!free_ok || sol.coeff == 0) continue;
    int nsym = 0, last = -1;
    for (int k = 0; k < sol.n; k++)
      if (sol.t[k].exp != 0) nsym++, last = k;
    for (int j = 0; j < n; j++) {
      if (shape[j].known || !vsym_eq(&shape[j].s, t)) continue;
      if (nsym == 0 && isfinite(sol.coeff) && fabs(sol.coeff) < 4e18) {
        shape[j].known = true;
        shape[j].size = (int64_t)trunc(sol.coeff);
      } else if (nsym == 1 && sol.t[last].exp == 1 && sol.coeff == 1) {
        shape[j].s = sol.t[last];
        shape[j].s.exp = 1;
      } else {
        shape[j].s.name = NULL; /* an expression: a fresh symbol */
        shape[j].s.id = -1000 - j;
      }
    }
  }
}

static bool is_ios17(const mil_infer_ctx *c) { return c->opset >= MIL_IOS17; }

/* Declared output dims when the target shape is symbolic but its elements
 * are not recorded in the IR (a '^' var of an unknown producer). */
static bool declared_fallback(mil_infer_ctx *c, const mil_type *x, int64_t n) {
  const mil_type *d = c->op->n_outputs > 0 ? c->op->outputs[0]->type : NULL;
  if (!d || d->kind != MIL_TYPE_TENSOR || d->rank != n || d->dtype != x->dtype) return false;
  mil_dim dims[TOP_RANK];
  for (int64_t i = 0; i < n; i++) dims[i] = d->dims[i].size >= 0 ? d->dims[i] : op_dim_sym(c);
  op_set_out(c, 0, op_tensor(c, x->dtype, (int32_t)n, dims));
  return true;
}

static mil_status fresh_dims(mil_infer_ctx *c, mil_dtype dt, int64_t n) {
  mil_dim dims[TOP_RANK];
  for (int64_t i = 0; i < n; i++) dims[i] = op_dim_sym(c);
  op_set_out(c, 0, op_tensor(c, dt, (int32_t)n, dims));
  return MIL_OK;
}

static void fmt_ints(char *buf, size_t cap, const int64_t *v, int n) {
  size_t l = (size_t)snprintf(buf, cap, "[");
  for (int i = 0; i < n && l < cap; i++) l += (size_t)snprintf(buf + l, cap - l, "%s%lld", i ? ", " : "", (long long)v[i]);
  if (l < cap) snprintf(buf + l, cap - l, "]");
}

static mil_status reshape_static(mil_infer_ctx *c, const mil_type *x, const int64_t *target, int n) {
  int64_t from[TOP_RANK], to[TOP_RANK];
  int32_t xr = x->rank;
  for (int32_t i = 0; i < xr; i++) from[i] = x->dims[i].size;
  memcpy(to, target, (size_t)n * sizeof *to);
  bool has0 = false;
  for (int i = 0; i < n; i++) has0 |= to[i] == 0;
  if (has0) {
    if (is_ios17(c)) {
      for (int i = 0; i < n; i++)
        if (to[i] == 0) {
          int ri = n - 1 - i;
          to[i] = ri < xr ? from[xr - 1 - ri] : 1;
        }
    } else {
      if (xr != n)
        return op_fail(c,
                       "When there is 0 in shape, the rank of x (%d) must equal to the target shape len (%d).", xr, n);
      for (int i = 0; i < n; i++)
        if (to[i] == 0) to[i] = from[i];
    }
  }
  int64_t total = op_numel(xr, from), rest = 1;
  int neg = -1;
  bool overflow = false;
  for (int i = 0; i < n; i++) {
    if (to[i] == -1 && neg < 0) neg = i;
    else overflow |= __builtin_mul_overflow(rest, to[i], &rest);
  }
  if (neg >= 0 && !overflow) to[neg] = rest ? (int64_t)floor((double)total / (double)rest) : 0;
  int64_t prod = 1;
  for (int i = 0; i < n; i++) overflow |= __builtin_mul_overflow(prod, to[i], &prod);
  if (overflow || prod != total) {
    char a[256], b[256];
    fmt_ints(a, sizeof a, from, xr);
    fmt_ints(b, sizeof b, target, n);
    return op_fail(c, "Invalid target shape in `reshape` op (%s to %s).", a, b);
  }
  mil_dim dims[TOP_RANK];
  for (int i = 0; i < n; i++) dims[i] = op_dim(to[i]);
  op_set_out(c, 0, op_tensor(c, x->dtype, n, dims));
  return MIL_OK;
}

mil_status tt_infer_reshape(mil_infer_ctx *c) {
  const mil_type *x = op_type(c, "x"), *st = op_type(c, "shape");
  if (x->rank > TOP_RANK) return op_fail(c, "input 'x' has rank %d, larger than supported (%d)", x->rank, TOP_RANK);
  if (st->rank != 1) return op_fail(c, "input 'shape' must be rank 1, got %s", op_tstr(c, st));
  if (st->dims[0].size < 0) {
    op_set_out(c, 0, op_tensor_variadic(c, x->dtype)); /* variable length: unknown rank, a variadic symbol */
    return MIL_OK;
  }
  int64_t n = st->dims[0].size;
  if (n > TOP_RANK) return op_fail(c, "input 'shape' has %lld elements, more than supported (%d)", (long long)n, TOP_RANK);
  op_symval *sv = op_tmp_alloc(c, sizeof *sv);
  if (!sv) return MIL_ERR_NOMEM;
  mil_status rc = MIL_OK;
  if (!op_in_symval(c, "shape", 0, sv) || sv->n != n) {
    rc = fresh_dims(c, x->dtype, n);
    goto out;
  }
  if (sv->opaque && declared_fallback(c, x, n)) goto out;
  int neg = 0;
  for (int64_t i = 0; i < n; i++) neg += sv->e[i].kind == OP_SYM_KNOWN && sv->e[i].x == -1;
  if (neg > 1) {
    rc = op_fail(c, "Reshape op supports only one dimension to be -1, but got %d dimensions be -1.", neg);
    goto out;
  }
  bool x_static = x->rank >= 0, shape_known = !op_symval_has_sym(sv);
  for (int32_t i = 0; x_static && i < x->rank; i++) x_static = x->dims[i].size >= 0;
  if (x_static && shape_known) {
    int64_t target[TOP_RANK];
    for (int64_t i = 0; i < n; i++) target[i] = op_sym_i64(sv->e[i].x);
    rc = reshape_static(c, x, target, (int)n);
    goto out;
  }
  /* dynamic: -1 becomes a new symbol, then solve the volume constraint */
  tgt shape[TOP_RANK];
  int anon_id = 1;
  for (int64_t i = 0; i < n; i++) {
    const op_sym *e = &sv->e[i];
    if (e->kind == OP_SYM_KNOWN && e->x != -1) shape[i] = (tgt){true, op_sym_i64(e->x), {NULL, 0, 1}};
    else if (e->kind == OP_SYM_NAMED) shape[i] = (tgt){false, 0, {e->sym, 0, 1}};
    else shape[i] = (tgt){false, 0, {NULL, anon_id++, 1}};
  }
  if (x->rank >= 0) {
    vol left = {1, 0, {{0}}};
    for (int32_t i = 0; i < x->rank; i++) {
      const mil_dim *d = &x->dims[i];
      if (d->size >= 0) left.coeff *= (double)d->size;
      else {
        vsym s = {d->sym, d->sym ? 0 : anon_id++, 1};
        vol_mul_sym(&left, &s, 1);
      }
    }
    solve_volume(&left, shape, (int)n);
  }
  mil_dim dims[TOP_RANK];
  for (int64_t i = 0; i < n; i++) {
    if (shape[i].known) dims[i] = op_dim(shape[i].size);
    else if (shape[i].s.name) dims[i] = (mil_dim){-1, shape[i].s.name, false};
    else dims[i] = op_dim_sym(c);
  }
  op_set_out(c, 0, op_tensor(c, x->dtype, (int32_t)n, dims));
out:
  op_tmp_free(c, sv, sizeof *sv);
  return rc;
}

mil_status tt_fold_reshape(mil_infer_ctx *c) {
  if (op_val(c, "x")) return tt_fold_same_elems(c);
  return op_fold_symbolic(c);
}

/* ---- reshape_like ---- */

static mil_status check_scalar_tuple(mil_infer_ctx *c, const char *name, mil_dtype dt) {
  const mil_input *in = op_input(c, name);
  for (int32_t i = 0; in && i < in->n_args; i++) {
    const mil_arg *a = &in->args[i];
    const mil_type *t = a->value ? a->value->type : a->use.var->type;
    if (t->kind != MIL_TYPE_TENSOR || t->dtype != dt || t->rank != 0)
      return op_fail(c, "In op reshape_like %s, %s must be a Tuple of scalar %s. Got a %s.", c->op->name, name,
                     mil_dtype_name(dt), op_tstr(c, t));
  }
  return MIL_OK;
}

static bool tuple_int(const mil_input *in, int32_t i, int64_t *out) {
  const mil_arg *a = &in->args[i];
  const mil_value *v = a->value ? a->value : a->use.var ? a->use.var->val : NULL;
  if (!v || v->kind != MIL_VAL_TENSOR || v->numel < 1) return false;
  *out = mil_value_get_i64(v, 0);
  return true;
}

mil_status tt_infer_reshape_like(mil_infer_ctx *c) {
  const mil_type *x = op_type(c, "x");
  const mil_input *refs = op_input(c, "ref_tensors"), *bs = op_input(c, "begins"), *es = op_input(c, "ends"),
                  *ms = op_input(c, "end_masks");
  mil_status st;
  if ((st = check_scalar_tuple(c, "begins", MIL_DT_INT32)) || (st = check_scalar_tuple(c, "ends", MIL_DT_INT32)) ||
      (st = check_scalar_tuple(c, "end_masks", MIL_DT_BOOL)))
    return st;
  int32_t nref = refs ? refs->n_args : 0;
  if (!bs || !es || !ms || bs->n_args < nref || es->n_args < nref || ms->n_args < nref)
    return op_fail(c, "ref_tensors, begins, ends and end_masks must have the same length, got %d, %d, %d and %d", nref,
                   bs ? bs->n_args : 0, es ? es->n_args : 0, ms ? ms->n_args : 0);
  mil_dim dims[TOP_RANK];
  int32_t r = 0;
  for (int32_t i = 0; i < nref; i++) {
    const mil_arg *a = &refs->args[i];
    const mil_type *t = a->value ? a->value->type : a->use.var->type;
    int64_t b, e, m;
    if (!tuple_int(bs, i, &b) || !tuple_int(es, i, &e) || !tuple_int(ms, i, &m))
      return op_fail(c, "begins, ends and end_masks of reshape_like must be known constants (entry %d)", i);
    if (t->kind != MIL_TYPE_TENSOR || t->rank < 0)
      return op_fail(c, "ref_tensors[%d] must be a tensor of known rank, got %s", i, op_tstr(c, t));
    int64_t start, len;
    op_py_slice(t->rank, true, b, !m, e, 1, &start, &len);
    for (int64_t k = 0; k < len; k++) {
      if (r >= TOP_RANK) return op_fail(c, "output rank is larger than supported (%d)", TOP_RANK);
      dims[r++] = t->dims[start + k];
    }
  }
  int64_t out_n = 1;
  for (int32_t i = 0; i < r; i++) {
    if (dims[i].size < 0) {
      mil_type tmp = {.kind = MIL_TYPE_TENSOR, .dtype = x->dtype, .rank = r, .dims = dims};
      return op_fail(c, "Output shape of a reshape_like op %s must not be symbolic. Got %s", c->op->name,
                     op_tstr(c, &tmp));
    }
    out_n *= dims[i].size;
  }
  int64_t xn = mil_type_numel(x);
  if (xn >= 0 && xn != out_n) {
    const mil_type *ot = op_tensor(c, x->dtype, r, dims);
    return op_fail(c, "At reshape_like op %s, input shape %s not consistent with the output shape %s.", c->op->name,
                   op_tstr(c, x), op_tstr(c, ot));
  }
  op_set_out(c, 0, op_tensor(c, x->dtype, r, dims));
  return MIL_OK;
}
