/* A pointer -> pointer map for the CLI (open addressing, grows at half
 * full; malloc-backed): `mil graph --diff`'s var pairing and `mil opt`'s
 * op-type census. Zero-initialize; free with ptr_map_free. */
#ifndef MIL_CLI_PTR_MAP_H
#define MIL_CLI_PTR_MAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct ptr_map {
  const void **keys;
  void **vals;
  size_t cap, n;
} ptr_map;

/* The slot hash of a pointer (mixes the address bits). */
size_t ptr_map_hash(const void *p);
/* The value stored for key, or NULL. */
void *ptr_map_get(const ptr_map *m, const void *key);
/* Inserts or overwrites key (non-NULL); false on out of memory. */
bool ptr_map_put(ptr_map *m, const void *key, void *val);
void ptr_map_free(ptr_map *m);

#endif
