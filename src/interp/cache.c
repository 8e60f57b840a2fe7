/* Per-interpreter caches that live across runs:
 *
 *  - the set of "stable" byte buffers: the data of the interpreter's copy
 *    of the program's consts (and of cached decompressed weights), which
 *    stay allocated and unchanged while the interpreter exists;
 *  - fp32 copies of stable fp16 (and other non-fp32 float) buffers, so a
 *    half-precision weight is widened once, not at every run;
 *  - decompressed constexpr outputs, keyed by output var name.
 *
 * A runtime buffer can never share an address with a stable one (the
 * stable ones are still allocated), so keying by address is safe; a view of
 * a const (reshape, squeeze) shares its bytes and may share its entry.
 *
 * The interpreters of one family (mil_interp_fork) share one cache and may
 * run in several threads at once: every function here takes the cache's
 * lock. What they hand out (fp32 copies, decompressed buffers) is never
 * changed or freed before the cache is, so it is read without the lock. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "interp/interp_internal.h"

typedef struct f32_entry {
  const void *ptr; /* NULL: empty slot */
  mil_dtype dtype;
  int64_t numel;
  float *f;        /* NULL: stable, not converted yet */
} f32_entry;

typedef struct mat_entry {
  char *name;
  mil_dtype dtype;
  int32_t rank;
  int64_t shape[MIL_INTERP_MAX_RANK];
  void *buf;
  size_t nbytes;
  int64_t numel;
} mat_entry;

typedef struct obj_entry {
  void *key;
  size_t keylen;
  void *obj;
  void (*free_fn)(void *);
} obj_entry;

struct interp_cache {
  pthread_mutex_t lock;
  f32_entry *tab;
  size_t cap, used;
  mat_entry *mats;
  size_t n_mats, cap_mats;
  size_t f32_bytes;
  obj_entry *objs;
  size_t n_objs, cap_objs;
};

interp_cache *interp_cache_new(void) {
  interp_cache *c = calloc(1, sizeof(interp_cache));
  if (c && pthread_mutex_init(&c->lock, NULL) != 0) {
    free(c);
    return NULL;
  }
  return c;
}

void interp_cache_free(interp_cache *c) {
  if (!c) return;
  for (size_t i = 0; i < c->cap; i++) free(c->tab[i].f);
  free(c->tab);
  for (size_t i = 0; i < c->n_mats; i++) {
    free(c->mats[i].name);
    free(c->mats[i].buf);
  }
  free(c->mats);
  for (size_t i = 0; i < c->n_objs; i++) {
    c->objs[i].free_fn(c->objs[i].obj);
    free(c->objs[i].key);
  }
  free(c->objs);
  pthread_mutex_destroy(&c->lock);
  free(c);
}

static size_t hash_ptr(const void *p) {
  uint64_t x = (uint64_t)(uintptr_t)p;
  x ^= x >> 33;
  x *= UINT64_C(0xff51afd7ed558ccd);
  x ^= x >> 33;
  return (size_t)x;
}

static f32_entry *slot(interp_cache *c, const void *p) {
  if (!c->cap) return NULL;
  for (size_t i = hash_ptr(p) & (c->cap - 1);; i = (i + 1) & (c->cap - 1))
    if (c->tab[i].ptr == p || !c->tab[i].ptr) return &c->tab[i];
}

static bool grow(interp_cache *c) {
  size_t ncap = c->cap ? c->cap * 2 : 256;
  f32_entry *old = c->tab;
  size_t ocap = c->cap;
  c->tab = calloc(ncap, sizeof *c->tab);
  if (!c->tab) {
    c->tab = old;
    return false;
  }
  c->cap = ncap;
  for (size_t i = 0; i < ocap; i++)
    if (old[i].ptr) *slot(c, old[i].ptr) = old[i];
  free(old);
  return true;
}

static void mark_stable_locked(interp_cache *c, const void *ptr) {
  if ((c->used + 1) * 2 > c->cap && !grow(c)) return;
  f32_entry *e = slot(c, ptr);
  if (!e->ptr) {
    e->ptr = ptr;
    c->used++;
  }
}

void interp_cache_mark_stable(interp_cache *c, const void *ptr) {
  if (!c || !ptr) return;
  pthread_mutex_lock(&c->lock);
  mark_stable_locked(c, ptr);
  pthread_mutex_unlock(&c->lock);
}

static const float *f32_locked(interp_cache *c, const mil_value *v) {
  f32_entry *e = slot(c, mil_value_data(v));
  if (!e || !e->ptr) return NULL; /* not a stable buffer */
  if (e->f) return e->dtype == v->type->dtype && e->numel == v->numel ? e->f : NULL;
  float *f = malloc((size_t)v->numel * sizeof *f);
  if (!f) return NULL;
  interp_widen_f32(v, f);
  e->f = f;
  e->dtype = v->type->dtype;
  e->numel = v->numel;
  c->f32_bytes += (size_t)v->numel * sizeof *f;
  return f;
}

const float *interp_cache_f32(interp_cache *c, const mil_value *v) {
  /* the value's bytes are read first: a stable value's are already there */
  if (!c || !mil_value_data(v) || v->numel < 64) return NULL;
  pthread_mutex_lock(&c->lock);
  const float *f = f32_locked(c, v);
  pthread_mutex_unlock(&c->lock);
  return f;
}

static const mat_entry *find_mat(const interp_cache *c, const char *name) {
  for (size_t i = 0; i < c->n_mats; i++)
    if (strcmp(c->mats[i].name, name) == 0) return &c->mats[i];
  return NULL;
}

mil_value *interp_cache_get_value(interp_cache *c, mil_program *p, const char *name) {
  if (!c) return NULL;
  pthread_mutex_lock(&c->lock);
  const mat_entry *e = find_mat(c, name);
  mat_entry m;
  if (e) m = *e;
  pthread_mutex_unlock(&c->lock);
  return e ? mil_value_new_view(p, m.dtype, m.rank, m.shape, m.buf, m.nbytes) : NULL;
}

static void put_locked(interp_cache *c, const char *name, const mil_value *v);

void interp_cache_put_value(interp_cache *c, const char *name, const mil_value *v) {
  if (!c || v->kind != MIL_VAL_TENSOR || !v->type || v->type->rank > MIL_INTERP_MAX_RANK ||
      v->type->dtype == MIL_DT_STRING)
    return;
  pthread_mutex_lock(&c->lock);
  if (!find_mat(c, name)) put_locked(c, name, v); /* another thread may have put it first */
  pthread_mutex_unlock(&c->lock);
}

static void put_locked(interp_cache *c, const char *name, const mil_value *v) {
  if (c->n_mats == c->cap_mats) {
    size_t n = c->cap_mats ? c->cap_mats * 2 : 16;
    mat_entry *m = realloc(c->mats, n * sizeof *m);
    if (!m) return;
    c->mats = m;
    c->cap_mats = n;
  }
  mat_entry *m = &c->mats[c->n_mats];
  memset(m, 0, sizeof *m);
  m->name = malloc(strlen(name) + 1);
  m->buf = malloc(v->nbytes ? v->nbytes : 1);
  if (!m->name || !m->buf) {
    free(m->name);
    free(m->buf);
    return;
  }
  strcpy(m->name, name);
  if (v->nbytes) memcpy(m->buf, mil_value_data(v), v->nbytes);
  m->dtype = v->type->dtype;
  m->rank = v->type->rank;
  for (int32_t i = 0; i < m->rank; i++) m->shape[i] = v->type->dims[i].size;
  m->nbytes = v->nbytes;
  m->numel = v->numel;
  c->n_mats++;
  mark_stable_locked(c, m->buf);
}

bool interp_cache_is_stable(interp_cache *c, const void *ptr) {
  if (!c || !ptr) return false;
  pthread_mutex_lock(&c->lock);
  const f32_entry *e = slot(c, ptr);
  bool stable = e && e->ptr == ptr;
  pthread_mutex_unlock(&c->lock);
  return stable;
}

static void *find_obj_locked(const interp_cache *c, const void *key, size_t keylen) {
  for (size_t i = 0; i < c->n_objs; i++)
    if (c->objs[i].keylen == keylen && memcmp(c->objs[i].key, key, keylen) == 0) return c->objs[i].obj;
  return NULL;
}

void *interp_cache_get_obj(interp_cache *c, const void *key, size_t keylen) {
  if (!c) return NULL;
  pthread_mutex_lock(&c->lock);
  void *o = find_obj_locked(c, key, keylen);
  pthread_mutex_unlock(&c->lock);
  return o;
}

void *interp_cache_put_obj(interp_cache *c, const void *key, size_t keylen, void *obj, void (*free_fn)(void *)) {
  if (!c) return NULL;
  pthread_mutex_lock(&c->lock);
  void *old = find_obj_locked(c, key, keylen), *kept = old;
  if (!old) {
    kept = obj;
    if (c->n_objs == c->cap_objs) {
      size_t n = c->cap_objs ? c->cap_objs * 2 : 32;
      obj_entry *m = realloc(c->objs, n * sizeof *m);
      if (m) c->objs = m, c->cap_objs = n;
    }
    void *k = c->n_objs < c->cap_objs ? malloc(keylen) : NULL;
    if (k) {
      memcpy(k, key, keylen);
      c->objs[c->n_objs++] = (obj_entry){k, keylen, obj, free_fn};
    } else {
      kept = NULL; /* not kept: the caller frees obj */
    }
  }
  pthread_mutex_unlock(&c->lock);
  if (old) free_fn(obj); /* another thread put one first */
  return kept;
}
