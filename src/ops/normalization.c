/* Op family "normalization": batch_norm, instance_norm, l2_norm,
 * layer_norm, local_response_norm (iOS13 and iOS17 variants). Mirrors
 * coremltools ops/defs/iOS15/normalization.py and iOS17/normalization.py,
 * with value inference for l2_norm and layer_norm (computed in double,
 * rounded once to the output dtype).
 *
 * Float defaults (epsilon, alpha, beta, k) are fp32 consts, as coremltools'
 * builder makes them from Python floats, even for an fp16 x. Its builder
 * checks type domains only among the inputs given explicitly, so such
 * programs exist (and Core ML runs them); the iOS13 variants therefore do
 * not tie these scalars to x's type domain "T" here (they only have to be
 * fp16 or fp32). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ops/ops_defaults.h"
#include "ops/ops_internal.h"

static mil_status same_as_x(mil_infer_ctx *c) {
  const mil_type *x = op_type(c, "x");
  op_set_out(c, 0, op_tensor(c, x->dtype, x->rank, x->dims));
  return MIL_OK;
}

static mil_status add_float_default(mil_infer_ctx *c, const char *name, double v) {
  if (op_has(c, name)) return MIL_OK;
  return op_add_default_f32(c, name, v);
}

static mil_status eps5_defaults(mil_infer_ctx *c) { return add_float_default(c, "epsilon", 1e-5); }

/* ---------------- l2_norm ---------------- */

static mil_status l2_norm_infer(mil_infer_ctx *c) {
  const mil_type *x = op_type(c, "x");
  if (x->rank >= 0 && x->rank < 3) return op_fail(c, "input 'x' of l2_norm must have rank >= 3, got %s", op_tstr(c, x));
  return same_as_x(c);
}

static mil_status l2_norm_fold(mil_infer_ctx *c) {
  const mil_value *x = op_val(c, "x");
  if (!x || (op_has(c, "epsilon") && !op_val(c, "epsilon"))) return MIL_OK;
  double eps = op_f64(c, "epsilon", 1e-6);
  mil_value *out = op_new_out_value(c, 0);
  if (!out) return MIL_OK;
  int32_t r = x->type->rank;
  int64_t groups = 1;
  for (int32_t i = 0; i < r - 3; i++) groups *= x->type->dims[i].size;
  int64_t per = groups ? x->numel / groups : 0;
  for (int64_t g = 0; g < groups; g++) {
    double ss = 0;
    for (int64_t i = 0; i < per; i++) {
      double v = mil_value_get_f64(x, g * per + i);
      ss += v * v;
    }
    double den = sqrt(ss + eps);
    for (int64_t i = 0; i < per; i++) mil_value_set_f64(out, g * per + i, mil_value_get_f64(x, g * per + i) / den);
  }
  c->val[0] = out;
  return MIL_OK;
}

static mil_status l2_norm_defaults(mil_infer_ctx *c) { return add_float_default(c, "epsilon", 1e-6); }

/* ---------------- layer_norm ---------------- */

/* Reads axes (default: every axis) into a membership mask; error when out of range. */
static mil_status layer_norm_axes(mil_infer_ctx *c, int32_t rank, bool *in_axes) {
  for (int32_t i = 0; i < rank; i++) in_axes[i] = !op_has(c, "axes");
  if (!op_has(c, "axes")) return MIL_OK;
  const mil_value *v = op_val(c, "axes");
  if (!v || v->kind != MIL_VAL_TENSOR || v->type->dtype == MIL_DT_STRING)
    return op_fail(c, "input 'axes' must be a known int32 vector");
  for (int64_t i = 0; i < v->numel; i++) {
    int64_t a = mil_value_get_i64(v, i), p;
    if (!op_axis(a, rank, &p))
      return op_fail(c, "input 'axes' must be in the range [-x.rank, x.rank-1] = [%d, %d], got %lld", -rank, rank - 1,
                     (long long)a);
    in_axes[p] = true;
  }
  return MIL_OK;
}

static mil_status layer_norm_infer(mil_infer_ctx *c) {
  const mil_type *x = op_type(c, "x");
  if (x->rank < 0) return same_as_x(c);
  if (x->rank > OP_MAX_RANK) return op_fail(c, "input 'x' rank %d is too large", x->rank);
  bool in_axes[OP_MAX_RANK];
  mil_status st = layer_norm_axes(c, x->rank, in_axes);
  if (st != MIL_OK) return st;
  mil_dim norm[OP_MAX_RANK];
  int32_t nn = 0;
  for (int32_t i = 0; i < x->rank; i++)
    if (in_axes[i]) norm[nn++] = x->dims[i];
  static const char *const names[2] = {"gamma", "beta"};
  for (int p = 0; p < 2; p++) {
    const mil_type *g = op_type(c, names[p]);
    if (!g || g->rank < 0) continue;
    bool ok = g->rank == nn;
    for (int32_t i = 0; ok && i < nn; i++)
      if (g->dims[i].size >= 0 && norm[i].size >= 0 && g->dims[i].size != norm[i].size) ok = false;
    if (!ok)
      return op_fail(c, "input '%s' must have the shape of x's normalized axes %s, got %s", names[p],
                     op_tstr(c, op_tensor(c, x->dtype, nn, norm)), op_tstr(c, g));
  }
  return same_as_x(c);
}

static mil_status layer_norm_fold(mil_infer_ctx *c) {
  const mil_value *x = op_val(c, "x"), *gamma = op_val(c, "gamma"), *beta = op_val(c, "beta");
  if (!x || (op_has(c, "gamma") && !gamma) || (op_has(c, "beta") && !beta) || (op_has(c, "axes") && !op_val(c, "axes")) ||
      (op_has(c, "epsilon") && !op_val(c, "epsilon")))
    return MIL_OK;
  double eps = op_f64(c, "epsilon", 1e-5);
  mil_value *out = op_new_out_value(c, 0);
  if (!out) return MIL_OK;
  int32_t r = x->type->rank;
  bool in_axes[OP_MAX_RANK];
  if (layer_norm_axes(c, r, in_axes) != MIL_OK) return MIL_ERR_TYPE;
  /* group = flat index over the non-normalized axes, pos = flat index over the normalized ones */
  int64_t ngroups = 1, nper = 1;
  for (int32_t i = 0; i < r; i++) {
    if (in_axes[i]) nper *= x->type->dims[i].size;
    else ngroups *= x->type->dims[i].size;
  }
  double *sum = calloc((size_t)(ngroups ? ngroups : 1), sizeof *sum);
  double *sq = calloc((size_t)(ngroups ? ngroups : 1), sizeof *sq);
  int64_t *gid = malloc((size_t)(x->numel ? x->numel : 1) * sizeof *gid);
  int64_t *pid = malloc((size_t)(x->numel ? x->numel : 1) * sizeof *pid);
  if (!sum || !sq || !gid || !pid) {
    free(sum), free(sq), free(gid), free(pid);
    return MIL_ERR_NOMEM;
  }
  for (int64_t e = 0; e < x->numel; e++) {
    int64_t rem = e, g = 0, p = 0, gs = 1, ps = 1;
    for (int32_t i = r - 1; i >= 0; i--) {
      int64_t n = x->type->dims[i].size, coord = rem % n;
      rem /= n;
      if (in_axes[i]) p += coord * ps, ps *= n;
      else g += coord * gs, gs *= n;
    }
    gid[e] = g;
    pid[e] = p;
    sum[g] += mil_value_get_f64(x, e);
  }
  for (int64_t g = 0; g < ngroups; g++) sum[g] /= (double)nper; /* mean */
  for (int64_t e = 0; e < x->numel; e++) {
    double d = mil_value_get_f64(x, e) - sum[gid[e]];
    sq[gid[e]] += d * d;
  }
  for (int64_t e = 0; e < x->numel; e++) {
    double num = mil_value_get_f64(x, e) - sum[gid[e]];
    double den = sqrt(sq[gid[e]] / (double)nper + eps);
    double v = num / den * (gamma ? mil_value_get_f64(gamma, pid[e]) : 1.0) + (beta ? mil_value_get_f64(beta, pid[e]) : 0.0);
    mil_value_set_f64(out, e, v);
  }
  free(sum), free(sq), free(gid), free(pid);
  c->val[0] = out;
  return MIL_OK;
}

static mil_status layer_norm_defaults(mil_infer_ctx *c) {
  const mil_type *x = op_type(c, "x");
  if (!x || x->rank < 0 || x->rank > OP_MAX_RANK) return MIL_OK;
  int64_t axes[OP_MAX_RANK];
  for (int32_t i = 0; i < x->rank; i++) axes[i] = i;
  mil_status st = op_add_default_ints(c, "axes", axes, x->rank, false);
  return st != MIL_OK ? st : add_float_default(c, "epsilon", 1e-5);
}

/* ---------------- local_response_norm ---------------- */

static mil_status lrn_defaults(mil_infer_ctx *c) {
  mil_status st;
  if ((st = add_float_default(c, "alpha", 1e-4)) != MIL_OK) return st;
  if ((st = add_float_default(c, "beta", 0.75)) != MIL_OK) return st;
  return add_float_default(c, "k", 1.0);
}

/* ---------------- table ---------------- */

#define TN MIL_IK_TENSOR
#define K MIL_IF_CONST
#define O MIL_IF_OPTIONAL
#define F MIL_DTS_FLOAT
#define I32 MIL_DTS_INT32

static const mil_input_spec k_batch_norm13[] = {
    IN_SPEC("x", TN, F, "T", 0, NULL),           IN_SPEC("mean", TN, F, "T", K, NULL),
    IN_SPEC("variance", TN, F, "T", K, NULL),    IN_SPEC("gamma", TN, F, "T", K | O, "None"),
    IN_SPEC("beta", TN, F, "T", K | O, "None"),  IN_SPEC("epsilon", TN, F, NULL, K | O, "1e-5"),
};
static const mil_input_spec k_batch_norm17[] = {
    IN_SPEC("x", TN, F, "T", 0, NULL),           IN_SPEC("mean", TN, F, "U", K, NULL),
    IN_SPEC("variance", TN, F, "U", K, NULL),    IN_SPEC("gamma", TN, F, "U", K | O, "None"),
    IN_SPEC("beta", TN, F, "U", K | O, "None"),  IN_SPEC("epsilon", TN, F, "U", K | O, "1e-5"),
};
static const mil_input_spec k_instance_norm13[] = {
    IN_SPEC("x", TN, F, "T", 0, NULL),
    IN_SPEC("gamma", TN, F, "T", K | O, "None"),
    IN_SPEC("beta", TN, F, "T", K | O, "None"),
    IN_SPEC("epsilon", TN, F, NULL, K | O, "1e-5"),
};
static const mil_input_spec k_instance_norm17[] = {
    IN_SPEC("x", TN, F, "T", 0, NULL),
    IN_SPEC("gamma", TN, F, "U", K | O, "None"),
    IN_SPEC("beta", TN, F, "U", K | O, "None"),
    IN_SPEC("epsilon", TN, F, "U", K | O, "1e-5"),
};
static const mil_input_spec k_l2_norm13[] = {
    IN_SPEC("x", TN, F, "T", 0, NULL),
    IN_SPEC("epsilon", TN, F, NULL, K | O, "1e-6"),
};
static const mil_input_spec k_l2_norm17[] = {
    IN_SPEC("x", TN, F, "T", 0, NULL),
    IN_SPEC("epsilon", TN, F, "U", K | O, "1e-6"),
};
static const mil_input_spec k_layer_norm13[] = {
    IN_SPEC("x", TN, F, "T", 0, NULL),           IN_SPEC("axes", TN, I32, NULL, K | O, "range(x.rank)"),
    IN_SPEC("gamma", TN, F, "T", K | O, "None"), IN_SPEC("beta", TN, F, "T", K | O, "None"),
    IN_SPEC("epsilon", TN, F, NULL, K | O, "1e-5"),
};
static const mil_input_spec k_layer_norm17[] = {
    IN_SPEC("x", TN, F, "T", 0, NULL),           IN_SPEC("axes", TN, I32, NULL, K | O, "range(x.rank)"),
    IN_SPEC("gamma", TN, F, "U", K | O, "None"), IN_SPEC("beta", TN, F, "U", K | O, "None"),
    IN_SPEC("epsilon", TN, F, "U", K | O, "1e-5"),
};
static const mil_input_spec k_lrn13[] = {
    IN_SPEC("x", TN, F, "T", 0, NULL),          IN_SPEC("size", TN, I32, NULL, K, NULL),
    IN_SPEC("alpha", TN, F, NULL, K | O, "1e-4"), IN_SPEC("beta", TN, F, NULL, K | O, "0.75"),
    IN_SPEC("k", TN, F, NULL, K | O, "1.0"),
};
static const mil_input_spec k_lrn17[] = {
    IN_SPEC("x", TN, F, "T", 0, NULL),          IN_SPEC("size", TN, I32, NULL, K, NULL),
    IN_SPEC("alpha", TN, F, "U", K | O, "1e-4"), IN_SPEC("beta", TN, F, "U", K | O, "0.75"),
    IN_SPEC("k", TN, F, "U", K | O, "1.0"),
};

#define N_IN(a) (int32_t)(sizeof a / sizeof a[0])
#define ROW(ty, ver, spec, inf, fold, dflt, doc) {ty, ver, "normalization", spec, N_IN(spec), 1, inf, fold, dflt, doc}

const mil_op_def op_defs_normalization[] = {
    ROW("batch_norm", MIL_IOS13, k_batch_norm13, same_as_x, NULL, eps5_defaults,
        "normalizes x (N, C, *D) per channel with given mean and variance"),
    ROW("batch_norm", MIL_IOS17, k_batch_norm17, same_as_x, NULL, eps5_defaults,
        "batch_norm; the parameters may have another float dtype than x"),
    ROW("instance_norm", MIL_IOS13, k_instance_norm13, same_as_x, NULL, eps5_defaults,
        "normalizes each instance and channel over the spatial dims"),
    ROW("instance_norm", MIL_IOS17, k_instance_norm17, same_as_x, NULL, eps5_defaults,
        "instance_norm; the parameters may have another float dtype than x"),
    ROW("l2_norm", MIL_IOS13, k_l2_norm13, l2_norm_infer, l2_norm_fold, l2_norm_defaults,
        "divides x by the L2 norm of its last three axes"),
    ROW("l2_norm", MIL_IOS17, k_l2_norm17, l2_norm_infer, l2_norm_fold, l2_norm_defaults,
        "l2_norm; epsilon may have another float dtype than x"),
    ROW("layer_norm", MIL_IOS13, k_layer_norm13, layer_norm_infer, layer_norm_fold, layer_norm_defaults,
        "normalizes x over the given axes, then scales by gamma and shifts by beta"),
    ROW("layer_norm", MIL_IOS17, k_layer_norm17, layer_norm_infer, layer_norm_fold, layer_norm_defaults,
        "layer_norm; gamma, beta and epsilon may have another float dtype than x"),
    ROW("local_response_norm", MIL_IOS13, k_lrn13, same_as_x, NULL, lrn_defaults,
        "normalizes x (N, C, *D) over windows of `size` neighbouring channels"),
    ROW("local_response_norm", MIL_IOS17, k_lrn17, same_as_x, NULL, lrn_defaults,
        "local_response_norm; alpha, beta and k may have another float dtype than x"),
};
OP_FAMILY_COUNT(normalization);
