/* Value types: constructors (arena-owned, immutable) and comparison. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "core/core_internal.h"

static mil_type *type_alloc(mil_program *p, mil_type_kind k) {
  mil_type *t = ir_arena_alloc(p->arena, sizeof *t);
  if (t) t->kind = k;
  if (t) t->length.size = -1;
  return t;
}

/* ---- tensor types are hash-consed: one record per distinct type ---- */

/* Open addressing over the type records (cap a power of two). Programs use
 * few distinct tensor types (a transformer: dozens) for many vars and
 * values, so sharing the records saves ~100-200 bytes per var. */
struct ir_typetab {
  const mil_type **slots;
  size_t cap, used;
};

static uint64_t tensor_key(mil_dtype dt, int32_t rank, bool is_scalar, const mil_dim *dims) {
  uint64_t h = 0x9e3779b97f4a7c15ull ^ ((uint64_t)(uint32_t)dt << 1) ^ ((uint64_t)(uint32_t)rank << 20) ^ is_scalar;
  for (int32_t i = 0; i < rank; i++) {
    h ^= (uint64_t)dims[i].size + ((uint64_t)(uintptr_t)dims[i].sym << 3) + dims[i].variadic;
    h *= 0x100000001b3ull;
    h ^= h >> 29;
  }
  return h;
}

static bool tensor_same(const mil_type *t, mil_dtype dt, int32_t rank, bool is_scalar, const mil_dim *dims) {
  if (t->dtype != dt || t->rank != rank || t->is_scalar != is_scalar) return false;
  for (int32_t i = 0; i < rank; i++)
    if (t->dims[i].size != dims[i].size || t->dims[i].sym != dims[i].sym || t->dims[i].variadic != dims[i].variadic)
      return false;
  return true;
}

static bool typetab_grow(mil_program *p, ir_typetab *tt) {
  size_t nc = tt->cap ? tt->cap * 2 : 256;
  const mil_type **ns = ir_raw_alloc(p->alloc, nc * sizeof *ns);
  if (!ns) return false;
  memset(ns, 0, nc * sizeof *ns);
  for (size_t i = 0; i < tt->cap; i++) {
    const mil_type *t = tt->slots[i];
    if (!t) continue;
    size_t k = (size_t)tensor_key(t->dtype, t->rank, t->is_scalar, t->dims) & (nc - 1);
    while (ns[k]) k = (k + 1) & (nc - 1);
    ns[k] = t;
  }
  if (tt->slots) ir_raw_free(p->alloc, tt->slots, tt->cap * sizeof *tt->slots);
  tt->slots = ns;
  tt->cap = nc;
  return true;
}

/* p's table, made empty on first use; NULL when out of memory. */
static ir_typetab *typetab_of(mil_program *p) {
  if (!p->types) {
    ir_typetab *tt = ir_raw_alloc(p->alloc, sizeof *tt);
    if (!tt) return NULL;
    memset(tt, 0, sizeof *tt);
    p->types = tt;
  }
  return p->types;
}

bool ir_typetab_seed(mil_program *dst, const mil_program *src) {
  const ir_typetab *st = src->types;
  if (!st || !st->cap || (dst->types && dst->types->used)) return true;
  ir_typetab *tt = typetab_of(dst);
  if (!tt) return false;
  const mil_type **ns = ir_raw_alloc(dst->alloc, st->cap * sizeof *ns);
  if (!ns) return false;
  memcpy(ns, st->slots, st->cap * sizeof *ns);
  if (tt->slots) ir_raw_free(dst->alloc, tt->slots, tt->cap * sizeof *tt->slots);
  tt->slots = ns;
  tt->cap = st->cap;
  tt->used = st->used;
  return true;
}

void ir_typetab_free(mil_program *p) {
  ir_typetab *tt = p->types;
  if (!tt) return;
  if (tt->slots) ir_raw_free(p->alloc, tt->slots, tt->cap * sizeof *tt->slots);
  ir_raw_free(p->alloc, tt, sizeof *tt);
  p->types = NULL;
}

static mil_type *tensor_new(mil_program *p, mil_dtype dt, int32_t rank, bool is_scalar, const mil_dim *dims) {
  mil_type *t = type_alloc(p, MIL_TYPE_TENSOR);
  if (!t) return NULL;
  t->dtype = dt;
  t->rank = rank;
  t->is_scalar = is_scalar;
  if (rank > 0) {
    mil_dim *d = ir_arena_alloc(p->arena, (size_t)rank * sizeof *d);
    if (!d) return NULL;
    memcpy(d, dims, (size_t)rank * sizeof *d);
    t->dims = d;
  }
  return t;
}

static void size_why(char *why, size_t n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void size_why(char *why, size_t n, const char *fmt, ...) {
  if (!why || !n) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(why, n, fmt, ap);
  va_end(ap);
}

/* "1073741824 x 1073741824 x ..." (the known dims) into buf. */
static const char *dims_product(int32_t rank, const mil_dim *dims, char *buf, size_t n) {
  size_t l = 0;
  buf[0] = 0;
  for (int32_t i = 0; i < rank && l + 24 < n; i++) {
    if (dims[i].size < 0) continue;
    int k = snprintf(buf + l, n - l, "%s%lld", l ? " x " : "", (long long)dims[i].size);
    if (k < 0) break;
    l += (size_t)k;
  }
  return buf;
}

bool mil_tensor_size_ok(mil_dtype dt, int32_t rank, const mil_dim *dims, char *why, size_t n) {
  if (rank <= 0 || !dims) return true;
  int64_t count = 1;
  bool over = false;
  for (int32_t i = 0; i < rank; i++) {
    int64_t s = dims[i].size;
    if (s < 0) continue; /* unknown or symbolic */
    if (s == 0) return true; /* no elements */
    if (!over && count > INT64_MAX / s) over = true;
    if (!over) count *= s;
  }
  char pb[160];
  if (over || count > MIL_TENSOR_MAX_ELEMENTS) {
    /* the count as a power of two, to name how far over int64 an
     * overflowing product goes */
    double log2n = 0;
    for (int32_t i = 0; i < rank; i++)
      if (dims[i].size > 0) log2n += log2((double)dims[i].size);
    size_why(why, n, "%s = about 2^%.0f elements, more than the maximum 2^48 (MIL_TENSOR_MAX_ELEMENTS)%s",
             dims_product(rank, dims, pb, sizeof pb), log2n, over ? " and more than int64 holds" : "");
    return false;
  }
  int bits = dt == MIL_DT_STRING ? (int)(8 * sizeof(const char *)) : mil_dtype_bits(dt);
  if (bits <= 0) bits = 8;
  /* count <= 2^48 and bits <= 128: the bit count fits in int64 */
  int64_t bytes = (count * bits + 7) / 8;
  if (bytes > MIL_TENSOR_MAX_BYTES) {
    size_why(why, n, "%s elements of %s take %lld bytes, more than the maximum 2^48 (MIL_TENSOR_MAX_BYTES)",
             dims_product(rank, dims, pb, sizeof pb), mil_dtype_name(dt), (long long)bytes);
    return false;
  }
  return true;
}

/* The shared record of a tensor type; dims' symbols must be interned. */
static const mil_type *tensor_type(mil_program *p, mil_dtype dt, int32_t rank, bool is_scalar, const mil_dim *dims) {
  if (rank < -1) return NULL;
  int32_t n = rank > 0 ? rank : 0;
  ir_typetab *tt = typetab_of(p);
  if (!tt || ((tt->used + 1) * 2 > tt->cap && !typetab_grow(p, tt))) {
    if (!mil_tensor_size_ok(dt, rank, dims, NULL, 0)) return NULL;
    return tensor_new(p, dt, rank, is_scalar, dims);
  }
  size_t k = (size_t)tensor_key(dt, n, is_scalar, dims) & (tt->cap - 1);
  for (; tt->slots[k]; k = (k + 1) & (tt->cap - 1))
    if (tt->slots[k]->rank == rank && tensor_same(tt->slots[k], dt, n, is_scalar, dims)) return tt->slots[k];
  /* a new type: its size checked once (the records found above were) */
  if (!mil_tensor_size_ok(dt, rank, dims, NULL, 0)) return NULL;
  mil_type *t = tensor_new(p, dt, rank, is_scalar, dims);
  if (!t) return NULL;
  tt->slots[k] = t;
  tt->used++;
  return t;
}

static const mil_type *tensor_dims(mil_program *p, mil_dtype dt, int32_t rank, bool is_scalar, const mil_dim *dims) {
  if (rank < -1) return NULL;
  mil_dim stack[8], *d = stack;
  if (rank > 8) {
    d = ir_arena_alloc(p->arena, (size_t)rank * sizeof *d);
    if (!d) return NULL;
  }
  for (int32_t i = 0; i < rank; i++) {
    d[i] = dims ? dims[i] : (mil_dim){-1, NULL, false};
    if (d[i].sym) {
      d[i].sym = mil_program_intern(p, d[i].sym, (size_t)-1);
      if (!d[i].sym) return NULL;
    }
  }
  return tensor_type(p, dt, rank, is_scalar, d);
}

const mil_type *mil_type_tensor(mil_program *p, mil_dtype dt, int32_t rank, const mil_dim *dims) {
  return tensor_dims(p, dt, rank, false, dims);
}

const mil_type *mil_type_tensor_shape(mil_program *p, mil_dtype dt, int32_t rank, const int64_t *shape) {
  if (rank < -1) return NULL;
  mil_dim stack[8], *d = stack;
  if (rank > 8) {
    d = ir_arena_alloc(p->arena, (size_t)rank * sizeof *d);
    if (!d) return NULL;
  }
  for (int32_t i = 0; i < rank; i++) d[i] = (mil_dim){shape[i], NULL, false};
  return tensor_type(p, dt, rank, false, d);
}

const mil_type *mil_type_scalar(mil_program *p, mil_dtype dt) { return tensor_type(p, dt, 0, true, NULL); }

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
    return tensor_dims(p, t->dtype, t->rank, t->is_scalar, t->dims);
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
