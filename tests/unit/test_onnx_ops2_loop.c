/* ONNX Loop whose body declares no type for its outputs, as ONNX's
 * function expansions (Range's body in test_range_*_expanded) leave them:
 * the scan output's element type is the converted body value's. A body
 * that carries prev and scans it (Range's body: current = prev + delta,
 * range = prev) gives the scan output start, start + delta, ... (M
 * elements) and the final value start + M delta (docs/Operators.md Loop). */
#include "onnx_ops2_util.h"

/* A value info named name, with a tensor type of elem and rank dims
 * (rank -1: no type at all). */
static void value_info(Onnx__ValueInfoProto *vi, Onnx__TypeProto *tp, Onnx__TypeProto__Tensor *tt,
                       Onnx__TensorShapeProto *sh, Onnx__TensorShapeProto__Dimension *dm,
                       Onnx__TensorShapeProto__Dimension **dmp, const char *name, int elem, int rank, const int64_t *dims) {
  onnx__value_info_proto__init(vi);
  vi->name = (char *)name;
  if (rank < 0) return;
  for (int k = 0; k < rank; k++) {
    onnx__tensor_shape_proto__dimension__init(&dm[k]);
    dm[k].value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
    dm[k].dim_value = dims[k];
    dmp[k] = &dm[k];
  }
  onnx__tensor_shape_proto__init(sh);
  sh->n_dim = (size_t)rank;
  sh->dim = dmp;
  onnx__type_proto__tensor__init(tt);
  tt->has_elem_type = true;
  tt->elem_type = elem;
  tt->shape = sh;
  onnx__type_proto__init(tp);
  tp->value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
  tp->tensor_type = tt;
  vi->type = tp;
}

static void node(Onnx__NodeProto *nd, const char *op, int n_in, char **in, char **out) {
  onnx__node_proto__init(nd);
  nd->op_type = (char *)op;
  nd->n_input = (size_t)n_in;
  nd->input = in;
  nd->n_output = 1;
  nd->output = out;
}

static void test_loop_untyped_scan_output(void **state) {
  (void)state;
  enum { M = 4 };
  const int F = ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, I = ONNX__TENSOR_PROTO__DATA_TYPE__INT64,
            B = ONNX__TENSOR_PROTO__DATA_TYPE__BOOL;
  /* 3 graph inputs, 2 graph outputs, 3 body inputs, 3 body outputs */
  Onnx__ValueInfoProto vi[11], *vip[11];
  Onnx__TypeProto tp[11];
  Onnx__TypeProto__Tensor tt[11];
  Onnx__TensorShapeProto sh[11];
  Onnx__TensorShapeProto__Dimension dm[11][1], *dmp[11][1];
  const int64_t mdim[1] = {M};
  struct { const char *name; int elem, rank; const int64_t *dims; } v[11] = {
      {"trip", I, 0, NULL}, {"start", F, 0, NULL}, {"delta", F, 0, NULL},        /* graph inputs */
      {"final", F, 0, NULL}, {"scan", F, 1, mdim},                               /* graph outputs */
      {"i", I, 0, NULL}, {"cond", B, 0, NULL}, {"prev", F, 0, NULL},             /* body inputs */
      {"cond_out", 0, -1, NULL}, {"current", 0, -1, NULL}, {"range", 0, -1, NULL}, /* body outputs: no type */
  };
  for (int k = 0; k < 11; k++) {
    value_info(&vi[k], &tp[k], &tt[k], &sh[k], dm[k], dmp[k], v[k].name, v[k].elem, v[k].rank, v[k].dims);
    vip[k] = &vi[k];
  }
  Onnx__NodeProto bn[3], *bnp[3] = {&bn[0], &bn[1], &bn[2]};
  char *b0_in[1] = {"cond"}, *b0_out[1] = {"cond_out"}, *b1_in[2] = {"prev", "delta"}, *b1_out[1] = {"current"},
       *b2_in[1] = {"prev"}, *b2_out[1] = {"range"};
  node(&bn[0], "Identity", 1, b0_in, b0_out);
  node(&bn[1], "Add", 2, b1_in, b1_out);
  node(&bn[2], "Identity", 1, b2_in, b2_out);
  Onnx__GraphProto body = ONNX__GRAPH_PROTO__INIT;
  body.name = "body";
  body.n_node = 3;
  body.node = bnp;
  body.n_input = 3;
  body.input = &vip[5];
  body.n_output = 3;
  body.output = &vip[8];
  Onnx__AttributeProto at, *atp = &at;
  onnx__attribute_proto__init(&at);
  at.name = "body";
  at.has_type = true;
  at.type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH;
  at.g = &body;
  Onnx__NodeProto loop, *loopp = &loop;
  char *l_in[3] = {"trip", "", "start"}, *l_out[2] = {"final", "scan"};
  node(&loop, "Loop", 3, l_in, l_out);
  loop.n_output = 2;
  loop.n_attribute = 1;
  loop.attribute = &atp;
  Onnx__GraphProto g = ONNX__GRAPH_PROTO__INIT;
  g.name = "loop";
  g.n_node = 1;
  g.node = &loopp;
  g.n_input = 3;
  g.input = vip;
  g.n_output = 2;
  g.output = &vip[3];
  Onnx__ModelProto m = ONNX__MODEL_PROTO__INIT;
  Onnx__OperatorSetIdProto os = ONNX__OPERATOR_SET_ID_PROTO__INIT, *osp = &os;
  os.domain = "";
  os.has_version = true;
  os.version = 13;
  m.has_ir_version = true;
  m.ir_version = 7;
  m.n_opset_import = 1;
  m.opset_import = &osp;
  m.graph = &g;
  size_t len = onnx__model_proto__get_packed_size(&m);
  uint8_t *buf = malloc(len);
  assert_non_null(buf);
  onnx__model_proto__pack(&m, buf);

  mil_diag d;
  mil_model *mm;
  mil_interp *ip = open_interp(buf, len, NULL, &mm, &d);
  const int32_t trip = M;
  const float start = 1.5f, delta = 2.0f;
  const mil_tensor ins[3] = {{MIL_DT_INT32, 0, NULL, &trip, 4, 1}, {MIL_DT_FP32, 0, NULL, &start, 4, 1},
                             {MIL_DT_FP32, 0, NULL, &delta, 4, 1}};
  for (int k = 0; k < 3; k++) {
    mil_status st = mil_interp_set_input(ip, v[k].name, &ins[k], &d);
    if (st != MIL_OK) printf("  %s\n", mil_diag_first_error(&d));
    assert_int_equal(st, MIL_OK);
  }
  mil_status st = mil_interp_run(ip, NULL, &d);
  if (st != MIL_OK) printf("  %s\n", mil_diag_first_error(&d));
  assert_int_equal(st, MIL_OK);
  const mil_tensor *fin = mil_interp_output_at(ip, 0), *scan = mil_interp_output_at(ip, 1);
  assert_int_equal(fin->numel, 1);
  assert_true(((const float *)fin->data)[0] == 9.5f);
  assert_int_equal(scan->rank, 1);
  assert_int_equal(scan->shape[0], M);
  const float want[M] = {1.5f, 3.5f, 5.5f, 7.5f};
  for (int k = 0; k < M; k++) assert_true(((const float *)scan->data)[k] == want[k]);
  mil_interp_free(ip);
  mil_model_free(mm);
  mil_diag_clear(&d);
  free(buf);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_loop_untyped_scan_output),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
