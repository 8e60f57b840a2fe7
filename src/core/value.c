/* Compile-time values: construction, element access, equality. */
#include <assert.h>
#include <math.h>
#include <string.h>

#include "core/core_internal.h"

size_t mil_dtype_storage_bytes(mil_dtype dt, int64_t n) {
  if (n < 0) return 0;
  int b = mil_dtype_bits(dt);
  if (dt == MIL_DT_STRING) return (size_t)n * sizeof(const char *);
  if (b < 8) return (size_t)(((uint64_t)n * (uint64_t)b + 7) / 8);
  return (size_t)n * ((size_t)b / 8);
}

uint32_t mil_bits_get(const uint8_t *s, int64_t i, int bits) {
  uint64_t bit = (uint64_t)i * (uint64_t)bits;
  uint64_t byte = bit >> 3;
  unsigned off = (unsigned)(bit & 7);
  uint32_t w = s[byte];
  if (off + (unsigned)bits > 8) w |= (uint32_t)s[byte + 1] << 8;
  return (w >> off) & ((1u << bits) - 1);
}

void mil_bits_set(uint8_t *s, int64_t i, int bits, uint32_t v) {
  uint64_t bit = (uint64_t)i * (uint64_t)bits;
  uint64_t byte = bit >> 3;
  unsigned off = (unsigned)(bit & 7);
  uint32_t mask = ((1u << bits) - 1) << off;
  uint32_t val = (v << off) & mask;
  s[byte] = (uint8_t)((s[byte] & ~mask) | val);
  if (off + (unsigned)bits > 8) {
    s[byte + 1] = (uint8_t)((s[byte + 1] & ~(mask >> 8)) | (val >> 8));
  }
}

/* Set bits of a 64-bit word: the popcnt instruction when the target has
 * it, else the SWAR sum (no libgcc call per word). */
static inline int popcount64(uint64_t x) {
#if defined(__POPCNT__) || defined(__ARM_NEON)
  return __builtin_popcountll(x);
#else
  x -= (x >> 1) & 0x5555555555555555ull;
  x = (x & 0x3333333333333333ull) + ((x >> 2) & 0x3333333333333333ull);
  x = (x + (x >> 4)) & 0x0f0f0f0f0f0f0f0full;
  return (int)((x * 0x0101010101010101ull) >> 56);
#endif
}

int64_t mil_bits_count(const uint8_t *s, int64_t nbits) {
  if (!s || nbits <= 0) return 0;
  int64_t full = nbits >> 3, c = 0, i = 0;
  for (; i + 8 <= full; i += 8) {
    uint64_t w;
    memcpy(&w, s + i, 8);
    c += popcount64(w);
  }
  for (; i < full; i++) c += popcount64(s[i]);
  if (nbits & 7) c += popcount64(s[full] & ((1u << (nbits & 7)) - 1));
  return c;
}

static int64_t shape_numel(int32_t rank, const int64_t *shape) {
  int64_t n = 1;
  for (int32_t i = 0; i < rank; i++) {
    if (shape[i] < 0) return -1;
    if (shape[i] && n > INT64_MAX / shape[i]) return -1;
    n *= shape[i];
  }
  return n;
}

/* Storage for a value's n bytes: the arena for small ones, a large buffer
 * (recorded in v->big, freed by mil_program_collect_garbage once
 * unreachable) from IR_BIG_MIN bytes on. Zeroed when zero (arena memory
 * always is). */
static void *ir_value_bytes(mil_program *p, mil_value *v, size_t n, bool zero) {
  if (n < IR_BIG_MIN) return zero ? ir_arena_alloc(p->arena, n ? n : 1) : ir_arena_alloc_uninit(p->arena, n ? n : 1);
  return ir_big_alloc(p, n, zero, &v->big);
}

static mil_value *new_tensor(mil_program *p, mil_dtype dt, int32_t rank, const int64_t *shape, bool is_scalar,
                             const void *data, bool zero);

mil_value *mil_value_new_tensor(mil_program *p, mil_dtype dt, int32_t rank, const int64_t *shape, bool is_scalar,
                                const void *data) {
  return new_tensor(p, dt, rank, shape, is_scalar, data, !data);
}

mil_value *mil_value_new_tensor_uninit(mil_program *p, mil_dtype dt, int32_t rank, const int64_t *shape,
                                       bool is_scalar) {
  if (dt == MIL_DT_STRING) return NULL;
  return new_tensor(p, dt, rank, shape, is_scalar, NULL, false);
}

static mil_value *new_tensor(mil_program *p, mil_dtype dt, int32_t rank, const int64_t *shape, bool is_scalar,
                             const void *data, bool zero) {
  if (!mil_dtype_is_valid(dt) || rank < 0) return NULL;
  int64_t n = shape_numel(rank, shape);
  if (n < 0) return NULL;
  mil_value *v = ir_arena_alloc(p->arena, sizeof *v);
  if (!v) return NULL;
  const mil_type *t = is_scalar && rank == 0 ? mil_type_scalar(p, dt) : mil_type_tensor_shape(p, dt, rank, shape);
  if (!t) return NULL;
  v->kind = MIL_VAL_TENSOR;
  v->type = t;
  v->numel = n;
  v->nbytes = mil_dtype_storage_bytes(dt, n);
  v->storage = MIL_STORE_ARENA;
  void *buf = ir_value_bytes(p, v, v->nbytes, zero || dt == MIL_DT_STRING);
  if (!buf) return NULL;
  if (dt == MIL_DT_STRING) {
    const char **dst = buf;
    for (int64_t i = 0; i < n; i++) {
      const char *s = data ? ((const char *const *)data)[i] : "";
      dst[i] = mil_program_intern(p, s ? s : "", (size_t)-1);
      if (!dst[i]) return NULL;
    }
  } else if (data && v->nbytes) {
    memcpy(buf, data, v->nbytes);
  }
  v->raw = buf;
  return v;
}

mil_value *mil_value_new_view(mil_program *p, mil_dtype dt, int32_t rank, const int64_t *shape, const void *data,
                              size_t nbytes) {
  if (!mil_dtype_is_valid(dt) || dt == MIL_DT_STRING || rank < 0) return NULL;
  int64_t n = shape_numel(rank, shape);
  if (n < 0 || mil_dtype_storage_bytes(dt, n) != nbytes) return NULL;
  mil_value *v = ir_arena_alloc(p->arena, sizeof *v);
  if (!v) return NULL;
  v->kind = MIL_VAL_TENSOR;
  v->type = mil_type_tensor_shape(p, dt, rank, shape);
  if (!v->type) return NULL;
  v->numel = n;
  v->nbytes = nbytes;
  v->raw = data;
  v->storage = MIL_STORE_VIEW;
  return v;
}

void *mil_value_data_mut(mil_value *v) {
  return v->storage == MIL_STORE_ARENA && !v->deferred ? (void *)v->raw : NULL;
}

mil_value *mil_value_new_scalar_f64(mil_program *p, mil_dtype dt, double x) {
  mil_value *v = mil_value_new_tensor(p, dt, 0, NULL, true, NULL);
  if (v) mil_value_set_f64(v, 0, x);
  return v;
}

mil_value *mil_value_new_scalar_i64(mil_program *p, mil_dtype dt, int64_t x) {
  mil_value *v = mil_value_new_tensor(p, dt, 0, NULL, true, NULL);
  if (v) mil_value_set_i64(v, 0, x);
  return v;
}

mil_value *mil_value_new_bool(mil_program *p, bool b) { return mil_value_new_scalar_i64(p, MIL_DT_BOOL, b); }

mil_value *mil_value_new_string(mil_program *p, const char *s) {
  return mil_value_new_tensor(p, MIL_DT_STRING, 0, NULL, true, &s);
}

static mil_value *container(mil_program *p, mil_value_kind k, const mil_type *type, int32_t n,
                            const mil_value *const *keys, const mil_value *const *items) {
  if (n < 0) return NULL;
  mil_value *v = ir_arena_alloc(p->arena, sizeof *v);
  if (!v) return NULL;
  v->kind = k;
  v->type = type;
  v->n = n;
  const mil_value **it = ir_arena_alloc(p->arena, (size_t)(n ? n : 1) * sizeof *it);
  if (!it) return NULL;
  for (int32_t i = 0; i < n; i++) it[i] = items[i];
  v->items = it;
  if (keys) {
    const mil_value **ks = ir_arena_alloc(p->arena, (size_t)(n ? n : 1) * sizeof *ks);
    if (!ks) return NULL;
    for (int32_t i = 0; i < n; i++) ks[i] = keys[i];
    v->keys = ks;
  }
  return v;
}

mil_value *mil_value_new_list(mil_program *p, const mil_type *type, int32_t n, const mil_value *const *items) {
  return container(p, MIL_VAL_LIST, type, n, NULL, items);
}
mil_value *mil_value_new_tuple(mil_program *p, const mil_type *type, int32_t n, const mil_value *const *items) {
  return container(p, MIL_VAL_TUPLE, type, n, NULL, items);
}
mil_value *mil_value_new_dict(mil_program *p, const mil_type *type, int32_t n, const mil_value *const *keys,
                              const mil_value *const *items) {
  return container(p, MIL_VAL_DICT, type, n, keys, items);
}

static mil_dtype vdt(const mil_value *v) { return v->type->dtype; }

double mil_value_get_f64(const mil_value *v, int64_t i) {
  assert(v->kind == MIL_VAL_TENSOR && i >= 0 && i < v->numel);
  if (v->deferred) return ir_deferred_get_f64(v, i); /* the one element, not the whole weight */
  const void *d = v->raw;
  switch (vdt(v)) {
  case MIL_DT_FP32: return ((const float *)d)[i];
  case MIL_DT_FP64: return ((const double *)d)[i];
  case MIL_DT_FP16: return mil_fp16_to_fp32(((const uint16_t *)d)[i]);
  case MIL_DT_BF16: return mil_bf16_to_fp32(((const uint16_t *)d)[i]);
  case MIL_DT_FP8E4M3FN: return mil_fp8e4m3fn_to_fp32(((const uint8_t *)d)[i]);
  case MIL_DT_FP8E5M2: return mil_fp8e5m2_to_fp32(((const uint8_t *)d)[i]);
  case MIL_DT_COMPLEX64: return ((const float *)d)[2 * i];
  case MIL_DT_COMPLEX128: return ((const double *)d)[2 * i];
  default: return (double)mil_value_get_i64(v, i);
  }
}

int64_t mil_value_get_i64(const mil_value *v, int64_t i) {
  assert(v->kind == MIL_VAL_TENSOR && i >= 0 && i < v->numel);
  if (v->deferred) return (int64_t)ir_deferred_get_f64(v, i);
  const void *d = v->raw;
  switch (vdt(v)) {
  case MIL_DT_BOOL: return ((const uint8_t *)d)[i] != 0;
  case MIL_DT_INT8: return ((const int8_t *)d)[i];
  case MIL_DT_INT16: return ((const int16_t *)d)[i];
  case MIL_DT_INT32: return ((const int32_t *)d)[i];
  case MIL_DT_INT64: return ((const int64_t *)d)[i];
  case MIL_DT_UINT8: return ((const uint8_t *)d)[i];
  case MIL_DT_UINT16: return ((const uint16_t *)d)[i];
  case MIL_DT_UINT32: return ((const uint32_t *)d)[i];
  case MIL_DT_UINT64: return (int64_t)((const uint64_t *)d)[i];
  case MIL_DT_INT4: {
    uint32_t u = mil_bits_get(d, i, 4);
    return u >= 8 ? (int64_t)u - 16 : (int64_t)u;
  }
  case MIL_DT_UINT1: case MIL_DT_UINT2: case MIL_DT_UINT3: case MIL_DT_UINT4: case MIL_DT_UINT6:
    return mil_bits_get(d, i, mil_dtype_bits(vdt(v)));
  case MIL_DT_STRING: return 0;
  default: {
    double x = mil_value_get_f64(v, i);
    if (isnan(x)) return 0;
    if (x >= 9.2233720368547758e18) return INT64_MAX;
    if (x <= -9.2233720368547758e18) return INT64_MIN;
    return (int64_t)x;
  }
  }
}

const char *mil_value_get_str(const mil_value *v, int64_t i) {
  assert(v->kind == MIL_VAL_TENSOR && vdt(v) == MIL_DT_STRING && i >= 0 && i < v->numel);
  return ((const char *const *)v->raw)[i];
}

void mil_value_set_f64(mil_value *v, int64_t i, double x) {
  assert(v->kind == MIL_VAL_TENSOR && v->storage == MIL_STORE_ARENA && i >= 0 && i < v->numel);
  void *d = (void *)v->raw;
  switch (vdt(v)) {
  case MIL_DT_FP32: ((float *)d)[i] = (float)x; return;
  case MIL_DT_FP64: ((double *)d)[i] = x; return;
  case MIL_DT_FP16: ((uint16_t *)d)[i] = mil_fp64_to_fp16(x); return;
  case MIL_DT_BF16: ((uint16_t *)d)[i] = mil_fp32_to_bf16((float)x); return;
  case MIL_DT_FP8E4M3FN: ((uint8_t *)d)[i] = mil_fp32_to_fp8e4m3fn((float)x); return;
  case MIL_DT_FP8E5M2: ((uint8_t *)d)[i] = mil_fp32_to_fp8e5m2((float)x); return;
  case MIL_DT_COMPLEX64: ((float *)d)[2 * i] = (float)x; ((float *)d)[2 * i + 1] = 0; return;
  case MIL_DT_COMPLEX128: ((double *)d)[2 * i] = x; ((double *)d)[2 * i + 1] = 0; return;
  case MIL_DT_BOOL: ((uint8_t *)d)[i] = x != 0; return;
  default: {
    int64_t y;
    if (isnan(x)) y = 0;
    else if (x >= 9.2233720368547758e18) y = INT64_MAX;
    else if (x <= -9.2233720368547758e18) y = INT64_MIN;
    else y = (int64_t)x;
    mil_value_set_i64(v, i, y);
  }
  }
}

void mil_value_set_i64(mil_value *v, int64_t i, int64_t x) {
  assert(v->kind == MIL_VAL_TENSOR && v->storage == MIL_STORE_ARENA && i >= 0 && i < v->numel);
  void *d = (void *)v->raw;
  switch (vdt(v)) {
  case MIL_DT_BOOL: ((uint8_t *)d)[i] = x != 0; return;
  case MIL_DT_INT8: ((int8_t *)d)[i] = (int8_t)x; return;
  case MIL_DT_INT16: ((int16_t *)d)[i] = (int16_t)x; return;
  case MIL_DT_INT32: ((int32_t *)d)[i] = (int32_t)x; return;
  case MIL_DT_INT64: ((int64_t *)d)[i] = x; return;
  case MIL_DT_UINT8: ((uint8_t *)d)[i] = (uint8_t)x; return;
  case MIL_DT_UINT16: ((uint16_t *)d)[i] = (uint16_t)x; return;
  case MIL_DT_UINT32: ((uint32_t *)d)[i] = (uint32_t)x; return;
  case MIL_DT_UINT64: ((uint64_t *)d)[i] = (uint64_t)x; return;
  case MIL_DT_INT4: case MIL_DT_UINT1: case MIL_DT_UINT2: case MIL_DT_UINT3: case MIL_DT_UINT4:
  case MIL_DT_UINT6: {
    int b = mil_dtype_bits(vdt(v));
    mil_bits_set(d, i, b, (uint32_t)x & ((1u << b) - 1));
    return;
  }
  case MIL_DT_STRING: return;
  default: mil_value_set_f64(v, i, (double)x); return;
  }
}

bool mil_value_equal(const mil_value *a, const mil_value *b) {
  if (a == b) return true;
  if (!a || !b || a->kind != b->kind) return false;
  if (a->kind != MIL_VAL_TENSOR) {
    if (a->n != b->n || (a->keys == NULL) != (b->keys == NULL)) return false;
    for (int32_t i = 0; i < a->n; i++) {
      if (!mil_value_equal(a->items[i], b->items[i])) return false;
      if (a->keys && !mil_value_equal(a->keys[i], b->keys[i])) return false;
    }
    return true;
  }
  if (!mil_type_compatible(a->type, b->type) || a->numel != b->numel) return false;
  if (vdt(a) == MIL_DT_STRING) {
    for (int64_t i = 0; i < a->numel; i++)
      if (strcmp(mil_value_get_str(a, i), mil_value_get_str(b, i)) != 0) return false;
    return true;
  }
  return ir_value_bytes_equal(a, b);
}

uint64_t mil_value_hash(const mil_value *v) {
  uint64_t h = IR_HASH_SEED;
  if (!v) return h;
  h = ir_hash_bytes(&v->kind, sizeof v->kind, h);
  if (v->kind != MIL_VAL_TENSOR) {
    for (int32_t i = 0; i < v->n; i++) {
      uint64_t x = mil_value_hash(v->items[i]);
      h = ir_hash_bytes(&x, sizeof x, h);
    }
    return h;
  }
  mil_dtype dt = vdt(v);
  h = ir_hash_bytes(&dt, sizeof dt, h);
  h = ir_hash_bytes(&v->type->rank, sizeof v->type->rank, h);
  for (int32_t i = 0; i < v->type->rank; i++) h = ir_hash_bytes(&v->type->dims[i].size, 8, h);
  if (dt == MIL_DT_STRING) {
    for (int64_t i = 0; i < v->numel; i++) {
      const char *s = mil_value_get_str(v, i);
      h = ir_hash_bytes(s, strlen(s) + 1, h);
    }
    return h;
  }
  /* Hash at most 4096 bytes spread over the payload: cheap for huge weights,
   * consistent with equality (equal values hash equal). */
  unsigned char buf[4096];
  if (v->nbytes <= 4096) return mil_value_read(v, 0, v->nbytes, buf) ? ir_hash_bytes(buf, v->nbytes, h) : h;
  size_t step = v->nbytes / 64, w = 64 < step ? 64 : step;
  for (size_t k = 0; k < 64; k++)
    if (mil_value_read(v, k * step, w, buf)) h = ir_hash_bytes(buf, w, h);
  return mil_value_read(v, v->nbytes - 64, 64, buf) ? ir_hash_bytes(buf, 64, h) : h;
}

const mil_value *ir_value_import(mil_program *p, const mil_value *v) {
  if (!v) return NULL;
  mil_value *r = ir_arena_alloc(p->arena, sizeof *r);
  if (!r) return NULL;
  *r = *v;
  r->type = mil_type_import(p, v->type);
  if (v->type && !r->type) return NULL;
  if (v->blob_file) r->blob_file = mil_program_intern(p, v->blob_file, (size_t)-1);
  r->big = NULL;
  r->widened_from = NULL;
  r->deferred = NULL;
  if (v->kind == MIL_VAL_TENSOR) {
    if (v->storage == MIL_STORE_VIEW) return r;
    r->file_mapped = false;
    void *buf = ir_value_bytes(p, r, v->nbytes, false);
    if (!buf) return NULL;
    if (v->type->dtype == MIL_DT_STRING) {
      const char **dst = buf;
      for (int64_t i = 0; i < v->numel; i++) dst[i] = mil_program_intern(p, mil_value_get_str(v, i), (size_t)-1);
    } else if (v->nbytes && !mil_value_read(v, 0, v->nbytes, buf)) {
      return NULL;
    }
    r->raw = buf;
    return r;
  }
  const mil_value **items = ir_arena_alloc(p->arena, (size_t)(v->n ? v->n : 1) * sizeof *items);
  if (!items) return NULL;
  for (int32_t i = 0; i < v->n; i++) items[i] = ir_value_import(p, v->items[i]);
  r->items = items;
  if (v->keys) {
    const mil_value **keys = ir_arena_alloc(p->arena, (size_t)(v->n ? v->n : 1) * sizeof *keys);
    if (!keys) return NULL;
    for (int32_t i = 0; i < v->n; i++) keys[i] = ir_value_import(p, v->keys[i]);
    r->keys = keys;
  }
  return r;
}
