/* common::cast_optimization — drop casts to the dtype a tensor already has,
 * and fuse two consecutive casts when the pair keeps the range and the
 * resolution of the single second cast.
 *
 *   main(%x: (4,int8)(Tensor)) {
 *     block0() {
 *       %d16: (string)*(Scalar) = const(val="fp16", name="d16")
 *       %a: (4,fp16)(Tensor) = cast(x=%x, dtype=%d16, name="a")
 *       %d32: (string)*(Scalar) = const(val="fp32", name="d32")
 *       %b: (4,fp32)(Tensor) = cast(x=%a, dtype=%d32, name="b")
 *       %r: (4,fp32)(Tensor) = relu(x=%b, name="r")
 *     } -> (%r)
 *   }
 *
 * becomes (int8 -> fp16 -> fp32 loses nothing that int8 -> fp32 keeps; the
 * first cast is left for dead_code_elimination)
 *
 *   main(%x: (4,int8)(Tensor)) {
 *     block0() {
 *       %d16: (string)*(Scalar) = const(val="fp16", name="d16")
 *       %a: (4,fp16)(Tensor) = cast(x=%x, dtype=%d16, name="a")
 *       %d32: (string)*(Scalar) = const(val="fp32", name="d32")
 *       %x_to_fp32: (4,fp32)(Tensor) = cast(x=%x, dtype=%d32, name="x_to_fp32")
 *       %r: (4,fp32)(Tensor) = relu(x=%x_to_fp32, name="r")
 *     } -> (%r)
 *   }
 *
 * Rules, as coremltools applies them:
 *  - a cast whose input already has the target dtype is removed; its uses
 *    read the input;
 *  - for a cast c1 and each cast c2 reading c1's output: the pair is fusable
 *    when the range (intersection of the dtype ranges along the chain) and
 *    the resolution (coarsest along the chain) of x -> c1 -> c2 equal those
 *    of x -> c2. Then, when x already has c2's dtype, c2's uses read x;
 *    otherwise a new cast "<x>_to_<dtype>" (reusing c2's dtype const) is
 *    inserted before c2 and replaces it. c2 is removed, c1 is left;
 *  - when a function output would be replaced by a function input, an
 *    identity op in front of c1 stands in for the input;
 *  - nested blocks are optimized first; a fusable c2 inside a nested block
 *    of c1's block (not cancelling c1) is fused after c1's block settles.
 * Each block is swept until nothing changes.
 *
 * One walk lists the casts of a block; in a block without nested blocks
 * the later sweeps take that list as the sweeps left it (no walk), and
 * look only at the casts whose surroundings a sweep changed (see sweep).
 *
 * Mirrors coremltools/converters/mil/mil/passes/defs/optimize_repeat_ops.py
 * (cast_optimization) and types/type_mapping.py (ranges, resolutions).
 */
#include <float.h>
#include <stdlib.h>
#include <string.h>

#include "passes/pass_internal.h"

/* ---------- dtype ranges and resolutions (type_mapping.py) ---------- */

typedef struct dt_info {
  const char *name;
  double lo, hi, res;
} dt_info;

static const dt_info k_dtypes[] = {
    {"bool", 0, 1, 1},
    {"int4", -8, 7, 1},
    {"int8", -128, 127, 1},
    {"uint1", 0, 1, 1},
    {"uint2", 0, 3, 1},
    {"uint3", 0, 7, 1},
    {"uint4", 0, 15, 1},
    {"uint6", 0, 63, 1},
    {"uint8", 0, 255, 1},
    {"int16", -32768, 32767, 1},
    {"uint16", 0, 65535, 1},
    {"int32", -2147483648.0, 2147483647.0, 1},
    {"int64", -9223372036854775808.0, 9223372036854775807.0, 1},
    {"fp16", -65504.0, 65504.0, 1e-3},
    {"fp32", -FLT_MAX, FLT_MAX, 1e-6},
    {"fp64", -DBL_MAX, DBL_MAX, 1e-15},
};

/* The entry for a dtype name, or NULL (uint32 / uint64 / bf16 / strings have
 * no range in coremltools: such chains are never fused). */
static const dt_info *dt_find(const char *name) {
  if (!name) return NULL;
  for (size_t i = 0; i < sizeof k_dtypes / sizeof k_dtypes[0]; i++)
    if (k_dtypes[i].name[0] == name[0] && strcmp(k_dtypes[i].name, name) == 0) return &k_dtypes[i];
  return NULL;
}

typedef struct range_res {
  double lo, hi, res;
} range_res;

static range_res chain(const dt_info *in, const dt_info *const *steps, int n) {
  range_res r = {in->lo, in->hi, in->res};
  for (int i = 0; i < n; i++) {
    if (steps[i]->lo > r.lo) r.lo = steps[i]->lo;
    if (steps[i]->hi < r.hi) r.hi = steps[i]->hi;
    if (steps[i]->res > r.res) r.res = steps[i]->res;
  }
  return r;
}

/* ---------- the pass ---------- */

/* Reading ahead: op records lie in list order in memory
 * (mil_program_compact_ops), so in a walk the record PASS_WALK_AHEAD ops on is most
 * likely PASS_WALK_AHEAD records further; and a sweep's casts are listed, so what
 * the casts a few places on will read is known. Asking for it early turns
 * a walk bound by one memory latency per step into a stream (a prefetch
 * of an address that holds nothing is harmless). */

typedef struct pair {
  mil_op *c1, *c2;
} pair;

/* Pairs whose second cast sits in a nested block, fused once the block of
 * the first settles; grouped by the block of the second, in the order those
 * blocks were first seen. */
typedef struct across {
  pair *v;
  int32_t n, cap;
} across;

typedef struct ctx {
  mil_program *p;
  const char *cast;           /* interned "cast" */
  const char *in_x, *in_dtype; /* interned input names "x" and "dtype", or NULL */
  pass_names *names;
  mil_diag *d;
  int64_t changes;
  int64_t n_dirty; /* at least the number of casts marked K_DIRTY */
  /* dt_find(mil_dtype_name(dt)) by dtype, filled on first need */
  const dt_info *by_dtype[128];
  bool by_dtype_known[128];
} ctx;

/* The casts of one block in block order, as a sweep takes them. */
typedef struct cast_list {
  mil_op **v;
  int32_t n, cap;
  bool nested; /* some op of the block has nested blocks */
} cast_list;

/* op->aux of a listed cast: K_DIRTY when something its transformation
 * reads changed since it was last looked at (see sweep); NULL otherwise.
 * A cast removed as the second of a fused pair holds there the cast made
 * in its place, if any. */
static const char k_dirty_marker;
#define K_DIRTY ((void *)&k_dirty_marker)

/* Notes that the cast op (if op is one) must be looked at again. */
static void mark(ctx *c, mil_op *op) {
  if (op && op->type == c->cast && !op->aux) {
    op->aux = K_DIRTY;
    c->n_dirty++;
  }
}

/* Clears op's K_DIRTY mark, if any. */
static void unmark(ctx *c, mil_op *op) {
  if (op->aux != K_DIRTY) return;
  op->aux = NULL;
  c->n_dirty--;
}

static int oom(ctx *c) {
  mil_diag_error(c->d, MIL_ERR_NOMEM, "cast_optimization: out of memory");
  return -(int)MIL_ERR_NOMEM;
}

/* mil_op_find_input with the interned name (input names are interned, so
 * the first input of that name is the first one with this pointer). */
static const mil_input *find_input(const mil_op *op, const char *iname) {
  for (int32_t i = 0; iname && i < op->n_inputs; i++)
    if (op->inputs[i].name == iname) return &op->inputs[i];
  return NULL;
}

/* mil_op_input_var(op, "x") / (op, "dtype"). */
static mil_var *input_var(const mil_op *op, const char *iname) {
  const mil_input *in = find_input(op, iname);
  return in && in->n_args > 0 ? in->args[0].use.var : NULL;
}

static mil_var *cast_x(const ctx *c, const mil_op *op) { return input_var(op, c->in_x); }

/* The dtype string of a cast, or NULL. */
static const char *cast_dtype(const ctx *c, const mil_op *op) {
  /* pass_input_value(op, "dtype") */
  const mil_input *in = find_input(op, c->in_dtype);
  const mil_value *v = NULL;
  if (in && in->n_args == 1)
    v = in->args[0].value ? in->args[0].value : in->args[0].use.var ? in->args[0].use.var->val : NULL;
  if (!v || v->kind != MIL_VAL_TENSOR || !v->type || v->type->dtype != MIL_DT_STRING || v->numel != 1) return NULL;
  return mil_value_get_str(v, 0);
}

/* The dtype name of a tensor or scalar var, or NULL. */
static const char *var_dtype(const mil_var *v) {
  if (!v || !mil_type_is_tensor(v->type)) return NULL;
  return mil_dtype_name(v->type->dtype);
}

/* coremltools' Var.is_tensor_or_scalar_of. */
static bool var_is_of(const mil_var *v, const char *dtype) {
  const char *n = var_dtype(v);
  return n && dtype && strcmp(n, dtype) == 0;
}

/* dt_find(var_dtype(v)), through the table of c. */
static const dt_info *var_dt(ctx *c, const mil_var *v) {
  if (!v || !mil_type_is_tensor(v->type)) return NULL;
  unsigned dt = (unsigned)v->type->dtype;
  if (dt >= sizeof c->by_dtype / sizeof c->by_dtype[0]) return dt_find(mil_dtype_name(v->type->dtype));
  if (!c->by_dtype_known[dt]) {
    c->by_dtype[dt] = dt_find(mil_dtype_name(v->type->dtype));
    c->by_dtype_known[dt] = true;
  }
  return c->by_dtype[dt];
}

/* Whether x -> c1 -> c2 keeps the range and resolution of x -> c2, given
 * the entries of x's dtype and of the two casts' dtypes. */
static bool fusable(const dt_info *in, const dt_info *s1, const dt_info *s2) {
  if (!in || !s1 || !s2) return false;
  const dt_info *both[2] = {s1, s2};
  range_res ref = chain(in, both, 2), out = chain(in, &s2, 1);
  return ref.lo == out.lo && ref.hi == out.hi && ref.res == out.res;
}

static bool is_function_input(const mil_var *v) { return v->func_input_of != NULL; }

static bool is_function_output(const mil_var *v) {
  for (const mil_use *u = v->uses; u; u = u->next_use)
    if (u->block && !u->block->parent && u->block->func) return true;
  return false;
}

/* coremltools' _dup_if_affect_io: an identity of new_var before `before`
 * when old_var is a function output and new_var a function input. */
static mil_var *dup_if_affects_io(ctx *c, mil_var *new_var, mil_var *old_var, mil_op *before, int *err) {
  bool top = before->block && !before->block->parent;
  bool old_top = old_var->op && old_var->op->block && !old_var->op->block->parent;
  if (!(top && is_function_input(new_var) && old_top && is_function_output(old_var))) return new_var;
  if (!c->names && !(c->names = pass_names_new(c->p))) return (*err = oom(c)), NULL;
  const char *name = pass_names_fresh(c->names, c->p, "identity");
  mil_op *id = name ? mil_op_new(c->p, "identity", name) : NULL;
  if (!id) return (*err = oom(c)), NULL;
  mil_block_insert_before(before, id);
  mil_op_add_input(id, "x", new_var);
  mark(c, new_var->op);
  mil_status st = pass_finish_op(id, c->d);
  if (st != MIL_OK) return (*err = -(int)st), NULL;
  return id->outputs[0];
}

static int replace(ctx *c, mil_op *anchor, mil_var *old_var, mil_var *new_var) {
  /* the casts among old_var's readers may read something else after it
   * (marked once the replacement has brought their records in), and
   * new_var gains readers */
  mil_op *few[16], **readers = few;
  int32_t n = 0;
  if (old_var->n_uses > 16 && !(readers = malloc((size_t)old_var->n_uses * sizeof *readers))) return oom(c);
  for (const mil_use *u = old_var->uses; u; u = u->next_use)
    if (u->op) readers[n++] = u->op;
  bool ok = pass_replace_uses_after(anchor, old_var, new_var);
  for (int32_t i = 0; i < n; i++) mark(c, readers[i]);
  mark(c, new_var->op);
  if (readers != few) free(readers);
  if (!ok) {
    mil_diag_error(c->d, MIL_ERR_INVALID, "cast_optimization: cannot replace %%%s by %%%s after op '%s'",
                   old_var->name, new_var->name, anchor->name);
    return -(int)MIL_ERR_INVALID;
  }
  return 0;
}

/* coremltools' _fuse_cast_ops for one pair, without removing c2. */
static int fuse_pair(ctx *c, mil_op *c1, mil_op *c2, bool reuse_input) {
  mil_var *x = cast_x(c, c1), *old_var = c2->outputs[0], *new_var;
  if (reuse_input) {
    int err = 0;
    new_var = dup_if_affects_io(c, x, old_var, c1, &err);
    if (!new_var) return err;
  } else {
    const char *dt = cast_dtype(c, c2);
    size_t lx = strlen(x->name), ld = strlen(dt), len = lx + ld + 5;
    char stack[256];
    char *name = len <= sizeof stack ? stack : malloc(len);
    if (!name) return oom(c);
    memcpy(name, x->name, lx);
    memcpy(name + lx, "_to_", 4);
    memcpy(name + lx + 4, dt, ld + 1);
    mil_op *nc = mil_op_new(c->p, c->cast, name);
    if (name != stack) free(name);
    if (!nc) return oom(c);
    mil_block_insert_before(c2, nc);
    unmark(c, c2);
    c2->aux = nc; /* the next sweep of the block takes nc where c2 was */
    mil_op_add_input(nc, "x", x);
    mil_op_add_input(nc, "dtype", input_var(c2, c->in_dtype));
    mark(c, x->op);
    mark(c, nc);
    mil_status st = pass_finish_op(nc, c->d);
    if (st != MIL_OK) return -(int)st;
    if (c->names && !pass_names_add(c->names, nc->name)) return oom(c);
    new_var = nc->outputs[0];
  }
  return replace(c, c2, old_var, new_var);
}

/* pass_remove_ops for one op without nested blocks. */
static int remove_op(ctx *c, mil_op *op) {
  unmark(c, op);
  if (mil_op_remove(op) == MIL_OK) return 0;
  const mil_var *v = NULL;
  for (int32_t i = 0; i < op->n_outputs && !v; i++)
    if (op->outputs[i]->uses) v = op->outputs[i];
  mil_diag_error(c->d, MIL_ERR_INVALID, "cannot remove op '%s' (%s): its output %%%s is still %s", op->name, op->type,
                 v ? v->name : "?", v && v->uses->op ? "used by another op" : "a block output");
  return -(int)MIL_ERR_INVALID;
}

static int push_across(ctx *c, across *a, mil_op *c1, mil_op *c2) {
  for (int32_t i = 0; i < a->n; i++)
    if (a->v[i].c1 == c1 && a->v[i].c2 == c2) return 0;
  if (a->n == a->cap) {
    int32_t cap = a->cap ? a->cap * 2 : 8;
    pair *v = realloc(a->v, (size_t)cap * sizeof *v);
    if (!v) return oom(c);
    a->v = v;
    a->cap = cap;
  }
  a->v[a->n++] = (pair){c1, c2};
  return 0;
}

/* coremltools' _try_to_transform: 1 when something changed, 0, or -(status). */
static int try_transform(ctx *c, mil_op *root, across *a) {
  mil_block *b = root->block;
  mil_var *x = cast_x(c, root);
  if (!x || root->n_outputs != 1) return 0;
  const char *dt = cast_dtype(c, root);
  if (dt && var_is_of(x, dt)) {
    int err = 0;
    mil_var *nv = dup_if_affects_io(c, x, root->outputs[0], root, &err);
    if (!nv) return err;
    int r = replace(c, root, root->outputs[0], nv);
    if (r < 0) return r;
    if ((r = remove_op(c, root)) < 0) return r;
    c->changes++;
    return 1;
  }
  mil_op *few[16];
  int32_t n = pass_child_ops(root->outputs[0], few, 16);
  if (n == 0) return 0;
  mil_op **kids = few;
  if (n > 16) {
    if (!(kids = malloc((size_t)n * sizeof *kids))) return oom(c);
    pass_child_ops(root->outputs[0], kids, n);
  }
  int changed = 0;
  const dt_info *in = NULL, *s1 = NULL;
  bool looked = false;
  for (int32_t i = 0; i < n && changed >= 0; i++) {
    mil_op *k = kids[i];
    if (k->type != c->cast || k->n_outputs != 1 || cast_x(c, k) != root->outputs[0]) continue;
    if (!looked) { /* x and root are not changed by the fusions below */
      in = var_dt(c, x);
      s1 = dt_find(dt);
      looked = true;
    }
    if (!in || !s1) break;
    const char *dk = cast_dtype(c, k);
    if (!fusable(in, s1, dt_find(dk))) continue;
    int r;
    if (var_is_of(x, dk)) {
      r = fuse_pair(c, root, k, true);
      if (r >= 0) r = remove_op(c, k);
    } else if (k->block != b) {
      r = push_across(c, a, root, k);
      if (r >= 0) continue;
    } else {
      r = fuse_pair(c, root, k, false);
      if (r >= 0) r = remove_op(c, k);
    }
    if (r < 0) {
      changed = r;
    } else {
      c->changes++;
      changed = 1;
    }
  }
  if (kids != few) free(kids);
  return changed;
}

static int optimize_block(ctx *c, mil_block *b, int depth);

static int push_cast(ctx *c, cast_list *l, mil_op *op) {
  if (l->n == l->cap) {
    int32_t cap = l->cap ? l->cap * 2 : 64;
    mil_op **g = realloc(l->v, (size_t)cap * sizeof *g);
    if (!g) return oom(c);
    l->v = g;
    l->cap = cap;
  }
  l->v[l->n++] = op;
  return 0;
}

/* The walk that starts a sweep: nested blocks are optimized first (which
 * leaves b's list of ops as it is) and the casts of b are listed. */
static int list_casts(ctx *c, mil_block *b, cast_list *l, int depth) {
  l->n = 0;
  for (mil_op *op = b->first; op; op = op->next) {
    PASS_WALK_PREFETCH(op);
    for (int32_t i = 0; i < op->n_blocks; i++) {
      l->nested = true;
      int r = optimize_block(c, op->blocks[i], depth + 1);
      if (r < 0) return r;
    }
    if (op->type == c->cast) {
      op->aux = NULL;
      int r = push_cast(c, l, op);
      if (r < 0) return r;
    }
  }
  return 0;
}

/* The casts of a block without nested blocks after a sweep, from the list
 * the sweep took: a sweep only removes casts and inserts new ones right
 * before a cast it then removes (noted in that cast's aux), so this is
 * what list_casts would find, without walking the block. */
static int relist_casts(ctx *c, mil_block *b, cast_list *l) {
  cast_list was = *l;
  l->v = NULL;
  l->n = l->cap = 0;
  int r = 0;
  for (int32_t i = 0; i < was.n && r >= 0; i++) {
    mil_op *op = was.v[i], *nc = op->aux;
    if (op->block == b) {
      r = push_cast(c, l, op);
    } else if (nc && nc != K_DIRTY && nc->block == b) {
      r = push_cast(c, l, nc);
    }
  }
  free(was.v);
  return r;
}

/* One sweep of b over the casts listed as it starts (casts made by the
 * sweep wait for the next one); 1 when it changed, 0, or -(status).
 *
 * With `all` false only the casts marked K_DIRTY are looked at: what the
 * transformation of a cast reads is its input and dtype, the input's type
 * and place, and its output's readers with their inputs and dtypes; a
 * sweep changes that only by rebinding readers of a var to another var
 * (the casts among the old readers, and the producer of the new var, are
 * marked) and by making an op that reads a var (its producer is marked,
 * and so is a new cast). Any other cast would change nothing. */
static int sweep(ctx *c, mil_block *b, const cast_list *l, across *a, bool all) {
  int changed = 0;
  for (int32_t i = 0; i < l->n; i++) {
    mil_op *op = l->v[i];
    if (all) { /* the records, then their inputs and outputs */
      if (i + PASS_WALK_AHEAD < l->n) {
        PASS_PREFETCH(l->v[i + PASS_WALK_AHEAD]);
        PASS_PREFETCH((const char *)l->v[i + PASS_WALK_AHEAD] + 64);
      }
      if (i + PASS_WALK_AHEAD / 2 < l->n) {
        const mil_op *o = l->v[i + PASS_WALK_AHEAD / 2];
        PASS_PREFETCH(o->inputs);
        PASS_PREFETCH(o->outputs);
      }
      if (i + PASS_WALK_AHEAD / 4 < l->n) {
        const mil_op *o = l->v[i + PASS_WALK_AHEAD / 4];
        if (o->n_inputs > 1) {
          PASS_PREFETCH(o->inputs[0].args);
          PASS_PREFETCH(o->inputs[1].args);
        }
        if (o->n_outputs > 0) PASS_PREFETCH(o->outputs[0]);
      }
    }
    if (op->block != b || (!all && op->aux != K_DIRTY)) continue;
    unmark(c, op);
    int r = try_transform(c, op, a);
    if (r < 0) return r;
    if (r > 0) changed = 1;
  }
  return changed;
}

/* The fusions deferred across a block boundary (_fuse_casts_ops_across_blocks),
 * grouped by the block of the second cast; stale pairs (a cast removed or
 * rebound since) are skipped. */
static int fuse_across(ctx *c, across *a) {
  bool *done = calloc((size_t)a->n + 1, sizeof *done);
  if (!done) return oom(c);
  int r = 0;
  for (int32_t i = 0; i < a->n && r >= 0; i++) {
    if (done[i]) continue;
    mil_block *kb = a->v[i].c2->block;
    mil_op **rm = malloc((size_t)a->n * sizeof *rm);
    if (!rm) {
      r = oom(c);
      break;
    }
    int32_t nrm = 0;
    for (int32_t j = i; j < a->n && r >= 0; j++) {
      if (done[j] || a->v[j].c2->block != kb) continue;
      done[j] = true;
      mil_op *c1 = a->v[j].c1, *c2 = a->v[j].c2;
      if (!c1->block || !c2->block || c1->n_outputs != 1 || cast_x(c, c2) != c1->outputs[0]) continue;
      r = fuse_pair(c, c1, c2, false);
      if (r >= 0) {
        rm[nrm++] = c2;
        c->changes++;
      }
    }
    if (r >= 0 && nrm) {
      mil_status st = pass_remove_ops(rm, nrm, c->d);
      if (st != MIL_OK) r = -(int)st;
    }
    free(rm);
  }
  free(done);
  return r;
}

/* coremltools' _fuse_or_cancel_consecutive_casts_block_wrapper. */
static int optimize_block(ctx *c, mil_block *b, int depth) {
  if (depth > PASS_MAX_DEPTH) {
    mil_diag_error(c->d, MIL_ERR_UNSUPPORTED, "cast_optimization: blocks nested deeper than %d levels",
                   PASS_MAX_DEPTH);
    return -(int)MIL_ERR_UNSUPPORTED;
  }
  across a = {0};
  cast_list l = {0};
  int64_t outer_dirty = c->n_dirty;
  c->n_dirty = 0;
  int r = list_casts(c, b, &l, depth);
  bool all = true;
  while (r >= 0 && (r = sweep(c, b, &l, &a, all)) > 0) {
    if (!l.nested && c->n_dirty == 0) { /* the next sweep would look at no cast */
      r = 0;
      break;
    }
    all = l.nested;
    r = l.nested ? list_casts(c, b, &l, depth) : relist_casts(c, b, &l);
  }
  c->n_dirty = outer_dirty;
  if (r >= 0) r = fuse_across(c, &a);
  free(l.v);
  free(a.v);
  return r;
}

static mil_status run(mil_program *p, const mil_pass_options *o, mil_pass_stats *st, mil_diag *d) {
  (void)o;
  ctx c;
  memset(&c, 0, sizeof c);
  c.p = p;
  c.cast = mil_program_find_string(p, "cast", (size_t)-1);
  c.in_x = mil_program_find_string(p, "x", (size_t)-1);
  c.in_dtype = mil_program_find_string(p, "dtype", (size_t)-1);
  c.d = d;
  if (!c.cast) return MIL_OK; /* no cast op */
  int r = 0;
  for (int32_t fi = 0; fi < p->n_functions && r >= 0; fi++) {
    mil_function *f = p->functions[fi];
    for (int32_t s = 0; s < f->n_specs && r >= 0; s++) r = optimize_block(&c, f->specs[s].block, 0);
  }
  pass_names_free(c.names);
  if (st) st->changes += c.changes;
  return r < 0 ? (mil_status)(-r) : MIL_OK;
}

static const char *const k_anchors[] = {"cast", NULL};
const mil_pass_def pass_def_cast_optimization = {
    "common::cast_optimization", "remove redundant casts and fuse consecutive casts that keep range and resolution",
    NULL, 0, run, k_anchors};
