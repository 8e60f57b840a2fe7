/* Decompression kernels shared by the constexpr_* ops and quantize /
 * dequantize (see compression_internal.h for what each computes).
 *
 * Values are read with mil_value_get_f64 / mil_value_get_i64, which unpack
 * libmil's bit-packed sub-byte layout (int4, uint1..uint6) and widen fp16;
 * results are stored with mil_value_set_f64, rounding to the output dtype.
 * Where numpy computes in float32 (fp16 inputs are widened to float, and
 * a float16 result is rounded back to half after each operation), the
 * arithmetic here is done in float the same way. */
#include <math.h>
#include <string.h>

#include "ops/compression_internal.h"

static float h16(float x) { return mil_fp16_to_fp32(mil_fp32_to_fp16(x)); }

static mil_value *fail(mil_diag *d, const char *msg) {
  if (d) mil_diag_error(d, MIL_ERR_INVALID, "%s", msg);
  return NULL;
}

static bool vshape(const mil_value *v, int64_t *s, int32_t *r) { return op_value_shape(v, s, r); }

/* Shape of a quantization parameter promoted to the data's rank
 * (coremltools' promote_rank_to_same_as_data): a scalar broadcasts, a
 * vector lies along axis, a same-rank tensor repeats per block. */
static bool promote(const mil_value *param, int32_t rank, const int64_t *dshape, int64_t axis, int64_t *pshape) {
  int64_t s[TOP_RANK];
  int32_t pr;
  if (!vshape(param, s, &pr)) return false;
  if (pr == rank) {
    for (int32_t i = 0; i < rank; i++) {
      if (s[i] <= 0 || dshape[i] % s[i] != 0) return false;
      pshape[i] = s[i];
    }
    return true;
  }
  for (int32_t i = 0; i < rank; i++) pshape[i] = 1;
  if (pr == 0) return true;
  if (pr != 1) return false;
  if (axis < 0) axis += rank;
  if (axis < 0 || axis >= rank || s[0] != dshape[axis]) return false;
  pshape[axis] = s[0];
  return true;
}

/* Flat index into a (promoted, block-repeated) parameter of shape ps for
 * the data element at flat index k of shape ds. */
static int64_t param_index(int64_t k, int32_t rank, const int64_t *ds, const int64_t *ps) {
  int64_t idx[TOP_RANK], rem = k, pos = 0;
  for (int32_t d = rank - 1; d >= 0; d--) {
    idx[d] = rem % ds[d];
    rem /= ds[d];
  }
  for (int32_t d = 0; d < rank; d++) pos = pos * ps[d] + idx[d] / (ds[d] / ps[d]);
  return pos;
}

mil_value *cx_dequantize(mil_program *p, const mil_value *q, const mil_value *zp, const mil_value *scale, int64_t axis,
                         mil_diag *d) {
  int64_t ds[TOP_RANK], ss[TOP_RANK], zs[TOP_RANK];
  int32_t r;
  if (!vshape(q, ds, &r)) return fail(d, "tensor rank is larger than supported");
  if (!promote(scale, r, ds, axis, ss) || (zp && !promote(zp, r, ds, axis, zs)))
    return fail(d, "dequantize: scale / zero_point do not match the data's shape along axis");
  mil_value *v = mil_value_new_tensor(p, scale->type->dtype, r, ds, q->type->is_scalar, NULL);
  if (!v) return NULL;
  for (int64_t k = 0; k < q->numel; k++) {
    float x = (float)mil_value_get_f64(q, k);
    if (zp) x -= (float)mil_value_get_f64(zp, param_index(k, r, ds, zs));
    x *= (float)mil_value_get_f64(scale, param_index(k, r, ds, ss));
    mil_value_set_f64(v, k, x);
  }
  return v;
}

mil_value *cx_quantize(mil_program *p, const mil_value *x, const mil_value *zp, const mil_value *scale, int64_t axis,
                       mil_dtype out_dt, mil_diag *d) {
  int64_t ds[TOP_RANK], ss[TOP_RANK], zs[TOP_RANK];
  int32_t r;
  if (!vshape(x, ds, &r)) return fail(d, "tensor rank is larger than supported");
  if (!promote(scale, r, ds, axis, ss) || (zp && !promote(zp, r, ds, axis, zs)))
    return fail(d, "quantize: scale / zero_point do not match the input's shape along axis");
  double lo = out_dt == MIL_DT_INT8 ? -128 : 0, hi = out_dt == MIL_DT_INT8 ? 127 : 255;
  bool half = x->type->dtype == MIL_DT_FP16;
  mil_value *v = mil_value_new_tensor(p, out_dt, r, ds, x->type->is_scalar, NULL);
  if (!v) return NULL;
  for (int64_t k = 0; k < x->numel; k++) {
    float a = (float)mil_value_get_f64(x, k), s = (float)mil_value_get_f64(scale, param_index(k, r, ds, ss));
    float q = half ? h16(a / s) : a / s;
    q = rintf(q); /* np.around: round half to even */
    if (zp) {
      q += (float)mil_value_get_f64(zp, param_index(k, r, ds, zs));
      if (half) q = h16(q);
    }
    double y = q < lo ? lo : q > hi ? hi : q;
    mil_value_set_i64(v, k, (int64_t)y);
  }
  return v;
}

mil_value *cx_cast(mil_program *p, const mil_value *src, mil_dtype out_dt, mil_diag *d) {
  int64_t s[TOP_RANK];
  int32_t r;
  if (!vshape(src, s, &r)) return fail(d, "tensor rank is larger than supported");
  mil_value *v = mil_value_new_tensor(p, out_dt, r, s, src->type->is_scalar, NULL);
  for (int64_t k = 0; v && k < src->numel; k++) mil_value_set_f64(v, k, mil_value_get_f64(src, k));
  return v;
}

static int log2_exact(int64_t n) {
  for (int b = 0; b < 63; b++)
    if ((int64_t)1 << b == n) return b;
  return -1;
}

mil_value *cx_lut16(mil_program *p, const mil_value *indices, const mil_value *lut, int32_t rank, const int64_t *shape,
                    mil_diag *d) {
  int nbits = log2_exact(lut->numel);
  int64_t n = op_numel(rank, shape);
  if (nbits < 1 || nbits > 8 || n < 0) return fail(d, "constexpr_lut_to_dense: lut size must be 2, 4, 16, 64 or 256");
  if (n > INT64_MAX / 8 || (int64_t)indices->nbytes * 8 < n * nbits)
    return fail(d, "constexpr_lut_to_dense: too few packed indices");
  mil_value *v = mil_value_new_tensor(p, lut->type->dtype, rank, shape, false, NULL);
  for (int64_t k = 0; v && k < n; k++) op_copy_elem(v, k, lut, mil_bits_get(mil_value_data(indices), k, nbits));
  return v;
}

mil_value *cx_sparse16(mil_program *p, const mil_value *nonzero, const mil_value *mask, int32_t rank,
                       const int64_t *shape, mil_diag *d) {
  int64_t n = op_numel(rank, shape), j = 0;
  if (n < 0 || (int64_t)mask->nbytes * 8 < n) return fail(d, "constexpr_sparse_to_dense: mask is too short");
  mil_value *v = mil_value_new_tensor(p, nonzero->type->dtype, rank, shape, false, NULL);
  for (int64_t k = 0; v && k < n; k++) {
    if (!mil_bits_get(mil_value_data(mask), k, 1)) continue;
    if (j >= nonzero->numel) return fail(d, "constexpr_sparse_to_dense: more mask bits than nonzero values");
    op_copy_elem(v, k, nonzero, j++);
  }
  return v;
}

mil_value *cx_blockwise(mil_program *p, const mil_value *data, const mil_value *scale, const mil_value *offset,
                        mil_diag *d) {
  int64_t ds[TOP_RANK], ss[TOP_RANK], os[TOP_RANK];
  int32_t r, sr, orr;
  if (!vshape(data, ds, &r)) return fail(d, "tensor rank is larger than supported");
  if (!vshape(scale, ss, &sr)) return fail(d, "tensor rank is larger than supported");
  if (sr != r) return fail(d, "constexpr_blockwise_shift_scale: scale must have the rank of data");
  for (int32_t i = 0; i < r; i++)
    if (ss[i] <= 0 || ds[i] % ss[i]) return fail(d, "constexpr_blockwise_shift_scale: scale does not tile data");
  if (offset) {
    if (!vshape(offset, os, &orr)) return fail(d, "tensor rank is larger than supported");
    if (orr != r || memcmp(os, ss, sizeof(int64_t) * (size_t)r))
      return fail(d, "constexpr_blockwise_shift_scale: offset must have the shape of scale");
  }
  mil_dtype st = scale->type->dtype, ot = offset ? offset->type->dtype : MIL_DT_UNUSED;
  /* numpy: data.astype(scale.dtype) - offset promotes to fp32 only with an fp32 operand */
  bool half = st == MIL_DT_FP16 && ot != MIL_DT_FP32;
  mil_value *v = mil_value_new_tensor(p, st, r, ds, false, NULL);
  if (!v) return NULL;
  for (int64_t k = 0; k < data->numel; k++) {
    int64_t pi = param_index(k, r, ds, ss);
    float x = (float)mil_value_get_f64(data, k);
    if (st == MIL_DT_FP16) x = h16(x); /* astype(float16) */
    if (offset) {
      x = x - (float)mil_value_get_f64(offset, pi);
      if (half) x = h16(x);
    }
    x = (float)mil_value_get_f64(scale, pi) * x;
    if (half) x = h16(x);
    mil_value_set_f64(v, k, x);
  }
  return v;
}

mil_value *cx_lut18(mil_program *p, const mil_value *indices, const mil_value *lut, bool has_axis, int64_t va,
                    mil_diag *d) {
  int64_t is[TOP_RANK], ls[TOP_RANK + 2], os[TOP_RANK];
  int32_t r, lr;
  if (!vshape(indices, is, &r)) return fail(d, "tensor rank is larger than supported");
  if (!vshape(lut, ls, &lr)) return fail(d, "tensor rank is larger than supported");
  if (r < 1 || lr != r + 2) return fail(d, "constexpr_lut_to_dense: lut must have rank(indices) + 2");
  for (int32_t i = 0; i < r; i++)
    if (ls[i] <= 0 || is[i] % ls[i]) return fail(d, "constexpr_lut_to_dense: lut blocks do not tile indices");
  int64_t P = ls[r], V = ls[r + 1];
  if (V > 1 && !has_axis) return fail(d, "constexpr_lut_to_dense: vector_axis is required when vector size > 1");
  if (va < 0) va += r;
  if (V > 1 && (va < 0 || va >= r)) return fail(d, "constexpr_lut_to_dense: vector_axis out of range");
  memcpy(os, is, sizeof(int64_t) * (size_t)r);
  if (V > 1) os[va] *= V;
  mil_value *v = mil_value_new_tensor(p, lut->type->dtype, r, os, false, NULL);
  if (!v) return NULL;
  int64_t n = op_numel(r, os), idx[TOP_RANK];
  for (int64_t k = 0; k < n; k++) {
    int64_t rem = k;
    for (int32_t dd = r - 1; dd >= 0; dd--) {
      idx[dd] = rem % os[dd];
      rem /= os[dd];
    }
    int64_t vi = 0;
    if (V > 1) {
      vi = idx[va] % V;
      idx[va] /= V;
    }
    int64_t ipos = 0, blk = 0;
    for (int32_t dd = 0; dd < r; dd++) {
      ipos = ipos * is[dd] + idx[dd];
      blk = blk * ls[dd] + idx[dd] / (is[dd] / ls[dd]);
    }
    int64_t pal = mil_value_get_i64(indices, ipos);
    if (pal < 0 || pal >= P) return fail(d, "constexpr_lut_to_dense: index out of the palette");
    op_copy_elem(v, k, lut, (blk * P + pal) * V + vi);
  }
  return v;
}

mil_value *cx_sparse18(mil_program *p, const mil_value *nonzero, const mil_value *mask, mil_diag *d) {
  int64_t ms[TOP_RANK], j = 0;
  int32_t r;
  if (!vshape(mask, ms, &r)) return fail(d, "tensor rank is larger than supported");
  mil_value *v = mil_value_new_tensor(p, nonzero->type->dtype, r, ms, false, NULL);
  for (int64_t k = 0; v && k < mask->numel; k++) {
    if (!mil_value_get_i64(mask, k)) continue;
    if (j >= nonzero->numel) return fail(d, "constexpr_sparse_to_dense: more mask bits than nonzero values");
    op_copy_elem(v, k, nonzero, j++);
  }
  return v;
}

mil_value *cx_pick_nonzero(mil_program *p, const mil_value *dense, const mil_value *mask, bool has_axis, int64_t va,
                           int64_t vs, mil_value **mask_out, mil_diag *d) {
  int64_t ms[TOP_RANK], os[TOP_RANK], idx[TOP_RANK];
  int32_t r;
  if (!vshape(mask, ms, &r)) return fail(d, "tensor rank is larger than supported");
  memcpy(os, ms, sizeof(int64_t) * (size_t)r);
  if (has_axis && vs > 1) {
    if (va < 0) va += r;
    if (va < 0 || va >= r) return fail(d, "vector_axis out of range");
    os[va] *= vs;
  } else {
    vs = 1;
  }
  if (op_numel(r, os) != dense->numel) return fail(d, "decompressed data does not match the mask's shape");
  mil_value *m = mil_value_new_tensor(p, mask->type->dtype, r, os, false, NULL);
  if (!m) return NULL;
  int64_t cnt = 0;
  for (int64_t k = 0; k < m->numel; k++) {
    int64_t rem = k, pos = 0;
    for (int32_t dd = r - 1; dd >= 0; dd--) {
      idx[dd] = rem % os[dd];
      rem /= os[dd];
    }
    if (vs > 1) idx[va] /= vs;
    for (int32_t dd = 0; dd < r; dd++) pos = pos * ms[dd] + idx[dd];
    int64_t bit = mil_value_get_i64(mask, pos) != 0;
    mil_value_set_i64(m, k, bit);
    cnt += bit;
  }
  mil_value *v = mil_value_new_tensor(p, dense->type->dtype, 1, &cnt, false, NULL);
  if (!v) return NULL;
  for (int64_t k = 0, j = 0; k < m->numel; k++)
    if (mil_value_get_i64(m, k)) op_copy_elem(v, j++, dense, k);
  if (mask_out) *mask_out = m;
  return v;
}
