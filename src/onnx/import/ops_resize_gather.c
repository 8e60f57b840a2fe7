/* ONNX Resize / Upsample spelled out with gathers, for what MIL's resize ops
 * cannot express: scales or sizes computed at run time, and the coordinate
 * and rounding modes they lack. Along each resized axis, the source
 * coordinate of output index i follows ONNX's coordinate_transformation_mode
 * (half_pixel, pytorch_half_pixel, align_corners, asymmetric,
 * tf_half_pixel_for_nn) with the scale ONNX uses (the given scale, or
 * output size / input size when sizes are given), or, for
 * tf_crop_and_resize, from the axis' roi start and end (output indices
 * span [start, end] of the input, align-corners style; coordinates outside
 * the input give extrapolation_value, as in ONNX's reference, which along
 * several axes is the same as replacing them axis by axis); nearest rounds it by
 * nearest_mode and gathers, linear gathers the two neighbours (clamped to
 * the edges) and interpolates, cubic weights four neighbours by Keys'
 * kernel (cubic_coeff_a, exclude_outside). No family table of its own: ops_resize.c
 * dispatches here. */
#include <string.h>

#include "onnx/import/import_internal.h"

static mil_var *f32(onnx_ctx *c, double v) { return onnx_const(c, onnx_f32(c, v)); }

/* element k of a rank-1 var as a scalar */
static mil_var *at(onnx_ctx *c, mil_var *v, int64_t k) {
  return ONNX_OP(c, "gather", A("x", v), K("indices", onnx_i32(c, k)), K("axis", onnx_i32(c, 0)));
}

/* min(max(v, lo), hi) for scalar / tensor vars */
static mil_var *clamp(onnx_ctx *c, mil_var *v, mil_var *lo, mil_var *hi) {
  return ONNX_OP(c, "minimum", A("x", ONNX_OP(c, "maximum", A("x", v), A("y", lo))), A("y", hi));
}

/* w (O) shaped to broadcast along axis ax of a rank-`rank` tensor */
static mil_var *along(onnx_ctx *c, mil_var *w, int32_t ax, int32_t rank) {
  int32_t trail = rank - 1 - ax;
  if (trail <= 0 || !w) return w;
  int64_t axes[MIL_INTERP_MAX_RANK_ONNX];
  for (int32_t k = 0; k < trail; k++) axes[k] = 1 + k;
  return ONNX_OP(c, "expand_dims", A("x", w), K("axes", onnx_i32s(c, trail, axes)));
}

/* Keys' cubic kernel with coefficient a at distance d (|d| < 2). */
static mil_var *cubic_weight(onnx_ctx *c, mil_var *d, double a) {
  mil_var *d2 = ONNX_OP(c, "mul", A("x", d), A("y", d)), *d3 = ONNX_OP(c, "mul", A("x", d2), A("y", d));
  /* |d| <= 1: (a + 2) d^3 - (a + 3) d^2 + 1; else a d^3 - 5a d^2 + 8a d - 4a */
  mil_var *near = ONNX_OP(c, "add", A("x", ONNX_OP(c, "sub", A("x", ONNX_OP(c, "mul", A("x", d3), K("y", onnx_f32(c, a + 2)))),
                                                    A("y", ONNX_OP(c, "mul", A("x", d2), K("y", onnx_f32(c, a + 3)))))),
                          K("y", onnx_f32(c, 1)));
  mil_var *far = ONNX_OP(c, "add", A("x", ONNX_OP(c, "mul", A("x", d3), K("y", onnx_f32(c, a)))),
                         A("y", ONNX_OP(c, "mul", A("x", d2), K("y", onnx_f32(c, -5 * a)))));
  far = ONNX_OP(c, "add", A("x", far), A("y", ONNX_OP(c, "add", A("x", ONNX_OP(c, "mul", A("x", d), K("y", onnx_f32(c, 8 * a)))),
                                                           K("y", onnx_f32(c, -4 * a)))));
  return ONNX_OP(c, "select", A("cond", ONNX_OP(c, "less_equal", A("x", d), K("y", onnx_f32(c, 1)))), A("a", near), A("b", far));
}

/* cubic: the four neighbours x0 - 1 .. x0 + 2 (clamped to the edges)
 * weighted by the kernel; exclude_outside drops the ones outside and
 * renormalizes. */
static mil_var *cubic(onnx_ctx *c, mil_var *x, int32_t ax, mil_var *pos, mil_var *last, double a, bool exclude) {
  int32_t rank = onnx_rank(x);
  mil_var *x0 = ONNX_OP(c, "floor", A("x", pos)), *t = ONNX_OP(c, "sub", A("x", pos), A("y", x0));
  mil_var *g[4], *w[4], *sum = NULL;
  for (int k = 0; k < 4; k++) {
    mil_var *p = ONNX_OP(c, "add", A("x", x0), K("y", onnx_f32(c, k - 1)));
    mil_var *d = ONNX_OP(c, "abs", A("x", ONNX_OP(c, "sub", A("x", t), K("y", onnx_f32(c, k - 1)))));
    w[k] = cubic_weight(c, d, a);
    if (exclude) {
      mil_var *in = ONNX_OP(c, "logical_and", A("x", ONNX_OP(c, "greater_equal", A("x", p), K("y", onnx_f32(c, 0)))),
                            A("y", ONNX_OP(c, "less_equal", A("x", p), A("y", last))));
      w[k] = ONNX_OP(c, "mul", A("x", w[k]), A("y", onnx_cast(c, in, MIL_DT_FP32)));
      sum = sum ? ONNX_OP(c, "add", A("x", sum), A("y", w[k])) : w[k];
    }
    mil_var *idx = onnx_cast(c, clamp(c, p, f32(c, 0), last), MIL_DT_INT32);
    g[k] = ONNX_OP(c, "gather", A("x", x), A("indices", idx), K("axis", onnx_i32(c, ax)));
  }
  mil_var *r = NULL;
  for (int k = 0; k < 4; k++) {
    mil_var *wk = exclude ? ONNX_OP(c, "real_div", A("x", w[k]), A("y", sum)) : w[k];
    mil_var *term = ONNX_OP(c, "mul", A("x", g[k]), A("y", along(c, wk, ax, rank)));
    r = r ? ONNX_OP(c, "add", A("x", r), A("y", term)) : term;
  }
  return r;
}

static mil_var *sample(onnx_ctx *c, mil_var *x, int32_t ax, mil_var *pos, mil_var *last, int mode, const char *nm,
                       double a, bool exclude);

/* the tf_crop_and_resize crop of one axis: roi start and end (fp32
 * scalars) and the value of coordinates outside the input */
typedef struct crop {
  mil_var *start, *end;
  double extrapolation;
} crop;

/* x resized along axis ax: L and O are int32 scalars, s the fp32 scale;
 * mode 0 nearest, 1 linear, 2 cubic (coefficient a, exclude_outside);
 * cr for tf_crop_and_resize */
static mil_var *resize_axis(onnx_ctx *c, mil_var *x, int32_t ax, mil_var *L, mil_var *O, mil_var *s, int mode,
                            const char *coord, const char *nm, double a, bool exclude, const crop *cr) {
  int32_t rank = onnx_rank(x);
  mil_var *Lf = onnx_cast(c, L, MIL_DT_FP32), *Of = onnx_cast(c, O, MIL_DT_FP32);
  mil_var *i = onnx_cast(c, ONNX_OP(c, "range_1d", K("start", onnx_i32(c, 0)), A("end", O), K("step", onnx_i32(c, 1))), MIL_DT_FP32);
  mil_var *half = ONNX_OP(c, "add", A("x", i), K("y", onnx_f32(c, 0.5)));
  mil_var *pos;
  if (!strcmp(coord, "half_pixel") || !strcmp(coord, "pytorch_half_pixel")) {
    pos = ONNX_OP(c, "sub", A("x", ONNX_OP(c, "real_div", A("x", half), A("y", s))), K("y", onnx_f32(c, 0.5)));
    if (!strcmp(coord, "pytorch_half_pixel"))
      pos = ONNX_OP(c, "select", A("cond", ONNX_OP(c, "greater", A("x", O), K("y", onnx_i32(c, 1)))), A("a", pos), K("b", onnx_f32(c, 0)));
  } else if (!strcmp(coord, "align_corners")) {
    /* ONNX's resized length here is input * scale, not floored */
    mil_var *den = ONNX_OP(c, "sub", A("x", ONNX_OP(c, "mul", A("x", Lf), A("y", s))), K("y", onnx_f32(c, 1)));
    mil_var *one = ONNX_OP(c, "less_equal", A("x", Of), K("y", onnx_f32(c, 1)));
    den = ONNX_OP(c, "select", A("cond", one), K("a", onnx_f32(c, 1)), A("b", den));
    pos = ONNX_OP(c, "mul", A("x", i), A("y", ONNX_OP(c, "real_div", A("x", ONNX_OP(c, "sub", A("x", Lf), K("y", onnx_f32(c, 1)))), A("y", den))));
    pos = ONNX_OP(c, "select", A("cond", one), K("a", onnx_f32(c, 0)), A("b", pos));
  } else if (cr) {
    /* O > 1: start (L - 1) + i (end - start) (L - 1) / (O - 1); else the
     * middle of the crop, (start + end) / 2 (L - 1) */
    mil_var *lm1 = ONNX_OP(c, "sub", A("x", Lf), K("y", onnx_f32(c, 1)));
    mil_var *many = ONNX_OP(c, "greater", A("x", Of), K("y", onnx_f32(c, 1)));
    mil_var *den = ONNX_OP(c, "select", A("cond", many), A("a", ONNX_OP(c, "sub", A("x", Of), K("y", onnx_f32(c, 1)))),
                           K("b", onnx_f32(c, 1)));
    mil_var *step = ONNX_OP(c, "real_div", A("x", ONNX_OP(c, "mul", A("x", ONNX_OP(c, "sub", A("x", cr->end), A("y", cr->start))), A("y", lm1))),
                            A("y", den));
    mil_var *p0 = ONNX_OP(c, "mul", A("x", cr->start), A("y", lm1));
    mil_var *mid = ONNX_OP(c, "mul", A("x", ONNX_OP(c, "mul", A("x", ONNX_OP(c, "add", A("x", cr->start), A("y", cr->end))), K("y", onnx_f32(c, 0.5)))),
                           A("y", lm1));
    pos = ONNX_OP(c, "add", A("x", p0), A("y", ONNX_OP(c, "mul", A("x", i), A("y", step))));
    pos = ONNX_OP(c, "select", A("cond", many), A("a", pos), A("b", ONNX_OP(c, "add", A("x", ONNX_OP(c, "mul", A("x", i), K("y", onnx_f32(c, 0)))), A("y", mid))));
  } else if (!strcmp(coord, "asymmetric")) pos = ONNX_OP(c, "real_div", A("x", i), A("y", s));
  else pos = ONNX_OP(c, "real_div", A("x", half), A("y", s)); /* tf_half_pixel_for_nn */
  mil_var *last = ONNX_OP(c, "sub", A("x", Lf), K("y", onnx_f32(c, 1)));
  mil_var *r = sample(c, x, ax, pos, last, mode, nm, a, exclude);
  if (!cr || !r) return r;
  /* extrapolation_value where pos is outside [0, L - 1] */
  mil_var *out = ONNX_OP(c, "logical_or", A("x", ONNX_OP(c, "less", A("x", pos), K("y", onnx_f32(c, 0)))),
                         A("y", ONNX_OP(c, "greater", A("x", pos), A("y", last))));
  return ONNX_OP(c, "select", A("cond", along(c, out, ax, rank)), K("a", onnx_f32(c, cr->extrapolation)), A("b", r));
}

/* x sampled along axis ax at source coordinates pos (clamped to [0, last]) */
static mil_var *sample(onnx_ctx *c, mil_var *x, int32_t ax, mil_var *pos, mil_var *last, int mode, const char *nm,
                       double a, bool exclude) {
  bool nearest = mode == 0;
  int32_t rank = onnx_rank(x);
  if (mode == 2) return cubic(c, x, ax, pos, last, a, exclude);
  if (nearest) {
    mil_var *r = !strcmp(nm, "floor")               ? ONNX_OP(c, "floor", A("x", pos))
                 : !strcmp(nm, "ceil")              ? ONNX_OP(c, "ceil", A("x", pos))
                 : !strcmp(nm, "round_prefer_ceil") ? ONNX_OP(c, "floor", A("x", ONNX_OP(c, "add", A("x", pos), K("y", onnx_f32(c, 0.5)))))
                                                    : ONNX_OP(c, "ceil", A("x", ONNX_OP(c, "sub", A("x", pos), K("y", onnx_f32(c, 0.5)))));
    mil_var *idx = onnx_cast(c, clamp(c, r, f32(c, 0), last), MIL_DT_INT32);
    return ONNX_OP(c, "gather", A("x", x), A("indices", idx), K("axis", onnx_i32(c, ax)));
  }
  mil_var *xc = clamp(c, pos, f32(c, 0), last);
  mil_var *x0 = ONNX_OP(c, "floor", A("x", xc));
  mil_var *w = ONNX_OP(c, "sub", A("x", xc), A("y", x0));
  mil_var *x1 = ONNX_OP(c, "minimum", A("x", ONNX_OP(c, "add", A("x", x0), K("y", onnx_f32(c, 1)))), A("y", last));
  mil_var *g0 = ONNX_OP(c, "gather", A("x", x), A("indices", onnx_cast(c, x0, MIL_DT_INT32)), K("axis", onnx_i32(c, ax)));
  mil_var *g1 = ONNX_OP(c, "gather", A("x", x), A("indices", onnx_cast(c, x1, MIL_DT_INT32)), K("axis", onnx_i32(c, ax)));
  w = along(c, w, ax, rank);
  return ONNX_OP(c, "add", A("x", g0), A("y", ONNX_OP(c, "mul", A("x", ONNX_OP(c, "sub", A("x", g1), A("y", g0))), A("y", w))));
}

mil_status onnx_resize_gather(onnx_ctx *c, onnx_node *n, mil_var *x, mil_var *scales, mil_var *sizes, const char *mode,
                              const char *coord, const char *nm) {
  int m = !strcmp(mode, "nearest") ? 0 : !strcmp(mode, "linear") || !strcmp(mode, "bilinear") ? 1 : !strcmp(mode, "cubic") ? 2 : -1;
  if (m < 0) return ONNX_UNSUP(c, "mode '%s'", mode);
  bool nearest = m == 0;
  double a = onnx_attr_f(n, "cubic_coeff_a", -0.75f);
  bool exclude = onnx_attr_i(n, "exclude_outside", 0) != 0;
  static const char *const coords[] = {"half_pixel",           "pytorch_half_pixel", "align_corners", "asymmetric",
                                       "tf_half_pixel_for_nn", "tf_crop_and_resize", NULL};
  bool known = false;
  for (const char *const *k = coords; *k; k++) known |= !strcmp(*k, coord);
  if (!known) return ONNX_UNSUP(c, "coordinate_transformation_mode '%s'", coord);
  int32_t rank = onnx_rank(x);
  if (rank < 1 || rank > MIL_INTERP_MAX_RANK_ONNX) return ONNX_UNSUP(c, "input of unknown rank");
  bool tf = !strcmp(coord, "tf_crop_and_resize");
  mil_var *roi = tf ? onnx_in(n, 1) : NULL;
  if (tf && (!roi || onnx_rank(roi) != 1 || roi->type->dims[0].size != 2 * rank))
    return onnx_fail(c, MIL_ERR_INVALID, "tf_crop_and_resize needs roi with 2 x %d entries (starts, then ends)", (int)rank);
  if (roi) roi = onnx_cast(c, roi, MIL_DT_FP32);
  crop cr = {NULL, NULL, onnx_attr_f(n, "extrapolation_value", 0)};
  mil_var *v = sizes ? sizes : scales;
  if (!v || onnx_rank(v) != 1 || v->type->dims[0].size != rank)
    return onnx_fail(c, MIL_ERR_INVALID, "scales / sizes must have one entry per dim (%d)", (int)rank);
  mil_dtype dt = onnx_dtype(x);
  mil_var *r = nearest || mil_dtype_is_float(dt) ? x : onnx_cast(c, x, MIL_DT_FP32);
  mil_var *shape = onnx_shape_of(c, x);
  mil_var *vv = onnx_cast(c, v, sizes ? MIL_DT_INT32 : MIL_DT_FP32);
  for (int32_t ax = 0; ax < rank && r; ax++) {
    /* an axis known to keep its size is left alone */
    const mil_value *kv = onnx_val(vv);
    int64_t dim = x->type->dims[ax].size;
    const mil_value *rv = roi ? onnx_val(roi) : NULL;
    bool whole = !roi || (rv && mil_value_get_f64(rv, ax) == 0 && mil_value_get_f64(rv, rank + ax) == 1);
    if (whole && kv && (sizes ? mil_value_get_i64(kv, ax) == dim : mil_value_get_f64(kv, ax) == 1.0)) continue;
    if (roi) cr.start = at(c, roi, ax), cr.end = at(c, roi, rank + ax);
    mil_var *L = at(c, shape, ax), *O, *s;
    if (sizes) {
      O = at(c, vv, ax);
      s = ONNX_OP(c, "real_div", A("x", onnx_cast(c, O, MIL_DT_FP32)), A("y", onnx_cast(c, L, MIL_DT_FP32)));
    } else {
      s = at(c, vv, ax);
      O = onnx_cast(c, ONNX_OP(c, "floor", A("x", ONNX_OP(c, "mul", A("x", onnx_cast(c, L, MIL_DT_FP32)), A("y", s)))), MIL_DT_INT32);
    }
    r = resize_axis(c, r, ax, L, O, s, m, coord, nm, a, exclude, roi ? &cr : NULL);
  }
  if (r == x) r = ONNX_OP(c, "identity", A("x", x));
  return onnx_set_out(c, n, 0, onnx_cast(c, r, dt));
}
