/* OptimizationConfig.from_yaml: the YAML document is read with libyaml
 * into the cJSON tree config.c reads (yaml.safe_load's typing of plain
 * scalars: null, bools, ints, floats; quoted scalars stay strings). */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <cjson/cJSON.h>
#include <yaml.h>

#include "compress/compress_internal.h"

static bool is_any(const char *s, const char *const *list) {
  for (; *list; list++)
    if (strcmp(s, *list) == 0) return true;
  return false;
}

/* A plain scalar as yaml.safe_load types it (YAML 1.1 core resolvers);
 * numbers are also accepted in the forms strtod reads ("1e-12"). */
static cJSON *plain_scalar(const char *s) {
  static const char *const nulls[] = {"", "~", "null", "Null", "NULL", NULL};
  static const char *const trues[] = {"true", "True", "TRUE", "yes", "Yes", "YES", "on", "On", "ON", NULL};
  static const char *const falses[] = {"false", "False", "FALSE", "no", "No", "NO", "off", "Off", "OFF", NULL};
  if (is_any(s, nulls)) return cJSON_CreateNull();
  if (is_any(s, trues)) return cJSON_CreateTrue();
  if (is_any(s, falses)) return cJSON_CreateFalse();
  char clean[128];
  size_t n = 0;
  for (const char *p = s; *p && n + 1 < sizeof clean; p++)
    if (*p != '_') clean[n++] = *p;
  clean[n] = 0;
  if (n && strlen(s) < sizeof clean) {
    char *end;
    errno = 0;
    long long i = strtoll(clean, &end, 0);
    /* beyond 2^53 a double would round it: kept as its digits (raw), which
     * the config reader reports as too large, or reads as a float */
    if (!*end && !errno) return i > (1LL << 53) || i < -(1LL << 53) ? cJSON_CreateRaw(clean) : cJSON_CreateNumber((double)i);
    if (!*end && errno == ERANGE) return cJSON_CreateRaw(clean);
    double x = strtod(clean, &end);
    if (!*end && !isnan(x) && strcasecmp(clean, "inf") != 0) return cJSON_CreateNumber(x);
    if (strcmp(clean, ".inf") == 0 || strcmp(clean, "+.inf") == 0) return cJSON_CreateNumber(1e308 * 10);
    if (strcmp(clean, "-.inf") == 0) return cJSON_CreateNumber(-1e308 * 10);
  }
  return cJSON_CreateString(s);
}

/* A compression config is a few dozen nodes; these caps refuse hostile
 * documents before they cost time or memory: nesting deeper than
 * MIL_CONFIG_MAX_DEPTH (libyaml's scanner is quadratic in the depth, so the
 * depth is checked on the event stream before the document is loaded), and
 * aliases whose expansion ("billion laughs") would build more than
 * MIL_CONFIG_MAX_NODES nodes. */
typedef struct yctx {
  yaml_document_t *doc;
  size_t nodes;       /* nodes built so far, aliases counted at each use */
  const char *why;    /* the first failure */
  size_t line;        /* its line (1-based), 0 when none */
} yctx;

static cJSON *to_json(yctx *c, yaml_node_t *node, int depth) {
  if (!node) {
    c->why = "a node is missing";
    return NULL;
  }
  if (depth > MIL_CONFIG_MAX_DEPTH) {
    c->why = "nested too deeply";
    c->line = node->start_mark.line + 1;
    return NULL;
  }
  if (++c->nodes > MIL_CONFIG_MAX_NODES) {
    c->why = "aliases expand to too many nodes";
    c->line = node->start_mark.line + 1;
    return NULL;
  }
  cJSON *r = NULL;
  switch (node->type) {
  case YAML_SCALAR_NODE: {
    const char *s = (const char *)node->data.scalar.value;
    r = node->data.scalar.style == YAML_PLAIN_SCALAR_STYLE ? plain_scalar(s) : cJSON_CreateString(s);
    break;
  }
  case YAML_SEQUENCE_NODE: {
    r = cJSON_CreateArray();
    for (yaml_node_item_t *it = node->data.sequence.items.start; r && it < node->data.sequence.items.top; it++) {
      cJSON *x = to_json(c, yaml_document_get_node(c->doc, *it), depth + 1);
      if (!x) {
        cJSON_Delete(r);
        return NULL;
      }
      cJSON_AddItemToArray(r, x);
    }
    break;
  }
  case YAML_MAPPING_NODE: {
    r = cJSON_CreateObject();
    for (yaml_node_pair_t *pr = node->data.mapping.pairs.start; r && pr < node->data.mapping.pairs.top; pr++) {
      yaml_node_t *k = yaml_document_get_node(c->doc, pr->key);
      if (!k || k->type != YAML_SCALAR_NODE) {
        c->why = "a mapping key is not a scalar";
        c->line = (k ? k->start_mark.line : node->start_mark.line) + 1;
        cJSON_Delete(r);
        return NULL;
      }
      cJSON *x = to_json(c, yaml_document_get_node(c->doc, pr->value), depth + 1);
      if (!x) {
        cJSON_Delete(r);
        return NULL;
      }
      cJSON_AddItemToObject(r, (const char *)k->data.scalar.value, x);
    }
    break;
  }
  default: c->why = "a node has no type"; return NULL;
  }
  if (!r && !c->why) c->why = "out of memory";
  return r;
}

/* Walks the event stream once: refuses nesting deeper than
 * MIL_CONFIG_MAX_DEPTH at the first event past it (so a document nested
 * 100,000 levels costs 65 levels of scanning) and syntax errors. */
static mil_status check_depth(const char *text, size_t len, const char *source, mil_diag *d) {
  yaml_parser_t parser;
  if (!yaml_parser_initialize(&parser)) return mil_diag_error(d, MIL_ERR_NOMEM, "%s: out of memory", source);
  yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
  mil_status st = MIL_OK;
  int depth = 0;
  for (;;) {
    yaml_event_t ev;
    if (!yaml_parser_parse(&parser, &ev)) {
      st = mil_diag_error(d, MIL_ERR_PARSE, "%s:%zu:%zu: YAML: %s", source, parser.problem_mark.line + 1,
                          parser.problem_mark.column + 1, parser.problem ? parser.problem : "syntax error");
      break;
    }
    yaml_event_type_t t = ev.type;
    size_t line = ev.start_mark.line + 1;
    yaml_event_delete(&ev);
    if (t == YAML_SEQUENCE_START_EVENT || t == YAML_MAPPING_START_EVENT) {
      if (++depth > MIL_CONFIG_MAX_DEPTH) {
        st = mil_diag_error(d, MIL_ERR_INVALID, "%s:%zu: YAML nested more than %d levels deep (a compression "
                            "config needs at most 4)", source, line, MIL_CONFIG_MAX_DEPTH);
        break;
      }
    } else if (t == YAML_SEQUENCE_END_EVENT || t == YAML_MAPPING_END_EVENT) {
      depth--;
    } else if (t == YAML_STREAM_END_EVENT) {
      break;
    }
  }
  yaml_parser_delete(&parser);
  return st;
}

mil_status mil_compress_config_from_yaml(const char *text, size_t len, const char *source, mil_cfg_type default_type,
                                         mil_compress_config **out, mil_diag *d) {
  if (!source) source = "config";
  if (len == (size_t)-1) len = strlen(text);
  *out = NULL;
  mil_status st = check_depth(text, len, source, d);
  if (st != MIL_OK) return st;
  yaml_parser_t parser;
  yaml_document_t doc;
  if (!yaml_parser_initialize(&parser)) return mil_diag_error(d, MIL_ERR_NOMEM, "%s: out of memory", source);
  yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
  if (!yaml_parser_load(&parser, &doc)) {
    st = mil_diag_error(d, MIL_ERR_PARSE, "%s:%zu:%zu: YAML: %s", source, parser.problem_mark.line + 1,
                                   parser.problem_mark.column + 1, parser.problem ? parser.problem : "syntax error");
    yaml_parser_delete(&parser);
    return st;
  }
  yaml_node_t *root = yaml_document_get_root_node(&doc);
  if (!root) {
    st = mil_diag_error(d, MIL_ERR_INVALID, "%s: the YAML document is empty", source);
  } else {
    yctx c = {.doc = &doc};
    cJSON *j = to_json(&c, root, 0);
    if (j)
      st = compress_config_from_cjson(j, source, default_type, out, d);
    else if (c.nodes > MIL_CONFIG_MAX_NODES)
      st = mil_diag_error(d, MIL_ERR_INVALID, "%s:%zu: YAML aliases expand to more than %d nodes (an alias bomb?); "
                          "a compression config has a few dozen", source, c.line, MIL_CONFIG_MAX_NODES);
    else if (c.line)
      st = mil_diag_error(d, MIL_ERR_INVALID, "%s:%zu: YAML: %s", source, c.line, c.why);
    else
      st = mil_diag_error(d, strcmp(c.why ? c.why : "", "out of memory") == 0 ? MIL_ERR_NOMEM : MIL_ERR_INVALID,
                          "%s: YAML: %s", source, c.why ? c.why : "cannot be read");
    cJSON_Delete(j);
  }
  yaml_document_delete(&doc);
  yaml_parser_delete(&parser);
  return st;
}
