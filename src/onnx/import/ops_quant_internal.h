/* Shared by the quantization converters (ops_quantize.c, ops_quant_weights.c,
 * ops_quant_blocked.c): quantized weights as Core ML compression ops. */
#ifndef MIL_ONNX_OPS_QUANT_INTERNAL_H
#define MIL_ONNX_OPS_QUANT_INTERNAL_H

#include "mil/onnx_tensor.h"
#include "onnx/import/import_internal.h"

/* The MIL dtype of an ONNX quantized element type (INT8, UINT8, INT4,
 * UINT4), MIL_DT_UNUSED for any other. */
mil_dtype onnx_quant_dtype(int onnx_type);

/* constexpr_blockwise_shift_scale(data, scale[, offset]) appended to the
 * current block: data holds the integer codes (int4/uint4/int8/uint8),
 * scale (fp16/fp32) has data's rank and tiles it, offset (NULL, or scale's
 * shape in data's dtype or a float dtype) is dropped when all zero. The
 * output var (scale's dtype, data's shape), NULL with the error recorded. */
mil_var *onnx_blockwise_weight(onnx_ctx *c, const mil_value *data, const mil_value *scale, const mil_value *offset);

/* DequantizeLinear node n of an initializer (x, x_scale, x_zero_point all
 * known; x declared INT8/UINT8/INT4/UINT4) as the target's compression op:
 * 1 with *out set; 0 when it does not apply (not constant, another dtype,
 * iOS15 — warned) and the caller keeps the fp arithmetic; -(status) with
 * the error recorded: MIL_ERR_INVALID (scale / zero point shapes, axis),
 * MIL_ERR_UNSUPPORTED (blocked before iOS18, naming --target iOS18; blocks
 * that do not divide the axis), MIL_ERR_NOMEM. */
int onnx_dequantize_weight(onnx_ctx *c, onnx_node *n, mil_var **out);

/* Input idx of node n, a constant weight declared INT8 / UINT8, minus its
 * zero point zp (a known value: one value, or one per index of axis; NULL
 * for 0) as an fp32 compression op with scale 1 (iOS16/17
 * constexpr_affine_dequantize, iOS18 constexpr_blockwise_shift_scale): the
 * integer operand of ConvInteger / MatMulInteger / QLinearConv /
 * QLinearMatMul kept quantized. NULL (nothing recorded) when it does not
 * apply (iOS15, not constant, another dtype or zero-point layout). */
mil_var *onnx_integer_weight(onnx_ctx *c, const onnx_node *n, int32_t idx, const mil_value *zp, int64_t axis);

/* transpose(x, perm) of a constexpr_blockwise_shift_scale output x (rank
 * r) as a new constexpr_blockwise_shift_scale of the permuted data, scale
 * and offset (the weight stays compressed, no run-time transpose; iOS16/17's
 * constexpr_affine_dequantize is merged by the pipeline's
 * merge_affine_dequantize_with_consecutive_ops). NULL when x is no such
 * output. */
mil_var *onnx_transpose_weight(onnx_ctx *c, mil_var *x, int32_t r, const int64_t *perm);

/* Whether every use of value `name` in graph g is a quantized weight input
 * (DequantizeLinear's x, MatMulNBits' B, GatherBlockQuantized's data) and
 * it is no graph output (g has no subgraph that might read it): such an
 * initializer is loaded in its own dtype (onnx_tensor_value_quantized)
 * instead of widened to int32. */
bool onnx_quantized_only(const Onnx__GraphProto *g, const char *name);

/* onnx_tensor_value for an INT8 / UINT8 / INT4 / UINT4 initializer that
 * keeps the dtype (large raw_data viewed in place, not copied); other
 * tensors as onnx_tensor_value. */
mil_status onnx_tensor_value_quantized(onnx_ctx *c, const Onnx__TensorProto *t, mil_value **out);

#endif
