/* The compression config readers (YAML and JSON) refuse hostile documents
 * with a message saying what was wrong, in bounded time and memory: a YAML
 * alias bomb ("billion laughs"), nesting 100,000 levels deep, non-scalar
 * mapping keys. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "mil/compress.h"
#include "mil/mil.h"

/* Reads text as YAML (yaml) or JSON and returns the first error (malloc'ed);
 * the read must fail with `want`. */
static char *read_error(const char *text, size_t len, bool yaml, mil_status want) {
  mil_diag d;
  mil_diag_init(&d);
  mil_compress_config *c = NULL;
  mil_status st = yaml ? mil_compress_config_from_yaml(text, len, "cfg", MIL_CFG_NONE, &c, &d)
                       : mil_compress_config_from_json(text, len, "cfg", MIL_CFG_NONE, &c, &d);
  assert_int_equal(st, want);
  assert_null(c);
  const char *m = mil_diag_first_error(&d);
  assert_non_null(m);
  char *r = strdup(m);
  mil_diag_clear(&d);
  return r;
}

/* The 9-level "billion laughs": 10^9 scalars once expanded. */
static void test_yaml_alias_bomb(void **state) {
  (void)state;
  char doc[2048];
  int n = snprintf(doc, sizeof doc, "a: &a [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n");
  for (char c = 'b'; c <= 'i'; c++)
    n += snprintf(doc + n, sizeof doc - (size_t)n, "%c: &%c [*%c,*%c,*%c,*%c,*%c,*%c,*%c,*%c,*%c]\n", c, c, c - 1,
                  c - 1, c - 1, c - 1, c - 1, c - 1, c - 1, c - 1, c - 1);
  char *m = read_error(doc, (size_t)n, true, MIL_ERR_INVALID);
  assert_non_null(strstr(m, "aliases expand to more than 100000 nodes"));
  assert_null(strstr(m, "mapping keys"));
  free(m);
}

/* An alias to its own collection (libyaml registers the anchor first). */
static void test_yaml_self_alias(void **state) {
  (void)state;
  char *m = read_error("config_type: &x [*x, *x]\n", (size_t)-1, true, MIL_ERR_INVALID);
  assert_true(strstr(m, "nested") || strstr(m, "aliases"));
  free(m);
}

static char *nested(size_t levels, char open, char close) {
  char *s = malloc(2 * levels + 1);
  assert_non_null(s);
  memset(s, open, levels);
  memset(s + levels, close, levels);
  s[2 * levels] = 0;
  return s;
}

static void test_yaml_deep(void **state) {
  (void)state;
  char *s = nested(100000, '[', ']');
  char *m = read_error(s, (size_t)-1, true, MIL_ERR_INVALID);
  assert_non_null(strstr(m, "nested more than 64 levels"));
  free(m);
  /* block style: 100 mappings each indented one more column */
  char *b = malloc(100 * 104 + 8);
  assert_non_null(b);
  size_t k = 0;
  for (int i = 0; i < 100; i++) {
    memset(b + k, ' ', (size_t)i);
    k += (size_t)i;
    memcpy(b + k, "x:\n", 3);
    k += 3;
  }
  memcpy(b + k, "  1\n", 5);
  m = read_error(b, (size_t)-1, true, MIL_ERR_INVALID);
  assert_non_null(strstr(m, "cfg:65: YAML nested more than 64 levels"));
  free(m);
  free(b);
  free(s);
  /* exactly 64 levels reads (and is then refused as a config, not as nesting) */
  s = nested(64, '[', ']');
  m = read_error(s, (size_t)-1, true, MIL_ERR_INVALID);
  assert_null(strstr(m, "nested"));
  free(m);
  free(s);
}

static void test_json_deep(void **state) {
  (void)state;
  char *s = nested(100000, '[', ']');
  char *m = read_error(s, (size_t)-1, false, MIL_ERR_INVALID);
  assert_non_null(strstr(m, "JSON nested more than 64 levels"));
  assert_non_null(strstr(m, "byte 64"));
  free(m);
  free(s);
  /* brackets inside strings do not count */
  char buf[400];
  int n = snprintf(buf, sizeof buf, "{\"config_type\": \"OpLinearQuantizerConfig\", \"op_name_configs\": {\"");
  for (int i = 0; i < 80; i++) buf[n++] = '[';
  snprintf(buf + n, sizeof buf - (size_t)n, "\": null}}");
  mil_diag d;
  mil_diag_init(&d);
  mil_compress_config *c = NULL;
  assert_int_equal(mil_compress_config_from_json(buf, (size_t)-1, "cfg", MIL_CFG_NONE, &c, &d), MIL_OK);
  mil_compress_config_free(c);
  mil_diag_clear(&d);
}

/* The file reader: JSON text too deep for cJSON is no longer handed to the
 * YAML reader (quadratic in the depth) */
static void test_load_deep_json_file(void **state) {
  (void)state;
  char path[] = "/tmp/mil_cfg_deep_XXXXXX";
  int fd = mkstemp(path);
  assert_true(fd >= 0);
  char *s = nested(100000, '{', '}');
  FILE *f = fdopen(fd, "w");
  fputs(s, f);
  fclose(f);
  free(s);
  mil_diag d;
  mil_diag_init(&d);
  mil_compress_config *c = NULL;
  assert_int_equal(mil_compress_config_load(path, MIL_CFG_NONE, &c, &d), MIL_ERR_INVALID);
  assert_non_null(strstr(mil_diag_first_error(&d), "JSON nested more than 64 levels"));
  mil_diag_clear(&d);
  unlink(path);
}

static void test_yaml_nonscalar_key(void **state) {
  (void)state;
  char *m = read_error("config_type: OpLinearQuantizerConfig\n? [a, b]\n: 1\n", (size_t)-1, true, MIL_ERR_INVALID);
  assert_non_null(strstr(m, "cfg:2: YAML: a mapping key is not a scalar"));
  free(m);
}

/* fuzz_config_yaml: threshold .inf printed back as JSON null, which the
 * pass's `config` option then refused */
static void test_inf_round_trip(void **state) {
  (void)state;
  mil_diag d = {0};
  mil_compress_config *c = NULL, *c2 = NULL;
  assert_int_equal(mil_compress_config_from_yaml("global_config: {threshold: .inf}\nop_name_configs: {y: {threshold: .inf, minimum_sparsity_percentile: 0.25}}\n",
                                                 (size_t)-1, "cfg", MIL_CFG_THRESHOLD_PRUNER, &c, &d),
                   MIL_OK);
  char *j = mil_compress_config_to_json(c);
  assert_non_null(j);
  if (mil_compress_config_from_json(j, (size_t)-1, "back", MIL_CFG_NONE, &c2, &d) != MIL_OK)
    fail_msg("%s does not read back: %s", j, mil_diag_first_error(&d));
  assert_true(mil_op_compress_config_equal(&c->global, &c2->global));
  assert_true(mil_op_compress_config_equal(&c->op_name[0].cfg, &c2->op_name[0].cfg));
  assert_true(c2->global.threshold > 1e308);
  /* -inf is refused, and shown as -inf (not as JSON's null) */
  mil_compress_config_free(c2);
  c2 = NULL;
  assert_int_equal(mil_compress_config_from_yaml("global_config: {threshold: -.inf}\n", (size_t)-1, "cfg",
                                                 MIL_CFG_THRESHOLD_PRUNER, &c2, &d),
                   MIL_ERR_INVALID);
  assert_non_null(strstr(mil_diag_first_error(&d), "(got -inf)"));
  free(j);
  mil_compress_config_free(c);
  mil_compress_config_free(c2);
  mil_diag_clear(&d);
}

/* An integer beyond what a double holds exactly is named as written, not
 * as "must be an integer (got 9.22e+18)" */
static void test_huge_integer_message(void **state) {
  (void)state;
  char *m = read_error("config_type: OpLinearQuantizerConfig\nglobal_config: {granularity: per_block, block_size: "
                       "9223372036854775807}\n", (size_t)-1, true, MIL_ERR_INVALID);
  assert_non_null(strstr(m, "global_config.block_size: must be an integer of magnitude at most 2^53 = "
                            "9007199254740992 (got 9223372036854775807)"));
  free(m);
  m = read_error("config_type: OpLinearQuantizerConfig\nglobal_config: {weight_threshold: 123456789012345678901234}\n",
                 (size_t)-1, true, MIL_ERR_INVALID);
  assert_non_null(strstr(m, "(got 123456789012345678901234)"));
  free(m);
  m = read_error("{\"config_type\": \"OpLinearQuantizerConfig\", \"global_config\": {\"block_size\": 9223372036854775807}}",
                 (size_t)-1, false, MIL_ERR_INVALID);
  assert_non_null(strstr(m, "at most 2^53 = 9007199254740992 (got about 9223372036854775808)"));
  free(m);
  /* a YAML integer that large is still a number where a float is expected */
  mil_diag d = {0};
  mil_compress_config *c = NULL;
  assert_int_equal(mil_compress_config_from_yaml("global_config: {threshold: 9223372036854775807}\n", (size_t)-1, "cfg",
                                                 MIL_CFG_THRESHOLD_PRUNER, &c, &d),
                   MIL_OK);
  assert_true(c->global.threshold > 9.2e18);
  mil_compress_config_free(c);
  mil_diag_clear(&d);
}

/* fuzz_config_yaml (CI, round 14): threshold 4888888888888888888 printed
 * back with 15 digits read as a different double; and a YAML scalar
 * nan(1), which strtod reads as NaN, is a string, not a number. */
static void test_float_round_trip_exact(void **state) {
  (void)state;
  mil_diag d = {0};
  mil_compress_config *c = NULL, *c2 = NULL;
  assert_int_equal(mil_compress_config_from_yaml("global_config: {threshold: 4888888888888888888, "
                                                 "minimum_sparsity_percentile: 0.1}\n",
                                                 (size_t)-1, "cfg", MIL_CFG_THRESHOLD_PRUNER, &c, &d),
                   MIL_OK);
  char *j = mil_compress_config_to_json(c);
  assert_non_null(j);
  assert_int_equal(mil_compress_config_from_json(j, (size_t)-1, "back", MIL_CFG_NONE, &c2, &d), MIL_OK);
  assert_true(c2->global.threshold == c->global.threshold);
  assert_true(c2->global.minimum_sparsity_percentile == 0.1);
  free(j);
  mil_compress_config_free(c);
  mil_compress_config_free(c2);
  c = NULL;
  assert_int_equal(mil_compress_config_from_yaml("global_config: {threshold: nan(1)}\n", (size_t)-1, "cfg",
                                                 MIL_CFG_THRESHOLD_PRUNER, &c, &d),
                   MIL_ERR_INVALID);
  assert_null(c);
  assert_non_null(strstr(mil_diag_first_error(&d), "must be a number"));
  mil_diag_clear(&d);
}

/* fuzz_config_json (round 14): a key given twice, set then null
 * ("block_size": 4 ... "block_size": null), left the unset value behind,
 * which the equality compared: the config did not equal its own printout */
static void test_key_set_then_null(void **state) {
  (void)state;
  mil_diag d = {0};
  mil_compress_config *c = NULL, *c2 = NULL;
  const char *text = "{\"global_config\": {\"target_sparsity\": 0.5, \"block_size\": 4, \"dim\": 1, "
                     "\"n_m_ratio\": [1, 2], \"block_size\": null, \"dim\": null, \"n_m_ratio\": null}}";
  assert_int_equal(mil_compress_config_from_json(text, (size_t)-1, "cfg", MIL_CFG_MAGNITUDE_PRUNER, &c, &d), MIL_OK);
  assert_false(c->global.has_prune_block_size);
  char *j = mil_compress_config_to_json(c);
  assert_non_null(j);
  assert_int_equal(mil_compress_config_from_json(j, (size_t)-1, "back", MIL_CFG_NONE, &c2, &d), MIL_OK);
  assert_true(mil_op_compress_config_equal(&c->global, &c2->global));
  free(j);
  mil_compress_config_free(c);
  mil_compress_config_free(c2);
  mil_diag_clear(&d);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_yaml_alias_bomb), cmocka_unit_test(test_yaml_self_alias),
      cmocka_unit_test(test_yaml_deep),       cmocka_unit_test(test_json_deep),
      cmocka_unit_test(test_load_deep_json_file), cmocka_unit_test(test_yaml_nonscalar_key),
      cmocka_unit_test(test_inf_round_trip),   cmocka_unit_test(test_huge_integer_message),
      cmocka_unit_test(test_float_round_trip_exact),
      cmocka_unit_test(test_key_set_then_null),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
