/* Generator of torchvision-style convolutional networks for benchmarking
 * `mil opt` on the weight folding passes (fuse_conv_batchnorm above all).
 *
 * Builds, with the C builder API, the program coremltools' PyTorch
 * frontend produces for a torchvision model before any pass (fp32, input
 * x: (1, 3, 224, 224)): conv without bias -> batch_norm -> activation
 * stacks with each network's layer shapes and weight sizes, so the DEFAULT
 * pipeline folds every batch_norm into its conv weight. Networks:
 *
 *   resnet18            basic blocks (3x3 convs, 1x1 projections), relu,
 *                       11.7M weights
 *   mobilenet_v2        inverted residuals: 1x1 expand, 3x3 depthwise,
 *                       1x1 project, clip(0, 6), 3.5M weights
 *   regnet_x_400mf      grouped 3x3 convs (group width 16), 5.5M weights
 *   shufflenet_v2_x1_0  depthwise convs, split / concat and channel
 *                       shuffles (reshape, transpose, reshape), 2.3M weights
 *   efficientnet_b0     depthwise 3x3 / 5x5 convs, squeeze-excitation
 *                       blocks (reduce_mean, 1x1 convs with bias, silu,
 *                       sigmoid, mul), silu, 5.3M weights
 *
 * Weights are distinct views into pseudo-random patterns (batch_norm
 * variances and gammas in [0.5, 1.5)); every network ends with global
 * average pooling (reduce_mean), a reshape and a 1000-way linear.
 *
 * usage: gen_cnn -o OUT.mlpackage --net NAME [--validate] [--quiet]
 * Prints one line: ops, weights, fp32 bytes, seconds. */
#include "gen_common.h"

typedef enum act { ACT_NONE, ACT_RELU, ACT_RELU6, ACT_SILU } act;

static int32_t dim(const mil_var *v, int i) { return v && v->type ? (int32_t)v->type->dims[i].size : 0; }

/* conv(x, weight (cout, cin/groups, k, k)[, bias]) with torch's explicit padding. */
static mil_var *conv(gen *g, mil_var *x, int cin, int cout, int k, int stride, int groups, bool bias) {
  char nm[64];
  int64_t ws[4] = {cout, cin / groups, k, k}, bs = cout;
  int32_t st[2] = {stride, stride}, pad[4] = {k / 2, k / 2, k / 2, k / 2}, dil[2] = {1, 1};
  mil_var *w = gen_weight(g, gen_fresh(g, nm, sizeof nm, "conv_weight"), 4, ws);
  mil_var *b = bias ? gen_weight(g, gen_fresh(g, nm, sizeof nm, "conv_bias"), 1, &bs) : NULL;
  mil_var *strides = gen_i32(g, "strides", false, 2, st), *pt = gen_str(g, "pad_type", "custom");
  mil_var *pv = gen_i32(g, "pad", false, 4, pad), *dv = gen_i32(g, "dilations", false, 2, dil);
  mil_var *gv = gen_i32(g, "groups", true, 1, &groups);
  if (bias)
    return gen_op(g, "conv", "conv", "x", x, "weight", w, "bias", b, "strides", strides, "pad_type", pt, "pad", pv,
                  "dilations", dv, "groups", gv, NULL);
  return gen_op(g, "conv", "conv", "x", x, "weight", w, "strides", strides, "pad_type", pt, "pad", pv, "dilations",
                dv, "groups", gv, NULL);
}

static mil_var *activation(gen *g, mil_var *x, act a) {
  switch (a) {
  case ACT_RELU: return gen_op(g, "relu", "relu", "x", x, NULL);
  case ACT_RELU6:
    return gen_op(g, "clip", "clip", "x", x, "alpha", gen_f32(g, "alpha", 0.0), "beta", gen_f32(g, "beta", 6.0),
                  NULL);
  case ACT_SILU: return gen_op(g, "silu", "silu", "x", x, NULL);
  default: return x;
  }
}

/* conv (no bias) -> batch_norm -> activation: torchvision's Conv2dNormActivation. */
static mil_var *cba(gen *g, mil_var *x, int cin, int cout, int k, int stride, int groups, act a) {
  char nm[64];
  int64_t cs = cout;
  mil_var *c = conv(g, x, cin, cout, k, stride, groups, false);
  mil_var *mean = gen_weight(g, gen_fresh(g, nm, sizeof nm, "running_mean"), 1, &cs);
  mil_var *var = gen_weight_from(g, gen_fresh(g, nm, sizeof nm, "running_var"), 1, &cs, true);
  mil_var *gamma = gen_weight_from(g, gen_fresh(g, nm, sizeof nm, "bn_weight"), 1, &cs, true);
  mil_var *beta = gen_weight(g, gen_fresh(g, nm, sizeof nm, "bn_bias"), 1, &cs);
  mil_var *bn = gen_op(g, "batch_norm", "bn", "x", c, "mean", mean, "variance", var, "gamma", gamma, "beta", beta,
                       "epsilon", gen_f32(g, "epsilon", 1e-5), NULL);
  return activation(g, bn, a);
}

static mil_var *add(gen *g, mil_var *a, mil_var *b) { return gen_op(g, "add", "add", "x", a, "y", b, NULL); }

/* Global average pooling, flatten, linear to 1000 classes. */
static mil_var *classifier(gen *g, mil_var *x, int c) {
  int32_t axes[2] = {-2, -1}, shape[2] = {1, c};
  int64_t ws[2] = {1000, c}, bs = 1000;
  mil_var *p = gen_op(g, "reduce_mean", "pool", "x", x, "axes", gen_i32(g, "axes", false, 2, axes), "keep_dims",
                      gen_bool(g, "keep_dims", true), NULL);
  mil_var *f = gen_op(g, "reshape", "flatten", "x", p, "shape", gen_i32(g, "shape", false, 2, shape), NULL);
  return gen_op(g, "linear", "fc", "x", f, "weight", gen_weight(g, "fc_weight", 2, ws), "bias",
                gen_weight(g, "fc_bias", 1, &bs), NULL);
}

static mil_var *max_pool(gen *g, mil_var *x) {
  int32_t k[2] = {3, 3}, s[2] = {2, 2}, pad[4] = {1, 1, 1, 1};
  return gen_op(g, "max_pool", "pool", "x", x, "kernel_sizes", gen_i32(g, "kernel_sizes", false, 2, k), "strides",
                gen_i32(g, "strides", false, 2, s), "pad_type", gen_str(g, "pad_type", "custom"), "pad",
                gen_i32(g, "pad", false, 4, pad), "ceil_mode", gen_bool(g, "ceil_mode", false), NULL);
}

static mil_var *resnet18(gen *g, mil_var *x) {
  x = max_pool(g, cba(g, x, 3, 64, 7, 2, 1, ACT_RELU));
  int cin = 64;
  const int widths[4] = {64, 128, 256, 512};
  for (int s = 0; s < 4; s++) {
    for (int b = 0; b < 2; b++) {
      int cout = widths[s], stride = s > 0 && b == 0 ? 2 : 1;
      mil_var *y = cba(g, x, cin, cout, 3, stride, 1, ACT_RELU);
      y = cba(g, y, cout, cout, 3, 1, 1, ACT_NONE);
      mil_var *idn = stride != 1 || cin != cout ? cba(g, x, cin, cout, 1, stride, 1, ACT_NONE) : x;
      x = activation(g, add(g, y, idn), ACT_RELU);
      cin = cout;
    }
  }
  return classifier(g, x, 512);
}

static mil_var *mobilenet_v2(gen *g, mil_var *x) {
  /* expansion t, channels c, repeats n, stride s */
  static const int cfg[7][4] = {{1, 16, 1, 1},  {6, 24, 2, 2},  {6, 32, 3, 2},  {6, 64, 4, 2},
                                {6, 96, 3, 1},  {6, 160, 3, 2}, {6, 320, 1, 1}};
  x = cba(g, x, 3, 32, 3, 2, 1, ACT_RELU6);
  int cin = 32;
  for (int i = 0; i < 7; i++) {
    for (int r = 0; r < cfg[i][2]; r++) {
      int hid = cin * cfg[i][0], cout = cfg[i][1], stride = r == 0 ? cfg[i][3] : 1;
      mil_var *y = cfg[i][0] != 1 ? cba(g, x, cin, hid, 1, 1, 1, ACT_RELU6) : x;
      y = cba(g, y, hid, hid, 3, stride, hid, ACT_RELU6);
      y = cba(g, y, hid, cout, 1, 1, 1, ACT_NONE);
      x = stride == 1 && cin == cout ? add(g, x, y) : y;
      cin = cout;
    }
  }
  return classifier(g, cba(g, x, cin, 1280, 1, 1, 1, ACT_RELU6), 1280);
}

static mil_var *regnet_x_400mf(gen *g, mil_var *x) {
  static const int widths[4] = {32, 64, 160, 400}, depths[4] = {1, 2, 7, 12};
  x = cba(g, x, 3, 32, 3, 2, 1, ACT_RELU);
  int cin = 32;
  for (int s = 0; s < 4; s++) {
    for (int b = 0; b < depths[s]; b++) {
      int w = widths[s], stride = b == 0 ? 2 : 1;
      mil_var *proj = stride != 1 || cin != w ? cba(g, x, cin, w, 1, stride, 1, ACT_NONE) : x;
      mil_var *y = cba(g, x, cin, w, 1, 1, 1, ACT_RELU);
      y = cba(g, y, w, w, 3, stride, w / 16, ACT_RELU);
      y = cba(g, y, w, w, 1, 1, 1, ACT_NONE);
      x = activation(g, add(g, proj, y), ACT_RELU);
      cin = w;
    }
  }
  return classifier(g, x, 400);
}

/* torch.cat((a, b), dim=1) */
static mil_var *concat(gen *g, mil_var *a, mil_var *b) {
  if (g->st != MIL_OK) return NULL;
  char nm[64];
  mil_var *axis = gen_i32(g, "axis", true, 1, (const int32_t[]){1});
  mil_var *il = gen_bool(g, "interleave", false);
  mil_op *o = mil_op_new(g->p, "concat", gen_fresh(g, nm, sizeof nm, "cat"));
  mil_var *vals[2] = {a, b};
  if (!o || !axis || !il) return NULL;
  mil_op_add_input_tuple(o, "values", 2, vals);
  mil_op_add_input(o, "axis", axis);
  mil_op_add_input(o, "interleave", il);
  mil_var *out = mil_op_add_output(o, nm, mil_type_unknown(g->p));
  mil_block_append(g->b, o);
  if ((g->st = mil_op_infer(o, g->d)) != MIL_OK) return NULL;
  return out;
}

/* x.chunk(2, dim=1): split into two halves. */
static void split2(gen *g, mil_var *x, mil_var **lo, mil_var **hi) {
  *lo = *hi = NULL;
  if (g->st != MIL_OK) return;
  char nm[64], o1[80], o2[80];
  mil_var *ns = gen_i32(g, "num_splits", true, 1, (const int32_t[]){2});
  mil_var *axis = gen_i32(g, "axis", true, 1, (const int32_t[]){1});
  mil_op *o = mil_op_new(g->p, "split", gen_fresh(g, nm, sizeof nm, "chunk"));
  if (!o || !ns || !axis) return;
  snprintf(o1, sizeof o1, "%s_0", nm);
  snprintf(o2, sizeof o2, "%s_1", nm);
  mil_op_add_input(o, "x", x);
  mil_op_add_input(o, "num_splits", ns);
  mil_op_add_input(o, "axis", axis);
  *lo = mil_op_add_output(o, o1, mil_type_unknown(g->p));
  *hi = mil_op_add_output(o, o2, mil_type_unknown(g->p));
  mil_block_append(g->b, o);
  if ((g->st = mil_op_infer(o, g->d)) != MIL_OK) *lo = *hi = NULL;
}

/* torchvision's channel_shuffle(x, 2): view (1, 2, C/2, H, W), transpose
 * the group axes, view back. */
static mil_var *channel_shuffle(gen *g, mil_var *x) {
  int32_t c = dim(x, 1), h = dim(x, 2), w = dim(x, 3);
  int32_t s5[5] = {1, 2, c / 2, h, w}, perm[5] = {0, 2, 1, 3, 4}, s4[4] = {1, c, h, w};
  mil_var *r = gen_op(g, "reshape", "view", "x", x, "shape", gen_i32(g, "shape", false, 5, s5), NULL);
  mil_var *t = gen_op(g, "transpose", "shuffle", "x", r, "perm", gen_i32(g, "perm", false, 5, perm), NULL);
  return gen_op(g, "reshape", "view", "x", t, "shape", gen_i32(g, "shape", false, 4, s4), NULL);
}

static mil_var *shuffle_branch(gen *g, mil_var *x, int cin, int half, int stride) {
  mil_var *y = cba(g, x, cin, half, 1, 1, 1, ACT_RELU);
  y = cba(g, y, half, half, 3, stride, half, ACT_NONE);
  return cba(g, y, half, half, 1, 1, 1, ACT_RELU);
}

static mil_var *shufflenet_v2_x1_0(gen *g, mil_var *x) {
  static const int outs[3] = {116, 232, 464}, reps[3] = {4, 8, 4};
  x = max_pool(g, cba(g, x, 3, 24, 3, 2, 1, ACT_RELU));
  int cin = 24;
  for (int s = 0; s < 3; s++) {
    int half = outs[s] / 2;
    for (int r = 0; r < reps[s]; r++) {
      mil_var *y;
      if (r == 0) {
        mil_var *b1 = cba(g, x, cin, cin, 3, 2, cin, ACT_NONE);
        b1 = cba(g, b1, cin, half, 1, 1, 1, ACT_RELU);
        y = concat(g, b1, shuffle_branch(g, x, cin, half, 2));
      } else {
        mil_var *x1, *x2;
        split2(g, x, &x1, &x2);
        y = concat(g, x1, shuffle_branch(g, x2, half, half, 1));
      }
      x = channel_shuffle(g, y);
      cin = outs[s];
    }
  }
  return classifier(g, cba(g, x, cin, 1024, 1, 1, 1, ACT_RELU), 1024);
}

/* Squeeze-excitation: x * sigmoid(fc2(silu(fc1(mean(x))))) with 1x1 convs. */
static mil_var *squeeze_excite(gen *g, mil_var *x, int c, int sq) {
  int32_t axes[2] = {-2, -1};
  mil_var *s = gen_op(g, "reduce_mean", "se_pool", "x", x, "axes", gen_i32(g, "axes", false, 2, axes), "keep_dims",
                      gen_bool(g, "keep_dims", true), NULL);
  s = activation(g, conv(g, s, c, sq, 1, 1, 1, true), ACT_SILU);
  s = gen_op(g, "sigmoid", "se_gate", "x", conv(g, s, sq, c, 1, 1, 1, true), NULL);
  return gen_op(g, "mul", "se_scale", "x", x, "y", s, NULL);
}

static mil_var *efficientnet_b0(gen *g, mil_var *x) {
  /* expansion, kernel, stride, channels, repeats */
  static const int cfg[7][5] = {{1, 3, 1, 16, 1},  {6, 3, 2, 24, 2},  {6, 5, 2, 40, 2},  {6, 3, 2, 80, 3},
                                {6, 5, 1, 112, 3}, {6, 5, 2, 192, 4}, {6, 3, 1, 320, 1}};
  x = cba(g, x, 3, 32, 3, 2, 1, ACT_SILU);
  int cin = 32;
  for (int i = 0; i < 7; i++) {
    for (int r = 0; r < cfg[i][4]; r++) {
      int hid = cin * cfg[i][0], k = cfg[i][1], stride = r == 0 ? cfg[i][2] : 1, cout = cfg[i][3];
      mil_var *y = cfg[i][0] != 1 ? cba(g, x, cin, hid, 1, 1, 1, ACT_SILU) : x;
      y = cba(g, y, hid, hid, k, stride, hid, ACT_SILU);
      y = squeeze_excite(g, y, hid, cin / 4 > 1 ? cin / 4 : 1);
      y = cba(g, y, hid, cout, 1, 1, 1, ACT_NONE);
      x = stride == 1 && cin == cout ? add(g, x, y) : y;
      cin = cout;
    }
  }
  return classifier(g, cba(g, x, cin, 1280, 1, 1, 1, ACT_SILU), 1280);
}

static const struct {
  const char *name;
  mil_var *(*build)(gen *, mil_var *);
} k_nets[] = {
    {"resnet18", resnet18},
    {"mobilenet_v2", mobilenet_v2},
    {"regnet_x_400mf", regnet_x_400mf},
    {"shufflenet_v2_x1_0", shufflenet_v2_x1_0},
    {"efficientnet_b0", efficientnet_b0},
};

static int usage(void) {
  fprintf(stderr, "usage: gen_cnn -o OUT.mlpackage --net NAME [--validate] [--quiet]\nnetworks:");
  for (size_t i = 0; i < sizeof k_nets / sizeof k_nets[0]; i++) fprintf(stderr, " %s", k_nets[i].name);
  fprintf(stderr, "\n");
  return 2;
}

int main(int argc, char **argv) {
  const char *out = NULL, *net = NULL;
  bool validate = false, quiet = false;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "-o") == 0 && i + 1 < argc) out = argv[++i];
    else if (strcmp(argv[i], "--net") == 0 && i + 1 < argc) net = argv[++i];
    else if (strcmp(argv[i], "--validate") == 0) validate = true;
    else if (strcmp(argv[i], "--quiet") == 0) quiet = true;
    else return usage();
  }
  int which = -1;
  for (size_t i = 0; net && i < sizeof k_nets / sizeof k_nets[0]; i++)
    if (strcmp(net, k_nets[i].name) == 0) which = (int)i;
  if (!out || which < 0) return usage();
  double t0 = gen_now();
  size_t pattern_n = (size_t)8 << 20, positive_n = (size_t)1 << 20;
  float *pattern = gen_pattern(pattern_n, 0.04f, 0.0f, 0x9E3779B97F4A7C15ULL);
  float *positive = gen_pattern(positive_n, 1.0f, 1.0f, 0xD1B54A32D192ED03ULL);
  mil_diag d;
  mil_diag_init(&d);
  gen g;
  int64_t xs[4] = {1, 3, 224, 224};
  mil_var *x = positive ? gen_start(&g, &d, pattern, pattern_n, positive, positive_n, 4, xs) : NULL;
  if (!x) {
    fprintf(stderr, "gen_cnn: out of memory\n");
    return 1;
  }
  x = k_nets[which].build(&g, x);
  int64_t ops = g.st == MIL_OK ? mil_program_count_ops(g.p) : 0;
  double t_build = gen_now() - t0, t_save = 0;
  gen_finish(&g, x, validate, out, &t_save);
  if (g.st != MIL_OK) {
    const char *msg = mil_diag_first_error(&d);
    fprintf(stderr, "gen_cnn: %s: %s\n", net, msg ? msg : mil_status_str(g.st));
  } else if (!quiet) {
    printf("%s: %s, %lld ops, %llu weights, %.1f MB fp32, built in %.2f s, written in %.2f s\n", out, net,
           (long long)ops, (unsigned long long)g.n_weights, (double)g.weight_bytes / 1e6, t_build, t_save);
  }
  mil_diag_clear(&d);
  free(pattern);
  free(positive);
  return g.st == MIL_OK ? 0 : 1;
}
