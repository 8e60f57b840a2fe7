/* ONNX normalizations: BatchNormalization, InstanceNormalization,
 * LayerNormalization, GroupNormalization (18: per-group scale, 21: per
 * channel), LRN, MeanVarianceNormalization, RMSNormalization (23).
 * batch_norm / instance_norm / layer_norm / local_response_norm when the
 * parameters are known (as coremltools' torch frontend), decomposed into
 * reduce_mean / sub / mul / rsqrt otherwise. */
#include <string.h>

#include "onnx/import/import_internal.h"

/* (x - mean(x, axes)) / sqrt(var(x, axes) + eps) */
static mil_var *normalize(onnx_ctx *c, mil_var *x, int32_t k, const int64_t *axes, double eps) {
  mil_dtype dt = onnx_dtype(x);
  mil_var *mean = ONNX_OP(c, "reduce_mean", A("x", x), K("axes", onnx_i32s(c, k, axes)), K("keep_dims", onnx_bool(c, true)));
  mil_var *d = ONNX_OP(c, "sub", A("x", x), A("y", mean));
  mil_var *var = ONNX_OP(c, "reduce_mean", A("x", ONNX_OP(c, "mul", A("x", d), A("y", d))), K("axes", onnx_i32s(c, k, axes)),
                         K("keep_dims", onnx_bool(c, true)));
  mil_var *den = ONNX_OP(c, "sqrt", A("x", ONNX_OP(c, "add", A("x", var), K("y", onnx_fscalar(c, dt, eps)))));
  return ONNX_OP(c, "real_div", A("x", d), A("y", den));
}

/* v (C) reshaped to (C, 1, ...) for a rank-`rank` NC... tensor. */
static mil_var *per_channel(onnx_ctx *c, mil_var *v, int32_t rank) {
  int64_t axes[16];
  for (int32_t i = 0; i < rank - 2; i++) axes[i] = i + 1;
  return rank > 2 ? ONNX_OP(c, "expand_dims", A("x", v), K("axes", onnx_i32s(c, rank - 2, axes))) : v;
}

static mil_status conv_batch_norm(onnx_ctx *c, onnx_node *n) {
  mil_var *x = onnx_req(c, n, 0), *s = onnx_req(c, n, 1), *b = onnx_req(c, n, 2), *m = onnx_req(c, n, 3),
          *v = onnx_req(c, n, 4);
  if (!x || !s || !b || !m || !v) return MIL_ERR_INVALID;
  double eps = onnx_attr_f(n, "epsilon", 1e-5f);
  mil_dtype dt = onnx_dtype(x);
  int32_t rank = onnx_rank(x);
  if (onnx_attr_i(n, "training_mode", 0) || onnx_out_used(n, 1)) {
    /* training mode (14+): the batch's statistics normalize; the running
     * ones move by momentum: r * momentum + batch * (1 - momentum) */
    if (n->opset < 14) return ONNX_UNSUP(c, "training outputs before opset 14");
    if (rank < 2) return onnx_fail(c, MIL_ERR_INVALID, "input must have rank >= 2");
    int64_t axes[MIL_INTERP_MAX_RANK_ONNX];
    int32_t k = 0;
    for (int32_t i = 0; i < rank; i++)
      if (i != 1) axes[k++] = i;
    double mom = onnx_attr_f(n, "momentum", 0.9f);
    mil_var *mean = ONNX_OP(c, "reduce_mean", A("x", x), K("axes", onnx_i32s(c, k, axes)), K("keep_dims", onnx_bool(c, true)));
    mil_var *d = ONNX_OP(c, "sub", A("x", x), A("y", mean));
    mil_var *var = ONNX_OP(c, "reduce_mean", A("x", ONNX_OP(c, "mul", A("x", d), A("y", d))), K("axes", onnx_i32s(c, k, axes)),
                           K("keep_dims", onnx_bool(c, true)));
    mil_var *den = ONNX_OP(c, "sqrt", A("x", ONNX_OP(c, "add", A("x", var), K("y", onnx_fscalar(c, dt, eps)))));
    mil_var *y = ONNX_OP(c, "add", A("x", ONNX_OP(c, "mul", A("x", ONNX_OP(c, "real_div", A("x", d), A("y", den))), A("y", per_channel(c, s, rank)))),
                         A("y", per_channel(c, b, rank)));
    mil_var *bm = ONNX_OP(c, "reshape", A("x", mean), K("shape", onnx_i32s(c, 1, (int64_t[]){-1})));
    mil_var *bv = ONNX_OP(c, "reshape", A("x", var), K("shape", onnx_i32s(c, 1, (int64_t[]){-1})));
    mil_var *rm = ONNX_OP(c, "add", A("x", ONNX_OP(c, "mul", A("x", m), K("y", onnx_fscalar(c, dt, mom)))),
                          A("y", ONNX_OP(c, "mul", A("x", bm), K("y", onnx_fscalar(c, dt, 1 - mom)))));
    mil_var *rv = ONNX_OP(c, "add", A("x", ONNX_OP(c, "mul", A("x", v), K("y", onnx_fscalar(c, dt, mom)))),
                          A("y", ONNX_OP(c, "mul", A("x", bv), K("y", onnx_fscalar(c, dt, 1 - mom)))));
    mil_status st = onnx_set_out(c, n, 0, y);
    if (st == MIL_OK) st = onnx_set_out(c, n, 1, rm);
    if (st == MIL_OK) st = onnx_set_out(c, n, 2, rv);
    return st;
  }
  mil_var *r;
  if (s->val && b->val && m->val && v->val && rank >= 3)
    r = ONNX_OP(c, "batch_norm", A("x", x), A("mean", m), A("variance", v), A("gamma", s), A("beta", b),
                K("epsilon", onnx_fscalar(c, dt, eps)));
  else {
    if (rank < 2) return onnx_fail(c, MIL_ERR_INVALID, "input must have rank >= 2");
    mil_var *den = ONNX_OP(c, "sqrt", A("x", ONNX_OP(c, "add", A("x", v), K("y", onnx_fscalar(c, dt, eps)))));
    mil_var *scale = per_channel(c, ONNX_OP(c, "real_div", A("x", s), A("y", den)), rank);
    mil_var *shift = per_channel(c, ONNX_OP(c, "sub", A("x", b), A("y", ONNX_OP(c, "mul", A("x", m),
                                                                       A("y", ONNX_OP(c, "real_div", A("x", s), A("y", den)))))), rank);
    r = ONNX_OP(c, "add", A("x", ONNX_OP(c, "mul", A("x", x), A("y", scale))), A("y", shift));
  }
  return onnx_set_out(c, n, 0, r);
}

static mil_status conv_instance_norm(onnx_ctx *c, onnx_node *n) {
  mil_var *x = onnx_req(c, n, 0), *s = onnx_req(c, n, 1), *b = onnx_req(c, n, 2);
  if (!x || !s || !b) return MIL_ERR_INVALID;
  double eps = onnx_attr_f(n, "epsilon", 1e-5f);
  int32_t rank = onnx_rank(x);
  if (rank < 3) return onnx_fail(c, MIL_ERR_INVALID, "input must have rank >= 3");
  if (rank == 4 && s->val && b->val)
    return onnx_set_out(c, n, 0, ONNX_OP(c, "instance_norm", A("x", x), A("gamma", s), A("beta", b),
                                         K("epsilon", onnx_fscalar(c, onnx_dtype(x), eps))));
  int64_t axes[16];
  for (int32_t i = 2; i < rank; i++) axes[i - 2] = i;
  mil_var *r = normalize(c, x, rank - 2, axes, eps);
  r = ONNX_OP(c, "mul", A("x", r), A("y", per_channel(c, s, rank)));
  return onnx_set_out(c, n, 0, ONNX_OP(c, "add", A("x", r), A("y", per_channel(c, b, rank))));
}

static mil_status conv_layer_norm(onnx_ctx *c, onnx_node *n) {
  mil_var *x = onnx_req(c, n, 0), *s = onnx_req(c, n, 1), *b = onnx_in(n, 2);
  if (!x || !s) return MIL_ERR_INVALID;
  int32_t rank = onnx_rank(x);
  int64_t axis = onnx_attr_i(n, "axis", -1);
  if (!onnx_axis(&axis, rank)) return onnx_fail(c, MIL_ERR_INVALID, "axis out of range");
  double eps = onnx_attr_f(n, "epsilon", 1e-5f);
  int64_t axes[16];
  int32_t k = rank - (int32_t)axis;
  for (int32_t i = 0; i < k; i++) axes[i] = axis + i;
  mil_dtype dt = onnx_dtype(x);
  bool stats = onnx_out_used(n, 1) || onnx_out_used(n, 2);
  bool exact = !stats && s->val && (!b || b->val) && onnx_rank(s) == k;
  for (int32_t i = 0; exact && i < k; i++) exact = s->type->dims[i].size == x->type->dims[axis + i].size;
  if (exact && b) exact = mil_type_equal(b->type, s->type);
  mil_var *r;
  if (exact) {
    r = b ? ONNX_OP(c, "layer_norm", A("x", x), K("axes", onnx_i32s(c, k, axes)), A("gamma", s), A("beta", b),
                    K("epsilon", onnx_fscalar(c, dt, eps)))
          : ONNX_OP(c, "layer_norm", A("x", x), K("axes", onnx_i32s(c, k, axes)), A("gamma", s),
                    K("epsilon", onnx_fscalar(c, dt, eps)));
  } else if (stats) {
    /* Mean and InvStdDev are outputs too: the steps spelled out */
    mil_var *mean = ONNX_OP(c, "reduce_mean", A("x", x), K("axes", onnx_i32s(c, k, axes)), K("keep_dims", onnx_bool(c, true)));
    mil_var *d = ONNX_OP(c, "sub", A("x", x), A("y", mean));
    mil_var *var = ONNX_OP(c, "reduce_mean", A("x", ONNX_OP(c, "mul", A("x", d), A("y", d))),
                           K("axes", onnx_i32s(c, k, axes)), K("keep_dims", onnx_bool(c, true)));
    mil_var *inv = ONNX_OP(c, "real_div", K("x", onnx_fscalar(c, dt, 1)),
                           A("y", ONNX_OP(c, "sqrt", A("x", ONNX_OP(c, "add", A("x", var), K("y", onnx_fscalar(c, dt, eps)))))));
    r = ONNX_OP(c, "mul", A("x", ONNX_OP(c, "mul", A("x", d), A("y", inv))), A("y", s));
    if (b && r) r = ONNX_OP(c, "add", A("x", r), A("y", b));
    mil_status st = onnx_set_out(c, n, 1, mean);
    if (st == MIL_OK) st = onnx_set_out(c, n, 2, inv);
    if (st != MIL_OK) return st;
  } else {
    r = ONNX_OP(c, "mul", A("x", normalize(c, x, k, axes, eps)), A("y", s));
    if (b && r) r = ONNX_OP(c, "add", A("x", r), A("y", b));
  }
  return onnx_set_out(c, n, 0, r);
}

/* GroupNormalization: reshape (N, G, -1), normalize over the last axis,
 * reshape back, then scale and shift per channel (21) or per group (18). */
static mil_status conv_group_norm(onnx_ctx *c, onnx_node *n) {
  mil_var *x = onnx_req(c, n, 0), *s = onnx_req(c, n, 1), *b = onnx_req(c, n, 2);
  if (!x || !s || !b) return MIL_ERR_INVALID;
  int64_t G = onnx_attr_i(n, "num_groups", 0);
  double eps = onnx_attr_f(n, "epsilon", 1e-5f);
  int32_t rank = onnx_rank(x);
  if (rank < 3 || G <= 0) return onnx_fail(c, MIL_ERR_INVALID, "needs rank >= 3 and num_groups > 0");
  int64_t C = x->type->dims[1].size;
  if (C < 0) return ONNX_UNSUP(c, "a symbolic channel count");
  mil_var *shape = onnx_shape_of(c, x);
  mil_var *g = ONNX_OP(c, "reshape", A("x", x), K("shape", onnx_i32s(c, 3, (int64_t[]){0, G, -1})));
  g = normalize(c, g, 1, (int64_t[]){2}, eps);
  mil_var *sc = s, *sh = b;
  if (n->opset < 21 && C != G) {
    /* per-group parameters repeated over the channels of each group */
    int64_t rep[2] = {1, C / G};
    sc = ONNX_OP(c, "reshape", A("x", ONNX_OP(c, "tile", A("x", ONNX_OP(c, "expand_dims", A("x", s), K("axes", onnx_i32s(c, 1, (int64_t[]){1})))),
                                               K("reps", onnx_i32s(c, 2, rep)))), K("shape", onnx_i32s(c, 1, &C)));
    sh = ONNX_OP(c, "reshape", A("x", ONNX_OP(c, "tile", A("x", ONNX_OP(c, "expand_dims", A("x", b), K("axes", onnx_i32s(c, 1, (int64_t[]){1})))),
                                               K("reps", onnx_i32s(c, 2, rep)))), K("shape", onnx_i32s(c, 1, &C)));
  }
  mil_var *r = ONNX_OP(c, "reshape", A("x", g), A("shape", shape));
  r = ONNX_OP(c, "mul", A("x", r), A("y", per_channel(c, sc, rank)));
  return onnx_set_out(c, n, 0, ONNX_OP(c, "add", A("x", r), A("y", per_channel(c, sh, rank))));
}

static mil_status conv_lrn(onnx_ctx *c, onnx_node *n) {
  mil_var *x = onnx_req(c, n, 0);
  if (!x) return MIL_ERR_INVALID;
  mil_dtype dt = onnx_dtype(x);
  return onnx_set_out(c, n, 0, ONNX_OP(c, "local_response_norm", A("x", x), K("size", onnx_i32(c, onnx_attr_i(n, "size", 1))),
                                       K("alpha", onnx_fscalar(c, dt, onnx_attr_f(n, "alpha", 1e-4f))),
                                       K("beta", onnx_fscalar(c, dt, onnx_attr_f(n, "beta", 0.75f))),
                                       K("k", onnx_fscalar(c, dt, onnx_attr_f(n, "bias", 1)))));
}

static mil_status conv_mvn(onnx_ctx *c, onnx_node *n) {
  mil_var *x = onnx_req(c, n, 0);
  if (!x) return MIL_ERR_INVALID;
  const int64_t *a;
  int32_t k = onnx_attr_ints(n, "axes", &a);
  int64_t dflt[3] = {0, 2, 3};
  if (k < 0) k = 3, a = dflt;
  return onnx_set_out(c, n, 0, normalize(c, x, k, a, 1e-9));
}

/* RMSNormalization: x / sqrt(mean(x^2, axes from axis) + eps) * scale. */
static mil_status conv_rms_norm(onnx_ctx *c, onnx_node *n) {
  mil_var *x = onnx_req(c, n, 0), *s = onnx_req(c, n, 1);
  if (!x || !s) return MIL_ERR_INVALID;
  int32_t rank = onnx_rank(x);
  int64_t axis = onnx_attr_i(n, "axis", -1);
  if (!onnx_axis(&axis, rank)) return onnx_fail(c, MIL_ERR_INVALID, "axis out of range");
  int64_t axes[16];
  int32_t k = rank - (int32_t)axis;
  for (int32_t i = 0; i < k; i++) axes[i] = axis + i;
  mil_dtype dt = onnx_dtype(x);
  mil_var *ms = ONNX_OP(c, "reduce_mean", A("x", ONNX_OP(c, "mul", A("x", x), A("y", x))), K("axes", onnx_i32s(c, k, axes)),
                        K("keep_dims", onnx_bool(c, true)));
  mil_var *den = ONNX_OP(c, "sqrt", A("x", ONNX_OP(c, "add", A("x", ms), K("y", onnx_fscalar(c, dt, onnx_attr_f(n, "epsilon", 1e-5f))))));
  mil_var *r = ONNX_OP(c, "real_div", A("x", x), A("y", den));
  return onnx_set_out(c, n, 0, ONNX_OP(c, "mul", A("x", r), A("y", s)));
}

const onnx_op_entry onnx_ops_normalization[] = {
    {"BatchNormalization", "", 1, 0, conv_batch_norm, "batch_norm"},
    {"InstanceNormalization", "", 1, 0, conv_instance_norm, "instance_norm"},
    /* before opset 17: ONNX Runtime's contrib LayerNormalization (ai.onnx 1),
     * which its optimizer writes into exports of older opsets; same meaning */
    {"LayerNormalization", "", 1, 16, conv_layer_norm, "layer_norm"},
    {"LayerNormalization", "", 17, 0, conv_layer_norm, "layer_norm"},
    {"GroupNormalization", "", 18, 0, conv_group_norm, "reshape, reduce_mean, sub, mul, sqrt, real_div, add"},
    {"LRN", "", 1, 0, conv_lrn, "local_response_norm"},
    {"MeanVarianceNormalization", "", 9, 0, conv_mvn, "reduce_mean, sub, mul, sqrt, real_div"},
    {"RMSNormalization", "", 23, 0, conv_rms_norm, "mul, reduce_mean, add, sqrt, real_div"},
    {NULL, NULL, 0, 0, NULL, NULL},
};
