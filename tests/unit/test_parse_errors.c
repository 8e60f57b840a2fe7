/* MIL text parser errors: every malformed input gives MIL_ERR_PARSE (or the
 * I/O / format status for files) and one message
 * "<file>:<line>:<col>: <what was expected, what was found>", whose exact
 * text and position are checked here. Run under ASan these also check that
 * failing parses free everything. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "mil/text.h"

/* Parses text (of length len) and checks the status and the first error. */
static void expect_error_n(const char *text, size_t len, mil_status want_st, const char *want_msg) {
  mil_diag d;
  mil_diag_init(&d);
  mil_program *p = (mil_program *)(uintptr_t)1;
  mil_parse_options o = {.filename = "t.mil", .base_dir = NULL};
  mil_status st = mil_parse_program(text, len, &o, &p, &d);
  const char *msg = mil_diag_first_error(&d);
  if (st != want_st || !msg || strcmp(msg, want_msg) != 0)
    fail_msg("status %s (want %s)\n  got:  %s\n  want: %s", mil_status_str(st), mil_status_str(want_st),
             msg ? msg : "(none)", want_msg);
  assert_null(p);
  assert_int_equal(d.n_errors, 1);
  mil_diag_clear(&d);
}

static void expect_error(const char *text, const char *want_msg) {
  expect_error_n(text, strlen(text), MIL_ERR_PARSE, want_msg);
}

#define HEAD "main[CoreML7](%x: (2,fp32)(Tensor)) {\n  block0() {\n"
#define TAIL "  } -> (%x)\n}\n"

static void test_syntax(void **state) {
  (void)state;
  /* a missing ',' between arguments */
  expect_error(HEAD "    %r: (2,fp32)(Tensor) = relu(x=%x name=\"r\")\n" TAIL,
               "t.mil:3:38: expected ')' after arguments, found 'name'");
  /* unbalanced parenthesis */
  expect_error(HEAD "    %r: (2,fp32)(Tensor) = relu(x=%x, name=\"r\"\n" TAIL,
               "t.mil:4:3: expected ')' after arguments, found '}'");
  expect_error("main[CoreML7](%x: (2,fp32)(Tensor) {\n  block0() {\n" TAIL,
               "t.mil:1:36: expected ')' after the function inputs, found '{'");
  /* unbalanced braces: one missing, one extra */
  expect_error(HEAD "  } -> (%x)\n", "t.mil:4:1: expected '}' closing function 'main', found end of input");
  expect_error(HEAD TAIL "}\n", "t.mil:5:1: expected a function ('main[CoreML7](...) {'), found '}'");
  expect_error(HEAD "    %r: (2,fp32)(Tensor) = relu(x=%x, name=\"r\")\n  } (%r)\n}\n",
               "t.mil:4:5: expected '->' after the block body, found '('");
  /* stray characters */
  expect_error(HEAD "    $\n" TAIL, "t.mil:3:5: expected an op ('%name: type = op_type(...)') or '}', found '$'");
  expect_error(HEAD "    %r: (2,fp32)(Tensor) = (x=%x, name=\"r\")\n" TAIL,
               "t.mil:3:28: expected an op type after '=', found '('");
  static const char nul[] = HEAD "    %r: (2,fp32)(Tensor) = relu(x=%x,\0 name=\"r\")\n" TAIL;
  expect_error_n(nul, sizeof nul - 1, MIL_ERR_PARSE, "t.mil:3:38: expected an argument name, found byte 0x00");
  /* missing pieces */
  expect_error("", "t.mil:1:1: expected a function ('main[CoreML7](...) {'), found end of input");
  expect_error("# only a comment\n", "t.mil:2:1: expected a function ('main[CoreML7](...) {'), found end of input");
  expect_error(HEAD "    %r: (2,fp32)(Tensor) = relu(x=%x)\n" TAIL,
               "t.mil:3:37: expected name=\"...\" among the arguments of the op, found ')'");
  expect_error(HEAD "    %c: (2,fp32)*(Tensor) = const(name=\"c\")\n" TAIL, "t.mil:3:29: const 'c' has no val= argument");
  /* strings */
  expect_error(HEAD "    %c: (string)*(Scalar) = const(val=\"a\\qc\", name=\"c\")\n" TAIL,
               "t.mil:3:41: unknown escape '\\q' in a string");
  expect_error(HEAD "    %c: (string)*(Scalar) = const(val=\"abc", "t.mil:3:39: unterminated string (no closing \")");
}

static void test_truncation(void **state) {
  (void)state;
  static const char full[] = HEAD "    %c: (2,fp32)*(Tensor) = const(val=[1.5, -2.0], name=\"c\")\n"
                                  "    %r: (2,fp32)(Tensor) = add(x=%x, y=%c, name=\"r\")\n"
                                  "  } -> (%r)\n}\n";
  size_t n = sizeof full - 1;
  /* cut in the middle of a value */
  const char *cut = strstr(full, "-2.0");
  expect_error_n(full, (size_t)(cut - full), MIL_ERR_PARSE,
                 "t.mil:3:45: expected a number for an element of %c (fp32), found end of input");
  /* every shorter prefix fails cleanly with a positioned message */
  size_t last_brace = n - 2; /* the final '}' */
  for (size_t len = 0; len <= last_brace; len++) {
    mil_diag d;
    mil_diag_init(&d);
    mil_program *p = NULL;
    mil_parse_options o = {.filename = "t.mil", .base_dir = NULL};
    mil_status st = mil_parse_program(full, len, &o, &p, &d);
    if (st != MIL_ERR_PARSE) fail_msg("prefix of %zu bytes: status %s", len, mil_status_str(st));
    assert_null(p);
    assert_true(strncmp(mil_diag_first_error(&d), "t.mil:", 6) == 0);
    mil_diag_clear(&d);
  }
  mil_program *p = NULL;
  assert_int_equal(mil_parse_program(full, n, NULL, &p, NULL), MIL_OK);
  mil_program_free(p);
}

static void test_numbers_and_types(void **state) {
  (void)state;
  expect_error(HEAD "    %c: (2,fp32)*(Tensor) = const(val=[1.2.3, 1.0], name=\"c\")\n" TAIL,
               "t.mil:3:40: malformed number '1.2.3'");
  expect_error(HEAD "    %c: (2,fp32)*(Tensor) = const(val=[1e, 1.0], name=\"c\")\n" TAIL,
               "t.mil:3:41: malformed number: expected exponent digits after '1e'");
  expect_error(HEAD "    %c: (2,fp32)*(Tensor) = const(val=[12abc, 1.0], name=\"c\")\n" TAIL,
               "t.mil:3:40: malformed number '12abc'");
  expect_error("main[CoreML7](%x: (2,float32)(Tensor)) {\n  block0() {\n" TAIL, "t.mil:1:22: unknown dtype 'float32'");
  expect_error("main[CoreML7](%x: (2,fp32)(Scalar)) {\n  block0() {\n" TAIL,
               "t.mil:1:27: a Scalar type has no dimensions (use (Tensor))");
  expect_error("main[CoreML7](%x: (2,fp32)(Tensr)) {\n  block0() {\n" TAIL,
               "t.mil:1:28: expected a type kind (Tensor, Scalar, State or List), found 'Tensr'");
  expect_error("main[CoreML7](%x: (-2,fp32)(Tensor)) {\n  block0() {\n" TAIL,
               "t.mil:1:20: bad dimension '-2' (expected a non-negative integer)");
  expect_error("main[CoreML7](%x: (2, 3)(Tensor)) {\n  block0() {\n" TAIL,
               "t.mil:1:24: expected ',' and a dtype after the dimensions, found ')'");
  expect_error("main[CoreML7](%x: List[?, (2,fp32)](Tensor)) {\n  block0() {\n" TAIL,
               "t.mil:1:36: a List[...] type must be followed by (List)");
}

static void test_names(void **state) {
  (void)state;
  expect_error("main[CoreML7](%x: (2,fp32)(Tensor), %x: (2,fp32)(Tensor)) {\n  block0() {\n" TAIL,
               "t.mil:1:37: duplicate definition of %x (first defined at line 1, column 15)");
  expect_error(HEAD "    %a: (1,fp32)(Tensor), %a: (1,fp32)(Tensor) = split(x=%x, name=\"s\")\n" TAIL,
               "t.mil:3:27: duplicate definition of %a (first defined at line 3, column 5)");
  expect_error(HEAD "    %r: (2,fp32)(Tensor) = add(x=%x, x=%x, name=\"r\")\n" TAIL, "t.mil:3:38: duplicate argument 'x'");
  expect_error(HEAD "    %r: (2,fp32)(Tensor) = add(x=%x, name=\"r\", name=\"s\")\n" TAIL,
               "t.mil:3:48: duplicate name= argument");
  expect_error(HEAD TAIL HEAD TAIL, "t.mil:5:1: duplicate function 'main'");
  expect_error(HEAD "    %a: (2,fp32)(Tensor) = relu(x=%b, name=\"a\")\n"
                    "    %b: (2,fp32)(Tensor) = relu(x=%x, name=\"b\")\n" TAIL,
               "t.mil:3:35: %b is used before its definition (at line 4)");
  expect_error(HEAD "    %c: (fp32)*(Scalar) = const(val=1.0, name=\"c\")\n"
                    "    %a: (2,fp32)(Tensor) = conv(x=%x, weight=%w, name=\"a\")\n" TAIL,
               "t.mil:4:46: undefined variable %w");
  /* a coremltools-form snippet: large consts are not printed */
  expect_error(HEAD "    %a: (2,fp32)(Tensor) = conv(x=%x, weight=%conv_weight_0, pad=[0, 0], name=\"a\")\n" TAIL,
               "t.mil:3:46: undefined variable %conv_weight_0; the text looks like the coremltools form, which "
               "leaves out constants with more than 10 elements: parse the complete form instead (mil print "
               "--complete)");
  expect_error("main[CoreML7](%x: (2,fp32)(Tensor), %p: (bool)(Scalar)) {\n  block0() {\n"
               "    %y: (2,fp32)(Tensor) = cond(pred=%p, name=\"c\")\n"
               "      c_true() {\n"
               "        %t: (2,fp32)(Tensor) = relu(x=%x, name=\"t\")\n"
               "      } -> (%t)\n"
               "      c_false() {\n"
               "      } -> (%t)\n" TAIL,
               "t.mil:8:13: %t is not visible here: it is defined at line 5 inside a block that does not enclose "
               "this use");
  /* a C1 control (U+008B) ends a name: the printer escapes it, so such a
   * name could not be printed and read back (found by fuzz_text_parse) */
  expect_error("main[CoreML7](%x: (2,fp32)(Tensor), %p: (bool)(Scalar)) {\n  block0() {\n"
               "    %y: (2,fp32)(Tensor) = cond(pred=%p, name=\"c\")\n"
               "      cond\xc2\x8brue() {\n",
               "t.mil:4:11: expected '(' after the block name, found byte 0xc2");
  expect_error(HEAD "    %a\xc2\x85" "b: (2,fp32)(Tensor) = relu(x=%x, name=\"a\")\n" TAIL,
               "t.mil:3:7: expected ':' after the variable name, found byte 0xc2");
  /* an op cannot read its own output */
  expect_error(HEAD "    %r: (2,fp32)(Tensor) = relu(x=%r, name=\"r\")\n" TAIL,
               "t.mil:3:35: %r is used before its definition (at line 3): an op cannot read its own outputs");
}

static void test_values(void **state) {
  (void)state;
  expect_error(HEAD "    %c: (2, 3, fp32)*(Tensor) = const(val=[[1.0, 2.0, 3.0], [4.0, 5.0]], name=\"c\")\n" TAIL,
               "t.mil:3:70: value of %c has 2 elements in dimension 1, the type says 3");
  expect_error(HEAD "    %c: (2, 3, fp32)*(Tensor) = const(val=[[1.0, 2.0, 3.0, 3.5], [4.0, 5.0, 6.0]], name=\"c\")\n" TAIL,
               "t.mil:3:58: value of %c has more than 3 elements in dimension 1");
  expect_error(HEAD "    %c: (2, 3, fp32)*(Tensor) = const(val=[[1.0, 2.0, 3.0]], name=\"c\")\n" TAIL,
               "t.mil:3:59: value of %c has 1 elements in dimension 0, the type says 2");
  expect_error(HEAD "    %c: (2,fp32)*(Tensor) = const(val=[[1.0], [2.0]], name=\"c\")\n" TAIL,
               "t.mil:3:40: expected a number for an element of %c (fp32), found '['");
  expect_error(HEAD "    %c: (2,fp32)*(Tensor) = const(val=1.0, name=\"c\")\n" TAIL,
               "t.mil:3:39: expected '[' opening dimension 0 of the value of %c, found '1.0'");
  expect_error(HEAD "    %c: (2,uint8)*(Tensor) = const(val=[3, 300], name=\"c\")\n" TAIL,
               "t.mil:3:44: value 300 is out of range for uint8 (element of %c)");
  expect_error(HEAD "    %c: (2,uint8)*(Tensor) = const(val=[3, -1], name=\"c\")\n" TAIL,
               "t.mil:3:44: value -1 is out of range for uint8 (element of %c)");
  expect_error(HEAD "    %c: (int8)*(Scalar) = const(val=128, name=\"c\")\n" TAIL,
               "t.mil:3:37: value 128 is out of range for int8 (element of %c)");
  expect_error(HEAD "    %c: (int64)*(Scalar) = const(val=9223372036854775808, name=\"c\")\n" TAIL,
               "t.mil:3:38: value 9223372036854775808 is out of range for int64 (element of %c)");
  expect_error(HEAD "    %c: (2,uint4)*(Tensor) = const(val=[3, 256], name=\"c\")\n" TAIL,
               "t.mil:3:44: value 256 is out of range for uint4 (element of %c)");
  expect_error(HEAD "    %c: (2,fp16)*(Tensor) = const(val=[3, 70000.0], name=\"c\")\n" TAIL,
               "t.mil:3:43: value 70000.0 is out of range for fp16 (element of %c)");
  expect_error(HEAD "    %c: (fp32)*(Scalar) = const(val=1e39, name=\"c\")\n" TAIL,
               "t.mil:3:37: value 1e39 is out of range for fp32 (element of %c)");
  expect_error(HEAD "    %c: (2,int32)*(Tensor) = const(val=[3, 2.5], name=\"c\")\n" TAIL,
               "t.mil:3:44: expected an integer for an element of %c (int32), found '2.5'");
  expect_error(HEAD "    %c: (2,fp32)*(Tensor) = const(val=[1.0, True], name=\"c\")\n" TAIL,
               "t.mil:3:45: expected a number for an element of %c (fp32), found 'True'");
  expect_error(HEAD "    %c: (bool)*(Scalar) = const(val=1, name=\"c\")\n" TAIL,
               "t.mil:3:37: expected True or False for an element of %c (bool), found '1'");
  expect_error(HEAD "    %c: (is0,fp32)*(Tensor) = const(val=[1.0], name=\"c\")\n" TAIL,
               "t.mil:3:41: const %c: type has a non-constant dimension 0");
  /* a huge declared shape is rejected before anything is allocated for it */
  expect_error(HEAD "    %c: (10000, 10000, 10000, fp32)*(Tensor) = const(val=[[[1.0]]], name=\"c\")\n" TAIL,
               "t.mil:3:58: const %c: the text is too short for a value of 1000000000000 elements");
  /* coremltools-form literals */
  expect_error(HEAD "    %r: (2,fp32)(Tensor) = add(x=%x, y=[[1, 2], [3]], name=\"r\")\n" TAIL,
               "t.mil:3:49: ragged literal: a list at depth 1 has 1 elements, an earlier one 2");
  expect_error(HEAD "    %r: (2,fp32)(Tensor) = add(x=%x, y=[1, \"a\"], name=\"r\")\n" TAIL,
               "t.mil:3:40: literal mixes strings, booleans and numbers");
  expect_error(HEAD "    %r: (2,fp32)(Tensor) = add(x=%x, y=[1, [2]], name=\"r\")\n" TAIL,
               "t.mil:3:44: literal mixes scalars and lists at the same level");
  expect_error(HEAD "    %r: (2,fp32)(Tensor) = add(x=%x, y=@blob(\"w.bin\", 0), name=\"r\")\n" TAIL,
               "t.mil:3:40: @blob(...) is only allowed as the val of a const");
}

/* Appends to a growing test text. */
static void cat(char **buf, size_t *len, size_t *cap, const char *fmt, ...) {
  va_list ap;
  for (;;) {
    va_start(ap, fmt);
    int n = vsnprintf(*buf + *len, *cap - *len, fmt, ap);
    va_end(ap);
    if ((size_t)n < *cap - *len) {
      *len += (size_t)n;
      return;
    }
    *cap = *cap * 2 + (size_t)n;
    *buf = realloc(*buf, *cap);
    assert_non_null(*buf);
  }
}

static void test_nesting_limits(void **state) {
  (void)state;
  size_t len = 0, cap = 1024;
  char *t = malloc(cap);
  /* 65 nested blocks: block d opens on line 2d+2 */
  cat(&t, &len, &cap, "main[CoreML7](%%p: (bool)(Scalar)) {\nblock0() {\n");
  for (int d = 1; d <= 65; d++) cat(&t, &len, &cap, "%%c%d: (bool)(Scalar) = cond(pred=%%p, name=\"c%d\")\nb%d() {\n", d, d, d);
  for (int d = 65; d >= 0; d--) cat(&t, &len, &cap, "} -> (%%p)\n");
  cat(&t, &len, &cap, "}\n");
  expect_error(t, "t.mil:132:1: blocks nested deeper than 64 levels");
  /* 64 levels are fine */
  len = 0;
  cat(&t, &len, &cap, "main[CoreML7](%%p: (bool)(Scalar)) {\nblock0() {\n");
  for (int d = 1; d <= 64; d++) cat(&t, &len, &cap, "%%c%d: (bool)(Scalar) = cond(pred=%%p, name=\"c%d\")\nb%d() {\n", d, d, d);
  for (int d = 64; d >= 0; d--) cat(&t, &len, &cap, "} -> (%%p)\n");
  cat(&t, &len, &cap, "}\n");
  mil_program *p = NULL;
  assert_int_equal(mil_parse_program(t, len, NULL, &p, NULL), MIL_OK);
  mil_program_free(p);
  /* a literal nested 33 deep: the 33rd '[' is at column 40 + 32 */
  len = 0;
  cat(&t, &len, &cap, "%s", HEAD "    %r: (2,fp32)(Tensor) = add(x=%x, y=");
  for (int i = 0; i < 33; i++) cat(&t, &len, &cap, "[");
  cat(&t, &len, &cap, "1");
  for (int i = 0; i < 33; i++) cat(&t, &len, &cap, "]");
  cat(&t, &len, &cap, "%s", ", name=\"r\")\n" TAIL);
  expect_error(t, "t.mil:3:72: literal nested deeper than 32 levels");
  /* 65 dimensions: the 65th dim is at column 19 + 64 * 3 */
  len = 0;
  cat(&t, &len, &cap, "main[CoreML7](%%x: (");
  for (int i = 0; i < 65; i++) cat(&t, &len, &cap, "1, ");
  cat(&t, &len, &cap, "%s", "fp32)(Tensor)) {\n  block0() {\n" TAIL);
  expect_error(t, "t.mil:1:212: more than 64 dimensions");
  /* the same with signed dims ("+1", found by fuzz_model_load: they were
   * stored past the 64th slot): the 65th is at column 20 + 64 * 4 */
  len = 0;
  cat(&t, &len, &cap, "main[CoreML7](%%x: (");
  for (int i = 0; i < 70; i++) cat(&t, &len, &cap, "+1, ");
  cat(&t, &len, &cap, "%s", "fp32)(Tensor)) {\n  block0() {\n" TAIL);
  expect_error(t, "t.mil:1:276: more than 64 dimensions");
  free(t);
}

static void test_files(void **state) {
  (void)state;
  mil_diag d;
  mil_diag_init(&d);
  mil_program *p = (mil_program *)(uintptr_t)1;
  assert_int_equal(mil_parse_file("/nonexistent/dir/x.mil", &p, &d), MIL_ERR_IO);
  assert_null(p);
  assert_string_equal(mil_diag_first_error(&d), "/nonexistent/dir/x.mil: cannot open the MIL text file: No such file or directory");
  mil_diag_clear(&d);
  /* a blob reference to a missing weight file is an I/O error at its position */
  const char *text = HEAD "    %w: (2,fp32)*(Tensor) = const(val=@blob(\"nowhere.bin\", 64), name=\"w\")\n" TAIL;
  mil_parse_options o = {.filename = "t.mil", .base_dir = "/nonexistent"};
  assert_int_equal(mil_parse_program(text, strlen(text), &o, &p, &d), MIL_ERR_IO);
  assert_null(p);
  assert_true(strncmp(mil_diag_first_error(&d), "t.mil:3:39: cannot open the weight file: ", 41) == 0);
  assert_non_null(strstr(mil_diag_first_error(&d), "/nonexistent/nowhere.bin"));
  mil_diag_clear(&d);
  /* NULL arguments */
  assert_int_equal(mil_parse_program(NULL, 5, NULL, &p, NULL), MIL_ERR_INVALID);
  assert_int_equal(mil_parse_program("", 0, NULL, NULL, NULL), MIL_ERR_INVALID);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_syntax), cmocka_unit_test(test_truncation),    cmocka_unit_test(test_numbers_and_types),
      cmocka_unit_test(test_names),  cmocka_unit_test(test_values),        cmocka_unit_test(test_nesting_limits),
      cmocka_unit_test(test_files),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
