/* The ONNX importer on models built or edited here:
 *  - the recurrent layers and ConvTranspose of ONNX's node tests with
 *    their weights made initializers (MIL's lstm / gru / rnn /
 *    conv_transpose take const weights only) reproduce ONNX's outputs;
 *  - errors name the node, op_type, domain, opset and the reason;
 *  - ONNX names become MIL identifiers (coremltools' sanitizer);
 *  - --input-shape fixes a dim_param, which otherwise stays symbolic;
 *  - the converter table lists the required ops.
 * Tests needing libonnx-testdata are skipped (not failed) without it. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "mil/interp.h"
#include "mil/mil.h"
#include "mil/onnx.h"
#include "mil/onnx_tensor.h"
#include "onnx.pb-c.h"

#define NODE_DIR "/usr/share/libonnx-testdata/data/node/"

static uint8_t *slurp(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  uint8_t *b = malloc((size_t)n + 1);
  if (b && fread(b, 1, (size_t)n, f) != (size_t)n) {
    free(b);
    b = NULL;
  }
  fclose(f);
  *len = (size_t)n;
  return b;
}

static double elem(const mil_onnx_tensor *t, int64_t i) {
  switch (t->dtype) {
  case MIL_DT_FP32: return ((const float *)t->data)[i];
  case MIL_DT_INT32: return ((const int32_t *)t->data)[i];
  default: return NAN;
  }
}

/* Converts test `name` with the graph inputs whose index has its bit set
 * in `promote` turned into initializers (from input_<i>.pb), runs it on
 * the other inputs and returns the largest error against output_0.pb
 * (-1 when something failed). */
static double run_promoted(const char *name, unsigned promote) {
  char path[1024];
  snprintf(path, sizeof path, NODE_DIR "%s/model.onnx", name);
  size_t len;
  uint8_t *buf = slurp(path, &len);
  if (!buf) return -1;
  Onnx__ModelProto *m = onnx__model_proto__unpack(NULL, len, buf);
  free(buf);
  assert_non_null(m);
  Onnx__GraphProto *g = m->graph;
  /* initializers from the test's input files (their bytes as raw_data) */
  Onnx__TensorProto **inits = calloc(g->n_input, sizeof *inits);
  size_t n_init = 0;
  Onnx__TensorProto **extra = calloc(g->n_input, sizeof *extra);
  for (size_t i = 0; i < g->n_input; i++) {
    if (!(promote & (1u << i))) continue;
    snprintf(path, sizeof path, NODE_DIR "%s/test_data_set_0/input_%zu.pb", name, i);
    uint8_t *tb = slurp(path, &len);
    assert_non_null(tb);
    Onnx__TensorProto *t = onnx__tensor_proto__unpack(NULL, len, tb);
    free(tb);
    assert_non_null(t);
    free(t->name);
    t->name = strdup(g->input[i]->name);
    inits[n_init++] = t;
    extra[i] = t;
  }
  Onnx__TensorProto **old = g->initializer;
  size_t old_n = g->n_initializer;
  g->initializer = inits;
  g->n_initializer = n_init;
  size_t plen = onnx__model_proto__get_packed_size(m);
  uint8_t *packed = malloc(plen);
  onnx__model_proto__pack(m, packed);
  g->initializer = old;
  g->n_initializer = old_n;
  mil_diag d;
  mil_diag_init(&d);
  mil_onnx_options o;
  memset(&o, 0, sizeof o);
  o.fp32 = true;
  mil_model *mm = NULL;
  mil_status st = mil_onnx_import_buffer(packed, plen, name, NULL, &o, &mm, &d);
  free(packed);
  double worst = -1;
  mil_interp *ip = NULL;
  if (st != MIL_OK) printf("  %s\n", mil_diag_first_error(&d));
  if (st != MIL_OK || mil_interp_new(mil_model_program(mm), NULL, &ip, &d) != MIL_OK) goto out;
  for (size_t i = 0, k = 0; i < g->n_input; i++) {
    if (extra[i]) continue;
    snprintf(path, sizeof path, NODE_DIR "%s/test_data_set_0/input_%zu.pb", name, i);
    mil_onnx_tensor *t = NULL;
    assert_int_equal(mil_onnx_tensor_read(path, NULL, &t, &d), MIL_OK);
    mil_tensor in = {t->dtype, t->rank, t->shape, t->data, t->nbytes, t->numel};
    assert_int_equal(mil_interp_set_input(ip, mil_interp_input_name(ip, (int32_t)k++), &in, &d), MIL_OK);
    mil_onnx_tensor_free(t);
  }
  if (mil_interp_run(ip, NULL, &d) != MIL_OK) goto out;
  snprintf(path, sizeof path, NODE_DIR "%s/test_data_set_0/output_0.pb", name);
  mil_onnx_tensor *y = NULL;
  assert_int_equal(mil_onnx_tensor_read(path, NULL, &y, &d), MIL_OK);
  const mil_tensor *o0 = mil_interp_output_at(ip, 0);
  assert_int_equal(o0->numel, y->numel);
  worst = 0;
  for (int64_t i = 0; i < y->numel; i++) {
    double e = fabs(((const float *)o0->data)[i] - elem(y, i));
    if (!(e <= worst)) worst = e;
  }
  mil_onnx_tensor_free(y);
out:
  if (d.n_errors && worst < 0) printf("  %s\n", mil_diag_first_error(&d));
  mil_interp_free(ip);
  mil_model_free(mm);
  mil_diag_clear(&d);
  for (size_t i = 0; i < n_init; i++) onnx__tensor_proto__free_unpacked(inits[i], NULL);
  free(inits);
  free(extra);
  onnx__model_proto__free_unpacked(m, NULL);
  return worst;
}

static void test_recurrent_const_weights(void **state) {
  (void)state;
  if (access(NODE_DIR "test_lstm_defaults", R_OK) != 0) skip();
  /* inputs 1 (W), 2 (R), 3 (B) become initializers */
  static const struct {
    const char *name;
    unsigned promote;
  } cases[] = {
      {"test_lstm_defaults", 0x6},      {"test_lstm_with_initial_bias", 0xe}, {"test_lstm_with_peepholes", 0x86},
      {"test_gru_defaults", 0x6},       {"test_gru_with_initial_bias", 0xe},  {"test_simple_rnn_defaults", 0x6},
      {"test_simple_rnn_with_initial_bias", 0xe},
      /* ConvTranspose with its weight (input 1) as an initializer */
      {"test_convtranspose", 0x2},          {"test_convtranspose_1d", 0x2},      {"test_convtranspose_3d", 0x2},
      {"test_convtranspose_autopad_same", 0x2}, {"test_convtranspose_dilations", 0x2},
      {"test_convtranspose_kernel_shape", 0x2}, {"test_convtranspose_output_shape", 0x2},
      {"test_convtranspose_pad", 0x2},      {"test_convtranspose_pads", 0x2},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    double e = run_promoted(cases[i].name, cases[i].promote);
    printf("%-36s const weights: max |a - b| = %.3g\n", cases[i].name, e);
    assert_true(e >= 0 && e <= 1e-5);
  }
}

/* A one-node model: op_type on x (float [2, 3], or `dim` for dim 0 when
 * non-NULL) -> y. */
static uint8_t *one_node(const char *op_type, const char *in_name, const char *out_name, const char *dim,
                         int64_t opset, size_t *len) {
  Onnx__ModelProto m = ONNX__MODEL_PROTO__INIT;
  Onnx__OperatorSetIdProto os = ONNX__OPERATOR_SET_ID_PROTO__INIT, *osp = &os;
  os.domain = "";
  os.has_version = true;
  os.version = opset;
  m.has_ir_version = true;
  m.ir_version = 8;
  m.n_opset_import = 1;
  m.opset_import = &osp;
  Onnx__GraphProto g = ONNX__GRAPH_PROTO__INIT;
  m.graph = &g;
  Onnx__NodeProto nd = ONNX__NODE_PROTO__INIT, *ndp = &nd;
  char *ins[1] = {(char *)in_name}, *outs[1] = {(char *)out_name};
  nd.op_type = (char *)op_type;
  nd.name = "the_node";
  nd.n_input = 1;
  nd.input = ins;
  nd.n_output = 1;
  nd.output = outs;
  g.n_node = 1;
  g.node = &ndp;
  Onnx__TensorShapeProto__Dimension d0 = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__INIT,
                                    d1 = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__INIT;
  Onnx__TensorShapeProto__Dimension *dims[2] = {&d0, &d1};
  if (dim) {
    d0.value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM;
    d0.dim_param = (char *)dim;
  } else {
    d0.value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
    d0.dim_value = 2;
  }
  d1.value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
  d1.dim_value = 3;
  Onnx__TensorShapeProto sh = ONNX__TENSOR_SHAPE_PROTO__INIT;
  sh.n_dim = 2;
  sh.dim = dims;
  Onnx__TypeProto__Tensor tt = ONNX__TYPE_PROTO__TENSOR__INIT;
  tt.has_elem_type = true;
  tt.elem_type = ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT;
  tt.shape = &sh;
  Onnx__TypeProto tp = ONNX__TYPE_PROTO__INIT;
  tp.value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
  tp.tensor_type = &tt;
  Onnx__ValueInfoProto vi = ONNX__VALUE_INFO_PROTO__INIT, vo = ONNX__VALUE_INFO_PROTO__INIT;
  Onnx__ValueInfoProto *vip = &vi, *vop = &vo;
  vi.name = (char *)in_name;
  vi.type = &tp;
  vo.name = (char *)out_name;
  vo.type = &tp;
  g.n_input = 1;
  g.input = &vip;
  g.n_output = 1;
  g.output = &vop;
  *len = onnx__model_proto__get_packed_size(&m);
  uint8_t *buf = malloc(*len);
  onnx__model_proto__pack(&m, buf);
  return buf;
}

static mil_status import(const uint8_t *buf, size_t len, const mil_onnx_options *o, mil_model **m, mil_diag *d) {
  return mil_onnx_import_buffer(buf, len, "t.onnx", NULL, o, m, d);
}

static void test_errors_name_the_node(void **state) {
  (void)state;
  size_t len;
  uint8_t *buf = one_node("NoSuchOp", "x", "y", NULL, 13, &len);
  mil_diag d;
  mil_diag_init(&d);
  mil_model *m = NULL;
  assert_int_equal(import(buf, len, NULL, &m, &d), MIL_ERR_UNSUPPORTED);
  assert_null(m);
  const char *e = mil_diag_first_error(&d);
  assert_non_null(e);
  assert_non_null(strstr(e, "t.onnx: node 'the_node' (NoSuchOp, domain ai.onnx, opset 13)"));
  assert_non_null(strstr(e, "no converter"));
  mil_diag_clear(&d);
  free(buf);
  /* an op version libmil does not know yet: Upsample ended at opset 9 */
  buf = one_node("Upsample", "x", "y", NULL, 10, &len);
  assert_int_equal(import(buf, len, NULL, &m, &d), MIL_ERR_UNSUPPORTED);
  assert_non_null(strstr(mil_diag_first_error(&d), "only for opsets 7..9"));
  mil_diag_clear(&d);
  free(buf);
  /* not a ModelProto */
  assert_int_equal(import((const uint8_t *)"\xff\xff\xff", 3, NULL, &m, &d), MIL_ERR_FORMAT);
  assert_non_null(strstr(mil_diag_first_error(&d), "not a valid ONNX ModelProto"));
  mil_diag_clear(&d);
}

static void test_names_and_shapes(void **state) {
  (void)state;
  size_t len;
  uint8_t *buf = one_node("Relu", "input:0", "0/out.y", "batch", 13, &len);
  mil_diag d;
  mil_diag_init(&d);
  mil_model *m = NULL;
  mil_onnx_options o;
  memset(&o, 0, sizeof o);
  o.no_pipeline = true;
  assert_int_equal(import(buf, len, &o, &m, &d), MIL_OK);
  mil_function *f = mil_program_find_function(mil_model_program(m), "main");
  assert_non_null(f);
  assert_string_equal(f->inputs[0]->name, "input_0");
  mil_block *b = mil_function_body(f);
  assert_string_equal(b->outputs[0].var->name, "var_0_out_y");
  /* dim_param stays symbolic */
  assert_int_equal(f->inputs[0]->type->dims[0].size, -1);
  assert_string_equal(f->inputs[0]->type->dims[0].sym, "batch");
  mil_model_free(m);
  /* --input-shape fixes it */
  int64_t dims[2] = {4, 3};
  mil_onnx_input_shape is = {"input:0", 2, dims};
  o.n_input_shapes = 1;
  o.input_shapes = &is;
  assert_int_equal(import(buf, len, &o, &m, &d), MIL_OK);
  f = mil_program_find_function(mil_model_program(m), "main");
  assert_int_equal(f->inputs[0]->type->dims[0].size, 4);
  mil_model_free(m);
  /* a shape for an input that does not exist */
  is.name = "nope";
  assert_int_equal(import(buf, len, &o, &m, &d), MIL_ERR_INVALID);
  assert_non_null(strstr(mil_diag_first_error(&d), "'nope'"));
  mil_diag_clear(&d);
  free(buf);
}

static void test_op_table(void **state) {
  (void)state;
  static const char *const required[] = {
      "Abs", "Add", "ArgMax", "AveragePool", "BatchNormalization", "Cast", "Clip", "Concat", "Conv", "ConvTranspose",
      "Gather", "Gemm", "GRU", "If", "LayerNormalization", "Loop", "LSTM", "MatMul", "MaxPool", "Reshape", "Resize",
      "Slice", "Softmax", "Split", "Transpose", "Trilu", "Unsqueeze", "Where", NULL};
  for (const char *const *r = required; *r; r++) {
    const mil_onnx_op_info *i = mil_onnx_op_find(*r, "", 17);
    if (!i) printf("missing %s\n", *r);
    assert_non_null(i);
    assert_true(i->since <= 17 && i->until >= 17);
  }
  assert_null(mil_onnx_op_find("NoSuchOp", "", 17));
  /* sorted, each with a family */
  for (size_t i = 1; i < mil_onnx_op_count(); i++) {
    const mil_onnx_op_info *a = mil_onnx_op_at(i - 1), *b = mil_onnx_op_at(i);
    assert_true(strcmp(a->domain, b->domain) < 0 || (strcmp(a->domain, b->domain) == 0 && strcmp(a->op_type, b->op_type) <= 0));
    assert_non_null(b->family);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_recurrent_const_weights),
      cmocka_unit_test(test_errors_name_the_node),
      cmocka_unit_test(test_names_and_shapes),
      cmocka_unit_test(test_op_table),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
