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

/* The stream and memory objects of one primitive call. With a pool and a
 * key (a cached primitive: it lives as long as the interpreter family),
 * they are the calling interpreter's, made on its first call and kept by
 * its pool (each interpreter runs in one thread at a time); else made for
 * this call and destroyed by interp_dnnl_call_end. Each call points them
 * at its own buffers (dnnl_memory_set_data_handle). */
#define INTERP_DNNL_MAX_ARGS 8
typedef struct interp_dnnl_call {
  dnnl_stream_t st;
  dnnl_memory_t *m;
  int n;
  bool own; /* made for this call */
  dnnl_memory_t own_m[INTERP_DNNL_MAX_ARGS];
} interp_dnnl_call;
/* n (<= INTERP_DNNL_MAX_ARGS) memory objects of the descriptors mds, object
 * i over data[i] (NULL: none); false on any oneDNN failure or out of memory
 * (interp_dnnl_call_end still to be called). */
INTERP_HIDDEN bool interp_dnnl_call_begin(interp_dnnl_call *c, interp_bufpool *pool, const void *key, int n,
                                          const dnnl_memory_desc_t *const *mds, void *const *data);
INTERP_HIDDEN void interp_dnnl_call_end(interp_dnnl_call *c);

#endif
