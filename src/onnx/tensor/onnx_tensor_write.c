/* MIL elements -> serialized TensorProto, in ONNX's schema or nd4j's
 * (seed 002). Mirrors onnx/numpy_helper.py from_array (raw_data,
 * little-endian, bool one byte, 4-bit pairs low nibble first) and
 * onnx/helper.py make_tensor (the typed fields: bit patterns of
 * FLOAT16/BFLOAT16/FLOAT8 in int32_data, packed 4-bit pairs, uint64_data for
 * UINT32/UINT64). raw_data unless asked otherwise; STRING always uses
 * string_data (raw_data cannot hold strings). */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <libgen.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "onnx/tensor/onnx_tensor_internal.h"

/* The fields of a tensor being written, whichever schema packs them. */
typedef struct ot_out {
  const char *what; /* for messages */
  int32_t t;
  mil_dtype dt;
  int64_t numel;
  size_t n_float, n_int32, n_int64, n_double, n_uint64, n_string, n_half, n_bool;
  float *float_data;
  int32_t *int32_data;
  int64_t *int64_data;
  double *double_data;
  uint64_t *uint64_data;
  ProtobufCBinaryData *string_data;
  int32_t *half_val;
  protobuf_c_boolean *bool_val;
  bool has_raw;
  ProtobufCBinaryData raw;
  void *owned[2]; /* buffers to free */
} ot_out;

__attribute__((format(printf, 3, 4))) static mil_status werr(mil_diag *d, mil_status st, const char *fmt, ...) {
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return mil_diag_error(d, st, "%s", msg);
}

static void *own(ot_out *o, size_t n) {
  void *p = calloc(1, n ? n : 1);
  if (p) o->owned[o->owned[0] ? 1 : 0] = p;
  return p;
}

/* Element i of a MIL int-like value as int64 (sign per dtype). */
static int64_t get_int(mil_dtype dt, const void *p, int64_t i) {
  switch (dt) {
  case MIL_DT_INT8: return ((const int8_t *)p)[i];
  case MIL_DT_INT16: return ((const int16_t *)p)[i];
  case MIL_DT_INT32: return ((const int32_t *)p)[i];
  case MIL_DT_INT64: return ((const int64_t *)p)[i];
  case MIL_DT_UINT16: case MIL_DT_FP16: case MIL_DT_BF16: return ((const uint16_t *)p)[i];
  case MIL_DT_UINT32: return ((const uint32_t *)p)[i];
  case MIL_DT_UINT64: return (int64_t)((const uint64_t *)p)[i];
  default: return ((const uint8_t *)p)[i]; /* uint8, bool, fp8 */
  }
}

/* Stored bytes of a widened or FNUZ type (the DataType's raw layout),
 * converted from the MIL dtype; refuses values the DataType cannot hold. */
static mil_status widen_raw(ot_out *o, const void *data, void **out, mil_diag *d) {
  int64_t n = o->numel;
  size_t w = (size_t)ot_onnx_bits(o->t) / 8;
  if (o->t == MIL_ONNX_COMPLEX128) n *= 2, w = 8;
  uint8_t *b = own(o, (size_t)n * w);
  if (!b) return werr(d, MIL_ERR_NOMEM, "%s: out of memory", o->what);
  for (int64_t i = 0; i < n; i++) {
    switch (o->t) {
    case MIL_ONNX_INT64: ((int64_t *)b)[i] = ((const int32_t *)data)[i]; break;
    case MIL_ONNX_UINT32: case MIL_ONNX_UINT64: {
      int32_t x = ((const int32_t *)data)[i];
      if (x < 0)
        return werr(d, MIL_ERR_INVALID, "%s: element %" PRId64 " is %" PRId32 ", which %s cannot hold", o->what, i, x,
                    mil_onnx_dtype_name(o->t));
      if (o->t == MIL_ONNX_UINT32) ((uint32_t *)b)[i] = (uint32_t)x;
      else ((uint64_t *)b)[i] = (uint64_t)x;
      break;
    }
    case MIL_ONNX_DOUBLE: case MIL_ONNX_COMPLEX128: ((double *)b)[i] = ((const float *)data)[i]; break;
    default: { /* FNUZ from fp16 */
      float f = mil_fp16_to_fp32(((const uint16_t *)data)[i]);
      if (!ot_f32_to_fnuz(f, o->t == MIL_ONNX_FLOAT8E5M2FNUZ, &b[i]))
        return werr(d, MIL_ERR_INVALID, "%s: element %" PRId64 " is %g, which %s cannot hold (largest %g)", o->what,
                    i, (double)f, mil_onnx_dtype_name(o->t), (double)ot_fnuz_to_f32(0x7f, o->t == MIL_ONNX_FLOAT8E5M2FNUZ));
      break;
    }
    }
  }
  *out = b;
  return MIL_OK;
}

/* Fills o's typed fields (encoding TYPED or ND4J) from `data` (raw layout
 * of the DataType when `raw` says so: widened types pass their converted
 * bytes here). */
static mil_status fill_typed(ot_out *o, const void *data, bool nd4j_fields, mil_diag *d) {
  int64_t n = o->numel;
  int32_t t = o->t;
  if (nd4j_fields) {
    if (t == MIL_ONNX_FLOAT16) {
      if (!(o->half_val = own(o, (size_t)n * 4))) goto oom;
      for (int64_t i = 0; i < n; i++) o->half_val[i] = ((const uint16_t *)data)[i];
      o->n_half = (size_t)n;
    } else if (t == MIL_ONNX_BOOL) {
      if (!(o->bool_val = own(o, (size_t)n * sizeof *o->bool_val))) goto oom;
      for (int64_t i = 0; i < n; i++) o->bool_val[i] = ((const uint8_t *)data)[i] != 0;
      o->n_bool = (size_t)n;
    } else {
      return werr(d, MIL_ERR_UNSUPPORTED, "%s: the nd4j fields hold FLOAT16 (half_val) and BOOL (bool_val) only, not "
                  "%s", o->what, mil_onnx_dtype_name(t));
    }
    return MIL_OK;
  }
  switch (t) {
  case MIL_ONNX_FLOAT: case MIL_ONNX_COMPLEX64:
    o->float_data = (float *)data;
    o->n_float = (size_t)(t == MIL_ONNX_COMPLEX64 ? 2 * n : n);
    return MIL_OK;
  case MIL_ONNX_INT64:
    o->int64_data = (int64_t *)data;
    o->n_int64 = (size_t)n;
    return MIL_OK;
  case MIL_ONNX_DOUBLE: case MIL_ONNX_COMPLEX128:
    o->double_data = (double *)data;
    o->n_double = (size_t)(t == MIL_ONNX_COMPLEX128 ? 2 * n : n);
    return MIL_OK;
  case MIL_ONNX_UINT64:
    o->uint64_data = (uint64_t *)data;
    o->n_uint64 = (size_t)n;
    return MIL_OK;
  case MIL_ONNX_UINT32:
    if (!(o->uint64_data = own(o, (size_t)n * 8))) goto oom;
    for (int64_t i = 0; i < n; i++) o->uint64_data[i] = ((const uint32_t *)data)[i];
    o->n_uint64 = (size_t)n;
    return MIL_OK;
  case MIL_ONNX_STRING:
    if (!(o->string_data = own(o, (size_t)n * sizeof *o->string_data))) goto oom;
    for (int64_t i = 0; i < n; i++) {
      const char *s = ((const char *const *)data)[i];
      if (!s) return werr(d, MIL_ERR_INVALID, "%s: string element %" PRId64 " is NULL", o->what, i);
      o->string_data[i] = (ProtobufCBinaryData){strlen(s), (uint8_t *)s};
    }
    o->n_string = (size_t)n;
    return MIL_OK;
  default: break;
  }
  /* int32_data: small ints sign- or zero-extended, bit patterns, 4-bit pairs */
  bool four = t == MIL_ONNX_INT4 || t == MIL_ONNX_UINT4;
  size_t m = four ? (size_t)(n + 1) / 2 : (size_t)n;
  if (!(o->int32_data = own(o, m * 4))) goto oom;
  mil_dtype src = (t == MIL_ONNX_FLOAT8E4M3FNUZ || t == MIL_ONNX_FLOAT8E5M2FNUZ || four) ? MIL_DT_UINT8 : o->dt;
  for (size_t i = 0; i < m; i++) o->int32_data[i] = (int32_t)get_int(src, data, (int64_t)i);
  o->n_int32 = m;
  return MIL_OK;
oom:
  return werr(d, MIL_ERR_NOMEM, "%s: out of memory", o->what);
}

static void out_free(ot_out *o) {
  free(o->owned[0]);
  free(o->owned[1]);
}

/* Checks the request and fills o (fields of either schema). */
static mil_status build(ot_out *o, mil_dtype dt, int32_t rank, const int64_t *shape, const void *data,
                        const mil_onnx_write_opts *op, mil_diag *d) {
  mil_onnx_encoding enc = op ? op->encoding : MIL_ONNX_ENC_RAW;
  mil_onnx_dialect dia = op && op->dialect == MIL_ONNX_DIALECT_ND4J ? MIL_ONNX_DIALECT_ND4J : MIL_ONNX_DIALECT_ONNX;
  int32_t t = op && op->onnx_type ? op->onnx_type : mil_onnx_dtype_from_mil(dt);
  o->what = op && op->name ? op->name : "TensorProto";
  o->t = t;
  o->dt = dt;
  if (!mil_onnx_dtype_name(t) || t == MIL_ONNX_UNDEFINED)
    return werr(d, MIL_ERR_UNSUPPORTED, "%s: dtype %s has no ONNX DataType (asked for %" PRId32 ")", o->what,
                mil_dtype_name(dt), t);
  bool exact = mil_onnx_dtype_to_mil(t, MIL_ONNX_EXACT) == dt;
  bool widen = !exact || t == MIL_ONNX_FLOAT8E4M3FNUZ || t == MIL_ONNX_FLOAT8E5M2FNUZ;
  if (!exact && mil_onnx_dtype_to_mil(t, 0) != dt)
    return werr(d, MIL_ERR_UNSUPPORTED, "%s: cannot store dtype %s as %s (expected %s)", o->what, mil_dtype_name(dt),
                mil_onnx_dtype_name(t), mil_dtype_name(mil_onnx_dtype_to_mil(t, MIL_ONNX_EXACT)));
  if (dia == MIL_ONNX_DIALECT_ND4J && !ot_in_nd4j(t))
    return werr(d, MIL_ERR_UNSUPPORTED, "%s: the nd4j dialect has no DataType %s (its DataType ends at 16, BFLOAT16)",
                o->what, mil_onnx_dtype_name(t));
  if (enc == MIL_ONNX_ENC_ND4J && dia != MIL_ONNX_DIALECT_ND4J)
    return werr(d, MIL_ERR_UNSUPPORTED, "%s: half_val/bool_val exist only in the nd4j dialect", o->what);
  if (enc != MIL_ONNX_ENC_RAW && enc != MIL_ONNX_ENC_TYPED && enc != MIL_ONNX_ENC_ND4J)
    return werr(d, MIL_ERR_UNSUPPORTED, "%s: encoding %s cannot be written here", o->what, mil_onnx_encoding_name(enc));
  if (rank < 0 || (rank > 0 && !shape)) return werr(d, MIL_ERR_INVALID, "%s: rank %" PRId32 " without a shape", o->what, rank);
  int64_t n = 1;
  bool zero = false;
  for (int32_t i = 0; i < rank; i++) {
    if (shape[i] < 0) return werr(d, MIL_ERR_INVALID, "%s: dimension %" PRId32 " is %" PRId64, o->what, i, shape[i]);
    if (shape[i] == 0) zero = true;
    else if (n > INT64_MAX / 16 / shape[i]) return werr(d, MIL_ERR_INVALID, "%s: element count overflows", o->what);
    else n *= shape[i];
  }
  o->numel = zero ? 0 : n;
  if (o->numel && !data) return werr(d, MIL_ERR_INVALID, "%s: NULL data for %" PRId64 " elements", o->what, o->numel);
  if (!o->numel) return MIL_OK;
  const void *src = data;
  if (widen) {
    void *b = NULL;
    mil_status st = widen_raw(o, data, &b, d);
    if (st != MIL_OK) return st;
    src = b;
    o->dt = mil_onnx_dtype_to_mil(t, MIL_ONNX_EXACT); /* the bytes are now the DataType's own */
    if (t == MIL_ONNX_FLOAT8E4M3FNUZ || t == MIL_ONNX_FLOAT8E5M2FNUZ) o->dt = MIL_DT_UINT8;
  }
  if (enc == MIL_ONNX_ENC_RAW && t != MIL_ONNX_STRING) {
    o->has_raw = true;
    o->raw.data = (uint8_t *)src;
    o->raw.len = (size_t)(((uint64_t)o->numel * (uint64_t)ot_onnx_bits(t) + 7) / 8);
    return MIL_OK;
  }
  return fill_typed(o, src, enc == MIL_ONNX_ENC_ND4J, d);
}

/* The fields both schemas' TensorProto share, set on message m from o. */
#define OT_SET_COMMON(m, o, dims_, rank_)                                       \
  do {                                                                          \
    (m)->n_dims = (rank_), (m)->dims = (dims_);                                 \
    (m)->data_type = (o)->t;                                                    \
    (m)->n_float_data = (o)->n_float, (m)->float_data = (o)->float_data;        \
    (m)->n_int32_data = (o)->n_int32, (m)->int32_data = (o)->int32_data;        \
    (m)->n_string_data = (o)->n_string, (m)->string_data = (o)->string_data;    \
    (m)->n_int64_data = (o)->n_int64, (m)->int64_data = (o)->int64_data;        \
    (m)->n_double_data = (o)->n_double, (m)->double_data = (o)->double_data;    \
    (m)->n_uint64_data = (o)->n_uint64, (m)->uint64_data = (o)->uint64_data;    \
    if ((o)->has_raw) (m)->raw_data = (o)->raw;                                 \
  } while (0)

/* A message over o: the caller packs it; nothing in it is owned by it. */
typedef union ot_msg {
  ProtobufCMessage base;
  Onnx__TensorProto onnx;
  Org__Nd4j__Ir__TensorProto nd4j;
} ot_msg;

static void make_msg(ot_out *o, int32_t rank, const int64_t *shape, const mil_onnx_write_opts *op, ot_msg *m) {
  const char *name = op ? op->name : NULL;
  if (op && op->dialect == MIL_ONNX_DIALECT_ND4J) {
    org__nd4j__ir__tensor_proto__init(&m->nd4j);
    OT_SET_COMMON(&m->nd4j, o, (int64_t *)shape, (size_t)rank);
    m->nd4j.name = (char *)(name ? name : ""); /* proto3: "" is absent */
    m->nd4j.n_half_val = o->n_half, m->nd4j.half_val = o->half_val;
    m->nd4j.n_bool_val = o->n_bool, m->nd4j.bool_val = o->bool_val;
  } else {
    onnx__tensor_proto__init(&m->onnx);
    OT_SET_COMMON(&m->onnx, o, (int64_t *)shape, (size_t)rank);
    m->onnx.has_data_type = true;
    m->onnx.name = (char *)name;
    m->onnx.has_raw_data = o->has_raw;
  }
}

mil_status mil_onnx_tensor_encode(mil_dtype dt, int32_t rank, const int64_t *shape, const void *data,
                                  const mil_onnx_write_opts *opts, void **buf, size_t *len, mil_diag *d) {
  if (buf) *buf = NULL;
  if (len) *len = 0;
  if (!buf || !len) return werr(d, MIL_ERR_INVALID, "mil_onnx_tensor_encode: NULL argument");
  ot_out o;
  memset(&o, 0, sizeof o);
  mil_status st = build(&o, dt, rank, shape, data, opts, d);
  if (st == MIL_OK) {
    ot_msg m;
    make_msg(&o, rank, shape, opts, &m);
    size_t n = protobuf_c_message_get_packed_size(&m.base);
    uint8_t *b = malloc(n ? n : 1);
    if (!b) st = werr(d, MIL_ERR_NOMEM, "%s: out of memory for %zu bytes", o.what, n);
    else {
      protobuf_c_message_pack(&m.base, b);
      *buf = b;
      *len = n;
    }
  }
  out_free(&o);
  return st;
}

/* ---- files: a temporary sibling renamed into place ---- */

typedef struct fd_buffer {
  ProtobufCBuffer base;
  int fd;
  bool failed;
  int err;
} fd_buffer;

static void fd_append(ProtobufCBuffer *b, size_t n, const uint8_t *p) {
  fd_buffer *f = (fd_buffer *)b;
  while (n > 0 && !f->failed) {
    ssize_t r = write(f->fd, p, n > (1u << 30) ? (1u << 30) : n);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) {
      f->failed = true;
      f->err = r < 0 ? errno : EIO;
      return;
    }
    p += r;
    n -= (size_t)r;
  }
}

/* Creates path's temporary sibling; *tmp is malloc'ed. */
static int open_tmp(const char *path, char **tmp) {
  static unsigned counter;
  size_t cap = strlen(path) + 48;
  *tmp = malloc(cap);
  if (!*tmp) return -1;
  for (int attempt = 0; attempt < 100; attempt++) {
    unsigned c = __atomic_add_fetch(&counter, 1, __ATOMIC_RELAXED);
    snprintf(*tmp, cap, "%s.tmp.%ld.%u", path, (long)getpid(), c);
    int fd = open(*tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd >= 0 || errno != EEXIST) return fd;
  }
  return -1;
}

/* Writes bytes from `pack` (a message, or raw bytes when m is NULL) to path atomically. */
static mil_status write_atomic(const char *path, const ProtobufCMessage *m, const void *raw, size_t raw_len,
                               mil_diag *d) {
  char *tmp = NULL;
  int fd = open_tmp(path, &tmp);
  if (fd < 0) {
    int e = errno;
    free(tmp);
    return werr(d, MIL_ERR_IO, "%s: cannot create a temporary file next to it: %s", path, strerror(e));
  }
  fd_buffer fb = {{fd_append}, fd, false, 0};
  if (m) protobuf_c_message_pack_to_buffer(m, &fb.base);
  else fd_append(&fb.base, raw_len, raw);
  mil_status st = MIL_OK;
  if (fb.failed) st = werr(d, MIL_ERR_IO, "%s: write failed: %s", tmp, strerror(fb.err));
  if (close(fd) != 0 && st == MIL_OK) st = werr(d, MIL_ERR_IO, "%s: close failed: %s", tmp, strerror(errno));
  if (st == MIL_OK && rename(tmp, path) != 0)
    st = werr(d, MIL_ERR_IO, "%s: cannot rename the temporary file into place: %s", path, strerror(errno));
  if (st != MIL_OK) unlink(tmp);
  free(tmp);
  return st;
}

mil_status mil_onnx_tensor_write(const char *path, mil_dtype dt, int32_t rank, const int64_t *shape,
                                 const void *data, const mil_onnx_write_opts *opts, mil_diag *d) {
  if (!path) return werr(d, MIL_ERR_INVALID, "mil_onnx_tensor_write: NULL path");
  mil_onnx_write_opts o2 = opts ? *opts : (mil_onnx_write_opts){0};
  bool external = o2.encoding == MIL_ONNX_ENC_EXTERNAL;
  const char *loc = o2.external_location;
  if (external) {
    if (!loc || !loc[0] || loc[0] == '/' || strstr(loc, "..") || strchr(loc, '/'))
      return werr(d, MIL_ERR_INVALID, "%s: external data needs a plain file name beside it (got \"%s\")", path,
                  loc ? loc : "");
    o2.encoding = MIL_ONNX_ENC_RAW;
  }
  ot_out o;
  memset(&o, 0, sizeof o);
  mil_status st = build(&o, dt, rank, shape, data, &o2, d);
  if (st == MIL_OK && external && dt == MIL_DT_STRING)
    st = werr(d, MIL_ERR_UNSUPPORTED, "%s: STRING tensors cannot be stored as external data", path);
  char *ext_path = NULL;
  char len_s[24];
  Onnx__StringStringEntryProto kv[2], *kvp[2] = {&kv[0], &kv[1]};
  Org__Nd4j__Ir__StringStringEntryProto kn[2], *knp[2] = {&kn[0], &kn[1]};
  ot_msg m;
  if (st == MIL_OK) make_msg(&o, rank, shape, &o2, &m);
  if (st == MIL_OK && external) {
    char *dir = strdup(path);
    size_t cap = strlen(path) + strlen(loc) + 2;
    ext_path = dir ? malloc(cap) : NULL;
    if (!ext_path) st = werr(d, MIL_ERR_NOMEM, "%s: out of memory", path);
    else snprintf(ext_path, cap, "%s/%s", dirname(dir), loc);
    free(dir);
    if (st == MIL_OK) st = write_atomic(ext_path, NULL, o.raw.data, o.raw.len, d);
    snprintf(len_s, sizeof len_s, "%zu", o.raw.len);
    for (int i = 0; i < 2; i++) {
      onnx__string_string_entry_proto__init(&kv[i]);
      org__nd4j__ir__string_string_entry_proto__init(&kn[i]);
      kv[i].key = kn[i].key = (char *)(i == 0 ? "location" : "length");
      kv[i].value = kn[i].value = (char *)(i == 0 ? loc : len_s);
    }
    if (o2.dialect == MIL_ONNX_DIALECT_ND4J) {
      m.nd4j.raw_data = (ProtobufCBinaryData){0, NULL};
      m.nd4j.n_external_data = 2, m.nd4j.external_data = knp;
      m.nd4j.data_location = ORG__ND4J__IR__TENSOR_PROTO__DATA_LOCATION__EXTERNAL;
    } else {
      m.onnx.has_raw_data = false;
      m.onnx.n_external_data = 2, m.onnx.external_data = kvp;
      m.onnx.has_data_location = true, m.onnx.data_location = ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL;
    }
  }
  if (st == MIL_OK) st = write_atomic(path, &m.base, NULL, 0, d);
  free(ext_path);
  out_free(&o);
  return st;
}
