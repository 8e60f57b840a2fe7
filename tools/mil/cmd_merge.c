/* mil merge: several models' functions into one multifunction model whose
 * shared weights are stored once (coremltools' MultiFunctionDescriptor and
 * save_multifunction; mil/utils.h mil_utils_save_multifunction). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "mil/model.h"
#include "mil/utils.h"

static void help(void) {
  printf("usage: mil merge SOURCE... -o OUT.mlpackage [--default NAME]\n\n"
         "Writes one multifunction model (specification version 9 / iOS18 or later) made of\n"
         "functions of the SOURCE models, as coremltools' save_multifunction does: consts equal\n"
         "across functions are stored once in the merged weight.bin (a base model plus a copy\n"
         "with one changed layer takes the base's size plus that layer). Each SOURCE is\n\n"
         "  MODEL:FUNCTION:TARGET  function FUNCTION of MODEL, named TARGET in the result\n"
         "  MODEL:FUNCTION         the same, keeping the name FUNCTION\n"
         "  MODEL                  every function of MODEL under its own name (add_model)\n\n"
         "MODEL is a .mlpackage or .mlmodel; a single-function model's function is \"main\".\n\n"
         "  -o OUT          the merged model (.mlpackage or .mlmodel), written atomically\n"
         "  --default NAME  the default function (defaultFunctionName); default: the first\n\n"
         "Example: mil merge base.mlpackage:main:base lora.mlpackage:main:adapted \\\n"
         "             -o both.mlpackage --default adapted\n"
         "then: mil run both.mlpackage --function adapted --input x=x.npy\n");
}

/* Splits "MODEL[:FUNCTION[:TARGET]]" at the colons after the model's
 * extension. false when the argument names no .mlpackage / .mlmodel. */
static bool split_source(char *s, char **model, char **fn, char **target) {
  const char *exts[] = {".mlpackage", ".mlmodel"};
  char *cut = NULL;
  for (int e = 0; e < 2 && !cut; e++) {
    size_t el = strlen(exts[e]);
    for (char *p = strstr(s, exts[e]); p; p = strstr(p + 1, exts[e]))
      if (p[el] == ':' || p[el] == 0 || (p[el] == '/' && (p[el + 1] == ':' || p[el + 1] == 0))) cut = p + el;
  }
  if (!cut) return false;
  if (*cut == '/') cut++;
  *model = s;
  *fn = *target = NULL;
  if (*cut == ':') {
    *cut = 0;
    *fn = cut + 1;
    char *c = strchr(*fn, ':');
    if (c) {
      *c = 0;
      *target = c + 1;
    }
  }
  return true;
}

int cmd_merge(int argc, char **argv) {
  const char *out = NULL, *dflt = NULL;
  int cap = argc + 64, n = 0;
  mil_merge_function *fns = calloc((size_t)cap, sizeof *fns);
  char **owned = calloc((size_t)cap, sizeof *owned);
  int n_owned = 0, rc = CLI_FAIL;
  mil_diag d;
  mil_diag_init(&d);
  if (!fns || !owned) {
    fprintf(stderr, "mil: error: out of memory\n");
    goto done;
  }
  for (int i = 1; i < argc; i++) {
    const char *s = argv[i];
    if (cli_is_help(s)) {
      help();
      rc = CLI_OK;
      goto done;
    } else if (!strcmp(s, "-o") || !strcmp(s, "--default")) {
      if (i + 1 >= argc) {
        rc = cli_usage_error("merge", "%s needs a value", s);
        goto done;
      }
      if (s[1] == 'o') out = argv[++i];
      else dflt = argv[++i];
    } else if (s[0] == '-' && s[1]) {
      rc = cli_usage_error("merge", "unknown option '%s'", s);
      goto done;
    } else {
      char *copy = strdup(s), *model, *fn, *target;
      if (!copy) goto done;
      owned[n_owned++] = copy;
      if (!split_source(copy, &model, &fn, &target) || (fn && !*fn) || (target && !*target)) {
        rc = cli_usage_error("merge", "'%s' is not MODEL[:FUNCTION[:TARGET]] with MODEL a .mlpackage or .mlmodel", s);
        goto done;
      }
      if (fn) {
        if (n == cap) goto done;
        fns[n++] = (mil_merge_function){model, fn, target ? target : fn};
        continue;
      }
      /* every function of the model, under its own name */
      mil_model *m = NULL;
      if (mil_model_load(model, &m, &d) != MIL_OK) {
        cli_print_diag(&d);
        goto done;
      }
      const mil_model_desc *md = mil_model_description(m);
      int32_t nf = md->n_functions ? md->n_functions : 1;
      for (int32_t k = 0; k < nf && n < cap && n_owned < cap; k++) {
        char *name = strdup(md->multi_function ? md->functions[k].name : "main");
        if (!name) break;
        owned[n_owned++] = name;
        fns[n++] = (mil_merge_function){model, name, name};
      }
      mil_model_free(m);
    }
  }
  if (!n) {
    rc = cli_usage_error("merge", "expected at least one SOURCE model");
    goto done;
  }
  if (!out) {
    rc = cli_usage_error("merge", "expected -o OUT");
    goto done;
  }
  if (!dflt) dflt = fns[0].target_function;
  mil_save_cleanup_on_signals();
  if (mil_utils_save_multifunction(fns, n, dflt, out, &d) != MIL_OK) {
    cli_print_diag(&d);
    goto done;
  }
  printf("wrote %s: %d functions, default %s\n", cli_esc(out), n, cli_esc(dflt));
  rc = CLI_OK;
done:
  mil_diag_clear(&d);
  for (int i = 0; i < n_owned; i++) free(owned[i]);
  free(owned);
  free(fns);
  return rc;
}
