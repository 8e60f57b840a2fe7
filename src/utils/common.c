/* Shared helpers of the model utilities: editing the description protobuf
 * of a model, opsets, weight-file references. */
#include <stdlib.h>
#include <string.h>

#include "mil/ops.h"
#include "utils/utils_internal.h"

void utils_desc_changed(mil_model *m) {
  io_desc_view_free(m->view);
  m->view = NULL;
}

bool utils_set_string(char **field, const char *s) {
  char *n = io_model_strdup(s ? s : "");
  if (!n) return false;
  if (*field && *field != protobuf_c_empty_string) free(*field);
  *field = n;
  return true;
}

bool utils_is_identifier(const char *s) {
  if (!s || !*s) return false;
  if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || *s == '_')) return false;
  for (const char *c = s + 1; *c; c++)
    if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') || *c == '_'))
      return false;
  return true;
}

void utils_set_opsets(mil_program *p, int spec) {
  const char *name = mil_opset_for_spec_version(spec);
  if (!name) return;
  const char *opset = mil_program_intern(p, name, (size_t)-1);
  if (!opset) return;
  for (int32_t i = 0; i < p->n_functions; i++) {
    mil_function *f = p->functions[i];
    for (int32_t s = 0; s < f->n_specs; s++)
      if (f->specs[s].opset == f->opset || !strcmp(f->specs[s].opset, f->opset)) f->specs[s].opset = opset;
    f->opset = opset;
  }
}

mil_status utils_adopt_weights(mil_model *m, const mil_model *src, mil_diag *d) {
  if (!src->n_weights) return MIL_OK;
  mil_blob_file **w = realloc(m->weights, (size_t)(m->n_weights + src->n_weights) * sizeof *w);
  if (!w) return mil_diag_error(d, MIL_ERR_NOMEM, "out of memory");
  m->weights = w;
  for (int32_t i = 0; i < src->n_weights; i++) m->weights[m->n_weights++] = mil_blob_file_retain(src->weights[i]);
  return MIL_OK;
}

mil_var *utils_cast(mil_program *p, mil_block *b, mil_op *before, mil_var *x, mil_dtype dt, const char *op_name,
                    const char *const_name, const char *var_name) {
  mil_value *sv = mil_value_new_string(p, dt == MIL_DT_FP16 ? "fp16" : "fp32");
  mil_op *k = sv ? mil_const_new(p, const_name, sv) : NULL;
  mil_op *c = mil_op_new(p, "cast", op_name);
  if (!k || !c || !mil_op_add_input(c, "x", x) || !mil_op_add_input(c, "dtype", k->outputs[0])) return NULL;
  const mil_type *t = x->type->is_scalar ? mil_type_scalar(p, dt) : mil_type_tensor(p, dt, x->type->rank, x->type->dims);
  mil_var *out = t ? mil_op_add_output(c, var_name, t) : NULL;
  if (!out) return NULL;
  if (before) {
    mil_block_insert_before(before, k);
    mil_block_insert_before(before, c);
  } else {
    mil_block_append(b, k);
    mil_block_append(b, c);
  }
  return out;
}
