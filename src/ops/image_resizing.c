/* Op family "image_resizing": upsample_nearest_neighbor,
 * resize_nearest_neighbor, upsample_bilinear, resize_bilinear, crop_resize,
 * crop, affine, resample, resize, in their iOS13..iOS17 variants. Mirrors
 * coremltools ops/defs/iOS15/image_resizing.py, iOS16/image_resizing.py and
 * iOS17/image_resizing.py. None of these ops has value inference. */
#include <math.h>
#include <strings.h>
#include <string.h>

#include "ops/ops_defaults.h"
#include "ops/ops_internal.h"

#define SIZE_LIMIT (INT64_C(1) << 40)

static bool in_set(const char *s, const char *const *set) {
  for (; *set; set++)
    if (strcmp(s, *set) == 0) return true;
  return false;
}

static const char *const k_sampling_modes[] = {"STRICT_ALIGN_CORNERS", "ALIGN_CORNERS", "UNALIGN_CORNERS", "DEFAULT",
                                               "OFFSET_CORNERS", NULL};
static const char *const k_box_modes[] = {"CORNERS_HEIGHT_FIRST", "CORNERS_WIDTH_FIRST", "CENTER_SIZE_HEIGHT_FIRST",
                                          "CENTER_SIZE_WIDTH_FIRST", NULL};

/* String input with a default; error when present but unknown. */
static mil_status str_in(mil_infer_ctx *c, const char *name, const char *dflt, const char **out) {
  *out = dflt;
  if (!op_has(c, name)) return MIL_OK;
  if (!(*out = op_str(c, name, NULL))) return op_fail(c, "input '%s' must be a known string", name);
  return MIL_OK;
}

/* Known scalar int input with a default. */
static mil_status int_in(mil_infer_ctx *c, const char *name, int64_t dflt, int64_t *out) {
  *out = dflt;
  if (!op_has(c, name)) return MIL_OK;
  const mil_value *v = op_val(c, name);
  if (!v || v->kind != MIL_VAL_TENSOR || v->numel < 1 || v->type->dtype == MIL_DT_STRING)
    return op_fail(c, "input '%s' must be a known integer", name);
  *out = mil_value_get_i64(v, 0);
  return MIL_OK;
}

static mil_status check_size(mil_infer_ctx *c, const char *what, int64_t v) {
  if (v < 0 || v > SIZE_LIMIT) return op_fail(c, "%s gives an invalid output size %lld", what, (long long)v);
  return MIL_OK;
}

static mil_status need_rank3(mil_infer_ctx *c, const mil_type *x) {
  if (x->rank < 3) return op_fail(c, "input 'x' must have rank at least 3, got %s", op_tstr(c, x));
  if (x->rank > OP_MAX_RANK) return op_fail(c, "input 'x' rank %d is too large", x->rank);
  return MIL_OK;
}

/* ---------------- upsample_* ---------------- */

/* floor(scale * dim) as coremltools computes it: in float32 for an fp32
 * scale, exactly for an int32 one; a symbolic dim gives a fresh symbol. */
static mil_status scaled_dim(mil_infer_ctx *c, const char *name, const mil_dim *d, mil_dim *out) {
  if (d->size < 0) {
    *out = op_dim_sym(c);
    return MIL_OK;
  }
  int64_t o = d->size;
  if (op_has(c, name)) {
    const mil_value *v = op_val(c, name);
    if (!v || v->kind != MIL_VAL_TENSOR || v->numel < 1) return op_fail(c, "input '%s' must be a known scalar", name);
    if (mil_dtype_is_float(v->type->dtype)) {
      float f = (float)mil_value_get_f64(v, 0) * (float)d->size;
      if (!(f >= 0 && f <= (float)SIZE_LIMIT))
        return op_fail(c, "input '%s' = %g gives an invalid output size", name, mil_value_get_f64(v, 0));
      o = (int64_t)floorf(f);
    } else {
      int64_t s = mil_value_get_i64(v, 0);
      if (s < 0 || (s && d->size > SIZE_LIMIT / s))
        return op_fail(c, "input '%s' = %lld gives an invalid output size", name, (long long)s);
      o = s * d->size;
    }
  }
  *out = op_dim(o);
  return MIL_OK;
}

static mil_status upsample_infer(mil_infer_ctx *c) {
  const mil_type *x = op_type(c, "x");
  mil_status st = need_rank3(c, x);
  if (st != MIL_OK) return st;
  mil_dim d[OP_MAX_RANK];
  memcpy(d, x->dims, (size_t)x->rank * sizeof *d);
  int32_t r = x->rank;
  if ((st = scaled_dim(c, "scale_factor_width", &x->dims[r - 1], &d[r - 1])) != MIL_OK) return st;
  if ((st = scaled_dim(c, "scale_factor_height", &x->dims[r - 2], &d[r - 2])) != MIL_OK) return st;
  op_set_out(c, 0, op_tensor(c, x->dtype, r, d));
  return MIL_OK;
}

/* The scale factors default to an int32 1 (a Python int), except that a
 * missing one takes the float dtype of the other when that one is given as
 * fp32, so that the two stay in one type domain "U" as the spec requires
 * (coremltools would pair an fp32 with an int32 here). */
static mil_status add_scale_default(mil_infer_ctx *c, const char *name, const char *other) {
  const mil_type *o = op_type(c, other);
  if (o && o->kind == MIL_TYPE_TENSOR && o->dtype == MIL_DT_FP32) return op_add_default_f32(c, name, 1.0);
  return op_add_default_int(c, name, 1);
}

static mil_status upsample_defaults(mil_infer_ctx *c) {
  mil_status st;
  if ((st = add_scale_default(c, "scale_factor_height", "scale_factor_width")) != MIL_OK) return st;
  if ((st = add_scale_default(c, "scale_factor_width", "scale_factor_height")) != MIL_OK) return st;
  if (strcmp(c->def->type, "upsample_bilinear") == 0) return op_add_default_bool(c, "align_corners", true);
  return MIL_OK;
}

/* ---------------- resize_nearest_neighbor / resize_bilinear ---------------- */

static mil_status resize_to_target(mil_infer_ctx *c, const char *hname, const char *wname) {
  const mil_type *x = op_type(c, "x");
  mil_status st = need_rank3(c, x);
  if (st != MIL_OK) return st;
  if (strcmp(c->def->type, "resize_bilinear") == 0) {
    const char *mode;
    if ((st = str_in(c, "sampling_mode", "DEFAULT", &mode)) != MIL_OK) return st;
    if (!in_set(mode, k_sampling_modes)) return op_fail(c, "unrecognized sampling_mode \"%s\"", mode);
  }
  int64_t h, w;
  if ((st = int_in(c, hname, 1, &h)) != MIL_OK) return st;
  if ((st = int_in(c, wname, 1, &w)) != MIL_OK) return st;
  if ((st = check_size(c, hname, h)) != MIL_OK || (st = check_size(c, wname, w)) != MIL_OK) return st;
  mil_dim d[OP_MAX_RANK];
  memcpy(d, x->dims, (size_t)x->rank * sizeof *d);
  d[x->rank - 1] = op_dim(w);
  d[x->rank - 2] = op_dim(h);
  op_set_out(c, 0, op_tensor(c, x->dtype, x->rank, d));
  return MIL_OK;
}

static mil_status resize_nn_infer(mil_infer_ctx *c) {
  return resize_to_target(c, "target_size_height", "target_size_width");
}

static mil_status resize_bilinear_defaults(mil_infer_ctx *c) {
  mil_status st;
  if ((st = op_add_default_int(c, "target_size_height", 1)) != MIL_OK) return st;
  if ((st = op_add_default_int(c, "target_size_width", 1)) != MIL_OK) return st;
  return op_add_default_str(c, "sampling_mode", "DEFAULT");
}

/* ---------------- crop_resize ---------------- */

static mil_status crop_resize_common(mil_infer_ctx *c, int64_t *th, int64_t *tw) {
  const mil_type *x = op_type(c, "x");
  if (x->rank != 4) return op_fail(c, "input 'x' must be rank 4, got %s", op_tstr(c, x));
  const char *bm, *sm;
  mil_status st;
  if ((st = str_in(c, "box_coordinate_mode", "CORNERS_HEIGHT_FIRST", &bm)) != MIL_OK) return st;
  if ((st = str_in(c, "sampling_mode", "DEFAULT", &sm)) != MIL_OK) return st;
  if ((st = int_in(c, "target_height", 1, th)) != MIL_OK) return st;
  if ((st = int_in(c, "target_width", 1, tw)) != MIL_OK) return st;
  if ((st = check_size(c, "target_height", *th)) != MIL_OK || (st = check_size(c, "target_width", *tw)) != MIL_OK)
    return st;
  if (!in_set(bm, k_box_modes)) return op_fail(c, "unrecognized box_coordinate_mode \"%s\"", bm);
  if (!in_set(sm, k_sampling_modes)) return op_fail(c, "unrecognized sampling_mode \"%s\"", sm);
  return MIL_OK;
}

static mil_status crop_resize13_infer(mil_infer_ctx *c) {
  const mil_type *x = op_type(c, "x"), *roi = op_type(c, "roi");
  int64_t th, tw;
  mil_status st = crop_resize_common(c, &th, &tw);
  if (st != MIL_OK) return st;
  if (roi->rank != 5) return op_fail(c, "input 'roi' must be rank 5 (N, 1, 4 or 5, 1, 1), got %s", op_tstr(c, roi));
  mil_dim d[5] = {roi->dims[0], x->dims[0], x->dims[1], op_dim(th), op_dim(tw)};
  op_set_out(c, 0, op_tensor(c, x->dtype, 5, d));
  return MIL_OK;
}

static mil_status crop_resize17_infer(mil_infer_ctx *c) {
  const mil_type *x = op_type(c, "x"), *boxes = op_type(c, "boxes"), *bi = op_type(c, "box_indices");
  int64_t th, tw;
  mil_status st = crop_resize_common(c, &th, &tw);
  if (st != MIL_OK) return st;
  if (boxes->rank != 2 || boxes->dims[1].size != 4)
    return op_fail(c, "input 'boxes' must have shape (N, 4), got %s", op_tstr(c, boxes));
  mil_dim n = boxes->dims[0];
  if (!bi) {
    if (n.size >= 0 && x->dims[0].size >= 0 && n.size > x->dims[0].size)
      return op_fail(c, "the N dimension of 'boxes' (%lld) must not exceed the B dimension of x (%lld) when "
                        "'box_indices' is not given (the default indices 0..N-1 would point outside x)",
                     (long long)n.size, (long long)x->dims[0].size);
  } else {
    if (bi->rank != 1 || (bi->dims[0].size >= 0 && n.size >= 0 && bi->dims[0].size != n.size))
      return op_fail(c, "input 'box_indices' must have shape (N,) with N = boxes.shape[0], got %s", op_tstr(c, bi));
    const mil_value *v = op_val(c, "box_indices");
    if (v && x->dims[0].size >= 0)
      for (int64_t i = 0; i < v->numel; i++)
        if (mil_value_get_i64(v, i) >= x->dims[0].size)
          return op_fail(c, "input 'box_indices' must be < the B dimension of x (%lld), got %lld at %lld",
                         (long long)x->dims[0].size, (long long)mil_value_get_i64(v, i), (long long)i);
  }
  if (op_bool(c, "normalized_coordinates", false) && !mil_dtype_is_float(boxes->dtype))
    return op_fail(c, "input 'boxes' must be fp16 or fp32 when normalized_coordinates is True, got %s",
                   op_tstr(c, boxes));
  mil_dim d[4] = {n, x->dims[1], op_dim(th), op_dim(tw)};
  op_set_out(c, 0, op_tensor(c, x->dtype, 4, d));
  return MIL_OK;
}

static mil_status crop_resize_defaults(mil_infer_ctx *c) {
  mil_status st;
  if (c->def->opset >= MIL_IOS17 && !op_has(c, "box_indices")) {
    const mil_type *boxes = op_type(c, "boxes"), *x = op_type(c, "x");
    if (boxes && boxes->rank >= 1 && boxes->dims[0].size >= 0 && boxes->dims[0].size <= 65536) {
      int64_t n = boxes->dims[0].size;
      if (x && x->rank >= 1 && x->dims[0].size >= 0 && n > x->dims[0].size)
        return op_fail(c, "the N dimension of 'boxes' (%lld) must not exceed the B dimension of x (%lld) when "
                          "'box_indices' is not given", (long long)n, (long long)x->dims[0].size);
      mil_value *v = mil_value_new_tensor(c->prog, MIL_DT_INT32, 1, &n, false, NULL);
      if (!v) return MIL_ERR_NOMEM;
      for (int64_t i = 0; i < n; i++) mil_value_set_i64(v, i, i);
      if ((st = op_add_default_const(c, "box_indices", v)) != MIL_OK) return st;
    }
  }
  if ((st = op_add_default_int(c, "target_height", 1)) != MIL_OK) return st;
  if ((st = op_add_default_int(c, "target_width", 1)) != MIL_OK) return st;
  if ((st = op_add_default_bool(c, "normalized_coordinates", false)) != MIL_OK) return st;
  if ((st = op_add_default_f32(c, "spatial_scale", 1.0)) != MIL_OK) return st;
  if ((st = op_add_default_str(c, "box_coordinate_mode", "CORNERS_HEIGHT_FIRST")) != MIL_OK) return st;
  if ((st = op_add_default_str(c, "sampling_mode", "DEFAULT")) != MIL_OK) return st;
  /* an fp32 0.0 as coremltools makes it, whatever x's dtype (see the spec note below) */
  if (c->def->opset >= MIL_IOS16) return op_add_default_f32(c, "pad_value", 0.0);
  return MIL_OK;
}

/* ---------------- crop ---------------- */

static mil_status crop_infer(mil_infer_ctx *c) {
  const mil_type *x = op_type(c, "x");
  if (x->rank < 3) return op_fail(c, "input 'x' must be at least rank 3, got %s", op_tstr(c, x));
  if (x->rank > OP_MAX_RANK) return op_fail(c, "input 'x' rank %d is too large", x->rank);
  int64_t ch[2], cw[2];
  static const char *const names[2] = {"crop_height", "crop_width"};
  for (int p = 0; p < 2; p++) {
    const mil_value *v = op_val(c, names[p]);
    if (!v || v->kind != MIL_VAL_TENSOR || v->type->dtype == MIL_DT_STRING)
      return op_fail(c, "input '%s' must be a known int32 vector", names[p]);
    if (v->numel != 2) return op_fail(c, "input '%s' must have 2 elements, got %lld", names[p], (long long)v->numel);
    for (int i = 0; i < 2; i++) (p ? cw : ch)[i] = mil_value_get_i64(v, i);
  }
  mil_dim d[OP_MAX_RANK];
  memcpy(d, x->dims, (size_t)x->rank * sizeof *d);
  const int64_t *crops[2] = {ch, cw};
  for (int p = 0; p < 2; p++) {
    mil_dim *dd = &d[x->rank - 2 + p];
    const int64_t *cr = crops[p];
    if (cr[0] < -SIZE_LIMIT || cr[0] > SIZE_LIMIT || cr[1] < -SIZE_LIMIT || cr[1] > SIZE_LIMIT)
      return op_fail(c, "input '%s' value out of range", names[p]);
    if (dd->size < 0) {
      if (cr[0] + cr[1] != 0) *dd = op_dim_sym(c); /* coremltools: the expression dim - crop */
      continue;
    }
    int64_t o = dd->size - cr[0] - cr[1];
    if (o < 0)
      return op_fail(c, "input '%s' (%lld, %lld) crops more than the size %lld of x's axis %d", names[p],
                     (long long)cr[0], (long long)cr[1], (long long)dd->size, x->rank - 2 + p);
    *dd = op_dim(o);
  }
  op_set_out(c, 0, op_tensor(c, x->dtype, x->rank, d));
  return MIL_OK;
}

/* ---------------- affine / resample ---------------- */

static mil_status affine_infer(mil_infer_ctx *c) {
  const mil_type *x = op_type(c, "x"), *m = op_type(c, "transform_matrix");
  if (x->rank != 4) return op_fail(c, "input 'x' must be a rank 4 tensor, got %s", op_tstr(c, x));
  if (m->rank != 2) return op_fail(c, "input 'transform_matrix' must be a rank 2 tensor, got %s", op_tstr(c, m));
  const char *sm = op_str(c, "sampling_mode", ""), *cm = op_str(c, "coordinates_mode", ""),
             *pm = op_str(c, "padding_mode", "");
  if (strcasecmp(sm, "bilinear") != 0) return op_fail(c, "input 'sampling_mode' \"%s\" is not implemented (only \"bilinear\")", sm);
  if (strcasecmp(cm, "normalized_minus_one_to_one") != 0)
    return op_fail(c, "input 'coordinates_mode' \"%s\" is not implemented (only \"normalized_minus_one_to_one\")", cm);
  double pv = op_f64(c, "padding_value", 0.0);
  if (strcasecmp(pm, "constant") != 0 || pv != 0.0)
    return op_fail(c, "input 'padding_mode' \"%s\" with padding_value=%g is not implemented (only \"constant\" with 0)",
                   pm, pv);
  if (m->dims[1].size >= 0 && m->dims[1].size != 6)
    return op_fail(c, "the last dimension of 'transform_matrix' must be 6 ([a0, a1, a2, b0, b1, b2]), got %s",
                   op_tstr(c, m));
  int64_t h, w;
  mil_status st;
  if ((st = int_in(c, "output_height", 0, &h)) != MIL_OK) return st;
  if ((st = int_in(c, "output_width", 0, &w)) != MIL_OK) return st;
  if ((st = check_size(c, "output_height", h)) != MIL_OK || (st = check_size(c, "output_width", w)) != MIL_OK) return st;
  mil_dim d[4] = {x->dims[0], x->dims[1], op_dim(h), op_dim(w)};
  op_set_out(c, 0, op_tensor(c, x->dtype, 4, d));
  return MIL_OK;
}

static mil_status resample_infer(mil_infer_ctx *c) {
  const mil_type *x = op_type(c, "x"), *co = op_type(c, "coordinates");
  if (x->rank != 4) return op_fail(c, "input 'x' must be a rank 4 tensor, got %s", op_tstr(c, x));
  if (co->rank != 4) return op_fail(c, "input 'coordinates' must be a rank 4 tensor, got %s", op_tstr(c, co));
  if (x->dims[0].size >= 0 && co->dims[0].size >= 0 && x->dims[0].size != co->dims[0].size)
    return op_fail(c, "inputs 'x' %s and 'coordinates' %s must agree on the batch size", op_tstr(c, x), op_tstr(c, co));
  if (co->dims[3].size >= 0 && co->dims[3].size != 2)
    return op_fail(c, "the last dimension of 'coordinates' must be 2, got %s", op_tstr(c, co));
  mil_dim d[4] = {x->dims[0], x->dims[1], co->dims[1], co->dims[2]};
  op_set_out(c, 0, op_tensor(c, x->dtype, 4, d));
  return MIL_OK;
}

/* ---------------- resize (iOS17) ---------------- */

static mil_status resize_infer(mil_infer_ctx *c) {
  const mil_type *x = op_type(c, "x"), *shape = op_type(c, "shape");
  const mil_value *sv = op_val(c, "shape");
  int64_t rd;
  mil_status st;
  if ((st = int_in(c, "resized_dims", 0, &rd)) != MIL_OK) return st;
  if (x->rank < 0) {
    op_set_out(c, 0, op_tensor(c, x->dtype, -1, NULL));
    return MIL_OK;
  }
  if (x->rank > OP_MAX_RANK) return op_fail(c, "input 'x' rank %d is too large", x->rank);
  if (sv) {
    if (rd > sv->numel)
      return op_fail(c, "input 'resized_dims' (%lld) must be <= the size of 'shape' (%lld)", (long long)rd,
                     (long long)sv->numel);
    if (sv->numel > x->rank)
      return op_fail(c, "the size of 'shape' (%lld) must be <= the rank of x (%d)", (long long)sv->numel, x->rank);
  }
  if (shape->rank != 1) return op_fail(c, "input 'shape' must be rank 1, got %s", op_tstr(c, shape));
  const char *im, *sm;
  if ((st = str_in(c, "interpolation_mode", "LINEAR", &im)) != MIL_OK) return st;
  if ((st = str_in(c, "sampling_mode", "DEFAULT", &sm)) != MIL_OK) return st;
  static const char *const k_interp[] = {"LINEAR", "NEAREST_NEIGHBOR", NULL};
  if (!in_set(im, k_interp))
    return op_fail(c, "invalid interpolation_mode \"%s\" (supported: \"LINEAR\", \"NEAREST_NEIGHBOR\")", im);
  if (!in_set(sm, k_sampling_modes)) return op_fail(c, "invalid sampling_mode \"%s\"", sm);
  if (rd < 0 || rd > x->rank)
    return op_fail(c, "input 'resized_dims' (%lld) must be between 0 and the rank of x (%d)", (long long)rd, x->rank);
  mil_dim d[OP_MAX_RANK];
  memcpy(d, x->dims, (size_t)x->rank * sizeof *d);
  int64_t start = sv ? sv->numel - rd : 0;
  for (int64_t i = 0; i < rd; i++) {
    int32_t axis = (int32_t)(x->rank - rd + i);
    if (!sv) {
      d[axis] = op_dim_sym(c);
      continue;
    }
    int64_t t = mil_value_get_i64(sv, start + i);
    if (t == 0) continue; /* 0 keeps x's size */
    if ((st = check_size(c, "input 'shape'", t)) != MIL_OK) return st;
    d[axis] = op_dim(t);
  }
  op_set_out(c, 0, op_tensor(c, x->dtype, x->rank, d));
  return MIL_OK;
}

static mil_status resize_defaults(mil_infer_ctx *c) {
  mil_status st = op_add_default_str(c, "interpolation_mode", "LINEAR");
  return st != MIL_OK ? st : op_add_default_str(c, "sampling_mode", "DEFAULT");
}

/* ---------------- table ---------------- */

#define TN MIL_IK_TENSOR
#define K MIL_IF_CONST
#define O MIL_IF_OPTIONAL
#define F MIL_DTS_FLOAT
#define I32 MIL_DTS_INT32
#define STR MIL_DTS_STRING
#define BOOL MIL_DTS_BOOL
#define DT(x) MIL_DTB(MIL_DT_##x)

static const mil_input_spec k_upsample_nn[] = {
    IN_SPEC("x", TN, F, "T", 0, NULL),
    IN_SPEC("scale_factor_height", TN, DT(FP32) | I32, "U", K | O, "1"),
    IN_SPEC("scale_factor_width", TN, DT(FP32) | I32, "U", K | O, "1"),
};
static const mil_input_spec k_resize_nn[] = {
    IN_SPEC("x", TN, F, "T", 0, NULL),
    IN_SPEC("target_size_height", TN, I32, NULL, K, NULL),
    IN_SPEC("target_size_width", TN, I32, NULL, K, NULL),
};
#define UPSAMPLE_BILINEAR_SPEC                                              \
  IN_SPEC("x", TN, F, "T", 0, NULL), IN_SPEC("scale_factor_height", TN, DT(FP32) | I32, "U", K | O, "1"), \
      IN_SPEC("scale_factor_width", TN, DT(FP32) | I32, "U", K | O, "1"), \
      IN_SPEC("align_corners", TN, BOOL, NULL, K | O, "True")
static const mil_input_spec k_upsample_bilinear13[] = {UPSAMPLE_BILINEAR_SPEC};
static const mil_input_spec k_upsample_bilinear16[] = {
    UPSAMPLE_BILINEAR_SPEC,
    IN_SPEC("half_pixel_centers", TN, BOOL, NULL, K | O, "None"),
};
static const mil_input_spec k_resize_bilinear[] = {
    IN_SPEC("x", TN, F, "T", 0, NULL),
    IN_SPEC("target_size_height", TN, I32, NULL, K | O, "1"),
    IN_SPEC("target_size_width", TN, I32, NULL, K | O, "1"),
    IN_SPEC("sampling_mode", TN, STR, NULL, K | O, "\"DEFAULT\""),
};
#define CROP_RESIZE_TAIL                                                            \
  IN_SPEC("target_height", TN, I32, NULL, K | O, "1"), IN_SPEC("target_width", TN, I32, NULL, K | O, "1"), \
      IN_SPEC("normalized_coordinates", TN, BOOL, NULL, K | O, "False"),           \
      IN_SPEC("spatial_scale", TN, DT(FP32), NULL, K | O, "1.0"),                  \
      IN_SPEC("box_coordinate_mode", TN, STR, NULL, K | O, "\"CORNERS_HEIGHT_FIRST\""), \
      IN_SPEC("sampling_mode", TN, STR, NULL, K | O, "\"DEFAULT\"")
static const mil_input_spec k_crop_resize13[] = {
    IN_SPEC("x", TN, F, "T", 0, NULL),
    IN_SPEC("roi", TN, F, "T", 0, NULL),
    CROP_RESIZE_TAIL,
};
static const mil_input_spec k_crop_resize16[] = {
    IN_SPEC("x", TN, F, "T", 0, NULL),
    IN_SPEC("roi", TN, F, "T", 0, NULL),
    CROP_RESIZE_TAIL,
    IN_SPEC("pad_value", TN, F, NULL, K | O, "0.0"),
};
static const mil_input_spec k_crop_resize17[] = {
    IN_SPEC("x", TN, F, "T", 0, NULL),
    IN_SPEC("boxes", TN, F | DT(UINT16), "BOX_T", 0, NULL),
    IN_SPEC("box_indices", TN, DT(UINT16) | I32, "BOX_INDEX_T", O, "range(boxes.shape[0])"),
    CROP_RESIZE_TAIL,
    IN_SPEC("pad_value", TN, F, NULL, K | O, "0.0"),
};
static const mil_input_spec k_crop[] = {
    IN_SPEC("x", TN, F, "T", 0, NULL),
    IN_SPEC("crop_height", TN, I32, NULL, K, NULL),
    IN_SPEC("crop_width", TN, I32, NULL, K, NULL),
};
static const mil_input_spec k_affine[] = {
    IN_SPEC("x", TN, F, "T", 0, NULL),
    IN_SPEC("transform_matrix", TN, F, "T", 0, NULL),
    IN_SPEC("output_height", TN, I32, NULL, K, NULL),
    IN_SPEC("output_width", TN, I32, NULL, K, NULL),
    IN_SPEC("sampling_mode", TN, STR, NULL, K, NULL),
    IN_SPEC("padding_mode", TN, STR, NULL, K, NULL),
    IN_SPEC("padding_value", TN, F, "T", K, NULL),
    IN_SPEC("coordinates_mode", TN, STR, NULL, K, NULL),
    IN_SPEC("align_corners", TN, BOOL, NULL, K, NULL),
};
#define RESAMPLE_SPEC(udom)                                                                          \
  IN_SPEC("x", TN, F, "T", 0, NULL), IN_SPEC("coordinates", TN, udom, "U", 0, NULL),                 \
      IN_SPEC("sampling_mode", TN, STR, NULL, K, NULL), IN_SPEC("padding_mode", TN, STR, NULL, K, NULL), \
      IN_SPEC("padding_value", TN, F, "T", K, NULL), IN_SPEC("coordinates_mode", TN, STR, NULL, K, NULL), \
      IN_SPEC("align_corners", TN, BOOL, NULL, K, NULL)
static const mil_input_spec k_resample15[] = {RESAMPLE_SPEC(I32 | DT(FP32))};
static const mil_input_spec k_resample16[] = {RESAMPLE_SPEC(I32 | F)};
static const mil_input_spec k_resample17[] = {
    RESAMPLE_SPEC(DT(INT8) | DT(UINT8) | DT(INT16) | DT(UINT16) | I32 | F)};
static const mil_input_spec k_resize[] = {
    IN_SPEC("x", TN, F | I32, "T", 0, NULL),
    IN_SPEC("shape", TN, I32 | DT(INT16) | DT(UINT16) | DT(UINT32), "U", 0, NULL),
    IN_SPEC("resized_dims", TN, DT(UINT32), NULL, K, NULL),
    IN_SPEC("interpolation_mode", TN, STR, NULL, K | O, "\"LINEAR\""),
    IN_SPEC("sampling_mode", TN, STR, NULL, K | O, "\"DEFAULT\""),
};

/* pad_value belongs to x's type domain "T" in coremltools, but its builder
 * materializes the default as an fp32 const even for an fp16 x (it checks
 * type domains only among explicitly given inputs), so it is not tied to
 * x here. */

#define N_IN(a) (int32_t)(sizeof a / sizeof a[0])
#define ROW(ty, ver, spec, inf, dflt, doc) {ty, ver, "image_resizing", spec, N_IN(spec), 1, inf, NULL, dflt, doc}

const mil_op_def op_defs_image_resizing[] = {
    ROW("upsample_nearest_neighbor", MIL_IOS13, k_upsample_nn, upsample_infer, upsample_defaults,
        "nearest-neighbour upsampling of the last two axes by scale factors"),
    ROW("resize_nearest_neighbor", MIL_IOS13, k_resize_nn, resize_nn_infer, NULL,
        "nearest-neighbour resize of the last two axes to a target size"),
    ROW("upsample_bilinear", MIL_IOS13, k_upsample_bilinear13, upsample_infer, upsample_defaults,
        "bilinear upsampling of the last two axes by scale factors"),
    ROW("upsample_bilinear", MIL_IOS16, k_upsample_bilinear16, upsample_infer, upsample_defaults,
        "bilinear upsampling; adds half_pixel_centers"),
    ROW("resize_bilinear", MIL_IOS13, k_resize_bilinear, resize_nn_infer, resize_bilinear_defaults,
        "bilinear resize of the last two axes to a target size"),
    ROW("crop_resize", MIL_IOS13, k_crop_resize13, crop_resize13_infer, crop_resize_defaults,
        "crops regions of interest from x (B, C, H, W) and resizes them"),
    ROW("crop_resize", MIL_IOS16, k_crop_resize16, crop_resize13_infer, crop_resize_defaults,
        "crop_resize; adds pad_value for out-of-image samples"),
    ROW("crop_resize", MIL_IOS17, k_crop_resize17, crop_resize17_infer, crop_resize_defaults,
        "crop_resize with boxes (N, 4) and box_indices; output (N, C, target_height, target_width)"),
    ROW("crop", MIL_IOS13, k_crop, crop_infer, NULL, "crops the last two axes of x"),
    ROW("affine", MIL_IOS15, k_affine, affine_infer, NULL, "affine transform of x (B, C, H, W) sampled bilinearly"),
    ROW("resample", MIL_IOS15, k_resample15, resample_infer, NULL, "samples x at the given coordinates"),
    ROW("resample", MIL_IOS16, k_resample16, resample_infer, NULL, "resample; coordinates may be fp16"),
    ROW("resample", MIL_IOS17, k_resample17, resample_infer, NULL, "resample; coordinates may be 8/16-bit integers"),
    ROW("resize", MIL_IOS17, k_resize, resize_infer, resize_defaults,
        "resizes the last resized_dims axes of x to the sizes given at run time in shape"),
};
OP_FAMILY_COUNT(image_resizing);
