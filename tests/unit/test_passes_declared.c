/* Tests of the pass behaviour that golden MIL-text cases cannot show:
 * declarations carried by function attributes (update_output_dtypes'
 * "output_types", image_input_preprocess' "channel_last_image_inputs"),
 * option handling (add_fp16_cast's op_selector / skip_ops_by_type,
 * materialize_symbolic_shape_program's map) and the errors passes report
 * (complex function outputs, bad materialization maps). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "mil/mil.h"
#include "mil/ops.h"
#include "mil/passes.h"

static mil_program *parse(const char *text) {
  mil_program *p = NULL;
  mil_diag d = {0};
  mil_status st = mil_parse_program(text, strlen(text), NULL, &p, &d);
  if (st != MIL_OK) fail_msg("parse failed: %s", mil_diag_first_error(&d));
  mil_diag_clear(&d);
  return p;
}

/* A string tensor value holding n strings. */
static const mil_value *strings(mil_program *p, int n, const char *const *s) {
  int64_t shape[1] = {n};
  mil_value *v = mil_value_new_tensor(p, MIL_DT_STRING, 1, shape, false, s);
  assert_non_null(v);
  return v;
}

static mil_status run_pass(const char *name, mil_program *p, mil_pass_options *o, mil_diag *d) {
  const mil_pass_def *def = mil_pass_find(name);
  assert_non_null(def);
  return mil_pass_run(def, p, o, NULL, d);
}

static mil_op *find_op(mil_block *b, const char *name) {
  for (mil_op *op = b->first; op; op = op->next)
    if (strcmp(op->name, name) == 0) return op;
  return NULL;
}

static const char *k_square = "main[CoreML7](%x: (2,int32)(Tensor)) {\n"
                              "  block0() {\n"
                              "    %s: (2,int32)(Tensor) = square(x=%x, name=\"s\")\n"
                              "    %t: (2,int32)(Tensor) = abs(x=%x, name=\"t\")\n"
                              "  } -> (%s, %t)\n"
                              "}\n";

static void test_update_output_dtypes_declared(void **state) {
  (void)state;
  mil_program *p = parse(k_square);
  mil_function *f = mil_program_find_function(p, "main");
  const char *decl[2] = {"fp16", ""};
  assert_int_equal(mil_function_set_attr(f, "output_types", strings(p, 2, decl)), MIL_OK);
  mil_diag d = {0};
  assert_int_equal(run_pass("update_output_dtypes", p, NULL, &d), MIL_OK);
  mil_block *b = mil_function_body(f);
  /* output 0: a cast to fp16 appended at the end, taking the name "s" */
  mil_var *o0 = b->outputs[0].var;
  assert_string_equal(o0->name, "s");
  assert_non_null(o0->op);
  assert_string_equal(o0->op->type, "cast");
  assert_ptr_equal(b->last, o0->op);
  assert_int_equal(o0->type->dtype, MIL_DT_FP16);
  mil_var *src = mil_op_input_var(o0->op, "x");
  assert_string_equal(src->name, "s_type_int32");
  assert_string_equal(src->op->type, "square");
  /* output 1: no requirement, unchanged */
  assert_string_equal(b->outputs[1].var->name, "t");
  assert_string_equal(b->outputs[1].var->op->type, "abs");
  assert_int_equal(mil_program_verify(p, &d), MIL_OK);
  mil_diag_clear(&d);
  mil_program_free(p);
}

static void test_update_output_dtypes_length_mismatch(void **state) {
  (void)state;
  mil_program *p = parse(k_square);
  mil_function *f = mil_program_find_function(p, "main");
  const char *decl[1] = {"fp16"};
  assert_int_equal(mil_function_set_attr(f, "output_types", strings(p, 1, decl)), MIL_OK);
  mil_diag d = {0};
  assert_int_equal(run_pass("update_output_dtypes", p, NULL, &d), MIL_ERR_INVALID);
  assert_non_null(strstr(mil_diag_first_error(&d), "declares 1 output types but has 2 outputs"));
  mil_diag_clear(&d);
  mil_program_free(p);
}

static void test_image_input_preprocess_declared(void **state) {
  (void)state;
  mil_program *p = parse("main[CoreML7](%img: (1, 4, 5, 3, fp32)(Tensor)) {\n"
                         "  block0() {\n"
                         "    %r: (1, 4, 5, 3, fp32)(Tensor) = relu(x=%img, name=\"r\")\n"
                         "  } -> (%r, %img)\n"
                         "}\n");
  mil_function *f = mil_program_find_function(p, "main");
  const char *decl[1] = {"img"};
  assert_int_equal(mil_function_set_attr(f, "channel_last_image_inputs", strings(p, 1, decl)), MIL_OK);
  mil_diag d = {0};
  assert_int_equal(run_pass("image_input_preprocess", p, NULL, &d), MIL_OK);
  /* the input is now channel-first */
  const mil_type *t = f->inputs[0]->type;
  assert_int_equal(t->rank, 4);
  int64_t want[4] = {1, 3, 4, 5};
  for (int i = 0; i < 4; i++) assert_int_equal(t->dims[i].size, want[i]);
  mil_block *b = mil_function_body(f);
  mil_op *tp = find_op(b, "img__transpose_from_nchw__");
  assert_non_null(tp);
  assert_string_equal(tp->type, "transpose");
  const mil_value *perm = mil_op_input_var(tp, "perm")->val;
  int64_t wp[4] = {0, 2, 3, 1};
  for (int i = 0; i < 4; i++) assert_int_equal(mil_value_get_i64(perm, i), wp[i]);
  /* the transpose gives back the layout the program used */
  const mil_type *tt = tp->outputs[0]->type;
  int64_t wt[4] = {1, 4, 5, 3};
  for (int i = 0; i < 4; i++) assert_int_equal(tt->dims[i].size, wt[i]);
  mil_op *relu = find_op(b, "r");
  assert_ptr_equal(mil_op_input_var(relu, "x"), tp->outputs[0]);
  assert_ptr_equal(b->outputs[1].var, tp->outputs[0]);
  assert_int_equal(f->inputs[0]->n_uses, 1);
  mil_diag_clear(&d);
  mil_program_free(p);
}

/* Declares n image inputs on f as the converter does (image_inputs,
 * image_color_layouts, image_scales, image_biases). */
static void declare_images(mil_function *f, int n, const char *const *names, const char *const *layouts,
                           const float *scales, const float *biases) {
  mil_program *p = f->program;
  int64_t nn = n, b3[2] = {n, 3};
  assert_int_equal(mil_function_set_attr(f, "image_inputs", strings(p, n, names)), MIL_OK);
  assert_int_equal(mil_function_set_attr(f, "image_color_layouts", strings(p, n, layouts)), MIL_OK);
  assert_int_equal(mil_function_set_attr(f, "image_scales", mil_value_new_tensor(p, MIL_DT_FP32, 1, &nn, false, scales)),
                   MIL_OK);
  assert_int_equal(mil_function_set_attr(f, "image_biases", mil_value_new_tensor(p, MIL_DT_FP32, 2, b3, false, biases)),
                   MIL_OK);
}

/* The image preprocessing coremltools' backend inserts for
 * ct.ImageType(scale=1/255, bias=[-0.485, -0.456, -0.406]) (recorded in
 * tests/data/app/rgb_classifier.ct.mil): a mul named "<input>__scaled__",
 * an add named "<input>__biased__" with the bias as (1, 3, 1, 1), and
 * every later use of the input moved to the add. */
static void test_insert_image_preprocessing_declared(void **state) {
  (void)state;
  mil_program *p = parse("main[CoreML6](%image: (1, 3, 2, 2, fp32)(Tensor)) {\n"
                         "  block0() {\n"
                         "    %c: (1, 3, 2, 2, fp16)(Tensor) = cast(x=%image, dtype=\"fp16\", name=\"cast_1\")\n"
                         "  } -> (%c, %image)\n"
                         "}\n");
  mil_function *f = mil_program_find_function(p, "main");
  const char *names[1] = {"image"}, *layouts[1] = {"RGB"};
  float scale = 1.0f / 255.0f, bias[3] = {-0.485f, -0.456f, -0.406f};
  declare_images(f, 1, names, layouts, &scale, bias);
  mil_diag d = {0};
  assert_int_equal(run_pass("mil_backend::insert_image_preprocessing_ops", p, NULL, &d), MIL_OK);
  mil_block *b = mil_function_body(f);
  mil_op *mul = find_op(b, "image__scaled__"), *add = find_op(b, "image__biased__");
  assert_non_null(mul);
  assert_non_null(add);
  assert_string_equal(mul->type, "mul");
  assert_string_equal(add->type, "add");
  assert_ptr_equal(mil_op_input_var(mul, "x"), f->inputs[0]);
  assert_ptr_equal(mil_op_input_var(add, "x"), mul->outputs[0]);
  const mil_value *y = mil_op_input_var(mul, "y")->val;
  assert_int_equal(y->type->rank, 0);
  assert_true(mil_value_get_f64(y, 0) == (double)scale);
  const mil_value *yb = mil_op_input_var(add, "y")->val;
  assert_int_equal(yb->type->rank, 4);
  assert_int_equal(yb->type->dims[1].size, 3);
  for (int i = 0; i < 3; i++) assert_true(mil_value_get_f64(yb, i) == (double)bias[i]);
  /* the cast and the block output now read the preprocessed image */
  assert_ptr_equal(mil_op_input_var(find_op(b, "cast_1"), "x"), add->outputs[0]);
  assert_ptr_equal(b->outputs[1].var, add->outputs[0]);
  assert_int_equal(f->inputs[0]->n_uses, 1);
  mil_diag_clear(&d);
  mil_program_free(p);
}

/* Scale 1 and a zero bias: nothing is inserted; a grayscale bias is a
 * scalar add. */
static void test_insert_image_preprocessing_gray(void **state) {
  (void)state;
  mil_program *p = parse("main[CoreML6](%g: (1, 1, 2, 2, fp32)(Tensor), %h: (1, 3, 2, 2, fp32)(Tensor)) {\n"
                         "  block0() {\n"
                         "    %r: (1, 1, 2, 2, fp32)(Tensor) = relu(x=%g, name=\"r\")\n"
                         "    %s: (1, 3, 2, 2, fp32)(Tensor) = relu(x=%h, name=\"s\")\n"
                         "  } -> (%r, %s)\n"
                         "}\n");
  mil_function *f = mil_program_find_function(p, "main");
  const char *names[2] = {"g", "h"}, *layouts[2] = {"G", "BGR"};
  float scale[2] = {1.0f, 1.0f}, bias[6] = {0.5f, 0, 0, 0, 0, 0};
  declare_images(f, 2, names, layouts, scale, bias);
  mil_diag d = {0};
  assert_int_equal(run_pass("mil_backend::insert_image_preprocessing_ops", p, NULL, &d), MIL_OK);
  mil_block *b = mil_function_body(f);
  assert_null(find_op(b, "g__scaled__"));
  assert_null(find_op(b, "h__scaled__"));
  assert_null(find_op(b, "h__biased__"));
  mil_op *add = find_op(b, "g__biased__");
  assert_non_null(add);
  assert_int_equal(mil_op_input_var(add, "y")->val->type->rank, 0);
  assert_ptr_equal(mil_op_input_var(find_op(b, "r"), "x"), add->outputs[0]);
  /* attributes that disagree are an error */
  int64_t one = 1;
  assert_int_equal(mil_function_set_attr(f, "image_scales", mil_value_new_tensor(p, MIL_DT_FP32, 1, &one, false, scale)),
                   MIL_OK);
  assert_int_equal(run_pass("mil_backend::insert_image_preprocessing_ops", p, NULL, &d), MIL_ERR_INVALID);
  assert_non_null(strstr(mil_diag_first_error(&d), "do not agree"));
  mil_diag_clear(&d);
  mil_program_free(p);
}

static bool select_tanh(const mil_op *op, void *ud) {
  (void)ud;
  return strcmp(op->type, "tanh") == 0;
}

static const char *k_two_ops = "main[CoreML7](%x: (2,fp32)(Tensor)) {\n"
                               "  block0() {\n"
                               "    %r: (2,fp32)(Tensor) = relu(x=%x, name=\"r\")\n"
                               "    %t: (2,fp32)(Tensor) = tanh(x=%r, name=\"t\")\n"
                               "  } -> (%t)\n"
                               "}\n";

static void test_add_fp16_cast_selector(void **state) {
  (void)state;
  mil_program *p = parse(k_two_ops);
  const mil_pass_def *def = mil_pass_find("add_fp16_cast");
  mil_pass_options *o = mil_pass_options_new(def);
  mil_diag d = {0};
  assert_int_equal(mil_pass_options_set_selector(o, "op_selector", select_tanh, NULL, &d), MIL_OK);
  assert_int_equal(run_pass("add_fp16_cast", p, o, &d), MIL_OK);
  mil_block *b = mil_function_body(mil_program_find_function(p, "main"));
  assert_non_null(find_op(b, "r"));               /* relu not selected: unchanged */
  assert_non_null(find_op(b, "t_cast_fp16"));     /* tanh rebuilt in fp16 */
  assert_non_null(find_op(b, "r_to_fp16"));       /* its input cast */
  assert_non_null(find_op(b, "t_cast_fp16_to_fp32"));
  assert_null(find_op(b, "t"));
  assert_string_equal(b->outputs[0].var->name, "t");
  mil_pass_options_free(o);
  mil_diag_clear(&d);
  mil_program_free(p);
}

static void test_add_fp16_cast_selector_and_skip(void **state) {
  (void)state;
  mil_program *p = parse(k_two_ops);
  const mil_pass_def *def = mil_pass_find("add_fp16_cast");
  mil_pass_options *o = mil_pass_options_new(def);
  mil_diag d = {0};
  assert_int_equal(mil_pass_options_set_selector(o, "op_selector", select_tanh, NULL, &d), MIL_OK);
  assert_int_equal(mil_pass_options_set(o, "skip_ops_by_type", "relu", &d), MIL_OK);
  assert_int_equal(run_pass("add_fp16_cast", p, o, &d), MIL_ERR_INVALID);
  assert_non_null(strstr(mil_diag_first_error(&d), "op_selector"));
  /* nothing was changed */
  mil_block *b = mil_function_body(mil_program_find_function(p, "main"));
  assert_int_equal(b->n_ops, 2);
  mil_pass_options_free(o);
  mil_diag_clear(&d);
  mil_program_free(p);
}

static mil_status materialize(mil_program *p, const char *map, const char *source, mil_diag *d) {
  const mil_pass_def *def = mil_pass_find("materialize_symbolic_shape_program");
  mil_pass_options *o = mil_pass_options_new(def);
  if (map) assert_int_equal(mil_pass_options_set(o, "function_name_to_materialization_map", map, d), MIL_OK);
  if (source) assert_int_equal(mil_pass_options_set(o, "source_function_name", source, d), MIL_OK);
  mil_status st = mil_pass_run(def, p, o, NULL, d);
  mil_pass_options_free(o);
  return st;
}

static const char *k_symbolic = "main[CoreML8](%x: (is0, 3, fp32)(Tensor), %y: (is0,fp32)(Tensor)) {\n"
                                "  block0() {\n"
                                "    %r: (is0, 3, fp32)(Tensor) = relu(x=%x, name=\"r\")\n"
                                "  } -> (%r, %y)\n"
                                "}\n";

static void test_materialize_errors(void **state) {
  (void)state;
  mil_program *p = parse(k_symbolic);
  mil_diag d = {0};
  assert_int_equal(materialize(p, NULL, NULL, &d), MIL_ERR_INVALID);
  mil_diag_clear(&d);
  assert_int_equal(materialize(p, "{\"f\": {\"x\": [2, 3]}}", "nope", &d), MIL_ERR_INVALID);
  assert_non_null(strstr(mil_diag_first_error(&d), "nope"));
  mil_diag_clear(&d);
  /* is0 would be 2 and 4 */
  assert_int_equal(materialize(p, "{\"f\": {\"x\": [2, 3], \"y\": [4]}}", NULL, &d), MIL_ERR_INVALID);
  assert_non_null(strstr(mil_diag_first_error(&d), "is0"));
  mil_diag_clear(&d);
  /* a fixed dim cannot change */
  assert_int_equal(materialize(p, "{\"f\": {\"x\": [2, 7]}}", NULL, &d), MIL_ERR_INVALID);
  mil_diag_clear(&d);
  assert_int_equal(materialize(p, "{\"f\": {\"x\": [2.5, 3]}}", NULL, &d), MIL_ERR_INVALID);
  mil_diag_clear(&d);
  /* nothing was added by the failed runs */
  assert_int_equal(p->n_functions, 1);
  /* a good map: y (sharing is0) is fixed too */
  assert_int_equal(materialize(p, "{\"f\": {\"x\": [2, 3]}}", NULL, &d), MIL_OK);
  assert_int_equal(p->n_functions, 2);
  mil_function *f = mil_program_find_function(p, "f");
  assert_non_null(f);
  assert_int_equal(f->inputs[1]->type->dims[0].size, 2);
  assert_int_equal(mil_program_verify(p, &d), MIL_OK);
  mil_diag_clear(&d);
  mil_program_free(p);
}

static void test_lower_complex_output_is_error(void **state) {
  (void)state;
  mil_program *p = parse("main[CoreML7](%x: (2,fp32)(Tensor)) {\n"
                         "  block0() {\n"
                         "    %c: (2,complex64)(Tensor) = complex(real_data=%x, imag_data=%x, name=\"c\")\n"
                         "  } -> (%c)\n"
                         "}\n");
  mil_diag d = {0};
  assert_int_equal(run_pass("lower_complex_dialect_ops", p, NULL, &d), MIL_ERR_UNSUPPORTED);
  assert_non_null(strstr(mil_diag_first_error(&d), "complex"));
  mil_diag_clear(&d);
  mil_program_free(p);
}

static void test_sanitize_unicode(void **state) {
  (void)state;
  /* one '_' per character, as Python's re.sub counts code points */
  mil_program *p = parse("main[CoreML7](%x\xc3\xa9y: (2,fp32)(Tensor)) {\n"
                         "  block0() {\n"
                         "    %r: (2,fp32)(Tensor) = relu(x=%x\xc3\xa9y, name=\"r\")\n"
                         "  } -> (%r)\n"
                         "}\n");
  mil_diag d = {0};
  assert_int_equal(run_pass("sanitize_input_output_names", p, NULL, &d), MIL_OK);
  assert_string_equal(mil_program_find_function(p, "main")->inputs[0]->name, "x_y");
  mil_diag_clear(&d);
  mil_program_free(p);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_update_output_dtypes_declared),
      cmocka_unit_test(test_update_output_dtypes_length_mismatch),
      cmocka_unit_test(test_image_input_preprocess_declared),
      cmocka_unit_test(test_insert_image_preprocessing_declared),
      cmocka_unit_test(test_insert_image_preprocessing_gray),
      cmocka_unit_test(test_add_fp16_cast_selector),
      cmocka_unit_test(test_add_fp16_cast_selector_and_skip),
      cmocka_unit_test(test_materialize_errors),
      cmocka_unit_test(test_lower_complex_output_is_error),
      cmocka_unit_test(test_sanitize_unicode),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
