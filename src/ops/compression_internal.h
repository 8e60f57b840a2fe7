/* Decompression kernels of the constexpr_* ops (constexpr_ops.c for the
 * iOS16 variants, compression.c for iOS18) and quantize / dequantize
 * (quantization_ops.c), in compression_kernels.c. Each computes exactly
 * what coremltools' decompress / materialized_val_inference computes with
 * numpy (coremltools/optimize/_utils.py: dequantize_by_scale_and_zp,
 * quantize_by_scale_and_zp, lut_to_dense, sparse_to_dense,
 * restore_elements_from_packed_bits), including numpy's dtype promotion:
 * fp16 arithmetic is done in float and rounded to half per operation.
 * Kernels return a new value owned by p, or NULL on allocation failure or
 * inconsistent shapes (with a message in d when d is non-NULL). */
#ifndef MIL_COMPRESSION_INTERNAL_H
#define MIL_COMPRESSION_INTERNAL_H

#include "ops/tensor_ops_internal.h"

/* (float(q) - float(zero_point)) * scale, cast to scale's dtype; scale and
 * zero_point are scalars or vectors along `axis` of q (zero_point may be
 * NULL). */
OP_HIDDEN mil_value *cx_dequantize(mil_program *p, const mil_value *q, const mil_value *zero_point,
                                   const mil_value *scale, int64_t axis, mil_diag *d);
/* clip(round_half_even(x / scale) + zero_point) cast to out_dt (int8/uint8). */
OP_HIDDEN mil_value *cx_quantize(mil_program *p, const mil_value *x, const mil_value *zero_point,
                                 const mil_value *scale, int64_t axis, mil_dtype out_dt, mil_diag *d);
/* fp16 -> fp32 (constexpr_cast). */
OP_HIDDEN mil_value *cx_cast(mil_program *p, const mil_value *src, mil_dtype out_dt, mil_diag *d);
/* iOS16 lut: packed uint8 indices (nbits = log2(lut size), LSB first) into lut. */
OP_HIDDEN mil_value *cx_lut16(mil_program *p, const mil_value *indices, const mil_value *lut, int32_t rank,
                              const int64_t *shape, mil_diag *d);
/* iOS16 sparse: mask bits (LSB first) select where nonzero_data goes. */
OP_HIDDEN mil_value *cx_sparse16(mil_program *p, const mil_value *nonzero, const mil_value *mask, int32_t rank,
                                 const int64_t *shape, mil_diag *d);
/* iOS18 blockwise shift/scale: scale * (data - offset), scale/offset
 * repeated per block. offset may be NULL. */
OP_HIDDEN mil_value *cx_blockwise(mil_program *p, const mil_value *data, const mil_value *scale,
                                  const mil_value *offset, mil_diag *d);
/* iOS18 lut: per-block palettes lut[blocks..., 2^nbits, vector_size]. */
OP_HIDDEN mil_value *cx_lut18(mil_program *p, const mil_value *indices, const mil_value *lut, bool has_axis,
                              int64_t vector_axis, mil_diag *d);
/* iOS18 sparse: dense tensor shaped like mask with nonzero_data where mask != 0. */
OP_HIDDEN mil_value *cx_sparse18(mil_program *p, const mil_value *nonzero, const mil_value *mask, mil_diag *d);
/* The elements of dense where mask (repeated vector_size times along
 * vector_axis when has_axis) is non-zero, as a rank-1 value; and the
 * repeated mask in *mask_out. */
OP_HIDDEN mil_value *cx_pick_nonzero(mil_program *p, const mil_value *dense, const mil_value *mask, bool has_axis,
                                     int64_t vector_axis, int64_t vector_size, mil_value **mask_out, mil_diag *d);

/* constexpr_cast type inference (iOS16 and iOS18 rows; constexpr_ops.c). */
OP_HIDDEN mil_status cx_infer_cast(mil_infer_ctx *c);

#endif
