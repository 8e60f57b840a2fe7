/* Building ops like coremltools' Builder (mb.<op>(..., before_op=...)),
 * ranged use replacement, and small value helpers for the passes that
 * insert op sequences. Implemented in pass_build.c.
 *
 * Mirrors coremltools/converters/mil/mil/builder.py (_get_free_name,
 * _add_const, _create_vars) and Block.replace_uses_of_var_after_op with
 * end_op. */
#ifndef MIL_PASS_BUILD_INTERNAL_H
#define MIL_PASS_BUILD_INTERNAL_H

#include "passes/pass_internal.h"

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

/* A rewrite at op for pass_bld_walk: rewrites made (added to c->changes),
 * or -(status) with the error recorded in c->d. */
typedef int (*pass_bld_fn)(pass_bld *c, mil_op *op);
struct pass_walk_spec;
/* The run of a pass built on pass_bld: a pass_bld for p named spec->pass,
 * the sweeps of spec (fuse_util_internal.h's pass_walk_run) calling fn at
 * each offered op, the builder freed and its rewrites added to stats.
 * Errors: those of fn, MIL_ERR_NOMEM, MIL_ERR_UNSUPPORTED (nesting deeper
 * than PASS_MAX_DEPTH). */
mil_status pass_bld_walk(mil_program *p, mil_diag *d, const struct pass_walk_spec *spec, pass_bld_fn fn,
                         mil_pass_stats *stats);

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
