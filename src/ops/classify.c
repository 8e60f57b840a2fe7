/* Op family "classify" (coremltools ops/defs/iOS15/classify.py): the
 * classifier head of a Core ML classifier model. Given class probabilities
 * and the class labels (a const list of strings or int64), it produces the
 * top label and a dict label -> probability.
 *
 *   %label: (string)(Scalar), %probs: dict = classify(probabilities=%p, classes=["cat", "dog"], name="c")
 *
 * coremltools prints the list of classes like a tensor literal, so MIL text
 * read back holds a rank-1 string (or int64) tensor there: it is accepted
 * as the list it stands for.
 */
#include "ops/ops_internal.h"

static const mil_input_spec k_classify_in[] = {
    IN_SPEC("probabilities", MIL_IK_TENSOR, MIL_DTB(MIL_DT_FP32), NULL, 0, NULL),
    IN_SPEC("classes", MIL_IK_LIST | MIL_IK_TENSOR, 0, NULL, MIL_IF_CONST, NULL),
};

static mil_status infer_classify(mil_infer_ctx *c) {
  const mil_type *cls = op_type(c, "classes"), *p = op_type(c, "probabilities");
  bool as_tensor = cls && cls->kind == MIL_TYPE_TENSOR && cls->rank == 1; /* the list as MIL text shows it */
  if (!cls || (cls->kind != MIL_TYPE_LIST && !as_tensor))
    return op_fail(c, "input 'classes' must be a list, got %s", op_tstr(c, cls));
  if (p->dtype != MIL_DT_FP32) return op_fail(c, "input 'probabilities' must be fp32, got %s", op_tstr(c, p));
  const mil_type *e = as_tensor ? NULL : cls->elem;
  mil_dtype kt = as_tensor ? cls->dtype : e && e->kind == MIL_TYPE_TENSOR && e->rank == 0 ? e->dtype : MIL_DT_UNUSED;
  if (kt != MIL_DT_STRING && kt != MIL_DT_INT64 && !(as_tensor && kt == MIL_DT_INT32))
    return op_fail(c, "the elements of input 'classes' must be str or int64, got %s", op_tstr(c, cls));
  if (kt == MIL_DT_INT32) kt = MIL_DT_INT64; /* integer labels read back from text */
  int64_t n = mil_type_numel(p);
  const mil_value *v = op_val(c, "classes");
  int64_t nv = !v ? -1 : v->kind == MIL_VAL_LIST ? v->n : v->kind == MIL_VAL_TENSOR ? v->numel : -1;
  if (n >= 0 && nv >= 0 && nv != n)
    return op_fail(c, "input 'classes' has %lld labels but 'probabilities' %s has %lld values", (long long)nv,
                   op_tstr(c, p), (long long)n);
  const mil_type *key = op_scalar(c, kt);
  op_set_out(c, 0, key);
  if (c->n_out > 1) op_set_out(c, 1, mil_type_dict(c->prog, key, op_scalar(c, MIL_DT_FP64)));
  return MIL_OK;
}

const mil_op_def op_defs_classify[] = {
    {"classify", MIL_IOS13, "classify", k_classify_in, 2, 2, infer_classify, NULL, NULL,
     "top class label and the label -> probability dict of a classifier"},
};
OP_FAMILY_COUNT(classify);
