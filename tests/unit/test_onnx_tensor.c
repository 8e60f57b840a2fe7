/* Tests for the ONNX tensor reader (include/mil/onnx_tensor.h and
 * src/onnx/onnx_tensor_internal.h): messages are built with protobuf-c's
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

#include "mil/ir.h"
#include "mil/onnx_tensor.h"
#include "onnx/onnx_tensor_internal.h"

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

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_raw_fp32),        cmocka_unit_test(test_typed_fields),
      cmocka_unit_test(test_int64_narrowing), cmocka_unit_test(test_malformed_basic),
      cmocka_unit_test(test_value_and_type),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
