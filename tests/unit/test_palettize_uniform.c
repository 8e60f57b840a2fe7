/* Uniform palettization of fp16 weights builds its LUT as coremltools does
 * (palettize_weights._get_lut_and_indices, mode UNIFORM: the step
 * (max - min) / (2^nbits - 1) in float64, each entry k * step + min in
 * float64, rounded once to fp16). Expected LUTs and indices recorded from
 * coremltools by tests/data/palettize_uniform_fp16/record.py; the weight
 * that fake compression leaves (lut[index] per element) must equal them
 * bit for bit, in iOS16 and iOS18 programs. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "mil/mil.h"
#include "mil/ops.h"
#include "mil/passes.h"
#include "mil/value.h"

typedef struct ucase {
  char name[32];
  int rows, cols;
  uint16_t w[512], lut[16];
  int idx[512];
} ucase;

static int read_cases(ucase *c, int max) {
  FILE *f = fopen(MIL_TEST_DATA "/data/palettize_uniform_fp16/uniform_fp16.txt", "r");
  assert_non_null(f);
  int n = -1;
  char word[16];
  while (fscanf(f, "%15s", word) == 1) {
    if (strcmp(word, "case") == 0) {
      assert_true(++n < max);
      assert_int_equal(fscanf(f, "%31s %d %d", c[n].name, &c[n].rows, &c[n].cols), 3);
      assert_true(c[n].rows * c[n].cols <= 512);
    } else if (strcmp(word, "weight") == 0 || strcmp(word, "lut") == 0) {
      bool w = word[0] == 'w';
      int k = w ? c[n].rows * c[n].cols : 16;
      for (int i = 0; i < k; i++) {
        unsigned v;
        assert_int_equal(fscanf(f, "%x", &v), 1);
        (w ? c[n].w : c[n].lut)[i] = (uint16_t)v;
      }
    } else {
      assert_string_equal(word, "indices");
      for (int i = 0; i < c[n].rows * c[n].cols; i++) assert_int_equal(fscanf(f, "%d", &c[n].idx[i]), 1);
    }
  }
  fclose(f);
  return n + 1;
}

static char *program_of(const ucase *c, const char *opset) {
  size_t cap = 32 * 1024, n = 0;
  char *s = malloc(cap);
  n += (size_t)snprintf(s + n, cap - n,
                        "main[%s](%%x: (1, %d, fp16)(Tensor)) {\n  block0() {\n    %%w: (%d, %d, fp16)*(Tensor) = "
                        "const(val=[", opset, c->cols, c->rows, c->cols);
  for (int i = 0; i < c->rows; i++) {
    n += (size_t)snprintf(s + n, cap - n, "%s[", i ? ", " : "");
    for (int j = 0; j < c->cols; j++)
      n += (size_t)snprintf(s + n, cap - n, "%s%.9g", j ? ", " : "", (double)mil_fp16_to_fp32(c->w[i * c->cols + j]));
    n += (size_t)snprintf(s + n, cap - n, "]");
  }
  snprintf(s + n, cap - n,
           "], name=\"w\")\n    %%y: (1, %d, fp16)(Tensor) = linear(x=%%x, weight=%%w, name=\"y\")\n  } -> (%%y)\n}\n",
           c->rows);
  return s;
}

static void test_uniform_lut_matches_coremltools(void **state) {
  (void)state;
  static ucase c[4];
  int n = read_cases(c, 4);
  assert_int_equal(n, 3);
  const char *const opsets[] = {"CoreML6", "CoreML8"};
  for (int k = 0; k < n; k++)
    for (int o = 0; o < 2; o++) {
      char *text = program_of(&c[k], opsets[o]);
      mil_program *p = NULL;
      mil_diag d = {0};
      if (mil_parse_program(text, strlen(text), NULL, &p, &d) != MIL_OK) fail_msg("parse: %s", mil_diag_first_error(&d));
      free(text);
      const mil_pass_def *def = mil_pass_find("compression::palettize_weights");
      mil_pass_options *opt = mil_pass_options_new(def);
      assert_int_equal(mil_pass_options_set(opt, "config", "{\"global_config\": {\"weight_threshold\": 0, \"nbits\": 4, "
                                            "\"mode\": \"uniform\"}}", &d), MIL_OK);
      assert_int_equal(mil_pass_options_set(opt, "fake_compression", "true", &d), MIL_OK);
      if (mil_pass_run(def, p, opt, NULL, &d) != MIL_OK) fail_msg("%s: %s", c[k].name, mil_diag_first_error(&d));
      mil_pass_options_free(opt);
      const mil_value *v = NULL;
      for (mil_op *op = mil_function_body(p->functions[0])->first; op; op = op->next)
        if (strcmp(op->type, "linear") == 0) v = mil_op_input_var(op, "weight")->val;
      assert_non_null(v);
      const uint16_t *got = mil_value_data(v);
      int bad = 0;
      for (int i = 0; i < c[k].rows * c[k].cols; i++) {
        uint16_t want = c[k].lut[c[k].idx[i]];
        if (got[i] != want && bad++ < 4)
          print_message("%s %s: element %d: got %04x, coremltools %04x (lut[%d])\n", c[k].name, opsets[o], i, got[i],
                        want, c[k].idx[i]);
      }
      assert_int_equal(bad, 0);
      mil_program_free(p);
      mil_diag_clear(&d);
    }
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_uniform_lut_matches_coremltools)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
