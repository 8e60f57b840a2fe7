/* common::divide_to_multiply — a division by a const becomes a
 * multiplication by its reciprocal.
 *
 *   %c: (2,fp32)*(Tensor) = const(val=[2.0, 4.0], name="c")
 *   %y: (3, 2, fp32)(Tensor) = real_div(x=%x, y=%c, name="y")
 *   } -> (%y)
 *
 * becomes
 *
 *   %c: (2,fp32)*(Tensor) = const(val=[2.0, 4.0], name="c")
 *   %_inversed_y_y_0: (2,fp32)*(Tensor) = const(val=[0.5, 0.25], name="_inversed_y_y_0")
 *   %y: (3, 2, fp32)(Tensor) = mul(x=%x, y=%_inversed_y_y_0, name="_inversed_y")
 *   } -> (%y)
 *
 * Conditions: real_div whose y is the output of a const op (a value known
 * only through inference does not count) and whose x has a float dtype;
 * the reciprocal, computed in y's dtype as numpy does, must be finite
 * everywhere. The mul is named "_inversed_<op name>" (a function output
 * keeps its name). One sweep over every block, nested blocks first.
 *
 * Mirrors coremltools/converters/mil/mil/passes/defs/
 * optimize_elementwise_binary.py (divide_to_multiply).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "passes/fuse_util_internal.h"

static int fuse(pass_fuse_ctx *c, mil_op *op) {
  if (strcmp(op->type, "real_div") != 0 || op->n_outputs != 1) return 0;
  mil_var *x = mil_op_input_var(op, "x"), *y = mil_op_input_var(op, "y");
  if (!x || !y || !y->val || !y->op || !mil_op_is_const(y->op)) return 0;
  if (!mil_type_is_tensor(x->type) || !mil_dtype_is_float(x->type->dtype)) return 0;
  const mil_value *yv = y->val;
  if (yv->kind != MIL_VAL_TENSOR || !yv->type || !mil_dtype_is_float(yv->type->dtype)) return 0;
  mil_dtype dt = yv->type->dtype;
  int64_t shape[PASS_NP_MAX_RANK];
  if (yv->type->rank < 0 || yv->type->rank > PASS_NP_MAX_RANK) return 0;
  for (int32_t i = 0; i < yv->type->rank; i++) shape[i] = yv->type->dims[i].size;
  mil_value *inv = mil_value_new_tensor(c->p, dt, yv->type->rank, shape, yv->type->is_scalar, NULL);
  if (!inv) return -(int)MIL_ERR_NOMEM;
  for (int64_t i = 0; i < yv->numel; i++) {
    double r = pass_np_round(1.0 / mil_value_get_f64(yv, i), dt);
    if (!isfinite(r)) return 0;
    mil_value_set_f64(inv, i, r);
  }
  /* "_inversed_<op name>" */
  size_t len = strlen(op->name);
  char stack[256];
  char *name = len + 11 <= sizeof stack ? stack : malloc(len + 11);
  if (!name) return -(int)MIL_ERR_NOMEM;
  memcpy(name, "_inversed_", 10);
  memcpy(name + 10, op->name, len + 1);
  mil_op *mark = op->prev;
  mil_op *m = pass_fuse_new_op(c, op, "mul", name);
  if (name != stack) free(name);
  mil_var *yc = m ? pass_fuse_const(c, m, m->name, "y", inv) : NULL;
  if (!yc) return -(int)MIL_ERR_NOMEM;
  mil_op_add_input(m, "x", x);
  mil_op_add_input(m, "y", yc);
  return pass_fuse_replace_one(c, op, m, mark);
}

static mil_status run(mil_program *p, const mil_pass_options *o, mil_pass_stats *st, mil_diag *d) {
  (void)o;
  mil_status s = pass_infer_marked_values(p, d);
  if (s != MIL_OK) return s;
  /* the pass builds and removes ops only through the fuse helpers */
  pass_fuse_ctx c = {.p = p, .d = d, .pass = "divide_to_multiply", .lazy_names = true};
  static const char *const types[] = {"real_div", NULL};
  s = pass_fuse_run_types(&c, fuse, false, false, types, NULL, st);
  pass_fuse_ctx_free(&c);
  return s;
}

static const char *const k_anchors[] = {"real_div", NULL};
const mil_pass_def pass_def_divide_to_multiply = {
    "common::divide_to_multiply", "replace a division by a const with a multiplication by its reciprocal", NULL, 0,
    run, k_anchors};
