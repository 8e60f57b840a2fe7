/* common::fuse_stack_split — stack, split back into the same pieces along
 * the stack axis, and squeezes of that axis give the stacked inputs back;
 * each squeeze becomes an identity (which noop_elimination later removes).
 *
 *   main(%a: (2, 3, fp32)(Tensor), %b: (2, 3, fp32)(Tensor)) {
 *     block0() {
 *       %ax: (int32)*(Scalar) = const(val=0, name="ax")
 *       %s: (2, 2, 3, fp32)(Tensor) = stack(values=(%a, %b), axis=%ax, name="s")
 *       %n: (int32)*(Scalar) = const(val=2, name="n")
 *       %p0: (1, 2, 3, fp32)(Tensor), %p1: (1, 2, 3, fp32)(Tensor) = split(x=%s, num_splits=%n, axis=%ax, name="sp")
 *       %sq: (1,int32)*(Tensor) = const(val=[0], name="sq")
 *       %q0: (2, 3, fp32)(Tensor) = squeeze(x=%p0, axes=%sq, name="q0")
 *       %q1: (2, 3, fp32)(Tensor) = squeeze(x=%p1, axes=%sq, name="q1")
 *     } -> (%q0, %q1)
 *   }
 *
 * becomes
 *
 *   main(%a: (2, 3, fp32)(Tensor), %b: (2, 3, fp32)(Tensor)) {
 *     block0() {
 *       %ax: (int32)*(Scalar) = const(val=0, name="ax")
 *       %n: (int32)*(Scalar) = const(val=2, name="n")
 *       %sq: (1,int32)*(Tensor) = const(val=[0], name="sq")
 *       %q0: (2, 3, fp32)(Tensor) = identity(x=%a, name="identity_0")
 *       %q1: (2, 3, fp32)(Tensor) = identity(x=%b, name="identity_1")
 *     } -> (%q0, %q1)
 *   }
 *
 * Conditions: the stack's output is not a block output; for each split
 * reading it: the split's axis is the stack axis (negative axes count
 * from rank + 1); split_sizes, when given, is all ones and num_splits,
 * when given, is the number of stacked inputs; no split output is a block
 * output; every split output is read by exactly one op, a squeeze of
 * exactly the stack axis. Each squeeze is replaced by an identity of the
 * matching input (fresh name, placed before the squeeze); the split and
 * the squeezes are removed, and the stack too once nothing reads it.
 * Function bodies, and nested blocks as their op is reached, one sweep
 * each.
 *
 * Mirrors coremltools/converters/mil/mil/passes/defs/
 * optimize_tensor_operation.py (fuse_stack_split).
 */
#include <stdlib.h>

#include "passes/fuse_util_internal.h"
#include "passes/tensor_pass_internal.h"

static int64_t positive(int64_t axis, int32_t rank) { return axis < 0 ? axis + rank + 1 : axis; }

/* coremltools' _try_fuse_a_branch: 1 when fused, 0, -(status). */
static int fuse_branch(pass_t_ctx *c, mil_op *stack, const mil_input *vals, int32_t rank, int64_t axis, mil_op *sp) {
  mil_block *b = stack->block;
  int32_t n = vals->n_args;
  const mil_value *av = pass_input_value(sp, "axis");
  if (!av || av->numel != 1 || positive(mil_value_get_i64(av, 0), rank) != axis) return 0;
  const mil_input *ss = mil_op_find_input(sp, "split_sizes");
  if (ss && ss->n_args > 0) {
    const mil_value *v = pass_input_value(sp, "split_sizes");
    if (!v || v->numel != n) return 0;
    for (int64_t i = 0; i < v->numel; i++)
      if (mil_value_get_i64(v, i) != 1) return 0;
  }
  const mil_input *ns = mil_op_find_input(sp, "num_splits");
  if (ns && ns->n_args > 0) {
    const mil_value *v = pass_input_value(sp, "num_splits");
    if (!v || v->numel != 1 || mil_value_get_i64(v, 0) != n) return 0;
  }
  if (sp->block != b || sp->n_outputs != n) return 0;
  for (int32_t i = 0; i < sp->n_outputs; i++)
    if (pass_t_is_output_of(sp->outputs[i], b)) return 0;
  mil_op **sq = malloc(((size_t)n + 1) * sizeof *sq);
  if (!sq) return pass_t_oom(c);
  int r = 0;
  for (int32_t i = 0; i < n; i++) {
    mil_op *q = pass_only_child_op(sp->outputs[i]);
    int64_t axes[8], na;
    if (!q || !pass_t_is(q, "squeeze") || q->block != b || q->n_outputs != 1) goto out;
    if (!pass_t_ints(q, "axes", axes, 8, &na) || na != 1 || positive(axes[0], rank) != axis) goto out;
    sq[i] = q;
  }
  for (int32_t i = 0; i < n; i++) {
    mil_op *id = pass_t_op(c, sq[i], "identity", NULL);
    if (!id) {
      r = pass_t_oom(c);
      goto out;
    }
    pass_t_var(id, "x", vals->args[i].use.var);
    mil_status st = pass_t_finish(c, id);
    if (st != MIL_OK) {
      r = -(int)st;
      goto out;
    }
    if ((r = pass_t_replace(c, sq[i], sq[i]->outputs[0], id->outputs[0])) < 0) goto out;
  }
  sq[n] = sp;
  if ((r = pass_t_remove(c, sq, n + 1)) < 0) goto out;
  r = 1;
out:
  free(sq);
  return r;
}

static int try_fuse(pass_t_ctx *c, mil_op *op) {
  if (!pass_t_is(op, "stack") || op->n_outputs != 1) return 0;
  if (pass_t_is_output_of(op->outputs[0], op->block)) return 0;
  const mil_input *vals = mil_op_find_input(op, "values");
  const mil_value *av = pass_input_value(op, "axis");
  if (!vals || vals->n_args < 1 || !av || av->numel != 1) return 0;
  for (int32_t i = 0; i < vals->n_args; i++)
    if (!vals->args[i].use.var) return 0;
  int32_t rank = pass_t_rank(vals->args[0].use.var);
  if (rank < 0) return 0;
  int64_t axis = positive(mil_value_get_i64(av, 0), rank);
  int32_t nk = pass_child_ops(op->outputs[0], NULL, 0);
  mil_op **kids = malloc(((size_t)nk + 1) * sizeof *kids);
  if (!kids) return pass_t_oom(c);
  pass_child_ops(op->outputs[0], kids, nk);
  int total = 0;
  for (int32_t i = 0; i < nk; i++) {
    if (!pass_t_is(kids[i], "split")) continue;
    int r = fuse_branch(c, op, vals, rank, axis, kids[i]);
    if (r < 0) {
      free(kids);
      return r;
    }
    total += r;
  }
  free(kids);
  if (op->outputs[0]->n_uses == 0) {
    int r = pass_t_remove(c, &op, 1);
    if (r < 0) return r;
    total++;
  }
  return total;
}

/* The op types try_fuse() can rewrite at (it returns 0 at any other). */
static const char *const k_types[] = {"stack", NULL};

static int walk_fn(void *ud, mil_op *op) { return try_fuse(ud, op); }

static mil_status run(mil_program *p, const mil_pass_options *o, mil_pass_stats *st, mil_diag *d) {
  (void)o;
  pass_t_ctx c = {.p = p, .d = d, .pass = "fuse_stack_split"};
  pass_walk_spec ws = {c.pass, k_types, false, PASS_WALK_NESTED_ONCE, true, NULL};
  mil_status s = pass_walk_run(p, d, &ws, walk_fn, &c, &c.changes);
  if (st) st->changes += c.changes;
  pass_t_free(&c);
  return s;
}

static const char *const k_anchors[] = {"stack", NULL};
const mil_pass_def pass_def_fuse_stack_split = {
    "common::fuse_stack_split", "replace stack -> split -> squeeze round trips with identities", NULL, 0, run,
    k_anchors};
