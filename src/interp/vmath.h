/* Vectorized fp32 math for the interpreter's elementwise and activation
 * kernels (vmath.c): exp and the activations built on it, over arrays.
 *
 * Each function has an AVX-512 body and an AVX2/FMA body, one chosen once
 * at run time (__builtin_cpu_supports: AVX-512F where the CPU has it), and
 * a portable C body otherwise; all follow the same algorithm (and the two
 * vector bodies the same operations, in the same order: the AVX-512 body's
 * results are the AVX2 body's, bit for bit):
 *   exp(x) = 2^n * p(r), n = round(x / ln 2), r = x - n ln 2 (ln 2 split in
 *   two parts, |r| <= ln 2 / 2), p the degree-7 Taylor polynomial of e^r
 *   (truncation below 0.1 ulp), 2^n applied as two exact powers of two so
 *   that results down to the subnormals round once.
 * Error bounds (checked by tests/unit/test_interp_vmath.c against libm in
 * double over a sweep of inputs, both bodies):
 *   interp_vexp        within 2 ulp of exp for normal results; subnormal
 *                      results within 2 * 2^-149; overflow to +inf above
 *                      88.7228, 0 below -103.98; NaN stays NaN.
 *   interp_vsigmoid    1 / (1 + exp(-x)): within 4 ulp.
 *   interp_vsilu       x / (1 + exp(-x)): within 4 ulp.
 *   interp_vgelu_sigm  x / (1 + exp(-1.702 x)): within 4 ulp of the same
 *                      formula in double on the fp32 product 1.702f * x.
 *   For these three, results below 2^-100 in magnitude are within 2^-100
 *   (where exp(-x) overflows fp32 the quotient is 0, as the same formula
 *   with libm's expf gives). Measured worst cases: exp 1.15 ulp (portable)
 *   and 0.86 ulp (AVX2/FMA); sigmoid, silu, gelu_sigm 2.06 ulp.
 *   interp_vgelu_erf   gelu EXACT, x Phi(x), through erfc: Numerical
 *                      Recipes' erfcc fit (fractional error < 1.2e-7),
 *                      x (1 - erfc/2) for x >= 0, x erfc/2 for x < 0 (no
 *                      cancellation in the negative tail, where
 *                      0.5 x (1 + erf) loses every digit); |x| > 12.7:
 *                      x or 0. Within 5e-6 of x Phi(x) in relative terms
 *                      (3.9e-6 measured, at x near -11, where exp's
 *                      argument -x^2/2 rounds).
 *   interp_vgelu_tanh  gelu TANH_APPROXIMATION as x / (1 + exp(-2u)),
 *                      u = sqrt(2/pi) (x + 0.044715 x^3) (equal to
 *                      0.5 x (1 + tanh u)): within 2e-5 of it in relative
 *                      terms (1.0e-5 measured, at x near -9, where u
 *                      rounds).
 *   For both, results below 2^-100 in magnitude are within 2^-100.
 *   interp_vswish      x * sigmoid(x), the sigmoid rounded to fp32 first:
 *                      bit for bit interp_vsigmoid followed by an fp32
 *                      product (the SiLU that PyTorch exports as a sigmoid
 *                      and a mul, fuse.c).
 * y may equal x (in place). */
#ifndef MIL_INTERP_VMATH_H
#define MIL_INTERP_VMATH_H

#include <stdint.h>

#include "interp/interp_internal.h"

INTERP_HIDDEN void interp_vexp(const float *x, float *y, int64_t n);
INTERP_HIDDEN void interp_vsigmoid(const float *x, float *y, int64_t n);
INTERP_HIDDEN void interp_vsilu(const float *x, float *y, int64_t n);
INTERP_HIDDEN void interp_vgelu_sigm(const float *x, float *y, int64_t n);
INTERP_HIDDEN void interp_vgelu_erf(const float *x, float *y, int64_t n);
INTERP_HIDDEN void interp_vgelu_tanh(const float *x, float *y, int64_t n);

INTERP_HIDDEN void interp_vswish(const float *x, float *y, int64_t n);
INTERP_HIDDEN void interp_vswish_fp16(const float *x, float *y, int64_t n);

/* softmax of the contiguous fp32 row s (n elements) into d (softmax_row.c
 * says how; d may not overlap s): the AVX-512 body where the CPU has it
 * (interp_softmax_row_avx512 returns false, doing nothing, where it has
 * not), else the portable one; both give the same bits. */
INTERP_HIDDEN void interp_softmax_row(const float *s, float *d, int64_t n);
INTERP_HIDDEN void interp_softmax_row_portable(const float *s, float *d, int64_t n);
INTERP_HIDDEN bool interp_softmax_row_avx512(const float *s, float *d, int64_t n);

/* The bodies, for tests that compare them: INTERP_VM_AUTO is the run-time
 * choice. */
enum { INTERP_VM_AUTO = -1, INTERP_VM_PORTABLE = 0, INTERP_VM_AVX2 = 1, INTERP_VM_AVX512 = 2 };
/* Uses body `body` from now on; false (nothing changed) when this CPU or
 * build lacks it. Not thread-safe; call before running. */
INTERP_HIDDEN bool interp_vmath_force(int body);
/* The name of the body in use: "portable", "AVX2" or "AVX-512". */
INTERP_HIDDEN const char *interp_vmath_body(void);
/* true when a vector body is in use. */
INTERP_HIDDEN bool interp_vmath_simd(void);

#endif
