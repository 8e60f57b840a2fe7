/* common::guard_negative_gather_indices — from iOS17 on gather and
 * gather_nd no longer accept negative indices, so signed indices are
 * wrapped into range first: where an index is negative, the size of the
 * gathered axis is added to it.
 *
 *   main[CoreML7](%x: (2, 3, fp16)(Tensor), %i: (1,int32)(Tensor)) {
 *     block0() {
 *       %ax: (int32)*(Scalar) = const(val=0, name="ax")
 *       %bd: (int32)*(Scalar) = const(val=0, name="bd")
 *       %vi: (bool)*(Scalar) = const(val=False, name="vi")
 *       %g: (1, 3, fp16)(Tensor) = gather(x=%x, indices=%i, axis=%ax, batch_dims=%bd, validate_indices=%vi, name="g")
 *     } -> (%g)
 *   }
 *
 * becomes
 *
 *   main[CoreML7](%x: (2, 3, fp16)(Tensor), %i: (1,int32)(Tensor)) {
 *     block0() {
 *       %ax: (int32)*(Scalar) = const(val=0, name="ax")
 *       %bd: (int32)*(Scalar) = const(val=0, name="bd")
 *       %vi: (bool)*(Scalar) = const(val=False, name="vi")
 *       %greater_equal_0_y_0: (int32)*(Scalar) = const(val=0, name="greater_equal_0_y_0")
 *       %greater_equal_0: (1,bool)(Tensor) = greater_equal(x=%i, y=%greater_equal_0_y_0, name="greater_equal_0")
 *       %shape_0: (2,int32)*(Tensor) = shape(x=%x, name="shape_0")
 *       %slice_by_index_0_begin_0: (1,int32)*(Tensor) = const(val=[0], name="slice_by_index_0_begin_0")
 *       %slice_by_index_0_end_0: (1,int32)*(Tensor) = const(val=[0], name="slice_by_index_0_end_0")
 *       %slice_by_index_0_squeeze_mask_0: (1,bool)*(Tensor) = const(val=[True], name="slice_by_index_0_squeeze_mask_0")
 *       %slice_by_index_0: (int32)*(Scalar) = slice_by_index(x=%shape_0, begin=%slice_by_index_0_begin_0, end=%slice_by_index_0_end_0, squeeze_mask=%slice_by_index_0_squeeze_mask_0, name="slice_by_index_0")
 *       %add_0: (1,int32)(Tensor) = add(x=%i, y=%slice_by_index_0, name="add_0")
 *       %select_0: (1,int32)(Tensor) = select(cond=%greater_equal_0, a=%i, b=%add_0, name="select_0")
 *       %g_axis_0: (int32)*(Scalar) = const(val=0, name="g_axis_0")
 *       %g: (1, 3, fp16)(Tensor) = gather(x=%x, indices=%select_0, axis=%g_axis_0, batch_dims=%bd, validate_indices=%vi, name="g")
 *     } -> (%g)
 *   }
 *
 * Indices of a dtype other than int32 are cast to int32 first, and an x
 * of a dtype shape does not take (anything but fp16/fp32/int32/bool) is
 * cast to bool for the shape. For gather_nd the added amount is
 * x.shape[:indices.shape[-1]] (shape -> slice_by_index -> expand_dims ->
 * slice_by_size). Unsigned indices and opsets before iOS17 are left alone.
 *
 * Mirrors coremltools/converters/mil/mil/passes/defs/optimize_tensor_operation.py
 * (guard_negative_gather_indices) and frontend/_utils.py (pymil_value_at).
 */
#include <string.h>

#include "passes/fuse_util_internal.h"
#include "passes/pass_internal.h"

#define PASS "guard_negative_gather_indices"

/* slice_by_index(x, begin=[idx], end=[0], squeeze_mask=[True]): x[idx]. */
static mil_var *value_at(pass_bld *c, mil_op *anchor, mil_var *x, int64_t idx, mil_status *st) {
  mil_program *p = c->p;
  int64_t zero = 0;
  int64_t one_shape[1] = {1};
  uint8_t t = 1;
  mil_value *mask = mil_value_new_tensor(p, MIL_DT_BOOL, 1, one_shape, false, &t);
  mil_value *begin = pass_bld_i32s(p, 1, &idx), *end = pass_bld_i32s(p, 1, &zero);
  if (!mask || !begin || !end) {
    *st = mil_diag_error(c->d, MIL_ERR_NOMEM, PASS ": out of memory");
    return NULL;
  }
  pass_barg a[] = {PASS_BV("x", x), PASS_BK("begin", begin), PASS_BK("end", end), PASS_BK("squeeze_mask", mask)};
  return pass_bld_var(c, NULL, anchor, "slice_by_index", NULL, 4, a, st);
}

static mil_var *cast_to(pass_bld *c, mil_op *anchor, mil_var *x, const char *dtype, mil_status *st) {
  mil_value *dt = pass_bld_str(c->p, dtype);
  if (!dt) {
    *st = mil_diag_error(c->d, MIL_ERR_NOMEM, PASS ": out of memory");
    return NULL;
  }
  pass_barg a[] = {PASS_BV("x", x), PASS_BK("dtype", dt)};
  return pass_bld_var(c, NULL, anchor, "cast", NULL, 2, a, st);
}

static int transform(pass_bld *c, mil_op *op) {
  bool is_gather = strcmp(op->type, "gather") == 0;
  if ((!is_gather && strcmp(op->type, "gather_nd") != 0) || op->n_outputs != 1) return 0;
  if (pass_op_opset(op) < MIL_IOS17) return 0;
  mil_var *indices = mil_op_input_var(op, "indices"), *x = mil_op_input_var(op, "x");
  if (!indices || !x || !indices->type || indices->type->kind != MIL_TYPE_TENSOR) return 0;
  mil_dtype idt = indices->type->dtype;
  if (mil_dtype_is_unsigned(idt)) return 0;
  int64_t axis = 0;
  if (is_gather) {
    const mil_value *av = pass_input_value(op, "axis");
    if (!av || av->numel != 1) return 0;
    axis = mil_value_get_i64(av, 0);
  } else if (indices->type->rank < 1) {
    return 0;
  }
  mil_program *p = c->p;
  mil_status st = MIL_OK;
  mil_var *idx32 = indices;
  if (idt != MIL_DT_INT32 && !(idx32 = cast_to(c, op, indices, "int32", &st))) return -(int)st;
  mil_dtype xdt = pass_bld_dtype(x);
  mil_var *xs = x;
  if (xdt != MIL_DT_FP16 && xdt != MIL_DT_FP32 && xdt != MIL_DT_INT32 && xdt != MIL_DT_BOOL &&
      !(xs = cast_to(c, op, x, "bool", &st)))
    return -(int)st;
  mil_value *zero = pass_bld_i32(p, 0);
  if (!zero) return -(int)MIL_ERR_NOMEM;
  pass_barg ga[] = {PASS_BV("x", idx32), PASS_BK("y", zero)};
  mil_var *cond = pass_bld_var(c, NULL, op, "greater_equal", NULL, 2, ga, &st);
  if (!cond) return -(int)st;
  pass_barg sa[] = {PASS_BV("x", xs)};
  mil_var *x_shape = pass_bld_var(c, NULL, op, "shape", NULL, 1, sa, &st);
  if (!x_shape) return -(int)st;
  mil_var *amount;
  if (is_gather) {
    if (!(amount = value_at(c, op, x_shape, axis, &st))) return -(int)st;
  } else {
    pass_barg ia[] = {PASS_BV("x", idx32)};
    mil_var *ishape = pass_bld_var(c, NULL, op, "shape", NULL, 1, ia, &st);
    mil_var *last = ishape ? value_at(c, op, ishape, indices->type->rank - 1, &st) : NULL;
    if (!last) return -(int)st;
    int64_t z = 0;
    mil_value *axes = pass_bld_i32s(p, 1, &z), *begin = pass_bld_i32s(p, 1, &z);
    if (!axes || !begin) return -(int)MIL_ERR_NOMEM;
    pass_barg ea[] = {PASS_BV("x", last), PASS_BK("axes", axes)};
    mil_var *exp = pass_bld_var(c, NULL, op, "expand_dims", NULL, 2, ea, &st);
    if (!exp) return -(int)st;
    pass_barg za[] = {PASS_BV("x", x_shape), PASS_BK("begin", begin), PASS_BV("size", exp)};
    if (!(amount = pass_bld_var(c, NULL, op, "slice_by_size", NULL, 3, za, &st))) return -(int)st;
  }
  pass_barg aa[] = {PASS_BV("x", idx32), PASS_BV("y", amount)};
  mil_var *plus = pass_bld_var(c, NULL, op, "add", NULL, 2, aa, &st);
  if (!plus) return -(int)st;
  pass_barg sel[] = {PASS_BV("cond", cond), PASS_BV("a", idx32), PASS_BV("b", plus)};
  mil_var *nonneg = pass_bld_var(c, NULL, op, "select", NULL, 3, sel, &st);
  if (!nonneg) return -(int)st;
  mil_value *axv = is_gather ? pass_bld_i32(p, axis) : NULL;
  if (is_gather && !axv) return -(int)MIL_ERR_NOMEM;
  pass_barg na[] = {PASS_BV("x", x), PASS_BV("indices", nonneg), PASS_BK("axis", axv),
                    PASS_BV("batch_dims", mil_op_input_var(op, "batch_dims")),
                    PASS_BV("validate_indices", mil_op_input_var(op, "validate_indices"))};
  mil_var *ng = pass_bld_var(c, NULL, op, op->type, op->name, 5, na, &st);
  if (!ng) return -(int)st;
  int r = pass_bld_try_replace(c, op, op->outputs[0], ng);
  if (r <= 0) return r;
  st = pass_remove_ops(&op, 1, c->d);
  return st != MIL_OK ? -(int)st : 1;
}

static int visit(void *ud, mil_op *op) { return transform(ud, op); }

static mil_status run(mil_program *p, const mil_pass_options *o, mil_pass_stats *stats, mil_diag *d) {
  (void)o;
  pass_bld c = {.p = p, .d = d, .pass = PASS};
  /* pass_bld_walk's single sweep, offering only the gathers (transform
   * does nothing at other ops) */
  static const char *const types[] = {"gather", "gather_nd", NULL};
  const pass_walk_spec spec = {
      .pass = PASS, .types = types, .repeat = false, .nested = PASS_WALK_NESTED_ONCE, .visit_block_ops = true};
  mil_status st = pass_walk_run(p, d, &spec, visit, &c, &c.changes);
  pass_bld_free(&c);
  if (stats) stats->changes += c.changes;
  return st;
}

static const char *const k_anchors[] = {"gather", "gather_nd", NULL};
const mil_pass_def pass_def_guard_negative_gather_indices = {
    "common::" PASS, "wrap possibly negative gather indices into range", NULL, 0, run, k_anchors};
