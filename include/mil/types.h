/* libmil: data types and value types, faithful to MIL.proto.
 *
 * Mirrors coremltools/converters/mil/mil/types/ (type_mapping.py for the
 * dtype names) and MIL.proto's DataType / ValueType messages.
 *
 * Types are immutable once built and are owned by the program's arena (see
 * ir.h: mil_type_tensor and friends). Compare them with mil_type_equal.
 */
#ifndef MIL_TYPES_H
#define MIL_TYPES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Element data types. The numbers are MIL.proto's DataType numbers; the two
 * complex types exist only in coremltools' Python IR (complex dialect) and
 * have no proto number: they use private values >= 100. */
typedef enum mil_dtype {
  MIL_DT_UNUSED = 0,
  MIL_DT_BOOL = 1,
  MIL_DT_STRING = 2,
  MIL_DT_FP16 = 10,
  MIL_DT_FP32 = 11,
  MIL_DT_FP64 = 12,
  MIL_DT_BF16 = 13,
  MIL_DT_INT8 = 21,
  MIL_DT_INT16 = 22,
  MIL_DT_INT32 = 23,
  MIL_DT_INT64 = 24,
  MIL_DT_INT4 = 25,
  MIL_DT_UINT8 = 31,
  MIL_DT_UINT16 = 32,
  MIL_DT_UINT32 = 33,
  MIL_DT_UINT64 = 34,
  MIL_DT_UINT4 = 35,
  MIL_DT_UINT2 = 36,
  MIL_DT_UINT1 = 37,
  MIL_DT_UINT6 = 38,
  MIL_DT_UINT3 = 39,
  MIL_DT_FP8E4M3FN = 40,
  MIL_DT_FP8E5M2 = 41,
  MIL_DT_COMPLEX64 = 100,
  MIL_DT_COMPLEX128 = 101,
} mil_dtype;

/* coremltools' short name ("fp32", "int4", "uint1", "bool", "string",
 * "bf16", "fp8e4m3fn", "fp8e5m2", "complex64"); "unknown" for invalid. */
MIL_API const char *mil_dtype_name(mil_dtype dt);
/* Inverse of mil_dtype_name; also accepts "float32"/"float16"/"int"/"str"
 * style aliases used by coremltools' string dtype inputs. Returns false when
 * the name is not a dtype. */
MIL_API bool mil_dtype_from_name(const char *name, size_t len, mil_dtype *out);
/* True for a value that is one of the enumerators above. */
MIL_API bool mil_dtype_is_valid(int dt);
/* Bits per element: 1..8 for sub-byte and byte types, 16, 32, 64, 128;
 * for BOOL 8 (stored as one byte), STRING 0. */
MIL_API int mil_dtype_bits(mil_dtype dt);
/* Bytes per element in libmil's in-memory layout (0 for sub-byte types,
 * which are stored bit-packed, and for STRING, stored as char pointers). */
MIL_API size_t mil_dtype_size(mil_dtype dt);
MIL_API bool mil_dtype_is_float(mil_dtype dt);    /* fp16/32/64, bf16, fp8 */
MIL_API bool mil_dtype_is_int(mil_dtype dt);      /* signed or unsigned ints incl. sub-byte */
MIL_API bool mil_dtype_is_unsigned(mil_dtype dt); /* uint* */
MIL_API bool mil_dtype_is_subbyte(mil_dtype dt);  /* int4, uint1/2/3/4/6 */
MIL_API bool mil_dtype_is_complex(mil_dtype dt);

/* One dimension of a tensor shape (or a list length).
 *  constant:  size >= 0, sym == NULL
 *  symbolic:  size == -1, sym = interned symbol name ("is0", "batch")
 *  unknown:   size == -1, sym == NULL (proto UnknownDimension)
 * variadic marks a variadic-rank dimension (proto UnknownDimension.variadic,
 * printed with a leading '*'). */
typedef struct mil_dim {
  int64_t size;
  const char *sym;
  bool variadic;
} mil_dim;

static inline bool mil_dim_is_const(const mil_dim *d) { return d->size >= 0; }

typedef enum mil_type_kind {
  MIL_TYPE_TENSOR = 0, /* tensor, or scalar (rank 0 with is_scalar) */
  MIL_TYPE_LIST = 1,
  MIL_TYPE_TUPLE = 2,
  MIL_TYPE_DICT = 3,
  MIL_TYPE_STATE = 4,
  MIL_TYPE_UNKNOWN = 5, /* element type of a list whose element is not known yet */
} mil_type_kind;

/* A value type. Built by the mil_type_* constructors in ir.h, owned by a
 * program's arena, never mutated after construction. */
typedef struct mil_type mil_type;
struct mil_type {
  mil_type_kind kind;
  /* TENSOR */
  mil_dtype dtype;
  int32_t rank;    /* -1: unknown rank */
  bool is_scalar;  /* rank 0 and printed as "(Scalar)"; a rank-0 tensor prints "(Tensor)" */
  const mil_dim *dims; /* rank entries */
  /* LIST: elem = element type, length = list length (size -1 = dynamic "?")
   * STATE: elem = wrapped tensor type
   * DICT: elem = key type, value = value type
   * TUPLE: n_elems, elems */
  const mil_type *elem;
  const mil_type *value;
  mil_dim length;
  int32_t n_elems;
  const mil_type *const *elems;
};

/* Structural equality (dims compare by size, symbols by name, scalar flag
 * included). Either may be NULL (equal only if both are). */
MIL_API bool mil_type_equal(const mil_type *a, const mil_type *b);
/* Same as mil_type_equal but a scalar equals a rank-0 tensor of its dtype. */
MIL_API bool mil_type_compatible(const mil_type *a, const mil_type *b);
/* Number of elements of a tensor type with fully constant shape (1 for
 * rank 0); -1 when the rank or any dim is not constant or the type is not a
 * tensor. */
MIL_API int64_t mil_type_numel(const mil_type *t);
/* True when t is a tensor/scalar type whose every dim is constant. */
MIL_API bool mil_type_is_static(const mil_type *t);
static inline bool mil_type_is_tensor(const mil_type *t) { return t && t->kind == MIL_TYPE_TENSOR; }

/* IEEE half / bfloat16 / fp8 conversions (round to nearest even). */
MIL_API float mil_fp16_to_fp32(uint16_t h);
MIL_API uint16_t mil_fp32_to_fp16(float f);
MIL_API float mil_bf16_to_fp32(uint16_t h);
MIL_API uint16_t mil_fp32_to_bf16(float f);
MIL_API float mil_fp8e4m3fn_to_fp32(uint8_t v);
MIL_API uint8_t mil_fp32_to_fp8e4m3fn(float f);
MIL_API float mil_fp8e5m2_to_fp32(uint8_t v);
MIL_API uint8_t mil_fp32_to_fp8e5m2(float f);
/* Nearest fp16 of a double, rounded once (not via float). */
MIL_API uint16_t mil_fp64_to_fp16(double d);
/* Array forms of mil_fp32_to_fp16 / mil_fp16_to_fp32: convert n elements
 * from src to dst (the ranges must not overlap), bit for bit what the
 * scalar functions give, NaN payloads included (numpy's astype). Use the
 * CPU's F16C instructions when present. (src/core/convert.c) */
MIL_API void mil_fp32_to_fp16_array(const float *src, uint16_t *dst, size_t n);
MIL_API void mil_fp16_to_fp32_array(const uint16_t *src, float *dst, size_t n);
/* Rounds each of the n floats at v to the nearest fp16 value, in place:
 * v[i] = mil_fp16_to_fp32(mil_fp32_to_fp16(v[i])), bit for bit (NaN
 * payloads included; values beyond fp16's range become infinities). What
 * an fp16 program's op output holds, kept in fp32 for the next step of a
 * fused computation. One pass, in registers (AVX-512F or F16C when the CPU
 * has them). (src/core/convert.c) */
MIL_API void mil_fp16_round_array(float *v, size_t n);

#ifdef __cplusplus
}
#endif
#endif
