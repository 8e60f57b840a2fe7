/* Unit tests of the op families conv (conv, conv_quantized,
 * conv_transpose), pool, linear (linear, matmul, einsum) and normalization:
 * for every variant an accepted case with its exact inferred type and a
 * rejected case with its message, value inference against values worked
 * out by hand, and the default inputs coremltools materializes. The other
 * families of this group are in test_ops_b_more.c, the corpus sweep in
 * test_ops_b_corpus.c. */
#include "ops_b_builder.h"

/* ------------------------------------------------------------------ */
/* conv family                                                         */
/* ------------------------------------------------------------------ */

static void test_conv(void **state) {
  (void)state;
  T t;
  t_init(&t, MIL_IOS15);
  mil_var *x = inp(&t, "x", MIL_DT_FP32, "1,3,32,32");
  mil_var *w = cf(&t, MIL_DT_FP32, "8,3,3,3", NULL);
  ok(&t, op(&t, "conv", "x", x, "weight", w, NULL), "(1, 8, 30, 30, fp32)");
  /* same padding, stride 2: ceil(7 / 2) */
  mil_var *x7 = inp(&t, "x7", MIL_DT_FP32, "1,3,7,7");
  mil_var *w4 = cf(&t, MIL_DT_FP32, "4,3,3,3", NULL);
  ok(&t, op(&t, "conv", "x", x7, "weight", w4, "strides", cint(&t, "2,2"), "pad_type", cstr(&t, "same"), NULL),
     "(1, 4, 4, 4, fp32)");
  /* custom pad, dilation, groups: (10+2-5)/1+1 = 8, (10+4-3)+1 = 12 */
  mil_var *x10 = inp(&t, "x10", MIL_DT_FP32, "1,2,10,10");
  mil_var *wg = cf(&t, MIL_DT_FP32, "6,1,3,3", NULL);
  ok(&t,
     op(&t, "conv", "x", x10, "weight", wg, "pad_type", cstr(&t, "custom"), "pad", cint(&t, "1,1,2,2"), "dilations",
        cint(&t, "2,1"), "groups", cint1(&t, 2), NULL),
     "(1, 6, 8, 12, fp32)");
  /* 1-D: floor((10-3)/3)+1 = 3 */
  ok(&t, op(&t, "conv", "x", inp(&t, "x1", MIL_DT_FP32, "2,4,10"), "weight", cf(&t, MIL_DT_FP32, "5,4,3", NULL),
            "strides", cint(&t, "3"), NULL),
     "(2, 5, 3, fp32)");
  /* symbolic batch propagates, symbolic spatial dim becomes a fresh symbol */
  mil_op *cs = op(&t, "conv", "x", inp(&t, "xs", MIL_DT_FP32, "batch,3,h,16"), "weight", w, NULL);
  assert_int_equal(mil_op_infer(cs, &t.d), MIL_OK);
  const mil_type *ot = cs->outputs[0]->type;
  assert_string_equal(ot->dims[0].sym, "batch");
  assert_true(sym(ot, 2));
  assert_string_not_equal(ot->dims[2].sym, "h");
  assert_int_equal(ot->dims[3].size, 14);
  /* rejections */
  rejects(&t, op(&t, "conv", "x", x, "weight", cf(&t, MIL_DT_FP32, "8,3,3", NULL), NULL), "must be rank 4 like x");
  rejects(&t, op(&t, "conv", "x", x, "weight", w, "groups", cint1(&t, 2), NULL), "not divisible by groups 2");
  rejects(&t, op(&t, "conv", "x", x, "weight", w, "bias", cf(&t, MIL_DT_FP32, "7", NULL), NULL),
          "input 'bias' must have one value per output channel");
  rejects(&t, op(&t, "conv", "x", x, "weight", w, "pad_type", cstr(&t, "same_lower"), NULL),
          "\"same_lower\" is not supported by the iOS15 opset");
  rejects(&t, op(&t, "conv", "x", x, "weight", inp(&t, "wdyn", MIL_DT_FP32, "8,3,3,3"), "dilations", cint(&t, "2,2"), NULL),
          "does not support dilations");
  rejects(&t, op(&t, "conv", "x", x, "weight", cf(&t, MIL_DT_FP16, "8,3,3,3", NULL), NULL),
          "must have the same dtype as 'x'");
  rejects(&t, op(&t, "conv", "x", x, "weight", w, "strides", cint(&t, "1,1,1"), NULL), "input 'strides' must have 2 values");
  rejects(&t, op(&t, "conv", "x", x, "weight", cf(&t, MIL_DT_FP32, "8,3,40,3", NULL), NULL),
          "spatial dimension 0 has invalid output size");
  rejects(&t, op(&t, "conv", "x", x, "weight", w, "pad_type", cstr(&t, "full"), NULL), "must be one of");
  t_free(&t);

  /* iOS16: same_lower is accepted */
  t_init(&t, MIL_IOS16);
  ok(&t, op(&t, "conv", "x", inp(&t, "x", MIL_DT_FP32, "1,1,5,5"), "weight", cf(&t, MIL_DT_FP32, "1,1,2,2", NULL),
            "pad_type", cstr(&t, "same_lower"), NULL),
     "(1, 1, 5, 5, fp32)");
  t_free(&t);

  /* iOS17: weight may differ in dtype and be computed at run time */
  t_init(&t, MIL_IOS17);
  x = inp(&t, "x", MIL_DT_FP16, "1,3,8,8");
  ok(&t, op(&t, "conv", "x", x, "weight", cf(&t, MIL_DT_FP32, "2,3,3,3", NULL), "bias", inp(&t, "b", MIL_DT_FP32, "2"), NULL),
     "(1, 2, 6, 6, fp16)");
  rejects(&t, op(&t, "conv", "x", x, "weight", cf(&t, MIL_DT_FP32, "2,3,3,3", NULL), "bias", cf(&t, MIL_DT_FP16, "2", NULL), NULL),
          "must have the same dtype as 'weight'");
  t_free(&t);
}

static void test_conv_quantized(void **state) {
  (void)state;
  T t;
  t_init(&t, MIL_IOS15);
  mil_var *x = inp(&t, "x", MIL_DT_FP32, "1,2,4,4");
  mil_var *w = cf(&t, MIL_DT_UINT8, "3,2,1,1", NULL);
  ok(&t, op(&t, "conv_quantized", "x", x, "weight", w, "quantization_type", cstr(&t, "linear"), "quant_scale",
            cscalar(&t, MIL_DT_FP32, 0.5), "quant_bias", cscalar(&t, MIL_DT_FP32, 0), NULL),
     "(1, 3, 4, 4, fp32)");
  rejects(&t, op(&t, "conv_quantized", "x", x, "weight", cf(&t, MIL_DT_FP32, "3,2,1,1", NULL), "quantization_type",
                 cstr(&t, "linear"), "quant_scale", cscalar(&t, MIL_DT_FP32, 0.5), "quant_bias",
                 cscalar(&t, MIL_DT_FP32, 0), NULL),
          "input 'weight' must have dtype uint8");
  rejects(&t, op(&t, "conv_quantized", "x", x, "weight", w, NULL), "required input 'quantization_type' is missing");
  mil_op *q = op(&t, "conv_quantized", "x", x, "weight", w, "quantization_type", cstr(&t, "lut"), "quant_scale",
                 cscalar(&t, MIL_DT_FP32, 0.5), "quant_bias", cscalar(&t, MIL_DT_FP32, 0), NULL);
  assert_int_equal(mil_op_add_defaults(q, &t.d), MIL_OK);
  assert_int_equal(mil_value_get_i64(mil_op_input_var(q, "nbits")->val, 0), 8);
  assert_int_equal(q->n_inputs, 11); /* no bias: it has no default */
  assert_string_equal(q->inputs[3].name, "nbits");
  assert_string_equal(q->inputs[10].name, "groups");
  t_free(&t);
}

static void test_conv_transpose(void **state) {
  (void)state;
  T t;
  t_init(&t, MIL_IOS15);
  mil_var *x = inp(&t, "x", MIL_DT_FP32, "1,4,5,5");
  mil_var *w = cf(&t, MIL_DT_FP32, "4,2,3,3", NULL);
  /* valid: 2*(5-1)+3 = 11; same: 2*5 = 10; custom: 11-2 = 9 */
  ok(&t, op(&t, "conv_transpose", "x", x, "weight", w, "strides", cint(&t, "2,2"), NULL), "(1, 2, 11, 11, fp32)");
  ok(&t, op(&t, "conv_transpose", "x", x, "weight", w, "strides", cint(&t, "2,2"), "pad_type", cstr(&t, "same"), NULL),
     "(1, 2, 10, 10, fp32)");
  ok(&t, op(&t, "conv_transpose", "x", x, "weight", w, "strides", cint(&t, "2,2"), "pad_type", cstr(&t, "custom"),
            "pad", cint(&t, "1,1,0,0"), NULL),
     "(1, 2, 9, 11, fp32)");
  ok(&t, op(&t, "conv_transpose", "x", x, "weight", w, "groups", cint1(&t, 2), "output_shape", cint(&t, "1,4,12,12"), NULL),
     "(1, 4, 12, 12, fp32)");
  /* dilation 2 on a 3-kernel: effective kernel 5 -> 4+5 = 9 */
  ok(&t, op(&t, "conv_transpose", "x", x, "weight", w, "dilations", cint(&t, "2,1"), NULL), "(1, 2, 9, 7, fp32)");
  mil_op *s = op(&t, "conv_transpose", "x", inp(&t, "xs", MIL_DT_FP32, "n,4,h,5"), "weight", w, NULL);
  assert_int_equal(mil_op_infer(s, &t.d), MIL_OK);
  assert_string_equal(s->outputs[0]->type->dims[0].sym, "n");
  assert_true(sym(s->outputs[0]->type, 2));
  assert_string_not_equal(s->outputs[0]->type->dims[2].sym, "h");
  rejects(&t, op(&t, "conv_transpose", "x", x, "weight", w, "output_shape", cint(&t, "1,3,12,12"), NULL),
          "output_shape'[1] must equal C_out = 2");
  rejects(&t, op(&t, "conv_transpose", "x", x, "weight", w, "pad_type", cstr(&t, "same_lower"), NULL),
          "must be one of \"same\", \"valid\", \"custom\"");
  rejects(&t, op(&t, "conv_transpose", "x", x, "weight", inp(&t, "wd", MIL_DT_FP32, "4,2,3,3"), NULL),
          "input 'weight' must be a compile-time constant");
  rejects(&t, op(&t, "conv_transpose", "x", x, "weight", w, "bias", cf(&t, MIL_DT_FP32, "4", NULL), NULL),
          "input 'bias' must have one value per output channel");
  t_free(&t);

  t_init(&t, MIL_IOS17);
  x = inp(&t, "x", MIL_DT_FP16, "1,4,5,5");
  ok(&t, op(&t, "conv_transpose", "x", x, "weight", inp(&t, "wd", MIL_DT_FP32, "4,2,3,3"), NULL), "(1, 2, 7, 7, fp16)");
  rejects(&t, op(&t, "conv_transpose", "x", x, "weight", cf(&t, MIL_DT_FP32, "4,2,3", NULL), NULL),
          "must be rank 4 like x");
  t_free(&t);
}

static void test_conv_defaults(void **state) {
  (void)state;
  T t;
  t_init(&t, MIL_IOS16);
  mil_var *x = inp(&t, "x", MIL_DT_FP32, "1,3,8,8");
  mil_var *w = cf(&t, MIL_DT_FP32, "4,3,3,3", NULL);
  /* a var already named like the first candidate forces the suffix _1 */
  mil_op *taken = mil_const_new(t.p, "conv_c_strides_0", mil_value_new_bool(t.p, true));
  mil_block_append(t.b, taken);
  mil_op *o = mil_op_new(t.p, "conv", "conv_c");
  mil_op_add_input(o, "weight", w);
  mil_op_add_input(o, "x", x);
  mil_block_append(t.b, o);
  assert_int_equal(mil_op_add_defaults(o, &t.d), MIL_OK);
  static const char *const order[] = {"x", "weight", "strides", "pad_type", "pad", "dilations", "groups"};
  assert_int_equal(o->n_inputs, 7);
  for (int i = 0; i < 7; i++) assert_string_equal(o->inputs[i].name, order[i]);
  mil_var *st = mil_op_input_var(o, "strides");
  assert_string_equal(st->name, "conv_c_strides_1");
  assert_int_equal(st->val->numel, 2);
  assert_int_equal(st->val->type->dtype, MIL_DT_INT32);
  assert_int_equal(mil_value_get_i64(st->val, 1), 1);
  assert_string_equal(mil_value_get_str(mil_op_input_var(o, "pad_type")->val, 0), "valid");
  const mil_value *pad = mil_op_input_var(o, "pad")->val;
  assert_int_equal(pad->numel, 4);
  assert_int_equal(mil_value_get_i64(pad, 3), 0);
  const mil_value *g = mil_op_input_var(o, "groups")->val;
  assert_true(g->type->is_scalar);
  assert_int_equal(mil_value_get_i64(g, 0), 1);
  assert_string_equal(mil_op_input_var(o, "groups")->name, "conv_c_groups_0");
  /* the consts sit right before the op, in coremltools' order */
  assert_ptr_equal(o->prev->outputs[0], mil_op_input_var(o, "groups"));
  assert_ptr_equal(o->prev->prev->outputs[0], mil_op_input_var(o, "dilations"));
  assert_ptr_equal(o->prev->prev->prev->prev->prev->outputs[0], st);
  ok(&t, o, "(1, 4, 6, 6, fp32)");
  /* a second call adds nothing */
  assert_int_equal(mil_op_add_defaults(o, &t.d), MIL_OK);
  assert_int_equal(o->n_inputs, 7);
  assert_int_equal(mil_program_validate(t.p, &t.d), MIL_OK);
  t_free(&t);
}

/* ------------------------------------------------------------------ */
/* pool                                                                */
/* ------------------------------------------------------------------ */

static void test_pool(void **state) {
  (void)state;
  T t;
  t_init(&t, MIL_IOS15);
  mil_var *x = inp(&t, "x", MIL_DT_FP32, "1,3,8,8");
  ok(&t, op(&t, "max_pool", "x", x, "kernel_sizes", cint(&t, "2,2"), "strides", cint(&t, "2,2"), "pad_type",
            cstr(&t, "valid"), NULL),
     "(1, 3, 4, 4, fp32)");
  /* ceil mode: ceil((5+2-2)/2)+1 = 4, the last window starts in the padding -> 3 */
  mil_var *x5 = inp(&t, "x5", MIL_DT_FP16, "1,1,5,5");
  ok(&t, op(&t, "avg_pool", "x", x5, "kernel_sizes", cint(&t, "2,2"), "strides", cint(&t, "2,2"), "pad_type",
            cstr(&t, "custom"), "pad", cint(&t, "1,1,1,1"), "ceil_mode", cbool(&t, true),
            "exclude_padding_from_average", cbool(&t, true), NULL),
     "(1, 1, 3, 3, fp16)");
  ok(&t, op(&t, "avg_pool", "x", x5, "kernel_sizes", cint(&t, "2,2"), "strides", cint(&t, "2,2"), "pad_type",
            cstr(&t, "valid"), "ceil_mode", cbool(&t, true), NULL),
     "(1, 1, 3, 3, fp16)");
  /* the pad type is read case-insensitively */
  ok(&t, op(&t, "l2_pool", "x", x5, "kernel_sizes", cint(&t, "3,3"), "strides", cint(&t, "2,2"), "pad_type",
            cstr(&t, "SAME"), NULL),
     "(1, 1, 3, 3, fp16)");
  rejects(&t, op(&t, "l2_pool", "x", inp(&t, "x3", MIL_DT_FP32, "1,1,4,4,4"), "kernel_sizes", cint(&t, "2,2,2"),
                 "pad_type", cstr(&t, "valid"), NULL),
          "l2_pool supports 1 or 2 spatial dimensions");
  rejects(&t, op(&t, "avg_pool", "x", x5, "kernel_sizes", cint(&t, "2,2"), "pad_type", cstr(&t, "custom"), "pad",
                 cint(&t, "0,1,0,0"), "ceil_mode", cbool(&t, true), NULL),
          "padding must be symmetric");
  rejects(&t, op(&t, "max_pool", "x", x, "kernel_sizes", cint(&t, "2"), "pad_type", cstr(&t, "valid"), NULL),
          "input 'kernel_sizes' must have 2 values");
  rejects(&t, op(&t, "max_pool", "x", x, "kernel_sizes", cint(&t, "2,2"), NULL), "required input 'pad_type' is missing");
  rejects(&t, op(&t, "max_pool", "x", x, "kernel_sizes", cint(&t, "2,-3"), "pad_type", cstr(&t, "valid"), NULL),
          "input 'kernel_sizes' must be positive, got -3");
  rejects(&t, op(&t, "max_pool", "x", x, "kernel_sizes", cint(&t, "2,2"), "strides", cint(&t, "0,1"), "pad_type",
                 cstr(&t, "valid"), NULL),
          "input 'strides' must be positive, got 0");
  rejects(&t, op(&t, "max_pool", "x", x, "kernel_sizes", cint(&t, "2,2"), "pad_type", cstr(&t, "same_lower"), NULL),
          "not supported by the iOS15 opset");
  /* defaults: strides, pad, ceil_mode, and for avg_pool exclude_padding_from_average (printed first) */
  mil_op *a = op(&t, "avg_pool", "x", x, "kernel_sizes", cint(&t, "2,2"), "pad_type", cstr(&t, "valid"), NULL);
  assert_int_equal(mil_op_add_defaults(a, &t.d), MIL_OK);
  assert_int_equal(a->n_inputs, 7);
  assert_string_equal(a->inputs[0].name, "exclude_padding_from_average");
  assert_string_equal(a->inputs[6].name, "ceil_mode");
  assert_int_equal(mil_op_input_var(a, "pad")->val->numel, 4);
  ok(&t, a, "(1, 3, 7, 7, fp32)");
  t_free(&t);
}

/* ------------------------------------------------------------------ */
/* linear                                                              */
/* ------------------------------------------------------------------ */

static void test_linear(void **state) {
  (void)state;
  T t;
  t_init(&t, MIL_IOS15);
  static const double xv[] = {1, 2, 3, 4, 5, 6};
  static const double wv[] = {1, 0, 0, 0, 1, 0, 0, 0, 1, 1, 1, 1};
  static const double bv[] = {0.5, 0, 0, -1};
  mil_op *l = op(&t, "linear", "x", cf(&t, MIL_DT_FP32, "2,3", xv), "weight", cf(&t, MIL_DT_FP32, "4,3", wv), "bias",
                 cf(&t, MIL_DT_FP32, "4", bv), NULL);
  ok(&t, l, "(2, 4, fp32)");
  static const double want[] = {1.5, 2, 3, 5, 4.5, 5, 6, 14};
  expect_vals(l, want, 8, 0);
  /* int32 linear folds exactly; no bias */
  mil_op *li = op(&t, "linear", "x", cint(&t, "2,3"), "weight", cf(&t, MIL_DT_INT32, "1,2", (const double[]){4, 5}), NULL);
  ok(&t, li, "(1,int32)");
  expect_vals(li, (const double[]){23}, 1, 0);
  mil_var *x = inp(&t, "x", MIL_DT_FP32, "b,7,3");
  ok(&t, op(&t, "linear", "x", x, "weight", cf(&t, MIL_DT_FP32, "4,3", NULL), NULL), "(b, 7, 4, fp32)");
  rejects(&t, op(&t, "linear", "x", x, "weight", cf(&t, MIL_DT_FP32, "4,5", NULL), NULL),
          "the last dimension of x");
  rejects(&t, op(&t, "linear", "x", x, "weight", cf(&t, MIL_DT_FP32, "4,3", NULL), "bias", cf(&t, MIL_DT_FP32, "3", NULL), NULL),
          "does not match the first dimension of weight");
  rejects(&t, op(&t, "linear", "x", x, "weight", cf(&t, MIL_DT_FP16, "4,3", NULL), NULL), "same dtype as 'x'");
  /* default bias: zeros of weight.shape[0] in weight's dtype */
  mil_op *ld = op(&t, "linear", "x", x, "weight", cf(&t, MIL_DT_FP32, "4,3", NULL), NULL);
  assert_int_equal(mil_op_add_defaults(ld, &t.d), MIL_OK);
  mil_var *b = mil_op_input_var(ld, "bias");
  assert_non_null(b);
  char bname[128];
  snprintf(bname, sizeof bname, "%s_bias_0", ld->name);
  assert_string_equal(b->name, bname);
  assert_int_equal(b->val->numel, 4);
  assert_int_equal(b->val->type->dtype, MIL_DT_FP32);
  assert_true(mil_value_get_f64(b->val, 3) == 0.0);
  t_free(&t);

  t_init(&t, MIL_IOS17);
  x = inp(&t, "x", MIL_DT_FP16, "2,3");
  ok(&t, op(&t, "linear", "x", x, "weight", cf(&t, MIL_DT_FP32, "4,3", NULL), NULL), "(2, 4, fp16)");
  rejects(&t, op(&t, "linear", "x", x, "weight", cf(&t, MIL_DT_FP32, "4,3,1", NULL), NULL), "input 'weight' must be rank 2");
  t_free(&t);
}

static void test_matmul(void **state) {
  (void)state;
  T t;
  t_init(&t, MIL_IOS15);
  mil_var *x = inp(&t, "x", MIL_DT_FP32, "2,3,4");
  ok(&t, op(&t, "matmul", "x", x, "y", inp(&t, "y", MIL_DT_FP32, "4,5"), NULL), "(2, 3, 5, fp32)");
  ok(&t, op(&t, "matmul", "x", inp(&t, "v", MIL_DT_FP32, "4"), "y", inp(&t, "y3", MIL_DT_FP32, "2,4,5"), NULL),
     "(2, 5, fp32)");
  ok(&t, op(&t, "matmul", "x", x, "y", inp(&t, "v4", MIL_DT_FP32, "4"), NULL), "(2, 3, fp32)");
  ok(&t, op(&t, "matmul", "x", inp(&t, "a", MIL_DT_FP32, "4"), "y", inp(&t, "b", MIL_DT_FP32, "4"), NULL), "(fp32)");
  ok(&t, op(&t, "matmul", "x", inp(&t, "m", MIL_DT_FP32, "3,4"), "y", inp(&t, "n", MIL_DT_FP32, "5,4"), "transpose_y",
            cbool(&t, true), NULL),
     "(3, 5, fp32)");
  ok(&t, op(&t, "matmul", "x", inp(&t, "p", MIL_DT_FP32, "2,1,3,4"), "y", inp(&t, "q", MIL_DT_FP32, "5,4,6"), NULL),
     "(2, 5, 3, 6, fp32)");
  ok(&t, op(&t, "matmul", "x", inp(&t, "s", MIL_DT_INT32, "batch,3,4"), "y", cf(&t, MIL_DT_INT32, "4,6", NULL), NULL),
     "(batch, 3, 6, int32)");
  rejects(&t, op(&t, "matmul", "x", x, "y", inp(&t, "y5", MIL_DT_FP32, "5,5"), NULL), "inner dimensions 4 and 5 differ");
  rejects(&t, op(&t, "matmul", "x", inp(&t, "r1", MIL_DT_FP32, "4"), "y", inp(&t, "r2", MIL_DT_FP32, "4,2"),
                 "transpose_x", cbool(&t, true), NULL),
          "x is rank 1, but transpose_x is True");
  rejects(&t, op(&t, "matmul", "x", inp(&t, "u", MIL_DT_FP32, "2,3,4"), "y", inp(&t, "w", MIL_DT_FP32, "3,4,5"), NULL),
          "cannot be broadcast");
  /* folding */
  mil_var *a = cf(&t, MIL_DT_FP32, "2,2", (const double[]){1, 2, 3, 4});
  mil_var *b = cf(&t, MIL_DT_FP32, "2,2", (const double[]){5, 6, 7, 8});
  mil_op *m = op(&t, "matmul", "x", a, "y", b, NULL);
  ok(&t, m, "(2, 2, fp32)");
  expect_vals(m, (const double[]){19, 22, 43, 50}, 4, 0);
  m = op(&t, "matmul", "x", a, "y", b, "transpose_x", cbool(&t, true), NULL);
  ok(&t, m, "(2, 2, fp32)");
  expect_vals(m, (const double[]){26, 30, 38, 44}, 4, 0);
  m = op(&t, "matmul", "x", a, "y", b, "transpose_y", cbool(&t, true), NULL);
  ok(&t, m, "(2, 2, fp32)");
  expect_vals(m, (const double[]){17, 23, 39, 53}, 4, 0);
  m = op(&t, "matmul", "x", cf(&t, MIL_DT_FP32, "3", (const double[]){1, 2, 3}), "y",
         cf(&t, MIL_DT_FP32, "3", (const double[]){4, 5, 6}), NULL);
  ok(&t, m, "(fp32)");
  expect_vals(m, (const double[]){32}, 1, 0);
  m = op(&t, "matmul", "x", cf(&t, MIL_DT_FP32, "2,1,2", (const double[]){1, 2, 3, 4}), "y",
         cf(&t, MIL_DT_FP32, "2,1", (const double[]){1, 1}), NULL);
  ok(&t, m, "(2, 1, 1, fp32)");
  expect_vals(m, (const double[]){3, 7}, 2, 0);
  /* batch broadcast of y against x: (2,1,2) @ (1,2,3) */
  m = op(&t, "matmul", "x", cf(&t, MIL_DT_INT32, "2,1,2", (const double[]){1, 2, 3, 4}), "y",
         cf(&t, MIL_DT_INT32, "1,2,3", (const double[]){1, 0, 2, 0, 1, 3}), NULL);
  ok(&t, m, "(2, 1, 3, int32)");
  expect_vals(m, (const double[]){1, 2, 8, 3, 4, 18}, 6, 0);
  t_free(&t);

  t_init(&t, MIL_IOS17);
  x = inp(&t, "x", MIL_DT_FP16, "2,3");
  ok(&t, op(&t, "matmul", "x", x, "y", cf(&t, MIL_DT_FP32, "3,4", NULL), NULL), "(2, 4, fp16)");
  ok(&t, op(&t, "matmul", "x", cf(&t, MIL_DT_FP32, "5,2", NULL), "y", x, NULL), "(5, 3, fp16)");
  rejects(&t, op(&t, "matmul", "x", x, "y", inp(&t, "y", MIL_DT_FP32, "3,4"), NULL),
          "when x and y are both non-const, their dtypes must match");
  t_free(&t);
}

static void test_einsum(void **state) {
  (void)state;
  T t;
  t_init(&t, MIL_IOS15);
  mil_var *xy[2] = {inp(&t, "x", MIL_DT_FP32, "1,2,3,4"), inp(&t, "y", MIL_DT_FP32, "1,4,3,5")};
  mil_op *e = op(&t, "einsum", "equation", cstr(&t, "nchw,nwhr->nchr"), NULL);
  mil_op_add_input_tuple(e, "values", 2, xy);
  ok(&t, e, "(1, 2, 3, 5, fp32)");
  mil_var *ab[2] = {inp(&t, "a", MIL_DT_FP32, "2,1,4"), inp(&t, "b", MIL_DT_FP32, "4,3,5")};
  e = op(&t, "einsum", "equation", cstr(&t, "abc,cbd->abd"), NULL);
  mil_op_add_input_tuple(e, "values", 2, ab);
  ok(&t, e, "(2, 3, 5, fp32)");
  e = op(&t, "einsum", "equation", cstr(&t, "abc,cbd->abc"), NULL);
  mil_op_add_input_tuple(e, "values", 2, ab);
  rejects(&t, e, "unsupported einsum equation");
  e = op(&t, "einsum", "equation", cstr(&t, "abc,cbd->abd"), NULL);
  mil_op_add_input_tuple(e, "values", 1, ab);
  rejects(&t, e, "must hold exactly 2 tensors");
  /* folds: out[i,j,k] = sum_l x[i,j,l] y[l,j,k] */
  mil_var *f3[2] = {cf(&t, MIL_DT_FP32, "1,1,2", (const double[]){1, 2}),
                    cf(&t, MIL_DT_FP32, "2,1,2", (const double[]){1, 2, 3, 4})};
  e = op(&t, "einsum", "equation", cstr(&t, "ijl,ljk->ijk"), NULL);
  mil_op_add_input_tuple(e, "values", 2, f3);
  ok(&t, e, "(1, 1, 2, fp32)");
  expect_vals(e, (const double[]){7, 10}, 2, 0);
  mil_var *f4[2] = {cf(&t, MIL_DT_FP32, "1,1,2,2", (const double[]){1, 2, 3, 4}),
                    cf(&t, MIL_DT_FP32, "1,2,1,1", (const double[]){5, 6})};
  e = op(&t, "einsum", "equation", cstr(&t, "nchw,nwhr->nchr"), NULL);
  mil_op_add_input_tuple(e, "values", 2, f4);
  ok(&t, e, "(1, 1, 2, 1, fp32)");
  expect_vals(e, (const double[]){17, 39}, 2, 0); /* h broadcast: y's h axis is 1 */
  t_free(&t);
}

/* ------------------------------------------------------------------ */
/* normalization                                                       */
/* ------------------------------------------------------------------ */

static void test_normalization(void **state) {
  (void)state;
  T t;
  t_init(&t, MIL_IOS15);
  mil_var *x = inp(&t, "x", MIL_DT_FP32, "1,3,4,4");
  mil_var *c3 = cf(&t, MIL_DT_FP32, "3", NULL);
  ok(&t, op(&t, "batch_norm", "x", x, "mean", c3, "variance", c3, NULL), "(1, 3, 4, 4, fp32)");
  rejects(&t, op(&t, "batch_norm", "x", x, "mean", cf(&t, MIL_DT_FP16, "3", NULL), "variance", c3, NULL),
          "same dtype as 'x'");
  ok(&t, op(&t, "instance_norm", "x", x, "gamma", c3, "beta", c3, NULL), "(1, 3, 4, 4, fp32)");
  rejects(&t, op(&t, "instance_norm", "x", x, "gamma", inp(&t, "g", MIL_DT_FP32, "3"), NULL),
          "input 'gamma' must be a compile-time constant");
  ok(&t, op(&t, "l2_norm", "x", x, NULL), "(1, 3, 4, 4, fp32)");
  rejects(&t, op(&t, "l2_norm", "x", inp(&t, "x2", MIL_DT_FP32, "3,4"), NULL), "must have rank >= 3");
  ok(&t, op(&t, "local_response_norm", "x", x, "size", cint1(&t, 3), NULL), "(1, 3, 4, 4, fp32)");
  rejects(&t, op(&t, "local_response_norm", "x", x, NULL), "required input 'size' is missing");
  mil_var *x3 = inp(&t, "x3", MIL_DT_FP32, "2,s,4");
  ok(&t, op(&t, "layer_norm", "x", x3, "axes", cint(&t, "-1"), "gamma", cf(&t, MIL_DT_FP32, "4", NULL), NULL),
     "(2, s, 4, fp32)");
  ok(&t, op(&t, "layer_norm", "x", x3, "axes", cint(&t, "1,2"), "gamma", cf(&t, MIL_DT_FP32, "9,4", NULL), NULL),
     "(2, s, 4, fp32)");
  rejects(&t, op(&t, "layer_norm", "x", x3, "axes", cint(&t, "2"), "gamma", cf(&t, MIL_DT_FP32, "3", NULL), NULL),
          "input 'gamma' must have the shape of x's normalized axes (4,fp32)");
  rejects(&t, op(&t, "layer_norm", "x", x3, "axes", cint(&t, "3"), NULL), "must be in the range [-x.rank, x.rank-1]");
  /* folds */
  mil_op *l2 = op(&t, "l2_norm", "x", cf(&t, MIL_DT_FP32, "1,1,2", (const double[]){3, 4}), "epsilon",
                  cscalar(&t, MIL_DT_FP32, 0), NULL);
  ok(&t, l2, "(1, 1, 2, fp32)");
  expect_vals(l2, (const double[]){0.6, 0.8}, 2, 1e-7);
  /* batch dims normalize separately: rows [3,4] and [0,2] */
  l2 = op(&t, "l2_norm", "x", cf(&t, MIL_DT_FP32, "2,1,1,2", (const double[]){3, 4, 0, 2}), "epsilon",
          cscalar(&t, MIL_DT_FP32, 0), NULL);
  ok(&t, l2, "(2, 1, 1, 2, fp32)");
  expect_vals(l2, (const double[]){0.6, 0.8, 0, 1}, 4, 1e-7);
  /* mean 2.5, variance 1.25 */
  mil_op *ln = op(&t, "layer_norm", "x", cf(&t, MIL_DT_FP32, "1,4", (const double[]){1, 2, 3, 4}), "axes",
                  cint(&t, "1"), "gamma", cf(&t, MIL_DT_FP32, "4", (const double[]){1, 1, 2, 2}), "beta",
                  cf(&t, MIL_DT_FP32, "4", (const double[]){0, 0, 0, 1}), "epsilon", cscalar(&t, MIL_DT_FP32, 0), NULL);
  ok(&t, ln, "(1, 4, fp32)");
  double s = sqrt(1.25);
  expect_vals(ln, (const double[]){-1.5 / s, -0.5 / s, 1.0 / s, 3.0 / s + 1}, 4, 1e-6);
  /* normalize over axis 0 of a (2,2): columns [1,3] and [2,6] */
  ln = op(&t, "layer_norm", "x", cf(&t, MIL_DT_FP32, "2,2", (const double[]){1, 2, 3, 6}), "axes", cint(&t, "0"),
          "epsilon", cscalar(&t, MIL_DT_FP32, 0), NULL);
  ok(&t, ln, "(2, 2, fp32)");
  expect_vals(ln, (const double[]){-1, -1, 1, 1}, 4, 1e-6);
  /* defaults: an fp32 epsilon even for an fp16 x, as coremltools builds it (and accepts) */
  mil_op *bn = op(&t, "batch_norm", "x", inp(&t, "h", MIL_DT_FP16, "1,3,2,2"), "mean", cf(&t, MIL_DT_FP16, "3", NULL),
                  "variance", cf(&t, MIL_DT_FP16, "3", NULL), NULL);
  assert_int_equal(mil_op_add_defaults(bn, &t.d), MIL_OK);
  const mil_value *eps = mil_op_input_var(bn, "epsilon")->val;
  assert_int_equal(eps->type->dtype, MIL_DT_FP32);
  assert_true(fabs(mil_value_get_f64(eps, 0) - 1e-5) < 1e-12);
  ok(&t, bn, "(1, 3, 2, 2, fp16)");
  mil_op *lnd = op(&t, "layer_norm", "x", x3, NULL);
  assert_int_equal(mil_op_add_defaults(lnd, &t.d), MIL_OK);
  const mil_value *axes = mil_op_input_var(lnd, "axes")->val;
  assert_int_equal(axes->numel, 3);
  assert_int_equal(mil_value_get_i64(axes, 2), 2);
  assert_string_equal(lnd->inputs[1].name, "axes");
  assert_string_equal(lnd->inputs[2].name, "epsilon");
  mil_op *lrn = op(&t, "local_response_norm", "x", x, "size", cint1(&t, 3), NULL);
  assert_int_equal(mil_op_add_defaults(lrn, &t.d), MIL_OK);
  assert_true(fabs(mil_value_get_f64(mil_op_input_var(lrn, "beta")->val, 0) - 0.75) == 0);
  assert_true(fabs(mil_value_get_f64(mil_op_input_var(lrn, "alpha")->val, 0) - 1e-4) < 1e-10);
  t_free(&t);

  /* iOS17: parameters in another float dtype; defaults stay fp32 */
  t_init(&t, MIL_IOS17);
  x = inp(&t, "x", MIL_DT_FP16, "1,3,4,4");
  c3 = cf(&t, MIL_DT_FP32, "3", NULL);
  ok(&t, op(&t, "batch_norm", "x", x, "mean", c3, "variance", c3, "epsilon", cscalar(&t, MIL_DT_FP32, 1e-3), NULL),
     "(1, 3, 4, 4, fp16)");
  rejects(&t, op(&t, "batch_norm", "x", x, "mean", c3, "variance", cf(&t, MIL_DT_FP16, "3", NULL), NULL),
          "same dtype as 'mean'");
  ok(&t, op(&t, "instance_norm", "x", x, "gamma", c3, NULL), "(1, 3, 4, 4, fp16)");
  ok(&t, op(&t, "l2_norm", "x", x, "epsilon", cscalar(&t, MIL_DT_FP32, 1e-3), NULL), "(1, 3, 4, 4, fp16)");
  rejects(&t, op(&t, "l2_norm", "x", inp(&t, "x1", MIL_DT_FP16, "4"), NULL), "rank >= 3");
  ok(&t, op(&t, "layer_norm", "x", x, "axes", cint(&t, "1"), "gamma", c3, NULL), "(1, 3, 4, 4, fp16)");
  rejects(&t, op(&t, "layer_norm", "x", x, "axes", cint(&t, "2"), "gamma", c3, NULL), "must have the shape");
  ok(&t, op(&t, "local_response_norm", "x", x, "size", cint1(&t, 3), "k", cscalar(&t, MIL_DT_FP32, 2), NULL),
     "(1, 3, 4, 4, fp16)");
  rejects(&t, op(&t, "local_response_norm", "x", x, "size", cint1(&t, 3), "k", cscalar(&t, MIL_DT_FP32, 2), "alpha",
                 cscalar(&t, MIL_DT_FP16, 2), NULL),
          "same dtype as 'alpha'");
  mil_op *in = op(&t, "instance_norm", "x", x, NULL);
  assert_int_equal(mil_op_add_defaults(in, &t.d), MIL_OK);
  assert_int_equal(mil_op_input_var(in, "epsilon")->val->type->dtype, MIL_DT_FP32);
  t_free(&t);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_conv),          cmocka_unit_test(test_conv_quantized), cmocka_unit_test(test_conv_transpose),
      cmocka_unit_test(test_conv_defaults), cmocka_unit_test(test_pool),           cmocka_unit_test(test_linear),
      cmocka_unit_test(test_matmul),        cmocka_unit_test(test_einsum),         cmocka_unit_test(test_normalization),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
