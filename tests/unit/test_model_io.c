/* Model I/O: program <-> protobuf for every value and type kind, packages,
 * .mlmodel with a weights directory, .mil, descriptions, atomic saving. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "Model.pb-c.h"
#include "mil/blob.h"
#include "mil/mil.h"
#include "mil/model.h"
#include "unit/model_testutil.h"

/* ------------------------------------------------------------------------ */
/* building programs                                                          */
/* ------------------------------------------------------------------------ */

static mil_var *add_const(mil_block *b, const char *name, mil_dtype dt, int32_t rank, const int64_t *shape,
                          const void *data) {
  mil_program *p = mil_block_program(b);
  mil_value *v = mil_value_new_tensor(p, dt, rank, shape, rank == 0, data);
  assert_non_null(v);
  mil_op *op = mil_const_new(p, name, v);
  assert_non_null(op);
  mil_block_append(b, op);
  return op->outputs[0];
}

/* An op of a type the registry does not know, so its declared types stay. */
static mil_var *add_op(mil_block *b, const char *type, const char *name, const char *const *params, mil_var *const *args,
                       int n, const mil_type *out_type) {
  mil_program *p = mil_block_program(b);
  mil_op *op = mil_op_new(p, type, name);
  for (int i = 0; i < n; i++) assert_non_null(mil_op_add_input(op, params[i], args[i]));
  mil_var *o = out_type ? mil_op_add_output(op, name, out_type) : NULL;
  mil_block_append(b, op);
  return o;
}

/* LSB-first bit packing (formats.md 4.4), written independently of libmil. */
static void pack_bits(const int *vals, int n, int bits, uint8_t *out, size_t nbytes) {
  memset(out, 0, nbytes);
  for (int i = 0; i < n; i++) {
    unsigned v = (unsigned)vals[i] & ((1u << bits) - 1);
    for (int k = 0; k < bits; k++)
      if (v >> k & 1) out[(i * bits + k) / 8] |= (uint8_t)(1u << ((i * bits + k) % 8));
  }
}

static const int k_int4[10] = {1, -2, 3, -8, 7, 0, 1, 2, 3, 4};
static const uint8_t k_int4_packed[5] = {0xE1, 0x83, 0x07, 0x21, 0x43};

/* A program exercising every value kind and dtype the format has. */
static mil_program *build_rich(int n_functions) {
  mil_program *p = mil_program_new(NULL);
  mil_function *f = mil_function_new(p, "main", "CoreML8");
  mil_dim dims[3] = {{1, NULL, false}, mil_dim_new_symbol(p), {4, NULL, false}};
  mil_var *x = mil_function_add_input(f, "x", mil_type_tensor(p, MIL_DT_FP32, 3, dims));
  int64_t st_shape[2] = {2, 3};
  mil_var *st = mil_function_add_input(f, "st", mil_type_state(p, mil_type_tensor_shape(p, MIL_DT_FP16, 2, st_shape)));
  mil_block *b = mil_function_body(f);

  float w32[16];
  for (int i = 0; i < 16; i++) w32[i] = (float)i * 0.5f - 3.0f;
  int64_t s44[2] = {4, 4}, s12[1] = {12}, s34[2] = {3, 4}, s10[1] = {10}, s25[2] = {2, 5}, s16[1] = {16}, s11[1] = {11};
  mil_var *c_fp32 = add_const(b, "w_fp32", MIL_DT_FP32, 2, s44, w32);
  uint16_t h[12];
  for (int i = 0; i < 12; i++) h[i] = (uint16_t)(0x3C00 + i); /* 1.0 and neighbours */
  mil_var *c_fp16 = add_const(b, "w_fp16", MIL_DT_FP16, 1, s12, h);
  int8_t i8[12];
  for (int i = 0; i < 12; i++) i8[i] = (int8_t)(i - 6);
  mil_var *c_int8 = add_const(b, "w_int8", MIL_DT_INT8, 2, s34, i8);
  uint8_t u8[10] = {0, 1, 2, 3, 250, 251, 252, 253, 254, 255};
  mil_var *c_uint8 = add_const(b, "w_uint8", MIL_DT_UINT8, 1, s10, u8);
  mil_var *c_int4 = add_const(b, "w_int4", MIL_DT_INT4, 2, s25, k_int4_packed);
  int u1[16] = {1, 0, 1, 1, 0, 0, 1, 0, 1, 1, 1, 0, 0, 0, 0, 1};
  uint8_t pu1[2];
  pack_bits(u1, 16, 1, pu1, 2);
  mil_var *c_uint1 = add_const(b, "w_uint1", MIL_DT_UINT1, 1, s16, pu1);
  int u3[11] = {1, 2, 3, 4, 5, 6, 7, 0, 1, 2, 3};
  uint8_t pu3[5];
  pack_bits(u3, 11, 3, pu3, 5);
  mil_var *c_uint3 = add_const(b, "w_uint3", MIL_DT_UINT3, 1, s11, pu3);
  int u6[10] = {63, 1, 2, 40, 0, 17, 33, 5, 62, 9};
  uint8_t pu6[8];
  pack_bits(u6, 10, 6, pu6, 8);
  mil_var *c_uint6 = add_const(b, "w_uint6", MIL_DT_UINT6, 1, s10, pu6);
  int16_t i16[10] = {-300, -2, -1, 0, 1, 2, 3, 4, 5, 32767};
  mil_var *c_int16 = add_const(b, "w_int16", MIL_DT_INT16, 1, s10, i16);
  uint32_t u32[10] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 0xFFFFFFFFu};
  mil_var *c_uint32 = add_const(b, "w_uint32", MIL_DT_UINT32, 1, s10, u32);
  int64_t s3[1] = {3}, s2[1] = {2}, s4[1] = {4}, s03[2] = {0, 3};
  int32_t small[3] = {7, -8, 9};
  mil_var *c_small = add_const(b, "small_i32", MIL_DT_INT32, 1, s3, small);
  float f01 = 0.1f;
  mil_var *c_sf = add_const(b, "s_fp32", MIL_DT_FP32, 0, NULL, &f01);
  uint8_t tru = 1;
  mil_var *c_sb = add_const(b, "s_bool", MIL_DT_BOOL, 0, NULL, &tru);
  const char *strs[2] = {"valid", "bc"};
  mil_var *c_ss = add_const(b, "s_str", MIL_DT_STRING, 0, NULL, strs);
  mil_var *c_st = add_const(b, "t_str", MIL_DT_STRING, 1, s2, strs);
  uint16_t bf[4] = {0x3F80, 0xBF80, 0x4000, 0x0000};
  mil_var *c_bf16 = add_const(b, "t_bf16", MIL_DT_BF16, 1, s4, bf);
  uint8_t f8[4] = {0x38, 0xB8, 0x40, 0x7E};
  mil_var *c_fp8 = add_const(b, "t_fp8", MIL_DT_FP8E4M3FN, 1, s4, f8);
  mil_var *c_empty = add_const(b, "t_empty", MIL_DT_FP32, 2, s03, NULL);
  uint8_t bools[3] = {1, 0, 1};
  mil_var *c_bools = add_const(b, "t_bools", MIL_DT_BOOL, 1, s3, bools);
  /* a list const (classifier labels style) */
  const mil_value *items[2] = {mil_value_new_string(p, "cat"), mil_value_new_string(p, "dog")};
  const mil_type *lt = mil_type_list(p, mil_type_scalar(p, MIL_DT_STRING), (mil_dim){2, NULL, false});
  mil_op *lop = mil_const_new(p, "labels", mil_value_new_list(p, lt, 2, items));
  mil_block_append(b, lop);

  /* an op consuming everything */
  const char *params[] = {"x",     "a",  "b",  "c",  "d",  "e",  "f",  "g",  "h",  "i",  "j",
                          "k",     "l",  "m",  "n",  "o",  "q",  "r",  "s",  "t",  "u"};
  mil_var *args[] = {x,       c_fp32, c_fp16,  c_int8, c_uint8, c_int4, c_uint1, c_uint3, c_uint6, c_int16, c_uint32,
                     c_small, c_sf,   c_sb,    c_ss,   c_st,    c_bf16, c_fp8,   c_empty, c_bools, lop->outputs[0]};
  mil_var *y = add_op(b, "test_consume", "consume", params, args, 21, x->type);

  /* iOS16-form constexpr: its params are consts named <op>_<param>_0 */
  uint8_t qd[16];
  for (int i = 0; i < 16; i++) qd[i] = (uint8_t)(i * 9);
  mil_var *q_data = add_const(b, "deq_quantized_data_0", MIL_DT_UINT8, 2, s44, qd);
  uint8_t zp = 3;
  mil_var *q_zp = add_const(b, "deq_zero_point_0", MIL_DT_UINT8, 0, NULL, &zp);
  float sc = 0.25f;
  mil_var *q_sc = add_const(b, "deq_scale_0", MIL_DT_FP32, 0, NULL, &sc);
  int32_t ax = 0;
  mil_var *q_ax = add_const(b, "deq_axis_0", MIL_DT_INT32, 0, NULL, &ax);
  const char *qp[] = {"quantized_data", "zero_point", "scale", "axis"};
  mil_var *qa[] = {q_data, q_zp, q_sc, q_ax};
  mil_var *deq = add_op(b, "constexpr_affine_dequantize", "deq", qp, qa, 4, mil_type_tensor_shape(p, MIL_DT_FP32, 2, s44));
  /* iOS18-form constexpr: value bindings become consts <op>_<param>_0 */
  int8_t bd[16];
  for (int i = 0; i < 16; i++) bd[i] = (int8_t)(i - 8);
  mil_var *bs_data = add_const(b, "bss_data_0", MIL_DT_INT8, 2, s44, bd);
  uint16_t bsc[4] = {0x3C00, 0x4000, 0x3800, 0x3400};
  int64_t s41[2] = {4, 1};
  mil_var *bs_scale = add_const(b, "bss_scale_0", MIL_DT_FP16, 2, s41, bsc);
  const char *bp[] = {"data", "scale"};
  mil_var *ba[] = {bs_data, bs_scale};
  mil_var *bss = add_op(b, "constexpr_blockwise_shift_scale", "bss", bp, ba, 2, mil_type_tensor_shape(p, MIL_DT_FP16, 2, s44));

  /* state update (written as write_state + read_state) */
  int64_t s23[2] = {2, 3};
  uint16_t sv[6] = {0x3C00, 0x3C00, 0x3C00, 0x3C00, 0x3C00, 0x3C00};
  mil_var *val = add_const(b, "state_val", MIL_DT_FP16, 2, s23, sv);
  const char *up[] = {"state", "value"};
  mil_var *ua[] = {st, val};
  mil_var *upd = add_op(b, "coreml_update_state", "coreml_update_state_0", up, ua, 2, val->type);
  upd->name = mil_program_intern(p, "upd", (size_t)-1);

  /* control flow: cond with two blocks, while_loop with block inputs */
  mil_var *pred = add_const(b, "pred", MIL_DT_BOOL, 0, NULL, &tru);
  mil_op *cond = mil_op_new(p, "cond", "c");
  mil_op_add_input(cond, "pred", pred);
  for (int k = 0; k < 2; k++) {
    mil_block *nb = mil_block_new(p, k ? "c_false" : "c_true");
    const char *pp[] = {"x"};
    mil_var *pa[] = {y};
    mil_var *r = add_op(nb, k ? "test_neg" : "test_id", k ? "neg" : "same", pp, pa, 1, y->type);
    mil_block_set_outputs(nb, 1, &r);
    mil_op_add_block(cond, nb);
  }
  mil_var *cout = mil_op_add_output(cond, "c", y->type);
  mil_block_append(b, cond);
  int32_t zero = 0;
  mil_var *i0 = add_const(b, "i0", MIL_DT_INT32, 0, NULL, &zero);
  mil_op *loop = mil_op_new(p, "while_loop", "loop");
  mil_var *lv[2] = {i0, cout};
  mil_op_add_input_tuple(loop, "loop_vars", 2, lv);
  mil_block *cb = mil_block_new(p, "loop_cond_block");
  mil_var *ci = mil_block_add_input(cb, "i0_x0", i0->type);
  mil_var *cx = mil_block_add_input(cb, "c_x0", cout->type);
  (void)cx;
  const char *lp[] = {"x"};
  mil_var *la[] = {ci};
  mil_var *lt10 = add_op(cb, "test_lt10", "lt", lp, la, 1, mil_type_scalar(p, MIL_DT_BOOL));
  mil_block_set_outputs(cb, 1, &lt10);
  mil_op_add_block(loop, cb);
  mil_block *bb = mil_block_new(p, "loop_body_block");
  mil_var *bi = mil_block_add_input(bb, "i0_x0", i0->type);
  mil_var *bx = mil_block_add_input(bb, "c_x0", cout->type);
  mil_var *ia[] = {bi};
  mil_var *inc = add_op(bb, "test_inc", "inc", lp, ia, 1, i0->type);
  mil_var *bouts[2] = {inc, bx};
  mil_block_set_outputs(bb, 2, bouts);
  mil_op_add_block(loop, bb);
  mil_var *l0 = mil_op_add_output(loop, "loop_0", i0->type);
  mil_var *l1 = mil_op_add_output(loop, "loop_1", cout->type);
  (void)l0;
  mil_block_append(b, loop);

  mil_var *outs[4] = {l1, deq, bss, upd};
  mil_block_set_outputs(b, 4, outs);

  /* buildInfo: a dict of strings */
  const mil_type *ks = mil_type_scalar(p, MIL_DT_STRING);
  const mil_value *keys[2] = {mil_value_new_string(p, "coremltools-version"), mil_value_new_string(p, "libmil-test")};
  const mil_value *vals[2] = {mil_value_new_string(p, "9.0"), mil_value_new_string(p, "yes")};
  mil_program_set_attr(p, "buildInfo", mil_value_new_dict(p, mil_type_dict(p, ks, ks), 2, keys, vals));

  if (n_functions > 1) {
    mil_function *g = mil_function_new(p, "second", "CoreML8");
    int64_t s5[1] = {5};
    mil_var *gx = mil_function_add_input(g, "a", mil_type_tensor_shape(p, MIL_DT_FP16, 1, s5));
    mil_block *gb = mil_function_body(g);
    const char *gp[] = {"x"};
    mil_var *ga[] = {gx};
    mil_var *gy = add_op(gb, "test_id", "gid", gp, ga, 1, gx->type);
    mil_block_set_outputs(gb, 1, &gy);
  }
  return p;
}

/* ------------------------------------------------------------------------ */
/* helpers                                                                    */
/* ------------------------------------------------------------------------ */

static mil_model *load_ok(const char *path) {
  mil_diag d = {0};
  mil_model *m = NULL;
  mil_status st = mil_model_load(path, &m, &d);
  if (st != MIL_OK) fprintf(stderr, "load %s: %s\n", path, mil_diag_first_error(&d) ? mil_diag_first_error(&d) : "?");
  assert_int_equal(st, MIL_OK);
  mil_diag_clear(&d);
  return m;
}

static void save_ok(mil_model *m, const char *path) {
  mil_diag d = {0};
  mil_status st = mil_model_save(m, path, &d);
  if (st != MIL_OK) fprintf(stderr, "save %s: %s\n", path, mil_diag_first_error(&d) ? mil_diag_first_error(&d) : "?");
  assert_int_equal(st, MIL_OK);
  mil_diag_clear(&d);
}

static const mil_var *find_var(const mil_program *p, const char *fn, const char *name) {
  const mil_block *b = mil_function_body(mil_program_find_function(p, fn));
  for (const mil_op *op = b->first; op; op = op->next)
    for (int32_t i = 0; i < op->n_outputs; i++)
      if (!strcmp(op->outputs[i]->name, name)) return op->outputs[i];
  return NULL;
}

static const mil_op *find_op(const mil_program *p, const char *name) {
  const mil_block *b = mil_function_body(mil_program_find_function(p, "main"));
  for (const mil_op *op = b->first; op; op = op->next)
    if (!strcmp(op->name, name)) return op;
  return NULL;
}

/* ------------------------------------------------------------------------ */
/* tests                                                                      */
/* ------------------------------------------------------------------------ */

static void test_versions(void **state) {
  (void)state;
  assert_string_equal(mil_opset_for_spec_version(6), "CoreML5");
  assert_string_equal(mil_opset_for_spec_version(10), "CoreML9");
  assert_null(mil_opset_for_spec_version(5));
  assert_int_equal(mil_spec_version_for_opset("CoreML7"), 8);
  assert_int_equal(mil_spec_version_for_opset("CoreML4"), 0);
}

/* Everything survives .mlpackage -> load, and a second round trip is identical. */
static void test_rich_package_roundtrip(void **state) {
  (void)state;
  char *dir = mt_tempdir();
  char *pkg = mt_path(dir, "rich.mlpackage"), *pkg2 = mt_path(dir, "rich2.mlpackage");
  mil_model *m = NULL;
  mil_diag d = {0};
  assert_int_equal(mil_model_from_program(build_rich(2), 9, &m, &d), MIL_OK);
  save_ok(m, pkg);
  mil_model *a = load_ok(pkg);
  const mil_program *p = mil_model_program(a);
  assert_int_equal(mil_model_spec_version(a), 9);
  assert_int_equal(p->n_functions, 2);

  /* blob consts come back as views of weight.bin, small ones inline */
  const char *blobbed[] = {"w_fp32", "w_fp16", "w_int8", "w_uint8", "w_int4", "w_uint1", "w_uint3", "w_uint6",
                           "w_int16", "w_uint32"};
  for (size_t i = 0; i < sizeof blobbed / sizeof *blobbed; i++) {
    const mil_var *v = find_var(p, "main", blobbed[i]);
    assert_non_null(v);
    assert_non_null(v->val);
    assert_non_null(v->val->blob_file);
    assert_string_equal(v->val->blob_file, "@model_path/weights/weight.bin");
    assert_int_equal(v->val->blob_offset % 64, 0);
  }
  assert_null(find_var(p, "main", "small_i32")->val->blob_file);
  assert_memory_equal(mil_value_data(find_var(p, "main", "w_int4")->val), k_int4_packed, 5);
  for (int i = 0; i < 10; i++) assert_int_equal(mil_value_get_i64(find_var(p, "main", "w_int4")->val, i), k_int4[i]);
  assert_int_equal(mil_value_get_i64(find_var(p, "main", "w_uint6")->val, 3), 40);
  assert_int_equal(mil_value_get_i64(find_var(p, "main", "w_uint3")->val, 6), 7);
  assert_int_equal(mil_value_get_i64(find_var(p, "main", "w_uint32")->val, 9), 0xFFFFFFFFll);
  assert_int_equal(mil_value_get_i64(find_var(p, "main", "w_int16")->val, 0), -300);
  assert_true(find_var(p, "main", "s_fp32")->type->is_scalar);
  assert_true(mil_value_get_f64(find_var(p, "main", "s_fp32")->val, 0) == (double)0.1f);
  assert_string_equal(mil_value_get_str(find_var(p, "main", "s_str")->val, 0), "valid");
  assert_string_equal(mil_value_get_str(find_var(p, "main", "t_str")->val, 1), "bc");
  assert_int_equal(find_var(p, "main", "t_bf16")->type->dtype, MIL_DT_BF16);
  assert_int_equal(((const uint16_t *)mil_value_data(find_var(p, "main", "t_bf16")->val))[1], 0xBF80);
  assert_int_equal(((const uint8_t *)mil_value_data(find_var(p, "main", "t_fp8")->val))[3], 0x7E);
  assert_int_equal(find_var(p, "main", "t_empty")->val->numel, 0);
  assert_int_equal(find_var(p, "main", "labels")->val->kind, MIL_VAL_LIST);
  assert_string_equal(mil_value_get_str(find_var(p, "main", "labels")->val->items[1], 0), "dog");
  /* iOS16 constexpr params were attributes on disk and are consts again */
  const mil_op *deq = find_op(p, "deq");
  assert_non_null(deq);
  assert_int_equal(deq->n_inputs, 4);
  assert_string_equal(mil_op_input_var(deq, "scale")->name, "deq_scale_0");
  assert_string_equal(mil_op_input_var(deq, "quantized_data")->name, "deq_quantized_data_0");
  /* iOS18 constexpr value bindings likewise */
  assert_string_equal(mil_op_input_var(find_op(p, "bss"), "scale")->name, "bss_scale_0");
  /* write_state + read_state -> coreml_update_state */
  const mil_op *u = find_op(p, "coreml_update_state_0");
  assert_non_null(u);
  assert_string_equal(u->type, "coreml_update_state");
  assert_string_equal(u->outputs[0]->name, "upd");
  /* nested blocks and block inputs */
  const mil_op *loop = find_op(p, "loop");
  assert_int_equal(loop->n_blocks, 2);
  assert_true(loop->inputs[0].is_tuple);
  assert_int_equal(loop->blocks[1]->n_inputs, 2);
  assert_string_equal(loop->blocks[1]->inputs[1]->name, "c_x0");
  /* symbolic input dims get fresh "is<N>" symbols */
  const mil_var *x = mil_program_find_function(p, "main")->inputs[0];
  assert_true(x->type->dims[1].size < 0);
  assert_non_null(x->type->dims[1].sym);
  assert_memory_equal(x->type->dims[1].sym, "is", 2);
  assert_int_equal(mil_program_find_function(p, "main")->inputs[1]->type->kind, MIL_TYPE_STATE);
  assert_int_equal(p->n_attrs, 1);
  assert_int_equal(p->attrs[0].value->kind, MIL_VAL_DICT);

  /* the multi-function description */
  const mil_model_desc *md = mil_model_description(a);
  assert_true(md->multi_function);
  assert_string_equal(md->default_function_name, "main");
  assert_int_equal(md->n_functions, 2);
  const mil_function_desc *fd = mil_model_function_desc(a, "main");
  assert_int_equal(fd->n_inputs, 1);
  assert_int_equal(fd->n_states, 1);
  assert_int_equal(fd->states[0].array_dtype, MIL_ARRAY_FLOAT16);
  assert_int_equal(fd->inputs[0].n_ranges, 3);
  assert_int_equal(fd->inputs[0].ranges[1].lower, 1);
  assert_int_equal(fd->inputs[0].ranges[1].upper, 2);
  assert_int_equal(fd->inputs[0].shape.dims[1], 1);

  /* second round trip: identical program, description and weight file */
  save_ok(a, pkg2);
  mil_model *b = load_ok(pkg2);
  mt_err e = {{0}};
  if (!mt_program_eq(mil_model_program(a), mil_model_program(b), &e)) fail_msg("%s", e.msg);
  if (!mt_desc_eq(mil_model_description(a), mil_model_description(b), &e)) fail_msg("%s", e.msg);
  char *w1 = mt_path(pkg, "Data/com.apple.CoreML/weights/weight.bin");
  char *w2 = mt_path(pkg2, "Data/com.apple.CoreML/weights/weight.bin");
  size_t n1, n2;
  unsigned char *b1 = mt_read(w1, &n1), *b2 = mt_read(w2, &n2);
  assert_int_equal(n1, n2);
  assert_memory_equal(b1, b2, n1);
  free(b1), free(b2), free(w1), free(w2);
  mil_model_free(a);
  mil_model_free(b);
  mil_model_free(m);
  mil_diag_clear(&d);
  mt_rm_rf(dir);
  free(pkg), free(pkg2), free(dir);
}

/* Below spec 9, int16/uint32 consts stay immediate; int64 and fp64 consts
 * come back narrowed (as coremltools' const op does); rank 0 is a scalar. */
static void test_immediate_rules_and_narrowing(void **state) {
  (void)state;
  char *dir = mt_tempdir();
  char *pkg = mt_path(dir, "n.mlpackage");
  mil_program *p = mil_program_new(NULL);
  mil_function *f = mil_function_new(p, "main", "CoreML7");
  int64_t s2[1] = {2}, s10[1] = {10};
  mil_var *x = mil_function_add_input(f, "x", mil_type_tensor_shape(p, MIL_DT_FP32, 1, s2));
  mil_block *b = mil_function_body(f);
  int16_t i16[10] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
  mil_var *c16 = add_const(b, "i16", MIL_DT_INT16, 1, s10, i16);
  int64_t i64[2] = {5000000000ll, -7};
  mil_var *c64 = add_const(b, "i64", MIL_DT_INT64, 1, s2, i64);
  double f64[2] = {0.1, -2.5};
  mil_var *cf64 = add_const(b, "f64", MIL_DT_FP64, 1, s2, f64);
  mil_value *r0 = mil_value_new_tensor(p, MIL_DT_INT32, 0, NULL, false, NULL);
  mil_value_set_i64(r0, 0, 42);
  mil_op *r0op = mil_const_new(p, "r0", r0);
  mil_block_append(b, r0op);
  const char *params[] = {"x", "a", "b", "c", "d"};
  mil_var *args[] = {x, c16, c64, cf64, r0op->outputs[0]};
  mil_var *y = add_op(b, "test_consume", "y", params, args, 5, x->type);
  mil_block_set_outputs(b, 1, &y);
  mil_model *m = NULL;
  mil_diag d = {0};
  assert_int_equal(mil_model_from_program(p, 0, &m, &d), MIL_OK);
  assert_int_equal(mil_model_spec_version(m), 8);
  save_ok(m, pkg);
  mil_model *a = load_ok(pkg);
  const mil_program *q = mil_model_program(a);
  assert_null(find_var(q, "main", "i16")->val->blob_file);
  const mil_var *n64 = find_var(q, "main", "i64");
  assert_int_equal(n64->type->dtype, MIL_DT_INT32);
  assert_int_equal(mil_value_get_i64(n64->val, 0), INT32_MAX);
  assert_int_equal(mil_value_get_i64(n64->val, 1), -7);
  const mil_var *nf = find_var(q, "main", "f64");
  assert_int_equal(nf->type->dtype, MIL_DT_FP32);
  assert_true(mil_value_get_f64(nf->val, 0) == (double)0.1f);
  assert_true(find_var(q, "main", "r0")->type->is_scalar);
  /* the single-function description of main */
  const mil_model_desc *md = mil_model_description(a);
  assert_false(md->multi_function);
  assert_int_equal(md->functions[0].n_inputs, 1);
  assert_int_equal(md->functions[0].inputs[0].array_dtype, MIL_ARRAY_FLOAT32);
  assert_int_equal(md->functions[0].outputs[0].shape.rank, 1);
  assert_int_equal(md->functions[0].outputs[0].shape.dims[0], 2);
  mil_model_free(a);
  mil_model_free(m);
  mil_diag_clear(&d);
  mt_rm_rf(dir);
  free(pkg), free(dir);
}

/* .mlmodel: weights go to weights/r.<hex>.bin next to it; reading finds them. */
static void test_mlmodel_with_weights(void **state) {
  (void)state;
  char *dir = mt_tempdir();
  char *pkg = mt_path(dir, "r.mlpackage"), *mm = mt_path(dir, "r.mlmodel"), *wb = NULL;
  mil_model *m = NULL;
  mil_diag d = {0};
  assert_int_equal(mil_model_from_program(build_rich(1), 9, &m, &d), MIL_OK);
  save_ok(m, pkg);
  mil_model *a = load_ok(pkg);
  save_ok(a, mm);
  assert_non_null(wb = mt_mlmodel_weights(dir, "r"));
  mil_model *b = load_ok(mm);
  mt_err e = {{0}};
  if (!mt_program_eq(mil_model_program(a), mil_model_program(b), &e)) fail_msg("%s", e.msg);
  if (!mt_desc_eq(mil_model_description(a), mil_model_description(b), &e)) fail_msg("%s", e.msg);
  /* the same weight file as inside the package */
  char *pw = mt_path(pkg, "Data/com.apple.CoreML/weights/weight.bin");
  size_t n1, n2;
  unsigned char *b1 = mt_read(pw, &n1), *b2 = mt_read(wb, &n2);
  assert_int_equal(n1, n2);
  assert_memory_equal(b1, b2, n1);
  free(b1), free(b2), free(pw);
  /* without the weights directory the blob references cannot resolve */
  char *wdir = mt_path(dir, "weights");
  mt_rm_rf(wdir);
  free(wdir);
  mil_model *c = NULL;
  mil_diag_clear(&d);
  assert_int_equal(mil_model_load(mm, &c, &d), MIL_ERR_FORMAT);
  assert_non_null(strstr(mil_diag_first_error(&d), "weights"));
  mil_model_free(a);
  mil_model_free(b);
  mil_model_free(m);
  mil_diag_clear(&d);
  mt_rm_rf(dir);
  free(pkg), free(mm), free(wb), free(dir);
}

/* A model whose consts are all small needs no weights directory. */
static void test_mlmodel_all_immediate(void **state) {
  (void)state;
  char *dir = mt_tempdir();
  char *mm = mt_path(dir, "s.mlmodel");
  mil_program *p = mil_program_new(NULL);
  mil_function *f = mil_function_new(p, "main", "CoreML6");
  int64_t s3[1] = {3};
  mil_var *x = mil_function_add_input(f, "x", mil_type_tensor_shape(p, MIL_DT_FP16, 1, s3));
  mil_block *b = mil_function_body(f);
  uint16_t h[3] = {0x3C00, 0x4000, 0x4200};
  mil_var *c = add_const(b, "c", MIL_DT_FP16, 1, s3, h);
  const char *pp[] = {"x", "y"};
  mil_var *pa[] = {x, c};
  mil_var *y = add_op(b, "test_add", "y", pp, pa, 2, x->type);
  mil_block_set_outputs(b, 1, &y);
  mil_model *m = NULL;
  mil_diag d = {0};
  assert_int_equal(mil_model_from_program(p, 7, &m, &d), MIL_OK);
  save_ok(m, mm);
  char *wd = mt_path(dir, "weights");
  assert_false(mt_exists(wd));
  mil_model *a = load_ok(mm);
  assert_int_equal(mil_model_function_desc(a, NULL)->inputs[0].array_dtype, MIL_ARRAY_FLOAT16);
  assert_memory_equal(mil_value_data(find_var(mil_model_program(a), "main", "c")->val), h, 6);
  mil_model_free(a);
  mil_model_free(m);
  mil_diag_clear(&d);
  mt_rm_rf(dir);
  free(wd), free(mm), free(dir);
}

/* .mil text: save and load back. */
static void test_mil_text_roundtrip(void **state) {
  (void)state;
  char *dir = mt_tempdir();
  char *pkg = mt_path(dir, "t.mlpackage"), *mil = mt_path(dir, "t.mil"), *pkg2 = mt_path(dir, "t2.mlpackage");
  mil_program *p = mil_program_new(NULL);
  mil_function *f = mil_function_new(p, "main", "CoreML7");
  int64_t s4[2] = {2, 6};
  mil_var *x = mil_function_add_input(f, "x", mil_type_tensor_shape(p, MIL_DT_FP32, 2, s4));
  mil_block *b = mil_function_body(f);
  float w[12];
  for (int i = 0; i < 12; i++) w[i] = (float)i / 8.0f;
  mil_var *c = add_const(b, "w", MIL_DT_FP32, 2, s4, w);
  const char *pp[] = {"x", "y"};
  mil_var *pa[] = {x, c};
  mil_var *y = add_op(b, "add", "y", pp, pa, 2, x->type);
  mil_block_set_outputs(b, 1, &y);
  mil_model *m = NULL;
  mil_diag d = {0};
  assert_int_equal(mil_model_from_program(p, 0, &m, &d), MIL_OK);
  save_ok(m, pkg);
  mil_model *a = load_ok(pkg);
  save_ok(a, mil);
  mil_model *t = load_ok(mil);
  assert_int_equal(mil_model_spec_version(t), 8);
  const mil_var *tw = find_var(mil_model_program(t), "main", "w");
  assert_non_null(tw);
  assert_memory_equal(mil_value_data(tw->val), w, sizeof w);
  /* and from text to a package again */
  save_ok(t, pkg2);
  mil_model *a2 = load_ok(pkg2);
  mt_err e = {{0}};
  if (!mt_desc_eq(mil_model_description(a), mil_model_description(a2), &e)) fail_msg("%s", e.msg);
  assert_memory_equal(mil_value_data(find_var(mil_model_program(a2), "main", "w")->val), w, sizeof w);
  mil_model_free(a2);
  mil_model_free(t);
  mil_model_free(a);
  mil_model_free(m);
  mil_diag_clear(&d);
  mt_rm_rf(dir);
  free(pkg), free(pkg2), free(mil), free(dir);
}

/* Description synthesis follows coremltools' exporter. */
static void test_description_synthesis(void **state) {
  (void)state;
  mil_program *p = mil_program_new(NULL);
  mil_function *f = mil_function_new(p, "main", "CoreML5");
  mil_var *s = mil_function_add_input(f, "s", mil_type_scalar(p, MIL_DT_INT32));
  mil_dim dims[2] = {mil_dim_new_symbol(p), {7, NULL, false}};
  mil_var *x = mil_function_add_input(f, "x", mil_type_tensor(p, MIL_DT_FP32, 2, dims));
  mil_block *b = mil_function_body(f);
  const char *pp[] = {"x", "s"};
  mil_var *pa[] = {x, s};
  mil_var *y = add_op(b, "test_op", "y", pp, pa, 2, x->type);
  mil_var *outs[2] = {y, s};
  mil_block_set_outputs(b, 2, outs);
  mil_model *m = NULL;
  mil_diag d = {0};
  assert_int_equal(mil_model_from_program(p, 6, &m, &d), MIL_OK);
  const mil_function_desc *fd = mil_model_function_desc(m, NULL);
  assert_non_null(fd);
  assert_int_equal(fd->n_inputs, 2);
  assert_int_equal(fd->inputs[0].array_dtype, MIL_ARRAY_INT32);
  assert_int_equal(fd->inputs[0].shape.rank, 1);
  assert_int_equal(fd->inputs[0].shape.dims[0], 1);
  assert_int_equal(fd->inputs[1].shape.rank, 2);
  assert_int_equal(fd->inputs[1].shape.dims[0], 1);
  assert_int_equal(fd->inputs[1].shape.dims[1], 7);
  assert_int_equal(fd->inputs[1].n_ranges, 2);
  assert_int_equal(fd->inputs[1].ranges[0].upper, 2);
  assert_int_equal(fd->inputs[1].ranges[1].lower, 7);
  assert_int_equal(fd->inputs[1].ranges[1].upper, 7);
  /* outputs with symbolic shapes, and scalars, have no shape */
  assert_int_equal(fd->outputs[0].shape.rank, 0);
  assert_int_equal(fd->outputs[1].shape.rank, 0);
  /* metadata survives re-synthesis */
  assert_int_equal(mil_model_set_metadata(m, "com.example.k", "v1"), MIL_OK);
  assert_int_equal(mil_model_sync_description(m, &d), MIL_OK);
  assert_string_equal(mil_model_metadata(m, "com.example.k"), "v1");
  mil_model_free(m);

  /* an int64 input cannot be described */
  p = mil_program_new(NULL);
  f = mil_function_new(p, "main", "CoreML7");
  int64_t s1[1] = {1};
  x = mil_function_add_input(f, "ids", mil_type_tensor_shape(p, MIL_DT_INT64, 1, s1));
  b = mil_function_body(f);
  mil_block_set_outputs(b, 1, &x);
  mil_diag_clear(&d);
  assert_int_equal(mil_model_from_program(p, 0, &m, &d), MIL_ERR_UNSUPPORTED);
  assert_non_null(strstr(mil_diag_first_error(&d), "int64"));
  mil_diag_clear(&d);
}

/* Saving is atomic: a failed save leaves the old package and no debris. */
static void test_atomic_save(void **state) {
  (void)state;
  char *dir = mt_tempdir();
  char *pkg = mt_path(dir, "a.mlpackage");
  mil_model *m = NULL;
  mil_diag d = {0};
  assert_int_equal(mil_model_from_program(build_rich(1), 9, &m, &d), MIL_OK);
  save_ok(m, pkg);
  char *man = mt_path(pkg, "Manifest.json");
  size_t n0;
  unsigned char *before = mt_read(man, &n0);
  assert_int_equal(mt_count_entries(dir), 1);
  /* a const of a dtype the format cannot hold makes the save fail midway */
  mil_program *p = mil_model_program(m);
  mil_block *b = mil_function_body(mil_program_find_function(p, "main"));
  int64_t s2[1] = {2};
  add_const(b, "bad", MIL_DT_COMPLEX64, 1, s2, NULL);
  assert_int_not_equal(mil_model_save(m, pkg, &d), MIL_OK);
  assert_non_null(mil_diag_first_error(&d));
  size_t n1;
  unsigned char *after = mt_read(man, &n1);
  assert_int_equal(n0, n1);
  assert_memory_equal(before, after, n0);
  assert_int_equal(mt_count_entries(dir), 1); /* no temporary left behind */
  /* saving over the package a model was loaded from works (views stay valid) */
  mil_model *a = load_ok(pkg);
  save_ok(a, pkg);
  save_ok(a, pkg);
  mil_model *c = load_ok(pkg);
  mt_err e = {{0}};
  if (!mt_program_eq(mil_model_program(a), mil_model_program(c), &e)) fail_msg("%s", e.msg);
  assert_int_equal(mt_count_entries(dir), 1);
  /* refusing to replace something that is not a package */
  char *other = mt_path(dir, "x.mlpackage");
  assert_true(mt_write(other, "hello", 5));
  mil_diag_clear(&d);
  assert_int_equal(mil_model_save(a, other, &d), MIL_ERR_IO);
  size_t n2;
  unsigned char *still = mt_read(other, &n2);
  assert_int_equal(n2, 5);
  free(still);
  /* unknown extension */
  char *bad = mt_path(dir, "x.onnx");
  assert_int_equal(mil_model_save(a, bad, &d), MIL_ERR_UNSUPPORTED);
  mil_model_free(c);
  mil_model_free(a);
  mil_model_free(m);
  mil_diag_clear(&d);
  free(before), free(after), free(man), free(other), free(bad);
  mt_rm_rf(dir);
  free(pkg), free(dir);
}

/* Hand-built protobuf (not produced by libmil's writer): unpacked repeated
 * fields, ints for int8, longInts for int32, floats for fp16. */
static void test_reader_accepts_variants(void **state) {
  (void)state;
  /* Model { specificationVersion: 7, mlProgram { version 1, functions { "main": {
   *   inputs: [], opset "CoreML6", block_specializations { "CoreML6": { outputs ["c"],
   *   operations [ const c ] } } } } } } built from raw bytes */
  static const uint8_t val_unpacked_floats[] = {
      /* Value.type = tensorType{dataType FLOAT32, rank 1, dims [constant 2]} */
      0x12, 0x0c, 0x0a, 0x0a, 0x08, 0x0b, 0x10, 0x01, 0x1a, 0x04, 0x0a, 0x02, 0x08, 0x02,
      /* immediateValue.tensor.floats with two unpacked floats 1.5, -2.0 */
      0x1a, 0x0e, 0x0a, 0x0c, 0x0a, 0x0a, 0x0d, 0x00, 0x00, 0xc0, 0x3f, 0x0d, 0x00, 0x00, 0x00, 0xc0};
  Milproto__Value *v = milproto__value__unpack(NULL, sizeof val_unpacked_floats, val_unpacked_floats);
  assert_non_null(v);
  assert_int_equal(v->immediatevalue->tensor->floats->n_values, 2);
  milproto__value__free_unpacked(v, NULL);

  /* now a full model around such values, through mil_model_load_proto */
  Milproto__Program prog = MILPROTO__PROGRAM__INIT;
  prog.version = 1;
  Milproto__Function fn = MILPROTO__FUNCTION__INIT;
  fn.opset = "CoreML6";
  Milproto__Block blk = MILPROTO__BLOCK__INIT;
  char *outs[1] = {"c8"};
  blk.n_outputs = 1;
  blk.outputs = outs;
  /* const c8: int8 [3] given as ints */
  Milproto__TensorType tt = MILPROTO__TENSOR_TYPE__INIT;
  tt.datatype = MILPROTO__DATA_TYPE__INT8;
  tt.rank = 1;
  Milproto__Dimension dim = MILPROTO__DIMENSION__INIT;
  Milproto__Dimension__ConstantDimension cd = MILPROTO__DIMENSION__CONSTANT_DIMENSION__INIT;
  cd.size = 3;
  dim.dimension_case = MILPROTO__DIMENSION__DIMENSION_CONSTANT;
  dim.constant = &cd;
  Milproto__Dimension *dims[1] = {&dim};
  tt.n_dimensions = 1;
  tt.dimensions = dims;
  Milproto__ValueType vt = MILPROTO__VALUE_TYPE__INIT;
  vt.type_case = MILPROTO__VALUE_TYPE__TYPE_TENSOR_TYPE;
  vt.tensortype = &tt;
  int32_t ints[3] = {-5, 0, 127};
  Milproto__TensorValue__RepeatedInts ri = MILPROTO__TENSOR_VALUE__REPEATED_INTS__INIT;
  ri.n_values = 3;
  ri.values = ints;
  Milproto__TensorValue tv = MILPROTO__TENSOR_VALUE__INIT;
  tv.value_case = MILPROTO__TENSOR_VALUE__VALUE_INTS;
  tv.ints = &ri;
  Milproto__Value__ImmediateValue iv = MILPROTO__VALUE__IMMEDIATE_VALUE__INIT;
  iv.value_case = MILPROTO__VALUE__IMMEDIATE_VALUE__VALUE_TENSOR;
  iv.tensor = &tv;
  Milproto__Value val = MILPROTO__VALUE__INIT;
  val.type = &vt;
  val.value_case = MILPROTO__VALUE__VALUE_IMMEDIATE_VALUE;
  val.immediatevalue = &iv;
  Milproto__Operation__AttributesEntry a_val = MILPROTO__OPERATION__ATTRIBUTES_ENTRY__INIT;
  a_val.key = "val";
  a_val.value = &val;
  Milproto__Operation__AttributesEntry *attrs[1] = {&a_val};
  Milproto__NamedValueType nvt = MILPROTO__NAMED_VALUE_TYPE__INIT;
  nvt.name = "c8";
  nvt.type = &vt;
  Milproto__NamedValueType *onv[1] = {&nvt};
  Milproto__Operation op = MILPROTO__OPERATION__INIT;
  op.type = "const";
  op.n_attributes = 1; /* no "name": an automatic name is given */
  op.attributes = attrs;
  op.n_outputs = 1;
  op.outputs = onv;
  Milproto__Operation *ops[1] = {&op};
  blk.n_operations = 1;
  blk.operations = ops;
  Milproto__Function__BlockSpecializationsEntry bse = MILPROTO__FUNCTION__BLOCK_SPECIALIZATIONS_ENTRY__INIT;
  bse.key = "CoreML6";
  bse.value = &blk;
  Milproto__Function__BlockSpecializationsEntry *bses[1] = {&bse};
  fn.n_block_specializations = 1;
  fn.block_specializations = bses;
  Milproto__Program__FunctionsEntry fe = MILPROTO__PROGRAM__FUNCTIONS_ENTRY__INIT;
  fe.key = "main";
  fe.value = &fn;
  Milproto__Program__FunctionsEntry *fes[1] = {&fe};
  prog.n_functions = 1;
  prog.functions = fes;
  Coreml__Model model = COREML__MODEL__INIT;
  model.specificationversion = 7;
  model.type_case = COREML__MODEL__TYPE_ML_PROGRAM;
  model.mlprogram = &prog;
  size_t n = coreml__model__get_packed_size(&model);
  uint8_t *buf = malloc(n);
  coreml__model__pack(&model, buf);
  mil_model *m = NULL;
  mil_diag d = {0};
  mil_status st = mil_model_load_proto(buf, n, "hand.mlmodel", NULL, &m, &d);
  if (st) fprintf(stderr, "%s\n", mil_diag_first_error(&d));
  assert_int_equal(st, MIL_OK);
  const mil_var *c8 = find_var(mil_model_program(m), "main", "c8");
  assert_non_null(c8);
  assert_string_equal(c8->op->name, "const_0");
  assert_int_equal(c8->type->dtype, MIL_DT_INT8);
  assert_int_equal(mil_value_get_i64(c8->val, 0), -5);
  assert_int_equal(mil_value_get_i64(c8->val, 2), 127);
  mil_model_free(m);
  /* an int8 element out of range is an error naming the element */
  ints[2] = 300;
  n = coreml__model__get_packed_size(&model);
  buf = realloc(buf, n);
  coreml__model__pack(&model, buf);
  mil_diag_clear(&d);
  assert_int_equal(mil_model_load_proto(buf, n, "hand.mlmodel", NULL, &m, &d), MIL_ERR_FORMAT);
  assert_non_null(strstr(mil_diag_first_error(&d), "outside the range of int8"));
  /* longInts for an int32 tensor, floats for fp16 */
  ints[2] = 1;
  tt.datatype = MILPROTO__DATA_TYPE__FLOAT16;
  float fl[3] = {1.0f, -2.0f, 0.5f};
  Milproto__TensorValue__RepeatedFloats rf = MILPROTO__TENSOR_VALUE__REPEATED_FLOATS__INIT;
  rf.n_values = 3;
  rf.values = fl;
  tv.value_case = MILPROTO__TENSOR_VALUE__VALUE_FLOATS;
  tv.floats = &rf;
  n = coreml__model__get_packed_size(&model);
  buf = realloc(buf, n);
  coreml__model__pack(&model, buf);
  mil_diag_clear(&d);
  assert_int_equal(mil_model_load_proto(buf, n, "hand.mlmodel", NULL, &m, &d), MIL_OK);
  c8 = find_var(mil_model_program(m), "main", "c8");
  assert_int_equal(((const uint16_t *)mil_value_data(c8->val))[1], 0xC000); /* -2.0 in binary16 */
  assert_int_equal(((const uint16_t *)mil_value_data(c8->val))[2], 0x3800); /* 0.5 */
  mil_model_free(m);
  free(buf);
  mil_diag_clear(&d);
}

/* An int8 function input is described as an INT8 array, which needs
 * specification version 10: saving a version-9 model raises its version
 * so that the written model loads back. */
static void test_int8_input_raises_spec(void **state) {
  (void)state;
  const char *text = "main[CoreML8](%x: (2, int8)(Tensor)) {\n"
                     "  block0() {\n"
                     "    %y: (2, int8)(Tensor) = identity(x=%x, name=\"y\")\n"
                     "  } -> (%y)\n"
                     "}\n";
  mil_program *p = NULL;
  mil_diag d = {0};
  assert_int_equal(mil_parse_program(text, strlen(text), NULL, &p, &d), MIL_OK);
  mil_model *m = NULL;
  assert_int_equal(mil_model_from_program(p, 9, &m, &d), MIL_OK);
  void *buf = NULL;
  size_t n = 0;
  assert_int_equal(mil_model_serialize(m, NULL, &buf, &n, &d), MIL_OK);
  mil_model *again = NULL;
  mil_status st = mil_model_load_proto(buf, n, "int8.mlmodel", NULL, &again, &d);
  if (st != MIL_OK) fail_msg("reload: %s", mil_diag_first_error(&d));
  assert_int_equal(mil_model_spec_version(again), 10);
  mil_model_free(again);
  free(buf);
  mil_model_free(m);
  mil_diag_clear(&d);
}

/* A function with no outputs (a protobuf model may carry one when it has no
 * description) is never written: Core ML requires an output, and the written
 * model could not be read back (found by fuzz_proto). */
static void test_no_outputs_not_written(void **state) {
  (void)state;
  const char *t = "program(1.0)\n[buildInfo = dict<string, string>({})]\n{\n"
                  "  func main<ios16>(tensor<fp32, [2]> x) {\n"
                  "      tensor<fp32, [2]> y = relu(x = x)[name = string(\"y\")];\n"
                  "  } -> ();\n}\n";
  mil_program *p = NULL;
  mil_diag d = {0};
  if (mil_parse_program(t, strlen(t), NULL, &p, &d) != MIL_OK) {
    /* the complete form: fall back to the coremltools form */
    mil_diag_clear(&d);
    const char *u = "main[CoreML6](%x: (2, fp32)(Tensor)) {\n  block0() {\n"
                    "    %y: (2, fp32)(Tensor) = relu(x=%x, name=\"y\")\n  } -> ()\n}\n";
    assert_int_equal(mil_parse_program(u, strlen(u), NULL, &p, &d), MIL_OK);
  }
  mil_model *m = NULL;
  mil_status st = mil_model_from_program(p, 0, &m, &d);
  if (st == MIL_OK) {
    void *out = NULL;
    size_t len = 0;
    st = mil_model_serialize(m, NULL, &out, &len, &d);
    free(out);
    mil_model_free(m);
  }
  assert_int_not_equal(st, MIL_OK);
  assert_non_null(strstr(mil_diag_first_error(&d), "has no outputs"));
  mil_diag_clear(&d);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_versions),
      cmocka_unit_test(test_rich_package_roundtrip),
      cmocka_unit_test(test_immediate_rules_and_narrowing),
      cmocka_unit_test(test_mlmodel_with_weights),
      cmocka_unit_test(test_mlmodel_all_immediate),
      cmocka_unit_test(test_mil_text_roundtrip),
      cmocka_unit_test(test_description_synthesis),
      cmocka_unit_test(test_atomic_save),
      cmocka_unit_test(test_reader_accepts_variants),
      cmocka_unit_test(test_int8_input_raises_spec),
      cmocka_unit_test(test_no_outputs_not_written),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
