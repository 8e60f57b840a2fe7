/* common::topological_reorder — move cast and transpose ops to just before
 * their first use (or to the end of the block when nothing reads them).
 *
 *   main(%x: (10, 20, fp32)(Tensor)) {
 *     block0() {
 *       %d: (string)*(Scalar) = const(val="fp16", name="d")
 *       %c: (10, 20, fp16)(Tensor) = cast(x=%x, dtype=%d, name="c")
 *       %a: (10, 20, fp32)(Tensor) = relu(x=%x, name="a")
 *       %b: (10, 20, fp16)(Tensor) = square(x=%c, name="b")
 *     } -> (%a, %b)
 *   }
 *
 * becomes
 *
 *   main(%x: (10, 20, fp32)(Tensor)) {
 *     block0() {
 *       %d: (string)*(Scalar) = const(val="fp16", name="d")
 *       %a: (10, 20, fp32)(Tensor) = relu(x=%x, name="a")
 *       %c: (10, 20, fp16)(Tensor) = cast(x=%x, dtype=%d, name="cast_0")
 *       %b: (10, 20, fp16)(Tensor) = square(x=%c, name="b")
 *     } -> (%a, %b)
 *   }
 *
 * Each block is walked from its last op to its first, recording for every
 * var the earliest op seen so far that reads it (an op with nested blocks
 * counts as reading what they read). A cast or transpose is moved right
 * before the earliest reader of its outputs, or appended to the block when
 * none reads them (so unused ones end up at the end, in reverse order).
 * coremltools rebuilds each moved op, which gives it a fresh name
 * "<type>_<k>"; the output vars keep their names. Nested blocks are
 * reordered the same way. Order queries use an order-maintenance list
 * (O(log n) amortized per move, O(1) per query).
 *
 * Mirrors coremltools/converters/mil/mil/passes/defs/cleanup/
 * topological_reorder.py.
 */
#include <stdlib.h>
#include <string.h>

#include "passes/pass_internal.h"

typedef struct topo {
  mil_program *p;
  pass_names *names;
  int64_t changes;
  mil_diag *d;
  bool oom;
} topo;

/* ---------- an order-maintenance list ----------
 *
 * Ops are moved one at a time to just before another op, and positions
 * are compared in between. Labels with halving gaps run out after a few
 * dozen moves to one spot, so the list relabels the smallest aligned label
 * range around the spot whose density allows it (Bender et al., "Two
 * simplified algorithms for maintaining order in a list"): O(log n)
 * amortized per move. Node 0 is a sentinel with label 0. */

#define OL_LEVELS 62

typedef struct onode {
  uint64_t label;
  int32_t prev, next;
  mil_op *op;
} onode;

typedef struct olist {
  onode *n;
  int32_t count, tail;
} olist;

static bool ol_init(olist *l, mil_block *b) {
  l->count = b->n_ops + 1;
  l->n = calloc((size_t)l->count, sizeof *l->n);
  if (!l->n) return false;
  uint64_t gap = ((uint64_t)1 << OL_LEVELS) / ((uint64_t)l->count + 1);
  int32_t i = 0;
  l->n[0] = (onode){0, -1, b->first ? 1 : -1, NULL};
  for (mil_op *op = b->first; op; op = op->next) {
    i++;
    l->n[i] = (onode){gap * (uint64_t)i, i - 1, op->next ? i + 1 : -1, op};
    op->aux = (void *)(intptr_t)i;
  }
  l->tail = i;
  return true;
}

static int32_t ol_index(const mil_op *op) { return (int32_t)(intptr_t)op->aux; }

static bool ol_before(const olist *l, const mil_op *a, const mil_op *b) {
  return l->n[ol_index(a)].label < l->n[ol_index(b)].label;
}

static void ol_unlink(olist *l, int32_t i) {
  onode *x = &l->n[i];
  l->n[x->prev].next = x->next;
  if (x->next >= 0) l->n[x->next].prev = x->prev;
  else l->tail = x->prev;
  x->prev = x->next = -1;
}

/* Spreads the labels around p so that p and its successor are >= 2 apart. */
static void ol_relabel(olist *l, int32_t p) {
  uint64_t x = l->n[p].label;
  double allowed = 1;
  for (int lvl = 1; lvl <= OL_LEVELS; lvl++) {
    allowed *= 4.0 / 3.0;
    uint64_t size = (uint64_t)1 << lvl, base = x & ~(size - 1);
    /* the nodes in [base, base + size), the sentinel (label 0) excluded */
    int32_t left = p, count = p > 0;
    while (left > 0 && l->n[left].prev > 0 && l->n[l->n[left].prev].label >= base) left = l->n[left].prev, count++;
    for (int32_t r = l->n[p].next; r >= 0 && l->n[r].label < base + size; r = l->n[r].next) count++;
    if (p == 0) left = l->n[0].next;
    if (count == 0) return;
    if ((double)count + 1 > allowed && lvl < OL_LEVELS) continue;
    uint64_t step = size / ((uint64_t)count + 1);
    if (step < 2) continue;
    int32_t k = left;
    for (int32_t j = 0; j < count; j++, k = l->n[k].next) l->n[k].label = base + step * (uint64_t)(j + 1);
    return;
  }
}

/* Links node i right after node p. */
static void ol_insert_after(olist *l, int32_t p, int32_t i) {
  uint64_t top = (uint64_t)1 << OL_LEVELS;
  int32_t nx = l->n[p].next;
  uint64_t lo = l->n[p].label, hi = nx >= 0 ? l->n[nx].label : top;
  if (hi - lo < 2) {
    ol_relabel(l, p);
    lo = l->n[p].label;
    hi = nx >= 0 ? l->n[nx].label : top;
  }
  l->n[i].label = lo + (hi - lo) / 2;
  l->n[i].prev = p;
  l->n[i].next = nx;
  l->n[p].next = i;
  if (nx >= 0) l->n[nx].prev = i;
  else l->tail = i;
}

/* ---------- the pass ---------- */

/* A growable list of vars. */
typedef struct varlist {
  const mil_var **v;
  int32_t n, cap;
} varlist;

static bool vl_push(varlist *l, const mil_var *v) {
  if (l->n == l->cap) {
    int32_t cap = l->cap ? l->cap * 2 : 32;
    const mil_var **n = realloc(l->v, (size_t)cap * sizeof *n);
    if (!n) return false;
    l->v = n;
    l->cap = cap;
  }
  l->v[l->n++] = v;
  return true;
}

static bool is_movable(const mil_op *op) { return strcmp(op->type, "cast") == 0 || strcmp(op->type, "transpose") == 0; }

/* first_use[v] = op unless an earlier reader is already recorded. */
static void note_use(topo *c, const olist *l, pass_ptrmap *first_use, varlist *keys, const mil_var *v, mil_op *op) {
  if (!v) return;
  mil_op *cur = pass_ptrmap_get(first_use, v);
  if (cur && !ol_before(l, op, cur)) return;
  if (!cur && !vl_push(keys, v)) c->oom = true;
  if (!pass_ptrmap_put(first_use, v, op)) c->oom = true;
}

/* Reorders b; appends to *used the vars read in b (and its outputs). */
static mil_status reorder_block(topo *c, mil_block *b, varlist *used, int depth) {
  if (depth > PASS_MAX_DEPTH)
    return mil_diag_error(c->d, MIL_ERR_UNSUPPORTED, "topological_reorder: blocks nested deeper than %d levels",
                          PASS_MAX_DEPTH);
  olist l = {0};
  if (!ol_init(&l, b)) return mil_diag_error(c->d, MIL_ERR_NOMEM, "topological_reorder: out of memory");
  int32_t n = l.count - 1;
  pass_ptrmap first_use = {0};
  varlist keys = {0};
  mil_status st = MIL_OK;
  int64_t moved = 0;
  for (int32_t i = n; i >= 1 && st == MIL_OK && !c->oom; i--) {
    mil_op *op = l.n[i].op;
    if (is_movable(op)) {
      mil_op *before = NULL;
      for (int32_t k = 0; k < op->n_outputs; k++) {
        mil_op *u = pass_ptrmap_get(&first_use, op->outputs[k]);
        if (u && (!before || ol_before(&l, u, before))) before = u;
      }
      if (!c->names && !(c->names = pass_names_new(c->p))) {
        c->oom = true;
        break;
      }
      const char *name = pass_names_fresh(c->names, c->p, op->type);
      if (!name) {
        c->oom = true;
        break;
      }
      ol_unlink(&l, i);
      ol_insert_after(&l, before ? l.n[ol_index(before)].prev : l.tail, i);
      op->name = name;
      moved++;
    }
    /* nested blocks may reuse op->aux of their own ops only */
    varlist inner = {0};
    for (int32_t k = 0; k < op->n_blocks && st == MIL_OK; k++) st = reorder_block(c, op->blocks[k], &inner, depth + 1);
    for (int32_t k = 0; k < inner.n; k++) note_use(c, &l, &first_use, &keys, inner.v[k], op);
    free(inner.v);
    for (int32_t k = 0; k < op->n_inputs; k++)
      for (int32_t a = 0; a < op->inputs[k].n_args; a++)
        note_use(c, &l, &first_use, &keys, op->inputs[k].args[a].use.var, op);
  }
  /* apply the new order to the block in one go */
  if (st == MIL_OK && !c->oom && moved) {
    for (int32_t i = l.n[0].next; i >= 0; i = l.n[i].next) mil_op_detach(l.n[i].op);
    for (int32_t i = l.n[0].next; i >= 0; i = l.n[i].next) mil_block_append(b, l.n[i].op);
    c->changes += moved;
  }
  for (int32_t k = 0; k < keys.n && used; k++)
    if (!vl_push(used, keys.v[k])) c->oom = true;
  for (int32_t k = 0; k < b->n_outputs && used; k++)
    if (!vl_push(used, b->outputs[k].var)) c->oom = true;
  free(keys.v);
  pass_ptrmap_free(&first_use);
  free(l.n);
  if (st == MIL_OK && c->oom) st = mil_diag_error(c->d, MIL_ERR_NOMEM, "topological_reorder: out of memory");
  return st;
}

static mil_status run(mil_program *p, const mil_pass_options *o, mil_pass_stats *stats, mil_diag *d) {
  topo c = {p, NULL, 0, d, false};
  mil_status st = MIL_OK;
  for (int32_t fi = 0; fi < p->n_functions && st == MIL_OK; fi++) {
    mil_function *f = p->functions[fi];
    for (int32_t s = 0; s < f->n_specs && st == MIL_OK; s++) st = reorder_block(&c, f->specs[s].block, NULL, 0);
  }
  pass_names_free(c.names);
  if (stats) stats->changes += c.changes;
  return st;
}

const mil_pass_def pass_def_topological_reorder = {"common::topological_reorder",
                                                   "move casts and other ops to just before their first use", NULL, 0,
                                                   run, NULL};
