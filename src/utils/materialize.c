/* materialize_dynamic_shape_mlmodel (coremltools/models/utils.py): fixed-
 * shape functions of a flexible-shape model, sharing its weights.
 *
 *   mil materialize dyn.mlpackage -o fixed.mlpackage \
 *       --function batch_1:x=1,64 --function batch_4:x=4,64
 *
 * As coremltools: the DEFAULT pipeline with
 * common::materialize_symbolic_shape_program inserted first (its
 * function_name_to_materialization_map and source_function_name set), then
 * export as a multifunction model (specification version >= 9) unless the
 * result is the lone "main" function materialized in place. Equal consts of
 * the functions are written once. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "mil/passes.h"
#include "utils/utils_internal.h"

static mil_status check_tensor_features(mil_model *m, mil_diag *d) {
  const Coreml__ModelDescription *md = m->desc;
  if (!md) return MIL_OK;
  for (size_t i = 0; i < md->n_input; i++)
    if (!md->input[i]->type || md->input[i]->type->type_case != COREML__FEATURE_TYPE__TYPE_MULTI_ARRAY_TYPE)
      return mil_diag_error(d, MIL_ERR_UNSUPPORTED, "%s: input '%s': Only tensor input is handled yet",
                            mil_model_path(m), md->input[i]->name);
  for (size_t i = 0; i < md->n_output; i++)
    if (!md->output[i]->type || md->output[i]->type->type_case != COREML__FEATURE_TYPE__TYPE_MULTI_ARRAY_TYPE)
      return mil_diag_error(d, MIL_ERR_UNSUPPORTED, "%s: output '%s': Only tensor output is handled yet",
                            mil_model_path(m), md->output[i]->name);
  return MIL_OK;
}

mil_status mil_utils_materialize(mil_model *m, const char *map_json, const char *dest_path,
                                 const char *source_function, mil_diag *d) {
  if (!source_function) source_function = "main";
  if (!map_json || !dest_path)
    return mil_diag_error(d, MIL_ERR_INVALID, "materialize: the materialization map and destination must be given");
  if (!m->prog) return mil_diag_error(d, MIL_ERR_INVALID, "%s: the model has no program", mil_model_path(m));
  mil_status st = check_tensor_features(m, d);
  if (st != MIL_OK) return st;
  cJSON *root = cJSON_Parse(map_json);
  if (!root || !cJSON_IsObject(root) || !root->child) {
    cJSON_Delete(root);
    return mil_diag_error(d, MIL_ERR_INVALID, "materialize: function_name_to_materialization_map must be a non-empty "
                          "JSON object {\"function\": {\"input\": [shape]}}, got '%s'", map_json);
  }
  int n_map = cJSON_GetArraySize(root);
  bool only_source = n_map == 1 && !strcmp(root->child->string, source_function);
  cJSON_Delete(root);

  mil_pipeline *pl = NULL;
  const char *pass = "common::materialize_symbolic_shape_program";
  if ((st = mil_pipeline_new("default", &pl, d)) != MIL_OK) return st;
  if ((st = mil_pipeline_insert(pl, 0, pass, d)) == MIL_OK &&
      (st = mil_pipeline_set_option(pl, pass, "function_name_to_materialization_map", map_json, d)) == MIL_OK &&
      (st = mil_pipeline_set_option(pl, pass, "source_function_name", source_function, d)) == MIL_OK) {
    mil_pipeline_run_options ro;
    memset(&ro, 0, sizeof ro);
    mil_pipeline_report rep;
    memset(&rep, 0, sizeof rep);
    st = mil_pipeline_run(pl, m->prog, &ro, &rep, d);
    mil_pipeline_report_free(&rep);
  }
  mil_pipeline_free(pl);
  if (st != MIL_OK) return st;

  mil_program *p = m->prog;
  bool multi = !(p->n_functions == 1 && only_source && !strcmp(source_function, "main"));
  if (multi && m->spec_version < IO_SPEC_MULTI_FUNCTION) m->spec_version = IO_SPEC_MULTI_FUNCTION;
  if (multi) {
    utils_set_opsets(p, m->spec_version);
    /* the description is synthesized afresh in the multi-function form,
     * as coremltools' exporter does (metadata kept) */
    Coreml__ModelDescription *nd = io_pb_new(&coreml__model_description__descriptor);
    if (!nd) return mil_diag_error(d, MIL_ERR_NOMEM, "out of memory");
    if (m->desc && m->desc->metadata && !(nd->metadata = io_pb_clone(m->desc->metadata))) {
      io_pb_free(nd);
      return mil_diag_error(d, MIL_ERR_NOMEM, "out of memory");
    }
    const char *dflt = mil_program_find_function(p, "main") ? "main" : p->functions[0]->name;
    if (!utils_set_string(&nd->defaultfunctionname, dflt)) {
      io_pb_free(nd);
      return mil_diag_error(d, MIL_ERR_NOMEM, "out of memory");
    }
    io_pb_free(m->desc);
    m->desc = nd;
    utils_desc_changed(m);
  }
  mil_utils_share_consts_across_functions(p);
  return mil_model_save(m, dest_path, d);
}
