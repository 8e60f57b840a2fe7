/* mil_program_retarget (ops.h): moving a program to another opset, as
 * ct.convert(minimum_deployment_target=...) writes it, when its ops allow. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "mil/mil.h"
#include "mil/ops.h"
#include "mil/text.h"

static mil_program *parse(const char *text) {
  mil_program *p = NULL;
  mil_diag d;
  mil_diag_init(&d);
  if (mil_parse_program(text, strlen(text), NULL, &p, &d) != MIL_OK) fail_msg("parse: %s", mil_diag_first_error(&d));
  mil_diag_clear(&d);
  return p;
}

static void test_up_and_down(void **state) {
  (void)state;
  mil_program *p = parse("main[CoreML3](%x: (2, 3, fp32)(Tensor)) {\n"
                         "  block0() {\n"
                         "    %y: (2, 3, fp32)(Tensor) = relu(x=%x, name=\"y\")\n"
                         "  } -> (%y)\n"
                         "}\n");
  mil_diag d;
  mil_diag_init(&d);
  assert_int_equal(mil_program_retarget(p, MIL_IOS17, &d), MIL_OK);
  assert_string_equal(p->functions[0]->opset, "CoreML7");
  assert_string_equal(p->functions[0]->specs[0].opset, "CoreML7"); /* the body specialization follows */
  assert_non_null(mil_function_body(p->functions[0])->first);
  assert_int_equal(mil_program_validate(p, &d), MIL_OK);
  assert_int_equal(mil_program_retarget(p, MIL_IOS15, &d), MIL_OK);
  assert_string_equal(p->functions[0]->opset, "CoreML5");
  assert_int_equal(mil_program_retarget(p, 3, &d), MIL_ERR_INVALID);
  assert_int_equal(mil_program_retarget(p, MIL_IOS26 + 1, &d), MIL_ERR_INVALID);
  assert_string_equal(p->functions[0]->opset, "CoreML5");
  mil_diag_clear(&d);
  mil_program_free(p);
}

/* An op the target lacks, or whose variant there takes other inputs: the
 * program keeps its opset and every problem is reported. */
static void test_refused(void **state) {
  (void)state;
  mil_program *p = parse("main[CoreML7](%x: (2, 3, fp32)(Tensor)) {\n"
                         "  block0() {\n"
                         "    %q: (2, 3, int8)(Tensor) = quantize(input=%x, scale=0.5, output_dtype=\"int8\", name=\"q\")\n"
                         "    %y: (2, 3, fp32)(Tensor) = dequantize(input=%q, scale=0.5, name=\"y\")\n"
                         "  } -> (%y)\n"
                         "}\n");
  mil_diag d;
  mil_diag_init(&d);
  assert_int_equal(mil_program_retarget(p, MIL_IOS16, &d), MIL_ERR_TYPE);
  assert_string_equal(p->functions[0]->opset, "CoreML7");
  assert_string_equal(p->functions[0]->specs[0].opset, "CoreML7");
  assert_int_equal(d.n_errors, 2);
  assert_non_null(strstr(mil_diag_first_error(&d), "cannot retarget to iOS16 (CoreML6): function 'main': op 'q' "
                                                   "(quantize): op type 'quantize' needs opset CoreML7 (iOS17)"));
  mil_diag_clear(&d);
  assert_int_equal(mil_program_validate(p, &d), MIL_OK); /* still valid where it was */
  mil_program_free(p);

  /* crop_resize takes boxes instead of roi from iOS17 on */
  p = parse("main[CoreML5](%x: (1, 1, 4, 4, fp32)(Tensor), %r: (1, 1, 4, 1, 1, fp32)(Tensor)) {\n"
            "  block0() {\n"
            "    %y: (1, 1, 1, 2, 2, fp32)(Tensor) = crop_resize(x=%x, roi=%r, target_height=2, target_width=2, "
            "name=\"y\")\n"
            "  } -> (%y)\n"
            "}\n");
  assert_int_equal(mil_program_retarget(p, MIL_IOS16, &d), MIL_OK);
  assert_int_not_equal(mil_program_retarget(p, MIL_IOS17, &d), MIL_OK);
  assert_non_null(strstr(mil_diag_first_error(&d), "unknown input 'roi'"));
  assert_string_equal(p->functions[0]->opset, "CoreML6");
  mil_diag_clear(&d);
  mil_program_free(p);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_up_and_down),
      cmocka_unit_test(test_refused),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
