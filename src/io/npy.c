/* NumPy .npy reader and writer (format versions 1.0, 2.0, 3.0).
 *
 * Mirrors numpy/lib/format.py: the magic/version/length preamble, the
 * header dict literal (read with a small literal parser instead of
 * Python's safe_eval; keys in any order, any spacing, trailing commas),
 * and numpy.save's exact header layout on output (growth padding of 21
 * digits for the first axis, spaces to a 64-byte boundary, final '\n').
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io/fsafe.h"
#include "mil/npy.h"

#define NPY_MAGIC "\x93NUMPY"
#define NPY_MAGIC_LEN 6
#define NPY_ALIGN 64
#define NPY_GROWTH_DIGITS 21
#define NPY_MAX_HEADER (1u << 20) /* refuse absurd header lengths */

#define ULL(x) ((unsigned long long)(x))

/* ---- dtype table --------------------------------------------------------- */

typedef struct npy_type {
  char kind; /* numpy kind character: f, i, u, b */
  int size;  /* bytes */
  mil_dtype dtype;
  const char *descr; /* what numpy writes */
} npy_type;

static const npy_type k_types[] = {
    {'f', 2, MIL_DT_FP16, "<f2"},  {'f', 4, MIL_DT_FP32, "<f4"},   {'f', 8, MIL_DT_FP64, "<f8"},
    {'i', 1, MIL_DT_INT8, "|i1"},  {'i', 2, MIL_DT_INT16, "<i2"},  {'i', 4, MIL_DT_INT32, "<i4"},
    {'i', 8, MIL_DT_INT64, "<i8"}, {'u', 1, MIL_DT_UINT8, "|u1"},  {'u', 2, MIL_DT_UINT16, "<u2"},
    {'u', 4, MIL_DT_UINT32, "<u4"}, {'u', 8, MIL_DT_UINT64, "<u8"}, {'b', 1, MIL_DT_BOOL, "|b1"},
};
#define N_TYPES (sizeof k_types / sizeof k_types[0])

static const npy_type *type_of_dtype(mil_dtype dt) {
  for (size_t i = 0; i < N_TYPES; i++)
    if (k_types[i].dtype == dt) return &k_types[i];
  return NULL;
}

const char *mil_npy_descr(mil_dtype dt) {
  const npy_type *t = type_of_dtype(dt);
  return t ? t->descr : NULL;
}

/* ---- header parsing ------------------------------------------------------ */

typedef struct pctx {
  const char *name;
  const uint8_t *s; /* header text */
  size_t n, pos;
  uint64_t base; /* file offset of s[0] */
  mil_diag *d;
} pctx;

typedef struct npy_header {
  const npy_type *type;
  bool fortran;
  int rank;
  int64_t shape[MIL_NPY_MAX_RANK];
} npy_header;

/* "'x'", "byte 0x93" or "end of header" for the character at the cursor. */
static const char *found_at(const pctx *c, char *buf, size_t cap) {
  if (c->pos >= c->n) return "end of header";
  uint8_t ch = c->s[c->pos];
  if (ch >= 0x20 && ch < 0x7f) snprintf(buf, cap, "'%c'", ch);
  else snprintf(buf, cap, "byte 0x%02X", ch);
  return buf;
}

__attribute__((format(printf, 3, 4))) static mil_status perr(const pctx *c, mil_status st, const char *fmt, ...) {
  char msg[384];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return mil_diag_error(c->d, st, "%s: npy header at byte %llu: %s", c->name, ULL(c->base + c->pos), msg);
}

static void skip_ws(pctx *c) {
  while (c->pos < c->n) {
    uint8_t ch = c->s[c->pos];
    if (ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r' || ch == '\f' || ch == '\v') c->pos++;
    else break;
  }
}

static bool peek(pctx *c, char ch) {
  skip_ws(c);
  return c->pos < c->n && c->s[c->pos] == (uint8_t)ch;
}

static mil_status expect(pctx *c, char ch, const char *what) {
  char fb[16];
  if (peek(c, ch)) {
    c->pos++;
    return MIL_OK;
  }
  return perr(c, MIL_ERR_FORMAT, "expected '%c' %s, found %s", ch, what, found_at(c, fb, sizeof fb));
}

/* A Python string literal ('...' or "...", optional u/b prefix, backslash
 * escapes kept verbatim). Sets [*str, *str + *len) to the raw contents. */
static mil_status parse_string(pctx *c, const char **str, size_t *len, const char *what) {
  char fb[16];
  skip_ws(c);
  size_t p = c->pos;
  if (p < c->n && (c->s[p] == 'u' || c->s[p] == 'b' || c->s[p] == 'U' || c->s[p] == 'B')) p++;
  if (p >= c->n || (c->s[p] != '\'' && c->s[p] != '"'))
    return perr(c, MIL_ERR_FORMAT, "expected a string %s, found %s", what, found_at(c, fb, sizeof fb));
  uint8_t q = c->s[p++];
  size_t start = p;
  while (p < c->n && c->s[p] != q) {
    if (c->s[p] == '\n') break;
    p += c->s[p] == '\\' ? 2 : 1;
  }
  if (p >= c->n || c->s[p] != q) return perr(c, MIL_ERR_FORMAT, "unterminated string %s", what);
  *str = (const char *)c->s + start;
  *len = p - start;
  c->pos = p + 1;
  return MIL_OK;
}

static bool word_is(const pctx *c, const char *w) {
  size_t k = strlen(w);
  if (c->n - c->pos < k || memcmp(c->s + c->pos, w, k) != 0) return false;
  if (c->pos + k < c->n) {
    uint8_t ch = c->s[c->pos + k];
    if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '_') return false;
  }
  return true;
}

static mil_status parse_descr(pctx *c, npy_header *h) {
  skip_ws(c);
  size_t at = c->pos;
  if (c->pos < c->n && (c->s[c->pos] == '[' || c->s[c->pos] == '('))
    return perr(c, MIL_ERR_UNSUPPORTED, "'descr' is a structured dtype (a list of fields); only plain numeric and "
                "bool arrays are supported");
  const char *s;
  size_t len;
  mil_status st = parse_string(c, &s, &len, "for 'descr'");
  if (st != MIL_OK) return st;
  char order = '|';
  const char *p = s;
  size_t k = len;
  if (k > 0 && (p[0] == '<' || p[0] == '>' || p[0] == '|' || p[0] == '=')) {
    order = p[0];
    p++;
    k--;
  }
  const npy_type *t = NULL;
  if (k == 1 && p[0] == '?') {
    t = type_of_dtype(MIL_DT_BOOL);
  } else if (k == 2 && p[1] >= '1' && p[1] <= '8') {
    for (size_t i = 0; i < N_TYPES; i++)
      if (k_types[i].kind == p[0] && k_types[i].size == p[1] - '0') t = &k_types[i];
  }
  int shown = (int)(len > 40 ? 40 : len);
  if (!t) {
    c->pos = at;
    return perr(c, MIL_ERR_UNSUPPORTED,
                "'descr' '%.*s' is not a supported dtype; expected one of <f2 <f4 <f8 |i1 <i2 <i4 <i8 |u1 <u2 <u4 "
                "<u8 |b1",
                shown, s);
  }
  if (order == '>' && t->size > 1) {
    c->pos = at;
    return perr(c, MIL_ERR_UNSUPPORTED,
                "'descr' '%.*s' is big-endian; only little-endian ('<') or '|' data is supported", shown, s);
  }
  h->type = t;
  return MIL_OK;
}

static mil_status parse_bool(pctx *c, bool *out) {
  char fb[16];
  skip_ws(c);
  if (word_is(c, "True")) {
    *out = true;
    c->pos += 4;
  } else if (word_is(c, "False")) {
    *out = false;
    c->pos += 5;
  } else {
    return perr(c, MIL_ERR_FORMAT, "expected True or False for 'fortran_order', found %s", found_at(c, fb, sizeof fb));
  }
  return MIL_OK;
}

static mil_status parse_shape(pctx *c, npy_header *h) {
  char fb[16];
  skip_ws(c);
  if (c->pos >= c->n || c->s[c->pos] != '(')
    return perr(c, MIL_ERR_FORMAT, "expected a tuple such as (1, 3) or () for 'shape', found %s",
                found_at(c, fb, sizeof fb));
  c->pos++;
  int rank = 0;
  bool comma_after_last = false;
  for (;;) {
    if (peek(c, ')')) {
      c->pos++;
      break;
    }
    if (rank > 0 && !comma_after_last)
      return perr(c, MIL_ERR_FORMAT, "expected ',' or ')' in 'shape', found %s", found_at(c, fb, sizeof fb));
    skip_ws(c);
    if (c->pos < c->n && (c->s[c->pos] == '-'))
      return perr(c, MIL_ERR_FORMAT, "dimension %d of 'shape' is negative", rank);
    if (c->pos < c->n && c->s[c->pos] == '+') c->pos++;
    if (c->pos >= c->n || c->s[c->pos] < '0' || c->s[c->pos] > '9')
      return perr(c, MIL_ERR_FORMAT, "expected a non-negative integer in 'shape', found %s", found_at(c, fb, sizeof fb));
    uint64_t v = 0;
    while (c->pos < c->n && c->s[c->pos] >= '0' && c->s[c->pos] <= '9') {
      unsigned dgt = (unsigned)(c->s[c->pos] - '0');
      if (v > ((uint64_t)INT64_MAX - dgt) / 10)
        return perr(c, MIL_ERR_FORMAT, "dimension %d of 'shape' overflows a 64-bit integer", rank);
      v = v * 10 + dgt;
      c->pos++;
    }
    if (c->pos < c->n && (c->s[c->pos] == 'L' || c->s[c->pos] == 'l')) c->pos++; /* Python 2 long */
    if (rank >= MIL_NPY_MAX_RANK)
      return perr(c, MIL_ERR_FORMAT, "'shape' has more than %d dimensions", MIL_NPY_MAX_RANK);
    h->shape[rank++] = (int64_t)v;
    comma_after_last = peek(c, ',');
    if (comma_after_last) c->pos++;
  }
  if (rank == 1 && !comma_after_last) {
    c->pos--;
    return perr(c, MIL_ERR_FORMAT, "'shape' (%lld) is a parenthesized integer, not a tuple; expected (%lld,)",
                (long long)h->shape[0], (long long)h->shape[0]);
  }
  h->rank = rank;
  return MIL_OK;
}

/* Parses the whole dict literal. */
static mil_status parse_header(pctx *c, npy_header *h) {
  char fb[16];
  bool have_descr = false, have_fortran = false, have_shape = false;
  mil_status st = expect(c, '{', "at the start of the header dict");
  if (st != MIL_OK) return st;
  for (;;) {
    if (peek(c, '}')) {
      c->pos++;
      break;
    }
    size_t key_at = c->pos;
    const char *key;
    size_t klen;
    if ((st = parse_string(c, &key, &klen, "as a header key")) != MIL_OK) return st;
    if ((st = expect(c, ':', "after a header key")) != MIL_OK) return st;
    bool *have;
    if (klen == 5 && memcmp(key, "descr", 5) == 0) have = &have_descr;
    else if (klen == 13 && memcmp(key, "fortran_order", 13) == 0) have = &have_fortran;
    else if (klen == 5 && memcmp(key, "shape", 5) == 0) have = &have_shape;
    else {
      c->pos = key_at;
      skip_ws(c);
      return perr(c, MIL_ERR_FORMAT, "unexpected key '%.*s'; expected only 'descr', 'fortran_order' and 'shape'",
                  (int)(klen > 40 ? 40 : klen), key);
    }
    if (*have) {
      c->pos = key_at;
      skip_ws(c);
      return perr(c, MIL_ERR_FORMAT, "duplicate key '%.*s'", (int)klen, key);
    }
    *have = true;
    if (have == &have_descr) st = parse_descr(c, h);
    else if (have == &have_fortran) st = parse_bool(c, &h->fortran);
    else st = parse_shape(c, h);
    if (st != MIL_OK) return st;
    if (peek(c, ',')) {
      c->pos++;
    } else if (!peek(c, '}')) {
      return perr(c, MIL_ERR_FORMAT, "expected ',' or '}' after a header value, found %s", found_at(c, fb, sizeof fb));
    }
  }
  skip_ws(c);
  if (c->pos < c->n)
    return perr(c, MIL_ERR_FORMAT, "expected only padding after the header dict, found %s", found_at(c, fb, sizeof fb));
  if (!have_descr || !have_fortran || !have_shape)
    return perr(c, MIL_ERR_FORMAT, "header dict lacks the key '%s'",
                !have_descr ? "descr" : !have_fortran ? "fortran_order" : "shape");
  if (h->fortran)
    return perr(c, MIL_ERR_UNSUPPORTED, "'fortran_order' is True; only C-order arrays are supported");
  return MIL_OK;
}

/* Checks magic and version and finds the header: sets *hstart, *hlen.
 * `avail` is how many bytes of the preamble are present. */
static mil_status parse_preamble(const char *name, const uint8_t *b, uint64_t avail, int *major, int *minor,
                                 size_t *hstart, uint64_t *hlen, mil_diag *d) {
  if (avail < NPY_MAGIC_LEN + 2 || memcmp(b, NPY_MAGIC, NPY_MAGIC_LEN) != 0) {
    if (avail >= NPY_MAGIC_LEN && memcmp(b, NPY_MAGIC, NPY_MAGIC_LEN) != 0)
      return mil_diag_error(d, MIL_ERR_FORMAT,
                            "%s: byte 0: magic %02X %02X %02X %02X %02X %02X, expected \\x93NUMPY (not a .npy file)",
                            name, b[0], b[1], b[2], b[3], b[4], b[5]);
    return mil_diag_error(d, MIL_ERR_FORMAT, "%s: byte %llu: file ends inside the .npy magic/version (%llu bytes)",
                          name, ULL(avail), ULL(avail));
  }
  *major = b[6];
  *minor = b[7];
  if (*minor != 0 || *major < 1 || *major > 3)
    return mil_diag_error(d, MIL_ERR_FORMAT, "%s: byte 6: format version %d.%d, expected 1.0, 2.0 or 3.0", name,
                          *major, *minor);
  size_t lsz = *major == 1 ? 2 : 4;
  if (avail < 8 + lsz)
    return mil_diag_error(d, MIL_ERR_FORMAT, "%s: byte %llu: file ends inside the header length field (%llu bytes)",
                          name, ULL(avail), ULL(avail));
  *hlen = lsz == 2 ? (uint64_t)(b[8] | b[9] << 8)
                   : (uint64_t)b[8] | (uint64_t)b[9] << 8 | (uint64_t)b[10] << 16 | (uint64_t)b[11] << 24;
  *hstart = 8 + lsz;
  if (*hlen > NPY_MAX_HEADER)
    return mil_diag_error(d, MIL_ERR_FORMAT, "%s: byte 8: header length %llu, expected at most %u", name, ULL(*hlen),
                          NPY_MAX_HEADER);
  return MIL_OK;
}

/* Parses the header text and computes the data size. */
static mil_status decode_header(const char *name, const uint8_t *htext, size_t hlen, size_t hstart, npy_header *h,
                                uint64_t *numel, uint64_t *nbytes, mil_diag *d) {
  pctx c = {name, htext, hlen, 0, hstart, d};
  memset(h, 0, sizeof *h);
  mil_status st = parse_header(&c, h);
  if (st != MIL_OK) return st;
  uint64_t n = 1;
  for (int i = 0; i < h->rank; i++) {
    uint64_t v = (uint64_t)h->shape[i];
    if (v != 0 && n > (uint64_t)INT64_MAX / v)
      return mil_diag_error(d, MIL_ERR_FORMAT, "%s: npy header at byte %llu: 'shape' element count overflows 64 bits",
                            name, ULL(hstart));
    n *= v;
  }
  uint64_t es = (uint64_t)h->type->size;
  if (n > (uint64_t)INT64_MAX / es || n * es > (uint64_t)SIZE_MAX)
    return mil_diag_error(d, MIL_ERR_FORMAT, "%s: npy header at byte %llu: 'shape' of %llu elements overflows the "
                          "addressable size", name, ULL(hstart), ULL(n));
  *numel = n;
  *nbytes = n * es;
  return MIL_OK;
}

static mil_status make_array(const char *name, const npy_header *h, int major, int minor, uint64_t numel,
                             uint64_t nbytes, mil_npy **out, mil_diag *d) {
  mil_npy *a = calloc(1, sizeof *a);
  if (!a) return mil_diag_error(d, MIL_ERR_NOMEM, "%s: out of memory", name);
  if (nbytes && !(a->data = malloc((size_t)nbytes))) {
    free(a);
    return mil_diag_error(d, MIL_ERR_NOMEM, "%s: out of memory for %llu bytes of array data", name, ULL(nbytes));
  }
  a->dtype = h->type->dtype;
  a->rank = h->rank;
  memcpy(a->shape, h->shape, sizeof a->shape);
  a->numel = (int64_t)numel;
  a->nbytes = (size_t)nbytes;
  a->version_major = major;
  a->version_minor = minor;
  *out = a;
  return MIL_OK;
}

static void normalize_bools(mil_npy *a) {
  if (a->dtype != MIL_DT_BOOL) return;
  uint8_t *p = a->data;
  for (size_t i = 0; i < a->nbytes; i++) p[i] = p[i] != 0;
}

static void warn_trailing(const char *name, uint64_t end, uint64_t size, mil_diag *d) {
  if (size > end)
    mil_diag_add(d, MIL_SEV_WARNING, "%s: byte %llu: %llu trailing bytes after the array data ignored", name, ULL(end),
                 ULL(size - end));
}

void mil_npy_free(mil_npy *a) {
  if (!a) return;
  free(a->data);
  free(a);
}

/* ---- reading from memory ------------------------------------------------- */

mil_status mil_npy_read_mem(const void *buf, size_t len, const char *name, mil_npy **out, mil_diag *d) {
  if (out) *out = NULL;
  if (!name) name = "<memory>";
  if (!out || (!buf && len)) return mil_diag_error(d, MIL_ERR_INVALID, "%s: mil_npy_read_mem: NULL argument", name);
  const uint8_t *b = buf;
  int major = 0, minor = 0; /* set by parse_preamble (initialised for GCC's -O3 flow analysis) */
  size_t hstart = 0;
  uint64_t hlen = 0;
  mil_status st = parse_preamble(name, b, len, &major, &minor, &hstart, &hlen, d);
  if (st != MIL_OK) return st;
  if (hlen > len - hstart)
    return mil_diag_error(d, MIL_ERR_FORMAT,
                          "%s: byte %llu: header of %llu bytes extends past the end of the file (%llu bytes)", name,
                          ULL(hstart), ULL(hlen), ULL(len));
  npy_header h;
  uint64_t numel, nbytes;
  if ((st = decode_header(name, b + hstart, (size_t)hlen, hstart, &h, &numel, &nbytes, d)) != MIL_OK) return st;
  uint64_t dstart = hstart + hlen;
  if (nbytes > len - dstart)
    return mil_diag_error(d, MIL_ERR_FORMAT,
                          "%s: byte %llu: data of %llu bytes expected for %llu %s elements, found %llu bytes", name,
                          ULL(dstart), ULL(nbytes), ULL(numel), h.type->descr, ULL(len - dstart));
  mil_npy *a;
  if ((st = make_array(name, &h, major, minor, numel, nbytes, &a, d)) != MIL_OK) return st;
  if (nbytes) memcpy(a->data, b + dstart, (size_t)nbytes);
  normalize_bools(a);
  warn_trailing(name, dstart + nbytes, len, d);
  *out = a;
  return MIL_OK;
}

/* ---- reading from a file ------------------------------------------------- */

/* Reads up to n bytes at the current position; returns the count or -1. */
static ssize_t read_full(int fd, void *p, size_t n) {
  size_t got = 0;
  while (got < n) {
    ssize_t r = read(fd, (uint8_t *)p + got, n - got);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return -1;
    if (r == 0) break;
    got += (size_t)r;
  }
  return (ssize_t)got;
}

/* Non-regular files (pipes): slurp and parse from memory. */
static mil_status read_stream(int fd, const char *path, mil_npy **out, mil_diag *d) {
  size_t cap = 1 << 16, len = 0;
  uint8_t *buf = malloc(cap);
  if (!buf) return mil_diag_error(d, MIL_ERR_NOMEM, "%s: out of memory", path);
  for (;;) {
    if (len == cap) {
      uint8_t *nb = cap <= SIZE_MAX / 2 ? realloc(buf, cap * 2) : NULL;
      if (!nb) {
        free(buf);
        return mil_diag_error(d, MIL_ERR_NOMEM, "%s: out of memory", path);
      }
      buf = nb;
      cap *= 2;
    }
    ssize_t r = read(fd, buf + len, cap - len);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) {
      int e = errno;
      free(buf);
      return mil_diag_error(d, MIL_ERR_IO, "%s: read failed at byte %zu: %s", path, len, strerror(e));
    }
    if (r == 0) break;
    len += (size_t)r;
  }
  mil_status st = mil_npy_read_mem(buf, len, path, out, d);
  free(buf);
  return st;
}

static mil_status read_fd(int fd, const char *path, uint64_t size, mil_npy **out, mil_diag *d) {
  uint8_t pre[12];
  ssize_t r = read_full(fd, pre, sizeof pre);
  if (r < 0) return mil_diag_error(d, MIL_ERR_IO, "%s: read failed at byte 0: %s", path, strerror(errno));
  int major = 0, minor = 0; /* set by parse_preamble (initialised for GCC's -O3 flow analysis) */
  size_t hstart = 0;
  uint64_t hlen = 0;
  mil_status st = parse_preamble(path, pre, (uint64_t)r, &major, &minor, &hstart, &hlen, d);
  if (st != MIL_OK) return st;
  if (hlen > size - hstart)
    return mil_diag_error(d, MIL_ERR_FORMAT,
                          "%s: byte %llu: header of %llu bytes extends past the end of the file (%llu bytes)", path,
                          ULL(hstart), ULL(hlen), ULL(size));
  uint8_t *htext = malloc(hlen ? (size_t)hlen : 1);
  if (!htext) return mil_diag_error(d, MIL_ERR_NOMEM, "%s: out of memory", path);
  if (lseek(fd, (off_t)hstart, SEEK_SET) < 0 || read_full(fd, htext, (size_t)hlen) != (ssize_t)hlen) {
    free(htext);
    return mil_diag_error(d, MIL_ERR_IO, "%s: byte %llu: cannot read the %llu-byte header", path, ULL(hstart),
                          ULL(hlen));
  }
  npy_header h;
  uint64_t numel, nbytes;
  st = decode_header(path, htext, (size_t)hlen, hstart, &h, &numel, &nbytes, d);
  free(htext);
  if (st != MIL_OK) return st;
  uint64_t dstart = hstart + hlen;
  if (nbytes > size - dstart)
    return mil_diag_error(d, MIL_ERR_FORMAT,
                          "%s: byte %llu: data of %llu bytes expected for %llu %s elements, found %llu bytes", path,
                          ULL(dstart), ULL(nbytes), ULL(numel), h.type->descr, ULL(size - dstart));
  mil_npy *a;
  if ((st = make_array(path, &h, major, minor, numel, nbytes, &a, d)) != MIL_OK) return st;
  if (nbytes) {
    if (lseek(fd, (off_t)dstart, SEEK_SET) < 0) r = -1;
    else r = read_full(fd, a->data, (size_t)nbytes);
    if (r != (ssize_t)nbytes) {
      int e = errno;
      mil_npy_free(a);
      return mil_diag_error(d, r < 0 ? MIL_ERR_IO : MIL_ERR_FORMAT, "%s: byte %llu: cannot read %llu bytes of data: %s",
                            path, ULL(dstart), ULL(nbytes), r < 0 ? strerror(e) : "file shrank while reading");
    }
  }
  normalize_bools(a);
  warn_trailing(path, dstart + nbytes, size, d);
  *out = a;
  return MIL_OK;
}

mil_status mil_npy_read(const char *path, mil_npy **out, mil_diag *d) {
  if (out) *out = NULL;
  if (!path || !out) return mil_diag_error(d, MIL_ERR_INVALID, "mil_npy_read: NULL path or out");
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return mil_diag_error(d, MIL_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
  struct stat stt;
  mil_status st;
  if (fstat(fd, &stt) != 0) st = mil_diag_error(d, MIL_ERR_IO, "%s: cannot stat: %s", path, strerror(errno));
  else if (S_ISDIR(stt.st_mode)) st = mil_diag_error(d, MIL_ERR_IO, "%s: is a directory, expected a .npy file", path);
  else if (S_ISREG(stt.st_mode)) st = read_fd(fd, path, (uint64_t)stt.st_size, out, d);
  else st = read_stream(fd, path, out, d);
  close(fd);
  return st;
}

/* ---- writing ------------------------------------------------------------- */

/* numpy.save's header for (descr, C order, shape): the dict repr with keys
 * sorted, 21 - len(str(shape[0])) spaces of growth room (rank >= 1), then
 * spaces so that preamble + header + '\n' is a multiple of 64 (a full 64
 * when it already is). Returns the total preamble + header size. */
static size_t build_header(char *out, size_t cap, const char *descr, int rank, const int64_t *shape) {
  char dict[1024];
  size_t k = (size_t)snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': False, 'shape': (", descr);
  for (int i = 0; i < rank; i++)
    k += (size_t)snprintf(dict + k, sizeof dict - k, i ? ", %lld" : "%lld", (long long)shape[i]);
  k += (size_t)snprintf(dict + k, sizeof dict - k, "%s), }", rank == 1 ? "," : "");
  if (rank > 0) {
    char first[24];
    int fl = snprintf(first, sizeof first, "%lld", (long long)shape[0]);
    for (int i = fl; i < NPY_GROWTH_DIGITS; i++) dict[k++] = ' ';
  }
  size_t hlen = k + 1;
  size_t pre = NPY_MAGIC_LEN + 2 + 2;
  size_t padlen = NPY_ALIGN - ((pre + hlen) % NPY_ALIGN);
  size_t total = pre + hlen + padlen;
  if (total > cap) return 0;
  memcpy(out, NPY_MAGIC, NPY_MAGIC_LEN);
  out[6] = 1;
  out[7] = 0;
  size_t field = hlen + padlen;
  out[8] = (char)(field & 0xff);
  out[9] = (char)(field >> 8);
  memcpy(out + pre, dict, k);
  memset(out + pre + k, ' ', padlen);
  out[total - 1] = '\n';
  return total;
}

static bool write_all_fd(int fd, const void *p, size_t n) {
  const uint8_t *b = p;
  while (n > 0) {
    size_t chunk = n > (1u << 30) ? (1u << 30) : n;
    ssize_t r = write(fd, b, chunk);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    b += r;
    n -= (size_t)r;
  }
  return true;
}

mil_status mil_npy_write(const char *path, mil_dtype dt, int rank, const int64_t *shape, const void *data,
                         mil_diag *d) {
  if (!path) return mil_diag_error(d, MIL_ERR_INVALID, "mil_npy_write: NULL path");
  const npy_type *t = type_of_dtype(dt);
  if (!t)
    return mil_diag_error(d, MIL_ERR_UNSUPPORTED, "%s: dtype %s has no .npy representation here; expected fp16, "
                          "fp32, fp64, int8..int64, uint8..uint64 or bool", path, mil_dtype_name(dt));
  if (rank < 0 || rank > MIL_NPY_MAX_RANK || (rank > 0 && !shape))
    return mil_diag_error(d, MIL_ERR_INVALID, "%s: rank %d, expected 0..%d with a shape", path, rank, MIL_NPY_MAX_RANK);
  uint64_t n = 1;
  for (int i = 0; i < rank; i++) {
    if (shape[i] < 0)
      return mil_diag_error(d, MIL_ERR_INVALID, "%s: dimension %d is %lld, expected >= 0", path, i,
                            (long long)shape[i]);
    if (shape[i] != 0 && n > (uint64_t)INT64_MAX / (uint64_t)shape[i])
      return mil_diag_error(d, MIL_ERR_INVALID, "%s: shape element count overflows 64 bits", path);
    n *= (uint64_t)shape[i];
  }
  if (n > SIZE_MAX / (size_t)t->size)
    return mil_diag_error(d, MIL_ERR_INVALID, "%s: array of %llu elements is too large", path, ULL(n));
  size_t nbytes = (size_t)n * (size_t)t->size;
  if (nbytes && !data) return mil_diag_error(d, MIL_ERR_INVALID, "%s: NULL data for %llu elements", path, ULL(n));

  char hdr[2048];
  size_t hsize = build_header(hdr, sizeof hdr, t->descr, rank, shape);
  if (!hsize) return mil_diag_error(d, MIL_ERR_INVALID, "%s: header too long", path);

  size_t plen = strlen(path);
  char *tmp = malloc(plen + 48);
  if (!tmp) return mil_diag_error(d, MIL_ERR_NOMEM, "%s: out of memory", path);
  static unsigned counter;
  int fd = -1;
  for (int attempt = 0; attempt < 100 && fd < 0; attempt++) {
    unsigned c = __atomic_add_fetch(&counter, 1, __ATOMIC_RELAXED);
    snprintf(tmp, plen + 48, "%s.tmp.%ld.%u", path, (long)getpid(), c);
    fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd < 0 && errno != EEXIST) break;
  }
  if (fd < 0) {
    int e = errno;
    free(tmp);
    return mil_diag_error(d, MIL_ERR_IO, "%s: cannot create a temporary file next to it: %s", path, strerror(e));
  }
  const char *reg[] = {tmp};
  int slot = io_tmp_register(reg, 1); /* removed if a signal interrupts the write */
  mil_status st = MIL_OK;
  if (!write_all_fd(fd, hdr, hsize))
    st = mil_diag_error(d, MIL_ERR_IO, "%s: write of the header failed at byte 0: %s", tmp, strerror(errno));
  else if (nbytes && !write_all_fd(fd, data, nbytes))
    st = mil_diag_error(d, MIL_ERR_IO, "%s: write of %zu data bytes at byte %zu failed: %s", tmp, nbytes, hsize,
                        strerror(errno));
  if (close(fd) != 0 && st == MIL_OK)
    st = mil_diag_error(d, MIL_ERR_IO, "%s: close failed: %s", tmp, strerror(errno));
  if (st == MIL_OK && rename(tmp, path) != 0)
    st = mil_diag_error(d, MIL_ERR_IO, "%s: cannot rename the temporary file into place: %s", path, strerror(errno));
  if (st != MIL_OK) unlink(tmp);
  io_tmp_unregister(slot);
  free(tmp);
  return st;
}
