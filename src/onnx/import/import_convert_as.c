/* Reusing a converter for another op_type: the integer and quantized
 * convolutions run Conv's converter (pads, auto_pad, strides, dilations,
 * groups) on their dequantized operands. */
#include <stdio.h>
#include <string.h>

#include "onnx/import/import_convert_as.h"

const onnx_op_entry *onnx_registry_find(const char *op_type, const char *domain, int opset, const onnx_op_entry **any);

mil_var *onnx_convert_as(onnx_ctx *c, onnx_node *n, const char *op_type, int32_t n_in, mil_var **in) {
  const onnx_op_entry *e = onnx_registry_find(op_type, "", n->opset, NULL);
  if (!e) {
    onnx_fail(c, MIL_ERR_UNSUPPORTED, "needs the converter of %s at opset %d, which libmil lacks", op_type, n->opset);
    return NULL;
  }
  /* the node as op_type, producing one fresh output name */
  const char *base = n->n_out > 0 && n->proto->output[0] && n->proto->output[0][0] ? n->proto->output[0] : n->name;
  char buf[512];
  const char *out = NULL;
  for (int k = 0; k < 1000 && !out; k++) {
    snprintf(buf, sizeof buf, k ? "%s_%s_%d" : "%s_%s", base, op_type, k);
    if (!onnx_name_taken(c, buf)) out = mil_program_intern(c->p, buf, (size_t)-1);
  }
  if (!out) return NULL;
  char **outs = mil_program_alloc(c->p, sizeof *outs);
  if (!outs) return NULL;
  outs[0] = (char *)out;
  Onnx__NodeProto proto = *n->proto;
  proto.op_type = (char *)op_type;
  proto.n_output = 1;
  proto.output = outs;
  if ((size_t)n_in < proto.n_input) proto.n_input = (size_t)n_in;
  onnx_node sub = *n;
  sub.proto = &proto;
  sub.entry = e;
  sub.op_type = op_type;
  sub.n_in = n_in;
  sub.in = in;
  sub.n_out = 1;
  if (e->fn(c, &sub) != MIL_OK) return NULL;
  return onnx_lookup(c, out);
}
