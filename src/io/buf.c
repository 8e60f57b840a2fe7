/* mil_buf: the growable byte buffer the printer writes into. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/io_internal.h"

bool io_buf_grow(mil_buf *b, size_t n) {
  if (b->oom) return false;
  if (b->len + n < b->cap) return true;
  if (n > SIZE_MAX / 2 - b->len) {
    b->oom = true;
    return false;
  }
  size_t want = b->len + n + 1;
  size_t cap = b->cap ? b->cap : 256;
  while (cap < want) cap = cap > SIZE_MAX / 2 ? want : cap * 2;
  char *d = realloc(b->data, cap);
  if (!d) {
    b->oom = true;
    return false;
  }
  b->data = d;
  b->cap = cap;
  return true;
}

void mil_buf_free(mil_buf *b) {
  if (!b) return;
  free(b->data);
  b->data = NULL;
  b->len = b->cap = 0;
  b->oom = false;
}

void mil_buf_put(mil_buf *b, const char *s, size_t n) {
  if (!io_buf_reserve(b, n)) return;
  if (n) memcpy(b->data + b->len, s, n);
  b->len += n;
  b->data[b->len] = '\0';
}

void mil_buf_puts(mil_buf *b, const char *s) { mil_buf_put(b, s, strlen(s)); }

void mil_buf_putc(mil_buf *b, char c) {
  if (!io_buf_reserve(b, 1)) return;
  b->data[b->len++] = c;
  b->data[b->len] = '\0';
}

void mil_buf_printf(mil_buf *b, const char *fmt, ...) {
  if (b->oom) return;
  va_list ap;
  va_start(ap, fmt);
  size_t room = b->cap > b->len ? b->cap - b->len : 0;
  int n = vsnprintf(room ? b->data + b->len : NULL, room, fmt, ap);
  va_end(ap);
  if (n < 0) return;
  if ((size_t)n >= room) {
    if (!io_buf_reserve(b, (size_t)n)) return;
    va_start(ap, fmt);
    vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
  }
  b->len += (size_t)n;
}
