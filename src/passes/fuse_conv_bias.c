/* common::fuse_conv_bias — fold a constant add/sub after conv or
 * conv_transpose into the convolution's bias.
 *
 * Pattern 1, conv -> add/sub of a constant broadcast along the channels:
 *
 *   %w: (4, 3, 1, 1, fp32)*(Tensor) = const(val=..., name="w")
 *   %c: (1, 4, 8, 8, fp32)(Tensor) = conv(x=%x, weight=%w, strides=%s, pad_type=%pt, pad=%p, dilations=%dl, groups=%g, name="c")
 *   %b: (4, 1, 1, fp32)*(Tensor) = const(val=[[[1.0]], [[2.0]], [[3.0]], [[4.0]]], name="b")
 *   %y: (1, 4, 8, 8, fp32)(Tensor) = add(x=%c, y=%b, name="y")
 *
 * becomes
 *
 *   %const_0: (4,fp32)*(Tensor) = const(val=[1.0, 2.0, 3.0, 4.0], name="const_0")
 *   %y: (1, 4, 8, 8, fp32)(Tensor) = conv(x=%x, weight=%w, bias=%const_0, strides=%s, ..., name="y")
 *   %b: ... (left in place, dead)
 *
 * Pattern 2, conv -> transpose -> add/sub: the bias is folded into a new
 * conv (fresh name, weight and bias as new consts "<conv>_weight_0",
 * "<conv>_bias_0") and the transpose is rebuilt after it under the name of
 * the add/sub output.
 *
 * Pattern 1 applies when the conv output is not an output of the block and
 * is read by exactly one op, an add or sub. The constant (for sub: y; for
 * add: x when x is known, else y) is a scalar or a tensor with at most one
 * dimension larger than 1, not on the batch axis, and 1 on the spatial
 * axes; the conv input has rank 3, 4 or 5. With an existing bias the
 * constant is added to it (numpy broadcasting and dtype promotion); without
 * one a scalar is broadcast to Cout (weight must be known). A bias that
 * ends up neither fp16 nor fp32 is cast to the weight's dtype. Pattern 2 is
 * tried only when pattern 1 does not match.
 *
 * Mirrors coremltools/converters/mil/mil/passes/defs/optimize_conv.py
 * (fuse_conv_bias).
 */
#include <stdlib.h>
#include <string.h>

#include "passes/fuse_util_internal.h"

static bool is_conv(const mil_op *op) {
  return strcmp(op->type, "conv") == 0 || strcmp(op->type, "conv_transpose") == 0;
}

static bool is_add_sub(const mil_op *op) { return strcmp(op->type, "add") == 0 || strcmp(op->type, "sub") == 0; }

static int oom(pass_fuse_ctx *c) {
  mil_diag_error(c->d, MIL_ERR_NOMEM, "%s: out of memory", c->pass);
  return -(int)MIL_ERR_NOMEM;
}

/* A new conv / conv_transpose like `conv` (all its other inputs), named
 * `name` (NULL: fresh), before anchor, with weight and bias bound to the
 * given vars (weight NULL: conv's weight). NULL with *st = MIL_OK when it
 * does not type-check (already rolled back by the caller's mark). */
static mil_op *rebuild_conv(pass_fuse_ctx *c, mil_op *conv, mil_op *anchor, const char *name, mil_var *weight,
                            mil_var *bias, mil_status *st) {
  mil_op *nc = pass_fuse_new_op(c, anchor, conv->type, name);
  if (!nc) {
    *st = MIL_ERR_NOMEM;
    return NULL;
  }
  static const char *const skip[] = {"weight", "bias"};
  mil_op_add_input(nc, "weight", weight ? weight : mil_op_input_var(conv, "weight"));
  mil_op_add_input(nc, "bias", bias);
  pass_fuse_copy_inputs(nc, conv, skip, 2);
  mil_status s = pass_fuse_finish(c, nc);
  *st = s == MIL_ERR_NOMEM ? s : MIL_OK;
  return s == MIL_OK ? nc : NULL;
}

/* Pattern 1: conv -> add/sub(const). */
static int fuse_plain(pass_fuse_ctx *c, mil_op *conv, mil_op *add) {
  bool is_sub = strcmp(add->type, "sub") == 0;
  mil_var *ax = mil_op_input_var(add, "x"), *ay = mil_op_input_var(add, "y");
  if (!ax || !ay || add->n_outputs != 1) return 0;
  mil_var *bias_var = is_sub ? ay : (ax->val ? ax : ay);
  int32_t rank = pass_fuse_rank(mil_op_input_var(conv, "x"));
  bool nomem = false;
  pass_np b, old = {0}, nb = {0};
  if (!pass_np_from_value(&b, bias_var->val, &nomem)) return nomem ? oom(c) : 0;
  int r = 0;
  if (rank < 3 || rank > 5) goto done;
  if (b.is_scalar) {
    b.is_scalar = false; /* np.array([bias]) */
    b.rank = 1;
    b.shape[0] = 1;
  } else {
    pass_np sq = b;
    pass_np_squeeze(&sq);
    if (sq.rank > 1) goto done;
    if (b.rank == rank && b.shape[0] != 1) goto done;
    int64_t prod = 1;
    for (int32_t i = b.rank - (rank - 2) < 0 ? 0 : b.rank - (rank - 2); i < b.rank; i++) prod *= b.shape[i];
    if (prod != 1) goto done;
    pass_np_squeeze(&b);
  }
  if (is_sub)
    for (int64_t i = 0; i < b.n; i++) b.v[i] = -b.v[i];

  mil_var *weight = mil_op_input_var(conv, "weight");
  if (!mil_op_find_input(conv, "bias")) {
    if (b.n == 1) {
      if (!weight || !weight->val || weight->val->kind != MIL_VAL_TENSOR || weight->val->type->rank < 2) goto done;
      int64_t cout = weight->val->type->dims[strcmp(conv->type, "conv") == 0 ? 0 : 1].size;
      if (cout < 0 || !pass_np_full(&nb, b.dt, 1, &cout, b.v[0])) goto done;
    } else {
      nb = b;
      b.v = NULL;
    }
  } else {
    if (!pass_np_from_value(&old, pass_input_value(conv, "bias"), &nomem)) goto done;
    int k = pass_np_binary(&nb, &old, &b, '+');
    if (k < 0) nomem = true;
    if (k <= 0) goto done;
  }
  mil_dtype dt = nb.dt;
  if (dt != MIL_DT_FP32 && dt != MIL_DT_FP16) {
    if (!weight || !mil_type_is_tensor(weight->type)) goto done;
    dt = weight->type->dtype;
  }
  mil_var *out = add->outputs[0];
  mil_value *val = pass_np_to_value(c->p, &nb, dt);
  if (!val) {
    nomem = true;
    goto done;
  }
  mil_op *mark = conv->prev;
  mil_var *bias_c = pass_fuse_const(c, conv, NULL, NULL, val);
  if (!bias_c) {
    r = -(int)MIL_ERR_NOMEM;
    goto done;
  }
  mil_status st;
  mil_op *nc = rebuild_conv(c, conv, conv, out->name, NULL, bias_c, &st);
  if (!nc || !mil_type_equal(nc->outputs[0]->type, out->type)) {
    pass_fuse_rollback(conv, mark);
    if (st == MIL_ERR_NOMEM) r = -(int)st;
    goto done;
  }
  mil_op *rm[2] = {conv, add};
  r = pass_fuse_replace_and_remove(c, add, out, nc->outputs[0], rm, 2);
  if (r == 0) pass_fuse_rollback(conv, mark);
done:
  pass_np_free(&b);
  pass_np_free(&old);
  pass_np_free(&nb);
  return nomem ? oom(c) : r;
}

/* Pattern 2: conv -> transpose -> add/sub(const). */
static int fuse_transposed(pass_fuse_ctx *c, mil_op *conv) {
  mil_op *tr = pass_fuse_child_of_type(conv, "transpose");
  if (!tr || tr->n_outputs != 1) return 0;
  mil_op *add = pass_fuse_child_of_type(tr, "add");
  if (!add) add = pass_fuse_child_of_type(tr, "sub");
  if (!add || add->n_outputs != 1) return 0;
  mil_var *ax = mil_op_input_var(add, "x"), *ay = mil_op_input_var(add, "y");
  if (!ax || !ay || (!ax->val && !ay->val)) return 0;
  const mil_value *bv = ax->val ? ax->val : ay->val;
  bool first = ay->val != NULL; /* the transposed conv output is x */
  bool is_sub = strcmp(add->type, "sub") == 0;
  mil_var *cout_v = conv->outputs[0];
  if (pass_fuse_rank(cout_v) < 2 || cout_v->type->dims[1].size < 0) return 0;
  int64_t cout = cout_v->type->dims[1].size;
  mil_var *weight = mil_op_input_var(conv, "weight");
  if (!weight || !weight->val) return 0;
  bool nomem = false;
  pass_np cb = {0}, b = {0}, nb = {0};
  int r = 0;
  const mil_value *wval = weight->val;
  if (!pass_weight_numeric(wval)) goto done;
  mil_dtype wdt = wval->type->dtype;
  if (!mil_op_find_input(conv, "bias")) {
    if (!pass_np_full(&cb, wdt, 1, &cout, 0)) {
      nomem = true;
      goto done;
    }
  } else if (!pass_np_from_value(&cb, pass_input_value(conv, "bias"), &nomem)) {
    goto done;
  }
  if (!pass_np_from_value(&b, bv, &nomem)) goto done;
  if (!b.is_scalar) {
    if (b.n == 1) {
      /* .tolist() of a one-element array: a Python number */
      b.rank = 0;
      b.weak = true;
    } else {
      if (b.n != cout) goto done;
      const mil_value *perm = pass_input_value(tr, "perm");
      int32_t rank = pass_fuse_rank(tr->outputs[0]);
      if (!perm || perm->kind != MIL_VAL_TENSOR || rank < 0) goto done;
      int64_t pos = -1;
      for (int64_t i = 0; i < perm->numel && pos < 0; i++)
        if (mil_value_get_i64(perm, i) == 1) pos = i;
      if (pos < 0) goto done;
      int64_t cdim = pos - rank; /* negative index into the bias shape */
      if (-cdim > b.rank || b.shape[b.rank + cdim] != cout) goto done;
      b.rank = 1;
      b.shape[0] = cout;
    }
  }
  if (is_sub) {
    pass_np *neg = first ? &b : &cb;
    for (int64_t i = 0; i < neg->n; i++) neg->v[i] = -neg->v[i];
  }
  int k = pass_np_binary(&nb, &cb, &b, '+');
  if (k <= 0) {
    nomem = k < 0;
    goto done;
  }
  if (pass_fuse_is_output_of(conv->outputs[0], conv->block) || pass_fuse_is_output_of(tr->outputs[0], tr->block))
    goto done;
  mil_op *mark_c = conv->prev, *mark_t = tr->prev;
  mil_op *nc = pass_fuse_new_op(c, conv, conv->type, NULL);
  if (!nc) {
    r = -(int)MIL_ERR_NOMEM;
    goto done;
  }
  /* -conv_weight for const - transpose(conv), else the weight itself */
  const mil_value *wv = is_sub && !first ? pass_weight_negate(c->p, wval) : pass_weight_as_const(c->p, wval);
  mil_value *bvv = pass_np_to_value(c->p, &nb, nb.dt == MIL_DT_FP64 ? MIL_DT_FP32 : nb.dt);
  mil_var *wc = wv ? pass_fuse_const(c, nc, nc->name, "weight", wv) : NULL;
  mil_var *bc = bvv && wc ? pass_fuse_const(c, nc, nc->name, "bias", bvv) : NULL;
  if (!bc) {
    r = -(int)MIL_ERR_NOMEM;
    goto done;
  }
  static const char *const skip[] = {"weight", "bias"};
  mil_op_add_input(nc, "weight", wc);
  mil_op_add_input(nc, "bias", bc);
  pass_fuse_copy_inputs(nc, conv, skip, 2);
  mil_status st = pass_fuse_finish(c, nc);
  mil_op *nt = NULL;
  if (st == MIL_OK) {
    nt = pass_fuse_new_op(c, tr, "transpose", add->outputs[0]->name);
    if (!nt) {
      r = -(int)MIL_ERR_NOMEM;
      goto done;
    }
    static const char *const skip_x[] = {"x"};
    mil_op_add_input(nt, "x", nc->outputs[0]);
    pass_fuse_copy_inputs(nt, tr, skip_x, 1);
    st = pass_fuse_finish(c, nt);
  }
  if (st == MIL_OK && !mil_type_equal(nt->outputs[0]->type, add->outputs[0]->type)) st = MIL_ERR_TYPE;
  if (st == MIL_OK) {
    mil_op *rm[3] = {conv, tr, add};
    r = pass_fuse_replace_and_remove(c, add, add->outputs[0], nt->outputs[0], rm, 3);
  }
  if (r == 0) {
    pass_fuse_rollback(tr, mark_t);
    pass_fuse_rollback(conv, mark_c);
  }
  if (st == MIL_ERR_NOMEM) r = -(int)st;
done:
  pass_np_free(&cb);
  pass_np_free(&b);
  pass_np_free(&nb);
  return nomem ? oom(c) : r;
}

static int fuse(pass_fuse_ctx *c, mil_op *op) {
  if (!is_conv(op) || op->n_outputs != 1) return 0;
  mil_var *out = op->outputs[0];
  if (!pass_fuse_is_output_of(out, op->block)) {
    mil_op *child = pass_only_child_op(out);
    if (child && is_add_sub(child)) return fuse_plain(c, op, child);
  }
  return fuse_transposed(c, op);
}

/* The op types fuse() can rewrite at (it returns 0 at any other). */
static const char *const k_types[] = {"conv", "conv_transpose", NULL};

static mil_status run(mil_program *p, const mil_pass_options *o, mil_pass_stats *st, mil_diag *d) {
  (void)o;
  mil_status s = pass_infer_marked_values(p, d);
  if (s != MIL_OK) return s;
  pass_fuse_ctx c = {.p = p, .d = d, .pass = "fuse_conv_bias", .lazy_names = true};
  s = pass_fuse_run_types(&c, fuse, true, false, k_types, NULL, st);
  pass_fuse_ctx_free(&c);
  return s;
}

static const char *const k_anchors[] = {"conv", "conv_transpose", NULL};
const mil_pass_def pass_def_fuse_conv_bias = {"common::fuse_conv_bias",
                                              "fold a constant add/sub after conv or conv_transpose into its bias",
                                              NULL, 0, run, k_anchors};
