/* Printing and writing classify's outputs for `mil run`. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "run_dict.h"

/* The label or dictionary as JSON text (malloc'ed), or NULL. */
static char *to_json(const mil_tensor *t, const mil_interp_dict *dict) {
  cJSON *j = NULL;
  if (dict) {
    j = cJSON_CreateObject();
    for (int64_t k = 0; j && k < dict->n; k++) {
      char key[32];
      if (!dict->str_keys) snprintf(key, sizeof key, "%lld", (long long)dict->int_keys[k]);
      if (!cJSON_AddNumberToObject(j, dict->str_keys ? dict->str_keys[k] : key, dict->values[k])) {
        cJSON_Delete(j);
        return NULL;
      }
    }
  } else if (t->dtype == MIL_DT_STRING && t->numel == 1) {
    j = cJSON_CreateString(((const char *const *)t->data)[0]);
  } else if (t->dtype == MIL_DT_INT64 && t->numel == 1) {
    j = cJSON_CreateNumber((double)((const int64_t *)t->data)[0]);
  } else if (t->dtype == MIL_DT_STRING) {
    j = cJSON_CreateStringArray((const char *const *)t->data, (int)t->numel);
  }
  char *s = j ? cJSON_Print(j) : NULL;
  cJSON_Delete(j);
  return s;
}

static mil_status write_json(const char *path, const char *text, mil_diag *d) {
  size_t n = strlen(path) + 32;
  char *tmp = malloc(n);
  if (!tmp) return mil_diag_error(d, MIL_ERR_NOMEM, "out of memory");
  snprintf(tmp, n, "%s.tmp-%ld", path, (long)getpid());
  FILE *f = fopen(tmp, "w");
  bool ok = f && fputs(text, f) >= 0 && fputc('\n', f) != EOF;
  if (f && fclose(f) != 0) ok = false;
  if (ok && rename(tmp, path) != 0) ok = false;
  if (!ok) remove(tmp);
  free(tmp);
  return ok ? MIL_OK : mil_diag_error(d, MIL_ERR_IO, "%s: cannot write the output", path);
}

/* Index order of the dictionary's values, largest first (insertion sort:
 * class counts are small). */
static void by_value(const mil_interp_dict *dict, int64_t *order) {
  for (int64_t k = 0; k < dict->n; k++) {
    int64_t j = k;
    while (j > 0 && dict->values[order[j - 1]] < dict->values[k]) {
      order[j] = order[j - 1];
      j--;
    }
    order[j] = k;
  }
}

static void print_dict(const char *name, const mil_interp_dict *dict) {
  printf("%s: dict of %lld (%s -> fp64)", name, (long long)dict->n, dict->str_keys ? "string" : "int64");
  int64_t *order = malloc((size_t)(dict->n ? dict->n : 1) * sizeof *order);
  if (order && dict->n) {
    by_value(dict, order);
    int64_t shown = dict->n < 5 ? dict->n : 5;
    printf(", highest:");
    for (int64_t k = 0; k < shown; k++) {
      int64_t i = order[k];
      if (dict->str_keys) printf("%s \"%s\" %.6g", k ? "," : "", dict->str_keys[i], dict->values[i]);
      else printf("%s %lld %.6g", k ? "," : "", (long long)dict->int_keys[i], dict->values[i]);
    }
    if (dict->n > shown) printf(" ... and %lld more", (long long)(dict->n - shown));
  }
  free(order);
  printf("\n");
}

bool cli_classifier_output(const mil_interp *ip, int32_t i, const char *json_path, mil_status *st, mil_diag *d) {
  *st = MIL_OK;
  const mil_tensor *t = mil_interp_output_at(ip, i);
  const mil_interp_dict *dict = mil_interp_output_dict(ip, i);
  bool int_label = t && t->dtype == MIL_DT_INT64 && t->numel == 1 && mil_interp_output_is_label(ip, i);
  if (!t || (!dict && t->dtype != MIL_DT_STRING && !int_label)) return false;
  const char *name = mil_interp_output_name(ip, i);
  if (dict) print_dict(name, dict);
  else if (int_label) printf("%s: %lld (int64 label)\n", name, (long long)((const int64_t *)t->data)[0]);
  else if (t->numel == 1) printf("%s: \"%s\" (string label)\n", name, ((const char *const *)t->data)[0]);
  else printf("%s: %lld strings\n", name, (long long)t->numel);
  if (!json_path) return true;
  char *text = to_json(t, dict);
  *st = text ? write_json(json_path, text, d) : mil_diag_error(d, MIL_ERR_NOMEM, "out of memory");
  cJSON_free(text);
  return true;
}
