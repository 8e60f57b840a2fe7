/* mil materialize: fixed-shape functions of a flexible-shape model
 * (coremltools' materialize_dynamic_shape_mlmodel; mil/utils.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "cli.h"
#include "mil/model.h"
#include "mil/utils.h"

static void help(void) {
  printf("usage: mil materialize MODEL -o OUT.mlpackage --function NAME:INPUT=D0,D1,...[:INPUT=...]...\n"
         "                       [--source-function F]\n\n"
         "Writes MODEL with new functions whose flexible input shapes are fixed, as coremltools'\n"
         "materialize_dynamic_shape_mlmodel: common::materialize_symbolic_shape_program, then the\n"
         "DEFAULT pipeline; the functions share the weights (each stored once). The result is a\n"
         "multifunction model (iOS18) unless only \"main\" is materialized in place.\n\n"
         "  --function NAME:INPUT=SHAPE[:INPUT=SHAPE]...   a new function NAME (or, NAME being the\n"
         "                        source function, that function fixed in place) with each INPUT\n"
         "                        given the comma-separated SHAPE\n"
         "  --map JSON            the whole function_name_to_materialization_map as JSON instead\n"
         "  --source-function F   the function to materialize (default: main)\n"
         "  -o OUT                the result (written atomically)\n\n"
         "Example: mil materialize dyn.mlpackage -o fixed.mlpackage \\\n"
         "             --function batch_1:x=1,64 --function batch_4:x=4,64\n");
}

/* Adds "NAME:INPUT=D0,D1:INPUT2=..." to the map. */
static bool add_function(cJSON *map, const char *spec) {
  char *s = strdup(spec);
  if (!s) return false;
  bool ok = false;
  char *colon = strchr(s, ':');
  if (!colon) goto out;
  *colon = 0;
  if (!*s || cJSON_GetObjectItemCaseSensitive(map, s)) goto out;
  cJSON *fn = cJSON_AddObjectToObject(map, s);
  for (char *part = colon + 1; part && *part;) {
    char *next = strchr(part, ':');
    if (next) *next++ = 0;
    char *eq = strchr(part, '=');
    if (!eq || eq == part) goto out;
    *eq = 0;
    cJSON *shape = cJSON_AddArrayToObject(fn, part);
    for (char *dim = eq + 1; dim && *dim;) {
      char *end;
      long long v = strtoll(dim, &end, 10);
      if (end == dim || v < 1 || (*end && *end != ',')) goto out;
      cJSON_AddItemToArray(shape, cJSON_CreateNumber((double)v));
      dim = *end ? end + 1 : NULL;
    }
    if (!cJSON_GetArraySize(shape)) goto out;
    part = next;
  }
  ok = cJSON_GetArraySize(fn) > 0;
out:
  free(s);
  return ok;
}

int cmd_materialize(int argc, char **argv) {
  const char *in = NULL, *out = NULL, *src = "main", *map_text = NULL;
  cJSON *map = cJSON_CreateObject();
  int rc = CLI_FAIL;
  char *json = NULL;
  mil_model *m = NULL;
  mil_diag d;
  mil_diag_init(&d);
  for (int i = 1; i < argc; i++) {
    const char *s = argv[i];
    if (cli_is_help(s)) {
      help();
      rc = CLI_OK;
      goto done;
    } else if (s[0] == '-' && s[1]) {
      if (i + 1 >= argc) {
        rc = cli_usage_error("materialize", "%s needs a value", s);
        goto done;
      }
      const char *v = argv[++i];
      if (!strcmp(s, "-o")) out = v;
      else if (!strcmp(s, "--source-function")) src = v;
      else if (!strcmp(s, "--map")) map_text = v;
      else if (!strcmp(s, "--function")) {
        if (!add_function(map, v)) {
          rc = cli_usage_error("materialize", "--function expects NAME:INPUT=D0,D1,...[:INPUT=...] with positive "
                               "dims and a new NAME, got '%s'", v);
          goto done;
        }
      } else {
        rc = cli_usage_error("materialize", "unknown option '%s'", s);
        goto done;
      }
    } else if (!in) {
      in = s;
    } else {
      rc = cli_usage_error("materialize", "unexpected argument '%s'", s);
      goto done;
    }
  }
  if (!in || !out) {
    rc = cli_usage_error("materialize", "expected MODEL and -o OUT");
    goto done;
  }
  if (!map_text && !cJSON_GetArraySize(map)) {
    rc = cli_usage_error("materialize", "expected at least one --function (or --map)");
    goto done;
  }
  json = map_text ? strdup(map_text) : cJSON_PrintUnformatted(map);
  if (!json) goto done;
  if (mil_model_load(in, &m, &d) != MIL_OK || mil_utils_materialize(m, json, out, src, &d) != MIL_OK) {
    cli_print_diag(&d);
    goto done;
  }
  printf("wrote %s\n", cli_esc(out));
  rc = CLI_OK;
done:
  mil_model_free(m);
  mil_diag_clear(&d);
  free(json);
  cJSON_Delete(map);
  return rc;
}
