/* Op family "tensor_operation" (coremltools ops/defs/iOS15, iOS16, iOS17
 * tensor_operation.py): the family table, and shape, identity, flatten2d,
 * fill, fill_like, one_hot, band_part, non_maximum_suppression. concat,
 * split, stack, tile and pad live in tensor_operation_concat.c; argsort,
 * topk, non_zero, range_1d and cumsum in tensor_operation_sort.c. */
#include <math.h>
#include <string.h>

#include "ops/ops_defaults.h"
#include "ops/tensor_operation_internal.h"

mil_status to_set_n_out(mil_infer_ctx *c, int32_t n) {
  if (c->op->n_outputs > 0) {
    if (c->op->n_outputs != n) return op_fail(c, "the op has %d outputs, its inputs give %d", c->op->n_outputs, n);
  } else if (n > 16) {
    return op_fail(c, "%d outputs are more than a new op can have (16)", n);
  }
  c->n_out = n;
  return MIL_OK;
}

/* ---- shape / identity ---- */

static mil_status infer_shape(mil_infer_ctx *c) {
  const mil_type *x = op_type(c, "x");
  mil_dim d = x->rank >= 0 ? op_dim(x->rank) : op_dim_sym(c);
  op_set_out(c, 0, op_tensor(c, MIL_DT_INT32, 1, &d));
  return MIL_OK;
}

static mil_status infer_identity(mil_infer_ctx *c) {
  op_set_out(c, 0, op_type(c, "x"));
  return MIL_OK;
}

static mil_status fold_identity(mil_infer_ctx *c) {
  const mil_value *v = op_val(c, "x");
  if (v) {
    c->val[0] = v;
    return MIL_OK;
  }
  return op_fold_symbolic(c);
}

/* ---- flatten2d ---- */

/* Product of dims [lo, hi) the way sympy would simplify it. */
static mil_dim dims_product(mil_infer_ctx *c, const mil_dim *d, int64_t lo, int64_t hi) {
  int64_t k = 1;
  int nsym = 0;
  const mil_dim *s = NULL;
  for (int64_t i = lo; i < hi; i++) {
    if (d[i].size >= 0) k *= d[i].size;
    else nsym++, s = &d[i];
  }
  if (nsym == 0) return op_dim(k);
  if (k == 0) return op_dim(0);
  if (nsym == 1 && k == 1 && s->sym) return *s;
  return op_dim_sym(c);
}

static mil_status infer_flatten2d(mil_infer_ctx *c) {
  const mil_type *x = op_type(c, "x");
  int64_t axis;
  if (!op_need_rank(c, "x", x) || !op_int_or(c, "axis", 1, &axis)) return MIL_ERR_TYPE;
  int64_t r = x->rank, cut = axis < 0 ? axis + r : axis; /* Python shape[:axis] */
  if (cut < 0) cut = 0;
  if (cut > r) cut = r;
  mil_dim d[2] = {dims_product(c, x->dims, 0, cut), dims_product(c, x->dims, cut, r)};
  op_set_out(c, 0, op_tensor(c, x->dtype, 2, d));
  return MIL_OK;
}

static mil_status fold_flatten2d(mil_infer_ctx *c) {
  if (!op_val(c, "x")) return MIL_OK;
  const mil_value *x = op_val(c, "x");
  int64_t shape[TOP_RANK];
  int32_t rank;
  if (!op_static_shape(c->out[0], shape, &rank) || op_numel(rank, shape) != x->numel || !op_foldable_dtype(x->type->dtype))
    return MIL_OK;
  op_set_val(c, 0, mil_value_new_tensor(c->prog, x->type->dtype, rank, shape, false, mil_value_data(x)));
  return MIL_OK;
}

static mil_status defaults_flatten2d(mil_infer_ctx *c) { return op_add_default_int(c, "axis", 1); }

/* ---- fill / fill_like ---- */

static mil_dtype value_dtype(mil_infer_ctx *c) {
  const mil_type *t = op_type(c, "value");
  return t ? t->dtype : MIL_DT_FP32; /* coremltools' default value is the Python float 0. */
}

static mil_status infer_fill(mil_infer_ctx *c) {
  const mil_type *st = op_type(c, "shape");
  mil_dtype dt = value_dtype(c);
  if (st->rank != 1) return op_fail(c, "input 'shape' must be rank 1, got %s", op_tstr(c, st));
  if (st->dims[0].size < 0) { /* shape of unknown length: coremltools' variadic symbol */
    op_set_out(c, 0, op_tensor_variadic(c, dt));
    return MIL_OK;
  }
  int64_t n = st->dims[0].size;
  if (n > TOP_RANK) return op_fail(c, "input 'shape' has %lld elements, more than supported (%d)", (long long)n, TOP_RANK);
  mil_dim d[TOP_RANK];
  op_symval *sv = op_tmp_alloc(c, sizeof *sv);
  if (!sv) return MIL_ERR_NOMEM;
  bool have = op_in_symval(c, "shape", 0, sv) && sv->n == n;
  for (int64_t i = 0; i < n; i++) {
    if (have && sv->e[i].kind == OP_SYM_KNOWN && sv->e[i].x < 0) { /* np.full: negative dimensions are not allowed */
      long long x = (long long)sv->e[i].x;
      op_tmp_free(c, sv, sizeof *sv);
      return op_fail(c, "input 'shape' has a negative entry: shape[%lld] = %lld", (long long)i, x);
    }
    d[i] = have ? op_sym_dim(c, &sv->e[i]) : op_dim_sym(c);
  }
  if (have && sv->opaque && c->op->n_outputs > 0) {
    const mil_type *dt_ = c->op->outputs[0]->type;
    if (dt_ && dt_->kind == MIL_TYPE_TENSOR && dt_->rank == n)
      for (int64_t i = 0; i < n; i++)
        if (dt_->dims[i].size >= 0) d[i] = dt_->dims[i];
  }
  op_tmp_free(c, sv, sizeof *sv);
  op_set_out(c, 0, op_tensor(c, dt, (int32_t)n, d));
  return MIL_OK;
}

/* np.full(shape, value). */
static mil_status fold_full(mil_infer_ctx *c) {
  int64_t shape[TOP_RANK];
  int32_t rank;
  if (!op_static_shape(c->out[0], shape, &rank)) return MIL_OK;
  const mil_value *v = op_val(c, "value");
  if (op_has(c, "value") && !v) return MIL_OK;
  mil_value *out = op_new_value(c, c->out[0]->dtype, rank, shape, false);
  if (!out || !op_foldable_dtype(c->out[0]->dtype)) return MIL_OK;
  size_t es = mil_dtype_size(c->out[0]->dtype), total = (size_t)out->numel * es;
  uint8_t *d = mil_value_data_mut(out);
  const uint8_t *s = v ? mil_value_data(v) : NULL;
  if (v && d && s && es && total) { /* the first element, then the filled part doubled */
    memcpy(d, s, es);
    for (size_t have = es; have < total;) {
      size_t k = have < total - have ? have : total - have;
      memcpy(d + have, d, k);
      have += k;
    }
  } else {
    for (int64_t k = 0; v && k < out->numel; k++) op_copy_elem(out, k, v, 0);
  }
  op_set_val(c, 0, out);
  return MIL_OK;
}

static mil_status fold_fill(mil_infer_ctx *c) {
  if (!op_in_known(c, "shape")) return MIL_OK;
  return fold_full(c);
}

static mil_status infer_fill_like(mil_infer_ctx *c) {
  const mil_type *r = op_type(c, "ref_tensor");
  op_set_out(c, 0, op_tensor(c, value_dtype(c), r->rank, r->dims));
  return MIL_OK;
}

static mil_status fold_fill_like(mil_infer_ctx *c) {
  if (!op_val(c, "ref_tensor")) return MIL_OK;
  return fold_full(c);
}

static mil_status defaults_fill(mil_infer_ctx *c) { return op_add_default_f32(c, "value", 0.0); }

/* ---- one_hot ---- */

static mil_status infer_one_hot(mil_infer_ctx *c) {
  const mil_type *ind = op_type(c, "indices"), *on = op_type(c, "on_value"), *off = op_type(c, "off_value");
  mil_dtype on_dt = on ? on->dtype : MIL_DT_INT32, off_dt = off ? off->dtype : MIL_DT_INT32;
  int64_t axis, depth;
  if (on_dt != off_dt)
    return op_fail(c, "Parameters on_value and off_value must have same input types, got %s and %s",
                   mil_dtype_name(on_dt), mil_dtype_name(off_dt));
  if (!op_need_rank(c, "indices", ind) || !op_int_or(c, "axis", -1, &axis)) return MIL_ERR_TYPE;
  if (axis < -ind->rank - 1 || axis > ind->rank)
    return op_fail(c, "Axis value %lld is out of bounds for one_hot node %s (indices %s)", (long long)axis, c->op->name,
                   op_tstr(c, ind));
  if (ind->rank + 1 > TOP_RANK) return op_fail(c, "output rank is larger than supported (%d)", TOP_RANK);
  mil_dim dd;
  if (op_known_int(c, "one_hot_vector_size", &depth)) {
    if (depth < 0) return op_fail(c, "Parameter one_hot_vector_size must be non-negative, got %lld", (long long)depth);
    dd = op_dim(depth);
  } else {
    dd = op_dim_sym(c);
  }
  int64_t cut = axis < 0 ? ind->rank + axis + 1 : axis;
  mil_dim d[TOP_RANK];
  int32_t r = 0;
  for (int64_t i = 0; i < cut; i++) d[r++] = ind->dims[i];
  d[r++] = dd;
  for (int64_t i = cut; i < ind->rank; i++) d[r++] = ind->dims[i];
  op_set_out(c, 0, op_tensor(c, on_dt, r, d));
  return MIL_OK;
}

static mil_status defaults_one_hot(mil_infer_ctx *c) {
  mil_status st = op_add_default_int(c, "axis", -1);
  if (!st) st = op_add_default_int(c, "on_value", 1);
  return st ? st : op_add_default_int(c, "off_value", 0);
}

/* ---- band_part ---- */

static mil_status infer_band_part(mil_infer_ctx *c) {
  int64_t lo, up;
  if (!op_int_or(c, "lower", -1, &lo) || !op_int_or(c, "upper", -1, &up)) return MIL_ERR_TYPE;
  op_set_out(c, 0, op_type(c, "x"));
  return MIL_OK;
}

static mil_status fold_band_part(mil_infer_ctx *c) {
  const mil_value *x = op_val(c, "x");
  int64_t lo, up, shape[TOP_RANK];
  int32_t rank;
  if (!x || !op_foldable_dtype(x->type->dtype)) return MIL_OK;
  if (!op_value_shape(x, shape, &rank)) return MIL_OK;
  if (rank < 2 || !op_int_or(c, "lower", -1, &lo) || !op_int_or(c, "upper", -1, &up)) return MIL_OK;
  mil_value *v = mil_value_new_tensor(c->prog, x->type->dtype, rank, shape, false, mil_value_data(x));
  if (!v) return MIL_OK;
  int64_t M = shape[rank - 2], N = shape[rank - 1];
  bool is_float = mil_dtype_is_float(x->type->dtype);
  for (int64_t k = 0; k < x->numel; k++) {
    int64_t n = k % N, m = (k / N) % M;
    bool in = (lo < 0 || m - n <= lo) && (up < 0 || n - m <= up);
    if (in) continue;
    /* band * x: 0 * x keeps IEEE semantics (-0.0, nan) for floats */
    if (is_float) mil_value_set_f64(v, k, mil_value_get_f64(x, k) * 0.0);
    else mil_value_set_i64(v, k, 0);
  }
  op_set_val(c, 0, v);
  return MIL_OK;
}

static mil_status defaults_band_part(mil_infer_ctx *c) {
  mil_status st = op_add_default_int(c, "lower", -1);
  return st ? st : op_add_default_int(c, "upper", -1);
}

/* ---- non_maximum_suppression ---- */

static mil_status infer_nms(mil_infer_ctx *c) {
  const mil_type *b = op_type(c, "boxes"), *s = op_type(c, "scores");
  int64_t mb;
  if (s->rank != 3) return op_fail(c, "input 'scores' must be rank 3, got %s", op_tstr(c, s));
  if (b->rank != 3) return op_fail(c, "input 'boxes' must be rank 3, got %s", op_tstr(c, b));
  if (!op_need_int(c, "max_boxes", &mb)) return MIL_ERR_TYPE;
  mil_dim nb = s->dims[0], m = op_dim(mb);
  if (c->opset >= MIL_IOS17) {
    mil_dim d0[3] = {nb, op_dim(4), m}, d1[3] = {nb, s->dims[1], m}, d2[2] = {nb, m};
    op_set_out(c, 0, op_tensor(c, b->dtype, 3, d0));
    op_set_out(c, 1, op_tensor(c, s->dtype, 3, d1));
    op_set_out(c, 2, op_tensor(c, MIL_DT_INT32, 2, d2));
  } else {
    mil_dim d0[3] = {nb, m, op_dim(4)}, d1[3] = {nb, m, s->dims[2]}, d2[2] = {nb, m};
    op_set_out(c, 0, op_tensor(c, b->dtype, 3, d0));
    op_set_out(c, 1, op_tensor(c, s->dtype, 3, d1));
    op_set_out(c, 2, op_tensor(c, MIL_DT_INT32, 2, d2));
    op_set_out(c, 3, op_tensor(c, MIL_DT_INT32, 1, &nb));
  }
  return MIL_OK;
}

static mil_status defaults_nms(mil_infer_ctx *c) { return op_add_default_bool(c, "per_class_suppression", false); }

/* ---- input specs ---- */

#define TIN(n, d, tv) IN_SPEC(n, MIL_IK_TENSOR, d, tv, 0, NULL)
#define TC(n, d, tv) IN_SPEC(n, MIL_IK_TENSOR, d, tv, MIL_IF_CONST, NULL)
#define TOPT(n, d, tv, dflt) IN_SPEC(n, MIL_IK_TENSOR, d, tv, MIL_IF_CONST | MIL_IF_OPTIONAL, dflt)
#define I32 MIL_DTS_INT32
#define BOOLS MIL_DTS_BOOL
#define FI (MIL_DTS_FLOAT | MIL_DTS_INT32)
#define T17                                                                                                       \
  (MIL_DTS_FLOAT | MIL_DTB(MIL_DT_INT8) | MIL_DTB(MIL_DT_INT16) | MIL_DTB(MIL_DT_INT32) | MIL_DTB(MIL_DT_UINT8) | \
   MIL_DTB(MIL_DT_UINT16))

static const mil_input_spec in_band[] = {TIN("x", OP_DTS_T15, "T"), TOPT("lower", I32, NULL, "-1"),
                                         TOPT("upper", I32, NULL, "-1")};
static const mil_input_spec in_cumsum[] = {TIN("x", FI, "T"), TOPT("axis", I32, NULL, "0"),
                                           TOPT("exclusive", BOOLS, NULL, "False"),
                                           TOPT("reverse", BOOLS, NULL, "False")};
static const mil_input_spec in_fill[] = {TIN("shape", I32, NULL), TOPT("value", OP_DTS_T15, "T", "0.")};
static const mil_input_spec in_nms15[] = {TIN("boxes", MIL_DTS_FLOAT, "T"),          TIN("scores", MIL_DTS_FLOAT, "T"),
                                          TC("iou_threshold", MIL_DTS_FLOAT, "T"),   TC("score_threshold", MIL_DTS_FLOAT, "T"),
                                          TC("max_boxes", I32, NULL),                TOPT("per_class_suppression", BOOLS, NULL, "False")};
static const mil_input_spec in_nms17[] = {TIN("boxes", MIL_DTS_FLOAT, "T"), TIN("scores", MIL_DTS_FLOAT, "T"),
                                          TC("iou_threshold", MIL_DTS_FLOAT, "T"), TC("max_boxes", I32, NULL),
                                          TOPT("per_class_suppression", BOOLS, NULL, "False")};
static const mil_input_spec in_non_zero[] = {TIN("x", OP_DTS_T15, "T")};
static const mil_input_spec in_one_hot[] = {TIN("indices", I32, NULL), TIN("one_hot_vector_size", I32, NULL),
                                            TOPT("axis", I32, NULL, "-1"), TOPT("on_value", OP_DTS_T15, "T", "1"),
                                            TOPT("off_value", OP_DTS_T15, "T", "0")};
static const mil_input_spec in_pad[] = {TIN("x", MIL_DTS_FLOAT, "T"), TIN("pad", I32, NULL),
                                        TOPT("mode", MIL_DTS_STRING, NULL, "\"constant\""),
                                        TOPT("constant_val", MIL_DTS_FLOAT, "T", "0.")};
static const mil_input_spec in_range[] = {TIN("end", FI, "T"), TIN("start", FI, "T"), TIN("step", FI, "T")};
static const mil_input_spec in_tile[] = {TIN("x", OP_DTS_T15, "T"), TIN("reps", I32, NULL)};
static const mil_input_spec in_argsort[] = {TIN("x", FI, "T"), TOPT("axis", I32, NULL, "-1"),
                                            TOPT("ascending", BOOLS, NULL, "False")};
static const mil_input_spec in_topk15[] = {TIN("x", FI, "T"), TOPT("k", I32, NULL, "1"), TOPT("axis", I32, NULL, "-1"),
                                           TOPT("ascending", BOOLS, NULL, "False")};
static const mil_input_spec in_topk16[] = {TIN("x", FI, "T"),
                                           TOPT("k", I32, NULL, "1"),
                                           TOPT("axis", I32, NULL, "-1"),
                                           TOPT("ascending", BOOLS, NULL, "False"),
                                           TOPT("sort", BOOLS, NULL, "True"),
                                           TOPT("return_indices", BOOLS, NULL, "True")};
static const mil_input_spec in_topk17[] = {TIN("x", T17, "T"),
                                           TOPT("k", OP_DTS_I17, "K", "1"),
                                           TOPT("axis", I32, NULL, "-1"),
                                           TOPT("ascending", BOOLS, NULL, "False"),
                                           TOPT("sort", BOOLS, NULL, "True"),
                                           TOPT("return_indices", BOOLS, NULL, "True"),
                                           TOPT("output_indices_dtype", MIL_DTS_STRING, NULL, "\"int32\"")};
static const mil_input_spec in_flatten[] = {TIN("x", OP_DTS_T15, "T"), TOPT("axis", I32, NULL, "1")};
static const mil_input_spec in_shape[] = {TIN("x", OP_DTS_T15, "T")};
static const mil_input_spec in_concat[] = {IN_SPEC("values", MIL_IK_TUPLE | MIL_IK_TENSOR, MIL_DTS_ANY, NULL, 0, NULL),
                                           TC("axis", I32, NULL), TOPT("interleave", BOOLS, NULL, "False")};
static const mil_input_spec in_split[] = {TIN("x", OP_DTS_T15, "T"), TOPT("num_splits", I32, NULL, NULL),
                                          TOPT("split_sizes", I32, NULL, NULL), TC("axis", I32, NULL)};
static const mil_input_spec in_stack[] = {IN_SPEC("values", MIL_IK_TUPLE | MIL_IK_TENSOR, MIL_DTS_ANY, NULL, 0, NULL),
                                          TC("axis", I32, NULL)};
static const mil_input_spec in_identity[] = {IN_SPEC("x", MIL_IK_ANY, MIL_DTS_ANY, NULL, 0, NULL)};
static const mil_input_spec in_fill_like[] = {TIN("ref_tensor", OP_DTS_T15, "T"), TOPT("value", OP_DTS_T15, "U", "0.")};

#define N(a) (int32_t)(sizeof a / sizeof a[0])
#define ROWN(t, v, in, nout, inf, fold, dfl, doc) {t, v, "tensor_operation", in, N(in), nout, inf, fold, dfl, doc}
#define ROW(t, v, in, inf, fold, dfl, doc) ROWN(t, v, in, 1, inf, fold, dfl, doc)

const mil_op_def op_defs_tensor_operation[] = {
    ROW("band_part", MIL_IOS13, in_band, infer_band_part, fold_band_part, defaults_band_part,
        "Keeps a band of the last two dims (lower/upper diagonals; -1 = all), zeroes the rest."),
    ROW("cumsum", MIL_IOS13, in_cumsum, to_infer_cumsum, to_fold_cumsum, to_defaults_cumsum,
        "Cumulative sum along axis (optionally exclusive / reversed)."),
    ROW("fill", MIL_IOS13, in_fill, infer_fill, fold_fill, defaults_fill, "A tensor of `shape` filled with value."),
    ROWN("non_maximum_suppression", MIL_IOS13, in_nms15, 4, infer_nms, NULL, defaults_nms,
         "Per-batch NMS: boxes, scores, indices, counts."),
    ROW("non_zero", MIL_IOS13, in_non_zero, to_infer_non_zero, to_fold_non_zero, NULL,
        "Indices (N, rank) of the non-zero elements."),
    ROW("one_hot", MIL_IOS13, in_one_hot, infer_one_hot, NULL, defaults_one_hot,
        "One-hot encoding of indices along a new axis."),
    ROW("pad", MIL_IOS13, in_pad, to_infer_pad, to_fold_pad, to_defaults_pad,
        "Pads the last dims (constant / reflect / replicate)."),
    ROW("range_1d", MIL_IOS13, in_range, to_infer_range_1d, to_fold_range_1d, NULL,
        "The values start, start+step, ... below end."),
    ROW("tile", MIL_IOS13, in_tile, to_infer_tile, to_fold_tile, NULL, "Repeats x reps[i] times along each dim."),
    ROW("argsort", MIL_IOS13, in_argsort, to_infer_argsort, to_fold_argsort, to_defaults_argsort,
        "Indices that sort x along axis."),
    ROWN("topk", MIL_IOS13, in_topk15, 2, to_infer_topk, to_fold_topk, to_defaults_topk,
         "The k largest (or smallest) values along axis and their indices."),
    ROW("flatten2d", MIL_IOS13, in_flatten, infer_flatten2d, fold_flatten2d, defaults_flatten2d,
        "Flattens to 2-D around axis."),
    ROW("shape", MIL_IOS13, in_shape, infer_shape, op_fold_symbolic, NULL, "The shape of x as an int32 vector."),
    ROW("concat", MIL_IOS13, in_concat, to_infer_concat, to_fold_concat, to_defaults_concat,
        "Concatenates values along axis (or interleaves them)."),
    ROWN("split", MIL_IOS13, in_split, -1, to_infer_split, to_fold_split, NULL,
         "Splits x along axis into num_splits equal parts or split_sizes parts."),
    ROW("stack", MIL_IOS13, in_stack, to_infer_stack, to_fold_stack, NULL, "Stacks values along a new axis."),
    ROW("identity", MIL_IOS13, in_identity, infer_identity, fold_identity, NULL, "Returns x."),
    ROW("fill_like", MIL_IOS16, in_fill_like, infer_fill_like, fold_fill_like, defaults_fill,
        "A tensor shaped like ref_tensor filled with value."),
    ROWN("topk", MIL_IOS16, in_topk16, -1, to_infer_topk, to_fold_topk, to_defaults_topk,
         "The k largest (or smallest) values along axis, and their indices unless return_indices is False."),
    ROWN("non_maximum_suppression", MIL_IOS17, in_nms17, 3, infer_nms, NULL, defaults_nms,
         "Per-batch NMS: boxes, scores, indices (channel-first outputs)."),
    ROWN("topk", MIL_IOS17, in_topk17, -1, to_infer_topk, to_fold_topk, to_defaults_topk,
         "The k largest (or smallest) values along axis, and their indices unless return_indices is False."),
};
OP_FAMILY_COUNT(tensor_operation);
