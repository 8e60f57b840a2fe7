/* The classifier head ct.convert(classifier_config=...) adds after the
 * pipeline: a classify op at the end of main, fed the probabilities (cast
 * to fp32 as "<var>_cast_to_fp32" when they are not), whose outputs
 * "<predicted_feature_name>" and "<predicted_feature_name>_probs" come
 * first among the outputs, the probabilities leaving them.
 *
 * Mirrors coremltools/converters/mil/backend/mil/load.py (_add_classify_op)
 * and converters/mil/backend/backend_helper.py
 * (_get_probability_var_for_classifier).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "convert/interface_internal.h"

/* The probabilities: the var named by the config, else the output of the
 * last non-const op with one output. */
static mil_var *probability_var(mil_block *b, const char *want) {
  for (mil_op *op = want ? b->first : b->last; op; op = want ? op->next : op->prev) {
    if (want) {
      for (int32_t i = 0; i < op->n_outputs; i++)
        if (!strcmp(op->outputs[i]->name, want)) return op->outputs[i];
    } else if (!mil_op_is_const(op) && op->n_outputs == 1) {
      return op->outputs[0];
    }
  }
  return NULL;
}

static mil_value *classes_value(mil_program *p, const mil_classifier_config *cc) {
  bool ints = cc->int_labels != NULL;
  const mil_type *elem = mil_type_scalar(p, ints ? MIL_DT_INT64 : MIL_DT_STRING);
  const mil_type *lt = elem ? mil_type_list(p, elem, (mil_dim){.size = cc->n_labels}) : NULL;
  mil_value **items = calloc((size_t)cc->n_labels, sizeof *items);
  mil_value *v = NULL;
  bool ok = lt && items;
  for (int32_t i = 0; ok && i < cc->n_labels; i++) {
    items[i] = ints ? mil_value_new_scalar_i64(p, MIL_DT_INT64, cc->int_labels[i])
                    : mil_value_new_string(p, cc->labels[i] ? cc->labels[i] : "");
    ok = items[i] != NULL;
  }
  if (ok) v = mil_value_new_list(p, lt, cc->n_labels, (const mil_value *const *)items);
  free(items);
  return v;
}

static char *suffixed(const char *name, const char *suffix) {
  size_t n = strlen(name) + strlen(suffix) + 1;
  char *s = malloc(n);
  if (s) snprintf(s, n, "%s%s", name, suffix);
  return s;
}

mil_status iface_add_classifier(mil_program *p, mil_function *f, const mil_classifier_config *cc, const char **label,
                                const char **probs, mil_diag *d) {
  mil_block *b = mil_function_body(f);
  if (cc->n_labels <= 0 || (!cc->labels && !cc->int_labels))
    return mil_diag_error(d, MIL_ERR_INVALID, "classifier: no class labels were given");
  const char *want = cc->predicted_probabilities_output && cc->predicted_probabilities_output[0]
                         ? cc->predicted_probabilities_output
                         : NULL;
  mil_var *prob = probability_var(b, want);
  if (!prob) {
    if (want)
      return mil_diag_error(d, MIL_ERR_INVALID, "classifier: predicted_probabilities_output '%s' does not exist in "
                            "the program", want);
    return mil_diag_error(d, MIL_ERR_INVALID, "classifier: no op gives the probabilities (the program has no "
                          "non-const op with one output)");
  }
  const mil_type *pt = prob->type;
  int64_t n = pt && pt->kind == MIL_TYPE_TENSOR ? mil_type_numel(pt) : -1;
  if (n >= 0 && n != cc->n_labels)
    return mil_diag_error(d, MIL_ERR_INVALID, "classifier: %d class labels were given; the probabilities '%s' have "
                          "%lld values", (int)cc->n_labels, prob->name, (long long)n);
  pass_bld c = {.p = p, .d = d, .pass = "classifier"};
  mil_status st = MIL_OK;
  mil_var *orig = prob;
  if (pass_bld_dtype(prob) != MIL_DT_FP32) {
    char *nm = suffixed(prob->name, "_cast_to_fp32");
    pass_barg a[] = {PASS_BV("x", prob), PASS_BK("dtype", pass_bld_str(p, "fp32"))};
    prob = nm ? pass_bld_var(&c, b, NULL, "cast", nm, 2, a, &st) : NULL;
    if (!nm) st = mil_diag_error(d, MIL_ERR_NOMEM, "out of memory");
    free(nm);
  }
  mil_value *classes = prob ? classes_value(p, cc) : NULL;
  if (prob && !classes) st = mil_diag_error(d, MIL_ERR_NOMEM, "out of memory");
  mil_op *cls = NULL;
  if (classes) {
    pass_barg a[] = {PASS_BV("probabilities", prob), PASS_BK("classes", classes)};
    cls = pass_bld_op(&c, b, NULL, "classify", NULL, 2, a, &st);
  }
  pass_bld_free(&c);
  if (!cls) return st != MIL_OK ? st : MIL_ERR_TYPE;
  const char *pf = cc->predicted_feature_name && cc->predicted_feature_name[0] ? cc->predicted_feature_name
                                                                                : "classLabel";
  char *pp = suffixed(pf, "_probs");
  const char *n0 = mil_program_intern(p, pf, (size_t)-1), *n1 = pp ? mil_program_intern(p, pp, (size_t)-1) : NULL;
  free(pp);
  if (!n0 || !n1) return mil_diag_error(d, MIL_ERR_NOMEM, "out of memory");
  cls->outputs[0]->name = n0;
  cls->outputs[1]->name = n1;
  /* outputs: label, probabilities, then the others but the probabilities */
  mil_var **outs = calloc((size_t)b->n_outputs + 2, sizeof *outs);
  if (!outs) return mil_diag_error(d, MIL_ERR_NOMEM, "out of memory");
  int32_t k = 0;
  outs[k++] = cls->outputs[0];
  outs[k++] = cls->outputs[1];
  for (int32_t i = 0; i < b->n_outputs; i++)
    if (b->outputs[i].var != orig) outs[k++] = b->outputs[i].var;
  st = mil_block_set_outputs(b, k, outs);
  free(outs);
  *label = n0;
  *probs = n1;
  return st;
}
