/* Tests of the pass infrastructure: option parsing and validation, the
 * predefined pipelines (checked against coremltools' recorded sequences),
 * pipeline editing, the runner's observability (timing records, change and
 * op counts, verify-each naming the failing pass, print-after) and the
 * helpers of pass_internal.h. (The golden-case runner has its own test,
 * test_golden_runner.c.)
 *
 * The fixture passes below live only in this file and are added at run time
 * with mil_pass_register. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "shared_skip.h"

#include "golden_util.h"
#include "mil/mil.h"
#include "mil/passes.h"
#include "passes/pass_internal.h"

static mil_program *parse(const char *text) {
  mil_program *p = NULL;
  mil_diag d = {0};
  mil_status st = mil_parse_program(text, strlen(text), NULL, &p, &d);
  if (st != MIL_OK) fail_msg("parse failed: %s", mil_diag_first_error(&d));
  mil_diag_clear(&d);
  return p;
}

/* relu chain r0..r3 with a dead sigmoid and a dead const */
#include "pass_fixtures.h"

/* Moves the second op of main to the front: a use before its definition. */
static mil_status run_break(mil_program *p, const mil_pass_options *o, mil_pass_stats *st, mil_diag *d) {
  mil_block *b = mil_function_body(p->functions[0]);
  mil_op *first = b->first;
  while (first && mil_op_is_const(first)) first = first->next;
  if (!first || !first->next) return MIL_OK;
  mil_op *second = first->next;
  mil_op_detach(second);
  mil_block_insert_before(first, second);
  st->changes++;
  return MIL_OK;
}
static const mil_pass_def k_fixture_break = {"fixture::break", "breaks SSA order", NULL, 0, run_break, NULL};

static mil_status run_fail(mil_program *p, const mil_pass_options *o, mil_pass_stats *st, mil_diag *d) {
  return mil_diag_error(d, MIL_ERR_TYPE, "fixture failure on purpose");
}
static const mil_pass_def k_fixture_fail = {"fixture::fail", "fails", NULL, 0, run_fail, NULL};

/* A pass that declares anchor op types is not called when none is present. */
static int g_anchor_calls;
static mil_status run_count_calls(mil_program *p, const mil_pass_options *o, mil_pass_stats *st, mil_diag *d) {
  g_anchor_calls++;
  st->changes++;
  return MIL_OK;
}
static const char *const k_relu_anchor[] = {"relu", "conv", NULL};
static const mil_pass_def k_fixture_anchored = {"fixture::anchored", "x", NULL, 0, run_count_calls, k_relu_anchor};

static int setup(void **state) {
  (void)state;
  mil_diag d = {0};
  const mil_pass_def *defs[] = {&k_fixture_dce,   &k_fixture_noop, &k_fixture_mark,
                                &k_fixture_break, &k_fixture_fail, &k_fixture_anchored};
  for (size_t i = 0; i < sizeof defs / sizeof defs[0]; i++)
    if (mil_pass_register(defs[i], &d) != MIL_OK) return -1;
  mil_diag_clear(&d);
  return 0;
}

/* ---------- options ---------- */

static void test_options(void **state) {
  (void)state;
  mil_diag d = {0};
  const mil_pass_def *cd = mil_pass_lookup("const_deduplication");
  assert_non_null(cd);
  assert_string_equal(cd->name, "common::const_deduplication");
  mil_pass_options *o = mil_pass_options_new(cd);
  assert_int_equal(mil_pass_opt_int(o, "const_threshold"), 100);
  assert_int_equal(mil_pass_options_set(o, "const_threshold", "-1", &d), MIL_OK);
  assert_int_equal(mil_pass_opt_int(o, "const_threshold"), -1);
  assert_int_equal(mil_pass_options_set(o, "const_threshold", "1.5", &d), MIL_ERR_INVALID);
  assert_int_equal(mil_pass_options_set(o, "const_threshold", "abc", &d), MIL_ERR_INVALID);
  assert_int_equal(mil_pass_opt_int(o, "const_threshold"), -1); /* unchanged by the failures */
  mil_diag_clear(&d);
  assert_int_equal(mil_pass_options_set(o, "threshold", "3", &d), MIL_ERR_NOT_FOUND);
  assert_non_null(strstr(mil_diag_first_error(&d), "const_threshold"));
  mil_diag_clear(&d);
  mil_pass_options_free(o);

  o = mil_pass_options_new(mil_pass_lookup("common::const_elimination"));
  assert_false(mil_pass_opt_is_set(o, "skip_const_by_size")); /* coremltools' None */
  assert_int_equal(mil_pass_options_set(o, "skip_const_by_size", "1e6", &d), MIL_OK);
  assert_true(mil_pass_opt_double(o, "skip_const_by_size") == 1e6);
  assert_int_equal(mil_pass_options_set(o, "skip_const_by_size", "\"32\"", &d), MIL_OK); /* string, as coremltools */
  assert_true(mil_pass_opt_double(o, "skip_const_by_size") == 32.0);
  assert_int_equal(mil_pass_options_set(o, "skip_const_by_size", "null", &d), MIL_OK);
  assert_false(mil_pass_opt_is_set(o, "skip_const_by_size"));
  mil_pass_options_free(o);

  o = mil_pass_options_new(mil_pass_lookup("add_fp16_cast"));
  assert_int_equal(mil_pass_opt_list(o, "skip_ops_by_type", NULL), 0);
  assert_int_equal(mil_pass_options_set(o, "skip_ops_by_type", "mul,const", &d), MIL_OK);
  const char *const *items;
  assert_int_equal(mil_pass_opt_list(o, "skip_ops_by_type", &items), 2);
  assert_string_equal(items[0], "mul");
  assert_string_equal(items[1], "const");
  assert_true(mil_pass_opt_list_has(o, "skip_ops_by_type", "const"));
  assert_false(mil_pass_opt_list_has(o, "skip_ops_by_type", "add"));
  assert_int_equal(mil_pass_options_set(o, "skip_ops_by_type", "[\"a\", \"b\", \"c\"]", &d), MIL_OK);
  assert_int_equal(mil_pass_opt_list(o, "skip_ops_by_type", NULL), 3);
  assert_int_equal(mil_pass_options_set(o, "skip_ops_by_type", "[1]", &d), MIL_ERR_INVALID);
  /* op_selector: not from text, but from C */
  assert_int_equal(mil_pass_options_set(o, "op_selector", "x", &d), MIL_ERR_INVALID);
  mil_op fake;
  memset(&fake, 0, sizeof fake);
  fake.type = "mul";
  assert_true(mil_pass_opt_selects(o, "op_selector", &fake));
  assert_int_equal(mil_pass_options_set_selector(o, "op_selector", NULL, NULL, &d), MIL_OK);
  mil_pass_options_free(o);

  o = mil_pass_options_new(mil_pass_lookup("scaled_dot_product_attention_sliced_q"));
  assert_int_equal(mil_pass_opt_int(o, "min_seq_length"), 1280);
  assert_int_equal(mil_pass_opt_int(o, "seq_length_divider"), 16);
  assert_int_equal(mil_pass_options_set(o, "seq_length_divider", "0", &d), MIL_ERR_INVALID);
  assert_int_equal(mil_pass_options_set(o, "min_seq_length", "-1", &d), MIL_ERR_INVALID);
  assert_int_equal(mil_pass_options_set(o, "min_seq_length", "16", &d), MIL_OK);
  assert_int_equal(mil_pass_opt_int(o, "min_seq_length"), 16);
  mil_pass_options_free(o);

  o = mil_pass_options_new(mil_pass_lookup("materialize_symbolic_shape_program"));
  assert_string_equal(mil_pass_opt_string(o, "source_function_name"), "main");
  assert_null(mil_pass_opt_json(o, "function_name_to_materialization_map"));
  assert_int_equal(
      mil_pass_options_set(o, "function_name_to_materialization_map", "{\"main\": {\"x\": [2, 3]}}", &d), MIL_OK);
  assert_string_equal(mil_pass_opt_json(o, "function_name_to_materialization_map"), "{\"main\":{\"x\":[2,3]}}");
  assert_int_equal(mil_pass_options_set(o, "source_function_name", "func2", &d), MIL_OK);
  assert_string_equal(mil_pass_opt_string(o, "source_function_name"), "func2");
  char buf[64];
  assert_string_equal(mil_pass_opt_to_string(o, "source_function_name", buf, sizeof buf), "func2");
  mil_pass_options_free(o);
  mil_diag_clear(&d);
}

static int never(const mil_op *op, void *ud) { return 0; }
static bool selector_false(const mil_op *op, void *ud) { return never(op, ud) != 0; }

static void test_selector(void **state) {
  (void)state;
  mil_pass_options *o = mil_pass_options_new(mil_pass_lookup("add_int16_cast"));
  mil_op fake;
  memset(&fake, 0, sizeof fake);
  assert_int_equal(mil_pass_options_set_selector(o, "op_selector", selector_false, NULL, NULL), MIL_OK);
  assert_false(mil_pass_opt_selects(o, "op_selector", &fake));
  mil_pass_options_free(o);
}

/* Every registered pass that coremltools has declares exactly coremltools'
 * options (names and types). */
static bool options_match(const mil_pass_def *impl, const mil_pass_def *cat, char *why, size_t n) {
  if (impl->n_options != cat->n_options) {
    snprintf(why, n, "%s declares %d options, coremltools has %d", impl->name, impl->n_options, cat->n_options);
    return false;
  }
  for (int32_t i = 0; i < cat->n_options; i++) {
    bool found = false;
    for (int32_t k = 0; k < impl->n_options; k++)
      if (strcmp(impl->options[k].name, cat->options[i].name) == 0 && impl->options[k].type == cat->options[i].type)
        found = true;
    if (!found) {
      snprintf(why, n, "%s lacks option %s (%s)", impl->name, cat->options[i].name,
               mil_pass_opt_type_name(cat->options[i].type));
      return false;
    }
  }
  return true;
}

static void test_registered_options_match_coremltools(void **state) {
  (void)state;
  char why[256];
  for (size_t i = 0; i < mil_pass_count(); i++) {
    const mil_pass_def *p = mil_pass_at(i);
    assert_non_null(p->run);
    assert_non_null(p->doc);
    const mil_pass_def *cat = pass_catalog_find(p->name);
    if (!cat) continue;
    if (!options_match(p, cat, why, sizeof why)) fail_msg("%s", why);
  }
  /* the checker itself sees a mismatch */
  const mil_pass_def bad = {"common::const_deduplication", "x", k_mark_opts, 1, run_noop, NULL};
  assert_false(options_match(&bad, pass_catalog_find("const_deduplication"), why, sizeof why));
}

/* ---------- pipelines ---------- */

static void test_pipeline_names(void **state) {
  (void)state;
  assert_int_equal(mil_pipeline_name_count(), 13);
  mil_pipeline *a = NULL, *b = NULL;
  assert_int_equal(mil_pipeline_new("DEFAULT", &a, NULL), MIL_OK);
  assert_int_equal(mil_pipeline_new("default", &b, NULL), MIL_OK);
  assert_int_equal(mil_pipeline_n_passes(a), 96);
  assert_int_equal(mil_pipeline_n_passes(b), 96);
  for (int32_t i = 0; i < 96; i++) assert_string_equal(mil_pipeline_pass_at(a, i), mil_pipeline_pass_at(b, i));
  assert_string_equal(mil_pipeline_pass_at(a, 0), "common::lower_complex_dialect_ops");
  assert_string_equal(mil_pipeline_pass_at(a, 95), "common::dead_code_elimination");
  assert_null(mil_pipeline_pass_at(a, 96));
  mil_pipeline_free(a);
  mil_pipeline_free(b);
  assert_int_equal(mil_pipeline_new("Cleanup", &a, NULL), MIL_OK);
  assert_int_equal(mil_pipeline_n_passes(a), 19);
  assert_string_equal(mil_pipeline_pass_at(a, 17), "common::topological_reorder");
  mil_pipeline_free(a);
  assert_int_equal(mil_pipeline_new("empty", &a, NULL), MIL_OK);
  assert_int_equal(mil_pipeline_n_passes(a), 0);
  mil_pipeline_free(a);
  assert_int_equal(mil_pipeline_new("default_palettization", &a, NULL), MIL_OK);
  assert_int_equal(mil_pipeline_n_passes(a), 97);
  assert_string_equal(mil_pipeline_pass_at(a, 0), "compression::palettize_weights");
  char buf[128];
  mil_pass_opt_to_string(mil_pipeline_options(a, "compression::palettize_weights"), "config", buf, sizeof buf);
  assert_non_null(strstr(buf, "unique"));
  mil_pipeline_free(a);
  mil_diag d = {0};
  assert_int_equal(mil_pipeline_new("nope", &a, &d), MIL_ERR_NOT_FOUND);
  assert_null(a);
  assert_non_null(strstr(mil_diag_first_error(&d), "nope"));
  assert_non_null(strstr(mil_diag_first_error(&d), "cleanup"));
  mil_diag_clear(&d);
  /* every predefined pipeline builds */
  for (size_t i = 0; i < mil_pipeline_name_count(); i++) {
    assert_int_equal(mil_pipeline_new(mil_pipeline_name_at(i), &a, NULL), MIL_OK);
    mil_pipeline_free(a);
  }
}

/* The DEFAULT pipeline is exactly the sequence coremltools recorded in the
 * golden corpus headers (with add_fp16_cast / add_int16_cast: fp16 compute;
 * without them: fp32). */
static void test_default_matches_corpus(void **state) {
  (void)state;
  char **files;
  int n = golden_list(MIL_SHARED_DIR "/corpus/passes/_pipeline_default", ".mil", &files);
  if (n <= 0) {
    shared_skip("the corpus");
    return;
  }
  int seen_fp16 = 0, seen_fp32 = 0;
  for (int i = 0; i < n && i < 400; i++) {
    char path[4096], err[512];
    snprintf(path, sizeof path, "%s/%s", MIL_SHARED_DIR "/corpus/passes/_pipeline_default", files[i]);
    golden_case c;
    assert_int_equal(golden_case_read(path, &c, err, sizeof err), 0);
    bool fp16 = false;
    for (int k = 0; k < c.n_pipeline; k++) fp16 |= strcmp(c.pipeline[k], "common::add_fp16_cast") == 0;
    mil_pipeline *pl = NULL;
    assert_int_equal(mil_pipeline_new("default", &pl, NULL), MIL_OK);
    if (!fp16) {
      assert_int_equal(mil_pipeline_remove_pass(pl, "common::add_fp16_cast"), 1);
      assert_int_equal(mil_pipeline_remove_pass(pl, "add_int16_cast"), 2);
    }
    assert_int_equal(mil_pipeline_n_passes(pl), c.n_pipeline);
    for (int k = 0; k < c.n_pipeline; k++) assert_string_equal(mil_pipeline_pass_at(pl, k), c.pipeline[k]);
    if (fp16) seen_fp16++;
    else seen_fp32++;
    mil_pipeline_free(pl);
    golden_case_free(&c);
  }
  golden_free_list(files, n);
  assert_true(seen_fp16 > 0 && seen_fp32 > 0);
}

static void test_pipeline_editing(void **state) {
  (void)state;
  mil_diag d = {0};
  mil_pipeline *pl = NULL;
  assert_int_equal(mil_pipeline_new("empty", &pl, NULL), MIL_OK);
  /* coremltools' test_insert_pass_at_index */
  assert_int_equal(mil_pipeline_insert(pl, 0, "common::merge_consecutive_relus", &d), MIL_OK);
  assert_int_equal(mil_pipeline_insert(pl, 0, "common::noop_elimination", &d), MIL_OK);
  assert_int_equal(mil_pipeline_insert(pl, 1, "noop_elimination", &d), MIL_OK);
  assert_int_equal(mil_pipeline_insert(pl, 1, "common::merge_consecutive_reshapes", &d), MIL_OK);
  const char *want[] = {"common::noop_elimination", "common::merge_consecutive_reshapes", "common::noop_elimination",
                        "common::merge_consecutive_relus"};
  assert_int_equal(mil_pipeline_n_passes(pl), 4);
  for (int i = 0; i < 4; i++) assert_string_equal(mil_pipeline_pass_at(pl, i), want[i]);
  assert_int_equal(mil_pipeline_insert(pl, 9, "common::noop_elimination", &d), MIL_ERR_INVALID);
  mil_diag_clear(&d);
  assert_int_equal(mil_pipeline_append(pl, "test_pass", &d), MIL_ERR_NOT_FOUND);
  assert_non_null(strstr(mil_diag_first_error(&d), "test_pass"));
  mil_diag_clear(&d);
  /* test_remove_passes */
  assert_int_equal(mil_pipeline_remove_pass(pl, "common::noop_elimination"), 2);
  assert_int_equal(mil_pipeline_n_passes(pl), 2);
  assert_int_equal(mil_pipeline_remove_at(pl, 1, &d), MIL_OK);
  assert_int_equal(mil_pipeline_n_passes(pl), 1);
  assert_string_equal(mil_pipeline_pass_at(pl, 0), "common::merge_consecutive_reshapes");
  assert_int_equal(mil_pipeline_remove_at(pl, 1, &d), MIL_ERR_INVALID);
  /* options for a pass not in the pipeline make it invalid */
  assert_int_equal(mil_pipeline_set_option(pl, "common::add_fp16_cast", "skip_ops_by_type", "matmul,const", &d),
                   MIL_OK);
  assert_int_equal(mil_pipeline_set_option(pl, "common::add_fp16_cast", "nope", "1", &d), MIL_ERR_NOT_FOUND);
  mil_diag_clear(&d);
  assert_int_equal(mil_pipeline_remove_pass(pl, "merge_consecutive_reshapes"), 1);
  assert_int_equal(mil_pipeline_append(pl, "fixture::noop", &d), MIL_OK);
  assert_int_equal(mil_pipeline_validate(pl, &d), MIL_ERR_INVALID);
  assert_non_null(strstr(mil_diag_first_error(&d), "add_fp16_cast"));
  mil_diag_clear(&d);
  /* the option is kept and applies once the pass is in the pipeline */
  assert_int_equal(mil_pipeline_append(pl, "add_fp16_cast", &d), MIL_OK);
  const mil_pass_options *o = mil_pipeline_options(pl, "common::add_fp16_cast");
  assert_non_null(o);
  assert_int_equal(mil_pass_opt_list(o, "skip_ops_by_type", NULL), 2);
  /* overriding keeps the last value */
  assert_int_equal(mil_pipeline_set_option(pl, "add_fp16_cast", "skip_ops_by_type", "concat", &d), MIL_OK);
  o = mil_pipeline_options(pl, "common::add_fp16_cast");
  assert_int_equal(mil_pass_opt_list(o, "skip_ops_by_type", NULL), 1);
  assert_true(mil_pass_opt_list_has(o, "skip_ops_by_type", "concat"));
  mil_pipeline_free(pl);
  mil_diag_clear(&d);
}

/* A pipeline naming passes that do not exist yet fails with one message
 * that lists each missing pass once, and runs nothing. */
static void test_missing_passes(void **state) {
  (void)state;
  mil_pipeline *pl = NULL;
  assert_int_equal(mil_pipeline_new("default", &pl, NULL), MIL_OK);
  assert_int_equal(mil_pipeline_insert(pl, 0, "fixture::dead_code_elimination", NULL), MIL_OK);
  int32_t n = mil_pipeline_n_passes(pl);
  bool any_missing = false;
  for (int32_t i = 0; i < n; i++) any_missing |= !mil_pass_is_implemented(mil_pipeline_pass_at(pl, i));
  mil_program *p = parse(k_chain);
  int64_t ops = mil_program_count_ops(p);
  mil_diag d = {0};
  mil_status st = mil_pipeline_run(pl, p, NULL, NULL, &d);
  if (!any_missing) {
    assert_int_equal(st, MIL_OK);
  } else {
    assert_int_equal(st, MIL_ERR_UNSUPPORTED);
    assert_int_equal(d.n_errors, 1);
    const char *msg = mil_diag_first_error(&d);
    for (int32_t i = 0; i < n; i++) {
      const char *name = mil_pipeline_pass_at(pl, i);
      char needle[256];
      snprintf(needle, sizeof needle, "%s,", name); /* items are ", "-separated */
      size_t count = 0;
      for (const char *s = msg; (s = strstr(s, name)); s += strlen(name)) {
        char after = s[strlen(name)];
        if (after == ',' || after == 0) count++; /* whole name, not a prefix of a longer one */
      }
      assert_int_equal(count, mil_pass_is_implemented(name) ? 0 : 1);
    }
    assert_int_equal(mil_program_count_ops(p), ops); /* nothing ran */
  }
  mil_diag_clear(&d);
  mil_program_free(p);
  mil_pipeline_free(pl);
}

/* A test observer: counts the calls and prints the program after the
 * passes fixture::dead_code_elimination and fixture::noop, as `mil opt
 * --print-after` does. */
typedef struct print_obs {
  FILE *f;
  int before, after;
} print_obs;

static void obs_before(void *ud, const mil_pipeline *pl, int32_t index, int32_t n, const char *pass, mil_program *p,
                       int64_t ops) {
  (void)pl, (void)index, (void)n, (void)pass, (void)p, (void)ops;
  ((print_obs *)ud)->before++;
}

static mil_status obs_after(void *ud, const mil_pipeline *pl, const mil_pass_record *r, mil_program *p, mil_diag *d) {
  (void)pl, (void)d;
  print_obs *o = ud;
  o->after++;
  if (strcmp(r->pass, "fixture::dead_code_elimination") && strcmp(r->pass, "fixture::noop")) return MIL_OK;
  mil_print_options popt = {MIL_PRINT_COMPLETE, true};
  fprintf(o->f, "# after pass #%d %s (%lld changes, %lld ops)\n", r->index, r->pass, (long long)r->changes,
          (long long)r->ops_after);
  return mil_print_program_file(p, &popt, o->f);
}

static void test_run_and_observe(void **state) {
  (void)state;
  const char *names[] = {"fixture::mark", "fixture::dead_code_elimination", "fixture::noop",
                         "fixture::dead_code_elimination"};
  mil_pipeline *pl = NULL;
  mil_diag d = {0};
  assert_int_equal(mil_pipeline_new_from_list("t", 4, names, &pl, &d), MIL_OK);
  assert_int_equal(mil_pipeline_set_option(pl, "fixture::mark", "threshold", "42", &d), MIL_OK);
  assert_int_equal(mil_pipeline_set_option(pl, "fixture::mark", "threshold", "-2", &d), MIL_ERR_INVALID);
  mil_diag_clear(&d);
  mil_program *p = parse(k_chain);
  assert_int_equal(mil_program_count_ops(p), 6);
  FILE *pf = tmpfile();
  assert_non_null(pf);
  mil_pass_verifier ver = {0};
  print_obs po = {pf, 0, 0};
  mil_pass_observer obs[2] = {mil_pass_verifier_observer(&ver), {obs_before, obs_after, &po}};
  mil_pipeline_run_options ro = {obs, 2};
  mil_pipeline_report rep = {0};
  g_mark_runs = 0;
  assert_int_equal(mil_pipeline_run(pl, p, &ro, &rep, &d), MIL_OK);
  assert_int_equal(g_mark_runs, 1);
  assert_int_equal(g_seen_threshold, 42);
  /* the dead sigmoid and the dead const go: 6 -> 4 ops */
  assert_int_equal(rep.n_records, 4);
  assert_int_equal(rep.ops_before, 6);
  assert_int_equal(rep.ops_after, 4);
  assert_int_equal(mil_program_count_ops(p), 4);
  assert_int_equal(rep.records[1].changes, 2);
  assert_int_equal(rep.records[1].ops_before, 6);
  assert_int_equal(rep.records[1].ops_after, 4);
  assert_int_equal(rep.records[3].changes, 0);
  assert_int_equal(rep.n_changed, 1);
  assert_string_equal(rep.records[2].pass, "fixture::noop");
  double sum = 0;
  for (int32_t i = 0; i < rep.n_records; i++) {
    assert_true(rep.records[i].seconds >= 0);
    assert_int_equal(rep.records[i].index, i);
    sum += rep.records[i].seconds;
  }
  assert_true(rep.seconds >= sum * 0.999 && rep.seconds <= sum * 1.001 + 1e-12);
  /* the observers ran around every pass; the printing one printed once
   * after each named pass, not after fixture::mark */
  assert_int_equal(po.before, 4);
  assert_int_equal(po.after, 4);
  long len = ftell(pf);
  assert_true(len > 0);
  rewind(pf);
  char *out = calloc(1, (size_t)len + 1);
  assert_int_equal(fread(out, 1, (size_t)len, pf), (size_t)len);
  fclose(pf);
  int headers = 0;
  for (const char *s = out; (s = strstr(s, "# after pass #")); s++) headers++;
  assert_int_equal(headers, 3);
  assert_null(strstr(out, "fixture::mark"));
  assert_non_null(strstr(out, "# after pass #1 fixture::dead_code_elimination (2 changes, 4 ops)"));
  assert_non_null(strstr(out, "relu(x=%r2"));
  assert_null(strstr(out, "sigmoid"));
  free(out);
  mil_pipeline_report_free(&rep);
  mil_pipeline_free(pl);
  mil_program_free(p);
  mil_diag_clear(&d);
}

static void test_verify_each_names_pass(void **state) {
  (void)state;
  const char *names[] = {"fixture::noop", "fixture::break", "fixture::noop"};
  mil_pipeline *pl = NULL;
  assert_int_equal(mil_pipeline_new_from_list("t", 3, names, &pl, NULL), MIL_OK);
  mil_program *p = parse(k_chain);
  mil_pass_verifier ver = {0};
  mil_pass_observer vobs = mil_pass_verifier_observer(&ver);
  mil_pipeline_run_options ro = {&vobs, 1};
  mil_pipeline_report rep = {0};
  mil_diag d = {0};
  assert_int_equal(mil_pipeline_run(pl, p, &ro, &rep, &d), MIL_ERR_INVALID);
  assert_int_equal(rep.n_records, 2); /* stopped after the breaking pass */
  bool named = false;
  for (size_t i = 0; i < d.count; i++) named |= strstr(d.msgs[i].text, "after pass 'fixture::break' (#1") != NULL;
  assert_true(named);
  mil_diag_clear(&d);
  mil_pipeline_report_free(&rep);
  mil_program_free(p);
  /* without verify-each the same run succeeds */
  p = parse(k_chain);
  assert_int_equal(mil_pipeline_run(pl, p, NULL, NULL, &d), MIL_OK);
  mil_program_free(p);
  mil_pipeline_free(pl);
  /* a pass error stops the run and names the pass */
  const char *names2[] = {"fixture::noop", "fixture::fail", "fixture::mark"};
  assert_int_equal(mil_pipeline_new_from_list("t2", 3, names2, &pl, NULL), MIL_OK);
  p = parse(k_chain);
  g_mark_runs = 0;
  assert_int_equal(mil_pipeline_run(pl, p, NULL, NULL, &d), MIL_ERR_TYPE);
  assert_int_equal(g_mark_runs, 0);
  assert_string_equal(mil_diag_first_error(&d), "fixture failure on purpose");
  assert_non_null(strstr(d.msgs[d.count - 1].text, "'fixture::fail' (#1 of pipeline 't2')"));
  mil_diag_clear(&d);
  mil_program_free(p);
  mil_pipeline_free(pl);
}

static void test_register(void **state) {
  (void)state;
  mil_diag d = {0};
  size_t n = mil_pass_count();
  assert_int_equal(mil_pass_register(&k_fixture_noop, &d), MIL_ERR_INVALID); /* taken */
  const mil_pass_def nons = {"noop2", "x", NULL, 0, run_noop, NULL};
  assert_int_equal(mil_pass_register(&nons, &d), MIL_ERR_INVALID); /* no namespace */
  const mil_pass_def norun = {"x::y", "x", NULL, 0, NULL, NULL};
  assert_int_equal(mil_pass_register(&norun, &d), MIL_ERR_INVALID);
  const mil_pass_def extra = {"x::extra", "x", NULL, 0, run_noop, NULL};
  assert_int_equal(mil_pass_register(&extra, &d), MIL_OK);
  assert_int_equal(mil_pass_count(), n + 1);
  assert_ptr_equal(mil_pass_find("x::extra"), &extra);
  assert_true(mil_pass_unregister("x::extra"));
  assert_false(mil_pass_unregister("x::extra"));
  assert_null(mil_pass_find("x::extra"));
  assert_int_equal(mil_pass_count(), n);
  /* known but not implemented passes are listed with run == NULL */
  const mil_pass_def *fp = mil_pass_lookup("common::fuse_pad_conv");
  assert_non_null(fp);
  bool listed = false;
  for (size_t i = 0; i < mil_pass_known_count(); i++) listed |= mil_pass_known_at(i) == fp;
  assert_true(listed || mil_pass_find("common::fuse_pad_conv"));
  assert_null(mil_pass_lookup("common::no_such_pass"));
  mil_diag_clear(&d);
}

/* ---------- helpers of pass_internal.h ---------- */

/* relu(relu(x)) -> relu(x) */
static int merge_relus(mil_op *op, void *ud) {
  if (strcmp(op->type, "relu") != 0) return 0;
  mil_var *in = mil_op_input_var(op, "x");
  if (!in || !in->op || strcmp(in->op->type, "relu") != 0 || !pass_has_single_use(in)) return 0;
  mil_op *first = in->op;
  if (!pass_replace_uses_after(first, op->outputs[0], in)) return 0;
  mil_status st = mil_op_remove(op);
  return st == MIL_OK ? 1 : -(int)st;
}

static const char *k_nested = "main[CoreML7](%x: (2, fp32)(Tensor), %p: (bool)(Scalar)) {\n"
                              "  block0() {\n"
                              "    %a: (2, fp32)(Tensor) = relu(x=%x, name=\"a\")\n"
                              "    %b: (2, fp32)(Tensor) = relu(x=%a, name=\"b\")\n"
                              "    %c: (2, fp32)(Tensor) = cond(pred=%p, name=\"c\")\n"
                              "      c_true() {\n"
                              "        %t0: (2, fp32)(Tensor) = relu(x=%b, name=\"t0\")\n"
                              "        %t1: (2, fp32)(Tensor) = relu(x=%t0, name=\"t1\")\n"
                              "        %t2: (2, fp32)(Tensor) = relu(x=%t1, name=\"t2\")\n"
                              "      } -> (%t2)\n"
                              "      c_false() {\n"
                              "        %f0: (2, fp32)(Tensor) = sigmoid(x=%b, name=\"f0\")\n"
                              "      } -> (%f0)\n"
                              "    %d: (2, fp32)(Tensor) = relu(x=%c, name=\"d\")\n"
                              "    %e: (2, fp32)(Tensor) = relu(x=%d, name=\"e\")\n"
                              "  } -> (%e)\n"
                              "}\n";

static int count_type(mil_op *op, void *ud) {
  struct {
    const char *t;
    int n;
  } *c = ud;
  if (strcmp(op->type, c->t) == 0) c->n++;
  return 0;
}

static void test_rewrite_driver(void **state) {
  (void)state;
  mil_program *p = parse(k_nested);
  mil_pass_stats st = {0};
  mil_diag d = {0};
  assert_int_equal(pass_rewrite_ops(p, merge_relus, NULL, 0, &st, &d), MIL_OK);
  /* b folds into a (a then feeds both branches), t1 and t2 fold into t0
   * inside the cond, e folds into d: 4 rewrites, relus a, t0, d remain */
  struct {
    const char *t;
    int n;
  } c = {"relu", 0};
  mil_program_walk(p, count_type, &c);
  assert_int_equal(c.n, 3);
  assert_int_equal(st.changes, 4);
  assert_int_equal(mil_program_verify(p, &d), MIL_OK);
  /* the function output keeps its name after the replacement */
  mil_block *body = mil_function_body(p->functions[0]);
  assert_string_equal(body->outputs[0].var->name, "e");
  assert_string_equal(body->outputs[0].var->op->name, "d");
  /* the cond's true block ends in one relu */
  mil_op *cond = NULL;
  for (mil_op *op = body->first; op; op = op->next)
    if (strcmp(op->type, "cond") == 0) cond = op;
  assert_non_null(cond);
  assert_int_equal(cond->blocks[0]->n_ops, 1);
  assert_string_equal(cond->blocks[0]->outputs[0].var->name, "t0");
  mil_diag_clear(&d);
  mil_program_free(p);
}

static int count_blocks(mil_block *b, void *ud) {
  (*(int *)ud)++;
  return 0;
}

static void test_helpers(void **state) {
  (void)state;
  mil_program *p = parse(k_chain);
  mil_diag d = {0};
  int nb = 0;
  assert_int_equal(pass_for_each_block(p, count_blocks, &nb, NULL, &d), MIL_OK);
  assert_int_equal(nb, 1);
  mil_block *b = mil_function_body(p->functions[0]);
  mil_op *c = b->first, *r0 = c->next, *s0 = r0->next, *r1 = s0->next, *r2 = r1->next, *r3 = r2->next;
  assert_string_equal(s0->name, "s0");
  assert_true(pass_var_is_const(c->outputs[0]));
  assert_false(pass_var_is_const(r0->outputs[0]));
  assert_true(pass_var_is_scalar(c->outputs[0], 2.0, 1e-3));
  assert_false(pass_var_is_scalar(c->outputs[0], 2.1, 1e-3));
  assert_true(pass_var_scalar_in(c->outputs[0], 1.0, 2.0));
  assert_false(pass_var_scalar_in(c->outputs[0], 2.5, 3.0));
  assert_false(pass_has_single_use(r0->outputs[0])); /* s0 and r1 */
  assert_true(pass_has_single_use(r1->outputs[0]));
  assert_false(pass_has_single_use(r3->outputs[0])); /* block output only */
  assert_ptr_equal(pass_single_child(r1->outputs[0]), r2);
  assert_null(pass_single_child(r0->outputs[0]));
  assert_true(pass_child_op_type(r1, "relu"));
  assert_false(pass_child_op_type(r1, "sigmoid"));
  mil_op *kids[4];
  assert_int_equal(pass_child_ops(r0->outputs[0], kids, 4), 2);
  assert_true(pass_op_feeds_block_output(r3));
  mil_op *chain[] = {r1, r2, r3};
  assert_true(pass_no_output_connection(chain, 3));
  mil_op *chain2[] = {r3, r2};
  assert_false(pass_no_output_connection(chain2, 2));
  assert_int_equal(pass_op_opset(r1), MIL_IOS17); /* CoreML7 */
  assert_ptr_equal(pass_op_function(r1), p->functions[0]);

  /* fresh names: Builder._get_free_name's per-prefix count (from 0 here:
   * no name of p ends in "_<digits>"), a taken one given the "_<j>" that
   * dedup_op_and_var_names would give it, the name coremltools gave
   * recorded */
  pass_names *names = pass_names_new(p);
  assert_non_null(names);
  assert_true(pass_names_has(names, "r2"));
  assert_false(pass_names_has(names, "r9"));
  assert_true(pass_names_add(names, "r1_y_0"));
  mil_value *v = mil_value_new_scalar_f64(p, MIL_DT_FP32, 3.0);
  mil_var *k = pass_const_before(r2, names, "r1", "y", v);
  assert_non_null(k);
  assert_string_equal(k->name, "r1_y_0_1");
  assert_string_equal(mil_program_name_intended(p, k->name), "r1_y_0");
  assert_ptr_equal(k->op->next, r2);
  mil_var *k2 = pass_const_before(r2, names, "r1", "y", v);
  assert_string_equal(k2->name, "r1_y_1");
  assert_ptr_equal(mil_program_name_intended(p, k2->name), k2->name);
  assert_string_equal(pass_names_fresh(names, p, "x"), "x_0");
  assert_string_equal(pass_names_fresh(names, p, "x"), "x_1");
  assert_string_equal(pass_names_fresh(NULL, p, "r1"), "r1_0");
  mil_program_name_intended_clear(p);
  mil_var *k3 = pass_const_named_before(r2, names, "exact_name", v);
  assert_string_equal(k3->name, "exact_name");
  assert_true(pass_names_has(names, "exact_name"));
  pass_names_free(names);

  /* removal in any order; refused while a user remains */
  mil_op *dead[] = {k->op, k2->op, k3->op, s0};
  assert_int_equal(mil_program_count_ops(p), 9);
  assert_int_equal(pass_remove_ops(dead, 4, &d), MIL_OK);
  assert_int_equal(mil_program_count_ops(p), 5);
  mil_op *live[] = {r1};
  assert_int_equal(pass_remove_ops(live, 1, &d), MIL_ERR_INVALID);
  mil_diag_clear(&d);
  assert_int_equal(mil_program_count_ops(p), 5);
  mil_op *tail[] = {r1, r2}; /* producer first: still works */
  /* r3 uses r2: point it at r0 first */
  assert_true(pass_replace_uses_after(r0, r2->outputs[0], r0->outputs[0]));
  assert_int_equal(pass_remove_ops(tail, 2, &d), MIL_OK);
  assert_int_equal(mil_program_count_ops(p), 3);
  assert_int_equal(mil_program_verify(p, &d), MIL_OK);
  assert_ptr_equal(mil_op_input_var(r3, "x"), r0->outputs[0]);
  /* a function input cannot be renamed to stand in for an output */
  assert_false(pass_replace_uses_after(NULL, r3->outputs[0], p->functions[0]->inputs[0]));
  assert_true(pass_can_replace_var(r3->outputs[0], r0->outputs[0]));
  mil_program_free(p);
  mil_diag_clear(&d);
}


/* The skip through a pipeline: the report marks the run as skipped. */
static bool pipeline_skips(mil_program *p) {
  const char *names[] = {"fixture::anchored"};
  mil_pipeline *pl = NULL;
  mil_pipeline_report rep = {0};
  assert_int_equal(mil_pipeline_new_from_list("t", 1, names, &pl, NULL), MIL_OK);
  assert_int_equal(mil_pipeline_run(pl, p, NULL, &rep, NULL), MIL_OK);
  assert_int_equal(rep.n_records, 1);
  bool skipped = rep.records[0].skipped;
  assert_int_equal(rep.records[0].changes, skipped ? 0 : 1);
  mil_pipeline_report_free(&rep);
  mil_pipeline_free(pl);
  return skipped;
}

static void test_anchor_skip(void **state) {
  (void)state;
  const mil_pass_def anchored = k_fixture_anchored;
  mil_program *p = parse("main[CoreML7](%x: (2, fp32)(Tensor)) {\n"
                         "  block0() {\n"
                         "    %y: (2, fp32)(Tensor) = sigmoid(x=%x, name=\"y\")\n"
                         "  } -> (%y)\n"
                         "}\n");
  mil_diag d = {0};
  int64_t changes = -1;
  g_anchor_calls = 0;
  assert_int_equal(mil_pass_run(&anchored, p, NULL, &changes, &d), MIL_OK);
  assert_int_equal(g_anchor_calls, 0);
  assert_int_equal(changes, 0);
  assert_true(pipeline_skips(p));
  assert_int_equal(g_anchor_calls, 0);
  mil_program_free(p);
  p = parse("main[CoreML7](%x: (2, fp32)(Tensor)) {\n"
            "  block0() {\n"
            "    %y: (2, fp32)(Tensor) = relu(x=%x, name=\"y\")\n"
            "  } -> (%y)\n"
            "}\n");
  assert_int_equal(mil_pass_run(&anchored, p, NULL, &changes, &d), MIL_OK);
  assert_int_equal(g_anchor_calls, 1);
  assert_int_equal(changes, 1);
  assert_false(pipeline_skips(p));
  assert_int_equal(g_anchor_calls, 2);
  mil_program_free(p);
  mil_diag_clear(&d);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_anchor_skip),
      cmocka_unit_test(test_options),
      cmocka_unit_test(test_selector),
      cmocka_unit_test(test_registered_options_match_coremltools),
      cmocka_unit_test(test_pipeline_names),
      cmocka_unit_test(test_default_matches_corpus),
      cmocka_unit_test(test_pipeline_editing),
      cmocka_unit_test(test_missing_passes),
      cmocka_unit_test(test_run_and_observe),
      cmocka_unit_test(test_verify_each_names_pass),
      cmocka_unit_test(test_register),
      cmocka_unit_test(test_rewrite_driver),
      cmocka_unit_test(test_helpers),
  };
  return shared_exit(cmocka_run_group_tests(tests, setup, NULL));
}
