/* Kernel of the "classify" family (coremltools ops/defs/iOS15/classify.py):
 * the classifier head. The label is the class of the largest probability
 * (the first one on ties; NaN never wins), as Core ML's classifier output
 * names it, and the dict maps every class, in the order of `classes`, to
 * its probability as a double. Outputs: a string (or int64) scalar and a
 * dict value; mil_interp_output_dict reads the dict. */
#include "interp/interp_internal.h"

static mil_status k_classify(interp_run *r, mil_infer_ctx *c) {
  const mil_value *p = interp_in(c, "probabilities"), *cls = op_val(c, "classes");
  if (!p) return MIL_ERR_INVALID;
  if (!cls || (cls->kind != MIL_VAL_LIST && cls->kind != MIL_VAL_TENSOR))
    return interp_fail(c, MIL_ERR_INVALID, "input 'classes' has no list value at run time");
  int32_t n = cls->kind == MIL_VAL_LIST ? cls->n : (int32_t)cls->numel;
  if (n != p->numel)
    return interp_fail(c, MIL_ERR_INVALID, "input 'classes' has %d labels but 'probabilities' has %lld values", n,
                       (long long)p->numel);
  if (n == 0) return interp_fail(c, MIL_ERR_INVALID, "input 'classes' is empty: there is no label to predict");
  const mil_value **items = mil_program_alloc(r->prog, (size_t)n * sizeof *items);
  const mil_value **keys = cls->kind == MIL_VAL_LIST ? (const mil_value **)cls->items
                                                     : mil_program_alloc(r->prog, (size_t)n * sizeof *keys);
  if (!items || !keys) return interp_nomem(c);
  int32_t best = -1;
  double best_p = 0;
  for (int32_t k = 0; k < n; k++) {
    double v = mil_value_get_f64(p, k);
    if (v == v && (best < 0 || v > best_p)) best = k, best_p = v;
    if (!(items[k] = mil_value_new_scalar_f64(r->prog, MIL_DT_FP64, v))) return interp_nomem(c);
    if (cls->kind == MIL_VAL_TENSOR) /* the list as MIL text shows it: a rank-1 tensor */
      keys[k] = cls->type->dtype == MIL_DT_STRING ? mil_value_new_string(r->prog, mil_value_get_str(cls, k))
                                                  : mil_value_new_scalar_i64(r->prog, MIL_DT_INT64,
                                                                             mil_value_get_i64(cls, k));
    if (!keys[k]) return interp_nomem(c);
  }
  if (best < 0) best = 0; /* every probability is NaN */
  const mil_value *label = keys[best];
  if (!label || label->kind != MIL_VAL_TENSOR || !label->type)
    return interp_fail(c, MIL_ERR_INVALID, "class %d of input 'classes' is not a scalar", best);
  c->val[0] = label;
  if (c->n_out > 1) {
    c->val[1] = mil_value_new_dict(r->prog, c->out[1], n, keys, items);
    if (!c->val[1]) return interp_nomem(c);
  }
  return MIL_OK;
}

const interp_kernel interp_kernels_classify[] = {
    {"classify", k_classify, 0},
};
INTERP_FAMILY_COUNT(classify);
