/* `mil graph`: a program as a Graphviz DOT graph (graph_dot.c), rendered by
 * cmd_graph.c. */
#ifndef MIL_CLI_GRAPH_DOT_H
#define MIL_CLI_GRAPH_DOT_H

#include <stdbool.h>
#include <stdint.h>

#include "mil/mil.h"

/* How an op of the drawn program compares with the program before a
 * pipeline ran (--diff). */
typedef enum graph_mark { GRAPH_SAME = 0, GRAPH_ADDED, GRAPH_CHANGED } graph_mark;

typedef struct graph_options {
  const char *function; /* function to draw (NULL: main, or the first) */
  int64_t max_ops;      /* draw at most this many ops (0: all) */
  bool show_consts;     /* const ops as nodes instead of folded into labels */
  /* --diff: the program before (A); the drawn program is the one after (B).
   * Ops of B are coloured by how they compare with A (matched by op name:
   * added, changed type or inputs); ops of A missing from B are drawn red
   * and dashed, wired to B's vars of the same names. */
  const mil_program *before;
} graph_options;

/* Appends the DOT text of one function of p to out. Ops are nodes labelled
 * with their type, name and key attributes (const operands: small values
 * inline, large ones by type); edges carry the var's shape and dtype;
 * nested blocks are clusters. Uses op->aux and var->aux of p as scratch.
 * Returns MIL_ERR_NOT_FOUND (with the function names in d) when the
 * function does not exist, MIL_ERR_NOMEM, else MIL_OK. */
mil_status graph_dot(mil_program *p, const graph_options *o, mil_buf *out, mil_diag *d);

#endif
