/* A memory plan for an interpreter's large blocks (interp_bufplan), the way
 * ONNX Runtime plans its activations: one run records the order in which
 * its program copy allocates and frees blocks above a size (the activations
 * of a 1024x1024 network: 16 to 128 MB each), and at its end each block is
 * given an offset in one arena so that blocks alive at the same time never
 * overlap (largest first, each at the lowest offset free for its whole
 * lifetime). The next runs take their blocks from the arena as long as they
 * allocate and free in the recorded order; at the first difference (other
 * input shapes, another branch of an If) the rest of that run asks the
 * system as before and its own order becomes the next plan. Without it each
 * run mapped and faulted in every large activation again (unet1024 fp32:
 * 143,000 page faults, about 560 MB of fresh pages per run).
 *
 * The arena stays mapped (and its touched pages resident) while the
 * interpreter lives, as ONNX Runtime's arena does; it is as large as the
 * most bytes of large blocks one run held at once, rounded up by the
 * placement. Used by one thread at a time (bufpool.c's owner). */
#include <stdlib.h>
#include <string.h>

#include "interp/interp_internal.h"

#define PLAN_MAX_EVENTS ((size_t)1 << 16)
#define PLAN_MAX_BLOCKS 4096 /* placement takes time quadratic in the blocks */
#define PLAN_ALIGN ((size_t)64)

/* One allocation (n > 0) or free (n == 0) of block number blk. */
typedef struct plan_ev {
  size_t n;
  int32_t blk;
} plan_ev;

typedef struct plan_live {
  void *p;
  size_t n;
  int32_t blk;
  bool in_arena;
} plan_live;

struct interp_bufplan {
  interp_bufplan_sys sys; /* where blocks outside the arena come from */
  /* this run */
  plan_ev *ev;
  size_t nev, cap_ev;
  bool ev_lost; /* too many events or out of memory: no plan from this run */
  int32_t nblk;
  plan_live *live;
  size_t nlive, cap_live;
  size_t pos;     /* events of the plan's trace matched so far */
  bool following; /* every event so far matched the plan's trace */
  /* the plan */
  plan_ev *pev;
  size_t npev;
  size_t *off; /* per block */
  char *base;
  size_t size;
};

interp_bufplan *interp_bufplan_new(const interp_bufplan_sys *sys) {
  interp_bufplan *pl = calloc(1, sizeof *pl);
  if (pl) pl->sys = *sys;
  return pl;
}

void interp_bufplan_free(interp_bufplan *pl) {
  if (!pl) return;
  for (size_t i = 0; i < pl->nlive; i++)
    if (!pl->live[i].in_arena) pl->sys.put(pl->sys.ud, pl->live[i].p, pl->live[i].n);
  free(pl->ev), free(pl->live), free(pl->pev), free(pl->off), free(pl->base);
  free(pl);
}

void interp_bufplan_begin(interp_bufplan *pl) {
  if (!pl) return;
  pl->nev = 0;
  pl->ev_lost = false;
  pl->nblk = 0;
  pl->pos = 0;
  pl->following = pl->base != NULL && pl->npev > 0 && pl->nlive == 0;
}

static void record(interp_bufplan *pl, size_t n, int32_t blk) {
  if (pl->ev_lost) return;
  if (pl->nev == pl->cap_ev) {
    size_t cap = pl->cap_ev ? pl->cap_ev * 2 : 64;
    plan_ev *e = cap <= PLAN_MAX_EVENTS ? realloc(pl->ev, cap * sizeof *e) : NULL;
    if (!e) {
      pl->ev_lost = true;
      return;
    }
    pl->ev = e, pl->cap_ev = cap;
  }
  pl->ev[pl->nev++] = (plan_ev){n, blk};
}

/* Whether event (n, blk) is the plan's next one; stops following if not. */
static bool follow(interp_bufplan *pl, size_t n, int32_t blk) {
  if (pl->following && pl->pos < pl->npev && pl->pev[pl->pos].n == n && pl->pev[pl->pos].blk == blk) {
    pl->pos++;
    return true;
  }
  pl->following = false;
  return false;
}

void *interp_bufplan_alloc(interp_bufplan *pl, size_t n) {
  if (pl->nlive == pl->cap_live) {
    size_t cap = pl->cap_live ? pl->cap_live * 2 : 16;
    plan_live *l = realloc(pl->live, cap * sizeof *l);
    if (!l) return NULL;
    pl->live = l, pl->cap_live = cap;
  }
  int32_t blk = pl->nblk++;
  record(pl, n, blk);
  bool in_arena = follow(pl, n, blk);
  void *p = in_arena ? pl->base + pl->off[blk] : pl->sys.get(pl->sys.ud, n);
  if (!p) {
    pl->ev_lost = true; /* the trace no longer matches the blocks */
    return NULL;
  }
  pl->live[pl->nlive++] = (plan_live){p, n, blk, in_arena};
  return p;
}

bool interp_bufplan_release(interp_bufplan *pl, void *p) {
  for (size_t i = pl->nlive; i-- > 0;)
    if (pl->live[i].p == p) {
      plan_live l = pl->live[i];
      pl->live[i] = pl->live[--pl->nlive];
      record(pl, 0, l.blk);
      follow(pl, 0, l.blk);
      if (!l.in_arena) pl->sys.put(pl->sys.ud, p, l.n);
      return true;
    }
  return false;
}

typedef struct plan_blk {
  size_t n, a, f; /* bytes (aligned), event index of its allocation and of its free */
  int32_t id;
} plan_blk;

static int by_size_desc(const void *x, const void *y) {
  const plan_blk *a = x, *b = y;
  if (a->n != b->n) return a->n > b->n ? -1 : 1;
  return a->a < b->a ? -1 : a->a > b->a;
}

static int by_off(const void *x, const void *y) {
  const size_t *a = x, *b = y; /* pairs (offset, end) */
  return a[0] < b[0] ? -1 : a[0] > b[0];
}

/* Offsets for the recorded blocks: largest first, each at the lowest
 * offset that no block alive at an overlapping time occupies. */
static bool place(const plan_ev *ev, size_t nev, int32_t nblk, size_t *off, size_t *total) {
  plan_blk *b = calloc((size_t)nblk, sizeof *b);
  size_t *busy = malloc((size_t)nblk * 2 * sizeof *busy);
  bool ok = b && busy;
  for (size_t i = 0; ok && i < nev; i++) {
    plan_blk *k = &b[ev[i].blk];
    if (ev[i].n) k->n = (ev[i].n + PLAN_ALIGN - 1) & ~(PLAN_ALIGN - 1), k->a = i, k->id = ev[i].blk;
    else k->f = i;
  }
  if (ok) qsort(b, (size_t)nblk, sizeof *b, by_size_desc);
  *total = 0;
  for (int32_t i = 0; ok && i < nblk; i++) {
    size_t nb = 0;
    for (int32_t j = 0; j < i; j++) /* the placed blocks alive with b[i] */
      if (b[j].a < b[i].f && b[i].a < b[j].f) busy[2 * nb] = off[b[j].id], busy[2 * nb + 1] = off[b[j].id] + b[j].n, nb++;
    qsort(busy, nb, 2 * sizeof *busy, by_off);
    size_t at = 0;
    for (size_t j = 0; j < nb && busy[2 * j] < at + b[i].n; j++)
      if (busy[2 * j + 1] > at) at = busy[2 * j + 1];
    off[b[i].id] = at;
    if (at + b[i].n > *total) *total = at + b[i].n;
  }
  free(b), free(busy);
  return ok;
}

static bool same_trace(const plan_ev *a, size_t na, const plan_ev *b, size_t nb) {
  if (na != nb) return false;
  for (size_t i = 0; i < na; i++)
    if (a[i].n != b[i].n || a[i].blk != b[i].blk) return false;
  return true;
}

void interp_bufplan_end(interp_bufplan *pl) {
  if (!pl || pl->ev_lost || pl->nlive || !pl->nblk || pl->nblk > PLAN_MAX_BLOCKS) return;
  if (pl->base && same_trace(pl->ev, pl->nev, pl->pev, pl->npev)) return;
  size_t *off = malloc((size_t)pl->nblk * sizeof *off), total = 0;
  if (!off || !place(pl->ev, pl->nev, pl->nblk, off, &total)) {
    free(off);
    return;
  }
  if (total > pl->size) { /* a larger arena (its pages are mapped on first use) */
    free(pl->base);
    pl->base = aligned_alloc(PLAN_ALIGN, total);
    pl->size = pl->base ? total : 0;
  }
  free(pl->off), free(pl->pev);
  pl->off = off;
  pl->pev = pl->ev, pl->npev = pl->nev; /* this run's trace is the plan's */
  pl->ev = NULL, pl->nev = pl->cap_ev = 0;
  if (!pl->base) pl->npev = 0; /* no arena: nothing to follow */
}

bool interp_bufplan_ready(const interp_bufplan *pl) { return pl && pl->base && pl->npev > 0; }
