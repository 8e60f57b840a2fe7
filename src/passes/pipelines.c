/* Named pass pipelines and the editable mil_pipeline object.
 *
 * The pass lists are coremltools' (passes/pass_pipeline.py: _COMMON_PASSES,
 * _CLEANUP_PASSES and the frontend / backend / compression lists), copied in
 * order; the comments give the ordering constraints. coremltools' DEFAULT is
 * _COMMON_PASSES + _CLEANUP_PASSES, which includes add_fp16_cast and
 * add_int16_cast: that is the pipeline an fp16-precision conversion runs.
 * coremltools' converter drops those two passes when the compute precision
 * is fp32 (the other sequence recorded in the golden corpus), which is
 * `mil opt --compute-precision fp32` / mil_pipeline_remove_pass.
 */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "mil/passes.h"
#include "passes/pass_internal.h"

#define C(n) "common::" #n

/* The common optimization passes (coremltools' _COMMON_PASSES). */
static const char *const k_common[] = {
    C(lower_complex_dialect_ops),
    C(update_output_dtypes),
    C(cast_optimization),
    C(noop_elimination),
    /* Quantization passes start with canonicalizations: ops that accept ints
     * need no dequantize -> op -> quantize sandwich, and zero points are made
     * canonical before anything looks at them. */
    C(int_op_canonicalization),
    C(nullify_redundant_quantization_zero_point),
    /* With canonical quantization patterns, redundant pairs can be removed
     * before any other quantization rewrite. */
    C(dequantize_quantize_pair_elimination),
    C(distributive_quantized_binary_op_scale_normalization),
    /* Const dequantize becomes a constexpr last among the quantization passes
     * (constexprs are not optimized further) and before const_elimination
     * (which would otherwise materialize the dequantized, larger weights). */
    C(dequantize_to_constexpr),
    C(canonicalize_quantized_lut_pattern),
    C(const_elimination),
    C(sanitize_input_output_names),
    C(divide_to_multiply),
    C(select_optimization),
    C(add_conv_transpose_output_shape),
    C(const_elimination),
    /* Deduplicate once the consts have settled. */
    C(const_deduplication),
    C(loop_invariant_elimination),
    C(remove_symbolic_reshape),
    C(noop_elimination),
    C(fuse_matmul_weight_bias),
    C(fuse_linear_bias),
    C(fuse_gelu_tanh_approximation),
    C(fuse_gelu_exact),
    C(fuse_gelu_sigmoid_approximation),
    C(fuse_leaky_relu),
    C(rank0_expand_dims_swap),
    C(fuse_squeeze_expand_dims),
    /* conv1d is composed before every other conv pass sees the pattern. */
    C(compose_conv1d),
    C(use_reflection_padding),
    /* use_reflection_padding introduces new pads that can then merge. */
    C(merge_consecutive_paddings),
    /* Pads fold into convs only after consecutive pads have been merged. */
    C(fuse_pad_conv),
    C(image_input_preprocess),
    /* replace_stack_reshape may create concats, so it precedes
     * detect_concat_interleave. */
    C(replace_stack_reshape),
    C(reduce_transposes),
    C(fuse_dilated_conv),
    C(fuse_conv_scale),
    C(fuse_conv_bias),
    C(fuse_onehot_matmul_to_gather),
    /* Instance norm is recognizable only once reduce_transposes has run. */
    C(fuse_layernorm_or_instancenorm),
    /* Both of these look at what layer/instance-norm fusion left behind. */
    C(fuse_elementwise_to_batchnorm),
    C(fuse_reduce_mean),
    /* Needs the batch_norms that fuse_elementwise_to_batchnorm creates. */
    C(fuse_conv_batchnorm),
    /* A conv that absorbed a batch_norm may now absorb a scale or bias ... */
    C(fuse_conv_scale),
    C(fuse_conv_bias),
    /* ... and after those, a following batch_norm again. */
    C(fuse_conv_batchnorm),
    C(detect_concat_interleave),
    /* Needs the concat patterns of detect_concat_interleave and
     * replace_stack_reshape. */
    C(concat_to_pixel_shuffle),
    /* reduce_transposes runs both before this pass and after it (the second
     * time in the cleanup stage). */
    C(fuse_prelu),
    C(prelu_to_lrelu),
    C(merge_consecutive_relus),
    C(merge_consecutive_reshapes),
    C(merge_consecutive_transposes),
    C(fuse_transpose_matmul),
    /* Consecutive transposes must be merged before high-rank ones are
     * expanded. */
    C(expand_high_rank_reshape_and_transpose),
    C(fuse_stack_split),
    C(reduce_transposes),
    /* Redundant ops are removed late: reduce_transposes and the norm fusions
     * leave duplicate transposes / subs behind. */
    C(remove_redundant_ops),
    /* Names must be unique before add_fp16_cast uses its name cache. */
    C(dedup_op_and_var_names),
    /* The two casts below exist only in fp16 compute precision. */
    C(add_fp16_cast),
    C(add_int16_cast),
    /* Output dtypes must be fixed again after the casts were inserted. */
    C(update_output_dtypes),
    /* After add_int16_cast could switch indices to unsigned types, the
     * remaining signed gather indices are guarded. */
    C(guard_negative_gather_indices),
    C(const_elimination),
    C(dead_code_elimination),
    C(cast_optimization),
    /* Casts made redundant by cast_optimization become dead. */
    C(dead_code_elimination),
    /* guard_negative_gather_indices may add int32 casts that go back to int16. */
    C(add_int16_cast),
    C(const_elimination),
    C(dead_code_elimination),
    C(cast_optimization),
    C(dead_code_elimination),
    C(const_elimination),
    /* State ops are introduced once every fusion has settled, starting with
     * the canonical in-place form. */
    C(canonicalize_inplace_pattern),
    C(prefer_state_in_downstream),
    C(const_elimination),
    C(dead_code_elimination),
};

/* The cleanup passes (coremltools' _CLEANUP_PASSES). */
static const char *const k_cleanup[] = {
    C(dead_code_elimination),
    C(const_elimination),
    C(cast_optimization),
    /* cast_optimization leaves dead casts. */
    C(dead_code_elimination),
    C(const_elimination),
    C(const_deduplication),
    /* Dead consts go before dequantize merging looks at use counts. */
    C(dead_code_elimination),
    /* Runs on deduplicated, live consts. */
    C(merge_affine_dequantize_with_consecutive_ops),
    /* A linear whose weight or bias did not merge into a constexpr is split
     * into matmul + add. */
    C(expand_dynamic_linear),
    /* Transposes made in the hope of a linear can fuse back into matmul. */
    C(fuse_transpose_matmul),
    /* Transposes fused away are now dead. */
    C(dead_code_elimination),
    /* Merging and expanding may have created new duplicate consts. */
    C(const_deduplication),
    C(loop_invariant_elimination),
    C(noop_elimination),
    C(dedup_op_and_var_names),
    /* fuse_layernorm_or_instancenorm can add transposes. */
    C(reduce_transposes),
    C(remove_redundant_ops),
    C(topological_reorder),
    C(dead_code_elimination),
};

static const char *const k_palettization[] = {"compression::palettize_weights"};
static const char *const k_sparsification[] = {"compression::prune_weights"};

static const char *const k_frontend_torch[] = {
    C(dead_code_elimination),
    C(loop_invariant_elimination),
    C(dead_code_elimination),
    "torch::torch_upsample_to_core_upsample",
    "torch::torch_tensor_assign_to_core",
};

static const char *const k_frontend_tf1[] = {
    C(dead_code_elimination),
    C(loop_invariant_elimination),
    "tensorflow::backfill_make_list_elem_type",
    /* Dead-code elimination trims tf_lstm_block outputs so the LSTM rewrite
     * sees the SSA form it expects. */
    C(dead_code_elimination),
    /* The TF LSTM is converted before it is expanded. */
    "tensorflow::tf_lstm_to_core_lstm",
    "tensorflow::expand_tf_lstm",
};

static const char *const k_frontend_tf2[] = {
    C(dead_code_elimination),
    C(loop_invariant_elimination),
    /* Vacuous conds go before list element types are backfilled. */
    "tensorflow2::remove_vacuous_cond",
    "tensorflow::backfill_make_list_elem_type",
    C(dead_code_elimination),
    "tensorflow::tf_lstm_to_core_lstm",
    "tensorflow::expand_tf_lstm",
};

static const char *const k_backend_mlprogram[] = {
    C(const_elimination),
    "mil_backend::adjust_io_to_supported_types",
    "mil_backend::insert_image_preprocessing_ops",
    "mil_backend::fuse_activation_silu",
    "mil_backend::fuse_pow2_sqrt",
    "mil_backend::decompose_const_base2_pow",
    /* rank0_expand_dims_swap may have introduced new const tensors. */
    C(const_elimination),
    C(const_deduplication),
    C(cast_optimization),
    C(dead_code_elimination),
    "mil_backend::sanitize_name_strings",
    C(dedup_op_and_var_names),
    /* Unused inputs are handled after dead-code elimination. */
    "nn_backend::handle_unused_inputs",
};

static const char *const k_backend_nn[] = {
    /* conv1d is decomposed first thing. */
    "nn_backend::decompose_conv1d",
    "nn_backend::commingle_loop_vars",
    "nn_backend::handle_return_inputs_as_outputs",
    C(const_elimination),
    C(const_deduplication),
    /* Late, after the passes that leave redundant ops behind. */
    C(remove_redundant_ops),
    C(dead_code_elimination),
    "nn_backend::handle_unused_inputs",
    /* Must be the very last pass. */
    "nn_backend::alert_return_type_cast",
};

typedef struct list_ref {
  const char *const *names;
  int32_t n;
} list_ref;
#define L(a) {a, (int32_t)(sizeof a / sizeof a[0])}
#define NONE {NULL, 0}

typedef struct pipeline_def {
  const char *name;
  list_ref parts[3]; /* concatenated in order */
  /* options set by the predefined pipeline: pass, key, JSON value */
  const char *opt_pass, *opt_key, *opt_value;
} pipeline_def;

/* coremltools' _PIPELINE_NAME_TO_PASSES, in its order, plus default_pruning.
 * default_palettization / default_pruning carry the compression configs
 * that coremltools' DEFAULT_PALETTIZATION / DEFAULT_PRUNING set
 * (OpPalettizerConfig(mode="unique"), OpThresholdPrunerConfig(threshold=1e-12)). */
static const pipeline_def k_pipelines[] = {
    {"default", {L(k_common), L(k_cleanup), NONE}, NULL, NULL, NULL},
    {"cleanup", {L(k_cleanup), NONE, NONE}, NULL, NULL, NULL},
    {"default_palettization",
     {L(k_palettization), L(k_common), L(k_cleanup)},
     "compression::palettize_weights",
     "config",
     "{\"global_config\": {\"mode\": \"unique\"}}"},
    {"default_sparsification", {L(k_sparsification), L(k_common), L(k_cleanup)}, NULL, NULL, NULL},
    {"empty", {NONE, NONE, NONE}, NULL, NULL, NULL},
    {"frontend_milinternal", {NONE, NONE, NONE}, NULL, NULL, NULL},
    {"frontend_pytorch", {L(k_frontend_torch), NONE, NONE}, NULL, NULL, NULL},
    {"frontend_tensorflow", {L(k_frontend_tf1), NONE, NONE}, NULL, NULL, NULL},
    {"frontend_tensorflow2", {L(k_frontend_tf2), NONE, NONE}, NULL, NULL, NULL},
    {"backend_mlprogram", {L(k_backend_mlprogram), NONE, NONE}, NULL, NULL, NULL},
    {"backend_neuralnetwork", {L(k_backend_nn), NONE, NONE}, NULL, NULL, NULL},
    {"backend_milinternal", {NONE, NONE, NONE}, NULL, NULL, NULL},
    {"default_pruning",
     {L(k_sparsification), L(k_common), L(k_cleanup)},
     "compression::prune_weights",
     "config",
     "{\"global_config\": {\"threshold\": 1e-12}}"},
};
#define N_PIPELINES (sizeof k_pipelines / sizeof k_pipelines[0])

size_t mil_pipeline_name_count(void) { return N_PIPELINES; }

const char *mil_pipeline_name_at(size_t i) { return i < N_PIPELINES ? k_pipelines[i].name : NULL; }

/* ---------- the pipeline object ---------- */

typedef struct pl_opt {
  const char *pass; /* full name, static */
  char *key;
  char *value;      /* text; NULL for a selector */
  mil_op_selector sel;
  void *sel_ud;
} pl_opt;

typedef struct pl_cache {
  const mil_pass_def *def; /* the declaration the options were built from */
  mil_pass_options *opts;
} pl_cache;

struct mil_pipeline {
  char *name;
  int32_t n, cap;
  const char **passes; /* full names with static storage (pass defs) */
  int32_t n_opts, cap_opts;
  pl_opt *opts;
  int32_t n_cache;
  pl_cache *cache;
};

static void drop_cache(mil_pipeline *pl) {
  for (int32_t i = 0; i < pl->n_cache; i++) mil_pass_options_free(pl->cache[i].opts);
  free(pl->cache);
  pl->cache = NULL;
  pl->n_cache = 0;
}

void mil_pipeline_free(mil_pipeline *pl) {
  if (!pl) return;
  drop_cache(pl);
  for (int32_t i = 0; i < pl->n_opts; i++) {
    free(pl->opts[i].key);
    free(pl->opts[i].value);
  }
  free(pl->opts);
  free(pl->passes);
  free(pl->name);
  free(pl);
}

static mil_pipeline *pl_alloc(const char *name) {
  mil_pipeline *pl = calloc(1, sizeof *pl);
  if (!pl) return NULL;
  pl->name = strdup(name ? name : "custom");
  if (!pl->name) {
    free(pl);
    return NULL;
  }
  return pl;
}

static mil_status unknown_pass(const char *name, mil_diag *d) {
  return mil_diag_error(d, MIL_ERR_NOT_FOUND, "the pass '%s' is not a known pass (see `mil passes`)", name);
}

static mil_status pl_insert(mil_pipeline *pl, int32_t index, const char *pass, mil_diag *d) {
  const mil_pass_def *def = mil_pass_lookup(pass);
  if (!def) return unknown_pass(pass, d);
  if (index < 0 || index > pl->n)
    return mil_diag_error(d, MIL_ERR_INVALID, "pipeline '%s': index %d is out of range 0..%d", pl->name, index, pl->n);
  if (pl->n == pl->cap) {
    int32_t cap = pl->cap ? pl->cap * 2 : 16;
    const char **np = realloc(pl->passes, (size_t)cap * sizeof *np);
    if (!np) return MIL_ERR_NOMEM;
    pl->passes = np;
    pl->cap = cap;
  }
  memmove(pl->passes + index + 1, pl->passes + index, (size_t)(pl->n - index) * sizeof *pl->passes);
  pl->passes[index] = def->name;
  pl->n++;
  return MIL_OK;
}

mil_status mil_pipeline_new_from_list(const char *name, int32_t n, const char *const *passes, mil_pipeline **out,
                                      mil_diag *d) {
  *out = NULL;
  mil_pipeline *pl = pl_alloc(name);
  if (!pl) return MIL_ERR_NOMEM;
  for (int32_t i = 0; i < n; i++) {
    mil_status st = pl_insert(pl, pl->n, passes[i], d);
    if (st != MIL_OK) {
      mil_pipeline_free(pl);
      return st;
    }
  }
  *out = pl;
  return MIL_OK;
}

static bool eq_nocase(const char *a, const char *b) {
  for (; *a && *b; a++, b++)
    if (tolower((unsigned char)*a) != tolower((unsigned char)*b)) return false;
  return *a == *b;
}

mil_status mil_pipeline_new(const char *name, mil_pipeline **out, mil_diag *d) {
  *out = NULL;
  const pipeline_def *def = NULL;
  for (size_t i = 0; i < N_PIPELINES; i++)
    if (name && eq_nocase(name, k_pipelines[i].name)) def = &k_pipelines[i];
  if (!def) {
    char list[512];
    size_t len = 0;
    for (size_t i = 0; i < N_PIPELINES && len < sizeof list; i++)
      len += (size_t)snprintf(list + len, sizeof list - len, "%s%s", i ? ", " : "", k_pipelines[i].name);
    return mil_diag_error(d, MIL_ERR_NOT_FOUND, "there is no pipeline '%s'; available pipelines: %s",
                          name ? name : "(null)", list);
  }
  mil_pipeline *pl = pl_alloc(def->name);
  if (!pl) return MIL_ERR_NOMEM;
  for (int k = 0; k < 3; k++)
    for (int32_t i = 0; i < def->parts[k].n; i++) {
      mil_status st = pl_insert(pl, pl->n, def->parts[k].names[i], d);
      if (st != MIL_OK) { /* a table entry missing from the catalog is a bug */
        mil_pipeline_free(pl);
        return st;
      }
    }
  if (def->opt_pass) {
    mil_status st = mil_pipeline_set_option(pl, def->opt_pass, def->opt_key, def->opt_value, d);
    if (st != MIL_OK) {
      mil_pipeline_free(pl);
      return st;
    }
  }
  *out = pl;
  return MIL_OK;
}

const char *mil_pipeline_name(const mil_pipeline *pl) { return pl->name; }
int32_t mil_pipeline_n_passes(const mil_pipeline *pl) { return pl->n; }
const char *mil_pipeline_pass_at(const mil_pipeline *pl, int32_t i) {
  return i >= 0 && i < pl->n ? pl->passes[i] : NULL;
}

mil_status mil_pipeline_append(mil_pipeline *pl, const char *pass, mil_diag *d) {
  return pl_insert(pl, pl->n, pass, d);
}

mil_status mil_pipeline_insert(mil_pipeline *pl, int32_t index, const char *pass, mil_diag *d) {
  return pl_insert(pl, index, pass, d);
}

mil_status mil_pipeline_remove_at(mil_pipeline *pl, int32_t index, mil_diag *d) {
  if (index < 0 || index >= pl->n)
    return mil_diag_error(d, MIL_ERR_INVALID, "pipeline '%s': index %d is out of range 0..%d", pl->name, index,
                          pl->n - 1);
  memmove(pl->passes + index, pl->passes + index + 1, (size_t)(pl->n - index - 1) * sizeof *pl->passes);
  pl->n--;
  return MIL_OK;
}

int32_t mil_pipeline_remove_pass(mil_pipeline *pl, const char *pass) {
  int32_t k = 0, removed = 0;
  for (int32_t i = 0; i < pl->n; i++) {
    if (pass_name_matches(pass, pl->passes[i])) removed++;
    else pl->passes[k++] = pl->passes[i];
  }
  pl->n = k;
  return removed;
}

/* Stores (pass, key) -> value, replacing an earlier value. */
static mil_status store_opt(mil_pipeline *pl, const char *pass, const char *key, const char *value,
                            mil_op_selector sel, void *ud) {
  pl_opt *o = NULL;
  for (int32_t i = 0; i < pl->n_opts; i++)
    if (strcmp(pl->opts[i].pass, pass) == 0 && strcmp(pl->opts[i].key, key) == 0) o = &pl->opts[i];
  char *v = value ? strdup(value) : NULL;
  if (value && !v) return MIL_ERR_NOMEM;
  if (!o) {
    if (pl->n_opts == pl->cap_opts) {
      int32_t cap = pl->cap_opts ? pl->cap_opts * 2 : 8;
      pl_opt *no = realloc(pl->opts, (size_t)cap * sizeof *no);
      if (!no) {
        free(v);
        return MIL_ERR_NOMEM;
      }
      pl->opts = no;
      pl->cap_opts = cap;
    }
    o = &pl->opts[pl->n_opts];
    memset(o, 0, sizeof *o);
    if (!(o->key = strdup(key))) {
      free(v);
      return MIL_ERR_NOMEM;
    }
    o->pass = pass;
    pl->n_opts++;
  }
  free(o->value);
  o->value = v;
  o->sel = sel;
  o->sel_ud = ud;
  drop_cache(pl);
  return MIL_OK;
}

mil_status mil_pipeline_set_option(mil_pipeline *pl, const char *pass, const char *key, const char *value,
                                   mil_diag *d) {
  const mil_pass_def *def = mil_pass_lookup(pass);
  if (!def) return unknown_pass(pass, d);
  if (!value) value = "null";
  mil_status st = pass_option_check(def, key, value, d);
  if (st != MIL_OK) return st;
  return store_opt(pl, def->name, key, value, NULL, NULL);
}

mil_status mil_pipeline_set_options_json(mil_pipeline *pl, const char *pass, const char *json, mil_diag *d) {
  cJSON *j = cJSON_Parse(json);
  if (!j || !cJSON_IsObject(j)) {
    cJSON_Delete(j);
    return mil_diag_error(d, MIL_ERR_PARSE, "options of pass '%s': expected a JSON object, got '%.80s'", pass, json);
  }
  mil_status st = MIL_OK;
  const cJSON *it;
  cJSON_ArrayForEach(it, j) {
    char *text = cJSON_PrintUnformatted(it);
    if (!text) {
      st = MIL_ERR_NOMEM;
      break;
    }
    st = mil_pipeline_set_option(pl, pass, it->string, text, d);
    free(text);
    if (st != MIL_OK) break;
  }
  cJSON_Delete(j);
  return st;
}

mil_status mil_pipeline_set_selector(mil_pipeline *pl, const char *pass, const char *key, mil_op_selector fn,
                                     void *ud, mil_diag *d) {
  const mil_pass_def *def = mil_pass_lookup(pass);
  if (!def) return unknown_pass(pass, d);
  mil_pass_options *tmp = mil_pass_options_new(def);
  if (!tmp) return MIL_ERR_NOMEM;
  mil_status st = mil_pass_options_set_selector(tmp, key, fn, ud, d);
  mil_pass_options_free(tmp);
  if (st != MIL_OK) return st;
  return store_opt(pl, def->name, key, NULL, fn, ud);
}

const mil_pass_options *mil_pipeline_options(mil_pipeline *pl, const char *pass) {
  const mil_pass_def *def = mil_pass_lookup(pass);
  if (!def) return NULL;
  for (int32_t i = 0; i < pl->n_cache; i++)
    if (pl->cache[i].def == def) return pl->cache[i].opts;
  mil_pass_options *o = mil_pass_options_new(def);
  if (!o) return NULL;
  for (int32_t i = 0; i < pl->n_opts; i++) {
    const pl_opt *po = &pl->opts[i];
    if (strcmp(po->pass, def->name) != 0) continue;
    mil_status st = po->value ? mil_pass_options_set(o, po->key, po->value, NULL)
                              : mil_pass_options_set_selector(o, po->key, po->sel, po->sel_ud, NULL);
    if (st != MIL_OK) { /* checked when stored; only out of memory is left */
      mil_pass_options_free(o);
      return NULL;
    }
  }
  pl_cache *nc = realloc(pl->cache, (size_t)(pl->n_cache + 1) * sizeof *nc);
  if (!nc) {
    mil_pass_options_free(o);
    return NULL;
  }
  pl->cache = nc;
  pl->cache[pl->n_cache].def = def;
  pl->cache[pl->n_cache].opts = o;
  pl->n_cache++;
  return o;
}

mil_status mil_pipeline_validate(const mil_pipeline *pl, mil_diag *d) {
  /* every pass implemented: one message listing each missing pass once */
  size_t cap = 1;
  for (int32_t i = 0; i < pl->n; i++) cap += strlen(pl->passes[i]) + 2;
  char *missing = malloc(cap);
  if (!missing) return mil_diag_error(d, MIL_ERR_NOMEM, "out of memory");
  size_t len = 0;
  missing[0] = 0;
  int32_t n_missing = 0;
  for (int32_t i = 0; i < pl->n; i++) {
    if (mil_pass_is_implemented(pl->passes[i])) continue;
    bool seen = false;
    for (int32_t k = 0; k < i && !seen; k++) seen = strcmp(pl->passes[k], pl->passes[i]) == 0;
    if (seen) continue;
    if (n_missing) {
      memcpy(missing + len, ", ", 2);
      len += 2;
    }
    size_t m = strlen(pl->passes[i]);
    memcpy(missing + len, pl->passes[i], m + 1);
    len += m;
    n_missing++;
  }
  if (n_missing) {
    mil_status st = mil_diag_error(d, MIL_ERR_UNSUPPORTED, "pipeline '%s' names %d pass%s not implemented yet: %s",
                                   pl->name, n_missing, n_missing == 1 ? "" : "es", missing);
    free(missing);
    return st;
  }
  free(missing);
  for (int32_t i = 0; i < pl->n_opts; i++) {
    bool found = false;
    for (int32_t k = 0; k < pl->n && !found; k++) found = strcmp(pl->passes[k], pl->opts[i].pass) == 0;
    if (!found)
      return mil_diag_error(d, MIL_ERR_INVALID,
                            "pipeline '%s' is not valid: pass '%s' has options set but is not in the pipeline",
                            pl->name, pl->opts[i].pass);
  }
  return MIL_OK;
}
