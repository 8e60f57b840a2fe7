/* conv_transpose (family "conv"; its rows are in conv.c's table): type
 * inference and default inputs. Mirrors coremltools ops/defs/iOS15/conv.py
 * (conv_transpose) and iOS17/conv.py. */
#include <string.h>

#include "ops/conv_internal.h"
#include "ops/ops_defaults.h"

#define SIZE_LIMIT (INT64_C(1) << 30) /* keeps s*(in-1) + (k-1)*d + 1 far from int64 overflow */

mil_status op_conv_transpose_infer(mil_infer_ctx *c) {
  const mil_type *x = op_type(c, "x"), *w = op_type(c, "weight");
  if (x->rank < 0 || w->rank < 0) {
    op_set_out(c, 0, op_tensor(c, x->dtype, -1, NULL));
    return MIL_OK;
  }
  if (x->rank < 3) return op_fail(c, "input 'x' must have rank 3 to 5 (N, C_in, *D_in), got %s", op_tstr(c, x));
  int k = x->rank - 2;
  if (k > OP_MAX_SPATIAL) return op_fail(c, "input 'x' has too many spatial dimensions: %s", op_tstr(c, x));
  if (w->rank != x->rank)
    return op_fail(c, "input 'weight' must be rank %d like x (C_in, C_out/groups, *K), got %s", x->rank,
                   op_tstr(c, w));
  int64_t groups = 1;
  if (op_has(c, "groups")) {
    const mil_value *g = op_val(c, "groups");
    if (!g || g->kind != MIL_VAL_TENSOR || g->numel != 1 || g->type->dtype == MIL_DT_STRING)
      return op_fail(c, "input 'groups' must be a known int32 scalar, got %s", op_tstr(c, op_type(c, "groups")));
    groups = mil_value_get_i64(g, 0);
  }
  if (groups <= 0 || groups > SIZE_LIMIT) return op_fail(c, "input 'groups' must be positive, got %lld", (long long)groups);
  /* C_out = weight.shape[1] * groups */
  mil_dim cout = w->dims[1].size >= 0 && w->dims[1].size <= SIZE_LIMIT ? op_dim(w->dims[1].size * groups)
                                                                         : op_dim_sym(c);
  const mil_type *b = op_type(c, "bias");
  if (b && (b->rank != 1 || (b->dims[0].size >= 0 && cout.size >= 0 && b->dims[0].size != cout.size)))
    return op_fail(c, "input 'bias' must have one value per output channel (C_out = weight.shape[1] * groups = %lld), "
                      "got %s",
                   (long long)cout.size, op_tstr(c, b));
  mil_dim n = x->dims[0];
  if (op_has(c, "output_shape")) {
    const mil_value *v = op_val(c, "output_shape");
    if (!v || v->kind != MIL_VAL_TENSOR || v->type->dtype == MIL_DT_STRING)
      return op_fail(c, "input 'output_shape' must be a known int32 vector");
    if (v->numel < 2 || v->numel > OP_MAX_RANK)
      return op_fail(c, "input 'output_shape' must hold (N, C_out, *D_out), got %lld values", (long long)v->numel);
    mil_dim dims[OP_MAX_RANK];
    for (int64_t i = 0; i < v->numel; i++) {
      int64_t d = mil_value_get_i64(v, i);
      if (d < 0) return op_fail(c, "input 'output_shape' has a negative size %lld at %lld", (long long)d, (long long)i);
      dims[i] = op_dim(d);
    }
    if (n.size >= 0 && dims[0].size != n.size)
      return op_fail(c, "input 'output_shape' must start with the batch size %lld of x, got %lld", (long long)n.size,
                     (long long)dims[0].size);
    if (cout.size >= 0 && dims[1].size != cout.size)
      return op_fail(c, "input 'output_shape'[1] must equal C_out = %lld, got %lld", (long long)cout.size,
                     (long long)dims[1].size);
    op_set_out(c, 0, op_tensor(c, x->dtype, (int32_t)v->numel, dims));
    return MIL_OK;
  }
  int64_t strides[OP_MAX_SPATIAL], dil[OP_MAX_SPATIAL], pad[2 * OP_MAX_SPATIAL];
  mil_status st;
  if ((st = op_window_ints(c, "strides", k, 1, strides)) != MIL_OK) return st;
  if ((st = op_window_ints(c, "dilations", k, 1, dil)) != MIL_OK) return st;
  const char *pad_type = "valid";
  if (op_has(c, "pad_type")) {
    pad_type = op_str(c, "pad_type", NULL);
    if (!pad_type) return op_fail(c, "input 'pad_type' must be a known string");
  }
  int mode = strcmp(pad_type, "same") == 0 ? 0 : strcmp(pad_type, "valid") == 0 ? 1 : strcmp(pad_type, "custom") == 0 ? 2 : -1;
  if (mode < 0)
    return op_fail(c, "input 'pad_type' must be one of \"same\", \"valid\", \"custom\", got \"%s\"", pad_type);
  if (mode == 2 && (st = op_window_ints(c, "pad", 2 * k, 0, pad)) != MIL_OK) return st;
  mil_dim dims[OP_MAX_RANK];
  dims[0] = n;
  dims[1] = cout;
  for (int r = 0; r < k; r++) {
    int64_t s = strides[r], d = dil[r], kr = w->dims[2 + r].size, in = x->dims[2 + r].size;
    if (s <= 0 || s > SIZE_LIMIT) return op_fail(c, "input 'strides' must be positive, got %lld", (long long)s);
    if (d <= 0 || d > SIZE_LIMIT) return op_fail(c, "input 'dilations' must be positive, got %lld", (long long)d);
    if (in < 0 || kr < 0) {
      dims[2 + r] = op_dim_sym(c);
      continue;
    }
    if (in > SIZE_LIMIT || kr > SIZE_LIMIT) return op_fail(c, "spatial dimension %d is too large", r);
    int64_t ek = (kr - 1) * d + 1, o;
    if (mode == 0) o = s * in;
    else o = s * (in - 1) + ek;
    if (mode == 2) {
      if (pad[2 * r] < -SIZE_LIMIT || pad[2 * r] > SIZE_LIMIT || pad[2 * r + 1] < -SIZE_LIMIT ||
          pad[2 * r + 1] > SIZE_LIMIT)
        return op_fail(c, "input 'pad' value out of range for spatial dimension %d", r);
      o -= pad[2 * r] + pad[2 * r + 1];
    }
    if (o <= 0)
      return op_fail(c, "spatial dimension %d has invalid output size %lld (input %lld, effective kernel %lld, stride %lld)",
                     r, (long long)o, (long long)in, (long long)ek, (long long)s);
    dims[2 + r] = op_dim(o);
  }
  op_set_out(c, 0, op_tensor(c, x->dtype, x->rank, dims));
  return MIL_OK;
}

mil_status op_conv_transpose_defaults(mil_infer_ctx *c) {
  const mil_type *x = op_type(c, "x");
  if (!x || x->rank < 2 || x->rank - 2 > OP_MAX_SPATIAL) return MIL_OK;
  int k = x->rank - 2;
  int64_t ones[OP_MAX_SPATIAL], zeros[2 * OP_MAX_SPATIAL];
  for (int i = 0; i < 2 * k; i++) zeros[i] = 0;
  for (int i = 0; i < k; i++) ones[i] = 1;
  mil_status st;
  if ((st = op_add_default_ints(c, "pad", zeros, 2 * k, false)) != MIL_OK) return st;
  if ((st = op_add_default_str(c, "pad_type", "valid")) != MIL_OK) return st;
  if ((st = op_add_default_ints(c, "strides", ones, k, false)) != MIL_OK) return st;
  if ((st = op_add_default_ints(c, "dilations", ones, k, false)) != MIL_OK) return st;
  return op_add_default_int(c, "groups", 1);
}
