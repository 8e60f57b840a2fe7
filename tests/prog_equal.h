/* Test helper: structural identity of two programs.
 *
 * prog_equal(a, b, why, n) is true when a and b have the same functions
 * (names, opsets, inputs with names, types and marks), and every block has
 * the same name, inputs, ops in the same order and outputs; every op the
 * same type, name, inputs (names, tuple flag, bindings) and outputs (names,
 * types, marks, const values compared bitwise) and nested blocks.
 * Bindings are compared by identity: a use of var x in `a` must be a use of
 * the var of `b` defined at the same place, so shadowed duplicate names
 * compare correctly. On a mismatch `why` receives a short description.
 * Everything is static so any test can include this header.
 */
#ifndef MIL_TESTS_PROG_EQUAL_H
#define MIL_TESTS_PROG_EQUAL_H

#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mil/ir.h"

typedef struct peq_ctx {
  const mil_var **keys, **vals; /* open addressing: var of a -> var of b */
  size_t cap, n;
  char *why;
  size_t why_n;
  bool oom;
} peq_ctx;

static inline bool peq_fail(peq_ctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static inline bool peq_fail(peq_ctx *c, const char *fmt, ...) {
  if (c->why && c->why_n) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->why, c->why_n, fmt, ap);
    va_end(ap);
  }
  return false;
}

static inline size_t peq_hash(const void *p) {
  uint64_t h = (uint64_t)(uintptr_t)p;
  h ^= h >> 31;
  h *= 0x9e3779b97f4a7c15ULL;
  return (size_t)(h ^ (h >> 29));
}

static inline void peq_put(peq_ctx *c, const mil_var *a, const mil_var *b) {
  if ((c->n + 1) * 2 > c->cap) {
    size_t nc = c->cap ? c->cap * 2 : 256;
    const mil_var **nk = (const mil_var **)calloc(nc, sizeof *nk), **nv = (const mil_var **)calloc(nc, sizeof *nv);
    if (!nk || !nv) {
      free(nk);
      free(nv);
      c->oom = true;
      return;
    }
    for (size_t i = 0; i < c->cap; i++)
      if (c->keys[i]) {
        size_t h = peq_hash(c->keys[i]) & (nc - 1);
        while (nk[h]) h = (h + 1) & (nc - 1);
        nk[h] = c->keys[i];
        nv[h] = c->vals[i];
      }
    free(c->keys);
    free(c->vals);
    c->keys = nk;
    c->vals = nv;
    c->cap = nc;
  }
  size_t h = peq_hash(a) & (c->cap - 1);
  while (c->keys[h] && c->keys[h] != a) h = (h + 1) & (c->cap - 1);
  if (!c->keys[h]) c->n++;
  c->keys[h] = a;
  c->vals[h] = b;
}

static inline const mil_var *peq_get(const peq_ctx *c, const mil_var *a) {
  if (!c->cap) return NULL;
  size_t h = peq_hash(a) & (c->cap - 1);
  while (c->keys[h]) {
    if (c->keys[h] == a) return c->vals[h];
    h = (h + 1) & (c->cap - 1);
  }
  return NULL;
}

static inline bool peq_str(const char *a, const char *b) { return a == b || (a && b && strcmp(a, b) == 0); }

/* A definition: same name, type, mark and value; then remembered. */
static inline bool peq_def(peq_ctx *c, const mil_var *a, const mil_var *b, const char *where) {
  if (!peq_str(a->name, b->name)) return peq_fail(c, "%s: var name %s vs %s", where, a->name, b->name);
  if (!mil_type_equal(a->type, b->type)) return peq_fail(c, "%s: type of %%%s differs", where, a->name);
  if (a->mark != b->mark) return peq_fail(c, "%s: mark of %%%s %d vs %d", where, a->name, (int)a->mark, (int)b->mark);
  if ((a->val == NULL) != (b->val == NULL)) return peq_fail(c, "%s: %%%s has a value in only one program", where, a->name);
  if (a->val) {
    if (!mil_value_equal(a->val, b->val)) return peq_fail(c, "%s: value of %%%s differs", where, a->name);
    if (!mil_type_equal(a->val->type, b->val->type))
      return peq_fail(c, "%s: value type of %%%s differs", where, a->name);
  }
  peq_put(c, a, b);
  return true;
}

/* A use: a's var must map to b's var. */
static inline bool peq_use(peq_ctx *c, const mil_var *a, const mil_var *b, const char *where) {
  if (!a || !b) return (a == b) || peq_fail(c, "%s: missing var", where);
  if (peq_get(c, a) != b)
    return peq_fail(c, "%s: uses %%%s vs %%%s (different definitions)", where, a->name, b->name);
  return true;
}

static inline bool peq_block(peq_ctx *c, const mil_block *a, const mil_block *b);

static inline bool peq_op(peq_ctx *c, const mil_op *a, const mil_op *b) {
  char where[300];
  snprintf(where, sizeof where, "op '%s' (%s)", a->name ? a->name : "?", a->type ? a->type : "?");
  if (!peq_str(a->type, b->type)) return peq_fail(c, "%s: type vs %s", where, b->type);
  if (!peq_str(a->name, b->name)) return peq_fail(c, "%s: name vs '%s'", where, b->name);
  if (a->n_inputs != b->n_inputs) return peq_fail(c, "%s: %d vs %d inputs", where, a->n_inputs, b->n_inputs);
  for (int32_t i = 0; i < a->n_inputs; i++) {
    const mil_input *x = &a->inputs[i], *y = &b->inputs[i];
    if (!peq_str(x->name, y->name)) return peq_fail(c, "%s: input %d named %s vs %s", where, i, x->name, y->name);
    if (x->is_tuple != y->is_tuple || x->n_args != y->n_args)
      return peq_fail(c, "%s: input %s shape (tuple %d, %d args) vs (tuple %d, %d args)", where, x->name,
                      x->is_tuple, x->n_args, y->is_tuple, y->n_args);
    for (int32_t k = 0; k < x->n_args; k++) {
      const mil_arg *p = &x->args[k], *q = &y->args[k];
      if ((p->value == NULL) != (q->value == NULL))
        return peq_fail(c, "%s: input %s arg %d literal in one program only", where, x->name, k);
      if (p->value && !mil_value_equal(p->value, q->value))
        return peq_fail(c, "%s: input %s arg %d literal differs", where, x->name, k);
      if (!p->value && !peq_use(c, p->use.var, q->use.var, where)) return false;
    }
  }
  if (a->n_blocks != b->n_blocks) return peq_fail(c, "%s: %d vs %d blocks", where, a->n_blocks, b->n_blocks);
  for (int32_t i = 0; i < a->n_blocks; i++)
    if (!peq_block(c, a->blocks[i], b->blocks[i])) return false;
  if (a->n_outputs != b->n_outputs) return peq_fail(c, "%s: %d vs %d outputs", where, a->n_outputs, b->n_outputs);
  for (int32_t i = 0; i < a->n_outputs; i++)
    if (!peq_def(c, a->outputs[i], b->outputs[i], where)) return false;
  return true;
}

static inline bool peq_block(peq_ctx *c, const mil_block *a, const mil_block *b) {
  char where[300];
  snprintf(where, sizeof where, "block '%s'", a->name ? a->name : "?");
  if (!peq_str(a->name, b->name)) return peq_fail(c, "%s: name vs '%s'", where, b->name ? b->name : "?");
  if (a->n_inputs != b->n_inputs) return peq_fail(c, "%s: %d vs %d inputs", where, a->n_inputs, b->n_inputs);
  for (int32_t i = 0; i < a->n_inputs; i++)
    if (!peq_def(c, a->inputs[i], b->inputs[i], where)) return false;
  if (a->n_ops != b->n_ops) return peq_fail(c, "%s: %d vs %d ops", where, a->n_ops, b->n_ops);
  const mil_op *x = a->first, *y = b->first;
  for (; x && y; x = x->next, y = y->next)
    if (!peq_op(c, x, y)) return false;
  if (x || y) return peq_fail(c, "%s: op lists differ in length", where);
  if (a->n_outputs != b->n_outputs) return peq_fail(c, "%s: %d vs %d outputs", where, a->n_outputs, b->n_outputs);
  for (int32_t i = 0; i < a->n_outputs; i++)
    if (!peq_use(c, a->outputs[i].var, b->outputs[i].var, where)) return false;
  return true;
}

static inline bool prog_equal(const mil_program *a, const mil_program *b, char *why, size_t why_n) {
  peq_ctx c = {0};
  c.why = why;
  c.why_n = why_n;
  if (why && why_n) why[0] = 0;
  bool ok = true;
  if (a->n_functions != b->n_functions) {
    ok = peq_fail(&c, "%d vs %d functions", a->n_functions, b->n_functions);
  }
  for (int32_t i = 0; ok && i < a->n_functions; i++) {
    const mil_function *f = a->functions[i], *g = b->functions[i];
    char where[300];
    snprintf(where, sizeof where, "function '%s'", f->name);
    if (!peq_str(f->name, g->name) || !peq_str(f->opset, g->opset)) {
      ok = peq_fail(&c, "%s: name/opset vs '%s[%s]'", where, g->name, g->opset);
      break;
    }
    if (f->n_inputs != g->n_inputs) {
      ok = peq_fail(&c, "%s: %d vs %d inputs", where, f->n_inputs, g->n_inputs);
      break;
    }
    for (int32_t k = 0; ok && k < f->n_inputs; k++) ok = peq_def(&c, f->inputs[k], g->inputs[k], where);
    const mil_block *ba = mil_function_body(f), *bb = mil_function_body(g);
    if (ok && (!ba || !bb)) ok = (ba == bb) || peq_fail(&c, "%s: body missing", where);
    if (ok && ba) ok = peq_block(&c, ba, bb);
  }
  if (c.oom) ok = peq_fail(&c, "out of memory comparing programs");
  free(c.keys);
  free(c.vals);
  return ok;
}

#endif
