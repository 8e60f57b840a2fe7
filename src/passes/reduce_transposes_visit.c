/* common::reduce_transposes, phase 1: the traversal that gives every var
 * of the block a hypothetical value (plain, or a lazy transpose) and
 * records, for every starting transpose, the transposes that cancel it,
 * the ops where it must materialize and the axis-update ops it passes.
 * See reduce_transposes.c.
 *
 * Mirrors coremltools/converters/mil/mil/passes/defs/optimize_repeat_ops.py
 * (_TransposeOptimization._visit_*, block_traversal).
 */
#include <string.h>

#include "passes/reduce_transposes_internal.h"

#define MAX_IN 1024

/* coremltools' _UNARY_LIKE_OP_TYPES: one non-const input, one output,
 * rank kept, and transpose(op(x)) == op(transpose(x)). */
static const char *const k_unary_like[] = {
    "relu",      "log",          "relu6",         "abs",        "acos",
    "asin",      "atan",         "atanh",         "ceil",       "clip",
    "cos",       "cosh",         "erf",           "exp",        "exp2",
    "floor",     "identity",     "logical_not",   "round",      "rsqrt",
    "sign",      "sin",          "sinh",          "sqrt",       "square",
    "pow",       "tan",          "tanh",          "threshold",  "clamped_relu",
    "elu",       "gelu",         "leaky_relu",    "linear_activation", "scaled_tanh",
    "sigmoid",   "sigmoid_hard", "softplus",      "softplus_parametric", "softsign",
    "thresholded_relu",
};

static bool is_unary_like(const mil_op *op) {
  for (size_t i = 0; i < sizeof k_unary_like / sizeof k_unary_like[0]; i++)
    if (strcmp(op->type, k_unary_like[i]) == 0) return true;
  return false;
}

static int kind_of(const mil_op *op) {
  if (is_unary_like(op)) return RT_K_UNARY;
  int k = rt_axis_kind(op);
  if (k != RT_K_OTHER) return k;
  return strcmp(op->type, "transpose") == 0 ? RT_K_TRANSPOSE : RT_K_OTHER;
}

int rt_kind(rt_ctx *t, const mil_op *op) {
  const char *ty = op->type;
  size_t j = (size_t)(((uint64_t)(uintptr_t)ty * UINT64_C(0x9E3779B97F4A7C15)) >> 56) & (RT_KIND_SLOTS - 1);
  while (t->kinds[j].type) {
    if (t->kinds[j].type == ty) return t->kinds[j].kind;
    j = (j + 1) & (RT_KIND_SLOTS - 1);
  }
  int k = kind_of(op);
  if (t->n_kinds < RT_KIND_SLOTS / 2) {
    t->kinds[j] = (rt_kind_slot){ty, k};
    t->n_kinds++;
  }
  return k;
}

static bool set_plain_outputs(rt_ctx *t, mil_op *op) {
  for (int32_t i = 0; i < op->n_outputs; i++)
    if (!rt_hv_set(t, op->outputs[i], &t->plain)) return false;
  return true;
}

static bool note_materialize(rt_ctx *t, mil_op *start, mil_op *op, mil_var *var) {
  rt_node *n = rt_node_of(t, start), *m = rt_node_of(t, op);
  if (!n || !m || !rt_edges_add(t, &n->mat, m, var)) return false;
  if (!n->in_mat_map) {
    n->in_mat_map = true;
    if (!rt_nodes_add(t, &t->mat_keys, n)) return false;
  }
  return true;
}

static bool note_cancel(rt_ctx *t, mil_op *start, mil_op *op) {
  rt_node *n = rt_node_of(t, start), *c = rt_node_of(t, op);
  if (!n || !c || !rt_nodes_add(t, &n->cancel, c)) return false;
  if (!n->in_cancel_map) {
    n->in_cancel_map = true;
    if (!rt_nodes_add(t, &t->cancel_keys, n)) return false;
  }
  return true;
}

/* _visit_materialize_op */
static bool visit_materialize(rt_ctx *t, mil_op *op) {
  if (!set_plain_outputs(t, op)) return false;
  /* the first MAX_IN input vars (tuples expanded, literals skipped) */
  int32_t n = 0;
  for (int32_t i = 0; i < op->n_inputs; i++)
    for (int32_t a = 0; a < op->inputs[i].n_args; a++) {
      mil_var *v = op->inputs[i].args[a].use.var;
      if (!v) continue;
      if (n++ == MAX_IN) return true;
      if (!rt_maybe_lazy(t, v)) continue;
      rt_hv *h = rt_hv_get(t, v);
      if (!h->lazy) continue;
      for (int32_t k = 0; k < h->transposes->n; k++)
        if (!note_materialize(t, h->transposes->v[k], op, v)) return false;
    }
  return true;
}

static bool same_perm(const rt_hv *h, const int64_t *perm, int32_t rank) {
  if (h->rank != rank) return false;
  for (int32_t i = 0; i < rank; i++)
    if (h->perm[i] != perm[i]) return false;
  return true;
}

/* A lazy value. perm (rank entries) is kept, not copied: it is slab memory
 * (a starting transpose's copy, shared by the values derived from it). */
static rt_hv *lazy_value(rt_ctx *t, rt_hv *wrapped, rt_ops *set, const int64_t *perm, int32_t rank) {
  rt_hv *h = rt_hv_new_lazy(t);
  if (!h) return NULL;
  h->wrapped = wrapped;
  h->transposes = set;
  h->rank = rank;
  h->perm = perm;
  return h;
}

/* _visit_axis_update_op */
static bool visit_axis_update(rt_ctx *t, mil_op *op) {
  mil_var *ins[MAX_IN];
  int32_t n = rt_input_vars(op, true, ins, MAX_IN);
  if (n > MAX_IN) return visit_materialize(t, op);
  const rt_hv *first = NULL;
  int32_t n_lazy = 0;
  for (int32_t i = 0; i < n; i++) {
    rt_hv *h = rt_hv_get(t, ins[i]);
    if (!h) return false;
    if (!h->lazy) continue;
    n_lazy++;
    if (!first) first = h;
    else if (!same_perm(h, first->perm, first->rank)) return visit_materialize(t, op);
  }
  if (n_lazy == 0) return visit_materialize(t, op);
  const int64_t *perm = first->perm;
  int32_t rank = first->rank;
  if (!rt_axis_can_pass(t, op, perm, rank)) return t->oom ? false : visit_materialize(t, op);
  rt_ops *set = rt_set_new(t);
  if (!set) return false;
  /* the union of the inputs' sets, in order: a node stamped with this
   * set's number is in it already */
  int32_t stamp = ++t->n_stamps;
  rt_hv *wrapped = NULL;
  for (int32_t i = 0; i < n; i++) {
    rt_hv *h = rt_hv_get(t, ins[i]);
    if (!h->lazy) continue;
    for (int32_t k = 0; k < h->transposes->n; k++) {
      rt_node *nd = rt_node_of(t, h->transposes->v[k]);
      if (!nd) return false;
      if (nd->stamp == stamp) continue;
      nd->stamp = stamp;
      if (!rt_ops_add(t, set, nd->op)) return false;
    }
    wrapped = h->wrapped;
  }
  rt_node *self = rt_node_of(t, op);
  if (!self) return false;
  for (int32_t k = 0; k < set->n; k++)
    if (!rt_nodes_add(t, &rt_node_find(t, set->v[k])->axis, self)) return false;
  for (int32_t i = 0; i < op->n_outputs; i++)
    if (!rt_hv_set(t, op->outputs[i], lazy_value(t, wrapped, set, perm, rank))) return false;
  return true;
}

/* _do_transposes_cancel, with Python's indexing of negative entries */
static bool cancels(const int64_t *p1, int32_t n1, const int64_t *p2, int32_t n2) {
  if (n1 != n2) return false;
  int64_t x1[RT_MAX_RANK];
  for (int32_t i = 0; i < n1; i++) {
    int64_t k = rt_pyindex(p1[i], n1);
    if (k < 0) return false;
    x1[i] = k;
  }
  for (int32_t i = 0; i < n2; i++) {
    int64_t k = rt_pyindex(p2[i], n2);
    if (k < 0 || x1[k] != i) return false;
  }
  return true;
}

/* _visit_transpose_op */
static bool visit_transpose(rt_ctx *t, mil_op *op) {
  int64_t perm[RT_MAX_RANK];
  int32_t rank;
  mil_var *x = mil_op_input_var(op, "x");
  if (!x || op->n_outputs != 1 || !rt_perm(op, perm, &rank)) return visit_materialize(t, op);
  rt_hv *in = rt_hv_get(t, x);
  if (!in) return false;
  if (!in->lazy) {
    if (rt_is_old_output(t, op->outputs[0], NULL)) return visit_materialize(t, op);
    rt_ops *set = rt_set_new(t);
    int64_t *kept = rt_alloc(t, (size_t)(rank > 0 ? rank : 1) * sizeof *kept);
    if (!set || !kept || !rt_ops_add(t, set, op)) return false;
    memcpy(kept, perm, (size_t)rank * sizeof *perm);
    return rt_hv_set(t, op->outputs[0], lazy_value(t, in, set, kept, rank));
  }
  if (!cancels(in->perm, in->rank, perm, rank)) return visit_materialize(t, op);
  if (!rt_hv_set(t, op->outputs[0], in->wrapped)) return false;
  for (int32_t k = 0; k < in->transposes->n; k++)
    if (!note_cancel(t, in->transposes->v[k], op)) return false;
  return true;
}

/* True when some input var of op has a lazy value. */
static bool any_lazy_input(const rt_ctx *t, const mil_op *op) {
  for (int32_t i = 0; i < op->n_inputs; i++)
    for (int32_t a = 0; a < op->inputs[i].n_args; a++) {
      const mil_var *v = op->inputs[i].args[a].use.var;
      if (v && rt_maybe_lazy(t, v)) {
        const rt_hv *h = pass_ptrmap_get(&t->hv_of, v);
        if (h && h->lazy) return true;
      }
    }
  return false;
}

/* _visit_op */
static bool visit(rt_ctx *t, mil_op *op, bool sink) {
  if (sink) return visit_materialize(t, op);
  int kind = rt_kind(t, op);
  /* Without a lazy input every op but a transpose only gets plain outputs
   * (what each visit below comes to then). */
  if (kind != RT_K_TRANSPOSE && !any_lazy_input(t, op)) return true;
  if (kind == RT_K_UNARY) {
    mil_var *x = mil_op_input_var(op, "x");
    if (!x || op->n_outputs != 1) return visit_materialize(t, op);
    return rt_hv_set(t, op->outputs[0], rt_hv_get(t, x));
  }
  if (rt_is_axis_kind(kind)) return visit_axis_update(t, op);
  if (kind == RT_K_TRANSPOSE) return visit_transpose(t, op);
  if (mil_op_is_const(op)) return set_plain_outputs(t, op);
  return visit_materialize(t, op);
}

/* The op k after op in its block, or NULL. */
bool rt_traverse(rt_ctx *t, bool *nested) {
  for (int32_t i = 0; i < t->b->n_inputs; i++)
    if (!rt_hv_set(t, t->b->inputs[i], &t->plain)) return false;
  /* Only transposes and the ops reading a lazy value (noted by rt_hv_set)
   * can have anything but plain outputs; any other op is passed over
   * without reading more than its first cache line. While the run's name
   * set is not built, the names of the ops from the first transpose on
   * are gathered for it on the way (a block without transposes needs
   * none); the output arrays and vars of ops a few ahead are prefetched
   * then. */
  bool gather = !t->c->ud;
  rt_ahead a = {NULL, NULL};
  for (mil_op *op = t->b->first; op; op = op->next) {
    if (op->n_blocks > 0) {
      *nested = true;
      return true;
    }
    int kind = rt_kind(t, op);
    if (gather && !t->gather_from && kind == RT_K_TRANSPOSE) {
      t->gather_from = op;
      rt_ahead_at(&a, op);
    }
    if (t->gather_from) {
      rt_ahead_step(&a);
      if (!rt_gather_op(t, op)) {
        t->oom = true;
        return false;
      }
    }
    if (kind != RT_K_TRANSPOSE && !rt_maybe_reader(t, op)) continue;
    op->aux = NULL; /* no node yet */
    if (!visit(t, op, false) || t->oom) return false;
  }
  return true;
}

bool rt_traverse_sinks(rt_ctx *t) {
  for (int32_t i = 0; i < t->n_sinks; i++)
    if (!visit(t, t->sinks[i], true) || t->oom) return false;
  return true;
}
