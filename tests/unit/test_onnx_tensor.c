/* Tests for the ONNX tensor reader (include/mil/onnx_tensor.h and
 * src/onnx/tensor/onnx_tensor_internal.h): messages are built with protobuf-c's
 * generated structs (not with libmil's writer) and the decoded dtype, shape
 * and bytes are compared with values written out by hand. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mil/ir.h"
#include "mil/onnx_tensor.h"
#include "onnx/tensor/onnx_tensor_internal.h"

/* Packs an ONNX TensorProto into a malloc'ed buffer. */
static uint8_t *pack_onnx(const Onnx__TensorProto *m, size_t *len) {
  *len = onnx__tensor_proto__get_packed_size(m);
  uint8_t *b = malloc(*len ? *len : 1);
  assert_non_null(b);
  onnx__tensor_proto__pack(m, b);
  return b;
}

/* Reads a packed message; returns the status and leaves the first error in err_out. */
static mil_status read_onnx(const Onnx__TensorProto *m, unsigned flags, mil_onnx_tensor **t, char *err_out,
                            size_t cap) {
  size_t len;
  uint8_t *b = pack_onnx(m, &len);
  mil_diag d;
  mil_diag_init(&d);
  mil_onnx_read_opts o = {MIL_ONNX_DIALECT_AUTO, flags, NULL};
  mil_status st = mil_onnx_tensor_read_mem(b, len, "t.pb", &o, t, &d);
  if (err_out) snprintf(err_out, cap, "%s", mil_diag_first_error(&d) ? mil_diag_first_error(&d) : "");
  mil_diag_clear(&d);
  free(b);
  return st;
}

static void test_raw_fp32(void **state) {
  (void)state;
  float v[6] = {1.5f, -2.0f, 0.0f, 3.25f, NAN, -INFINITY};
  uint32_t nan_bits = 0x7fc01234u; /* a NaN with a payload */
  memcpy(&v[4], &nan_bits, 4);
  int64_t dims[2] = {2, 3};
  Onnx__TensorProto m = ONNX__TENSOR_PROTO__INIT;
  m.n_dims = 2, m.dims = dims;
  m.has_data_type = 1, m.data_type = MIL_ONNX_FLOAT;
  m.name = "x";
  m.has_raw_data = 1, m.raw_data.data = (uint8_t *)v, m.raw_data.len = sizeof v;
  mil_onnx_tensor *t = NULL;
  assert_int_equal(read_onnx(&m, 0, &t, NULL, 0), MIL_OK);
  assert_string_equal(t->name, "x");
  assert_int_equal(t->dtype, MIL_DT_FP32);
  assert_int_equal(t->onnx_type, MIL_ONNX_FLOAT);
  assert_int_equal(t->rank, 2);
  assert_int_equal(t->shape[0], 2);
  assert_int_equal(t->shape[1], 3);
  assert_int_equal(t->numel, 6);
  assert_int_equal(t->nbytes, 24);
  assert_int_equal(t->encoding, MIL_ONNX_ENC_RAW);
  assert_int_equal(t->dialect, MIL_ONNX_DIALECT_ONNX);
  assert_memory_equal(t->data, v, sizeof v); /* NaN payload included */
  mil_onnx_tensor_free(t);
}

static void test_typed_fields(void **state) {
  (void)state;
  /* FLOAT16 in int32_data: bit patterns of 1.0, -2.0, 65504 */
  int32_t h[3] = {0x3c00, 0xc000, 0x7bff};
  int64_t dims[1] = {3};
  Onnx__TensorProto m = ONNX__TENSOR_PROTO__INIT;
  m.n_dims = 1, m.dims = dims;
  m.has_data_type = 1, m.data_type = MIL_ONNX_FLOAT16;
  m.n_int32_data = 3, m.int32_data = h;
  mil_onnx_tensor *t = NULL;
  assert_int_equal(read_onnx(&m, 0, &t, NULL, 0), MIL_OK);
  assert_int_equal(t->dtype, MIL_DT_FP16);
  assert_int_equal(t->encoding, MIL_ONNX_ENC_TYPED);
  const uint16_t want_h[3] = {0x3c00, 0xc000, 0x7bff};
  assert_memory_equal(t->data, want_h, 6);
  mil_onnx_tensor_free(t);

  /* BOOL in int32_data */
  int32_t b[3] = {1, 0, 1};
  m.data_type = MIL_ONNX_BOOL;
  m.int32_data = b;
  assert_int_equal(read_onnx(&m, 0, &t, NULL, 0), MIL_OK);
  assert_int_equal(t->dtype, MIL_DT_BOOL);
  assert_memory_equal(t->data, "\1\0\1", 3);
  mil_onnx_tensor_free(t);

  /* UINT8 value out of range in int32_data */
  int32_t u[3] = {1, 300, 2};
  m.data_type = MIL_ONNX_UINT8;
  m.int32_data = u;
  char err[512];
  assert_int_equal(read_onnx(&m, 0, &t, err, sizeof err), MIL_ERR_FORMAT);
  assert_non_null(strstr(err, "int32_data[1] = 300"));
  assert_null(t);

  /* DOUBLE in double_data: narrowed to fp32, or kept with MIL_ONNX_EXACT */
  double dv[3] = {0.1, -1e300 * 0, 2.5};
  m.data_type = MIL_ONNX_DOUBLE;
  m.n_int32_data = 0;
  m.n_double_data = 3, m.double_data = dv;
  assert_int_equal(read_onnx(&m, 0, &t, NULL, 0), MIL_OK);
  assert_int_equal(t->dtype, MIL_DT_FP32);
  const float want_f[3] = {0.1f, -0.0f, 2.5f};
  assert_memory_equal(t->data, want_f, 12);
  assert_int_equal(t->n_narrowed, 3);
  mil_onnx_tensor_free(t);
  assert_int_equal(read_onnx(&m, MIL_ONNX_EXACT, &t, NULL, 0), MIL_OK);
  assert_int_equal(t->dtype, MIL_DT_FP64);
  assert_memory_equal(t->data, dv, 24);
  mil_onnx_tensor_free(t);

  /* a double beyond fp32's range is refused unless clamped */
  dv[1] = 1e300;
  assert_int_equal(read_onnx(&m, 0, &t, err, sizeof err), MIL_ERR_UNSUPPORTED);
  assert_non_null(strstr(err, "element 1 of double_data"));
  assert_int_equal(read_onnx(&m, MIL_ONNX_CLAMP, &t, NULL, 0), MIL_OK);
  assert_true(isinf(((const float *)t->data)[1]));
  mil_onnx_tensor_free(t);
}

static void test_int64_narrowing(void **state) {
  (void)state;
  int64_t v[4] = {1, -7, 2147483647, -2147483648LL};
  int64_t dims[1] = {4};
  Onnx__TensorProto m = ONNX__TENSOR_PROTO__INIT;
  m.n_dims = 1, m.dims = dims;
  m.has_data_type = 1, m.data_type = MIL_ONNX_INT64;
  m.n_int64_data = 4, m.int64_data = v;
  mil_onnx_tensor *t = NULL;
  assert_int_equal(read_onnx(&m, 0, &t, NULL, 0), MIL_OK);
  assert_int_equal(t->dtype, MIL_DT_INT32);
  const int32_t want[4] = {1, -7, 2147483647, (int32_t)-2147483648LL};
  assert_memory_equal(t->data, want, 16);
  mil_onnx_tensor_free(t);
  /* raw_data int64 with INT64_MAX (ONNX Slice's "to the end"): refused, clipped with CLAMP */
  v[2] = INT64_MAX;
  m.n_int64_data = 0;
  m.has_raw_data = 1, m.raw_data.data = (uint8_t *)v, m.raw_data.len = sizeof v;
  char err[512];
  assert_int_equal(read_onnx(&m, 0, &t, err, sizeof err), MIL_ERR_UNSUPPORTED);
  assert_non_null(strstr(err, "9223372036854775807"));
  assert_int_equal(read_onnx(&m, MIL_ONNX_CLAMP, &t, NULL, 0), MIL_OK);
  assert_int_equal(((const int32_t *)t->data)[2], INT32_MAX);
  mil_onnx_tensor_free(t);
  assert_int_equal(read_onnx(&m, MIL_ONNX_EXACT, &t, NULL, 0), MIL_OK);
  assert_int_equal(t->dtype, MIL_DT_INT64);
  assert_memory_equal(t->data, v, sizeof v);
  mil_onnx_tensor_free(t);
}

static void test_malformed_basic(void **state) {
  (void)state;
  int64_t dims[2] = {2, 3};
  float v[5] = {0};
  Onnx__TensorProto m = ONNX__TENSOR_PROTO__INIT;
  m.n_dims = 2, m.dims = dims;
  m.has_data_type = 1, m.data_type = MIL_ONNX_FLOAT;
  m.has_raw_data = 1, m.raw_data.data = (uint8_t *)v, m.raw_data.len = sizeof v;
  mil_onnx_tensor *t = NULL;
  char err[512];
  /* dims x dtype != data length */
  assert_int_equal(read_onnx(&m, 0, &t, err, sizeof err), MIL_ERR_FORMAT);
  assert_non_null(strstr(err, "raw_data holds 20 bytes"));
  assert_non_null(strstr(err, "24 bytes"));
  /* negative dim */
  dims[0] = -2;
  assert_int_equal(read_onnx(&m, 0, &t, err, sizeof err), MIL_ERR_FORMAT);
  assert_non_null(strstr(err, "dims[0] is -2"));
  /* overflowing dims */
  int64_t big[3] = {INT64_MAX / 2, 4, 4};
  m.n_dims = 3, m.dims = big;
  assert_int_equal(read_onnx(&m, 0, &t, err, sizeof err), MIL_ERR_FORMAT);
  assert_non_null(strstr(err, "overflow"));
  /* data_type 0 and unknown */
  m.n_dims = 2, m.dims = dims, dims[0] = 2;
  m.data_type = 0;
  assert_int_equal(read_onnx(&m, 0, &t, err, sizeof err), MIL_ERR_FORMAT);
  assert_non_null(strstr(err, "UNDEFINED"));
  m.data_type = 99;
  assert_int_equal(read_onnx(&m, 0, &t, err, sizeof err), MIL_ERR_FORMAT);
  assert_non_null(strstr(err, "99, not a DataType"));
  /* two data fields */
  m.data_type = MIL_ONNX_FLOAT;
  m.n_float_data = 5, m.float_data = v;
  assert_int_equal(read_onnx(&m, 0, &t, err, sizeof err), MIL_ERR_FORMAT);
  assert_non_null(strstr(err, "both raw_data and float_data"));
  /* segment */
  m.n_float_data = 0;
  Onnx__TensorProto__Segment seg = ONNX__TENSOR_PROTO__SEGMENT__INIT;
  m.segment = &seg;
  assert_int_equal(read_onnx(&m, 0, &t, err, sizeof err), MIL_ERR_UNSUPPORTED);
  assert_non_null(strstr(err, "segment"));
  assert_null(t);
}

static void test_value_and_type(void **state) {
  (void)state;
  mil_program *p = mil_program_new(NULL);
  int32_t v[4] = {1, 2, 3, 4};
  int64_t dims[2] = {2, 2};
  Onnx__TensorProto m = ONNX__TENSOR_PROTO__INIT;
  m.n_dims = 2, m.dims = dims;
  m.has_data_type = 1, m.data_type = MIL_ONNX_INT32;
  m.n_int32_data = 4, m.int32_data = v;
  mil_value *val = NULL;
  mil_diag d;
  mil_diag_init(&d);
  assert_int_equal(onnx_tensor_to_mil_value(p, &m, NULL, 0, "model.onnx: initializer 'w'", &val, &d), MIL_OK);
  assert_int_equal(val->type->dtype, MIL_DT_INT32);
  assert_int_equal(val->type->rank, 2);
  assert_memory_equal(mil_value_data(val), v, 16);

  /* TypeProto: FLOAT [N, 3, ?] with dim_param "N" */
  Onnx__TensorShapeProto__Dimension d0 = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__INIT, d1 = d0, d2 = d0;
  d0.value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM, d0.dim_param = "N";
  d1.value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE, d1.dim_value = 3;
  Onnx__TensorShapeProto__Dimension *dp[3] = {&d0, &d1, &d2};
  Onnx__TensorShapeProto sh = ONNX__TENSOR_SHAPE_PROTO__INIT;
  sh.n_dim = 3, sh.dim = dp;
  Onnx__TypeProto__Tensor tt = ONNX__TYPE_PROTO__TENSOR__INIT;
  tt.has_elem_type = 1, tt.elem_type = MIL_ONNX_INT64, tt.shape = &sh;
  Onnx__TypeProto tp = ONNX__TYPE_PROTO__INIT;
  tp.value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE, tp.tensor_type = &tt;
  Onnx__ValueInfoProto vi = ONNX__VALUE_INFO_PROTO__INIT;
  vi.name = "input";
  vi.type = &tp;
  const char *name;
  const mil_type *ty;
  assert_int_equal(onnx_value_info_to_mil(p, &vi, 0, "model.onnx", &name, &ty, &d), MIL_OK);
  assert_string_equal(name, "input");
  assert_int_equal(ty->dtype, MIL_DT_INT32); /* narrowed */
  assert_int_equal(ty->rank, 3);
  assert_string_equal(ty->dims[0].sym, "N");
  assert_int_equal(ty->dims[1].size, 3);
  assert_int_equal(ty->dims[2].size, -1);
  assert_null(ty->dims[2].sym);
  /* and back */
  Onnx__TypeProto *back = NULL;
  assert_int_equal(onnx_type_from_mil(ty, "x", &back, &d), MIL_OK);
  assert_int_equal(back->tensor_type->elem_type, MIL_ONNX_INT32);
  assert_int_equal(back->tensor_type->shape->n_dim, 3);
  assert_string_equal(back->tensor_type->shape->dim[0]->dim_param, "N");
  assert_int_equal(back->tensor_type->shape->dim[1]->dim_value, 3);
  assert_int_equal(back->tensor_type->shape->dim[2]->value_case, ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE__NOT_SET);
  protobuf_c_message_free_unpacked(&back->base, NULL);
  mil_diag_clear(&d);
  mil_program_free(p);
}

/* ---- round trips: every DataType x encoding x dialect ---- */

static uint64_t rng(uint64_t *x) {
  uint64_t z = (*x += UINT64_C(0x9E3779B97F4A7C15));
  z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
  z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
  return z ^ (z >> 31);
}

static const char *const k_strs[6] = {"", "a", "h\xc3\xa9llo", "with space", "x,y", "\xe2\x82\xac"};

/* Values of DataType t in the exact MIL dtype's layout (numel elements):
 * random bits, NaNs with payloads for floats, only valid codes where the
 * type has invalid ones. */
static void *make_values(int32_t t, int64_t numel, uint64_t seed) {
  mil_dtype dt = mil_onnx_dtype_to_mil(t, MIL_ONNX_EXACT);
  if (dt == MIL_DT_STRING) {
    const char **p = malloc((size_t)numel * sizeof *p);
    for (int64_t i = 0; i < numel; i++) p[i] = k_strs[i % 6];
    return p;
  }
  size_t n = mil_dtype_storage_bytes(dt, numel);
  uint8_t *b = malloc(n + 8);
  for (size_t i = 0; i < n; i++) b[i] = (uint8_t)rng(&seed);
  if (t == MIL_ONNX_BOOL)
    for (size_t i = 0; i < n; i++) b[i] &= 1;
  if (t == MIL_ONNX_FLOAT8E4M3FNUZ || t == MIL_ONNX_FLOAT8E5M2FNUZ)
    for (int64_t i = 0; i < numel; i++)
      ((uint16_t *)b)[i] = mil_fp32_to_fp16(ot_fnuz_to_f32((uint8_t)rng(&seed), t == MIL_ONNX_FLOAT8E5M2FNUZ));
  if (t == MIL_ONNX_FLOAT && numel > 2) {
    uint32_t nan1 = 0x7fa00001u, nan2 = 0xffc0beefu; /* signalling and negative quiet NaN payloads */
    memcpy(b, &nan1, 4);
    memcpy(b + 4, &nan2, 4);
  }
  if (t == MIL_ONNX_DOUBLE && numel > 1) {
    uint64_t nan = UINT64_C(0x7ff0000000000abc);
    memcpy(b, &nan, 8);
  }
  if (t == MIL_ONNX_FLOAT16 && numel > 1) ((uint16_t *)b)[0] = 0x7d01; /* fp16 NaN with payload */
  return b;
}

static void check_roundtrip(int32_t t, mil_onnx_dialect dia, mil_onnx_encoding enc, int32_t rank,
                            const int64_t *shape) {
  int64_t numel = 1;
  for (int32_t i = 0; i < rank; i++) numel *= shape[i];
  mil_dtype dt = mil_onnx_dtype_to_mil(t, MIL_ONNX_EXACT);
  void *vals = make_values(t, numel, (uint64_t)t * 1000 + (uint64_t)enc);
  mil_onnx_write_opts wo = {dia, enc, t, "rt", NULL};
  void *buf = NULL;
  size_t len = 0;
  mil_diag d;
  mil_diag_init(&d);
  mil_status st = mil_onnx_tensor_encode(dt, rank, shape, vals, &wo, &buf, &len, &d);
  if (st != MIL_OK) print_error("encode %s %s %s: %s\n", mil_onnx_dtype_name(t), mil_onnx_dialect_name(dia),
                                mil_onnx_encoding_name(enc), mil_diag_first_error(&d));
  assert_int_equal(st, MIL_OK);
  for (int pass = 0; pass < 2; pass++) { /* automatic dialect, then the explicit one */
    mil_onnx_read_opts ro = {pass ? dia : MIL_ONNX_DIALECT_AUTO, MIL_ONNX_EXACT, NULL};
    mil_onnx_tensor *r = NULL;
    st = mil_onnx_tensor_read_mem(buf, len, "rt.pb", &ro, &r, &d);
    if (st != MIL_OK) print_error("read %s %s %s: %s\n", mil_onnx_dtype_name(t), mil_onnx_dialect_name(dia),
                                  mil_onnx_encoding_name(enc), mil_diag_first_error(&d));
    assert_int_equal(st, MIL_OK);
    assert_int_equal(r->onnx_type, t);
    assert_int_equal(r->dtype, dt);
    assert_int_equal(r->rank, rank);
    for (int32_t i = 0; i < rank; i++) assert_int_equal(r->shape[i], shape[i]);
    assert_int_equal(r->numel, numel);
    assert_string_equal(r->name, "rt");
    mil_onnx_encoding want_enc = numel == 0 ? r->encoding : t == MIL_ONNX_STRING ? MIL_ONNX_ENC_TYPED : enc;
    assert_int_equal(r->encoding, want_enc);
    /* a message without nd4j fields reads as ONNX: both schemas agree on it */
    bool nd4j_fields = enc == MIL_ONNX_ENC_ND4J && numel > 0;
    assert_int_equal(r->dialect, pass ? dia : nd4j_fields ? MIL_ONNX_DIALECT_ND4J : MIL_ONNX_DIALECT_ONNX);
    if (dt == MIL_DT_STRING) {
      for (int64_t i = 0; i < numel; i++)
        assert_string_equal(((const char *const *)r->data)[i], ((const char *const *)vals)[i]);
    } else if (numel) {
      assert_int_equal(r->nbytes, mil_dtype_storage_bytes(dt, numel));
      assert_memory_equal(r->data, vals, r->nbytes);
    }
    mil_onnx_tensor_free(r);
  }
  mil_diag_clear(&d);
  free(buf);
  free(vals);
}

static void test_roundtrip_all(void **state) {
  (void)state;
  const int64_t shape[3] = {2, 3, 4}, empty[2] = {0, 5};
  int n = 0;
  for (int32_t t = 1; t <= MIL_ONNX_DTYPE_MAX; t++) {
    for (int dia = MIL_ONNX_DIALECT_ONNX; dia <= MIL_ONNX_DIALECT_ND4J; dia++) {
      if (dia == MIL_ONNX_DIALECT_ND4J && t > 16) continue;
      for (int enc = MIL_ONNX_ENC_RAW; enc <= MIL_ONNX_ENC_ND4J; enc++) {
        if (enc == MIL_ONNX_ENC_ND4J && (dia != MIL_ONNX_DIALECT_ND4J || (t != MIL_ONNX_FLOAT16 && t != MIL_ONNX_BOOL)))
          continue;
        check_roundtrip(t, (mil_onnx_dialect)dia, (mil_onnx_encoding)enc, 3, shape);
        check_roundtrip(t, (mil_onnx_dialect)dia, (mil_onnx_encoding)enc, 0, NULL);
        check_roundtrip(t, (mil_onnx_dialect)dia, (mil_onnx_encoding)enc, 2, empty);
        n++;
      }
    }
  }
  print_message("%d DataType x dialect x encoding combinations round-tripped\n", n);
  assert_int_equal(n, 22 * 2 + 16 * 2 + 2);
}

/* int32 / fp32 written as the wider ONNX types and read back narrowed. */
static void test_widen_narrow(void **state) {
  (void)state;
  const int32_t iv[4] = {0, -5, INT32_MAX, INT32_MIN};
  const float fv[4] = {0.5f, -1e30f, 3.0f, -0.0f};
  const int64_t shape[1] = {4};
  const int32_t types[3] = {MIL_ONNX_INT64, MIL_ONNX_DOUBLE, MIL_ONNX_UINT64};
  mil_diag d;
  mil_diag_init(&d);
  for (int k = 0; k < 3; k++) {
    mil_dtype dt = types[k] == MIL_ONNX_DOUBLE ? MIL_DT_FP32 : MIL_DT_INT32;
    const void *vals = dt == MIL_DT_FP32 ? (const void *)fv : (const void *)iv;
    mil_onnx_write_opts wo = {MIL_ONNX_DIALECT_ONNX, MIL_ONNX_ENC_RAW, types[k], NULL, NULL};
    void *buf;
    size_t len;
    mil_status st = mil_onnx_tensor_encode(dt, 1, shape, vals, &wo, &buf, &len, &d);
    if (types[k] == MIL_ONNX_UINT64) { /* negative ints do not fit UINT64 */
      assert_int_equal(st, MIL_ERR_INVALID);
      assert_non_null(strstr(mil_diag_first_error(&d), "element 1 is -5"));
      continue;
    }
    assert_int_equal(st, MIL_OK);
    mil_onnx_tensor *r;
    assert_int_equal(mil_onnx_tensor_read_mem(buf, len, "w.pb", NULL, &r, &d), MIL_OK);
    assert_int_equal(r->onnx_type, types[k]);
    assert_int_equal(r->dtype, dt);
    assert_memory_equal(r->data, vals, 16);
    mil_onnx_tensor_free(r);
    free(buf);
  }
  /* fp32 as INT8: refused */
  void *buf;
  size_t len;
  mil_onnx_write_opts wo = {MIL_ONNX_DIALECT_ONNX, MIL_ONNX_ENC_RAW, MIL_ONNX_INT8, NULL, NULL};
  assert_int_equal(mil_onnx_tensor_encode(MIL_DT_FP32, 1, shape, fv, &wo, &buf, &len, &d), MIL_ERR_UNSUPPORTED);
  /* FLOAT8 in the nd4j dialect: refused */
  wo.dialect = MIL_ONNX_DIALECT_ND4J, wo.onnx_type = 0;
  const uint8_t f8[4] = {1, 2, 3, 4};
  assert_int_equal(mil_onnx_tensor_encode(MIL_DT_FP8E4M3FN, 1, shape, f8, &wo, &buf, &len, &d), MIL_ERR_UNSUPPORTED);
  mil_diag_clear(&d);
}

/* ---- the two dialects ---- */

/* An ONNX TensorProto with extra raw fields appended (field 15/16 as the
 * other schema or ONNX IR 10 would write them). */
static uint8_t *with_extra(const Onnx__TensorProto *m, const uint8_t *extra, size_t n_extra, size_t *len) {
  size_t n;
  uint8_t *b = pack_onnx(m, &n);
  b = realloc(b, n + n_extra);
  memcpy(b + n, extra, n_extra);
  *len = n + n_extra;
  return b;
}

static mil_status read_dialect(const uint8_t *b, size_t len, mil_onnx_dialect dia, mil_onnx_tensor **t, char *err,
                               size_t cap) {
  mil_diag d;
  mil_diag_init(&d);
  mil_onnx_read_opts o = {dia, 0, NULL};
  mil_status st = mil_onnx_tensor_read_mem(b, len, "d.pb", &o, t, &d);
  snprintf(err, cap, "%s", mil_diag_first_error(&d) ? mil_diag_first_error(&d) : "");
  mil_diag_clear(&d);
  return st;
}

static void test_dialects(void **state) {
  (void)state;
  char err[768];
  mil_onnx_tensor *t = NULL;
  int64_t dims[1] = {3};
  float fv[3] = {1, 2, 3};
  Onnx__TensorProto m = ONNX__TENSOR_PROTO__INIT;
  m.n_dims = 1, m.dims = dims;
  m.has_data_type = 1, m.data_type = MIL_ONNX_FLOAT;
  m.n_float_data = 3, m.float_data = fv;
  m.name = "w";
  size_t len;

  /* ONNX IR 10 metadata_props: field 16 = {key "k", value "v"} */
  const uint8_t meta[] = {0x82, 0x01, 0x06, 0x0a, 0x01, 'k', 0x12, 0x01, 'v'};
  uint8_t *b = with_extra(&m, meta, sizeof meta, &len);
  assert_int_equal(read_dialect(b, len, MIL_ONNX_DIALECT_AUTO, &t, err, sizeof err), MIL_OK);
  assert_int_equal(t->dialect, MIL_ONNX_DIALECT_ONNX);
  assert_int_equal(t->n_metadata, 1);
  assert_memory_equal(t->data, fv, 12);
  mil_onnx_tensor_free(t);
  /* read as nd4j on purpose, its bytes become bools of a FLOAT tensor: refused */
  assert_int_equal(read_dialect(b, len, MIL_ONNX_DIALECT_ND4J, &t, err, sizeof err), MIL_ERR_FORMAT);
  assert_non_null(strstr(err, "bool_val"));
  free(b);

  /* nd4j bool_val: packed 0/1 bytes on a BOOL tensor without other data */
  m.data_type = MIL_ONNX_BOOL, m.n_float_data = 0;
  const uint8_t bools[] = {0x82, 0x01, 0x03, 0x01, 0x00, 0x01};
  b = with_extra(&m, bools, sizeof bools, &len);
  assert_int_equal(read_dialect(b, len, MIL_ONNX_DIALECT_AUTO, &t, err, sizeof err), MIL_OK);
  assert_int_equal(t->dialect, MIL_ONNX_DIALECT_ND4J);
  assert_int_equal(t->encoding, MIL_ONNX_ENC_ND4J);
  assert_memory_equal(t->data, "\1\0\1", 3);
  mil_onnx_tensor_free(t);
  /* read as ONNX on purpose: field 16 is no metadata entry there */
  assert_int_equal(read_dialect(b, len, MIL_ONNX_DIALECT_ONNX, &t, err, sizeof err), MIL_ERR_FORMAT);
  assert_non_null(strstr(err, "not a StringStringEntryProto"));
  assert_non_null(strstr(err, "use the nd4j dialect"));
  free(b);

  /* the same BOOL tensor whose field 16 is a valid metadata entry of 3 varints: undecidable */
  const uint8_t amb[] = {0x82, 0x01, 0x03, 0x0a, 0x01, 0x41};
  b = with_extra(&m, amb, sizeof amb, &len);
  assert_int_equal(read_dialect(b, len, MIL_ONNX_DIALECT_AUTO, &t, err, sizeof err), MIL_ERR_FORMAT);
  assert_non_null(strstr(err, "cannot decide the dialect"));
  assert_non_null(strstr(err, "explicitly"));
  assert_int_equal(read_dialect(b, len, MIL_ONNX_DIALECT_ND4J, &t, err, sizeof err), MIL_OK);
  assert_memory_equal(t->data, "\1\1\1", 3); /* what nd4j makes of those bytes */
  mil_onnx_tensor_free(t);
  assert_int_equal(read_dialect(b, len, MIL_ONNX_DIALECT_ONNX, &t, err, sizeof err), MIL_ERR_FORMAT);
  assert_non_null(strstr(err, "no data field"));
  free(b);

  /* half_val (field 15) together with an ONNX-only data type: undecidable */
  m.data_type = MIL_ONNX_FLOAT8E4M3FN;
  int32_t f8[3] = {1, 2, 3};
  m.n_int32_data = 3, m.int32_data = f8;
  const uint8_t half[] = {0x7a, 0x01, 0x00};
  b = with_extra(&m, half, sizeof half, &len);
  assert_int_equal(read_dialect(b, len, MIL_ONNX_DIALECT_AUTO, &t, err, sizeof err), MIL_ERR_FORMAT);
  assert_non_null(strstr(err, "field 15"));
  assert_non_null(strstr(err, "FLOAT8E4M3FN"));
  free(b);

  /* field 16 that is neither a message nor bools */
  m.data_type = MIL_ONNX_INT32;
  const uint8_t junk[] = {0x82, 0x01, 0x02, 0x07, 0x80};
  b = with_extra(&m, junk, sizeof junk, &len);
  assert_int_equal(read_dialect(b, len, MIL_ONNX_DIALECT_AUTO, &t, err, sizeof err), MIL_ERR_FORMAT);
  assert_non_null(strstr(err, "cannot decide"));
  free(b);
}

/* ---- malformed wire input ---- */

static void test_truncation_and_wire(void **state) {
  (void)state;
  int64_t dims[2] = {2, 2};
  uint16_t h[4] = {0x3c00, 0x4000, 0x7e00, 0x8001};
  Onnx__TensorProto m = ONNX__TENSOR_PROTO__INIT;
  m.n_dims = 2, m.dims = dims;
  m.has_data_type = 1, m.data_type = MIL_ONNX_FLOAT16;
  m.name = "trunc";
  m.has_raw_data = 1, m.raw_data.data = (uint8_t *)h, m.raw_data.len = sizeof h;
  size_t len;
  uint8_t *b = pack_onnx(&m, &len);
  mil_diag d;
  mil_diag_init(&d);
  for (size_t k = 0; k < len; k++) {
    mil_onnx_tensor *t = NULL;
    uint8_t *cut = malloc(k ? k : 1);
    memcpy(cut, b, k);
    mil_status st = mil_onnx_tensor_read_mem(cut, k, "cut.pb", NULL, &t, &d);
    if (st == MIL_OK) print_error("prefix of %zu bytes read\n", k);
    assert_int_not_equal(st, MIL_OK);
    assert_null(t);
    assert_non_null(mil_diag_first_error(&d));
    assert_non_null(strstr(mil_diag_first_error(&d), "cut.pb"));
    mil_diag_clear(&d);
    free(cut);
  }
  mil_onnx_tensor *t = NULL;
  assert_int_equal(mil_onnx_tensor_read_mem(b, len, "full.pb", NULL, &t, &d), MIL_OK);
  mil_onnx_tensor_free(t);
  free(b);
  /* wrong wire types: data_type (2) as length-delimited, dims (1) as 32-bit */
  const uint8_t w1[] = {0x08, 0x02, 0x12, 0x01, 0x01};
  assert_int_equal(mil_onnx_tensor_read_mem(w1, sizeof w1, "w1.pb", NULL, &t, &d), MIL_ERR_FORMAT);
  assert_non_null(strstr(mil_diag_first_error(&d), "byte 2"));
  assert_non_null(strstr(mil_diag_first_error(&d), "wire type"));
  mil_diag_clear(&d);
  const uint8_t w2[] = {0x0d, 0x01, 0x00, 0x00, 0x00, 0x10, 0x01};
  assert_int_equal(mil_onnx_tensor_read_mem(w2, sizeof w2, "w2.pb", NULL, &t, &d), MIL_ERR_FORMAT);
  assert_non_null(strstr(mil_diag_first_error(&d), "dims"));
  mil_diag_clear(&d);
  /* an empty buffer is a TensorProto without data_type */
  assert_int_equal(mil_onnx_tensor_read_mem("", 0, "e.pb", NULL, &t, &d), MIL_ERR_FORMAT);
  assert_non_null(strstr(mil_diag_first_error(&d), "data_type"));
  mil_diag_clear(&d);
}

/* ---- external data ---- */

static char g_dir[256];

static void put_file(const char *name, const void *data, size_t n) {
  char path[512];
  snprintf(path, sizeof path, "%s/%s", g_dir, name);
  FILE *f = fopen(path, "wb");
  assert_non_null(f);
  if (n) assert_int_equal(fwrite(data, 1, n, f), n);
  assert_int_equal(fclose(f), 0);
}

/* Reads a UINT8 [n] tensor whose data is external with the given keys
 * (NULL values are left out); returns the status, the first error in err. */
static mil_status read_ext(int64_t n, const char *loc, const char *off, const char *len, const char *sum,
                           unsigned flags, const char *base, mil_onnx_tensor **t, char *err, size_t cap) {
  int64_t dims[1] = {n};
  Onnx__TensorProto m = ONNX__TENSOR_PROTO__INIT;
  m.n_dims = 1, m.dims = dims;
  m.has_data_type = 1, m.data_type = MIL_ONNX_UINT8;
  m.name = "e";
  Onnx__StringStringEntryProto kv[4], *kvp[4];
  const char *keys[4] = {"location", "offset", "length", "checksum"}, *vals[4] = {loc, off, len, sum};
  for (int i = 0; i < 4; i++) {
    if (!vals[i]) continue;
    onnx__string_string_entry_proto__init(&kv[m.n_external_data]);
    kv[m.n_external_data].key = (char *)keys[i];
    kv[m.n_external_data].value = (char *)vals[i];
    kvp[m.n_external_data] = &kv[m.n_external_data];
    m.n_external_data++;
  }
  m.external_data = kvp;
  m.has_data_location = 1, m.data_location = ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL;
  size_t blen;
  uint8_t *b = pack_onnx(&m, &blen);
  mil_diag d;
  mil_diag_init(&d);
  mil_onnx_read_opts o = {MIL_ONNX_DIALECT_AUTO, flags, base};
  mil_status st = mil_onnx_tensor_read_mem(b, blen, "ext.pb", &o, t, &d);
  snprintf(err, cap, "%s", mil_diag_first_error(&d) ? mil_diag_first_error(&d) : "");
  mil_diag_clear(&d);
  free(b);
  return st;
}

static void test_external(void **state) {
  (void)state;
  snprintf(g_dir, sizeof g_dir, "/tmp/mil_onnx_ext_XXXXXX");
  assert_non_null(mkdtemp(g_dir));
  char err[1024], sub[300], path[600];
  mil_onnx_tensor *t = NULL;
  put_file("abc.bin", "abc", 3);
  /* SHA1("abc") from FIPS 180-2 */
  const char *sha_abc = "a9993e364706816aba3e25717850c26c9cd0d89d";
  assert_int_equal(read_ext(3, "abc.bin", NULL, NULL, sha_abc, 0, g_dir, &t, err, sizeof err), MIL_OK);
  assert_int_equal(t->encoding, MIL_ONNX_ENC_EXTERNAL);
  assert_memory_equal(t->data, "abc", 3);
  assert_null(t->priv->owned); /* a view of the mapping */
  assert_non_null(t->priv->map);
  /* handed to a program: the value views the mapping and outlives the tensor */
  mil_program *p = mil_program_new(NULL);
  mil_value *v = mil_onnx_tensor_to_value(p, t);
  assert_non_null(v);
  assert_true(v->file_mapped);
  mil_onnx_tensor_free(t);
  assert_memory_equal(mil_value_data(v), "abc", 3);
  mil_program_free(p);
  /* checksum mismatch; skipped with MIL_ONNX_NO_CHECKSUM */
  const char *bad_sum = "0000000000000000000000000000000000000000";
  assert_int_equal(read_ext(3, "abc.bin", NULL, NULL, bad_sum, 0, g_dir, &t, err, sizeof err), MIL_ERR_FORMAT);
  assert_non_null(strstr(err, "SHA1 is a9993e36"));
  assert_int_equal(read_ext(3, "abc.bin", NULL, NULL, bad_sum, MIL_ONNX_NO_CHECKSUM, g_dir, &t, err, sizeof err),
                   MIL_OK);
  mil_onnx_tensor_free(t);
  /* offset and length inside the file, offset not page-aligned */
  uint8_t big[5000];
  for (int i = 0; i < 5000; i++) big[i] = (uint8_t)(i * 7);
  put_file("big.bin", big, sizeof big);
  assert_int_equal(read_ext(4, "big.bin", "4099", "4", NULL, 0, g_dir, &t, err, sizeof err), MIL_OK);
  assert_memory_equal(t->data, big + 4099, 4);
  mil_onnx_tensor_free(t);
  /* faults */
  assert_int_equal(read_ext(3, "../abc.bin", NULL, NULL, NULL, 0, g_dir, &t, err, sizeof err), MIL_ERR_INVALID);
  assert_non_null(strstr(err, "'..'"));
  assert_int_equal(read_ext(3, "/etc/hostname", NULL, NULL, NULL, 0, g_dir, &t, err, sizeof err), MIL_ERR_INVALID);
  assert_non_null(strstr(err, "absolute"));
  assert_int_equal(read_ext(3, "missing.bin", NULL, NULL, NULL, 0, g_dir, &t, err, sizeof err), MIL_ERR_IO);
  assert_non_null(strstr(err, "cannot open"));
  assert_non_null(strstr(err, "missing.bin"));
  assert_int_equal(read_ext(3, "abc.bin", "2", "3", NULL, 0, g_dir, &t, err, sizeof err), MIL_ERR_FORMAT);
  assert_non_null(strstr(err, "too short"));
  assert_int_equal(read_ext(4, "abc.bin", NULL, NULL, NULL, 0, g_dir, &t, err, sizeof err), MIL_ERR_FORMAT);
  assert_non_null(strstr(err, "the file holds (after the offset) 3 bytes"));
  assert_int_equal(read_ext(3, "abc.bin", NULL, "2", NULL, 0, g_dir, &t, err, sizeof err), MIL_ERR_FORMAT);
  assert_non_null(strstr(err, "key 'length' says 2 bytes"));
  assert_int_equal(read_ext(3, "abc.bin", "-1", NULL, NULL, 0, g_dir, &t, err, sizeof err), MIL_ERR_FORMAT);
  assert_non_null(strstr(err, "key 'offset'"));
  assert_int_equal(read_ext(3, "abc.bin", "99999999999999999999", NULL, NULL, 0, g_dir, &t, err, sizeof err),
                   MIL_ERR_FORMAT);
  assert_int_equal(read_ext(3, NULL, "0", NULL, NULL, 0, g_dir, &t, err, sizeof err), MIL_ERR_FORMAT);
  assert_non_null(strstr(err, "'location'"));
  assert_int_equal(read_ext(3, "abc.bin", NULL, NULL, NULL, 0, NULL, &t, err, sizeof err), MIL_ERR_INVALID);
  assert_non_null(strstr(err, "needs the model's directory"));
  /* symbolic links (as onnx's checker: even one that stays inside), a directory
   * link out of the model directory (base = g_dir/sub), a file with two hard links */
  snprintf(sub, sizeof sub, "%s/sub", g_dir);
  assert_int_equal(mkdir(sub, 0777), 0);
  snprintf(path, sizeof path, "%s/out.bin", sub);
  assert_int_equal(symlink("../abc.bin", path), 0);
  assert_int_equal(read_ext(3, "out.bin", NULL, NULL, NULL, 0, sub, &t, err, sizeof err), MIL_ERR_INVALID);
  assert_non_null(strstr(err, "is a symbolic link"));
  snprintf(path, sizeof path, "%s/in.bin", g_dir);
  assert_int_equal(symlink("abc.bin", path), 0);
  assert_int_equal(read_ext(3, "in.bin", NULL, NULL, NULL, 0, g_dir, &t, err, sizeof err), MIL_ERR_INVALID);
  assert_non_null(strstr(err, "is a symbolic link"));
  snprintf(path, sizeof path, "%s/outside", g_dir);
  assert_int_equal(mkdir(path, 0777), 0);
  put_file("outside/x.bin", "xyz", 3);
  snprintf(path, sizeof path, "%s/d", sub);
  assert_int_equal(symlink("../outside", path), 0);
  assert_int_equal(read_ext(3, "d/x.bin", NULL, NULL, NULL, 0, sub, &t, err, sizeof err), MIL_ERR_INVALID);
  assert_non_null(strstr(err, "outside the model's directory"));
  assert_int_equal(read_ext(3, "outside/x.bin", NULL, NULL, NULL, 0, g_dir, &t, err, sizeof err), MIL_OK);
  mil_onnx_tensor_free(t);
  put_file("h.bin", "abc", 3);
  char h1[600], h2[600];
  snprintf(h1, sizeof h1, "%s/h.bin", g_dir);
  snprintf(h2, sizeof h2, "%s/h2.bin", g_dir);
  assert_int_equal(link(h1, h2), 0);
  assert_int_equal(read_ext(3, "h.bin", NULL, NULL, NULL, 0, g_dir, &t, err, sizeof err), MIL_ERR_INVALID);
  assert_non_null(strstr(err, "2 hard links"));

  /* the writer's external form, read back from the file */
  const float fv[6] = {1, 2, 3, 4, 5, -6};
  const int64_t shape[2] = {2, 3};
  mil_onnx_write_opts wo = {MIL_ONNX_DIALECT_ONNX, MIL_ONNX_ENC_EXTERNAL, 0, "w", "w.data"};
  snprintf(path, sizeof path, "%s/w.pb", g_dir);
  mil_diag d;
  mil_diag_init(&d);
  assert_int_equal(mil_onnx_tensor_write(path, MIL_DT_FP32, 2, shape, fv, &wo, &d), MIL_OK);
  for (int dia = MIL_ONNX_DIALECT_ONNX; dia <= MIL_ONNX_DIALECT_ND4J; dia++) {
    wo.dialect = (mil_onnx_dialect)dia;
    assert_int_equal(mil_onnx_tensor_write(path, MIL_DT_FP32, 2, shape, fv, &wo, &d), MIL_OK);
    assert_int_equal(mil_onnx_tensor_read(path, NULL, &t, &d), MIL_OK);
    assert_int_equal(t->encoding, MIL_ONNX_ENC_EXTERNAL);
    assert_memory_equal(t->data, fv, sizeof fv);
    mil_onnx_tensor_free(t);
  }
  wo.external_location = "../x.data";
  assert_int_equal(mil_onnx_tensor_write(path, MIL_DT_FP32, 2, shape, fv, &wo, &d), MIL_ERR_INVALID);
  mil_diag_clear(&d);
  char cmd[400];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_dir);
  assert_int_equal(system(cmd), 0);
}

/* ---- TypeProto / ValueInfoProto on bytes, both dialects ---- */

static void test_type_bytes(void **state) {
  (void)state;
  mil_program *p = mil_program_new(NULL);
  mil_diag d;
  mil_diag_init(&d);
  /* nd4j's TypeProto built with the seed schema's own structs */
  Org__Nd4j__Ir__TensorShapeProto__Dimension a = ORG__ND4J__IR__TENSOR_SHAPE_PROTO__DIMENSION__INIT, b = a;
  a.value_case = ORG__ND4J__IR__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM, a.dim_param = "batch";
  b.value_case = ORG__ND4J__IR__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE, b.dim_value = 7;
  Org__Nd4j__Ir__TensorShapeProto__Dimension *dims[2] = {&a, &b};
  Org__Nd4j__Ir__TensorShapeProto sh = ORG__ND4J__IR__TENSOR_SHAPE_PROTO__INIT;
  sh.n_dim = 2, sh.dim = dims;
  Org__Nd4j__Ir__TypeProto__TensorDescriptor td = ORG__ND4J__IR__TYPE_PROTO__TENSOR_DESCRIPTOR__INIT;
  td.elem_type = ORG__ND4J__IR__DATA_TYPE__FLOAT16, td.shape = &sh;
  Org__Nd4j__Ir__TypeProto tp = ORG__ND4J__IR__TYPE_PROTO__INIT;
  tp.value_case = ORG__ND4J__IR__TYPE_PROTO__VALUE_TENSOR_TYPE, tp.tensor_type = &td;
  Org__Nd4j__Ir__ValueInfoProto vi = ORG__ND4J__IR__VALUE_INFO_PROTO__INIT;
  vi.name = "h", vi.type = &tp;
  size_t n = org__nd4j__ir__value_info_proto__get_packed_size(&vi);
  uint8_t *buf = malloc(n);
  org__nd4j__ir__value_info_proto__pack(&vi, buf);
  const char *name;
  const mil_type *t;
  assert_int_equal(mil_onnx_value_info_decode(p, buf, n, 0, "vi.pb", &name, &t, &d), MIL_OK);
  assert_string_equal(name, "h");
  assert_int_equal(t->dtype, MIL_DT_FP16);
  assert_int_equal(t->rank, 2);
  assert_string_equal(t->dims[0].sym, "batch");
  assert_int_equal(t->dims[1].size, 7);
  /* written back in the nd4j dialect: the very same bytes */
  void *out;
  size_t len;
  assert_int_equal(mil_onnx_value_info_encode("h", t, MIL_ONNX_DIALECT_ND4J, &out, &len, &d), MIL_OK);
  assert_int_equal(len, n);
  assert_memory_equal(out, buf, n);
  free(out);
  free(buf);
  /* a list of tensors is a sequence_type in ONNX; nd4j has none */
  const mil_type *lt = mil_type_list(p, t, (mil_dim){-1, NULL, false});
  assert_int_equal(mil_onnx_type_encode(lt, MIL_ONNX_DIALECT_ND4J, &out, &len, &d), MIL_ERR_UNSUPPORTED);
  assert_int_equal(mil_onnx_type_encode(lt, MIL_ONNX_DIALECT_ONNX, &out, &len, &d), MIL_OK);
  const mil_type *back;
  assert_int_equal(mil_onnx_type_decode(p, out, len, 0, "seq.pb", &back, &d), MIL_OK);
  assert_true(mil_type_equal(back, lt));
  free(out);
  /* unknown rank and an fp8 type; fp8 has no nd4j DataType */
  const mil_type *f8 = mil_type_tensor(p, MIL_DT_FP8E4M3FN, -1, NULL);
  assert_int_equal(mil_onnx_type_encode(f8, MIL_ONNX_DIALECT_ONNX, &out, &len, &d), MIL_OK);
  assert_int_equal(mil_onnx_type_decode(p, out, len, 0, "f8.pb", &back, &d), MIL_OK);
  assert_true(mil_type_equal(back, f8));
  free(out);
  assert_int_equal(mil_onnx_type_encode(f8, MIL_ONNX_DIALECT_ND4J, &out, &len, &d), MIL_ERR_UNSUPPORTED);
  /* elem_type 0, a map type, a negative dim_value */
  const uint8_t undef[] = {0x0a, 0x00};                        /* tensor_type {} */
  const uint8_t map[] = {0x2a, 0x02, 0x08, 0x07};              /* map_type {key_type: INT64} */
  const uint8_t neg[] = {0x0a, 0x11, 0x08, 0x01, 0x12, 0x0d, 0x0a, 0x0b, 0x08, 0xff, 0xff, 0xff, 0xff, 0xff,
                         0xff, 0xff, 0xff, 0xff, 0x01}; /* FLOAT, dim_value -1 */
  mil_diag_clear(&d);
  assert_int_equal(mil_onnx_type_decode(p, undef, sizeof undef, 0, "u.pb", &back, &d), MIL_ERR_FORMAT);
  assert_non_null(strstr(mil_diag_first_error(&d), "elem_type is 0"));
  mil_diag_clear(&d);
  assert_int_equal(mil_onnx_type_decode(p, map, sizeof map, 0, "m.pb", &back, &d), MIL_ERR_UNSUPPORTED);
  assert_non_null(strstr(mil_diag_first_error(&d), "map_type"));
  mil_diag_clear(&d);
  assert_int_equal(mil_onnx_type_decode(p, neg, sizeof neg, 0, "n.pb", &back, &d), MIL_ERR_FORMAT);
  assert_non_null(strstr(mil_diag_first_error(&d), "dim_value is -1"));
  mil_diag_clear(&d);
  mil_program_free(p);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_raw_fp32),        cmocka_unit_test(test_typed_fields),
      cmocka_unit_test(test_int64_narrowing), cmocka_unit_test(test_malformed_basic),
      cmocka_unit_test(test_value_and_type),  cmocka_unit_test(test_roundtrip_all),
      cmocka_unit_test(test_widen_narrow),    cmocka_unit_test(test_dialects),
      cmocka_unit_test(test_truncation_and_wire), cmocka_unit_test(test_external),
      cmocka_unit_test(test_type_bytes),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
