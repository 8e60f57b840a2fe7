/* Serialized TensorProto -> mil_onnx_tensor: the wire check, the dialect
 * rule of include/mil/onnx_tensor.h, and the public readers. Both schemas
 * are decoded by protobuf-c (onnx.proto from libonnx-dev, the seed's
 * proto/TensorNamespace.proto); io_proto_check locates wire defects. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io/model_internal.h"
#include "io/fsafe.h"
#include "onnx/tensor/onnx_tensor_internal.h"

enum { WT_VARINT = 0, WT_LEN = 2 };

void mil_onnx_tensor_free(mil_onnx_tensor *t) {
  if (!t) return;
  if (t->priv) {
    if (t->priv->msg) protobuf_c_message_free_unpacked(t->priv->msg, NULL);
    free(t->priv->owned);
    ot_map_unref(t->priv->map);
    free(t->priv);
  }
  free(t->name);
  free(t->shape);
  free(t);
}

static void drop_map(void *ud) { ot_map_unref(ud); }

mil_value *mil_onnx_tensor_to_value(mil_program *p, const mil_onnx_tensor *t) {
  if (!p || !t) return NULL;
  ot_map *m = t->priv ? t->priv->map : NULL;
  const uint8_t *base = ot_map_base(m);
  const uint8_t *data = t->data;
  if (m && t->rank > 0 && data >= base && data + t->nbytes <= base + ot_map_len(m)) {
    ot_map_ref(m);
    if (mil_program_add_mapping(p, base, ot_map_len(m), drop_map, m) != MIL_OK) return NULL;
    mil_value *v = mil_value_new_view(p, t->dtype, t->rank, t->shape, t->data, t->nbytes);
    if (v) v->file_mapped = true;
    return v;
  }
  return mil_value_new_tensor(p, t->dtype, t->rank, t->shape, t->rank == 0, t->data);
}

mil_status onnx_tensor_decode(const Onnx__TensorProto *tp, const char *model_dir, unsigned flags, const char *where,
                              mil_onnx_tensor **out, mil_diag *d) {
  *out = NULL;
  if (!tp) return mil_diag_error(d, MIL_ERR_INVALID, "%s: NULL TensorProto", where ? where : "<tensor>");
  mil_onnx_tensor *t = ot_tensor_new();
  if (!t) return mil_diag_error(d, MIL_ERR_NOMEM, "%s: out of memory", where ? where : "<tensor>");
  ot_src s;
  ot_src_from_onnx(&s, tp);
  ot_ctx c = {where, model_dir, flags, d};
  mil_status st = ot_decode(&s, &c, t);
  if (st != MIL_OK) {
    mil_onnx_tensor_free(t);
    return st;
  }
  *out = t;
  return MIL_OK;
}

mil_status onnx_tensor_to_mil_value(mil_program *p, const Onnx__TensorProto *tp, const char *model_dir,
                                    unsigned flags, const char *where, mil_value **out, mil_diag *d) {
  *out = NULL;
  mil_onnx_tensor *t;
  mil_status st = onnx_tensor_decode(tp, model_dir, flags, where, &t, d);
  if (st != MIL_OK) return st;
  *out = mil_onnx_tensor_to_value(p, t);
  if (!*out) st = mil_diag_error(d, MIL_ERR_NOMEM, "%s: out of memory", where ? where : "<tensor>");
  mil_onnx_tensor_free(t);
  return st;
}

/* ---- the dialect rule ---- */

/* The payload of a length-delimited unknown field: protobuf-c keeps the
 * length prefix (a varint) in front of it. */
static bool unknown_payload(const ProtobufCMessageUnknownField *u, const uint8_t **p, size_t *n) {
  uint64_t len = 0;
  size_t i = 0;
  for (int shift = 0; i < u->len && shift < 64; shift += 7) {
    uint8_t b = u->data[i++];
    len |= (uint64_t)(b & 0x7f) << shift;
    if (!(b & 0x80)) {
      if (len != u->len - i) return false;
      *p = u->data + i;
      *n = (size_t)len;
      return true;
    }
  }
  return false;
}

static bool only_bool_bytes(const uint8_t *p, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (p[i] > 1) return false;
  return true;
}

/* Decides the dialect of a message decoded with ONNX's schema (rule in
 * onnx_tensor.h); *n_meta counts the metadata_props entries when ONNX. */
static mil_status pick_dialect(const Onnx__TensorProto *m, const char *where, mil_onnx_dialect asked,
                               mil_onnx_dialect *out, int32_t *n_meta, mil_diag *d) {
  const char *nd4j_why = NULL, *onnx_why = NULL;
  char why_buf[2][160];
  *n_meta = 0;
  bool other_data = m->has_raw_data || m->n_int32_data || (m->has_data_location && m->data_location == 1);
  bool bool_tensor = m->has_data_type && m->data_type == MIL_ONNX_BOOL && !other_data;
  if (m->has_data_type && m->data_type > 16 && m->data_type <= MIL_ONNX_DTYPE_MAX) {
    snprintf(why_buf[0], sizeof why_buf[0], "data_type %" PRId32 " (%s) exists only in ONNX", m->data_type,
             mil_onnx_dtype_name(m->data_type));
    onnx_why = why_buf[0];
  }
  int k16 = 0;
  for (unsigned i = 0; i < m->base.n_unknown_fields; i++) {
    const ProtobufCMessageUnknownField *u = &m->base.unknown_fields[i];
    if (u->tag == 15 && !nd4j_why) nd4j_why = "field 15 (nd4j's half_val) is present";
    if (u->tag != 16) continue;
    k16++;
    const uint8_t *p = NULL;
    size_t n = 0;
    bool len_ok = u->wire_type == (ProtobufCWireType)WT_LEN && unknown_payload(u, &p, &n);
    if (u->wire_type == (ProtobufCWireType)WT_VARINT && asked != MIL_ONNX_DIALECT_ONNX) {
      nd4j_why = "field 16 is a varint (nd4j's bool_val, unpacked)";
      continue;
    }
    if (len_ok && n == 0) {
      (*n_meta)++;
      continue; /* an empty entry or zero bools: the same nothing either way */
    }
    if (len_ok && only_bool_bytes(p, n) && asked != MIL_ONNX_DIALECT_ONNX) {
      nd4j_why = "field 16 holds only 0x00/0x01 bytes (nd4j's packed bool_val; no ONNX message starts so)";
      continue;
    }
    if (len_ok && io_proto_check(p, n, &onnx__string_string_entry_proto__descriptor, NULL, NULL) == MIL_OK) {
      (*n_meta)++;
      if (bool_tensor && asked == MIL_ONNX_DIALECT_AUTO)
        return mil_diag_error(d, MIL_ERR_FORMAT,
                              "%s: TensorProto '%s': cannot decide the dialect: field 16 (occurrence %d, %zu bytes) "
                              "reads both as ONNX's metadata_props and as nd4j's bool_val of this BOOL tensor, which "
                              "has no other data; give the dialect (onnx or nd4j) explicitly",
                              where, m->name ? m->name : "", k16, n);
      snprintf(why_buf[1], sizeof why_buf[1], "field 16 is a StringStringEntryProto (ONNX's metadata_props)");
      onnx_why = why_buf[1];
      continue;
    }
    if (asked == MIL_ONNX_DIALECT_ND4J) continue;
    if (asked == MIL_ONNX_DIALECT_ONNX)
      return mil_diag_error(d, MIL_ERR_FORMAT,
                            "%s: TensorProto '%s': field 16 (metadata_props, occurrence %d, wire type %d) is not a "
                            "StringStringEntryProto%s", where, m->name ? m->name : "", k16, (int)u->wire_type,
                            (len_ok && only_bool_bytes(p, n)) || u->wire_type == (ProtobufCWireType)WT_VARINT
                                ? "; it reads as nd4j's bool_val: use the nd4j dialect" : "");
    return mil_diag_error(d, MIL_ERR_FORMAT,
                          "%s: TensorProto '%s': %sfield 16 (occurrence %d, wire type %d, %zu bytes) is neither "
                          "ONNX's metadata_props (a StringStringEntryProto) nor nd4j's packed bool_val (bytes 0/1)",
                          where, m->name ? m->name : "", asked == MIL_ONNX_DIALECT_AUTO ? "cannot decide the "
                          "dialect: " : "", k16, (int)u->wire_type, len_ok ? n : u->len);
  }
  if (asked != MIL_ONNX_DIALECT_AUTO) {
    *out = asked;
    return MIL_OK;
  }
  if (nd4j_why && onnx_why)
    return mil_diag_error(d, MIL_ERR_FORMAT,
                          "%s: TensorProto '%s': cannot decide the dialect: %s, but %s; give the dialect (onnx or "
                          "nd4j) explicitly", where, m->name ? m->name : "", nd4j_why, onnx_why);
  *out = nd4j_why ? MIL_ONNX_DIALECT_ND4J : MIL_ONNX_DIALECT_ONNX;
  return MIL_OK;
}

/* ---- public readers ---- */

static mil_status read_buf(const void *buf, size_t len, const char *name, const mil_onnx_read_opts *o,
                           const char *base_dir, mil_onnx_tensor **out, mil_diag *d) {
  mil_onnx_dialect asked = o ? o->dialect : MIL_ONNX_DIALECT_AUTO;
  unsigned flags = o ? o->flags : 0;
  if (asked != MIL_ONNX_DIALECT_AUTO && asked != MIL_ONNX_DIALECT_ONNX && asked != MIL_ONNX_DIALECT_ND4J)
    return mil_diag_error(d, MIL_ERR_INVALID, "%s: dialect %d is not one of auto, onnx, nd4j", name, (int)asked);
  mil_onnx_tensor *t = ot_tensor_new();
  if (!t) return mil_diag_error(d, MIL_ERR_NOMEM, "%s: out of memory", name);
  mil_status st = MIL_OK;
  mil_onnx_dialect dialect = asked;
  int32_t n_meta = 0;
  ot_src s;
  if (asked != MIL_ONNX_DIALECT_ND4J) {
    Onnx__TensorProto *m =
        (Onnx__TensorProto *)io_proto_unpack(buf, len, &onnx__tensor_proto__descriptor, name, d);
    if (!m) st = MIL_ERR_FORMAT;
    if (st == MIL_OK) st = pick_dialect(m, name, asked, &dialect, &n_meta, d);
    if (st == MIL_OK && dialect == MIL_ONNX_DIALECT_ONNX) {
      t->priv->msg = &m->base;
      ot_src_from_onnx(&s, m);
      s.n_metadata = n_meta;
    } else if (m) {
      protobuf_c_message_free_unpacked(&m->base, NULL);
    }
  }
  if (st == MIL_OK && dialect == MIL_ONNX_DIALECT_ND4J) {
    Org__Nd4j__Ir__TensorProto *m = (Org__Nd4j__Ir__TensorProto *)io_proto_unpack(
        buf, len, &org__nd4j__ir__tensor_proto__descriptor, name, d);
    if (!m) st = MIL_ERR_FORMAT;
    else {
      t->priv->msg = &m->base;
      ot_src_from_nd4j(&s, m);
    }
  }
  if (st == MIL_OK) {
    ot_ctx c = {name, o && o->base_dir ? o->base_dir : base_dir, flags, d};
    st = ot_decode(&s, &c, t);
  }
  if (st != MIL_OK) {
    mil_onnx_tensor_free(t);
    return st;
  }
  *out = t;
  return MIL_OK;
}

mil_status mil_onnx_tensor_read_mem(const void *buf, size_t len, const char *name, const mil_onnx_read_opts *opts,
                                    mil_onnx_tensor **out, mil_diag *d) {
  if (out) *out = NULL;
  if (!name) name = "<memory>";
  if (!out || (!buf && len)) return mil_diag_error(d, MIL_ERR_INVALID, "%s: mil_onnx_tensor_read_mem: NULL argument",
                                                   name);
  return read_buf(len ? buf : "", len, name, opts, NULL, out, d);
}

mil_status mil_onnx_tensor_read(const char *path, const mil_onnx_read_opts *opts, mil_onnx_tensor **out,
                                mil_diag *d) {
  if (out) *out = NULL;
  if (!path || !out) return mil_diag_error(d, MIL_ERR_INVALID, "mil_onnx_tensor_read: NULL argument");
  size_t len;
  mil_status st;
  const void *buf = io_fs_map_regular(path, "tensor file", &len, &st, d);
  if (!buf) return st;
  char *dir = strdup(path);
  st = dir ? read_buf(buf, len, path, opts, dirname(dir), out, d) : mil_diag_error(d, MIL_ERR_NOMEM, "%s: out of memory", path);
  free(dir);
  if (len) munmap((void *)buf, len);
  return st;
}
