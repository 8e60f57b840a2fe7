/* Model / MIL Program protobuf -> mil_model / mil_program.
 *
 * Mirrors coremltools/converters/mil/frontend/milproto/load.py
 * (load_mil_proto, _load_function, _load_block, _load_operation,
 * _load_const_op, _create_nested_blocks, _try_to_merge_state_ops), so that
 * a model read by libmil is the program coremltools would hold after
 * loading it:
 *
 *  - const ops become const vars with their value; like mb.const, int64
 *    (and uint64 arrays) are narrowed to int32 with clamping and fp64 to
 *    fp32 (ops/defs/iOS15/control_flow.py Const._get_type_val);
 *  - a rank-0 TensorType is a scalar (helper.py proto_to_types);
 *  - unknown dims get fresh symbols "is<N>";
 *  - constexpr_* ops: every attribute other than "name" (iOS16 form) and
 *    every `value` binding (iOS18 form) becomes a const op named
 *    "<op>_<param>_<k>" placed right before the constexpr op and bound to
 *    the parameter (what the builder's _create_vars does with Python values);
 *  - a literal `value` binding of any other op becomes a const "const_<k>";
 *  - write_state (+ a directly following read_state of the same state)
 *    becomes coreml_update_state "coreml_update_state_<k>", whose output
 *    takes the read_state output's name;
 *  - function bodies and nested blocks are named "block<N>".
 * Counters <k> start at 0 per load, as they do in a fresh Python process.
 *
 * Differences, by design: program, function and block attributes and
 * Program.docString are kept (coremltools drops buildInfo and refuses the
 * others) so that saving is lossless; other block specializations are kept;
 * non-const ops keep attributes other than "name" (custom layers); scalar
 * function inputs and unknown-rank tensors are accepted. Inputs keep the
 * proto's map order; the op registry puts them in input-spec order. No
 * dummy const is left before nested blocks (coremltools leaves one
 * `const_<k>` = 0.0 per nested block, an artifact of its builder).
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "io/model_internal.h"
#include "mil/ops.h"

/* snprintf for message prefixes: truncation of a long name is acceptable. */
/* ------------------------------------------------------------------------ */
/* interned-string -> pointer map                                             */
/* ------------------------------------------------------------------------ */

typedef struct pmap {
  const char **keys;
  void **vals;
  size_t cap, n;
} pmap;

static size_t phash(const void *k) {
  uintptr_t x = (uintptr_t)k;
  x ^= x >> 17;
  x *= (uintptr_t)0x9E3779B97F4A7C15ull;
  return (size_t)(x ^ (x >> 29));
}

static bool pmap_grow(pmap *m) {
  size_t nc = m->cap ? m->cap * 2 : 256;
  const char **nk = calloc(nc, sizeof *nk);
  void **nv = calloc(nc, sizeof *nv);
  if (!nk || !nv) {
    free(nk);
    free(nv);
    return false;
  }
  for (size_t i = 0; i < m->cap; i++) {
    if (!m->keys[i]) continue;
    size_t j = phash(m->keys[i]) & (nc - 1);
    while (nk[j]) j = (j + 1) & (nc - 1);
    nk[j] = m->keys[i];
    nv[j] = m->vals[i];
  }
  free(m->keys);
  free(m->vals);
  m->keys = nk;
  m->vals = nv;
  m->cap = nc;
  return true;
}

static void **pmap_slot(pmap *m, const char *k, bool insert) {
  if (insert && (m->n + 1) * 2 > m->cap && !pmap_grow(m)) return NULL;
  if (!m->cap) return NULL;
  size_t j = phash(k) & (m->cap - 1);
  while (m->keys[j]) {
    if (m->keys[j] == k) return &m->vals[j];
    j = (j + 1) & (m->cap - 1);
  }
  if (!insert) return NULL;
  m->keys[j] = k;
  m->n++;
  return &m->vals[j];
}

static void pmap_free(pmap *m) {
  free(m->keys);
  free(m->vals);
  memset(m, 0, sizeof *m);
}

/* ------------------------------------------------------------------------ */
/* reader state                                                               */
/* ------------------------------------------------------------------------ */

typedef struct undo {
  const char *name;
  void *prev;
} undo;

typedef struct rd {
  io_read *r;
  pmap scope;    /* visible name -> mil_var */
  undo *log;     /* previous bindings, to restore when a nested block ends */
  size_t n_log, cap_log;
  pmap counters; /* auto-name base -> next index + 1 */
  const char *func;
} rd;

static mil_status define(rd *s, mil_var *v) {
  void **slot = pmap_slot(&s->scope, v->name, true);
  if (!slot) return MIL_ERR_NOMEM;
  if (s->n_log == s->cap_log) {
    size_t nc = s->cap_log ? s->cap_log * 2 : 256;
    undo *nl = realloc(s->log, nc * sizeof *nl);
    if (!nl) return MIL_ERR_NOMEM;
    s->log = nl;
    s->cap_log = nc;
  }
  s->log[s->n_log++] = (undo){v->name, *slot};
  *slot = v;
  return MIL_OK;
}

static void scope_restore(rd *s, size_t mark) {
  while (s->n_log > mark) {
    undo *u = &s->log[--s->n_log];
    void **slot = pmap_slot(&s->scope, u->name, false);
    if (slot) *slot = u->prev;
  }
}

static mil_var *lookup(rd *s, const char *name) {
  const char *in = mil_program_intern(s->r->p, name, (size_t)-1);
  void **slot = in ? pmap_slot(&s->scope, in, false) : NULL;
  return slot ? *slot : NULL;
}

/* "<base>_<k>" with k counting per base from 0 (the builder's _get_free_name). */
static const char *fresh_name(rd *s, const char *base) {
  mil_program *p = s->r->p;
  const char *in = mil_program_intern(p, base, (size_t)-1);
  void **slot = in ? pmap_slot(&s->counters, in, true) : NULL;
  if (!slot) return NULL;
  uintptr_t k = (uintptr_t)*slot;
  *slot = (void *)(k + 1);
  size_t n = strlen(base) + 24;
  char *buf = malloc(n);
  if (!buf) return NULL;
  snprintf(buf, n, "%s_%llu", base, (unsigned long long)k);
  const char *out = mil_program_intern(p, buf, (size_t)-1);
  free(buf);
  return out;
}

static const char *block_name(mil_program *p) {
  char buf[40];
  snprintf(buf, sizeof buf, "block%llu", (unsigned long long)p->next_block_id++);
  return mil_program_intern(p, buf, (size_t)-1);
}

/* Attribute arrays of functions and blocks (ir.h has setters only for
 * programs and ops). */
static mil_status append_attr(mil_program *p, mil_attr **attrs, int32_t *n, const char *name, const mil_value *v) {
  mil_attr *na = mil_program_alloc(p, (size_t)(*n + 1) * sizeof *na);
  if (!na) return MIL_ERR_NOMEM;
  if (*n) memcpy(na, *attrs, (size_t)*n * sizeof *na);
  na[*n].name = mil_program_intern(p, name, (size_t)-1);
  na[*n].value = v;
  if (!na[*n].name) return MIL_ERR_NOMEM;
  *attrs = na;
  (*n)++;
  return MIL_OK;
}

/* ------------------------------------------------------------------------ */
/* consts                                                                     */
/* ------------------------------------------------------------------------ */

/* What mb.const does to a value: int64 / uint64 arrays and int64 scalars
 * become int32 (clamped), fp64 becomes fp32. Other values are unchanged. */
static const mil_value *narrow_const(mil_program *p, const mil_value *v) {
  if (v->kind != MIL_VAL_TENSOR) return v;
  mil_dtype dt = v->type->dtype;
  bool scalar = v->type->rank == 0;
  bool to_i32 = dt == MIL_DT_INT64 || (dt == MIL_DT_UINT64 && !scalar);
  if (!to_i32 && dt != MIL_DT_FP64) return v;
  int64_t stack[8], *shape = stack;
  int32_t rank = v->type->rank;
  if (rank > 8 && !(shape = mil_program_alloc(p, (size_t)rank * sizeof *shape))) return NULL;
  for (int32_t i = 0; i < rank; i++) shape[i] = v->type->dims[i].size;
  mil_value *nv = mil_value_new_tensor(p, to_i32 ? MIL_DT_INT32 : MIL_DT_FP32, rank, shape, v->type->is_scalar, NULL);
  if (!nv) return NULL;
  for (int64_t i = 0; i < v->numel; i++) {
    if (to_i32) {
      int64_t x;
      if (dt == MIL_DT_UINT64) {
        uint64_t u = ((const uint64_t *)mil_value_data(v))[i];
        x = u > (uint64_t)INT32_MAX ? INT32_MAX : (int64_t)u;
      } else {
        x = ((const int64_t *)mil_value_data(v))[i];
      }
      if (x > INT32_MAX) x = INT32_MAX;
      if (x < INT32_MIN) x = INT32_MIN;
      ((int32_t *)mil_value_data_mut(nv))[i] = (int32_t)x;
    } else {
      ((float *)mil_value_data_mut(nv))[i] = (float)((const double *)mil_value_data(v))[i];
    }
  }
  return nv;
}

/* Appends to b a const op `name` whose single output (named `var_name`)
 * holds v. */
static mil_status add_const(rd *s, mil_block *b, const char *name, const char *var_name, const mil_value *v,
                            mil_var **out) {
  mil_program *p = s->r->p;
  mil_op *op = mil_op_new(p, "const", name);
  if (!op) return MIL_ERR_NOMEM;
  mil_var *var = mil_op_add_output(op, var_name, v->type);
  if (!var) return MIL_ERR_NOMEM;
  mil_var_set_value(var, v);
  mil_block_append(b, op);
  *out = var;
  return MIL_OK;
}

/* The op name from attribute "name" (a rank-0 string), or NULL if absent. */
static mil_status op_name_attr(rd *s, const Milproto__Operation *po, const char *where, const char **out) {
  *out = NULL;
  for (size_t i = 0; i < po->n_attributes; i++) {
    const Milproto__Operation__AttributesEntry *e = po->attributes[i];
    if (!e->key || strcmp(e->key, "name") != 0) continue;
    const mil_value *v;
    char w2[600];
    io_say(w2, sizeof w2, "%s: attribute 'name'", where);
    mil_status st = io_value_from_proto(s->r, e->value, w2, &v);
    if (st != MIL_OK) return st;
    if (v->kind != MIL_VAL_TENSOR || v->type->dtype != MIL_DT_STRING || v->numel != 1)
      return mil_diag_error(s->r->d, MIL_ERR_FORMAT, "%s: attribute 'name' must be a single string", where);
    *out = mil_program_intern(s->r->p, mil_value_get_str(v, 0), (size_t)-1);
    return *out ? MIL_OK : MIL_ERR_NOMEM;
  }
  return MIL_OK;
}

/* ------------------------------------------------------------------------ */
/* operations                                                                 */
/* ------------------------------------------------------------------------ */

static mil_status load_block(rd *s, const Milproto__Block *pb, mil_block *b, bool is_body, int depth);

/* Parameters coremltools declares as TupleInputType: printed "(%a)" even
 * with one binding. */
static bool is_tuple_param(const char *op_type, const char *param) {
  static const char *const table[][2] = {
      {"concat", "values"},        {"stack", "values"},         {"einsum", "values"},
      {"while_loop", "loop_vars"}, {"make_list", "elem_shape"}, {"reshape_like", "ref_tensors"},
      {"reshape_like", "begins"},  {"reshape_like", "ends"},    {"reshape_like", "end_masks"},
  };
  for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
    if (strcmp(op_type, table[i][0]) == 0 && strcmp(param, table[i][1]) == 0) return true;
  return false;
}

static bool is_constexpr(const char *type) { return strstr(type, "constexpr_") != NULL; }

/* The outputs of an op: one var per NamedValueType, made visible. */
static mil_status add_outputs(rd *s, mil_op *op, const Milproto__Operation *po, const char *where) {
  for (size_t i = 0; i < po->n_outputs; i++) {
    const Milproto__NamedValueType *nt = po->outputs[i];
    if (!nt->name || !nt->name[0])
      return mil_diag_error(s->r->d, MIL_ERR_FORMAT, "%s: output %zu has no name", where, i);
    char w2[700];
    io_say(w2, sizeof w2, "%s: output '%s'", where, nt->name);
    const mil_type *t;
    mil_status st = io_type_from_proto(s->r, nt->type, w2, &t);
    if (st != MIL_OK) return st;
    mil_var *v = mil_op_add_output(op, nt->name, t);
    if (!v) return MIL_ERR_NOMEM;
    if ((st = define(s, v)) != MIL_OK) return st;
  }
  return MIL_OK;
}

/* Resolves the bindings of one Argument into vars; `value` bindings become
 * const ops named fresh(<base>). */
static mil_status bind_args(rd *s, mil_block *b, const Milproto__Argument *arg, const char *const_base,
                            const char *where, mil_var ***vars_out, int32_t *n_out) {
  size_t n = arg ? arg->n_arguments : 0;
  if (n > (size_t)INT32_MAX / 16) return mil_diag_error(s->r->d, MIL_ERR_FORMAT, "%s: too many bindings", where);
  mil_var **vars = mil_program_alloc(s->r->p, (n ? n : 1) * sizeof *vars);
  if (!vars) return MIL_ERR_NOMEM;
  for (size_t i = 0; i < n; i++) {
    const Milproto__Argument__Binding *bd = arg->arguments[i];
    if (bd->binding_case == MILPROTO__ARGUMENT__BINDING__BINDING_NAME) {
      vars[i] = bd->name ? lookup(s, bd->name) : NULL;
      if (!vars[i])
        return mil_diag_error(s->r->d, MIL_ERR_FORMAT, "%s: binding %zu refers to '%s', which is not defined before "
                              "this op", where, i, bd->name ? bd->name : "");
    } else if (bd->binding_case == MILPROTO__ARGUMENT__BINDING__BINDING_VALUE) {
      const mil_value *v;
      mil_status st = io_value_from_proto(s->r, bd->value, where, &v);
      if (st != MIL_OK) return st;
      if (!(v = narrow_const(s->r->p, v))) return MIL_ERR_NOMEM;
      const char *cname = fresh_name(s, const_base);
      if (!cname) return MIL_ERR_NOMEM;
      if ((st = add_const(s, b, cname, cname, v, &vars[i])) != MIL_OK) return st;
    } else {
      return mil_diag_error(s->r->d, MIL_ERR_FORMAT, "%s: binding %zu has neither a name nor a value", where, i);
    }
  }
  *vars_out = vars;
  *n_out = (int32_t)n;
  return MIL_OK;
}

static mil_status attach_input(mil_op *op, const char *param, mil_var **vars, int32_t n, bool tuple) {
  mil_input *in = (n == 1 && !tuple) ? mil_op_add_input(op, param, vars[0]) : mil_op_add_input_tuple(op, param, n, vars);
  return in ? MIL_OK : MIL_ERR_NOMEM;
}

static mil_status load_const(rd *s, mil_block *b, const Milproto__Operation *po, const char *name, const char *where) {
  io_read *r = s->r;
  if (po->n_inputs)
    return mil_diag_error(r->d, MIL_ERR_FORMAT, "%s: a const op cannot have inputs (found %zu)", where, po->n_inputs);
  if (po->n_outputs != 1)
    return mil_diag_error(r->d, MIL_ERR_FORMAT, "%s: a const op has exactly one output, found %zu", where,
                          po->n_outputs);
  const Milproto__Value *pval = NULL;
  for (size_t i = 0; i < po->n_attributes; i++)
    if (po->attributes[i]->key && strcmp(po->attributes[i]->key, "val") == 0) pval = po->attributes[i]->value;
  if (!pval) return mil_diag_error(r->d, MIL_ERR_FORMAT, "%s: const op has no 'val' attribute", where);
  char w2[700];
  io_say(w2, sizeof w2, "%s: attribute 'val'", where);
  const mil_value *v;
  mil_status st = io_value_from_proto(r, pval, w2, &v);
  if (st != MIL_OK) return st;
  const mil_type *declared;
  const Milproto__NamedValueType *nt = po->outputs[0];
  io_say(w2, sizeof w2, "%s: output '%s'", where, nt->name ? nt->name : "");
  if ((st = io_type_from_proto(r, nt->type, w2, &declared)) != MIL_OK) return st;
  if (!nt->name || !nt->name[0]) return mil_diag_error(r->d, MIL_ERR_FORMAT, "%s: output has no name", where);
  /* the declared type must describe the value (dims may be symbolic) */
  const mil_type *vt = v->type;
  bool ok = vt && declared->kind == vt->kind;
  if (ok && vt->kind == MIL_TYPE_TENSOR) {
    ok = declared->dtype == vt->dtype && declared->rank == vt->rank;
    for (int32_t i = 0; ok && i < vt->rank; i++)
      if (declared->dims[i].size >= 0 && declared->dims[i].size != vt->dims[i].size) ok = false;
  }
  if (!ok)
    return mil_diag_error(r->d, MIL_ERR_FORMAT, "%s: output '%s' is declared %s of rank %d but 'val' holds %s of "
                          "rank %d (or other dimensions)", where, nt->name, mil_dtype_name(declared->dtype),
                          declared->rank, vt ? mil_dtype_name(vt->dtype) : "?", vt ? vt->rank : -1);
  if (!(v = narrow_const(r->p, v))) return MIL_ERR_NOMEM;
  mil_var *var;
  if ((st = add_const(s, b, name, nt->name, v, &var)) != MIL_OK) return st;
  /* attributes other than name/val are kept */
  for (size_t i = 0; i < po->n_attributes; i++) {
    const char *k = po->attributes[i]->key ? po->attributes[i]->key : "";
    if (!strcmp(k, "name") || !strcmp(k, "val")) continue;
    const mil_value *av;
    if ((st = io_value_from_proto(r, po->attributes[i]->value, where, &av)) != MIL_OK) return st;
    mil_op_set_attr(var->op, k, av);
  }
  return define(s, var);
}

static mil_status load_constexpr(rd *s, mil_block *b, const Milproto__Operation *po, const char *name,
                                 const char *where) {
  io_read *r = s->r;
  mil_program *p = r->p;
  mil_op *op = mil_op_new(p, po->type, name);
  if (!op) return MIL_ERR_NOMEM;
  mil_status st;
  char base[600], w2[800];
  /* iOS16 form: parameters are attributes; each becomes a const input */
  for (size_t i = 0; i < po->n_attributes; i++) {
    const char *k = po->attributes[i]->key ? po->attributes[i]->key : "";
    if (!strcmp(k, "name")) continue;
    io_say(w2, sizeof w2, "%s: attribute '%s'", where, k);
    const mil_value *v;
    if ((st = io_value_from_proto(r, po->attributes[i]->value, w2, &v)) != MIL_OK) return st;
    if (!(v = narrow_const(p, v))) return MIL_ERR_NOMEM;
    io_say(base, sizeof base, "%s_%s", name, k);
    const char *cname = fresh_name(s, base);
    mil_var *cv;
    if (!cname) return MIL_ERR_NOMEM;
    if ((st = add_const(s, b, cname, cname, v, &cv)) != MIL_OK) return st;
    if (!mil_op_add_input(op, k, cv)) return MIL_ERR_NOMEM;
  }
  /* iOS18 form: parameters are inputs, literal values become consts */
  for (size_t i = 0; i < po->n_inputs; i++) {
    const char *k = po->inputs[i]->key ? po->inputs[i]->key : "";
    io_say(w2, sizeof w2, "%s: input '%s'", where, k);
    if (mil_op_find_input(op, k))
      return mil_diag_error(r->d, MIL_ERR_FORMAT, "%s: parameter given twice (as an input or attribute)", w2);
    io_say(base, sizeof base, "%s_%s", name, k);
    mil_var **vars;
    int32_t n;
    if ((st = bind_args(s, b, po->inputs[i]->value, base, w2, &vars, &n)) != MIL_OK) return st;
    if ((st = attach_input(op, k, vars, n, false)) != MIL_OK) return st;
  }
  mil_block_append(b, op);
  return add_outputs(s, op, po, where);
}

static mil_status load_generic(rd *s, mil_block *b, const Milproto__Operation *po, const char *name, const char *where,
                               int depth) {
  io_read *r = s->r;
  mil_program *p = r->p;
  mil_op *op = mil_op_new(p, po->type, name);
  if (!op) return MIL_ERR_NOMEM;
  mil_status st;
  char w2[800];
  for (size_t i = 0; i < po->n_attributes; i++) {
    const char *k = po->attributes[i]->key ? po->attributes[i]->key : "";
    if (!strcmp(k, "name")) continue;
    io_say(w2, sizeof w2, "%s: attribute '%s'", where, k);
    const mil_value *v;
    if ((st = io_value_from_proto(r, po->attributes[i]->value, w2, &v)) != MIL_OK) return st;
    mil_op_set_attr(op, k, v);
  }
  for (size_t i = 0; i < po->n_inputs; i++) {
    const char *k = po->inputs[i]->key ? po->inputs[i]->key : "";
    io_say(w2, sizeof w2, "%s: input '%s'", where, k);
    if (mil_op_find_input(op, k))
      return mil_diag_error(r->d, MIL_ERR_FORMAT, "%s: parameter given twice (as an input or attribute)", w2);
    mil_var **vars;
    int32_t n;
    if ((st = bind_args(s, b, po->inputs[i]->value, "const", w2, &vars, &n)) != MIL_OK) return st;
    if ((st = attach_input(op, k, vars, n, is_tuple_param(po->type, k))) != MIL_OK) return st;
  }
  /* nested blocks are loaded before the op's outputs become visible */
  for (size_t i = 0; i < po->n_blocks; i++) {
    const char *bn = block_name(p);
    mil_block *nb = bn ? mil_block_new(p, bn) : NULL;
    if (!nb) return MIL_ERR_NOMEM;
    if ((st = load_block(s, po->blocks[i], nb, false, depth + 1)) != MIL_OK) return st;
    mil_op_add_block(op, nb);
  }
  mil_block_append(b, op);
  return add_outputs(s, op, po, where);
}

/* The single name binding of input `param` of a proto op, or NULL. */
static const char *single_name_input(const Milproto__Operation *po, const char *param) {
  for (size_t i = 0; i < po->n_inputs; i++) {
    const Milproto__Operation__InputsEntry *e = po->inputs[i];
    if (!e->key || strcmp(e->key, param) || !e->value || e->value->n_arguments != 1) continue;
    const Milproto__Argument__Binding *bd = e->value->arguments[0];
    if (bd->binding_case == MILPROTO__ARGUMENT__BINDING__BINDING_NAME) return bd->name;
  }
  return NULL;
}

/* write_state(input, data) [+ read_state(input)] -> coreml_update_state.
 * Returns in *merged whether `next` (the following op) was consumed. */
static mil_status load_write_state(rd *s, mil_block *b, const Milproto__Operation *po,
                                   const Milproto__Operation *next, const char *where, bool *merged) {
  io_read *r = s->r;
  *merged = false;
  const char *sname = single_name_input(po, "input"), *dname = single_name_input(po, "data");
  if (!sname || !dname)
    return mil_diag_error(r->d, MIL_ERR_FORMAT, "%s: write_state needs inputs 'input' and 'data', each bound to one "
                          "var by name", where);
  mil_var *state = lookup(s, sname), *data = lookup(s, dname);
  if (!state || !data)
    return mil_diag_error(r->d, MIL_ERR_FORMAT, "%s: write_state refers to undefined var '%s'", where,
                          state ? dname : sname);
  const char *name = fresh_name(s, "coreml_update_state");
  mil_op *op = name ? mil_op_new(r->p, "coreml_update_state", name) : NULL;
  if (!op || !mil_op_add_input(op, "state", state) || !mil_op_add_input(op, "value", data)) return MIL_ERR_NOMEM;
  mil_block_append(b, op);
  const char *out_name = name;
  if (next && next->type && !strcmp(next->type, "read_state") && next->n_outputs == 1 && next->outputs[0]->name &&
      next->outputs[0]->name[0]) {
    const char *rin = single_name_input(next, "input");
    if (rin && lookup(s, rin) == state) {
      out_name = next->outputs[0]->name;
      *merged = true;
    }
  }
  mil_var *v = mil_op_add_output(op, out_name, data->type);
  if (!v) return MIL_ERR_NOMEM;
  return *merged ? define(s, v) : MIL_OK;
}

static mil_status load_op(rd *s, mil_block *b, const Milproto__Operation *po, const Milproto__Operation *next,
                          size_t index, int depth, bool *skip_next) {
  io_read *r = s->r;
  *skip_next = false;
  char where[600];
  const char *type = po->type ? po->type : "";
  io_say(where, sizeof where, "%s: function '%s': op #%zu (%s)", r->file, s->func, index, type);
  if (!type[0]) return mil_diag_error(r->d, MIL_ERR_FORMAT, "%s: operation has no type", where);
  const char *name;
  mil_status st = op_name_attr(s, po, where, &name);
  if (st != MIL_OK) return st;
  if (!name && !(name = fresh_name(s, type))) return MIL_ERR_NOMEM;
  io_say(where, sizeof where, "%s: function '%s': op '%s' (%s)", r->file, s->func, name, type);
  bool is_const = !strcmp(type, "const");
  if ((is_const || is_constexpr(type)) && po->n_blocks)
    return mil_diag_error(r->d, MIL_ERR_FORMAT, "%s: const / constexpr operations cannot have blocks", where);
  if (is_const) return load_const(s, b, po, name, where);
  if (is_constexpr(type)) return load_constexpr(s, b, po, name, where);
  if (!strcmp(type, "write_state")) return load_write_state(s, b, po, next, where, skip_next);
  return load_generic(s, b, po, name, where, depth);
}

/* ------------------------------------------------------------------------ */
/* blocks, functions, program                                                 */
/* ------------------------------------------------------------------------ */

static mil_status load_block(rd *s, const Milproto__Block *pb, mil_block *b, bool is_body, int depth) {
  io_read *r = s->r;
  mil_program *p = r->p;
  mil_status st;
  if (!pb) return mil_diag_error(r->d, MIL_ERR_FORMAT, "%s: function '%s': block missing", r->file, s->func);
  if (depth > MIL_MAX_BLOCK_DEPTH)
    return mil_diag_error(r->d, MIL_ERR_FORMAT, "%s: function '%s': blocks nested deeper than %d levels", r->file,
                          s->func, MIL_MAX_BLOCK_DEPTH);
  size_t mark = s->n_log;
  if (is_body && pb->n_inputs)
    return mil_diag_error(r->d, MIL_ERR_FORMAT, "%s: function '%s': the body block declares %zu inputs; function "
                          "inputs belong to Function.inputs", r->file, s->func, pb->n_inputs);
  for (size_t i = 0; i < pb->n_inputs; i++) {
    const Milproto__NamedValueType *nt = pb->inputs[i];
    char w2[600];
    io_say(w2, sizeof w2, "%s: function '%s': block input '%s'", r->file, s->func, nt->name ? nt->name : "");
    if (!nt->name || !nt->name[0]) return mil_diag_error(r->d, MIL_ERR_FORMAT, "%s: block input has no name", w2);
    const mil_type *t;
    if ((st = io_type_from_proto(r, nt->type, w2, &t)) != MIL_OK) return st;
    mil_var *v = mil_block_add_input(b, nt->name, t);
    if (!v) return MIL_ERR_NOMEM;
    if ((st = define(s, v)) != MIL_OK) return st;
  }
  for (size_t i = 0; i < pb->n_attributes; i++) {
    const mil_value *v;
    char w2[600];
    const char *k = pb->attributes[i]->key ? pb->attributes[i]->key : "";
    io_say(w2, sizeof w2, "%s: function '%s': block attribute '%s'", r->file, s->func, k);
    if ((st = io_value_from_proto(r, pb->attributes[i]->value, w2, &v)) != MIL_OK) return st;
    if ((st = append_attr(p, &b->attrs, &b->n_attrs, k, v)) != MIL_OK) return st;
  }
  for (size_t i = 0; i < pb->n_operations; i++) {
    bool skip;
    const Milproto__Operation *next = i + 1 < pb->n_operations ? pb->operations[i + 1] : NULL;
    if ((st = load_op(s, b, pb->operations[i], next, i, depth, &skip)) != MIL_OK) return st;
    if (skip) i++;
  }
  mil_var **outs = mil_program_alloc(p, (pb->n_outputs ? pb->n_outputs : 1) * sizeof *outs);
  if (!outs) return MIL_ERR_NOMEM;
  for (size_t i = 0; i < pb->n_outputs; i++) {
    outs[i] = pb->outputs[i] ? lookup(s, pb->outputs[i]) : NULL;
    if (!outs[i])
      return mil_diag_error(r->d, MIL_ERR_FORMAT, "%s: function '%s': block output %zu names '%s', which is not "
                            "defined in the block", r->file, s->func, i, pb->outputs[i] ? pb->outputs[i] : "");
  }
  if ((st = mil_block_set_outputs(b, (int32_t)pb->n_outputs, outs)) != MIL_OK) return st;
  char why[512];
  if (is_body && !mil_function_io_names_ok(b->func, b, NULL, why, sizeof why))
    return mil_diag_error(r->d, MIL_ERR_INVALID, "%s: function '%s': %s", r->file, s->func, why);
  scope_restore(s, mark);
  return MIL_OK;
}

static mil_status load_function(rd *s, const char *fname, const Milproto__Function *pf) {
  io_read *r = s->r;
  mil_program *p = r->p;
  mil_status st;
  s->func = fname;
  if (!pf) return mil_diag_error(r->d, MIL_ERR_FORMAT, "%s: function '%s' has no body", r->file, fname);
  const char *opset = pf->opset ? pf->opset : "";
  const Milproto__Block *body = NULL;
  for (size_t i = 0; i < pf->n_block_specializations; i++)
    if (pf->block_specializations[i]->key && !strcmp(pf->block_specializations[i]->key, opset))
      body = pf->block_specializations[i]->value;
  if (!body)
    return mil_diag_error(r->d, MIL_ERR_FORMAT, "%s: function '%s': opset '%s' has no entry in "
                          "block_specializations (%zu entries)", r->file, fname, opset, pf->n_block_specializations);
  if (mil_program_find_function(p, fname))
    return mil_diag_error(r->d, MIL_ERR_FORMAT, "%s: function '%s' is defined twice", r->file, fname);
  mil_function *f = mil_function_new(p, fname, opset);
  if (!f) return MIL_ERR_NOMEM;
  size_t mark = s->n_log;
  for (size_t i = 0; i < pf->n_inputs; i++) {
    const Milproto__NamedValueType *nt = pf->inputs[i];
    char w2[600];
    io_say(w2, sizeof w2, "%s: function '%s': input '%s'", r->file, fname, nt->name ? nt->name : "");
    if (!nt->name || !nt->name[0]) return mil_diag_error(r->d, MIL_ERR_FORMAT, "%s: input has no name", w2);
    const mil_type *t;
    if ((st = io_type_from_proto(r, nt->type, w2, &t)) != MIL_OK) return st;
    if (t->kind != MIL_TYPE_TENSOR && t->kind != MIL_TYPE_STATE)
      return mil_diag_error(r->d, MIL_ERR_UNSUPPORTED, "%s: function inputs must be tensors or states", w2);
    mil_var *v = mil_function_add_input(f, nt->name, t);
    if (!v) return MIL_ERR_NOMEM;
    if ((st = define(s, v)) != MIL_OK) return st;
  }
  for (size_t i = 0; i < pf->n_attributes; i++) {
    const mil_value *v;
    char w2[600];
    const char *k = pf->attributes[i]->key ? pf->attributes[i]->key : "";
    io_say(w2, sizeof w2, "%s: function '%s': attribute '%s'", r->file, fname, k);
    if ((st = io_value_from_proto(r, pf->attributes[i]->value, w2, &v)) != MIL_OK) return st;
    if ((st = append_attr(p, &f->attrs, &f->n_attrs, k, v)) != MIL_OK) return st;
  }
  mil_block *b = mil_function_body(f);
  if (!(b->name = block_name(p))) return MIL_ERR_NOMEM;
  if ((st = load_block(s, body, b, true, 0)) != MIL_OK) return st;
  /* further specializations, kept as they are */
  for (size_t i = 0; i < pf->n_block_specializations; i++) {
    const Milproto__Function__BlockSpecializationsEntry *e = pf->block_specializations[i];
    if (!e->key || !strcmp(e->key, opset)) continue;
    for (int32_t k = 0; k < f->n_specs; k++)
      if (!strcmp(f->specs[k].opset, e->key))
        return mil_diag_error(r->d, MIL_ERR_FORMAT, "%s: function '%s': block specialization '%s' appears twice",
                              r->file, fname, e->key);
    mil_block *sb = mil_function_add_specialization(f, e->key);
    if (!sb || !(sb->name = block_name(p))) return MIL_ERR_NOMEM;
    if ((st = load_block(s, e->value, sb, true, 0)) != MIL_OK) return st;
  }
  scope_restore(s, mark);
  return MIL_OK;
}

/* ------------------------------------------------------------------------ */
/* what the builder adds: defaults, input order, inferred types and values   */
/* ------------------------------------------------------------------------ */

/* Declared and inferred output types agree when they have the same kind,
 * dtype and rank and no constant dims differ (a rank-0 tensor and a scalar
 * agree: load.py accepts that corner case). */
static bool types_agree(const mil_type *a, const mil_type *b) {
  if (!a || !b || a->kind != b->kind) return false;
  if (a->kind == MIL_TYPE_STATE) return types_agree(a->elem, b->elem);
  if (a->kind != MIL_TYPE_TENSOR) return true;
  if (a->dtype != b->dtype) return false;
  if (a->rank < 0 || b->rank < 0) return true;
  if (a->rank != b->rank) return false;
  for (int32_t i = 0; i < a->rank; i++)
    if (a->dims[i].size >= 0 && b->dims[i].size >= 0 && a->dims[i].size != b->dims[i].size) return false;
  return true;
}

/* coremltools builds each loaded op through its builder, which materializes
 * missing optional inputs as consts, keeps inputs in input-spec order, and
 * runs type and value inference (values print as '*'). The same is done
 * here with the op registry, op by op in program order, nested blocks
 * before their op. Ops the registry does not know, or cannot infer, keep
 * the declared types; an inferred type that contradicts the declared one
 * is not adopted (`mil validate` reports such ops). */
static mil_status refine_block(mil_block *b, int version) {
  for (mil_op *op = b->first; op; op = op->next) {
    for (int32_t i = 0; i < op->n_blocks; i++) {
      mil_status st = refine_block(op->blocks[i], version);
      if (st != MIL_OK) return st;
    }
    if (mil_op_is_const(op) || !mil_op_def_find(op->type, version)) continue;
    if (mil_op_add_defaults(op, NULL) == MIL_ERR_NOMEM) return MIL_ERR_NOMEM;
    mil_op_canonicalize_inputs(op);
    const mil_type *stack[8], **declared = stack;
    if (op->n_outputs > 8 && !(declared = mil_program_alloc(op->program, (size_t)op->n_outputs * sizeof *declared)))
      return MIL_ERR_NOMEM;
    int32_t n = op->n_outputs;
    for (int32_t i = 0; i < n; i++) declared[i] = op->outputs[i]->type;
    mil_status st = mil_op_infer(op, NULL);
    if (st == MIL_ERR_NOMEM) return st;
    bool ok = st == MIL_OK && op->n_outputs == n;
    for (int32_t i = 0; ok && i < n; i++) ok = types_agree(declared[i], op->outputs[i]->type);
    if (!ok) {
      for (int32_t i = 0; i < n && i < op->n_outputs; i++) {
        op->outputs[i]->type = declared[i];
        op->outputs[i]->val = NULL;
        op->outputs[i]->mark = MIL_MARK_NONE;
      }
    }
  }
  return MIL_OK;
}

static mil_status refine_program(mil_program *p) {
  for (int32_t i = 0; i < p->n_functions; i++) {
    mil_function *f = p->functions[i];
    int version = mil_opset_version(f->opset);
    if (version < 0) continue;
    for (int32_t k = 0; k < f->n_specs; k++) {
      int v = mil_opset_version(f->specs[k].opset);
      mil_status st = refine_block(f->specs[k].block, v < 0 ? version : v);
      if (st != MIL_OK) return st;
    }
  }
  return MIL_OK;
}

mil_status io_program_from_proto(const Milproto__Program *pb, int spec_version, io_weights *w, const char *file,
                                 mil_program **out, mil_diag *d) {
  *out = NULL;
  if (!pb) return mil_diag_error(d, MIL_ERR_FORMAT, "%s: the model has no program", file);
  if (pb->version != 1)
    return mil_diag_error(d, MIL_ERR_FORMAT, "%s: Program.version is %lld, expected 1", file, (long long)pb->version);
  mil_program *p = mil_program_new(NULL);
  if (!p) return mil_diag_error(d, MIL_ERR_NOMEM, "%s: out of memory", file);
  io_read r = {p, w, file, d, spec_version, NULL};
  rd s;
  memset(&s, 0, sizeof s);
  s.r = &r;
  s.func = "";
  mil_status st = MIL_OK;
  if (pb->docstring && pb->docstring[0] && !(p->doc_string = mil_program_intern(p, pb->docstring, (size_t)-1)))
    st = MIL_ERR_NOMEM;
  for (size_t i = 0; st == MIL_OK && i < pb->n_functions; i++) {
    const char *fname = pb->functions[i]->key ? pb->functions[i]->key : "";
    if (!fname[0]) {
      st = mil_diag_error(d, MIL_ERR_FORMAT, "%s: function %zu has an empty name", file, i);
      break;
    }
    st = load_function(&s, fname, pb->functions[i]->value);
  }
  for (size_t i = 0; st == MIL_OK && i < pb->n_attributes; i++) {
    const char *k = pb->attributes[i]->key ? pb->attributes[i]->key : "";
    char w2[600];
    io_say(w2, sizeof w2, "%s: program attribute '%s'", file, k);
    const mil_value *v;
    if ((st = io_value_from_proto(&r, pb->attributes[i]->value, w2, &v)) == MIL_OK)
      st = mil_program_set_attr(p, k, v);
  }
  if (st == MIL_OK && pb->n_functions == 0) st = mil_diag_error(d, MIL_ERR_FORMAT, "%s: the program has no functions", file);
  pmap_free(&s.scope);
  pmap_free(&s.counters);
  free(s.log);
  if (st == MIL_OK) st = refine_program(p);
  if (st != MIL_OK) {
    if (st == MIL_ERR_NOMEM) mil_diag_error(d, st, "%s: out of memory while loading the program", file);
    mil_program_free(p);
    return st;
  }
  *out = p;
  return MIL_OK;
}

/* ------------------------------------------------------------------------ */
/* the Model message                                                          */
/* ------------------------------------------------------------------------ */

mil_status io_model_decode(const void *buf, size_t len, const char *file, io_weights *w, mil_model **out,
                           mil_diag *d) {
  *out = NULL;
  io_pb_arena *ar = io_pb_arena_new();
  if (!ar) return mil_diag_error(d, MIL_ERR_NOMEM, "%s: out of memory", file);
  Coreml__Model *pm = (Coreml__Model *)io_proto_unpack_in(buf, len, &coreml__model__descriptor, ar, file, d);
  if (!pm) {
    io_pb_arena_free(ar);
    return MIL_ERR_FORMAT;
  }
  mil_status st = MIL_OK;
  mil_program *prog = NULL;
  if (pm->type_case != COREML__MODEL__TYPE_ML_PROGRAM) {
    const ProtobufCFieldDescriptor *f =
        protobuf_c_message_descriptor_get_field(&coreml__model__descriptor, (unsigned)pm->type_case);
    if (f)
      st = mil_diag_error(d, MIL_ERR_UNSUPPORTED, "%s: not an ML Program model (it is a %s model)", file, f->name);
    else
      st = mil_diag_error(d, MIL_ERR_UNSUPPORTED, "%s: not an ML Program model (Model.Type is not set%s)", file,
                          len ? "" : "; the file is empty");
    goto done;
  }
  int spec = pm->specificationversion;
  if (spec <= 0 || spec > MIL_SPEC_VERSION_MAX) {
    st = mil_diag_error(d, MIL_ERR_UNSUPPORTED, "%s: specificationVersion is %d, expected 1..%d", file, spec,
                        MIL_SPEC_VERSION_MAX);
    goto done;
  }
  if (spec < MIL_SPEC_VERSION_MIN) {
    st = mil_diag_error(d, MIL_ERR_FORMAT, "%s: specificationVersion is %d, but ML Programs need at least %d", file,
                        spec, MIL_SPEC_VERSION_MIN);
    goto done;
  }
  if ((st = io_program_from_proto(pm->mlprogram, spec, w, file, &prog, d)) != MIL_OK) goto done;
  for (int32_t i = 0; i < prog->n_functions; i++) {
    const char *opset = prog->functions[i]->opset;
    int need = mil_spec_version_for_opset(opset);
    if (!need) {
      st = mil_diag_error(d, MIL_ERR_UNSUPPORTED, "%s: function '%s': opset '%s' is not an ML Program opset "
                          "(CoreML5..CoreML9)", file, prog->functions[i]->name, opset);
      goto done;
    }
    if (need > spec) {
      st = mil_diag_error(d, MIL_ERR_FORMAT, "%s: function '%s': opset '%s' needs specificationVersion >= %d, the "
                          "model says %d", file, prog->functions[i]->name, opset, need, spec);
      goto done;
    }
  }
  /* the description outlives the decoded tree: copy it out of the arena,
   * and check the copy (what the model will hold and write back) */
  Coreml__ModelDescription *desc = pm->description ? io_pb_clone(pm->description) : NULL;
  if (pm->description && !desc) {
    st = mil_diag_error(d, MIL_ERR_NOMEM, "%s: out of memory", file);
    goto done;
  }
  if ((st = io_desc_validate(desc, prog, spec, file, d)) != MIL_OK) {
    io_pb_free(desc);
    goto done;
  }
  mil_model *m = calloc(1, sizeof *m);
  if (!m) {
    io_pb_free(desc);
    st = mil_diag_error(d, MIL_ERR_NOMEM, "%s: out of memory", file);
    goto done;
  }
  m->prog = prog;
  prog = NULL;
  m->spec_version = spec;
  m->is_updatable = pm->isupdatable;
  m->desc = desc;
  *out = m;
done:
  mil_program_free(prog);
  io_pb_arena_free(ar);
  return st;
}
