/* OptimizationConfig.from_yaml: the YAML document is read with libyaml
 * into the cJSON tree config.c reads (yaml.safe_load's typing of plain
 * scalars: null, bools, ints, floats; quoted scalars stay strings). */
#include <errno.h>
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
    if (!*end && !errno) return cJSON_CreateNumber((double)i);
    double x = strtod(clean, &end);
    if (!*end && strcasecmp(clean, "nan") != 0 && strcasecmp(clean, "inf") != 0) return cJSON_CreateNumber(x);
    if (strcmp(clean, ".inf") == 0 || strcmp(clean, "+.inf") == 0) return cJSON_CreateNumber(1e308 * 10);
    if (strcmp(clean, "-.inf") == 0) return cJSON_CreateNumber(-1e308 * 10);
  }
  return cJSON_CreateString(s);
}

static cJSON *to_json(yaml_document_t *doc, yaml_node_t *node, int depth) {
  if (!node || depth > 64) return NULL;
  switch (node->type) {
  case YAML_SCALAR_NODE: {
    const char *s = (const char *)node->data.scalar.value;
    return node->data.scalar.style == YAML_PLAIN_SCALAR_STYLE ? plain_scalar(s) : cJSON_CreateString(s);
  }
  case YAML_SEQUENCE_NODE: {
    cJSON *a = cJSON_CreateArray();
    for (yaml_node_item_t *it = node->data.sequence.items.start; a && it < node->data.sequence.items.top; it++) {
      cJSON *x = to_json(doc, yaml_document_get_node(doc, *it), depth + 1);
      if (!x) {
        cJSON_Delete(a);
        return NULL;
      }
      cJSON_AddItemToArray(a, x);
    }
    return a;
  }
  case YAML_MAPPING_NODE: {
    cJSON *o = cJSON_CreateObject();
    for (yaml_node_pair_t *pr = node->data.mapping.pairs.start; o && pr < node->data.mapping.pairs.top; pr++) {
      yaml_node_t *k = yaml_document_get_node(doc, pr->key);
      cJSON *x = to_json(doc, yaml_document_get_node(doc, pr->value), depth + 1);
      if (!k || k->type != YAML_SCALAR_NODE || !x) {
        cJSON_Delete(x);
        cJSON_Delete(o);
        return NULL;
      }
      cJSON_AddItemToObject(o, (const char *)k->data.scalar.value, x);
    }
    return o;
  }
  default: return NULL;
  }
}

mil_status mil_compress_config_from_yaml(const char *text, size_t len, const char *source, mil_cfg_type default_type,
                                         mil_compress_config **out, mil_diag *d) {
  if (!source) source = "config";
  if (len == (size_t)-1) len = strlen(text);
  *out = NULL;
  yaml_parser_t parser;
  yaml_document_t doc;
  if (!yaml_parser_initialize(&parser)) return mil_diag_error(d, MIL_ERR_NOMEM, "%s: out of memory", source);
  yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
  if (!yaml_parser_load(&parser, &doc)) {
    mil_status st = mil_diag_error(d, MIL_ERR_PARSE, "%s:%zu:%zu: YAML: %s", source, parser.problem_mark.line + 1,
                                   parser.problem_mark.column + 1, parser.problem ? parser.problem : "syntax error");
    yaml_parser_delete(&parser);
    return st;
  }
  yaml_node_t *root = yaml_document_get_root_node(&doc);
  mil_status st;
  if (!root) {
    st = mil_diag_error(d, MIL_ERR_INVALID, "%s: the YAML document is empty", source);
  } else {
    cJSON *j = to_json(&doc, root, 0);
    st = j ? compress_config_from_cjson(j, source, default_type, out, d)
           : mil_diag_error(d, MIL_ERR_INVALID, "%s: mapping keys must be scalars (or out of memory)", source);
    cJSON_Delete(j);
  }
  yaml_document_delete(&doc);
  yaml_parser_delete(&parser);
  return st;
}
