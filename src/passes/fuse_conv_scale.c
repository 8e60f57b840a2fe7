/* common::fuse_conv_scale — fold a constant mul / real_div after conv or
 * conv_transpose into the convolution's weight and bias.
 *
 *   %c: (1, 2, 6, 6, fp32)(Tensor) = conv(x=%x, weight=%w, bias=%b, strides=%s, pad_type=%pt, pad=%p, dilations=%dl, groups=%g, name="c")
 *   %k: (2, 1, 1, fp32)*(Tensor) = const(val=[[[2.0]], [[0.5]]], name="k")
 *   %y: (1, 2, 6, 6, fp32)(Tensor) = mul(x=%c, y=%k, name="y")
 *
 * becomes
 *
 *   %y_weight_0: (2, 3, 3, 3, fp32)*(Tensor) = const(val=<w scaled per channel>, name="y_weight_0")
 *   %y_bias_0: (2,fp32)*(Tensor) = const(val=<b * k>, name="y_bias_0")
 *   %y: (1, 2, 6, 6, fp32)(Tensor) = conv(x=%x, weight=%y_weight_0, bias=%y_bias_0, strides=%s, ..., name="y")
 *   %k: ... (left in place, dead)
 *
 * The scale is a scalar (a scalar var, a 0-d tensor, or a (1,) tensor) or
 * a tensor of Cout elements shaped (Cout, 1, ..) with rank(weight) - 1 dims
 * or (1, Cout, 1, ..) with rank(weight) dims. real_div divides by it
 * (scale = 1 / scale first). The products are computed in numpy's dtypes
 * and cast to the weight's dtype; a missing bias counts as zeros.
 *
 * Conditions: the conv output is not an output of its block and is read by
 * exactly one op, a mul or real_div with a known other operand; the weight
 * (and the bias when present) is known. For conv_transpose with a vector
 * scale only 1-D and 2-D kernels are handled, as in coremltools.
 * Difference from coremltools: real_div(x=<const>, y=<conv>) is left
 * alone; coremltools folds it as if it were real_div(x=<conv>, y=<const>),
 * which changes the result.
 *
 * Mirrors coremltools/converters/mil/mil/passes/defs/optimize_conv.py
 * (fuse_conv_scale).
 */
#include <stdlib.h>
#include <string.h>

#include "passes/fuse_util_internal.h"

static int oom(pass_fuse_ctx *c) {
  mil_diag_error(c->d, MIL_ERR_NOMEM, "%s: out of memory", c->pass);
  return -(int)MIL_ERR_NOMEM;
}

static int try_fuse(pass_fuse_ctx *c, mil_op *conv, mil_op *sop) {
  bool is_div = strcmp(sop->type, "real_div") == 0;
  bool deconv = strcmp(conv->type, "conv_transpose") == 0;
  mil_var *sx = mil_op_input_var(sop, "x"), *sy = mil_op_input_var(sop, "y");
  if (!sx || !sy || (!sx->val && !sy->val)) return 0;
  mil_var *svar = sx->val ? sx : sy;
  if (is_div && svar != sy) return 0; /* const / conv is not a scale */
  bool nomem = false;
  pass_np s = {0}, b = {0}, nb = {0}, one = {0};
  double *f = NULL;
  int r = 0;
  if (!pass_np_from_value(&s, svar->val, &nomem)) goto done;
  bool scalar = true;
  if (!s.is_scalar) {
    if (s.rank == 0) s.weak = true;          /* .tolist(): a Python number */
    else if (s.rank == 1 && s.shape[0] == 1) { /* scale[0]: a numpy scalar */
      s.rank = 0;
      s.is_scalar = true;
    } else scalar = false;
  }
  mil_var *weight = mil_op_input_var(conv, "weight");
  const mil_value *wval = weight ? weight->val : NULL;
  if (!pass_weight_numeric(wval)) goto done;
  mil_dtype wdt = wval->type->dtype;
  int32_t wrank = wval->type->rank;
  const mil_value *gv = pass_input_value(conv, "groups");
  int64_t groups = gv && gv->kind == MIL_VAL_TENSOR && gv->numel == 1 ? mil_value_get_i64(gv, 0) : 1;
  pass_wrows L;
  if (!pass_wrows_conv(wval->type, deconv, groups, &L)) goto done;
  int64_t cout = L.cout;
  if (!scalar) {
    if (s.n != cout) goto done;
    if (s.rank == wrank) {
      if (s.shape[1] != cout) goto done;
    } else if (s.rank == wrank - 1) {
      if (s.shape[0] != cout) goto done;
    } else {
      goto done;
    }
    if (deconv && wrank > 4) goto done;
  }
  if (is_div) {
    /* 1.0 / scale: a Python float divided by the scale */
    int k = 0;
    if (pass_np_full(&one, s.dt, 0, NULL, 1.0)) {
      one.weak = true;
      pass_np q;
      k = pass_np_binary(&q, &one, &s, '/');
      if (k > 0) {
        q.is_scalar = s.is_scalar;
        q.weak = s.weak;
        pass_np_free(&s);
        s = q;
      }
    }
    if (k <= 0) {
      nomem = true;
      goto done;
    }
  }
  if (!mil_op_find_input(conv, "bias")) {
    if (!pass_np_full(&b, wdt, 1, &cout, 0)) {
      nomem = true;
      goto done;
    }
  } else {
    if (!pass_np_from_value(&b, pass_input_value(conv, "bias"), &nomem)) goto done;
    for (int64_t i = 0; i < b.n; i++) b.v[i] = pass_np_round(b.v[i], wdt);
    b.dt = wdt;
  }
  if (!scalar) {
    s.rank = 1; /* np.reshape(scale, (Cout)) */
    s.shape[0] = cout;
  }
  int k = pass_np_binary(&nb, &b, &s, '*');
  if (k <= 0) {
    nomem = k < 0;
    goto done;
  }
  if (!pass_np_same_shape(&nb, &b)) goto done; /* coremltools asserts the bias keeps its shape */
  for (int64_t i = 0; i < nb.n; i++) nb.v[i] = pass_np_round(nb.v[i], wdt);
  /* conv_weight * scale (per channel: conv_weight[i] * scale[i]) in the
   * promoted dtype, a Python number taking the weight's */
  pass_np e = {.dt = wdt};
  mil_dtype dt = pass_np_result_dtype(&e, &s);
  int64_t nf = scalar ? 1 : cout;
  if (scalar) pass_wrows_all(L.n, &L);
  f = malloc((size_t)nf * sizeof *f);
  if (!f) {
    nomem = true;
    goto done;
  }
  for (int64_t i = 0; i < nf; i++) f[i] = s.weak ? pass_np_round(s.v[i], dt) : s.v[i];
  mil_value *wv = pass_weight_scale(c->p, wval, &L, f, dt);
  mil_value *bv = wv ? pass_np_to_value(c->p, &nb, wv->type->dtype) : NULL;
  if (!bv) {
    nomem = true;
    goto done;
  }
  r = pass_fuse_conv_replace(c, conv, sop, sop->outputs[0]->name, true, wv, bv);
done:
  free(f);
  pass_np *all[] = {&s, &b, &nb, &one};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) pass_np_free(all[i]);
  return nomem ? oom(c) : r;
}

static int fuse(pass_fuse_ctx *c, mil_op *op) {
  if ((strcmp(op->type, "conv") != 0 && strcmp(op->type, "conv_transpose") != 0) || op->n_outputs < 1) return 0;
  mil_var *out = op->outputs[0];
  if (pass_fuse_is_output_of(out, op->block)) return 0;
  mil_op *child = pass_only_child_op(out);
  if (!child || child->n_outputs != 1 || (strcmp(child->type, "mul") != 0 && strcmp(child->type, "real_div") != 0))
    return 0;
  return try_fuse(c, op, child);
}

/* The op types fuse() can rewrite at (it returns 0 at any other). */
static const char *const k_types[] = {"conv", "conv_transpose", NULL};

static mil_status run(mil_program *p, const mil_pass_options *o, mil_pass_stats *st, mil_diag *d) {
  (void)o;
  mil_status s = pass_infer_marked_values(p, d);
  if (s != MIL_OK) return s;
  pass_fuse_ctx c = {.p = p, .d = d, .pass = "fuse_conv_scale", .lazy_names = true};
  s = pass_fuse_run_types(&c, fuse, true, false, k_types, NULL, st);
  pass_fuse_ctx_free(&c);
  return s;
}

static const char *const k_anchors[] = {"conv", "conv_transpose", NULL};
const mil_pass_def pass_def_fuse_conv_scale = {
    "common::fuse_conv_scale", "fold a constant mul/real_div after conv or conv_transpose into its weight and bias",
    NULL, 0, run, k_anchors};
