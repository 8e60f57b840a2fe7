/* The transpose fold: the blocked byte kernel (op_transpose_data) and the
 * value inference of the transpose op, checked against a naive reference
 * that computes every output element's source index from its coordinates.
 * Ranks 1 to 6, every perm up to rank 4 and random ones above, dims of size
 * 1 and dims larger than the kernel's tiles, element sizes 1, 2, 4 and 8
 * (bool, int8, fp16, fp32, int32, int64). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "mil/mil.h"
#include "ops/tensor_ops_internal.h"
#include "unit/transpose_ref.h"

/* Deterministic pseudo-random numbers (xorshift). */
static uint64_t g_rng = 0x9e3779b97f4a7c15ull;
static uint64_t rnd(void) {
  g_rng ^= g_rng << 13;
  g_rng ^= g_rng >> 7;
  g_rng ^= g_rng << 17;
  return g_rng;
}

/* A random shape of the given rank with at most max_numel elements: mostly
 * small dims, some of size 1, sometimes one larger than a tile. */
static int64_t random_shape(int32_t rank, int64_t *shape, int64_t max_numel) {
  for (;;) {
    int64_t n = 1;
    for (int32_t i = 0; i < rank; i++) {
      uint64_t r = rnd() % 10;
      shape[i] = r < 2 ? 1 : r < 8 ? (int64_t)(2 + rnd() % 6) : (int64_t)(30 + rnd() % 50);
      n *= shape[i];
    }
    if (n <= max_numel) return n;
  }
}

static void random_perm(int32_t rank, int64_t *perm) {
  for (int32_t i = 0; i < rank; i++) perm[i] = i;
  for (int32_t i = rank - 1; i > 0; i--) {
    int32_t j = (int32_t)(rnd() % (uint64_t)(i + 1));
    int64_t t = perm[i];
    perm[i] = perm[j];
    perm[j] = t;
  }
}

static void fill_random(uint8_t *buf, size_t n) {
  for (size_t i = 0; i < n; i++) buf[i] = (uint8_t)rnd();
}

/* op_transpose_data against the reference for one case. */
static void check_kernel(size_t es, int32_t rank, const int64_t *shape, const int64_t *perm) {
  int64_t numel = 1;
  for (int32_t i = 0; i < rank; i++) numel *= shape[i];
  size_t nb = (size_t)(numel ? numel : 1) * es;
  uint8_t *src = malloc(nb), *want = malloc(nb), *got = malloc(nb);
  assert_non_null(src);
  assert_non_null(want);
  assert_non_null(got);
  fill_random(src, nb);
  memset(want, 0xAB, nb);
  memset(got, 0xAB, nb);
  naive_transpose(want, src, es, rank, shape, perm);
  op_transpose_data(got, src, es, rank, shape, perm);
  if (memcmp(want, got, nb) != 0) {
    char msg[256];
    int off = snprintf(msg, sizeof msg, "es %zu shape", es);
    for (int32_t i = 0; i < rank; i++) off += snprintf(msg + off, sizeof msg - (size_t)off, " %lld", (long long)shape[i]);
    off += snprintf(msg + off, sizeof msg - (size_t)off, " perm");
    for (int32_t i = 0; i < rank; i++) off += snprintf(msg + off, sizeof msg - (size_t)off, " %lld", (long long)perm[i]);
    fail_msg("%s", msg);
  }
  free(src);
  free(want);
  free(got);
}

static void test_kernel_all_perms(void **state) {
  (void)state;
  static const size_t sizes[] = {1, 2, 4, 8, 3};
  for (int32_t rank = 1; rank <= 4; rank++)
    for (int trial = 0; trial < 6; trial++) {
      int64_t shape[8], perm[8];
      random_shape(rank, shape, 60000);
      for (size_t e = 0; e < sizeof sizes / sizeof sizes[0]; e++) {
        for (int32_t i = 0; i < rank; i++) perm[i] = i;
        do check_kernel(sizes[e], rank, shape, perm);
        while (next_perm(rank, perm));
      }
    }
}

static void test_kernel_high_rank(void **state) {
  (void)state;
  static const size_t sizes[] = {1, 2, 4, 8};
  for (int32_t rank = 5; rank <= 6; rank++)
    for (int trial = 0; trial < 40; trial++) {
      int64_t shape[8], perm[8];
      random_shape(rank, shape, 60000);
      random_perm(rank, perm);
      for (size_t e = 0; e < sizeof sizes / sizeof sizes[0]; e++) check_kernel(sizes[e], rank, shape, perm);
    }
}

static void test_kernel_edge_shapes(void **state) {
  (void)state;
  /* all ones; size-1 dims around the moved ones; identity perms; mergeable
   * runs; dims straddling the tile size; a zero-size dim */
  static const struct {
    int32_t rank;
    int64_t shape[6], perm[6];
  } cases[] = {
      {1, {1}, {0}},
      {1, {7}, {0}},
      {3, {1, 1, 1}, {2, 0, 1}},
      {4, {1, 5, 1, 3}, {3, 2, 1, 0}},
      {4, {2, 3, 4, 5}, {0, 1, 2, 3}},
      {4, {2, 3, 4, 5}, {2, 3, 0, 1}},
      {5, {2, 1, 3, 1, 4}, {4, 3, 2, 1, 0}},
      {2, {31, 33}, {1, 0}},
      {2, {32, 64}, {1, 0}},
      {2, {1, 100}, {1, 0}},
      {2, {100, 1}, {1, 0}},
      {3, {65, 2, 33}, {2, 1, 0}},
      {3, {3, 0, 4}, {2, 0, 1}},
      {6, {2, 2, 2, 2, 2, 2}, {5, 4, 3, 2, 1, 0}},
      {6, {1, 2, 1, 3, 1, 4}, {1, 3, 5, 0, 2, 4}},
  };
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++)
    for (size_t es = 1; es <= 8; es *= 2) check_kernel(es, cases[c].rank, cases[c].shape, cases[c].perm);
}

/* ---------- the transpose op's value inference ---------- */

/* transpose(x, perm) with x and perm as consts, in main of p; the op is
 * named "t", the consts "x" and "perm" (*xc / *pc when wanted). */
static mil_op *transpose_of(mil_program *p, mil_value *xv, int32_t rank, const int64_t *perm, mil_op **xc_out,
                            mil_op **pc_out) {
  mil_function *f = mil_function_new(p, "main", "CoreML7");
  assert_non_null(f);
  mil_block *b = mil_function_body(f);
  int64_t pn = rank;
  mil_value *pv = mil_value_new_tensor(p, MIL_DT_INT32, 1, &pn, false, NULL);
  assert_non_null(pv);
  for (int32_t i = 0; i < rank; i++) mil_value_set_i64(pv, i, perm[i]);
  mil_op *xc = mil_const_new(p, "x", xv), *pc = mil_const_new(p, "perm", pv);
  assert_non_null(xc);
  assert_non_null(pc);
  mil_block_append(b, xc);
  mil_block_append(b, pc);
  mil_op *t = mil_op_new(p, "transpose", "t");
  mil_op_add_input(t, "x", xc->outputs[0]);
  mil_op_add_input(t, "perm", pc->outputs[0]);
  mil_block_append(b, t);
  if (xc_out) *xc_out = xc;
  if (pc_out) *pc_out = pc;
  return t;
}

/* Builds const x (dtype, shape, random contents) -> transpose(perm), infers
 * the transpose and compares its value with the reference. */
static void check_fold(mil_dtype dt, int32_t rank, const int64_t *shape, const int64_t *perm) {
  mil_program *p = mil_program_new(NULL);
  assert_non_null(p);
  size_t es = mil_dtype_size(dt);
  mil_value *xv = mil_value_new_tensor(p, dt, rank, shape, false, NULL);
  assert_non_null(xv);
  uint8_t *xd = mil_value_data_mut(xv);
  if (xv->numel) fill_random(xd, (size_t)xv->numel * es);
  if (dt == MIL_DT_BOOL)
    for (int64_t i = 0; i < xv->numel; i++) xd[i] &= 1;
  mil_op *t = transpose_of(p, xv, rank, perm, NULL, NULL);
  mil_diag d = {0};
  assert_int_equal(mil_op_infer(t, &d), MIL_OK);
  mil_diag_clear(&d);
  const mil_value *got = t->outputs[0]->val;
  assert_non_null(got);
  assert_int_equal(got->type->dtype, dt);
  assert_int_equal(got->type->rank, rank);
  for (int32_t i = 0; i < rank; i++) assert_int_equal(got->type->dims[i].size, shape[perm[i]]);
  assert_int_equal(got->numel, xv->numel);
  size_t nb = (size_t)(xv->numel ? xv->numel : 1) * es;
  uint8_t *want = calloc(1, nb);
  assert_non_null(want);
  naive_transpose(want, xd, es, rank, shape, perm);
  if (xv->numel) assert_memory_equal(mil_value_data(got), want, (size_t)xv->numel * es);
  free(want);
  mil_program_free(p);
}

static void test_fold_dtypes(void **state) {
  (void)state;
  static const mil_dtype dts[] = {MIL_DT_FP32, MIL_DT_FP16, MIL_DT_INT8, MIL_DT_BOOL, MIL_DT_INT32};
  for (size_t e = 0; e < sizeof dts / sizeof dts[0]; e++)
    for (int32_t rank = 1; rank <= 6; rank++)
      for (int trial = 0; trial < 8; trial++) {
        int64_t shape[8], perm[8];
        random_shape(rank, shape, 20000);
        random_perm(rank, perm);
        check_fold(dts[e], rank, shape, perm);
      }
}

/* Negative perm entries count from the end, like numpy. */
static void test_fold_negative_perm(void **state) {
  (void)state;
  int64_t shape[3] = {2, 3, 4}, perm[3] = {-1, 0, -2}, norm[3] = {2, 0, 1};
  mil_program *p = mil_program_new(NULL);
  mil_value *xv = mil_value_new_tensor(p, MIL_DT_FP32, 3, shape, false, NULL);
  float *xd = mil_value_data_mut(xv);
  for (int i = 0; i < 24; i++) xd[i] = (float)i;
  mil_op *t = transpose_of(p, xv, 3, perm, NULL, NULL);
  mil_diag d = {0};
  assert_int_equal(mil_op_infer(t, &d), MIL_OK);
  mil_diag_clear(&d);
  const mil_value *got = t->outputs[0]->val;
  assert_non_null(got);
  float want[24];
  naive_transpose((uint8_t *)want, (const uint8_t *)xd, 4, 3, shape, norm);
  assert_memory_equal(mil_value_data(got), want, sizeof want);
  mil_program_free(p);
}

/* Inferring the op again keeps the value folded before when it still
 * holds the transposed input, and folds anew when the input changed. */
static void test_fold_again(void **state) {
  (void)state;
  int64_t shape[3] = {5, 40, 3}, perm[3] = {2, 0, 1};
  mil_program *p = mil_program_new(NULL);
  mil_value *xv = mil_value_new_tensor(p, MIL_DT_FP16, 3, shape, false, NULL);
  fill_random(mil_value_data_mut(xv), (size_t)xv->numel * 2);
  mil_op *xc, *pc;
  mil_op *t = transpose_of(p, xv, 3, perm, &xc, &pc);
  int64_t pn = 3;
  mil_diag d = {0};
  assert_int_equal(mil_op_infer(t, &d), MIL_OK);
  const mil_value *v1 = t->outputs[0]->val;
  assert_non_null(v1);
  uint8_t want[600 * 2];
  naive_transpose(want, mil_value_data(xv), 2, 3, shape, perm);
  assert_memory_equal(mil_value_data(v1), want, sizeof want);
  /* same input: the same value */
  assert_int_equal(mil_op_infer(t, &d), MIL_OK);
  assert_ptr_equal(t->outputs[0]->val, v1);
  /* new input bytes: a new value with the new bytes */
  mil_value *xv2 = mil_value_new_tensor(p, MIL_DT_FP16, 3, shape, false, mil_value_data(xv));
  ((uint8_t *)mil_value_data_mut(xv2))[7] ^= 0x5a;
  mil_var_set_value(xc->outputs[0], xv2);
  assert_int_equal(mil_op_infer(t, &d), MIL_OK);
  const mil_value *v2 = t->outputs[0]->val;
  assert_non_null(v2);
  assert_ptr_not_equal(v2, v1);
  naive_transpose(want, mil_value_data(xv2), 2, 3, shape, perm);
  assert_memory_equal(mil_value_data(v2), want, sizeof want);
  /* another perm with the same output bytes count: the shape decides */
  mil_value *pv2 = mil_value_new_tensor(p, MIL_DT_INT32, 1, &pn, false, NULL);
  int64_t perm2[3] = {1, 2, 0};
  for (int i = 0; i < 3; i++) mil_value_set_i64(pv2, i, perm2[i]);
  mil_var_set_value(pc->outputs[0], pv2);
  assert_int_equal(mil_op_infer(t, &d), MIL_OK);
  const mil_value *v3 = t->outputs[0]->val;
  assert_non_null(v3);
  assert_ptr_not_equal(v3, v2);
  assert_int_equal(v3->type->dims[0].size, 40);
  naive_transpose(want, mil_value_data(xv2), 2, 3, shape, perm2);
  assert_memory_equal(mil_value_data(v3), want, sizeof want);
  mil_diag_clear(&d);
  mil_program_free(p);
}

/* int64 is not a transpose input dtype: the kernel is checked directly for
 * 8-byte elements with the shapes of the op test. */
static void test_kernel_int64(void **state) {
  (void)state;
  for (int32_t rank = 1; rank <= 6; rank++)
    for (int trial = 0; trial < 8; trial++) {
      int64_t shape[8], perm[8];
      random_shape(rank, shape, 20000);
      random_perm(rank, perm);
      check_kernel(sizeof(int64_t), rank, shape, perm);
    }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_kernel_all_perms),  cmocka_unit_test(test_kernel_high_rank),
      cmocka_unit_test(test_kernel_edge_shapes), cmocka_unit_test(test_fold_dtypes),
      cmocka_unit_test(test_fold_negative_perm), cmocka_unit_test(test_fold_again),
      cmocka_unit_test(test_kernel_int64),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
