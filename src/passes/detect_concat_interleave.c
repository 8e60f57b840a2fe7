/* common::detect_concat_interleave — concat along channels, reshape to
 * (B, n, C, H, W), transpose [0, 2, 1, 3, 4], reshape back to rank 4 is an
 * interleaved concat (the channel shuffle of ShuffleNet).
 *
 *   main(%a: (1, 2, 3, 4, fp32)(Tensor), %b: (1, 2, 3, 4, fp32)(Tensor)) {
 *     block0() {
 *       %ax: (int32)*(Scalar) = const(val=1, name="ax")
 *       %f: (bool)*(Scalar) = const(val=False, name="f")
 *       %c: (1, 4, 3, 4, fp32)(Tensor) = concat(values=(%a, %b), axis=%ax, interleave=%f, name="c")
 *       %s1: (5,int32)*(Tensor) = const(val=[1, 2, 2, 3, 4], name="s1")
 *       %r1: (1, 2, 2, 3, 4, fp32)(Tensor) = reshape(x=%c, shape=%s1, name="r1")
 *       %p: (5,int32)*(Tensor) = const(val=[0, 2, 1, 3, 4], name="p")
 *       %t: (1, 2, 2, 3, 4, fp32)(Tensor) = transpose(x=%r1, perm=%p, name="t")
 *       %s2: (4,int32)*(Tensor) = const(val=[1, 4, 3, 4], name="s2")
 *       %r2: (1, 4, 3, 4, fp32)(Tensor) = reshape(x=%t, shape=%s2, name="r2")
 *     } -> (%r2)
 *   }
 *
 * becomes
 *
 *   main(...) {
 *     block0() {
 *       %ax: (int32)*(Scalar) = const(val=1, name="ax")
 *       %f: (bool)*(Scalar) = const(val=False, name="f")
 *       %r2_axis_0: (int32)*(Scalar) = const(val=1, name="r2_axis_0")
 *       %r2_interleave_0: (bool)*(Scalar) = const(val=True, name="r2_interleave_0")
 *       %r2: (1, 4, 3, 4, fp32)(Tensor) = concat(values=(%a, %b), axis=%r2_axis_0, interleave=%r2_interleave_0, name="r2")
 *       %s1: (5,int32)*(Tensor) = const(val=[1, 2, 2, 3, 4], name="s1")
 *       %p: (5,int32)*(Tensor) = const(val=[0, 2, 1, 3, 4], name="p")
 *       %s2: (4,int32)*(Tensor) = const(val=[1, 4, 3, 4], name="s2")
 *     } -> (%r2)
 *   }
 *
 * Conditions: the concat's output is not a block output; interleave is
 * false; its inputs have rank 4, fully known equal shapes (B, C, H, W) and
 * the axis is -3 (or 1); its output is read by exactly one op, a reshape
 * with known shape [B, n, C, H, W] (n inputs), read by exactly one op, a
 * transpose with perm [0, 2, 1, 3, 4], read by exactly one op, a reshape
 * with a known rank-4 shape [B, ., H, W]; neither intermediate is an
 * output of the block. The new concat is named after the last reshape's
 * output and goes before the old concat. Nested blocks are processed as
 * their op is reached; every block repeats until nothing changes.
 *
 * Mirrors coremltools/converters/mil/mil/passes/defs/
 * optimize_tensor_operation.py (detect_concat_interleave).
 */
#include "passes/fuse_util_internal.h"
#include "passes/tensor_pass_internal.h"

static bool shape_is(const mil_op *op, const int64_t *want, int64_t n) {
  int64_t v[8], k;
  if (!pass_t_ints(op, "shape", v, 8, &k) || k != n) return false;
  for (int64_t i = 0; i < n; i++)
    if (v[i] != want[i]) return false;
  return true;
}

static mil_op *only_child(const mil_op *op, const char *type) { return pass_t_child(op, type); }

static int try_fuse(pass_t_ctx *c, mil_op *op) {
  if (op->n_blocks > 0 || op->n_outputs < 1 || pass_t_is_output_of(op->outputs[0], op->block)) return 0;
  if (!pass_t_is(op, "concat") || op->n_outputs != 1) return 0;
  const mil_value *iv = pass_input_value(op, "interleave");
  if (iv && iv->numel == 1 && mil_value_get_i64(iv, 0)) return 0;
  const mil_input *vals = mil_op_find_input(op, "values");
  if (!vals || vals->n_args < 1) return 0;
  for (int32_t i = 0; i < vals->n_args; i++)
    if (!vals->args[i].use.var || pass_t_rank(vals->args[i].use.var) != 4 || !pass_t_static(vals->args[i].use.var))
      return 0;
  int64_t axis;
  const mil_value *av = pass_input_value(op, "axis");
  if (!av || av->numel != 1) return 0;
  axis = mil_value_get_i64(av, 0);
  if (axis > 0) axis -= 4;
  if (axis != -3) return 0;
  const mil_var *v0 = vals->args[0].use.var;
  for (int32_t i = 1; i < vals->n_args; i++)
    if (!pass_t_shape_eq(v0, vals->args[i].use.var)) return 0;
  mil_op *r1 = only_child(op, "reshape");
  if (!r1 || r1->block != op->block) return 0;
  int64_t B = v0->type->dims[0].size, C = v0->type->dims[1].size, H = v0->type->dims[2].size,
          W = v0->type->dims[3].size, n = vals->n_args;
  int64_t want1[5] = {B, n, C, H, W};
  if (!shape_is(r1, want1, 5)) return 0;
  mil_op *tr = only_child(r1, "transpose");
  if (!tr || tr->block != op->block) return 0;
  int64_t perm[8], np;
  if (!pass_t_ints(tr, "perm", perm, 8, &np) || np != 5) return 0;
  static const int64_t want_perm[5] = {0, 2, 1, 3, 4};
  for (int i = 0; i < 5; i++)
    if (perm[i] != want_perm[i]) return 0;
  mil_op *r2 = only_child(tr, "reshape");
  if (!r2 || r2->block != op->block || r2->n_outputs != 1) return 0;
  int64_t s2[8], ns2;
  if (!pass_t_ints(r2, "shape", s2, 8, &ns2) || ns2 != 4) return 0;
  if (s2[0] != B || s2[2] != H || s2[3] != W) return 0;
  if (pass_t_is_output_of(r1->outputs[0], op->block) || pass_t_is_output_of(tr->outputs[0], op->block)) return 0;

  mil_var *vs[256];
  if (vals->n_args > 256) return 0;
  mil_op *cc = pass_t_op(c, op, "concat", r2->outputs[0]->name);
  if (!cc) return pass_t_oom(c);
  for (int32_t i = 0; i < vals->n_args; i++) vs[i] = vals->args[i].use.var;
  pass_t_tuple(cc, "values", vals->n_args, vs);
  if (!pass_t_const(c, cc, "axis", pass_t_i32(c->p, mil_value_get_i64(av, 0))) ||
      !pass_t_const(c, cc, "interleave", pass_t_bool(c->p, true)))
    return pass_t_oom(c);
  mil_status st = pass_t_finish(c, cc);
  if (st != MIL_OK) return -(int)st;
  int r = pass_t_replace(c, r2, r2->outputs[0], cc->outputs[0]);
  if (r < 0) return r;
  mil_op *dead[4] = {op, r1, tr, r2};
  if ((r = pass_t_remove(c, dead, 4)) < 0) return r;
  return 1;
}

/* The op types try_fuse() can rewrite at (it returns 0 at any other). */
static const char *const k_types[] = {"concat", NULL};

static int walk_fn(void *ud, mil_op *op) { return try_fuse(ud, op); }

static mil_status run(mil_program *p, const mil_pass_options *o, mil_pass_stats *st, mil_diag *d) {
  (void)o;
  pass_t_ctx c = {.p = p, .d = d, .pass = "detect_concat_interleave"};
  pass_walk_spec ws = {c.pass, k_types, true, PASS_WALK_NESTED_FIXPOINT, true, NULL};
  mil_status s = pass_walk_run(p, d, &ws, walk_fn, &c, &c.changes);
  if (st) st->changes += c.changes;
  pass_t_free(&c);
  return s;
}

static const char *const k_anchors[] = {"concat", NULL};
const mil_pass_def pass_def_detect_concat_interleave = {
    "common::detect_concat_interleave", "turn concat -> reshape -> transpose -> reshape channel shuffles into an interleaved concat",
    NULL, 0, run, k_anchors};
