/* ONNX's training optimizers (ai.onnx.preview.training) Adagrad,
 * Momentum (nesterov) and Adam on two steps' worth of inputs (T = 0 and
 * T > 0) against their formulas computed here in double. A model that
 * imports only the training domain (as ONNX's node tests of these ops do)
 * converts; a node of ai.onnx in such a model is refused, naming the
 * domain, as onnx's checker does. */
#include <math.h>

#include "onnx_ops2_util.h"

enum { NX = 3 };
static const io k_in_rt[2] = {{"R", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 0, {0}}, {"T", ONNX__TENSOR_PROTO__DATA_TYPE__INT64, 0, {0}}};

static io tensor(const char *name) { return (io){name, ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 1, {NX}}; }

static void setup(const char *fn[], const float *fv, int nf, int nout) {
  g_domain = "ai.onnx.preview.training";
  g_nf = nf;
  for (int i = 0; i < nf; i++) g_fnames[i] = fn[i], g_fvals[i] = fv[i];
  g_nout = nout;
}

static void teardown_globals(void) {
  g_domain = NULL;
  g_nf = 0;
  g_nout = 0;
  g_sname = g_sval = NULL;
  g_import_only = NULL;
}

static bool close_to(double a, double b) { return fabs(a - b) <= 1e-5 + 1e-4 * fabs(b); }

static void test_adagrad(void **state) {
  (void)state;
  const char *fn[3] = {"decay_factor", "epsilon", "norm_coefficient"};
  const float fv[3] = {0.1f, 1e-5f, 0.001f};
  setup(fn, fv, 3, 2);
  io ins[5] = {k_in_rt[0], k_in_rt[1], tensor("X"), tensor("G"), tensor("H")};
  io outs[2] = {tensor("X_new"), tensor("H_new")};
  size_t len;
  uint8_t *buf = model("Adagrad", ins, 5, outs, NULL, NULL, NULL, 0, &len);
  for (int32_t t = 0; t <= 3; t += 3) {
    float r = 0.1f, x[NX] = {1, -2, 0.5f}, g[NX] = {-1, 0.25f, 3}, h[NX] = {2, 0.5f, 0}, y[2 * NX];
    run(buf, len, ins, 5, (void *[]){&r, &t, x, g, h}, MIL_DT_FP32, y, NX);
    for (int i = 0; i < NX; i++) {
      double rr = r / (1 + t * (double)fv[0]), gr = fv[2] * (double)x[i] + g[i], h2 = h[i] + gr * gr;
      assert_true(close_to(y[i], x[i] - rr * gr / (sqrt(h2) + fv[1])));
      assert_true(close_to(y[NX + i], h2));
    }
  }
  free(buf);
  teardown_globals();
}

static void test_nesterov_momentum(void **state) {
  (void)state;
  const char *fn[3] = {"alpha", "beta", "norm_coefficient"};
  const float fv[3] = {0.95f, 0.1f, 0.01f};
  setup(fn, fv, 3, 2);
  g_sname = "mode";
  g_sval = "nesterov";
  io ins[5] = {k_in_rt[0], k_in_rt[1], tensor("X"), tensor("G"), tensor("V")};
  io outs[2] = {tensor("X_new"), tensor("V_new")};
  size_t len;
  uint8_t *buf = model("Momentum", ins, 5, outs, NULL, NULL, NULL, 0, &len);
  for (int32_t t = 0; t <= 1; t++) {
    float r = 0.1f, x[NX] = {1.2f, 2.8f, -1}, g[NX] = {-0.94f, -2.5f, 1}, v[NX] = {1.7f, 3.6f, 0}, y[2 * NX];
    run(buf, len, ins, 5, (void *[]){&r, &t, x, g, v}, MIL_DT_FP32, y, NX);
    for (int i = 0; i < NX; i++) {
      double gr = fv[2] * (double)x[i] + g[i], b = t > 0 ? fv[1] : 1, v2 = fv[0] * (double)v[i] + b * gr;
      assert_true(close_to(y[i], x[i] - r * (gr + fv[0] * v2)));
      assert_true(close_to(y[NX + i], v2));
    }
  }
  free(buf);
  teardown_globals();
}

static void test_adam(void **state) {
  (void)state;
  const char *fn[5] = {"alpha", "beta", "epsilon", "norm_coefficient", "norm_coefficient_post"};
  const float fv[5] = {0.95f, 0.1f, 1e-7f, 0.001f, 0.01f};
  setup(fn, fv, 5, 3);
  io ins[6] = {k_in_rt[0], k_in_rt[1], tensor("X"), tensor("G"), tensor("V"), tensor("H")};
  io outs[3] = {tensor("X_new"), tensor("V_new"), tensor("H_new")};
  size_t len;
  uint8_t *buf = model("Adam", ins, 6, outs, NULL, NULL, NULL, 0, &len);
  for (int32_t t = 0; t <= 10; t += 10) {
    float r = 0.1f, x[NX] = {1.2f, 2.8f, -0.5f}, g[NX] = {-0.94f, -2.5f, 0.3f}, v[NX] = {1.7f, 3.6f, 0.1f},
          h[NX] = {0.1f, 0.1f, 2}, y[3 * NX];
    run(buf, len, ins, 6, (void *[]){&r, &t, x, g, v, h}, MIL_DT_FP32, y, NX);
    double a = fv[0], b = fv[1];
    double ra = t > 0 ? r * sqrt(1 - pow(b, t)) / (1 - pow(a, t)) : r;
    for (int i = 0; i < NX; i++) {
      double gr = fv[3] * (double)x[i] + g[i], v2 = a * v[i] + (1 - a) * gr, h2 = b * h[i] + (1 - b) * gr * gr;
      double x2 = (1 - fv[4]) * (x[i] - ra * v2 / (sqrt(h2) + fv[2]));
      assert_true(close_to(y[i], x2));
      assert_true(close_to(y[NX + i], v2));
      assert_true(close_to(y[2 * NX + i], h2));
    }
  }
  free(buf);
  teardown_globals();
}

static void test_training_domain_only(void **state) {
  (void)state;
  const char *fn[1] = {"epsilon"};
  const float fv[1] = {1e-5f};
  setup(fn, fv, 1, 2);
  g_import_only = "ai.onnx.preview.training";
  io ins[5] = {k_in_rt[0], k_in_rt[1], tensor("X"), tensor("G"), tensor("H")};
  io outs[2] = {tensor("X_new"), tensor("H_new")};
  size_t len;
  uint8_t *buf = model("Adagrad", ins, 5, outs, NULL, NULL, NULL, 0, &len);
  float r = 0.5f, x[NX] = {1, -2, 0.5f}, g[NX] = {-1, 0.25f, 3}, h[NX] = {2, 0.5f, 0}, y[2 * NX];
  int32_t t = 0;
  run(buf, len, ins, 5, (void *[]){&r, &t, x, g, h}, MIL_DT_FP32, y, NX);
  for (int i = 0; i < NX; i++) {
    double h2 = h[i] + (double)g[i] * g[i];
    assert_true(close_to(y[i], x[i] - r * g[i] / (sqrt(h2) + fv[0])));
    assert_true(close_to(y[NX + i], h2));
  }
  free(buf);
  teardown_globals();
}

static void test_default_domain_without_import(void **state) {
  (void)state;
  g_import_only = "ai.onnx.preview.training";
  io ins[1] = {tensor("X")};
  io outs[1] = {tensor("Y")};
  size_t len;
  uint8_t *buf = model("Relu", ins, 1, outs, NULL, NULL, NULL, 0, &len);
  mil_diag d;
  mil_diag_init(&d);
  mil_convert_options o;
  memset(&o, 0, sizeof o);
  o.fp32 = true;
  mil_model *m = NULL;
  assert_int_equal(mil_convert_onnx_buffer(buf, len, "only_training.onnx", NULL, &o, &m, &d), MIL_ERR_INVALID);
  assert_null(m);
  const char *e = mil_diag_first_error(&d);
  assert_non_null(strstr(e, "only_training.onnx"));
  assert_non_null(strstr(e, "Relu"));
  assert_non_null(strstr(e, "no opset for domain 'ai.onnx'"));
  mil_diag_clear(&d);
  free(buf);
  teardown_globals();
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_adagrad),
      cmocka_unit_test(test_nesterov_momentum),
      cmocka_unit_test(test_adam),
      cmocka_unit_test(test_training_domain_only),
      cmocka_unit_test(test_default_domain_without_import),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
