/* common::reduce_transposes: the names of the ops and consts phase 3
 * makes, chosen as coremltools' Builder chooses them (the smallest free
 * "<prefix>_<k>"), and the ops built with them. See reduce_transposes.c.
 *
 * The set of taken names is pass_names' (every op, output, nested block
 * input and function input name of the program when phase 3 first needs
 * it, and every name given out or recorded since), with the same answers;
 * it is built from one walk that gathers the names into an array, then
 * inserted with the slots of later names prefetched, as the walk over a
 * large program is otherwise bound by cache misses.
 *
 * Mirrors coremltools/converters/mil/mil/builder.py (_get_free_name,
 * _add_const) like pass_names_fresh and pass_const_before.
 */
#include <stdlib.h>
#include <string.h>

#include "passes/reduce_transposes_internal.h"

struct rt_names {
  mil_program *p;
  const void **keys; /* open addressing, at most half full */
  size_t cap, n;
  pass_ptrmap next_k; /* interned "<prefix>_0" -> next k to try (prefixes used more than once) */
};

static size_t slot_of(const void *p, size_t cap) {
  uint64_t x = (uint64_t)(uintptr_t)p;
  x ^= x >> 33;
  x *= UINT64_C(0xff51afd7ed558ccd);
  x ^= x >> 33;
  return (size_t)x & (cap - 1);
}

static bool set_has(const rt_names *n, const void *p) {
  if (!p) return false;
  for (size_t j = slot_of(p, n->cap); n->keys[j]; j = (j + 1) & (n->cap - 1))
    if (n->keys[j] == p) return true;
  return false;
}

static bool set_rehash(rt_names *n, size_t cap) {
  const void **k = calloc(cap, sizeof *k);
  if (!k) return false;
  for (size_t i = 0; i < n->cap; i++)
    if (n->keys[i]) {
      size_t j = slot_of(n->keys[i], cap);
      while (k[j]) j = (j + 1) & (cap - 1);
      k[j] = n->keys[i];
    }
  free(n->keys);
  n->keys = k;
  n->cap = cap;
  return true;
}

/* Adds p (NULL is ignored); false on out of memory. */
static bool set_add(rt_names *n, const void *p) {
  if (!p) return true;
  if ((n->n + 1) * 2 > n->cap && !set_rehash(n, n->cap * 2)) return false;
  size_t j = slot_of(p, n->cap);
  for (; n->keys[j]; j = (j + 1) & (n->cap - 1))
    if (n->keys[j] == p) return true;
  n->keys[j] = p;
  n->n++;
  return true;
}

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

static const mil_op *skip(const mil_op *op, int k) {
  while (op && k-- > 0) op = op->next;
  return op;
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
  const mil_op *near = skip(from, 2), *far = skip(near, 2);
  for (const mil_op *op = from; op != to; op = op->next) {
    if (far) {
      __builtin_prefetch(far->outputs);
      far = far->next;
    }
    if (near) {
      if (near->n_outputs > 0) __builtin_prefetch(near->outputs[0]);
      near = near->next;
    }
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
  rt_names *n = calloc(1, sizeof *n);
  gather g = t->gathered;
  t->gathered = (gather){0};
  bool ok = n != NULL;
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
  if (ok) {
    n->p = p;
    size_t cap = 1024;
    while (cap < 2 * (g.n + 64)) cap *= 2;
    n->cap = cap;
    ok = (n->keys = calloc(cap, sizeof *n->keys)) != NULL;
  }
  /* each slot is prefetched a few names before it is probed */
  enum { AHEAD = 16 };
  for (size_t i = 0; ok && i < g.n; i++) {
    if (i + AHEAD < g.n) __builtin_prefetch(&n->keys[slot_of(g.v[i + AHEAD], n->cap)], 1);
    ok = set_add(n, g.v[i]);
  }
  free(g.v);
  if (!ok && n) {
    free(n->keys);
    free(n);
    n = NULL;
  }
  return n;
}

void rt_names_free(rt_names *n) {
  if (!n) return;
  free(n->keys);
  pass_ptrmap_free(&n->next_k);
  free(n);
}

rt_names *rt_names_of(rt_ctx *t) {
  if (!t->c->ud) t->c->ud = names_build(t);
  if (!t->c->ud) t->oom = true;
  return t->c->ud;
}

/* ---------- fresh and recorded names ---------- */

bool rt_name_add(rt_ctx *t, const char *name) {
  rt_names *n = rt_names_of(t);
  const char *s = n ? mil_program_intern(t->c->p, name, (size_t)-1) : NULL;
  if (!s || !set_add(n, s)) {
    t->oom = true;
    return false;
  }
  return true;
}

/* "<prefix>_<k>" with the smallest free k, where prefix is buf[0, len)
 * (buf has room for len + 22 bytes); recorded and interned. Names are only
 * ever added, so every k below one given out earlier for the same prefix
 * is taken: the next k to try is kept, keyed by the interned
 * "<prefix>_0". */
static const char *fresh_in(rt_ctx *t, char *buf, size_t len) {
  rt_names *n = rt_names_of(t);
  mil_program *p = t->c->p;
  if (!n) return NULL;
  buf[len] = '_';
  buf[len + 1] = '0';
  buf[len + 2] = 0;
  const char *s = mil_program_intern(p, buf, len + 2);
  if (!s) return NULL;
  const char *key = s;
  uint64_t k = (uint64_t)(uintptr_t)pass_ptrmap_get(&n->next_k, key);
  if (k || set_has(n, s))
    for (k = k ? k : 1;; k++) {
      size_t m = len + 1 + pass_put_u64(buf + len + 1, k);
      buf[m] = 0;
      s = mil_program_intern(p, buf, m);
      if (!s || !set_has(n, s)) break;
    }
  if (s && !set_add(n, s)) s = NULL;
  if (s && k > 0 && !pass_ptrmap_put(&n->next_k, key, (void *)(uintptr_t)(k + 1))) s = NULL;
  return s;
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
