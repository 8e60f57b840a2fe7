/* Number formatting for MIL text: Python's repr() of a float and of an int.
 *
 * repr(float) is the shortest decimal that reads back as the same double
 * (ties between equally short candidates go to the one closest to the
 * value, then to the even one), written positionally when the decimal
 * exponent is in [-4, 16) and in exponent form ("1e-05", "1.5e+16")
 * otherwise (CPython Python/pystrtod.c format_float_short, mode 'r').
 *
 * The shortest digits come from the Schubfach method (R. Giulietti, "The
 * Schubfach way to render doubles", 2020): with k chosen so that the
 * rounding interval of v, scaled by 10^-k, is between 1 and 10 units wide,
 * it holds at most one multiple of 10 (that is the answer when present) and
 * otherwise one or two integers around v. The scaled interval ends are
 * computed with round-to-odd from a 128-bit approximation of 10^-k.
 * Whenever the approximation cannot decide (the fraction of the product is
 * smaller than its error bound) the same quantities are recomputed exactly
 * with a small bignum, so the result never depends on an unproved bound.
 */
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "io/io_internal.h"

__extension__ typedef unsigned __int128 u128;

/* ---------- a small fixed-size bignum (32-bit limbs, little endian) ---------- */

#define BN_LIMBS 48 /* 1536 bits: enough for x * 10^324 and 2^1216 */

typedef struct bn {
  uint32_t w[BN_LIMBS];
  int n; /* limbs in use; w[n-1] != 0 unless n == 0 */
} bn;

static void bn_set_u64(bn *a, uint64_t v) {
  memset(a, 0, sizeof *a);
  a->w[0] = (uint32_t)v;
  a->w[1] = (uint32_t)(v >> 32);
  a->n = a->w[1] ? 2 : a->w[0] ? 1 : 0;
}

static void bn_mul_small(bn *a, uint32_t m) {
  uint64_t carry = 0;
  for (int i = 0; i < a->n; i++) {
    uint64_t t = (uint64_t)a->w[i] * m + carry;
    a->w[i] = (uint32_t)t;
    carry = t >> 32;
  }
  if (carry && a->n < BN_LIMBS) a->w[a->n++] = (uint32_t)carry;
}

static void bn_mul_pow10(bn *a, int e) {
  for (; e >= 9; e -= 9) bn_mul_small(a, 1000000000u);
  static const uint32_t p10[9] = {1, 10, 100, 1000, 10000, 100000, 1000000, 10000000, 100000000};
  if (e > 0) bn_mul_small(a, p10[e]);
}

/* a /= d, returns the remainder. */
static uint32_t bn_div_small(bn *a, uint32_t d) {
  uint64_t rem = 0;
  for (int i = a->n - 1; i >= 0; i--) {
    uint64_t cur = (rem << 32) | a->w[i];
    a->w[i] = (uint32_t)(cur / d);
    rem = cur % d;
  }
  while (a->n > 0 && a->w[a->n - 1] == 0) a->n--;
  return (uint32_t)rem;
}

static void bn_shl(bn *a, int bits) {
  if (a->n == 0 || bits == 0) return;
  int limbs = bits / 32, sh = bits % 32;
  int n = a->n + limbs + 1;
  if (n > BN_LIMBS) n = BN_LIMBS;
  for (int i = n - 1; i >= 0; i--) {
    int src = i - limbs;
    uint32_t hi = src >= 0 && src < a->n ? a->w[src] : 0;
    uint32_t lo = src - 1 >= 0 && src - 1 < a->n ? a->w[src - 1] : 0;
    a->w[i] = sh ? (hi << sh) | (lo >> (32 - sh)) : hi;
  }
  a->n = n;
  while (a->n > 0 && a->w[a->n - 1] == 0) a->n--;
}

static void bn_shr1(bn *a) {
  for (int i = 0; i < a->n; i++) a->w[i] = (a->w[i] >> 1) | (i + 1 < a->n ? a->w[i + 1] << 31 : 0);
  while (a->n > 0 && a->w[a->n - 1] == 0) a->n--;
}

static int bn_bitlen(const bn *a) {
  if (a->n == 0) return 0;
  return (a->n - 1) * 32 + (32 - __builtin_clz(a->w[a->n - 1]));
}

static int bn_cmp(const bn *a, const bn *b) {
  if (a->n != b->n) return a->n < b->n ? -1 : 1;
  for (int i = a->n - 1; i >= 0; i--)
    if (a->w[i] != b->w[i]) return a->w[i] < b->w[i] ? -1 : 1;
  return 0;
}

/* a -= b, requires a >= b. */
static void bn_sub(bn *a, const bn *b) {
  int64_t borrow = 0;
  for (int i = 0; i < a->n; i++) {
    int64_t t = (int64_t)a->w[i] - (i < b->n ? b->w[i] : 0) - borrow;
    borrow = t < 0;
    a->w[i] = (uint32_t)(t + (borrow ? ((int64_t)1 << 32) : 0));
  }
  while (a->n > 0 && a->w[a->n - 1] == 0) a->n--;
}

static uint32_t bn_bit(const bn *a, int i) { return i / 32 < a->n ? (a->w[i / 32] >> (i % 32)) & 1 : 0; }

/* The 128 bits [start, start+128) of a, and whether any bit below start is set. */
static u128 bn_bits128(const bn *a, int start, bool *below) {
  u128 r = 0;
  for (int i = 127; i >= 0; i--) r = (r << 1) | bn_bit(a, start + i);
  *below = false;
  for (int i = 0; i < start && !*below; i++) *below = bn_bit(a, i) != 0;
  return r;
}

/* ---------- 10^e as G * 2^r, 2^127 <= G < 2^128, G = ceil(10^e / 2^r) ---------- */

#define POW10_MIN (-292)
#define POW10_MAX 324

typedef struct pow10_ent {
  uint64_t hi, lo;
  int32_t r;
  bool exact; /* G * 2^r == 10^e exactly */
} pow10_ent;

static pow10_ent g_pow10[POW10_MAX - POW10_MIN + 1];
static pthread_once_t g_pow10_once = PTHREAD_ONCE_INIT;

static void set_ent(pow10_ent *ent, const bn *a, int extra_shift, bool always_inexact) {
  int L = bn_bitlen(a);
  u128 g;
  bool inexact;
  if (L <= 128) {
    bool below;
    g = bn_bits128(a, 0, &below) << (128 - L);
    inexact = false;
  } else {
    g = bn_bits128(a, L - 128, &inexact);
  }
  int r = L - 128 - extra_shift;
  if (always_inexact) inexact = true;
  if (inexact) {
    g += 1;
    if (g == 0) { /* carried out of 128 bits */
      g = (u128)1 << 127;
      r += 1;
    }
  }
  ent->hi = (uint64_t)(g >> 64);
  ent->lo = (uint64_t)g;
  ent->r = r;
  ent->exact = !inexact;
}

#define NEG_SHIFT 1216 /* 2^1216 / 10^292 still has more than 128 bits */

static void pow10_init(void) {
  bn a;
  bn_set_u64(&a, 1);
  for (int e = 0; e <= POW10_MAX; e++) {
    set_ent(&g_pow10[e - POW10_MIN], &a, 0, false);
    bn_mul_small(&a, 10);
  }
  bn_set_u64(&a, 1);
  bn_shl(&a, NEG_SHIFT);
  for (int e = -1; e >= POW10_MIN; e--) {
    bn_div_small(&a, 10); /* floor(floor(x/10^j)/10) == floor(x/10^(j+1)) */
    /* 2^S / 10^n is never an integer, so the ceiling is always one above */
    set_ent(&g_pow10[e - POW10_MIN], &a, NEG_SHIFT, true);
  }
}

/* ---------- round-to-odd of x * 2^q * 10^e ---------- */

/* Exact: floor(x * 2^q * 10^e), with bit 0 forced to 1 when the value is
 * not an integer. */
static uint64_t rop_exact(uint64_t x, int q, int e) {
  bn num, den;
  bn_set_u64(&num, x);
  bn_set_u64(&den, 1);
  if (q > 0) bn_shl(&num, q);
  if (q < 0) bn_shl(&den, -q);
  if (e > 0) bn_mul_pow10(&num, e);
  if (e < 0) bn_mul_pow10(&den, -e);
  int j = bn_bitlen(&num) - bn_bitlen(&den);
  uint64_t quo = 0;
  if (j >= 0) {
    if (j > 63) j = 63; /* cannot happen for the scaled values used here */
    bn_shl(&den, j);
    for (; j >= 0; j--) {
      if (bn_cmp(&num, &den) >= 0) {
        bn_sub(&num, &den);
        quo |= (uint64_t)1 << j;
      }
      bn_shr1(&den);
    }
  }
  return quo | (num.n != 0);
}

/* Fast version from the table; returns false when it cannot decide. */
static inline bool rop_fast(uint64_t x, const pow10_ent *g, int sh, uint64_t *out) {
  u128 lo = (u128)x * g->lo;
  u128 hi = (u128)x * g->hi;
  uint64_t p0 = (uint64_t)lo;
  u128 mid = (lo >> 64) + (uint64_t)hi;
  uint64_t p1 = (uint64_t)mid;
  uint64_t p2 = (uint64_t)(hi >> 64) + (uint64_t)(mid >> 64);
  u128 top = ((u128)p2 << 64) | p1; /* P >> 64 */
  int s2 = sh - 64;                 /* 1 <= s2 <= 126, checked by the caller */
  u128 q = top >> s2;
  if ((q >> 64) != 0) return false;
  u128 fhi = top & (((u128)1 << s2) - 1);
  if (g->exact) {
    *out = (uint64_t)q | (fhi != 0 || p0 != 0);
    return true;
  }
  /* G is rounded up, so P / 2^sh exceeds x * 2^q * 10^e by less than
   * x / 2^sh: a fraction that small may hide an exact integer */
  if (fhi == 0 && p0 < x) return false;
  *out = (uint64_t)q | 1;
  return true;
}

static inline uint64_t rop(uint64_t x, int q, int e, const pow10_ent *g, int sh) {
  uint64_t r;
  if (sh >= 65 && sh <= 190 && rop_fast(x, g, sh, &r)) return r;
  return rop_exact(x, q, e);
}

/* floor(q * log10(2)) and floor(log10(3/4 * 2^q)) for |q| <= 1100. */
static int floor_log10_pow2(int q) { return (int)(((int64_t)q * 661971961083LL) >> 41); }
static int floor_log10_3q_pow2(int q) { return (int)(((int64_t)q * 661971961083LL - 274743187321LL) >> 41); }

/* Shortest decimal f * 10^(return value) in the rounding interval of
 * c * 2^q (c > 0); irregular: c is a power of two above the smallest
 * exponent, so the gap below is half the gap above. */
static int shortest(uint64_t c, int q, bool irregular, uint64_t *f) {
  uint64_t out = c & 1; /* odd c: the interval ends do not round to c */
  uint64_t cb = c << 2, cbr = cb + 2, cbl = irregular ? cb - 1 : cb - 2;
  int k = irregular ? floor_log10_3q_pow2(q) : floor_log10_pow2(q);
  const pow10_ent *g = &g_pow10[-k - POW10_MIN];
  int sh = -(q + g->r);
  uint64_t vbl = rop(cbl, q, -k, g, sh), vb = rop(cb, q, -k, g, sh), vbr = rop(cbr, q, -k, g, sh);
  uint64_t s = vb >> 2;
  uint64_t sp10 = s / 10 * 10, tp10 = sp10 + 10;
  bool upin = vbl + out <= sp10 << 2;
  bool wpin = (tp10 << 2) + out <= vbr;
  if (upin != wpin) {
    *f = upin ? sp10 : tp10;
    return k;
  }
  uint64_t t = s + 1;
  bool uin = vbl + out <= s << 2;
  bool win = (t << 2) + out <= vbr;
  if (uin != win) {
    *f = uin ? s : t;
    return k;
  }
  int64_t cmp = (int64_t)(vb - ((s + t) << 1));
  *f = cmp < 0 || (cmp == 0 && (s & 1) == 0) ? s : t;
  return k;
}

/* ---------- digits ---------- */

static const char k_digit_pairs[201] =
    "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
    "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
    "8081828384858687888990919293949596979899";

/* Digits of v < 10^8, written from the front; returns their count. */
static inline int fmt_small(char *out, uint32_t v) {
  int n = v < 10000 ? (v < 100 ? (v < 10 ? 1 : 2) : (v < 1000 ? 3 : 4))
                    : (v < 1000000 ? (v < 100000 ? 5 : 6) : (v < 10000000 ? 7 : 8));
  char *p = out + n;
  while (v >= 100) {
    unsigned r = v % 100;
    v /= 100;
    p -= 2;
    memcpy(p, k_digit_pairs + 2 * r, 2);
  }
  if (v >= 10) memcpy(p - 2, k_digit_pairs + 2 * v, 2);
  else p[-1] = (char)('0' + v);
  return n;
}

/* Exactly 8 digits of v < 10^8 (leading zeros kept). */
static inline void fmt_8(char *p, uint32_t v) {
  uint32_t a = v / 10000, b = v % 10000;
  memcpy(p, k_digit_pairs + 2 * (a / 100), 2);
  memcpy(p + 2, k_digit_pairs + 2 * (a % 100), 2);
  memcpy(p + 4, k_digit_pairs + 2 * (b / 100), 2);
  memcpy(p + 6, k_digit_pairs + 2 * (b % 100), 2);
}

static const uint64_t k_pow10[20] = {1ull,
                                     10ull,
                                     100ull,
                                     1000ull,
                                     10000ull,
                                     100000ull,
                                     1000000ull,
                                     10000000ull,
                                     100000000ull,
                                     1000000000ull,
                                     10000000000ull,
                                     100000000000ull,
                                     1000000000000ull,
                                     10000000000000ull,
                                     100000000000000ull,
                                     1000000000000000ull,
                                     10000000000000000ull,
                                     100000000000000000ull,
                                     1000000000000000000ull,
                                     10000000000000000000ull};

/* Number of decimal digits of v (1 for 0). */
static inline int count_digits(uint64_t v) {
  int t = ((64 - __builtin_clzll(v | 1)) * 1233) >> 12; /* about log10(2^bits) */
  return t - (v < k_pow10[t]) + 1;
}

/* Writes the decimal digits of v to out (no NUL); returns their count. */
int io_fmt_u64(char *out, uint64_t v) {
  if (v < 100000000) return fmt_small(out, (uint32_t)v);
  if (v < 10000000000000000ull) {
    int n = fmt_small(out, (uint32_t)(v / 100000000));
    fmt_8(out + n, (uint32_t)(v % 100000000));
    return n + 8;
  }
  uint64_t rest = v % 10000000000000000ull;
  int n = fmt_small(out, (uint32_t)(v / 10000000000000000ull));
  fmt_8(out + n, (uint32_t)(rest / 100000000));
  fmt_8(out + n + 8, (uint32_t)(rest % 100000000));
  return n + 16;
}

int io_fmt_i64(char *out, int64_t v) {
  if (v < 0) {
    out[0] = '-';
    return 1 + io_fmt_u64(out + 1, (uint64_t)0 - (uint64_t)v);
  }
  return io_fmt_u64(out, (uint64_t)v);
}

/* Writes f (no trailing zeros) with value f * 10^e10 the way repr()
 * does. The digits are written straight to their place (copying them
 * through a temporary costs store-forwarding stalls). */
static int layout(char *out, uint64_t f, int e10, unsigned flags) {
  char *p = out;
  int n = count_digits(f);
  int decpt = n + e10, x = decpt - 1;
  if (decpt <= 0 && x >= -4) { /* 0.000ddd: digits go straight after the zeros */
    int z = 2 - decpt;
    memcpy(p, "0.000000", 8);
    io_fmt_u64(p + z, f);
    return z + n;
  }
  io_fmt_u64(p + 1, f); /* one byte of room in front for the moves below */
  if (x < -4 || x >= 16) {
    p[0] = p[1];
    if (n > 1) {
      p[1] = '.';
      p += n + 1;
    } else {
      p += 1;
    }
    *p++ = 'e';
    *p++ = x < 0 ? '-' : '+';
    int ax = x < 0 ? -x : x;
    if (ax >= 100) {
      *p++ = (char)('0' + ax / 100);
      ax %= 100;
    }
    memcpy(p, k_digit_pairs + 2 * ax, 2);
    return (int)(p + 2 - out);
  }
  for (int i = 0; i < decpt && i < n; i++) p[i] = p[i + 1];
  if (decpt >= n) {
    p += n;
    for (int i = n; i < decpt; i++) *p++ = '0';
    if (!(flags & IO_FMT_NO_DOT0)) {
      p[0] = '.';
      p[1] = '0';
      p += 2;
    }
    return (int)(p - out);
  }
  p[decpt] = '.';
  return n + 1;
}

int io_fmt_double(char *out, double v, unsigned flags) {
  uint64_t bits;
  memcpy(&bits, &v, sizeof bits);
  bool neg = bits >> 63;
  int bexp = (int)((bits >> 52) & 0x7ff);
  uint64_t m = bits & (((uint64_t)1 << 52) - 1);
  char *p = out;
  if (bexp == 0x7ff && m != 0) { /* repr() never shows the sign of a nan */
    if (flags & IO_FMT_SIGN) *p++ = '+';
    memcpy(p, "nan", 3);
    return (int)(p - out) + 3;
  }
  if (neg) *p++ = '-';
  else if (flags & IO_FMT_SIGN) *p++ = '+';
  if (bexp == 0x7ff) {
    memcpy(p, "inf", 3);
    return (int)(p - out) + 3;
  }
  if (bexp == 0 && m == 0) {
    *p++ = '0';
    if (!(flags & IO_FMT_NO_DOT0)) {
      *p++ = '.';
      *p++ = '0';
    }
    return (int)(p - out);
  }
  uint64_t c;
  int q;
  if (bexp == 0) {
    c = m;
    q = -1074;
  } else {
    c = m | ((uint64_t)1 << 52);
    q = bexp - 1075;
  }
  uint64_t f;
  int e10;
  if (q <= 0 && q >= -52 && (c & (((uint64_t)1 << -q) - 1)) == 0) {
    /* an integer below 2^53: its own digits are the shortest */
    f = c >> -q;
    e10 = 0;
  } else {
    pthread_once(&g_pow10_once, pow10_init);
    e10 = shortest(c, q, m == 0 && bexp > 1, &f);
  }
  /* strip trailing zeros (f < 2^57 has at most 17) */
  while (f % 100000000 == 0) {
    f /= 100000000;
    e10 += 8;
  }
  if (f % 10000 == 0) {
    f /= 10000;
    e10 += 4;
  }
  if (f % 100 == 0) {
    f /= 100;
    e10 += 2;
  }
  if (f % 10 == 0) {
    f /= 10;
    e10 += 1;
  }
  return (int)(p - out) + layout(p, f, e10, flags);
}

int mil_format_double(char out[32], double v) {
  int n = io_fmt_double(out, v, 0);
  out[n] = '\0';
  return n;
}
