/* Test helper: MIL program text built in a growing buffer (printf-style
 * appends, checked), and conv weights as const ops. Header-only; include
 * after cmocka.h. */
#ifndef MIL_TESTS_TEXT_BUF_H
#define MIL_TESTS_TEXT_BUF_H

#include <stdarg.h>
#include <stdio.h>

typedef struct text_buf {
  char *s;
  size_t l, cap;
} text_buf;

/* Appends printf(fmt, ...); the test fails when the buffer is full. */
static inline void text_put(text_buf *b, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(b->s + b->l, b->cap - b->l, fmt, ap);
  va_end(ap);
  assert_true(n >= 0 && (size_t)n < b->cap - b->l);
  b->l += (size_t)n;
}

/* A const %name of dtype dt and shape (o, i, k, k) whose values are
 * val(seed + flat index). */
static inline void text_put_weight(text_buf *b, const char *dt, const char *name, int o, int i, int k, int seed,
                                   float (*val)(int)) {
  text_put(b, "    %%%s: (%d, %d, %d, %d, %s)*(Tensor) = const(val=[", name, o, i, k, k, dt);
  for (int a = 0; a < o; a++) {
    text_put(b, "%s[", a ? ", " : "");
    for (int c = 0; c < i; c++) {
      text_put(b, "%s[", c ? ", " : "");
      for (int u = 0; u < k; u++) {
        text_put(b, "%s[", u ? ", " : "");
        for (int v = 0; v < k; v++) text_put(b, "%s%g", v ? ", " : "", val(seed + ((a * i + c) * k + u) * k + v));
        text_put(b, "]");
      }
      text_put(b, "]");
    }
    text_put(b, "]");
  }
  text_put(b, "], name=\"%s\")\n", name);
}

#endif
