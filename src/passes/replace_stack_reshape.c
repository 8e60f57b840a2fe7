/* common::replace_stack_reshape — a stack whose new axis a reshape folds
 * into a neighbouring axis (doubling it) is a concat.
 *
 *   main(%a: (1, 5, 3, 4, fp32)(Tensor), %b: (1, 5, 3, 4, fp32)(Tensor)) {
 *     block0() {
 *       %ax: (int32)*(Scalar) = const(val=1, name="ax")
 *       %s: (1, 2, 5, 3, 4, fp32)(Tensor) = stack(values=(%a, %b), axis=%ax, name="s")
 *       %sh: (4,int32)*(Tensor) = const(val=[1, 10, 3, 4], name="sh")
 *       %r: (1, 10, 3, 4, fp32)(Tensor) = reshape(x=%s, shape=%sh, name="r")
 *     } -> (%r)
 *   }
 *
 * becomes
 *
 *   main(...) {
 *     block0() {
 *       %ax: (int32)*(Scalar) = const(val=1, name="ax")
 *       %concat_0_axis_0: (int32)*(Scalar) = const(val=1, name="concat_0_axis_0")
 *       %concat_0_interleave_0: (bool)*(Scalar) = const(val=False, name="concat_0_interleave_0")
 *       %r: (1, 10, 3, 4, fp32)(Tensor) = concat(values=(%a, %b), axis=%concat_0_axis_0, interleave=%concat_0_interleave_0, name="concat_0")
 *       %sh: (4,int32)*(Tensor) = const(val=[1, 10, 3, 4], name="sh")
 *     } -> (%r)
 *   }
 *
 * Conditions: the stack's output is read by exactly one op (block outputs
 * aside), a reshape whose output rank is one less than the stack's; the
 * stack's first input and the reshape's output differ in exactly one
 * axis, which doubles, and that axis is the stack axis (plain concat) or
 * the one before it (interleaved concat). The concat (fresh name) goes
 * before the stack. Function bodies only, one sweep.
 *
 * Mirrors coremltools/converters/mil/mil/passes/defs/
 * optimize_tensor_operation.py (replace_stack_reshape).
 */
#include "passes/fuse_util_internal.h"
#include "passes/tensor_pass_internal.h"

static int try_replace(pass_t_ctx *c, mil_op *st) {
  if (!pass_t_is(st, "stack") || st->n_outputs != 1) return 0;
  mil_op *rs = pass_t_child(st, "reshape");
  if (!rs || rs->block != st->block || rs->n_outputs != 1) return 0;
  const mil_value *av = pass_input_value(st, "axis");
  if (!av || av->numel != 1) return 0;
  int64_t axis = mil_value_get_i64(av, 0);
  const mil_input *vals = mil_op_find_input(st, "values");
  if (!vals || vals->n_args < 1 || !vals->args[0].use.var) return 0;
  mil_var *in0 = vals->args[0].use.var, *out = rs->outputs[0];
  int32_t srank = pass_t_rank(st->outputs[0]), rrank = pass_t_rank(out), irank = pass_t_rank(in0);
  if (srank < 0 || rrank < 0 || irank < 0 || srank != rrank + 1) return 0;
  int32_t n = irank < rrank ? irank : rrank, cat = -1, ndiff = 0;
  for (int32_t i = 0; i < n; i++)
    if (!pass_t_dim_eq(&in0->type->dims[i], &out->type->dims[i])) {
      ndiff++;
      cat = i;
    }
  if (ndiff != 1) return 0;
  const mil_dim *di = &in0->type->dims[cat], *dr = &out->type->dims[cat];
  if (di->size < 0 || dr->size < 0 || di->size * 2 != dr->size) return 0;
  if (cat != axis && cat != axis - 1) return 0;
  /* the output block check coremltools' remove_ops would make */
  if (pass_t_is_output_of(st->outputs[0], st->block)) return 0;
  bool interleave = cat == axis - 1;

  mil_op *cc = pass_t_op(c, st, "concat", NULL);
  if (!cc) return pass_t_oom(c);
  mil_var **vs = mil_program_alloc(c->p, (size_t)vals->n_args * sizeof *vs);
  if (!vs) return pass_t_oom(c);
  for (int32_t i = 0; i < vals->n_args; i++) vs[i] = vals->args[i].use.var;
  pass_t_tuple(cc, "values", vals->n_args, vs);
  if (!pass_t_const(c, cc, "axis", pass_t_i32(c->p, cat)) ||
      !pass_t_const(c, cc, "interleave", pass_t_bool(c->p, interleave)))
    return pass_t_oom(c);
  mil_status s = pass_t_finish(c, cc);
  if (s != MIL_OK) return -(int)s;
  int r = pass_t_replace(c, st, out, cc->outputs[0]);
  if (r < 0) return r;
  mil_op *dead[2] = {st, rs};
  if ((r = pass_t_remove(c, dead, 2)) < 0) return r;
  return 1;
}

/* The op types try_replace() can rewrite at (it returns 0 at any other). */
static const char *const k_types[] = {"stack", NULL};
/* The op types no rewrite can do without. */
static const char *const k_required[] = {"reshape", NULL};

static int walk_fn(void *ud, mil_op *op) { return try_replace(ud, op); }

static mil_status run(mil_program *p, const mil_pass_options *o, mil_pass_stats *st, mil_diag *d) {
  (void)o;
  pass_t_ctx c = {.p = p, .d = d, .pass = "replace_stack_reshape"};
  pass_walk_spec ws = {c.pass, k_types, false, PASS_WALK_NESTED_SKIP, true, k_required};
  mil_status s = pass_walk_run(p, d, &ws, walk_fn, &c, &c.changes);
  if (st) st->changes += c.changes;
  pass_t_free(&c);
  return s;
}

static const char *const k_anchors[] = {"stack", NULL};
const mil_pass_def pass_def_replace_stack_reshape = {
    "common::replace_stack_reshape", "replace a stack followed by a reshape that removes the new axis with a concat",
    NULL, 0, run, k_anchors};
