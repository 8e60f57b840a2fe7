/* Scanner for MIL text: white space and comments, identifiers, names,
 * numbers and quoted strings, read straight from the caller's buffer, plus
 * the "<file>:<line>:<col>: expected X, found Y" error messages.
 *
 * Numbers are the hot path (a large const is a long list of floats), so
 * the decimal-to-double conversion has fast paths that are exact and falls
 * back to strtod_l in the "C" locale only for the rare inputs they cannot
 * decide. */
#include <errno.h>
#include <float.h>
#include <locale.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/io_internal.h"

void io_lex_init(io_lex *L, const char *text, size_t len, const char *filename, mil_diag *d) {
  memset(L, 0, sizeof *L);
  L->buf = L->p = text;
  L->end = text + len;
  L->filename = filename ? filename : "<stdin>";
  L->d = d;
}

void io_lex_fini(io_lex *L) {
  if (L->c_locale) freelocale((locale_t)L->c_locale);
  L->c_locale = NULL;
}

static inline bool is_space(unsigned char c) { return c == ' ' || c == '\n' || c == '\t' || c == '\r' || c == '\f' || c == '\v'; }
static inline bool is_digit(unsigned char c) { return c >= '0' && c <= '9'; }
static inline bool is_ident_start(unsigned char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
static inline bool is_ident(unsigned char c) { return is_ident_start(c) || is_digit(c); }

void io_lex_skip(io_lex *L) {
  const char *p = L->p, *end = L->end;
  for (;;) {
    while (p < end && is_space((unsigned char)*p)) p++;
    if (p < end && *p == '#') {
      const char *nl = memchr(p, '\n', (size_t)(end - p));
      p = nl ? nl + 1 : end;
      continue;
    }
    break;
  }
  L->p = p;
}

int io_lex_peek(io_lex *L) {
  io_lex_skip(L);
  return L->p < L->end ? (unsigned char)*L->p : -1;
}

bool io_lex_accept(io_lex *L, char c) {
  if (io_lex_peek(L) == (unsigned char)c) {
    L->p++;
    return true;
  }
  return false;
}

bool io_lex_expect(io_lex *L, char c, const char *context) {
  if (io_lex_accept(L, c)) return true;
  char what[320];
  snprintf(what, sizeof what, "'%c'%s%s", c, context ? " " : "", context ? context : "");
  io_lex_expected(L, what);
  return false;
}

size_t io_lex_ident(io_lex *L, const char **s) {
  io_lex_skip(L);
  const char *p = L->p;
  if (p >= L->end || !is_ident_start((unsigned char)*p)) return 0;
  while (p < L->end && is_ident((unsigned char)*p)) p++;
  *s = L->p;
  size_t n = (size_t)(p - L->p);
  L->p = p;
  return n;
}

size_t io_lex_name(io_lex *L, const char **s) {
  io_lex_skip(L);
  return io_lex_name_here(L, s);
}

/* A name: printable ASCII other than the punctuation of the syntax, and
 * valid UTF-8 other than the C1 controls U+0080..U+009F (the printer
 * escapes anything else, mil_escape, so a name with such a byte could not
 * be printed and read back: it ends the name). */
size_t io_lex_name_here(io_lex *L, const char **s) {
  const char *p = L->p;
  while (p < L->end && io_name_byte((unsigned char)*p)) {
    if ((unsigned char)*p < 0x80) {
      p++;
      continue;
    }
    size_t n = io_utf8_len((const unsigned char *)p, (const unsigned char *)L->end);
    if (!n || (n == 2 && (unsigned char)p[0] == 0xc2 && (unsigned char)p[1] < 0xa0)) break;
    p += n;
  }
  *s = L->p;
  size_t n = (size_t)(p - L->p);
  L->p = p;
  return n;
}

bool io_lex_at_word(io_lex *L, const char *word) {
  io_lex_skip(L);
  size_t n = strlen(word);
  return (size_t)(L->end - L->p) >= n && memcmp(L->p, word, n) == 0 &&
         (L->p + n == L->end || !is_ident((unsigned char)L->p[n]));
}

/* ---------- positions and messages ---------- */

void io_lex_linecol(const io_lex *L, const char *at, int *line, int *col) {
  if (at < L->buf) at = L->buf;
  if (at > L->end) at = L->end;
  io_lex *M = (io_lex *)L; /* the cache is not part of the lexer's observable state */
  int ln = 1;
  const char *bol = L->buf, *q = L->buf;
  if (M->lc_at && M->lc_at <= at) { /* resume from the last lookup: messages come in text order */
    ln = M->lc_line;
    bol = M->lc_bol;
    q = M->lc_at;
  }
  for (; q < at; q++)
    if (*q == '\n') {
      ln++;
      bol = q + 1;
    }
  M->lc_at = at;
  M->lc_line = ln;
  M->lc_bol = bol;
  *line = ln;
  *col = (int)(at - bol) + 1;
}

static mil_status verror(io_lex *L, mil_status st, const char *at, const char *fmt, va_list ap) {
  if (L->st != MIL_OK) return L->st;
  L->st = st;
  char msg[512];
  vsnprintf(msg, sizeof msg, fmt, ap);
  int line, col;
  io_lex_linecol(L, at, &line, &col);
  mil_diag_error(L->d, st, "%s:%d:%d: %s", L->filename, line, col, msg);
  return st;
}

mil_status io_lex_error(io_lex *L, const char *at, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  mil_status st = verror(L, MIL_ERR_PARSE, at, fmt, ap);
  va_end(ap);
  return st;
}

mil_status io_lex_error_st(io_lex *L, mil_status st, const char *at, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  st = verror(L, st, at, fmt, ap);
  va_end(ap);
  return st;
}

void io_lex_warn(io_lex *L, const char *at, const char *fmt, ...) {
  if (L->d && L->d->count >= (L->d->max_msgs ? L->d->max_msgs : 1000)) {
    L->d->n_warnings++; /* the sink is full: count it without formatting */
    return;
  }
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  int line, col;
  io_lex_linecol(L, at, &line, &col);
  mil_diag_add(L->d, MIL_SEV_WARNING, "%s:%d:%d: %s", L->filename, line, col, msg);
}

const char *io_lex_describe(const io_lex *L, const char *at, char out[48]) {
  if (at >= L->end) return "end of input";
  unsigned char c = (unsigned char)*at;
  const char *q = at;
  if (is_ident_start(c)) {
    while (q < L->end && is_ident((unsigned char)*q)) q++;
  } else if (is_digit(c) || ((c == '-' || c == '+' || c == '.') && q + 1 < L->end && is_digit((unsigned char)q[1]))) {
    q++;
    while (q < L->end && (is_ident((unsigned char)*q) || *q == '.' ||
                          ((*q == '-' || *q == '+') && (q[-1] == 'e' || q[-1] == 'E'))))
      q++;
  } else if (c == '"' || c == '\'') {
    return "a string";
  } else if (c == '\n') {
    return "end of line";
  } else if (c < 0x20 || c >= 0x7f) {
    snprintf(out, 48, "byte 0x%02x", c);
    return out;
  } else {
    q++;
  }
  size_t n = (size_t)(q - at);
  if (n > 40) snprintf(out, 48, "'%.37s...'", at);
  else snprintf(out, 48, "'%.*s'", (int)n, at);
  return out;
}

mil_status io_lex_expected(io_lex *L, const char *what) {
  io_lex_skip(L);
  char buf[48];
  return io_lex_error(L, L->p, "expected %s, found %s", what, io_lex_describe(L, L->p, buf));
}

/* ---------- numbers ---------- */

static const double k_pow10[23] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,  1e8,  1e9,  1e10, 1e11,
                                   1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

#if defined(__x86_64__) || defined(__i386__)
#if LDBL_MANT_DIG == 64
#define IO_HAVE_X87_LDOUBLE 1
#endif
#endif

/* Slow path: correctly rounded conversion of the token [s, e). */
static bool slow_strtod(io_lex *L, const char *s, const char *e, double *out) {
  char small[128];
  size_t n = (size_t)(e - s);
  char *tmp = n < sizeof small ? small : malloc(n + 1);
  if (!tmp) return io_lex_error_st(L, MIL_ERR_NOMEM, s, "out of memory reading a number"), false;
  memcpy(tmp, s, n);
  tmp[n] = 0;
  if (!L->c_locale) L->c_locale = (void *)newlocale(LC_ALL_MASK, "C", (locale_t)0);
  if (L->c_locale) *out = strtod_l(tmp, NULL, (locale_t)L->c_locale);
  else *out = strtod(tmp, NULL);
  if (tmp != small) free(tmp);
  return true;
}

/* m * 10^e10 correctly rounded to double, or false when the fast paths
 * cannot decide it. m != 0. */
static bool fast_decimal(uint64_t m, int e10, double *out) {
#if FLT_EVAL_METHOD == 0
  /* Clinger: m and 10^|e10| are exact doubles, one rounding. */
  if (m <= ((uint64_t)1 << 53) && e10 >= -22 && e10 <= 22) {
    *out = e10 >= 0 ? (double)m * k_pow10[e10] : (double)m / k_pow10[-e10];
    return true;
  }
#endif
#ifdef IO_HAVE_X87_LDOUBLE
  /* 64-bit significand: m and 10^|e10| (|e10| <= 27) are exact, so the
   * product/quotient r is within half an extended ulp of the true value.
   * Rounding r to double gives the right answer unless r lies (almost) on
   * a midpoint between two doubles, which shows in its low 11 bits. */
  if (e10 >= -27 && e10 <= 27) {
    static const long double p10l[28] = {
        1e0L,  1e1L,  1e2L,  1e3L,  1e4L,  1e5L,  1e6L,  1e7L,  1e8L,  1e9L,  1e10L, 1e11L, 1e12L, 1e13L,
        1e14L, 1e15L, 1e16L, 1e17L, 1e18L, 1e19L, 1e20L, 1e21L, 1e22L, 1e23L, 1e24L, 1e25L, 1e26L, 1e27L};
    long double r = e10 >= 0 ? (long double)m * p10l[e10] : (long double)m / p10l[-e10];
    unsigned char bytes[sizeof(long double)];
    memcpy(bytes, &r, sizeof r);
    uint64_t mant;
    memcpy(&mant, bytes, 8);
    int exp = (int)((unsigned)bytes[8] | ((unsigned)bytes[9] & 0x7f) << 8) - 16383;
    if (exp < -1022 || exp > 1023) return false; /* subnormal or overflow: let strtod decide */
    uint32_t low = (uint32_t)(mant & 0x7ff);
    if (low >= 0x3ff && low <= 0x401) return false;
    *out = (double)r;
    return true;
  }
#endif
  return false;
}

bool io_lex_number(io_lex *L, io_num *n) { return io_lex_number_ex(L, n, false); }

bool io_lex_number_ex(io_lex *L, io_num *n, bool imag) {
  io_lex_skip(L);
  const char *s = L->p, *p = s, *end = L->end;
  memset(n, 0, sizeof *n);
  if (p < end && (*p == '-' || *p == '+')) {
    n->neg = *p == '-';
    p++;
  }
  /* inf / nan */
  if (end - p >= 3 && (memcmp(p, "inf", 3) == 0 || memcmp(p, "nan", 3) == 0) &&
      (end - p == 3 || !is_ident((unsigned char)p[3]) || (imag && p[3] == 'j'))) {
    n->is_float = true;
    /* one NaN: the text cannot carry a sign or payload, so none is kept */
    n->f = p[0] == 'i' ? (n->neg ? -INFINITY : INFINITY) : NAN;
    L->p = p + 3;
    return true;
  }
  uint64_t m = 0;       /* first 19 significant digits */
  int nsig = 0;         /* significant digits seen */
  int dropped = 0;      /* integer-part digits beyond the 19th */
  bool truncated = false;
  int e10 = 0;
  const char *digits = p;
  while (p < end && is_digit((unsigned char)*p)) {
    unsigned dgt = (unsigned)(*p - '0');
    if (nsig < 19) {
      m = m * 10 + dgt;
      if (m) nsig++;
    } else {
      dropped++;
      if (dgt) truncated = true;
    }
    p++;
  }
  size_t int_digits = (size_t)(p - digits);
  size_t frac_digits = 0;
  if (p < end && *p == '.') {
    n->is_float = true;
    p++;
    const char *f0 = p;
    while (p < end && is_digit((unsigned char)*p)) {
      unsigned dgt = (unsigned)(*p - '0');
      if (nsig < 19) {
        m = m * 10 + dgt;
        if (m) nsig++;
        e10--;
      } else if (dgt) {
        truncated = true;
      }
      p++;
    }
    frac_digits = (size_t)(p - f0);
  }
  if (int_digits == 0 && frac_digits == 0) {
    if (n->is_float) return io_lex_error(L, s, "malformed number '%.*s'", (int)(p - s), s), false;
    return false; /* not a number; nothing consumed */
  }
  e10 += dropped;
  if (p < end && (*p == 'e' || *p == 'E')) {
    const char *e0 = p;
    n->is_float = true;
    p++;
    bool eneg = false;
    if (p < end && (*p == '-' || *p == '+')) eneg = *p++ == '-';
    if (p >= end || !is_digit((unsigned char)*p)) {
      L->p = s;
      return io_lex_error(L, e0, "malformed number: expected exponent digits after '%.*s'", (int)(p - s), s), false;
    }
    int ev = 0;
    while (p < end && is_digit((unsigned char)*p)) {
      if (ev < 100000) ev = ev * 10 + (*p - '0');
      p++;
    }
    e10 += eneg ? -ev : ev;
  }
  if (p < end && (is_ident((unsigned char)*p) || *p == '.') && !(imag && *p == 'j')) {
    const char *q = p;
    while (q < end && (is_ident((unsigned char)*q) || *q == '.')) q++;
    return io_lex_error(L, s, "malformed number '%.*s'", (int)(q - s), s), false;
  }
  L->p = p;
  if (!n->is_float) {
    /* exact integer magnitude */
    uint64_t mag = 0;
    for (const char *q = digits; q < p; q++) {
      if (__builtin_mul_overflow(mag, 10, &mag) || __builtin_add_overflow(mag, (uint64_t)(*q - '0'), &mag)) {
        n->overflow = true;
        break;
      }
    }
    n->mag = mag;
    if (!n->overflow) {
      double v = (double)mag; /* one correctly rounded conversion */
      n->f = n->neg ? -v : v;
      return true;
    }
    return slow_strtod(L, s, p, &n->f);
  }
  double v;
  if (m == 0) v = 0.0;
  else if (truncated || !fast_decimal(m, e10, &v))
    return slow_strtod(L, s, p, &n->f);
  n->f = n->neg ? -v : v;
  return true;
}

/* ---------- strings ---------- */

static int hexval(unsigned char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

static bool buf_reserve(char **buf, size_t *cap, size_t need) {
  if (need <= *cap) return true;
  size_t nc = *cap ? *cap : 64;
  while (nc < need) nc *= 2;
  char *nb = realloc(*buf, nc);
  if (!nb) return false;
  *buf = nb;
  *cap = nc;
  return true;
}

static size_t put_utf8(char *o, uint32_t cp) {
  if (cp < 0x80) {
    o[0] = (char)cp;
    return 1;
  }
  if (cp < 0x800) {
    o[0] = (char)(0xc0 | cp >> 6);
    o[1] = (char)(0x80 | (cp & 0x3f));
    return 2;
  }
  if (cp < 0x10000) {
    o[0] = (char)(0xe0 | cp >> 12);
    o[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
    o[2] = (char)(0x80 | (cp & 0x3f));
    return 3;
  }
  o[0] = (char)(0xf0 | cp >> 18);
  o[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
  o[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
  o[3] = (char)(0x80 | (cp & 0x3f));
  return 4;
}

bool io_lex_string(io_lex *L, char **buf, size_t *cap, size_t *len) {
  io_lex_skip(L);
  const char *open = L->p, *p = open + 1, *end = L->end;
  if (open >= end || (*open != '"' && *open != '\'')) return io_lex_expected(L, "a string"), false;
  char q = *open;
  size_t n = 0;
  for (;;) {
    /* copy the run up to the next quote or backslash */
    const char *r = p;
    while (r < end && *r != q && *r != '\\' && *r != 0) r++;
    if (!buf_reserve(buf, cap, n + (size_t)(r - p) + 8))
      return io_lex_error_st(L, MIL_ERR_NOMEM, open, "out of memory reading a string"), false;
    memcpy(*buf + n, p, (size_t)(r - p));
    n += (size_t)(r - p);
    p = r;
    if (p >= end) return io_lex_error(L, open, "unterminated string (no closing %c)", q), false;
    if (*p == 0) return io_lex_error(L, p, "NUL byte inside a string"), false;
    if (*p == q) break;
    /* escape */
    const char *esc = p++;
    if (p >= end) return io_lex_error(L, open, "unterminated string (no closing %c)", q), false;
    char c = *p++;
    uint32_t cp;
    int ndig = 0;
    switch (c) {
      case '\\': (*buf)[n++] = '\\'; continue;
      case '"': (*buf)[n++] = '"'; continue;
      case '\'': (*buf)[n++] = '\''; continue;
      case 'n': (*buf)[n++] = '\n'; continue;
      case 't': (*buf)[n++] = '\t'; continue;
      case 'r': (*buf)[n++] = '\r'; continue;
      case 'a': (*buf)[n++] = '\a'; continue;
      case 'b': (*buf)[n++] = '\b'; continue;
      case 'f': (*buf)[n++] = '\f'; continue;
      case 'v': (*buf)[n++] = '\v'; continue;
      case 'x': ndig = 2; break;
      case 'u': ndig = 4; break;
      case 'U': ndig = 8; break;
      case '0': return io_lex_error(L, esc, "NUL character (\\0) in a string is not supported"), false;
      default: return io_lex_error(L, esc, "unknown escape '\\%c' in a string", c), false;
    }
    cp = 0;
    for (int i = 0; i < ndig; i++) {
      int h = p < end ? hexval((unsigned char)*p) : -1;
      if (h < 0) return io_lex_error(L, esc, "expected %d hex digits after '\\%c'", ndig, c), false;
      cp = cp << 4 | (uint32_t)h;
      p++;
    }
    if (cp == 0) return io_lex_error(L, esc, "NUL character in a string is not supported"), false;
    if (c == 'x') (*buf)[n++] = (char)cp; /* a raw byte */
    else if (cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
      return io_lex_error(L, esc, "invalid code point U+%X in a string", (unsigned)cp), false;
    else n += put_utf8(*buf + n, cp);
  }
  (*buf)[n] = 0;
  *len = n;
  L->p = p + 1;
  return true;
}
