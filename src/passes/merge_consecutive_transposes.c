/* common::merge_consecutive_transposes — compose a transpose feeding a
 * single transpose into one transpose.
 *
 *   main(%x: (3, 5, 6, 7, fp32)(Tensor)) {
 *     block0() {
 *       %p1: (4,int32)*(Tensor) = const(val=[0, 2, 1, 3], name="p1")
 *       %a: (3, 6, 5, 7, fp32)(Tensor) = transpose(x=%x, perm=%p1, name="a")
 *       %p2: (4,int32)*(Tensor) = const(val=[3, 2, 0, 1], name="p2")
 *       %b: (7, 5, 3, 6, fp32)(Tensor) = transpose(x=%a, perm=%p2, name="b")
 *       %c: (7, 5, 3, 6, fp32)(Tensor) = relu(x=%b, name="c")
 *     } -> (%c)
 *   }
 *
 * becomes
 *
 *   main(%x: (3, 5, 6, 7, fp32)(Tensor)) {
 *     block0() {
 *       %p1: (4,int32)*(Tensor) = const(val=[0, 2, 1, 3], name="p1")
 *       %transpose_0_perm_0: (4,int32)*(Tensor) = const(val=[3, 1, 0, 2], name="transpose_0_perm_0")
 *       %transpose_0: (7, 5, 3, 6, fp32)(Tensor) = transpose(x=%x, perm=%transpose_0_perm_0, name="transpose_0")
 *       %p2: (4,int32)*(Tensor) = const(val=[3, 2, 0, 1], name="p2")
 *       %c: (7, 5, 3, 6, fp32)(Tensor) = relu(x=%transpose_0, name="c")
 *     } -> (%c)
 *   }
 *
 * Conditions: the first transpose's output is not an output of the block
 * and is read by exactly one op, a transpose. The new perm is
 * perm1[perm2[i]]; the new transpose (fresh name) goes before the first
 * one and replaces the second when coremltools allows the replacement
 * (constexpr rule). Chains collapse over repeated sweeps. Only function
 * bodies are visited (not nested blocks), each until nothing changes.
 *
 * Mirrors coremltools/converters/mil/mil/passes/defs/optimize_repeat_ops.py
 * (merge_consecutive_transposes).
 */
#include "passes/fuse_util_internal.h"
#include "passes/tensor_pass_internal.h"

#define MAX_RANK 64

static int try_merge(pass_t_ctx *c, mil_op *op) {
  if (!pass_t_is(op, "transpose")) return 0;
  mil_op *child = pass_t_child(op, "transpose");
  if (!child || child->block != op->block || child->n_outputs != 1) return 0;
  if (pass_t_is_output_of(op->outputs[0], op->block)) return 0;
  int64_t p1[MAX_RANK], p2[MAX_RANK], np[MAX_RANK], n1, n2;
  if (!pass_t_ints(op, "perm", p1, MAX_RANK, &n1) || !pass_t_ints(child, "perm", p2, MAX_RANK, &n2)) return 0;
  for (int64_t i = 0; i < n2; i++) {
    int64_t k = p2[i] < 0 ? p2[i] + n1 : p2[i];
    if (k < 0 || k >= n1) return 0;
    np[i] = p1[k];
  }
  mil_var *x = mil_op_input_var(op, "x");
  if (!x) return 0;
  mil_op *t = pass_t_op(c, op, "transpose", NULL);
  if (!t) return pass_t_oom(c);
  pass_t_var(t, "x", x);
  if (!pass_t_const(c, t, "perm", pass_t_i32s(c->p, n2, np))) return pass_t_oom(c);
  mil_status st = pass_t_finish(c, t);
  if (st != MIL_OK) return -(int)st;
  /* coremltools' try_replace_uses_of_var_after_op: the new op stays when
   * the replacement is refused */
  if (!pass_t_can_replace(c, child->outputs[0], t->outputs[0])) return c->oom_error ? pass_t_oom(c) : 0;
  int r = pass_t_replace(c, child, child->outputs[0], t->outputs[0]);
  if (r < 0) return r;
  mil_op *dead[2] = {op, child};
  if ((r = pass_t_remove(c, dead, 2)) < 0) return r;
  return 1;
}

/* The op types try_merge() can rewrite at (it returns 0 at any other). */
static const char *const k_types[] = {"transpose", NULL};

static int walk_fn(void *ud, mil_op *op) { return try_merge(ud, op); }

static mil_status run(mil_program *p, const mil_pass_options *o, mil_pass_stats *st, mil_diag *d) {
  (void)o;
  pass_t_ctx c = {.p = p, .d = d, .pass = "merge_consecutive_transposes"};
  pass_walk_spec ws = {c.pass, k_types, true, PASS_WALK_NESTED_SKIP, true, NULL};
  mil_status s = pass_walk_run(p, d, &ws, walk_fn, &c, &c.changes);
  if (st) st->changes += c.changes;
  pass_t_free(&c);
  return s;
}

static const char *const k_anchors[] = {"transpose", NULL};
const mil_pass_def pass_def_merge_consecutive_transposes = {
    "common::merge_consecutive_transposes", "compose consecutive transposes into one", NULL, 0, run, k_anchors};
