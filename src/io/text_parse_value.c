/* Literal values in MIL text: the full value of a const in the complete
 * form (a nested list in the var's shape, stored with the var's dtype) and
 * the inline literals of the coremltools form (Python list/tuple/scalar
 * syntax, typed from the literal itself). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/io_internal.h"

/* ================= const values in the var's type ================= */

typedef struct tensor_ctx {
  io_lex *L;
  mil_program *p;
  mil_value *v;
  mil_dtype dt;
  void *data;
  const mil_type *t;
  const char *var_name;
  char *sbuf; /* string scratch */
  size_t scap;
  bool warned; /* the sub-byte range warning was given */
} tensor_ctx;

static void expected_elem(tensor_ctx *c, const char *what) {
  char buf[160];
  snprintf(buf, sizeof buf, "%s for an element of %%%s (%s)", what, c->var_name, mil_dtype_name(c->dt));
  io_lex_expected(c->L, buf);
}

static bool out_of_range(tensor_ctx *c, const char *at, const char *prev) {
  io_lex_error(c->L, at, "value %.*s is out of range for %s (element of %%%s)", (int)(prev - at), at,
               mil_dtype_name(c->dt), c->var_name);
  return false;
}

/* Range of an integer dtype: [lo, hi] as sign + magnitude bounds. */
static void int_range(mil_dtype dt, uint64_t *neg_max, uint64_t *pos_max) {
  int bits = mil_dtype_bits(dt);
  if (mil_dtype_is_unsigned(dt)) {
    *neg_max = 0;
    *pos_max = bits >= 64 ? UINT64_MAX : ((uint64_t)1 << bits) - 1;
  } else {
    *neg_max = (uint64_t)1 << (bits - 1);
    *pos_max = *neg_max - 1;
  }
}

/* A complex element as Python prints it: "(re+imj)", or "imj" when the real
 * part is +0. */
static bool parse_complex(tensor_ctx *c, int64_t i) {
  io_lex *L = c->L;
  double re = 0.0, im;
  io_num a, b;
  bool paren = io_lex_accept(L, '(');
  if (!io_lex_number_ex(L, &a, true)) {
    if (!io_lex_failed(L)) expected_elem(c, "a complex number ('(1+2j)' or '2j')");
    return false;
  }
  if (paren && (L->p >= L->end || *L->p != 'j')) {
    re = a.f;
    int ch = io_lex_peek(L);
    if ((ch != '+' && ch != '-') || !io_lex_number_ex(L, &b, true)) {
      if (!io_lex_failed(L)) expected_elem(c, "the signed imaginary part of a complex number");
      return false;
    }
    im = b.f;
  } else {
    im = a.f;
  }
  if (L->p >= L->end || *L->p != 'j') {
    expected_elem(c, "'j' after the imaginary part");
    return false;
  }
  L->p++;
  if (paren && !io_lex_expect(L, ')', "closing a complex number")) return false;
  if (c->dt == MIL_DT_COMPLEX64) {
    float *f = (float *)c->data + 2 * i;
    f[0] = (float)re;
    f[1] = (float)im;
  } else {
    double *f = (double *)c->data + 2 * i;
    f[0] = re;
    f[1] = im;
  }
  return true;
}

/* Parses one scalar at the cursor and stores it as element i. */
static bool parse_elem(tensor_ctx *c, int64_t i) {
  io_lex *L = c->L;
  io_lex_skip(L);
  const char *at = L->p;
  mil_dtype dt = c->dt;
  if (dt == MIL_DT_BOOL) {
    if (io_lex_at_word(L, "True") || io_lex_at_word(L, "False")) {
      ((uint8_t *)c->data)[i] = *L->p == 'T';
      L->p += *L->p == 'T' ? 4 : 5;
      return true;
    }
    expected_elem(c, "True or False");
    return false;
  }
  if (dt == MIL_DT_STRING) {
    int ch = io_lex_peek(L);
    if (ch != '"' && ch != '\'') {
      expected_elem(c, "a string");
      return false;
    }
    size_t len;
    if (!io_lex_string(L, &c->sbuf, &c->scap, &len)) return false;
    const char *s = mil_program_intern(c->p, c->sbuf, len);
    if (!s) return io_lex_error_st(L, MIL_ERR_NOMEM, at, "out of memory"), false;
    ((const char **)c->data)[i] = s;
    return true;
  }
  if (mil_dtype_is_complex(dt)) return parse_complex(c, i);
  io_num n;
  if (!io_lex_number(L, &n)) {
    if (!io_lex_failed(L)) expected_elem(c, mil_dtype_is_float(dt) ? "a number" : "an integer");
    return false;
  }
  if (mil_dtype_is_float(dt)) {
    double v = n.f;
    switch (dt) {
      case MIL_DT_FP32: {
        float f = (float)v;
        if (isinf(f) && isfinite(v)) return out_of_range(c, at, L->p);
        ((float *)c->data)[i] = f;
        return true;
      }
      case MIL_DT_FP64: ((double *)c->data)[i] = v; return true;
      case MIL_DT_FP16: {
        uint16_t h = mil_fp64_to_fp16(v);
        if ((h & 0x7fff) == 0x7c00 && isfinite(v)) return out_of_range(c, at, L->p);
        ((uint16_t *)c->data)[i] = h;
        return true;
      }
      default: {
        /* bf16 and fp8: the value's own rounding; fp8e4m3fn has no infinity */
        mil_value_set_f64(c->v, i, v);
        double back = mil_value_get_f64(c->v, i);
        if ((isfinite(v) && !isfinite(back)) || (isinf(v) && !isinf(back))) return out_of_range(c, at, L->p);
        return true;
      }
    }
  }
  /* integer dtypes */
  if (n.is_float) {
    io_lex_error(L, at, "expected an integer for an element of %%%s (%s), found '%.*s'", c->var_name,
                 mil_dtype_name(dt), (int)(L->p - at), at);
    return false;
  }
  uint64_t neg_max, pos_max;
  int_range(dt, &neg_max, &pos_max);
  if (n.overflow || (n.neg ? n.mag > neg_max : n.mag > pos_max)) {
    /* coremltools holds sub-byte values in int8/uint8 arrays, so programs
     * it recorded may carry values of the holder's range: keep the low bits */
    bool fits_holder = mil_dtype_is_subbyte(dt) && !n.overflow &&
                       (mil_dtype_is_unsigned(dt) ? !n.neg && n.mag <= 255 : (n.neg ? n.mag <= 128 : n.mag <= 127));
    if (!fits_holder) return out_of_range(c, at, L->p);
    if (!c->warned) {
      io_lex_warn(L, at, "value %.*s does not fit in %s (element of %%%s); only its low %d bits are kept",
                  (int)(L->p - at), at, mil_dtype_name(dt), c->var_name, mil_dtype_bits(dt));
      c->warned = true;
    }
  }
  int64_t x = n.neg ? (int64_t)(0 - n.mag) : (int64_t)n.mag;
  switch (dt) {
    case MIL_DT_INT32: ((int32_t *)c->data)[i] = (int32_t)x; return true;
    case MIL_DT_INT64: ((int64_t *)c->data)[i] = x; return true;
    case MIL_DT_UINT64: ((uint64_t *)c->data)[i] = n.mag; return true;
    case MIL_DT_INT8: ((int8_t *)c->data)[i] = (int8_t)x; return true;
    case MIL_DT_UINT8: ((uint8_t *)c->data)[i] = (uint8_t)x; return true;
    case MIL_DT_INT16: ((int16_t *)c->data)[i] = (int16_t)x; return true;
    case MIL_DT_UINT16: ((uint16_t *)c->data)[i] = (uint16_t)x; return true;
    case MIL_DT_UINT32: ((uint32_t *)c->data)[i] = (uint32_t)x; return true;
    default: mil_value_set_i64(c->v, i, x); return true; /* sub-byte types, bit-packed */
  }
}

/* Parses the list for dimension `d` starting at flat index *idx. */
static bool parse_dim(tensor_ctx *c, int d, int64_t *idx) {
  io_lex *L = c->L;
  const mil_type *t = c->t;
  int ch = io_lex_peek(L);
  if (ch != '[' && ch != '(') {
    char what[96];
    snprintf(what, sizeof what, "'[' opening dimension %d of the value of %%%s", d, c->var_name);
    io_lex_expected(L, what);
    return false;
  }
  L->p++;
  char close = ch == '[' ? ']' : ')';
  int64_t want = t->dims[d].size;
  bool last = d + 1 == t->rank;
  for (int64_t k = 0; k < want; k++) {
    if (k > 0 && !io_lex_accept(L, ',')) {
      int nx = io_lex_peek(L);
      if (nx == close)
        io_lex_error(L, L->p, "value of %%%s has %lld elements in dimension %d, the type says %lld", c->var_name,
                     (long long)k, d, (long long)want);
      else {
        char what[96];
        snprintf(what, sizeof what, "',' or '%c' in the value of %%%s", close, c->var_name);
        io_lex_expected(L, what);
      }
      return false;
    }
    if (last) {
      if (k == 0 && io_lex_peek(L) == close) {
        io_lex_error(L, L->p, "value of %%%s has 0 elements in dimension %d, the type says %lld", c->var_name, d,
                     (long long)want);
        return false;
      }
      if (!parse_elem(c, (*idx)++)) return false;
    } else if (!parse_dim(c, d + 1, idx)) {
      return false;
    }
  }
  /* a Python tuple may end with a trailing comma: (2,) */
  if (close == ')' && want > 0) io_lex_accept(L, ',');
  if (io_lex_accept(L, close)) return true;
  if (io_lex_peek(L) == ',') {
    io_lex_error(L, L->p, "value of %%%s has more than %lld elements in dimension %d", c->var_name,
                 (long long)want, d);
    return false;
  }
  char what[96];
  snprintf(what, sizeof what, "'%c' closing dimension %d of the value of %%%s", close, d, c->var_name);
  io_lex_expected(L, what);
  return false;
}

mil_value *io_parse_tensor_value(io_lex *L, mil_program *p, const mil_type *t, const char *var_name) {
  io_lex_skip(L);
  const char *at = L->p;
  if (!t || t->kind != MIL_TYPE_TENSOR) {
    io_lex_error_st(L, MIL_ERR_UNSUPPORTED, at, "const %%%s: values of non-tensor types are not supported in MIL text",
                    var_name);
    return NULL;
  }
  int64_t shape[IO_PARSE_MAX_RANK];
  int64_t numel = 1;
  if (t->rank < 0 || t->rank > IO_PARSE_MAX_RANK) {
    io_lex_error(L, at, "const %%%s: type has no static rank", var_name);
    return NULL;
  }
  for (int32_t i = 0; i < t->rank; i++) {
    if (t->dims[i].size < 0) {
      io_lex_error(L, at, "const %%%s: type has a non-constant dimension %d", var_name, i);
      return NULL;
    }
    shape[i] = t->dims[i].size;
    if (numel && shape[i] > INT64_MAX / numel) numel = INT64_MAX;
    else numel *= shape[i];
  }
  /* Every element takes at least two bytes of text ("0,"), so a shape that
   * cannot fit in what is left is rejected before allocating for it. */
  if (numel > 1 && (uint64_t)numel > (uint64_t)(L->end - L->p) / 2 + 1) {
    io_lex_error(L, at, "const %%%s: the text is too short for a value of %lld elements", var_name,
                 (long long)numel);
    return NULL;
  }
  if (t->dtype == MIL_DT_UNUSED || !mil_dtype_is_valid(t->dtype)) {
    io_lex_error(L, at, "const %%%s: type has no dtype", var_name);
    return NULL;
  }
  mil_value *v = mil_value_new_tensor(p, t->dtype, t->rank, shape, t->is_scalar, NULL);
  if (!v) {
    io_lex_error_st(L, MIL_ERR_NOMEM, at, "out of memory for the value of %%%s", var_name);
    return NULL;
  }
  v->py_bool = t->dtype == MIL_DT_BOOL && t->rank == 0; /* see mil_value.py_bool */
  tensor_ctx c = {L, p, v, t->dtype, mil_value_data_mut(v), t, var_name, NULL, 0, false};
  int64_t idx = 0;
  bool ok = t->rank == 0 ? parse_elem(&c, idx++) : parse_dim(&c, 0, &idx);
  free(c.sbuf);
  return ok ? v : NULL;
}

/* ================= inline literals (coremltools form) ================= */

typedef enum { LIT_INT, LIT_FLOAT, LIT_BOOL, LIT_STR } lit_kind;

typedef struct lit_elem {
  lit_kind kind;
  const char *at;
  union {
    io_num num;
    bool b;
    const char *s;
  } u;
} lit_elem;

typedef struct lit_ctx {
  io_lex *L;
  mil_program *p;
  lit_elem *e;
  size_t n, cap;
  int64_t dims[IO_PARSE_MAX_LIST_DEPTH];
  bool known[IO_PARSE_MAX_LIST_DEPTH]; /* dims[d] fixed by an earlier list */
  int rank;         /* -1 until known */
  char *sbuf;
  size_t scap;
} lit_ctx;

bool io_lex_at_literal(io_lex *L) {
  int c = io_lex_peek(L);
  if (c < 0) return false;
  if ((c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.' || c == '[' || c == '(' || c == '"' || c == '\'')
    return true;
  return io_lex_at_word(L, "True") || io_lex_at_word(L, "False") || io_lex_at_word(L, "inf") ||
         io_lex_at_word(L, "nan");
}

static bool lit_push(lit_ctx *c, lit_elem *e) {
  if (c->n == c->cap) {
    size_t nc = c->cap ? c->cap * 2 : 16;
    lit_elem *ne = realloc(c->e, nc * sizeof *ne);
    if (!ne) return io_lex_error_st(c->L, MIL_ERR_NOMEM, e->at, "out of memory"), false;
    c->e = ne;
    c->cap = nc;
  }
  c->e[c->n++] = *e;
  return true;
}

static bool lit_scalar(lit_ctx *c) {
  io_lex *L = c->L;
  io_lex_skip(L);
  lit_elem e = {.at = L->p};
  int ch = io_lex_peek(L);
  if (ch == '"' || ch == '\'') {
    size_t len;
    if (!io_lex_string(L, &c->sbuf, &c->scap, &len)) return false;
    e.kind = LIT_STR;
    e.u.s = mil_program_intern(c->p, c->sbuf, len);
    if (!e.u.s) return io_lex_error_st(L, MIL_ERR_NOMEM, e.at, "out of memory"), false;
  } else if (io_lex_at_word(L, "True") || io_lex_at_word(L, "False")) {
    e.kind = LIT_BOOL;
    e.u.b = *L->p == 'T';
    L->p += e.u.b ? 4 : 5;
  } else if (io_lex_number(L, &e.u.num)) {
    e.kind = e.u.num.is_float ? LIT_FLOAT : LIT_INT;
  } else {
    if (!io_lex_failed(L)) io_lex_expected(L, "a literal (number, string, True/False, list)");
    return false;
  }
  return lit_push(c, &e);
}

/* A list or tuple at nesting depth d. */
static bool lit_list(lit_ctx *c, int d) {
  io_lex *L = c->L;
  const char *open = L->p;
  if (d >= IO_PARSE_MAX_LIST_DEPTH) {
    io_lex_error(L, open, "literal nested deeper than %d levels", IO_PARSE_MAX_LIST_DEPTH);
    return false;
  }
  char close = *L->p == '[' ? ']' : ')';
  L->p++;
  int64_t count = 0;
  int saw = 0; /* 1 scalars, 2 lists */
  while (io_lex_peek(L) != close) {
    if (count > 0) {
      if (!io_lex_accept(L, ',')) {
        char what[32];
        snprintf(what, sizeof what, "',' or '%c' in a literal", close);
        io_lex_expected(L, what);
        return false;
      }
      if (close == ')' && io_lex_peek(L) == ')') break; /* (2,) */
    }
    int ch = io_lex_peek(L);
    int kind = ch == '[' || ch == '(' ? 2 : 1;
    if (saw && saw != kind) {
      io_lex_error(L, L->p, "literal mixes scalars and lists at the same level");
      return false;
    }
    saw = kind;
    if (kind == 2 ? !lit_list(c, d + 1) : !lit_scalar(c)) return false;
    count++;
  }
  L->p++; /* close */
  if (c->known[d]) {
    if (c->dims[d] != count) {
      io_lex_error(L, open, "ragged literal: a list at depth %d has %lld elements, an earlier one %lld", d,
                   (long long)count, (long long)c->dims[d]);
      return false;
    }
  } else {
    c->dims[d] = count;
    c->known[d] = true;
  }
  if (saw != 2) { /* scalars or empty: this level is the innermost */
    if (c->rank >= 0 && c->rank != d + 1) {
      io_lex_error(L, open, "ragged literal: elements at different nesting depths");
      return false;
    }
    c->rank = d + 1;
  }
  return true;
}

static mil_value *lit_build(lit_ctx *c, bool scalar, const char *at) {
  io_lex *L = c->L;
  bool any_float = false, any_int = false, any_bool = false, any_str = false, big = false;
  for (size_t i = 0; i < c->n; i++) {
    lit_elem *e = &c->e[i];
    any_float |= e->kind == LIT_FLOAT;
    any_int |= e->kind == LIT_INT;
    any_bool |= e->kind == LIT_BOOL;
    any_str |= e->kind == LIT_STR;
    if (e->kind == LIT_INT && (e->u.num.overflow || e->u.num.mag > (e->u.num.neg ? 0x80000000u : 0x7fffffffu)))
      big = true;
  }
  if ((any_str + any_bool + (any_float || any_int)) > 1) {
    io_lex_error(L, at, "literal mixes strings, booleans and numbers");
    return NULL;
  }
  mil_dtype dt = any_str ? MIL_DT_STRING : any_bool ? MIL_DT_BOOL : any_float || c->n == 0 ? MIL_DT_FP32
                                                                   : big ? MIL_DT_INT64 : MIL_DT_INT32;
  int rank = scalar ? 0 : c->rank;
  int64_t numel = 1;
  for (int i = 0; i < rank; i++) numel *= c->dims[i];
  if ((size_t)numel != c->n) { /* cannot happen for a consistent literal */
    io_lex_error(L, at, "literal has %zu elements for its shape", c->n);
    return NULL;
  }
  mil_value *v = mil_value_new_tensor(c->p, dt, rank, c->dims, scalar, NULL);
  if (!v) {
    io_lex_error_st(L, MIL_ERR_NOMEM, at, "out of memory");
    return NULL;
  }
  v->py_bool = dt == MIL_DT_BOOL && rank == 0; /* see mil_value.py_bool */
  void *data = mil_value_data_mut(v);
  for (size_t i = 0; i < c->n; i++) {
    lit_elem *e = &c->e[i];
    switch (dt) {
      case MIL_DT_STRING: ((const char **)data)[i] = e->u.s; break;
      case MIL_DT_BOOL: ((uint8_t *)data)[i] = e->u.b; break;
      case MIL_DT_FP32: {
        float f = (float)e->u.num.f;
        if (isinf(f) && isfinite(e->u.num.f)) {
          io_lex_error(L, e->at, "value is out of range for fp32");
          return NULL;
        }
        ((float *)data)[i] = f;
        break;
      }
      case MIL_DT_INT32: ((int32_t *)data)[i] = (int32_t)(e->u.num.neg ? -(int64_t)e->u.num.mag : (int64_t)e->u.num.mag); break;
      default:
        if (e->u.num.overflow || e->u.num.mag > (e->u.num.neg ? (uint64_t)1 << 63 : (uint64_t)INT64_MAX)) {
          io_lex_error(L, e->at, "integer literal is out of range for int64");
          return NULL;
        }
        ((int64_t *)data)[i] = e->u.num.neg ? (int64_t)(0 - e->u.num.mag) : (int64_t)e->u.num.mag;
        break;
    }
  }
  return v;
}

mil_value *io_parse_literal(io_lex *L, mil_program *p) {
  lit_ctx c = {.L = L, .p = p, .rank = -1};
  io_lex_skip(L);
  const char *at = L->p;
  int ch = io_lex_peek(L);
  bool scalar = ch != '[' && ch != '(';
  bool ok = scalar ? lit_scalar(&c) : lit_list(&c, 0);
  mil_value *v = NULL;
  if (ok) {
    v = lit_build(&c, scalar, at);
  }
  free(c.e);
  free(c.sbuf);
  return v;
}
