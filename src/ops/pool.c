/* Op family "pool": avg_pool, l2_pool, max_pool. Mirrors coremltools
 * ops/defs/iOS15/pool.py (class Pooling and its subclasses); the output
 * size rule is op_spatial_out (conv.c). */
#include <ctype.h>
#include <string.h>

#include "ops/conv_internal.h"
#include "ops/ops_defaults.h"

static mil_status pool_infer(mil_infer_ctx *c) {
  const mil_type *x = op_type(c, "x");
  if (x->rank < 0) {
    op_set_out(c, 0, op_tensor(c, x->dtype, -1, NULL));
    return MIL_OK;
  }
  if (x->rank < 3) return op_fail(c, "input 'x' must have rank 3 to 5 (N, C, *D_in), got %s", op_tstr(c, x));
  int k = x->rank - 2;
  if (k > OP_MAX_SPATIAL) return op_fail(c, "input 'x' has too many spatial dimensions: %s", op_tstr(c, x));
  if (strcmp(c->def->type, "l2_pool") == 0 && k > 2)
    return op_fail(c, "l2_pool supports 1 or 2 spatial dimensions, got %d (x is %s)", k, op_tstr(c, x));
  int64_t kernel[OP_MAX_SPATIAL], strides[OP_MAX_SPATIAL], pad[2 * OP_MAX_SPATIAL];
  mil_status st;
  const mil_value *ks = op_val(c, "kernel_sizes");
  if (!ks || ks->kind != MIL_VAL_TENSOR || ks->type->dtype == MIL_DT_STRING)
    return op_fail(c, "input 'kernel_sizes' must be a known int32 vector");
  if (ks->numel != k)
    return op_fail(c, "input 'kernel_sizes' must have %d values (one per spatial dimension of x %s), got %lld", k,
                   op_tstr(c, x), (long long)ks->numel);
  for (int i = 0; i < k; i++) {
    kernel[i] = mil_value_get_i64(ks, i);
    if (kernel[i] < 1) return op_fail(c, "input 'kernel_sizes' must be positive, got %lld", (long long)kernel[i]);
  }
  if ((st = op_window_ints(c, "strides", k, 1, strides)) != MIL_OK) return st;
  /* coremltools lower-cases the pad type here (and only here) */
  char pad_type[32] = "valid";
  if (op_has(c, "pad_type")) {
    const char *s = op_str(c, "pad_type", NULL);
    if (!s) return op_fail(c, "input 'pad_type' must be a known string");
    size_t l = strlen(s);
    if (l >= sizeof pad_type)
      return op_fail(c, "input 'pad_type' must be one of \"valid\", \"same\", \"custom\", \"same_lower\", got \"%s\"", s);
    for (size_t i = 0; i <= l; i++) pad_type[i] = (char)tolower((unsigned char)s[i]);
  }
  if (strcmp(pad_type, "valid") && strcmp(pad_type, "same") && strcmp(pad_type, "custom") &&
      strcmp(pad_type, "same_lower"))
    return op_fail(c, "input 'pad_type' must be one of \"valid\", \"same\", \"custom\", \"same_lower\", got \"%s\"",
                   op_str(c, "pad_type", ""));
  bool has_pad = op_has(c, "pad");
  if (has_pad && (st = op_window_ints(c, "pad", 2 * k, 0, pad)) != MIL_OK) return st;
  bool ceil_mode = false;
  if (op_has(c, "ceil_mode")) {
    const mil_value *v = op_val(c, "ceil_mode");
    if (!v || v->kind != MIL_VAL_TENSOR || v->numel != 1) return op_fail(c, "input 'ceil_mode' must be a known bool");
    ceil_mode = mil_value_get_i64(v, 0) != 0;
  }
  if (ceil_mode) {
    if (k > 2) return op_fail(c, "ceil_mode is only supported for 1-D or 2-D pooling, x is %s", op_tstr(c, x));
    if (strcmp(pad_type, "same") == 0) return op_fail(c, "ceil_mode must be False when pad_type is \"same\"");
    if (has_pad)
      for (int i = 0; i < k; i++)
        if (pad[2 * i] != pad[2 * i + 1])
          return op_fail(c, "padding must be symmetric when ceil_mode is True, got pad %lld and %lld for dimension %d",
                         (long long)pad[2 * i], (long long)pad[2 * i + 1], i);
  }
  /* the check reads the pad type as given, before lower-casing */
  if (c->opset == MIL_IOS15 && strcmp(op_str(c, "pad_type", ""), "same_lower") == 0)
    return op_fail(c, "pad_type \"same_lower\" is not supported by the iOS15 opset (needs iOS16 or newer)");
  mil_dim dims[OP_MAX_RANK];
  dims[0] = x->dims[0];
  dims[1] = x->dims[1];
  st = op_spatial_out(c, pad_type, k, x->dims + 2, kernel, strides, NULL, has_pad ? pad : NULL, ceil_mode, dims + 2);
  if (st != MIL_OK) return st;
  op_set_out(c, 0, op_tensor(c, x->dtype, x->rank, dims));
  return MIL_OK;
}

static mil_status pool_defaults(mil_infer_ctx *c) {
  const mil_type *x = op_type(c, "x");
  if (!x || x->rank < 2 || x->rank - 2 > OP_MAX_SPATIAL) return MIL_OK;
  int k = x->rank - 2;
  int64_t ones[OP_MAX_SPATIAL], zeros[2 * OP_MAX_SPATIAL];
  for (int i = 0; i < 2 * k; i++) zeros[i] = 0;
  for (int i = 0; i < k; i++) ones[i] = 1;
  mil_status st;
  if ((st = op_add_default_ints(c, "strides", ones, k, false)) != MIL_OK) return st;
  if ((st = op_add_default_ints(c, "pad", zeros, 2 * k, false)) != MIL_OK) return st;
  if ((st = op_add_default_bool(c, "ceil_mode", false)) != MIL_OK) return st;
  if (strcmp(c->def->type, "avg_pool") == 0) return op_add_default_bool(c, "exclude_padding_from_average", false);
  return MIL_OK;
}

#define TN MIL_IK_TENSOR
#define K MIL_IF_CONST
#define O MIL_IF_OPTIONAL
#define F MIL_DTS_FLOAT
#define I32 MIL_DTS_INT32
#define STR MIL_DTS_STRING
#define BOOL MIL_DTS_BOOL

#define POOL_SPEC                                                        \
  IN_SPEC("x", TN, F, "T", 0, NULL), IN_SPEC("kernel_sizes", TN, I32, NULL, K, NULL), \
      IN_SPEC("strides", TN, I32, NULL, K | O, "[1]*spatial_rank"),      \
      IN_SPEC("pad_type", TN, STR, NULL, K, NULL),                       \
      IN_SPEC("pad", TN, I32, NULL, K | O, "[0]*2*spatial_rank"),        \
      IN_SPEC("ceil_mode", TN, BOOL, NULL, K | O, "False")

static const mil_input_spec k_avg_pool[] = {
    IN_SPEC("exclude_padding_from_average", TN, BOOL, NULL, K | O, "False"),
    POOL_SPEC,
};
static const mil_input_spec k_pool[] = {POOL_SPEC};

#define N_IN(a) (int32_t)(sizeof a / sizeof a[0])

const mil_op_def op_defs_pool[] = {
    {"avg_pool", MIL_IOS13, "pool", k_avg_pool, N_IN(k_avg_pool), 1, pool_infer, NULL, pool_defaults,
     "average pooling over the spatial dims of x (N, C, *D_in)"},
    {"l2_pool", MIL_IOS13, "pool", k_pool, N_IN(k_pool), 1, pool_infer, NULL, pool_defaults,
     "L2-norm pooling over 1 or 2 spatial dims of x"},
    {"max_pool", MIL_IOS13, "pool", k_pool, N_IN(k_pool), 1, pool_infer, NULL, pool_defaults,
     "max pooling over the spatial dims of x (N, C, *D_in)"},
};
OP_FAMILY_COUNT(pool);
