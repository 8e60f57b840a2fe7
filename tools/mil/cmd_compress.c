/* mil compress IN -o OUT: weight compression as coremltools.optimize.coreml
 * does it (linear_quantize_weights, palettize_weights, prune_weights,
 * decompress_weights): the compression pass with an OptimizationConfig
 * (from a YAML / JSON file or a quick form), then the default pipeline
 * without common::add_fp16_cast, as coremltools re-runs its pipeline on
 * the compressed program. Also `mil info --weights` (cli_print_weights). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif

#include "cli.h"
#include "load.h"
#include "mil/calibrate.h"
#include "mil/compress.h"
#include "mil/model.h"
#include "mil/ops.h"
#include "mil/passes.h"
#include "opt_summary.h"

static void help(void) {
  printf(
      "usage: mil compress IN -o OUT (--config FILE | QUICK FORM | --decompress) [options]\n"
      "       mil compress IN -o OUT --quantize-activations int8 --calibration-data DIR\n"
      "                    [--config FILE | QUICK FORM] [options]\n\n"
      "Compress the const weights of model IN (.mlpackage, .mlmodel or .mil) as\n"
      "coremltools.optimize.coreml does, then run the default pipeline (without\n"
      "common::add_fp16_cast) and write OUT (.mlpackage, .mlmodel, .mil, or -).\n\n"
      "  --config FILE            an OptimizationConfig in the form of from_dict /\n"
      "                           from_yaml (.yaml/.yml: YAML, otherwise JSON or YAML)\n"
      "quick forms (one of):\n"
      "  --quantize DTYPE         linear quantization to int8, uint8, int4 or uint4\n"
      "                           [--mode linear_symmetric|linear]\n"
      "                           [--granularity per_channel|per_tensor|per_block --block-size 32]\n"
      "  --palettize NBITS        palettization to 1, 2, 3, 4, 6 or 8 bits\n"
      "                           [--mode kmeans|uniform|unique]\n"
      "                           [--granularity per_tensor|per_grouped_channel --group-size 32]\n"
      "                           [--cluster-dim N] [--per-channel-scale]\n"
      "  --prune SPARSITY         magnitude pruning of that fraction [--block-size N --dim 0|1]\n"
      "  --prune-n-m N:M          n:m pruning [--dim 0|1]\n"
      "  --prune-threshold T      threshold pruning (|w| <= T)\n"
      "  --decompress             replace every constexpr op by its decompressed const\n"
      "activation quantization (coremltools' linear_quantize_activations; alone, or\n"
      "before a weight form: --quantize int8 --quantize-activations int8 is W8A8):\n"
      "  --quantize-activations int8\n"
      "                           calibrate on samples with the interpreter, then add\n"
      "                           quantize/dequantize pairs (raises the target to iOS17)\n"
      "  --calibration-data DIR   one subfolder per sample, holding <input>.npy for\n"
      "                           each model input (DIR/0/x.npy, DIR/1/x.npy, ...)\n"
      "  --activation-mode M      linear_symmetric (default) or linear\n"
      "options:\n"
      "  --weight-threshold N     compress weights of more than N elements (default 2048)\n"
      "  --target iOS16|iOS17|iOS18\n"
      "                           raise the minimum deployment target (the opset) first;\n"
      "                           without it, a program older than the compression needs\n"
      "                           (iOS16; iOS18 for int4, per_block, per_grouped_channel,\n"
      "                           vectors, per-channel scales, --joint) is raised to that,\n"
      "                           with a note\n"
      "  --joint                  joint compression of already compressed weights\n"
      "  --no-pipeline            run only the compression pass\n"
      "  --quiet                  print nothing but errors\n\n"
      "A run that compresses (or decompresses) no weight writes nothing and exits 1,\n"
      "saying why.\n");
}

typedef struct cargs {
  const char *in, *out, *config, *quantize, *palettize, *prune, *prune_nm, *prune_thr;
  const char *mode, *granularity, *target, *qact, *calib, *act_mode;
  long long block_size, group_size, cluster_dim, weight_threshold, dim;
  bool decompress, pcs, joint, no_pipeline, quiet;
} cargs;

static int parse_int(const char *flag, const char *s, long long *out) {
  char *end = NULL;
  *out = strtoll(s, &end, 10);
  if (!*s || *end) return cli_usage_error("compress", "%s needs an integer, got '%s'", flag, s);
  return CLI_OK;
}

static int parse_args(int argc, char **argv, cargs *a) {
  a->block_size = a->group_size = a->cluster_dim = a->weight_threshold = a->dim = -1;
  for (int i = 1; i < argc; i++) {
    const char *s = argv[i];
    const char **str = NULL;
    long long *num = NULL;
    if (cli_is_help(s)) {
      help();
      return -1;
    }
    if (!strcmp(s, "-o") || !strcmp(s, "--output")) str = &a->out;
    else if (!strcmp(s, "--config")) str = &a->config;
    else if (!strcmp(s, "--quantize")) str = &a->quantize;
    else if (!strcmp(s, "--palettize")) str = &a->palettize;
    else if (!strcmp(s, "--prune")) str = &a->prune;
    else if (!strcmp(s, "--prune-n-m")) str = &a->prune_nm;
    else if (!strcmp(s, "--prune-threshold")) str = &a->prune_thr;
    else if (!strcmp(s, "--mode")) str = &a->mode;
    else if (!strcmp(s, "--granularity")) str = &a->granularity;
    else if (!strcmp(s, "--target")) str = &a->target;
    else if (!strcmp(s, "--quantize-activations")) str = &a->qact;
    else if (!strcmp(s, "--calibration-data")) str = &a->calib;
    else if (!strcmp(s, "--activation-mode")) str = &a->act_mode;
    else if (!strcmp(s, "--block-size")) num = &a->block_size;
    else if (!strcmp(s, "--group-size")) num = &a->group_size;
    else if (!strcmp(s, "--cluster-dim")) num = &a->cluster_dim;
    else if (!strcmp(s, "--weight-threshold")) num = &a->weight_threshold;
    else if (!strcmp(s, "--dim")) num = &a->dim;
    else if (!strcmp(s, "--decompress")) a->decompress = true;
    else if (!strcmp(s, "--per-channel-scale")) a->pcs = true;
    else if (!strcmp(s, "--joint")) a->joint = true;
    else if (!strcmp(s, "--no-pipeline")) a->no_pipeline = true;
    else if (!strcmp(s, "--quiet") || !strcmp(s, "-q")) a->quiet = true;
    else if (s[0] == '-' && s[1]) return cli_usage_error("compress", "unknown option '%s'", s);
    else if (!a->in) a->in = s;
    else return cli_usage_error("compress", "unexpected argument '%s'", s);
    if (str || num) {
      if (i + 1 >= argc) return cli_usage_error("compress", "%s needs a value", s);
      if (str) *str = argv[++i];
      else if (parse_int(s, argv[++i], num) != CLI_OK) return CLI_USAGE;
    }
  }
  if (!a->in) return cli_usage_error("compress", "missing IN");
  if (!a->out) return cli_usage_error("compress", "missing -o OUT");
  int forms = !!a->config + !!a->quantize + !!a->palettize + !!a->prune + !!a->prune_nm + !!a->prune_thr + a->decompress;
  if (a->qact) {
    if (strcmp(a->qact, "int8") != 0)
      return cli_usage_error("compress", "--quantize-activations supports int8 only, got '%s'", a->qact);
    if (!a->calib) return cli_usage_error("compress", "--quantize-activations needs --calibration-data DIR");
    if (a->decompress) return cli_usage_error("compress", "--quantize-activations cannot be combined with --decompress");
    if (forms == 0) return CLI_OK;
  } else if (a->calib || a->act_mode)
    return cli_usage_error("compress", "--calibration-data and --activation-mode go with --quantize-activations");
  if (forms != 1)
    return cli_usage_error("compress", "give exactly one of --config, --quantize, --palettize, --prune, --prune-n-m, "
                                       "--prune-threshold, --decompress");
  return CLI_OK;
}

/* The quick form as an OptimizationConfig dictionary (validated later by
 * the config reader, which names any bad value). */
static char *quick_config(const cargs *a) {
  char buf[1024], extra[512] = "";
  size_t n = 0;
#define ADD(...) n += (size_t)snprintf(extra + n, sizeof extra - n, __VA_ARGS__)
  if (a->weight_threshold >= 0) ADD(", \"weight_threshold\": %lld", a->weight_threshold);
  if (a->mode) ADD(", \"mode\": \"%s\"", a->mode);
  if (a->granularity) ADD(", \"granularity\": \"%s\"", a->granularity);
  if (a->block_size >= 0) ADD(", \"block_size\": %lld", a->block_size);
  if (a->group_size >= 0) ADD(", \"group_size\": %lld", a->group_size);
  if (a->cluster_dim >= 0) ADD(", \"cluster_dim\": %lld", a->cluster_dim);
  if (a->dim >= 0) ADD(", \"dim\": %lld", a->dim);
  if (a->pcs) ADD(", \"enable_per_channel_scale\": true");
#undef ADD
  const char *type;
  char body[256];
  if (a->quantize) {
    type = "OpLinearQuantizerConfig";
    snprintf(body, sizeof body, "\"dtype\": \"%s\"", a->quantize);
  } else if (a->palettize) {
    type = "OpPalettizerConfig";
    bool unique = a->mode && !strcmp(a->mode, "unique");
    snprintf(body, sizeof body, "%s%s", unique ? "\"config_type\": \"OpPalettizerConfig\"" : "\"nbits\": ",
             unique ? "" : a->palettize);
  } else if (a->prune || a->prune_nm) {
    type = "OpMagnitudePrunerConfig";
    if (a->prune) snprintf(body, sizeof body, "\"target_sparsity\": %s", a->prune);
    else {
      char nm[64];
      snprintf(nm, sizeof nm, "%s", a->prune_nm);
      char *colon = strchr(nm, ':');
      if (!colon) return NULL;
      *colon = 0;
      snprintf(body, sizeof body, "\"n_m_ratio\": [%s, %s]", nm, colon + 1);
    }
  } else {
    type = "OpThresholdPrunerConfig";
    snprintf(body, sizeof body, "\"threshold\": %s", a->prune_thr);
  }
  snprintf(buf, sizeof buf, "{\"config_type\": \"%s\", \"global_config\": {%s%s}}", type, body, extra);
  return strdup(buf);
}

static const char *pass_for(const mil_compress_config *c, mil_diag *d) {
  mil_cfg_type t = MIL_CFG_NONE;
  int32_t total = 1 + c->n_op_type + c->n_op_name;
  for (int32_t i = 0; i < total; i++) {
    mil_cfg_type x = i == 0 ? c->global.type
                     : i <= c->n_op_type ? c->op_type[i - 1].cfg.type
                                         : c->op_name[i - 1 - c->n_op_type].cfg.type;
    if (x == MIL_CFG_THRESHOLD_PRUNER) x = MIL_CFG_MAGNITUDE_PRUNER;
    if (x == MIL_CFG_NONE) continue;
    if (t != MIL_CFG_NONE && x != t) {
      mil_diag_error(d, MIL_ERR_INVALID, "the config mixes quantization, palettization and pruning configs; "
                                         "compress in separate runs (joint compression)");
      return NULL;
    }
    t = x;
  }
  switch (t) {
  case MIL_CFG_LINEAR_QUANTIZER: return "compression::linear_quantize_weights";
  case MIL_CFG_PALETTIZER: return "compression::palettize_weights";
  case MIL_CFG_MAGNITUDE_PRUNER: return "compression::prune_weights";
  default: mil_diag_error(d, MIL_ERR_INVALID, "the config compresses nothing (every config is None)"); return NULL;
  }
}

/* Whether some config of c needs iOS18 ops. */
static bool needs_ios18(const mil_compress_config *c, bool joint) {
  int32_t total = 1 + c->n_op_type + c->n_op_name;
  for (int32_t i = 0; i < total; i++) {
    const mil_op_compress_config *x = i == 0                 ? &c->global
                                      : i <= c->n_op_type ? &c->op_type[i - 1].cfg
                                                          : &c->op_name[i - 1 - c->n_op_type].cfg;
    if (x->type == MIL_CFG_LINEAR_QUANTIZER &&
        (x->dtype == MIL_DT_INT4 || x->dtype == MIL_DT_UINT4 || x->granularity == MIL_GRAN_PER_BLOCK))
      return true;
    if (x->type == MIL_CFG_PALETTIZER &&
        (x->granularity == MIL_GRAN_PER_GROUPED_CHANNEL || x->cluster_dim > 1 || x->enable_per_channel_scale))
      return true;
  }
  return joint;
}

static int program_version(const mil_program *p) {
  int v = -1;
  for (int32_t f = 0; f < p->n_functions; f++) {
    int x = mil_opset_version(p->functions[f]->opset);
    if (v < 0 || x < v) v = x;
  }
  return v;
}

/* Raises every function's opset to `version` (an iOS16 program is a valid
 * iOS18 program: every op it uses has a variant there). */
static void raise_opset(mil_program *p, int version) {
  const char *name = mil_program_intern(p, mil_opset_name(version), (size_t)-1);
  for (int32_t f = 0; f < p->n_functions; f++) {
    mil_function *fn = p->functions[f];
    if (mil_opset_version(fn->opset) >= version) continue;
    for (int32_t s = 0; s < fn->n_specs; s++)
      if (fn->specs[s].opset == fn->opset) fn->specs[s].opset = name;
    fn->opset = name;
  }
}

static int target_version(const char *t) {
  static const struct {
    const char *name;
    int v;
  } k[] = {{"iOS16", MIL_IOS16}, {"iOS17", MIL_IOS17}, {"iOS18", MIL_IOS18}, {"iOS26", MIL_IOS26}};
  for (size_t i = 0; i < sizeof k / sizeof k[0]; i++)
    if (!strcmp(t, k[i].name)) return k[i].v;
  return -1;
}

static int64_t const_bytes(mil_program *p);
static int64_t largest_float_const(mil_program *p);
static int64_t count_constexpr(mil_program *p);

/* One stage: pass (with up to two options; a NULL key is skipped), then
 * the default pipeline without add_fp16_cast unless --no-pipeline.
 * *changed gets the pass's rewrites. */
static mil_status run_stage(const cargs *a, mil_program *p, const char *pass, const char *k1, const char *v1,
                            const char *k2, const char *v2, int64_t *changed, opt_progress *pg, mil_diag *d) {
  mil_pipeline *pl = NULL;
  mil_status st;
  if (a->no_pipeline) {
    st = mil_pipeline_new_from_list("compress", 1, &pass, &pl, d);
  } else {
    st = mil_pipeline_new("default", &pl, d);
    if (st == MIL_OK) st = mil_pipeline_insert(pl, 0, pass, d);
    if (st == MIL_OK) mil_pipeline_remove_pass(pl, "common::add_fp16_cast");
  }
  if (st == MIL_OK && k1) st = mil_pipeline_set_option(pl, pass, k1, v1, d);
  if (st == MIL_OK && k2) st = mil_pipeline_set_option(pl, pass, k2, v2, d);
  if (st == MIL_OK) {
    opt_progress_show(pg, "%s ...", pass);
    mil_pipeline_report rep;
    memset(&rep, 0, sizeof rep);
    st = mil_pipeline_run(pl, p, NULL, &rep, d);
    opt_progress_clear(pg);
    *changed = rep.n_records > 0 ? rep.records[0].changes : 0;
    mil_pipeline_report_free(&rep);
  }
  mil_pipeline_free(pl);
  return st;
}

int cmd_compress(int argc, char **argv) {
  double t0 = opt_now();
#ifdef __GLIBC__
  /* the per-weight work buffers (tens of MB each) are reused from the heap
   * instead of being mapped, zeroed and unmapped for every weight */
  mallopt(M_MMAP_THRESHOLD, 512 << 20);
  mallopt(M_TRIM_THRESHOLD, 512 << 20);
#endif
  cargs a;
  memset(&a, 0, sizeof a);
  int rc = parse_args(argc, argv, &a);
  if (rc != CLI_OK) return rc < 0 ? CLI_OK : rc;
  if (a.target && target_version(a.target) < 0)
    return cli_usage_error("compress", "--target must be iOS16, iOS17, iOS18 or iOS26, got '%s'", a.target);
  mil_diag d;
  mil_diag_init(&d);
  mil_compress_config *cfg = NULL;
  char *json = NULL;
  cli_loaded m;
  memset(&m, 0, sizeof m);
  opt_progress pg;
  opt_progress_init(&pg, stderr, !a.quiet);
  rc = CLI_FAIL;
  const char *pass = a.qact && !a.config && !a.quantize && !a.palettize && !a.prune && !a.prune_nm && !a.prune_thr
                         ? NULL
                         : "compression::WeightDecompressor";
  static const char *const kact = "compression::linear_quantize_activations";
  char act_json[160];
  snprintf(act_json, sizeof act_json,
           "{\"config_type\": \"OpLinearQuantizerConfig\", \"global_config\": {\"mode\": \"%s\", \"dtype\": \"int8\"}}",
           a.act_mode ? a.act_mode : "linear_symmetric");
  if (pass && !a.decompress) {
    mil_status st;
    if (a.config) {
      st = mil_compress_config_load(a.config, MIL_CFG_NONE, &cfg, &d);
    } else {
      char *q = quick_config(&a);
      if (!q) {
        rc = cli_usage_error("compress", "--prune-n-m needs N:M, got '%s'", a.prune_nm);
        goto out;
      }
      st = mil_compress_config_from_json(q, (size_t)-1, "quick form", MIL_CFG_NONE, &cfg, &d);
      free(q);
    }
    if (st != MIL_OK || !(pass = pass_for(cfg, &d))) goto out;
    if (!(json = mil_compress_config_to_json(cfg))) goto out;
  }
  opt_progress_show(&pg, "loading %s ...", a.in);
  mil_status lst = cli_load_any(a.in, &m, &d);
  opt_progress_clear(&pg);
  if (lst != MIL_OK) goto out;
  int have = program_version(m.program), want = a.target ? target_version(a.target) : -1;
  if (want < 0 && cfg && needs_ios18(cfg, a.joint) && have < MIL_IOS18) {
    want = MIL_IOS18;
    if (!a.quiet)
      fprintf(stderr, "mil: note: raising the deployment target from %s to iOS18 (%s), which this compression needs\n",
              mil_opset_target_name(have), mil_opset_name(MIL_IOS18));
  }
  if (want >= 0 && want < have && !a.quiet) /* --target only raises: say that it did nothing */
    fprintf(stderr, "mil: note: --target %s leaves the program at %s (%s): a deployment target is only raised\n",
            a.target, mil_opset_target_name(have), mil_opset_name(have));
  if (want < 0 && cfg && have < MIL_IOS16) {
    /* constexpr_affine_dequantize, constexpr_lut_to_dense and
     * constexpr_sparse_to_dense are iOS16 ops: coremltools asks for
     * minimum_deployment_target >= iOS16; an older program (an iOS15
     * conversion) would have nothing compressed */
    want = MIL_IOS16;
    if (!a.quiet)
      fprintf(stderr, "mil: note: raising the deployment target from %s to iOS16 (%s), which this compression's "
              "constexpr ops need\n", mil_opset_target_name(have), mil_opset_name(MIL_IOS16));
  }
  if (a.qact && have < MIL_IOS17 && want < MIL_IOS17) {
    want = MIL_IOS17;
    if (!a.quiet)
      fprintf(stderr, "mil: note: raising the deployment target from %s to iOS17 (%s), which activation quantization "
                      "(quantize, dequantize) needs\n",
              mil_opset_target_name(have), mil_opset_name(MIL_IOS17));
  }
  if (want > have) {
    raise_opset(m.program, want);
    if (m.model && mil_model_set_spec_version(m.model, mil_spec_version_for_opset(mil_opset_name(want))) != MIL_OK)
      goto out;
  }
  int64_t bytes_before = const_bytes(m.program);
  /* each compression stage as coremltools' _apply_graph_pass: the pass,
   * then DEFAULT without add_fp16_cast; W8A8 is two stages (activations,
   * then weights), with the builder's name counts starting again from 0
   * for the second as for a model saved and loaded in between */
  int64_t changed = 0, wchanged = 0;
  mil_status st = MIL_OK;
  if (a.qact) {
    /* calibrate on the samples (the interpreter), then the pass with the ranges */
    mil_calibrator *cal = NULL;
    char *stats = NULL;
    opt_progress_show(&pg, "calibrating on %s ...", a.calib);
    st = mil_calibrator_new(m.program, &cal, &d);
    if (st == MIL_OK) st = mil_calibrator_add_dir(cal, a.calib, &d);
    if (st == MIL_OK && !(stats = mil_calibrator_stats_json(cal))) st = mil_diag_error(&d, MIL_ERR_NOMEM, "out of memory");
    mil_calibrator_free(cal);
    opt_progress_clear(&pg);
    if (st == MIL_OK)
      st = run_stage(&a, m.program, kact, "config", act_json, "activation_stats", stats, &changed, &pg, &d);
    free(stats);
    if (st == MIL_OK && pass) mil_program_name_counts_reset(m.program);
  }
  if (st == MIL_OK && pass)
    st = run_stage(&a, m.program, pass, json ? "config" : NULL, json, json ? "joint_compression" : NULL,
                   a.joint ? "true" : "false", a.qact ? &wchanged : &changed, &pg, &d);
  if (st != MIL_OK) goto out;
  if (changed == 0) {
    /* nothing done: no output, exit 1 with the reason */
    if (a.qact) pass = kact; /* the stage that did nothing */
    bool warned = false;
    for (size_t i = 0; i < d.count; i++)
      if (d.msgs[i].severity == MIL_SEV_WARNING && !strncmp(d.msgs[i].text, "compression::", 13)) {
        fprintf(stderr, "mil: warning: %s\n", d.msgs[i].text);
        warned = true;
      }
    int64_t largest = largest_float_const(m.program);
    long long thr = cfg && cfg->global.has_weight_threshold ? (long long)cfg->global.weight_threshold : -1;
    if (a.decompress)
      fprintf(stderr, "mil: error: compress: %s has no compressed weight (no constexpr op) to decompress; %s not "
              "written\n", a.in, a.out);
    else if (!a.joint && count_constexpr(m.program) > 0)
      fprintf(stderr, "mil: error: compress: %s compressed no weight: the weights of %s are already compressed (%lld "
              "constexpr ops); --joint compresses them again (joint compression); %s not written\n", pass, a.in,
              (long long)count_constexpr(m.program), a.out);
    else if (warned)
      fprintf(stderr, "mil: error: compress: %s compressed no weight (see the warnings above); %s not written\n",
              pass, a.out);
    else if (thr >= 0 && largest <= thr)
      fprintf(stderr, "mil: error: compress: %s compressed no weight: the largest float const weight of %s has %lld "
              "elements, and only weights of more than weight_threshold = %lld elements are compressed (lower it "
              "with --weight-threshold); %s not written\n", pass, a.in, (long long)largest, thr, a.out);
    else
      fprintf(stderr, "mil: error: compress: %s compressed no weight: no const weight of %s is selected by the "
              "config (op_type_configs / op_name_configs set to null, or no float weight of more than "
              "weight_threshold elements); %s not written\n", pass, a.in, a.out);
    mil_diag_clear(&d); /* reported above */
    goto out;
  }
  int64_t bytes_after = const_bytes(m.program);
  if (strcmp(a.out, "-") != 0) opt_progress_show(&pg, "writing %s ...", a.out);
  st = cli_write_output(a.out, a.in, &m, false, &d);
  opt_progress_clear(&pg);
  if (st != MIL_OK) goto out;
  if (!a.quiet && a.qact)
    fprintf(stderr, "%s: %lld quantize/dequantize rewrites\n", kact, (long long)changed);
  if (a.qact) changed = wchanged;
  if (!a.quiet && pass)
    fprintf(stderr, "%s: %lld weights %s; const bytes %.2f MB -> %.2f MB (%.2fx) in %.2f s\n", pass,
            (long long)changed, a.decompress ? "decompressed" : "compressed", bytes_before / 1e6, bytes_after / 1e6,
            bytes_after ? (double)bytes_before / (double)bytes_after : 0.0, opt_now() - t0);
  if (!a.quiet)
    opt_print_written(stderr, a.out, m.program, m.model ? mil_model_spec_version(m.model) : 0, opt_now() - t0);
  rc = CLI_OK;
out:
  opt_progress_clear(&pg);
  if (rc != CLI_OK) cli_print_diag(&d);
  else if (!a.quiet) /* the compression pass's own warnings (weights skipped) */
    for (size_t i = 0; i < d.count; i++)
      if (d.msgs[i].severity == MIL_SEV_WARNING && !strncmp(d.msgs[i].text, "compression::", 13))
        fprintf(stderr, "mil: warning: %s\n", d.msgs[i].text);
  cli_unload(&m);
  mil_compress_config_free(cfg);
  free(json);
  mil_diag_clear(&d);
  return rc;
}

/* Bytes of every const value (constexpr inputs included). */
static int visit_bytes(mil_op *op, void *ud) {
  if (mil_op_is_const(op) && op->n_outputs == 1 && op->outputs[0]->val)
    *(int64_t *)ud += (int64_t)op->outputs[0]->val->nbytes;
  return 0;
}

static int64_t const_bytes(mil_program *p) {
  int64_t n = 0;
  mil_program_walk(p, visit_bytes, &n);
  return n;
}

/* constexpr_* ops of the program (compressed weights). */
static int visit_constexpr(mil_op *op, void *ud) {
  if (!strncmp(op->type, "constexpr_", 10)) ++*(int64_t *)ud;
  return 0;
}

static int64_t count_constexpr(mil_program *p) {
  int64_t n = 0;
  mil_program_walk(p, visit_constexpr, &n);
  return n;
}

/* Elements of the largest fp16 / fp32 const tensor. */
static int visit_largest(mil_op *op, void *ud) {
  if (mil_op_is_const(op) && op->n_outputs == 1 && op->outputs[0]->val) {
    const mil_value *v = op->outputs[0]->val;
    if (v->type && v->type->kind == MIL_TYPE_TENSOR && (v->type->dtype == MIL_DT_FP16 || v->type->dtype == MIL_DT_FP32) &&
        v->numel > *(int64_t *)ud)
      *(int64_t *)ud = v->numel;
  }
  return 0;
}

static int64_t largest_float_const(mil_program *p) {
  int64_t n = 0;
  mil_program_walk(p, visit_largest, &n);
  return n;
}

int cli_print_weights(mil_program *p, long long weight_threshold) {
  mil_diag d;
  mil_diag_init(&d);
  mil_weight_meta *m = NULL;
  int32_t n = 0;
  opt_progress pg;
  opt_progress_init(&pg, stderr, true);
  if (mil_weights_metadata(p, weight_threshold, pg.active ? stderr : NULL, &m, &n, &d) != MIL_OK) {
    cli_print_diag(&d);
    mil_diag_clear(&d);
    return CLI_FAIL;
  }
  printf("%d weights of at least %lld elements\n", n, weight_threshold);
  for (int32_t i = 0; i < n; i++) {
    char ty[256];
    mil_type_to_string(m[i].type, ty, sizeof ty);
    printf("%s\n  type: %s\n  size: %lld\n  sparsity: %.6g\n  unique_values: %lld\n  child_ops:", m[i].name, ty,
           (long long)m[i].size, m[i].sparsity, (long long)m[i].unique_values);
    for (int32_t k = 0; k < m[i].n_children; k++) printf(" %s(name=%s)", m[i].children[k]->type, m[i].children[k]->name);
    printf("\n");
  }
  mil_weight_meta_free(m, n);
  mil_diag_clear(&d);
  return fflush(stdout) == 0 ? CLI_OK : CLI_FAIL;
}
