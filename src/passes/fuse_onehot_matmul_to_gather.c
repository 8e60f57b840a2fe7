/* common::fuse_onehot_matmul_to_gather — a one-hot encoding multiplied by
 * a constant matrix is a row gather.
 *
 *   main(%i: (6,int32)(Tensor)) {
 *     block0() {
 *       %n: (int32)*(Scalar) = const(val=15, name="n")
 *       %ax: (int32)*(Scalar) = const(val=-1, name="ax")
 *       %on: (fp32)*(Scalar) = const(val=1.0, name="on")
 *       %off: (fp32)*(Scalar) = const(val=0.0, name="off")
 *       %h: (6, 15, fp32)(Tensor) = one_hot(indices=%i, one_hot_vector_size=%n, axis=%ax, on_value=%on, off_value=%off, name="h")
 *       %w: (15, 12, fp32)*(Tensor) = const(val=..., name="w")
 *       %f: (bool)*(Scalar) = const(val=False, name="f")
 *       %m: (6, 12, fp32)(Tensor) = matmul(x=%h, y=%w, transpose_x=%f, transpose_y=%f, name="m")
 *     } -> (%m)
 *   }
 *
 * becomes (before iOS17)
 *
 *   main(%i: (6,int32)(Tensor)) {
 *     block0() {
 *       ... the consts above ...
 *       %m_axis_0: (int32)*(Scalar) = const(val=0, name="m_axis_0")
 *       %m: (6, 12, fp32)(Tensor) = gather(x=%w, indices=%i, axis=%m_axis_0, name="m")
 *     } -> (%m)
 *   }
 *
 * From iOS17 on gather rejects negative indices, so the indices become
 * select(greater_equal(i, 0), i, add(i, shape(w)[0])) first (built with
 * greater_equal, shape, slice_by_index, add, select, in that order).
 *
 * Conditions: the one_hot's output is not a block output; its axis is -1
 * after subtracting the indices' rank from a non-negative axis; on_value
 * is a scalar within 1e-3 of 1 and off_value within 1e-3 of 0;
 * one_hot_vector_size is known; the output is read by exactly one op, a
 * matmul taking it as x, without transposes, whose y is a known rank-2
 * value. The gather is named after the matmul's output and goes before the
 * matmul. Nested blocks are processed as their op is reached; every block
 * repeats until nothing changes.
 *
 * Mirrors coremltools/converters/mil/mil/passes/defs/
 * optimize_tensor_operation.py (fuse_onehot_matmul_to_gather) and
 * frontend/_utils.py (pymil_value_at).
 */
#include "passes/fuse_util_internal.h"
#include "passes/tensor_pass_internal.h"

static bool is_true(const mil_op *op, const char *name) {
  const mil_value *v = pass_input_value(op, name);
  return v && v->numel == 1 && mil_value_get_f64(v, 0) != 0;
}

/* One op with inputs given as (name, var) pairs and (name, value) pairs;
 * its first output or NULL (err set). */
typedef struct in_spec {
  const char *name;
  mil_var *var;
  const mil_value *val;
} in_spec;

static mil_var *build(pass_t_ctx *c, mil_op *anchor, const char *type, const char *name, const in_spec *ins, int n,
                      int *err) {
  mil_op *op = pass_t_op(c, anchor, type, name);
  if (!op) return (*err = pass_t_oom(c)), NULL;
  for (int i = 0; i < n; i++) {
    if (ins[i].var) pass_t_var(op, ins[i].name, ins[i].var);
    else if (!pass_t_const(c, op, ins[i].name, ins[i].val)) return (*err = pass_t_oom(c)), NULL;
  }
  mil_status st = pass_t_finish(c, op);
  if (st != MIL_OK) return (*err = -(int)st), NULL;
  return op->outputs[0];
}

static int try_fuse(pass_t_ctx *c, mil_op *op) {
  if (op->n_blocks > 0 || !pass_t_is(op, "one_hot") || op->n_outputs != 1) return 0;
  mil_block *b = op->block;
  mil_var *root = mil_op_input_var(op, "indices");
  if (!root || pass_t_is_output_of(op->outputs[0], b)) return 0;
  const mil_value *av = pass_input_value(op, "axis");
  int32_t rank = pass_t_rank(root);
  if (!av || av->numel != 1 || rank < 0) return 0;
  int64_t axis = mil_value_get_i64(av, 0);
  if (axis >= 0) axis -= rank;
  if (axis != -1) return 0;
  if (!pass_var_is_scalar(mil_op_input_var(op, "on_value"), 1.0, 1e-3)) return 0;
  if (!pass_var_is_scalar(mil_op_input_var(op, "off_value"), 0.0, 1e-3)) return 0;
  if (!pass_input_value(op, "one_hot_vector_size")) return 0;
  mil_op *mm = pass_t_child(op, "matmul");
  if (!mm || mm->block != b || mm->n_outputs != 1 || mil_op_input_var(mm, "x") != op->outputs[0]) return 0;
  if (is_true(mm, "transpose_x") || is_true(mm, "transpose_y")) return 0;
  mil_var *w = mil_op_input_var(mm, "y");
  if (!w || !w->val || w->val->kind != MIL_VAL_TENSOR || !w->val->type || w->val->type->rank != 2) return 0;

  int err = 0;
  mil_program *p = c->p;
  if (pass_op_opset(mm) >= MIL_IOS17) {
    in_spec ge[2] = {{"x", root, NULL}, {"y", NULL, pass_t_i32(p, 0)}};
    mil_var *cond = build(c, mm, "greater_equal", NULL, ge, 2, &err);
    if (!cond) return err;
    in_spec sh[1] = {{"x", w, NULL}};
    mil_var *shape = build(c, mm, "shape", NULL, sh, 1, &err);
    if (!shape) return err;
    int64_t zero = 0;
    mil_value *mask = mil_value_new_tensor(p, MIL_DT_BOOL, 1, (int64_t[]){1}, false, NULL);
    if (!mask) return pass_t_oom(c);
    mil_value_set_i64(mask, 0, 1);
    in_spec sl[4] = {{"x", shape, NULL},
                     {"begin", NULL, pass_t_i32s(p, 1, &zero)},
                     {"end", NULL, pass_t_i32s(p, 1, &zero)},
                     {"squeeze_mask", NULL, mask}};
    mil_var *dim0 = build(c, mm, "slice_by_index", NULL, sl, 4, &err);
    if (!dim0) return err;
    in_spec ad[2] = {{"x", root, NULL}, {"y", dim0, NULL}};
    mil_var *wrapped = build(c, mm, "add", NULL, ad, 2, &err);
    if (!wrapped) return err;
    in_spec se[3] = {{"cond", cond, NULL}, {"a", root, NULL}, {"b", wrapped, NULL}};
    root = build(c, mm, "select", NULL, se, 3, &err);
    if (!root) return err;
  }
  in_spec ga[3] = {{"x", w, NULL}, {"indices", root, NULL}, {"axis", NULL, pass_t_i32(p, 0)}};
  mil_var *g = build(c, mm, "gather", mm->outputs[0]->name, ga, 3, &err);
  if (!g) return err;
  int r = pass_t_replace(c, mm, mm->outputs[0], g);
  if (r < 0) return r;
  mil_op *dead[2] = {op, mm};
  if ((r = pass_t_remove(c, dead, 2)) < 0) return r;
  return 1;
}

/* The op types try_fuse() can rewrite at (it returns 0 at any other). */
static const char *const k_types[] = {"one_hot", NULL};

static int walk_fn(void *ud, mil_op *op) { return try_fuse(ud, op); }

static mil_status run(mil_program *p, const mil_pass_options *o, mil_pass_stats *st, mil_diag *d) {
  (void)o;
  pass_t_ctx c = {.p = p, .d = d, .pass = "fuse_onehot_matmul_to_gather"};
  pass_walk_spec ws = {c.pass, k_types, true, PASS_WALK_NESTED_FIXPOINT, true, NULL};
  mil_status s = pass_walk_run(p, d, &ws, walk_fn, &c, &c.changes);
  if (st) st->changes += c.changes;
  pass_t_free(&c);
  return s;
}

static const char *const k_anchors[] = {"one_hot", NULL};
const mil_pass_def pass_def_fuse_onehot_matmul_to_gather = {
    "common::fuse_onehot_matmul_to_gather", "replace one_hot followed by matmul with a constant by gather", NULL, 0,
    run, k_anchors};
