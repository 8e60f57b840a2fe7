/* common::expand_dynamic_linear — turn a linear whose weight or bias is not
 * a const (or constexpr) into matmul / add.
 *
 *   main(%x: (2, 5, fp32)(Tensor), %w: (3, 5, fp32)(Tensor)) {
 *     block0() {
 *       %b: (3,fp32)*(Tensor) = const(val=[1.0, 2.0, 3.0], name="b")
 *       %y: (2, 3, fp32)(Tensor) = linear(x=%x, weight=%w, bias=%b, name="y")
 *     } -> (%y)
 *   }
 *
 * becomes
 *
 *   main(%x: (2, 5, fp32)(Tensor), %w: (3, 5, fp32)(Tensor)) {
 *     block0() {
 *       %b: (3,fp32)*(Tensor) = const(val=[1.0, 2.0, 3.0], name="b")
 *       %matmul_0_transpose_y_0: (bool)*(Scalar) = const(val=True, name="matmul_0_transpose_y_0")
 *       %matmul_0_transpose_x_0: (bool)*(Scalar) = const(val=False, name="matmul_0_transpose_x_0")
 *       %matmul_0: (2, 3, fp32)(Tensor) = matmul(x=%x, y=%w, transpose_x=%matmul_0_transpose_x_0, transpose_y=%matmul_0_transpose_y_0, name="matmul_0")
 *       %y: (2, 3, fp32)(Tensor) = add(x=%matmul_0, y=%b, name="y")
 *     } -> (%y)
 *   }
 *
 * An operand is static when it is absent or produced by const or
 * constexpr_*. Static weight and bias: unchanged. Static weight, dynamic
 * bias: linear(x, weight) (its default zero bias) + add(bias), the add named
 * like the linear. Dynamic weight: matmul(x, weight, transpose_y=True), then
 * add(bias) named like the linear unless the bias is static and all zero
 * (a const of zeros, or a constexpr_affine_dequantize whose data equals its
 * zero point; other compressed biases count as non-zero) or absent.
 *
 * Mirrors coremltools/converters/mil/mil/passes/defs/cleanup/
 * expand_dynamic_linear.py.
 */
#include <string.h>

#include "passes/fuse_util_internal.h"

typedef struct edl {
  mil_program *p;
  pass_names *names;
  int64_t changes;
  mil_diag *d;
} edl;

static bool is_static(const mil_var *v) {
  if (!v) return true;
  if (!v->op) return false;
  return mil_op_is_const(v->op) || strncmp(v->op->type, "constexpr_", 10) == 0;
}

/* constexpr_affine_dequantize's is_all_zeros: quantized_data == zero_point
 * everywhere (zero_point a scalar, per-channel along axis, or full). */
static bool affine_all_zero(const mil_op *op) {
  const mil_value *q = pass_input_value(op, "quantized_data");
  const mil_value *zp = pass_input_value(op, "zero_point");
  const mil_value *ax = pass_input_value(op, "axis");
  if (!q || !zp || q->kind != MIL_VAL_TENSOR || zp->kind != MIL_VAL_TENSOR || !q->type) return false;
  int32_t rank = q->type->rank;
  if (zp->numel == 1) {
    double z = mil_value_get_f64(zp, 0);
    for (int64_t i = 0; i < q->numel; i++)
      if (mil_value_get_f64(q, i) != z) return false;
    return true;
  }
  if (zp->numel == q->numel) {
    for (int64_t i = 0; i < q->numel; i++)
      if (mil_value_get_f64(q, i) != mil_value_get_f64(zp, i)) return false;
    return true;
  }
  if (!ax || ax->kind != MIL_VAL_TENSOR || ax->numel != 1 || rank <= 0) return false;
  int64_t axis = mil_value_get_i64(ax, 0);
  if (axis < 0) axis += rank;
  if (axis < 0 || axis >= rank || q->type->dims[axis].size != zp->numel) return false;
  int64_t inner = 1;
  for (int32_t i = (int32_t)axis + 1; i < rank; i++) inner *= q->type->dims[i].size;
  int64_t ch = zp->numel;
  for (int64_t i = 0; i < q->numel; i++)
    if (mil_value_get_f64(q, i) != mil_value_get_f64(zp, (i / inner) % ch)) return false;
  return true;
}

static mil_status oom(edl *c) { return mil_diag_error(c->d, MIL_ERR_NOMEM, "expand_dynamic_linear: out of memory"); }

/* A new op of `type` before anchor named `name` (NULL: a fresh
 * "<type>_<k>"), inputs bound by the caller through *out before finishing. */
static mil_op *new_op(edl *c, mil_op *anchor, const char *type, const char *name) {
  if (!name) name = pass_names_fresh(c->names, c->p, type);
  if (!name) return NULL;
  mil_op *op = mil_op_new(c->p, type, name);
  if (!op) return NULL;
  mil_block_insert_before(anchor, op);
  pass_names_add(c->names, name);
  return op;
}

static mil_status finish(edl *c, mil_op *op) {
  mil_status st = pass_finish_op(op, c->d);
  if (st == MIL_OK && op->n_outputs == 1) pass_names_add(c->names, op->outputs[0]->name);
  return st;
}

/* add(x=a, y=bias) named like the linear. */
static mil_status make_add(edl *c, mil_op *lin, mil_var *a, mil_var *bias, mil_var **out) {
  mil_op *add = new_op(c, lin, "add", lin->name);
  if (!add) return oom(c);
  mil_op_add_input(add, "x", a);
  mil_op_add_input(add, "y", bias);
  mil_status st = finish(c, add);
  if (st == MIL_OK) *out = add->outputs[0];
  return st;
}

static mil_status replace_linear(edl *c, mil_op *lin, mil_var *result) {
  if (!pass_replace_uses_after(lin, lin->outputs[0], result) || mil_op_remove(lin) != MIL_OK)
    return mil_diag_error(c->d, MIL_ERR_INVALID, "expand_dynamic_linear: cannot replace linear '%s'", lin->name);
  c->changes++;
  return MIL_OK;
}

static mil_status expand(edl *c, mil_op *lin) {
  if (lin->n_outputs != 1) return MIL_OK;
  /* a linear with a const weight and bias (most of them) is left alone
   * without looking at x */
  mil_var *w = mil_op_input_var(lin, "weight"), *bias = mil_op_input_var(lin, "bias");
  if (!w) return MIL_OK;
  bool w_static = is_static(w), b_static = is_static(bias);
  if (w_static && b_static) return MIL_OK;
  mil_var *x = mil_op_input_var(lin, "x");
  if (!x) return MIL_OK;
  if (!c->names && !(c->names = pass_names_new(c->p))) return oom(c);
  mil_status st;
  mil_var *result;
  if (w_static) {
    mil_op *mm = new_op(c, lin, "linear", NULL);
    if (!mm) return oom(c);
    mil_op_add_input(mm, "x", x);
    mil_op_add_input(mm, "weight", w);
    if ((st = finish(c, mm)) != MIL_OK) return st;
    if ((st = make_add(c, lin, mm->outputs[0], bias, &result)) != MIL_OK) return st;
    return replace_linear(c, lin, result);
  }
  mil_op *mm = new_op(c, lin, "matmul", NULL);
  if (!mm) return oom(c);
  mil_value *t = mil_value_new_bool(c->p, true);
  mil_var *ty = t ? pass_const_before(mm, c->names, mm->name, "transpose_y", t) : NULL;
  if (!ty) return oom(c);
  mil_op_add_input(mm, "x", x);
  mil_op_add_input(mm, "y", w);
  mil_op_add_input(mm, "transpose_y", ty);
  if ((st = finish(c, mm)) != MIL_OK) return st;
  result = mm->outputs[0];
  bool nonzero = true;
  if (!bias) nonzero = false;
  else if (b_static && mil_op_is_const(bias->op)) nonzero = !pass_value_all_equal(bias->val, 0);
  else if (b_static && strcmp(bias->op->type, "constexpr_affine_dequantize") == 0)
    nonzero = !affine_all_zero(bias->op);
  if (nonzero && (st = make_add(c, lin, result, bias, &result)) != MIL_OK) return st;
  return replace_linear(c, lin, result);
}

/* The walk's callback: new ops go before the visited linear, which is
 * removed, so the sweep meets exactly the linears present at its start. */
static int walk_fn(void *ud, mil_op *op) {
  mil_status st = expand(ud, op);
  return st == MIL_OK ? 0 : -(int)st;
}

static const char *const k_types[] = {"linear", NULL};

static mil_status run(mil_program *p, const mil_pass_options *o, mil_pass_stats *stats, mil_diag *d) {
  (void)o;
  edl c = {p, NULL, 0, d};
  /* one sweep of every block, nested blocks as their op is reached */
  pass_walk_spec ws = {"expand_dynamic_linear", k_types, false, PASS_WALK_NESTED_ONCE, true, NULL};
  mil_status st = pass_walk_run(p, d, &ws, walk_fn, &c, NULL);
  pass_names_free(c.names);
  if (stats) stats->changes += c.changes;
  return st;
}

static const char *const k_anchors[] = {"linear", NULL};
const mil_pass_def pass_def_expand_dynamic_linear = {
    "common::expand_dynamic_linear", "split a linear with a non-const weight or bias into matmul + add", NULL, 0,
    run, k_anchors};
