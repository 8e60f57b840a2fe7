/* Materializing coremltools' default inputs (Operation.default_inputs) as
 * const ops, the way its builder does: a missing optional input that has a
 * default becomes a const op inserted right before the op, named
 * "<op name>_<input name>_<k>" with the first k >= 0 whose name is free in
 * the program (coremltools' builder counts names from 0). Python ints become
 * int32, Python floats fp32, strings string, bools bool. Implemented in
 * conv.c. */
#ifndef MIL_OPS_DEFAULTS_H
#define MIL_OPS_DEFAULTS_H

#include "ops/ops_internal.h"

/* Adds a const op holding v before c->op and binds it to input `input`
 * (then restores the spec's input order). Does nothing when the input is
 * already bound. Returns MIL_ERR_INVALID (with a message) when the op is not
 * in a block, MIL_ERR_NOMEM on allocation failure. */
OP_HIDDEN mil_status op_add_default_const(mil_infer_ctx *c, const char *input, const mil_value *v);

/* Shorthands building the value first. `vals` holds n int32 values; a rank-1
 * tensor of shape (n) unless `scalar` (then n must be 1). */
OP_HIDDEN mil_status op_add_default_ints(mil_infer_ctx *c, const char *input, const int64_t *vals, int n, bool scalar);
OP_HIDDEN mil_status op_add_default_int(mil_infer_ctx *c, const char *input, int64_t v);
OP_HIDDEN mil_status op_add_default_f32(mil_infer_ctx *c, const char *input, double v);
OP_HIDDEN mil_status op_add_default_bool(mil_infer_ctx *c, const char *input, bool v);
OP_HIDDEN mil_status op_add_default_str(mil_infer_ctx *c, const char *input, const char *s);

#endif
