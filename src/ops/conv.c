/* Op family "conv": conv, conv_quantized, conv_transpose (iOS13 and iOS17
 * variants). Mirrors coremltools ops/defs/iOS15/conv.py and iOS17/conv.py;
 * the spatial output-size rule mirrors ops/defs/_utils.py.
 *
 * Also home of two helpers other families use: the default-input consts
 * (ops_defaults.h) and the window arithmetic shared with pool.c
 * (conv_internal.h). conv_transpose's inference lives in conv_transpose.c. */
#include <stdio.h>
#include <string.h>


#include "ops/conv_internal.h"
#include "ops/ops_defaults.h"

/* ------------------------------------------------------------------ */
/* Default inputs as const ops (ops_defaults.h)                        */
/* ------------------------------------------------------------------ */

typedef struct name_probe {
  const char *name; /* interned candidate */
  bool taken;
} name_probe;

static int probe_op(mil_op *op, void *ud) {
  name_probe *np = ud;
  for (int32_t i = 0; i < op->n_outputs; i++)
    if (op->outputs[i]->name == np->name) {
      np->taken = true;
      return 1;
    }
  for (int32_t b = 0; b < op->n_blocks; b++)
    for (int32_t i = 0; i < op->blocks[b]->n_inputs; i++)
      if (op->blocks[b]->inputs[i]->name == np->name) {
        np->taken = true;
        return 1;
      }
  return 0;
}

static const mil_function *enclosing_function(const mil_op *op) {
  const mil_block *b = op->block;
  int guard = 0;
  while (b && !b->func && b->parent && guard++ < 10000) b = b->parent->block;
  return b ? b->func : NULL;
}

/* Whether `name` (interned) is already a var name in op's function. */
static bool name_taken(const mil_op *op, const char *name) {
  name_probe np = {name, false};
  const mil_function *f = enclosing_function(op);
  if (f) {
    for (int32_t i = 0; i < f->n_inputs; i++)
      if (f->inputs[i]->name == name) return true;
    for (int32_t s = 0; s < f->n_specs && !np.taken; s++) mil_block_walk(f->specs[s].block, probe_op, &np);
  } else {
    mil_block_walk(op->block, probe_op, &np);
  }
  return np.taken;
}

mil_status op_add_default_const(mil_infer_ctx *c, const char *input, const mil_value *v) {
  mil_op *op = c->op;
  if (op_has(c, input)) return MIL_OK;
  if (!v) return MIL_ERR_NOMEM;
  if (!op->block)
    return mil_diag_error(c->diag, MIL_ERR_INVALID,
                          "function '%s': op '%s' (%s): cannot add default input '%s': the op is not in a block",
                          c->func, op->name ? op->name : "?", op->type, input);
  char name[600];
  const char *interned = NULL;
  for (int k = 0; k < 1000000; k++) {
    snprintf(name, sizeof name, "%s_%s_%d", op->name ? op->name : op->type, input, k);
    /* a string never interned cannot be a var name: no need to walk the function */
    bool maybe_taken = mil_program_find_string(c->prog, name, (size_t)-1) != NULL;
    interned = mil_program_intern(c->prog, name, (size_t)-1);
    if (!interned) return MIL_ERR_NOMEM;
    if (!maybe_taken || !name_taken(op, interned)) break;
    interned = NULL;
  }
  if (!interned)
    return mil_diag_error(c->diag, MIL_ERR_INVALID, "function '%s': op '%s' (%s): no free name for default input '%s'",
                          c->func, op->name, op->type, input);
  mil_op *k = mil_const_new(c->prog, interned, v);
  if (!k) return MIL_ERR_NOMEM;
  mil_block_insert_before(op, k);
  mil_op_set_input(op, input, k->outputs[0]);
  mil_op_canonicalize_inputs(op);
  return MIL_OK;
}

mil_status op_add_default_ints(mil_infer_ctx *c, const char *input, const int64_t *vals, int n, bool scalar) {
  if (op_has(c, input)) return MIL_OK;
  int64_t shape[1] = {n};
  mil_value *v = mil_value_new_tensor(c->prog, MIL_DT_INT32, scalar ? 0 : 1, shape, scalar, NULL);
  if (!v) return MIL_ERR_NOMEM;
  for (int i = 0; i < (scalar ? 1 : n); i++) mil_value_set_i64(v, i, vals[i]);
  return op_add_default_const(c, input, v);
}

mil_status op_add_default_int(mil_infer_ctx *c, const char *input, int64_t v) {
  return op_add_default_ints(c, input, &v, 1, true);
}

mil_status op_add_default_f32(mil_infer_ctx *c, const char *input, double v) {
  if (op_has(c, input)) return MIL_OK;
  return op_add_default_const(c, input, mil_value_new_scalar_f64(c->prog, MIL_DT_FP32, v));
}

mil_status op_add_default_bool(mil_infer_ctx *c, const char *input, bool v) {
  if (op_has(c, input)) return MIL_OK;
  return op_add_default_const(c, input, mil_value_new_bool(c->prog, v));
}

mil_status op_add_default_str(mil_infer_ctx *c, const char *input, const char *s) {
  if (op_has(c, input)) return MIL_OK;
  return op_add_default_const(c, input, mil_value_new_string(c->prog, s));
}

/* ------------------------------------------------------------------ */
/* Window arithmetic (conv_internal.h)                                 */
/* ------------------------------------------------------------------ */

/* Largest magnitude accepted for sizes, strides, pads and dilations, so that
 * products below cannot overflow int64. */
#define WIN_LIMIT (INT64_C(1) << 31)

static int64_t floor_div(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) q--;
  return q;
}

mil_status op_spatial_out(mil_infer_ctx *c, const char *pad_type, int k, const mil_dim *in, const int64_t *kernel,
                          const int64_t *strides, const int64_t *dil, const int64_t *pad, bool ceil_mode,
                          mil_dim *out) {
  bool same = strcmp(pad_type, "same") == 0 || strcmp(pad_type, "same_lower") == 0;
  bool custom = strcmp(pad_type, "custom") == 0;
  bool valid = strcmp(pad_type, "valid") == 0;
  if (!same && !custom && !valid)
    return op_fail(c, "input 'pad_type' must be one of \"valid\", \"same\", \"same_lower\", \"custom\", got \"%s\"",
                   pad_type);
  for (int r = 0; r < k; r++) {
    int64_t s = strides[r], d = dil ? dil[r] : 1;
    if (s <= 0 || s > WIN_LIMIT) return op_fail(c, "input 'strides' must be positive, got %lld", (long long)s);
    if (d <= 0 || d > WIN_LIMIT) return op_fail(c, "input 'dilations' must be positive, got %lld", (long long)d);
    if (kernel[r] >= 0 && (kernel[r] < 1 || kernel[r] > WIN_LIMIT))
      return op_fail(c, "kernel size of spatial dimension %d must be positive, got %lld", r, (long long)kernel[r]);
    if (custom && pad && (pad[2 * r] < -WIN_LIMIT || pad[2 * r] > WIN_LIMIT || pad[2 * r + 1] < -WIN_LIMIT ||
                          pad[2 * r + 1] > WIN_LIMIT))
      return op_fail(c, "input 'pad' value out of range for spatial dimension %d", r);
    if (in[r].size < 0 || kernel[r] < 0) {
      out[r] = op_dim_sym(c);
      continue;
    }
    int64_t i = in[r].size;
    if (i > WIN_LIMIT) return op_fail(c, "spatial dimension %d of size %lld is too large", r, (long long)i);
    int64_t ek = (kernel[r] - 1) * d + 1;
    int64_t p = 0;
    if (same) {
      p = s * ((i + s - 1) / s) - i + ek - s;
      if (p < 0) p = 0;
    } else if (custom && pad) {
      p = pad[2 * r] + pad[2 * r + 1];
    }
    int64_t o;
    if (!ceil_mode) {
      o = floor_div(i + p - ek, s) + 1;
    } else {
      o = floor_div(i + p - ek + s - 1, s) + 1;
      if (2 * (o - 1) * s >= 2 * i + p && p > 0) o--;
    }
    if (o <= 0)
      return op_fail(c,
                     "spatial dimension %d has invalid output size %lld (input %lld, effective kernel %lld, stride "
                     "%lld, total padding %lld)",
                     r, (long long)o, (long long)i, (long long)ek, (long long)s, (long long)p);
    out[r] = op_dim(o);
  }
  return MIL_OK;
}

mil_status op_window_ints(mil_infer_ctx *c, const char *name, int n, int64_t dflt, int64_t *out) {
  if (!op_has(c, name)) {
    for (int i = 0; i < n; i++) out[i] = dflt;
    return MIL_OK;
  }
  const mil_value *v = op_val(c, name);
  if (!v || v->kind != MIL_VAL_TENSOR || v->type->dtype == MIL_DT_STRING)
    return op_fail(c, "input '%s' must be a known int32 vector, but its value is not known at compile time", name);
  if (v->numel != n)
    return op_fail(c, "input '%s' must have %d values (%s), got %s with %lld", name, n,
                   n == 1 ? "one per spatial dimension" : "matching the spatial rank", op_tstr(c, v->type),
                   (long long)v->numel);
  for (int i = 0; i < n; i++) out[i] = mil_value_get_i64(v, i);
  return MIL_OK;
}

/* ------------------------------------------------------------------ */
/* conv / conv_quantized                                               */
/* ------------------------------------------------------------------ */

/* Scalar int input (groups, ...) with a default; error when present but unknown. */
static mil_status known_int(mil_infer_ctx *c, const char *name, int64_t dflt, int64_t *out) {
  *out = dflt;
  if (!op_has(c, name)) return MIL_OK;
  const mil_value *v = op_val(c, name);
  if (!v || v->kind != MIL_VAL_TENSOR || v->numel != 1 || v->type->dtype == MIL_DT_STRING)
    return op_fail(c, "input '%s' must be a known int32 scalar, got %s", name, op_tstr(c, op_type(c, name)));
  *out = mil_value_get_i64(v, 0);
  return MIL_OK;
}

static mil_status known_str(mil_infer_ctx *c, const char *name, const char *dflt, const char **out) {
  *out = dflt;
  if (!op_has(c, name)) return MIL_OK;
  const char *s = op_str(c, name, NULL);
  if (!s) return op_fail(c, "input '%s' must be a known string, got %s", name, op_tstr(c, op_type(c, name)));
  *out = s;
  return MIL_OK;
}

static mil_status conv_infer(mil_infer_ctx *c) {
  const mil_type *x = op_type(c, "x"), *w = op_type(c, "weight");
  if (x->rank < 0 || w->rank < 0) {
    op_set_out(c, 0, op_tensor(c, x->dtype, -1, NULL));
    return MIL_OK;
  }
  if (x->rank < 3) return op_fail(c, "input 'x' must have rank 3 to 5 (N, C_in, *D_in), got %s", op_tstr(c, x));
  int k = x->rank - 2;
  if (k > OP_MAX_SPATIAL) return op_fail(c, "input 'x' has too many spatial dimensions: %s", op_tstr(c, x));
  if (w->rank != x->rank)
    return op_fail(c, "input 'weight' must be rank %d like x (C_out, C_in/groups, *K), got %s", x->rank,
                   op_tstr(c, w));
  mil_dim cout = w->dims[0];
  int64_t groups;
  mil_status st = known_int(c, "groups", 1, &groups);
  if (st != MIL_OK) return st;
  if (groups <= 0) return op_fail(c, "input 'groups' must be positive, got %lld", (long long)groups);
  const mil_type *b = op_type(c, "bias");
  if (b) {
    if (b->rank != 1 || (b->dims[0].size >= 0 && cout.size >= 0 && b->dims[0].size != cout.size))
      return op_fail(c, "input 'bias' must have one value per output channel (%s), got %s",
                     cout.size >= 0 ? "C_out = weight.shape[0]" : "C_out", op_tstr(c, b));
  }
  int64_t cin = x->dims[1].size;
  if (cin >= 0) {
    if (cin % groups != 0)
      return op_fail(c, "number of input channels %lld (x.shape[1]) is not divisible by groups %lld", (long long)cin,
                     (long long)groups);
    if (w->dims[1].size >= 0 && cin / groups != w->dims[1].size)
      return op_fail(c, "C_in / groups = %lld/%lld must equal weight.shape[1], got weight %s", (long long)cin,
                     (long long)groups, op_tstr(c, w));
  }
  int64_t strides[OP_MAX_SPATIAL], dil[OP_MAX_SPATIAL], pad[2 * OP_MAX_SPATIAL], kernel[OP_MAX_SPATIAL];
  if ((st = op_window_ints(c, "strides", k, 1, strides)) != MIL_OK) return st;
  if ((st = op_window_ints(c, "dilations", k, 1, dil)) != MIL_OK) return st;
  const char *pad_type;
  if ((st = known_str(c, "pad_type", "valid", &pad_type)) != MIL_OK) return st;
  if (c->opset == MIL_IOS15 && strcmp(pad_type, "same_lower") == 0)
    return op_fail(c, "pad_type \"same_lower\" is not supported by the iOS15 opset (needs iOS16 or newer)");
  bool custom = strcmp(pad_type, "custom") == 0;
  if (custom && (st = op_window_ints(c, "pad", 2 * k, 0, pad)) != MIL_OK) return st;
  bool dilated = false;
  for (int r = 0; r < k; r++) dilated |= dil[r] > 1;
  if (dilated && !op_is_const_descendant(op_in(c, "weight")) && !op_val(c, "weight"))
    return op_fail(c, "input 'weight' is computed at run time, and convolution with dynamic weights does not support "
                      "dilations > 1");
  for (int r = 0; r < k; r++) kernel[r] = w->dims[2 + r].size;
  mil_dim dims[OP_MAX_RANK];
  dims[0] = x->dims[0];
  dims[1] = cout;
  st = op_spatial_out(c, pad_type, k, x->dims + 2, kernel, strides, dil, custom ? pad : NULL, false, dims + 2);
  if (st != MIL_OK) return st;
  op_set_out(c, 0, op_tensor(c, x->dtype, x->rank, dims));
  return MIL_OK;
}

static mil_status conv_defaults(mil_infer_ctx *c) {
  const mil_type *x = op_type(c, "x");
  if (!x || x->rank < 2 || x->rank - 2 > OP_MAX_SPATIAL) return MIL_OK; /* inference reports the problem */
  int k = x->rank - 2;
  int64_t ones[OP_MAX_SPATIAL], zeros[2 * OP_MAX_SPATIAL];
  for (int i = 0; i < 2 * k; i++) zeros[i] = 0;
  for (int i = 0; i < k; i++) ones[i] = 1;
  mil_status st;
  if ((st = op_add_default_ints(c, "strides", ones, k, false)) != MIL_OK) return st;
  if ((st = op_add_default_str(c, "pad_type", "valid")) != MIL_OK) return st;
  if ((st = op_add_default_ints(c, "pad", zeros, 2 * k, false)) != MIL_OK) return st;
  if ((st = op_add_default_ints(c, "dilations", ones, k, false)) != MIL_OK) return st;
  if ((st = op_add_default_int(c, "groups", 1)) != MIL_OK) return st;
  if (strcmp(c->def->type, "conv_quantized") == 0) return op_add_default_int(c, "nbits", 8);
  return MIL_OK;
}

/* ------------------------------------------------------------------ */
/* Table                                                               */
/* ------------------------------------------------------------------ */

#define TN MIL_IK_TENSOR
#define K MIL_IF_CONST
#define O MIL_IF_OPTIONAL
#define F MIL_DTS_FLOAT
#define I32 MIL_DTS_INT32
#define STR MIL_DTS_STRING
#define U8 MIL_DTB(MIL_DT_UINT8)

static const mil_input_spec k_conv13[] = {
    IN_SPEC("x", TN, F, "T", 0, NULL),
    IN_SPEC("weight", TN, F, "T", 0, NULL),
    IN_SPEC("bias", TN, F, "T", K | O, "None"),
    IN_SPEC("strides", TN, I32, NULL, K | O, "[1]*spatial_rank"),
    IN_SPEC("pad_type", TN, STR, NULL, K | O, "\"valid\""),
    IN_SPEC("pad", TN, I32, NULL, K | O, "[0]*2*spatial_rank"),
    IN_SPEC("dilations", TN, I32, NULL, K | O, "[1]*spatial_rank"),
    IN_SPEC("groups", TN, I32, NULL, K | O, "1"),
};

static const mil_input_spec k_conv17[] = {
    IN_SPEC("x", TN, F, "T", 0, NULL),
    IN_SPEC("weight", TN, F, "U", 0, NULL),
    IN_SPEC("bias", TN, F, "U", O, "None"),
    IN_SPEC("strides", TN, I32, NULL, K | O, "[1]*spatial_rank"),
    IN_SPEC("pad_type", TN, STR, NULL, K | O, "\"valid\""),
    IN_SPEC("pad", TN, I32, NULL, K | O, "[0]*2*spatial_rank"),
    IN_SPEC("dilations", TN, I32, NULL, K | O, "[1]*spatial_rank"),
    IN_SPEC("groups", TN, I32, NULL, K | O, "1"),
};

static const mil_input_spec k_conv_quantized[] = {
    IN_SPEC("x", TN, F, "T", 0, NULL),
    IN_SPEC("weight", TN, U8, "U", 0, NULL),
    IN_SPEC("bias", TN, U8, "U", K | O, "None"),
    IN_SPEC("quantization_type", TN, STR, NULL, K, NULL),
    IN_SPEC("nbits", TN, I32, NULL, K | O, "8"),
    IN_SPEC("quant_scale", TN, F, "T", K, NULL),
    IN_SPEC("quant_bias", TN, F, "T", K, NULL),
    IN_SPEC("strides", TN, I32, NULL, K | O, "[1]*spatial_rank"),
    IN_SPEC("pad_type", TN, STR, NULL, K | O, "\"valid\""),
    IN_SPEC("pad", TN, I32, NULL, K | O, "[0]*2*spatial_rank"),
    IN_SPEC("dilations", TN, I32, NULL, K | O, "[1]*spatial_rank"),
    IN_SPEC("groups", TN, I32, NULL, K | O, "1"),
};

static const mil_input_spec k_conv_transpose13[] = {
    IN_SPEC("x", TN, F, "T", 0, NULL),
    IN_SPEC("weight", TN, F, "T", K, NULL),
    IN_SPEC("bias", TN, F, "T", K | O, "None"),
    IN_SPEC("pad", TN, I32, NULL, K | O, "[0]*2*spatial_rank"),
    IN_SPEC("output_shape", TN, I32, NULL, K | O, "None"),
    IN_SPEC("pad_type", TN, STR, NULL, K | O, "\"valid\""),
    IN_SPEC("strides", TN, I32, NULL, K | O, "[1]*spatial_rank"),
    IN_SPEC("dilations", TN, I32, NULL, K | O, "[1]*spatial_rank"),
    IN_SPEC("groups", TN, I32, NULL, K | O, "1"),
};

static const mil_input_spec k_conv_transpose17[] = {
    IN_SPEC("x", TN, F, "T", 0, NULL),
    IN_SPEC("weight", TN, F, "U", 0, NULL),
    IN_SPEC("bias", TN, F, "U", O, "None"),
    IN_SPEC("pad", TN, I32, NULL, K | O, "[0]*2*spatial_rank"),
    IN_SPEC("output_shape", TN, I32, NULL, K | O, "None"),
    IN_SPEC("pad_type", TN, STR, NULL, K | O, "\"valid\""),
    IN_SPEC("strides", TN, I32, NULL, K | O, "[1]*spatial_rank"),
    IN_SPEC("dilations", TN, I32, NULL, K | O, "[1]*spatial_rank"),
    IN_SPEC("groups", TN, I32, NULL, K | O, "1"),
};

#define N_IN(a) (int32_t)(sizeof a / sizeof a[0])

const mil_op_def op_defs_conv[] = {
    {"conv", MIL_IOS13, "conv", k_conv13, N_IN(k_conv13), 1, conv_infer, NULL, conv_defaults,
     "1-D/2-D/3-D convolution of x (N, C_in, *D_in) with weight (C_out, C_in/groups, *K)"},
    {"conv", MIL_IOS17, "conv", k_conv17, N_IN(k_conv17), 1, conv_infer, NULL, conv_defaults,
     "convolution; weight and bias may have another float dtype than x, and bias need not be const"},
    {"conv_quantized", MIL_IOS13, "conv", k_conv_quantized, N_IN(k_conv_quantized), 1, conv_infer, NULL,
     conv_defaults, "convolution with uint8 weights dequantized as W * quant_scale + quant_bias (experimental)"},
    {"conv_transpose", MIL_IOS13, "conv", k_conv_transpose13, N_IN(k_conv_transpose13), 1, op_conv_transpose_infer,
     NULL, op_conv_transpose_defaults, "transposed convolution of x (N, C_in, *D_in) with weight (C_in, C_out/groups, *K)"},
    {"conv_transpose", MIL_IOS17, "conv", k_conv_transpose17, N_IN(k_conv_transpose17), 1, op_conv_transpose_infer,
     NULL, op_conv_transpose_defaults,
     "transposed convolution; weight may be computed at run time and have another float dtype than x"},
};
OP_FAMILY_COUNT(conv);
