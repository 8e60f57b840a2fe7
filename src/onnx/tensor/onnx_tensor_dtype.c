/* The ONNX DataType table: names, element widths, the MIL dtype that holds
 * each type's values, and the FNUZ 8-bit floats MIL has no dtype for.
 * DataType numbers and meanings: onnx/onnx.proto (TensorProto.DataType) and
 * onnx/docs/Changelog.md; FNUZ formats: onnx/docs/docsgen/source/technical/
 * float8.md (bias 8 / 16, no infinities, no negative zero, NaN = 0x80). */
#include <math.h>
#include <string.h>

#include "onnx/tensor/onnx_tensor_internal.h"

typedef struct ot_type {
  const char *name;
  int bits;         /* in raw_data */
  mil_dtype exact;  /* MIL dtype with the same values */
  mil_dtype narrow; /* coremltools' narrowing (same as exact when none) */
} ot_type;

static const ot_type k_types[MIL_ONNX_DTYPE_MAX + 1] = {
    [MIL_ONNX_UNDEFINED] = {"UNDEFINED", 0, MIL_DT_UNUSED, MIL_DT_UNUSED},
    [MIL_ONNX_FLOAT] = {"FLOAT", 32, MIL_DT_FP32, MIL_DT_FP32},
    [MIL_ONNX_UINT8] = {"UINT8", 8, MIL_DT_UINT8, MIL_DT_UINT8},
    [MIL_ONNX_INT8] = {"INT8", 8, MIL_DT_INT8, MIL_DT_INT8},
    [MIL_ONNX_UINT16] = {"UINT16", 16, MIL_DT_UINT16, MIL_DT_UINT16},
    [MIL_ONNX_INT16] = {"INT16", 16, MIL_DT_INT16, MIL_DT_INT16},
    [MIL_ONNX_INT32] = {"INT32", 32, MIL_DT_INT32, MIL_DT_INT32},
    [MIL_ONNX_INT64] = {"INT64", 64, MIL_DT_INT64, MIL_DT_INT32},
    [MIL_ONNX_STRING] = {"STRING", 0, MIL_DT_STRING, MIL_DT_STRING},
    [MIL_ONNX_BOOL] = {"BOOL", 8, MIL_DT_BOOL, MIL_DT_BOOL},
    [MIL_ONNX_FLOAT16] = {"FLOAT16", 16, MIL_DT_FP16, MIL_DT_FP16},
    [MIL_ONNX_DOUBLE] = {"DOUBLE", 64, MIL_DT_FP64, MIL_DT_FP32},
    [MIL_ONNX_UINT32] = {"UINT32", 32, MIL_DT_UINT32, MIL_DT_INT32},
    [MIL_ONNX_UINT64] = {"UINT64", 64, MIL_DT_UINT64, MIL_DT_INT32},
    [MIL_ONNX_COMPLEX64] = {"COMPLEX64", 64, MIL_DT_COMPLEX64, MIL_DT_COMPLEX64},
    [MIL_ONNX_COMPLEX128] = {"COMPLEX128", 128, MIL_DT_COMPLEX128, MIL_DT_COMPLEX64},
    [MIL_ONNX_BFLOAT16] = {"BFLOAT16", 16, MIL_DT_BF16, MIL_DT_BF16},
    [MIL_ONNX_FLOAT8E4M3FN] = {"FLOAT8E4M3FN", 8, MIL_DT_FP8E4M3FN, MIL_DT_FP8E4M3FN},
    [MIL_ONNX_FLOAT8E4M3FNUZ] = {"FLOAT8E4M3FNUZ", 8, MIL_DT_FP16, MIL_DT_FP16},
    [MIL_ONNX_FLOAT8E5M2] = {"FLOAT8E5M2", 8, MIL_DT_FP8E5M2, MIL_DT_FP8E5M2},
    [MIL_ONNX_FLOAT8E5M2FNUZ] = {"FLOAT8E5M2FNUZ", 8, MIL_DT_FP16, MIL_DT_FP16},
    [MIL_ONNX_UINT4] = {"UINT4", 4, MIL_DT_UINT4, MIL_DT_UINT4},
    [MIL_ONNX_INT4] = {"INT4", 4, MIL_DT_INT4, MIL_DT_INT4},
};

static const ot_type *type_of(int32_t t) { return t >= 0 && t <= MIL_ONNX_DTYPE_MAX ? &k_types[t] : NULL; }

const char *mil_onnx_dtype_name(int32_t onnx_type) {
  const ot_type *t = type_of(onnx_type);
  return t ? t->name : NULL;
}

mil_dtype mil_onnx_dtype_to_mil(int32_t onnx_type, unsigned flags) {
  const ot_type *t = type_of(onnx_type);
  if (!t) return MIL_DT_UNUSED;
  return (flags & MIL_ONNX_EXACT) ? t->exact : t->narrow;
}

int32_t mil_onnx_dtype_from_mil(mil_dtype dt) {
  if (dt == MIL_DT_UNUSED) return MIL_ONNX_UNDEFINED;
  for (int32_t i = 1; i <= MIL_ONNX_DTYPE_MAX; i++)
    if (k_types[i].exact == dt && i != MIL_ONNX_FLOAT8E4M3FNUZ && i != MIL_ONNX_FLOAT8E5M2FNUZ) return i;
  return MIL_ONNX_UNDEFINED;
}

int ot_onnx_bits(int32_t onnx_type) {
  const ot_type *t = type_of(onnx_type);
  return t ? t->bits : 0;
}

const char *mil_onnx_dialect_name(mil_onnx_dialect d) {
  switch (d) {
  case MIL_ONNX_DIALECT_ONNX: return "onnx";
  case MIL_ONNX_DIALECT_ND4J: return "nd4j";
  default: return "auto";
  }
}

const char *mil_onnx_encoding_name(mil_onnx_encoding e) {
  switch (e) {
  case MIL_ONNX_ENC_RAW: return "raw_data";
  case MIL_ONNX_ENC_TYPED: return "typed";
  case MIL_ONNX_ENC_ND4J: return "half_val/bool_val";
  case MIL_ONNX_ENC_EXTERNAL: return "external";
  default: return "empty";
  }
}

/* ---- FNUZ 8-bit floats ----
 * E4M3FNUZ: 1 sign, 4 exponent (bias 8), 3 mantissa bits, max 240.
 * E5M2FNUZ: 1 sign, 5 exponent (bias 16), 2 mantissa bits, max 57344.
 * Code 0x80 is the only NaN; there is no -0 and no infinity. */

float ot_fnuz_to_f32(uint8_t v, bool e5m2) {
  if (v == 0x80) return NAN;
  int mbits = e5m2 ? 2 : 3, bias = e5m2 ? 16 : 8;
  int e = (v & 0x7f) >> mbits, m = v & ((1 << mbits) - 1);
  float mag = e == 0 ? ldexpf((float)m, 1 - bias - mbits) : ldexpf((float)((1 << mbits) | m), e - bias - mbits);
  return (v & 0x80) ? -mag : mag;
}

bool ot_f32_to_fnuz(float f, bool e5m2, uint8_t *out) {
  if (isnan(f) || isinf(f)) {
    *out = 0x80; /* the format's NaN; an infinity has no code */
    return isnan(f) != 0;
  }
  float a = fabsf(f);
  /* binary search over the 128 non-negative codes, which increase with their value */
  int lo = 0, hi = 127;
  while (lo < hi) {
    int mid = (lo + hi + 1) / 2;
    if (ot_fnuz_to_f32((uint8_t)mid, e5m2) <= a) lo = mid;
    else hi = mid - 1;
  }
  float below = ot_fnuz_to_f32((uint8_t)lo, e5m2);
  int code = lo;
  if (below != a) {
    if (lo == 127) {
      /* beyond the largest value: accept only what rounds down to it */
      float top = ot_fnuz_to_f32(127, e5m2), step = top - ot_fnuz_to_f32(126, e5m2);
      if (a >= top + step / 2) {
        *out = 0x80;
        return false;
      }
    } else {
      float above = ot_fnuz_to_f32((uint8_t)(lo + 1), e5m2);
      if (a - below > above - a || (a - below == above - a && (lo & 1))) code = lo + 1;
    }
  }
  *out = (uint8_t)(code == 0 ? 0 : ((f < 0 ? 0x80 : 0) | code));
  return true;
}
