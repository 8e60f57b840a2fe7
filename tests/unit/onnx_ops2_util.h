/* One-node ONNX models built in memory and run through the importer and
 * the interpreter, for the tests of the op families in test_onnx_ops2_*.c. */
#ifndef MIL_TEST_ONNX_OPS2_UTIL_H
#define MIL_TEST_ONNX_OPS2_UTIL_H

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
#include "mil/convert.h"
#include "mil/onnx.h"
#include "onnx.pb-c.h"

typedef struct io {
  const char *name;
  int elem; /* ONNX DataType */
  int rank;
  int64_t dims[4];
} io;

/* A model (opset 13, or g_opset when set) of one node op_type on inputs
 * ins, one output `out` and int attributes attr_names[i]: INTS of
 * attr_n[i] values attr_vals[i], or an INT attr_vals[i][0] when attr_n[i]
 * is -1. The node is in domain g_domain when set. */
static int g_opset;
static const char *g_domain; /* the node's domain, imported at version 1 besides ai.onnx */
/* float attributes g_fnames[i] = g_fvals[i] (i < g_nf) and one string
 * attribute g_sname = g_sval (when set), added to the int ones */
static const char *g_fnames[6];
static float g_fvals[6];
static int g_nf;
static const char *g_sname, *g_sval;
static const char *g_sname2, *g_sval2; /* a second string attribute (when set) */
/* one FLOATS attribute g_fsname = g_fsvals[0..g_fsn) (when set) */
static const char *g_fsname;
static const float *g_fsvals;
static int g_fsn;
static int g_nout; /* outputs out[0..g_nout) (1 when 0) */
/* when set, opset_import holds only this domain (at version 1): no ai.onnx */
static const char *g_import_only;
static inline uint8_t *model(const char *op_type, const io *ins, int n_in, const io *out, const char *const *attr_names,
                      const int64_t *const *attr_vals, const int *attr_n, int n_attr, size_t *len) {
  Onnx__ModelProto m = ONNX__MODEL_PROTO__INIT;
  Onnx__OperatorSetIdProto os = ONNX__OPERATOR_SET_ID_PROTO__INIT, os2 = ONNX__OPERATOR_SET_ID_PROTO__INIT,
                           *osp[2] = {&os, &os2};
  os.domain = "";
  os.has_version = true;
  os.version = g_opset ? g_opset : 13;
  m.has_ir_version = true;
  m.ir_version = 7;
  os2.domain = (char *)g_domain;
  os2.has_version = true;
  os2.version = 1;
  m.n_opset_import = g_domain ? 2 : 1;
  if (g_import_only) {
    os.domain = (char *)g_import_only;
    os.version = 1;
    m.n_opset_import = 1;
  }
  m.opset_import = osp;
  Onnx__GraphProto g = ONNX__GRAPH_PROTO__INIT;
  m.graph = &g;
  Onnx__NodeProto nd = ONNX__NODE_PROTO__INIT, *ndp = &nd;
  int nout = g_nout ? g_nout : 1;
  char *in_names[9], *outs[6];
  for (int i = 0; i < nout; i++) outs[i] = (char *)out[i].name;
  for (int i = 0; i < n_in; i++) in_names[i] = (char *)ins[i].name;
  nd.op_type = (char *)op_type;
  nd.domain = (char *)g_domain;
  nd.n_input = (size_t)n_in;
  nd.input = in_names;
  nd.n_output = (size_t)nout;
  nd.output = outs;
  Onnx__AttributeProto at[12], *atp[12];
  for (int i = 0; i < n_attr; i++) {
    onnx__attribute_proto__init(&at[i]);
    at[i].name = (char *)attr_names[i];
    at[i].has_type = true;
    if (attr_n[i] < 0) {
      at[i].type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT;
      at[i].has_i = true;
      at[i].i = attr_vals[i][0];
    } else {
      at[i].type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS;
      at[i].n_ints = (size_t)attr_n[i];
      at[i].ints = (int64_t *)attr_vals[i];
    }
    atp[i] = &at[i];
  }
  for (int i = 0; i < g_nf; i++, n_attr++) {
    onnx__attribute_proto__init(&at[n_attr]);
    at[n_attr].name = (char *)g_fnames[i];
    at[n_attr].has_type = true;
    at[n_attr].type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT;
    at[n_attr].has_f = true;
    at[n_attr].f = g_fvals[i];
    atp[n_attr] = &at[n_attr];
  }
  if (g_fsname) {
    onnx__attribute_proto__init(&at[n_attr]);
    at[n_attr].name = (char *)g_fsname;
    at[n_attr].has_type = true;
    at[n_attr].type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS;
    at[n_attr].n_floats = (size_t)g_fsn;
    at[n_attr].floats = (float *)g_fsvals;
    atp[n_attr] = &at[n_attr];
    n_attr++;
  }
  const char *snames[2] = {g_sname, g_sname2}, *svals[2] = {g_sval, g_sval2};
  for (int i = 0; i < 2; i++) {
    if (!snames[i]) continue;
    onnx__attribute_proto__init(&at[n_attr]);
    at[n_attr].name = (char *)snames[i];
    at[n_attr].has_type = true;
    at[n_attr].type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING;
    at[n_attr].has_s = true;
    at[n_attr].s.data = (uint8_t *)svals[i];
    at[n_attr].s.len = strlen(svals[i]);
    atp[n_attr] = &at[n_attr];
    n_attr++;
  }
  nd.n_attribute = (size_t)n_attr;
  nd.attribute = atp;
  g.n_node = 1;
  g.node = &ndp;
  Onnx__TensorShapeProto__Dimension dm[16][4], *dmp[16][4];
  Onnx__TensorShapeProto sh[16];
  Onnx__TypeProto__Tensor tt[16];
  Onnx__TypeProto tp[16];
  Onnx__ValueInfoProto vi[16], *vip[16];
  for (int i = 0; i < n_in + nout; i++) {
    const io *v = i < n_in ? &ins[i] : &out[i - n_in];
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
  g.n_output = (size_t)nout;
  g.output = &vip[n_in];
  *len = onnx__model_proto__get_packed_size(&m);
  uint8_t *buf = malloc(*len);
  onnx__model_proto__pack(&m, buf);
  return buf;
}

static inline int64_t numel(const io *v) {
  int64_t n = 1;
  for (int k = 0; k < v->rank; k++) n *= v->dims[k];
  return n;
}

/* The fp32 import of buf (or of the file at path when buf is NULL) and
 * an interpreter on it; *m and *d to be freed by the caller. */
static inline mil_interp *open_interp(const uint8_t *buf, size_t len, const char *path, mil_model **m, mil_diag *d) {
  mil_diag_init(d);
  mil_convert_options o;
  memset(&o, 0, sizeof o);
  o.fp32 = true;
  *m = NULL;
  mil_status st = buf ? mil_convert_onnx_buffer(buf, len, "ops2.onnx", NULL, &o, m, d) : mil_convert(path, &o, m, d);
  if (st != MIL_OK) printf("  %s\n", mil_diag_first_error(d));
  assert_int_equal(st, MIL_OK);
  mil_interp *ip = NULL;
  assert_int_equal(mil_interp_new(mil_model_program(*m), NULL, &ip, d), MIL_OK);
  return ip;
}

/* Imports and runs the model on data[i] (fp32 for float inputs, int32
 * for the integer ones: the importer's dtypes); checks every output (1,
 * or g_nout) has n elements of dtype dt and copies them one after the
 * other into out. */
static inline void run(const uint8_t *buf, size_t len, const io *ins, int n_in, void *const *data, mil_dtype dt,
                       void *out, int64_t n) {
  mil_diag d;
  mil_model *m;
  mil_interp *ip = open_interp(buf, len, NULL, &m, &d);
  for (int i = 0; i < n_in; i++) {
    bool f = ins[i].elem == ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT;
    mil_tensor t = {f ? MIL_DT_FP32 : MIL_DT_INT32, ins[i].rank, ins[i].dims, data[i], (size_t)numel(&ins[i]) * 4,
                    numel(&ins[i])};
    assert_int_equal(mil_interp_set_input(ip, mil_interp_input_name(ip, i), &t, &d), MIL_OK);
  }
  mil_status st = mil_interp_run(ip, NULL, &d);
  if (st != MIL_OK) printf("  %s\n", mil_diag_first_error(&d));
  assert_int_equal(st, MIL_OK);
  for (int i = 0; i < (g_nout ? g_nout : 1); i++) {
    const mil_tensor *y = mil_interp_output_at(ip, i);
    assert_int_equal(y->numel, n);
    assert_int_equal(y->dtype, dt);
    memcpy((char *)out + (size_t)i * (size_t)n * 4, y->data, (size_t)n * 4);
  }
  mil_interp_free(ip);
  mil_model_free(m);
  mil_diag_clear(&d);
}

#endif
