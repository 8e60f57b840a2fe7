/* Helpers shared by `mil run` and `mil verify`. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "run_common.h"
#include "run_image.h"

int cli_add_input_arg(const char *cmd, const char *s, cli_input_arg *ins, int *n) {
  cli_input_arg *a = &ins[*n];
  cli_parse_input_arg(s, a);
  for (int i = 0; i < *n; i++) {
    bool same = a->name && ins[i].name ? strcmp(a->name, ins[i].name) == 0 : !a->name && !ins[i].name;
    if (!same) continue;
    int rc = a->name ? cli_usage_error(cmd, "--input %s given twice", a->name)
                     : cli_usage_error(cmd, "--input FILE without NAME= given twice");
    free((void *)a->name);
    a->name = NULL;
    return rc;
  }
  (*n)++;
  return CLI_OK;
}

int cli_parse_u64(const char *cmd, const char *opt, const char *s, uint64_t *out) {
  char *end;
  errno = 0;
  unsigned long long v = strtoull(s, &end, 0);
  if (!*s || *end || errno || s[0] == '-')
    return cli_usage_error(cmd, "%s expects a non-negative integer, got '%s'", opt, s);
  *out = (uint64_t)v;
  return CLI_OK;
}

int cli_parse_nonneg(const char *cmd, const char *opt, const char *s, double *out) {
  char *end;
  double v = strtod(s, &end);
  if (!*s || *end || !(v >= 0) || isinf(v))
    return cli_usage_error(cmd, "%s expects a non-negative number, got '%s'", opt, s);
  *out = v;
  return CLI_OK;
}

void cli_parse_input_arg(const char *s, cli_input_arg *a) {
  const char *eq = strchr(s, '=');
  a->name = NULL;
  a->file = s;
  if (eq && eq != s) {
    /* NAME=FILE: the name is copied into a static-lifetime buffer per arg */
    size_t n = (size_t)(eq - s);
    char *name = malloc(n + 1);
    if (name) {
      memcpy(name, s, n);
      name[n] = 0;
      a->name = name;
      a->file = eq + 1;
    }
  }
}

void cli_tensor_free(cli_tensor *t) {
  if (!t) return;
  free(t->buf);
  memset(t, 0, sizeof *t);
}

double cli_tensor_get(const mil_tensor *t, int64_t i) {
  const void *p = t->data;
  switch (t->dtype) {
  case MIL_DT_FP32: return ((const float *)p)[i];
  case MIL_DT_FP16: return mil_fp16_to_fp32(((const uint16_t *)p)[i]);
  case MIL_DT_BF16: return mil_bf16_to_fp32(((const uint16_t *)p)[i]);
  case MIL_DT_FP8E4M3FN: return mil_fp8e4m3fn_to_fp32(((const uint8_t *)p)[i]);
  case MIL_DT_FP8E5M2: return mil_fp8e5m2_to_fp32(((const uint8_t *)p)[i]);
  case MIL_DT_FP64: return ((const double *)p)[i];
  case MIL_DT_INT8: return ((const int8_t *)p)[i];
  case MIL_DT_INT16: return ((const int16_t *)p)[i];
  case MIL_DT_INT32: return ((const int32_t *)p)[i];
  case MIL_DT_INT64: return (double)((const int64_t *)p)[i];
  case MIL_DT_UINT8: case MIL_DT_BOOL: return ((const uint8_t *)p)[i];
  case MIL_DT_UINT16: return ((const uint16_t *)p)[i];
  case MIL_DT_UINT32: return ((const uint32_t *)p)[i];
  case MIL_DT_UINT64: return (double)((const uint64_t *)p)[i];
  default: return NAN;
  }
}

static void put_elem(mil_dtype dt, void *p, int64_t i, double v) {
  switch (dt) {
  case MIL_DT_FP32: ((float *)p)[i] = (float)v; break;
  case MIL_DT_FP16: ((uint16_t *)p)[i] = mil_fp64_to_fp16(v); break;
  case MIL_DT_BF16: ((uint16_t *)p)[i] = mil_fp32_to_bf16((float)v); break;
  case MIL_DT_FP64: ((double *)p)[i] = v; break;
  case MIL_DT_INT8: ((int8_t *)p)[i] = (int8_t)v; break;
  case MIL_DT_INT16: ((int16_t *)p)[i] = (int16_t)v; break;
  case MIL_DT_INT32: ((int32_t *)p)[i] = (int32_t)v; break;
  case MIL_DT_INT64: ((int64_t *)p)[i] = (int64_t)v; break;
  case MIL_DT_UINT8: ((uint8_t *)p)[i] = (uint8_t)v; break;
  case MIL_DT_BOOL: ((uint8_t *)p)[i] = v != 0; break;
  case MIL_DT_UINT16: ((uint16_t *)p)[i] = (uint16_t)v; break;
  case MIL_DT_UINT32: ((uint32_t *)p)[i] = (uint32_t)v; break;
  case MIL_DT_UINT64: ((uint64_t *)p)[i] = (uint64_t)v; break;
  default: break;
  }
}

mil_status cli_tensor_alloc(mil_dtype dt, int32_t rank, const int64_t *shape, cli_tensor *out, mil_diag *d) {
  memset(out, 0, sizeof *out);
  int64_t n = 1;
  for (int32_t i = 0; i < rank; i++) {
    out->shape[i] = shape[i];
    if (shape[i] < 0 || (shape[i] && n > INT64_MAX / shape[i] / 16)) return mil_diag_error(d, MIL_ERR_INVALID, "shape too large");
    n *= shape[i];
  }
  size_t es = mil_dtype_size(dt);
  out->buf = calloc((size_t)(n ? n : 1), es ? es : 1);
  if (!out->buf) return mil_diag_error(d, MIL_ERR_NOMEM, "out of memory");
  out->t = (mil_tensor){dt, rank, out->shape, out->buf, (size_t)n * es, n};
  return MIL_OK;
}

/* FILE.pb: one ONNX TensorProto (either dialect), read with its exact
 * dtype (the conversion below narrows it to the input's), seen as a .npy
 * array whose data the caller frees with mil_onnx_tensor_free(*pb). */
static mil_status read_pb(const char *path, mil_npy *a, mil_onnx_tensor **pb, mil_diag *d) {
  mil_onnx_read_opts o = {MIL_ONNX_DIALECT_AUTO, MIL_ONNX_EXACT, NULL};
  mil_status st = mil_onnx_tensor_read(path, &o, pb, d);
  if (st != MIL_OK) return st;
  const mil_onnx_tensor *t = *pb;
  if (t->rank > MIL_NPY_MAX_RANK || mil_dtype_size(t->dtype) == 0 || mil_dtype_is_complex(t->dtype))
    return mil_diag_error(d, MIL_ERR_UNSUPPORTED, "%s: a %s tensor of rank %d cannot be an interpreter input", path,
                          mil_onnx_dtype_name(t->onnx_type), (int)t->rank);
  memset(a, 0, sizeof *a);
  a->dtype = t->dtype, a->rank = t->rank, a->numel = t->numel, a->nbytes = t->nbytes;
  a->data = (void *)t->data;
  if (t->rank) memcpy(a->shape, t->shape, (size_t)t->rank * sizeof *t->shape);
  return MIL_OK;
}

bool cli_is_pb(const char *path) {
  size_t n = strlen(path);
  return n >= 3 && strcmp(path + n - 3, ".pb") == 0;
}

static mil_status convert_array(const char *path, const char *input, const mil_type *want, const mil_npy *a,
                                cli_tensor *out, mil_diag *d);

mil_status cli_tensor_from_npy(const char *path, const char *input, const mil_type *want, cli_tensor *out,
                               mil_diag *d) {
  memset(out, 0, sizeof *out);
  mil_npy *a = NULL, pb_view;
  mil_onnx_tensor *pb = NULL;
  mil_status st = cli_is_pb(path) ? read_pb(path, &pb_view, &pb, d) : mil_npy_read(path, &a, d);
  if (st == MIL_OK) st = convert_array(path, input, want, pb ? &pb_view : a, out, d);
  mil_npy_free(a);
  mil_onnx_tensor_free(pb);
  return st;
}

/* Integer dtypes: their range; false for the others. */
static bool int_range(mil_dtype dt, int64_t *lo, uint64_t *hi) {
  switch (dt) {
  case MIL_DT_INT8: *lo = INT8_MIN, *hi = INT8_MAX; return true;
  case MIL_DT_INT16: *lo = INT16_MIN, *hi = INT16_MAX; return true;
  case MIL_DT_INT32: *lo = INT32_MIN, *hi = INT32_MAX; return true;
  case MIL_DT_INT64: *lo = INT64_MIN, *hi = INT64_MAX; return true;
  case MIL_DT_UINT8: *lo = 0, *hi = UINT8_MAX; return true;
  case MIL_DT_UINT16: *lo = 0, *hi = UINT16_MAX; return true;
  case MIL_DT_UINT32: *lo = 0, *hi = UINT32_MAX; return true;
  case MIL_DT_UINT64: *lo = 0, *hi = UINT64_MAX; return true;
  default: return false;
  }
}

/* "[i, j, k]": the index of flat element i in shape (rank dims). */
static void index_str(const mil_tensor *t, int64_t i, char *buf, size_t n) {
  int64_t idx[MIL_INTERP_MAX_RANK];
  for (int32_t k = t->rank - 1; k >= 0; k--) {
    int64_t dim = t->shape[k] > 0 ? t->shape[k] : 1;
    idx[k] = i % dim;
    i /= dim;
  }
  size_t l = (size_t)snprintf(buf, n, "[");
  for (int32_t k = 0; k < t->rank && l < n; k++) l += (size_t)snprintf(buf + l, n - l, "%s%lld", k ? ", " : "", (long long)idx[k]);
  if (l < n) snprintf(buf + l, n - l, "]");
}

/* Element i of src stored into dst as dtype dt, refusing a value dt cannot
 * hold (an integer outside dt's range, NaN or an infinity to an integer
 * dtype, a finite float that would become infinite), as `mil tensor
 * --narrow` refuses them: the error names the input, the file, the
 * element's index and value. An integer dtype takes a float's integer part
 * (numpy's astype). */
static mil_status narrow_elem(const char *path, const char *input, const mil_tensor *src, int64_t i, mil_dtype dt,
                              void *dst, mil_diag *d) {
  int64_t lo, slo;
  uint64_t hi, shi;
  bool to_int = int_range(dt, &lo, &hi), from_int = int_range(src->dtype, &slo, &shi);
  char val[64], at[256];
  bool bad = false;
  if (from_int && src->dtype == MIL_DT_UINT64) {
    uint64_t x = ((const uint64_t *)src->data)[i];
    snprintf(val, sizeof val, "%llu", (unsigned long long)x);
    if (to_int) {
      bad = x > hi;
      if (!bad) {
        if (dt == MIL_DT_UINT64) ((uint64_t *)dst)[i] = x;
        else if (dt == MIL_DT_INT64) ((int64_t *)dst)[i] = (int64_t)x;
        else put_elem(dt, dst, i, (double)x); /* exact: x < 2^32 */
      }
    } else {
      bad = dt == MIL_DT_FP16 && (double)x > 65504.0;
      if (!bad) put_elem(dt, dst, i, (double)x);
    }
  } else if (from_int) {
    int64_t x = src->dtype == MIL_DT_INT64 ? ((const int64_t *)src->data)[i] : (int64_t)cli_tensor_get(src, i);
    snprintf(val, sizeof val, "%lld", (long long)x);
    if (to_int) {
      bad = x < lo || (x > 0 && (uint64_t)x > hi);
      if (!bad) {
        if (dt == MIL_DT_UINT64) ((uint64_t *)dst)[i] = (uint64_t)x;
        else if (dt == MIL_DT_INT64) ((int64_t *)dst)[i] = x;
        else put_elem(dt, dst, i, (double)x); /* exact: |x| < 2^32 */
      }
    } else {
      bad = dt == MIL_DT_FP16 && ((double)x > 65504.0 || (double)x < -65504.0);
      if (!bad) put_elem(dt, dst, i, (double)x);
    }
  } else {
    double x = cli_tensor_get(src, i);
    snprintf(val, sizeof val, "%.17g", x);
    if (to_int) {
      double t = trunc(x);
      /* 2^63 and 2^64 are exact doubles: compare against the bounds + 1 */
      bad = isnan(x) || t < (double)lo || t >= ((double)(hi / 2 + 1)) * 2.0;
      if (!bad) {
        if (dt == MIL_DT_UINT64) ((uint64_t *)dst)[i] = (uint64_t)t;
        else if (dt == MIL_DT_INT64) ((int64_t *)dst)[i] = (int64_t)t;
        else put_elem(dt, dst, i, t);
      }
    } else if (dt == MIL_DT_BOOL) {
      bad = isnan(x);
      if (!bad) put_elem(dt, dst, i, x);
    } else {
      put_elem(dt, dst, i, x);
      double y = cli_tensor_get(&(mil_tensor){dt, 0, NULL, (const char *)dst + (size_t)i * mil_dtype_size(dt),
                                              mil_dtype_size(dt), 1},
                                0);
      bad = isinf(y) && !isinf(x);
    }
  }
  if (!bad) return MIL_OK;
  index_str(src, i, at, sizeof at);
  return mil_diag_error(d, MIL_ERR_INVALID,
                        "input '%s': element %s (flat index %lld) of %s is %s (%s), which the input's dtype %s cannot "
                        "hold%s; give values %s has room for, or an array of dtype %s",
                        cli_esc(input), at, (long long)i, cli_esc(path), val, mil_dtype_name(src->dtype),
                        mil_dtype_name(dt),
                        !to_int ? " (it would become infinite)" : from_int ? " (it is outside its range)"
                                                                            : " (NaN, infinite or out of range)",
                        mil_dtype_name(dt), mil_dtype_name(dt));
}

static mil_status convert_array(const char *path, const char *input, const mil_type *want, const mil_npy *a,
                                cli_tensor *out, mil_diag *d) {
  mil_status st;
  if (a->rank > MIL_INTERP_MAX_RANK)
    return mil_diag_error(d, MIL_ERR_UNSUPPORTED, "%s: rank %d is above the interpreter's limit", path, a->rank);
  mil_dtype dt = want && want->kind == MIL_TYPE_TENSOR ? want->dtype : a->dtype;
  if (mil_dtype_size(dt) == 0) dt = a->dtype;
  st = cli_tensor_alloc(dt, a->rank, a->shape, out, d);
  if (st == MIL_OK) {
    if (dt == a->dtype) {
      if (a->nbytes) memcpy(out->buf, a->data, a->nbytes);
    } else {
      mil_tensor src = {a->dtype, a->rank, a->shape, a->data, a->nbytes, a->numel};
      for (int64_t i = 0; st == MIL_OK && i < a->numel; i++) st = narrow_elem(path, input, &src, i, dt, out->buf, d);
      if (st == MIL_OK)
        fprintf(stderr, "mil: note: input '%s': converted %s from %s to %s\n", cli_esc(input), cli_esc(path),
                mil_dtype_name(a->dtype), mil_dtype_name(dt));
      else
        cli_tensor_free(out);
    }
  }
  return st;
}

static uint64_t mix(uint64_t *x) {
  uint64_t z = (*x += UINT64_C(0x9E3779B97F4A7C15));
  z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
  z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
  return z ^ (z >> 31);
}

mil_status cli_tensor_random(const char *input, const mil_type *want, uint64_t *state, cli_tensor *out,
                             mil_diag *d) {
  if (!want || want->kind != MIL_TYPE_TENSOR || want->rank < 0 || want->rank > MIL_INTERP_MAX_RANK)
    return mil_diag_error(d, MIL_ERR_UNSUPPORTED, "input '%s': cannot make random values for this type", input);
  int64_t shape[MIL_INTERP_MAX_RANK];
  for (int32_t i = 0; i < want->rank; i++) shape[i] = want->dims[i].size >= 0 ? want->dims[i].size : 1;
  mil_status st = cli_tensor_alloc(want->dtype, want->rank, shape, out, d);
  if (st != MIL_OK) return st;
  bool fl = mil_dtype_is_float(want->dtype);
  for (int64_t i = 0; i < out->t.numel; i++) {
    uint64_t r = mix(state);
    double v = fl ? (double)(r >> 11) / 9007199254740992.0 * 2.0 - 1.0
                  : want->dtype == MIL_DT_BOOL ? (double)(r & 1) : (double)(r % 10);
    put_elem(want->dtype, out->buf, i, v);
  }
  return MIL_OK;
}

mil_status cli_set_inputs(mil_interp *ip, const cli_input_arg *args, int n_args, uint64_t *random_state,
                          cli_tensor *kept, mil_diag *d) {
  return cli_set_inputs_described(ip, NULL, args, n_args, random_state, kept, d);
}

mil_status cli_set_inputs_described(mil_interp *ip, const mil_function_desc *fd, const cli_input_arg *args,
                                    int n_args, uint64_t *random_state, cli_tensor *kept, mil_diag *d) {
  int32_t n = mil_interp_n_inputs(ip);
  for (int k = 0; k < n_args; k++) {
    const char *name = args[k].name;
    if (!name) {
      int32_t tensors = 0, only = -1;
      for (int32_t i = 0; i < n; i++)
        if (mil_interp_input_type(ip, i)->kind != MIL_TYPE_STATE) tensors++, only = i;
      if (tensors != 1)
        return mil_diag_error(d, MIL_ERR_INVALID, "--input %s: give it as NAME=FILE (the function has %d inputs)",
                              args[k].file, tensors);
      name = mil_interp_input_name(ip, only);
    }
    int32_t i = 0;
    while (i < n && strcmp(mil_interp_input_name(ip, i), name) != 0) i++;
    const mil_type *want = i < n ? mil_interp_input_type(ip, i) : NULL;
    cli_tensor t;
    mil_status st;
    int img = cli_image_input(fd, name, args[k].file, want, &t, &st, d);
    if (!img) st = cli_tensor_from_npy(args[k].file, name, want, &t, d);
    if (st == MIL_OK) st = mil_interp_set_input(ip, name, &t.t, d);
    if (st != MIL_OK) {
      cli_tensor_free(&t);
      return st;
    }
    if (i < n) {
      cli_tensor_free(&kept[i]);
      kept[i] = t;
      /* the tensor's shape points into the struct: re-point it at the copy */
      if (t.t.shape == t.shape) kept[i].t.shape = kept[i].shape;
    } else {
      cli_tensor_free(&t);
    }
  }
  for (int32_t i = 0; i < n && random_state; i++) {
    if (kept[i].buf || mil_interp_input_type(ip, i)->kind == MIL_TYPE_STATE) continue;
    mil_status st = cli_tensor_random(mil_interp_input_name(ip, i), mil_interp_input_type(ip, i), random_state,
                                      &kept[i], d);
    if (st == MIL_OK) st = mil_interp_set_input(ip, mil_interp_input_name(ip, i), &kept[i].t, d);
    if (st != MIL_OK) return st;
  }
  return MIL_OK;
}

void cli_print_summary(const char *name, const mil_tensor *t) {
  double mn = INFINITY, mx = -INFINITY, sum = 0;
  int64_t nan = 0;
  for (int64_t i = 0; i < t->numel; i++) {
    double v = cli_tensor_get(t, i);
    if (isnan(v)) {
      nan++;
      continue;
    }
    mn = v < mn ? v : mn;
    mx = v > mx ? v : mx;
    sum += v;
  }
  printf("%s: (", cli_esc(name));
  for (int32_t i = 0; i < t->rank; i++) printf("%s%lld", i ? ", " : "", (long long)t->shape[i]);
  printf(") %s", mil_dtype_name(t->dtype));
  if (t->numel - nan > 0)
    printf("  min %.6g  max %.6g  mean %.6g", mn, mx, sum / (double)(t->numel - nan));
  if (nan) printf("  (%lld NaN)", (long long)nan);
  printf("\n");
}
