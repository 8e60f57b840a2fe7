/* ONNX elementwise ops: arithmetic, comparison, logic, math functions,
 * Cast / CastLike, Where, Identity, Dropout, variadic Max / Min / Sum /
 * Mean. One-op maps name their MIL op in the table (entry->mil_ops), as
 * coremltools' torch frontend emits it (ops.py: add, sub, mul, real_div,
 * pow, equal, logical_*, select, cast, ...). */
#include <math.h>
#include <string.h>

#include "onnx/import/import_internal.h"

/* x op y with the MIL op named by the table entry. */
/* Before opset 7, B broadcasts only with broadcast=1, its dims aligned
 * with A's from `axis` (default: the trailing dims): B gets size-1 dims
 * appended so numpy broadcasting aligns it the same way. */
mil_var *onnx_legacy_broadcast(onnx_ctx *c, onnx_node *n, mil_var *a, mil_var *b) {
  if (n->opset >= 7 || !onnx_attr_i(n, "broadcast", 0) || !onnx_attr(n, "axis")) return b;
  int32_t ra = onnx_rank(a), rb = onnx_rank(b);
  int64_t axis = onnx_attr_i(n, "axis", 0);
  if (axis < 0) axis += ra;
  int32_t extra = ra - (int32_t)axis - rb;
  if (extra <= 0 || rb < 0) return b;
  int64_t axes[MIL_INTERP_MAX_RANK_ONNX];
  for (int32_t i = 0; i < extra && i < MIL_INTERP_MAX_RANK_ONNX; i++) axes[i] = rb + i;
  return ONNX_OP(c, "expand_dims", A("x", b), K("axes", onnx_i32s(c, extra, axes)));
}

static mil_status conv_binary(onnx_ctx *c, onnx_node *n) {
  mil_var *x = onnx_req(c, n, 0), *y = onnx_req(c, n, 1);
  if (!x || !y) return MIL_ERR_INVALID;
  y = onnx_legacy_broadcast(c, n, x, y);
  if (!y) return MIL_ERR_TYPE;
  if (strcmp(n->op_type, "Pow") == 0 && onnx_dtype(x) != onnx_dtype(y)) {
    /* Pow's exponent may have another type; the result has the base's */
    mil_dtype dt = onnx_dtype(x);
    mil_var *r = ONNX_OP(c, "pow", A("x", onnx_cast(c, x, MIL_DT_FP32)), A("y", onnx_cast(c, y, MIL_DT_FP32)));
    return onnx_set_out(c, n, 0, onnx_cast(c, r, dt));
  }
  if (onnx_dtype(x) != onnx_dtype(y))
    return onnx_fail(c, MIL_ERR_TYPE, "inputs have different dtypes (%s, %s)", mil_dtype_name(onnx_dtype(x)),
                     mil_dtype_name(onnx_dtype(y)));
  return onnx_set_out(c, n, 0, ONNX_OP(c, n->entry->mil_ops, A("x", x), A("y", y)));
}

static mil_status conv_unary(onnx_ctx *c, onnx_node *n) {
  mil_var *x = onnx_req(c, n, 0);
  if (!x) return MIL_ERR_INVALID;
  if (!mil_dtype_is_float(onnx_dtype(x)) && strcmp(n->entry->mil_ops, "abs") && strcmp(n->entry->mil_ops, "sign") &&
      strcmp(n->entry->mil_ops, "logical_not") && strcmp(n->entry->mil_ops, "identity"))
    x = onnx_cast(c, x, MIL_DT_FP32);
  return onnx_set_out(c, n, 0, ONNX_OP(c, n->entry->mil_ops, A("x", x)));
}

/* Div: real_div; integer division truncates toward zero (ONNX, C). */
static mil_status conv_div(onnx_ctx *c, onnx_node *n) {
  mil_var *x = onnx_req(c, n, 0), *y = onnx_req(c, n, 1);
  if (!x || !y) return MIL_ERR_INVALID;
  if (!(y = onnx_legacy_broadcast(c, n, x, y))) return MIL_ERR_TYPE;
  mil_dtype dt = onnx_dtype(x);
  if (mil_dtype_is_float(dt)) return onnx_set_out(c, n, 0, ONNX_OP(c, "real_div", A("x", x), A("y", y)));
  mil_var *q = ONNX_OP(c, "real_div", A("x", onnx_cast(c, x, MIL_DT_FP32)), A("y", onnx_cast(c, y, MIL_DT_FP32)));
  return onnx_set_out(c, n, 0, onnx_cast(c, q, dt)); /* cast truncates */
}

/* Mod: fmod=0 is Python's floor mod (MIL mod); fmod=1 is C's fmod:
 * x - trunc(x / y) * y. */
static mil_status conv_mod(onnx_ctx *c, onnx_node *n) {
  mil_var *x = onnx_req(c, n, 0), *y = onnx_req(c, n, 1);
  if (!x || !y) return MIL_ERR_INVALID;
  if (!onnx_attr_i(n, "fmod", 0)) return onnx_set_out(c, n, 0, ONNX_OP(c, "mod", A("x", x), A("y", y)));
  mil_dtype dt = onnx_dtype(x);
  mil_var *xf = onnx_cast(c, x, MIL_DT_FP32), *yf = onnx_cast(c, y, MIL_DT_FP32);
  mil_var *q = ONNX_OP(c, "real_div", A("x", xf), A("y", yf));
  mil_var *t = ONNX_OP(c, "mul", A("x", ONNX_OP(c, "sign", A("x", q))),
                       A("y", ONNX_OP(c, "floor", A("x", ONNX_OP(c, "abs", A("x", q))))));
  mil_var *r = ONNX_OP(c, "sub", A("x", xf), A("y", ONNX_OP(c, "mul", A("x", t), A("y", yf))));
  return onnx_set_out(c, n, 0, onnx_cast(c, r, dt));
}

/* Neg: mul by -1, as coremltools' torch frontend. */
static mil_status conv_neg(onnx_ctx *c, onnx_node *n) {
  mil_var *x = onnx_req(c, n, 0);
  if (!x) return MIL_ERR_INVALID;
  return onnx_set_out(c, n, 0, ONNX_OP(c, "mul", A("x", x), K("y", onnx_fscalar(c, onnx_dtype(x), -1))));
}

/* Reciprocal: 1 / x exactly (inverse's default epsilon would change it). */
static mil_status conv_reciprocal(onnx_ctx *c, onnx_node *n) {
  mil_var *x = onnx_req(c, n, 0);
  if (!x) return MIL_ERR_INVALID;
  return onnx_set_out(c, n, 0, ONNX_OP(c, "real_div", K("x", onnx_fscalar(c, onnx_dtype(x), 1)), A("y", x)));
}

/* Acosh / Asinh: log(x + sqrt(x*x -/+ 1)); MIL has no such op. */
static mil_status conv_acosh_asinh(onnx_ctx *c, onnx_node *n) {
  mil_var *x = onnx_req(c, n, 0);
  if (!x) return MIL_ERR_INVALID;
  bool acosh = strcmp(n->op_type, "Acosh") == 0;
  mil_dtype dt = onnx_dtype(x);
  mil_var *sq = ONNX_OP(c, "mul", A("x", x), A("y", x));
  mil_var *s = ONNX_OP(c, "add", A("x", sq), K("y", onnx_fscalar(c, dt, acosh ? -1 : 1)));
  mil_var *r = ONNX_OP(c, "log", A("x", ONNX_OP(c, "add", A("x", x), A("y", ONNX_OP(c, "sqrt", A("x", s))))));
  return onnx_set_out(c, n, 0, r);
}

static mil_status conv_isnan(onnx_ctx *c, onnx_node *n) {
  mil_var *x = onnx_req(c, n, 0);
  if (!x) return MIL_ERR_INVALID;
  return onnx_set_out(c, n, 0, ONNX_OP(c, "not_equal", A("x", x), A("y", x)));
}

static mil_status conv_isinf(onnx_ctx *c, onnx_node *n) {
  mil_var *x = onnx_req(c, n, 0);
  if (!x) return MIL_ERR_INVALID;
  bool pos = onnx_attr_i(n, "detect_positive", 1) != 0, neg = onnx_attr_i(n, "detect_negative", 1) != 0;
  mil_dtype dt = onnx_dtype(x);
  mil_var *r;
  if (pos && neg) r = ONNX_OP(c, "equal", A("x", ONNX_OP(c, "abs", A("x", x))), K("y", onnx_fscalar(c, dt, INFINITY)));
  else if (pos) r = ONNX_OP(c, "equal", A("x", x), K("y", onnx_fscalar(c, dt, INFINITY)));
  else if (neg) r = ONNX_OP(c, "equal", A("x", x), K("y", onnx_fscalar(c, dt, -INFINITY)));
  else r = ONNX_OP(c, "not_equal", A("x", x), A("y", x)), r = r ? ONNX_OP(c, "logical_and", A("x", r), A("y", ONNX_OP(c, "logical_not", A("x", r)))) : NULL;
  return onnx_set_out(c, n, 0, r);
}

/* Cast / CastLike: to the narrowed dtype (int64 -> int32, double -> fp32). */
static mil_status conv_cast(onnx_ctx *c, onnx_node *n) {
  mil_var *x = onnx_req(c, n, 0);
  if (!x) return MIL_ERR_INVALID;
  mil_dtype to;
  if (strcmp(n->op_type, "CastLike") == 0) {
    mil_var *like = onnx_req(c, n, 1);
    if (!like) return MIL_ERR_INVALID;
    to = onnx_dtype(like);
  } else {
    int64_t onnx_to = onnx_attr_i(n, "to", 0);
    to = onnx_mil_dtype((int)onnx_to);
    if (to == MIL_DT_UNUSED) return ONNX_UNSUP(c, "cast to ONNX data type %lld is not supported", (long long)onnx_to);
  }
  mil_var *r = onnx_dtype(x) == to ? ONNX_OP(c, "identity", A("x", x)) : onnx_cast(c, x, to);
  return onnx_set_out(c, n, 0, r);
}

/* Whether cond's shape makes numpy's broadcast of (cond, a, b) larger than
 * that of (a, b): cond of a higher rank, or a dim of cond other than 1
 * where both a and b have 1 (or no dim). Unknown ranks: false. */
static bool cond_widens(const mil_var *cond, const mil_var *a, const mil_var *b) {
  int32_t rc = onnx_rank(cond), ra = onnx_rank(a), rb = onnx_rank(b);
  if (rc < 0 || ra < 0 || rb < 0) return false;
  if (rc > ra && rc > rb) return true;
  for (int32_t i = 1; i <= rc; i++) {
    int64_t dc = cond->type->dims[rc - i].size;
    int64_t da = i <= ra ? a->type->dims[ra - i].size : 1, db = i <= rb ? b->type->dims[rb - i].size : 1;
    if (dc != 1 && da == 1 && db == 1) return true;
  }
  return false;
}

/* Where -> select. MIL select's output type is the broadcast of a and b
 * only (coremltools control_flow.py select.type_inference), so when cond
 * is larger a is first broadcast to cond's shape, exactly (a * 1, or
 * a AND true for bool), as coremltools' torch `where` broadcasts all three
 * inputs before select. */
static mil_status conv_where(onnx_ctx *c, onnx_node *n) {
  mil_var *cond = onnx_req(c, n, 0), *a = onnx_req(c, n, 1), *b = onnx_req(c, n, 2);
  if (!cond || !a || !b) return MIL_ERR_INVALID;
  cond = onnx_cast(c, cond, MIL_DT_BOOL);
  if (cond_widens(cond, a, b)) {
    mil_var *all = ONNX_OP(c, "logical_or", A("x", cond), A("y", ONNX_OP(c, "logical_not", A("x", cond))));
    mil_dtype dt = onnx_dtype(a);
    a = dt == MIL_DT_BOOL ? ONNX_OP(c, "logical_and", A("x", a), A("y", all))
                          : ONNX_OP(c, "mul", A("x", a), A("y", onnx_cast(c, all, dt)));
  }
  return onnx_set_out(c, n, 0, ONNX_OP(c, "select", A("cond", cond), A("a", a), A("b", b)));
}

static mil_status conv_identity(onnx_ctx *c, onnx_node *n) {
  mil_var *x = onnx_req(c, n, 0);
  if (!x) return MIL_ERR_INVALID;
  return onnx_set_out(c, n, 0, ONNX_OP(c, "identity", A("x", x)));
}

/* Dropout: identity in inference (the mask all true). In training mode
 * (opset 12+: training_mode true, or computed at run time) elements are
 * kept where a uniform sample >= ratio and scaled by 1 / (1 - ratio),
 * from random_uniform (seeded by the `seed` attribute when given); the
 * random numbers are libmil's, not any other runtime's. */
static mil_status conv_dropout(onnx_ctx *c, onnx_node *n) {
  mil_var *x = onnx_req(c, n, 0);
  if (!x) return MIL_ERR_INVALID;
  mil_var *train = n->opset >= 12 ? onnx_in(n, 2) : NULL;
  bool training = train && (!train->val || mil_value_get_i64(train->val, 0) != 0);
  mil_var *mask_true = NULL;
  if (onnx_out_used(n, 1) || training) {
    mil_var *eq = ONNX_OP(c, "equal", A("x", x), A("y", x));
    mask_true = ONNX_OP(c, "logical_or", A("x", eq), A("y", ONNX_OP(c, "logical_not", A("x", eq))));
  }
  if (!training) {
    mil_status st = onnx_set_out(c, n, 0, ONNX_OP(c, "identity", A("x", x)));
    return st == MIL_OK ? onnx_set_out(c, n, 1, mask_true) : st;
  }
  mil_dtype dt = onnx_dtype(x);
  mil_var *ratio = onnx_in(n, 1) ? onnx_cast(c, onnx_in(n, 1), dt) : onnx_const(c, onnx_fscalar(c, dt, 0.5));
  if (ratio && onnx_rank(ratio) > 0) ratio = ONNX_OP(c, "reshape", A("x", ratio), K("shape", onnx_i32s(c, 0, NULL)));
  mil_var *u = ONNX_OP(c, "random_uniform", A("shape", onnx_shape_of(c, x)),
                       K("seed", onnx_i32(c, onnx_attr(n, "seed") ? onnx_attr_i(n, "seed", 0) : -1)));
  mil_var *keep = ONNX_OP(c, "greater_equal", A("x", onnx_cast(c, u, dt)), A("y", ratio));
  mil_var *scale = ONNX_OP(c, "real_div", K("x", onnx_fscalar(c, dt, 1)), A("y", ONNX_OP(c, "sub", K("x", onnx_fscalar(c, dt, 1)), A("y", ratio))));
  mil_var *y = ONNX_OP(c, "mul", A("x", ONNX_OP(c, "mul", A("x", x), A("y", onnx_cast(c, keep, dt)))), A("y", scale));
  mil_var *t = train->val ? NULL : ONNX_OP(c, "reshape", A("x", onnx_cast(c, train, MIL_DT_BOOL)), K("shape", onnx_i32s(c, 0, NULL)));
  if (t) {
    y = ONNX_OP(c, "select", A("cond", t), A("a", y), A("b", x));
    keep = ONNX_OP(c, "select", A("cond", t), A("a", keep), A("b", mask_true));
  }
  mil_status st = onnx_set_out(c, n, 0, y);
  return st == MIL_OK ? onnx_set_out(c, n, 1, keep) : st;
}

/* Max / Min / Sum / Mean over any number of inputs: a chain of binary ops. */
static mil_status conv_variadic(onnx_ctx *c, onnx_node *n) {
  const char *op = n->entry->mil_ops;
  bool mean = strcmp(n->op_type, "Mean") == 0;
  mil_var *acc = NULL;
  int32_t cnt = 0;
  for (int32_t i = 0; i < n->n_in; i++) {
    mil_var *v = onnx_in(n, i);
    if (!v) continue;
    acc = acc ? ONNX_OP(c, op, A("x", acc), A("y", v)) : v;
    if (!acc) return MIL_ERR_TYPE;
    cnt++;
  }
  if (!acc) return onnx_fail(c, MIL_ERR_INVALID, "needs at least one input");
  if (mean && cnt > 1) acc = ONNX_OP(c, "real_div", A("x", acc), K("y", onnx_fscalar(c, onnx_dtype(acc), cnt)));
  else if (cnt == 1) acc = ONNX_OP(c, "identity", A("x", acc));
  return onnx_set_out(c, n, 0, acc);
}

/* BitShift on unsigned ints (held as int32): x * 2^y to the left,
 * floor(x / 2^y) to the right. */
static mil_status conv_bitshift(onnx_ctx *c, onnx_node *n) {
  mil_var *x = onnx_req(c, n, 0), *y = onnx_req(c, n, 1);
  if (!x || !y) return MIL_ERR_INVALID;
  bool left = strcmp(onnx_attr_s(c, n, "direction", ""), "LEFT") == 0;
  mil_var *p = ONNX_OP(c, "pow", K("x", onnx_f32(c, 2)), A("y", onnx_cast(c, y, MIL_DT_FP32)));
  mil_var *xf = onnx_cast(c, x, MIL_DT_FP32);
  mil_var *r = left ? ONNX_OP(c, "mul", A("x", xf), A("y", p)) : ONNX_OP(c, "floor", A("x", ONNX_OP(c, "real_div", A("x", xf), A("y", p))));
  return onnx_set_out(c, n, 0, onnx_cast(c, r, onnx_dtype(x)));
}

/* And / Or / Xor on bool; BitwiseNot-free Not. */
static mil_status conv_logic(onnx_ctx *c, onnx_node *n) { return conv_binary(c, n); }

#define BIN(op, mil) {op, "", 1, 0, conv_binary, mil}
#define UN(op, mil, since) {op, "", since, 0, conv_unary, mil}

const onnx_op_entry onnx_ops_elementwise[] = {
    BIN("Add", "add"),
    BIN("Sub", "sub"),
    BIN("Mul", "mul"),
    {"Div", "", 1, 0, conv_div, "real_div"},
    BIN("Pow", "pow"),
    {"Mod", "", 10, 0, conv_mod, "mod"},
    BIN("Equal", "equal"),
    BIN("Greater", "greater"),
    BIN("Less", "less"),
    {"GreaterOrEqual", "", 12, 0, conv_binary, "greater_equal"},
    {"LessOrEqual", "", 12, 0, conv_binary, "less_equal"},
    {"And", "", 1, 0, conv_logic, "logical_and"},
    {"Or", "", 1, 0, conv_logic, "logical_or"},
    {"Xor", "", 1, 0, conv_logic, "logical_xor"},
    UN("Not", "logical_not", 1),
    UN("Abs", "abs", 1),
    UN("Acos", "acos", 7),
    UN("Asin", "asin", 7),
    UN("Atan", "atan", 7),
    UN("Atanh", "atanh", 9),
    {"Acosh", "", 9, 0, conv_acosh_asinh, "mul, add, sqrt, log"},
    {"Asinh", "", 9, 0, conv_acosh_asinh, "mul, add, sqrt, log"},
    UN("Ceil", "ceil", 1),
    UN("Floor", "floor", 1),
    UN("Round", "round", 11),
    UN("Sign", "sign", 9),
    UN("Sqrt", "sqrt", 1),
    UN("Exp", "exp", 1),
    UN("Log", "log", 1),
    UN("Erf", "erf", 9),
    UN("Sin", "sin", 7),
    UN("Cos", "cos", 7),
    UN("Tan", "tan", 7),
    UN("Sinh", "sinh", 9),
    UN("Cosh", "cosh", 9),
    {"Neg", "", 1, 0, conv_neg, "mul"},
    {"Reciprocal", "", 1, 0, conv_reciprocal, "real_div"},
    {"IsNaN", "", 9, 0, conv_isnan, "not_equal"},
    {"IsInf", "", 10, 0, conv_isinf, "abs, equal"},
    {"Cast", "", 1, 0, conv_cast, "cast"},
    {"CastLike", "", 15, 0, conv_cast, "cast"},
    {"Where", "", 9, 0, conv_where, "select, logical_or, logical_not, mul"},
    {"Identity", "", 1, 0, conv_identity, "identity"},
    {"Dropout", "", 1, 0, conv_dropout, "identity (training: random_uniform, greater_equal, mul)"},
    {"BitShift", "", 11, 0, conv_bitshift, "pow, mul, real_div, floor"},
    {"Max", "", 1, 0, conv_variadic, "maximum"},
    {"Min", "", 1, 0, conv_variadic, "minimum"},
    {"Sum", "", 1, 0, conv_variadic, "add"},
    {"Mean", "", 1, 0, conv_variadic, "add"},
    {NULL, NULL, 0, 0, NULL, NULL},
};
