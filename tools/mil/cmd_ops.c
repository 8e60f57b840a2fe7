/* mil ops [OPSET]: the op reference — every op of an opset with its inputs
 * (name, kinds, dtypes, const/optional, default) and its output count. */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "cli.h"
#include "mil/ops.h"

static void help(void) {
  printf("usage: mil ops [OPSET] [--op TYPE]\n\n"
         "List the ops of OPSET (iOS15, iOS16, iOS17, iOS18, or CoreML5..CoreML8;\n"
         "default iOS18) with their inputs: name, accepted kinds and dtypes, whether\n"
         "the input must be const or is optional, and coremltools' default.\n"
         "--op TYPE shows one op only.\n");
}

/* The targets ML Programs run on: iOS15..iOS18 (CoreML5..CoreML8); -1 otherwise. */
static int parse_opset(const char *s) {
  int v = mil_opset_version(s);
  for (int k = MIL_IOS15; v < 0 && k <= MIL_IOS18; k++)
    if (strcasecmp(s, mil_opset_target_name(k)) == 0) v = k;
  return v >= MIL_IOS15 && v <= MIL_IOS18 ? v : -1;
}

static void kinds_str(uint32_t k, char *buf, size_t n) {
  buf[0] = 0;
  const char *names[] = {"tensor", "scalar", "list", "tuple", "state", "dict"};
  for (int i = 0; i < 6; i++)
    if (k & (1u << i)) {
      size_t l = strlen(buf);
      snprintf(buf + l, n - l, "%s%s", l ? "|" : "", names[i]);
    }
}

static void dtypes_str(uint64_t m, char *buf, size_t n) {
  buf[0] = 0;
  if (!m) {
    snprintf(buf, n, "any");
    return;
  }
  for (int dt = 0; dt < 128; dt++) {
    if (!mil_dtype_is_valid(dt) || !(m & MIL_DTB(dt))) continue;
    size_t l = strlen(buf);
    snprintf(buf + l, n - l, "%s%s", l ? "," : "", mil_dtype_name((mil_dtype)dt));
  }
}

int cmd_ops(int argc, char **argv) {
  int version = MIL_IOS18;
  const char *only = NULL;
  bool opset_given = false;
  for (int i = 1; i < argc; i++) {
    if (cli_is_help(argv[i])) {
      help();
      return CLI_OK;
    } else if (strcmp(argv[i], "--op") == 0) {
      if (i + 1 >= argc) return cli_usage_error("ops", "--op needs a value");
      if (only) return cli_usage_error("ops", "--op given twice");
      only = argv[++i];
    } else if (argv[i][0] == '-') {
      return cli_usage_error("ops", "unknown option '%s'", argv[i]);
    } else {
      if (opset_given) return cli_usage_error("ops", "unexpected argument '%s' (one OPSET only)", argv[i]);
      opset_given = true;
      version = parse_opset(argv[i]);
      if (version < 0)
        return cli_usage_error("ops", "unknown opset '%s'; choose one of iOS15, iOS16, iOS17, iOS18, CoreML5, CoreML6, "
                               "CoreML7, CoreML8", argv[i]);
    }
  }
  size_t n = mil_op_def_count(), shown = 0;
  printf("# ops of %s (%s)\n", mil_opset_target_name(version), mil_opset_name(version));
  for (size_t i = 0; i < n; i++) {
    const mil_op_def *d = mil_op_def_at(i);
    if (mil_op_def_find(d->type, version) != d) continue; /* not the variant in force */
    if (only && strcmp(only, d->type) != 0) continue;
    shown++;
    printf("\n%s  [%s, since %s]", d->type, d->family, mil_opset_target_name(d->opset));
    if (d->n_outputs >= 0) printf("  outputs: %d", d->n_outputs);
    else printf("  outputs: variable");
    if (d->fold) printf("  folds");
    printf("\n");
    if (d->doc) printf("  %s\n", d->doc);
    for (int32_t k = 0; k < d->n_inputs; k++) {
      const mil_input_spec *s = &d->inputs[k];
      if (s->flags & MIL_IF_INTERNAL) continue;
      char kb[64], db[256];
      kinds_str(s->kinds, kb, sizeof kb);
      dtypes_str(s->dtypes, db, sizeof db);
      printf("  %-22s %-14s %-40s%s%s", s->name, kb, db, (s->flags & MIL_IF_CONST) ? " const" : "",
             (s->flags & MIL_IF_OPTIONAL) ? " optional" : "");
      if (s->type_var) printf(" type %s", s->type_var);
      if (s->default_doc) printf(" default %s", s->default_doc);
      printf("\n");
    }
  }
  if (only && !shown) {
    fprintf(stderr, "mil ops: no op '%s' in %s\n", only, mil_opset_target_name(version));
    return CLI_FAIL;
  }
  printf("\n%zu ops\n", shown);
  return CLI_OK;
}
