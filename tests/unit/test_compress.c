/* Tests of weight compression: OptimizationConfig reading (JSON and YAML,
 * defaults, coremltools' validation errors), config lookup and conflicts,
 * hand-derived values of the arithmetic (quantization with round half to
 * even, np.percentile pruning, optimal 1-D k-means), and, for every
 * compression and both op generations (iOS16 / iOS18), that the weights a
 * constexpr op decodes to are exactly what fake_compression stores. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "compress/compress_internal.h"
#include "mil/compress.h"
#include "mil/mil.h"
#include "mil/ops.h"
#include "mil/passes.h"

static mil_program *parse(const char *text) {
  mil_program *p = NULL;
  mil_diag d = {0};
  if (mil_parse_program(text, strlen(text), NULL, &p, &d) != MIL_OK) fail_msg("parse: %s", mil_diag_first_error(&d));
  mil_diag_clear(&d);
  return p;
}

/* ---------- config ---------- */

static mil_status read_json(const char *j, mil_compress_config **c, char *err, size_t n) {
  mil_diag d = {0};
  mil_status st = mil_compress_config_from_json(j, (size_t)-1, "cfg", MIL_CFG_NONE, c, &d);
  snprintf(err, n, "%s", mil_diag_first_error(&d) ? mil_diag_first_error(&d) : "");
  mil_diag_clear(&d);
  return st;
}

static void test_config_defaults(void **state) {
  (void)state;
  mil_compress_config *c = NULL;
  char err[512];
  assert_int_equal(read_json("{\"config_type\": \"OpLinearQuantizerConfig\", \"global_config\": {}}", &c, err, sizeof err),
                   MIL_OK);
  assert_int_equal(c->global.type, MIL_CFG_LINEAR_QUANTIZER);
  assert_int_equal(c->global.mode, MIL_CMODE_LINEAR_SYMMETRIC);
  assert_int_equal(c->global.dtype, MIL_DT_INT8);
  assert_int_equal(c->global.granularity, MIL_GRAN_PER_CHANNEL);
  assert_int_equal(c->global.block_size, 32);
  assert_int_equal(c->global.weight_threshold, 2048);
  mil_compress_config_free(c);
  /* per-entry config_type overrides; magnitude pruner's dim defaults */
  assert_int_equal(read_json("{\"config_type\": \"OpThresholdPrunerConfig\", \"global_config\": {\"threshold\": 0.01},"
                             " \"op_type_configs\": {\"conv\": {\"config_type\": \"OpMagnitudePrunerConfig\","
                             " \"n_m_ratio\": [3, 4]}}, \"op_name_configs\": {\"skip_me\": null}}",
                             &c, err, sizeof err),
                   MIL_OK);
  assert_int_equal(c->global.type, MIL_CFG_THRESHOLD_PRUNER);
  assert_true(fabs(c->global.threshold - 0.01) < 1e-15);
  assert_true(fabs(c->global.minimum_sparsity_percentile - 0.5) < 1e-15);
  assert_int_equal(c->n_op_type, 1);
  assert_int_equal(c->op_type[0].cfg.type, MIL_CFG_MAGNITUDE_PRUNER);
  assert_true(c->op_type[0].cfg.has_dim);
  assert_int_equal(c->op_type[0].cfg.dim, 1);
  assert_int_equal(c->op_name[0].cfg.type, MIL_CFG_NONE);
  /* and back to the dictionary form, which reads back equal */
  char *j = mil_compress_config_to_json(c);
  mil_compress_config *c2 = NULL;
  assert_int_equal(read_json(j, &c2, err, sizeof err), MIL_OK);
  assert_true(mil_op_compress_config_equal(&c->global, &c2->global));
  assert_true(mil_op_compress_config_equal(&c->op_type[0].cfg, &c2->op_type[0].cfg));
  free(j);
  mil_compress_config_free(c2);
  mil_compress_config_free(c);
}

static void test_config_errors(void **state) {
  (void)state;
  static const struct {
    const char *json, *needle;
  } k[] = {
      {"{\"global_config\": {\"nbits\": 4}}", "config_type must be provided"},
      {"{\"config_type\": \"OpPalettizerConfig\", \"global_config\": {\"nbits\": 5}}", "global_config.nbits"},
      {"{\"config_type\": \"OpPalettizerConfig\", \"global_config\": {}}", "must be provided for kmeans"},
      {"{\"config_type\": \"OpPalettizerConfig\", \"global_config\": {\"mode\": \"unique\", \"nbits\": 4}}",
       "must NOT be provided"},
      {"{\"config_type\": \"OpLinearQuantizerConfig\", \"global_config\": {\"bits\": 4}}", "global_config.bits"},
      {"{\"config_type\": \"OpLinearQuantizerConfig\", \"global_config\": {\"dtype\": \"int2\"}}", "invalid dtype"},
      {"{\"config_type\": \"OpMagnitudePrunerConfig\", \"global_config\": {}}", "target_sparsity"},
      {"{\"config_type\": \"OpMagnitudePrunerConfig\", \"global_config\": {\"target_sparsity\": 0.5, \"n_m_ratio\": [1, 2]}}",
       "cannot be set at the same time"},
      {"{\"config_type\": \"OpMagnitudePrunerConfig\", \"global_config\": {\"target_sparsity\": 0.5, \"dim\": 0}}",
       "dim"},
      {"{\"config_type\": \"OpMagnitudePrunerConfig\", \"op_type_configs\": {\"add\": {\"n_m_ratio\": [1, 2]}}}",
       "does not support op type add"},
      {"{\"config_type\": \"OpThresholdPrunerConfig\", \"global_config\": {\"minimum_sparsity_percentile\": 2.0}}",
       "[0, 1]"},
      {"{\"config_type\": \"OpLinearQuantizerConfig\", \"global_config\": {\"weight_threshold\": -1}}",
       "non-negative"},
      {"{\"config_type\": \"OpLinearQuantizerConfig\", \"extra\": 1}", "invalid key extra"},
      {"{\"config_type\": \"OpLinearQuantizerConfig\", ", "not valid JSON"},
  };
  for (size_t i = 0; i < sizeof k / sizeof k[0]; i++) {
    mil_compress_config *c = NULL;
    char err[512];
    mil_status st = read_json(k[i].json, &c, err, sizeof err);
    if (st == MIL_OK) fail_msg("accepted: %s", k[i].json);
    if (!strstr(err, k[i].needle)) fail_msg("'%s': message '%s' lacks '%s'", k[i].json, err, k[i].needle);
    assert_null(c);
  }
}

static void test_config_yaml(void **state) {
  (void)state;
  const char *y = "config_type: OpPalettizerConfig\n"
                  "global_config:\n"
                  "  mode: kmeans\n"
                  "  nbits: 4\n"
                  "  granularity: per_grouped_channel\n"
                  "  group_size: 16\n"
                  "  enable_per_channel_scale: true\n"
                  "op_type_configs:\n"
                  "  conv:\n"
                  "    mode: uniform\n"
                  "    nbits: 2\n"
                  "op_name_configs:\n"
                  "  conv_1: ~\n";
  mil_compress_config *c = NULL;
  mil_diag d = {0};
  assert_int_equal(mil_compress_config_from_yaml(y, (size_t)-1, "cfg.yaml", MIL_CFG_NONE, &c, &d), MIL_OK);
  assert_int_equal(c->global.nbits, 4);
  assert_int_equal(c->global.granularity, MIL_GRAN_PER_GROUPED_CHANNEL);
  assert_int_equal(c->global.group_size, 16);
  assert_true(c->global.enable_per_channel_scale);
  assert_int_equal(c->op_type[0].cfg.mode, MIL_CMODE_UNIFORM);
  assert_int_equal(c->op_name[0].cfg.type, MIL_CFG_NONE);
  mil_compress_config_free(c);
  /* syntax errors name line:column */
  c = NULL;
  assert_int_equal(mil_compress_config_from_yaml("a: [1, 2\nb: c\n", (size_t)-1, "bad.yaml", MIL_CFG_NONE, &c, &d),
                   MIL_ERR_PARSE);
  assert_non_null(strstr(mil_diag_first_error(&d), "bad.yaml:"));
  mil_diag_clear(&d);
}

/* ---------- passes ---------- */

/* two linears sharing one weight (4 x 8) */
static const char *k_shared = "main[CoreML8](%x: (1, 8, fp32)(Tensor)) {\n"
                              "  block0() {\n"
                              "    %w: (4, 8, fp32)*(Tensor) = const(val=[[1, 2, 3, 4, 5, 6, 7, 8], [1, 2, 3, 4, 5, 6, 7, "
                              "8], [1, 2, 3, 4, 5, 6, 7, 8], [1, 2, 3, 4, 5, 6, 7, 8]], name=\"w\")\n"
                              "    %a: (1, 4, fp32)(Tensor) = linear(x=%x, weight=%w, name=\"a\")\n"
                              "    %b: (1, 4, fp32)(Tensor) = linear(x=%x, weight=%w, name=\"b\")\n"
                              "  } -> (%a, %b)\n"
                              "}\n";

static mil_status run_pass_joint(mil_program *p, const char *pass, const char *config, bool fake, bool joint,
                                 char *err, size_t n) {
  mil_diag d = {0};
  const mil_pass_def *def = mil_pass_find(pass);
  assert_non_null(def);
  mil_pass_options *o = mil_pass_options_new(def);
  mil_status st = config ? mil_pass_options_set(o, "config", config, &d) : MIL_OK;
  if (st == MIL_OK && fake) st = mil_pass_options_set(o, "fake_compression", "true", &d);
  if (st == MIL_OK && joint) st = mil_pass_options_set(o, "joint_compression", "true", &d);
  if (st == MIL_OK) st = mil_pass_run(def, p, o, NULL, &d);
  snprintf(err, n, "%s", mil_diag_first_error(&d) ? mil_diag_first_error(&d) : "");
  mil_pass_options_free(o);
  mil_diag_clear(&d);
  return st;
}

static mil_status run_pass(mil_program *p, const char *pass, const char *config, bool fake, char *err, size_t n) {
  return run_pass_joint(p, pass, config, fake, false, err, n);
}

static void test_lookup_and_conflict(void **state) {
  (void)state;
  char err[600];
  /* a config by op name for one consumer only: a conflict */
  mil_program *p = parse(k_shared);
  assert_int_equal(run_pass(p, "compression::linear_quantize_weights",
                            "{\"config_type\": \"OpLinearQuantizerConfig\", \"global_config\": {\"weight_threshold\": 0},"
                            " \"op_name_configs\": {\"a\": {\"weight_threshold\": 0, \"dtype\": \"uint8\"}}}",
                            false, err, sizeof err),
                   MIL_ERR_INVALID);
  assert_non_null(strstr(err, "conflict"));
  mil_program_free(p);
  /* the const's own name wins over everything */
  p = parse(k_shared);
  assert_int_equal(run_pass(p, "compression::linear_quantize_weights",
                            "{\"config_type\": \"OpLinearQuantizerConfig\", \"global_config\": {\"weight_threshold\": 0},"
                            " \"op_name_configs\": {\"a\": {\"dtype\": \"uint8\"}, \"w\": null}}",
                            false, err, sizeof err),
                   MIL_OK);
  assert_int_equal(mil_program_count_op_type(p, "constexpr_blockwise_shift_scale"), 0);
  mil_program_free(p);
  /* "const" may not be an op type key */
  p = parse(k_shared);
  assert_int_equal(run_pass(p, "compression::linear_quantize_weights",
                            "{\"config_type\": \"OpLinearQuantizerConfig\", \"op_type_configs\": {\"const\": {}}}", false,
                            err, sizeof err),
                   MIL_ERR_INVALID);
  mil_program_free(p);
  /* the wrong class for the pass */
  p = parse(k_shared);
  assert_int_equal(run_pass(p, "compression::palettize_weights",
                            "{\"config_type\": \"OpLinearQuantizerConfig\", \"global_config\": {}}", false, err,
                            sizeof err),
                   MIL_ERR_INVALID);
  assert_non_null(strstr(err, "only accept OpPalettizerConfig"));
  mil_program_free(p);
}

/* A weight of 16 x 32 values in [-1, 1) (fp32 or fp16) feeding a linear. */
static char *weight_program(const char *opset, const char *dt) {
  size_t cap = 64 * 1024, n = 0;
  char *s = malloc(cap);
  n += (size_t)snprintf(s + n, cap - n, "main[%s](%%x: (1, 32, %s)(Tensor)) {\n  block0() {\n    %%w: (16, 32, %s)*(Tensor) = const(val=[",
                        opset, dt, dt);
  uint32_t r = 12345;
  for (int i = 0; i < 16; i++) {
    n += (size_t)snprintf(s + n, cap - n, "%s[", i ? ", " : "");
    for (int j = 0; j < 32; j++) {
      r = r * 1103515245u + 12345u;
      double v = ((r >> 8) & 0xffff) / 32768.0 - 1.0;
      if ((i * 32 + j) % 7 == 0) v = 0;
      n += (size_t)snprintf(s + n, cap - n, "%s%.6g", j ? ", " : "", v);
    }
    n += (size_t)snprintf(s + n, cap - n, "]");
  }
  snprintf(s + n, cap - n,
           "], name=\"w\")\n    %%y: (1, 16, %s)(Tensor) = linear(x=%%x, weight=%%w, name=\"y\")\n  } -> (%%y)\n}\n", dt);
  return s;
}

static const mil_value *weight_of_linear(mil_program *p) {
  for (mil_op *op = mil_function_body(p->functions[0])->first; op; op = op->next) {
    if (strcmp(op->type, "linear") != 0) continue;
    mil_var *w = mil_op_input_var(op, "weight");
    if (w->val) return w->val;
    mil_diag d = {0};
    const mil_value *v = mil_op_materialize(w->op, w->out_index, &d);
    mil_diag_clear(&d);
    return v;
  }
  return NULL;
}

static void test_decode_equals_fake(void **state) {
  (void)state;
  static const struct {
    const char *pass, *config;
    bool ios18_only;
  } k[] = {
      {"compression::linear_quantize_weights", "{\"global_config\": {\"weight_threshold\": 0}}", false},
      {"compression::linear_quantize_weights",
       "{\"global_config\": {\"weight_threshold\": 0, \"mode\": \"linear\", \"dtype\": \"uint8\"}}", false},
      {"compression::linear_quantize_weights",
       "{\"global_config\": {\"weight_threshold\": 0, \"granularity\": \"per_tensor\"}}", false},
      {"compression::linear_quantize_weights",
       "{\"global_config\": {\"weight_threshold\": 0, \"dtype\": \"int4\", \"granularity\": \"per_block\", "
       "\"block_size\": 8}}",
       true},
      {"compression::palettize_weights", "{\"global_config\": {\"weight_threshold\": 0, \"nbits\": 2}}", false},
      {"compression::palettize_weights", "{\"global_config\": {\"weight_threshold\": 0, \"nbits\": 4, \"mode\": "
                                         "\"uniform\"}}",
       false},
      {"compression::palettize_weights",
       "{\"global_config\": {\"weight_threshold\": 0, \"nbits\": 3, \"granularity\": \"per_grouped_channel\", "
       "\"group_size\": 4, \"enable_per_channel_scale\": true}}",
       true},
      {"compression::palettize_weights",
       "{\"global_config\": {\"weight_threshold\": 0, \"nbits\": 2, \"cluster_dim\": 2}}", true},
      {"compression::prune_weights",
       "{\"config_type\": \"OpMagnitudePrunerConfig\", \"global_config\": {\"weight_threshold\": 0, "
       "\"target_sparsity\": 0.6}}",
       false},
      {"compression::prune_weights",
       "{\"config_type\": \"OpMagnitudePrunerConfig\", \"global_config\": {\"weight_threshold\": 0, \"n_m_ratio\": [2, "
       "4]}}",
       false},
  };
  const char *const opsets[] = {"CoreML6", "CoreML8"};
  const char *const dts[] = {"fp32", "fp16"};
  for (size_t i = 0; i < sizeof k / sizeof k[0]; i++)
    for (int o = 0; o < 2; o++)
      for (int t = 0; t < 2; t++) {
        if (k[i].ios18_only && o == 0) continue;
        char *text = weight_program(opsets[o], dts[t]);
        mil_program *real = parse(text), *fake = parse(text);
        free(text);
        char err[600];
        if (run_pass(real, k[i].pass, k[i].config, false, err, sizeof err) != MIL_OK)
          fail_msg("%s %s %s %s: %s", k[i].pass, k[i].config, opsets[o], dts[t], err);
        if (run_pass(fake, k[i].pass, k[i].config, true, err, sizeof err) != MIL_OK)
          fail_msg("%s (fake) %s: %s", k[i].pass, k[i].config, err);
        const mil_value *a = weight_of_linear(real), *b = weight_of_linear(fake);
        assert_non_null(a);
        assert_non_null(b);
        assert_false(mil_op_is_const(mil_op_input_var(mil_function_body(real->functions[0])->last, "weight")->op));
        if (!mil_value_equal(a, b)) fail_msg("%s %s %s %s: decoded weight differs from fake_compression's", k[i].pass,
                                             k[i].config, opsets[o], dts[t]);
        mil_program_free(real);
        mil_program_free(fake);
      }
}

/* Joint compression (iOS18): the decoded weight of the joint result is
 * the second compression applied to the decoded first one (pruned
 * positions staying 0). */
static void test_joint(void **state) {
  (void)state;
  static const char *const Q = "compression::linear_quantize_weights", *const P = "compression::palettize_weights",
                           *const S = "compression::prune_weights", *const D = "compression::WeightDecompressor";
  static const char *const qcfg = "{\"global_config\": {\"weight_threshold\": 0}}";
  static const char *const pcfg = "{\"global_config\": {\"weight_threshold\": 0, \"nbits\": 2, \"mode\": \"uniform\"}}";
  static const char *const scfg = "{\"config_type\": \"OpMagnitudePrunerConfig\", \"global_config\": "
                                  "{\"weight_threshold\": 0, \"target_sparsity\": 0.5}}";
  static const struct {
    const char *first, *first_cfg, *second, *second_cfg, *op;
  } k[] = {
      {Q, qcfg, S, scfg, "constexpr_sparse_blockwise_shift_scale"},
      {S, scfg, P, pcfg, "constexpr_lut_to_sparse"},
      {S, scfg, Q, qcfg, "constexpr_sparse_blockwise_shift_scale"},
      {P, "{\"global_config\": {\"weight_threshold\": 0, \"nbits\": 4}}", Q, "{\"global_config\": {\"weight_threshold\": 0, \"granularity\": \"per_tensor\"}}",
       "constexpr_blockwise_shift_scale"},
  };
  for (size_t i = 0; i < sizeof k / sizeof k[0]; i++) {
    char *text = weight_program("CoreML8", "fp32");
    mil_program *joint = parse(text), *ref = parse(text);
    free(text);
    char err[600];
    /* joint: first, then second with joint_compression */
    assert_int_equal(run_pass(joint, k[i].first, k[i].first_cfg, false, err, sizeof err), MIL_OK);
    if (run_pass_joint(joint, k[i].second, k[i].second_cfg, false, true, err, sizeof err) != MIL_OK)
      fail_msg("joint %s after %s: %s", k[i].second, k[i].first, err);
    if (mil_program_count_op_type(joint, k[i].op) != 1) fail_msg("joint %s after %s: no %s", k[i].second, k[i].first, k[i].op);
    /* reference: first, decompressed, then second as a fake compression */
    assert_int_equal(run_pass(ref, k[i].first, k[i].first_cfg, false, err, sizeof err), MIL_OK);
    assert_int_equal(run_pass(ref, D, NULL, false, err, sizeof err), MIL_OK);
    const mil_value *pruned = weight_of_linear(ref);
    assert_int_equal(run_pass(ref, k[i].second, k[i].second_cfg, true, err, sizeof err), MIL_OK);
    const mil_value *a = weight_of_linear(joint), *b = weight_of_linear(ref);
    assert_non_null(a);
    assert_non_null(b);
    assert_int_equal(a->numel, b->numel);
    for (int64_t e = 0; e < a->numel; e++) {
      double want = mil_value_get_f64(b, e);
      if (k[i].first == S && mil_value_get_f64(pruned, e) == 0) want = 0;
      if (mil_value_get_f64(a, e) != want)
        fail_msg("joint %s after %s: element %lld decodes to %g, want %g", k[i].second, k[i].first, (long long)e,
                 mil_value_get_f64(a, e), want);
    }
    mil_program_free(joint);
    mil_program_free(ref);
  }
  /* a LUT of fewer than 10 entries is no weight (should_use_weight_file) */
  {
    char *t2 = weight_program("CoreML8", "fp32");
    mil_program *p2 = parse(t2);
    free(t2);
    char e2[600];
    assert_int_equal(run_pass(p2, P, pcfg, false, e2, sizeof e2), MIL_OK);
    assert_int_equal(run_pass_joint(p2, Q, "{\"global_config\": {\"weight_threshold\": 0, \"granularity\": \"per_tensor\"}}",
                                    false, true, e2, sizeof e2),
                     MIL_OK);
    assert_int_equal(mil_program_count_op_type(p2, "constexpr_blockwise_shift_scale"), 0);
    mil_program_free(p2);
  }
  /* before iOS18 joint compression is refused */
  char *text = weight_program("CoreML6", "fp32");
  mil_program *p = parse(text);
  free(text);
  char err[600];
  assert_int_equal(run_pass_joint(p, Q, qcfg, false, true, err, sizeof err), MIL_ERR_INVALID);
  assert_non_null(strstr(err, "iOS18"));
  mil_program_free(p);
}

/* ---------- arithmetic by hand ---------- */

static void test_quantize_values(void **state) {
  (void)state;
  /* symmetric int8 per tensor: scale = 2 / 254; 0.5 / scale = 63.5 rounds to even 64 */
  float w[12] = {-1, 0.5f, 0.25f, 1, 0, 0, 0, 0, 0, 0, 0, -0.5f};
  cw_weight cw = {w, 12, 2, {3, 4}, MIL_DT_FP32, false};
  int64_t bs[2] = {0, 0};
  cw_qparams q;
  bool oom;
  assert_true(cw_quantize(&cw, MIL_DT_INT8, MIL_CMODE_LINEAR_SYMMETRIC, bs, &q, &oom));
  assert_null(q.zp);
  assert_int_equal(q.n_scale, 1);
  assert_true(fabsf(q.scale[0] - 2.0f / 254.0f) < 1e-9f);
  assert_int_equal(q.q[0], -127);
  assert_int_equal(q.q[1], 64);
  assert_int_equal(q.q[2], 32);
  assert_int_equal(q.q[3], 127);
  assert_int_equal(q.q[11], -64);
  cw_qparams_free(&q);
  /* affine uint8 per row: row 0 spans [-1, 1] -> zero point 127.5 -> 128 */
  bs[0] = 1;
  assert_true(cw_quantize(&cw, MIL_DT_UINT8, MIL_CMODE_LINEAR, bs, &q, &oom));
  assert_int_equal(q.n_scale, 3);
  assert_int_equal(q.zp[0], 128);
  /* float32(2 / 255) is a little above 2 / 255, so -1 / scale = -127.49999 -> -127 */
  assert_int_equal(q.q[0], 1);
  assert_int_equal(q.q[3], 255);
  cw_qparams_free(&q);
  /* a block size that does not divide the axis: skipped */
  bs[0] = 2;
  assert_false(cw_quantize(&cw, MIL_DT_INT8, MIL_CMODE_LINEAR, bs, &q, &oom));
  assert_false(oom);
  /* symmetric int4 per row of 20 (four-wide steps and a tail): row 0 spans
   * [-7, 7], scale 14 / 14 = 1, so q is np.round (half to even) of the
   * value; row 1 holds a NaN, which makes its scale NaN and every q 0 */
  float w2[40] = {7, -7, 0.5f, 1.5f, 2.5f, -2.5f, -0.5f, 6.5f, -6.5f, 3.5f, 4.5f, -3.5f, 0, 1, 2, 3, 4, 5, 6, -1};
  const int32_t want[20] = {7, -7, 0, 2, 2, -2, 0, 6, -6, 4, 4, -4, 0, 1, 2, 3, 4, 5, 6, -1};
  for (int i = 20; i < 40; i++) w2[i] = (float)(i - 30) / 4;
  w2[25] = NAN;
  cw_weight cw2 = {w2, 40, 2, {2, 20}, MIL_DT_FP32, false};
  int64_t bs2[2] = {1, 0};
  assert_true(cw_quantize(&cw2, MIL_DT_INT4, MIL_CMODE_LINEAR_SYMMETRIC, bs2, &q, &oom));
  assert_int_equal(q.n_scale, 2);
  assert_true(q.scale[0] == 1.0f);
  assert_true(isnan(q.scale[1]));
  for (int i = 0; i < 20; i++) assert_int_equal(q.q[i], want[i]);
  for (int i = 20; i < 40; i++) assert_int_equal(q.q[i], 0);
  cw_qparams_free(&q);
  /* cw_weight_range: NaN ignored, extremes in any lane or the tail, inf found */
  float lo, hi;
  assert_false(cw_weight_range(&cw2, &lo, &hi));
  assert_true(lo == -7.0f && hi == 7.0f);
  w2[38] = -INFINITY; /* in the tail of eight-element steps (40 = 5 x 8: the last step) */
  assert_true(cw_weight_range(&cw2, &lo, &hi));
  cw_weight cw3 = {w2 + 20, 19, 1, {19}, MIL_DT_FP32, false}; /* 16 + a tail of 3 */
  w2[38] = INFINITY;
  assert_true(cw_weight_range(&cw3, &lo, &hi));
  w2[38] = 100.0f;
  assert_false(cw_weight_range(&cw3, &lo, &hi));
  assert_true(lo == -2.5f && hi == 100.0f);
}

static void test_prune_percentile(void **state) {
  (void)state;
  /* np.percentile(|w|, 50) of 1..10 is 5.5: five values pruned */
  float w[10] = {1, -2, 3, -4, 5, -6, 7, -8, 9, -10}, out[10];
  cw_weight cw = {w, 10, 2, {2, 5}, MIL_DT_FP32, false};
  mil_op_compress_config c;
  mil_op_compress_config_init(&c, MIL_CFG_MAGNITUDE_PRUNER);
  c.has_target_sparsity = true;
  c.target_sparsity = 0.5;
  assert_int_equal(cw_prune_magnitude(&cw, &c, out), 1);
  for (int i = 0; i < 10; i++) assert_true(i < 5 ? out[i] == 0 : out[i] == w[i]);
  /* 0.25: index 2.25 between 3 and 4 -> 3.25: three pruned */
  c.target_sparsity = 0.25;
  assert_int_equal(cw_prune_magnitude(&cw, &c, out), 1);
  for (int i = 0; i < 10; i++) assert_true(i < 3 ? out[i] == 0 : out[i] == w[i]);
  /* 1:2 along the rows (5 wide, padded with a 0): the smaller of each
   * pair; the last pair (w, pad) loses the pad */
  c.has_target_sparsity = false;
  c.has_n_m_ratio = true;
  c.n_m_ratio[0] = 1, c.n_m_ratio[1] = 2;
  c.has_dim = true, c.dim = 1;
  assert_int_equal(cw_prune_n_m(&cw, &c, out), 1);
  static const float want[10] = {0, -2, 0, -4, 5, 0, 7, 0, 9, -10};
  for (int i = 0; i < 10; i++) assert_true(out[i] == want[i]);
}

/* The streamed magnitude cut + split against the dense path: same mask
 * bits, same nonzero elements (bit for bit), for ties, signed zeros, NaN
 * and infinities, magnitudes spread over many radix buckets, both dtypes
 * and lengths that end inside a mask byte. */
static void check_streamed(const float *w, int64_t n, double sparsity, bool half) {
  uint16_t h[300];
  float wf[300], val[300];
  assert_true(n <= 300);
  for (int64_t i = 0; i < n; i++) {
    h[i] = mil_fp32_to_fp16(w[i]);
    wf[i] = half ? mil_fp16_to_fp32(h[i]) : w[i];
  }
  cw_weight cw = {wf, n, 1, {n}, half ? MIL_DT_FP16 : MIL_DT_FP32, half};
  mil_op_compress_config c;
  mil_op_compress_config_init(&c, MIL_CFG_MAGNITUDE_PRUNER);
  c.has_target_sparsity = true;
  c.target_sparsity = sparsity;
  assert_int_equal(cw_prune_magnitude(&cw, &c, val), 1);
  cw_sparse_cut cut;
  const void *raw = half ? (const void *)h : (const void *)w;
  assert_int_equal(cw_prune_magnitude_cut(raw, cw.dtype, n, sparsity * 100, &cut), 1);
  uint8_t mask[40];
  uint32_t nz[300];
  memset(mask, 0xa5, sizeof mask);
  cw_sparse_split(raw, cw.dtype, n, &cut, mask, nz);
  int64_t j = 0;
  for (int64_t i = 0; i < n; i++) {
    bool set = val[i] != 0;
    assert_int_equal((mask[i >> 3] >> (i & 7)) & 1, set);
    if (!set) continue;
    if (half) {
      assert_int_equal(((uint16_t *)nz)[j], mil_fp32_to_fp16(val[i]));
    } else {
      uint32_t b;
      memcpy(&b, &val[i], 4);
      assert_int_equal(nz[j], b);
    }
    j++;
  }
  assert_int_equal(j, cut.nnz);
  for (int64_t i = n; i < (n + 7) / 8 * 8; i++) assert_int_equal((mask[i >> 3] >> (i & 7)) & 1, 0);
  assert_int_equal(mil_bits_count(mask, n), cut.nnz);
}

static void test_prune_streamed(void **state) {
  (void)state;
  /* hand-derived: percentile 50 of 1..10 is 5.5, the five largest kept */
  float w[300] = {1, -2, 3, -4, 5, -6, 7, -8, 9, -10};
  cw_sparse_cut cut;
  assert_int_equal(cw_prune_magnitude_cut(w, MIL_DT_FP32, 10, 50, &cut), 1);
  assert_int_equal(cut.nnz, 5);
  uint8_t mask[2];
  float nz[5];
  cw_sparse_split(w, MIL_DT_FP32, 10, &cut, mask, nz);
  assert_int_equal(mask[0], 0xe0);
  assert_int_equal(mask[1], 0x03);
  for (int i = 0; i < 5; i++) assert_true(nz[i] == w[5 + i]);
  /* 100% is left to the dense path */
  assert_int_equal(cw_prune_magnitude_cut(w, MIL_DT_FP32, 10, 100, &cut), 0);
  static const double sp[] = {0, 0.1, 0.25, 0.5, 0.75, 0.9, 0.999};
  static const int64_t lens[] = {10, 13, 64, 299};
  uint32_t s = 12345;
  for (int round = 0; round < 4; round++) {
    for (int i = 0; i < 300; i++) {
      s = s * 1103515245u + 12345u;
      float u = (float)((s >> 8) & 0xffff) / 65536.0f - 0.5f;
      switch (round) {
      case 0: w[i] = u; break;                                   /* one scale */
      case 1: w[i] = ldexpf(u, (int)(s % 40) - 20); break;       /* many buckets */
      case 2: w[i] = (float)((int)(s % 7) - 3) * 0.5f; break;    /* ties, zeros */
      default: w[i] = i % 11 == 0 ? -0.0f : i % 17 == 0 ? INFINITY : i % 23 == 0 ? NAN : u; break;
      }
    }
    for (size_t k = 0; k < sizeof sp / sizeof *sp; k++)
      for (size_t l = 0; l < sizeof lens / sizeof *lens; l++) {
        check_streamed(w, lens[l], sp[k], false);
        check_streamed(w, lens[l], sp[k], true);
      }
  }
  /* mil_bits_count: bits 0..9 of 0xff 0x03 0xff are ten ones, of 0x0f 0x00 four */
  assert_int_equal(mil_bits_count((const uint8_t[]){0xff, 0x03, 0xff}, 10), 10);
  assert_int_equal(mil_bits_count((const uint8_t[]){0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}, 65), 65);
  assert_int_equal(mil_bits_count((const uint8_t[]){0x0f, 0x00}, 16), 4);
}

/* The nonzero data as a deferred gather (mil_value_new_deferred_masked)
 * reads, at any offset and length, what the eager split writes; element
 * reads and mil_value_data agree; a wrong count is refused. Spans more
 * than one index block (16384 elements) of the gather. */
static void test_prune_deferred(void **state) {
  (void)state;
  enum { N = 40000 };
  mil_program *p = mil_program_new(NULL);
  assert_non_null(p);
  float *w = malloc(N * sizeof *w), *eager = malloc(N * sizeof *eager), *got = malloc(N * sizeof *got);
  assert_true(w && eager && got);
  uint32_t s = 7;
  for (int i = 0; i < N; i++) {
    s = s * 1103515245u + 12345u;
    w[i] = (float)((int)((s >> 8) & 0xfff) - 2048) / 512.0f;
  }
  int64_t n = N;
  mil_value *src = mil_value_new_tensor(p, MIL_DT_FP32, 1, &n, false, w);
  cw_sparse_cut cut;
  assert_int_equal(cw_prune_magnitude_cut(mil_value_data(src), MIL_DT_FP32, n, 70, &cut), 1);
  int64_t nb = (n + 7) / 8;
  mil_value *mask = mil_value_new_tensor_uninit(p, MIL_DT_UINT8, 1, &nb, false);
  uint8_t *mb = mil_value_data_mut(mask), *mb2 = malloc((size_t)nb);
  cw_sparse_mask(mil_value_data(src), MIL_DT_FP32, n, &cut, mb);
  cw_sparse_split(mil_value_data(src), MIL_DT_FP32, n, &cut, mb2, eager);
  assert_memory_equal(mb, mb2, (size_t)nb);
  assert_null(mil_value_new_deferred_masked(p, src, mask, cut.nnz + 1));
  mil_value *nz = mil_value_new_deferred_masked(p, src, mask, cut.nnz);
  assert_non_null(nz);
  assert_true(mil_value_is_deferred(nz));
  assert_false(mil_value_deferred_is_permutation(nz));
  assert_int_equal(nz->numel, cut.nnz);
  /* 70% pruned: about 4900 kept per block of 16384 */
  assert_true(cut.nnz > 11000 && cut.nnz < 13000);
  static const int64_t at[][2] = {{0, 1}, {0, 7}, {3, 9}, {100, 5000}, {4890, 30}, {6000, 4000}, {-30, 30}, {0, -1}};
  for (size_t k = 0; k < sizeof at / sizeof *at; k++) {
    int64_t e0 = at[k][0] < 0 ? cut.nnz + at[k][0] : at[k][0], len = at[k][1] < 0 ? cut.nnz : at[k][1];
    assert_true(mil_value_read(nz, (size_t)e0 * 4, (size_t)len * 4, got));
    assert_memory_equal(got, eager + e0, (size_t)len * 4);
  }
  /* unaligned byte ranges, one element, the whole value */
  assert_true(mil_value_read(nz, 6, 10, got));
  assert_memory_equal(got, (uint8_t *)eager + 6, 10);
  assert_true(mil_value_get_f64(nz, cut.nnz - 1) == eager[cut.nnz - 1]);
  assert_memory_equal(mil_value_data(nz), eager, (size_t)cut.nnz * 4);
  free(w), free(eager), free(got), free(mb2);
  mil_program_free(p);
}

static void test_kmeans1d_optimal(void **state) {
  (void)state;
  /* two clear groups; weights pull the second centroid */
  double x[6] = {1, 2, 3, 10, 11, 12}, wt[6] = {1, 1, 1, 1, 1, 2};
  uint32_t cl[6];
  double cen[2];
  assert_true(cw_kmeans1d(x, wt, 6, 2, cl, cen));
  for (int i = 0; i < 6; i++) assert_int_equal(cl[i], i < 3 ? 0u : 1u);
  assert_true(fabs(cen[0] - 2.0) < 1e-12);
  assert_true(fabs(cen[1] - 45.0 / 4.0) < 1e-12);
  /* three clusters of [0, 1, 5, 6, 20]: {0, 1} {5, 6} {20} */
  double y[5] = {0, 1, 5, 6, 20}, one[5] = {1, 1, 1, 1, 1};
  uint32_t c3[5];
  double m3[3];
  assert_true(cw_kmeans1d(y, one, 5, 3, c3, m3));
  static const uint32_t want[5] = {0, 0, 1, 1, 2};
  for (int i = 0; i < 5; i++) assert_int_equal(c3[i], want[i]);
  assert_true(fabs(m3[0] - 0.5) < 1e-12 && fabs(m3[1] - 5.5) < 1e-12 && fabs(m3[2] - 20) < 1e-12);
}

static void test_weights_metadata(void **state) {
  (void)state;
  mil_program *p = parse(k_shared);
  mil_weight_meta *m = NULL;
  int32_t n = 0;
  mil_diag d = {0};
  assert_int_equal(mil_weights_metadata(p, 10, NULL, &m, &n, &d), MIL_OK);
  assert_int_equal(n, 1);
  assert_string_equal(m[0].name, "w");
  assert_int_equal(m[0].size, 32);
  assert_int_equal(m[0].unique_values, 8);
  assert_true(m[0].sparsity == 0);
  assert_int_equal(m[0].n_children, 2);
  mil_weight_meta_free(m, n);
  assert_int_equal(mil_weights_metadata(p, 33, NULL, &m, &n, &d), MIL_OK);
  assert_int_equal(n, 0);
  mil_weight_meta_free(m, n);
  mil_program_free(p);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_config_defaults),    cmocka_unit_test(test_config_errors),
      cmocka_unit_test(test_config_yaml),        cmocka_unit_test(test_lookup_and_conflict),
      cmocka_unit_test(test_decode_equals_fake), cmocka_unit_test(test_quantize_values),
      cmocka_unit_test(test_prune_percentile),   cmocka_unit_test(test_prune_streamed), cmocka_unit_test(test_prune_deferred),   cmocka_unit_test(test_kmeans1d_optimal),
      cmocka_unit_test(test_weights_metadata),   cmocka_unit_test(test_joint),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
