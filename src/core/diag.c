/* Diagnostics sink, status names, and the escaping of text from a model
 * for terminals and file names (mil_escape). */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mil/status.h"

const char *mil_status_str(mil_status s) {
  switch (s) {
  case MIL_OK: return "ok";
  case MIL_ERR_PARSE: return "parse error";
  case MIL_ERR_IO: return "I/O error";
  case MIL_ERR_FORMAT: return "format error";
  case MIL_ERR_TYPE: return "type error";
  case MIL_ERR_INVALID: return "invalid";
  case MIL_ERR_NOMEM: return "out of memory";
  case MIL_ERR_UNSUPPORTED: return "unsupported";
  case MIL_ERR_NOT_FOUND: return "not found";
  }
  return "unknown status";
}

/* ---- escaping ------------------------------------------------------------ */

/* Length of the valid UTF-8 sequence at p (at most n bytes), 0 when it is
 * not one: overlong forms, surrogates and code points above U+10FFFF are
 * invalid (RFC 3629). */
static size_t utf8_seq(const unsigned char *p, size_t n) {
  unsigned char c = p[0];
  if (c < 0x80) return 1;
  size_t k;
  unsigned char lo = 0x80, hi = 0xbf;
  if (c >= 0xc2 && c <= 0xdf) k = 2;
  else if (c >= 0xe0 && c <= 0xef) k = 3, lo = c == 0xe0 ? 0xa0 : 0x80, hi = c == 0xed ? 0x9f : 0xbf;
  else if (c >= 0xf0 && c <= 0xf4) k = 4, lo = c == 0xf0 ? 0x90 : 0x80, hi = c == 0xf4 ? 0x8f : 0xbf;
  else return 0;
  if (n < k || p[1] < lo || p[1] > hi) return 0;
  for (size_t i = 2; i < k; i++)
    if (p[i] < 0x80 || p[i] > 0xbf) return 0;
  return k;
}

/* Bytes [i, i+k) of s to keep as they are, or 0 when s[i] is escaped. */
static size_t keep_len(const unsigned char *s, size_t n, size_t i, unsigned flags) {
  unsigned char c = s[i];
  if (c < 0x20 || c == 0x7f) return 0;            /* C0 controls, DEL */
  if (c == '/' && (flags & MIL_ESCAPE_FILE_NAME)) return 0;
  size_t k = utf8_seq(s + i, n - i);
  if (k == 2 && c == 0xc2 && s[i + 1] < 0xa0) return 0; /* C1 controls U+0080..U+009F */
  return k;
}

size_t mil_escape(const char *str, char *out, size_t cap, unsigned flags) {
  static const char hex[] = "0123456789abcdef";
  const unsigned char *s = (const unsigned char *)(str ? str : "");
  size_t n = strlen((const char *)s), o = 0;
  for (size_t i = 0; i < n;) {
    size_t k = keep_len(s, n, i, flags);
    char esc[4];
    const char *src = (const char *)s + i;
    size_t m = k;
    if (!k) {
      if (s[i] == '/') {
        esc[0] = '_';
        m = 1;
      } else {
        esc[0] = (flags & MIL_ESCAPE_FILE_NAME) ? '%' : '\\';
        m = (flags & MIL_ESCAPE_FILE_NAME) ? 3 : 4;
        size_t h = m - 2;
        if (m == 4) esc[1] = 'x';
        esc[h] = hex[s[i] >> 4];
        esc[h + 1] = hex[s[i] & 15];
      }
      src = esc;
      k = 1;
    }
    for (size_t j = 0; j < m; j++, o++)
      if (o + 1 < cap) out[o] = src[j];
    i += k;
  }
  if (cap) out[o < cap ? o : cap - 1] = 0;
  return o;
}

bool mil_escape_needed(const char *str, unsigned flags) {
  const unsigned char *s = (const unsigned char *)(str ? str : "");
  size_t n = strlen((const char *)s);
  for (size_t i = 0; i < n;) {
    size_t k = keep_len(s, n, i, flags);
    if (!k) return true;
    i += k;
  }
  return false;
}

const char *mil_escaped(const char *s, char *buf, size_t cap) {
  if (!s) return "";
  if (!mil_escape_needed(s, 0)) return s;
  size_t need = mil_escape(s, buf, cap, 0);
  if (need >= cap && cap >= 4) memcpy(buf + cap - 4, "...", 4); /* cut: say so */
  return buf;
}

/* ---- diagnostics --------------------------------------------------------- */

void mil_diag_init(mil_diag *d) { memset(d, 0, sizeof *d); }

void mil_diag_clear(mil_diag *d) {
  if (!d) return;
  for (size_t i = 0; i < d->count; i++) free(d->msgs[i].text);
  free(d->msgs);
  size_t keep = d->max_msgs;
  memset(d, 0, sizeof *d);
  d->max_msgs = keep;
}

mil_status mil_diag_vadd(mil_diag *d, mil_severity sev, const char *fmt, va_list ap) {
  mil_status ret = sev == MIL_SEV_ERROR ? MIL_ERR_INVALID : MIL_OK;
  if (!d) return ret;
  if (sev == MIL_SEV_ERROR) d->n_errors++;
  else if (sev == MIL_SEV_WARNING) d->n_warnings++;
  size_t max = d->max_msgs ? d->max_msgs : 1000;
  if (d->count >= max) return ret;
  va_list ap2;
  va_copy(ap2, ap);
  int n = vsnprintf(NULL, 0, fmt, ap2);
  va_end(ap2);
  if (n < 0) return ret;
  char *text = malloc((size_t)n + 1);
  if (!text) return ret;
  vsnprintf(text, (size_t)n + 1, fmt, ap);
  /* names and bytes from a model reach terminals through messages */
  if (mil_escape_needed(text, 0)) {
    size_t en = mil_escape(text, NULL, 0, 0);
    char *e = malloc(en + 1);
    if (!e) {
      free(text);
      return ret;
    }
    mil_escape(text, e, en + 1, 0);
    free(text);
    text = e;
  }
  if (d->count == d->cap) {
    size_t nc = d->cap ? d->cap * 2 : 8;
    mil_diag_msg *nm = realloc(d->msgs, nc * sizeof *nm);
    if (!nm) {
      free(text);
      return ret;
    }
    d->msgs = nm;
    d->cap = nc;
  }
  d->msgs[d->count].severity = sev;
  d->msgs[d->count].text = text;
  d->count++;
  return ret;
}

mil_status mil_diag_add(mil_diag *d, mil_severity sev, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  mil_status s = mil_diag_vadd(d, sev, fmt, ap);
  va_end(ap);
  return s;
}

mil_status mil_diag_error(mil_diag *d, mil_status st, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  mil_diag_vadd(d, MIL_SEV_ERROR, fmt, ap);
  va_end(ap);
  return st;
}

const char *mil_diag_first_error(const mil_diag *d) {
  if (!d) return NULL;
  for (size_t i = 0; i < d->count; i++)
    if (d->msgs[i].severity == MIL_SEV_ERROR) return d->msgs[i].text;
  return NULL;
}
