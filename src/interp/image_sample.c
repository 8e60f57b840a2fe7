/* Kernels of the "image_resizing" ops that sample x (B, C, H, W) at
 * computed points (coremltools ops/defs/iOS15/image_resizing.py crop_resize,
 * affine, resample; iOS16 and iOS17 variants), fp32 with fp16 widened and
 * rounded at the output.
 *
 * crop_resize: each box [start, end] per axis (box_coordinate_mode; times
 *   spatial_scale; times H-1 / W-1 when normalized_coordinates) is sampled
 *   at target_height x target_width points placed by sampling_mode the way
 *   NeuralNetwork.proto's SamplingMode places them on an interval [0, X-1],
 *   here the interval [start, end] (X-1 = end - start; boxes may run
 *   backwards):
 *     STRICT_ALIGN_CORNERS  linspace(start, end)  (one point: start)
 *     ALIGN_CORNERS         linspace(start, end)  (one point: the middle)
 *     DEFAULT               start + min(X-1, linspace(0, X - X/N))
 *     OFFSET_CORNERS        spacing max(1, X-1)/N from 0.5 spacing, <= X-1
 *     UNALIGN_CORNERS       start + (i + 0.5) X/N - 0.5
 *   and read bilinearly; a point outside [0, H-1] x [0, W-1] reads pad_value
 *   (iOS16+, default 0; 0 before). iOS15/16: roi (N, 1, 4|5, 1, 1), every
 *   box applied to every image (4 coordinates) or to the image its first
 *   entry names (5; B must then be 1, the output being (N, B, ...));
 *   iOS17: boxes (N, 4) and box_indices (default 0..N-1), output (N, C, ...).
 * resample: coordinates (B, H2, W2, 2) hold (x, y) points, unnormalized or
 *   normalized to [-1, 1] / [0, 1] (align_corners: the extremes are the
 *   centers of the corner pixels, else their outer edges). bilinear reads
 *   four taps, a tap outside the image reading padding_value ("constant")
 *   or the point first clamped ("border") or reflected about the edge
 *   pixel centers ("reflection") or about the outer edges ("symmetric");
 *   nearest rounds the point (half up) and maps the index the same way.
 * affine: output pixel (h, w) at normalized (x, y) in [-1, 1] (align_corners
 *   as above) reads x at (a0 x + a1 y + a2, b0 x + b1 y + b2), normalized
 *   the same way, with resample's sampling and padding; transform_matrix
 *   (D, 6) has one row per batch item or one for all.
 * The expected values of coremltools' tests (ops/tests/iOS14..iOS17/
 * test_image_resizing.py) are in tests/unit/test_interp_image.c. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "interp/interp_internal.h"

/* ---------- sampling one plane ---------- */

typedef enum pad_mode { PAD_CONSTANT, PAD_BORDER, PAD_REFLECTION, PAD_SYMMETRIC } pad_mode;

typedef struct sampler {
  bool nearest;
  pad_mode pad;
  float pad_value;
} sampler;

/* Index i mapped into [0, n) by the padding mode; -1 for "constant". */
static int64_t map_index(pad_mode m, int64_t i, int64_t n) {
  if (i >= 0 && i < n) return i;
  switch (m) {
  case PAD_CONSTANT: return -1;
  case PAD_BORDER: return i < 0 ? 0 : n - 1;
  case PAD_REFLECTION: {
    if (n == 1) return 0;
    int64_t p = 2 * (n - 1), k = ((i % p) + p) % p;
    return k < n ? k : p - k;
  }
  case PAD_SYMMETRIC: {
    int64_t p = 2 * n, k = ((i % p) + p) % p;
    return k < n ? k : p - 1 - k;
  }
  }
  return -1;
}

/* A continuous coordinate folded into the image by the padding mode
 * (bilinear sampling); "constant" leaves it. */
static double fold_coord(pad_mode m, double p, int64_t n) {
  if (m == PAD_BORDER) return p < 0 ? 0 : p > (double)(n - 1) ? (double)(n - 1) : p;
  if (m == PAD_REFLECTION) {
    if (n == 1) return 0;
    double per = 2.0 * (double)(n - 1), k = fmod(fabs(p), per);
    return k <= (double)(n - 1) ? k : per - k;
  }
  if (m == PAD_SYMMETRIC) {
    double per = 2.0 * (double)n, k = fmod(p + 0.5, per);
    if (k < 0) k += per;
    k = k < (double)n ? k : per - k;
    k -= 0.5;
    return k < 0 ? 0 : k > (double)(n - 1) ? (double)(n - 1) : k;
  }
  return p;
}

static float tap(const sampler *s, const float *plane, int64_t h, int64_t w, int64_t y, int64_t x) {
  if (y < 0 || y >= h || x < 0 || x >= w) return s->pad_value;
  return plane[y * w + x];
}

/* The value of plane (h, w) at (py, px). */
static float sample(const sampler *s, const float *plane, int64_t h, int64_t w, double py, double px) {
  if (s->nearest) {
    int64_t y = map_index(s->pad, (int64_t)floor(py + 0.5), h), x = map_index(s->pad, (int64_t)floor(px + 0.5), w);
    return y < 0 || x < 0 ? s->pad_value : plane[y * w + x];
  }
  py = fold_coord(s->pad, py, h);
  px = fold_coord(s->pad, px, w);
  double fy = floor(py), fx = floor(px);
  int64_t y0 = (int64_t)fy, x0 = (int64_t)fx;
  double dy = py - fy, dx = px - fx;
  double top = tap(s, plane, h, w, y0, x0) * (1 - dx) + (dx > 0 ? tap(s, plane, h, w, y0, x0 + 1) * dx : 0);
  double bot = dy > 0 ? tap(s, plane, h, w, y0 + 1, x0) * (1 - dx) +
                            (dx > 0 ? tap(s, plane, h, w, y0 + 1, x0 + 1) * dx : 0)
                      : 0;
  return (float)(top * (1 - dy) + bot * dy);
}

/* ---------- shared argument handling ---------- */

/* x as fp32 (B, C, H, W) and the output buffer of c->out[0]. */
typedef struct planes {
  const float *x;
  float *tx;
  int64_t b, ch, h, w;
  int64_t os[MIL_INTERP_MAX_RANK];
  int32_t orank;
  interp_fout o;
  float *y;
} planes;

static mil_status planes_begin(interp_run *r, mil_infer_ctx *c, planes *p) {
  memset(p, 0, sizeof *p);
  const mil_value *x = interp_fin(c, "x");
  int64_t xs[MIL_INTERP_MAX_RANK];
  if (!x || interp_vshape(x, xs) != 4 || !interp_shape(c->out[0], p->os, &p->orank)) return INTERP_DECLINE;
  p->b = xs[0], p->ch = xs[1], p->h = xs[2], p->w = xs[3];
  p->x = interp_f32(r, x, &p->tx);
  p->y = p->x ? interp_fout_begin(r, c, 0, &p->o) : NULL;
  if (!p->y) {
    free(p->tx);
    return interp_nomem(c);
  }
  return MIL_OK;
}

static mil_status planes_end(mil_infer_ctx *c, planes *p, mil_status st) {
  free(p->tx);
  if (st == MIL_OK) c->val[0] = interp_fout_end(&p->o);
  else interp_fout_abort(&p->o);
  return st;
}

static bool parse_sampler(mil_infer_ctx *c, sampler *s) {
  const char *sm = op_str(c, "sampling_mode", "bilinear"), *pm = op_str(c, "padding_mode", "constant");
  s->nearest = strcmp(sm, "nearest") == 0;
  if (!s->nearest && strcmp(sm, "bilinear") != 0) {
    interp_fail(c, MIL_ERR_INVALID, "unknown sampling_mode \"%s\" (expected \"bilinear\" or \"nearest\")", sm);
    return false;
  }
  static const char *pads[] = {"constant", "border", "reflection", "symmetric"};
  for (int i = 0; i < 4; i++)
    if (strcmp(pm, pads[i]) == 0) {
      s->pad = (pad_mode)i;
      s->pad_value = (float)op_f64(c, "padding_value", 0);
      return true;
    }
  interp_fail(c, MIL_ERR_INVALID,
              "unknown padding_mode \"%s\" (expected \"constant\", \"border\", \"reflection\" or \"symmetric\")", pm);
  return false;
}

typedef enum coord_mode { C_UNNORM, C_MINUS_ONE, C_ZERO_ONE } coord_mode;

static bool parse_coords(mil_infer_ctx *c, coord_mode *m) {
  const char *s = op_str(c, "coordinates_mode", "unnormalized");
  if (!strcmp(s, "unnormalized")) *m = C_UNNORM;
  else if (!strcmp(s, "normalized_minus_one_to_one")) *m = C_MINUS_ONE;
  else if (!strcmp(s, "normalized_zero_to_one")) *m = C_ZERO_ONE;
  else {
    interp_fail(c, MIL_ERR_INVALID, "unknown coordinates_mode \"%s\"", s);
    return false;
  }
  return true;
}

/* A coordinate of mode m on an axis of n pixels, in pixels. */
static double to_pixel(coord_mode m, bool align, double v, int64_t n) {
  double N = (double)n;
  switch (m) {
  case C_UNNORM: return v;
  case C_MINUS_ONE: return align ? (v + 1) / 2 * (N - 1) : ((v + 1) * N - 1) / 2;
  case C_ZERO_ONE: return align ? v * (N - 1) : v * N - 0.5;
  }
  return v;
}

/* The sampling inputs of resample / affine (align_corners defaulting to
 * align_dflt) and x with the output buffer. */
static mil_status sampling_begin(interp_run *r, mil_infer_ctx *c, bool align_dflt, sampler *s, coord_mode *cm,
                                 bool *align, planes *p) {
  if (!parse_sampler(c, s) || !parse_coords(c, cm)) return MIL_ERR_INVALID;
  *align = op_bool(c, "align_corners", align_dflt);
  return planes_begin(r, c, p);
}

/* ---------- resample ---------- */

static mil_status k_resample(interp_run *r, mil_infer_ctx *c) {
  const mil_value *co = op_val(c, "coordinates");
  int64_t cs[MIL_INTERP_MAX_RANK];
  if (!co || co->kind != MIL_VAL_TENSOR || interp_vshape(co, cs) != 4 || cs[3] != 2) return INTERP_DECLINE;
  sampler s;
  coord_mode cm;
  bool align;
  planes p;
  mil_status st = sampling_begin(r, c, false, &s, &cm, &align, &p);
  if (st != MIL_OK) return st;
  int64_t oh = cs[1], ow = cs[2];
  if (cs[0] != p.b || p.orank != 4 || p.os[2] != oh || p.os[3] != ow)
    return planes_end(c, &p, interp_fail(c, MIL_ERR_INVALID, "coordinates do not match x and the output"));
  for (int64_t b = 0; b < p.b; b++)
    for (int64_t i = 0; i < oh * ow; i++) {
      int64_t k = (b * oh * ow + i) * 2;
      double px = to_pixel(cm, align, mil_value_get_f64(co, k), p.w);
      double py = to_pixel(cm, align, mil_value_get_f64(co, k + 1), p.h);
      for (int64_t ch = 0; ch < p.ch; ch++)
        p.y[(b * p.ch + ch) * oh * ow + i] = sample(&s, p.x + (b * p.ch + ch) * p.h * p.w, p.h, p.w, py, px);
    }
  return planes_end(c, &p, MIL_OK);
}

/* ---------- affine ---------- */

static mil_status k_affine(interp_run *r, mil_infer_ctx *c) {
  const mil_value *tm = op_val(c, "transform_matrix");
  int64_t ts[MIL_INTERP_MAX_RANK];
  if (!tm || tm->kind != MIL_VAL_TENSOR || interp_vshape(tm, ts) != 2 || ts[1] != 6) return INTERP_DECLINE;
  sampler s;
  coord_mode cm;
  bool align;
  planes p;
  mil_status st = sampling_begin(r, c, true, &s, &cm, &align, &p);
  if (st != MIL_OK) return st;
  if (ts[0] != 1 && ts[0] != p.b)
    return planes_end(c, &p, interp_fail(c, MIL_ERR_INVALID, "transform_matrix has %lld rows for a batch of %lld",
                                         (long long)ts[0], (long long)p.b));
  int64_t oh = p.os[2], ow = p.os[3];
  for (int64_t b = 0; b < p.b; b++) {
    double m[6];
    for (int k = 0; k < 6; k++) m[k] = mil_value_get_f64(tm, (ts[0] == 1 ? 0 : b) * 6 + k);
    for (int64_t i = 0; i < oh; i++)
      for (int64_t j = 0; j < ow; j++) {
        /* the output pixel in the coordinate system of coordinates_mode */
        double xo = cm == C_UNNORM ? (double)j : align ? (ow > 1 ? (double)j / (double)(ow - 1) : 0.5)
                                                        : ((double)j + 0.5) / (double)ow;
        double yo = cm == C_UNNORM ? (double)i : align ? (oh > 1 ? (double)i / (double)(oh - 1) : 0.5)
                                                        : ((double)i + 0.5) / (double)oh;
        if (cm == C_MINUS_ONE) xo = 2 * xo - 1, yo = 2 * yo - 1;
        double xt = m[0] * xo + m[1] * yo + m[2], yt = m[3] * xo + m[4] * yo + m[5];
        double px = to_pixel(cm, align, xt, p.w), py = to_pixel(cm, align, yt, p.h);
        for (int64_t ch = 0; ch < p.ch; ch++)
          p.y[((b * p.ch + ch) * oh + i) * ow + j] = sample(&s, p.x + (b * p.ch + ch) * p.h * p.w, p.h, p.w, py, px);
      }
  }
  return planes_end(c, &p, MIL_OK);
}

/* ---------- crop_resize ---------- */

typedef enum box_grid { B_STRICT, B_ALIGN, B_DEFAULT, B_OFFSET, B_UNALIGN } box_grid;

/* Point i of n on the interval [s, e] (see the top of the file). */
static double box_point(box_grid g, double s, double e, int64_t n, int64_t i) {
  double d = e - s, N = (double)n, X = d + 1, t;
  switch (g) {
  case B_STRICT: return n > 1 ? s + (double)i * d / (N - 1) : s;
  case B_ALIGN: return n > 1 ? s + (double)i * d / (N - 1) : s + d / 2;
  case B_DEFAULT:
    t = n > 1 ? (double)i * (X - X / N) / (N - 1) : 0;
    return s + (d >= 0 && t > d ? d : t);
  case B_OFFSET: {
    double sp = (d > 1 ? d : 1) / N;
    t = 0.5 * sp + (double)i * sp;
    return s + (d >= 0 && t > d ? d : t);
  }
  case B_UNALIGN: return s + ((double)i + 0.5) * X / N - 0.5;
  }
  return s;
}

/* Bilinear read of plane (h, w) at (py, px); pad outside the image. */
static float crop_read(const float *plane, int64_t h, int64_t w, double py, double px, float pad) {
  if (py < 0 || py > (double)(h - 1) || px < 0 || px > (double)(w - 1)) return pad;
  int64_t y0 = (int64_t)floor(py), x0 = (int64_t)floor(px);
  int64_t y1 = y0 + 1 < h ? y0 + 1 : h - 1, x1 = x0 + 1 < w ? x0 + 1 : w - 1;
  double dy = py - (double)y0, dx = px - (double)x0;
  double top = plane[y0 * w + x0] * (1 - dx) + plane[y0 * w + x1] * dx;
  double bot = plane[y1 * w + x0] * (1 - dx) + plane[y1 * w + x1] * dx;
  return (float)(top * (1 - dy) + bot * dy);
}

typedef struct crop_args {
  box_grid grid;
  int box_mode; /* 0 CORNERS_HEIGHT_FIRST, 1 CORNERS_WIDTH_FIRST, 2 CENTER_SIZE_HEIGHT_FIRST, 3 ..._WIDTH_FIRST */
  bool normalized;
  double scale;
  float pad;
  int64_t th, tw;
} crop_args;

/* Crops box c4 (4 coordinates) of image plane set img (C planes) into out. */
static void crop_one(const crop_args *a, const planes *p, const double *c4, const float *img, float *out) {
  double v[4];
  for (int k = 0; k < 4; k++) v[k] = c4[k] * a->scale;
  bool wfirst = a->box_mode == 1 || a->box_mode == 3;
  double h0 = wfirst ? v[1] : v[0], w0 = wfirst ? v[0] : v[1], h1 = wfirst ? v[3] : v[2], w1 = wfirst ? v[2] : v[3];
  if (a->box_mode >= 2) { /* center and size */
    double hc = h0, wc = w0, bh = h1, bw = w1;
    h0 = hc - bh / 2, h1 = hc + bh / 2, w0 = wc - bw / 2, w1 = wc + bw / 2;
  }
  if (a->normalized) {
    h0 *= (double)(p->h - 1), h1 *= (double)(p->h - 1), w0 *= (double)(p->w - 1), w1 *= (double)(p->w - 1);
  }
  for (int64_t ch = 0; ch < p->ch; ch++) {
    const float *plane = img + ch * p->h * p->w;
    for (int64_t i = 0; i < a->th; i++) {
      double py = box_point(a->grid, h0, h1, a->th, i);
      for (int64_t j = 0; j < a->tw; j++)
        out[(ch * a->th + i) * a->tw + j] = crop_read(plane, p->h, p->w, py, box_point(a->grid, w0, w1, a->tw, j),
                                                      a->pad);
    }
  }
}

static mil_status k_crop_resize(interp_run *r, mil_infer_ctx *c) {
  static const char *grids[] = {"STRICT_ALIGN_CORNERS", "ALIGN_CORNERS", "DEFAULT", "OFFSET_CORNERS",
                                "UNALIGN_CORNERS"};
  static const char *boxes[] = {"CORNERS_HEIGHT_FIRST", "CORNERS_WIDTH_FIRST", "CENTER_SIZE_HEIGHT_FIRST",
                                "CENTER_SIZE_WIDTH_FIRST"};
  crop_args a = {B_DEFAULT, 0, op_bool(c, "normalized_coordinates", false), op_f64(c, "spatial_scale", 1),
                 (float)op_f64(c, "pad_value", 0), op_int(c, "target_height", 1), op_int(c, "target_width", 1)};
  const char *gs = op_str(c, "sampling_mode", "DEFAULT"), *bs = op_str(c, "box_coordinate_mode", "CORNERS_HEIGHT_FIRST");
  int gi = 0, bi = 0;
  while (gi < 5 && strcmp(gs, grids[gi])) gi++;
  while (bi < 4 && strcmp(bs, boxes[bi])) bi++;
  if (gi == 5 || bi == 4) return interp_fail(c, MIL_ERR_INVALID, "unknown sampling_mode or box_coordinate_mode");
  a.grid = (box_grid)gi;
  a.box_mode = bi;
  bool v17 = op_has(c, "boxes");
  const mil_value *bx = op_val(c, v17 ? "boxes" : "roi"), *idx = v17 ? op_val(c, "box_indices") : NULL;
  int64_t bsh[MIL_INTERP_MAX_RANK];
  if (!bx || bx->kind != MIL_VAL_TENSOR) return INTERP_DECLINE;
  int32_t brank = interp_vshape(bx, bsh);
  int64_t n = bsh[0], per = v17 ? 4 : brank == 5 ? bsh[2] : 0;
  if ((v17 && (brank != 2 || per != 4)) || (!v17 && (brank != 5 || (per != 4 && per != 5)))) return INTERP_DECLINE;
  planes p;
  mil_status st = planes_begin(r, c, &p);
  if (st != MIL_OK) return st;
  int64_t chunk = p.ch * a.th * a.tw;
  if (!v17 && per == 5 && p.b != 1)
    st = interp_fail(c, MIL_ERR_UNSUPPORTED,
                     "a roi with image indices (N, 1, 5, 1, 1) gives Core ML's (N, 1, C, h, w) output, but the "
                     "op's type is (N, B, C, h, w) with B = %lld",
                     (long long)p.b);
  for (int64_t k = 0; st == MIL_OK && k < n; k++) {
    double c5[5];
    for (int q = 0; q < per; q++) c5[q] = mil_value_get_f64(bx, k * per + q);
    const double *coords = per == 5 ? c5 + 1 : c5;
    if (v17 || per == 5) {
      int64_t img = v17 ? (idx ? mil_value_get_i64(idx, k) : k) : (int64_t)c5[0];
      if (img < 0 || img >= p.b) {
        st = interp_fail(c, MIL_ERR_INVALID, "box %lld names image %lld of a batch of %lld", (long long)k,
                         (long long)img, (long long)p.b);
        break;
      }
      crop_one(&a, &p, coords, p.x + img * p.ch * p.h * p.w, p.y + k * chunk);
    } else {
      for (int64_t b = 0; b < p.b; b++)
        crop_one(&a, &p, coords, p.x + b * p.ch * p.h * p.w, p.y + (k * p.b + b) * chunk);
    }
  }
  return planes_end(c, &p, st);
}

const interp_kernel interp_kernels_image_sample[] = {
    {"affine", k_affine, 0},
    {"crop_resize", k_crop_resize, 0},
    {"resample", k_resample, 0},
};
INTERP_FAMILY_COUNT(image_sample);
