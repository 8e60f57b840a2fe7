/* common::prelu_to_lrelu — a prelu whose alpha is the same for every
 * channel becomes a leaky_relu.
 *
 *   %a: (3,fp32)*(Tensor) = const(val=[0.25, 0.25, 0.25], name="a")
 *   %y: (1, 3, 4, 4, fp32)(Tensor) = prelu(x=%x, alpha=%a, name="y")
 *
 * becomes
 *
 *   %a: (3,fp32)*(Tensor) = const(val=[0.25, 0.25, 0.25], name="a")
 *   %y_alpha_0: (fp32)*(Scalar) = const(val=0.25, name="y_alpha_0")
 *   %y: (1, 3, 4, 4, fp32)(Tensor) = leaky_relu(x=%x, alpha=%y_alpha_0, name="y")
 *
 * Every prelu with a known alpha whose elements all equal the first one is
 * rewritten (one sweep; nested blocks first). The leaky_relu is inserted
 * before the prelu and named after its output; its alpha is a new scalar
 * const of alpha's dtype.
 *
 * Mirrors coremltools/converters/mil/mil/passes/defs/optimize_activation.py
 * (prelu_to_lrelu).
 */
#include <string.h>

#include "passes/fuse_util_internal.h"

static int fuse(pass_fuse_ctx *c, mil_op *op) {
  if (strcmp(op->type, "prelu") != 0 || op->n_outputs != 1) return 0;
  const mil_value *a = pass_input_value(op, "alpha");
  mil_var *x = mil_op_input_var(op, "x");
  if (!x || !a || a->kind != MIL_VAL_TENSOR || !a->type || a->type->rank < 1 || a->numel < 1 ||
      !mil_dtype_is_float(a->type->dtype))
    return 0;
  /* alpha[c] for c < shape[0]: a 1-D alpha in practice */
  int64_t n = a->type->dims[0].size;
  if (n < 1 || a->type->rank != 1) return 0;
  double a0 = mil_value_get_f64(a, 0);
  for (int64_t i = 1; i < n; i++)
    if (mil_value_get_f64(a, i) != a0) return 0;
  mil_value *s = mil_value_new_scalar_f64(c->p, a->type->dtype, a0);
  mil_var *res = op->outputs[0];
  mil_op *mark = op->prev;
  mil_var *ac = s ? pass_fuse_const(c, op, res->name, "alpha", s) : NULL;
  mil_op *lr = ac ? pass_fuse_new_op(c, op, "leaky_relu", res->name) : NULL;
  if (!lr) return -(int)MIL_ERR_NOMEM;
  mil_op_add_input(lr, "x", x);
  mil_op_add_input(lr, "alpha", ac);
  return pass_fuse_replace_one(c, op, lr, mark);
}

/* The op types fuse() can rewrite at (it returns 0 at any other). */
static const char *const k_types[] = {"prelu", NULL};

static mil_status run(mil_program *p, const mil_pass_options *o, mil_pass_stats *st, mil_diag *d) {
  (void)o;
  mil_status s = pass_infer_marked_values(p, d);
  if (s != MIL_OK) return s;
  pass_fuse_ctx c = {.p = p, .d = d, .pass = "prelu_to_lrelu", .lazy_names = true};
  s = pass_fuse_run_types(&c, fuse, false, false, k_types, NULL, st);
  pass_fuse_ctx_free(&c);
  return s;
}

static const char *const k_anchors[] = {"prelu", NULL};
const mil_pass_def pass_def_prelu_to_lrelu = {"common::prelu_to_lrelu",
                                              "replace a prelu whose alpha is the same for all channels by leaky_relu",
                                              NULL, 0, run, k_anchors};
