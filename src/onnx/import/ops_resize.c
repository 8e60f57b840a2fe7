/* ONNX resizing: Resize (10: scales; 11/13: roi, scales, sizes and
 * coordinate_transformation_mode; 18/19: axes, antialias,
 * keep_aspect_ratio_policy) and Upsample (7: scales attribute, 9: input)
 * over the last two dims of a rank-4 tensor, as coremltools' torch
 * frontend maps upsample_nearest2d / upsample_bilinear2d:
 *   nearest, integer upscale -> upsample_nearest_neighbor
 *   linear -> resize_bilinear with sampling_mode UNALIGN_CORNERS
 *   (half_pixel, pytorch_half_pixel), STRICT_ALIGN_CORNERS (align_corners)
 *   or DEFAULT (asymmetric);
 *   anything else (scales / sizes computed at run time, other coordinate or
 *   rounding modes, scales that do not give whole sizes, other axes)
 *   -> gathers (ops_resize_gather.c).
 * antialias is refused clearly.
 * GridSample -> resample. */
#include <math.h>
#include <string.h>

#include "onnx/import/import_internal.h"

/* What the MIL resize ops cannot express goes to the gather form
 * (ops_resize_gather.c): resize_common says so with this status, without
 * a message. */
#define RESIZE_GATHER ((mil_status)-1)

/* Output H and W from known scales or sizes; false when neither is known. */
static bool out_size(onnx_ctx *c, onnx_node *n, mil_var *x, const mil_value *scales, const mil_value *sizes,
                     int64_t *oh, int64_t *ow, double *sh, double *sw) {
  (void)c;
  (void)n;
  int64_t H = x->type->dims[2].size, W = x->type->dims[3].size;
  if (H < 0 || W < 0) return false;
  if (sizes && sizes->numel == 4) {
    *oh = mil_value_get_i64(sizes, 2);
    *ow = mil_value_get_i64(sizes, 3);
    *sh = (double)*oh / (double)H;
    *sw = (double)*ow / (double)W;
    return true;
  }
  if (scales && scales->numel == 4) {
    *sh = mil_value_get_f64(scales, 2);
    *sw = mil_value_get_f64(scales, 3);
    *oh = (int64_t)floor((double)H * *sh);
    *ow = (int64_t)floor((double)W * *sw);
    return true;
  }
  return false;
}

static mil_status resize_common(onnx_ctx *c, onnx_node *n, mil_var *x, const mil_value *scales, const mil_value *sizes,
                                const char *mode, const char *coord, const char *nearest_mode) {
  if (onnx_rank(x) != 4) return RESIZE_GATHER;
  for (int32_t i = 0; i < 2; i++) {
    double s = scales && scales->numel == 4 ? mil_value_get_f64(scales, i) : 1;
    int64_t z = sizes && sizes->numel == 4 ? mil_value_get_i64(sizes, i) : x->type->dims[i].size;
    if (s != 1 || z != x->type->dims[i].size) return RESIZE_GATHER;
  }
  int64_t oh, ow;
  double sh, sw;
  if (!out_size(c, n, x, scales, sizes, &oh, &ow, &sh, &sw)) return RESIZE_GATHER;
  if (strcmp(mode, "nearest") == 0) {
    bool int_up = sh >= 1 && sw >= 1 && sh == floor(sh) && sw == floor(sw);
    bool coord_ok = strcmp(coord, "asymmetric") == 0 ? strcmp(nearest_mode, "floor") == 0 || int_up
                    : strcmp(coord, "half_pixel") == 0 ? strcmp(nearest_mode, "round_prefer_floor") == 0
                                                       : false;
    if (!int_up || !coord_ok) return RESIZE_GATHER;
    return onnx_set_out(c, n, 0, ONNX_OP(c, "upsample_nearest_neighbor", A("x", x),
                                         K("scale_factor_height", onnx_i32(c, (int64_t)sh)),
                                         K("scale_factor_width", onnx_i32(c, (int64_t)sw))));
  }
  if (strcmp(mode, "linear") != 0 && strcmp(mode, "bilinear") != 0) return RESIZE_GATHER;
  const char *sm = strcmp(coord, "half_pixel") == 0 || strcmp(coord, "pytorch_half_pixel") == 0 ? "UNALIGN_CORNERS"
                   : strcmp(coord, "align_corners") == 0                                          ? "STRICT_ALIGN_CORNERS"
                   : strcmp(coord, "asymmetric") == 0                                             ? "DEFAULT"
                                                                                                  : NULL;
  if (!sm) return RESIZE_GATHER;
  /* pytorch_half_pixel maps an output of size 1 to 0, not to the center */
  if (!strcmp(coord, "pytorch_half_pixel") && (oh == 1 || ow == 1)) return RESIZE_GATHER;
  if (sizes == NULL && (fabs((double)oh - sh * (double)x->type->dims[2].size) > 1e-6 ||
                        fabs((double)ow - sw * (double)x->type->dims[3].size) > 1e-6) &&
      strcmp(sm, "STRICT_ALIGN_CORNERS") != 0)
    return RESIZE_GATHER; /* ONNX's coordinates follow the scales, resize_bilinear's the sizes */
  return onnx_set_out(c, n, 0, ONNX_OP(c, "resize_bilinear", A("x", x), K("target_size_height", onnx_i32(c, oh)),
                                       K("target_size_width", onnx_i32(c, ow)), K("sampling_mode", onnx_str(c, sm))));
}

static mil_status conv_resize(onnx_ctx *c, onnx_node *n) {
  mil_var *x = onnx_req(c, n, 0);
  if (!x) return MIL_ERR_INVALID;
  const char *mode = onnx_attr_s(c, n, "mode", "nearest");
  const char *coord = n->opset < 11 ? "asymmetric" : onnx_attr_s(c, n, "coordinate_transformation_mode", "half_pixel");
  const char *nm = n->opset < 11 ? "floor" : onnx_attr_s(c, n, "nearest_mode", "round_prefer_floor");
  if (onnx_attr_i(n, "antialias", 0)) return ONNX_UNSUP(c, "antialias");
  if (onnx_attr(n, "axes")) return ONNX_UNSUP(c, "the axes attribute");
  if (strcmp(onnx_attr_s(c, n, "keep_aspect_ratio_policy", "stretch"), "stretch") != 0)
    return ONNX_UNSUP(c, "keep_aspect_ratio_policy other than stretch");
  mil_var *sv = n->opset < 11 ? onnx_in(n, 1) : onnx_in(n, 2);
  mil_var *zv = n->opset < 11 ? NULL : onnx_in(n, 3);
  const mil_value *scales = sv ? onnx_val(sv) : NULL, *sizes = zv ? onnx_val(zv) : NULL;
  if (sv && mil_type_numel(sv->type) == 0) sv = NULL, scales = NULL;
  mil_status st = RESIZE_GATHER;
  if ((!sv || scales) && (!zv || sizes)) st = resize_common(c, n, x, scales, sizes, mode, coord, nm);
  return st == RESIZE_GATHER ? onnx_resize_gather(c, n, x, zv ? NULL : sv, zv, mode, coord, nm) : st;
}

static mil_status conv_upsample(onnx_ctx *c, onnx_node *n) {
  mil_var *x = onnx_req(c, n, 0);
  if (!x) return MIL_ERR_INVALID;
  const char *mode = onnx_attr_s(c, n, "mode", "nearest");
  mil_var *sv;
  if (n->opset < 9) {
    const float *f;
    int32_t k = onnx_attr_floats(n, "scales", &f);
    mil_value *v = mil_value_new_tensor(c->p, MIL_DT_FP32, 1, (int64_t[]){k < 0 ? 0 : k}, false, NULL);
    for (int32_t i = 0; v && i < k; i++) mil_value_set_f64(v, i, f[i]);
    sv = onnx_const(c, v);
  } else if (!(sv = onnx_req(c, n, 1))) return MIL_ERR_INVALID;
  mil_status st = sv->val ? resize_common(c, n, x, sv->val, NULL, mode, "asymmetric", "floor") : RESIZE_GATHER;
  return st == RESIZE_GATHER ? onnx_resize_gather(c, n, x, sv, NULL, mode, "asymmetric", "floor") : st;
}

/* A (2,) constant of dtype dt holding (w, h) = (a, b): the grid's last
 * axis holds (x, y). */
static mil_var *wh_const(onnx_ctx *c, mil_dtype dt, double a, double b) {
  mil_value *v = mil_value_new_tensor(c->p, dt, 1, (int64_t[]){2}, false, NULL);
  if (!v) return NULL;
  mil_value_set_f64(v, 0, a);
  mil_value_set_f64(v, 1, b);
  return onnx_const(c, v);
}

/* GridSample's sampling point in pixels, as ONNX's reference computes it
 * (onnx/reference/ops/op_grid_sample.py): the grid (N, Ho, Wo, 2) of
 * normalized (x, y) unnormalized per axis of W / H pixels, (g + 1) / 2 *
 * (d - 1) with align_corners, ((g + 1) d - 1) / 2 without; nearest
 * rounds it half to even (MIL round); a point outside the borders
 * [lo, hi] ([0, d-1] with align_corners, [-0.5, d-0.5] without) is
 * clamped to [0, d-1] (border) or reflected about the borders until
 * inside (reflection): lo + r or hi - r where r = (p - lo) mod 2(hi - lo)
 * folded to [0, hi - lo]. */
static mil_var *grid_pixels(onnx_ctx *c, mil_var *grid, bool align, bool nearest, const char *pad, double W, double H) {
  mil_dtype dt = onnx_dtype(grid);
  mil_var *g1 = ONNX_OP(c, "add", A("x", grid), K("y", onnx_fscalar(c, dt, 1)));
  mil_var *p = align ? ONNX_OP(c, "mul", A("x", ONNX_OP(c, "real_div", A("x", g1), K("y", onnx_fscalar(c, dt, 2)))),
                               A("y", wh_const(c, dt, W - 1, H - 1)))
                     : ONNX_OP(c, "real_div", A("x", ONNX_OP(c, "sub", A("x", ONNX_OP(c, "mul", A("x", g1), A("y", wh_const(c, dt, W, H)))),
                                                           K("y", onnx_fscalar(c, dt, 1)))),
                               K("y", onnx_fscalar(c, dt, 2)));
  if (nearest) p = ONNX_OP(c, "round", A("x", p));
  double lo = align ? 0 : -0.5;
  if (!strcmp(pad, "border")) {
    mil_var *hi = wh_const(c, dt, W - 1, H - 1);
    return ONNX_OP(c, "minimum", A("x", ONNX_OP(c, "maximum", A("x", p), K("y", onnx_fscalar(c, dt, 0)))), A("y", hi));
  }
  if (strcmp(pad, "reflection")) return p;
  mil_var *hi = wh_const(c, dt, align ? W - 1 : W - 0.5, align ? H - 1 : H - 0.5);
  mil_var *rng = wh_const(c, dt, align ? W - 1 : W, align ? H - 1 : H);
  /* one pixel with align_corners: lo = hi, every point reflects to 0 (a
   * whole one here: the bilinear case takes MIL's reflection), any period */
  mil_var *per = wh_const(c, dt, align ? (W > 1 ? 2 * (W - 1) : 1) : 2 * W, align ? (H > 1 ? 2 * (H - 1) : 1) : 2 * H);
  mil_var *m = ONNX_OP(c, "mod", A("x", ONNX_OP(c, "sub", A("x", p), K("y", onnx_fscalar(c, dt, lo)))), A("y", per));
  mil_var *r = ONNX_OP(c, "select", A("cond", ONNX_OP(c, "less_equal", A("x", m), A("y", rng))), A("a", m),
                       A("b", ONNX_OP(c, "sub", A("x", per), A("y", m))));
  mil_var *refl = ONNX_OP(c, "add", A("x", r), K("y", onnx_fscalar(c, dt, lo)));
  /* a point inside the borders stays as it is */
  mil_var *out = ONNX_OP(c, "logical_or", A("x", ONNX_OP(c, "less", A("x", p), K("y", onnx_fscalar(c, dt, lo)))),
                         A("y", ONNX_OP(c, "greater", A("x", p), A("y", hi))));
  return ONNX_OP(c, "select", A("cond", out), A("a", refl), A("b", p));
}

/* ONNX's cubic convolution coefficient (A = -0.75) of a tap at distance d
 * (1 + t, t, 1 - t, 2 - t for taps -1, 0, 1, 2 of fraction t): for d <= 1
 * ((A + 2) d - (A + 3)) d d + 1, for 1 < d < 2 ((A d - 5A) d + 8A) d - 4A. */
static mil_var *cubic_coeff(onnx_ctx *c, mil_var *d, bool near) {
  const double A = -0.75;
  mil_dtype dt = onnx_dtype(d);
  mil_var *r;
  if (near) {
    r = ONNX_OP(c, "sub", A("x", ONNX_OP(c, "mul", A("x", d), K("y", onnx_fscalar(c, dt, A + 2)))),
                K("y", onnx_fscalar(c, dt, A + 3)));
    r = ONNX_OP(c, "mul", A("x", ONNX_OP(c, "mul", A("x", r), A("y", d))), A("y", d));
    return ONNX_OP(c, "add", A("x", r), K("y", onnx_fscalar(c, dt, 1)));
  }
  r = ONNX_OP(c, "sub", A("x", ONNX_OP(c, "mul", A("x", d), K("y", onnx_fscalar(c, dt, A)))),
              K("y", onnx_fscalar(c, dt, 5 * A)));
  r = ONNX_OP(c, "add", A("x", ONNX_OP(c, "mul", A("x", r), A("y", d))), K("y", onnx_fscalar(c, dt, 8 * A)));
  return ONNX_OP(c, "sub", A("x", ONNX_OP(c, "mul", A("x", r), A("y", d))), K("y", onnx_fscalar(c, dt, 4 * A)));
}

/* the (N, Ho, Wo) component k (0: x, 1: y) of a (N, Ho, Wo, 2) var */
static mil_var *grid_axis(onnx_ctx *c, mil_var *v, int64_t k) {
  return ONNX_OP(c, "gather", A("x", v), K("indices", onnx_i32(c, k)), K("axis", onnx_i32(c, 3)));
}

/* GridSample bicubic (ONNX's reference: 4 x 4 taps around floor(p) - 1,
 * weighted by cubic_coeff per axis; a tap outside reads 0 with zeros
 * padding, the nearest edge pixel with border padding; the point itself
 * is not clamped, as in PyTorch's grid_sample): each tap is a nearest resample at whole
 * unnormalized pixels (exact there), the 16 weighted taps summed. */
static mil_status grid_sample_bicubic(onnx_ctx *c, onnx_node *n, mil_var *x, mil_var *grid, bool align,
                                      const char *pm) {
  int64_t H = x->type->dims[2].size, W = x->type->dims[3].size;
  if (H < 0 || W < 0) return ONNX_UNSUP(c, "mode 'bicubic' with H or W known only at run time");
  if (!strcmp(pm, "reflection")) return ONNX_UNSUP(c, "mode 'bicubic' with padding_mode 'reflection'");
  mil_dtype dt = onnx_dtype(x);
  mil_var *p = grid_pixels(c, grid, align, false, "zeros", (double)W, (double)H);
  mil_var *f = ONNX_OP(c, "floor", A("x", p));
  mil_var *t = ONNX_OP(c, "sub", A("x", p), A("y", f));
  if (!t) return MIL_ERR_TYPE;
  mil_var *w[2][4];
  for (int64_t k = 0; k < 2; k++) {
    mil_var *tk = grid_axis(c, t, k);
    mil_var *u = ONNX_OP(c, "sub", K("x", onnx_fscalar(c, dt, 1)), A("y", tk));
    w[k][0] = cubic_coeff(c, ONNX_OP(c, "add", A("x", tk), K("y", onnx_fscalar(c, dt, 1))), false);
    w[k][1] = cubic_coeff(c, tk, true);
    w[k][2] = cubic_coeff(c, u, true);
    w[k][3] = cubic_coeff(c, ONNX_OP(c, "add", A("x", u), K("y", onnx_fscalar(c, dt, 1))), false);
  }
  mil_var *acc = NULL;
  for (int j = 0; j < 4; j++)
    for (int i = 0; i < 4; i++) {
      mil_var *at = ONNX_OP(c, "add", A("x", f), A("y", wh_const(c, dt, i - 1, j - 1)));
      mil_var *tap = ONNX_OP(c, "resample", A("x", x), A("coordinates", at), K("sampling_mode", onnx_str(c, "nearest")),
                             K("padding_mode", onnx_str(c, pm)), K("padding_value", onnx_fscalar(c, dt, 0)),
                             K("coordinates_mode", onnx_str(c, "unnormalized")), K("align_corners", onnx_bool(c, align)));
      mil_var *wt = ONNX_OP(c, "mul", A("x", w[0][i]), A("y", w[1][j]));
      wt = ONNX_OP(c, "expand_dims", A("x", wt), K("axes", onnx_i32s(c, 1, (int64_t[]){1})));
      mil_var *term = ONNX_OP(c, "mul", A("x", tap), A("y", wt));
      acc = acc ? ONNX_OP(c, "add", A("x", acc), A("y", term)) : term;
      if (!acc) return MIL_ERR_TYPE;
    }
  return onnx_set_out(c, n, 0, acc);
}

/* GridSample (16; 20 renames the modes linear / cubic): resample with
 * normalized [-1, 1] coordinates, as coremltools' torch grid_sampler,
 * where MIL's resample means what ONNX means: bilinear with zeros or
 * border padding, and reflection with align_corners (MIL reflects about
 * the edge pixels' centers, ONNX's borders with align_corners). Nearest
 * (ONNX rounds half-way points to even, MIL's resample leaves the rounding
 * open) and reflection without align_corners (ONNX reflects about the
 * pixels' outer edges, MIL about their centers) are sampled at the points
 * grid_pixels computes, unnormalized: nearest at whole pixels (an
 * outside one reads 0 under zeros padding), bilinear reflected into
 * [-0.5, d-0.5], where a tap beyond the edge pixel reads the edge pixel
 * as ONNX's reflected tap does ("border"). These need H and W known. */
static mil_status conv_grid_sample(onnx_ctx *c, onnx_node *n) {
  mil_var *x = onnx_req(c, n, 0), *grid = onnx_req(c, n, 1);
  if (!x || !grid) return MIL_ERR_INVALID;
  if (onnx_rank(x) != 4) return ONNX_UNSUP(c, "only 4-D inputs (N, C, H, W)");
  const char *mode = onnx_attr_s(c, n, "mode", n->opset < 20 ? "bilinear" : "linear");
  const char *pad = onnx_attr_s(c, n, "padding_mode", "zeros");
  const char *sm = !strcmp(mode, "bilinear") || !strcmp(mode, "linear") ? "bilinear" : !strcmp(mode, "nearest") ? "nearest" : NULL;
  bool cubic = !strcmp(mode, "bicubic") || !strcmp(mode, "cubic");
  if (!sm && !cubic) return ONNX_UNSUP(c, "mode '%s'", mode);
  const char *pm = !strcmp(pad, "zeros") ? "constant" : !strcmp(pad, "border") ? "border" : !strcmp(pad, "reflection") ? "reflection" : NULL;
  if (!pm) return ONNX_UNSUP(c, "padding_mode '%s'", pad);
  bool align = onnx_attr_i(n, "align_corners", 0) != 0;
  if (cubic) return grid_sample_bicubic(c, n, x, grid, align, pm);
  bool nearest = !strcmp(sm, "nearest");
  const char *cm = "normalized_minus_one_to_one";
  if (nearest || (!strcmp(pm, "reflection") && !align)) {
    int64_t H = x->type->dims[2].size, W = x->type->dims[3].size;
    if (H < 0 || W < 0)
      return ONNX_UNSUP(c, "%s with H or W known only at run time (the sampling points are computed from them)",
                        nearest ? "mode 'nearest'" : "padding_mode 'reflection' without align_corners");
    grid = grid_pixels(c, grid, align, nearest, pad, (double)W, (double)H);
    cm = "unnormalized";
    if (!strcmp(pm, "reflection")) pm = "border";
  }
  mil_dtype dt = onnx_dtype(x);
  return onnx_set_out(c, n, 0, ONNX_OP(c, "resample", A("x", x), A("coordinates", grid), K("sampling_mode", onnx_str(c, sm)),
                                       K("padding_mode", onnx_str(c, pm)), K("padding_value", onnx_fscalar(c, dt, 0)),
                                       K("coordinates_mode", onnx_str(c, cm)),
                                       K("align_corners", onnx_bool(c, align))));
}

const onnx_op_entry onnx_ops_resize[] = {
    {"GridSample", "", 16, 0, conv_grid_sample, "resample (nearest, reflection: add, mul, round, mod, select first; bicubic: 16 nearest taps, floor, mul, add)"},
    {"Resize", "", 10, 0, conv_resize, "upsample_nearest_neighbor / resize_bilinear / gather"},
    {"Upsample", "", 7, 9, conv_upsample, "upsample_nearest_neighbor / resize_bilinear / gather"},
    {NULL, NULL, 0, 0, NULL, NULL},
};
