/* common::remove_symbolic_reshape — give reshapes whose shape is only known
 * symbolically an integer shape, with -1 for the one unknown dimension.
 *
 *   main(%x: (s0, 4, fp32)(Tensor)) {
 *     block0() {
 *       %shape: (3,int32)^(Tensor) = concat(values=(%d0, %c), axis=%ax, name="shape")
 *       %r: (s0, 2, 2, fp32)(Tensor) = reshape(x=%x, shape=%shape, name="r")
 *     } -> (%r)
 *   }
 *
 * becomes
 *
 *   main(%x: (s0, 4, fp32)(Tensor)) {
 *     block0() {
 *       %shapex: (3,int32)*(Tensor) = const(val=[-1, 2, 2], name="shapex")
 *       %r: (s0, 2, 2, fp32)(Tensor) = reshape(x=%x, shape=%shapex, name="r")
 *     } -> (%r)
 *   }
 *
 * A reshape qualifies when its shape input has no known value but a
 * symbolic one ('^'), that shape var is read by no other op, and the
 * reshape's output type has at most one symbolic dimension. The output
 * dims become the new shape (-1 for the symbol) in a const named
 * "<shape name>x"; a new reshape with the old name replaces the old one,
 * which is removed together with the op that produced the shape. A
 * reshape to an unknown rank is an error. (Where coremltools would fail to
 * remove the shape's producer, in another block or with other outputs in
 * use, the reshape is left alone.)
 *
 * Mirrors coremltools/converters/mil/mil/passes/defs/cleanup/
 * remove_symbolic_reshape.py.
 */
#include <stdlib.h>
#include <string.h>

#include "passes/fuse_util_internal.h"

typedef struct rsr {
  mil_program *p;
  pass_names *names;
  int64_t changes;
  mil_diag *d;
} rsr;

static mil_status oom(rsr *c) {
  return mil_diag_error(c->d, MIL_ERR_NOMEM, "remove_symbolic_reshape: out of memory");
}

static mil_status rewrite(rsr *c, mil_op *op) {
  if (op->n_outputs != 1) return MIL_OK;
  mil_var *shape = mil_op_input_var(op, "shape");
  if (!shape) return MIL_OK;
  if (shape->val || shape->mark == MIL_MARK_VALUE) return MIL_OK; /* no symbol in it */
  if (shape->mark != MIL_MARK_SYMBOLIC) return MIL_OK;            /* only known at run time */
  mil_var *x = mil_op_input_var(op, "x");
  if (!x) return MIL_OK;
  if (pass_n_op_uses(shape) > 1) return MIL_OK;
  const mil_type *t = op->outputs[0]->type;
  if (!t || t->kind != MIL_TYPE_TENSOR || t->rank < 0)
    return mil_diag_error(c->d, MIL_ERR_INVALID,
                          "remove_symbolic_reshape: op '%s' (reshape): cannot reshape to an unknown rank from a "
                          "compile-time shape argument",
                          op->name);
  int32_t n_sym = 0;
  for (int32_t i = 0; i < t->rank; i++) n_sym += t->dims[i].size < 0;
  if (n_sym > 1) return MIL_OK;
  mil_op *producer = shape->op;
  /* coremltools fails on these; they are left alone here */
  if (!producer || producer->block != op->block || mil_var_is_block_output(shape)) return MIL_OK;
  for (int32_t i = 0; i < producer->n_outputs; i++)
    if (producer->outputs[i] != shape && producer->outputs[i]->n_uses) return MIL_OK;
  int64_t n = t->rank;
  int32_t *dims = malloc(((size_t)n + 1) * sizeof *dims);
  if (!dims) return oom(c);
  for (int32_t i = 0; i < t->rank; i++) dims[i] = t->dims[i].size < 0 ? -1 : (int32_t)t->dims[i].size;
  mil_value *v = mil_value_new_tensor(c->p, MIL_DT_INT32, 1, &n, false, dims);
  free(dims);
  if (!v) return oom(c);
  if (!c->names && !(c->names = pass_names_new(c->p))) return oom(c);
  size_t len = strlen(shape->name);
  char *cname = malloc(len + 2);
  if (!cname) return oom(c);
  memcpy(cname, shape->name, len);
  memcpy(cname + len, "x", 2);
  mil_var *k = pass_const_named_before(op, c->names, cname, v);
  free(cname);
  if (!k) return oom(c);
  mil_op *r = mil_op_new(c->p, "reshape", op->name);
  if (!r) return oom(c);
  mil_block_insert_before(op, r);
  mil_op_add_input(r, "x", x);
  mil_op_add_input(r, "shape", k);
  mil_status st = pass_finish_op(r, c->d);
  if (st != MIL_OK) return st;
  if (!pass_replace_uses_after(op, op->outputs[0], r->outputs[0]))
    return mil_diag_error(c->d, MIL_ERR_INVALID, "remove_symbolic_reshape: cannot replace the output of '%s'",
                          op->name);
  mil_op *dead[2] = {op, producer};
  st = pass_remove_ops(dead, 2, c->d);
  if (st == MIL_OK) c->changes++;
  return st;
}

/* The walk's callback: the ops removed are the visited reshape and the op
 * before it that produced its shape; new ops go before the reshape, so
 * the sweep meets exactly the reshapes present at its start. */
static int walk_fn(void *ud, mil_op *op) {
  mil_status st = rewrite(ud, op);
  return st == MIL_OK ? 0 : -(int)st;
}

static const char *const k_types[] = {"reshape", NULL};

static mil_status run(mil_program *p, const mil_pass_options *o, mil_pass_stats *stats, mil_diag *d) {
  (void)o;
  rsr c = {p, NULL, 0, d};
  /* one sweep of every block, nested blocks as their op is reached */
  pass_walk_spec ws = {"remove_symbolic_reshape", k_types, false, PASS_WALK_NESTED_ONCE, true, NULL};
  mil_status st = pass_walk_run(p, d, &ws, walk_fn, &c, NULL);
  pass_names_free(c.names);
  if (stats) stats->changes += c.changes;
  return st;
}

static const char *const k_anchors[] = {"reshape", NULL};
const mil_pass_def pass_def_remove_symbolic_reshape = {
    "common::remove_symbolic_reshape", "replace a symbolic reshape shape by a constant with at most one -1", NULL, 0,
    run, k_anchors};
