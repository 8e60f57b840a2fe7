/* Op family "recurrent": gru (iOS13, iOS17, iOS18), lstm and rnn (iOS13,
 * iOS17). Mirrors coremltools ops/defs/iOS15/recurrent.py,
 * iOS17/recurrent.py and iOS18/recurrent.py. Several outputs: gru and rnn
 * return (output, h), lstm (output, h, c). No value inference. */
#include <ctype.h>
#include <string.h>

#include "ops/ops_defaults.h"
#include "ops/ops_internal.h"

static mil_status str_in(mil_infer_ctx *c, const char *name, const char *dflt, const char **out) {
  *out = dflt;
  if (!op_has(c, name)) return MIL_OK;
  if (!(*out = op_str(c, name, NULL))) return op_fail(c, "input '%s' must be a known string", name);
  return MIL_OK;
}

static mil_status bool_in(mil_infer_ctx *c, const char *name, bool *out) {
  *out = false;
  if (!op_has(c, name)) return MIL_OK;
  const mil_value *v = op_val(c, name);
  if (!v || v->kind != MIL_VAL_TENSOR || v->numel != 1) return op_fail(c, "input '%s' must be a known bool", name);
  *out = mil_value_get_i64(v, 0) != 0;
  return MIL_OK;
}

/* x must be (seq_len, batch, input_size). */
static mil_status check_x(mil_infer_ctx *c, const mil_type *x) {
  if (x->rank != 3) return op_fail(c, "input 'x' must be rank 3 (seq_len, batch, input_size), got %s", op_tstr(c, x));
  return MIL_OK;
}

static mil_status check_w2(mil_infer_ctx *c, const char *name) {
  const mil_type *w = op_type(c, name);
  if (w && w->rank != 2) return op_fail(c, "input '%s' must be rank 2, got %s", name, op_tstr(c, w));
  return MIL_OK;
}

/* Sets output (seq or 1, batch, hsize) and the state outputs (batch, hsize). */
static mil_status set_outputs(mil_infer_ctx *c, const mil_type *x, mil_dim hsize, int n_states) {
  bool seq;
  mil_status st = bool_in(c, "output_sequence", &seq);
  if (st != MIL_OK) return st;
  mil_dim o[3] = {seq ? x->dims[0] : op_dim(1), x->dims[1], hsize};
  op_set_out(c, 0, op_tensor(c, x->dtype, 3, o));
  mil_dim h[2] = {x->dims[1], hsize};
  for (int i = 1; i <= n_states; i++) op_set_out(c, i, op_tensor(c, x->dtype, 2, h));
  return MIL_OK;
}

static mil_status check_direction(mil_infer_ctx *c, bool allow_bidirectional, const char **dir) {
  mil_status st = str_in(c, "direction", "forward", dir);
  if (st != MIL_OK) return st;
  if (strcmp(*dir, "forward") && strcmp(*dir, "reverse") && (!allow_bidirectional || strcmp(*dir, "bidirectional")))
    return op_fail(c, "direction \"%s\" is not supported (supported: \"forward\", \"reverse\"%s)", *dir,
                   allow_bidirectional ? ", \"bidirectional\"" : "");
  return MIL_OK;
}

/* ---------------- gru ---------------- */

static mil_status gru_infer(mil_infer_ctx *c) {
  const mil_type *x = op_type(c, "x"), *whh = op_type(c, "weight_hh");
  mil_status st;
  if ((st = check_x(c, x)) != MIL_OK) return st;
  if ((st = check_w2(c, "weight_ih")) != MIL_OK || (st = check_w2(c, "weight_hh")) != MIL_OK) return st;
  const char *dir;
  if ((st = check_direction(c, false, &dir)) != MIL_OK) return st;
  int64_t hd = whh->dims[0].size, hs = whh->dims[1].size;
  if (hd >= 0 && hs >= 0 && hs != hd / 3)
    return op_fail(c, "weight_hh %s must be (3*H, H) (hidden size mismatch; weight_ih is %s)", op_tstr(c, whh),
                   op_tstr(c, op_type(c, "weight_ih")));
  return set_outputs(c, x, whh->dims[1], 1);
}

static mil_status gru_defaults(mil_infer_ctx *c) {
  mil_status st;
  if ((st = op_add_default_str(c, "direction", "forward")) != MIL_OK) return st;
  if ((st = op_add_default_bool(c, "output_sequence", false)) != MIL_OK) return st;
  if ((st = op_add_default_str(c, "recurrent_activation", "sigmoid")) != MIL_OK) return st;
  return op_add_default_str(c, "activation", "tanh");
}

/* ---------------- lstm ---------------- */

static mil_status lstm_weights(mil_infer_ctx *c, const char *ih, const char *hh) {
  const mil_type *wih = op_type(c, ih), *whh = op_type(c, hh);
  if (wih->rank != 2 || whh->rank != 2)
    return op_fail(c, "'%s' and '%s' must be rank 2, got %s and %s", ih, hh, op_tstr(c, wih), op_tstr(c, whh));
  int64_t h = whh->dims[1].size;
  if (h == 0) return op_fail(c, "input '%s' %s has hidden size 0", hh, op_tstr(c, whh));
  if (h > 0 && ((whh->dims[0].size >= 0 && whh->dims[0].size / h != 4) ||
                (wih->dims[0].size >= 0 && wih->dims[0].size / h != 4)))
    return op_fail(c, "hidden size mismatch: expected '%s' (4*H, input_size) and '%s' (4*H, H), got %s and %s", ih, hh,
                   op_tstr(c, wih), op_tstr(c, whh));
  return MIL_OK;
}

static mil_status check_activation(mil_infer_ctx *c, const char *name, const char *dflt) {
  static const char *const allowed[] = {"tanh", "scaled_tanh", "sigmoid", "hard_sigmoid", "relu", "linear"};
  const char *a;
  mil_status st = str_in(c, name, dflt, &a);
  if (st != MIL_OK) return st;
  char low[32];
  size_t l = strlen(a);
  if (l < sizeof low) {
    for (size_t i = 0; i <= l; i++) low[i] = (char)tolower((unsigned char)a[i]);
    for (size_t i = 0; i < sizeof allowed / sizeof allowed[0]; i++)
      if (strcmp(low, allowed[i]) == 0) return MIL_OK;
  }
  return op_fail(c, "%s \"%s\" is not supported (supported: tanh, scaled_tanh, sigmoid, hard_sigmoid, relu, linear)",
                 name, a);
}

static mil_status lstm_infer(mil_infer_ctx *c) {
  const mil_type *x = op_type(c, "x"), *whh = op_type(c, "weight_hh");
  mil_status st;
  if ((st = check_x(c, x)) != MIL_OK) return st;
  const char *dir;
  if ((st = check_direction(c, true, &dir)) != MIL_OK) return st;
  if ((st = lstm_weights(c, "weight_ih", "weight_hh")) != MIL_OK) return st;
  bool bidir = strcmp(dir, "bidirectional") == 0;
  if (bidir) {
    if (!op_has(c, "weight_ih_back") || !op_has(c, "weight_hh_back"))
      return op_fail(c, "a bidirectional lstm needs inputs 'weight_ih_back' and 'weight_hh_back'");
    if ((st = lstm_weights(c, "weight_ih_back", "weight_hh_back")) != MIL_OK) return st;
  }
  if ((st = check_activation(c, "recurrent_activation", "sigmoid")) != MIL_OK) return st;
  if ((st = check_activation(c, "cell_activation", "tanh")) != MIL_OK) return st;
  if ((st = check_activation(c, "activation", "tanh")) != MIL_OK) return st;
  mil_dim h = whh->dims[1];
  if (bidir) h = h.size >= 0 ? op_dim(2 * h.size) : op_dim_sym(c);
  return set_outputs(c, x, h, 2);
}

static mil_status lstm_defaults(mil_infer_ctx *c) {
  mil_status st;
  if ((st = op_add_default_str(c, "direction", "forward")) != MIL_OK) return st;
  if ((st = op_add_default_bool(c, "output_sequence", false)) != MIL_OK) return st;
  if ((st = op_add_default_str(c, "recurrent_activation", "sigmoid")) != MIL_OK) return st;
  if ((st = op_add_default_str(c, "cell_activation", "tanh")) != MIL_OK) return st;
  return op_add_default_str(c, "activation", "tanh");
}

/* ---------------- rnn ---------------- */

static mil_status rnn_infer(mil_infer_ctx *c) {
  const mil_type *x = op_type(c, "x"), *wih = op_type(c, "weight_ih"), *whh = op_type(c, "weight_hh");
  mil_status st;
  if ((st = check_x(c, x)) != MIL_OK) return st;
  if (wih->rank != 2 || whh->rank != 2)
    return op_fail(c, "'weight_ih' and 'weight_hh' must be rank 2, got %s and %s", op_tstr(c, wih), op_tstr(c, whh));
  const char *dir;
  if ((st = check_direction(c, false, &dir)) != MIL_OK) return st;
  return set_outputs(c, x, wih->dims[0], 1);
}

static mil_status rnn_defaults(mil_infer_ctx *c) {
  mil_status st;
  if ((st = op_add_default_str(c, "direction", "forward")) != MIL_OK) return st;
  if ((st = op_add_default_bool(c, "output_sequence", false)) != MIL_OK) return st;
  return op_add_default_str(c, "activation", "tanh");
}

/* ---------------- table ---------------- */

#define TN MIL_IK_TENSOR
#define K MIL_IF_CONST
#define O MIL_IF_OPTIONAL
#define STR MIL_DTS_STRING
#define BOOL MIL_DTS_BOOL

#define GRU_SPEC(F)                                                                                          \
  IN_SPEC("x", TN, F, "T", 0, NULL), IN_SPEC("initial_h", TN, F, "T", 0, NULL),                              \
      IN_SPEC("weight_ih", TN, F, "T", K, NULL), IN_SPEC("weight_hh", TN, F, "T", K, NULL),                  \
      IN_SPEC("bias", TN, F, "T", K | O, "None"), IN_SPEC("direction", TN, STR, NULL, K | O, "\"forward\""), \
      IN_SPEC("output_sequence", TN, BOOL, NULL, K | O, "False"),                                            \
      IN_SPEC("recurrent_activation", TN, STR, NULL, K | O, "\"sigmoid\""),                                  \
      IN_SPEC("activation", TN, STR, NULL, K | O, "\"tanh\"")

#define LSTM_SPEC(F)                                                                                         \
  IN_SPEC("x", TN, F, "T", 0, NULL), IN_SPEC("initial_h", TN, F, "T", 0, NULL),                              \
      IN_SPEC("initial_c", TN, F, "T", 0, NULL), IN_SPEC("weight_ih", TN, F, "T", K, NULL),                  \
      IN_SPEC("weight_hh", TN, F, "T", K, NULL), IN_SPEC("bias", TN, F, "T", K | O, "None"),                 \
      IN_SPEC("peephole", TN, F, "T", K | O, "None"), IN_SPEC("weight_ih_back", TN, F, "T", K | O, NULL),    \
      IN_SPEC("weight_hh_back", TN, F, "T", K | O, NULL), IN_SPEC("bias_back", TN, F, "T", K | O, NULL),     \
      IN_SPEC("peephole_back", TN, F, "T", K | O, NULL),                                                     \
      IN_SPEC("direction", TN, STR, NULL, K | O, "\"forward\""),                                             \
      IN_SPEC("output_sequence", TN, BOOL, NULL, K | O, "False"),                                            \
      IN_SPEC("recurrent_activation", TN, STR, NULL, K | O, "\"sigmoid\""),                                  \
      IN_SPEC("cell_activation", TN, STR, NULL, K | O, "\"tanh\""),                                          \
      IN_SPEC("activation", TN, STR, NULL, K | O, "\"tanh\""), IN_SPEC("clip", TN, F, "T", K | O, "None")

#define RNN_SPEC(F)                                                                                          \
  IN_SPEC("x", TN, F, "T", 0, NULL), IN_SPEC("initial_h", TN, F, "T", 0, NULL),                              \
      IN_SPEC("weight_ih", TN, F, "T", K, NULL), IN_SPEC("weight_hh", TN, F, "T", K, NULL),                  \
      IN_SPEC("bias", TN, F, "T", K | O, "None"), IN_SPEC("direction", TN, STR, NULL, K | O, "\"forward\""), \
      IN_SPEC("output_sequence", TN, BOOL, NULL, K | O, "False"),                                            \
      IN_SPEC("activation", TN, STR, NULL, K | O, "\"tanh\"")

#define F32 MIL_DTB(MIL_DT_FP32)
#define F16_32 MIL_DTS_FLOAT

static const mil_input_spec k_gru13[] = {GRU_SPEC(F32)};
static const mil_input_spec k_gru17[] = {GRU_SPEC(F16_32)};
static const mil_input_spec k_gru18[] = {
    GRU_SPEC(F16_32),
    IN_SPEC("reset_after", TN, BOOL, NULL, K | O, "None"),
    IN_SPEC("input_bias", TN, F16_32, "T", K | O, "None"),
};
static const mil_input_spec k_lstm13[] = {LSTM_SPEC(F32)};
static const mil_input_spec k_lstm17[] = {LSTM_SPEC(F16_32)};
static const mil_input_spec k_rnn13[] = {RNN_SPEC(F32)};
static const mil_input_spec k_rnn17[] = {RNN_SPEC(F16_32)};

#define N_IN(a) (int32_t)(sizeof a / sizeof a[0])
#define ROW(ty, ver, spec, nout, inf, dflt, doc) {ty, ver, "recurrent", spec, N_IN(spec), nout, inf, NULL, dflt, doc}

const mil_op_def op_defs_recurrent[] = {
    ROW("gru", MIL_IOS13, k_gru13, 2, gru_infer, gru_defaults,
        "gated recurrent unit over x (seq_len, batch, input_size); returns (output, final h); fp32 only"),
    ROW("gru", MIL_IOS17, k_gru17, 2, gru_infer, gru_defaults, "gru; fp16 or fp32"),
    ROW("gru", MIL_IOS18, k_gru18, 2, gru_infer, gru_defaults, "gru; adds reset_after and input_bias"),
    ROW("lstm", MIL_IOS13, k_lstm13, 3, lstm_infer, lstm_defaults,
        "long short-term memory over x (seq_len, batch, input_size); returns (output, final h, final c); fp32 only"),
    ROW("lstm", MIL_IOS17, k_lstm17, 3, lstm_infer, lstm_defaults, "lstm; fp16 or fp32"),
    ROW("rnn", MIL_IOS13, k_rnn13, 2, rnn_infer, rnn_defaults,
        "simple recurrent layer over x (seq_len, batch, input_size); returns (output, final h); fp32 only"),
    ROW("rnn", MIL_IOS17, k_rnn17, 2, rnn_infer, rnn_defaults, "rnn; fp16 or fp32"),
};
OP_FAMILY_COUNT(recurrent);
