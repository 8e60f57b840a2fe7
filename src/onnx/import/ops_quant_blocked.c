/* com.microsoft block-quantized weights (ONNX Runtime's contrib ops,
 * docs/ContribOperators.md):
 *
 *   MatMulNBits(A, B, scales[, zero_points][, g_idx][, bias])
 *     Y = A @ dequant(B)^T (+ bias), B's codes packed low bits first as
 *     uint8 [N, k_blocks, block_size * bits / 8]; scales [N * k_blocks];
 *     zero_points packed like B ([N * ceil(k_blocks * bits / 8)] uint8) or
 *     of scales' type [N * k_blocks]; default zero point 2^(bits - 1).
 *   GatherBlockQuantized(data, indices, scales[, zero_points])
 *     Gather rows of a block-quantized embedding along gather_axis, blocks
 *     of block_size along quantize_axis (the last axis), 4-bit data packed
 *     two a byte in uint8 or held as int4 / uint4.
 *
 * Both become constexpr_blockwise_shift_scale (iOS18, coremltools
 * iOS18/compression.py) with one scale and offset per block: 2- and 4-bit
 * codes are stored as uint4, 8-bit as uint8; then linear / gather. Before
 * iOS18 they are refused naming --target iOS18 (MIL has no blockwise
 * layout there). g_idx is accepted only when it is the trivial i /
 * block_size (what every exporter writes unless it reorders K). */
#include <stdint.h>
#include <string.h>

#include "onnx/import/ops_quant_internal.h"

static mil_status need_ios18(onnx_ctx *c) {
  return ONNX_UNSUP(c, "block-quantized weights need constexpr_blockwise_shift_scale (iOS18): convert with --target iOS18");
}

static const mil_value *const_input(onnx_ctx *c, onnx_node *n, int32_t i, const char *what) {
  const mil_value *v = onnx_val(onnx_in(n, i));
  if (!v || v->kind != MIL_VAL_TENSOR || !v->type) {
    onnx_fail(c, MIL_ERR_UNSUPPORTED, "input %d (%s) must be an initializer (known at conversion)", (int)i, what);
    return NULL;
  }
  return v;
}

/* Code j (bits wide) of the little-endian bit string at byte offset base. */
static int64_t code_at(const mil_value *v, int64_t base, int64_t j, int bits) {
  int64_t bit = j * bits;
  return (mil_value_get_i64(v, base + bit / 8) >> (bit % 8)) & ((1 << bits) - 1);
}

/* The [N, k_blocks] offsets of zero_points (packed codes, or floats), or
 * 2^(bits - 1) everywhere when absent; dt is the data's dtype. */
static mil_value *offsets(onnx_ctx *c, const mil_value *zp, int64_t rows, int64_t kb, int bits,
                          mil_dtype dt) {
  int64_t shape[2] = {rows, kb};
  bool typed = zp && mil_dtype_is_float(zp->type->dtype);
  mil_value *o = mil_value_new_tensor(c->p, typed ? zp->type->dtype : dt, 2, shape, false, NULL);
  if (!o) return NULL;
  int64_t row_bytes = (kb * bits + 7) / 8;
  if (zp && zp->numel != (typed ? rows * kb : rows * row_bytes)) {
    onnx_fail(c, MIL_ERR_INVALID, "zero_points has %lld values; expected %lld (%s)", (long long)zp->numel,
              (long long)(typed ? rows * kb : rows * row_bytes), typed ? "one a block" : "packed codes, whole bytes a row");
    return NULL;
  }
  for (int64_t r = 0; r < rows; r++)
    for (int64_t b = 0; b < kb; b++) {
      if (typed) mil_value_set_f64(o, r * kb + b, mil_value_get_f64(zp, r * kb + b));
      else mil_value_set_i64(o, r * kb + b, zp ? code_at(zp, r * row_bytes, b, bits) : 1 << (bits - 1));
    }
  return o;
}

/* The scales as a [rows, kb] float tensor. */
static mil_value *scales2d(onnx_ctx *c, const mil_value *s, int64_t rows, int64_t kb) {
  if (s->numel != rows * kb) {
    onnx_fail(c, MIL_ERR_INVALID, "scales has %lld values; expected %lld (one a block)", (long long)s->numel,
              (long long)(rows * kb));
    return NULL;
  }
  int64_t shape[2] = {rows, kb};
  mil_dtype dt = s->type->dtype == MIL_DT_FP16 ? MIL_DT_FP16 : MIL_DT_FP32;
  mil_value *o = mil_value_new_tensor(c->p, dt, 2, shape, false, NULL);
  if (!o) return NULL;
  for (int64_t i = 0; i < s->numel; i++) mil_value_set_f64(o, i, mil_value_get_f64(s, i));
  return o;
}

/* w [rows, kb * bs] sliced to [rows, k] when the last block is partial. */
static mil_var *trim(onnx_ctx *c, mil_var *w, int64_t rows, int64_t k, int64_t kp) {
  if (!w || k == kp) return w;
  int64_t begin[2] = {0, 0}, size[2] = {rows, k};
  return ONNX_OP(c, "slice_by_size", A("x", w), K("begin", onnx_i32s(c, 2, begin)), K("size", onnx_i32s(c, 2, size)));
}

static mil_status conv_matmul_nbits(onnx_ctx *c, onnx_node *n) {
  mil_var *a = onnx_req(c, n, 0);
  if (!a || !onnx_req(c, n, 1) || !onnx_req(c, n, 2)) return MIL_ERR_INVALID;
  int64_t k = onnx_attr_i(n, "K", 0), rows = onnx_attr_i(n, "N", 0), bits = onnx_attr_i(n, "bits", 4),
          bs = onnx_attr_i(n, "block_size", 0);
  if (bits != 2 && bits != 4 && bits != 8)
    return ONNX_UNSUP(c, "bits = %lld: MIL's blockwise data holds 2-, 4- and 8-bit codes (as uint4 / uint8)",
                      (long long)bits);
  if (k <= 0 || rows <= 0 || bs <= 0 || k > (INT64_C(1) << 40) || bs > (INT64_C(1) << 30) || (bs * bits) % 8)
    return onnx_fail(c, MIL_ERR_INVALID, "attributes K (%lld), N (%lld) and block_size (%lld) must be positive, "
                     "block_size * bits a whole number of bytes", (long long)k, (long long)rows, (long long)bs);
  if (c->target < MIL_IOS18) return need_ios18(c);
  const mil_value *b = const_input(c, n, 1, "B"), *s = b ? const_input(c, n, 2, "scales") : NULL;
  if (!s) return MIL_ERR_UNSUPPORTED;
  const mil_value *zp = NULL, *gidx = NULL;
  if (onnx_in(n, 3) && !(zp = const_input(c, n, 3, "zero_points"))) return MIL_ERR_UNSUPPORTED;
  if (onnx_in(n, 4) && !(gidx = const_input(c, n, 4, "g_idx"))) return MIL_ERR_UNSUPPORTED;
  int64_t kb = (k + bs - 1) / bs, blob = bs * bits / 8;
  if (b->type->rank != 3 || b->type->dims[0].size != rows || b->type->dims[1].size != kb ||
      b->type->dims[2].size != blob)
    return onnx_fail(c, MIL_ERR_INVALID, "B must be uint8 [N, k_blocks, blob_size] = [%lld, %lld, %lld]",
                     (long long)rows, (long long)kb, (long long)blob);
  if (gidx) {
    bool trivial = gidx->numel == k;
    for (int64_t i = 0; i < gidx->numel && trivial; i++) trivial = mil_value_get_i64(gidx, i) == i / bs;
    if (!trivial) return ONNX_UNSUP(c, "g_idx reorders the rows of B (act-order quantization); only i / block_size is converted");
  }
  int32_t ar = onnx_rank(a);
  if (ar >= 1 && a->type->dims[ar - 1].size >= 0 && a->type->dims[ar - 1].size != k)
    return onnx_fail(c, MIL_ERR_INVALID, "A's last dim is %lld; expected K = %lld", (long long)a->type->dims[ar - 1].size,
                     (long long)k);
  mil_dtype dt = bits <= 4 ? MIL_DT_UINT4 : MIL_DT_UINT8;
  int64_t kp = kb * bs, shape[2] = {rows, kp};
  /* 4- and 8-bit codes of a uint8 B (loaded in its dtype) are already
   * MIL's uint4 / uint8 layout of [N, k_blocks * block_size]: viewed, not
   * copied (unless B is file-mapped external data, whose pages may go) */
  bool view = bits != 2 && b->type->dtype == MIL_DT_UINT8 && !b->file_mapped;
  mil_value *data = view ? mil_value_new_view(c->p, dt, 2, shape, mil_value_data(b), (size_t)b->nbytes)
                         : mil_value_new_tensor(c->p, dt, 2, shape, false, NULL);
  mil_value *sc = scales2d(c, s, rows, kb);
  mil_value *off = sc ? offsets(c, zp, rows, kb, (int)bits, dt) : NULL;
  if (!data || !off) return data ? MIL_ERR_INVALID : MIL_ERR_NOMEM;
  if (view) data->stable_view = b->stable_view;
  for (int64_t r = 0; r < rows && !view; r++)
    for (int64_t j = 0; j < kp; j++)
      mil_value_set_i64(data, r * kp + j, code_at(b, (r * kb + j / bs) * blob, j % bs, (int)bits));
  mil_var *w = trim(c, onnx_blockwise_weight(c, data, sc, off), rows, k, kp);
  if (!w) return MIL_ERR_INVALID;
  mil_var *bias = onnx_in(n, 5);
  mil_var *y = bias ? ONNX_OP(c, "linear", A("x", a), A("weight", w), A("bias", onnx_cast(c, bias, onnx_dtype(w))))
                    : ONNX_OP(c, "linear", A("x", a), A("weight", w));
  return onnx_set_out(c, n, 0, y);
}

/* GatherBlockQuantized(data, indices, scales[, zero_points]) with
 * gather_axis 0 and quantize_axis the last axis (embedding tables). */
static mil_status conv_gather_block_quantized(onnx_ctx *c, onnx_node *n) {
  mil_var *idx = onnx_req(c, n, 1);
  if (!onnx_req(c, n, 0) || !idx || !onnx_req(c, n, 2)) return MIL_ERR_INVALID;
  int64_t bs = onnx_attr_i(n, "block_size", 128), gax = onnx_attr_i(n, "gather_axis", 0),
          qax = onnx_attr_i(n, "quantize_axis", 1), bits = onnx_attr_i(n, "bits", 4);
  if (c->target < MIL_IOS18) return need_ios18(c);
  const mil_value *d = const_input(c, n, 0, "data"), *s = d ? const_input(c, n, 2, "scales") : NULL;
  if (!s) return MIL_ERR_UNSUPPORTED;
  const mil_value *zp = NULL;
  if (onnx_in(n, 3) && !(zp = const_input(c, n, 3, "zero_points"))) return MIL_ERR_UNSUPPORTED;
  int32_t r = d->type->rank;
  if (gax < 0) gax += r;
  if (qax < 0) qax += r;
  if (r != 2 || gax != 0 || qax != 1 || bs <= 0)
    return ONNX_UNSUP(c, "only a rank-2 table gathered along axis 0 and quantized along axis 1 is converted");
  int dtype = onnx_declared_elem_type(c, n->proto->input[0]);
  bool packed = dtype == MIL_ONNX_UINT8 && bits == 4;
  if (!packed && dtype != MIL_ONNX_UINT8 && dtype != MIL_ONNX_INT4 && dtype != MIL_ONNX_UINT4)
    return ONNX_UNSUP(c, "data must be uint8 (packed 4-bit or 8-bit codes), int4 or uint4");
  int64_t rows = d->type->dims[0].size, cols = d->type->dims[1].size * (packed ? 2 : 1);
  if (cols % bs) return ONNX_UNSUP(c, "block_size %lld does not divide the row length %lld", (long long)bs, (long long)cols);
  int64_t kb = cols / bs, shape[2] = {rows, cols};
  bool is_signed = dtype == MIL_ONNX_INT4;
  mil_dtype dt = is_signed ? MIL_DT_INT4 : dtype == MIL_ONNX_UINT8 && !packed ? MIL_DT_UINT8 : MIL_DT_UINT4;
  mil_value *data = mil_value_new_tensor(c->p, dt, 2, shape, false, NULL);
  mil_value *sc = scales2d(c, s, rows, kb);
  if (!data || !sc) return data ? MIL_ERR_INVALID : MIL_ERR_NOMEM;
  for (int64_t i = 0; i < rows * cols; i++)
    mil_value_set_i64(data, i, packed ? code_at(d, 0, i, 4) : mil_value_get_i64(d, i));
  /* zero points: packed like data (uint8, 4-bit), typed (int4/uint4/uint8), default 0 or 2^(bits-1) for packed uint8 */
  mil_value *off = NULL;
  int zt = zp ? onnx_declared_elem_type(c, n->proto->input[3]) : 0;
  if (zp && zt == MIL_ONNX_UINT8 && packed) {
    if (!(off = offsets(c, zp, rows, kb, 4, dt))) return MIL_ERR_INVALID;
  } else if (zp) {
    int64_t zs[2] = {rows, kb};
    if (zp->numel != rows * kb) return onnx_fail(c, MIL_ERR_INVALID, "zero_points must hold one value a block");
    if (!(off = mil_value_new_tensor(c->p, dt, 2, zs, false, NULL))) return MIL_ERR_NOMEM;
    for (int64_t i = 0; i < rows * kb; i++) mil_value_set_i64(off, i, mil_value_get_i64(zp, i));
  } else if (packed || dt == MIL_DT_UINT8) {
    if (!(off = offsets(c, NULL, rows, kb, dt == MIL_DT_UINT8 ? 8 : 4, dt))) return MIL_ERR_INVALID;
  }
  mil_var *w = onnx_blockwise_weight(c, data, sc, off);
  if (!w) return MIL_ERR_INVALID;
  return onnx_set_out(c, n, 0, ONNX_OP(c, "gather", A("x", w), A("indices", idx), K("axis", onnx_i32(c, 0))));
}

const onnx_op_entry onnx_ops_quant_blocked[] = {
    {"GatherBlockQuantized", "com.microsoft", 1, 0, conv_gather_block_quantized, "constexpr_blockwise_shift_scale, gather"},
    {"MatMulNBits", "com.microsoft", 1, 0, conv_matmul_nbits, "constexpr_blockwise_shift_scale, slice_by_size, linear"},
    {NULL, NULL, 0, 0, NULL, NULL},
};
