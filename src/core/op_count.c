/* The program's op counts: how many ops it holds in all, and how many of
 * each type, kept up to date as ops are placed in and detached from blocks
 * that belong to a function (ir.c calls ir_count_op). Passes use the
 * per-type count to return at once when the op type they rewrite is absent,
 * the pipeline driver uses the total instead of walking the program after
 * every pass.
 *
 * The per-type table is open addressing keyed by the interned type string
 * (pointer identity), grown at 3/4 load; it is never shrunk (a type whose
 * count drops to zero keeps its slot).
 */
#include <string.h>

#include "core/core_internal.h"

typedef struct tc_slot {
  const char *type; /* interned; NULL = empty */
  int64_t count;
} tc_slot;

struct ir_typecount {
  tc_slot *slots;
  size_t cap, used; /* cap is a power of two */
};

static size_t slot_of(const char *type, size_t cap) {
  uintptr_t h = (uintptr_t)type;
  h ^= h >> 17;
  h *= (uintptr_t)0x9e3779b97f4a7c15ull;
  return (size_t)(h >> 7) & (cap - 1);
}

static bool grow(const mil_allocator *a, ir_typecount *t) {
  size_t nc = t->cap ? t->cap * 2 : 64;
  tc_slot *ns = ir_raw_alloc(a, nc * sizeof *ns);
  if (!ns) return false;
  memset(ns, 0, nc * sizeof *ns);
  for (size_t i = 0; i < t->cap; i++) {
    if (!t->slots[i].type) continue;
    size_t k = slot_of(t->slots[i].type, nc);
    while (ns[k].type) k = (k + 1) & (nc - 1);
    ns[k] = t->slots[i];
  }
  if (t->slots) ir_raw_free(a, t->slots, t->cap * sizeof *t->slots);
  t->slots = ns;
  t->cap = nc;
  return true;
}

void ir_count_op(mil_program *p, const char *type, int64_t delta) {
  p->n_ops += delta;
  ir_typecount *t = p->typecounts;
  if (!t) {
    t = ir_raw_alloc(p->alloc, sizeof *t);
    if (!t) return; /* counts by type become unknown: mil_program_count_op_type answers -1 */
    memset(t, 0, sizeof *t);
    p->typecounts = t;
  }
  if ((t->used + 1) * 4 > t->cap * 3 && !grow(p->alloc, t)) {
    t->used = SIZE_MAX; /* marks the table unusable */
    return;
  }
  if (t->used == SIZE_MAX) return;
  size_t k = slot_of(type, t->cap);
  while (t->slots[k].type && t->slots[k].type != type) k = (k + 1) & (t->cap - 1);
  if (!t->slots[k].type) {
    t->slots[k].type = type;
    t->used++;
  }
  t->slots[k].count += delta;
}

void ir_typecount_free(mil_program *p) {
  ir_typecount *t = p->typecounts;
  if (!t) return;
  if (t->slots) ir_raw_free(p->alloc, t->slots, t->cap * sizeof *t->slots);
  ir_raw_free(p->alloc, t, sizeof *t);
  p->typecounts = NULL;
}

int64_t mil_program_count_op_type(const mil_program *p, const char *type) {
  const ir_typecount *t = p->typecounts;
  if (t && t->used == SIZE_MAX) return -1;
  if (!t || !t->cap) return 0;
  const char *key = ir_intern_find(p->strs, type, strlen(type));
  if (!key) return 0; /* never interned: no op can have this type */
  size_t k = slot_of(key, t->cap);
  while (t->slots[k].type) {
    if (t->slots[k].type == key) return t->slots[k].count;
    k = (k + 1) & (t->cap - 1);
  }
  return 0;
}

static int recount_visit(mil_op *op, void *ud) {
  ir_count_op((mil_program *)ud, op->type, 1);
  return 0;
}

void mil_program_recount_ops(mil_program *p) {
  ir_typecount_free(p);
  p->n_ops = 0;
  mil_program_walk(p, recount_visit, p);
}
