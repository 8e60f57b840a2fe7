/* Data types: names, sizes, classification and the narrow float formats.
 * Names follow coremltools' types/type_mapping.py (_TYPES_TO_STRINGS). */
#include <math.h>
#include <string.h>

#include "mil/types.h"

typedef struct dt_info {
  mil_dtype dt;
  const char *name;
  int bits;
} dt_info;

static const dt_info k_dtypes[] = {
    {MIL_DT_BOOL, "bool", 8},         {MIL_DT_STRING, "string", 0},   {MIL_DT_FP16, "fp16", 16},
    {MIL_DT_FP32, "fp32", 32},        {MIL_DT_FP64, "fp64", 64},      {MIL_DT_BF16, "bf16", 16},
    {MIL_DT_INT8, "int8", 8},         {MIL_DT_INT16, "int16", 16},    {MIL_DT_INT32, "int32", 32},
    {MIL_DT_INT64, "int64", 64},      {MIL_DT_INT4, "int4", 4},       {MIL_DT_UINT8, "uint8", 8},
    {MIL_DT_UINT16, "uint16", 16},    {MIL_DT_UINT32, "uint32", 32},  {MIL_DT_UINT64, "uint64", 64},
    {MIL_DT_UINT4, "uint4", 4},       {MIL_DT_UINT2, "uint2", 2},     {MIL_DT_UINT1, "uint1", 1},
    {MIL_DT_UINT6, "uint6", 6},       {MIL_DT_UINT3, "uint3", 3},     {MIL_DT_FP8E4M3FN, "fp8e4m3fn", 8},
    {MIL_DT_FP8E5M2, "fp8e5m2", 8},   {MIL_DT_COMPLEX64, "complex64", 64},
    {MIL_DT_COMPLEX128, "complex128", 128},
};
#define N_DTYPES (sizeof k_dtypes / sizeof k_dtypes[0])

static const dt_info *info(mil_dtype dt) {
  for (size_t i = 0; i < N_DTYPES; i++)
    if (k_dtypes[i].dt == dt) return &k_dtypes[i];
  return NULL;
}

const char *mil_dtype_name(mil_dtype dt) {
  const dt_info *i = info(dt);
  return i ? i->name : "unknown";
}

bool mil_dtype_is_valid(int dt) { return dt != MIL_DT_UNUSED && info((mil_dtype)dt) != NULL; }

bool mil_dtype_from_name(const char *name, size_t len, mil_dtype *out) {
  if (len == (size_t)-1) len = strlen(name);
  for (size_t i = 0; i < N_DTYPES; i++)
    if (strlen(k_dtypes[i].name) == len && memcmp(k_dtypes[i].name, name, len) == 0) {
      *out = k_dtypes[i].dt;
      return true;
    }
  static const struct { const char *alias; mil_dtype dt; } aliases[] = {
      {"float16", MIL_DT_FP16}, {"float32", MIL_DT_FP32}, {"float64", MIL_DT_FP64},
      {"bfloat16", MIL_DT_BF16}, {"str", MIL_DT_STRING},  {"int", MIL_DT_INT64},
      {"float", MIL_DT_FP32},   {"double", MIL_DT_FP64},
  };
  for (size_t i = 0; i < sizeof aliases / sizeof aliases[0]; i++)
    if (strlen(aliases[i].alias) == len && memcmp(aliases[i].alias, name, len) == 0) {
      *out = aliases[i].dt;
      return true;
    }
  return false;
}

int mil_dtype_bits(mil_dtype dt) {
  const dt_info *i = info(dt);
  return i ? i->bits : 0;
}

size_t mil_dtype_size(mil_dtype dt) {
  if (dt == MIL_DT_STRING) return sizeof(const char *);
  int b = mil_dtype_bits(dt);
  return b >= 8 ? (size_t)b / 8 : 0;
}

bool mil_dtype_is_float(mil_dtype dt) {
  return dt == MIL_DT_FP16 || dt == MIL_DT_FP32 || dt == MIL_DT_FP64 || dt == MIL_DT_BF16 || dt == MIL_DT_FP8E4M3FN ||
         dt == MIL_DT_FP8E5M2;
}

bool mil_dtype_is_unsigned(mil_dtype dt) {
  switch (dt) {
  case MIL_DT_UINT1: case MIL_DT_UINT2: case MIL_DT_UINT3: case MIL_DT_UINT4: case MIL_DT_UINT6:
  case MIL_DT_UINT8: case MIL_DT_UINT16: case MIL_DT_UINT32: case MIL_DT_UINT64:
    return true;
  default:
    return false;
  }
}

bool mil_dtype_is_int(mil_dtype dt) {
  return mil_dtype_is_unsigned(dt) || dt == MIL_DT_INT4 || dt == MIL_DT_INT8 || dt == MIL_DT_INT16 ||
         dt == MIL_DT_INT32 || dt == MIL_DT_INT64;
}

bool mil_dtype_is_subbyte(mil_dtype dt) { return mil_dtype_bits(dt) > 0 && mil_dtype_bits(dt) < 8; }
bool mil_dtype_is_complex(mil_dtype dt) { return dt == MIL_DT_COMPLEX64 || dt == MIL_DT_COMPLEX128; }

/* ---- narrow floats ---- */

static uint32_t f2u(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  return u;
}
static float u2f(uint32_t u) {
  float f;
  memcpy(&f, &u, 4);
  return f;
}

float mil_fp16_to_fp32(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000) << 16;
  uint32_t exp = (h >> 10) & 0x1f, man = h & 0x3ff;
  if (exp == 0x1f) return u2f(sign | 0x7f800000u | (man << 13));
  if (exp == 0) {
    float v = ldexpf((float)man, -24);
    return sign ? -v : v;
  }
  return u2f(sign | ((exp + 112) << 23) | (man << 13));
}

/* Round a double to the nearest fp16 (ties to even), computed once from the
 * double so that no double rounding occurs. */
uint16_t mil_fp64_to_fp16(double d) {
  uint16_t sign = signbit(d) ? 0x8000 : 0;
  if (isnan(d)) return sign | 0x7e00;
  double a = fabs(d);
  if (isinf(a) || a >= 65520.0) return sign | 0x7c00; /* 65520 rounds up to inf */
  if (a < ldexp(1.0, -14)) {
    /* subnormal: units of 2^-24 */
    double q = a * 16777216.0; /* exact scaling */
    double r = nearbyint(q);   /* default rounding mode: ties to even */
    return sign | (uint16_t)r;
  }
  int e;
  double m = frexp(a, &e); /* a = m * 2^e, m in [0.5, 1) */
  /* normal: 11 significant bits */
  double q = ldexp(m, 11);
  double r = nearbyint(q); /* in [1024, 2048] */
  if (r >= 2048.0) {
    r /= 2;
    e++;
  }
  int exp = e - 1 + 15;
  if (exp >= 31) return sign | 0x7c00;
  return sign | (uint16_t)((exp << 10) | ((int)r - 1024));
}

float mil_bf16_to_fp32(uint16_t h) { return u2f((uint32_t)h << 16); }

uint16_t mil_fp32_to_bf16(float f) {
  uint32_t u = f2u(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40);
  uint32_t round = 0x7fff + ((u >> 16) & 1);
  return (uint16_t)((u + round) >> 16);
}

/* Generic small-float decode: ebits exponent bits, mbits mantissa bits, bias. */
static float small_decode(uint32_t v, int ebits, int mbits, int bias) {
  uint32_t sign = v >> (ebits + mbits);
  uint32_t exp = (v >> mbits) & ((1u << ebits) - 1);
  uint32_t man = v & ((1u << mbits) - 1);
  float r;
  if (exp == 0) r = ldexpf((float)man, 1 - bias - mbits);
  else r = ldexpf((float)(man | (1u << mbits)), (int)exp - bias - mbits);
  return sign ? -r : r;
}

/* Encode with round-to-nearest-even; max_code is the largest finite
 * magnitude code, sat_code what overflow maps to. */
static uint32_t small_encode(double a, int ebits, int mbits, int bias, uint32_t max_code, uint32_t sat_code) {
  (void)ebits;
  if (a == 0) return 0;
  double minnorm = ldexp(1.0, 1 - bias);
  if (a < minnorm) {
    double q = nearbyint(a / ldexp(1.0, 1 - bias - mbits));
    return (uint32_t)q; /* may reach the first normal code, which is correct */
  }
  int e;
  double m = frexp(a, &e);
  double q = nearbyint(ldexp(m, mbits + 1));
  if (q >= ldexp(1.0, mbits + 1)) {
    q /= 2;
    e++;
  }
  int exp = e - 1 + bias;
  uint32_t code = ((uint32_t)exp << mbits) | ((uint32_t)q - (1u << mbits));
  if (code > max_code) return sat_code;
  return code;
}

float mil_fp8e4m3fn_to_fp32(uint8_t v) {
  if ((v & 0x7f) == 0x7f) return NAN;
  return small_decode(v, 4, 3, 7);
}

uint8_t mil_fp32_to_fp8e4m3fn(float f) {
  uint8_t sign = signbit(f) ? 0x80 : 0;
  if (isnan(f)) return 0x7f;
  double a = fabs((double)f);
  if (isinf(a)) return sign | 0x7f; /* no infinities in e4m3fn: NaN */
  /* largest finite is 0x7e (448); overflow saturates to NaN like ml_dtypes */
  return sign | (uint8_t)small_encode(a, 4, 3, 7, 0x7e, 0x7f);
}

float mil_fp8e5m2_to_fp32(uint8_t v) {
  uint32_t exp = (v >> 2) & 0x1f;
  if (exp == 0x1f) {
    if (v & 3) return NAN;
    return (v & 0x80) ? -INFINITY : INFINITY;
  }
  return small_decode(v, 5, 2, 15);
}

uint8_t mil_fp32_to_fp8e5m2(float f) {
  uint8_t sign = signbit(f) ? 0x80 : 0;
  if (isnan(f)) return 0x7f;
  double a = fabs((double)f);
  if (isinf(a)) return sign | 0x7c;
  return sign | (uint8_t)small_encode(a, 5, 2, 15, 0x7b, 0x7c);
}
