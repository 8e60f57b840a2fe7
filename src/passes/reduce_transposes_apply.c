/* common::reduce_transposes, phases 2 and 3: choose the connected groups
 * of transposes worth removing, then remove them, rewrite the axis-update
 * ops they pass and materialize them where needed. See reduce_transposes.c.
 *
 * Mirrors coremltools/converters/mil/mil/passes/defs/optimize_repeat_ops.py
 * (_TransposeOptimization._verify_cancellable_transposes,
 * _remove_transpose_ops, apply_transform).
 */
#include <stdlib.h>
#include <string.h>

#include "passes/reduce_transposes_internal.h"

/* ---------- phase 2 ---------- */

/* One connected component: its starting transposes, cancelling transposes
 * and materializing ops. */
typedef struct component {
  rt_nodes a, b1, b2;
} component;

/* BFS queue */
typedef struct queue {
  rt_node **v;
  int32_t head, n, cap;
} queue;

static bool enqueue(rt_ctx *t, queue *q, rt_node *n) {
  if (q->n == q->cap) {
    int32_t nc = q->cap ? q->cap * 2 : 16;
    rt_node **nv = realloc(q->v, (size_t)nc * sizeof *nv);
    if (!nv) {
      t->oom = true;
      return false;
    }
    q->v = nv;
    q->cap = nc;
  }
  q->v[q->n++] = n;
  return true;
}

static bool enqueue_unvisited(rt_ctx *t, queue *q, rt_node *n) { return n->visited || enqueue(t, q, n); }

static bool enqueue_cancel_and_mat(rt_ctx *t, queue *q, rt_node *n, bool only_unvisited) {
  for (int32_t i = 0; i < n->cancel.n; i++)
    if (!(only_unvisited ? enqueue_unvisited(t, q, n->cancel.v[i]) : enqueue(t, q, n->cancel.v[i]))) return false;
  if (n->in_mat_map)
    for (int32_t i = 0; i < n->mat.n; i++)
      if (!(only_unvisited ? enqueue_unvisited(t, q, n->mat.v[i].node) : enqueue(t, q, n->mat.v[i].node)))
        return false;
  return true;
}

/* Adds o to list l unless this component (id) has listed it: a node goes
 * to one list only (which one its flags decide). */
static bool list_once(rt_ctx *t, rt_nodes *l, rt_node *o, int32_t id) {
  if (o->comp == id) return true;
  o->comp = id;
  return rt_nodes_add(t, l, o);
}

/* One connected component (number id, from 1) from the starting transpose
 * `start`, listed in c (emptied first); q is scratch. */
static bool explore(rt_ctx *t, rt_node *start, component *c, queue *q, int32_t id) {
  c->a.n = c->b1.n = c->b2.n = 0;
  q->head = q->n = 0;
  start->visited = true;
  bool ok = list_once(t, &c->a, start, id) && enqueue_cancel_and_mat(t, q, start, false);
  while (ok && q->head < q->n) {
    rt_node *o = q->v[q->head++];
    o->visited = true;
    if (o->in_cancel_map) {
      ok = list_once(t, &c->a, o, id) && enqueue_cancel_and_mat(t, q, o, true);
    } else if (o->is_cancel_op) {
      ok = list_once(t, &c->b1, o, id);
      for (int32_t i = 0; ok && i < o->starts.n; i++) ok = enqueue_unvisited(t, q, o->starts.v[i]);
    } else {
      ok = list_once(t, &c->b2, o, id);
      for (int32_t i = 0; ok && i < o->starts.n; i++) ok = enqueue_unvisited(t, q, o->starts.v[i]);
    }
  }
  return ok;
}

bool rt_verify(rt_ctx *t) {
  /* invert transpose_op_to_cancel_ops */
  for (int32_t k = 0; k < t->cancel_keys.n; k++) {
    rt_node *s = t->cancel_keys.v[k];
    for (int32_t i = 0; i < s->cancel.n; i++) {
      rt_node *c = s->cancel.v[i];
      c->is_cancel_op = true;
      if (!rt_nodes_add_unique(t, &c->starts, s)) return false;
    }
  }
  /* invert transpose_op_to_materialize_ops; a starting transpose that
   * only materializes joins the cancel map with no cancelling ops */
  for (int32_t k = 0; k < t->mat_keys.n; k++) {
    rt_node *s = t->mat_keys.v[k];
    for (int32_t i = 0; i < s->mat.n; i++) {
      rt_node *m = s->mat.v[i].node;
      m->is_mat_op = true;
      if (!rt_nodes_add_unique(t, &m->starts, s)) return false;
      if (!s->in_cancel_map) {
        s->in_cancel_map = true;
        if (!rt_nodes_add(t, &t->cancel_keys, s)) return false;
      }
    }
  }
  /* connected components of starting transposes, cancelling transposes and
   * materializing ops; a component stays only when it removes more
   * transposes than it materializes */
  int32_t n_keys = t->cancel_keys.n, n_comps = 0;
  rt_nodes drop = {0};
  component c = {0};
  queue q = {0};
  bool ok = true;
  for (int32_t k = 0; k < n_keys && ok; k++) {
    rt_node *s = t->cancel_keys.v[k];
    if (s->visited) continue;
    ok = explore(t, s, &c, &q, ++n_comps);
    if (!ok) break;
    /* coremltools keeps a component whose starting transpose is a block
     * output. The block's outputs are the sinks' outputs here, and a
     * transpose's output is one only when the transpose is a sink. */
    bool output = false;
    for (int32_t i = 0; i < c.a.n && !output; i++) output = rt_is_sink(t, c.a.v[i]->op);
    if (output || c.b2.n >= c.a.n + c.b1.n)
      for (int32_t i = 0; i < c.a.n && ok; i++) {
        rt_node *n = c.a.v[i];
        if (!n->dropped) {
          n->dropped = true;
          ok = rt_nodes_add(t, &drop, n);
        }
      }
  }
  free(c.a.v);
  free(c.b1.v);
  free(c.b2.v);
  free(q.v);
  for (int32_t i = 0; ok && i < drop.n; i++) drop.v[i]->in_cancel_map = false;
  free(drop.v);
  return ok && !t->oom;
}

/* ---------- phase 3 ---------- */

static bool is_block_input(const rt_ctx *t, const mil_var *v) {
  return v->func_input_of != NULL || v->input_of == t->b || !v->op;
}

static const char *intern(rt_ctx *t, const char *prefix, const char *s) {
  size_t len = strlen(prefix) + strlen(s) + 1;
  char *buf = malloc(len);
  if (!buf) return NULL;
  snprintf(buf, len, "%s%s", prefix, s);
  const char *r = mil_program_intern(t->c->p, buf, (size_t)-1);
  free(buf);
  if (r && !rt_name_add(t, r)) r = NULL;
  return r;
}

/* mb.identity(x=x, before_op=before, name=name) */
static mil_var *identity(rt_ctx *t, mil_op *before, mil_var *x, const char *name, int *err) {
  mil_op *id = rt_new_op(t, before, "identity", name);
  if (!id) return (*err = pass_t_oom(t->c)), NULL;
  pass_t_var(id, "x", x);
  mil_status st = rt_finish_op(t, id);
  if (st != MIL_OK) return (*err = -(int)st), NULL;
  return id->outputs[0];
}

/* mb.transpose(x=x, perm=perm, before_op=before, name=name) */
static mil_var *transpose(rt_ctx *t, mil_op *before, mil_var *x, const int64_t *perm, int32_t rank,
                          const char *name, int *err) {
  mil_op *tr = rt_new_op(t, before, "transpose", name);
  if (!tr) return (*err = pass_t_oom(t->c)), NULL;
  pass_t_var(tr, "x", x);
  if (!rt_const_input(t, tr, "perm", pass_t_i32s(t->c->p, rank, perm))) return (*err = pass_t_oom(t->c)), NULL;
  mil_status st = rt_finish_op(t, tr);
  if (st != MIL_OK) return (*err = -(int)st), NULL;
  return tr->outputs[0];
}

static bool handled(rt_ctx *t, rt_node *m, mil_var *v) {
  for (int32_t i = 0; i < m->n_handled; i++)
    if (m->handled[i] == v) return true;
  if (m->n_handled == m->cap_handled) {
    int32_t nc = m->cap_handled ? m->cap_handled * 2 : 4;
    mil_var **nv = realloc(m->handled, (size_t)nc * sizeof *nv);
    if (!nv) {
      t->oom = true;
      return true;
    }
    m->handled = nv;
    m->cap_handled = nc;
  }
  m->handled[m->n_handled++] = v;
  return false;
}

static bool in_vars(mil_var *const *vs, int32_t n, const mil_var *v) {
  for (int32_t i = 0; i < n; i++)
    if (vs[i] == v) return true;
  return false;
}

/* Bypasses the starting transpose and its cancelling transposes. */
static int bypass(rt_ctx *t, rt_node *start, rt_ops *removed, mil_var ***renamed, int32_t *n_renamed) {
  int err = 0;
  for (int32_t k = -1; k < start->cancel.n; k++) {
    rt_node *n = k < 0 ? start : start->cancel.v[k];
    mil_op *op = n->op;
    if (n->removed) continue;
    n->removed = true;
    if (!rt_ops_add(t, removed, op)) return pass_t_oom(t->c);
    mil_var *in = mil_op_input_var(op, "x"), *out = op->outputs[0];
    if (!in) continue;
    if (rt_is_old_output(t, out, NULL)) {
      /* an output keeps its name: the bypassing var takes it, or an
       * identity carries it */
      if (is_block_input(t, in)) {
        if (!(in = identity(t, op, in, out->name, &err))) return err;
      } else if (!in_vars(*renamed, *n_renamed, in)) {
        in->name = out->name;
        if (in->op) in->op->name = op->name;
        mil_var **nr = realloc(*renamed, (size_t)(*n_renamed + 1) * sizeof *nr);
        if (!nr) return pass_t_oom(t->c);
        *renamed = nr;
        nr[(*n_renamed)++] = in;
      } else if (!(in = identity(t, op, in, out->name, &err))) {
        return err;
      }
    }
    mil_var_replace_all_uses(out, in);
  }
  return 0;
}

/* Inserts the transpose before each op where it materializes. */
static int materialize(rt_ctx *t, rt_node *start, const int64_t *perm, int32_t rank, mil_var *start_in,
                       mil_var *start_out, mil_var **renamed, int32_t n_renamed) {
  int err = 0;
  for (int32_t i = 0; i < start->mat.n; i++) {
    rt_node *mn = start->mat.v[i].node;
    mil_op *m = mn->op;
    mil_var *var = start->mat.v[i].var;
    if (handled(t, mn, var)) {
      if (t->oom) return pass_t_oom(t->c);
      continue;
    }
    bool sink = rt_is_sink(t, m);
    mil_var *i1 = var;
    if (var == start_out) {
      if (sink) continue;
      i1 = start_in;
    }
    mil_var *x;
    if (sink && !in_vars(renamed, n_renamed, i1) && i1->op) {
      const char *name = i1->name;
      if (!(x = transpose(t, m, i1, perm, rank, name, &err))) return err;
      const char *before = intern(t, "_before_transpose_op_", x->op->name);
      if (!before) return pass_t_oom(t->c);
      i1->name = before;
      i1->op->name = before;
    } else if (sink) {
      const char *name = NULL;
      if (!rt_is_old_output(t, i1, &name)) name = NULL;
      if (!(x = transpose(t, m, i1, perm, rank, name, &err))) return err;
    } else if (!(x = transpose(t, m, i1, perm, rank, NULL, &err))) {
      return err;
    }
    rt_rebind(m, i1, x);
  }
  return 0;
}

/* _remove_transpose_ops */
static int remove_transposes(rt_ctx *t, rt_node *start) {
  int64_t perm[RT_MAX_RANK];
  int32_t rank;
  mil_op *op = start->op;
  mil_var *start_in = mil_op_input_var(op, "x"), *start_out = op->outputs[0];
  if (!start_in || !rt_perm(op, perm, &rank)) return 0;
  for (int32_t i = 0; i < start->axis.n; i++) {
    rt_node *a = start->axis.v[i];
    if (a->updated) continue;
    int r = rt_axis_update(t, a->op, perm, rank);
    if (r < 0) return r;
    a->updated = true;
  }
  rt_ops removed = {0};
  mil_var **renamed = NULL;
  int32_t n_renamed = 0;
  int r = bypass(t, start, &removed, &renamed, &n_renamed);
  if (r >= 0) r = materialize(t, start, perm, rank, start_in, start_out, renamed, n_renamed);
  if (r >= 0 && removed.n) r = pass_t_remove(t->c, removed.v, removed.n);
  if (r >= 0) t->c->changes += removed.n;
  free(removed.v);
  free(renamed);
  return r;
}

int rt_apply(rt_ctx *t) {
  /* The set of names fresh names must avoid is taken from the program as
   * it is before the first rewrite (names of removed ops stay taken). */
  for (int32_t k = 0; k < t->cancel_keys.n; k++)
    if (t->cancel_keys.v[k]->in_cancel_map) {
      if (!rt_names_of(t)) return pass_t_oom(t->c);
      break;
    }
  for (int32_t k = 0; k < t->cancel_keys.n; k++) {
    rt_node *s = t->cancel_keys.v[k];
    if (!s->in_cancel_map) continue;
    int r = remove_transposes(t, s);
    if (r < 0) return r;
  }
  return t->oom ? pass_t_oom(t->c) : 0;
}
