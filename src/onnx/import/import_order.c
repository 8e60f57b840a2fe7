/* The order the importer converts a graph's nodes in: ONNX requires a
 * graph's nodes to be topologically sorted, but some writers do not
 * (onnxconverter-common's keep_io_types lists the input Casts after their
 * users) and ONNX Runtime sorts the graph before running it. The order is
 * the file's wherever the file's is valid: nodes are taken in file order,
 * and a node whose producer comes later has that producer (and its own
 * late producers, depth first) moved just before it. A subgraph's
 * references to values of the enclosing graph count as inputs of the node
 * that holds it. Only a real cycle is refused, naming a node on it. */
#include <stdlib.h>
#include <string.h>

#include "onnx/import/import_internal.h"

/* ---------- value name -> producing node ---------- */

typedef struct prod_map {
  const char **keys;
  size_t *vals;
  size_t cap;
} prod_map;

static size_t hstr(const char *s) {
  uint64_t h = 1469598103934665603ULL;
  for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ULL;
  return (size_t)(h ^ (h >> 29));
}

static bool map_init(prod_map *m, size_t n) {
  m->cap = 16;
  while (m->cap < n * 2 + 2) m->cap *= 2;
  m->keys = calloc(m->cap, sizeof *m->keys);
  m->vals = calloc(m->cap, sizeof *m->vals);
  return m->keys && m->vals;
}

/* Keeps the first producer of a name (a second one is reported by the
 * conversion, which sees the graph is not in SSA form). */
static void map_put(prod_map *m, const char *k, size_t v) {
  size_t j = hstr(k) & (m->cap - 1);
  while (m->keys[j]) {
    if (!strcmp(m->keys[j], k)) return;
    j = (j + 1) & (m->cap - 1);
  }
  m->keys[j] = k;
  m->vals[j] = v;
}

static bool map_get(const prod_map *m, const char *k, size_t *v) {
  size_t j = hstr(k) & (m->cap - 1);
  while (m->keys[j]) {
    if (!strcmp(m->keys[j], k)) {
      *v = m->vals[j];
      return true;
    }
    j = (j + 1) & (m->cap - 1);
  }
  return false;
}

/* ---------- dependencies ---------- */

typedef struct deps {
  size_t *v;
  size_t n, cap;
} deps;

static bool deps_add(deps *d, size_t x) {
  if (d->n == d->cap) {
    size_t nc = d->cap ? d->cap * 2 : 64;
    size_t *nv = realloc(d->v, nc * sizeof *nv);
    if (!nv) return false;
    d->v = nv;
    d->cap = nc;
  }
  d->v[d->n++] = x;
  return true;
}

static bool dep_on(const prod_map *m, deps *d, const char *name, size_t self) {
  size_t p;
  if (!name || !name[0] || !map_get(m, name, &p) || p == self) return true;
  return deps_add(d, p);
}

/* The names subgraph g (and its own subgraphs) reads: every node input
 * and every graph output; those the enclosing graph's nodes produce are
 * dependencies of the node holding g (ONNX forbids a subgraph to shadow an
 * outer name, so a match is a real reference). */
static bool subgraph_deps(const prod_map *m, deps *d, const Onnx__GraphProto *g, size_t self, int depth) {
  if (!g || depth > MIL_MAX_BLOCK_DEPTH) return true;
  for (size_t i = 0; i < g->n_node; i++) {
    const Onnx__NodeProto *np = g->node[i];
    for (size_t k = 0; k < np->n_input; k++)
      if (!dep_on(m, d, np->input[k], self)) return false;
    for (size_t a = 0; a < np->n_attribute; a++) {
      const Onnx__AttributeProto *at = np->attribute[a];
      if (!subgraph_deps(m, d, at->g, self, depth + 1)) return false;
      for (size_t k = 0; k < at->n_graphs; k++)
        if (!subgraph_deps(m, d, at->graphs[k], self, depth + 1)) return false;
    }
  }
  for (size_t i = 0; i < g->n_output; i++)
    if (!dep_on(m, d, g->output[i]->name, self)) return false;
  return true;
}

/* ---------- the order ---------- */

mil_status onnx_graph_order(onnx_ctx *c, const Onnx__GraphProto *g, size_t **out) {
  *out = NULL;
  size_t n = g->n_node;
  prod_map m = {0};
  deps d = {0};
  size_t *start = calloc(n + 1, sizeof *start), *order = malloc((n ? n : 1) * sizeof *order);
  size_t *stack = malloc((n ? n : 1) * sizeof *stack), *cursor = calloc(n ? n : 1, sizeof *cursor);
  unsigned char *state = calloc(n ? n : 1, 1); /* 0 new, 1 on the stack, 2 placed */
  mil_status st = MIL_OK;
  if (!start || !order || !stack || !cursor || !state || !map_init(&m, n)) st = MIL_ERR_NOMEM;
  for (size_t i = 0; st == MIL_OK && i < n; i++)
    for (size_t k = 0; k < g->node[i]->n_output; k++)
      if (g->node[i]->output[k] && g->node[i]->output[k][0]) map_put(&m, g->node[i]->output[k], i);
  for (size_t i = 0; st == MIL_OK && i < n; i++) {
    const Onnx__NodeProto *np = g->node[i];
    start[i] = d.n;
    bool ok = true;
    for (size_t k = 0; ok && k < np->n_input; k++) ok = dep_on(&m, &d, np->input[k], i);
    for (size_t a = 0; ok && a < np->n_attribute; a++) {
      const Onnx__AttributeProto *at = np->attribute[a];
      ok = subgraph_deps(&m, &d, at->g, i, 1);
      for (size_t k = 0; ok && k < at->n_graphs; k++) ok = subgraph_deps(&m, &d, at->graphs[k], i, 1);
    }
    if (!ok) st = MIL_ERR_NOMEM;
  }
  if (st == MIL_OK) start[n] = d.n;
  size_t placed = 0;
  for (size_t i = 0; st == MIL_OK && i < n; i++) {
    if (state[i]) continue;
    size_t top = 0;
    stack[top++] = i;
    state[i] = 1;
    cursor[i] = start[i];
    while (top && st == MIL_OK) {
      size_t t = stack[top - 1];
      if (cursor[t] < start[t + 1]) {
        size_t p = d.v[cursor[t]++];
        if (state[p] == 2) continue;
        if (state[p] == 1) {
          const Onnx__NodeProto *np = g->node[t];
          const char *nm = np->name && np->name[0] ? np->name : np->n_output && np->output[0] ? np->output[0] : "";
          const Onnx__NodeProto *pp = g->node[p];
          st = mil_diag_error(c->d, MIL_ERR_INVALID,
                              "%s: the graph has a cycle: node '%s' (%s) needs a value of node '%s' (%s), which "
                              "depends on the first node's own outputs (ONNX graphs are acyclic)",
                              c->path, nm, np->op_type ? np->op_type : "",
                              pp->name && pp->name[0] ? pp->name : pp->n_output && pp->output[0] ? pp->output[0] : "",
                              pp->op_type ? pp->op_type : "");
          break;
        }
        state[p] = 1;
        cursor[p] = start[p];
        stack[top++] = p;
        continue;
      }
      state[t] = 2;
      order[placed++] = t;
      top--;
    }
  }
  free(start);
  free(stack);
  free(cursor);
  free(state);
  free(m.keys);
  free(m.vals);
  free(d.v);
  if (st != MIL_OK) {
    free(order);
    if (st == MIL_ERR_NOMEM) mil_diag_error(c->d, st, "%s: out of memory ordering the graph", c->path);
    return st;
  }
  *out = order;
  return MIL_OK;
}
