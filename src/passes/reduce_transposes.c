/* common::reduce_transposes — move transposes through the ops that commute
 * with them and cancel them against their inverses, materializing them
 * only where an op needs the transposed layout, when that removes more
 * transposes than it adds.
 *
 *   main(%x: (1, 2, 3, 4, fp32)(Tensor)) {
 *     block0() {
 *       %p: (4,int32)*(Tensor) = const(val=[0, 2, 3, 1], name="p")
 *       %t: (1, 3, 4, 2, fp32)(Tensor) = transpose(x=%x, perm=%p, name="t")
 *       %r: (1, 3, 4, 2, fp32)(Tensor) = relu(x=%t, name="r")
 *       %q: (4,int32)*(Tensor) = const(val=[0, 3, 1, 2], name="q")
 *       %u: (1, 2, 3, 4, fp32)(Tensor) = transpose(x=%r, perm=%q, name="u")
 *       %l: (1, 2, 3, 4, fp32)(Tensor) = log(x=%u, name="l")
 *     } -> (%l)
 *   }
 *
 * becomes
 *
 *   main(%x: (1, 2, 3, 4, fp32)(Tensor)) {
 *     block0() {
 *       %p: (4,int32)*(Tensor) = const(val=[0, 2, 3, 1], name="p")
 *       %r: (1, 2, 3, 4, fp32)(Tensor) = relu(x=%x, name="r")
 *       %q: (4,int32)*(Tensor) = const(val=[0, 3, 1, 2], name="q")
 *       %l: (1, 2, 3, 4, fp32)(Tensor) = log(x=%r, name="l")
 *     } -> (%l)
 *   }
 *
 * The three phases of coremltools' _TransposeOptimization:
 *  1. every output gets an identity "sink"; the block is walked in order
 *     and every var gets a hypothetical value: a transpose of a plain value
 *     starts a lazy transpose; unary-like ops pass it on; axis-update ops
 *     (concat, split, pad, reduce_*, add/mul/sub/real_div/maximum/minimum)
 *     pass it on when they can be rewritten for the untransposed input; a
 *     transpose with the inverse perm cancels it; every other op (and a
 *     sink) materializes it.
 *  2. starting transposes, their cancelling transposes and the
 *     materializing ops form a bipartite graph; a connected component is
 *     kept for removal only when it has fewer distinct materializing ops
 *     than starting plus cancelling transposes.
 *  3. for each kept starting transpose: its axis-update ops are rewritten,
 *     it and its cancelling transposes are bypassed and removed (an output
 *     keeps its name: the bypassing var takes it, or an identity carries it),
 *     and a copy of it is inserted before each materializing op (before a
 *     sink: named as the output, the var it reads renamed
 *     "_before_transpose_op_<name>"). The sinks go, and the types of all
 *     ops are inferred again.
 * Only function bodies without nested blocks are optimized.
 *
 * Mirrors coremltools/converters/mil/mil/passes/defs/optimize_repeat_ops.py
 * (reduce_transposes, _TransposeOptimization).
 */
#include <stdlib.h>
#include <string.h>

#include "passes/reduce_transposes_internal.h"

/* ---------- containers ---------- */

static bool grow(rt_ctx *t, void **v, int32_t *cap, int32_t n, size_t elem) {
  if (n < *cap) return true;
  int32_t nc = *cap ? *cap * 2 : 4;
  void *nv = realloc(*v, (size_t)nc * elem);
  if (!nv) {
    t->oom = true;
    return false;
  }
  *v = nv;
  *cap = nc;
  return true;
}

bool rt_ops_add(rt_ctx *t, rt_ops *s, mil_op *op) {
  if (!grow(t, (void **)&s->v, &s->cap, s->n, sizeof *s->v)) return false;
  s->v[s->n++] = op;
  return true;
}

bool rt_edges_add(rt_ctx *t, rt_edges *s, rt_node *node, mil_var *var) {
  if (!grow(t, (void **)&s->v, &s->cap, s->n, sizeof *s->v)) return false;
  s->v[s->n++] = (rt_edge){node, var};
  return true;
}

bool rt_nodes_add(rt_ctx *t, rt_nodes *s, rt_node *n) {
  if (!grow(t, (void **)&s->v, &s->cap, s->n, sizeof *s->v)) return false;
  s->v[s->n++] = n;
  return true;
}

bool rt_nodes_add_unique(rt_ctx *t, rt_nodes *s, rt_node *n) {
  /* a repeat is most often the last one added */
  for (int32_t i = s->n - 1; i >= 0; i--)
    if (s->v[i] == n) return true;
  return rt_nodes_add(t, s, n);
}

/* The slab grows by chunks of this size (larger requests get their own). */
#define RT_CHUNK (64 * 1024)

void *rt_alloc(rt_ctx *t, size_t n) {
  n = (n + 15) & ~(size_t)15;
  if (n > t->slab_left) {
    size_t head = (sizeof(rt_chunk) + 15) & ~(size_t)15;
    size_t size = n > RT_CHUNK - head ? head + n : RT_CHUNK;
    rt_chunk *c = calloc(1, size);
    if (!c) {
      t->oom = true;
      return NULL;
    }
    c->next = t->chunks;
    t->chunks = c;
    t->slab_at = (char *)c + head;
    t->slab_left = size - head;
  }
  void *r = t->slab_at;
  t->slab_at += n;
  t->slab_left -= n;
  return r;
}

rt_node *rt_node_of(rt_ctx *t, mil_op *op) {
  rt_node *n = rt_node_find(t, op);
  if (n) return n;
  n = rt_alloc(t, sizeof *n);
  if (!n) return NULL;
  n->op = op;
  n->next_alloc = t->nodes;
  t->nodes = n;
  op->aux = n;
  return n;
}

rt_hv *rt_hv_new_lazy(rt_ctx *t) {
  rt_hv *h = rt_alloc(t, sizeof *h);
  if (h) h->lazy = true;
  return h;
}

rt_ops *rt_set_new(rt_ctx *t) {
  if (!grow(t, (void **)&t->sets, &t->cap_sets, t->n_sets, sizeof *t->sets)) return NULL;
  rt_ops *s = rt_alloc(t, sizeof *s);
  if (s) t->sets[t->n_sets++] = s;
  return s;
}

rt_hv *rt_hv_get(rt_ctx *t, mil_var *v) {
  rt_hv *h = rt_maybe_lazy(t, v) ? pass_ptrmap_get(&t->hv_of, v) : NULL;
  return h ? h : &t->plain;
}

bool rt_hv_set(rt_ctx *t, mil_var *v, rt_hv *h) {
  if (!h) {
    t->oom = true;
    return false;
  }
  /* a plain value is recorded only over an earlier lazy one */
  if (!h->lazy && !(rt_maybe_lazy(t, v) && pass_ptrmap_get(&t->hv_of, v))) return true;
  if (!pass_ptrmap_put(&t->hv_of, v, h)) {
    t->oom = true;
    return false;
  }
  size_t b = rt_bit(t, v);
  t->lazy_bits[b / 64] |= UINT64_C(1) << (b % 64);
  /* the ops reading a lazy value, all after v's producer, are noted for
   * the traversal */
  if (h->lazy)
    for (const mil_use *u = v->uses; u; u = u->next_use)
      if (u->op) {
        b = rt_bit(t, u->op);
        t->reader_bits[b / 64] |= UINT64_C(1) << (b % 64);
      }
  return true;
}

bool rt_is_old_output(const rt_ctx *t, const mil_var *v, const char **name) {
  uintptr_t k = (uintptr_t)pass_ptrmap_get(&t->old_index, v);
  if (!k) return false;
  if (name) *name = t->old_names[k - 1];
  return true;
}

bool rt_is_sink(const rt_ctx *t, const mil_op *op) { return pass_ptrset_has(&t->sink_set, op); }

bool rt_perm(const mil_op *op, int64_t *perm, int32_t *rank) {
  /* pass_t_ints, reading an int32 tensor's elements directly */
  const mil_value *v = pass_input_value(op, "perm");
  if (v && v->kind == MIL_VAL_TENSOR && v->type && v->type->dtype == MIL_DT_INT32 && v->numel <= RT_MAX_RANK &&
      !mil_value_is_deferred(v)) {
    const int32_t *d = v->numel ? mil_value_data(v) : NULL;
    if (d || !v->numel) {
      for (int64_t i = 0; i < v->numel; i++) perm[i] = d[i];
      *rank = (int32_t)v->numel;
      return true;
    }
  }
  int64_t n;
  if (!pass_t_ints(op, "perm", perm, RT_MAX_RANK, &n)) return false;
  *rank = (int32_t)n;
  return true;
}

int64_t rt_pyindex(int64_t i, int32_t n) {
  if (i < 0) i += n;
  return i >= 0 && i < n ? i : -1;
}

int32_t rt_input_vars(const mil_op *op, bool nonconst_only, mil_var **out, int32_t max) {
  int32_t n = 0;
  for (int32_t i = 0; i < op->n_inputs; i++)
    for (int32_t a = 0; a < op->inputs[i].n_args; a++) {
      mil_var *v = op->inputs[i].args[a].use.var;
      if (!v) continue;
      if (nonconst_only && v->op && mil_op_is_const(v->op)) continue;
      if (n < max) out[n] = v;
      n++;
    }
  return n;
}

/* ---------- the pass ---------- */

static void ctx_free(rt_ctx *t) {
  for (rt_node *n = t->nodes; n; n = n->next_alloc) {
    free(n->cancel.v);
    free(n->mat.v);
    free(n->axis.v);
    free(n->starts.v);
    free(n->handled);
  }
  /* lazy values share transposes sets: their arrays are freed through the
   * owner list */
  for (int32_t i = 0; i < t->n_sets; i++) free(t->sets[i]->v);
  free(t->sets);
  while (t->chunks) {
    rt_chunk *c = t->chunks;
    t->chunks = c->next;
    free(c);
  }
  free(t->lazy_bits);
  free(t->gathered.v);
  pass_ptrmap_free(&t->hv_of);
  free(t->cancel_keys.v);
  free(t->mat_keys.v);
  free(t->old_outputs);
  free(t->old_names);
  free(t->sinks);
  pass_ptrset_free(&t->sink_set);
  pass_ptrmap_free(&t->old_index);
}

/* Records the block's outputs, their names and the first index of each
 * distinct output var (the program is not changed). */
static int note_outputs(rt_ctx *t) {
  mil_block *b = t->b;
  int32_t n = b->n_outputs;
  t->n_outputs = n;
  t->old_outputs = calloc((size_t)n + 1, sizeof *t->old_outputs);
  t->old_names = calloc((size_t)n + 1, sizeof *t->old_names);
  t->sinks = calloc((size_t)n + 1, sizeof *t->sinks);
  if (!t->old_outputs || !t->old_names || !t->sinks) return pass_t_oom(t->c);
  for (int32_t i = 0; i < n; i++) {
    mil_var *v = b->outputs[i].var;
    t->old_outputs[i] = v;
    t->old_names[i] = v->name;
    if (!pass_ptrmap_get(&t->old_index, v) && !pass_ptrmap_put(&t->old_index, v, (void *)(uintptr_t)(i + 1)))
      return pass_t_oom(t->c);
  }
  return 0;
}

/* _add_output_sinks: an identity at the end of the block per distinct
 * output var; the block then outputs the identities. */
static int add_sinks(rt_ctx *t) {
  mil_block *b = t->b;
  int32_t n = t->n_outputs;
  mil_var **outs = calloc((size_t)n + 1, sizeof *outs);
  if (!outs) return pass_t_oom(t->c);
  for (int32_t i = 0; i < n; i++) {
    mil_var *v = t->old_outputs[i];
    uintptr_t first = (uintptr_t)pass_ptrmap_get(&t->old_index, v);
    mil_op *sink = first && (int32_t)first - 1 < i ? outs[first - 1]->op : NULL;
    if (!sink) {
      /* The sinks are gone before the pass ends and no name is derived
       * from theirs, so they need no fresh names: the program's name set
       * (a walk over the whole program) is built only when phase 3 creates
       * ops. */
      char name[48];
      snprintf(name, sizeof name, "__reduce_transposes_sink_%d", (int)t->n_sinks);
      sink = mil_op_new(t->c->p, "identity", name);
      if (!sink) {
        free(outs);
        return pass_t_oom(t->c);
      }
      sink->aux = NULL;
      mil_block_append(b, sink);
      pass_t_var(sink, "x", v);
      mil_status st = pass_finish_op(sink, t->c->d);
      if (st != MIL_OK) {
        free(outs);
        return -(int)st;
      }
      t->sinks[t->n_sinks++] = sink;
      if (!pass_ptrset_add(&t->sink_set, sink)) {
        free(outs);
        return pass_t_oom(t->c);
      }
    }
    outs[i] = sink->outputs[0];
  }
  mil_status st = mil_block_set_outputs(b, n, outs);
  free(outs);
  return st == MIL_OK ? 0 : -(int)st;
}

/* Restores the outputs (the sinks' current inputs) and removes the sinks. */
static int drop_sinks(rt_ctx *t) {
  mil_block *b = t->b;
  int32_t n = b->n_outputs;
  mil_var **outs = calloc((size_t)n + 1, sizeof *outs);
  if (!outs) return pass_t_oom(t->c);
  for (int32_t i = 0; i < n; i++) {
    mil_op *sink = b->outputs[i].var->op;
    outs[i] = sink && rt_is_sink(t, sink) ? mil_op_input_var(sink, "x") : b->outputs[i].var;
  }
  mil_status st = mil_block_set_outputs(b, n, outs);
  free(outs);
  if (st != MIL_OK) return -(int)st;
  return pass_t_remove(t->c, t->sinks, t->n_sinks);
}

/* type_value_inference(overwrite_output=True) of every op, in order. Like
 * coremltools this runs for every flat block, even when nothing was
 * cancelled: it refreshes types left stale by earlier passes (e.g. after
 * remove_redundant_ops merged two range_1d ops, the consumers of the
 * dropped one still carry its symbolic length until inferred again), so
 * it cannot be limited to the ops downstream of what this pass rewrote. */
static int reinfer(rt_ctx *t) {
  for (mil_op *op = t->b->first; op; op = op->next) {
    if (mil_op_is_const(op)) continue;
    mil_status st = mil_op_infer(op, t->c->d);
    if (st != MIL_OK) return -(int)st;
  }
  return 0;
}

static int optimize_block(pass_t_ctx *c, mil_block *b) {
  rt_ctx t = {.c = c, .b = b, .lazy_log2 = 14};
  while (t.lazy_log2 < 24 && ((int64_t)1 << t.lazy_log2) < 4 * (int64_t)b->n_ops) t.lazy_log2++;
  size_t words = (size_t)1 << (t.lazy_log2 - 6);
  t.lazy_bits = calloc(2 * words, sizeof *t.lazy_bits);
  if (!t.lazy_bits) return pass_t_oom(c);
  t.reader_bits = t.lazy_bits + words;
  /* Phase 1 only reads the program, so it runs over the block's ops before
   * the sinks exist and leaves off, changing nothing, at the first op with
   * nested blocks; the sinks are visited once added (they come last). */
  bool nested = false;
  int r = note_outputs(&t);
  if (r >= 0 && !rt_traverse(&t, &nested)) r = pass_t_oom(c);
  if (r >= 0 && nested) {
    ctx_free(&t);
    return 0;
  }
  if (r >= 0) r = add_sinks(&t);
  if (r >= 0 && !rt_traverse_sinks(&t)) r = pass_t_oom(c);
  if (r >= 0 && !rt_verify(&t)) r = pass_t_oom(c);
  if (r >= 0) r = rt_apply(&t);
  if (r >= 0) r = drop_sinks(&t);
  if (r >= 0) r = reinfer(&t);
  if (r >= 0 && t.oom) r = pass_t_oom(c);
  ctx_free(&t);
  return r;
}

static mil_status run(mil_program *p, const mil_pass_options *o, mil_pass_stats *st, mil_diag *d) {
  (void)o;
  pass_t_ctx c = {.p = p, .d = d, .pass = "reduce_transposes"};
  int r = 0;
  for (int32_t fi = 0; fi < p->n_functions && r >= 0; fi++) {
    mil_function *f = p->functions[fi];
    for (int32_t s = 0; s < f->n_specs && r >= 0; s++) r = optimize_block(&c, f->specs[s].block);
  }
  if (st) st->changes += c.changes;
  rt_names_free(c.ud);
  pass_t_free(&c);
  return r < 0 ? (mil_status)(-r) : MIL_OK;
}

const mil_pass_def pass_def_reduce_transposes = {
    "common::reduce_transposes", "cancel transposes against their inverses through ops that commute with them",
    NULL, 0, run, NULL};
