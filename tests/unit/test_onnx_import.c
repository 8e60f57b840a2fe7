/* The ONNX importer on models built or edited here:
 *  - the recurrent layers and ConvTranspose of ONNX's node tests with
 *    their weights made initializers (MIL's lstm / gru / rnn /
 *    conv_transpose take const weights only) reproduce ONNX's outputs;
 *  - errors name the node, op_type, domain, opset and the reason;
 *  - ONNX names become MIL identifiers (coremltools' sanitizer);
 *  - --input-shape fixes a dim_param, which otherwise stays symbolic
 *    (through the pipeline, and the model runs at any size);
 *  - the converter table lists the required ops;
 *  - Attention (decomposed, and scaled_dot_product_attention for iOS18)
 *    and RotaryEmbedding reproduce their formulas computed here.
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
#include "mil/convert.h"
#include "mil/onnx.h"
#include "mil/onnx_tensor.h"
#include "mil/ops.h"
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
  mil_convert_options o;
  memset(&o, 0, sizeof o);
  o.fp32 = true;
  mil_model *mm = NULL;
  mil_status st = mil_convert_onnx_buffer(packed, plen, name, NULL, &o, &mm, &d);
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

/* ---------- models built here: one node on float inputs ---------- */

typedef struct mini_in {
  const char *name;
  int rank;
  int64_t dims[4];
} mini_in;

typedef struct mini_attr {
  const char *name;
  int64_t i;
} mini_attr;

/* Where a model differs from the defaults (opset 23, node "n", output
 * "y", every dim a value). */
typedef struct mini_opts {
  int64_t opset;
  const char *node_name, *out_name;
  const char *dim_param; /* when set: dim 0 of input 0 is this dim_param */
} mini_opts;

/* A model of one node op_type with float inputs `ins`, int attributes
 * `attrs` and one float output of unknown shape. */
static uint8_t *mini_model_opts(const char *op_type, const mini_in *ins, int n_in, const mini_attr *attrs, int n_attr,
                                const mini_opts *mo, size_t *len) {
  Onnx__ModelProto m = ONNX__MODEL_PROTO__INIT;
  Onnx__OperatorSetIdProto os = ONNX__OPERATOR_SET_ID_PROTO__INIT, *osp = &os;
  os.domain = "";
  os.has_version = true;
  os.version = mo && mo->opset ? mo->opset : 23;
  m.has_ir_version = true;
  m.ir_version = 10;
  m.n_opset_import = 1;
  m.opset_import = &osp;
  Onnx__GraphProto g = ONNX__GRAPH_PROTO__INIT;
  m.graph = &g;
  Onnx__NodeProto nd = ONNX__NODE_PROTO__INIT, *ndp = &nd;
  char *in_names[8], *outs[1] = {(char *)(mo && mo->out_name ? mo->out_name : "y")};
  for (int i = 0; i < n_in; i++) in_names[i] = (char *)ins[i].name;
  nd.op_type = (char *)op_type;
  nd.name = (char *)(mo && mo->node_name ? mo->node_name : "n");
  nd.n_input = (size_t)n_in;
  nd.input = in_names;
  nd.n_output = 1;
  nd.output = outs;
  Onnx__AttributeProto at[8], *atp[8];
  for (int i = 0; i < n_attr; i++) {
    onnx__attribute_proto__init(&at[i]);
    at[i].name = (char *)attrs[i].name;
    at[i].has_type = true;
    at[i].type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT;
    at[i].has_i = true;
    at[i].i = attrs[i].i;
    atp[i] = &at[i];
  }
  nd.n_attribute = (size_t)n_attr;
  nd.attribute = atp;
  g.n_node = 1;
  g.node = &ndp;
  Onnx__TensorShapeProto__Dimension dm[8][4], *dmp[8][4];
  Onnx__TensorShapeProto sh[8];
  Onnx__TypeProto__Tensor tt[8];
  Onnx__TypeProto tp[8];
  Onnx__ValueInfoProto vi[9], *vip[8], *vop;
  for (int i = 0; i < n_in; i++) {
    for (int k = 0; k < ins[i].rank; k++) {
      onnx__tensor_shape_proto__dimension__init(&dm[i][k]);
      if (i == 0 && k == 0 && mo && mo->dim_param) {
        dm[i][k].value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM;
        dm[i][k].dim_param = (char *)mo->dim_param;
      } else {
        dm[i][k].value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
        dm[i][k].dim_value = ins[i].dims[k];
      }
      dmp[i][k] = &dm[i][k];
    }
    onnx__tensor_shape_proto__init(&sh[i]);
    sh[i].n_dim = (size_t)ins[i].rank;
    sh[i].dim = dmp[i];
    onnx__type_proto__tensor__init(&tt[i]);
    tt[i].has_elem_type = true;
    tt[i].elem_type = ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT;
    tt[i].shape = &sh[i];
    onnx__type_proto__init(&tp[i]);
    tp[i].value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
    tp[i].tensor_type = &tt[i];
    onnx__value_info_proto__init(&vi[i]);
    vi[i].name = (char *)ins[i].name;
    vi[i].type = &tp[i];
    vip[i] = &vi[i];
  }
  /* the output: a float tensor of unknown shape */
  Onnx__TypeProto__Tensor ot = ONNX__TYPE_PROTO__TENSOR__INIT;
  ot.has_elem_type = true;
  ot.elem_type = ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT;
  Onnx__TypeProto otp = ONNX__TYPE_PROTO__INIT;
  otp.value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
  otp.tensor_type = &ot;
  onnx__value_info_proto__init(&vi[8]);
  vi[8].name = outs[0];
  vi[8].type = &otp;
  vop = &vi[8];
  g.n_input = (size_t)n_in;
  g.input = vip;
  g.n_output = 1;
  g.output = &vop;
  *len = onnx__model_proto__get_packed_size(&m);
  uint8_t *buf = malloc(*len);
  onnx__model_proto__pack(&m, buf);
  return buf;
}

static uint8_t *mini_model(const char *op_type, const mini_in *ins, int n_in, const mini_attr *attrs, int n_attr,
                           size_t *len) {
  return mini_model_opts(op_type, ins, n_in, attrs, n_attr, NULL, len);
}

/* A one-node model: op_type on in_name (float [2, 3], or [dim, 3] for a
 * dim_param) -> out_name, node "the_node". */
static uint8_t *one_node(const char *op_type, const char *in_name, const char *out_name, const char *dim,
                         int64_t opset, size_t *len) {
  mini_in in = {in_name, 2, {2, 3}};
  mini_opts mo = {opset, "the_node", out_name, dim};
  return mini_model_opts(op_type, &in, 1, NULL, 0, &mo, len);
}

static mil_status import(const uint8_t *buf, size_t len, const mil_convert_options *o, mil_model **m, mil_diag *d) {
  return mil_convert_onnx_buffer(buf, len, "t.onnx", NULL, o, m, d);
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
  mil_convert_options o;
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
  /* ... through the pipeline, and runs at any size */
  o.no_pipeline = false;
  o.fp32 = true;
  assert_int_equal(import(buf, len, &o, &m, &d), MIL_OK);
  mil_interp *ip = NULL;
  assert_int_equal(mil_interp_new(mil_model_program(m), NULL, &ip, &d), MIL_OK);
  float xs[15], *ys;
  for (int i = 0; i < 15; i++) xs[i] = (float)i - 7;
  mil_tensor in = {MIL_DT_FP32, 2, (int64_t[]){5, 3}, xs, sizeof xs, 15};
  assert_int_equal(mil_interp_set_input(ip, "input_0", &in, &d), MIL_OK);
  assert_int_equal(mil_interp_run(ip, NULL, &d), MIL_OK);
  const mil_tensor *y = mil_interp_output_at(ip, 0);
  assert_int_equal(y->numel, 15);
  ys = (float *)y->data;
  for (int i = 0; i < 15; i++) assert_true(ys[i] == (xs[i] > 0 ? xs[i] : 0));
  mil_interp_free(ip);
  mil_model_free(m);
  o.no_pipeline = true;
  o.fp32 = false;
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

static uint64_t g_rng = 88172645463325252ULL;
static float frand(void) {
  g_rng ^= g_rng << 13;
  g_rng ^= g_rng >> 7;
  g_rng ^= g_rng << 17;
  return (float)((g_rng >> 40) / (double)(1 << 24)) * 2 - 1;
}

/* Imports buf for `target`, runs it on data[i] for input i and returns
 * output 0 (copied into out, n elements). */
static void run_mini(const uint8_t *buf, size_t len, int target, const mini_in *ins, int n_in, float *const *data,
                     float *out, int64_t n) {
  mil_diag d;
  mil_diag_init(&d);
  mil_convert_options o;
  memset(&o, 0, sizeof o);
  o.fp32 = true;
  o.target = target;
  mil_model *m = NULL;
  mil_status st = mil_convert_onnx_buffer(buf, len, "mini.onnx", NULL, &o, &m, &d);
  if (st != MIL_OK) printf("  %s\n", mil_diag_first_error(&d));
  assert_int_equal(st, MIL_OK);
  mil_interp *ip = NULL;
  assert_int_equal(mil_interp_new(mil_model_program(m), NULL, &ip, &d), MIL_OK);
  for (int i = 0; i < n_in; i++) {
    int64_t numel = 1;
    for (int k = 0; k < ins[i].rank; k++) numel *= ins[i].dims[k];
    mil_tensor t = {MIL_DT_FP32, ins[i].rank, ins[i].dims, data[i], (size_t)numel * 4, numel};
    assert_int_equal(mil_interp_set_input(ip, mil_interp_input_name(ip, i), &t, &d), MIL_OK);
  }
  st = mil_interp_run(ip, NULL, &d);
  if (st != MIL_OK) printf("  %s\n", mil_diag_first_error(&d));
  assert_int_equal(st, MIL_OK);
  const mil_tensor *y = mil_interp_output_at(ip, 0);
  assert_int_equal(y->numel, n);
  memcpy(out, y->data, (size_t)n * sizeof *out);
  mil_interp_free(ip);
  mil_model_free(m);
  mil_diag_clear(&d);
}

/* Attention (B=1, heads 2, S=3, head 4), causal and not, decomposed
 * (iOS15) and as scaled_dot_product_attention (iOS18), against the
 * formula softmax(Q K^T / sqrt(4) + causal) V computed here. */
static void test_attention(void **state) {
  (void)state;
  enum { N = 2, S = 3, E = 4 };
  mini_in ins[3] = {{"q", 4, {1, N, S, E}}, {"k", 4, {1, N, S, E}}, {"v", 4, {1, N, S, E}}};
  float q[N * S * E], k[N * S * E], v[N * S * E], want[N * S * E], got[N * S * E];
  for (int i = 0; i < N * S * E; i++) q[i] = frand(), k[i] = frand(), v[i] = frand();
  float *data[3] = {q, k, v};
  for (int causal = 0; causal <= 1; causal++) {
    for (int h = 0; h < N; h++)
      for (int i = 0; i < S; i++) {
        double p[S], mx = -1e30, sum = 0;
        for (int j = 0; j < S; j++) {
          double acc = 0;
          for (int e = 0; e < E; e++) acc += (double)q[(h * S + i) * E + e] * k[(h * S + j) * E + e];
          p[j] = causal && j > i ? -INFINITY : acc / 2.0;
          if (p[j] > mx) mx = p[j];
        }
        for (int j = 0; j < S; j++) sum += (p[j] = exp(p[j] - mx));
        for (int e = 0; e < E; e++) {
          double acc = 0;
          for (int j = 0; j < S; j++) acc += p[j] / sum * v[(h * S + j) * E + e];
          want[(h * S + i) * E + e] = (float)acc;
        }
      }
    mini_attr at[1] = {{"is_causal", causal}};
    size_t len;
    uint8_t *buf = mini_model("Attention", ins, 3, at, 1, &len);
    for (int target = MIL_IOS15; target <= MIL_IOS18; target += MIL_IOS18 - MIL_IOS15) {
      run_mini(buf, len, target, ins, 3, data, got, N * S * E);
      for (int i = 0; i < N * S * E; i++) assert_true(fabsf(got[i] - want[i]) <= 1e-5f);
    }
    free(buf);
  }
}

/* RotaryEmbedding on (B=1, heads 2, S=3, head 4), cos / sin (1, 3, 2),
 * halves and interleaved, against the rotation computed here. */
static void test_rotary_embedding(void **state) {
  (void)state;
  enum { N = 2, S = 3, E = 4 };
  mini_in ins[3] = {{"x", 4, {1, N, S, E}}, {"cos", 3, {1, S, E / 2}}, {"sin", 3, {1, S, E / 2}}};
  float x[N * S * E], cs[S * E / 2], sn[S * E / 2], want[N * S * E], got[N * S * E];
  for (int i = 0; i < N * S * E; i++) x[i] = frand();
  for (int i = 0; i < S * E / 2; i++) cs[i] = cosf((float)i * 0.3f), sn[i] = sinf((float)i * 0.3f);
  float *data[3] = {x, cs, sn};
  for (int il = 0; il <= 1; il++) {
    for (int h = 0; h < N; h++)
      for (int t = 0; t < S; t++)
        for (int j = 0; j < E / 2; j++) {
          const float *row = x + (h * S + t) * E;
          int a = il ? 2 * j : j, b = il ? 2 * j + 1 : j + E / 2;
          float c = cs[t * E / 2 + j], s2 = sn[t * E / 2 + j];
          want[(h * S + t) * E + a] = row[a] * c - row[b] * s2;
          want[(h * S + t) * E + b] = row[b] * c + row[a] * s2;
        }
    mini_attr at[1] = {{"interleaved", il}};
    size_t len;
    uint8_t *buf = mini_model("RotaryEmbedding", ins, 3, at, 1, &len);
    run_mini(buf, len, MIL_IOS15, ins, 3, data, got, N * S * E);
    for (int i = 0; i < N * S * E; i++) assert_true(fabsf(got[i] - want[i]) <= 1e-6f);
    free(buf);
  }
}

/* A large initializer kept inside the .onnx (raw_data) is viewed in the
 * decoded message, which the program keeps: with the default fp16
 * precision, the fp16 cast and the transpose that MatMul + Add -> linear
 * need are deferred to the weight's readers, as for a weight file's
 * mapping, and the result is still the product. */
static void test_inline_weight_deferred(void **state) {
  (void)state;
  enum { K = 64, N = 128 };
  static float w[K * N];
  float x[K];
  for (int i = 0; i < K * N; i++) w[i] = (float)((i * 37) % 101 - 50) / 256.0f;
  for (int i = 0; i < K; i++) x[i] = (float)(i % 7 - 3) / 4.0f;
  mini_in ins[2] = {{"x", 2, {1, K}}, {"w", 2, {K, N}}};
  size_t len;
  uint8_t *buf = mini_model("MatMul", ins, 2, NULL, 0, &len);
  /* w becomes an initializer with its bytes in raw_data (32 KB) */
  Onnx__ModelProto *m = onnx__model_proto__unpack(NULL, len, buf);
  free(buf);
  assert_non_null(m);
  Onnx__TensorProto t = ONNX__TENSOR_PROTO__INIT, *tp = &t;
  int64_t dims[2] = {K, N};
  t.name = "w";
  t.n_dims = 2;
  t.dims = dims;
  t.has_data_type = true;
  t.data_type = ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT;
  t.has_raw_data = true;
  t.raw_data.data = (uint8_t *)w;
  t.raw_data.len = sizeof w;
  m->graph->n_initializer = 1;
  m->graph->initializer = &tp;
  m->graph->n_input = 1; /* x only */
  len = onnx__model_proto__get_packed_size(m);
  buf = malloc(len);
  onnx__model_proto__pack(m, buf);
  m->graph->n_initializer = 0;
  m->graph->initializer = NULL;
  m->graph->n_input = 2;
  onnx__model_proto__free_unpacked(m, NULL);
  mil_diag d;
  mil_diag_init(&d);
  mil_convert_options o;
  memset(&o, 0, sizeof o);
  mil_model *mm = NULL;
  mil_status st = import(buf, len, &o, &mm, &d);
  free(buf);
  if (st != MIL_OK) printf("  %s\n", mil_diag_first_error(&d));
  assert_int_equal(st, MIL_OK);
  const mil_program *p = mil_model_program(mm);
  int deferred = 0;
  for (mil_op *op = mil_function_body(p->functions[0])->first; op; op = op->next)
    if (mil_op_is_const(op) && op->outputs[0]->val && op->outputs[0]->val->numel == K * N) {
      assert_int_equal(op->outputs[0]->val->type->dtype, MIL_DT_FP16);
      deferred += mil_value_is_deferred(op->outputs[0]->val);
    }
  assert_int_equal(deferred, 1);
  mil_interp *ip = NULL;
  assert_int_equal(mil_interp_new(p, NULL, &ip, &d), MIL_OK);
  int64_t xs[2] = {1, K};
  mil_tensor in = {MIL_DT_FP32, 2, xs, x, sizeof x, K};
  assert_int_equal(mil_interp_set_input(ip, mil_interp_input_name(ip, 0), &in, &d), MIL_OK);
  assert_int_equal(mil_interp_run(ip, NULL, &d), MIL_OK);
  const mil_tensor *y = mil_interp_output_at(ip, 0);
  assert_int_equal(y->numel, N);
  for (int j = 0; j < N; j++) {
    double want = 0;
    for (int k = 0; k < K; k++) want += (double)x[k] * w[k * N + j];
    double got = y->dtype == MIL_DT_FP16 ? mil_fp16_to_fp32(((const uint16_t *)y->data)[j]) : ((const float *)y->data)[j];
    assert_true(fabs(got - want) <= 1e-2 + 1e-2 * fabs(want));
  }
  mil_interp_free(ip);
  mil_model_free(mm);
  mil_diag_clear(&d);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_recurrent_const_weights),
      cmocka_unit_test(test_inline_weight_deferred),
      cmocka_unit_test(test_errors_name_the_node),
      cmocka_unit_test(test_names_and_shapes),
      cmocka_unit_test(test_op_table),
      cmocka_unit_test(test_attention),
      cmocka_unit_test(test_rotary_embedding),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
