/* The ONNX importer's names: the names it makes up (fresh op and var
 * names, identities and casts at the graph outputs) never take an ONNX
 * value name of the graph, nor each other, and the ONNX names keep their
 * sanitized form. Each model is built here with protobuf-c and imported
 * without a pipeline; the program must pass mil_program_validate. The
 * first case has the symptom of a fuzz_onnx_model finding: two vars named
 * after one graph output, an output and an importer-made cast (its seed
 * is fuzz/seeds/fuzz_onnx_model/bool_output_twice.onnx). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "mil/mil.h"
#include "mil/model.h"
#include "mil/onnx.h"
#include "onnx.pb-c.h"

/* A value: name, ONNX elem type, rank-1 length (0: unknown shape). */
typedef struct tval {
  const char *name;
  int elem;
  int64_t len;
} tval;

/* A node: op type, up to 3 inputs and 2 outputs (NULL ends a list). */
typedef struct tnode {
  const char *op;
  const char *in[3];
  const char *out[2];
} tnode;

#define F32 ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT
#define BOOL ONNX__TENSOR_PROTO__DATA_TYPE__BOOL

typedef struct vi_mem {
  Onnx__ValueInfoProto vi;
  Onnx__TypeProto tp;
  Onnx__TypeProto__Tensor tt;
  Onnx__TensorShapeProto sh;
  Onnx__TensorShapeProto__Dimension dm, *dmp;
} vi_mem;

static Onnx__ValueInfoProto *value_info(vi_mem *m, const tval *v) {
  onnx__value_info_proto__init(&m->vi);
  onnx__type_proto__init(&m->tp);
  onnx__type_proto__tensor__init(&m->tt);
  m->vi.name = (char *)v->name;
  m->vi.type = &m->tp;
  m->tp.value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
  m->tp.tensor_type = &m->tt;
  m->tt.has_elem_type = true;
  m->tt.elem_type = v->elem;
  if (v->len > 0) {
    onnx__tensor_shape_proto__init(&m->sh);
    onnx__tensor_shape_proto__dimension__init(&m->dm);
    m->dm.value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
    m->dm.dim_value = v->len;
    m->dmp = &m->dm;
    m->sh.n_dim = 1;
    m->sh.dim = &m->dmp;
    m->tt.shape = &m->sh;
  }
  return &m->vi;
}

static size_t count(const char *const *names, size_t max) {
  size_t n = 0;
  while (n < max && names[n]) n++;
  return n;
}

/* Imports the graph (opset 17, no pipeline); the program, which must
 * validate. */
static mil_model *import(const tval *ins, int n_in, const tnode *nodes, int n_nodes, const tval *outs, int n_out) {
  Onnx__ModelProto m = ONNX__MODEL_PROTO__INIT;
  Onnx__OperatorSetIdProto os = ONNX__OPERATOR_SET_ID_PROTO__INIT, *osp = &os;
  os.domain = "";
  os.has_version = true;
  os.version = 17;
  m.has_ir_version = true;
  m.ir_version = 8;
  m.n_opset_import = 1;
  m.opset_import = &osp;
  Onnx__GraphProto g = ONNX__GRAPH_PROTO__INIT;
  m.graph = &g;
  vi_mem im[4], om[4];
  Onnx__ValueInfoProto *ip[4], *op[4];
  for (int i = 0; i < n_in; i++) ip[i] = value_info(&im[i], &ins[i]);
  for (int i = 0; i < n_out; i++) op[i] = value_info(&om[i], &outs[i]);
  g.n_input = (size_t)n_in;
  g.input = ip;
  g.n_output = (size_t)n_out;
  g.output = op;
  Onnx__NodeProto nd[4], *ndp[4];
  for (int i = 0; i < n_nodes; i++) {
    onnx__node_proto__init(&nd[i]);
    nd[i].op_type = (char *)nodes[i].op;
    nd[i].n_input = count(nodes[i].in, 3);
    nd[i].input = (char **)nodes[i].in;
    nd[i].n_output = count(nodes[i].out, 2);
    nd[i].output = (char **)nodes[i].out;
    ndp[i] = &nd[i];
  }
  g.n_node = (size_t)n_nodes;
  g.node = ndp;
  size_t len = onnx__model_proto__get_packed_size(&m);
  uint8_t *buf = malloc(len);
  assert_non_null(buf);
  onnx__model_proto__pack(&m, buf);
  mil_onnx_options o = {0};
  mil_diag d;
  mil_diag_init(&d);
  mil_model *mm = NULL;
  mil_status st = mil_onnx_import_buffer(buf, len, "names.onnx", NULL, &o, &mm, &d);
  free(buf);
  if (st != MIL_OK) fail_msg("import: %s", mil_diag_first_error(&d) ? mil_diag_first_error(&d) : "?");
  if (mil_program_validate(mil_model_program(mm), &d) != MIL_OK)
    fail_msg("the imported program does not validate: %s", mil_diag_first_error(&d));
  mil_diag_clear(&d);
  return mm;
}

/* Output i of main is named `want`. */
static void expect_output(mil_model *m, int i, const char *want) {
  const mil_program *p = mil_model_program(m);
  const mil_block *b = mil_function_body(p->functions[0]);
  assert_true(i < b->n_outputs);
  assert_string_equal(b->outputs[i].var->name, want);
}

/* The number of op outputs of b named `name`. */
static int named(const mil_block *b, const char *name) {
  int k = 0;
  for (const mil_op *op = b->first; op; op = op->next)
    for (int32_t i = 0; i < op->n_outputs; i++) k += strcmp(op->outputs[i]->name, name) == 0;
  return k;
}

/* The fuzz finding: a bool output listed twice got two int32 casts, both
 * named after it. */
static void test_bool_output_listed_twice(void **state) {
  (void)state;
  const tval ins[] = {{"x", F32, 2}};
  const tnode nodes[] = {{"Equal", {"x", "x"}, {"output_2"}}};
  const tval outs[] = {{"output_2", BOOL, 0}, {"output_2", BOOL, 0}};
  mil_model *m = import(ins, 1, nodes, 1, outs, 2);
  expect_output(m, 0, "output_2");
  assert_int_equal(named(mil_function_body(mil_model_program(m)->functions[0]), "output_2"), 1);
  mil_model_free(m);
}

/* A bool graph input listed as an output: its int32 cast may not take the
 * input's name. */
static void test_bool_input_as_output(void **state) {
  (void)state;
  const tval ins[] = {{"b", BOOL, 2}};
  const tval outs[] = {{"b", BOOL, 0}};
  mil_model *m = import(ins, 1, NULL, 0, outs, 1);
  mil_model_free(m);
}

/* A node output named like the cast the importer makes for a bool input:
 * the ONNX name is kept, the cast takes another. */
static void test_node_output_named_like_a_made_up_name(void **state) {
  (void)state;
  const tval ins[] = {{"b", BOOL, 2}};
  const tnode nodes[] = {{"Not", {"b"}, {"cast_0"}}, {"Not", {"cast_0"}, {"cast_1"}}};
  const tval outs[] = {{"cast_0", BOOL, 0}, {"cast_1", BOOL, 0}};
  mil_model *m = import(ins, 1, nodes, 2, outs, 2);
  expect_output(m, 0, "cast_0");
  expect_output(m, 1, "cast_1");
  mil_model_free(m);
}

/* An input listed as an output gets an identity with a fresh name, which
 * may not be a later output's ONNX name. */
static void test_input_as_output_and_fresh_name(void **state) {
  (void)state;
  const tval ins[] = {{"x", F32, 2}};
  const tnode nodes[] = {{"Relu", {"x"}, {"x_0"}}};
  const tval outs[] = {{"x", F32, 0}, {"x_0", F32, 0}};
  mil_model *m = import(ins, 1, nodes, 1, outs, 2);
  expect_output(m, 1, "x_0");
  mil_model_free(m);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_bool_output_listed_twice),
      cmocka_unit_test(test_bool_input_as_output),
      cmocka_unit_test(test_node_output_named_like_a_made_up_name),
      cmocka_unit_test(test_input_as_output_and_fresh_name),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
