/* String interning: equal strings of one program share one pointer, so name
 * and op-type comparisons are pointer comparisons. Open addressing, grown at
 * 50% load; the strings themselves live in the program arena. */
#include <string.h>

#include "core/core_internal.h"

struct ir_intern {
  const mil_allocator *alloc;
  ir_arena *arena;
  const char **slots;
  uint32_t *lens;
  uint64_t *hashes;
  size_t cap, count;
};

ir_intern *ir_intern_new(const mil_allocator *a, ir_arena *ar) {
  ir_intern *t = ir_raw_alloc(a, sizeof *t);
  if (!t) return NULL;
  memset(t, 0, sizeof *t);
  t->alloc = a;
  t->arena = ar;
  return t;
}

static void free_tables(ir_intern *t) {
  ir_raw_free(t->alloc, t->slots, t->cap * sizeof *t->slots);
  ir_raw_free(t->alloc, t->lens, t->cap * sizeof *t->lens);
  ir_raw_free(t->alloc, t->hashes, t->cap * sizeof *t->hashes);
}

void ir_intern_free(ir_intern *t) {
  if (!t) return;
  free_tables(t);
  ir_raw_free(t->alloc, t, sizeof *t);
}

static int grow(ir_intern *t) {
  size_t ncap = t->cap ? t->cap * 2 : 256;
  const char **ns = ir_raw_alloc(t->alloc, ncap * sizeof *ns);
  uint32_t *nl = ir_raw_alloc(t->alloc, ncap * sizeof *nl);
  uint64_t *nh = ir_raw_alloc(t->alloc, ncap * sizeof *nh);
  if (!ns || !nl || !nh) {
    ir_raw_free(t->alloc, ns, ncap * sizeof *ns);
    ir_raw_free(t->alloc, nl, ncap * sizeof *nl);
    ir_raw_free(t->alloc, nh, ncap * sizeof *nh);
    return 0;
  }
  memset(ns, 0, ncap * sizeof *ns);
  for (size_t i = 0; i < t->cap; i++) {
    if (!t->slots[i]) continue;
    size_t j = t->hashes[i] & (ncap - 1);
    while (ns[j]) j = (j + 1) & (ncap - 1);
    ns[j] = t->slots[i];
    nl[j] = t->lens[i];
    nh[j] = t->hashes[i];
  }
  free_tables(t);
  t->slots = ns;
  t->lens = nl;
  t->hashes = nh;
  t->cap = ncap;
  return 1;
}

const char *ir_intern_str(ir_intern *t, const char *s, size_t len) {
  if (!s) return NULL;
  if (len == (size_t)-1) len = strlen(s);
  if (len > UINT32_MAX) return NULL;
  if ((t->count + 1) * 2 > t->cap && !grow(t)) return NULL;
  uint64_t h = ir_hash_bytes(s, len, IR_HASH_SEED);
  size_t j = h & (t->cap - 1);
  while (t->slots[j]) {
    if (t->hashes[j] == h && t->lens[j] == len && memcmp(t->slots[j], s, len) == 0) return t->slots[j];
    j = (j + 1) & (t->cap - 1);
  }
  char *copy = ir_arena_alloc(t->arena, len + 1);
  if (!copy) return NULL;
  memcpy(copy, s, len);
  copy[len] = 0;
  t->slots[j] = copy;
  t->lens[j] = (uint32_t)len;
  t->hashes[j] = h;
  t->count++;
  return copy;
}

const char *ir_intern_find(const ir_intern *t, const char *s, size_t len) {
  if (!s || !t->cap) return NULL;
  if (len == (size_t)-1) len = strlen(s);
  uint64_t h = ir_hash_bytes(s, len, IR_HASH_SEED);
  size_t j = h & (t->cap - 1);
  while (t->slots[j]) {
    if (t->hashes[j] == h && t->lens[j] == len && memcmp(t->slots[j], s, len) == 0) return t->slots[j];
    j = (j + 1) & (t->cap - 1);
  }
  return NULL;
}
