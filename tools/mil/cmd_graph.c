/* mil graph MODEL -o OUT.{svg,png,pdf,dot}: a picture of a program, laid out
 * by Graphviz (libgvc); mil graph --diff A B -o OUT: B coloured by what
 * changed since A. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <graphviz/cgraph.h>
#include <graphviz/gvc.h>

#include "cli.h"
#include "graph_dot.h"
#include "load.h"

static void help(void) {
  printf("usage: mil graph MODEL -o OUT [--function NAME] [--max-ops N] [--show-consts]\n"
         "       mil graph --diff A B -o OUT [options]\n\n"
         "Draw the program of MODEL (.mil, .mlmodel or .mlpackage) with Graphviz.\n"
         "OUT's extension picks the format: .svg, .png, .pdf (laid out with dot), or\n"
         ".dot (the graph text, not laid out). Ops are boxes labelled with their type,\n"
         "name and const operands (small values inline, large ones by type); edges\n"
         "carry the shape and dtype of the value; function inputs and outputs are\n"
         "ellipses; nested blocks (cond, while_loop) are dashed clusters.\n\n"
         "  --function NAME  the function to draw (default: main, or the first)\n"
         "  --max-ops N      draw the first N ops only (a note counts the rest)\n"
         "  --show-consts    draw const ops as nodes of their own\n"
         "  --diff A B       draw B, colouring ops by comparison with A (matched by op\n"
         "                   name): green added, orange changed (type or inputs),\n"
         "                   red dashed removed (ops of A that B lacks)\n");
}

static const char *extension(const char *path) {
  const char *slash = strrchr(path, '/'), *dot = strrchr(path, '.');
  return dot && (!slash || dot > slash) ? dot + 1 : "";
}

/* 0666 minus the umask (the mode open(O_CREAT) gives). */
static void set_create_mode(const char *path) {
  mode_t u = umask(0);
  umask(u);
  chmod(path, 0666 & ~u);
}

/* Writes the DOT text, or its rendering in format fmt, to a temporary
 * sibling of out and renames it into place. */
static int write_graph(const char *out, const char *fmt, const mil_buf *dot) {
  size_t n = strlen(out) + 16;
  char *tmp = malloc(n);
  if (!tmp) return CLI_FAIL;
  snprintf(tmp, n, "%s.tmpXXXXXX", out);
  int fd = mkstemp(tmp);
  if (fd < 0) {
    fprintf(stderr, "mil: error: %s: cannot create a temporary file next to it: %s\n", out, strerror(errno));
    free(tmp);
    return CLI_FAIL;
  }
  int rc = CLI_OK;
  if (!strcmp(fmt, "dot")) {
    FILE *f = fdopen(fd, "w");
    if (!f || fwrite(dot->data, 1, dot->len, f) != dot->len) rc = CLI_FAIL;
    if (f ? fclose(f) != 0 : close(fd) != 0) rc = CLI_FAIL;
    if (rc != CLI_OK) fprintf(stderr, "mil: error: %s: writing failed\n", out);
  } else {
    close(fd);
    GVC_t *gvc = gvContext();
    Agraph_t *g = gvc ? agmemread(dot->data) : NULL;
    if (!g) {
      fprintf(stderr, "mil: error: %s: Graphviz could not read the graph\n", out);
      rc = CLI_FAIL;
    } else if (gvLayout(gvc, g, "dot") != 0) {
      fprintf(stderr, "mil: error: %s: Graphviz layout failed\n", out);
      rc = CLI_FAIL;
    } else {
      if (gvRenderFilename(gvc, g, fmt, tmp) != 0) {
        fprintf(stderr, "mil: error: %s: Graphviz could not render %s\n", out, fmt);
        rc = CLI_FAIL;
      }
      gvFreeLayout(gvc, g);
    }
    if (g) agclose(g);
    if (gvc) gvFreeContext(gvc);
  }
  if (rc == CLI_OK) {
    set_create_mode(tmp);
    if (rename(tmp, out) != 0) {
      fprintf(stderr, "mil: error: %s: cannot rename into place: %s\n", out, strerror(errno));
      rc = CLI_FAIL;
    }
  }
  if (rc != CLI_OK) remove(tmp);
  free(tmp);
  return rc;
}

int cmd_graph(int argc, char **argv) {
  const char *path = NULL, *before = NULL, *out = NULL, *pos[2] = {NULL, NULL};
  int n_pos = 0;
  graph_options go;
  memset(&go, 0, sizeof go);
  bool diff = false;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    bool more = i + 1 < argc;
    if (cli_is_help(a)) {
      help();
      return CLI_OK;
    } else if (!strcmp(a, "-o") || !strcmp(a, "--output")) {
      if (!more) return cli_usage_error("graph", "%s needs a value", a);
      if (out) return cli_usage_error("graph", "%s given twice ('%s', then '%s')", a, out, argv[i + 1]);
      out = argv[++i];
    } else if (!strcmp(a, "--function")) {
      if (!more) return cli_usage_error("graph", "--function needs a value");
      if (go.function) return cli_usage_error("graph", "--function given twice");
      go.function = argv[++i];
    } else if (!strcmp(a, "--max-ops")) {
      char *end;
      long long v = more ? strtoll(argv[i + 1], &end, 10) : 0;
      if (!more || !*argv[i + 1] || *end || v < 1)
        return cli_usage_error("graph", "--max-ops expects a positive integer, got '%s'", more ? argv[i + 1] : "");
      go.max_ops = v;
      i++;
    } else if (!strcmp(a, "--show-consts")) {
      go.show_consts = true;
    } else if (!strcmp(a, "--diff")) {
      diff = true;
    } else if (a[0] == '-' && a[1]) {
      return cli_usage_error("graph", "unknown option '%s'", a);
    } else if (n_pos < 2) {
      pos[n_pos++] = a;
    } else {
      return cli_usage_error("graph", "unexpected argument '%s'", a);
    }
  }
  if (diff && n_pos != 2) return cli_usage_error("graph", "--diff needs two models A and B");
  if (!diff && n_pos == 2) return cli_usage_error("graph", "unexpected argument '%s' (two models need --diff)", pos[1]);
  if (!n_pos) return cli_usage_error("graph", "missing MODEL");
  path = pos[diff ? 1 : 0];
  before = diff ? pos[0] : NULL;
  if (!out) return cli_usage_error("graph", "missing -o OUT (.svg, .png, .pdf or .dot)");
  const char *fmt = extension(out);
  if (strcmp(fmt, "svg") && strcmp(fmt, "png") && strcmp(fmt, "pdf") && strcmp(fmt, "dot"))
    return cli_usage_error("graph", "unknown output format '.%s'; choose one of .svg, .png, .pdf, .dot", fmt);
  mil_diag d;
  mil_diag_init(&d);
  cli_loaded m, a;
  memset(&a, 0, sizeof a);
  int rc = CLI_FAIL;
  mil_status st = cli_load(path, &m, &d);
  if (st != MIL_OK) {
    cli_print_diag(&d);
    mil_diag_clear(&d);
    return CLI_FAIL;
  }
  if (before && (st = cli_load(before, &a, &d)) == MIL_OK) go.before = a.program;
  mil_buf dot = {0};
  if (st == MIL_OK) st = graph_dot(m.program, &go, &dot, &d);
  if (st == MIL_OK) rc = write_graph(out, fmt, &dot);
  cli_print_diag(&d);
  mil_buf_free(&dot);
  if (before) cli_unload(&a);
  cli_unload(&m);
  mil_diag_clear(&d);
  return rc;
}
