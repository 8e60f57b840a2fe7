/* libmil: weight compression configuration and weight metadata.
 *
 * The compression passes (compression::linear_quantize_weights,
 * compression::palettize_weights, compression::prune_weights,
 * compression::WeightDecompressor) take their configuration as
 * coremltools' OptimizationConfig: a global config, configs per op type and
 * configs per op name, each one of OpLinearQuantizerConfig,
 * OpPalettizerConfig, OpMagnitudePrunerConfig or OpThresholdPrunerConfig,
 * with coremltools' option names and defaults. This header reads such a
 * config from the dictionary form of OptimizationConfig.from_dict (JSON text,
 * or a YAML document as OptimizationConfig.from_yaml reads it) and looks
 * configs up the way the passes do.
 *
 * Mirrors coremltools/optimize/coreml/_config.py (OptimizationConfig,
 * Op*Config, _get_op_config, _get_const_op_config) and
 * coremltools/optimize/coreml/_post_training_quantization.py
 * (get_weights_metadata).
 */
#ifndef MIL_COMPRESS_H
#define MIL_COMPRESS_H

#include <stdio.h>

#include "ir.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The class of an op config (coremltools' "config_type"). MIL_CFG_NONE is
 * coremltools' None: the op is not compressed. */
typedef enum mil_cfg_type {
  MIL_CFG_NONE = 0,
  MIL_CFG_LINEAR_QUANTIZER = 1,  /* OpLinearQuantizerConfig */
  MIL_CFG_PALETTIZER = 2,        /* OpPalettizerConfig */
  MIL_CFG_MAGNITUDE_PRUNER = 3,  /* OpMagnitudePrunerConfig */
  MIL_CFG_THRESHOLD_PRUNER = 4,  /* OpThresholdPrunerConfig */
} mil_cfg_type;

/* CompressionGranularity, with coremltools' numbers. */
typedef enum mil_granularity {
  MIL_GRAN_PER_TENSOR = 1,
  MIL_GRAN_PER_GROUPED_CHANNEL = 2,
  MIL_GRAN_PER_CHANNEL = 3,
  MIL_GRAN_PER_BLOCK = 4,
} mil_granularity;

/* The "mode" option (upper-cased as coremltools stores it). */
typedef enum mil_cmode {
  MIL_CMODE_LINEAR_SYMMETRIC = 0, /* quantizer default */
  MIL_CMODE_LINEAR = 1,
  MIL_CMODE_KMEANS = 2, /* palettizer default */
  MIL_CMODE_UNIFORM = 3,
  MIL_CMODE_UNIQUE = 4,
  MIL_CMODE_CUSTOM = 5, /* needs a Python lut_function: refused when read */
} mil_cmode;

#define MIL_CFG_MAX_RANK 8

/* One op config. Fields that a class does not have keep their zero value;
 * has_* flags mark coremltools' Optional fields that are not None. */
typedef struct mil_op_compress_config {
  mil_cfg_type type;
  /* every class: weights with more elements than this are compressed
   * (default 2048; None only through the deprecated API) */
  bool has_weight_threshold;
  int64_t weight_threshold;
  /* OpLinearQuantizerConfig: mode, dtype (int8 default, uint8, int4, uint4),
   * granularity (per_channel default, per_tensor, per_block), block_size
   * (an int, default 32, or one int per weight axis when
   * n_block_sizes > 0). OpPalettizerConfig: mode, nbits (0 = None),
   * granularity (per_tensor default, per_grouped_channel), group_size
   * (32), channel_axis, cluster_dim (1), enable_per_channel_scale,
   * num_kmeans_workers (1). */
  mil_cmode mode;
  mil_dtype dtype;
  mil_granularity granularity;
  int64_t block_size;
  int32_t n_block_sizes;
  int64_t block_sizes[MIL_CFG_MAX_RANK];
  int32_t nbits;
  int64_t group_size;
  bool has_channel_axis;
  int64_t channel_axis;
  int64_t cluster_dim;
  bool enable_per_channel_scale;
  int64_t num_kmeans_workers;
  /* OpThresholdPrunerConfig: threshold (1e-12), minimum_sparsity_percentile (0.5) */
  double threshold, minimum_sparsity_percentile;
  /* OpMagnitudePrunerConfig: exactly one of target_sparsity / n_m_ratio;
   * block_size (> 1) and dim (0 or 1; 0 with block_size, 1 with n_m_ratio
   * when not given) */
  bool has_target_sparsity;
  double target_sparsity;
  bool has_prune_block_size;
  int64_t prune_block_size;
  bool has_n_m_ratio;
  int64_t n_m_ratio[2];
  bool has_dim;
  int64_t dim;
} mil_op_compress_config;

/* A named entry of op_type_configs / op_name_configs; cfg.type ==
 * MIL_CFG_NONE when the dictionary maps the name to null. */
typedef struct mil_compress_entry {
  char *key;
  mil_op_compress_config cfg;
} mil_compress_entry;

/* OptimizationConfig. global.type == MIL_CFG_NONE when there is none. */
typedef struct mil_compress_config {
  mil_op_compress_config global;
  int32_t n_op_type, n_op_name;
  mil_compress_entry *op_type;
  mil_compress_entry *op_name;
} mil_compress_config;

/* An op config of `type` holding coremltools' defaults. */
MIL_API void mil_op_compress_config_init(mil_op_compress_config *c, mil_cfg_type type);
/* Field-by-field equality of two op configs (attrs' __eq__). */
MIL_API bool mil_op_compress_config_equal(const mil_op_compress_config *a, const mil_op_compress_config *b);
/* coremltools' class name of a config type ("OpPalettizerConfig"; "None"). */
MIL_API const char *mil_cfg_type_name(mil_cfg_type t);

/* Limits of the config readers (a real config is a few dozen nodes, four
 * levels deep): deeper nesting, and YAML aliases whose expansion would
 * build more nodes ("billion laughs"), are refused with MIL_ERR_INVALID. */
#define MIL_CONFIG_MAX_DEPTH 64
#define MIL_CONFIG_MAX_NODES 100000

/* Reads OptimizationConfig.from_dict's dictionary from JSON text (len bytes;
 * (size_t)-1 for NUL-terminated). Keys: config_type, global_config,
 * op_type_configs, op_name_configs; each op config takes its class's
 * options (and may name its own config_type). `source` names the text in
 * messages (a file name, or "config"). When the top level has no
 * config_type, default_type is used (MIL_CFG_NONE: it is required, as in
 * coremltools). Validation is coremltools' (attrs validators): unknown
 * keys, wrong types, nbits missing for kmeans/uniform or given for unique,
 * target_sparsity and n_m_ratio both or neither, dim without block_size /
 * n_m_ratio, values out of range, per_block / per_grouped_channel for the
 * wrong class, structural pruning set for an op type other than conv and
 * linear. Errors: MIL_ERR_PARSE (not JSON: with the byte offset),
 * MIL_ERR_INVALID (the message names the key path, e.g.
 * "config: global_config.nbits: must be one of 1, 2, 3, 4, 6, 8 (got 5)"),
 * MIL_ERR_UNSUPPORTED (mode "custom": lut_function is a Python callable),
 * MIL_ERR_NOMEM. Text nested more than MIL_CONFIG_MAX_DEPTH levels is
 * refused (MIL_ERR_INVALID, with the byte offset) before it is parsed.
 * Free *out with mil_compress_config_free. */
MIL_API mil_status mil_compress_config_from_json(const char *text, size_t len, const char *source,
                                                 mil_cfg_type default_type, mil_compress_config **out, mil_diag *d);
/* The same from a YAML document (OptimizationConfig.from_yaml: plain
 * scalars typed as yaml.safe_load types them). Errors as above, YAML
 * syntax errors as MIL_ERR_PARSE with line:column; nesting deeper than
 * MIL_CONFIG_MAX_DEPTH or aliases expanding to more than
 * MIL_CONFIG_MAX_NODES nodes: MIL_ERR_INVALID with the line. */
MIL_API mil_status mil_compress_config_from_yaml(const char *text, size_t len, const char *source,
                                                 mil_cfg_type default_type, mil_compress_config **out, mil_diag *d);
/* Reads a config file: YAML when its name ends in .yaml / .yml, else
 * JSON when it parses as JSON, else YAML. Errors as above, MIL_ERR_IO when
 * the file cannot be read. */
MIL_API mil_status mil_compress_config_load(const char *path, mil_cfg_type default_type, mil_compress_config **out,
                                            mil_diag *d);
MIL_API void mil_compress_config_free(mil_compress_config *c);
/* The config back in from_dict's dictionary form, as compact JSON with
 * every option of every op config spelled out (what the passes' `config`
 * option takes). malloc'ed; NULL on out of memory. */
MIL_API char *mil_compress_config_to_json(const mil_compress_config *c);

/* Whether every config of c (global, per type, per name; Nones aside) is
 * of one of the `n` types (coremltools' _check_config_type). On failure
 * records "<pass> only accept X type config. Got Y." and returns
 * MIL_ERR_INVALID. */
MIL_API mil_status mil_compress_config_check_types(const mil_compress_config *c, const char *pass, int n,
                                                   const mil_cfg_type *types, mil_diag *d);

/* The config for a non-const op: by op name, then op type, then global
 * (coremltools' _get_op_config). NULL means None. */
MIL_API const mil_op_compress_config *mil_compress_config_for_op(const mil_compress_config *c, const mil_op *op);

/* ---------- weights metadata (get_weights_metadata) ---------- */

/* What coremltools' get_weights_metadata reports for one const weight. */
typedef struct mil_weight_meta {
  const char *name;      /* the const op's name (program-owned) */
  const mil_type *type;  /* shape and dtype */
  int64_t size;          /* elements */
  double sparsity;       /* fraction of elements equal to 0 */
  int64_t unique_values; /* distinct values (-1 when not counted) */
  int32_t n_children;
  const mil_op **children; /* consumer ops (malloc'ed) */
} mil_weight_meta;

/* Metadata of every const weight of p (all functions, nested blocks) with
 * more than weight_threshold elements (coremltools' default 2048), in
 * program order. progress (may be NULL) receives a line per weight
 * ("\r[i/n] name") for a terminal. Errors: MIL_ERR_NOMEM. Free with
 * mil_weight_meta_free. */
MIL_API mil_status mil_weights_metadata(mil_program *p, int64_t weight_threshold, FILE *progress,
                                        mil_weight_meta **out, int32_t *n_out, mil_diag *d);
MIL_API void mil_weight_meta_free(mil_weight_meta *m, int32_t n);

#ifdef __cplusplus
}
#endif
#endif
