/* mil ops [OPSET]: the op reference — every op of an opset with its inputs
 * (name, kinds, dtypes, const/optional, default) and its output count. */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "cli.h"
#include "mil/ops.h"

static void help(void) {
  printf("usage: mil ops [OPSET] [--op TYPE]\n\n"
         "List the ops of OPSET (iOS15, iOS16, iOS17, iOS18, or CoreML5..CoreML9;\n"
         "default iOS18) with their inputs: name, accepted kinds and dtypes, whether\n"
         "the input must be const or is optional, and coremltools' default.\n"
         "--op TYPE shows one op only.\n");
}

static int parse_opset(const char *s) {
  int v = mil_opset_version(s);
  if (v > 0) return v;
  for (int k = MIL_IOS13; k <= MIL_IOS26; k++)
    if (strcasecmp(s, mil_opset_target_name(k)) == 0) return k;
  return -1;
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
  for (int i = 1; i < argc; i++) {
    if (cli_is_help(argv[i])) {
      help();
      return CLI_OK;
    } else if (strcmp(argv[i], "--op") == 0 && i + 1 < argc) {
      only = argv[++i];
    } else if (argv[i][0] == '-') {
      return cli_usage_error("ops", "unknown option '%s'", argv[i]);
    } else {
      version = parse_opset(argv[i]);
      if (version < 0) return cli_usage_error("ops", "unknown opset '%s' (use iOS15..iOS18 or CoreML5..CoreML9)", argv[i]);
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
