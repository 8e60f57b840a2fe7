/* The builder (src/build/): creating ops and consts as coremltools'
 * Builder (`mb.<op>(..., before_op=...)`) does, with its naming of new ops
 * and vars; binding inputs, inferring types and values through the op
 * registry, replacing uses in a range, rolling back. Its own room above
 * ops/ and below passes/, onnx/ (the importer) and compress/: it uses only
 * core and ops (mil/ir.h, mil/ops.h), never passes/ or io/.
 *
 * Mirrors coremltools/converters/mil/mil/builder.py (_get_free_name,
 * _add_const, _create_vars), Block.replace_uses_of_var_after_op (with
 * end_op), Block.remove_ops, Var.nonreplaceable_vars_upstream and
 * Var.can_be_replaced_by_var. Implemented in build.c (ops) and
 * build_util.c (names, consts, replacement, removal, sets, finishing ops).
 *
 * Contract:
 * - Ownership. Everything built (ops, vars, consts, values, names) is
 *   allocated in the program's arena and owned by the program; removing an
 *   op unlinks it. The builder state (pass_bld) owns only its lazily
 *   created tables (pass_names, pass_nonrep), freed by pass_bld_free; the
 *   caller owns the pass_bld itself (usually on the stack). pass_names,
 *   pass_nonrep, pass_ptrset and pass_ptrmap are malloc-backed and freed
 *   by their _free function. Values passed in (pass_barg.val) are copied
 *   into the const op, never kept by reference.
 * - Naming (coremltools' rules). A new op without an explicit name is
 *   "<type>_<k>", k from the program's per-prefix counter
 *   (mil_program_name_count_next), as Builder._get_free_name; its outputs
 *   are named after the op. A const made for input `x` of op `o` is
 *   "o_x_<k>". When the name is taken, "<name>_<j>" with the smallest free
 *   j >= 1, as common::dedup_op_and_var_names would rename it. Names are
 *   interned in the program.
 * - Errors. Functions that can fail return a mil_status (or NULL / false /
 *   a negative -(mil_status)) and record the message, naming the op and
 *   input, in the mil_diag given (pass_bld.d). Out of memory is
 *   MIL_ERR_NOMEM; type inference errors are the registry's
 *   (MIL_ERR_TYPE, MIL_ERR_INVALID); nesting deeper than PASS_MAX_DEPTH is
 *   MIL_ERR_UNSUPPORTED.
 * - Rollback. pass_bld_op inserts the op and the consts it needs; when
 *   binding, defaults or inference fail, every op it inserted is removed
 *   again and the program is as before the call. The replacement
 *   functions either replace every use in their range or change nothing
 *   (pass_replace_uses_after, pass_bld_try_replace, pass_remove_ops).
 *
 * The pass_ prefix of these names is historical (the builder grew inside
 * passes/); it is kept so that code written against it keeps compiling. */
#ifndef MIL_BUILD_H
#define MIL_BUILD_H

#include "mil/ir.h"
#include "mil/ops.h"

/* ======================================================================== */
/* Limits and values bound to inputs                                          */
/* ======================================================================== */

/* Maximum nesting depth of blocks the walkers follow; deeper programs are
 * refused with MIL_ERR_UNSUPPORTED. */
#define PASS_MAX_DEPTH 256

/* The compile-time value of v (const ops and value-inferred vars), or NULL. */
const mil_value *pass_var_value(const mil_var *v);
/* The value bound to op's input `name` (a var's known value or a literal
 * binding), or NULL. */
const mil_value *pass_input_value(const mil_op *op, const char *name);

/* ======================================================================== */
/* Names and new consts (build_util.c)                                        */
/* ======================================================================== */

/* Writes k in decimal at out (room for 20 digits); returns its length
 * (no terminating NUL): the "_<k>" of fresh names. */
size_t pass_put_u64(char *out, uint64_t k);

/* A set of the op and var names of a program, for fresh names. */
typedef struct pass_names pass_names;
/* Collects every op and var name in p. NULL on out of memory. */
pass_names *pass_names_new(mil_program *p);
/* The same set from names already gathered (interned pointers, NULLs
 * skipped): for a pass whose own walk has seen every name. NULL on out of
 * memory. */
pass_names *pass_names_from(mil_program *p, const char *const *names, size_t count);
void pass_names_free(pass_names *n);
/* Records name as taken. false on out of memory. */
bool pass_names_add(pass_names *n, const char *name);
bool pass_names_has(const pass_names *n, const char *name);
/* pass_names_add for a name already interned in the program (an op's or
 * var's name): no lookup of the text. */
bool pass_names_add_interned(pass_names *n, const char *name);
/* The name coremltools' Builder._get_free_name(prefix) gives, made
 * unique the way common::dedup_op_and_var_names would (the rule in full
 * at fresh_in in build_util.c): "<prefix>_<k>", k from the program's count
 * for prefix (mil_program_name_count_next), or "<prefix>_<k>_<j>" with the
 * smallest j >= 1 free when "<prefix>_<k>" is taken. Records and returns
 * it, interned in the program. NULL on out of memory. With names == NULL
 * returns "<prefix>_<k>" unchecked. */
const char *pass_names_fresh(pass_names *n, mil_program *p, const char *prefix);
/* The two steps of pass_names_fresh, for callers with their own view of
 * the taken names. pass_name_counted: the prefix buf[0, len) (buf has room
 * for len + 48 bytes) becomes "<prefix>_<k>", k taken from the program's
 * count; returns its length, 0 on out of memory. pass_names_claim: the
 * name buf[0, m) (room for m + 24), or "<name>_<j>" with the smallest
 * j >= 1 free in n when it is taken; recorded in n (when n is not NULL) and
 * returned interned; buf is left holding buf[0, m). NULL on out of memory. */
size_t pass_name_counted(mil_program *p, char *buf, size_t len);
const char *pass_names_claim(pass_names *n, mil_program *p, char *buf, size_t m);

/* A const op holding v, inserted before anchor, named as coremltools'
 * builder names the const it makes for input `input` of the op `op_name`:
 * "<op_name>_<input>_<k>" (fresh in names). Returns its output var, or NULL
 * on out of memory. */
mil_var *pass_const_before(mil_op *anchor, pass_names *names, const char *op_name, const char *input,
                           const mil_value *v);
/* Same with an explicit name (used verbatim, recorded in names). */
mil_var *pass_const_named_before(mil_op *anchor, pass_names *names, const char *name, const mil_value *v);

/* ======================================================================== */
/* Replacing and removing                                                     */
/* ======================================================================== */

/* coremltools' Block.replace_uses_of_var_after_op: redirects the uses of
 * old that come after anchor (every use when anchor is NULL), block outputs
 * included. When old is an output of a function body, new_var takes old's
 * name (function output names never change). Refuses (returns false,
 * changes nothing) when that would rename a function input. */
bool pass_replace_uses_after(mil_op *anchor, mil_var *old, mil_var *new_var);
/* Whether coremltools allows the replacement: every constexpr_* output
 * upstream of old is also upstream of new_var (Var.can_be_replaced_by_var).
 * Cost: the size of the two upstream cones. */
bool pass_can_replace_var(const mil_var *old, const mil_var *new_var);
/* Removes ops (any order; each must end up unused once the others are
 * gone; duplicates allowed), like coremltools' Block.remove_ops. Errors:
 * MIL_ERR_INVALID when an output is still used (nothing is removed then). */
mil_status pass_remove_ops(mil_op *const *ops, int32_t n, mil_diag *d);

/* ======================================================================== */
/* Pointer sets and maps, coremltools' nonreplaceable vars, finishing newly  */
/* built ops (build_util.c)                                                   */
/* ======================================================================== */

/* A set of pointers (open addressing, malloc-backed). Zero-initialize. */
typedef struct pass_ptrset {
  const void **keys;
  size_t cap, n;
} pass_ptrset;
/* Adds p (NULL is ignored); false on out of memory. */
bool pass_ptrset_add(pass_ptrset *s, const void *p);
/* Adds p: 1 when added, 0 when it was there (or p is NULL), -1 on out of
 * memory. */
int pass_ptrset_insert(pass_ptrset *s, const void *p);
/* Room for n keys without growing; false on out of memory. */
bool pass_ptrset_reserve(pass_ptrset *s, size_t n);
bool pass_ptrset_has(const pass_ptrset *s, const void *p);
void pass_ptrset_free(pass_ptrset *s);

/* A pointer -> pointer map. Zero-initialize. */
typedef struct pass_ptrmap {
  const void **keys;
  void **vals;
  size_t cap, n;
} pass_ptrmap;
/* Inserts or overwrites key (non-NULL); false on out of memory. */
bool pass_ptrmap_put(pass_ptrmap *m, const void *key, void *val);
/* The value stored for key, or NULL. */
void *pass_ptrmap_get(const pass_ptrmap *m, const void *key);
void pass_ptrmap_free(pass_ptrmap *m);

/* coremltools' "nonreplaceable vars upstream" (Var.nonreplaceable_vars_upstream):
 * the constexpr_* outputs a var depends on, not looking through `shape` ops.
 * pass_nonrep_new records, in one linear walk, which vars have a non-empty
 * set; passes note the ops they create with pass_nonrep_note_op. */
typedef struct pass_nonrep pass_nonrep;
/* NULL on out of memory. */
pass_nonrep *pass_nonrep_new(mil_program *p);
void pass_nonrep_free(pass_nonrep *nr);
/* True when v depends on a constexpr_* output (its set is not empty). */
bool pass_nonrep_has(const pass_nonrep *nr, const mil_var *v);
/* Computes the outputs of an op built after pass_nonrep_new; false on out
 * of memory. */
bool pass_nonrep_note_op(pass_nonrep *nr, const mil_op *op);
/* coremltools' Var.can_be_replaced_by_var: old's set is a subset of
 * new_var's. O(inputs) when the sets are empty or old's producer reads
 * new_var (or new_var's inputs); else the cones are walked
 * (pass_can_replace_var). */
bool pass_nonrep_can_replace(const pass_nonrep *nr, const mil_var *old, const mil_var *new_var);
/* coremltools' Var.can_be_folded_to_const: v has a value and its set is
 * empty. */
bool pass_nonrep_can_fold(const pass_nonrep *nr, const mil_var *v);

/* Finishes an op built by a pass and already inserted in a block, as
 * coremltools' builder does: materializes default inputs as consts, puts
 * the inputs in input-spec order, infers output types and values (creating
 * the outputs, named after the op, when it has none). Errors: those of
 * mil_op_add_defaults and mil_op_infer. */
mil_status pass_finish_op(mil_op *op, mil_diag *d);

/* ======================================================================== */
/* Building ops (build.c)                                                     */
/* ======================================================================== */

/* What a building pass carries: the program, its diagnostics, the pass
 * name for messages, and lazily created fresh-name and constexpr tracking
 * tables (freed by pass_bld_free). */
typedef struct pass_bld {
  mil_program *p;
  mil_diag *d;
  const char *pass;    /* pass name for messages */
  pass_names *names;   /* created on first need */
  pass_nonrep *nonrep; /* created on first need */
  int64_t changes;     /* rewrites made so far */
} pass_bld;

/* One input of an op being built: a tuple of vars (vars, n), one var, or a
 * value that becomes a const named "<op>_<input>_<k>". */
typedef struct pass_barg {
  const char *name;
  mil_var *var;
  mil_var *const *vars;
  int32_t n;
  const mil_value *val;
} pass_barg;

/* An argument bound to a var / to a value (made a const). */
#define PASS_BV(nm, v) ((pass_barg){.name = (nm), .var = (v)})
#define PASS_BK(nm, v) ((pass_barg){.name = (nm), .val = (v)})

/* Binds args[0..n) to op's inputs, a value through a const that
 * konst(ud, op, input, value) inserts before op. false on failure. */
typedef mil_var *(*pass_bld_const_fn)(void *ud, mil_op *op, const char *input, const mil_value *v);
bool pass_bld_bind(mil_op *op, int32_t n, const pass_barg *args, pass_bld_const_fn konst, void *ud);

/* Frees the lazily created tables. */
void pass_bld_free(pass_bld *c);
/* The fresh-name table / the constexpr tracking, created on first call;
 * NULL (error recorded) on out of memory. */
pass_names *pass_bld_names(pass_bld *c);
pass_nonrep *pass_bld_nonrep(pass_bld *c);

/* Builds an op of `type` before anchor (or appended to b when anchor is
 * NULL), named `name` or a fresh "<type>_<k>", with the given inputs, then
 * finishes it (defaults, input order, inference). On failure everything
 * inserted is removed, *st (may be NULL) gets the status and NULL is
 * returned. */
mil_op *pass_bld_op(pass_bld *c, mil_block *b, mil_op *anchor, const char *type, const char *name, int32_t n,
                    const pass_barg *args, mil_status *st);
/* Same, returning the first output. */
mil_var *pass_bld_var(pass_bld *c, mil_block *b, mil_op *anchor, const char *type, const char *name, int32_t n,
                      const pass_barg *args, mil_status *st);

/* The op of block b that holds use u (the user itself or the op whose
 * nested block holds it), or NULL. */
mil_op *pass_bld_use_anchor(const mil_use *u, const mil_block *b);
/* Replaces the uses of old by new_var in ops after anchor (NULL = from the
 * start of b) up to end (inclusive; NULL = to the end, block outputs
 * included). */
void pass_bld_replace_range(mil_block *b, mil_op *anchor, mil_op *end, mil_var *old, mil_var *new_var);
/* coremltools' Block.try_replace_uses_of_var_after_op(anchor, old,
 * new_var): 1 when done, 0 (nothing changed) when the constexpr rule
 * (Var.can_be_replaced_by_var) or a function-input rename forbids it,
 * -(MIL_ERR_NOMEM) when the tracking cannot be built. */
int pass_bld_try_replace(pass_bld *c, mil_op *anchor, mil_var *old, mil_var *new_var);

/* ---------- values ---------- */

/* v with another shape of the same element count; NULL on mismatch. */
mil_value *pass_bld_reshape(mil_program *p, const mil_value *v, int32_t rank, const int64_t *shape);
/* v with its size-1 dims dropped (numpy squeeze). */
mil_value *pass_bld_squeeze(mil_program *p, const mil_value *v);
/* v converted to dtype dt (numpy astype). */
mil_value *pass_bld_astype(mil_program *p, const mil_value *v, mil_dtype dt);
mil_value *pass_bld_str(mil_program *p, const char *s);
/* int32 scalar / 1-D int32 tensor. */
mil_value *pass_bld_i32(mil_program *p, int64_t x);
mil_value *pass_bld_i32s(mil_program *p, int32_t n, const int64_t *xs);
/* Every element of a numeric tensor value is 0. */
bool pass_bld_all_zero(const mil_value *v);
/* op has input `name` with at least one binding. */
bool pass_bld_has(const mil_op *op, const char *name);
/* The dtype of a tensor var, MIL_DT_UNUSED otherwise. */
mil_dtype pass_bld_dtype(const mil_var *v);

#endif
