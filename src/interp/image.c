/* Kernels of the "image_resizing" family (coremltools
 * ops/defs/iOS15/image_resizing.py, iOS16, iOS17) over the last two axes,
 * fp32 with fp16 widened and rounded at the output:
 *
 *   upsample_nearest_neighbor  src = floor(dst / scale)
 *   resize_nearest_neighbor    src = floor(dst * in / out)
 *   upsample_bilinear          align_corners: grid i * (in-1)/(out-1);
 *                              half_pixel_centers (default !align_corners):
 *                              (i + 0.5) * in/out - 0.5; neither: i * in/out
 *   resize_bilinear            sampling_mode STRICT_ALIGN_CORNERS,
 *                              ALIGN_CORNERS, DEFAULT, OFFSET_CORNERS,
 *                              UNALIGN_CORNERS, with the grids the op's
 *                              documentation gives; grid points are clamped
 *                              to [0, in-1]
 *   resize (iOS17)             either interpolation over the last one or two
 *                              axes with the resize_bilinear sampling modes
 *   crop                       drops crop_height / crop_width rows / columns
 *
 * crop_resize, affine and resample are in image_sample.c. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "interp/interp_internal.h"

typedef enum grid_mode { G_STRICT, G_ALIGN, G_DEFAULT, G_OFFSET, G_UNALIGN, G_ASYM } grid_mode;

static bool parse_mode(const char *s, grid_mode *m) {
  static const char *names[] = {"STRICT_ALIGN_CORNERS", "ALIGN_CORNERS", "DEFAULT", "OFFSET_CORNERS",
                                "UNALIGN_CORNERS"};
  for (int i = 0; i < 5; i++)
    if (strcmp(s, names[i]) == 0) {
      *m = (grid_mode)i;
      return true;
    }
  return false;
}

/* Sampling position of output index i (of n_out) in an input of n_in. */
static double grid(grid_mode m, int64_t n_in, int64_t n_out, int64_t i) {
  double in = (double)n_in, out = (double)n_out, g = 0;
  switch (m) {
  case G_STRICT: g = n_out > 1 ? i * (in - 1) / (out - 1) : 0; break;
  case G_ALIGN: g = n_out > 1 ? i * (in - 1) / (out - 1) : (in - 1) / 2; break;
  case G_DEFAULT: g = n_out > 1 ? i * (in - in / out) / (out - 1) : 0; break;
  case G_OFFSET: {
    double delta = (in - 1 > 1 ? in - 1 : 1) / out;
    g = 0.5 * delta + i * delta;
    break;
  }
  case G_UNALIGN: g = (i + 0.5) * in / out - 0.5; break;
  case G_ASYM: g = i * in / out; break;
  }
  if (g > in - 1) g = in - 1;
  if (g < 0) g = 0;
  return g;
}

/* Bilinear (or nearest when near) resampling of planes of (ih, iw) into
 * (oh, ow). For nearest, sh / sw are the scales (0: use in / out). */
static mil_status resample2d(interp_run *r, mil_infer_ctx *c, bool near, grid_mode mh, grid_mode mw, double sh,
                             double sw) {
  const mil_value *x = interp_fin(c, "x");
  int64_t xs[MIL_INTERP_MAX_RANK], os[MIL_INTERP_MAX_RANK];
  int32_t rank, xr = x ? interp_vshape(x, xs) : 0;
  if (!x || !interp_shape(c->out[0], os, &rank) || rank != xr || rank < 2) return INTERP_DECLINE;
  int64_t ih = xs[rank - 2], iw = xs[rank - 1], oh = os[rank - 2], ow = os[rank - 1];
  int64_t planes = ih > 0 && iw > 0 ? x->numel / (ih * iw) : 0;
  if (planes * oh * ow != interp_numel(rank, os)) return INTERP_DECLINE;
  float *tx;
  const float *xf = interp_f32(r, x, &tx);
  interp_fout o;
  float *y = xf ? interp_fout_begin(r, c, 0, &o) : NULL;
  if (!y) {
    free(tx);
    return interp_nomem(c);
  }
  if (ih == 0 || iw == 0) memset(y, 0, (size_t)o.v->numel * sizeof *y);
  for (int64_t p = 0; p < planes && ih && iw; p++) {
    const float *s = xf + p * ih * iw;
    float *d = y + p * oh * ow;
    for (int64_t i = 0; i < oh; i++)
      for (int64_t j = 0; j < ow; j++) {
        if (near) {
          int64_t a = (int64_t)floor(sh > 0 ? i / sh : (double)i * ih / oh);
          int64_t b = (int64_t)floor(sw > 0 ? j / sw : (double)j * iw / ow);
          a = a < ih ? a : ih - 1;
          b = b < iw ? b : iw - 1;
          d[i * ow + j] = s[a * iw + b];
          continue;
        }
        double gy = grid(mh, ih, oh, i), gx = grid(mw, iw, ow, j);
        int64_t y0 = (int64_t)floor(gy), x0 = (int64_t)floor(gx);
        int64_t y1 = y0 + 1 < ih ? y0 + 1 : ih - 1, x1 = x0 + 1 < iw ? x0 + 1 : iw - 1;
        double fy = gy - y0, fx = gx - x0;
        double top = s[y0 * iw + x0] * (1 - fx) + s[y0 * iw + x1] * fx;
        double bot = s[y1 * iw + x0] * (1 - fx) + s[y1 * iw + x1] * fx;
        d[i * ow + j] = (float)(top * (1 - fy) + bot * fy);
      }
  }
  free(tx);
  c->val[0] = interp_fout_end(&o);
  return MIL_OK;
}

static mil_status k_upsample_nearest_neighbor(interp_run *r, mil_infer_ctx *c) {
  return resample2d(r, c, true, G_DEFAULT, G_DEFAULT, op_f64(c, "scale_factor_height", 1),
                    op_f64(c, "scale_factor_width", 1));
}

static mil_status k_resize_nearest_neighbor(interp_run *r, mil_infer_ctx *c) {
  return resample2d(r, c, true, G_DEFAULT, G_DEFAULT, 0, 0);
}

static mil_status k_upsample_bilinear(interp_run *r, mil_infer_ctx *c) {
  bool align = op_bool(c, "align_corners", true);
  bool half = op_bool(c, "half_pixel_centers", !align);
  grid_mode m = align ? G_STRICT : half ? G_UNALIGN : G_ASYM;
  return resample2d(r, c, false, m, m, 0, 0);
}

static mil_status k_resize_bilinear(interp_run *r, mil_infer_ctx *c) {
  grid_mode m;
  const char *s = op_str(c, "sampling_mode", "DEFAULT");
  if (!parse_mode(s, &m)) return interp_fail(c, MIL_ERR_INVALID, "unknown sampling_mode \"%s\"", s);
  return resample2d(r, c, false, m, m, 0, 0);
}

static mil_status k_resize(interp_run *r, mil_infer_ctx *c) {
  grid_mode m;
  const char *s = op_str(c, "sampling_mode", "DEFAULT"), *im = op_str(c, "interpolation_mode", "LINEAR");
  if (!parse_mode(s, &m)) return interp_fail(c, MIL_ERR_INVALID, "unknown sampling_mode \"%s\"", s);
  bool near = strcmp(im, "NEAREST_NEIGHBOR") == 0;
  if (!near && strcmp(im, "LINEAR") != 0)
    return interp_fail(c, MIL_ERR_INVALID, "unknown interpolation_mode \"%s\"", im);
  const mil_value *x = op_val(c, "x");
  int64_t rd = op_int(c, "resized_dims", 0), xs[MIL_INTERP_MAX_RANK], os[MIL_INTERP_MAX_RANK];
  int32_t rank;
  if (!x || x->kind != MIL_VAL_TENSOR || !interp_shape(c->out[0], os, &rank) || rd < 0 || rd > 2) return INTERP_DECLINE;
  interp_vshape(x, xs);
  for (int32_t i = 0; i < rank - 2; i++)
    if (xs[i] != os[i]) return INTERP_DECLINE;
  if (rd < 2 && rank >= 2 && xs[rank - 2] != os[rank - 2]) return INTERP_DECLINE;
  if (!interp_is_f(x)) return INTERP_DECLINE;
  /* an axis that is not resized maps i -> i with any aligned grid */
  return resample2d(r, c, near, rd < 2 ? G_STRICT : m, rd < 1 ? G_STRICT : m, 0, 0);
}

static mil_status k_crop(interp_run *r, mil_infer_ctx *c) {
  const mil_value *x = op_val(c, "x");
  int64_t ch[2] = {0, 0}, cw[2] = {0, 0}, xs[MIL_INTERP_MAX_RANK];
  if (!x || x->kind != MIL_VAL_TENSOR || x->type->rank < 2) return INTERP_DECLINE;
  if ((op_has(c, "crop_height") && op_ints(c, "crop_height", ch, 2) != 2) ||
      (op_has(c, "crop_width") && op_ints(c, "crop_width", cw, 2) != 2))
    return INTERP_DECLINE;
  int32_t rank = interp_vshape(x, xs);
  int64_t ih = xs[rank - 2], iw = xs[rank - 1], oh = ih - ch[0] - ch[1], ow = iw - cw[0] - cw[1];
  size_t es = mil_dtype_size(x->type->dtype);
  if (!es || oh < 0 || ow < 0 || ch[0] < 0 || cw[0] < 0) return INTERP_DECLINE;
  mil_value *out = interp_new_value(r, c->out[0]);
  int64_t planes = ih > 0 && iw > 0 ? x->numel / (ih * iw) : 0;
  if (!out || out->numel != planes * oh * ow) return out ? INTERP_DECLINE : interp_nomem(c);
  char *d = mil_value_data_mut(out);
  for (int64_t p = 0; p < planes; p++)
    for (int64_t i = 0; i < oh; i++)
      memcpy(d + ((p * oh + i) * ow) * es, (const char *)mil_value_data(x) + ((p * ih + i + ch[0]) * iw + cw[0]) * es,
             (size_t)ow * es);
  c->val[0] = out;
  return MIL_OK;
}

const interp_kernel interp_kernels_image[] = {
    {"crop", k_crop, 0},
    {"resize", k_resize, 0},
    {"resize_bilinear", k_resize_bilinear, 0},
    {"resize_nearest_neighbor", k_resize_nearest_neighbor, 0},
    {"upsample_bilinear", k_upsample_bilinear, 0},
    {"upsample_nearest_neighbor", k_upsample_nearest_neighbor, 0},
};
INTERP_FAMILY_COUNT(image);
