/* Running another op's converter for a node (onnx_convert_as), for the op
 * families that reuse one (src/onnx/import/import_convert_as.c). */
#ifndef MIL_ONNX_IMPORT_CONVERT_AS_H
#define MIL_ONNX_IMPORT_CONVERT_AS_H

#include "onnx/import/import_internal.h"

/* Runs the ai.onnx converter of `op_type` (at the node's opset) on inputs
 * in[0..n_in) with the attributes of node n, as if n were that op, and
 * returns its first output (a var named "<n's first output>_<op_type>"),
 * NULL with an error recorded when there is no converter or it fails.
 * Messages keep naming node n. */
mil_var *onnx_convert_as(onnx_ctx *c, onnx_node *n, const char *op_type, int32_t n_in, mil_var **in);

#endif
