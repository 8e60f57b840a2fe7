/* ONNX Where whose cond is larger than the numpy broadcast of X and Y
 * (ONNX's NegativeLogLikelihoodLoss function body selects per-element
 * weights this way): the output has the broadcast shape of all three
 * inputs, element i taking X where cond is true and Y elsewhere, as
 * numpy.where does (onnx/reference/ops/op_where.py). */
#include <math.h>

#include "onnx_ops2_util.h"

/* Imports a Where(cond, X, Y) model and runs it: cond bool, given as the
 * int32 0 / 1 the importer makes of a bool model input, X and Y of the
 * importer's dtype xdt (4 bytes per element);
 * checks the output has shape out and copies its n elements to y. */
static void run_where(const io *ins, const void *cond, const void *x, const void *yv, mil_dtype xdt, const io *out,
                      void *y) {
  size_t len;
  uint8_t *buf = model("Where", ins, 3, out, NULL, NULL, NULL, 0, &len);
  mil_diag d;
  mil_model *m;
  mil_interp *ip = open_interp(buf, len, NULL, &m, &d);
  const void *data[3] = {cond, x, yv};
  for (int i = 0; i < 3; i++) {
    mil_dtype dt = i == 0 ? MIL_DT_INT32 : xdt;
    mil_tensor t = {dt, ins[i].rank, ins[i].dims, (void *)data[i], (size_t)numel(&ins[i]) * 4, numel(&ins[i])};
    mil_status si = mil_interp_set_input(ip, mil_interp_input_name(ip, i), &t, &d);
    if (si != MIL_OK) printf("  %s\n", mil_diag_first_error(&d));
    assert_int_equal(si, MIL_OK);
  }
  mil_status st = mil_interp_run(ip, NULL, &d);
  if (st != MIL_OK) printf("  %s\n", mil_diag_first_error(&d));
  assert_int_equal(st, MIL_OK);
  const mil_tensor *r = mil_interp_output_at(ip, 0);
  assert_int_equal(r->dtype, xdt);
  assert_int_equal(r->rank, out->rank);
  for (int k = 0; k < out->rank; k++) assert_int_equal(r->shape[k], out->dims[k]);
  memcpy(y, r->data, (size_t)numel(out) * 4);
  mil_interp_free(ip);
  mil_model_free(m);
  mil_diag_clear(&d);
  free(buf);
}

/* cond (3, 2) against one-element X and Y: a (3, 2) output; X = -0.0
 * keeps its sign where chosen (the element is copied, not recomputed). */
static void test_where_cond_widens_fp32(void **state) {
  (void)state;
  const int F = ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, B = ONNX__TENSOR_PROTO__DATA_TYPE__BOOL;
  io ins[3] = {{"C", B, 2, {3, 2}}, {"X", F, 1, {1}}, {"Y", F, 1, {1}}};
  io out = {"Z", F, 2, {3, 2}};
  const int32_t cond[6] = {1, 0, 0, 1, 1, 1};
  float x = -0.0f, yv = 2.5f, z[6];
  run_where(ins, cond, &x, &yv, MIL_DT_FP32, &out, z);
  const float want[6] = {-0.0f, 2.5f, 2.5f, -0.0f, -0.0f, -0.0f};
  for (int i = 0; i < 6; i++) {
    assert_true(z[i] == want[i]);
    assert_int_equal(signbit(z[i]) != 0, signbit(want[i]) != 0);
  }
}

/* int64 (imported as int32) X of shape (3,) and Y of shape (1,) against
 * cond (2, 3): cond widens axis 0 only. */
static void test_where_cond_widens_int(void **state) {
  (void)state;
  const int I = ONNX__TENSOR_PROTO__DATA_TYPE__INT64, B = ONNX__TENSOR_PROTO__DATA_TYPE__BOOL;
  io ins[3] = {{"C", B, 2, {2, 3}}, {"X", I, 1, {3}}, {"Y", I, 1, {1}}};
  io out = {"Z", I, 2, {2, 3}};
  const int32_t cond[6] = {1, 1, 0, 0, 1, 0};
  int32_t x[3] = {10, 20, 30}, yv = -7, z[6];
  run_where(ins, cond, x, &yv, MIL_DT_INT32, &out, z);
  const int32_t want[6] = {10, 20, -7, -7, 20, -7};
  for (int i = 0; i < 6; i++) assert_int_equal(z[i], want[i]);
}

/* bool X and Y (one element each) against cond (4,): a (4,) output (bool,
 * or the int32 0 / 1 of a model output). */
static void test_where_cond_widens_bool(void **state) {
  (void)state;
  const int B = ONNX__TENSOR_PROTO__DATA_TYPE__BOOL;
  io ins[3] = {{"C", B, 1, {4}}, {"X", B, 1, {1}}, {"Y", B, 1, {1}}};
  io out = {"Z", B, 1, {4}};
  size_t len;
  uint8_t *buf = model("Where", ins, 3, &out, NULL, NULL, NULL, 0, &len);
  mil_diag d;
  mil_model *m;
  mil_interp *ip = open_interp(buf, len, NULL, &m, &d);
  const int32_t cond[4] = {0, 1, 1, 0}, x = 1, yv = 0;
  const void *data[3] = {cond, &x, &yv};
  for (int i = 0; i < 3; i++) {
    mil_tensor t = {MIL_DT_INT32, ins[i].rank, ins[i].dims, (void *)data[i], (size_t)numel(&ins[i]) * 4, numel(&ins[i])};
    assert_int_equal(mil_interp_set_input(ip, mil_interp_input_name(ip, i), &t, &d), MIL_OK);
  }
  assert_int_equal(mil_interp_run(ip, NULL, &d), MIL_OK);
  const mil_tensor *r = mil_interp_output_at(ip, 0);
  assert_int_equal(r->numel, 4);
  for (int i = 0; i < 4; i++) {
    bool zi = r->dtype == MIL_DT_BOOL ? ((const uint8_t *)r->data)[i] != 0 : ((const int32_t *)r->data)[i] != 0;
    assert_int_equal(zi, cond[i] != 0);
  }
  mil_interp_free(ip);
  mil_model_free(m);
  mil_diag_clear(&d);
  free(buf);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_where_cond_widens_fp32),
      cmocka_unit_test(test_where_cond_widens_int),
      cmocka_unit_test(test_where_cond_widens_bool),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
