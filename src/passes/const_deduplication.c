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
 *     strings never do, nor scalar bools PyMIL holds as Python bools
 *     (written in MIL text: mil_value.py_bool); a scalar bool read from a
 *     model file or computed by value inference is numpy's np.bool_ in
 *     coremltools and merges like any one-element value once
 *     const_threshold <= 1 (e.g. concat's interleave in a loaded model).
 *  2. constexpr_* ops: a duplicate has the same op type and, input by input,
 *     the same dtype and either the same var (inputs without a value, or
 *     with at least const_threshold elements) or an equal value.
 * Every use of a duplicate moves to the first op and the duplicate is
 * removed, unless the duplicate is an output of the block. Hashing keeps the
 * pass linear: consts are counted by dtype and shape first, and only those
 * sharing both have their first elements hashed; the element-wise check
 * runs only on equal first elements, comparing bytes span by span.
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

/* A group of equal ops: the first one and the duplicates after it. Groups
 * live in one array in order of creation; the duplicates of a group are a
 * list through the dups array. */
typedef struct group {
  uint64_t h;
  mil_op *first;
  int32_t dup_head, dup_tail; /* indices in dedup.dups, -1 when none */
  int32_t next_same_hash;     /* the previous group with hash h, or -1 */
} group;

typedef struct dup_ref {
  mil_op *op;
  int32_t next; /* next duplicate of the same group, or -1 */
} dup_ref;

/* A slot of the hash -> newest group table, valid when its stamp is the
 * table's (so emptying the table is one increment). */
typedef struct slot {
  uint64_t h;
  int32_t g;
  uint32_t stamp;
} slot;

typedef struct dedup {
  int64_t threshold;
  int64_t changes;
  mil_diag *d;
  group *groups;
  int32_t n_groups, cap_groups;
  dup_ref *dups;
  int32_t n_dups, cap_dups;
  slot *slots;
  size_t cap_slots; /* a power of two */
  uint32_t stamp;
  /* the candidates of the blocks being walked (a nested block's follow its
   * parent block's, and are dropped when it is done) */
  mil_op **consts, **constexprs;
  int32_t n_consts, cap_consts, n_constexprs, cap_constexprs;
  bool oom;
} dedup;

static uint64_t mix(uint64_t h, uint64_t x) {
  h ^= x + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
  return h * 0xff51afd7ed558ccdULL;
}

static size_t slot_of(uint64_t h, size_t cap) {
  return (size_t)((h ^ (h >> 29)) * 0x9e3779b97f4a7c15ULL >> 20) & (cap - 1);
}

static void groups_reset(dedup *c) {
  c->n_groups = 0;
  c->n_dups = 0;
  if (++c->stamp == 0) {
    /* wrapped: forget every slot for real */
    if (c->slots) memset(c->slots, 0, c->cap_slots * sizeof *c->slots);
    c->stamp = 1;
  }
}

static void groups_free(dedup *c) {
  free(c->groups);
  free(c->dups);
  free(c->slots);
  free(c->consts);
  free(c->constexprs);
}

static void push_op(dedup *c, mil_op ***v, int32_t *n, int32_t *cap, mil_op *op) {
  if (*n == *cap) {
    int32_t nc = *cap ? *cap * 2 : 64;
    mil_op **g = realloc(*v, (size_t)nc * sizeof *g);
    if (!g) {
      c->oom = true;
      return;
    }
    *v = g;
    *cap = nc;
  }
  (*v)[(*n)++] = op;
}

/* The slot of hash h (valid or the empty one where h would go). */
static slot *slot_find(const dedup *c, uint64_t h) {
  size_t j = slot_of(h, c->cap_slots);
  while (c->slots[j].stamp == c->stamp && c->slots[j].h != h) j = (j + 1) & (c->cap_slots - 1);
  return &c->slots[j];
}

static bool slots_grow(dedup *c) {
  size_t cap = c->cap_slots ? c->cap_slots * 2 : 256;
  slot *old = c->slots;
  size_t old_cap = c->cap_slots;
  slot *ns = calloc(cap, sizeof *ns);
  if (!ns) return false;
  c->slots = ns;
  c->cap_slots = cap;
  uint32_t stamp = c->stamp;
  c->stamp = 1;
  for (size_t i = 0; i < old_cap; i++)
    if (old[i].stamp == stamp) {
      slot *s = slot_find(c, old[i].h);
      *s = old[i];
      s->stamp = 1;
    }
  free(old);
  return true;
}

/* The newest group with hash h, or -1. */
static int32_t groups_with_hash(const dedup *c, uint64_t h) {
  if (!c->cap_slots) return -1;
  const slot *s = slot_find(c, h);
  return s->stamp == c->stamp ? s->g : -1;
}

static void group_new(dedup *c, uint64_t h, mil_op *first) {
  if (c->n_groups == c->cap_groups) {
    int32_t cap = c->cap_groups ? c->cap_groups * 2 : 64;
    group *n = realloc(c->groups, (size_t)cap * sizeof *n);
    if (!n) {
      c->oom = true;
      return;
    }
    c->groups = n;
    c->cap_groups = cap;
  }
  if ((size_t)(c->n_groups + 1) * 2 > c->cap_slots && !slots_grow(c)) {
    c->oom = true;
    return;
  }
  int32_t gi = c->n_groups++;
  slot *s = slot_find(c, h);
  c->groups[gi] = (group){h, first, -1, -1, s->stamp == c->stamp ? s->g : -1};
  *s = (slot){h, gi, c->stamp};
}

static void group_add(dedup *c, int32_t gi, mil_op *op) {
  if (c->n_dups == c->cap_dups) {
    int32_t cap = c->cap_dups ? c->cap_dups * 2 : 64;
    dup_ref *n = realloc(c->dups, (size_t)cap * sizeof *n);
    if (!n) {
      c->oom = true;
      return;
    }
    c->dups = n;
    c->cap_dups = cap;
  }
  int32_t di = c->n_dups++;
  c->dups[di] = (dup_ref){op, -1};
  group *g = &c->groups[gi];
  if (g->dup_tail >= 0) c->dups[g->dup_tail].next = di;
  else g->dup_head = di;
  g->dup_tail = di;
}

/* ---------- stage 1: const ops ---------- */

static bool is_scalar_value(const mil_value *v) { return v->type->rank == 0; }

/* A value coremltools holds as a Python str or bool, which
 * should_be_deduplicated always refuses: a string, or a scalar bool written
 * as a Python bool (mil_value.py_bool; a numpy bool from a model file or
 * value inference is an ordinary one-element value). */
static bool python_scalar(const mil_value *v) {
  mil_dtype dt = v->type->dtype;
  return dt == MIL_DT_STRING || (dt == MIL_DT_BOOL && is_scalar_value(v) && v->py_bool);
}

/* coremltools' should_be_deduplicated: not a Python str or bool, and at
 * least `threshold` elements. */
static bool worth_deduplicating(const dedup *c, const mil_value *v) {
  if (!v || v->kind != MIL_VAL_TENSOR || !v->type) return false;
  if (python_scalar(v)) return false;
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
    /* the head bytes, eight at a time */
    unsigned char p[HASH_ELEMS * 16];
    if (n > sizeof p || !mil_value_read(v, 0, n, p)) return h;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
      uint64_t w;
      memcpy(&w, p + i, 8);
      h = mix(h, w);
    }
    if (i < n) {
      uint64_t w = 0;
      memcpy(&w, p + i, n - i);
      h = mix(h, w ^ ((uint64_t)(n - i) << 59));
    }
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
  if (n) {
    unsigned char ha[HASH_ELEMS * 16], hb[HASH_ELEMS * 16];
    return n == head_bytes(b) && n <= sizeof ha && mil_value_read(a, 0, n, ha) && mil_value_read(b, 0, n, hb) &&
           memcmp(ha, hb, n) == 0;
  }
  int64_t k = a->numel < HASH_ELEMS ? a->numel : HASH_ELEMS;
  for (int64_t i = 0; i < k; i++)
    if (mil_value_get_i64(a, i) != mil_value_get_i64(b, i)) return false;
  return true;
}

/* Elements [i0, i1) are within atol of each other, element by element. */
static bool close_range(const mil_value *a, const mil_value *b, int64_t i0, int64_t i1, double atol) {
  for (int64_t i = i0; i < i1; i++) {
    double x = mil_value_get_f64(a, i), y = mil_value_get_f64(b, i);
    if (x == y) continue; /* equal infinities too */
    if (!(fabs(x - y) <= atol)) return false;
  }
  return true;
}

/* Whether n elements of dtype dt at p hold a NaN. */
static bool has_nan(mil_dtype dt, const unsigned char *p, int64_t n) {
  for (int64_t i = 0; i < n; i++) {
    if (dt == MIL_DT_FP32) {
      uint32_t u;
      memcpy(&u, p + 4 * i, 4);
      if ((u & 0x7fffffffu) > 0x7f800000u) return true;
    } else if (dt == MIL_DT_FP64) {
      uint64_t u;
      memcpy(&u, p + 8 * i, 8);
      if ((u & 0x7fffffffffffffffull) > 0x7ff0000000000000ull) return true;
    } else {
      uint16_t u;
      memcpy(&u, p + 2 * i, 2);
      if ((u & 0x7fffu) > (dt == MIL_DT_FP16 ? 0x7c00u : 0x7f80u)) return true;
    }
  }
  return false;
}

/* Whether a and b hold bytes from one place: the same bytes, or the same
 * deferred value. */
static bool same_bytes_source(const mil_value *a, const mil_value *b) {
  if (mil_value_is_deferred(a) || mil_value_is_deferred(b)) return a == b;
  return mil_value_data(a) == mil_value_data(b);
}

/* Bytes [off, off + len) of v: in place, or computed into buf (len <= its
 * size) for a deferred value; NULL when they cannot be had. */
static const unsigned char *span_bytes(const mil_value *v, size_t off, size_t len, unsigned char *buf) {
  if (!mil_value_is_deferred(v)) {
    const unsigned char *p = mil_value_data(v);
    return p ? p + off : NULL;
  }
  return mil_value_read(v, off, len, buf) ? buf : NULL;
}

/* numpy.allclose(a, b, rtol=0, atol=atol). Spans whose bytes are equal are
 * settled without converting them: equal unless they hold a NaN. */
static bool all_close(const mil_value *a, const mil_value *b) {
  mil_dtype dt = a->type->dtype;
  double atol = dt == MIL_DT_FP16 ? 6e-8 : 1e-12;
  if (a->nbytes == b->nbytes && same_bytes_source(a, b)) return true;
  bool is_float = dt == MIL_DT_FP16 || dt == MIL_DT_FP32 || dt == MIL_DT_FP64 || dt == MIL_DT_BF16;
  bool plain = is_float || dt == MIL_DT_BOOL || (mil_dtype_is_int(dt) && !mil_dtype_is_subbyte(dt));
  size_t es = mil_dtype_size(dt);
  if (!plain || b->type->dtype != dt || es == 0 || a->nbytes < (size_t)a->numel * es ||
      b->nbytes < (size_t)a->numel * es)
    return close_range(a, b, 0, a->numel, atol);
  enum { SPAN = 4096 };
  static _Thread_local unsigned char ba[SPAN * 8], bb[SPAN * 8];
  bool ok = true;
  for (int64_t i = 0; i < a->numel && ok; i += SPAN) {
    int64_t k = a->numel - i < SPAN ? a->numel - i : SPAN;
    size_t off = (size_t)i * es, len = (size_t)k * es;
    /* a deferred weight is computed a span at a time, not whole */
    const unsigned char *pa = span_bytes(a, off, len, ba), *pb = span_bytes(b, off, len, bb);
    if (!pa || !pb) ok = close_range(a, b, i, i + k, atol);
    else if (memcmp(pa, pb, len) == 0) ok = !(is_float && has_nan(dt, pa, k));
    else ok = close_range(a, b, i, i + k, atol);
  }
  mil_value_release_pages(a); /* weights read through a file mapping need not stay resident (small ones stay) */
  mil_value_release_pages(b);
  return ok;
}

/* Whether const op takes part in stage 1. */
static bool const_candidate(const dedup *c, const mil_op *op) {
  if (op->n_outputs != 1) return false;
  const mil_var *v = op->outputs[0];
  if (v->type && v->type->kind == MIL_TYPE_LIST) return false;
  return worth_deduplicating(c, v->val);
}

static uint64_t shape_key(const mil_value *v) {
  uint64_t h = mix(0x2545f491ULL, (uint64_t)v->type->dtype);
  h = mix(h, (uint64_t)v->type->rank);
  for (int32_t i = 0; i < v->type->rank; i++) h = mix(h, (uint64_t)v->type->dims[i].size);
  return h | 1; /* never 0, the empty slot */
}

/* Marks in lone[i] the consts whose dtype and shape no other candidate has
 * (by a hash of them): such a const neither finds nor becomes an earlier
 * equal one, so its bytes need not be read. false on out of memory. */
static bool find_lone(dedup *c, mil_op *const *ops, int32_t n, bool *lone) {
  size_t cap = 16;
  while (cap < (size_t)n * 2) cap *= 2;
  uint64_t *keys = malloc((size_t)n * sizeof *keys);
  uint64_t *slot_key = calloc(cap, sizeof *slot_key);
  int32_t *slot_n = calloc(cap, sizeof *slot_n);
  if (!keys || !slot_key || !slot_n) {
    free(keys);
    free(slot_key);
    free(slot_n);
    c->oom = true;
    return false;
  }
  for (int32_t pass = 0; pass < 2; pass++)
    for (int32_t i = 0; i < n; i++) {
      if (pass == 0) keys[i] = shape_key(ops[i]->outputs[0]->val);
      size_t j = slot_of(keys[i], cap);
      while (slot_key[j] && slot_key[j] != keys[i]) j = (j + 1) & (cap - 1);
      if (pass == 0) {
        slot_key[j] = keys[i];
        slot_n[j]++;
      } else {
        lone[i] = slot_n[j] < 2;
      }
    }
  free(keys);
  free(slot_key);
  free(slot_n);
  return true;
}

/* Groups the candidate consts ops[0..n), in block order. */
static void find_consts(dedup *c, mil_op *const *ops, int32_t n) {
  bool *lone = malloc((size_t)n * sizeof *lone);
  if (!lone || !find_lone(c, ops, n, lone)) {
    free(lone);
    c->oom = true;
    return;
  }
  for (int32_t i = 0; i < n && !c->oom; i++) {
    if (lone[i]) continue;
    mil_op *op = ops[i];
    const mil_value *val = op->outputs[0]->val;
    uint64_t h = const_key(val);
    /* the first elements of a weight read through a file mapping: counted,
     * so that reading those of thousands of weights does not keep them all
     * mapped (a deferred value's reads count themselves) */
    if (!mil_value_is_deferred(val)) mil_program_release_value_pages(op->program, val, 0, head_bytes(val));
    int32_t hit = -1;
    for (int32_t g = groups_with_hash(c, h); g >= 0 && hit < 0; g = c->groups[g].next_same_hash) {
      const mil_value *gv = c->groups[g].first->outputs[0]->val;
      if (same_key(gv, val) && all_close(val, gv)) hit = g;
    }
    if (hit >= 0) group_add(c, hit, op);
    else group_new(c, h, op);
  }
  free(lone);
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
  bool by_value = val && val->kind == MIL_VAL_TENSOR && val->type && (python_scalar(val) || val->numel < c->threshold);
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

static bool is_constexpr_type(const char *t) {
  return t[0] == 'c' && t[1] == 'o' && t[2] == 'n' && t[3] == 's' && strncmp(t, "constexpr_", 10) == 0;
}

/* Groups the constexpr ops ops[0..n), in block order. */
static void find_constexprs(dedup *c, mil_op *const *ops, int32_t n) {
  for (int32_t i = 0; i < n && !c->oom; i++) {
    mil_op *op = ops[i];
    uint64_t h = constexpr_key(c, op);
    int32_t hit = -1;
    for (int32_t g = groups_with_hash(c, h); g >= 0 && hit < 0; g = c->groups[g].next_same_hash)
      if (same_constexpr(c, c->groups[g].first, op)) hit = g;
    if (hit >= 0) group_add(c, hit, op);
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
  for (int32_t gi = 0; gi < c->n_groups; gi++) {
    const group *g = &c->groups[gi];
    mil_var *unique = g->first->outputs[0];
    for (int32_t di = g->dup_head; di >= 0; di = c->dups[di].next) {
      mil_op *op = c->dups[di].op;
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
  /* one walk: nested blocks first (what they change stays inside them), and
   * the candidates of both stages */
  int32_t base_k = c->n_consts, base_x = c->n_constexprs;
  for (mil_op *op = b->first; op && !c->oom; op = op->next) {
    for (int32_t i = 0; i < op->n_blocks; i++) {
      mil_status st = dedup_block(c, op->blocks[i], depth + 1);
      if (st != MIL_OK) return st;
    }
    if (mil_op_is_const(op)) {
      if (const_candidate(c, op)) push_op(c, &c->consts, &c->n_consts, &c->cap_consts, op);
    } else if (op->n_outputs >= 1 && is_constexpr_type(op->type)) {
      push_op(c, &c->constexprs, &c->n_constexprs, &c->cap_constexprs, op);
    }
  }
  mil_status st = MIL_OK;
  if (!c->oom && c->n_consts - base_k >= 2) {
    find_consts(c, c->consts + base_k, c->n_consts - base_k);
    st = c->oom ? MIL_ERR_NOMEM : remove_duplicates(c, b);
  }
  /* after stage 1 equal large consts are one var, so constexpr inputs can
   * be compared by identity (stage 1 removes no constexpr op) */
  if (st == MIL_OK && !c->oom && c->n_constexprs - base_x >= 2) {
    find_constexprs(c, c->constexprs + base_x, c->n_constexprs - base_x);
    st = c->oom ? MIL_ERR_NOMEM : remove_duplicates(c, b);
  }
  c->n_consts = base_k;
  c->n_constexprs = base_x;
  if (st == MIL_OK && c->oom) st = MIL_ERR_NOMEM;
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
  groups_free(&c);
  if (stats) stats->changes += c.changes;
  return st;
}

const mil_pass_def pass_def_const_deduplication = {"common::const_deduplication",
                                                   "share one const (or constexpr) among equal ones", k_opts, 1, run, NULL};
