/* The names passes give new ops and consts, as coremltools gives them.
 *
 * Every expected name below is derived by hand from coremltools' code:
 *  - builder.py, Builder._get_free_name(prefix): "<prefix>_<name_count
 *    [prefix]>", then name_count[prefix] += 1 (a class-level
 *    defaultdict(int) that never looks at the program's names); an op
 *    built without a name gets _get_free_name(op_type) (_maybe_set_name),
 *    a Python value bound to an input becomes a const named
 *    _get_free_name("<op_name>_<input>") (_add_const via _create_vars).
 *  - converter.py, _reset_conversion_state: ct.convert clears name_count,
 *    so a model read from disk and converted counts from 0.
 *  - passes/defs/cleanup/dedup_op_and_var_names.py, _gen_new_name: walking
 *    the function in order, a name seen before becomes "<name>_<j>", the
 *    smallest j >= 1 not seen. It runs in DEFAULT after the fusions and
 *    before add_fp16_cast (pass_pipeline.py, _COMMON_PASSES).
 *  - passes/defs/optimize_conv.py, fuse_conv_batchnorm: the new weight and
 *    bias are mb.const(val=..., before_op=conv_op) with no name, the new
 *    conv takes the batch_norm's output name.
 *  - passes/defs/optimize_linear.py, fuse_transpose_matmul: mb.matmul(x,
 *    y, transpose_x=bool, transpose_y=bool, before_op=op, name=op.name).
 *  - passes/defs/quantization.py, add_fp16_cast: an fp32 input var v gets
 *    a cast named "<v>_to_fp16", which const_elimination turns into a const
 *    of that name.
 */
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

/* conv + batch_norm, the conv's weight and bias consts named "const_0" and
 * "const_1" as a frontend's builder names them; the batch_norm's mean is
 * named `mean_name`, after the conv. */
static char *conv_bn_text(const char *mean_name) {
  static const char fmt[] =
      "main[CoreML5](%%x: (1, 2, 3, 3, fp32)(Tensor)) {\n"
      "  block0() {\n"
      "    %%const_0: (2, 2, 1, 1, fp32)*(Tensor) = const(val=[[[[1.0]], [[2.0]]], [[[3.0]], [[4.0]]]], "
      "name=\"const_0\")\n"
      "    %%const_1: (2,fp32)*(Tensor) = const(val=[0.5, -0.5], name=\"const_1\")\n"
      "    %%pt: (string)*(Scalar) = const(val=\"valid\", name=\"pt\")\n"
      "    %%conv_0: (1, 2, 3, 3, fp32)(Tensor) = conv(x=%%x, weight=%%const_0, bias=%%const_1, pad_type=%%pt, "
      "name=\"conv_0\")\n"
      "    %%%s: (2,fp32)*(Tensor) = const(val=[0.25, 0.75], name=\"%s\")\n"
      "    %%var: (2,fp32)*(Tensor) = const(val=[1.0, 4.0], name=\"var\")\n"
      "    %%gamma: (2,fp32)*(Tensor) = const(val=[2.0, 1.0], name=\"gamma\")\n"
      "    %%beta: (2,fp32)*(Tensor) = const(val=[0.0, 1.0], name=\"beta\")\n"
      "    %%eps: (fp32)*(Scalar) = const(val=0.001, name=\"eps\")\n"
      "    %%bn: (1, 2, 3, 3, fp32)(Tensor) = batch_norm(x=%%conv_0, mean=%%%s, variance=%%var, gamma=%%gamma, "
      "beta=%%beta, epsilon=%%eps, name=\"bn\")\n"
      "    %%out: (1, 2, 3, 3, fp32)(Tensor) = relu(x=%%bn, name=\"out\")\n"
      "  } -> (%%out)\n"
      "}\n";
  size_t n = sizeof fmt + 3 * strlen(mean_name);
  char *s = malloc(n);
  assert_non_null(s);
  snprintf(s, n, fmt, mean_name, mean_name, mean_name);
  return s;
}

/* matmul(x, transpose(y)) with the matmul's bool consts named as the
 * builder names them ("m_transpose_x_0", "m_transpose_y_0"). */
static const char k_matmul[] =
    "main[CoreML5](%x: (2, 3, fp32)(Tensor), %y: (4, 3, fp32)(Tensor)) {\n"
    "  block0() {\n"
    "    %perm: (2,int32)*(Tensor) = const(val=[1, 0], name=\"perm\")\n"
    "    %yt: (3, 4, fp32)(Tensor) = transpose(x=%y, perm=%perm, name=\"yt\")\n"
    "    %m_transpose_x_0: (bool)*(Scalar) = const(val=False, name=\"m_transpose_x_0\")\n"
    "    %m_transpose_y_0: (bool)*(Scalar) = const(val=False, name=\"m_transpose_y_0\")\n"
    "    %m: (2, 4, fp32)(Tensor) = matmul(x=%x, y=%yt, transpose_x=%m_transpose_x_0, "
    "transpose_y=%m_transpose_y_0, name=\"m\")\n"
    "    %out: (2, 4, fp32)(Tensor) = relu(x=%m, name=\"out\")\n"
    "  } -> (%out)\n"
    "}\n";

static mil_program *parse(const char *text) {
  mil_program *p = NULL;
  mil_diag d;
  mil_diag_init(&d);
  assert_int_equal(mil_parse_program(text, strlen(text), NULL, &p, &d), MIL_OK);
  mil_diag_clear(&d);
  return p;
}

/* The program written to a Model protobuf and read back: what `mil opt
 * model.mlpackage` starts from (the builder's counts at 0). */
static mil_model *loaded(const char *text) {
  mil_model *m = mt_through_proto(parse(text));
  assert_non_null(m);
  return m;
}

static void run(mil_program *p, const char *const *passes, int n) {
  mil_diag d;
  mil_diag_init(&d);
  for (int i = 0; i < n; i++) {
    const mil_pass_def *pass = mil_pass_find(passes[i]);
    assert_non_null(pass);
    assert_int_equal(mil_pass_run(pass, p, NULL, NULL, &d), MIL_OK);
  }
  mil_diag_clear(&d);
}

static const mil_op *find_op(const mil_program *p, const char *type) {
  for (const mil_op *op = mil_function_body(p->functions[0])->first; op; op = op->next)
    if (!strcmp(op->type, type)) return op;
  return NULL;
}

static const char *input_name(const mil_op *op, const char *input) {
  const mil_input *in = mil_op_find_input(op, input);
  assert_non_null(in);
  return in->args[0].use.var->name;
}

static const char *const k_conv_passes[] = {"common::fuse_conv_batchnorm", "common::dedup_op_and_var_names",
                                            "common::add_fp16_cast", "common::const_elimination",
                                            "common::dead_code_elimination"};

/* The frontend's const_0 / const_1 come first: the fused weight and bias,
 * "const_0" and "const_1" again for coremltools, become "const_0_1" and
 * "const_1_1" in dedup_op_and_var_names, then "<name>_to_fp16". */
static void test_fused_conv_weight_after_taken_name(void **state) {
  (void)state;
  char *text = conv_bn_text("mean");
  mil_model *m = loaded(text);
  mil_program *p = mil_model_program(m);
  run(p, k_conv_passes, 5);
  const mil_op *conv = find_op(p, "conv");
  assert_non_null(conv);
  assert_string_equal(conv->name, "bn_cast_fp16");
  assert_string_equal(input_name(conv, "weight"), "const_0_1_to_fp16");
  assert_string_equal(input_name(conv, "bias"), "const_1_1_to_fp16");
  mil_model_free(m);
  free(text);
}

/* The frontend's "const_1" (the mean) comes after the conv: the new bias,
 * inserted before the conv, is the first "const_1" dedup_op_and_var_names
 * meets and keeps the name; the dead mean becomes "const_1_1" (then goes). */
static void test_fused_conv_bias_before_later_holder(void **state) {
  (void)state;
  /* the conv's own bias renamed so that "const_1" is the mean's */
  char *text = conv_bn_text("const_1");
  char *b = strstr(text, "%const_1: (2,fp32)*(Tensor) = const(val=[0.5, -0.5], name=\"const_1\")");
  assert_non_null(b);
  memcpy(b + 1, "cbias_1", 7);
  b = strstr(b, "name=\"const_1\"");
  memcpy(b + 6, "cbias_1", 7);
  b = strstr(b, "bias=%const_1");
  memcpy(b + 6, "cbias_1", 7);
  mil_model *m = loaded(text);
  mil_program *p = mil_model_program(m);
  run(p, k_conv_passes, 5);
  const mil_op *conv = find_op(p, "conv");
  assert_non_null(conv);
  assert_string_equal(input_name(conv, "weight"), "const_0_1_to_fp16");
  assert_string_equal(input_name(conv, "bias"), "const_1_to_fp16");
  mil_model_free(m);
  free(text);
}

static const char *const k_matmul_passes[] = {"common::fuse_transpose_matmul", "common::dedup_op_and_var_names"};

/* Runs the first n_passes of k_matmul_passes on p and checks the names of
 * the fused matmul's transpose_x / transpose_y consts. */
static void check_matmul(mil_program *p, int n_passes, const char *want_x, const char *want_y) {
  run(p, k_matmul_passes, n_passes);
  const mil_op *mm = find_op(p, "matmul");
  assert_non_null(mm);
  assert_string_equal(mm->name, "m");
  assert_string_equal(input_name(mm, "transpose_x"), want_x);
  assert_string_equal(input_name(mm, "transpose_y"), want_y);
}

/* fuse_transpose_matmul on a loaded model: the new matmul "m" gets consts
 * "m_transpose_x_0" / "m_transpose_y_0" again (count 0), after the old
 * ones: "m_transpose_x_0_1" / "m_transpose_y_0_1" (coremltools'
 * "108_transpose_x_0_1"). */
static void test_matmul_consts_loaded(void **state) {
  (void)state;
  mil_model *m = loaded(k_matmul);
  check_matmul(mil_model_program(m), 2, "m_transpose_x_0_1", "m_transpose_y_0_1");
  mil_model_free(m);
}

/* The same program as PyMIL text, built in the running process: the
 * builder already counted "m_transpose_x_0", so the pass's const is
 * "m_transpose_x_1" (the golden _pipeline_default cases' greater_equal_1
 * after greater_equal_0). */
static void test_matmul_consts_built_in_process(void **state) {
  (void)state;
  mil_program *p = parse(k_matmul);
  check_matmul(p, 2, "m_transpose_x_1", "m_transpose_y_1");
  mil_program_free(p);
}

/* Without dedup_op_and_var_names (a single pass), no name repeats: the new
 * const already carries the "_1", the name coremltools gave is recorded,
 * and the program still binds by name. */
static void test_single_pass_never_repeats(void **state) {
  (void)state;
  mil_model *m = loaded(k_matmul);
  mil_program *p = mil_model_program(m);
  check_matmul(p, 1, "m_transpose_x_0_1", "m_transpose_y_0_1");
  assert_string_equal(mil_program_name_intended(p, input_name(find_op(p, "matmul"), "transpose_x")), "m_transpose_x_0");
  mil_diag d;
  mil_diag_init(&d);
  assert_int_equal(mil_program_verify(p, &d), MIL_OK);
  assert_int_equal(d.n_warnings, 0);
  mil_diag_clear(&d);
  mil_model_free(m);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_fused_conv_weight_after_taken_name),
      cmocka_unit_test(test_fused_conv_bias_before_later_holder),
      cmocka_unit_test(test_matmul_consts_loaded),
      cmocka_unit_test(test_matmul_consts_built_in_process),
      cmocka_unit_test(test_single_pass_never_repeats),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
