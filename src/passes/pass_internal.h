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

#include <stdio.h> /* snprintf for names and messages */

#include "mil/ir.h"
#include "mil/ops.h"
#include "mil/passes.h"

/* The builder (fresh names, consts, use replacement, op removal, pointer
 * sets, finishing ops, PASS_MAX_DEPTH): passes build through it. */
#include "build/build.h"

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
/* Known values (pass_var_value and pass_input_value are the builder's)      */
/* ======================================================================== */

/* True when v is the output of a const op. */
bool pass_var_is_const(const mil_var *v);
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
/* Reading ahead in walks                                                     */
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

/* ======================================================================== */
/* Values of '*'-marked vars, op-use counts (pass_util.c, second half)        */
/* ======================================================================== */

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

/* ======================================================================== */
/* Passes built on the builder (fuse_walk.c)                                  */
/* ======================================================================== */

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

#endif
