/* ONNX convolution and pooling: Conv, ConvTranspose, MaxPool, AveragePool,
 * LpPool (p = 2), GlobalAveragePool, GlobalMaxPool. ONNX pads
 * [x1_begin, x2_begin, ..., x1_end, x2_end, ...] become MIL's
 * [x1_begin, x1_end, x2_begin, x2_end, ...] with pad_type "custom";
 * auto_pad SAME_UPPER / SAME_LOWER / VALID become "same" / "same_lower" /
 * "valid" (coremltools' torch frontend: _convolution, max_pool2d,
 * avg_pool2d, adaptive pooling as reduce_mean / reduce_max). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "onnx/import/import_internal.h"

typedef struct conv_geom {
  int32_t sp;                          /* spatial rank */
  int64_t strides[8], dil[8], pad[16], kernel[8];
  const char *pad_type;
} conv_geom;

/* SAME_UPPER / SAME_LOWER as explicit pads when the spatial dims of x are
 * known (the "same_lower" pad type needs iOS16): total = max((ceil(in / s)
 * - 1) * s + (k - 1) * d + 1 - in, 0), the odd one at the end (UPPER) or
 * the beginning (LOWER). */
static void explicit_same(conv_geom *g, const mil_var *x, bool lower) {
  for (int32_t i = 0; i < g->sp; i++) {
    int64_t in = x->type->dims[2 + i].size;
    if (in < 0 || g->kernel[i] <= 0) return;
  }
  for (int32_t i = 0; i < g->sp; i++) {
    int64_t in = x->type->dims[2 + i].size, s = g->strides[i];
    int64_t out = (in + s - 1) / s;
    int64_t total = (out - 1) * s + (g->kernel[i] - 1) * g->dil[i] + 1 - in;
    if (total < 0) total = 0;
    g->pad[2 * i] = lower ? (total + 1) / 2 : total / 2;
    g->pad[2 * i + 1] = total - g->pad[2 * i];
  }
  g->pad_type = "custom";
}

/* Reads kernel_shape, strides, dilations, pads, auto_pad for `sp` spatial
 * dims. */
static mil_status geom(onnx_ctx *c, onnx_node *n, int32_t sp, conv_geom *g) {
  if (sp < 1 || sp > 8) return ONNX_UNSUP(c, "%d spatial dims", (int)sp);
  g->sp = sp;
  const int64_t *a;
  int32_t k;
  for (int32_t i = 0; i < sp; i++) g->strides[i] = 1, g->dil[i] = 1, g->kernel[i] = 0;
  for (int32_t i = 0; i < 2 * sp; i++) g->pad[i] = 0;
  if ((k = onnx_attr_ints(n, "strides", &a)) == sp)
    for (int32_t i = 0; i < sp; i++) g->strides[i] = a[i];
  if ((k = onnx_attr_ints(n, "dilations", &a)) == sp)
    for (int32_t i = 0; i < sp; i++) g->dil[i] = a[i];
  if ((k = onnx_attr_ints(n, "kernel_shape", &a)) == sp)
    for (int32_t i = 0; i < sp; i++) g->kernel[i] = a[i];
  if ((k = onnx_attr_ints(n, "pads", &a)) == 2 * sp)
    for (int32_t i = 0; i < sp; i++) g->pad[2 * i] = a[i], g->pad[2 * i + 1] = a[i + sp];
  /* bounded so that the size arithmetic below cannot overflow */
  const int64_t lim = (int64_t)1 << 20;
  for (int32_t i = 0; i < sp; i++) {
    if (g->strides[i] < 1 || g->strides[i] > lim || g->dil[i] < 1 || g->dil[i] > lim)
      return onnx_fail(c, MIL_ERR_INVALID, "strides and dilations must be in 1..%lld, got %lld and %lld", (long long)lim,
                       (long long)g->strides[i], (long long)g->dil[i]);
    if (g->kernel[i] < 0 || g->kernel[i] > lim)
      return onnx_fail(c, MIL_ERR_INVALID, "kernel_shape must be in 1..%lld, got %lld", (long long)lim, (long long)g->kernel[i]);
  }
  for (int32_t i = 0; i < 2 * sp; i++)
    if (g->pad[i] < 0 || g->pad[i] > lim)
      return onnx_fail(c, MIL_ERR_INVALID, "pads must be in 0..%lld, got %lld", (long long)lim, (long long)g->pad[i]);
  const char *ap = onnx_attr_s(c, n, "auto_pad", "NOTSET");
  g->pad_type = strcmp(ap, "SAME_UPPER") == 0  ? "same"
                : strcmp(ap, "SAME_LOWER") == 0 ? "same_lower"
                : strcmp(ap, "VALID") == 0      ? "valid"
                                                : "custom";
  if (strcmp(g->pad_type, "custom") != 0)
    for (int32_t i = 0; i < 2 * sp; i++) g->pad[i] = 0;
  if (strncmp(g->pad_type, "same", 4) == 0 && strcmp(n->op_type, "ConvTranspose") != 0 && n->in[0] && mil_type_is_tensor(n->in[0]->type) &&
      n->in[0]->type->rank == sp + 2) {
    if (g->kernel[0] == 0 && onnx_in(n, 1) && onnx_rank(onnx_in(n, 1)) == sp + 2)
      for (int32_t i = 0; i < sp; i++) g->kernel[i] = onnx_in(n, 1)->type->dims[2 + i].size;
    explicit_same(g, n->in[0], strcmp(g->pad_type, "same_lower") == 0);
  }
  return MIL_OK;
}

/* r + b (C) along the channel axis of a (N, C, spatial...) result */
static mil_var *add_channel_bias(onnx_ctx *c, mil_var *r, mil_var *b, int32_t sp) {
  int64_t axes[8];
  for (int32_t i = 0; i < sp; i++) axes[i] = i + 1;
  if (!r) return NULL;
  return ONNX_OP(c, "add", A("x", r), A("y", ONNX_OP(c, "expand_dims", A("x", b), K("axes", onnx_i32s(c, sp, axes)))));
}

/* x, the weight, the optional bias and the geometry of a Conv /
 * ConvTranspose node. */
static mil_status conv_inputs(onnx_ctx *c, onnx_node *n, mil_var **x, mil_var **w, mil_var **b, conv_geom *g) {
  *x = onnx_req(c, n, 0);
  *w = onnx_req(c, n, 1);
  *b = onnx_in(n, 2);
  if (!*x || !*w) return MIL_ERR_INVALID;
  return geom(c, n, onnx_rank(*x) - 2, g);
}

static mil_status conv_conv(onnx_ctx *c, onnx_node *n) {
  mil_var *x, *w, *b;
  conv_geom g;
  mil_status st = conv_inputs(c, n, &x, &w, &b, &g);
  if (st != MIL_OK) return st;
  int64_t groups = onnx_attr_i(n, "group", 1);
  bool bias_const = b && b->val;
  pass_barg args[9];
  int32_t na = 0;
  args[na++] = A("x", x);
  args[na++] = A("weight", w);
  if (bias_const) args[na++] = A("bias", b);
  args[na++] = K("strides", onnx_i32s(c, g.sp, g.strides));
  args[na++] = K("pad_type", onnx_str(c, g.pad_type));
  args[na++] = K("pad", onnx_i32s(c, 2 * g.sp, g.pad));
  args[na++] = K("dilations", onnx_i32s(c, g.sp, g.dil));
  args[na++] = K("groups", onnx_i32(c, groups));
  mil_var *r = onnx_op(c, "conv", na, args);
  if (b && !bias_const) r = add_channel_bias(c, r, b, g.sp); /* a computed bias */
  return onnx_set_out(c, n, 0, r);
}

/* A transposed convolution with a weight computed at run time (MIL's
 * conv_transpose takes a const weight): zeros inserted between the
 * elements of x (stride - 1 per gap), then a convolution with the weight
 * flipped and its in / out channels swapped per group, padded by
 * dilation * (kernel - 1) minus ONNX's pads (extra[] more at the end). */
/* v (static, rank `rank`) with f[i] - 1 zeros between the elements of
 * spatial axis 2 + i. */
static mil_var *insert_zeros(onnx_ctx *c, mil_var *v, int32_t rank, const int64_t *f) {
  mil_var *u = v;
  int64_t shape[10];
  for (int32_t i = 0; i < rank; i++) shape[i] = v->type->dims[i].size;
  for (int32_t i = 0; i < rank - 2 && u; i++) {
    int64_t s = f[i], L = shape[2 + i];
    if (s == 1) continue;
    int64_t ax = 3 + i;
    u = ONNX_OP(c, "expand_dims", A("x", u), K("axes", onnx_i32s(c, 1, &ax)));
    int64_t pads[22] = {0};
    pads[2 * (3 + i) + 1] = s - 1;
    u = ONNX_OP(c, "pad", A("x", u), K("pad", onnx_i32s(c, 2 * (rank + 1), pads)), K("mode", onnx_str(c, "constant")),
                K("constant_val", onnx_fscalar(c, onnx_dtype(v), 0)));
    shape[2 + i] = L * s;
    u = ONNX_OP(c, "reshape", A("x", u), K("shape", onnx_i32s(c, rank, shape)));
    int64_t be[10] = {0}, en[10] = {0};
    mil_value *em = mil_value_new_tensor(c->p, MIL_DT_BOOL, 1, (int64_t[]){rank}, false, NULL);
    if (!em) return NULL;
    for (int32_t k = 0; k < rank; k++) mil_value_set_i64(em, k, k != 2 + i);
    en[2 + i] = (L - 1) * s + 1;
    shape[2 + i] = en[2 + i];
    u = ONNX_OP(c, "slice_by_index", A("x", u), K("begin", onnx_i32s(c, rank, be)), K("end", onnx_i32s(c, rank, en)), K("end_mask", em));
  }
  return u;
}

static mil_status conv_transpose_decomposed(onnx_ctx *c, onnx_node *n, mil_var *x, mil_var *w, mil_var *b, conv_geom *g,
                                            const int64_t *extra) {
  const mil_type *xt = x->type, *wt = w->type;
  if (!mil_type_is_static(xt) || !mil_type_is_static(wt)) return ONNX_UNSUP(c, "a run-time weight with symbolic shapes");
  int32_t sp = g->sp, rank = sp + 2;
  if (xt->rank != rank || wt->rank != rank)
    return onnx_fail(c, MIL_ERR_INVALID, "input and weight must have rank %d, got %d and %d", (int)rank, (int)xt->rank,
                     (int)wt->rank);
  int64_t groups = onnx_attr_i(n, "group", 1);
  if (groups < 1 || groups > wt->dims[0].size) return onnx_fail(c, MIL_ERR_INVALID, "group %lld", (long long)groups);
  int64_t cin = wt->dims[0].size, coutg = wt->dims[1].size;
  for (int32_t i = 0; i < sp; i++)
    if (g->kernel[i] == 0) g->kernel[i] = wt->dims[2 + i].size;
  mil_var *u = insert_zeros(c, x, rank, g->strides);
  /* weight (Cin, Cout/g, k...) -> (Cout, Cin/g, k...) flipped */
  int64_t ws[12] = {groups, cin / groups, coutg}, perm[12] = {0, 2, 1}, wshape[10] = {groups * coutg, cin / groups};
  for (int32_t i = 0; i < sp; i++) ws[3 + i] = g->kernel[i], perm[3 + i] = 3 + i, wshape[2 + i] = g->kernel[i];
  mil_var *wf = ONNX_OP(c, "reshape", A("x", w), K("shape", onnx_i32s(c, rank + 1, ws)));
  wf = ONNX_OP(c, "transpose", A("x", wf), K("perm", onnx_i32s(c, rank + 1, perm)));
  wf = ONNX_OP(c, "reshape", A("x", wf), K("shape", onnx_i32s(c, rank, wshape)));
  int64_t axes[8], pad[16], ones[8];
  for (int32_t i = 0; i < sp; i++) {
    axes[i] = 2 + i;
    ones[i] = 1;
    int64_t span = g->dil[i] * (g->kernel[i] - 1);
    pad[2 * i] = span - g->pad[2 * i];
    pad[2 * i + 1] = span - g->pad[2 * i + 1] + extra[2 * i + 1];
    if (pad[2 * i] < 0 || pad[2 * i + 1] < 0) return ONNX_UNSUP(c, "pads larger than the kernel span with a run-time weight");
  }
  wf = ONNX_OP(c, "reverse", A("x", wf), K("axes", onnx_i32s(c, sp, axes)));
  /* a dilated kernel as zeros between its taps (dynamic weights take no dilations) */
  if (wf) wf = insert_zeros(c, wf, rank, g->dil);
  if (!u || !wf) return MIL_ERR_TYPE;
  mil_var *r = ONNX_OP(c, "conv", A("x", u), A("weight", wf), K("strides", onnx_i32s(c, sp, ones)), K("pad_type", onnx_str(c, "custom")),
                       K("pad", onnx_i32s(c, 2 * sp, pad)), K("groups", onnx_i32(c, groups)));
  if (b) r = add_channel_bias(c, r, b, sp);
  return onnx_set_out(c, n, 0, r);
}

static mil_status conv_conv_transpose(onnx_ctx *c, onnx_node *n) {
  mil_var *x, *w, *b;
  conv_geom g;
  mil_status st = conv_inputs(c, n, &x, &w, &b, &g);
  if (st != MIL_OK) return st;
  const int64_t *op, *os;
  int32_t nop = onnx_attr_ints(n, "output_padding", &op), nos = onnx_attr_ints(n, "output_shape", &os);
  bool out_pad = false;
  for (int32_t i = 0; i < nop; i++) out_pad |= op[i] != 0;
  int64_t oshape[10], extra[16] = {0}, dec_extra[16] = {0};
  bool with_shape = false, pad_after = false;
  bool same = strncmp(g.pad_type, "same", 4) == 0;
  if (out_pad || nos > 0 || same) {
    /* an explicit output shape: MIL's output_shape with the pads ONNX implies */
    const mil_type *xt = x->type, *wt = w->type;
    int64_t groups = onnx_attr_i(n, "group", 1);
    if (!mil_type_is_static(xt) || !mil_type_is_static(wt)) return ONNX_UNSUP(c, "output_padding / output_shape with symbolic shapes");
    if (g.kernel[0] == 0)
      for (int32_t i = 0; i < g.sp; i++) g.kernel[i] = wt->dims[2 + i].size;
    oshape[0] = xt->dims[0].size;
    oshape[1] = wt->dims[1].size * groups;
    /* ONNX: SAME_UPPER puts the smaller half first, otherwise the larger */
    bool upper = strcmp(onnx_attr_s(c, n, "auto_pad", "NOTSET"), "SAME_UPPER") == 0;
    for (int32_t i = 0; i < g.sp; i++) {
      int64_t in = xt->dims[2 + i].size, full = (in - 1) * g.strides[i] + (g.kernel[i] - 1) * g.dil[i] + 1 + (nop == g.sp ? op[i] : 0);
      int64_t out = nos == g.sp ? os[i] : same ? in * g.strides[i] : full - g.pad[2 * i] - g.pad[2 * i + 1];
      if (nos == g.sp || same) {
        int64_t total = full - out;
        dec_extra[2 * i + 1] = nop == g.sp ? op[i] : 0; /* in `full`, not in the pads */
        if (total < 0) {
          /* larger than the full result: zeros (and the bias) at the end */
          extra[2 * i + 1] = -total;
          pad_after = true;
          total = 0;
        }
        g.pad[2 * i] = upper ? total / 2 : total - total / 2;
        g.pad[2 * i + 1] = total - g.pad[2 * i];
      } else {
        /* output_padding adds at the end: fewer end pads, and past them
         * rows that only the bias reaches (padded after the op) */
        g.pad[2 * i + 1] -= nop == g.sp ? op[i] : 0;
        if (g.pad[2 * i + 1] < 0) {
          extra[2 * i + 1] = -g.pad[2 * i + 1];
          g.pad[2 * i + 1] = 0;
          pad_after = true;
        }
      }
      oshape[2 + i] = out;
    }
    g.pad_type = "custom";
    for (int32_t i = 0; i < 2 * g.sp; i++)
      if (g.pad[i] < 0) return ONNX_UNSUP(c, "output_padding larger than the pads");
    with_shape = true;
  }
  if (!w->val) {
    for (int32_t i = 0; i < 2 * g.sp; i++) dec_extra[i] += extra[i];
    return conv_transpose_decomposed(c, n, x, w, b, &g, dec_extra);
  }
  pass_barg args[10];
  int32_t na = 0;
  args[na++] = A("x", x);
  args[na++] = A("weight", w);
  if (b && b->val && !pad_after) args[na++] = A("bias", b);
  args[na++] = K("strides", onnx_i32s(c, g.sp, g.strides));
  args[na++] = K("pad_type", onnx_str(c, strcmp(g.pad_type, "same_lower") == 0 ? "same" : g.pad_type));
  args[na++] = K("pad", onnx_i32s(c, 2 * g.sp, g.pad));
  args[na++] = K("dilations", onnx_i32s(c, g.sp, g.dil));
  args[na++] = K("groups", onnx_i32(c, onnx_attr_i(n, "group", 1)));
  if (with_shape && !pad_after) args[na++] = K("output_shape", onnx_i32s(c, g.sp + 2, oshape));
  mil_var *r = onnx_op(c, "conv_transpose", na, args);
  if (r && pad_after)
    r = ONNX_OP(c, "pad", A("x", r), K("pad", onnx_i32s(c, 2 * g.sp, extra)), K("mode", onnx_str(c, "constant")),
                K("constant_val", onnx_fscalar(c, onnx_dtype(r), 0)));
  if (b && (!b->val || pad_after)) r = add_channel_bias(c, r, b, g.sp);
  return onnx_set_out(c, n, 0, r);
}

/* MaxPool's Indices from the winning tap's number of each output (tap_of,
 * int32 of the output's shape; NULL for a one-tap kernel): the flat
 * position in x, n * C * in + c * in + the sum over the spatial axes of
 * the tap's source position along the axis (clamped into x) times the
 * axis' stride in x (row-major, or with storage_order 1 column-major).
 * The constants are per axis (an output position's start along it) and
 * per batch and channel, never of the output's size: a 220-byte model
 * with a 65-tap kernel over 18x71x49x12 outputs asked for 195 MB of
 * whole-output index constants (and their folding at conversion) when
 * each tap had its own. */
static mil_var *max_pool_indices(onnx_ctx *c, mil_var *x, const conv_geom *g, const int64_t *out, bool colmajor,
                                 mil_var *tap_of) {
  const mil_type *t = x->type;
  int32_t rank = onnx_rank(x);
  int64_t N = t->dims[0].size, C = t->dims[1].size, in_sz = 1, shape[10] = {N, C, 1, 1, 1, 1, 1, 1, 1, 1};
  for (int32_t i = 0; i < g->sp; i++) in_sz *= t->dims[2 + i].size;
  mil_value *bv = mil_value_new_tensor(c->p, MIL_DT_INT32, rank, shape, false, NULL);
  if (!bv) return NULL;
  for (int64_t nc = 0; nc < N * C; nc++) mil_value_set_i64(bv, nc, nc * in_sz);
  mil_var *idx = onnx_const(c, bv), *tap = tap_of ? tap_of : onnx_const(c, onnx_i32(c, 0));
  int64_t inner = 1; /* the taps of the axes after i */
  for (int32_t i = g->sp - 1; i >= 0 && idx; i--) {
    int64_t mul = 1;
    for (int32_t j = colmajor ? 0 : g->sp - 1; colmajor ? j < i : j > i; j += colmajor ? 1 : -1) mul *= t->dims[2 + j].size;
    int64_t tshape[10] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1};
    tshape[2 + i] = out[i];
    mil_value *sv = mil_value_new_tensor(c->p, MIL_DT_INT32, rank, tshape, false, NULL);
    if (!sv) return NULL;
    for (int64_t oi = 0; oi < out[i]; oi++) mil_value_set_i64(sv, oi, oi * g->strides[i] - g->pad[2 * i]);
    /* k_i = tap / inner % kernel_i; source = start + k_i * dilation, clamped */
    mil_var *k = ONNX_OP(c, "mod", A("x", ONNX_OP(c, "floor_div", A("x", tap), K("y", onnx_i32(c, inner)))),
                         K("y", onnx_i32(c, g->kernel[i])));
    mil_var *src = ONNX_OP(c, "add", A("x", onnx_const(c, sv)), A("y", ONNX_OP(c, "mul", A("x", k), K("y", onnx_i32(c, g->dil[i])))));
    src = ONNX_OP(c, "minimum", A("x", ONNX_OP(c, "maximum", A("x", src), K("y", onnx_i32(c, 0)))),
                  K("y", onnx_i32(c, t->dims[2 + i].size - 1)));
    idx = ONNX_OP(c, "add", A("x", idx), A("y", ONNX_OP(c, "mul", A("x", src), K("y", onnx_i32(c, mul)))));
    inner *= g->kernel[i];
  }
  return idx;
}

/* Dilated max pooling, and MaxPool's Indices output (MIL's max_pool has
 * neither): x padded with -inf, then the maximum over the kernel offsets
 * of strided slices; the indices (flat positions in x, spatial dims
 * row-major or, with storage_order 1, column-major; the first of equal
 * maxima) follow the winning tap. */
static mil_status dilated_max_pool(onnx_ctx *c, onnx_node *n, mil_var *x, conv_geom *g) {
  const mil_type *t = x->type;
  int32_t rank = onnx_rank(x);
  if (!mil_type_is_static(t) || strcmp(g->pad_type, "custom") != 0)
    return ONNX_UNSUP(c, "dilated pooling / Indices on symbolic shapes or auto_pad");
  bool want_idx = onnx_out_used(n, 1);
  bool colmajor = onnx_attr_i(n, "storage_order", 0) != 0; /* spatial dims counted first-fastest */
  bool ceil = onnx_attr_i(n, "ceil_mode", 0) != 0;
  int64_t out[8], pad[16], total = 1;
  for (int32_t i = 0; i < g->sp; i++) {
    int64_t in = t->dims[2 + i].size, span = (g->kernel[i] - 1) * g->dil[i] + 1;
    int64_t num = in + g->pad[2 * i] + g->pad[2 * i + 1] - span;
    out[i] = (ceil ? (num + g->strides[i] - 1) / g->strides[i] : num / g->strides[i]) + 1;
    pad[2 * i] = g->pad[2 * i];
    /* room for the last window */
    int64_t need = (out[i] - 1) * g->strides[i] + span - in - g->pad[2 * i];
    pad[2 * i + 1] = need > g->pad[2 * i + 1] ? need : g->pad[2 * i + 1];
    total *= g->kernel[i];
  }
  mil_dtype dt = onnx_dtype(x);
  mil_var *xp = ONNX_OP(c, "pad", A("x", x), K("pad", onnx_i32s(c, 2 * g->sp, pad)), K("mode", onnx_str(c, "constant")),
                        K("constant_val", onnx_fscalar(c, dt, -INFINITY)));
  if (!want_idx) {
    /* the maximum is separable: one spatial axis at a time */
    for (int32_t i = 0; i < g->sp && xp; i++) {
      mil_var *acc = NULL;
      mil_value *m = mil_value_new_tensor(c->p, MIL_DT_BOOL, 1, (int64_t[]){rank}, false, NULL);
      if (!m) return MIL_ERR_NOMEM;
      for (int32_t k = 0; k < rank; k++) mil_value_set_i64(m, k, k != 2 + i);
      for (int64_t k = 0; k < g->kernel[i] && xp; k++) {
        int64_t b[10] = {0}, e[10] = {0}, st[10] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1};
        b[2 + i] = k * g->dil[i];
        e[2 + i] = b[2 + i] + (out[i] - 1) * g->strides[i] + 1;
        st[2 + i] = g->strides[i];
        mil_var *sl = ONNX_OP(c, "slice_by_index", A("x", xp), K("begin", onnx_i32s(c, rank, b)), K("end", onnx_i32s(c, rank, e)),
                              K("stride", onnx_i32s(c, rank, st)), K("begin_mask", m), K("end_mask", m));
        acc = acc ? ONNX_OP(c, "maximum", A("x", acc), A("y", sl)) : sl;
      }
      xp = acc;
    }
    return onnx_set_out(c, n, 0, xp);
  }
  if (total > 1024) return ONNX_UNSUP(c, "the Indices of a %lld-tap kernel", (long long)total);
  mil_var *acc = NULL, *tap_of = NULL;
  for (int64_t tap = 0; tap < total && xp; tap++) {
    int64_t b[10] = {0}, e[10] = {0}, st[10] = {1, 1}, r = tap;
    mil_value *em = mil_value_new_tensor(c->p, MIL_DT_BOOL, 1, (int64_t[]){rank}, false, NULL);
    if (!em) return MIL_ERR_NOMEM;
    mil_value_set_i64(em, 0, 1);
    mil_value_set_i64(em, 1, 1);
    for (int32_t i = g->sp - 1; i >= 0; i--) {
      int64_t k = r % g->kernel[i];
      r /= g->kernel[i];
      b[2 + i] = k * g->dil[i];
      e[2 + i] = b[2 + i] + (out[i] - 1) * g->strides[i] + 1;
      st[2 + i] = g->strides[i];
    }
    mil_var *sl = ONNX_OP(c, "slice_by_index", A("x", xp), K("begin", onnx_i32s(c, rank, b)), K("end", onnx_i32s(c, rank, e)),
                          K("stride", onnx_i32s(c, rank, st)), K("end_mask", em));
    if (!acc) {
      acc = sl;
      continue;
    }
    /* the winning tap's number, per output (the first of equal maxima) */
    mil_var *gt = ONNX_OP(c, "greater", A("x", sl), A("y", acc));
    if (tap_of) tap_of = ONNX_OP(c, "select", A("cond", gt), K("a", onnx_i32(c, tap)), A("b", tap_of));
    else tap_of = onnx_cast(c, gt, MIL_DT_INT32); /* tap 1 (or 0); select's type is a's and b's alone */
    acc = ONNX_OP(c, "maximum", A("x", acc), A("y", sl));
  }
  if (want_idx && acc) {
    mil_status st = onnx_set_out(c, n, 1, max_pool_indices(c, x, g, out, colmajor, tap_of));
    if (st != MIL_OK) return st;
  }
  return onnx_set_out(c, n, 0, acc);
}

static mil_status conv_pool(onnx_ctx *c, onnx_node *n) {
  mil_var *x = onnx_req(c, n, 0);
  if (!x) return MIL_ERR_INVALID;
  conv_geom g;
  mil_status st = geom(c, n, onnx_rank(x) - 2, &g);
  if (st != MIL_OK) return st;
  for (int32_t i = 0; i < g.sp; i++)
    if (g.dil[i] != 1) {
      if (strcmp(n->op_type, "MaxPool") != 0) return ONNX_UNSUP(c, "dilated %s", n->op_type);
      return dilated_max_pool(c, n, x, &g);
    }
  if (onnx_out_used(n, 1)) return dilated_max_pool(c, n, x, &g);
  const char *type = n->entry->mil_ops;
  mil_dtype dt = onnx_dtype(x);
  x = onnx_cast(c, x, mil_dtype_is_float(dt) ? dt : MIL_DT_FP32);
  bool ceil = onnx_attr_i(n, "ceil_mode", 0) != 0;
  pass_barg args[7];
  int32_t na = 0;
  args[na++] = A("x", x);
  args[na++] = K("kernel_sizes", onnx_i32s(c, g.sp, g.kernel));
  args[na++] = K("strides", onnx_i32s(c, g.sp, g.strides));
  args[na++] = K("pad_type", onnx_str(c, g.pad_type));
  args[na++] = K("pad", onnx_i32s(c, 2 * g.sp, g.pad));
  args[na++] = K("ceil_mode", onnx_bool(c, ceil));
  if (strcmp(type, "avg_pool") == 0)
    args[na++] = K("exclude_padding_from_average", onnx_bool(c, onnx_attr_i(n, "count_include_pad", 0) == 0));
  if (strcmp(type, "l2_pool") == 0 && onnx_attr_i(n, "p", 2) != 2) return ONNX_UNSUP(c, "LpPool with p != 2");
  return onnx_set_out(c, n, 0, onnx_cast(c, onnx_op(c, type, na, args), dt));
}

static mil_status conv_global_pool(onnx_ctx *c, onnx_node *n) {
  mil_var *x = onnx_req(c, n, 0);
  if (!x) return MIL_ERR_INVALID;
  int32_t rank = onnx_rank(x);
  if (rank < 3) return onnx_fail(c, MIL_ERR_INVALID, "input must have rank >= 3");
  int64_t axes[16];
  for (int32_t i = 2; i < rank; i++) axes[i - 2] = i;
  return onnx_set_out(c, n, 0, ONNX_OP(c, n->entry->mil_ops, A("x", x), K("axes", onnx_i32s(c, rank - 2, axes)),
                                       K("keep_dims", onnx_bool(c, true))));
}

const onnx_op_entry onnx_ops_conv_pool[] = {
    {"Conv", "", 1, 0, conv_conv, "conv"},
    {"ConvTranspose", "", 1, 0, conv_conv_transpose, "conv_transpose (a run-time weight: pad, reshape, conv)"},
    {"MaxPool", "", 1, 0, conv_pool, "max_pool"},
    {"AveragePool", "", 1, 0, conv_pool, "avg_pool"},
    {"LpPool", "", 1, 0, conv_pool, "l2_pool"},
    {"GlobalAveragePool", "", 1, 0, conv_global_pool, "reduce_mean"},
    {"GlobalMaxPool", "", 1, 0, conv_global_pool, "reduce_max"},
    {NULL, NULL, 0, 0, NULL, NULL},
};
