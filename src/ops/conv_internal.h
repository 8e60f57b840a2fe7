/* Helpers shared by the convolution and pooling families (conv.c,
 * conv_transpose.c, pool.c): the spatial output-size rule of coremltools'
 * ops/defs/_utils.py (spatial_dimensions_out_shape / aggregated_pad) and
 * the reading of the common window inputs. */
#ifndef MIL_OPS_CONV_INTERNAL_H
#define MIL_OPS_CONV_INTERNAL_H

#include "ops/ops_internal.h"

/* Spatial ranks beyond this are rejected (coremltools supports 1..3). */
#define OP_MAX_SPATIAL 8

/* Output sizes of the k spatial dims of a conv / pool window:
 *   "valid"  floor((in - ek) / s) + 1
 *   "custom" floor((in + pad_b + pad_a - ek) / s) + 1
 *   "same", "same_lower"  total pad = max(0, s*ceil(in/s) - in + ek - s)
 * with ek = (kernel - 1) * dilation + 1; ceil_mode rounds up and drops a
 * window that would start in the right padding. A symbolic input dim gives
 * a fresh symbol. `dil` and `pad` may be NULL (all 1 / all 0). Errors: an
 * unknown pad_type, a non-positive stride or dilation, an output size <= 0
 * ("spatial dimension r has invalid output size n"). */
OP_HIDDEN mil_status op_spatial_out(mil_infer_ctx *c, const char *pad_type, int k, const mil_dim *in,
                                    const int64_t *kernel, const int64_t *strides, const int64_t *dil,
                                    const int64_t *pad, bool ceil_mode, mil_dim *out);

/* Reads the int vector input `name` of an op with k spatial dims into out
 * (n = expected count): the default `dflt` repeated when the input is
 * absent; an error naming the input when it is not a known int vector of
 * exactly n values. */
OP_HIDDEN mil_status op_window_ints(mil_infer_ctx *c, const char *name, int n, int64_t dflt, int64_t *out);

/* True when v's value is fixed at compile time: a known value, the output
 * of a constexpr_* op, or computed only from such vars (coremltools'
 * Var.is_descendant_of_const). Depth-capped; deep chains count as run time. */

/* conv_transpose variants (conv_transpose.c), listed in conv.c's table. */
OP_HIDDEN mil_status op_conv_transpose_infer(mil_infer_ctx *c);
OP_HIDDEN mil_status op_conv_transpose_defaults(mil_infer_ctx *c);

#endif
