/* The memory plan of a run: the bytes of an intermediate value are freed
 * as soon as no later op reads them, so a run holds the weights plus the
 * live set of activations instead of every value it ever computed.
 *
 * Liveness: before the function body runs, one backward walk over its ops
 * finds the last op that reads each var produced in the body (a read inside
 * a nested block of a cond / while_loop counts as a read by that op). The
 * body's outputs are never freed, and a var that nothing reads dies right
 * after its producer.
 *
 * Aliasing: a value may share the bytes of another (reshape, squeeze and
 * identity return views; a cond may return a captured value), so bytes are
 * counted per buffer (a "root": a value owning a large buffer,
 * src/core/bigval.c): every executed output whose bytes lie in a live root
 * holds a reference to it, and the buffer is freed when its last reference
 * dies. An output that keeps another value alive in another way (a deferred
 * value reading its source, a cast remembering the value it widened) pins
 * that value's buffer for the rest of the run; a list, tuple or dict output
 * stops the plan (nothing more is freed in that run).
 *
 * Small values (under IR_BIG_MIN bytes) live in the run's arena and are
 * freed with it. */
#include <stdlib.h>
#include <string.h>

#include "core/core_internal.h"
#include "interp/interp_internal.h"

typedef struct plan_root {
  const char *lo, *hi; /* the buffer's bytes */
  mil_value *owner;    /* the value holding the buffer (v->big) */
  int64_t refs;        /* vars of the body whose values lie in it */
} plan_root;

struct interp_plan {
  int32_t n_ops;
  int32_t *die_start; /* die[die_start[i] .. die_start[i+1]) die after op i */
  mil_var **die;
  plan_root *roots; /* one per executed output at most */
  int32_t n_roots, cap_roots;
  int64_t live, peak; /* bytes of the live roots, and their largest sum (profile) */
  bool off;
};

static char k_seen; /* var->aux during planning: a later read was found */

static int32_t n_outputs_total(const mil_block *b) {
  int32_t n = 0;
  for (const mil_op *op = b->first; op; op = op->next) n += op->n_outputs;
  return n;
}

/* The vars op reads (inputs, and everything its nested blocks read or
 * return), each passed to fn once per read. */
static void for_reads(mil_op *op, void (*fn)(mil_var *, void *), void *ud) {
  for (int32_t i = 0; i < op->n_inputs; i++)
    for (int32_t j = 0; j < op->inputs[i].n_args; j++)
      if (op->inputs[i].args[j].use.var) fn(op->inputs[i].args[j].use.var, ud);
  for (int32_t k = 0; k < op->n_blocks; k++) {
    mil_block *nb = op->blocks[k];
    for (mil_op *o = nb->first; o; o = o->next) for_reads(o, fn, ud);
    for (int32_t i = 0; i < nb->n_outputs; i++)
      if (nb->outputs[i].var) fn(nb->outputs[i].var, ud);
  }
}

typedef struct walk {
  mil_block *b;
  mil_var **die;
  int32_t n;
} walk;

static bool owned_here(const mil_var *v, const mil_block *b) { return v->op && v->op->block == b; }

static void note_read(mil_var *v, void *ud) {
  walk *w = ud;
  if (v->aux == &k_seen) return;
  v->aux = &k_seen;
  if (owned_here(v, w->b)) w->die[w->n++] = v;
}

interp_plan *interp_plan_new(mil_block *b) {
  int32_t n_ops = 0, n_out = n_outputs_total(b);
  for (const mil_op *op = b->first; op; op = op->next) n_ops++;
  interp_plan *p = calloc(1, sizeof *p);
  mil_op **ops = malloc((size_t)(n_ops ? n_ops : 1) * sizeof *ops);
  int32_t *idx = malloc((size_t)(n_out ? n_out : 1) * sizeof *idx);
  if (p) {
    p->n_ops = n_ops;
    p->die_start = calloc((size_t)n_ops + 1, sizeof *p->die_start);
    p->die = malloc((size_t)(n_out ? n_out : 1) * sizeof *p->die);
    p->cap_roots = n_out ? n_out : 1;
    p->roots = malloc((size_t)p->cap_roots * sizeof *p->roots);
  }
  if (!p || !ops || !idx || !p->die_start || !p->die || !p->roots) {
    free(ops), free(idx);
    interp_plan_free(p);
    return NULL;
  }
  int32_t k = 0;
  for (mil_op *op = b->first; op; op = op->next) {
    ops[k++] = op;
    for (int32_t i = 0; i < op->n_outputs; i++) op->outputs[i]->aux = NULL;
  }
  for (int32_t i = 0; i < b->n_outputs; i++)
    if (b->outputs[i].var) b->outputs[i].var->aux = &k_seen; /* never freed */
  /* backward: the first read met is the last one; idx[j] = op of die[j] */
  walk w = {b, p->die, 0};
  for (int32_t i = n_ops - 1; i >= 0; i--) {
    int32_t from = w.n;
    for (int32_t o = 0; o < ops[i]->n_outputs; o++) /* read by nothing later: dies at once */
      note_read(ops[i]->outputs[o], &w);
    for_reads(ops[i], note_read, &w);
    for (int32_t j = from; j < w.n; j++) idx[j] = i;
  }
  /* regroup by op index (counting sort) */
  mil_var **tmp = malloc((size_t)(w.n ? w.n : 1) * sizeof *tmp);
  if (!tmp) {
    free(ops), free(idx);
    interp_plan_free(p);
    return NULL;
  }
  for (int32_t j = 0; j < w.n; j++) p->die_start[idx[j] + 1]++;
  for (int32_t i = 0; i < n_ops; i++) p->die_start[i + 1] += p->die_start[i];
  int32_t *fill = idx; /* reuse: position per op */
  int32_t *pos = calloc((size_t)n_ops + 1, sizeof *pos);
  if (!pos) {
    free(ops), free(idx), free(tmp);
    interp_plan_free(p);
    return NULL;
  }
  for (int32_t j = 0; j < w.n; j++) {
    int32_t i = fill[j];
    tmp[p->die_start[i] + pos[i]++] = p->die[j];
  }
  memcpy(p->die, tmp, (size_t)w.n * sizeof *tmp);
  free(tmp), free(pos), free(ops), free(idx);
  for (mil_op *op = b->first; op; op = op->next)
    for (int32_t i = 0; i < op->n_outputs; i++) op->outputs[i]->aux = NULL;
  return p;
}

void interp_plan_free(interp_plan *p) {
  if (!p) return;
  free(p->die_start);
  free(p->die);
  free(p->roots);
  free(p);
}

static plan_root *root_of(interp_plan *p, const void *raw) {
  const char *c = raw;
  for (int32_t i = p->n_roots - 1; i >= 0; i--)
    if (p->roots[i].refs > 0 && c >= p->roots[i].lo && c < p->roots[i].hi) return &p->roots[i];
  return NULL;
}

static void pin(interp_plan *p, const mil_value *v) {
  plan_root *r = v && v->kind == MIL_VAL_TENSOR && v->raw ? root_of(p, v->raw) : NULL;
  if (r) r->refs = INT64_MAX / 2;
}

/* var->aux of a body var after it ran: its root, or NULL. */
static bool is_root(const interp_plan *p, const void *a) {
  return a && (const plan_root *)a >= p->roots && (const plan_root *)a < p->roots + p->n_roots;
}

void interp_plan_after(interp_plan *p, interp_run *r, mil_op *op, int32_t index) {
  if (!p || p->off || index < 0 || index >= p->n_ops) return;
  for (int32_t i = 0; i < op->n_outputs; i++) {
    mil_var *v = op->outputs[i];
    const mil_value *val = v->val;
    v->aux = NULL;
    if (!val) continue;
    if (val->kind != MIL_VAL_TENSOR) {
      p->off = true; /* containers may hold any value: free nothing more */
      return;
    }
    if (val->widened_from) pin(p, val->widened_from);
    if (val->deferred) {
      pin(p, ir_deferred_mark_source(val));
      pin(p, ir_deferred_mark_extra(val));
    }
    if (!val->raw || !val->nbytes) continue;
    plan_root *rt = root_of(p, val->raw);
    if (!rt && val->big && val->storage != MIL_STORE_VIEW && p->n_roots < p->cap_roots) {
      rt = &p->roots[p->n_roots++];
      rt->lo = val->raw;
      rt->hi = (const char *)val->raw + val->nbytes;
      rt->owner = (mil_value *)val;
      rt->refs = 0;
      p->live += (int64_t)val->nbytes;
      if (p->live > p->peak) p->peak = p->live;
    }
    if (rt) {
      rt->refs++;
      v->aux = rt;
    }
  }
  for (int32_t j = p->die_start[index]; j < p->die_start[index + 1]; j++) {
    mil_var *v = p->die[j];
    if (!is_root(p, v->aux)) continue;
    plan_root *rt = v->aux;
    v->aux = NULL;
    if (--rt->refs == 0) {
      p->live -= (int64_t)(rt->hi - rt->lo);
      ir_big_release(r->prog, rt->owner);
    }
  }
}

int64_t interp_plan_peak(const interp_plan *p) { return p ? p->peak : 0; }
