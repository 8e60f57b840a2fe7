/* Corpus checks of the op families conv, pool, linear, normalization,
 * image_resizing, recurrent and transformers: every op of these types in
 * the pass corpus's programs (input and expected sections) must infer the
 * output types coremltools recorded (propagated symbols by name), and ops
 * coremltools folded ('*') must fold here to the same values. Prints
 * per-op-type counts; "skipped: corpus not found" without the corpus. */
#include "corpus_util.h"
#include "shared_skip.h"
#include "ops_b_builder.h"

static const char *const k_types[] = {
    "conv", "conv_quantized", "conv_transpose", "avg_pool", "l2_pool", "max_pool", "einsum", "linear", "matmul",
    "batch_norm", "instance_norm", "l2_norm", "layer_norm", "local_response_norm", "upsample_nearest_neighbor",
    "resize_nearest_neighbor", "upsample_bilinear", "resize_bilinear", "crop_resize", "crop", "affine", "resample",
    "resize", "gru", "lstm", "rnn", "scaled_dot_product_attention", NULL};

static int type_index(const char *type) {
  for (int i = 0; k_types[i]; i++)
    if (strcmp(k_types[i], type) == 0) return i;
  return -1;
}

typedef struct corpus_stats {
  const char *path; /* case being read */
  bool verbose;     /* OPS_B_VERBOSE set: print every failure */
  int pass[32], fail[32];
  char first_err[32][300];
} corpus_stats;

static bool input_has_symbol(const mil_op *o, const char *sym) {
  for (int32_t i = 0; i < o->n_inputs; i++)
    for (int32_t j = 0; j < o->inputs[i].n_args; j++) {
      const mil_var *v = o->inputs[i].args[j].use.var;
      if (!v || !v->type || v->type->kind != MIL_TYPE_TENSOR) continue;
      for (int32_t r = 0; r < v->type->rank; r++)
        if (v->type->dims[r].sym && strcmp(v->type->dims[r].sym, sym) == 0) return true;
    }
  return false;
}

static int count_ops(mil_op *o, void *ud) {
  corpus_stats *s = ud;
  int i = type_index(o->type);
  if (i < 0 || mil_op_is_const(o)) return 0;
  mil_diag d = {0};
  const mil_type *types[16];
  const mil_value *vals[16];
  if (o->n_outputs > 16) return 0;
  bool good = mil_op_infer_types(o, types, vals, &d) == MIL_OK;
  for (int32_t k = 0; good && k < o->n_outputs; k++) {
    const mil_type *want = o->outputs[k]->type, *got = types[k];
    if (!want || !got || want->rank != got->rank || want->dtype != got->dtype) good = false;
    for (int32_t r = 0; good && r < want->rank; r++) {
      if (got->dims[r].size >= 0 ? want->dims[r].size != got->dims[r].size : want->dims[r].size >= 0) good = false;
      /* a symbol taken over from an input must keep its name */
      if (good && got->dims[r].sym && input_has_symbol(o, got->dims[r].sym) &&
          (!want->dims[r].sym || strcmp(want->dims[r].sym, got->dims[r].sym) != 0))
        good = false;
    }
    if (!good && !s->first_err[i][0]) {
      char a[128], b[128];
      snprintf(s->first_err[i], sizeof s->first_err[i], "%s: declared %s, inferred %s", o->name,
               mil_type_to_string(want, a, sizeof a), mil_type_to_string(got, b, sizeof b));
    }
  }
  if (good) s->pass[i]++;
  else {
    s->fail[i]++;
    if (s->verbose) printf("    %s: %s\n", s->path, mil_diag_first_error(&d) ? mil_diag_first_error(&d) : "type mismatch");
    if (!s->first_err[i][0] && mil_diag_first_error(&d))
      snprintf(s->first_err[i], sizeof s->first_err[i], "%s", mil_diag_first_error(&d));
  }
  mil_diag_clear(&d);
  return 0;
}

/* Every op of these families in the corpus's programs (input and expected
 * sections) must infer the output types coremltools recorded. */
static void test_corpus(void **state) {
  (void)state;
  const char *dir = corpus_passes_dir();
  if (!dir) {
    shared_skip("the corpus");
    return;
  }
  corpus_list l = {0};
  corpus_list_cases(dir, &l);
  corpus_stats s;
  memset(&s, 0, sizeof s);
  s.verbose = getenv("OPS_B_VERBOSE") != NULL;
  size_t parsed = 0, unparsed = 0;
  for (size_t i = 0; i < l.n; i++) {
    corpus_case cc;
    if (corpus_case_load(l.paths[i], &cc) != 0) continue;
    bool mine = false;
    for (int k = 0; k_types[k] && !mine; k++) {
      char pat[64];
      snprintf(pat, sizeof pat, "= %s(", k_types[k]);
      mine = strstr(cc.data, pat) != NULL;
    }
    s.path = cc.path;
    const corpus_section *secs[2] = {&cc.input, &cc.expected};
    for (int sct = 0; mine && sct < 2; sct++) {
      if (!secs[sct]->text || !secs[sct]->len) continue;
      mil_program *p = NULL;
      mil_diag d = {0};
      mil_parse_options po = {cc.path, NULL};
      if (mil_parse_program(secs[sct]->text, secs[sct]->len, &po, &p, &d) == MIL_OK && p) {
        parsed++;
        mil_program_walk(p, count_ops, &s);
      } else {
        unparsed++;
      }
      mil_program_free(p);
      mil_diag_clear(&d);
    }
    corpus_case_free(&cc);
  }
  corpus_list_free(&l);
  int tp = 0, tf = 0;
  for (int i = 0; k_types[i]; i++) {
    if (s.pass[i] + s.fail[i] == 0) continue;
    printf("  %-30s %5d passed %5d failed%s%s\n", k_types[i], s.pass[i], s.fail[i], s.fail[i] ? "  first: " : "",
           s.fail[i] ? s.first_err[i] : "");
    tp += s.pass[i];
    tf += s.fail[i];
  }
  printf("corpus ops-b: %zu programs parsed (%zu not parsed), %d ops passed, %d failed\n", parsed, unparsed, tp, tf);
  assert_int_equal(tf, 0);
}

/* Folding against the corpus: in each input program, ops are inferred in
 * order (upstream folds come from the other families); an op of these
 * families whose output coremltools marked '*' must fold once all of its
 * inputs are known, and where the expected program holds a const of the
 * same name its value must match (1e-6 relative, or one fp16 ulp). */
typedef struct fold_stats {
  int checked, compared, missing, mismatched;
  const mil_program *expected;
  const char *path;
} fold_stats;

static const mil_var *find_var(const mil_program *p, const char *name) {
  for (int32_t f = 0; f < p->n_functions; f++) {
    const mil_block *b = mil_function_body(p->functions[f]);
    for (const mil_op *o = b->first; o; o = o->next)
      for (int32_t i = 0; i < o->n_outputs; i++)
        if (strcmp(o->outputs[i]->name, name) == 0) return o->outputs[i];
  }
  return NULL;
}

static int fold_ops(mil_op *o, void *ud) {
  fold_stats *s = ud;
  if (mil_op_is_const(o)) return 0;
  static const char *const folding[] = {"linear", "matmul", "einsum", "l2_norm", "layer_norm",
                                        "scaled_dot_product_attention", NULL};
  bool mine = false;
  for (int i = 0; folding[i]; i++) mine |= strcmp(o->type, folding[i]) == 0;
  bool marked = o->n_outputs == 1 && o->outputs[0]->mark == MIL_MARK_VALUE;
  bool inputs_known = true;
  for (int32_t i = 0; i < o->n_inputs; i++)
    for (int32_t j = 0; j < o->inputs[i].n_args; j++) {
      const mil_arg *a = &o->inputs[i].args[j];
      if (!a->value && !(a->use.var && a->use.var->val)) inputs_known = false;
    }
  mil_diag d = {0};
  mil_status st = mil_op_infer(o, &d);
  mil_diag_clear(&d);
  if (!mine || !marked || !inputs_known || st != MIL_OK) return 0;
  s->checked++;
  const mil_value *got = o->outputs[0]->val;
  if (!got) {
    s->missing++;
    printf("    %s: %s did not fold\n", s->path, o->name);
    return 0;
  }
  const mil_var *e = s->expected ? find_var(s->expected, o->outputs[0]->name) : NULL;
  if (!e || !e->val || !e->op || !mil_op_is_const(e->op) || e->val->numel != got->numel) return 0;
  s->compared++;
  for (int64_t i = 0; i < got->numel; i++) {
    double a = mil_value_get_f64(got, i), b = mil_value_get_f64(e->val, i);
    double tol = got->type->dtype == MIL_DT_FP16 ? fabs(b) / 1024.0 + 1e-7 : fabs(b) * 1e-6 + 1e-6;
    if (isnan(a) != isnan(b) || (!isnan(a) && a != b && !(fabs(a - b) <= tol))) { /* NaN only where coremltools' is */
      s->mismatched++;
      printf("    %s: %s[%lld] folded to %.9g, coremltools %.9g\n", s->path, o->name, (long long)i, a, b);
      break;
    }
  }
  return 0;
}

static void test_corpus_fold(void **state) {
  (void)state;
  const char *dir = corpus_passes_dir();
  if (!dir) {
    shared_skip("the corpus");
    return;
  }
  corpus_list l = {0};
  corpus_list_cases(dir, &l);
  fold_stats s = {0};
  for (size_t i = 0; i < l.n; i++) {
    corpus_case cc;
    if (corpus_case_load(l.paths[i], &cc) != 0) continue;
    static const char *const pats[] = {")*(Tensor) = linear(", ")*(Tensor) = matmul(", ")*(Tensor) = einsum(",
                                       ")*(Tensor) = l2_norm(", ")*(Tensor) = layer_norm(",
                                       ")*(Tensor) = scaled_dot_product_attention(", ")*(Scalar) = matmul(", NULL};
    bool any = false;
    for (int k = 0; pats[k] && !any; k++) any = strstr(cc.data, pats[k]) != NULL;
    mil_program *in = NULL, *ex = NULL;
    mil_diag d = {0};
    mil_parse_options po = {cc.path, NULL};
    if (any && cc.input.text && mil_parse_program(cc.input.text, cc.input.len, &po, &in, &d) == MIL_OK) {
      if (cc.expected.text) mil_parse_program(cc.expected.text, cc.expected.len, &po, &ex, &d);
      s.expected = ex;
      s.path = cc.path;
      mil_program_walk(in, fold_ops, &s);
    }
    mil_program_free(in);
    mil_program_free(ex);
    mil_diag_clear(&d);
    corpus_case_free(&cc);
  }
  corpus_list_free(&l);
  printf("corpus folds ops-b: %d checked, %d compared with coremltools' values, %d did not fold, %d mismatched\n",
         s.checked, s.compared, s.missing, s.mismatched);
  assert_int_equal(s.missing, 0);
  assert_int_equal(s.mismatched, 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_corpus),
      cmocka_unit_test(test_corpus_fold),
  };
  return shared_exit(cmocka_run_group_tests(tests, NULL, NULL));
}
