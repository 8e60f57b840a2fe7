/* ONNX RoiAlign against ONNX's node tests, whose expected outputs are
 * given to 4 decimals, some rounded and some cut (so the conformance
 * runner's 1e-4 relative tolerance lists them as known failures): every
 * element must agree within 1e-4 (the last decimal). Skipped without
 * libonnx-testdata. */
#include <math.h>
#include <sys/stat.h>

#include "mil/onnx_tensor.h"
#include "onnx_ops2_util.h"

#define NODE_DIR "/usr/share/libonnx-testdata/data/node/"

static double at(const mil_onnx_tensor *t, int64_t i) {
  switch (t->dtype) {
  case MIL_DT_FP32: return ((const float *)t->data)[i];
  case MIL_DT_INT64: return (double)((const int64_t *)t->data)[i];
  case MIL_DT_INT32: return ((const int32_t *)t->data)[i];
  default: return NAN;
  }
}

static void check(const char *name) {
  char path[512];
  snprintf(path, sizeof path, NODE_DIR "%s/model.onnx", name);
  mil_diag d;
  mil_model *m;
  mil_interp *ip = open_interp(NULL, 0, path, &m, &d);
  for (int i = 0; i < 3; i++) {
    snprintf(path, sizeof path, NODE_DIR "%s/test_data_set_0/input_%d.pb", name, i);
    mil_onnx_tensor *t = NULL;
    assert_int_equal(mil_onnx_tensor_read(path, NULL, &t, &d), MIL_OK);
    bool f = t->dtype == MIL_DT_FP32;
    void *buf = malloc((size_t)t->numel * 4);
    for (int64_t k = 0; k < t->numel; k++) {
      if (f) ((float *)buf)[k] = (float)at(t, k);
      else ((int32_t *)buf)[k] = (int32_t)at(t, k);
    }
    mil_tensor in = {f ? MIL_DT_FP32 : MIL_DT_INT32, t->rank, t->shape, buf, (size_t)t->numel * 4, t->numel};
    assert_int_equal(mil_interp_set_input(ip, mil_interp_input_name(ip, i), &in, &d), MIL_OK);
    free(buf);
    mil_onnx_tensor_free(t);
  }
  assert_int_equal(mil_interp_run(ip, NULL, &d), MIL_OK);
  snprintf(path, sizeof path, NODE_DIR "%s/test_data_set_0/output_0.pb", name);
  mil_onnx_tensor *want = NULL;
  assert_int_equal(mil_onnx_tensor_read(path, NULL, &want, &d), MIL_OK);
  const mil_tensor *y = mil_interp_output_at(ip, 0);
  assert_int_equal(y->numel, want->numel);
  for (int64_t k = 0; k < want->numel; k++) assert_true(fabs(((const float *)y->data)[k] - at(want, k)) <= 1e-4);
  mil_onnx_tensor_free(want);
  mil_interp_free(ip);
  mil_model_free(m);
  mil_diag_clear(&d);
}

static void test_roi_align_node_tests(void **state) {
  (void)state;
  check("test_roialign_aligned_false");
  check("test_roialign_aligned_true");
}

int main(void) {
  struct stat sb;
  if (stat(NODE_DIR "test_roialign_aligned_true", &sb) != 0) {
    printf("SKIPPED: " NODE_DIR " not found (install Debian's libonnx-testdata)\n");
    return 77;
  }
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_roi_align_node_tests)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
