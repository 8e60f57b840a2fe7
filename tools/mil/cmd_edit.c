/* mil edit: rename inputs and outputs, switch fp32/fp16 I/O, set metadata
 * and feature descriptions (coremltools' rename_feature and
 * change_input_output_tensor_type; mil/utils.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "mil/model.h"
#include "mil/utils.h"

static void help(void) {
  printf("usage: mil edit MODEL -o OUT [--rename OLD=NEW]... [--io-type fp16|fp32]\n"
         "                [--function F]... [--input NAME]... [--output NAME]...\n"
         "                [--set-metadata KEY=VALUE]... [--remove-metadata KEY]...\n"
         "                [--feature-description NAME=TEXT]... [--randomize-weights SEED]\n\n"
         "Edits the interface of MODEL and writes it to OUT (atomically; OUT may be MODEL).\n"
         "Steps run in this order: renames, I/O type change, metadata.\n\n"
         "  --rename OLD=NEW      rename the input or output OLD everywhere (program, description,\n"
         "                        classifier fields), as coremltools' rename_feature\n"
         "  --rename-input OLD=NEW, --rename-output OLD=NEW   only among inputs / outputs\n"
         "  --io-type fp16        change_input_output_tensor_type(FLOAT32 -> FLOAT16): inputs get the\n"
         "                        new type and a cast to the old one (x_to_fp32), outputs a cast to\n"
         "                        the new type (renamed y_to_fp16); opsets older than iOS16 are\n"
         "                        raised to iOS16. --io-type fp32 changes fp16 I/O to fp32\n"
         "  --function F          functions whose I/O type changes (default: main)\n"
         "  --input NAME          inputs whose type changes ('*': all; default: none, as coremltools)\n"
         "  --output NAME         outputs whose type changes ('*': all; default: all)\n"
         "  --set-metadata KEY=VALUE   short_description, author, license, version, or a\n"
         "                        userDefined key\n"
         "  --remove-metadata KEY remove one of those\n"
         "  --feature-description NAME=TEXT   shortDescription of an input/output/state\n"
         "  --randomize-weights SEED   randomize_weights: every weight-file const gets random\n"
         "                        values (floats uniform in [0, 1), integers 0) from SEED\n\n"
         "Example: mil edit model.mlpackage -o app.mlpackage --rename x=input_ids \\\n"
         "             --rename logits=scores --io-type fp16 --input input_ids\n");
}

#define MAXN 64

typedef struct edit_args {
  const char *in, *out, *io_type, *randomize;
  const char *renames[MAXN];
  char rename_kind[MAXN]; /* 'b' both, 'i' inputs, 'o' outputs */
  int n_renames;
  const char *functions[MAXN], *inputs[MAXN], *outputs[MAXN];
  int n_functions, n_inputs, n_outputs;
  const char *meta_set[MAXN], *meta_remove[MAXN], *feature_desc[MAXN];
  int n_meta_set, n_meta_remove, n_feature_desc;
} edit_args;

static int parse(int argc, char **argv, edit_args *a) {
  for (int i = 1; i < argc; i++) {
    const char *s = argv[i];
    if (cli_is_help(s)) {
      help();
      return -1;
    }
    if (s[0] == '-' && s[1]) {
      if (i + 1 >= argc) return cli_usage_error("edit", "%s needs a value", s);
      const char *v = argv[++i];
      bool kv = !strcmp(s, "--rename") || !strcmp(s, "--rename-input") || !strcmp(s, "--rename-output") ||
                !strcmp(s, "--set-metadata") || !strcmp(s, "--feature-description");
      if (kv && !strchr(v, '=')) return cli_usage_error("edit", "%s expects NAME=VALUE, got '%s'", s, v);
      if (!strcmp(s, "-o")) a->out = v;
      else if (!strcmp(s, "--randomize-weights")) a->randomize = v;
      else if (!strcmp(s, "--io-type")) {
        if (strcmp(v, "fp16") && strcmp(v, "fp32"))
          return cli_usage_error("edit", "--io-type expects fp16 or fp32, got '%s'", v);
        a->io_type = v;
      } else if (!strncmp(s, "--rename", 8) && a->n_renames < MAXN) {
        a->rename_kind[a->n_renames] = s[8] ? s[9] : 'b';
        a->renames[a->n_renames++] = v;
      } else if (!strcmp(s, "--function") && a->n_functions < MAXN) a->functions[a->n_functions++] = v;
      else if (!strcmp(s, "--input") && a->n_inputs < MAXN) a->inputs[a->n_inputs++] = v;
      else if (!strcmp(s, "--output") && a->n_outputs < MAXN) a->outputs[a->n_outputs++] = v;
      else if (!strcmp(s, "--set-metadata") && a->n_meta_set < MAXN) a->meta_set[a->n_meta_set++] = v;
      else if (!strcmp(s, "--remove-metadata") && a->n_meta_remove < MAXN) a->meta_remove[a->n_meta_remove++] = v;
      else if (!strcmp(s, "--feature-description") && a->n_feature_desc < MAXN)
        a->feature_desc[a->n_feature_desc++] = v;
      else return cli_usage_error("edit", "unknown option '%s' (or given more than %d times)", s, MAXN);
    } else if (!a->in) {
      a->in = s;
    } else {
      return cli_usage_error("edit", "unexpected argument '%s'", s);
    }
  }
  if (!a->in) return cli_usage_error("edit", "expected a MODEL");
  if (!a->out) return cli_usage_error("edit", "expected -o OUT");
  return 0;
}

/* Splits "k=v" into buf (k) and returns v. */
static const char *split_kv(const char *s, char *buf, size_t n) {
  const char *eq = strchr(s, '=');
  size_t k = (size_t)(eq - s) < n - 1 ? (size_t)(eq - s) : n - 1;
  memcpy(buf, s, k);
  buf[k] = 0;
  return eq + 1;
}

static mil_status apply(mil_model *m, const edit_args *a, mil_diag *d) {
  char key[512];
  mil_status st = MIL_OK;
  for (int i = 0; i < a->n_renames && st == MIL_OK; i++) {
    const char *nv = split_kv(a->renames[i], key, sizeof key);
    char k = a->rename_kind[i];
    st = mil_utils_rename_feature(m, key, nv, k != 'o', k != 'i', d);
  }
  if (st == MIL_OK && a->io_type) {
    bool to16 = !strcmp(a->io_type, "fp16");
    st = mil_utils_change_io_type(m, to16 ? MIL_DT_FP32 : MIL_DT_FP16, to16 ? MIL_DT_FP16 : MIL_DT_FP32,
                                  a->n_functions ? a->functions : NULL, a->n_functions,
                                  a->n_inputs ? a->inputs : NULL, a->n_inputs, a->n_outputs ? a->outputs : NULL,
                                  a->n_outputs, d);
  }
  for (int i = 0; i < a->n_meta_set && st == MIL_OK; i++) {
    const char *v = split_kv(a->meta_set[i], key, sizeof key);
    st = mil_utils_set_model_metadata(m, key, v, d);
  }
  for (int i = 0; i < a->n_meta_remove && st == MIL_OK; i++)
    st = mil_utils_set_model_metadata(m, a->meta_remove[i], NULL, d);
  for (int i = 0; i < a->n_feature_desc && st == MIL_OK; i++) {
    const char *v = split_kv(a->feature_desc[i], key, sizeof key);
    st = mil_utils_set_feature_description(m, NULL, key, v, d);
  }
  if (st == MIL_OK && a->randomize) {
    char *end;
    unsigned long long seed = strtoull(a->randomize, &end, 0);
    if (*end || !*a->randomize)
      return mil_diag_error(d, MIL_ERR_INVALID, "--randomize-weights expects a seed (an integer), got '%s'",
                            a->randomize);
    st = mil_utils_randomize_weights(m, (uint64_t)seed, NULL, d);
  }
  return st;
}

int cmd_edit(int argc, char **argv) {
  edit_args *a = calloc(1, sizeof *a);
  if (!a) return CLI_FAIL;
  int rc = parse(argc, argv, a);
  if (rc) {
    free(a);
    return rc < 0 ? CLI_OK : rc;
  }
  mil_diag d;
  mil_diag_init(&d);
  mil_model *m = NULL;
  rc = CLI_FAIL;
  if (mil_model_load(a->in, &m, &d) == MIL_OK && apply(m, a, &d) == MIL_OK) {
    mil_save_cleanup_on_signals();
    if (mil_model_save(m, a->out, &d) == MIL_OK) {
      printf("wrote %s\n", cli_esc(a->out));
      rc = CLI_OK;
    }
  }
  if (rc != CLI_OK) cli_print_diag(&d);
  mil_model_free(m);
  mil_diag_clear(&d);
  free(a);
  return rc;
}
