/* Value types: constructors (arena-owned, immutable) and comparison. */
#include <stdio.h>
#include <string.h>

#include "core/core_internal.h"

static mil_type *type_alloc(mil_program *p, mil_type_kind k) {
  mil_type *t = ir_arena_alloc(p->arena, sizeof *t);
  if (t) t->kind = k;
  if (t) t->length.size = -1;
  return t;
}

const mil_type *mil_type_tensor(mil_program *p, mil_dtype dt, int32_t rank, const mil_dim *dims) {
  if (rank < -1) return NULL;
  mil_type *t = type_alloc(p, MIL_TYPE_TENSOR);
  if (!t) return NULL;
  t->dtype = dt;
  t->rank = rank;
  if (rank > 0) {
    mil_dim *d = ir_arena_alloc(p->arena, (size_t)rank * sizeof *d);
    if (!d) return NULL;
    for (int32_t i = 0; i < rank; i++) {
      d[i] = dims ? dims[i] : (mil_dim){-1, NULL, false};
      if (d[i].sym) d[i].sym = mil_program_intern(p, d[i].sym, (size_t)-1);
    }
    t->dims = d;
  }
  return t;
}

const mil_type *mil_type_tensor_shape(mil_program *p, mil_dtype dt, int32_t rank, const int64_t *shape) {
  mil_dim stack[8], *d = stack;
  if (rank > 8) {
    d = ir_arena_alloc(p->arena, (size_t)rank * sizeof *d);
    if (!d) return NULL;
  }
  for (int32_t i = 0; i < rank; i++) d[i] = (mil_dim){shape[i], NULL, false};
  return mil_type_tensor(p, dt, rank, d);
}

const mil_type *mil_type_scalar(mil_program *p, mil_dtype dt) {
  mil_type *t = (mil_type *)mil_type_tensor(p, dt, 0, NULL);
  if (t) t->is_scalar = true;
  return t;
}

const mil_type *mil_type_list(mil_program *p, const mil_type *elem, mil_dim length) {
  mil_type *t = type_alloc(p, MIL_TYPE_LIST);
  if (!t) return NULL;
  t->elem = elem;
  t->length = length;
  if (length.sym) t->length.sym = mil_program_intern(p, length.sym, (size_t)-1);
  return t;
}

const mil_type *mil_type_tuple(mil_program *p, int32_t n, const mil_type *const *elems) {
  mil_type *t = type_alloc(p, MIL_TYPE_TUPLE);
  if (!t) return NULL;
  const mil_type **e = ir_arena_alloc(p->arena, (size_t)(n > 0 ? n : 1) * sizeof *e);
  if (!e) return NULL;
  for (int32_t i = 0; i < n; i++) e[i] = elems[i];
  t->n_elems = n;
  t->elems = e;
  return t;
}

const mil_type *mil_type_dict(mil_program *p, const mil_type *key, const mil_type *value) {
  mil_type *t = type_alloc(p, MIL_TYPE_DICT);
  if (!t) return NULL;
  t->elem = key;
  t->value = value;
  return t;
}

const mil_type *mil_type_state(mil_program *p, const mil_type *wrapped) {
  mil_type *t = type_alloc(p, MIL_TYPE_STATE);
  if (!t) return NULL;
  t->elem = wrapped;
  return t;
}

const mil_type *mil_type_unknown(mil_program *p) { return type_alloc(p, MIL_TYPE_UNKNOWN); }

const mil_type *mil_type_import(mil_program *p, const mil_type *t) {
  if (!t) return NULL;
  switch (t->kind) {
  case MIL_TYPE_TENSOR: {
    mil_type *r = (mil_type *)mil_type_tensor(p, t->dtype, t->rank, t->dims);
    if (r) r->is_scalar = t->is_scalar;
    return r;
  }
  case MIL_TYPE_LIST: return mil_type_list(p, mil_type_import(p, t->elem), t->length);
  case MIL_TYPE_TUPLE: {
    const mil_type *stack[16];
    const mil_type **e = stack;
    if (t->n_elems > 16) e = ir_arena_alloc(p->arena, (size_t)t->n_elems * sizeof *e);
    if (!e) return NULL;
    for (int32_t i = 0; i < t->n_elems; i++) e[i] = mil_type_import(p, t->elems[i]);
    return mil_type_tuple(p, t->n_elems, e);
  }
  case MIL_TYPE_DICT: return mil_type_dict(p, mil_type_import(p, t->elem), mil_type_import(p, t->value));
  case MIL_TYPE_STATE: return mil_type_state(p, mil_type_import(p, t->elem));
  case MIL_TYPE_UNKNOWN: return mil_type_unknown(p);
  }
  return NULL;
}

mil_dim mil_dim_new_symbol(mil_program *p) {
  /* skip names already in use (symbols read from text or protobuf) */
  char buf[32];
  do snprintf(buf, sizeof buf, "is%llu", (unsigned long long)p->next_symbol_id++);
  while (ir_intern_find(p->strs, buf, (size_t)-1));
  return (mil_dim){-1, mil_program_intern(p, buf, (size_t)-1), false};
}

static bool dim_equal(const mil_dim *a, const mil_dim *b) {
  if (a->size != b->size || a->variadic != b->variadic) return false;
  if (a->size >= 0) return true;
  if (!a->sym || !b->sym) return a->sym == b->sym;
  return a->sym == b->sym || strcmp(a->sym, b->sym) == 0;
}

static bool type_eq(const mil_type *a, const mil_type *b, bool scalar_loose) {
  if (a == b) return true;
  if (!a || !b || a->kind != b->kind) return false;
  switch (a->kind) {
  case MIL_TYPE_TENSOR:
    if (a->dtype != b->dtype || a->rank != b->rank) return false;
    if (!scalar_loose && a->is_scalar != b->is_scalar) return false;
    for (int32_t i = 0; i < a->rank; i++)
      if (!dim_equal(&a->dims[i], &b->dims[i])) return false;
    return true;
  case MIL_TYPE_LIST:
    return dim_equal(&a->length, &b->length) && type_eq(a->elem, b->elem, scalar_loose);
  case MIL_TYPE_TUPLE:
    if (a->n_elems != b->n_elems) return false;
    for (int32_t i = 0; i < a->n_elems; i++)
      if (!type_eq(a->elems[i], b->elems[i], scalar_loose)) return false;
    return true;
  case MIL_TYPE_DICT:
    return type_eq(a->elem, b->elem, scalar_loose) && type_eq(a->value, b->value, scalar_loose);
  case MIL_TYPE_STATE: return type_eq(a->elem, b->elem, scalar_loose);
  case MIL_TYPE_UNKNOWN: return true;
  }
  return false;
}

bool mil_type_equal(const mil_type *a, const mil_type *b) { return type_eq(a, b, false); }
bool mil_type_compatible(const mil_type *a, const mil_type *b) { return type_eq(a, b, true); }

int64_t mil_type_numel(const mil_type *t) {
  if (!t || t->kind != MIL_TYPE_TENSOR || t->rank < 0) return -1;
  int64_t n = 1;
  for (int32_t i = 0; i < t->rank; i++) {
    if (t->dims[i].size < 0) return -1;
    if (t->dims[i].size && n > INT64_MAX / t->dims[i].size) return -1;
    n *= t->dims[i].size;
  }
  return n;
}

bool mil_type_is_static(const mil_type *t) { return mil_type_numel(t) >= 0; }
