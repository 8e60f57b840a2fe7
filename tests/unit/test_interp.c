/* The reference interpreter (mil/interp.h): kernels against values
 * computed by hand (conv, conv_transpose, pools, matmul / linear, softmax,
 * normalizations, gather / scatter, activations, image resizing,
 * recurrent cells), control flow, lists, states across runs, fp16
 * rounding, random ops, and the error messages for bad inputs and
 * unsupported ops. Programs are written in MIL text. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "interp/interp_internal.h"
#include "mil/interp.h"
#include "mil/mil.h"
#include "mil/text.h"

typedef struct fixture {
  mil_program *p;
  mil_interp *ip;
  mil_diag d;
} fixture;

static void open_prog(fixture *f, const char *text) {
  mil_diag_init(&f->d);
  mil_parse_options po = {"test.mil", NULL};
  if (mil_parse_program(text, strlen(text), &po, &f->p, &f->d) != MIL_OK)
    fail_msg("parse: %s\n%s", mil_diag_first_error(&f->d), text);
  if (mil_interp_new(f->p, NULL, &f->ip, &f->d) != MIL_OK) fail_msg("interp_new: %s", mil_diag_first_error(&f->d));
}

static void close_prog(fixture *f) {
  mil_interp_free(f->ip);
  mil_program_free(f->p);
  mil_diag_clear(&f->d);
}

static mil_status set_in(fixture *f, const char *name, mil_dtype dt, int rank, const int64_t *shape, const void *data) {
  int64_t n = 1;
  for (int i = 0; i < rank; i++) n *= shape[i];
  mil_tensor t = {dt, rank, shape, data, (size_t)n * mil_dtype_size(dt), n};
  return mil_interp_set_input(f->ip, name, &t, &f->d);
}

static void set_f32(fixture *f, const char *name, int rank, const int64_t *shape, const float *data) {
  if (set_in(f, name, MIL_DT_FP32, rank, shape, data) != MIL_OK) fail_msg("set_input: %s", mil_diag_first_error(&f->d));
}

static void run_ok(fixture *f) {
  if (mil_interp_run(f->ip, NULL, &f->d) != MIL_OK) fail_msg("run: %s", mil_diag_first_error(&f->d));
}

static double elem(const mil_tensor *t, int64_t i) {
  switch (t->dtype) {
  case MIL_DT_FP32: return ((const float *)t->data)[i];
  case MIL_DT_FP16: return mil_fp16_to_fp32(((const uint16_t *)t->data)[i]);
  case MIL_DT_INT32: return ((const int32_t *)t->data)[i];
  case MIL_DT_BOOL: return ((const uint8_t *)t->data)[i];
  default: fail_msg("unexpected dtype %s", mil_dtype_name(t->dtype));
  }
  return 0;
}

/* Output i has the given shape and values within tol. */
static void expect_out(fixture *f, int i, int rank, const int64_t *shape, int n, const double *want, double tol) {
  const mil_tensor *t = mil_interp_output_at(f->ip, i);
  assert_non_null(t);
  if (t->rank != rank) fail_msg("output %d: rank %d, expected %d", i, t->rank, rank);
  for (int k = 0; k < rank; k++)
    if (t->shape[k] != shape[k]) fail_msg("output %d: dim %d is %lld, expected %lld", i, k, (long long)t->shape[k], (long long)shape[k]);
  if (t->numel != n) fail_msg("output %d: %lld elements, expected %d", i, (long long)t->numel, n);
  for (int k = 0; k < n; k++)
    if (!(fabs(elem(t, k) - want[k]) <= tol)) fail_msg("output %d element %d: got %.9g, expected %.9g", i, k, elem(t, k), want[k]);
}

#define SHAPE(...) ((const int64_t[]){__VA_ARGS__})
#define VALS(...) ((const float[]){__VA_ARGS__})
#define EXPECT(f, i, rank, shape, tol, ...)                                                       \
  do {                                                                                          \
    const double w_[] = {__VA_ARGS__};                                                          \
    expect_out(f, i, rank, shape, (int)(sizeof w_ / sizeof w_[0]), w_, tol);                    \
  } while (0)

/* Runs a one-input program on x and checks output 0. */
#define RUN1(text, rank, shape, xs, orank, oshape, tol, ...) \
  do {                                                       \
    fixture f_;                                              \
    open_prog(&f_, text);                                    \
    set_f32(&f_, "x", rank, shape, xs);                      \
    run_ok(&f_);                                             \
    EXPECT(&f_, 0, orank, oshape, tol, __VA_ARGS__);         \
    close_prog(&f_);                                         \
  } while (0)

#define PROG(opset, in, body, outs) "main[" opset "](" in ") {\n  block0() {\n" body "  } -> (" outs ")\n}\n"

static const float k_x9[] = {1, 2, 3, 4, 5, 6, 7, 8, 9};

/* ---------------- conv ---------------- */

static void test_conv(void **state) {
  (void)state;
  RUN1(PROG("CoreML7", "%x: (1, 1, 3, 3, fp32)(Tensor)",
            "    %w: (1, 1, 2, 2, fp32)*(Tensor) = const(val=[[[[1.0, 1.0], [1.0, 1.0]]]], name=\"w\")\n"
            "    %y: (1, 1, 2, 2, fp32)(Tensor) = conv(x=%x, weight=%w, pad_type=\"valid\", name=\"y\")\n",
            "%y"),
       4, SHAPE(1, 1, 3, 3), k_x9, 4, SHAPE(1, 1, 2, 2), 1e-6, 12, 16, 24, 28);
  /* custom padding and stride 2: windows at (-1,-1), (-1,1), (1,-1), (1,1) */
  RUN1(PROG("CoreML7", "%x: (1, 1, 3, 3, fp32)(Tensor)",
            "    %w: (1, 1, 2, 2, fp32)*(Tensor) = const(val=[[[[1.0, 1.0], [1.0, 1.0]]]], name=\"w\")\n"
            "    %y: (1, 1, 2, 2, fp32)(Tensor) = conv(x=%x, weight=%w, strides=[2, 2], pad_type=\"custom\", "
            "pad=[1, 1, 1, 1], name=\"y\")\n",
            "%y"),
       4, SHAPE(1, 1, 3, 3), k_x9, 4, SHAPE(1, 1, 2, 2), 1e-6, 1, 5, 11, 28);
  /* "same": total pad 1 per axis, the odd element after: windows start at 0 */
  RUN1(PROG("CoreML7", "%x: (1, 1, 3, 3, fp32)(Tensor)",
            "    %w: (1, 1, 2, 2, fp32)*(Tensor) = const(val=[[[[1.0, 1.0], [1.0, 1.0]]]], name=\"w\")\n"
            "    %y: (1, 1, 3, 3, fp32)(Tensor) = conv(x=%x, weight=%w, pad_type=\"same\", name=\"y\")\n",
            "%y"),
       4, SHAPE(1, 1, 3, 3), k_x9, 4, SHAPE(1, 1, 3, 3), 1e-6, 12, 16, 9, 24, 28, 15, 15, 17, 9);
  /* depthwise (groups = channels) with bias */
  RUN1(PROG("CoreML7", "%x: (1, 2, 2, 2, fp32)(Tensor)",
            "    %w: (2, 1, 2, 2, fp32)*(Tensor) = const(val=[[[[1.0, 1.0], [1.0, 1.0]]], [[[1.0, 0.0], [0.0, -1.0]]]], "
            "name=\"w\")\n"
            "    %b: (2,fp32)*(Tensor) = const(val=[0.5, 1.0], name=\"b\")\n"
            "    %y: (1, 2, 1, 1, fp32)(Tensor) = conv(x=%x, weight=%w, bias=%b, groups=2, pad_type=\"valid\", "
            "name=\"y\")\n",
            "%y"),
       4, SHAPE(1, 2, 2, 2), VALS(1, 2, 3, 4, 5, 6, 7, 8), 4, SHAPE(1, 2, 1, 1), 1e-6, 10.5, -2);
  /* grouped 1x1 (direct path) and a 1-D convolution */
  RUN1(PROG("CoreML7", "%x: (1, 4, 1, 1, fp32)(Tensor)",
            "    %w: (2, 2, 1, 1, fp32)*(Tensor) = const(val=[[[[1.0]], [[1.0]]], [[[1.0]], [[-1.0]]]], name=\"w\")\n"
            "    %y: (1, 2, 1, 1, fp32)(Tensor) = conv(x=%x, weight=%w, groups=2, pad_type=\"valid\", name=\"y\")\n",
            "%y"),
       4, SHAPE(1, 4, 1, 1), VALS(1, 2, 3, 4), 4, SHAPE(1, 2, 1, 1), 1e-6, 3, -1);
  RUN1(PROG("CoreML7", "%x: (1, 1, 5, fp32)(Tensor)",
            "    %w: (1, 1, 2, fp32)*(Tensor) = const(val=[[[1.0, -1.0]]], name=\"w\")\n"
            "    %y: (1, 1, 2, fp32)(Tensor) = conv(x=%x, weight=%w, strides=[2], dilations=[2], pad_type=\"valid\", "
            "name=\"y\")\n",
            "%y"),
       3, SHAPE(1, 1, 5), VALS(1, 2, 4, 8, 16), 3, SHAPE(1, 1, 2), 1e-6, -3, -12);
}

static void test_conv_transpose(void **state) {
  (void)state;
  RUN1(PROG("CoreML7", "%x: (1, 1, 2, 2, fp32)(Tensor)",
            "    %w: (1, 1, 2, 2, fp32)*(Tensor) = const(val=[[[[1.0, 1.0], [1.0, 1.0]]]], name=\"w\")\n"
            "    %y: (1, 1, 3, 3, fp32)(Tensor) = conv_transpose(x=%x, weight=%w, pad_type=\"valid\", name=\"y\")\n",
            "%y"),
       4, SHAPE(1, 1, 2, 2), VALS(1, 2, 3, 4), 4, SHAPE(1, 1, 3, 3), 1e-6, 1, 3, 2, 4, 10, 6, 3, 7, 4);
  RUN1(PROG("CoreML7", "%x: (1, 1, 2, 2, fp32)(Tensor)",
            "    %w: (1, 1, 2, 2, fp32)*(Tensor) = const(val=[[[[1.0, 2.0], [3.0, 4.0]]]], name=\"w\")\n"
            "    %y: (1, 1, 4, 4, fp32)(Tensor) = conv_transpose(x=%x, weight=%w, strides=[2, 2], pad_type=\"valid\", "
            "name=\"y\")\n",
            "%y"),
       4, SHAPE(1, 1, 2, 2), VALS(1, 0, 0, -1), 4, SHAPE(1, 1, 4, 4), 1e-6, 1, 2, 0, 0, 3, 4, 0, 0, 0, 0, -1, -2, 0, 0,
       -3, -4);
}

/* ---------------- pools ---------------- */

static void test_pools(void **state) {
  (void)state;
#define POOL(op, extra, oshape_txt)                                                                        \
  PROG("CoreML7", "%x: (1, 1, 3, 3, fp32)(Tensor)",                                                        \
       "    %y: " oshape_txt " = " op "(x=%x, " extra ", name=\"y\")\n", "%y")
  RUN1(POOL("max_pool", "kernel_sizes=[2, 2], strides=[1, 1], pad_type=\"valid\"", "(1, 1, 2, 2, fp32)(Tensor)"), 4,
       SHAPE(1, 1, 3, 3), k_x9, 4, SHAPE(1, 1, 2, 2), 0, 5, 6, 8, 9);
  RUN1(POOL("avg_pool", "kernel_sizes=[2, 2], strides=[1, 1], pad_type=\"valid\"", "(1, 1, 2, 2, fp32)(Tensor)"), 4,
       SHAPE(1, 1, 3, 3), k_x9, 4, SHAPE(1, 1, 2, 2), 1e-6, 3, 4, 6, 7);
  /* padding excluded from / counted in the average */
  RUN1(POOL("avg_pool",
            "kernel_sizes=[3, 3], strides=[2, 2], pad_type=\"custom\", pad=[1, 1, 1, 1], "
            "exclude_padding_from_average=True",
            "(1, 1, 2, 2, fp32)(Tensor)"),
       4, SHAPE(1, 1, 3, 3), k_x9, 4, SHAPE(1, 1, 2, 2), 1e-6, 3, 4, 6, 7);
  RUN1(POOL("avg_pool",
            "kernel_sizes=[3, 3], strides=[2, 2], pad_type=\"custom\", pad=[1, 1, 1, 1], "
            "exclude_padding_from_average=False",
            "(1, 1, 2, 2, fp32)(Tensor)"),
       4, SHAPE(1, 1, 3, 3), k_x9, 4, SHAPE(1, 1, 2, 2), 1e-6, 12.0 / 9, 16.0 / 9, 24.0 / 9, 28.0 / 9);
  /* ceil_mode keeps the partial windows */
  RUN1(POOL("max_pool", "kernel_sizes=[2, 2], strides=[2, 2], pad_type=\"valid\", ceil_mode=True",
            "(1, 1, 2, 2, fp32)(Tensor)"),
       4, SHAPE(1, 1, 3, 3), k_x9, 4, SHAPE(1, 1, 2, 2), 0, 5, 6, 8, 9);
  RUN1(POOL("l2_pool", "kernel_sizes=[3, 3], strides=[1, 1], pad_type=\"valid\"", "(1, 1, 1, 1, fp32)(Tensor)"), 4,
       SHAPE(1, 1, 3, 3), k_x9, 4, SHAPE(1, 1, 1, 1), 1e-4, sqrt(285.0));
#undef POOL
}

/* ---------------- matmul / linear ---------------- */

static void test_matmul_linear(void **state) {
  (void)state;
  const float x[] = {1, 2, 3, 4, 5, 6, 1, 0, 0, 0, 1, 0};
  RUN1(PROG("CoreML7", "%x: (2, 2, 3, fp32)(Tensor)",
            "    %w: (3, 2, fp32)*(Tensor) = const(val=[[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], name=\"w\")\n"
            "    %y: (2, 2, 2, fp32)(Tensor) = matmul(x=%x, y=%w, name=\"y\")\n",
            "%y"),
       3, SHAPE(2, 2, 3), x, 3, SHAPE(2, 2, 2), 1e-5, 22, 28, 49, 64, 1, 2, 3, 4);
  /* transpose_y and a batched y broadcast against x's batch */
  RUN1(PROG("CoreML7", "%x: (2, 2, 3, fp32)(Tensor)",
            "    %w: (1, 2, 3, fp32)*(Tensor) = const(val=[[[1.0, 3.0, 5.0], [2.0, 4.0, 6.0]]], name=\"w\")\n"
            "    %y: (2, 2, 2, fp32)(Tensor) = matmul(x=%x, y=%w, transpose_y=True, name=\"y\")\n",
            "%y"),
       3, SHAPE(2, 2, 3), x, 3, SHAPE(2, 2, 2), 1e-5, 22, 28, 49, 64, 1, 2, 3, 4);
  /* transpose_x and a rank-1 y */
  RUN1(PROG("CoreML7", "%x: (3, 2, fp32)(Tensor)",
            "    %v: (3,fp32)*(Tensor) = const(val=[1.0, 1.0, 2.0], name=\"v\")\n"
            "    %y: (2,fp32)(Tensor) = matmul(x=%x, y=%v, transpose_x=True, name=\"y\")\n",
            "%y"),
       2, SHAPE(3, 2), VALS(1, 2, 3, 4, 5, 6), 1, SHAPE(2), 1e-5, 14, 18);
  RUN1(PROG("CoreML7", "%x: (2, 3, fp32)(Tensor)",
            "    %w: (2, 3, fp32)*(Tensor) = const(val=[[1.0, 0.0, 0.0], [0.0, 1.0, 1.0]], name=\"w\")\n"
            "    %b: (2,fp32)*(Tensor) = const(val=[1.0, -1.0], name=\"b\")\n"
            "    %y: (2, 2, fp32)(Tensor) = linear(x=%x, weight=%w, bias=%b, name=\"y\")\n",
            "%y"),
       2, SHAPE(2, 3), VALS(1, 2, 3, 4, 5, 6), 2, SHAPE(2, 2), 1e-5, 2, 4, 5, 10);
  /* integer matmul runs through value inference */
  fixture f;
  open_prog(&f, PROG("CoreML7", "%x: (2, 2, int32)(Tensor)",
                     "    %y: (2, 2, int32)(Tensor) = matmul(x=%x, y=%x, name=\"y\")\n", "%y"));
  const int32_t xi[] = {1, 2, 3, 4};
  assert_int_equal(set_in(&f, "x", MIL_DT_INT32, 2, SHAPE(2, 2), xi), MIL_OK);
  run_ok(&f);
  EXPECT(&f, 0, 2, SHAPE(2, 2), 0, 7, 10, 15, 22);
  close_prog(&f);
}

/* ---------------- activations and normalization ---------------- */

static void test_softmax_activations(void **state) {
  (void)state;
  RUN1(PROG("CoreML7", "%x: (3,fp32)(Tensor)", "    %y: (3,fp32)(Tensor) = softmax(x=%x, axis=-1, name=\"y\")\n", "%y"),
       1, SHAPE(3), VALS(1, 2, 3), 1, SHAPE(3), 1e-6, 0.09003057, 0.24472847, 0.66524096);
  RUN1(PROG("CoreML7", "%x: (2, 2, fp32)(Tensor)", "    %y: (2, 2, fp32)(Tensor) = softmax(x=%x, axis=0, name=\"y\")\n",
            "%y"),
       2, SHAPE(2, 2), VALS(0, 1, 0, 3), 2, SHAPE(2, 2), 1e-6, 0.5, 0.11920292, 0.5, 0.88079708);
  RUN1(PROG("CoreML7", "%x: (3,fp32)(Tensor)", "    %y: (3,fp32)(Tensor) = silu(x=%x, name=\"y\")\n", "%y"), 1,
       SHAPE(3), VALS(0, 1, -1), 1, SHAPE(3), 1e-6, 0, 0.73105858, -0.26894142);
  RUN1(PROG("CoreML7", "%x: (2,fp32)(Tensor)", "    %y: (2,fp32)(Tensor) = gelu(x=%x, mode=\"EXACT\", name=\"y\")\n",
            "%y"),
       1, SHAPE(2), VALS(1, -2), 1, SHAPE(2), 1e-6, 0.84134475, -0.04550026);
  RUN1(PROG("CoreML7", "%x: (4,fp32)(Tensor)",
            "    %y: (4,fp32)(Tensor) = clip(x=%x, alpha=0.0, beta=6.0, name=\"y\")\n", "%y"),
       1, SHAPE(4), VALS(-1, 3, 7, 6), 1, SHAPE(4), 0, 0, 3, 6, 6);
  /* an activation without a kernel runs through value inference */
  RUN1(PROG("CoreML7", "%x: (2,fp32)(Tensor)",
            "    %y: (2,fp32)(Tensor) = thresholded_relu(x=%x, alpha=1.5, name=\"y\")\n", "%y"),
       1, SHAPE(2), VALS(1, 2), 1, SHAPE(2), 0, 0, 2);
}

static void test_normalization(void **state) {
  (void)state;
  double s = sqrt(1.25 + 1e-5);
  RUN1(PROG("CoreML7", "%x: (1, 4, fp32)(Tensor)",
            "    %g: (4,fp32)*(Tensor) = const(val=[1.0, 1.0, 1.0, 2.0], name=\"g\")\n"
            "    %b: (4,fp32)*(Tensor) = const(val=[0.0, 0.0, 0.0, 1.0], name=\"b\")\n"
            "    %y: (1, 4, fp32)(Tensor) = layer_norm(x=%x, axes=[-1], gamma=%g, beta=%b, epsilon=1e-05, name=\"y\")\n",
            "%y"),
       2, SHAPE(1, 4), VALS(1, 2, 3, 4), 2, SHAPE(1, 4), 1e-5, -1.5 / s, -0.5 / s, 0.5 / s, 2 * 1.5 / s + 1);
  RUN1(PROG("CoreML7", "%x: (1, 2, 1, 2, fp32)(Tensor)",
            "    %m: (2,fp32)*(Tensor) = const(val=[1.0, 3.0], name=\"m\")\n"
            "    %v: (2,fp32)*(Tensor) = const(val=[4.0, 1.0], name=\"v\")\n"
            "    %g: (2,fp32)*(Tensor) = const(val=[1.0, 2.0], name=\"g\")\n"
            "    %b: (2,fp32)*(Tensor) = const(val=[0.0, 1.0], name=\"b\")\n"
            "    %y: (1, 2, 1, 2, fp32)(Tensor) = batch_norm(x=%x, mean=%m, variance=%v, gamma=%g, beta=%b, "
            "epsilon=0.0, name=\"y\")\n",
            "%y"),
       4, SHAPE(1, 2, 1, 2), VALS(1, 2, 3, 4), 4, SHAPE(1, 2, 1, 2), 1e-6, 0, 0.5, 1, 3);
  RUN1(PROG("CoreML7", "%x: (1, 1, 2, 2, fp32)(Tensor)",
            "    %y: (1, 1, 2, 2, fp32)(Tensor) = instance_norm(x=%x, epsilon=1e-05, name=\"y\")\n", "%y"),
       4, SHAPE(1, 1, 2, 2), VALS(1, 2, 3, 4), 4, SHAPE(1, 1, 2, 2), 1e-5, -1.5 / s, -0.5 / s, 0.5 / s, 1.5 / s);
  /* LRN over 3 channels: x_i / (1 + 1e-4/3 * sum x_j^2)^0.75 */
  double k0 = pow(1 + 1e-4 / 3 * 5, 0.75), k1 = pow(1 + 1e-4 / 3 * 14, 0.75), k2 = pow(1 + 1e-4 / 3 * 13, 0.75);
  RUN1(PROG("CoreML7", "%x: (1, 3, 1, 1, fp32)(Tensor)",
            "    %y: (1, 3, 1, 1, fp32)(Tensor) = local_response_norm(x=%x, size=3, name=\"y\")\n", "%y"),
       4, SHAPE(1, 3, 1, 1), VALS(1, 2, 3), 4, SHAPE(1, 3, 1, 1), 1e-6, 1 / k0, 2 / k1, 3 / k2);
}

/* ---------------- data movement ---------------- */

static void test_gather_scatter(void **state) {
  (void)state;
  RUN1(PROG("CoreML7", "%x: (3, 2, fp32)(Tensor)",
            "    %i: (2,int32)*(Tensor) = const(val=[2, -3], name=\"i\")\n"
            "    %y: (2, 2, fp32)(Tensor) = gather(x=%x, indices=%i, axis=0, name=\"y\")\n",
            "%y"),
       2, SHAPE(3, 2), VALS(1, 2, 3, 4, 5, 6), 2, SHAPE(2, 2), 0, 5, 6, 1, 2);
  RUN1(PROG("CoreML7", "%x: (2, 2, fp32)(Tensor)",
            "    %i: (2, 2, int32)*(Tensor) = const(val=[[0, 1], [1, 0]], name=\"i\")\n"
            "    %y: (2,fp32)(Tensor) = gather_nd(x=%x, indices=%i, name=\"y\")\n",
            "%y"),
       2, SHAPE(2, 2), VALS(1, 2, 3, 4), 1, SHAPE(2), 0, 2, 3);
  RUN1(PROG("CoreML7", "%x: (2, 3, fp32)(Tensor)",
            "    %i: (2,int32)*(Tensor) = const(val=[0, 2], name=\"i\")\n"
            "    %u: (2, 2, fp32)*(Tensor) = const(val=[[5.0, 6.0], [7.0, 8.0]], name=\"u\")\n"
            "    %y: (2, 3, fp32)(Tensor) = scatter(data=%x, indices=%i, updates=%u, axis=1, mode=\"add\", name=\"y\")\n",
            "%y"),
       2, SHAPE(2, 3), VALS(1, 1, 1, 1, 1, 1), 2, SHAPE(2, 3), 0, 6, 1, 7, 8, 1, 9);
  RUN1(PROG("CoreML7", "%x: (2, 2, fp32)(Tensor)",
            "    %i: (1, 2, int32)*(Tensor) = const(val=[[1, 0]], name=\"i\")\n"
            "    %u: (1,fp32)*(Tensor) = const(val=[9.0], name=\"u\")\n"
            "    %y: (2, 2, fp32)(Tensor) = scatter_nd(data=%x, indices=%i, updates=%u, mode=\"update\", name=\"y\")\n",
            "%y"),
       2, SHAPE(2, 2), VALS(1, 2, 3, 4), 2, SHAPE(2, 2), 0, 1, 2, 9, 4);
  RUN1(PROG("CoreML7", "%x: (2, 3, fp32)(Tensor)",
            "    %y: (3, 2, fp32)(Tensor) = transpose(x=%x, perm=[1, 0], name=\"y\")\n"
            "    %z: (6,fp32)(Tensor) = reshape(x=%y, shape=[6], name=\"z\")\n",
            "%z"),
       2, SHAPE(2, 3), VALS(1, 2, 3, 4, 5, 6), 1, SHAPE(6), 0, 1, 4, 2, 5, 3, 6);
  /* DCR depth_to_space: out[c, h*2+i, w*2+j] = in[(i*2+j)*C' + c, h, w] */
  RUN1(PROG("CoreML7", "%x: (1, 4, 1, 1, fp32)(Tensor)",
            "    %y: (1, 1, 2, 2, fp32)(Tensor) = depth_to_space(x=%x, block_size=2, name=\"y\")\n", "%y"),
       4, SHAPE(1, 4, 1, 1), VALS(1, 2, 3, 4), 4, SHAPE(1, 1, 2, 2), 0, 1, 2, 3, 4);
  RUN1(PROG("CoreML7", "%x: (1, 2, 2, fp32)(Tensor)",
            "    %y: (1, 2, 4, fp32)(Tensor) = upsample_nearest_neighbor(x=%x, scale_factor_height=1, "
            "scale_factor_width=2, name=\"y\")\n",
            "%y"),
       3, SHAPE(1, 2, 2), VALS(1, 2, 3, 4), 3, SHAPE(1, 2, 4), 0, 1, 1, 2, 2, 3, 3, 4, 4);
  RUN1(PROG("CoreML7", "%x: (1, 1, 2, fp32)(Tensor)",
            "    %y: (1, 1, 5, fp32)(Tensor) = resize_bilinear(x=%x, target_size_height=1, target_size_width=5, "
            "sampling_mode=\"STRICT_ALIGN_CORNERS\", name=\"y\")\n",
            "%y"),
       3, SHAPE(1, 1, 2), VALS(0, 4), 3, SHAPE(1, 1, 5), 1e-6, 0, 1, 2, 3, 4);
  RUN1(PROG("CoreML7", "%x: (1, 1, 2, fp32)(Tensor)",
            "    %y: (1, 1, 5, fp32)(Tensor) = resize_bilinear(x=%x, target_size_height=1, target_size_width=5, "
            "sampling_mode=\"UNALIGN_CORNERS\", name=\"y\")\n",
            "%y"),
       3, SHAPE(1, 1, 2), VALS(0, 10), 3, SHAPE(1, 1, 5), 1e-5, 0, 1, 5, 9, 10);
}

static void test_recurrent(void **state) {
  (void)state;
  /* rnn, H = I = 1: h1 = tanh(0.5*1 + 0 + 0.1), h2 = tanh(0.5*2 + 2*h1 + 0.1) */
  double h1 = tanh(0.6), h2 = tanh(1.1 + 2 * h1);
  RUN1(PROG("CoreML7", "%x: (2, 1, 1, fp32)(Tensor)",
            "    %h0: (1, 1, fp32)*(Tensor) = const(val=[[0.0]], name=\"h0\")\n"
            "    %wi: (1, 1, fp32)*(Tensor) = const(val=[[0.5]], name=\"wi\")\n"
            "    %wh: (1, 1, fp32)*(Tensor) = const(val=[[2.0]], name=\"wh\")\n"
            "    %b: (1,fp32)*(Tensor) = const(val=[0.1], name=\"b\")\n"
            "    %y: (2, 1, 1, fp32)(Tensor), %h: (1, 1, fp32)(Tensor) = rnn(x=%x, initial_h=%h0, weight_ih=%wi, "
            "weight_hh=%wh, bias=%b, output_sequence=True, name=\"y\")\n",
            "%y, %h"),
       3, SHAPE(2, 1, 1), VALS(1, 2), 3, SHAPE(2, 1, 1), 1e-6, h1, h2);
  /* lstm, one step, zero state: c = sig(1)*tanh(1), h = sig(1)*tanh(c) */
  double sg = 1 / (1 + exp(-1.0)), c1 = sg * tanh(1.0), hh = sg * tanh(c1);
  fixture f;
  open_prog(&f, PROG("CoreML7", "%x: (1, 1, 1, fp32)(Tensor)",
                     "    %z: (1, 1, fp32)*(Tensor) = const(val=[[0.0]], name=\"z\")\n"
                     "    %wi: (4, 1, fp32)*(Tensor) = const(val=[[1.0], [1.0], [1.0], [1.0]], name=\"wi\")\n"
                     "    %wh: (4, 1, fp32)*(Tensor) = const(val=[[1.0], [1.0], [1.0], [1.0]], name=\"wh\")\n"
                     "    %y: (1, 1, 1, fp32)(Tensor), %h: (1, 1, fp32)(Tensor), %c: (1, 1, fp32)(Tensor) = "
                     "lstm(x=%x, initial_h=%z, initial_c=%z, weight_ih=%wi, weight_hh=%wh, name=\"y\")\n",
                     "%y, %h, %c"));
  set_f32(&f, "x", 3, SHAPE(1, 1, 1), VALS(1));
  run_ok(&f);
  EXPECT(&f, 0, 3, SHAPE(1, 1, 1), 1e-6, hh);
  EXPECT(&f, 2, 2, SHAPE(1, 1), 1e-6, c1);
  close_prog(&f);
}

static void test_nms(void **state) {
  (void)state;
  /* box 1 overlaps box 0 (IoU 0.905) and is suppressed; box 2 is far away */
  fixture f;
  open_prog(&f, PROG("CoreML6", "%x: (1, 3, 4, fp32)(Tensor), %s: (1, 3, 1, fp32)(Tensor)",
                     "    %b_0: (1, 3, 4, fp32)(Tensor), %b_1: (1, 3, 1, fp32)(Tensor), %b_2: (1, 3, int32)(Tensor), "
                     "%b_3: (1,int32)(Tensor) = non_maximum_suppression(boxes=%x, scores=%s, iou_threshold=0.5, "
                     "score_threshold=0.0, max_boxes=3, per_class_suppression=False, name=\"b\")\n",
                     "%b_0, %b_1, %b_2, %b_3"));
  set_f32(&f, "x", 3, SHAPE(1, 3, 4), VALS(0, 0, 2, 2, 0.1f, 0, 2, 2, 5, 5, 2, 2));
  set_f32(&f, "s", 3, SHAPE(1, 3, 1), VALS(0.9f, 0.8f, 0.7f));
  run_ok(&f);
  EXPECT(&f, 0, 3, SHAPE(1, 3, 4), 0, 0, 0, 2, 2, 5, 5, 2, 2, 0, 0, 0, 0);
  EXPECT(&f, 1, 3, SHAPE(1, 3, 1), 1e-7, 0.9, 0.7, 0);
  EXPECT(&f, 2, 2, SHAPE(1, 3), 0, 0, 2, -1);
  EXPECT(&f, 3, 1, SHAPE(1), 0, 2);
  close_prog(&f);
}

/* ---------------- control flow, lists, states ---------------- */

static void test_control_flow(void **state) {
  (void)state;
  static const char *loop =
      PROG("CoreML7", "%x: (fp32)(Scalar), %n: (int32)(Scalar)",
           "    %i0: (int32)*(Scalar) = const(val=0, name=\"i0\")\n"
           "    %k_0: (int32)(Scalar), %k_1: (fp32)(Scalar) = while_loop(loop_vars=(%i0, %x), name=\"k\")\n"
           "      k_cond(%i: (int32)(Scalar), %a: (fp32)(Scalar)) {\n"
           "        %lt: (bool)(Scalar) = less(x=%i, y=%n, name=\"lt\")\n"
           "      } -> (%lt)\n"
           "      k_body(%i: (int32)(Scalar), %a: (fp32)(Scalar)) {\n"
           "        %one: (int32)*(Scalar) = const(val=1, name=\"one\")\n"
           "        %i2: (int32)(Scalar) = add(x=%i, y=%one, name=\"i2\")\n"
           "        %a2: (fp32)(Scalar) = mul(x=%a, y=2.0, name=\"a2\")\n"
           "      } -> (%i2, %a2)\n"
           "    %p: (bool)(Scalar) = greater(x=%k_1, y=10.0, name=\"p\")\n"
           "    %c: (fp32)(Scalar) = cond(pred=%p, name=\"c\")\n"
           "      c_true() {\n"
           "        %t: (fp32)(Scalar) = add(x=%k_1, y=1.0, name=\"t\")\n"
           "      } -> (%t)\n"
           "      c_false() {\n"
           "        %e: (fp32)(Scalar) = sub(x=%k_1, y=1.0, name=\"e\")\n"
           "      } -> (%e)\n",
           "%k_0, %c");
  fixture f;
  open_prog(&f, loop);
  float x = 1.5f;
  int32_t n = 3;
  assert_int_equal(set_in(&f, "x", MIL_DT_FP32, 0, NULL, &x), MIL_OK);
  assert_int_equal(set_in(&f, "n", MIL_DT_INT32, 0, NULL, &n), MIL_OK);
  run_ok(&f);
  EXPECT(&f, 0, 0, NULL, 0, 3);
  EXPECT(&f, 1, 0, NULL, 0, 13); /* 1.5 * 2^3 = 12 > 10: 12 + 1 */
  n = 1; /* 3.0, not > 10 -> 2.0 */
  assert_int_equal(set_in(&f, "n", MIL_DT_INT32, 0, NULL, &n), MIL_OK);
  run_ok(&f);
  EXPECT(&f, 1, 0, NULL, 0, 2);
  /* an endless loop stops at the iteration limit */
  n = 1000;
  mil_interp_set_max_iterations(f.ip, 10);
  assert_int_equal(set_in(&f, "n", MIL_DT_INT32, 0, NULL, &n), MIL_OK);
  assert_int_equal(mil_interp_run(f.ip, NULL, &f.d), MIL_ERR_INVALID);
  assert_non_null(strstr(mil_diag_first_error(&f.d), "more than 10 iterations"));
  close_prog(&f);
}

static void test_lists(void **state) {
  (void)state;
  fixture f;
  open_prog(&f, PROG("CoreML7", "%x: (2,fp32)(Tensor)",
                     "    %two: (int32)*(Scalar) = const(val=2, name=\"two\")\n"
                     "    %l: List[?, (2,fp32)](List) = make_list(init_length=0, dynamic_length=True, "
                     "elem_shape=(%two), dtype=\"fp32\", name=\"l\")\n"
                     "    %i0: (int32)*(Scalar) = const(val=0, name=\"i0\")\n"
                     "    %i2: (int32)*(Scalar) = const(val=2, name=\"i2\")\n"
                     "    %l1: List[?, (2,fp32)](List) = list_write(ls=%l, index=%i0, value=%x, name=\"l1\")\n"
                     "    %y: (2,fp32)(Tensor) = mul(x=%x, y=10.0, name=\"y\")\n"
                     "    %l2: List[?, (2,fp32)](List) = list_write(ls=%l1, index=%i2, value=%y, name=\"l2\")\n"
                     "    %n: (int32)(Scalar) = list_length(ls=%l2, name=\"n\")\n"
                     "    %r: (2,fp32)(Tensor) = list_read(ls=%l2, index=%i2, name=\"r\")\n"
                     "    %gi: (3,int32)*(Tensor) = const(val=[2, 1, 0], name=\"gi\")\n"
                     "    %g: (3, 2, fp32)(Tensor) = list_gather(ls=%l2, indices=%gi, name=\"g\")\n",
                     "%n, %r, %g"));
  set_f32(&f, "x", 1, SHAPE(2), VALS(1, 2));
  run_ok(&f);
  EXPECT(&f, 0, 0, NULL, 0, 3);
  EXPECT(&f, 1, 1, SHAPE(2), 0, 10, 20);
  EXPECT(&f, 2, 2, SHAPE(3, 2), 0, 10, 20, 0, 0, 1, 2); /* element 1 was never written: zeros */
  close_prog(&f);
}

static void test_state_across_runs(void **state) {
  (void)state;
  fixture f;
  open_prog(&f, PROG("CoreML8", "%x: (2,fp16)(Tensor), %acc: (2,fp16)(State)",
                     "    %r: (2,fp16)(Tensor) = read_state(input=%acc, name=\"r\")\n"
                     "    %s: (2,fp16)(Tensor) = add(x=%r, y=%x, name=\"s\")\n"
                     "    %u: (2,fp16)(Tensor) = coreml_update_state(state=%acc, value=%s, name=\"u\")\n"
                     "    %z: (2,fp16)(Tensor) = read_state(input=%acc, name=\"z\")\n",
                     "%u, %z"));
  mil_interp_state *st;
  assert_int_equal(mil_interp_state_new(f.ip, &st, &f.d), MIL_OK);
  uint16_t x[2] = {mil_fp32_to_fp16(1.0f), mil_fp32_to_fp16(2.5f)};
  assert_int_equal(set_in(&f, "x", MIL_DT_FP16, 1, SHAPE(2), x), MIL_OK);
  for (int k = 1; k <= 3; k++) {
    assert_int_equal(mil_interp_run(f.ip, st, &f.d), MIL_OK);
    EXPECT(&f, 0, 1, SHAPE(2), 0, 1.0 * k, 2.5 * k);
    EXPECT(&f, 1, 1, SHAPE(2), 0, 1.0 * k, 2.5 * k); /* a read after the update sees it */
  }
  const mil_tensor *t = mil_interp_state_get(st, "acc");
  assert_non_null(t);
  assert_true(mil_fp16_to_fp32(((const uint16_t *)t->data)[1]) == 7.5f);
  /* a fresh state starts from zeros; the interpreter's own state is separate */
  assert_int_equal(mil_interp_run(f.ip, NULL, &f.d), MIL_OK);
  EXPECT(&f, 0, 1, SHAPE(2), 0, 1, 2.5);
  mil_interp_state_free(st);
  close_prog(&f);
}

/* ---------------- numerics ---------------- */

static void test_fp16_rounding(void **state) {
  (void)state;
  /* 2048 + 1 = 2049 is not an fp16 value: the output rounds to even (2048);
   * the same program in fp32 keeps 2049 */
  fixture f;
  open_prog(&f, PROG("CoreML7", "%x: (2,fp16)(Tensor)",
                     "    %one: (fp16)*(Scalar) = const(val=1.0, name=\"one\")\n"
                     "    %y: (2,fp16)(Tensor) = add(x=%x, y=%one, name=\"y\")\n"
                     "    %w: (1, 2, fp16)*(Tensor) = const(val=[[1.0, 1.0]], name=\"w\")\n"
                     "    %r: (1, 2, fp16)(Tensor) = reshape(x=%x, shape=[1, 2], name=\"r\")\n"
                     "    %l: (1, 1, fp16)(Tensor) = linear(x=%r, weight=%w, name=\"l\")\n",
                     "%y, %l"));
  uint16_t x[2] = {mil_fp32_to_fp16(2048.0f), mil_fp32_to_fp16(3.0f)};
  assert_int_equal(set_in(&f, "x", MIL_DT_FP16, 1, SHAPE(2), x), MIL_OK);
  run_ok(&f);
  EXPECT(&f, 0, 1, SHAPE(2), 0, 2048, 4);
  EXPECT(&f, 1, 2, SHAPE(1, 1), 0, 2052); /* 2051 -> nearest fp16 (step 2) ties to even: 2052 */
  assert_int_equal(mil_interp_output_at(f.ip, 0)->dtype, MIL_DT_FP16);
  close_prog(&f);
  RUN1(PROG("CoreML7", "%x: (1,fp32)(Tensor)", "    %y: (1,fp32)(Tensor) = add(x=%x, y=1.0, name=\"y\")\n", "%y"), 1,
       SHAPE(1), VALS(2048), 1, SHAPE(1), 0, 2049);
}

/* The interpreter's fp32 -> fp16 conversion agrees with the core's on
 * every fp16 value, the midpoints between neighbours (ties to even), points
 * just off the midpoints, the subnormal range, overflow and NaN. */
static void test_fp16_conversion(void **state) {
  (void)state;
  for (uint32_t h = 0; h < 0x7c00; h++) {
    float a = mil_fp16_to_fp32((uint16_t)h), b = mil_fp16_to_fp32((uint16_t)(h + 1));
    float mid = (a + b) / 2, probes[] = {a, mid, nextafterf(mid, 0), nextafterf(mid, INFINITY), -a, -mid};
    for (size_t k = 0; k < sizeof probes / sizeof probes[0]; k++)
      if (interp_f2h(probes[k]) != mil_fp32_to_fp16(probes[k]))
        fail_msg("%.9g: 0x%04x, expected 0x%04x", probes[k], interp_f2h(probes[k]), mil_fp32_to_fp16(probes[k]));
  }
  const float edge[] = {65504.0f, 65519.99f, 65520.0f, 1e9f, INFINITY, -INFINITY, 1e-9f, 2.9e-8f, 3.0e-8f, 0.0f, -0.0f};
  for (size_t k = 0; k < sizeof edge / sizeof edge[0]; k++) assert_int_equal(interp_f2h(edge[k]), mil_fp32_to_fp16(edge[k]));
  assert_int_equal(interp_f2h(NAN) & 0x7fff, 0x7e00);
}

static void test_random_deterministic(void **state) {
  (void)state;
  const char *text = PROG("CoreML7", "%x: (1,fp32)(Tensor)",
                          "    %u: (1000,fp32)(Tensor) = random_uniform(shape=[1000], low=-1.0, high=1.0, seed=-1, "
                          "name=\"u\")\n"
                          "    %s: (1000,fp32)(Tensor) = random_normal(shape=[1000], mean=0.0, stddev=1.0, seed=7, "
                          "name=\"s\")\n",
                          "%u, %s");
  fixture f;
  open_prog(&f, text);
  set_f32(&f, "x", 1, SHAPE(1), VALS(0));
  run_ok(&f);
  float a[1000], b[1000];
  const mil_tensor *u = mil_interp_output_at(f.ip, 0), *nrm = mil_interp_output_at(f.ip, 1);
  double mean = 0, var = 0;
  for (int i = 0; i < 1000; i++) {
    a[i] = ((const float *)u->data)[i];
    b[i] = ((const float *)nrm->data)[i];
    assert_true(a[i] >= -1.0f && a[i] < 1.0f);
    mean += b[i];
    var += (double)b[i] * b[i];
  }
  mean /= 1000;
  var = var / 1000 - mean * mean;
  assert_true(fabs(mean) < 0.15 && var > 0.8 && var < 1.2);
  run_ok(&f); /* same seeds, same values */
  assert_memory_equal(a, mil_interp_output_at(f.ip, 0)->data, sizeof a);
  mil_interp_set_seed(f.ip, 99); /* changes only the op whose seed is -1 */
  run_ok(&f);
  assert_memory_not_equal(a, mil_interp_output_at(f.ip, 0)->data, sizeof a);
  assert_memory_equal(b, mil_interp_output_at(f.ip, 1)->data, sizeof b);
  close_prog(&f);
}

static void test_symbolic_input(void **state) {
  (void)state;
  fixture f;
  open_prog(&f, PROG("CoreML7", "%x: (is0, 2, fp32)(Tensor)",
                     "    %r: (is0, 2, fp32)(Tensor) = relu(x=%x, name=\"r\")\n"
                     "    %s: (is0,fp32)(Tensor) = reduce_sum(x=%r, axes=[1], keep_dims=False, name=\"s\")\n",
                     "%s"));
  set_f32(&f, "x", 2, SHAPE(3, 2), VALS(1, -1, 2, 3, -4, -5));
  run_ok(&f);
  EXPECT(&f, 0, 1, SHAPE(3), 0, 1, 5, 0);
  set_f32(&f, "x", 2, SHAPE(1, 2), VALS(7, 1));
  run_ok(&f);
  EXPECT(&f, 0, 1, SHAPE(1), 0, 8);
  close_prog(&f);
}

/* The interpreter works on its own copy: the program may be freed. */
static void test_program_freed(void **state) {
  (void)state;
  fixture f;
  open_prog(&f, PROG("CoreML7", "%x: (2,fp32)(Tensor)",
                     "    %c: (2,fp32)*(Tensor) = const(val=[10.0, 20.0], name=\"c\")\n"
                     "    %y: (2,fp32)(Tensor) = add(x=%x, y=%c, name=\"y\")\n",
                     "%y"));
  mil_program_free(f.p);
  f.p = NULL;
  assert_string_equal(mil_interp_input_name(f.ip, 0), "x");
  assert_int_equal(mil_interp_input_type(f.ip, 0)->dtype, MIL_DT_FP32);
  set_f32(&f, "x", 1, SHAPE(2), VALS(1, 2));
  run_ok(&f);
  run_ok(&f);
  EXPECT(&f, 0, 1, SHAPE(2), 0, 11, 22);
  assert_non_null(mil_interp_output(f.ip, "y"));
  close_prog(&f);
}

/* ---------------- errors ---------------- */

static void expect_error(fixture *f, mil_status got, mil_status want, const char *needle) {
  if (got != want) fail_msg("status %s, expected %s", mil_status_str(got), mil_status_str(want));
  const char *m = mil_diag_first_error(&f->d);
  if (!m || !strstr(m, needle)) fail_msg("message \"%s\" does not mention \"%s\"", m ? m : "(none)", needle);
  mil_diag_clear(&f->d);
}

static void test_errors(void **state) {
  (void)state;
  fixture f;
  open_prog(&f, PROG("CoreML7", "%x: (2, 3, fp32)(Tensor)", "    %y: (2, 3, fp32)(Tensor) = relu(x=%x, name=\"y\")\n",
                     "%y"));
  expect_error(&f, mil_interp_run(f.ip, NULL, &f.d), MIL_ERR_INVALID, "input 'x' (2, 3, fp32) was not set");
  const float z[6] = {0};
  expect_error(&f, set_in(&f, "x", MIL_DT_FP32, 2, SHAPE(2, 4), z), MIL_ERR_TYPE, "dimension 1 must be 3");
  expect_error(&f, set_in(&f, "x", MIL_DT_FP32, 1, SHAPE(6), z), MIL_ERR_TYPE, "expected rank 2");
  expect_error(&f, set_in(&f, "x", MIL_DT_INT32, 2, SHAPE(2, 3), z), MIL_ERR_TYPE, "expected dtype fp32");
  expect_error(&f, set_in(&f, "nope", MIL_DT_FP32, 2, SHAPE(2, 3), z), MIL_ERR_NOT_FOUND, "inputs: 'x'");
  assert_null(mil_interp_output(f.ip, "y")); /* no successful run yet */
  close_prog(&f);

  /* an op the interpreter cannot execute for these inputs names itself */
  open_prog(&f, PROG("CoreML5", "%x: (1, 1, 2, 2, fp32)(Tensor)",
                     "    %w: (1, 1, 1, 1, uint8)*(Tensor) = const(val=[[[[3]]]], name=\"w\")\n"
                     "    %y: (1, 1, 2, 2, fp32)(Tensor) = conv_quantized(x=%x, weight=%w, quantization_type=\"lut\", "
                     "quant_scale=1.0, quant_bias=0.0, name=\"y\")\n",
                     "%y"));
  const float rx[4] = {0};
  set_f32(&f, "x", 4, SHAPE(1, 1, 2, 2), rx);
  expect_error(&f, mil_interp_run(f.ip, NULL, &f.d), MIL_ERR_UNSUPPORTED,
               "op 'y' (conv_quantized): quantization_type \"lut\" cannot run");
  close_prog(&f);
  assert_true(mil_interp_supports_op("resample", MIL_IOS17));
  assert_false(mil_interp_supports_op("resample", MIL_IOS14)); /* registered from iOS15 on */
  assert_true(mil_interp_supports_op("conv", MIL_IOS17));
  assert_true(mil_interp_supports_op("reduce_mean", MIL_IOS17)); /* through value inference */

  /* a gather index out of range is an error, not a crash */
  open_prog(&f, PROG("CoreML7", "%x: (2,fp32)(Tensor), %i: (1, 1, int32)(Tensor)",
                     "    %y: (1,fp32)(Tensor) = gather_nd(x=%x, indices=%i, name=\"y\")\n", "%y"));
  int32_t bad = 5;
  set_f32(&f, "x", 1, SHAPE(2), VALS(1, 2));
  assert_int_equal(set_in(&f, "i", MIL_DT_INT32, 2, SHAPE(1, 1), &bad), MIL_OK);
  expect_error(&f, mil_interp_run(f.ip, NULL, &f.d), MIL_ERR_INVALID, "index 5 is out of range");
  close_prog(&f);

  mil_diag d;
  mil_diag_init(&d);
  mil_program *p = mil_program_new(NULL);
  mil_interp *ip = NULL;
  assert_int_equal(mil_interp_new(p, "main", &ip, &d), MIL_ERR_NOT_FOUND);
  assert_null(ip);
  mil_program_free(p);
  mil_diag_clear(&d);
}

/* The per-value limit: a used fill of 2^40 floats, or a tile by 2^30
 * reaching an output, fails before its allocation, naming the op, the
 * output's shape and size and the limit; a value of exactly the limit runs. */
static void test_max_value_bytes(void **state) {
  (void)state;
  int64_t dflt = mil_interp_default_max_value_bytes();
  assert_true(dflt > 0 && dflt <= MIL_TENSOR_MAX_BYTES);
  fixture f;
  open_prog(&f, PROG("CoreML7", "%x: (1, fp32)(Tensor)",
                     "    %s: (2, int32)*(Tensor) = const(val=[1048576, 1048576], name=\"s\")\n"
                     "    %y: (1048576, 1048576, fp32)(Tensor) = fill(shape=%s, value=1.0, name=\"y\")\n",
                     "%y"));
  assert_int_equal(mil_interp_max_value_bytes(f.ip), dflt);
  set_f32(&f, "x", 1, SHAPE(1), VALS(0));
  char want[200];
  snprintf(want, sizeof want,
           "function 'main': op 'y' (fill): output 0 %%y (1048576, 1048576, fp32) would take 4398046511104 bytes, "
           "more than the limit of %lld bytes on one value",
           (long long)dflt);
  expect_error(&f, mil_interp_run(f.ip, NULL, &f.d), MIL_ERR_NOMEM, want);
  assert_null(mil_interp_output(f.ip, "y"));
  close_prog(&f);

  /* 1024 floats: 4096 bytes */
  open_prog(&f, PROG("CoreML7", "%x: (2, fp32)(Tensor)",
                     "    %r: (1, int32)*(Tensor) = const(val=[512], name=\"r\")\n"
                     "    %y: (1024, fp32)(Tensor) = tile(x=%x, reps=%r, name=\"y\")\n",
                     "%y"));
  set_f32(&f, "x", 1, SHAPE(2), VALS(1, 2));
  mil_interp_set_max_value_bytes(f.ip, 4095);
  assert_int_equal(mil_interp_max_value_bytes(f.ip), 4095);
  expect_error(&f, mil_interp_run(f.ip, NULL, &f.d), MIL_ERR_NOMEM,
               "op 'y' (tile): output 0 %y (1024,fp32) would take 4096 bytes, more than the limit of 4095 bytes");
  mil_interp_set_max_value_bytes(f.ip, 4096);
  run_ok(&f);
  const mil_tensor *y = mil_interp_output(f.ip, "y");
  assert_non_null(y);
  assert_int_equal(y->numel, 1024);
  assert_true(((const float *)y->data)[1023] == 2.0f);
  mil_interp_set_max_value_bytes(f.ip, 0); /* back to the default */
  assert_int_equal(mil_interp_max_value_bytes(f.ip), dflt);
  close_prog(&f);

  /* a tile by 2^30 (2^31 floats) whose result is an output */
  open_prog(&f, PROG("CoreML7", "%x: (2, fp32)(Tensor)",
                     "    %r: (1, int32)*(Tensor) = const(val=[1073741824], name=\"r\")\n"
                     "    %y: (2147483648, fp32)(Tensor) = tile(x=%x, reps=%r, name=\"y\")\n",
                     "%y"));
  set_f32(&f, "x", 1, SHAPE(2), VALS(1, 2));
  mil_interp_set_max_value_bytes(f.ip, (int64_t)1 << 30);
  expect_error(&f, mil_interp_run(f.ip, NULL, &f.d), MIL_ERR_NOMEM,
               "output 0 %y (2147483648,fp32) would take 8589934592 bytes, more than the limit of 1073741824 bytes");
  close_prog(&f);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_conv),
      cmocka_unit_test(test_conv_transpose),
      cmocka_unit_test(test_pools),
      cmocka_unit_test(test_matmul_linear),
      cmocka_unit_test(test_softmax_activations),
      cmocka_unit_test(test_normalization),
      cmocka_unit_test(test_gather_scatter),
      cmocka_unit_test(test_recurrent),
      cmocka_unit_test(test_nms),
      cmocka_unit_test(test_control_flow),
      cmocka_unit_test(test_lists),
      cmocka_unit_test(test_state_across_runs),
      cmocka_unit_test(test_fp16_rounding),
      cmocka_unit_test(test_fp16_conversion),
      cmocka_unit_test(test_random_deterministic),
      cmocka_unit_test(test_symbolic_input),
      cmocka_unit_test(test_program_freed),
      cmocka_unit_test(test_errors),
      cmocka_unit_test(test_max_value_bytes),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
