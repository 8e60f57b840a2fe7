/* Generator of a GPT-2-small-sized ONNX model for benchmarking `mil convert`.
 *
 * Writes, through the protobuf-c types generated from ONNX's onnx.proto
 * (Onnx__ModelProto and friends, packed by onnx__model_proto__pack), the
 * graph a PyTorch export of a GPT-2 decoder stack (GPT2Model, no LM head)
 * holds at opset 17:
 *
 *   input_ids (int64 [1, S]) -> Gather(wte) + Gather(wpe, positions);
 *   per layer: LayerNormalization; q/k/v as MatMul + Add bias, Reshape to
 *     [1, S, heads, 64], Transpose; MatMul(q, k^T), Mul by 1/sqrt(64), Add
 *     the causal mask, Softmax(axis -1), MatMul with v, Transpose, Reshape,
 *     MatMul + Add (projection); residual Add; LayerNormalization; MatMul +
 *     Add to 4H; GELU in its erf form (Div, Erf, Add, Mul, Mul: opset 17 has
 *     no Gelu op); MatMul + Add back to H; residual Add;
 *   a final LayerNormalization -> last_hidden_state (float [1, S, H]).
 *
 * Every initializer of 1024 bytes or more (onnx.external_data_helper's
 * default size_threshold) is stored as EXTERNAL data in one file next to
 * the model, with the location/offset/length keys of TensorProto's
 * external_data (offsets aligned to 64 bytes); smaller ones (shapes, the
 * positions) stay in raw_data. Weights are distinct pseudo-random fp32
 * values in [-0.02, 0.02) (LayerNorm scales near 1), streamed to the file
 * tensor by tensor, so generating never holds more than a chunk.
 *
 * With --inline every weight stays in raw_data inside the .onnx instead (as
 * torch.onnx.export writes a model under 2 GB), and no .bin is written.
 *
 * usage: gen_onnx_gpt2 -o OUT.onnx [--layers L] [--hidden H] [--heads N]
 *                      [--seq S] [--vocab V] [--positions P] [--inline] [--quiet]
 * Defaults are GPT-2 small: 12 layers, hidden 768, 12 heads, vocabulary
 * 50257, 1024 positions (124 M parameters, about 498 MB of fp32 weights),
 * sequence length 128 (fixed). The weights go to OUT.onnx's basename with
 * ".bin" instead of ".onnx". Prints one line: nodes, initializers, external
 * bytes, seconds. */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "onnx.pb-c.h"

typedef struct gpt2_cfg {
  int layers, hidden, heads, seq, vocab, positions;
  bool quiet, inline_weights;
  const char *out;
} gpt2_cfg;

typedef struct gen {
  Onnx__GraphProto *g;
  size_t cap_node, cap_init;
  FILE *bin; /* NULL: every weight inline */
  const char *bin_name; /* the location key: the .bin's basename */
  uint64_t offset;      /* bytes written to the .bin so far */
  uint64_t seed;
  int tmp_id;
} gen;

static void die(const char *what) {
  fprintf(stderr, "gen_onnx_gpt2: %s: %s\n", what, errno ? strerror(errno) : "failed");
  exit(1);
}

static void *xcalloc(size_t n, size_t sz) {
  void *p = calloc(n ? n : 1, sz);
  if (!p) die("out of memory");
  return p;
}

static char *xstrdup(const char *s) {
  char *p = strdup(s);
  if (!p) die("out of memory");
  return p;
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* xorshift64*: the same sequence on every run, so two runs write equal files */
static float next_weight(gen *g, float lo, float hi) {
  g->seed ^= g->seed >> 12;
  g->seed ^= g->seed << 25;
  g->seed ^= g->seed >> 27;
  uint64_t r = g->seed * 0x2545F4914F6CDD1DULL;
  return lo + (hi - lo) * (float)((double)(r >> 40) / (double)(1ULL << 24));
}

static Onnx__StringStringEntryProto *kv(const char *k, const char *v) {
  Onnx__StringStringEntryProto *e = xcalloc(1, sizeof *e);
  onnx__string_string_entry_proto__init(e);
  e->key = xstrdup(k);
  e->value = xstrdup(v);
  return e;
}

static void add_init(gen *g, Onnx__TensorProto *t) {
  if (g->g->n_initializer == g->cap_init) {
    g->cap_init = g->cap_init ? 2 * g->cap_init : 64;
    g->g->initializer = realloc(g->g->initializer, g->cap_init * sizeof *g->g->initializer);
    if (!g->g->initializer) die("out of memory");
  }
  g->g->initializer[g->g->n_initializer++] = t;
}

static Onnx__TensorProto *tensor_new(const char *name, int32_t dtype, int rank, const int64_t *dims) {
  Onnx__TensorProto *t = xcalloc(1, sizeof *t);
  onnx__tensor_proto__init(t);
  t->name = xstrdup(name);
  t->has_data_type = 1;
  t->data_type = dtype;
  t->n_dims = (size_t)rank;
  t->dims = xcalloc((size_t)rank, sizeof *t->dims);
  memcpy(t->dims, dims, (size_t)rank * sizeof *dims);
  return t;
}

/* an fp32 weight in [lo, hi): inline below 1024 bytes, else streamed to the .bin */
static const char *weight(gen *g, const char *name, int rank, const int64_t *dims, float lo, float hi) {
  Onnx__TensorProto *t = tensor_new(name, ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, rank, dims);
  uint64_t n = 1;
  for (int i = 0; i < rank; i++) n *= (uint64_t)dims[i];
  uint64_t bytes = n * sizeof(float);
  if (bytes < 1024 || !g->bin) {
    float *v = xcalloc((size_t)n, sizeof *v);
    for (uint64_t i = 0; i < n; i++) v[i] = next_weight(g, lo, hi);
    t->has_raw_data = 1;
    t->raw_data.data = (uint8_t *)v;
    t->raw_data.len = (size_t)bytes;
  } else {
    static const char zeros[64];
    uint64_t pad = (64 - g->offset % 64) % 64;
    if (pad && fwrite(zeros, 1, (size_t)pad, g->bin) != pad) die("writing the weights");
    g->offset += pad;
    float chunk[4096];
    for (uint64_t i = 0; i < n;) {
      size_t k = n - i < 4096 ? (size_t)(n - i) : 4096;
      for (size_t j = 0; j < k; j++) chunk[j] = next_weight(g, lo, hi);
      if (fwrite(chunk, sizeof(float), k, g->bin) != k) die("writing the weights");
      i += k;
    }
    char off[32], len[32];
    snprintf(off, sizeof off, "%llu", (unsigned long long)g->offset);
    snprintf(len, sizeof len, "%llu", (unsigned long long)bytes);
    t->has_data_location = 1;
    t->data_location = ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL;
    t->n_external_data = 3;
    t->external_data = xcalloc(3, sizeof *t->external_data);
    t->external_data[0] = kv("location", g->bin_name);
    t->external_data[1] = kv("offset", off);
    t->external_data[2] = kv("length", len);
    g->offset += bytes;
  }
  add_init(g, t);
  return t->name;
}

/* a small tensor kept inline in raw_data (shapes, positions, the mask) */
static const char *inline_tensor(gen *g, const char *name, int32_t dtype, int rank, const int64_t *dims, const void *data,
                                 size_t bytes) {
  Onnx__TensorProto *t = tensor_new(name, dtype, rank, dims);
  t->has_raw_data = 1;
  t->raw_data.data = xcalloc(bytes, 1);
  memcpy(t->raw_data.data, data, bytes);
  t->raw_data.len = bytes;
  add_init(g, t);
  return t->name;
}

static Onnx__AttributeProto *attr_new(const char *name, Onnx__AttributeProto__AttributeType type) {
  Onnx__AttributeProto *a = xcalloc(1, sizeof *a);
  onnx__attribute_proto__init(a);
  a->name = xstrdup(name);
  a->has_type = 1;
  a->type = type;
  return a;
}

static Onnx__AttributeProto *attr_i(const char *name, int64_t v) {
  Onnx__AttributeProto *a = attr_new(name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT);
  a->has_i = 1;
  a->i = v;
  return a;
}

static Onnx__AttributeProto *attr_f(const char *name, float v) {
  Onnx__AttributeProto *a = attr_new(name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT);
  a->has_f = 1;
  a->f = v;
  return a;
}

static Onnx__AttributeProto *attr_ints(const char *name, int n, const int64_t *v) {
  Onnx__AttributeProto *a = attr_new(name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS);
  a->n_ints = (size_t)n;
  a->ints = xcalloc((size_t)n, sizeof *a->ints);
  memcpy(a->ints, v, (size_t)n * sizeof *v);
  return a;
}

/* node(g, op, hint, n_in, inputs..., n_attr, attrs...): appends one node with
 * one output named "<hint>_<id>" and returns that name */
static const char *node(gen *g, const char *op, const char *hint, int n_in, ...) {
  Onnx__NodeProto *nd = xcalloc(1, sizeof *nd);
  onnx__node_proto__init(nd);
  char nm[96];
  snprintf(nm, sizeof nm, "%s_%d", hint, g->tmp_id++);
  nd->op_type = xstrdup(op);
  nd->name = xstrdup(nm);
  nd->n_output = 1;
  nd->output = xcalloc(1, sizeof *nd->output);
  nd->output[0] = xstrdup(nm);
  va_list ap;
  va_start(ap, n_in);
  nd->n_input = (size_t)n_in;
  nd->input = xcalloc((size_t)n_in, sizeof *nd->input);
  for (int i = 0; i < n_in; i++) nd->input[i] = xstrdup(va_arg(ap, const char *));
  int n_attr = va_arg(ap, int);
  nd->n_attribute = (size_t)n_attr;
  nd->attribute = xcalloc((size_t)n_attr, sizeof *nd->attribute);
  for (int i = 0; i < n_attr; i++) nd->attribute[i] = va_arg(ap, Onnx__AttributeProto *);
  va_end(ap);
  if (g->g->n_node == g->cap_node) {
    g->cap_node = g->cap_node ? 2 * g->cap_node : 256;
    g->g->node = realloc(g->g->node, g->cap_node * sizeof *g->g->node);
    if (!g->g->node) die("out of memory");
  }
  g->g->node[g->g->n_node++] = nd;
  return nd->output[0];
}

static Onnx__ValueInfoProto *value_info(const char *name, int32_t elem, int rank, const int64_t *dims) {
  Onnx__ValueInfoProto *v = xcalloc(1, sizeof *v);
  onnx__value_info_proto__init(v);
  v->name = xstrdup(name);
  Onnx__TypeProto *tp = xcalloc(1, sizeof *tp);
  onnx__type_proto__init(tp);
  Onnx__TypeProto__Tensor *tt = xcalloc(1, sizeof *tt);
  onnx__type_proto__tensor__init(tt);
  tt->has_elem_type = 1;
  tt->elem_type = elem;
  Onnx__TensorShapeProto *sh = xcalloc(1, sizeof *sh);
  onnx__tensor_shape_proto__init(sh);
  sh->n_dim = (size_t)rank;
  sh->dim = xcalloc((size_t)rank, sizeof *sh->dim);
  for (int i = 0; i < rank; i++) {
    Onnx__TensorShapeProto__Dimension *d = xcalloc(1, sizeof *d);
    onnx__tensor_shape_proto__dimension__init(d);
    d->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
    d->dim_value = dims[i];
    sh->dim[i] = d;
  }
  tt->shape = sh;
  tp->value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
  tp->tensor_type = tt;
  v->type = tp;
  return v;
}

/* x @ W + b, W stored (in, out) as torch's Conv1D keeps GPT-2's weights */
static const char *dense(gen *g, const char *x, int layer, const char *what, int in, int out) {
  char nm[96];
  int64_t wd[2] = {in, out}, bd[1] = {out};
  snprintf(nm, sizeof nm, "h.%d.%s.weight", layer, what);
  const char *w = weight(g, nm, 2, wd, -0.02f, 0.02f);
  snprintf(nm, sizeof nm, "h.%d.%s.bias", layer, what);
  const char *b = weight(g, nm, 1, bd, -0.02f, 0.02f);
  const char *mm = node(g, "MatMul", what, 2, x, w, 0);
  return node(g, "Add", what, 2, mm, b, 0);
}

static const char *layer_norm(gen *g, const char *x, const char *prefix, int H) {
  char nm[96];
  int64_t hd[1] = {H};
  snprintf(nm, sizeof nm, "%s.weight", prefix);
  const char *gamma = weight(g, nm, 1, hd, 0.9f, 1.1f);
  snprintf(nm, sizeof nm, "%s.bias", prefix);
  const char *beta = weight(g, nm, 1, hd, -0.02f, 0.02f);
  return node(g, "LayerNormalization", "ln", 3, x, gamma, beta, 2, attr_i("axis", -1), attr_f("epsilon", 1e-5f));
}

static const char *block(gen *g, const gpt2_cfg *c, int l, const char *x, const char *split_shape,
                         const char *merge_shape, const char *scale, const char *mask, const char *half,
                         const char *one, const char *sqrt2) {
  int H = c->hidden;
  char nm[64];
  snprintf(nm, sizeof nm, "h.%d.ln_1", l);
  const char *h = layer_norm(g, x, nm, H);
  int64_t perm_q[4] = {0, 2, 1, 3}, perm_k[4] = {0, 2, 3, 1};
  const char *q = node(g, "Reshape", "q", 2, dense(g, h, l, "attn.q", H, H), split_shape, 0);
  q = node(g, "Transpose", "q_t", 1, q, 1, attr_ints("perm", 4, perm_q));
  const char *k = node(g, "Reshape", "k", 2, dense(g, h, l, "attn.k", H, H), split_shape, 0);
  k = node(g, "Transpose", "k_t", 1, k, 1, attr_ints("perm", 4, perm_k));
  const char *v = node(g, "Reshape", "v", 2, dense(g, h, l, "attn.v", H, H), split_shape, 0);
  v = node(g, "Transpose", "v_t", 1, v, 1, attr_ints("perm", 4, perm_q));
  const char *s = node(g, "MatMul", "scores", 2, q, k, 0);
  s = node(g, "Mul", "scaled", 2, s, scale, 0);
  s = node(g, "Add", "masked", 2, s, mask, 0);
  s = node(g, "Softmax", "probs", 1, s, 1, attr_i("axis", -1));
  const char *a = node(g, "MatMul", "attn", 2, s, v, 0);
  a = node(g, "Transpose", "attn_t", 1, a, 1, attr_ints("perm", 4, perm_q));
  a = node(g, "Reshape", "attn_merged", 2, a, merge_shape, 0);
  a = dense(g, a, l, "attn.c_proj", H, H);
  x = node(g, "Add", "resid1", 2, x, a, 0);
  snprintf(nm, sizeof nm, "h.%d.ln_2", l);
  h = layer_norm(g, x, nm, H);
  h = dense(g, h, l, "mlp.c_fc", H, 4 * H);
  /* gelu(h) = 0.5 * h * (1 + erf(h / sqrt(2))) */
  const char *e = node(g, "Erf", "erf", 1, node(g, "Div", "div", 2, h, sqrt2, 0), 0);
  e = node(g, "Add", "erf1", 2, e, one, 0);
  e = node(g, "Mul", "gelu_x", 2, h, e, 0);
  e = node(g, "Mul", "gelu", 2, e, half, 0);
  h = dense(g, e, l, "mlp.c_proj", 4 * H, H);
  return node(g, "Add", "resid2", 2, x, h, 0);
}

static int usage(void) {
  fprintf(stderr, "usage: gen_onnx_gpt2 -o OUT.onnx [--layers L] [--hidden H] [--heads N] [--seq S] [--vocab V]\n"
                  "                     [--positions P] [--inline] [--quiet]\n");
  return 2;
}

int main(int argc, char **argv) {
  gpt2_cfg c = {12, 768, 12, 128, 50257, 1024, false, false, NULL};
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    int *slot = !strcmp(a, "--layers")      ? &c.layers
                : !strcmp(a, "--hidden")    ? &c.hidden
                : !strcmp(a, "--heads")     ? &c.heads
                : !strcmp(a, "--seq")       ? &c.seq
                : !strcmp(a, "--vocab")     ? &c.vocab
                : !strcmp(a, "--positions") ? &c.positions
                                            : NULL;
    if (slot && i + 1 < argc) {
      *slot = atoi(argv[++i]);
      if (*slot <= 0) return usage();
    } else if (!strcmp(a, "-o") && i + 1 < argc) {
      c.out = argv[++i];
    } else if (!strcmp(a, "--quiet")) {
      c.quiet = true;
    } else if (!strcmp(a, "--inline")) {
      c.inline_weights = true;
    } else {
      return usage();
    }
  }
  size_t ol = c.out ? strlen(c.out) : 0;
  if (!c.out || ol < 6 || strcmp(c.out + ol - 5, ".onnx") || c.hidden % c.heads || c.seq > c.positions) return usage();
  double t0 = now_s();

  /* OUT.onnx -> OUT.bin; the location key is its basename */
  char *bin_path = xcalloc(ol + 1, 1);
  memcpy(bin_path, c.out, ol - 5);
  strcat(bin_path, ".bin");
  const char *slash = strrchr(bin_path, '/');
  gen g = {0};
  g.bin_name = slash ? slash + 1 : bin_path;
  g.seed = 0x9E3779B97F4A7C15ULL;
  errno = 0;
  if (!c.inline_weights && !(g.bin = fopen(bin_path, "wb"))) die(bin_path);
  Onnx__GraphProto graph = ONNX__GRAPH_PROTO__INIT;
  graph.name = "gpt2";
  g.g = &graph;

  int H = c.hidden, S = c.seq, dh = H / c.heads;
  int64_t ids_dims[2] = {1, S}, out_dims[3] = {1, S, H};
  int64_t wte_d[2] = {c.vocab, H}, wpe_d[2] = {c.positions, H};
  const char *wte = weight(&g, "wte.weight", 2, wte_d, -0.02f, 0.02f);
  const char *wpe = weight(&g, "wpe.weight", 2, wpe_d, -0.02f, 0.02f);

  /* small constants: positions, shapes, scalars, the causal mask */
  int64_t *pos = xcalloc((size_t)S, sizeof *pos);
  for (int i = 0; i < S; i++) pos[i] = i;
  int64_t sd[1] = {S}, four[1] = {4}, three[1] = {3};
  const char *positions = inline_tensor(&g, "position_ids", ONNX__TENSOR_PROTO__DATA_TYPE__INT64, 1, sd, pos,
                                        (size_t)S * sizeof *pos);
  int64_t split[4] = {1, S, c.heads, dh}, merge[3] = {1, S, H};
  const char *split_shape = inline_tensor(&g, "split_heads_shape", ONNX__TENSOR_PROTO__DATA_TYPE__INT64, 1, four, split,
                                          sizeof split);
  const char *merge_shape = inline_tensor(&g, "merge_heads_shape", ONNX__TENSOR_PROTO__DATA_TYPE__INT64, 1, three, merge,
                                          sizeof merge);
  float fs = 1.0f / sqrtf((float)dh), fhalf = 0.5f, fone = 1.0f, fsqrt2 = sqrtf(2.0f);
  const char *scale = inline_tensor(&g, "attn_scale", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 0, NULL, &fs, sizeof fs);
  const char *half = inline_tensor(&g, "half", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 0, NULL, &fhalf, sizeof fhalf);
  const char *one = inline_tensor(&g, "one", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 0, NULL, &fone, sizeof fone);
  const char *sqrt2 = inline_tensor(&g, "sqrt2", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 0, NULL, &fsqrt2, sizeof fsqrt2);
  float *mask = xcalloc((size_t)S * (size_t)S, sizeof *mask);
  for (int i = 0; i < S; i++)
    for (int j = i + 1; j < S; j++) mask[(size_t)i * (size_t)S + (size_t)j] = -10000.0f;
  int64_t mask_d[4] = {1, 1, S, S};
  const char *mask_t = inline_tensor(&g, "causal_mask", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 4, mask_d, mask,
                                     (size_t)S * (size_t)S * sizeof *mask);

  const char *x = node(&g, "Gather", "tok_emb", 2, wte, "input_ids", 1, attr_i("axis", 0));
  const char *p = node(&g, "Gather", "pos_emb", 2, wpe, positions, 1, attr_i("axis", 0));
  x = node(&g, "Add", "emb", 2, x, p, 0);
  for (int l = 0; l < c.layers; l++) x = block(&g, &c, l, x, split_shape, merge_shape, scale, mask_t, half, one, sqrt2);
  x = layer_norm(&g, x, "ln_f", H);
  /* the graph output keeps its PyTorch name */
  g.g->node[g.g->n_node - 1]->output[0] = "last_hidden_state";

  if (g.bin && fclose(g.bin)) die(bin_path);
  Onnx__ValueInfoProto *in = value_info("input_ids", ONNX__TENSOR_PROTO__DATA_TYPE__INT64, 2, ids_dims);
  Onnx__ValueInfoProto *out = value_info("last_hidden_state", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 3, out_dims);
  graph.n_input = 1;
  graph.input = &in;
  graph.n_output = 1;
  graph.output = &out;
  Onnx__OperatorSetIdProto opset = ONNX__OPERATOR_SET_ID_PROTO__INIT, *opsets[1] = {&opset};
  opset.domain = "";
  opset.has_version = 1;
  opset.version = 17;
  Onnx__ModelProto model = ONNX__MODEL_PROTO__INIT;
  model.has_ir_version = 1;
  model.ir_version = 8;
  model.producer_name = "libmil bench/gen_onnx_gpt2";
  model.n_opset_import = 1;
  model.opset_import = opsets;
  model.graph = &graph;

  size_t len = onnx__model_proto__get_packed_size(&model);
  uint8_t *buf = xcalloc(len, 1);
  onnx__model_proto__pack(&model, buf);
  /* write a temporary sibling, then rename: never a half-written model */
  char *tmp = xcalloc(ol + 8, 1);
  snprintf(tmp, ol + 8, "%s.tmp", c.out);
  errno = 0;
  FILE *f = fopen(tmp, "wb");
  if (!f || fwrite(buf, 1, len, f) != len || fclose(f) || rename(tmp, c.out)) die(c.out);
  if (!c.quiet)
    printf("gen_onnx_gpt2: %zu nodes, %zu initializers, %llu bytes of external data in %s, %zu bytes in %s, %.2f s\n",
           graph.n_node, graph.n_initializer, (unsigned long long)g.offset, g.bin ? bin_path : "(none)", len, c.out,
           now_s() - t0);
  return 0;
}
