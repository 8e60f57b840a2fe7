/* op_transpose_data (src/ops/tensor_ops_util.c: value inference's and the
 * interpreter's transpose) against np.transpose by its definition
 * (transpose_ref.h): every permutation of ranks 1-4, shapes with
 * axes of size 1 (dropped), axes that stay neighbours (merged), sizes
 * that are not multiples of the tile, elements of 1, 2, 4, 8 and 12 bytes
 * (the tiled, the row-copy and the element paths); rank 6 permutations of
 * the block rearrangements; and a transpose op through the interpreter. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "ops/tensor_ops_internal.h"
#include "interp_fixture.h"
#include "unit/transpose_ref.h"

static void check(int n, const int64_t *xs, size_t es) {
  int64_t total = 1;
  for (int i = 0; i < n; i++) total *= xs[i];
  size_t bytes = (size_t)total * es;
  unsigned char *src = malloc(bytes + 1), *got = malloc(bytes + 1), *want = malloc(bytes + 1);
  assert_non_null(src), assert_non_null(got), assert_non_null(want);
  for (size_t i = 0; i < bytes; i++) src[i] = (unsigned char)(i * 131 + i / 7);
  int64_t perm[8];
  for (int i = 0; i < n; i++) perm[i] = i;
  do {
    memset(got, 0xA5, bytes);
    op_transpose_data(got, src, es, n, xs, perm);
    naive_transpose(want, src, es, n, xs, perm);
    if (memcmp(got, want, bytes) != 0) {
      char sh[128] = "", pm[128] = "";
      for (int i = 0; i < n; i++) {
        snprintf(sh + strlen(sh), sizeof sh - strlen(sh), " %lld", (long long)xs[i]);
        snprintf(pm + strlen(pm), sizeof pm - strlen(pm), " %lld", (long long)perm[i]);
      }
      fail_msg("shape (%s), perm (%s), %zu-byte elements: wrong bytes", sh, pm, es);
    }
  } while (next_perm(n, perm));
  free(src), free(got), free(want);
}

static void test_all_permutations(void **state) {
  (void)state;
  static const int64_t shapes[][4] = {
      {37, 0, 0, 0},  {5, 1, 0, 0},   {1, 9, 0, 0},  {33, 17, 0, 0}, {16, 16, 0, 0}, {197, 64, 0, 0},
      {3, 1, 5, 0},   {12, 19, 21, 0}, {2, 40, 3, 0}, {1, 1, 1, 0},  {2, 3, 4, 5},   {1, 17, 1, 33},
      {3, 18, 2, 20}, {4, 1, 31, 2},
  };
  static const int ranks[] = {1, 2, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4};
  static const size_t sizes[] = {1, 2, 4, 8, 12};
  for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++)
    for (size_t e = 0; e < sizeof sizes / sizeof *sizes; e++) check(ranks[s], shapes[s], sizes[e]);
}

static void test_block_rearrangements(void **state) {
  (void)state;
  /* depth_to_space / pixel_shuffle / space_to_depth / pixel_unshuffle views (tensor.c) */
  static const int64_t perms[4][6] = {{0, 3, 4, 1, 5, 2}, {0, 1, 4, 2, 5, 3}, {0, 3, 5, 1, 2, 4}, {0, 1, 3, 5, 2, 4}};
  static const int64_t xs[6] = {2, 3, 2, 5, 7, 2};
  for (int k = 0; k < 4; k++)
    for (size_t es = 1; es <= 8; es *= 2) {
      int64_t total = 1;
      for (int i = 0; i < 6; i++) total *= xs[i];
      size_t bytes = (size_t)total * es;
      unsigned char *src = malloc(bytes), *got = malloc(bytes), *want = malloc(bytes);
      assert_non_null(src), assert_non_null(got), assert_non_null(want);
      for (size_t i = 0; i < bytes; i++) src[i] = (unsigned char)(i * 37 + 5);
      op_transpose_data(got, src, es, 6, xs, perms[k]);
      naive_transpose(want, src, es, 6, xs, perms[k]);
      if (memcmp(got, want, bytes) != 0) fail_msg("perm %d, %zu-byte elements: wrong bytes", k, es);
      free(src), free(got), free(want);
    }
}

/* A transpose op of an fp16 (12, 197, 64) value, as attention heads take
 * one: the interpreter's result element by element. */
static void test_transpose_op(void **state) {
  (void)state;
  ifix f;
  ifix_open(&f, "main[CoreML6](%x: (12, 197, 64, fp16)(Tensor)) {\n  block0() {\n"
                "    %y: (12, 64, 197, fp16)(Tensor) = transpose(x=%x, perm=[0, 2, 1], name=\"y\")\n"
                "  } -> (%y)\n}\n");
  static uint16_t x[12 * 197 * 64];
  for (int i = 0; i < 12 * 197 * 64; i++) x[i] = (uint16_t)(i * 7 + 3);
  int64_t shape[3] = {12, 197, 64};
  ifix_set(&f, "x", MIL_DT_FP16, 3, shape, x);
  ifix_run(&f);
  const mil_tensor *t = mil_interp_output_at(f.ip, 0);
  assert_non_null(t);
  const uint16_t *y = t->data;
  for (int h = 0; h < 12; h++)
    for (int d = 0; d < 64; d++)
      for (int s = 0; s < 197; s++)
        if (y[(h * 64 + d) * 197 + s] != x[(h * 197 + s) * 64 + d]) fail_msg("y[%d, %d, %d] is wrong", h, d, s);
  ifix_close(&f);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_all_permutations),
      cmocka_unit_test(test_block_rearrangements),
      cmocka_unit_test(test_transpose_op),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
