/* The MIL text printer on programs built with the builder API, compared
 * with hand-written text: the coremltools form (formats.md section 6, whose
 * examples are reproduced here) and the complete form (mil-text.md 2). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "mil/text.h"

/* ---------- helpers ---------- */

static const mil_type *tshape(mil_program *p, mil_dtype dt, int32_t rank, const int64_t *shape) {
  return mil_type_tensor_shape(p, dt, rank, shape);
}

static const mil_type *t1(mil_program *p, mil_dtype dt, int64_t a) { return tshape(p, dt, 1, &a); }
static const mil_type *t2(mil_program *p, mil_dtype dt, int64_t a, int64_t b) {
  int64_t s[2] = {a, b};
  return tshape(p, dt, 2, s);
}
static const mil_type *t4(mil_program *p, mil_dtype dt, int64_t a, int64_t b, int64_t c, int64_t d) {
  int64_t s[4] = {a, b, c, d};
  return tshape(p, dt, 4, s);
}

/* Appends a const op holding v; returns its var. */
static mil_var *cst(mil_block *b, const char *name, const mil_value *v) {
  assert_non_null(v);
  mil_op *op = mil_const_new(mil_block_program(b), name, v);
  assert_non_null(op);
  mil_block_append(b, op);
  return op->outputs[0];
}

static mil_var *cst_i32(mil_block *b, const char *name, int n, const int32_t *vals) {
  int64_t shape = n;
  return cst(b, name, mil_value_new_tensor(mil_block_program(b), MIL_DT_INT32, 1, &shape, false, vals));
}

static mil_var *cst_scalar_i32(mil_block *b, const char *name, int32_t v) {
  return cst(b, name, mil_value_new_tensor(mil_block_program(b), MIL_DT_INT32, 0, NULL, true, &v));
}

static mil_var *cst_scalar_f32(mil_block *b, const char *name, float v) {
  return cst(b, name, mil_value_new_tensor(mil_block_program(b), MIL_DT_FP32, 0, NULL, true, &v));
}

static mil_var *cst_str(mil_block *b, const char *name, const char *s) {
  return cst(b, name, mil_value_new_string(mil_block_program(b), s));
}

/* Appends op `type` named `name` with one output of type t (named like the
 * op) and inputs given as (name, var) pairs ending with NULL. */
static mil_op *op_(mil_block *b, const char *type, const char *name, const mil_type *t, ...) {
  mil_op *op = mil_op_new(mil_block_program(b), type, name);
  assert_non_null(op);
  va_list ap;
  va_start(ap, t);
  for (;;) {
    const char *in = va_arg(ap, const char *);
    if (!in) break;
    mil_var *v = va_arg(ap, mil_var *);
    assert_non_null(mil_op_add_input(op, in, v));
  }
  va_end(ap);
  if (t) assert_non_null(mil_op_add_output(op, name, t));
  mil_block_append(b, op);
  return op;
}

static void set_outputs(mil_block *b, int n, mil_var *const *vars) { assert_int_equal(mil_block_set_outputs(b, n, vars), MIL_OK); }

static char *print(const mil_program *p, mil_print_form form) {
  mil_buf b = {0};
  mil_print_options o = {form, false};
  mil_print_program(p, &o, &b);
  assert_false(b.oom);
  return b.data;
}

static void expect_text(const mil_program *p, mil_print_form form, const char *want) {
  char *got = print(p, form);
  if (strcmp(got, want) != 0) {
    fprintf(stderr, "--- got:\n%s--- want:\n%s---\n", got, want);
    fail_msg("printed text differs (form %d)", (int)form);
  }
  free(got);
}

static mil_block *named_body(mil_function *f, const char *name) {
  mil_block *b = mil_function_body(f);
  assert_non_null(b);
  b->name = mil_program_intern(f->program, name, (size_t)-1);
  return b;
}

/* ---------- formats.md 6.2, first example ---------- */

static mil_program *build_conv(void) {
  mil_program *p = mil_program_new(NULL);
  mil_function *f = mil_function_new(p, "main", "CoreML5");
  mil_var *x = mil_function_add_input(f, "x", t4(p, MIL_DT_FP32, 1, 3, 224, 224));
  mil_block *b = named_body(f, "block0");
  int64_t wshape[4] = {8, 3, 3, 3};
  mil_value *w = mil_value_new_tensor(p, MIL_DT_FP32, 4, wshape, false, NULL);
  mil_var *wv = cst(b, "conv_weight_0", w);
  int32_t ones[2] = {1, 1}, zeros[4] = {0, 0, 0, 0};
  mil_var *strides = cst_i32(b, "conv_strides_0", 2, ones);
  mil_var *pad_type = cst_str(b, "conv_pad_type_0", "valid");
  mil_var *pad = cst_i32(b, "conv_pad_0", 4, zeros);
  mil_var *dil = cst_i32(b, "conv_dilations_0", 2, ones);
  mil_var *groups = cst_scalar_i32(b, "conv_groups_0", 1);
  mil_op *conv = op_(b, "conv", "conv", t4(p, MIL_DT_FP32, 1, 8, 222, 222), "x", x, "weight", wv, "strides", strides,
                     "pad_type", pad_type, "pad", pad, "dilations", dil, "groups", groups, NULL);
  mil_op *relu = op_(b, "relu", "relu", t4(p, MIL_DT_FP32, 1, 8, 222, 222), "x", conv->outputs[0], NULL);
  set_outputs(b, 1, &relu->outputs[0]);
  return p;
}

static void test_conv_ctform(void **state) {
  (void)state;
  mil_program *p = build_conv();
  expect_text(p, MIL_PRINT_COREMLTOOLS,
              "\n"
              "main[CoreML5](%x: (1, 3, 224, 224, fp32)(Tensor)) {\n"
              "  block0() {\n"
              "    %conv: (1, 8, 222, 222, fp32)(Tensor) = conv(x=%x, weight=%conv_weight_0, strides=[1, 1], "
              "pad_type=\"valid\", pad=[0, 0, 0, 0], dilations=[1, 1], groups=1, name=\"conv\")\n"
              "    %relu: (1, 8, 222, 222, fp32)(Tensor) = relu(x=%conv, name=\"relu\")\n"
              "  } -> (%relu)\n"
              "}\n");
  mil_program_free(p);
}

/* ---------- formats.md 6.2, symbolic dims and markers ---------- */

static void test_symbolic_and_markers(void **state) {
  (void)state;
  mil_program *p = mil_program_new(NULL);
  mil_function *f = mil_function_new(p, "main", "CoreML6");
  mil_dim xd[2] = {{-1, "is0", false}, {4, NULL, false}};
  const mil_type *xt = mil_type_tensor(p, MIL_DT_FP32, 2, xd);
  mil_var *x = mil_function_add_input(f, "x", xt);
  mil_var *y = mil_function_add_input(f, "y", t1(p, MIL_DT_FP32, 4));
  mil_block *b = named_body(f, "block0");
  mil_op *s = op_(b, "shape", "s", t1(p, MIL_DT_INT32, 2), "x", x, NULL);
  s->outputs[0]->mark = MIL_MARK_SYMBOLIC;
  mil_op *r = op_(b, "reshape", "r", xt, "x", x, "shape", s->outputs[0], NULL);
  mil_op *a = op_(b, "add", "a", xt, "x", r->outputs[0], "y", y, NULL);
  set_outputs(b, 1, &a->outputs[0]);
  /* a function input with a value mark still prints none */
  x->mark = MIL_MARK_VALUE;
  const char *want = "\n"
                     "main[CoreML6](%x: (is0, 4, fp32)(Tensor),\n"
                     "              %y: (4,fp32)(Tensor)) {\n"
                     "  block0() {\n"
                     "    %s: (2,int32)^(Tensor) = shape(x=%x, name=\"s\")\n"
                     "    %r: (is0, 4, fp32)(Tensor) = reshape(x=%x, shape=%s, name=\"r\")\n"
                     "    %a: (is0, 4, fp32)(Tensor) = add(x=%r, y=%y, name=\"a\")\n"
                     "  } -> (%a)\n"
                     "}\n";
  expect_text(p, MIL_PRINT_COREMLTOOLS, want);
  expect_text(p, MIL_PRINT_COMPLETE, want); /* no consts: both forms agree */
  /* '*' on a computed var with a known value */
  s->outputs[0]->mark = MIL_MARK_VALUE;
  char *got = print(p, MIL_PRINT_COREMLTOOLS);
  assert_non_null(strstr(got, "%s: (2,int32)*(Tensor) = shape("));
  free(got);
  mil_program_free(p);
}

/* ---------- formats.md 6.2, while_loop ---------- */

static void test_while_loop(void **state) {
  (void)state;
  mil_program *p = mil_program_new(NULL);
  mil_function *f = mil_function_new(p, "main", "CoreML5");
  const mil_type *xt = t2(p, MIL_DT_FP32, 2, 3), *it = mil_type_scalar(p, MIL_DT_INT32);
  mil_var *x = mil_function_add_input(f, "x", xt);
  mil_block *b = named_body(f, "block0");
  mil_var *i0 = cst_scalar_i32(b, "i0", 0);
  mil_op *loop = mil_op_new(p, "while_loop", "loop");
  mil_var *lv[2] = {i0, x};
  mil_op_add_input_tuple(loop, "loop_vars", 2, lv);
  mil_op_add_output(loop, "loop_0", it);
  mil_var *out1 = mil_op_add_output(loop, "loop_1", xt);

  mil_block *cb = mil_block_new(p, "loop_cond_block");
  mil_var *ci = mil_block_add_input(cb, "i0_x0", it);
  mil_block_add_input(cb, "x_x0", xt);
  mil_var *ten = cst_scalar_i32(cb, "lt_y_0", 10);
  mil_op *lt = op_(cb, "less", "lt", mil_type_scalar(p, MIL_DT_BOOL), "x", ci, "y", ten, NULL);
  set_outputs(cb, 1, &lt->outputs[0]);

  mil_block *bb = mil_block_new(p, "loop_body_block");
  mil_var *bi = mil_block_add_input(bb, "i0_x0", it);
  mil_var *bx = mil_block_add_input(bb, "x_x0", xt);
  mil_var *one = cst_scalar_i32(bb, "inc_y_0", 1);
  mil_op *inc = op_(bb, "add", "inc", it, "x", bi, "y", one, NULL);
  mil_var *two = cst_scalar_f32(bb, "dbl_y_0", 2.0f);
  mil_op *dbl = op_(bb, "mul", "dbl", xt, "x", bx, "y", two, NULL);
  mil_var *bo[2] = {inc->outputs[0], dbl->outputs[0]};
  set_outputs(bb, 2, bo);

  mil_op_add_block(loop, cb);
  mil_op_add_block(loop, bb);
  mil_block_append(b, loop);
  set_outputs(b, 1, &out1);

  expect_text(p, MIL_PRINT_COREMLTOOLS,
              "\n"
              "main[CoreML5](%x: (2, 3, fp32)(Tensor)) {\n"
              "  block0() {\n"
              "    %loop_0: (int32)(Scalar), %loop_1: (2, 3, fp32)(Tensor) = while_loop(loop_vars=(%i0, %x), "
              "name=\"loop\")\n"
              "      loop_cond_block(%i0_x0: (int32)(Scalar), %x_x0: (2, 3, fp32)(Tensor)) {\n"
              "        %lt: (bool)(Scalar) = less(x=%i0_x0, y=10, name=\"lt\")\n"
              "      } -> (%lt)\n"
              "      loop_body_block(%i0_x0: (int32)(Scalar), %x_x0: (2, 3, fp32)(Tensor)) {\n"
              "        %inc: (int32)(Scalar) = add(x=%i0_x0, y=1, name=\"inc\")\n"
              "        %dbl: (2, 3, fp32)(Tensor) = mul(x=%x_x0, y=2.0, name=\"dbl\")\n"
              "      } -> (%inc, %dbl)\n"
              "  } -> (%loop_1)\n"
              "}\n");
  expect_text(p, MIL_PRINT_COMPLETE,
              "\n"
              "main[CoreML5](%x: (2, 3, fp32)(Tensor)) {\n"
              "  block0() {\n"
              "    %i0: (int32)*(Scalar) = const(val=0, name=\"i0\")\n"
              "    %loop_0: (int32)(Scalar), %loop_1: (2, 3, fp32)(Tensor) = while_loop(loop_vars=(%i0, %x), "
              "name=\"loop\")\n"
              "      loop_cond_block(%i0_x0: (int32)(Scalar), %x_x0: (2, 3, fp32)(Tensor)) {\n"
              "        %lt_y_0: (int32)*(Scalar) = const(val=10, name=\"lt_y_0\")\n"
              "        %lt: (bool)(Scalar) = less(x=%i0_x0, y=%lt_y_0, name=\"lt\")\n"
              "      } -> (%lt)\n"
              "      loop_body_block(%i0_x0: (int32)(Scalar), %x_x0: (2, 3, fp32)(Tensor)) {\n"
              "        %inc_y_0: (int32)*(Scalar) = const(val=1, name=\"inc_y_0\")\n"
              "        %inc: (int32)(Scalar) = add(x=%i0_x0, y=%inc_y_0, name=\"inc\")\n"
              "        %dbl_y_0: (fp32)*(Scalar) = const(val=2.0, name=\"dbl_y_0\")\n"
              "        %dbl: (2, 3, fp32)(Tensor) = mul(x=%x_x0, y=%dbl_y_0, name=\"dbl\")\n"
              "      } -> (%inc, %dbl)\n"
              "  } -> (%loop_1)\n"
              "}\n");
  mil_program_free(p);
}

/* ---------- kinds: list, state, dict, rank-0 tensor vs scalar ---------- */

static void test_type_kinds(void **state) {
  (void)state;
  mil_program *p = mil_program_new(NULL);
  mil_function *f = mil_function_new(p, "main", "CoreML8");
  int64_t cs[3] = {1, 64, 1};
  mil_function_add_input(f, "cache", mil_type_state(p, tshape(p, MIL_DT_FP16, 2, cs)));
  mil_var *r0 = mil_function_add_input(f, "r0", mil_type_tensor(p, MIL_DT_FP32, 0, NULL));
  mil_var *sc = mil_function_add_input(f, "sc", mil_type_scalar(p, MIL_DT_FP32));
  mil_block *b = named_body(f, "block0");
  mil_dim dyn = {-1, NULL, false}, three = {3, NULL, false};
  mil_op *l1 = op_(b, "make_list", "l1", mil_type_list(p, t2(p, MIL_DT_FP32, 2, 3), dyn), NULL);
  mil_op *l2 = op_(b, "make_list", "l2", mil_type_list(p, mil_type_scalar(p, MIL_DT_INT64), three), NULL);
  mil_op *l3 = op_(b, "make_list", "l3", mil_type_list(p, mil_type_scalar(p, MIL_DT_STRING), dyn), NULL);
  mil_op *l4 = op_(b, "make_list", "l4", mil_type_list(p, mil_type_unknown(p), dyn), NULL);
  mil_op *l5 = op_(b, "make_list", "l5", mil_type_list(p, t1(p, MIL_DT_INT32, 3), three), NULL);
  l5->outputs[0]->mark = MIL_MARK_VALUE; /* lists never show a marker */
  mil_op *d = op_(b, "make_dict", "d",
                  mil_type_dict(p, mil_type_scalar(p, MIL_DT_STRING), mil_type_scalar(p, MIL_DT_FP32)), NULL);
  d->outputs[0]->mark = MIL_MARK_VALUE;
  float zero = 0;
  mil_var *c0 = cst(b, "c0", mil_value_new_tensor(p, MIL_DT_FP32, 0, NULL, false, &zero));
  mil_op *a = op_(b, "add", "a", mil_type_tensor(p, MIL_DT_FP32, 0, NULL), "x", r0, "y", c0, NULL);
  mil_op *m = op_(b, "mul", "m", mil_type_scalar(p, MIL_DT_FP32), "x", sc, "y", sc, NULL);
  mil_var *outs[8] = {l1->outputs[0], l2->outputs[0], l3->outputs[0], l4->outputs[0],
                      l5->outputs[0], d->outputs[0],  a->outputs[0],  m->outputs[0]};
  set_outputs(b, 8, outs);
  expect_text(p, MIL_PRINT_COREMLTOOLS,
              "\n"
              "main[CoreML8](%cache: (1, 64, fp16)(State),\n"
              "              %r0: (fp32)(Tensor),\n"
              "              %sc: (fp32)(Scalar)) {\n"
              "  block0() {\n"
              "    %l1: List[?, (2, 3, fp32)](List) = make_list(, name=\"l1\")\n"
              "    %l2: List[3, int](List) = make_list(, name=\"l2\")\n"
              "    %l3: List[?, str](List) = make_list(, name=\"l3\")\n"
              "    %l4: List[?, unknown](List) = make_list(, name=\"l4\")\n"
              "    %l5: List[3, (3,int32)](List) = make_list(, name=\"l5\")\n"
              "    %d: (dict)*(Scalar) = make_dict(, name=\"d\")\n"
              "    %a: (fp32)(Tensor) = add(x=%r0, y=0.0, name=\"a\")\n"
              "    %m: (fp32)(Scalar) = mul(x=%sc, y=%sc, name=\"m\")\n"
              "  } -> (%l1, %l2, %l3, %l4, %l5, %d, %a, %m)\n"
              "}\n");
  char *got = print(p, MIL_PRINT_COMPLETE);
  assert_non_null(strstr(got, "    %c0: (fp32)*(Tensor) = const(val=0.0, name=\"c0\")\n"));
  free(got);
  mil_program_free(p);
}

/* ---------- which consts print inline, and how values look ---------- */

static void test_inline_values(void **state) {
  (void)state;
  mil_program *p = mil_program_new(NULL);
  mil_function *f = mil_function_new(p, "main", "CoreML7");
  mil_var *x = mil_function_add_input(f, "x", t1(p, MIL_DT_FP32, 3));
  mil_block *b = named_body(f, "block0");
  int32_t ten[10] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, eleven[11] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
  mil_var *c10 = cst_i32(b, "c10", 10, ten);
  mil_var *c11 = cst_i32(b, "c11", 11, eleven);
  float fv[2][2] = {{0.1f, -1.5f}, {1e-5f, 3e20f}};
  int64_t s22[2] = {2, 2};
  mil_var *cf = cst(b, "cf", mil_value_new_tensor(p, MIL_DT_FP32, 2, s22, false, fv));
  uint16_t hv[3] = {0x3c00, 0x2e66, 0xfc00}; /* 1.0, fp16(0.1), -inf */
  int64_t s3 = 3;
  mil_var *ch = cst(b, "ch", mil_value_new_tensor(p, MIL_DT_FP16, 1, &s3, false, hv));
  uint8_t bv[2] = {1, 0};
  int64_t s2 = 2;
  mil_var *cb = cst(b, "cb", mil_value_new_tensor(p, MIL_DT_BOOL, 1, &s2, false, bv));
  mil_var *cs = cst_str(b, "cs", "a \"q\" \\ b");
  int64_t e0[2] = {2, 0};
  mil_var *ce = cst(b, "ce", mil_value_new_tensor(p, MIL_DT_FP32, 2, e0, false, NULL));
  int64_t big = -9000000000000000000LL;
  mil_var *ci = cst(b, "ci", mil_value_new_tensor(p, MIL_DT_INT64, 0, NULL, true, &big));
  uint64_t ubig = 18446744073709551615ull;
  mil_var *cu = cst(b, "cu", mil_value_new_tensor(p, MIL_DT_UINT64, 1, &(int64_t){1}, false, &ubig));
  mil_op *op = op_(b, "custom", "o", t1(p, MIL_DT_FP32, 3), "x", x, "a", c10, "b", c11, "c", cf, "d", ch, "e", cb, "f",
                   cs, "g", ce, "h", ci, "i", cu, NULL);
  /* a literal binding prints inline in both forms */
  mil_op_add_input_value(op, "lit", mil_value_new_scalar_f64(p, MIL_DT_FP32, 0.5));
  /* a tuple always prints names */
  mil_var *tv[1] = {c10};
  mil_op_add_input_tuple(op, "t", 1, tv);
  set_outputs(b, 1, &op->outputs[0]);
  expect_text(p, MIL_PRINT_COREMLTOOLS,
              "\n"
              "main[CoreML7](%x: (3,fp32)(Tensor)) {\n"
              "  block0() {\n"
              "    %o: (3,fp32)(Tensor) = custom(x=%x, a=[0, 1, 2, 3, 4, 5, 6, 7, 8, 9], b=%c11, "
              "c=[[0.10000000149011612, -1.5], [9.999999747378752e-06, 3.000000060122632e+20]], "
              "d=[1.0, 0.0999755859375, -inf], e=[True, False], f=\"a \"q\" \\ b\", g=[[], []], "
              "h=-9000000000000000000, i=[18446744073709551615], lit=0.5, t=(%c10), name=\"o\")\n"
              "  } -> (%o)\n"
              "}\n");
  expect_text(p, MIL_PRINT_COMPLETE,
              "\n"
              "main[CoreML7](%x: (3,fp32)(Tensor)) {\n"
              "  block0() {\n"
              "    %c10: (10,int32)*(Tensor) = const(val=[0, 1, 2, 3, 4, 5, 6, 7, 8, 9], name=\"c10\")\n"
              "    %c11: (11,int32)*(Tensor) = const(val=[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10], name=\"c11\")\n"
              "    %cf: (2, 2, fp32)*(Tensor) = const(val=[[0.10000000149011612, -1.5], [9.999999747378752e-06, "
              "3.000000060122632e+20]], name=\"cf\")\n"
              "    %ch: (3,fp16)*(Tensor) = const(val=[1.0, 0.0999755859375, -inf], name=\"ch\")\n"
              "    %cb: (2,bool)*(Tensor) = const(val=[True, False], name=\"cb\")\n"
              "    %cs: (string)*(Scalar) = const(val=\"a \\\"q\\\" \\\\ b\", name=\"cs\")\n"
              "    %ce: (2, 0, fp32)*(Tensor) = const(val=[[], []], name=\"ce\")\n"
              "    %ci: (int64)*(Scalar) = const(val=-9000000000000000000, name=\"ci\")\n"
              "    %cu: (1,uint64)*(Tensor) = const(val=[18446744073709551615], name=\"cu\")\n"
              "    %o: (3,fp32)(Tensor) = custom(x=%x, a=%c10, b=%c11, c=%cf, d=%ch, e=%cb, f=%cs, g=%ce, h=%ci, "
              "i=%cu, lit=0.5, t=(%c10), name=\"o\")\n"
              "  } -> (%o)\n"
              "}\n");
  mil_program_free(p);
}

/* Values of higher rank, sub-byte and other dtypes in the complete form. */
static void test_complete_values(void **state) {
  (void)state;
  mil_program *p = mil_program_new(NULL);
  mil_function *f = mil_function_new(p, "main", "CoreML8");
  mil_block *b = named_body(f, "block0");
  int64_t s232[3] = {2, 3, 2};
  int16_t v16[12] = {-1, 2, -3, 4, -5, 6, -7, 8, -9, 10, -11, 12};
  mil_var *a = cst(b, "a", mil_value_new_tensor(p, MIL_DT_INT16, 3, s232, false, v16));
  int64_t s4 = 4;
  uint8_t packed[2] = {0x9f, 0x70}; /* int4 stream LSB first: 15,9,0,7 -> -1,-7,0,7 */
  mil_var *i4 = cst(b, "i4", mil_value_new_tensor(p, MIL_DT_INT4, 1, &s4, false, packed));
  mil_var *u4 = cst(b, "u4", mil_value_new_tensor(p, MIL_DT_UINT4, 1, &s4, false, packed));
  double dv[2] = {1e300, -2.5e-310};
  int64_t s2 = 2;
  mil_var *d = cst(b, "d", mil_value_new_tensor(p, MIL_DT_FP64, 1, &s2, false, dv));
  const char *strs[2] = {"x\ny", "tab\there"};
  mil_var *s = cst(b, "s", mil_value_new_tensor(p, MIL_DT_STRING, 1, &s2, false, strs));
  int64_t s1111[4] = {1, 1, 1, 1};
  int8_t one = -128;
  mil_var *q = cst(b, "q", mil_value_new_tensor(p, MIL_DT_INT8, 4, s1111, false, &one));
  mil_var *outs[6] = {a, i4, u4, d, s, q};
  set_outputs(b, 6, outs);
  expect_text(p, MIL_PRINT_COMPLETE,
              "\n"
              "main[CoreML8]() {\n"
              "  block0() {\n"
              "    %a: (2, 3, 2, int16)*(Tensor) = const(val=[[[-1, 2], [-3, 4], [-5, 6]], [[-7, 8], [-9, 10], "
              "[-11, 12]]], name=\"a\")\n"
              "    %i4: (4,int4)*(Tensor) = const(val=[-1, -7, 0, 7], name=\"i4\")\n"
              "    %u4: (4,uint4)*(Tensor) = const(val=[15, 9, 0, 7], name=\"u4\")\n"
              "    %d: (2,fp64)*(Tensor) = const(val=[1e+300, -2.5e-310], name=\"d\")\n"
              "    %s: (2,string)*(Tensor) = const(val=[\"x\\ny\", \"tab\\there\"], name=\"s\")\n"
              "    %q: (1, 1, 1, 1, int8)*(Tensor) = const(val=[[[[-128]]]], name=\"q\")\n"
              "  } -> (%a, %i4, %u4, %d, %s, %q)\n"
              "}\n");
  /* the coremltools form shows string tensors the way Python prints a list of str */
  mil_op *o = op_(b, "identity", "o", NULL, "x", s, NULL);
  (void)o;
  char *got = print(p, MIL_PRINT_COREMLTOOLS);
  assert_non_null(strstr(got, " = identity(x=['x\\ny', 'tab\\there'], name=\"o\")\n"));
  free(got);
  mil_program_free(p);
}

/* Blob references, several functions, unnamed blocks, no-input ops. */
static void test_program_layout(void **state) {
  (void)state;
  mil_program *p = mil_program_new(NULL);
  mil_function *f = mil_function_new(p, "main", "CoreML8");
  mil_var *x = mil_function_add_input(f, "x", t1(p, MIL_DT_FP16, 2));
  mil_block *b = mil_function_body(f); /* no name: printed as block<N> */
  uint16_t w[2] = {0x3c00, 0x4000};
  int64_t s2 = 2;
  mil_value *wv = mil_value_new_tensor(p, MIL_DT_FP16, 1, &s2, false, w);
  wv->blob_file = mil_program_intern(p, "@model_path/weights/weight.bin", (size_t)-1);
  wv->blob_offset = 64;
  mil_var *wc = cst(b, "w", wv);
  mil_op *a = op_(b, "add", "add_0", t1(p, MIL_DT_FP16, 2), "x", x, "y", wc, NULL);
  mil_op *r = op_(b, "read_state", "rs", t1(p, MIL_DT_FP16, 2), NULL);
  mil_var *outs[2] = {a->outputs[0], r->outputs[0]};
  set_outputs(b, 2, outs);
  mil_function *g = mil_function_new(p, "func2", "CoreML8");
  mil_block *gb = named_body(g, "block7");
  set_outputs(gb, 0, NULL);

  char num[32];
  snprintf(num, sizeof num, "block%llu", (unsigned long long)p->next_block_id);
  char want[2048];
  snprintf(want, sizeof want,
           "\n"
           "main[CoreML8](%%x: (2,fp16)(Tensor)) {\n"
           "  %s() {\n"
           "    %%add_0: (2,fp16)(Tensor) = add(x=%%x, y=[1.0, 2.0], name=\"add_0\")\n"
           "    %%rs: (2,fp16)(Tensor) = read_state(, name=\"rs\")\n"
           "  } -> (%%add_0, %%rs)\n"
           "}\n"
           "\n"
           "func2[CoreML8]() {\n"
           "  block7() {\n"
           "  } -> ()\n"
           "}\n",
           num);
  expect_text(p, MIL_PRINT_COREMLTOOLS, want);

  mil_buf out = {0};
  mil_print_options o = {MIL_PRINT_COMPLETE, true};
  mil_print_program(p, &o, &out);
  assert_non_null(
      strstr(out.data, "    %w: (2,fp16)*(Tensor) = const(val=@blob(\"@model_path/weights/weight.bin\", 64), name=\"w\")\n"));
  mil_buf_free(&out);
  o.blob_refs = false;
  mil_print_program(p, &o, &out);
  assert_non_null(strstr(out.data, "    %w: (2,fp16)*(Tensor) = const(val=[1.0, 2.0], name=\"w\")\n"));

  /* printing to a stream gives the same bytes */
  FILE *tf = tmpfile();
  assert_non_null(tf);
  assert_int_equal(mil_print_program_file(p, &o, tf), MIL_OK);
  long n = ftell(tf);
  assert_int_equal(n, (long)out.len);
  rewind(tf);
  char *back = malloc((size_t)n + 1);
  assert_int_equal(fread(back, 1, (size_t)n, tf), (size_t)n);
  assert_memory_equal(back, out.data, (size_t)n);
  free(back);
  fclose(tf);
  mil_buf_free(&out);
  mil_program_free(p);
}

/* A large program streamed to a file in chunks equals the in-memory text. */
static void test_large_stream(void **state) {
  (void)state;
  mil_program *p = mil_program_new(NULL);
  mil_function *f = mil_function_new(p, "main", "CoreML7");
  mil_block *b = named_body(f, "block0");
  int64_t shape[2] = {300, 1000};
  mil_value *v = mil_value_new_tensor(p, MIL_DT_FP32, 2, shape, false, NULL);
  float *d = mil_value_data_mut(v);
  for (int i = 0; i < 300000; i++) d[i] = (float)i * 0.37f - 1000.0f;
  mil_var *c = cst(b, "big", v);
  set_outputs(b, 1, &c);
  mil_buf out = {0};
  mil_print_options o = {MIL_PRINT_COMPLETE, false};
  mil_print_program(p, &o, &out);
  assert_true(out.len > (size_t)3 << 20);
  assert_int_equal(strlen(out.data), out.len);
  /* row 1 starts with element 1000: 1000 * 0.37f rounds to 370 in float */
  assert_non_null(strstr(out.data, "], [-630.0, "));
  assert_non_null(strstr(out.data, "const(val=[[-1000.0, -999.6300048828125, "));
  FILE *tf = tmpfile();
  assert_int_equal(mil_print_program_file(p, &o, tf), MIL_OK);
  long n = ftell(tf);
  assert_int_equal(n, (long)out.len);
  rewind(tf);
  char *back = malloc((size_t)n);
  assert_int_equal(fread(back, 1, (size_t)n, tf), (size_t)n);
  assert_memory_equal(back, out.data, (size_t)n);
  free(back);
  fclose(tf);
  mil_buf_free(&out);
  mil_program_free(p);
}

/* Types coremltools never prints (the printer's own conventions), a
 * complex const, and header padding counted in characters, not bytes. */
static void test_conventions(void **state) {
  (void)state;
  mil_program *p = mil_program_new(NULL);
  mil_function *f = mil_function_new(p, "f\xc3\xa9", "CoreML7"); /* "fé": 2 characters, 3 bytes */
  mil_dim d[3] = {{-1, NULL, false}, {-1, "n", true}, {5, NULL, false}};
  mil_function_add_input(f, "a", mil_type_tensor(p, MIL_DT_FP32, 3, d));
  mil_function_add_input(f, "b", mil_type_tensor(p, MIL_DT_INT32, -1, NULL));
  const mil_type *el[2] = {mil_type_scalar(p, MIL_DT_FP32), mil_type_scalar(p, MIL_DT_BOOL)};
  mil_function_add_input(f, "c", mil_type_tuple(p, 2, el));
  mil_block *b = named_body(f, "block0");
  float cv[4] = {1.0f, 2.0f, 0.0f, -0.5f};
  int64_t s2 = 2;
  mil_var *c = cst(b, "z", mil_value_new_tensor(p, MIL_DT_COMPLEX64, 1, &s2, false, cv));
  mil_op *u = op_(b, "mystery", "u", mil_type_unknown(p), "x", c, NULL);
  set_outputs(b, 1, &u->outputs[0]);
  expect_text(p, MIL_PRINT_COREMLTOOLS,
              "\n"
              "f\xc3\xa9[CoreML7](%a: (?, *n, 5, fp32)(Tensor),\n"
              "            %b: (*?,int32)(Tensor),\n"
              "            %c: (tuple)(Scalar)) {\n"
              "  block0() {\n"
              "    %u: (unknown)(Scalar) = mystery(x=[(1+2j), -0.5j], name=\"u\")\n"
              "  } -> (%u)\n"
              "}\n");
  mil_program_free(p);
}

/* ---------- mil_buf ---------- */

static void test_buf(void **state) {
  (void)state;
  mil_buf b = {0};
  mil_buf_puts(&b, "ab");
  mil_buf_putc(&b, 'c');
  mil_buf_put(&b, "defgh", 2);
  assert_string_equal(b.data, "abcde");
  assert_int_equal(b.len, 5);
  for (int i = 0; i < 1000; i++) mil_buf_printf(&b, "%d,", i);
  assert_int_equal(b.len, strlen(b.data));
  assert_memory_equal(b.data + b.len - 8, "998,999,", 8);
  char longs[600];
  memset(longs, 'z', sizeof longs - 1);
  longs[599] = 0;
  mil_buf_printf(&b, "[%s]", longs);
  assert_int_equal(b.len, strlen(b.data));
  assert_int_equal(b.data[b.len - 1], ']');
  assert_false(b.oom);
  mil_buf_free(&b);
  assert_null(b.data);
  assert_int_equal(b.len, 0);
  char out[32];
  assert_int_equal(mil_format_double(out, 0.1), 3);
  assert_string_equal(out, "0.1");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_conv_ctform),   cmocka_unit_test(test_symbolic_and_markers),
      cmocka_unit_test(test_while_loop),    cmocka_unit_test(test_type_kinds),
      cmocka_unit_test(test_inline_values), cmocka_unit_test(test_complete_values),
      cmocka_unit_test(test_program_layout), cmocka_unit_test(test_large_stream),
      cmocka_unit_test(test_conventions), cmocka_unit_test(test_buf),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
