/* Internal interface of common::reduce_transposes, which is split over
 * reduce_transposes.c (the pass, the three phases in order),
 * reduce_transposes_visit.c (phase 1: the traversal assigning hypothetical
 * values), reduce_transposes_axis.c (the axis-update ops: whether a
 * transpose can pass them and how they change when it does),
 * reduce_transposes_apply.c (phases 2 and 3: choosing the transposes to
 * remove and rewriting the block) and reduce_transposes_names.c (the
 * names of the ops phase 3 makes).
 *
 * Mirrors coremltools/converters/mil/mil/passes/defs/optimize_repeat_ops.py
 * (_TransposeOptimization, TransformAxisUpdateOps and its subclasses,
 * reduce_transposes). Python sets become insertion-ordered arrays, so the
 * rewrite is deterministic.
 */
#ifndef MIL_REDUCE_TRANSPOSES_INTERNAL_H
#define MIL_REDUCE_TRANSPOSES_INTERNAL_H

#include "passes/tensor_pass_internal.h"

#define RT_MAX_RANK 64

/* A growable array of ops (insertion-ordered). */
typedef struct rt_ops {
  mil_op **v;
  int32_t n, cap;
} rt_ops;

typedef struct rt_node rt_node;

/* A growable array of nodes. */
typedef struct rt_nodes {
  rt_node **v;
  int32_t n, cap;
} rt_nodes;

/* A materialization edge: the op of `node` reads var, which carries a lazy
 * transpose. */
typedef struct rt_edge {
  rt_node *node;
  mil_var *var;
} rt_edge;

typedef struct rt_edges {
  rt_edge *v;
  int32_t n, cap;
} rt_edges;

/* coremltools' _HypotheticalValue (lazy == false) and
 * _LazyTransposeHypotheticalValue (lazy == true: the transposes in
 * `transposes`, all with perm `perm`, applied to `wrapped`). Lazy values
 * live in the context's slab. */
typedef struct rt_hv rt_hv;
struct rt_hv {
  bool lazy;
  int32_t rank;
  rt_hv *wrapped;
  const int64_t *perm; /* rank entries (slab; shared, never written) */
  rt_ops *transposes;  /* shared by the outputs of one op */
};

/* What the pass knows about one op, in every role it can play. Nodes live
 * in the context's slab; op->aux points at an op's node (phase 1 clears
 * the aux of every op it visits, and only those and the sinks get one). */
struct rt_node {
  mil_op *op;
  /* as a starting transpose */
  bool in_cancel_map;   /* key of transpose_op_to_cancel_ops */
  bool in_mat_map;      /* key of transpose_op_to_materialize_ops */
  rt_nodes cancel;      /* transposes it cancels with */
  rt_edges mat;         /* where it must materialize */
  rt_nodes axis;        /* axis-update ops it passes through */
  /* inverse maps of phase 2 */
  bool is_cancel_op, is_mat_op;
  rt_nodes starts; /* starting transposes of a cancel / materialize op */
  /* book keeping */
  bool visited, updated, removed, dropped;
  int32_t comp;  /* phase 2: 1 + the index of the component listing it */
  int32_t stamp; /* phase 1: the last transposes set it was added to */
  mil_var **handled; /* as a materialize op: input vars already materialized */
  int32_t n_handled, cap_handled;
  rt_node *next_alloc;
};

/* The op types the traversal tells apart. */
enum {
  RT_K_OTHER,
  RT_K_UNARY, /* coremltools' _UNARY_LIKE_OP_TYPES */
  RT_K_TRANSPOSE,
  RT_K_CONCAT, /* the axis-update ops, RT_K_CONCAT .. RT_K_BINARY */
  RT_K_SPLIT,
  RT_K_PAD,
  RT_K_REDUCE,
  RT_K_BINARY,
};

/* Names gathered for the run's name set (see reduce_transposes_names.c). */
typedef struct rt_gather {
  const char **v;
  size_t n, cap;
} rt_gather;

/* A chunk of the slab that holds lazy values, nodes and perms. */
typedef struct rt_chunk {
  struct rt_chunk *next;
} rt_chunk;

/* Cache of the kind of each interned op type string (open addressing). */
#define RT_KIND_SLOTS 256
typedef struct rt_kind_slot {
  const char *type;
  int kind;
} rt_kind_slot;

typedef struct rt_ctx {
  pass_t_ctx *c;
  mil_block *b;
  /* var -> rt_hv for the vars with a lazy value; every other var reads as
   * `plain` (plain values carry nothing, so one object stands for all) */
  pass_ptrmap hv_of;
  rt_hv plain;
  /* a filter over the keys of hv_of: a var whose bit is clear has none
   * (1 << lazy_log2 bits, about four per op of the block) */
  uint64_t *lazy_bits;
  int32_t lazy_log2;
  /* the same filter over the ops reading a lazy value (in the same
   * allocation): an op whose bit is clear reads none */
  uint64_t *reader_bits;
  rt_kind_slot kinds[RT_KIND_SLOTS];
  int32_t n_kinds;
  int32_t n_stamps; /* stamps handed to transposes sets */
  /* the slab: chunks, and the free room of the newest one */
  rt_chunk *chunks;
  char *slab_at;
  size_t slab_left;
  rt_node *nodes; /* every node, newest first (their arrays are freed) */
  rt_ops **sets; /* every transposes set, for freeing */
  int32_t n_sets, cap_sets;
  /* while the run's name set is not built: the names of the ops phase 1
   * passed from gather_from (the block's first transpose) on */
  rt_gather gathered;
  mil_op *gather_from;
  rt_nodes cancel_keys; /* insertion order of transpose_op_to_cancel_ops */
  rt_nodes mat_keys;    /* insertion order of transpose_op_to_materialize_ops */
  /* output sinks */
  int32_t n_outputs;
  mil_var **old_outputs;   /* the block's outputs before the sinks */
  const char **old_names;  /* their names then */
  mil_op **sinks;          /* one per distinct output var */
  int32_t n_sinks;
  pass_ptrset sink_set;    /* the sinks, for O(1) lookups */
  pass_ptrmap old_index;   /* old output var -> 1 + its first output index */
  bool oom;
} rt_ctx;

/* ---------- small containers (reduce_transposes.c) ---------- */

bool rt_ops_add(rt_ctx *t, rt_ops *s, mil_op *op);
bool rt_edges_add(rt_ctx *t, rt_edges *s, rt_node *node, mil_var *var);
bool rt_nodes_add(rt_ctx *t, rt_nodes *s, rt_node *n);
/* rt_nodes_add unless s holds n. */
bool rt_nodes_add_unique(rt_ctx *t, rt_nodes *s, rt_node *n);
/* n zeroed bytes from the slab, 16-byte aligned (NULL on out of memory). */
void *rt_alloc(rt_ctx *t, size_t n);
/* The node of op, created on first use (NULL on out of memory). op must
 * have been visited by phase 1 or be a sink. */
rt_node *rt_node_of(rt_ctx *t, mil_op *op);
/* The node of op if it exists (same condition on op). */
static inline rt_node *rt_node_find(const rt_ctx *t, const mil_op *op) {
  (void)t;
  return (rt_node *)op->aux;
}
/* A new lazy hypothetical value (NULL on out of memory). */
rt_hv *rt_hv_new_lazy(rt_ctx *t);
/* A new empty transposes set owned by t (NULL on out of memory). */
rt_ops *rt_set_new(rt_ctx *t);
/* The hypothetical value of v; vars never seen read as a plain value
 * (coremltools only looks up vars it visited). Never NULL. */
rt_hv *rt_hv_get(rt_ctx *t, mil_var *v);
/* false on out of memory (h == NULL counts as such). Setting a lazy value
 * sets the reader_bits of the ops reading v. */
bool rt_hv_set(rt_ctx *t, mil_var *v, rt_hv *h);
/* p's bit in lazy_bits and reader_bits. */
static inline size_t rt_bit(const rt_ctx *t, const void *p) {
  return (size_t)(((uint64_t)(uintptr_t)p * UINT64_C(0x9E3779B97F4A7C15)) >> (64 - t->lazy_log2));
}
/* false when v certainly has a plain value (a quick filter). */
static inline bool rt_maybe_lazy(const rt_ctx *t, const mil_var *v) {
  size_t b = rt_bit(t, v);
  return (t->lazy_bits[b / 64] >> (b % 64)) & 1;
}
/* false when op certainly reads no lazy value (a quick filter). */
static inline bool rt_maybe_reader(const rt_ctx *t, const mil_op *op) {
  size_t b = rt_bit(t, op);
  return (t->reader_bits[b / 64] >> (b % 64)) & 1;
}
/* RT_K_* of op (cached per type string). */
int rt_kind(rt_ctx *t, const mil_op *op);
/* True when v is one of the block's outputs before the sinks; *name gets
 * the name it had then. */
bool rt_is_old_output(const rt_ctx *t, const mil_var *v, const char **name);
bool rt_is_sink(const rt_ctx *t, const mil_op *op);
/* The perm of a transpose, as written (false when unknown). */
bool rt_perm(const mil_op *op, int64_t *perm, int32_t *rank);
/* Python-style index into a list of n entries (negative from the end);
 * -1 when out of range. */
int64_t rt_pyindex(int64_t i, int32_t n);
/* The vars bound to op's inputs, in input order (tuples expanded), without
 * const outputs when nonconst_only. Literal bindings are skipped. Returns
 * the count (writes at most max). */
int32_t rt_input_vars(const mil_op *op, bool nonconst_only, mil_var **out, int32_t max);

/* ---------- phase 1 (reduce_transposes_visit.c) ---------- */

/* coremltools' block_traversal over the block's inputs and ops (the sinks
 * not added yet); stops with *nested set at the first op that has nested
 * blocks. false on out of memory. */
bool rt_traverse(rt_ctx *t, bool *nested);
/* The rest of the traversal: the sinks, in order. */
bool rt_traverse_sinks(rt_ctx *t);

/* ---------- axis-update ops (reduce_transposes_axis.c) ---------- */

/* RT_K_CONCAT .. RT_K_BINARY for the op types coremltools registers as
 * axis-update ops, RT_K_OTHER otherwise (string compares; see rt_kind). */
int rt_axis_kind(const mil_op *op);
static inline bool rt_is_axis_kind(int k) { return k >= RT_K_CONCAT && k <= RT_K_BINARY; }
/* can_transpose_pass of the op's class, for a transpose with `perm`. */
bool rt_axis_can_pass(rt_ctx *t, mil_op *op, const int64_t *perm, int32_t rank);
/* update(): rewrites op so that op(x) == transpose(op'(x')). 0 or -(status). */
int rt_axis_update(rt_ctx *t, mil_op *op, const int64_t *perm, int32_t rank);
/* Rebinds every binding of old in op's inputs to new_var (coremltools'
 * replace_uses_of_var_after_op with end_op = op and the anchor just
 * before it). */
void rt_rebind(mil_op *op, mil_var *old, mil_var *new_var);

/* ---------- names of new ops (reduce_transposes_names.c) ---------- */

/* The taken names of one run of the pass (kept in c->ud, built on first
 * need; the same set pass_t_names would give). */
/* Reading ahead in a walk that gathers names: the output arrays of the op
 * four on and the first output var of the op two on are asked for while
 * the current op is handled (set up with rt_ahead_at, advanced by
 * rt_ahead_step once per op). */
typedef struct rt_ahead {
  const mil_op *near, *far;
} rt_ahead;
static inline void rt_ahead_at(rt_ahead *a, const mil_op *op) {
  for (int k = 0; op && k < 2; k++) op = op->next;
  a->near = op;
  for (int k = 0; op && k < 2; k++) op = op->next;
  a->far = op;
}
static inline void rt_ahead_step(rt_ahead *a) {
  if (a->far) {
    PASS_PREFETCH(a->far->outputs);
    a->far = a->far->next;
  }
  if (a->near) {
    if (a->near->n_outputs > 0) PASS_PREFETCH(a->near->outputs[0]);
    a->near = a->near->next;
  }
}

typedef pass_names rt_names; /* the passes' name set, from the names phase 1 gathered */
/* The run's name set, built now if needed (NULL on out of memory). */
rt_names *rt_names_of(rt_ctx *t);
/* Phase 1's part of building the set: gathers the names of op and its
 * outputs (op has no nested blocks). false on out of memory. */
bool rt_gather_op(rt_ctx *t, const mil_op *op);
void rt_names_free(rt_names *n);
/* Records name as taken. false on out of memory. */
bool rt_name_add(rt_ctx *t, const char *name);
/* Fresh "<prefix>_<k>" (pass_t_fresh); NULL on out of memory. */
const char *rt_fresh(rt_ctx *t, const char *prefix);
/* pass_t_op, pass_t_const and pass_t_finish with the run's name set. */
mil_op *rt_new_op(rt_ctx *t, mil_op *anchor, const char *type, const char *name);
bool rt_const_input(rt_ctx *t, mil_op *op, const char *input, const mil_value *v);
mil_status rt_finish_op(rt_ctx *t, mil_op *op);

/* ---------- phases 2 and 3 (reduce_transposes_apply.c) ---------- */

/* _verify_cancellable_transposes. false on out of memory. */
bool rt_verify(rt_ctx *t);
/* _remove_transpose_ops for every remaining starting transpose, in order.
 * 0 or -(status). */
int rt_apply(rt_ctx *t);

#endif
