/* Helpers of joint compression (iOS18): compressing weights that are
 * already compressed, as coremltools' compression passes do with
 * joint_compression=True (_quantization_passes.py:
 * _get_weight_to_compress_size, the sparse_to_dense restorations). */
#include <stdlib.h>
#include <string.h>

#include "compress/compress_internal.h"

mil_op *cw_only_child(const mil_op *op) {
  mil_op *k[2];
  return cw_children(op->outputs[0], k, 2) == 1 ? k[0] : NULL;
}

int64_t cw_weight_size(const cw_pass *c, const mil_op *op) {
  for (int depth = 0; c->joint && depth < 16; depth++) {
    mil_op *k[1];
    if (cw_children(op->outputs[0], k, 1) < 1 || strncmp(k[0]->type, "constexpr_", 10) != 0) break;
    op = k[0];
  }
  return mil_type_numel(op->outputs[0]->type);
}

mil_value *cw_masked(mil_program *p, const mil_value *src, const mil_value *mask) {
  int64_t n = 0;
  for (int64_t i = 0; i < mask->numel; i++) n += mil_value_get_i64(mask, i) != 0;
  mil_value *v = mil_value_new_tensor(p, src->type->dtype, 1, &n, false, NULL);
  if (!v) return NULL;
  bool fl = mil_dtype_is_float(src->type->dtype);
  for (int64_t i = 0, k = 0; i < mask->numel && i < src->numel; i++)
    if (mil_value_get_i64(mask, i)) {
      if (fl) mil_value_set_f64(v, k++, mil_value_get_f64(src, i));
      else mil_value_set_i64(v, k++, mil_value_get_i64(src, i));
    }
  return v;
}

bool cw_weight_densify(cw_weight *w, const mil_value *mask) {
  const mil_type *t = mask->type;
  if (!t || t->rank > MIL_CFG_MAX_RANK) return false;
  float *d = calloc((size_t)(mask->numel ? mask->numel : 1), sizeof *d);
  if (!d) return false;
  int64_t k = 0;
  for (int64_t i = 0; i < mask->numel; i++)
    if (mil_value_get_i64(mask, i)) {
      if (k >= w->n) {
        free(d);
        return false;
      }
      d[i] = w->w[k++];
    }
  free(w->w);
  w->w = d;
  w->n = mask->numel;
  w->rank = t->rank;
  for (int32_t a = 0; a < t->rank; a++) w->shape[a] = t->dims[a].size;
  return true;
}
