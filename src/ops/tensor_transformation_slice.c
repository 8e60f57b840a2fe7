/* slice_by_index (iOS15, iOS17), slice_by_size (iOS15, iOS17) and
 * slice_update (iOS18) of the tensor_transformation family. Mirrors
 * coremltools ops/defs/iOS15/tensor_transformation.py, iOS18/
 * tensor_transformation.py and _utils.py (solve_slice_by_index_shape /
 * solve_slice_by_index_slice). */
#include <string.h>

#include "ops/tensor_transformation_internal.h"

/* The parameters of a slice_by_index-style op, as far as they are known. */
typedef struct slice_args {
  int32_t rank;
  bool has_begin, has_end;
  int64_t begin[TOP_RANK], end[TOP_RANK], stride[TOP_RANK];
  bool has_stride;
  bool bmask[TOP_RANK], emask[TOP_RANK], smask[TOP_RANK];
  int nbegin, nend;
} slice_args;

static mil_status read_mask(mil_infer_ctx *c, const char *name, bool *out, int32_t rank) {
  memset(out, 0, sizeof(bool) * TOP_RANK);
  if (!op_has(c, name)) return MIL_OK;
  int n = op_known_bools(c, name, out, TOP_RANK);
  if (n < 0) return op_fail(c, "input '%s' must be a known bool constant of length rank(x) = %d", name, rank);
  if (n != rank)
    return op_fail(c, "input '%s' must have rank(x) = %d elements, got %d", name, rank, n);
  return MIL_OK;
}

static mil_status read_slice_args(mil_infer_ctx *c, const mil_type *x, slice_args *a) {
  memset(a, 0, sizeof *a);
  a->rank = x->rank;
  a->nbegin = op_known_ints(c, "begin", a->begin, TOP_RANK);
  a->nend = op_known_ints(c, "end", a->end, TOP_RANK);
  /* an empty begin/end counts as unknown, like coremltools */
  a->has_begin = a->nbegin > 0;
  a->has_end = a->nend > 0;
  if (op_has(c, "stride")) {
    int n = op_need_ints(c, "stride", a->stride, TOP_RANK);
    if (n < 0) return MIL_ERR_TYPE;
    if (n != x->rank) return op_fail(c, "input 'stride' must have rank(x) = %d elements, got %d", x->rank, n);
    a->has_stride = true;
  } else {
    for (int32_t i = 0; i < x->rank; i++) a->stride[i] = 1;
  }
  mil_status st;
  if ((st = read_mask(c, "begin_mask", a->bmask, x->rank)) || (st = read_mask(c, "end_mask", a->emask, x->rank)) ||
      (st = read_mask(c, "squeeze_mask", a->smask, x->rank)))
    return st;
  return MIL_OK;
}

static int slice_dims(mil_infer_ctx *c, const mil_type *x, const slice_args *a, mil_dim *dims) {
  return op_slice_shape(c, x, a->has_begin ? a->begin : NULL, a->nbegin, a->has_end ? a->end : NULL, a->nend,
                        a->stride, a->bmask, a->emask, a->smask, dims);
}

static mil_status check_begin_end_rank(mil_infer_ctx *c) {
  const char *names[2] = {"begin", "end"};
  for (int i = 0; i < 2; i++) {
    const mil_type *t = op_type(c, names[i]);
    if (t->rank != 1) return op_fail(c, "input '%s' must be rank 1, got %s", names[i], op_tstr(c, t));
  }
  return MIL_OK;
}

mil_status tt_infer_slice_by_index(mil_infer_ctx *c) {
  const mil_type *x = op_type(c, "x");
  slice_args a;
  mil_status st;
  if (!op_need_rank(c, "x", x)) return MIL_ERR_TYPE;
  if ((st = check_begin_end_rank(c)) || (st = read_slice_args(c, x, &a))) return st;
  mil_dim dims[TOP_RANK];
  int r = slice_dims(c, x, &a, dims);
  if (r < 0) return MIL_ERR_TYPE;
  op_set_out(c, 0, r == 0 ? op_scalar(c, x->dtype) : op_tensor(c, x->dtype, r, dims));
  return MIL_OK;
}

/* Element map of x[slices] (with squeezed dims of length 1); false when a
 * squeezed dim does not select exactly one element. With x given, the
 * slice's value itself in *direct instead when it can be copied run by run
 * (then *map is NULL). */
static bool slice_map(const slice_args *a, const mil_value *x, const int64_t *shape, int64_t **map, int64_t *n,
                      mil_infer_ctx *c, int64_t *oshape, int32_t *orank, mil_value **direct) {
  *direct = NULL;
  *map = NULL;
  int64_t start[TOP_RANK], step[TOP_RANK], len[TOP_RANK];
  *orank = 0;
  for (int32_t i = 0; i < a->rank; i++) {
    if (a->stride[i] == 0) return false;
    step[i] = a->smask[i] ? INT32_MAX : a->stride[i];
    op_py_slice(shape[i], !a->bmask[i], a->begin[i], !(a->emask[i] || a->smask[i]), a->end[i], step[i], &start[i],
                &len[i]);
    if (a->smask[i] && len[i] != 1) return false;
    if (!a->smask[i]) oshape[(*orank)++] = len[i];
  }
  *n = op_numel(a->rank, len);
  /* the elements copied run by run when the dtype allows (no map) */
  mil_dtype dt = x ? x->type->dtype : MIL_DT_UNUSED;
  bool ok = x && (*orank > 0 || dt == MIL_DT_INT32 || dt == MIL_DT_INT64 || dt == MIL_DT_FP32 || dt == MIL_DT_FP64);
  *direct = ok ? op_value_slice(c, dt, a->rank, shape, start, step, len, *orank, oshape, *orank == 0, x) : NULL;
  if (*direct) return true;
  *map = op_tmp_alloc(c, (size_t)(*n ? *n : 1) * sizeof **map);
  if (!*map) return false;
  op_map_slice(a->rank, shape, start, step, len, *map);
  return true;
}

mil_status tt_fold_slice_by_index(mil_infer_ctx *c) {
  const mil_value *x = op_val(c, "x");
  if (!x) return op_fold_symbolic(c);
  slice_args a;
  int64_t shape[TOP_RANK], oshape[TOP_RANK], *map, n;
  int32_t rank, orank;
  if (!op_foldable_dtype(x->type->dtype)) return MIL_OK;
  if (!op_value_shape(x, shape, &rank)) return MIL_OK;
  mil_diag *saved = c->diag;
  c->diag = NULL; /* the inputs were checked by infer */
  mil_status st = read_slice_args(c, x->type, &a);
  c->diag = saved;
  if (st || !a.has_begin || !a.has_end || a.nbegin != rank || a.nend != rank) return MIL_OK;
  mil_value *direct;
  if (!slice_map(&a, x, shape, &map, &n, c, oshape, &orank, &direct)) return MIL_OK;
  if (direct) {
    op_set_val(c, 0, direct);
    return MIL_OK;
  }
  mil_dtype dt = x->type->dtype;
  bool ok = orank > 0 || dt == MIL_DT_INT32 || dt == MIL_DT_INT64 || dt == MIL_DT_FP32 || dt == MIL_DT_FP64;
  if (ok) op_set_val(c, 0, op_value_from_map(c, dt, orank, oshape, orank == 0, x, map, NULL));
  op_tmp_free(c, map, (size_t)(n ? n : 1) * sizeof *map);
  return MIL_OK;
}

/* ---- slice_by_size ---- */

mil_status tt_infer_slice_by_size(mil_infer_ctx *c) {
  const mil_type *x = op_type(c, "x"), *bt = op_type(c, "begin"), *zt = op_type(c, "size");
  if (!op_need_rank(c, "x", x)) return MIL_ERR_TYPE;
  if (bt->rank != 1) return op_fail(c, "begin should be 1-D tensor, got %d-D tensor instead", bt->rank);
  if (zt->rank != 1) return op_fail(c, "size should be 1-D tensor, got %d-D tensor instead", zt->rank);
  if (bt->dims[0].size >= 0 && x->rank != bt->dims[0].size)
    return op_fail(c, "Length of begin %lld doesn't equal to input rank %d.", (long long)bt->dims[0].size, x->rank);
  if (zt->dims[0].size >= 0 && x->rank != zt->dims[0].size)
    return op_fail(c, "Length of size %lld doesn't equal to input rank %d.", (long long)zt->dims[0].size, x->rank);
  mil_dim dims[TOP_RANK];
  op_symval *size = op_tmp_alloc(c, sizeof *size), *begin = op_tmp_alloc(c, sizeof *begin);
  if (!size || !begin) {
    op_tmp_free(c, size, sizeof *size);
    op_tmp_free(c, begin, sizeof *begin);
    return MIL_ERR_NOMEM;
  }
  bool have_size = op_in_symval(c, "size", 0, size) && size->n == x->rank;
  bool have_begin = op_in_symval(c, "begin", 0, begin) && begin->n == x->rank;
  for (int32_t i = 0; i < x->rank; i++) {
    if (!have_size) {
      dims[i] = op_dim_sym(c);
      continue;
    }
    const op_sym *s = &size->e[i];
    if (s->kind != OP_SYM_KNOWN) dims[i] = op_sym_dim(c, s);
    else if (s->x != -1) dims[i] = op_dim(op_sym_i64(s->x));
    else if (have_begin) {
      const op_sym *b = &begin->e[i];
      if (b->kind == OP_SYM_KNOWN && b->x == 0) dims[i] = x->dims[i];
      else if (b->kind == OP_SYM_KNOWN && x->dims[i].size >= 0) dims[i] = op_dim_add(c, x->dims[i], -op_sym_i64(b->x));
      else dims[i] = op_dim_sym(c);
    } else {
      dims[i] = op_dim_sym(c);
    }
  }
  op_tmp_free(c, size, sizeof *size);
  op_tmp_free(c, begin, sizeof *begin);
  op_set_out(c, 0, op_tensor(c, x->dtype, x->rank, dims));
  return MIL_OK;
}

mil_status tt_fold_slice_by_size(mil_infer_ctx *c) {
  const mil_value *x = op_val(c, "x");
  int64_t shape[TOP_RANK], begin[TOP_RANK], size[TOP_RANK], start[TOP_RANK], step[TOP_RANK],
      len[TOP_RANK];
  int32_t rank;
  if (!x || !op_foldable_dtype(x->type->dtype)) return MIL_OK;
  if (!op_value_shape(x, shape, &rank)) return MIL_OK;
  if (op_known_ints(c, "begin", begin, TOP_RANK) != rank || op_known_ints(c, "size", size, TOP_RANK) != rank)
    return MIL_OK;
  for (int32_t i = 0; i < rank; i++) {
    int64_t b = begin[i] < 0 ? begin[i] + shape[i] : begin[i];
    step[i] = 1;
    if (size[i] > 0) op_py_slice(shape[i], true, b, true, b + size[i], 1, &start[i], &len[i]);
    else op_py_slice(shape[i], true, b, false, 0, 1, &start[i], &len[i]);
  }
  int64_t n = op_numel(rank, len);
  int64_t *map = op_tmp_alloc(c, (size_t)(n ? n : 1) * sizeof *map);
  if (!map) return MIL_OK;
  op_map_slice(rank, shape, start, step, len, map);
  op_set_val(c, 0, op_value_from_map(c, x->type->dtype, rank, len, false, x, map, NULL));
  op_tmp_free(c, map, (size_t)(n ? n : 1) * sizeof *map);
  return MIL_OK;
}

/* ---- slice_update ---- */

mil_status tt_infer_slice_update(mil_infer_ctx *c) {
  const mil_type *x = op_type(c, "x"), *u = op_type(c, "update");
  slice_args a;
  mil_status st;
  if (!op_need_rank(c, "x", x)) return MIL_ERR_TYPE;
  if ((st = check_begin_end_rank(c)) || (st = read_slice_args(c, x, &a))) return st;
  mil_dim dims[TOP_RANK];
  int r = slice_dims(c, x, &a, dims);
  if (r < 0) return MIL_ERR_TYPE;
  bool ok = u->rank == r;
  for (int i = 0; ok && i < r; i++)
    ok = dims[i].size < 0 || u->dims[i].size < 0 || dims[i].size == u->dims[i].size;
  if (!ok) {
    const mil_type *want = op_tensor(c, u->dtype, r, dims);
    return op_fail(c, "The update tensor should have shape %s. Got %s", op_tstr(c, want), op_tstr(c, u));
  }
  if (u->rank == 0) return op_fail(c, "rank-0 'update' is not supported in 'slice_update' op %s.", c->op->name);
  op_set_out(c, 0, x);
  return MIL_OK;
}

mil_status tt_fold_slice_update(mil_infer_ctx *c) {
  const mil_value *x = op_val(c, "x"), *u = op_val(c, "update");
  if (!x || !u || !op_foldable_dtype(x->type->dtype)) return MIL_OK;
  slice_args a;
  int64_t shape[TOP_RANK], oshape[TOP_RANK], *map, n;
  int32_t rank, orank;
  if (!op_value_shape(x, shape, &rank)) return MIL_OK;
  mil_diag *saved = c->diag;
  c->diag = NULL;
  mil_status st = read_slice_args(c, x->type, &a);
  c->diag = saved;
  if (st || !a.has_begin || !a.has_end || a.nbegin != rank || a.nend != rank) return MIL_OK;
  mil_value *direct; /* none: x is not given (the update needs the map) */
  if (!slice_map(&a, NULL, shape, &map, &n, c, oshape, &orank, &direct)) return MIL_OK;
  if (n == u->numel) {
    mil_value *v = mil_value_new_tensor(c->prog, x->type->dtype, rank, shape, x->type->is_scalar, mil_value_data(x));
    if (v) {
      for (int64_t k = 0; k < n; k++) op_copy_elem(v, map[k], u, k);
      op_set_val(c, 0, v);
    }
  }
  op_tmp_free(c, map, (size_t)(n ? n : 1) * sizeof *map);
  return MIL_OK;
}
