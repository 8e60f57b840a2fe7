/* Kernels of the scatter / gather family without value inference
 * (coremltools ops/defs/iOS15/scatter_gather.py, iOS16, iOS17) and one_hot
 * (tensor_operation.py):
 *
 *   gather_nd    out[B, I, rest] = x[B, indices[B, I, :], rest]
 *                (batch_dims leading axes B shared by x and indices)
 *   scatter      data with updates[.., i, ..] combined into
 *                data[.., indices[i], ..] along axis
 *   scatter_nd   data with updates[I, rest] combined into
 *                data[indices[I, :], rest]
 *   one_hot      on_value where the position along `axis` equals the index
 *                (an index outside [0, depth) gives only off_value)
 *
 * Modes: update (later updates win), add, sub, mul, div, max, min.
 * Negative indices count from the end; indices outside [-n, n) are errors.
 * gather, gather_along_axis and scatter_along_axis run through value
 * inference. */
#include <math.h>
#include <string.h>

#include "interp/interp_internal.h"

typedef enum smode { S_UPDATE, S_ADD, S_SUB, S_MUL, S_DIV, S_MAX, S_MIN } smode;

static bool read_mode(mil_infer_ctx *c, smode *m) {
  static const char *names[] = {"update", "add", "sub", "mul", "div", "max", "min"};
  const char *s = op_str(c, "mode", "add");
  for (int i = 0; i < 7; i++)
    if (strcmp(s, names[i]) == 0) {
      *m = (smode)i;
      return true;
    }
  interp_fail(c, MIL_ERR_INVALID, "input 'mode' must be update, add, sub, mul, div, max or min, got \"%s\"", s);
  return false;
}

static bool fix_index(mil_infer_ctx *c, const char *what, int64_t *i, int64_t n) {
  if (*i < -n || *i >= n) {
    interp_fail(c, MIL_ERR_INVALID, "%s index %lld is out of range for a dimension of size %lld", what,
                (long long)*i, (long long)n);
    return false;
  }
  if (*i < 0) *i += n;
  return true;
}

/* out[oi] (mode)= upd[ui], in the output's dtype. */
static void combine(mil_value *out, int64_t oi, const mil_value *upd, int64_t ui, smode m) {
  bool fl = mil_dtype_is_float(out->type->dtype);
  if (m == S_UPDATE) {
    if (fl) mil_value_set_f64(out, oi, mil_value_get_f64(upd, ui));
    else mil_value_set_i64(out, oi, mil_value_get_i64(upd, ui));
    return;
  }
  if (fl) {
    double a = mil_value_get_f64(out, oi), b = mil_value_get_f64(upd, ui), r = a;
    switch (m) {
    case S_ADD: r = a + b; break;
    case S_SUB: r = a - b; break;
    case S_MUL: r = a * b; break;
    case S_DIV: r = a / b; break;
    case S_MAX: r = a > b ? a : b; break;
    case S_MIN: r = a < b ? a : b; break;
    default: break;
    }
    mil_value_set_f64(out, oi, r);
  } else {
    int64_t a = mil_value_get_i64(out, oi), b = mil_value_get_i64(upd, ui), r = a;
    switch (m) {
    case S_ADD: r = (int64_t)((uint64_t)a + (uint64_t)b); break;
    case S_SUB: r = (int64_t)((uint64_t)a - (uint64_t)b); break;
    case S_MUL: r = (int64_t)((uint64_t)a * (uint64_t)b); break;
    case S_DIV: r = b ? a / b : 0; break;
    case S_MAX: r = a > b ? a : b; break;
    case S_MIN: r = a < b ? a : b; break;
    default: break;
    }
    mil_value_set_i64(out, oi, r);
  }
}

static mil_value *copy_of(interp_run *r, mil_infer_ctx *c, const mil_value *data) {
  mil_value *out = interp_new_value(r, c->out[0]);
  if (out && out->nbytes == data->nbytes && out->type->dtype == data->type->dtype) {
    memcpy(mil_value_data_mut(out), mil_value_data(data), data->nbytes);
    return out;
  }
  return NULL;
}

static mil_status k_gather_nd(interp_run *r, mil_infer_ctx *c) {
  const mil_value *x = interp_in(c, "x"), *ind = interp_in(c, "indices");
  if (!x || !ind) return MIL_ERR_INVALID;
  int64_t xs[MIL_INTERP_MAX_RANK], is[MIL_INTERP_MAX_RANK];
  int32_t xr = interp_vshape(x, xs), ir = interp_vshape(ind, is);
  int64_t bd = op_int(c, "batch_dims", 0);
  if (ir < 1 || bd < 0 || bd >= ir || bd > xr) return INTERP_DECLINE;
  int64_t K = is[ir - 1];
  if (K < 0 || bd + K > xr) return INTERP_DECLINE;
  int64_t nb = 1, ni = 1, rest = 1;
  for (int64_t i = 0; i < bd; i++) nb *= xs[i];
  for (int32_t i = (int32_t)bd; i < ir - 1; i++) ni *= is[i];
  for (int32_t i = (int32_t)(bd + K); i < xr; i++) rest *= xs[i];
  mil_value *out = interp_new_value(r, c->out[0]);
  if (!out || out->numel != nb * ni * rest) return out ? INTERP_DECLINE : interp_nomem(c);
  size_t es = mil_dtype_size(x->type->dtype);
  if (!es) return INTERP_DECLINE;
  int64_t xbatch = x->numel / (nb ? nb : 1);
  char *d = mil_value_data_mut(out);
  for (int64_t b = 0; b < nb; b++)
    for (int64_t i = 0; i < ni; i++) {
      int64_t off = 0;
      for (int64_t k = 0; k < K; k++) {
        int64_t v = mil_value_get_i64(ind, (b * ni + i) * K + k);
        if (!fix_index(c, "gather_nd", &v, xs[bd + k])) return MIL_ERR_INVALID;
        off = off * xs[bd + k] + v;
      }
      memcpy(d + ((b * ni + i) * rest) * es, (const char *)mil_value_data(x) + (b * xbatch + off * rest) * es, (size_t)rest * es);
    }
  c->val[0] = out;
  return MIL_OK;
}

static mil_status k_scatter(interp_run *r, mil_infer_ctx *c) {
  const mil_value *data = interp_in(c, "data"), *ind = interp_in(c, "indices"), *upd = interp_in(c, "updates");
  smode m;
  if (!data || !ind || !upd) return MIL_ERR_INVALID;
  if (!read_mode(c, &m)) return MIL_ERR_INVALID;
  int64_t ds[MIL_INTERP_MAX_RANK];
  int32_t dr = interp_vshape(data, ds);
  int64_t axis = op_int(c, "axis", 0);
  if (!op_axis(axis, dr, &axis) || ind->type->rank != 1) return INTERP_DECLINE;
  int64_t n = ind->numel, outer = 1, inner = 1;
  for (int32_t i = 0; i < axis; i++) outer *= ds[i];
  for (int32_t i = (int32_t)axis + 1; i < dr; i++) inner *= ds[i];
  if (upd->numel != outer * n * inner) return INTERP_DECLINE;
  mil_value *out = copy_of(r, c, data);
  if (!out) return INTERP_DECLINE;
  for (int64_t i = 0; i < n; i++) {
    int64_t k = mil_value_get_i64(ind, i);
    if (!fix_index(c, "scatter", &k, ds[axis])) return MIL_ERR_INVALID;
    for (int64_t o = 0; o < outer; o++)
      for (int64_t j = 0; j < inner; j++)
        combine(out, (o * ds[axis] + k) * inner + j, upd, (o * n + i) * inner + j, m);
  }
  c->val[0] = out;
  return MIL_OK;
}

static mil_status k_scatter_nd(interp_run *r, mil_infer_ctx *c) {
  const mil_value *data = interp_in(c, "data"), *ind = interp_in(c, "indices"), *upd = interp_in(c, "updates");
  smode m;
  if (!data || !ind || !upd) return MIL_ERR_INVALID;
  if (!read_mode(c, &m)) return MIL_ERR_INVALID;
  int64_t ds[MIL_INTERP_MAX_RANK], is[MIL_INTERP_MAX_RANK];
  int32_t dr = interp_vshape(data, ds), ir = interp_vshape(ind, is);
  if (ir < 1) return INTERP_DECLINE;
  int64_t K = is[ir - 1];
  if (K < 0 || K > dr) return INTERP_DECLINE;
  int64_t ni = K ? ind->numel / K : interp_numel(ir - 1, is), rest = 1;
  for (int32_t i = (int32_t)K; i < dr; i++) rest *= ds[i];
  if (upd->numel != ni * rest) return INTERP_DECLINE;
  mil_value *out = copy_of(r, c, data);
  if (!out) return INTERP_DECLINE;
  for (int64_t i = 0; i < ni; i++) {
    int64_t off = 0;
    for (int64_t k = 0; k < K; k++) {
      int64_t v = mil_value_get_i64(ind, i * K + k);
      if (!fix_index(c, "scatter_nd", &v, ds[k])) return MIL_ERR_INVALID;
      off = off * ds[k] + v;
    }
    for (int64_t j = 0; j < rest; j++) combine(out, off * rest + j, upd, i * rest + j, m);
  }
  c->val[0] = out;
  return MIL_OK;
}

static mil_status k_one_hot(interp_run *r, mil_infer_ctx *c) {
  const mil_value *ind = interp_in(c, "indices");
  if (!ind) return MIL_ERR_INVALID;
  int64_t os[MIL_INTERP_MAX_RANK];
  int32_t orank;
  if (!interp_shape(c->out[0], os, &orank) || orank < 1) return INTERP_DECLINE;
  int64_t axis = op_int(c, "axis", -1);
  if (!op_axis(axis, orank, &axis)) return INTERP_DECLINE;
  int64_t depth = os[axis], outer = 1, inner = 1;
  for (int32_t i = 0; i < axis; i++) outer *= os[i];
  for (int32_t i = (int32_t)axis + 1; i < orank; i++) inner *= os[i];
  if (ind->numel != outer * inner) return INTERP_DECLINE;
  double on = op_f64(c, "on_value", 1.0), off = op_f64(c, "off_value", 0.0);
  mil_value *out = interp_new_value(r, c->out[0]);
  if (!out) return interp_nomem(c);
  for (int64_t e = 0; e < out->numel; e++) mil_value_set_f64(out, e, off);
  for (int64_t o = 0; o < outer; o++)
    for (int64_t j = 0; j < inner; j++) {
      int64_t k = mil_value_get_i64(ind, o * inner + j);
      /* an index outside [0, depth) gives a row of off_value, as tf.one_hot does */
      if (k >= 0 && k < depth) mil_value_set_f64(out, (o * depth + k) * inner + j, on);
    }
  c->val[0] = out;
  return MIL_OK;
}

const interp_kernel interp_kernels_gather[] = {
    {"gather_nd", k_gather_nd, 0},
    {"one_hot", k_one_hot, 0},
    {"scatter", k_scatter, 0},
    {"scatter_nd", k_scatter_nd, 0},
};
INTERP_FAMILY_COUNT(gather);
