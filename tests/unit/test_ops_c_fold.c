/* Value inference (constant folding) of the tensor_transformation,
 * tensor_operation and scatter_gather families, against values computed by
 * hand from numpy's semantics (the functions coremltools' value_inference
 * calls). The op under test is named "t". */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "ops_test_util.h"

#define I15 "CoreML5"
#define I17 "CoreML7"
#define I18 "CoreML8"

#define CV(n, len, vals) C(n, "(" #len ",int32)*(Tensor)", vals)
#define CI(n, v) C(n, "(int32)*(Scalar)", #v)
#define CB(n, v) C(n, "(bool)*(Scalar)", v)
#define CSTR(n, v) C(n, "(string)*(Scalar)", "\"" v "\"")
#define CF(n, v) C(n, "(fp32)*(Scalar)", #v)
#define X23V C("x", "(2, 3, fp32)*(Tensor)", "[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]")
#define X34V C("x", "(3, 4, fp32)*(Tensor)", "[[0.0, 1.0, 2.0, 3.0], [4.0, 5.0, 6.0, 7.0], [8.0, 9.0, 10.0, 11.0]]")
#define F MIL_DT_FP32
#define I MIL_DT_INT32

/* Folded value of output `out` of op t. */
static void expect_out(const char *opset, const char *body, int out, mil_dtype dt, int n, const double *want) {
  tcase tc = {opset, "", body, NULL, NULL};
  mil_program *p = parse_case(&tc);
  const mil_type *types[16];
  const mil_value *vals[16];
  char err[1024];
  if (infer_t(p, types, vals, err, sizeof err) != MIL_OK) fail_msg("%s\n%s", err, body);
  const mil_value *v = vals[out];
  if (!v) fail_msg("output %d did not fold\n%s", out, body);
  if (v->type->dtype != dt || v->numel != n)
    fail_msg("output %d: %s with %lld values, expected %s with %d\n%s", out, mil_dtype_name(v->type->dtype),
             (long long)v->numel, mil_dtype_name(dt), n, body);
  for (int i = 0; i < n; i++)
    if (mil_value_get_f64(v, i) != want[i])
      fail_msg("output %d element %d: got %.17g, expected %.17g\n%s", out, i, mil_value_get_f64(v, i), want[i], body);
  mil_program_free(p);
}
#define OUT(opset, body, out, dt, ...)                                            \
  do {                                                                           \
    const double w_[] = {__VA_ARGS__};                                           \
    expect_out(opset, body, out, dt, (int)(sizeof w_ / sizeof w_[0]), w_);       \
  } while (0)

static void test_fold_layout(void **state) {
  (void)state;
  FOLD(I15, "", X23V CV("a", 1, "[0]") T("(1, 2, 3, fp32)(Tensor)") "expand_dims(x=%x, axes=%a, name=\"t\")\n", F, 1, 2,
       3, 4, 5, 6);
  FOLD(I15, "", C("x", "(1, 2, 1, int32)*(Tensor)", "[[[7], [8]]]") T("(2,int32)(Tensor)") "squeeze(x=%x, name=\"t\")\n",
       I, 7, 8);
  FOLD(I15, "", X23V CV("p", 2, "[1, 0]") T("(3, 2, fp32)(Tensor)") "transpose(x=%x, perm=%p, name=\"t\")\n", F, 1, 4, 2,
       5, 3, 6);
  FOLD(I15, "", X23V CV("a", 1, "[1]") T("(2, 3, fp32)(Tensor)") "reverse(x=%x, axes=%a, name=\"t\")\n", F, 3, 2, 1, 6,
       5, 4);
  FOLD(I15, "", X23V T("(2, 3, fp32)(Tensor)") "reverse(x=%x, name=\"t\")\n", F, 6, 5, 4, 3, 2, 1);
  /* flipping an axis twice is the identity */
  FOLD(I15, "", X23V CV("a", 2, "[0, -2]") T("(2, 3, fp32)(Tensor)") "reverse(x=%x, axes=%a, name=\"t\")\n", F, 1, 2, 3,
       4, 5, 6);
  FOLD(I15, "", X23V CV("s", 2, "[3, -1]") T("(3, 2, fp32)(Tensor)") "reshape(x=%x, shape=%s, name=\"t\")\n", F, 1, 2, 3,
       4, 5, 6);
  FOLD(I15, "", X23V T("(2, 3, fp32)(Tensor)") "flatten2d(x=%x, name=\"t\")\n", F, 1, 2, 3, 4, 5, 6);
  FOLD(I15, "", X23V T("(2, 3, fp32)(Tensor)") "identity(x=%x, name=\"t\")\n", F, 1, 2, 3, 4, 5, 6);
  expect_no_fold(I15, "%x: (2, 3, fp32)(Tensor)", CV("p", 2, "[1, 0]") T("(3, 2, fp32)(Tensor)")
                 "transpose(x=%x, perm=%p, name=\"t\")\n");
  /* reverse_sequence has no value inference in coremltools */
  expect_no_fold(I15, "", X23V CV("l", 2, "[1, 2]") T("(2, 3, fp32)(Tensor)") "reverse_sequence(x=%x, lengths=%l, name=\"t\")\n");
}

static void test_fold_slices(void **state) {
  (void)state;
  /* rows 0, 2 and columns 1, 3 */
  FOLD(I15, "", X34V CV("b", 2, "[0, 1]") CV("e", 2, "[3, 4]") CV("s", 2, "[2, 2]") T("(2, 2, fp32)(Tensor)")
       "slice_by_index(x=%x, begin=%b, end=%e, stride=%s, name=\"t\")\n", F, 1, 3, 9, 11);
  /* negative strides: rows 2, 1 and columns 3, 1 */
  FOLD(I15, "", X34V CV("b", 2, "[2, 3]") CV("e", 2, "[0, 0]") CV("s", 2, "[-1, -2]") T("(2, 2, fp32)(Tensor)")
       "slice_by_index(x=%x, begin=%b, end=%e, stride=%s, name=\"t\")\n", F, 11, 9, 7, 5);
  /* masks: begin_mask on dim 0, end_mask on dim 1 -> x[:2, 2:] */
  FOLD(I15, "", X34V CV("b", 2, "[1, 2]") CV("e", 2, "[2, 3]") C("bm", "(2,bool)*(Tensor)", "[True, False]")
       C("em", "(2,bool)*(Tensor)", "[False, True]") T("(2, 2, fp32)(Tensor)")
       "slice_by_index(x=%x, begin=%b, end=%e, begin_mask=%bm, end_mask=%em, name=\"t\")\n", F, 2, 3, 6, 7);
  /* squeeze_mask on both dims: the scalar x[1][2] */
  FOLD(I15, "", X34V CV("b", 2, "[1, -2]") CV("e", 2, "[0, 0]") C("sm", "(2,bool)*(Tensor)", "[True, True]")
       T("(fp32)(Scalar)") "slice_by_index(x=%x, begin=%b, end=%e, squeeze_mask=%sm, name=\"t\")\n", F, 6);
  /* squeeze one dim: x[:, -1] */
  FOLD(I15, "", X34V CV("b", 2, "[0, -1]") CV("e", 2, "[3, 0]") C("sm", "(2,bool)*(Tensor)", "[False, True]")
       T("(3,fp32)(Tensor)") "slice_by_index(x=%x, begin=%b, end=%e, squeeze_mask=%sm, name=\"t\")\n", F, 3, 7, 11);
  /* a fully squeezed bool slice has no value in coremltools */
  expect_no_fold(I15, "", C("x", "(2,bool)*(Tensor)", "[True, False]") CV("b", 1, "[0]") CV("e", 1, "[1]")
                 C("sm", "(1,bool)*(Tensor)", "[True]") T("(bool)(Scalar)")
                 "slice_by_index(x=%x, begin=%b, end=%e, squeeze_mask=%sm, name=\"t\")\n");
  FOLD(I15, "", X34V CV("b", 2, "[1, 1]") CV("s", 2, "[2, -1]") T("(2, 3, fp32)(Tensor)")
       "slice_by_size(x=%x, begin=%b, size=%s, name=\"t\")\n", F, 5, 6, 7, 9, 10, 11);
  FOLD(I17, "", X34V C("b", "(2,int8)*(Tensor)", "[-1, 0]") C("s", "(2,int8)*(Tensor)", "[1, 2]") T("(1, 2, fp32)(Tensor)")
       "slice_by_size(x=%x, begin=%b, size=%s, name=\"t\")\n", F, 8, 9);
  FOLD(I18, "", C("x", "(2, 3, fp32)*(Tensor)", "[[0.0, 0.0, 0.0], [0.0, 0.0, 0.0]]")
       C("u", "(1, 2, fp32)*(Tensor)", "[[7.0, 8.0]]") CV("b", 2, "[1, 1]") CV("e", 2, "[2, 3]") T("(2, 3, fp32)(Tensor)")
       "slice_update(x=%x, update=%u, begin=%b, end=%e, name=\"t\")\n", F, 0, 0, 0, 0, 7, 8);
}

static void test_fold_tensor_operation(void **state) {
  (void)state;
  /* band_part keeps m - n <= 0 and n - m <= 1; 0 * -3.0 is -0.0 */
  FOLD(I15, "", C("x", "(3, 3, fp32)*(Tensor)", "[[1.0, 2.0, -3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0]]") CI("lo", 0)
       CI("up", 1) T("(3, 3, fp32)(Tensor)") "band_part(x=%x, lower=%lo, upper=%up, name=\"t\")\n", F, 1, 2, -0.0, 0, 5, 6,
       0, 0, 9);
#define CS C("x", "(4,int32)*(Tensor)", "[1, 2, 3, 4]") CI("a", 0)
  FOLD(I15, "", CS T("(4,int32)(Tensor)") "cumsum(x=%x, axis=%a, name=\"t\")\n", I, 1, 3, 6, 10);
  FOLD(I15, "", CS CB("e", "True") T("(4,int32)(Tensor)") "cumsum(x=%x, axis=%a, exclusive=%e, name=\"t\")\n", I, 0, 1,
       3, 6);
  FOLD(I15, "", CS CB("r", "True") T("(4,int32)(Tensor)") "cumsum(x=%x, axis=%a, reverse=%r, name=\"t\")\n", I, 10, 9,
       7, 4);
  FOLD(I15, "", CS CB("e", "True") CB("r", "True") T("(4,int32)(Tensor)")
       "cumsum(x=%x, axis=%a, exclusive=%e, reverse=%r, name=\"t\")\n", I, 9, 7, 4, 0);
#undef CS
  /* fp16 accumulates in half precision: 2048 + 1 rounds back to 2048 */
  FOLD(I15, "", C("x", "(3,fp16)*(Tensor)", "[2048.0, 1.0, 1.0]") T("(3,fp16)(Tensor)") "cumsum(x=%x, name=\"t\")\n",
       MIL_DT_FP16, 2048, 2048, 2048);
  FOLD(I15, "", C("x", "(2, 2, fp32)*(Tensor)", "[[1.0, 2.0], [3.0, 4.0]]") CI("a", 1) T("(2, 2, fp32)(Tensor)")
       "cumsum(x=%x, axis=%a, name=\"t\")\n", F, 1, 3, 3, 7);
  FOLD(I15, "", CV("s", 2, "[2, 1]") CF("v", 1.5) T("(2, 1, fp32)(Tensor)") "fill(shape=%s, value=%v, name=\"t\")\n", F, 1.5,
       1.5);
  FOLD(I15, "", CV("s", 1, "[3]") T("(3,fp32)(Tensor)") "fill(shape=%s, name=\"t\")\n", F, 0, 0, 0);
  FOLD("CoreML6", "", X23V CI("v", 9) T("(2, 3, int32)(Tensor)") "fill_like(ref_tensor=%x, value=%v, name=\"t\")\n", I, 9,
       9, 9, 9, 9, 9);
  expect_no_fold("CoreML6", "%x: (2,fp32)(Tensor)", CI("v", 9) T("(2,int32)(Tensor)") "fill_like(ref_tensor=%x, value=%v, name=\"t\")\n");
  /* pad: constant (with a fill value), reflect, replicate */
  FOLD(I15, "", C("x", "(1, 2, fp32)*(Tensor)", "[[1.0, 2.0]]") CV("p", 4, "[1, 0, 0, 1]") CF("c", 9.0)
       T("(2, 3, fp32)(Tensor)") "pad(x=%x, pad=%p, constant_val=%c, name=\"t\")\n", F, 9, 9, 9, 1, 2, 9);
  FOLD(I15, "", C("x", "(1, 3, fp32)*(Tensor)", "[[1.0, 2.0, 3.0]]") CV("p", 2, "[1, 2]") CSTR("m", "reflect")
       T("(1, 6, fp32)(Tensor)") "pad(x=%x, pad=%p, mode=%m, name=\"t\")\n", F, 2, 1, 2, 3, 2, 1);
  FOLD(I15, "", C("x", "(1, 3, fp32)*(Tensor)", "[[1.0, 2.0, 3.0]]") CV("p", 2, "[1, 2]") CSTR("m", "replicate")
       T("(1, 6, fp32)(Tensor)") "pad(x=%x, pad=%p, mode=%m, name=\"t\")\n", F, 1, 1, 2, 3, 3, 3);
  /* reflect beyond the size mirrors periodically (numpy) */
  FOLD(I15, "", C("x", "(3,fp32)*(Tensor)", "[1.0, 2.0, 3.0]") CV("p", 2, "[5, 0]") CSTR("m", "reflect")
       T("(8,fp32)(Tensor)") "pad(x=%x, pad=%p, mode=%m, name=\"t\")\n", F, 2, 1, 2, 3, 2, 1, 2, 3);
  FOLD(I15, "", CI("s", 0) CI("e", 10) CI("st", 3) T("(4,int32)(Tensor)") "range_1d(end=%e, start=%s, step=%st, name=\"t\")\n",
       I, 0, 3, 6, 9);
  FOLD(I15, "", CI("s", 5) CI("e", 0) CI("st", -2) T("(3,int32)(Tensor)") "range_1d(end=%e, start=%s, step=%st, name=\"t\")\n",
       I, 5, 3, 1);
  /* fp32: numpy fills start + i * (float)(start + step - start) in float */
  {
    float d = (0.0f + 0.3f) - 0.0f;
    FOLD(I15, "", CF("s", 0.0) CF("e", 1.0) CF("st", 0.3) T("(4,fp32)(Tensor)") "range_1d(end=%e, start=%s, step=%st, name=\"t\")\n",
         F, 0, (double)0.3f, (double)(0.0f + 2.0f * d), (double)(0.0f + 3.0f * d));
  }
  FOLD(I15, "", C("x", "(2,int32)*(Tensor)", "[1, 2]") CV("r", 1, "[3]") T("(6,int32)(Tensor)") "tile(x=%x, reps=%r, name=\"t\")\n",
       I, 1, 2, 1, 2, 1, 2);
  FOLD(I15, "", C("x", "(1, 2, int32)*(Tensor)", "[[1, 2]]") CV("r", 2, "[2, 2]") T("(2, 4, int32)(Tensor)")
       "tile(x=%x, reps=%r, name=\"t\")\n", I, 1, 2, 1, 2, 1, 2, 1, 2);
  FOLD(I15, "", C("x", "(2, 2, fp32)*(Tensor)", "[[0.0, 1.0], [2.0, 0.0]]") T("(2, 2, int32)(Tensor)") "non_zero(x=%x, name=\"t\")\n",
       I, 0, 1, 1, 0);
  FOLD(I15, "", C("x", "(3,int32)*(Tensor)", "[0, 4, 0]") T("(1, 1, int32)(Tensor)") "non_zero(x=%x, name=\"t\")\n", I, 1);
  FOLD(I15, "", X23V CV("s", 1, "[3]") T("(2,int32)(Tensor)") "shape(x=%x, name=\"t\")\n", I, 2, 3);
}

static void test_fold_sort(void **state) {
  (void)state;
  /* argsort defaults to descending (np.argsort(-x)) */
  FOLD(I15, "", C("x", "(3,fp32)*(Tensor)", "[3.0, 1.0, 2.0]") T("(3,int32)(Tensor)") "argsort(x=%x, name=\"t\")\n", I, 0, 2, 1);
  FOLD(I15, "", C("x", "(3,fp32)*(Tensor)", "[3.0, 1.0, 2.0]") CB("asc", "True") T("(3,int32)(Tensor)")
       "argsort(x=%x, ascending=%asc, name=\"t\")\n", I, 1, 2, 0);
  /* ties keep index order */
  FOLD(I15, "", C("x", "(3,int32)*(Tensor)", "[1, 1, 0]") T("(3,int32)(Tensor)") "argsort(x=%x, name=\"t\")\n", I, 0, 1, 2);
  FOLD(I15, "", C("x", "(2, 2, fp32)*(Tensor)", "[[1.0, 4.0], [3.0, 2.0]]") CI("a", 0) T("(2, 2, int32)(Tensor)")
       "argsort(x=%x, axis=%a, name=\"t\")\n", I, 1, 0, 0, 1);
  const char *tk = C("x", "(5,fp32)*(Tensor)", "[3.0, 1.0, 4.0, 1.0, 5.0]") CI("k", 2)
      "    %t: (2,fp32)(Tensor), %t_1: (2,int32)(Tensor) = topk(x=%x, k=%k, name=\"t\")\n";
  OUT(I15, tk, 0, F, 5, 4);
  OUT(I15, tk, 1, I, 4, 2);
  OUT(I15, C("x", "(5,fp32)*(Tensor)", "[3.0, 1.0, 4.0, 1.0, 5.0]") CI("k", 3) CB("asc", "True")
      "    %t: (3,fp32)(Tensor), %t_1: (3,int32)(Tensor) = topk(x=%x, k=%k, ascending=%asc, name=\"t\")\n",
      1, I, 1, 3, 0);
  OUT(I17, C("x", "(2, 3, int8)*(Tensor)", "[[1, 9, 5], [7, 2, 8]]") C("k", "(int16)*(Scalar)", "1") CSTR("od", "uint16")
      "    %t: (2, 1, int8)(Tensor), %t_1: (2, 1, uint16)(Tensor) = topk(x=%x, k=%k, output_indices_dtype=%od, name=\"t\")\n",
      1, MIL_DT_UINT16, 1, 2);
}

static void test_fold_concat_split(void **state) {
  (void)state;
  FOLD(I15, "", C("a", "(2,int32)*(Tensor)", "[1, 2]") C("b", "(1,int32)*(Tensor)", "[3]") CI("ax", 0)
       T("(3,int32)(Tensor)") "concat(values=(%a, %b), axis=%ax, name=\"t\")\n", I, 1, 2, 3);
  FOLD(I15, "", C("a", "(2, 1, fp32)*(Tensor)", "[[1.0], [2.0]]") C("b", "(2, 2, fp32)*(Tensor)", "[[3.0, 4.0], [5.0, 6.0]]")
       CI("ax", -1) T("(2, 3, fp32)(Tensor)") "concat(values=(%a, %b), axis=%ax, name=\"t\")\n", F, 1, 3, 4, 2, 5, 6);
  /* scalars stack into a vector */
  FOLD(I15, "", CI("a", 4) CI("b", 5) CI("ax", 0) T("(2,int32)(Tensor)") "concat(values=(%a, %b), axis=%ax, name=\"t\")\n",
       I, 4, 5);
  /* coremltools folds interleave=True as a plain concat (a wrong value); libmil does not fold it */
  expect_no_fold(I15, "", C("a", "(2,int32)*(Tensor)", "[1, 2]") C("b", "(2,int32)*(Tensor)", "[3, 4]") CI("ax", 0)
                 CB("il", "True") T("(4,int32)(Tensor)") "concat(values=(%a, %b), axis=%ax, interleave=%il, name=\"t\")\n");
  const char *sp = C("x", "(6,int32)*(Tensor)", "[1, 2, 3, 4, 5, 6]") CV("ss", 2, "[2, 4]") CI("ax", 0)
      "    %t: (2,int32)(Tensor), %t_1: (4,int32)(Tensor) = split(x=%x, split_sizes=%ss, axis=%ax, name=\"t\")\n";
  OUT(I15, sp, 0, I, 1, 2);
  OUT(I15, sp, 1, I, 3, 4, 5, 6);
  OUT(I15, X23V CI("n", 3) CI("ax", 1)
      "    %t: (2, 1, fp32)(Tensor), %t_1: (2, 1, fp32)(Tensor), %t_2: (2, 1, fp32)(Tensor) = split(x=%x, num_splits=%n, axis=%ax, name=\"t\")\n",
      2, F, 3, 6);
  FOLD(I15, "", C("a", "(2,int32)*(Tensor)", "[1, 2]") C("b", "(2,int32)*(Tensor)", "[3, 4]") CI("ax", 1)
       T("(2, 2, int32)(Tensor)") "stack(values=(%a, %b), axis=%ax, name=\"t\")\n", I, 1, 3, 2, 4);
  FOLD(I15, "", C("a", "(2,int32)*(Tensor)", "[1, 2]") C("b", "(2,int32)*(Tensor)", "[3, 4]") CI("ax", 0)
       T("(2, 2, int32)(Tensor)") "stack(values=(%a, %b), axis=%ax, name=\"t\")\n", I, 1, 2, 3, 4);
}

static void test_fold_gather_scatter(void **state) {
  (void)state;
  FOLD(I15, "", X23V CV("i", 2, "[2, 0]") CI("a", 1) T("(2, 2, fp32)(Tensor)") "gather(x=%x, indices=%i, axis=%a, name=\"t\")\n",
       F, 3, 1, 6, 4);
  /* negative indices count from the end; a scalar index drops the axis */
  FOLD(I15, "", X23V CI("i", -1) T("(3,fp32)(Tensor)") "gather(x=%x, indices=%i, name=\"t\")\n", F, 4, 5, 6);
  FOLD(I15, "", C("x", "(3,int32)*(Tensor)", "[7, 8, 9]") CI("i", 1) T("(int32)(Scalar)") "gather(x=%x, indices=%i, name=\"t\")\n",
       I, 8);
  expect_no_fold(I15, "", X23V CI("i", 2) T("(3,fp32)(Tensor)") "gather(x=%x, indices=%i, name=\"t\")\n");
  /* batch_dims = 1: out[b, j] = x[b, idx[b, j]] */
  FOLD("CoreML6", "", X23V C("i", "(2, 2, int32)*(Tensor)", "[[2, 0], [1, 1]]") CI("a", 1) CI("bd", 1)
       T("(2, 2, fp32)(Tensor)") "gather(x=%x, indices=%i, axis=%a, batch_dims=%bd, name=\"t\")\n", F, 3, 1, 5, 5);
  FOLD(I15, "", C("x", "(2, 2, fp32)*(Tensor)", "[[1.0, 2.0], [3.0, 4.0]]") C("i", "(2, 2, int32)*(Tensor)", "[[1, 0], [0, 0]]")
       CI("a", 1) T("(2, 2, fp32)(Tensor)") "gather_along_axis(x=%x, indices=%i, axis=%a, name=\"t\")\n", F, 2, 1, 3, 3);
  FOLD(I15, "", C("x", "(2, 2, fp32)*(Tensor)", "[[1.0, 2.0], [3.0, 4.0]]") C("i", "(1, 2, int32)*(Tensor)", "[[1, 0]]")
       CI("a", 0) T("(1, 2, fp32)(Tensor)") "gather_along_axis(x=%x, indices=%i, axis=%a, name=\"t\")\n", F, 3, 2);
  /* np.put_along_axis assigns, whatever the mode */
  FOLD(I15, "", C("d", "(2, 2, fp32)*(Tensor)", "[[1.0, 1.0], [1.0, 1.0]]") C("i", "(2, 1, int32)*(Tensor)", "[[1], [0]]")
       C("u", "(2, 1, fp32)*(Tensor)", "[[5.0], [6.0]]") CI("a", 1) CSTR("m", "add") T("(2, 2, fp32)(Tensor)")
       "scatter_along_axis(data=%d, indices=%i, updates=%u, axis=%a, mode=%m, name=\"t\")\n", F, 1, 5, 6, 1);
  /* no value inference in coremltools */
  expect_no_fold(I15, "", X23V C("i", "(1, 1, int32)*(Tensor)", "[[1]]") T("(1, 3, fp32)(Tensor)")
                 "gather_nd(x=%x, indices=%i, name=\"t\")\n");
  expect_no_fold(I15, "", X23V CV("i", 1, "[1]") C("u", "(1, 3, fp32)*(Tensor)", "[[0.0, 0.0, 0.0]]") T("(2, 3, fp32)(Tensor)")
                 "scatter(data=%x, indices=%i, updates=%u, name=\"t\")\n");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_fold_layout),       cmocka_unit_test(test_fold_slices),
      cmocka_unit_test(test_fold_tensor_operation), cmocka_unit_test(test_fold_sort),
      cmocka_unit_test(test_fold_concat_split), cmocka_unit_test(test_fold_gather_scatter),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
