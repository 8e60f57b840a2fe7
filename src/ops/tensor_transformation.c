/* Op family "tensor_transformation" (coremltools ops/defs/iOS15, iOS16,
 * iOS17, iOS18 tensor_transformation.py): the family table, and the
 * layout ops depth_to_space, space_to_depth, pixel_shuffle,
 * pixel_unshuffle, space_to_batch, batch_to_space, expand_dims, squeeze,
 * transpose, reverse, reverse_sequence, sliding_windows. reshape and
 * reshape_like live in tensor_transformation_reshape.c, the slicing ops in
 * tensor_transformation_slice.c. */
#include <string.h>

#include "ops/ops_defaults.h"
#include "ops/tensor_transformation_internal.h"

/* ---- rank-4 block rearrangements ---- */

static bool need_rank4(mil_infer_ctx *c, const mil_type *x) {
  if (x->rank == 4) return true;
  op_fail(c, "input 'x' must be rank 4 (n, C, H, W), got %s", op_tstr(c, x));
  return false;
}

/* depth_to_space / space_to_depth / pixel_shuffle / pixel_unshuffle */
static mil_status infer_block4(mil_infer_ctx *c, const char *factor_name, bool to_depth) {
  const mil_type *x = op_type(c, "x");
  int64_t f;
  if (!need_rank4(c, x) || !op_need_int(c, factor_name, &f)) return MIL_ERR_TYPE;
  if (f <= 0) return op_fail(c, "input '%s' must be positive, got %lld", factor_name, (long long)f);
  mil_dim d[4] = {x->dims[0], x->dims[1], x->dims[2], x->dims[3]};
  if (to_depth) {
    d[1] = op_dim_mul(c, d[1], f * f);
    d[2] = op_dim_div(c, d[2], f);
    d[3] = op_dim_div(c, d[3], f);
  } else {
    d[1] = op_dim_div(c, d[1], f * f);
    d[2] = op_dim_mul(c, d[2], f);
    d[3] = op_dim_mul(c, d[3], f);
  }
  op_set_out(c, 0, op_tensor(c, x->dtype, 4, d));
  return MIL_OK;
}

static mil_status infer_depth_to_space(mil_infer_ctx *c) { return infer_block4(c, "block_size", false); }
static mil_status infer_space_to_depth(mil_infer_ctx *c) { return infer_block4(c, "block_size", true); }
static mil_status infer_pixel_shuffle(mil_infer_ctx *c) { return infer_block4(c, "upscale_factor", false); }
static mil_status infer_pixel_unshuffle(mil_infer_ctx *c) { return infer_block4(c, "downscale_factor", true); }

/* space_to_batch / batch_to_space: block_shape (2,), paddings/crops (2, 2). */
static mil_status infer_space_batch(mil_infer_ctx *c, bool to_batch) {
  const char *pname = to_batch ? "paddings" : "crops";
  const mil_type *x = op_type(c, "x");
  int64_t bs[4], pd[8];
  if (x->rank != 4)
    return op_fail(c, "input 'x' of %s must be rank 4, got %s", c->def->type, op_tstr(c, x));
  int nb = op_need_ints(c, "block_shape", bs, 4);
  if (nb < 0) return MIL_ERR_TYPE;
  int np_ = op_need_ints(c, pname, pd, 8);
  if (np_ < 0) return MIL_ERR_TYPE;
  const mil_type *pt = op_type(c, pname), *bt = op_type(c, "block_shape");
  if (bt->rank != 1 || pt->rank != 2 || pt->dims[0].size != bt->dims[0].size || pt->dims[1].size != 2)
    return op_fail(c, "block_shape and %s must have shape [2], [2, 2] accordingly in the %s op. Got %s, %s", pname,
                   c->def->type, op_tstr(c, bt), op_tstr(c, pt));
  if (nb != 2) return op_fail(c, "%s op only supports spatial dimensions = 2. Got %d", c->def->type, nb);
  int64_t prod = bs[0] * bs[1];
  if (prod <= 0) return op_fail(c, "input 'block_shape' must be positive, got [%lld, %lld]", (long long)bs[0], (long long)bs[1]);
  mil_dim d[4] = {x->dims[0], x->dims[1], x->dims[2], x->dims[3]};
  if (to_batch) {
    d[0] = op_dim_mul(c, d[0], prod);
    for (int i = 0; i < 2; i++) d[2 + i] = op_dim_div(c, op_dim_add(c, d[2 + i], pd[2 * i] + pd[2 * i + 1]), bs[i]);
  } else {
    if (d[0].size >= 0 && d[0].size % prod != 0)
      return op_fail(c,
                     "Batch size must be perfectly divided by the product of block_shape. Got batch size %lld, and "
                     "block_shape [%lld, %lld].",
                     (long long)d[0].size, (long long)bs[0], (long long)bs[1]);
    d[0] = op_dim_div(c, d[0], prod);
    for (int i = 0; i < 2; i++) d[2 + i] = op_dim_add(c, op_dim_mul(c, d[2 + i], bs[i]), -(pd[2 * i] + pd[2 * i + 1]));
  }
  op_set_out(c, 0, op_tensor(c, x->dtype, 4, d));
  return MIL_OK;
}

static mil_status infer_space_to_batch(mil_infer_ctx *c) { return infer_space_batch(c, true); }
static mil_status infer_batch_to_space(mil_infer_ctx *c) { return infer_space_batch(c, false); }

/* ---- expand_dims / squeeze ---- */

static mil_status infer_expand_dims(mil_infer_ctx *c) {
  const mil_type *x = op_type(c, "x");
  int64_t axes[TOP_RANK];
  if (!op_need_rank(c, "x", x)) return MIL_ERR_TYPE;
  int na = op_need_ints(c, "axes", axes, TOP_RANK);
  if (na < 0) return MIL_ERR_TYPE;
  int32_t out_rank = x->rank + na;
  if (out_rank > TOP_RANK) return op_fail(c, "output rank %d is larger than supported (%d)", out_rank, TOP_RANK);
  int64_t sorted[TOP_RANK];
  for (int i = 0; i < na; i++) {
    if (axes[i] <= -out_rank - 1 || axes[i] >= out_rank)
      return op_fail(c, "Axis value %lld is out of bounds for expand_dims node \"%s\" of shape %s", (long long)axes[i],
                     c->op->name, op_tstr(c, x));
    sorted[i] = axes[i] < 0 ? axes[i] + out_rank : axes[i];
  }
  for (int i = 1; i < na; i++)
    for (int j = i; j > 0 && sorted[j - 1] > sorted[j]; j--) {
      int64_t t = sorted[j];
      sorted[j] = sorted[j - 1];
      sorted[j - 1] = t;
    }
  mil_dim d[TOP_RANK];
  int32_t r = x->rank;
  for (int32_t i = 0; i < r; i++) d[i] = x->dims[i];
  for (int i = 0; i < na; i++) { /* list.insert semantics */
    int64_t a = sorted[i] > r ? r : sorted[i];
    memmove(&d[a + 1], &d[a], (size_t)(r - a) * sizeof d[0]);
    d[a] = op_dim(1);
    r++;
  }
  op_set_out(c, 0, op_tensor(c, x->dtype, r, d));
  return MIL_OK;
}

static mil_status infer_squeeze(mil_infer_ctx *c) {
  const mil_type *x = op_type(c, "x");
  if (!op_need_rank(c, "x", x)) return MIL_ERR_TYPE;
  bool drop[TOP_RANK] = {0};
  if (!op_has(c, "axes")) {
    for (int32_t i = 0; i < x->rank; i++) drop[i] = x->dims[i].size == 1;
  } else {
    int64_t axes[TOP_RANK];
    int na = op_need_ints(c, "axes", axes, TOP_RANK);
    if (na < 0) return MIL_ERR_TYPE;
    for (int i = 0; i < na; i++) {
      int64_t a = axes[i] < 0 ? axes[i] + x->rank : axes[i];
      if (a < 0 || a >= x->rank)
        return op_fail(c, "Invalid axis %lld in squeeze. The axis should be smaller than %d", (long long)a, x->rank);
      drop[a] = x->dims[a].size == 1;
    }
  }
  mil_dim d[TOP_RANK];
  int32_t r = 0;
  for (int32_t i = 0; i < x->rank; i++)
    if (!drop[i]) d[r++] = x->dims[i];
  op_set_out(c, 0, r ? op_tensor(c, x->dtype, r, d) : op_scalar(c, x->dtype));
  return MIL_OK;
}

/* expand_dims / squeeze / reshape-like folds: same elements, new shape. */
mil_status tt_fold_same_elems(mil_infer_ctx *c) {
  const mil_value *x = op_val(c, "x");
  int64_t shape[TOP_RANK];
  int32_t rank;
  if (!x || x->kind != MIL_VAL_TENSOR || !op_static_shape(c->out[0], shape, &rank)) return MIL_OK;
  if (op_numel(rank, shape) != x->numel) return MIL_OK;
  op_set_val(c, 0, mil_value_new_tensor(c->prog, x->type->dtype, rank, shape, c->out[0]->is_scalar, NULL));
  if (c->val[0]) {
    mil_value *v = (mil_value *)c->val[0];
    if (x->type->dtype == MIL_DT_STRING)
      for (int64_t i = 0; i < x->numel; i++) ((const char **)mil_value_data_mut(v))[i] = mil_value_get_str(x, i);
    else if (x->nbytes)
      memcpy(mil_value_data_mut(v), mil_value_data(x), x->nbytes);
  }
  return MIL_OK;
}

/* ---- transpose ---- */

static mil_status infer_transpose(mil_infer_ctx *c) {
  const mil_type *x = op_type(c, "x");
  int64_t perm[TOP_RANK];
  if (!op_need_rank(c, "x", x)) return MIL_ERR_TYPE;
  int np_ = op_need_ints(c, "perm", perm, TOP_RANK);
  if (np_ < 0) return MIL_ERR_TYPE;
  if (np_ != x->rank)
    return op_fail(c, "perm should have the same length as rank(x): %d != %d (x is %s)", np_, x->rank, op_tstr(c, x));
  if (x->rank == 0) {
    op_set_out(c, 0, x);
    return MIL_OK;
  }
  mil_dim d[TOP_RANK];
  for (int i = 0; i < np_; i++) {
    int64_t p = perm[i] < 0 ? perm[i] + x->rank : perm[i];
    if (p < 0 || p >= x->rank)
      return op_fail(c, "input 'perm' has index %lld out of range for rank %d", (long long)perm[i], x->rank);
    d[i] = x->dims[p];
  }
  op_set_out(c, 0, op_tensor(c, x->dtype, x->rank, d));
  return MIL_OK;
}

/* True when old (the value output 0 of c->op had) has exactly the form of
 * the value folding would make now from x: dtype, shape and scalar flag of
 * the inferred output, element count, bytes owned by the program. */
static bool refold_matches(const mil_infer_ctx *c, const mil_value *old, const mil_value *x, int32_t rank,
                           const int64_t *oshape) {
  const mil_type *t = old->type, *out = c->out[0];
  if (old->kind != MIL_VAL_TENSOR || old->storage != MIL_STORE_ARENA || old->blob_file) return false;
  if (!t || t->kind != MIL_TYPE_TENSOR || t->dtype != x->type->dtype || t->dtype != out->dtype) return false;
  if (t->is_scalar != out->is_scalar || old->numel != x->numel || old->nbytes != x->nbytes || t->rank != rank)
    return false;
  for (int32_t i = 0; i < rank; i++)
    if (t->dims[i].size != oshape[i]) return false;
  return op_out_shape_is(c, 0, rank, oshape);
}

static mil_status fold_transpose(mil_infer_ctx *c) {
  const mil_value *x = op_val(c, "x");
  int64_t perm[TOP_RANK], shape[TOP_RANK], oshape[TOP_RANK];
  int32_t rank;
  if (!x || !op_foldable_dtype(x->type->dtype) || c->out[0]->rank == 0) return MIL_OK;
  if (!op_value_shape(x, shape, &rank)) return MIL_OK;
  if (op_known_ints(c, "perm", perm, TOP_RANK) != rank) return MIL_OK;
  bool seen[TOP_RANK] = {0};
  for (int32_t i = 0; i < rank; i++) {
    if (perm[i] < 0) perm[i] += rank;
    if (seen[perm[i]]) return MIL_OK; /* numpy rejects repeated axes */
    seen[perm[i]] = true;
    oshape[i] = shape[perm[i]];
  }
  size_t es = mil_dtype_size(x->type->dtype);
  if (mil_value_is_deferred(x) || ((x->file_mapped || x->stable_view) && x->nbytes >= ((size_t)16 << 10))) {
    /* a weight's transpose is computed when read (mostly by the weight
     * writer); inferring the op again finds the same recipe and keeps it */
    mil_value *v = mil_value_new_deferred_transpose(c->prog, x, rank, perm);
    if (v && refold_matches(c, v, x, rank, oshape)) {
      const mil_value *old = c->op->n_outputs > 0 ? c->op->outputs[0]->val : NULL;
      bool same = old && mil_value_is_deferred(old) && old->type == v->type &&
                  mil_value_deferred_source(old) == mil_value_deferred_source(v) && mil_value_equal(old, v);
      c->val[0] = same ? old : v;
      return MIL_OK;
    }
  }
  if (es && !mil_dtype_is_subbyte(x->type->dtype) && op_numel(rank, shape) == x->numel) {
    /* whole bytes per element. Inferring an op again (passes do it for
     * every op of a block) finds the value it folded before: when that one
     * still holds the transposed bytes it is kept, sparing a new buffer. */
    const mil_value *old = c->op->n_outputs > 0 ? c->op->outputs[0]->val : NULL;
    if (old && refold_matches(c, old, x, rank, oshape) &&
        (!old->numel || op_transpose_equal(mil_value_data(old), mil_value_data(x), es, rank, shape, perm))) {
      c->val[0] = old;
      mil_program_release_value_pages(c->prog, x, 0, x->nbytes); /* a weight read through its file mapping need not stay resident */
      return MIL_OK;
    }
    /* a blocked copy into bytes not zeroed first (every one is written) */
    mil_value *v = mil_value_new_tensor_uninit(c->prog, x->type->dtype, rank, oshape, false);
    if (v && v->numel) op_transpose_data(mil_value_data_mut(v), mil_value_data(x), es, rank, shape, perm);
    mil_program_release_value_pages(c->prog, x, 0, x->nbytes);
    op_set_val(c, 0, v);
    return MIL_OK;
  }
  int64_t *map = op_tmp_alloc(c, (size_t)(x->numel ? x->numel : 1) * sizeof *map);
  if (!map) return MIL_OK;
  op_map_transpose(rank, shape, perm, map);
  op_set_val(c, 0, op_value_from_map(c, x->type->dtype, rank, oshape, false, x, map, NULL));
  op_tmp_free(c, map, (size_t)(x->numel ? x->numel : 1) * sizeof *map);
  return MIL_OK;
}

/* ---- reverse / reverse_sequence ---- */

static mil_status infer_reverse(mil_infer_ctx *c) {
  const mil_type *x = op_type(c, "x");
  if (op_has(c, "axes")) {
    int64_t axes[TOP_RANK * 4];
    int na = op_need_ints(c, "axes", axes, TOP_RANK * 4);
    if (na < 0) return MIL_ERR_TYPE;
    for (int i = 0; i < na && x->rank >= 0; i++)
      if (axes[i] < -x->rank || axes[i] >= x->rank)
        return op_fail(c, "axis %lld of input 'axes' is out of range for %s", (long long)axes[i], op_tstr(c, x));
  }
  op_set_out(c, 0, x);
  return MIL_OK;
}

static mil_status fold_reverse(mil_infer_ctx *c) {
  const mil_value *x = op_val(c, "x");
  int64_t shape[TOP_RANK], st[TOP_RANK], axes[TOP_RANK * 4];
  int32_t rank;
  if (!x || !op_foldable_dtype(x->type->dtype)) return MIL_OK;
  if (!op_value_shape(x, shape, &rank)) return MIL_OK;
  bool flip[TOP_RANK] = {0};
  if (op_has(c, "axes")) {
    int na = op_known_ints(c, "axes", axes, TOP_RANK * 4);
    if (na < 0) return MIL_OK;
    for (int i = 0; i < na; i++) flip[axes[i] < 0 ? axes[i] + rank : axes[i]] ^= true;
  } else {
    for (int32_t i = 0; i < rank; i++) flip[i] = true;
  }
  int64_t *map = op_tmp_alloc(c, (size_t)(x->numel ? x->numel : 1) * sizeof *map);
  if (!map) return MIL_OK;
  op_strides(rank, shape, st);
  for (int64_t k = 0; k < x->numel; k++) {
    int64_t rem = k, src = 0;
    for (int32_t d = rank - 1; d >= 0; d--) {
      int64_t i = rem % shape[d];
      rem /= shape[d];
      src += (flip[d] ? shape[d] - 1 - i : i) * st[d];
    }
    map[k] = src;
  }
  op_set_val(c, 0, op_value_from_map(c, x->type->dtype, rank, shape, x->type->is_scalar, x, map, NULL));
  op_tmp_free(c, map, (size_t)(x->numel ? x->numel : 1) * sizeof *map);
  return MIL_OK;
}

static mil_status infer_reverse_sequence(mil_infer_ctx *c) {
  const mil_type *x = op_type(c, "x");
  int64_t sa, ba;
  if (!op_int_or(c, "seq_axis", 0, &sa) || !op_int_or(c, "batch_axis", 0, &ba)) return MIL_ERR_TYPE;
  if (x->rank >= 0 && (sa < -x->rank || sa >= x->rank || ba < -x->rank || ba >= x->rank))
    return op_fail(c, "seq_axis %lld / batch_axis %lld out of range for %s", (long long)sa, (long long)ba,
                   op_tstr(c, x));
  op_set_out(c, 0, x);
  return MIL_OK;
}

static mil_status defaults_reverse_sequence(mil_infer_ctx *c) {
  mil_status st = op_add_default_int(c, "seq_axis", 0);
  return st ? st : op_add_default_int(c, "batch_axis", 0);
}

/* ---- sliding_windows ---- */

static mil_status infer_sliding_windows(mil_infer_ctx *c) {
  const mil_type *x = op_type(c, "x");
  int64_t axis, size, stride;
  if (!op_need_rank(c, "x", x) || !op_need_int(c, "axis", &axis) || !op_need_int(c, "size", &size) ||
      !op_int_or(c, "stride", 1, &stride))
    return MIL_ERR_TYPE;
  if (x->rank + 1 > TOP_RANK) return op_fail(c, "rank of x is larger than supported");
  if (axis < -x->rank || axis >= x->rank)
    return op_fail(c, "input 'axis' (%lld) is out of range for %s", (long long)axis, op_tstr(c, x));
  if (stride <= 0) return op_fail(c, "input 'stride' must be positive, got %lld", (long long)stride);
  int64_t a = axis < 0 ? axis + x->rank : axis;
  mil_dim d[TOP_RANK];
  for (int32_t i = 0; i < x->rank; i++) d[i] = x->dims[i];
  d[a] = x->dims[a].size >= 0 ? op_dim_add(c, op_dim_div(c, op_dim(x->dims[a].size - size), stride), 1) : op_dim_sym(c);
  memmove(&d[a + 2], &d[a + 1], (size_t)(x->rank - a - 1) * sizeof d[0]);
  d[a + 1] = op_dim(size);
  op_set_out(c, 0, op_tensor(c, x->dtype, x->rank + 1, d));
  return MIL_OK;
}

static mil_status defaults_sliding_windows(mil_infer_ctx *c) { return op_add_default_int(c, "stride", 1); }

/* ---- input specs ---- */

#define TIN(n, d, tv) IN_SPEC(n, MIL_IK_TENSOR, d, tv, 0, NULL)
#define TC(n, d, tv) IN_SPEC(n, MIL_IK_TENSOR, d, tv, MIL_IF_CONST, NULL)
#define TOPT(n, d, tv, dflt) IN_SPEC(n, MIL_IK_TENSOR, d, tv, MIL_IF_CONST | MIL_IF_OPTIONAL, dflt)
#define TUP(n) IN_SPEC(n, MIL_IK_TUPLE | MIL_IK_TENSOR, MIL_DTS_ANY, NULL, 0, NULL)
#define I32 MIL_DTS_INT32
#define BOOLS MIL_DTS_BOOL

static const mil_input_spec in_d2s[] = {TIN("x", MIL_DTS_FLOAT, "T"), TC("block_size", I32, NULL)};
static const mil_input_spec in_expand15[] = {TIN("x", OP_DTS_T15, "T"), TC("axes", I32, NULL)};
static const mil_input_spec in_expand17[] = {TIN("x", OP_DTS_T17, "T"), TC("axes", I32, NULL)};
static const mil_input_spec in_reshape15[] = {TIN("x", OP_DTS_T15, "T"), TIN("shape", I32, NULL)};
static const mil_input_spec in_reshape17[] = {TIN("x", OP_DTS_T17, "T"), TIN("shape", OP_DTS_I17, "U")};
static const mil_input_spec in_reverse15[] = {TIN("x", OP_DTS_T15, "T"), TOPT("axes", I32, NULL, "None")};
static const mil_input_spec in_reverse17[] = {TIN("x", OP_DTS_T17, "T"), TOPT("axes", I32, NULL, "None")};
static const mil_input_spec in_revseq15[] = {TIN("x", OP_DTS_T15, "T"), TIN("lengths", I32, NULL),
                                             TOPT("seq_axis", I32, NULL, "0"), TOPT("batch_axis", I32, NULL, "0")};
static const mil_input_spec in_revseq17[] = {TIN("x", OP_DTS_T17, "T"), TIN("lengths", OP_DTS_I17, "U"),
                                             TOPT("seq_axis", I32, NULL, "0"), TOPT("batch_axis", I32, NULL, "0")};
static const mil_input_spec in_sbi15[] = {TIN("x", OP_DTS_T15, "T"),
                                          TIN("begin", I32, NULL),
                                          TIN("end", I32, NULL),
                                          TOPT("stride", I32, NULL, "None"),
                                          TOPT("begin_mask", BOOLS, NULL, "None"),
                                          TOPT("end_mask", BOOLS, NULL, "None"),
                                          TOPT("squeeze_mask", BOOLS, NULL, "None")};
static const mil_input_spec in_sbi17[] = {TIN("x", OP_DTS_T17, "T"),
                                          TIN("begin", OP_DTS_I17, "U"),
                                          TIN("end", OP_DTS_I17, "U"),
                                          TOPT("stride", OP_DTS_I17, "U", "None"),
                                          TOPT("begin_mask", BOOLS, NULL, "None"),
                                          TOPT("end_mask", BOOLS, NULL, "None"),
                                          TOPT("squeeze_mask", BOOLS, NULL, "None")};
static const mil_input_spec in_sbs15[] = {TIN("x", OP_DTS_T15, "T"), TIN("begin", I32, NULL), TIN("size", I32, NULL)};
static const mil_input_spec in_sbs17[] = {TIN("x", OP_DTS_T17, "T"), TIN("begin", OP_DTS_I17, "U"),
                                          TIN("size", OP_DTS_I17, "U")};
static const mil_input_spec in_s2b[] = {TIN("x", MIL_DTS_FLOAT, "T"), TC("block_shape", I32, NULL),
                                        TC("paddings", I32, NULL)};
static const mil_input_spec in_b2s[] = {TIN("x", MIL_DTS_FLOAT, "T"), TC("block_shape", I32, NULL),
                                        TC("crops", I32, NULL)};
static const mil_input_spec in_squeeze15[] = {TIN("x", OP_DTS_T15, "T"), TOPT("axes", I32, NULL, "None")};
static const mil_input_spec in_squeeze17[] = {TIN("x", OP_DTS_T17, "T"), TOPT("axes", I32, NULL, "None")};
static const mil_input_spec in_transpose15[] = {TIN("x", OP_DTS_T15, "T"), TC("perm", I32, NULL)};
static const mil_input_spec in_transpose17[] = {TIN("x", OP_DTS_T17, "T"), TC("perm", I32, NULL)};
static const mil_input_spec in_pshuffle[] = {TIN("x", MIL_DTS_FLOAT, "T"), TC("upscale_factor", I32, NULL)};
static const mil_input_spec in_punshuffle[] = {TIN("x", MIL_DTS_FLOAT, "T"),
                                               TC("downscale_factor", MIL_DTB(MIL_DT_UINT32), NULL)};
static const mil_input_spec in_sw15[] = {TIN("x", MIL_DTS_FLOAT_INT32, "T"), TC("axis", I32, NULL),
                                         TC("size", I32, NULL), TOPT("stride", I32, NULL, "1")};
static const mil_input_spec in_sw17[] = {TIN("x", OP_DTS_T17, "T"), TC("axis", I32, NULL), TC("size", I32, NULL),
                                         TOPT("stride", I32, NULL, "1")};
static const mil_input_spec in_rlike16[] = {TIN("x", OP_DTS_T15, "T"), TUP("ref_tensors"), TUP("begins"), TUP("ends"),
                                            TUP("end_masks")};
static const mil_input_spec in_rlike17[] = {TIN("x", OP_DTS_T17, "T"), TUP("ref_tensors"), TUP("begins"), TUP("ends"),
                                            TUP("end_masks")};
static const mil_input_spec in_supdate[] = {TIN("x", OP_DTS_T17, "T"),
                                            TIN("update", OP_DTS_T17, "T"),
                                            TIN("begin", OP_DTS_I17, "U"),
                                            TIN("end", OP_DTS_I17, "U"),
                                            TOPT("stride", OP_DTS_I17, "U", "None"),
                                            TOPT("begin_mask", BOOLS, NULL, "None"),
                                            TOPT("end_mask", BOOLS, NULL, "None"),
                                            TOPT("squeeze_mask", BOOLS, NULL, "None")};

#define N(a) (int32_t)(sizeof a / sizeof a[0])
#define ROW(t, v, in, inf, fold, dfl, doc) {t, v, "tensor_transformation", in, N(in), 1, inf, fold, dfl, doc}

const mil_op_def op_defs_tensor_transformation[] = {
    ROW("depth_to_space", MIL_IOS13, in_d2s, infer_depth_to_space, NULL, NULL,
        "Rearranges channel blocks into spatial blocks."),
    ROW("expand_dims", MIL_IOS13, in_expand15, infer_expand_dims, tt_fold_same_elems, NULL,
        "Inserts size-1 dimensions at the given axes."),
    ROW("reshape", MIL_IOS13, in_reshape15, tt_infer_reshape, tt_fold_reshape, NULL,
        "Reshapes x to `shape` (0 copies a dim of x, -1 is inferred)."),
    ROW("reverse", MIL_IOS13, in_reverse15, infer_reverse, fold_reverse, NULL, "Reverses x along the given axes."),
    ROW("reverse_sequence", MIL_IOS13, in_revseq15, infer_reverse_sequence, NULL, defaults_reverse_sequence,
        "Reverses the first lengths[i] elements along seq_axis of each batch slice."),
    ROW("slice_by_index", MIL_IOS13, in_sbi15, tt_infer_slice_by_index, tt_fold_slice_by_index, NULL,
        "numpy-style strided slicing with begin/end/squeeze masks."),
    ROW("slice_by_size", MIL_IOS13, in_sbs15, tt_infer_slice_by_size, tt_fold_slice_by_size, NULL,
        "Slices `size` elements from `begin` in each dimension (-1: to the end)."),
    ROW("space_to_depth", MIL_IOS13, in_d2s, infer_space_to_depth, NULL, NULL,
        "Rearranges spatial blocks into channels."),
    ROW("space_to_batch", MIL_IOS13, in_s2b, infer_space_to_batch, NULL, NULL,
        "Moves padded spatial blocks into the batch dimension."),
    ROW("batch_to_space", MIL_IOS13, in_b2s, infer_batch_to_space, NULL, NULL,
        "Moves batch blocks back into cropped spatial dimensions."),
    ROW("squeeze", MIL_IOS13, in_squeeze15, infer_squeeze, tt_fold_same_elems, NULL,
        "Removes size-1 dimensions (all, or those in axes)."),
    ROW("transpose", MIL_IOS13, in_transpose15, infer_transpose, fold_transpose, NULL,
        "Permutes the dimensions of x."),
    ROW("pixel_shuffle", MIL_IOS13, in_pshuffle, infer_pixel_shuffle, NULL, NULL,
        "PyTorch PixelShuffle: channels to spatial."),
    ROW("sliding_windows", MIL_IOS13, in_sw15, infer_sliding_windows, NULL, defaults_sliding_windows,
        "All windows of `size` elements along axis, `stride` apart."),
    ROW("reshape_like", MIL_IOS16, in_rlike16, tt_infer_reshape_like, NULL, NULL,
        "Reshapes x to a shape assembled from slices of reference tensors' shapes."),
    ROW("pixel_unshuffle", MIL_IOS16, in_punshuffle, infer_pixel_unshuffle, NULL, NULL,
        "PyTorch PixelUnshuffle: spatial to channels."),
    ROW("reshape", MIL_IOS17, in_reshape17, tt_infer_reshape, tt_fold_reshape, NULL,
        "Reshapes x to `shape` (0 copies the right-aligned dim of x, -1 is inferred)."),
    ROW("reshape_like", MIL_IOS17, in_rlike17, tt_infer_reshape_like, NULL, NULL,
        "Reshapes x to a shape assembled from slices of reference tensors' shapes."),
    ROW("expand_dims", MIL_IOS17, in_expand17, infer_expand_dims, tt_fold_same_elems, NULL,
        "Inserts size-1 dimensions at the given axes."),
    ROW("squeeze", MIL_IOS17, in_squeeze17, infer_squeeze, tt_fold_same_elems, NULL,
        "Removes size-1 dimensions (all, or those in axes)."),
    ROW("reverse", MIL_IOS17, in_reverse17, infer_reverse, fold_reverse, NULL, "Reverses x along the given axes."),
    ROW("reverse_sequence", MIL_IOS17, in_revseq17, infer_reverse_sequence, NULL, defaults_reverse_sequence,
        "Reverses the first lengths[i] elements along seq_axis of each batch slice."),
    ROW("sliding_windows", MIL_IOS17, in_sw17, infer_sliding_windows, NULL, defaults_sliding_windows,
        "All windows of `size` elements along axis, `stride` apart."),
    ROW("transpose", MIL_IOS17, in_transpose17, infer_transpose, fold_transpose, NULL,
        "Permutes the dimensions of x."),
    ROW("slice_by_index", MIL_IOS17, in_sbi17, tt_infer_slice_by_index, tt_fold_slice_by_index, NULL,
        "numpy-style strided slicing with begin/end/squeeze masks."),
    ROW("slice_by_size", MIL_IOS17, in_sbs17, tt_infer_slice_by_size, tt_fold_slice_by_size, NULL,
        "Slices `size` elements from `begin` in each dimension (-1: to the end)."),
    ROW("slice_update", MIL_IOS18, in_supdate, tt_infer_slice_update, tt_fold_slice_update, NULL,
        "x with the slice x[begin:end:stride] replaced by update."),
};
OP_FAMILY_COUNT(tensor_transformation);
