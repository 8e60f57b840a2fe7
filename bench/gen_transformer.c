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
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mil/mil.h"
#include "mil/model.h"
#include "mil/ops.h"

typedef struct gen_cfg {
  int layers, hidden, heads, seq, ffn_mult, matmul_every;
  bool ln_fusable, validate, quiet;
  const char *out;
} gen_cfg;

typedef struct gen {
  mil_program *p;
  mil_block *b;
  mil_diag *d;
  mil_status st; /* first failure; later calls do nothing */
  uint64_t next_id;
  const float *pattern;
  size_t pattern_n;
  uint64_t n_weights;
  uint64_t weight_bytes;
} gen;

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static const char *fresh(gen *g, char *buf, size_t n, const char *hint) {
  snprintf(buf, n, "%s_%llu", hint, (unsigned long long)g->next_id++);
  return buf;
}

static mil_var *add_const(gen *g, const char *name, mil_value *v) {
  if (g->st != MIL_OK) return NULL;
  if (!v) {
    g->st = mil_diag_error(g->d, MIL_ERR_NOMEM, "out of memory building const '%s'", name);
    return NULL;
  }
  mil_op *c = mil_const_new(g->p, name, v);
  if (!c) {
    g->st = mil_diag_error(g->d, MIL_ERR_NOMEM, "out of memory building const '%s'", name);
    return NULL;
  }
  mil_block_append(g->b, c);
  return c->outputs[0];
}

static mil_var *c_f32(gen *g, const char *hint, double x) {
  char nm[64];
  return add_const(g, fresh(g, nm, sizeof nm, hint), mil_value_new_scalar_f64(g->p, MIL_DT_FP32, x));
}

static mil_var *c_bool(gen *g, const char *hint, bool x) {
  char nm[64];
  return add_const(g, fresh(g, nm, sizeof nm, hint), mil_value_new_bool(g->p, x));
}

static mil_var *c_i32(gen *g, const char *hint, bool scalar, int n, const int32_t *vals) {
  char nm[64];
  int64_t shape = n;
  mil_value *v = scalar ? mil_value_new_scalar_i64(g->p, MIL_DT_INT32, vals[0])
                        : mil_value_new_tensor(g->p, MIL_DT_INT32, 1, &shape, false, vals);
  return add_const(g, fresh(g, nm, sizeof nm, hint), v);
}

/* A distinct fp32 weight: a view into the pattern at its own offset.
 * Offsets k*1009 mod (pattern_n - numel) are distinct for every k below
 * that modulus (1009 is prime), and different offsets into a pseudo-random
 * stream give different bytes. */
static mil_var *c_weight(gen *g, const char *name, int rank, const int64_t *shape) {
  if (g->st != MIL_OK) return NULL;
  int64_t numel = 1;
  for (int i = 0; i < rank; i++) numel *= shape[i];
  size_t span = g->pattern_n - (size_t)numel;
  size_t off = (size_t)((g->n_weights * 1009u) % span);
  g->n_weights++;
  g->weight_bytes += (uint64_t)numel * 4u;
  mil_value *v =
      mil_value_new_view(g->p, MIL_DT_FP32, rank, shape, g->pattern + off, (size_t)numel * sizeof(float));
  return add_const(g, name, v);
}

/* Appends op `type` with the given inputs (NULL-terminated name/var pairs),
 * materializes its default inputs as the builder does, and infers its
 * output type. */
static mil_var *op(gen *g, const char *type, const char *hint, ...) {
  if (g->st != MIL_OK) return NULL;
  char nm[64];
  fresh(g, nm, sizeof nm, hint);
  mil_op *o = mil_op_new(g->p, type, nm);
  if (!o) {
    g->st = mil_diag_error(g->d, MIL_ERR_NOMEM, "out of memory building op '%s'", nm);
    return NULL;
  }
  va_list ap;
  va_start(ap, hint);
  for (const char *in = va_arg(ap, const char *); in; in = va_arg(ap, const char *)) {
    mil_var *v = va_arg(ap, mil_var *);
    if (!v) {
      va_end(ap);
      g->st = mil_diag_error(g->d, MIL_ERR_INVALID, "op '%s': input '%s' missing", nm, in);
      return NULL;
    }
    mil_op_add_input(o, in, v);
  }
  va_end(ap);
  mil_var *out = mil_op_add_output(o, nm, mil_type_unknown(g->p));
  mil_block_append(g->b, o);
  mil_status st = mil_op_add_defaults(o, g->d);
  if (st == MIL_OK) st = mil_op_infer(o, g->d);
  if (st != MIL_OK) {
    g->st = st;
    return NULL;
  }
  return out;
}

static mil_var *layer_norm(gen *g, mil_var *x, int layer, int which, int H, bool fusable) {
  char nm[96];
  int64_t hs = H;
  int32_t axes = -1;
  snprintf(nm, sizeof nm, "layers_%d_ln%d_weight", layer, which);
  mil_var *gamma = c_weight(g, nm, 1, &hs);
  snprintf(nm, sizeof nm, "layers_%d_ln%d_bias", layer, which);
  mil_var *beta = c_weight(g, nm, 1, &hs);
  mil_var *mean = op(g, "reduce_mean", "mean", "x", x, "axes", c_i32(g, "axes", false, 1, &axes), "keep_dims",
                     c_bool(g, "keep_dims", true), NULL);
  mil_var *dlt = op(g, "sub", "centered", "x", x, "y", mean, NULL);
  if (!fusable) {
    mil_var *sq = op(g, "mul", "sq", "x", dlt, "y", dlt, NULL);
    mil_var *var = op(g, "reduce_mean", "var", "x", sq, "axes", c_i32(g, "axes", false, 1, &axes), "keep_dims",
                      c_bool(g, "keep_dims", true), NULL);
    mil_var *ve = op(g, "add", "var_eps", "x", var, "y", c_f32(g, "eps", 1e-5), NULL);
    mil_var *r = op(g, "rsqrt", "rstd", "x", ve, NULL);
    mil_var *n = op(g, "mul", "normed", "x", dlt, "y", r, NULL);
    mil_var *s = op(g, "mul", "scaled", "x", n, "y", gamma, NULL);
    return op(g, "add", "ln_out", "x", s, "y", beta, NULL);
  }
  /* y = x * (gamma * rstd) + (beta - mean * (gamma * rstd)) */
  mil_var *sq = op(g, "square", "sq", "x", dlt, NULL);
  mil_var *var = op(g, "reduce_mean", "var", "x", sq, "axes", c_i32(g, "axes", false, 1, &axes), "keep_dims",
                    c_bool(g, "keep_dims", true), NULL);
  mil_var *ve = op(g, "add", "var_eps", "x", var, "y", c_f32(g, "eps", 1e-5), NULL);
  mil_var *r = op(g, "rsqrt", "rstd", "x", ve, NULL);
  mil_var *sc = op(g, "mul", "scale", "x", r, "y", gamma, NULL);
  mil_var *xs = op(g, "mul", "xs", "x", x, "y", sc, NULL);
  mil_var *ms = op(g, "mul", "ms", "x", mean, "y", sc, NULL);
  mil_var *sh = op(g, "sub", "shift", "x", beta, "y", ms, NULL);
  return op(g, "add", "ln_out", "x", xs, "y", sh, NULL);
}

/* x @ W^T + b as `linear`, or as matmul(x, W') + b with W' = W^T stored
 * (in, out) the way torch.matmul(x, W) sees it. */
static mil_var *dense(gen *g, mil_var *x, int layer, const char *what, int in, int out, bool as_matmul) {
  char nm[96];
  int64_t bs = out;
  snprintf(nm, sizeof nm, "layers_%d_%s_bias", layer, what);
  mil_var *b = c_weight(g, nm, 1, &bs);
  snprintf(nm, sizeof nm, "layers_%d_%s_weight", layer, what);
  if (!as_matmul) {
    int64_t ws[2] = {out, in};
    return op(g, "linear", "linear", "x", x, "weight", c_weight(g, nm, 2, ws), "bias", b, NULL);
  }
  int64_t ws[2] = {in, out};
  mil_var *w = c_weight(g, nm, 2, ws);
  mil_var *mm = op(g, "matmul", "matmul", "x", x, "y", w, "transpose_x", c_bool(g, "transpose_x", false),
                   "transpose_y", c_bool(g, "transpose_y", false), NULL);
  return op(g, "add", "bias_add", "x", mm, "y", b, NULL);
}

static mil_var *gelu(gen *g, mil_var *x, bool tanh_form) {
  if (!tanh_form) { /* 0.5 * x * (1 + erf(x / sqrt(2))) */
    mil_var *dv = op(g, "real_div", "gelu_div", "x", x, "y", c_f32(g, "sqrt2", sqrt(2.0)), NULL);
    mil_var *e = op(g, "erf", "gelu_erf", "x", dv, NULL);
    mil_var *a = op(g, "add", "gelu_add", "x", e, "y", c_f32(g, "one", 1.0), NULL);
    mil_var *h = op(g, "mul", "gelu_half", "x", a, "y", c_f32(g, "half", 0.5), NULL);
    return op(g, "mul", "gelu", "x", x, "y", h, NULL);
  }
  /* x * (0.5 * (tanh(sqrt(2/pi) * (x + 0.044715 x^3)) + 1)) */
  mil_var *p3 = op(g, "pow", "gelu_pow", "x", x, "y", c_f32(g, "three", 3.0), NULL);
  mil_var *m = op(g, "mul", "gelu_cube", "x", p3, "y", c_f32(g, "coef", 0.044715), NULL);
  mil_var *a = op(g, "add", "gelu_inner", "x", x, "y", m, NULL);
  mil_var *s = op(g, "mul", "gelu_scale", "x", a, "y", c_f32(g, "sqrt_2_over_pi", sqrt(2.0 / M_PI)), NULL);
  mil_var *t = op(g, "tanh", "gelu_tanh", "x", s, NULL);
  mil_var *a1 = op(g, "add", "gelu_add", "x", t, "y", c_f32(g, "one", 1.0), NULL);
  mil_var *h = op(g, "mul", "gelu_half", "x", a1, "y", c_f32(g, "half", 0.5), NULL);
  return op(g, "mul", "gelu", "x", x, "y", h, NULL);
}

static mil_var *heads_view(gen *g, mil_var *t, int S, int nh, int dh) {
  int32_t shape[4] = {1, S, nh, dh}, perm[4] = {0, 2, 1, 3};
  mil_var *r = op(g, "reshape", "split_heads", "x", t, "shape", c_i32(g, "shape", false, 4, shape), NULL);
  return op(g, "transpose", "heads", "x", r, "perm", c_i32(g, "perm", false, 4, perm), NULL);
}

static mil_var *layer(gen *g, const gen_cfg *c, mil_var *x, int l) {
  int H = c->hidden, nh = c->heads, dh = H / nh, S = c->seq;
  mil_var *h = layer_norm(g, x, l, 1, H, c->ln_fusable && (l & 1));
  mil_var *q = heads_view(g, dense(g, h, l, "attn_q_proj", H, H, false), S, nh, dh);
  mil_var *k = heads_view(g, dense(g, h, l, "attn_k_proj", H, H, false), S, nh, dh);
  mil_var *v = heads_view(g, dense(g, h, l, "attn_v_proj", H, H, false), S, nh, dh);
  mil_var *sc = op(g, "matmul", "scores", "x", q, "y", k, "transpose_x", c_bool(g, "transpose_x", false),
                   "transpose_y", c_bool(g, "transpose_y", true), NULL);
  sc = (l & 1) ? op(g, "mul", "scaled_scores", "x", sc, "y", c_f32(g, "inv_sqrt_dh", 1.0 / sqrt((double)dh)), NULL)
               : op(g, "real_div", "scaled_scores", "x", sc, "y", c_f32(g, "sqrt_dh", sqrt((double)dh)), NULL);
  int32_t axis = -1;
  mil_var *att = op(g, "softmax", "attn", "x", sc, "axis", c_i32(g, "axis", true, 1, &axis), NULL);
  mil_var *o = op(g, "matmul", "attn_v", "x", att, "y", v, "transpose_x", c_bool(g, "transpose_x", false),
                  "transpose_y", c_bool(g, "transpose_y", false), NULL);
  int32_t perm[4] = {0, 2, 1, 3}, shape[3] = {1, S, H};
  o = op(g, "transpose", "merge_heads_t", "x", o, "perm", c_i32(g, "perm", false, 4, perm), NULL);
  o = op(g, "reshape", "merge_heads", "x", o, "shape", c_i32(g, "shape", false, 3, shape), NULL);
  o = dense(g, o, l, "attn_o_proj", H, H, false);
  x = op(g, "add", "residual", "x", x, "y", o, NULL);
  h = layer_norm(g, x, l, 2, H, c->ln_fusable && (l & 1));
  int F = H * c->ffn_mult;
  bool mm = c->matmul_every > 0 && l % c->matmul_every == c->matmul_every - 1;
  h = dense(g, h, l, "mlp_fc1", H, F, mm);
  h = gelu(g, h, l & 1);
  h = dense(g, h, l, "mlp_fc2", F, H, false);
  return op(g, "add", "residual", "x", x, "y", h, NULL);
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
  double t0 = now();
  /* pattern: the largest weight plus room for distinct offsets */
  size_t max_numel = (size_t)c.hidden * (size_t)c.hidden * (size_t)c.ffn_mult;
  size_t pattern_n = max_numel + ((size_t)16 << 20);
  float *pattern = malloc(pattern_n * sizeof *pattern);
  if (!pattern) {
    fprintf(stderr, "gen_transformer: out of memory\n");
    return 1;
  }
  uint64_t st = 0x9E3779B97F4A7C15ULL;
  for (size_t i = 0; i < pattern_n; i++) {
    st ^= st << 13, st ^= st >> 7, st ^= st << 17;
    pattern[i] = (float)((double)(st >> 40) / (double)(1u << 24) - 0.5) * 0.04f;
  }
  mil_diag d;
  mil_diag_init(&d);
  gen g = {0};
  g.d = &d;
  g.pattern = pattern;
  g.pattern_n = pattern_n;
  g.p = mil_program_new(NULL);
  mil_function *f = g.p ? mil_function_new(g.p, "main", "CoreML6") : NULL;
  if (!f) {
    fprintf(stderr, "gen_transformer: out of memory\n");
    return 1;
  }
  g.b = mil_function_body(f);
  int64_t xs[3] = {1, c.seq, c.hidden};
  mil_var *x = mil_function_add_input(f, "x", mil_type_tensor_shape(g.p, MIL_DT_FP32, 3, xs));
  for (int l = 0; l < c.layers && g.st == MIL_OK; l++) x = layer(&g, &c, x, l);
  if (g.st == MIL_OK) g.st = mil_block_set_outputs(g.b, 1, &x);
  int64_t ops = mil_program_count_ops(g.p);
  double t_build = now() - t0;
  if (g.st == MIL_OK && c.validate) g.st = mil_program_validate(g.p, &d);
  mil_model *m = NULL;
  if (g.st == MIL_OK) g.st = mil_model_from_program(g.p, 0, &m, &d);
  else mil_program_free(g.p);
  double t1 = now();
  if (g.st == MIL_OK) g.st = mil_model_save(m, c.out, &d);
  double t_save = now() - t1;
  if (g.st != MIL_OK) {
    const char *msg = mil_diag_first_error(&d);
    fprintf(stderr, "gen_transformer: %s\n", msg ? msg : mil_status_str(g.st));
  } else if (!c.quiet) {
    printf("%s: %lld ops, %d layers, hidden %d, %llu weights, %.3f GB fp32, built in %.2f s, written in %.2f s\n",
           c.out, (long long)ops, c.layers, c.hidden, (unsigned long long)g.n_weights, (double)g.weight_bytes / 1e9,
           t_build, t_save);
  }
  mil_model_free(m);
  mil_diag_clear(&d);
  free(pattern);
  return g.st == MIL_OK ? 0 : 1;
}
