/* Op family "reduction" (coremltools ops/defs/iOS15/reduction.py and
 * iOS17/reduction.py): reduce_* over a set of axes (all axes when `axes` is
 * absent) and reduce_argmax / reduce_argmin over one axis.
 *
 *   %m: (2, 1, fp32)(Tensor) = reduce_mean(x=%x, axes=[1], keep_dims=True, name="m")    x: (2, 5, fp32)
 *   %s: (fp32)(Scalar) = reduce_sum(x=%x, axes=[0, 1], keep_dims=False, name="s")
 *   %i: (2,int32)(Tensor) = reduce_argmax(x=%x, axis=-1, keep_dims=False, name="i")
 *
 * A reduce_* whose result has no dims is a scalar; reduce_arg* always gives
 * a tensor (rank 0 when every dim is reduced). iOS17's reduce_arg* adds
 * output_dtype ("int32" or "uint16"). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ops/fold_internal.h"
#include "ops/ops_defaults.h"
#include "ops/ops_internal.h"

static const mil_input_spec k_axes_in[] = {
    IN_SPEC("x", MIL_IK_TENSOR, MIL_DTS_FLOAT_INT32, "T", 0, NULL),
    IN_SPEC("axes", MIL_IK_TENSOR, MIL_DTS_INT32, NULL, MIL_IF_CONST | MIL_IF_OPTIONAL, "None"),
    IN_SPEC("keep_dims", MIL_IK_TENSOR, MIL_DTS_BOOL, NULL, MIL_IF_CONST | MIL_IF_OPTIONAL, "False"),
};
static const mil_input_spec k_arg15_in[] = {
    IN_SPEC("x", MIL_IK_TENSOR, MIL_DTS_FLOAT_INT32, "T", 0, NULL),
    IN_SPEC("axis", MIL_IK_TENSOR, MIL_DTS_INT32, NULL, MIL_IF_CONST | MIL_IF_OPTIONAL, "-1"),
    IN_SPEC("keep_dims", MIL_IK_TENSOR, MIL_DTS_BOOL, NULL, MIL_IF_CONST | MIL_IF_OPTIONAL, "False"),
};
static const mil_input_spec k_arg17_in[] = {
    IN_SPEC("x", MIL_IK_TENSOR, MIL_DTS_FLOAT_INT32, "T", 0, NULL),
    IN_SPEC("axis", MIL_IK_TENSOR, MIL_DTS_INT32, NULL, MIL_IF_CONST | MIL_IF_OPTIONAL, "-1"),
    IN_SPEC("keep_dims", MIL_IK_TENSOR, MIL_DTS_BOOL, NULL, MIL_IF_CONST | MIL_IF_OPTIONAL, "False"),
    IN_SPEC("output_dtype", MIL_IK_TENSOR, MIL_DTS_STRING, NULL, MIL_IF_CONST | MIL_IF_OPTIONAL, "\"int32\""),
};

/* Marks in reduced[] the dims of a rank-r x that `axes` (or every dim when
 * absent) reduces, and computes the output dims the way coremltools does
 * (keep_dims: reduced dims become 1; otherwise the normalized axes are
 * popped in descending order, so a repeated axis pops twice). *dup tells
 * whether an axis repeats. Returns the output rank or -1 after recording an
 * error. */
static int32_t reduced_dims(mil_infer_ctx *c, const mil_type *x, bool *reduced, mil_dim *out, bool *dup) {
  int64_t axes[OP_MAX_RANK * 2];
  int32_t r = x->rank;
  int n;
  if (op_has(c, "axes")) {
    n = op_ints(c, "axes", axes, OP_MAX_RANK * 2);
    if (n < 0) return op_fail(c, "input 'axes' must be a known int32 vector of at most %d values", OP_MAX_RANK * 2), -1;
  } else {
    n = r;
    for (int32_t i = 0; i < r; i++) axes[i] = i;
  }
  bool keep = op_bool(c, "keep_dims", false);
  *dup = false;
  for (int32_t i = 0; i < r; i++) reduced[i] = false;
  for (int k = 0; k < n; k++) {
    int64_t a;
    if (!op_axis(axes[k], r, &a))
      return op_fail(c, "input 'axes' has axis %lld, out of range for x %s", (long long)axes[k], op_tstr(c, x)), -1;
    if (reduced[a]) *dup = true;
    reduced[a] = true;
    axes[k] = a;
  }
  int32_t k = r;
  for (int32_t i = 0; i < r; i++) out[i] = keep && reduced[i] ? op_dim(1) : x->dims[i];
  if (keep) return r;
  for (int i = 1; i < n; i++) /* descending */
    for (int j = i; j > 0 && axes[j - 1] < axes[j]; j--) {
      int64_t t = axes[j];
      axes[j] = axes[j - 1];
      axes[j - 1] = t;
    }
  for (int i = 0; i < n; i++) {
    if (axes[i] >= k)
      return op_fail(c, "input 'axes' repeats axis %lld and removes more dims than x %s has", (long long)axes[i],
                     op_tstr(c, x)), -1;
    for (int32_t j = (int32_t)axes[i]; j + 1 < k; j++) out[j] = out[j + 1];
    k--;
  }
  return k;
}

static mil_status infer_axes(mil_infer_ctx *c) {
  const mil_type *x = op_type(c, "x");
  if (x->rank < 0) {
    op_set_out(c, 0, op_tensor(c, x->dtype, -1, NULL));
    return MIL_OK;
  }
  if (x->rank > OP_MAX_RANK) return op_fail(c, "input 'x' has rank %d, more than supported (%d)", x->rank, OP_MAX_RANK);
  bool reduced[OP_MAX_RANK];
  mil_dim dims[OP_MAX_RANK];
  bool dup;
  int32_t k = reduced_dims(c, x, reduced, dims, &dup);
  if (k < 0) return MIL_ERR_TYPE;
  op_set_out(c, 0, k == 0 ? op_scalar(c, x->dtype) : op_tensor(c, x->dtype, k, dims));
  return MIL_OK;
}

static mil_status infer_arg(mil_infer_ctx *c) {
  const mil_type *x = op_type(c, "x");
  mil_dtype dt = MIL_DT_INT32;
  if (c->def->opset >= MIL_IOS17) {
    const char *s = op_str(c, "output_dtype", "int32");
    char low[16];
    size_t n = strlen(s);
    if (n >= sizeof low) n = sizeof low - 1;
    for (size_t i = 0; i < n; i++) low[i] = (char)(s[i] >= 'A' && s[i] <= 'Z' ? s[i] - 'A' + 'a' : s[i]);
    low[n] = 0;
    if (strcmp(low, "int32") == 0) dt = MIL_DT_INT32;
    else if (strcmp(low, "uint16") == 0) dt = MIL_DT_UINT16;
    else return op_fail(c, "input 'output_dtype' must be \"int32\" or \"uint16\", got \"%s\"", s);
  }
  if (x->rank < 0) {
    op_set_out(c, 0, op_tensor(c, dt, -1, NULL));
    return MIL_OK;
  }
  if (x->rank > OP_MAX_RANK) return op_fail(c, "input 'x' has rank %d, more than supported (%d)", x->rank, OP_MAX_RANK);
  const mil_type *at = op_type(c, "axis");
  if (at && at->rank != 0) return op_fail(c, "input 'axis' must be a scalar, got %s", op_tstr(c, at));
  int64_t axis = op_int(c, "axis", -1), a;
  if (!op_axis(axis, x->rank, &a))
    return op_fail(c, "input 'axis' (%lld) is out of range for x %s", (long long)axis, op_tstr(c, x));
  bool keep = op_bool(c, "keep_dims", false);
  mil_dim dims[OP_MAX_RANK];
  int32_t k = 0;
  for (int32_t i = 0; i < x->rank; i++) {
    if (i != a) dims[k++] = x->dims[i];
    else if (keep) dims[k++] = op_dim(1);
  }
  op_set_out(c, 0, op_tensor(c, dt, k, k ? dims : NULL));
  return MIL_OK;
}

/* ---- defaults ---- */

static mil_status defaults_axes(mil_infer_ctx *c) { return op_add_default_bool(c, "keep_dims", false); }

static mil_status defaults_arg(mil_infer_ctx *c) {
  mil_status st = op_add_default_int(c, "axis", -1);
  if (st == MIL_OK) st = op_add_default_bool(c, "keep_dims", false);
  if (st == MIL_OK && c->def->opset >= MIL_IOS17) st = op_add_default_str(c, "output_dtype", "int32");
  return st;
}

/* ---- value inference ---- */

typedef enum rop { R_L1, R_L2, R_LOG_SUM, R_LOG_SUM_EXP, R_MAX, R_MEAN, R_MIN, R_PROD, R_SUM, R_SUM_SQUARE } rop;

/* For every element of x, the flat index of the output element it reduces
 * into (reduced dims contribute nothing). */
static int64_t *out_index_map(const mil_value *x, const bool *reduced, int64_t *n_groups) {
  int64_t shape[OP_MAX_RANK], ostride[OP_MAX_RANK], idx[OP_MAX_RANK] = {0};
  int32_t r = fold_shape(x, shape);
  int64_t st = 1;
  for (int32_t k = r - 1; k >= 0; k--) {
    ostride[k] = reduced[k] ? 0 : st;
    if (!reduced[k]) st *= shape[k];
  }
  *n_groups = st;
  int64_t *map = malloc((size_t)(x->numel ? x->numel : 1) * sizeof *map);
  if (!map) return NULL;
  int64_t off = 0;
  for (int64_t i = 0; i < x->numel; i++) {
    map[i] = off;
    for (int32_t k = r - 1; k >= 0; k--) {
      idx[k]++;
      off += ostride[k];
      if (idx[k] < shape[k]) break;
      off -= ostride[k] * shape[k];
      idx[k] = 0;
    }
  }
  return map;
}

static bool dt_is_float_sum(mil_dtype dt) { return dt != MIL_DT_INT32; }

static mil_status fold_axes(mil_infer_ctx *c, rop k) {
  const mil_value *x = fold_tensor(c, "x");
  if (!x || x->numel == 0) return MIL_OK;
  mil_value *out = fold_out(c, 0);
  if (!out) return MIL_OK;
  const mil_type *xt = x->type;
  bool reduced[OP_MAX_RANK];
  mil_dim dims[OP_MAX_RANK];
  bool dup;
  if (xt->rank > OP_MAX_RANK || reduced_dims(c, xt, reduced, dims, &dup) < 0) return MIL_OK;
  if (dup) return MIL_OK; /* numpy rejects a repeated axis */
  int64_t groups;
  int64_t *map = out_index_map(x, reduced, &groups);
  double *acc = calloc((size_t)(groups ? groups : 1), sizeof *acc);
  double *mx = k == R_LOG_SUM_EXP ? malloc((size_t)(groups ? groups : 1) * sizeof *mx) : NULL;
  int64_t *iacc = calloc((size_t)(groups ? groups : 1), sizeof *iacc);
  /* float sum / mean: each group's elements, in order, summed into
   * FOLD_SUM_LANES interleaved double partial sums, combined pairwise at the
   * end (fold_sum_lanes: the interpreter's kernel sums the same way, so its
   * results are these bit for bit; the lanes vectorize there) */
  bool lanes = (k == R_SUM || k == R_MEAN) && dt_is_float_sum(x->type->dtype);
  double *lane = lanes ? calloc((size_t)(groups ? groups : 1) * FOLD_SUM_LANES, sizeof *lane) : NULL;
  int64_t *cnt = lanes ? calloc((size_t)(groups ? groups : 1), sizeof *cnt) : NULL;
  if (!map || !acc || !iacc || (k == R_LOG_SUM_EXP && !mx) || (lanes && (!lane || !cnt)) || groups != out->numel) {
    bool mem = map && acc && iacc && (!lanes || (lane && cnt));
    free(map), free(acc), free(mx), free(iacc), free(lane), free(cnt);
    return mem ? MIL_OK : MIL_ERR_NOMEM;
  }
  mil_dtype dt = xt->dtype;
  bool is_int = dt == MIL_DT_INT32;
  int64_t count = x->numel / groups;
  for (int64_t g = 0; g < groups; g++) {
    if (k == R_MAX || k == R_LOG_SUM_EXP) acc[g] = -INFINITY;
    if (k == R_MIN) acc[g] = INFINITY;
    if (k == R_PROD) acc[g] = 1, iacc[g] = 1;
  }
  if ((k == R_MAX || k == R_MIN) && is_int)
    for (int64_t i = 0; i < x->numel; i++) iacc[map[i]] = mil_value_get_i64(x, i);
  if (k == R_LOG_SUM_EXP) { /* first pass: the max of each group */
    for (int64_t i = 0; i < x->numel; i++) {
      double v = mil_value_get_f64(x, i);
      double *m = &acc[map[i]];
      if (!isnan(*m) && (isnan(v) || v > *m)) *m = v;
    }
    for (int64_t g = 0; g < groups; g++) mx[g] = acc[g], acc[g] = 0;
  }
  for (int64_t i = 0; i < x->numel; i++) {
    int64_t g = map[i];
    if (is_int) {
      int64_t v = mil_value_get_i64(x, i);
      switch (k) {
      case R_L1: iacc[g] += v < 0 ? -v : v; break;
      case R_L2: case R_SUM_SQUARE: iacc[g] += (int32_t)(uint32_t)((uint64_t)v * (uint64_t)v); break;
      case R_MAX: if (v > iacc[g]) iacc[g] = v; break;
      case R_MIN: if (v < iacc[g]) iacc[g] = v; break;
      case R_PROD: iacc[g] = (int64_t)((uint64_t)iacc[g] * (uint64_t)v); break;
      default: iacc[g] += v; break; /* sum, mean, log_sum */
      }
      continue;
    }
    double v = mil_value_get_f64(x, i);
    if (lanes) {
      lane[g * FOLD_SUM_LANES + (cnt[g]++ % FOLD_SUM_LANES)] += v;
      continue;
    }
    switch (k) {
    case R_L1: acc[g] += fabs(v); break;
    case R_L2: case R_SUM_SQUARE: acc[g] += fold_rnd(dt, v * v); break;
    case R_LOG_SUM_EXP: acc[g] += fold_rnd(dt, exp(fold_rnd(dt, v - mx[g]))); break;
    case R_MAX: if (!isnan(acc[g]) && (isnan(v) || v > acc[g])) acc[g] = v; break;
    case R_MIN: if (!isnan(acc[g]) && (isnan(v) || v < acc[g])) acc[g] = v; break;
    case R_PROD: /* numpy multiplies halves in float */
      acc[g] = fold_rnd(dt == MIL_DT_FP16 ? MIL_DT_FP32 : dt, acc[g] * v);
      break;
    default: acc[g] += v; break;
    }
  }
  for (int64_t g = 0; lanes && g < groups; g++) acc[g] = fold_sum_lanes(lane + g * FOLD_SUM_LANES);
  free(lane), free(cnt);
  for (int64_t g = 0; g < groups; g++) {
    if (is_int) {
      int64_t s = iacc[g];
      switch (k) {
      case R_L2: fold_store_f64(out, g, sqrt((double)s)); break;
      case R_LOG_SUM: fold_store_f64(out, g, log((double)s)); break;
      case R_MEAN: fold_store_f64(out, g, (double)s / (double)count); break;
      case R_LOG_SUM_EXP: fold_store_f64(out, g, NAN); break; /* not reached: int inputs take the float path below */
      default: mil_value_set_i64(out, g, s); break;
      }
      continue;
    }
    double s = fold_rnd(dt, acc[g]), r;
    switch (k) {
    case R_L2: r = sqrt(s); break;
    case R_LOG_SUM: r = log(s); break;
    case R_LOG_SUM_EXP: r = fold_rnd(dt, log(s)) + mx[g]; break;
    case R_MEAN: r = fold_rnd(dt == MIL_DT_FP16 ? MIL_DT_FP32 : dt, acc[g]) / (double)count; break;
    default: r = s; break;
    }
    mil_value_set_f64(out, g, fold_rnd(dt, r));
  }
  free(map), free(acc), free(mx), free(iacc);
  c->val[0] = out;
  return MIL_OK;
}

#define FOLD_FN(name, kind) \
  static mil_status fold_##name(mil_infer_ctx *c) { return fold_axes(c, kind); }
FOLD_FN(l1_norm, R_L1)
FOLD_FN(l2_norm, R_L2)
FOLD_FN(log_sum, R_LOG_SUM)
FOLD_FN(max, R_MAX)
FOLD_FN(mean, R_MEAN)
FOLD_FN(min, R_MIN)
FOLD_FN(prod, R_PROD)
FOLD_FN(sum, R_SUM)
FOLD_FN(sum_square, R_SUM_SQUARE)
#undef FOLD_FN

/* log_sum_exp of int32 x is computed in float64 by numpy, then truncated. */
static mil_status fold_log_sum_exp(mil_infer_ctx *c) {
  const mil_value *x = fold_tensor(c, "x");
  if (x && x->type->dtype == MIL_DT_INT32) return MIL_OK; /* rare; left to run time */
  return fold_axes(c, R_LOG_SUM_EXP);
}

/* argmax / argmin along one axis: index of the first extreme value (the
 * first NaN when there is one, like numpy). */
static mil_status fold_arg(mil_infer_ctx *c, bool is_max) {
  const mil_value *x = fold_tensor(c, "x");
  if (!x || x->numel == 0) return MIL_OK;
  mil_value *out = fold_out(c, 0);
  if (!out) return MIL_OK;
  int64_t shape[OP_MAX_RANK], axis;
  int32_t rank = fold_shape(x, shape);
  if (rank == 0 || !op_axis(op_int(c, "axis", -1), rank, &axis)) return MIL_OK;
  int64_t outer = 1, inner = 1, n = shape[axis];
  for (int32_t k = 0; k < axis; k++) outer *= shape[k];
  for (int32_t k = (int32_t)axis + 1; k < rank; k++) inner *= shape[k];
  for (int64_t o = 0; o < outer; o++)
    for (int64_t in = 0; in < inner; in++) {
      int64_t base = o * n * inner + in, best = 0;
      double bv = mil_value_get_f64(x, base);
      for (int64_t j = 1; j < n && !isnan(bv); j++) {
        double v = mil_value_get_f64(x, base + j * inner);
        if (isnan(v) || (is_max ? v > bv : v < bv)) best = j, bv = v;
      }
      mil_value_set_i64(out, o * inner + in, best);
    }
  c->val[0] = out;
  return MIL_OK;
}

static mil_status fold_argmax(mil_infer_ctx *c) { return fold_arg(c, true); }
static mil_status fold_argmin(mil_infer_ctx *c) { return fold_arg(c, false); }

#define RED(name, doc) \
  {"reduce_" #name, MIL_IOS13, "reduction", k_axes_in, 3, 1, infer_axes, fold_##name, defaults_axes, doc}

const mil_op_def op_defs_reduction[] = {
    {"reduce_argmax", MIL_IOS13, "reduction", k_arg15_in, 3, 1, infer_arg, fold_argmax, defaults_arg,
     "index of the largest value along axis (int32)"},
    {"reduce_argmax", MIL_IOS17, "reduction", k_arg17_in, 4, 1, infer_arg, fold_argmax, defaults_arg,
     "index of the largest value along axis (output_dtype int32 or uint16)"},
    {"reduce_argmin", MIL_IOS13, "reduction", k_arg15_in, 3, 1, infer_arg, fold_argmin, defaults_arg,
     "index of the smallest value along axis (int32)"},
    {"reduce_argmin", MIL_IOS17, "reduction", k_arg17_in, 4, 1, infer_arg, fold_argmin, defaults_arg,
     "index of the smallest value along axis (output_dtype int32 or uint16)"},
    RED(l1_norm, "sum of |x| over axes"),
    RED(l2_norm, "sqrt of the sum of x^2 over axes"),
    RED(log_sum, "log of the sum over axes"),
    RED(log_sum_exp, "log of the sum of exp(x) over axes (computed stably)"),
    RED(max, "maximum over axes"),
    RED(mean, "mean over axes"),
    RED(min, "minimum over axes"),
    RED(prod, "product over axes"),
    RED(sum, "sum over axes"),
    RED(sum_square, "sum of x^2 over axes"),
};
OP_FAMILY_COUNT(reduction);
