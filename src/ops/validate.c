/* The program validator: structure (mil_program_verify) plus the op
 * registry's checks on every op, and declared-vs-inferred output types. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/ops_internal.h"

/* Declared dim d vs inferred dim e: equal sizes; an inferred symbol (fresh
 * or propagated) matches any non-constant declared dim. */
static bool dim_match(const mil_dim *d, const mil_dim *e) {
  if (e->size >= 0) return d->size == e->size;
  return d->size < 0;
}

static bool type_match(const mil_type *d, const mil_type *e) {
  if (!d || !e) return d == e;
  if (d->kind != e->kind) return false;
  switch (d->kind) {
  case MIL_TYPE_TENSOR:
    if (d->dtype != e->dtype) return false;
    if (e->rank < 0 || d->rank < 0) return true;
    if (d->rank != e->rank) return false;
    for (int32_t i = 0; i < d->rank; i++)
      if (!dim_match(&d->dims[i], &e->dims[i])) return false;
    return true;
  case MIL_TYPE_LIST:
    return (e->length.size < 0 || d->length.size == e->length.size) &&
           (e->elem == NULL || e->elem->kind == MIL_TYPE_UNKNOWN || type_match(d->elem, e->elem));
  case MIL_TYPE_STATE: return type_match(d->elem, e->elem);
  case MIL_TYPE_TUPLE:
    if (d->n_elems != e->n_elems) return false;
    for (int32_t i = 0; i < d->n_elems; i++)
      if (!type_match(d->elems[i], e->elems[i])) return false;
    return true;
  case MIL_TYPE_DICT: /* "(dict)", as coremltools prints any dict, reads back with unknown key and value */
    return (!d->elem || d->elem->kind == MIL_TYPE_UNKNOWN || type_match(d->elem, e->elem)) &&
           (!d->value || d->value->kind == MIL_TYPE_UNKNOWN || type_match(d->value, e->value));
  case MIL_TYPE_UNKNOWN: return true;
  }
  return false;
}

typedef struct vstate {
  mil_diag *d;
  size_t errors;
  mil_var **lent; /* outputs given their inferred value for the walk (reset after it) */
  size_t n_lent, cap_lent;
} vstate;

/* coremltools' value inference: an op's output whose value inference knows
 * it (logical_not of a const, a shape of a static shape) has a .val that
 * later ops' const-requiring inputs accept. A program read from text has
 * no values on op outputs, so the walk lends each output its inferred
 * value while it lasts; mil_program_validate takes them back. */
static void lend_value(vstate *s, mil_var *v, const mil_value *val) {
  if (!val || v->val) return;
  if (s->n_lent == s->cap_lent) {
    size_t nc = s->cap_lent ? 2 * s->cap_lent : 32;
    mil_var **nl = realloc(s->lent, nc * sizeof *nl);
    if (!nl) return; /* the value stays unknown: a later op may be refused, never wrongly accepted */
    s->lent = nl;
    s->cap_lent = nc;
  }
  s->lent[s->n_lent++] = v;
  v->val = val;
}

static const char *func_of(const mil_op *op) {
  const mil_block *b = op->block;
  while (b && !b->func && b->parent) b = b->parent->block;
  return b && b->func ? b->func->name : "?";
}

static int check_one(mil_op *op, void *ud) {
  vstate *s = ud;
  if (mil_op_is_const(op)) return 0;
  const mil_type *types[64];
  const mil_value *vals[64];
  const mil_type **tp = types;
  const mil_value **vp = vals;
  int32_t n = op->n_outputs > 16 ? op->n_outputs : 16;
  if (n > 64) {
    tp = mil_program_alloc(op->program, (size_t)n * sizeof *tp);
    vp = mil_program_alloc(op->program, (size_t)n * sizeof *vp);
    if (!tp || !vp) return 1;
  }
  if (mil_op_infer_types(op, tp, vp, s->d) != MIL_OK) {
    s->errors++;
    return 0;
  }
  const mil_op_def *def = op->def;
  if (def && def->n_outputs >= 0 && op->n_outputs != def->n_outputs) {
    mil_diag_add(s->d, MIL_SEV_ERROR, "function '%s': op '%s' (%s): has %d outputs, expected %d", func_of(op),
                 op->name, op->type, op->n_outputs, def->n_outputs);
    s->errors++;
    return 0;
  }
  for (int32_t i = 0; i < op->n_outputs; i++) {
    if (type_match(op->outputs[i]->type, tp[i])) lend_value(s, op->outputs[i], vp[i]);
    if (!type_match(op->outputs[i]->type, tp[i])) {
      char a[256], b[256];
      mil_diag_add(s->d, MIL_SEV_ERROR,
                   "function '%s': op '%s' (%s): output %%%s is declared %s but its inputs give %s", func_of(op),
                   op->name, op->type, op->outputs[i]->name, mil_type_to_string(op->outputs[i]->type, a, sizeof a),
                   mil_type_to_string(tp[i], b, sizeof b));
      s->errors++;
    }
  }
  return 0;
}

mil_status mil_program_validate(const mil_program *p, mil_diag *d) {
  mil_status st = mil_program_verify(p, d);
  if (st != MIL_OK) return st; /* type checks assume a well-formed program */
  vstate s = {d, 0, NULL, 0, 0};
  mil_program_walk((mil_program *)p, check_one, &s);
  for (size_t i = 0; i < s.n_lent; i++) s.lent[i]->val = NULL;
  free(s.lent);
  return s.errors ? MIL_ERR_TYPE : MIL_OK;
}

/* Sets every function's opset (and the key of its body specialization) to
 * `opset`; `old` (n_functions entries, or NULL) receives the previous ones. */
static void set_opsets(mil_program *p, const char *const *opsets, const char **old) {
  for (int32_t i = 0; i < p->n_functions; i++) {
    mil_function *f = p->functions[i];
    if (old) old[i] = f->opset;
    for (int32_t k = 0; k < f->n_specs; k++)
      if (f->specs[k].opset == f->opset) f->specs[k].opset = opsets[i];
    f->opset = opsets[i];
  }
}

mil_status mil_program_retarget(mil_program *p, int version, mil_diag *d) {
  const char *name = mil_opset_name(version);
  if (!name)
    return mil_diag_error(d, MIL_ERR_INVALID, "retarget: %d is not an opset version (%d..%d: CoreML3..CoreML9)",
                          version, MIL_IOS13, MIL_IOS26);
  const char *interned = mil_program_intern(p, name, (size_t)-1);
  const char **old = malloc((size_t)(p->n_functions ? p->n_functions : 1) * 2 * sizeof *old);
  if (!interned || !old) {
    free(old);
    return mil_diag_error(d, MIL_ERR_NOMEM, "retarget: out of memory");
  }
  const char **now = old + p->n_functions;
  for (int32_t i = 0; i < p->n_functions; i++) now[i] = interned;
  set_opsets(p, now, old);
  mil_diag sub;
  mil_diag_init(&sub);
  mil_status st = mil_program_validate(p, &sub);
  if (st != MIL_OK) {
    set_opsets(p, old, NULL);
    for (size_t i = 0; i < sub.count; i++)
      if (sub.msgs[i].severity == MIL_SEV_ERROR)
        mil_diag_add(d, MIL_SEV_ERROR, "cannot retarget to %s (%s): %s", mil_opset_target_name(version), name,
                     sub.msgs[i].text);
    if (!sub.count) mil_diag_error(d, st, "cannot retarget to %s (%s)", mil_opset_target_name(version), name);
  }
  mil_diag_clear(&sub);
  free(old);
  return st;
}
