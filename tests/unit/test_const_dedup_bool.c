/* const_deduplication and scalar bool consts, as coremltools'
 * passes/defs/cleanup/const_deduplication.py decides them: should_be_
 * deduplicated refuses a Python bool (isinstance(val, bool)), which is what
 * a builder argument or default input is (ConstDeduplication.
 * test_bool_should_not_be_deduplicated), while a bool read from a model
 * protobuf is a numpy np.bool_ (milproto/load.py _load_value), a
 * one-element value that merges once const_threshold <= 1. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "mil/mil.h"
#include "mil/model.h"
#include "mil/passes.h"
#include "mil/text.h"
#include "model_testutil.h"

/* Two concats, each with its own interleave=False const. */
static const char k_prog[] = "main[CoreML5](%x: (2, 3, fp32)(Tensor)) {\n"
                             "  block0() {\n"
                             "    %ax0: (int32)*(Scalar) = const(val=0, name=\"ax0\")\n"
                             "    %il0: (bool)*(Scalar) = const(val=False, name=\"il0\")\n"
                             "    %c0: (4, 3, fp32)(Tensor) = concat(values=(%x, %x), axis=%ax0, interleave=%il0, "
                             "name=\"c0\")\n"
                             "    %ax1: (int32)*(Scalar) = const(val=1, name=\"ax1\")\n"
                             "    %il1: (bool)*(Scalar) = const(val=False, name=\"il1\")\n"
                             "    %c1: (4, 6, fp32)(Tensor) = concat(values=(%c0, %c0), axis=%ax1, interleave=%il1, "
                             "name=\"c1\")\n"
                             "  } -> (%c1)\n"
                             "}\n";

static int64_t count_bool_consts(const mil_program *p) {
  const mil_block *b = mil_function_body(p->functions[0]);
  int64_t n = 0;
  for (const mil_op *op = b->first; op; op = op->next)
    if (mil_op_is_const(op) && op->outputs[0]->type->dtype == MIL_DT_BOOL) n++;
  return n;
}

/* Runs const_deduplication with const_threshold = threshold. */
static void dedup(mil_program *p, const char *threshold) {
  const mil_pass_def *pass = mil_pass_find("common::const_deduplication");
  assert_non_null(pass);
  mil_pass_options *o = mil_pass_options_new(pass);
  mil_diag d;
  mil_diag_init(&d);
  assert_int_equal(mil_pass_options_set(o, "const_threshold", threshold, &d), MIL_OK);
  assert_int_equal(mil_pass_run(pass, p, o, NULL, &d), MIL_OK);
  mil_pass_options_free(o);
  mil_diag_clear(&d);
}

static mil_program *parse(void) {
  mil_program *p = NULL;
  mil_diag d;
  mil_diag_init(&d);
  assert_int_equal(mil_parse_program(k_prog, strlen(k_prog), NULL, &p, &d), MIL_OK);
  mil_diag_clear(&d);
  return p;
}

/* The program written to a Model protobuf and read back. */
static mil_model *through_proto(void) {
  mil_model *m = mt_through_proto(parse());
  assert_non_null(m);
  return m;
}

static void test_python_bools_stay_apart(void **state) {
  (void)state;
  mil_program *p = parse();
  dedup(p, "-1");
  assert_int_equal(count_bool_consts(p), 2);
  mil_program_free(p);
}

static void test_numpy_bools_merge_at_threshold_1(void **state) {
  (void)state;
  mil_model *m = through_proto();
  mil_program *p = mil_model_program(m);
  assert_int_equal(count_bool_consts(p), 2);
  dedup(p, "1");
  assert_int_equal(count_bool_consts(p), 1);
  /* both concats now read the first const */
  const mil_block *b = mil_function_body(p->functions[0]);
  const mil_var *il[2] = {NULL, NULL};
  int k = 0;
  for (const mil_op *op = b->first; op; op = op->next)
    if (!strcmp(op->type, "concat")) il[k++] = mil_op_find_input(op, "interleave")->args[0].use.var;
  assert_int_equal(k, 2);
  assert_ptr_equal(il[0], il[1]);
  mil_model_free(m);
}

static void test_numpy_bools_apart_at_threshold_2(void **state) {
  (void)state;
  mil_model *m = through_proto();
  dedup(mil_model_program(m), "2"); /* np.prod(()) == 1 < 2 */
  assert_int_equal(count_bool_consts(mil_model_program(m)), 2);
  mil_model_free(m);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_python_bools_stay_apart),
      cmocka_unit_test(test_numpy_bools_merge_at_threshold_1),
      cmocka_unit_test(test_numpy_bools_apart_at_threshold_2),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
