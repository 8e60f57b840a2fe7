/* Op family "compression" (coremltools ops/defs/iOS18/compression.py): the
 * iOS18 constexpr ops constexpr_blockwise_shift_scale,
 * constexpr_lut_to_dense, constexpr_sparse_to_dense,
 * constexpr_lut_to_sparse, constexpr_sparse_blockwise_shift_scale and
 * constexpr_cast. Inputs may be produced by other constexpr ops (the data of
 * a blockwise_shift_scale is often a lut_to_dense), so type inference uses
 * types only, and values where coremltools checks them when they are known.
 * Decompression: op_constexpr_materialize (constexpr_ops.c) and
 * compression_kernels.c. */
#include <string.h>

#include "ops/compression_internal.h"

static const mil_type *ty(mil_infer_ctx *c, const char *n) { return op_type(c, n); }

/* _validate_shift_scale_inputs */
static mil_status check_shift_scale(mil_infer_ctx *c, const mil_type *data_shape, mil_dtype data_dt) {
  const mil_type *sc = ty(c, "scale"), *off = ty(c, "offset");
  int32_t r = data_shape->rank;
  if (r != sc->rank)
    return op_fail(c, "Parameter 'data' and 'scale' need to have the same rank, but got %d vs %d.", r, sc->rank);
  if (r < 1) return op_fail(c, "Parameter 'data' needs to have at least rank 1, but got scalar.");
  for (int32_t i = 0; i < r; i++) {
    int64_t dd = data_shape->dims[i].size, sd = sc->dims[i].size;
    if (dd >= 0 && sd > 0 && dd % sd != 0)
      return op_fail(c,
                     "Number of scales along each dimension should be a factor of corresponding dimension size of "
                     "'data'. However, at dim %d, the 'data' has %lld while 'scale' has %lld.",
                     i, (long long)dd, (long long)sd);
    if (sd == 0) return op_fail(c, "input 'scale' has a zero-sized dimension %d", i);
  }
  if (off) {
    bool same = off->rank == sc->rank;
    for (int32_t i = 0; same && i < r; i++) same = off->dims[i].size == sc->dims[i].size;
    if (!same)
      return op_fail(c,
                     "Invalid parameter 'offset'; the shape of 'offset' should match the shape of 'scale', but got "
                     "(%s) vs (%s).",
                     op_tstr(c, off), op_tstr(c, sc));
    if (!mil_dtype_is_float(off->dtype) && off->dtype != data_dt)
      return op_fail(c,
                     "Invalid parameter 'offset'; the dtype of 'offset' should match the dtype of 'data', but got "
                     "(%s) vs (%s).",
                     mil_dtype_name(off->dtype), mil_dtype_name(data_dt));
  }
  return MIL_OK;
}

/* _validate_lut_inputs */
static mil_status check_lut(mil_infer_ctx *c, const mil_type *ind_shape, mil_dtype ind_dt, int64_t *vector_size,
                            int64_t *va) {
  const mil_type *lut = ty(c, "lut");
  int32_t r = ind_shape->rank;
  if (r < 1) return op_fail(c, "Parameter 'indices' needs to have at least rank 1, but got scalar.");
  if (lut->rank != r + 2)
    return op_fail(c,
                   "Parameter 'lut' need to have 2 more dim than 'indices', but got %d-rank 'lut' and %d-rank "
                   "'indices'.",
                   lut->rank, r);
  for (int32_t i = 0; i < r; i++) {
    int64_t id = ind_shape->dims[i].size, ld = lut->dims[i].size;
    if (ld == 0) return op_fail(c, "input 'lut' has a zero-sized dimension %d", i);
    if (id >= 0 && ld > 0 && id % ld != 0)
      return op_fail(c,
                     "Each dimension of 'indices' should be divisible by each corresponding dimension of the 'lut'. "
                     "However, at dim %d, the 'indices' has %lld while 'lut' has %lld.",
                     i, (long long)id, (long long)ld);
  }
  int64_t np_ = lut->dims[r].size;
  int nbits = 0;
  while (nbits < 62 && ((int64_t)1 << nbits) < np_) nbits++;
  if (np_ <= 0 || ((int64_t)1 << nbits) != np_)
    return op_fail(c, "Invalid parameter 'lut'; the second last dim should have size 2^nbits, but got %lld.",
                   (long long)np_);
  if (nbits != mil_dtype_bits(ind_dt))
    return op_fail(c,
                   "Invalid parameter 'indices'; the second last dim indicate number of palettes (%lld), which means "
                   "nbits is %d, so the dtype of indices should be uint%d, but got %s.",
                   (long long)np_, nbits, nbits, mil_dtype_name(ind_dt));
  *vector_size = lut->dims[r + 1].size;
  *va = -1;
  if (op_has(c, "vector_axis")) {
    const mil_type *vt = ty(c, "vector_axis");
    if (vt->rank > 0) return op_fail(c, "Invalid parameter 'vector_axis'; It should be a scalar, but got a tensor.");
    if (!op_need_int(c, "vector_axis", va)) return MIL_ERR_TYPE;
    if (*va < -r || *va >= r)
      return op_fail(c, "Invalid parameter 'vector_axis'; The valid range is between %d and %d, but got %lld.", -r, r,
                     (long long)*va);
    if (*va < 0) *va += r;
  } else if (*vector_size > 1) {
    return op_fail(c, "When lut's last dim (VECTOR_SIZE) > 1, the parameter 'vector_axis' need to be provided.");
  }
  return MIL_OK;
}

/* _validate_sparse_inputs */
static mil_status check_sparse(mil_infer_ctx *c, const char *nz_name, const char *mask_name) {
  const mil_type *nz = ty(c, nz_name);
  if (nz->rank != 1) return op_fail(c, "Parameter nonzero_data needs to have rank 1, but got %d", nz->rank);
  const mil_value *mask = op_in_value(c, mask_name);
  if (mask) {
    int64_t cnt = 0;
    if (mask->type && mask->type->dtype == MIL_DT_UINT1)
      cnt = mil_bits_count(mil_value_data(mask), mask->numel);
    else
      for (int64_t i = 0; i < mask->numel; i++) cnt += mil_value_get_i64(mask, i) != 0;
    if (cnt != nz->dims[0].size)
      return op_fail(c, "Number of 1s in mask not match number of elements in parameter nonzero_data (%lld vs %s)",
                     (long long)cnt, op_tstr(c, nz));
  }
  return MIL_OK;
}

static mil_status infer_blockwise(mil_infer_ctx *c) {
  const mil_type *data = ty(c, "data");
  mil_status st = check_shift_scale(c, data, data->dtype);
  if (st) return st;
  op_set_out(c, 0, op_tensor(c, ty(c, "scale")->dtype, data->rank, data->dims));
  return MIL_OK;
}

static mil_status infer_lut18(mil_infer_ctx *c) {
  const mil_type *ind = ty(c, "indices");
  int64_t vs, va;
  mil_status st = check_lut(c, ind, ind->dtype, &vs, &va);
  if (st) return st;
  mil_dim d[TOP_RANK];
  if (ind->rank > TOP_RANK) return op_fail(c, "indices rank is larger than supported");
  for (int32_t i = 0; i < ind->rank; i++) d[i] = ind->dims[i];
  if (vs > 1) d[va] = op_dim_mul(c, d[va], vs);
  op_set_out(c, 0, op_tensor(c, ty(c, "lut")->dtype, ind->rank, d));
  return MIL_OK;
}

static mil_status infer_sparse18(mil_infer_ctx *c) {
  mil_status st = check_sparse(c, "nonzero_data", "mask");
  if (st) return st;
  const mil_type *m = ty(c, "mask");
  op_set_out(c, 0, op_tensor(c, ty(c, "nonzero_data")->dtype, m->rank, m->dims));
  return MIL_OK;
}

static mil_status infer_lut_to_sparse(mil_infer_ctx *c) {
  const mil_type *mask = ty(c, "indices_mask"), *nz = ty(c, "indices_nonzero_data");
  int64_t vs, va;
  mil_status st = check_sparse(c, "indices_nonzero_data", "indices_mask");
  if (!st) st = check_lut(c, mask, nz->dtype, &vs, &va);
  if (st) return st;
  if (mask->rank > TOP_RANK) return op_fail(c, "mask rank is larger than supported");
  mil_dim md[TOP_RANK], nd = nz->dims[0];
  for (int32_t i = 0; i < mask->rank; i++) md[i] = mask->dims[i];
  if (vs > 1) {
    md[va] = op_dim_mul(c, md[va], vs);
    nd = op_dim_mul(c, nd, vs);
  }
  op_set_out(c, 0, op_tensor(c, mask->dtype, mask->rank, md));
  op_set_out(c, 1, op_tensor(c, ty(c, "lut")->dtype, 1, &nd));
  return MIL_OK;
}

static mil_status infer_sparse_blockwise(mil_infer_ctx *c) {
  const mil_type *mask = ty(c, "data_mask"), *nz = ty(c, "nonzero_data");
  mil_status st = check_sparse(c, "nonzero_data", "data_mask");
  if (!st) st = check_shift_scale(c, mask, nz->dtype);
  if (st) return st;
  op_set_out(c, 0, mask);
  op_set_out(c, 1, op_tensor(c, ty(c, "scale")->dtype, nz->rank, nz->dims));
  return MIL_OK;
}

/* ---- input specs ---- */

#define TCN(n, d, tv) IN_SPEC(n, MIL_IK_TENSOR, d, tv, MIL_IF_CONST, NULL)
#define TOPT(n, d, tv) IN_SPEC(n, MIL_IK_TENSOR, d, tv, MIL_IF_CONST | MIL_IF_OPTIONAL, NULL)
#define Q_T                                                                                                        \
  (MIL_DTB(MIL_DT_INT4) | MIL_DTB(MIL_DT_UINT4) | MIL_DTB(MIL_DT_INT8) | MIL_DTB(MIL_DT_UINT8) | MIL_DTS_FLOAT)
#define IDX_T                                                                                                        \
  (MIL_DTB(MIL_DT_UINT1) | MIL_DTB(MIL_DT_UINT2) | MIL_DTB(MIL_DT_UINT3) | MIL_DTB(MIL_DT_UINT4) | \
   MIL_DTB(MIL_DT_UINT6) | MIL_DTB(MIL_DT_UINT8))
#define LUT_T (MIL_DTB(MIL_DT_INT8) | MIL_DTB(MIL_DT_UINT8) | MIL_DTS_FLOAT)
#define U1 MIL_DTB(MIL_DT_UINT1)

static const mil_input_spec in_bss[] = {TCN("data", Q_T, "SrcT"), TCN("scale", MIL_DTS_FLOAT, "DstT"),
                                        TOPT("offset", Q_T, "OffsetT")};
static const mil_input_spec in_lut[] = {TCN("indices", IDX_T, "IndicesT"), TCN("lut", LUT_T, "T"),
                                        TOPT("vector_axis", MIL_DTS_INT32, NULL)};
static const mil_input_spec in_sparse[] = {TCN("nonzero_data", Q_T, "T"), TCN("mask", U1, NULL)};
static const mil_input_spec in_lut_sparse[] = {TCN("indices_mask", U1, NULL),
                                               TCN("indices_nonzero_data", IDX_T, "IndicesT"), TCN("lut", LUT_T, "T"),
                                               TOPT("vector_axis", MIL_DTS_INT32, NULL)};
static const mil_input_spec in_sparse_bss[] = {TCN("data_mask", U1, NULL), TCN("nonzero_data", Q_T, "SrcT"),
                                               TCN("scale", MIL_DTS_FLOAT, "DstT"), TOPT("offset", Q_T, "OffsetT")};
static const mil_input_spec in_cast[] = {TCN("source_val", MIL_DTB(MIL_DT_FP16), NULL),
                                         TCN("output_dtype", MIL_DTS_STRING, NULL)};

#define N(a) (int32_t)(sizeof a / sizeof a[0])
#define ROW(t, in, nout, inf, doc) {t, MIL_IOS18, "compression", in, N(in), nout, inf, NULL, NULL, doc}

const mil_op_def op_defs_compression[] = {
    ROW("constexpr_blockwise_shift_scale", in_bss, 1, infer_blockwise,
        "Blockwise dequantization on load: scale * (data - offset), per-block scale/offset."),
    ROW("constexpr_lut_to_dense", in_lut, 1, infer_lut18,
        "Palettized weights with per-block (optionally vector) look-up tables."),
    ROW("constexpr_sparse_to_dense", in_sparse, 1, infer_sparse18,
        "Sparse weights: nonzero_data where the uint1 mask is set."),
    ROW("constexpr_lut_to_sparse", in_lut_sparse, 2, infer_lut_to_sparse,
        "Sparse palettized weights decompressed to (mask, nonzero values)."),
    ROW("constexpr_sparse_blockwise_shift_scale", in_sparse_bss, 2, infer_sparse_blockwise,
        "Sparse quantized weights dequantized to (mask, nonzero values)."),
    ROW("constexpr_cast", in_cast, 1, cx_infer_cast, "An fp16 weight cast to fp32 on load."),
};
OP_FAMILY_COUNT(compression);
