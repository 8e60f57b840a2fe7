/* common::fuse_layernorm_or_instancenorm — recognize the five op patterns
 * frontends emit for layer / instance normalization and replace each with
 * one layer_norm or instance_norm op.
 *
 * Pattern 1, y = x * [gamma * rsqrt(var + eps)] + (beta - mean * [gamma * rsqrt(var + eps)]):
 *
 *   main(%x: (1, 3, 5, 5, fp32)(Tensor)) {
 *     block0() {
 *       %ax: (2,int32)*(Tensor) = const(val=[2, 3], name="ax")
 *       %kd: (bool)*(Scalar) = const(val=True, name="kd")
 *       %m: (1, 3, 1, 1, fp32)(Tensor) = reduce_mean(x=%x, axes=%ax, keep_dims=%kd, name="m")
 *       %d: (1, 3, 5, 5, fp32)(Tensor) = sub(x=%x, y=%m, name="d")
 *       %sq: (1, 3, 5, 5, fp32)(Tensor) = square(x=%d, name="sq")
 *       %v: (1, 3, 1, 1, fp32)(Tensor) = reduce_mean(x=%sq, axes=%ax, keep_dims=%kd, name="v")
 *       %eps: (fp32)*(Scalar) = const(val=1e-05, name="eps")
 *       %ve: (1, 3, 1, 1, fp32)(Tensor) = add(x=%v, y=%eps, name="ve")
 *       %r: (1, 3, 1, 1, fp32)(Tensor) = rsqrt(x=%ve, name="r")
 *       %g: (1, 3, 1, 1, fp32)*(Tensor) = const(val=[[[[2.0]], [[2.0]], [[2.0]]]], name="g")
 *       %s: (1, 3, 1, 1, fp32)(Tensor) = mul(x=%r, y=%g, name="s")
 *       %xs: (1, 3, 5, 5, fp32)(Tensor) = mul(x=%x, y=%s, name="xs")
 *       %ms: (1, 3, 1, 1, fp32)(Tensor) = mul(x=%m, y=%s, name="ms")
 *       %b: (1, 3, 1, 1, fp32)*(Tensor) = const(val=[[[[1.0]], [[1.0]], [[1.0]]]], name="b")
 *       %sh: (1, 3, 1, 1, fp32)(Tensor) = sub(x=%b, y=%ms, name="sh")
 *       %y: (1, 3, 5, 5, fp32)(Tensor) = add(x=%xs, y=%sh, name="y")
 *     } -> (%y)
 *   }
 *
 * becomes
 *
 *   main(%x: (1, 3, 5, 5, fp32)(Tensor)) {
 *     block0() {
 *       %ax: (2,int32)*(Tensor) = const(val=[2, 3], name="ax")
 *       %kd: (bool)*(Scalar) = const(val=True, name="kd")
 *       %eps: (fp32)*(Scalar) = const(val=1e-05, name="eps")
 *       %y_gamma_0: (3,fp32)*(Tensor) = const(val=[2.0, 2.0, 2.0], name="y_gamma_0")
 *       %y_beta_0: (3,fp32)*(Tensor) = const(val=[1.0, 1.0, 1.0], name="y_beta_0")
 *       %y: (1, 3, 5, 5, fp32)(Tensor) = instance_norm(x=%x, gamma=%y_gamma_0, beta=%y_beta_0, epsilon=%eps, name="y")
 *     } -> (%y)
 *   }
 *
 * Patterns 2 ((x - mean) / pow(var + eps, 0.5) * gamma + beta), 3 (the
 * TensorFlow-Addons form without gamma / beta) and 4 (reduce_sum based)
 * are instance norms; pattern 5 (ml-ane-transformers' BC1S layer norm over
 * axis 1, with beta applied before gamma) is a layer norm. Which op a
 * matched pattern becomes (coremltools' _try_apply_transform): a layer_norm
 * when gamma and beta have rank len(axes) and the axes are the last ones,
 * or (rank 4) when the axes are [-3] and gamma / beta are absent or rank 1
 * (then their values become new consts and their producers are removed);
 * an instance_norm when the input has rank 4, the axes are [-2, -1] or
 * [-3, -2] and gamma / beta squeeze to rank 1 (axes [-3, -2] add NHWC <->
 * NCHW transposes around it). The new ops are named after the last op's
 * output and go before it. No op of the pattern but the last may be a
 * block output. Patterns 3 and 5 first append consts named
 * "_fuse_layernorm_or_instancenorm_gamma"/"_beta" resp.
 * "_fuse_layernorm_gamma"/"_beta" to the block, which stay (dead) when
 * the replacement is then refused, exactly as coremltools leaves them.
 * Nested blocks are processed as their op is reached; every block repeats
 * until nothing changes.
 *
 * Mirrors coremltools/converters/mil/mil/passes/defs/
 * optimize_normalization.py (fuse_layernorm_or_instancenorm).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "passes/fuse_util_internal.h"
#include "passes/tensor_pass_internal.h"

#define MAXK 8   /* children looked at */
#define MAXOPS 24

/* ---------- child queries (coremltools' helpers of this pass) ---------- */

typedef struct kids {
  int32_t n;
  mil_op *op[MAXK];
} kids;

/* pass_t_children(v, out, MAXK) without its allocation when the
 * consumers are few and in one block (then program order is the order in
 * that block, a total order, so any stable sort agrees). */
static int32_t consumers(const mil_var *v, mil_op **out) {
  int32_t n = 0;
  const mil_block *b = NULL;
  bool one_block = true;
  for (const mil_use *u = v->uses; u; u = u->next_use)
    if (u->op) {
      if (n < MAXK) out[MAXK - 1 - n] = u->op; /* newest binding first: fill from the end */
      if (n++ == 0) b = u->op->block;
      else one_block = one_block && u->op->block == b;
    }
  if (n > MAXK || !one_block || !b) return pass_t_children(v, out, MAXK);
  /* binding order, then insertion sort by position */
  for (int32_t i = 0; i < n; i++) out[i] = out[MAXK - n + i];
  for (int32_t i = 1; i < n; i++)
    for (int32_t j = i; j > 0 && out[j] != out[j - 1] && mil_op_is_before(out[j], out[j - 1]); j--) {
      mil_op *t = out[j];
      out[j] = out[j - 1];
      out[j - 1] = t;
    }
  return n;
}

static bool children(pass_t_ctx *c, const mil_op *op, kids *k) {
  (void)c;
  k->n = 0;
  if (!op || op->n_outputs != 1) return false;
  k->n = consumers(op->outputs[0], k->op);
  return k->n >= 0;
}

/* _check_child_op_types: op's children have exactly these types (in order,
 * or as a multiset when !ordered). */
static bool child_types(pass_t_ctx *c, const mil_op *op, const char *const *types, int32_t n, bool ordered) {
  kids k;
  if (!children(c, op, &k) || k.n != n || n > MAXK) return false;
  bool used[MAXK] = {false};
  for (int32_t i = 0; i < n; i++) {
    if (ordered) {
      if (strcmp(k.op[i]->type, types[i]) != 0) return false;
      continue;
    }
    bool found = false;
    for (int32_t j = 0; j < n && !found; j++)
      if (!used[j] && strcmp(k.op[j]->type, types[i]) == 0) used[j] = found = true;
    if (!found) return false;
  }
  return true;
}
#define TYPES(...) (const char *const[]){__VA_ARGS__}, (int32_t)(sizeof((const char *const[]){__VA_ARGS__}) / sizeof(char *))

/* _try_get_child_op_type: the index-th child when it has type `type`. */
static mil_op *child_at(pass_t_ctx *c, const mil_op *op, const char *type, int32_t index) {
  kids k;
  if (!children(c, op, &k) || index >= k.n || index >= MAXK) return NULL;
  return strcmp(k.op[index]->type, type) == 0 ? k.op[index] : NULL;
}

/* _check_reduce_op: given mode, keep_dims known and true, axes known. */
static bool reduce_ok(const mil_op *op, const char *mode) {
  if (!op || !pass_t_is(op, mode)) return false;
  const mil_value *kd = pass_input_value(op, "keep_dims");
  if (!kd || kd->numel != 1 || !mil_value_get_i64(kd, 0)) return false;
  return pass_input_value(op, "axes") != NULL;
}

static mil_var *in(const mil_op *op, const char *name) { return mil_op_input_var(op, name); }
static mil_var *out0(const mil_op *op) { return op->outputs[0]; }
/* The operand of a binary op that is not v (coremltools' "y if x == v else x"). */
static mil_var *other(const mil_op *op, const mil_var *v) { return in(op, "x") == v ? in(op, "y") : in(op, "x"); }
static bool has_val(const mil_var *v) { return v && v->val && v->val->kind == MIL_VAL_TENSOR; }
/* A known value of rank 0 (epsilon). */
static bool is_rank0(const mil_var *v) { return has_val(v) && v->val->type && v->val->type->rank == 0; }
static bool root_shape_known(const mil_var *v) { return pass_t_rank(v) >= 0; }

/* ---------- values ---------- */

/* numpy squeeze: drop every size-1 dim. */
static mil_value *squeeze(mil_program *p, const mil_value *v) {
  int64_t shape[64];
  int32_t r = 0;
  const mil_type *t = v->type;
  for (int32_t i = 0; i < t->rank && r < 64; i++)
    if (t->dims[i].size != 1) shape[r++] = t->dims[i].size;
  mil_value *o = mil_value_new_tensor(p, t->dtype, r, shape, r == 0, NULL);
  if (!o) return NULL;
  void *dst = mil_value_data_mut(o);
  if (dst && v->nbytes && v->nbytes <= o->nbytes) memcpy(dst, mil_value_data(v), v->nbytes);
  return o;
}

static int squeezed_rank(const mil_value *v) {
  int r = 0;
  for (int32_t i = 0; i < v->type->rank; i++)
    if (v->type->dims[i].size != 1) r++;
  return r;
}

/* mb.const(val=..., name=...) without before_op: appended to the block. */
static mil_var *const_at_end(pass_t_ctx *c, mil_block *b, const char *name, const mil_value *v) {
  if (!v) return NULL;
  mil_op *k = mil_const_new(c->p, name, v);
  if (!k || k->n_outputs != 1) return NULL;
  mil_block_append(b, k);
  return k->outputs[0];
}

/* ---------- the transform (coremltools' _try_apply_transform) ---------- */

typedef struct opset {
  int32_t n;
  mil_op *v[MAXOPS];
} opset;

static void push(opset *s, mil_op *op) {
  if (s->n < MAXOPS) s->v[s->n++] = op;
}

static bool in_set(const opset *s, const mil_op *op) {
  for (int32_t i = 0; i < s->n; i++)
    if (s->v[i] == op) return true;
  return false;
}

/* Every op but `end` of the set is read only by ops of the set (so that
 * removing them succeeds, where coremltools would fail). */
static bool removable(const opset *s, const mil_op *end) {
  for (int32_t i = 0; i < s->n; i++) {
    if (s->v[i] == end) continue;
    for (int32_t k = 0; k < s->v[i]->n_outputs; k++)
      for (const mil_use *u = s->v[i]->outputs[k]->uses; u; u = u->next_use)
        if (!u->op || !in_set(s, u->op)) return false;
  }
  return true;
}

static int build_op(pass_t_ctx *c, mil_op *op) {
  mil_status st = pass_t_finish(c, op);
  return st == MIL_OK ? 0 : -(int)st;
}

static mil_var *transpose(pass_t_ctx *c, mil_op *anchor, mil_var *x, const int64_t *perm, const char *base,
                          const char *suffix, int *err) {
  size_t len = strlen(base) + strlen(suffix) + 1;
  char *name = malloc(len);
  if (!name) return (*err = pass_t_oom(c)), NULL;
  snprintf(name, len, "%s%s", base, suffix);
  mil_op *t = pass_t_op(c, anchor, "transpose", name);
  free(name);
  if (!t) return (*err = pass_t_oom(c)), NULL;
  pass_t_var(t, "x", x);
  if (!pass_t_const(c, t, "perm", pass_t_i32s(c->p, 4, perm))) return (*err = pass_t_oom(c)), NULL;
  if ((*err = build_op(c, t)) < 0) return NULL;
  return out0(t);
}

static int apply(pass_t_ctx *c, mil_op *reduce, mil_block *b, mil_var *gamma, mil_var *beta, mil_var *eps,
                 mil_op *end, opset *ops) {
  if (!pass_no_output_connection(ops->v, ops->n)) return 0;
  int64_t axes[16], na;
  mil_var *x = in(reduce, "x");
  int32_t rank = pass_t_rank(x);
  if (rank < 0 || !pass_t_ints(reduce, "axes", axes, 16, &na)) return 0;
  int64_t neg[16];
  for (int64_t i = 0; i < na; i++) neg[i] = axes[i] >= 0 ? axes[i] - rank : axes[i];
  for (int64_t i = 1; i < na; i++)
    for (int64_t j = i; j > 0 && neg[j - 1] > neg[j]; j--) {
      int64_t t = neg[j];
      neg[j] = neg[j - 1];
      neg[j - 1] = t;
    }
  int32_t grank = gamma ? pass_t_rank(gamma) : -1, brank = beta ? pass_t_rank(beta) : -1;
  bool is_ln = false, is_in = false, nhwc = false;
  const mil_value *gval = NULL, *bval = NULL; /* gamma / beta passed as values */
  if (grank == na && brank == na) {
    bool suffix = true;
    for (int64_t i = 0; i < na; i++) suffix = suffix && neg[i] == i - na;
    if (suffix) is_ln = true;
  }
  if (rank == 4 && na == 1 && neg[0] == -3) {
    is_ln = (!gamma && !beta) || (grank == 1 && brank == 1);
    if (gamma) {
      if (!gamma->op || !gamma->val) return 0;
      push(ops, gamma->op);
      gval = gamma->val;
      gamma = NULL;
    }
    if (beta) {
      if (!beta->op || !beta->val) return 0;
      push(ops, beta->op);
      bval = beta->val;
      beta = NULL;
    }
  }
  if (rank == 4 && na == 2 && ((neg[0] == -2 && neg[1] == -1) || (neg[0] == -3 && neg[1] == -2))) {
    if (!has_val(gamma) || !has_val(beta)) return 0; /* coremltools would fail */
    if (squeezed_rank(gamma->val) == 1 && squeezed_rank(beta->val) == 1) is_in = true;
    if (neg[0] == -3) nhwc = true;
  }
  if (!is_in && !is_ln) return 0;
  if (is_in) {
    if (!gamma->op || !beta->op) return 0;
    push(ops, gamma->op);
    push(ops, beta->op);
  }
  if (!removable(ops, end)) return 0;

  const char *out_name = out0(end)->name;
  int err = 0;
  mil_var *cur = x;
  static const int64_t to_nchw[4] = {0, 3, 1, 2}, to_nhwc[4] = {0, 2, 3, 1};
  if (nhwc && !(cur = transpose(c, end, cur, to_nchw, out_name, "_transpose_nhwc_nchw", &err))) return err;
  size_t len = strlen(out_name) + 16;
  char *name = malloc(len);
  if (!name) return pass_t_oom(c);
  snprintf(name, len, "%s%s", out_name, nhwc ? (is_in ? "_instancenorm" : "_layernorm") : "");
  mil_op *norm = pass_t_op(c, end, is_in ? "instance_norm" : "layer_norm", name);
  free(name);
  if (!norm) return pass_t_oom(c);
  pass_t_var(norm, "x", cur);
  bool ok = true;
  if (is_in) {
    ok = pass_t_const(c, norm, "gamma", squeeze(c->p, gamma->val)) &&
         pass_t_const(c, norm, "beta", squeeze(c->p, beta->val));
  } else {
    ok = pass_t_const(c, norm, "axes", pass_input_value(reduce, "axes"));
    if (ok && gamma) pass_t_var(norm, "gamma", gamma);
    else if (ok && gval) ok = pass_t_const(c, norm, "gamma", gval);
    if (ok && beta) pass_t_var(norm, "beta", beta);
    else if (ok && bval) ok = pass_t_const(c, norm, "beta", bval);
  }
  if (!ok) return pass_t_oom(c);
  pass_t_var(norm, "epsilon", eps);
  if ((err = build_op(c, norm)) < 0) return err;
  cur = out0(norm);
  if (nhwc && !(cur = transpose(c, end, cur, to_nhwc, out_name, "_transpose_nchw_nhwc", &err))) return err;
  int r = pass_t_replace(c, end, out0(end), cur);
  if (r < 0) return r;
  if ((r = pass_t_remove(c, ops->v, ops->n)) < 0) return r;
  return 1;
}

/* epsilon: the other operand of the add after the variance, a rank-0 value. */
static mil_var *epsilon_of(const mil_op *add, const mil_var *var) {
  mil_var *e = other(add, var);
  return is_rank0(e) ? e : NULL;
}

/* The head patterns 1 and 3 share: x feeding reduce_mean, sub and mul (in
 * the order the pattern gives), reduce_mean(x) -> sub(x, mean) -> square ->
 * reduce_mean -> add(epsilon) -> rsqrt; the matched ops go into ops. */
typedef struct ln_head {
  mil_var *root, *eps;
  mil_op *rsqrt;
} ln_head;

static bool match_head(pass_t_ctx *c, mil_op *reduce, const char *const *root_kids, int32_t n_root_kids, opset *ops,
                       ln_head *h) {
  mil_var *root = in(reduce, "x");
  if (!root || !root_shape_known(root) || pass_n_op_uses(root) != 3) return false;
  if (root->op && !child_types(c, root->op, root_kids, n_root_kids, true)) return false;
  if (!reduce_ok(reduce, "reduce_mean")) return false;
  push(ops, reduce);
  if (!child_types(c, reduce, TYPES("sub", "mul"), false)) return false;
  kids k;
  children(c, reduce, &k);
  mil_op *sub1 = pass_t_is(k.op[0], "sub") ? k.op[0] : k.op[1];
  if (!(in(sub1, "x") == root && in(sub1, "y") == out0(reduce))) return false;
  push(ops, sub1);
  mil_op *square = child_at(c, sub1, "square", 0);
  if (!square) return false;
  push(ops, square);
  mil_op *reduce2 = child_at(c, square, "reduce_mean", 0);
  if (!reduce_ok(reduce2, "reduce_mean")) return false;
  push(ops, reduce2);
  mil_op *add_eps = child_at(c, reduce2, "add", 0);
  if (!add_eps) return false;
  mil_var *eps = epsilon_of(add_eps, out0(reduce2));
  if (!eps) return false;
  push(ops, add_eps);
  mil_op *rsqrt = child_at(c, add_eps, "rsqrt", 0);
  if (!rsqrt) return false;
  push(ops, rsqrt);
  *h = (ln_head){root, eps, rsqrt};
  return true;
}

/* ---------- the patterns ---------- */

static int pattern1(pass_t_ctx *c, mil_op *reduce, mil_block *b) {
  opset ops = {0};
  ln_head h;
  if (!match_head(c, reduce, TYPES("reduce_mean", "sub", "mul"), &ops, &h)) return 0;
  mil_var *root = h.root, *eps = h.eps;
  mil_op *rsqrt = h.rsqrt;
  mil_op *mul1 = child_at(c, rsqrt, "mul", 0);
  if (!mul1) return 0;
  mil_var *gamma = other(mul1, out0(rsqrt));
  if (!has_val(gamma)) return 0;
  push(&ops, mul1);
  if (!child_types(c, mul1, TYPES("mul", "mul"), true)) return 0;
  kids k;
  children(c, mul1, &k);
  mil_op *mul2 = k.op[0], *mul3 = k.op[1];
  mil_var *o2 = in(mul2, "y") == out0(mul1) ? in(mul2, "x") : in(mul2, "y");
  mil_var *o3 = in(mul3, "y") == out0(mul1) ? in(mul3, "x") : in(mul3, "y");
  if (!((o2 == root && o3 == out0(reduce)) || (o2 == out0(reduce) && o3 == root))) return 0;
  mil_op *mul_root = o2 == root ? mul2 : mul3, *mul_mean = o2 == root ? mul3 : mul2;
  push(&ops, mul_mean);
  push(&ops, mul_root);
  mil_op *sub2 = child_at(c, mul_mean, "sub", 0);
  if (!sub2 || in(sub2, "y") != out0(mul_mean)) return 0;
  mil_var *beta = in(sub2, "x");
  if (!has_val(beta)) return 0;
  push(&ops, sub2);
  mil_op *add2 = child_at(c, sub2, "add", 0);
  if (!add2 || !(in(add2, "x") == out0(mul_root) || in(add2, "y") == out0(mul_root))) return 0;
  push(&ops, add2);
  return apply(c, reduce, b, gamma, beta, eps, add2, &ops);
}

static int pattern2(pass_t_ctx *c, mil_op *reduce, mil_block *b) {
  opset ops = {0};
  mil_var *root = in(reduce, "x");
  if (!root || !root_shape_known(root) || pass_n_op_uses(root) != 3) return 0;
  if (root->op && !child_types(c, root->op, TYPES("reduce_mean", "sub", "sub"), true)) return 0;
  if (!reduce_ok(reduce, "reduce_mean")) return 0;
  push(&ops, reduce);
  if (!child_types(c, reduce, TYPES("sub", "sub"), true)) return 0;
  kids k, ka;
  children(c, reduce, &k);
  if (!children(c, k.op[0], &ka) || ka.n < 1) return 0; /* coremltools would fail */
  mil_op *sub0 = pass_t_is(ka.op[0], "square") ? k.op[0] : k.op[1];
  mil_op *sub1 = sub0 == k.op[0] ? k.op[1] : k.op[0];
  if (!(in(sub0, "x") == root && in(sub0, "y") == out0(reduce))) return 0;
  if (!(in(sub1, "x") == root && in(sub1, "y") == out0(reduce))) return 0;
  push(&ops, sub0);
  push(&ops, sub1);
  mil_op *square = child_at(c, sub0, "square", 0);
  if (!square) return 0;
  push(&ops, square);
  mil_op *reduce2 = child_at(c, square, "reduce_mean", 0);
  if (!reduce_ok(reduce2, "reduce_mean")) return 0;
  push(&ops, reduce2);
  mil_op *add_eps = child_at(c, reduce2, "add", 0);
  if (!add_eps) return 0;
  mil_var *eps = epsilon_of(add_eps, out0(reduce2));
  if (!eps) return 0;
  push(&ops, add_eps);
  mil_op *pw = child_at(c, add_eps, "pow", 0);
  if (!pw) return 0;
  double e;
  if (!pass_var_scalar(in(pw, "y"), &e) || !(fabs(e - 0.5) <= 1e-8 + 1e-5 * 0.5)) return 0;
  push(&ops, pw);
  mil_op *div = child_at(c, pw, "real_div", 0);
  if (!div || !(in(div, "x") == out0(sub1) && in(div, "y") == out0(pw))) return 0;
  push(&ops, div);
  mil_op *mul_gamma = child_at(c, div, "mul", 0);
  if (!mul_gamma) return 0;
  mil_var *gamma = other(mul_gamma, out0(div));
  if (!has_val(gamma)) return 0;
  push(&ops, mul_gamma);
  mil_op *add_beta = child_at(c, mul_gamma, "add", 0);
  if (!add_beta) return 0;
  mil_var *beta = other(add_beta, out0(mul_gamma));
  if (!has_val(beta)) return 0;
  push(&ops, add_beta);
  return apply(c, reduce, b, gamma, beta, eps, add_beta, &ops);
}

static bool operands_are(const mil_op *op, const mil_var *a, const mil_var *b) {
  return (in(op, "x") == a && in(op, "y") == b) || (in(op, "x") == b && in(op, "y") == a);
}

static int pattern3(pass_t_ctx *c, mil_op *reduce, mil_block *b) {
  opset ops = {0};
  ln_head h;
  if (!match_head(c, reduce, TYPES("sub", "mul", "reduce_mean"), &ops, &h)) return 0;
  mil_var *root = h.root, *eps = h.eps;
  mil_op *rsqrt = h.rsqrt;
  mil_op *mul1 = child_at(c, rsqrt, "mul", 0);
  if (!mul1 || !operands_are(mul1, root, out0(rsqrt))) return 0;
  push(&ops, mul1);
  mil_op *mul2 = child_at(c, rsqrt, "mul", 1);
  if (!mul2 || !operands_are(mul2, out0(reduce), out0(rsqrt))) return 0;
  push(&ops, mul2);
  mil_op *mul_sub = child_at(c, mul2, "mul", 0);
  double minus_one;
  if (!mul_sub || !pass_var_scalar(in(mul_sub, "y"), &minus_one) || minus_one != -1.0) return 0;
  push(&ops, mul_sub);
  mil_op *add = child_at(c, mul_sub, "add", 0);
  if (!add || !operands_are(add, out0(mul1), out0(mul_sub))) return 0;
  push(&ops, add);
  /* coremltools builds gamma = ones((1, C, 1, 1)), beta = zeros(...) as
   * fp32 consts appended to the block before trying the transform */
  if (root->type->rank < 2 || root->type->dims[1].size < 0) return 0; /* coremltools would fail */
  int64_t shape[4] = {1, root->type->dims[1].size, 1, 1};
  mil_value *ones = mil_value_new_tensor(c->p, MIL_DT_FP32, 4, shape, false, NULL);
  mil_value *zeros = mil_value_new_tensor(c->p, MIL_DT_FP32, 4, shape, false, NULL);
  if (!ones || !zeros) return pass_t_oom(c);
  for (int64_t i = 0; i < ones->numel; i++) mil_value_set_f64(ones, i, 1.0);
  mil_var *gamma = const_at_end(c, b, "_fuse_layernorm_or_instancenorm_gamma", ones);
  mil_var *beta = gamma ? const_at_end(c, b, "_fuse_layernorm_or_instancenorm_beta", zeros) : NULL;
  if (!beta) return pass_t_oom(c);
  return apply(c, reduce, b, gamma, beta, eps, add, &ops);
}

static bool scalar_shaped(const mil_var *v) { return v && mil_type_is_tensor(v->type) && v->type->rank == 0; }

static int pattern4(pass_t_ctx *c, mil_op *reduce, mil_block *b) {
  opset ops = {0};
  mil_var *root = in(reduce, "x");
  if (!root || !root_shape_known(root) || pass_n_op_uses(root) != 4) return 0;
  if (root->op && !child_types(c, root->op, TYPES("mul", "mul", "reduce_sum", "mul"), true) &&
      !child_types(c, root->op, TYPES("mul", "mul", "mul", "reduce_sum"), true))
    return 0;
  if (!reduce_ok(reduce, "reduce_sum")) return 0;
  push(&ops, reduce);
  mil_op *mul_mean = child_at(c, reduce, "mul", 0);
  if (!mul_mean || !scalar_shaped(in(mul_mean, "y"))) return 0;
  push(&ops, mul_mean);
  if (!child_types(c, mul_mean, TYPES("mul", "mul", "mul"), true)) return 0;
  mil_op *mul_square = child_at(c, mul_mean, "mul", 0);
  if (!mul_square || !child_at(c, mul_mean, "mul", 1)) return 0;
  push(&ops, mul_square);
  mil_op *first[1];
  if (pass_t_children(root, first, 1) < 1) return 0;
  mil_op *mul_square2 = first[0];
  push(&ops, mul_square2);
  mil_op *reduce2 = child_at(c, mul_square2, "reduce_sum", 0);
  if (!reduce_ok(reduce2, "reduce_sum")) return 0;
  push(&ops, reduce2);
  mil_op *mul_mean2 = child_at(c, reduce2, "mul", 0);
  if (!mul_mean2 || !scalar_shaped(in(mul_mean2, "y"))) return 0;
  push(&ops, mul_mean2);
  mil_op *sub_var = child_at(c, mul_mean2, "sub", 0);
  if (!sub_var || in(sub_var, "y") != out0(mul_square)) return 0;
  push(&ops, sub_var);
  mil_op *add_eps = child_at(c, sub_var, "add", 0);
  if (!add_eps) return 0;
  mil_var *eps = epsilon_of(add_eps, out0(sub_var));
  if (!eps) return 0;
  push(&ops, add_eps);
  mil_op *rsqrt = child_at(c, add_eps, "rsqrt", 0);
  if (!rsqrt) return 0;
  push(&ops, rsqrt);
  mil_op *mul_gamma = child_at(c, rsqrt, "mul", 0);
  if (!mul_gamma) return 0;
  mil_var *gamma = other(mul_gamma, out0(rsqrt));
  if (!has_val(gamma)) return 0;
  push(&ops, mul_gamma);
  if (!child_types(c, mul_gamma, TYPES("mul", "mul"), true)) return 0;
  kids k;
  children(c, mul_gamma, &k);
  mil_op *m1 = k.op[0], *m2 = k.op[1];
  mil_var *g = out0(mul_gamma), *sqx = in(mul_square, "x");
  mil_var *o1 = in(m1, "y") == g ? in(m1, "x") : in(m1, "y");
  mil_var *o2 = in(m2, "y") == g ? in(m2, "x") : in(m2, "y");
  if (!((o1 == root && o2 == sqx) || (o1 == sqx && o2 == root))) return 0;
  if (o1 != root) {
    mil_op *t = m1;
    m1 = m2;
    m2 = t;
  }
  push(&ops, m1);
  push(&ops, m2);
  mil_op *sub_beta = child_at(c, m2, "sub", 0);
  if (!sub_beta || in(sub_beta, "y") != out0(m2)) return 0;
  mil_var *beta = in(sub_beta, "x");
  if (!has_val(beta)) return 0;
  push(&ops, sub_beta);
  mil_op *add = child_at(c, sub_beta, "add", 0);
  if (!add || !operands_are(add, out0(m1), out0(sub_beta))) return 0;
  push(&ops, add);
  return apply(c, reduce, b, gamma, beta, eps, add, &ops);
}

/* reduce over exactly axes [1] with keep_dims */
static bool axes_one(const mil_op *op) {
  int64_t a[2], n;
  return pass_t_ints(op, "axes", a, 2, &n) && n == 1 && a[0] == 1;
}

static int pattern5(pass_t_ctx *c, mil_op *reduce, mil_block *b) {
  opset ops = {0};
  mil_var *root = in(reduce, "x");
  if (!root || pass_n_op_uses(root) < 2) return 0;
  if (!reduce_ok(reduce, "reduce_mean") || !axes_one(reduce)) return 0;
  push(&ops, reduce);
  if (!child_types(c, reduce, TYPES("sub"), false)) return 0;
  kids k;
  children(c, reduce, &k);
  mil_op *sub1 = k.op[0];
  if (!child_types(c, sub1, TYPES("mul", "mul", "mul"), true)) return 0;
  if (!(in(sub1, "x") == root && in(sub1, "y") == out0(reduce))) return 0;
  push(&ops, sub1);
  mil_op *square = child_at(c, sub1, "mul", 0);
  if (!square || !child_types(c, square, TYPES("reduce_mean"), true)) return 0;
  if (in(square, "x") != in(square, "y")) return 0;
  push(&ops, square);
  mil_op *reduce2 = child_at(c, square, "reduce_mean", 0);
  if (!reduce_ok(reduce2, "reduce_mean") || !child_types(c, reduce2, TYPES("add"), true)) return 0;
  if (!axes_one(reduce2)) return 0;
  push(&ops, reduce2);
  mil_op *add1 = child_at(c, reduce2, "add", 0);
  if (!add1 || !child_types(c, add1, TYPES("rsqrt"), true)) return 0;
  mil_var *eps = epsilon_of(add1, out0(reduce2));
  if (!eps) return 0;
  push(&ops, add1);
  mil_op *rsqrt = child_at(c, add1, "rsqrt", 0);
  if (!rsqrt || !child_types(c, rsqrt, TYPES("mul"), true)) return 0;
  push(&ops, rsqrt);
  mil_op *mul = child_at(c, rsqrt, "mul", 0);
  if (!mul || (in(mul, "y") != out0(sub1) && in(mul, "x") != out0(sub1))) return 0;
  push(&ops, mul);
  mil_op *end = mul;
  mil_var *gamma = NULL, *beta = NULL;
  mil_op *add_beta = child_at(c, mul, "add", 0);
  mil_op *mul_gamma = add_beta ? child_at(c, add_beta, "mul", 0) : NULL;
  bool affine = add_beta && mul_gamma;
  if (affine && !child_types(c, mul, TYPES("add"), true)) return 0;
  if (affine && !child_types(c, add_beta, TYPES("mul"), true)) return 0;
  if (!affine && (add_beta || mul_gamma)) return 0;
  if (affine) {
    mil_var *bv = other(add_beta, out0(mul)), *gv = other(mul_gamma, out0(add_beta));
    if (!has_val(bv) || !has_val(gv)) return 0;
    mil_value *gs = squeeze(c->p, gv->val), *bs = squeeze(c->p, bv->val);
    if (!gs || !bs) return pass_t_oom(c);
    /* beta * gamma in numpy's precision: the product of two fp16 / fp32
     * values is exact in double, so rounding it once to the result dtype
     * gives numpy's result */
    if (bs->numel != gs->numel && gs->numel != 1 && bs->numel != 1) return 0; /* coremltools would fail */
    mil_dtype dt = bs->type->dtype;
    if (mil_dtype_is_float(gs->type->dtype) && mil_dtype_bits(gs->type->dtype) > mil_dtype_bits(dt))
      dt = gs->type->dtype;
    if (dt == MIL_DT_FP64) dt = MIL_DT_FP32; /* const downcasts fp64 */
    const mil_value *big = bs->numel >= gs->numel ? bs : gs;
    int64_t shape[64];
    for (int32_t i = 0; i < big->type->rank && i < 64; i++) shape[i] = big->type->dims[i].size;
    mil_value *prod = mil_value_new_tensor(c->p, dt, big->type->rank, shape, big->type->rank == 0, NULL);
    if (!prod) return pass_t_oom(c);
    for (int64_t i = 0; i < big->numel; i++)
      mil_value_set_f64(prod, i,
                        mil_value_get_f64(bs, bs->numel == 1 ? 0 : i) * mil_value_get_f64(gs, gs->numel == 1 ? 0 : i));
    gamma = const_at_end(c, b, "_fuse_layernorm_gamma", gs);
    beta = gamma ? const_at_end(c, b, "_fuse_layernorm_beta", prod) : NULL;
    if (!beta) return pass_t_oom(c);
    push(&ops, add_beta);
    push(&ops, mul_gamma);
    end = mul_gamma;
  }
  return apply(c, reduce, b, gamma, beta, eps, end, &ops);
}

static int try_fuse(pass_t_ctx *c, mil_op *op) {
  if (op->n_blocks > 0 || op->n_outputs != 1) return 0;
  mil_block *b = op->block;
  int r = 0;
  if (pass_t_is(op, "reduce_mean")) {
    if ((r = pattern1(c, op, b)) != 0) return r;
    if ((r = pattern2(c, op, b)) != 0) return r;
    if ((r = pattern3(c, op, b)) != 0) return r;
    return pattern5(c, op, b);
  }
  if (pass_t_is(op, "reduce_sum")) return pattern4(c, op, b);
  return 0;
}

/* The op types try_fuse() can rewrite at (it returns 0 at any other). */
static const char *const k_types[] = {"reduce_mean", "reduce_sum", NULL};

static int walk_fn(void *ud, mil_op *op) { return try_fuse(ud, op); }

static mil_status run(mil_program *p, const mil_pass_options *o, mil_pass_stats *st, mil_diag *d) {
  (void)o;
  pass_t_ctx c = {.p = p, .d = d, .pass = "fuse_layernorm_or_instancenorm"};
  pass_walk_spec ws = {c.pass, k_types, true, PASS_WALK_NESTED_FIXPOINT, true, NULL};
  mil_status s = pass_walk_run(p, d, &ws, walk_fn, &c, &c.changes);
  if (st) st->changes += c.changes;
  pass_t_free(&c);
  return s;
}

static const char *const k_anchors[] = {"reduce_mean", "reduce_sum", NULL};
const mil_pass_def pass_def_fuse_layernorm_or_instancenorm = {
    "common::fuse_layernorm_or_instancenorm", "fuse the op patterns of layer norm and instance norm into one op",
    NULL, 0, run, k_anchors};
