/* ONNX recurrent layers: RNN, GRU, LSTM (opsets 7-22; layout 1 from 14)
 * to MIL's rnn / gru / lstm, as coremltools' torch frontend feeds them:
 * weights reordered from ONNX's gate order (GRU z r h, LSTM i o f c,
 * peepholes i o f) to MIL's (GRU r o z, LSTM i f o g, peepholes i f o),
 * the two biases summed, states as (batch, directions * hidden), and the
 * outputs brought back to ONNX's (seq, directions, batch, hidden). A
 * reverse pass is stored in walk order by MIL and flipped back. Weights
 * computed at run time, GRU with linear_before_reset = 1 and bidirectional
 * GRU / RNN (which MIL's ops cannot express) are unrolled over the
 * sequence instead (ops_rnn_unrolled.c). */
#include <stdio.h>
#include <string.h>

#include "onnx/import/import_internal.h"

typedef struct rnn_kind {
  const char *mil;
  int gates;
  const int *order; /* MIL gate g takes ONNX gate order[g] */
} rnn_kind;

static const int k_rnn_order[] = {0};
static const int k_gru_order[] = {1, 2, 0};
static const int k_lstm_order[] = {0, 2, 1, 3};
static const int k_peep_order[] = {0, 2, 1};

enum { ROWS_MATRIX, ROWS_BIAS, ROWS_VECTOR };

/* Direction d of a (D, G*H, K) weight (ROWS_MATRIX), a (D, 2*G*H) bias
 * (ROWS_BIAS: the sum of its input and recurrent halves) or a (D, G*H)
 * vector (ROWS_VECTOR), gates reordered, as an fp32 value (G*H, K) or (G*H). */
static mil_value *gate_rows(onnx_ctx *c, const mil_value *w, int64_t d, int G, int64_t H, const int *order, int mode) {
  bool sum_half = mode == ROWS_BIAS;
  int64_t K = mode == ROWS_MATRIX ? w->type->dims[2].size : 1;
  int64_t per_dir = sum_half ? 2 * G * H : G * H * K;
  int64_t shape[2] = {G * H, K};
  mil_value *r = mil_value_new_tensor(c->p, MIL_DT_FP32, mode == ROWS_MATRIX ? 2 : 1, shape, false, NULL);
  if (!r) return NULL;
  for (int g = 0; g < G; g++)
    for (int64_t j = 0; j < H; j++)
      for (int64_t k = 0; k < K; k++) {
        int64_t src = d * per_dir + ((int64_t)order[g] * H + j) * K + k;
        double v = mil_value_get_f64(w, src);
        if (sum_half) v += mil_value_get_f64(w, src + G * H);
        mil_value_set_f64(r, ((int64_t)g * H + j) * K + k, v);
      }
  return r;
}

static const char *act_name(const char *onnx) {
  if (!strcmp(onnx, "Sigmoid")) return "sigmoid";
  if (!strcmp(onnx, "Tanh")) return "tanh";
  if (!strcmp(onnx, "Relu")) return "relu";
  if (!strcmp(onnx, "HardSigmoid")) return "hard_sigmoid";
  return NULL;
}

/* For inputs whose sequence or batch length is known only at run time:
 * the last axis of v (rank r, D*H long) split into (D, H), through
 * expand_dims or split + stack, which need no static shape. */
static mil_var *split_dirs(onnx_ctx *c, mil_var *v, int D) {
  int32_t r = onnx_rank(v);
  if (!v || r < 1) return NULL;
  if (D == 1) return ONNX_OP(c, "expand_dims", A("x", v), K("axes", onnx_i32s(c, 1, (int64_t[]){r - 1})));
  mil_op *sp = onnx_op_full(c, "split", 3,
                            (pass_barg[]){A("x", v), K("num_splits", onnx_i32(c, D)), K("axis", onnx_i32(c, r - 1))});
  if (!sp || sp->n_outputs != D) return NULL;
  return ONNX_OP(c, "stack", AT("values", sp->outputs, D), K("axis", onnx_i32(c, r - 1)));
}

/* The inverse: (B, D, H) -> (B, D*H) through squeeze or split + concat. */
static mil_var *join_dirs(onnx_ctx *c, mil_var *v, int D) {
  if (!v || onnx_rank(v) != 3) return NULL;
  if (D == 2) {
    mil_op *sp = onnx_op_full(c, "split", 3,
                              (pass_barg[]){A("x", v), K("num_splits", onnx_i32(c, D)), K("axis", onnx_i32(c, 1))});
    if (!sp || sp->n_outputs != D) return NULL;
    v = ONNX_OP(c, "concat", AT("values", sp->outputs, D), K("axis", onnx_i32(c, 2)));
  }
  return v ? ONNX_OP(c, "squeeze", A("x", v), K("axes", onnx_i32s(c, 1, (int64_t[]){1}))) : NULL;
}

/* Zeros (B, D*H) where B is x's dim 1, known at run time only. */
static mil_var *zero_state(onnx_ctx *c, mil_var *x, int64_t DH) {
  mil_var *shp = onnx_shape_of(c, x);
  if (!shp) return NULL;
  mil_var *b = ONNX_OP(c, "slice_by_index", A("x", shp), K("begin", onnx_i32s(c, 1, (int64_t[]){1})),
                       K("end", onnx_i32s(c, 1, (int64_t[]){2})));
  mil_var *want = b ? ONNX_OP(c, "concat", AT("values", ((mil_var *[]){b, onnx_const(c, onnx_i32s(c, 1, &DH))}), 2),
                              K("axis", onnx_i32(c, 0)))
                    : NULL;
  return want ? ONNX_OP(c, "fill", A("shape", want), K("value", onnx_f32(c, 0))) : NULL;
}

static mil_status conv_recurrent(onnx_ctx *c, onnx_node *n) {
  rnn_kind kind = !strcmp(n->op_type, "LSTM")  ? (rnn_kind){"lstm", 4, k_lstm_order}
                  : !strcmp(n->op_type, "GRU") ? (rnn_kind){"gru", 3, k_gru_order}
                                               : (rnn_kind){"rnn", 1, k_rnn_order};
  mil_var *x = onnx_req(c, n, 0), *W = onnx_req(c, n, 1), *R = onnx_req(c, n, 2), *B = onnx_in(n, 3);
  mil_var *seq_lens = onnx_in(n, 4), *h0 = onnx_in(n, 5), *c0 = kind.gates == 4 ? onnx_in(n, 6) : NULL;
  mil_var *P = kind.gates == 4 ? onnx_in(n, 7) : NULL;
  if (!x || !W || !R) return MIL_ERR_INVALID;
  if (onnx_rank(x) != 3) return ONNX_UNSUP(c, "needs a rank-3 input X, got rank %d", (int)onnx_rank(x));
  /* sequence and batch lengths known only at run time (a dynamic input,
   * an If branch's value): the same ops, reshaped without static shapes */
  bool dyn = !mil_type_is_static(x->type);
  const char *dir = onnx_attr_s(c, n, "direction", "forward");
  int D = !strcmp(dir, "bidirectional") ? 2 : 1;
  bool reverse = !strcmp(dir, "reverse");
  bool consts = W->val && R->val && (!B || B->val) && (!P || P->val);
  if (!consts || (D == 2 && kind.gates != 4) || (kind.gates == 3 && onnx_attr_i(n, "linear_before_reset", 0)))
    return onnx_rnn_unrolled(c, n, kind.gates);
  int64_t H = onnx_attr_i(n, "hidden_size", W->type->dims[1].size / kind.gates);
  bool batch_first = onnx_attr_i(n, "layout", 0) != 0;
  if (kind.gates == 4 && onnx_attr_i(n, "input_forget", 0)) return ONNX_UNSUP(c, "input_forget = 1");
  if (kind.gates != 4 && onnx_attr(n, "clip")) return ONNX_UNSUP(c, "clip on %s", n->op_type);
  if (onnx_attr(n, "activation_alpha") || onnx_attr(n, "activation_beta")) return ONNX_UNSUP(c, "activation_alpha / beta");
  if (batch_first) x = ONNX_OP(c, "transpose", A("x", x), K("perm", onnx_i32s(c, 3, (int64_t[]){1, 0, 2})));
  if (!x) return MIL_ERR_TYPE;
  int64_t S = x->type->dims[0].size, Bt = x->type->dims[1].size;
  if (seq_lens) {
    const mil_value *sl = onnx_val(seq_lens);
    if (dyn) return ONNX_UNSUP(c, "sequence_lens with a sequence length known only at run time");
    bool full = sl != NULL;
    for (int64_t i = 0; full && i < sl->numel; i++) full = mil_value_get_i64(sl, i) == S;
    if (!full) return ONNX_UNSUP(c, "sequence_lens shorter than the sequence");
  }
  /* activations: f, g(, h) per direction */
  const char *acts[3] = {kind.gates == 1 ? "tanh" : "sigmoid", "tanh", "tanh"};
  const Onnx__AttributeProto *aa = onnx_attr(n, "activations");
  int nact = kind.gates == 4 ? 3 : kind.gates == 3 ? 2 : 1;
  for (int i = 0; aa && i < nact && (size_t)i < aa->n_strings; i++) {
    char buf[32];
    size_t l = aa->strings[i].len < 31 ? aa->strings[i].len : 31;
    memcpy(buf, aa->strings[i].data, l);
    buf[l] = 0;
    if (!(acts[i] = act_name(buf))) return ONNX_UNSUP(c, "activation %s", buf);
  }
  /* initial states (batch, D * H) */
  mil_var *h = NULL, *cs = NULL;
  mil_var *st0[2] = {h0, c0};
  for (int k = 0; k < (kind.gates == 4 ? 2 : 1); k++) {
    mil_var *s = st0[k], *r;
    if (dyn && !s)
      r = Bt >= 0 ? onnx_const(c, mil_value_new_tensor(c->p, MIL_DT_FP32, 2, (int64_t[]){Bt, D * H}, false, NULL))
                  : zero_state(c, x, D * H);
    else if (dyn)
      r = join_dirs(c, batch_first ? s : ONNX_OP(c, "transpose", A("x", s), K("perm", onnx_i32s(c, 3, (int64_t[]){1, 0, 2}))), D);
    else if (!s) r = onnx_const(c, mil_value_new_tensor(c->p, MIL_DT_FP32, 2, (int64_t[]){Bt, D * H}, false, NULL));
    else if (batch_first)
      r = ONNX_OP(c, "reshape", A("x", s), K("shape", onnx_i32s(c, 2, (int64_t[]){Bt, D * H})));
    else {
      r = ONNX_OP(c, "transpose", A("x", s), K("perm", onnx_i32s(c, 3, (int64_t[]){1, 0, 2})));
      r = ONNX_OP(c, "reshape", A("x", r), K("shape", onnx_i32s(c, 2, (int64_t[]){Bt, D * H})));
    }
    if (!r) return MIL_ERR_TYPE;
    if (k == 0) h = r;
    else cs = r;
  }
  pass_barg args[20];
  int na = 0;
  args[na++] = A("x", x);
  args[na++] = A("initial_h", h);
  if (cs) args[na++] = A("initial_c", cs);
  const char *suffix[2] = {"", "_back"};
  for (int d = 0; d < D; d++) {
    char nm[4][24];
    snprintf(nm[0], 24, "weight_ih%s", suffix[d]);
    snprintf(nm[1], 24, "weight_hh%s", suffix[d]);
    snprintf(nm[2], 24, "bias%s", suffix[d]);
    snprintf(nm[3], 24, "peephole%s", suffix[d]);
    args[na++] = K(mil_program_intern(c->p, nm[0], (size_t)-1), gate_rows(c, W->val, d, kind.gates, H, kind.order, ROWS_MATRIX));
    args[na++] = K(mil_program_intern(c->p, nm[1], (size_t)-1), gate_rows(c, R->val, d, kind.gates, H, kind.order, ROWS_MATRIX));
    if (B) args[na++] = K(mil_program_intern(c->p, nm[2], (size_t)-1), gate_rows(c, B->val, d, kind.gates, H, kind.order, ROWS_BIAS));
    if (P) args[na++] = K(mil_program_intern(c->p, nm[3], (size_t)-1), gate_rows(c, P->val, d, 3, H, k_peep_order, ROWS_VECTOR));
  }
  args[na++] = K("direction", onnx_str(c, dir));
  args[na++] = K("output_sequence", onnx_bool(c, true));
  if (kind.gates == 1) args[na++] = K("activation", onnx_str(c, acts[0]));
  else {
    args[na++] = K("recurrent_activation", onnx_str(c, acts[0]));
    args[na++] = K(kind.gates == 4 ? "cell_activation" : "activation", onnx_str(c, acts[1]));
    if (kind.gates == 4) args[na++] = K("activation", onnx_str(c, acts[2]));
    if (kind.gates == 4 && onnx_attr(n, "clip")) args[na++] = K("clip", onnx_f32(c, onnx_attr_f(n, "clip", 0)));
  }
  mil_op *op = onnx_op_full(c, kind.mil, na, args);
  if (!op) return MIL_ERR_TYPE;
  /* Y (S, B, D*H) -> (S, D, B, H); Y_h, Y_c (B, D*H) -> (D, B, H) */
  mil_var *y = op->outputs[0];
  if (reverse) y = ONNX_OP(c, "reverse", A("x", y), K("axes", onnx_i32s(c, 1, (int64_t[]){0})));
  y = dyn ? split_dirs(c, y, D) : ONNX_OP(c, "reshape", A("x", y), K("shape", onnx_i32s(c, 4, (int64_t[]){S, Bt, D, H})));
  y = ONNX_OP(c, "transpose", A("x", y),
              K("perm", onnx_i32s(c, 4, batch_first ? (int64_t[]){1, 0, 2, 3} : (int64_t[]){0, 2, 1, 3})));
  mil_status st = onnx_set_out(c, n, 0, y);
  for (int k = 1; st == MIL_OK && k < op->n_outputs && k < 3; k++) {
    if (!onnx_out_used(n, k)) continue;
    mil_var *s = dyn ? split_dirs(c, op->outputs[k], D)
                     : ONNX_OP(c, "reshape", A("x", op->outputs[k]), K("shape", onnx_i32s(c, 3, (int64_t[]){Bt, D, H})));
    if (!batch_first) s = ONNX_OP(c, "transpose", A("x", s), K("perm", onnx_i32s(c, 3, (int64_t[]){1, 0, 2})));
    st = onnx_set_out(c, n, k, s);
  }
  return st;
}

const onnx_op_entry onnx_ops_rnn[] = {
    {"RNN", "", 7, 0, conv_recurrent, "rnn"},
    {"GRU", "", 7, 0, conv_recurrent, "gru"},
    {"LSTM", "", 7, 0, conv_recurrent, "lstm"},
    {NULL, NULL, 0, 0, NULL, NULL},
};
