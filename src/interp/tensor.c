/* Kernels of the tensor transformation family (coremltools
 * ops/defs/iOS15/tensor_transformation.py, iOS16/tensor_transformation.py)
 * and concat, for every fixed-size dtype:
 *
 *  - reshape, reshape_like, expand_dims, squeeze, flatten2d, identity:
 *    the output views the input's bytes with the inferred shape (no copy);
 *  - transpose, and the block rearrangements written as a reshape plus a
 *    transpose of the 6-d view:
 *      depth_to_space   (n, b, b, C/b^2, H, W)   perm (0, 3, 4, 1, 5, 2)
 *      pixel_shuffle    (n, C/f^2, f, f, H, W)   perm (0, 1, 4, 2, 5, 3)
 *      space_to_depth   (n, C, H/b, b, W/b, b)   perm (0, 3, 5, 1, 2, 4)
 *      pixel_unshuffle  (n, C, H/f, f, W/f, f)   perm (0, 1, 3, 5, 2, 4)
 *      space_to_batch   zero-padded (n, C, H', bh, W', bw), perm (3, 5, 0, 1, 2, 4)
 *      batch_to_space   (bh, bw, n, C, H, W)     perm (2, 3, 4, 0, 5, 1), then cropped
 *    (TensorFlow's DCR order for depth/space ops, PyTorch's for pixel ops);
 *  - concat along an axis (also interleaved), sliding_windows,
 *    reverse_sequence;
 *  - slice_by_index with known begin / end / stride / masks (Python slice
 *    rules per axis, as its value inference): a view of the input when the
 *    selection is one contiguous run of its bytes (a channel split), else
 *    rows copied (memcpy when the last axis' stride is 1). */
#include <stdlib.h>
#include <string.h>

#include "interp/interp_internal.h"
#include "ops/tensor_ops_internal.h"

static size_t esize(mil_dtype dt) { return dt == MIL_DT_STRING ? sizeof(const char *) : mil_dtype_size(dt); }

/* ---------------- views ---------------- */

static mil_status k_view(interp_run *r, mil_infer_ctx *c) {
  const mil_value *x = op_val(c, "x");
  if (!x || x->kind != MIL_VAL_TENSOR || !mil_type_is_static(c->out[0])) return INTERP_DECLINE;
  mil_value *v = interp_view(r, c->out[0], x);
  if (!v) return INTERP_DECLINE;
  c->val[0] = v;
  return MIL_OK;
}

/* ---------------- transpose ---------------- */

/* x's bytes, permuted per `perm` of the view shape vs, into a new value of
 * type c->out[0] (which must have the same element count). */
static mil_status permute_out(interp_run *r, mil_infer_ctx *c, const mil_value *x, const void *src, int32_t n,
                              const int64_t *vs, const int64_t *perm) {
  size_t es = esize(x->type->dtype);
  if (!es || mil_dtype_is_subbyte(x->type->dtype)) return INTERP_DECLINE;
  mil_value *out = interp_new_value(r, c->out[0]);
  if (!out) return INTERP_DECLINE;
  if (out->numel != interp_numel(n, vs)) return INTERP_DECLINE;
  op_transpose_data(mil_value_data_mut(out), src, es, n, vs, perm);
  c->val[0] = out;
  return MIL_OK;
}

static mil_status k_transpose(interp_run *r, mil_infer_ctx *c) {
  const mil_value *x = op_val(c, "x");
  if (!x || x->kind != MIL_VAL_TENSOR) return INTERP_DECLINE;
  int64_t xs[MIL_INTERP_MAX_RANK], perm[MIL_INTERP_MAX_RANK];
  int32_t n = interp_vshape(x, xs);
  if (op_ints(c, "perm", perm, MIL_INTERP_MAX_RANK) != n) return INTERP_DECLINE;
  bool seen[MIL_INTERP_MAX_RANK] = {0};
  for (int32_t i = 0; i < n; i++) {
    if (perm[i] < 0) perm[i] += n;
    if (perm[i] < 0 || perm[i] >= n || seen[perm[i]]) return INTERP_DECLINE;
    seen[perm[i]] = true;
  }
  return permute_out(r, c, x, mil_value_data(x), n, xs, perm);
}

/* depth_to_space / pixel_shuffle / space_to_depth / pixel_unshuffle. */
static mil_status block_op(interp_run *r, mil_infer_ctx *c, const char *factor, int kind) {
  const mil_value *x = op_val(c, "x");
  if (!x || x->kind != MIL_VAL_TENSOR || x->type->rank != 4) return INTERP_DECLINE;
  int64_t b = op_int(c, factor, 0), xs[4];
  interp_vshape(x, xs);
  if (b < 1) return interp_fail(c, MIL_ERR_INVALID, "input '%s' must be positive, got %lld", factor, (long long)b);
  int64_t n = xs[0], C = xs[1], H = xs[2], W = xs[3];
  int64_t vs[6];
  static const int64_t perms[4][6] = {{0, 3, 4, 1, 5, 2}, {0, 1, 4, 2, 5, 3}, {0, 3, 5, 1, 2, 4}, {0, 1, 3, 5, 2, 4}};
  if (kind <= 1) {
    if (C % (b * b)) return INTERP_DECLINE;
    int64_t cp = C / (b * b);
    int64_t a[6] = {n, b, b, cp, H, W}, p[6] = {n, cp, b, b, H, W};
    memcpy(vs, kind == 0 ? a : p, sizeof vs);
  } else {
    if (H % b || W % b) return INTERP_DECLINE;
    int64_t a[6] = {n, C, H / b, b, W / b, b};
    memcpy(vs, a, sizeof vs);
  }
  return permute_out(r, c, x, mil_value_data(x), 6, vs, perms[kind]);
}

static mil_status k_depth_to_space(interp_run *r, mil_infer_ctx *c) { return block_op(r, c, "block_size", 0); }
static mil_status k_pixel_shuffle(interp_run *r, mil_infer_ctx *c) { return block_op(r, c, "upscale_factor", 1); }
static mil_status k_space_to_depth(interp_run *r, mil_infer_ctx *c) { return block_op(r, c, "block_size", 2); }
static mil_status k_pixel_unshuffle(interp_run *r, mil_infer_ctx *c) { return block_op(r, c, "downscale_factor", 3); }

static mil_status k_space_to_batch(interp_run *r, mil_infer_ctx *c) {
  const mil_value *x = op_val(c, "x");
  int64_t bsh[2], pad[4], xs[4];
  if (!x || x->kind != MIL_VAL_TENSOR || x->type->rank != 4 || op_ints(c, "block_shape", bsh, 2) != 2 ||
      op_ints(c, "paddings", pad, 4) != 4)
    return INTERP_DECLINE;
  interp_vshape(x, xs);
  size_t es = esize(x->type->dtype);
  int64_t Hp = xs[2] + pad[0] + pad[1], Wp = xs[3] + pad[2] + pad[3];
  if (!es || bsh[0] < 1 || bsh[1] < 1 || Hp % bsh[0] || Wp % bsh[1] || pad[0] < 0 || pad[2] < 0 || pad[1] < 0 ||
      pad[3] < 0)
    return INTERP_DECLINE;
  int64_t planes = xs[0] * xs[1];
  char *buf = calloc((size_t)(planes * Hp * Wp > 0 ? planes * Hp * Wp : 1), es);
  if (!buf) return interp_nomem(c);
  for (int64_t p = 0; p < planes; p++)
    for (int64_t h = 0; h < xs[2]; h++)
      memcpy(buf + ((p * Hp + h + pad[0]) * Wp + pad[2]) * es, (const char *)mil_value_data(x) + ((p * xs[2] + h) * xs[3]) * es,
             (size_t)xs[3] * es);
  int64_t vs[6] = {xs[0], xs[1], Hp / bsh[0], bsh[0], Wp / bsh[1], bsh[1]}, perm[6] = {3, 5, 0, 1, 2, 4};
  mil_status st = permute_out(r, c, x, buf, 6, vs, perm);
  free(buf);
  return st;
}

static mil_status k_batch_to_space(interp_run *r, mil_infer_ctx *c) {
  const mil_value *x = op_val(c, "x");
  int64_t bsh[2], crop[4], xs[4], os[4];
  int32_t orank;
  if (!x || x->kind != MIL_VAL_TENSOR || x->type->rank != 4 || op_ints(c, "block_shape", bsh, 2) != 2 ||
      op_ints(c, "crops", crop, 4) != 4 || !interp_shape(c->out[0], os, &orank))
    return INTERP_DECLINE;
  interp_vshape(x, xs);
  size_t es = esize(x->type->dtype);
  if (!es || bsh[0] < 1 || bsh[1] < 1 || xs[0] % (bsh[0] * bsh[1])) return INTERP_DECLINE;
  int64_t n = xs[0] / (bsh[0] * bsh[1]), H = xs[2] * bsh[0], W = xs[3] * bsh[1];
  if (crop[0] < 0 || crop[2] < 0 || os[2] + crop[0] > H || os[3] + crop[2] > W || os[0] != n || os[1] != xs[1])
    return INTERP_DECLINE;
  char *buf = malloc((size_t)(x->numel ? x->numel : 1) * es);
  mil_value *out = buf ? interp_new_value(r, c->out[0]) : NULL;
  if (!out) {
    free(buf);
    return interp_nomem(c);
  }
  int64_t vs[6] = {bsh[0], bsh[1], n, xs[1], xs[2], xs[3]}, perm[6] = {2, 3, 4, 0, 5, 1};
  op_transpose_data(buf, mil_value_data(x), es, 6, vs, perm);
  char *d = mil_value_data_mut(out);
  for (int64_t p = 0; p < n * xs[1]; p++)
    for (int64_t h = 0; h < os[2]; h++)
      memcpy(d + ((p * os[2] + h) * os[3]) * es, buf + ((p * H + h + crop[0]) * W + crop[2]) * es, (size_t)os[3] * es);
  free(buf);
  c->val[0] = out;
  return MIL_OK;
}

/* ---------------- concat ---------------- */

/* concat; with interleave=True (iOS17) the inputs have one shape and the
 * output takes slice j of every input in turn: a[0], b[0], a[1], b[1], ... */
static mil_status k_concat(interp_run *r, mil_infer_ctx *c) {
  const mil_input *in = op_input(c, "values");
  int64_t os[MIL_INTERP_MAX_RANK];
  int32_t rank;
  if (!in || in->n_args < 1 || !interp_shape(c->out[0], os, &rank) || rank == 0) return INTERP_DECLINE;
  bool interleave = op_bool(c, "interleave", false);
  int64_t axis = op_int(c, "axis", 0);
  if (!op_axis(axis, rank, &axis)) return INTERP_DECLINE;
  size_t es = esize(c->out[0]->dtype);
  if (!es || mil_dtype_is_subbyte(c->out[0]->dtype)) return INTERP_DECLINE;
  int64_t outer = 1, inner = 1;
  for (int32_t i = 0; i < axis; i++) outer *= os[i];
  for (int32_t i = (int32_t)axis + 1; i < rank; i++) inner *= os[i];
  /* values of a conv chain's NHWC region along C (fuse.c): every pixel's
   * channels of each value in turn */
  if ((r->nhwc & INTERP_NHWC_OUT) && rank == 4 && axis == 1 && !interleave) outer = os[0] * os[2] * os[3], inner = 1;
  int64_t total_axis = 0;
  const mil_value *first = NULL;
  for (int32_t j = 0; j < in->n_args; j++) {
    const mil_value *v = in->args[j].value ? in->args[j].value : in->args[j].use.var ? in->args[j].use.var->val : NULL;
    if (!v || v->kind != MIL_VAL_TENSOR || v->type->dtype != c->out[0]->dtype || v->type->rank != rank)
      return INTERP_DECLINE;
    if (!first) first = v;
    if (interleave && v->numel != first->numel) return INTERP_DECLINE;
    total_axis += v->type->dims[axis].size;
  }
  if (total_axis != os[axis]) return INTERP_DECLINE;
  mil_value *out = interp_new_value(r, c->out[0]);
  if (!out) return interp_nomem(c);
  char *d = mil_value_data_mut(out);
  int64_t row = os[axis] * inner, at = 0;
  if (interleave) {
    int64_t n = first->type->dims[axis].size, k = in->n_args;
    for (int32_t j = 0; j < k; j++) {
      const char *src = in->args[j].value ? mil_value_data(in->args[j].value) : mil_value_data(in->args[j].use.var->val);
      for (int64_t o = 0; o < outer; o++)
        for (int64_t q = 0; q < n && inner; q++)
          memcpy(d + (o * row + (q * k + j) * inner) * es, src + ((o * n + q) * inner) * es, (size_t)inner * es);
    }
  } else {
    for (int32_t j = 0; j < in->n_args; j++) {
      const mil_value *v = in->args[j].value ? in->args[j].value : in->args[j].use.var->val;
      int64_t chunk = v->type->dims[axis].size * inner;
      for (int64_t o = 0; o < outer && chunk; o++)
        memcpy(d + (o * row + at) * es, (const char *)mil_value_data(v) + o * chunk * es, (size_t)chunk * es);
      at += chunk;
    }
  }
  c->val[0] = out;
  return MIL_OK;
}

/* ---------------- slice_by_index ---------------- */

typedef struct slice_run {
  int32_t rank;
  int64_t start[MIL_INTERP_MAX_RANK], step[MIL_INTERP_MAX_RANK], len[MIL_INTERP_MAX_RANK];
  int64_t stride[MIL_INTERP_MAX_RANK]; /* x's element strides */
  size_t es;
} slice_run;

static char *slice_copy(const slice_run *s, int32_t ax, const char *src, char *dst) {
  if (ax == s->rank - 1) {
    if (s->step[ax] == 1) {
      memcpy(dst, src, (size_t)s->len[ax] * s->es);
      return dst + (size_t)s->len[ax] * s->es;
    }
    for (int64_t i = 0; i < s->len[ax]; i++, dst += s->es) memcpy(dst, src + i * s->step[ax] * (int64_t)s->es, s->es);
    return dst;
  }
  for (int64_t i = 0; i < s->len[ax]; i++)
    dst = slice_copy(s, ax + 1, src + i * s->step[ax] * s->stride[ax] * (int64_t)s->es, dst);
  return dst;
}

static mil_status k_slice_by_index(interp_run *r, mil_infer_ctx *c) {
  const mil_value *x = op_val(c, "x");
  int64_t os[MIL_INTERP_MAX_RANK], begin[MIL_INTERP_MAX_RANK], end[MIL_INTERP_MAX_RANK], stride[MIL_INTERP_MAX_RANK];
  bool bm[MIL_INTERP_MAX_RANK] = {false}, em[MIL_INTERP_MAX_RANK] = {false}, sm[MIL_INTERP_MAX_RANK] = {false};
  int32_t orank;
  if (!x || x->kind != MIL_VAL_TENSOR || !x->type || !interp_shape(c->out[0], os, &orank)) return INTERP_DECLINE;
  slice_run s;
  s.rank = x->type->rank;
  s.es = esize(x->type->dtype);
  if (s.rank < 1 || s.rank > MIL_INTERP_MAX_RANK || x->type->dtype == MIL_DT_STRING || !s.es ||
      mil_dtype_is_subbyte(x->type->dtype) || c->out[0]->dtype != x->type->dtype)
    return INTERP_DECLINE;
  int nb = op_known_ints(c, "begin", begin, MIL_INTERP_MAX_RANK), ne = op_known_ints(c, "end", end, MIL_INTERP_MAX_RANK);
  int ns = op_has(c, "stride") ? op_known_ints(c, "stride", stride, MIL_INTERP_MAX_RANK) : s.rank;
  if (!op_has(c, "stride"))
    for (int32_t i = 0; i < s.rank; i++) stride[i] = 1;
  if (nb != s.rank || ne != s.rank || ns != s.rank) return INTERP_DECLINE;
  if ((op_has(c, "begin_mask") && op_known_bools(c, "begin_mask", bm, MIL_INTERP_MAX_RANK) != s.rank) ||
      (op_has(c, "end_mask") && op_known_bools(c, "end_mask", em, MIL_INTERP_MAX_RANK) != s.rank) ||
      (op_has(c, "squeeze_mask") && op_known_bools(c, "squeeze_mask", sm, MIL_INTERP_MAX_RANK) != s.rank))
    return INTERP_DECLINE;
  int64_t n = 1;
  for (int32_t i = s.rank - 1; i >= 0; i--) {
    int64_t dim = x->type->dims[i].size;
    if (dim < 0 || stride[i] == 0) return INTERP_DECLINE;
    s.stride[i] = i == s.rank - 1 ? 1 : s.stride[i + 1] * x->type->dims[i + 1].size; /* x's element strides */
    s.step[i] = sm[i] ? INT32_MAX : stride[i];
    op_py_slice(dim, !bm[i], begin[i], !(em[i] || sm[i]), end[i], s.step[i], &s.start[i], &s.len[i]);
    if (sm[i] && s.len[i] != 1) return INTERP_DECLINE;
    n *= s.len[i];
  }
  if (n != interp_numel(orank, os)) return INTERP_DECLINE;
  int64_t off = 0;
  for (int32_t i = 0; i < s.rank; i++) off += s.start[i] * s.stride[i];
  const char *src = (const char *)mil_value_data(x) + off * (int64_t)s.es;
  /* one contiguous run: leading axes of one element, then a unit-step
   * axis, then whole axes */
  int32_t a = 0;
  while (a < s.rank && s.len[a] == 1) a++;
  bool contiguous = n > 0 && (a == s.rank || s.step[a] == 1);
  for (int32_t i = a + 1; contiguous && i < s.rank; i++)
    contiguous = s.step[i] == 1 && s.start[i] == 0 && s.len[i] == x->type->dims[i].size;
  mil_value *out = contiguous ? mil_value_new_view(r->prog, x->type->dtype, orank, os, src, (size_t)n * s.es)
                              : mil_value_new_tensor_uninit(r->prog, x->type->dtype, orank, os, orank == 0);
  if (!out) return interp_nomem(c);
  if (!contiguous && n > 0) slice_copy(&s, 0, src, mil_value_data_mut(out));
  c->val[0] = out;
  return MIL_OK;
}

/* ---------------- sliding_windows, reverse_sequence ---------------- */

static mil_status k_sliding_windows(interp_run *r, mil_infer_ctx *c) {
  const mil_value *x = op_val(c, "x");
  if (!x || x->kind != MIL_VAL_TENSOR) return INTERP_DECLINE;
  int64_t xs[MIL_INTERP_MAX_RANK];
  int32_t rank = interp_vshape(x, xs);
  int64_t axis = op_int(c, "axis", 0), size = op_int(c, "size", 1), stride = op_int(c, "stride", 1);
  size_t es = esize(x->type->dtype);
  if (!es || !op_axis(axis, rank, &axis) || size < 1 || stride < 1 || size > xs[axis]) return INTERP_DECLINE;
  int64_t nw = (xs[axis] - size) / stride + 1, outer = 1, inner = 1;
  for (int32_t i = 0; i < axis; i++) outer *= xs[i];
  for (int32_t i = (int32_t)axis + 1; i < rank; i++) inner *= xs[i];
  mil_value *out = interp_new_value(r, c->out[0]);
  if (!out || out->numel != outer * nw * size * inner) return out ? INTERP_DECLINE : interp_nomem(c);
  char *d = mil_value_data_mut(out);
  const char *s = mil_value_data(x);
  for (int64_t o = 0; o < outer; o++)
    for (int64_t w = 0; w < nw; w++)
      memcpy(d + ((o * nw + w) * size) * inner * es, s + (o * xs[axis] + w * stride) * inner * es,
             (size_t)(size * inner) * es);
  c->val[0] = out;
  return MIL_OK;
}

static mil_status k_reverse_sequence(interp_run *r, mil_infer_ctx *c) {
  const mil_value *x = op_val(c, "x"), *len = op_val(c, "lengths");
  if (!x || !len || x->kind != MIL_VAL_TENSOR || len->kind != MIL_VAL_TENSOR) return INTERP_DECLINE;
  int64_t xs[MIL_INTERP_MAX_RANK], st[MIL_INTERP_MAX_RANK];
  int32_t rank = interp_vshape(x, xs);
  int64_t sa = op_int(c, "seq_axis", 0), ba = op_int(c, "batch_axis", 0);
  size_t es = esize(x->type->dtype);
  if (!es || !op_axis(sa, rank, &sa) || !op_axis(ba, rank, &ba) || sa == ba || len->numel != xs[ba])
    return INTERP_DECLINE;
  mil_value *out = interp_new_value(r, c->out[0]);
  if (!out || out->numel != x->numel) return out ? INTERP_DECLINE : interp_nomem(c);
  int64_t s = 1;
  for (int32_t i = rank - 1; i >= 0; i--) st[i] = s, s *= xs[i];
  char *d = mil_value_data_mut(out);
  const char *src = mil_value_data(x);
  for (int64_t e = 0; e < x->numel; e++) {
    int64_t b = (e / st[ba]) % xs[ba], q = (e / st[sa]) % xs[sa];
    int64_t L = mil_value_get_i64(len, b);
    if (L < 0 || L > xs[sa])
      return interp_fail(c, MIL_ERR_INVALID, "lengths[%lld] = %lld is outside [0, %lld]", (long long)b, (long long)L,
                         (long long)xs[sa]);
    int64_t srcq = q < L ? L - 1 - q : q;
    memcpy(d + e * es, src + (e + (srcq - q) * st[sa]) * es, es);
  }
  c->val[0] = out;
  return MIL_OK;
}

const interp_kernel interp_kernels_tensor[] = {
    {"batch_to_space", k_batch_to_space, 0},
    {"concat", k_concat, 0},
    {"depth_to_space", k_depth_to_space, 0},
    {"expand_dims", k_view, 0},
    {"flatten2d", k_view, 0},
    {"identity", k_view, 0},
    {"pixel_shuffle", k_pixel_shuffle, 0},
    {"pixel_unshuffle", k_pixel_unshuffle, 0},
    {"reshape", k_view, 0},
    {"reshape_like", k_view, 0},
    {"reverse_sequence", k_reverse_sequence, 0},
    {"slice_by_index", k_slice_by_index, 0},
    {"sliding_windows", k_sliding_windows, 0},
    {"space_to_batch", k_space_to_batch, 0},
    {"space_to_depth", k_space_to_depth, 0},
    {"squeeze", k_view, 0},
    {"transpose", k_transpose, 0},
};
INTERP_FAMILY_COUNT(tensor);
