/* Bulk float conversions between fp32 and fp16, the work behind casting
 * gigabytes of weights (add_fp16_cast then const_elimination).
 *
 * The scalar converters work on the bit patterns directly (one rounding,
 * ties to even, like numpy's npy_floatbits_to_halfbits): no libm, no
 * double. The array forms use the AVX-512F or F16C instructions when the
 * CPU has them (checked once at run time); they round the same way for
 * every number, and differ from numpy only in the payload of NaNs, so a
 * group of sixteen or eight that holds a NaN is converted by the scalar
 * code instead.
 *
 * Arrays of 2M elements and more (a large weight) are split between two
 * threads when the machine has a second CPU: the conversion is bound by
 * memory bandwidth, which one core does not use up.
 */
#include <pthread.h>
#include <string.h>
#include <unistd.h>

#include "mil/types.h"

#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
#define MIL_HAVE_F16C_PATH 1
#include <cpuid.h>
#include <immintrin.h>
#endif

uint16_t mil_fp32_to_fp16(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
  uint32_t a = u & 0x7fffffffu;
  if (a >= 0x7f800000u) { /* inf or NaN: keep the top payload bits, stay NaN */
    if (a == 0x7f800000u) return sign | 0x7c00u;
    uint16_t h = (uint16_t)(0x7c00u + ((a & 0x007fffffu) >> 13));
    return sign | (h == 0x7c00u ? 0x7c01u : h);
  }
  if (a >= 0x477ff000u) return sign | 0x7c00u; /* >= 65520: rounds to inf */
  if (a < 0x38800000u) {                       /* below 2^-14: subnormal or zero */
    if (a < 0x33000000u) return sign;          /* below 2^-25: rounds to 0 */
    uint32_t e = a >> 23;                      /* 102..112 */
    uint32_t m = (a & 0x007fffffu) | 0x00800000u;
    uint32_t shift = 126 - e; /* value = m * 2^(e-150); in units of 2^-24: m >> (126-e) */
    uint32_t q = m >> shift, rem = m & ((1u << shift) - 1), half = 1u << (shift - 1);
    if (rem > half || (rem == half && (q & 1u))) q++;
    return sign | (uint16_t)q;
  }
  /* normal: rebias the exponent, round the 13 dropped mantissa bits */
  uint32_t h = ((a - 0x38000000u) >> 13);
  uint32_t rem = a & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) h++; /* a carry into the exponent is right */
  return sign | (uint16_t)h;
}

#ifdef MIL_HAVE_F16C_PATH
__attribute__((target("avx,f16c"))) static size_t f32_to_f16_f16c(const float *src, uint16_t *dst, size_t n) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m256 x = _mm256_loadu_ps(src + i);
    if (_mm256_movemask_ps(_mm256_cmp_ps(x, x, _CMP_UNORD_Q))) {
      for (size_t k = 0; k < 8; k++) dst[i + k] = mil_fp32_to_fp16(src[i + k]);
      continue;
    }
    _mm_storeu_si128((__m128i *)(void *)(dst + i), _mm256_cvtps_ph(x, _MM_FROUND_TO_NEAREST_INT));
  }
  return i;
}

__attribute__((target("avx,f16c"))) static size_t f16_to_f32_f16c(const uint16_t *src, float *dst, size_t n) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m128i h = _mm_loadu_si128((const __m128i *)(const void *)(src + i));
    /* a NaN (|h| above the infinity 0x7c00): widened in scalar code, which
     * keeps its payload as it is (the instruction sets the quiet bit);
     * infinities convert alike */
    __m128i a = _mm_and_si128(h, _mm_set1_epi16(0x7fff));
    if (_mm_movemask_epi8(_mm_cmpgt_epi16(a, _mm_set1_epi16(0x7c00)))) {
      for (size_t k = 0; k < 8; k++) dst[i + k] = mil_fp16_to_fp32(src[i + k]);
      continue;
    }
    _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(h));
  }
  return i;
}

/* The same 16 at a time (AVX-512F): a group holding a NaN in scalar code. */
__attribute__((target("avx512f"))) static size_t f32_to_f16_avx512(const float *src, uint16_t *dst, size_t n) {
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    __m512 x = _mm512_loadu_ps(src + i);
    if (_mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q)) {
      for (size_t k = 0; k < 16; k++) dst[i + k] = mil_fp32_to_fp16(src[i + k]);
      continue;
    }
    _mm256_storeu_si256((__m256i *)(void *)(dst + i), _mm512_cvtps_ph(x, _MM_FROUND_TO_NEAREST_INT));
  }
  return i;
}

__attribute__((target("avx512f"))) static size_t f16_to_f32_avx512(const uint16_t *src, float *dst, size_t n) {
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    __m256i h = _mm256_loadu_si256((const __m256i *)(const void *)(src + i));
    __m512i w = _mm512_cvtepu16_epi32(h); /* a NaN: scalar code (as above) */
    __m512i a = _mm512_and_si512(w, _mm512_set1_epi32(0x7fff));
    if (_mm512_cmpgt_epi32_mask(a, _mm512_set1_epi32(0x7c00))) {
      for (size_t k = 0; k < 16; k++) dst[i + k] = mil_fp16_to_fp32(src[i + k]);
      continue;
    }
    _mm512_storeu_ps(dst + i, _mm512_cvtph_ps(h));
  }
  return i;
}

/* v rounded to fp16 and widened back in registers, 16 at a time; a group
 * holding a NaN in scalar code. */
__attribute__((target("avx512f"))) static size_t round_f16_avx512(float *v, size_t n) {
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    __m512 x = _mm512_loadu_ps(v + i);
    if (_mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q)) {
      for (size_t k = 0; k < 16; k++) v[i + k] = mil_fp16_to_fp32(mil_fp32_to_fp16(v[i + k]));
      continue;
    }
    _mm512_storeu_ps(v + i, _mm512_cvtph_ps(_mm512_cvtps_ph(x, _MM_FROUND_TO_NEAREST_INT)));
  }
  return i;
}

__attribute__((target("avx,f16c"))) static size_t round_f16_f16c(float *v, size_t n) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m256 x = _mm256_loadu_ps(v + i);
    if (_mm256_movemask_ps(_mm256_cmp_ps(x, x, _CMP_UNORD_Q))) {
      for (size_t k = 0; k < 8; k++) v[i + k] = mil_fp16_to_fp32(mil_fp32_to_fp16(v[i + k]));
      continue;
    }
    _mm256_storeu_ps(v + i, _mm256_cvtph_ps(_mm256_cvtps_ph(x, _MM_FROUND_TO_NEAREST_INT)));
  }
  return i;
}

/* What the CPU offers (CPUID and XGETBV, read directly so that any GCC or
 * clang can build it): 1 = F16C (leaf 1: OSXSAVE, AVX, F16C; the OS saves
 * the ymm state), 2 = also AVX-512F (leaf 7; the OS saves the opmask and
 * zmm state), 0 = neither. */
static int simd_level(void) {
  static int known = -1;
  int k = __atomic_load_n(&known, __ATOMIC_RELAXED);
  if (k >= 0) return k;
  unsigned a, b, c, d;
  int lvl = 0;
  if (__get_cpuid(1, &a, &b, &c, &d) && (c & (1u << 27)) && (c & (1u << 28)) && (c & (1u << 29))) {
    unsigned lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    if ((lo & 6u) == 6u) lvl = 1;
    if (lvl && (lo & 0xe6u) == 0xe6u && __get_cpuid_max(0, NULL) >= 7) {
      __cpuid_count(7, 0, a, b, c, d);
      if (b & (1u << 16)) lvl = 2;
    }
  }
  __atomic_store_n(&known, lvl, __ATOMIC_RELAXED);
  return lvl;
}
#endif

static void f32_to_f16_serial(const float *src, uint16_t *dst, size_t n) {
  size_t i = 0;
#ifdef MIL_HAVE_F16C_PATH
  int lvl = simd_level();
  if (lvl == 2) i = f32_to_f16_avx512(src, dst, n);
  if (lvl >= 1) i += f32_to_f16_f16c(src + i, dst + i, n - i);
#endif
  for (; i < n; i++) dst[i] = mil_fp32_to_fp16(src[i]);
}

static void f16_to_f32_serial(const uint16_t *src, float *dst, size_t n) {
  size_t i = 0;
#ifdef MIL_HAVE_F16C_PATH
  int lvl = simd_level();
  if (lvl == 2) i = f16_to_f32_avx512(src, dst, n);
  if (lvl >= 1) i += f16_to_f32_f16c(src + i, dst + i, n - i);
#endif
  for (; i < n; i++) dst[i] = mil_fp16_to_fp32(src[i]);
}

void mil_fp16_round_array(float *v, size_t n) {
  size_t i = 0;
#ifdef MIL_HAVE_F16C_PATH
  int lvl = simd_level();
  if (lvl == 2) i = round_f16_avx512(v, n);
  if (lvl >= 1) i += round_f16_f16c(v + i, n - i);
#endif
  for (; i < n; i++) v[i] = mil_fp16_to_fp32(mil_fp32_to_fp16(v[i]));
}

#define SPLIT_MIN ((size_t)2 << 20)

typedef struct half_job {
  const void *src;
  void *dst;
  size_t n;
  bool to_half;
} half_job;

static void *half_job_run(void *arg) {
  half_job *j = arg;
  if (j->to_half) f32_to_f16_serial(j->src, j->dst, j->n);
  else f16_to_f32_serial(j->src, j->dst, j->n);
  return NULL;
}

/* Converts [0, n) with a second thread taking the upper half when it pays;
 * falls back to one thread when none can be started. */
static void convert_split(const void *src, void *dst, size_t n, bool to_half) {
  static int cpus = 0;
  if (!cpus) {
    long c = sysconf(_SC_NPROCESSORS_ONLN);
    cpus = c > 1 ? 2 : 1;
  }
  size_t lo = n / 2 & ~(size_t)7; /* the second half starts on a group of 8 */
  size_t in_w = to_half ? 4 : 2, out_w = to_half ? 2 : 4;
  half_job upper = {(const char *)src + lo * in_w, (char *)dst + lo * out_w, n - lo, to_half};
  pthread_t th;
  bool threaded = n >= SPLIT_MIN && cpus > 1 && pthread_create(&th, NULL, half_job_run, &upper) == 0;
  half_job lower = {src, dst, threaded ? lo : n, to_half};
  half_job_run(&lower);
  if (threaded) pthread_join(th, NULL);
}

void mil_fp32_to_fp16_array(const float *src, uint16_t *dst, size_t n) { convert_split(src, dst, n, true); }

void mil_fp16_to_fp32_array(const uint16_t *src, float *dst, size_t n) { convert_split(src, dst, n, false); }
