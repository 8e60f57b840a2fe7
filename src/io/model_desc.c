/* The model description (ModelDescription, formats.md 1.2-1.5): a decoded
 * C view for callers, synthesis from a program the way coremltools'
 * exporter does it, keeping a description in line with an edited program,
 * and the model-level checks of formats.md section 8.
 *
 * Synthesis mirrors coremltools/converters/mil/backend/mil/load.py
 * (CoreMLProtoExporter.get_func_input, get_func_output, get_coreml_model)
 * and helper.py cast_to_framework_io_dtype; the checks mirror Core ML's
 * model validator as summarized in formats.md section 8.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "io/model_internal.h"

/* ------------------------------------------------------------------------ */
/* decoded view                                                               */
/* ------------------------------------------------------------------------ */

typedef struct chunk {
  struct chunk *next;
  size_t used, cap;
  _Alignas(16) unsigned char data[];
} chunk;

struct io_desc_view {
  mil_model_desc desc;
  Coreml__ModelDescription *owned; /* a synthesized description the view points into */
  chunk *mem;
  bool oom;
};

static void *view_alloc(io_desc_view *v, size_t n) {
  n = (n + 15) & ~(size_t)15;
  if (!n) n = 16;
  if (!v->mem || v->mem->cap - v->mem->used < n) {
    size_t cap = n > 8192 ? n : 8192;
    chunk *c = malloc(sizeof *c + cap);
    if (!c) {
      v->oom = true;
      return NULL;
    }
    c->next = v->mem;
    c->used = 0;
    c->cap = cap;
    v->mem = c;
  }
  void *p = v->mem->data + v->mem->used;
  v->mem->used += n;
  memset(p, 0, n);
  return p;
}

void io_desc_view_free(io_desc_view *v) {
  if (!v) return;
  for (chunk *c = v->mem, *n; c; c = n) {
    n = c->next;
    free(c);
  }
  io_pb_free(v->owned);
  free(v);
}

static const char *nz(const char *s) { return s ? s : ""; }

static mil_size_range range_of(const Coreml__SizeRange *r) {
  mil_size_range out = {0, -1};
  if (r) {
    out.lower = r->lowerbound;
    out.upper = r->upperbound;
  }
  return out;
}

static void array_view(io_desc_view *v, const Coreml__ArrayFeatureType *a, mil_feature *f) {
  if (!a) return;
  f->array_dtype = (mil_array_dtype)a->datatype;
  f->shape.rank = (int32_t)a->n_shape;
  f->shape.dims = a->shape;
  if (a->shape_flexibility_case == COREML__ARRAY_FEATURE_TYPE__SHAPE_FLEXIBILITY_ENUMERATED_SHAPES &&
      a->enumeratedshapes) {
    size_t n = a->enumeratedshapes->n_shapes;
    mil_shape *s = view_alloc(v, n * sizeof *s);
    if (!s) return;
    for (size_t i = 0; i < n; i++) {
      const Coreml__ArrayFeatureType__Shape *sh = a->enumeratedshapes->shapes[i];
      s[i].rank = (int32_t)sh->n_shape;
      s[i].dims = sh->shape;
    }
    f->enumerated = s;
    f->n_enumerated = (int32_t)n;
  } else if (a->shape_flexibility_case == COREML__ARRAY_FEATURE_TYPE__SHAPE_FLEXIBILITY_SHAPE_RANGE && a->shaperange) {
    size_t n = a->shaperange->n_sizeranges;
    mil_size_range *r = view_alloc(v, n * sizeof *r);
    if (!r) return;
    for (size_t i = 0; i < n; i++) r[i] = range_of(a->shaperange->sizeranges[i]);
    f->ranges = r;
    f->n_ranges = (int32_t)n;
  }
}

static void feature_view(io_desc_view *v, const Coreml__FeatureDescription *fd, mil_feature *f) {
  f->name = nz(fd->name);
  f->short_description = nz(fd->shortdescription);
  const Coreml__FeatureType *t = fd->type;
  if (!t) return;
  f->is_optional = t->isoptional;
  f->kind = (mil_feature_kind)t->type_case;
  switch (t->type_case) {
  case COREML__FEATURE_TYPE__TYPE_IMAGE_TYPE: {
    const Coreml__ImageFeatureType *im = t->imagetype;
    f->width = im->width;
    f->height = im->height;
    f->color_space = (mil_color_space)im->colorspace;
    if (im->size_flexibility_case == COREML__IMAGE_FEATURE_TYPE__SIZE_FLEXIBILITY_ENUMERATED_SIZES &&
        im->enumeratedsizes) {
      size_t n = im->enumeratedsizes->n_sizes;
      uint64_t *s = view_alloc(v, 2 * n * sizeof *s);
      if (!s) return;
      for (size_t i = 0; i < n; i++) {
        s[2 * i] = im->enumeratedsizes->sizes[i]->width;
        s[2 * i + 1] = im->enumeratedsizes->sizes[i]->height;
      }
      f->image_sizes = s;
      f->n_image_sizes = (int32_t)n;
    } else if (im->size_flexibility_case == COREML__IMAGE_FEATURE_TYPE__SIZE_FLEXIBILITY_IMAGE_SIZE_RANGE &&
               im->imagesizerange) {
      f->has_image_range = true;
      f->width_range = range_of(im->imagesizerange->widthrange);
      f->height_range = range_of(im->imagesizerange->heightrange);
    }
    break;
  }
  case COREML__FEATURE_TYPE__TYPE_MULTI_ARRAY_TYPE: array_view(v, t->multiarraytype, f); break;
  case COREML__FEATURE_TYPE__TYPE_STATE_TYPE:
    if (t->statetype->type_case == COREML__STATE_FEATURE_TYPE__TYPE_ARRAY_TYPE) array_view(v, t->statetype->arraytype, f);
    break;
  case COREML__FEATURE_TYPE__TYPE_DICTIONARY_TYPE:
    f->dict_key = t->dictionarytype->key_type_case == COREML__DICTIONARY_FEATURE_TYPE__KEY_TYPE_INT64_KEY_TYPE
                      ? MIL_FEATURE_INT64
                      : t->dictionarytype->key_type_case == COREML__DICTIONARY_FEATURE_TYPE__KEY_TYPE_STRING_KEY_TYPE
                            ? MIL_FEATURE_STRING
                            : MIL_FEATURE_NONE;
    break;
  default: break;
  }
}

static const mil_feature *features_view(io_desc_view *v, Coreml__FeatureDescription **fds, size_t n, int32_t *n_out) {
  mil_feature *f = view_alloc(v, n * sizeof *f);
  *n_out = f ? (int32_t)n : 0;
  for (size_t i = 0; f && i < n; i++) feature_view(v, fds[i], &f[i]);
  return f;
}

io_desc_view *io_desc_view_new(const Coreml__ModelDescription *desc, Coreml__ModelDescription *owned) {
  io_desc_view *v = calloc(1, sizeof *v);
  if (!v) {
    io_pb_free(owned);
    return NULL;
  }
  v->owned = owned;
  mil_model_desc *md = &v->desc;
  md->short_description = md->version_string = md->author = md->license = "";
  md->default_function_name = "main";
  if (!desc) return v;
  const char *dfn = nz(desc->defaultfunctionname);
  md->multi_function = desc->n_functions > 0 || dfn[0];
  if (md->multi_function) {
    md->default_function_name = dfn;
    mil_function_desc *fs = view_alloc(v, desc->n_functions * sizeof *fs);
    for (size_t i = 0; fs && i < desc->n_functions; i++) {
      const Coreml__FunctionDescription *fd = desc->functions[i];
      fs[i].name = nz(fd->name);
      fs[i].inputs = features_view(v, fd->input, fd->n_input, &fs[i].n_inputs);
      fs[i].outputs = features_view(v, fd->output, fd->n_output, &fs[i].n_outputs);
      fs[i].states = features_view(v, fd->state, fd->n_state, &fs[i].n_states);
      fs[i].predicted_feature_name = nz(fd->predictedfeaturename);
      fs[i].predicted_probabilities_name = nz(fd->predictedprobabilitiesname);
    }
    md->functions = fs;
    md->n_functions = fs ? (int32_t)desc->n_functions : 0;
  } else {
    mil_function_desc *fs = view_alloc(v, sizeof *fs);
    if (fs) {
      fs->name = "main";
      fs->inputs = features_view(v, desc->input, desc->n_input, &fs->n_inputs);
      fs->outputs = features_view(v, desc->output, desc->n_output, &fs->n_outputs);
      fs->states = features_view(v, desc->state, desc->n_state, &fs->n_states);
      fs->predicted_feature_name = nz(desc->predictedfeaturename);
      fs->predicted_probabilities_name = nz(desc->predictedprobabilitiesname);
      md->functions = fs;
      md->n_functions = 1;
    }
  }
  const Coreml__Metadata *meta = desc->metadata;
  if (meta) {
    md->short_description = nz(meta->shortdescription);
    md->version_string = nz(meta->versionstring);
    md->author = nz(meta->author);
    md->license = nz(meta->license);
    const char **k = view_alloc(v, meta->n_userdefined * sizeof *k);
    const char **val = view_alloc(v, meta->n_userdefined * sizeof *val);
    if (k && val) {
      for (size_t i = 0; i < meta->n_userdefined; i++) {
        k[i] = nz(meta->userdefined[i]->key);
        val[i] = nz(meta->userdefined[i]->value);
      }
      md->user_keys = k;
      md->user_values = val;
      md->n_user_defined = (int32_t)meta->n_userdefined;
    }
  }
  if (v->oom) {
    io_desc_view_free(v);
    return NULL;
  }
  return v;
}

const mil_model_desc *io_desc_view_get(const io_desc_view *v) { return &v->desc; }

/* ------------------------------------------------------------------------ */
/* synthesis                                                                  */
/* ------------------------------------------------------------------------ */

/* A deep copy of a protobuf-c message (pack, then unpack). */
void *io_pb_clone(const void *msg) {
  const ProtobufCMessage *m = msg;
  if (!m) return NULL;
  size_t n = protobuf_c_message_get_packed_size(m);
  uint8_t *buf = malloc(n ? n : 1);
  if (!buf) return NULL;
  protobuf_c_message_pack(m, buf);
  void *c = protobuf_c_message_unpack(m->descriptor, NULL, n, buf);
  free(buf);
  return c;
}

/* The ArrayDataType coremltools uses for an I/O dtype, or INVALID. */
static Coreml__ArrayFeatureType__ArrayDataType io_array_dtype(mil_dtype dt) {
  switch (dt) {
  case MIL_DT_FP32: return COREML__ARRAY_FEATURE_TYPE__ARRAY_DATA_TYPE__FLOAT32;
  case MIL_DT_INT32: return COREML__ARRAY_FEATURE_TYPE__ARRAY_DATA_TYPE__INT32;
  case MIL_DT_FP16: return COREML__ARRAY_FEATURE_TYPE__ARRAY_DATA_TYPE__FLOAT16;
  case MIL_DT_INT8: return COREML__ARRAY_FEATURE_TYPE__ARRAY_DATA_TYPE__INT8;
  default: return COREML__ARRAY_FEATURE_TYPE__ARRAY_DATA_TYPE__INVALID_ARRAY_DATA_TYPE;
  }
}

static bool is_symbolic(const mil_type *t) {
  if (t->rank < 0) return true;
  for (int32_t i = 0; i < t->rank; i++)
    if (t->dims[i].size < 0) return true;
  return false;
}

static bool has_variadic(const mil_type *t) {
  if (t->rank < 0) return true;
  for (int32_t i = 0; i < t->rank; i++)
    if (t->dims[i].variadic || (t->dims[i].sym && t->dims[i].sym[0] == '*')) return true;
  return false;
}

typedef struct synth {
  const mil_program *p;
  int spec;
  mil_diag *d;
  mil_status st;
} synth;

static void *sfail(synth *s, mil_status st, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void *sfail(synth *s, mil_status st, const char *fmt, ...) {
  if (s->st == MIL_OK) s->st = st;
  va_list ap;
  va_start(ap, fmt);
  mil_diag_vadd(s->d, MIL_SEV_ERROR, fmt, ap);
  va_end(ap);
  return NULL;
}

static void *soom(synth *s) { return sfail(s, MIL_ERR_NOMEM, "out of memory while building the model description"); }

static Coreml__FeatureDescription *new_feature(synth *s, const char *name, Coreml__FeatureType **type) {
  Coreml__FeatureDescription *fd = io_pb_new(&coreml__feature_description__descriptor);
  if (!fd || !(fd->name = io_model_strdup(name)) || !(fd->type = io_pb_new(&coreml__feature_type__descriptor))) {
    io_pb_free(fd);
    return soom(s);
  }
  *type = fd->type;
  return fd;
}

/* multiArrayType for a tensor var; `input` decides how symbolic shapes are written. */
static Coreml__ArrayFeatureType *array_type(synth *s, const mil_var *v, const mil_type *t, bool input,
                                             const char *role) {
  Coreml__ArrayFeatureType__ArrayDataType adt = io_array_dtype(t->dtype);
  if (adt == COREML__ARRAY_FEATURE_TYPE__ARRAY_DATA_TYPE__INVALID_ARRAY_DATA_TYPE)
    return sfail(s, MIL_ERR_UNSUPPORTED, "%s %s has data type %s; ML Program models support fp32, fp16, int32 and int8 "
                 "inputs and outputs", role, v->name, mil_dtype_name(t->dtype));
  Coreml__ArrayFeatureType *a = io_pb_new(&coreml__array_feature_type__descriptor);
  if (!a) return soom(s);
  a->datatype = adt;
  bool scalar = t->rank == 0;
  bool symbolic = is_symbolic(t);
  size_t rank = scalar ? 1 : (size_t)t->rank;
  if (!input && (scalar || symbolic)) return a; /* outputs: no shape */
  if (!(a->shape = malloc(rank * sizeof *a->shape))) goto oom;
  a->n_shape = rank;
  for (size_t i = 0; i < rank; i++) a->shape[i] = scalar ? 1 : (t->dims[i].size < 0 ? 1 : t->dims[i].size);
  if (input && symbolic && !scalar) {
    /* unknown dims default to [1, 2] for ML Programs (load.py get_func_input) */
    Coreml__ArrayFeatureType__ShapeRange *sr = io_pb_new(&coreml__array_feature_type__shape_range__descriptor);
    if (!sr) goto oom;
    a->shape_flexibility_case = COREML__ARRAY_FEATURE_TYPE__SHAPE_FLEXIBILITY_SHAPE_RANGE;
    a->shaperange = sr;
    for (size_t i = 0; i < rank; i++) {
      Coreml__SizeRange *r = io_pb_new(&coreml__size_range__descriptor);
      if (!io_pb_push(&sr->sizeranges, &sr->n_sizeranges, r)) {
        io_pb_free(r);
        goto oom;
      }
      bool sym = t->dims[i].size < 0;
      r->lowerbound = sym ? 1 : (uint64_t)t->dims[i].size;
      r->upperbound = sym ? 2 : t->dims[i].size;
    }
  }
  return a;
oom:
  io_pb_free(a);
  return soom(s);
}

static Coreml__FeatureDescription *synth_input(synth *s, const mil_var *v) {
  const mil_type *t = v->type;
  Coreml__FeatureType *ft;
  if (t->kind == MIL_TYPE_TENSOR) {
    if (has_variadic(t)) return sfail(s, MIL_ERR_UNSUPPORTED, "input %s: variable-rank model inputs are not supported", v->name);
    Coreml__ArrayFeatureType *a = array_type(s, v, t, true, "input");
    if (!a) return NULL;
    Coreml__FeatureDescription *fd = new_feature(s, v->name, &ft);
    if (!fd) {
      io_pb_free(a);
      return NULL;
    }
    ft->type_case = COREML__FEATURE_TYPE__TYPE_MULTI_ARRAY_TYPE;
    ft->multiarraytype = a;
    return fd;
  }
  if (t->kind == MIL_TYPE_STATE && t->elem && t->elem->kind == MIL_TYPE_TENSOR) {
    const mil_type *wt = t->elem;
    if (is_symbolic(wt)) return sfail(s, MIL_ERR_UNSUPPORTED, "state %s: flexible-shape states are not supported", v->name);
    if (wt->dtype != MIL_DT_FP16)
      return sfail(s, MIL_ERR_UNSUPPORTED, "state %s: states must be fp16, found %s", v->name, mil_dtype_name(wt->dtype));
    Coreml__ArrayFeatureType *a = array_type(s, v, wt, true, "state");
    if (!a) return NULL;
    Coreml__FeatureDescription *fd = new_feature(s, v->name, &ft);
    Coreml__StateFeatureType *sft = fd ? io_pb_new(&coreml__state_feature_type__descriptor) : NULL;
    if (!sft) {
      io_pb_free(a);
      io_pb_free(fd);
      return fd ? soom(s) : NULL;
    }
    ft->type_case = COREML__FEATURE_TYPE__TYPE_STATE_TYPE;
    ft->statetype = sft;
    sft->type_case = COREML__STATE_FEATURE_TYPE__TYPE_ARRAY_TYPE;
    sft->arraytype = a;
    return fd;
  }
  return sfail(s, MIL_ERR_UNSUPPORTED, "input %s: only tensor and state inputs can be described", v->name);
}

static Coreml__FeatureDescription *synth_output(synth *s, const mil_var *v) {
  const mil_type *t = v->type;
  Coreml__FeatureType *ft;
  if (t->kind == MIL_TYPE_TENSOR && t->rank == 0 && (t->dtype == MIL_DT_STRING || t->dtype == MIL_DT_INT64)) {
    /* a classifier's label (classify's first output): stringType / int64Type */
    Coreml__FeatureDescription *fd = new_feature(s, v->name, &ft);
    if (!fd) return NULL;
    bool str = t->dtype == MIL_DT_STRING;
    void *lt = io_pb_new(str ? &coreml__string_feature_type__descriptor : &coreml__int64_feature_type__descriptor);
    if (!lt) {
      io_pb_free(fd);
      return soom(s);
    }
    ft->type_case = str ? COREML__FEATURE_TYPE__TYPE_STRING_TYPE : COREML__FEATURE_TYPE__TYPE_INT64_TYPE;
    if (str) ft->stringtype = lt;
    else ft->int64type = lt;
    return fd;
  }
  if (t->kind == MIL_TYPE_TENSOR) {
    Coreml__ArrayFeatureType *a = array_type(s, v, t, false, "output");
    if (!a) return NULL;
    Coreml__FeatureDescription *fd = new_feature(s, v->name, &ft);
    if (!fd) {
      io_pb_free(a);
      return NULL;
    }
    ft->type_case = COREML__FEATURE_TYPE__TYPE_MULTI_ARRAY_TYPE;
    ft->multiarraytype = a;
    return fd;
  }
  if (t->kind == MIL_TYPE_DICT && t->elem && t->elem->kind == MIL_TYPE_TENSOR &&
      (t->elem->dtype == MIL_DT_STRING || t->elem->dtype == MIL_DT_INT64)) {
    Coreml__FeatureDescription *fd = new_feature(s, v->name, &ft);
    if (!fd) return NULL;
    Coreml__DictionaryFeatureType *dt = io_pb_new(&coreml__dictionary_feature_type__descriptor);
    bool str = t->elem->dtype == MIL_DT_STRING;
    void *key = dt ? io_pb_new(str ? &coreml__string_feature_type__descriptor : &coreml__int64_feature_type__descriptor)
                   : NULL;
    if (!key) {
      io_pb_free(dt);
      io_pb_free(fd);
      return soom(s);
    }
    ft->type_case = COREML__FEATURE_TYPE__TYPE_DICTIONARY_TYPE;
    ft->dictionarytype = dt;
    dt->key_type_case = str ? COREML__DICTIONARY_FEATURE_TYPE__KEY_TYPE_STRING_KEY_TYPE
                            : COREML__DICTIONARY_FEATURE_TYPE__KEY_TYPE_INT64_KEY_TYPE;
    if (str) dt->stringkeytype = key;
    else dt->int64keytype = key;
    return fd;
  }
  return sfail(s, MIL_ERR_UNSUPPORTED, "output %s: only tensor and dictionary outputs can be described", v->name);
}

static bool shape_equals(const Coreml__ArrayFeatureType *a, const mil_type *t) {
  if (t->rank == 0) return a->n_shape == 1 && a->shape[0] == 1;
  if (t->rank < 0 || a->n_shape != (size_t)t->rank) return false;
  for (int32_t i = 0; i < t->rank; i++)
    if (t->dims[i].size >= 0 && a->shape[i] != t->dims[i].size) return false;
  return true;
}

/* Whether an existing feature still describes var v (see the header). */
static bool feature_fits(const Coreml__FeatureDescription *fd, const mil_var *v, bool input) {
  const Coreml__FeatureType *ft = fd ? fd->type : NULL;
  const mil_type *t = v->type;
  if (!ft) return false;
  switch (ft->type_case) {
  case COREML__FEATURE_TYPE__TYPE_MULTI_ARRAY_TYPE: {
    const Coreml__ArrayFeatureType *a = ft->multiarraytype;
    if (t->kind != MIL_TYPE_TENSOR || a->datatype != io_array_dtype(t->dtype)) return false;
    bool flexible = a->shape_flexibility_case != COREML__ARRAY_FEATURE_TYPE__SHAPE_FLEXIBILITY__NOT_SET;
    if (!input && a->n_shape == 0) return t->rank == 0 || is_symbolic(t);
    if (!shape_equals(a, t)) return false;
    return is_symbolic(t) ? (input ? flexible : true) : !flexible;
  }
  case COREML__FEATURE_TYPE__TYPE_IMAGE_TYPE: {
    const Coreml__ImageFeatureType *im = ft->imagetype;
    if (t->kind != MIL_TYPE_TENSOR || t->rank != 4) return false;
    bool flexible = im->size_flexibility_case != COREML__IMAGE_FEATURE_TYPE__SIZE_FLEXIBILITY__NOT_SET;
    if (t->dims[2].size >= 0 && t->dims[2].size != im->height && !flexible) return false;
    if (t->dims[3].size >= 0 && t->dims[3].size != im->width && !flexible) return false;
    return true;
  }
  case COREML__FEATURE_TYPE__TYPE_STATE_TYPE: {
    const Coreml__StateFeatureType *sft = ft->statetype;
    if (t->kind != MIL_TYPE_STATE || !t->elem || sft->type_case != COREML__STATE_FEATURE_TYPE__TYPE_ARRAY_TYPE)
      return false;
    return sft->arraytype->datatype == io_array_dtype(t->elem->dtype) && shape_equals(sft->arraytype, t->elem);
  }
  case COREML__FEATURE_TYPE__TYPE_DICTIONARY_TYPE: return t->kind == MIL_TYPE_DICT;
  case COREML__FEATURE_TYPE__TYPE_INT64_TYPE:
  case COREML__FEATURE_TYPE__TYPE_STRING_TYPE:
  case COREML__FEATURE_TYPE__TYPE_DOUBLE_TYPE:
    /* classifier labels: a scalar/rank-1 tensor the classify op produces */
    return !input && t->kind == MIL_TYPE_TENSOR;
  default: return false;
  }
}

static const Coreml__FeatureDescription *find_feature(Coreml__FeatureDescription **fds, size_t n, const char *name) {
  for (size_t i = 0; i < n; i++)
    if (fds[i]->name && !strcmp(fds[i]->name, name)) return fds[i];
  return NULL;
}

/* Features of one function. `old_*` (may be NULL) supply features to keep. */
typedef struct fn_features {
  Coreml__FeatureDescription **in, **out, **state;
  size_t n_in, n_out, n_state;
} fn_features;

static void fn_features_free(fn_features *f) {
  for (size_t i = 0; i < f->n_in; i++) io_pb_free(f->in[i]);
  for (size_t i = 0; i < f->n_out; i++) io_pb_free(f->out[i]);
  for (size_t i = 0; i < f->n_state; i++) io_pb_free(f->state[i]);
  free(f->in);
  free(f->out);
  free(f->state);
  memset(f, 0, sizeof *f);
}

static bool synth_function(synth *s, const mil_function *fn, Coreml__FeatureDescription **old_in, size_t n_old_in,
                           Coreml__FeatureDescription **old_out, size_t n_old_out, Coreml__FeatureDescription **old_st,
                           size_t n_old_st, fn_features *ff) {
  memset(ff, 0, sizeof *ff);
  for (int32_t i = 0; i < fn->n_inputs; i++) {
    const mil_var *v = fn->inputs[i];
    bool is_state = v->type->kind == MIL_TYPE_STATE;
    const Coreml__FeatureDescription *old =
        is_state ? find_feature(old_st, n_old_st, v->name) : find_feature(old_in, n_old_in, v->name);
    Coreml__FeatureDescription *fd = old && feature_fits(old, v, true) ? io_pb_clone(old) : synth_input(s, v);
    if (!fd) {
      if (s->st == MIL_OK) soom(s);
      goto fail;
    }
    if (!(is_state ? io_pb_push(&ff->state, &ff->n_state, fd) : io_pb_push(&ff->in, &ff->n_in, fd))) {
      io_pb_free(fd);
      soom(s);
      goto fail;
    }
  }
  const mil_block *body = mil_function_body(fn);
  for (int32_t i = 0; body && i < body->n_outputs; i++) {
    const mil_var *v = body->outputs[i].var;
    const Coreml__FeatureDescription *old = find_feature(old_out, n_old_out, v->name);
    Coreml__FeatureDescription *fd = old && feature_fits(old, v, false) ? io_pb_clone(old) : synth_output(s, v);
    if (!fd) {
      if (s->st == MIL_OK) soom(s);
      goto fail;
    }
    if (!io_pb_push(&ff->out, &ff->n_out, fd)) {
      io_pb_free(fd);
      soom(s);
      goto fail;
    }
  }
  return true;
fail:
  fn_features_free(ff);
  return false;
}

static const mil_function *default_function(const mil_program *p, const char *preferred) {
  const mil_function *f = preferred && preferred[0] ? mil_program_find_function(p, preferred) : NULL;
  if (!f) f = mil_program_find_function(p, "main");
  if (!f && p->n_functions) f = p->functions[0];
  return f;
}

static bool output_exists(const fn_features *ff, const char *name) {
  return name && name[0] && find_feature(ff->out, ff->n_out, name) != NULL;
}

mil_status io_desc_synthesize(const mil_program *p, int spec_version, const Coreml__ModelDescription *old,
                              Coreml__ModelDescription **out, mil_diag *d) {
  *out = NULL;
  synth s = {p, spec_version, d, MIL_OK};
  if (!p || p->n_functions == 0) return mil_diag_error(d, MIL_ERR_INVALID, "the program has no function to describe");
  Coreml__ModelDescription *desc = io_pb_new(&coreml__model_description__descriptor);
  if (!desc) return mil_diag_error(d, MIL_ERR_NOMEM, "out of memory");
  bool old_multi = old && (old->n_functions || (old->defaultfunctionname && old->defaultfunctionname[0]));
  if (p->n_functions > 1 || (old_multi && spec_version >= 9)) {
    if (spec_version < 9) {
      io_pb_free(desc);
      return mil_diag_error(d, MIL_ERR_UNSUPPORTED, "a model with %d functions needs specification version >= 9 "
                            "(iOS18), found %d", p->n_functions, spec_version);
    }
    const mil_function *df = default_function(p, old_multi ? old->defaultfunctionname : NULL);
    if (!(desc->defaultfunctionname = io_model_strdup(df->name))) goto oom;
    for (int32_t i = 0; i < p->n_functions; i++) {
      const mil_function *fn = p->functions[i];
      const Coreml__FunctionDescription *of = NULL;
      for (size_t k = 0; old_multi && k < old->n_functions; k++)
        if (old->functions[k]->name && !strcmp(old->functions[k]->name, fn->name)) of = old->functions[k];
      fn_features ff;
      if (!synth_function(&s, fn, of ? of->input : NULL, of ? of->n_input : 0, of ? of->output : NULL,
                          of ? of->n_output : 0, of ? of->state : NULL, of ? of->n_state : 0, &ff))
        goto fail;
      Coreml__FunctionDescription *fd = io_pb_new(&coreml__function_description__descriptor);
      if (!fd || !(fd->name = io_model_strdup(fn->name)) || !io_pb_push(&desc->functions, &desc->n_functions, fd)) {
        io_pb_free(fd);
        fn_features_free(&ff);
        goto oom;
      }
      fd->input = ff.in, fd->n_input = ff.n_in;
      fd->output = ff.out, fd->n_output = ff.n_out;
      fd->state = ff.state, fd->n_state = ff.n_state;
      if (of && output_exists(&ff, of->predictedfeaturename) && !(fd->predictedfeaturename = io_model_strdup(of->predictedfeaturename)))
        goto oom;
      if (of && output_exists(&ff, of->predictedprobabilitiesname) &&
          !(fd->predictedprobabilitiesname = io_model_strdup(of->predictedprobabilitiesname)))
        goto oom;
    }
  } else {
    const mil_function *fn = p->functions[0];
    const Coreml__FunctionDescription *of = NULL;
    for (size_t k = 0; old_multi && k < old->n_functions; k++)
      if (old->functions[k]->name && !strcmp(old->functions[k]->name, fn->name)) of = old->functions[k];
    fn_features ff;
    bool ok = of ? synth_function(&s, fn, of->input, of->n_input, of->output, of->n_output, of->state, of->n_state, &ff)
                 : synth_function(&s, fn, old ? old->input : NULL, old ? old->n_input : 0, old ? old->output : NULL,
                                  old ? old->n_output : 0, old ? old->state : NULL, old ? old->n_state : 0, &ff);
    if (!ok) goto fail;
    desc->input = ff.in, desc->n_input = ff.n_in;
    desc->output = ff.out, desc->n_output = ff.n_out;
    desc->state = ff.state, desc->n_state = ff.n_state;
    const char *pf = of ? of->predictedfeaturename : old ? old->predictedfeaturename : NULL;
    const char *pp = of ? of->predictedprobabilitiesname : old ? old->predictedprobabilitiesname : NULL;
    if (output_exists(&ff, pf) && !(desc->predictedfeaturename = io_model_strdup(pf))) goto oom;
    if (output_exists(&ff, pp) && !(desc->predictedprobabilitiesname = io_model_strdup(pp))) goto oom;
  }
  if (old && old->metadata && !(desc->metadata = io_pb_clone(old->metadata))) goto oom;
  *out = desc;
  return MIL_OK;
oom:
  soom(&s);
fail:
  io_pb_free(desc);
  return s.st != MIL_OK ? s.st : MIL_ERR_NOMEM;
}

/* ------------------------------------------------------------------------ */
/* checks (formats.md section 8, model-level validator)                       */
/* ------------------------------------------------------------------------ */

typedef struct vctx {
  const char *file;
  int spec;
  mil_diag *d;
  mil_status st;
} vctx;

static void verr(vctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void verr(vctx *c, const char *fmt, ...) {
  char buf[600];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  mil_diag_error(c->d, MIL_ERR_FORMAT, "%s: model description: %s", c->file, buf);
  if (c->st == MIL_OK) c->st = MIL_ERR_FORMAT;
}

static void check_range(vctx *c, const char *what, const char *name, const Coreml__SizeRange *r) {
  if (r && r->upperbound > 0 && r->lowerbound > (uint64_t)r->upperbound)
    verr(c, "%s '%s': size range [%llu, %lld] has lower > upper", what, name, (unsigned long long)r->lowerbound,
         (long long)r->upperbound);
}

static void check_array(vctx *c, const char *what, const char *name, const Coreml__ArrayFeatureType *a, bool input,
                        bool state) {
  switch ((int)a->datatype) {
  case COREML__ARRAY_FEATURE_TYPE__ARRAY_DATA_TYPE__FLOAT32:
  case COREML__ARRAY_FEATURE_TYPE__ARRAY_DATA_TYPE__DOUBLE:
  case COREML__ARRAY_FEATURE_TYPE__ARRAY_DATA_TYPE__INT32: break;
  case COREML__ARRAY_FEATURE_TYPE__ARRAY_DATA_TYPE__FLOAT16:
    if (c->spec < 7) verr(c, "%s '%s': FLOAT16 arrays need specification version >= 7, found %d", what, name, c->spec);
    break;
  case COREML__ARRAY_FEATURE_TYPE__ARRAY_DATA_TYPE__INT8:
    if (c->spec < 10) verr(c, "%s '%s': INT8 arrays need specification version >= 10, found %d", what, name, c->spec);
    break;
  default: verr(c, "%s '%s': invalid array dataType %d", what, name, (int)a->datatype);
  }
  for (size_t i = 0; i < a->n_shape; i++)
    if (a->shape[i] < 0) verr(c, "%s '%s': shape entry %zu is %lld, expected >= 0", what, name, i, (long long)a->shape[i]);
  bool flexible = a->shape_flexibility_case != COREML__ARRAY_FEATURE_TYPE__SHAPE_FLEXIBILITY__NOT_SET;
  if (input && !state && a->n_shape == 0 && !flexible) verr(c, "%s '%s': a multiArray input needs a shape", what, name);
  if (a->shape_flexibility_case == COREML__ARRAY_FEATURE_TYPE__SHAPE_FLEXIBILITY_SHAPE_RANGE && a->shaperange)
    for (size_t i = 0; i < a->shaperange->n_sizeranges; i++) check_range(c, what, name, a->shaperange->sizeranges[i]);
  if (a->default_optional_value_case == COREML__ARRAY_FEATURE_TYPE__DEFAULT_OPTIONAL_VALUE_INT_DEFAULT_VALUE &&
      a->datatype == COREML__ARRAY_FEATURE_TYPE__ARRAY_DATA_TYPE__INT8 &&
      (a->intdefaultvalue < -128 || a->intdefaultvalue > 127))
    verr(c, "%s '%s': intDefaultValue %d does not fit INT8", what, name, a->intdefaultvalue);
  if (state) {
    if (a->n_shape == 0) verr(c, "state '%s': a state needs a fixed shape", name);
    if (a->datatype != COREML__ARRAY_FEATURE_TYPE__ARRAY_DATA_TYPE__FLOAT16 &&
        a->datatype != COREML__ARRAY_FEATURE_TYPE__ARRAY_DATA_TYPE__INT8)
      verr(c, "state '%s': states must be FLOAT16 or INT8", name);
    if (flexible) verr(c, "state '%s': states cannot have flexible shapes", name);
    if (a->default_optional_value_case != COREML__ARRAY_FEATURE_TYPE__DEFAULT_OPTIONAL_VALUE__NOT_SET)
      verr(c, "state '%s': states cannot have default values", name);
  }
}

static void check_features(vctx *c, Coreml__FeatureDescription **fds, size_t n, const char *what, bool input,
                           bool state) {
  for (size_t i = 0; i < n; i++) {
    const Coreml__FeatureDescription *fd = fds[i];
    const char *name = nz(fd->name);
    if (!name[0]) verr(c, "%s %zu has an empty name", what, i);
    const Coreml__FeatureType *t = fd->type;
    if (!t || t->type_case == COREML__FEATURE_TYPE__TYPE__NOT_SET) {
      verr(c, "%s '%s' has no type", what, name);
      continue;
    }
    if (!input && t->isoptional) verr(c, "%s '%s': outputs cannot be optional", what, name);
    if (state) {
      if (c->spec < 9) verr(c, "state '%s': states need specification version >= 9, found %d", name, c->spec);
      if (t->type_case != COREML__FEATURE_TYPE__TYPE_STATE_TYPE) verr(c, "state '%s' is not a stateType feature", name);
      else if (t->statetype->type_case != COREML__STATE_FEATURE_TYPE__TYPE_ARRAY_TYPE) verr(c, "state '%s' has no arrayType", name);
      else check_array(c, what, name, t->statetype->arraytype, true, true);
      if (t->isoptional) verr(c, "state '%s' cannot be optional", name);
      continue;
    }
    if (t->type_case == COREML__FEATURE_TYPE__TYPE_MULTI_ARRAY_TYPE) check_array(c, what, name, t->multiarraytype, input, false);
    if (t->type_case == COREML__FEATURE_TYPE__TYPE_IMAGE_TYPE) {
      const Coreml__ImageFeatureType *im = t->imagetype;
      bool flexible = im->size_flexibility_case != COREML__IMAGE_FEATURE_TYPE__SIZE_FLEXIBILITY__NOT_SET;
      if ((im->width <= 0 || im->height <= 0) && !flexible)
        verr(c, "%s '%s': image width and height must be > 0 (found %lld x %lld)", what, name, (long long)im->width,
             (long long)im->height);
      switch ((int)im->colorspace) {
      case COREML__IMAGE_FEATURE_TYPE__COLOR_SPACE__GRAYSCALE:
      case COREML__IMAGE_FEATURE_TYPE__COLOR_SPACE__RGB:
      case COREML__IMAGE_FEATURE_TYPE__COLOR_SPACE__BGR: break;
      case COREML__IMAGE_FEATURE_TYPE__COLOR_SPACE__GRAYSCALE_FLOAT16:
        if (c->spec < 7) verr(c, "%s '%s': GRAYSCALE_FLOAT16 needs specification version >= 7", what, name);
        break;
      default: verr(c, "%s '%s': invalid image colorSpace %d", what, name, (int)im->colorspace);
      }
      if (flexible && im->size_flexibility_case == COREML__IMAGE_FEATURE_TYPE__SIZE_FLEXIBILITY_IMAGE_SIZE_RANGE &&
          im->imagesizerange) {
        check_range(c, what, name, im->imagesizerange->widthrange);
        check_range(c, what, name, im->imagesizerange->heightrange);
      }
    }
    if (t->type_case == COREML__FEATURE_TYPE__TYPE_STATE_TYPE) verr(c, "%s '%s' is a state; states belong to 'state'", what, name);
  }
}

/* Every described feature must name an input / output of the function. */
static void check_against(vctx *c, const mil_function *fn, Coreml__FeatureDescription **in, size_t n_in,
                          Coreml__FeatureDescription **out, size_t n_out, Coreml__FeatureDescription **st,
                          size_t n_st) {
  for (int pass = 0; pass < 2; pass++) {
    Coreml__FeatureDescription **fds = pass ? st : in;
    size_t n = pass ? n_st : n_in;
    for (size_t i = 0; i < n; i++) {
      bool found = false;
      for (int32_t k = 0; k < fn->n_inputs && !found; k++) found = !strcmp(fn->inputs[k]->name, nz(fds[i]->name));
      if (!found) verr(c, "%s '%s' is not an input of function '%s'", pass ? "state" : "input", nz(fds[i]->name), fn->name);
    }
  }
  const mil_block *b = mil_function_body(fn);
  for (size_t i = 0; i < n_out; i++) {
    bool found = false;
    for (int32_t k = 0; b && k < b->n_outputs && !found; k++)
      found = b->outputs[k].var && !strcmp(b->outputs[k].var->name, nz(out[i]->name));
    if (!found) verr(c, "output '%s' is not an output of function '%s'", nz(out[i]->name), fn->name);
  }
}

static void check_function(vctx *c, const mil_program *p, const char *fname, Coreml__FeatureDescription **in,
                           size_t n_in, Coreml__FeatureDescription **out, size_t n_out,
                           Coreml__FeatureDescription **st, size_t n_st) {
  check_features(c, in, n_in, "input", true, false);
  check_features(c, out, n_out, "output", false, false);
  check_features(c, st, n_st, "state", true, true);
  if (n_out == 0) verr(c, "function '%s' describes no outputs", fname);
  if (n_in == 0 && c->spec < 9) verr(c, "function '%s': models without inputs need specification version >= 9", fname);
  const mil_function *fn = mil_program_find_function(p, fname);
  if (!fn) {
    verr(c, "function '%s' is described but not in the program", fname);
    return;
  }
  check_against(c, fn, in, n_in, out, n_out, st, n_st);
}

mil_status io_desc_validate(const Coreml__ModelDescription *desc, const mil_program *p, int spec_version,
                            const char *file, mil_diag *d) {
  if (!desc) return MIL_OK;
  vctx c = {file, spec_version, d, MIL_OK};
  const char *dfn = nz(desc->defaultfunctionname);
  if (desc->n_functions || dfn[0]) {
    if (desc->n_input || desc->n_output || desc->n_state || desc->n_traininginput ||
        nz(desc->predictedfeaturename)[0] || nz(desc->predictedprobabilitiesname)[0])
      verr(&c, "a multi-function description must leave input, output, state, trainingInput and the predicted "
               "feature names empty");
    if (spec_version < IO_SPEC_MULTI_FUNCTION)
      verr(&c, "multi-function models need specification version >= %d, found %d", IO_SPEC_MULTI_FUNCTION, spec_version);
    bool found = false;
    for (size_t i = 0; i < desc->n_functions; i++) {
      const Coreml__FunctionDescription *fd = desc->functions[i];
      if (!strcmp(nz(fd->name), dfn)) found = true;
      check_function(&c, p, nz(fd->name), fd->input, fd->n_input, fd->output, fd->n_output, fd->state, fd->n_state);
    }
    if (!found) verr(&c, "defaultFunctionName '%s' is not one of the %zu described functions", dfn, desc->n_functions);
  } else {
    const char *fname = mil_program_find_function(p, "main") || p->n_functions != 1 ? "main" : p->functions[0]->name;
    check_function(&c, p, fname, desc->input, desc->n_input, desc->output, desc->n_output, desc->state, desc->n_state);
  }
  return c.st;
}

/* ---------- the specification version a description needs ---------- */

static int array_min_spec(const Coreml__ArrayFeatureType *a) {
  if (!a) return 0;
  if ((int)a->datatype == COREML__ARRAY_FEATURE_TYPE__ARRAY_DATA_TYPE__INT8) return 10;
  if ((int)a->datatype == COREML__ARRAY_FEATURE_TYPE__ARRAY_DATA_TYPE__FLOAT16) return 7;
  return 0;
}

static int features_min_spec(Coreml__FeatureDescription *const *f, size_t n) {
  int need = 0;
  for (size_t i = 0; i < n; i++) {
    const Coreml__FeatureType *t = f[i] ? f[i]->type : NULL;
    int k = 0;
    if (t && t->type_case == COREML__FEATURE_TYPE__TYPE_MULTI_ARRAY_TYPE) k = array_min_spec(t->multiarraytype);
    else if (t && t->type_case == COREML__FEATURE_TYPE__TYPE_STATE_TYPE && t->statetype &&
             t->statetype->type_case == COREML__STATE_FEATURE_TYPE__TYPE_ARRAY_TYPE)
      k = array_min_spec(t->statetype->arraytype);
    if (k > need) need = k;
  }
  return need;
}

int io_desc_min_spec(const Coreml__ModelDescription *desc) {
  if (!desc) return 0;
  int need = features_min_spec(desc->input, desc->n_input);
  int k = features_min_spec(desc->output, desc->n_output);
  if (k > need) need = k;
  if ((k = features_min_spec(desc->state, desc->n_state)) > need) need = k;
  for (size_t i = 0; i < desc->n_functions; i++) {
    const Coreml__FunctionDescription *fd = desc->functions[i];
    if ((k = features_min_spec(fd->input, fd->n_input)) > need) need = k;
    if ((k = features_min_spec(fd->output, fd->n_output)) > need) need = k;
    if ((k = features_min_spec(fd->state, fd->n_state)) > need) need = k;
  }
  return need;
}
