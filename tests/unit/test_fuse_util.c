/* The helpers of the fusion passes (src/passes/fuse_util.c): numpy-style
 * rounding, promotion and broadcasting used for weight folding, the generic
 * pattern matcher, and rollback of a partly built rewrite. Expected values
 * are worked out by hand in the comments. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "mil/mil.h"
#include "passes/fuse_util_internal.h"

static mil_program *parse(const char *text) {
  mil_program *p = NULL;
  mil_diag d;
  mil_diag_init(&d);
  mil_status st = mil_parse_program(text, strlen(text), NULL, &p, &d);
  if (st != MIL_OK) fail_msg("parse failed: %s", mil_diag_first_error(&d));
  mil_diag_clear(&d);
  return p;
}

static void test_round(void **state) {
  (void)state;
  /* 0.1 is 0x3dcccccd in fp32 = 0.100000001490116119384765625 */
  assert_true(pass_np_round(0.1, MIL_DT_FP32) == 0.100000001490116119384765625);
  /* 1/3 in fp16: 0x3555 = 1365/4096 = 0.333251953125 */
  assert_true(pass_np_round(1.0 / 3.0, MIL_DT_FP16) == 0.333251953125);
  /* fp64 keeps the value; 65520 overflows fp16 */
  assert_true(pass_np_round(0.1, MIL_DT_FP64) == 0.1);
  assert_true(pass_np_round(65520.0, MIL_DT_FP16) > 1e300);
  assert_int_equal(pass_np_promote(MIL_DT_FP16, MIL_DT_FP32), MIL_DT_FP32);
  assert_int_equal(pass_np_promote(MIL_DT_INT32, MIL_DT_FP32), MIL_DT_FP64);
}

static void test_binary_broadcast(void **state) {
  (void)state;
  pass_np a, b, out;
  int64_t sa[2] = {2, 1}, sb[1] = {3};
  assert_true(pass_np_full(&a, MIL_DT_FP32, 2, sa, 0));
  assert_true(pass_np_full(&b, MIL_DT_FP32, 1, sb, 0));
  a.v[0] = 10;
  a.v[1] = 20;
  b.v[0] = 1;
  b.v[1] = 2;
  b.v[2] = 3;
  assert_int_equal(pass_np_binary(&out, &a, &b, '+'), 1);
  /* (2, 1) + (3,) -> (2, 3): [[11, 12, 13], [21, 22, 23]] */
  assert_int_equal(out.rank, 2);
  assert_int_equal(out.shape[0], 2);
  assert_int_equal(out.shape[1], 3);
  const double want[6] = {11, 12, 13, 21, 22, 23};
  for (int i = 0; i < 6; i++) assert_true(out.v[i] == want[i]);
  pass_np_free(&out);
  /* (2, 1) * (2,) -> (2, 2): [[10 * 1, 10 * 2], [20 * 1, 20 * 2]] with
   * b[0..1] = 1, 2; (2, 1) and (3, 2) do not broadcast */
  pass_np c;
  int64_t s2 = 2, sc[2] = {3, 2};
  pass_np b2;
  assert_true(pass_np_full(&b2, MIL_DT_FP32, 1, &s2, 0));
  b2.v[0] = 1;
  b2.v[1] = 2;
  assert_int_equal(pass_np_binary(&out, &a, &b2, '*'), 1);
  assert_int_equal(out.rank, 2);
  const double want2[4] = {10, 20, 20, 40};
  for (int i = 0; i < 4; i++) assert_true(out.v[i] == want2[i]);
  pass_np_free(&out);
  pass_np_free(&b2);
  assert_true(pass_np_full(&c, MIL_DT_FP32, 2, sc, 0));
  assert_int_equal(pass_np_binary(&out, &a, &c, '*'), 0);
  int64_t sd[1] = {3};
  pass_np e;
  assert_true(pass_np_full(&e, MIL_DT_FP32, 1, sd, 1));
  int64_t sf[2] = {2, 2};
  pass_np f;
  assert_true(pass_np_full(&f, MIL_DT_FP32, 2, sf, 1));
  assert_int_equal(pass_np_binary(&out, &f, &e, '+'), 0);
  pass_np_free(&a);
  pass_np_free(&b);
  pass_np_free(&c);
  pass_np_free(&e);
  pass_np_free(&f);
}

static void test_weak_and_strong_scalars(void **state) {
  (void)state;
  pass_np arr, w, s, out;
  int64_t one = 1;
  assert_true(pass_np_full(&arr, MIL_DT_FP32, 1, &one, 3.0));
  /* a Python float 0.1 is rounded to fp32 before the product:
   * 3 * 0.100000001490116 = 0.300000004470348, rounded to fp32
   * 0.300000011920929 (0x3e99999a) */
  assert_true(pass_np_full(&w, MIL_DT_FP64, 0, NULL, 0.1));
  w.weak = true;
  assert_int_equal(pass_np_binary(&out, &arr, &w, '*'), 1);
  assert_int_equal(out.dt, MIL_DT_FP32);
  assert_true(out.v[0] == (double)0.300000011920928955078125f);
  pass_np_free(&out);
  /* a numpy fp64 scalar promotes: 3 * 0.1 = 0.30000000000000004 */
  assert_true(pass_np_full(&s, MIL_DT_FP64, 0, NULL, 0.1));
  s.is_scalar = true;
  assert_int_equal(pass_np_binary(&out, &arr, &s, '*'), 1);
  assert_int_equal(out.dt, MIL_DT_FP64);
  assert_true(out.v[0] == 3.0 * 0.1);
  pass_np_free(&out);
  /* two Python numbers: double arithmetic, still weak */
  pass_np w2;
  assert_true(pass_np_full(&w2, MIL_DT_FP32, 0, NULL, 3.0));
  w2.weak = true;
  assert_int_equal(pass_np_binary(&out, &w, &w2, '/'), 1);
  assert_true(out.weak);
  assert_true(out.v[0] == 0.1 / 3.0);
  pass_np_free(&out);
  pass_np_free(&arr);
  pass_np_free(&w);
  pass_np_free(&s);
  pass_np_free(&w2);
}

/* root -> [a: relu, b: exp]; a -> [c: add]; b -> [c]; c final */
static const pass_pat_op diamond_ops[3] = {
    {"a", "relu", 1, {2}},
    {"b", "exp", 1, {2}},
    {"c", "add", 0, {0}},
};
static const pass_pattern diamond = {3, diamond_ops, 2, {0, 1}};

static const char *diamond_prog = "main[CoreML7](%x: (2,fp32)(Tensor)) {\n"
                                   "  block0() {\n"
                                   "    %e: (2,fp32)(Tensor) = exp(x=%x, name=\"e\")\n"
                                   "    %r: (2,fp32)(Tensor) = relu(x=%x, name=\"r\")\n"
                                   "    %s: (2,fp32)(Tensor) = add(x=%r, y=%e, name=\"s\")\n"
                                   "    %t: (2,fp32)(Tensor) = tanh(x=%s, name=\"t\")\n"
                                   "  } -> (%t, %s)\n"
                                   "}\n";

static void test_pattern_detect(void **state) {
  (void)state;
  mil_program *p = parse(diamond_prog);
  mil_block *b = mil_function_body(p->functions[0]);
  mil_op *exp_op = b->first, *add_op = exp_op->next->next;
  pass_pat_match m;
  /* found from the first op reading x; the final add may be a block output */
  assert_true(pass_pat_detect(&diamond, exp_op, &m));
  assert_ptr_equal(m.root, p->functions[0]->inputs[0]);
  assert_ptr_equal(m.final, add_op);
  assert_ptr_equal(m.op[0], exp_op->next);
  assert_ptr_equal(m.op[1], exp_op);
  assert_int_equal(m.n_set, 3);
  /* the add reads r and e, whose consumer lists are not the root's */
  assert_false(pass_pat_detect(&diamond, add_op, &m));
  mil_program_free(p);

  /* a third reader of x breaks the exact consumer count */
  const char *extra = "main[CoreML7](%x: (2,fp32)(Tensor)) {\n"
                      "  block0() {\n"
                      "    %e: (2,fp32)(Tensor) = exp(x=%x, name=\"e\")\n"
                      "    %r: (2,fp32)(Tensor) = relu(x=%x, name=\"r\")\n"
                      "    %s: (2,fp32)(Tensor) = add(x=%r, y=%e, name=\"s\")\n"
                      "    %q: (2,fp32)(Tensor) = sqrt(x=%x, name=\"q\")\n"
                      "  } -> (%s, %q)\n"
                      "}\n";
  p = parse(extra);
  assert_false(pass_pat_detect(&diamond, mil_function_body(p->functions[0])->first, &m));
  mil_program_free(p);

  /* an intermediate op that is a block output refuses the match */
  const char *out = "main[CoreML7](%x: (2,fp32)(Tensor)) {\n"
                    "  block0() {\n"
                    "    %e: (2,fp32)(Tensor) = exp(x=%x, name=\"e\")\n"
                    "    %r: (2,fp32)(Tensor) = relu(x=%x, name=\"r\")\n"
                    "    %s: (2,fp32)(Tensor) = add(x=%r, y=%e, name=\"s\")\n"
                    "  } -> (%s, %e)\n"
                    "}\n";
  p = parse(out);
  assert_false(pass_pat_detect(&diamond, mil_function_body(p->functions[0])->first, &m));
  mil_program_free(p);
}

static void test_rollback(void **state) {
  (void)state;
  mil_program *p = parse(diamond_prog);
  mil_block *b = mil_function_body(p->functions[0]);
  mil_op *anchor = b->last; /* tanh */
  mil_op *mark = anchor->prev;
  int32_t before = b->n_ops;
  pass_fuse_ctx c = {.p = p, .d = NULL, .pass = "test"};
  mil_op *n = pass_fuse_new_op(&c, anchor, "relu", NULL);
  assert_non_null(n);
  assert_string_equal(n->name, "relu_0");
  mil_op_add_input(n, "x", anchor->prev->prev->outputs[0]);
  assert_int_equal(pass_fuse_finish(&c, n), MIL_OK);
  mil_op *n2 = pass_fuse_new_op(&c, anchor, "exp", NULL);
  mil_op_add_input(n2, "x", n->outputs[0]);
  assert_int_equal(pass_fuse_finish(&c, n2), MIL_OK);
  assert_int_equal(b->n_ops, before + 2);
  pass_fuse_rollback(anchor, mark);
  assert_int_equal(b->n_ops, before);
  assert_ptr_equal(anchor->prev, mark);
  assert_int_equal(mil_program_verify(p, NULL), MIL_OK);
  pass_fuse_ctx_free(&c);
  mil_program_free(p);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_round),           cmocka_unit_test(test_binary_broadcast),
      cmocka_unit_test(test_weak_and_strong_scalars),
      cmocka_unit_test(test_pattern_detect),  cmocka_unit_test(test_rollback),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
