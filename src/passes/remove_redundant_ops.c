/* common::remove_redundant_ops — remove ops that compute exactly what an
 * earlier op computes.
 *
 *   main(%x: (2, 4, fp32)(Tensor)) {
 *     block0() {
 *       %a: (fp32)*(Scalar) = const(val=4.5, name="a")
 *       %b: (fp32)*(Scalar) = const(val=4.5, name="b")
 *       %m1: (2, 4, fp32)(Tensor) = mul(x=%x, y=%a, name="m1")
 *       %m2: (2, 4, fp32)(Tensor) = mul(x=%x, y=%b, name="m2")
 *       %s: (2, 4, fp32)(Tensor) = add(x=%m1, y=%m2, name="s")
 *     } -> (%s)
 *   }
 *
 * becomes
 *
 *   main(%x: (2, 4, fp32)(Tensor)) {
 *     block0() {
 *       %a: (fp32)*(Scalar) = const(val=4.5, name="a")
 *       %b: (fp32)*(Scalar) = const(val=4.5, name="b")
 *       %m1: (2, 4, fp32)(Tensor) = mul(x=%x, y=%a, name="m1")
 *       %s: (2, 4, fp32)(Tensor) = add(x=%m1, y=%m1, name="s")
 *     } -> (%s)
 *   }
 *
 * For each block input and each non-const op's first output consumed more
 * than once, the consuming ops are grouped by type; a group whose ops are
 * not all in one block is skipped, and ops with nested blocks or of a
 * random_* type never take part. Two ops of a group are identical when they
 * bind the same input names to, input by input, the same var, or two vars
 * with values of the same dtype and shape that are equal element by element
 * (tensors of 100 elements or more only as the same var). A later identical
 * single-output op that is not an output of its block is replaced by the
 * earliest one (when coremltools' nonreplaceable-var rule allows it) and
 * removed. The function body is swept until nothing changes; nested blocks
 * likewise. Signatures are hashed, so each sweep is linear.
 *
 * Mirrors coremltools/converters/mil/mil/passes/defs/cleanup/
 * remove_redundant_ops.py.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "passes/pass_internal.h"

#define SMALL_VALUE 100

/* Reading ahead in the walk: op records lie in list order in memory
 * (mil_program_compact_ops), so the record PASS_WALK_AHEAD ops on is most likely
 * PASS_WALK_AHEAD records further. Asking for it early keeps the walk from waiting
 * on memory at every op (a prefetch of an address that holds no op is
 * harmless). */

/* mil_fp16_to_fp32 of a bit pattern, inline. */
static float half_to_float(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000) << 16, exp = (h >> 10) & 0x1f, man = h & 0x3ff, bits;
  float f;
  if (exp == 0) {
    f = (float)man * 0x1p-24f; /* exact */
    return sign ? -f : f;
  }
  bits = sign | (exp == 0x1f ? 0x7f800000u : (exp + 112) << 23) | (man << 13);
  memcpy(&f, &bits, sizeof f);
  return f;
}

/* The fp16 bit patterns of v, when they are at hand (not for a deferred
 * value, whose elements are computed one by one rather than kept). */
static const uint16_t *fp16_bits(const mil_value *v) {
  if (v->type->dtype != MIL_DT_FP16 || mil_value_is_deferred(v)) return NULL;
  return mil_value_data(v);
}

typedef struct rro {
  mil_program *p;
  pass_nonrep *nr; /* built before the first replacement */
  int64_t changes;
  mil_diag *d;
  bool oom;
  /* scratch, reused across vars */
  mil_op **kids;
  int32_t cap_kids;
} rro;

/* ---------- identical inputs ---------- */

/* The value an argument is compared by (NULL: compare the var itself). */
static const mil_value *arg_value(const mil_arg *a) {
  const mil_value *v = a->value ? a->value : a->use.var ? a->use.var->val : NULL;
  if (!v || v->kind != MIL_VAL_TENSOR || !v->type) return NULL;
  /* large arrays are deduplicated by const_deduplication: identity only */
  if (v->type->rank > 0 && v->numel >= SMALL_VALUE) return NULL;
  return v;
}

static bool value_has_nan(const mil_value *v) {
  if (!mil_dtype_is_float(v->type->dtype)) return false;
  if (v->type->dtype == MIL_DT_FP32) {
    const float *f = mil_value_data(v);
    for (int64_t i = 0; i < v->numel; i++)
      if (isnan(f[i])) return true;
    return false;
  }
  const uint16_t *h = fp16_bits(v);
  if (h) {
    for (int64_t i = 0; i < v->numel; i++)
      if ((h[i] & 0x7c00) == 0x7c00 && (h[i] & 0x3ff)) return true;
    return false;
  }
  for (int64_t i = 0; i < v->numel; i++)
    if (isnan(mil_value_get_f64(v, i))) return true;
  return false;
}

/* numpy.array_equal on values of the same dtype. */
static bool values_equal(const mil_value *a, const mil_value *b) {
  if (a->type->dtype != b->type->dtype || a->type->rank != b->type->rank || a->numel != b->numel) return false;
  for (int32_t i = 0; i < a->type->rank; i++)
    if (a->type->dims[i].size != b->type->dims[i].size) return false;
  if (a->type->dtype == MIL_DT_STRING) {
    for (int64_t i = 0; i < a->numel; i++)
      if (strcmp(mil_value_get_str(a, i), mil_value_get_str(b, i)) != 0) return false;
    return true;
  }
  if (mil_dtype_is_complex(a->type->dtype)) return mil_value_equal(a, b);
  if (mil_dtype_is_float(a->type->dtype)) {
    for (int64_t i = 0; i < a->numel; i++)
      if (!(mil_value_get_f64(a, i) == mil_value_get_f64(b, i))) return false;
    return true;
  }
  for (int64_t i = 0; i < a->numel; i++)
    if (mil_value_get_i64(a, i) != mil_value_get_i64(b, i)) return false;
  return true;
}

static bool args_identical(const mil_arg *x, const mil_arg *y) {
  if (x->use.var && x->use.var == y->use.var) return true;
  const mil_value *vx = x->value ? x->value : x->use.var ? x->use.var->val : NULL;
  const mil_value *vy = y->value ? y->value : y->use.var ? y->use.var->val : NULL;
  if (!vx || !vy) return false;
  const mil_value *sx = arg_value(x), *sy = arg_value(y);
  if (!sx || !sy) return false;
  return values_equal(sx, sy);
}

static bool ops_identical(const mil_op *a, const mil_op *b) {
  if (a == b) return true;
  if (a->type != b->type || a->n_inputs != b->n_inputs) return false;
  for (int32_t i = 0; i < a->n_inputs; i++) {
    const mil_input *ia = &a->inputs[i], *ib = mil_op_find_input(b, ia->name);
    if (!ib || ia->is_tuple != ib->is_tuple || ia->n_args != ib->n_args) return false;
    for (int32_t k = 0; k < ia->n_args; k++)
      if (!args_identical(&ia->args[k], &ib->args[k])) return false;
  }
  return true;
}

static uint64_t mix(uint64_t h, uint64_t x) {
  h ^= x + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
  return h * 0xff51afd7ed558ccdULL;
}

/* The float element as the signature takes it (-0.0 as 0.0). */
static uint64_t float_bits(double d) {
  if (d == 0) d = 0; /* -0.0 equals 0.0 */
  uint64_t x;
  memcpy(&x, &d, sizeof x);
  return x;
}

/* Mixes the elements of v into h: a string's length, 0 for complex, a
 * float's bits, an integer's value. */
static uint64_t mix_elements(uint64_t h, const mil_value *v) {
  mil_dtype dt = v->type->dtype;
  int64_t n = v->numel;
  if (dt == MIL_DT_FP32) {
    const float *f = mil_value_data(v);
    for (int64_t e = 0; e < n; e++) h = mix(h, float_bits(f[e]));
  } else if (dt == MIL_DT_INT32) {
    const int32_t *q = mil_value_data(v);
    for (int64_t e = 0; e < n; e++) h = mix(h, (uint64_t)(int64_t)q[e]);
  } else if (dt == MIL_DT_STRING) {
    for (int64_t e = 0; e < n; e++) h = mix(h, (uint64_t)strlen(mil_value_get_str(v, e)));
  } else if (mil_dtype_is_complex(dt)) {
    for (int64_t e = 0; e < n; e++) h = mix(h, 0);
  } else if (dt == MIL_DT_FP16 && fp16_bits(v)) {
    const uint16_t *b = fp16_bits(v);
    for (int64_t e = 0; e < n; e++) h = mix(h, float_bits(half_to_float(b[e])));
  } else if (mil_dtype_is_float(dt)) {
    for (int64_t e = 0; e < n; e++) h = mix(h, float_bits(mil_value_get_f64(v, e)));
  } else {
    for (int64_t e = 0; e < n; e++) h = mix(h, (uint64_t)mil_value_get_i64(v, e));
  }
  return h;
}

/* A hash consistent with ops_identical (input order does not matter). */
static uint64_t op_signature(const mil_op *op) {
  uint64_t sum = 0;
  for (int32_t i = 0; i < op->n_inputs; i++) {
    const mil_input *in = &op->inputs[i];
    uint64_t h = mix((uint64_t)(uintptr_t)in->name, (uint64_t)in->n_args);
    for (int32_t k = 0; k < in->n_args; k++) {
      const mil_value *v = arg_value(&in->args[k]);
      if (v && !value_has_nan(v)) {
        h = mix(h, (uint64_t)v->type->dtype);
        h = mix(h, (uint64_t)v->numel);
        h = mix_elements(h, v);
      } else {
        h = mix(h, (uint64_t)(uintptr_t)in->args[k].use.var ^ (uint64_t)(uintptr_t)in->args[k].value);
      }
    }
    sum += h;
  }
  return mix((uint64_t)(uintptr_t)op->type, sum);
}

/* ---------- removing identical children ---------- */

static bool is_output_of(const mil_var *v, const mil_block *b) {
  for (const mil_use *u = v->uses; u; u = u->next_use)
    if (!u->op && u->block == b) return true;
  return false;
}

static bool eligible(const mil_op *op) {
  const char *t = op->type;
  return op->n_blocks == 0 && !(t[0] == 'r' && strncmp(t, "random", 6) == 0);
}

static int cmp_order(const void *pa, const void *pb) {
  const mil_op *a = *(mil_op *const *)pa, *b = *(mil_op *const *)pb;
  if (a == b) return 0;
  return mil_op_is_before(a, b) ? -1 : 1;
}

typedef struct cand {
  mil_op *op;
  uint64_t sig;
} cand;

/* Settles op, the next member of the class of identical ops being walked:
 * it is replaced by the first survivor of the class that may replace it and
 * removed, or becomes a survivor. Returns 1 when op was removed, 0, or
 * -(status). */
static int settle(rro *c, mil_op *op, mil_op **survivors, int32_t *n_surv) {
  if (op->n_outputs != 1) return 0;
  if (*n_surv > 0 && !is_output_of(op->outputs[0], op->block)) {
    for (int32_t s = 0; s < *n_surv; s++) {
      mil_var *keep = survivors[s]->outputs[0];
      /* nothing has changed before the first query: the tracking built
       * here describes the program as the pass found it */
      if (!c->nr && !(c->nr = pass_nonrep_new(c->p))) {
        c->oom = true;
        return -(int)MIL_ERR_NOMEM;
      }
      if (!pass_nonrep_can_replace(c->nr, op->outputs[0], keep)) continue;
      if (!pass_replace_uses_after(op, op->outputs[0], keep)) continue;
      if (mil_op_remove(op) != MIL_OK) {
        mil_diag_error(c->d, MIL_ERR_INVALID, "remove_redundant_ops: op '%s' (%s) still used after replacement",
                       op->name, op->type);
        return -(int)MIL_ERR_INVALID;
      }
      c->changes++;
      return 1;
    }
  }
  survivors[(*n_surv)++] = op;
  return 0;
}

#define FEW_OPS 16

/* remove_identical for at most FEW_OPS ops, with the chains found by
 * comparing signatures directly. (The signatures are those of the ops as
 * the call starts: replacements made while walking the classes can make
 * ops of different chains identical, and they stay apart.) */
static int remove_identical_few(rro *c, mil_op **ops, int32_t n) {
  /* nothing changes unless two of the ops are identical as the call
   * starts (no signature is needed to see that none is) */
  bool pair = false;
  for (int32_t i = 1; i < n && !pair; i++)
    for (int32_t j = 0; j < i && !pair; j++) pair = ops_identical(ops[j], ops[i]);
  if (!pair) return 0;
  bool done[FEW_OPS] = {false};
  mil_op *survivors[FEW_OPS];
  uint64_t key[FEW_OPS];
  for (int32_t i = 0; i < n; i++) key[i] = op_signature(ops[i]) | 1;
  int changed = 0;
  for (int32_t start = 0; start < n; start++) {
    if (done[start]) continue;
    int32_t n_surv = 0;
    for (int32_t i = start; i < n; i++) {
      if (done[i] || key[i] != key[start] || !ops_identical(ops[start], ops[i])) continue;
      done[i] = true;
      int r = settle(c, ops[i], survivors, &n_surv);
      if (r < 0) return r;
      if (r > 0) changed = 1;
    }
  }
  return changed;
}

/* Removes the later identical ops of a list of distinct eligible ops of one
 * type in one block, in block order. Returns 1 when something was removed,
 * 0, or -(status). Ops whose signatures (as the call starts) are equal
 * are chained, and a class is the later ops of the chain identical to its
 * first one. */
static int remove_identical(rro *c, mil_op **ops, int32_t n) {
  if (n <= FEW_OPS) return remove_identical_few(c, ops, n);
  cand *cs = malloc((size_t)n * sizeof *cs);
  mil_op **survivors = malloc((size_t)n * sizeof *survivors);
  pass_ptrmap first_of = {0}; /* signature -> index of its first candidate + 1 */
  int32_t *next_same = malloc((size_t)n * sizeof *next_same);
  if (!cs || !survivors || !next_same) {
    free(cs);
    free(survivors);
    free(next_same);
    c->oom = true;
    return -(int)MIL_ERR_NOMEM;
  }
  for (int32_t i = 0; i < n; i++) {
    cs[i].op = ops[i];
    cs[i].sig = op_signature(ops[i]);
    next_same[i] = -1;
  }
  int changed = 0;
  /* chain candidates with the same signature: last_of maps sig -> last index */
  pass_ptrmap last_of = {0};
  for (int32_t i = 0; i < n && !c->oom; i++) {
    void *key = (void *)(uintptr_t)(cs[i].sig | 1);
    intptr_t last = (intptr_t)pass_ptrmap_get(&last_of, key);
    if (last) next_same[last - 1] = i;
    else if (!pass_ptrmap_put(&first_of, key, (void *)(intptr_t)(i + 1))) c->oom = true;
    if (!pass_ptrmap_put(&last_of, key, (void *)(intptr_t)(i + 1))) c->oom = true;
  }
  pass_ptrmap_free(&last_of);
  /* each chain holds whole equivalence classes of ops_identical (plus hash
   * collisions), in block order; walk each chain once */
  bool *done = calloc((size_t)n, sizeof *done);
  if (!done) c->oom = true;
  for (int32_t start = 0; start < n && !c->oom && changed >= 0; start++) {
    if (done[start]) continue;
    /* the class of cs[start]: every later chain member identical to it */
    int32_t n_surv = 0;
    for (int32_t i = start; i >= 0; i = next_same[i]) {
      if (done[i] || !ops_identical(cs[start].op, cs[i].op)) continue;
      done[i] = true;
      int r = settle(c, cs[i].op, survivors, &n_surv);
      if (r < 0) {
        changed = r;
        break;
      }
      if (r > 0) changed = 1;
    }
  }
  free(done);
  pass_ptrmap_free(&first_of);
  free(cs);
  free(survivors);
  free(next_same);
  if (c->oom) return -(int)MIL_ERR_NOMEM;
  return changed;
}

/* The eligible consumers among kids[i..n) of kids[i]'s type, each op once
 * (seen when given, else by scanning the group), joined when identical;
 * all of them must lie in one block. 1 when something changed, 0, or
 * -(status). */
static int join_type(rro *c, mil_op **kids, int32_t n, int32_t i, mil_op **group, pass_ptrset *seen) {
  const char *type = kids[i]->type;
  int32_t m = 0;
  bool one_block = true;
  const mil_block *blk = kids[i]->block;
  for (int32_t j = i; j < n; j++) {
    mil_op *op = kids[j];
    if (op->type != type) continue;
    if (op->block != blk) one_block = false;
    if (!eligible(op)) continue;
    bool dup = false;
    if (seen) {
      int ins = pass_ptrset_insert(seen, op);
      if (ins < 0) c->oom = true;
      dup = ins == 0;
    } else {
      for (int32_t k = 0; k < m && !dup; k++) dup = group[k] == op;
    }
    if (!dup) group[m++] = op;
  }
  if (!one_block || m < 2 || c->oom) return 0;
  qsort(group, (size_t)m, sizeof *group, cmp_order);
  int r = remove_identical(c, group, m);
  return r < 0 ? r : r > 0;
}

/* transform_var for n <= FEW_OPS consumers kids (in use order): the same
 * grouping by type, with direct comparisons instead of hashing. */
static int transform_few(rro *c, mil_op **kids, int32_t n) {
  /* most vars feed ops of different types: nothing to do */
  bool pair = false;
  for (int32_t i = 1; i < n && !pair; i++)
    for (int32_t j = 0; j < i && !pair; j++) pair = kids[i]->type == kids[j]->type;
  if (!pair) return 0;
  int changed = 0;
  mil_op *group[FEW_OPS];
  for (int32_t i = 0; i < n && changed >= 0; i++) {
    const char *type = kids[i]->type;
    bool seen_type = false, again = false;
    for (int32_t j = 0; j < i && !seen_type; j++) seen_type = kids[j]->type == type;
    for (int32_t j = i + 1; j < n && !again; j++) again = kids[j]->type == type;
    if (seen_type || !again) continue;
    int r = join_type(c, kids, n, i, group, NULL);
    if (r < 0) changed = r;
    else if (r > 0) changed = 1;
  }
  return changed;
}

/* coremltools' _try_to_transform on var v. */
static int transform_var(rro *c, mil_var *v) {
  if (v->n_uses < 2) return 0; /* (block outputs count there too) */
  int32_t n = 0;
  for (const mil_use *u = v->uses; u; u = u->next_use)
    if (u->op) n++;
  if (n < 2) return 0;
  if (n > c->cap_kids) {
    mil_op **k = realloc(c->kids, (size_t)n * 2 * sizeof *k);
    if (!k) {
      c->oom = true;
      return -(int)MIL_ERR_NOMEM;
    }
    c->kids = k;
    c->cap_kids = n * 2;
  }
  mil_op **kids = c->kids;
  n = 0;
  for (const mil_use *u = v->uses; u; u = u->next_use)
    if (u->op) kids[n++] = u->op;
  if (n <= FEW_OPS) return transform_few(c, kids, n);
  /* group by type: a stable pass over kids per distinct type, using aux to
   * mark ops already taken (aux is reset below) */
  int changed = 0;
  mil_op **group = malloc((size_t)n * sizeof *group);
  if (!group) {
    c->oom = true;
    return -(int)MIL_ERR_NOMEM;
  }
  pass_ptrmap type_count = {0};
  for (int32_t i = 0; i < n; i++) {
    void *key = (void *)kids[i]->type;
    intptr_t k = (intptr_t)pass_ptrmap_get(&type_count, key);
    if (!pass_ptrmap_put(&type_count, key, (void *)(k + 1))) c->oom = true;
  }
  pass_ptrset seen = {0};
  pass_ptrset types_done = {0};
  for (int32_t i = 0; i < n && !c->oom && changed >= 0; i++) {
    const char *type = kids[i]->type;
    if (pass_ptrset_has(&types_done, type)) continue;
    if (!pass_ptrset_add(&types_done, type)) {
      c->oom = true;
      break;
    }
    if ((intptr_t)pass_ptrmap_get(&type_count, type) < 2) continue;
    int r = join_type(c, kids, n, i, group, &seen);
    if (r < 0) changed = r;
    else if (r > 0) changed = 1;
  }
  pass_ptrset_free(&seen);
  pass_ptrset_free(&types_done);
  pass_ptrmap_free(&type_count);
  free(group);
  if (c->oom) return -(int)MIL_ERR_NOMEM;
  return changed;
}

/* One sweep over b; returns whether it changed, or -(status). */
static int sweep(rro *c, mil_block *b, int depth) {
  if (depth > PASS_MAX_DEPTH) {
    mil_diag_error(c->d, MIL_ERR_UNSUPPORTED, "remove_redundant_ops: blocks nested deeper than %d levels",
                   PASS_MAX_DEPTH);
    return -(int)MIL_ERR_UNSUPPORTED;
  }
  mil_var *const *inputs = b->inputs;
  int32_t n_inputs = b->n_inputs;
  if (!b->parent && b->func) {
    inputs = b->func->inputs;
    n_inputs = b->func->n_inputs;
  }
  for (int32_t i = 0; i < n_inputs; i++) {
    int r = transform_var(c, inputs[i]);
    if (r < 0) return r;
  }
  /* the ops removed below always come after the visited op, which stays:
   * its successor is read once it is done */
  int changed = 0;
  mil_op *next;
  for (mil_op *op = b->first; op && changed >= 0; op = next) {
    next = op->next;
    PASS_WALK_PREFETCH(op);
    if (mil_op_is_const(op)) continue;
    for (int32_t k = 0; k < op->n_blocks && changed >= 0; k++) {
      int r;
      while ((r = sweep(c, op->blocks[k], depth + 1)) > 0) {
      }
      if (r < 0) changed = r;
    }
    if (changed < 0 || op->n_outputs < 1) continue;
    int r = transform_var(c, op->outputs[0]);
    if (r < 0) changed = r;
    else if (r > 0) changed = 1;
    next = op->next;
  }
  return changed;
}

static mil_status run(mil_program *p, const mil_pass_options *o, mil_pass_stats *stats, mil_diag *d) {
  mil_status st = pass_infer_marked_values(p, d);
  if (st != MIL_OK) return st;
  rro c;
  memset(&c, 0, sizeof c);
  c.d = d;
  c.p = p;
  for (int32_t fi = 0; fi < p->n_functions && st == MIL_OK; fi++) {
    mil_function *f = p->functions[fi];
    for (int32_t s = 0; s < f->n_specs && st == MIL_OK; s++) {
      int r;
      while ((r = sweep(&c, f->specs[s].block, 0)) > 0) {
      }
      if (r < 0) st = (mil_status)(-r);
    }
  }
  if (st == MIL_ERR_NOMEM) mil_diag_error(d, MIL_ERR_NOMEM, "remove_redundant_ops: out of memory");
  pass_nonrep_free(c.nr);
  free(c.kids);
  if (stats) stats->changes += c.changes;
  return st;
}

const mil_pass_def pass_def_remove_redundant_ops = {
    "common::remove_redundant_ops", "remove ops that compute the same thing as an earlier op", NULL, 0, run, NULL};
