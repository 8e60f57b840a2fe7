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

/* The earliest reader seen so far of each var read in the blocks being
 * walked, one entry per (block, var) in order of first sight. var->aux
 * holds the index + 1 of the var's entry for the innermost block being
 * walked; an entry only counts for the block whose entries start at or
 * before it (`base`), and prev_aux restores the enclosing block's index
 * when a nested block is done. */
typedef struct use_entry {
  mil_var *var;
  mil_op *op;
  void *prev_aux;
} use_entry;

typedef struct topo {
  mil_program *p;
  const char *cast, *transpose; /* interned, or NULL */
  pass_names *names;
  use_entry *uses;
  int32_t n_uses, cap_uses;
  int64_t changes;
  mil_diag *d;
  bool oom;
} topo;

static bool is_movable(const topo *c, const mil_op *op) {
  return (c->cast && op->type == c->cast) || (c->transpose && op->type == c->transpose);
}

/* The entry of v in the block whose entries start at base, or NULL. */
static use_entry *entry_of(const topo *c, int32_t base, const mil_var *v) {
  uintptr_t k = (uintptr_t)v->aux;
  if (k <= (uintptr_t)base || k > (uintptr_t)c->n_uses) return NULL;
  use_entry *e = &c->uses[k - 1];
  return e->var == v ? e : NULL;
}

/* first use of v = op unless an earlier reader is already recorded. */
static void note_use(topo *c, int32_t base, const olist *l, mil_var *v, mil_op *op) {
  if (!v) return;
  use_entry *e = entry_of(c, base, v);
  if (e) {
    if (ol_before(l, op, e->op)) e->op = op;
    return;
  }
  if (c->n_uses == c->cap_uses) {
    int32_t cap = c->cap_uses ? c->cap_uses * 2 : 256;
    use_entry *n = realloc(c->uses, (size_t)cap * sizeof *n);
    if (!n) {
      c->oom = true;
      return;
    }
    c->uses = n;
    c->cap_uses = cap;
  }
  c->uses[c->n_uses] = (use_entry){v, op, v->aux};
  v->aux = (void *)(uintptr_t)(++c->n_uses);
}

/* Drops the entries from base on, restoring what their vars' aux held. */
static void drop_uses(topo *c, int32_t base) {
  while (c->n_uses > base) {
    use_entry *e = &c->uses[--c->n_uses];
    e->var->aux = e->prev_aux;
  }
}

/* Reorders b; afterwards c->uses[base..] lists the vars read in b (by its
 * ops and the blocks nested in them) in order of first sight, with their
 * earliest readers; the caller drops them. */
static mil_status reorder_block(topo *c, mil_block *b, int depth) {
  if (depth > PASS_MAX_DEPTH)
    return mil_diag_error(c->d, MIL_ERR_UNSUPPORTED, "topological_reorder: blocks nested deeper than %d levels",
                          PASS_MAX_DEPTH);
  olist l = {0};
  if (!ol_init(&l, b)) return mil_diag_error(c->d, MIL_ERR_NOMEM, "topological_reorder: out of memory");
  int32_t n = l.count - 1;
  int32_t base = c->n_uses;
  bool *moved = NULL;
  mil_status st = MIL_OK;
  int64_t n_moved = 0;
  for (int32_t i = n; i >= 1 && st == MIL_OK && !c->oom; i--) {
    mil_op *op = l.n[i].op;
    if (is_movable(c, op)) {
      mil_op *before = NULL;
      for (int32_t k = 0; k < op->n_outputs; k++) {
        const use_entry *e = entry_of(c, base, op->outputs[k]);
        mil_op *u = e ? e->op : NULL;
        if (u && (!before || ol_before(&l, u, before))) before = u;
      }
      if (!c->names && !(c->names = pass_names_new(c->p))) {
        c->oom = true;
        break;
      }
      const char *name = pass_names_fresh(c->names, c->p, op->type);
      if (!moved) moved = calloc((size_t)n + 1, sizeof *moved);
      if (!name || !moved) {
        c->oom = true;
        break;
      }
      ol_unlink(&l, i);
      ol_insert_after(&l, before ? l.n[ol_index(before)].prev : l.tail, i);
      op->name = name;
      moved[i] = true;
      n_moved++;
    }
    /* nested blocks may reuse op->aux of their own ops only; what they read
     * (their outputs too) counts as read by op */
    for (int32_t k = 0; k < op->n_blocks && st == MIL_OK; k++) {
      int32_t inner = c->n_uses;
      st = reorder_block(c, op->blocks[k], depth + 1);
      int32_t end = c->n_uses;
      /* move the inner list out of the way of the entries noted below */
      use_entry *tmp = NULL;
      if (end > inner && !(tmp = malloc((size_t)(end - inner) * sizeof *tmp))) c->oom = true;
      if (tmp) memcpy(tmp, c->uses + inner, (size_t)(end - inner) * sizeof *tmp);
      drop_uses(c, inner);
      for (int32_t j = 0; tmp && j < end - inner; j++) note_use(c, base, &l, tmp[j].var, op);
      free(tmp);
      for (int32_t j = 0; j < op->blocks[k]->n_outputs; j++) note_use(c, base, &l, op->blocks[k]->outputs[j].var, op);
    }
    for (int32_t k = 0; k < op->n_inputs; k++)
      for (int32_t a = 0; a < op->inputs[k].n_args; a++) note_use(c, base, &l, op->inputs[k].args[a].use.var, op);
  }
  /* apply the new order: the ops that did not move keep their order, the
   * moved ones are put back where the list has them */
  if (st == MIL_OK && !c->oom && n_moved) {
    for (int32_t i = 1; i <= n; i++)
      if (moved[i]) mil_op_detach(l.n[i].op);
    mil_op *cur = b->first;
    for (int32_t i = l.n[0].next; i >= 0; i = l.n[i].next) {
      mil_op *op = l.n[i].op;
      if (!moved[i]) {
        cur = op->next;
        continue;
      }
      if (cur) mil_block_insert_before(cur, op);
      else mil_block_append(b, op);
    }
    c->changes += n_moved;
  }
  free(moved);
  free(l.n);
  if (st == MIL_OK && c->oom) st = mil_diag_error(c->d, MIL_ERR_NOMEM, "topological_reorder: out of memory");
  return st;
}

static mil_status run(mil_program *p, const mil_pass_options *o, mil_pass_stats *stats, mil_diag *d) {
  (void)o;
  topo c;
  memset(&c, 0, sizeof c);
  c.p = p;
  c.d = d;
  c.cast = mil_program_find_string(p, "cast", (size_t)-1);
  c.transpose = mil_program_find_string(p, "transpose", (size_t)-1);
  /* nothing to move (a count of -1 is unknown) */
  if (mil_program_count_op_type(p, "cast") == 0 && mil_program_count_op_type(p, "transpose") == 0) return MIL_OK;
  mil_status st = MIL_OK;
  for (int32_t fi = 0; fi < p->n_functions && st == MIL_OK; fi++) {
    mil_function *f = p->functions[fi];
    for (int32_t s = 0; s < f->n_specs && st == MIL_OK; s++) {
      st = reorder_block(&c, f->specs[s].block, 0);
      drop_uses(&c, 0);
    }
  }
  pass_names_free(c.names);
  free(c.uses);
  if (stats) stats->changes += c.changes;
  return st;
}

const mil_pass_def pass_def_topological_reorder = {"common::topological_reorder",
                                                   "move casts and other ops to just before their first use", NULL, 0,
                                                   run, NULL};
