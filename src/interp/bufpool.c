/* Memory one interpreter keeps between its runs (interp_bufpool):
 *
 *  - the allocator of each run's program copy. Blocks from POOL_MIN bytes
 *    on follow the memory plan of bufplan.c: once a run has recorded the
 *    order of its allocations, the next runs that allocate in that order
 *    take their blocks at planned offsets of one arena (no fresh pages,
 *    the arena as large as the most bytes held at once). Outside a plan,
 *    blocks of POOL_MIN..POOL_MAX_ONE bytes the copy frees wait here for a
 *    request of the same size (the oldest given back when the pool holds
 *    more than POOL_CAP bytes): glibc gives blocks above its mmap threshold
 *    back at once and trims the top of its heap, so each run faulted in and
 *    zeroed every activation again (mobilenet_v2 about 15 MB per run);
 *  - work buffers of the kernels (oneDNN's scratchpad and its blocked
 *    copies of a conv's input and output), grown to the largest request
 *    and kept;
 *  - kernels' objects of this interpreter alone, by key (oneDNN's stream
 *    and the memory objects of each cached primitive: made once, their
 *    data pointers set per call, instead of made and destroyed per call).
 *
 * An interpreter runs in one thread at a time (mil/interp.h), and so its
 * pool is used: forks have their own. MIL_INTERP_NO_PLAN=1 (read when the
 * pool is made) keeps the pool alone, for measuring. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "interp/interp_internal.h"

#define POOL_MIN ((size_t)64 << 10)
#define POOL_MAX_ONE ((size_t)16 << 20)
#define POOL_CAP ((size_t)64 << 20)
#define POOL_MAP ((size_t)1 << 20)
#define POOL_WS 6

/* A waiting block: the node is written into the block's own bytes. */
typedef struct pool_blk {
  struct pool_blk *prev, *next; /* newest first */
  size_t n;
} pool_blk;

typedef struct pool_ws {
  void *p;
  size_t n;
} pool_ws;

typedef struct pool_obj {
  const void *key; /* NULL: empty slot */
  void *obj;
  void (*free_fn)(void *);
} pool_obj;

struct interp_bufpool {
  mil_allocator alloc;
  pool_blk *head, *tail;
  size_t held;       /* bytes of the waiting blocks */
  size_t live, peak; /* bytes of the blocks of at least POOL_MIN the runs hold, and their most */
  pool_ws ws[POOL_WS];
  interp_bufplan *plan; /* blocks from POOL_MIN bytes on, or NULL: the pool's */
  pool_obj *objs;       /* open addressing, cap_objs a power of two (or 0) */
  size_t n_objs, cap_objs;
};

static void unlink_blk(interp_bufpool *p, pool_blk *b) {
  if (b->prev) b->prev->next = b->next;
  else p->head = b->next;
  if (b->next) b->next->prev = b->prev;
  else p->tail = b->prev;
  p->held -= b->n;
}

/* Blocks from POOL_MAP bytes on are mapped and unmapped here: glibc
 * keeps blocks below its (moving) mmap threshold in its heap after they
 * are freed, and a run's freed 16-32 MB activations then stayed resident
 * beside the live ones (unet1024: 407 MB peak RSS for 256 MB of live
 * activations). */
static void *sys_alloc(size_t n) {
  if (n < POOL_MAP) return malloc(n ? n : 1);
  void *q = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  return q == MAP_FAILED ? NULL : q;
}

static void sys_free(void *ptr, size_t n) {
  if (n < POOL_MAP) free(ptr);
  else munmap(ptr, n);
}

/* A block of n bytes: a waiting one of that size, else the system's. */
static void *pool_get(void *ud, size_t n) {
  interp_bufpool *p = ud;
  if (n >= POOL_MIN && n <= POOL_MAX_ONE)
    for (pool_blk *b = p->head; b; b = b->next)
      if (b->n == n) {
        unlink_blk(p, b);
        return b;
      }
  return sys_alloc(n);
}

/* A freed block waits (newest first; the oldest go back beyond the cap)
 * while the waiting and the live blocks take no more memory than the live
 * ones did at their most: the pool never raises the peak. */
static void pool_put(void *ud, void *ptr, size_t old) {
  interp_bufpool *p = ud;
  if (old < POOL_MIN || old > POOL_MAX_ONE || p->live + p->held + old > p->peak) {
    sys_free(ptr, old);
    return;
  }
  pool_blk *b = ptr;
  b->n = old;
  b->prev = NULL;
  b->next = p->head;
  if (p->head) p->head->prev = b;
  else p->tail = b;
  p->head = b;
  p->held += old;
  while (p->held > POOL_CAP && p->tail) {
    pool_blk *t = p->tail;
    unlink_blk(p, t);
    sys_free(t, t->n);
  }
}

/* Blocks from POOL_MIN bytes on go through the memory plan when there is
 * one (bufplan.c: the arena while a run follows it, else the pool); their
 * bytes are counted (live, peak). A block of that size resized moves. */
static void *pool_fn(void *ud, void *ptr, size_t old, size_t n) {
  interp_bufpool *p = ud;
  if (ptr && n) {
    if (old < POOL_MIN && n < POOL_MIN) return realloc(ptr, n);
    void *q = pool_fn(ud, NULL, 0, n);
    if (q) {
      memcpy(q, ptr, old < n ? old : n);
      pool_fn(ud, ptr, old, 0);
    }
    return q;
  }
  if (!ptr) {
    if (n < POOL_MIN) return malloc(n ? n : 1);
    void *q = p->plan ? interp_bufplan_alloc(p->plan, n) : pool_get(p, n);
    if (q && (p->live += n) > p->peak) p->peak = p->live;
    return q;
  }
  if (old < POOL_MIN) {
    free(ptr);
    return NULL;
  }
  p->live -= old < p->live ? old : p->live;
  if (!(p->plan && interp_bufplan_release(p->plan, ptr))) pool_put(p, ptr, old);
  return NULL;
}

static void drain(interp_bufpool *p) {
  while (p->head) {
    pool_blk *b = p->head;
    unlink_blk(p, b);
    sys_free(b, b->n);
  }
}

interp_bufpool *interp_bufpool_new(void) {
  interp_bufpool *p = calloc(1, sizeof *p);
  if (p) {
    p->alloc.fn = pool_fn;
    p->alloc.ud = p;
    interp_bufplan_sys sys = {pool_get, pool_put, p};
    p->plan = getenv("MIL_INTERP_NO_PLAN") ? NULL : interp_bufplan_new(&sys);
  }
  return p;
}

void interp_bufpool_free(interp_bufpool *p) {
  if (!p) return;
  interp_bufplan_free(p->plan); /* its blocks back into the pool first */
  drain(p);
  for (int i = 0; i < POOL_WS; i++) free(p->ws[i].p);
  for (size_t i = 0; i < p->cap_objs; i++)
    if (p->objs[i].key) p->objs[i].free_fn(p->objs[i].obj);
  free(p->objs);
  free(p);
}

static size_t obj_slot(const pool_obj *t, size_t cap, const void *key) {
  size_t h = (size_t)((uintptr_t)key >> 4) * 0x9E3779B97F4A7C15ull, i = h & (cap - 1);
  while (t[i].key && t[i].key != key) i = (i + 1) & (cap - 1);
  return i;
}

void *interp_bufpool_obj(interp_bufpool *p, const void *key) {
  if (!p || !key || !p->cap_objs) return NULL;
  const pool_obj *e = &p->objs[obj_slot(p->objs, p->cap_objs, key)];
  return e->key ? e->obj : NULL;
}

bool interp_bufpool_put_obj(interp_bufpool *p, const void *key, void *obj, void (*free_fn)(void *)) {
  if (!p || !key || interp_bufpool_obj(p, key)) return false;
  if ((p->n_objs + 1) * 2 > p->cap_objs) {
    size_t cap = p->cap_objs ? p->cap_objs * 2 : 64;
    pool_obj *t = calloc(cap, sizeof *t);
    if (!t) return false;
    for (size_t i = 0; i < p->cap_objs; i++)
      if (p->objs[i].key) t[obj_slot(t, cap, p->objs[i].key)] = p->objs[i];
    free(p->objs);
    p->objs = t;
    p->cap_objs = cap;
  }
  p->objs[obj_slot(p->objs, p->cap_objs, key)] = (pool_obj){key, obj, free_fn};
  p->n_objs++;
  return true;
}

void interp_bufpool_run_begin(interp_bufpool *p) {
  if (p) interp_bufplan_begin(p->plan);
}

/* With a plan for the next run the waiting blocks would only add to the
 * arena's memory: they go back. */
void interp_bufpool_run_end(interp_bufpool *p) {
  if (!p) return;
  interp_bufplan_end(p->plan);
  if (interp_bufplan_ready(p->plan)) drain(p);
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
