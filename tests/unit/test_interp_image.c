/* The interpreter's sampling kernels (src/interp/image_sample.c) against
 * the expected values of coremltools' own tests, which Core ML produced:
 * ops/tests/iOS15/test_image_resizing.py (TestResample, TestAffine),
 * iOS14 (TestCropResize, modes 0..4), iOS16 (crop_resize with pad_value)
 * and iOS17 (crop_resize with boxes / box_indices), plus a conv_quantized
 * worked out from W = W_q * quant_scale + quant_bias (iOS15/conv.py). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "interp_fixture.h"

static const float k_x4[] = {11, 22, 33, 44};
static const int64_t k_s1122[] = {1, 1, 2, 2};

/* ---------- resample ---------- */

static void run_resample(const char *coord_dtype, const void *coords, mil_dtype cdt, const char *args,
                         const double *want) {
  char text[1024];
  snprintf(text, sizeof text,
           "main[CoreML5](%%x: (1, 1, 2, 2, fp32)(Tensor), %%c: (1, 2, 2, 2, %s)(Tensor)) {\n"
           "  block0() {\n"
           "    %%y: (1, 1, 2, 2, fp32)(Tensor) = resample(x=%%x, coordinates=%%c, %s, name=\"y\")\n"
           "  } -> (%%y)\n"
           "}\n",
           coord_dtype, args);
  ifix f;
  ifix_open(&f, text);
  static const int64_t cs[] = {1, 2, 2, 2};
  ifix_set(&f, "x", MIL_DT_FP32, 4, k_s1122, k_x4);
  ifix_set(&f, "c", cdt, 4, cs, coords);
  ifix_run(&f);
  ifix_expect(&f, 0, 4, k_s1122, 4, want, 1e-4);
  ifix_close(&f);
}

static const char *const k_resample_args[4] = {
    "sampling_mode=\"bilinear\", padding_mode=\"constant\", padding_value=6.17, "
    "coordinates_mode=\"normalized_minus_one_to_one\", align_corners=True",
    "sampling_mode=\"nearest\", padding_mode=\"border\", padding_value=-1.0, coordinates_mode=\"unnormalized\", "
    "align_corners=False",
    "sampling_mode=\"bilinear\", padding_mode=\"reflection\", padding_value=-1.0, "
    "coordinates_mode=\"normalized_zero_to_one\", align_corners=True",
    "sampling_mode=\"nearest\", padding_mode=\"symmetric\", padding_value=-1.0, "
    "coordinates_mode=\"normalized_zero_to_one\", align_corners=False",
};

static void test_resample(void **state) {
  (void)state;
  static const float cf[] = {-1.0f, -2.0f, -3.7f, -1.0f, 0.0f, 0.0f, 3.5f, 1.2f};
  static const int32_t ci[] = {0, 0, 1, 1, 0, 0, 1, 1};
  static const double want_f[4][4] = {
      {8.585, 6.17, 27.5, 6.17}, {11, 11, 11, 44}, {22, 36.3, 11, 34.1}, {22, 33, 11, 33}};
  static const double want_i[4][4] = {{27.5, 44, 27.5, 44}, {11, 44, 11, 44}, {11, 44, 11, 44}, {11, 44, 11, 44}};
  for (int k = 0; k < 4; k++) {
    run_resample("fp32", cf, MIL_DT_FP32, k_resample_args[k], want_f[k]);
    run_resample("int32", ci, MIL_DT_INT32, k_resample_args[k], want_i[k]);
  }
}

/* ---------- affine ---------- */

static void test_affine(void **state) {
  (void)state;
  static const char *text =
      "main[CoreML5](%x: (1, 1, 2, 2, fp32)(Tensor), %m: (1, 6, fp32)(Tensor)) {\n"
      "  block0() {\n"
      "    %a: (1, 1, 3, 3, fp32)(Tensor) = affine(x=%x, transform_matrix=%m, output_height=3, output_width=3, "
      "sampling_mode=\"bilinear\", padding_mode=\"constant\", padding_value=0.0, "
      "coordinates_mode=\"normalized_minus_one_to_one\", align_corners=True, name=\"a\")\n"
      "    %b: (1, 1, 2, 5, fp32)(Tensor) = affine(x=%x, transform_matrix=%m, output_height=2, output_width=5, "
      "sampling_mode=\"bilinear\", padding_mode=\"constant\", padding_value=0.0, "
      "coordinates_mode=\"normalized_minus_one_to_one\", align_corners=True, name=\"b\")\n"
      "  } -> (%a, %b)\n"
      "}\n";
  static const float m[] = {-1.0f, -2.0f, -3.7f, -1.0f, 3.5f, 1.2f};
  static const int64_t ms[] = {1, 6}, s33[] = {1, 1, 3, 3}, s25[] = {1, 1, 2, 5};
  static const double want_a[] = {10.752501, 2.5025, 0.0, 1.9799997, 0.0, 0.0, 0.0, 0.0, 0.0};
  static const double want_b[] = {10.752501, 5.94, 2.5025, 0.44000006, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0};
  ifix f;
  ifix_open(&f, text);
  ifix_set(&f, "x", MIL_DT_FP32, 4, k_s1122, k_x4);
  ifix_set(&f, "m", MIL_DT_FP32, 2, ms, m);
  ifix_run(&f);
  ifix_expect(&f, 0, 4, s33, 9, want_a, 1e-4);
  ifix_expect(&f, 1, 4, s25, 10, want_b, 1e-4);
  ifix_close(&f);
}

/* ---------- crop_resize ---------- */

static const float k_x16[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};
static const int64_t k_s1144[] = {1, 1, 4, 4};

/* crop_resize before iOS17: roi (N, 1, per, 1, 1) given as an input. */
static void run_crop13(const char *opset, int per, int n, const float *roi, int th, int tw, const char *args,
                       const double *want, double tol) {
  char text[1024];
  snprintf(text, sizeof text,
           "main[%s](%%x: (1, 1, 4, 4, fp32)(Tensor), %%r: (%d, 1, %d, 1, 1, fp32)(Tensor)) {\n"
           "  block0() {\n"
           "    %%y: (%d, 1, 1, %d, %d, fp32)(Tensor) = crop_resize(x=%%x, roi=%%r, target_height=%d, "
           "target_width=%d, %s, name=\"y\")\n"
           "  } -> (%%y)\n"
           "}\n",
           opset, n, per, n, th, tw, th, tw, args);
  ifix f;
  ifix_open(&f, text);
  int64_t rs[] = {n, 1, per, 1, 1}, os[] = {n, 1, 1, th, tw};
  ifix_set(&f, "x", MIL_DT_FP32, 4, k_s1144, k_x16);
  ifix_set(&f, "r", MIL_DT_FP32, 5, rs, roi);
  ifix_run(&f);
  ifix_expect(&f, 0, 5, os, n * th * tw, want, tol);
  ifix_close(&f);
}

static void test_crop_resize_ios14(void **state) {
  (void)state;
  static const float roi[] = {1, 1, 2, 2}, roi_norm[] = {0, 0.0f, 0.0f, 1.0f / 3, 1.0f / 3}, roi_inv[] = {2, 2, 1, 1};
  static const char *align = "normalized_coordinates=False, box_coordinate_mode=\"CORNERS_HEIGHT_FIRST\", "
                             "sampling_mode=\"ALIGN_CORNERS\"";
  static const double w0[] = {6, 7, 10, 11};
  static const double w1[] = {6, 6.333333, 6.666666, 7, 7.333333, 7.666666, 8, 8.333333,
                              8.666666, 9, 9.333333, 9.666666, 10, 10.333333, 10.666666, 11};
  static const double w2[] = {8.5}, w3[] = {1, 2, 5, 6}, w4[] = {11, 10, 7, 6};
  run_crop13("CoreML3", 4, 1, roi, 2, 2, align, w0, 1e-4);
  run_crop13("CoreML3", 4, 1, roi, 4, 4, align, w1, 1e-4);
  run_crop13("CoreML3", 4, 1, roi, 1, 1, align, w2, 1e-4);
  run_crop13("CoreML3", 5, 1, roi_norm, 2, 2,
             "normalized_coordinates=True, box_coordinate_mode=\"CORNERS_HEIGHT_FIRST\", "
             "sampling_mode=\"ALIGN_CORNERS\"",
             w3, 1e-4);
  run_crop13("CoreML3", 4, 1, roi_inv, 2, 2, align, w4, 1e-4);
}

/* coremltools' expected 7.899 is Core ML's fp16 result: 7.9 rounded to fp16
 * is 7.8984375; the exact value is 7.9 (x at row 1.5, column 0.9). */
#define FP16_TOL 2e-3

static void test_crop_resize_ios16_pad(void **state) {
  (void)state;
  static const float roi[] = {0, 0.1f, 0.3f, 1.3f, 1, 0, 0.5f, 1.8f, 1.0f, 0.3f, 0, 0.0f, 0.4f, 0.6f, 0.7f};
  static const double pads[] = {0.0, 1.0, 10.0};
  for (int k = 0; k < 3; k++) {
    double p = pads[k];
    double want[] = {3.1, 5.2, p, p, p, 7.899, p, 13.9, 2.2, 3.1, 9.4, 10.3};
    char args[256];
    snprintf(args, sizeof args,
             "normalized_coordinates=True, box_coordinate_mode=\"CORNERS_HEIGHT_FIRST\", "
             "sampling_mode=\"ALIGN_CORNERS\", pad_value=%.1f",
             p);
    run_crop13("CoreML6", 5, 3, roi, 2, 2, args, want, FP16_TOL);
  }
}

static void test_crop_resize_ios17(void **state) {
  (void)state;
  static const char *text1 =
      "main[CoreML7](%x: (1, 1, 4, 4, fp32)(Tensor)) {\n"
      "  block0() {\n"
      "    %y: (1, 1, 2, 2, fp32)(Tensor) = crop_resize(x=%x, boxes=[[1.0, 1.0, 2.0, 2.0]], target_height=2, "
      "target_width=2, normalized_coordinates=False, box_coordinate_mode=\"CORNERS_HEIGHT_FIRST\", "
      "sampling_mode=\"ALIGN_CORNERS\", pad_value=10.0, name=\"y\")\n"
      "  } -> (%y)\n"
      "}\n";
  static const char *text3 =
      "main[CoreML7](%x: (1, 1, 4, 4, fp32)(Tensor)) {\n"
      "  block0() {\n"
      "    %y: (3, 1, 2, 2, fp32)(Tensor) = crop_resize(x=%x, boxes=[[0.1, 0.3, 1.3, 1.0], [0.5, 1.8, 1.0, 0.3], "
      "[0.0, 0.4, 0.6, 0.7]], box_indices=[0, 0, 0], target_height=2, target_width=2, normalized_coordinates=True, "
      "box_coordinate_mode=\"CORNERS_HEIGHT_FIRST\", sampling_mode=\"ALIGN_CORNERS\", pad_value=10.0, name=\"y\")\n"
      "  } -> (%y)\n"
      "}\n";
  static const double want1[] = {6, 7, 10, 11};
  static const double want3[] = {3.1, 5.2, 10.0, 10.0, 10.0, 7.899, 10.0, 13.9, 2.2, 3.1, 9.4, 10.3};
  static const int64_t s1[] = {1, 1, 2, 2}, s3[] = {3, 1, 2, 2};
  ifix f;
  ifix_open(&f, text1);
  ifix_set(&f, "x", MIL_DT_FP32, 4, k_s1144, k_x16);
  ifix_run(&f);
  ifix_expect(&f, 0, 4, s1, 4, want1, 1e-4);
  ifix_close(&f);
  ifix_open(&f, text3);
  ifix_set(&f, "x", MIL_DT_FP32, 4, k_s1144, k_x16);
  ifix_run(&f);
  ifix_expect(&f, 0, 4, s3, 12, want3, FP16_TOL);
  ifix_close(&f);
}

/* ---------- conv_quantized ---------- */

/* W = W_q * quant_scale + quant_bias per output channel:
 * channel 0: [1 2; 3 4] * 0.5 - 1 = [-0.5 0; 0.5 1];
 * channel 1: [0 1; 0 1] * 2 + 0.5 = [0.5 2.5; 0.5 2.5];
 * over x = 1..9 (3x3), valid: windows [1 2 4 5], [2 3 5 6], [4 5 7 8], [5 6 8 9]. */
static void test_conv_quantized(void **state) {
  (void)state;
  static const char *text =
      "main[CoreML3](%x: (1, 1, 3, 3, fp32)(Tensor)) {\n"
      "  block0() {\n"
      "    %w: (2, 1, 2, 2, uint8)*(Tensor) = const(val=[[[[1, 2], [3, 4]]], [[[0, 1], [0, 1]]]], name=\"w\")\n"
      "    %s: (2,fp32)*(Tensor) = const(val=[0.5, 2.0], name=\"s\")\n"
      "    %z: (2,fp32)*(Tensor) = const(val=[-1.0, 0.5], name=\"z\")\n"
      "    %y: (1, 2, 2, 2, fp32)(Tensor) = conv_quantized(x=%x, weight=%w, quantization_type=\"linear\", "
      "quant_scale=%s, quant_bias=%z, name=\"y\")\n"
      "  } -> (%y)\n"
      "}\n";
  static const float x[] = {1, 2, 3, 4, 5, 6, 7, 8, 9};
  static const int64_t xs[] = {1, 1, 3, 3}, ys[] = {1, 2, 2, 2};
  static const double want[] = {6.5, 7.5, 9.5, 10.5, 20, 26, 38, 44};
  ifix f;
  ifix_open(&f, text);
  ifix_set(&f, "x", MIL_DT_FP32, 4, xs, x);
  ifix_run(&f);
  ifix_expect(&f, 0, 4, ys, 8, want, 1e-5);
  ifix_close(&f);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_resample),
      cmocka_unit_test(test_affine),
      cmocka_unit_test(test_crop_resize_ios14),
      cmocka_unit_test(test_crop_resize_ios16_pad),
      cmocka_unit_test(test_crop_resize_ios17),
      cmocka_unit_test(test_conv_quantized),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
