/* A small open-addressing pointer map used by clone, the verifier and passes. */
#include <stdlib.h>
#include <string.h>

#include "core/core_internal.h"

void ir_ptrmap_init(ir_ptrmap *m) { memset(m, 0, sizeof *m); }

void ir_ptrmap_free(ir_ptrmap *m) {
  free(m->keys);
  free(m->vals);
  memset(m, 0, sizeof *m);
}

static size_t slot(const void *k, size_t cap) {
  uint64_t h = (uint64_t)(uintptr_t)k;
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdULL;
  h ^= h >> 33;
  return (size_t)h & (cap - 1);
}

static bool grow(ir_ptrmap *m) {
  size_t nc = m->cap ? m->cap * 2 : 64;
  const void **nk = calloc(nc, sizeof *nk);
  void **nv = calloc(nc, sizeof *nv);
  if (!nk || !nv) {
    free(nk);
    free(nv);
    return false;
  }
  for (size_t i = 0; i < m->cap; i++) {
    if (!m->keys[i]) continue;
    size_t j = slot(m->keys[i], nc);
    while (nk[j]) j = (j + 1) & (nc - 1);
    nk[j] = m->keys[i];
    nv[j] = m->vals[i];
  }
  free(m->keys);
  free(m->vals);
  m->keys = nk;
  m->vals = nv;
  m->cap = nc;
  return true;
}

bool ir_ptrmap_put(ir_ptrmap *m, const void *key, void *val) {
  if ((m->count + 1) * 2 > m->cap && !grow(m)) return false;
  size_t j = slot(key, m->cap);
  while (m->keys[j] && m->keys[j] != key) j = (j + 1) & (m->cap - 1);
  if (!m->keys[j]) m->count++;
  m->keys[j] = key;
  m->vals[j] = val;
  return true;
}

void *ir_ptrmap_get(const ir_ptrmap *m, const void *key) {
  if (!m->cap) return NULL;
  size_t j = slot(key, m->cap);
  while (m->keys[j]) {
    if (m->keys[j] == key) return m->vals[j];
    j = (j + 1) & (m->cap - 1);
  }
  return NULL;
}
