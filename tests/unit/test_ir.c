/* Unit tests of the IR core: builder, use lists, placement, clone, verifier,
 * dtype conversions and values. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/core_internal.h"
#include "mil/mil.h"
#include "mil/text.h"

/* x -> relu -> add(relu, c) ; returns program, fills vars */
static mil_program *build_small(mil_var **x, mil_op **relu, mil_op **add, mil_op **c) {
  mil_program *p = mil_program_new(NULL);
  assert_non_null(p);
  mil_function *f = mil_function_new(p, "main", "CoreML7");
  assert_non_null(f);
  int64_t shape[2] = {2, 3};
  const mil_type *t = mil_type_tensor_shape(p, MIL_DT_FP32, 2, shape);
  *x = mil_function_add_input(f, "x", t);
  mil_block *b = mil_function_body(f);
  *relu = mil_op_new(p, "relu", "relu_0");
  mil_op_add_input(*relu, "x", *x);
  mil_var *r = mil_op_add_output(*relu, "relu_0", t);
  mil_block_append(b, *relu);
  float vals[6] = {1, 2, 3, 4, 5, 6};
  mil_value *v = mil_value_new_tensor(p, MIL_DT_FP32, 2, shape, false, vals);
  *c = mil_const_new(p, "c", v);
  mil_block_append(b, *c);
  *add = mil_op_new(p, "add", "add_0");
  mil_op_add_input(*add, "x", r);
  mil_op_add_input(*add, "y", (*c)->outputs[0]);
  mil_var *a = mil_op_add_output(*add, "add_0", t);
  mil_block_append(b, *add);
  mil_block_set_outputs(b, 1, &a);
  return p;
}

static void test_build_and_uses(void **state) {
  (void)state;
  mil_var *x;
  mil_op *relu, *add, *c;
  mil_program *p = build_small(&x, &relu, &add, &c);
  assert_int_equal(x->n_uses, 1);
  assert_int_equal(relu->outputs[0]->n_uses, 1);
  mil_var *a = add->outputs[0];
  assert_int_equal(a->n_uses, 1); /* block output */
  assert_true(mil_var_is_block_output(a));
  assert_true(mil_var_is_const(c->outputs[0]));
  assert_true(mil_op_is_before(relu, add));
  assert_false(mil_op_is_before(add, relu));
  assert_int_equal(mil_program_count_ops(p), 3);
  mil_diag d = {0};
  assert_int_equal(mil_program_verify(p, &d), MIL_OK);
  assert_int_equal(d.n_errors, 0);
  mil_diag_clear(&d);

  /* replace relu's uses with x, then relu has no uses and can go */
  mil_var_replace_all_uses(relu->outputs[0], x);
  assert_int_equal(relu->outputs[0]->n_uses, 0);
  assert_int_equal(x->n_uses, 2);
  assert_ptr_equal(mil_op_input_var(add, "x"), x);
  assert_int_equal(mil_op_remove(relu), MIL_OK);
  assert_int_equal(x->n_uses, 1);
  assert_int_equal(mil_function_body(p->functions[0])->n_ops, 2);
  /* removing an op whose output is used must fail and change nothing */
  assert_int_equal(mil_op_remove(c), MIL_ERR_INVALID);
  assert_int_equal(mil_function_body(p->functions[0])->n_ops, 2);
  assert_int_equal(mil_program_verify(p, &d), MIL_OK);
  mil_diag_clear(&d);
  mil_program_free(p);
}

static void test_insert_order(void **state) {
  (void)state;
  mil_var *x;
  mil_op *relu, *add, *c;
  mil_program *p = build_small(&x, &relu, &add, &c);
  /* insert many ops between relu and c: order queries must stay right */
  mil_op *prev = relu;
  mil_op *ins[100];
  for (int i = 0; i < 100; i++) {
    char name[32];
    snprintf(name, sizeof name, "n%d", i);
    mil_op *op = mil_op_new(p, "identity", name);
    mil_op_add_input(op, "x", x);
    int64_t s[2] = {2, 3};
    mil_op_add_output(op, name, mil_type_tensor_shape(p, MIL_DT_FP32, 2, s));
    mil_block_insert_after(prev, op);
    ins[i] = op;
    /* always insert right after relu: newest first */
    prev = relu;
  }
  for (int i = 1; i < 100; i++) assert_true(mil_op_is_before(ins[i], ins[i - 1]));
  assert_true(mil_op_is_before(relu, ins[99]));
  assert_true(mil_op_is_before(ins[0], c));
  assert_int_equal(x->n_uses, 101);
  mil_program_free(p);
}

/* Inserting before the same op many times must keep order queries right
 * (the keys run out of room and get relabeled locally). */
static void test_order_relabel(void **state) {
  (void)state;
  mil_var *x;
  mil_op *relu, *add, *c;
  mil_program *p = build_small(&x, &relu, &add, &c);
  mil_op *prev = NULL;
  for (int i = 0; i < 3000; i++) {
    char name[32];
    snprintf(name, sizeof name, "k%d", i);
    mil_op *op = mil_op_new(p, "identity", name);
    mil_op_add_input(op, "x", x);
    mil_op_add_output(op, name, x->type);
    mil_block_insert_before(add, op); /* always right before add */
    if (prev) assert_true(mil_op_is_before(prev, op));
    assert_true(mil_op_is_before(op, add));
    assert_true(mil_op_is_before(relu, op));
    prev = op;
  }
  /* a full check of the order against the list */
  mil_block *b = mil_function_body(p->functions[0]);
  for (mil_op *o = b->first; o && o->next; o = o->next) assert_true(mil_op_is_before(o, o->next));
  mil_program_free(p);
}

static void test_remove_parts(void **state) {
  (void)state;
  mil_program *p = mil_program_new(NULL);
  mil_function *f = mil_function_new(p, "main", "CoreML7");
  const mil_type *t = mil_type_scalar(p, MIL_DT_INT32);
  mil_var *a = mil_function_add_input(f, "a", t);
  mil_var *bv = mil_function_add_input(f, "b", t);
  mil_var *cv = mil_function_add_input(f, "c", t);
  mil_op *cat = mil_op_new(p, "concat", "cat");
  mil_var *vs[3] = {a, bv, cv};
  mil_op_add_input_tuple(cat, "values", 3, vs);
  mil_op_add_output(cat, "o0", t);
  mil_op_add_output(cat, "o1", t);
  mil_op_add_output(cat, "o2", t);
  mil_block_append(mil_function_body(f), cat);
  mil_op_remove_arg(cat, "values", 1);
  mil_input *in = mil_op_find_input(cat, "values");
  assert_int_equal(in->n_args, 2);
  assert_ptr_equal(in->args[0].use.var, a);
  assert_ptr_equal(in->args[1].use.var, cv);
  assert_int_equal(bv->n_uses, 0);
  assert_int_equal(cv->n_uses, 1);
  assert_ptr_equal(cv->uses, &in->args[1].use);
  mil_var *o2 = cat->outputs[2];
  assert_int_equal(mil_op_remove_output(cat, 1), MIL_OK);
  assert_int_equal(cat->n_outputs, 2);
  assert_ptr_equal(cat->outputs[1], o2);
  assert_int_equal(o2->out_index, 1);
  mil_block *blk = mil_block_new(p, "blk");
  mil_block_add_input(blk, "u", t);
  mil_var *w = mil_block_add_input(blk, "w", t);
  mil_block_set_outputs(blk, 1, &w);
  assert_int_equal(mil_block_remove_input(blk, 1), MIL_ERR_INVALID); /* w is used */
  assert_int_equal(mil_block_remove_input(blk, 0), MIL_OK);
  assert_int_equal(blk->n_inputs, 1);
  assert_ptr_equal(blk->inputs[0], w);
  mil_diag d = {0};
  assert_int_equal(mil_program_verify(p, &d), MIL_OK);
  mil_diag_clear(&d);
  mil_program_free(p);
}

static void test_replace_uses_after(void **state) {
  (void)state;
  mil_var *x;
  mil_op *relu, *add, *c;
  mil_program *p = build_small(&x, &relu, &add, &c);
  /* replace x's uses after relu by c's output: relu's own use must stay */
  mil_op *id = mil_op_new(p, "identity", "late");
  mil_op_add_input(id, "x", x);
  mil_var *o = mil_op_add_output(id, "late", x->type);
  mil_block_insert_after(add, id);
  mil_var_replace_uses_after(x, c->outputs[0], relu);
  assert_ptr_equal(mil_op_input_var(relu, "x"), x);
  assert_ptr_equal(mil_op_input_var(id, "x"), c->outputs[0]);
  (void)o;
  mil_program_free(p);
}

static void test_clone(void **state) {
  (void)state;
  mil_var *x;
  mil_op *relu, *add, *c;
  mil_program *p = build_small(&x, &relu, &add, &c);
  mil_program *q = mil_program_clone(p);
  assert_non_null(q);
  mil_program_free(p); /* the clone must not depend on the source */
  mil_function *f = q->functions[0];
  assert_string_equal(f->name, "main");
  assert_string_equal(f->opset, "CoreML7");
  mil_block *b = mil_function_body(f);
  assert_int_equal(b->n_ops, 3);
  assert_string_equal(b->first->type, "relu");
  assert_ptr_equal(mil_op_input_var(b->first, "x"), f->inputs[0]);
  mil_op *cq = b->first->next;
  assert_true(mil_op_is_const(cq));
  assert_true(fabs(mil_value_get_f64(cq->outputs[0]->val, 5) - 6.0) < 1e-12);
  assert_ptr_equal(b->outputs[0].var, b->last->outputs[0]);
  mil_diag d = {0};
  assert_int_equal(mil_program_verify(q, &d), MIL_OK);
  mil_diag_clear(&d);
  mil_program_free(q);
}

/* The interpreter's per-run copy (ir_program_clone_borrowing): it borrows
 * the source's strings and tensor types (the same pointers), prints as the
 * source does, and what it interns or makes later stays its own. */
static void test_clone_borrowing(void **state) {
  (void)state;
  mil_var *x;
  mil_op *relu, *add, *c;
  mil_program *p = build_small(&x, &relu, &add, &c);
  mil_program *q = ir_program_clone_borrowing(p, NULL);
  assert_non_null(q);
  mil_block *pb = mil_function_body(p->functions[0]), *qb = mil_function_body(q->functions[0]);
  assert_ptr_equal(qb->first->type, pb->first->type);
  assert_ptr_equal(qb->first->name, pb->first->name);
  assert_ptr_equal(qb->first->outputs[0]->type, pb->first->outputs[0]->type);
  assert_ptr_equal(mil_program_intern(q, "relu", (size_t)-1), pb->first->type);
  assert_ptr_equal(mil_type_tensor_shape(q, x->type->dtype, x->type->rank, (int64_t[]){x->type->dims[0].size,
                                         x->type->dims[1].size}), x->type);
  /* new strings and types of the copy are not the source's */
  const char *fresh = mil_program_intern(q, "only_in_the_copy", (size_t)-1);
  assert_non_null(fresh);
  assert_null(mil_program_find_string(p, "only_in_the_copy", (size_t)-1));
  const mil_type *t = mil_type_tensor_shape(q, MIL_DT_FP16, 3, (int64_t[]){7, 5, 3});
  assert_non_null(t);
  assert_ptr_equal(mil_type_tensor_shape(q, MIL_DT_FP16, 3, (int64_t[]){7, 5, 3}), t);
  mil_buf a = {0}, b = {0};
  mil_print_program(p, NULL, &a);
  mil_print_program(q, NULL, &b);
  assert_non_null(a.data);
  assert_string_equal(a.data, b.data);
  mil_buf_free(&a);
  mil_buf_free(&b);
  mil_diag d = {0};
  assert_int_equal(mil_program_verify(q, &d), MIL_OK);
  mil_program_free(q); /* the source's strings and types stay */
  assert_int_equal(mil_program_verify(p, &d), MIL_OK);
  assert_string_equal(mil_function_body(p->functions[0])->first->type, "relu");
  mil_diag_clear(&d);
  mil_program_free(p);
}

static void test_verify_errors(void **state) {
  (void)state;
  mil_var *x;
  mil_op *relu, *add, *c;
  mil_program *p = build_small(&x, &relu, &add, &c);
  /* move add before relu: use before definition */
  mil_op_detach(add);
  mil_block_insert_before(relu, add);
  mil_diag d = {0};
  assert_int_equal(mil_program_verify(p, &d), MIL_ERR_INVALID);
  const char *e = mil_diag_first_error(&d);
  assert_non_null(e);
  assert_non_null(strstr(e, "op 'add_0' (add)"));
  assert_non_null(strstr(e, "input 'x'"));
  assert_non_null(strstr(e, "%relu_0"));
  mil_diag_clear(&d);
  mil_program_free(p);

  /* a name defined again shadows the earlier one (a warning, as frontends
   * produce this before dedup_op_and_var_names); an op name Core ML accepts
   * though it is no identifier ("bad/name", like coremltools' "input.1") is
   * not warned about */
  p = build_small(&x, &relu, &add, &c);
  mil_op *dup = mil_op_new(p, "relu", "bad/name");
  mil_op_add_input(dup, "x", x);
  mil_op_add_output(dup, "relu_0", x->type);
  mil_block_append(mil_function_body(p->functions[0]), dup);
  assert_int_equal(mil_program_verify(p, &d), MIL_OK);
  assert_int_equal(d.n_warnings, 1);
  assert_non_null(strstr(d.msgs[0].text, "shadows"));
  mil_diag_clear(&d);
  /* the same var declared twice (twice an output of one op) is an error */
  mil_op *twice = mil_op_new(p, "relu", "twice");
  mil_op_add_input(twice, "x", x);
  mil_var *tv = mil_op_add_output(twice, "tw", x->type);
  twice->outputs[0] = tv;
  mil_op_add_output(twice, "tw2", x->type);
  twice->outputs[1] = tv;
  mil_block_append(mil_function_body(p->functions[0]), twice);
  assert_int_equal(mil_program_verify(p, &d), MIL_ERR_INVALID);
  assert_non_null(mil_diag_first_error(&d));
  mil_diag_clear(&d);
  mil_program_free(p);
}

static void test_nested_scoping(void **state) {
  (void)state;
  mil_program *p = mil_program_new(NULL);
  mil_function *f = mil_function_new(p, "main", "CoreML5");
  const mil_type *t = mil_type_scalar(p, MIL_DT_INT32);
  mil_var *x = mil_function_add_input(f, "x", t);
  mil_op *loop = mil_op_new(p, "while_loop", "loop");
  mil_op_add_input_tuple(loop, "loop_vars", 1, &x);
  mil_block *cb = mil_block_new(p, "loop_cond_block");
  mil_var *cx = mil_block_add_input(cb, "x_x0", t);
  mil_op *lt = mil_op_new(p, "less", "lt");
  mil_op_add_input(lt, "x", cx);
  mil_op_add_input(lt, "y", x); /* outer var visible inside */
  mil_var *ltv = mil_op_add_output(lt, "lt", mil_type_scalar(p, MIL_DT_BOOL));
  mil_block_append(cb, lt);
  mil_block_set_outputs(cb, 1, &ltv);
  mil_block *bb = mil_block_new(p, "loop_body_block");
  mil_var *bx = mil_block_add_input(bb, "x_x0", t); /* same name in sibling block: allowed */
  mil_block_set_outputs(bb, 1, &bx);
  mil_op_add_block(loop, cb);
  mil_op_add_block(loop, bb);
  mil_var *out = mil_op_add_output(loop, "loop", t);
  mil_block *body = mil_function_body(f);
  mil_block_append(body, loop);
  mil_block_set_outputs(body, 1, &out);
  mil_diag d = {0};
  assert_int_equal(mil_program_verify(p, &d), MIL_OK);
  /* the kept counts see the op inside the loop's block, placed before the loop was */
  assert_int_equal(mil_program_count_ops(p), 2);
  assert_int_equal(mil_program_count_op_type(p, "less"), 1);
  assert_int_equal(mil_program_count_op_type(p, "while_loop"), 1);
  assert_int_equal(mil_program_count_op_type(p, "conv"), 0);
  assert_int_equal(mil_program_count_op_type(p, "no such type ever interned"), 0);
  /* an op placed into a block of a placed op counts at once */
  mil_op *lt2 = mil_op_new(p, "less", "lt2");
  mil_op_add_input(lt2, "x", cx);
  mil_op_add_input(lt2, "y", x);
  mil_op_add_output(lt2, "lt2", mil_type_scalar(p, MIL_DT_BOOL));
  mil_block_append(cb, lt2);
  assert_int_equal(mil_program_count_op_type(p, "less"), 2);
  assert_int_equal(mil_op_remove(lt2), MIL_OK);
  assert_int_equal(mil_program_count_op_type(p, "less"), 1);
  assert_int_equal(mil_program_count_ops(p), 2);
  assert_ptr_equal(cb->func, f);
  assert_true(mil_block_is_inside(cb, body));
  mil_diag_clear(&d);
  /* a block output that refers to a var of a sibling block is an error */
  mil_block_set_output(bb, 0, cx);
  assert_int_equal(mil_program_verify(p, &d), MIL_ERR_INVALID);
  assert_non_null(strstr(mil_diag_first_error(&d), "%x_x0"));
  mil_diag_clear(&d);
  /* removing the loop drops the uses made inside its blocks */
  mil_block_set_outputs(body, 0, NULL);
  assert_int_equal(x->n_uses, 2);
  assert_int_equal(mil_op_remove(loop), MIL_OK);
  assert_int_equal(x->n_uses, 0);
  /* detaching the loop takes the ops of its blocks with it */
  assert_int_equal(mil_program_count_ops(p), 0);
  assert_int_equal(mil_program_count_op_type(p, "less"), 0);
  assert_int_equal(mil_program_verify(p, &d), MIL_OK);
  mil_program_free(p);
}

static void test_fp16(void **state) {
  (void)state;
  /* bit patterns from the IEEE 754 binary16 definition */
  assert_int_equal(mil_fp32_to_fp16(1.0f), 0x3c00);
  assert_int_equal(mil_fp32_to_fp16(-2.0f), 0xc000);
  assert_int_equal(mil_fp32_to_fp16(65504.0f), 0x7bff);
  assert_int_equal(mil_fp32_to_fp16(65520.0f), 0x7c00);   /* rounds to inf */
  assert_int_equal(mil_fp32_to_fp16(5.9604645e-08f), 0x0001); /* smallest subnormal 2^-24 */
  assert_int_equal(mil_fp64_to_fp16(0.1), 0x2e66);
  /* 1 + 2^-11 is a tie between 0x3c00 and 0x3c01: ties to even */
  assert_int_equal(mil_fp64_to_fp16(1.0 + ldexp(1.0, -11)), 0x3c00);
  assert_int_equal(mil_fp64_to_fp16(1.0 + 3 * ldexp(1.0, -11)), 0x3c02);
  assert_true(mil_fp16_to_fp32(0x3555) > 0.333f && mil_fp16_to_fp32(0x3555) < 0.3334f);
  assert_true(isnan(mil_fp16_to_fp32(0x7e00)));
  assert_true(mil_fp16_to_fp32(0x0001) == ldexpf(1.0f, -24));
  for (uint32_t h = 0; h < 0x7c00; h++) assert_int_equal(mil_fp32_to_fp16(mil_fp16_to_fp32((uint16_t)h)), h);
  assert_int_equal(mil_fp32_to_bf16(1.0f), 0x3f80);
  assert_true(mil_bf16_to_fp32(0x4049) > 3.1f && mil_bf16_to_fp32(0x4049) < 3.15f);
  /* fp8 e4m3fn: 448 is the max finite (0x7e); 1.0 = 0x38 */
  assert_int_equal(mil_fp32_to_fp8e4m3fn(1.0f), 0x38);
  assert_true(mil_fp8e4m3fn_to_fp32(0x7e) == 448.0f);
  assert_true(isnan(mil_fp8e4m3fn_to_fp32(0x7f)));
  /* fp8 e5m2: 1.0 = 0x3c, max finite 57344 = 0x7b */
  assert_int_equal(mil_fp32_to_fp8e5m2(1.0f), 0x3c);
  assert_true(mil_fp8e5m2_to_fp32(0x7b) == 57344.0f);
}

/* The array forms (vector bodies where the CPU has them) give the scalar
 * functions' bits: every fp16 pattern widened; fp32 patterns (every
 * exponent, NaNs with payloads, infinities, subnormals, ties) narrowed and
 * rounded in place; at every offset and odd length (the vectors' tails). */
static void test_fp16_arrays(void **state) {
  (void)state;
  enum { NH = 65536, NF = 1 << 20 };
  uint16_t *h = malloc(NH * sizeof *h), *h2 = malloc(NF * sizeof *h2);
  float *f = malloc(NF * sizeof *f), *g = malloc(NF * sizeof *g);
  assert_true(h && h2 && f && g);
  for (uint32_t i = 0; i < NH; i++) h[i] = (uint16_t)i;
  mil_fp16_to_fp32_array(h, f, NH);
  for (uint32_t i = 0; i < NH; i++) {
    float w = mil_fp16_to_fp32((uint16_t)i);
    assert_memory_equal(&f[i], &w, sizeof w);
  }
  uint32_t s = 7;
  for (uint32_t i = 0; i < NF; i++) {
    s = s * 1664525u + 1013904223u;
    uint32_t b = i < 512 ? (i << 23) | (i & 1 ? 0x1000u : 0x3000u) /* every exponent, ties */
                         : (i % 97 == 0 ? 0x7f800001u + (s >> 9) : s);      /* NaN payloads, random patterns */
    memcpy(&f[i], &b, sizeof b);
  }
  for (size_t off = 0; off < 3; off++)
    for (size_t len = NF - 40; len < NF - 3; len += 7) {
      mil_fp32_to_fp16_array(f + off, h2, len - off);
      memcpy(g, f + off, (len - off) * sizeof *g);
      mil_fp16_round_array(g, len - off);
      for (size_t i = 0; i < len - off; i++) {
        uint16_t want = mil_fp32_to_fp16(f[off + i]);
        float back = mil_fp16_to_fp32(want);
        if (h2[i] != want || memcmp(&g[i], &back, sizeof back) != 0) {
          uint32_t xb, gb, bb;
          memcpy(&xb, &f[off + i], 4), memcpy(&gb, &g[i], 4), memcpy(&bb, &back, 4);
          fail_msg("x = 0x%08x: array 0x%04x, rounded 0x%08x; want 0x%04x, 0x%08x", xb, h2[i], gb, want, bb);
        }
      }
    }
  free(h), free(h2), free(f), free(g);
}

static void test_values(void **state) {
  (void)state;
  mil_program *p = mil_program_new(NULL);
  int64_t n5[1] = {5};
  /* int4 [1,-2,3,-8,7] packs to E1 83 07 (formats.md 4.6) */
  mil_value *v = mil_value_new_tensor(p, MIL_DT_INT4, 1, n5, false, NULL);
  int64_t src[5] = {1, -2, 3, -8, 7};
  for (int i = 0; i < 5; i++) mil_value_set_i64(v, i, src[i]);
  const uint8_t *b = mil_value_data(v);
  assert_int_equal(v->nbytes, 3);
  assert_int_equal(b[0], 0xE1);
  assert_int_equal(b[1], 0x83);
  assert_int_equal(b[2], 0x07);
  for (int i = 0; i < 5; i++) assert_int_equal(mil_value_get_i64(v, i), src[i]);
  /* uint3 [1..7] -> D1 58 1F; uint6 [63,1,2] -> 7F 20 00 */
  int64_t n7[1] = {7}, n3[1] = {3};
  mil_value *u3 = mil_value_new_tensor(p, MIL_DT_UINT3, 1, n7, false, NULL);
  for (int i = 0; i < 7; i++) mil_value_set_i64(u3, i, i + 1);
  b = mil_value_data(u3);
  assert_int_equal(b[0], 0xD1);
  assert_int_equal(b[1], 0x58);
  assert_int_equal(b[2], 0x1F);
  mil_value *u6 = mil_value_new_tensor(p, MIL_DT_UINT6, 1, n3, false, NULL);
  int64_t s6[3] = {63, 1, 2};
  for (int i = 0; i < 3; i++) mil_value_set_i64(u6, i, s6[i]);
  b = mil_value_data(u6);
  assert_int_equal(b[0], 0x7F);
  assert_int_equal(b[1], 0x20);
  assert_int_equal(b[2], 0x00);
  for (int i = 0; i < 3; i++) assert_int_equal(mil_value_get_i64(u6, i), s6[i]);
  /* equality and hashing */
  mil_value *u6b = mil_value_new_tensor(p, MIL_DT_UINT6, 1, n3, false, mil_value_data(u6));
  assert_true(mil_value_equal(u6, u6b));
  assert_true(mil_value_hash(u6) == mil_value_hash(u6b));
  mil_value_set_i64(u6b, 2, 3);
  assert_false(mil_value_equal(u6, u6b));
  const char *strs[2] = {"valid", "same"};
  int64_t n2[1] = {2};
  mil_value *s = mil_value_new_tensor(p, MIL_DT_STRING, 1, n2, false, strs);
  assert_string_equal(mil_value_get_str(s, 1), "same");
  mil_value *sc = mil_value_new_scalar_f64(p, MIL_DT_FP16, 0.1);
  assert_true(sc->type->is_scalar);
  assert_int_equal(((const uint16_t *)mil_value_data(sc))[0], 0x2e66);
  assert_string_equal(mil_dtype_name(MIL_DT_UINT6), "uint6");
  mil_dtype dt;
  assert_true(mil_dtype_from_name("fp16", 4, &dt) && dt == MIL_DT_FP16);
  assert_false(mil_dtype_from_name("fp17", 4, &dt));
  mil_program_free(p);
}

/* Large value buffers: bytes no op refers to any more are given back,
 * reachable ones (const values, literal arguments, attributes, list items)
 * stay intact. */
static void test_collect_garbage(void **state) {
  (void)state;
  mil_program *p = mil_program_new(NULL);
  mil_function *f = mil_function_new(p, "main", "CoreML7");
  mil_block *b = mil_function_body(f);
  int64_t shape[1] = {1 << 19}; /* 2 MiB of fp32 */
  mil_value *keep = mil_value_new_tensor(p, MIL_DT_FP32, 1, shape, false, NULL);
  mil_value *drop = mil_value_new_tensor(p, MIL_DT_FP32, 1, shape, false, NULL);
  mil_value *attr = mil_value_new_tensor(p, MIL_DT_FP32, 1, shape, false, NULL);
  mil_value *item = mil_value_new_tensor(p, MIL_DT_FP32, 1, shape, false, NULL);
  assert_true(keep && drop && attr && item);
  float *kd = mil_value_data_mut(keep);
  for (int64_t i = 0; i < shape[0]; i++) kd[i] = (float)i;
  mil_op *ck = mil_const_new(p, "k", keep);
  mil_op *cd = mil_const_new(p, "d", drop);
  mil_block_append(b, ck);
  mil_block_append(b, cd);
  const mil_value *items[1] = {item};
  mil_value *list = mil_value_new_tuple(p, NULL, 1, items);
  assert_int_equal(mil_program_set_attr(p, "big", attr), MIL_OK);
  mil_op *ct = mil_const_new(p, "t", list);
  assert_non_null(ct);
  mil_block_append(b, ct);
  mil_var *out = ck->outputs[0];
  mil_block_set_outputs(b, 1, &out);
  /* nothing is unreachable yet */
  assert_int_equal(mil_program_collect_garbage(p, false), 0);
  /* below the thresholds a worthwhile-only collection does nothing */
  assert_int_equal(mil_op_remove(cd), MIL_OK);
  assert_int_equal(mil_program_collect_garbage(p, true), 0);
  assert_int_equal(mil_program_collect_garbage(p, false), (size_t)shape[0] * 4);
  assert_int_equal(mil_op_remove(ct), MIL_OK);
  assert_int_equal(mil_program_collect_garbage(p, false), (size_t)shape[0] * 4);
  for (int64_t i = 0; i < shape[0]; i += 4099) assert_true(kd[i] == (float)i);
  /* small values never take part */
  mil_value *small = mil_value_new_tensor(p, MIL_DT_FP32, 1, (int64_t[]){16}, false, NULL);
  assert_non_null(small);
  assert_null(small->big);
  mil_program_free(p);
}

/* Compaction moves the op records into program order and leaves the
 * program the same: same text, valid, every reference rewritten. */
static void test_compact_ops(void **state) {
  (void)state;
  const char *text = "main[CoreML7](%x: (2, fp32)(Tensor), %p: (bool)(Scalar)) {\n"
                     "  block0() {\n"
                     "    %a: (2, fp32)(Tensor) = relu(x=%x, name=\"a\")\n"
                     "    %c: (2, fp32)(Tensor) = cond(pred=%p, name=\"c\")\n"
                     "      c_true() {\n"
                     "        %e: (2, fp32)(Tensor) = exp(x=%a, name=\"e\")\n"
                     "      } -> (%e)\n"
                     "      c_false() {\n"
                     "        %s: (2, fp32)(Tensor) = sin(x=%a, name=\"s\")\n"
                     "      } -> (%s)\n"
                     "    %t: (2, fp32)(Tensor) = add(x=%c, y=%a, name=\"t\")\n"
                     "  } -> (%t)\n"
                     "}\n";
  mil_program *p = NULL;
  mil_diag d = {0};
  assert_int_equal(mil_parse_program(text, strlen(text), NULL, &p, &d), MIL_OK);
  mil_block *b = mil_function_body(p->functions[0]);
  /* add ops at the front so that list order and memory order differ */
  for (int i = 0; i < 3; i++) {
    char name[16];
    snprintf(name, sizeof name, "n%d", i);
    mil_op *r = mil_op_new(p, "relu", name);
    mil_op_add_input(r, "x", p->functions[0]->inputs[0]);
    mil_op_add_output(r, name, p->functions[0]->inputs[0]->type);
    mil_block_insert_before(b->first, r);
  }
  mil_print_options po = {MIL_PRINT_COMPLETE, false};
  mil_buf before = {0}, after = {0};
  mil_print_program(p, &po, &before);
  mil_op *old_first = b->first;
  assert_int_equal(mil_program_compact_ops(p), MIL_OK);
  assert_ptr_not_equal(b->first, old_first);
  mil_print_program(p, &po, &after);
  assert_string_equal(before.data, after.data);
  assert_int_equal(mil_program_verify(p, &d), MIL_OK);
  /* program order is memory order, nested ops right after their op */
  const mil_op *prev = NULL;
  for (mil_op *op = b->first; op; op = op->next) {
    if (prev) assert_true((uintptr_t)op > (uintptr_t)prev);
    prev = op;
    assert_ptr_equal(op->block, b);
    for (int32_t i = 0; i < op->n_outputs; i++) assert_ptr_equal(op->outputs[i]->op, op);
    for (int32_t i = 0; i < op->n_inputs; i++)
      for (int32_t k = 0; k < op->inputs[i].n_args; k++) assert_ptr_equal(op->inputs[i].args[k].use.op, op);
    for (int32_t i = 0; i < op->n_blocks; i++) {
      assert_ptr_equal(op->blocks[i]->parent, op);
      for (mil_op *in = op->blocks[i]->first; in; in = in->next) {
        assert_true((uintptr_t)in > (uintptr_t)prev);
        prev = in;
      }
    }
  }
  /* the moved ops still edit like any other */
  mil_op *t = b->last;
  assert_string_equal(t->name, "t");
  mil_block_set_outputs(b, 1, &t->inputs[1].args[0].use.var);
  assert_int_equal(mil_op_remove(t), MIL_OK);
  assert_int_equal(mil_program_verify(p, &d), MIL_OK);
  mil_buf_free(&before);
  mil_buf_free(&after);
  mil_diag_clear(&d);
  mil_program_free(p);
}

/* cast fp16 -> fp32 -> fp16 of a known value gives back the very value
 * (shared, not copied); the fp32 step is computed exactly. */
static void test_cast_round_trip_shares(void **state) {
  (void)state;
  const char *text = "main[CoreML7](%x: (2, fp32)(Tensor)) {\n"
                     "  block0() {\n"
                     "    %w: (4, fp16)(Tensor) = const(val=[0.5, -2.0, 65504.0, 0.0001], name=\"w\")\n"
                     "    %up: (4, fp32)(Tensor) = cast(x=%w, dtype=\"fp32\", name=\"up\")\n"
                     "    %down: (4, fp16)(Tensor) = cast(x=%up, dtype=\"fp16\", name=\"down\")\n"
                     "  } -> (%down)\n"
                     "}\n";
  mil_program *p = NULL;
  mil_diag d = {0};
  assert_int_equal(mil_parse_program(text, strlen(text), NULL, &p, &d), MIL_OK);
  mil_block *b = mil_function_body(p->functions[0]);
  mil_op *w = NULL, *up = NULL, *down = NULL;
  for (mil_op *op = b->first; op; op = op->next) {
    if (!strcmp(op->name, "w")) w = op;
    if (!strcmp(op->name, "up")) up = op;
    if (!strcmp(op->name, "down")) down = op;
  }
  assert_true(w && up && down);
  assert_int_equal(mil_op_infer(up, &d), MIL_OK);
  assert_int_equal(mil_op_infer(down, &d), MIL_OK);
  const mil_value *wv = w->outputs[0]->val, *uv = up->outputs[0]->val;
  assert_non_null(uv);
  const float *f = mil_value_data(uv);
  assert_true(f[0] == 0.5f && f[1] == -2.0f && f[2] == 65504.0f);
  assert_true(f[3] == mil_fp16_to_fp32(mil_fp32_to_fp16(0.0001f)));
  assert_ptr_equal(down->outputs[0]->val, wv);
  mil_diag_clear(&d);
  mil_program_free(p);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_build_and_uses), cmocka_unit_test(test_insert_order),
      cmocka_unit_test(test_replace_uses_after), cmocka_unit_test(test_clone),
      cmocka_unit_test(test_clone_borrowing),
      cmocka_unit_test(test_order_relabel), cmocka_unit_test(test_remove_parts),
      cmocka_unit_test(test_verify_errors), cmocka_unit_test(test_nested_scoping),
      cmocka_unit_test(test_fp16),
      cmocka_unit_test(test_fp16_arrays), cmocka_unit_test(test_values), cmocka_unit_test(test_collect_garbage), cmocka_unit_test(test_compact_ops), cmocka_unit_test(test_cast_round_trip_shares),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
