/* ONNX RoiAlign (opsets 10, 16), mode "avg". MIL's crop_resize samples
 * one point per output cell (and the interpreter has no kernel for it),
 * so the sampling is spelled out as ONNX Runtime's CPU kernel does it:
 * per ROI k (x1, y1, x2, y2) scaled by spatial_scale, minus 0.5 with
 * coordinate_transformation_mode "half_pixel" (opset 16's default;
 * "output_half_pixel" = opset 10, whose ROI sizes are at least 1), each
 * output bin averages sampling_ratio^2 bilinear samples
 *   y = y1 + (p + (i + 0.5) / sr) * bin_h     (x alike)
 * a sample outside [-1, H] x [-1, W] counting 0, coordinates clamped to
 * the image. The bilinear weights are separable, so with the ROI's image
 * Xk = X[batch_indices[k]] [C, H, W]:
 *   samples[k] = Wy[k] [P, H] @ Xk @ Wx[k]^T [W, Q]   (P = out_h * sr)
 * where Wy[k, p, :] = (1 - ly) onehot(y_low) + ly onehot(y_high); then
 * the mean over each sr x sr block. sampling_ratio must be given (> 0):
 * the adaptive one depends on the ROI sizes at run time. */
#include <string.h>

#include "onnx/import/import_internal.h"

/* Wy [K, P, size] for one axis: lo [K] the ROI start, bin [K] the bin
 * size, out bins of sr samples, an image dim of `size`. */
static mil_var *axis_weights(onnx_ctx *c, mil_var *lo, mil_var *bin, int64_t out, int64_t sr, int64_t size) {
  int64_t P = out * sr;
  mil_value *f = mil_value_new_tensor(c->p, MIL_DT_FP32, 2, (int64_t[]){1, P}, false, NULL);
  if (!f) return NULL;
  for (int64_t p = 0; p < out; p++)
    for (int64_t i = 0; i < sr; i++) mil_value_set_f64(f, p * sr + i, (double)p + ((double)i + 0.5) / (double)sr);
  mil_value *ax1 = onnx_i32s(c, 1, (int64_t[]){1});
  mil_var *y = ONNX_OP(c, "add", A("x", ONNX_OP(c, "expand_dims", A("x", lo), K("axes", ax1))),
                       A("y", ONNX_OP(c, "mul", A("x", ONNX_OP(c, "expand_dims", A("x", bin), K("axes", ax1))), K("y", f))));
  /* valid: -1 <= y <= size */
  mil_var *valid = ONNX_OP(c, "logical_and", A("x", ONNX_OP(c, "greater_equal", A("x", y), K("y", onnx_f32(c, -1)))),
                           A("y", ONNX_OP(c, "less_equal", A("x", y), K("y", onnx_f32(c, (double)size)))));
  y = ONNX_OP(c, "maximum", A("x", y), K("y", onnx_f32(c, 0)));
  mil_var *ylow = ONNX_OP(c, "floor", A("x", y));
  mil_var *edge = ONNX_OP(c, "greater_equal", A("x", ylow), K("y", onnx_f32(c, (double)(size - 1))));
  ylow = ONNX_OP(c, "minimum", A("x", ylow), K("y", onnx_f32(c, (double)(size - 1))));
  mil_var *yhigh = ONNX_OP(c, "minimum", A("x", ONNX_OP(c, "add", A("x", ylow), K("y", onnx_f32(c, 1)))),
                           K("y", onnx_f32(c, (double)(size - 1))));
  y = ONNX_OP(c, "select", A("cond", edge), A("a", ylow), A("b", y));
  mil_var *ly = ONNX_OP(c, "sub", A("x", y), A("y", ylow));
  mil_var *hy = ONNX_OP(c, "sub", K("x", onnx_f32(c, 1)), A("y", ly));
  mil_var *vf = onnx_cast(c, valid, MIL_DT_FP32);
  ly = ONNX_OP(c, "mul", A("x", ly), A("y", vf));
  hy = ONNX_OP(c, "mul", A("x", hy), A("y", vf));
  mil_value *ax2 = onnx_i32s(c, 1, (int64_t[]){2});
  mil_var *oh_lo = ONNX_OP(c, "one_hot", A("indices", onnx_cast(c, ylow, MIL_DT_INT32)), K("one_hot_vector_size", onnx_i32(c, size)),
                           K("axis", onnx_i32(c, -1)), K("on_value", onnx_f32(c, 1)), K("off_value", onnx_f32(c, 0)));
  mil_var *oh_hi = ONNX_OP(c, "one_hot", A("indices", onnx_cast(c, yhigh, MIL_DT_INT32)), K("one_hot_vector_size", onnx_i32(c, size)),
                           K("axis", onnx_i32(c, -1)), K("on_value", onnx_f32(c, 1)), K("off_value", onnx_f32(c, 0)));
  return ONNX_OP(c, "add", A("x", ONNX_OP(c, "mul", A("x", oh_lo), A("y", ONNX_OP(c, "expand_dims", A("x", hy), K("axes", ax2))))),
                 A("y", ONNX_OP(c, "mul", A("x", oh_hi), A("y", ONNX_OP(c, "expand_dims", A("x", ly), K("axes", ax2))))));
}

static mil_status conv_roi_align(onnx_ctx *c, onnx_node *n) {
  mil_var *x = onnx_req(c, n, 0), *rois = onnx_req(c, n, 1), *bi = onnx_req(c, n, 2);
  if (!x || !rois || !bi) return MIL_ERR_INVALID;
  if (onnx_rank(x) != 4 || onnx_rank(rois) != 2)
    return onnx_fail(c, MIL_ERR_INVALID, "X must be [N, C, H, W] and rois [K, 4], got ranks %d and %d", (int)onnx_rank(x),
                     (int)onnx_rank(rois));
  const char *mode = onnx_attr_s(c, n, "mode", "avg");
  if (strcmp(mode, "avg") != 0) return ONNX_UNSUP(c, "mode '%s' (only avg)", mode);
  const char *ctm = onnx_attr_s(c, n, "coordinate_transformation_mode", n->opset >= 16 ? "half_pixel" : "output_half_pixel");
  bool half = strcmp(ctm, "half_pixel") == 0;
  if (!half && strcmp(ctm, "output_half_pixel") != 0) return onnx_fail(c, MIL_ERR_INVALID, "coordinate_transformation_mode '%s'", ctm);
  int64_t oh = onnx_attr_i(n, "output_height", 1), ow = onnx_attr_i(n, "output_width", 1), sr = onnx_attr_i(n, "sampling_ratio", 0);
  double scale = onnx_attr_f(n, "spatial_scale", 1.0f);
  if (sr <= 0) return ONNX_UNSUP(c, "sampling_ratio 0 (adaptive: the sample count depends on the ROI sizes at run time)");
  int64_t H = x->type->dims[2].size, W = x->type->dims[3].size;
  if (H < 1 || W < 1) return ONNX_UNSUP(c, "the image height and width must be known at conversion");
  mil_dtype dt = onnx_dtype(x);
  x = onnx_cast(c, x, MIL_DT_FP32);
  rois = onnx_cast(c, rois, MIL_DT_FP32);
  double off = half ? 0.5 : 0;
  mil_var *co[4];
  for (int i = 0; i < 4; i++)
    co[i] = ONNX_OP(c, "sub", A("x", ONNX_OP(c, "mul", A("x", ONNX_OP(c, "gather", A("x", rois), K("indices", onnx_i32(c, i)),
                                                                      K("axis", onnx_i32(c, 1)))),
                                            K("y", onnx_f32(c, scale)))),
                    K("y", onnx_f32(c, off)));
  mil_var *bin[2];
  for (int a = 0; a < 2; a++) {
    mil_var *len = ONNX_OP(c, "sub", A("x", co[a + 2]), A("y", co[a]));
    if (!half) len = ONNX_OP(c, "maximum", A("x", len), K("y", onnx_f32(c, 1)));
    bin[a] = ONNX_OP(c, "real_div", A("x", len), K("y", onnx_f32(c, (double)(a ? oh : ow))));
  }
  mil_var *wy = axis_weights(c, co[1], bin[1], oh, sr, H), *wx = axis_weights(c, co[0], bin[0], ow, sr, W);
  if (!wy || !wx) return MIL_ERR_TYPE;
  mil_value *ax1 = onnx_i32s(c, 1, (int64_t[]){1});
  mil_var *xk = ONNX_OP(c, "gather", A("x", x), A("indices", onnx_cast(c, bi, MIL_DT_INT32)), K("axis", onnx_i32(c, 0)));
  mil_var *s = ONNX_OP(c, "matmul", A("x", ONNX_OP(c, "expand_dims", A("x", wy), K("axes", ax1))), A("y", xk)); /* [K, C, P, W] */
  s = ONNX_OP(c, "matmul", A("x", s), A("y", ONNX_OP(c, "expand_dims", A("x", wx), K("axes", ax1))), K("transpose_y", onnx_bool(c, true)));
  /* [K, C, oh * sr, ow * sr] -> mean over each sr x sr block */
  mil_var *sh = onnx_shape_of(c, s);
  mil_var *kc = ONNX_OP(c, "slice_by_index", A("x", sh), K("begin", onnx_i32s(c, 1, (int64_t[]){0})), K("end", onnx_i32s(c, 1, (int64_t[]){2})));
  mil_var *parts[2] = {kc, onnx_const(c, onnx_i32s(c, 4, (int64_t[]){oh, sr, ow, sr}))};
  mil_var *shp = ONNX_OP(c, "concat", AT("values", parts, 2), K("axis", onnx_i32(c, 0)));
  s = ONNX_OP(c, "reshape", A("x", s), A("shape", shp));
  s = ONNX_OP(c, "reduce_mean", A("x", s), K("axes", onnx_i32s(c, 2, (int64_t[]){3, 5})), K("keep_dims", onnx_bool(c, false)));
  return onnx_set_out(c, n, 0, onnx_cast(c, s, dt));
}

const onnx_op_entry onnx_ops_roi_align[] = {
    {"RoiAlign", "", 10, 0, conv_roi_align,
     "gather, mul, sub, real_div, floor, minimum, maximum, select, one_hot, matmul, reshape, reduce_mean"},
    {NULL, NULL, 0, 0, NULL, NULL},
};
