/* Op families tensor_transformation, tensor_operation, scatter_gather,
 * constexpr_ops, compression, quantization_ops and states: for every
 * variant a valid case whose inferred output type is checked exactly and a
 * rejected case whose error text is checked. Folding is in
 * test_ops_c_fold.c, decompression and symbolic values in
 * test_ops_c_values.c.
 *
 * Each case is a small complete-form MIL program; the op under test is
 * named "t". Opsets: CoreML5 = iOS15, CoreML6 = iOS16, CoreML7 = iOS17,
 * CoreML8 = iOS18. */
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
#define I16 "CoreML6"
#define I17 "CoreML7"
#define I18 "CoreML8"

/* const helpers: int32 vector / scalar, bool scalar, string, fp32 scalar */
#define CV(n, len, vals) C(n, "(" #len ",int32)*(Tensor)", vals)
#define CI(n, v) C(n, "(int32)*(Scalar)", #v)
#define CB(n, v) C(n, "(bool)*(Scalar)", v)
#define CSTR(n, v) C(n, "(string)*(Scalar)", "\"" v "\"")
#define CF(n, v) C(n, "(fp32)*(Scalar)", #v)

#define X4 "%x: (1, 8, 2, 3, fp32)(Tensor)"
#define X3 "%x: (2, 3, 4, fp32)(Tensor)"
#define X46 "%x: (4, 6, fp32)(Tensor)"

/* ---------------- tensor_transformation ---------------- */

static const tcase k_tt[] = {
    /* depth_to_space / space_to_depth / pixel_shuffle / pixel_unshuffle */
    {I15, X4, CI("b", 2) T("(1, 2, 4, 6, fp32)(Tensor)") "depth_to_space(x=%x, block_size=%b, name=\"t\")\n",
     "(1, 2, 4, 6, fp32)(Tensor)", NULL},
    {I15, X3, CI("b", 2) T("(1, 2, 4, 6, fp32)(Tensor)") "depth_to_space(x=%x, block_size=%b, name=\"t\")\n", NULL,
     "must be rank 4"},
    {I15, "%x: (1, 2, 4, 6, fp32)(Tensor)", CI("b", 2) T("(1, 8, 2, 3, fp32)(Tensor)") "space_to_depth(x=%x, block_size=%b, name=\"t\")\n",
     "(1, 8, 2, 3, fp32)(Tensor)", NULL},
    {I15, "%x: (1, 2, 4, 6, int32)(Tensor)", CI("b", 2) T("(1, 8, 2, 3, int32)(Tensor)") "space_to_depth(x=%x, block_size=%b, name=\"t\")\n",
     NULL, "must have dtype fp16, fp32"},
    {I15, X4, CI("f", 2) T("(1, 2, 4, 6, fp32)(Tensor)") "pixel_shuffle(x=%x, upscale_factor=%f, name=\"t\")\n",
     "(1, 2, 4, 6, fp32)(Tensor)", NULL},
    {I15, X4, CI("f", 0) T("(1, 2, 4, 6, fp32)(Tensor)") "pixel_shuffle(x=%x, upscale_factor=%f, name=\"t\")\n", NULL,
     "must be positive"},
    {I16, "%x: (1, 2, 4, 6, fp16)(Tensor)",
     C("f", "(uint32)*(Scalar)", "2") T("(1, 8, 2, 3, fp16)(Tensor)") "pixel_unshuffle(x=%x, downscale_factor=%f, name=\"t\")\n",
     "(1, 8, 2, 3, fp16)(Tensor)", NULL},
    {I16, "%x: (1, 2, 4, fp16)(Tensor)",
     C("f", "(uint32)*(Scalar)", "2") T("(1, 8, 2, 3, fp16)(Tensor)") "pixel_unshuffle(x=%x, downscale_factor=%f, name=\"t\")\n",
     NULL, "must be rank 4"},
    {I15, "%x: (is0, 8, 2, 3, fp32)(Tensor)", CI("b", 2) T("(is0, 2, 4, 6, fp32)(Tensor)") "depth_to_space(x=%x, block_size=%b, name=\"t\")\n",
     "(is0, 2, 4, 6, fp32)(Tensor)", NULL},
    /* space_to_batch / batch_to_space */
    {I15, "%x: (1, 2, 4, 6, fp32)(Tensor)",
     CV("bs", 2, "[2, 2]") C("p", "(2, 2, int32)*(Tensor)", "[[0, 0], [1, 1]]") T("(4, 2, 2, 4, fp32)(Tensor)")
     "space_to_batch(x=%x, block_shape=%bs, paddings=%p, name=\"t\")\n",
     "(4, 2, 2, 4, fp32)(Tensor)", NULL},
    {I15, "%x: (1, 2, 4, 6, fp32)(Tensor)",
     CV("bs", 2, "[2, 2]") CV("p", 4, "[0, 0, 1, 1]") T("(4, 2, 2, 4, fp32)(Tensor)")
     "space_to_batch(x=%x, block_shape=%bs, paddings=%p, name=\"t\")\n",
     NULL, "must have shape [2], [2, 2]"},
    {I15, "%x: (4, 2, 2, 4, fp32)(Tensor)",
     CV("bs", 2, "[2, 2]") C("p", "(2, 2, int32)*(Tensor)", "[[0, 0], [1, 1]]") T("(1, 2, 4, 6, fp32)(Tensor)")
     "batch_to_space(x=%x, block_shape=%bs, crops=%p, name=\"t\")\n",
     "(1, 2, 4, 6, fp32)(Tensor)", NULL},
    {I15, "%x: (3, 2, 2, 4, fp32)(Tensor)",
     CV("bs", 2, "[2, 2]") C("p", "(2, 2, int32)*(Tensor)", "[[0, 0], [1, 1]]") T("(1, 2, 4, 6, fp32)(Tensor)")
     "batch_to_space(x=%x, block_shape=%bs, crops=%p, name=\"t\")\n",
     NULL, "perfectly divided"},
    /* expand_dims */
    {I15, "%x: (2, 3, fp32)(Tensor)", CV("a", 2, "[0, -1]") T("(1, 2, 3, 1, fp32)(Tensor)") "expand_dims(x=%x, axes=%a, name=\"t\")\n",
     "(1, 2, 3, 1, fp32)(Tensor)", NULL},
    {I15, "%x: (2, 3, fp32)(Tensor)", CV("a", 1, "[3]") T("(2, 3, 1, fp32)(Tensor)") "expand_dims(x=%x, axes=%a, name=\"t\")\n",
     NULL, "out of bounds"},
    {I15, "%x: (fp32)(Scalar)", CV("a", 1, "[0]") T("(1,fp32)(Tensor)") "expand_dims(x=%x, axes=%a, name=\"t\")\n",
     "(1,fp32)(Tensor)", NULL},
    {I17, "%x: (2,int8)(Tensor)", CV("a", 1, "[1]") T("(2, 1, int8)(Tensor)") "expand_dims(x=%x, axes=%a, name=\"t\")\n",
     "(2, 1, int8)(Tensor)", NULL},
    {I15, "%x: (2,int8)(Tensor)", CV("a", 1, "[1]") T("(2, 1, int8)(Tensor)") "expand_dims(x=%x, axes=%a, name=\"t\")\n",
     NULL, "must have dtype bool, fp16, fp32, int32, got (2,int8)"},
    /* reshape */
    {I15, X3, CV("s", 3, "[0, -1, 2]") T("(2, 6, 2, fp32)(Tensor)") "reshape(x=%x, shape=%s, name=\"t\")\n",
     "(2, 6, 2, fp32)(Tensor)", NULL},
    {I15, X3, CV("s", 2, "[5, 5]") T("(5, 5, fp32)(Tensor)") "reshape(x=%x, shape=%s, name=\"t\")\n", NULL,
     "Invalid target shape in `reshape` op ([2, 3, 4] to [5, 5])"},
    {I15, X3, CV("s", 3, "[-1, -1, 2]") T("(3, 4, 2, fp32)(Tensor)") "reshape(x=%x, shape=%s, name=\"t\")\n", NULL,
     "only one dimension to be -1"},
    {I15, X3, CV("s", 2, "[0, 4]") T("(2, 12, fp32)(Tensor)") "reshape(x=%x, shape=%s, name=\"t\")\n", NULL,
     "rank of x (3) must equal to the target shape len (2)"},
    {I15, "%x: (is0, 4, fp32)(Tensor)", CV("s", 3, "[-1, 2, 2]") T("(is0, 2, 2, fp32)(Tensor)") "reshape(x=%x, shape=%s, name=\"t\")\n",
     "(is0, 2, 2, fp32)(Tensor)", NULL},
    {I15, "%x: (is0, is1, 4, fp32)(Tensor)", CV("s", 2, "[-1, 4]") T("(is9, 4, fp32)(Tensor)") "reshape(x=%x, shape=%s, name=\"t\")\n",
     NULL, NULL}, /* checked separately (fresh symbol) */
    /* iOS17: a 0 copies the right-aligned dim of x: [0, -1] on (2, 3, 4) -> [3, 8] */
    {I17, X3, C("s", "(2,int16)*(Tensor)", "[0, -1]") T("(3, 8, fp32)(Tensor)") "reshape(x=%x, shape=%s, name=\"t\")\n",
     "(3, 8, fp32)(Tensor)", NULL},
    {I17, X3, C("s", "(2,int16)*(Tensor)", "[7, -1]") T("(3, 8, fp32)(Tensor)") "reshape(x=%x, shape=%s, name=\"t\")\n",
     NULL, "Invalid target shape"},
    /* reverse / reverse_sequence */
    {I15, "%x: (2, 3, fp32)(Tensor)", CV("a", 1, "[0]") T("(2, 3, fp32)(Tensor)") "reverse(x=%x, axes=%a, name=\"t\")\n",
     "(2, 3, fp32)(Tensor)", NULL},
    {I15, "%x: (2, 3, fp32)(Tensor)", CV("a", 1, "[2]") T("(2, 3, fp32)(Tensor)") "reverse(x=%x, axes=%a, name=\"t\")\n",
     NULL, "out of range"},
    {I17, "%x: (2, 3, int16)(Tensor)", T("(2, 3, int16)(Tensor)") "reverse(x=%x, name=\"t\")\n",
     "(2, 3, int16)(Tensor)", NULL},
    {I17, "%x: (2, 3, int16)(Tensor)", CV("a", 1, "[-3]") T("(2, 3, int16)(Tensor)") "reverse(x=%x, axes=%a, name=\"t\")\n",
     NULL, "out of range"},
    {I15, "%x: (2, 3, fp32)(Tensor), %l: (2,int32)(Tensor)", CI("sa", 1) T("(2, 3, fp32)(Tensor)") "reverse_sequence(x=%x, lengths=%l, seq_axis=%sa, name=\"t\")\n",
     "(2, 3, fp32)(Tensor)", NULL},
    {I15, "%x: (2, 3, fp32)(Tensor), %l: (2,int32)(Tensor)", CI("sa", 5) T("(2, 3, fp32)(Tensor)") "reverse_sequence(x=%x, lengths=%l, seq_axis=%sa, name=\"t\")\n",
     NULL, "out of range"},
    {I17, "%x: (2, 3, uint8)(Tensor), %l: (2,int8)(Tensor)", T("(2, 3, uint8)(Tensor)") "reverse_sequence(x=%x, lengths=%l, name=\"t\")\n",
     "(2, 3, uint8)(Tensor)", NULL},
    {I15, "%x: (2, 3, fp32)(Tensor), %l: (2,int8)(Tensor)", T("(2, 3, fp32)(Tensor)") "reverse_sequence(x=%x, lengths=%l, name=\"t\")\n",
     NULL, "input 'lengths' must have dtype int32"},
    /* squeeze */
    {I15, "%x: (1, 3, 1, fp32)(Tensor)", T("(3,fp32)(Tensor)") "squeeze(x=%x, name=\"t\")\n", "(3,fp32)(Tensor)", NULL},
    {I15, "%x: (1, 3, 1, fp32)(Tensor)", CV("a", 2, "[0, 1]") T("(3, 1, fp32)(Tensor)") "squeeze(x=%x, axes=%a, name=\"t\")\n",
     "(3, 1, fp32)(Tensor)", NULL},
    {I15, "%x: (1, 1, fp32)(Tensor)", T("(fp32)(Scalar)") "squeeze(x=%x, name=\"t\")\n", "(fp32)(Scalar)", NULL},
    {I15, "%x: (1, 3, 1, fp32)(Tensor)", CV("a", 1, "[3]") T("(3, 1, fp32)(Tensor)") "squeeze(x=%x, axes=%a, name=\"t\")\n",
     NULL, "Invalid axis 3 in squeeze"},
    {I17, "%x: (1, 4, uint8)(Tensor)", T("(4,uint8)(Tensor)") "squeeze(x=%x, name=\"t\")\n", "(4,uint8)(Tensor)", NULL},
    {I17, "%x: (1, 4, fp64)(Tensor)", T("(4,fp64)(Tensor)") "squeeze(x=%x, name=\"t\")\n", NULL, "must have dtype"},
    /* transpose */
    {I15, X3, CV("p", 3, "[2, 0, 1]") T("(4, 2, 3, fp32)(Tensor)") "transpose(x=%x, perm=%p, name=\"t\")\n",
     "(4, 2, 3, fp32)(Tensor)", NULL},
    {I15, X3, CV("p", 2, "[1, 0]") T("(3, 2, fp32)(Tensor)") "transpose(x=%x, perm=%p, name=\"t\")\n", NULL,
     "perm should have the same length as rank(x): 2 != 3"},
    {I17, "%x: (2, 5, int8)(Tensor)", CV("p", 2, "[-1, 0]") T("(5, 2, int8)(Tensor)") "transpose(x=%x, perm=%p, name=\"t\")\n",
     "(5, 2, int8)(Tensor)", NULL},
    {I17, "%x: (2, 5, int8)(Tensor), %p: (2,int32)(Tensor)", T("(5, 2, int8)(Tensor)") "transpose(x=%x, perm=%p, name=\"t\")\n",
     NULL, "must be a compile-time constant"},
    /* sliding_windows */
    {I15, "%x: (2, 10, fp32)(Tensor)", CI("a", 1) CI("s", 3) CI("st", 2) T("(2, 4, 3, fp32)(Tensor)")
     "sliding_windows(x=%x, axis=%a, size=%s, stride=%st, name=\"t\")\n", "(2, 4, 3, fp32)(Tensor)", NULL},
    {I15, "%x: (2, 10, fp32)(Tensor)", CI("a", 2) CI("s", 3) T("(2, 4, 3, fp32)(Tensor)")
     "sliding_windows(x=%x, axis=%a, size=%s, name=\"t\")\n", NULL, "out of range"},
    {I17, "%x: (5, bool)(Tensor)", CI("a", 0) CI("s", 2) T("(4, 2, bool)(Tensor)")
     "sliding_windows(x=%x, axis=%a, size=%s, name=\"t\")\n", "(4, 2, bool)(Tensor)", NULL},
    {I15, "%x: (5, bool)(Tensor)", CI("a", 0) CI("s", 2) T("(4, 2, bool)(Tensor)")
     "sliding_windows(x=%x, axis=%a, size=%s, name=\"t\")\n", NULL, "must have dtype fp16, fp32, int32"},
    /* slice_by_index */
    {I15, X46, CV("b", 2, "[1, 0]") CV("e", 2, "[3, 6]") CV("s", 2, "[1, 2]") T("(2, 3, fp32)(Tensor)")
     "slice_by_index(x=%x, begin=%b, end=%e, stride=%s, name=\"t\")\n", "(2, 3, fp32)(Tensor)", NULL},
    {I15, X46, CV("b", 3, "[1, 0, 0]") CV("e", 2, "[3, 6]") T("(2, 3, fp32)(Tensor)")
     "slice_by_index(x=%x, begin=%b, end=%e, name=\"t\")\n", NULL, "size of 'begin', 3, is not equal to the rank of input, which is 2"},
    {I15, X46, CV("b", 2, "[-1, 0]") CV("e", 2, "[0, 0]") C("em", "(2,bool)*(Tensor)", "[True, True]")
     C("sm", "(2,bool)*(Tensor)", "[True, False]") T("(6,fp32)(Tensor)")
     "slice_by_index(x=%x, begin=%b, end=%e, end_mask=%em, squeeze_mask=%sm, name=\"t\")\n", "(6,fp32)(Tensor)", NULL},
    {I15, "%x: (is0, 6, fp32)(Tensor), %b: (2,int32)(Tensor)", CV("e", 2, "[3, 6]") T("(is1, is2, fp32)(Tensor)")
     "slice_by_index(x=%x, begin=%b, end=%e, name=\"t\")\n", NULL, NULL}, /* fresh symbols: checked separately */
    {I17, X46, C("b", "(2,int8)*(Tensor)", "[1, 2]") C("e", "(2,int8)*(Tensor)", "[2, 3]")
     C("sm", "(2,bool)*(Tensor)", "[True, True]") T("(fp32)(Scalar)")
     "slice_by_index(x=%x, begin=%b, end=%e, squeeze_mask=%sm, name=\"t\")\n", "(fp32)(Scalar)", NULL},
    {I17, X46, C("b", "(2,int8)*(Tensor)", "[3, 2]") C("e", "(2,int8)*(Tensor)", "[1, 3]") T("(fp32)(Scalar)")
     "slice_by_index(x=%x, begin=%b, end=%e, name=\"t\")\n", NULL, "unsupported values in for dimension 0"},
    /* slice_by_size */
    {I15, X46, CV("b", 2, "[1, 2]") CV("s", 2, "[2, -1]") T("(2, 4, fp32)(Tensor)")
     "slice_by_size(x=%x, begin=%b, size=%s, name=\"t\")\n", "(2, 4, fp32)(Tensor)", NULL},
    {I15, X46, C("b", "(1, 2, int32)*(Tensor)", "[[1, 2]]") CV("s", 2, "[2, -1]") T("(2, 4, fp32)(Tensor)")
     "slice_by_size(x=%x, begin=%b, size=%s, name=\"t\")\n", NULL, "begin should be 1-D tensor, got 2-D tensor"},
    {I17, X46, C("b", "(2,int16)*(Tensor)", "[0, 0]") C("s", "(2,int16)*(Tensor)", "[-1, 3]") T("(4, 3, fp32)(Tensor)")
     "slice_by_size(x=%x, begin=%b, size=%s, name=\"t\")\n", "(4, 3, fp32)(Tensor)", NULL},
    {I17, X46, C("b", "(3,int16)*(Tensor)", "[0, 0, 0]") C("s", "(3,int16)*(Tensor)", "[-1, 3, 1]") T("(4, 3, fp32)(Tensor)")
     "slice_by_size(x=%x, begin=%b, size=%s, name=\"t\")\n", NULL, "Length of begin 3 doesn't equal to input rank 2"},
    /* slice_update */
    {I18, X46 ", %u: (2, 3, fp32)(Tensor)", CV("b", 2, "[1, 0]") CV("e", 2, "[3, 6]") CV("s", 2, "[1, 2]")
     T("(4, 6, fp32)(Tensor)") "slice_update(x=%x, update=%u, begin=%b, end=%e, stride=%s, name=\"t\")\n",
     "(4, 6, fp32)(Tensor)", NULL},
    {I18, X46 ", %u: (2, 2, fp32)(Tensor)", CV("b", 2, "[1, 0]") CV("e", 2, "[3, 6]") CV("s", 2, "[1, 2]")
     T("(4, 6, fp32)(Tensor)") "slice_update(x=%x, update=%u, begin=%b, end=%e, stride=%s, name=\"t\")\n", NULL,
     "The update tensor should have shape (2, 3, fp32)"},
    {I17, X46 ", %u: (2, 3, fp32)(Tensor)", CV("b", 2, "[1, 0]") CV("e", 2, "[3, 6]")
     T("(4, 6, fp32)(Tensor)") "slice_update(x=%x, update=%u, begin=%b, end=%e, name=\"t\")\n", NULL,
     "needs opset CoreML8"},
    /* reshape_like */
    {I16, "%x: (2, 6, fp32)(Tensor), %r: (3, 4, 5, fp32)(Tensor)", CI("b0", 0) CI("e0", 2) CB("m0", "False")
     T("(3, 4, fp32)(Tensor)") "reshape_like(x=%x, ref_tensors=(%r), begins=(%b0), ends=(%e0), end_masks=(%m0), name=\"t\")\n",
     "(3, 4, fp32)(Tensor)", NULL},
    {I16, "%x: (2, 6, fp32)(Tensor), %r: (3, 4, 5, fp32)(Tensor)", CI("b0", 1) CI("e0", 0) CB("m0", "True")
     T("(4, 5, fp32)(Tensor)") "reshape_like(x=%x, ref_tensors=(%r), begins=(%b0), ends=(%e0), end_masks=(%m0), name=\"t\")\n",
     NULL, "not consistent with the output shape (4, 5, fp32)"},
    {I17, "%x: (2, 6, int8)(Tensor), %r: (3, 4, 5, fp32)(Tensor), %q: (2, fp16)(Tensor)", CI("b0", 0) CI("e0", 1)
     CB("m0", "False") CI("b1", -1) CI("e1", 0) CB("m1", "True")
     T("(3, 2, int8)(Tensor)") "reshape_like(x=%x, ref_tensors=(%r, %q), begins=(%b0, %b1), ends=(%e0, %e1), end_masks=(%m0, %m1), name=\"t\")\n",
     NULL, "not consistent"},
    {I17, "%x: (6, int8)(Tensor), %r: (3, 4, 5, fp32)(Tensor), %q: (2, fp16)(Tensor)", CI("b0", 0) CI("e0", 1)
     CB("m0", "False") CI("b1", -1) CI("e1", 0) CB("m1", "True")
     T("(3, 2, int8)(Tensor)") "reshape_like(x=%x, ref_tensors=(%r, %q), begins=(%b0, %b1), ends=(%e0, %e1), end_masks=(%m0, %m1), name=\"t\")\n",
     "(3, 2, int8)(Tensor)", NULL},
    {I16, "%x: (2, 6, fp32)(Tensor), %r: (is0, 4, 5, fp32)(Tensor)", CI("b0", 0) CI("e0", 2) CB("m0", "False")
     T("(3, 4, fp32)(Tensor)") "reshape_like(x=%x, ref_tensors=(%r), begins=(%b0), ends=(%e0), end_masks=(%m0), name=\"t\")\n",
     NULL, "must not be symbolic"},
};

static void test_tensor_transformation(void **state) {
  (void)state;
  tcase ok[sizeof k_tt / sizeof k_tt[0]];
  size_t n = 0;
  for (size_t i = 0; i < sizeof k_tt / sizeof k_tt[0]; i++)
    if (k_tt[i].want || k_tt[i].err) ok[n++] = k_tt[i];
  run_cases(ok, n);
}

/* Output types whose dims include fresh symbols: check the shape pattern. */
static void expect_dims(const char *opset, const char *inputs, const char *body, int out, const char *pattern) {
  tcase tc = {opset, inputs, body, NULL, NULL};
  mil_program *p = parse_case(&tc);
  const mil_type *types[16];
  const mil_value *vals[16];
  char err[1024], got[256];
  if (infer_t(p, types, vals, err, sizeof err) != MIL_OK) fail_msg("unexpected error: %s\n%s", err, body);
  mil_type_to_string(types[out], got, sizeof got);
  /* pattern: '?' stands for any symbol name not present in the inputs */
  const char *g = got, *q = pattern;
  while (*q && *g) {
    if (*q == '?') {
      if (strncmp(g, "is", 2) != 0) break;
      g += 2;
      while (*g >= '0' && *g <= '9') g++;
      q++;
      continue;
    }
    if (*q != *g) break;
    q++, g++;
  }
  if (*q || *g) fail_msg("output %d: got %s, expected %s\n%s", out, got, pattern, body);
  mil_program_free(p);
}

static void test_symbolic_shapes(void **state) {
  (void)state;
  /* (is0, is1, 4) -> [-1, 4]: -1 = is0*is1 is an expression: a fresh symbol */
  expect_dims(I15, "%x: (is0, is1, 4, fp32)(Tensor)", CV("s", 2, "[-1, 4]") T("(a, 4, fp32)(Tensor)") "reshape(x=%x, shape=%s, name=\"t\")\n",
              0, "(?, 4, fp32)");
  /* a non-const begin gives fresh dims */
  expect_dims(I15, "%x: (5, 6, fp32)(Tensor), %b: (2,int32)(Tensor)", CV("e", 2, "[3, 6]") T("(a, b, fp32)(Tensor)")
              "slice_by_index(x=%x, begin=%b, end=%e, name=\"t\")\n", 0, "(?, ?, fp32)");
  /* full-range slices keep the symbol */
  expect_dims(I15, "%x: (is7, 6, fp32)(Tensor)",
              CV("b", 2, "[0, 0]") CV("e", 2, "[0, 0]") C("bm", "(2,bool)*(Tensor)", "[True, True]")
              C("em", "(2,bool)*(Tensor)", "[True, True]") T("(a, b, fp32)(Tensor)")
              "slice_by_index(x=%x, begin=%b, end=%e, begin_mask=%bm, end_mask=%em, name=\"t\")\n", 0, "(is7, 6, fp32)");
  /* reshape by the shape of another tensor: symbols flow through shape/concat */
  expect_dims(I15, "%x: (is3, 4, fp32)(Tensor), %y: (is3, 2, 2, fp32)(Tensor)",
              "    %sh: (3,int32)^(Tensor) = shape(x=%y, name=\"sh\")\n" T("(a, b, c, fp32)(Tensor)")
              "reshape(x=%x, shape=%sh, name=\"t\")\n", 0, "(is3, 2, 2, fp32)");
  expect_dims(I15, "%x: (is3, 4, fp32)(Tensor), %y: (is3, 2, 2, fp32)(Tensor)",
              "    %sh: (3,int32)^(Tensor) = shape(x=%y, name=\"sh\")\n" CV("ix", 1, "[0]") CI("ax", 0)
              "    %g: (1,int32)^(Tensor) = gather(x=%sh, indices=%ix, axis=%ax, name=\"g\")\n" CV("tail", 2, "[2, 2]")
              CI("cax", 0) CB("il", "False")
              "    %cat: (3,int32)^(Tensor) = concat(values=(%g, %tail), axis=%cax, interleave=%il, name=\"cat\")\n"
              T("(a, b, c, fp32)(Tensor)") "reshape(x=%x, shape=%cat, name=\"t\")\n",
              0, "(is3, 2, 2, fp32)");
  /* fill with a symbolic shape */
  expect_dims(I15, "%x: (is4, 3, fp32)(Tensor)",
              "    %sh: (2,int32)^(Tensor) = shape(x=%x, name=\"sh\")\n" CF("v", 1.0) T("(a, b, fp32)(Tensor)")
              "fill(shape=%sh, value=%v, name=\"t\")\n", 0, "(is4, 3, fp32)");
  /* tile: a symbolic dim repeated once stays */
  expect_dims(I15, "%x: (is4, 3, fp32)(Tensor)", CV("r", 2, "[1, 2]") T("(a, b, fp32)(Tensor)") "tile(x=%x, reps=%r, name=\"t\")\n",
              0, "(is4, 6, fp32)");
  expect_dims(I15, "%x: (is4, 3, fp32)(Tensor)", CV("r", 2, "[2, 2]") T("(a, b, fp32)(Tensor)") "tile(x=%x, reps=%r, name=\"t\")\n",
              0, "(?, 6, fp32)");
  /* range_1d(0, n, 1) with n = is5 from a shape is (is5,) */
  expect_dims(I15, "%x: (is5, 3, fp32)(Tensor)",
              "    %sh: (2,int32)^(Tensor) = shape(x=%x, name=\"sh\")\n" CI("ix", 0) CI("ax", 0)
              "    %n: (int32)^(Scalar) = gather(x=%sh, indices=%ix, axis=%ax, name=\"n\")\n" CI("z", 0) CI("one", 1)
              T("(a,int32)(Tensor)") "range_1d(end=%n, start=%z, step=%one, name=\"t\")\n", 0, "(is5,int32)");
  /* slice_by_size with size -1 and a zero begin keeps the symbol */
  expect_dims(I15, "%x: (is6, 3, fp32)(Tensor)", CV("b", 2, "[0, 1]") CV("s", 2, "[-1, 2]") T("(a, b, fp32)(Tensor)")
              "slice_by_size(x=%x, begin=%b, size=%s, name=\"t\")\n", 0, "(is6, 2, fp32)");
  /* split of a symbolic axis: fresh symbols */
  expect_dims(I15, "%x: (is6, 4, fp32)(Tensor)", CI("n", 2) CI("ax", 0)
              "    %t: (a, 4, fp32)(Tensor), %t_1: (b, 4, fp32)(Tensor) = split(x=%x, num_splits=%n, axis=%ax, name=\"t\")\n",
              1, "(?, 4, fp32)");
  /* non_zero of a run-time tensor: (fresh, rank) */
  expect_dims(I15, "%x: (2, 3, fp32)(Tensor)", T("(a, 2, int32)(Tensor)") "non_zero(x=%x, name=\"t\")\n", 0,
              "(?, 2, int32)");
}

/* ---------------- tensor_operation ---------------- */

static const tcase k_to[] = {
    {I15, "%x: (3, 3, fp32)(Tensor)", CI("lo", 0) T("(3, 3, fp32)(Tensor)") "band_part(x=%x, lower=%lo, name=\"t\")\n",
     "(3, 3, fp32)(Tensor)", NULL},
    {I15, "%x: (3, 3, int8)(Tensor)", T("(3, 3, int8)(Tensor)") "band_part(x=%x, name=\"t\")\n", NULL, "must have dtype"},
    {I15, "%x: (2, 3, int32)(Tensor)", CI("a", -1) T("(2, 3, int32)(Tensor)") "cumsum(x=%x, axis=%a, name=\"t\")\n",
     "(2, 3, int32)(Tensor)", NULL},
    {I15, "%x: (2, 3, int32)(Tensor)", CI("a", 2) T("(2, 3, int32)(Tensor)") "cumsum(x=%x, axis=%a, name=\"t\")\n", NULL,
     "axis should be in the range [-1, 1]"},
    {I15, "", CV("s", 2, "[2, 3]") CF("v", 1.5) T("(2, 3, fp32)(Tensor)") "fill(shape=%s, value=%v, name=\"t\")\n",
     "(2, 3, fp32)(Tensor)", NULL},
    {I15, "", CV("s", 2, "[2, 3]") T("(2, 3, fp32)(Tensor)") "fill(shape=%s, name=\"t\")\n", "(2, 3, fp32)(Tensor)", NULL},
    {I15, "", C("s", "(1, 2, int32)*(Tensor)", "[[2, 3]]") CI("v", 1) T("(2, 3, int32)(Tensor)") "fill(shape=%s, value=%v, name=\"t\")\n",
     NULL, "input 'shape' must be rank 1"},
    {I16, "%r: (2, 3, fp32)(Tensor)", CI("v", 7) T("(2, 3, int32)(Tensor)") "fill_like(ref_tensor=%r, value=%v, name=\"t\")\n",
     "(2, 3, int32)(Tensor)", NULL},
    {I16, "%r: (2, 3, int8)(Tensor)", CI("v", 7) T("(2, 3, int32)(Tensor)") "fill_like(ref_tensor=%r, value=%v, name=\"t\")\n",
     NULL, "input 'ref_tensor' must have dtype"},
    {I15, "%b: (1, 10, 4, fp32)(Tensor), %s: (1, 10, 3, fp32)(Tensor)", CF("iou", 0.5) CF("st", 0.1) CI("mb", 5)
     "    %t: (1, 5, 4, fp32)(Tensor), %t_1: (1, 5, 3, fp32)(Tensor), %t_2: (1, 5, int32)(Tensor), %t_3: (1,int32)(Tensor) = "
     "non_maximum_suppression(boxes=%b, scores=%s, iou_threshold=%iou, score_threshold=%st, max_boxes=%mb, name=\"t\")\n",
     "(1, 5, 4, fp32)(Tensor)", NULL},
    {I15, "%b: (1, 10, 4, fp32)(Tensor), %s: (10, 3, fp32)(Tensor)", CF("iou", 0.5) CF("st", 0.1) CI("mb", 5)
     "    %t: (1, 5, 4, fp32)(Tensor), %t_1: (1, 5, 3, fp32)(Tensor), %t_2: (1, 5, int32)(Tensor), %t_3: (1,int32)(Tensor) = "
     "non_maximum_suppression(boxes=%b, scores=%s, iou_threshold=%iou, score_threshold=%st, max_boxes=%mb, name=\"t\")\n",
     NULL, "input 'scores' must be rank 3"},
    {I17, "%b: (1, 10, 4, fp32)(Tensor), %s: (1, 3, 10, fp32)(Tensor)", CF("iou", 0.5) CI("mb", 5)
     "    %t: (1, 4, 5, fp32)(Tensor), %t_1: (1, 3, 5, fp32)(Tensor), %t_2: (1, 5, int32)(Tensor) = "
     "non_maximum_suppression(boxes=%b, scores=%s, iou_threshold=%iou, max_boxes=%mb, name=\"t\")\n",
     "(1, 4, 5, fp32)(Tensor)", NULL},
    {I17, "%b: (1, 10, 4, fp32)(Tensor), %s: (1, 3, 10, fp32)(Tensor)", CF("iou", 0.5) CF("st", 0.1) CI("mb", 5)
     "    %t: (1, 4, 5, fp32)(Tensor), %t_1: (1, 3, 5, fp32)(Tensor), %t_2: (1, 5, int32)(Tensor) = "
     "non_maximum_suppression(boxes=%b, scores=%s, iou_threshold=%iou, score_threshold=%st, max_boxes=%mb, name=\"t\")\n",
     NULL, "unknown input 'score_threshold'"},
    {I15, "", C("x", "(2, 2, fp32)*(Tensor)", "[[0.0, 1.0], [2.0, 0.0]]") T("(2, 2, int32)(Tensor)") "non_zero(x=%x, name=\"t\")\n",
     "(2, 2, int32)(Tensor)", NULL},
    {I15, "%x: (2, 2, int8)(Tensor)", T("(2, 2, int32)(Tensor)") "non_zero(x=%x, name=\"t\")\n", NULL, "must have dtype"},
    {I15, "%i: (3,int32)(Tensor)", CI("n", 4) T("(3, 4, int32)(Tensor)") "one_hot(indices=%i, one_hot_vector_size=%n, name=\"t\")\n",
     "(3, 4, int32)(Tensor)", NULL},
    {I15, "%i: (3,int32)(Tensor)", CI("n", 4) CI("a", 0) CF("on", 1.0) CF("off", 0.0) T("(4, 3, fp32)(Tensor)")
     "one_hot(indices=%i, one_hot_vector_size=%n, axis=%a, on_value=%on, off_value=%off, name=\"t\")\n",
     "(4, 3, fp32)(Tensor)", NULL},
    {I15, "%i: (3,int32)(Tensor)", CI("n", 4) CI("a", 2) T("(3, 4, int32)(Tensor)")
     "one_hot(indices=%i, one_hot_vector_size=%n, axis=%a, name=\"t\")\n", NULL, "out of bounds"},
    {I15, "%x: (2, 3, fp32)(Tensor)", CV("p", 4, "[1, 1, 2, 2]") T("(4, 7, fp32)(Tensor)") "pad(x=%x, pad=%p, name=\"t\")\n",
     "(4, 7, fp32)(Tensor)", NULL},
    {I15, "%x: (2, 3, fp32)(Tensor)", CV("p", 2, "[2, 2]") CSTR("m", "reflect") T("(2, 7, fp32)(Tensor)")
     "pad(x=%x, pad=%p, mode=%m, name=\"t\")\n", "(2, 7, fp32)(Tensor)", NULL},
    {I15, "%x: (2, 3, fp32)(Tensor)", CV("p", 4, "[1, 1, 2, 2]") CSTR("m", "wrap") T("(4, 7, fp32)(Tensor)")
     "pad(x=%x, pad=%p, mode=%m, name=\"t\")\n", NULL, "Pad mode should be one of"},
    {I15, "%x: (2, 3, fp32)(Tensor), %p: (2,int32)(Tensor)", T("(4, 7, fp32)(Tensor)") "pad(x=%x, pad=%p, name=\"t\")\n",
     NULL, "Non-constant 'pad' must have shape (4,)"},
    {I15, "", CI("s", 0) CI("e", 10) CI("st", 3) T("(4,int32)(Tensor)") "range_1d(end=%e, start=%s, step=%st, name=\"t\")\n",
     "(4,int32)(Tensor)", NULL},
    {I15, "", CF("s", 0.0) CF("e", 1.0) CF("st", 0.3) T("(4,fp32)(Tensor)") "range_1d(end=%e, start=%s, step=%st, name=\"t\")\n",
     "(4,fp32)(Tensor)", NULL},
    {I15, "", CF("s", 0.0) CI("e", 10) CF("st", 0.3) T("(4,fp32)(Tensor)") "range_1d(end=%e, start=%s, step=%st, name=\"t\")\n",
     NULL, "must have the same dtype"},
    {I15, "%x: (2, 3, fp32)(Tensor)", CV("r", 2, "[2, 1]") T("(4, 3, fp32)(Tensor)") "tile(x=%x, reps=%r, name=\"t\")\n",
     "(4, 3, fp32)(Tensor)", NULL},
    {I15, "%x: (2, 3, fp32)(Tensor)", CV("r", 2, "[0, 1]") T("(4, 3, fp32)(Tensor)") "tile(x=%x, reps=%r, name=\"t\")\n", NULL,
     "must be greater than 0"},
    {I15, "%x: (2, 3, fp32)(Tensor)", CV("r", 1, "[2]") T("(4, 3, fp32)(Tensor)") "tile(x=%x, reps=%r, name=\"t\")\n", NULL,
     "equal to the rank of the input x (2)"},
    {I15, "%x: (2, 3, fp16)(Tensor)", T("(2, 3, int32)(Tensor)") "argsort(x=%x, name=\"t\")\n", "(2, 3, int32)(Tensor)", NULL},
    {I15, "%x: (2, 3, bool)(Tensor)", T("(2, 3, int32)(Tensor)") "argsort(x=%x, name=\"t\")\n", NULL, "must have dtype"},
    {I15, "%x: (2, 6, fp32)(Tensor)", CI("k", 3)
     "    %t: (2, 3, fp32)(Tensor), %t_1: (2, 3, int32)(Tensor) = topk(x=%x, k=%k, name=\"t\")\n",
     "(2, 3, fp32)(Tensor)", NULL},
    {I15, "%x: (2, 6, fp32)(Tensor)", CI("k", 7)
     "    %t: (2, 3, fp32)(Tensor), %t_1: (2, 3, int32)(Tensor) = topk(x=%x, k=%k, name=\"t\")\n", NULL,
     "K=7 is greater than size of the given axis=-1"},
    {I16, "%x: (2, 6, fp32)(Tensor)", CI("k", 2) CI("ax", 0) CB("ri", "False")
     "    %t: (2, 6, fp32)(Tensor) = topk(x=%x, k=%k, axis=%ax, return_indices=%ri, name=\"t\")\n",
     "(2, 6, fp32)(Tensor)", NULL},
    {I16, "%x: (2, 6, fp32)(Tensor)", CI("k", 2) CI("ax", 2)
     "    %t: (2, 3, fp32)(Tensor), %t_1: (2, 3, int32)(Tensor) = topk(x=%x, k=%k, axis=%ax, name=\"t\")\n", NULL,
     "out of range"},
    {I17, "%x: (2, 6, int8)(Tensor)", C("k", "(int16)*(Scalar)", "2") CSTR("od", "uint16")
     "    %t: (2, 2, int8)(Tensor), %t_1: (2, 2, uint16)(Tensor) = topk(x=%x, k=%k, output_indices_dtype=%od, name=\"t\")\n",
     "(2, 2, int8)(Tensor)", NULL},
    {I17, "%x: (2, 6, int8)(Tensor)", C("k", "(int16)*(Scalar)", "2") CSTR("od", "int8")
     "    %t: (2, 2, int8)(Tensor), %t_1: (2, 2, uint16)(Tensor) = topk(x=%x, k=%k, output_indices_dtype=%od, name=\"t\")\n",
     NULL, "invalid output_indices_dtype: \"int8\""},
    {I17, "%x: (2, 6, int8)(Tensor)", CB("ri", "False") CSTR("od", "int32")
     "    %t: (2, 1, int8)(Tensor) = topk(x=%x, return_indices=%ri, output_indices_dtype=%od, name=\"t\")\n", NULL,
     "can only be set when \"return_indices=True\""},
    {I15, X3, T("(2, 12, fp32)(Tensor)") "flatten2d(x=%x, name=\"t\")\n", "(2, 12, fp32)(Tensor)", NULL},
    {I15, X3, CI("a", -1) T("(6, 4, fp32)(Tensor)") "flatten2d(x=%x, axis=%a, name=\"t\")\n", "(6, 4, fp32)(Tensor)", NULL},
    {I15, "%x: (2, 3, uint8)(Tensor)", T("(2, 3, uint8)(Tensor)") "flatten2d(x=%x, name=\"t\")\n", NULL, "must have dtype"},
    {I15, X3, T("(3,int32)(Tensor)") "shape(x=%x, name=\"t\")\n", "(3,int32)(Tensor)", NULL},
    {I15, "%x: (fp32)(Scalar)", T("(0,int32)(Tensor)") "shape(x=%x, name=\"t\")\n", "(0,int32)(Tensor)", NULL},
    {I15, "%x: (2, int8)(Tensor)", T("(1,int32)(Tensor)") "shape(x=%x, name=\"t\")\n", NULL, "must have dtype"},
    {I15, "%x: (2, 3, fp32)(Tensor), %y: (2, 4, fp32)(Tensor)", CI("a", 1) T("(2, 7, fp32)(Tensor)")
     "concat(values=(%x, %y), axis=%a, name=\"t\")\n", "(2, 7, fp32)(Tensor)", NULL},
    {I15, "%x: (fp32)(Scalar), %y: (fp32)(Scalar)", CI("a", 0) T("(2,fp32)(Tensor)")
     "concat(values=(%x, %y), axis=%a, name=\"t\")\n", "(2,fp32)(Tensor)", NULL},
    {I15, "%x: (2, 3, fp32)(Tensor), %y: (2, 4, int32)(Tensor)", CI("a", 1) T("(2, 7, fp32)(Tensor)")
     "concat(values=(%x, %y), axis=%a, name=\"t\")\n", NULL, "should share the same data type"},
    {I15, "%x: (2, 3, fp32)(Tensor), %y: (3, 4, fp32)(Tensor)", CI("a", 1) T("(2, 7, fp32)(Tensor)")
     "concat(values=(%x, %y), axis=%a, name=\"t\")\n", NULL, "Dimension mismatch in concat"},
    {I15, "%x: (2, 3, fp32)(Tensor), %y: (2, 4, fp32)(Tensor)", CI("a", 1) CB("il", "True") T("(2, 7, fp32)(Tensor)")
     "concat(values=(%x, %y), axis=%a, interleave=%il, name=\"t\")\n", NULL, "must have same shape when 'interleave'"},
    {I15, "%x: (6, 2, fp32)(Tensor)", CI("n", 3) CI("a", 0)
     "    %t: (2, 2, fp32)(Tensor), %t_1: (2, 2, fp32)(Tensor), %t_2: (2, 2, fp32)(Tensor) = split(x=%x, num_splits=%n, axis=%a, name=\"t\")\n",
     "(2, 2, fp32)(Tensor)", NULL},
    {I15, "%x: (6, 2, fp32)(Tensor)", CI("n", 4) CI("a", 0)
     "    %t: (2, 2, fp32)(Tensor), %t_1: (2, 2, fp32)(Tensor), %t_2: (2, 2, fp32)(Tensor), %t_3: (2, 2, fp32)(Tensor) = split(x=%x, num_splits=%n, axis=%a, name=\"t\")\n",
     NULL, "num_split 4 does not divide split dim (length = 6)"},
    {I15, "%x: (6, 2, fp32)(Tensor)", CI("a", 0)
     "    %t: (2, 2, fp32)(Tensor) = split(x=%x, axis=%a, name=\"t\")\n", NULL,
     "At least one of num_splits and split_sizes"},
    {I15, "%x: (6, 2, fp32)(Tensor)", CV("ss", 2, "[1, 5]") CI("a", 0)
     "    %t: (1, 2, fp32)(Tensor), %t_1: (5, 2, fp32)(Tensor), %t_2: (1, 2, fp32)(Tensor) = split(x=%x, split_sizes=%ss, axis=%a, name=\"t\")\n",
     NULL, "the op has 3 outputs, its inputs give 2"},
    {I15, "%x: (2, 3, fp32)(Tensor), %y: (2, 3, fp32)(Tensor)", CI("a", 1) T("(2, 2, 3, fp32)(Tensor)")
     "stack(values=(%x, %y), axis=%a, name=\"t\")\n", "(2, 2, 3, fp32)(Tensor)", NULL},
    {I15, "%x: (2, 3, fp32)(Tensor), %y: (2, 4, fp32)(Tensor)", CI("a", 1) T("(2, 2, 3, fp32)(Tensor)")
     "stack(values=(%x, %y), axis=%a, name=\"t\")\n", NULL, "Component tensor values[1] has shape (2, 4, fp32)"},
    {I15, "%x: (2, 3, fp32)(Tensor)", T("(2, 3, fp32)(Tensor)") "identity(x=%x, name=\"t\")\n", "(2, 3, fp32)(Tensor)", NULL},
    {I15, "%x: (2, 3, fp32)(Tensor)", T("(2, 3, fp32)(Tensor)") "identity(name=\"t\")\n", NULL,
     "required input 'x' is missing"},
};

static void test_tensor_operation(void **state) {
  (void)state;
  run_cases(k_to, sizeof k_to / sizeof k_to[0]);
}

/* Types of every output of a multi-output op. */
static void expect_outputs(const char *opset, const char *inputs, const char *body, int n, const char *const *want) {
  tcase tc = {opset, inputs, body, NULL, NULL};
  mil_program *p = parse_case(&tc);
  const mil_type *types[16];
  const mil_value *vals[16];
  char err[1024], got[256];
  if (infer_t(p, types, vals, err, sizeof err) != MIL_OK) fail_msg("unexpected error: %s\n%s", err, body);
  for (int i = 0; i < n; i++) {
    type_text(types[i], got, sizeof got);
    if (strcmp(got, want[i]) != 0) fail_msg("output %d: got %s, expected %s\n%s", i, got, want[i], body);
  }
  mil_program_free(p);
}

static void test_multi_outputs(void **state) {
  (void)state;
  const char *nms15[] = {"(1, 5, 4, fp32)(Tensor)", "(1, 5, 3, fp32)(Tensor)", "(1, 5, int32)(Tensor)", "(1,int32)(Tensor)"};
  expect_outputs(I15, "%b: (1, 10, 4, fp32)(Tensor), %s: (1, 10, 3, fp32)(Tensor)",
                 CF("iou", 0.5) CF("st", 0.1) CI("mb", 5)
                 "    %t: (1, 5, 4, fp32)(Tensor), %t_1: (1, 5, 3, fp32)(Tensor), %t_2: (1, 5, int32)(Tensor), %t_3: (1,int32)(Tensor) = "
                 "non_maximum_suppression(boxes=%b, scores=%s, iou_threshold=%iou, score_threshold=%st, max_boxes=%mb, name=\"t\")\n",
                 4, nms15);
  const char *nms17[] = {"(1, 4, 5, fp32)(Tensor)", "(1, 3, 5, fp32)(Tensor)", "(1, 5, int32)(Tensor)"};
  expect_outputs(I17, "%b: (1, 10, 4, fp32)(Tensor), %s: (1, 3, 10, fp32)(Tensor)",
                 CF("iou", 0.5) CI("mb", 5)
                 "    %t: (1, 4, 5, fp32)(Tensor), %t_1: (1, 3, 5, fp32)(Tensor), %t_2: (1, 5, int32)(Tensor) = "
                 "non_maximum_suppression(boxes=%b, scores=%s, iou_threshold=%iou, max_boxes=%mb, name=\"t\")\n",
                 3, nms17);
  const char *split[] = {"(1, 2, fp32)(Tensor)", "(5, 2, fp32)(Tensor)"};
  expect_outputs(I15, "%x: (6, 2, fp32)(Tensor)",
                 CV("ss", 2, "[1, 5]") CI("a", 0)
                 "    %t: (1, 2, fp32)(Tensor), %t_1: (5, 2, fp32)(Tensor) = split(x=%x, split_sizes=%ss, axis=%a, name=\"t\")\n",
                 2, split);
  const char *topk17[] = {"(2, 2, int8)(Tensor)", "(2, 2, uint16)(Tensor)"};
  expect_outputs(I17, "%x: (2, 6, int8)(Tensor)",
                 C("k", "(int16)*(Scalar)", "2") CSTR("od", "uint16")
                 "    %t: (2, 2, int8)(Tensor), %t_1: (2, 2, uint16)(Tensor) = topk(x=%x, k=%k, output_indices_dtype=%od, name=\"t\")\n",
                 2, topk17);
  const char *lts[] = {"(2, 6, uint1)(Tensor)", "(6,fp16)(Tensor)"};
  expect_outputs(I18, "",
                 C("m", "(2, 3, uint1)*(Tensor)", "[[1, 0, 1], [0, 1, 0]]") C("nz", "(3,uint2)*(Tensor)", "[0, 1, 2]")
                 C("lut", "(1, 1, 4, 2, fp16)*(Tensor)", "[[[[1.0, 2.0], [3.0, 4.0], [5.0, 6.0], [7.0, 8.0]]]]") CI("va", 1)
                 "    %t: (2, 6, uint1)(Tensor), %t_1: (6,fp16)(Tensor) = constexpr_lut_to_sparse(indices_mask=%m, "
                 "indices_nonzero_data=%nz, lut=%lut, vector_axis=%va, name=\"t\")\n",
                 2, lts);
  const char *sbss[] = {"(2, 4, uint1)(Tensor)", "(3,fp16)(Tensor)"};
  expect_outputs(I18, "",
                 C("m", "(2, 4, uint1)*(Tensor)", "[[1, 0, 1, 0], [0, 1, 0, 0]]") C("nz", "(3,int8)*(Tensor)", "[1, 2, 3]")
                 C("s", "(1, 2, fp16)*(Tensor)", "[[0.5, 2.0]]")
                 "    %t: (2, 4, uint1)(Tensor), %t_1: (3,fp16)(Tensor) = constexpr_sparse_blockwise_shift_scale("
                 "data_mask=%m, nonzero_data=%nz, scale=%s, name=\"t\")\n",
                 2, sbss);
}

/* ---------------- scatter_gather ---------------- */

#define X45 "%x: (4, 5, fp32)(Tensor)"
static const tcase k_sg[] = {
    {I15, X45 ", %i: (2, 3, int32)(Tensor)", CI("a", 1) T("(4, 2, 3, fp32)(Tensor)") "gather(x=%x, indices=%i, axis=%a, name=\"t\")\n",
     "(4, 2, 3, fp32)(Tensor)", NULL},
    {I15, X45 ", %i: (int32)(Scalar)", T("(5,fp32)(Tensor)") "gather(x=%x, indices=%i, name=\"t\")\n", "(5,fp32)(Tensor)", NULL},
    {I15, "%x: (4,fp32)(Tensor), %i: (int32)(Scalar)", T("(fp32)(Scalar)") "gather(x=%x, indices=%i, name=\"t\")\n", "(fp32)(Scalar)", NULL},
    {I15, X45 ", %i: (2, 3, int32)(Tensor)", CI("a", 2) T("(4, 2, 3, fp32)(Tensor)") "gather(x=%x, indices=%i, axis=%a, name=\"t\")\n",
     NULL, "Axis value 2 is out of bounds for gather node t"},
    {I16, "%x: (2, 5, 3, fp32)(Tensor), %i: (2, 4, int16)(Tensor)", CI("a", 1) CI("bd", 1) T("(2, 4, 3, fp32)(Tensor)")
     "gather(x=%x, indices=%i, axis=%a, batch_dims=%bd, name=\"t\")\n", "(2, 4, 3, fp32)(Tensor)", NULL},
    {I16, "%x: (2, 5, 3, fp32)(Tensor), %i: (2, 4, int16)(Tensor)", CI("a", 1) CI("bd", 3) T("(2, 4, 3, fp32)(Tensor)")
     "gather(x=%x, indices=%i, axis=%a, batch_dims=%bd, name=\"t\")\n", NULL, "batch_dims 3 must be less than x.rank 3"},
    {I17, "%x: (4, 5, int8)(Tensor)", CV("i", 2, "[0, 3]") T("(2, 5, int8)(Tensor)") "gather(x=%x, indices=%i, name=\"t\")\n",
     "(2, 5, int8)(Tensor)", NULL},
    {I17, "%x: (4, 5, int8)(Tensor)", CV("i", 2, "[0, 4]") CB("v", "True") T("(2, 5, int8)(Tensor)")
     "gather(x=%x, indices=%i, validate_indices=%v, name=\"t\")\n", NULL, "Indices is out of bounds for `gather` node t"},
    {I15, X45 ", %i: (2,int32)(Tensor), %u: (2, 5, fp32)(Tensor)", T("(4, 5, fp32)(Tensor)")
     "scatter(data=%x, indices=%i, updates=%u, name=\"t\")\n", "(4, 5, fp32)(Tensor)", NULL},
    {I15, X45 ", %i: (2,int32)(Tensor), %u: (3, 5, fp32)(Tensor)", T("(4, 5, fp32)(Tensor)")
     "scatter(data=%x, indices=%i, updates=%u, name=\"t\")\n", NULL, "Updates shape (3, 5, fp32) is incorrect. It should be (2, 5, fp32)"},
    {I17, X45 ", %u: (2, 5, fp32)(Tensor)", CV("i", 2, "[1, 3]") CB("v", "True") T("(4, 5, fp32)(Tensor)")
     "scatter(data=%x, indices=%i, updates=%u, validate_indices=%v, name=\"t\")\n", "(4, 5, fp32)(Tensor)", NULL},
    {I17, X45 ", %u: (2, 5, fp32)(Tensor)", CV("i", 2, "[-1, 3]") CB("v", "True") T("(4, 5, fp32)(Tensor)")
     "scatter(data=%x, indices=%i, updates=%u, validate_indices=%v, name=\"t\")\n", NULL, "Indices is out of bounds"},
    {I15, X45 ", %i: (4, 2, int32)(Tensor)", CI("a", 1) T("(4, 2, fp32)(Tensor)")
     "gather_along_axis(x=%x, indices=%i, axis=%a, name=\"t\")\n", "(4, 2, fp32)(Tensor)", NULL},
    {I15, X45 ", %i: (4,int32)(Tensor)", CI("a", 0) T("(4, 2, fp32)(Tensor)")
     "gather_along_axis(x=%x, indices=%i, axis=%a, name=\"t\")\n", NULL, "Rank mismatch between input and indices"},
    {I16, X45 ", %i: (4, 2, uint16)(Tensor)", CI("a", 1) T("(4, 2, fp32)(Tensor)")
     "gather_along_axis(x=%x, indices=%i, axis=%a, name=\"t\")\n", "(4, 2, fp32)(Tensor)", NULL},
    {I16, X45 ", %i: (4, 2, int8)(Tensor)", CI("a", 1) T("(4, 2, fp32)(Tensor)")
     "gather_along_axis(x=%x, indices=%i, axis=%a, name=\"t\")\n", NULL, "input 'indices' must have dtype int16, int32, uint16"},
    {I17, "%x: (4, 5, uint8)(Tensor), %i: (4, 2, int8)(Tensor)", CI("a", 1) T("(4, 2, uint8)(Tensor)")
     "gather_along_axis(x=%x, indices=%i, axis=%a, name=\"t\")\n", "(4, 2, uint8)(Tensor)", NULL},
    {I17, "%x: (4, 5, uint8)(Tensor), %i: (3, 2, int8)(Tensor)", CI("a", 1) T("(4, 2, uint8)(Tensor)")
     "gather_along_axis(x=%x, indices=%i, axis=%a, name=\"t\")\n", NULL, "same size at axis 0, but got 4 vs 3"},
    {I15, X45 ", %i: (4, 2, int32)(Tensor), %u: (4, 2, fp32)(Tensor)", CI("a", 1) T("(4, 5, fp32)(Tensor)")
     "scatter_along_axis(data=%x, indices=%i, updates=%u, axis=%a, name=\"t\")\n", "(4, 5, fp32)(Tensor)", NULL},
    {I15, X45 ", %i: (4, 2, int32)(Tensor), %u: (4, 3, fp32)(Tensor)", CI("a", 1) T("(4, 5, fp32)(Tensor)")
     "scatter_along_axis(data=%x, indices=%i, updates=%u, axis=%a, name=\"t\")\n", NULL, "must have the shape of 'indices'"},
    {I17, X45 ", %i: (4, 2, int32)(Tensor), %u: (4, 2, fp32)(Tensor)", CI("a", 1) CSTR("m", "update") T("(4, 5, fp32)(Tensor)")
     "scatter_along_axis(data=%x, indices=%i, updates=%u, axis=%a, mode=%m, name=\"t\")\n", "(4, 5, fp32)(Tensor)", NULL},
    {I17, X45 ", %i: (3, 2, int32)(Tensor), %u: (3, 2, fp32)(Tensor)", CI("a", 1) T("(4, 5, fp32)(Tensor)")
     "scatter_along_axis(data=%x, indices=%i, updates=%u, axis=%a, name=\"t\")\n", NULL, "must have the same size at axis 0"},
    {I15, "%x: (4, 5, 6, fp32)(Tensor), %i: (2, 2, int32)(Tensor)", T("(2, 6, fp32)(Tensor)")
     "gather_nd(x=%x, indices=%i, name=\"t\")\n", "(2, 6, fp32)(Tensor)", NULL},
    {I15, "%x: (4, 5, 6, fp32)(Tensor), %i: (2, 4, int32)(Tensor)", T("(2, 6, fp32)(Tensor)")
     "gather_nd(x=%x, indices=%i, name=\"t\")\n", NULL, "indices.shape[-1] (4) + batch_dims (0) must be smaller or equal to the input rank 3"},
    {I16, "%x: (2, 5, 6, fp32)(Tensor), %i: (2, 3, 1, int32)(Tensor)", CI("bd", 1) T("(2, 3, 6, fp32)(Tensor)")
     "gather_nd(x=%x, indices=%i, batch_dims=%bd, name=\"t\")\n", "(2, 3, 6, fp32)(Tensor)", NULL},
    {I16, "%x: (2, 5, 6, fp32)(Tensor), %i: (2, 3, 3, int32)(Tensor)", CI("bd", 1) T("(2, 3, 6, fp32)(Tensor)")
     "gather_nd(x=%x, indices=%i, batch_dims=%bd, name=\"t\")\n", NULL, "indices.shape[-1] (3) + batch_dims (1)"},
    {I17, "%x: (4, 5, 6, int16)(Tensor)", C("i", "(1, 2, int32)*(Tensor)", "[[3, 4]]") CB("v", "True") T("(1, 6, int16)(Tensor)")
     "gather_nd(x=%x, indices=%i, validate_indices=%v, name=\"t\")\n", "(1, 6, int16)(Tensor)", NULL},
    {I17, "%x: (4, 5, 6, int16)(Tensor)", C("i", "(1, 2, int32)*(Tensor)", "[[3, 5]]") CB("v", "True") T("(1, 6, int16)(Tensor)")
     "gather_nd(x=%x, indices=%i, validate_indices=%v, name=\"t\")\n", NULL, "Indices is out of bounds"},
    {I15, "%x: (4, 5, 6, fp32)(Tensor), %i: (2, 2, int32)(Tensor), %u: (2, 6, fp32)(Tensor)", T("(4, 5, 6, fp32)(Tensor)")
     "scatter_nd(data=%x, indices=%i, updates=%u, name=\"t\")\n", "(4, 5, 6, fp32)(Tensor)", NULL},
    {I15, "%x: (4, 5, 6, fp32)(Tensor), %i: (2, 2, int32)(Tensor), %u: (2, 5, fp32)(Tensor)", T("(4, 5, 6, fp32)(Tensor)")
     "scatter_nd(data=%x, indices=%i, updates=%u, name=\"t\")\n", NULL, "Updates shape (2, 5, fp32) is incorrect"},
    {I17, "%x: (4, 5, 6, fp32)(Tensor), %i: (2, 2, int32)(Tensor), %u: (2, 6, fp32)(Tensor)", CSTR("m", "max") T("(4, 5, 6, fp32)(Tensor)")
     "scatter_nd(data=%x, indices=%i, updates=%u, mode=%m, name=\"t\")\n", "(4, 5, 6, fp32)(Tensor)", NULL},
    {I17, "%x: (4, 5, 6, fp32)(Tensor), %u: (1, 6, fp32)(Tensor)", C("i", "(1, 2, int32)*(Tensor)", "[[4, 0]]") CB("v", "True")
     T("(4, 5, 6, fp32)(Tensor)") "scatter_nd(data=%x, indices=%i, updates=%u, validate_indices=%v, name=\"t\")\n", NULL,
     "Indices is out of bounds for `scatter_nd`"},
};

static void test_scatter_gather(void **state) {
  (void)state;
  run_cases(k_sg, sizeof k_sg / sizeof k_sg[0]);
}

/* ---------------- constexpr / compression / quantization / states ---------------- */

static const tcase k_cx[] = {
    {I16, "", C("q", "(2, 3, uint8)*(Tensor)", "[[1, 2, 3], [4, 5, 6]]") C("zp", "(uint8)*(Scalar)", "1")
     C("s", "(3,fp32)*(Tensor)", "[0.5, 1.0, 2.0]") CI("a", 1) T("(2, 3, fp32)(Tensor)")
     "constexpr_affine_dequantize(quantized_data=%q, zero_point=%zp, scale=%s, axis=%a, name=\"t\")\n",
     "(2, 3, fp32)(Tensor)", NULL},
    {I16, "", C("q", "(2, 3, uint8)*(Tensor)", "[[1, 2, 3], [4, 5, 6]]") C("zp", "(uint8)*(Scalar)", "1")
     C("s", "(2,fp32)*(Tensor)", "[0.5, 1.0]") CI("a", 1) T("(2, 3, fp32)(Tensor)")
     "constexpr_affine_dequantize(quantized_data=%q, zero_point=%zp, scale=%s, axis=%a, name=\"t\")\n",
     NULL, "Parameter scale, if vector, needs to have same size"},
    {I15, "", C("q", "(2, 3, uint8)*(Tensor)", "[[1, 2, 3], [4, 5, 6]]") C("zp", "(uint8)*(Scalar)", "1")
     C("s", "(3,fp32)*(Tensor)", "[0.5, 1.0, 2.0]") CI("a", 1) T("(2, 3, fp32)(Tensor)")
     "constexpr_affine_dequantize(quantized_data=%q, zero_point=%zp, scale=%s, axis=%a, name=\"t\")\n",
     NULL, "needs opset CoreML6"},
    {I16, "", C("s", "(2,fp16)*(Tensor)", "[0.5, 1.0]") CSTR("d", "fp32") T("(2,fp32)(Tensor)")
     "constexpr_cast(source_val=%s, output_dtype=%d, name=\"t\")\n", "(2,fp32)(Tensor)", NULL},
    {I16, "", C("s", "(2,fp16)*(Tensor)", "[0.5, 1.0]") CSTR("d", "fp16") T("(2,fp32)(Tensor)")
     "constexpr_cast(source_val=%s, output_dtype=%d, name=\"t\")\n", NULL, "Only output_dtype = fp32 is supported"},
    {I18, "", C("s", "(2, 2, fp16)*(Tensor)", "[[0.5, 1.0], [2.0, 3.0]]") CSTR("d", "fp32") T("(2, 2, fp32)(Tensor)")
     "constexpr_cast(source_val=%s, output_dtype=%d, name=\"t\")\n", "(2, 2, fp32)(Tensor)", NULL},
    {I18, "", C("s", "(2,fp32)*(Tensor)", "[0.5, 1.0]") CSTR("d", "fp32") T("(2,fp32)(Tensor)")
     "constexpr_cast(source_val=%s, output_dtype=%d, name=\"t\")\n", NULL, "input 'source_val' must have dtype fp16"},
    {I16, "", C("i", "(1,uint8)*(Tensor)", "[57]") C("lut", "(4,fp32)*(Tensor)", "[10.0, 20.0, 30.0, 40.0]")
     C("sh", "(1,uint32)*(Tensor)", "[4]") T("(4,fp32)(Tensor)") "constexpr_lut_to_dense(indices=%i, lut=%lut, shape=%sh, name=\"t\")\n",
     "(4,fp32)(Tensor)", NULL},
    {I16, "", C("i", "(1,uint8)*(Tensor)", "[57]") C("lut", "(3,fp32)*(Tensor)", "[10.0, 20.0, 30.0]")
     C("sh", "(1,uint32)*(Tensor)", "[4]") T("(4,fp32)(Tensor)") "constexpr_lut_to_dense(indices=%i, lut=%lut, shape=%sh, name=\"t\")\n",
     NULL, "Parameter lut should be a vector of size from one of {2, 4, 16, 64, 256}"},
    {I16, "", C("i", "(2,uint8)*(Tensor)", "[57, 0]") C("lut", "(4,fp32)*(Tensor)", "[10.0, 20.0, 30.0, 40.0]")
     C("sh", "(1,uint32)*(Tensor)", "[4]") T("(4,fp32)(Tensor)") "constexpr_lut_to_dense(indices=%i, lut=%lut, shape=%sh, name=\"t\")\n",
     NULL, "Constraint violated, M = ceil(n_bits * product(shape) / 8)"},
    {I16, "", C("nz", "(2,fp32)*(Tensor)", "[7.0, 8.0]") C("m", "(1,uint8)*(Tensor)", "[5]") C("sh", "(2,uint32)*(Tensor)", "[2, 2]")
     T("(2, 2, fp32)(Tensor)") "constexpr_sparse_to_dense(nonzero_data=%nz, mask=%m, shape=%sh, name=\"t\")\n",
     "(2, 2, fp32)(Tensor)", NULL},
    {I16, "", C("nz", "(2,fp32)*(Tensor)", "[7.0, 8.0]") C("m", "(1,uint8)*(Tensor)", "[7]") C("sh", "(2,uint32)*(Tensor)", "[2, 2]")
     T("(2, 2, fp32)(Tensor)") "constexpr_sparse_to_dense(nonzero_data=%nz, mask=%m, shape=%sh, name=\"t\")\n",
     NULL, "Number of set bits in mask needs to be equal"},
    {I16, "", C("nz", "(2,fp32)*(Tensor)", "[7.0, 8.0]") C("m", "(1,uint8)*(Tensor)", "[17]") C("sh", "(2,uint32)*(Tensor)", "[2, 2]")
     T("(2, 2, fp32)(Tensor)") "constexpr_sparse_to_dense(nonzero_data=%nz, mask=%m, shape=%sh, name=\"t\")\n",
     NULL, "Padded bits in mask should be unset"},
    /* iOS18 */
    {I18, "", C("d", "(4, 2, int8)*(Tensor)", "[[1, 2], [3, 4], [5, 6], [7, 8]]") C("s", "(2, 1, fp16)*(Tensor)", "[[1.0], [10.0]]")
     T("(4, 2, fp16)(Tensor)") "constexpr_blockwise_shift_scale(data=%d, scale=%s, name=\"t\")\n", "(4, 2, fp16)(Tensor)", NULL},
    {I18, "", C("d", "(4, 2, int8)*(Tensor)", "[[1, 2], [3, 4], [5, 6], [7, 8]]") C("s", "(3, 1, fp16)*(Tensor)", "[[1.0], [10.0], [1.0]]")
     T("(4, 2, fp16)(Tensor)") "constexpr_blockwise_shift_scale(data=%d, scale=%s, name=\"t\")\n", NULL,
     "at dim 0, the 'data' has 4 while 'scale' has 3"},
    {I18, "", C("d", "(4, 2, int8)*(Tensor)", "[[1, 2], [3, 4], [5, 6], [7, 8]]") C("s", "(2, 1, fp16)*(Tensor)", "[[1.0], [10.0]]")
     C("o", "(2, 1, uint8)*(Tensor)", "[[1], [0]]") T("(4, 2, fp16)(Tensor)")
     "constexpr_blockwise_shift_scale(data=%d, scale=%s, offset=%o, name=\"t\")\n", NULL,
     "the dtype of 'offset' should match the dtype of 'data', but got (uint8) vs (int8)"},
    {I18, "", C("i", "(4, 2, uint2)*(Tensor)", "[[0, 1], [2, 3], [3, 2], [1, 0]]") C("lut", "(1, 1, 4, 1, fp16)*(Tensor)", "[[[[1.0], [2.0], [3.0], [4.0]]]]")
     T("(4, 2, fp16)(Tensor)") "constexpr_lut_to_dense(indices=%i, lut=%lut, name=\"t\")\n", "(4, 2, fp16)(Tensor)", NULL},
    {I18, "", C("i", "(4, 2, uint1)*(Tensor)", "[[0, 1], [1, 1], [1, 0], [1, 0]]") C("lut", "(1, 1, 2, 2, fp16)*(Tensor)", "[[[[1.0, 2.0], [3.0, 4.0]]]]")
     CI("va", 0) T("(8, 2, fp16)(Tensor)") "constexpr_lut_to_dense(indices=%i, lut=%lut, vector_axis=%va, name=\"t\")\n",
     "(8, 2, fp16)(Tensor)", NULL},
    {I18, "", C("i", "(4, 2, uint4)*(Tensor)", "[[0, 1], [2, 3], [3, 2], [1, 0]]") C("lut", "(1, 1, 4, 1, fp16)*(Tensor)", "[[[[1.0], [2.0], [3.0], [4.0]]]]")
     T("(4, 2, fp16)(Tensor)") "constexpr_lut_to_dense(indices=%i, lut=%lut, name=\"t\")\n", NULL,
     "so the dtype of indices should be uint2, but got uint4"},
    {I18, "", C("nz", "(3,fp16)*(Tensor)", "[1.0, 2.0, 3.0]") C("m", "(2, 3, uint1)*(Tensor)", "[[1, 0, 1], [0, 1, 0]]")
     T("(2, 3, fp16)(Tensor)") "constexpr_sparse_to_dense(nonzero_data=%nz, mask=%m, name=\"t\")\n", "(2, 3, fp16)(Tensor)", NULL},
    {I18, "", C("nz", "(3,fp16)*(Tensor)", "[1.0, 2.0, 3.0]") C("m", "(2, 3, uint1)*(Tensor)", "[[1, 0, 1], [0, 0, 0]]")
     T("(2, 3, fp16)(Tensor)") "constexpr_sparse_to_dense(nonzero_data=%nz, mask=%m, name=\"t\")\n", NULL,
     "Number of 1s in mask not match number of elements in parameter nonzero_data"},
    {I18, "", C("m", "(2, 3, uint1)*(Tensor)", "[[1, 0, 1], [0, 1, 0]]") C("nz", "(3,uint2)*(Tensor)", "[0, 1, 2]")
     C("lut", "(1, 1, 4, 1, fp16)*(Tensor)", "[[[[1.0], [2.0], [3.0], [4.0]]]]")
     "    %t: (2, 3, uint1)(Tensor), %t_1: (3,fp16)(Tensor) = constexpr_lut_to_sparse(indices_mask=%m, "
     "indices_nonzero_data=%nz, lut=%lut, name=\"t\")\n", "(2, 3, uint1)(Tensor)", NULL},
    {I18, "", C("m", "(2, 3, uint1)*(Tensor)", "[[1, 0, 1], [0, 1, 0]]") C("nz", "(3,uint2)*(Tensor)", "[0, 1, 2]")
     C("lut", "(1, 1, 4, 2, fp16)*(Tensor)", "[[[[1.0, 2.0], [3.0, 4.0], [5.0, 6.0], [7.0, 8.0]]]]")
     "    %t: (2, 3, uint1)(Tensor), %t_1: (3,fp16)(Tensor) = constexpr_lut_to_sparse(indices_mask=%m, "
     "indices_nonzero_data=%nz, lut=%lut, name=\"t\")\n", NULL, "the parameter 'vector_axis' need to be provided"},
    {I18, "", C("m", "(2, 4, uint1)*(Tensor)", "[[1, 0, 1, 0], [0, 1, 0, 0]]") C("nz", "(3,int8)*(Tensor)", "[1, 2, 3]")
     C("s", "(1, 2, fp16)*(Tensor)", "[[0.5, 2.0]]")
     "    %t: (2, 4, uint1)(Tensor), %t_1: (3,fp16)(Tensor) = constexpr_sparse_blockwise_shift_scale("
     "data_mask=%m, nonzero_data=%nz, scale=%s, name=\"t\")\n", "(2, 4, uint1)(Tensor)", NULL},
    {I18, "", C("m", "(2, 4, uint1)*(Tensor)", "[[1, 0, 1, 0], [0, 1, 0, 0]]") C("nz", "(3,int8)*(Tensor)", "[1, 2, 3]")
     C("s", "(2,fp16)*(Tensor)", "[0.5, 2.0]")
     "    %t: (2, 4, uint1)(Tensor), %t_1: (3,fp16)(Tensor) = constexpr_sparse_blockwise_shift_scale("
     "data_mask=%m, nonzero_data=%nz, scale=%s, name=\"t\")\n", NULL, "need to have the same rank, but got 2 vs 1"},
    /* quantize / dequantize */
    {I17, "%x: (2, 3, fp32)(Tensor)", CF("s", 0.5) CSTR("od", "int8") T("(2, 3, int8)(Tensor)")
     "quantize(input=%x, scale=%s, output_dtype=%od, name=\"t\")\n", "(2, 3, int8)(Tensor)", NULL},
    {I17, "%x: (2, 3, fp16)(Tensor)", C("s", "(3,fp16)*(Tensor)", "[0.5, 1.0, 2.0]") C("zp", "(3,uint8)*(Tensor)", "[1, 2, 3]")
     CI("a", -1) CSTR("od", "uint8") T("(2, 3, uint8)(Tensor)")
     "quantize(input=%x, zero_point=%zp, scale=%s, axis=%a, output_dtype=%od, name=\"t\")\n", "(2, 3, uint8)(Tensor)", NULL},
    {I17, "%x: (2, 3, fp32)(Tensor)", CF("s", 0.5) CSTR("od", "uint16") T("(2, 3, int8)(Tensor)")
     "quantize(input=%x, scale=%s, output_dtype=%od, name=\"t\")\n", NULL, "unrecognized output dtype \"uint16\""},
    {I17, "%x: (2, 3, fp32)(Tensor)", CF("s", 0.0) CSTR("od", "int8") T("(2, 3, int8)(Tensor)")
     "quantize(input=%x, scale=%s, output_dtype=%od, name=\"t\")\n", NULL, "scale cannot be 0"},
    {I17, "%x: (2, 3, fp32)(Tensor)", CF("s", 0.5) C("zp", "(uint8)*(Scalar)", "3") CSTR("od", "int8") T("(2, 3, int8)(Tensor)")
     "quantize(input=%x, zero_point=%zp, scale=%s, output_dtype=%od, name=\"t\")\n", NULL,
     "output_dtype & zero_point dtype mismatch: int8, uint8"},
    {I17, "%x: (2, 3, int8)(Tensor)", C("s", "(3,fp32)*(Tensor)", "[0.5, 1.0, 2.0]") CI("a", 1) T("(2, 3, fp32)(Tensor)")
     "dequantize(input=%x, scale=%s, axis=%a, name=\"t\")\n", "(2, 3, fp32)(Tensor)", NULL},
    {I17, "%x: (2, 3, int8)(Tensor)", C("s", "(3,fp32)*(Tensor)", "[0.5, 1.0, 2.0]") T("(2, 3, fp32)(Tensor)")
     "dequantize(input=%x, scale=%s, name=\"t\")\n", NULL, "axis should be provided to dequantize if scale/zp are not scalars"},
    {I17, "%x: (2, 3, int8)(Tensor)", CF("s", 0.5) CI("a", 1) T("(2, 3, fp32)(Tensor)")
     "dequantize(input=%x, scale=%s, axis=%a, name=\"t\")\n", NULL, "axis should not be provided"},
    /* read_state */
    {I18, "%s: (2, 3, fp16)(State)", T("(2, 3, fp16)(Tensor)") "read_state(input=%s, name=\"t\")\n", "(2, 3, fp16)(Tensor)", NULL},
    {I18, "%s: (2, 3, fp16)(Tensor)", T("(2, 3, fp16)(Tensor)") "read_state(input=%s, name=\"t\")\n", NULL, "must be a state"},
    {I17, "%s: (2, 3, fp16)(State)", T("(2, 3, fp16)(Tensor)") "read_state(input=%s, name=\"t\")\n", NULL, "needs opset CoreML8"},
};

static void test_compression_states(void **state) {
  (void)state;
  run_cases(k_cx, sizeof k_cx / sizeof k_cx[0]);
}

/* Every variant of the families is registered (counted per family). */
static void test_variant_counts(void **state) {
  (void)state;
  const char *fams[] = {"tensor_transformation", "tensor_operation", "scatter_gather", "constexpr_ops",
                        "compression", "quantization_ops", "states"};
  const int want[] = {27, 21, 15, 4, 6, 2, 1};
  for (size_t f = 0; f < sizeof fams / sizeof fams[0]; f++) {
    int n = 0;
    for (size_t i = 0; i < mil_op_def_count(); i++)
      if (strcmp(mil_op_def_at(i)->family, fams[f]) == 0) n++;
    if (n != want[f]) fail_msg("family %s has %d variants, expected %d", fams[f], n, want[f]);
  }
  /* variant selection by opset */
  assert_int_equal(mil_op_def_find("reshape", MIL_IOS15)->opset, MIL_IOS13);
  assert_int_equal(mil_op_def_find("reshape", MIL_IOS18)->opset, MIL_IOS17);
  assert_int_equal(mil_op_def_find("gather", MIL_IOS16)->opset, MIL_IOS16);
  assert_null(mil_op_def_find("slice_update", MIL_IOS17));
  assert_int_equal(mil_op_def_find("constexpr_lut_to_dense", MIL_IOS18)->n_inputs, 3);
  assert_string_equal(mil_op_def_find("constexpr_lut_to_dense", MIL_IOS17)->inputs[2].name, "shape");
  /* input spec order follows coremltools' InputSpec declarations */
  const mil_op_def *sbi = mil_op_def_find("slice_by_index", MIL_IOS17);
  const char *order[] = {"x", "begin", "end", "stride", "begin_mask", "end_mask", "squeeze_mask"};
  for (int i = 0; i < 7; i++) assert_string_equal(sbi->inputs[i].name, order[i]);
}

/* coremltools' default_inputs, materialized as const ops. */
typedef struct dflt {
  const char *input;
  mil_dtype dt;
  double v;        /* numeric default */
  const char *str; /* string default */
} dflt;

static void expect_defaults(const char *opset, const char *inputs, const char *body, int n, const dflt *want, int n_inputs) {
  tcase tc = {opset, inputs, body, NULL, NULL};
  mil_program *p = parse_case(&tc);
  mil_op *t = op_t(p);
  mil_diag d;
  mil_diag_init(&d);
  if (mil_op_add_defaults(t, &d) != MIL_OK) fail_msg("%s\n%s", mil_diag_first_error(&d), body);
  if (t->n_inputs != n_inputs) fail_msg("op has %d inputs after defaults, expected %d\n%s", t->n_inputs, n_inputs, body);
  for (int i = 0; i < n; i++) {
    mil_var *v = mil_op_input_var(t, want[i].input);
    if (!v || !v->val) fail_msg("input %s has no default\n%s", want[i].input, body);
    char name[64];
    snprintf(name, sizeof name, "t_%s_0", want[i].input);
    assert_string_equal(v->name, name);
    assert_true(v->op && mil_op_is_const(v->op) && mil_op_is_before(v->op, t));
    if (v->val->type->dtype != want[i].dt)
      fail_msg("default %s has dtype %s, expected %s", want[i].input, mil_dtype_name(v->val->type->dtype),
               mil_dtype_name(want[i].dt));
    if (want[i].str) assert_string_equal(mil_value_get_str(v->val, 0), want[i].str);
    else if (mil_value_get_f64(v->val, 0) != want[i].v)
      fail_msg("default %s is %g, expected %g", want[i].input, mil_value_get_f64(v->val, 0), want[i].v);
  }
  /* the inputs follow the spec order */
  const mil_op_def *def = mil_op_def_find(t->type, mil_opset_version(opset));
  for (int32_t i = 1; i < t->n_inputs; i++) {
    int32_t a = -1, b = -1;
    for (int32_t s = 0; s < def->n_inputs; s++) {
      if (!strcmp(def->inputs[s].name, t->inputs[i - 1].name)) a = s;
      if (!strcmp(def->inputs[s].name, t->inputs[i].name)) b = s;
    }
    assert_true(a < b);
  }
  mil_diag_clear(&d);
  mil_program_free(p);
}

static void test_defaults(void **state) {
  (void)state;
  const dflt pad[] = {{"mode", MIL_DT_STRING, 0, "constant"}, {"constant_val", MIL_DT_FP32, 0, NULL}};
  expect_defaults(I15, "%x: (2, 3, fp32)(Tensor)", CV("p", 2, "[1, 1]") T("(2, 5, fp32)(Tensor)") "pad(x=%x, pad=%p, name=\"t\")\n",
                  2, pad, 4);
  const dflt topk[] = {{"k", MIL_DT_INT32, 1, NULL},         {"axis", MIL_DT_INT32, -1, NULL},
                       {"ascending", MIL_DT_BOOL, 0, NULL},  {"sort", MIL_DT_BOOL, 1, NULL},
                       {"return_indices", MIL_DT_BOOL, 1, NULL}, {"output_indices_dtype", MIL_DT_STRING, 0, "int32"}};
  expect_defaults(I17, "%x: (2, 6, fp32)(Tensor)",
                  "    %t: (2, 1, fp32)(Tensor), %t_1: (2, 1, int32)(Tensor) = topk(x=%x, name=\"t\")\n", 6, topk, 7);
  /* return_indices=False: no output_indices_dtype */
  expect_defaults(I17, "%x: (2, 6, fp32)(Tensor)", CB("ri", "False")
                  "    %t: (2, 1, fp32)(Tensor) = topk(x=%x, return_indices=%ri, name=\"t\")\n", 4, topk, 6);
  const dflt gather[] = {{"axis", MIL_DT_INT32, 0, NULL}, {"batch_dims", MIL_DT_INT32, 0, NULL},
                         {"validate_indices", MIL_DT_BOOL, 0, NULL}};
  expect_defaults(I17, "%x: (4, 5, fp32)(Tensor), %i: (2,int32)(Tensor)", T("(2, 5, fp32)(Tensor)") "gather(x=%x, indices=%i, name=\"t\")\n",
                  3, gather, 5);
  expect_defaults(I15, "%x: (4, 5, fp32)(Tensor), %i: (2,int32)(Tensor)", T("(2, 5, fp32)(Tensor)") "gather(x=%x, indices=%i, name=\"t\")\n",
                  1, gather, 3);
  const dflt oh[] = {{"axis", MIL_DT_INT32, -1, NULL}, {"on_value", MIL_DT_INT32, 1, NULL}, {"off_value", MIL_DT_INT32, 0, NULL}};
  expect_defaults(I15, "%i: (3,int32)(Tensor)", CI("n", 4) T("(3, 4, int32)(Tensor)") "one_hot(indices=%i, one_hot_vector_size=%n, name=\"t\")\n",
                  3, oh, 5);
  const dflt fill[] = {{"value", MIL_DT_FP32, 0, NULL}};
  expect_defaults(I15, "", CV("s", 1, "[2]") T("(2,fp32)(Tensor)") "fill(shape=%s, name=\"t\")\n", 1, fill, 2);
  const dflt cs[] = {{"axis", MIL_DT_INT32, 0, NULL}, {"exclusive", MIL_DT_BOOL, 0, NULL}, {"reverse", MIL_DT_BOOL, 0, NULL}};
  expect_defaults(I15, "%x: (3,fp32)(Tensor)", T("(3,fp32)(Tensor)") "cumsum(x=%x, name=\"t\")\n", 3, cs, 4);
  const dflt sc17[] = {{"axis", MIL_DT_INT32, 0, NULL}, {"mode", MIL_DT_STRING, 0, "add"}, {"validate_indices", MIL_DT_BOOL, 0, NULL}};
  expect_defaults(I17, "%x: (4, 5, fp32)(Tensor), %i: (2,int32)(Tensor), %u: (2, 5, fp32)(Tensor)", T("(4, 5, fp32)(Tensor)")
                  "scatter(data=%x, indices=%i, updates=%u, name=\"t\")\n", 3, sc17, 6);
  /* defaults of None add nothing */
  expect_defaults(I15, "%x: (1, 3, fp32)(Tensor)", T("(3,fp32)(Tensor)") "squeeze(x=%x, name=\"t\")\n", 0, NULL, 1);
  const dflt rs[] = {{"seq_axis", MIL_DT_INT32, 0, NULL}, {"batch_axis", MIL_DT_INT32, 0, NULL}};
  expect_defaults(I15, "%x: (2, 3, fp32)(Tensor), %l: (2,int32)(Tensor)", T("(2, 3, fp32)(Tensor)")
                  "reverse_sequence(x=%x, lengths=%l, name=\"t\")\n", 2, rs, 4);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_tensor_transformation), cmocka_unit_test(test_symbolic_shapes),
      cmocka_unit_test(test_tensor_operation),      cmocka_unit_test(test_multi_outputs),
      cmocka_unit_test(test_scatter_gather),        cmocka_unit_test(test_compression_states),
      cmocka_unit_test(test_variant_counts),        cmocka_unit_test(test_defaults),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
