/* MIL.proto values <-> libmil values (types: proto_type.c).
 *
 * Reading mirrors coremltools/converters/mil/frontend/milproto/load.py
 * (_load_value, _load_tensorvalue, _load_file_value,
 * _restore_np_from_bytes_value); writing mirrors
 * converters/mil/backend/mil/helper.py (create_tensor_value,
 * create_scalar_value, create_file_value_tensor) and
 * load.py (should_use_weight_file, create_file_value). Encodings:
 * formats.md section 3.1.
 *
 * Reading is lenient where the encoding is unambiguous (any numeric
 * TensorValue field is accepted for any numeric dtype, with range checks)
 * and strict about counts: a value must hold exactly as many elements (or
 * bytes) as its type says, checked before anything is allocated.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "io/model_internal.h"

static bool dtype_ok(int dt) { return mil_dtype_is_valid(dt) && dt != MIL_DT_UNUSED && !mil_dtype_is_complex(dt); }

/* ------------------------------------------------------------------------ */
/* values: proto -> IR                                                        */
/* ------------------------------------------------------------------------ */

/* Range of an integer dtype held in a byte-or-wider layout. */
static bool int_range(mil_dtype dt, int64_t *lo, uint64_t *hi) {
  switch (dt) {
  case MIL_DT_BOOL: *lo = INT64_MIN; *hi = UINT64_MAX; return true; /* any value: nonzero is true */
  case MIL_DT_INT8: *lo = INT8_MIN; *hi = INT8_MAX; return true;
  case MIL_DT_INT16: *lo = INT16_MIN; *hi = INT16_MAX; return true;
  case MIL_DT_INT32: *lo = INT32_MIN; *hi = INT32_MAX; return true;
  case MIL_DT_INT64: *lo = INT64_MIN; *hi = INT64_MAX; return true;
  case MIL_DT_INT4: *lo = -8; *hi = 7; return true;
  case MIL_DT_UINT8: *lo = 0; *hi = UINT8_MAX; return true;
  case MIL_DT_UINT16: *lo = 0; *hi = UINT16_MAX; return true;
  case MIL_DT_UINT32: *lo = 0; *hi = UINT32_MAX; return true;
  case MIL_DT_UINT64: *lo = 0; *hi = UINT64_MAX; return true;
  case MIL_DT_UINT1: case MIL_DT_UINT2: case MIL_DT_UINT3: case MIL_DT_UINT4: case MIL_DT_UINT6:
    *lo = 0;
    *hi = (1u << mil_dtype_bits(dt)) - 1;
    return true;
  default: return false;
  }
}

static mil_status store_int(io_read *r, mil_value *v, mil_dtype dt, int64_t i, int64_t x, const char *where) {
  int64_t lo;
  uint64_t hi;
  if (mil_dtype_is_float(dt)) {
    mil_value_set_f64(v, i, (double)x);
    return MIL_OK;
  }
  if (!int_range(dt, &lo, &hi))
    return mil_diag_error(r->d, MIL_ERR_FORMAT, "%s: integer data cannot be stored as %s", where, mil_dtype_name(dt));
  if (x < lo || (x >= 0 && (uint64_t)x > hi))
    return mil_diag_error(r->d, MIL_ERR_FORMAT, "%s: element %lld is %lld, outside the range of %s", where,
                          (long long)i, (long long)x, mil_dtype_name(dt));
  mil_value_set_i64(v, i, dt == MIL_DT_BOOL ? x != 0 : x);
  return MIL_OK;
}

static mil_status store_float(io_read *r, mil_value *v, mil_dtype dt, int64_t i, double x, const char *where) {
  if (mil_dtype_is_float(dt)) {
    mil_value_set_f64(v, i, x);
    return MIL_OK;
  }
  if (dt == MIL_DT_BOOL) {
    mil_value_set_i64(v, i, x != 0);
    return MIL_OK;
  }
  /* numpy's astype truncates toward zero */
  if (!(x > -9.3e18 && x < 9.3e18))
    return mil_diag_error(r->d, MIL_ERR_FORMAT, "%s: element %lld (%g) cannot be converted to %s", where,
                          (long long)i, x, mil_dtype_name(dt));
  return store_int(r, v, dt, i, (int64_t)x, where);
}

static const char *field_name(Milproto__TensorValue__ValueCase c) {
  switch (c) {
  case MILPROTO__TENSOR_VALUE__VALUE_FLOATS: return "floats";
  case MILPROTO__TENSOR_VALUE__VALUE_INTS: return "ints";
  case MILPROTO__TENSOR_VALUE__VALUE_BOOLS: return "bools";
  case MILPROTO__TENSOR_VALUE__VALUE_STRINGS: return "strings";
  case MILPROTO__TENSOR_VALUE__VALUE_LONG_INTS: return "longInts";
  case MILPROTO__TENSOR_VALUE__VALUE_DOUBLES: return "doubles";
  case MILPROTO__TENSOR_VALUE__VALUE_BYTES: return "bytes";
  default: return "(none)";
  }
}

/* Number of elements a TensorValue holds in its set field (bytes: -1). */
static int64_t field_count(const Milproto__TensorValue *tv) {
  switch (tv->value_case) {
  case MILPROTO__TENSOR_VALUE__VALUE_FLOATS: return (int64_t)tv->floats->n_values;
  case MILPROTO__TENSOR_VALUE__VALUE_INTS: return (int64_t)tv->ints->n_values;
  case MILPROTO__TENSOR_VALUE__VALUE_BOOLS: return (int64_t)tv->bools->n_values;
  case MILPROTO__TENSOR_VALUE__VALUE_STRINGS: return (int64_t)tv->strings->n_values;
  case MILPROTO__TENSOR_VALUE__VALUE_LONG_INTS: return (int64_t)tv->longints->n_values;
  case MILPROTO__TENSOR_VALUE__VALUE_DOUBLES: return (int64_t)tv->doubles->n_values;
  case MILPROTO__TENSOR_VALUE__VALUE_BYTES: return -1;
  default: return 0;
  }
}

static mil_status immediate_tensor(io_read *r, const Milproto__TensorValue *tv, mil_dtype dt, int32_t rank,
                                   const int64_t *shape, int64_t n, const char *where, const mil_value **out) {
  Milproto__TensorValue__ValueCase fc = tv ? tv->value_case : MILPROTO__TENSOR_VALUE__VALUE__NOT_SET;
  /* check the amount of data before allocating anything */
  if (fc == MILPROTO__TENSOR_VALUE__VALUE__NOT_SET) {
    if (n != 0)
      return mil_diag_error(r->d, MIL_ERR_FORMAT, "%s: TensorValue holds no data, expected %lld %s elements", where,
                            (long long)n, mil_dtype_name(dt));
  } else if (fc == MILPROTO__TENSOR_VALUE__VALUE_BYTES) {
    size_t have = tv->bytes->values.len, want = mil_dtype_storage_bytes(dt, n);
    if (dt == MIL_DT_STRING || dt == MIL_DT_BOOL || mil_dtype_bits(dt) > 64)
      return mil_diag_error(r->d, MIL_ERR_FORMAT, "%s: %s data cannot be given as raw bytes", where,
                            mil_dtype_name(dt));
    if (have != want)
      return mil_diag_error(r->d, MIL_ERR_FORMAT, "%s: TensorValue.bytes holds %zu bytes, expected %zu for %lld %s "
                            "elements", where, have, want, (long long)n, mil_dtype_name(dt));
  } else {
    int64_t have = field_count(tv);
    if (have != n)
      return mil_diag_error(r->d, MIL_ERR_FORMAT, "%s: TensorValue.%s holds %lld elements, expected %lld", where,
                            field_name(fc), (long long)have, (long long)n);
    if ((dt == MIL_DT_STRING) != (fc == MILPROTO__TENSOR_VALUE__VALUE_STRINGS) && n > 0)
      return mil_diag_error(r->d, MIL_ERR_FORMAT, "%s: %s data given in TensorValue.%s", where, mil_dtype_name(dt),
                            field_name(fc));
  }
  if (dt == MIL_DT_STRING) {
    const char *const *src = fc == MILPROTO__TENSOR_VALUE__VALUE_STRINGS ? (const char *const *)tv->strings->values : NULL;
    *out = mil_value_new_tensor(r->p, dt, rank, shape, rank == 0, src);
    return *out ? MIL_OK : MIL_ERR_NOMEM;
  }
  mil_value *v = mil_value_new_tensor(r->p, dt, rank, shape, rank == 0, NULL);
  if (!v) return MIL_ERR_NOMEM;
  mil_status st = MIL_OK;
  switch (fc) {
  case MILPROTO__TENSOR_VALUE__VALUE_FLOATS:
    if (dt == MIL_DT_FP32 && n > 0) memcpy(mil_value_data_mut(v), tv->floats->values, (size_t)n * sizeof(float));
    else
      for (int64_t i = 0; i < n && st == MIL_OK; i++) st = store_float(r, v, dt, i, tv->floats->values[i], where);
    break;
  case MILPROTO__TENSOR_VALUE__VALUE_DOUBLES:
    for (int64_t i = 0; i < n && st == MIL_OK; i++) st = store_float(r, v, dt, i, tv->doubles->values[i], where);
    break;
  case MILPROTO__TENSOR_VALUE__VALUE_INTS:
    for (int64_t i = 0; i < n && st == MIL_OK; i++) st = store_int(r, v, dt, i, tv->ints->values[i], where);
    break;
  case MILPROTO__TENSOR_VALUE__VALUE_LONG_INTS:
    for (int64_t i = 0; i < n && st == MIL_OK; i++) st = store_int(r, v, dt, i, tv->longints->values[i], where);
    break;
  case MILPROTO__TENSOR_VALUE__VALUE_BOOLS:
    for (int64_t i = 0; i < n && st == MIL_OK; i++) st = store_int(r, v, dt, i, tv->bools->values[i] ? 1 : 0, where);
    break;
  case MILPROTO__TENSOR_VALUE__VALUE_BYTES: {
    uint8_t *dst = mil_value_data_mut(v);
    if (v->nbytes) memcpy(dst, tv->bytes->values.data, v->nbytes);
    if (mil_dtype_is_subbyte(dt) && v->nbytes) {
      /* keep the unused high bits of the last byte zero, as the blob writer does */
      int used = (int)(((uint64_t)n * (uint64_t)mil_dtype_bits(dt)) % 8);
      if (used) dst[v->nbytes - 1] &= (uint8_t)((1u << used) - 1);
    }
    break;
  }
  default: break;
  }
  if (st != MIL_OK) return st;
  *out = v;
  return MIL_OK;
}

/* Shape of a value type that must be fully static; rank -1 on failure. */
static mil_status static_shape(io_read *r, const mil_type *t, const char *where, int64_t **shape, int64_t *numel) {
  if (t->rank < 0)
    return mil_diag_error(r->d, MIL_ERR_FORMAT, "%s: a value's type must have a known rank", where);
  *shape = mil_program_alloc(r->p, (size_t)(t->rank ? t->rank : 1) * sizeof **shape);
  if (!*shape) return MIL_ERR_NOMEM;
  int64_t n = 1;
  for (int32_t i = 0; i < t->rank; i++) {
    if (t->dims[i].size < 0)
      return mil_diag_error(r->d, MIL_ERR_FORMAT, "%s: a value's type must have constant dimensions (dimension %d "
                            "is unknown)", where, i);
    (*shape)[i] = t->dims[i].size;
    if (t->dims[i].size && n > (INT64_MAX / 64) / t->dims[i].size)
      return mil_diag_error(r->d, MIL_ERR_FORMAT, "%s: value shape has too many elements", where);
    n *= t->dims[i].size;
  }
  *numel = n;
  return MIL_OK;
}

static mil_status blob_tensor(io_read *r, const Milproto__Value__BlobFileValue *bf, const mil_type *t, const char *where,
                              const mil_value **out) {
  int64_t *shape, n;
  mil_status st = static_shape(r, t, where, &shape, &n);
  if (st != MIL_OK) return st;
  if (mil_blob_dtype_code(t->dtype) == 0)
    return mil_diag_error(r->d, MIL_ERR_FORMAT, "%s: %s values cannot be stored in a weight file", where,
                          mil_dtype_name(t->dtype));
  const char *fname = bf->filename ? bf->filename : "";
  mil_blob_file *f = NULL;
  if ((st = io_weights_lookup(r, fname, where, &f)) != MIL_OK) return st;
  const void *data;
  size_t nbytes;
  st = mil_blob_file_read(f, bf->offset, t->dtype, n, &data, &nbytes, r->d);
  if (st != MIL_OK) {
    mil_diag_error(r->d, st, "%s: reading %lld %s elements from '%s' at offset %llu failed", where, (long long)n,
                   mil_dtype_name(t->dtype), fname, (unsigned long long)bf->offset);
    return st;
  }
  mil_value *v = mil_value_new_view(r->p, t->dtype, t->rank, shape, data, nbytes);
  if (!v) return MIL_ERR_NOMEM;
  v->blob_file = mil_program_intern(r->p, fname, (size_t)-1);
  v->blob_offset = bf->offset;
  v->file_mapped = true;
  if (!v->blob_file) return MIL_ERR_NOMEM;
  *out = v;
  return MIL_OK;
}

static mil_status value_items(io_read *r, Milproto__Value **vals, size_t n, const char *where, const mil_value ***out) {
  if (n > (size_t)INT32_MAX / 16) return mil_diag_error(r->d, MIL_ERR_FORMAT, "%s: too many items", where);
  const mil_value **items = mil_program_alloc(r->p, (n ? n : 1) * sizeof *items);
  if (!items) return MIL_ERR_NOMEM;
  for (size_t i = 0; i < n; i++) {
    mil_status st = io_value_from_proto(r, vals[i], where, &items[i]);
    if (st != MIL_OK) return st;
  }
  *out = items;
  return MIL_OK;
}

mil_status io_value_from_proto(io_read *r, const Milproto__Value *pv, const char *where, const mil_value **out) {
  *out = NULL;
  if (!pv) return mil_diag_error(r->d, MIL_ERR_FORMAT, "%s: value missing", where);
  if (pv->docstring && pv->docstring[0])
    return mil_diag_error(r->d, MIL_ERR_UNSUPPORTED, "%s: Value.docString is set (\"%.40s\"); libmil, like "
                          "coremltools, does not keep value doc strings", where, pv->docstring);
  const mil_type *t;
  mil_status st = io_type_from_proto(r, pv->type, where, &t);
  if (st != MIL_OK) return st;
  if (pv->value_case == MILPROTO__VALUE__VALUE_BLOB_FILE_VALUE) {
    if (t->kind != MIL_TYPE_TENSOR)
      return mil_diag_error(r->d, MIL_ERR_FORMAT, "%s: only tensor values can live in a weight file", where);
    return blob_tensor(r, pv->blobfilevalue, t, where, out);
  }
  if (pv->value_case != MILPROTO__VALUE__VALUE_IMMEDIATE_VALUE)
    return mil_diag_error(r->d, MIL_ERR_FORMAT, "%s: value has neither immediateValue nor blobFileValue", where);
  const Milproto__Value__ImmediateValue *iv = pv->immediatevalue;
  switch (t->kind) {
  case MIL_TYPE_TENSOR: {
    if (iv->value_case != MILPROTO__VALUE__IMMEDIATE_VALUE__VALUE_TENSOR)
      return mil_diag_error(r->d, MIL_ERR_FORMAT, "%s: tensor-typed value does not hold an immediate tensor", where);
    int64_t *shape, n;
    if ((st = static_shape(r, t, where, &shape, &n)) != MIL_OK) return st;
    return immediate_tensor(r, iv->tensor, t->dtype, t->rank, shape, n, where, out);
  }
  case MIL_TYPE_LIST:
  case MIL_TYPE_TUPLE: {
    bool is_list = t->kind == MIL_TYPE_LIST;
    if (iv->value_case != (is_list ? MILPROTO__VALUE__IMMEDIATE_VALUE__VALUE_LIST : MILPROTO__VALUE__IMMEDIATE_VALUE__VALUE_TUPLE))
      return mil_diag_error(r->d, MIL_ERR_FORMAT, "%s: %s-typed value does not hold an immediate %s", where,
                            is_list ? "list" : "tuple", is_list ? "list" : "tuple");
    Milproto__Value **vals = is_list ? iv->list->values : iv->tuple->values;
    size_t n = is_list ? iv->list->n_values : iv->tuple->n_values;
    const mil_value **items = NULL;
    if ((st = value_items(r, vals, n, where, &items)) != MIL_OK) return st;
    if (!is_list && (size_t)t->n_elems != n)
      return mil_diag_error(r->d, MIL_ERR_FORMAT, "%s: tuple type has %d elements but the value has %zu", where,
                            t->n_elems, n);
    *out = is_list ? mil_value_new_list(r->p, t, (int32_t)n, items) : mil_value_new_tuple(r->p, t, (int32_t)n, items);
    return *out ? MIL_OK : MIL_ERR_NOMEM;
  }
  case MIL_TYPE_DICT: {
    if (iv->value_case != MILPROTO__VALUE__IMMEDIATE_VALUE__VALUE_DICTIONARY)
      return mil_diag_error(r->d, MIL_ERR_FORMAT, "%s: dictionary-typed value does not hold an immediate dictionary",
                            where);
    size_t n = iv->dictionary->n_values;
    if (n > (size_t)INT32_MAX / 16) return mil_diag_error(r->d, MIL_ERR_FORMAT, "%s: dictionary too large", where);
    const mil_value **keys = mil_program_alloc(r->p, (n ? n : 1) * sizeof *keys);
    const mil_value **vals = mil_program_alloc(r->p, (n ? n : 1) * sizeof *vals);
    if (!keys || !vals) return MIL_ERR_NOMEM;
    for (size_t i = 0; i < n; i++) {
      const Milproto__DictionaryValue__KeyValuePair *kv = iv->dictionary->values[i];
      if (!kv || !kv->key || !kv->value)
        return mil_diag_error(r->d, MIL_ERR_FORMAT, "%s: dictionary entry %zu lacks a key or a value", where, i);
      if ((st = io_value_from_proto(r, kv->key, where, &keys[i])) != MIL_OK) return st;
      if ((st = io_value_from_proto(r, kv->value, where, &vals[i])) != MIL_OK) return st;
    }
    *out = mil_value_new_dict(r->p, t, (int32_t)n, keys, vals);
    return *out ? MIL_OK : MIL_ERR_NOMEM;
  }
  default:
    return mil_diag_error(r->d, MIL_ERR_FORMAT, "%s: values of state type cannot be constants", where);
  }
}

/* ------------------------------------------------------------------------ */
/* types: IR -> proto                                                         */
/* ------------------------------------------------------------------------ */


/* ------------------------------------------------------------------------ */
/* values: IR -> proto                                                        */
/* ------------------------------------------------------------------------ */

struct io_seen_blob {
  const void *data;
  size_t nbytes;
  mil_dtype dt;
  uint64_t offset;
};

void io_write_free(io_write *w) {
  free(w->seen);
  w->seen = NULL;
  w->n_seen = w->cap_seen = 0;
}

/* The blobs already written for viewed bytes: open addressing on the data
 * pointer (cap_seen a power of two, empty slots have data NULL). */
static size_t seen_slot(const void *data, size_t cap) {
  uint64_t h = (uint64_t)(uintptr_t)data * 0x9e3779b97f4a7c15ull;
  return (size_t)(h >> 20) & (cap - 1);
}

/* What identifies a value's bytes: their address, or for a deferred value
 * the value record itself (never the address of any value's bytes). Not its
 * source: deferred values of one source with different recipes (a cast and
 * a transposed cast, or two scalings of one conv weight) hold different
 * bytes of the same size and dtype. */
static const void *seen_key(const mil_value *v) {
  return mil_value_is_deferred(v) ? (const void *)v : mil_value_data(v);
}

static const struct io_seen_blob *seen_find(const io_write *w, const mil_value *v) {
  const void *key = seen_key(v);
  if (!w->cap_seen || !key) return NULL;
  for (size_t k = seen_slot(key, w->cap_seen); w->seen[k].data; k = (k + 1) & (w->cap_seen - 1))
    if (w->seen[k].data == key && w->seen[k].nbytes == v->nbytes && w->seen[k].dt == v->type->dtype)
      return &w->seen[k];
  return NULL;
}

static bool read_value(void *ud, size_t offset, size_t n, void *dst) { return mil_value_read(ud, offset, n, dst); }

static bool seen_add(io_write *w, struct io_seen_blob e) {
  if ((w->n_seen + 1) * 2 > w->cap_seen) {
    size_t nc = w->cap_seen ? w->cap_seen * 2 : 64;
    struct io_seen_blob *ns = calloc(nc, sizeof *ns);
    if (!ns) return false;
    for (size_t i = 0; i < w->cap_seen; i++) {
      if (!w->seen[i].data) continue;
      size_t k = seen_slot(w->seen[i].data, nc);
      while (ns[k].data) k = (k + 1) & (nc - 1);
      ns[k] = w->seen[i];
    }
    free(w->seen);
    w->seen = ns;
    w->cap_seen = nc;
  }
  size_t k = seen_slot(e.data, w->cap_seen);
  while (w->seen[k].data) k = (k + 1) & (w->cap_seen - 1);
  w->seen[k] = e;
  w->n_seen++;
  return true;
}

/* Immediate TensorValue for a tensor value, in the field formats.md 3.1
 * assigns to its dtype. */
static Milproto__TensorValue *tensor_to_proto(io_write *w, const mil_value *v, const char *where) {
  mil_dtype dt = v->type->dtype;
  int64_t n = v->numel;
  Milproto__TensorValue *tv = io_pb_new(&milproto__tensor_value__descriptor);
  if (!tv) return OOM(w);
  switch (dt) {
  case MIL_DT_BOOL: {
    Milproto__TensorValue__RepeatedBools *f = io_pb_new(&milproto__tensor_value__repeated_bools__descriptor);
    if (!f) goto oom;
    tv->value_case = MILPROTO__TENSOR_VALUE__VALUE_BOOLS;
    tv->bools = f;
    if (n && !(f->values = io_wr_alloc((size_t)n * sizeof *f->values))) goto oom;
    f->n_values = (size_t)n;
    for (int64_t i = 0; i < n; i++) f->values[i] = ((const uint8_t *)mil_value_data(v))[i] != 0;
    break;
  }
  case MIL_DT_INT32:
  case MIL_DT_INT16:
  case MIL_DT_UINT16: {
    Milproto__TensorValue__RepeatedInts *f = io_pb_new(&milproto__tensor_value__repeated_ints__descriptor);
    if (!f) goto oom;
    tv->value_case = MILPROTO__TENSOR_VALUE__VALUE_INTS;
    tv->ints = f;
    if (n && !(f->values = io_wr_alloc((size_t)n * sizeof *f->values))) goto oom;
    f->n_values = (size_t)n;
    for (int64_t i = 0; i < n; i++) f->values[i] = (int32_t)mil_value_get_i64(v, i);
    break;
  }
  case MIL_DT_INT64:
  case MIL_DT_UINT64: {
    Milproto__TensorValue__RepeatedLongInts *f = io_pb_new(&milproto__tensor_value__repeated_long_ints__descriptor);
    if (!f) goto oom;
    tv->value_case = MILPROTO__TENSOR_VALUE__VALUE_LONG_INTS;
    tv->longints = f;
    if (n && !(f->values = io_wr_alloc((size_t)n * sizeof *f->values))) goto oom;
    f->n_values = (size_t)n;
    if (n) memcpy(f->values, mil_value_data(v), (size_t)n * 8);
    break;
  }
  case MIL_DT_FP32: {
    Milproto__TensorValue__RepeatedFloats *f = io_pb_new(&milproto__tensor_value__repeated_floats__descriptor);
    if (!f) goto oom;
    tv->value_case = MILPROTO__TENSOR_VALUE__VALUE_FLOATS;
    tv->floats = f;
    if (n && !(f->values = io_wr_alloc((size_t)n * sizeof *f->values))) goto oom;
    f->n_values = (size_t)n;
    if (n) memcpy(f->values, mil_value_data(v), (size_t)n * 4);
    break;
  }
  case MIL_DT_FP64: {
    Milproto__TensorValue__RepeatedDoubles *f = io_pb_new(&milproto__tensor_value__repeated_doubles__descriptor);
    if (!f) goto oom;
    tv->value_case = MILPROTO__TENSOR_VALUE__VALUE_DOUBLES;
    tv->doubles = f;
    if (n && !(f->values = io_wr_alloc((size_t)n * sizeof *f->values))) goto oom;
    f->n_values = (size_t)n;
    if (n) memcpy(f->values, mil_value_data(v), (size_t)n * 8);
    break;
  }
  case MIL_DT_STRING: {
    Milproto__TensorValue__RepeatedStrings *f = io_pb_new(&milproto__tensor_value__repeated_strings__descriptor);
    if (!f) goto oom;
    tv->value_case = MILPROTO__TENSOR_VALUE__VALUE_STRINGS;
    tv->strings = f;
    if (n && !(f->values = io_wr_calloc((size_t)n * sizeof *f->values))) goto oom;
    f->n_values = (size_t)n;
    for (int64_t i = 0; i < n; i++)
      if (!(f->values[i] = io_model_strdup(mil_value_get_str(v, i)))) goto oom;
    break;
  }
  default: {
    /* fp16, bf16, fp8, int8, uint8, uint32 and the sub-byte types: raw
     * little-endian bytes, sub-byte types bit-packed (formats.md 3.1) */
    if (!dtype_ok(dt) || mil_dtype_bits(dt) > 32) {
      io_pb_free(tv);
      return io_wfail(w, MIL_ERR_UNSUPPORTED, "%s: %s: %s values cannot be written", w->file, where, mil_dtype_name(dt));
    }
    Milproto__TensorValue__RepeatedBytes *f = io_pb_new(&milproto__tensor_value__repeated_bytes__descriptor);
    if (!f) goto oom;
    tv->value_case = MILPROTO__TENSOR_VALUE__VALUE_BYTES;
    tv->bytes = f;
    if (v->nbytes) {
      if (!(f->values.data = io_wr_alloc(v->nbytes))) goto oom;
      memcpy(f->values.data, mil_value_data(v), v->nbytes);
      f->values.len = v->nbytes;
    }
    break;
  }
  }
  return tv;
oom:
  io_pb_free(tv);
  return OOM(w);
}

static Milproto__Value *blob_value(io_write *w, const mil_value *v, const char *where) {
  uint64_t off = 0;
  bool found = false;
  /* one blob per weight: values viewing the same bytes (shared across
   * functions, or the same const printed twice) reuse the first record */
  const struct io_seen_blob *prev = seen_find(w, v);
  if (prev) {
    off = prev->offset;
    found = true;
  }
  if (!found) {
    bool deferred = mil_value_is_deferred(v);
    mil_status st = deferred ? mil_blob_writer_add_stream(w->bw, v->type->dtype, read_value, (void *)v, v->nbytes,
                                                          v->numel, &off, w->d)
                             : mil_blob_writer_add(w->bw, v->type->dtype, mil_value_data(v), v->nbytes, v->numel,
                                                   &off, w->d);
    if (st != MIL_OK) return io_wfail(w, st, "%s: %s: writing the weight blob failed", w->file, where);
    mil_program_release_value_pages(w->p, v, 0, v->nbytes); /* written: a mapped source need not stay resident */
    if ((v->storage == MIL_STORE_VIEW || deferred) && seen_key(v) &&
        !seen_add(w, (struct io_seen_blob){seen_key(v), v->nbytes, v->type->dtype, off}))
      return OOM(w);
  }
  Milproto__Value *pv = io_pb_new(&milproto__value__descriptor);
  if (!pv) return OOM(w);
  /* the type of a blob value is its static tensor type (never a scalar) */
  mil_type tt = *v->type;
  tt.is_scalar = false;
  if (!(pv->type = io_type_to_proto(w, &tt, where))) goto fail;
  pv->value_case = MILPROTO__VALUE__VALUE_BLOB_FILE_VALUE;
  if (!(pv->blobfilevalue = io_pb_new(&milproto__value__blob_file_value__descriptor))) goto fail;
  if (!(pv->blobfilevalue->filename = io_model_strdup(w->blob_name ? w->blob_name : IO_BLOB_FILE_NAME))) goto fail;
  pv->blobfilevalue->offset = off;
  return pv;
fail:
  io_pb_free(pv);
  if (w->st == MIL_OK) return OOM(w);
  return NULL;
}

/* The container type of a list/tuple/dict value without one: built from
 * its items (a list of n scalars has type List[n, item type]). */
static mil_type *container_type(const mil_value *v, mil_type *tmp, const mil_type **elems) {
  memset(tmp, 0, sizeof *tmp);
  if (v->kind == MIL_VAL_LIST) {
    tmp->kind = MIL_TYPE_LIST;
    tmp->elem = v->n ? v->items[0]->type : NULL;
    tmp->length = (mil_dim){v->n, NULL, false};
  } else if (v->kind == MIL_VAL_TUPLE) {
    tmp->kind = MIL_TYPE_TUPLE;
    tmp->n_elems = v->n;
    for (int32_t i = 0; i < v->n; i++) elems[i] = v->items[i]->type;
    tmp->elems = elems;
  } else {
    tmp->kind = MIL_TYPE_DICT;
    tmp->elem = v->n ? v->keys[0]->type : NULL;
    tmp->value = v->n ? v->items[0]->type : NULL;
  }
  return tmp;
}

Milproto__Value *io_value_to_proto(io_write *w, const mil_value *v, bool allow_blob, const char *where) {
  if (!v) return io_wfail(w, MIL_ERR_INVALID, "%s: %s: value missing", w->file, where);
  if (v->kind == MIL_VAL_TENSOR && allow_blob && w->bw && mil_blob_should_store(v, w->spec_version))
    return blob_value(w, v, where);
  Milproto__Value *pv = io_pb_new(&milproto__value__descriptor);
  if (!pv) return OOM(w);
  Milproto__Value__ImmediateValue *iv = io_pb_new(&milproto__value__immediate_value__descriptor);
  if (!iv) goto oom;
  pv->value_case = MILPROTO__VALUE__VALUE_IMMEDIATE_VALUE;
  pv->immediatevalue = iv;
  if (v->kind == MIL_VAL_TENSOR) {
    if (!(pv->type = io_type_to_proto(w, v->type, where))) goto fail;
    iv->value_case = MILPROTO__VALUE__IMMEDIATE_VALUE__VALUE_TENSOR;
    if (!(iv->tensor = tensor_to_proto(w, v, where))) goto fail;
    return pv;
  }
  const mil_type *t = v->type;
  mil_type tmp;
  const mil_type *stack_elems[16];
  const mil_type **elems = stack_elems;
  if (!t) {
    if (v->kind == MIL_VAL_TUPLE && v->n > 16 && !(elems = malloc((size_t)v->n * sizeof *elems))) goto oom;
    t = container_type(v, &tmp, elems);
  }
  pv->type = io_type_to_proto(w, t, where);
  if (elems != stack_elems) free(elems);
  if (!pv->type) goto fail;
  if (v->kind == MIL_VAL_DICT) {
    Milproto__DictionaryValue *dv = io_pb_new(&milproto__dictionary_value__descriptor);
    if (!dv) goto oom;
    iv->value_case = MILPROTO__VALUE__IMMEDIATE_VALUE__VALUE_DICTIONARY;
    iv->dictionary = dv;
    for (int32_t i = 0; i < v->n; i++) {
      Milproto__DictionaryValue__KeyValuePair *kv = io_pb_new(&milproto__dictionary_value__key_value_pair__descriptor);
      if (!io_pb_push(&dv->values, &dv->n_values, kv)) {
        io_pb_free(kv);
        goto oom;
      }
      if (!(kv->key = io_value_to_proto(w, v->keys[i], false, where))) goto fail;
      if (!(kv->value = io_value_to_proto(w, v->items[i], false, where))) goto fail;
    }
    return pv;
  }
  Milproto__Value ***vals;
  size_t *nv;
  if (v->kind == MIL_VAL_LIST) {
    Milproto__ListValue *lv = io_pb_new(&milproto__list_value__descriptor);
    if (!lv) goto oom;
    iv->value_case = MILPROTO__VALUE__IMMEDIATE_VALUE__VALUE_LIST;
    iv->list = lv;
    vals = &lv->values;
    nv = &lv->n_values;
  } else {
    Milproto__TupleValue *tv = io_pb_new(&milproto__tuple_value__descriptor);
    if (!tv) goto oom;
    iv->value_case = MILPROTO__VALUE__IMMEDIATE_VALUE__VALUE_TUPLE;
    iv->tuple = tv;
    vals = &tv->values;
    nv = &tv->n_values;
  }
  for (int32_t i = 0; i < v->n; i++) {
    Milproto__Value *item = io_value_to_proto(w, v->items[i], false, where);
    if (!item) goto fail;
    if (!io_pb_push(vals, nv, item)) {
      io_pb_free(item);
      goto oom;
    }
  }
  return pv;
oom:
  io_pb_free(pv);
  return OOM(w);
fail:
  io_pb_free(pv);
  if (w->st == MIL_OK) return OOM(w);
  return NULL;
}

Milproto__Value *io_string_value(const char *s) {
  /* each part is linked as soon as it exists, so one free releases all */
  Milproto__Value *pv = io_pb_new(&milproto__value__descriptor);
  if (!pv) return NULL;
  if (!(pv->type = io_pb_new(&milproto__value_type__descriptor))) goto fail;
  pv->type->type_case = MILPROTO__VALUE_TYPE__TYPE_TENSOR_TYPE;
  if (!(pv->type->tensortype = io_pb_new(&milproto__tensor_type__descriptor))) goto fail;
  pv->type->tensortype->datatype = MILPROTO__DATA_TYPE__STRING;
  pv->value_case = MILPROTO__VALUE__VALUE_IMMEDIATE_VALUE;
  if (!(pv->immediatevalue = io_pb_new(&milproto__value__immediate_value__descriptor))) goto fail;
  Milproto__Value__ImmediateValue *iv = pv->immediatevalue;
  iv->value_case = MILPROTO__VALUE__IMMEDIATE_VALUE__VALUE_TENSOR;
  if (!(iv->tensor = io_pb_new(&milproto__tensor_value__descriptor))) goto fail;
  iv->tensor->value_case = MILPROTO__TENSOR_VALUE__VALUE_STRINGS;
  if (!(iv->tensor->strings = io_pb_new(&milproto__tensor_value__repeated_strings__descriptor))) goto fail;
  char *c = io_model_strdup(s);
  if (!io_pb_push(&iv->tensor->strings->values, &iv->tensor->strings->n_values, c)) {
    free(c);
    goto fail;
  }
  return pv;
fail:
  io_pb_free(pv);
  return NULL;
}
