/* Values as MIL text literals.
 *
 * A tensor prints as the nested Python list of its shape (a rank-0 tensor
 * or scalar as a bare literal), which is what coremltools shows for an
 * inline const: str(val.tolist()) (operation.py Operation.var_to_str).
 * Floats are widened to double and printed with repr() rules, ints as
 * integers, bools as True / False.
 *
 * The complete form (the .mil format) prints every element and escapes
 * strings so that the parser reads the same bytes back; the coremltools
 * form prints a str scalar in double quotes with no escaping, and strings
 * inside a list the way Python's repr() does.
 */
#include <stdlib.h>
#include <string.h>

#include "io/io_internal.h"

void io_out_drain(io_out *o) {
  if (!o->f || o->b->len == 0) return;
  if (!o->err && fwrite(o->b->data, 1, o->b->len, o->f) != o->b->len) o->err = true;
  o->b->len = 0;
  o->b->data[0] = '\0';
}

static inline void out_put(io_out *o, const char *s, size_t n) {
  if (!io_out_room(o, n)) return;
  memcpy(o->b->data + o->b->len, s, n);
  o->b->len += n;
}

static inline void out_rep(io_out *o, char c, size_t n) {
  if (!io_out_room(o, n)) return;
  memset(o->b->data + o->b->len, c, n);
  o->b->len += n;
}

/* ---------- strings ---------- */

static const char k_hex[] = "0123456789abcdef";

void io_print_name(io_out *o, const char *s) {
  if (!mil_escape_needed(s, 0)) {
    out_put(o, s, strlen(s));
    return;
  }
  size_t n = mil_escape(s, NULL, 0, 0);
  if (!io_out_room(o, n + 1)) return;
  mil_escape(s, o->b->data + o->b->len, n + 1, 0);
  o->b->len += n;
}

void io_print_string(io_out *o, const char *s, bool complete) {
  size_t n = strlen(s);
  if (!complete) { /* as it is, but never a control byte or invalid UTF-8 */
    out_put(o, "\"", 1);
    io_print_name(o, s);
    out_put(o, "\"", 1);
    return;
  }
  if (!io_out_room(o, 4 * n + 2)) return;
  char *p = o->b->data + o->b->len;
  *p++ = '"';
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)s[i];
    if (c == '"' || c == '\\') {
      *p++ = '\\';
      *p++ = (char)c;
    } else if (c >= 0x20 && c != 0x7f) {
      *p++ = (char)c;
    } else if (c == '\n') {
      *p++ = '\\';
      *p++ = 'n';
    } else if (c == '\t') {
      *p++ = '\\';
      *p++ = 't';
    } else if (c == '\r') {
      *p++ = '\\';
      *p++ = 'r';
    } else {
      *p++ = '\\';
      *p++ = 'x';
      *p++ = k_hex[c >> 4];
      *p++ = k_hex[c & 15];
    }
  }
  *p++ = '"';
  o->b->len = (size_t)(p - o->b->data);
}

/* Python's repr() of a str (single quotes unless the text has a ' and no "). */
static void print_py_repr_str(io_out *o, const char *s) {
  size_t n = strlen(s);
  char q = strchr(s, '\'') && !strchr(s, '"') ? '"' : '\'';
  if (!io_out_room(o, 4 * n + 2)) return;
  char *p = o->b->data + o->b->len;
  *p++ = q;
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)s[i];
    if (c == (unsigned char)q || c == '\\') {
      *p++ = '\\';
      *p++ = (char)c;
    } else if (c == '\n' || c == '\t' || c == '\r') {
      *p++ = '\\';
      *p++ = c == '\n' ? 'n' : c == '\t' ? 't' : 'r';
    } else if (c < 0x20 || c == 0x7f) {
      *p++ = '\\';
      *p++ = 'x';
      *p++ = k_hex[c >> 4];
      *p++ = k_hex[c & 15];
    } else {
      *p++ = (char)c;
    }
  }
  *p++ = q;
  o->b->len = (size_t)(p - o->b->data);
}

/* ---------- tensor elements ---------- */

/* IEEE half to double, exact. */
static inline double half_to_double(uint16_t h) {
  uint32_t sign = (uint32_t)(h >> 15) << 31;
  uint32_t e = (h >> 10) & 0x1f, m = h & 0x3ff;
  uint32_t bits;
  if (e == 0x1f) {
    bits = sign | 0x7f800000u | (m << 13);
  } else if (e != 0) {
    bits = sign | ((e + 112) << 23) | (m << 13);
  } else if (m == 0) {
    bits = sign;
  } else { /* subnormal: normalize */
    int sh = __builtin_clz(m) - 21; /* bring the leading 1 to bit 10 */
    m = (m << sh) & 0x3ff;
    bits = sign | ((uint32_t)(113 - sh) << 23) | (m << 13);
  }
  float f;
  memcpy(&f, &bits, sizeof f);
  return f;
}

static inline double load_f32(const unsigned char *p) {
  float f;
  memcpy(&f, p, sizeof f);
  return f;
}

/* Formats one complex number the way Python's repr(complex) does. */
static int fmt_complex(char *out, double re, double im) {
  char *p = out;
  if (re == 0 && !__builtin_signbit(re)) {
    p += io_fmt_double(p, im, IO_FMT_NO_DOT0);
    *p++ = 'j';
    return (int)(p - out);
  }
  *p++ = '(';
  p += io_fmt_double(p, re, IO_FMT_NO_DOT0);
  p += io_fmt_double(p, im, IO_FMT_NO_DOT0 | IO_FMT_SIGN);
  *p++ = 'j';
  *p++ = ')';
  return (int)(p - out);
}

#define ELEM_MAX 72 /* longest text of one non-string element */

/* Writes element i of tensor value v (not a string) into out. */
static inline int fmt_elem(const mil_value *v, mil_dtype dt, int64_t i, char *out) {
  const unsigned char *d = mil_value_data(v);
  switch (dt) {
  case MIL_DT_FP32: return io_fmt_double(out, load_f32(d + 4 * i), 0);
  case MIL_DT_FP64: {
    double x;
    memcpy(&x, d + 8 * i, sizeof x);
    return io_fmt_double(out, x, 0);
  }
  case MIL_DT_FP16: {
    uint16_t h;
    memcpy(&h, d + 2 * i, sizeof h);
    return io_fmt_double(out, half_to_double(h), 0);
  }
  case MIL_DT_BF16: {
    uint16_t h;
    memcpy(&h, d + 2 * i, sizeof h);
    uint32_t bits = (uint32_t)h << 16;
    float f;
    memcpy(&f, &bits, sizeof f);
    return io_fmt_double(out, f, 0);
  }
  case MIL_DT_FP8E4M3FN: return io_fmt_double(out, mil_fp8e4m3fn_to_fp32(d[i]), 0);
  case MIL_DT_FP8E5M2: return io_fmt_double(out, mil_fp8e5m2_to_fp32(d[i]), 0);
  case MIL_DT_BOOL:
    if (d[i]) {
      memcpy(out, "True", 4);
      return 4;
    }
    memcpy(out, "False", 5);
    return 5;
  case MIL_DT_INT8: return io_fmt_i64(out, (int8_t)d[i]);
  case MIL_DT_UINT8: return io_fmt_u64(out, d[i]);
  case MIL_DT_INT16: {
    int16_t x;
    memcpy(&x, d + 2 * i, sizeof x);
    return io_fmt_i64(out, x);
  }
  case MIL_DT_UINT16: {
    uint16_t x;
    memcpy(&x, d + 2 * i, sizeof x);
    return io_fmt_u64(out, x);
  }
  case MIL_DT_INT32: {
    int32_t x;
    memcpy(&x, d + 4 * i, sizeof x);
    return io_fmt_i64(out, x);
  }
  case MIL_DT_UINT32: {
    uint32_t x;
    memcpy(&x, d + 4 * i, sizeof x);
    return io_fmt_u64(out, x);
  }
  case MIL_DT_INT64: {
    int64_t x;
    memcpy(&x, d + 8 * i, sizeof x);
    return io_fmt_i64(out, x);
  }
  case MIL_DT_UINT64: {
    uint64_t x;
    memcpy(&x, d + 8 * i, sizeof x);
    return io_fmt_u64(out, x);
  }
  case MIL_DT_COMPLEX64: return fmt_complex(out, load_f32(d + 8 * i), load_f32(d + 8 * i + 4));
  case MIL_DT_COMPLEX128: {
    double re, im;
    memcpy(&re, d + 16 * i, sizeof re);
    memcpy(&im, d + 16 * i + 8, sizeof im);
    return fmt_complex(out, re, im);
  }
  case MIL_DT_INT4: {
    uint32_t u = mil_bits_get(d, i, 4);
    return io_fmt_i64(out, u >= 8 ? (int64_t)u - 16 : (int64_t)u);
  }
  case MIL_DT_UINT1: case MIL_DT_UINT2: case MIL_DT_UINT3: case MIL_DT_UINT4: case MIL_DT_UINT6:
    return io_fmt_u64(out, mil_bits_get(d, i, mil_dtype_bits(dt)));
  default: memcpy(out, "None", 4); return 4; /* no element text for this dtype */
  }
}

enum leaf { LEAF_ELEM, LEAF_EMPTY };

static void print_leaf(io_out *o, const mil_value *v, mil_dtype dt, int64_t i, enum leaf leaf, bool complete,
                       bool in_list) {
  if (leaf == LEAF_EMPTY) {
    out_put(o, "[]", 2);
  } else if (dt == MIL_DT_STRING) {
    const char *s = ((const char *const *)mil_value_data(v))[i];
    if (!s) s = "";
    if (complete || !in_list) io_print_string(o, s, complete);
    else print_py_repr_str(o, s);
  } else {
    if (!io_out_room(o, ELEM_MAX)) return;
    o->b->len += (size_t)fmt_elem(v, dt, i, o->b->data + o->b->len);
  }
}

/* Nested lists of shape[0..r) (every entry > 0) in row-major order. */
static void print_nested(io_out *o, const mil_value *v, mil_dtype dt, int32_t r, const mil_dim *shape,
                         enum leaf leaf, bool complete) {
  int64_t small[16];
  int64_t *idx = r <= 16 ? small : calloc((size_t)r, sizeof *idx);
  if (!idx) {
    o->b->oom = true;
    return;
  }
  memset(idx, 0, sizeof *idx * (size_t)r);
  out_rep(o, '[', (size_t)r);
  int64_t inner = shape[r - 1].size;
  for (int64_t i = 0;;) {
    /* the innermost row */
    for (int64_t j = 0; j < inner; j++, i++) {
      if (j) out_put(o, ", ", 2);
      print_leaf(o, v, dt, i, leaf, complete, true);
    }
    if (o->b->oom) break;
    /* advance the outer indices; every dim that wraps closes one more list */
    int32_t j = r - 2, closes = 1;
    while (j >= 0) {
      if (++idx[j] < shape[j].size) break;
      idx[j] = 0;
      closes++;
      j--;
    }
    if (j < 0) {
      out_rep(o, ']', (size_t)r);
      break;
    }
    out_rep(o, ']', (size_t)closes);
    out_put(o, ", ", 2);
    out_rep(o, '[', (size_t)closes);
  }
  if (idx != small) free(idx);
}

static void print_tensor(io_out *o, const mil_value *v, bool complete) {
  const mil_type *t = v->type;
  mil_dtype dt = t ? t->dtype : MIL_DT_FP32;
  int32_t rank = t && t->rank > 0 && t->dims ? t->rank : 0;
  if (rank == 0) {
    if (v->numel >= 1 && mil_value_data(v)) print_leaf(o, v, dt, 0, LEAF_ELEM, complete, false);
    else out_put(o, "[]", 2);
    return;
  }
  int32_t z = 0;
  while (z < rank && t->dims[z].size > 0) z++;
  if (z == 0) {
    out_put(o, "[]", 2);
  } else if (z < rank) {
    /* some dim is 0 (or unknown): lists down to it, each ending in [] */
    print_nested(o, v, dt, z, t->dims, LEAF_EMPTY, complete);
  } else {
    int64_t n = 1;
    for (int32_t i = 0; i < rank && n >= 0; i++) n = n > INT64_MAX / t->dims[i].size ? -1 : n * t->dims[i].size;
    if (!mil_value_data(v) || n != v->numel) { /* inconsistent value: print nothing out of bounds */
      out_put(o, "[]", 2);
      return;
    }
    print_nested(o, v, dt, rank, t->dims, LEAF_ELEM, complete);
  }
}

void io_print_value(io_out *o, const mil_value *v, bool complete) {
  if (!v) {
    out_put(o, "None", 4);
    return;
  }
  switch (v->kind) {
  case MIL_VAL_TENSOR: print_tensor(o, v, complete); return;
  case MIL_VAL_LIST:
  case MIL_VAL_TUPLE:
    out_put(o, v->kind == MIL_VAL_LIST ? "[" : "(", 1);
    for (int32_t i = 0; i < v->n; i++) {
      if (i) out_put(o, ", ", 2);
      io_print_value(o, v->items[i], complete);
    }
    if (v->kind == MIL_VAL_TUPLE && v->n == 1) out_put(o, ",", 1);
    out_put(o, v->kind == MIL_VAL_LIST ? "]" : ")", 1);
    return;
  case MIL_VAL_DICT:
    out_put(o, "{", 1);
    for (int32_t i = 0; i < v->n; i++) {
      if (i) out_put(o, ", ", 2);
      io_print_value(o, v->keys ? v->keys[i] : NULL, complete);
      out_put(o, ": ", 2);
      io_print_value(o, v->items[i], complete);
    }
    out_put(o, "}", 1);
    return;
  }
  out_put(o, "None", 4);
}
