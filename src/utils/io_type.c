/* change_input_output_tensor_type (coremltools/models/utils.py): switch
 * multiArray inputs and outputs between fp32 and fp16.
 *
 *   input x (fp32 -> fp16):   %x: fp16;  %x_to_fp32 = cast(x=%x, dtype="fp32")
 *                             before the first op, taking over every use of %x
 *   output y (fp32 -> fp16):  %y_to_fp16 = cast(x=%y, dtype="fp16") appended,
 *                             replacing %y as the block output; the output
 *                             feature is renamed y_to_fp16
 *
 * A function changed is raised to opset CoreML6 (iOS16) when older, and the
 * specification version to the highest opset's. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mil/ops.h"
#include "utils/utils_internal.h"

typedef Coreml__ArrayFeatureType__ArrayDataType array_dt;

static bool selected(const char *name, const char *const *names, int32_t n, bool null_means_all) {
  if (!names) return null_means_all;
  for (int32_t i = 0; i < n; i++)
    if (names[i] && (!strcmp(names[i], "*") || !strcmp(names[i], name))) return true;
  return false;
}

static bool eligible(const Coreml__FeatureDescription *f, array_dt from) {
  return f->type && f->type->type_case == COREML__FEATURE_TYPE__TYPE_MULTI_ARRAY_TYPE &&
         f->type->multiarraytype && f->type->multiarraytype->datatype == from;
}

static const char *dt_str(mil_dtype dt) { return dt == MIL_DT_FP16 ? "fp16" : "fp32"; }

/* Raises f to CoreML6 (iOS16) when older. */
static void raise_opset(mil_program *p, mil_function *f) {
  int v = mil_spec_version_for_opset(f->opset);
  if (v >= MIL_IOS16) return;
  const char *o = mil_program_intern(p, mil_opset_for_spec_version(MIL_IOS16), (size_t)-1);
  if (!o) return;
  for (int32_t s = 0; s < f->n_specs; s++)
    if (!strcmp(f->specs[s].opset, f->opset)) f->specs[s].opset = o;
  f->opset = o;
}

/* %<var_name> = cast(x=x, dtype=<dt>), with its dtype const; placed before
 * `before` (NULL: at the end of b). */
static mil_var *make_cast(mil_program *p, mil_block *b, mil_op *before, mil_var *x, mil_dtype dt,
                          const char *var_name) {
  char cname[640], opname[64]; /* room for a 512-byte name and the suffix */
  snprintf(cname, sizeof cname, "%s_dtype_0", var_name);
  snprintf(opname, sizeof opname, "cast_%lld", (long long)mil_program_name_count_next(p, "cast"));
  return utils_cast(p, b, before, x, dt, opname, cname, var_name);
}

static mil_var *function_input(mil_function *f, const char *name) {
  for (int32_t i = 0; i < f->n_inputs; i++)
    if (!strcmp(f->inputs[i]->name, name)) return f->inputs[i];
  return NULL;
}

static int32_t block_output(mil_block *b, const char *name) {
  for (int32_t i = 0; i < b->n_outputs; i++)
    if (b->outputs[i].var && !strcmp(b->outputs[i].var->name, name)) return i;
  return -1;
}

/* Changes the features `in` / `out` of function f. */
static mil_status change_function(mil_model *m, mil_function *f, Coreml__FeatureDescription **in, size_t n_in,
                                  Coreml__FeatureDescription **out, size_t n_out, mil_dtype from, mil_dtype to,
                                  const char *const *inputs, int32_t n_inputs, const char *const *outputs,
                                  int32_t n_outputs, mil_diag *d) {
  mil_program *p = m->prog;
  array_dt afrom = from == MIL_DT_FP16 ? COREML__ARRAY_FEATURE_TYPE__ARRAY_DATA_TYPE__FLOAT16
                                       : COREML__ARRAY_FEATURE_TYPE__ARRAY_DATA_TYPE__FLOAT32;
  array_dt ato = to == MIL_DT_FP16 ? COREML__ARRAY_FEATURE_TYPE__ARRAY_DATA_TYPE__FLOAT16
                                   : COREML__ARRAY_FEATURE_TYPE__ARRAY_DATA_TYPE__FLOAT32;
  mil_block *b = mil_function_body(f);
  char name[512];
  for (size_t i = 0; i < n_in; i++) {
    Coreml__FeatureDescription *fd = in[i];
    if (!selected(fd->name, inputs, n_inputs, false) || !eligible(fd, afrom)) continue;
    mil_var *x = function_input(f, fd->name);
    if (!x || !x->type || x->type->dtype != from) continue;
    raise_opset(p, f);
    snprintf(name, sizeof name, "%s_to_%s", fd->name, dt_str(from));
    mil_op *first = b->first;
    mil_var *c = make_cast(p, b, first, x, from, name);
    if (!c) return mil_diag_error(d, MIL_ERR_NOMEM, "out of memory");
    mil_var_replace_uses_after(x, c, c->op);
    const mil_type *t = x->type->is_scalar ? mil_type_scalar(p, to) : mil_type_tensor(p, to, x->type->rank, x->type->dims);
    if (!t) return mil_diag_error(d, MIL_ERR_NOMEM, "out of memory");
    x->type = t;
    fd->type->multiarraytype->datatype = ato;
  }
  for (size_t i = 0; i < n_out; i++) {
    Coreml__FeatureDescription *fd = out[i];
    if (!selected(fd->name, outputs, n_outputs, true) || !eligible(fd, afrom)) continue;
    int32_t k = block_output(b, fd->name);
    if (k < 0 || !b->outputs[k].var->type || b->outputs[k].var->type->dtype != from) continue;
    raise_opset(p, f);
    mil_var *y = b->outputs[k].var;
    snprintf(name, sizeof name, "%s_to_%s", fd->name, dt_str(to));
    mil_var *c = make_cast(p, b, NULL, y, to, name);
    if (!c) return mil_diag_error(d, MIL_ERR_NOMEM, "out of memory");
    mil_block_set_output(b, k, c);
    if (!utils_set_string(&fd->name, name)) return mil_diag_error(d, MIL_ERR_NOMEM, "out of memory");
    fd->type->multiarraytype->datatype = ato;
  }
  return MIL_OK;
}

mil_status mil_utils_change_io_type(mil_model *m, mil_dtype from, mil_dtype to, const char *const *functions,
                                    int32_t n_functions, const char *const *inputs, int32_t n_inputs,
                                    const char *const *outputs, int32_t n_outputs, mil_diag *d) {
  if (from != MIL_DT_FP32 && from != MIL_DT_FP16)
    return mil_diag_error(d, MIL_ERR_INVALID, "not supported from_type: must be FLOAT32 or FLOAT16 (fp32 or fp16)");
  if (to != MIL_DT_FP32 && to != MIL_DT_FP16)
    return mil_diag_error(d, MIL_ERR_INVALID, "not supported to_type: must be FLOAT32 or FLOAT16 (fp32 or fp16)");
  mil_program *p = m->prog;
  if (!p) return mil_diag_error(d, MIL_ERR_INVALID, "%s: the model has no program", mil_model_path(m));
  if (from == to) return MIL_OK;
  if (!m->desc) {
    mil_status st = mil_model_sync_description(m, d);
    if (st != MIL_OK) return st;
  }
  Coreml__ModelDescription *md = m->desc;
  const char *dflt[1] = {"main"};
  if (!functions || n_functions <= 0) {
    functions = dflt;
    n_functions = 1;
    if (!mil_program_find_function(p, "main") && md->defaultfunctionname && md->defaultfunctionname[0])
      dflt[0] = md->defaultfunctionname;
  }
  for (int32_t i = 0; i < n_functions; i++)
    if (!functions[i] || !mil_program_find_function(p, functions[i]))
      return mil_diag_error(d, MIL_ERR_INVALID, "%s: function '%s' not defined in the model", mil_model_path(m),
                            functions[i] ? functions[i] : "(null)");
  mil_status st = MIL_OK;
  for (int32_t i = 0; i < n_functions && st == MIL_OK; i++) {
    mil_function *f = mil_program_find_function(p, functions[i]);
    Coreml__FunctionDescription *fd = NULL;
    for (size_t k = 0; k < md->n_functions; k++)
      if (!strcmp(md->functions[k]->name, f->name)) fd = md->functions[k];
    if (fd)
      st = change_function(m, f, fd->input, fd->n_input, fd->output, fd->n_output, from, to, inputs, n_inputs, outputs,
                           n_outputs, d);
    else if (md->n_functions == 0)
      st = change_function(m, f, md->input, md->n_input, md->output, md->n_output, from, to, inputs, n_inputs, outputs,
                           n_outputs, d);
  }
  utils_desc_changed(m);
  if (st != MIL_OK) return st;
  /* coremltools: specification_version = the highest function opset */
  int spec = m->spec_version;
  for (int32_t i = 0; i < p->n_functions; i++) {
    int v = mil_spec_version_for_opset(p->functions[i]->opset);
    if (v > spec) spec = v;
  }
  m->spec_version = spec;
  return MIL_OK;
}
