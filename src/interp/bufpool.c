/* Memory one interpreter keeps between its runs (interp_bufpool):
 *
 *  - the allocator of each run's program copy: large blocks the copy frees
 *    (the memory plan's activations, the arena's chunks, the whole copy at
 *    the end of a run) wait here for a request of the same size, so the
 *    next op or the next run takes them back instead of asking the system
 *    for fresh pages (glibc gives blocks above its mmap threshold back at
 *    once and trims the top of its heap: each run then faulted in and
 *    zeroed every activation again, mobilenet_v2 about 15 MB per run);
 *  - work buffers of the kernels (oneDNN's scratchpad and its blocked
 *    copies of a conv's input and output), grown to the largest request
 *    and kept.
 *
 * Blocks of POOL_MIN..POOL_MAX_ONE bytes are kept, the oldest given back
 * when the pool holds more than POOL_CAP bytes. An interpreter runs in one
 * thread at a time (mil/interp.h), and so its pool is used: forks have
 * their own. */
#include <stdlib.h>
#include <string.h>

#include "interp/interp_internal.h"

#define POOL_MIN ((size_t)64 << 10)
#define POOL_MAX_ONE ((size_t)16 << 20)
#define POOL_CAP ((size_t)64 << 20)
#define POOL_WS 4

/* A waiting block: the node is written into the block's own bytes. */
typedef struct pool_blk {
  struct pool_blk *prev, *next; /* newest first */
  size_t n;
} pool_blk;

typedef struct pool_ws {
  void *p;
  size_t n;
} pool_ws;

struct interp_bufpool {
  mil_allocator alloc;
  pool_blk *head, *tail;
  size_t held; /* bytes of the waiting blocks */
  pool_ws ws[POOL_WS];
};

static void unlink_blk(interp_bufpool *p, pool_blk *b) {
  if (b->prev) b->prev->next = b->next;
  else p->head = b->next;
  if (b->next) b->next->prev = b->prev;
  else p->tail = b->prev;
  p->held -= b->n;
}

static void *pool_fn(void *ud, void *ptr, size_t old, size_t n) {
  interp_bufpool *p = ud;
  if (!ptr) {
    if (n >= POOL_MIN && n <= POOL_MAX_ONE)
      for (pool_blk *b = p->head; b; b = b->next)
        if (b->n == n) {
          unlink_blk(p, b);
          return b;
        }
    return malloc(n ? n : 1);
  }
  if (n) return realloc(ptr, n); /* a live block is the system's, as any other */
  if (old < POOL_MIN || old > POOL_MAX_ONE) {
    free(ptr);
    return NULL;
  }
  pool_blk *b = ptr;
  b->n = old;
  b->prev = NULL;
  b->next = p->head;
  if (p->head) p->head->prev = b;
  else p->tail = b;
  p->head = b;
  p->held += old;
  while (p->held > POOL_CAP && p->tail) { /* the oldest go back */
    pool_blk *t = p->tail;
    unlink_blk(p, t);
    free(t);
  }
  return NULL;
}

interp_bufpool *interp_bufpool_new(void) {
  interp_bufpool *p = calloc(1, sizeof *p);
  if (p) {
    p->alloc.fn = pool_fn;
    p->alloc.ud = p;
  }
  return p;
}

void interp_bufpool_free(interp_bufpool *p) {
  if (!p) return;
  while (p->head) {
    pool_blk *b = p->head;
    unlink_blk(p, b);
    free(b);
  }
  for (int i = 0; i < POOL_WS; i++) free(p->ws[i].p);
  free(p);
}

const mil_allocator *interp_bufpool_allocator(interp_bufpool *p) { return p ? &p->alloc : NULL; }

void *interp_bufpool_work(interp_bufpool *p, int slot, size_t n) {
  if (!p || slot < 0 || slot >= POOL_WS) return NULL;
  pool_ws *w = &p->ws[slot];
  if (w->n >= n && w->p) return w->p;
  size_t want = (n + 63) & ~(size_t)63; /* 64-byte aligned, a multiple of 64 */
  void *q = aligned_alloc(64, want ? want : 64);
  if (!q) return NULL;
  free(w->p);
  w->p = q;
  w->n = want;
  return q;
}
