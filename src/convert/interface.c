/* A converted model's interface (mil/input_types.h): what ct.convert's
 * inputs / outputs / classifier_config options do to the program before
 * the pass pipeline (mil_interface_prepare) and after it
 * (mil_interface_finish, the backend's part). The description of the
 * features is written by interface_desc.c.
 *
 * Mirrors coremltools/converters/mil/frontend/torch/converter.py (fp16
 * inputs cast to fp32, output renaming, use_default_fp16_io),
 * converters/mil/backend/mil/load.py (_add_classify_op) and
 * converters/mil/backend/backend_helper.py
 * (_get_probability_var_for_classifier, _validate_image_input_output_shapes).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "convert/interface_internal.h"
#include "mil/passes.h"

mil_input_type mil_input_type_default(const char *name, bool is_image) {
  mil_input_type t;
  memset(&t, 0, sizeof t);
  t.name = name;
  t.is_image = is_image;
  t.scale = 1.0f;
  t.color_layout = MIL_COLOR_LAYOUT_RGB;
  return t;
}

mil_function *iface_main(mil_program *p) {
  mil_function *f = mil_program_find_function(p, "main");
  if (!f && p->n_functions == 1) f = p->functions[0];
  return f;
}

mil_var *iface_input(mil_function *f, const char *name) {
  for (int32_t i = 0; name && i < f->n_inputs; i++)
    if (!strcmp(f->inputs[i]->name, name)) return f->inputs[i];
  return NULL;
}

const mil_input_type *iface_input_type(const mil_model_interface *mi, const char *name) {
  for (int32_t i = 0; mi && i < mi->n_inputs; i++)
    if (mi->inputs[i].name && !strcmp(mi->inputs[i].name, name)) return &mi->inputs[i];
  return NULL;
}

static const char *layout_name(mil_color_layout l) {
  switch (l) {
  case MIL_COLOR_LAYOUT_BGR: return "BGR";
  case MIL_COLOR_LAYOUT_GRAYSCALE: return "G";
  case MIL_COLOR_LAYOUT_GRAYSCALE_FLOAT16: return "G_FLOAT16";
  default: return "RGB";
  }
}

static bool is_gray(mil_color_layout l) {
  return l == MIL_COLOR_LAYOUT_GRAYSCALE || l == MIL_COLOR_LAYOUT_GRAYSCALE_FLOAT16;
}

/* coremltools' _validate_image_input_output_shapes. */
static mil_status check_image(const mil_input_type *it, const mil_var *v, mil_diag *d) {
  const mil_type *t = v->type;
  if (t->kind != MIL_TYPE_TENSOR || t->rank != 4)
    return mil_diag_error(d, MIL_ERR_INVALID, "image input '%s' must have rank 4 (1, C, H, W), found %s", it->name,
                          t->kind == MIL_TYPE_TENSOR ? "another rank" : "a non-tensor");
  int64_t ch = is_gray(it->color_layout) ? 1 : 3;
  if (t->dims[0].size != 1 || t->dims[1].size != ch)
    return mil_diag_error(d, MIL_ERR_INVALID, "image input '%s' (%s) must have shape (1, %lld, H, W); its first two "
                          "dims are (%lld, %lld)", it->name, layout_name(it->color_layout), (long long)ch,
                          (long long)t->dims[0].size, (long long)t->dims[1].size);
  if (t->dtype != MIL_DT_FP32)
    return mil_diag_error(d, MIL_ERR_INVALID, "image input '%s' must be fp32 in the model, found %s", it->name,
                          mil_dtype_name(t->dtype));
  return MIL_OK;
}

/* The input var v becomes dtype `to`, feeding a cast back to its old dtype
 * that takes every use (the torch frontend's "cast input to fp32"). */
static mil_status retype_input(pass_bld *c, mil_function *f, mil_var *v, mil_dtype to) {
  mil_block *b = mil_function_body(f);
  const mil_type *old = v->type;
  const mil_type *nt = mil_type_tensor(c->p, to, old->rank, old->dims);
  if (!nt) return mil_diag_error(c->d, MIL_ERR_NOMEM, "out of memory");
  v->type = nt;
  mil_status st = MIL_OK;
  pass_barg a[] = {PASS_BV("x", v), PASS_BK("dtype", pass_bld_str(c->p, mil_dtype_name(old->dtype)))};
  mil_op *cast = pass_bld_op(c, b, b->first, "cast", NULL, 2, a, &st);
  if (!cast) {
    v->type = old;
    return st;
  }
  pass_bld_replace_range(b, cast, NULL, v, cast->outputs[0]);
  return MIL_OK;
}

static mil_status string_attr(mil_function *f, const char *name, int32_t n, const char *const *s) {
  int64_t shape[1] = {n};
  mil_value *v = mil_value_new_tensor(f->program, MIL_DT_STRING, 1, shape, false, s);
  return v ? mil_function_set_attr(f, name, v) : MIL_ERR_NOMEM;
}

static mil_status declare_images(mil_function *f, const mil_model_interface *mi) {
  int32_t n = 0;
  for (int32_t i = 0; i < mi->n_inputs; i++) n += mi->inputs[i].is_image;
  if (!n) return MIL_OK;
  const char **names = calloc((size_t)n, sizeof *names), **layouts = calloc((size_t)n, sizeof *layouts);
  float *scales = calloc((size_t)n, sizeof *scales), *biases = calloc((size_t)n * 3, sizeof *biases);
  mil_status st = names && layouts && scales && biases ? MIL_OK : MIL_ERR_NOMEM;
  for (int32_t i = 0, k = 0; st == MIL_OK && i < mi->n_inputs; i++) {
    const mil_input_type *it = &mi->inputs[i];
    if (!it->is_image) continue;
    names[k] = it->name;
    layouts[k] = layout_name(it->color_layout);
    scales[k] = it->scale;
    memcpy(biases + 3 * k, it->bias, sizeof it->bias);
    k++;
  }
  int64_t s1[1] = {n}, s2[2] = {n, 3};
  if (st == MIL_OK) st = string_attr(f, "image_inputs", n, names);
  if (st == MIL_OK) st = string_attr(f, "image_color_layouts", n, layouts);
  mil_value *sv = st == MIL_OK ? mil_value_new_tensor(f->program, MIL_DT_FP32, 1, s1, false, scales) : NULL;
  mil_value *bv = st == MIL_OK ? mil_value_new_tensor(f->program, MIL_DT_FP32, 2, s2, false, biases) : NULL;
  if (st == MIL_OK && (!sv || !bv)) st = MIL_ERR_NOMEM;
  if (st == MIL_OK) st = mil_function_set_attr(f, "image_scales", sv);
  if (st == MIL_OK) st = mil_function_set_attr(f, "image_biases", bv);
  free(names);
  free(layouts);
  free(scales);
  free(biases);
  return st;
}

static mil_status prepare_inputs(pass_bld *c, mil_function *f, const mil_model_interface *mi, int target,
                                 bool fp16_io) {
  for (int32_t i = 0; mi && i < mi->n_inputs; i++) {
    const mil_input_type *it = &mi->inputs[i];
    mil_var *v = iface_input(f, it->name);
    if (!v)
      return mil_diag_error(c->d, MIL_ERR_INVALID, "input type '%s': the model has no input of that name",
                            it->name ? it->name : "(no name)");
    if (it->is_image) {
      mil_status st = check_image(it, v, c->d);
      if (st != MIL_OK) return st;
    }
  }
  for (int32_t i = 0; i < f->n_inputs; i++) {
    mil_var *v = f->inputs[i];
    const mil_type *t = v->type;
    if (!t || t->kind != MIL_TYPE_TENSOR) continue;
    const mil_input_type *it = iface_input_type(mi, v->name);
    mil_dtype want = it && it->is_image ? (it->color_layout == MIL_COLOR_LAYOUT_GRAYSCALE_FLOAT16 ? MIL_DT_FP16
                                                                                                    : MIL_DT_UNUSED)
                     : it && it->dtype != MIL_DT_UNUSED ? it->dtype
                     : fp16_io && t->dtype == MIL_DT_FP32 ? MIL_DT_FP16
                                                          : MIL_DT_UNUSED;
    if (want == MIL_DT_UNUSED || want == t->dtype) continue;
    if (want == MIL_DT_FP16 && target < MIL_IOS16)
      return mil_diag_error(c->d, MIL_ERR_INVALID, "input '%s': float16 inputs need minimum_deployment_target iOS16 "
                            "or later", v->name);
    if (!(want == MIL_DT_FP16 && t->dtype == MIL_DT_FP32))
      return mil_diag_error(c->d, MIL_ERR_INVALID, "input '%s' is %s in the model; it cannot be given as %s (only "
                            "fp32 inputs can become fp16)", v->name, mil_dtype_name(t->dtype), mil_dtype_name(want));
    mil_status st = retype_input(c, f, v, want);
    if (st != MIL_OK) return st;
  }
  return MIL_OK;
}

static mil_status prepare_outputs(pass_bld *c, mil_function *f, const mil_model_interface *mi, int target,
                                  bool fp16_io) {
  mil_block *b = mil_function_body(f);
  if (mi && mi->n_outputs && mi->n_outputs != b->n_outputs)
    return mil_diag_error(c->d, MIL_ERR_INVALID, "%d output types were given; the model has %d outputs",
                          (int)mi->n_outputs, (int)b->n_outputs);
  int32_t n = b->n_outputs;
  const char **decl = calloc((size_t)(n ? n : 1), sizeof *decl);
  if (!decl) return mil_diag_error(c->d, MIL_ERR_NOMEM, "out of memory");
  bool any = false;
  mil_status st = MIL_OK;
  for (int32_t i = 0; i < n && st == MIL_OK; i++) {
    mil_var *v = b->outputs[i].var;
    const mil_output_type *ot = mi && mi->n_outputs ? &mi->outputs[i] : NULL;
    if (ot && ot->name && strcmp(ot->name, v->name)) {
      for (int32_t k = 0; k < n; k++)
        if (k != i && ((mi->outputs[k].name && !strcmp(mi->outputs[k].name, ot->name)) ||
                       (!mi->outputs[k].name && !strcmp(b->outputs[k].var->name, ot->name))))
          st = mil_diag_error(c->d, MIL_ERR_INVALID, "output name '%s' is given to two outputs", ot->name);
      if (st == MIL_OK && iface_input(f, ot->name))
        st = mil_diag_error(c->d, MIL_ERR_INVALID, "output name '%s' is the name of an input", ot->name);
      if (st == MIL_OK && v->func_input_of)
        st = mil_diag_error(c->d, MIL_ERR_INVALID, "output %d is the input '%s' itself; it cannot be renamed '%s'",
                            (int)i, v->name, ot->name);
      if (st != MIL_OK) break;
      const char *nm = mil_program_intern(c->p, ot->name, (size_t)-1);
      if (!nm) st = mil_diag_error(c->d, MIL_ERR_NOMEM, "out of memory");
      else v->name = nm;
    }
    mil_dtype dt = v->type && v->type->kind == MIL_TYPE_TENSOR ? v->type->dtype : MIL_DT_UNUSED;
    mil_dtype want = ot && ot->dtype != MIL_DT_UNUSED ? ot->dtype
                     : fp16_io && dt == MIL_DT_FP32   ? MIL_DT_FP16
                     : fp16_io                         ? dt
                                                       : MIL_DT_UNUSED;
    if (want == MIL_DT_FP16 && target < MIL_IOS16 && ot && ot->dtype == MIL_DT_FP16)
      st = mil_diag_error(c->d, MIL_ERR_INVALID, "output '%s': float16 outputs need minimum_deployment_target iOS16 "
                          "or later", v->name);
    decl[i] = want == MIL_DT_UNUSED ? "" : mil_dtype_name(want);
    any |= want != MIL_DT_UNUSED;
  }
  if (st == MIL_OK && any) st = string_attr(f, "output_types", n, decl);
  /* the names the model's outputs must keep through the pipeline */
  for (int32_t i = 0; i < n; i++) decl[i] = b->outputs[i].var->name;
  if (st == MIL_OK) st = string_attr(f, "output_names", n, decl);
  free(decl);
  return st;
}

/* Outputs keep the names prepare recorded, whatever the pipeline merged: a
 * var that stands for two outputs (two equal computations fused into one)
 * gets an identity per later output, and a var renamed by a pass gets the
 * output's name back when no other var carries it. */
static mil_status restore_output_names(pass_bld *c, mil_function *f) {
  const mil_value *names = mil_function_get_attr(f, "output_names");
  mil_block *b = mil_function_body(f);
  if (!names || names->kind != MIL_VAL_TENSOR || names->numel != b->n_outputs) return MIL_OK;
  for (int32_t i = 0; i < b->n_outputs; i++) {
    const char *want = mil_value_get_str(names, i);
    mil_var *v = b->outputs[i].var;
    if (!want || v->name == want || !strcmp(v->name, want)) continue;
    bool shared = false;
    for (int32_t k = 0; k < i; k++) shared |= b->outputs[k].var == v;
    if (shared || v->func_input_of) {
      mil_status st = MIL_OK;
      pass_barg a[] = {PASS_BV("x", v)};
      mil_op *id = pass_bld_op(c, b, NULL, "identity", want, 1, a, &st);
      if (!id) return st;
      mil_block_set_output(b, i, id->outputs[0]);
    } else {
      const char *nm = mil_program_intern(c->p, want, (size_t)-1);
      if (!nm) return mil_diag_error(c->d, MIL_ERR_NOMEM, "out of memory");
      v->name = nm;
    }
  }
  return MIL_OK;
}

/* mi with its input types named as the model names them: an ONNX input
 * the import renamed (state -> state_workaround, x.1 -> x_1) is given by
 * its ONNX name. *copy holds the renamed inputs (free iface_names_free);
 * returns mi itself when nothing is renamed, NULL on out of memory. */
typedef struct iface_names {
  mil_model_interface mi;
  mil_input_type *inputs;
  char **names;
  int32_t n;
} iface_names;

static void iface_names_free(iface_names *r) {
  for (int32_t i = 0; i < r->n; i++) free(r->names[i]);
  free(r->names);
  free(r->inputs);
}

static const mil_model_interface *iface_model_names(mil_model *m, const mil_model_interface *mi, iface_names *r) {
  memset(r, 0, sizeof *r);
  if (!mi || !mi->n_inputs || !mil_model_metadata(m, MIL_ONNX_NAMES_KEY)) return mi;
  r->mi = *mi;
  r->inputs = malloc((size_t)mi->n_inputs * sizeof *r->inputs);
  r->names = calloc((size_t)mi->n_inputs, sizeof *r->names);
  if (!r->inputs || !r->names) {
    iface_names_free(r);
    return NULL;
  }
  r->n = mi->n_inputs;
  for (int32_t i = 0; i < mi->n_inputs; i++) {
    r->inputs[i] = mi->inputs[i];
    r->names[i] = mi->inputs[i].name ? mil_onnx_model_name(m, false, mi->inputs[i].name) : NULL;
    if (r->names[i]) r->inputs[i].name = r->names[i];
  }
  r->mi.inputs = r->inputs;
  return &r->mi;
}

mil_status mil_interface_prepare(mil_model *m, const mil_model_interface *mi0, int target, bool fp16_precision,
                                 mil_diag *d) {
  mil_program *p = mil_model_program(m);
  mil_function *f = p ? iface_main(p) : NULL;
  if (!f || !mil_function_body(f)) return mil_diag_error(d, MIL_ERR_INVALID, "the model has no main function");
  bool fp16_io = target >= MIL_IOS16 && fp16_precision;
  iface_names rn;
  const mil_model_interface *mi = iface_model_names(m, mi0, &rn);
  if (mi0 && !mi) return mil_diag_error(d, MIL_ERR_NOMEM, "out of memory");
  pass_bld c = {.p = p, .d = d, .pass = "convert"};
  mil_status st = prepare_inputs(&c, f, mi, target, fp16_io);
  if (st == MIL_OK) st = prepare_outputs(&c, f, mi, target, fp16_io);
  if (st == MIL_OK && mi) st = declare_images(f, mi);
  pass_bld_free(&c);
  iface_names_free(&rn);
  if (st == MIL_ERR_NOMEM && !mil_diag_first_error(d)) mil_diag_error(d, st, "out of memory");
  return st;
}

/* ---------- the backend's part ---------- */

static mil_status run_pass(mil_program *p, const char *name, mil_diag *d) {
  const mil_pass_def *def = mil_pass_find(name);
  if (!def) return mil_diag_error(d, MIL_ERR_NOT_FOUND, "pass %s is not available", name);
  return mil_pass_run(def, p, NULL, NULL, d);
}

mil_status mil_interface_finish(mil_model *m, const mil_model_interface *mi0, mil_diag *d) {
  mil_program *p = mil_model_program(m);
  mil_function *f = p ? iface_main(p) : NULL;
  if (!f || !mil_function_body(f)) return mil_diag_error(d, MIL_ERR_INVALID, "the model has no main function");
  iface_names rn;
  const mil_model_interface *mi = iface_model_names(m, mi0, &rn);
  if (mi0 && !mi) return mil_diag_error(d, MIL_ERR_NOMEM, "out of memory");
  pass_bld c = {.p = p, .d = d, .pass = "convert"};
  mil_status st = restore_output_names(&c, f);
  pass_bld_free(&c);
  if (st == MIL_OK) st = run_pass(p, "mil_backend::insert_image_preprocessing_ops", d);
  const char *label = NULL, *probs = NULL;
  if (st == MIL_OK && mi && mi->classifier) st = iface_add_classifier(p, f, mi->classifier, &label, &probs, d);
  if (st == MIL_OK) st = mil_model_sync_description(m, d);
  if (st == MIL_OK) st = iface_describe(m, f, mi, d);
  if (st == MIL_OK && label) st = mil_model_set_predicted_names(m, NULL, label, probs, d);
  iface_names_free(&rn);
  return st;
}

/* ---------- the importer's shapes ---------- */

bool iface_has_shapes(const mil_model_interface *mi) {
  for (int32_t i = 0; mi && i < mi->n_inputs; i++)
    if (mi->inputs[i].has_shape) return true;
  return false;
}

static bool flexible_dim(const mil_shape_spec *s, int32_t k) {
  if (s->ranges && s->ranges[k].upper_bound != 0) return true;
  for (int32_t e = 1; e < s->n_enumerated; e++)
    if (s->enumerated[(size_t)e * (size_t)s->rank + (size_t)k] != s->enumerated[k]) return true;
  return false;
}

mil_status iface_import_shapes(const mil_model_interface *mi, int32_t n_given, const mil_onnx_input_shape *given,
                               iface_shapes *out) {
  memset(out, 0, sizeof *out);
  size_t n = (size_t)n_given, nd = 0;
  for (int32_t i = 0; mi && i < mi->n_inputs; i++)
    if (mi->inputs[i].has_shape) n++, nd += (size_t)mi->inputs[i].shape.rank;
  if (!n) return MIL_OK;
  out->shapes = calloc(n, sizeof *out->shapes);
  out->dims = calloc(nd ? nd : 1, sizeof *out->dims);
  if (!out->shapes || !out->dims) {
    iface_shapes_free(out);
    return MIL_ERR_NOMEM;
  }
  for (int32_t i = 0; i < n_given; i++) out->shapes[out->n++] = given[i];
  int64_t *dp = out->dims;
  for (int32_t i = 0; mi && i < mi->n_inputs; i++) {
    const mil_input_type *it = &mi->inputs[i];
    if (!it->has_shape) continue;
    const mil_shape_spec *s = &it->shape;
    const int64_t *base = s->n_enumerated ? s->enumerated : s->dims;
    for (int32_t k = 0; k < s->rank; k++) dp[k] = flexible_dim(s, k) || !base ? -1 : base[k];
    out->shapes[out->n++] = (mil_onnx_input_shape){it->name, s->rank, dp};
    dp += s->rank;
  }
  return MIL_OK;
}

void iface_shapes_free(iface_shapes *s) {
  free(s->shapes);
  free(s->dims);
  memset(s, 0, sizeof *s);
}
