/* ONNX layout ops: Reshape, Flatten, Transpose, Squeeze, Unsqueeze, Concat,
 * Split, Slice, Expand, Tile, Pad, DepthToSpace, SpaceToDepth, with the
 * attribute-to-input moves of Slice 10, Split 13/18, Squeeze/Unsqueeze 13
 * and Pad 11/18. MIL ops as coremltools' torch frontend emits them
 * (reshape, transpose, squeeze, expand_dims, concat, split,
 * slice_by_index, tile, pad, depth_to_space, space_to_depth). */
#include <stdlib.h>
#include <string.h>

#include "onnx/import/import_internal.h"
#include "onnx/import/ops_quant_internal.h"

/* An int list given by attribute `attr` (before opset `since_input`) or by
 * input `idx` (from then on, which must be known). Returns the count, -1
 * when absent, -2 when the input is not known at conversion time. */
static int32_t ints_arg(onnx_ctx *c, onnx_node *n, const char *attr, int since_input, int32_t idx, int64_t **out) {
  if (n->opset < since_input) {
    const int64_t *a;
    int32_t k = onnx_attr_ints(n, attr, &a);
    *out = (int64_t *)a;
    return k;
  }
  mil_var *v = onnx_in(n, idx);
  if (!v) return -1;
  int32_t k;
  if (!onnx_val_ints(c, v, out, &k)) return -2;
  return k;
}

static mil_status conv_reshape(onnx_ctx *c, onnx_node *n) {
  mil_var *x = onnx_req(c, n, 0);
  if (!x) return MIL_ERR_INVALID;
  mil_var *shape;
  if (n->opset < 5) {
    const int64_t *s;
    int32_t k = onnx_attr_ints(n, "shape", &s);
    shape = onnx_const(c, onnx_i32s(c, k < 0 ? 0 : k, s));
  } else if (!(shape = onnx_req(c, n, 1))) return MIL_ERR_INVALID;
  if (n->opset >= 5) {
    mil_status cst = onnx_refuse_clipped(c, n, 1, "shape");
    if (cst != MIL_OK) return cst;
  }
  if (onnx_attr_i(n, "allowzero", 0)) {
    int64_t *s;
    int32_t k;
    /* MIL's reshape reads every 0 of shape as "the dim of x" (coremltools
     * iOS15 / iOS17 reshape), never as an empty dim. A shape computed at
     * run time is fine when x is known not to be empty: a 0 would give an
     * empty result of another volume than x's, which ONNX rejects. */
    bool x_nonempty = onnx_rank(x) >= 0, x_empty = false; /* every dim known > 0; a static 0 dim */
    for (int32_t i = 0; i < onnx_rank(x); i++) {
      x_nonempty = x_nonempty && x->type->dims[i].size > 0;
      x_empty = x_empty || x->type->dims[i].size == 0;
    }
    bool known = onnx_val_ints(c, shape, &s, &k);
    if (!known && x_empty && (x->type->dtype == MIL_DT_FP32 || x->type->dtype == MIL_DT_FP16 ||
                              x->type->dtype == MIL_DT_INT32)) {
      /* x has no elements, so neither has the result (ONNX requires equal
       * volumes): the run-time shape, its 0s empty dims, filled with nothing */
      mil_var *sh = onnx_cast(c, shape, MIL_DT_INT32);
      return onnx_set_out(c, n, 0, ONNX_OP(c, "fill", A("shape", sh), K("value", onnx_fscalar(c, x->type->dtype, 0))));
    }
    if (!known && !x_nonempty)
      return ONNX_UNSUP(c, "allowzero=1 with a shape not known at conversion and an input that may be empty (MIL "
                           "reshape reads a 0 as the input's dim, so a 0 meaning an empty dim cannot be expressed)");
    for (int32_t i = 0; known && i < k; i++)
      if (s[i] == 0) return ONNX_UNSUP(c, "allowzero=1 with a 0 in the shape (an empty tensor)");
  }
  shape = onnx_cast(c, shape, MIL_DT_INT32);
  int64_t *sv;
  int32_t k;
  if (onnx_val_ints(c, shape, &sv, &k) && k != onnx_rank(x)) {
    /* ONNX's 0 copies the dim of x at that index whatever the ranks; MIL's
     * reshape only when the ranks agree: put the dims in */
    bool changed = false;
    for (int32_t i = 0; i < k; i++)
      if (sv[i] == 0 && i < onnx_rank(x) && x->type->dims[i].size >= 0) sv[i] = x->type->dims[i].size, changed = true;
    if (changed) shape = onnx_const(c, onnx_i32s(c, k, sv));
  } else if (!shape->val && onnx_rank(shape) == 1 && shape->type->dims[0].size >= 0 &&
             shape->type->dims[0].size != onnx_rank(x) && onnx_rank(x) >= 0) {
    /* a computed shape: where it is 0, the dim of x at that index */
    int64_t k2 = shape->type->dims[0].size, r = onnx_rank(x);
    mil_var *xs = onnx_shape_of(c, x);
    if (k2 < r) xs = ONNX_OP(c, "slice_by_index", A("x", xs), K("begin", onnx_i32s(c, 1, (int64_t[]){0})),
                             K("end", onnx_i32s(c, 1, &k2)));
    else {
      mil_value *ones = mil_value_new_tensor(c->p, MIL_DT_INT32, 1, (int64_t[]){k2 - r}, false, NULL);
      for (int64_t i = 0; ones && i < k2 - r; i++) mil_value_set_i64(ones, i, 1);
      mil_var *parts[2] = {xs, onnx_const(c, ones)};
      xs = r == 0 ? parts[1] : ONNX_OP(c, "concat", AT("values", parts, 2), K("axis", onnx_i32(c, 0)));
    }
    mil_var *z = ONNX_OP(c, "equal", A("x", shape), K("y", onnx_i32(c, 0)));
    shape = ONNX_OP(c, "select", A("cond", z), A("a", xs), A("b", shape));
  }
  return onnx_set_out(c, n, 0, ONNX_OP(c, "reshape", A("x", x), A("shape", shape)));
}

static mil_status conv_flatten(onnx_ctx *c, onnx_node *n) {
  mil_var *x = onnx_req(c, n, 0);
  if (!x) return MIL_ERR_INVALID;
  int32_t rank = onnx_rank(x);
  int64_t axis = onnx_attr_i(n, "axis", 1);
  if (rank < 0) return ONNX_UNSUP(c, "input of unknown rank");
  if (axis < 0) axis += rank;
  if (axis < 0 || axis > rank) return onnx_fail(c, MIL_ERR_INVALID, "axis out of range for rank %d", (int)rank);
  const mil_type *t = x->type;
  int64_t a = 1, b = 1;
  bool known = true;
  for (int32_t i = 0; i < rank; i++) {
    if (t->dims[i].size < 0) known = false;
    else if (i < axis) a *= t->dims[i].size;
    else b *= t->dims[i].size;
  }
  mil_var *r;
  if (known || axis == 0) {
    int64_t s[2] = {axis == 0 ? 1 : a, known ? b : -1};
    r = ONNX_OP(c, "reshape", A("x", x), K("shape", onnx_i32s(c, 2, s)));
  } else {
    bool tail_known = true;
    for (int32_t i = (int32_t)axis; i < rank; i++) tail_known &= t->dims[i].size >= 0;
    if (!tail_known) return ONNX_UNSUP(c, "flatten with symbolic dims on both sides of axis");
    int64_t s[2] = {-1, b};
    r = ONNX_OP(c, "reshape", A("x", x), K("shape", onnx_i32s(c, 2, s)));
  }
  return onnx_set_out(c, n, 0, r);
}

static mil_status conv_transpose(onnx_ctx *c, onnx_node *n) {
  mil_var *x = onnx_req(c, n, 0);
  if (!x) return MIL_ERR_INVALID;
  int32_t rank = onnx_rank(x);
  if (rank < 0) return ONNX_UNSUP(c, "input of unknown rank");
  const int64_t *p;
  int32_t k = onnx_attr_ints(n, "perm", &p);
  int64_t perm[MIL_INTERP_MAX_RANK_ONNX];
  if (rank > MIL_INTERP_MAX_RANK_ONNX) return ONNX_UNSUP(c, "rank %d", (int)rank);
  if (k >= 0 && k != rank) return onnx_fail(c, MIL_ERR_INVALID, "perm has %d entries for rank %d", (int)k, (int)rank);
  for (int32_t i = 0; i < rank; i++) perm[i] = k >= 0 ? p[i] : rank - 1 - i;
  mil_var *w = onnx_transpose_weight(c, x, rank, perm); /* a compressed weight stays compressed */
  if (w) return onnx_set_out(c, n, 0, w);
  return onnx_set_out(c, n, 0, ONNX_OP(c, "transpose", A("x", x), K("perm", onnx_i32s(c, rank, perm))));
}

/* Unsqueeze with axes computed at run time (their count is static):
 * output dim p is 1 where p is an axis, else the next dim of x; built
 * from range / equal / cumsum / gather, then one reshape. */
static mil_status unsqueeze_dynamic(onnx_ctx *c, onnx_node *n, mil_var *x, mil_var *axes) {
  int32_t r = onnx_rank(x);
  if (onnx_rank(axes) != 1 || axes->type->dims[0].size < 0 || r < 0) return ONNX_UNSUP(c, "axes of unknown length");
  int64_t R = r + axes->type->dims[0].size;
  mil_var *pos;
  mil_var *isnew = onnx_axes_mask(c, axes, R, &pos);
  mil_var *src = ONNX_OP(c, "sub", A("x", pos), A("y", ONNX_OP(c, "cumsum", A("x", isnew), K("axis", onnx_i32(c, 0)))));
  src = ONNX_OP(c, "clip", A("x", onnx_cast(c, src, MIL_DT_FP32)), K("alpha", onnx_f32(c, 0)), K("beta", onnx_f32(c, r > 0 ? r - 1 : 0)));
  mil_var *dims = r > 0 ? ONNX_OP(c, "gather", A("x", onnx_shape_of(c, x)), A("indices", onnx_cast(c, src, MIL_DT_INT32)),
                                  K("axis", onnx_i32(c, 0)))
                        : onnx_const(c, mil_value_new_tensor(c->p, MIL_DT_INT32, 1, &R, false, NULL));
  mil_var *shape = ONNX_OP(c, "select", A("cond", onnx_cast(c, isnew, MIL_DT_BOOL)), K("a", onnx_i32(c, 1)), A("b", dims));
  return onnx_set_out(c, n, 0, ONNX_OP(c, "reshape", A("x", x), A("shape", shape)));
}

/* Squeeze with axes computed at run time: the kept dims, in order, are
 * the r - k smallest of position + r * removed (topk), then a reshape. */
static mil_status squeeze_dynamic(onnx_ctx *c, onnx_node *n, mil_var *x, mil_var *axes) {
  int32_t r = onnx_rank(x);
  if (onnx_rank(axes) != 1 || axes->type->dims[0].size < 0 || r <= 0) return ONNX_UNSUP(c, "axes of unknown length");
  int64_t k = axes->type->dims[0].size, keep = r - k;
  if (keep < 0) return onnx_fail(c, MIL_ERR_INVALID, "more axes than dims");
  mil_var *pos;
  mil_var *gone = onnx_axes_mask(c, axes, r, &pos);
  mil_var *key = onnx_cast(c, ONNX_OP(c, "add", A("x", pos), A("y", ONNX_OP(c, "mul", A("x", gone), K("y", onnx_i32(c, r))))), MIL_DT_FP32);
  if (keep == 0) return onnx_set_out(c, n, 0, ONNX_OP(c, "reshape", A("x", x), K("shape", onnx_i32s(c, 0, NULL))));
  mil_op *tk = onnx_op_full(c, "topk", 4, (pass_barg[]){A("x", key), K("k", onnx_i32(c, keep)), K("axis", onnx_i32(c, 0)),
                                                        K("ascending", onnx_bool(c, true))});
  if (!tk) return MIL_ERR_TYPE;
  mil_var *shape = ONNX_OP(c, "gather", A("x", onnx_shape_of(c, x)), A("indices", tk->outputs[1]), K("axis", onnx_i32(c, 0)));
  return onnx_set_out(c, n, 0, ONNX_OP(c, "reshape", A("x", x), A("shape", shape)));
}

static mil_status conv_squeeze(onnx_ctx *c, onnx_node *n) {
  mil_var *x = onnx_req(c, n, 0);
  if (!x) return MIL_ERR_INVALID;
  int64_t *axes;
  int32_t k = ints_arg(c, n, "axes", 13, 1, &axes);
  if (k == -2) return squeeze_dynamic(c, n, x, onnx_in(n, 1));
  mil_var *r;
  if (onnx_rank(x) == 0) r = ONNX_OP(c, "identity", A("x", x));
  else if (k < 0) r = ONNX_OP(c, "squeeze", A("x", x));
  else {
    /* ONNX removes each listed axis (its dim must be 1); MIL's squeeze
     * keeps a dim whose size is known only at run time (coremltools'
     * type inference): then a reshape to the kept dims of shape(x) */
    int32_t rk = onnx_rank(x);
    bool drop[MIL_INTERP_MAX_RANK_ONNX] = {false}, sym = false;
    for (int32_t i = 0; i < k && rk > 0 && rk <= MIL_INTERP_MAX_RANK_ONNX; i++) {
      int64_t a = axes[i];
      if (!onnx_axis(&a, rk)) return onnx_fail(c, MIL_ERR_INVALID, "axis %lld is out of range for rank %d", (long long)axes[i], (int)rk);
      drop[a] = true;
      sym |= x->type->dims[a].size < 0;
    }
    if (sym) {
      int64_t keep[MIL_INTERP_MAX_RANK_ONNX];
      int32_t nk = 0;
      for (int32_t i = 0; i < rk; i++)
        if (!drop[i]) keep[nk++] = i;
      mil_var *shape = nk ? ONNX_OP(c, "gather", A("x", onnx_shape_of(c, x)), K("indices", onnx_i32s(c, nk, keep)),
                                    K("axis", onnx_i32(c, 0)))
                          : onnx_const(c, onnx_i32s(c, 0, NULL));
      r = shape ? ONNX_OP(c, "reshape", A("x", x), A("shape", shape)) : NULL;
    } else
      r = ONNX_OP(c, "squeeze", A("x", x), K("axes", onnx_i32s(c, k, axes)));
  }
  return onnx_set_out(c, n, 0, r);
}

static mil_status conv_unsqueeze(onnx_ctx *c, onnx_node *n) {
  mil_var *x = onnx_req(c, n, 0);
  if (!x) return MIL_ERR_INVALID;
  int64_t *axes;
  int32_t k = ints_arg(c, n, "axes", 13, 1, &axes);
  if (k == -2) return unsqueeze_dynamic(c, n, x, onnx_in(n, 1));
  if (k < 0) return onnx_fail(c, MIL_ERR_INVALID, "axes are required");
  /* ONNX axes refer to the output rank; sorted ascending, expand_dims
   * inserts them in that order */
  int32_t out_rank = onnx_rank(x) + k;
  int64_t *s = mil_program_alloc(c->p, (size_t)(k ? k : 1) * sizeof *s);
  if (!s) return MIL_ERR_NOMEM;
  for (int32_t i = 0; i < k; i++) s[i] = axes[i] < 0 ? axes[i] + out_rank : axes[i];
  for (int32_t i = 1; i < k; i++)
    for (int32_t j = i; j > 0 && s[j - 1] > s[j]; j--) {
      int64_t t = s[j];
      s[j] = s[j - 1];
      s[j - 1] = t;
    }
  return onnx_set_out(c, n, 0, ONNX_OP(c, "expand_dims", A("x", x), K("axes", onnx_i32s(c, k, s))));
}

static mil_status conv_concat(onnx_ctx *c, onnx_node *n) {
  mil_var **vs = mil_program_alloc(c->p, (size_t)(n->n_in ? n->n_in : 1) * sizeof *vs);
  if (!vs) return MIL_ERR_NOMEM;
  int32_t k = 0;
  for (int32_t i = 0; i < n->n_in; i++) {
    mil_var *v = onnx_in(n, i);
    /* empty inputs (a 0-length dim) add nothing */
    if (v && !(v->type && mil_type_numel(v->type) == 0 && n->n_in > 1)) vs[k++] = v;
  }
  if (!k) return onnx_fail(c, MIL_ERR_INVALID, "no inputs");
  int64_t axis = onnx_attr_i(n, "axis", n->opset < 4 ? 1 : 0);
  if (axis < 0) axis += onnx_rank(vs[0]);
  mil_var *r = k == 1 ? ONNX_OP(c, "identity", A("x", vs[0]))
                      : ONNX_OP(c, "concat", AT("values", vs, k), K("axis", onnx_i32(c, axis)),
                                K("interleave", onnx_bool(c, false)));
  return onnx_set_out(c, n, 0, r);
}

/* Element j of a rank-1 int var as a rank-1 length-1 var. */
static mil_var *elem1(onnx_ctx *c, mil_var *v, int64_t j) {
  int64_t e = j + 1;
  return ONNX_OP(c, "slice_by_index", A("x", onnx_cast(c, v, MIL_DT_INT32)), K("begin", onnx_i32s(c, 1, &j)),
                 K("end", onnx_i32s(c, 1, &e)));
}

static mil_status conv_split(onnx_ctx *c, onnx_node *n) {
  mil_var *x = onnx_req(c, n, 0);
  if (!x) return MIL_ERR_INVALID;
  int32_t rank = onnx_rank(x);
  if (rank < 1) return onnx_fail(c, MIL_ERR_INVALID, "the input to split has rank %d (at least 1 needed)", (int)rank);
  int64_t axis = onnx_attr_i(n, "axis", 0);
  if (!onnx_axis(&axis, rank)) return onnx_fail(c, MIL_ERR_INVALID, "axis out of range");
  int64_t *sizes;
  int32_t k = ints_arg(c, n, "split", 13, 1, &sizes);
  if (k == -2) {
    /* sizes at run time: slices between their running sums */
    mil_var *sz = onnx_cast(c, onnx_in(n, 1), MIL_DT_INT32);
    mil_var *ends = ONNX_OP(c, "cumsum", A("x", sz), K("axis", onnx_i32(c, 0)));
    mil_var *zero = onnx_const(c, onnx_i32s(c, 1, (int64_t[]){0}));
    mil_value *m = mil_value_new_tensor(c->p, MIL_DT_BOOL, 1, (int64_t[]){rank}, false, NULL);
    if (!m || !ends || rank > MIL_INTERP_MAX_RANK_ONNX) return MIL_ERR_TYPE;
    for (int32_t d = 0; d < rank; d++) mil_value_set_i64(m, d, d != axis);
    for (int32_t i = 0; i < n->n_out; i++) {
      mil_var *bp[MIL_INTERP_MAX_RANK_ONNX], *ep[MIL_INTERP_MAX_RANK_ONNX];
      for (int32_t d = 0; d < rank; d++) bp[d] = ep[d] = zero;
      bp[axis] = i == 0 ? zero : elem1(c, ends, i - 1);
      ep[axis] = elem1(c, ends, i);
      mil_var *b = rank == 1 ? bp[0] : ONNX_OP(c, "concat", AT("values", bp, rank), K("axis", onnx_i32(c, 0)));
      mil_var *e = rank == 1 ? ep[0] : ONNX_OP(c, "concat", AT("values", ep, rank), K("axis", onnx_i32(c, 0)));
      mil_status st = onnx_set_out(c, n, i, ONNX_OP(c, "slice_by_index", A("x", x), A("begin", b), A("end", e), K("begin_mask", m),
                                                    K("end_mask", m)));
      if (st != MIL_OK) return st;
    }
    return MIL_OK;
  }
  mil_op *op;
  if (k >= 0) {
    op = onnx_op_full(c, "split", 3,
                      (pass_barg[]){A("x", x), K("split_sizes", onnx_i32s(c, k, sizes)), K("axis", onnx_i32(c, axis))});
  } else {
    int64_t dim = x->type->dims[axis].size;
    int32_t parts = n->n_out;
    if (dim >= 0 && dim % parts != 0) {
      /* opset 18: the last chunk is smaller */
      int64_t chunk = (dim + parts - 1) / parts;
      int64_t *ss = mil_program_alloc(c->p, (size_t)parts * sizeof *ss);
      if (!ss) return MIL_ERR_NOMEM;
      for (int32_t i = 0; i < parts; i++) ss[i] = i < parts - 1 ? chunk : dim - chunk * (parts - 1);
      op = onnx_op_full(c, "split", 3,
                        (pass_barg[]){A("x", x), K("split_sizes", onnx_i32s(c, parts, ss)), K("axis", onnx_i32(c, axis))});
    } else
      op = onnx_op_full(c, "split", 3,
                        (pass_barg[]){A("x", x), K("num_splits", onnx_i32(c, parts)), K("axis", onnx_i32(c, axis))});
  }
  if (!op) return MIL_ERR_TYPE;
  for (int32_t i = 0; i < n->n_out && i < op->n_outputs; i++) {
    mil_status st = onnx_set_out(c, n, i, op->outputs[i]);
    if (st != MIL_OK) return st;
  }
  return MIL_OK;
}

/* Slice with starts / ends computed at run time (axes and steps known):
 * begin and end vectors gathered from them, masks for the other dims. */
static mil_status slice_dynamic(onnx_ctx *c, onnx_node *n, mil_var *x, int32_t na, const int64_t *ax, int32_t np,
                                const int64_t *sp) {
  int32_t rank = onnx_rank(x);
  mil_var *st = onnx_req(c, n, 1), *en = onnx_req(c, n, 2);
  if (!st || !en || onnx_rank(st) != 1 || st->type->dims[0].size < 0) return ONNX_UNSUP(c, "starts of unknown length");
  int32_t cnt = (int32_t)st->type->dims[0].size;
  mil_var *bp[MIL_INTERP_MAX_RANK_ONNX], *ep[MIL_INTERP_MAX_RANK_ONNX];
  int64_t s[MIL_INTERP_MAX_RANK_ONNX];
  mil_value *bm = mil_value_new_tensor(c->p, MIL_DT_BOOL, 1, (int64_t[]){rank}, false, NULL);
  mil_value *em = mil_value_new_tensor(c->p, MIL_DT_BOOL, 1, (int64_t[]){rank}, false, NULL);
  if (!bm || !em) return MIL_ERR_NOMEM;
  mil_var *zero = onnx_const(c, onnx_i32s(c, 1, (int64_t[]){0}));
  for (int32_t d = 0; d < rank; d++) bp[d] = ep[d] = zero, s[d] = 1, mil_value_set_i64(bm, d, 1), mil_value_set_i64(em, d, 1);
  for (int32_t j = 0; j < cnt; j++) {
    int64_t a = na >= 0 ? ax[j] : j;
    if (!onnx_axis(&a, rank)) return onnx_fail(c, MIL_ERR_INVALID, "axis out of range");
    bp[a] = elem1(c, st, j);
    ep[a] = elem1(c, en, j);
    s[a] = np >= 0 ? sp[j] : 1;
    mil_value_set_i64(bm, a, 0);
    mil_value_set_i64(em, a, 0);
  }
  mil_var *b = ONNX_OP(c, "concat", AT("values", bp, rank), K("axis", onnx_i32(c, 0)));
  mil_var *e = ONNX_OP(c, "concat", AT("values", ep, rank), K("axis", onnx_i32(c, 0)));
  return onnx_set_out(c, n, 0, ONNX_OP(c, "slice_by_index", A("x", x), A("begin", b), A("end", e),
                                       K("stride", onnx_i32s(c, rank, s)), K("begin_mask", bm), K("end_mask", em)));
}

/* Slice with axes or steps computed at run time: per dim d, the entry j of
 * axes naming d (if any) gives start / end / step, clamped as ONNX does
 * (to [0, dim] for a positive step, start to [0, dim - 1] and end to
 * [-1, dim - 1] for a negative one), then a gather of range(start, end,
 * step) along d. */
static mil_status slice_gather(onnx_ctx *c, onnx_node *n, mil_var *x) {
  int32_t rank = onnx_rank(x);
  mil_var *st = onnx_req(c, n, 1), *en = onnx_req(c, n, 2), *ax = onnx_in(n, 3), *sp = onnx_in(n, 4);
  if (!st || !en || onnx_rank(st) != 1 || st->type->dims[0].size < 0) return ONNX_UNSUP(c, "starts of unknown length");
  int64_t k = st->type->dims[0].size;
  st = onnx_cast(c, st, MIL_DT_INT32);
  en = onnx_cast(c, en, MIL_DT_INT32);
  mil_var *axn = ax ? ONNX_OP(c, "mod", A("x", onnx_cast(c, ax, MIL_DT_INT32)), K("y", onnx_i32(c, rank)))
                    : ONNX_OP(c, "range_1d", K("start", onnx_i32(c, 0)), K("end", onnx_i32(c, k)), K("step", onnx_i32(c, 1)));
  mil_var *stp = sp ? onnx_cast(c, sp, MIL_DT_INT32) : NULL;
  mil_var *shape = onnx_shape_of(c, x), *r = x;
  for (int64_t d = 0; d < rank && r; d++) {
    mil_var *hit = ONNX_OP(c, "equal", A("x", axn), K("y", onnx_i32(c, d)));
    mil_var *hiti = onnx_cast(c, hit, MIL_DT_INT32);
    mil_var *present = ONNX_OP(c, "greater", A("x", ONNX_OP(c, "reduce_max", A("x", hiti))), K("y", onnx_i32(c, 0)));
    mil_var *j = ONNX_OP(c, "reduce_argmax", A("x", hiti), K("axis", onnx_i32(c, 0)));
    mil_var *dim = ONNX_OP(c, "gather", A("x", shape), K("indices", onnx_i32(c, d)), K("axis", onnx_i32(c, 0)));
    mil_var *s0 = ONNX_OP(c, "gather", A("x", st), A("indices", j), K("axis", onnx_i32(c, 0)));
    mil_var *e0 = ONNX_OP(c, "gather", A("x", en), A("indices", j), K("axis", onnx_i32(c, 0)));
    mil_var *step = stp ? ONNX_OP(c, "gather", A("x", stp), A("indices", j), K("axis", onnx_i32(c, 0))) : onnx_const(c, onnx_i32(c, 1));
    s0 = ONNX_OP(c, "select", A("cond", ONNX_OP(c, "less", A("x", s0), K("y", onnx_i32(c, 0)))), A("a", ONNX_OP(c, "add", A("x", s0), A("y", dim))), A("b", s0));
    e0 = ONNX_OP(c, "select", A("cond", ONNX_OP(c, "less", A("x", e0), K("y", onnx_i32(c, 0)))), A("a", ONNX_OP(c, "add", A("x", e0), A("y", dim))), A("b", e0));
    mil_var *neg = ONNX_OP(c, "less", A("x", step), K("y", onnx_i32(c, 0)));
    mil_var *dm1 = ONNX_OP(c, "sub", A("x", dim), K("y", onnx_i32(c, 1)));
    /* positive step: [0, dim]; negative: start [0, dim - 1], end [-1, dim - 1] */
    mil_var *hi_s = ONNX_OP(c, "select", A("cond", neg), A("a", dm1), A("b", dim));
    mil_var *lo_e = ONNX_OP(c, "select", A("cond", neg), K("a", onnx_i32(c, -1)), K("b", onnx_i32(c, 0)));
    s0 = ONNX_OP(c, "minimum", A("x", ONNX_OP(c, "maximum", A("x", s0), K("y", onnx_i32(c, 0)))), A("y", hi_s));
    e0 = ONNX_OP(c, "minimum", A("x", ONNX_OP(c, "maximum", A("x", e0), A("y", lo_e))), A("y", hi_s));
    /* a dim no axis names is kept whole */
    s0 = ONNX_OP(c, "select", A("cond", present), A("a", s0), K("b", onnx_i32(c, 0)));
    e0 = ONNX_OP(c, "select", A("cond", present), A("a", e0), A("b", dim));
    step = ONNX_OP(c, "select", A("cond", present), A("a", step), K("b", onnx_i32(c, 1)));
    /* an empty range where the step points away from end */
    mil_var *empty = ONNX_OP(c, "logical_or", A("x", ONNX_OP(c, "logical_and", A("x", neg), A("y", ONNX_OP(c, "greater_equal", A("x", e0), A("y", s0))))),
                             A("y", ONNX_OP(c, "logical_and", A("x", ONNX_OP(c, "logical_not", A("x", neg))), A("y", ONNX_OP(c, "less_equal", A("x", e0), A("y", s0))))));
    e0 = ONNX_OP(c, "select", A("cond", empty), A("a", s0), A("b", e0));
    mil_var *idx = ONNX_OP(c, "range_1d", A("start", s0), A("end", e0), A("step", step));
    r = ONNX_OP(c, "gather", A("x", r), A("indices", idx), K("axis", onnx_i32(c, d)));
  }
  return onnx_set_out(c, n, 0, r);
}

/* Slice: starts/ends/axes/steps as attributes before opset 10, inputs
 * from 10. Known values become one slice_by_index with begin/end masks;
 * unknown starts/ends are gathered into full begin/end vectors. */
static mil_status conv_slice(onnx_ctx *c, onnx_node *n) {
  mil_var *x = onnx_req(c, n, 0);
  if (!x) return MIL_ERR_INVALID;
  int32_t rank = onnx_rank(x);
  if (rank < 0 || rank > MIL_INTERP_MAX_RANK_ONNX) return ONNX_UNSUP(c, "input of unknown or large rank");
  int64_t *st, *en, *ax = NULL, *sp = NULL;
  int32_t ns = ints_arg(c, n, "starts", 10, 1, &st), ne = ints_arg(c, n, "ends", 10, 2, &en);
  int32_t na = ints_arg(c, n, "axes", 10, 3, &ax), np = n->opset >= 10 ? ints_arg(c, n, "steps", 10, 4, &sp) : -1;
  if (na == -2 || np == -2) return slice_gather(c, n, x);
  if (ns == -2 || ne == -2) return slice_dynamic(c, n, x, na, ax, np, sp);
  if (ns < 0 || ne != ns) return onnx_fail(c, MIL_ERR_INVALID, "starts and ends must have the same length");
  int64_t b[MIL_INTERP_MAX_RANK_ONNX], e[MIL_INTERP_MAX_RANK_ONNX], s[MIL_INTERP_MAX_RANK_ONNX];
  int64_t bm[MIL_INTERP_MAX_RANK_ONNX], em[MIL_INTERP_MAX_RANK_ONNX];
  for (int32_t i = 0; i < rank; i++) b[i] = 0, e[i] = 0, s[i] = 1, bm[i] = 1, em[i] = 1;
  for (int32_t i = 0; i < ns; i++) {
    int64_t a = na >= 0 ? ax[i] : i;
    if (!onnx_axis(&a, rank)) return onnx_fail(c, MIL_ERR_INVALID, "axis %lld out of range", (long long)a);
    int64_t step = np >= 0 ? sp[i] : 1;
    if (step == 0) return onnx_fail(c, MIL_ERR_INVALID, "step 0");
    int64_t dim = x->type->dims[a].size;
    int64_t bb = st[i], ee = en[i];
    /* clamp as ONNX does when the dim is known */
    if (dim >= 0) {
      if (bb < 0) bb += dim;
      if (ee < 0 && ee > INT32_MIN) ee += dim;
      if (step > 0) {
        bb = bb < 0 ? 0 : bb > dim ? dim : bb;
        ee = ee < 0 ? 0 : ee > dim ? dim : ee;
      } else {
        bb = bb < 0 ? -1 : bb > dim - 1 ? dim - 1 : bb;
        ee = ee < -1 ? -1 : ee > dim - 1 ? dim - 1 : ee;
      }
      b[a] = bb;
      e[a] = ee;
      bm[a] = 0;
      em[a] = 0;
      if (step < 0 && ee == -1) em[a] = 1, e[a] = 0; /* down to the first element */
    } else {
      b[a] = bb;
      e[a] = ee;
      bm[a] = 0;
      em[a] = (step > 0 && ee >= INT32_MAX) || (step < 0 && ee <= INT32_MIN);
      if (em[a]) e[a] = 0;
    }
    s[a] = step;
  }
  mil_value *bmv = mil_value_new_tensor(c->p, MIL_DT_BOOL, 1, (int64_t[]){rank}, false, NULL);
  mil_value *emv = mil_value_new_tensor(c->p, MIL_DT_BOOL, 1, (int64_t[]){rank}, false, NULL);
  if (!bmv || !emv) return MIL_ERR_NOMEM;
  for (int32_t i = 0; i < rank; i++) {
    mil_value_set_i64(bmv, i, bm[i]);
    mil_value_set_i64(emv, i, em[i]);
  }
  mil_var *r = ONNX_OP(c, "slice_by_index", A("x", x), K("begin", onnx_i32s(c, rank, b)), K("end", onnx_i32s(c, rank, e)),
                       K("stride", onnx_i32s(c, rank, s)), K("begin_mask", bmv), K("end_mask", emv));
  return onnx_set_out(c, n, 0, r);
}

/* Expand: numpy broadcasting of x against shape: x * ones(shape), or
 * tile when the shape is known (coremltools' torch expand uses tile). */
static mil_status conv_expand(onnx_ctx *c, onnx_node *n) {
  mil_var *x = onnx_req(c, n, 0), *shape = onnx_req(c, n, 1);
  if (!x || !shape) return MIL_ERR_INVALID;
  mil_status cst = onnx_refuse_clipped(c, n, 1, "shape");
  if (cst != MIL_OK) return cst;
  mil_dtype dt = onnx_dtype(x);
  mil_var *ones = ONNX_OP(c, "fill", A("shape", onnx_cast(c, shape, MIL_DT_INT32)),
                          K("value", onnx_fscalar(c, dt == MIL_DT_BOOL ? MIL_DT_INT32 : dt, dt == MIL_DT_BOOL ? 0 : 0)));
  mil_var *r;
  if (dt == MIL_DT_BOOL) {
    mil_var *xi = onnx_cast(c, x, MIL_DT_INT32);
    r = onnx_cast(c, ONNX_OP(c, "add", A("x", xi), A("y", ones)), MIL_DT_BOOL);
  } else r = ONNX_OP(c, "add", A("x", x), A("y", ones));
  return onnx_set_out(c, n, 0, r);
}

static mil_status conv_tile(onnx_ctx *c, onnx_node *n) {
  mil_var *x = onnx_req(c, n, 0), *reps = onnx_req(c, n, 1);
  if (!x || !reps) return MIL_ERR_INVALID;
  mil_status cst = onnx_refuse_clipped(c, n, 1, "repeats");
  if (cst != MIL_OK) return cst;
  return onnx_set_out(c, n, 0, ONNX_OP(c, "tile", A("x", x), A("reps", onnx_cast(c, reps, MIL_DT_INT32))));
}

/* Pad with pads computed at run time (no axes): ONNX's [begins, ends]
 * reordered to MIL's [b0, e0, b1, e1, ...] by reshape / transpose; a
 * constant_value computed at run time fills through a mask. */
static mil_status pad_dynamic(onnx_ctx *c, onnx_node *n, mil_var *x) {
  int32_t rank = onnx_rank(x);
  if (onnx_in(n, 3)) return ONNX_UNSUP(c, "axes with pads computed at run time");
  const char *mode = onnx_attr_s(c, n, "mode", "constant");
  const char *mm = strcmp(mode, "reflect") == 0 ? "reflect" : strcmp(mode, "edge") == 0 ? "replicate" : strcmp(mode, "constant") == 0 ? "constant" : NULL;
  if (!mm) return ONNX_UNSUP(c, "mode '%s'", mode);
  mil_dtype xdt = onnx_dtype(x);
  if (!mil_dtype_is_float(xdt)) x = onnx_cast(c, x, MIL_DT_FP32); /* pad takes floats (as the known-pads path) */
  mil_dtype dt = onnx_dtype(x);
  mil_var *p = ONNX_OP(c, "reshape", A("x", onnx_cast(c, onnx_in(n, 1), MIL_DT_INT32)), K("shape", onnx_i32s(c, 2, (int64_t[]){2, rank})));
  p = ONNX_OP(c, "transpose", A("x", p), K("perm", onnx_i32s(c, 2, (int64_t[]){1, 0})));
  p = ONNX_OP(c, "reshape", A("x", p), K("shape", onnx_i32s(c, 1, (int64_t[]){2 * rank})));
  mil_var *cv = onnx_in(n, 2);
  const mil_value *cval = onnx_val(cv);
  double value = cval && cval->numel ? mil_value_get_f64(cval, 0) : 0;
  mil_var *r = ONNX_OP(c, "pad", A("x", x), A("pad", p), K("mode", onnx_str(c, mm)), K("constant_val", onnx_fscalar(c, dt, value)));
  if (cv && !cval && !strcmp(mm, "constant")) {
    /* + value where padded: the padded positions are where a padded ones tensor is 0 */
    mil_var *ones = ONNX_OP(c, "add", A("x", ONNX_OP(c, "mul", A("x", x), K("y", onnx_fscalar(c, dt, 0)))), K("y", onnx_fscalar(c, dt, 1)));
    mil_var *in = ONNX_OP(c, "pad", A("x", ones), A("pad", p), K("mode", onnx_str(c, "constant")), K("constant_val", onnx_fscalar(c, dt, 0)));
    mil_var *outside = ONNX_OP(c, "sub", K("x", onnx_fscalar(c, dt, 1)), A("y", in));
    mil_var *v = onnx_rank(cv) > 0 ? ONNX_OP(c, "reshape", A("x", cv), K("shape", onnx_i32s(c, 0, NULL))) : cv;
    r = ONNX_OP(c, "add", A("x", r), A("y", ONNX_OP(c, "mul", A("x", outside), A("y", onnx_cast(c, v, dt)))));
  }
  return onnx_set_out(c, n, 0, onnx_cast(c, r, xdt));
}

/* Pad: pads attribute (opset < 11, with `value`), inputs pads /
 * constant_value / axes (11, 18). ONNX order [x1_begin, x2_begin, ...,
 * x1_end, ...] becomes MIL's [x1_begin, x1_end, ...] over the last dims. */
static mil_status conv_pad(onnx_ctx *c, onnx_node *n) {
  mil_var *x = onnx_req(c, n, 0);
  if (!x) return MIL_ERR_INVALID;
  int32_t rank = onnx_rank(x);
  int64_t *pads;
  int32_t k = ints_arg(c, n, "pads", 11, 1, &pads);
  if (k == -2) return pad_dynamic(c, n, x);
  if (k < 0) return onnx_fail(c, MIL_ERR_INVALID, "pads are required");
  const char *mode = onnx_attr_s(c, n, "mode", "constant");
  double value = 0;
  if (n->opset < 11) value = onnx_attr_f(n, "value", 0);
  else if (onnx_in(n, 2)) {
    const mil_value *cv = onnx_val(onnx_in(n, 2));
    if (!cv) return ONNX_UNSUP(c, "constant_value not known at conversion time");
    if (cv->numel) value = mil_value_get_f64(cv, 0);
  }
  int64_t *axes = NULL;
  int32_t na = n->opset >= 18 ? ints_arg(c, n, "axes", 18, 3, &axes) : -1;
  if (na == -2) return ONNX_UNSUP(c, "axes not known at conversion time");
  int64_t full[2 * MIL_INTERP_MAX_RANK_ONNX] = {0};
  int32_t cnt = na >= 0 ? na : k / 2;
  if (rank < 0 || rank > MIL_INTERP_MAX_RANK_ONNX || k != 2 * cnt) return onnx_fail(c, MIL_ERR_INVALID, "pads has %d entries", (int)k);
  for (int32_t i = 0; i < cnt; i++) {
    int64_t a = na >= 0 ? axes[i] : i;
    if (!onnx_axis(&a, rank)) return onnx_fail(c, MIL_ERR_INVALID, "axis out of range");
    full[2 * a] = pads[i];
    full[2 * a + 1] = pads[i + cnt];
  }
  int32_t first = 0;
  while (first < rank && full[2 * first] == 0 && full[2 * first + 1] == 0) first++;
  if (first == rank) return onnx_set_out(c, n, 0, ONNX_OP(c, "identity", A("x", x)));
  const char *mm = strcmp(mode, "reflect") == 0 ? "reflect" : strcmp(mode, "edge") == 0 ? "replicate" : "constant";
  if (strcmp(mode, "wrap") == 0) return ONNX_UNSUP(c, "mode 'wrap' has no MIL counterpart");
  for (int32_t i = 0; i < 2 * rank; i++)
    if (full[i] < 0) return ONNX_UNSUP(c, "negative pads (cropping)");
  mil_dtype dt = onnx_dtype(x);
  mil_var *xf = mil_dtype_is_float(dt) ? x : onnx_cast(c, x, MIL_DT_FP32);
  mil_var *r = ONNX_OP(c, "pad", A("x", xf), K("pad", onnx_i32s(c, 2 * (rank - first), full + 2 * first)),
                       K("mode", onnx_str(c, mm)), K("constant_val", onnx_fscalar(c, onnx_dtype(xf), value)));
  return onnx_set_out(c, n, 0, onnx_cast(c, r, dt));
}

static mil_status conv_depth_space(onnx_ctx *c, onnx_node *n) {
  mil_var *x = onnx_req(c, n, 0);
  if (!x) return MIL_ERR_INVALID;
  int64_t bs = onnx_attr_i(n, "blocksize", 0);
  if (bs < 1 || bs > (1 << 15))
    return onnx_fail(c, MIL_ERR_INVALID, "attribute 'blocksize' must be a positive integer (at most 32768), got %lld",
                     (long long)bs);
  bool d2s = strcmp(n->op_type, "DepthToSpace") == 0;
  if (d2s && strcmp(onnx_attr_s(c, n, "mode", "DCR"), "CRD") == 0) {
    /* CRD: reshape [N, C/bs^2, bs, bs, H, W] -> transpose -> reshape */
    const mil_type *t = x->type;
    if (onnx_rank(x) != 4 || !mil_type_is_static(t)) return ONNX_UNSUP(c, "CRD mode needs a static 4-D input");
    int64_t N = t->dims[0].size, C = t->dims[1].size, H = t->dims[2].size, W = t->dims[3].size;
    int64_t s1[6] = {N, C / (bs * bs), bs, bs, H, W}, perm[6] = {0, 1, 4, 2, 5, 3}, s2[4] = {N, C / (bs * bs), H * bs, W * bs};
    mil_var *r = ONNX_OP(c, "reshape", A("x", x), K("shape", onnx_i32s(c, 6, s1)));
    r = ONNX_OP(c, "transpose", A("x", r), K("perm", onnx_i32s(c, 6, perm)));
    return onnx_set_out(c, n, 0, ONNX_OP(c, "reshape", A("x", r), K("shape", onnx_i32s(c, 4, s2))));
  }
  return onnx_set_out(c, n, 0, ONNX_OP(c, d2s ? "depth_to_space" : "space_to_depth", A("x", x),
                                       K("block_size", onnx_i32(c, bs))));
}

const onnx_op_entry onnx_ops_tensor[] = {
    {"Reshape", "", 1, 0, conv_reshape, "reshape"},
    {"Flatten", "", 1, 0, conv_flatten, "reshape"},
    {"Transpose", "", 1, 0, conv_transpose, "transpose"},
    {"Squeeze", "", 1, 0, conv_squeeze, "squeeze"},
    {"Unsqueeze", "", 1, 0, conv_unsqueeze, "expand_dims"},
    {"Concat", "", 1, 0, conv_concat, "concat"},
    {"Split", "", 1, 0, conv_split, "split"},
    {"Slice", "", 1, 0, conv_slice, "slice_by_index"},
    {"Expand", "", 8, 0, conv_expand, "fill, add"},
    {"Tile", "", 1, 0, conv_tile, "tile"},
    {"Pad", "", 2, 0, conv_pad, "pad"},
    {"DepthToSpace", "", 1, 0, conv_depth_space, "depth_to_space"},
    {"SpaceToDepth", "", 1, 0, conv_depth_space, "space_to_depth"},
    {NULL, NULL, 0, 0, NULL, NULL},
};
