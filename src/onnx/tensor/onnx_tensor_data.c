/* TensorProto (either dialect) -> dtype, shape and elements in libmil's
 * layout (value.h). Mirrors onnx/numpy_helper.py to_array (which field holds
 * which DataType, 4-bit pairs, bit patterns in int32_data) and onnx's
 * checker (one data field only, element counts matching dims), and applies
 * coremltools' const narrowing (int64/uint64 -> int32 clipped, fp64 -> fp32;
 * coremltools/converters/mil/mil/ops/defs/iOS15/control_flow.py) with a
 * range check first. */
#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnx/tensor/onnx_tensor_internal.h"

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the ONNX tensor reader assumes a little-endian host (raw_data is little-endian)"
#endif

_Static_assert(offsetof(Onnx__StringStringEntryProto, key) == offsetof(Org__Nd4j__Ir__StringStringEntryProto, key) &&
                   offsetof(Onnx__StringStringEntryProto, value) ==
                       offsetof(Org__Nd4j__Ir__StringStringEntryProto, value),
               "both schemas' StringStringEntryProto have the same layout");

/* The fields both schemas' TensorProto share, copied from message t. */
#define OT_SRC_COMMON(s, t)                                                                 \
  do {                                                                                      \
    (s)->n_dims = (t)->n_dims, (s)->dims = (t)->dims;                                       \
    if ((t)->segment) {                                                                     \
      (s)->has_segment = true;                                                              \
      (s)->seg_begin = (t)->segment->begin, (s)->seg_end = (t)->segment->end;               \
    }                                                                                       \
    (s)->n_float_data = (t)->n_float_data, (s)->float_data = (t)->float_data;               \
    (s)->n_int32_data = (t)->n_int32_data, (s)->int32_data = (t)->int32_data;               \
    (s)->n_string_data = (t)->n_string_data, (s)->string_data = (t)->string_data;           \
    (s)->n_int64_data = (t)->n_int64_data, (s)->int64_data = (t)->int64_data;               \
    (s)->n_double_data = (t)->n_double_data, (s)->double_data = (t)->double_data;           \
    (s)->n_uint64_data = (t)->n_uint64_data, (s)->uint64_data = (t)->uint64_data;           \
    (s)->raw_data = (t)->raw_data;                                                          \
    (s)->n_external_data = (t)->n_external_data;                                            \
    (s)->external_data = (Onnx__StringStringEntryProto *const *)(t)->external_data;         \
  } while (0)

void ot_src_from_onnx(ot_src *s, const Onnx__TensorProto *t) {
  memset(s, 0, sizeof *s);
  OT_SRC_COMMON(s, t);
  s->dialect = MIL_ONNX_DIALECT_ONNX;
  s->name = t->name;
  s->has_data_type = t->has_data_type;
  s->data_type = t->data_type;
  s->has_raw_data = t->has_raw_data;
  s->data_location = t->has_data_location ? (int32_t)t->data_location : 0;
}

void ot_src_from_nd4j(ot_src *s, const Org__Nd4j__Ir__TensorProto *t) {
  memset(s, 0, sizeof *s);
  OT_SRC_COMMON(s, t);
  s->dialect = MIL_ONNX_DIALECT_ND4J;
  s->name = t->name && t->name[0] ? t->name : NULL;
  s->has_data_type = true;
  s->data_type = t->data_type;
  s->has_raw_data = t->raw_data.len > 0; /* proto3: empty bytes are absent */
  s->data_location = (int32_t)t->data_location;
  s->n_half_val = t->n_half_val, s->half_val = t->half_val;
  s->n_bool_val = t->n_bool_val, s->bool_val = t->bool_val;
}

mil_status ot_err(const ot_ctx *c, const ot_src *s, mil_status st, const char *fmt, ...) {
  char msg[768];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  const char *w = c->where ? c->where : "<tensor>";
  if (s->name && s->name[0]) return mil_diag_error(c->d, st, "%s: tensor '%s': %s", w, s->name, msg);
  return mil_diag_error(c->d, st, "%s: TensorProto: %s", w, msg);
}
/* The data fields, in the order messages list them. */
enum { F_RAW, F_FLOAT, F_INT32, F_STRING, F_INT64, F_DOUBLE, F_UINT64, F_HALF, F_BOOL, F_EXTERNAL, F_N };
static const char *const k_field[F_N] = {"raw_data",   "float_data", "int32_data", "string_data", "int64_data",
                                         "double_data", "uint64_data", "half_val",  "bool_val",    "external data"};

/* Whether field f may hold data_type t (onnx.proto's comments, numpy_helper). */
static bool field_allows(int f, int32_t t) {
  switch (f) {
  case F_RAW: case F_EXTERNAL: return t != MIL_ONNX_STRING;
  case F_FLOAT: return t == MIL_ONNX_FLOAT || t == MIL_ONNX_COMPLEX64;
  case F_INT32:
    return t == MIL_ONNX_INT32 || t == MIL_ONNX_INT16 || t == MIL_ONNX_INT8 || t == MIL_ONNX_UINT16 ||
           t == MIL_ONNX_UINT8 || t == MIL_ONNX_BOOL || t == MIL_ONNX_FLOAT16 || t == MIL_ONNX_BFLOAT16 ||
           (t >= MIL_ONNX_FLOAT8E4M3FN && t <= MIL_ONNX_INT4);
  case F_STRING: return t == MIL_ONNX_STRING;
  case F_INT64: return t == MIL_ONNX_INT64;
  case F_DOUBLE: return t == MIL_ONNX_DOUBLE || t == MIL_ONNX_COMPLEX128;
  case F_UINT64: return t == MIL_ONNX_UINT32 || t == MIL_ONNX_UINT64;
  case F_HALF: return t == MIL_ONNX_FLOAT16;
  case F_BOOL: return t == MIL_ONNX_BOOL;
  default: return false;
  }
}

static size_t field_count(const ot_src *s, int f) {
  switch (f) {
  case F_RAW: return s->has_raw_data ? 1 : 0;
  case F_FLOAT: return s->n_float_data;
  case F_INT32: return s->n_int32_data;
  case F_STRING: return s->n_string_data;
  case F_INT64: return s->n_int64_data;
  case F_DOUBLE: return s->n_double_data;
  case F_UINT64: return s->n_uint64_data;
  case F_HALF: return s->n_half_val;
  case F_BOOL: return s->n_bool_val;
  default: return s->data_location == 1 ? 1 : 0;
  }
}

/* ---- element conversion ---- */

typedef struct conv {
  const ot_ctx *c;
  const ot_src *s;
  int32_t t;     /* ONNX data type */
  mil_dtype dt;  /* target */
  int64_t numel;
  int64_t n_clipped, n_rounded;
} conv;

static mil_status range_err(conv *v, int f, int64_t i, const char *val, const char *want) {
  return ot_err(v->c, v->s, MIL_ERR_FORMAT, "%s[%" PRId64 "] = %s is outside %s (%s)", k_field[f], i, val, want,
             mil_onnx_dtype_name(v->t));
}

/* int64 -> int32 (narrowing): refused or clipped outside int32. */
static mil_status put_i32_from_i64(conv *v, int f, int64_t i, int64_t x, int32_t *dst) {
  if (x > INT32_MAX || x < INT32_MIN) {
    if (!(v->c->flags & MIL_ONNX_CLAMP))
      return ot_err(v->c, v->s, MIL_ERR_UNSUPPORTED,
                 "element %" PRId64 " of %s (%s) is %" PRId64 ", outside int32, the dtype MIL narrows %s to "
                 "(coremltools would clip it; read with MIL_ONNX_CLAMP / --clamp to do the same, or "
                 "MIL_ONNX_EXACT / --exact to keep %s)",
                 i, k_field[f], mil_onnx_dtype_name(v->t), x, mil_onnx_dtype_name(v->t), mil_onnx_dtype_name(v->t));
    x = x > INT32_MAX ? INT32_MAX : INT32_MIN;
    v->n_clipped++;
  }
  dst[i] = (int32_t)x;
  return MIL_OK;
}

static mil_status put_i32_from_u64(conv *v, int f, int64_t i, uint64_t x, int32_t *dst) {
  if (x > INT32_MAX) {
    if (!(v->c->flags & MIL_ONNX_CLAMP))
      return ot_err(v->c, v->s, MIL_ERR_UNSUPPORTED,
                 "element %" PRId64 " of %s (%s) is %" PRIu64 ", above int32's maximum, the dtype MIL narrows %s to "
                 "(read with MIL_ONNX_CLAMP / --clamp to clip it as coremltools does, or MIL_ONNX_EXACT / --exact)",
                 i, k_field[f], mil_onnx_dtype_name(v->t), x, mil_onnx_dtype_name(v->t));
    x = INT32_MAX;
    v->n_clipped++;
  }
  dst[i] = (int32_t)x;
  return MIL_OK;
}

/* double -> float (narrowing): a finite value beyond float's range is
 * refused (clipping gives +-inf as numpy's astype does). */
static mil_status put_f32_from_f64(conv *v, int f, int64_t i, double x, float *dst) {
  float y = (float)x;
  if (isinf(y) && !isinf(x)) {
    if (!(v->c->flags & MIL_ONNX_CLAMP))
      return ot_err(v->c, v->s, MIL_ERR_UNSUPPORTED,
                 "element %" PRId64 " of %s (%s) is %.17g, beyond fp32's range (MIL narrows %s to fp32; read with "
                 "MIL_ONNX_CLAMP / --clamp to let it become infinite as coremltools' astype does, or MIL_ONNX_EXACT "
                 "/ --exact)",
                 i, k_field[f], mil_onnx_dtype_name(v->t), x, mil_onnx_dtype_name(v->t));
    v->n_clipped++;
  } else if ((double)y != x && !isnan(x)) {
    v->n_rounded++;
  }
  dst[i] = y;
  return MIL_OK;
}

/* Reads element i of width w bytes from little-endian bytes p. */
static inline uint64_t le_u(const uint8_t *p, int64_t i, int w) {
  uint64_t x = 0;
  memcpy(&x, p + (size_t)i * (size_t)w, (size_t)w);
  return x;
}

/* Raw little-endian bytes (raw_data or external) -> dst, converting where
 * the target dtype differs from the stored one. */
static mil_status from_raw(conv *v, int f, const uint8_t *p, void *dst) {
  int64_t n = v->numel;
  switch (v->t) {
  case MIL_ONNX_INT64:
    if (v->dt == MIL_DT_INT32) {
      for (int64_t i = 0; i < n; i++)
        if (put_i32_from_i64(v, f, i, (int64_t)le_u(p, i, 8), dst) != MIL_OK) return MIL_ERR_UNSUPPORTED;
      return MIL_OK;
    }
    break;
  case MIL_ONNX_UINT64: case MIL_ONNX_UINT32:
    if (v->dt == MIL_DT_INT32) {
      int w = v->t == MIL_ONNX_UINT64 ? 8 : 4;
      for (int64_t i = 0; i < n; i++)
        if (put_i32_from_u64(v, f, i, le_u(p, i, w), dst) != MIL_OK) return MIL_ERR_UNSUPPORTED;
      return MIL_OK;
    }
    break;
  case MIL_ONNX_DOUBLE: case MIL_ONNX_COMPLEX128:
    if (v->dt == MIL_DT_FP32 || v->dt == MIL_DT_COMPLEX64) {
      int64_t m = v->t == MIL_ONNX_COMPLEX128 ? 2 * n : n;
      for (int64_t i = 0; i < m; i++) {
        uint64_t bits = le_u(p, i, 8);
        double x;
        memcpy(&x, &bits, 8);
        if (put_f32_from_f64(v, f, i, x, dst) != MIL_OK) return MIL_ERR_UNSUPPORTED;
      }
      return MIL_OK;
    }
    break;
  case MIL_ONNX_FLOAT8E4M3FNUZ: case MIL_ONNX_FLOAT8E5M2FNUZ: {
    bool e5 = v->t == MIL_ONNX_FLOAT8E5M2FNUZ;
    for (int64_t i = 0; i < n; i++) ((uint16_t *)dst)[i] = mil_fp32_to_fp16(ot_fnuz_to_f32(p[i], e5));
    return MIL_OK;
  }
  case MIL_ONNX_BOOL:
    for (int64_t i = 0; i < n; i++) ((uint8_t *)dst)[i] = p[i] != 0;
    return MIL_OK;
  default: break;
  }
  memcpy(dst, p, mil_dtype_storage_bytes(v->dt, n));
  return MIL_OK;
}

/* int32_data -> dst: bit patterns and small integers, each range-checked. */
static mil_status from_int32(conv *v, const int32_t *a, size_t n_a, void *dst) {
  int32_t lo = 0, hi = 0;
  switch (v->t) {
  case MIL_ONNX_INT32: memcpy(dst, a, n_a * 4); return MIL_OK;
  case MIL_ONNX_INT16: lo = INT16_MIN, hi = INT16_MAX; break;
  case MIL_ONNX_INT8: lo = INT8_MIN, hi = INT8_MAX; break;
  case MIL_ONNX_UINT16: case MIL_ONNX_FLOAT16: case MIL_ONNX_BFLOAT16: lo = 0, hi = UINT16_MAX; break;
  case MIL_ONNX_BOOL: lo = 0, hi = 1; break;
  default: lo = 0, hi = UINT8_MAX; break; /* UINT8, FLOAT8*, packed 4-bit pairs */
  }
  for (size_t i = 0; i < n_a; i++) {
    if (a[i] < lo || a[i] > hi) {
      char val[24], want[48];
      snprintf(val, sizeof val, "%" PRId32, a[i]);
      snprintf(want, sizeof want, "[%" PRId32 ", %" PRId32 "]", lo, hi);
      return range_err(v, F_INT32, (int64_t)i, val, want);
    }
  }
  bool e5 = v->t == MIL_ONNX_FLOAT8E5M2FNUZ;
  for (size_t i = 0; i < n_a; i++) {
    switch (v->t) {
    case MIL_ONNX_INT16: case MIL_ONNX_UINT16: case MIL_ONNX_FLOAT16: case MIL_ONNX_BFLOAT16:
      ((uint16_t *)dst)[i] = (uint16_t)a[i];
      break;
    case MIL_ONNX_FLOAT8E4M3FNUZ: case MIL_ONNX_FLOAT8E5M2FNUZ:
      ((uint16_t *)dst)[i] = mil_fp32_to_fp16(ot_fnuz_to_f32((uint8_t)a[i], e5));
      break;
    default: ((uint8_t *)dst)[i] = (uint8_t)a[i]; break;
    }
  }
  return MIL_OK;
}

/* string_data -> one block: numel pointers, then the NUL-terminated texts. */
static mil_status from_strings(conv *v, void **block) {
  size_t total = (size_t)v->numel * sizeof(char *);
  for (int64_t i = 0; i < v->numel; i++) {
    const ProtobufCBinaryData *b = &v->s->string_data[i];
    if (b->len && memchr(b->data, 0, b->len))
      return ot_err(v->c, v->s, MIL_ERR_UNSUPPORTED,
                 "string_data[%" PRId64 "] contains a NUL byte; MIL strings are NUL-terminated", i);
    total += b->len + 1;
  }
  char **ptrs = malloc(total ? total : 1);
  if (!ptrs) return ot_err(v->c, v->s, MIL_ERR_NOMEM, "out of memory for %zu bytes of strings", total);
  char *text = (char *)(ptrs + v->numel);
  for (int64_t i = 0; i < v->numel; i++) {
    const ProtobufCBinaryData *b = &v->s->string_data[i];
    ptrs[i] = text;
    if (b->len) memcpy(text, b->data, b->len);
    text[b->len] = 0;
    text += b->len + 1;
  }
  *block = ptrs;
  return MIL_OK;
}

/* Elements of field f -> dst (t->nbytes bytes). */
static mil_status convert(conv *v, int f, const void *raw, void *dst) {
  const ot_src *s = v->s;
  switch (f) {
  case F_RAW: case F_EXTERNAL: return from_raw(v, f, raw, dst);
  case F_FLOAT: memcpy(dst, s->float_data, s->n_float_data * sizeof(float)); return MIL_OK;
  case F_INT32: return from_int32(v, s->int32_data, s->n_int32_data, dst);
  case F_HALF: return from_int32(v, s->half_val, s->n_half_val, dst);
  case F_BOOL:
    for (size_t i = 0; i < s->n_bool_val; i++) ((uint8_t *)dst)[i] = s->bool_val[i] != 0;
    return MIL_OK;
  case F_INT64:
    if (v->dt == MIL_DT_INT64) {
      memcpy(dst, s->int64_data, s->n_int64_data * 8);
      return MIL_OK;
    }
    for (size_t i = 0; i < s->n_int64_data; i++)
      if (put_i32_from_i64(v, f, (int64_t)i, s->int64_data[i], dst) != MIL_OK) return MIL_ERR_UNSUPPORTED;
    return MIL_OK;
  case F_DOUBLE:
    if (v->dt == MIL_DT_FP64 || v->dt == MIL_DT_COMPLEX128) {
      memcpy(dst, s->double_data, s->n_double_data * 8);
      return MIL_OK;
    }
    for (size_t i = 0; i < s->n_double_data; i++)
      if (put_f32_from_f64(v, f, (int64_t)i, s->double_data[i], dst) != MIL_OK) return MIL_ERR_UNSUPPORTED;
    return MIL_OK;
  case F_UINT64:
    for (size_t i = 0; i < s->n_uint64_data; i++) {
      uint64_t x = s->uint64_data[i];
      if (v->t == MIL_ONNX_UINT32 && x > UINT32_MAX) {
        char val[24];
        snprintf(val, sizeof val, "%" PRIu64, x);
        return range_err(v, f, (int64_t)i, val, "[0, 4294967295]");
      }
      if (v->dt == MIL_DT_INT32) {
        if (put_i32_from_u64(v, f, (int64_t)i, x, dst) != MIL_OK) return MIL_ERR_UNSUPPORTED;
      } else if (v->dt == MIL_DT_UINT32) {
        ((uint32_t *)dst)[i] = (uint32_t)x;
      } else {
        ((uint64_t *)dst)[i] = x;
      }
    }
    return MIL_OK;
  default: return MIL_ERR_INVALID;
  }
}

/* Whether raw bytes of data type t are libmil's layout of dt as they are. */
static bool raw_is_layout(int32_t t, mil_dtype dt) {
  if (t == MIL_ONNX_BOOL || t == MIL_ONNX_FLOAT8E4M3FNUZ || t == MIL_ONNX_FLOAT8E5M2FNUZ) return false;
  return mil_onnx_dtype_to_mil(t, MIL_ONNX_EXACT) == dt;
}

static bool all_bool_bytes(const uint8_t *p, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (p[i] > 1) return false;
  return true;
}

mil_onnx_tensor *ot_tensor_new(void) {
  mil_onnx_tensor *t = calloc(1, sizeof *t);
  if (!t) return NULL;
  t->priv = calloc(1, sizeof *t->priv);
  if (!t->priv) {
    free(t);
    return NULL;
  }
  return t;
}

/* Checks data_type, segment and dims; fills t's type and shape. */
static mil_status decode_header(const ot_src *s, const ot_ctx *c, mil_onnx_tensor *t) {
  int32_t dt = s->data_type;
  if (!s->has_data_type || dt == MIL_ONNX_UNDEFINED)
    return ot_err(c, s, MIL_ERR_FORMAT, "field data_type (2) is %s; expected a DataType such as 1 (FLOAT)",
               s->has_data_type ? "0 (UNDEFINED)" : "missing");
  if (!mil_onnx_dtype_name(dt))
    return ot_err(c, s, MIL_ERR_FORMAT, "field data_type (2) is %" PRId32 ", not a DataType (expected 1..%d)", dt,
               MIL_ONNX_DTYPE_MAX);
  if (s->dialect == MIL_ONNX_DIALECT_ND4J && !ot_in_nd4j(dt))
    return ot_err(c, s, MIL_ERR_FORMAT, "field data_type (2) is %" PRId32 " (%s), which the nd4j dialect does not have "
               "(its DataType ends at 16, BFLOAT16)", dt, mil_onnx_dtype_name(dt));
  if (s->has_segment)
    return ot_err(c, s, MIL_ERR_UNSUPPORTED, "field segment (3) is set (elements %" PRId64 "..%" PRId64 " of a tensor "
               "stored in chunks); libmil reads whole tensors only: join the chunks into one TensorProto",
               s->seg_begin, s->seg_end);
  if (s->n_dims > INT32_MAX) return ot_err(c, s, MIL_ERR_FORMAT, "%zu dims is more than a MIL rank holds", s->n_dims);
  t->onnx_type = dt;
  t->dtype = mil_onnx_dtype_to_mil(dt, c->flags);
  t->rank = (int32_t)s->n_dims;
  int64_t n = 1;
  bool zero = false;
  for (size_t i = 0; i < s->n_dims; i++) {
    int64_t k = s->dims[i];
    if (k < 0) return ot_err(c, s, MIL_ERR_FORMAT, "dims[%zu] is %" PRId64 "; expected a size >= 0", i, k);
    if (k == 0) zero = true;
    else if (n > INT64_MAX / 16 / k)
      return ot_err(c, s, MIL_ERR_FORMAT, "dims[%zu] = %" PRId64 " makes the element count overflow 64 bits", i, k);
    else n *= k;
  }
  t->numel = zero ? 0 : n;
  uint64_t bytes = t->dtype == MIL_DT_STRING ? (uint64_t)t->numel * sizeof(char *)
                                              : mil_dtype_storage_bytes(t->dtype, t->numel);
  if (bytes > SIZE_MAX / 2) return ot_err(c, s, MIL_ERR_FORMAT, "%" PRId64 " elements do not fit in memory", t->numel);
  t->nbytes = (size_t)bytes;
  if (t->rank) {
    t->shape = malloc(s->n_dims * sizeof *t->shape);
    if (!t->shape) return ot_err(c, s, MIL_ERR_NOMEM, "out of memory");
    memcpy(t->shape, s->dims, s->n_dims * sizeof *t->shape);
  }
  const char *name = s->name ? s->name : "";
  t->name = strdup(name);
  if (!t->name) return ot_err(c, s, MIL_ERR_NOMEM, "out of memory");
  t->dialect = s->dialect;
  t->n_metadata = s->n_metadata;
  return MIL_OK;
}

/* Picks the one field that holds the elements and checks its count. */
static mil_status pick_field(const ot_src *s, const ot_ctx *c, const mil_onnx_tensor *t, int *field) {
  int f = -1;
  if (s->data_location != 0 && s->data_location != 1)
    return ot_err(c, s, MIL_ERR_FORMAT, "field data_location (14) is %" PRId32 "; expected 0 (DEFAULT) or 1 (EXTERNAL)",
               s->data_location);
  for (int k = 0; k < F_N; k++) {
    if (!field_count(s, k)) continue;
    if (f >= 0)
      return ot_err(c, s, MIL_ERR_FORMAT, "both %s and %s hold elements; expected exactly one data field", k_field[f],
                 k_field[k]);
    f = k;
  }
  if (f < 0) {
    if (t->numel == 0) {
      *field = -1;
      return MIL_OK;
    }
    return ot_err(c, s, MIL_ERR_FORMAT, "no data field is set, but dims say %" PRId64 " elements of %s", t->numel,
               mil_onnx_dtype_name(t->onnx_type));
  }
  if (!field_allows(f, t->onnx_type))
    return ot_err(c, s, MIL_ERR_FORMAT, "%s holds the elements, but data_type is %s, which that field cannot hold",
               k_field[f], mil_onnx_dtype_name(t->onnx_type));
  if (f == F_RAW || f == F_EXTERNAL) {
    *field = f;
    return MIL_OK;
  }
  uint64_t want = (uint64_t)t->numel;
  if (t->onnx_type == MIL_ONNX_COMPLEX64 || t->onnx_type == MIL_ONNX_COMPLEX128) want *= 2;
  if (t->onnx_type == MIL_ONNX_INT4 || t->onnx_type == MIL_ONNX_UINT4) want = (want + 1) / 2;
  if (field_count(s, f) != want)
    return ot_err(c, s, MIL_ERR_FORMAT, "%s holds %zu values, but dims say %" PRId64 " elements of %s (%" PRIu64
               " values)", k_field[f], field_count(s, f), t->numel, mil_onnx_dtype_name(t->onnx_type), want);
  *field = f;
  return MIL_OK;
}

mil_status ot_decode(const ot_src *s, const ot_ctx *c, mil_onnx_tensor *t) {
  mil_status st = decode_header(s, c, t);
  int f = -1;
  if (st == MIL_OK) st = pick_field(s, c, t, &f);
  if (st != MIL_OK) return st;
  t->encoding = f < 0 ? MIL_ONNX_ENC_EMPTY
                : f == F_RAW ? MIL_ONNX_ENC_RAW
                : f == F_EXTERNAL ? MIL_ONNX_ENC_EXTERNAL
                : f == F_HALF || f == F_BOOL ? MIL_ONNX_ENC_ND4J
                                             : MIL_ONNX_ENC_TYPED;
  if (f < 0 || t->numel == 0) return MIL_OK;
  conv v = {c, s, t->onnx_type, t->dtype, t->numel, 0, 0};
  if (f == F_STRING) {
    st = from_strings(&v, &t->priv->owned);
    t->data = t->priv->owned;
    return st;
  }
  const uint8_t *raw = NULL;
  if (f == F_RAW || f == F_EXTERNAL) {
    uint64_t need = ((uint64_t)t->numel * (uint64_t)ot_onnx_bits(t->onnx_type) + 7) / 8;
    if (f == F_RAW && s->raw_data.len != need)
      return ot_err(c, s, MIL_ERR_FORMAT, "raw_data holds %zu bytes, but dims say %" PRId64 " elements of %s (%" PRIu64
                 " bytes)", s->raw_data.len, t->numel, mil_onnx_dtype_name(t->onnx_type), need);
    if (f == F_RAW) {
      raw = s->raw_data.data;
    } else {
      const void *b = NULL;
      if ((st = ot_ext_map(s, c, (size_t)need, &t->priv->map, &b)) != MIL_OK) return st;
      raw = b;
    }
    /* the stored bytes are the elements: view them (aligned) */
    int align = mil_dtype_bits(t->dtype) >= 64 ? 8 : mil_dtype_bits(t->dtype) >= 16 ? mil_dtype_bits(t->dtype) / 8 : 1;
    if (raw_is_layout(t->onnx_type, t->dtype) && ((uintptr_t)raw % (uintptr_t)align) == 0) {
      t->data = raw;
      return MIL_OK;
    }
    if (t->onnx_type == MIL_ONNX_BOOL && all_bool_bytes(raw, t->nbytes)) {
      t->data = raw;
      return MIL_OK;
    }
  }
  void *dst = malloc(t->nbytes);
  if (!dst) return ot_err(c, s, MIL_ERR_NOMEM, "out of memory for %zu bytes", t->nbytes);
  t->priv->owned = dst;
  t->data = dst;
  st = convert(&v, f, raw, dst);
  if (st != MIL_OK) return st;
  if (t->dtype != mil_onnx_dtype_to_mil(t->onnx_type, MIL_ONNX_EXACT) && t->onnx_type != MIL_ONNX_FLOAT8E4M3FNUZ &&
      t->onnx_type != MIL_ONNX_FLOAT8E5M2FNUZ) {
    t->n_narrowed = t->numel;
    char extra[160] = "";
    if (v.n_clipped || v.n_rounded)
      snprintf(extra, sizeof extra, " (%" PRId64 " clipped to the range, %" PRId64 " rounded)", v.n_clipped,
               v.n_rounded);
    mil_diag_add(c->d, MIL_SEV_NOTE, "%s: tensor '%s': converted %" PRId64 " %s elements to %s as coremltools does%s",
                 c->where ? c->where : "<tensor>", t->name, t->numel, mil_onnx_dtype_name(t->onnx_type),
                 mil_dtype_name(t->dtype), extra);
  }
  return MIL_OK;
}
