/* Kernels of the list ops (coremltools ops/defs/iOS15/control_flow.py):
 * make_list, list_write, list_read, list_gather, list_scatter,
 * list_length.
 *
 * A runtime list is a MIL_VAL_LIST value whose items are tensor values
 * (NULL for an element never written) and whose type is
 * List[length, elem]: length -1 for a dynamic list, elem the element type
 * (unknown until the first write when make_list's elem_shape has symbols).
 * Lists are values: a write returns a new list and leaves its input
 * unchanged. Elements never written read as zeros when the element shape
 * is known, else they are an error. A dynamic list grows when written past
 * its end; a fixed-length list refuses it. */
#include <string.h>

#include "interp/interp_internal.h"

static bool list_dtype(const char *s, mil_dtype *dt) {
  if (!mil_dtype_from_name(s, strlen(s), dt)) return false;
  return mil_dtype_size(*dt) > 0;
}

static const mil_value *get_list(mil_infer_ctx *c) {
  const mil_value *v = op_val(c, "ls");
  if (!v || v->kind != MIL_VAL_LIST || !v->type || v->type->kind != MIL_TYPE_LIST) {
    interp_fail(c, MIL_ERR_TYPE, "input 'ls' is not a list at run time");
    return NULL;
  }
  return v;
}

static bool dynamic(const mil_value *ls) { return ls->type->length.size < 0; }

/* A new list value of n items (copied from items, NULL-padded). */
static mil_value *new_list(interp_run *r, const mil_type *elem, bool dyn, int32_t n, const mil_value *const *items,
                           int32_t n_items) {
  const mil_value **it = mil_program_alloc(r->prog, (size_t)(n ? n : 1) * sizeof *it);
  if (!it) return NULL;
  for (int32_t i = 0; i < n && i < n_items; i++) it[i] = items[i];
  mil_dim len = {dyn ? -1 : n, NULL, false};
  const mil_type *t = mil_type_list(r->prog, elem ? elem : mil_type_unknown(r->prog), len);
  return t ? mil_value_new_list(r->prog, t, n, it) : NULL;
}

static mil_status done(mil_infer_ctx *c, const mil_value *v) {
  if (!v) return interp_nomem(c);
  c->val[0] = v;
  c->out[0] = v->type;
  return MIL_OK;
}

static mil_status k_make_list(interp_run *r, mil_infer_ctx *c) {
  const char *ds = op_str(c, "dtype", "fp32");
  mil_dtype dt;
  if (!list_dtype(ds, &dt)) return interp_fail(c, MIL_ERR_TYPE, "input 'dtype' \"%s\" is not a tensor dtype", ds);
  const mil_input *es = op_input(c, "elem_shape");
  int32_t rank = es ? es->n_args : 0;
  if (rank > MIL_INTERP_MAX_RANK) return interp_fail(c, MIL_ERR_UNSUPPORTED, "elem_shape has %d entries", rank);
  int64_t shape[MIL_INTERP_MAX_RANK];
  bool known = true;
  for (int32_t i = 0; i < rank; i++) {
    const mil_arg *a = &es->args[i];
    const mil_value *v = a->value ? a->value : a->use.var ? a->use.var->val : NULL;
    if (!v || v->kind != MIL_VAL_TENSOR || v->numel < 1 || v->type->dtype == MIL_DT_STRING) {
      known = false;
      continue;
    }
    shape[i] = mil_value_get_i64(v, 0);
    if (shape[i] < 0) known = false;
  }
  const mil_type *elem = known ? mil_type_tensor_shape(r->prog, dt, rank, shape) : NULL;
  int64_t n = op_int(c, "init_length", 1);
  if (n < 0 || n > INT32_MAX)
    return interp_fail(c, MIL_ERR_INVALID, "input 'init_length' must be in [0, 2^31), got %lld", (long long)n);
  return done(c, new_list(r, elem, op_bool(c, "dynamic_length", true), (int32_t)n, NULL, 0));
}

static mil_status k_list_length(interp_run *r, mil_infer_ctx *c) {
  const mil_value *ls = get_list(c);
  if (!ls) return MIL_ERR_TYPE;
  return done(c, mil_value_new_scalar_i64(r->prog, MIL_DT_INT32, ls->n));
}

/* Element i of the list (zeros when never written and the shape is known). */
static const mil_value *element(interp_run *r, mil_infer_ctx *c, const mil_value *ls, int64_t i) {
  if (i < 0 || i >= ls->n) {
    interp_fail(c, MIL_ERR_INVALID, "index %lld is out of range for a list of length %d", (long long)i, ls->n);
    return NULL;
  }
  if (ls->items[i]) return ls->items[i];
  const mil_type *e = ls->type->elem;
  if (e && e->kind == MIL_TYPE_TENSOR && mil_type_is_static(e)) {
    const mil_value *z = interp_new_value(r, e);
    if (!z) interp_nomem(c);
    return z;
  }
  interp_fail(c, MIL_ERR_INVALID, "list element %lld was never written and its shape is not known", (long long)i);
  return NULL;
}

/* Checks value v against the list's element type; returns the element
 * type the list has after the write. */
static const mil_type *check_elem(mil_infer_ctx *c, const mil_value *ls, const mil_value *v) {
  const mil_type *e = ls->type->elem;
  if (!v || v->kind != MIL_VAL_TENSOR) {
    interp_fail(c, MIL_ERR_TYPE, "the value written must be a tensor");
    return NULL;
  }
  if (!e || e->kind == MIL_TYPE_UNKNOWN) return v->type;
  if (!mil_type_compatible(e, v->type)) {
    char a[160], b[160];
    mil_type_to_string(e, a, sizeof a);
    mil_type_to_string(v->type, b, sizeof b);
    interp_fail(c, MIL_ERR_TYPE, "the list holds %s, the value written is %s", a, b);
    return NULL;
  }
  return e;
}

/* Writes vals[k] at idx[k] into a copy of ls. */
static mil_status write_items(interp_run *r, mil_infer_ctx *c, const mil_value *ls, int64_t n, const int64_t *idx,
                              const mil_value *const *vals, const mil_type *elem) {
  int64_t len = ls->n;
  for (int64_t k = 0; k < n; k++) {
    if (idx[k] < 0) return interp_fail(c, MIL_ERR_INVALID, "negative list index %lld", (long long)idx[k]);
    if (idx[k] >= len) {
      if (!dynamic(ls))
        return interp_fail(c, MIL_ERR_INVALID, "index %lld is past the end of a fixed-length list of length %d",
                           (long long)idx[k], ls->n);
      len = idx[k] + 1;
    }
  }
  if (len > INT32_MAX) return interp_fail(c, MIL_ERR_INVALID, "list longer than 2^31 elements");
  mil_value *nl = new_list(r, elem, dynamic(ls), (int32_t)len, ls->items, ls->n);
  if (!nl) return interp_nomem(c);
  const mil_value **it = (const mil_value **)nl->items;
  for (int64_t k = 0; k < n; k++) it[idx[k]] = vals[k];
  return done(c, nl);
}

static mil_status k_list_write(interp_run *r, mil_infer_ctx *c) {
  const mil_value *ls = get_list(c), *v = op_val(c, "value");
  if (!ls) return MIL_ERR_TYPE;
  const mil_type *elem = check_elem(c, ls, v);
  if (!elem) return MIL_ERR_TYPE;
  int64_t idx = op_int(c, "index", -1);
  return write_items(r, c, ls, 1, &idx, &v, elem);
}

static mil_status k_list_read(interp_run *r, mil_infer_ctx *c) {
  const mil_value *ls = get_list(c);
  if (!ls) return MIL_ERR_TYPE;
  const mil_value *e = element(r, c, ls, op_int(c, "index", -1));
  return e ? done(c, e) : MIL_ERR_INVALID;
}

static mil_status k_list_gather(interp_run *r, mil_infer_ctx *c) {
  const mil_value *ls = get_list(c), *ind = interp_in(c, "indices");
  if (!ls || !ind) return MIL_ERR_TYPE;
  if (ind->type->rank != 1) return interp_fail(c, MIL_ERR_TYPE, "input 'indices' must be rank 1");
  const mil_value *first = NULL;
  int64_t shape[MIL_INTERP_MAX_RANK + 1];
  shape[0] = ind->numel;
  int32_t er = 0;
  size_t esz = 0;
  mil_value *out = NULL;
  for (int64_t k = 0; k < ind->numel; k++) {
    const mil_value *e = element(r, c, ls, mil_value_get_i64(ind, k));
    if (!e) return MIL_ERR_INVALID;
    if (!first) {
      first = e;
      er = interp_vshape(e, shape + 1);
      esz = e->nbytes;
      out = interp_new_shape(r, e->type->dtype, er + 1, shape, false);
      if (!out) return interp_nomem(c);
    } else if (e->type->dtype != first->type->dtype || e->nbytes != esz) {
      return interp_fail(c, MIL_ERR_TYPE, "list elements %lld and 0 of the gather have different shapes", (long long)k);
    }
    if (esz) memcpy((char *)mil_value_data_mut(out) + k * esz, mil_value_data(e), esz);
  }
  if (!out) {
    const mil_type *et = ls->type->elem;
    if (!et || et->kind != MIL_TYPE_TENSOR || !interp_shape(et, shape + 1, &er))
      return interp_fail(c, MIL_ERR_INVALID, "cannot gather no elements from a list of unknown element shape");
    out = interp_new_shape(r, et->dtype, er + 1, shape, false);
    if (!out) return interp_nomem(c);
  }
  return done(c, out);
}

static mil_status k_list_scatter(interp_run *r, mil_infer_ctx *c) {
  const mil_value *ls = get_list(c), *ind = interp_in(c, "indices"), *v = interp_in(c, "value");
  if (!ls || !ind || !v) return MIL_ERR_TYPE;
  int64_t vs[MIL_INTERP_MAX_RANK];
  int32_t vr = interp_vshape(v, vs);
  if (ind->type->rank != 1 || vr < 1 || vs[0] != ind->numel)
    return interp_fail(c, MIL_ERR_TYPE, "input 'value' must have one row per index (%lld), got %lld rows",
                       (long long)ind->numel, vr >= 1 ? (long long)vs[0] : 0LL);
  int64_t n = ind->numel;
  int64_t *idx = mil_program_alloc(r->prog, (size_t)(n ? n : 1) * sizeof *idx);
  const mil_value **rows = mil_program_alloc(r->prog, (size_t)(n ? n : 1) * sizeof *rows);
  if (!idx || !rows) return interp_nomem(c);
  size_t rb = n ? v->nbytes / (size_t)n : 0;
  const mil_type *elem = NULL;
  for (int64_t k = 0; k < n; k++) {
    mil_value *row = interp_new_shape(r, v->type->dtype, vr - 1, vs + 1, false);
    if (!row) return interp_nomem(c);
    if (rb) memcpy(mil_value_data_mut(row), (const char *)mil_value_data(v) + k * rb, rb);
    rows[k] = row;
    idx[k] = mil_value_get_i64(ind, k);
    if (!(elem = check_elem(c, ls, row))) return MIL_ERR_TYPE;
  }
  if (!elem) elem = ls->type->elem;
  return write_items(r, c, ls, n, idx, rows, elem);
}

const interp_kernel interp_kernels_list[] = {
    {"list_gather", k_list_gather, INTERP_K_SELF},
    {"list_length", k_list_length, INTERP_K_SELF},
    {"list_read", k_list_read, INTERP_K_SELF},
    {"list_scatter", k_list_scatter, INTERP_K_SELF},
    {"list_write", k_list_write, INTERP_K_SELF},
    {"make_list", k_make_list, INTERP_K_SELF},
};
INTERP_FAMILY_COUNT(list);
