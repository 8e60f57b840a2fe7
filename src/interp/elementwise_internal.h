/* Float maps shared by the elementwise and activation kernels. */
#ifndef MIL_INTERP_ELEMENTWISE_INTERNAL_H
#define MIL_INTERP_ELEMENTWISE_INTERNAL_H

#include "interp/interp_internal.h"

/* y[i] = f(x[i]) for n elements with parameters p. */
typedef void (*interp_unary_fn)(const float *x, float *y, int64_t n, const float *p);

/* Applies fn to the float input "x" of c->op into output 0 (of the
 * inferred type); INTERP_DECLINE when x is not fp16/fp32. */
INTERP_HIDDEN mil_status interp_map(interp_run *r, mil_infer_ctx *c, interp_unary_fn fn, const float *p);
/* Scalar float parameter `name`, dflt when absent; false when present but
 * not a known one-element float. */
INTERP_HIDDEN bool interp_fparam(const mil_infer_ctx *c, const char *name, float dflt, float *out);

#endif
