/* common::select_optimization — simplify select(cond, a, b) with a
 * constant cond.
 *
 * Case 1, cond constant and all true (or all false), no broadcasting:
 *
 *   %c: (bool)*(Scalar) = const(val=True, name="c")
 *   %y: (2, 3, fp32)(Tensor) = select(cond=%c, a=%a, b=%b, name="y")
 *   %z: (2, 3, fp32)(Tensor) = relu(x=%y, name="z")
 *
 * becomes
 *
 *   %identity_0: (2, 3, fp32)(Tensor) = identity(x=%a, name="identity_0")
 *   %z: (2, 3, fp32)(Tensor) = relu(x=%identity_0, name="z")
 *
 * Case 2, a (or b, then cond is negated) a known tensor of infinities:
 * select(cond, inf, b) becomes add(x=<inf where cond, 0 elsewhere>, y=b)
 * named after the select output, since inf + b = inf and 0 + b = b.
 *
 * Conditions: cond is known and a and b are not both known. Case 1 applies
 * when the identity's shape equals the broadcast shape of a and b. When
 * the replacement is refused (constexpr inputs) the identity built for
 * case 1 stays behind unused, as in coremltools. One sweep over every
 * block, nested blocks first.
 *
 * Mirrors coremltools/converters/mil/mil/passes/defs/
 * optimize_elementwise_binary.py (select_optimization).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "passes/fuse_util_internal.h"

/* The broadcast of a's and b's shapes equals t's shape. */
static bool broadcast_is(const mil_type *a, const mil_type *b, const mil_type *t) {
  if (!mil_type_is_tensor(a) || !mil_type_is_tensor(b) || !mil_type_is_tensor(t)) return false;
  if (a->rank < 0 || b->rank < 0 || t->rank < 0) return false;
  int32_t r = a->rank > b->rank ? a->rank : b->rank;
  if (t->rank != r) return false;
  for (int32_t i = 0; i < r; i++) {
    int32_t ia = i - (r - a->rank), ib = i - (r - b->rank);
    const mil_dim *da = ia >= 0 ? &a->dims[ia] : NULL, *db = ib >= 0 ? &b->dims[ib] : NULL;
    const mil_dim *res;
    if (!da || da->size == 1) res = db;
    else if (!db || db->size == 1) res = da;
    else if (da->size >= 0 && da->size == db->size) res = da;
    else if (da->size < 0 && db->size < 0 && da->sym && da->sym == db->sym) res = da;
    else return false;
    const mil_dim *dt = &t->dims[i];
    if (!res) {
      if (dt->size != 1) return false;
    } else if (res->size != dt->size || (res->size < 0 && res->sym != dt->sym)) {
      return false;
    }
  }
  return true;
}

static int replace(pass_fuse_ctx *c, mil_op *sel, mil_var *nv) {
  mil_op *rm[1] = {sel};
  return pass_fuse_replace_and_remove(c, sel, sel->outputs[0], nv, rm, 1);
}

/* Case 1. Returns 1, 0, or -(status). */
static int scalar_cond(pass_fuse_ctx *c, mil_op *sel, const mil_value *cv) {
  bool all_true = true, all_false = true;
  for (int64_t i = 0; i < cv->numel; i++) {
    bool t = mil_value_get_f64(cv, i) != 0;
    all_true &= t;
    all_false &= !t;
  }
  mil_var *a = mil_op_input_var(sel, "a"), *b = mil_op_input_var(sel, "b");
  mil_var *pick = all_true ? a : all_false ? b : NULL;
  if (!pick || !broadcast_is(a->type, b->type, pick->type)) return 0;
  mil_op *mark = sel->prev;
  mil_op *id = pass_fuse_new_op(c, sel, "identity", NULL);
  if (!id) return -(int)MIL_ERR_NOMEM;
  mil_op_add_input(id, "x", pick);
  mil_status st = pass_fuse_finish(c, id);
  if (st != MIL_OK) {
    pass_fuse_rollback(sel, mark);
    return st == MIL_ERR_NOMEM ? -(int)st : 0;
  }
  return replace(c, sel, id->outputs[0]);
}

static bool all_inf(const mil_value *v) {
  if (!v || v->kind != MIL_VAL_TENSOR || !v->type || !mil_dtype_is_float(v->type->dtype)) return false;
  for (int64_t i = 0; i < v->numel; i++)
    if (isfinite(mil_value_get_f64(v, i))) return false;
  return true;
}

/* Case 2. */
static int inf_const(pass_fuse_ctx *c, mil_op *sel, const mil_value *cv, const mil_value *av, const mil_value *bv) {
  const mil_value *inf;
  mil_var *other;
  bool negate;
  if (all_inf(av)) {
    inf = av;
    other = mil_op_input_var(sel, "b");
    negate = false;
  } else if (all_inf(bv)) {
    inf = bv;
    other = mil_op_input_var(sel, "a");
    negate = true;
  } else {
    return 0;
  }
  /* np.broadcast_arrays(cond, inf), then zeros where cond is false */
  bool nomem = false;
  pass_np pc = {0}, pi = {0}, zc = {0}, zi = {0}, cb = {0}, ib = {0};
  int r = 0, k1 = 0, k2 = 0;
  if (cv->type->rank > PASS_NP_MAX_RANK || !pass_np_from_value(&pi, inf, &nomem)) goto done;
  int64_t shape[PASS_NP_MAX_RANK];
  for (int32_t i = 0; i < cv->type->rank; i++) shape[i] = cv->type->dims[i].size;
  if (!pass_np_full(&pc, pi.dt, cv->type->rank, shape, 0) || !pass_np_full(&zc, pi.dt, pc.rank, pc.shape, 0) ||
      !pass_np_full(&zi, pi.dt, pi.rank, pi.shape, 0)) {
    nomem = true;
    goto done;
  }
  for (int64_t i = 0; i < pc.n; i++) {
    bool t = mil_value_get_f64(cv, i) != 0;
    pc.v[i] = (negate ? !t : t) ? 1.0 : 0.0;
  }
  k1 = pass_np_binary(&cb, &pc, &zi, '+');
  k2 = k1 > 0 ? pass_np_binary(&ib, &zc, &pi, '+') : 0;
  if (k1 < 0 || k2 < 0) nomem = true;
  if (k1 <= 0 || k2 <= 0) goto done;
  for (int64_t i = 0; i < ib.n; i++)
    if (cb.v[i] == 0) ib.v[i] = 0.0;
  mil_value *val = pass_np_to_value(c->p, &ib, pi.dt);
  mil_var *res = sel->outputs[0];
  mil_op *mark = sel->prev;
  mil_op *add = val ? pass_fuse_new_op(c, sel, "add", res->name) : NULL;
  mil_var *xc = add ? pass_fuse_const(c, add, add->name, "x", val) : NULL;
  if (!xc) {
    r = -(int)MIL_ERR_NOMEM;
    goto done;
  }
  mil_op_add_input(add, "x", xc);
  mil_op_add_input(add, "y", other);
  mil_status st = pass_fuse_finish(c, add);
  if (st == MIL_ERR_NOMEM) r = -(int)st;
  else if (st == MIL_OK && mil_type_equal(add->outputs[0]->type, res->type)) r = replace(c, sel, add->outputs[0]);
  if (r == 0) pass_fuse_rollback(sel, mark);
done:
  pass_np_free(&pc);
  pass_np_free(&pi);
  pass_np_free(&zc);
  pass_np_free(&zi);
  pass_np_free(&cb);
  pass_np_free(&ib);
  return nomem ? -(int)MIL_ERR_NOMEM : r;
}

static int fuse(pass_fuse_ctx *c, mil_op *op) {
  if (strcmp(op->type, "select") != 0 || op->n_outputs != 1) return 0;
  const mil_value *cv = pass_input_value(op, "cond");
  mil_var *a = mil_op_input_var(op, "a"), *b = mil_op_input_var(op, "b");
  if (!cv || cv->kind != MIL_VAL_TENSOR || !cv->type || cv->type->rank < 0 || !a || !b) return 0;
  if (a->val && b->val) return 0;
  int r = scalar_cond(c, op, cv);
  if (r != 0) return r;
  return inf_const(c, op, cv, a->val, b->val);
}

/* The op types fuse() can rewrite at (it returns 0 at any other). */
static const char *const k_types[] = {"select", NULL};

static mil_status run(mil_program *p, const mil_pass_options *o, mil_pass_stats *st, mil_diag *d) {
  (void)o;
  mil_status s = pass_infer_marked_values(p, d);
  if (s != MIL_OK) return s;
  pass_fuse_ctx c = {.p = p, .d = d, .pass = "select_optimization", .lazy_names = true};
  s = pass_fuse_run_types(&c, fuse, false, true, k_types, NULL, st);
  pass_fuse_ctx_free(&c);
  return s;
}

static const char *const k_anchors[] = {"select", NULL};
const mil_pass_def pass_def_select_optimization = {"common::select_optimization",
                                                   "simplify select with a constant condition", NULL, 0, run,
                                                   k_anchors};
