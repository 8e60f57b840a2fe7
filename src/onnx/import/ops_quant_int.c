/* ONNX integer and quantized linear algebra: ConvInteger, MatMulInteger,
 * QLinearConv, QLinearMatMul. The importer holds uint8 / int8 as int32;
 * MIL's conv and matmul (and the interpreter's BLAS) compute in fp32, so
 * the integer products are spelled out to stay exact as ONNX defines them:
 *
 *   acc = sum (a - a_zero_point) * (b - b_zero_point)     int32
 *
 * The operands lie in [-255, 255]; a dot product of K terms is exact in
 * fp32 while K * 255 * 255 < 2^24 (K <= 258). For a longer (or unknown) K
 * the second operand is split as b' = 16 * hi + lo (lo in [0, 15]), the two
 * fp32 products (each exact for K < 4112) cast to int32 and combined there.
 * The quantized ops then requantize as ONNX's reference does:
 *
 *   y = saturate(round_half_even((acc [+ bias]) * (a_scale * b_scale / y_scale)) + y_zero_point)
 *
 * saturating to the range of y_zero_point's type (uint8 unless it or the
 * output is declared int8). Convolution geometry (pads, auto_pad, strides,
 * dilations, group) comes from Conv's converter.
 *
 * From iOS16 a constant int8 / uint8 weight operand (w, b) minus its zero
 * point is a compression op with scale 1 (ops_quant_weights.c), so that it
 * stays quantized in weight.bin; its product is then one fp32 conv / matmul
 * (no hi / lo split, which would decompress it at run time). */
#include <string.h>

#include "onnx/import/import_convert_as.h"
#include "onnx/import/ops_quant_internal.h"

/* v - zp in fp32; zp (rank 0 / 1) laid along axis `axis` of a rank-r
 * operand when it has more than one element. */
static mil_var *centered(onnx_ctx *c, mil_var *v, mil_var *zp, int32_t axis, int32_t r) {
  mil_var *f = onnx_cast(c, v, MIL_DT_FP32);
  if (!zp) return f;
  mil_var *z = onnx_cast(c, zp, MIL_DT_FP32);
  if (onnx_rank(zp) == 1 && mil_type_numel(zp->type) != 1 && axis < r - 1) {
    int64_t axes[MIL_INTERP_MAX_RANK_ONNX];
    int32_t k = r - 1 - axis;
    for (int32_t i = 0; i < k; i++) axes[i] = i + 1;
    z = ONNX_OP(c, "expand_dims", A("x", z), K("axes", onnx_i32s(c, k, axes)));
  }
  return ONNX_OP(c, "sub", A("x", f), A("y", z));
}

static mil_var *product(onnx_ctx *c, onnx_node *n, bool conv, mil_var *a, mil_var *b) {
  if (conv) return onnx_convert_as(c, n, "Conv", 2, (mil_var *[]){a, b});
  return ONNX_OP(c, "matmul", A("x", a), A("y", b));
}

/* The weight operand (input widx, a constant int8 / uint8 from iOS16)
 * minus its zero point as a compression op with scale 1, so that it stays
 * quantized in weight.bin; otherwise centered(). */
static mil_var *centered_weight(onnx_ctx *c, onnx_node *n, int32_t widx, mil_var *v, mil_var *zp, int32_t axis,
                                int32_t r) {
  mil_var *w = !zp || onnx_val(zp) ? onnx_integer_weight(c, n, widx, onnx_val(zp), axis) : NULL;
  return w ? w : centered(c, v, zp, axis, r);
}

/* The int32 product of the centered operands a, b (conv or matmul) with
 * inner length k (-1 unknown). A compressed weight b is not split (that
 * would decompress it at run time): its products are summed in fp32. */
static mil_var *int_product(onnx_ctx *c, onnx_node *n, bool conv, mil_var *a, mil_var *b, int64_t k) {
  bool compressed = b && b->op && strncmp(b->op->type, "constexpr_", 10) == 0;
  if ((k >= 0 && k <= 258) || compressed) return onnx_cast(c, product(c, n, conv, a, b), MIL_DT_INT32);
  mil_var *hi = ONNX_OP(c, "floor", A("x", ONNX_OP(c, "mul", A("x", b), K("y", onnx_f32(c, 1.0 / 16)))));
  mil_var *lo = ONNX_OP(c, "sub", A("x", b), A("y", ONNX_OP(c, "mul", A("x", hi), K("y", onnx_f32(c, 16)))));
  mil_var *ph = onnx_cast(c, product(c, n, conv, a, hi), MIL_DT_INT32);
  mil_var *pl = onnx_cast(c, product(c, n, conv, a, lo), MIL_DT_INT32);
  if (!ph || !pl) return NULL;
  return ONNX_OP(c, "add", A("x", ONNX_OP(c, "mul", A("x", ph), K("y", onnx_i32(c, 16)))), A("y", pl));
}

/* Inner length of a convolution: C / group * prod(kernel) from w. */
static int64_t conv_k(const mil_var *w) {
  int32_t r = onnx_rank(w);
  if (r < 3) return -1;
  int64_t k = 1;
  for (int32_t i = 1; i < r; i++) {
    if (w->type->dims[i].size < 0) return -1;
    k *= w->type->dims[i].size;
  }
  return k;
}

static int64_t matmul_k(const mil_var *a) {
  int32_t r = onnx_rank(a);
  return r >= 1 ? a->type->dims[r - 1].size : -1;
}

static mil_var *conv_integer(onnx_ctx *c, onnx_node *n, mil_var *x, mil_var *xzp, mil_var *w, mil_var *wzp, int32_t widx) {
  int32_t r = onnx_rank(w);
  if (onnx_rank(x) < 3 || r != onnx_rank(x)) {
    onnx_fail(c, MIL_ERR_INVALID, "x and w must be [N, C, spatial...] and [M, C/group, kernel...], got ranks %d and %d",
              (int)onnx_rank(x), (int)r);
    return NULL;
  }
  /* x's zero point is per tensor; w's per tensor or per output channel */
  return int_product(c, n, true, centered(c, x, xzp, r - 1, r), centered_weight(c, n, widx, w, wzp, 0, r), conv_k(w));
}

static mil_var *matmul_integer(onnx_ctx *c, onnx_node *n, mil_var *a, mil_var *azp, mil_var *b, mil_var *bzp,
                               int32_t widx) {
  int32_t ra = onnx_rank(a), rb = onnx_rank(b);
  if (ra < 1 || rb < 1) {
    onnx_fail(c, MIL_ERR_INVALID, "operands of unknown rank");
    return NULL;
  }
  /* a's zero point per tensor or per row (axis -2), b's per tensor or per column */
  return int_product(c, n, false, centered(c, a, azp, ra >= 2 ? ra - 2 : 0, ra), centered_weight(c, n, widx, b, bzp, rb - 1, rb),
                     matmul_k(a));
}

static mil_status conv_conv_integer(onnx_ctx *c, onnx_node *n) {
  mil_var *x = onnx_req(c, n, 0), *w = onnx_req(c, n, 1);
  if (!x || !w) return MIL_ERR_INVALID;
  return onnx_set_out(c, n, 0, conv_integer(c, n, x, onnx_in(n, 2), w, onnx_in(n, 3), 1));
}

static mil_status conv_matmul_integer(onnx_ctx *c, onnx_node *n) {
  mil_var *a = onnx_req(c, n, 0), *b = onnx_req(c, n, 1);
  if (!a || !b) return MIL_ERR_INVALID;
  return onnx_set_out(c, n, 0, matmul_integer(c, n, a, onnx_in(n, 2), b, onnx_in(n, 3), 1));
}

/* [lo, hi] of the quantized output: the declared type of y_zero_point,
 * else of the output, else of the first input; uint8 by default. */
static void out_range(onnx_ctx *c, onnx_node *n, int32_t zp_idx, double *lo, double *hi) {
  int t = 0;
  if (zp_idx < n->n_in && n->proto->input[zp_idx][0]) t = onnx_declared_elem_type(c, n->proto->input[zp_idx]);
  if (!t && onnx_out_used(n, 0)) t = onnx_declared_elem_type(c, n->proto->output[0]);
  if (!t && n->n_in > 0 && n->proto->input[0][0]) t = onnx_declared_elem_type(c, n->proto->input[0]);
  if (t == ONNX__TENSOR_PROTO__DATA_TYPE__INT8) *lo = -128, *hi = 127;
  else *lo = 0, *hi = 255;
}

/* round(acc * a_scale * b_scale / y_scale) + y_zero_point, saturated, as int32 */
static mil_var *requantize(onnx_ctx *c, onnx_node *n, mil_var *acc, mil_var *as, mil_var *bs, mil_var *ys, mil_var *yzp,
                           int32_t zp_idx) {
  if (!acc) return NULL;
  double lo, hi;
  out_range(c, n, zp_idx, &lo, &hi);
  mil_var *m = ONNX_OP(c, "real_div", A("x", ONNX_OP(c, "mul", A("x", onnx_cast(c, as, MIL_DT_FP32)), A("y", bs))),
                       A("y", onnx_cast(c, ys, MIL_DT_FP32)));
  mil_var *q = ONNX_OP(c, "round", A("x", ONNX_OP(c, "mul", A("x", onnx_cast(c, acc, MIL_DT_FP32)), A("y", m))));
  if (yzp) q = ONNX_OP(c, "add", A("x", q), A("y", onnx_cast(c, yzp, MIL_DT_FP32)));
  q = ONNX_OP(c, "clip", A("x", q), K("alpha", onnx_f32(c, lo)), K("beta", onnx_f32(c, hi)));
  return onnx_cast(c, q, MIL_DT_INT32);
}

/* A per-channel vector v (rank 1, more than one element) laid along axis
 * 1 of a rank-r output; v itself otherwise. */
static mil_var *per_channel(onnx_ctx *c, mil_var *v, int32_t r) {
  if (!v || onnx_rank(v) != 1 || mil_type_numel(v->type) == 1 || r < 3) return v;
  int64_t axes[MIL_INTERP_MAX_RANK_ONNX];
  for (int32_t i = 0; i < r - 2; i++) axes[i] = i + 1;
  return ONNX_OP(c, "expand_dims", A("x", v), K("axes", onnx_i32s(c, r - 2, axes)));
}

/* QLinearConv(x, x_scale, x_zero_point, w, w_scale, w_zero_point, y_scale, y_zero_point, B) */
static mil_status conv_qlinear_conv(onnx_ctx *c, onnx_node *n) {
  mil_var *in[8];
  for (int32_t i = 0; i < 8; i++)
    if (i != 2 && i != 5 && i != 7 && !(in[i] = onnx_req(c, n, i))) return MIL_ERR_INVALID;
  in[2] = onnx_in(n, 2), in[5] = onnx_in(n, 5), in[7] = onnx_in(n, 7);
  mil_var *acc = conv_integer(c, n, in[0], in[2], in[3], in[5], 3);
  int32_t r = onnx_rank(in[0]);
  mil_var *bias = onnx_in(n, 8);
  if (acc && bias) acc = ONNX_OP(c, "add", A("x", acc), A("y", per_channel(c, onnx_cast(c, bias, MIL_DT_INT32), r)));
  mil_var *ws = per_channel(c, onnx_cast(c, in[4], MIL_DT_FP32), r);
  return onnx_set_out(c, n, 0, requantize(c, n, acc, in[1], ws, in[6], in[7], 7));
}

/* QLinearMatMul(a, a_scale, a_zero_point, b, b_scale, b_zero_point, y_scale, y_zero_point) */
static mil_status conv_qlinear_matmul(onnx_ctx *c, onnx_node *n) {
  mil_var *in[8];
  for (int32_t i = 0; i < 8; i++)
    if (!(in[i] = onnx_req(c, n, i))) return MIL_ERR_INVALID;
  mil_var *acc = matmul_integer(c, n, in[0], in[2], in[3], in[5], 3);
  /* a's scale per tensor or per row: a column against the [.., M, N] product */
  mil_var *as = in[1];
  if (onnx_rank(as) == 1 && mil_type_numel(as->type) != 1)
    as = ONNX_OP(c, "expand_dims", A("x", as), K("axes", onnx_i32s(c, 1, (int64_t[]){1})));
  return onnx_set_out(c, n, 0, requantize(c, n, acc, as, onnx_cast(c, in[4], MIL_DT_FP32), in[6], in[7], 7));
}

const onnx_op_entry onnx_ops_quant_int[] = {
    {"ConvInteger", "", 10, 0, conv_conv_integer, "constexpr_affine_dequantize, constexpr_blockwise_shift_scale, cast, sub, conv, floor, mul, add"},
    {"MatMulInteger", "", 10, 0, conv_matmul_integer, "constexpr_affine_dequantize, constexpr_blockwise_shift_scale, cast, sub, matmul, floor, mul, add"},
    {"QLinearConv", "", 10, 0, conv_qlinear_conv, "constexpr_affine_dequantize, constexpr_blockwise_shift_scale, cast, sub, conv, add, mul, real_div, round, clip"},
    {"QLinearMatMul", "", 10, 0, conv_qlinear_matmul, "constexpr_affine_dequantize, constexpr_blockwise_shift_scale, cast, sub, matmul, mul, real_div, round, add, clip"},
    {NULL, NULL, 0, 0, NULL, NULL},
};
