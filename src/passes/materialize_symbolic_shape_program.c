/* common::materialize_symbolic_shape_program — add functions that are
 * copies of a symbolic-shape function with some input shapes fixed, so
 * the fixed-shape copies can be optimized further (a multifunction model).
 *
 * With function_name_to_materialization_map = {"fixed": {"x": [5]}}:
 *
 *   main[CoreML8](%x: (is0,fp32)(Tensor)) {
 *     block0() {
 *       %s: (1,int32)^(Tensor) = shape(x=%x, name="s")
 *       %one: (int32)*(Scalar) = const(val=1, name="one")
 *       %d: (1,int32)(Tensor) = sub(x=%s, y=%one, name="d")
 *     } -> (%d)
 *   }
 *
 * gains
 *
 *   fixed[CoreML8](%x: (5,fp32)(Tensor)) {
 *     block1() {
 *       %s: (1,int32)*(Tensor) = shape(x=%x, name="s")
 *       %one: (int32)*(Scalar) = const(val=1, name="one")
 *       %d: (1,int32)*(Tensor) = sub(x=%s, y=%one, name="d")
 *     } -> (%d)
 *   }
 *
 * The input shapes given for a new function fix symbols (every input
 * sharing a symbol gets the same size); giving two sizes to one symbol or
 * a size that differs from an already fixed dim is an error. Every op of
 * the source function is built again, in order, with the source names and
 * types inferred from the fixed shapes; a const is copied just before its
 * first reader. A new function whose name is taken replaces that function
 * in place; others are appended in the order of the map.
 *
 * Options: function_name_to_materialization_map (JSON: new function name
 * -> {input name -> list of ints}; required) and source_function_name
 * (default "main").
 *
 * Errors: MIL_ERR_INVALID (no map, a malformed map, an unknown source
 * function, inconsistent sizes), MIL_ERR_UNSUPPORTED (an op with nested
 * blocks, which coremltools cannot rebuild either), type errors of ops
 * that no longer type-check, MIL_ERR_NOMEM.
 *
 * Mirrors coremltools/converters/mil/mil/passes/defs/symbol_transform.py
 * (materialize_symbolic_shape_program).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "passes/pass_internal.h"

#define PASS "materialize_symbolic_shape_program"

/* symbol (interned) -> size + 1 (0 = not fixed) */
typedef struct symmap {
  pass_ptrmap m;
} symmap;

static bool sym_get(const symmap *s, const char *sym, int64_t *out) {
  uintptr_t v = (uintptr_t)pass_ptrmap_get(&s->m, sym);
  if (!v) return false;
  *out = (int64_t)(v - 1);
  return true;
}

static const mil_type *input_tensor_type(const mil_var *v) {
  const mil_type *t = v->type;
  if (t && t->kind == MIL_TYPE_STATE) t = t->elem;
  return t && t->kind == MIL_TYPE_TENSOR ? t : NULL;
}

/* coremltools' _canonicalize_materialization_map for one new function. */
static mil_status canonical_map(const mil_function *src, const char *fname, const cJSON *inputs, symmap *out,
                                mil_program *p, mil_diag *d) {
  if (!cJSON_IsObject(inputs))
    return mil_diag_error(d, MIL_ERR_INVALID, PASS ": the materialization map of new function '%s' must be an object",
                          fname);
  for (const cJSON *e = inputs->child; e; e = e->next) {
    if (!cJSON_IsArray(e)) return mil_diag_error(d, MIL_ERR_INVALID, PASS ": shape of input '%s' must be a list", e->string);
    for (const cJSON *k = e->child; k; k = k->next)
      if (!cJSON_IsNumber(k) || k->valuedouble != floor(k->valuedouble) || fabs(k->valuedouble) > 9e15)
        return mil_diag_error(d, MIL_ERR_INVALID, PASS ": shape of input '%s' must hold ints", e->string);
  }
  for (int32_t i = 0; i < src->n_inputs; i++) {
    const mil_var *v = src->inputs[i];
    const cJSON *shape = cJSON_GetObjectItemCaseSensitive(inputs, v->name);
    const mil_type *t = input_tensor_type(v);
    if (!shape || !t || t->rank < 0) continue;
    const cJSON *k = shape->child;
    for (int32_t j = 0; j < t->rank && k; j++, k = k->next) {
      int64_t want = (int64_t)k->valuedouble;
      const mil_dim *dim = &t->dims[j];
      if (dim->sym) {
        int64_t have;
        if (sym_get(out, dim->sym, &have)) {
          if (have != want)
            return mil_diag_error(d, MIL_ERR_INVALID,
                                  PASS ": new function '%s': symbol %s is to be materialized into %lld and %lld", fname,
                                  dim->sym, (long long)have, (long long)want);
        } else {
          const char *sym = mil_program_intern(p, dim->sym, (size_t)-1);
          if (!sym || !pass_ptrmap_put(&out->m, sym, (void *)(uintptr_t)(want + 1)))
            return mil_diag_error(d, MIL_ERR_NOMEM, PASS ": out of memory");
        }
      } else if (dim->size != want) {
        return mil_diag_error(d, MIL_ERR_INVALID,
                              PASS ": new function '%s', input '%s': dim %d is fixed at %lld, cannot become %lld", fname,
                              v->name, j, (long long)dim->size, (long long)want);
      }
    }
  }
  return MIL_OK;
}

static const mil_type *materialize_type(mil_program *p, const mil_type *t, const symmap *s) {
  if (t->kind == MIL_TYPE_STATE) {
    const mil_type *e = materialize_type(p, t->elem, s);
    return e ? mil_type_state(p, e) : NULL;
  }
  if (t->kind != MIL_TYPE_TENSOR || t->rank <= 0 || t->rank > 64) return t;
  mil_dim dims[64];
  for (int32_t i = 0; i < t->rank; i++) {
    dims[i] = t->dims[i];
    int64_t v;
    if (dims[i].sym && sym_get(s, mil_program_intern(p, dims[i].sym, (size_t)-1), &v)) {
      dims[i].size = v;
      dims[i].sym = NULL;
    }
  }
  if (t->is_scalar) return t;
  return mil_type_tensor(p, t->dtype, t->rank, dims);
}

typedef struct copier {
  pass_bld *c;
  mil_block *dst;
  pass_ptrmap map; /* source var -> target var */
} copier;

/* The target var standing for source var v (copying a const on demand). */
static mil_var *target_of(copier *k, mil_var *v, mil_status *st) {
  mil_var *t = pass_ptrmap_get(&k->map, v);
  if (t) return t;
  if (!v->op || !mil_op_is_const(v->op) || !v->val) {
    *st = mil_diag_error(k->c->d, MIL_ERR_INVALID, PASS ": %%%s is used before it is defined", v->name);
    return NULL;
  }
  mil_op *cop = mil_const_new(k->c->p, v->name, v->val);
  if (!cop) goto oom;
  for (int32_t i = 0; i < v->op->n_attrs; i++) mil_op_set_attr(cop, v->op->attrs[i].name, v->op->attrs[i].value);
  mil_block_append(k->dst, cop);
  if (!pass_ptrmap_put(&k->map, v, cop->outputs[0])) goto oom;
  return cop->outputs[0];
oom:
  *st = mil_diag_error(k->c->d, MIL_ERR_NOMEM, PASS ": out of memory");
  return NULL;
}

static mil_status copy_op(copier *k, mil_op *op) {
  mil_program *p = k->c->p;
  mil_status st = MIL_OK;
  if (op->n_blocks > 0)
    return mil_diag_error(k->c->d, MIL_ERR_UNSUPPORTED, PASS ": op '%s' (%s) has nested blocks, which cannot be rebuilt",
                          op->name, op->type);
  mil_op *n = mil_op_new(p, op->type, op->name);
  if (!n) return mil_diag_error(k->c->d, MIL_ERR_NOMEM, PASS ": out of memory");
  /* the consts first (they go before the op) */
  for (int32_t i = 0; i < op->n_inputs; i++)
    for (int32_t a = 0; a < op->inputs[i].n_args; a++)
      if (op->inputs[i].args[a].use.var && !target_of(k, op->inputs[i].args[a].use.var, &st)) return st;
  mil_block_append(k->dst, n);
  for (int32_t i = 0; i < op->n_inputs; i++) {
    const mil_input *in = &op->inputs[i];
    mil_input *ni = mil_op_add_input_slots(n, in->name, in->n_args, in->is_tuple);
    if (!ni) return mil_diag_error(k->c->d, MIL_ERR_NOMEM, PASS ": out of memory");
    for (int32_t a = 0; a < in->n_args; a++) {
      if (in->args[a].use.var) mil_arg_set_var(n, &ni->args[a], target_of(k, in->args[a].use.var, &st));
      else ni->args[a].value = in->args[a].value;
    }
  }
  for (int32_t i = 0; i < op->n_attrs; i++) mil_op_set_attr(n, op->attrs[i].name, op->attrs[i].value);
  st = pass_finish_op(n, k->c->d);
  if (st != MIL_OK) return st;
  for (int32_t i = 0; i < op->n_outputs && i < n->n_outputs; i++) {
    n->outputs[i]->name = op->outputs[i]->name;
    if (!pass_ptrmap_put(&k->map, op->outputs[i], n->outputs[i]))
      return mil_diag_error(k->c->d, MIL_ERR_NOMEM, PASS ": out of memory");
  }
  return MIL_OK;
}

/* Builds the materialized copy of src as a new function appended to the
 * program under a temporary name; returns it or NULL. */
static mil_function *build(pass_bld *c, mil_function *src, const symmap *s, mil_status *st) {
  mil_program *p = c->p;
  char tmp[64];
  mil_function *f = NULL;
  for (int i = 0; i < 1000000 && !f; i++) {
    snprintf(tmp, sizeof tmp, "__materialize_%d", i);
    if (!mil_program_find_function(p, tmp)) f = mil_function_new(p, tmp, src->opset);
  }
  if (!f) {
    *st = mil_diag_error(c->d, MIL_ERR_NOMEM, PASS ": out of memory");
    return NULL;
  }
  if (src->n_attrs > 0) {
    /* keep the function attributes */
    mil_attr *na = mil_program_alloc(p, (size_t)src->n_attrs * sizeof *na);
    if (na) {
      memcpy(na, src->attrs, (size_t)src->n_attrs * sizeof *na);
      f->attrs = na;
      f->n_attrs = src->n_attrs;
    }
  }
  copier k = {c, mil_function_body(f), {0}};
  mil_block *sb = mil_function_body(src);
  *st = MIL_OK;
  for (int32_t i = 0; i < src->n_inputs && *st == MIL_OK; i++) {
    const mil_type *t = materialize_type(p, src->inputs[i]->type, s);
    mil_var *nv = t ? mil_function_add_input(f, src->inputs[i]->name, t) : NULL;
    if (!nv || !pass_ptrmap_put(&k.map, src->inputs[i], nv)) *st = mil_diag_error(c->d, MIL_ERR_NOMEM, PASS ": out of memory");
  }
  for (mil_op *op = sb ? sb->first : NULL; op && *st == MIL_OK; op = op->next)
    if (!mil_op_is_const(op)) *st = copy_op(&k, op);
  if (*st == MIL_OK && sb) {
    mil_var **outs = malloc(((size_t)sb->n_outputs + 1) * sizeof *outs);
    if (!outs) *st = mil_diag_error(c->d, MIL_ERR_NOMEM, PASS ": out of memory");
    for (int32_t i = 0; outs && i < sb->n_outputs && *st == MIL_OK; i++)
      if (!(outs[i] = target_of(&k, sb->outputs[i].var, st))) break;
    if (outs && *st == MIL_OK) *st = mil_block_set_outputs(k.dst, sb->n_outputs, outs);
    free(outs);
  }
  pass_ptrmap_free(&k.map);
  return *st == MIL_OK ? f : NULL;
}

/* Puts the function last in the array under `name`, replacing a function
 * of that name in place. */
static void install(mil_program *p, mil_function *f, const char *name) {
  int32_t last = p->n_functions - 1;
  for (int32_t i = 0; i < last; i++)
    if (strcmp(p->functions[i]->name, name) == 0) {
      p->functions[i] = f;
      p->n_functions--;
      f->name = name;
      return;
    }
  f->name = name;
}

static mil_status run(mil_program *p, const mil_pass_options *o, mil_pass_stats *stats, mil_diag *d) {
  const char *json = mil_pass_opt_json(o, "function_name_to_materialization_map");
  const char *src_name = mil_pass_opt_string(o, "source_function_name");
  if (!src_name) src_name = "main";
  if (!json)
    return mil_diag_error(d, MIL_ERR_INVALID, PASS ": the option function_name_to_materialization_map is not set");
  mil_function *src = mil_program_find_function(p, src_name);
  if (!src) return mil_diag_error(d, MIL_ERR_INVALID, PASS ": source function '%s' not found", src_name);
  cJSON *root = cJSON_Parse(json);
  if (!cJSON_IsObject(root)) {
    cJSON_Delete(root);
    return mil_diag_error(d, MIL_ERR_INVALID, PASS ": function_name_to_materialization_map must be a JSON object");
  }
  int32_t n = cJSON_GetArraySize(root);
  symmap *maps = calloc((size_t)n + 1, sizeof *maps);
  if (!maps) {
    cJSON_Delete(root);
    return mil_diag_error(d, MIL_ERR_NOMEM, PASS ": out of memory");
  }
  mil_status st = MIL_OK;
  int32_t i = 0;
  for (const cJSON *e = root->child; e && st == MIL_OK; e = e->next, i++)
    st = canonical_map(src, e->string, e, &maps[i], p, d);
  pass_bld c = {.p = p, .d = d, .pass = PASS};
  i = 0;
  /* every copy is built from the source as it was before any replacement */
  mil_function **built = calloc((size_t)n + 1, sizeof *built);
  if (!built && st == MIL_OK) st = mil_diag_error(d, MIL_ERR_NOMEM, PASS ": out of memory");
  for (const cJSON *e = root->child; e && st == MIL_OK; e = e->next, i++) built[i] = build(&c, src, &maps[i], &st);
  i = 0;
  for (const cJSON *e = root->child; e && st == MIL_OK; e = e->next, i++) {
    const char *name = mil_program_intern(p, e->string, (size_t)-1);
    if (!name) {
      st = mil_diag_error(d, MIL_ERR_NOMEM, PASS ": out of memory");
      break;
    }
    /* move the copy to the end, then install it */
    int32_t at = -1;
    for (int32_t k = 0; k < p->n_functions; k++)
      if (p->functions[k] == built[i]) at = k;
    if (at < 0) continue;
    memmove(&p->functions[at], &p->functions[at + 1], (size_t)(p->n_functions - at - 1) * sizeof *p->functions);
    p->functions[p->n_functions - 1] = built[i];
    install(p, built[i], name);
    if (stats) stats->changes++;
  }
  if (st != MIL_OK && built) {
    /* drop the copies not installed */
    for (int32_t k = 0; k < n; k++)
      for (int32_t j = 0; built[k] && j < p->n_functions; j++)
        if (p->functions[j] == built[k] && strncmp(built[k]->name, "__materialize_", 14) == 0) {
          memmove(&p->functions[j], &p->functions[j + 1], (size_t)(p->n_functions - j - 1) * sizeof *p->functions);
          p->n_functions--;
          break;
        }
  }
  mil_program_recount_ops(p); /* functions were replaced or dropped in place */
  for (int32_t k = 0; k < n; k++) pass_ptrmap_free(&maps[k].m);
  free(maps);
  free(built);
  pass_bld_free(&c);
  cJSON_Delete(root);
  return st;
}

static const mil_pass_option_def k_options[] = {
    {"function_name_to_materialization_map", MIL_POPT_JSON, NULL, false, false, 0, 0,
     "new function name -> {input name -> fixed shape}"},
    {"source_function_name", MIL_POPT_STRING, "main", false, false, 0, 0, "the function whose shapes get fixed"},
};

const mil_pass_def pass_def_materialize_symbolic_shape_program = {
    "common::" PASS, "add functions with the symbolic input shapes fixed", k_options, 2, run, NULL};
