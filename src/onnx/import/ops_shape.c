/* ONNX shape, constant and indexing ops: Shape, Size, Constant,
 * ConstantOfShape, Range, EyeLike, Trilu, Gather, GatherElements,
 * GatherND, ScatterElements, ScatterND, OneHot, TopK, CumSum, NonZero.
 * Shape arithmetic folds as it is built (value inference), so
 * Shape -> Gather -> Concat -> Reshape chains end as consts. MIL ops as
 * coremltools' torch frontend emits them (shape, gather, range_1d, fill,
 * band_part, gather_along_axis, gather_nd, scatter_along_axis, scatter_nd,
 * one_hot, topk, cumsum, non_zero). */
#include <string.h>

#include "onnx/import/import_internal.h"

static mil_status conv_shape(onnx_ctx *c, onnx_node *n) {
  mil_var *x = onnx_req(c, n, 0);
  if (!x) return MIL_ERR_INVALID;
  mil_var *s = onnx_shape_of(c, x);
  int32_t rank = onnx_rank(x);
  int64_t b = onnx_attr_i(n, "start", 0), e = onnx_attr_i(n, "end", rank);
  if (b < 0) b += rank;
  if (e < 0) e += rank;
  b = b < 0 ? 0 : b > rank ? rank : b;
  e = e < 0 ? 0 : e > rank ? rank : e;
  if (s && (b != 0 || e != rank))
    s = ONNX_OP(c, "slice_by_index", A("x", s), K("begin", onnx_i32s(c, 1, &b)), K("end", onnx_i32s(c, 1, &e)));
  return onnx_set_out(c, n, 0, s);
}

static mil_status conv_size(onnx_ctx *c, onnx_node *n) {
  mil_var *x = onnx_req(c, n, 0);
  if (!x) return MIL_ERR_INVALID;
  mil_var *s = onnx_shape_of(c, x);
  return onnx_set_out(c, n, 0, ONNX_OP(c, "reduce_prod", A("x", s), K("keep_dims", onnx_bool(c, false))));
}

static mil_status conv_constant(onnx_ctx *c, onnx_node *n) {
  if (!onnx_out_used(n, 0)) return MIL_OK; /* an unnamed output: nothing reads it */
  mil_value *v = NULL;
  const Onnx__AttributeProto *a;
  if ((a = onnx_attr(n, "value")) && a->t) {
    mil_status st = onnx_tensor_value(c, a->t, &v);
    if (st != MIL_OK) return st;
  } else if ((a = onnx_attr(n, "value_float"))) v = onnx_f32(c, a->f);
  else if ((a = onnx_attr(n, "value_int"))) v = onnx_i32(c, a->i);
  else if ((a = onnx_attr(n, "value_floats"))) {
    int64_t k = (int64_t)a->n_floats;
    v = mil_value_new_tensor(c->p, MIL_DT_FP32, 1, &k, false, NULL);
    for (int64_t i = 0; v && i < k; i++) mil_value_set_f64(v, i, a->floats[i]);
  } else if ((a = onnx_attr(n, "value_ints"))) v = onnx_i32s(c, (int32_t)a->n_ints, a->ints);
  else return ONNX_UNSUP(c, "only value, value_float(s) and value_int(s) constants are converted");
  if (!v) return MIL_ERR_NOMEM;
  mil_op *op = mil_const_new(c->p, onnx_sanitize(c, n->proto->output[0]), v);
  if (!op) return MIL_ERR_NOMEM;
  mil_block_append(c->blk, op);
  (void)pass_ptrset_add(&c->named, op->outputs[0]);
  return onnx_bind(c, n->proto->output[0], op->outputs[0]);
}

static mil_status conv_constant_of_shape(onnx_ctx *c, onnx_node *n) {
  mil_var *shape = onnx_req(c, n, 0);
  if (!shape) return MIL_ERR_INVALID;
  mil_status cst = onnx_refuse_clipped(c, n, 0, "shape");
  if (cst != MIL_OK) return cst;
  mil_value *val = onnx_f32(c, 0);
  const Onnx__AttributeProto *a = onnx_attr(n, "value");
  if (a && a->t) {
    mil_value *t;
    mil_status st = onnx_tensor_value(c, a->t, &t);
    if (st != MIL_OK) return st;
    val = mil_dtype_is_float(t->type->dtype) ? onnx_fscalar(c, t->type->dtype, mil_value_get_f64(t, 0))
          : t->type->dtype == MIL_DT_BOOL   ? onnx_bool(c, mil_value_get_i64(t, 0) != 0)
                                            : onnx_i32(c, mil_value_get_i64(t, 0));
  }
  mil_var *s = onnx_cast(c, shape, MIL_DT_INT32);
  const mil_value *sv = onnx_val(s);
  if (sv && sv->numel == 0) /* a scalar */
    return onnx_set_out(c, n, 0, onnx_const(c, val));
  return onnx_set_out(c, n, 0, ONNX_OP(c, "fill", A("shape", s), K("value", val)));
}

static mil_status conv_range(onnx_ctx *c, onnx_node *n) {
  mil_var *s = onnx_req(c, n, 0), *l = onnx_req(c, n, 1), *d = onnx_req(c, n, 2);
  if (!s || !l || !d) return MIL_ERR_INVALID;
  static const char *const what[] = {"start", "limit", "delta"};
  for (int32_t i = 0; i < 3; i++) {
    mil_status cst = onnx_refuse_clipped(c, n, i, what[i]);
    if (cst != MIL_OK) return cst;
  }
  return onnx_set_out(c, n, 0, ONNX_OP(c, "range_1d", A("start", s), A("end", l), A("step", d)));
}

/* Trilu: band_part with the diagonal offset k (known) as coremltools' torch
 * triu/tril; k != 0 via a mask built from range_1d comparisons. */
static mil_status conv_trilu(onnx_ctx *c, onnx_node *n) {
  mil_var *x = onnx_req(c, n, 0);
  if (!x) return MIL_ERR_INVALID;
  bool upper = onnx_attr_i(n, "upper", 1) != 0;
  int64_t k = 0;
  mil_var *kvar = NULL; /* k computed at run time */
  if (onnx_in(n, 1)) {
    const mil_value *kv = onnx_val(onnx_in(n, 1));
    if (kv) k = mil_value_get_i64(kv, 0);
    else {
      kvar = onnx_cast(c, onnx_in(n, 1), MIL_DT_INT32);
      if (onnx_rank(kvar) > 0) kvar = ONNX_OP(c, "squeeze", A("x", kvar));
      if (!kvar) return MIL_ERR_TYPE;
    }
  }
  int32_t rank = onnx_rank(x);
  if (rank < 2) return onnx_fail(c, MIL_ERR_INVALID, "input must have rank >= 2");
  if (k == 0 && !kvar)
    return onnx_set_out(c, n, 0, ONNX_OP(c, "band_part", A("x", x), K("lower", onnx_i32(c, upper ? 0 : -1)),
                                         K("upper", onnx_i32(c, upper ? -1 : 0))));
  /* mask[i, j] = j - i >= k (upper) or j - i <= k (lower) */
  mil_var *sh = onnx_shape_of(c, x);
  mil_var *rows = ONNX_OP(c, "gather", A("x", sh), K("indices", onnx_i32(c, rank - 2)), K("axis", onnx_i32(c, 0)));
  mil_var *cols = ONNX_OP(c, "gather", A("x", sh), K("indices", onnx_i32(c, rank - 1)), K("axis", onnx_i32(c, 0)));
  mil_var *ri = ONNX_OP(c, "range_1d", K("start", onnx_i32(c, 0)), A("end", rows), K("step", onnx_i32(c, 1)));
  mil_var *ci = ONNX_OP(c, "range_1d", K("start", onnx_i32(c, 0)), A("end", cols), K("step", onnx_i32(c, 1)));
  ri = ONNX_OP(c, "expand_dims", A("x", ri), K("axes", onnx_i32s(c, 1, (int64_t[]){1})));
  mil_var *diff = ONNX_OP(c, "sub", A("x", ci), A("y", ri));
  mil_var *mask = ONNX_OP(c, upper ? "greater_equal" : "less_equal", A("x", diff), A("y", kvar ? kvar : onnx_const(c, onnx_i32(c, k))));
  mil_dtype dt = onnx_dtype(x);
  mil_var *zero = onnx_const(c, dt == MIL_DT_BOOL ? onnx_bool(c, false) : onnx_fscalar(c, dt, 0));
  return onnx_set_out(c, n, 0, ONNX_OP(c, "select", A("cond", mask), A("a", x), A("b", zero)));
}

static mil_status conv_eye_like(onnx_ctx *c, onnx_node *n) {
  mil_var *x = onnx_req(c, n, 0);
  if (!x) return MIL_ERR_INVALID;
  if (onnx_rank(x) != 2 || !mil_type_is_static(x->type)) return ONNX_UNSUP(c, "needs a static 2-D input");
  int64_t R = x->type->dims[0].size, C = x->type->dims[1].size, k = onnx_attr_i(n, "k", 0);
  int dt_onnx = (int)onnx_attr_i(n, "dtype", 0);
  mil_dtype dt = dt_onnx ? onnx_mil_dtype(dt_onnx) : onnx_dtype(x);
  if (dt == MIL_DT_UNUSED) return ONNX_UNSUP(c, "dtype %d", dt_onnx);
  mil_value *v = mil_value_new_tensor(c->p, dt, 2, (int64_t[]){R, C}, false, NULL);
  if (!v) return MIL_ERR_NOMEM;
  for (int64_t i = 0; i < R; i++)
    if (i + k >= 0 && i + k < C) mil_value_set_f64(v, i * C + i + k, 1);
  return onnx_set_out(c, n, 0, onnx_const(c, v));
}

/* Negative indices wrap (ONNX allows them; MIL gather does too from iOS17
 * only, so they are normalized: idx + dim where idx < 0). */
static mil_var *wrap_indices(onnx_ctx *c, mil_var *x, mil_var *idx, int64_t axis) {
  idx = onnx_cast(c, idx, MIL_DT_INT32);
  const mil_value *iv = onnx_val(idx);
  if (iv) {
    bool neg = false;
    for (int64_t i = 0; i < iv->numel; i++) neg |= mil_value_get_i64(iv, i) < 0;
    if (!neg) return idx;
  }
  mil_var *sh = onnx_shape_of(c, x);
  mil_var *dim = ONNX_OP(c, "gather", A("x", sh), K("indices", onnx_i32(c, axis)), K("axis", onnx_i32(c, 0)));
  mil_var *neg = ONNX_OP(c, "less", A("x", idx), K("y", onnx_i32(c, 0)));
  mil_var *plus = ONNX_OP(c, "add", A("x", idx), A("y", dim));
  return ONNX_OP(c, "select", A("cond", neg), A("a", plus), A("b", idx));
}

static mil_status conv_gather(onnx_ctx *c, onnx_node *n) {
  mil_var *x = onnx_req(c, n, 0), *idx = onnx_req(c, n, 1);
  if (!x || !idx) return MIL_ERR_INVALID;
  int64_t axis = onnx_attr_i(n, "axis", 0);
  if (!onnx_axis(&axis, onnx_rank(x))) return onnx_fail(c, MIL_ERR_INVALID, "axis out of range");
  mil_dtype dt = onnx_dtype(x);
  mil_var *xx = dt == MIL_DT_BOOL ? onnx_cast(c, x, MIL_DT_INT32) : x;
  mil_var *r = ONNX_OP(c, "gather", A("x", xx), A("indices", wrap_indices(c, x, idx, axis)), K("axis", onnx_i32(c, axis)));
  return onnx_set_out(c, n, 0, onnx_cast(c, r, dt));
}

static mil_status conv_gather_elements(onnx_ctx *c, onnx_node *n) {
  mil_var *x = onnx_req(c, n, 0), *idx = onnx_req(c, n, 1);
  if (!x || !idx) return MIL_ERR_INVALID;
  int64_t axis = onnx_attr_i(n, "axis", 0);
  if (!onnx_axis(&axis, onnx_rank(x))) return onnx_fail(c, MIL_ERR_INVALID, "axis out of range");
  return onnx_set_out(c, n, 0, ONNX_OP(c, "gather_along_axis", A("x", x), A("indices", wrap_indices(c, x, idx, axis)),
                                       K("axis", onnx_i32(c, axis))));
}

static mil_status conv_gather_nd(onnx_ctx *c, onnx_node *n) {
  mil_var *x = onnx_req(c, n, 0), *idx = onnx_req(c, n, 1);
  if (!x || !idx) return MIL_ERR_INVALID;
  int64_t bd = onnx_attr_i(n, "batch_dims", 0);
  if (bd == 0) return onnx_set_out(c, n, 0, ONNX_OP(c, "gather_nd", A("x", x), A("indices", onnx_cast(c, idx, MIL_DT_INT32))));
  if (c->target < MIL_IOS17) return ONNX_UNSUP(c, "batch_dims != 0 needs iOS17 (gather_nd's batch_dims)");
  return onnx_set_out(c, n, 0, ONNX_OP(c, "gather_nd", A("x", x), A("indices", onnx_cast(c, idx, MIL_DT_INT32)),
                                       K("batch_dims", onnx_i32(c, bd))));
}

static const char *scatter_mode(onnx_ctx *c, onnx_node *n) {
  const char *r = onnx_attr_s(c, n, "reduction", "none");
  return strcmp(r, "none") == 0 ? "update" : strcmp(r, "add") == 0 ? "add" : strcmp(r, "mul") == 0 ? "mul"
                                                        : strcmp(r, "max") == 0 ? "max" : strcmp(r, "min") == 0 ? "min" : NULL;
}

static mil_status conv_scatter_elements(onnx_ctx *c, onnx_node *n) {
  mil_var *x = onnx_req(c, n, 0), *idx = onnx_req(c, n, 1), *u = onnx_req(c, n, 2);
  if (!x || !idx || !u) return MIL_ERR_INVALID;
  int64_t axis = onnx_attr_i(n, "axis", 0);
  if (!onnx_axis(&axis, onnx_rank(x))) return onnx_fail(c, MIL_ERR_INVALID, "axis out of range");
  const char *mode = scatter_mode(c, n);
  if (!mode) return ONNX_UNSUP(c, "reduction");
  return onnx_set_out(c, n, 0, ONNX_OP(c, "scatter_along_axis", A("data", x), A("indices", wrap_indices(c, x, idx, axis)),
                                       A("updates", u), K("axis", onnx_i32(c, axis)), K("mode", onnx_str(c, mode))));
}

static mil_status conv_scatter_nd(onnx_ctx *c, onnx_node *n) {
  mil_var *x = onnx_req(c, n, 0), *idx = onnx_req(c, n, 1), *u = onnx_req(c, n, 2);
  if (!x || !idx || !u) return MIL_ERR_INVALID;
  const char *mode = scatter_mode(c, n);
  if (!mode) return ONNX_UNSUP(c, "reduction");
  return onnx_set_out(c, n, 0, ONNX_OP(c, "scatter_nd", A("data", x), A("indices", onnx_cast(c, idx, MIL_DT_INT32)),
                                       A("updates", u), K("mode", onnx_str(c, mode))));
}

/* OneHot(indices, depth, values[off, on]); negative indices wrap. */
static mil_status conv_one_hot(onnx_ctx *c, onnx_node *n) {
  mil_var *idx = onnx_req(c, n, 0), *depth = onnx_req(c, n, 1), *vals = onnx_req(c, n, 2);
  if (!idx || !depth || !vals) return MIL_ERR_INVALID;
  const mil_value *vv = onnx_val(vals);
  if (vv && vv->numel != 2) return onnx_fail(c, MIL_ERR_INVALID, "values must hold [off, on]");
  mil_dtype dt = vv ? vv->type->dtype : onnx_dtype(vals);
  mil_var *d = onnx_cast(c, depth, MIL_DT_INT32);
  if (onnx_rank(d) > 0) d = ONNX_OP(c, "squeeze", A("x", d));
  mil_var *i = onnx_cast(c, idx, MIL_DT_INT32);
  mil_var *neg = ONNX_OP(c, "less", A("x", i), K("y", onnx_i32(c, 0)));
  i = ONNX_OP(c, "select", A("cond", neg), A("a", ONNX_OP(c, "add", A("x", i), A("y", d))), A("b", i));
  int64_t axis = onnx_attr_i(n, "axis", -1);
  if (!vv) {
    /* values at run time: off + one_hot * (on - off) */
    mil_var *r = ONNX_OP(c, "one_hot", A("indices", i), A("one_hot_vector_size", d), K("axis", onnx_i32(c, axis)),
                         K("on_value", onnx_fscalar(c, dt, 1)), K("off_value", onnx_fscalar(c, dt, 0)));
    mil_var *off = ONNX_OP(c, "gather", A("x", vals), K("indices", onnx_i32(c, 0)), K("axis", onnx_i32(c, 0)));
    mil_var *on = ONNX_OP(c, "gather", A("x", vals), K("indices", onnx_i32(c, 1)), K("axis", onnx_i32(c, 0)));
    r = ONNX_OP(c, "add", A("x", ONNX_OP(c, "mul", A("x", r), A("y", ONNX_OP(c, "sub", A("x", on), A("y", off))))), A("y", off));
    return onnx_set_out(c, n, 0, r);
  }
  mil_var *r = ONNX_OP(c, "one_hot", A("indices", i), A("one_hot_vector_size", d), K("axis", onnx_i32(c, axis)),
                       K("on_value", onnx_fscalar(c, dt, mil_value_get_f64(vv, 1))),
                       K("off_value", onnx_fscalar(c, dt, mil_value_get_f64(vv, 0))));
  return onnx_set_out(c, n, 0, r);
}

/* TopK: k attribute before opset 10, input from 10; `largest`, `sorted` 11. */
static mil_status conv_topk(onnx_ctx *c, onnx_node *n) {
  mil_var *x = onnx_req(c, n, 0);
  if (!x) return MIL_ERR_INVALID;
  int64_t k;
  mil_var *kvar = NULL;
  int64_t axis = onnx_attr_i(n, "axis", -1);
  bool asc = onnx_attr_i(n, "largest", 1) == 0;
  if (n->opset < 10) k = onnx_attr_i(n, "k", 1);
  else {
    if (!(kvar = onnx_req(c, n, 1))) return MIL_ERR_INVALID;
    const mil_value *kv = onnx_val(kvar);
    k = kv ? mil_value_get_i64(kv, 0) : -1;
  }
  if (k < 0) {
    /* k at run time: sort the whole axis, keep the first k */
    int32_t r = onnx_rank(x);
    if (!onnx_axis(&axis, r) || x->type->dims[axis].size < 0) return ONNX_UNSUP(c, "k computed at run time along a symbolic dim");
    mil_op *op = onnx_op_full(c, "topk", 4, (pass_barg[]){A("x", x), K("k", onnx_i32(c, x->type->dims[axis].size)), K("axis", onnx_i32(c, axis)),
                                                           K("ascending", onnx_bool(c, asc))});
    if (!op) return MIL_ERR_TYPE;
    mil_var *kk = onnx_cast(c, kvar, MIL_DT_INT32);
    if (onnx_rank(kk) > 0) kk = ONNX_OP(c, "reshape", A("x", kk), K("shape", onnx_i32s(c, 1, (int64_t[]){1})));
    else kk = ONNX_OP(c, "expand_dims", A("x", kk), K("axes", onnx_i32s(c, 1, (int64_t[]){0})));
    mil_var *ends[MIL_INTERP_MAX_RANK_ONNX];
    mil_var *zero = onnx_const(c, onnx_i32s(c, 1, (int64_t[]){0}));
    for (int32_t d = 0; d < r; d++) ends[d] = d == axis ? kk : zero;
    mil_var *end = r == 1 ? kk : ONNX_OP(c, "concat", AT("values", ends, r), K("axis", onnx_i32(c, 0)));
    mil_value *m = mil_value_new_tensor(c->p, MIL_DT_BOOL, 1, (int64_t[]){r}, false, NULL);
    mil_value *zeros = mil_value_new_tensor(c->p, MIL_DT_INT32, 1, (int64_t[]){r}, false, NULL);
    if (!m || !zeros) return MIL_ERR_NOMEM;
    for (int32_t d = 0; d < r; d++) mil_value_set_i64(m, d, d != axis);
    mil_status st = MIL_OK;
    for (int32_t i = 0; i < 2 && st == MIL_OK; i++)
      st = onnx_set_out(c, n, i, ONNX_OP(c, "slice_by_index", A("x", op->outputs[i]), K("begin", zeros), A("end", end), K("end_mask", m)));
    return st;
  }
  mil_op *op = onnx_op_full(c, "topk", 4, (pass_barg[]){A("x", x), K("k", onnx_i32(c, k)), K("axis", onnx_i32(c, axis)),
                                                         K("ascending", onnx_bool(c, asc))});
  if (!op) return MIL_ERR_TYPE;
  mil_status st = onnx_set_out(c, n, 0, op->outputs[0]);
  return st == MIL_OK ? onnx_set_out(c, n, 1, op->outputs[1]) : st;
}

static mil_var *cumsum_along(onnx_ctx *c, onnx_node *n, mil_var *x, int64_t axis) {
  return ONNX_OP(c, "cumsum", A("x", x), K("axis", onnx_i32(c, axis)),
                 K("exclusive", onnx_bool(c, onnx_attr_i(n, "exclusive", 0) != 0)),
                 K("reverse", onnx_bool(c, onnx_attr_i(n, "reverse", 0) != 0)));
}

/* CumSum; an axis computed at run time selects among the sums along each
 * axis (they all have x's shape). */
static mil_status conv_cumsum(onnx_ctx *c, onnx_node *n) {
  mil_var *x = onnx_req(c, n, 0), *a = onnx_req(c, n, 1);
  if (!x || !a) return MIL_ERR_INVALID;
  const mil_value *av = onnx_val(a);
  if (av) return onnx_set_out(c, n, 0, cumsum_along(c, n, x, mil_value_get_i64(av, 0)));
  int32_t rank = onnx_rank(x);
  if (rank < 1) return onnx_fail(c, MIL_ERR_INVALID, "input must have rank >= 1");
  mil_var *ax = onnx_cast(c, a, MIL_DT_INT32);
  if (onnx_rank(ax) > 0) ax = ONNX_OP(c, "reshape", A("x", ax), K("shape", onnx_i32s(c, 0, NULL)));
  /* a negative axis counts from the end */
  ax = ONNX_OP(c, "mod", A("x", ax), K("y", onnx_i32(c, rank)));
  mil_var *r = cumsum_along(c, n, x, rank - 1);
  for (int32_t i = rank - 2; i >= 0 && r; i--)
    r = ONNX_OP(c, "select", A("cond", ONNX_OP(c, "equal", A("x", ax), K("y", onnx_i32(c, i)))), A("a", cumsum_along(c, n, x, i)),
                A("b", r));
  return onnx_set_out(c, n, 0, r);
}

/* NonZero: ONNX gives (rank, N), MIL's non_zero (N, rank). */
static mil_status conv_non_zero(onnx_ctx *c, onnx_node *n) {
  mil_var *x = onnx_req(c, n, 0);
  if (!x) return MIL_ERR_INVALID;
  mil_var *nz = ONNX_OP(c, "non_zero", A("x", x));
  return onnx_set_out(c, n, 0, ONNX_OP(c, "transpose", A("x", nz), K("perm", onnx_i32s(c, 2, (int64_t[]){1, 0}))));
}

const onnx_op_entry onnx_ops_shape[] = {
    {"Shape", "", 1, 0, conv_shape, "shape"},
    {"Size", "", 1, 0, conv_size, "shape, reduce_prod"},
    {"Constant", "", 1, 0, conv_constant, "const"},
    {"ConstantOfShape", "", 9, 0, conv_constant_of_shape, "fill"},
    {"Range", "", 11, 0, conv_range, "range_1d"},
    {"Trilu", "", 14, 0, conv_trilu, "band_part"},
    {"EyeLike", "", 9, 0, conv_eye_like, "const"},
    {"Gather", "", 1, 0, conv_gather, "gather"},
    {"GatherElements", "", 11, 0, conv_gather_elements, "gather_along_axis"},
    {"GatherND", "", 11, 0, conv_gather_nd, "gather_nd"},
    {"ScatterElements", "", 11, 0, conv_scatter_elements, "scatter_along_axis"},
    {"ScatterND", "", 11, 0, conv_scatter_nd, "scatter_nd"},
    {"OneHot", "", 9, 0, conv_one_hot, "one_hot"},
    {"TopK", "", 1, 0, conv_topk, "topk"},
    {"CumSum", "", 11, 0, conv_cumsum, "cumsum (select among axes for an axis known at run time)"},
    {"NonZero", "", 9, 0, conv_non_zero, "non_zero, transpose"},
    {NULL, NULL, 0, 0, NULL, NULL},
};
