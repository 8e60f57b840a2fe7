/* Fuzz target: the model loader on arbitrary bytes given as a .mlmodel.
 *
 * Input byte 0 picks the mode:
 *   even: the rest of the input is the Model protobuf itself;
 *   odd:  the rest is a list of 3-byte patches (offset lo, offset hi, value)
 *         applied to a valid built-in model (consts of many dtypes, nested
 *         blocks, constexpr ops, a state update), followed by an optional
 *         truncation, so the fuzzer starts deep inside the format.
 * A model that loads is also serialized again and the result reloaded: the
 * reload must succeed. Names from the input reach messages and the printer:
 * neither may carry a control byte or invalid UTF-8 (a terminal escape),
 * and a string with a NUL must have been refused. Any crash, sanitizer
 * report, hang, failed reload or raw control byte is a bug. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mil/mil.h"
#include "mil/model.h"

static uint8_t *g_base;
static size_t g_base_len;

static mil_var *cst(mil_block *b, const char *name, mil_dtype dt, int32_t rank, const int64_t *shape) {
  mil_program *p = mil_block_program(b);
  mil_value *v = mil_value_new_tensor(p, dt, rank, shape, rank == 0, NULL);
  if (!v) abort();
  if (dt != MIL_DT_STRING)
    for (int64_t i = 0; i < v->numel && !mil_dtype_is_subbyte(dt); i++) mil_value_set_i64(v, i, i % 5);
  mil_op *op = mil_const_new(p, name, v);
  mil_block_append(b, op);
  return op->outputs[0];
}

static mil_var *op1(mil_block *b, const char *type, const char *name, const char *param, mil_var *x,
                    const mil_type *t) {
  mil_op *op = mil_op_new(mil_block_program(b), type, name);
  mil_op_add_input(op, param, x);
  mil_var *o = t ? mil_op_add_output(op, name, t) : NULL;
  mil_block_append(b, op);
  return o;
}

/* The built-in model: everything small, so it is one self-contained protobuf. */
static void build_base(void) {
  mil_program *p = mil_program_new(NULL);
  mil_function *f = mil_function_new(p, "main", "CoreML8");
  int64_t s[2] = {2, 3}, s4[1] = {4};
  mil_dim dims[2] = {mil_dim_new_symbol(p), {3, NULL, false}};
  mil_var *x = mil_function_add_input(f, "x", mil_type_tensor(p, MIL_DT_FP32, 2, dims));
  mil_var *st = mil_function_add_input(f, "st", mil_type_state(p, mil_type_tensor_shape(p, MIL_DT_FP16, 2, s)));
  mil_block *b = mil_function_body(f);
  mil_dtype dts[] = {MIL_DT_FP32, MIL_DT_FP16, MIL_DT_INT8, MIL_DT_UINT8, MIL_DT_INT4, MIL_DT_UINT3, MIL_DT_INT16,
                     MIL_DT_UINT32, MIL_DT_INT32, MIL_DT_BOOL, MIL_DT_BF16, MIL_DT_STRING};
  char name[32];
  mil_op *sink = mil_op_new(p, "sink", "sink");
  for (size_t i = 0; i < sizeof dts / sizeof *dts; i++) {
    snprintf(name, sizeof name, "c%zu", i);
    mil_op_add_input(sink, name, cst(b, name, dts[i], i % 3 ? 1 : 0, s4));
  }
  mil_op_add_input(sink, "x", x);
  mil_var *y = mil_op_add_output(sink, "sink", x->type);
  mil_block_append(b, sink);
  mil_var *q = cst(b, "deq_quantized_data_0", MIL_DT_UINT8, 2, s);
  mil_var *zp = cst(b, "deq_zero_point_0", MIL_DT_UINT8, 0, NULL);
  mil_var *sc = cst(b, "deq_scale_0", MIL_DT_FP32, 0, NULL);
  mil_op *deq = mil_op_new(p, "constexpr_affine_dequantize", "deq");
  mil_op_add_input(deq, "quantized_data", q);
  mil_op_add_input(deq, "zero_point", zp);
  mil_op_add_input(deq, "scale", sc);
  mil_var *dv = mil_op_add_output(deq, "deq", mil_type_tensor_shape(p, MIL_DT_FP32, 2, s));
  mil_block_append(b, deq);
  mil_var *val = cst(b, "val", MIL_DT_FP16, 2, s);
  mil_op *upd = mil_op_new(p, "coreml_update_state", "coreml_update_state_0");
  mil_op_add_input(upd, "state", st);
  mil_op_add_input(upd, "value", val);
  mil_var *uv = mil_op_add_output(upd, "upd", val->type);
  mil_block_append(b, upd);
  mil_var *pred = cst(b, "pred", MIL_DT_BOOL, 0, NULL);
  mil_op *cond = mil_op_new(p, "cond", "c");
  mil_op_add_input(cond, "pred", pred);
  for (int k = 0; k < 2; k++) {
    mil_block *nb = mil_block_new(p, NULL);
    mil_var *r = op1(nb, "identity", k ? "nf" : "nt", "x", y, y->type);
    mil_block_set_outputs(nb, 1, &r);
    mil_op_add_block(cond, nb);
  }
  mil_var *cv = mil_op_add_output(cond, "c", y->type);
  mil_block_append(b, cond);
  mil_var *outs[3] = {cv, dv, uv};
  mil_block_set_outputs(b, 3, outs);
  mil_model *m = NULL;
  mil_diag d = {0};
  void *data = NULL;
  if (mil_model_from_program(p, 9, &m, &d) != MIL_OK || mil_model_serialize(m, NULL, &data, &g_base_len, &d) != MIL_OK)
    abort();
  g_base = data;
  mil_model_free(m);
  mil_diag_clear(&d);
}

/* Messages and printed text never carry terminal escapes. */
static void check_clean(const mil_diag *d, const mil_program *p) {
  for (size_t i = 0; d && i < d->count; i++)
    if (mil_escape_needed(d->msgs[i].text, 0)) {
      fprintf(stderr, "message not escaped: %s\n", d->msgs[i].text);
      abort();
    }
  if (!p) return;
  mil_buf b = {0};
  mil_print_options opt = {MIL_PRINT_COREMLTOOLS, false};
  mil_print_program(p, &opt, &b);
  for (size_t i = 0; i < b.len; i++) {
    unsigned char c = (unsigned char)b.data[i];
    if ((c < 0x20 && c != '\n') || c == 0x7f) {
      fprintf(stderr, "raw control byte 0x%02x at %zu of the printed program\n", c, i);
      abort();
    }
  }
  mil_buf_free(&b);
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc, (void)argv;
  build_base();
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size == 0) return 0;
  uint8_t *buf;
  size_t len;
  if ((data[0] & 1) == 0) {
    len = size - 1;
    buf = malloc(len ? len : 1);
    if (!buf) return 0;
    memcpy(buf, data + 1, len);
  } else {
    len = g_base_len;
    buf = malloc(len);
    if (!buf) return 0;
    memcpy(buf, g_base, len);
    size_t i = 1;
    for (; i + 3 <= size; i += 3) {
      size_t off = ((size_t)data[i] | (size_t)data[i + 1] << 8) % len;
      buf[off] = data[i + 2];
    }
    if (i < size) len = len * data[i] / 256 + 1; /* a trailing byte truncates */
    if (len > g_base_len) len = g_base_len;
  }
  mil_model *m = NULL;
  mil_diag d = {0};
  if (mil_model_load_proto(buf, len, "fuzz.mlmodel", NULL, &m, &d) == MIL_OK) {
    check_clean(&d, mil_model_program(m));
    void *out = NULL;
    size_t out_len = 0;
    mil_diag d2 = {0};
    if (mil_model_serialize(m, NULL, &out, &out_len, &d2) == MIL_OK) {
      mil_model *again = NULL;
      if (mil_model_load_proto(out, out_len, "fuzz-again.mlmodel", NULL, &again, &d2) != MIL_OK) {
        fprintf(stderr, "reload failed: %s\n", mil_diag_first_error(&d2));
        abort();
      }
      mil_model_free(again);
    }
    free(out);
    mil_diag_clear(&d2);
    mil_model_free(m);
  }
  check_clean(&d, NULL);
  mil_diag_clear(&d);
  free(buf);
  return 0;
}
