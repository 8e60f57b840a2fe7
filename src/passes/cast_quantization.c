/* The shared transform of add_fp16_cast and add_int16_cast. See
 * cast_quantization_internal.h.
 *
 * Per block a cache maps "<var>_to_<dtype>" to the cast made for a var
 * that several ops read, so they share one cast (coremltools keeps one
 * dict per block being walked; the cache is looked at only while the var
 * still has more than one reading op binding).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "passes/cast_quantization_internal.h"

bool pass_castq_is_of(const mil_var *v, mil_dtype dt) {
  return v && v->type && v->type->kind == MIL_TYPE_TENSOR && v->type->dtype == dt;
}

static bool dtype_allowed(const mil_op *op, int opset, const char *param, const char *dtype) {
  mil_dtype dt;
  if (!mil_dtype_from_name(dtype, strlen(dtype), &dt)) return false;
  const mil_op_def *def = mil_op_def_find(op->type, opset);
  const mil_input_spec *s = def ? mil_op_def_input(def, param) : NULL;
  if (s && s->dtypes && !(s->dtypes & MIL_DTB(dt))) return false;
  const mil_op_def *cast = mil_op_def_find("cast", opset);
  const mil_input_spec *cx = cast ? mil_op_def_input(cast, "x") : NULL;
  return !cx || !cx->dtypes || (cx->dtypes & MIL_DTB(dt));
}

#define ALLOWED_SLOTS 256

struct pass_castq_state {
  pass_bld b;
  const pass_castq *q;
  const mil_pass_options *o;
  bool has_selector;         /* op_selector is set */
  const char *const *skip;   /* skip_ops_by_type items (when the pass has it) */
  int32_t n_skip;
  pass_ptrmap type_ok;       /* interned op type -> TYPE_YES / TYPE_NO */
  pass_ptrmap *cache;        /* the innermost block's cache */
  /* buffers reused from op to op */
  pass_barg *args;
  int32_t cap_args;
  mil_var **vars; /* the bindings of tuple inputs, one run per input */
  int32_t cap_vars;
  char *name; /* names being composed */
  size_t cap_name;
  /* the dtype string values of the casts made so far (values are never
   * changed in place, so the consts share them) */
  const char *dt_name[4];
  mil_value *dt_val[4];
  struct allowed_slot {
    const char *type, *param, *dtype;
    int opset;
    bool yes;
  } allowed[ALLOWED_SLOTS]; /* pass_castq_dtype_allowed's answers */
};

#define TYPE_YES ((void *)1)
#define TYPE_NO ((void *)2)

bool pass_castq_dtype_allowed(pass_castq_state *r, const mil_op *op, const char *param, const char *dtype) {
  int opset = pass_op_opset(op);
  if (opset < 0) opset = MIL_IOS18;
  if (!r) return dtype_allowed(op, opset, param, dtype);
  /* the op type and input name are interned in the program being run on */
  uintptr_t h = (uintptr_t)op->type * 31u ^ (uintptr_t)param * 7u ^ (uintptr_t)dtype ^ (uintptr_t)opset;
  struct allowed_slot *s = &r->allowed[(h ^ (h >> 11)) & (ALLOWED_SLOTS - 1)];
  if (s->type == op->type && s->param == param && s->dtype == dtype && s->opset == opset) return s->yes;
  bool yes = dtype_allowed(op, opset, param, dtype);
  *s = (struct allowed_slot){op->type, param, dtype, opset, yes};
  return yes;
}

/* r->name = a + b + c; false on out of memory. */
static bool cat3(pass_castq_state *r, const char *a, const char *b, const char *c, size_t *len) {
  size_t la = strlen(a), lb = strlen(b), lc = strlen(c), n = la + lb + lc + 1;
  if (n > r->cap_name) {
    size_t cap = n < 256 ? 256 : n * 2;
    char *s = realloc(r->name, cap);
    if (!s) return false;
    r->name = s;
    r->cap_name = cap;
  }
  memcpy(r->name, a, la);
  memcpy(r->name + la, b, lb);
  memcpy(r->name + la + lb, c, lc);
  r->name[n - 1] = 0;
  if (len) *len = n - 1;
  return true;
}

/* A cast of var to dtype named name before op (value fixed up by the
 * policy). NULL after recording the error. */
static mil_var *make_cast(pass_castq_state *r, mil_op *op, mil_var *var, const char *dtype, const char *name,
                          mil_status *st) {
  mil_value *dv = NULL;
  int i = 0;
  while (i < 4 && r->dt_name[i] && r->dt_name[i] != dtype) i++;
  if (i < 4 && r->dt_name[i]) dv = r->dt_val[i];
  else if ((dv = pass_bld_str(r->b.p, dtype)) && i < 4) {
    r->dt_name[i] = dtype;
    r->dt_val[i] = dv;
  }
  if (!dv) {
    *st = mil_diag_error(r->b.d, MIL_ERR_NOMEM, "%s: out of memory", r->q->pass);
    return NULL;
  }
  pass_barg a[] = {PASS_BV("x", var), PASS_BK("dtype", dv)};
  mil_var *x = pass_bld_var(&r->b, NULL, op, "cast", name, 2, a, st);
  if (x && x->val && r->q->fix_value && !r->q->fix_value(r->q, r->b.p, x, var)) {
    *st = mil_diag_error(r->b.d, MIL_ERR_NOMEM, "%s: out of memory", r->q->pass);
    return NULL;
  }
  return x;
}

/* Room for n arguments and n_vars tuple bindings in r's buffers. */
static bool reserve(pass_castq_state *r, int32_t n, int32_t n_vars) {
  if (n > r->cap_args) {
    int32_t cap = n < 16 ? 16 : n * 2;
    pass_barg *a = realloc(r->args, (size_t)cap * sizeof *a);
    if (!a) return false;
    r->args = a;
    r->cap_args = cap;
  }
  if (n_vars > r->cap_vars) {
    int32_t cap = n_vars < 16 ? 16 : n_vars * 2;
    mil_var **v = realloc(r->vars, (size_t)cap * sizeof *v);
    if (!v) return false;
    r->vars = v;
    r->cap_vars = cap;
  }
  return true;
}

/* coremltools' CastTypeQuantization.transform_op. Returns 1 when op was
 * rebuilt, 0 when nothing was cast, -(status). */
static int transform(pass_castq_state *r, mil_op *op) {
  const pass_castq *q = r->q;
  mil_program *p = r->b.p;
  mil_status st = MIL_OK;
  int32_t n_in = op->n_inputs, n_vars = 0;
  for (int32_t i = 0; i < n_in; i++)
    if (op->inputs[i].is_tuple) n_vars += op->inputs[i].n_args;
  /* the new op's arguments: one per binding (tuple inputs keep theirs) */
  if (!reserve(r, n_in + 1, n_vars + 1)) goto oom;
  pass_barg *args = r->args;
  bool modified = false;
  int32_t n_args = 0, used_vars = 0;
  for (int32_t i = 0; i < n_in; i++) {
    const mil_input *in = &op->inputs[i];
    if (in->n_args < 1) continue;
    pass_barg *a = &args[n_args++];
    *a = (pass_barg){.name = in->name};
    mil_var **vars = NULL;
    if (in->is_tuple) {
      vars = r->vars + used_vars;
      used_vars += in->n_args;
      for (int32_t k = 0; k < in->n_args; k++) vars[k] = in->args[k].use.var;
      a->vars = vars;
      a->n = in->n_args;
    } else if (in->args[0].use.var) {
      a->var = in->args[0].use.var;
    } else {
      a->val = in->args[0].value;
      continue;
    }
    const char *tgt = q->should_cast(q, r, op, in);
    if (!tgt) continue;
    for (int32_t k = 0; k < in->n_args; k++) {
      mil_var *v = in->args[k].use.var;
      if (!v) continue;
      const mil_value *sv = v->val;
      if (pass_castq_is_of(v, MIL_DT_STRING) && sv && sv->numel == 1 && strcmp(mil_value_get_str(sv, 0), "int32") == 0) {
        /* a dtype given as a string: ask for the 16-bit one */
        modified = true;
        if (!in->is_tuple) {
          a->var = NULL;
          a->val = pass_bld_str(p, strcmp(op->type, "topk") == 0 ? "uint16" : "int16");
          if (!a->val) goto oom;
        }
        continue;
      }
      if (!pass_castq_is_of(v, q->origin_dt)) continue;
      modified = true;
      size_t len;
      if (!cat3(r, v->name, "_to_", tgt, &len)) goto oom;
      /* a var read by several ops shares one cast, found by name */
      bool shared = pass_n_op_uses(v) > 1;
      const char *key = shared ? mil_program_intern(p, r->name, len) : NULL;
      if (shared && !key) goto oom;
      mil_var *x = shared ? pass_ptrmap_get(r->cache, key) : NULL;
      if (!x) {
        x = make_cast(r, op, v, tgt, shared ? key : r->name, &st);
        if (!x) return -(int)st;
        if (shared && !pass_ptrmap_put(r->cache, key, x)) goto oom;
      }
      if (in->is_tuple) vars[k] = x;
      else a->var = x;
    }
  }
  if (!modified) return 0;
  if (!cat3(r, op->name, "_cast_", q->target, NULL)) goto oom;
  mil_op *nop = pass_bld_op(&r->b, NULL, op, op->type, r->name, n_args, args, &st);
  if (!nop) return -(int)st;
  for (int32_t i = 0; i < op->n_outputs && i < nop->n_outputs; i++) {
    mil_var *old = op->outputs[i], *nv = nop->outputs[i];
    mil_var *repl = nv;
    if (pass_castq_is_of(old, q->origin_dt) && !pass_castq_is_of(nv, q->origin_dt)) {
      if (!cat3(r, nv->name, "_to_", q->origin, NULL)) goto oom;
      repl = make_cast(r, op, nv, q->origin, r->name, &st);
      if (!repl) return -(int)st;
    }
    pass_replace_uses_after(op, old, repl);
  }
  /* the usual case, every output now unused, needs no bookkeeping */
  bool unused = op->n_blocks == 0;
  for (int32_t i = 0; i < op->n_outputs && unused; i++) unused = op->outputs[i]->n_uses == 0;
  if (unused) st = mil_op_remove(op);
  else st = pass_remove_ops(&op, 1, r->b.d);
  return st != MIL_OK ? -(int)st : 1;
oom:
  return -(int)mil_diag_error(r->b.d, MIL_ERR_NOMEM, "%s: out of memory", q->pass);
}

/* The per-type part of the policy and of the options, kept per interned
 * type. */
static bool type_selected(pass_castq_state *r, const char *type, bool *ok) {
  void *k = pass_ptrmap_get(&r->type_ok, type);
  if (k) {
    *ok = k == TYPE_YES;
    return true;
  }
  bool yes = r->q->type_ok(type);
  for (int32_t i = 0; yes && !r->has_selector && i < r->n_skip; i++)
    if (strcmp(r->skip[i], type) == 0) yes = false;
  *ok = yes;
  return pass_ptrmap_put(&r->type_ok, type, yes ? TYPE_YES : TYPE_NO);
}

static int walk_block(pass_castq_state *r, mil_block *b, int depth) {
  if (depth > PASS_MAX_DEPTH) {
    mil_diag_error(r->b.d, MIL_ERR_UNSUPPORTED, "%s: blocks nested deeper than %d levels", r->q->pass, PASS_MAX_DEPTH);
    return -(int)MIL_ERR_UNSUPPORTED;
  }
  pass_ptrmap cache = {0}, *outer = r->cache;
  mil_op **ops = malloc(((size_t)b->n_ops + 1) * sizeof *ops);
  if (!ops) {
    mil_diag_error(r->b.d, MIL_ERR_NOMEM, "%s: out of memory", r->q->pass);
    return -(int)MIL_ERR_NOMEM;
  }
  int32_t n = 0;
  for (mil_op *op = b->first; op && n < b->n_ops; op = op->next) ops[n++] = op;
  int rc = 0;
  for (int32_t i = 0; i < n && rc >= 0; i++) {
    mil_op *op = ops[i];
    if (op->block != b) continue;
    for (int32_t k = 0; k < op->n_blocks && rc >= 0; k++) rc = walk_block(r, op->blocks[k], depth + 1);
    if (rc < 0) break;
    r->cache = &cache;
    bool ok;
    if (!type_selected(r, op->type, &ok)) {
      rc = -(int)mil_diag_error(r->b.d, MIL_ERR_NOMEM, "%s: out of memory", r->q->pass);
      break;
    }
    if (ok && (!r->q->is_valid_op || r->q->is_valid_op(r->q, op)) &&
        (!r->has_selector || mil_pass_opt_selects(r->o, "op_selector", op))) {
      int t = transform(r, op);
      if (t < 0) rc = t;
      else r->b.changes += t;
      /* the values of the ops just replaced (an fp32 weight's transposed
       * copy, its cast back to fp32) are given back as the pass goes, not
       * after it: on a large model they would add up to a sizable part of
       * the weights */
      if (t > 0) mil_program_collect_garbage(r->b.p, true);
    }
  }
  r->cache = outer;
  pass_ptrmap_free(&cache);
  free(ops);
  return rc;
}

mil_status pass_castq_run(const pass_castq *q, mil_program *p, const mil_pass_options *o, bool has_skip_option,
                          mil_pass_stats *stats, mil_diag *d) {
  if (has_skip_option && mil_pass_opt_is_set(o, "op_selector")) {
    const char *const *items = NULL;
    int32_t n = mil_pass_opt_list(o, "skip_ops_by_type", &items);
    for (int32_t i = 0; i < n; i++)
      if (items[i] && items[i][0])
        return mil_diag_error(d, MIL_ERR_INVALID,
                              "%s: the option skip_ops_by_type cannot be set together with op_selector; use one of "
                              "them to choose the ops",
                              q->pass);
  }
  pass_castq_state r = {.b = {.p = p, .d = d, .pass = q->pass}, .q = q, .o = o};
  r.has_selector = mil_pass_opt_is_set(o, "op_selector");
  if (has_skip_option && !r.has_selector) r.n_skip = mil_pass_opt_list(o, "skip_ops_by_type", &r.skip);
  mil_status st = MIL_OK;
  for (int32_t i = 0; i < p->n_functions && st == MIL_OK; i++) {
    mil_function *f = p->functions[i];
    for (int32_t s = 0; s < f->n_specs && st == MIL_OK; s++) {
      int rc = walk_block(&r, f->specs[s].block, 0);
      if (rc < 0) st = (mil_status)(-rc);
    }
  }
  pass_bld_free(&r.b);
  pass_ptrmap_free(&r.type_ok);
  free(r.args);
  free(r.vars);
  free(r.name);
  if (stats) stats->changes += r.b.changes;
  return st;
}
