/* ONNX Scan (opset 9) with reversed input / output directions and a scan
 * axis of 1, on ONNX's test_scan9_sum model (a running sum: state + x)
 * with those attributes added, against running sums computed here. ONNX's
 * node tests use the defaults only. Skipped without libonnx-testdata. */
#include <sys/stat.h>

#include "onnx_ops2_util.h"

#define MODEL "/usr/share/libonnx-testdata/data/node/test_scan9_sum/model.onnx"

/* The model with INTS attributes names[i] = {vals[i]} added to its Scan
 * node, and input x declared [2, 3] when transposed. */
static uint8_t *with_attrs(const char *const *names, const int64_t *vals, int n, bool transposed, size_t *len) {
  FILE *f = fopen(MODEL, "rb");
  assert_non_null(f);
  static uint8_t raw[1 << 16];
  size_t got = fread(raw, 1, sizeof raw, f);
  fclose(f);
  Onnx__ModelProto *m = onnx__model_proto__unpack(NULL, got, raw);
  assert_non_null(m);
  Onnx__NodeProto *nd = m->graph->node[0];
  if (transposed) {
    Onnx__TensorShapeProto *sh = m->graph->input[1]->type->tensor_type->shape;
    sh->dim[0]->dim_value = 2;
    sh->dim[1]->dim_value = 3;
  }
  Onnx__AttributeProto at[4], *atp[8];
  for (size_t i = 0; i < nd->n_attribute; i++) atp[i] = nd->attribute[i];
  for (int i = 0; i < n; i++) {
    onnx__attribute_proto__init(&at[i]);
    at[i].name = (char *)names[i];
    at[i].has_type = true;
    at[i].type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS;
    at[i].n_ints = 1;
    at[i].ints = (int64_t *)&vals[i];
    atp[nd->n_attribute + (size_t)i] = &at[i];
  }
  Onnx__AttributeProto **old = nd->attribute;
  size_t old_n = nd->n_attribute;
  nd->attribute = atp;
  nd->n_attribute += (size_t)n;
  *len = onnx__model_proto__get_packed_size(m);
  uint8_t *buf = malloc(*len);
  onnx__model_proto__pack(m, buf);
  nd->attribute = old;
  nd->n_attribute = old_n;
  onnx__model_proto__free_unpacked(m, NULL);
  return buf;
}

/* x [3, 2] scanned along axis 0 (rows) or, transposed, axis 1 */
static void check(bool in_rev, bool out_rev, bool axis1) {
  const char *names[3];
  int64_t vals[3];
  int n = 0;
  if (in_rev) names[n] = "scan_input_directions", vals[n++] = 1;
  if (out_rev) names[n] = "scan_output_directions", vals[n++] = 1;
  if (axis1) names[n] = "scan_input_axes", vals[n++] = 1;
  size_t len;
  uint8_t *buf = with_attrs(names, vals, n, axis1, &len);
  float init[2] = {0.5f, -1}, rows[3][2] = {{1, 2}, {3, 4}, {5, 6}}, x[6], y[2 + 6];
  for (int t = 0; t < 3; t++)
    for (int k = 0; k < 2; k++) x[axis1 ? k * 3 + t : t * 2 + k] = rows[t][k];
  io ins[2] = {{"initial", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 1, {2}},
               {"x", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 2, {axis1 ? 2 : 3, axis1 ? 3 : 2}}};
  mil_diag d;
  mil_model *m;
  mil_interp *ip = open_interp(buf, len, NULL, &m, &d);
  void *data[2] = {init, x};
  for (int i = 0; i < 2; i++) {
    mil_tensor t = {MIL_DT_FP32, ins[i].rank, ins[i].dims, data[i], (size_t)numel(&ins[i]) * 4, numel(&ins[i])};
    assert_int_equal(mil_interp_set_input(ip, mil_interp_input_name(ip, i), &t, &d), MIL_OK);
  }
  assert_int_equal(mil_interp_run(ip, NULL, &d), MIL_OK);
  memcpy(y, mil_interp_output_at(ip, 0)->data, 2 * sizeof(float));
  assert_int_equal(mil_interp_output_at(ip, 1)->numel, 6);
  memcpy(y + 2, mil_interp_output_at(ip, 1)->data, 6 * sizeof(float));
  float acc[2] = {init[0], init[1]}, steps[3][2];
  for (int s = 0; s < 3; s++) {
    int t = in_rev ? 2 - s : s;
    for (int k = 0; k < 2; k++) steps[s][k] = acc[k] += rows[t][k];
  }
  for (int k = 0; k < 2; k++) assert_true(y[k] == acc[k]);
  for (int s = 0; s < 3; s++)
    for (int k = 0; k < 2; k++) assert_true(y[2 + s * 2 + k] == steps[out_rev ? 2 - s : s][k]);
  mil_interp_free(ip);
  mil_model_free(m);
  mil_diag_clear(&d);
  free(buf);
}

static void test_scan_directions_axes(void **state) {
  (void)state;
  check(false, false, false);
  check(true, false, false);
  check(false, true, false);
  check(true, true, true);
}

int main(void) {
  struct stat sb;
  if (stat(MODEL, &sb) != 0) {
    printf("SKIPPED: " MODEL " not found (install Debian's libonnx-testdata)\n");
    return 77;
  }
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_scan_directions_axes)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
