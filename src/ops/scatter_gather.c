/* Op family "scatter_gather" (coremltools ops/defs/iOS15, iOS16, iOS17
 * scatter_gather.py): gather, gather_along_axis, gather_nd, scatter,
 * scatter_along_axis, scatter_nd, with value inference for gather (values
 * and symbolic values, coremltools' compute_gather), gather_along_axis
 * (np.take_along_axis) and scatter_along_axis (np.put_along_axis, which
 * assigns whatever the mode). */
#include <string.h>

#include "ops/ops_defaults.h"
#include "ops/tensor_ops_internal.h"

static bool axis_in_range(mil_infer_ctx *c, const char *xname, int64_t axis, const mil_type *x) {
  if (axis >= -x->rank && axis < x->rank) return true;
  op_fail(c, "Axis value %lld is out of bounds for %s node %s (%s is %s)", (long long)axis, c->def->type, c->op->name,
          xname, op_tstr(c, x));
  return false;
}

/* iOS17 validate_indices: every index in [0, bound). */
static mil_status check_indices(mil_infer_ctx *c, int64_t bound) {
  bool validate;
  if (!op_bool_or(c, "validate_indices", false, &validate)) return MIL_ERR_TYPE;
  const mil_value *v = validate ? op_in_value(c, "indices") : NULL;
  for (int64_t i = 0; v && i < v->numel; i++) {
    int64_t k = mil_value_get_i64(v, i);
    if (k < 0 || k >= bound)
      return op_fail(c, "Indices is out of bounds for `%s` node %s. Expected indices between [0, %lld), but got %lld.",
                     c->def->type, c->op->name, (long long)bound, (long long)k);
  }
  return MIL_OK;
}

static bool dims_compatible(const mil_dim *a, int32_t na, const mil_dim *b, int32_t nb) {
  if (na != nb) return false;
  for (int32_t i = 0; i < na; i++)
    if (a[i].size >= 0 && b[i].size >= 0 && a[i].size != b[i].size) return false;
  return true;
}

/* ---- gather ---- */

static mil_status infer_gather(mil_infer_ctx *c) {
  const mil_type *x = op_type(c, "x"), *ind = op_type(c, "indices");
  int64_t axis, bd;
  if (!op_need_rank(c, "x", x) || !op_need_rank(c, "indices", ind) || !op_int_or(c, "axis", 0, &axis) ||
      !op_int_or(c, "batch_dims", 0, &bd))
    return MIL_ERR_TYPE;
  if (!axis_in_range(c, "x", axis, x)) return MIL_ERR_TYPE;
  if (c->opset >= MIL_IOS16) {
    if (bd >= x->rank)
      return op_fail(c, "batch_dims %lld must be less than x.rank %d for node %s", (long long)bd, x->rank, c->op->name);
    if (bd > ind->rank)
      return op_fail(c, "batch_dims %lld must be less or equal to than indices.rank %d for node %s", (long long)bd,
                     ind->rank, c->op->name);
    if (bd < 0) return op_fail(c, "input 'batch_dims' must be non-negative, got %lld", (long long)bd);
  }
  int64_t ax = axis < 0 ? axis + x->rank : axis;
  int32_t out_rank = (int32_t)(x->rank - 1 + ind->rank - bd);
  if (out_rank > TOP_RANK) return op_fail(c, "output rank %d is larger than supported (%d)", out_rank, TOP_RANK);
  if (c->opset >= MIL_IOS17) {
    mil_status st = check_indices(c, x->dims[ax].size >= 0 ? x->dims[ax].size : INT64_MAX);
    if (st) return st;
  }
  if (out_rank == 0) {
    op_set_out(c, 0, op_scalar(c, x->dtype));
    return MIL_OK;
  }
  mil_dim d[TOP_RANK];
  int32_t r = 0;
  for (int64_t i = 0; i < ax; i++) d[r++] = x->dims[i];
  for (int64_t i = bd; i < ind->rank; i++) d[r++] = ind->dims[i];
  for (int64_t i = ax + 1; i < x->rank; i++) d[r++] = x->dims[i];
  op_set_out(c, 0, op_tensor(c, x->dtype, r, d));
  return MIL_OK;
}

static mil_status fold_gather(mil_infer_ctx *c) {
  const mil_value *x = op_val(c, "x"), *ind = x ? op_in_value(c, "indices") : NULL;
  if (!x) return op_fold_symbolic(c);
  int64_t axis, bd, xs[TOP_RANK], is[TOP_RANK], os[TOP_RANK];
  int32_t xr, ir, orank;
  if (!ind || !op_foldable_dtype(x->type->dtype) || !op_int_or(c, "axis", 0, &axis) || !op_int_or(c, "batch_dims", 0, &bd))
    return MIL_OK;
  if (!op_value_shape(x, xs, &xr)) return MIL_OK;
  if (!op_value_shape(ind, is, &ir)) return MIL_OK;
  int64_t *iv = op_tmp_alloc(c, (size_t)(ind->numel ? ind->numel : 1) * sizeof *iv);
  if (!iv) return MIL_OK;
  for (int64_t i = 0; i < ind->numel; i++) iv[i] = mil_value_get_i64(ind, i);
  if (op_map_gather(xr, xs, ir, is, iv, axis, bd, NULL, &orank, os)) {
    int64_t n = op_numel(orank, os);
    int64_t *map = op_tmp_alloc(c, (size_t)(n ? n : 1) * sizeof *map);
    if (map && op_map_gather(xr, xs, ir, is, iv, axis, bd, map, &orank, os))
      op_set_val(c, 0, op_value_from_map(c, x->type->dtype, orank, os, orank == 0, x, map, NULL));
    op_tmp_free(c, map, (size_t)(n ? n : 1) * sizeof *map);
  }
  op_tmp_free(c, iv, (size_t)(ind->numel ? ind->numel : 1) * sizeof *iv);
  return MIL_OK;
}

static mil_status defaults_gather(mil_infer_ctx *c) {
  mil_status st = op_add_default_int(c, "axis", 0);
  if (!st && c->def->opset >= MIL_IOS16) st = op_add_default_int(c, "batch_dims", 0);
  if (!st && c->def->opset >= MIL_IOS17) st = op_add_default_bool(c, "validate_indices", false);
  return st;
}

/* ---- scatter ---- */

static mil_status infer_scatter(mil_infer_ctx *c) {
  const mil_type *data = op_type(c, "data"), *ind = op_type(c, "indices"), *upd = op_type(c, "updates");
  int64_t axis;
  if (!op_need_rank(c, "data", data) || !op_need_rank(c, "indices", ind) || !op_int_or(c, "axis", 0, &axis))
    return MIL_ERR_TYPE;
  if (!axis_in_range(c, "data", axis, data)) return MIL_ERR_TYPE;
  int64_t ax = axis < 0 ? axis + data->rank : axis;
  mil_dim d[TOP_RANK * 2];
  int32_t r = 0;
  for (int64_t i = 0; i < ax; i++) d[r++] = data->dims[i];
  for (int32_t i = 0; i < ind->rank && r < TOP_RANK * 2; i++) d[r++] = ind->dims[i];
  for (int64_t i = ax + 1; i < data->rank && r < TOP_RANK * 2; i++) d[r++] = data->dims[i];
  if (upd->rank < 0 || !dims_compatible(upd->dims, upd->rank, d, r))
    return op_fail(c, "Updates shape %s is incorrect. It should be %s.", op_tstr(c, upd),
                   op_tstr(c, r <= TOP_RANK ? op_tensor(c, upd->dtype, r, d) : upd));
  if (c->opset >= MIL_IOS17) {
    mil_status st = check_indices(c, data->dims[ax].size >= 0 ? data->dims[ax].size : INT64_MAX);
    if (st) return st;
  }
  op_set_out(c, 0, data);
  return MIL_OK;
}

static mil_status defaults_scatter(mil_infer_ctx *c) {
  mil_status st = op_add_default_int(c, "axis", 0);
  if (!st) st = op_add_default_str(c, "mode", "add");
  if (!st && c->def->opset >= MIL_IOS17) st = op_add_default_bool(c, "validate_indices", false);
  return st;
}

/* ---- gather_along_axis / scatter_along_axis ---- */

static mil_status infer_gather_along_axis(mil_infer_ctx *c) {
  const mil_type *x = op_type(c, "x"), *ind = op_type(c, "indices");
  int64_t axis;
  if (!op_need_rank(c, "x", x) || !op_need_rank(c, "indices", ind) || !op_int_or(c, "axis", 0, &axis))
    return MIL_ERR_TYPE;
  if (x->rank != ind->rank)
    return op_fail(c, "Rank mismatch between input and indices. Input rank: %d, indices rank: %d", x->rank, ind->rank);
  if (!axis_in_range(c, "x", axis, x)) return MIL_ERR_TYPE;
  int64_t ax = axis < 0 ? axis + x->rank : axis;
  for (int32_t i = 0; i < x->rank; i++)
    if (i != ax && x->dims[i].size >= 0 && ind->dims[i].size >= 0 && x->dims[i].size != ind->dims[i].size)
      return op_fail(c,
                     "The input data and indices should have the same size at axis %d, but got %lld vs %lld", i,
                     (long long)x->dims[i].size, (long long)ind->dims[i].size);
  if (c->opset >= MIL_IOS17) {
    mil_status st = check_indices(c, x->dims[ax].size >= 0 ? x->dims[ax].size : INT64_MAX);
    if (st) return st;
  }
  op_set_out(c, 0, op_tensor(c, x->dtype, ind->rank, ind->dims));
  return MIL_OK;
}

/* Flat position in a tensor of shape `s` of the element at index `k` of
 * the indices tensor (shape `is`), with coordinate `axis` replaced by `v`. */
static int64_t along_axis_pos(int32_t rank, const int64_t *s, const int64_t *is, int64_t k, int64_t axis, int64_t v) {
  int64_t idx[TOP_RANK], rem = k, pos = 0;
  for (int32_t d = rank - 1; d >= 0; d--) {
    idx[d] = rem % is[d];
    rem /= is[d];
  }
  idx[axis] = v;
  for (int32_t d = 0; d < rank; d++) pos = pos * s[d] + idx[d];
  return pos;
}

static mil_status fold_gather_along_axis(mil_infer_ctx *c) {
  const mil_value *x = op_val(c, "x"), *ind = op_in_value(c, "indices");
  int64_t axis, xs[TOP_RANK], is[TOP_RANK];
  int32_t xr, ir;
  if (!x || !ind || !op_foldable_dtype(x->type->dtype) || !op_int_or(c, "axis", 0, &axis)) return MIL_OK;
  if (!op_value_shape(x, xs, &xr)) return MIL_OK;
  if (!op_value_shape(ind, is, &ir)) return MIL_OK;
  if (xr != ir || xr == 0) return MIL_OK;
  if (axis < 0) axis += xr;
  for (int32_t d = 0; d < xr; d++)
    if (d != axis && is[d] != xs[d]) return MIL_OK;
  int64_t *map = op_tmp_alloc(c, (size_t)(ind->numel ? ind->numel : 1) * sizeof *map);
  if (!map) return MIL_OK;
  bool ok = true;
  for (int64_t k = 0; k < ind->numel && ok; k++) {
    int64_t v = mil_value_get_i64(ind, k);
    if (v < 0) v += xs[axis];
    if (v < 0 || v >= xs[axis]) ok = false;
    else map[k] = along_axis_pos(xr, xs, is, k, axis, v);
  }
  if (ok) op_set_val(c, 0, op_value_from_map(c, x->type->dtype, ir, is, false, x, map, NULL));
  op_tmp_free(c, map, (size_t)(ind->numel ? ind->numel : 1) * sizeof *map);
  return MIL_OK;
}

static mil_status defaults_gather_along_axis(mil_infer_ctx *c) {
  mil_status st = op_add_default_int(c, "axis", 0);
  if (!st && c->def->opset >= MIL_IOS17) st = op_add_default_bool(c, "validate_indices", false);
  return st;
}

static bool same_dim(const mil_dim *a, const mil_dim *b) {
  if (a->size >= 0 || b->size >= 0) return a->size == b->size;
  return a->sym && b->sym && strcmp(a->sym, b->sym) == 0;
}

static mil_status infer_scatter_along_axis(mil_infer_ctx *c) {
  const mil_type *data = op_type(c, "data"), *ind = op_type(c, "indices"), *upd = op_type(c, "updates");
  int64_t axis;
  if (!op_need_rank(c, "data", data) || !op_need_rank(c, "indices", ind) || !op_int_or(c, "axis", 0, &axis))
    return MIL_ERR_TYPE;
  if (!axis_in_range(c, "data", axis, data)) return MIL_ERR_TYPE;
  int64_t ax = axis < 0 ? axis + data->rank : axis;
  if (upd->rank < 0 || !dims_compatible(ind->dims, ind->rank, upd->dims, upd->rank))
    return op_fail(c, "input 'updates' %s must have the shape of 'indices' %s", op_tstr(c, upd), op_tstr(c, ind));
  if (data->rank != ind->rank)
    return op_fail(c, "input 'data' %s and 'indices' %s must have the same rank", op_tstr(c, data), op_tstr(c, ind));
  for (int32_t i = 0; i < data->rank; i++)
    if (i != ax && !same_dim(&data->dims[i], &ind->dims[i]))
      return op_fail(c, "input 'data' %s and 'indices' %s must have the same size at axis %d", op_tstr(c, data),
                     op_tstr(c, ind), i);
  if (c->opset >= MIL_IOS17) {
    mil_status st = check_indices(c, data->dims[ax].size >= 0 ? data->dims[ax].size : INT64_MAX);
    if (st) return st;
  }
  op_set_out(c, 0, data);
  return MIL_OK;
}

static mil_status fold_scatter_along_axis(mil_infer_ctx *c) {
  const mil_value *data = op_val(c, "data"), *ind = op_in_value(c, "indices"), *upd = op_val(c, "updates");
  int64_t axis, ds[TOP_RANK], is[TOP_RANK];
  int32_t dr, ir;
  if (!data || !ind || !upd || !op_foldable_dtype(data->type->dtype) || upd->type->dtype != data->type->dtype ||
      !op_int_or(c, "axis", 0, &axis))
    return MIL_OK;
  if (!op_value_shape(data, ds, &dr)) return MIL_OK;
  if (!op_value_shape(ind, is, &ir)) return MIL_OK;
  if (dr != ir || dr == 0 || upd->numel != ind->numel) return MIL_OK;
  if (axis < 0) axis += dr;
  mil_value *v = mil_value_new_tensor(c->prog, data->type->dtype, dr, ds, false, mil_value_data(data));
  if (!v) return MIL_OK;
  for (int64_t k = 0; k < ind->numel; k++) {
    int64_t iv = mil_value_get_i64(ind, k);
    if (iv < 0) iv += ds[axis];
    if (iv < 0 || iv >= ds[axis]) return MIL_OK;
    op_copy_elem(v, along_axis_pos(dr, ds, is, k, axis, iv), upd, k);
  }
  op_set_val(c, 0, v);
  return MIL_OK;
}

/* ---- gather_nd / scatter_nd ---- */

static mil_status infer_gather_nd(mil_infer_ctx *c) {
  const mil_type *x = op_type(c, "x"), *ind = op_type(c, "indices");
  int64_t bd;
  if (!op_need_rank(c, "x", x) || !op_need_rank(c, "indices", ind) || !op_int_or(c, "batch_dims", 0, &bd))
    return MIL_ERR_TYPE;
  if (ind->rank < 1) return op_fail(c, "input 'indices' must have rank >= 1, got %s", op_tstr(c, ind));
  int64_t depth = ind->dims[ind->rank - 1].size;
  if (depth < 0) return op_fail(c, "the last dim of 'indices' must be known, got %s", op_tstr(c, ind));
  if (bd < 0) return op_fail(c, "input 'batch_dims' must be non-negative, got %lld", (long long)bd);
  if (depth > x->rank - bd)
    return op_fail(c,
                   "For node %s, indices.shape[-1] (%lld) + batch_dims (%lld) must be smaller or equal to the input "
                   "rank %d",
                   c->op->name, (long long)depth, (long long)bd, x->rank);
  mil_dim d[TOP_RANK * 2];
  int32_t r = 0;
  for (int32_t i = 0; i < ind->rank - 1; i++) d[r++] = ind->dims[i];
  for (int64_t i = bd + depth; i < x->rank; i++) d[r++] = x->dims[i];
  if (r > TOP_RANK) return op_fail(c, "output rank %d is larger than supported (%d)", r, TOP_RANK);
  if (c->opset >= MIL_IOS17) {
    bool validate;
    if (!op_bool_or(c, "validate_indices", false, &validate)) return MIL_ERR_TYPE;
    const mil_value *v = validate ? op_in_value(c, "indices") : NULL;
    for (int64_t i = 0; v && i < v->numel && depth > 0; i++) {
      int64_t k = mil_value_get_i64(v, i), b = x->dims[bd + i % depth].size;
      if (k < 0 || (b >= 0 && k >= b))
        return op_fail(c, "Indices is out of bounds for `%s` node %s. Expected indices between [0, %s), but got %lld.",
                       c->def->type, c->op->name, op_tstr(c, x), (long long)k);
    }
  }
  op_set_out(c, 0, op_tensor(c, x->dtype, r, d));
  return MIL_OK;
}

static mil_status defaults_gather_nd(mil_infer_ctx *c) {
  mil_status st = op_add_default_int(c, "batch_dims", 0);
  if (!st && c->def->opset >= MIL_IOS17) st = op_add_default_bool(c, "validate_indices", false);
  return st;
}

static mil_status infer_scatter_nd(mil_infer_ctx *c) {
  const mil_type *data = op_type(c, "data"), *ind = op_type(c, "indices"), *upd = op_type(c, "updates");
  if (!op_need_rank(c, "data", data) || !op_need_rank(c, "indices", ind)) return MIL_ERR_TYPE;
  if (ind->rank < 1) return op_fail(c, "input 'indices' must have rank >= 1, got %s", op_tstr(c, ind));
  int64_t depth = ind->dims[ind->rank - 1].size;
  if (depth < 0 || depth > data->rank)
    return op_fail(c, "the last dim of 'indices' %s must be known and at most rank(data) = %d", op_tstr(c, ind),
                   data->rank);
  mil_dim d[TOP_RANK * 2];
  int32_t r = 0;
  for (int32_t i = 0; i < ind->rank - 1; i++) d[r++] = ind->dims[i];
  for (int64_t i = depth; i < data->rank; i++) d[r++] = data->dims[i];
  if (upd->rank < 0 || !dims_compatible(upd->dims, upd->rank, d, r))
    return op_fail(c, "Updates shape %s is incorrect. It should be %s.", op_tstr(c, upd),
                   op_tstr(c, r <= TOP_RANK ? op_tensor(c, upd->dtype, r, d) : upd));
  if (c->opset >= MIL_IOS17) {
    bool validate;
    if (!op_bool_or(c, "validate_indices", false, &validate)) return MIL_ERR_TYPE;
    const mil_value *v = validate ? op_in_value(c, "indices") : NULL;
    for (int64_t i = 0; v && i < v->numel && depth > 0; i++) {
      int64_t k = mil_value_get_i64(v, i), b = data->dims[i % depth].size;
      if (k < 0 || (b >= 0 && k >= b))
        return op_fail(c, "Indices is out of bounds for `%s` node %s. Expected indices between [0, %s), but got %lld.",
                       c->def->type, c->op->name, op_tstr(c, data), (long long)k);
    }
  }
  op_set_out(c, 0, data);
  return MIL_OK;
}

static mil_status defaults_scatter_nd(mil_infer_ctx *c) {
  mil_status st = op_add_default_str(c, "mode", "add");
  if (!st && c->def->opset >= MIL_IOS17) st = op_add_default_bool(c, "validate_indices", false);
  return st;
}

/* ---- input specs ---- */

#define TIN(n, d, tv) IN_SPEC(n, MIL_IK_TENSOR, d, tv, 0, NULL)
#define TOPT(n, d, tv, dflt) IN_SPEC(n, MIL_IK_TENSOR, d, tv, MIL_IF_CONST | MIL_IF_OPTIONAL, dflt)
#define I32 MIL_DTS_INT32
#define FI (MIL_DTS_FLOAT | MIL_DTS_INT32)
#define I16 (MIL_DTB(MIL_DT_INT32) | MIL_DTB(MIL_DT_UINT16) | MIL_DTB(MIL_DT_INT16))
#define T17                                                                                                       \
  (MIL_DTS_FLOAT | MIL_DTB(MIL_DT_INT32) | MIL_DTB(MIL_DT_INT16) | MIL_DTB(MIL_DT_UINT16) | MIL_DTB(MIL_DT_INT8) | \
   MIL_DTB(MIL_DT_UINT8))
#define I17                                                                                                     \
  (MIL_DTB(MIL_DT_INT32) | MIL_DTB(MIL_DT_INT16) | MIL_DTB(MIL_DT_UINT16) | MIL_DTB(MIL_DT_INT8) | \
   MIL_DTB(MIL_DT_UINT8))
#define AXIS TOPT("axis", I32, NULL, "0")
#define MODE TOPT("mode", MIL_DTS_STRING, NULL, "\"add\"")
#define VALID TOPT("validate_indices", MIL_DTS_BOOL, NULL, "False")
#define BDIMS TOPT("batch_dims", I32, NULL, "0")

static const mil_input_spec in_gather15[] = {TIN("x", FI, "T"), TIN("indices", I32, NULL), AXIS};
static const mil_input_spec in_gather16[] = {TIN("x", FI, "T"), TIN("indices", I16, "I"), AXIS, BDIMS};
static const mil_input_spec in_gather17[] = {TIN("x", T17, "T"), TIN("indices", I17, "I"), AXIS, BDIMS, VALID};
static const mil_input_spec in_scatter15[] = {TIN("data", FI, "T"), TIN("indices", I32, NULL),
                                              TIN("updates", FI, "T"), AXIS, MODE};
static const mil_input_spec in_scatter17[] = {TIN("data", FI, "T"), TIN("indices", I32, NULL),
                                              TIN("updates", FI, "T"), AXIS, MODE, VALID};
static const mil_input_spec in_gaa15[] = {TIN("x", FI, "T"), TIN("indices", I32, NULL), AXIS};
static const mil_input_spec in_gaa16[] = {TIN("x", FI, "T"), TIN("indices", I16, "I"), AXIS};
static const mil_input_spec in_gaa17[] = {TIN("x", T17, "T"), TIN("indices", I17, "I"), AXIS, VALID};
static const mil_input_spec in_gnd15[] = {TIN("x", FI, "T"), TIN("indices", I32, NULL)};
static const mil_input_spec in_gnd16[] = {TIN("x", FI, "T"), TIN("indices", I16, "I"), BDIMS};
static const mil_input_spec in_gnd17[] = {TIN("x", T17, "T"), TIN("indices", I17, "I"), BDIMS, VALID};
static const mil_input_spec in_snd15[] = {TIN("data", FI, "T"), TIN("indices", I32, NULL), TIN("updates", FI, "T"),
                                          MODE};
static const mil_input_spec in_snd17[] = {TIN("data", FI, "T"), TIN("indices", I32, NULL), TIN("updates", FI, "T"),
                                          MODE, VALID};

#define N(a) (int32_t)(sizeof a / sizeof a[0])
#define ROW(t, v, in, inf, fold, dfl, doc) {t, v, "scatter_gather", in, N(in), 1, inf, fold, dfl, doc}

const mil_op_def op_defs_scatter_gather[] = {
    ROW("gather", MIL_IOS13, in_gather15, infer_gather, fold_gather, defaults_gather,
        "Gathers slices of x along axis at the given indices."),
    ROW("scatter", MIL_IOS13, in_scatter15, infer_scatter, NULL, defaults_scatter,
        "Scatters updates into data along axis at the given indices (mode: update/add/sub/mul/div/max/min)."),
    ROW("gather_along_axis", MIL_IOS13, in_gaa15, infer_gather_along_axis, fold_gather_along_axis,
        defaults_gather_along_axis, "np.take_along_axis."),
    ROW("scatter_along_axis", MIL_IOS13, in_scatter15, infer_scatter_along_axis, fold_scatter_along_axis,
        defaults_scatter, "np.put_along_axis with a reduction mode."),
    ROW("gather_nd", MIL_IOS13, in_gnd15, infer_gather_nd, NULL, NULL, "Gathers slices of x at N-d indices."),
    ROW("scatter_nd", MIL_IOS13, in_snd15, infer_scatter_nd, NULL, defaults_scatter_nd,
        "Scatters updates into data at N-d indices."),
    ROW("gather", MIL_IOS16, in_gather16, infer_gather, fold_gather, defaults_gather,
        "Gathers slices of x along axis at the given indices, with batch_dims."),
    ROW("gather_along_axis", MIL_IOS16, in_gaa16, infer_gather_along_axis, fold_gather_along_axis,
        defaults_gather_along_axis, "np.take_along_axis."),
    ROW("gather_nd", MIL_IOS16, in_gnd16, infer_gather_nd, NULL, defaults_gather_nd,
        "Gathers slices of x at N-d indices, with batch_dims."),
    ROW("scatter", MIL_IOS17, in_scatter17, infer_scatter, NULL, defaults_scatter,
        "Scatters updates into data along axis at the given indices."),
    ROW("scatter_along_axis", MIL_IOS17, in_scatter17, infer_scatter_along_axis, fold_scatter_along_axis,
        defaults_scatter, "np.put_along_axis with a reduction mode."),
    ROW("scatter_nd", MIL_IOS17, in_snd17, infer_scatter_nd, NULL, defaults_scatter_nd,
        "Scatters updates into data at N-d indices."),
    ROW("gather", MIL_IOS17, in_gather17, infer_gather, fold_gather, defaults_gather,
        "Gathers slices of x along axis at the given indices, with batch_dims."),
    ROW("gather_along_axis", MIL_IOS17, in_gaa17, infer_gather_along_axis, fold_gather_along_axis,
        defaults_gather_along_axis, "np.take_along_axis."),
    ROW("gather_nd", MIL_IOS17, in_gnd17, infer_gather_nd, NULL, defaults_gather_nd,
        "Gathers slices of x at N-d indices, with batch_dims."),
};
OP_FAMILY_COUNT(scatter_gather);
