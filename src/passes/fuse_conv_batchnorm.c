/* common::fuse_conv_batchnorm — fold a batch_norm that follows conv or
 * conv_transpose into the convolution's weight and bias.
 *
 *   %c: (1, 2, 6, 6, fp32)(Tensor) = conv(x=%x, weight=%w, strides=%s, pad_type=%pt, pad=%p, dilations=%dl, groups=%g, name="c")
 *   %y: (1, 2, 6, 6, fp32)(Tensor) = batch_norm(x=%c, mean=%m, variance=%v, gamma=%ga, beta=%be, epsilon=%eps, name="y")
 *   } -> (%y)
 *
 * becomes
 *
 *   %const_0: (2, 3, 3, 3, fp32)*(Tensor) = const(val=<w * scale>, name="const_0")
 *   %const_1: (2,fp32)*(Tensor) = const(val=<scale * (b - m) + be>, name="const_1")
 *   %y: (1, 2, 6, 6, fp32)(Tensor) = conv(x=%x, weight=%const_0, bias=%const_1, strides=%s, ..., name="y")
 *   } -> (%y)
 *
 * with, per output channel i, scale = gamma[i] / sqrt(variance[i] + epsilon)
 * and b the conv bias (zeros when absent), computed element by element in
 * numpy's dtypes (fp32 for fp32 parameters) and cast to the weight's dtype.
 * For conv_transpose the channel rows are those of coremltools' transpose +
 * reshape of the weight (see pass_wrows_conv). The weight loop runs at
 * memory speed (pass_weight_scale).
 *
 * Conditions: the conv output is not an output of its block and is read by
 * exactly one op, a batch_norm; the weight, the bias (when present) and all
 * batch_norm parameters are known; the weight has rank 3 to 5; the bias has
 * Cout elements in a (Cout,) shape; the result replaces the batch_norm
 * output only when constexpr inputs allow it (Var.can_be_replaced_by_var).
 * The consts are inserted before the conv, then the new conv (named after
 * the batch_norm output); conv and batch_norm are removed.
 *
 * Mirrors coremltools/converters/mil/mil/passes/defs/optimize_conv.py
 * (fuse_conv_batchnorm).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "passes/fuse_util_internal.h"

static int oom(pass_fuse_ctx *c) {
  mil_diag_error(c->d, MIL_ERR_NOMEM, "%s: out of memory", c->pass);
  return -(int)MIL_ERR_NOMEM;
}

/* Reads input `name` of op as a numpy array; false when unknown. */
static bool param(const mil_op *op, const char *name, pass_np *a, bool *nomem) {
  return pass_np_from_value(a, pass_input_value(op, name), nomem);
}

/* Element i of a numpy array as the numpy scalar a[i] (a 1-D array). */
static double at(const pass_np *a, int64_t i) { return a->v[a->n == 1 && a->rank == 0 ? 0 : i]; }

static int try_fuse(pass_fuse_ctx *c, mil_op *conv, mil_op *bn) {
  bool nomem = false, deconv = strcmp(conv->type, "conv_transpose") == 0;
  pass_np g = {0}, be = {0}, m = {0}, v = {0}, eps = {0}, b = {0}, nb = {0};
  double *scale = NULL;
  int r = 0;
  mil_var *weight = mil_op_input_var(conv, "weight");
  if (!param(bn, "gamma", &g, &nomem) || !param(bn, "beta", &be, &nomem) || !param(bn, "mean", &m, &nomem) ||
      !param(bn, "variance", &v, &nomem) || !param(bn, "epsilon", &eps, &nomem) || eps.n != 1)
    goto done;
  if (!weight || !pass_weight_numeric(weight->val) || weight->val->type->rank < 3 || weight->val->type->rank > 5)
    goto done;
  mil_dtype wdt = weight->val->type->dtype;
  const mil_value *gv = pass_input_value(conv, "groups");
  int64_t groups = gv && gv->kind == MIL_VAL_TENSOR && gv->numel == 1 ? mil_value_get_i64(gv, 0) : 1;
  pass_wrows L;
  if (!pass_wrows_conv(weight->val->type, deconv, groups, &L)) goto done;
  int64_t cout = L.cout;
  if (g.n < cout || be.n < cout || m.n < cout || v.n < cout || g.rank == 0 || be.rank == 0 || m.rank == 0 ||
      v.rank == 0)
    goto done;
  if (!mil_op_find_input(conv, "bias")) {
    if (!pass_np_full(&b, wdt, 1, &cout, 0)) {
      nomem = true;
      goto done;
    }
  } else {
    if (!param(conv, "bias", &b, &nomem)) goto done;
    if (b.rank != 1 || b.n != cout) goto done;
    for (int64_t i = 0; i < b.n; i++) b.v[i] = pass_np_round(b.v[i], wdt); /* astype(weight dtype) */
    b.dt = wdt;
  }
  scale = malloc(((size_t)cout + 1) * sizeof *scale);
  if (!scale || !pass_np_full(&nb, wdt, 1, &cout, 0)) {
    nomem = true;
    goto done;
  }
  /* numpy scalar arithmetic, channel by channel */
  mil_dtype dve = pass_np_promote(v.dt, eps.dt);
  mil_dtype dsc = pass_np_promote(g.dt, dve);
  mil_dtype dw = pass_np_promote(wdt, dsc);
  mil_dtype dbm = pass_np_promote(b.dt, m.dt);
  mil_dtype dbs = pass_np_promote(dsc, dbm);
  mil_dtype dbb = pass_np_promote(dbs, be.dt);
  for (int64_t i = 0; i < cout; i++) {
    double ve = pass_np_round(at(&v, i) + eps.v[0], dve);
    double sq = pass_np_round(sqrt(ve), dve);
    scale[i] = pass_np_round(at(&g, i) / sq, dsc);
    double d = pass_np_round(b.v[i] - at(&m, i), dbm);
    double s = pass_np_round(scale[i] * d, dbs);
    nb.v[i] = pass_np_round(pass_np_round(s + at(&be, i), dbb), wdt);
  }
  /* conv_weight[i] * _scale in dtype dw, then .astype(weight dtype) */
  mil_value *wv = pass_weight_scale(c->p, weight->val, &L, scale, dw);
  mil_value *bv = wv ? pass_np_to_value(c->p, &nb, wv->type->dtype) : NULL;
  if (!bv) {
    nomem = true;
    goto done;
  }
  r = pass_fuse_conv_replace(c, conv, bn, bn->outputs[0]->name, false, wv, bv);
done:
  free(scale);
  pass_np *all[] = {&g, &be, &m, &v, &eps, &b, &nb};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) pass_np_free(all[i]);
  return nomem ? oom(c) : r;
}

static int fuse(pass_fuse_ctx *c, mil_op *op) {
  if ((strcmp(op->type, "conv") != 0 && strcmp(op->type, "conv_transpose") != 0) || op->n_outputs < 1) return 0;
  mil_var *out = op->outputs[0];
  if (pass_fuse_is_output_of(out, op->block)) return 0;
  mil_op *bn = pass_only_child_op(out);
  if (!bn || strcmp(bn->type, "batch_norm") != 0 || bn->n_outputs != 1) return 0;
  return try_fuse(c, op, bn);
}

/* The op types fuse() can rewrite at (it returns 0 at any other). */
static const char *const k_types[] = {"conv", "conv_transpose", NULL};
/* The op types no rewrite can do without. */
static const char *const k_required[] = {"batch_norm", NULL};

static mil_status run(mil_program *p, const mil_pass_options *o, mil_pass_stats *st, mil_diag *d) {
  (void)o;
  mil_status s = pass_infer_marked_values(p, d);
  if (s != MIL_OK) return s;
  pass_fuse_ctx c = {.p = p, .d = d, .pass = "fuse_conv_batchnorm", .lazy_names = true};
  s = pass_fuse_run_types(&c, fuse, true, false, k_types, k_required, st);
  pass_fuse_ctx_free(&c);
  return s;
}

static const char *const k_anchors[] = {"batch_norm", NULL};
const mil_pass_def pass_def_fuse_conv_batchnorm = {
    "common::fuse_conv_batchnorm", "fold a batch_norm after conv or conv_transpose into its weight and bias", NULL, 0,
    run, k_anchors};
