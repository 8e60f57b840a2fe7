/* common::noop_elimination — remove ops that return their input unchanged.
 *
 *   main(%x: (1, 96, 128, fp32)(Tensor)) {
 *     block0() {
 *       %s: (3,int32)*(Tensor) = const(val=[1, 96, 128], name="s")
 *       %r: (1, 96, 128, fp32)(Tensor) = reshape(x=%x, shape=%s, name="r")
 *       %z: (fp32)*(Scalar) = const(val=0.0, name="z")
 *       %a: (1, 96, 128, fp32)(Tensor) = add(x=%r, y=%z, name="a")
 *       %o: (1, 96, 128, fp32)(Tensor) = relu(x=%a, name="o")
 *     } -> (%o)
 *   }
 *
 * becomes
 *
 *   main(%x: (1, 96, 128, fp32)(Tensor)) {
 *     block0() {
 *       %s: (3,int32)*(Tensor) = const(val=[1, 96, 128], name="s")
 *       %z: (fp32)*(Scalar) = const(val=0.0, name="z")
 *       %o: (1, 96, 128, fp32)(Tensor) = relu(x=%x, name="o")
 *     } -> (%o)
 *   }
 *
 * Candidates (single-output ops whose output is not an output of their own
 * block; ops with nested blocks are never candidates):
 *   identity                                   always
 *   add (x or y all 0), mul (x or y all 1),     the kept operand has the
 *   sub (y all 0), real_div / pow (y all 1),    output's exact type (no
 *   floor_div (y all 1, integer x only)         broadcasting); x is tried first
 *   reshape, split, slice_by_size, pad, tile,   input type == output type
 *   upsample_*, resize_bilinear, crop
 *   slice_by_index                              same, and no negative stride
 *   transpose                                   perm is increasing
 *   linear_activation                           alpha == 1, beta == 0
 * An operand is "all v" when its value is known and every element equals v,
 * or it is produced by fill with value v. The removal happens only when the
 * output can be replaced by the input (coremltools' nonreplaceable-var rule
 * for constexpr outputs). Each block is swept until nothing changes.
 *
 * The values of marked vars are inferred first (pass_infer_marked_values).
 * One walk then lists the candidates of each function body; the sweeps of
 * a body without nested blocks visit only those.
 *
 * Mirrors coremltools/converters/mil/mil/passes/defs/cleanup/
 * noop_elimination.py.
 */
#include <stdlib.h>
#include <string.h>

#include "passes/pass_internal.h"

/* Reading ahead in the walk: op records lie in list order in memory
 * (mil_program_compact_ops), so the record PASS_WALK_AHEAD ops on is most likely
 * PASS_WALK_AHEAD records further. Asking for it early keeps the walk from waiting
 * on memory at every op (a prefetch of an address that holds no op is
 * harmless). */

/* The op types this pass looks at. */
typedef enum kind {
  K_NONE,
  K_SAME_SHAPE, /* reshape, split, slice_by_size, pad, tile, upsample_*, resize_bilinear, crop */
  K_IDENTITY,
  K_ADD,
  K_MUL,
  K_POW_DIV, /* pow, real_div */
  K_FLOOR_DIV,
  K_SUB,
  K_SLICE_BY_INDEX,
  K_TRANSPOSE,
  K_LINEAR_ACTIVATION,
} kind;

static const struct {
  const char *type;
  kind k;
} k_kinds[] = {
    {"reshape", K_SAME_SHAPE},
    {"split", K_SAME_SHAPE},
    {"slice_by_size", K_SAME_SHAPE},
    {"pad", K_SAME_SHAPE},
    {"tile", K_SAME_SHAPE},
    {"upsample_nearest_neighbor", K_SAME_SHAPE},
    {"upsample_bilinear", K_SAME_SHAPE},
    {"resize_bilinear", K_SAME_SHAPE},
    {"crop", K_SAME_SHAPE},
    {"identity", K_IDENTITY},
    {"add", K_ADD},
    {"mul", K_MUL},
    {"pow", K_POW_DIV},
    {"real_div", K_POW_DIV},
    {"floor_div", K_FLOOR_DIV},
    {"sub", K_SUB},
    {"slice_by_index", K_SLICE_BY_INDEX},
    {"transpose", K_TRANSPOSE},
    {"linear_activation", K_LINEAR_ACTIVATION},
};

#define N_KINDS ((int)(sizeof k_kinds / sizeof k_kinds[0]))
#define KIND_SLOTS 64 /* a power of two, well above N_KINDS */

typedef struct noop {
  mil_program *p;
  pass_nonrep *nr; /* built on first need */
  int64_t changes;
  mil_diag *d;
  /* interned op type -> kind, open addressing on the pointer (the types
   * the program has never interned are left out: no op has them) */
  const char *slot_type[KIND_SLOTS];
  kind slot_kind[KIND_SLOTS];
  const char *fill;       /* interned "fill", or NULL */
  const char *in_x, *in_y; /* interned input names "x" and "y", or NULL */
} noop;

static size_t kind_slot(const char *t) {
  uintptr_t h = (uintptr_t)t;
  h ^= h >> 17;
  h *= (uintptr_t)0x9e3779b97f4a7c15ull;
  return (size_t)(h >> 11) & (KIND_SLOTS - 1);
}

static void kinds_init(noop *c) {
  for (int i = 0; i < N_KINDS; i++) {
    const char *t = mil_program_find_string(c->p, k_kinds[i].type, (size_t)-1);
    if (!t) continue;
    size_t j = kind_slot(t);
    while (c->slot_type[j]) j = (j + 1) & (KIND_SLOTS - 1);
    c->slot_type[j] = t;
    c->slot_kind[j] = k_kinds[i].k;
  }
  c->fill = mil_program_find_string(c->p, "fill", (size_t)-1);
  c->in_x = mil_program_find_string(c->p, "x", (size_t)-1);
  c->in_y = mil_program_find_string(c->p, "y", (size_t)-1);
}

/* mil_op_input_var with an interned input name (input names are interned,
 * so the first input of that name is the first one with this pointer). */
static mil_var *input_var(const mil_op *op, const char *iname) {
  for (int32_t i = 0; iname && i < op->n_inputs; i++)
    if (op->inputs[i].name == iname) return op->inputs[i].n_args > 0 ? op->inputs[i].args[0].use.var : NULL;
  return NULL;
}

static kind kind_of(const noop *c, const char *t) {
  for (size_t j = kind_slot(t); c->slot_type[j]; j = (j + 1) & (KIND_SLOTS - 1))
    if (c->slot_type[j] == t) return c->slot_kind[j];
  return K_NONE;
}

static bool is_output_of(const mil_var *v, const mil_block *b) {
  for (const mil_use *u = v->uses; u; u = u->next_use)
    if (!u->op && u->block == b) return true;
  return false;
}

/* coremltools' has_all_elements_equal_to. */
static bool all_equal(const noop *c, const mil_var *v, double x) {
  if (!v) return false;
  if (v->val) {
    bool eq = pass_value_all_equal(v->val, x);
    /* counted as a read of a weight-file mapping: the first elements of
     * thousands of weights, each mapping a whole page-cache folio */
    if (v->op) mil_program_release_value_pages(v->op->program, v->val, 0, 0);
    return eq;
  }
  if (v->op && c->fill && v->op->type == c->fill) {
    const mil_value *fv = pass_input_value(v->op, "value");
    if (!fv || fv->kind != MIL_VAL_TENSOR || fv->numel != 1 || !fv->type || fv->type->dtype == MIL_DT_STRING)
      return false;
    return mil_value_get_f64(fv, 0) == x;
  }
  return false;
}

static bool same_type(const mil_var *a, const mil_var *b) {
  return a && b && a->type && b->type && mil_type_equal(a->type, b->type);
}

/* Replaces op's output by v and removes op, when allowed: not when the
 * output is an output of op's block (looked at last, as it walks the
 * output's uses; the checks before it only read). */
static int replace_by(noop *c, mil_op *op, mil_var *v) {
  mil_var *out = op->outputs[0];
  if (!v || is_output_of(out, op->block)) return 0;
  /* built before the first replacement, so it describes the program as the
   * pass found it */
  if (!c->nr && !(c->nr = pass_nonrep_new(c->p))) {
    mil_diag_error(c->d, MIL_ERR_NOMEM, "noop_elimination: out of memory");
    return -(int)MIL_ERR_NOMEM;
  }
  if (!pass_nonrep_can_replace(c->nr, out, v)) return 0;
  if (!pass_replace_uses_after(op, out, v)) return 0;
  if (mil_op_remove(op) != MIL_OK) {
    mil_diag_error(c->d, MIL_ERR_INVALID, "noop_elimination: op '%s' (%s) is still used after its replacement",
                   op->name, op->type);
    return -(int)MIL_ERR_INVALID;
  }
  c->changes++;
  return 1;
}

/* Elementwise binary ops: x_ident / y_ident are the identity values of the
 * x / y operand (has_x / has_y false when that side is not checked). */
static int remove_binary(noop *c, mil_op *op, bool has_x, double x_ident, bool has_y, double y_ident) {
  mil_var *x = input_var(op, c->in_x), *y = input_var(op, c->in_y);
  mil_var *keep;
  if (has_x && all_equal(c, x, x_ident)) keep = y;
  else if (has_y && all_equal(c, y, y_ident)) keep = x;
  else return 0;
  if (!same_type(keep, op->outputs[0])) return 0;
  return replace_by(c, op, keep);
}

static int remove_same_type(noop *c, mil_op *op) {
  mil_var *x = input_var(op, c->in_x);
  if (!same_type(x, op->outputs[0])) return 0;
  return replace_by(c, op, x);
}

static int remove_slice_by_index(noop *c, mil_op *op) {
  mil_var *x = input_var(op, c->in_x);
  if (!same_type(x, op->outputs[0])) return 0;
  const mil_value *stride = pass_input_value(op, "stride");
  if (stride && stride->kind == MIL_VAL_TENSOR)
    for (int64_t i = 0; i < stride->numel; i++)
      if (mil_value_get_f64(stride, i) < 0) return 0;
  return replace_by(c, op, x);
}

static int remove_linear_activation(noop *c, mil_op *op) {
  const mil_value *alpha = pass_input_value(op, "alpha");
  const mil_value *beta = pass_input_value(op, "beta");
  if (!alpha || alpha->kind != MIL_VAL_TENSOR || alpha->numel != 1 || mil_value_get_f64(alpha, 0) != 1) return 0;
  if (mil_op_find_input(op, "beta") &&
      (!beta || beta->kind != MIL_VAL_TENSOR || beta->numel != 1 || mil_value_get_f64(beta, 0) != 0))
    return 0;
  return replace_by(c, op, input_var(op, c->in_x));
}

static int remove_transpose(noop *c, mil_op *op) {
  const mil_value *perm = pass_input_value(op, "perm");
  if (!perm || perm->kind != MIL_VAL_TENSOR) return 0;
  int64_t n = perm->numel, prev = 0;
  for (int64_t i = 0; i < n; i++) {
    int64_t p = mil_value_get_i64(perm, i);
    if (p < 0) p += n;
    if (i > 0 && p < prev) return 0;
    prev = p;
  }
  return replace_by(c, op, input_var(op, c->in_x));
}

static int try_op(noop *c, mil_op *op) {
  kind k = kind_of(c, op->type);
  if (k == K_NONE || op->n_outputs != 1) return 0;
  switch (k) {
  case K_SAME_SHAPE: return remove_same_type(c, op);
  case K_IDENTITY: return replace_by(c, op, input_var(op, c->in_x));
  case K_ADD: return remove_binary(c, op, true, 0, true, 0);
  case K_MUL: return remove_binary(c, op, true, 1, true, 1);
  case K_POW_DIV: return remove_binary(c, op, false, 0, true, 1);
  case K_FLOOR_DIV: {
    const mil_var *x = input_var(op, c->in_x);
    if (!x || !x->type || !mil_dtype_is_int(x->type->dtype)) return 0;
    return remove_binary(c, op, false, 0, true, 1);
  }
  case K_SUB: return remove_binary(c, op, false, 0, true, 0);
  case K_SLICE_BY_INDEX: return remove_slice_by_index(c, op);
  case K_TRANSPOSE: return remove_transpose(c, op);
  case K_LINEAR_ACTIVATION: return remove_linear_activation(c, op);
  case K_NONE: break;
  }
  return 0;
}

/* One sweep over b (nested blocks swept to a fixed point first). Returns
 * whether b changed, or -(status). */
static int sweep(noop *c, mil_block *b, int depth) {
  if (depth > PASS_MAX_DEPTH) {
    mil_diag_error(c->d, MIL_ERR_UNSUPPORTED, "noop_elimination: blocks nested deeper than %d levels",
                   PASS_MAX_DEPTH);
    return -(int)MIL_ERR_UNSUPPORTED;
  }
  int changed = 0;
  mil_op *next;
  /* only the visited op is ever removed */
  for (mil_op *op = b->first; op; op = next) {
    next = op->next;
    for (int32_t i = 0; i < op->n_blocks; i++) {
      int r;
      while ((r = sweep(c, op->blocks[i], depth + 1)) > 0) {
      }
      if (r < 0) return r;
    }
    if (op->n_blocks > 0) continue;
    int r = try_op(c, op);
    if (r < 0) return r;
    if (r > 0) changed = 1;
  }
  return changed;
}

/* What the first walk learns about a function body. */
typedef struct body_info {
  mil_block *b;
  int32_t lo, hi; /* its ops of a kind this pass looks at: cands[lo..hi) */
  bool nested;    /* some op of it has nested blocks */
} body_info;

typedef struct prep {
  mil_op **cands;
  int32_t n, cap;
} prep;

/* Lists the ops of function body b of a kind this pass looks at, and
 * whether some op of b has nested blocks. */
static mil_status prepare_body(noop *c, prep *pr, mil_block *b, body_info *bi) {
  for (mil_op *op = b->first; op; op = op->next) {
    PASS_WALK_PREFETCH(op);
    if (op->n_blocks > 0) bi->nested = true;
    if (kind_of(c, op->type) == K_NONE) continue;
    if (pr->n == pr->cap) {
      int32_t cap = pr->cap ? pr->cap * 2 : 256;
      mil_op **n = realloc(pr->cands, (size_t)cap * sizeof *n);
      if (!n) return mil_diag_error(c->d, MIL_ERR_NOMEM, "noop_elimination: out of memory");
      pr->cands = n;
      pr->cap = cap;
    }
    pr->cands[pr->n++] = op;
  }
  return MIL_OK;
}

/* The sweeps of a body without nesting, over its listed ops (the sweeps
 * of the whole block do nothing at the others, and only remove ops). */
static mil_status sweep_listed(noop *c, const prep *pr, const body_info *bi) {
  int changed;
  do {
    changed = 0;
    for (int32_t i = bi->lo; i < bi->hi; i++) {
      mil_op *op = pr->cands[i];
      if (op->block != bi->b) continue; /* removed */
      int r = try_op(c, op);
      if (r < 0) return (mil_status)(-r);
      if (r > 0) changed = 1;
    }
  } while (changed);
  return MIL_OK;
}

static mil_status run(mil_program *p, const mil_pass_options *o, mil_pass_stats *stats, mil_diag *d) {
  (void)o;
  mil_status st = pass_infer_marked_values(p, d);
  if (st != MIL_OK) return st;
  noop c;
  memset(&c, 0, sizeof c);
  c.p = p;
  c.d = d;
  kinds_init(&c);
  prep pr = {0};
  int32_t n_bodies = 0;
  for (int32_t fi = 0; fi < p->n_functions; fi++) n_bodies += p->functions[fi]->n_specs;
  body_info *bodies = calloc((size_t)n_bodies + 1, sizeof *bodies);
  if (!bodies) return mil_diag_error(d, MIL_ERR_NOMEM, "noop_elimination: out of memory");
  int32_t k = 0;
  for (int32_t fi = 0; fi < p->n_functions && st == MIL_OK; fi++) {
    mil_function *f = p->functions[fi];
    for (int32_t s = 0; s < f->n_specs && st == MIL_OK; s++, k++) {
      body_info *bi = &bodies[k];
      bi->b = f->specs[s].block;
      bi->lo = pr.n;
      st = prepare_body(&c, &pr, bi->b, bi);
      bi->hi = pr.n;
    }
  }
  for (int32_t i = 0; i < n_bodies && st == MIL_OK; i++) {
    if (!bodies[i].nested) {
      st = sweep_listed(&c, &pr, &bodies[i]);
      continue;
    }
    int r;
    while ((r = sweep(&c, bodies[i].b, 0)) > 0) {
    }
    if (r < 0) st = (mil_status)(-r);
  }
  free(bodies);
  free(pr.cands);
  pass_nonrep_free(c.nr);
  if (stats) stats->changes += c.changes;
  return st;
}

static const char *const k_anchors[] = {"add", "mul", "sub", "real_div", "pow", "floor_div", "identity", "reshape",
    "split", "slice_by_size", "slice_by_index", "pad", "tile", "transpose", "upsample_nearest_neighbor",
    "upsample_bilinear", "resize_bilinear", "crop", "linear_activation", NULL};
const mil_pass_def pass_def_noop_elimination = {"common::noop_elimination",
                                                "remove ops that return their input unchanged", NULL, 0, run,
                                                k_anchors};
