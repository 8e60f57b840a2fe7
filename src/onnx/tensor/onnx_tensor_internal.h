/* Internal interface of libmil's ONNX tensor layer (src/onnx/onnx_tensor*.c),
 * for the rest of the library (the ONNX model importer): conversions that
 * work on protobuf-c's decoded messages. Not part of the public API; the
 * public one is include/mil/onnx_tensor.h.
 *
 *   onnx_tensor_dtype.c  DataType table, DataType <-> MIL dtype, FNUZ floats
 *   onnx_tensor_data.c   TensorProto (either dialect) -> elements (ot_decode)
 *   onnx_tensor_ext.c    external data: path checks, mapping, checksum
 *   onnx_tensor_read.c   bytes -> message, the dialect rule, public readers
 *   onnx_tensor_write.c  elements -> TensorProto bytes (either dialect)
 *   onnx_tensor_type.c   TypeProto / ValueInfoProto <-> mil_type
 */
#ifndef MIL_ONNX_TENSOR_INTERNAL_H
#define MIL_ONNX_TENSOR_INTERNAL_H

#include <protobuf-c/protobuf-c.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "TensorNamespace.pb-c.h"
#include "mil/ir.h"
#include "mil/onnx_tensor.h"
#include "onnx.pb-c.h"

#if defined(__GNUC__)
#define OT_HIDDEN __attribute__((visibility("hidden")))
#else
#define OT_HIDDEN
#endif

/* ---- conversions on decoded messages (what the model importer uses) ---- */

/* TensorProto -> value of p (dtype per mil_onnx_dtype_to_mil(data_type,
 * flags), shape = dims, elements from raw_data, the typed fields or external
 * data). flags: MIL_ONNX_EXACT keeps the exact ONNX dtype where libmil has
 * one, otherwise INT64/UINT64/UINT32 become int32 and DOUBLE fp32 with a
 * range check (MIL_ONNX_CLAMP: clipped like coremltools' const) and a note
 * in d saying what was converted. `model_dir` is the directory external
 * data is relative to (NULL: external data is refused). `where` starts
 * every message (e.g. "model.onnx: initializer 'w'"; NULL: "<tensor>").
 * External data is mapped and handed to p (the value views it); anything
 * else is copied into p. Errors as mil_onnx_tensor_read. */
OT_HIDDEN mil_status onnx_tensor_to_mil_value(mil_program *p, const Onnx__TensorProto *t, const char *model_dir,
                                              unsigned flags, const char *where, mil_value **out, mil_diag *d);
/* The same as a standalone tensor (mil_onnx_tensor_free; its data may
 * borrow t's raw_data bytes, so t must outlive it). */
OT_HIDDEN mil_status onnx_tensor_decode(const Onnx__TensorProto *t, const char *model_dir, unsigned flags,
                                        const char *where, mil_onnx_tensor **out, mil_diag *d);

/* TypeProto -> MIL type of p (tensor: dtype + dims with dim_param as a
 * symbolic dim; sequence of tensor: list). Errors name `where`. */
OT_HIDDEN mil_status onnx_type_to_mil(mil_program *p, const Onnx__TypeProto *t, unsigned flags, const char *where,
                                      const mil_type **out, mil_diag *d);
/* ValueInfoProto -> (*name interned in p, *type). */
OT_HIDDEN mil_status onnx_value_info_to_mil(mil_program *p, const Onnx__ValueInfoProto *vi, unsigned flags,
                                            const char *where, const char **name, const mil_type **out, mil_diag *d);
/* MIL type -> TypeProto built with malloc (free with
 * protobuf_c_message_free_unpacked(m, NULL)). */
OT_HIDDEN mil_status onnx_type_from_mil(const mil_type *t, const char *where, Onnx__TypeProto **out, mil_diag *d);

/* ---- DataType table (onnx_tensor_dtype.c) ---- */

/* Bits per element of a DataType in raw_data (4 for INT4/UINT4, 8 for
 * BOOL, 128 for COMPLEX128; 0 for STRING and unknown numbers). */
OT_HIDDEN int ot_onnx_bits(int32_t onnx_type);
/* Whether a DataType number exists in the nd4j schema (0..16). */
static inline bool ot_in_nd4j(int32_t onnx_type) { return onnx_type >= 0 && onnx_type <= 16; }
/* FLOAT8E4M3FNUZ / FLOAT8E5M2FNUZ <-> float. to_fnuz rounds to nearest
 * even and returns false for a finite value beyond the format's largest
 * (NaN and infinities become the format's NaN 0x80). */
OT_HIDDEN float ot_fnuz_to_f32(uint8_t v, bool e5m2);
OT_HIDDEN bool ot_f32_to_fnuz(float f, bool e5m2, uint8_t *out);

/* ---- a TensorProto of either dialect, seen the same way ---- */

typedef struct ot_kv {
  const char *key, *value;
} ot_kv;

typedef struct ot_src {
  mil_onnx_dialect dialect;
  const char *name;
  bool has_data_type;
  int32_t data_type;
  size_t n_dims;
  const int64_t *dims;
  bool has_segment;
  int64_t seg_begin, seg_end;
  size_t n_float_data, n_int32_data, n_string_data, n_int64_data, n_double_data, n_uint64_data;
  const float *float_data;
  const int32_t *int32_data;
  const ProtobufCBinaryData *string_data;
  const int64_t *int64_data;
  const double *double_data;
  const uint64_t *uint64_data;
  bool has_raw_data;
  ProtobufCBinaryData raw_data;
  size_t n_external_data;
  /* entries with char *key, *value (both schemas generate that layout) */
  Onnx__StringStringEntryProto *const *external_data;
  int32_t data_location;
  size_t n_half_val, n_bool_val;
  const int32_t *half_val;
  const protobuf_c_boolean *bool_val;
  int32_t n_metadata;
} ot_src;

OT_HIDDEN void ot_src_from_onnx(ot_src *s, const Onnx__TensorProto *t);
OT_HIDDEN void ot_src_from_nd4j(ot_src *s, const Org__Nd4j__Ir__TensorProto *t);

/* Context of one decode: messages start with `where`. */
/* Internal flag of ot_ctx.flags: the message was unpacked with
 * onnx_sized_allocator, so a string field's wire length is known and a
 * location holding a NUL byte ("w.bin\0../x", which C reads as "w.bin")
 * can be refused. */
#define OT_SIZED_STRINGS (1u << 30)
/* protobuf-c allocator keeping each block's size (protobuf-c copies a
 * string field of n bytes into a block of n + 1). */
extern ProtobufCAllocator onnx_sized_allocator;
/* Bytes protobuf-c read for string s of a message unpacked with
 * onnx_sized_allocator (s non-empty). */
size_t onnx_sized_string_len(const char *s);

typedef struct ot_ctx {
  const char *where;
  const char *base_dir; /* NULL: external data refused */
  unsigned flags;
  mil_diag *d;
} ot_ctx;

/* Private part of a mil_onnx_tensor. */
typedef struct ot_map ot_map;
struct mil_onnx_priv {
  ProtobufCMessage *msg; /* the decoded message data may borrow from (freed with the tensor) */
  void *owned;           /* malloc'ed elements, or NULL */
  ot_map *map;           /* external data mapping, or NULL */
};

/* Records "<where>: tensor '<name>': <message>" in c->d and returns st. */
OT_HIDDEN mil_status ot_err(const ot_ctx *c, const ot_src *s, mil_status st, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* Fills t (zeroed, priv allocated) from s: shape, dtype, elements. */
OT_HIDDEN mil_status ot_decode(const ot_src *s, const ot_ctx *c, mil_onnx_tensor *t);
/* A new zeroed tensor with its private part; NULL on OOM. */
OT_HIDDEN mil_onnx_tensor *ot_tensor_new(void);

/* ---- external data (onnx_tensor_ext.c) ---- */

/* Maps the nbytes of external data s describes (keys location, offset,
 * length, checksum) relative to c->base_dir, with every check of the
 * public header. *bytes points at them inside *map (nbytes may be 0: then
 * *map is NULL). */
OT_HIDDEN mil_status ot_ext_map(const ot_src *s, const ot_ctx *c, size_t nbytes, ot_map **map, const void **bytes);
OT_HIDDEN void ot_map_ref(ot_map *m);
OT_HIDDEN void ot_map_unref(ot_map *m);
OT_HIDDEN const void *ot_map_base(const ot_map *m);
OT_HIDDEN size_t ot_map_len(const ot_map *m);

#endif
