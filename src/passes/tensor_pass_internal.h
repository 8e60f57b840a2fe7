/* Helpers of the tensor-operation passes (merge_consecutive_*, reduce_transposes,
 * cast_optimization's neighbours in coremltools' optimize_repeat_ops.py /
 * optimize_tensor_operation.py / optimize_normalization.py): the block
 * sweeps those passes use, coremltools' Builder naming for the ops and
 * consts they create, and small value and use queries.
 *
 * Building an op, as mb.<op>(..., before_op=anchor) does:
 *
 *   mil_op *op = pass_t_op(c, anchor, "pad", NULL);   fresh "pad_<k>" before anchor
 *   pass_t_var(op, "x", x);                          bind an existing var
 *   pass_t_const(c, op, "pad", value);               const "<op>_pad_<k>" + bind
 *   if (pass_t_finish(c, op) != MIL_OK) ...          defaults, input order, inference
 *
 * Mirrors coremltools/converters/mil/mil/builder.py (_get_free_name,
 * _add_const) and passes/helper.py (_check_child_op_type).
 */
#ifndef MIL_TENSOR_PASS_INTERNAL_H
#define MIL_TENSOR_PASS_INTERNAL_H

#include <string.h>

#include "passes/pass_internal.h"

/* State of one pass run. Zero-initialize, set p, d and pass. */
typedef struct pass_t_ctx {
  mil_program *p;
  mil_diag *d;
  const char *pass; /* pass name for messages */
  pass_names *names; /* built on first need */
  pass_nonrep *nonrep; /* built on first need (pass_t_can_replace) */
  int64_t changes;
  bool oom_error; /* an allocation failed in a query that cannot report it */
  void *ud; /* the pass's own state */
} pass_t_ctx;

void pass_t_free(pass_t_ctx *c);
/* Records "<pass>: out of memory" and returns -(MIL_ERR_NOMEM). */
int pass_t_oom(pass_t_ctx *c);
/* Records an error (status st) prefixed with the pass name; returns -(st). */
int pass_t_fail(pass_t_ctx *c, mil_status st, const char *msg, const char *what);

/* ---------- building ---------- */

/* The program's name set, collected on first call; NULL on out of memory. */
pass_names *pass_t_names(pass_t_ctx *c);
/* Fresh "<prefix>_<k>" (Builder._get_free_name); NULL on out of memory. */
const char *pass_t_fresh(pass_t_ctx *c, const char *prefix);
/* A new op inserted before anchor, named `name` (verbatim, recorded) or a
 * fresh "<type>_<k>" when name is NULL. NULL on out of memory. */
mil_op *pass_t_op(pass_t_ctx *c, mil_op *anchor, const char *type, const char *name);
/* Binds input `input` of op to v / to a tuple of vars. */
void pass_t_var(mil_op *op, const char *input, mil_var *v);
void pass_t_tuple(mil_op *op, const char *input, int32_t n, mil_var *const *vars);
/* Binds input `input` to a new const holding v, named
 * "<op name>_<input>_<k>", inserted before op. false on out of memory. */
bool pass_t_const(pass_t_ctx *c, mil_op *op, const char *input, const mil_value *v);
/* pass_finish_op, then records the output names. */
mil_status pass_t_finish(pass_t_ctx *c, mil_op *op);
/* coremltools' Var.can_be_replaced_by_var (the constexpr rule), with the
 * linear-time tracking of pass_nonrep; ops built with pass_t_finish are
 * noted. False also on out of memory (c->oom_error set). */
bool pass_t_can_replace(pass_t_ctx *c, const mil_var *old_var, const mil_var *new_var);
/* pass_replace_uses_after with an error when it refuses: 0 or -(status). */
int pass_t_replace(pass_t_ctx *c, mil_op *anchor, mil_var *old_var, mil_var *new_var);
/* pass_remove_ops: 0 or -(status). */
int pass_t_remove(pass_t_ctx *c, mil_op *const *ops, int32_t n);

/* ---------- values coremltools makes from Python literals ---------- */

/* 1-D int32 tensor. */
mil_value *pass_t_i32s(mil_program *p, int64_t n, const int64_t *v);
mil_value *pass_t_i32(mil_program *p, int64_t v);
mil_value *pass_t_f32(mil_program *p, double v);
mil_value *pass_t_bool(mil_program *p, bool v);
mil_value *pass_t_str(mil_program *p, const char *s);

/* ---------- queries ---------- */

static inline bool pass_t_is(const mil_op *op, const char *type) {
  return op && op->type && strcmp(op->type, type) == 0;
}
/* coremltools' _check_child_op_type: op has one output, bound exactly once
 * by an op (block outputs are not counted), of type `type` (any type when
 * NULL). Returns that op or NULL. */
mil_op *pass_t_child(const mil_op *op, const char *type);
/* coremltools' Var.child_ops: one entry per op binding of v (block outputs
 * are not counted; an op binding v twice appears twice), in program order
 * (ops in nested blocks at their enclosing op's position, before it;
 * bindings of one op in input order), which is the order coremltools
 * records them for a program built or loaded in order. Writes the first
 * `max` entries to out and returns the total count (-1 on out of memory). */
int32_t pass_t_children(const mil_var *v, mil_op **out, int32_t max);
/* True when v is an output of block b (`v in block.outputs`). */
bool pass_t_is_output_of(const mil_var *v, const mil_block *b);
/* Rank of a tensor var; -1 when unknown or not a tensor. */
int32_t pass_t_rank(const mil_var *v);
/* Whether every dim of v's type is a known constant. */
bool pass_t_static(const mil_var *v);
/* Dims equal as coremltools compares shape entries: equal constants, or
 * the same symbol. Unknown dims equal nothing. */
bool pass_t_dim_eq(const mil_dim *a, const mil_dim *b);
/* Both tensors of known rank with pairwise equal dims (`x.shape == y.shape`). */
bool pass_t_shape_eq(const mil_var *a, const mil_var *b);
/* The elements of a known numeric value of input `input` as int64 in out
 * (at most max; *n gets the count). false when unknown, not numeric or
 * longer than max. */
bool pass_t_ints(const mil_op *op, const char *input, int64_t *out, int64_t max, int64_t *n);
/* The string of a known string scalar input, or NULL. */
const char *pass_t_str_input(const mil_op *op, const char *input);

/* ---------- sweeps ---------- */

/* A per-op callback: 1 when it rewrote, 0, or -(status). */
typedef int (*pass_t_fn)(pass_t_ctx *c, mil_op *op);

/* How a sweep treats the nested blocks of the ops it reaches. */
typedef enum pass_t_nested {
  PASS_T_NESTED_SKIP = 0,   /* not visited (passes that only walk function bodies) */
  PASS_T_NESTED_ONCE = 1,   /* one sweep of each nested block, recursively */
  PASS_T_NESTED_STABLE = 2, /* each nested block swept until stable, recursively */
} pass_t_nested;

/* One sweep "for op in list(block.operations)": fn on every op that was in
 * b when the sweep began and still is (ops made during the sweep wait for
 * the next one); an op's nested blocks are handled first, per `nested`.
 * Returns the number of rewrites at b's level or -(status); rewrites in
 * nested blocks go to c->changes directly. */
int pass_t_sweep(pass_t_ctx *c, mil_block *b, pass_t_fn fn, pass_t_nested nested, int depth);
/* For each function body and specialization: sweep until a sweep rewrites
 * nothing (`repeat`), or once. Adds rewrites to c->changes. */
mil_status pass_t_run(pass_t_ctx *c, pass_t_fn fn, pass_t_nested nested, bool repeat);

#endif
