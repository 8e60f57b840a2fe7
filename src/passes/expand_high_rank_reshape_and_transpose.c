/* common::expand_high_rank_reshape_and_transpose — rewrite
 * reshape (rank >= 6) -> transpose -> reshape (rank <= 5) with tensors of
 * rank <= 5, which the Core ML runtime supports.
 *
 * Runs of consecutive axes in the perm are merged first; when fewer than 6
 * groups remain, one reshape to the grouped shape and one transpose do:
 *
 *   main(%x: (6, 120, fp32)(Tensor)) {
 *     block0() {
 *       %s1: (6,int32)*(Tensor) = const(val=[1, 2, 3, 4, 5, 6], name="s1")
 *       %a: (1, 2, 3, 4, 5, 6, fp32)(Tensor) = reshape(x=%x, shape=%s1, name="a")
 *       %p: (6,int32)*(Tensor) = const(val=[4, 5, 3, 2, 0, 1], name="p")
 *       %b: (5, 6, 4, 3, 1, 2, fp32)(Tensor) = transpose(x=%a, perm=%p, name="b")
 *       %s2: (3,int32)*(Tensor) = const(val=[6, 20, 6], name="s2")
 *       %c: (6, 20, 6, fp32)(Tensor) = reshape(x=%b, shape=%s2, name="c")
 *     } -> (%c)
 *   }
 *
 * becomes
 *
 *   main(%x: (6, 120, fp32)(Tensor)) {
 *     block0() {
 *       %s1: (6,int32)*(Tensor) = const(val=[1, 2, 3, 4, 5, 6], name="s1")
 *       %reshape_0_shape_0: (4,int32)*(Tensor) = const(val=[2, 3, 4, 30], name="reshape_0_shape_0")
 *       %reshape_0: (2, 3, 4, 30, fp32)(Tensor) = reshape(x=%x, shape=%reshape_0_shape_0, name="reshape_0")
 *       %transpose_0_perm_0: (4,int32)*(Tensor) = const(val=[3, 2, 1, 0], name="transpose_0_perm_0")
 *       %transpose_0: (30, 4, 3, 2, fp32)(Tensor) = transpose(x=%reshape_0, perm=%transpose_0_perm_0, name="transpose_0")
 *       %reshape_1_shape_0: (3,int32)*(Tensor) = const(val=[6, 20, 6], name="reshape_1_shape_0")
 *       %c: (6, 20, 6, fp32)(Tensor) = reshape(x=%transpose_0, shape=%reshape_1_shape_0, name="reshape_1")
 *       %p: (6,int32)*(Tensor) = const(val=[4, 5, 3, 2, 0, 1], name="p")
 *       %s2: (3,int32)*(Tensor) = const(val=[6, 20, 6], name="s2")
 *     } -> (%c)
 *   }
 *
 * Otherwise each of the n groups is moved to the front in perm order with
 * a rank-4 reshape [lead, before, d, after] and transpose [0, 2, 1, 3].
 * Conditions: the first reshape's output has rank > 5 and a fully known
 * shape and is read by exactly one op, a transpose, itself read by exactly
 * one op, a reshape of output rank < 6; neither intermediate is an output
 * of the block; coremltools allows the replacement (constexpr rule). The
 * new ops (fresh names) go before the first reshape. Nested blocks are
 * processed as their op is reached; every block repeats until nothing
 * changes.
 *
 * Mirrors coremltools/converters/mil/mil/passes/defs/
 * optimize_tensor_operation.py (expand_high_rank_reshape_and_transpose).
 */
#include "passes/fuse_util_internal.h"
#include "passes/tensor_pass_internal.h"

#define MAX_RANK 64

/* Product of arr[start..end) skipping the indices marked in skip (may be NULL). */
static int64_t prod(int32_t start, int32_t end, const int64_t *arr, const bool *skip) {
  int64_t r = 1;
  for (int32_t i = start; i < end; i++)
    if (!skip || !skip[i]) r *= arr[i];
  return r;
}

/* mb.<type>(x=x, <input>=value, before_op=anchor); the output or NULL (err set). */
static mil_var *build(pass_t_ctx *c, mil_op *anchor, const char *type, mil_var *x, const char *input,
                      const mil_value *val, int *err) {
  mil_op *op = pass_t_op(c, anchor, type, NULL);
  if (!op) return (*err = pass_t_oom(c)), NULL;
  pass_t_var(op, "x", x);
  if (!pass_t_const(c, op, input, val)) return (*err = pass_t_oom(c)), NULL;
  mil_status st = pass_t_finish(c, op);
  if (st != MIL_OK) return (*err = -(int)st), NULL;
  return op->outputs[0];
}

static int try_expand(pass_t_ctx *c, mil_op *op) {
  if (op->n_blocks > 0 || !pass_t_is(op, "reshape") || op->n_outputs != 1) return 0;
  mil_var *r1 = op->outputs[0];
  int32_t rank = pass_t_rank(r1);
  if (rank <= 5 || rank > MAX_RANK || !pass_t_static(r1)) return 0;
  mil_op *tr = pass_t_child(op, "transpose");
  if (!tr || tr->block != op->block) return 0;
  mil_op *last = pass_t_child(tr, "reshape");
  if (!last || last->block != op->block || last->n_outputs != 1) return 0;
  int32_t out_rank = pass_t_rank(last->outputs[0]);
  if (out_rank < 0 || out_rank >= 6) return 0;
  if (pass_t_is_output_of(r1, op->block) || pass_t_is_output_of(tr->outputs[0], op->block)) return 0;
  int64_t operm[MAX_RANK], np;
  if (!pass_t_ints(tr, "perm", operm, MAX_RANK, &np) || np != rank) return 0;
  const mil_value *last_shape = pass_input_value(last, "shape");
  mil_var *x = mil_op_input_var(op, "x");
  if (!last_shape || !x) return 0;
  int64_t oshape[MAX_RANK];
  for (int32_t i = 0; i < rank; i++) oshape[i] = r1->type->dims[i].size;
  for (int32_t i = 0; i < rank; i++)
    if (operm[i] < 0 || operm[i] >= rank) return 0;

  /* group runs of consecutive axes */
  int64_t gstart[MAX_RANK], gsize[MAX_RANK];
  int32_t ng = 0;
  for (int32_t i = 0; i < rank; i++) {
    if (i > 0 && operm[i] == operm[i - 1] + 1) continue;
    int32_t j = i;
    while (j + 1 < rank && operm[j + 1] == operm[j] + 1) j++;
    gstart[ng] = operm[i];
    gsize[ng] = prod((int32_t)operm[i], (int32_t)operm[j] + 1, oshape, NULL);
    ng++;
  }
  /* order of the groups by their first axis (stable, as argsort of distinct keys) */
  int32_t order[MAX_RANK];
  for (int32_t i = 0; i < ng; i++) order[i] = i;
  for (int32_t i = 1; i < ng; i++)
    for (int32_t j = i; j > 0 && gstart[order[j - 1]] > gstart[order[j]]; j--) {
      int32_t t = order[j];
      order[j] = order[j - 1];
      order[j - 1] = t;
    }
  int64_t shape[MAX_RANK], perm[MAX_RANK];
  for (int32_t i = 0; i < ng; i++) shape[i] = gsize[order[i]];
  for (int32_t i = 0; i < ng; i++)
    for (int32_t k = 0; k < ng; k++)
      if (gstart[order[k]] == gstart[i]) perm[i] = k;

  int err = 0;
  mil_var *cur = x;
  if (ng < 6) {
    cur = build(c, op, "reshape", cur, "shape", pass_t_i32s(c->p, ng, shape), &err);
    if (cur) cur = build(c, op, "transpose", cur, "perm", pass_t_i32s(c->p, ng, perm), &err);
  } else {
    int64_t lead = 1;
    bool memo[MAX_RANK] = {false};
    static const int64_t swap[4] = {0, 2, 1, 3};
    for (int32_t i = 0; i < ng && cur; i++) {
      int32_t axis = (int32_t)perm[i];
      int64_t dim = shape[axis];
      memo[axis] = true;
      int64_t rs[4] = {lead, prod(0, axis, shape, memo), dim, prod(axis + 1, ng, shape, memo)};
      cur = build(c, op, "reshape", cur, "shape", pass_t_i32s(c->p, 4, rs), &err);
      if (cur) cur = build(c, op, "transpose", cur, "perm", pass_t_i32s(c->p, 4, swap), &err);
      lead *= dim;
    }
  }
  if (cur) cur = build(c, op, "reshape", cur, "shape", last_shape, &err);
  if (!cur) return err;
  if (!pass_t_can_replace(c, last->outputs[0], cur)) return c->oom_error ? pass_t_oom(c) : 0;
  int r = pass_t_replace(c, op, last->outputs[0], cur);
  if (r < 0) return r;
  mil_op *dead[3] = {op, tr, last};
  if ((r = pass_t_remove(c, dead, 3)) < 0) return r;
  return 1;
}

/* The op types try_expand() can rewrite at (it returns 0 at any other). */
static const char *const k_types[] = {"reshape", NULL};
/* The op types no rewrite can do without. */
static const char *const k_required[] = {"transpose", NULL};

static int walk_fn(void *ud, mil_op *op) { return try_expand(ud, op); }

static mil_status run(mil_program *p, const mil_pass_options *o, mil_pass_stats *st, mil_diag *d) {
  (void)o;
  pass_t_ctx c = {.p = p, .d = d, .pass = "expand_high_rank_reshape_and_transpose"};
  pass_walk_spec ws = {c.pass, k_types, true, PASS_WALK_NESTED_FIXPOINT, true, k_required};
  mil_status s = pass_walk_run(p, d, &ws, walk_fn, &c, &c.changes);
  if (st) st->changes += c.changes;
  pass_t_free(&c);
  return s;
}

static const char *const k_anchors[] = {"transpose", NULL};
const mil_pass_def pass_def_expand_high_rank_reshape_and_transpose = {
    "common::expand_high_rank_reshape_and_transpose",
    "rewrite reshape (rank >= 6) -> transpose -> reshape (rank <= 5) with tensors of rank <= 5", NULL, 0, run,
    k_anchors};
