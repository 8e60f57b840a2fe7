/* mil_convert (include/mil/convert.h): conversion is the composition
 * import -> model interface -> pipeline -> save. The importer alone runs
 * no pipeline; mil_convert runs DEFAULT (fp16 casts, as ct.convert's
 * default compute_precision); no_pipeline gives the imported program; a
 * saved result reads back as the returned one; bad options are refused. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "shared_skip.h"

#include "mil/convert.h"
#include "mil/mil.h"

#define SQ MIL_SHARED_DIR "/corpus/onnx/squeezenet1_1/opset13_external/model.onnx"
#define EXAMPLE MIL_TEST_DATA "/../examples/classifier.mil"

static bool have(const char *path) {
  if (access(path, R_OK) == 0) return true;
  shared_skip(path);
  return false;
}

static void test_import_runs_no_pipeline(void **state) {
  (void)state;
  if (!have(SQ)) return;
  mil_diag d = {0};
  mil_model *imported = NULL, *plain = NULL, *converted = NULL;
  assert_int_equal(mil_onnx_import(SQ, NULL, &imported, &d), MIL_OK);
  mil_convert_options o = {0};
  o.no_pipeline = true;
  assert_int_equal(mil_convert(SQ, &o, &plain, &d), MIL_OK);
  assert_int_equal(mil_convert(SQ, NULL, &converted, &d), MIL_OK);
  const mil_program *pi = mil_model_program(imported), *pc = mil_model_program(converted);
  /* the importer builds fp32 and casts nothing; DEFAULT's add_fp16_cast
   * puts casts around the fp16 body */
  assert_int_equal(mil_program_count_op_type(pi, "cast"), 0);
  assert_true(mil_program_count_op_type(pc, "cast") > 0);
  assert_int_equal(mil_program_count_ops(mil_model_program(plain)), mil_program_count_ops(pi));
  assert_int_equal(mil_model_spec_version(converted), MIL_IOS15);
  mil_model_free(imported);
  mil_model_free(plain);
  mil_model_free(converted);
  mil_diag_clear(&d);
}

static void test_saved_result_reads_back(void **state) {
  (void)state;
  if (!have(SQ)) return;
  char dir[] = "/tmp/mil-convert-XXXXXX";
  assert_non_null(mkdtemp(dir));
  char out[256];
  snprintf(out, sizeof out, "%s/sq.mlpackage", dir);
  mil_diag d = {0};
  mil_convert_options o = {0};
  o.fp32 = true;
  o.target = MIL_IOS17;
  o.output_path = out;
  mil_model *m = NULL, *back = NULL;
  assert_int_equal(mil_convert(SQ, &o, &m, &d), MIL_OK);
  assert_int_equal(mil_model_load(out, &back, &d), MIL_OK);
  assert_int_equal(mil_model_spec_version(back), MIL_IOS17);
  assert_int_equal(mil_program_count_ops(mil_model_program(back)), mil_program_count_ops(mil_model_program(m)));
  /* fp32: no fp16 casts */
  assert_int_equal(mil_program_count_op_type(mil_model_program(back), "cast"), 0);
  mil_model_free(m);
  mil_model_free(back);
  /* out may be NULL when the result is saved */
  snprintf(out, sizeof out, "%s/sq.mil", dir);
  assert_int_equal(mil_convert(SQ, &o, NULL, &d), MIL_OK);
  assert_int_equal(access(out, R_OK), 0);
  char cmd[300];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  assert_int_equal(system(cmd), 0);
  mil_diag_clear(&d);
}

static void test_core_ml_source_is_retargeted(void **state) {
  (void)state;
  mil_diag d = {0};
  mil_convert_options o = {0};
  o.no_pipeline = true;
  o.target = MIL_IOS17;
  mil_model *m = NULL;
  assert_int_equal(mil_convert(EXAMPLE, &o, &m, &d), MIL_OK);
  assert_int_equal(mil_model_spec_version(m), MIL_IOS17);
  assert_string_equal(mil_model_program(m)->functions[0]->opset, "CoreML7");
  mil_model_free(m);
  mil_diag_clear(&d);
}

static void test_bad_options(void **state) {
  (void)state;
  mil_diag d = {0};
  mil_model *m = NULL;
  mil_convert_options o = {0};
  /* neither a model out nor a path to save to */
  assert_int_equal(mil_convert(EXAMPLE, &o, NULL, &d), MIL_ERR_INVALID);
  /* input shapes are an ONNX import option */
  int64_t dims[1] = {1};
  mil_onnx_input_shape is = {"x", 1, dims};
  o.n_input_shapes = 1;
  o.input_shapes = &is;
  assert_int_equal(mil_convert(EXAMPLE, &o, &m, &d), MIL_ERR_INVALID);
  assert_null(m);
  /* a model interface naming an input the model does not have */
  memset(&o, 0, sizeof o);
  mil_input_type it = mil_input_type_default("no_such_input", false);
  mil_model_interface mi = {.n_inputs = 1, .inputs = &it};
  o.interface = &mi;
  mil_diag_clear(&d);
  assert_int_equal(mil_convert(EXAMPLE, &o, &m, &d), MIL_ERR_INVALID);
  assert_non_null(strstr(mil_diag_first_error(&d), "input type 'no_such_input': the model has no input"));
  assert_null(m);
  /* an unknown pipeline */
  memset(&o, 0, sizeof o);
  o.pipeline = "no_such_pipeline";
  assert_int_equal(mil_convert(EXAMPLE, &o, &m, &d), MIL_ERR_NOT_FOUND);
  assert_null(m);
  mil_diag_clear(&d);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_import_runs_no_pipeline),
      cmocka_unit_test(test_saved_result_reads_back),
      cmocka_unit_test(test_core_ml_source_is_retargeted),
      cmocka_unit_test(test_bad_options),
  };
  return shared_exit(cmocka_run_group_tests(tests, NULL, NULL));
}
