/* String interning: equal strings of one program share one pointer, so name
 * and op-type comparisons are pointer comparisons. Open addressing, grown at
 * 50% load; the strings themselves live in the program arena. */
#include <stdint.h>
#include <string.h>
#if defined(__linux__)
#include <sys/mman.h>
#endif

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
  void *block;  /* the allocation slots lies in (aligned within it) */
  size_t bytes; /* its size */
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
  if (i < len) { /* the last 1-7 bytes, little-endian, in two loads that may overlap */
    const unsigned char *p = (const unsigned char *)s + i;
    size_t r = len - i;
    uint64_t w;
    if (r >= 4) {
      uint32_t a, b;
      memcpy(&a, p, 4);
      memcpy(&b, p + r - 4, 4);
      w = a | (uint64_t)b << (8 * (r - 4));
    } else if (r >= 2) {
      uint16_t a, b;
      memcpy(&a, p, 2);
      memcpy(&b, p + r - 2, 2);
      w = a | (uint64_t)b << (8 * (r - 2));
    } else
      w = p[0];
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
  ir_raw_free(t->alloc, t->block, t->bytes);
  ir_raw_free(t->alloc, t, sizeof *t);
}

#define HUGE_PAGE ((size_t)2 << 20)

/* A table of ncap slots. From 2 MiB on it is placed on huge pages where
 * the system has them: a probe of a string not yet interned lands on a
 * random slot, and with 4 KiB pages nearly every such probe of a table
 * of megabytes also misses the TLB. */
static intern_slot *table_new(ir_intern *t, size_t ncap, void **block, size_t *bytes) {
  size_t n = ncap * sizeof(intern_slot);
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  if (n >= HUGE_PAGE) {
    /* room to start on a huge-page boundary (the rest is never touched) */
    char *b = ir_raw_alloc(t->alloc, n + HUGE_PAGE);
    if (!b) return NULL;
    char *at = (char *)(((uintptr_t)b + HUGE_PAGE - 1) & ~(uintptr_t)(HUGE_PAGE - 1));
    (void)madvise(at, n, MADV_HUGEPAGE);
    *block = b;
    *bytes = n + HUGE_PAGE;
    return (intern_slot *)at;
  }
#endif
  *block = ir_raw_alloc(t->alloc, n);
  *bytes = n;
  return *block;
}

static int grow(ir_intern *t) {
  size_t ncap = t->cap ? t->cap * 2 : 256, bytes;
  void *block;
  intern_slot *ns = table_new(t, ncap, &block, &bytes);
  if (!ns) return 0;
  memset(ns, 0, ncap * sizeof *ns);
  for (size_t i = 0; i < t->cap; i++) {
    if (!t->slots[i].s) continue;
    size_t j = t->slots[i].hash & (ncap - 1);
    while (ns[j].s) j = (j + 1) & (ncap - 1);
    ns[j] = t->slots[i];
  }
  ir_raw_free(t->alloc, t->block, t->bytes);
  t->slots = ns;
  t->block = block;
  t->bytes = bytes;
  t->cap = ncap;
  return 1;
}

static const char *intern_slow(ir_intern *t, const char *s, size_t len, bool *added);

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
  bool added;
  const char *got = intern_slow(t, s, len, &added);
  if (got) t->recent[recent_of(got)] = got;
  return got;
}

/* Interns s; *added tells whether no equal string was interned before. */
static const char *intern_slow(ir_intern *t, const char *s, size_t len, bool *added) {
  *added = false;
  if (len == (size_t)-1) len = strlen(s);
  if (len > UINT32_MAX) return NULL;
  if ((t->count + 1) * 2 > t->cap && !grow(t)) return NULL;
  uint32_t h = (uint32_t)str_hash(s, len);
  intern_slot *e = probe(t, s, len, h);
  if (e->s) return e->s;
  char *copy = ir_arena_alloc_uninit(t->arena, len + 1);
  if (!copy) return NULL;
  memcpy(copy, s, len);
  copy[len] = 0;
  e->s = copy;
  e->len = (uint32_t)len;
  e->hash = h;
  t->count++;
  *added = true;
  return copy;
}

const char *mil_program_intern_new(mil_program *p, const char *s, size_t len, bool *added) {
  ir_intern *t = p->strs;
  *added = false;
  if (!s) return NULL;
  const char *got = intern_slow(t, s, len, added);
  if (got) t->recent[recent_of(got)] = got;
  return got;
}

void mil_program_intern_prefetch(const mil_program *p, const char *s, size_t len) {
  const ir_intern *t = p->strs;
#if defined(__GNUC__) || defined(__clang__)
  if (!s || !t->cap || len > UINT32_MAX) return;
  __builtin_prefetch(&t->slots[(uint32_t)str_hash(s, len) & (t->cap - 1)]);
#else
  (void)t, (void)s, (void)len;
#endif
}

bool ir_intern_seed(ir_intern *dst, const ir_intern *src) {
  if (dst->count || !src->cap) return true;
  void *block;
  size_t bytes;
  intern_slot *ns = table_new(dst, src->cap, &block, &bytes);
  if (!ns) return false;
  memcpy(ns, src->slots, src->cap * sizeof *ns);
  if (dst->block) ir_raw_free(dst->alloc, dst->block, dst->bytes);
  dst->slots = ns;
  dst->block = block;
  dst->bytes = bytes;
  dst->cap = src->cap;
  dst->count = src->count;
  memcpy(dst->recent, src->recent, sizeof dst->recent);
  return true;
}

const char *ir_intern_find(const ir_intern *t, const char *s, size_t len) {
  if (!s || !t->cap) return NULL;
  if (len == (size_t)-1) len = strlen(s);
  if (len > UINT32_MAX) return NULL;
  return probe(t, s, len, (uint32_t)str_hash(s, len))->s;
}
