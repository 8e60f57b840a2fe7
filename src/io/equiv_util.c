/* Helpers of the equivalence checker (equiv.c): a pointer map, value
 * comparison within tolerance, value summaries for messages, and the
 * counter-insensitive name rule of "identical". */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/equiv_internal.h"
#include "mil/ops.h"
#include "mil/text.h"

/* ---------- pointer map ---------- */

size_t io_phash(const void *p) {
  uint64_t x = (uint64_t)(uintptr_t)p;
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  return (size_t)x;
}

const void *io_pmap_get(const io_pmap *m, const void *key) {
  if (!m->cap || !key) return NULL;
  size_t j = io_phash(key) & (m->cap - 1);
  while (m->k[j]) {
    if (m->k[j] == key) return m->v[j];
    j = (j + 1) & (m->cap - 1);
  }
  return NULL;
}

bool io_pmap_put(io_pmap *m, const void *key, const void *val) {
  if ((m->n + 1) * 2 > m->cap) {
    size_t cap = m->cap ? m->cap * 2 : 256;
    const void **k = calloc(cap, sizeof *k), **v = calloc(cap, sizeof *v);
    if (!k || !v) {
      free(k);
      free(v);
      return false;
    }
    for (size_t i = 0; i < m->cap; i++)
      if (m->k[i]) {
        size_t j = io_phash(m->k[i]) & (cap - 1);
        while (k[j]) j = (j + 1) & (cap - 1);
        k[j] = m->k[i];
        v[j] = m->v[i];
      }
    free(m->k);
    free(m->v);
    m->k = k;
    m->v = v;
    m->cap = cap;
  }
  size_t j = io_phash(key) & (m->cap - 1);
  while (m->k[j] && m->k[j] != key) j = (j + 1) & (m->cap - 1);
  if (!m->k[j]) m->n++;
  m->k[j] = key;
  m->v[j] = val;
  return true;
}

void io_pmap_free(io_pmap *m) {
  free(m->k);
  free(m->v);
  memset(m, 0, sizeof *m);
}

/* ---------- values ---------- */

static int64_t ord16(uint16_t h) { return (h & 0x8000) ? -(int64_t)(h & 0x7fff) : (int64_t)h; }
static int64_t ord8(uint8_t h) { return (h & 0x80) ? -(int64_t)(h & 0x7f) : (int64_t)h; }

static bool dbl_close(double x, double y, double rel) {
  if (x == y) return true;
  if (isnan(x) || isnan(y)) return isnan(x) && isnan(y);
  if (isinf(x) || isinf(y)) return false;
  double m = fmax(fabs(x), fabs(y));
  return fabs(x - y) <= rel * m;
}

static bool shape_equal(const mil_type *a, const mil_type *b) {
  if (!a || !b) return a == b;
  if (a->rank != b->rank || a->dtype != b->dtype || a->is_scalar != b->is_scalar) return false;
  for (int32_t i = 0; i < a->rank; i++)
    if (a->dims[i].size != b->dims[i].size) return false;
  return true;
}

/* Index of the first element that differs beyond tolerance, -1 when the
 * tensors are close, -2 when dtype/shape differ. */
int64_t io_tensor_diff(const mil_value *a, const mil_value *b, double rel, int ulps) {
  if (!shape_equal(a->type, b->type) || a->numel != b->numel) return -2;
  mil_dtype dt = a->type->dtype;
  size_t bytes = mil_dtype_storage_bytes(dt, a->numel);
  if (dt != MIL_DT_STRING && mil_value_data(a) && mil_value_data(b) && a->nbytes >= bytes && b->nbytes >= bytes &&
      (mil_value_data(a) == mil_value_data(b) || memcmp(mil_value_data(a), mil_value_data(b), bytes) == 0) && !mil_dtype_is_subbyte(dt))
    return -1;
  for (int64_t i = 0; i < a->numel; i++) {
    bool ok;
    switch (dt) {
    case MIL_DT_STRING: ok = strcmp(mil_value_get_str(a, i), mil_value_get_str(b, i)) == 0; break;
    case MIL_DT_FP32:
    case MIL_DT_FP64: ok = dbl_close(mil_value_get_f64(a, i), mil_value_get_f64(b, i), rel); break;
    case MIL_DT_COMPLEX64:
    case MIL_DT_COMPLEX128: {
      const int64_t es = dt == MIL_DT_COMPLEX64 ? 4 : 8;
      ok = true;
      for (int c = 0; c < 2 && ok; c++) {
        double x, y;
        if (es == 4) {
          float fx, fy;
          memcpy(&fx, (const char *)mil_value_data(a) + (i * 2 + c) * es, 4);
          memcpy(&fy, (const char *)mil_value_data(b) + (i * 2 + c) * es, 4);
          x = fx;
          y = fy;
        } else {
          memcpy(&x, (const char *)mil_value_data(a) + (i * 2 + c) * es, 8);
          memcpy(&y, (const char *)mil_value_data(b) + (i * 2 + c) * es, 8);
        }
        ok = dbl_close(x, y, rel);
      }
      break;
    }
    case MIL_DT_FP16:
    case MIL_DT_BF16: {
      uint16_t x = ((const uint16_t *)mil_value_data(a))[i], y = ((const uint16_t *)mil_value_data(b))[i];
      double fx = mil_value_get_f64(a, i), fy = mil_value_get_f64(b, i);
      ok = x == y || (isnan(fx) && isnan(fy)) || (!isnan(fx) && !isnan(fy) && llabs(ord16(x) - ord16(y)) <= ulps);
      break;
    }
    case MIL_DT_FP8E4M3FN:
    case MIL_DT_FP8E5M2: {
      uint8_t x = ((const uint8_t *)mil_value_data(a))[i], y = ((const uint8_t *)mil_value_data(b))[i];
      double fx = mil_value_get_f64(a, i), fy = mil_value_get_f64(b, i);
      ok = x == y || (isnan(fx) && isnan(fy)) || (!isnan(fx) && !isnan(fy) && llabs(ord8(x) - ord8(y)) <= ulps);
      break;
    }
    default: ok = mil_value_get_i64(a, i) == mil_value_get_i64(b, i); break;
    }
    if (!ok) return i;
  }
  return -1;
}

bool io_value_close_depth(const mil_value *a, const mil_value *b, double rel, int ulps, int depth) {
  if (!a || !b) return a == b;
  if (a->kind != b->kind || depth > 64) return false;
  if (a->kind == MIL_VAL_TENSOR) return a->type && b->type && io_tensor_diff(a, b, rel, ulps) == -1;
  if (a->n != b->n) return false;
  for (int32_t i = 0; i < a->n; i++) {
    if (!io_value_close_depth(a->items[i], b->items[i], rel, ulps, depth + 1)) return false;
    if (a->kind == MIL_VAL_DICT && !io_value_close_depth(a->keys[i], b->keys[i], rel, ulps, depth + 1)) return false;
  }
  return true;
}

void io_equiv_defaults(const mil_equiv_options *o, double *rel, int *ulps) {
  *rel = o && o->rel_tol > 0 ? o->rel_tol : 1e-6;
  *ulps = o && o->fp16_ulps > 0 ? o->fp16_ulps : 1;
}

bool mil_value_close(const mil_value *a, const mil_value *b, const mil_equiv_options *opt) {
  double rel;
  int ulps;
  io_equiv_defaults(opt, &rel, &ulps);
  return io_value_close_depth(a, b, rel, ulps, 0);
}

/* "fp32 (2, 3) [0.1, 0.2, ...]" */
void io_value_summary(const mil_value *v, int64_t at, char *buf, size_t n) {
  if (!v) {
    snprintf(buf, n, "no value");
    return;
  }
  if (v->kind != MIL_VAL_TENSOR || !v->type) {
    snprintf(buf, n, "%s of %d items", v->kind == MIL_VAL_LIST ? "list" : v->kind == MIL_VAL_TUPLE ? "tuple" : "dict",
             (int)v->n);
    return;
  }
  char ts[128];
  mil_type_to_string(v->type, ts, sizeof ts);
  size_t len = (size_t)snprintf(buf, n, "%s ", ts);
  int64_t start = at > 2 ? at - 1 : 0;
  if (start > 0 && len < n) len += (size_t)snprintf(buf + len, n - len, "[%lld]=", (long long)start);
  if (len < n) len += (size_t)snprintf(buf + len, n - len, "[");
  for (int64_t i = start; i < v->numel && i < start + 4 && len < n; i++) {
    char num[64];
    mil_dtype dt = v->type->dtype;
    if (dt == MIL_DT_STRING) snprintf(num, sizeof num, "\"%.40s\"", mil_value_get_str(v, i));
    else if (mil_dtype_is_complex(dt)) snprintf(num, sizeof num, "complex");
    else if (mil_dtype_is_float(dt)) mil_format_double(num, mil_value_get_f64(v, i));
    else snprintf(num, sizeof num, "%lld", (long long)mil_value_get_i64(v, i));
    len += (size_t)snprintf(buf + len, n - len, "%s%s", i > start ? ", " : "", num);
  }
  if (len < n) snprintf(buf + len, n - len, "%s]", v->numel > start + 4 ? ", ..." : "");
}

bool mil_names_match_modulo_counters(const char *a, const char *b) {
  while (*a && *b) {
    if (a[0] == '_' && b[0] == '_' && isdigit((unsigned char)a[1]) && isdigit((unsigned char)b[1])) {
      a++;
      b++;
      while (isdigit((unsigned char)*a)) a++;
      while (isdigit((unsigned char)*b)) b++;
      continue;
    }
    if (*a != *b) return false;
    a++;
    b++;
  }
  return *a == *b;
}

