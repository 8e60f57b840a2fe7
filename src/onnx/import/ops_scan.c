/* ONNX Scan (opsets 8, 9+), unrolled: the body graph is converted once per
 * step (and per batch item for opset 8, whose inputs lead with a batch
 * axis and whose body sees one item), with its state inputs bound to the
 * previous step's state outputs and its scan inputs to the step's slice
 * (gather along the scan axis, from the end for a reverse direction); the
 * final states are the state outputs, and the scan outputs the per-step
 * outputs stacked along their axis (reversed for a reverse direction).
 * Each step's vars are renamed fresh, as the same ONNX names recur. The
 * step count must be known at conversion (at most SCAN_MAX steps); opset
 * 8's sequence_lens must be absent. */
#include <string.h>

#include "onnx/import/import_internal.h"

#define SCAN_MAX 256
#define SCAN_IO 32

/* Fresh names for the outputs of op and of every op after it, nested
 * blocks included. */
static mil_status rename_from(onnx_ctx *c, pass_names *names, mil_op *op) {
  for (; op; op = op->next) {
    for (int32_t k = 0; k < op->n_outputs; k++) {
      const char *nm = pass_names_fresh(names, c->p, op->outputs[k]->name ? op->outputs[k]->name : op->type);
      if (!nm) return MIL_ERR_NOMEM;
      op->outputs[k]->name = nm;
      if (op->n_outputs == 1) op->name = nm;
    }
    for (int32_t b = 0; b < op->n_blocks; b++) {
      mil_status st = rename_from(c, names, op->blocks[b]->first);
      if (st != MIL_OK) return st;
    }
  }
  return MIL_OK;
}

/* One run of the body: binds in[0..n_in) to its inputs, converts it and
 * gets its outputs into out[]; the new ops' outputs get fresh names. */
static mil_status run_body(onnx_ctx *c, const Onnx__GraphProto *g, mil_var **in, int32_t n_in, mil_var **out) {
  if ((int32_t)g->n_input != n_in) return onnx_fail(c, MIL_ERR_INVALID, "the body has %d inputs, expected %d", (int)g->n_input, (int)n_in);
  mil_op *last = c->blk->last;
  onnx_node *node = c->node;
  mil_status st = onnx_scope_push(c);
  for (int32_t i = 0; st == MIL_OK && i < n_in; i++) st = onnx_bind(c, g->input[i]->name, in[i]);
  if (st == MIL_OK) st = onnx_convert_nodes(c, g);
  for (size_t i = 0; st == MIL_OK && i < g->n_output; i++)
    if (!(out[i] = onnx_lookup(c, g->output[i]->name))) st = MIL_ERR_INVALID;
  onnx_scope_pop(c);
  c->node = node;
  if (st != MIL_OK) return st == MIL_ERR_INVALID ? onnx_fail(c, st, "the body does not produce its outputs") : st;
  pass_names *names = pass_bld_names(&c->bld);
  return names ? rename_from(c, names, last ? last->next : c->blk->first) : MIL_ERR_NOMEM;
}

static mil_var *take(onnx_ctx *c, mil_var *x, int64_t i, int64_t axis) {
  return ONNX_OP(c, "gather", A("x", x), K("indices", onnx_i32(c, i)), K("axis", onnx_i32(c, axis)));
}

static mil_status conv_scan(onnx_ctx *c, onnx_node *n) {
  const Onnx__AttributeProto *ba = onnx_attr(n, "body");
  const Onnx__GraphProto *g = ba ? ba->g : NULL;
  if (!g) return onnx_fail(c, MIL_ERR_INVALID, "the body attribute is required");
  int64_t M = onnx_attr_i(n, "num_scan_inputs", -1);
  bool v8 = n->opset < 9;
  int32_t first = v8 ? 1 : 0; /* opset 8: sequence_lens first */
  if (v8 && onnx_in(n, 0)) return ONNX_UNSUP(c, "sequence_lens (per-item lengths)");
  int32_t N = n->n_in - first - (int32_t)M; /* state count */
  int32_t K_out = n->n_out - N;            /* scan outputs */
  if (M < 1 || N < 0 || K_out < 0 || N + M > SCAN_IO || N + K_out > SCAN_IO)
    return onnx_fail(c, MIL_ERR_INVALID, "num_scan_inputs %lld does not fit %d inputs and %d outputs", (long long)M,
                     (int)n->n_in, (int)n->n_out);
  if ((int32_t)g->n_output != N + K_out)
    return onnx_fail(c, MIL_ERR_INVALID, "the body has %d outputs, expected %d", (int)g->n_output, (int)(N + K_out));
  const int64_t *iax = NULL, *idir = NULL, *oax = NULL, *odir = NULL;
  int32_t niax = v8 ? -1 : onnx_attr_ints(n, "scan_input_axes", &iax), nidir = onnx_attr_ints(n, v8 ? "directions" : "scan_input_directions", &idir);
  int32_t noax = v8 ? -1 : onnx_attr_ints(n, "scan_output_axes", &oax), nodir = v8 ? -1 : onnx_attr_ints(n, "scan_output_directions", &odir);
  mil_var *in[SCAN_IO];
  for (int32_t i = 0; i < N + M; i++)
    if (!(in[i] = onnx_req(c, n, first + i))) return MIL_ERR_INVALID;
  /* batch items (opset 8) and steps */
  int64_t B = 1, T = -1, axes[SCAN_IO];
  for (int32_t j = 0; j < M; j++) {
    mil_var *x = in[N + j];
    int32_t r = onnx_rank(x);
    int64_t a = v8 ? 1 : (niax == M ? iax[j] : 0);
    if (r < 0 || !onnx_axis(&a, r)) return onnx_fail(c, MIL_ERR_INVALID, "scan axis out of range for scan input %d", (int)j);
    axes[j] = a;
    int64_t t = x->type->dims[a].size;
    if (t < 0) return ONNX_UNSUP(c, "the number of steps must be known at conversion");
    if (T >= 0 && t != T) return onnx_fail(c, MIL_ERR_INVALID, "scan inputs of %lld and %lld steps", (long long)T, (long long)t);
    T = t;
    if (v8) B = x->type->dims[0].size;
  }
  if (B < 0) return ONNX_UNSUP(c, "the batch size must be known at conversion");
  if (T < 1 || B < 1) return ONNX_UNSUP(c, "a scan over %lld steps and %lld batch items (empty)", (long long)T, (long long)B);
  if (T * B > SCAN_MAX) return ONNX_UNSUP(c, "%lld steps: at most %d are unrolled", (long long)(T * B), SCAN_MAX);
  /* the final states per batch item, the scan outputs per step */
  mil_var **finals = mil_program_alloc(c->p, (size_t)(N ? N : 1) * (size_t)B * sizeof *finals);
  mil_var **steps = mil_program_alloc(c->p, (size_t)(K_out ? K_out : 1) * (size_t)(T * B > 0 ? T * B : 1) * sizeof *steps);
  if (!steps || !finals) return MIL_ERR_NOMEM;
  for (int64_t b = 0; b < B; b++) {
    mil_var *state[SCAN_IO], *bin[SCAN_IO], *out[SCAN_IO];
    for (int32_t i = 0; i < N; i++) state[i] = v8 ? take(c, in[i], b, 0) : in[i];
    for (int32_t j = 0; j < M; j++) bin[j] = v8 ? take(c, in[N + j], b, 0) : in[N + j];
    for (int64_t t = 0; t < T; t++) {
      mil_var *args[SCAN_IO];
      for (int32_t i = 0; i < N; i++) args[i] = state[i];
      for (int32_t j = 0; j < M; j++) {
        bool rev = nidir == M && idir[j];
        args[N + j] = take(c, bin[j], rev ? T - 1 - t : t, v8 ? axes[j] - 1 : axes[j]);
        if (!args[N + j]) return MIL_ERR_TYPE;
      }
      mil_status st = run_body(c, g, args, N + (int32_t)M, out);
      if (st != MIL_OK) return st;
      for (int32_t i = 0; i < N; i++) state[i] = out[i];
      for (int32_t k = 0; k < K_out; k++) steps[(size_t)k * (size_t)(T * B) + (size_t)(b * T + t)] = out[N + k];
    }
    for (int32_t i = 0; i < N; i++) finals[i * B + b] = state[i];
  }
  mil_value *ax0 = onnx_i32s(c, 1, (int64_t[]){0});
  for (int32_t i = 0; i < N; i++) {
    mil_var **fi = finals + i * B, *y;
    if (v8) {
      for (int64_t b = 0; b < B; b++) fi[b] = ONNX_OP(c, "expand_dims", A("x", fi[b]), K("axes", ax0));
      y = B > 1 ? ONNX_OP(c, "concat", AT("values", fi, (int32_t)B), K("axis", onnx_i32(c, 0))) : fi[0];
    } else y = ONNX_OP(c, "identity", A("x", fi[0]));
    mil_status st = onnx_set_out(c, n, i, y);
    if (st != MIL_OK) return st;
  }
  for (int32_t k = 0; k < K_out; k++) {
    bool rev = nodir == K_out && odir[k];
    mil_var *items[SCAN_MAX];
    for (int64_t b = 0; b < B; b++) {
      mil_var *seq[SCAN_MAX];
      int32_t r = onnx_rank(steps[(size_t)k * (size_t)(T * B) + (size_t)(b * T)]);
      int64_t a = noax == K_out ? oax[k] : 0;
      if (!onnx_axis(&a, r + 1)) return onnx_fail(c, MIL_ERR_INVALID, "scan output axis out of range");
      for (int64_t t = 0; t < T; t++) {
        mil_var *v = steps[(size_t)k * (size_t)(T * B) + (size_t)(b * T + (rev ? T - 1 - t : t))];
        if (!(seq[t] = ONNX_OP(c, "expand_dims", A("x", v), K("axes", onnx_i32s(c, 1, &a))))) return MIL_ERR_TYPE;
      }
      items[b] = T > 1 ? ONNX_OP(c, "concat", AT("values", seq, (int32_t)T), K("axis", onnx_i32(c, a))) : seq[0];
      if (v8 && items[b]) items[b] = ONNX_OP(c, "expand_dims", A("x", items[b]), K("axes", ax0));
      if (!items[b]) return MIL_ERR_TYPE;
    }
    mil_var *y = B > 1 ? ONNX_OP(c, "concat", AT("values", items, (int32_t)B), K("axis", onnx_i32(c, 0))) : items[0];
    mil_status st = onnx_set_out(c, n, N + k, y);
    if (st != MIL_OK) return st;
  }
  return MIL_OK;
}

const onnx_op_entry onnx_ops_scan[] = {
    {"Scan", "", 8, 0, conv_scan, "gather, (the body's ops per step), expand_dims, concat"},
    {NULL, NULL, 0, 0, NULL, NULL},
};
