/* common::compose_conv1d — recompose the expand_dims -> conv2d -> squeeze
 * fragments that TensorFlow and some PyTorch backends emit for a 1-D
 * convolution into one rank-3 conv.
 *
 * Pattern 1 (channel first):
 *
 *   %e: (2, 8, 1, 5, fp32)(Tensor) = expand_dims(x=%x, axes=%a2, name="e")        # axes [-2] or [2]
 *   %c: (2, 4, 1, 4, fp32)(Tensor) = conv(x=%e, weight=%w, strides=%s, pad_type=%pt, pad=%p, dilations=%dl, groups=%g, name="c")
 *   %y: (2, 4, 4, fp32)(Tensor) = squeeze(x=%c, axes=%a2b, name="y")           # axes [-2] or [2]
 *
 * becomes
 *
 *   %squeeze_0_axes_0: (1,int32)*(Tensor) = const(val=[-2], name="squeeze_0_axes_0")
 *   %squeeze_0: (4, 8, 2, fp32)*(Tensor) = squeeze(x=%w, axes=%squeeze_0_axes_0, name="squeeze_0")
 *   %y_pad_type_0 ... %y_groups_0, %y_strides_0, %y_pad_0, %y_dilations_0 = const(...)  # last spatial entries
 *   %y: (2, 4, 4, fp32)(Tensor) = conv(x=%x, weight=%squeeze_0, strides=%y_strides_0, ..., name="y")
 *
 * Pattern 2 (channel last): expand_dims (axes [-3] or [1]) -> transpose
 * (perm (0, 3, 1, 2)) -> conv -> transpose (perm (0, 2, 3, 1)) -> squeeze
 * (axes [-3] or [1]) becomes transpose(perm (0, 2, 1)) -> conv ->
 * transpose(perm (0, 2, 1)); the new ops take the names of the first
 * transpose, the conv and the squeeze outputs.
 *
 * Conditions: expand_dims of a rank-3 tensor with one constant axis as
 * above, each op of the chain read exactly once by the next one (by its x),
 * no op of the chain but the last is a block output; in pattern 1 the
 * squeezed dimension has size 1. The conv's strides, pad, dilations,
 * pad_type and groups must be known; its bias is kept.
 *
 * Mirrors coremltools/converters/mil/mil/passes/defs/optimize_conv.py
 * (compose_conv1d).
 */
#include <stdlib.h>
#include <string.h>

#include "passes/fuse_util_internal.h"

/* The first element of a known, rank-1 integer input (the axes checks). */
static bool first_axis(const mil_op *op, const char *name, int64_t *out) {
  const mil_value *v = pass_input_value(op, name);
  if (!v || v->kind != MIL_VAL_TENSOR || !v->type || v->type->rank != 1 || v->numel < 1 ||
      !mil_dtype_is_int(v->type->dtype))
    return false;
  *out = mil_value_get_i64(v, 0);
  return true;
}

/* The only child of op when it is of `type` and reads op's output as x. */
static mil_op *chain(const mil_op *op, const char *type) {
  mil_op *c = pass_fuse_child_of_type(op, type);
  return c && mil_op_input_var(c, "x") == op->outputs[0] ? c : NULL;
}

/* perm (made non-negative with rank 4) equals want. */
static bool perm_is(const mil_op *tr, const int64_t want[4]) {
  const mil_value *v = pass_input_value(tr, "perm");
  if (!v || v->kind != MIL_VAL_TENSOR || v->numel != 4) return false;
  for (int i = 0; i < 4; i++) {
    int64_t p = mil_value_get_i64(v, i);
    if (p < 0) p += 4;
    if (p != want[i]) return false;
  }
  return true;
}

/* The last `n` elements of conv's known integer input `name`. */
static bool tail(const mil_op *conv, const char *name, int32_t n, int64_t *out) {
  const mil_value *v = pass_input_value(conv, name);
  if (!v || v->kind != MIL_VAL_TENSOR || v->numel < n || !mil_dtype_is_int(v->type->dtype)) return false;
  for (int32_t i = 0; i < n; i++) out[i] = mil_value_get_i64(v, v->numel - n + i);
  return true;
}

/* Builds squeeze(weight, axes=(-2,)) and the rank-3 conv named `name`
 * reading x, both before conv. Returns the conv, or NULL: *st is
 * MIL_ERR_NOMEM, or MIL_OK when the conv's parameters are unknown or the
 * ops do not type-check (the caller rolls back). */
static mil_op *build_conv1d(pass_fuse_ctx *c, mil_op *conv, mil_var *x, const char *name, mil_status *st) {
  *st = MIL_OK;
  int64_t strides, pad[2], dil, m2 = -2;
  const mil_value *pad_type = pass_input_value(conv, "pad_type");
  const mil_value *groups = pass_input_value(conv, "groups");
  mil_var *weight = mil_op_input_var(conv, "weight");
  mil_var *bias = mil_op_input_var(conv, "bias");
  if (!pad_type || !groups || !weight || !tail(conv, "strides", 1, &strides) || !tail(conv, "pad", 2, pad) ||
      !tail(conv, "dilations", 1, &dil))
    return NULL;
  mil_op *sq = pass_fuse_new_op(c, conv, "squeeze", NULL);
  mil_value *axes = pass_fuse_ints(c->p, 1, &m2);
  mil_var *av = sq && axes ? pass_fuse_const(c, sq, sq->name, "axes", axes) : NULL;
  if (!av) goto nomem;
  mil_op_add_input(sq, "x", weight);
  mil_op_add_input(sq, "axes", av);
  mil_status s = pass_fuse_finish(c, sq);
  if (s != MIL_OK) {
    *st = s == MIL_ERR_NOMEM ? s : MIL_OK;
    return NULL;
  }
  /* the builder makes consts in keyword order: pad_type, groups, strides,
   * pad, dilations */
  mil_value *sv = pass_fuse_ints(c->p, 1, &strides), *pv = pass_fuse_ints(c->p, 2, pad), *dv = pass_fuse_ints(c->p, 1, &dil);
  if (!sv || !pv || !dv) goto nomem;
  mil_var *pt = pass_fuse_const(c, conv, name, "pad_type", pad_type);
  mil_var *gr = pt ? pass_fuse_const(c, conv, name, "groups", groups) : NULL;
  mil_var *stv = gr ? pass_fuse_const(c, conv, name, "strides", sv) : NULL;
  mil_var *pdv = stv ? pass_fuse_const(c, conv, name, "pad", pv) : NULL;
  mil_var *dlv = pdv ? pass_fuse_const(c, conv, name, "dilations", dv) : NULL;
  mil_op *nc = dlv ? pass_fuse_new_op(c, conv, "conv", name) : NULL;
  if (!nc) goto nomem;
  mil_op_add_input(nc, "x", x);
  mil_op_add_input(nc, "weight", sq->outputs[0]);
  if (bias) mil_op_add_input(nc, "bias", bias);
  mil_op_add_input(nc, "strides", stv);
  mil_op_add_input(nc, "pad_type", pt);
  mil_op_add_input(nc, "pad", pdv);
  mil_op_add_input(nc, "dilations", dlv);
  mil_op_add_input(nc, "groups", gr);
  s = pass_fuse_finish(c, nc);
  if (s != MIL_OK) {
    *st = s == MIL_ERR_NOMEM ? s : MIL_OK;
    return NULL;
  }
  return nc;
nomem:
  *st = MIL_ERR_NOMEM;
  mil_diag_error(c->d, MIL_ERR_NOMEM, "%s: out of memory", c->pass);
  return NULL;
}

/* A transpose of x with perm (0, 2, 1) named `name` before anchor. */
static mil_op *transpose021(pass_fuse_ctx *c, mil_op *anchor, mil_var *x, const char *name, mil_status *st) {
  static const int64_t perm[3] = {0, 2, 1};
  *st = MIL_OK;
  mil_value *pv = pass_fuse_ints(c->p, 3, perm);
  mil_var *pc = pv ? pass_fuse_const(c, anchor, name, "perm", pv) : NULL;
  mil_op *t = pc ? pass_fuse_new_op(c, anchor, "transpose", name) : NULL;
  if (!t) {
    *st = MIL_ERR_NOMEM;
    return NULL;
  }
  mil_op_add_input(t, "x", x);
  mil_op_add_input(t, "perm", pc);
  mil_status s = pass_fuse_finish(c, t);
  if (s != MIL_OK) {
    *st = s == MIL_ERR_NOMEM ? s : MIL_OK;
    return NULL;
  }
  return t;
}

/* Replaces `last`'s output with new_var and removes ops, or rolls back the
 * ops built before each anchor (marks[i] taken before building). */
static int finish_rewrite(pass_fuse_ctx *c, mil_op *last, mil_var *new_var, mil_op *const *ops, int32_t n,
                          mil_op *const *anchors, mil_op *const *marks, int n_anchors, mil_status st) {
  int r = 0;
  if (st == MIL_ERR_NOMEM) return -(int)st;
  if (new_var && mil_type_equal(new_var->type, last->outputs[0]->type))
    r = pass_fuse_replace_and_remove(c, last, last->outputs[0], new_var, ops, n);
  if (r == 0)
    for (int i = n_anchors - 1; i >= 0; i--) pass_fuse_rollback(anchors[i], marks[i]);
  return r;
}

static int pattern_first(pass_fuse_ctx *c, mil_op *ex, int64_t axis) {
  if (axis != -2 && axis != 2) return 0;
  mil_op *conv = chain(ex, "conv");
  mil_op *sq = conv ? chain(conv, "squeeze") : NULL;
  int64_t sa;
  if (!sq || !first_axis(sq, "axes", &sa) || (sa != -2 && sa != 2)) return 0;
  mil_var *sx = conv->outputs[0];
  int32_t rank = pass_fuse_rank(sx);
  int64_t idx = sa < 0 ? sa + rank : sa;
  if (rank < 0 || idx < 0 || idx >= rank || sx->type->dims[idx].size != 1) return 0;
  mil_op *ops[3] = {ex, conv, sq};
  if (pass_fuse_is_output_of(ex->outputs[0], ex->block) || pass_fuse_is_output_of(conv->outputs[0], conv->block))
    return 0;
  mil_op *mark = conv->prev;
  mil_status st;
  mil_op *nc = build_conv1d(c, conv, mil_op_input_var(ex, "x"), sq->outputs[0]->name, &st);
  mil_op *anchors[1] = {conv}, *marks[1] = {mark};
  return finish_rewrite(c, sq, nc ? nc->outputs[0] : NULL, ops, 3, anchors, marks, 1, st);
}

static int pattern_last(pass_fuse_ctx *c, mil_op *ex, int64_t axis) {
  static const int64_t p0312[4] = {0, 3, 1, 2}, p0231[4] = {0, 2, 3, 1};
  if (axis != -3 && axis != 1) return 0;
  mil_op *t1 = chain(ex, "transpose");
  if (!t1 || !perm_is(t1, p0312)) return 0;
  mil_op *conv = chain(t1, "conv");
  mil_op *t2 = conv ? chain(conv, "transpose") : NULL;
  if (!t2 || !perm_is(t2, p0231)) return 0;
  mil_op *sq = chain(t2, "squeeze");
  int64_t sa;
  if (!sq || !first_axis(sq, "axes", &sa) || (sa != -3 && sa != 1)) return 0;
  mil_op *ops[5] = {ex, t1, conv, t2, sq};
  for (int i = 0; i < 4; i++)
    if (pass_fuse_is_output_of(ops[i]->outputs[0], ops[i]->block)) return 0;
  mil_op *marks[3] = {ex->prev, conv->prev, t2->prev}, *anchors[3] = {ex, conv, t2};
  mil_status st;
  mil_op *nt1 = transpose021(c, ex, mil_op_input_var(ex, "x"), t1->outputs[0]->name, &st);
  mil_op *nc = nt1 ? build_conv1d(c, conv, nt1->outputs[0], conv->outputs[0]->name, &st) : NULL;
  mil_op *nt2 = nc ? transpose021(c, t2, nc->outputs[0], sq->outputs[0]->name, &st) : NULL;
  return finish_rewrite(c, sq, nt2 ? nt2->outputs[0] : NULL, ops, 5, anchors, marks, 3, st);
}

static int fuse(pass_fuse_ctx *c, mil_op *op) {
  if (strcmp(op->type, "expand_dims") != 0 || op->n_outputs != 1) return 0;
  if (pass_fuse_rank(mil_op_input_var(op, "x")) != 3) return 0;
  int64_t axis;
  if (!first_axis(op, "axes", &axis)) return 0;
  int r = pattern_first(c, op, axis);
  return r != 0 ? r : pattern_last(c, op, axis);
}

/* The op types fuse() can rewrite at (it returns 0 at any other). */
static const char *const k_types[] = {"expand_dims", NULL};

static mil_status run(mil_program *p, const mil_pass_options *o, mil_pass_stats *st, mil_diag *d) {
  (void)o;
  mil_status s = pass_infer_marked_values(p, d);
  if (s != MIL_OK) return s;
  pass_fuse_ctx c = {.p = p, .d = d, .pass = "compose_conv1d", .lazy_names = true};
  s = pass_fuse_run_types(&c, fuse, true, false, k_types, NULL, st);
  pass_fuse_ctx_free(&c);
  return s;
}

static const char *const k_anchors[] = {"conv", NULL};
const mil_pass_def pass_def_compose_conv1d = {
    "common::compose_conv1d", "recompose expand_dims -> conv2d -> squeeze into a rank-3 conv", NULL, 0, run, k_anchors};
