/* Cross-file functions of the tensor_transformation family
 * (tensor_transformation.c, tensor_transformation_reshape.c,
 * tensor_transformation_slice.c). */
#ifndef MIL_TENSOR_TRANSFORMATION_INTERNAL_H
#define MIL_TENSOR_TRANSFORMATION_INTERNAL_H

#include "ops/tensor_ops_internal.h"

/* Folds an op whose output has x's elements in the same order (expand_dims,
 * squeeze, reshape, flatten2d) when x is known. */
OP_HIDDEN mil_status tt_fold_same_elems(mil_infer_ctx *c);

/* tensor_transformation_reshape.c */
OP_HIDDEN mil_status tt_infer_reshape(mil_infer_ctx *c);
OP_HIDDEN mil_status tt_fold_reshape(mil_infer_ctx *c);
OP_HIDDEN mil_status tt_infer_reshape_like(mil_infer_ctx *c);

/* tensor_transformation_slice.c */
OP_HIDDEN mil_status tt_infer_slice_by_index(mil_infer_ctx *c);
OP_HIDDEN mil_status tt_fold_slice_by_index(mil_infer_ctx *c);
OP_HIDDEN mil_status tt_infer_slice_by_size(mil_infer_ctx *c);
OP_HIDDEN mil_status tt_fold_slice_by_size(mil_infer_ctx *c);
OP_HIDDEN mil_status tt_infer_slice_update(mil_infer_ctx *c);
OP_HIDDEN mil_status tt_fold_slice_update(mil_infer_ctx *c);

#endif
