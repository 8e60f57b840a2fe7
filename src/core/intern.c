/* String interning: equal strings of one program share one pointer, so name
 * and op-type comparisons are pointer comparisons. Open addressing, grown at
 * 50% load; the strings themselves live in the program arena. */
#include <string.h>

#include "core/core_internal.h"

/* One slot per interned string: the pointer, its length and 32 bits of
 * its hash side by side, so a probe touches one cache line. */
typedef struct intern_slot {
  const char *s; /* NULL: empty */
  uint32_t len;
  uint32_t hash;
} intern_slot;

#define RECENT 1024 /* a power of two */

struct ir_intern {
  const mil_allocator *alloc;
  ir_arena *arena;
  intern_slot *slots;
  size_t cap, count;
  /* Interned pointers handed out lately, by address: interning a string
   * that is already an interned pointer (op types and names passed back
   * in) is then one load and compare, with no hashing. */
  const char *recent[RECENT];
};

static size_t recent_of(const char *s) { return (size_t)(((uintptr_t)s >> 3) * 0x9e3779b1u >> 7) & (RECENT - 1); }

/* Word-at-a-time string hash (names are short: most fit in two words). */
static uint64_t str_hash(const char *s, size_t len) {
  uint64_t h = 0x9e3779b97f4a7c15ull ^ (len * 0xff51afd7ed558ccdull);
  size_t i = 0;
  for (; i + 8 <= len; i += 8) {
    uint64_t w;
    memcpy(&w, s + i, 8);
    h = (h ^ w) * 0xbf58476d1ce4e5b9ull;
    h ^= h >> 31;
  }
  if (i < len) {
    uint64_t w = 0;
    memcpy(&w, s + i, len - i);
    h = (h ^ w) * 0x94d049bb133111ebull;
  }
  h ^= h >> 29;
  h *= 0xbf58476d1ce4e5b9ull;
  return h ^ (h >> 32);
}

ir_intern *ir_intern_new(const mil_allocator *a, ir_arena *ar) {
  ir_intern *t = ir_raw_alloc(a, sizeof *t);
  if (!t) return NULL;
  memset(t, 0, sizeof *t);
  t->alloc = a;
  t->arena = ar;
  return t;
}

void ir_intern_free(ir_intern *t) {
  if (!t) return;
  ir_raw_free(t->alloc, t->slots, t->cap * sizeof *t->slots);
  ir_raw_free(t->alloc, t, sizeof *t);
}

static int grow(ir_intern *t) {
  size_t ncap = t->cap ? t->cap * 2 : 256;
  intern_slot *ns = ir_raw_alloc(t->alloc, ncap * sizeof *ns);
  if (!ns) return 0;
  memset(ns, 0, ncap * sizeof *ns);
  for (size_t i = 0; i < t->cap; i++) {
    if (!t->slots[i].s) continue;
    size_t j = t->slots[i].hash & (ncap - 1);
    while (ns[j].s) j = (j + 1) & (ncap - 1);
    ns[j] = t->slots[i];
  }
  ir_raw_free(t->alloc, t->slots, t->cap * sizeof *t->slots);
  t->slots = ns;
  t->cap = ncap;
  return 1;
}

static const char *intern_slow(ir_intern *t, const char *s, size_t len);

/* The slot holding s, or the empty slot where it would go. */
static intern_slot *probe(const ir_intern *t, const char *s, size_t len, uint32_t h) {
  size_t j = h & (t->cap - 1);
  for (;; j = (j + 1) & (t->cap - 1)) {
    intern_slot *e = &t->slots[j];
    if (!e->s || (e->hash == h && e->len == len && (e->s == s || memcmp(e->s, s, len) == 0))) return e;
  }
}

const char *ir_intern_str(ir_intern *t, const char *s, size_t len) {
  if (!s) return NULL;
  const char **r = &t->recent[recent_of(s)];
  if (*r == s && (len == (size_t)-1 || s[len] == 0)) return s; /* an interned string, whole */
  const char *got = intern_slow(t, s, len);
  if (got) t->recent[recent_of(got)] = got;
  return got;
}

static const char *intern_slow(ir_intern *t, const char *s, size_t len) {
  if (len == (size_t)-1) len = strlen(s);
  if (len > UINT32_MAX) return NULL;
  if ((t->count + 1) * 2 > t->cap && !grow(t)) return NULL;
  uint32_t h = (uint32_t)str_hash(s, len);
  intern_slot *e = probe(t, s, len, h);
  if (e->s) return e->s;
  char *copy = ir_arena_alloc(t->arena, len + 1);
  if (!copy) return NULL;
  memcpy(copy, s, len);
  copy[len] = 0;
  e->s = copy;
  e->len = (uint32_t)len;
  e->hash = h;
  t->count++;
  return copy;
}

const char *ir_intern_find(const ir_intern *t, const char *s, size_t len) {
  if (!s || !t->cap) return NULL;
  if (len == (size_t)-1) len = strlen(s);
  if (len > UINT32_MAX) return NULL;
  return probe(t, s, len, (uint32_t)str_hash(s, len))->s;
}
