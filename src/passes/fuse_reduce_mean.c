/* common::fuse_reduce_mean — turn reduce_sum followed by a division by the
 * number of reduced elements into reduce_mean.
 *
 *   main(%x: (3, 5, 6, fp32)(Tensor)) {
 *     block0() {
 *       %axes: (2,int32)*(Tensor) = const(val=[-1, -2], name="axes")
 *       %kd: (bool)*(Scalar) = const(val=True, name="kd")
 *       %s: (3, 1, 1, fp32)(Tensor) = reduce_sum(x=%x, axes=%axes, keep_dims=%kd, name="s")
 *       %n: (fp32)*(Scalar) = const(val=30.0, name="n")
 *       %m: (3, 1, 1, fp32)(Tensor) = real_div(x=%s, y=%n, name="m")
 *     } -> (%m)
 *   }
 *
 * becomes
 *
 *   main(%x: (3, 5, 6, fp32)(Tensor)) {
 *     block0() {
 *       %axes: (2,int32)*(Tensor) = const(val=[-1, -2], name="axes")
 *       %kd: (bool)*(Scalar) = const(val=True, name="kd")
 *       %n: (fp32)*(Scalar) = const(val=30.0, name="n")
 *       %m_axes_0: (2,int32)*(Tensor) = const(val=[-1, -2], name="m_axes_0")
 *       %m_keep_dims_0: (bool)*(Scalar) = const(val=True, name="m_keep_dims_0")
 *       %m: (3, 1, 1, fp32)(Tensor) = reduce_mean(x=%x, axes=%m_axes_0, keep_dims=%m_keep_dims_0, name="m")
 *     } -> (%m)
 *   }
 *
 * Conditions: reduce_sum has constant axes over dims of known size (count =
 * their product), its output is not an output of its block and is read by
 * exactly one op, which is either mul by a scalar within 1e-6 of 1/count
 * (either operand) or real_div of it by a scalar within 1e-2 of count. The
 * reduce_mean takes the name of the mul / real_div output and is inserted
 * before it. Blocks are swept until nothing changes.
 *
 * Mirrors coremltools/converters/mil/mil/passes/defs/cleanup/
 * fuse_reduce_mean.py.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "passes/fuse_util_internal.h"

typedef struct frm {
  mil_program *p;
  pass_names *names;
  int64_t changes;
  mil_diag *d;
} frm;

static bool is_output_of(const mil_var *v, const mil_block *b) {
  for (const mil_use *u = v->uses; u; u = u->next_use)
    if (!u->op && u->block == b) return true;
  return false;
}

/* coremltools' _check_var_scalar_value. */
static bool scalar_near(const mil_var *v, double x, double tol) {
  double y;
  return v && pass_var_scalar(v, &y) && fabs(y - x) < tol;
}

/* Returns 1 when fused, 0 when the pattern does not match, -(status). */
static int try_fuse(frm *c, mil_op *rs) {
  mil_block *b = rs->block;
  mil_var *x = mil_op_input_var(rs, "x");
  const mil_value *axes = pass_input_value(rs, "axes");
  if (!x || !x->type || x->type->kind != MIL_TYPE_TENSOR || x->type->rank < 0 || rs->n_outputs != 1) return 0;
  if (!axes || axes->kind != MIL_VAL_TENSOR) return 0;
  int32_t rank = x->type->rank;
  double count = 1;
  for (int64_t i = 0; i < axes->numel; i++) {
    int64_t a = mil_value_get_i64(axes, i);
    if (a < 0) a += rank;
    if (a < 0 || a >= rank || x->type->dims[a].size < 0) return 0;
    count *= (double)x->type->dims[a].size;
  }
  mil_var *out = rs->outputs[0];
  if (is_output_of(out, b) || mil_var_is_block_output(out)) return 0;
  mil_op *child = pass_only_child_op(out);
  if (!child || child->n_outputs < 1) return 0;
  if (strcmp(child->type, "mul") == 0) {
    mil_var *cx = mil_op_input_var(child, "x"), *cy = mil_op_input_var(child, "y");
    mil_var *other = cy == out ? cx : cy;
    if (!scalar_near(other, 1.0 / count, 1e-6)) return 0;
  } else if (strcmp(child->type, "real_div") == 0) {
    if (mil_op_input_var(child, "x") != out) return 0;
    if (!scalar_near(mil_op_input_var(child, "y"), count, 1e-2)) return 0;
  } else {
    return 0;
  }
  /* build reduce_mean(x, axes, keep_dims) named like the child's output */
  if (!c->names && !(c->names = pass_names_new(c->p))) goto oom;
  const char *name = child->outputs[0]->name;
  const mil_value *kd = pass_input_value(rs, "keep_dims");
  if (!kd && !(kd = mil_value_new_bool(c->p, false))) goto oom;
  mil_op *rm = mil_op_new(c->p, "reduce_mean", name);
  if (!rm) goto oom;
  mil_block_insert_before(child, rm);
  mil_var *av = pass_const_before(rm, c->names, name, "axes", axes);
  mil_var *kv = av ? pass_const_before(rm, c->names, name, "keep_dims", kd) : NULL;
  if (!kv) goto oom;
  mil_op_add_input(rm, "x", x);
  mil_op_add_input(rm, "axes", av);
  mil_op_add_input(rm, "keep_dims", kv);
  mil_status st = pass_finish_op(rm, c->d);
  if (st != MIL_OK) return -(int)st;
  if (!pass_replace_uses_after(child, child->outputs[0], rm->outputs[0])) {
    mil_diag_error(c->d, MIL_ERR_INVALID, "fuse_reduce_mean: cannot replace the output of '%s'", child->name);
    return -(int)MIL_ERR_INVALID;
  }
  mil_op *dead[2] = {rs, child};
  st = pass_remove_ops(dead, 2, c->d);
  if (st != MIL_OK) return -(int)st;
  c->changes++;
  return 1;
oom:
  mil_diag_error(c->d, MIL_ERR_NOMEM, "fuse_reduce_mean: out of memory");
  return -(int)MIL_ERR_NOMEM;
}

/* The op type try_fuse() starts from. */
static const char *const k_types[] = {"reduce_sum", NULL};

static int walk_fn(void *ud, mil_op *op) { return try_fuse(ud, op); }

static mil_status run(mil_program *p, const mil_pass_options *o, mil_pass_stats *stats, mil_diag *d) {
  (void)o;
  mil_status st = pass_infer_marked_values(p, d);
  frm c = {p, NULL, 0, d};
  /* blocks swept until nothing changes, nested ones as their op is reached
   * (ops owning blocks are not fused); try_fuse counts its fusions */
  pass_walk_spec ws = {"fuse_reduce_mean", k_types, true, PASS_WALK_NESTED_FIXPOINT, false, NULL};
  int64_t unused = 0;
  if (st == MIL_OK) st = pass_walk_run(p, d, &ws, walk_fn, &c, &unused);
  pass_names_free(c.names);
  if (stats) stats->changes += c.changes;
  return st;
}

static const char *const k_anchors[] = {"reduce_sum", NULL};
const mil_pass_def pass_def_fuse_reduce_mean = {
    "common::fuse_reduce_mean", "turn reduce_sum followed by division by the count into reduce_mean", NULL, 0,
    run, k_anchors};
