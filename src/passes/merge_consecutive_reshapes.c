/* common::merge_consecutive_reshapes — a chain of reshapes, each read only
 * by the next, becomes one reshape to the last shape.
 *
 *   main(%x: (2, 6, fp32)(Tensor)) {
 *     block0() {
 *       %s1: (1,int32)*(Tensor) = const(val=[12], name="s1")
 *       %a: (12,fp32)(Tensor) = reshape(x=%x, shape=%s1, name="a")
 *       %s2: (2,int32)*(Tensor) = const(val=[3, 4], name="s2")
 *       %b: (3, 4, fp32)(Tensor) = reshape(x=%a, shape=%s2, name="b")
 *     } -> (%b)
 *   }
 *
 * becomes
 *
 *   main(%x: (2, 6, fp32)(Tensor)) {
 *     block0() {
 *       %s1: (1,int32)*(Tensor) = const(val=[12], name="s1")
 *       %s2: (2,int32)*(Tensor) = const(val=[3, 4], name="s2")
 *       %b: (3, 4, fp32)(Tensor) = reshape(x=%x, shape=%s2, name="b")
 *     } -> (%b)
 *   }
 *
 * The chain starts at a reshape and follows its only consumer while the
 * current reshape's output is read by exactly one op (block outputs aside)
 * and is not an output of its block, ending at the first op that is not a
 * reshape. The new reshape is named after the last reshape's output,
 * takes the last reshape's shape var and goes before the last reshape;
 * the whole chain is removed. Nested blocks are processed (to their own
 * fixed point) as their op is reached; every block repeats until nothing
 * changes.
 *
 * Mirrors coremltools/converters/mil/mil/passes/defs/optimize_repeat_ops.py
 * (merge_consecutive_reshapes).
 */
#include <stdlib.h>
#include <string.h>

#include "passes/fuse_util_internal.h"
#include "passes/tensor_pass_internal.h"

static int try_merge(pass_t_ctx *c, mil_op *op) {
  if (!pass_t_is(op, "reshape")) return 0;
  /* collect the chain (on the stack while short) */
  int32_t n = 0, cap = 8;
  mil_op *local[8];
  mil_op **chain = local;
  mil_op *cur = op;
  while (pass_t_is(cur, "reshape") && cur->block == op->block && cur->n_outputs == 1) {
    if (n == cap) {
      mil_op **nc = chain == local ? malloc((size_t)(cap *= 2) * sizeof *nc)
                                   : realloc(chain, (size_t)(cap *= 2) * sizeof *nc);
      if (!nc) {
        if (chain != local) free(chain);
        return pass_t_oom(c);
      }
      if (chain == local) memcpy(nc, local, sizeof local);
      chain = nc;
    }
    chain[n++] = cur;
    mil_var *out = cur->outputs[0];
    if (pass_n_op_uses(out) != 1 || pass_t_is_output_of(out, cur->block)) break;
    cur = pass_only_child_op(out);
  }
  if (n < 2) return 0; /* a one-op chain is still on the stack */
  mil_op *last = chain[n - 1];
  mil_var *x = mil_op_input_var(chain[0], "x"), *shape = mil_op_input_var(last, "shape");
  int r = 0;
  if (!x || !shape) goto out;
  mil_op *nr = pass_t_op(c, last, "reshape", last->outputs[0]->name);
  if (!nr) {
    r = pass_t_oom(c);
    goto out;
  }
  pass_t_var(nr, "x", x);
  pass_t_var(nr, "shape", shape);
  mil_status st = pass_t_finish(c, nr);
  if (st != MIL_OK) {
    r = -(int)st;
    goto out;
  }
  if ((r = pass_t_replace(c, last, last->outputs[0], nr->outputs[0])) < 0) goto out;
  if ((r = pass_t_remove(c, chain, n)) < 0) goto out;
  r = 1;
out:
  if (chain != local) free(chain);
  return r;
}

/* The op types try_merge() can rewrite at (it returns 0 at any other). */
static const char *const k_types[] = {"reshape", NULL};

static int walk_fn(void *ud, mil_op *op) { return try_merge(ud, op); }

static mil_status run(mil_program *p, const mil_pass_options *o, mil_pass_stats *st, mil_diag *d) {
  (void)o;
  pass_t_ctx c = {.p = p, .d = d, .pass = "merge_consecutive_reshapes"};
  pass_walk_spec ws = {c.pass, k_types, true, PASS_WALK_NESTED_FIXPOINT, true, NULL};
  mil_status s = pass_walk_run(p, d, &ws, walk_fn, &c, &c.changes);
  if (st) st->changes += c.changes;
  pass_t_free(&c);
  return s;
}

static const char *const k_anchors[] = {"reshape", NULL};
const mil_pass_def pass_def_merge_consecutive_reshapes = {
    "common::merge_consecutive_reshapes", "merge a chain of single-use reshapes into one reshape", NULL, 0, run,
    k_anchors};
