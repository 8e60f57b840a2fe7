/* Cross-file functions of the tensor_operation family (tensor_operation.c,
 * tensor_operation_concat.c, tensor_operation_sort.c). */
#ifndef MIL_TENSOR_OPERATION_INTERNAL_H
#define MIL_TENSOR_OPERATION_INTERNAL_H

#include "ops/tensor_ops_internal.h"

/* Sets the number of outputs an op with a variable output count produces
 * (n): the op's existing outputs must number n (else op_fail); a new op
 * gets n (at most 16). */
OP_HIDDEN mil_status to_set_n_out(mil_infer_ctx *c, int32_t n);

/* tensor_operation_concat.c */
OP_HIDDEN mil_status to_infer_concat(mil_infer_ctx *c);
OP_HIDDEN mil_status to_fold_concat(mil_infer_ctx *c);
OP_HIDDEN mil_status to_defaults_concat(mil_infer_ctx *c);
OP_HIDDEN mil_status to_infer_split(mil_infer_ctx *c);
OP_HIDDEN mil_status to_fold_split(mil_infer_ctx *c);
OP_HIDDEN mil_status to_infer_stack(mil_infer_ctx *c);
OP_HIDDEN mil_status to_fold_stack(mil_infer_ctx *c);
OP_HIDDEN mil_status to_infer_tile(mil_infer_ctx *c);
OP_HIDDEN mil_status to_fold_tile(mil_infer_ctx *c);
OP_HIDDEN mil_status to_infer_pad(mil_infer_ctx *c);
OP_HIDDEN mil_status to_fold_pad(mil_infer_ctx *c);
OP_HIDDEN mil_status to_defaults_pad(mil_infer_ctx *c);

/* tensor_operation_sort.c */
OP_HIDDEN mil_status to_infer_argsort(mil_infer_ctx *c);
OP_HIDDEN mil_status to_fold_argsort(mil_infer_ctx *c);
OP_HIDDEN mil_status to_defaults_argsort(mil_infer_ctx *c);
OP_HIDDEN mil_status to_infer_topk(mil_infer_ctx *c);
OP_HIDDEN mil_status to_fold_topk(mil_infer_ctx *c);
OP_HIDDEN mil_status to_defaults_topk(mil_infer_ctx *c);
OP_HIDDEN mil_status to_infer_non_zero(mil_infer_ctx *c);
OP_HIDDEN mil_status to_fold_non_zero(mil_infer_ctx *c);
OP_HIDDEN mil_status to_infer_range_1d(mil_infer_ctx *c);
OP_HIDDEN mil_status to_fold_range_1d(mil_infer_ctx *c);
OP_HIDDEN mil_status to_infer_cumsum(mil_infer_ctx *c);
OP_HIDDEN mil_status to_fold_cumsum(mil_infer_ctx *c);
OP_HIDDEN mil_status to_defaults_cumsum(mil_infer_ctx *c);

#endif
