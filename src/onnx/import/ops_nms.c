/* ONNX NonMaxSuppression (opsets 10, 11). MIL's non_maximum_suppression
 * differs (one class per box, thresholds as consts, score >= threshold,
 * a fixed number of outputs, center-size boxes), so the greedy selection
 * is spelled out, per batch item and class at once, unrolled over the N
 * candidate boxes (N known at conversion, at most NMS_MAX):
 *
 *   iou[b, i, j]   IoU of the boxes as corners (center_point_box 1:
 *                  center +- size / 2; 0: the min / max of either corner
 *                  pair); 0 where an area or the union is not positive
 *   alive          scores > score_threshold (every box without it)
 *   step t:        pick = argmax of the alive scores (first on ties);
 *                  valid = t < max_output_boxes_per_class and any alive;
 *                  alive &= iou[pick, :] <= iou_threshold, pick dropped
 *   output         non_zero(valid [B, C, N]) gives (b, c, t) in ONNX's
 *                  order (batch, class, selection); t -> the pick
 *
 * as ONNX Runtime's CPU kernel does (suppression iff IoU > threshold).
 *
 * When N is known only at run time (or above NMS_MAX), each class runs
 * MIL's non_maximum_suppression (boxes as center-size, one score column,
 * max_boxes M) and the selections are kept where the index is valid and
 * the score above score_threshold; M is mil_onnx_options.nms_max_boxes or
 * the constant max_output_boxes_per_class (at most NMS_BOUND), as
 * coremltools' torch frontend bounds torchvision.ops.nms by a fixed
 * max_boxes. Below the threshold a box can only be picked after every box
 * above it, so masking afterwards selects what ONNX selects. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "onnx/import/import_internal.h"

#define NMS_MAX 128
#define ONNX_OP_FULL(c, type, ...) \
  onnx_op_full((c), (type), (int32_t)(sizeof((pass_barg[]){__VA_ARGS__}) / sizeof(pass_barg)), (pass_barg[]){__VA_ARGS__})
#define NMS_BOUND 65536

/* coordinate k (0..3) of boxes [B, N, 4] as [B, N] */
static mil_var *coord(onnx_ctx *c, mil_var *boxes, int k) {
  return ONNX_OP(c, "gather", A("x", boxes), K("indices", onnx_i32(c, k)), K("axis", onnx_i32(c, 2)));
}

/* IoU [B, N, N] of the boxes. */
static mil_var *iou_matrix(onnx_ctx *c, mil_var *boxes, bool center) {
  mil_var *lo[2], *hi[2]; /* per axis (y / x for corners; x / y for center format: IoU is symmetric in them) */
  for (int a = 0; a < 2; a++) {
    mil_var *p = coord(c, boxes, a), *q = coord(c, boxes, a + 2);
    if (center) {
      mil_var *h = ONNX_OP(c, "mul", A("x", q), K("y", onnx_f32(c, 0.5)));
      lo[a] = ONNX_OP(c, "sub", A("x", p), A("y", h));
      hi[a] = ONNX_OP(c, "add", A("x", p), A("y", h));
    } else {
      lo[a] = ONNX_OP(c, "minimum", A("x", p), A("y", q));
      hi[a] = ONNX_OP(c, "maximum", A("x", p), A("y", q));
    }
  }
  mil_value *ax2 = onnx_i32s(c, 1, (int64_t[]){2}), *ax1 = onnx_i32s(c, 1, (int64_t[]){1});
  mil_var *inter = NULL, *area_i = NULL, *area_j = NULL;
  for (int a = 0; a < 2; a++) {
    mil_var *li = ONNX_OP(c, "expand_dims", A("x", lo[a]), K("axes", ax2)), *lj = ONNX_OP(c, "expand_dims", A("x", lo[a]), K("axes", ax1));
    mil_var *hi_i = ONNX_OP(c, "expand_dims", A("x", hi[a]), K("axes", ax2)), *hj = ONNX_OP(c, "expand_dims", A("x", hi[a]), K("axes", ax1));
    mil_var *len = ONNX_OP(c, "sub", A("x", ONNX_OP(c, "minimum", A("x", hi_i), A("y", hj))),
                           A("y", ONNX_OP(c, "maximum", A("x", li), A("y", lj))));
    len = ONNX_OP(c, "maximum", A("x", len), K("y", onnx_f32(c, 0)));
    mil_var *ext_i = ONNX_OP(c, "sub", A("x", hi_i), A("y", li)), *ext_j = ONNX_OP(c, "sub", A("x", hj), A("y", lj));
    inter = inter ? ONNX_OP(c, "mul", A("x", inter), A("y", len)) : len;
    area_i = area_i ? ONNX_OP(c, "mul", A("x", area_i), A("y", ext_i)) : ext_i;
    area_j = area_j ? ONNX_OP(c, "mul", A("x", area_j), A("y", ext_j)) : ext_j;
  }
  mil_var *uni = ONNX_OP(c, "sub", A("x", ONNX_OP(c, "add", A("x", area_i), A("y", area_j))), A("y", inter));
  mil_var *ok = ONNX_OP(c, "logical_and", A("x", ONNX_OP(c, "greater", A("x", area_i), K("y", onnx_f32(c, 0)))),
                        A("y", ONNX_OP(c, "greater", A("x", area_j), K("y", onnx_f32(c, 0)))));
  ok = ONNX_OP(c, "logical_and", A("x", ok), A("y", ONNX_OP(c, "greater", A("x", uni), K("y", onnx_f32(c, 0)))));
  mil_var *okf = onnx_cast(c, ok, MIL_DT_FP32);
  /* inter / (ok ? uni : 1) * ok */
  mil_var *den = ONNX_OP(c, "add", A("x", ONNX_OP(c, "mul", A("x", uni), A("y", okf))),
                         A("y", ONNX_OP(c, "sub", K("x", onnx_f32(c, 1)), A("y", okf))));
  return ONNX_OP(c, "mul", A("x", ONNX_OP(c, "real_div", A("x", inter), A("y", den))), A("y", okf));
}

/* An optional scalar input as a rank-0 var of dtype dt, or dflt. */
static mil_var *scalar_in(onnx_ctx *c, onnx_node *n, int32_t i, mil_dtype dt, double dflt) {
  mil_var *v = onnx_in(n, i);
  if (!v) return onnx_const(c, onnx_fscalar(c, dt, dflt));
  v = onnx_cast(c, v, dt);
  return onnx_rank(v) > 0 ? ONNX_OP(c, "reshape", A("x", v), K("shape", onnx_i32s(c, 0, NULL))) : v;
}

/* The (b, c, box) triples of the selections P [B, C, M] where V [B, C, M]
 * (int32 0/1) is set, in ONNX's order. */
static mil_status triples(onnx_ctx *c, onnx_node *n, mil_var *P, mil_var *V) {
  mil_var *nz = ONNX_OP(c, "non_zero", A("x", V)); /* [S, 3]: b, c, t */
  mil_var *box = ONNX_OP(c, "gather_nd", A("x", P), A("indices", nz));
  mil_var *bc = ONNX_OP(c, "gather", A("x", nz), K("indices", onnx_i32s(c, 2, (int64_t[]){0, 1})), K("axis", onnx_i32(c, 1)));
  mil_var *parts[2] = {bc, ONNX_OP(c, "expand_dims", A("x", box), K("axes", onnx_i32s(c, 1, (int64_t[]){1})))};
  if (!parts[0] || !parts[1]) return MIL_ERR_TYPE;
  return onnx_set_out(c, n, 0, ONNX_OP(c, "concat", AT("values", parts, 2), K("axis", onnx_i32(c, 1))));
}

/* A constant scalar input as a double; false when absent (dflt) or not
 * known at conversion (an error is recorded then). */
static bool const_scalar(onnx_ctx *c, onnx_node *n, int32_t i, const char *what, double dflt, double *out) {
  mil_var *v = onnx_in(n, i);
  *out = dflt;
  if (!v) return true;
  const mil_value *val = onnx_val(v);
  if (!val || val->kind != MIL_VAL_TENSOR || val->numel != 1) {
    onnx_fail(c, MIL_ERR_UNSUPPORTED, "input %d (%s) must be a constant when the number of boxes is known only at "
              "run time", (int)i, what);
    return false;
  }
  *out = mil_value_get_f64(val, 0);
  return true;
}

/* NonMaxSuppression through MIL's non_maximum_suppression, class by class. */
static mil_status conv_nms_bounded(onnx_ctx *c, onnx_node *n, mil_var *boxes, mil_var *scores, bool center) {
  int64_t C = scores->type->dims[1].size;
  if (C <= 0) return ONNX_UNSUP(c, "the number of classes (dim 1 of scores) must be known at conversion");
  double maxo, iou_t, score_t;
  if (!const_scalar(c, n, 2, "max_output_boxes_per_class", 0, &maxo) ||
      !const_scalar(c, n, 3, "iou_threshold", 0, &iou_t) || !const_scalar(c, n, 4, "score_threshold", -INFINITY, &score_t))
    return MIL_ERR_UNSUPPORTED;
  int64_t M = c->nms_max_boxes > 0 ? c->nms_max_boxes : (int64_t)maxo;
  if (c->nms_max_boxes > 0 && maxo >= 0 && maxo < (double)M) M = (int64_t)maxo;
  if (c->nms_max_boxes <= 0 && !(maxo >= 0 && maxo <= NMS_BOUND))
    return ONNX_UNSUP(c, "the number of boxes is known only at run time and max_output_boxes_per_class (%.0f) gives "
                      "no bound of at most %d boxes per class: pass one with --nms-max-boxes N (libmil.convert: "
                      "nms_max_boxes=N)", maxo, NMS_BOUND);
  if (M > INT32_MAX) M = INT32_MAX;
  if (M == 0) { /* nothing is ever selected: an empty [0, 3] */
    mil_var *z = ONNX_OP(c, "fill", K("shape", onnx_i32s(c, 2, (int64_t[]){0, 3})), K("value", onnx_i32(c, 0)));
    return onnx_set_out(c, n, 0, z);
  }
  boxes = onnx_cast(c, boxes, MIL_DT_FP32);
  scores = onnx_cast(c, scores, MIL_DT_FP32);
  if (!center) { /* corners (y1, x1, y2, x2), either diagonal: center-size (IoU is symmetric in the axes) */
    mil_var *lo[2], *hi[2];
    for (int a = 0; a < 2; a++) {
      mil_var *p = coord(c, boxes, a), *q = coord(c, boxes, a + 2);
      lo[a] = ONNX_OP(c, "minimum", A("x", p), A("y", q));
      hi[a] = ONNX_OP(c, "maximum", A("x", p), A("y", q));
    }
    mil_var *parts[4];
    for (int a = 0; a < 2; a++) {
      mil_var *size = ONNX_OP(c, "sub", A("x", hi[a]), A("y", lo[a]));
      parts[a] = ONNX_OP(c, "add", A("x", lo[a]), A("y", ONNX_OP(c, "mul", A("x", size), K("y", onnx_f32(c, 0.5)))));
      parts[a + 2] = size;
    }
    for (int a = 0; a < 4; a++) parts[a] = ONNX_OP(c, "expand_dims", A("x", parts[a]), K("axes", onnx_i32s(c, 1, (int64_t[]){2})));
    boxes = ONNX_OP(c, "concat", AT("values", parts, 4), K("axis", onnx_i32(c, 2)));
  }
  bool ios17 = c->target >= MIL_IOS17;
  mil_var *bx = ios17 ? ONNX_OP(c, "transpose", A("x", boxes), K("perm", onnx_i32s(c, 3, (int64_t[]){0, 2, 1}))) : boxes;
  mil_var **picks = mil_program_alloc(c->p, 2 * (size_t)C * sizeof *picks), **valids = picks + C;
  if (!picks) return MIL_ERR_NOMEM;
  mil_value *ax1 = onnx_i32s(c, 1, (int64_t[]){1});
  for (int64_t k = 0; k < C; k++) {
    mil_var *sk = ONNX_OP(c, "gather", A("x", scores), K("indices", onnx_i32s(c, 1, (int64_t[]){k})), K("axis", onnx_i32(c, 1)));
    if (!ios17) sk = ONNX_OP(c, "transpose", A("x", sk), K("perm", onnx_i32s(c, 3, (int64_t[]){0, 2, 1})));
    mil_op *op = ios17 ? ONNX_OP_FULL(c, "non_maximum_suppression", A("boxes", bx), A("scores", sk),
                                      K("iou_threshold", onnx_f32(c, iou_t)), K("max_boxes", onnx_i32(c, M)))
                       : ONNX_OP_FULL(c, "non_maximum_suppression", A("boxes", bx), A("scores", sk),
                                      K("iou_threshold", onnx_f32(c, iou_t)), K("score_threshold", onnx_f32(c, -3.0e38)),
                                      K("max_boxes", onnx_i32(c, M)));
    if (!op) return MIL_ERR_TYPE;
    mil_var *idx = op->outputs[2], *sel = op->outputs[1]; /* [B, M]; scores [B, M, 1] / [B, 1, M] */
    mil_var *ok = ONNX_OP(c, "greater_equal", A("x", idx), K("y", onnx_i32(c, 0)));
    if (score_t > -INFINITY) {
      mil_var *s = ONNX_OP(c, "squeeze", A("x", sel), K("axes", onnx_i32s(c, 1, (int64_t[]){ios17 ? 1 : 2})));
      ok = ONNX_OP(c, "logical_and", A("x", ok), A("y", ONNX_OP(c, "greater", A("x", s), K("y", onnx_f32(c, score_t)))));
    }
    picks[k] = ONNX_OP(c, "expand_dims", A("x", idx), K("axes", ax1));
    valids[k] = ONNX_OP(c, "expand_dims", A("x", onnx_cast(c, ok, MIL_DT_INT32)), K("axes", ax1));
    if (!picks[k] || !valids[k]) return MIL_ERR_TYPE;
  }
  mil_var *P = C > 1 ? ONNX_OP(c, "concat", AT("values", picks, (int32_t)C), K("axis", onnx_i32(c, 1))) : picks[0];
  mil_var *V = C > 1 ? ONNX_OP(c, "concat", AT("values", valids, (int32_t)C), K("axis", onnx_i32(c, 1))) : valids[0];
  return triples(c, n, P, V);
}

static mil_status conv_nms(onnx_ctx *c, onnx_node *n) {
  mil_var *boxes = onnx_req(c, n, 0), *scores = onnx_req(c, n, 1);
  if (!boxes || !scores) return MIL_ERR_INVALID;
  if (onnx_rank(boxes) != 3 || onnx_rank(scores) != 3 || boxes->type->dims[2].size != 4)
    return onnx_fail(c, MIL_ERR_INVALID, "boxes must be [B, N, 4] and scores [B, C, N]");
  int64_t N = boxes->type->dims[1].size;
  bool center = onnx_attr_i(n, "center_point_box", 0) != 0;
  if (N < 0 || N > NMS_MAX || c->nms_max_boxes > 0) return conv_nms_bounded(c, n, boxes, scores, center);
  if (N == 0) return ONNX_UNSUP(c, "no boxes");
  boxes = onnx_cast(c, boxes, MIL_DT_FP32);
  scores = onnx_cast(c, scores, MIL_DT_FP32);
  mil_var *iou = iou_matrix(c, boxes, center);
  mil_var *maxo = scalar_in(c, n, 2, MIL_DT_INT32, 0), *thr = scalar_in(c, n, 3, MIL_DT_FP32, 0);
  mil_var *alive = onnx_in(n, 4) ? onnx_cast(c, ONNX_OP(c, "greater", A("x", scores), A("y", scalar_in(c, n, 4, MIL_DT_FP32, 0))),
                                             MIL_DT_FP32)
                                 : ONNX_OP(c, "add", A("x", ONNX_OP(c, "mul", A("x", scores), K("y", onnx_f32(c, 0)))),
                                           K("y", onnx_f32(c, 1)));
  mil_var **picks = mil_program_alloc(c->p, 2 * (size_t)N * sizeof *picks), **valids = picks + N;
  if (!picks) return MIL_ERR_NOMEM;
  mil_value *ax2 = onnx_i32s(c, 1, (int64_t[]){2});
  for (int64_t t = 0; t < N; t++) {
    mil_var *alive_b = ONNX_OP(c, "greater", A("x", alive), K("y", onnx_f32(c, 0)));
    mil_var *masked = ONNX_OP(c, "select", A("cond", alive_b), A("a", scores), K("b", onnx_f32(c, -3.0e38)));
    mil_var *pick = ONNX_OP(c, "reduce_argmax", A("x", masked), K("axis", onnx_i32(c, 2)), K("keep_dims", onnx_bool(c, false)));
    mil_var *any = ONNX_OP(c, "greater", A("x", ONNX_OP(c, "reduce_max", A("x", alive), K("axes", ax2), K("keep_dims", onnx_bool(c, false)))),
                           K("y", onnx_f32(c, 0)));
    mil_var *valid = ONNX_OP(c, "logical_and", A("x", any), A("y", ONNX_OP(c, "less", K("x", onnx_i32(c, t)), A("y", maxo))));
    if (!pick || !valid) return MIL_ERR_TYPE;
    picks[t] = ONNX_OP(c, "expand_dims", A("x", pick), K("axes", ax2));
    valids[t] = ONNX_OP(c, "expand_dims", A("x", onnx_cast(c, valid, MIL_DT_INT32)), K("axes", ax2));
    if (t == N - 1) break;
    /* drop the pick and what it suppresses: iou rows of the picks by a one-hot matmul */
    mil_var *oh = ONNX_OP(c, "one_hot", A("indices", pick), K("one_hot_vector_size", onnx_i32(c, N)), K("axis", onnx_i32(c, -1)),
                          K("on_value", onnx_f32(c, 1)), K("off_value", onnx_f32(c, 0)));
    mil_var *row = ONNX_OP(c, "matmul", A("x", oh), A("y", iou));
    mil_var *keep = onnx_cast(c, ONNX_OP(c, "less_equal", A("x", row), A("y", thr)), MIL_DT_FP32);
    keep = ONNX_OP(c, "mul", A("x", keep), A("y", ONNX_OP(c, "sub", K("x", onnx_f32(c, 1)), A("y", oh))));
    alive = ONNX_OP(c, "mul", A("x", alive), A("y", keep));
  }
  mil_var *P = N > 1 ? ONNX_OP(c, "concat", AT("values", picks, (int32_t)N), K("axis", onnx_i32(c, 2))) : picks[0];
  mil_var *V = N > 1 ? ONNX_OP(c, "concat", AT("values", valids, (int32_t)N), K("axis", onnx_i32(c, 2))) : valids[0];
  return triples(c, n, P, V);
}

const onnx_op_entry onnx_ops_nms[] = {
    {"NonMaxSuppression", "", 10, 0, conv_nms,
     "gather, minimum, maximum, sub, mul, real_div, greater, select, reduce_argmax, one_hot, matmul, non_zero, gather_nd, concat; "
     "non_maximum_suppression when the number of boxes is known only at run time"},
    {NULL, NULL, 0, 0, NULL, NULL},
};
