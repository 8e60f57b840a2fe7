/* Test helper for the op-family tests of conv, pool, linear,
 * normalization, image_resizing, recurrent and transformers: a tiny builder
 * of one-function programs (inputs, consts, ops appended in order) and
 * assertions on the inferred output type, the error text and folded
 * values. Everything is static so each test program can include it. */
#ifndef MIL_TESTS_OPS_B_BUILDER_H
#define MIL_TESTS_OPS_B_BUILDER_H

#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "mil/mil.h"
#include "mil/ops.h"

/* ------------------------------------------------------------------ */
/* A tiny builder                                                      */
/* ------------------------------------------------------------------ */

typedef struct T {
  mil_program *p;
  mil_function *f;
  mil_block *b;
  mil_diag d;
  int n;
} T;

static inline void t_init(T *t, int opset) {
  memset(t, 0, sizeof *t);
  t->p = mil_program_new(NULL);
  assert_non_null(t->p);
  t->f = mil_function_new(t->p, "main", mil_opset_name(opset));
  assert_non_null(t->f);
  t->b = mil_function_body(t->f);
}

static inline void t_free(T *t) {
  mil_diag_clear(&t->d);
  mil_program_free(t->p);
}

/* "1,3,s0,8" -> dims (numbers are sizes, anything else a symbol); "" -> rank 0 */
static inline int32_t parse_shape(T *t, const char *s, mil_dim *dims) {
  int32_t r = 0;
  while (*s) {
    const char *e = strchr(s, ',');
    size_t n = e ? (size_t)(e - s) : strlen(s);
    char buf[32];
    memcpy(buf, s, n);
    buf[n] = 0;
    char *end;
    long long v = strtoll(buf, &end, 10);
    if (*end == 0 && n) dims[r] = (mil_dim){v, NULL, false};
    else dims[r] = (mil_dim){-1, mil_program_intern(t->p, buf, (size_t)-1), false};
    r++;
    s += n + (e ? 1 : 0);
  }
  return r;
}

static inline const mil_type *ty(T *t, mil_dtype dt, const char *shape) {
  mil_dim dims[16];
  int32_t r = parse_shape(t, shape, dims);
  return mil_type_tensor(t->p, dt, r, dims);
}

static inline mil_var *inp(T *t, const char *name, mil_dtype dt, const char *shape) {
  return mil_function_add_input(t->f, name, ty(t, dt, shape));
}

static inline mil_var *add_const(T *t, const mil_value *v) {
  char name[32];
  snprintf(name, sizeof name, "k%d", t->n++);
  mil_op *op = mil_const_new(t->p, name, v);
  assert_non_null(op);
  mil_block_append(t->b, op);
  return op->outputs[0];
}

/* float tensor const of `shape` from data (NULL = zeros) */
static inline mil_var *cf(T *t, mil_dtype dt, const char *shape, const double *data) {
  mil_dim dims[16];
  int32_t r = parse_shape(t, shape, dims);
  int64_t sh[16];
  for (int32_t i = 0; i < r; i++) sh[i] = dims[i].size;
  mil_value *v = mil_value_new_tensor(t->p, dt, r, sh, false, NULL);
  assert_non_null(v);
  for (int64_t i = 0; data && i < v->numel; i++) mil_value_set_f64(v, i, data[i]);
  return add_const(t, v);
}

static inline mil_var *cscalar(T *t, mil_dtype dt, double x) {
  return add_const(t, mil_value_new_scalar_f64(t->p, dt, x));
}

/* int32 vector const "1,2,3" (or a scalar when `scalar`) */
static inline mil_var *cint_dt(T *t, mil_dtype dt, const char *vals, bool scalar) {
  int64_t v[16], n = 0;
  for (const char *s = vals; *s;) {
    char *end;
    v[n++] = strtoll(s, &end, 10);
    s = *end == ',' ? end + 1 : end;
  }
  mil_value *val = mil_value_new_tensor(t->p, dt, scalar ? 0 : 1, &n, scalar, NULL);
  assert_non_null(val);
  for (int64_t i = 0; i < n; i++) mil_value_set_i64(val, i, v[i]);
  return add_const(t, val);
}
static inline mil_var *cint(T *t, const char *vals) { return cint_dt(t, MIL_DT_INT32, vals, false); }
static inline mil_var *cint1(T *t, int64_t v) {
  char b[32];
  snprintf(b, sizeof b, "%lld", (long long)v);
  return cint_dt(t, MIL_DT_INT32, b, true);
}
static inline mil_var *cstr(T *t, const char *s) { return add_const(t, mil_value_new_string(t->p, s)); }
static inline mil_var *cbool(T *t, bool b) { return add_const(t, mil_value_new_bool(t->p, b)); }

/* op(t, "conv", "x", x, "weight", w, NULL): appended to the body, named <type>_<n> */
static inline mil_op *op(T *t, const char *type, ...) {
  char name[64];
  snprintf(name, sizeof name, "%s_%d", type, t->n++);
  mil_op *o = mil_op_new(t->p, type, name);
  assert_non_null(o);
  va_list ap;
  va_start(ap, type);
  for (const char *in = va_arg(ap, const char *); in; in = va_arg(ap, const char *)) {
    mil_var *v = va_arg(ap, mil_var *);
    assert_non_null(v);
    mil_op_add_input(o, in, v);
  }
  va_end(ap);
  mil_block_append(t->b, o);
  return o;
}

static inline void expect_type(T *t, mil_op *o, int i, const char *want) {
  mil_status st = mil_op_infer(o, &t->d);
  if (st != MIL_OK) fail_msg("%s: unexpected error: %s", o->name, mil_diag_first_error(&t->d));
  char buf[256];
  assert_true(i < o->n_outputs);
  mil_type_to_string(o->outputs[i]->type, buf, sizeof buf);
  if (strcmp(buf, want) != 0) fail_msg("%s output %d: want %s, got %s", o->name, i, want, buf);
}
static inline void ok(T *t, mil_op *o, const char *want) { expect_type(t, o, 0, want); }

static inline void rejects(T *t, mil_op *o, const char *needle) {
  mil_diag_clear(&t->d);
  mil_status st = mil_op_infer(o, &t->d);
  if (st == MIL_OK) fail_msg("%s: accepted, expected an error containing \"%s\"", o->name, needle);
  const char *e = mil_diag_first_error(&t->d);
  if (!e || !strstr(e, needle)) fail_msg("%s: error \"%s\" lacks \"%s\"", o->name, e ? e : "(none)", needle);
  mil_diag_clear(&t->d);
}

static inline void expect_vals(mil_op *o, const double *want, int64_t n, double tol) {
  const mil_value *v = o->outputs[0]->val;
  if (!v) fail_msg("%s: no folded value", o->name);
  assert_int_equal(v->numel, n);
  for (int64_t i = 0; i < n; i++)
    if (fabs(mil_value_get_f64(v, i) - want[i]) > tol)
      fail_msg("%s[%lld]: want %.9g, got %.9g", o->name, (long long)i, want[i], mil_value_get_f64(v, i));
}

static inline bool sym(const mil_type *t, int i) { return t->dims[i].size < 0 && t->dims[i].sym; }


#endif
