/* The CLI's pointer -> pointer map (ptr_map.h). */
#include <stdlib.h>
#include <string.h>

#include "ptr_map.h"

size_t ptr_map_hash(const void *p) {
  uint64_t x = (uint64_t)(uintptr_t)p;
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  return (size_t)x;
}

void *ptr_map_get(const ptr_map *m, const void *key) {
  if (!m->cap) return NULL;
  for (size_t i = ptr_map_hash(key) & (m->cap - 1);; i = (i + 1) & (m->cap - 1)) {
    if (!m->keys[i]) return NULL;
    if (m->keys[i] == key) return m->vals[i];
  }
}

bool ptr_map_put(ptr_map *m, const void *key, void *val) {
  if ((m->n + 1) * 2 > m->cap) {
    size_t cap = m->cap ? m->cap * 2 : 64;
    ptr_map nm = {calloc(cap, sizeof *nm.keys), calloc(cap, sizeof *nm.vals), cap, 0};
    if (!nm.keys || !nm.vals) {
      free(nm.keys);
      free(nm.vals);
      return false;
    }
    for (size_t i = 0; i < m->cap; i++)
      if (m->keys[i]) (void)ptr_map_put(&nm, m->keys[i], m->vals[i]);
    free(m->keys);
    free(m->vals);
    *m = nm;
  }
  size_t i = ptr_map_hash(key) & (m->cap - 1);
  while (m->keys[i] && m->keys[i] != key) i = (i + 1) & (m->cap - 1);
  if (!m->keys[i]) m->n++;
  m->keys[i] = key;
  m->vals[i] = val;
  return true;
}

void ptr_map_free(ptr_map *m) {
  free(m->keys);
  free(m->vals);
  memset(m, 0, sizeof *m);
}
