/* Helpers of the ONNX converters: names (coremltools' NameSanitizer),
 * attributes, inputs and outputs, literal values and op building. */
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>

#include "onnx/import/import_internal.h"

/* ---------- names ---------- */

static const char *const k_reserved[] = {"any",    "bool",   "program", "func",  "tensor", "list",  "dict",
                                         "tuple",  "true",   "false",   "string", "bf16",  "fp16",  "fp32",
                                         "fp64",   "int8",   "int16",   "int32", "int64",  "uint8", "uint16",
                                         "uint32", "uint64", "state",   NULL};

static bool is_word(unsigned char ch) {
  return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '_';
}

const char *onnx_sanitize(onnx_ctx *c, const char *name) {
  if (!name) name = "";
  const char *key = mil_program_intern(c->p, name, (size_t)-1);
  if (!key) return NULL;
  const char *memo = onnx_san_get(c, key);
  if (memo) return memo;
  pass_names *names = pass_bld_names(&c->bld);
  if (!names) return NULL;
  size_t len = strlen(name);
  char *buf = malloc(len + 64);
  if (!buf) return NULL;
  size_t n = 0;
  if (len == 0 || (name[0] >= '0' && name[0] <= '9')) {
    memcpy(buf, "var_", 4);
    n = 4;
  }
  for (size_t i = 0; i < len;) {
    unsigned char ch = (unsigned char)name[i++];
    buf[n++] = is_word(ch) ? (char)ch : '_';
    if (ch >= 0xC0)
      while (i < len && ((unsigned char)name[i] & 0xC0) == 0x80) i++;
  }
  buf[n] = 0;
  for (const char *const *r = k_reserved; *r; r++)
    if (strcmp(buf, *r) == 0) {
      memcpy(buf + n, "_workaround", 12);
      n += 11;
      break;
    }
  const char *out = mil_program_intern(c->p, buf, n);
  if (out && pass_names_has(names, out)) {
    for (unsigned long k = 0;; k++) {
      int w = snprintf(buf + n, 24, "_%lu", k);
      n += (size_t)w;
      out = mil_program_intern(c->p, buf, n);
      if (!out || !pass_names_has(names, out)) break;
    }
  }
  free(buf);
  if (!out || !pass_names_add_interned(names, out) || onnx_san_put(c, key, out) != MIL_OK) return NULL;
  return out;
}

/* Sanitizes (and so reserves) the names g defines: its inputs and
 * initializers, then per node the values of its subgraphs and its
 * outputs, then its outputs: the order conversion meets them in. */
static mil_status reserve_graph(onnx_ctx *c, const Onnx__GraphProto *g, int depth) {
  if (!g || depth > MIL_MAX_BLOCK_DEPTH) return MIL_OK; /* conversion refuses deeper graphs itself */
#define RESERVE(nm)                                           \
  do {                                                        \
    const char *n_ = (nm);                                    \
    if (n_ && n_[0] && !onnx_sanitize(c, n_)) return MIL_ERR_NOMEM; \
  } while (0)
  for (size_t i = 0; i < g->n_input; i++) RESERVE(g->input[i]->name);
  for (size_t i = 0; i < g->n_initializer; i++) RESERVE(g->initializer[i]->name);
  for (size_t i = 0; i < g->n_node; i++) {
    const Onnx__NodeProto *np = g->node[i];
    for (size_t a = 0; a < np->n_attribute; a++) {
      const Onnx__AttributeProto *at = np->attribute[a];
      mil_status st = reserve_graph(c, at->g, depth + 1);
      for (size_t k = 0; st == MIL_OK && k < at->n_graphs; k++) st = reserve_graph(c, at->graphs[k], depth + 1);
      if (st != MIL_OK) return st;
    }
    for (size_t k = 0; k < np->n_output; k++) RESERVE(np->output[k]);
  }
  for (size_t i = 0; i < g->n_output; i++) RESERVE(g->output[i]->name);
#undef RESERVE
  return MIL_OK;
}

mil_status onnx_reserve_names(onnx_ctx *c, const Onnx__GraphProto *g) {
  mil_status st = reserve_graph(c, g, 0);
  return st == MIL_OK ? MIL_OK : mil_diag_error(c->d, st, "%s: out of memory", c->path);
}

bool onnx_name_taken(onnx_ctx *c, const char *name) {
  const char *k = mil_program_find_string(c->p, name, (size_t)-1);
  return k && (onnx_san_get(c, k) || onnx_lookup(c, name));
}

/* ---------- attributes ---------- */

const Onnx__AttributeProto *onnx_attr(const onnx_node *n, const char *name) {
  for (size_t i = 0; i < n->proto->n_attribute; i++)
    if (n->proto->attribute[i]->name && strcmp(n->proto->attribute[i]->name, name) == 0) return n->proto->attribute[i];
  return NULL;
}

int64_t onnx_attr_i(const onnx_node *n, const char *name, int64_t dflt) {
  const Onnx__AttributeProto *a = onnx_attr(n, name);
  if (!a) return dflt;
  if (a->has_i || a->type == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT) return a->i;
  if (a->has_f) { /* an int given as a float: truncated, saturated where it does not fit (checked later) */
    if (a->f != a->f) return dflt;
    if (a->f >= 9223372036854775807.0f) return INT64_MAX;
    if (a->f <= -9223372036854775808.0f) return INT64_MIN;
    return (int64_t)a->f;
  }
  return dflt;
}

float onnx_attr_f(const onnx_node *n, const char *name, float dflt) {
  const Onnx__AttributeProto *a = onnx_attr(n, name);
  if (!a) return dflt;
  if (a->has_f || a->type == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT) return a->f;
  if (a->has_i) return (float)a->i;
  return dflt;
}

const char *onnx_attr_s(onnx_ctx *c, const onnx_node *n, const char *name, const char *dflt) {
  const Onnx__AttributeProto *a = onnx_attr(n, name);
  if (!a || !a->has_s) return dflt;
  /* an empty string may come with no data; never return NULL to callers that compare it */
  const char *r = mil_program_intern(c->p, a->s.len ? (const char *)a->s.data : "", a->s.len);
  return r ? r : dflt;
}

int32_t onnx_attr_ints(const onnx_node *n, const char *name, const int64_t **out) {
  const Onnx__AttributeProto *a = onnx_attr(n, name);
  *out = NULL;
  if (!a) return -1;
  *out = a->ints;
  return (int32_t)a->n_ints;
}

int32_t onnx_attr_floats(const onnx_node *n, const char *name, const float **out) {
  const Onnx__AttributeProto *a = onnx_attr(n, name);
  *out = NULL;
  if (!a) return -1;
  *out = a->floats;
  return (int32_t)a->n_floats;
}

/* ---------- inputs and outputs ---------- */

mil_var *onnx_req(onnx_ctx *c, const onnx_node *n, int32_t i) {
  mil_var *v = onnx_in(n, i);
  if (!v) onnx_fail(c, MIL_ERR_INVALID, "input %d is required but absent", (int)i);
  return v;
}

bool onnx_out_used(const onnx_node *n, int32_t i) {
  return i < n->n_out && n->proto->output[i] && n->proto->output[i][0];
}

mil_status onnx_set_out(onnx_ctx *c, onnx_node *n, int32_t i, mil_var *v) {
  if (!onnx_out_used(n, i)) return MIL_OK;
  if (!v) return MIL_ERR_TYPE;
  const char *onnx_name = n->proto->output[i];
  if (v->op && !v->func_input_of && !v->input_of && !pass_ptrset_has(&c->named, v)) {
    const char *nm = onnx_sanitize(c, onnx_name);
    if (!nm) return MIL_ERR_NOMEM;
    v->name = nm;
    if (v->op->n_outputs == 1) v->op->name = nm;
    if (!pass_ptrset_add(&c->named, v)) return MIL_ERR_NOMEM;
  }
  return onnx_bind_new(c, onnx_name, v);
}

bool onnx_val_ints(onnx_ctx *c, const mil_var *v, int64_t **out, int32_t *n) {
  const mil_value *val = onnx_val(v);
  if (!val || val->kind != MIL_VAL_TENSOR || !mil_dtype_is_int(val->type->dtype) || val->numel > (1 << 24))
    return false;
  int64_t *a = mil_program_alloc(c->p, (size_t)(val->numel ? val->numel : 1) * sizeof *a);
  if (!a) return false;
  for (int64_t i = 0; i < val->numel; i++) a[i] = mil_value_get_i64(val, i);
  *out = a;
  *n = (int32_t)val->numel;
  return true;
}

int32_t onnx_rank(const mil_var *v) { return v && mil_type_is_tensor(v->type) ? v->type->rank : -1; }

mil_dtype onnx_dtype(const mil_var *v) { return v && mil_type_is_tensor(v->type) ? v->type->dtype : MIL_DT_UNUSED; }

bool onnx_axis(int64_t *axis, int32_t rank) {
  if (*axis < 0) *axis += rank;
  return *axis >= 0 && *axis < (rank > 0 ? rank : 1);
}

/* ---------- values ---------- */

mil_value *onnx_i32(onnx_ctx *c, int64_t x) { return mil_value_new_scalar_i64(c->p, MIL_DT_INT32, x); }

mil_value *onnx_i32s(onnx_ctx *c, int32_t n, const int64_t *xs) {
  int64_t shape[1] = {n};
  mil_value *v = mil_value_new_tensor(c->p, MIL_DT_INT32, 1, shape, false, NULL);
  for (int32_t i = 0; v && i < n; i++) mil_value_set_i64(v, i, xs[i]);
  return v;
}

mil_value *onnx_f32(onnx_ctx *c, double x) { return mil_value_new_scalar_f64(c->p, MIL_DT_FP32, x); }

/* x as an integer, saturated (NaN as 0): attribute floats such as Pad's
 * constant value or Clip's bounds may be any double, also for an integer
 * tensor. */
static int64_t sat_i64(double x) {
  if (x != x) return 0;
  if (x >= 9223372036854775807.0) return INT64_MAX;
  if (x <= -9223372036854775808.0) return INT64_MIN;
  return (int64_t)x;
}

mil_value *onnx_fscalar(onnx_ctx *c, mil_dtype dt, double x) {
  if (mil_dtype_is_int(dt)) return mil_value_new_scalar_i64(c->p, dt, sat_i64(x));
  return mil_value_new_scalar_f64(c->p, dt, x);
}

mil_value *onnx_bool(onnx_ctx *c, bool b) { return mil_value_new_bool(c->p, b); }

mil_value *onnx_str(onnx_ctx *c, const char *s) { return mil_value_new_string(c->p, s); }

mil_var *onnx_const(onnx_ctx *c, const mil_value *v) {
  if (!v) return NULL;
  pass_names *names = pass_bld_names(&c->bld);
  const char *nm = names ? pass_names_fresh(names, c->p, "const") : NULL;
  mil_op *op = nm ? mil_const_new(c->p, nm, v) : NULL;
  if (!op) return NULL;
  mil_block_append(c->blk, op);
  return op->outputs[0];
}

/* ---------- building ---------- */

mil_op *onnx_op_full(onnx_ctx *c, const char *type, int32_t n, const pass_barg *args) {
  for (int32_t i = 0; i < n; i++)
    if (!args[i].var && !args[i].vars && !args[i].val) {
      /* the op that should have made it has said why (a fill too large
       * feeding the add of an Expand): one message is enough */
      if (!c->d || !c->d->n_errors) onnx_fail(c, MIL_ERR_INVALID, "building %s: argument '%s' is missing", type, args[i].name);
      return NULL;
    }
  mil_status st;
  size_t before = c->d ? c->d->count : 0;
  mil_op *op = pass_bld_op(&c->bld, c->blk, NULL, type, NULL, n, args, &st);
  if (op) return op;
  /* the op's own reason ("function 'main': op 'fill_0' (fill): input
   * 'shape' has a negative entry ...") becomes the node's message, so the
   * user reads one error naming the ONNX node and what is wrong */
  char reason[768] = "";
  if (c->d && c->d->count > before) {
    for (size_t i = c->d->count; i-- > before;)
      if (c->d->msgs[i].severity == MIL_SEV_ERROR && c->d->msgs[i].text) {
        const char *t = c->d->msgs[i].text, *r = strstr(t, "): ");
        snprintf(reason, sizeof reason, "%s", r && strncmp(t, "function '", 10) == 0 ? r + 3 : t);
        break;
      }
    for (size_t i = before; i < c->d->count; i++) {
      if (c->d->msgs[i].severity == MIL_SEV_ERROR && c->d->n_errors) c->d->n_errors--;
      else if (c->d->msgs[i].severity == MIL_SEV_WARNING && c->d->n_warnings) c->d->n_warnings--;
      free(c->d->msgs[i].text);
    }
    c->d->count = before;
  }
  if (reason[0]) onnx_fail(c, st, "MIL op %s: %s", type, reason);
  else onnx_fail(c, st, "building MIL op %s failed (%s)", type, mil_status_str(st));
  return NULL;
}

mil_var *onnx_op(onnx_ctx *c, const char *type, int32_t n, const pass_barg *args) {
  mil_op *op = onnx_op_full(c, type, n, args);
  return op && op->n_outputs > 0 ? op->outputs[0] : NULL;
}

mil_var *onnx_cast(onnx_ctx *c, mil_var *x, mil_dtype dt) {
  if (!x || onnx_dtype(x) == dt) return x;
  return ONNX_OP(c, "cast", A("x", x), K("dtype", onnx_str(c, mil_dtype_name(dt))));
}

mil_var *onnx_shape_of(onnx_ctx *c, mil_var *x) { return ONNX_OP(c, "shape", A("x", x)); }

/* For axes (rank 1, computed at run time) of a rank-R result: an int32
 * (R) vector, 1 where the position is one of the axes (negative axes
 * count from the end), and the positions range(R) in *pos. */
mil_var *onnx_axes_mask(onnx_ctx *c, mil_var *axes, int64_t R, mil_var **pos) {
  mil_var *ax = ONNX_OP(c, "mod", A("x", onnx_cast(c, axes, MIL_DT_INT32)), K("y", onnx_i32(c, R)));
  *pos = ONNX_OP(c, "range_1d", K("start", onnx_i32(c, 0)), K("end", onnx_i32(c, R)), K("step", onnx_i32(c, 1)));
  mil_var *hit = ONNX_OP(c, "equal", A("x", ONNX_OP(c, "expand_dims", A("x", *pos), K("axes", onnx_i32s(c, 1, (int64_t[]){1})))),
                         A("y", ONNX_OP(c, "expand_dims", A("x", ax), K("axes", onnx_i32s(c, 1, (int64_t[]){0})))));
  return ONNX_OP(c, "reduce_max", A("x", onnx_cast(c, hit, MIL_DT_INT32)), K("axes", onnx_i32s(c, 1, (int64_t[]){1})),
                 K("keep_dims", onnx_bool(c, false)));
}

/* ---------- types ---------- */

const mil_type *onnx_value_info_type(onnx_ctx *c, const Onnx__ValueInfoProto *vi) {
  const char *name = vi->name ? vi->name : "";
  const Onnx__TypeProto *tp = vi->type;
  if (!tp || tp->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE || !tp->tensor_type) {
    mil_diag_error(c->d, MIL_ERR_UNSUPPORTED, "%s: value '%s' is not a tensor (sequence, map and optional values "
                   "are not converted)", c->path, name);
    return NULL;
  }
  const Onnx__TypeProto__Tensor *tt = tp->tensor_type;
  mil_dtype dt = onnx_mil_dtype(tt->elem_type);
  if (dt == MIL_DT_UNUSED) {
    mil_diag_error(c->d, MIL_ERR_UNSUPPORTED, "%s: value '%s' has ONNX data type %d, which Core ML cannot hold",
                   c->path, name, (int)tt->elem_type);
    return NULL;
  }
  if (!tt->shape) return mil_type_tensor(c->p, dt, -1, NULL);
  int32_t rank = (int32_t)tt->shape->n_dim;
  mil_dim *dims = mil_program_alloc(c->p, (size_t)(rank ? rank : 1) * sizeof *dims);
  if (!dims) return NULL;
  for (int32_t i = 0; i < rank; i++) {
    const Onnx__TensorShapeProto__Dimension *dm = tt->shape->dim[i];
    if (dm->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE && dm->dim_value >= 0) {
      dims[i].size = dm->dim_value;
      continue;
    }
    dims[i].size = -1;
    const char *p = dm->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM ? dm->dim_param : NULL;
    bool ident = p && p[0] && !(p[0] >= '0' && p[0] <= '9');
    for (const char *q = p; ident && *q; q++) ident = is_word((unsigned char)*q);
    if (ident) dims[i].sym = mil_program_intern(c->p, p, (size_t)-1);
    else dims[i] = mil_dim_new_symbol(c->p);
  }
  return mil_type_tensor(c->p, dt, rank, dims);
}
