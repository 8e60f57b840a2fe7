/* ONNX MatMulInteger / ConvInteger / QLinearMatMul with an inner length
 * beyond what one fp32 dot product holds exactly (K * 255 * 255 >= 2^24,
 * where the importer splits the second operand): the outputs must equal
 * the int32 sums computed here. ONNX's node tests (the conformance
 * runner) only have short ones. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "mil/interp.h"
#include "mil/mil.h"
#include "mil/onnx.h"
#include "onnx.pb-c.h"

typedef struct io {
  const char *name;
  int elem; /* ONNX DataType */
  int rank;
  int64_t dims[4];
} io;

/* A model (opset 13) of one node op_type on inputs ins, one output `out`
 * and int attributes named in attr_names with the values attr_vals. */
static uint8_t *model(const char *op_type, const io *ins, int n_in, const io *out, const char *const *attr_names,
                      const int64_t *const *attr_vals, const int *attr_n, int n_attr, size_t *len) {
  Onnx__ModelProto m = ONNX__MODEL_PROTO__INIT;
  Onnx__OperatorSetIdProto os = ONNX__OPERATOR_SET_ID_PROTO__INIT, *osp = &os;
  os.domain = "";
  os.has_version = true;
  os.version = 13;
  m.has_ir_version = true;
  m.ir_version = 7;
  m.n_opset_import = 1;
  m.opset_import = &osp;
  Onnx__GraphProto g = ONNX__GRAPH_PROTO__INIT;
  m.graph = &g;
  Onnx__NodeProto nd = ONNX__NODE_PROTO__INIT, *ndp = &nd;
  char *in_names[9], *outs[1] = {(char *)out->name};
  for (int i = 0; i < n_in; i++) in_names[i] = (char *)ins[i].name;
  nd.op_type = (char *)op_type;
  nd.n_input = (size_t)n_in;
  nd.input = in_names;
  nd.n_output = 1;
  nd.output = outs;
  Onnx__AttributeProto at[4], *atp[4];
  for (int i = 0; i < n_attr; i++) {
    onnx__attribute_proto__init(&at[i]);
    at[i].name = (char *)attr_names[i];
    at[i].has_type = true;
    at[i].type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS;
    at[i].n_ints = (size_t)attr_n[i];
    at[i].ints = (int64_t *)attr_vals[i];
    atp[i] = &at[i];
  }
  nd.n_attribute = (size_t)n_attr;
  nd.attribute = atp;
  g.n_node = 1;
  g.node = &ndp;
  Onnx__TensorShapeProto__Dimension dm[10][4], *dmp[10][4];
  Onnx__TensorShapeProto sh[10];
  Onnx__TypeProto__Tensor tt[10];
  Onnx__TypeProto tp[10];
  Onnx__ValueInfoProto vi[10], *vip[10];
  for (int i = 0; i <= n_in; i++) {
    const io *v = i < n_in ? &ins[i] : out;
    for (int k = 0; k < v->rank; k++) {
      onnx__tensor_shape_proto__dimension__init(&dm[i][k]);
      dm[i][k].value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
      dm[i][k].dim_value = v->dims[k];
      dmp[i][k] = &dm[i][k];
    }
    onnx__tensor_shape_proto__init(&sh[i]);
    sh[i].n_dim = (size_t)v->rank;
    sh[i].dim = dmp[i];
    onnx__type_proto__tensor__init(&tt[i]);
    tt[i].has_elem_type = true;
    tt[i].elem_type = v->elem;
    tt[i].shape = &sh[i];
    onnx__type_proto__init(&tp[i]);
    tp[i].value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
    tp[i].tensor_type = &tt[i];
    onnx__value_info_proto__init(&vi[i]);
    vi[i].name = (char *)v->name;
    vi[i].type = &tp[i];
    vip[i] = &vi[i];
  }
  g.n_input = (size_t)n_in;
  g.input = vip;
  g.n_output = 1;
  g.output = &vip[n_in];
  *len = onnx__model_proto__get_packed_size(&m);
  uint8_t *buf = malloc(*len);
  onnx__model_proto__pack(&m, buf);
  return buf;
}

static int64_t numel(const io *v) {
  int64_t n = 1;
  for (int k = 0; k < v->rank; k++) n *= v->dims[k];
  return n;
}

/* Imports and runs the model on int32 data[i] (the importer's dtype for
 * 8-bit ints); copies output 0 into out (n elements). */
static void run(const uint8_t *buf, size_t len, const io *ins, int n_in, int32_t *const *data, int32_t *out, int64_t n) {
  mil_diag d;
  mil_diag_init(&d);
  mil_onnx_options o;
  memset(&o, 0, sizeof o);
  o.fp32 = true;
  mil_model *m = NULL;
  mil_status st = mil_onnx_import_buffer(buf, len, "quant_int.onnx", NULL, &o, &m, &d);
  if (st != MIL_OK) printf("  %s\n", mil_diag_first_error(&d));
  assert_int_equal(st, MIL_OK);
  mil_interp *ip = NULL;
  assert_int_equal(mil_interp_new(mil_model_program(m), NULL, &ip, &d), MIL_OK);
  for (int i = 0; i < n_in; i++) {
    mil_tensor t = {MIL_DT_INT32, ins[i].rank, ins[i].dims, data[i], (size_t)numel(&ins[i]) * 4, numel(&ins[i])};
    assert_int_equal(mil_interp_set_input(ip, mil_interp_input_name(ip, i), &t, &d), MIL_OK);
  }
  st = mil_interp_run(ip, NULL, &d);
  if (st != MIL_OK) printf("  %s\n", mil_diag_first_error(&d));
  assert_int_equal(st, MIL_OK);
  const mil_tensor *y = mil_interp_output_at(ip, 0);
  assert_int_equal(y->numel, n);
  assert_int_equal(y->dtype, MIL_DT_INT32);
  memcpy(out, y->data, (size_t)n * sizeof *out);
  mil_interp_free(ip);
  mil_model_free(m);
  mil_diag_clear(&d);
}

static uint64_t g_rng = 0x9E3779B97F4A7C15ULL;
static int32_t rnd(int32_t lo, int32_t hi) {
  g_rng ^= g_rng << 13;
  g_rng ^= g_rng >> 7;
  g_rng ^= g_rng << 17;
  return lo + (int32_t)((g_rng >> 33) % (uint64_t)(hi - lo + 1));
}

enum { U8 = ONNX__TENSOR_PROTO__DATA_TYPE__UINT8, I8 = ONNX__TENSOR_PROTO__DATA_TYPE__INT8,
       I32 = ONNX__TENSOR_PROTO__DATA_TYPE__INT32 };

/* MatMulInteger [3, 400] x [400, 2], extreme values (sums near 400 * 255^2). */
static void test_matmul_integer_long(void **state) {
  (void)state;
  enum { M = 3, KK = 400, N = 2 };
  io ins[4] = {{"A", U8, 2, {M, KK}}, {"B", U8, 2, {KK, N}}, {"a_zero_point", U8, 0, {0}}, {"b_zero_point", U8, 0, {0}}};
  io out = {"Y", I32, 2, {M, N}};
  size_t len;
  uint8_t *buf = model("MatMulInteger", ins, 4, &out, NULL, NULL, NULL, 0, &len);
  static int32_t a[M * KK], b[KK * N];
  int32_t azp = 0, bzp = 255, y[M * N];
  for (int i = 0; i < M * KK; i++) a[i] = i % 7 == 0 ? rnd(0, 255) : 255;
  for (int i = 0; i < KK * N; i++) b[i] = i % 5 == 0 ? rnd(0, 255) : 0;
  run(buf, len, ins, 4, (int32_t *[]){a, b, &azp, &bzp}, y, M * N);
  for (int i = 0; i < M; i++)
    for (int j = 0; j < N; j++) {
      int64_t s = 0;
      for (int k = 0; k < KK; k++) s += (int64_t)(a[i * KK + k] - azp) * (b[k * N + j] - bzp);
      assert_int_equal(y[i * N + j], s);
    }
  free(buf);
}

/* ConvInteger x [1, 64, 4, 4] (uint8), w [2, 64, 3, 3] (int8, K = 576), pads 1. */
static void test_conv_integer_long(void **state) {
  (void)state;
  enum { C = 64, H = 4, W = 4, M = 2 };
  io ins[3] = {{"x", U8, 4, {1, C, H, W}}, {"w", I8, 4, {M, C, 3, 3}}, {"x_zero_point", U8, 0, {0}}};
  io out = {"y", I32, 4, {1, M, H, W}};
  const char *names[1] = {"pads"};
  const int64_t pads[4] = {1, 1, 1, 1};
  const int64_t *vals[1] = {pads};
  int cnt[1] = {4};
  size_t len;
  uint8_t *buf = model("ConvInteger", ins, 3, &out, names, vals, cnt, 1, &len);
  static int32_t x[C * H * W], w[M * C * 9];
  int32_t xzp = 255, y[M * H * W];
  for (int i = 0; i < C * H * W; i++) x[i] = i % 3 ? 0 : rnd(0, 255);
  for (int i = 0; i < M * C * 9; i++) w[i] = i % 4 ? -128 : rnd(-128, 127);
  run(buf, len, ins, 3, (int32_t *[]){x, w, &xzp}, y, M * H * W);
  for (int m = 0; m < M; m++)
    for (int i = 0; i < H; i++)
      for (int j = 0; j < W; j++) {
        int64_t s = 0;
        for (int ch = 0; ch < C; ch++)
          for (int ki = 0; ki < 3; ki++)
            for (int kj = 0; kj < 3; kj++) {
              int yy = i + ki - 1, xx = j + kj - 1;
              if (yy < 0 || yy >= H || xx < 0 || xx >= W) continue;
              s += (int64_t)(x[(ch * H + yy) * W + xx] - xzp) * w[((m * C + ch) * 3 + ki) * 3 + kj];
            }
        assert_int_equal(y[(m * H + i) * W + j], s);
      }
  free(buf);
}

/* QLinearMatMul [2, 300] x [300, 2] to int8: round half to even of
 * acc * scale, plus the zero point, saturated to [-128, 127]. */
static void test_qlinear_matmul_int8(void **state) {
  (void)state;
  enum { M = 2, KK = 300, N = 2 };
  io ins[8] = {{"a", U8, 2, {M, KK}},          {"a_scale", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 0, {0}},
               {"a_zero_point", U8, 0, {0}},   {"b", U8, 2, {KK, N}},
               {"b_scale", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 0, {0}},
               {"b_zero_point", U8, 0, {0}},   {"y_scale", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 0, {0}},
               {"y_zero_point", I8, 0, {0}}};
  io out = {"y", I8, 2, {M, N}};
  size_t len;
  uint8_t *buf = model("QLinearMatMul", ins, 8, &out, NULL, NULL, NULL, 0, &len);
  static int32_t a[M * KK], b[KK * N];
  for (int i = 0; i < M * KK; i++) a[i] = rnd(0, 255);
  for (int i = 0; i < KK * N; i++) b[i] = rnd(0, 255);
  int32_t azp = 128, bzp = 128, yzp = -3, y[M * N];
  /* scales as fp32 bit patterns through the int32 inputs would be wrong:
   * feed them as floats through a separate run */
  mil_diag d;
  mil_diag_init(&d);
  mil_onnx_options o;
  memset(&o, 0, sizeof o);
  o.fp32 = true;
  mil_model *m = NULL;
  assert_int_equal(mil_onnx_import_buffer(buf, len, "qlinear.onnx", NULL, &o, &m, &d), MIL_OK);
  mil_interp *ip = NULL;
  assert_int_equal(mil_interp_new(mil_model_program(m), NULL, &ip, &d), MIL_OK);
  float as = 0.5f, bs = 0.25f, ys = 64.0f;
  void *data[8] = {a, &as, &azp, b, &bs, &bzp, &ys, &yzp};
  for (int i = 0; i < 8; i++) {
    bool f = ins[i].elem == ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT;
    mil_tensor t = {f ? MIL_DT_FP32 : MIL_DT_INT32, ins[i].rank, ins[i].dims, data[i], (size_t)numel(&ins[i]) * 4,
                    numel(&ins[i])};
    assert_int_equal(mil_interp_set_input(ip, mil_interp_input_name(ip, i), &t, &d), MIL_OK);
  }
  assert_int_equal(mil_interp_run(ip, NULL, &d), MIL_OK);
  const mil_tensor *yt = mil_interp_output_at(ip, 0);
  assert_int_equal(yt->numel, M * N);
  memcpy(y, yt->data, sizeof y);
  for (int i = 0; i < M; i++)
    for (int j = 0; j < N; j++) {
      int64_t s = 0;
      for (int k = 0; k < KK; k++) s += (int64_t)(a[i * KK + k] - azp) * (b[k * N + j] - bzp);
      /* scale 1/512: exact in binary, so the rounding is that of s / 512 */
      double q = (double)s / 512.0, r = q - (double)(int64_t)q;
      int64_t rq = (int64_t)q;
      if (r > 0.5 || (r == 0.5 && (rq & 1))) rq++;
      else if (r < -0.5 || (r == -0.5 && (rq & 1))) rq--;
      rq += yzp;
      if (rq < -128) rq = -128;
      if (rq > 127) rq = 127;
      assert_int_equal(y[i * N + j], rq);
    }
  mil_interp_free(ip);
  mil_model_free(m);
  mil_diag_clear(&d);
  free(buf);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_matmul_integer_long),
      cmocka_unit_test(test_conv_integer_long),
      cmocka_unit_test(test_qlinear_matmul_int8),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
