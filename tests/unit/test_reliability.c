/* Regression tests of reliability faults: hostile or unlucky inputs must
 * give a clear error (or a bounded amount of work), never a crash, a read of
 * freed memory, undefined behaviour or unbounded memory. Several faults are
 * only visible to a sanitizer (the ASan and the clang UBSan runs of CI run
 * this suite too). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "Model.pb-c.h"
#include "mil/interp.h"
#include "mil/mil.h"
#include "mil/model.h"
#include "mil/ops.h"
#include "mil/passes.h"
#include "mil/text.h"
#include "unit/model_testutil.h"

#if defined(__SANITIZE_ADDRESS__)
#define UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define UNDER_ASAN 1
#endif
#endif

static mil_program *parse_ok(const char *text) {
  mil_diag d;
  mil_diag_init(&d);
  mil_program *p = NULL;
  mil_parse_options o = {.filename = "t.mil", .base_dir = NULL};
  mil_status st = mil_parse_program(text, strlen(text), &o, &p, &d);
  if (st != MIL_OK) fail_msg("parse failed: %s", mil_diag_first_error(&d) ? mil_diag_first_error(&d) : "?");
  mil_diag_clear(&d);
  return p;
}

/* The first error of parsing text (which must fail), malloc'ed. */
static char *parse_error(const char *text) {
  mil_diag d;
  mil_diag_init(&d);
  mil_program *p = NULL;
  mil_parse_options o = {.filename = "t.mil", .base_dir = NULL};
  mil_status st = mil_parse_program(text, strlen(text), &o, &p, &d);
  assert_int_not_equal(st, MIL_OK);
  assert_null(p);
  const char *m = mil_diag_first_error(&d);
  assert_non_null(m);
  char *r = strdup(m);
  mil_diag_clear(&d);
  return r;
}

static void expect_has(const char *msg, const char *needle) {
  if (!strstr(msg, needle)) fail_msg("message '%s' lacks '%s'", msg, needle);
}

/* Writes text to a .mil file in a scratch directory and loads it with
 * mil_model_load (the directory is removed again). */
static mil_status load_text_file(const char *text, mil_model **m, mil_diag *d) {
  char *dir = mt_tempdir();
  char *path = mt_path(dir, "t.mil");
  assert_true(mt_write(path, text, strlen(text)));
  mil_status st = mil_model_load(path, m, d);
  mt_rm_rf(dir);
  free(path);
  free(dir);
  return st;
}

/* fault 1: the opset of a refused .mil program was printed after the
 * program (which owns the string) was freed. The message must name it. */
static void test_refused_opset_message(void **state) {
  (void)state;
  static const char text[] = "main[CoreML99](%x: (2, fp32)(Tensor)) {\n"
                             "  block0() {\n"
                             "    %y: (2, fp32)(Tensor) = relu(x=%x, name=\"y\")\n"
                             "  } -> (%y)\n"
                             "}\n";
  mil_model *m = NULL;
  mil_diag d;
  mil_diag_init(&d);
  assert_int_not_equal(load_text_file(text, &m, &d), MIL_OK);
  assert_null(m);
  expect_has(mil_diag_first_error(&d), "opset 'CoreML99'");
  mil_diag_clear(&d);
}

/* fault 14: an empty block with no outputs applied a zero offset to a NULL
 * array (clang's UBSan: "applying zero offset to null pointer"). */
static void test_empty_block(void **state) {
  (void)state;
  mil_program *p = parse_ok("main[CoreML7]() { block0() { } -> () }");
  mil_diag d;
  mil_diag_init(&d);
  assert_int_equal(mil_program_validate(p, &d), MIL_OK);
  mil_diag_clear(&d);
  mil_program_free(p);
  /* an empty tuple argument binds no var (found by fuzz_interp) */
  p = parse_ok("main[CoreML7]() {\n  block0() {\n    %a: (int32)*(Scalar) = const(val=0, name=\"a\")\n"
               "    %c: (2, fp32)(Tensor) = concat(values=(), axis=%a, name=\"c\")\n  } -> ()\n}\n");
  assert_int_not_equal(mil_program_validate(p, &d), MIL_OK);
  mil_diag_clear(&d);
  mil_program_free(p);
}

/* A name with a byte that is not valid UTF-8 was accepted, printed
 * escaped and read back as another name (found by fuzz_text_parse): such a
 * byte ends a name; valid UTF-8 stays part of it. */
static void test_names_utf8(void **state) {
  (void)state;
  char *e = parse_error("main[CoreML7](%x: (2, fp32)(Tensor)) {\n  \x8flock0() {\n  } -> (%x)\n}\n");
  expect_has(e, "t.mil:2:3: expected a block name");
  expect_has(e, "0x8f");
  free(e);
  mil_program *p = parse_ok("main[CoreML7](%x: (2, fp32)(Tensor)) {\n  bl\xc3\xa9" "ck0() {\n  } -> (%x)\n}\n");
  assert_string_equal(mil_function_body(p->functions[0])->name, "bl\xc3\xa9" "ck0");
  mil_program_free(p);
  /* the const of an inline literal is named after its op: an invalid byte
   * of the op name becomes '_' in the var name */
  p = parse_ok("main[CoreML7](%x: (2, fp32)(Tensor)) {\n  block0() {\n"
               "    %y: (2, fp32)(Tensor) = add(x=%x, y=[1.0, 2.0], name=\"z_\xe3" "at\")\n  } -> (%y)\n}\n");
  const mil_op *c = mil_function_body(p->functions[0])->first;
  assert_string_equal(c->type, "const");
  if (strncmp(c->outputs[0]->name, "z__at_y", 7) != 0) fail_msg("const named '%s'", c->outputs[0]->name);
  mil_program_free(p);
}

/* fault 13: one size rule, in the type constructor. */
static void test_size_rule_text(void **state) {
  (void)state;
  /* 2^62: a valid int64, refused for its size (not as "not an integer") */
  char *e = parse_error("main[CoreML7](%x: (4611686018427387904, fp32)(Tensor)) {\n"
                        "  block0() {\n  } -> (%x)\n}\n");
  expect_has(e, "t.mil:1:19: %x: tensor type too large");
  expect_has(e, "2^48");
  free(e);
  /* 3 dims of 2^30: 2^90 elements, beyond int64 */
  e = parse_error("main[CoreML7](%x: (2, fp32)(Tensor)) {\n"
                  "  block0() {\n"
                  "    %y: (1073741824, 1073741824, 1073741824, fp32)(Tensor) = relu(x=%x, name=\"y\")\n"
                  "  } -> (%y)\n}\n");
  expect_has(e, "t.mil:3:9: %y: tensor type too large");
  expect_has(e, "more than int64 holds");
  free(e);
  /* past int64 altogether */
  e = parse_error("main[CoreML7](%x: (99999999999999999999, fp32)(Tensor)) {\n"
                  "  block0() {\n  } -> (%x)\n}\n");
  expect_has(e, "larger than 2^63-1");
  free(e);
  /* the constructor itself refuses */
  mil_program *p = mil_program_new(NULL);
  int64_t big[3] = {1 << 30, 1 << 30, 1 << 30};
  assert_null(mil_type_tensor_shape(p, MIL_DT_FP32, 3, big));
  int64_t ok[2] = {1 << 20, 1 << 20};
  assert_non_null(mil_type_tensor_shape(p, MIL_DT_FP32, 2, ok));
  char why[200];
  assert_false(mil_tensor_size_ok(MIL_DT_FP32, 1, (mil_dim[]){{(int64_t)1 << 47, NULL, false}}, why, sizeof why));
  expect_has(why, "bytes");
  mil_program_free(p);
}

/* fault 13: a protobuf model whose input has a dim of 2^62. */
/* The message the writer makes of the program in text (free with
 * coreml__model__free_unpacked). */
static Coreml__Model *written(const char *text) {
  mil_program *p = parse_ok(text);
  mil_model *m = NULL;
  mil_diag d;
  mil_diag_init(&d);
  assert_int_equal(mil_model_from_program(p, 0, &m, &d), MIL_OK);
  void *buf = NULL;
  size_t len = 0;
  assert_int_equal(mil_model_serialize(m, NULL, &buf, &len, &d), MIL_OK);
  mil_model_free(m);
  mil_diag_clear(&d);
  Coreml__Model *pm = coreml__model__unpack(NULL, len, buf);
  assert_non_null(pm);
  free(buf);
  return pm;
}

/* The first error of loading pm (packed again, then freed) as `file`,
 * which must fail; malloc'ed. */
static char *load_error(Coreml__Model *pm, const char *file) {
  size_t len = coreml__model__get_packed_size(pm);
  void *buf = malloc(len);
  assert_non_null(buf);
  coreml__model__pack(pm, buf);
  coreml__model__free_unpacked(pm, NULL);
  mil_model *m = NULL;
  mil_diag d;
  mil_diag_init(&d);
  assert_int_not_equal(mil_model_load_proto(buf, len, file, NULL, &m, &d), MIL_OK);
  assert_null(m);
  assert_non_null(mil_diag_first_error(&d));
  char *e = strdup(mil_diag_first_error(&d));
  free(buf);
  mil_diag_clear(&d);
  return e;
}

static void test_size_rule_proto(void **state) {
  (void)state;
  Coreml__Model *pm = written("main[CoreML7](%x: (2, fp32)(Tensor)) {\n  block0() {\n"
                              "    %y: (2, fp32)(Tensor) = relu(x=%x, name=\"y\")\n  } -> (%y)\n}\n");
  Milproto__Function *f = pm->mlprogram->functions[0]->value;
  f->inputs[0]->type->tensortype->dimensions[0]->constant->size = (uint64_t)1 << 62;
  char *e = load_error(pm, "big.mlmodel");
  expect_has(e, "big.mlmodel");
  expect_has(e, "input 'x'");
  expect_has(e, "tensor type too large");
  free(e);
}

static size_t vm_size(void) {
  size_t base = 0;
  FILE *f = fopen("/proc/self/status", "r");
  char line[256];
  while (f && fgets(line, sizeof line, f))
    if (!strncmp(line, "VmSize:", 7)) base = (size_t)strtoull(line + 7, NULL, 10) * 1024;
  if (f) fclose(f);
  return base;
}

/* fault 2: value inference of a tile by 2^30 (8 GiB) or an unused 4 GiB
 * fill must not materialize them. Run in a child allowed 2 GiB more:
 * before the bound, validation allocated the tile's 16 GiB index map. */
static void run_limited(void (*fn)(void), size_t limit) {
#ifdef UNDER_ASAN
  (void)limit;
  fn(); /* ASan reserves its shadow in the data limit; run unlimited */
#else
  fflush(NULL);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    struct rlimit rl = {limit, limit};
    setrlimit(RLIMIT_AS, &rl);
    fn();
    _exit(0);
  }
  int ws = 0;
  assert_int_equal(waitpid(pid, &ws, 0), pid);
  if (!WIFEXITED(ws) || WEXITSTATUS(ws) != 0) fail_msg("the child failed (status %#x)", ws);
#endif
}

static void child_fail(const char *what, mil_diag *d) {
  fprintf(stderr, "%s: %s\n", what, d && mil_diag_first_error(d) ? mil_diag_first_error(d) : "?");
  _exit(3);
}

static void tile_and_fill(void) {
  static const char text[] =
      "main[CoreML7](%x: (2, fp32)(Tensor)) {\n  block0() {\n"
      "    %c: (2, fp32)*(Tensor) = const(val=[1.0, 2.0], name=\"c\")\n"
      "    %r: (1, int32)*(Tensor) = const(val=[1073741824], name=\"r\")\n"
      "    %t: (2147483648, fp32)(Tensor) = tile(x=%c, reps=%r, name=\"t\")\n"
      "    %s: (1, int32)*(Tensor) = const(val=[1073741824], name=\"s\")\n"
      "    %f: (1073741824, fp32)(Tensor) = fill(shape=%s, value=1.0, name=\"f\")\n"
      "    %y: (2, fp32)(Tensor) = relu(x=%x, name=\"y\")\n"
      "  } -> (%y)\n}\n";
  mil_diag d;
  mil_diag_init(&d);
  mil_program *p = NULL;
  if (mil_parse_program(text, strlen(text), NULL, &p, &d) != MIL_OK) child_fail("parse", &d);
  if (mil_program_validate(p, &d) != MIL_OK) child_fail("validate", &d);
  mil_interp *ip = NULL;
  if (mil_interp_new(p, "main", &ip, &d) != MIL_OK) child_fail("interp", &d);
  float x[2] = {-1, 2};
  int64_t shape[1] = {2};
  mil_tensor t = {.dtype = MIL_DT_FP32, .rank = 1, .shape = shape, .data = x, .nbytes = sizeof x, .numel = (int64_t)(sizeof x / sizeof x[0])};
  if (mil_interp_set_input(ip, "x", &t, &d) != MIL_OK) child_fail("set_input", &d);
  if (mil_interp_run(ip, NULL, &d) != MIL_OK) child_fail("run", &d);
  const mil_tensor *y = mil_interp_output(ip, "y");
  if (!y || ((const float *)y->data)[1] != 2.0f) child_fail("output", NULL);
  mil_interp_free(ip);
  mil_program_free(p);
  mil_diag_clear(&d);
}

static void test_value_inference_bounded(void **state) {
  (void)state;
  run_limited(tile_and_fill, vm_size() + ((size_t)2 << 30));
}

/* fault 6: a while_loop of 200k iterations over 1,024 floats ran in ~0.9 GB
 * before iterations freed their values; now a few MB. */
static void long_loop(void) {
  static const char text[] =
      "main[CoreML7](%x: (1024, fp32)(Tensor)) {\n  block0() {\n"
      "    %i0: (int32)*(Scalar) = const(val=0, name=\"i0\")\n"
      "    %l0: (int32)(Scalar), %l1: (1024, fp32)(Tensor) = while_loop(loop_vars=(%i0, %x), name=\"loop\")\n"
      "      loop_cond(%i: (int32)(Scalar), %v: (1024, fp32)(Tensor)) {\n"
      "        %n: (int32)*(Scalar) = const(val=200000, name=\"n\")\n"
      "        %lt: (bool)(Scalar) = less(x=%i, y=%n, name=\"lt\")\n"
      "      } -> (%lt)\n"
      "      loop_body(%i_1: (int32)(Scalar), %v_1: (1024, fp32)(Tensor)) {\n"
      "        %one: (int32)*(Scalar) = const(val=1, name=\"one\")\n"
      "        %i2: (int32)(Scalar) = add(x=%i_1, y=%one, name=\"i2\")\n"
      "        %h: (fp32)*(Scalar) = const(val=1.0, name=\"h\")\n"
      "        %v2: (1024, fp32)(Tensor) = add(x=%v_1, y=%h, name=\"v2\")\n"
      "      } -> (%i2, %v2)\n"
      "  } -> (%l0, %l1)\n}\n";
  mil_diag d;
  mil_diag_init(&d);
  mil_program *p = NULL;
  if (mil_parse_program(text, strlen(text), NULL, &p, &d) != MIL_OK) child_fail("parse", &d);
  mil_interp *ip = NULL;
  if (mil_interp_new(p, "main", &ip, &d) != MIL_OK) child_fail("interp", &d);
  mil_interp_set_max_iterations(ip, 1000000);
  static float x[1024];
  int64_t shape[1] = {1024};
  mil_tensor t = {.dtype = MIL_DT_FP32, .rank = 1, .shape = shape, .data = x, .nbytes = sizeof x, .numel = (int64_t)(sizeof x / sizeof x[0])};
  if (mil_interp_set_input(ip, "x", &t, &d) != MIL_OK) child_fail("set_input", &d);
  if (mil_interp_run(ip, NULL, &d) != MIL_OK) child_fail("run", &d);
  const mil_tensor *n = mil_interp_output(ip, "l0");
  const mil_tensor *v = mil_interp_output(ip, "l1");
  if (!n || *(const int32_t *)n->data != 200000) child_fail("count", NULL);
  if (!v || ((const float *)v->data)[1023] != 200000.0f) child_fail("values", NULL);
  mil_interp_free(ip);
  mil_program_free(p);
  mil_diag_clear(&d);
}

static void test_while_loop_memory_bounded(void **state) {
  (void)state;
  /* the address space of the child: the process as it is (OpenBLAS threads
   * and buffers included) plus 512 MB */
  run_limited(long_loop, vm_size() + ((size_t)512 << 20));
}

/* fault 4: n nested conds, as MIL text (malloc'ed). */
static char *nested_conds(int n) {
  size_t cap = 4096 + (size_t)n * 400, len = 0;
  char *t = malloc(cap);
  assert_non_null(t);
#define PUT(...) len += (size_t)snprintf(t + len, cap - len, __VA_ARGS__)
  PUT("main[CoreML7](%%x: (2, fp32)(Tensor)) {\n  block0() {\n");
  PUT("    %%p: (bool)(Scalar) = const(val=True, name=\"p\")\n");
  for (int k = n; k >= 1; k--) {
    PUT("%%c%d: (2, fp32)(Tensor) = cond(pred=%%p, name=\"c%d\")\n", k, k);
    PUT("cond_false%d() {\n%%e%d: (2, fp32)(Tensor) = relu(x=%%x, name=\"e%d\")\n} -> (%%e%d)\n", k, k, k, k);
    PUT("cond_true%d() {\n", k);
  }
  PUT("%%r: (2, fp32)(Tensor) = relu(x=%%x, name=\"r\")\n");
  for (int k = 1; k <= n; k++) PUT("} -> (%%%s%d)\n", k == 1 ? "r" : "c", k == 1 ? 0 : k - 1);
  PUT("  } -> (%%c%d)\n}\n", n);
#undef PUT
  /* the innermost block returns %r */
  char *r0 = strstr(t, "(%r0)");
  if (r0) memcpy(r0, "(%r) ", 5);
  return t;
}

/* Serializes the model and loads the bytes back. */
static mil_model *round_trip(mil_model *m) {
  mil_diag d;
  mil_diag_init(&d);
  void *buf = NULL;
  size_t len = 0;
  if (mil_model_serialize(m, NULL, &buf, &len, &d) != MIL_OK) fail_msg("serialize: %s", mil_diag_first_error(&d));
  mil_model *back = NULL;
  if (mil_model_load_proto(buf, len, "nested.mlmodel", NULL, &back, &d) != MIL_OK)
    fail_msg("load back: %s", mil_diag_first_error(&d));
  free(buf);
  mil_diag_clear(&d);
  return back;
}

static void test_nesting_round_trip(void **state) {
  (void)state;
  static const int depths[] = {46, MIL_MAX_BLOCK_DEPTH};
  for (size_t i = 0; i < sizeof depths / sizeof depths[0]; i++) {
    char *text = nested_conds(depths[i]);
    mil_program *p = parse_ok(text);
    free(text);
    mil_diag d;
    mil_diag_init(&d);
    if (mil_program_validate(p, &d) != MIL_OK) fail_msg("validate: %s", mil_diag_first_error(&d));
    mil_model *m = NULL;
    assert_int_equal(mil_model_from_program(p, 0, &m, &d), MIL_OK);
    mil_model *back = round_trip(m);     /* text -> protobuf -> read */
    mil_model *again = round_trip(back); /* protobuf -> protobuf -> read */
    assert_int_equal(mil_program_count_ops(mil_model_program(again)), mil_program_count_ops(mil_model_program(m)));
    mil_model_free(again);
    mil_model_free(back);
    mil_model_free(m);
    mil_diag_clear(&d);
  }
  /* one level more is refused by the parser, with the limit named */
  char *text = nested_conds(MIL_MAX_BLOCK_DEPTH + 1);
  char *e = parse_error(text);
  expect_has(e, "blocks nested deeper than 64 levels");
  free(e);
  free(text);
}

/* fault 5: 20,000 functions parsed, validated and copied for a run; the
 * function arrays grew by one copy per function (1.6 GB to parse, 4.7 GB
 * to run). Now linear: well under 512 MB more than the process. */
static void many_functions(void) {
  enum { N = 20000 };
  size_t cap = (size_t)N * 128, len = 0;
  char *t = malloc(cap);
  if (!t) child_fail("malloc", NULL);
  for (int i = 0; i < N; i++)
    len += (size_t)snprintf(t + len, cap - len,
                            "f%d[CoreML7](%%x: (2, fp32)(Tensor)) {\n block0() {\n"
                            "  %%y: (2, fp32)(Tensor) = relu(x=%%x, name=\"y\")\n } -> (%%y)\n}\n",
                            i);
  mil_diag d;
  mil_diag_init(&d);
  mil_program *p = NULL;
  if (mil_parse_program(t, len, NULL, &p, &d) != MIL_OK) child_fail("parse", &d);
  free(t);
  if (mil_program_validate(p, &d) != MIL_OK) child_fail("validate", &d);
  mil_interp *ip = NULL;
  if (mil_interp_new(p, "f19999", &ip, &d) != MIL_OK) child_fail("interp", &d);
  float x[2] = {-1, 2};
  int64_t shape[1] = {2};
  mil_tensor in = {.dtype = MIL_DT_FP32, .rank = 1, .shape = shape, .data = x, .nbytes = sizeof x, .numel = 2};
  if (mil_interp_set_input(ip, "x", &in, &d) != MIL_OK || mil_interp_run(ip, NULL, &d) != MIL_OK) child_fail("run", &d);
  mil_interp_free(ip);
  mil_program_free(p);
  mil_diag_clear(&d);
}

static void test_many_functions_linear(void **state) {
  (void)state;
  run_limited(many_functions, vm_size() + ((size_t)512 << 20));
}

/* fault 5: one spec-version rule for several functions (>= 9, iOS18):
 * loading .mil, info and validate agree with the writer that opt uses. */
static void test_multi_function_spec(void **state) {
  (void)state;
  static const char text[] = "main[CoreML7](%x: (2, fp32)(Tensor)) {\n block0() {\n"
                             "  %y: (2, fp32)(Tensor) = relu(x=%x, name=\"y\")\n } -> (%y)\n}\n"
                             "other[CoreML7](%x: (2, fp32)(Tensor)) {\n block0() {\n"
                             "  %y: (2, fp32)(Tensor) = relu(x=%x, name=\"y\")\n } -> (%y)\n}\n";
  mil_model *m = NULL;
  mil_diag d;
  mil_diag_init(&d);
  assert_int_equal(load_text_file(text, &m, &d), MIL_OK);
  assert_int_equal(mil_model_spec_version(m), 9);
  mil_model *back = round_trip(m);
  assert_int_equal(mil_model_spec_version(back), 9);
  mil_model_free(back);
  mil_model_free(m);
  mil_diag_clear(&d);
}

/* fault 15: coremltools' rule (dedup_op_and_var_names): a function output
 * named like a function input is refused, with the same reason, by the
 * text reader (file, line:column), the protobuf reader (file, function),
 * validate and the pass; repeated op names and a var defined again in a
 * scope are not. */
#define IO_CLASH "input 0 and output 0 of function 'main' are two different vars named 'x'"
static const char k_io_ok[] = "main[CoreML7](%x: (2, fp32)(Tensor)) {\n  block0() {\n"
                              "    %y: (2, fp32)(Tensor) = relu(x=%x, name=\"r\")\n  } -> (%y)\n}\n";

static void test_duplicate_names(void **state) {
  (void)state;
  mil_diag d;
  mil_diag_init(&d);
  /* text: the output %x is the relu's, not the input */
  char *e = parse_error("main[CoreML7](%x: (2, fp32)(Tensor)) {\n  block0() {\n"
                        "    %x: (2, fp32)(Tensor) = relu(x=%x, name=\"r\")\n  } -> (%x)\n}\n");
  expect_has(e, "t.mil:4:9: ");
  expect_has(e, IO_CLASH);
  free(e);
  /* the same var as input and output is fine */
  mil_program *p = parse_ok("main[CoreML7](%x: (2, fp32)(Tensor)) {\n  block0() {\n  } -> (%x)\n}\n");
  assert_int_equal(mil_program_validate(p, &d), MIL_OK);
  mil_program_free(p);
  /* a program renamed in memory: validate and the pass give the same reason */
  p = parse_ok(k_io_ok);
  mil_function *f = p->functions[0];
  mil_block *body = mil_function_body(f);
  body->outputs[0].var->name = f->inputs[0]->name;
  assert_int_not_equal(mil_program_validate(p, &d), MIL_OK);
  expect_has(mil_diag_first_error(&d), IO_CLASH);
  mil_diag_clear(&d);
  const mil_pass_def *pass = mil_pass_find("common::dedup_op_and_var_names");
  assert_non_null(pass);
  assert_int_not_equal(mil_pass_run(pass, p, NULL, NULL, &d), MIL_OK);
  expect_has(mil_diag_first_error(&d), "dedup_op_and_var_names: " IO_CLASH);
  mil_diag_clear(&d);
  mil_program_free(p);
  /* two ops named alike, a var defined twice: valid (the pass renames) */
  p = parse_ok("main[CoreML7](%x: (2, fp32)(Tensor)) {\n  block0() {\n"
               "    %y: (2, fp32)(Tensor) = relu(x=%x, name=\"r\")\n"
               "    %y: (2, fp32)(Tensor) = relu(x=%y, name=\"r\")\n  } -> (%y)\n}\n");
  assert_int_equal(mil_program_validate(p, &d), MIL_OK);
  assert_int_equal(d.n_errors, 0);
  mil_diag_clear(&d);
  mil_program_free(p);
}

/* The protobuf form of the same clash: the relu's output and the block
 * output renamed "x" in the message the writer made. */
static void test_duplicate_names_proto(void **state) {
  (void)state;
  Coreml__Model *pm = written(k_io_ok);
  Milproto__Function *f = pm->mlprogram->functions[0]->value;
  Milproto__Block *b = f->block_specializations[0]->value;
  bool renamed = false;
  for (size_t i = 0; i < b->n_operations; i++) {
    Milproto__Operation *op = b->operations[i];
    if (strcmp(op->type, "relu") != 0) continue;
    free(op->outputs[0]->name);
    op->outputs[0]->name = strdup("x");
    renamed = true;
  }
  assert_true(renamed);
  free(b->outputs[0]);
  b->outputs[0] = strdup("x");
  /* and the model description's output */
  assert_true(pm->description && pm->description->n_output == 1);
  free(pm->description->output[0]->name);
  pm->description->output[0]->name = strdup("x");
  char *e = load_error(pm, "clash.mlmodel");
  expect_has(e, "clash.mlmodel: function 'main': ");
  expect_has(e, IO_CLASH);
  free(e);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_refused_opset_message), cmocka_unit_test(test_empty_block),
      cmocka_unit_test(test_size_rule_text),        cmocka_unit_test(test_size_rule_proto),
      cmocka_unit_test(test_value_inference_bounded), cmocka_unit_test(test_while_loop_memory_bounded),
      cmocka_unit_test(test_nesting_round_trip),     cmocka_unit_test(test_many_functions_linear),
      cmocka_unit_test(test_duplicate_names),       cmocka_unit_test(test_multi_function_spec),
      cmocka_unit_test(test_names_utf8),            cmocka_unit_test(test_duplicate_names_proto),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
