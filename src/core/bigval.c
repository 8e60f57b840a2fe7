/* Large tensor buffers: bytes of values of at least IR_BIG_MIN bytes live
 * apart from the arena, each in its own allocation listed on the program,
 * so that a pipeline can give back the memory of weights that no op refers
 * to any more (a weight replaced by its fp16 cast, a transposed copy, a
 * const folded away). Without this the arena would hold every intermediate
 * weight until the program is freed, and a 1 GB model would peak at several
 * times its size.
 *
 * mil_program_collect_garbage marks the large buffers reachable from the
 * program (every var's value, every literal argument, every attribute of
 * ops, blocks, functions and the program, recursively through lists,
 * tuples and dicts) and frees the rest. Only values made by value.c carry a
 * large buffer (their `big` field); a view never does.
 */
#include <string.h>
#include <sys/mman.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <unistd.h>

#include "core/core_internal.h"

struct ir_big {
  struct ir_big *prev, *next;
  size_t n;       /* payload bytes */
  uint64_t epoch; /* last collection that found it reachable */
  /* payload follows, 16-byte aligned (the header is 32 bytes) */
};
_Static_assert(sizeof(struct ir_big) % 16 == 0, "large-buffer header keeps 16-byte alignment");

#define IR_BIG_SPARES 4

typedef struct ir_bigheap {
  ir_big *head;
  size_t live_bytes; /* payload bytes of all listed buffers */
  size_t new_bytes;  /* allocated since the last collection */
  size_t lost_bytes; /* held by values of ops detached since the last collection */
  uint64_t epoch;
  /* buffers given back by ir_big_release, kept for the next request of the
   * same size (the interpreter's memory plan frees and allocates buffers
   * of the same few sizes op after op; reusing them saves mapping and
   * faulting in fresh pages, which glibc does for every buffer above
   * 32 MB); a request of another size frees them */
  ir_big *spare[IR_BIG_SPARES];
} ir_bigheap;

void *ir_big_alloc(mil_program *p, size_t n, bool zero, ir_big **out) {
  ir_bigheap *h = p->big;
  if (!h) {
    h = ir_raw_alloc(p->alloc, sizeof *h);
    if (!h) return NULL;
    memset(h, 0, sizeof *h);
    p->big = h;
  }
  ir_big *b = NULL;
  for (int i = 0; i < IR_BIG_SPARES && !b; i++)
    if (h->spare[i] && h->spare[i]->n == n) {
      b = h->spare[i];
      h->spare[i] = NULL;
    }
  if (!b) /* no spare of this size: the spares are not kept waiting (peak memory) */
    for (int i = 0; i < IR_BIG_SPARES; i++)
      if (h->spare[i]) {
        ir_raw_free(p->alloc, h->spare[i], sizeof *h->spare[i] + h->spare[i]->n);
        h->spare[i] = NULL;
      }
  if (!b) b = ir_raw_alloc(p->alloc, sizeof *b + n);
  if (!b) return NULL;
  b->prev = NULL;
  b->next = h->head;
  if (h->head) h->head->prev = b;
  h->head = b;
  b->n = n;
  b->epoch = h->epoch;
  h->live_bytes += n;
  h->new_bytes += n;
  if (zero) memset(b + 1, 0, n);
  *out = b;
  return b + 1;
}

static void big_free(mil_program *p, ir_bigheap *h, ir_big *b) {
  if (b->prev) b->prev->next = b->next;
  else h->head = b->next;
  if (b->next) b->next->prev = b->prev;
  h->live_bytes -= b->n;
  ir_raw_free(p->alloc, b, sizeof *b + b->n);
}

void ir_big_release(mil_program *p, mil_value *v) {
  if (!p || !p->big || !v || v->kind != MIL_VAL_TENSOR || !v->big) return;
  ir_bigheap *h = p->big;
  ir_big *b = v->big;
  int slot = -1;
  for (int i = 0; i < IR_BIG_SPARES && slot < 0; i++)
    if (!h->spare[i]) slot = i;
  if (slot < 0) { /* all kept: the oldest goes */
    ir_raw_free(p->alloc, h->spare[0], sizeof *h->spare[0] + h->spare[0]->n);
    memmove(h->spare, h->spare + 1, (IR_BIG_SPARES - 1) * sizeof *h->spare);
    slot = IR_BIG_SPARES - 1;
  }
  if (b->prev) b->prev->next = b->next;
  else h->head = b->next;
  if (b->next) b->next->prev = b->prev;
  h->live_bytes -= b->n;
  b->prev = b->next = NULL;
  h->spare[slot] = b;
  v->big = NULL;
  v->raw = NULL;
  v->nbytes = 0;
  v->numel = 0;
}

void ir_big_note_detached(mil_program *p, const mil_value *v) {
  if (p->big && v->kind == MIL_VAL_TENSOR && v->big) p->big->lost_bytes += v->big->n;
}

void ir_big_free_all(mil_program *p) {
  ir_bigheap *h = p->big;
  if (!h) return;
  while (h->head) big_free(p, h, h->head);
  for (int i = 0; i < IR_BIG_SPARES; i++)
    if (h->spare[i]) ir_raw_free(p->alloc, h->spare[i], sizeof *h->spare[i] + h->spare[i]->n);
  ir_raw_free(p->alloc, h, sizeof *h);
  p->big = NULL;
}

/* ---- marking ---- */

static void mark_value(uint64_t epoch, const mil_value *v, int depth) {
  if (!v || depth > 64) return;
  if (v->kind == MIL_VAL_TENSOR) {
    if (v->big) v->big->epoch = epoch;
    if (v->widened_from) mark_value(epoch, v->widened_from, depth + 1); /* it may be handed out again */
    if (v->deferred) { /* its bytes come from there */
      mark_value(epoch, ir_deferred_mark_source(v), depth + 1);
      mark_value(epoch, ir_deferred_mark_extra(v), depth + 1);
    }
    return;
  }
  for (int32_t i = 0; i < v->n; i++) {
    if (v->items) mark_value(epoch, v->items[i], depth + 1);
    if (v->keys) mark_value(epoch, v->keys[i], depth + 1);
  }
}

static void mark_attrs(uint64_t epoch, const mil_attr *a, int32_t n) {
  for (int32_t i = 0; i < n; i++) mark_value(epoch, a[i].value, 0);
}

static void mark_block(uint64_t epoch, const mil_block *b);

static void mark_var(uint64_t epoch, const mil_var *v) {
  if (v && v->val) mark_value(epoch, v->val, 0);
}

static void mark_op(uint64_t epoch, const mil_op *op) {
  for (int32_t i = 0; i < op->n_outputs; i++) mark_var(epoch, op->outputs[i]);
  for (int32_t i = 0; i < op->n_inputs; i++)
    for (int32_t k = 0; k < op->inputs[i].n_args; k++) mark_value(epoch, op->inputs[i].args[k].value, 0);
  mark_attrs(epoch, op->attrs, op->n_attrs);
  for (int32_t i = 0; i < op->n_blocks; i++) mark_block(epoch, op->blocks[i]);
}

static void mark_block(uint64_t epoch, const mil_block *b) {
  for (int32_t i = 0; i < b->n_inputs; i++) mark_var(epoch, b->inputs[i]);
  mark_attrs(epoch, b->attrs, b->n_attrs);
  for (const mil_op *op = b->first; op; op = op->next) mark_op(epoch, op);
}

size_t mil_program_collect_garbage(mil_program *p, bool only_if_worthwhile) {
  ir_bigheap *h = p->big;
  if (!h || !h->head) return 0;
  /* worthwhile: at least 64 MiB made since the last collection and a
   * quarter of what is held, or 32 MiB held by ops detached since then, so
   * that the marking walk (O(ops)) is paid for by the bytes it may give
   * back */
  bool made = h->new_bytes >= ((size_t)64 << 20) && h->new_bytes >= h->live_bytes / 4;
  bool lost = h->lost_bytes >= ((size_t)32 << 20);
  if (only_if_worthwhile && !made && !lost) return 0;
  uint64_t epoch = ++h->epoch;
  mark_attrs(epoch, p->attrs, p->n_attrs);
  for (int32_t fi = 0; fi < p->n_functions; fi++) {
    const mil_function *f = p->functions[fi];
    mark_attrs(epoch, f->attrs, f->n_attrs);
    for (int32_t i = 0; i < f->n_inputs; i++) mark_var(epoch, f->inputs[i]);
    for (int32_t s = 0; s < f->n_specs; s++) mark_block(epoch, f->specs[s].block);
  }
  size_t freed = 0;
  for (ir_big *b = h->head, *next; b; b = next) {
    next = b->next;
    if (b->epoch == epoch) continue;
    freed += b->n;
    big_free(p, h, b);
  }
  h->new_bytes = h->lost_bytes = 0;
  return freed;
}

/* ---- pages of file mappings ---- */

void mil_value_release_pages(const mil_value *v) {
  if (v && v->kind == MIL_VAL_TENSOR) mil_value_release_range(v, 0, v->nbytes);
}

void mil_value_release_range(const mil_value *v, size_t offset, size_t nbytes) {
  if (!v || v->kind != MIL_VAL_TENSOR || !v->file_mapped || offset >= v->nbytes) return;
  if (nbytes > v->nbytes - offset) nbytes = v->nbytes - offset;
  if (nbytes < ((size_t)64 << 10)) return;
  long page = sysconf(_SC_PAGESIZE);
  if (page <= 0) return;
  uintptr_t a = (uintptr_t)v->raw + offset, e = a + nbytes;
  uintptr_t lo = (a + (uintptr_t)page - 1) & ~((uintptr_t)page - 1), hi = e & ~((uintptr_t)page - 1);
  /* only whole pages inside the value: its neighbours' pages stay */
  if (hi > lo) (void)madvise((void *)lo, hi - lo, MADV_DONTNEED);
}

void mil_release_free_memory(void) {
#ifdef __GLIBC__
  (void)malloc_trim(0);
#endif
}

/* ---- the program's weight-file mappings ---- */

typedef struct ir_mapping {
  const void *base;
  size_t len;
  void (*drop)(void *ud);
  void *ud;
} ir_mapping;

struct ir_mappings {
  ir_mapping *m;
  size_t n, cap;
  size_t total;      /* bytes of all mappings */
  size_t read_bytes; /* read through them (as reported) since they were last released */
};

mil_status mil_program_add_mapping(mil_program *p, const void *base, size_t len, void (*drop)(void *ud), void *ud) {
  ir_mappings *ms = p->mappings;
  if (!ms) {
    ms = ir_raw_alloc(p->alloc, sizeof *ms);
    if (!ms) goto oom;
    memset(ms, 0, sizeof *ms);
    p->mappings = ms;
  }
  if (ms->n == ms->cap) {
    size_t nc = ms->cap ? ms->cap * 2 : 4;
    ir_mapping *nm = ir_raw_realloc(p->alloc, ms->m, ms->cap * sizeof *nm, nc * sizeof *nm);
    if (!nm) goto oom;
    ms->m = nm;
    ms->cap = nc;
  }
  ms->m[ms->n++] = (ir_mapping){base, len, drop, ud};
  ms->total += len;
  return MIL_OK;
oom:
  if (drop) drop(ud);
  return MIL_ERR_NOMEM;
}

/* Releasing costs a page-table walk over every mapping: worth it for large
 * weight files only, whose resident pages would otherwise add up. */
#define RELEASE_MIN_TOTAL ((size_t)256 << 20)
/* Below this, a value's pages stay mapped once read: dropping them and
 * faulting them in again for the next reader (the save after the fp16
 * scan) costs more CPU time than the few MiB of resident pages are worth. */
#define KEEP_MAX_TOTAL ((size_t)64 << 20)
#define RELEASE_EVERY ((size_t)64 << 20)
#define FAULT_AROUND ((size_t)2 << 20)

static void release_all(const ir_mappings *ms);

void mil_program_release_mappings(mil_program *p) {
  ir_mappings *ms = p->mappings;
  if (!ms || ms->total < RELEASE_MIN_TOTAL) return;
  ms->read_bytes = 0;
  release_all(ms);
}

static void release_all(const ir_mappings *ms) {
  long page = sysconf(_SC_PAGESIZE);
  if (page <= 0) return;
  for (size_t i = 0; i < ms->n; i++) {
    uintptr_t a = (uintptr_t)ms->m[i].base & ~((uintptr_t)page - 1);
    uintptr_t e = (uintptr_t)ms->m[i].base + ms->m[i].len;
    if (e > a) (void)madvise((void *)a, e - a, MADV_DONTNEED);
  }
}

void ir_mappings_free(mil_program *p) {
  ir_mappings *ms = p->mappings;
  if (!ms) return;
  for (size_t i = 0; i < ms->n; i++)
    if (ms->m[i].drop) ms->m[i].drop(ms->m[i].ud);
  ir_raw_free(p->alloc, ms->m, ms->cap * sizeof *ms->m);
  ir_raw_free(p->alloc, ms, sizeof *ms);
  p->mappings = NULL;
}

bool mil_program_keeps_weight_pages(const mil_program *p) {
  const ir_mappings *ms = p ? p->mappings : NULL;
  return ms && ms->total < KEEP_MAX_TOTAL;
}

void mil_program_release_value_pages(const mil_program *p, const mil_value *v, size_t offset, size_t nbytes) {
  if (!v || v->kind != MIL_VAL_TENSOR || !v->file_mapped || offset > v->nbytes) return;
  if (mil_program_keeps_weight_pages(p)) return;
  if (nbytes > v->nbytes - offset) nbytes = v->nbytes - offset;
  mil_value_release_range(v, offset, nbytes);
  /* A fault maps in more than the bytes read (whole page-cache folios, up
   * to 2 MiB, and neighbouring pages), which the value's own pages do not
   * cover: every RELEASE_EVERY bytes read, the whole mappings go. */
  ir_mappings *ms = p ? p->mappings : NULL;
  if (!ms || ms->total < RELEASE_MIN_TOTAL) return;
  /* a read maps at least a page-cache folio (up to 2 MiB for a file
   * written recently) whatever its size: reading the first elements of
   * thousands of weights adds up too */
  ms->read_bytes += nbytes > FAULT_AROUND ? nbytes : FAULT_AROUND;
  if (ms->read_bytes < RELEASE_EVERY) return;
  ms->read_bytes = 0;
  release_all(ms);
}
