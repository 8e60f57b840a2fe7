/* Values of the compression families and symbolic values:
 *  - op_constexpr_materialize (the decompressed weights of every constexpr_*
 *    variant and dequantize) and quantize folding, against values computed
 *    by hand (including fp16 rounding and sub-byte packed inputs);
 *  - coremltools' symbolic values: the '^' / '*' markers that shape, concat,
 *    gather, slice_by_index ... produce;
 *  - the corpus: every op of these families in the golden pass corpus gets
 *    the marker ('*', '^' or none) coremltools printed for it. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "shared_skip.h"

#include "corpus_util.h"
#include "ops/tensor_ops_internal.h"
#include "ops_test_util.h"

#define I15 "CoreML5"
#define I16 "CoreML6"
#define I17 "CoreML7"
#define I18 "CoreML8"
#define CI(n, v) C(n, "(int32)*(Scalar)", #v)
#define CV(n, len, vals) C(n, "(" #len ",int32)*(Tensor)", vals)
#define CB(n, v) C(n, "(bool)*(Scalar)", v)
#define CSTR(n, v) C(n, "(string)*(Scalar)", "\"" v "\"")

/* Materializes output `out` of op t and compares with want (exactly). */
static void expect_mat(const char *opset, const char *body, int out, mil_dtype dt, int n, const double *want) {
  tcase tc = {opset, "", body, NULL, NULL};
  mil_program *p = parse_case(&tc);
  mil_diag d;
  mil_diag_init(&d);
  const mil_value *v = op_constexpr_materialize(op_t(p), out, &d);
  if (!v) fail_msg("not materialized: %s\n%s", mil_diag_first_error(&d) ? mil_diag_first_error(&d) : "?", body);
  if (v->type->dtype != dt || v->numel != n)
    fail_msg("got %s with %lld values, expected %s with %d\n%s", mil_dtype_name(v->type->dtype), (long long)v->numel,
             mil_dtype_name(dt), n, body);
  for (int i = 0; i < n; i++)
    if (mil_value_get_f64(v, i) != want[i])
      fail_msg("element %d: got %.17g, expected %.17g\n%s", i, mil_value_get_f64(v, i), want[i], body);
  mil_diag_clear(&d);
  mil_program_free(p);
}
#define MAT(opset, body, out, dt, ...)                                         \
  do {                                                                         \
    const double w_[] = {__VA_ARGS__};                                         \
    expect_mat(opset, body, out, dt, (int)(sizeof w_ / sizeof w_[0]), w_);     \
  } while (0)

static void test_materialize_ios16(void **state) {
  (void)state;
  /* (q - 1) * scale along axis 1 */
  MAT(I16, C("q", "(2, 3, uint8)*(Tensor)", "[[1, 2, 3], [4, 5, 6]]") C("zp", "(uint8)*(Scalar)", "1")
      C("s", "(3,fp32)*(Tensor)", "[0.5, 1.0, 2.0]") CI("a", 1) T("(2, 3, fp32)(Tensor)")
      "constexpr_affine_dequantize(quantized_data=%q, zero_point=%zp, scale=%s, axis=%a, name=\"t\")\n",
      0, MIL_DT_FP32, 0, 1, 4, 1.5, 4, 10);
  /* per-row int8 with an int8 vector zero point along axis 0 */
  MAT(I16, C("q", "(2, 2, int8)*(Tensor)", "[[-128, 127], [0, 5]]") C("zp", "(2,int8)*(Tensor)", "[-128, 5]")
      C("s", "(fp32)*(Scalar)", "0.25") CI("a", 0) T("(2, 2, fp32)(Tensor)")
      "constexpr_affine_dequantize(quantized_data=%q, zero_point=%zp, scale=%s, axis=%a, name=\"t\")\n",
      0, MIL_DT_FP32, 0, 63.75, -1.25, 0);
  /* fp16 scale: 3 * 0.0999755859375 = 0.2999267578125 is a tie between the
   * halves 0.2998046875 and 0.300048828125; round half to even picks the
   * first */
  MAT(I16, C("q", "(1,uint8)*(Tensor)", "[3]") C("zp", "(uint8)*(Scalar)", "0") C("s", "(fp16)*(Scalar)", "0.0999755859375")
      CI("a", 0) T("(1,fp16)(Tensor)")
      "constexpr_affine_dequantize(quantized_data=%q, zero_point=%zp, scale=%s, axis=%a, name=\"t\")\n",
      0, MIL_DT_FP16, 0.2998046875);
  MAT(I16, C("s", "(2,fp16)*(Tensor)", "[0.1, -2.5]") CSTR("d", "fp32") T("(2,fp32)(Tensor)")
      "constexpr_cast(source_val=%s, output_dtype=%d, name=\"t\")\n",
      0, MIL_DT_FP32, 0.0999755859375, -2.5);
  /* 2-bit indices [1, 2, 3, 0] packed LSB first: 1 | 2 << 2 | 3 << 4 = 57 */
  MAT(I16, C("i", "(1,uint8)*(Tensor)", "[57]") C("lut", "(4,fp32)*(Tensor)", "[10.0, 20.0, 30.0, 40.0]")
      C("sh", "(2,uint32)*(Tensor)", "[2, 2]") T("(2, 2, fp32)(Tensor)")
      "constexpr_lut_to_dense(indices=%i, lut=%lut, shape=%sh, name=\"t\")\n",
      0, MIL_DT_FP32, 20, 30, 40, 10);
  /* 4-bit indices [5, 15, 0]: bytes 0xF5, 0x00 */
  MAT(I16, C("i", "(2,uint8)*(Tensor)", "[245, 0]")
      C("lut", "(16,int8)*(Tensor)", "[0, 1, 2, 3, 4, -5, 6, 7, 8, 9, 10, 11, 12, 13, 14, -15]")
      C("sh", "(1,uint32)*(Tensor)", "[3]") T("(3,int8)(Tensor)")
      "constexpr_lut_to_dense(indices=%i, lut=%lut, shape=%sh, name=\"t\")\n",
      0, MIL_DT_INT8, -5, -15, 0);
  /* mask 5 = bits 0 and 2 */
  MAT(I16, C("nz", "(2,fp32)*(Tensor)", "[7.0, 8.0]") C("m", "(1,uint8)*(Tensor)", "[5]") C("sh", "(2,uint32)*(Tensor)", "[2, 2]")
      T("(2, 2, fp32)(Tensor)") "constexpr_sparse_to_dense(nonzero_data=%nz, mask=%m, shape=%sh, name=\"t\")\n",
      0, MIL_DT_FP32, 7, 0, 8, 0);
}

static void test_materialize_ios18(void **state) {
  (void)state;
  /* block 0 (rows 0-1): (x - 1) * 1; block 1 (rows 2-3): (x - 0) * 10 */
  MAT(I18, C("d", "(4, 2, int8)*(Tensor)", "[[1, 2], [3, 4], [5, 6], [7, 8]]") C("s", "(2, 1, fp32)*(Tensor)", "[[1.0], [10.0]]")
      C("o", "(2, 1, int8)*(Tensor)", "[[1], [0]]") T("(4, 2, fp32)(Tensor)")
      "constexpr_blockwise_shift_scale(data=%d, scale=%s, offset=%o, name=\"t\")\n",
      0, MIL_DT_FP32, 0, 1, 2, 3, 50, 60, 70, 80);
  /* sub-byte data: uint4 [3, 15, 8] * 2 */
  MAT(I18, C("d", "(3,uint4)*(Tensor)", "[3, 15, 8]") C("s", "(1,fp16)*(Tensor)", "[2.0]") T("(3,fp16)(Tensor)")
      "constexpr_blockwise_shift_scale(data=%d, scale=%s, name=\"t\")\n",
      0, MIL_DT_FP16, 6, 30, 16);
  /* int4 with an int4 offset and an fp16 scale: (x - o) rounded in half, times 0.1 in half:
   * -7 * 0.0999755859375 = -0.6998291015625 -> half -0.69970703125 */
  MAT(I18, C("d", "(2,int4)*(Tensor)", "[-8, 7]") C("s", "(1,fp16)*(Tensor)", "[0.0999755859375]")
      C("o", "(1,int4)*(Tensor)", "[-1]") T("(2,fp16)(Tensor)")
      "constexpr_blockwise_shift_scale(data=%d, scale=%s, offset=%o, name=\"t\")\n",
      0, MIL_DT_FP16, -0.69970703125, 0.7998046875);
  /* palettes: indices [3, 0 | 1, 2] with one lut per half */
  MAT(I18, C("i", "(4,uint2)*(Tensor)", "[3, 0, 1, 2]")
      C("lut", "(2, 4, 1, fp16)*(Tensor)", "[[[0.5], [1.0], [1.5], [2.0]], [[10.0], [20.0], [30.0], [40.0]]]")
      T("(4,fp16)(Tensor)") "constexpr_lut_to_dense(indices=%i, lut=%lut, name=\"t\")\n",
      0, MIL_DT_FP16, 2.0, 0.5, 20, 30);
  /* vector palettes along axis 0: index 1 -> [3, 4], index 0 -> [1, 2] */
  MAT(I18, C("i", "(2, 1, uint1)*(Tensor)", "[[1], [0]]") C("lut", "(1, 1, 2, 2, fp32)*(Tensor)", "[[[[1.0, 2.0], [3.0, 4.0]]]]")
      CI("va", 0) T("(4, 1, fp32)(Tensor)") "constexpr_lut_to_dense(indices=%i, lut=%lut, vector_axis=%va, name=\"t\")\n",
      0, MIL_DT_FP32, 3, 4, 1, 2);
  /* vector along the last axis of a 2-d index */
  MAT(I18, C("i", "(2, 1, uint1)*(Tensor)", "[[1], [0]]") C("lut", "(1, 1, 2, 2, fp32)*(Tensor)", "[[[[1.0, 2.0], [3.0, 4.0]]]]")
      CI("va", -1) T("(2, 2, fp32)(Tensor)") "constexpr_lut_to_dense(indices=%i, lut=%lut, vector_axis=%va, name=\"t\")\n",
      0, MIL_DT_FP32, 3, 4, 1, 2);
  MAT(I18, C("nz", "(2,int8)*(Tensor)", "[5, 6]") C("m", "(2, 2, uint1)*(Tensor)", "[[1, 0], [0, 1]]")
      T("(2, 2, int8)(Tensor)") "constexpr_sparse_to_dense(nonzero_data=%nz, mask=%m, name=\"t\")\n",
      0, MIL_DT_INT8, 5, 0, 0, 6);
  const char *lts = C("m", "(4,uint1)*(Tensor)", "[1, 0, 1, 1]") C("nz", "(3,uint2)*(Tensor)", "[2, 0, 3]")
      C("lut", "(1, 4, 1, fp32)*(Tensor)", "[[[10.0], [20.0], [30.0], [40.0]]]")
      "    %t: (4,uint1)(Tensor), %t_1: (3,fp32)(Tensor) = constexpr_lut_to_sparse(indices_mask=%m, "
      "indices_nonzero_data=%nz, lut=%lut, name=\"t\")\n";
  MAT(I18, lts, 0, MIL_DT_UINT1, 1, 0, 1, 1);
  MAT(I18, lts, 1, MIL_DT_FP32, 30, 10, 40);
  /* vector lut: the mask repeats along the vector axis */
  const char *ltsv = C("m", "(2,uint1)*(Tensor)", "[0, 1]") C("nz", "(1,uint1)*(Tensor)", "[1]")
      C("lut", "(1, 2, 2, fp32)*(Tensor)", "[[[1.0, 2.0], [3.0, 4.0]]]") CI("va", 0)
      "    %t: (4,uint1)(Tensor), %t_1: (2,fp32)(Tensor) = constexpr_lut_to_sparse(indices_mask=%m, "
      "indices_nonzero_data=%nz, lut=%lut, vector_axis=%va, name=\"t\")\n";
  MAT(I18, ltsv, 0, MIL_DT_UINT1, 0, 0, 1, 1);
  MAT(I18, ltsv, 1, MIL_DT_FP32, 3, 4);
  /* dense [0, 4, 6, 0] in blocks of 2 scaled by [1, 0.5]: nonzeros 4, 3 */
  const char *sbs = C("m", "(4,uint1)*(Tensor)", "[0, 1, 1, 0]") C("nz", "(2,int8)*(Tensor)", "[4, 6]")
      C("s", "(2,fp32)*(Tensor)", "[1.0, 0.5]")
      "    %t: (4,uint1)(Tensor), %t_1: (2,fp32)(Tensor) = constexpr_sparse_blockwise_shift_scale("
      "data_mask=%m, nonzero_data=%nz, scale=%s, name=\"t\")\n";
  MAT(I18, sbs, 0, MIL_DT_UINT1, 0, 1, 1, 0);
  MAT(I18, sbs, 1, MIL_DT_FP32, 4, 3);
  /* a blockwise op whose data is a lut_to_dense output */
  MAT(I18, C("i", "(2,uint1)*(Tensor)", "[1, 0]") C("lut", "(1, 2, 1, int8)*(Tensor)", "[[[3], [-4]]]")
      "    %l: (2,int8)(Tensor) = constexpr_lut_to_dense(indices=%i, lut=%lut, name=\"l\")\n"
      C("s", "(1,fp32)*(Tensor)", "[0.5]") T("(2,fp32)(Tensor)") "constexpr_blockwise_shift_scale(data=%l, scale=%s, name=\"t\")\n",
      0, MIL_DT_FP32, -2, 1.5);
  MAT(I18, C("s", "(1,fp16)*(Tensor)", "[65504.0]") CSTR("d", "fp32") T("(1,fp32)(Tensor)")
      "constexpr_cast(source_val=%s, output_dtype=%d, name=\"t\")\n",
      0, MIL_DT_FP32, 65504);
}

static void test_quantize(void **state) {
  (void)state;
  /* round(x / 0.5) + 3, clipped to int8; 100 / 0.5 + 3 = 203 -> 127 */
  FOLD(I17, "", C("x", "(3,fp32)*(Tensor)", "[0.5, -1.0, 100.0]") C("s", "(fp32)*(Scalar)", "0.5")
       C("zp", "(int8)*(Scalar)", "3") CSTR("od", "int8") T("(3,int8)(Tensor)")
       "quantize(input=%x, zero_point=%zp, scale=%s, output_dtype=%od, name=\"t\")\n", MIL_DT_INT8, 4, 1, 127);
  /* np.around rounds half to even: 0.5 -> 0, 1.5 -> 2, 2.5 -> 2, -0.5 -> -0 -> 0 (uint8 clip) */
  FOLD(I17, "", C("x", "(4,fp32)*(Tensor)", "[0.25, 0.75, 1.25, -0.25]") C("s", "(fp32)*(Scalar)", "0.5")
       CSTR("od", "uint8") T("(4,uint8)(Tensor)") "quantize(input=%x, scale=%s, output_dtype=%od, name=\"t\")\n",
       MIL_DT_UINT8, 0, 2, 2, 0);
  /* per-channel along axis 0 */
  FOLD(I17, "", C("x", "(2, 2, fp16)*(Tensor)", "[[1.0, 2.0], [3.0, 4.0]]") C("s", "(2,fp16)*(Tensor)", "[1.0, 0.25]")
       C("zp", "(2,uint8)*(Tensor)", "[0, 10]") CI("a", 0) CSTR("od", "uint8") T("(2, 2, uint8)(Tensor)")
       "quantize(input=%x, zero_point=%zp, scale=%s, axis=%a, output_dtype=%od, name=\"t\")\n", MIL_DT_UINT8, 1, 2,
       22, 26);
  expect_no_fold(I17, "%x: (3,fp32)(Tensor)", C("s", "(fp32)*(Scalar)", "0.5") CSTR("od", "int8") T("(3,int8)(Tensor)")
                 "quantize(input=%x, scale=%s, output_dtype=%od, name=\"t\")\n");
  /* dequantize has no value inference, only a materialized value */
  expect_no_fold(I17, "", C("x", "(2,int8)*(Tensor)", "[-2, 4]") C("s", "(fp32)*(Scalar)", "0.5") T("(2,fp32)(Tensor)")
                 "dequantize(input=%x, scale=%s, name=\"t\")\n");
  MAT(I17, C("x", "(2,int8)*(Tensor)", "[-2, 4]") C("s", "(fp32)*(Scalar)", "0.5") C("zp", "(int8)*(Scalar)", "2")
      T("(2,fp32)(Tensor)") "dequantize(input=%x, zero_point=%zp, scale=%s, name=\"t\")\n",
      0, MIL_DT_FP32, -2, 1);
}

/* ---- symbolic values ---- */

/* Runs mil_op_infer on every op of the program (in order) and returns the
 * marker op t's output `out` gets. */
static mil_mark infer_mark(const char *opset, const char *inputs, const char *body, int out, const mil_value **val) {
  tcase tc = {opset, inputs, body, NULL, NULL};
  mil_program *p = parse_case(&tc);
  mil_diag d;
  mil_diag_init(&d);
  mil_block *b = mil_function_body(p->functions[0]);
  for (mil_op *op = b->first; op; op = op->next)
    if (!mil_op_is_const(op) && mil_op_infer(op, &d) != MIL_OK) fail_msg("%s\n%s", mil_diag_first_error(&d), body);
  mil_op *t = op_t(p);
  mil_mark m = t->outputs[out]->mark;
  static double keep[16];
  static mil_value fake;
  if (val) {
    *val = NULL;
    if (t->outputs[out]->val) {
      const mil_value *v = t->outputs[out]->val;
      for (int64_t i = 0; i < v->numel && i < 16; i++) keep[i] = mil_value_get_f64(v, i);
      fake.numel = v->numel;
      fake.raw = keep;
      *val = &fake;
    }
  }
  mil_diag_clear(&d);
  mil_program_free(p);
  return m;
}

static void test_symbolic_values(void **state) {
  (void)state;
  const mil_value *v;
  const char *sym_x = "%x: (is0, 3, fp32)(Tensor)";
  assert_int_equal(infer_mark(I15, sym_x, T("(2,int32)(Tensor)") "shape(x=%x, name=\"t\")\n", 0, &v), MIL_MARK_SYMBOLIC);
  /* shape of a static tensor is a value */
  assert_int_equal(infer_mark(I15, "%x: (2, 3, fp32)(Tensor)", T("(2,int32)(Tensor)") "shape(x=%x, name=\"t\")\n", 0, &v),
                   MIL_MARK_VALUE);
  /* gather of the static element of a symbolic shape is a value (3) */
  assert_int_equal(infer_mark(I15, sym_x,
                              "    %s: (2,int32)(Tensor) = shape(x=%x, name=\"s\")\n" CI("i", 1)
                              T("(int32)(Scalar)") "gather(x=%s, indices=%i, name=\"t\")\n", 0, &v),
                   MIL_MARK_VALUE);
  assert_non_null(v);
  assert_true(((double *)mil_value_data(v))[0] == 3);
  assert_int_equal(infer_mark(I15, sym_x,
                              "    %s: (2,int32)(Tensor) = shape(x=%x, name=\"s\")\n" CI("i", 0)
                              T("(int32)(Scalar)") "gather(x=%s, indices=%i, name=\"t\")\n", 0, &v),
                   MIL_MARK_SYMBOLIC);
  /* slice_by_index of a symbolic shape */
  assert_int_equal(infer_mark(I15, sym_x,
                              "    %s: (2,int32)(Tensor) = shape(x=%x, name=\"s\")\n" CV("b", 1, "[1]") CV("e", 1, "[2]")
                              T("(1,int32)(Tensor)") "slice_by_index(x=%s, begin=%b, end=%e, name=\"t\")\n", 0, &v),
                   MIL_MARK_VALUE);
  /* concat of a small run-time tensor makes a symbolic value (fresh symbols) */
  assert_int_equal(infer_mark(I15, "%y: (1,int32)(Tensor)",
                              CV("c", 2, "[2, 2]") CI("ax", 0) T("(3,int32)(Tensor)") "concat(values=(%y, %c), axis=%ax, name=\"t\")\n",
                              0, &v),
                   MIL_MARK_SYMBOLIC);
  /* ... but not of a large one */
  assert_int_equal(infer_mark(I15, "%y: (11,int32)(Tensor)",
                              CV("c", 2, "[2, 2]") CI("ax", 0) T("(13,int32)(Tensor)") "concat(values=(%y, %c), axis=%ax, name=\"t\")\n",
                              0, &v),
                   MIL_MARK_NONE);
  /* cast and identity pass symbolic values through; elementwise ops do not */
  assert_int_equal(infer_mark(I17, sym_x,
                              "    %s: (2,int32)(Tensor) = shape(x=%x, name=\"s\")\n" CSTR("d", "int16")
                              T("(2,int16)(Tensor)") "cast(x=%s, dtype=%d, name=\"t\")\n", 0, &v),
                   MIL_MARK_SYMBOLIC);
  assert_int_equal(infer_mark(I15, sym_x,
                              "    %s: (2,int32)(Tensor) = shape(x=%x, name=\"s\")\n"
                              T("(2,int32)(Tensor)") "identity(x=%s, name=\"t\")\n", 0, &v),
                   MIL_MARK_SYMBOLIC);
  assert_int_equal(infer_mark(I15, sym_x,
                              "    %s: (2,int32)(Tensor) = shape(x=%x, name=\"s\")\n" CI("one", 1)
                              T("(2,int32)(Tensor)") "add(x=%s, y=%one, name=\"t\")\n", 0, &v),
                   MIL_MARK_NONE);
  /* stack of run-time scalars is symbolic */
  assert_int_equal(infer_mark(I15, "%a: (int32)(Scalar), %b: (int32)(Scalar)",
                              CI("ax", 0) T("(2,int32)(Tensor)") "stack(values=(%a, %b), axis=%ax, name=\"t\")\n", 0, &v),
                   MIL_MARK_SYMBOLIC);
  /* split of a symbolic shape: output 1 holds the static dim 3 */
  assert_int_equal(infer_mark(I15, sym_x,
                              "    %s: (2,int32)(Tensor) = shape(x=%x, name=\"s\")\n" CI("n", 2) CI("ax", 0)
                              "    %t: (1,int32)(Tensor), %t_1: (1,int32)(Tensor) = split(x=%s, num_splits=%n, axis=%ax, name=\"t\")\n",
                              1, &v),
                   MIL_MARK_VALUE);
  /* a reshape whose shape comes from a const subgraph (not yet folded) still sees the values */
  tcase tc = {I15, "%x: (2, 6, fp32)(Tensor)",
              CV("a", 1, "[3]") CV("b2", 1, "[4]") CI("ax", 0) CB("il", "False")
              "    %cat: (2,int32)(Tensor) = concat(values=(%a, %b2), axis=%ax, interleave=%il, name=\"cat\")\n"
              T("(3, 4, fp32)(Tensor)") "reshape(x=%x, shape=%cat, name=\"t\")\n",
              "(3, 4, fp32)(Tensor)", NULL};
  run_cases(&tc, 1);
}

/* Hostile input: a long chain of symbolic producers terminates quickly. */
static void test_symbolic_depth(void **state) {
  (void)state;
  size_t cap = 1 << 20;
  char *text = malloc(cap);
  assert_non_null(text);
  size_t l = (size_t)snprintf(text, cap,
                              "main[CoreML5](%%x: (is0, 3, fp32)(Tensor)) {\n  block0() {\n"
                              "    %%v0: (2,int32)(Tensor) = shape(x=%%x, name=\"v0\")\n");
  for (int i = 1; i < 2000; i++)
    l += (size_t)snprintf(text + l, cap - l, "    %%v%d: (2,int32)(Tensor) = identity(x=%%v%d, name=\"v%d\")\n", i,
                          i - 1, i);
  l += (size_t)snprintf(text + l, cap - l,
                        "    %%t: (is0, 3, fp32)(Tensor) = reshape(x=%%x, shape=%%v1999, name=\"t\")\n  } -> (%%t)\n}\n");
  mil_program *p = NULL;
  mil_diag d;
  mil_diag_init(&d);
  assert_int_equal(mil_parse_program(text, l, NULL, &p, &d), MIL_OK);
  const mil_type *types[16];
  const mil_value *vals[16];
  char err[1024];
  assert_int_equal(infer_t(p, types, vals, err, sizeof err), MIL_OK);
  /* too deep to see the symbols: fresh dims, not the input's is0 */
  assert_int_equal(types[0]->rank, 2);
  assert_true(types[0]->dims[0].sym == NULL || strcmp(types[0]->dims[0].sym, "is0") != 0);
  mil_diag_clear(&d);
  mil_program_free(p);
  free(text);
}

/* ---- the corpus: markers of this group's ops ---- */

static const char *const k_types[] = {
    "depth_to_space", "expand_dims", "reshape", "reverse", "reverse_sequence", "slice_by_index", "slice_by_size",
    "space_to_depth", "space_to_batch", "batch_to_space", "squeeze", "transpose", "pixel_shuffle", "sliding_windows",
    "reshape_like", "pixel_unshuffle", "slice_update", "band_part", "cumsum", "fill", "non_maximum_suppression",
    "non_zero", "one_hot", "pad", "range_1d", "tile", "argsort", "topk", "flatten2d", "shape", "concat", "split",
    "stack", "identity", "fill_like", "gather", "scatter", "gather_along_axis", "scatter_along_axis", "gather_nd",
    "scatter_nd", "constexpr_affine_dequantize", "constexpr_cast", "constexpr_lut_to_dense",
    "constexpr_sparse_to_dense", "constexpr_blockwise_shift_scale", "constexpr_lut_to_sparse",
    "constexpr_sparse_blockwise_shift_scale", "quantize", "dequantize", "read_state", NULL};

static bool mine(const char *t) {
  for (int i = 0; k_types[i]; i++)
    if (!strcmp(k_types[i], t)) return true;
  return false;
}

typedef struct mark_stats {
  long ok, bad, shown;
  const char *file;
} mark_stats;

static int check_marks(mil_op *op, void *ud) {
  mark_stats *s = ud;
  if (mil_op_is_const(op)) return 0;
  mil_mark declared[64];
  int32_t n = op->n_outputs < 64 ? op->n_outputs : 64;
  for (int32_t i = 0; i < n; i++) declared[i] = op->outputs[i]->mark;
  if (mil_op_infer(op, NULL) != MIL_OK || !mine(op->type)) return 0;
  for (int32_t i = 0; i < n; i++) {
    mil_mark got = op->outputs[i]->mark;
    if (got == declared[i]) {
      s->ok++;
      continue;
    }
    s->bad++;
    if (s->shown++ < 10)
      printf("  %s: op '%s' (%s) output %d: declared mark %d, inferred %d\n", s->file, op->name, op->type, i,
             declared[i], got);
  }
  return 0;
}

static void test_corpus_marks(void **state) {
  (void)state;
  const char *dir = corpus_passes_dir();
  if (!dir) {
    shared_skip("the corpus");
    return;
  }
  corpus_list l = {0};
  corpus_list_cases(dir, &l);
  mark_stats s = {0, 0, 0, NULL};
  for (size_t i = 0; i < l.n; i++) {
    corpus_case c;
    if (corpus_case_load(l.paths[i], &c) != 0) continue;
    corpus_section secs[2] = {c.input, c.expected};
    for (int k = 0; k < 2; k++) {
      if (!secs[k].text) continue;
      mil_program *p = NULL;
      mil_diag d;
      mil_diag_init(&d);
      if (mil_parse_program(secs[k].text, secs[k].len, NULL, &p, &d) == MIL_OK) {
        s.file = l.paths[i];
        mil_program_walk(p, check_marks, &s);
        mil_program_free(p);
      }
      mil_diag_clear(&d);
    }
    corpus_case_free(&c);
  }
  corpus_list_free(&l);
  printf("markers of tensor/compression ops in the corpus: %ld as declared, %ld different\n", s.ok, s.bad);
  assert_int_equal(s.bad, 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_materialize_ios16), cmocka_unit_test(test_materialize_ios18),
      cmocka_unit_test(test_quantize),          cmocka_unit_test(test_symbolic_values),
      cmocka_unit_test(test_symbolic_depth),    cmocka_unit_test(test_corpus_marks),
  };
  return shared_exit(cmocka_run_group_tests(tests, NULL, NULL));
}
