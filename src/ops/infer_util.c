/* Helpers shared by the op families: reading inputs, building types,
 * broadcasting, error messages. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "ops/ops_internal.h"

/* mil_op_find_input, with the first character compared first. */
static mil_input *input_by_scan(const mil_op *op, const char *name) {
  for (int32_t i = 0; i < op->n_inputs; i++) {
    const char *s = op->inputs[i].name;
    if (s == name || (s[0] == name[0] && op_str_eq(s, name))) return &op->inputs[i];
  }
  return NULL;
}

/* The input `name` of c->op, or NULL. With the binding map: the spec input
 * of that name (callers pass the spec's own literals, so mostly the same
 * pointer) and its first binding; a name outside the spec names no input
 * of the op. */
static OP_ALWAYS_INLINE mil_input *input_of(const mil_infer_ctx *c, const char *name) {
  if (!c->mapped) return input_by_scan(c->op, name);
  const mil_input_spec *specs = c->def->inputs;
  int32_t n = c->def->n_inputs;
  for (int32_t j = 0; j < n; j++)
    if (specs[j].name == name) return c->in_of[j];
  for (int32_t j = 0; j < n; j++)
    if (specs[j].name[0] == name[0] && (!name[0] || op_str_eq(specs[j].name + 1, name + 1))) return c->in_of[j];
  return NULL;
}

mil_input *op_input(const mil_infer_ctx *c, const char *name) { return input_of(c, name); }

mil_var *op_in(const mil_infer_ctx *c, const char *name) {
  mil_input *in = input_of(c, name);
  return in && in->n_args ? in->args[0].use.var : NULL;
}

bool op_has(const mil_infer_ctx *c, const char *name) {
  mil_input *in = input_of(c, name);
  return in && in->n_args > 0;
}

const mil_value *op_val(const mil_infer_ctx *c, const char *name) {
  mil_input *in = input_of(c, name);
  if (!in || in->n_args == 0) return NULL;
  if (in->args[0].value) return in->args[0].value;
  return in->args[0].use.var ? in->args[0].use.var->val : NULL;
}

const mil_type *op_type(const mil_infer_ctx *c, const char *name) {
  mil_input *in = input_of(c, name);
  if (!in || in->n_args == 0) return NULL;
  if (in->args[0].value) return in->args[0].value->type;
  return in->args[0].use.var ? in->args[0].use.var->type : NULL;
}

static const mil_value *scalar_val(const mil_infer_ctx *c, const char *name) {
  const mil_value *v = op_val(c, name);
  return v && v->kind == MIL_VAL_TENSOR && v->numel >= 1 ? v : NULL;
}

int64_t op_int(const mil_infer_ctx *c, const char *name, int64_t dflt) {
  const mil_value *v = scalar_val(c, name);
  return v && v->type->dtype != MIL_DT_STRING ? mil_value_get_i64(v, 0) : dflt;
}

double op_f64(const mil_infer_ctx *c, const char *name, double dflt) {
  const mil_value *v = scalar_val(c, name);
  return v && v->type->dtype != MIL_DT_STRING ? mil_value_get_f64(v, 0) : dflt;
}

bool op_bool(const mil_infer_ctx *c, const char *name, bool dflt) {
  const mil_value *v = scalar_val(c, name);
  return v && v->type->dtype != MIL_DT_STRING ? mil_value_get_i64(v, 0) != 0 : dflt;
}

const char *op_str(const mil_infer_ctx *c, const char *name, const char *dflt) {
  const mil_value *v = scalar_val(c, name);
  return v && v->type->dtype == MIL_DT_STRING ? mil_value_get_str(v, 0) : dflt;
}

int op_ints(const mil_infer_ctx *c, const char *name, int64_t *out, int max) {
  const mil_value *v = op_val(c, name);
  if (!v || v->kind != MIL_VAL_TENSOR || v->type->dtype == MIL_DT_STRING || v->numel > max) return -1;
  for (int64_t i = 0; i < v->numel; i++) out[i] = mil_value_get_i64(v, i);
  return (int)v->numel;
}

mil_status op_fail(mil_infer_ctx *c, const char *fmt, ...) {
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return mil_diag_error(c->diag, MIL_ERR_TYPE, "function '%s': op '%s' (%s): %s", c->func,
                        c->op->name ? c->op->name : "?", c->op->type, msg);
}

static size_t put_dims(char *buf, size_t n, size_t l, const mil_type *t) {
  if (t->rank < 0) return l + (size_t)snprintf(buf + l, l < n ? n - l : 0, "*, ");
  for (int32_t i = 0; i < t->rank; i++) {
    const mil_dim *d = &t->dims[i];
    const char *sep = t->rank == 1 ? "," : ", ";
    if (d->size >= 0) l += (size_t)snprintf(buf + l, l < n ? n - l : 0, "%lld%s", (long long)d->size, sep);
    else l += (size_t)snprintf(buf + l, l < n ? n - l : 0, "%s%s%s", d->variadic ? "*" : "", d->sym ? d->sym : "?", sep);
  }
  return l;
}

char *mil_type_to_string(const mil_type *t, char *buf, size_t n) {
  if (!n) return buf;
  buf[0] = 0;
  if (!t) {
    snprintf(buf, n, "(none)");
    return buf;
  }
  size_t l = 0;
  switch (t->kind) {
  case MIL_TYPE_TENSOR:
  case MIL_TYPE_STATE: {
    const mil_type *tt = t->kind == MIL_TYPE_STATE ? t->elem : t;
    if (!tt) {
      snprintf(buf, n, "(state)");
      break;
    }
    l = (size_t)snprintf(buf, n, "(");
    l = put_dims(buf, n, l, tt);
    l += (size_t)snprintf(buf + l, l < n ? n - l : 0, "%s)", mil_dtype_name(tt->dtype));
    if (t->kind == MIL_TYPE_STATE) snprintf(buf + l, l < n ? n - l : 0, "(State)");
    break;
  }
  case MIL_TYPE_LIST: {
    char e[128];
    mil_type_to_string(t->elem, e, sizeof e);
    if (t->length.size >= 0) snprintf(buf, n, "List[%lld, %s]", (long long)t->length.size, e);
    else snprintf(buf, n, "List[?, %s]", e);
    break;
  }
  case MIL_TYPE_TUPLE: snprintf(buf, n, "tuple(%d)", t->n_elems); break;
  case MIL_TYPE_DICT: snprintf(buf, n, "dict"); break;
  case MIL_TYPE_UNKNOWN: snprintf(buf, n, "unknown"); break;
  }
  return buf;
}

const char *op_tstr(mil_infer_ctx *c, const mil_type *t) {
  char *b = c->tbuf[c->tnext];
  c->tnext = (c->tnext + 1) & 3;
  return mil_type_to_string(t, b, sizeof c->tbuf[0]);
}

mil_dim op_dim(int64_t size) { return (mil_dim){size, NULL, false}; }

mil_dim op_dim_sym(mil_infer_ctx *c) { return mil_dim_new_symbol(c->prog); }

const mil_type *op_tensor(mil_infer_ctx *c, mil_dtype dt, int32_t rank, const mil_dim *dims) {
  char why[300];
  if (!mil_tensor_size_ok(dt, rank, dims, why, sizeof why)) {
    op_fail(c, "the output would be too large: %s", why);
    return NULL;
  }
  return mil_type_tensor(c->prog, dt, rank, dims);
}

const mil_type *op_tensor_variadic(mil_infer_ctx *c, mil_dtype dt) {
  mil_dim d = op_dim_sym(c);
  d.variadic = true;
  return op_tensor(c, dt, 1, &d);
}

const mil_type *op_scalar(mil_infer_ctx *c, mil_dtype dt) { return mil_type_scalar(c->prog, dt); }

const mil_type *op_with_dtype(mil_infer_ctx *c, const mil_type *t, mil_dtype dt) {
  if (t->is_scalar) return op_scalar(c, dt);
  return op_tensor(c, dt, t->rank, t->dims);
}

bool op_axis(int64_t axis, int32_t rank, int64_t *out) {
  if (axis < -(int64_t)rank || axis >= rank) return false;
  *out = axis < 0 ? axis + rank : axis;
  return true;
}

mil_status op_broadcast(mil_infer_ctx *c, const mil_type *a, const mil_type *b, mil_dim *out, int32_t *rank) {
  if (a->rank < 0 || b->rank < 0) {
    *rank = -1;
    return MIL_OK;
  }
  int32_t r = a->rank > b->rank ? a->rank : b->rank;
  if (r > OP_MAX_RANK) return op_fail(c, "rank %d is larger than supported (%d)", r, OP_MAX_RANK);
  /* the same shape, or a shape against a scalar: a's dims, unchanged (an
   * unnamed unknown dim against itself gets a fresh symbol below) */
  if (b->rank == 0 || a == b) {
    int32_t i = 0;
    if (b->rank != 0)
      while (i < r && (a->dims[i].size >= 0 || a->dims[i].sym)) i++;
    if (b->rank == 0 || i == r) {
      for (i = 0; i < r; i++) out[i] = a->dims[i];
      *rank = r;
      return MIL_OK;
    }
  }
  for (int32_t i = 0; i < r; i++) {
    int32_t ia = i - (r - a->rank), ib = i - (r - b->rank);
    mil_dim da = ia >= 0 ? a->dims[ia] : op_dim(1);
    mil_dim db = ib >= 0 ? b->dims[ib] : op_dim(1);
    bool ua = da.size < 0, ub = db.size < 0;
    if (!ua && !ub && da.size == db.size) out[i] = da;
    else if (ua && ub && da.sym && db.sym && (da.sym == db.sym || strcmp(da.sym, db.sym) == 0)) out[i] = da;
    else if (da.size == 1) out[i] = db;
    else if (db.size == 1) out[i] = da;
    else if (!ub && db.size > 1) {
      if (!ua) goto incompatible;
      out[i] = db;
    } else if (!ua && da.size > 1) {
      if (!ub) goto incompatible;
      out[i] = da;
    } else if (ua || ub) {
      out[i] = op_dim_sym(c); /* e.g. a symbol against 0 */
    } else {
      goto incompatible;
    }
    continue;
  incompatible:
    return op_fail(c, "shapes %s and %s cannot be broadcast (dimension %d: %lld vs %lld)", op_tstr(c, a),
                   op_tstr(c, b), i, (long long)da.size, (long long)db.size);
  }
  *rank = r;
  return MIL_OK;
}

mil_value *op_new_value(mil_infer_ctx *c, mil_dtype dt, int32_t rank, const int64_t *shape, bool scalar) {
  return mil_value_new_tensor(c->prog, dt, rank, shape, scalar && rank == 0, NULL);
}

mil_value *op_new_out_value(mil_infer_ctx *c, int i) {
  const mil_type *t = c->out[i];
  if (!t || t->kind != MIL_TYPE_TENSOR || !mil_type_is_static(t)) return NULL;
  int64_t shape[OP_MAX_RANK];
  if (t->rank > OP_MAX_RANK) return NULL;
  for (int32_t k = 0; k < t->rank; k++) shape[k] = t->dims[k].size;
  return op_new_value(c, t->dtype, t->rank, shape, t->is_scalar);
}

bool op_all_known(const mil_infer_ctx *c, ...) {
  va_list ap;
  va_start(ap, c);
  bool ok = true;
  for (const char *n = va_arg(ap, const char *); n; n = va_arg(ap, const char *)) {
    mil_input *in = op_input(c, n);
    if (!in) continue;
    for (int32_t j = 0; j < in->n_args; j++) {
      const mil_arg *a = &in->args[j];
      if (!a->value && !(a->use.var && a->use.var->val)) ok = false;
    }
  }
  va_end(ap);
  return ok;
}

/* coremltools' Var.is_descendant_of_const: a known value, a constexpr_*
 * output, or an op output computed only from such vars (a transpose of a
 * const, exp of a constexpr, ...). Depth- and work-capped. */
static bool const_desc(const mil_var *v, int depth, int *budget) {
  if (v->val) return true;
  const mil_op *op = v->op;
  if (!op) return false;
  if (strncmp(op->type, "constexpr_", 10) == 0) return true;
  if (depth >= 64 || --*budget < 0) return false;
  for (int32_t i = 0; i < op->n_inputs; i++)
    for (int32_t j = 0; j < op->inputs[i].n_args; j++) {
      const mil_var *u = op->inputs[i].args[j].use.var;
      if (u && !const_desc(u, depth + 1, budget)) return false;
    }
  return true;
}

bool op_is_const_descendant(const mil_var *v) {
  int budget = 4096;
  return v && const_desc(v, 0, &budget);
}
