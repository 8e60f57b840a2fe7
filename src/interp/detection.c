/* non_maximum_suppression (coremltools ops/defs/iOS15/tensor_operation.py
 * and iOS17/tensor_operation.py).
 *
 * Per batch item: a box's score is its best class score (and its class
 * the arg max); iOS15 first drops boxes scoring below score_threshold.
 * Boxes are taken in decreasing score order (ties: lower index first) and
 * a box is kept unless its IoU with an already kept box is above
 * iou_threshold (with per_class_suppression, only kept boxes of the same
 * class count). Boxes are (x_center, y_center, width, height). At most
 * max_boxes are kept; the outputs are padded with zeros (boxes, scores)
 * and -1 (indices). Layouts: iOS15 boxes (n, B, 4), scores (n, B, K), a
 * fourth output with the count per batch item; iOS17 boxes (n, 4, B),
 * scores (n, K, B), no count. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "interp/interp_internal.h"

typedef struct cand {
  int64_t idx;
  float score;
  int64_t cls;
} cand;

static int cmp_cand(const void *a, const void *b) {
  const cand *x = a, *y = b;
  if (x->score != y->score) return x->score > y->score ? -1 : 1;
  return x->idx < y->idx ? -1 : x->idx > y->idx;
}

static float iou(const float *a, const float *b) {
  float ax0 = a[0] - a[2] / 2, ax1 = a[0] + a[2] / 2, ay0 = a[1] - a[3] / 2, ay1 = a[1] + a[3] / 2;
  float bx0 = b[0] - b[2] / 2, bx1 = b[0] + b[2] / 2, by0 = b[1] - b[3] / 2, by1 = b[1] + b[3] / 2;
  float iw = fminf(ax1, bx1) - fmaxf(ax0, bx0), ih = fminf(ay1, by1) - fmaxf(ay0, by0);
  if (iw <= 0 || ih <= 0) return 0;
  float inter = iw * ih, uni = a[2] * a[3] + b[2] * b[3] - inter;
  return uni > 0 ? inter / uni : 0;
}

static mil_status k_nms(interp_run *r, mil_infer_ctx *c) {
  bool ios17 = c->def->opset >= MIL_IOS17;
  const mil_value *bv = interp_fin(c, "boxes"), *sv = interp_fin(c, "scores");
  if (!bv || !sv || bv->type->rank != 3 || sv->type->rank != 3) return INTERP_DECLINE;
  int64_t n = bv->type->dims[0].size;
  int64_t B = bv->type->dims[ios17 ? 2 : 1].size, K = sv->type->dims[ios17 ? 1 : 2].size;
  if (bv->type->dims[ios17 ? 1 : 2].size != 4 || sv->type->dims[0].size != n ||
      sv->type->dims[ios17 ? 2 : 1].size != B)
    return INTERP_DECLINE;
  int64_t maxb = op_int(c, "max_boxes", 0);
  if (maxb < 0) return interp_fail(c, MIL_ERR_INVALID, "input 'max_boxes' must be >= 0, got %lld", (long long)maxb);
  double iou_t = op_f64(c, "iou_threshold", 0.5), score_t = ios17 ? -INFINITY : op_f64(c, "score_threshold", 0);
  bool per_class = op_bool(c, "per_class_suppression", false);
  float *tb, *ts;
  const float *bf = interp_f32(r, bv, &tb), *sf = interp_f32(r, sv, &ts);
  cand *cs = malloc((size_t)(B > 0 ? B : 1) * sizeof *cs);
  float *box = malloc((size_t)(B > 0 ? B : 1) * 4 * sizeof *box);
  int64_t *kept = malloc((size_t)(maxb > 0 ? maxb : 1) * sizeof *kept);
  interp_fout ob, os;
  float *obox = bf && sf && cs && box && kept ? interp_fout_begin(r, c, 0, &ob) : NULL;
  float *oscore = obox ? interp_fout_begin(r, c, 1, &os) : NULL;
  mil_value *oidx = oscore ? interp_new_value(r, c->out[2]) : NULL;
  mil_value *ocnt = oidx && !ios17 && c->n_out > 3 ? interp_new_value(r, c->out[3]) : NULL;
  mil_status st = MIL_OK;
  if (!oidx || (!ios17 && c->n_out > 3 && !ocnt)) st = MIL_ERR_NOMEM;
  if (st == MIL_OK && (ob.v->numel != n * maxb * 4 || os.v->numel != n * maxb * K || oidx->numel != n * maxb))
    st = INTERP_DECLINE;
  for (int64_t b = 0; st == MIL_OK && b < n; b++) {
    int64_t nc = 0, nk = 0;
    for (int64_t i = 0; i < B; i++) {
      for (int q = 0; q < 4; q++)
        box[i * 4 + q] = ios17 ? bf[(b * 4 + q) * B + i] : bf[(b * B + i) * 4 + q];
      float best = -INFINITY;
      int64_t cls = 0;
      for (int64_t k = 0; k < K; k++) {
        float s = ios17 ? sf[(b * K + k) * B + i] : sf[(b * B + i) * K + k];
        if (s > best) best = s, cls = k;
      }
      if (best >= score_t) cs[nc++] = (cand){i, best, cls};
    }
    qsort(cs, (size_t)nc, sizeof *cs, cmp_cand);
    for (int64_t j = 0; j < nc && nk < maxb; j++) {
      bool keep = true;
      for (int64_t q = 0; q < nk && keep; q++) {
        if (per_class && cs[kept[q]].cls != cs[j].cls) continue;
        if (iou(box + cs[j].idx * 4, box + cs[kept[q]].idx * 4) > iou_t) keep = false;
      }
      if (keep) kept[nk++] = j;
    }
    for (int64_t q = 0; q < maxb; q++) {
      int64_t i = q < nk ? cs[kept[q]].idx : -1;
      for (int e = 0; e < 4; e++) {
        float v = i >= 0 ? box[i * 4 + e] : 0.0f;
        if (ios17) obox[(b * 4 + e) * maxb + q] = v;
        else obox[(b * maxb + q) * 4 + e] = v;
      }
      for (int64_t k = 0; k < K; k++) {
        float v = i < 0 ? 0.0f : ios17 ? sf[(b * K + k) * B + i] : sf[(b * B + i) * K + k];
        if (ios17) oscore[(b * K + k) * maxb + q] = v;
        else oscore[(b * maxb + q) * K + k] = v;
      }
      mil_value_set_i64(oidx, b * maxb + q, i);
    }
    if (ocnt) mil_value_set_i64(ocnt, b, nk);
  }
  free(tb), free(ts), free(cs), free(box), free(kept);
  if (st != MIL_OK) {
    if (obox) interp_fout_abort(&ob);
    if (oscore) interp_fout_abort(&os);
    return st == MIL_ERR_NOMEM ? interp_nomem(c) : st;
  }
  c->val[0] = interp_fout_end(&ob);
  c->val[1] = interp_fout_end(&os);
  c->val[2] = oidx;
  if (ocnt) c->val[3] = ocnt;
  return MIL_OK;
}

const interp_kernel interp_kernels_detection[] = {
    {"non_maximum_suppression", k_nms, 0},
};
INTERP_FAMILY_COUNT(detection);
