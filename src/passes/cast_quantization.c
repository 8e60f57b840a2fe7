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

bool pass_castq_dtype_allowed(const mil_op *op, const char *param, const char *dtype) {
  int opset = pass_op_opset(op);
  if (opset < 0) opset = MIL_IOS18;
  mil_dtype dt;
  if (!mil_dtype_from_name(dtype, strlen(dtype), &dt)) return false;
  const mil_op_def *def = mil_op_def_find(op->type, opset);
  const mil_input_spec *s = def ? mil_op_def_input(def, param) : NULL;
  if (s && s->dtypes && !(s->dtypes & MIL_DTB(dt))) return false;
  const mil_op_def *cast = mil_op_def_find("cast", opset);
  const mil_input_spec *cx = cast ? mil_op_def_input(cast, "x") : NULL;
  return !cx || !cx->dtypes || (cx->dtypes & MIL_DTB(dt));
}

typedef struct castq_run {
  pass_bld b;
  const pass_castq *q;
  const mil_pass_options *o;
  bool has_skip;
  pass_ptrmap *cache; /* the innermost block's cache */
} castq_run;

static char *cat3(const char *a, const char *b, const char *c) {
  size_t n = strlen(a) + strlen(b) + strlen(c) + 1;
  char *s = malloc(n);
  if (s) snprintf(s, n, "%s%s%s", a, b, c);
  return s;
}

/* A cast of var to dtype named name before op (value fixed up by the
 * policy). NULL after recording the error. */
static mil_var *make_cast(castq_run *r, mil_op *op, mil_var *var, const char *dtype, const char *name,
                          mil_status *st) {
  mil_value *dv = pass_bld_str(r->b.p, dtype);
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

/* coremltools' CastTypeQuantization.transform_op. Returns 1 when op was
 * rebuilt, 0 when nothing was cast, -(status). */
static int transform(castq_run *r, mil_op *op) {
  const pass_castq *q = r->q;
  mil_program *p = r->b.p;
  mil_status st = MIL_OK;
  int32_t n_in = op->n_inputs;
  /* the new op's arguments: one per binding (tuple inputs keep theirs) */
  pass_barg *args = calloc((size_t)n_in + 1, sizeof *args);
  mil_var ***tuples = calloc((size_t)n_in + 1, sizeof *tuples);
  if (!args || !tuples) goto oom;
  bool modified = false;
  int32_t n_args = 0;
  for (int32_t i = 0; i < n_in; i++) {
    const mil_input *in = &op->inputs[i];
    if (in->n_args < 1) continue;
    pass_barg *a = &args[n_args++];
    a->name = in->name;
    mil_var **vars = NULL;
    if (in->is_tuple) {
      if (!(vars = tuples[i] = calloc((size_t)in->n_args + 1, sizeof *vars))) goto oom;
      for (int32_t k = 0; k < in->n_args; k++) vars[k] = in->args[k].use.var;
      a->vars = vars;
      a->n = in->n_args;
    } else if (in->args[0].use.var) {
      a->var = in->args[0].use.var;
    } else {
      a->val = in->args[0].value;
      continue;
    }
    const char *tgt = q->should_cast(q, op, in);
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
      char *name = cat3(v->name, "_to_", tgt);
      if (!name) goto oom;
      const char *iname = mil_program_intern(p, name, (size_t)-1);
      free(name);
      if (!iname) goto oom;
      bool shared = pass_n_op_uses(v) > 1;
      mil_var *x = shared ? pass_ptrmap_get(r->cache, iname) : NULL;
      if (!x) {
        x = make_cast(r, op, v, tgt, iname, &st);
        if (!x) goto fail;
        if (shared && !pass_ptrmap_put(r->cache, iname, x)) goto oom;
      }
      if (in->is_tuple) vars[k] = x;
      else a->var = x;
    }
  }
  if (!modified) {
    for (int32_t i = 0; i < n_in; i++) free(tuples[i]);
    free(tuples);
    free(args);
    return 0;
  }
  char *nname = cat3(op->name, "_cast_", q->target);
  if (!nname) goto oom;
  mil_op *nop = pass_bld_op(&r->b, NULL, op, op->type, nname, n_args, args, &st);
  free(nname);
  for (int32_t i = 0; i < n_in; i++) free(tuples[i]);
  free(tuples);
  free(args);
  args = NULL;
  tuples = NULL;
  if (!nop) return -(int)st;
  for (int32_t i = 0; i < op->n_outputs && i < nop->n_outputs; i++) {
    mil_var *old = op->outputs[i], *nv = nop->outputs[i];
    mil_var *repl = nv;
    if (pass_castq_is_of(old, q->origin_dt) && !pass_castq_is_of(nv, q->origin_dt)) {
      char *cn = cat3(nv->name, "_to_", q->origin);
      if (!cn) return -(int)mil_diag_error(r->b.d, MIL_ERR_NOMEM, "%s: out of memory", q->pass);
      repl = make_cast(r, op, nv, q->origin, cn, &st);
      free(cn);
      if (!repl) return -(int)st;
    }
    pass_replace_uses_after(op, old, repl);
  }
  st = pass_remove_ops(&op, 1, r->b.d);
  return st != MIL_OK ? -(int)st : 1;
oom:
  st = mil_diag_error(r->b.d, MIL_ERR_NOMEM, "%s: out of memory", q->pass);
fail:
  if (tuples)
    for (int32_t i = 0; i < n_in; i++) free(tuples[i]);
  free(tuples);
  free(args);
  return -(int)st;
}

static bool selected(const castq_run *r, const mil_op *op) {
  if (mil_pass_opt_is_set(r->o, "op_selector")) return mil_pass_opt_selects(r->o, "op_selector", op);
  return !(r->has_skip && mil_pass_opt_list_has(r->o, "skip_ops_by_type", op->type));
}

static int walk_block(castq_run *r, mil_block *b, int depth) {
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
    if (r->q->is_valid_op(r->q, op) && selected(r, op)) {
      int t = transform(r, op);
      if (t < 0) rc = t;
      else r->b.changes += t;
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
  castq_run r = {.b = {.p = p, .d = d, .pass = q->pass}, .q = q, .o = o, .has_skip = has_skip_option};
  mil_status st = MIL_OK;
  for (int32_t i = 0; i < p->n_functions && st == MIL_OK; i++) {
    mil_function *f = p->functions[i];
    for (int32_t s = 0; s < f->n_specs && st == MIL_OK; s++) {
      int rc = walk_block(&r, f->specs[s].block, 0);
      if (rc < 0) st = (mil_status)(-rc);
    }
  }
  pass_bld_free(&r.b);
  if (stats) stats->changes += r.b.changes;
  return st;
}
