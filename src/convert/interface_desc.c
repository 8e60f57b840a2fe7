/* The description a converted model's interface gives: image inputs
 * (ImageFeatureType: width and height of the default shape, colour space,
 * enumeratedSizes or imageSizeRange), flexible multi-array inputs (the
 * default shape with shapeRange or enumeratedShapes) and the metadata
 * fields.
 *
 * Mirrors coremltools/converters/mil/backend/mil/load.py (_get_func_input
 * / _set_user_inputs: how ImageType and TensorType shapes are written).
 */
#include <stdlib.h>
#include <string.h>

#include "convert/interface_internal.h"

static mil_array_dtype array_dtype(mil_dtype dt) {
  switch (dt) {
  case MIL_DT_FP16: return MIL_ARRAY_FLOAT16;
  case MIL_DT_INT32: return MIL_ARRAY_INT32;
  case MIL_DT_INT8: return MIL_ARRAY_INT8;
  case MIL_DT_FP64: return MIL_ARRAY_DOUBLE;
  default: return MIL_ARRAY_FLOAT32;
  }
}

static mil_color_space color_space(mil_color_layout l) {
  switch (l) {
  case MIL_COLOR_LAYOUT_BGR: return MIL_COLOR_BGR;
  case MIL_COLOR_LAYOUT_GRAYSCALE: return MIL_COLOR_GRAYSCALE;
  case MIL_COLOR_LAYOUT_GRAYSCALE_FLOAT16: return MIL_COLOR_GRAYSCALE_FLOAT16;
  default: return MIL_COLOR_RGB;
  }
}

static bool ranged(const mil_shape_spec *s, int32_t i) { return s->ranges && s->ranges[i].upper_bound != 0; }

/* The default shape of s into out (rank entries); v supplies dims s leaves
 * open. */
static void default_shape(const mil_shape_spec *s, const mil_var *v, int64_t *out) {
  for (int32_t i = 0; i < s->rank; i++) {
    if (s->n_enumerated > 0) out[i] = s->default_shape ? s->default_shape[i] : s->enumerated[i];
    else if (ranged(s, i))
      out[i] = s->ranges[i].default_value > 0 ? s->ranges[i].default_value : s->ranges[i].lower_bound;
    else out[i] = s->dims ? s->dims[i] : (v->type->dims[i].size > 0 ? v->type->dims[i].size : 1);
  }
}

static mil_size_range range_of(const mil_shape_spec *s, int32_t i, int64_t fixed) {
  if (!ranged(s, i)) return (mil_size_range){(uint64_t)fixed, fixed};
  return (mil_size_range){(uint64_t)s->ranges[i].lower_bound, s->ranges[i].upper_bound};
}

static bool flexible(const mil_shape_spec *s) {
  if (s->n_enumerated > 0) return true;
  for (int32_t i = 0; i < s->rank; i++)
    if (ranged(s, i)) return true;
  return false;
}

static mil_status describe_input(mil_model *m, const mil_var *v, const mil_input_type *it, mil_diag *d) {
  const mil_type *t = v->type;
  const mil_shape_spec *s = it->has_shape ? &it->shape : NULL;
  if (s && s->rank != t->rank)
    return mil_diag_error(d, MIL_ERR_INVALID, "input '%s': the shape given has rank %d, the model's input %d", v->name,
                          (int)s->rank, (int)t->rank);
  if (!it->is_image && (!s || !flexible(s))) return MIL_OK; /* synthesized from the var */
  int32_t r = t->rank;
  int64_t *def = calloc((size_t)(r ? r : 1), sizeof *def);
  mil_size_range *rg = calloc((size_t)(r ? r : 1), sizeof *rg);
  mil_shape *en = s && s->n_enumerated ? calloc((size_t)s->n_enumerated, sizeof *en) : NULL;
  uint64_t *sizes = s && s->n_enumerated ? calloc(2 * (size_t)s->n_enumerated, sizeof *sizes) : NULL;
  if (!def || !rg || (s && s->n_enumerated && (!en || !sizes))) {
    free(def), free(rg), free(en), free(sizes);
    return mil_diag_error(d, MIL_ERR_NOMEM, "out of memory");
  }
  if (s) default_shape(s, v, def);
  else
    for (int32_t i = 0; i < r; i++) def[i] = t->dims[i].size > 0 ? t->dims[i].size : 1;
  mil_feature f;
  memset(&f, 0, sizeof f);
  f.name = v->name;
  f.short_description = "";
  if (it->is_image) {
    f.kind = MIL_FEATURE_IMAGE;
    f.width = def[3];
    f.height = def[2];
    f.color_space = color_space(it->color_layout);
    if (s && s->n_enumerated) {
      for (int32_t k = 0; k < s->n_enumerated; k++) {
        sizes[2 * k] = (uint64_t)s->enumerated[k * r + 3];
        sizes[2 * k + 1] = (uint64_t)s->enumerated[k * r + 2];
      }
      f.n_image_sizes = s->n_enumerated;
      f.image_sizes = sizes;
    } else if (s && (ranged(s, 2) || ranged(s, 3))) {
      f.has_image_range = true;
      f.width_range = range_of(s, 3, def[3]);
      f.height_range = range_of(s, 2, def[2]);
    }
  } else {
    f.kind = MIL_FEATURE_MULTIARRAY;
    f.array_dtype = array_dtype(t->dtype);
    f.shape = (mil_shape){r, def};
    if (s->n_enumerated) {
      for (int32_t k = 0; k < s->n_enumerated; k++) en[k] = (mil_shape){r, s->enumerated + (size_t)k * r};
      f.n_enumerated = s->n_enumerated;
      f.enumerated = en;
    } else {
      for (int32_t i = 0; i < r; i++) rg[i] = range_of(s, i, def[i]);
      f.n_ranges = r;
      f.ranges = rg;
    }
  }
  mil_status st = mil_model_set_feature(m, NULL, true, &f, d);
  free(def), free(rg), free(en), free(sizes);
  return st;
}

mil_status iface_describe(mil_model *m, mil_function *f, const mil_model_interface *mi, mil_diag *d) {
  if (!mi) return MIL_OK;
  mil_status st = MIL_OK;
  for (int32_t i = 0; i < f->n_inputs && st == MIL_OK; i++) {
    const mil_input_type *it = iface_input_type(mi, f->inputs[i]->name);
    if (it && f->inputs[i]->type && f->inputs[i]->type->kind == MIL_TYPE_TENSOR)
      st = describe_input(m, f->inputs[i], it, d);
  }
  const char *fields[4] = {"author", "license", "short_description", "version"};
  const char *values[4] = {mi->author, mi->license, mi->short_description, mi->version};
  for (int i = 0; i < 4 && st == MIL_OK; i++)
    if (values[i]) st = mil_model_set_info(m, fields[i], values[i], d);
  for (int32_t i = 0; i < mi->n_user_defined && st == MIL_OK; i++)
    if (mil_model_set_metadata(m, mi->user_keys[i], mi->user_values[i]) != MIL_OK)
      st = mil_diag_error(d, MIL_ERR_NOMEM, "out of memory");
  return st;
}
