/* MIL text parser: structure, types, values, scoping and the coremltools
 * form, checked against values worked out by hand or by the C compiler
 * (float constants) and the C library (strtod, printf). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "mil/blob.h"
#include "mil/text.h"
#include "prog_equal.h"

static mil_program *parse_ok_d(const char *text, mil_diag *d) {
  mil_program *p = NULL;
  mil_parse_options o = {.filename = "t.mil", .base_dir = NULL};
  mil_status st = mil_parse_program(text, strlen(text), &o, &p, d);
  if (st != MIL_OK) fail_msg("parse failed (%s): %s", mil_status_str(st), mil_diag_first_error(d));
  assert_non_null(p);
  return p;
}

static mil_program *parse_ok(const char *text) {
  mil_diag d;
  mil_diag_init(&d);
  mil_program *p = parse_ok_d(text, &d);
  assert_int_equal(d.n_errors, 0);
  mil_diag_clear(&d);
  return p;
}

static mil_op *search_op(mil_block *b, const char *name) {
  for (mil_op *op = b->first; op; op = op->next) {
    if (strcmp(op->name, name) == 0) return op;
    for (int32_t i = 0; i < op->n_blocks; i++) {
      mil_op *r = search_op(op->blocks[i], name);
      if (r) return r;
    }
  }
  return NULL;
}

static mil_op *find_op(mil_block *b, const char *name) {
  mil_op *op = search_op(b, name);
  if (!op) fail_msg("op %s not found", name);
  return op;
}

static mil_block *body(mil_program *p) { return mil_function_body(p->functions[0]); }

/* The value of the const op `name`. */
static const mil_value *const_val(mil_program *p, const char *name) {
  mil_op *op = find_op(body(p), name);
  assert_string_equal(op->type, "const");
  assert_int_equal(op->n_outputs, 1);
  assert_non_null(op->outputs[0]->val);
  assert_int_equal(op->outputs[0]->mark, MIL_MARK_VALUE);
  return op->outputs[0]->val;
}

static const char k_loop[] =
    "main[CoreML5](%x: (2, 3, fp32)(Tensor),\n"
    "              %n: (int32)(Scalar)) {\n"
    "  block0() {\n"
    "    %i0: (int32)*(Scalar) = const(val=0, name=\"i0\")\n"
    "    %loop_0: (int32)(Scalar), %loop_1: (2, 3, fp32)(Tensor) = while_loop(loop_vars=(%i0, %x), name=\"loop\")\n"
    "      loop_cond_block(%i0_x0: (int32)(Scalar), %x_x0: (2, 3, fp32)(Tensor)) {\n"
    "        %lt: (bool)(Scalar) = less(x=%i0_x0, y=%n, name=\"lt\")\n"
    "      } -> (%lt)\n"
    "      loop_body_block(%i0_x0: (int32)(Scalar), %x_x0: (2, 3, fp32)(Tensor)) {\n"
    "        %one: (int32)*(Scalar) = const(val=1, name=\"one\")\n"
    "        %inc: (int32)(Scalar) = add(x=%i0_x0, y=%one, name=\"inc\")\n"
    "        %dbl: (2, 3, fp32)(Tensor) = mul(x=%x_x0, y=%x, name=\"dbl\")\n"
    "      } -> (%inc, %dbl)\n"
    "  } -> (%loop_1)\n"
    "}\n";

static void test_structure(void **state) {
  (void)state;
  mil_program *p = parse_ok(k_loop);
  assert_int_equal(p->n_functions, 1);
  mil_function *f = p->functions[0];
  assert_string_equal(f->name, "main");
  assert_string_equal(f->opset, "CoreML5");
  assert_int_equal(f->n_inputs, 2);
  assert_string_equal(f->inputs[0]->name, "x");
  assert_string_equal(f->inputs[1]->name, "n");
  mil_block *b = body(p);
  assert_string_equal(b->name, "block0");
  assert_int_equal(b->n_ops, 2);
  mil_op *loop = b->last;
  assert_string_equal(loop->type, "while_loop");
  assert_string_equal(loop->name, "loop");
  assert_int_equal(loop->n_inputs, 1);
  assert_string_equal(loop->inputs[0].name, "loop_vars");
  assert_true(loop->inputs[0].is_tuple);
  assert_int_equal(loop->inputs[0].n_args, 2);
  assert_ptr_equal(loop->inputs[0].args[0].use.var, b->first->outputs[0]);
  assert_ptr_equal(loop->inputs[0].args[1].use.var, f->inputs[0]);
  assert_int_equal(loop->n_outputs, 2);
  assert_string_equal(loop->outputs[0]->name, "loop_0");
  assert_int_equal(loop->n_blocks, 2);
  mil_block *cb = loop->blocks[0], *bb = loop->blocks[1];
  assert_string_equal(cb->name, "loop_cond_block");
  assert_string_equal(bb->name, "loop_body_block");
  assert_ptr_equal(cb->parent, loop);
  assert_int_equal(cb->n_inputs, 2);
  assert_int_equal(bb->n_inputs, 2);
  assert_ptr_not_equal(cb->inputs[0], bb->inputs[0]); /* same names, separate vars */
  /* cond block: its own input and a function input */
  mil_op *lt = cb->first;
  assert_ptr_equal(lt->inputs[0].args[0].use.var, cb->inputs[0]);
  assert_ptr_equal(lt->inputs[1].args[0].use.var, f->inputs[1]);
  assert_int_equal(cb->n_outputs, 1);
  assert_ptr_equal(cb->outputs[0].var, lt->outputs[0]);
  /* body block: outer var %x visible inside */
  mil_op *dbl = find_op(bb, "dbl");
  assert_ptr_equal(dbl->inputs[1].args[0].use.var, f->inputs[0]);
  assert_int_equal(bb->n_outputs, 2);
  assert_ptr_equal(bb->outputs[1].var, dbl->outputs[0]);
  assert_int_equal(b->n_outputs, 1);
  assert_ptr_equal(b->outputs[0].var, loop->outputs[1]);
  assert_int_equal(mil_program_verify(p, NULL), MIL_OK);
  mil_program_free(p);
}

static void test_types(void **state) {
  (void)state;
  mil_program *p = parse_ok(
      "main[CoreML8](%a: (fp32)(Scalar), %b: (fp32)(Tensor), %c: (3,fp32)(Tensor),\n"
      "  %d: (1, 3, is0, fp16)(Tensor), %e: (*is3, int32)(Tensor), %f: (2, ?, bool)(Tensor),\n"
      "  %g: (*?,fp32)(Tensor), %h: (1, 64, fp16)(State), %i: List[?, (2,fp32)](List),\n"
      "  %j: List[3, int](List), %k: List[2, str](List), %l: List[?, unknown](List),\n"
      "  %m: (dict)(Scalar), %n: List[1, List[?, (fp32)](List)](List), %o: (string)(Scalar),\n"
      "  %q: (uint4)(Scalar), %r: (tuple)(Scalar), %s: (unknown)(Scalar)) {\n"
      "  block1() {\n"
      "  } -> (%a)\n"
      "}\n");
  mil_var **in = p->functions[0]->inputs;
  assert_int_equal(p->functions[0]->n_inputs, 18);
  assert_int_equal(in[0]->type->kind, MIL_TYPE_TENSOR);
  assert_true(in[0]->type->is_scalar);
  assert_int_equal(in[0]->type->rank, 0);
  assert_int_equal(in[0]->type->dtype, MIL_DT_FP32);
  assert_false(in[1]->type->is_scalar);
  assert_int_equal(in[1]->type->rank, 0);
  assert_int_equal(in[2]->type->rank, 1);
  assert_int_equal(in[2]->type->dims[0].size, 3);
  const mil_type *t = in[3]->type;
  assert_int_equal(t->rank, 3);
  assert_int_equal(t->dtype, MIL_DT_FP16);
  assert_int_equal(t->dims[2].size, -1);
  assert_string_equal(t->dims[2].sym, "is0");
  assert_false(t->dims[2].variadic);
  t = in[4]->type;
  assert_int_equal(t->rank, 1);
  assert_true(t->dims[0].variadic);
  assert_string_equal(t->dims[0].sym, "is3");
  t = in[5]->type;
  assert_int_equal(t->dims[1].size, -1);
  assert_null(t->dims[1].sym);
  assert_int_equal(in[6]->type->rank, -1);
  t = in[7]->type;
  assert_int_equal(t->kind, MIL_TYPE_STATE);
  assert_int_equal(t->elem->kind, MIL_TYPE_TENSOR);
  assert_int_equal(t->elem->rank, 2);
  assert_int_equal(t->elem->dims[1].size, 64);
  t = in[8]->type;
  assert_int_equal(t->kind, MIL_TYPE_LIST);
  assert_int_equal(t->length.size, -1);
  assert_int_equal(t->elem->rank, 1);
  assert_int_equal(t->elem->dims[0].size, 2);
  t = in[9]->type;
  assert_int_equal(t->length.size, 3);
  assert_true(t->elem->is_scalar);
  assert_int_equal(t->elem->dtype, MIL_DT_INT64);
  assert_int_equal(in[10]->type->elem->dtype, MIL_DT_STRING);
  assert_int_equal(in[11]->type->elem->kind, MIL_TYPE_UNKNOWN);
  assert_int_equal(in[12]->type->kind, MIL_TYPE_DICT);
  t = in[13]->type;
  assert_int_equal(t->elem->kind, MIL_TYPE_LIST);
  assert_int_equal(t->elem->elem->rank, 0);
  assert_false(t->elem->elem->is_scalar);
  assert_int_equal(in[14]->type->dtype, MIL_DT_STRING);
  assert_int_equal(in[15]->type->dtype, MIL_DT_UINT4);
  assert_int_equal(in[16]->type->kind, MIL_TYPE_TUPLE);
  assert_int_equal(in[17]->type->kind, MIL_TYPE_UNKNOWN);
  mil_program_free(p);
}

static void test_marks_and_shadowing(void **state) {
  (void)state;
  mil_diag d;
  mil_diag_init(&d);
  mil_program *p = parse_ok_d(
      "main[CoreML6](%x: (is0, 4, fp32)(Tensor)) {\n"
      "  block0() {\n"
      "    %s: (2,int32)^(Tensor) = shape(x=%x, name=\"s\")\n"
      "    %x: (is0, 4, fp32)(Tensor) = relu(x=%x, name=\"r\")\n"
      "    %c: (fp32)*(Scalar) = cast(x=%x, dtype=%s, name=\"c\")\n"
      "    %o: (is0, 4, fp32)(Tensor) = identity(x=%x, name=\"o\")\n"
      "  } -> (%o, %c)\n"
      "}\n",
      &d);
  mil_block *b = body(p);
  mil_op *s = find_op(b, "s"), *r = find_op(b, "r"), *c = find_op(b, "c");
  assert_int_equal(s->outputs[0]->mark, MIL_MARK_SYMBOLIC);
  assert_int_equal(c->outputs[0]->mark, MIL_MARK_VALUE);
  assert_null(c->outputs[0]->val); /* '*' on a non-const op: known value, not stored */
  assert_int_equal(r->outputs[0]->mark, MIL_MARK_NONE);
  /* %x is shadowed: relu reads the input, later uses read relu's output */
  assert_ptr_equal(r->inputs[0].args[0].use.var, p->functions[0]->inputs[0]);
  assert_ptr_equal(c->inputs[0].args[0].use.var, r->outputs[0]);
  assert_ptr_equal(find_op(b, "o")->inputs[0].args[0].use.var, r->outputs[0]);
  assert_int_equal(d.n_errors, 0);
  assert_int_equal(d.n_warnings, 1);
  assert_string_equal(d.msgs[0].text, "t.mil:4:5: %x is defined again (first at line 1, column 15); "
                                      "later uses refer to this definition");
  mil_diag_clear(&d);
  mil_program_free(p);

  /* a name shadowed inside a nested block is restored after it */
  p = parse_ok_d("main[CoreML5](%x: (1,fp32)(Tensor), %p: (bool)(Scalar)) {\n"
                 "  block0() {\n"
                 "    %y: (1,fp32)(Tensor) = cond(pred=%p, name=\"c\")\n"
                 "      c_true() {\n"
                 "        %x: (1,fp32)(Tensor) = relu(x=%x, name=\"inner\")\n"
                 "      } -> (%x)\n"
                 "      c_false() {\n"
                 "      } -> (%x)\n"
                 "    %z: (1,fp32)(Tensor) = add(x=%x, y=%y, name=\"z\")\n"
                 "  } -> (%z)\n"
                 "}\n",
                 &d);
  mil_op *cnd = find_op(body(p), "c"), *inner = find_op(body(p), "inner"), *z = find_op(body(p), "z");
  mil_var *x = p->functions[0]->inputs[0];
  assert_ptr_equal(inner->inputs[0].args[0].use.var, x);
  assert_ptr_equal(cnd->blocks[0]->outputs[0].var, inner->outputs[0]);
  assert_ptr_equal(cnd->blocks[1]->outputs[0].var, x);
  assert_ptr_equal(z->inputs[0].args[0].use.var, x);
  mil_diag_clear(&d);
  mil_program_free(p);
}

static void test_const_values(void **state) {
  (void)state;
  mil_program *p = parse_ok(
      "main[CoreML7]() {\n"
      "  block0() {\n"
      "    %f: (2, 3, fp32)*(Tensor) = const(val=[[0.14991318212994142, -1.5, 2], [1e-05, inf, -inf]], name=\"f\")\n"
      "    %h: (2,fp16)*(Tensor) = const(val=[1.0004882812509095, 65504.0], name=\"h\")\n"
      "    %d: (3,fp64)*(Tensor) = const(val=[0.1, 5e-324, 1.7976931348623157e+308], name=\"d\")\n"
      "    %n: (fp32)*(Tensor) = const(val=nan, name=\"n\")\n"
      "    %i: (4,int32)*(Tensor) = const(val=[-2147483648, 2147483647, 0, -7], name=\"i\")\n"
      "    %u8: (2,uint8)*(Tensor) = const(val=[0, 255], name=\"u8\")\n"
      "    %i8: (2,int8)*(Tensor) = const(val=[-128, 127], name=\"i8\")\n"
      "    %l: (2,int64)*(Tensor) = const(val=[-9223372036854775808, 9223372036854775807], name=\"l\")\n"
      "    %ul: (uint64)*(Scalar) = const(val=18446744073709551615, name=\"ul\")\n"
      "    %b: (3,bool)*(Tensor) = const(val=[True, False, True], name=\"b\")\n"
      "    %s: (string)*(Scalar) = const(val=\"a\\\"b\\\\c\\n\\x41\\u00e9\", name=\"s\")\n"
      "    %ss: (2,string)*(Tensor) = const(val=[\"valid\", \"\"], name=\"ss\")\n"
      "    %q: (5,uint4)*(Tensor) = const(val=[1, 15, 0, 7, 8], name=\"q\")\n"
      "    %k: (3,int4)*(Tensor) = const(val=[-8, 7, -1], name=\"k\")\n"
      "    %z: (0,fp32)*(Tensor) = const(val=[], name=\"z\")\n"
      "    %e: (2, 0, int32)*(Tensor) = const(val=[[], []], name=\"e\")\n"
      "    %c: (2,complex64)*(Tensor) = const(val=[(1+2j), -3.5j], name=\"c\")\n"
      "    %sc: (fp32)*(Scalar) = const(val=-0.0, name=\"sc\")\n"
      "  } -> (%f)\n"
      "}\n");
  const mil_value *v = const_val(p, "f");
  assert_int_equal(v->type->dtype, MIL_DT_FP32);
  assert_int_equal(v->numel, 6);
  const float *f = mil_value_data(v);
  float want_f = 0.14991318212994142f; /* the compiler's nearest float */
  assert_memory_equal(&f[0], &want_f, 4);
  assert_true(f[1] == -1.5f && f[2] == 2.0f && f[3] == 1e-05f);
  assert_true(isinf(f[4]) && f[4] > 0 && isinf(f[5]) && f[5] < 0);
  v = const_val(p, "h");
  const uint16_t *h = mil_value_data(v);
  /* 1 + 2^-11 + 2^-40 lies just above the midpoint of 1.0 and the next
   * half (1 + 2^-10): rounding once gives 0x3C01; via float it would tie
   * down to 0x3C00 */
  assert_int_equal(h[0], 0x3C01);
  assert_int_equal(h[1], 0x7BFF);
  v = const_val(p, "d");
  const double *dd = mil_value_data(v);
  double want_d[3] = {0.1, 5e-324, 1.7976931348623157e+308};
  assert_memory_equal(dd, want_d, sizeof want_d);
  v = const_val(p, "n");
  assert_false(v->type->is_scalar);
  assert_int_equal(v->type->rank, 0);
  assert_true(isnan(*(const float *)mil_value_data(v)));
  const int32_t *i32 = mil_value_data(const_val(p, "i"));
  assert_true(i32[0] == INT32_MIN && i32[1] == INT32_MAX && i32[2] == 0 && i32[3] == -7);
  const uint8_t *u8 = mil_value_data(const_val(p, "u8"));
  assert_true(u8[0] == 0 && u8[1] == 255);
  const int8_t *i8 = mil_value_data(const_val(p, "i8"));
  assert_true(i8[0] == -128 && i8[1] == 127);
  const int64_t *i64 = mil_value_data(const_val(p, "l"));
  assert_true(i64[0] == INT64_MIN && i64[1] == INT64_MAX);
  v = const_val(p, "ul");
  assert_true(v->type->is_scalar);
  assert_true(*(const uint64_t *)mil_value_data(v) == UINT64_MAX);
  const uint8_t *bb = mil_value_data(const_val(p, "b"));
  assert_true(bb[0] == 1 && bb[1] == 0 && bb[2] == 1);
  assert_string_equal(mil_value_get_str(const_val(p, "s"), 0), "a\"b\\c\nA\xc3\xa9");
  v = const_val(p, "ss");
  assert_string_equal(mil_value_get_str(v, 0), "valid");
  assert_string_equal(mil_value_get_str(v, 1), "");
  /* uint4 packs LSB first: 1,15 -> 0xF1; 0,7 -> 0x70; 8 -> 0x08 */
  v = const_val(p, "q");
  const uint8_t *q = mil_value_data(v);
  assert_int_equal(v->nbytes, 3);
  assert_true(q[0] == 0xF1 && q[1] == 0x70 && (q[2] & 0x0F) == 0x08);
  v = const_val(p, "k");
  assert_int_equal(mil_value_get_i64(v, 0), -8);
  assert_int_equal(mil_value_get_i64(v, 1), 7);
  assert_int_equal(mil_value_get_i64(v, 2), -1);
  assert_int_equal(const_val(p, "z")->numel, 0);
  v = const_val(p, "e");
  assert_int_equal(v->numel, 0);
  assert_int_equal(v->type->rank, 2);
  const float *cf = mil_value_data(const_val(p, "c"));
  assert_true(cf[0] == 1.0f && cf[1] == 2.0f && cf[2] == 0.0f && cf[3] == -3.5f);
  v = const_val(p, "sc");
  assert_true(signbit(*(const float *)mil_value_data(v)));
  mil_program_free(p);
}

/* Decimal to double: the parser must agree bit for bit with the C
 * library's strtod on random decimals (short and 17-digit mantissas, wide
 * exponents), which covers its fast paths and their fallbacks. */
static void test_float_conversion(void **state) {
  (void)state;
  enum { N = 20000 };
  size_t cap = (size_t)N * 40 + 256;
  char *text = malloc(cap);
  double *want = malloc(N * sizeof *want);
  assert_non_null(text);
  assert_non_null(want);
  size_t n = (size_t)snprintf(text, cap, "main[CoreML7]() {\n  block0() {\n    %%v: (%d,fp64)*(Tensor) = const(val=[", N);
  uint64_t seed = 0x1234567;
  for (int i = 0; i < N; i++) {
    seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
    uint64_t r = seed >> 11;
    char num[64];
    if (i % 3 == 0) { /* the shortest repr of a random double */
      double x;
      uint64_t bits = (r << 11) ^ (r >> 7);
      memcpy(&x, &bits, sizeof x);
      if (!isfinite(x)) x = (double)r;
      snprintf(num, sizeof num, "%.17g", x);
    } else { /* 1..19 random digits, exponent -40..40 */
      int digits = 1 + (int)(r % 19), e = (int)((r >> 8) % 81) - 40;
      int k = 0;
      if (r & 1) num[k++] = '-';
      uint64_t m = seed;
      for (int j = 0; j < digits; j++) {
        num[k++] = (char)('0' + m % 10);
        m /= 10;
        if (j == 0 && digits > 1) num[k++] = '.';
      }
      snprintf(num + k, sizeof num - (size_t)k, "e%d", e);
    }
    want[i] = strtod(num, NULL);
    n += (size_t)snprintf(text + n, cap - n, "%s%s", i ? ", " : "", num);
  }
  snprintf(text + n, cap - n, "], name=\"v\")\n  } -> (%%v)\n}\n");
  mil_program *p = parse_ok(text);
  const double *got = mil_value_data(const_val(p, "v"));
  int bad = 0;
  for (int i = 0; i < N; i++)
    if (memcmp(&got[i], &want[i], sizeof(double)) != 0 && bad++ < 5) printf("element %d differs\n", i);
  assert_int_equal(bad, 0);
  mil_program_free(p);
  free(text);
  free(want);
}

static void test_coremltools_form(void **state) {
  (void)state;
  mil_program *p = parse_ok(
      "\n"
      "main[CoreML5](%x: (2, 3, fp32)(Tensor)) {\n"
      "  block0() {\n"
      "    %t: (3, 2, fp32)(Tensor) = transpose(x=%x, perm=(1, 0), name=\"t\")\n"
      "    %a: (3, 2, fp32)(Tensor) = add(x=%t, y=0.10000000149011612, name=\"a\")\n"
      "    %c: (3, 2, fp32)(Tensor) = conv(x=%a, pad=[[0, 1], [2, 3]], pad_type=\"valid\", groups=1, name=\"c\")\n"
      "    %big: (3, 2, fp32)(Tensor) = mul(x=%c, y=3000000000, name=\"big\")\n"
      "    %b: (3, 2, bool)(Tensor) = less(x=%big, y=[True, False], name=\"b\")\n"
      "    %s: (3, 2, fp32)(Tensor) = concat(values=(%a, 1.5), name=\"s\")\n"
      "    %a_y_0: (3, 2, fp32)(Tensor) = relu(x=%s, name=\"later\")\n"
      "  } -> (%a_y_0)\n"
      "}\n");
  mil_block *b = body(p);
  /* literal consts are inserted before their op */
  mil_op *op = b->first;
  assert_string_equal(op->type, "const");
  assert_string_equal(op->name, "t_perm_0");
  const mil_value *v = op->outputs[0]->val;
  assert_int_equal(v->type->dtype, MIL_DT_INT32);
  assert_int_equal(v->type->rank, 1);
  assert_int_equal(v->numel, 2);
  assert_int_equal(((const int32_t *)mil_value_data(v))[0], 1);
  mil_op *t = find_op(b, "t");
  assert_ptr_equal(t->prev, op);
  assert_ptr_equal(t->inputs[1].args[0].use.var, op->outputs[0]);
  assert_false(t->inputs[1].is_tuple);
  /* the name a_y_0 is taken by a later var: the literal const gets another */
  mil_op *a = find_op(b, "a");
  mil_var *y = a->inputs[1].args[0].use.var;
  assert_string_equal(y->name, "a_y_1");
  assert_string_equal(y->op->name, "a_y_1");
  assert_true(y->val->type->is_scalar);
  assert_int_equal(y->val->type->dtype, MIL_DT_FP32);
  float want = 0.1f;
  assert_memory_equal(mil_value_data(y->val), &want, 4);
  mil_op *c = find_op(b, "c");
  v = c->inputs[1].args[0].use.var->val;
  assert_int_equal(v->type->rank, 2);
  assert_int_equal(v->type->dims[1].size, 2);
  assert_int_equal(((const int32_t *)mil_value_data(v))[3], 3);
  v = c->inputs[2].args[0].use.var->val;
  assert_int_equal(v->type->dtype, MIL_DT_STRING);
  assert_string_equal(mil_value_get_str(v, 0), "valid");
  v = find_op(b, "big")->inputs[1].args[0].use.var->val;
  assert_int_equal(v->type->dtype, MIL_DT_INT64); /* does not fit int32 */
  v = find_op(b, "b")->inputs[1].args[0].use.var->val;
  assert_int_equal(v->type->dtype, MIL_DT_BOOL);
  mil_op *s = find_op(b, "s");
  assert_true(s->inputs[0].is_tuple);
  assert_int_equal(s->inputs[0].n_args, 2);
  assert_ptr_equal(s->inputs[0].args[0].use.var, a->outputs[0]);
  assert_string_equal(s->inputs[0].args[1].use.var->name, "s_values_0");
  assert_int_equal(mil_program_verify(p, NULL), MIL_OK);
  mil_program_free(p);
}

static void test_layout_freedom(void **state) {
  (void)state;
  /* comments, CRLF, odd spacing, an op without printed arguments, scopes,
   * several functions, and names that are not MIL identifiers */
  mil_program *p = parse_ok("# a comment line\r\n"
                            "main[CoreML7](%input/0: (1,fp32)(Tensor)) {   # trailing comment\r\n"
                            "  block0() {\r\n"
                            "    %r.1:(1,fp32)(Tensor)=relu[ScopeSource.TORCHSCRIPT_MODULE_TYPE: [\"x\"]](x=%input/0,name=\"r.1\")\r\n"
                            "    %n: (fp32)(Tensor) = make_thing(, name=\"n\")\r\n"
                            "  } -> (%r.1)\r\n"
                            "}\r\n"
                            "\n"
                            "func2[CoreML7]() {\n  block1() {\n  } -> ()\n}\n");
  assert_int_equal(p->n_functions, 2);
  assert_string_equal(p->functions[0]->inputs[0]->name, "input/0");
  mil_op *r = find_op(body(p), "r.1");
  assert_string_equal(r->outputs[0]->name, "r.1");
  assert_ptr_equal(r->inputs[0].args[0].use.var, p->functions[0]->inputs[0]);
  mil_op *n = find_op(body(p), "n");
  assert_int_equal(n->n_inputs, 0);
  assert_string_equal(p->functions[1]->name, "func2");
  assert_int_equal(mil_function_body(p->functions[1])->n_outputs, 0);
  mil_program_free(p);
}

static void test_file_and_blob(void **state) {
  (void)state;
  char dir[] = "/tmp/mil_parse_testXXXXXX";
  assert_non_null(mkdtemp(dir));
  char wpath[256], mpath[256], sub[256];
  snprintf(sub, sizeof sub, "%s/weights", dir);
  assert_int_equal(mkdir(sub, 0755), 0);
  snprintf(wpath, sizeof wpath, "%s/weights/weight.bin", dir);
  snprintf(mpath, sizeof mpath, "%s/model.mil", dir);
  mil_blob_writer *w = NULL;
  assert_int_equal(mil_blob_writer_open(wpath, 0, &w, NULL), MIL_OK);
  float data[12];
  for (int i = 0; i < 12; i++) data[i] = (float)i * 0.5f - 1.0f;
  uint64_t off = 0;
  assert_int_equal(mil_blob_writer_add(w, MIL_DT_FP32, data, sizeof data, 12, &off, NULL), MIL_OK);
  assert_int_equal(mil_blob_writer_close(w, NULL), MIL_OK);
  FILE *f = fopen(mpath, "w");
  assert_non_null(f);
  fprintf(f,
          "main[CoreML7]() {\n  block0() {\n"
          "    %%w: (3, 4, fp32)*(Tensor) = const(val=@blob(\"@model_path/weights/weight.bin\", %llu), name=\"w\")\n"
          "  } -> (%%w)\n}\n",
          (unsigned long long)off);
  fclose(f);
  mil_program *p = NULL;
  mil_diag d;
  mil_diag_init(&d);
  mil_status st = mil_parse_file(mpath, &p, &d);
  if (st != MIL_OK) fail_msg("%s", mil_diag_first_error(&d));
  const mil_value *v = const_val(p, "w");
  assert_int_equal(v->numel, 12);
  assert_memory_equal(mil_value_data(v), data, sizeof data);
  assert_string_equal(v->blob_file, "@model_path/weights/weight.bin");
  assert_int_equal(v->blob_offset, off);
  /* printed back with blob references, the text names the same blob */
  mil_buf b = {0};
  mil_print_options po = {.form = MIL_PRINT_COMPLETE, .blob_refs = true};
  mil_print_program(p, &po, &b);
  char want[128];
  snprintf(want, sizeof want, "val=@blob(\"@model_path/weights/weight.bin\", %llu)", (unsigned long long)off);
  assert_non_null(strstr(b.data, want));
  mil_buf_free(&b);
  mil_program_free(p);
  /* the same text parsed from memory resolves against base_dir */
  f = fopen(mpath, "rb");
  char text[1024];
  size_t n = fread(text, 1, sizeof text, f);
  fclose(f);
  mil_parse_options opt = {.filename = "mem.mil", .base_dir = dir};
  assert_int_equal(mil_parse_program(text, n, &opt, &p, &d), MIL_OK);
  assert_memory_equal(mil_value_data(const_val(p, "w")), data, sizeof data);
  mil_program_free(p);
  /* a shape that does not match the blob is a format error */
  char bad[1024];
  snprintf(bad, sizeof bad, "%.*s", (int)n, text);
  char *shape = strstr(bad, "(3, 4, fp32)");
  memcpy(shape, "(3, 5, fp32)", 12);
  mil_diag_clear(&d);
  assert_int_equal(mil_parse_program(bad, strlen(bad), &opt, &p, &d), MIL_ERR_FORMAT);
  assert_null(p);
  assert_non_null(strstr(mil_diag_first_error(&d), "mem.mil:3:"));
  mil_diag_clear(&d);
  unlink(wpath);
  unlink(mpath);
  rmdir(sub);
  rmdir(dir);
}

/* prog_equal (used by the corpus round trip) must notice differences. */
static void test_prog_equal_detects(void **state) {
  (void)state;
  const char *base = "main[CoreML7](%x: (2,fp32)(Tensor)) {\n  block0() {\n"
                     "    %c: (2,fp32)*(Tensor) = const(val=[1.0, 2.0], name=\"c\")\n"
                     "    %a: (2,fp32)(Tensor) = add(x=%x, y=%c, name=\"a\")\n"
                     "    %b: (2,fp32)(Tensor) = add(x=%a, y=%c, name=\"b\")\n"
                     "  } -> (%b)\n}\n";
  const char *variants[] = {
      "val=[1.0, 2.0000002]", /* one value bit */
      "add(x=%x, y=%c, name=\"A\")",
      "add(x=%a, y=%a, name=\"b\")", /* a binding */
      "%b: (2,fp32)*(Tensor)",       /* a mark */
      "%b: (2,fp16)(Tensor)",        /* a type */
      "block7()",
      "-> (%a)",
  };
  const char *orig[] = {"val=[1.0, 2.0]", "add(x=%x, y=%c, name=\"a\")", "add(x=%a, y=%c, name=\"b\")",
                        "%b: (2,fp32)(Tensor)", "%b: (2,fp32)(Tensor)", "block0()", "-> (%b)"};
  mil_program *p = parse_ok(base), *q = parse_ok(base);
  char why[256];
  assert_true(prog_equal(p, q, why, sizeof why));
  mil_program_free(q);
  for (size_t i = 0; i < sizeof variants / sizeof variants[0]; i++) {
    char text[1024];
    const char *at = strstr(base, orig[i]);
    assert_non_null(at);
    snprintf(text, sizeof text, "%.*s%s%s", (int)(at - base), base, variants[i], at + strlen(orig[i]));
    q = parse_ok(text);
    assert_false(prog_equal(p, q, why, sizeof why));
    assert_true(why[0] != 0);
    mil_program_free(q);
  }
  mil_program_free(p);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_structure),         cmocka_unit_test(test_types),
      cmocka_unit_test(test_marks_and_shadowing), cmocka_unit_test(test_const_values),
      cmocka_unit_test(test_float_conversion),  cmocka_unit_test(test_coremltools_form),
      cmocka_unit_test(test_layout_freedom),    cmocka_unit_test(test_file_and_blob),
      cmocka_unit_test(test_prog_equal_detects),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
