/* Editing a model's description: one feature at a time (the types
 * ct.convert's input/output types give: image features, flexible shapes,
 * fp16 arrays), the classifier's predicted-feature names and the metadata
 * fields of MLModel (author, license, short_description, version).
 *
 * A feature set here is kept by mil_model_sync_description (and so by
 * every save) as long as it still fits its var (model_desc.c,
 * feature_fits); the rest of the description is synthesized from the
 * program first when the model has none.
 *
 * Mirrors coremltools/converters/mil/backend/mil/load.py (how
 * ct.convert writes ImageFeatureType, shapeRange / enumeratedShapes and the
 * classifier fields) and coremltools/models/model.py (MLModel's
 * author/license/short_description/version properties).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/io_internal.h"
#include "io/model_internal.h"

static Coreml__SizeRange *size_range(mil_size_range r) {
  Coreml__SizeRange *sr = io_pb_new(&coreml__size_range__descriptor);
  if (sr) {
    sr->lowerbound = r.lower;
    sr->upperbound = r.upper;
  }
  return sr;
}

static int64_t *dims_copy(const mil_shape *s) {
  int64_t *d = io_wr_alloc((size_t)(s->rank ? s->rank : 1) * sizeof *d);
  if (d && s->rank) memcpy(d, s->dims, (size_t)s->rank * sizeof *d);
  return d;
}

static Coreml__ArrayFeatureType *array_of(const mil_feature *f) {
  Coreml__ArrayFeatureType *a = io_pb_new(&coreml__array_feature_type__descriptor);
  if (!a) return NULL;
  a->datatype = (Coreml__ArrayFeatureType__ArrayDataType)f->array_dtype;
  if (f->shape.rank > 0) {
    if (!(a->shape = dims_copy(&f->shape))) goto oom;
    a->n_shape = (size_t)f->shape.rank;
  }
  if (f->n_enumerated > 0) {
    Coreml__ArrayFeatureType__EnumeratedShapes *es = io_pb_new(&coreml__array_feature_type__enumerated_shapes__descriptor);
    if (!es) goto oom;
    a->shape_flexibility_case = COREML__ARRAY_FEATURE_TYPE__SHAPE_FLEXIBILITY_ENUMERATED_SHAPES;
    a->enumeratedshapes = es;
    for (int32_t i = 0; i < f->n_enumerated; i++) {
      Coreml__ArrayFeatureType__Shape *sh = io_pb_new(&coreml__array_feature_type__shape__descriptor);
      if (!sh || !io_pb_push(&es->shapes, &es->n_shapes, sh)) {
        io_pb_free(sh);
        goto oom;
      }
      if (!(sh->shape = dims_copy(&f->enumerated[i]))) goto oom;
      sh->n_shape = (size_t)f->enumerated[i].rank;
    }
  } else if (f->n_ranges > 0) {
    Coreml__ArrayFeatureType__ShapeRange *sr = io_pb_new(&coreml__array_feature_type__shape_range__descriptor);
    if (!sr) goto oom;
    a->shape_flexibility_case = COREML__ARRAY_FEATURE_TYPE__SHAPE_FLEXIBILITY_SHAPE_RANGE;
    a->shaperange = sr;
    for (int32_t i = 0; i < f->n_ranges; i++) {
      Coreml__SizeRange *r = size_range(f->ranges[i]);
      if (!r || !io_pb_push(&sr->sizeranges, &sr->n_sizeranges, r)) {
        io_pb_free(r);
        goto oom;
      }
    }
  }
  return a;
oom:
  io_pb_free(a);
  return NULL;
}

static Coreml__ImageFeatureType *image_of(const mil_feature *f) {
  Coreml__ImageFeatureType *im = io_pb_new(&coreml__image_feature_type__descriptor);
  if (!im) return NULL;
  im->width = f->width;
  im->height = f->height;
  im->colorspace = (Coreml__ImageFeatureType__ColorSpace)f->color_space;
  if (f->n_image_sizes > 0) {
    Coreml__ImageFeatureType__EnumeratedImageSizes *es =
        io_pb_new(&coreml__image_feature_type__enumerated_image_sizes__descriptor);
    if (!es) goto oom;
    im->size_flexibility_case = COREML__IMAGE_FEATURE_TYPE__SIZE_FLEXIBILITY_ENUMERATED_SIZES;
    im->enumeratedsizes = es;
    for (int32_t i = 0; i < f->n_image_sizes; i++) {
      Coreml__ImageFeatureType__ImageSize *s = io_pb_new(&coreml__image_feature_type__image_size__descriptor);
      if (!s || !io_pb_push(&es->sizes, &es->n_sizes, s)) {
        io_pb_free(s);
        goto oom;
      }
      s->width = f->image_sizes[2 * i];
      s->height = f->image_sizes[2 * i + 1];
    }
  } else if (f->has_image_range) {
    Coreml__ImageFeatureType__ImageSizeRange *r = io_pb_new(&coreml__image_feature_type__image_size_range__descriptor);
    if (!r) goto oom;
    im->size_flexibility_case = COREML__IMAGE_FEATURE_TYPE__SIZE_FLEXIBILITY_IMAGE_SIZE_RANGE;
    im->imagesizerange = r;
    if (!(r->widthrange = size_range(f->width_range)) || !(r->heightrange = size_range(f->height_range))) goto oom;
  }
  return im;
oom:
  io_pb_free(im);
  return NULL;
}

/* The feature list of function `function` (NULL: the default one) in desc. */
static mil_status feature_list(Coreml__ModelDescription *desc, const char *function, bool input,
                               Coreml__FeatureDescription ****list, size_t **n, Coreml__FunctionDescription **fn) {
  *fn = NULL;
  if (desc->n_functions) {
    const char *want = function && function[0] ? function : desc->defaultfunctionname;
    for (size_t i = 0; i < desc->n_functions && !*fn; i++)
      if (desc->functions[i]->name && want && !strcmp(desc->functions[i]->name, want)) *fn = desc->functions[i];
    if (!*fn) return MIL_ERR_NOT_FOUND;
    *list = input ? &(*fn)->input : &(*fn)->output;
    *n = input ? &(*fn)->n_input : &(*fn)->n_output;
    return MIL_OK;
  }
  if (function && function[0] && strcmp(function, "main")) return MIL_ERR_NOT_FOUND;
  *list = input ? &desc->input : &desc->output;
  *n = input ? &desc->n_input : &desc->n_output;
  return MIL_OK;
}

/* The description, synthesized from the program when it has no features. */
static mil_status ensure_desc(mil_model *m, mil_diag *d) {
  if (m->desc && (m->desc->n_input || m->desc->n_output || m->desc->n_functions)) return MIL_OK;
  return mil_model_sync_description(m, d);
}

mil_status mil_model_set_feature(mil_model *m, const char *function, bool input, const mil_feature *f, mil_diag *d) {
  if (!m || !f || !f->name || !f->name[0])
    return mil_diag_error(d, MIL_ERR_INVALID, "mil_model_set_feature: a model and a named feature are needed");
  if (f->kind != MIL_FEATURE_MULTIARRAY && f->kind != MIL_FEATURE_IMAGE)
    return mil_diag_error(d, MIL_ERR_INVALID, "%s: feature '%s': only multi-array and image features can be set, "
                          "not %s", mil_model_path(m), f->name, mil_feature_kind_name(f->kind));
  mil_status st = ensure_desc(m, d);
  if (st != MIL_OK) return st;
  Coreml__FeatureDescription ***list;
  size_t *n;
  Coreml__FunctionDescription *fn;
  if (feature_list(m->desc, function, input, &list, &n, &fn) != MIL_OK)
    return mil_diag_error(d, MIL_ERR_NOT_FOUND, "%s: the description has no function '%s'", mil_model_path(m),
                          function ? function : "(default)");
  Coreml__FeatureDescription *fd = NULL;
  for (size_t i = 0; i < *n && !fd; i++)
    if ((*list)[i]->name && !strcmp((*list)[i]->name, f->name)) fd = (*list)[i];
  if (!fd)
    return mil_diag_error(d, MIL_ERR_NOT_FOUND, "%s: the description has no %s named '%s'", mil_model_path(m),
                          input ? "input" : "output", f->name);
  Coreml__FeatureType *ft = io_pb_new(&coreml__feature_type__descriptor);
  if (!ft) return mil_diag_error(d, MIL_ERR_NOMEM, "out of memory");
  if (f->kind == MIL_FEATURE_IMAGE) {
    ft->type_case = COREML__FEATURE_TYPE__TYPE_IMAGE_TYPE;
    ft->imagetype = image_of(f);
  } else {
    ft->type_case = COREML__FEATURE_TYPE__TYPE_MULTI_ARRAY_TYPE;
    ft->multiarraytype = array_of(f);
  }
  if (!ft->imagetype && !ft->multiarraytype) {
    io_pb_free(ft);
    return mil_diag_error(d, MIL_ERR_NOMEM, "out of memory");
  }
  ft->isoptional = f->is_optional;
  io_model_drop_view(m);
  io_pb_free(fd->type);
  fd->type = ft;
  if (f->short_description && f->short_description[0]) {
    char *s = io_model_strdup(f->short_description);
    if (!s) return mil_diag_error(d, MIL_ERR_NOMEM, "out of memory");
    if (fd->shortdescription != protobuf_c_empty_string) free(fd->shortdescription);
    fd->shortdescription = s;
  }
  return MIL_OK;
}

static mil_status set_str(char **field, const char *value) {
  char *s = io_model_strdup(value ? value : "");
  if (!s) return MIL_ERR_NOMEM;
  if (*field && *field != protobuf_c_empty_string) free(*field);
  *field = s;
  return MIL_OK;
}

mil_status mil_model_set_predicted_names(mil_model *m, const char *function, const char *feature, const char *probs,
                                         mil_diag *d) {
  mil_status st = ensure_desc(m, d);
  if (st != MIL_OK) return st;
  Coreml__FeatureDescription ***list;
  size_t *n;
  Coreml__FunctionDescription *fn;
  if (feature_list(m->desc, function, false, &list, &n, &fn) != MIL_OK)
    return mil_diag_error(d, MIL_ERR_NOT_FOUND, "%s: the description has no function '%s'", mil_model_path(m),
                          function ? function : "(default)");
  io_model_drop_view(m);
  char **pf = fn ? &fn->predictedfeaturename : &m->desc->predictedfeaturename;
  char **pp = fn ? &fn->predictedprobabilitiesname : &m->desc->predictedprobabilitiesname;
  if (set_str(pf, feature) != MIL_OK || set_str(pp, probs) != MIL_OK)
    return mil_diag_error(d, MIL_ERR_NOMEM, "out of memory");
  return MIL_OK;
}

mil_status mil_model_set_info(mil_model *m, const char *field, const char *value, mil_diag *d) {
  if (!m->desc && !(m->desc = io_pb_new(&coreml__model_description__descriptor)))
    return mil_diag_error(d, MIL_ERR_NOMEM, "out of memory");
  Coreml__ModelDescription *desc = m->desc;
  if (!desc->metadata && !(desc->metadata = io_pb_new(&coreml__metadata__descriptor)))
    return mil_diag_error(d, MIL_ERR_NOMEM, "out of memory");
  Coreml__Metadata *meta = desc->metadata;
  char **slot = !strcmp(field, "author")              ? &meta->author
                : !strcmp(field, "license")           ? &meta->license
                : !strcmp(field, "short_description") ? &meta->shortdescription
                : !strcmp(field, "version")           ? &meta->versionstring
                                                      : NULL;
  if (!slot)
    return mil_diag_error(d, MIL_ERR_INVALID, "unknown metadata field '%s' (expected author, license, "
                          "short_description or version)", field);
  io_model_drop_view(m);
  if (set_str(slot, value) != MIL_OK) return mil_diag_error(d, MIL_ERR_NOMEM, "out of memory");
  return MIL_OK;
}
