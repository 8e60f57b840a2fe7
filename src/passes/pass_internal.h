/* Internal interface of src/passes/: what the pass manager files share, and
 * the helpers every pass uses. Read top to bottom it is the table of
 * contents of the pass infrastructure.
 *
 * Writing a pass (src/passes/<name>.c):
 *
 *   static mil_status run(mil_program *p, const mil_pass_options *o, mil_pass_stats *st, mil_diag *d) {...}
 *   const mil_pass_def pass_def_<name> = {"common::<name>", "one line", opts, n_opts, run, anchors};
 *
 * and one line PASS_X(<name>) in passes.def. Options are read with the
 * mil_pass_opt_* getters of mil/passes.h. Most passes are a per-op match +
 * rewrite: write `static int fuse(mil_op *op, void *ud)` returning how many
 * rewrites it made at op and let pass_rewrite_ops drive it.
 */
#ifndef MIL_PASS_INTERNAL_H
#define MIL_PASS_INTERNAL_H

#include "mil/mil.h"
#include "mil/ops.h"
#include "mil/passes.h"

/* ======================================================================== */
/* Pass manager internals (pass_manager.c, pipelines.c, pass_catalog.c)      */
/* ======================================================================== */

/* True when `given` names the pass `full`: equal, or `given` has no
 * namespace and full is "common::<given>". */
bool pass_name_matches(const char *given, const char *full);
/* The catalog of every coremltools pass (run == NULL). */
size_t pass_catalog_count(void);
const mil_pass_def *pass_catalog_at(size_t i);
const mil_pass_def *pass_catalog_find(const char *name);
/* Checks that `value` (text) is acceptable for option `key` of pass. */
mil_status pass_option_check(const mil_pass_def *pass, const char *key, const char *value, mil_diag *d);
/* Monotonic clock in seconds. */
double pass_now_seconds(void);

/* ======================================================================== */
/* Walking and driving rewrites (pass_util.c)                                */
/* ======================================================================== */

/* Maximum nesting depth of blocks the walkers follow; deeper programs are
 * refused with MIL_ERR_UNSUPPORTED. */
#define PASS_MAX_DEPTH 256

/* A rewrite callback: inspects op and possibly rewrites around it. Returns
 * the number of rewrites made (0 = nothing changed) or a negative
 * -(mil_status) after recording the error in its diag. It may insert ops
 * anywhere, and remove op itself and ops before or after it. */
typedef int (*pass_op_fn)(mil_op *op, void *ud);

/* The pattern driver: calls fn on every op of every function body and
 * specialization, nested blocks included (an op's nested blocks are visited
 * before the op itself, as coremltools' passes recurse), in block order. A
 * sweep over the whole program is repeated while it made rewrites, at most
 * max_sweeps times (0 = until nothing changes, capped at 1000 sweeps).
 * Adds the rewrites to st->changes (st may be NULL). Linear per sweep.
 * Errors: what fn returns; MIL_ERR_UNSUPPORTED for nesting deeper than
 * PASS_MAX_DEPTH. */
mil_status pass_rewrite_ops(mil_program *p, pass_op_fn fn, void *ud, int max_sweeps, mil_pass_stats *st,
                            mil_diag *d);

/* Calls fn on every block of p: each function's body and specializations,
 * then nested blocks (pre-order). fn returns rewrites or -(mil_status) as
 * above. One sweep. */
typedef int (*pass_block_fn)(mil_block *b, void *ud);
mil_status pass_for_each_block(mil_program *p, pass_block_fn fn, void *ud, mil_pass_stats *st, mil_diag *d);

/* The function that contains op (through enclosing blocks), or NULL. */
mil_function *pass_op_function(const mil_op *op);
/* Spec version of the opset of op's function (MIL_IOS15 ...), or -1. */
int pass_op_opset(const mil_op *op);

/* ======================================================================== */
/* Uses and consumers (coremltools passes/helper.py)                          */
/* ======================================================================== */

/* True when v is used exactly once, by an op (not as a block output). */
bool pass_has_single_use(const mil_var *v);
/* The op that is v's only consumer (v not a block output), or NULL. */
mil_op *pass_single_child(const mil_var *v);
/* op has one output, consumed by exactly one op of type `type` and by no
 * block output (coremltools' _check_child_op_type). */
bool pass_child_op_type(const mil_op *op, const char *type);
/* Distinct ops consuming v, in use-list order; writes at most max, returns
 * the total count. */
int32_t pass_child_ops(const mil_var *v, mil_op **out, int32_t max);
/* True when any output of op is an output of some block. */
bool pass_op_feeds_block_output(const mil_op *op);
/* None of ops[0..n-2] feeds a block output (the last op may):
 * coremltools' _check_no_output_connection. */
bool pass_no_output_connection(mil_op *const *ops, int32_t n);

/* ======================================================================== */
/* Known values                                                               */
/* ======================================================================== */

/* True when v is the output of a const op. */
bool pass_var_is_const(const mil_var *v);
/* The compile-time value of v (const ops and value-inferred vars), or NULL. */
const mil_value *pass_var_value(const mil_var *v);
/* The value bound to op's input `name` (a var's known value or a literal
 * binding), or NULL. */
const mil_value *pass_input_value(const mil_op *op, const char *name);
/* v's value has exactly one element and it is within tol of x
 * (coremltools' _check_var_scalar_value, tol 1e-3 there). */
bool pass_var_is_scalar(const mil_var *v, double x, double tol);
/* v's value has exactly one element, in [lo, hi]. */
bool pass_var_scalar_in(const mil_var *v, double lo, double hi);
/* The single element of v's value (false when v has no value, more than
 * one element, or a non-numeric dtype). */
bool pass_var_scalar(const mil_var *v, double *out);
/* Every element of a numeric tensor value equals x exactly. */
bool pass_value_all_equal(const mil_value *v, double x);

/* ======================================================================== */
/* Names and new consts                                                       */
/* ======================================================================== */

/* Reading ahead in an op walk: the program keeps its op records in list
 * order in memory (mil_program_compact_ops), so the record some steps
 * ahead of op is most likely the one the walk reaches after those steps.
 * Asking for its first cache line (type, next, block, n_blocks) while the
 * current op is looked at turns a walk bound by one memory latency per op
 * into a stream. A prefetch of an address outside the records is
 * harmless. */
#define PASS_WALK_AHEAD 32
#if defined(__GNUC__) || defined(__clang__)
#define PASS_PREFETCH(addr) __builtin_prefetch(addr)
#else
#define PASS_PREFETCH(addr) ((void)(addr))
#endif
#define PASS_WALK_PREFETCH(op) PASS_PREFETCH((const void *)((uintptr_t)(op) + PASS_WALK_AHEAD * sizeof(mil_op)))

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
 * at fresh_in in pass_util.c): "<prefix>_<k>", k from the program's count
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
/* Support for the cleanup passes (pass_util.c, second half): pointer sets   */
/* and maps, values of '*'-marked vars, coremltools' nonreplaceable vars,     */
/* op-use counts, finishing newly built ops                                   */
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

/* coremltools computes the value of every op output when it builds the op
 * (value inference); a parsed program only keeps the '*' marks. This fills
 * var->val of every output of a non-const op that is marked '*' but has no
 * value, running the op's value inference in program order (nested blocks
 * before their op). Output types are left untouched; an output whose value
 * cannot be inferred keeps its mark and no value. Linear in program size
 * (a var that already has its value costs nothing). Errors: MIL_ERR_NOMEM. */
mil_status pass_infer_marked_values(mil_program *p, mil_diag *d);

/* Number of op operand slots bound to v, block outputs not counted, one per
 * binding (coremltools' len(var.child_ops)). */
int32_t pass_n_op_uses(const mil_var *v);
/* The op consuming v when it is bound exactly once by an op (block outputs
 * are not counted, as coremltools' child_ops), else NULL. */
mil_op *pass_only_child_op(const mil_var *v);

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

#endif
