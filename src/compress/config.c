/* OptimizationConfig from its dictionary form (JSON; YAML goes through
 * config_yaml.c into the same cJSON tree), with the defaults and validators
 * of coremltools/optimize/coreml/_config.py, and the config lookups of the
 * compression passes. */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <cjson/cJSON.h>

#include "compress/compress_internal.h"

const char *mil_cfg_type_name(mil_cfg_type t) {
  switch (t) {
  case MIL_CFG_LINEAR_QUANTIZER: return "OpLinearQuantizerConfig";
  case MIL_CFG_PALETTIZER: return "OpPalettizerConfig";
  case MIL_CFG_MAGNITUDE_PRUNER: return "OpMagnitudePrunerConfig";
  case MIL_CFG_THRESHOLD_PRUNER: return "OpThresholdPrunerConfig";
  default: return "None";
  }
}

static mil_cfg_type cfg_type_from_name(const char *s) {
  for (int t = MIL_CFG_LINEAR_QUANTIZER; t <= MIL_CFG_THRESHOLD_PRUNER; t++)
    if (strcmp(s, mil_cfg_type_name((mil_cfg_type)t)) == 0) return (mil_cfg_type)t;
  return MIL_CFG_NONE;
}

void mil_op_compress_config_init(mil_op_compress_config *c, mil_cfg_type type) {
  memset(c, 0, sizeof *c);
  c->type = type;
  if (type == MIL_CFG_NONE) return;
  c->has_weight_threshold = true;
  c->weight_threshold = 2048;
  switch (type) {
  case MIL_CFG_LINEAR_QUANTIZER:
    c->mode = MIL_CMODE_LINEAR_SYMMETRIC;
    c->dtype = MIL_DT_INT8;
    c->granularity = MIL_GRAN_PER_CHANNEL;
    c->block_size = 32;
    break;
  case MIL_CFG_PALETTIZER:
    c->mode = MIL_CMODE_KMEANS;
    c->granularity = MIL_GRAN_PER_TENSOR;
    c->group_size = 32;
    c->cluster_dim = 1;
    c->num_kmeans_workers = 1;
    break;
  case MIL_CFG_THRESHOLD_PRUNER:
    c->threshold = 1e-12;
    c->minimum_sparsity_percentile = 0.5;
    break;
  default: break;
  }
}

bool mil_op_compress_config_equal(const mil_op_compress_config *a, const mil_op_compress_config *b) {
  if (a->type != b->type) return false;
  if (a->has_weight_threshold != b->has_weight_threshold ||
      (a->has_weight_threshold && a->weight_threshold != b->weight_threshold))
    return false;
  switch (a->type) {
  case MIL_CFG_LINEAR_QUANTIZER:
    if (a->n_block_sizes != b->n_block_sizes) return false;
    if (a->n_block_sizes) {
      if (memcmp(a->block_sizes, b->block_sizes, (size_t)a->n_block_sizes * sizeof a->block_sizes[0])) return false;
    } else if (a->block_size != b->block_size) {
      return false;
    }
    return a->mode == b->mode && a->dtype == b->dtype && a->granularity == b->granularity;
  case MIL_CFG_PALETTIZER:
    return a->mode == b->mode && a->nbits == b->nbits && a->granularity == b->granularity &&
           a->group_size == b->group_size && a->has_channel_axis == b->has_channel_axis &&
           (!a->has_channel_axis || a->channel_axis == b->channel_axis) && a->cluster_dim == b->cluster_dim &&
           a->enable_per_channel_scale == b->enable_per_channel_scale &&
           a->num_kmeans_workers == b->num_kmeans_workers;
  case MIL_CFG_THRESHOLD_PRUNER:
    return a->threshold == b->threshold && a->minimum_sparsity_percentile == b->minimum_sparsity_percentile;
  case MIL_CFG_MAGNITUDE_PRUNER:
    /* a value unset (null: a key given twice may set then unset it) is
     * not compared */
    return a->has_target_sparsity == b->has_target_sparsity &&
           (!a->has_target_sparsity || a->target_sparsity == b->target_sparsity) &&
           a->has_prune_block_size == b->has_prune_block_size &&
           (!a->has_prune_block_size || a->prune_block_size == b->prune_block_size) &&
           a->has_n_m_ratio == b->has_n_m_ratio &&
           (!a->has_n_m_ratio || (a->n_m_ratio[0] == b->n_m_ratio[0] && a->n_m_ratio[1] == b->n_m_ratio[1])) &&
           a->has_dim == b->has_dim && (!a->has_dim || a->dim == b->dim);
  default: return true;
  }
}

/* ---------- reading one op config ---------- */

typedef struct rd {
  const char *src;  /* source name */
  const char *path; /* "global_config", "op_type_configs.conv" */
  mil_diag *d;
} rd;

static mil_status bad(const rd *r, const char *key, const char *fmt, const char *got) {
  return mil_diag_error(r->d, MIL_ERR_INVALID, "%s: %s%s%s: %s%s%s%s", r->src, r->path, key ? "." : "", key ? key : "",
                        fmt, got ? " (got " : "", got ? got : "", got ? ")" : "");
}

static char *show(const cJSON *v, char *buf, size_t n) {
  if (cJSON_IsNumber(v) && isinf(v->valuedouble)) { /* cJSON prints null */
    snprintf(buf, n, "%s", v->valuedouble > 0 ? "inf" : "-inf");
    return buf;
  }
  char *t = cJSON_PrintUnformatted(v);
  snprintf(buf, n, "%.60s", t ? t : "?");
  free(t);
  return buf;
}

#define CFG_MAX_INT 9007199254740992.0 /* 2^53: every integer up to it is exact in the JSON tree's doubles */

/* cattrs' int structuring: an integral number (bools are refused), of
 * magnitude at most 2^53. YAML integers beyond that arrive as raw text
 * (config_yaml.c), so the message shows the digits written. */
static bool int_value(const cJSON *v, int64_t *out) {
  if (!cJSON_IsNumber(v) || v->valuedouble != floor(v->valuedouble) || fabs(v->valuedouble) > CFG_MAX_INT) return false;
  *out = (int64_t)v->valuedouble;
  return true;
}

static mil_status get_int(const rd *r, const cJSON *v, int64_t *out) {
  char g[80];
  if (int_value(v, out)) return MIL_OK;
  if (cJSON_IsRaw(v) && v->valuestring) {
    snprintf(g, sizeof g, "%.60s", v->valuestring);
    return bad(r, v->string, "must be an integer of magnitude at most 2^53 = 9007199254740992", g);
  }
  if (cJSON_IsNumber(v) && isfinite(v->valuedouble) && v->valuedouble == floor(v->valuedouble)) {
    snprintf(g, sizeof g, "about %.0f", v->valuedouble);
    return bad(r, v->string, "must be an integer of magnitude at most 2^53 = 9007199254740992", g);
  }
  return bad(r, v->string, "must be an integer", show(v, g, sizeof g));
}

static mil_status get_float(const rd *r, const cJSON *v, double *out) {
  char g[80];
  if (cJSON_IsRaw(v) && v->valuestring) { /* a YAML integer beyond 2^53 */
    *out = strtod(v->valuestring, NULL);
    return MIL_OK;
  }
  if (!cJSON_IsNumber(v)) return bad(r, v->string, "must be a number", show(v, g, sizeof g));
  *out = v->valuedouble;
  return MIL_OK;
}

static mil_status get_str(const rd *r, const cJSON *v, const char **out) {
  char g[80];
  if (!cJSON_IsString(v)) return bad(r, v->string, "must be a string", show(v, g, sizeof g));
  *out = v->valuestring;
  return MIL_OK;
}

static mil_status get_granularity(const rd *r, const cJSON *v, mil_granularity *g) {
  const char *s = NULL;
  mil_status st = get_str(r, v, &s);
  if (st != MIL_OK) return st;
  static const char *const names[] = {"per_tensor", "per_grouped_channel", "per_channel", "per_block"};
  for (int i = 0; i < 4; i++)
    if (strcmp(s, names[i]) == 0) {
      *g = (mil_granularity)(i + 1);
      return MIL_OK;
    }
  return bad(r, v->string, "invalid granularity", s);
}

static mil_status get_mode(const rd *r, const cJSON *v, mil_cmode *m, bool palettizer) {
  const char *s = NULL;
  mil_status st = get_str(r, v, &s);
  if (st != MIL_OK) return st;
  static const char *const names[] = {"LINEAR_SYMMETRIC", "LINEAR", "KMEANS", "UNIFORM", "UNIQUE", "CUSTOM"};
  int lo = palettizer ? 2 : 0, hi = palettizer ? 6 : 2;
  for (int i = lo; i < hi; i++)
    if (strcasecmp(s, names[i]) == 0) {
      *m = (mil_cmode)i;
      return MIL_OK;
    }
  return bad(r, v->string,
             palettizer ? "only modes KMEANS, UNIFORM, UNIQUE, CUSTOM are supported for weight palettization"
                        : "only modes LINEAR_SYMMETRIC, LINEAR are supported for weight affine quantization",
             s);
}

#define TRY(x)                     \
  do {                             \
    mil_status st_ = (x);          \
    if (st_ != MIL_OK) return st_; \
  } while (0)

static bool key_is(const cJSON *v, const char *k) { return strcmp(v->string, k) == 0; }

static mil_status read_member(const rd *r, mil_op_compress_config *c, const cJSON *v) {
  char g[80];
  if (key_is(v, "weight_threshold")) {
    if (cJSON_IsNull(v)) {
      c->has_weight_threshold = false;
      return MIL_OK;
    }
    TRY(get_int(r, v, &c->weight_threshold));
    if (c->weight_threshold < 0) return bad(r, v->string, "must be a non-negative integer", show(v, g, sizeof g));
    c->has_weight_threshold = true;
    return MIL_OK;
  }
  switch (c->type) {
  case MIL_CFG_LINEAR_QUANTIZER:
    if (key_is(v, "mode")) return get_mode(r, v, &c->mode, false);
    if (key_is(v, "dtype")) {
      const char *s = NULL;
      TRY(get_str(r, v, &s));
      if (strcmp(s, "int8") == 0) c->dtype = MIL_DT_INT8;
      else if (strcmp(s, "uint8") == 0) c->dtype = MIL_DT_UINT8;
      else if (strcmp(s, "int4") == 0) c->dtype = MIL_DT_INT4;
      else if (strcmp(s, "uint4") == 0) c->dtype = MIL_DT_UINT4;
      else return bad(r, v->string, "invalid dtype; only int8/uint8/int4/uint4 are supported", s);
      return MIL_OK;
    }
    if (key_is(v, "granularity")) {
      TRY(get_granularity(r, v, &c->granularity));
      if (c->granularity == MIL_GRAN_PER_GROUPED_CHANNEL)
        return bad(r, v->string, "must be per_tensor, per_channel or per_block", "per_grouped_channel");
      return MIL_OK;
    }
    if (key_is(v, "block_size")) {
      if (cJSON_IsArray(v)) {
        int n = cJSON_GetArraySize(v);
        if (n > MIL_CFG_MAX_RANK) return bad(r, v->string, "has too many axes", show(v, g, sizeof g));
        c->n_block_sizes = 0;
        const cJSON *it;
        cJSON_ArrayForEach(it, v) {
          int64_t x;
          if (!int_value(it, &x) || x < 0)
            return bad(r, v->string, "all values in block_size must be non-negative integers", show(v, g, sizeof g));
          c->block_sizes[c->n_block_sizes++] = x;
        }
        if (n == 0) c->n_block_sizes = 0;
        return MIL_OK;
      }
      TRY(get_int(r, v, &c->block_size));
      if (c->block_size < 0) return bad(r, v->string, "must be non-negative", show(v, g, sizeof g));
      return MIL_OK;
    }
    break;
  case MIL_CFG_PALETTIZER:
    if (key_is(v, "mode")) return get_mode(r, v, &c->mode, true);
    if (key_is(v, "nbits")) {
      if (cJSON_IsNull(v)) {
        c->nbits = 0;
        return MIL_OK;
      }
      int64_t x;
      TRY(get_int(r, v, &x));
      if (!(x == 1 || x == 2 || x == 3 || x == 4 || x == 6 || x == 8))
        return bad(r, v->string, "invalid nbits for palettization; supported are 1, 2, 3, 4, 6, 8", show(v, g, sizeof g));
      c->nbits = (int32_t)x;
      return MIL_OK;
    }
    if (key_is(v, "lut_function"))
      return mil_diag_error(r->d, MIL_ERR_UNSUPPORTED,
                            "%s: %s.lut_function: a lut_function (Python callable) cannot be given in a config file",
                            r->src, r->path);
    if (key_is(v, "granularity")) {
      TRY(get_granularity(r, v, &c->granularity));
      if (c->granularity != MIL_GRAN_PER_TENSOR && c->granularity != MIL_GRAN_PER_GROUPED_CHANNEL)
        return bad(r, v->string, "must be per_tensor or per_grouped_channel", v->valuestring);
      return MIL_OK;
    }
    if (key_is(v, "group_size")) return get_int(r, v, &c->group_size);
    if (key_is(v, "channel_axis")) {
      c->has_channel_axis = !cJSON_IsNull(v);
      return c->has_channel_axis ? get_int(r, v, &c->channel_axis) : MIL_OK;
    }
    if (key_is(v, "cluster_dim")) return get_int(r, v, &c->cluster_dim);
    if (key_is(v, "num_kmeans_workers")) return get_int(r, v, &c->num_kmeans_workers);
    if (key_is(v, "enable_per_channel_scale")) {
      if (!cJSON_IsBool(v)) return bad(r, v->string, "must be a bool", show(v, g, sizeof g));
      c->enable_per_channel_scale = cJSON_IsTrue(v);
      return MIL_OK;
    }
    break;
  case MIL_CFG_THRESHOLD_PRUNER:
    if (key_is(v, "threshold")) {
      TRY(get_float(r, v, &c->threshold));
      if (c->threshold < 0) return bad(r, v->string, "needs to be in [0, inf)", show(v, g, sizeof g));
      return MIL_OK;
    }
    if (key_is(v, "minimum_sparsity_percentile")) {
      TRY(get_float(r, v, &c->minimum_sparsity_percentile));
      if (c->minimum_sparsity_percentile < 0 || c->minimum_sparsity_percentile > 1)
        return bad(r, v->string, "needs to be in [0, 1]", show(v, g, sizeof g));
      return MIL_OK;
    }
    break;
  case MIL_CFG_MAGNITUDE_PRUNER:
    if (key_is(v, "target_sparsity")) {
      c->has_target_sparsity = !cJSON_IsNull(v);
      return c->has_target_sparsity ? get_float(r, v, &c->target_sparsity) : MIL_OK;
    }
    if (key_is(v, "block_size")) {
      c->has_prune_block_size = !cJSON_IsNull(v);
      return c->has_prune_block_size ? get_int(r, v, &c->prune_block_size) : MIL_OK;
    }
    if (key_is(v, "dim")) {
      c->has_dim = !cJSON_IsNull(v);
      return c->has_dim ? get_int(r, v, &c->dim) : MIL_OK;
    }
    if (key_is(v, "n_m_ratio")) {
      c->has_n_m_ratio = !cJSON_IsNull(v);
      if (!c->has_n_m_ratio) return MIL_OK;
      if (!cJSON_IsArray(v)) return bad(r, v->string, "must be a list of two integers (n, m)", show(v, g, sizeof g));
      if (cJSON_GetArraySize(v) != 2)
        return bad(r, v->string, "must be a tuple of two integers (n, m), n <= m", show(v, g, sizeof g));
      TRY(get_int(r, cJSON_GetArrayItem(v, 0), &c->n_m_ratio[0]));
      TRY(get_int(r, cJSON_GetArrayItem(v, 1), &c->n_m_ratio[1]));
      return MIL_OK;
    }
    break;
  default: break;
  }
  return bad(r, v->string, "is not an option of", mil_cfg_type_name(c->type));
}

/* The attrs validators and __attrs_post_init__ of each class. */
static mil_status validate(const rd *r, mil_op_compress_config *c) {
  char g[64];
  switch (c->type) {
  case MIL_CFG_PALETTIZER:
    if (c->nbits == 0 && (c->mode == MIL_CMODE_KMEANS || c->mode == MIL_CMODE_UNIFORM))
      return bad(r, "nbits", "must be provided for kmeans and uniform modes", NULL);
    if (c->nbits != 0 && (c->mode == MIL_CMODE_UNIQUE || c->mode == MIL_CMODE_CUSTOM))
      return bad(r, "nbits", "must NOT be provided for unique and custom modes", NULL);
    if (c->mode == MIL_CMODE_CUSTOM) return bad(r, "mode", "custom needs a lut_function, which a config cannot hold", NULL);
    if (c->cluster_dim < 1) return bad(r, "cluster_dim", "must be >= 1", NULL);
    break;
  case MIL_CFG_MAGNITUDE_PRUNER:
    if (c->has_target_sparsity == c->has_n_m_ratio)
      return bad(r, NULL,
                 "either \"target_sparsity\" or \"n_m_ratio\" need to be set. They cannot be set at the same time", NULL);
    if (c->has_target_sparsity && (c->target_sparsity < 0 || c->target_sparsity > 1)) {
      snprintf(g, sizeof g, "%g", c->target_sparsity);
      return bad(r, "target_sparsity", "needs to be in [0, 1]", g);
    }
    if (c->has_prune_block_size && c->has_n_m_ratio)
      return bad(r, NULL, "\"block_size\" and \"n_m_ratio\" cannot be set at the same time", NULL);
    if (c->has_prune_block_size && c->prune_block_size <= 1) {
      snprintf(g, sizeof g, "%lld", (long long)c->prune_block_size);
      return bad(r, "block_size", "must be an integer > 1", g);
    }
    if (c->has_n_m_ratio && (c->n_m_ratio[0] > c->n_m_ratio[1] || c->n_m_ratio[1] < 1))
      return bad(r, "n_m_ratio", "must be a tuple of two integers (n, m), n <= m", NULL);
    if (c->has_dim) {
      if (!c->has_prune_block_size && !c->has_n_m_ratio)
        return bad(r, "dim", "can only be set along with \"block_size\" or \"n_m_ratio\"", NULL);
      if (c->dim != 0 && c->dim != 1) return bad(r, "dim", "must be 1 or 0", NULL);
    }
    if (c->has_prune_block_size && !c->has_dim) c->has_dim = true, c->dim = 0;
    if (c->has_n_m_ratio && !c->has_dim) c->has_dim = true, c->dim = 1;
    break;
  default: break;
  }
  return MIL_OK;
}

static bool structural(const mil_op_compress_config *c) {
  return c->type == MIL_CFG_MAGNITUDE_PRUNER && (c->has_n_m_ratio || c->has_prune_block_size);
}

static mil_status read_op_config(const rd *r, mil_cfg_type type, const cJSON *obj, mil_op_compress_config *c) {
  if (cJSON_IsNull(obj)) {
    mil_op_compress_config_init(c, MIL_CFG_NONE);
    return MIL_OK;
  }
  char g[80];
  if (!cJSON_IsObject(obj)) return bad(r, NULL, "must be a dictionary (or null)", show(obj, g, sizeof g));
  const cJSON *ct = cJSON_GetObjectItemCaseSensitive(obj, "config_type");
  if (ct) {
    if (!cJSON_IsString(ct)) return bad(r, "config_type", "must be a string", show(ct, g, sizeof g));
    type = cfg_type_from_name(ct->valuestring);
    if (type == MIL_CFG_NONE) return bad(r, "config_type", "is not a config class", ct->valuestring);
  }
  if (type == MIL_CFG_NONE) return bad(r, "config_type", "must be provided", NULL);
  mil_op_compress_config_init(c, type);
  const cJSON *v;
  cJSON_ArrayForEach(v, obj) {
    if (key_is(v, "config_type")) continue;
    TRY(read_member(r, c, v));
  }
  return validate(r, c);
}

static mil_status read_entries(const char *src, const char *key, mil_cfg_type type, const cJSON *obj,
                               mil_compress_entry **out, int32_t *n_out, mil_diag *d) {
  if (!obj || cJSON_IsNull(obj)) return MIL_OK;
  if (!cJSON_IsObject(obj)) return mil_diag_error(d, MIL_ERR_INVALID, "%s: %s must be a dictionary", src, key);
  int n = cJSON_GetArraySize(obj);
  *out = calloc(n ? (size_t)n : 1, sizeof **out);
  if (!*out) return mil_diag_error(d, MIL_ERR_NOMEM, "%s: out of memory", src);
  const cJSON *v;
  cJSON_ArrayForEach(v, obj) {
    char path[300];
    snprintf(path, sizeof path, "%s.%.200s", key, v->string);
    rd r = {src, path, d};
    mil_compress_entry *e = &(*out)[*n_out];
    if (!(e->key = strdup(v->string))) return mil_diag_error(d, MIL_ERR_NOMEM, "%s: out of memory", src);
    (*n_out)++;
    TRY(read_op_config(&r, type, v, &e->cfg));
  }
  return MIL_OK;
}

mil_status compress_config_from_cjson(const cJSON *root, const char *src, mil_cfg_type default_type,
                                      mil_compress_config **out, mil_diag *d) {
  *out = NULL;
  if (!cJSON_IsObject(root))
    return mil_diag_error(d, MIL_ERR_INVALID, "%s: an OptimizationConfig must be a dictionary", src);
  const cJSON *v;
  cJSON_ArrayForEach(v, root) {
    if (!key_is(v, "config_type") && !key_is(v, "global_config") && !key_is(v, "op_type_configs") &&
        !key_is(v, "op_name_configs"))
      return mil_diag_error(d, MIL_ERR_INVALID,
                            "%s: invalid key %s to construct an OptimizationConfig object; supported keys are "
                            "config_type, global_config, op_name_configs, op_type_configs",
                            src, v->string);
  }
  mil_cfg_type type = default_type;
  const cJSON *ct = cJSON_GetObjectItemCaseSensitive(root, "config_type");
  if (ct) {
    if (!cJSON_IsString(ct) || cfg_type_from_name(ct->valuestring) == MIL_CFG_NONE)
      return mil_diag_error(d, MIL_ERR_INVALID, "%s: config_type must be one of OpLinearQuantizerConfig, "
                            "OpPalettizerConfig, OpMagnitudePrunerConfig, OpThresholdPrunerConfig", src);
    type = cfg_type_from_name(ct->valuestring);
  }
  if (type == MIL_CFG_NONE)
    return mil_diag_error(d, MIL_ERR_INVALID, "%s: config_type must be provided with type of string", src);
  mil_compress_config *c = calloc(1, sizeof *c);
  if (!c) return mil_diag_error(d, MIL_ERR_NOMEM, "%s: out of memory", src);
  mil_status st = MIL_OK;
  const cJSON *gc = cJSON_GetObjectItemCaseSensitive(root, "global_config");
  if (gc && !cJSON_IsNull(gc)) {
    rd r = {src, "global_config", d};
    st = read_op_config(&r, type, gc, &c->global);
  }
  if (st == MIL_OK)
    st = read_entries(src, "op_type_configs", type, cJSON_GetObjectItemCaseSensitive(root, "op_type_configs"),
                      &c->op_type, &c->n_op_type, d);
  if (st == MIL_OK)
    st = read_entries(src, "op_name_configs", type, cJSON_GetObjectItemCaseSensitive(root, "op_name_configs"),
                      &c->op_name, &c->n_op_name, d);
  /* set_op_type's check: structural pruning only for conv and linear */
  for (int32_t i = 0; st == MIL_OK && i < c->n_op_type; i++)
    if (structural(&c->op_type[i].cfg) && strcmp(c->op_type[i].key, "conv") != 0 &&
        strcmp(c->op_type[i].key, "linear") != 0)
      st = mil_diag_error(d, MIL_ERR_INVALID, "%s: op_type_configs.%s: block sparsity or n:m pruning does not "
                          "support op type %s", src, c->op_type[i].key, c->op_type[i].key);
  if (st != MIL_OK) {
    mil_compress_config_free(c);
    return st;
  }
  *out = c;
  return MIL_OK;
}

/* Refuses JSON nested deeper than MIL_CONFIG_MAX_DEPTH, naming the byte
 * where it goes too deep (cJSON's own limit is 1000, and a file it refuses
 * is next read as YAML). Brackets inside strings do not count. */
static mil_status json_depth_check(const char *text, size_t len, const char *source, mil_diag *d) {
  int depth = 0;
  bool in_str = false;
  for (size_t i = 0; i < len; i++) {
    char ch = text[i];
    if (in_str) {
      if (ch == '\\') i++;
      else if (ch == '"') in_str = false;
    } else if (ch == '"') {
      in_str = true;
    } else if (ch == '[' || ch == '{') {
      if (++depth > MIL_CONFIG_MAX_DEPTH)
        return mil_diag_error(d, MIL_ERR_INVALID, "%s: byte %zu: JSON nested more than %d levels deep (a "
                              "compression config needs at most 4)", source, i, MIL_CONFIG_MAX_DEPTH);
    } else if (ch == ']' || ch == '}') {
      depth--;
    }
  }
  return MIL_OK;
}

mil_status mil_compress_config_from_json(const char *text, size_t len, const char *source, mil_cfg_type default_type,
                                         mil_compress_config **out, mil_diag *d) {
  if (!source) source = "config";
  if (len == (size_t)-1) len = strlen(text);
  *out = NULL;
  mil_status dst = json_depth_check(text, len, source, d);
  if (dst != MIL_OK) return dst;
  const char *end = NULL;
  cJSON *root = cJSON_ParseWithLengthOpts(text, len, &end, false);
  if (!root) {
    size_t off = end && end >= text ? (size_t)(end - text) : 0;
    return mil_diag_error(d, MIL_ERR_PARSE, "%s: byte %zu: not valid JSON", source, off);
  }
  mil_status st = compress_config_from_cjson(root, source, default_type, out, d);
  cJSON_Delete(root);
  return st;
}

void mil_compress_config_free(mil_compress_config *c) {
  if (!c) return;
  for (int32_t i = 0; i < c->n_op_type; i++) free(c->op_type[i].key);
  for (int32_t i = 0; i < c->n_op_name; i++) free(c->op_name[i].key);
  free(c->op_type);
  free(c->op_name);
  free(c);
}

mil_status mil_compress_config_load(const char *path, mil_cfg_type default_type, mil_compress_config **out,
                                    mil_diag *d) {
  FILE *f = fopen(path, "rb");
  if (!f) return mil_diag_error(d, MIL_ERR_IO, "%s: cannot open", path);
  size_t cap = 4096, n = 0;
  char *buf = malloc(cap);
  for (;;) {
    if (!buf) {
      fclose(f);
      return mil_diag_error(d, MIL_ERR_NOMEM, "%s: out of memory", path);
    }
    n += fread(buf + n, 1, cap - n, f);
    if (n < cap) break;
    char *nb = realloc(buf, cap *= 2);
    if (!nb) free(buf);
    buf = nb;
  }
  bool err = ferror(f);
  fclose(f);
  if (err) {
    free(buf);
    return mil_diag_error(d, MIL_ERR_IO, "%s: read error", path);
  }
  size_t pl = strlen(path);
  bool yaml_name = (pl > 5 && strcmp(path + pl - 5, ".yaml") == 0) || (pl > 4 && strcmp(path + pl - 4, ".yml") == 0);
  mil_status st;
  size_t lead = 0;
  while (lead < n && strchr(" \t\r\n", buf[lead]) && buf[lead]) lead++;
  if (!yaml_name && lead < n && (buf[lead] == '{' || buf[lead] == '[')) {
    st = json_depth_check(buf, n, path, d);
    if (st != MIL_OK) {
      free(buf);
      return st;
    }
  }
  cJSON *probe = yaml_name ? NULL : cJSON_ParseWithLength(buf, n);
  if (probe) {
    st = compress_config_from_cjson(probe, path, default_type, out, d);
    cJSON_Delete(probe);
  } else {
    st = mil_compress_config_from_yaml(buf, n, path, default_type, out, d);
  }
  free(buf);
  return st;
}

mil_status mil_compress_config_check_types(const mil_compress_config *c, const char *pass, int n,
                                           const mil_cfg_type *types, mil_diag *d) {
  const mil_op_compress_config *bad_cfg = NULL;
  int32_t total = 1 + c->n_op_type + c->n_op_name;
  for (int32_t i = 0; i < total && !bad_cfg; i++) {
    const mil_op_compress_config *x =
        i == 0 ? &c->global : i <= c->n_op_type ? &c->op_type[i - 1].cfg : &c->op_name[i - 1 - c->n_op_type].cfg;
    if (x->type == MIL_CFG_NONE) continue;
    bool ok = false;
    for (int k = 0; k < n; k++) ok |= x->type == types[k];
    if (!ok) bad_cfg = x;
  }
  if (!bad_cfg) return MIL_OK;
  char list[200] = "";
  for (int k = 0; k < n; k++)
    snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", k ? ", " : "", mil_cfg_type_name(types[k]));
  return mil_diag_error(d, MIL_ERR_INVALID, "%s only accept %s type config. Got %s.", pass, list,
                        mil_cfg_type_name(bad_cfg->type));
}

const mil_compress_entry *compress_config_find(const mil_compress_entry *e, int32_t n, const char *key) {
  for (int32_t i = 0; i < n; i++)
    if (strcmp(e[i].key, key) == 0) return &e[i];
  return NULL;
}

const mil_op_compress_config *mil_compress_config_for_op(const mil_compress_config *c, const mil_op *op) {
  const mil_compress_entry *e = op->name ? compress_config_find(c->op_name, c->n_op_name, op->name) : NULL;
  if (!e) e = compress_config_find(c->op_type, c->n_op_type, op->type);
  const mil_op_compress_config *r = e ? &e->cfg : &c->global;
  return r->type == MIL_CFG_NONE ? NULL : r;
}

/* ---------- back to the dictionary form ---------- */

/* A float option, printed so that it reads back to the same double:
 * the shortest of %.15g / %.17g that does (cJSON's own printer accepts a
 * 15-digit form within a relative epsilon, so 4888888888888888888 would
 * come back as a different double). Infinities (threshold: .inf in YAML)
 * as 1e999, which reads back as infinity (cJSON would print null, which
 * does not read back as a number). */
static void add_float(cJSON *o, const char *key, double x) {
  char b[40];
  if (isinf(x)) snprintf(b, sizeof b, "%s", x > 0 ? "1e999" : "-1e999");
  else {
    snprintf(b, sizeof b, "%.15g", x);
    if (strtod(b, NULL) != x) snprintf(b, sizeof b, "%.17g", x);
  }
  cJSON_AddRawToObject(o, key, b);
}

static cJSON *op_config_json(const mil_op_compress_config *c) {
  if (c->type == MIL_CFG_NONE) return cJSON_CreateNull();
  cJSON *o = cJSON_CreateObject();
  if (!o) return NULL;
  static const char *const modes[] = {"linear_symmetric", "linear", "kmeans", "uniform", "unique", "custom"};
  static const char *const grans[] = {"", "per_tensor", "per_grouped_channel", "per_channel", "per_block"};
  cJSON_AddStringToObject(o, "config_type", mil_cfg_type_name(c->type));
  switch (c->type) {
  case MIL_CFG_LINEAR_QUANTIZER:
    cJSON_AddStringToObject(o, "mode", modes[c->mode]);
    cJSON_AddStringToObject(o, "dtype", mil_dtype_name(c->dtype));
    cJSON_AddStringToObject(o, "granularity", grans[c->granularity]);
    if (c->n_block_sizes) {
      cJSON *a = cJSON_AddArrayToObject(o, "block_size");
      for (int32_t i = 0; a && i < c->n_block_sizes; i++) cJSON_AddItemToArray(a, cJSON_CreateNumber((double)c->block_sizes[i]));
    } else {
      cJSON_AddNumberToObject(o, "block_size", (double)c->block_size);
    }
    break;
  case MIL_CFG_PALETTIZER:
    cJSON_AddStringToObject(o, "mode", modes[c->mode]);
    if (c->nbits) cJSON_AddNumberToObject(o, "nbits", c->nbits);
    cJSON_AddStringToObject(o, "granularity", grans[c->granularity]);
    cJSON_AddNumberToObject(o, "group_size", (double)c->group_size);
    if (c->has_channel_axis) cJSON_AddNumberToObject(o, "channel_axis", (double)c->channel_axis);
    cJSON_AddNumberToObject(o, "cluster_dim", (double)c->cluster_dim);
    cJSON_AddBoolToObject(o, "enable_per_channel_scale", c->enable_per_channel_scale);
    cJSON_AddNumberToObject(o, "num_kmeans_workers", (double)c->num_kmeans_workers);
    break;
  case MIL_CFG_THRESHOLD_PRUNER:
    add_float(o, "threshold", c->threshold);
    add_float(o, "minimum_sparsity_percentile", c->minimum_sparsity_percentile);
    break;
  case MIL_CFG_MAGNITUDE_PRUNER:
    if (c->has_target_sparsity) add_float(o, "target_sparsity", c->target_sparsity);
    if (c->has_prune_block_size) cJSON_AddNumberToObject(o, "block_size", (double)c->prune_block_size);
    if (c->has_n_m_ratio) {
      cJSON *a = cJSON_AddArrayToObject(o, "n_m_ratio");
      if (a) {
        cJSON_AddItemToArray(a, cJSON_CreateNumber((double)c->n_m_ratio[0]));
        cJSON_AddItemToArray(a, cJSON_CreateNumber((double)c->n_m_ratio[1]));
      }
    }
    if (c->has_dim) cJSON_AddNumberToObject(o, "dim", (double)c->dim);
    break;
  default: break;
  }
  if (c->has_weight_threshold) cJSON_AddNumberToObject(o, "weight_threshold", (double)c->weight_threshold);
  else cJSON_AddNullToObject(o, "weight_threshold");
  return o;
}

char *mil_compress_config_to_json(const mil_compress_config *c) {
  cJSON *root = cJSON_CreateObject();
  if (!root) return NULL;
  mil_cfg_type t = c->global.type;
  for (int32_t i = 0; t == MIL_CFG_NONE && i < c->n_op_type; i++) t = c->op_type[i].cfg.type;
  for (int32_t i = 0; t == MIL_CFG_NONE && i < c->n_op_name; i++) t = c->op_name[i].cfg.type;
  cJSON_AddStringToObject(root, "config_type", mil_cfg_type_name(t == MIL_CFG_NONE ? MIL_CFG_LINEAR_QUANTIZER : t));
  if (c->global.type != MIL_CFG_NONE) cJSON_AddItemToObject(root, "global_config", op_config_json(&c->global));
  for (int k = 0; k < 2; k++) {
    int32_t n = k ? c->n_op_name : c->n_op_type;
    const mil_compress_entry *e = k ? c->op_name : c->op_type;
    if (!n) continue;
    cJSON *m = cJSON_AddObjectToObject(root, k ? "op_name_configs" : "op_type_configs");
    for (int32_t i = 0; m && i < n; i++) cJSON_AddItemToObject(m, e[i].key, op_config_json(&e[i].cfg));
  }
  char *s = cJSON_PrintUnformatted(root);
  cJSON_Delete(root);
  return s;
}
