/* common::fuse_squeeze_expand_dims — a squeeze undone by an expand_dims
 * becomes an identity (which noop_elimination later removes).
 *
 *   main(%x: (3, 1, 4, 1, fp32)(Tensor)) {
 *     block0() {
 *       %ax: (2,int32)*(Tensor) = const(val=[1, 3], name="ax")
 *       %s: (3, 4, fp32)(Tensor) = squeeze(x=%x, axes=%ax, name="s")
 *       %e: (3, 1, 4, 1, fp32)(Tensor) = expand_dims(x=%s, axes=%ax, name="e")
 *       %r: (3, 1, 4, 1, fp32)(Tensor) = relu(x=%e, name="r")
 *     } -> (%r)
 *   }
 *
 * becomes
 *
 *   main(%x: (3, 1, 4, 1, fp32)(Tensor)) {
 *     block0() {
 *       %ax: (2,int32)*(Tensor) = const(val=[1, 3], name="ax")
 *       %identity_0: (3, 1, 4, 1, fp32)(Tensor) = identity(x=%x, name="identity_0")
 *       %r: (3, 1, 4, 1, fp32)(Tensor) = relu(x=%identity_0, name="r")
 *     } -> (%r)
 *   }
 *
 * Conditions: the squeeze's output is read by exactly one op (block outputs
 * aside), an expand_dims; the squeeze's input and the expand_dims' output
 * have equal shapes; the squeeze's output is not an output of its block;
 * coremltools allows the replacement (constexpr rule). The identity (fresh
 * name) goes before the squeeze. Nested blocks are processed as their op
 * is reached; every block repeats until nothing changes.
 *
 * Mirrors coremltools/converters/mil/mil/passes/defs/
 * optimize_tensor_operation.py (fuse_squeeze_expand_dims).
 */
#include "passes/fuse_util_internal.h"
#include "passes/tensor_pass_internal.h"

static int try_fuse(pass_t_ctx *c, mil_op *op) {
  if (op->n_blocks > 0 || !pass_t_is(op, "squeeze")) return 0;
  mil_op *ed = pass_t_child(op, "expand_dims");
  if (!ed || ed->block != op->block || ed->n_outputs != 1) return 0;
  mil_var *x = mil_op_input_var(op, "x"), *out = ed->outputs[0];
  if (!x || !pass_t_shape_eq(x, out)) return 0;
  if (pass_t_is_output_of(op->outputs[0], op->block)) return 0;
  mil_op *id = pass_t_op(c, op, "identity", NULL);
  if (!id) return pass_t_oom(c);
  pass_t_var(id, "x", x);
  mil_status st = pass_t_finish(c, id);
  if (st != MIL_OK) return -(int)st;
  if (!pass_t_can_replace(c, out, id->outputs[0])) return c->oom_error ? pass_t_oom(c) : 0;
  int r = pass_t_replace(c, ed, out, id->outputs[0]);
  if (r < 0) return r;
  mil_op *dead[2] = {op, ed};
  if ((r = pass_t_remove(c, dead, 2)) < 0) return r;
  return 1;
}

/* The op types try_fuse() can rewrite at (it returns 0 at any other). */
static const char *const k_types[] = {"squeeze", NULL};
/* The op types no rewrite can do without. */
static const char *const k_required[] = {"expand_dims", NULL};

static int walk_fn(void *ud, mil_op *op) { return try_fuse(ud, op); }

static mil_status run(mil_program *p, const mil_pass_options *o, mil_pass_stats *st, mil_diag *d) {
  (void)o;
  pass_t_ctx c = {.p = p, .d = d, .pass = "fuse_squeeze_expand_dims"};
  pass_walk_spec ws = {c.pass, k_types, true, PASS_WALK_NESTED_FIXPOINT, true, k_required};
  mil_status s = pass_walk_run(p, d, &ws, walk_fn, &c, &c.changes);
  if (st) st->changes += c.changes;
  pass_t_free(&c);
  return s;
}

static const char *const k_anchors[] = {"squeeze", NULL};
const mil_pass_def pass_def_fuse_squeeze_expand_dims = {
    "common::fuse_squeeze_expand_dims", "replace a squeeze undone by an expand_dims with an identity", NULL, 0,
    run, k_anchors};
