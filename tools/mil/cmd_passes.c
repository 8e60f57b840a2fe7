/* mil passes [NAME]: list the graph passes (with their options and
 * defaults) and the predefined pipelines (with their passes), marking the
 * passes libmil does not implement yet. */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "mil/passes.h"

static void help(void) {
  printf("usage: mil passes [--implemented] [NAME]\n\n"
         "List every graph pass libmil knows (coremltools' names) with its options and\n"
         "their defaults, then the predefined pipelines with their passes. Passes not\n"
         "implemented yet are marked [not implemented] (in pipelines: a leading '-').\n"
         "With NAME (a pass, with or without \"common::\", or a pipeline), show only it.\n\n"
         "options:\n"
         "  --implemented   list only implemented passes\n");
}

static void print_pass(const mil_pass_def *p, bool detail) {
  bool impl = p->run != NULL;
  printf("%s%s\n    %s\n", p->name, impl ? "" : "  [not implemented]", p->doc ? p->doc : "");
  mil_pass_options *o = detail ? mil_pass_options_new(p) : NULL;
  for (int32_t i = 0; i < p->n_options; i++) {
    const mil_pass_option_def *od = &p->options[i];
    char val[256];
    if (o) mil_pass_opt_to_string(o, od->name, val, sizeof val);
    else snprintf(val, sizeof val, "%s", od->default_value ? od->default_value : "None");
    printf("    option %s: %s = %s%s%s\n", od->name, mil_pass_opt_type_name(od->type),
           od->default_value && !*od->default_value ? "\"\"" : val, od->doc ? "  -- " : "", od->doc ? od->doc : "");
  }
  mil_pass_options_free(o);
  if (detail && p->anchors) {
    printf("    runs only when the program has an op of type:");
    for (const char *const *a = p->anchors; *a; a++) printf("%s %s", a == p->anchors ? "" : ",", *a);
    printf("\n");
  }
}

static void print_pipeline(const char *name, bool one_per_line) {
  mil_pipeline *pl = NULL;
  if (mil_pipeline_new(name, &pl, NULL) != MIL_OK) return;
  int32_t n = mil_pipeline_n_passes(pl), missing = 0;
  for (int32_t i = 0; i < n; i++) missing += !mil_pass_is_implemented(mil_pipeline_pass_at(pl, i));
  printf("%s: %d passes", mil_pipeline_name(pl), (int)n);
  if (missing) printf(", %d not implemented", (int)missing);
  printf("\n");
  for (int32_t i = 0; i < n; i++) {
    const char *p = mil_pipeline_pass_at(pl, i);
    const char *mark = mil_pass_is_implemented(p) ? " " : "-";
    if (one_per_line) printf("  %3d %s%s\n", (int)i, mark, p);
    else printf("%s%s%s", i % 3 == 0 ? "    " : "  ", mark, p), printf(i % 3 == 2 || i + 1 == n ? "\n" : "");
  }
  const mil_pass_options *o;
  for (int32_t i = 0; i < n; i++) {
    const char *p = mil_pipeline_pass_at(pl, i);
    const mil_pass_def *def = mil_pass_lookup(p);
    if (!def || !(o = mil_pipeline_options(pl, p))) continue;
    for (int32_t k = 0; k < def->n_options; k++) {
      char val[256];
      mil_pass_opt_to_string(o, def->options[k].name, val, sizeof val);
      const char *dflt = def->options[k].default_value ? def->options[k].default_value : "None";
      if (strcmp(val, dflt) != 0 && def->options[k].type != MIL_POPT_STRING_LIST)
        printf("    with %s:%s = %s\n", def->name, def->options[k].name, val);
    }
  }
  mil_pipeline_free(pl);
}

int cmd_passes(int argc, char **argv) {
  const char *name = NULL;
  bool only_impl = false;
  for (int i = 1; i < argc; i++) {
    if (cli_is_help(argv[i])) {
      help();
      return CLI_OK;
    } else if (strcmp(argv[i], "--implemented") == 0) {
      only_impl = true;
    } else if (argv[i][0] == '-' && argv[i][1]) {
      return cli_usage_error("passes", "unknown option '%s'", argv[i]);
    } else if (!name) {
      name = argv[i];
    } else {
      return cli_usage_error("passes", "unexpected argument '%s'", argv[i]);
    }
  }
  if (name) {
    const mil_pass_def *p = mil_pass_lookup(name);
    if (p) {
      print_pass(p, true);
      return CLI_OK;
    }
    mil_pipeline *pl = NULL;
    mil_diag d = {0};
    if (mil_pipeline_new(name, &pl, &d) == MIL_OK) {
      mil_pipeline_free(pl);
      mil_diag_clear(&d);
      print_pipeline(name, true);
      return CLI_OK;
    }
    mil_diag_clear(&d);
    fprintf(stderr, "mil passes: '%s' is neither a pass nor a pipeline\n", name);
    return CLI_FAIL;
  }
  size_t n = mil_pass_known_count();
  printf("passes (%zu implemented, %zu known):\n\n", mil_pass_count(), n);
  for (size_t i = 0; i < n; i++) {
    const mil_pass_def *p = mil_pass_known_at(i);
    if (only_impl && !p->run) continue;
    print_pass(p, false);
  }
  if (only_impl) return CLI_OK;
  printf("\npipelines ('-' = not implemented):\n\n");
  for (size_t i = 0; i < mil_pipeline_name_count(); i++) print_pipeline(mil_pipeline_name_at(i), false);
  return CLI_OK;
}
