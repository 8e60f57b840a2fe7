/* Kernels of the "recurrent" family (coremltools ops/defs/iOS15/recurrent.py,
 * iOS17/recurrent.py) in fp32; x is (s, b, I), states (b, D*H):
 *
 *   rnn   h = act(W x + R h + bias)
 *   gru   gates [r | o | z] (weight rows), r, z = rec_act(W x + R h + b),
 *         o = act(W_o x + R_o (r * h) + b_o), h = (1 - z) o + z h
 *   lstm  gates [i | f | o | g]: i, f = rec_act(W x + R h + b + p * c),
 *         g = cell_act(W_g x + R_g h + b_g), c = f c + i g (clipped to
 *         [-clip, clip] when clip is given), o = rec_act(... + p_o * c),
 *         h = o act(c); "bidirectional" runs a second pass backwards with
 *         the *_back weights and concatenates [forward, backward] along H
 *
 * as coremltools' numpy references in its op tests compute them. A
 * "reverse" direction walks the sequence from the end and stores step k of
 * the walk at position k of the output sequence (as coremltools' GRU test
 * reference does); the backward half of a bidirectional LSTM is stored at
 * the time step it read, as PyTorch does. Activations: sigmoid, tanh,
 * scaled_tanh (tanh), relu, linear, hard_sigmoid (min(max(0.2x + 0.5, 0), 1)).
 * The input projections of all steps are one sgemm; each step adds R h. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "interp/interp_internal.h"

typedef enum act { ACT_SIGMOID, ACT_TANH, ACT_RELU, ACT_LINEAR, ACT_HARD_SIGMOID } act;

static bool parse_act(mil_infer_ctx *c, const char *name, const char *dflt, act *out) {
  const char *s = op_str(c, name, dflt);
  if (!strcmp(s, "sigmoid")) *out = ACT_SIGMOID;
  else if (!strcmp(s, "tanh") || !strcmp(s, "scaled_tanh")) *out = ACT_TANH;
  else if (!strcmp(s, "relu")) *out = ACT_RELU;
  else if (!strcmp(s, "linear")) *out = ACT_LINEAR;
  else if (!strcmp(s, "hard_sigmoid")) *out = ACT_HARD_SIGMOID;
  else {
    interp_fail(c, MIL_ERR_INVALID, "input '%s': unknown activation \"%s\"", name, s);
    return false;
  }
  return true;
}

static float apply(act a, float v) {
  switch (a) {
  case ACT_SIGMOID: return 1.0f / (1.0f + expf(-v));
  case ACT_TANH: return tanhf(v);
  case ACT_RELU: return v > 0 ? v : 0;
  case ACT_LINEAR: return v;
  case ACT_HARD_SIGMOID: return fminf(fmaxf(0.2f * v + 0.5f, 0.0f), 1.0f);
  }
  return v;
}

/* A float input as fp32 with an expected element count (n < 0: any);
 * absent optional inputs give NULL with *ok true. */
typedef struct fin {
  const float *p;
  float *tmp;
} fin;

static bool get_f(interp_run *r, mil_infer_ctx *c, const char *name, int64_t n, bool required, fin *f) {
  f->p = NULL;
  f->tmp = NULL;
  if (!op_has(c, name)) return !required;
  const mil_value *v = interp_fin(c, name);
  if (!v || (n >= 0 && v->numel != n)) return false;
  f->p = interp_f32(r, v, &f->tmp);
  return f->p != NULL;
}

typedef struct rnn_cfg {
  int kind; /* 0 rnn, 1 gru, 2 lstm */
  int64_t s, b, I, H, G;
  act a_rec, a_cell, a_out;
  bool has_clip;
  float clip;
} rnn_cfg;

/* One direction over the sequence. xp: input projections (s*b, G*H) with
 * bias added; R (G*H, H); h, cst: (b, H) state in/out; seq: output rows
 * (s, b, ostride) written at column offset col. */
static mil_status run_dir(const rnn_cfg *k, const float *xp, const float *R, const float *peep, bool reverse,
                          bool align_time, float *h, float *cst, float *seq, int64_t ostride, int64_t col) {
  int64_t GH = k->G * k->H, H = k->H;
  float *hp = malloc((size_t)(k->b * GH > 0 ? k->b * GH : 1) * sizeof *hp);
  float *rh = malloc((size_t)(k->b * H > 0 ? k->b * H : 1) * sizeof *rh);
  if (!hp || !rh) {
    free(hp), free(rh);
    return MIL_ERR_NOMEM;
  }
  for (int64_t step = 0; step < k->s; step++) {
    int64_t t = reverse ? k->s - 1 - step : step;
    const float *xt = xp + t * k->b * GH;
    if (k->kind == 1) { /* gru: r and z first, then o with R_o (r * h) */
      interp_sgemm(false, true, k->b, GH, H, 1.0f, h, H, R, H, 0.0f, hp, GH);
      for (int64_t bi = 0; bi < k->b; bi++)
        for (int64_t j = 0; j < H; j++) {
          float r = apply(k->a_rec, xt[bi * GH + j] + hp[bi * GH + j]);
          rh[bi * H + j] = r * h[bi * H + j];
        }
      /* o pre-activation: R_o (r*h) into hp[:, H:2H] */
      for (int64_t bi = 0; bi < k->b; bi++)
        for (int64_t j = 0; j < H; j++) {
          double acc = 0;
          const float *ro = R + (H + j) * H;
          for (int64_t q = 0; q < H; q++) acc += ro[q] * rh[bi * H + q];
          hp[bi * GH + H + j] = (float)acc;
        }
      for (int64_t bi = 0; bi < k->b; bi++)
        for (int64_t j = 0; j < H; j++) {
          float z = apply(k->a_rec, xt[bi * GH + 2 * H + j] + hp[bi * GH + 2 * H + j]);
          float o = apply(k->a_out, xt[bi * GH + H + j] + hp[bi * GH + H + j]);
          h[bi * H + j] = (1 - z) * o + z * h[bi * H + j];
        }
    } else {
      interp_sgemm(false, true, k->b, GH, H, 1.0f, h, H, R, H, 0.0f, hp, GH);
      for (int64_t bi = 0; bi < k->b; bi++)
        for (int64_t j = 0; j < H; j++) {
          const float *g = hp + bi * GH, *x = xt + bi * GH;
          if (k->kind == 0) {
            h[bi * H + j] = apply(k->a_out, x[j] + g[j]);
            continue;
          }
          float c = cst[bi * H + j];
          float pi = peep ? peep[j] : 0, pf = peep ? peep[H + j] : 0, po = peep ? peep[2 * H + j] : 0;
          float ig = apply(k->a_rec, x[j] + g[j] + c * pi);
          float fg = apply(k->a_rec, x[H + j] + g[H + j] + c * pf);
          float cg = apply(k->a_cell, x[3 * H + j] + g[3 * H + j]);
          c = fg * c + ig * cg;
          if (k->has_clip) c = fmaxf(fminf(c, k->clip), -k->clip);
          float og = apply(k->a_rec, x[2 * H + j] + g[2 * H + j] + c * po);
          cst[bi * H + j] = c;
          h[bi * H + j] = og * apply(k->a_out, c);
        }
    }
    if (seq) {
      int64_t pos = align_time ? t : step;
      for (int64_t bi = 0; bi < k->b; bi++) memcpy(seq + (pos * k->b + bi) * ostride + col, h + bi * H, (size_t)H * sizeof *h);
    }
  }
  free(hp), free(rh);
  return MIL_OK;
}

static mil_status k_recurrent(interp_run *r, mil_infer_ctx *c, int kind) {
  rnn_cfg k = {.kind = kind, .G = kind == 0 ? 1 : kind == 1 ? 3 : 4};
  const mil_value *x = interp_fin(c, "x");
  if (!x || x->type->rank != 3) return INTERP_DECLINE;
  k.s = x->type->dims[0].size, k.b = x->type->dims[1].size, k.I = x->type->dims[2].size;
  const char *dir = op_str(c, "direction", "forward");
  bool bi = !strcmp(dir, "bidirectional"), rev = !strcmp(dir, "reverse");
  if (!bi && !rev && strcmp(dir, "forward"))
    return interp_fail(c, MIL_ERR_INVALID, "input 'direction' must be forward, reverse or bidirectional, got \"%s\"",
                       dir);
  if (bi && kind != 2) return interp_fail(c, MIL_ERR_INVALID, "direction \"bidirectional\" is only valid for lstm");
  int D = bi ? 2 : 1;
  const mil_value *wih = interp_fin(c, "weight_ih");
  if (!wih || wih->type->rank != 2) return INTERP_DECLINE;
  k.H = wih->type->dims[0].size / k.G;
  if (k.H * k.G != wih->type->dims[0].size || wih->type->dims[1].size != k.I) return INTERP_DECLINE;
  if (!parse_act(c, "recurrent_activation", "sigmoid", &k.a_rec) || !parse_act(c, "activation", "tanh", &k.a_out) ||
      !parse_act(c, "cell_activation", "tanh", &k.a_cell))
    return MIL_ERR_INVALID;
  k.has_clip = op_has(c, "clip");
  k.clip = (float)op_f64(c, "clip", 0);
  int64_t GH = k.G * k.H, DH = D * k.H;
  fin f[12] = {0};
  bool ok = get_f(r, c, "x", -1, true, &f[0]) && get_f(r, c, "initial_h", k.b * DH, true, &f[1]) &&
            get_f(r, c, "initial_c", k.b * DH, kind == 2, &f[2]) && get_f(r, c, "weight_ih", GH * k.I, true, &f[3]) &&
            get_f(r, c, "weight_hh", GH * k.H, true, &f[4]) && get_f(r, c, "bias", GH, false, &f[5]) &&
            get_f(r, c, "peephole", 3 * k.H, false, &f[6]) &&
            get_f(r, c, "weight_ih_back", GH * k.I, bi, &f[7]) && get_f(r, c, "weight_hh_back", GH * k.H, bi, &f[8]) &&
            get_f(r, c, "bias_back", GH, false, &f[9]) && get_f(r, c, "peephole_back", 3 * k.H, false, &f[10]);
  float *xp = ok ? malloc((size_t)(k.s * k.b * GH > 0 ? k.s * k.b * GH : 1) * sizeof *xp) : NULL;
  float *hs = ok ? malloc((size_t)(k.b * k.H > 0 ? k.b * k.H : 1) * sizeof *hs) : NULL;
  float *cs = ok ? calloc((size_t)(k.b * k.H > 0 ? k.b * k.H : 1), sizeof *cs) : NULL;
  bool seq_all = op_bool(c, "output_sequence", false);
  interp_fout o[3];
  memset(o, 0, sizeof o);
  float *outs[3] = {0};
  mil_status st = ok && xp && hs && cs ? MIL_OK : ok ? MIL_ERR_NOMEM : INTERP_DECLINE;
  for (int i = 0; st == MIL_OK && i < c->n_out && i < 3; i++)
    if (!(outs[i] = interp_fout_begin(r, c, i, &o[i]))) st = MIL_ERR_NOMEM;
  float *seq = outs[0], *last = NULL;
  if (st == MIL_OK && !seq_all) {
    last = seq;
    seq = NULL;
  }
  for (int d = 0; st == MIL_OK && d < D; d++) {
    const float *W = f[d ? 7 : 3].p, *R = f[d ? 8 : 4].p, *b = f[d ? 9 : 5].p, *p = f[d ? 10 : 6].p;
    interp_sgemm(false, true, k.s * k.b, GH, k.I, 1.0f, f[0].p, k.I, W, k.I, 0.0f, xp, GH);
    if (b)
      for (int64_t rw = 0; rw < k.s * k.b; rw++)
        for (int64_t j = 0; j < GH; j++) xp[rw * GH + j] += b[j];
    for (int64_t bi2 = 0; bi2 < k.b; bi2++) {
      memcpy(hs + bi2 * k.H, f[1].p + bi2 * DH + d * k.H, (size_t)k.H * sizeof *hs);
      if (f[2].p) memcpy(cs + bi2 * k.H, f[2].p + bi2 * DH + d * k.H, (size_t)k.H * sizeof *cs);
    }
    st = run_dir(&k, xp, R, p, rev || d == 1, d == 1, hs, cs, seq, DH, d * k.H);
    for (int64_t bi2 = 0; st == MIL_OK && bi2 < k.b; bi2++) {
      if (last) memcpy(last + bi2 * DH + d * k.H, hs + bi2 * k.H, (size_t)k.H * sizeof *hs);
      if (outs[1]) memcpy(outs[1] + bi2 * DH + d * k.H, hs + bi2 * k.H, (size_t)k.H * sizeof *hs);
      if (outs[2]) memcpy(outs[2] + bi2 * DH + d * k.H, cs + bi2 * k.H, (size_t)k.H * sizeof *cs);
    }
  }
  for (int i = 0; i < 12; i++) free(f[i].tmp);
  free(xp), free(hs), free(cs);
  for (int i = 0; i < 3; i++) {
    if (st == MIL_OK && outs[i]) c->val[i] = interp_fout_end(&o[i]);
    else interp_fout_abort(&o[i]);
  }
  if (st == MIL_ERR_NOMEM) return interp_nomem(c);
  return st;
}

static mil_status k_rnn(interp_run *r, mil_infer_ctx *c) { return k_recurrent(r, c, 0); }
static mil_status k_gru(interp_run *r, mil_infer_ctx *c) { return k_recurrent(r, c, 1); }
static mil_status k_lstm(interp_run *r, mil_infer_ctx *c) { return k_recurrent(r, c, 2); }

const interp_kernel interp_kernels_recurrent[] = {
    {"gru", k_gru, 0},
    {"lstm", k_lstm, 0},
    {"rnn", k_rnn, 0},
};
INTERP_FAMILY_COUNT(recurrent);
