/* Generator of transformer-shaped ML Programs for benchmarking `mil opt`.
 *
 * Builds, with the C builder API, the kind of program coremltools' PyTorch
 * frontend produces for a decoder stack written with plain tensor ops
 * (every literal is a const op, optional inputs materialized as the
 * builder does), and writes it as an .mlpackage. Per layer:
 *
 *   layer norm, decomposed: reduce_mean, sub, mul(d, d), reduce_mean,
 *     add(eps), rsqrt, mul, mul(gamma), add(beta)
 *     (with --ln-fusable, odd layers use square instead of mul(d, d) and the
 *     x*scale + (beta - mean*scale) arrangement, which
 *     fuse_layernorm_or_instancenorm recognizes);
 *   attention: q/k/v linear, reshape to (1, S, heads, dh), transpose,
 *     matmul(q, k, transpose_y), real_div by sqrt(dh) (mul by 1/sqrt(dh) on
 *     odd layers), softmax, matmul with v, transpose, reshape, linear;
 *     residual add;
 *   layer norm again; MLP: linear to 4H (matmul + add bias on every
 *     --matmul-every'th layer), gelu decomposed (erf form on even layers,
 *     tanh form on odd ones), linear back to H; residual add.
 *
 * Weights are fp32 and distinct (no two tensors have equal bytes, so neither
 * const_deduplication nor the weight writer can merge them): each is a view
 * at its own offset into one pseudo-random pattern buffer, so generating
 * gigabytes of weights costs only the writing.
 *
 * usage: gen_transformer -o OUT.mlpackage [--preset 1k|10k|100k]
 *                        [--layers L] [--hidden H] [--heads N] [--seq S]
 *                        [--ffn-mult M] [--matmul-every K] [--ln-fusable]
 *                        [--validate] [--quiet]
 * Presets (about 1.2 GB of weights each):
 *   1k: 11 layers, hidden 1536;  10k: 112 layers, hidden 480;
 *   100k: 1120 layers, hidden 152.
 * Prints one line: ops, layers, hidden, weight bytes, seconds. */
#include <math.h>

#include "gen_common.h"

typedef struct gen_cfg {
  int layers, hidden, heads, seq, ffn_mult, matmul_every;
  bool ln_fusable, validate, quiet;
  const char *out;
} gen_cfg;

static mil_var *layer_norm(gen *g, mil_var *x, int layer, int which, int H, bool fusable) {
  char nm[96];
  int64_t hs = H;
  int32_t axes = -1;
  snprintf(nm, sizeof nm, "layers_%d_ln%d_weight", layer, which);
  mil_var *gamma = gen_weight(g, nm, 1, &hs);
  snprintf(nm, sizeof nm, "layers_%d_ln%d_bias", layer, which);
  mil_var *beta = gen_weight(g, nm, 1, &hs);
  mil_var *mean = gen_op(g, "reduce_mean", "mean", "x", x, "axes", gen_i32(g, "axes", false, 1, &axes), "keep_dims",
                     gen_bool(g, "keep_dims", true), NULL);
  mil_var *dlt = gen_op(g, "sub", "centered", "x", x, "y", mean, NULL);
  if (!fusable) {
    mil_var *sq = gen_op(g, "mul", "sq", "x", dlt, "y", dlt, NULL);
    mil_var *var = gen_op(g, "reduce_mean", "var", "x", sq, "axes", gen_i32(g, "axes", false, 1, &axes), "keep_dims",
                      gen_bool(g, "keep_dims", true), NULL);
    mil_var *ve = gen_op(g, "add", "var_eps", "x", var, "y", gen_f32(g, "eps", 1e-5), NULL);
    mil_var *r = gen_op(g, "rsqrt", "rstd", "x", ve, NULL);
    mil_var *n = gen_op(g, "mul", "normed", "x", dlt, "y", r, NULL);
    mil_var *s = gen_op(g, "mul", "scaled", "x", n, "y", gamma, NULL);
    return gen_op(g, "add", "ln_out", "x", s, "y", beta, NULL);
  }
  /* y = x * (gamma * rstd) + (beta - mean * (gamma * rstd)) */
  mil_var *sq = gen_op(g, "square", "sq", "x", dlt, NULL);
  mil_var *var = gen_op(g, "reduce_mean", "var", "x", sq, "axes", gen_i32(g, "axes", false, 1, &axes), "keep_dims",
                    gen_bool(g, "keep_dims", true), NULL);
  mil_var *ve = gen_op(g, "add", "var_eps", "x", var, "y", gen_f32(g, "eps", 1e-5), NULL);
  mil_var *r = gen_op(g, "rsqrt", "rstd", "x", ve, NULL);
  mil_var *sc = gen_op(g, "mul", "scale", "x", r, "y", gamma, NULL);
  mil_var *xs = gen_op(g, "mul", "xs", "x", x, "y", sc, NULL);
  mil_var *ms = gen_op(g, "mul", "ms", "x", mean, "y", sc, NULL);
  mil_var *sh = gen_op(g, "sub", "shift", "x", beta, "y", ms, NULL);
  return gen_op(g, "add", "ln_out", "x", xs, "y", sh, NULL);
}

/* x @ W^T + b as `linear`, or as matmul(x, W') + b with W' = W^T stored
 * (in, out) the way torch.matmul(x, W) sees it. */
static mil_var *dense(gen *g, mil_var *x, int layer, const char *what, int in, int out, bool as_matmul) {
  char nm[96];
  int64_t bs = out;
  snprintf(nm, sizeof nm, "layers_%d_%s_bias", layer, what);
  mil_var *b = gen_weight(g, nm, 1, &bs);
  snprintf(nm, sizeof nm, "layers_%d_%s_weight", layer, what);
  if (!as_matmul) {
    int64_t ws[2] = {out, in};
    return gen_op(g, "linear", "linear", "x", x, "weight", gen_weight(g, nm, 2, ws), "bias", b, NULL);
  }
  int64_t ws[2] = {in, out};
  mil_var *w = gen_weight(g, nm, 2, ws);
  mil_var *mm = gen_op(g, "matmul", "matmul", "x", x, "y", w, "transpose_x", gen_bool(g, "transpose_x", false),
                   "transpose_y", gen_bool(g, "transpose_y", false), NULL);
  return gen_op(g, "add", "bias_add", "x", mm, "y", b, NULL);
}

static mil_var *gelu(gen *g, mil_var *x, bool tanh_form) {
  if (!tanh_form) { /* 0.5 * x * (1 + erf(x / sqrt(2))) */
    mil_var *dv = gen_op(g, "real_div", "gelu_div", "x", x, "y", gen_f32(g, "sqrt2", sqrt(2.0)), NULL);
    mil_var *e = gen_op(g, "erf", "gelu_erf", "x", dv, NULL);
    mil_var *a = gen_op(g, "add", "gelu_add", "x", e, "y", gen_f32(g, "one", 1.0), NULL);
    mil_var *h = gen_op(g, "mul", "gelu_half", "x", a, "y", gen_f32(g, "half", 0.5), NULL);
    return gen_op(g, "mul", "gelu", "x", x, "y", h, NULL);
  }
  /* x * (0.5 * (tanh(sqrt(2/pi) * (x + 0.044715 x^3)) + 1)) */
  mil_var *p3 = gen_op(g, "pow", "gelu_pow", "x", x, "y", gen_f32(g, "three", 3.0), NULL);
  mil_var *m = gen_op(g, "mul", "gelu_cube", "x", p3, "y", gen_f32(g, "coef", 0.044715), NULL);
  mil_var *a = gen_op(g, "add", "gelu_inner", "x", x, "y", m, NULL);
  mil_var *s = gen_op(g, "mul", "gelu_scale", "x", a, "y", gen_f32(g, "sqrt_2_over_pi", sqrt(2.0 / M_PI)), NULL);
  mil_var *t = gen_op(g, "tanh", "gelu_tanh", "x", s, NULL);
  mil_var *a1 = gen_op(g, "add", "gelu_add", "x", t, "y", gen_f32(g, "one", 1.0), NULL);
  mil_var *h = gen_op(g, "mul", "gelu_half", "x", a1, "y", gen_f32(g, "half", 0.5), NULL);
  return gen_op(g, "mul", "gelu", "x", x, "y", h, NULL);
}

static mil_var *heads_view(gen *g, mil_var *t, int S, int nh, int dh) {
  int32_t shape[4] = {1, S, nh, dh}, perm[4] = {0, 2, 1, 3};
  mil_var *r = gen_op(g, "reshape", "split_heads", "x", t, "shape", gen_i32(g, "shape", false, 4, shape), NULL);
  return gen_op(g, "transpose", "heads", "x", r, "perm", gen_i32(g, "perm", false, 4, perm), NULL);
}

static mil_var *layer(gen *g, const gen_cfg *c, mil_var *x, int l) {
  int H = c->hidden, nh = c->heads, dh = H / nh, S = c->seq;
  mil_var *h = layer_norm(g, x, l, 1, H, c->ln_fusable && (l & 1));
  mil_var *q = heads_view(g, dense(g, h, l, "attn_q_proj", H, H, false), S, nh, dh);
  mil_var *k = heads_view(g, dense(g, h, l, "attn_k_proj", H, H, false), S, nh, dh);
  mil_var *v = heads_view(g, dense(g, h, l, "attn_v_proj", H, H, false), S, nh, dh);
  mil_var *sc = gen_op(g, "matmul", "scores", "x", q, "y", k, "transpose_x", gen_bool(g, "transpose_x", false),
                   "transpose_y", gen_bool(g, "transpose_y", true), NULL);
  sc = (l & 1) ? gen_op(g, "mul", "scaled_scores", "x", sc, "y", gen_f32(g, "inv_sqrt_dh", 1.0 / sqrt((double)dh)), NULL)
               : gen_op(g, "real_div", "scaled_scores", "x", sc, "y", gen_f32(g, "sqrt_dh", sqrt((double)dh)), NULL);
  int32_t axis = -1;
  mil_var *att = gen_op(g, "softmax", "attn", "x", sc, "axis", gen_i32(g, "axis", true, 1, &axis), NULL);
  mil_var *o = gen_op(g, "matmul", "attn_v", "x", att, "y", v, "transpose_x", gen_bool(g, "transpose_x", false),
                  "transpose_y", gen_bool(g, "transpose_y", false), NULL);
  int32_t perm[4] = {0, 2, 1, 3}, shape[3] = {1, S, H};
  o = gen_op(g, "transpose", "merge_heads_t", "x", o, "perm", gen_i32(g, "perm", false, 4, perm), NULL);
  o = gen_op(g, "reshape", "merge_heads", "x", o, "shape", gen_i32(g, "shape", false, 3, shape), NULL);
  o = dense(g, o, l, "attn_o_proj", H, H, false);
  x = gen_op(g, "add", "residual", "x", x, "y", o, NULL);
  h = layer_norm(g, x, l, 2, H, c->ln_fusable && (l & 1));
  int F = H * c->ffn_mult;
  bool mm = c->matmul_every > 0 && l % c->matmul_every == c->matmul_every - 1;
  h = dense(g, h, l, "mlp_fc1", H, F, mm);
  h = gelu(g, h, l & 1);
  h = dense(g, h, l, "mlp_fc2", F, H, false);
  return gen_op(g, "add", "residual", "x", x, "y", h, NULL);
}

static int usage(void) {
  fprintf(stderr, "usage: gen_transformer -o OUT.mlpackage [--preset 1k|10k|100k] [--layers L] [--hidden H]\n"
                  "       [--heads N] [--seq S] [--ffn-mult M] [--matmul-every K] [--ln-fusable]\n"
                  "       [--validate] [--quiet]\n");
  return 2;
}

static bool preset(gen_cfg *c, const char *name) {
  if (strcmp(name, "1k") == 0) c->layers = 11, c->hidden = 1536, c->heads = 24;
  else if (strcmp(name, "10k") == 0) c->layers = 112, c->hidden = 480, c->heads = 8;
  else if (strcmp(name, "100k") == 0) c->layers = 1120, c->hidden = 152, c->heads = 4;
  else return false;
  return true;
}

int main(int argc, char **argv) {
  gen_cfg c = {4, 256, 4, 64, 4, 4, false, false, false, NULL};
  for (int i = 1; i < argc; i++) {
    const char *s = argv[i];
    const char *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (strcmp(s, "-o") == 0 && v) c.out = argv[++i];
    else if (strcmp(s, "--preset") == 0 && v) {
      if (!preset(&c, argv[++i])) return usage();
    } else if (strcmp(s, "--layers") == 0 && v) c.layers = atoi(argv[++i]);
    else if (strcmp(s, "--hidden") == 0 && v) c.hidden = atoi(argv[++i]);
    else if (strcmp(s, "--heads") == 0 && v) c.heads = atoi(argv[++i]);
    else if (strcmp(s, "--seq") == 0 && v) c.seq = atoi(argv[++i]);
    else if (strcmp(s, "--ffn-mult") == 0 && v) c.ffn_mult = atoi(argv[++i]);
    else if (strcmp(s, "--matmul-every") == 0 && v) c.matmul_every = atoi(argv[++i]);
    else if (strcmp(s, "--ln-fusable") == 0) c.ln_fusable = true;
    else if (strcmp(s, "--validate") == 0) c.validate = true;
    else if (strcmp(s, "--quiet") == 0) c.quiet = true;
    else return usage();
  }
  if (!c.out || c.layers < 1 || c.hidden < 1 || c.heads < 1 || c.hidden % c.heads || c.seq < 1 || c.ffn_mult < 1 ||
      c.matmul_every < 0)
    return usage();
  double t0 = gen_now();
  /* pattern: the largest weight plus room for distinct offsets */
  size_t max_numel = (size_t)c.hidden * (size_t)c.hidden * (size_t)c.ffn_mult;
  size_t pattern_n = max_numel + ((size_t)16 << 20);
  float *pattern = gen_pattern(pattern_n, 0.04f, 0.0f, 0x9E3779B97F4A7C15ULL);
  if (!pattern) {
    fprintf(stderr, "gen_transformer: out of memory\n");
    return 1;
  }
  mil_diag d;
  mil_diag_init(&d);
  gen g;
  int64_t xs[3] = {1, c.seq, c.hidden};
  mil_var *x = gen_start(&g, &d, pattern, pattern_n, NULL, 0, 3, xs);
  if (!x) {
    fprintf(stderr, "gen_transformer: out of memory\n");
    return 1;
  }
  for (int l = 0; l < c.layers && g.st == MIL_OK; l++) x = layer(&g, &c, x, l);
  int64_t ops = mil_program_count_ops(g.p);
  double t_build = gen_now() - t0, t_save = 0;
  gen_finish(&g, x, c.validate, c.out, &t_save);
  if (g.st != MIL_OK) {
    const char *msg = mil_diag_first_error(&d);
    fprintf(stderr, "gen_transformer: %s\n", msg ? msg : mil_status_str(g.st));
  } else if (!c.quiet) {
    printf("%s: %lld ops, %d layers, hidden %d, %llu weights, %.3f GB fp32, built in %.2f s, written in %.2f s\n",
           c.out, (long long)ops, c.layers, c.hidden, (unsigned long long)g.n_weights, (double)g.weight_bytes / 1e9,
           t_build, t_save);
  }
  mil_diag_clear(&d);
  free(pattern);
  return g.st == MIL_OK ? 0 : 1;
}
