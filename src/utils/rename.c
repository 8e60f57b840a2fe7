/* rename_feature (coremltools/models/utils.py) and the description edits
 * (feature descriptions, metadata) of `mil edit`.
 *
 * A feature is renamed in the description (inputs, outputs, the
 * predicted-feature fields; the top-level ones and those of every function)
 * and in the program: the function input or the var of that name, which
 * every use and the block output refer to. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "utils/utils_internal.h"

static bool rename_in(Coreml__FeatureDescription **f, size_t n, const char *cur, const char *nw, bool *oom) {
  bool changed = false;
  for (size_t i = 0; i < n; i++)
    if (f[i]->name && !strcmp(f[i]->name, cur)) {
      if (!utils_set_string(&f[i]->name, nw)) *oom = true;
      changed = true;
    }
  return changed;
}

static void rename_predicted(char **field, const char *cur, const char *nw, bool *oom) {
  if (*field && !strcmp(*field, cur) && !utils_set_string(field, nw)) *oom = true;
}

/* The var of function f called `name`: an input or a top-level op output. */
static mil_var *find_var(mil_function *f, const char *name) {
  for (int32_t i = 0; i < f->n_inputs; i++)
    if (!strcmp(f->inputs[i]->name, name)) return f->inputs[i];
  for (int32_t s = 0; s < f->n_specs; s++)
    for (mil_op *op = f->specs[s].block->first; op; op = op->next)
      for (int32_t k = 0; k < op->n_outputs; k++)
        if (op->outputs[k]->name && !strcmp(op->outputs[k]->name, name)) return op->outputs[k];
  return NULL;
}

mil_status mil_utils_rename_feature(mil_model *m, const char *cur, const char *nw, bool rename_inputs,
                                    bool rename_outputs, mil_diag *d) {
  if (!cur || !nw) return mil_diag_error(d, MIL_ERR_INVALID, "rename_feature: current and new names must be given");
  if (!rename_inputs && !rename_outputs) return MIL_OK;
  if (!strcmp(cur, nw)) return MIL_OK;
  if (!utils_is_identifier(nw))
    return mil_diag_error(d, MIL_ERR_INVALID, "Input/output names for ML Program must be of the format "
                          "[a-zA-Z_][a-zA-Z0-9_]*. That is, it must start with a letter and only contain numerals, "
                          "underscore or letters. Provided feature name, \"%s\" does not satisfy these requirements.",
                          nw);
  Coreml__ModelDescription *md = m->desc;
  if (!md) {
    mil_status st = mil_model_sync_description(m, d);
    if (st != MIL_OK) return st;
    md = m->desc;
  }
  /* the program first (it may refuse), then the description */
  mil_program *p = m->prog;
  for (int32_t i = 0; p && i < p->n_functions; i++) {
    mil_function *f = p->functions[i];
    mil_var *v = find_var(f, cur);
    if (!v) continue;
    bool is_input = v->func_input_of != NULL;
    if ((is_input && !rename_inputs) || (!is_input && !rename_outputs)) continue;
    if (!is_input && !mil_var_is_block_output(v)) continue;
    if (find_var(f, nw))
      return mil_diag_error(d, MIL_ERR_INVALID, "%s: function '%s': cannot rename '%s' to '%s': the function already "
                            "has a var named '%s'", mil_model_path(m), f->name, cur, nw, nw);
  }
  bool changed = false, oom = false;
  for (int32_t i = 0; p && i < p->n_functions; i++) {
    mil_function *f = p->functions[i];
    mil_var *v = find_var(f, cur);
    if (!v) continue;
    bool is_input = v->func_input_of != NULL;
    if ((is_input && !rename_inputs) || (!is_input && (!rename_outputs || !mil_var_is_block_output(v)))) continue;
    const char *name = mil_program_intern(p, nw, (size_t)-1);
    if (!name) return mil_diag_error(d, MIL_ERR_NOMEM, "out of memory");
    v->name = name;
    changed = true;
  }
  if (rename_inputs) {
    changed |= rename_in(md->input, md->n_input, cur, nw, &oom);
    for (size_t i = 0; i < md->n_functions; i++)
      changed |= rename_in(md->functions[i]->input, md->functions[i]->n_input, cur, nw, &oom);
  }
  if (rename_outputs) {
    changed |= rename_in(md->output, md->n_output, cur, nw, &oom);
    rename_predicted(&md->predictedfeaturename, cur, nw, &oom);
    rename_predicted(&md->predictedprobabilitiesname, cur, nw, &oom);
    for (size_t i = 0; i < md->n_functions; i++) {
      Coreml__FunctionDescription *fd = md->functions[i];
      changed |= rename_in(fd->output, fd->n_output, cur, nw, &oom);
      rename_predicted(&fd->predictedfeaturename, cur, nw, &oom);
      rename_predicted(&fd->predictedprobabilitiesname, cur, nw, &oom);
    }
  }
  (void)changed;
  utils_desc_changed(m);
  if (oom) return mil_diag_error(d, MIL_ERR_NOMEM, "out of memory");
  return MIL_OK;
}

static bool describe_in(Coreml__FeatureDescription **f, size_t n, const char *name, const char *text, bool *oom) {
  bool found = false;
  for (size_t i = 0; i < n; i++)
    if (f[i]->name && !strcmp(f[i]->name, name)) {
      if (!utils_set_string(&f[i]->shortdescription, text)) *oom = true;
      found = true;
    }
  return found;
}

mil_status mil_utils_set_feature_description(mil_model *m, const char *function, const char *name, const char *text,
                                             mil_diag *d) {
  if (!name) return mil_diag_error(d, MIL_ERR_INVALID, "set_feature_description: no feature name");
  if (!m->desc) {
    mil_status st = mil_model_sync_description(m, d);
    if (st != MIL_OK) return st;
  }
  Coreml__ModelDescription *md = m->desc;
  bool found = false, oom = false;
  if (!function || md->n_functions == 0) {
    found |= describe_in(md->input, md->n_input, name, text, &oom);
    found |= describe_in(md->output, md->n_output, name, text, &oom);
    found |= describe_in(md->state, md->n_state, name, text, &oom);
  }
  for (size_t i = 0; i < md->n_functions; i++) {
    Coreml__FunctionDescription *fd = md->functions[i];
    if (function && strcmp(fd->name, function)) continue;
    found |= describe_in(fd->input, fd->n_input, name, text, &oom);
    found |= describe_in(fd->output, fd->n_output, name, text, &oom);
    found |= describe_in(fd->state, fd->n_state, name, text, &oom);
  }
  utils_desc_changed(m);
  if (oom) return mil_diag_error(d, MIL_ERR_NOMEM, "out of memory");
  if (!found)
    return mil_diag_error(d, MIL_ERR_NOT_FOUND, "%s: no input, output or state named '%s'%s%s", mil_model_path(m), name,
                          function ? " in function " : "", function ? function : "");
  return MIL_OK;
}

mil_status mil_utils_set_model_metadata(mil_model *m, const char *field, const char *value, mil_diag *d) {
  static const char *const names[] = {"short_description", "version", "author", "license"};
  int which = -1;
  for (int i = 0; i < 4; i++)
    if (field && !strcmp(field, names[i])) which = i;
  if (which < 0) {
    if (!field) return mil_diag_error(d, MIL_ERR_INVALID, "set_model_metadata: no field name");
    if (mil_model_set_metadata(m, field, value) != MIL_OK) return mil_diag_error(d, MIL_ERR_NOMEM, "out of memory");
    return MIL_OK;
  }
  if (!m->desc) {
    mil_status st = mil_model_sync_description(m, d);
    if (st != MIL_OK) return st;
  }
  Coreml__ModelDescription *md = m->desc;
  if (!md->metadata && !(md->metadata = io_pb_new(&coreml__metadata__descriptor)))
    return mil_diag_error(d, MIL_ERR_NOMEM, "out of memory");
  Coreml__Metadata *meta = md->metadata;
  char **f = which == 0 ? &meta->shortdescription : which == 1 ? &meta->versionstring
             : which == 2 ? &meta->author : &meta->license;
  utils_desc_changed(m);
  if (!utils_set_string(f, value)) return mil_diag_error(d, MIL_ERR_NOMEM, "out of memory");
  return MIL_OK;
}
