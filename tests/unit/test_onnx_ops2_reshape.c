/* ONNX Reshape with allowzero=1 and a shape given at run time
 * (docs/Operators.md Reshape): on an input known not to be empty no 0 can
 * occur in a valid shape (it would make an empty result of another
 * volume), so the reshape is an ordinary one; on an input with a static 0
 * dim the result is empty too, so it is a fill of the run-time shape (its
 * 0s empty dims; MIL's reshape would read a 0 as the input's dim). */
#include "onnx_ops2_util.h"

static uint8_t *reshape_model(const io *ins, const io *out, size_t *len) {
  const char *names[1] = {"allowzero"};
  const int64_t one[1] = {1}, *vals[1] = {one};
  const int cnt[1] = {-1};
  g_opset = 14;
  uint8_t *buf = model("Reshape", ins, 2, out, names, vals, cnt, 1, len);
  g_opset = 0;
  return buf;
}

static void test_reshape_allowzero_runtime_shape(void **state) {
  (void)state;
  const int F = ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, I = ONNX__TENSOR_PROTO__DATA_TYPE__INT64;
  io ins[2] = {{"X", F, 2, {2, 3}}, {"S", I, 1, {3}}};
  io out = {"Y", F, 3, {3, 1, 2}};
  size_t len;
  uint8_t *buf = reshape_model(ins, &out, &len);
  float x[6] = {1, 2, 3, 4, 5, 6}, y[6];
  int32_t s[3] = {3, -1, 2};
  run(buf, len, ins, 2, (void *[]){x, s}, MIL_DT_FP32, y, 6);
  for (int i = 0; i < 6; i++) assert_true(y[i] == x[i]);
  free(buf);
}

static void test_reshape_allowzero_empty_input(void **state) {
  (void)state;
  const int F = ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, I = ONNX__TENSOR_PROTO__DATA_TYPE__INT64;
  io ins[2] = {{"X", F, 3, {0, 3, 4}}, {"S", I, 1, {3}}};
  io out = {"Y", F, 3, {3, 4, 0}};
  size_t len;
  uint8_t *buf = reshape_model(ins, &out, &len);
  mil_diag d;
  mil_diag_init(&d);
  mil_onnx_options o;
  memset(&o, 0, sizeof o);
  mil_model *m = NULL;
  if (mil_onnx_import_buffer(buf, len, "r.onnx", NULL, &o, &m, &d) != MIL_OK) fail_msg("%s", mil_diag_first_error(&d));
  const mil_program *p = mil_model_program(m);
  assert_int_equal(mil_program_count_op_type(p, "fill"), 1);
  assert_int_equal(mil_program_count_op_type(p, "reshape"), 0);
  mil_model_free(m);
  mil_diag_clear(&d);
  free(buf);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_reshape_allowzero_runtime_shape),
      cmocka_unit_test(test_reshape_allowzero_empty_input),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
