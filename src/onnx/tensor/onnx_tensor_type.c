/* TypeProto / ValueInfoProto <-> mil_type. Mirrors onnx.proto's TypeProto
 * (tensor_type: elem_type + TensorShapeProto whose Dimension is dim_value,
 * dim_param or neither; sequence_type) and coremltools' ONNX-era mapping of
 * a dim_param to a symbolic dim (a named unknown size). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/model_internal.h"
#include "onnx/tensor/onnx_tensor_internal.h"

/* Deepest sequence nesting accepted (sequence of sequence of ...). */
#define OT_MAX_TYPE_DEPTH 16

static const char *w_or(const char *where) { return where ? where : "<type>"; }

static mil_status tensor_type(mil_program *p, const Onnx__TypeProto__Tensor *tt, unsigned flags, const char *where,
                              const mil_type **out, mil_diag *d) {
  int32_t et = tt->has_elem_type ? tt->elem_type : 0;
  mil_dtype dt = mil_onnx_dtype_to_mil(et, flags);
  if (dt == MIL_DT_UNUSED)
    return mil_diag_error(d, MIL_ERR_FORMAT, "%s: tensor_type.elem_type is %" PRId32 "%s; expected a DataType 1..%d",
                          w_or(where), et, et == 0 ? " (UNDEFINED or missing)" : "", MIL_ONNX_DTYPE_MAX);
  if (!tt->shape) {
    *out = mil_type_tensor(p, dt, -1, NULL);
    return *out ? MIL_OK : mil_diag_error(d, MIL_ERR_NOMEM, "%s: out of memory", w_or(where));
  }
  const Onnx__TensorShapeProto *sh = tt->shape;
  if (sh->n_dim > INT32_MAX) return mil_diag_error(d, MIL_ERR_FORMAT, "%s: too many dims", w_or(where));
  mil_dim *dims = sh->n_dim ? mil_program_alloc(p, sh->n_dim * sizeof *dims) : NULL;
  if (sh->n_dim && !dims) return mil_diag_error(d, MIL_ERR_NOMEM, "%s: out of memory", w_or(where));
  for (size_t i = 0; i < sh->n_dim; i++) {
    const Onnx__TensorShapeProto__Dimension *dm = sh->dim[i];
    dims[i] = (mil_dim){-1, NULL, false};
    if (dm->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE) {
      if (dm->dim_value < 0)
        return mil_diag_error(d, MIL_ERR_FORMAT, "%s: shape.dim[%zu].dim_value is %" PRId64 "; expected >= 0",
                              w_or(where), i, dm->dim_value);
      dims[i].size = dm->dim_value;
    } else if (dm->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM && dm->dim_param &&
               dm->dim_param[0]) {
      dims[i].sym = mil_program_intern(p, dm->dim_param, (size_t)-1);
      if (!dims[i].sym) return mil_diag_error(d, MIL_ERR_NOMEM, "%s: out of memory", w_or(where));
    }
  }
  *out = mil_type_tensor(p, dt, (int32_t)sh->n_dim, dims);
  return *out ? MIL_OK : mil_diag_error(d, MIL_ERR_NOMEM, "%s: out of memory", w_or(where));
}

static mil_status type_rec(mil_program *p, const Onnx__TypeProto *t, unsigned flags, const char *where, int depth,
                           const mil_type **out, mil_diag *d) {
  if (!t) return mil_diag_error(d, MIL_ERR_FORMAT, "%s: type is missing", w_or(where));
  switch (t->value_case) {
  case ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE: return tensor_type(p, t->tensor_type, flags, where, out, d);
  case ONNX__TYPE_PROTO__VALUE_SEQUENCE_TYPE: {
    if (depth >= OT_MAX_TYPE_DEPTH)
      return mil_diag_error(d, MIL_ERR_UNSUPPORTED, "%s: sequence types nested deeper than %d", w_or(where),
                            OT_MAX_TYPE_DEPTH);
    const mil_type *elem;
    mil_status st = type_rec(p, t->sequence_type->elem_type, flags, where, depth + 1, &elem, d);
    if (st != MIL_OK) return st;
    *out = mil_type_list(p, elem, (mil_dim){-1, NULL, false});
    return *out ? MIL_OK : mil_diag_error(d, MIL_ERR_NOMEM, "%s: out of memory", w_or(where));
  }
  case ONNX__TYPE_PROTO__VALUE_MAP_TYPE:
    return mil_diag_error(d, MIL_ERR_UNSUPPORTED, "%s: map_type is not a tensor type; libmil maps only tensor and "
                          "sequence types", w_or(where));
  case ONNX__TYPE_PROTO__VALUE_OPTIONAL_TYPE:
    return mil_diag_error(d, MIL_ERR_UNSUPPORTED, "%s: optional_type is not a tensor type; libmil maps only tensor "
                          "and sequence types", w_or(where));
  case ONNX__TYPE_PROTO__VALUE_SPARSE_TENSOR_TYPE:
    return mil_diag_error(d, MIL_ERR_UNSUPPORTED, "%s: sparse_tensor_type is not supported (MIL has dense tensors "
                          "only)", w_or(where));
  default:
    return mil_diag_error(d, MIL_ERR_FORMAT, "%s: TypeProto has no value (expected tensor_type)", w_or(where));
  }
}

mil_status onnx_type_to_mil(mil_program *p, const Onnx__TypeProto *t, unsigned flags, const char *where,
                            const mil_type **out, mil_diag *d) {
  *out = NULL;
  return type_rec(p, t, flags, where, 0, out, d);
}

mil_status onnx_value_info_to_mil(mil_program *p, const Onnx__ValueInfoProto *vi, unsigned flags, const char *where,
                                  const char **name, const mil_type **out, mil_diag *d) {
  *out = NULL;
  *name = NULL;
  if (!vi) return mil_diag_error(d, MIL_ERR_INVALID, "%s: NULL ValueInfoProto", w_or(where));
  char buf[512];
  snprintf(buf, sizeof buf, "%s: value '%s'", w_or(where), vi->name ? vi->name : "");
  *name = mil_program_intern(p, vi->name ? vi->name : "", (size_t)-1);
  if (!*name) return mil_diag_error(d, MIL_ERR_NOMEM, "%s: out of memory", buf);
  return type_rec(p, vi->type, flags, buf, 0, out, d);
}

/* ---- mil_type -> TypeProto ---- */

static void *pb_new(const ProtobufCMessageDescriptor *desc) {
  ProtobufCMessage *m = calloc(1, desc->sizeof_message);
  if (m) desc->message_init(m);
  return m;
}

static mil_status from_mil_rec(const mil_type *t, const char *where, int depth, Onnx__TypeProto **out, mil_diag *d) {
  *out = NULL;
  Onnx__TypeProto *tp = pb_new(&onnx__type_proto__descriptor);
  if (!tp) return mil_diag_error(d, MIL_ERR_NOMEM, "%s: out of memory", w_or(where));
  if (t && t->kind == MIL_TYPE_LIST && depth < OT_MAX_TYPE_DEPTH) {
    tp->value_case = ONNX__TYPE_PROTO__VALUE_SEQUENCE_TYPE;
    tp->sequence_type = pb_new(&onnx__type_proto__sequence__descriptor);
    mil_status st = tp->sequence_type ? from_mil_rec(t->elem, where, depth + 1, &tp->sequence_type->elem_type, d)
                                      : mil_diag_error(d, MIL_ERR_NOMEM, "%s: out of memory", w_or(where));
    if (st != MIL_OK) {
      protobuf_c_message_free_unpacked(&tp->base, NULL);
      return st;
    }
    *out = tp;
    return MIL_OK;
  }
  if (!t || t->kind != MIL_TYPE_TENSOR) {
    free(tp);
    return mil_diag_error(d, MIL_ERR_UNSUPPORTED, "%s: only tensor and list types have a TypeProto", w_or(where));
  }
  int32_t et = mil_onnx_dtype_from_mil(t->dtype);
  if (!et) {
    free(tp);
    return mil_diag_error(d, MIL_ERR_UNSUPPORTED, "%s: dtype %s has no ONNX DataType", w_or(where),
                          mil_dtype_name(t->dtype));
  }
  tp->value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
  Onnx__TypeProto__Tensor *tt = tp->tensor_type = pb_new(&onnx__type_proto__tensor__descriptor);
  if (!tt) goto oom;
  tt->has_elem_type = true;
  tt->elem_type = et;
  if (t->rank >= 0) {
    Onnx__TensorShapeProto *sh = tt->shape = pb_new(&onnx__tensor_shape_proto__descriptor);
    if (!sh) goto oom;
    if (t->rank > 0) {
      sh->dim = calloc((size_t)t->rank, sizeof *sh->dim);
      if (!sh->dim) goto oom;
    }
    for (int32_t i = 0; i < t->rank; i++) {
      Onnx__TensorShapeProto__Dimension *dm = sh->dim[i] = pb_new(&onnx__tensor_shape_proto__dimension__descriptor);
      if (!dm) goto oom;
      sh->n_dim = (size_t)i + 1;
      if (t->dims[i].size >= 0) {
        dm->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
        dm->dim_value = t->dims[i].size;
      } else if (t->dims[i].sym) {
        dm->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM;
        if (!(dm->dim_param = strdup(t->dims[i].sym))) goto oom;
      }
    }
  }
  *out = tp;
  return MIL_OK;
oom:
  protobuf_c_message_free_unpacked(&tp->base, NULL);
  return mil_diag_error(d, MIL_ERR_NOMEM, "%s: out of memory", w_or(where));
}

mil_status onnx_type_from_mil(const mil_type *t, const char *where, Onnx__TypeProto **out, mil_diag *d) {
  return from_mil_rec(t, where, 0, out, d);
}

/* ---- public, on serialized bytes ---- */

mil_status mil_onnx_type_decode(mil_program *p, const void *buf, size_t len, unsigned flags, const char *name,
                                const mil_type **out, mil_diag *d) {
  if (out) *out = NULL;
  if (!name) name = "<memory>";
  if (!p || !out || (!buf && len)) return mil_diag_error(d, MIL_ERR_INVALID, "%s: NULL argument", name);
  Onnx__TypeProto *m =
      (Onnx__TypeProto *)io_proto_unpack(len ? buf : "", len, &onnx__type_proto__descriptor, name, d);
  if (!m) return MIL_ERR_FORMAT;
  mil_status st = onnx_type_to_mil(p, m, flags, name, out, d);
  protobuf_c_message_free_unpacked(&m->base, NULL);
  return st;
}

mil_status mil_onnx_value_info_decode(mil_program *p, const void *buf, size_t len, unsigned flags, const char *name,
                                      const char **value_name, const mil_type **out, mil_diag *d) {
  if (out) *out = NULL;
  if (value_name) *value_name = NULL;
  if (!name) name = "<memory>";
  if (!p || !out || !value_name || (!buf && len))
    return mil_diag_error(d, MIL_ERR_INVALID, "%s: NULL argument", name);
  Onnx__ValueInfoProto *m =
      (Onnx__ValueInfoProto *)io_proto_unpack(len ? buf : "", len, &onnx__value_info_proto__descriptor, name, d);
  if (!m) return MIL_ERR_FORMAT;
  mil_status st = onnx_value_info_to_mil(p, m, flags, name, value_name, out, d);
  protobuf_c_message_free_unpacked(&m->base, NULL);
  return st;
}

/* Packs m into a new malloc'ed buffer. */
static mil_status pack(const ProtobufCMessage *m, void **buf, size_t *len, mil_diag *d) {
  size_t n = protobuf_c_message_get_packed_size(m);
  uint8_t *b = malloc(n ? n : 1);
  if (!b) return mil_diag_error(d, MIL_ERR_NOMEM, "out of memory for %zu bytes", n);
  protobuf_c_message_pack(m, b);
  *buf = b;
  *len = n;
  return MIL_OK;
}

mil_status mil_onnx_type_encode(const mil_type *t, mil_onnx_dialect dialect, void **buf, size_t *len, mil_diag *d) {
  if (buf) *buf = NULL;
  if (len) *len = 0;
  if (!buf || !len) return mil_diag_error(d, MIL_ERR_INVALID, "mil_onnx_type_encode: NULL argument");
  if (dialect == MIL_ONNX_DIALECT_ND4J && t && t->kind != MIL_TYPE_TENSOR)
    return mil_diag_error(d, MIL_ERR_UNSUPPORTED, "TypeProto: the nd4j dialect has tensor types only");
  Onnx__TypeProto *tp;
  mil_status st = onnx_type_from_mil(t, "TypeProto", &tp, d);
  if (st != MIL_OK) return st;
  if (dialect == MIL_ONNX_DIALECT_ND4J && !ot_in_nd4j(tp->tensor_type->elem_type)) {
    protobuf_c_message_free_unpacked(&tp->base, NULL);
    return mil_diag_error(d, MIL_ERR_UNSUPPORTED, "TypeProto: dtype %s has no DataType in the nd4j dialect",
                          mil_dtype_name(t->dtype));
  }
  /* the nd4j TypeProto is field for field ONNX's tensor_type subset: the bytes are the same */
  st = pack(&tp->base, buf, len, d);
  protobuf_c_message_free_unpacked(&tp->base, NULL);
  return st;
}

mil_status mil_onnx_value_info_encode(const char *value_name, const mil_type *t, mil_onnx_dialect dialect,
                                      void **buf, size_t *len, mil_diag *d) {
  if (buf) *buf = NULL;
  if (len) *len = 0;
  if (!buf || !len || !value_name) return mil_diag_error(d, MIL_ERR_INVALID, "mil_onnx_value_info_encode: NULL argument");
  if (dialect == MIL_ONNX_DIALECT_ND4J && t && t->kind != MIL_TYPE_TENSOR)
    return mil_diag_error(d, MIL_ERR_UNSUPPORTED, "ValueInfoProto '%s': the nd4j dialect has tensor types only",
                          value_name);
  Onnx__ValueInfoProto vi = ONNX__VALUE_INFO_PROTO__INIT;
  vi.name = (char *)value_name;
  mil_status st = onnx_type_from_mil(t, value_name, &vi.type, d);
  if (st != MIL_OK) return st;
  if (dialect == MIL_ONNX_DIALECT_ND4J && !ot_in_nd4j(vi.type->tensor_type->elem_type))
    st = mil_diag_error(d, MIL_ERR_UNSUPPORTED, "ValueInfoProto '%s': dtype %s has no DataType in the nd4j dialect",
                        value_name, mil_dtype_name(t->dtype));
  if (st == MIL_OK) st = pack(&vi.base, buf, len, d);
  protobuf_c_message_free_unpacked(&vi.type->base, NULL);
  return st;
}
