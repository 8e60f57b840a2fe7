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
 * The ops of each block are visited from the last to the first. A cast or
 * transpose is moved right before the earliest reader of its outputs (an
 * op with nested blocks counts as reading what they read), or appended to
 * the block when none reads them (so unused ones end up at the end, in
 * reverse order). coremltools rebuilds each moved op, which gives it a
 * fresh name "<type>_<k>"; the output vars keep their names. Nested blocks
 * are reordered the same way, when their op is visited.
 *
 * The readers of a moved op's outputs all come after it, so they are
 * found from the outputs' use lists when the op is visited; only the
 * moved ops and their readers need an order, kept in an
 * order-maintenance list (O(log n) amortized per move, O(1) per query).
 * One walk of each block finds the ops to visit, reading nothing but
 * their records.
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

/* A list of the given ops (in block order), evenly labelled. */
static bool ol_init(olist *l, mil_op *const *ops, int32_t n) {
  l->count = n + 1;
  l->n = calloc((size_t)l->count, sizeof *l->n);
  if (!l->n) return false;
  uint64_t gap = ((uint64_t)1 << OL_LEVELS) / ((uint64_t)l->count + 1);
  l->n[0] = (onode){0, -1, n > 0 ? 1 : -1, NULL};
  for (int32_t i = 1; i <= n; i++) l->n[i] = (onode){gap * (uint64_t)i, i - 1, i < n ? i + 1 : -1, ops[i - 1]};
  l->tail = n;
  return true;
}

static bool ol_before(const olist *l, int32_t a, int32_t b) { return l->n[a].label < l->n[b].label; }

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

/* ---------- fresh names ---------- */

/* Reading ahead in the walks: op records lie in list order in memory
 * (mil_program_compact_ops), so the record PASS_WALK_AHEAD ops on is most likely
 * PASS_WALK_AHEAD records further. Asking for it early keeps a walk from waiting on
 * memory at every op (a prefetch of an address that holds no op is
 * harmless). */

typedef struct topo {
  mil_program *p;
  const char *cast, *transpose; /* interned, or NULL */
  pass_names *names; /* the names of the program, once a candidate may be taken */
  int64_t changes;
  mil_diag *d;
  bool oom;
} topo;

typedef struct oplist {
  mil_op **v;
  int32_t n, cap;
} oplist;

static bool push_op(oplist *l, mil_op *op) {
  if (l->n == l->cap) {
    int32_t cap = l->cap ? l->cap * 2 : 64;
    mil_op **g = realloc(l->v, (size_t)cap * sizeof *g);
    if (!g) return false;
    l->v = g;
    l->cap = cap;
  }
  l->v[l->n++] = op;
  return true;
}

static bool is_movable(const topo *c, const mil_op *op) {
  return (c->cast && op->type == c->cast) || (c->transpose && op->type == c->transpose);
}

/* The name coremltools gives the rebuilt op: mb.cast / mb.transpose with
 * no name, Builder._get_free_name(op_type) ("<type>_<k>", k from the
 * program's count, pass_names_fresh). The old op is removed right after,
 * so its own name is free for it; a name the program never interned is
 * free without looking; otherwise the program's names decide
 * (pass_names_claim). NULL on out of memory. */
static const char *fresh_name(topo *c, const mil_op *op) {
  size_t len = strlen(op->type);
  char stack[64];
  char *buf = len + 48 <= sizeof stack ? stack : malloc(len + 48);
  if (!buf) return NULL;
  memcpy(buf, op->type, len);
  size_t m = pass_name_counted(c->p, buf, len);
  bool added = false;
  const char *s = m ? mil_program_intern_new(c->p, buf, m, &added) : NULL;
  if (s && !added && s != op->name) {
    if (!c->names) c->names = pass_names_new(c->p);
    s = c->names ? pass_names_claim(c->names, c->p, buf, m) : NULL;
  } else if (s && c->names && !pass_names_add_interned(c->names, s)) {
    s = NULL;
  }
  if (buf != stack) free(buf);
  return s;
}

/* ---------- the pass ---------- */

/* The op of b that is op or holds it in a nested block, or NULL. */
static mil_op *op_in(mil_op *op, const mil_block *b) {
  for (int depth = 0; op && depth <= PASS_MAX_DEPTH + 1; depth++) {
    if (op->block == b) return op;
    op = op->block ? op->block->parent : NULL;
  }
  return NULL;
}

/* The op of b that reads through use u (an op with nested blocks reads
 * what they read, their outputs too); NULL for an output of b itself. */
static mil_op *reader_in(const mil_use *u, const mil_block *b) {
  if (u->op) return op_in(u->op, b);
  return u->block && u->block != b ? op_in(u->block->parent, b) : NULL;
}

static int cmp_order(const void *pa, const void *pb) {
  const mil_op *a = *(mil_op *const *)pa, *b = *(mil_op *const *)pb;
  if (a == b) return 0;
  return mil_op_is_before(a, b) ? -1 : 1;
}

/* The order list of b's movable ops (in ev) and the ops reading their
 * outputs, in block order; idx maps each to its node. The other ops of b
 * neither move nor are compared, and a moved op only ever sits right
 * before one of these or at the end, so this list orders b as the list of
 * all its ops would. */
static bool build_list(topo *c, const mil_block *b, const oplist *ev, olist *l, pass_ptrmap *idx) {
  oplist nodes = {0};
  bool ok = true;
  for (int32_t i = 0; i < ev->n && ok; i++)
    if (is_movable(c, ev->v[i])) ok = push_op(&nodes, ev->v[i]) && pass_ptrmap_put(idx, ev->v[i], (void *)1);
  for (int32_t i = 0; i < ev->n && ok; i++) {
    const mil_op *op = ev->v[i];
    if (!is_movable(c, op)) continue;
    for (int32_t k = 0; k < op->n_outputs && ok; k++)
      for (const mil_use *u = op->outputs[k]->uses; u && ok; u = u->next_use) {
        mil_op *r = reader_in(u, b);
        if (r && !pass_ptrmap_get(idx, r)) ok = push_op(&nodes, r) && pass_ptrmap_put(idx, r, (void *)1);
      }
  }
  if (ok) {
    qsort(nodes.v, (size_t)nodes.n, sizeof *nodes.v, cmp_order);
    for (int32_t i = 0; i < nodes.n && ok; i++) ok = pass_ptrmap_put(idx, nodes.v[i], (void *)(intptr_t)(i + 1));
  }
  ok = ok && ol_init(l, nodes.v, nodes.n);
  free(nodes.v);
  return ok;
}

/* Moves op (node i of l) right before the earliest reader of its outputs,
 * or to the end of the list when none reads them, renaming it. */
static void move_op(topo *c, const mil_block *b, olist *l, const pass_ptrmap *idx, mil_op *op, int32_t i) {
  int32_t before = 0;
  for (int32_t k = 0; k < op->n_outputs; k++)
    for (const mil_use *u = op->outputs[k]->uses; u; u = u->next_use) {
      mil_op *r = reader_in(u, b);
      if (!r || r == op) continue;
      int32_t ri = (int32_t)(intptr_t)pass_ptrmap_get(idx, r);
      if (ri > 0 && (!before || ol_before(l, ri, before))) before = ri;
    }
  const char *name = fresh_name(c, op);
  if (!name) {
    c->oom = true;
    return;
  }
  ol_unlink(l, i);
  ol_insert_after(l, before ? l->n[before].prev : l->tail, i);
  op->name = name;
}

/* Reorders b: its ops are visited from the last to the first; a movable
 * op is moved (and renamed) when visited, then the op's nested blocks
 * are reordered. */
static mil_status reorder_block(topo *c, mil_block *b, int depth) {
  if (depth > PASS_MAX_DEPTH)
    return mil_diag_error(c->d, MIL_ERR_UNSUPPORTED, "topological_reorder: blocks nested deeper than %d levels",
                          PASS_MAX_DEPTH);
  /* the ops the visit does something at, in block order */
  oplist ev = {0};
  bool any_movable = false;
  for (mil_op *op = b->first; op && !c->oom; op = op->next) {
    PASS_WALK_PREFETCH(op);
    bool mv = is_movable(c, op);
    if ((mv || op->n_blocks > 0) && !push_op(&ev, op)) c->oom = true;
    any_movable |= mv;
  }
  olist l = {0};
  pass_ptrmap idx = {0};
  bool *moved = NULL;
  if (!c->oom && any_movable &&
      (!build_list(c, b, &ev, &l, &idx) || !(moved = calloc((size_t)l.count, sizeof *moved))))
    c->oom = true;
  mil_status st = MIL_OK;
  int64_t n_moved = 0;
  for (int32_t e = ev.n - 1; e >= 0 && st == MIL_OK && !c->oom; e--) {
    mil_op *op = ev.v[e];
    if (is_movable(c, op)) {
      int32_t i = (int32_t)(intptr_t)pass_ptrmap_get(&idx, op);
      move_op(c, b, &l, &idx, op, i);
      moved[i] = true;
      n_moved++;
    }
    for (int32_t k = 0; k < op->n_blocks && st == MIL_OK && !c->oom; k++)
      st = reorder_block(c, op->blocks[k], depth + 1);
  }
  /* apply the new order: the ops that did not move keep their order, and
   * the moved ones go right before the next op of the list that did not
   * move (or to the end) */
  if (st == MIL_OK && !c->oom && n_moved) {
    for (int32_t i = 1; i < l.count; i++)
      if (moved[i]) mil_op_detach(l.n[i].op);
    int32_t first_pending = -1;
    for (int32_t i = l.n[0].next; i >= 0; i = l.n[i].next) {
      if (moved[i]) {
        if (first_pending < 0) first_pending = i;
        continue;
      }
      for (int32_t j = first_pending; j >= 0 && j != i; j = l.n[j].next) mil_block_insert_before(l.n[i].op, l.n[j].op);
      first_pending = -1;
    }
    for (int32_t j = first_pending; j >= 0; j = l.n[j].next) mil_block_append(b, l.n[j].op);
    c->changes += n_moved;
  }
  free(moved);
  free(l.n);
  free(ev.v);
  pass_ptrmap_free(&idx);
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
    for (int32_t s = 0; s < f->n_specs && st == MIL_OK; s++) st = reorder_block(&c, f->specs[s].block, 0);
  }
  pass_names_free(c.names);
  if (stats) stats->changes += c.changes;
  return st;
}

const mil_pass_def pass_def_topological_reorder = {"common::topological_reorder",
                                                   "move casts and other ops to just before their first use", NULL, 0,
                                                   run, NULL};
