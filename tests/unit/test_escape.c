/* Names from a model never reach a terminal or a file name raw: control
 * characters and invalid UTF-8 are escaped in messages, in `mil print`,
 * `info`, `run` summaries and output file names, while valid names print
 * byte for byte. A NUL inside a protobuf string is an error. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "mil/mil.h"
#include "mil/model.h"
#include "unit/model_testutil.h"

static char *g_dir;

static int setup(void **state) {
  (void)state;
  g_dir = mt_tempdir();
  return g_dir ? 0 : -1;
}

static int teardown(void **state) {
  (void)state;
  mt_rm_rf(g_dir);
  free(g_dir);
  return 0;
}

static void expect_escape(const char *in, unsigned flags, const char *want) {
  char out[256];
  size_t n = mil_escape(in, out, sizeof out, flags);
  assert_string_equal(out, want);
  assert_int_equal(n, strlen(want));
  assert_int_equal(mil_escape_needed(in, flags), strcmp(in, want) != 0);
}

static void test_escape_rules(void **state) {
  (void)state;
  expect_escape("plain_name/1", 0, "plain_name/1");
  expect_escape("caf\xc3\xa9 \xe6\x97\xa5\xe6\x9c\xac \xf0\x9f\x98\x80", 0, "caf\xc3\xa9 \xe6\x97\xa5\xe6\x9c\xac \xf0\x9f\x98\x80");
  expect_escape("a\\b", 0, "a\\b");
  expect_escape("\x1b[31mred\x1b[0m", 0, "\\x1b[31mred\\x1b[0m");
  expect_escape("\x1b]0;title\x07", 0, "\\x1b]0;title\\x07");
  expect_escape("line\nbreak\ttab\rcr\x7f", 0, "line\\x0abreak\\x09tab\\x0dcr\\x7f");
  expect_escape("c1 \xc2\x9b csi", 0, "c1 \\xc2\\x9b csi");   /* U+009B, a C1 control */
  expect_escape("\xc2\xa0nbsp", 0, "\xc2\xa0nbsp");           /* U+00A0 is printable */
  expect_escape("raw \x9b csi", 0, "raw \\x9b csi");          /* a lone continuation byte */
  expect_escape("over \xc0\xaf", 0, "over \\xc0\\xaf");       /* overlong '/' */
  expect_escape("sur \xed\xa0\x80", 0, "sur \\xed\\xa0\\x80"); /* a surrogate */
  expect_escape("big \xf4\x90\x80\x80", 0, "big \\xf4\\x90\\x80\\x80");
  expect_escape("cut \xe6\x97", 0, "cut \\xe6\\x97");        /* truncated sequence */
  expect_escape("a/b\x1b", MIL_ESCAPE_FILE_NAME, "a_b%1b");
  /* truncation like snprintf; mil_escaped says it cut */
  char small[8];
  assert_int_equal(mil_escape("\x1b\x1b\x1b", small, sizeof small, 0), 12);
  assert_string_equal(small, "\\x1b\\x1");
  const char *ok = "fine";
  assert_ptr_equal(mil_escaped(ok, small, sizeof small), ok);
  assert_string_equal(mil_escaped("\x1b\x1b\x1b", small, sizeof small), "\\x1b...");
}

static void test_diag_messages_are_escaped(void **state) {
  (void)state;
  mil_diag d = {0};
  mil_diag_error(&d, MIL_ERR_INVALID, "op '%s': unknown op type '%s'", "y\x1b[2J", "t\xff");
  assert_string_equal(mil_diag_first_error(&d), "op 'y\\x1b[2J': unknown op type 't\\xff'");
  mil_diag_add(&d, MIL_SEV_WARNING, "%s", "\xe2\x9c\x93 ok");
  assert_string_equal(d.msgs[1].text, "\xe2\x9c\x93 ok");
  mil_diag_clear(&d);
}

/* A model whose names carry terminal escapes (and one valid non-ASCII
 * name): input "x\e[31m", identity op "id\e]0;t\a" producing "y\e[2J",
 * a relu producing "r\xc3\xa9sum\xc3\xa9". */
static mil_model *evil_model(const char *op_type) {
  mil_program *p = mil_program_new(NULL);
  mil_function *f = mil_function_new(p, "main", "CoreML7");
  int64_t s[1] = {4};
  mil_var *x = mil_function_add_input(f, "x\x1b[31m", mil_type_tensor_shape(p, MIL_DT_FP32, 1, s));
  mil_block *b = mil_function_body(f);
  mil_op *op = mil_op_new(p, op_type, "id\x1b]0;t\x07");
  mil_op_add_input(op, "x", x);
  mil_var *y = mil_op_add_output(op, "y\x1b[2J", x->type);
  mil_block_append(b, op);
  mil_op *r = mil_op_new(p, "relu", "r\xc3\xa9sum\xc3\xa9");
  mil_op_add_input(r, "x", y);
  mil_var *z = mil_op_add_output(r, "r\xc3\xa9sum\xc3\xa9", x->type);
  mil_block_append(b, r);
  mil_var *outs[2] = {y, z};
  mil_block_set_outputs(b, 2, outs);
  mil_model *m = NULL;
  mil_diag d = {0};
  assert_int_equal(mil_model_from_program(p, 0, &m, &d), MIL_OK);
  mil_diag_clear(&d);
  return m;
}

static void expect_clean(const char *what, const char *text, size_t n) {
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)text[i];
    if ((c < 0x20 && c != '\n') || c == 0x7f) fail_msg("%s: raw byte 0x%02x at %zu: %.*s", what, c, i, (int)n, text);
  }
}

static void test_print_escapes_only_what_it_must(void **state) {
  (void)state;
  mil_model *m = evil_model("identity");
  mil_buf b = {0};
  mil_print_options opt = {MIL_PRINT_COREMLTOOLS, false};
  mil_print_program(mil_model_program(m), &opt, &b);
  expect_clean("print", b.data, b.len);
  if (getenv("MIL_TEST_VERBOSE")) fprintf(stderr, "%s", b.data);
  assert_non_null(strstr(b.data, "%x\\x1b[31m: (4,fp32)(Tensor)"));
  assert_non_null(strstr(b.data, "%y\\x1b[2J: (4,fp32)(Tensor) = identity(x=%x\\x1b[31m, name=\"id\\x1b]0;t\\x07\")"));
  /* valid UTF-8 names byte for byte, as coremltools prints them */
  assert_non_null(strstr(b.data, "%r\xc3\xa9sum\xc3\xa9: (4,fp32)(Tensor) = relu(x=%y\\x1b[2J, name=\"r\xc3\xa9sum\xc3\xa9\")"));
  mil_buf_free(&b);
  mil_model_free(m);
}

/* ---- NUL inside protobuf strings ---------------------------------------- */

/* Replaces the first occurrence of `find` in the file by `repl` (same length). */
static void patch_file(const char *path, const char *find, const char *repl, size_t n) {
  size_t len = 0;
  unsigned char *buf = mt_read(path, &len);
  assert_non_null(buf);
  unsigned char *at = memmem(buf, len, find, n);
  if (!at) fail_msg("%s: '%s' not found", path, find);
  memcpy(at, repl, n);
  assert_true(mt_write(path, buf, len));
  free(buf);
}

static void test_nul_in_protobuf_strings(void **state) {
  (void)state;
  /* an op name */
  char *mm = mt_path(g_dir, "nul.mlmodel");
  mil_diag d = {0};
  assert_null(mt_save_free(evil_model("identity"), mm));
  patch_file(mm, "r\xc3\xa9sum\xc3\xa9", "r\0sum\xc3\xa9", 7);
  mil_model *back = NULL;
  assert_int_equal(mil_model_load(mm, &back, &d), MIL_ERR_FORMAT);
  assert_null(back);
  if (!strstr(mil_diag_first_error(&d), "holds a NUL byte")) fail_msg("%s", mil_diag_first_error(&d));
  mil_diag_clear(&d);
  /* a blob fileName ("weight\0bin") */
  int64_t s[1] = {16};
  float w[16] = {0};
  mil_model *m = NULL;
  assert_int_equal(mil_model_from_program(mt_add_const_program("w", 1, s, w), 0, &m, &d), MIL_OK);
  char *pkg = mt_path(g_dir, "nul.mlpackage");
  assert_null(mt_save_free(m, pkg));
  char *mf = mt_path(pkg, "Data/com.apple.CoreML/model.mlmodel");
  patch_file(mf, "weight.bin", "weight\0bin", 10);
  assert_int_equal(mil_model_load(pkg, &back, &d), MIL_ERR_FORMAT);
  if (!strstr(mil_diag_first_error(&d), "holds a NUL byte")) fail_msg("%s", mil_diag_first_error(&d));
  mil_diag_clear(&d);
  free(mf), free(pkg), free(mm);
}

/* ---- the mil tool -------------------------------------------------------- */

/* Runs the mil tool with args (a shell fragment), returns stdout+stderr. */
static char *run_cli(const char *args, int *status) {
  char cmd[4096];
  snprintf(cmd, sizeof cmd, "cd '%s' && '%s' %s 2>&1", g_dir, MIL_CLI_PATH, args);
  FILE *f = popen(cmd, "r");
  assert_non_null(f);
  size_t cap = 1 << 16, n = 0;
  char *buf = malloc(cap);
  size_t r;
  while ((r = fread(buf + n, 1, cap - 1 - n, f)) > 0) n += r;
  buf[n] = 0;
  *status = pclose(f);
  return buf;
}

static void test_cli_output_is_escaped(void **state) {
  (void)state;
  /* an unknown op type carrying an escape: validate reports it */
  char *bad = mt_path(g_dir, "bad.mlpackage"), *good = mt_path(g_dir, "good.mlpackage");
  assert_null(mt_save_free(evil_model("evil\x1b[5mtype"), bad));
  assert_null(mt_save_free(evil_model("identity"), good));
  static const char *const cmds[] = {"validate bad.mlpackage", "print bad.mlpackage", "info bad.mlpackage",
                                     "run bad.mlpackage --random-inputs --no-write", "validate good.mlpackage",
                                     "print good.mlpackage", "print --complete good.mlpackage", "info good.mlpackage",
                                     "run good.mlpackage --random-inputs --output-dir out",
                                     "verify good.mlpackage good.mlpackage", "convert good.mlpackage good.mil",
                                     "opt good.mlpackage -o opt.mlpackage"};
  for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++) {
    int status;
    char *out = run_cli(cmds[i], &status);
    expect_clean(cmds[i], out, strlen(out));
    if (!strncmp(cmds[i], "validate bad", 12)) assert_non_null(strstr(out, "evil\\x1b[5mtype"));
    if (!strncmp(cmds[i], "run good", 8)) {
      assert_int_equal(status, 0);
      assert_non_null(strstr(out, "y\\x1b[2J: (4) fp32"));
      assert_non_null(strstr(out, "r\xc3\xa9sum\xc3\xa9: (4) fp32"));
    }
    free(out);
  }
  /* output files named after outputs: escaped, valid UTF-8 kept */
  char *f1 = mt_path(g_dir, "out/y%1b[2J.npy"), *f2 = mt_path(g_dir, "out/r\xc3\xa9sum\xc3\xa9.npy");
  assert_true(mt_exists(f1));
  assert_true(mt_exists(f2));
  free(f1), free(f2), free(bad), free(good);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_escape_rules),
      cmocka_unit_test(test_diag_messages_are_escaped),
      cmocka_unit_test(test_print_escapes_only_what_it_must),
      cmocka_unit_test(test_nul_in_protobuf_strings),
      cmocka_unit_test(test_cli_output_is_escaped),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
