/* oneDNN helpers shared by the interpreter's primitives (conv_dnnl.c,
 * linear_dnnl.c); included only where MIL_HAVE_DNNL is defined. */
#ifndef MIL_INTERP_DNNL_UTIL_H
#define MIL_INTERP_DNNL_UTIL_H

#include <stdbool.h>

#include <dnnl.h>

#include "interp/interp_internal.h"

/* The process's CPU engine (made once), or NULL when oneDNN cannot make one. */
INTERP_HIDDEN dnnl_engine_t interp_dnnl_engine(void);
/* Copies from (layout from_md) into to (layout to_md) through a reorder
 * primitive; false on any oneDNN failure. */
INTERP_HIDDEN bool interp_dnnl_reorder(const dnnl_memory_desc_t *from_md, const void *from,
                                       const dnnl_memory_desc_t *to_md, void *to);

#endif
