/* common::reduce_transposes: the names of the ops and consts phase 3
 * makes, chosen as coremltools' Builder chooses them (the smallest free
 * "<prefix>_<k>"), and the ops built with them. See reduce_transposes.c.
 *
 * The set of taken names is a pass_names (every op, output, nested block
 * input and function input name of the program when phase 3 first needs
 * it, and every name given out or recorded since), built by
 * pass_names_from from the names phase 1 gathered on its walk and the
 * rest gathered here, so the program is not walked again.
 *
 * Mirrors coremltools/converters/mil/mil/builder.py (_get_free_name,
 * _add_const) like pass_names_fresh and pass_const_before.
 */
#include <stdlib.h>
#include <string.h>

#include "passes/reduce_transposes_internal.h"

/* ---------- gathering the program's names ---------- */

typedef rt_gather gather;

static bool push(gather *g, const char *s) {
  if (!s) return true;
  if (g->n == g->cap) {
    size_t nc = g->cap ? g->cap * 2 : 1024;
    const char **nv = realloc(g->v, nc * sizeof *nv);
    if (!nv) return false;
    g->v = nv;
    g->cap = nc;
  }
  g->v[g->n++] = s;
  return true;
}

/* The names of op and its outputs. */
static bool gather_op(gather *g, const mil_op *op) {
  if (!push(g, op->name)) return false;
  for (int32_t i = 0; i < op->n_outputs; i++)
    if (op->outputs[i]->name != op->name && !push(g, op->outputs[i]->name)) return false;
  return true;
}

bool rt_gather_op(rt_ctx *t, const mil_op *op) { return gather_op(&t->gathered, op); }

/* The names of the ops from `from` up to `to` (excluded; NULL: the end of
 * the block) and of their nested blocks, inputs included. The output
 * arrays and output vars of ops a few ahead are prefetched. */
static bool gather_ops(gather *g, const mil_op *from, const mil_op *to) {
  rt_ahead a;
  rt_ahead_at(&a, from);
  for (const mil_op *op = from; op != to; op = op->next) {
    rt_ahead_step(&a);
    if (!gather_op(g, op)) return false;
    for (int32_t k = 0; k < op->n_blocks; k++) {
      const mil_block *nb = op->blocks[k];
      for (int32_t i = 0; i < nb->n_inputs; i++)
        if (!push(g, nb->inputs[i]->name)) return false;
      if (!gather_ops(g, nb->first, NULL)) return false;
    }
  }
  return true;
}

/* The set of the names in the program now. t's block was walked by phase
 * 1 from t->gather_from on (when set); its ops before that and its sinks,
 * added since, are walked here. */
static rt_names *names_build(rt_ctx *t) {
  mil_program *p = t->c->p;
  rt_names *n = NULL;
  gather g = t->gathered;
  t->gathered = (gather){0};
  bool ok = true;
  for (int32_t i = 0; ok && i < p->n_functions; i++) {
    const mil_function *f = p->functions[i];
    for (int32_t k = 0; ok && k < f->n_inputs; k++) ok = push(&g, f->inputs[k]->name);
    for (int32_t s = 0; ok && s < f->n_specs; s++) {
      const mil_block *b = f->specs[s].block;
      if (b != t->b || !t->gather_from) {
        ok = gather_ops(&g, b->first, NULL);
        continue;
      }
      ok = gather_ops(&g, b->first, t->gather_from);
      for (int32_t k = 0; ok && k < t->n_sinks; k++) ok = gather_ops(&g, t->sinks[k], t->sinks[k]->next);
    }
  }
  if (ok) n = pass_names_from(p, g.v, g.n);
  free(g.v);
  return n;
}

void rt_names_free(rt_names *n) { pass_names_free(n); }

rt_names *rt_names_of(rt_ctx *t) {
  if (!t->c->ud) t->c->ud = names_build(t);
  if (!t->c->ud) t->oom = true;
  return t->c->ud;
}

/* ---------- fresh and recorded names ---------- */

bool rt_name_add(rt_ctx *t, const char *name) {
  rt_names *n = rt_names_of(t);
  if (!n || !pass_names_add(n, name)) {
    t->oom = true;
    return false;
  }
  return true;
}

/* pass_names_fresh for the prefix buf[0, len) (buf has room for len + 22
 * bytes). */
static const char *fresh_in(rt_ctx *t, char *buf, size_t len) {
  rt_names *n = rt_names_of(t);
  if (!n) return NULL;
  buf[len] = 0;
  return pass_names_fresh(n, t->c->p, buf);
}

/* fresh_in for the prefix a + b (b may be NULL). */
static const char *fresh2(rt_ctx *t, const char *a, const char *b) {
  size_t la = strlen(a), lb = b ? strlen(b) + 1 : 0, len = la + lb;
  char stack[256];
  char *buf = len + 24 <= sizeof stack ? stack : malloc(len + 24);
  if (!buf) return NULL;
  memcpy(buf, a, la);
  if (b) {
    buf[la] = '_';
    memcpy(buf + la + 1, b, lb - 1);
  }
  const char *s = fresh_in(t, buf, len);
  if (buf != stack) free(buf);
  if (!s) t->oom = true;
  return s;
}

const char *rt_fresh(rt_ctx *t, const char *prefix) { return fresh2(t, prefix, NULL); }

/* ---------- building ops ---------- */

mil_op *rt_new_op(rt_ctx *t, mil_op *anchor, const char *type, const char *name) {
  if (!name) name = rt_fresh(t, type);
  else if (!rt_name_add(t, name)) return NULL;
  mil_op *op = name ? mil_op_new(t->c->p, type, name) : NULL;
  if (op) mil_block_insert_before(anchor, op);
  else t->oom = true;
  return op;
}

bool rt_const_input(rt_ctx *t, mil_op *op, const char *input, const mil_value *v) {
  const char *name = v ? fresh2(t, op->name, input) : NULL;
  mil_op *k = name ? mil_const_new(t->c->p, name, v) : NULL;
  if (!k || k->n_outputs != 1) {
    t->oom = true;
    return false;
  }
  mil_block_insert_before(op, k);
  mil_op_add_input(op, input, k->outputs[0]);
  return true;
}

mil_status rt_finish_op(rt_ctx *t, mil_op *op) {
  mil_status st = pass_finish_op(op, t->c->d);
  if (st != MIL_OK) return st;
  for (int32_t i = 0; i < op->n_outputs; i++)
    if (!rt_name_add(t, op->outputs[i]->name))
      return mil_diag_error(t->c->d, MIL_ERR_NOMEM, "%s: out of memory", t->c->pass);
  return MIL_OK;
}
