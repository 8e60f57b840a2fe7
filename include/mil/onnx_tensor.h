/* libmil: ONNX tensors (TensorProto, TypeProto, ValueInfoProto) in and out.
 *
 * Mirrors onnx/onnx.proto (TensorProto, its DataType enum, TypeProto,
 * TensorShapeProto, ValueInfoProto and the external-data keys of
 * docs/ExternalData.md) and seed 002, nd4j's TensorNamespace
 * (proto/TensorNamespace.proto), whose TensorProto is ONNX's plus two
 * fields: half_val = 15 and bool_val = 16. Both schemas are compiled with
 * protoc-c at build time: ONNX's from Debian's libonnx-dev, nd4j's from the
 * project's proto/ directory.
 *
 * DataType -> MIL dtype (mil_onnx_dtype_to_mil):
 *   FLOAT fp32, UINT8 uint8, INT8 int8, UINT16 uint16, INT16 int16,
 *   INT32 int32, STRING string, BOOL bool, FLOAT16 fp16, COMPLEX64
 *   complex64, BFLOAT16 bf16, FLOAT8E4M3FN fp8e4m3fn, FLOAT8E5M2 fp8e5m2,
 *   UINT4 uint4, INT4 int4: the same values, bit for bit.
 *   FLOAT8E4M3FNUZ, FLOAT8E5M2FNUZ: fp16, which holds every one of their
 *   values exactly (MIL has no FNUZ dtype; written back they are exact).
 *   INT64, UINT64, UINT32 -> int32; DOUBLE -> fp32; COMPLEX128 -> complex64:
 *   the narrowing coremltools applies to every const
 *   (coremltools/converters/mil/mil/ops/defs/iOS15/control_flow.py,
 *   const._get_type_val: int64/uint64 clipped to int32, fp64 astype fp32),
 *   except that by default libmil checks the range first and refuses a
 *   value that does not fit (MIL_ONNX_CLAMP clips like coremltools). Every
 *   narrowing is reported as a note in the diagnostics ("converted ...").
 *   With MIL_ONNX_EXACT these keep their own MIL dtypes (int64, uint64,
 *   uint32, fp64, complex128), which libmil's values hold although Core ML
 *   models do not.
 *
 * Encodings read: raw_data (fixed-width little-endian; bool one byte per
 * element; INT4/UINT4 two elements per byte, first in the low nibble), the
 * typed fields (float_data, int32_data incl. FLOAT16/BFLOAT16/FLOAT8 bit
 * patterns, bool and packed 4-bit pairs, int64_data, double_data,
 * uint64_data, string_data), nd4j's half_val (FLOAT16) and bool_val (BOOL),
 * and external data (data_location EXTERNAL). The writer uses raw_data
 * unless asked otherwise. `segment` (a chunk of a larger tensor) is refused.
 *
 * The two dialects (MIL_ONNX_DIALECT_*). Field 16 of TensorProto is nd4j's
 * packed bool_val, but ONNX's metadata_props (repeated StringStringEntryProto)
 * from IR version 10 on; both are length-delimited on the wire. Field 15
 * (half_val) exists only in nd4j. The automatic choice reads the message
 * with ONNX's schema (fields 15 and 16 stay unknown fields) and decides:
 *   - field 15 present, or a field-16 occurrence that cannot be an ONNX
 *     message (varint wire type, or a non-empty payload of only 0x00/0x01
 *     bytes: a message never starts with such a tag): nd4j;
 *   - a field-16 payload that decodes as a StringStringEntryProto: ONNX,
 *     unless the tensor is a BOOL tensor without any other data, for which
 *     that payload could also be nd4j's bools: then it cannot decide;
 *   - data_type 17..22 (FLOAT8*, UINT4, INT4) exists only in ONNX;
 *   - no field 15 or 16 at all: ONNX (both dialects read such a message the
 *     same way);
 *   - signs of both dialects, or a field-16 payload that is neither: it
 *     cannot decide, and says so (MIL_ERR_FORMAT naming the field) instead
 *     of guessing; pass the dialect explicitly then.
 * An explicit dialect reads with that schema only; ONNX then refuses a
 * field 16 that is not a StringStringEntryProto (as ONNX 1.16's own parser
 * would), and nd4j reads field 16 as bools whatever they were meant to be.
 *
 * External data: the location is relative to a base directory (the
 * directory of the file read, or mil_onnx_read_opts.base_dir). Refused, as
 * onnx's checker does since CVE-2022-25882 and CVE-2024-27318
 * (onnx/checker.cc resolve_external_data_location): absolute paths, ".."
 * components, a location that is a symbolic link, one whose real path
 * leaves the base directory through a linked directory, anything but a
 * regular file, and a file with several hard links. The file is memory-mapped, never
 * copied whole; offset + length must lie inside it; a "checksum" (SHA1 of
 * the whole file, hex) is verified when present.
 *
 * Every error message names the file (or buffer name), the tensor, the
 * field or byte offset, what was expected and what was found.
 */
#ifndef MIL_ONNX_TENSOR_H
#define MIL_ONNX_TENSOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ir.h"
#include "status.h"
#include "types.h"
#include "value.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ONNX TensorProto.DataType numbers (onnx.proto; 17..22 from ONNX 1.15/1.16). */
typedef enum mil_onnx_dtype {
  MIL_ONNX_UNDEFINED = 0,
  MIL_ONNX_FLOAT = 1,
  MIL_ONNX_UINT8 = 2,
  MIL_ONNX_INT8 = 3,
  MIL_ONNX_UINT16 = 4,
  MIL_ONNX_INT16 = 5,
  MIL_ONNX_INT32 = 6,
  MIL_ONNX_INT64 = 7,
  MIL_ONNX_STRING = 8,
  MIL_ONNX_BOOL = 9,
  MIL_ONNX_FLOAT16 = 10,
  MIL_ONNX_DOUBLE = 11,
  MIL_ONNX_UINT32 = 12,
  MIL_ONNX_UINT64 = 13,
  MIL_ONNX_COMPLEX64 = 14,
  MIL_ONNX_COMPLEX128 = 15,
  MIL_ONNX_BFLOAT16 = 16,
  MIL_ONNX_FLOAT8E4M3FN = 17,
  MIL_ONNX_FLOAT8E4M3FNUZ = 18,
  MIL_ONNX_FLOAT8E5M2 = 19,
  MIL_ONNX_FLOAT8E5M2FNUZ = 20,
  MIL_ONNX_UINT4 = 21,
  MIL_ONNX_INT4 = 22,
} mil_onnx_dtype;
#define MIL_ONNX_DTYPE_MAX 22

/* Which schema a TensorProto is read or written with. */
typedef enum mil_onnx_dialect {
  MIL_ONNX_DIALECT_AUTO = 0, /* read: decide (rule above); write: ONNX */
  MIL_ONNX_DIALECT_ONNX = 1, /* onnx.proto: field 16 = metadata_props */
  MIL_ONNX_DIALECT_ND4J = 2, /* seed 002 (org.nd4j.ir): 15 = half_val, 16 = bool_val */
} mil_onnx_dialect;

/* Where a tensor's elements are (read: found; write: wanted). */
typedef enum mil_onnx_encoding {
  MIL_ONNX_ENC_RAW = 0,      /* raw_data */
  MIL_ONNX_ENC_TYPED = 1,    /* float_data, int32_data, int64_data, double_data, uint64_data, string_data */
  MIL_ONNX_ENC_ND4J = 2,     /* half_val (FLOAT16) / bool_val (BOOL), nd4j dialect only */
  MIL_ONNX_ENC_EXTERNAL = 3, /* data_location EXTERNAL */
  MIL_ONNX_ENC_EMPTY = 4,    /* read only: no data field (a tensor of 0 elements) */
} mil_onnx_encoding;

/* Read flags. */
#define MIL_ONNX_EXACT 1u /* keep INT64/UINT64/UINT32/DOUBLE/COMPLEX128 as int64/uint64/uint32/fp64/complex128 */
#define MIL_ONNX_CLAMP 2u /* narrowing clips out-of-range values like coremltools instead of refusing them */
#define MIL_ONNX_NO_CHECKSUM 4u /* do not verify external data's checksum */

/* Name of a DataType ("FLOAT", "FLOAT8E4M3FN", ...), "UNDEFINED" for 0 and
 * NULL for a number that is not a DataType. */
MIL_API const char *mil_onnx_dtype_name(int32_t onnx_type);
/* The MIL dtype that holds a DataType's values (table above): narrowed
 * unless flags has MIL_ONNX_EXACT. MIL_DT_UNUSED for UNDEFINED and unknown
 * numbers. */
MIL_API mil_dtype mil_onnx_dtype_to_mil(int32_t onnx_type, unsigned flags);
/* The DataType a MIL dtype is written as: the inverse of the exact mapping
 * (fp32 FLOAT, int64 INT64, fp64 DOUBLE, ...). 0 (UNDEFINED) for MIL dtypes
 * ONNX has no type for (uint1/2/3/6). */
MIL_API int32_t mil_onnx_dtype_from_mil(mil_dtype dt);
/* "onnx", "nd4j" or "auto"; and the encoding's name ("raw_data", "typed",
 * "half_val/bool_val", "external", "empty"). */
MIL_API const char *mil_onnx_dialect_name(mil_onnx_dialect d);
MIL_API const char *mil_onnx_encoding_name(mil_onnx_encoding e);

/* ------------------------------------------------------------------------ */
/* Reading                                                                    */
/* ------------------------------------------------------------------------ */

typedef struct mil_onnx_read_opts {
  mil_onnx_dialect dialect; /* AUTO (default) or a fixed schema */
  unsigned flags;           /* MIL_ONNX_EXACT | MIL_ONNX_CLAMP | MIL_ONNX_NO_CHECKSUM */
  /* Directory external data is relative to. NULL: the directory of the
   * file read (mil_onnx_tensor_read); for a buffer external data is then
   * refused. */
  const char *base_dir;
} mil_onnx_read_opts;

/* A tensor read from a TensorProto. Free with mil_onnx_tensor_free. */
typedef struct mil_onnx_tensor {
  char *name;                  /* TensorProto.name ("" when absent) */
  int32_t onnx_type;           /* data_type as stored */
  mil_dtype dtype;             /* dtype of `data` (mil_onnx_dtype_to_mil with the read flags) */
  int32_t rank;
  int64_t *shape;              /* rank entries, each >= 0 (NULL for rank 0) */
  int64_t numel;               /* product of shape, 1 for rank 0 */
  /* numel elements in libmil's layout (value.h); STRING: numel char
   * pointers to NUL-terminated strings. May view a mapping of external
   * data (read-only). NULL when numel is 0. */
  const void *data;
  size_t nbytes;               /* mil_dtype_storage_bytes(dtype, numel) (STRING: numel pointers) */
  mil_onnx_encoding encoding;  /* where the elements were */
  mil_onnx_dialect dialect;    /* the schema it was read with */
  int64_t n_narrowed;          /* elements converted by narrowing (0 with MIL_ONNX_EXACT) */
  int32_t n_metadata;          /* ONNX metadata_props entries (field 16) present, not interpreted */
  struct mil_onnx_priv *priv;  /* private */
} mil_onnx_tensor;

/* Reads one serialized TensorProto from the file at `path` (opts may be
 * NULL: automatic dialect, narrowing, checksum verified, external data
 * relative to the file's directory). On success *out is a new tensor.
 * Errors:
 *   MIL_ERR_IO          cannot open or read the file, or the external data file
 *   MIL_ERR_FORMAT      wire-format defect (byte offset, field, expected and
 *                       found), dims x data type != data length, negative or
 *                       overflowing dims, data_type 0 or unknown, several or
 *                       misplaced data fields, a value outside its type
 *                       (int32_data 300 for UINT8), undecidable dialect,
 *                       external data faults (missing location, bad offset
 *                       or length, file too short for offset + length,
 *                       length != dims x data type, checksum mismatch)
 *   MIL_ERR_INVALID     external location absolute, with "..", a symbolic
 *                       link, leaving the base directory, not a regular file
 *                       or hard-linked; NULL arguments
 *   MIL_ERR_UNSUPPORTED segment; strings with a NUL byte; a value that
 *                       narrowing cannot hold (without MIL_ONNX_CLAMP)
 *   MIL_ERR_NOMEM */
MIL_API mil_status mil_onnx_tensor_read(const char *path, const mil_onnx_read_opts *opts, mil_onnx_tensor **out,
                                        mil_diag *d);
/* The same for a buffer of len bytes; `name` (may be NULL: "<memory>") is
 * used in messages. The buffer need not outlive the call. */
MIL_API mil_status mil_onnx_tensor_read_mem(const void *buf, size_t len, const char *name,
                                            const mil_onnx_read_opts *opts, mil_onnx_tensor **out, mil_diag *d);
/* Frees a tensor (unmaps its external data). NULL is ignored. */
MIL_API void mil_onnx_tensor_free(mil_onnx_tensor *t);

/* A value of program p holding t's elements, dtype and shape (rank 0: a
 * scalar). The elements are copied into p, except that external data stays
 * in its mapping, which p then shares (the value is a read-only view that
 * stays valid after mil_onnx_tensor_free(t), until p is freed). NULL when
 * out of memory or when p or t is NULL. */
MIL_API mil_value *mil_onnx_tensor_to_value(mil_program *p, const mil_onnx_tensor *t);

/* ------------------------------------------------------------------------ */
/* Writing                                                                    */
/* ------------------------------------------------------------------------ */

typedef struct mil_onnx_write_opts {
  mil_onnx_dialect dialect;   /* AUTO or ONNX: onnx.proto; ND4J: seed 002 */
  /* RAW (default; STRING always uses string_data), TYPED, ND4J (FLOAT16 /
   * BOOL in the nd4j dialect), EXTERNAL (mil_onnx_tensor_write only: the
   * raw bytes go to external_location beside the file) */
  mil_onnx_encoding encoding;
  /* DataType to store (0: mil_onnx_dtype_from_mil(dt)). It may widen what
   * narrowing made (int32 as INT64/UINT32/UINT64, fp32 as DOUBLE, complex64
   * as COMPLEX128) and store fp16 as FLOAT8E4M3FNUZ / FLOAT8E5M2FNUZ
   * (values that do not fit are refused). */
  int32_t onnx_type;
  const char *name; /* TensorProto.name (NULL: none) */
  /* EXTERNAL: a plain file name (no '/'), written in the directory of the
   * .pb file (temporary sibling, renamed), referenced with the keys
   * location and length (offset 0) */
  const char *external_location;
} mil_onnx_write_opts;

/* Serializes a tensor of dtype dt and shape (rank entries; NULL for rank 0)
 * whose elements `data` are in libmil's layout (value.h), into a new buffer
 * *buf of *len bytes (free with free()). opts may be NULL (ONNX dialect,
 * raw_data, natural DataType). Errors: MIL_ERR_UNSUPPORTED (a dtype or
 * DataType that cannot be written, an encoding the dtype has no field for),
 * MIL_ERR_INVALID (negative dim, size overflow, a value that does not fit
 * the DataType asked for, a string pointer NULL), MIL_ERR_NOMEM. */
MIL_API mil_status mil_onnx_tensor_encode(mil_dtype dt, int32_t rank, const int64_t *shape, const void *data,
                                          const mil_onnx_write_opts *opts, void **buf, size_t *len, mil_diag *d);
/* mil_onnx_tensor_encode into the file at `path`, streamed to a temporary
 * sibling and renamed (on failure `path` is untouched); with encoding
 * EXTERNAL the elements go to opts->external_location in the same
 * directory. Errors as above plus MIL_ERR_IO, and MIL_ERR_INVALID for an
 * external_location that is not a plain file name. */
MIL_API mil_status mil_onnx_tensor_write(const char *path, mil_dtype dt, int32_t rank, const int64_t *shape,
                                         const void *data, const mil_onnx_write_opts *opts, mil_diag *d);

/* ------------------------------------------------------------------------ */
/* Types: TypeProto and ValueInfoProto <-> mil_type                           */
/* ------------------------------------------------------------------------ */

/* Decodes a serialized TypeProto (ONNX schema; the nd4j one is a subset of
 * it) into a type of p: a tensor type (elem_type mapped as
 * mil_onnx_dtype_to_mil with flags; dim_value -> constant dim, dim_param ->
 * symbolic dim of that name, neither -> unknown dim, no shape -> unknown
 * rank), or, for sequence_type of a tensor, a list of it of unknown length.
 * `name` is used in messages. Errors: MIL_ERR_FORMAT (wire defect, elem_type
 * 0 or unknown, negative dim_value), MIL_ERR_UNSUPPORTED (map, optional,
 * sparse tensor types), MIL_ERR_NOMEM. */
MIL_API mil_status mil_onnx_type_decode(mil_program *p, const void *buf, size_t len, unsigned flags, const char *name,
                                        const mil_type **out, mil_diag *d);
/* Decodes a serialized ValueInfoProto: *value_name (interned in p) and
 * *out as mil_onnx_type_decode. */
MIL_API mil_status mil_onnx_value_info_decode(mil_program *p, const void *buf, size_t len, unsigned flags,
                                              const char *name, const char **value_name, const mil_type **out,
                                              mil_diag *d);
/* Serializes a tensor type (symbolic dims -> dim_param, unknown dims -> a
 * Dimension without value, unknown rank -> no shape; a list type -> a
 * sequence_type) as a TypeProto, or with a name as a ValueInfoProto, into a
 * new buffer (free with free()). The dialect picks the schema (nd4j has no
 * sequence_type). Errors: MIL_ERR_UNSUPPORTED (a dtype without DataType,
 * a tuple/dict/state type), MIL_ERR_NOMEM. */
MIL_API mil_status mil_onnx_type_encode(const mil_type *t, mil_onnx_dialect dialect, void **buf, size_t *len,
                                        mil_diag *d);
MIL_API mil_status mil_onnx_value_info_encode(const char *value_name, const mil_type *t, mil_onnx_dialect dialect,
                                              void **buf, size_t *len, mil_diag *d);

#ifdef __cplusplus
}
#endif
#endif
