/* common::merge_consecutive_relus — a relu of a relu is the first relu.
 *
 *   main(%x: (1, 2, 3, fp32)(Tensor)) {
 *     block0() {
 *       %a: (1, 2, 3, fp32)(Tensor) = relu(x=%x, name="a")
 *       %b: (1, 2, 3, fp32)(Tensor) = relu(x=%a, name="b")
 *       %c: (1, 2, 3, fp32)(Tensor) = log(x=%b, name="c")
 *     } -> (%c)
 *   }
 *
 * becomes
 *
 *   main(%x: (1, 2, 3, fp32)(Tensor)) {
 *     block0() {
 *       %a: (1, 2, 3, fp32)(Tensor) = relu(x=%x, name="a")
 *       %c: (1, 2, 3, fp32)(Tensor) = log(x=%a, name="c")
 *     } -> (%c)
 *   }
 *
 * Conditions: the first relu's output is read by exactly one op (block
 * outputs aside), a relu; the second relu's uses move to the first relu's
 * output when coremltools allows the replacement (constexpr rule), and the
 * second relu is removed. When the second relu's output is a function
 * output, the first relu's output takes its name. Only function bodies are
 * visited (not nested blocks), each until nothing changes.
 *
 * Mirrors coremltools/converters/mil/mil/passes/defs/optimize_repeat_ops.py
 * (merge_consecutive_relus).
 */
#include "passes/fuse_util_internal.h"
#include "passes/tensor_pass_internal.h"

static int try_merge(pass_t_ctx *c, mil_op *op) {
  if (!pass_t_is(op, "relu")) return 0;
  mil_op *child = pass_t_child(op, "relu");
  if (!child || child->block != op->block || child->n_outputs != 1) return 0;
  if (!pass_t_can_replace(c, child->outputs[0], op->outputs[0])) return c->oom_error ? pass_t_oom(c) : 0;
  int r = pass_t_replace(c, child, child->outputs[0], op->outputs[0]);
  if (r < 0) return r;
  if ((r = pass_t_remove(c, &child, 1)) < 0) return r;
  return 1;
}

/* The op types try_merge() can rewrite at (it returns 0 at any other). */
static const char *const k_types[] = {"relu", NULL};

static int walk_fn(void *ud, mil_op *op) { return try_merge(ud, op); }

static mil_status run(mil_program *p, const mil_pass_options *o, mil_pass_stats *st, mil_diag *d) {
  (void)o;
  pass_t_ctx c = {.p = p, .d = d, .pass = "merge_consecutive_relus"};
  pass_walk_spec ws = {c.pass, k_types, true, PASS_WALK_NESTED_SKIP, true, NULL};
  mil_status s = pass_walk_run(p, d, &ws, walk_fn, &c, &c.changes);
  if (st) st->changes += c.changes;
  pass_t_free(&c);
  return s;
}

static const char *const k_anchors[] = {"relu", NULL};
const mil_pass_def pass_def_merge_consecutive_relus = {
    "common::merge_consecutive_relus", "drop a relu applied to the output of a relu", NULL, 0, run, k_anchors};
