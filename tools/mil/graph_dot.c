/* The DOT text `mil graph` draws: ops as boxes, function inputs and outputs
 * as ellipses, edges labelled with the var's type, nested blocks as
 * clusters, const operands folded into their consumer's label. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "graph_dot.h"
#include "mil/ir.h"
#include "mil/text.h"
#include "ptr_map.h"

#define LABEL_LINE_MAX 56 /* longer label lines are cut with "..." */

/* name -> pointer, sorted by name (for the --diff lookups). */
typedef struct name_idx {
  const char **names;
  void **ptrs;
  size_t n, cap;
} name_idx;

typedef struct gd {
  mil_buf *b;
  /* edges, written after every node: an edge written inside a cluster
   * would pull both its nodes into the cluster */
  mil_buf edges;
  const graph_options *o;
  int64_t next_id, drawn, not_drawn;
  name_idx a_ops; /* --diff: the non-const ops of A by name */
  ptr_map b2a;    /* --diff: B var -> the A var it stands for */
  int64_t n_added, n_changed, n_removed;
  bool oom;
} gd;

static bool idx_add(name_idx *x, const char *name, void *ptr) {
  if (!name) return true;
  if (x->n == x->cap) {
    size_t nc = x->cap ? x->cap * 2 : 256;
    const char **nn = realloc(x->names, nc * sizeof *nn);
    if (!nn) return false;
    x->names = nn;
    void **np = realloc(x->ptrs, nc * sizeof *np);
    if (!np) return false;
    x->ptrs = np;
    x->cap = nc;
  }
  x->names[x->n] = name;
  x->ptrs[x->n++] = ptr;
  return true;
}

static const name_idx *g_sort_idx;
static int cmp_idx(const void *a, const void *b) {
  return strcmp(g_sort_idx->names[*(const size_t *)a], g_sort_idx->names[*(const size_t *)b]);
}

/* Sorts x by name (names and pointers together). */
static bool idx_sort(name_idx *x) {
  size_t *ord = malloc((x->n ? x->n : 1) * sizeof *ord);
  const char **nn = malloc((x->n ? x->n : 1) * sizeof *nn);
  void **np = malloc((x->n ? x->n : 1) * sizeof *np);
  bool ok = ord && nn && np;
  if (ok) {
    for (size_t i = 0; i < x->n; i++) ord[i] = i;
    g_sort_idx = x;
    qsort(ord, x->n, sizeof *ord, cmp_idx);
    for (size_t i = 0; i < x->n; i++) nn[i] = x->names[ord[i]], np[i] = x->ptrs[ord[i]];
    free(x->names);
    free(x->ptrs);
    x->names = nn;
    x->ptrs = np;
    nn = NULL;
    np = NULL;
  }
  free(ord);
  free(nn);
  free(np);
  return ok;
}

static void *idx_find(const name_idx *x, const char *name) {
  size_t lo = 0, hi = x->n;
  while (name && lo < hi) {
    size_t mid = (lo + hi) / 2;
    int c = strcmp(x->names[mid], name);
    if (c == 0) return x->ptrs[mid];
    if (c < 0) lo = mid + 1;
    else hi = mid;
  }
  return NULL;
}

static void idx_free(name_idx *x) {
  free(x->names);
  free(x->ptrs);
  memset(x, 0, sizeof *x);
}

/* s inside a DOT double-quoted string, cut to max chars. */
static void put_esc(mil_buf *b, const char *s, size_t max) {
  size_t n = 0;
  for (; s && *s; s++, n++) {
    if (n == max) {
      mil_buf_puts(b, "...");
      return;
    }
    if (*s == '"' || *s == '\\') mil_buf_putc(b, '\\');
    if (*s == '\n') mil_buf_puts(b, "\\n");
    else mil_buf_putc(b, *s);
  }
}

static int64_t node_of(const mil_var *v) {
  if (!v) return 0;
  return (int64_t)(intptr_t)(v->op ? v->op->aux : v->aux);
}

static void type_text(const mil_type *t, char *buf, size_t n) {
  if (t) mil_type_to_string(t, buf, n);
  else snprintf(buf, n, "?");
}

static void put_edge(gd *g, int64_t from, int64_t to, const mil_var *v, const char *style) {
  char tb[256];
  type_text(v ? v->type : NULL, tb, sizeof tb);
  mil_buf_printf(&g->edges, "  n%lld -> n%lld [label=\"", (long long)from, (long long)to);
  put_esc(&g->edges, tb, LABEL_LINE_MAX);
  mil_buf_printf(&g->edges, "\"%s%s];\n", style ? ", " : "", style ? style : "");
}

/* True when v is a const op's output that is folded into its consumers. */
static bool folded(const gd *g, const mil_var *v) {
  return v && v->op && mil_op_is_const(v->op) && !g->o->show_consts;
}

/* One label line "param=value" for a folded const or literal operand. */
static void put_operand_line(gd *g, const char *param, const mil_value *val, const mil_var *var) {
  mil_buf line = {0};
  mil_buf_puts(&line, param);
  mil_buf_putc(&line, '=');
  if (val && (val->kind != MIL_VAL_TENSOR || val->numel <= 10)) {
    mil_print_value(val, &line);
  } else {
    char tb[256];
    type_text(var ? var->type : val ? val->type : NULL, tb, sizeof tb);
    mil_buf_puts(&line, tb);
  }
  if (line.oom) g->oom = true;
  mil_buf_puts(g->b, "\\n");
  put_esc(g->b, line.data, LABEL_LINE_MAX);
  mil_buf_free(&line);
}

/* ---- --diff: matching B's ops with A's ---------------------------------- */

static bool is_const_var(const mil_var *v) { return v && v->op && mil_op_is_const(v->op); }

/* A B var as the A var it stands for; a cast B added (unmatched) is looked
 * through, so that the fp16 casts of a pipeline do not hide what they wrap. */
static const mil_var *a_of(const gd *g, const mil_var *vb) {
  for (int hop = 0; vb && hop < 8; hop++) {
    const mil_var *va = ptr_map_get(&g->b2a, vb);
    if (va) return va;
    if (!vb->op || strcmp(vb->op->type, "cast") != 0) return NULL;
    const mil_input *x = mil_op_find_input(vb->op, "x");
    vb = x && x->n_args == 1 ? x->args[0].use.var : NULL;
  }
  return NULL;
}

/* True when A's op `a` reads, slot by slot, the A vars B's op reads. */
static bool same_inputs(const gd *g, const mil_op *a, const mil_op *b) {
  if (a->n_inputs != b->n_inputs) return false;
  for (int32_t i = 0; i < b->n_inputs; i++) {
    const mil_input *x = &b->inputs[i], *y = &a->inputs[i];
    if (strcmp(x->name, y->name) != 0 || x->n_args != y->n_args) return false;
    for (int32_t k = 0; k < x->n_args; k++) {
      const mil_var *vx = x->args[k].use.var, *vy = y->args[k].use.var;
      if (!vx != !vy) return false;
      if (!vx || is_const_var(vx) || is_const_var(vy)) continue;
      if (a_of(g, vx) != vy) return false;
    }
  }
  return true;
}

/* Const operands that read differently: small values by their text,
 * large ones by shape (a pipeline retypes weights to fp16 as a matter of
 * course; that alone is not a change of the op). */
static bool consts_differ(const mil_op *a, const mil_op *b) {
  for (int32_t i = 0; i < b->n_inputs && i < a->n_inputs; i++)
    for (int32_t k = 0; k < b->inputs[i].n_args && k < a->inputs[i].n_args; k++) {
      const mil_var *vx = b->inputs[i].args[k].use.var, *vy = a->inputs[i].args[k].use.var;
      if (!is_const_var(vx) || !is_const_var(vy) || !vx->val || !vy->val) continue;
      const mil_type *tx = vx->type, *ty = vy->type;
      if (tx->rank != ty->rank) return true;
      for (int32_t r = 0; r < tx->rank && tx->dims && ty->dims; r++)
        if (tx->dims[r].size != ty->dims[r].size) return true;
      if (vx->val->kind == MIL_VAL_TENSOR && vx->val->numel > 10) continue;
      mil_buf px = {0}, py = {0};
      mil_print_value(vx->val, &px);
      mil_print_value(vy->val, &py);
      bool differ = px.len != py.len || (px.len && memcmp(px.data, py.data, px.len) != 0);
      mil_buf_free(&px);
      mil_buf_free(&py);
      if (differ) return true;
    }
  return false;
}

static void match(gd *g, mil_op *a, const mil_op *b) {
  a->aux = (void *)1; /* matched */
  for (int32_t i = 0; i < b->n_outputs && i < a->n_outputs; i++) {
    if (!ptr_map_put(&g->b2a, b->outputs[i], a->outputs[i])) g->oom = true;
    a->outputs[i]->aux = b->outputs[i];
  }
}

/* How op (of B) compares with A: the A op of the same type reading the same
 * values (found through the consumers of its first non-const operand), else
 * the A op of the same name; none is "added". */
static graph_mark classify(gd *g, const mil_op *op, const mil_op **was) {
  const mil_var *first = NULL;
  for (int32_t i = 0; !first && i < op->n_inputs; i++)
    for (int32_t k = 0; !first && k < op->inputs[i].n_args; k++)
      if (op->inputs[i].args[k].use.var && !is_const_var(op->inputs[i].args[k].use.var))
        first = op->inputs[i].args[k].use.var;
  const mil_var *va = a_of(g, first);
  mil_op *found = NULL;
  int best = -1;
  /* among equal candidates (two convs of one input), the one whose name B's
   * name extends ("x" -> "x_cast_fp16"), then the one with the same consts */
  for (const mil_use *u = va ? va->uses : NULL; u; u = u->next_use) {
    mil_op *c = u->op;
    if (!c || c->aux || strcmp(c->type, op->type) != 0 || !same_inputs(g, c, op)) continue;
    int score = (strncmp(op->name, c->name, strlen(c->name)) == 0) * 2 + !consts_differ(c, op);
    if (score > best) best = score, found = c;
  }
  if (found) {
    *was = found;
    match(g, found, op);
    return consts_differ(found, op) ? GRAPH_CHANGED : GRAPH_SAME;
  }
  mil_op *byname = idx_find(&g->a_ops, op->name);
  /* add_fp16_cast renames the ops it retypes "<name>_cast_fp16" */
  static const char *const suffixes[] = {"_cast_fp16", "_cast_fp32"};
  size_t n = strlen(op->name);
  for (int k = 0; !byname && k < 2; k++) {
    size_t m = strlen(suffixes[k]);
    if (n <= m || strcmp(op->name + n - m, suffixes[k]) != 0) continue;
    char *base = strndup(op->name, n - m);
    byname = base ? idx_find(&g->a_ops, base) : NULL;
    free(base);
  }
  if (byname && !byname->aux) {
    *was = byname;
    match(g, byname, op);
    return GRAPH_CHANGED;
  }
  return GRAPH_ADDED;
}

static const char *const k_fill[] = {"#dbe9f6", "#b7e4b0", "#ffd27f"};

static void put_op_node(gd *g, const mil_op *op, int64_t id) {
  bool is_const = mil_op_is_const(op);
  const mil_op *was = NULL;
  graph_mark mk = g->o->before && !is_const ? classify(g, op, &was) : GRAPH_SAME;
  if (mk == GRAPH_ADDED) g->n_added++;
  if (mk == GRAPH_CHANGED) g->n_changed++;
  mil_buf_printf(g->b, "  n%lld [label=\"", (long long)id);
  put_esc(g->b, op->type, LABEL_LINE_MAX);
  mil_buf_puts(g->b, "\\n");
  put_esc(g->b, op->name, LABEL_LINE_MAX);
  if (was && strcmp(was->type, op->type) != 0) {
    mil_buf_puts(g->b, "\\n(was ");
    put_esc(g->b, was->type, LABEL_LINE_MAX);
    mil_buf_puts(g->b, " ");
    put_esc(g->b, was->name, LABEL_LINE_MAX);
    mil_buf_puts(g->b, ")");
  }
  if (is_const && op->n_outputs == 1) put_operand_line(g, "val", op->outputs[0]->val, op->outputs[0]);
  for (int32_t i = 0; i < op->n_inputs; i++) {
    const mil_input *in = &op->inputs[i];
    for (int32_t k = 0; k < in->n_args; k++) {
      const mil_arg *a = &in->args[k];
      if (a->value) put_operand_line(g, in->name, a->value, NULL);
      else if (folded(g, a->use.var)) put_operand_line(g, in->name, a->use.var->val, a->use.var);
    }
  }
  mil_buf_printf(g->b, "\", fillcolor=\"%s\"%s];\n", is_const ? "#eeeeee" : k_fill[mk],
                 mk != GRAPH_SAME ? ", penwidth=2" : "");
}

static void draw_block(gd *g, mil_block *b, int depth);

/* Every op of b and its nested blocks counted as not drawn. */
static void skip_block(gd *g, mil_block *b) {
  for (mil_op *op = b->first; op; op = op->next) {
    op->aux = NULL;
    if (!mil_op_is_const(op) || g->o->show_consts) g->not_drawn++;
    for (int32_t k = 0; k < op->n_blocks; k++) skip_block(g, op->blocks[k]);
  }
}

static void draw_op(gd *g, mil_op *op, int depth) {
  int64_t id = ++g->next_id;
  op->aux = (void *)(intptr_t)id;
  g->drawn++;
  put_op_node(g, op, id);
  for (int32_t i = 0; i < op->n_inputs; i++)
    for (int32_t k = 0; k < op->inputs[i].n_args; k++) {
      const mil_var *v = op->inputs[i].args[k].use.var;
      int64_t src = folded(g, v) ? 0 : node_of(v);
      if (src) put_edge(g, src, id, v, NULL);
    }
  for (int32_t k = 0; k < op->n_blocks; k++) {
    mil_block *nb = op->blocks[k];
    mil_buf_printf(g->b, "  subgraph cluster_%lld_%d {\n  label=\"", (long long)id, (int)k);
    put_esc(g->b, op->name, LABEL_LINE_MAX);
    mil_buf_printf(g->b, ": %s\"; style=\"rounded,dashed\"; color=\"#888888\";\n", nb->name ? nb->name : "block");
    int64_t first_in = g->next_id + 1; /* the cluster's first node */
    for (int32_t i = 0; i < nb->n_inputs; i++) {
      mil_var *v = nb->inputs[i];
      int64_t vid = ++g->next_id;
      v->aux = (void *)(intptr_t)vid;
      mil_buf_printf(g->b, "  n%lld [shape=ellipse, fillcolor=\"#f5f5f5\", label=\"", (long long)vid);
      put_esc(g->b, v->name, LABEL_LINE_MAX);
      mil_buf_puts(g->b, "\"];\n");
      mil_buf_printf(&g->edges, "  n%lld -> n%lld [style=dotted, arrowhead=none];\n", (long long)id, (long long)vid);
    }
    draw_block(g, nb, depth + 1);
    int64_t ret = ++g->next_id;
    mil_buf_printf(g->b, "  n%lld [shape=plaintext, style=\"\", label=\"return\"];\n", (long long)ret);
    for (int32_t i = 0; i < nb->n_outputs; i++) {
      int64_t src = node_of(nb->outputs[i].var);
      if (src) put_edge(g, src, ret, nb->outputs[i].var, NULL);
    }
    if (nb->n_inputs == 0) /* a block without inputs (cond's) hangs from its op all the same */
      mil_buf_printf(&g->edges, "  n%lld -> n%lld [style=dotted, arrowhead=none, lhead=cluster_%lld_%d];\n",
                     (long long)id, (long long)first_in, (long long)id, (int)k);
    mil_buf_puts(g->b, "  }\n");
  }
}

/* A const feeding a block output directly is drawn even when consts are
 * folded: there is no consumer to fold it into. */
static bool feeds_output(const mil_op *op) {
  for (int32_t i = 0; i < op->n_outputs; i++)
    for (const mil_use *u = op->outputs[i]->uses; u; u = u->next_use)
      if (u->block) return true;
  return false;
}

static void draw_block(gd *g, mil_block *b, int depth) {
  for (mil_op *op = b->first; op; op = op->next) {
    op->aux = NULL;
    bool is_const = mil_op_is_const(op);
    if (is_const && !g->o->show_consts && !feeds_output(op)) continue;
    if (g->o->max_ops > 0 && g->drawn >= g->o->max_ops) {
      if (!is_const || g->o->show_consts) g->not_drawn++;
      for (int32_t k = 0; k < op->n_blocks; k++) skip_block(g, op->blocks[k]);
      continue;
    }
    draw_op(g, op, depth);
  }
}

static int collect_a(mil_op *op, void *ud) {
  gd *g = ud;
  op->aux = NULL; /* not matched yet */
  for (int32_t i = 0; i < op->n_outputs; i++) op->outputs[i]->aux = NULL;
  if (!mil_op_is_const(op) && !idx_add(&g->a_ops, op->name, op)) return 1;
  return 0;
}

/* --diff: A's ops that no op of B matched, red and dashed, wired to the B
 * vars their operands became. */
static void draw_removed(gd *g, mil_function *fa) {
  mil_block *ba = mil_function_body(fa);
  for (mil_op *op = ba ? ba->first : NULL; op; op = op->next) {
    if (mil_op_is_const(op) || op->aux) continue;
    g->n_removed++;
    /* with --max-ops, only the removed ops next to what is drawn */
    bool near = g->o->max_ops <= 0;
    for (int32_t k = 0; !near && k < op->n_inputs; k++)
      for (int32_t j = 0; !near && j < op->inputs[k].n_args; j++) {
        const mil_var *va = op->inputs[k].args[j].use.var;
        near = va && !is_const_var(va) && va->aux && node_of(va->aux);
      }
    if (!near) continue;
    int64_t id = ++g->next_id;
    mil_buf_printf(g->b, "  n%lld [style=\"rounded,dashed,filled\", fillcolor=\"#f4a6a6\", color=\"#c00000\", label=\"",
                   (long long)id);
    put_esc(g->b, op->type, LABEL_LINE_MAX);
    mil_buf_puts(g->b, "\\n");
    put_esc(g->b, op->name, LABEL_LINE_MAX);
    mil_buf_puts(g->b, "\\n(removed)\"];\n");
    for (int32_t k = 0; k < op->n_inputs; k++)
      for (int32_t j = 0; j < op->inputs[k].n_args; j++) {
        const mil_var *va = op->inputs[k].args[j].use.var;
        if (!va || is_const_var(va)) continue;
        const mil_var *vb = va->aux;
        int64_t src = vb ? node_of(vb) : 0;
        if (src) put_edge(g, src, id, va, "style=dashed, color=\"#c00000\"");
      }
  }
}

static mil_function *find_function(const mil_program *p, const char *name) {
  for (int32_t i = 0; i < p->n_functions; i++)
    if (!strcmp(p->functions[i]->name, name)) return p->functions[i];
  return NULL;
}

mil_status graph_dot(mil_program *p, const graph_options *o, mil_buf *out, mil_diag *d) {
  const char *fname = o->function;
  mil_function *f = fname ? find_function(p, fname)
                    : find_function(p, "main") ? find_function(p, "main")
                    : p->n_functions ? p->functions[0]
                                     : NULL;
  if (!f) {
    mil_buf names = {0};
    for (int32_t i = 0; i < p->n_functions; i++) mil_buf_printf(&names, "%s%s", i ? ", " : "", p->functions[i]->name);
    mil_status st = mil_diag_error(d, MIL_ERR_NOT_FOUND, "no function '%s' (the program has: %s)", fname ? fname : "main",
                                   names.data ? names.data : "none");
    mil_buf_free(&names);
    return st;
  }
  gd g;
  memset(&g, 0, sizeof g);
  g.b = out;
  g.o = o;
  mil_function *fa = NULL;
  if (o->before) {
    fa = find_function(o->before, f->name);
    if (!fa) return mil_diag_error(d, MIL_ERR_NOT_FOUND, "--diff: the first program has no function '%s'", f->name);
    mil_block *ba = mil_function_body(fa);
    bool ok = !ba || mil_block_walk(ba, collect_a, &g) == 0;
    for (int32_t i = 0; ok && i < f->n_inputs; i++)
      for (int32_t k = 0; k < fa->n_inputs; k++)
        if (!strcmp(fa->inputs[k]->name, f->inputs[i]->name)) {
          ok = ptr_map_put(&g.b2a, f->inputs[i], fa->inputs[k]);
          fa->inputs[k]->aux = f->inputs[i];
        }
    if (!ok || !idx_sort(&g.a_ops)) {
      idx_free(&g.a_ops);
      ptr_map_free(&g.b2a);
      return MIL_ERR_NOMEM;
    }
  }
  mil_buf_puts(out, "digraph \"");
  put_esc(out, f->name, 200);
  mil_buf_puts(out, "\" {\n  rankdir=TB; nodesep=0.25; ranksep=0.35; compound=true;\n"
                    "  node [shape=box, style=\"rounded,filled\", fontname=\"Helvetica\", fontsize=10];\n"
                    "  edge [fontname=\"Helvetica\", fontsize=8, color=\"#555555\"];\n");
  for (int32_t i = 0; i < f->n_inputs; i++) {
    mil_var *v = f->inputs[i];
    int64_t id = ++g.next_id;
    v->aux = (void *)(intptr_t)id;
    char tb[256];
    type_text(v->type, tb, sizeof tb);
    mil_buf_printf(out, "  n%lld [shape=ellipse, fillcolor=\"#fff2cc\", label=\"", (long long)id);
    put_esc(out, v->name, LABEL_LINE_MAX);
    mil_buf_puts(out, "\\n");
    put_esc(out, tb, LABEL_LINE_MAX);
    mil_buf_puts(out, "\"];\n");
  }
  mil_block *body = mil_function_body(f);
  if (body) {
    draw_block(&g, body, 0);
    for (int32_t i = 0; i < body->n_outputs; i++) {
      const mil_var *v = body->outputs[i].var;
      int64_t id = ++g.next_id, src = node_of(v);
      mil_buf_printf(out, "  n%lld [shape=ellipse, fillcolor=\"#fff2cc\", label=\"output\\n", (long long)id);
      put_esc(out, v->name, LABEL_LINE_MAX);
      mil_buf_puts(out, "\"];\n");
      if (src) put_edge(&g, src, id, v, NULL);
    }
    if (fa) draw_removed(&g, fa);
  }
  if (g.not_drawn || o->before) {
    mil_buf_puts(out, "  legend [shape=note, style=filled, fillcolor=\"#ffffff\", label=\"");
    if (g.not_drawn)
      mil_buf_printf(out, "%lld more ops not drawn (--max-ops %lld)\\n", (long long)g.not_drawn, (long long)o->max_ops);
    if (o->before)
      mil_buf_printf(out, "green: %lld added   orange: %lld changed   red: %lld removed", (long long)g.n_added,
                     (long long)g.n_changed, (long long)g.n_removed);
    mil_buf_puts(out, "\"];\n");
  }
  if (g.edges.len) mil_buf_put(out, g.edges.data, g.edges.len);
  if (g.edges.oom) g.oom = true;
  mil_buf_free(&g.edges);
  mil_buf_puts(out, "}\n");
  idx_free(&g.a_ops);
  ptr_map_free(&g.b2a);
  return out->oom || g.oom ? MIL_ERR_NOMEM : MIL_OK;
}
