/* common::add_conv_transpose_output_shape — give conv_transpose an
 * explicit output_shape when its inferred output shape is static.
 *
 *   %y: (1, 5, 39, fp32)(Tensor) = conv_transpose(x=%x, weight=%w, pad=%p, pad_type=%pt, strides=%s, dilations=%d, groups=%g, name="y")
 *
 * becomes
 *
 *   %y_has_output_shape_output_shape_0: (3,int32)*(Tensor) = const(val=[1, 5, 39], name="y_has_output_shape_output_shape_0")
 *   %y: (1, 5, 39, fp32)(Tensor) = conv_transpose(x=%x, weight=%w, pad=%p, output_shape=%y_has_output_shape_output_shape_0, pad_type=%pt, ..., name="y_has_output_shape")
 *
 * Applies to every conv_transpose without an output_shape input whose
 * output shape has no symbolic dimension. The new op is named
 * "<op>_has_output_shape" and inserted before the old one. One sweep over
 * every block, nested blocks first.
 *
 * Mirrors coremltools/converters/mil/mil/passes/defs/optimize_conv.py
 * (add_conv_transpose_output_shape).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "passes/fuse_util_internal.h"

static int fuse(pass_fuse_ctx *c, mil_op *op) {
  if (strcmp(op->type, "conv_transpose") != 0 || op->n_outputs < 1) return 0;
  if (mil_op_find_input(op, "output_shape")) return 0;
  const mil_type *t = op->outputs[0]->type;
  if (!mil_type_is_static(t) || t->rank < 1 || t->rank > PASS_NP_MAX_RANK) return 0;
  int64_t shape[PASS_NP_MAX_RANK];
  for (int32_t i = 0; i < t->rank; i++) shape[i] = t->dims[i].size;
  size_t len = strlen(op->name) + 20;
  char *name = malloc(len);
  if (!name) return -(int)MIL_ERR_NOMEM;
  snprintf(name, len, "%s_has_output_shape", op->name);
  mil_op *mark = op->prev;
  mil_op *nc = pass_fuse_new_op(c, op, "conv_transpose", name);
  free(name);
  mil_value *sv = nc ? pass_fuse_ints(c->p, t->rank, shape) : NULL;
  mil_var *sc = sv ? pass_fuse_const(c, nc, nc->name, "output_shape", sv) : NULL;
  if (!sc) return -(int)MIL_ERR_NOMEM;
  pass_fuse_copy_inputs(nc, op, NULL, 0);
  mil_op_add_input(nc, "output_shape", sc);
  return pass_fuse_replace_one(c, op, nc, mark);
}

static mil_status run(mil_program *p, const mil_pass_options *o, mil_pass_stats *st, mil_diag *d) {
  (void)o;
  mil_status s = pass_infer_marked_values(p, d);
  if (s != MIL_OK) return s;
  pass_fuse_ctx c = {.p = p, .d = d, .pass = "add_conv_transpose_output_shape"};
  s = pass_fuse_run(&c, fuse, false, false, st);
  pass_fuse_ctx_free(&c);
  return s;
}

static const char *const k_anchors[] = {"conv_transpose", NULL};
const mil_pass_def pass_def_add_conv_transpose_output_shape = {
    "common::add_conv_transpose_output_shape", "give conv_transpose an explicit output_shape when it is static", NULL,
    0, run, k_anchors};
