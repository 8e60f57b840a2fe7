/* Kernels of the "reduction" family for fp16 / fp32 tensors: reduce_mean
 * and reduce_sum over trailing axes (the global average pool of CNNs, the
 * squeeze-and-excite means, layer statistics), the other reductions and
 * axes left to value inference (ops/reduction.c).
 *
 * The results are those of value inference, bit for bit: each group is
 * summed in double as fold_sum_lanes defines it (eight interleaved partial
 * sums in element order, combined pairwise), the sum rounded to fp32 (to
 * the input's dtype for reduce_sum), divided by the count in double and
 * rounded to the output dtype (coremltools' numpy: a half-precision mean
 * accumulates in float32). Only the walk differs: a group is a contiguous
 * run of elements read without an index map or per-element dispatch; for
 * an NHWC x of a conv chain every C-th element, all C groups summed a
 * pixel at a time. */
#include <stdlib.h>
#include <string.h>

#include "interp/interp_internal.h"
#include "ops/fold_internal.h"

/* The reduced axes when they are a suffix of x's axes (count: elements per
 * group); false for any other set (left to value inference). */
static bool trailing_axes(mil_infer_ctx *c, const mil_value *x, int64_t *groups, int64_t *count) {
  int64_t shape[MIL_INTERP_MAX_RANK], axes[2 * MIL_INTERP_MAX_RANK];
  int32_t r = interp_vshape(x, shape);
  bool red[MIL_INTERP_MAX_RANK] = {false};
  int n = r;
  if (op_has(c, "axes")) {
    n = op_ints(c, "axes", axes, 2 * MIL_INTERP_MAX_RANK);
    if (n <= 0) return false;
    for (int k = 0; k < n; k++) {
      int64_t a;
      if (!op_axis(axes[k], r, &a) || red[a]) return false;
      red[a] = true;
    }
  } else {
    for (int32_t i = 0; i < r; i++) red[i] = true;
  }
  int32_t first = r;
  while (first > 0 && red[first - 1]) first--;
  for (int32_t i = 0; i < first; i++)
    if (red[i]) return false;
  *groups = interp_numel(first, shape);
  *count = interp_numel(r - first, shape + first);
  return *groups >= 0 && *count > 0 && r > 0;
}

/* Element g of out: the group's lane sums combined, rounded as value
 * inference rounds them (the mean divided by count). */
static void store(mil_value *out, int64_t g, const double *l, int64_t count, bool mean, mil_dtype dt) {
  double acc = fold_sum_lanes(l);
  double v = mean ? fold_rnd(MIL_DT_FP32, acc) / (double)count : fold_rnd(dt, acc);
  mil_value_set_f64(out, g, fold_rnd(dt, v));
}

/* a[k] += px[k] for k < ch (8 lanes of doubles with AVX-512F, 4 with AVX2) */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
__attribute__((target_clones("avx512f", "avx2", "default")))
#endif
static void add_row(double *a, const float *px, int64_t ch) {
  for (int64_t k = 0; k < ch; k++) a[k] += px[k];
}

/* The NHWC walk: for each of the n images, pixel i of its hw pixels adds
 * its C channels to lane i % FOLD_SUM_LANES of their sums, so that channel
 * c's lanes get exactly the terms, in the order, of the strided walk of
 * group (n, c). An fp16 x (xh; xf NULL) is widened a few pixels at a time.
 * False when out of memory. */
static bool reduce_nhwc(const float *xf, const uint16_t *xh, mil_value *out, int64_t n, int64_t ch, int64_t hw,
                        bool mean, mil_dtype dt) {
  int64_t chunk = xh ? (16384 + ch - 1) / ch : 0; /* pixels widened at once */
  double *acc = malloc((size_t)(FOLD_SUM_LANES * ch) * sizeof *acc);
  float *wide = xh ? malloc((size_t)(chunk * ch) * sizeof *wide) : NULL;
  if (!acc || (xh && !wide)) {
    free(acc), free(wide);
    return false;
  }
  for (int64_t b = 0; b < n; b++) {
    memset(acc, 0, (size_t)(FOLD_SUM_LANES * ch) * sizeof *acc);
    for (int64_t i0 = 0; i0 < hw; i0 += xh ? chunk : hw) {
      int64_t i1 = xh && i0 + chunk < hw ? i0 + chunk : hw;
      const float *px = xf ? xf + (b * hw + i0) * ch : wide;
      if (xh) mil_fp16_to_fp32_array(xh + (b * hw + i0) * ch, wide, (size_t)((i1 - i0) * ch));
      for (int64_t i = i0; i < i1; i++, px += ch) add_row(acc + (i % FOLD_SUM_LANES) * ch, px, ch);
    }
    for (int64_t k = 0; k < ch; k++) {
      double l[FOLD_SUM_LANES];
      for (int j = 0; j < FOLD_SUM_LANES; j++) l[j] = acc[j * ch + k];
      store(out, b * ch + k, l, hw, mean, dt);
    }
  }
  free(acc), free(wide);
  return true;
}

static mil_status reduce(interp_run *r, mil_infer_ctx *c, bool mean) {
  const mil_value *x = interp_fin(c, "x");
  int64_t groups, count;
  if (!x || x->numel == 0 || !trailing_axes(c, x, &groups, &count)) return INTERP_DECLINE;
  mil_value *out = interp_new_value(r, c->out[0]);
  if (!out) return interp_nomem(c);
  if (out->numel != groups || out->type->dtype != x->type->dtype) return INTERP_DECLINE;
  mil_dtype dt = x->type->dtype;
  float *tx = NULL;
  int64_t xs[MIL_INTERP_MAX_RANK];
  bool nhwc = (r->nhwc & INTERP_NHWC_IN) && interp_vshape(x, xs) == 4 && count == xs[2] * xs[3];
  const float *xf = nhwc && dt == MIL_DT_FP16 ? NULL : interp_f32(r, x, &tx);
  if (!xf && !(nhwc && dt == MIL_DT_FP16)) return interp_nomem(c);
  /* an x of a conv chain's NHWC region (fuse.c) reduced over H and W: the
   * group (n, c) is every C-th element from n * H * W * C + c, in the same
   * order (the same sums); summed for all C channels of a pixel at once */
  if (nhwc) {
    if (!reduce_nhwc(xf, xf ? NULL : mil_value_data(x), out, xs[0], xs[1], count, mean, dt)) {
      free(tx);
      return interp_nomem(c);
    }
  } else {
    for (int64_t g = 0; g < groups; g++) {
      const float *p = xf + g * count;
      double l[FOLD_SUM_LANES] = {0};
      int64_t i = 0;
      for (; i + FOLD_SUM_LANES <= count; i += FOLD_SUM_LANES)
        for (int j = 0; j < FOLD_SUM_LANES; j++) l[j] += p[i + j];
      for (; i < count; i++) l[i % FOLD_SUM_LANES] += p[i];
      store(out, g, l, count, mean, dt);
    }
  }
  free(tx);
  c->val[0] = out;
  return MIL_OK;
}

static mil_status k_reduce_mean(interp_run *r, mil_infer_ctx *c) { return reduce(r, c, true); }
static mil_status k_reduce_sum(interp_run *r, mil_infer_ctx *c) { return reduce(r, c, false); }

const interp_kernel interp_kernels_reduction[] = {
    {"reduce_mean", k_reduce_mean, 0},
    {"reduce_sum", k_reduce_sum, 0},
};
INTERP_FAMILY_COUNT(reduction);
