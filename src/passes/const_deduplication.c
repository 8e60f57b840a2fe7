/* common::const_deduplication — let equal large consts (and equal constexpr
 * ops) be one op.
 *
 *   main(%q: (1, 4, fp32)(Tensor), %k: (1, 4, fp32)(Tensor)) {
 *     block0() {
 *       %wq: (200, 4, fp32)*(Tensor) = const(val=W, name="wq")
 *       %wk: (200, 4, fp32)*(Tensor) = const(val=W, name="wk")
 *       %a: (1, 200, fp32)(Tensor) = linear(x=%q, weight=%wq, name="a")
 *       %b: (1, 200, fp32)(Tensor) = linear(x=%k, weight=%wk, name="b")
 *     } -> (%a, %b)
 *   }
 *
 * becomes
 *
 *   main(%q: (1, 4, fp32)(Tensor), %k: (1, 4, fp32)(Tensor)) {
 *     block0() {
 *       %wq: (200, 4, fp32)*(Tensor) = const(val=W, name="wq")
 *       %a: (1, 200, fp32)(Tensor) = linear(x=%q, weight=%wq, name="a")
 *       %b: (1, 200, fp32)(Tensor) = linear(x=%k, weight=%wq, name="b")
 *     } -> (%a, %b)
 *   }
 *
 * Per block (nested blocks first), in two stages:
 *  1. const ops: a const is a duplicate of an earlier one of the same
 *     dtype and shape whose first 100 elements have the same bytes and whose
 *     elements are all within an absolute 6e-8 (fp16) / 1e-12 (others) of
 *     it. Only consts with at least `const_threshold` elements take part;
 *     string and bool scalars never do.
 *  2. constexpr_* ops: a duplicate has the same op type and, input by input,
 *     the same dtype and either the same var (inputs without a value, or
 *     with at least const_threshold elements) or an equal value.
 * Every use of a duplicate moves to the first op and the duplicate is
 * removed, unless the duplicate is an output of the block. Hashing keeps the
 * pass linear.
 *
 * Mirrors coremltools/converters/mil/mil/passes/defs/cleanup/
 * const_deduplication.py (the per-function `apply`; the cross-function
 * weight sharing of _deduplicate_const_across_functions is a writer concern).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "passes/pass_internal.h"

static const mil_pass_option_def k_opts[] = {
    {"const_threshold", MIL_POPT_INT, "100", false, false, 0, 0,
     "consts with fewer elements than this are not deduplicated"},
};

#define HASH_ELEMS 100

/* A group of equal ops: the first one and the duplicates after it. */
typedef struct group {
  uint64_t h;
  mil_op *first;
  mil_op **dups;
  int32_t n_dups, cap_dups;
  struct group *next_same_hash;
  struct group *next_in_order;
} group;

typedef struct dedup {
  int64_t threshold;
  int64_t changes;
  mil_diag *d;
  pass_ptrmap by_hash; /* (hash | 1) -> chain of groups */
  group *first, *last; /* groups in order of creation */
  bool oom;
} dedup;

static uint64_t mix(uint64_t h, uint64_t x) {
  h ^= x + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
  return h * 0xff51afd7ed558ccdULL;
}

static void groups_reset(dedup *c) {
  for (group *g = c->first, *n; g; g = n) {
    n = g->next_in_order;
    free(g->dups);
    free(g);
  }
  c->first = c->last = NULL;
  pass_ptrmap_free(&c->by_hash);
}

static group *group_new(dedup *c, uint64_t h, mil_op *first) {
  group *g = calloc(1, sizeof *g);
  if (!g) {
    c->oom = true;
    return NULL;
  }
  g->h = h;
  g->first = first;
  void *key = (void *)(uintptr_t)(h | 1);
  g->next_same_hash = pass_ptrmap_get(&c->by_hash, key);
  if (!pass_ptrmap_put(&c->by_hash, key, g)) {
    free(g);
    c->oom = true;
    return NULL;
  }
  if (c->last) c->last->next_in_order = g;
  else c->first = g;
  c->last = g;
  return g;
}

static group *groups_with_hash(dedup *c, uint64_t h) {
  return pass_ptrmap_get(&c->by_hash, (void *)(uintptr_t)(h | 1));
}

static void group_add(dedup *c, group *g, mil_op *op) {
  if (g->n_dups == g->cap_dups) {
    int32_t cap = g->cap_dups ? g->cap_dups * 2 : 4;
    mil_op **n = realloc(g->dups, (size_t)cap * sizeof *n);
    if (!n) {
      c->oom = true;
      return;
    }
    g->dups = n;
    g->cap_dups = cap;
  }
  g->dups[g->n_dups++] = op;
}

/* ---------- stage 1: const ops ---------- */

static bool is_scalar_value(const mil_value *v) { return v->type->rank == 0; }

/* coremltools' should_be_deduplicated: not a string or bool scalar, and at
 * least `threshold` elements. */
static bool worth_deduplicating(const dedup *c, const mil_value *v) {
  if (!v || v->kind != MIL_VAL_TENSOR || !v->type) return false;
  mil_dtype dt = v->type->dtype;
  if (dt == MIL_DT_STRING) return false;
  if (dt == MIL_DT_BOOL && is_scalar_value(v)) return false;
  return v->numel >= c->threshold;
}

static bool same_shape(const mil_value *a, const mil_value *b) {
  if (a->type->dtype != b->type->dtype || a->type->rank != b->type->rank) return false;
  for (int32_t i = 0; i < a->type->rank; i++)
    if (a->type->dims[i].size != b->type->dims[i].size) return false;
  return true;
}

/* Bytes of the first HASH_ELEMS elements (byte-aligned dtypes), else 0. */
static size_t head_bytes(const mil_value *v) {
  if (mil_dtype_is_subbyte(v->type->dtype)) return 0;
  int64_t k = v->numel < HASH_ELEMS ? v->numel : HASH_ELEMS;
  size_t n = (size_t)k * mil_dtype_size(v->type->dtype);
  return n <= v->nbytes ? n : v->nbytes;
}

static uint64_t const_key(const mil_value *v) {
  uint64_t h = mix(0x5bd1e995ULL, (uint64_t)v->type->dtype);
  h = mix(h, (uint64_t)v->type->rank);
  for (int32_t i = 0; i < v->type->rank; i++) h = mix(h, (uint64_t)v->type->dims[i].size);
  size_t n = head_bytes(v);
  if (n || !mil_dtype_is_subbyte(v->type->dtype)) {
    const unsigned char *p = v->data;
    for (size_t i = 0; i < n; i++) h = mix(h, p[i]);
  } else {
    int64_t k = v->numel < HASH_ELEMS ? v->numel : HASH_ELEMS;
    for (int64_t i = 0; i < k; i++) h = mix(h, (uint64_t)mil_value_get_i64(v, i));
  }
  return h;
}

/* The same hash key: dtype, shape and the first elements' bytes. */
static bool same_key(const mil_value *a, const mil_value *b) {
  if (!same_shape(a, b)) return false;
  size_t n = head_bytes(a);
  if (n) return n == head_bytes(b) && memcmp(a->data, b->data, n) == 0;
  int64_t k = a->numel < HASH_ELEMS ? a->numel : HASH_ELEMS;
  for (int64_t i = 0; i < k; i++)
    if (mil_value_get_i64(a, i) != mil_value_get_i64(b, i)) return false;
  return true;
}

/* numpy.allclose(a, b, rtol=0, atol=atol). */
static bool all_close(const mil_value *a, const mil_value *b) {
  double atol = a->type->dtype == MIL_DT_FP16 ? 6e-8 : 1e-12;
  if (a->nbytes == b->nbytes && a->data == b->data) return true;
  for (int64_t i = 0; i < a->numel; i++) {
    double x = mil_value_get_f64(a, i), y = mil_value_get_f64(b, i);
    if (x == y) continue; /* equal infinities too */
    if (!(fabs(x - y) <= atol)) return false;
  }
  return true;
}

static void find_consts(dedup *c, mil_block *b) {
  for (mil_op *op = b->first; op && !c->oom; op = op->next) {
    if (!mil_op_is_const(op) || op->n_outputs != 1) continue;
    const mil_var *v = op->outputs[0];
    if (v->type && v->type->kind == MIL_TYPE_LIST) continue;
    const mil_value *val = v->val;
    if (!worth_deduplicating(c, val)) continue;
    uint64_t h = const_key(val);
    group *hit = NULL;
    for (group *g = groups_with_hash(c, h); g && !hit; g = g->next_same_hash) {
      const mil_value *gv = g->first->outputs[0]->val;
      if (g->h == h && same_key(gv, val) && all_close(val, gv)) hit = g;
    }
    if (hit) group_add(c, hit, op);
    else group_new(c, h, op);
  }
}

/* ---------- stage 2: constexpr ops ---------- */

typedef struct arg_ref {
  const mil_var *var;     /* compared by identity when set */
  const mil_value *value; /* compared by value otherwise */
  mil_dtype dtype;
} arg_ref;

static arg_ref arg_of(const dedup *c, const mil_arg *a) {
  arg_ref r = {NULL, NULL, MIL_DT_FP32};
  const mil_value *val = a->value ? a->value : a->use.var ? a->use.var->val : NULL;
  const mil_type *t = a->value ? a->value->type : a->use.var ? a->use.var->type : NULL;
  if (t) r.dtype = t->dtype;
  bool by_value = val && val->kind == MIL_VAL_TENSOR && val->type &&
                  (val->type->dtype == MIL_DT_STRING || (val->type->dtype == MIL_DT_BOOL && is_scalar_value(val)) ||
                   val->numel < c->threshold);
  if (by_value || !a->use.var) r.value = val;
  else r.var = a->use.var;
  return r;
}

static uint64_t constexpr_key(const dedup *c, const mil_op *op) {
  uint64_t h = mix(0x27d4eb2fULL, (uint64_t)(uintptr_t)op->type);
  for (int32_t i = 0; i < op->n_inputs; i++)
    for (int32_t k = 0; k < op->inputs[i].n_args; k++) {
      arg_ref r = arg_of(c, &op->inputs[i].args[k]);
      h = mix(h, (uint64_t)r.dtype);
      h = mix(h, r.var ? (uint64_t)(uintptr_t)r.var : mil_value_hash(r.value));
    }
  return h;
}

static bool same_constexpr(const dedup *c, const mil_op *a, const mil_op *b) {
  if (a->type != b->type || a->n_inputs != b->n_inputs) return false;
  for (int32_t i = 0; i < a->n_inputs; i++) {
    if (a->inputs[i].n_args != b->inputs[i].n_args) return false;
    for (int32_t k = 0; k < a->inputs[i].n_args; k++) {
      arg_ref x = arg_of(c, &a->inputs[i].args[k]), y = arg_of(c, &b->inputs[i].args[k]);
      if (x.dtype != y.dtype) return false;
      if (x.var || y.var) {
        if (x.var != y.var) return false;
      } else if (!x.value || !y.value || !mil_value_equal(x.value, y.value)) {
        return false;
      }
    }
  }
  return true;
}

static void find_constexprs(dedup *c, mil_block *b) {
  for (mil_op *op = b->first; op && !c->oom; op = op->next) {
    if (strncmp(op->type, "constexpr_", 10) != 0 || op->n_outputs < 1) continue;
    uint64_t h = constexpr_key(c, op);
    group *hit = NULL;
    for (group *g = groups_with_hash(c, h); g && !hit; g = g->next_same_hash)
      if (g->h == h && same_constexpr(c, g->first, op)) hit = g;
    if (hit) group_add(c, hit, op);
    else group_new(c, h, op);
  }
}

/* ---------- removal ---------- */

static bool is_output_of(const mil_var *v, const mil_block *b) {
  for (const mil_use *u = v->uses; u; u = u->next_use)
    if (!u->op && u->block == b) return true;
  return false;
}

static mil_status remove_duplicates(dedup *c, mil_block *b) {
  for (group *g = c->first; g; g = g->next_in_order) {
    mil_var *unique = g->first->outputs[0];
    for (int32_t i = 0; i < g->n_dups; i++) {
      mil_op *op = g->dups[i];
      mil_var *dup = op->outputs[0];
      if (is_output_of(dup, b)) continue;
      if (!pass_replace_uses_after(op, dup, unique) || mil_op_remove(op) != MIL_OK)
        return mil_diag_error(c->d, MIL_ERR_INVALID, "const_deduplication: cannot replace %%%s by %%%s", dup->name,
                              unique->name);
      c->changes++;
    }
  }
  groups_reset(c);
  return MIL_OK;
}

static mil_status dedup_block(dedup *c, mil_block *b, int depth) {
  if (depth > PASS_MAX_DEPTH)
    return mil_diag_error(c->d, MIL_ERR_UNSUPPORTED, "const_deduplication: blocks nested deeper than %d levels",
                          PASS_MAX_DEPTH);
  for (mil_op *op = b->first; op; op = op->next)
    for (int32_t i = 0; i < op->n_blocks; i++) {
      mil_status st = dedup_block(c, op->blocks[i], depth + 1);
      if (st != MIL_OK) return st;
    }
  find_consts(c, b);
  mil_status st = c->oom ? MIL_ERR_NOMEM : remove_duplicates(c, b);
  if (st != MIL_OK) return st;
  /* after stage 1 equal large consts are one var, so constexpr inputs can
   * be compared by identity */
  find_constexprs(c, b);
  st = c->oom ? MIL_ERR_NOMEM : remove_duplicates(c, b);
  return st;
}

static mil_status run(mil_program *p, const mil_pass_options *o, mil_pass_stats *stats, mil_diag *d) {
  mil_status st = pass_infer_marked_values(p, d);
  if (st != MIL_OK) return st;
  dedup c;
  memset(&c, 0, sizeof c);
  c.threshold = mil_pass_opt_int(o, "const_threshold");
  c.d = d;
  for (int32_t fi = 0; fi < p->n_functions && st == MIL_OK; fi++) {
    mil_function *f = p->functions[fi];
    for (int32_t s = 0; s < f->n_specs && st == MIL_OK; s++) st = dedup_block(&c, f->specs[s].block, 0);
  }
  if (st == MIL_ERR_NOMEM || c.oom) st = mil_diag_error(d, MIL_ERR_NOMEM, "const_deduplication: out of memory");
  groups_reset(&c);
  if (stats) stats->changes += c.changes;
  return st;
}

const mil_pass_def pass_def_const_deduplication = {"common::const_deduplication",
                                                   "share one const (or constexpr) among equal ones", k_opts, 1, run, NULL};
