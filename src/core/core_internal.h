/* Internal table of contents of src/core: arena, interning, helpers shared by
 * the core files. Not part of the public API. */
#ifndef MIL_CORE_INTERNAL_H
#define MIL_CORE_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "mil/ir.h"

#if defined(__GNUC__)
#define IR_HIDDEN __attribute__((visibility("hidden")))
#else
#define IR_HIDDEN
#endif


/* ---- arena.c: bump allocator owned by a program ---- */
typedef struct ir_arena ir_arena;
typedef struct ir_typecount ir_typecount;
typedef struct ir_typetab ir_typetab;
typedef struct ir_mappings ir_mappings;
IR_HIDDEN ir_arena *ir_arena_new(const mil_allocator *a);
IR_HIDDEN void ir_arena_free(ir_arena *ar);
/* n zeroed bytes aligned to 16; NULL on out of memory. */
IR_HIDDEN void *ir_arena_alloc(ir_arena *ar, size_t n);
/* Grows an arena array: returns a new block of new_n*elem bytes holding the
 * first old_n*elem bytes of old (old is abandoned, freed with the arena). */
/* n zeroed bytes at an address that is a multiple of align (a power of two
 * up to 4096; small requests only, else as ir_arena_alloc). */
/* n bytes left as they are (for bytes the caller writes in full). */
IR_HIDDEN void *ir_arena_alloc_uninit(ir_arena *ar, size_t n);
IR_HIDDEN void *ir_arena_alloc_aligned(ir_arena *ar, size_t n, size_t align);
IR_HIDDEN void *ir_arena_grow(ir_arena *ar, void *old, size_t old_n, size_t new_n, size_t elem);
IR_HIDDEN size_t ir_arena_bytes(const ir_arena *ar);

/* ---- intern.c: string interning per program ---- */
typedef struct ir_intern ir_intern;
IR_HIDDEN ir_intern *ir_intern_new(const mil_allocator *a, ir_arena *ar);
IR_HIDDEN void ir_intern_free(ir_intern *t);
IR_HIDDEN const char *ir_intern_str(ir_intern *t, const char *s, size_t len);
/* The interned copy of s, or NULL when s was never interned (no insertion). */
IR_HIDDEN const char *ir_intern_find(const ir_intern *t, const char *s, size_t len);
/* Makes the empty table dst hold src's strings, borrowed (src's pointers,
 * not copies): interning any of them in dst then returns src's pointer.
 * src's strings must outlive dst. Nothing happens when dst already holds
 * strings; false on out of memory (dst unchanged). */
IR_HIDDEN bool ir_intern_seed(ir_intern *dst, const ir_intern *src);

/* ---- ir.c ---- */
/* Ops reachable from p's functions, counted by walking them (the check of
 * the kept count p->n_ops). */
IR_HIDDEN int64_t ir_count_ops_walk(const mil_program *p);

/* ---- op_count.c: the program's op counts ---- */
/* Adds delta to the total and to the count of ops of `type` (interned). */
IR_HIDDEN void ir_count_op(mil_program *p, const char *type, int64_t delta);
IR_HIDDEN void ir_typecount_free(mil_program *p);

/* ---- type.c ---- */
IR_HIDDEN void ir_typetab_free(mil_program *p);
/* Makes dst's (empty) tensor type table hold src's type records, borrowed
 * (as ir_intern_seed: src must outlive dst; its strings must be seeded
 * into dst too, for the symbols of their dims). false on out of memory. */
IR_HIDDEN bool ir_typetab_seed(mil_program *dst, const mil_program *src);

/* ---- clone.c ---- */
/* mil_program_clone with the copy's allocator given (it must outlive the
 * copy; NULL: the default). */
IR_HIDDEN mil_program *ir_program_clone_with(const mil_program *src, const mil_allocator *alloc);
/* The same for a copy that src outlives (the interpreter's per-run copies
 * of its program): the copy borrows src's interned strings and tensor type
 * records instead of copying them (ir_intern_seed, ir_typetab_seed). src
 * must not be freed or changed while the copy lives. */
IR_HIDDEN mil_program *ir_program_clone_borrowing(const mil_program *src, const mil_allocator *alloc);

/* ---- bigval.c: large value buffers apart from the arena ---- */
#define IR_BIG_MIN ((size_t)16 << 10)
typedef struct ir_big ir_big;
/* n bytes (zeroed when zero) listed on p; *out receives the record to store
 * in the value's `big` field. NULL on out of memory. */
IR_HIDDEN void *ir_big_alloc(mil_program *p, size_t n, bool zero, ir_big **out);
IR_HIDDEN void ir_big_free_all(mil_program *p);
/* Gives back v's large buffer now (the interpreter's memory plan, once
 * nothing reads v any more): the program keeps the last few given back for
 * the next request of the same size, frees the others. v is left empty (no
 * bytes, numel 0). Nothing for a value without one. */
IR_HIDDEN void ir_big_release(mil_program *p, mil_value *v);
IR_HIDDEN void ir_mappings_free(mil_program *p);
/* Notes that an op holding v was detached: its large buffer may have become
 * unreachable (weighs in mil_program_collect_garbage's decision). */
IR_HIDDEN void ir_big_note_detached(mil_program *p, const mil_value *v);
/* deferred.c: element i of a deferred value; the source a deferred value
 * keeps alive; byte equality of two tensors of equal nbytes (either may be
 * deferred; neither is computed whole). */
IR_HIDDEN double ir_deferred_get_f64(const mil_value *v, int64_t i);
IR_HIDDEN const mil_value *ir_deferred_mark_source(const mil_value *v);
/* Another value a deferred value reads (a gather's mask), or NULL. */
IR_HIDDEN const mil_value *ir_deferred_mark_extra(const mil_value *v);
IR_HIDDEN bool ir_value_bytes_equal(const mil_value *a, const mil_value *b);

/* raw allocation through a mil_allocator */
IR_HIDDEN void *ir_raw_alloc(const mil_allocator *a, size_t n);
IR_HIDDEN void *ir_raw_realloc(const mil_allocator *a, void *p, size_t old, size_t n);
IR_HIDDEN void ir_raw_free(const mil_allocator *a, void *p, size_t n);

/* ---- op.c / ir.c shared ---- */
IR_HIDDEN void ir_use_link(mil_use *u, mil_var *v);
IR_HIDDEN void ir_use_unlink(mil_use *u);
/* Drops every operand use of op and of the ops of its nested blocks, and
 * the output uses of its nested blocks. */
IR_HIDDEN void ir_op_drop_uses(mil_op *op);

/* FNV-1a over bytes */
static inline uint64_t ir_hash_bytes(const void *p, size_t n, uint64_t h) {
  const unsigned char *s = (const unsigned char *)p;
  for (size_t i = 0; i < n; i++) {
    h ^= s[i];
    h *= 1099511628211ULL;
  }
  return h;
}
#define IR_HASH_SEED 14695981039346656037ULL



/* ---- ptrmap.c: pointer -> pointer hash map (malloc-backed) ---- */
typedef struct ir_ptrmap {
  const void **keys;
  void **vals;
  size_t cap, count;
} ir_ptrmap;
IR_HIDDEN void ir_ptrmap_init(ir_ptrmap *m);
IR_HIDDEN void ir_ptrmap_free(ir_ptrmap *m);
/* Returns false on out of memory. */
IR_HIDDEN bool ir_ptrmap_put(ir_ptrmap *m, const void *key, void *val);
IR_HIDDEN void *ir_ptrmap_get(const ir_ptrmap *m, const void *key);

/* ir.c: what mil_program_name_count_next and mil_program_name_intended
 * keep (interned key -> count + 1; interned given -> interned intended). */
typedef struct ir_builder_names {
  ir_ptrmap counts;
  ir_ptrmap intended;
} ir_builder_names;
/* p's table, made on first call; NULL on out of memory. */
IR_HIDDEN ir_builder_names *ir_builder_names_of(mil_program *p);
IR_HIDDEN void ir_builder_names_free(ir_builder_names *n);

/* value.c: copy of a value into program p (views stay views). */
IR_HIDDEN const mil_value *ir_value_import(mil_program *p, const mil_value *v);
/* Appends f to p->functions (geometric growth); false when out of memory. */
IR_HIDDEN bool ir_program_push_function(mil_program *p, mil_function *f);
#endif
