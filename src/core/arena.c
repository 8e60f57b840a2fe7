/* Arena allocation: every object of a program comes from one arena and is
 * freed with it. Large requests get a chunk of their own so that big const
 * values do not waste the tail of a shared chunk. */
#include <stdlib.h>
#include <string.h>

#include "core/core_internal.h"

#define ARENA_CHUNK (64 * 1024)
#define ARENA_ALIGN 16

typedef struct chunk {
  struct chunk *next;
  size_t size, used;
  /* data follows, aligned */
} chunk;

struct ir_arena {
  const mil_allocator *alloc;
  chunk *head; /* current chunk for small allocations */
  chunk *big;  /* list of dedicated chunks */
  size_t total;
};

static void *default_alloc(void *ud, void *ptr, size_t old, size_t n) {
  (void)ud;
  (void)old;
  if (n == 0) {
    free(ptr);
    return NULL;
  }
  return realloc(ptr, n);
}

static const mil_allocator g_default = {default_alloc, NULL};

const mil_allocator *mil_default_allocator(void) { return &g_default; }

void *ir_raw_alloc(const mil_allocator *a, size_t n) { return a->fn(a->ud, NULL, 0, n ? n : 1); }
void *ir_raw_realloc(const mil_allocator *a, void *p, size_t old, size_t n) { return a->fn(a->ud, p, old, n ? n : 1); }
void ir_raw_free(const mil_allocator *a, void *p, size_t n) {
  if (p) a->fn(a->ud, p, n, 0);
}

static size_t hdr_size(void) { return (sizeof(chunk) + ARENA_ALIGN - 1) & ~(size_t)(ARENA_ALIGN - 1); }

static chunk *chunk_new(const mil_allocator *a, size_t cap) {
  chunk *c = ir_raw_alloc(a, hdr_size() + cap);
  if (!c) return NULL;
  c->next = NULL;
  c->size = cap;
  c->used = 0;
  return c;
}

ir_arena *ir_arena_new(const mil_allocator *a) {
  if (!a) a = &g_default;
  ir_arena *ar = ir_raw_alloc(a, sizeof *ar);
  if (!ar) return NULL;
  memset(ar, 0, sizeof *ar);
  ar->alloc = a;
  return ar;
}

static void free_list(const mil_allocator *a, chunk *c) {
  while (c) {
    chunk *n = c->next;
    ir_raw_free(a, c, hdr_size() + c->size);
    c = n;
  }
}

void ir_arena_free(ir_arena *ar) {
  if (!ar) return;
  free_list(ar->alloc, ar->head);
  free_list(ar->alloc, ar->big);
  ir_raw_free(ar->alloc, ar, sizeof *ar);
}

static void *arena_take(ir_arena *ar, size_t n, bool zero) {
  if (n == 0) n = 1;
  if (n > SIZE_MAX - 2 * ARENA_ALIGN) return NULL;
  size_t need = (n + ARENA_ALIGN - 1) & ~(size_t)(ARENA_ALIGN - 1);
  if (need > ARENA_CHUNK / 4) {
    chunk *c = chunk_new(ar->alloc, need);
    if (!c) return NULL;
    c->used = need;
    c->next = ar->big;
    ar->big = c;
    ar->total += need;
    void *p = (char *)c + hdr_size();
    if (zero) memset(p, 0, n);
    return p;
  }
  if (!ar->head || ar->head->size - ar->head->used < need) {
    chunk *c = chunk_new(ar->alloc, ARENA_CHUNK);
    if (!c) return NULL;
    c->next = ar->head;
    ar->head = c;
  }
  void *p = (char *)ar->head + hdr_size() + ar->head->used;
  ar->head->used += need;
  ar->total += need;
  if (zero) memset(p, 0, n);
  return p;
}

void *ir_arena_alloc(ir_arena *ar, size_t n) { return arena_take(ar, n, true); }

void *ir_arena_alloc_uninit(ir_arena *ar, size_t n) { return arena_take(ar, n, false); }

void *ir_arena_alloc_aligned(ir_arena *ar, size_t n, size_t align) {
  if (n == 0 || n > ARENA_CHUNK / 4 || align <= ARENA_ALIGN || (align & (align - 1)) || align > 4096)
    return ir_arena_alloc(ar, n);
  size_t need = (n + ARENA_ALIGN - 1) & ~(size_t)(ARENA_ALIGN - 1);
  for (int attempt = 0; attempt < 2; attempt++) {
    if (ar->head) {
      uintptr_t base = (uintptr_t)ar->head + hdr_size();
      uintptr_t at = (base + ar->head->used + align - 1) & ~(uintptr_t)(align - 1);
      size_t used = (size_t)(at - base) + need;
      if (used <= ar->head->size) {
        ar->total += used - ar->head->used;
        ar->head->used = used;
        memset((void *)at, 0, n);
        return (void *)at;
      }
    }
    chunk *c = chunk_new(ar->alloc, ARENA_CHUNK);
    if (!c) return NULL;
    c->next = ar->head;
    ar->head = c;
  }
  return NULL;
}

void *ir_arena_grow(ir_arena *ar, void *old, size_t old_n, size_t new_n, size_t elem) {
  if (new_n && elem > SIZE_MAX / new_n) return NULL;
  void *p = ir_arena_alloc(ar, new_n * elem);
  if (p && old && old_n) memcpy(p, old, (old_n < new_n ? old_n : new_n) * elem);
  return p;
}

size_t ir_arena_bytes(const ir_arena *ar) { return ar->total; }
