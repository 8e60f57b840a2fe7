/* common::fuse_dilated_conv — space_to_batch -> 2-D conv -> batch_to_space
 * (TensorFlow's way of expressing a dilated convolution) becomes one conv
 * with dilations.
 *
 *   %s: (4, 8, 10, 10, fp32)(Tensor) = space_to_batch(x=%x, block_shape=%bs, paddings=%pd, name="s")
 *   %c: (4, 8, 8, 8, fp32)(Tensor) = conv(x=%s, weight=%w, strides=%st, pad_type=%pt, pad=%p, dilations=%dl, groups=%g, name="c")
 *   %y: (1, 8, 16, 16, fp32)(Tensor) = batch_to_space(x=%c, block_shape=%bs2, crops=%cr, name="y")
 *
 * becomes
 *
 *   %conv_0_pad_type_0: (string)*(Scalar) = const(val="same", name="conv_0_pad_type_0")
 *   %conv_0_dilations_0: (2,int32)*(Tensor) = const(val=[2, 2], name="conv_0_dilations_0")
 *   %y: (1, 8, 16, 16, fp32)(Tensor) = conv(x=%x, weight=%w, strides=%st, pad_type=%conv_0_pad_type_0, pad=%p, dilations=%conv_0_dilations_0, groups=%g, name="conv_0")
 *
 * Conditions: each op read exactly once by the next, the conv input has 2
 * spatial dims, neither space_to_batch nor conv output is a block output,
 * both block_shape values are known and equal, paddings and crops are
 * known. Non-zero paddings must be exactly what TensorFlow's "same"
 * padding produces for this input size, kernel and dilation (then
 * pad_type becomes "same"). The new conv gets a fresh name and the
 * conv's other inputs.
 *
 * Mirrors coremltools/converters/mil/mil/passes/defs/optimize_conv.py
 * (fuse_dilated_conv).
 */
#include <string.h>

#include "passes/fuse_util_internal.h"

static bool ivals(const mil_value *v, int64_t *out, int n) {
  if (!v || v->kind != MIL_VAL_TENSOR || v->numel != n || !mil_dtype_is_int(v->type->dtype)) return false;
  for (int i = 0; i < n; i++) out[i] = mil_value_get_i64(v, i);
  return true;
}

/* Python's floor modulo for a positive m. */
static int64_t pmod(int64_t a, int64_t m) { return ((a % m) + m) % m; }

/* TensorFlow's "same" padding for a dilated 2-D kernel, as coremltools
 * recomputes it. */
static bool same_padding(int64_t in_h, int64_t in_w, int64_t kh, int64_t kw, const int64_t *dil, const int64_t *pad,
                         const int64_t *crop) {
  int64_t dh = dil[0] * (kh - 1) + 1, dw = dil[1] * (kw - 1) + 1;
  int64_t ps_h = (dh - 1) / 2, pe_h = dh - 1 - (dh - 1) / 2;
  int64_t ps_w = (dw - 1) / 2, pe_w = dw - 1 - (dw - 1) / 2;
  int64_t full_h = in_h + ps_h + pe_h, full_w = in_w + ps_w + pe_w;
  int64_t extra_h = pmod(dil[0] - pmod(full_h, dil[0]), dil[0]);
  int64_t extra_w = pmod(dil[1] - pmod(full_w, dil[1]), dil[1]);
  return pad[0] == ps_h && pad[1] == pe_h + extra_h && pad[2] == ps_w && pad[3] == pe_w + extra_w && crop[0] == 0 &&
         crop[1] == extra_h && crop[2] == 0 && crop[3] == extra_w;
}

static int fuse(pass_fuse_ctx *c, mil_op *stb) {
  if (strcmp(stb->type, "space_to_batch") != 0 || stb->n_outputs != 1) return 0;
  mil_op *conv = pass_fuse_child_of_type(stb, "conv");
  if (!conv || conv->n_outputs != 1) return 0;
  mil_var *cx = mil_op_input_var(conv, "x");
  if (cx != stb->outputs[0] || pass_fuse_rank(cx) != 4) return 0;
  mil_op *bts = pass_fuse_child_of_type(conv, "batch_to_space");
  if (!bts || bts->n_outputs != 1) return 0;
  mil_block *b = stb->block;
  if (pass_fuse_is_output_of(stb->outputs[0], b) || pass_fuse_is_output_of(conv->outputs[0], b)) return 0;
  int64_t bs1[2], bs2[2], pad[4], crop[4];
  if (!ivals(pass_input_value(stb, "block_shape"), bs1, 2) || !ivals(pass_input_value(bts, "block_shape"), bs2, 2))
    return 0;
  if (bs1[0] != bs2[0] || bs1[1] != bs2[1] || bs1[0] <= 0 || bs1[1] <= 0) return 0;
  if (!ivals(pass_input_value(stb, "paddings"), pad, 4) || !ivals(pass_input_value(bts, "crops"), crop, 4)) return 0;
  bool same = false;
  if (pad[0] || pad[1] || pad[2] || pad[3]) {
    mil_var *x = mil_op_input_var(stb, "x"), *w = mil_op_input_var(conv, "weight");
    if (pass_fuse_rank(x) != 4 || pass_fuse_rank(w) != 4) return 0;
    const mil_dim *xd = x->type->dims, *wd = w->type->dims;
    if (xd[2].size < 0 || xd[3].size < 0 || wd[2].size < 0 || wd[3].size < 0) return 0;
    if (!same_padding(xd[2].size, xd[3].size, wd[2].size, wd[3].size, bs1, pad, crop)) return 0;
    same = true;
  }
  mil_op *mark = conv->prev;
  mil_op *nc = pass_fuse_new_op(c, conv, "conv", NULL);
  if (!nc) return -(int)MIL_ERR_NOMEM;
  /* the conv's inputs in order, x / pad_type / dilations replaced; the
   * builder makes the consts in that order */
  for (int32_t i = 0; i < conv->n_inputs; i++) {
    const mil_input *in = &conv->inputs[i];
    mil_var *v = NULL;
    if (strcmp(in->name, "x") == 0) v = mil_op_input_var(stb, "x");
    else if (strcmp(in->name, "pad_type") == 0 && same) {
      mil_value *s = mil_value_new_string(c->p, "same");
      v = s ? pass_fuse_const(c, nc, nc->name, "pad_type", s) : NULL;
    } else if (strcmp(in->name, "dilations") == 0) {
      mil_value *dv = pass_fuse_ints(c->p, 2, bs1);
      v = dv ? pass_fuse_const(c, nc, nc->name, "dilations", dv) : NULL;
    } else {
      continue; /* copied below */
    }
    if (!v) return -(int)MIL_ERR_NOMEM;
    mil_op_add_input(nc, in->name, v);
  }
  static const char *const skip[] = {"x", "dilations"}, *const skip_same[] = {"x", "dilations", "pad_type"};
  pass_fuse_copy_inputs(nc, conv, same ? skip_same : skip, same ? 3 : 2);
  if (!mil_op_find_input(nc, "dilations")) {
    mil_value *dv = pass_fuse_ints(c->p, 2, bs1);
    mil_var *v = dv ? pass_fuse_const(c, nc, nc->name, "dilations", dv) : NULL;
    if (!v) return -(int)MIL_ERR_NOMEM;
    mil_op_add_input(nc, "dilations", v);
  }
  if (same && !mil_op_find_input(nc, "pad_type")) {
    mil_value *s = mil_value_new_string(c->p, "same");
    mil_var *v = s ? pass_fuse_const(c, nc, nc->name, "pad_type", s) : NULL;
    if (!v) return -(int)MIL_ERR_NOMEM;
    mil_op_add_input(nc, "pad_type", v);
  }
  mil_status st = pass_fuse_finish(c, nc);
  if (st == MIL_ERR_NOMEM) return -(int)st;
  int r = 0;
  if (st == MIL_OK && mil_type_equal(nc->outputs[0]->type, bts->outputs[0]->type)) {
    mil_op *rm[3] = {stb, conv, bts};
    r = pass_fuse_replace_and_remove(c, conv, bts->outputs[0], nc->outputs[0], rm, 3);
  }
  if (r == 0) pass_fuse_rollback(conv, mark);
  return r;
}

/* The op types fuse() can rewrite at (it returns 0 at any other). */
static const char *const k_types[] = {"space_to_batch", NULL};
/* The op types no rewrite can do without. */
static const char *const k_required[] = {"conv", "batch_to_space", NULL};

static mil_status run(mil_program *p, const mil_pass_options *o, mil_pass_stats *st, mil_diag *d) {
  (void)o;
  mil_status s = pass_infer_marked_values(p, d);
  if (s != MIL_OK) return s;
  pass_fuse_ctx c = {.p = p, .d = d, .pass = "fuse_dilated_conv", .lazy_names = true};
  s = pass_fuse_run_types(&c, fuse, true, false, k_types, k_required, st);
  pass_fuse_ctx_free(&c);
  return s;
}

static const char *const k_anchors[] = {"space_to_batch", NULL};
const mil_pass_def pass_def_fuse_dilated_conv = {"common::fuse_dilated_conv",
                                                 "fuse space_to_batch -> conv -> batch_to_space into a dilated conv",
                                                 NULL, 0, run, k_anchors};
