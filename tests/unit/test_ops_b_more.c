/* Unit tests of the op families image_resizing, recurrent and
 * transformers (see test_ops_b.c for conv, pool, linear, normalization):
 * per variant an accepted case with its exact inferred type(s) and a
 * rejected case with its message, defaults and value inference; plus the
 * count of registered variants of the seven families. */
#include "ops_b_builder.h"

/* ------------------------------------------------------------------ */
/* image_resizing                                                      */
/* ------------------------------------------------------------------ */

static void test_image_resizing(void **state) {
  (void)state;
  T t;
  t_init(&t, MIL_IOS15);
  mil_var *x = inp(&t, "x", MIL_DT_FP32, "1,3,4,5");
  ok(&t, op(&t, "upsample_nearest_neighbor", "x", x, "scale_factor_height", cint1(&t, 2), "scale_factor_width",
            cint1(&t, 3), NULL),
     "(1, 3, 8, 15, fp32)");
  ok(&t, op(&t, "upsample_nearest_neighbor", "x", x, "scale_factor_width", cscalar(&t, MIL_DT_FP32, 1.5), NULL),
     "(1, 3, 4, 7, fp32)");
  rejects(&t, op(&t, "upsample_nearest_neighbor", "x", inp(&t, "x2", MIL_DT_FP32, "4,5"), NULL), "rank at least 3");
  mil_op *us = op(&t, "upsample_bilinear", "x", inp(&t, "xs", MIL_DT_FP32, "1,3,h,5"), "scale_factor_height",
                  cscalar(&t, MIL_DT_FP32, 2.0), "align_corners", cbool(&t, false), NULL);
  assert_int_equal(mil_op_infer(us, &t.d), MIL_OK);
  assert_true(sym(us->outputs[0]->type, 2));
  assert_string_not_equal(us->outputs[0]->type->dims[2].sym, "h");
  /* a missing scale factor defaults to 1 in the dtype of the given one */
  mil_op *ud = op(&t, "upsample_bilinear", "x", x, "scale_factor_height", cscalar(&t, MIL_DT_FP32, 2.5), NULL);
  assert_int_equal(mil_op_add_defaults(ud, &t.d), MIL_OK);
  assert_int_equal(mil_op_input_var(ud, "scale_factor_width")->val->type->dtype, MIL_DT_FP32);
  assert_true(mil_value_get_i64(mil_op_input_var(ud, "align_corners")->val, 0) == 1);
  ok(&t, ud, "(1, 3, 10, 5, fp32)");
  mil_op *un = op(&t, "upsample_nearest_neighbor", "x", x, NULL);
  assert_int_equal(mil_op_add_defaults(un, &t.d), MIL_OK);
  assert_int_equal(mil_op_input_var(un, "scale_factor_width")->val->type->dtype, MIL_DT_INT32);
  assert_int_equal(un->n_inputs, 3);
  ok(&t, un, "(1, 3, 4, 5, fp32)");
  rejects(&t, op(&t, "upsample_bilinear", "x", x, "half_pixel_centers", cbool(&t, true), NULL),
          "unknown input 'half_pixel_centers'");
  ok(&t, op(&t, "resize_nearest_neighbor", "x", x, "target_size_height", cint1(&t, 7), "target_size_width",
            cint1(&t, 9), NULL),
     "(1, 3, 7, 9, fp32)");
  rejects(&t, op(&t, "resize_nearest_neighbor", "x", x, "target_size_height", cint1(&t, 7), NULL),
          "required input 'target_size_width'");
  ok(&t, op(&t, "resize_bilinear", "x", x, "target_size_width", cint1(&t, 9), NULL), "(1, 3, 1, 9, fp32)");
  rejects(&t, op(&t, "resize_bilinear", "x", x, "sampling_mode", cstr(&t, "FOO"), NULL), "unrecognized sampling_mode \"FOO\"");
  mil_var *img = inp(&t, "img", MIL_DT_FP32, "2,3,8,8");
  ok(&t, op(&t, "crop_resize", "x", img, "roi", inp(&t, "roi", MIL_DT_FP32, "5,1,4,1,1"), "target_height", cint1(&t, 4),
            "target_width", cint1(&t, 6), NULL),
     "(5, 2, 3, 4, 6, fp32)");
  rejects(&t, op(&t, "crop_resize", "x", img, "roi", inp(&t, "roi3", MIL_DT_FP32, "5,4,1"), NULL), "must be rank 5");
  rejects(&t, op(&t, "crop_resize", "x", img, "roi", inp(&t, "roi5", MIL_DT_FP32, "5,1,4,1,1"), "pad_value",
                 cscalar(&t, MIL_DT_FP32, 0), NULL),
          "unknown input 'pad_value'");
  ok(&t, op(&t, "crop", "x", inp(&t, "xc", MIL_DT_FP16, "1,3,10,10"), "crop_height", cint(&t, "1,2"), "crop_width",
            cint(&t, "0,3"), NULL),
     "(1, 3, 7, 7, fp16)");
  rejects(&t, op(&t, "crop", "x", x, "crop_height", cint(&t, "1,2,3"), "crop_width", cint(&t, "0,3"), NULL),
          "input 'crop_height' must have 2 elements");
  mil_var *m6 = inp(&t, "m6", MIL_DT_FP32, "1,6");
  ok(&t, op(&t, "affine", "x", img, "transform_matrix", m6, "output_height", cint1(&t, 4), "output_width",
            cint1(&t, 5), "sampling_mode", cstr(&t, "bilinear"), "padding_mode", cstr(&t, "constant"),
            "padding_value", cscalar(&t, MIL_DT_FP32, 0), "coordinates_mode",
            cstr(&t, "normalized_minus_one_to_one"), "align_corners", cbool(&t, true), NULL),
     "(2, 3, 4, 5, fp32)");
  rejects(&t, op(&t, "affine", "x", img, "transform_matrix", m6, "output_height", cint1(&t, 4), "output_width",
                 cint1(&t, 5), "sampling_mode", cstr(&t, "nearest"), "padding_mode", cstr(&t, "constant"),
                 "padding_value", cscalar(&t, MIL_DT_FP32, 0), "coordinates_mode",
                 cstr(&t, "normalized_minus_one_to_one"), "align_corners", cbool(&t, true), NULL),
          "input 'sampling_mode' \"nearest\" is not implemented");
#define RESAMPLE_ARGS                                                                                        \
  "sampling_mode", cstr(&t, "bilinear"), "padding_mode", cstr(&t, "constant"), "padding_value",              \
      cscalar(&t, MIL_DT_FP32, 0), "coordinates_mode", cstr(&t, "normalized_minus_one_to_one"), "align_corners", \
      cbool(&t, false)
  ok(&t, op(&t, "resample", "x", img, "coordinates", inp(&t, "co", MIL_DT_FP32, "2,5,6,2"), RESAMPLE_ARGS, NULL),
     "(2, 3, 5, 6, fp32)");
  rejects(&t, op(&t, "resample", "x", img, "coordinates", inp(&t, "co3", MIL_DT_FP32, "2,5,6,3"), RESAMPLE_ARGS, NULL),
          "last dimension of 'coordinates' must be 2");
  rejects(&t, op(&t, "resample", "x", img, "coordinates", inp(&t, "coh", MIL_DT_FP16, "2,5,6,2"), RESAMPLE_ARGS, NULL),
          "input 'coordinates' must have dtype");
  /* defaults of crop_resize (iOS15: no pad_value) */
  mil_op *cr = op(&t, "crop_resize", "x", img, "roi", inp(&t, "roi2", MIL_DT_FP32, "5,1,4,1,1"), NULL);
  assert_int_equal(mil_op_add_defaults(cr, &t.d), MIL_OK);
  assert_int_equal(cr->n_inputs, 8);
  assert_string_equal(mil_value_get_str(mil_op_input_var(cr, "box_coordinate_mode")->val, 0), "CORNERS_HEIGHT_FIRST");
  ok(&t, cr, "(5, 2, 3, 1, 1, fp32)");
  t_free(&t);

  /* iOS14 has no affine yet */
  t_init(&t, MIL_IOS14);
  mil_var *i4 = inp(&t, "x", MIL_DT_FP32, "1,1,2,2");
  rejects(&t, op(&t, "affine", "x", i4, NULL), "needs opset CoreML5 (iOS15) or newer");
  t_free(&t);

  t_init(&t, MIL_IOS16);
  img = inp(&t, "img", MIL_DT_FP32, "2,3,8,8");
  ok(&t, op(&t, "upsample_bilinear", "x", img, "scale_factor_height", cint1(&t, 2), "half_pixel_centers",
            cbool(&t, true), NULL),
     "(2, 3, 16, 8, fp32)");
  rejects(&t, op(&t, "upsample_bilinear", "x", img, "scale_factor_height", cscalar(&t, MIL_DT_FP32, 2),
                 "scale_factor_width", cint1(&t, 2), NULL),
          "same dtype as 'scale_factor_height'");
  mil_op *cr16 = op(&t, "crop_resize", "x", img, "roi", inp(&t, "roi", MIL_DT_FP32, "5,1,4,1,1"), "pad_value",
                    cscalar(&t, MIL_DT_FP32, 1), NULL);
  ok(&t, cr16, "(5, 2, 3, 1, 1, fp32)");
  rejects(&t, op(&t, "crop_resize", "x", img, "roi", inp(&t, "roi2", MIL_DT_FP32, "5,1,4,1,1"), "box_coordinate_mode",
                 cstr(&t, "CORNERS"), NULL),
          "unrecognized box_coordinate_mode \"CORNERS\"");
  ok(&t, op(&t, "resample", "x", img, "coordinates", inp(&t, "coh", MIL_DT_FP16, "2,5,6,2"), RESAMPLE_ARGS, NULL),
     "(2, 3, 5, 6, fp32)");
  rejects(&t, op(&t, "resample", "x", img, "coordinates", inp(&t, "co8", MIL_DT_INT8, "2,5,6,2"), RESAMPLE_ARGS, NULL),
          "input 'coordinates' must have dtype");
  t_free(&t);

  t_init(&t, MIL_IOS17);
  img = inp(&t, "img", MIL_DT_FP32, "2,3,8,8");
  mil_var *boxes = inp(&t, "boxes", MIL_DT_FP32, "5,4");
  ok(&t, op(&t, "crop_resize", "x", img, "boxes", boxes, "box_indices", cint(&t, "0,1,1,0,1"), "target_height",
            cint1(&t, 3), NULL),
     "(5, 3, 3, 1, fp32)");
  rejects(&t, op(&t, "crop_resize", "x", img, "boxes", boxes, NULL), "must not exceed the B dimension of x (2)");
  rejects(&t, op(&t, "crop_resize", "x", img, "boxes", boxes, "box_indices", cint(&t, "0,1,2,0,1"), NULL),
          "must be < the B dimension of x (2), got 2");
  mil_var *b2 = inp(&t, "b2", MIL_DT_UINT16, "2,4");
  mil_op *crd = op(&t, "crop_resize", "x", img, "boxes", b2, NULL);
  assert_int_equal(mil_op_add_defaults(crd, &t.d), MIL_OK);
  const mil_value *bi = mil_op_input_var(crd, "box_indices")->val;
  assert_int_equal(bi->numel, 2);
  assert_int_equal(mil_value_get_i64(bi, 1), 1);
  assert_string_equal(crd->inputs[2].name, "box_indices");
  assert_string_equal(crd->inputs[9].name, "pad_value");
  ok(&t, crd, "(2, 3, 1, 1, fp32)");
  rejects(&t, op(&t, "crop_resize", "x", img, "boxes", b2, "normalized_coordinates", cbool(&t, true), NULL),
          "must be fp16 or fp32 when normalized_coordinates is True");
  ok(&t, op(&t, "resample", "x", img, "coordinates", inp(&t, "co8", MIL_DT_INT8, "2,5,6,2"), RESAMPLE_ARGS, NULL),
     "(2, 3, 5, 6, fp32)");
  rejects(&t, op(&t, "resample", "x", img, "coordinates", inp(&t, "co9", MIL_DT_INT8, "2,5,6"), RESAMPLE_ARGS, NULL),
          "must be a rank 4 tensor");
  mil_var *rd2 = cint_dt(&t, MIL_DT_UINT32, "2", true);
  ok(&t, op(&t, "resize", "x", img, "shape", cint(&t, "16,0"), "resized_dims", rd2, NULL), "(2, 3, 16, 8, fp32)");
  mil_op *rz = op(&t, "resize", "x", img, "shape", inp(&t, "shp", MIL_DT_INT32, "2"), "resized_dims", rd2,
                  "interpolation_mode", cstr(&t, "NEAREST_NEIGHBOR"), NULL);
  assert_int_equal(mil_op_infer(rz, &t.d), MIL_OK);
  assert_true(sym(rz->outputs[0]->type, 2) && sym(rz->outputs[0]->type, 3));
  assert_int_equal(rz->outputs[0]->type->dims[1].size, 3);
  rejects(&t, op(&t, "resize", "x", img, "shape", cint(&t, "16"), "resized_dims", rd2, NULL),
          "input 'resized_dims' (2) must be <= the size of 'shape' (1)");
  rejects(&t, op(&t, "resize", "x", img, "shape", cint(&t, "16,0"), "resized_dims", rd2, "interpolation_mode",
                 cstr(&t, "CUBIC"), NULL),
          "invalid interpolation_mode \"CUBIC\"");
  t_free(&t);
#undef RESAMPLE_ARGS
}

/* ------------------------------------------------------------------ */
/* recurrent                                                           */
/* ------------------------------------------------------------------ */

static void test_recurrent(void **state) {
  (void)state;
  T t;
  t_init(&t, MIL_IOS15);
  mil_var *x = inp(&t, "x", MIL_DT_FP32, "5,b,3"), *h = inp(&t, "h", MIL_DT_FP32, "b,4");
  mil_var *c = inp(&t, "c", MIL_DT_FP32, "b,4");
  mil_op *g = op(&t, "gru", "x", x, "initial_h", h, "weight_ih", cf(&t, MIL_DT_FP32, "12,3", NULL), "weight_hh",
                 cf(&t, MIL_DT_FP32, "12,4", NULL), NULL);
  expect_type(&t, g, 0, "(1, b, 4, fp32)");
  expect_type(&t, g, 1, "(b, 4, fp32)");
  assert_int_equal(g->n_outputs, 2);
  g = op(&t, "gru", "x", x, "initial_h", h, "weight_ih", cf(&t, MIL_DT_FP32, "12,3", NULL), "weight_hh",
         cf(&t, MIL_DT_FP32, "12,4", NULL), "output_sequence", cbool(&t, true), "direction", cstr(&t, "reverse"), NULL);
  expect_type(&t, g, 0, "(5, b, 4, fp32)");
  rejects(&t, op(&t, "gru", "x", x, "initial_h", h, "weight_ih", cf(&t, MIL_DT_FP32, "12,3", NULL), "weight_hh",
                 cf(&t, MIL_DT_FP32, "12,5", NULL), NULL),
          "must be (3*H, H)");
  rejects(&t, op(&t, "gru", "x", x, "initial_h", h, "weight_ih", cf(&t, MIL_DT_FP32, "12,3", NULL), "weight_hh",
                 cf(&t, MIL_DT_FP32, "12,4", NULL), "direction", cstr(&t, "bidirectional"), NULL),
          "direction \"bidirectional\" is not supported");
  mil_var *x16 = inp(&t, "x16", MIL_DT_FP16, "5,2,3");
  rejects(&t, op(&t, "gru", "x", x16, "initial_h", inp(&t, "h16", MIL_DT_FP16, "2,4"), "weight_ih",
                 cf(&t, MIL_DT_FP16, "12,3", NULL), "weight_hh", cf(&t, MIL_DT_FP16, "12,4", NULL), NULL),
          "input 'x' must have dtype fp32");
  mil_op *l = op(&t, "lstm", "x", x, "initial_h", h, "initial_c", c, "weight_ih", cf(&t, MIL_DT_FP32, "16,3", NULL),
                 "weight_hh", cf(&t, MIL_DT_FP32, "16,4", NULL), NULL);
  expect_type(&t, l, 0, "(1, b, 4, fp32)");
  expect_type(&t, l, 2, "(b, 4, fp32)");
  assert_int_equal(l->n_outputs, 3);
  mil_var *wih = cf(&t, MIL_DT_FP32, "16,3", NULL), *whh = cf(&t, MIL_DT_FP32, "16,4", NULL);
  l = op(&t, "lstm", "x", x, "initial_h", h, "initial_c", c, "weight_ih", wih, "weight_hh", whh, "weight_ih_back", wih,
         "weight_hh_back", whh, "direction", cstr(&t, "bidirectional"), "output_sequence", cbool(&t, true), NULL);
  expect_type(&t, l, 0, "(5, b, 8, fp32)");
  expect_type(&t, l, 1, "(b, 8, fp32)");
  rejects(&t, op(&t, "lstm", "x", x, "initial_h", h, "initial_c", c, "weight_ih", wih, "weight_hh", whh, "direction",
                 cstr(&t, "bidirectional"), NULL),
          "bidirectional lstm needs inputs 'weight_ih_back' and 'weight_hh_back'");
  rejects(&t, op(&t, "lstm", "x", x, "initial_h", h, "initial_c", c, "weight_ih", wih, "weight_hh", whh,
                 "cell_activation", cstr(&t, "gelu"), NULL),
          "cell_activation \"gelu\" is not supported");
  rejects(&t, op(&t, "lstm", "x", x, "initial_h", h, "initial_c", c, "weight_ih", cf(&t, MIL_DT_FP32, "12,3", NULL),
                 "weight_hh", whh, NULL),
          "hidden size mismatch");
  mil_op *r = op(&t, "rnn", "x", x, "initial_h", h, "weight_ih", cf(&t, MIL_DT_FP32, "4,3", NULL), "weight_hh",
                 cf(&t, MIL_DT_FP32, "4,4", NULL), "activation", cstr(&t, "relu"), NULL);
  expect_type(&t, r, 0, "(1, b, 4, fp32)");
  expect_type(&t, r, 1, "(b, 4, fp32)");
  rejects(&t, op(&t, "rnn", "x", inp(&t, "x2", MIL_DT_FP32, "5,3"), "initial_h", h, "weight_ih",
                 cf(&t, MIL_DT_FP32, "4,3", NULL), "weight_hh", cf(&t, MIL_DT_FP32, "4,4", NULL), NULL),
          "input 'x' must be rank 3");
  /* defaults in coremltools' order */
  mil_op *ld = op(&t, "lstm", "x", x, "initial_h", h, "initial_c", c, "weight_ih", wih, "weight_hh", whh, NULL);
  assert_int_equal(mil_op_add_defaults(ld, &t.d), MIL_OK);
  assert_int_equal(ld->n_inputs, 10);
  assert_string_equal(mil_value_get_str(mil_op_input_var(ld, "cell_activation")->val, 0), "tanh");
  char want[128];
  snprintf(want, sizeof want, "%s_activation_0", ld->name);
  assert_string_equal(ld->prev->outputs[0]->name, want);
  t_free(&t);

  t_init(&t, MIL_IOS17);
  x = inp(&t, "x", MIL_DT_FP16, "5,2,3");
  h = inp(&t, "h", MIL_DT_FP16, "2,4");
  c = inp(&t, "c", MIL_DT_FP16, "2,4");
  g = op(&t, "gru", "x", x, "initial_h", h, "weight_ih", cf(&t, MIL_DT_FP16, "12,3", NULL), "weight_hh",
         cf(&t, MIL_DT_FP16, "12,4", NULL), NULL);
  expect_type(&t, g, 1, "(2, 4, fp16)");
  rejects(&t, op(&t, "gru", "x", x, "initial_h", h, "weight_ih", cf(&t, MIL_DT_FP16, "12,3", NULL), "weight_hh",
                 cf(&t, MIL_DT_FP16, "12,4", NULL), "reset_after", cbool(&t, true), NULL),
          "unknown input 'reset_after'");
  l = op(&t, "lstm", "x", x, "initial_h", h, "initial_c", c, "weight_ih", cf(&t, MIL_DT_FP16, "16,3", NULL),
         "weight_hh", cf(&t, MIL_DT_FP16, "16,4", NULL), NULL);
  expect_type(&t, l, 2, "(2, 4, fp16)");
  rejects(&t, op(&t, "lstm", "x", x, "initial_h", h, "initial_c", c, "weight_ih", cf(&t, MIL_DT_FP32, "16,3", NULL),
                 "weight_hh", cf(&t, MIL_DT_FP16, "16,4", NULL), NULL),
          "same dtype as 'x'");
  r = op(&t, "rnn", "x", x, "initial_h", h, "weight_ih", cf(&t, MIL_DT_FP16, "4,3", NULL), "weight_hh",
         cf(&t, MIL_DT_FP16, "4,4", NULL), NULL);
  expect_type(&t, r, 0, "(1, 2, 4, fp16)");
  rejects(&t, op(&t, "rnn", "x", x, "initial_h", h, "weight_ih", cf(&t, MIL_DT_FP16, "4,3", NULL), "weight_hh",
                 cf(&t, MIL_DT_FP16, "4,4", NULL), "direction", cstr(&t, "sideways"), NULL),
          "direction \"sideways\" is not supported");
  t_free(&t);

  t_init(&t, MIL_IOS18);
  x = inp(&t, "x", MIL_DT_FP16, "5,2,3");
  h = inp(&t, "h", MIL_DT_FP16, "2,4");
  g = op(&t, "gru", "x", x, "initial_h", h, "weight_ih", cf(&t, MIL_DT_FP16, "12,3", NULL), "weight_hh",
         cf(&t, MIL_DT_FP16, "12,4", NULL), "reset_after", cbool(&t, true), "input_bias", cf(&t, MIL_DT_FP16, "12", NULL),
         "output_sequence", cbool(&t, true), NULL);
  expect_type(&t, g, 0, "(5, 2, 4, fp16)");
  rejects(&t, op(&t, "gru", "x", x, "initial_h", h, "weight_ih", cf(&t, MIL_DT_FP16, "12,3", NULL), "weight_hh",
                 cf(&t, MIL_DT_FP16, "12,4", NULL), "input_bias", cf(&t, MIL_DT_FP32, "12", NULL), NULL),
          "same dtype as 'x'");
  t_free(&t);
}

/* ------------------------------------------------------------------ */
/* transformers                                                        */
/* ------------------------------------------------------------------ */

static void test_sdpa(void **state) {
  (void)state;
  T t;
  t_init(&t, MIL_IOS18);
  mil_var *q = inp(&t, "q", MIL_DT_FP16, "2,3,4"), *k = inp(&t, "k", MIL_DT_FP16, "2,5,4"),
          *v = inp(&t, "v", MIL_DT_FP16, "2,5,6");
  ok(&t, op(&t, "scaled_dot_product_attention", "query", q, "key", k, "value", v, NULL), "(2, 3, 6, fp16)");
  ok(&t, op(&t, "scaled_dot_product_attention", "query", q, "key", k, "value", v, "attn_mask",
            inp(&t, "m", MIL_DT_BOOL, "3,5"), NULL),
     "(2, 3, 6, fp16)");
  ok(&t, op(&t, "scaled_dot_product_attention", "query", inp(&t, "qs", MIL_DT_FP32, "b,h,7,4"), "key",
            inp(&t, "ks", MIL_DT_FP32, "b,h,9,4"), "value", inp(&t, "vs", MIL_DT_FP32, "b,h,9,2"), NULL),
     "(b, h, 7, 2, fp32)");
  rejects(&t, op(&t, "scaled_dot_product_attention", "query", q, "key", k, "value", v, "attn_mask",
                 inp(&t, "m4", MIL_DT_FP16, "3,4"), NULL),
          "key and attn_mask must have the same sequence length");
  rejects(&t, op(&t, "scaled_dot_product_attention", "query", q, "key", inp(&t, "k2", MIL_DT_FP16, "2,5,3"), "value", v, NULL),
          "same embedding size");
  rejects(&t, op(&t, "scaled_dot_product_attention", "query", q, "key", k, "value", inp(&t, "v2", MIL_DT_FP16, "3,5,6"),
                 NULL),
          "same batch dimensions");
  rejects(&t, op(&t, "scaled_dot_product_attention", "query", inp(&t, "q2", MIL_DT_FP16, "3,4"), "key",
                 inp(&t, "k3", MIL_DT_FP16, "5,4"), "value", inp(&t, "v3", MIL_DT_FP16, "5,4"), NULL),
          "rank at least 3");
  /* fold: scores (0, ln 3) -> weights (1/4, 3/4) -> 4/4 + 3*8/4 = 7 */
  mil_var *fq = cf(&t, MIL_DT_FP32, "1,1,1", (const double[]){1});
  mil_var *fk = cf(&t, MIL_DT_FP32, "1,2,1", (const double[]){0, log(3.0)});
  mil_var *fv = cf(&t, MIL_DT_FP32, "1,2,1", (const double[]){4, 8});
  mil_op *s = op(&t, "scaled_dot_product_attention", "query", fq, "key", fk, "value", fv, NULL);
  ok(&t, s, "(1, 1, 1, fp32)");
  expect_vals(s, (const double[]){7}, 1, 1e-6);
  mil_var *bm = add_const(&t, mil_value_new_tensor(t.p, MIL_DT_BOOL, 2, (const int64_t[]){1, 2}, false,
                                                   (const uint8_t[]){1, 0}));
  s = op(&t, "scaled_dot_product_attention", "query", fq, "key", fk, "value", fv, "attn_mask", bm, NULL);
  ok(&t, s, "(1, 1, 1, fp32)");
  expect_vals(s, (const double[]){4}, 1, 1e-6);
  /* float mask: add ln 3 to the first score -> equal weights -> 6; scale by sqrt(E) with E = 4 */
  s = op(&t, "scaled_dot_product_attention", "query", fq, "key", fk, "value", fv, "attn_mask",
         cf(&t, MIL_DT_FP32, "1,2", (const double[]){log(3.0), 0}), NULL);
  ok(&t, s, "(1, 1, 1, fp32)");
  expect_vals(s, (const double[]){6}, 1, 1e-6);
  s = op(&t, "scaled_dot_product_attention", "query", cf(&t, MIL_DT_FP32, "1,1,4", (const double[]){1, 1, 1, 1}), "key",
         cf(&t, MIL_DT_FP32, "1,2,4", (const double[]){0, 0, 0, 0, 1, 1, 1, 1}), "value", fv, NULL);
  ok(&t, s, "(1, 1, 1, fp32)");
  double e2 = exp(2.0);
  expect_vals(s, (const double[]){(4 + 8 * e2) / (1 + e2)}, 1, 1e-5);
  t_free(&t);

  t_init(&t, MIL_IOS17);
  q = inp(&t, "q", MIL_DT_FP16, "2,3,4");
  rejects(&t, op(&t, "scaled_dot_product_attention", "query", q, "key", q, "value", q, NULL),
          "needs opset CoreML8 (iOS18) or newer");
  t_free(&t);
}

/* ------------------------------------------------------------------ */
/* Registry coverage                                                   */
/* ------------------------------------------------------------------ */

static const char *const k_types[] = {
    "conv", "conv_quantized", "conv_transpose", "avg_pool", "l2_pool", "max_pool", "einsum", "linear", "matmul",
    "batch_norm", "instance_norm", "l2_norm", "layer_norm", "local_response_norm", "upsample_nearest_neighbor",
    "resize_nearest_neighbor", "upsample_bilinear", "resize_bilinear", "crop_resize", "crop", "affine", "resample",
    "resize", "gru", "lstm", "rnn", "scaled_dot_product_attention", NULL};

static int type_index(const char *type) {
  for (int i = 0; k_types[i]; i++)
    if (strcmp(k_types[i], type) == 0) return i;
  return -1;
}

static void test_variant_count(void **state) {
  (void)state;
  size_t n = 0;
  static const char *const fams[] = {"conv", "pool", "linear", "normalization", "image_resizing", "recurrent",
                                     "transformers"};
  for (size_t i = 0; i < mil_op_def_count(); i++) {
    const mil_op_def *d = mil_op_def_at(i);
    for (size_t f = 0; f < sizeof fams / sizeof fams[0]; f++)
      if (strcmp(d->family, fams[f]) == 0) {
        n++;
        assert_true(type_index(d->type) >= 0);
        assert_non_null(d->infer);
      }
  }
  assert_int_equal(n, 45); /* the variants of coremltools' seven defs files */
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_image_resizing), cmocka_unit_test(test_recurrent),
      cmocka_unit_test(test_sdpa),           cmocka_unit_test(test_variant_count),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
