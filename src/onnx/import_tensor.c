/* TEMPORARY shim until the ONNX tensor core lands: TensorProto -> MIL
 * value (raw_data and typed fields; external data read whole). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnx/import_internal.h"

static mil_status read_external(onnx_ctx *c, const Onnx__TensorProto *t, uint8_t **out, size_t *len) {
  const char *loc = NULL;
  long long off = 0, ln = -1;
  for (size_t i = 0; i < t->n_external_data; i++) {
    const char *k = t->external_data[i]->key, *v = t->external_data[i]->value;
    if (!k || !v) continue;
    if (!strcmp(k, "location")) loc = v;
    else if (!strcmp(k, "offset")) off = atoll(v);
    else if (!strcmp(k, "length")) ln = atoll(v);
  }
  if (!loc || loc[0] == '/' || strstr(loc, ".."))
    return mil_diag_error(c->d, MIL_ERR_FORMAT, "%s: tensor '%s': bad external data location", c->path, t->name);
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", c->dir, loc);
  FILE *f = fopen(path, "rb");
  if (!f) return mil_diag_error(c->d, MIL_ERR_IO, "%s: cannot open external data %s", c->path, path);
  fseek(f, 0, SEEK_END);
  long size = ftell(f);
  if (ln < 0) ln = size - off;
  if (off < 0 || off + ln > size) {
    fclose(f);
    return mil_diag_error(c->d, MIL_ERR_FORMAT, "%s: external data of '%s' lies past the end of %s", c->path, t->name,
                          path);
  }
  uint8_t *buf = mil_program_alloc(c->p, (size_t)ln + 1);
  fseek(f, off, SEEK_SET);
  size_t got = buf ? fread(buf, 1, (size_t)ln, f) : 0;
  fclose(f);
  if (got != (size_t)ln) return mil_diag_error(c->d, MIL_ERR_IO, "%s: short read of %s", c->path, path);
  *out = buf;
  *len = (size_t)ln;
  return MIL_OK;
}

static size_t onnx_elem_size(int dt) {
  switch (dt) {
  case 1: case 6: case 12: return 4;
  case 2: case 3: case 9: return 1;
  case 4: case 5: case 10: case 16: return 2;
  case 7: case 11: case 13: return 8;
  default: return 0;
  }
}

static double raw_get(int dt, const uint8_t *p, int64_t i) {
  switch (dt) {
  case 1: { float f; memcpy(&f, p + 4 * i, 4); return f; }
  case 2: return p[i];
  case 3: return (int8_t)p[i];
  case 4: { uint16_t v; memcpy(&v, p + 2 * i, 2); return v; }
  case 5: { int16_t v; memcpy(&v, p + 2 * i, 2); return v; }
  case 6: { int32_t v; memcpy(&v, p + 4 * i, 4); return v; }
  case 7: { int64_t v; memcpy(&v, p + 8 * i, 8); return (double)v; }
  case 9: return p[i] != 0;
  case 10: { uint16_t v; memcpy(&v, p + 2 * i, 2); return mil_fp16_to_fp32(v); }
  case 11: { double v; memcpy(&v, p + 8 * i, 8); return v; }
  case 12: { uint32_t v; memcpy(&v, p + 4 * i, 4); return v; }
  case 13: { uint64_t v; memcpy(&v, p + 8 * i, 8); return (double)v; }
  case 16: { uint16_t v; memcpy(&v, p + 2 * i, 2); return mil_bf16_to_fp32(v); }
  default: return 0;
  }
}

mil_status onnx_tensor_value(onnx_ctx *c, const Onnx__TensorProto *t, mil_value **out) {
  int dt = t->data_type;
  mil_dtype mdt = onnx_mil_dtype(dt);
  const char *name = t->name ? t->name : "";
  if (mdt == MIL_DT_UNUSED)
    return mil_diag_error(c->d, MIL_ERR_UNSUPPORTED, "%s: tensor '%s': ONNX data type %d is not supported", c->path,
                          name, dt);
  int32_t rank = (int32_t)t->n_dims;
  int64_t numel = 1;
  for (int32_t i = 0; i < rank; i++) {
    if (t->dims[i] < 0) return mil_diag_error(c->d, MIL_ERR_FORMAT, "%s: tensor '%s': negative dim", c->path, name);
    numel *= t->dims[i];
  }
  mil_value *v = mil_value_new_tensor(c->p, mdt, rank, t->dims, false, NULL);
  if (!v) return MIL_ERR_NOMEM;
  const uint8_t *raw = NULL;
  size_t rawlen = 0;
  if (t->has_data_location && t->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL) {
    uint8_t *b;
    mil_status st = read_external(c, t, &b, &rawlen);
    if (st != MIL_OK) return st;
    raw = b;
  } else if (t->has_raw_data) {
    raw = t->raw_data.data;
    rawlen = t->raw_data.len;
  }
  for (int64_t i = 0; i < numel; i++) {
    double x = 0;
    int64_t xi = 0;
    bool isint = false;
    if (raw) {
      if (rawlen < (size_t)numel * onnx_elem_size(dt))
        return mil_diag_error(c->d, MIL_ERR_FORMAT, "%s: tensor '%s': raw_data too short", c->path, name);
      if (dt == 7) {
        memcpy(&xi, raw + 8 * i, 8);
        isint = true;
      } else x = raw_get(dt, raw, i);
    } else if (dt == 1 && (size_t)i < t->n_float_data) x = t->float_data[i];
    else if (dt == 11 && (size_t)i < t->n_double_data) x = t->double_data[i];
    else if (dt == 7 && (size_t)i < t->n_int64_data) {
      xi = t->int64_data[i];
      isint = true;
    } else if ((dt == 12 || dt == 13) && (size_t)i < t->n_uint64_data) x = (double)t->uint64_data[i];
    else if (dt == 10 && (size_t)i < t->n_int32_data) x = mil_fp16_to_fp32((uint16_t)t->int32_data[i]);
    else if (dt == 16 && (size_t)i < t->n_int32_data) x = mil_bf16_to_fp32((uint16_t)t->int32_data[i]);
    else if ((size_t)i < t->n_int32_data) x = t->int32_data[i];
    else
      return mil_diag_error(c->d, MIL_ERR_FORMAT, "%s: tensor '%s': %lld elements declared, fewer stored", c->path,
                            name, (long long)numel);
    if (isint) {
      if (xi > INT32_MAX) xi = INT32_MAX;
      if (xi < INT32_MIN) xi = INT32_MIN;
      mil_value_set_i64(v, i, xi);
    } else if (mdt == MIL_DT_INT32) {
      if (x > INT32_MAX) x = INT32_MAX;
      if (x < INT32_MIN) x = INT32_MIN;
      mil_value_set_i64(v, i, (int64_t)x);
    } else mil_value_set_f64(v, i, x);
  }
  *out = v;
  return MIL_OK;
}
