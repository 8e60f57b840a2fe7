/* Conversion as composition (mil/convert.h): import or load, then the
 * model interface, the pass pipeline, retargeting and the specification
 * version, then save. The one place where ct.convert's options apply;
 * the importer, the passes and the writers each do their own step only.
 *
 * Mirrors coremltools/converters/_converters_entry.py (convert ->
 * mil_convert: frontend, then the pass pipeline, then the backend). */
#include <string.h>

#include "convert/convert_internal.h"
#include "convert/interface_internal.h"
#include "mil/convert.h"
#include "mil/version.h"
#include "mil/ops.h"
#include "mil/passes.h"
#include "mil/text.h"

static bool ends_with(const char *s, const char *suffix) {
  size_t n = strlen(s), m = strlen(suffix);
  return n >= m && strcmp(s + n - m, suffix) == 0;
}

/* add_fp16_cast's op_selector (coremltools' FP16ComputePrecision
 * op_selector): an op the importer marked MIL_ONNX_KEEP_FP32_ATTR or the
 * fp16 check named stays fp32, and so does an op reading (through a cast)
 * the int32 result of such an op (the accumulator of ConvInteger before
 * its rescaling, beyond fp16's range). */
static bool marked(const mil_op *op) { return op && mil_op_get_attr(op, MIL_ONNX_KEEP_FP32_ATTR) != NULL; }

bool convert_keep_add(convert_keep *keep, const char *name) {
  const char *k = mil_program_intern(keep->p, name, (size_t)-1);
  return k && pass_ptrset_add(&keep->names, k);
}

static bool kept(const convert_keep *keep, const mil_op *op) {
  if (marked(op)) return true;
  if (!keep || !keep->names.n || !op) return false;
  for (int32_t i = 0; i < op->n_outputs; i++) {
    const mil_var *v = op->outputs[i];
    const char *k = op->program == keep->p ? v->name : mil_program_find_string(keep->p, v->name, (size_t)-1);
    if (k && pass_ptrset_has(&keep->names, k)) return true;
  }
  return false;
}

static bool fp16_selector(const mil_op *op, void *ud) {
  const convert_keep *keep = ud;
  if (kept(keep, op)) return false;
  for (int32_t i = 0; i < op->n_inputs; i++)
    for (int32_t k = 0; k < op->inputs[i].n_args; k++) {
      const mil_var *v = op->inputs[i].args[k].use.var;
      if (!v || !v->op || strcmp(v->op->type, "cast") != 0) continue;
      const mil_var *src = mil_op_input_var(v->op, "x");
      if (src && src->type->dtype == MIL_DT_INT32 && kept(keep, src->op)) return false;
    }
  return true;
}

static int find_mark(mil_op *op, void *ud) {
  (void)ud;
  return marked(op);
}

/* Removes the mark from every op (it is never saved). */
static int drop_mark(mil_op *op, void *ud) {
  (void)ud;
  int32_t j = 0;
  for (int32_t i = 0; i < op->n_attrs; i++)
    if (strcmp(op->attrs[i].name, MIL_ONNX_KEEP_FP32_ATTR) != 0) op->attrs[j++] = op->attrs[i];
  op->n_attrs = j;
  return 0;
}

/* The pipeline ct.convert runs: pass_pipeline (DEFAULT), without the fp16 /
 * int16 casts for compute_precision fp32; with ops marked by the importer
 * or named in keep kept fp32 by add_fp16_cast. */
mil_status convert_run_pipeline(mil_program *p, const mil_convert_options *o, bool fp32, const convert_keep *keep,
                                mil_diag *d) {
  mil_pipeline *pl = NULL;
  mil_status st = mil_pipeline_new(o->pipeline ? o->pipeline : "default", &pl, d);
  if (st != MIL_OK) return st;
  if (fp32) {
    mil_pipeline_remove_pass(pl, "common::add_fp16_cast");
    mil_pipeline_remove_pass(pl, "common::add_int16_cast");
  } else if ((keep && keep->names.n) || mil_program_walk(p, find_mark, NULL)) {
    for (int32_t i = 0; i < mil_pipeline_n_passes(pl); i++)
      if (!strcmp(mil_pipeline_pass_at(pl, i), "common::add_fp16_cast")) {
        st = mil_pipeline_set_selector(pl, "common::add_fp16_cast", "op_selector", fp16_selector, (void *)keep, d);
        break;
      }
  }
  if (st == MIL_OK) st = mil_pipeline_run(pl, p, NULL, NULL, d);
  mil_pipeline_free(pl);
  return st;
}

static mil_status run_pipeline(mil_model *m, const mil_convert_options *o, mil_diag *d) {
  convert_keep keep = {mil_model_program(m), {0}};
  mil_status st = MIL_OK;
  if (o->n_samples > 0 && !o->fp32) st = convert_fp16_sample(m, o, &keep, d);
  if (st == MIL_OK) st = convert_run_pipeline(mil_model_program(m), o, o->fp32, &keep, d);
  pass_ptrset_free(&keep.names);
  return st;
}

/* Whether the model-interface steps run: an interface was given, or a
 * pipeline runs (use_default_fp16_io is part of every ct.convert). */
static bool with_interface(const mil_convert_options *o) { return o->interface || !o->no_pipeline; }

/* The target the interface's rules see: the conversion's, or the model's. */
static int interface_target(const mil_model *m, const mil_convert_options *o) {
  return o->target ? o->target : mil_model_spec_version(m);
}

static mil_status save(mil_model *m, const mil_convert_options *o, mil_diag *d) {
  if (!o->output_path) return MIL_OK;
  if (ends_with(o->output_path, ".mil"))
    return mil_save_text(mil_model_program(m), o->output_path, o->inline_weights, d);
  if (o->inline_weights)
    return mil_diag_error(d, MIL_ERR_INVALID, "%s: inline_weights applies to .mil output only", o->output_path);
  return mil_model_save(m, o->output_path, d);
}

mil_status mil_convert_model(mil_model *m, const mil_convert_options *opts, bool retarget, mil_diag *d) {
  mil_convert_options dflt;
  memset(&dflt, 0, sizeof dflt);
  const mil_convert_options *o = opts ? opts : &dflt;
  if (!m) return mil_diag_error(d, MIL_ERR_INVALID, "mil_convert_model: no model");
  mil_status st = MIL_OK;
  if (with_interface(o)) st = mil_interface_prepare(m, o->interface, interface_target(m, o), !o->fp32 && !o->no_pipeline, d);
  if (st == MIL_OK && !o->no_pipeline) {
    st = run_pipeline(m, o, d);
    if (st == MIL_OK) st = mil_model_sync_description(m, d);
  }
  (void)mil_program_walk(mil_model_program(m), drop_mark, NULL);
  if (st == MIL_OK && with_interface(o)) st = mil_interface_finish(m, o->interface, d);
  /* the tool's own conversion record (coremltools writes its
   * com.github.apple.coremltools.* keys; these are libmil's) */
  if (st == MIL_OK && !o->no_pipeline &&
      (mil_model_set_metadata(m, "com.libmil.version", mil_version()) != MIL_OK ||
       mil_model_set_metadata(m, "com.libmil.compute_precision", o->fp32 ? "fp32" : "fp16") != MIL_OK))
    st = mil_diag_error(d, MIL_ERR_NOMEM, "out of memory");
  if (st == MIL_OK && retarget && o->target) {
    st = mil_program_retarget(mil_model_program(m), o->target, d);
    if (st == MIL_OK && !o->spec_version) st = mil_model_set_spec_version(m, o->target);
  }
  if (st == MIL_OK && o->spec_version) st = mil_model_set_spec_version(m, o->spec_version);
  if (st == MIL_OK) st = save(m, o, d);
  return st;
}

/* The steps after the import, then the model handed out or freed. */
static mil_status finish(mil_model *m, const mil_convert_options *o, bool retarget, mil_model **out, mil_diag *d) {
  mil_status st = mil_convert_model(m, o, retarget, d);
  if (st != MIL_OK || !out) {
    mil_model_free(m);
    return st;
  }
  *out = m;
  return MIL_OK;
}

static mil_status check_out(const mil_convert_options *o, mil_model **out, mil_diag *d) {
  if (out) *out = NULL;
  if (!out && !o->output_path)
    return mil_diag_error(d, MIL_ERR_INVALID, "mil_convert: neither out nor output_path given");
  return MIL_OK;
}

/* The importer's options; the interface's input shapes follow the explicit
 * ones (*shapes, freed by the caller, holds the combined list). */
static mil_status onnx_options(const mil_convert_options *o, mil_onnx_options *io, iface_shapes *shapes,
                               mil_diag *d) {
  memset(io, 0, sizeof *io);
  io->target = o->target;
  io->nms_max_boxes = o->nms_max_boxes;
  io->n_input_values = o->n_input_values;
  io->input_values = o->input_values;
  io->fp16_range_check = !o->fp32 && !o->no_pipeline && o->n_samples == 0;
  mil_status st = iface_import_shapes(o->interface, o->n_input_shapes, o->input_shapes, shapes);
  if (st != MIL_OK) return mil_diag_error(d, st, "out of memory");
  io->n_input_shapes = shapes->n;
  io->input_shapes = shapes->shapes;
  return MIL_OK;
}

mil_status mil_convert(const char *path, const mil_convert_options *opts, mil_model **out, mil_diag *d) {
  mil_convert_options dflt;
  memset(&dflt, 0, sizeof dflt);
  const mil_convert_options *o = opts ? opts : &dflt;
  mil_status st = check_out(o, out, d);
  if (st != MIL_OK) return st;
  if (!path) return mil_diag_error(d, MIL_ERR_INVALID, "mil_convert: path is NULL");
  mil_model *m = NULL;
  bool onnx = ends_with(path, ".onnx");
  if (onnx) {
    mil_onnx_options io;
    iface_shapes shapes = {0};
    st = onnx_options(o, &io, &shapes, d);
    if (st == MIL_OK) st = mil_onnx_import(path, &io, &m, d);
    iface_shapes_free(&shapes);
  } else {
    if (o->n_input_values)
      return mil_diag_error(d, MIL_ERR_INVALID, "%s: input values apply to ONNX models only", path);
    if (o->n_input_shapes || iface_has_shapes(o->interface))
      return mil_diag_error(d, MIL_ERR_INVALID, "%s: input shapes apply to ONNX models only (a MIL program's input "
                            "shapes are not changed)", path);
    st = mil_model_load(path, &m, d);
  }
  if (st != MIL_OK) return st;
  /* an ONNX program is built for its target; a loaded one is retargeted */
  return finish(m, o, !onnx, out, d);
}

mil_status mil_convert_onnx_buffer(const void *data, size_t len, const char *name, const char *dir,
                                   const mil_convert_options *opts, mil_model **out, mil_diag *d) {
  mil_convert_options dflt;
  memset(&dflt, 0, sizeof dflt);
  const mil_convert_options *o = opts ? opts : &dflt;
  mil_status st = check_out(o, out, d);
  if (st != MIL_OK) return st;
  mil_onnx_options io;
  iface_shapes shapes = {0};
  mil_model *m = NULL;
  st = onnx_options(o, &io, &shapes, d);
  if (st == MIL_OK) st = mil_onnx_import_buffer(data, len, name, dir, &io, &m, d);
  iface_shapes_free(&shapes);
  return st == MIL_OK ? finish(m, o, false, out, d) : st;
}
