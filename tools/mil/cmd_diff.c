/* mil diff A B [--identical]: are two programs equivalent (mil-text.md
 * section 3)? Prints "equivalent" or the first difference. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "load.h"
#include "mil/equiv.h"

static void help(void) {
  printf("usage: mil diff [--identical] [--rel-tol X] [--fp16-ulps N] A B\n\n"
         "Compare the programs of models A and B (.mil, .mlmodel or .mlpackage).\n"
         "Equivalent: a one-to-one op mapping preserving op types, input bindings\n"
         "(consts by value), output types and nested blocks, with the same functions,\n"
         "opsets, input names/types and output names; other names and the order of\n"
         "independent ops are free. Floats compare within a relative 1e-6 (fp32/fp64)\n"
         "or one ulp (fp16).\n"
         "Prints \"equivalent\" or the first difference (with --identical, a second\n"
         "line says \"identical\" or why not). Exit status 0 when equivalent (with --identical: when\n"
         "identical), 1 otherwise, 2 on usage errors.\n\n"
         "options:\n"
         "  --identical    require the same op order and names (counter suffixes aside)\n"
         "  --rel-tol X    fp32/fp64 relative tolerance (default 1e-6)\n"
         "  --fp16-ulps N  fp16 tolerance in ulps (default 1)\n");
}

int cmd_diff(int argc, char **argv) {
  const char *pa = NULL, *pb = NULL;
  mil_equiv_options eo;
  memset(&eo, 0, sizeof eo);
  for (int i = 1; i < argc; i++) {
    const char *s = argv[i];
    if (cli_is_help(s)) {
      help();
      return CLI_OK;
    } else if (strcmp(s, "--identical") == 0) {
      eo.identical = true;
    } else if (strcmp(s, "--rel-tol") == 0 || strcmp(s, "--fp16-ulps") == 0) {
      if (i + 1 >= argc) return cli_usage_error("diff", "%s needs a value", s);
      char *end;
      double v = strtod(argv[++i], &end);
      if (*end || !(v > 0)) return cli_usage_error("diff", "%s expects a positive number, got '%s'", s, argv[i]);
      if (s[2] == 'r') eo.rel_tol = v;
      else eo.fp16_ulps = (int)v;
    } else if (s[0] == '-' && s[1]) {
      return cli_usage_error("diff", "unknown option '%s'", s);
    } else if (!pa) {
      pa = s;
    } else if (!pb) {
      pb = s;
    } else {
      return cli_usage_error("diff", "unexpected argument '%s'", s);
    }
  }
  if (!pa || !pb) return cli_usage_error("diff", "expected two models A and B");
  mil_diag d;
  mil_diag_init(&d);
  cli_loaded ma, mb;
  memset(&ma, 0, sizeof ma);
  memset(&mb, 0, sizeof mb);
  int rc = CLI_FAIL;
  if (cli_load_any(pa, &ma, &d) != MIL_OK || cli_load_any(pb, &mb, &d) != MIL_OK) {
    cli_print_diag(&d);
    goto out;
  }
  eo.name_a = "A";
  eo.name_b = "B";
  mil_equiv_result res;
  mil_diag cd;
  mil_diag_init(&cd);
  mil_status st = mil_program_compare(ma.program, mb.program, &eo, &res, &cd);
  mil_diag_clear(&cd);
  if (st == MIL_ERR_NOMEM) {
    fprintf(stderr, "mil: error: out of memory\n");
  } else if (!res.equivalent) {
    printf("different: %s\n", cli_esc(res.diff));
  } else {
    printf("equivalent\n");
    if (eo.identical) {
      if (res.identical) printf("identical\n");
      else printf("not identical: %s\n", cli_esc(res.identical_diff));
    }
    rc = !eo.identical || res.identical ? CLI_OK : CLI_FAIL;
  }
out:
  cli_unload(&ma);
  cli_unload(&mb);
  mil_diag_clear(&d);
  return rc;
}
