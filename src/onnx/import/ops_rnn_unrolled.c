/* ONNX RNN / GRU / LSTM unrolled over a static sequence: per direction,
 * X W^T + Wb for all steps at once, then for each step h R^T + Rb, the
 * gates (ONNX's order: GRU z r h, LSTM i o f c), and the new state,
 * following the equations of ONNX's operator documentation. Used for what
 * MIL's rnn / gru / lstm cannot take: weights computed at run time, GRU's
 * linear_before_reset = 1, bidirectional GRU and RNN. No family table of
 * its own: ops_rnn.c dispatches here. */
#include <string.h>

#include "onnx/import/import_internal.h"

static mil_var *act(onnx_ctx *c, const char *name, mil_var *x) {
  if (!strcmp(name, "Sigmoid")) return ONNX_OP(c, "sigmoid", A("x", x));
  if (!strcmp(name, "Tanh")) return ONNX_OP(c, "tanh", A("x", x));
  if (!strcmp(name, "Relu")) return ONNX_OP(c, "relu", A("x", x));
  return ONNX_OP(c, "sigmoid_hard", A("x", x), K("alpha", onnx_f32(c, 0.2)), K("beta", onnx_f32(c, 0.5)));
}

/* v[d] of a (D, ...) var, squeezed: (...) */
static mil_var *take(onnx_ctx *c, mil_var *v, int64_t d) {
  return ONNX_OP(c, "gather", A("x", v), K("indices", onnx_i32(c, d)), K("axis", onnx_i32(c, 0)));
}

/* columns [a, b) of the last axis of a rank-2 or rank-1 var */
static mil_var *cols(onnx_ctx *c, mil_var *v, int64_t a, int64_t b) {
  int32_t r = onnx_rank(v);
  int64_t be[2] = {0, a}, en[2] = {0, b};
  mil_value *bm = mil_value_new_tensor(c->p, MIL_DT_BOOL, 1, (int64_t[]){r}, false, NULL);
  if (!bm) return NULL;
  if (r == 2) mil_value_set_i64(bm, 0, 1);
  return ONNX_OP(c, "slice_by_index", A("x", v), K("begin", onnx_i32s(c, r, be + 2 - r)), K("end", onnx_i32s(c, r, en + 2 - r)),
                 K("begin_mask", bm), K("end_mask", bm));
}

static bool is_name(const Onnx__AttributeProto *a, int i, const char **out, const char *dflt) {
  *out = dflt;
  if (!a || (size_t)i >= a->n_strings) return true;
  static const char *const names[] = {"Sigmoid", "Tanh", "Relu", "HardSigmoid"};
  for (int k = 0; k < 4; k++)
    if (a->strings[i].len == strlen(names[k]) && !memcmp(a->strings[i].data, names[k], a->strings[i].len)) {
      *out = names[k];
      return true;
    }
  return false;
}

mil_status onnx_rnn_unrolled(onnx_ctx *c, onnx_node *n, int G) {
  mil_var *x = onnx_req(c, n, 0), *W = onnx_req(c, n, 1), *R = onnx_req(c, n, 2), *B = onnx_in(n, 3);
  mil_var *h0 = onnx_in(n, 5), *c0 = G == 4 ? onnx_in(n, 6) : NULL, *P = G == 4 ? onnx_in(n, 7) : NULL;
  if (!x || !W || !R) return MIL_ERR_INVALID;
  const char *dir = onnx_attr_s(c, n, "direction", "forward");
  int D = !strcmp(dir, "bidirectional") ? 2 : 1;
  bool batch_first = onnx_attr_i(n, "layout", 0) != 0, lbr = onnx_attr_i(n, "linear_before_reset", 0) != 0;
  if (onnx_attr(n, "clip")) return ONNX_UNSUP(c, "clip with weights computed at run time");
  if (batch_first) x = ONNX_OP(c, "transpose", A("x", x), K("perm", onnx_i32s(c, 3, (int64_t[]){1, 0, 2})));
  if (!x || onnx_rank(W) != 3 || W->type->dims[1].size < 0) return ONNX_UNSUP(c, "weights of unknown shape");
  int64_t S = x->type->dims[0].size, Bt = x->type->dims[1].size, H = W->type->dims[1].size / G;
  if (S < 0 || Bt < 0)
    return ONNX_UNSUP(c, "weights computed at run time need a static sequence and batch length (unrolled)");
  if (S > 4096) return ONNX_UNSUP(c, "a sequence of %lld steps is too long to unroll", (long long)S);
  const Onnx__AttributeProto *aa = onnx_attr(n, "activations");
  int nact = G == 4 ? 3 : G == 3 ? 2 : 1;
  mil_var *ys[2], *hs[2], *cs[2];
  for (int d = 0; d < D; d++) {
    const char *f, *g, *hh;
    if (!is_name(aa, d * nact, &f, G == 1 ? "Tanh" : "Sigmoid") || !is_name(aa, d * nact + 1, &g, "Tanh") ||
        !is_name(aa, d * nact + 2, &hh, "Tanh"))
      return ONNX_UNSUP(c, "an activation other than Sigmoid, Tanh, Relu, HardSigmoid");
    bool rev = !strcmp(dir, "reverse") || d == 1;
    mil_var *Wd = take(c, W, d), *Rd = take(c, R, d);
    mil_var *Wb = NULL, *Rb = NULL;
    if (B) {
      mil_var *Bd = take(c, B, d);
      Wb = cols(c, Bd, 0, G * H);
      Rb = cols(c, Bd, G * H, 2 * G * H);
    }
    /* all steps' input projections: (S, Bt, G*H) */
    mil_var *xw = ONNX_OP(c, "matmul", A("x", x), A("y", Wd), K("transpose_y", onnx_bool(c, true)));
    if (Wb) xw = ONNX_OP(c, "add", A("x", xw), A("y", Wb));
    mil_var *h = h0 ? take(c, h0, d) : onnx_const(c, mil_value_new_tensor(c->p, MIL_DT_FP32, 2, (int64_t[]){Bt, H}, false, NULL));
    mil_var *cst = G == 4 ? (c0 ? take(c, c0, d) : onnx_const(c, mil_value_new_tensor(c->p, MIL_DT_FP32, 2, (int64_t[]){Bt, H}, false, NULL))) : NULL;
    mil_var *Pd = P ? take(c, P, d) : NULL;
    mil_var **steps = mil_program_alloc(c->p, (size_t)(S ? S : 1) * sizeof *steps);
    if (!steps || !h || !xw) return MIL_ERR_TYPE;
    for (int64_t k = 0; k < S; k++) {
      int64_t t = rev ? S - 1 - k : k;
      mil_var *xt = ONNX_OP(c, "gather", A("x", xw), K("indices", onnx_i32(c, t)), K("axis", onnx_i32(c, 0)));
      if (G == 1) {
        mil_var *a = ONNX_OP(c, "add", A("x", xt), A("y", ONNX_OP(c, "matmul", A("x", h), A("y", Rd), K("transpose_y", onnx_bool(c, true)))));
        if (Rb) a = ONNX_OP(c, "add", A("x", a), A("y", Rb));
        h = act(c, f, a);
      } else if (G == 3) {
        /* z, r from rows [0, 2H); the candidate from rows [2H, 3H) */
        mil_var *Rzr = ONNX_OP(c, "slice_by_index", A("x", Rd), K("begin", onnx_i32s(c, 2, (int64_t[]){0, 0})),
                               K("end", onnx_i32s(c, 2, (int64_t[]){2 * H, H})));
        mil_var *Rh = ONNX_OP(c, "slice_by_index", A("x", Rd), K("begin", onnx_i32s(c, 2, (int64_t[]){2 * H, 0})),
                              K("end", onnx_i32s(c, 2, (int64_t[]){3 * H, H})));
        mil_var *hr = ONNX_OP(c, "matmul", A("x", h), A("y", Rzr), K("transpose_y", onnx_bool(c, true)));
        if (Rb) hr = ONNX_OP(c, "add", A("x", hr), A("y", cols(c, Rb, 0, 2 * H)));
        mil_var *zr = ONNX_OP(c, "add", A("x", cols(c, xt, 0, 2 * H)), A("y", hr));
        mil_var *z = act(c, f, cols(c, zr, 0, H)), *r = act(c, f, cols(c, zr, H, 2 * H));
        mil_var *cand;
        if (lbr) {
          mil_var *hh2 = ONNX_OP(c, "matmul", A("x", h), A("y", Rh), K("transpose_y", onnx_bool(c, true)));
          if (Rb) hh2 = ONNX_OP(c, "add", A("x", hh2), A("y", cols(c, Rb, 2 * H, 3 * H)));
          cand = ONNX_OP(c, "add", A("x", cols(c, xt, 2 * H, 3 * H)), A("y", ONNX_OP(c, "mul", A("x", r), A("y", hh2))));
        } else {
          mil_var *rh = ONNX_OP(c, "matmul", A("x", ONNX_OP(c, "mul", A("x", r), A("y", h))), A("y", Rh),
                                K("transpose_y", onnx_bool(c, true)));
          if (Rb) rh = ONNX_OP(c, "add", A("x", rh), A("y", cols(c, Rb, 2 * H, 3 * H)));
          cand = ONNX_OP(c, "add", A("x", cols(c, xt, 2 * H, 3 * H)), A("y", rh));
        }
        cand = act(c, g, cand);
        /* h = (1 - z) * cand + z * h = cand + z * (h - cand) */
        h = ONNX_OP(c, "add", A("x", cand), A("y", ONNX_OP(c, "mul", A("x", z), A("y", ONNX_OP(c, "sub", A("x", h), A("y", cand))))));
      } else {
        mil_var *a = ONNX_OP(c, "add", A("x", xt), A("y", ONNX_OP(c, "matmul", A("x", h), A("y", Rd), K("transpose_y", onnx_bool(c, true)))));
        if (Rb) a = ONNX_OP(c, "add", A("x", a), A("y", Rb));
        mil_var *gi = cols(c, a, 0, H), *go = cols(c, a, H, 2 * H), *gf = cols(c, a, 2 * H, 3 * H), *gc = cols(c, a, 3 * H, 4 * H);
        if (Pd) {
          gi = ONNX_OP(c, "add", A("x", gi), A("y", ONNX_OP(c, "mul", A("x", cst), A("y", cols(c, Pd, 0, H)))));
          gf = ONNX_OP(c, "add", A("x", gf), A("y", ONNX_OP(c, "mul", A("x", cst), A("y", cols(c, Pd, 2 * H, 3 * H)))));
        }
        mil_var *i = act(c, f, gi), *fg = act(c, f, gf), *cc = act(c, g, gc);
        cst = ONNX_OP(c, "add", A("x", ONNX_OP(c, "mul", A("x", fg), A("y", cst))), A("y", ONNX_OP(c, "mul", A("x", i), A("y", cc))));
        if (Pd) go = ONNX_OP(c, "add", A("x", go), A("y", ONNX_OP(c, "mul", A("x", cst), A("y", cols(c, Pd, H, 2 * H)))));
        h = ONNX_OP(c, "mul", A("x", act(c, f, go)), A("y", act(c, hh, cst)));
      }
      if (!h) return MIL_ERR_TYPE;
      steps[t] = ONNX_OP(c, "expand_dims", A("x", h), K("axes", onnx_i32s(c, 1, (int64_t[]){0})));
      if (!steps[t]) return MIL_ERR_TYPE;
    }
    ys[d] = S == 1 ? steps[0] : ONNX_OP(c, "concat", AT("values", steps, (int32_t)S), K("axis", onnx_i32(c, 0)));
    ys[d] = ONNX_OP(c, "expand_dims", A("x", ys[d]), K("axes", onnx_i32s(c, 1, (int64_t[]){1}))); /* (S, 1, Bt, H) */
    hs[d] = ONNX_OP(c, "expand_dims", A("x", h), K("axes", onnx_i32s(c, 1, (int64_t[]){0})));
    cs[d] = cst ? ONNX_OP(c, "expand_dims", A("x", cst), K("axes", onnx_i32s(c, 1, (int64_t[]){0}))) : NULL;
  }
  mil_var *y = D == 1 ? ys[0] : ONNX_OP(c, "concat", AT("values", ys, 2), K("axis", onnx_i32(c, 1)));
  mil_var *yh = D == 1 ? hs[0] : ONNX_OP(c, "concat", AT("values", hs, 2), K("axis", onnx_i32(c, 0)));
  mil_var *yc = G != 4 ? NULL : D == 1 ? cs[0] : ONNX_OP(c, "concat", AT("values", cs, 2), K("axis", onnx_i32(c, 0)));
  if (batch_first) {
    y = ONNX_OP(c, "transpose", A("x", y), K("perm", onnx_i32s(c, 4, (int64_t[]){2, 0, 1, 3})));
    yh = ONNX_OP(c, "transpose", A("x", yh), K("perm", onnx_i32s(c, 3, (int64_t[]){1, 0, 2})));
    if (yc) yc = ONNX_OP(c, "transpose", A("x", yc), K("perm", onnx_i32s(c, 3, (int64_t[]){1, 0, 2})));
  }
  mil_status st = onnx_set_out(c, n, 0, y);
  if (st == MIL_OK) st = onnx_set_out(c, n, 1, yh);
  if (st == MIL_OK && G == 4) st = onnx_set_out(c, n, 2, yc);
  return st;
}
