/* Activation fusion plan of a function body: which conv ops compute their
 * activation themselves (as a oneDNN post-op, conv_dnnl.c), so that the
 * activation op only takes the conv's output.
 *
 * A conv fuses with the op reading its output when that op is relu, relu6
 * or clip (alpha and beta known consts) of the same block, reading it as
 * its input x and being its only reader (the conv's output is no block
 * output and is read by nothing else, so nobody sees the value before the
 * activation). These activations are exact (min / max against the
 * bounds), and in an fp16 program they commute with the rounding of the
 * conv's output to fp16 (the bounds are fp16 values): rounding the fused
 * result once gives the bits of rounding, clipping and rounding again.
 *
 * SiLU as PyTorch exports it (a sigmoid of the conv's output and a mul of
 * the two, the conv's only readers; the sigmoid read by the mul alone)
 * fuses too: the conv computes the sigmoid with the same vectorized code
 * and multiplies in fp32, and in fp16 programs rounds the conv output, the
 * sigmoid and (at the op's end) the product to fp16 as the three separate
 * ops do: the same bits. Both the sigmoid and the mul then take the conv's
 * output (the sigmoid's value is read by nothing else). Hard swish (the
 * same with sigmoid_hard, alpha and beta consts) fuses likewise, the gate
 * computed as its kernel does (product, sum, clamp; in fp16 programs with
 * its roundings after the product and of the clamped sum).
 *
 * A residual add (conv output + another value of its type, made before
 * the conv; the add its only reader) fuses the same way: the conv adds the
 * other operand to its output (fp32 addition commutes bit for bit; in fp16
 * programs after rounding its output as the conv op does), and a relu /
 * relu6 / clip that alone reads the sum is applied too (it commutes with
 * the sum's rounding to fp16). The add and that activation then take the
 * conv's output (MIL_INTERP_NO_FUSE_ADD=1 leaves adds alone).
 *
 * The plan depends only on the program, so it is made once per
 * interpreter family (kept in its cache, keyed by the function name) from
 * the first run's copy: every run's copy has the same ops in the same
 * order. A run uses it unless MIL_INTERP_NO_FUSE is set or an observer
 * watches every op's output (it must see the conv's own output). The same
 * plan holds the conv chains that pass NHWC values (chain(), below;
 * MIL_INTERP_NO_NHWC turns them off). */
#include <stdlib.h>
#include <string.h>

#include "interp/interp_internal.h"

struct interp_fuse_plan {
  int32_t n_ops;
  interp_fuse_ent *ent; /* one per op of the body */
  uint8_t *nhwc;        /* one per op: INTERP_NHWC_IN / _OUT of a conv in a chain */
};

static void plan_free(void *p) {
  interp_fuse_plan *fp = p;
  if (!fp) return;
  free(fp->ent);
  free(fp->nhwc);
  free(fp);
}

/* The known one-element float value of input `name` of op (dflt when the
 * input is absent); false when present but not such a value. */
static bool const_param(const mil_op *op, const char *name, float dflt, float *out) {
  *out = dflt;
  for (int32_t i = 0; i < op->n_inputs; i++) {
    const mil_input *in = &op->inputs[i];
    if (strcmp(in->name, name) != 0) continue;
    if (in->n_args != 1) return false;
    const mil_var *var = in->args[0].use.var;
    if (var && (!var->op || !mil_op_is_const(var->op))) return false; /* a const: the same in every run */
    const mil_value *v = in->args[0].value ? in->args[0].value : var ? var->val : NULL;
    if (!v || v->kind != MIL_VAL_TENSOR || !v->type || v->numel != 1 || !mil_dtype_is_float(v->type->dtype))
      return false;
    *out = (float)mil_value_get_f64(v, 0);
    return true;
  }
  return true;
}

/* Whether act (the only reader of conv's output v) can run as conv's
 * post-op; fills kind and bounds. */
static bool fusable(const mil_op *act, const mil_var *v, interp_fuse_ent *e) {
  if (act->n_outputs != 1 || act->n_blocks || interp_input_var(act, "x") != v) return false;
  float lo = 0, hi = 0;
  if (strcmp(act->type, "relu") == 0) {
    e->kind = INTERP_FUSE_RELU;
  } else if (strcmp(act->type, "relu6") == 0) {
    e->kind = INTERP_FUSE_CLIP;
    lo = 0, hi = 6;
  } else if (strcmp(act->type, "clip") == 0) {
    /* both required (coremltools' clip has no defaults) */
    if (!const_param(act, "alpha", NAN, &lo) || !const_param(act, "beta", NAN, &hi) || !(lo == lo) || !(hi == hi))
      return false;
    e->kind = INTERP_FUSE_CLIP;
  } else {
    return false;
  }
  e->lo = lo, e->hi = hi;
  return true;
}

/* Index of op `o` in b, counting from `from` (at index i), or -1. */
static int32_t index_after(const mil_op *from, int32_t i, const mil_op *o) {
  for (const mil_op *p = from; p; p = p->next, i++)
    if (p == o) return i;
  return -1;
}

/* The SiLU pair reading conv output v (x * sigmoid(x) as exported from
 * PyTorch; hard swish with gate "sigmoid_hard"): v read by exactly a gate
 * op s (as its x) and a mul m of v and s's output, which only m reads.
 * Fills *sig and *mul. */
static bool silu_pair(const mil_var *v, const mil_block *b, const char *gate, const mil_op **sig, const mil_op **mul) {
  if (v->n_uses != 2) return false;
  const mil_op *s = NULL, *m = NULL;
  for (const mil_use *u = v->uses; u; u = u->next_use) {
    if (!u->op || u->block || u->op->block != b) return false;
    if (strcmp(u->op->type, gate) == 0) s = u->op;
    else if (strcmp(u->op->type, "mul") == 0) m = u->op;
  }
  if (!s || !m || s->n_outputs != 1 || m->n_outputs != 1 || interp_input_var(s, "x") != v) return false;
  const mil_var *so = s->outputs[0], *mx = interp_input_var(m, "x"), *my = interp_input_var(m, "y");
  if (so->n_uses != 1 || so->uses->op != m || !((mx == v && my == so) || (mx == so && my == v))) return false;
  if (!m->outputs[0]->type || !v->type || !mil_type_equal(m->outputs[0]->type, v->type)) return false;
  *sig = s, *mul = m;
  return true;
}

/* The residual add reading conv output v (its only reader, op `conv`): an
 * add of v and another value of v's type that exists before the conv runs
 * (made by no op between the conv and the add), v not a block output.
 * Fills *add, e->take_y and, when the add's only reader is a relu, relu6
 * or clip of its x (no block output), *post and e's post and bounds. */
static bool residual(const mil_op *conv, const mil_var *v, const mil_block *b, interp_fuse_ent *e, const mil_op **add,
                     const mil_op **post) {
  const mil_use *u = v->uses;
  if (!u || u->next_use || v->n_uses != 1 || !u->op || u->block || u->op->block != b || strcmp(u->op->type, "add") != 0)
    return false;
  const mil_op *a = u->op;
  const mil_var *x = interp_input_var(a, "x"), *y = interp_input_var(a, "y");
  if (a->n_outputs != 1 || a->n_blocks || !x || !y || (x == v) == (y == v)) return false;
  const mil_var *o = x == v ? y : x;
  if (!o->type || !v->type || !mil_type_equal(o->type, v->type) || !mil_type_is_static(v->type) ||
      !a->outputs[0]->type || !mil_type_equal(a->outputs[0]->type, v->type))
    return false;
  for (const mil_op *p = conv->next; p && p != a; p = p->next)
    if (o->op == p) return false; /* made after the conv */
  e->take_y = y == v;
  *add = a, *post = NULL;
  const mil_var *s = a->outputs[0];
  const mil_use *w = s->uses;
  interp_fuse_ent pe = {0};
  if (w && !w->next_use && s->n_uses == 1 && w->op && !w->block && w->op->block == b && fusable(w->op, s, &pe)) {
    *post = w->op;
    e->post = pe.kind, e->lo = pe.lo, e->hi = pe.hi;
  }
  return true;
}

/* Whether t is a static rank-4 fp32 / fp16 tensor type (of any size: a
 * large conv of a region runs in bands of contiguous NHWC rows, conv_dnnl.c;
 * MIL_INTERP_REGION_MB=M keeps values above M MB out, for measuring). */
static bool chain_type(const mil_type *t) {
  if (!t || t->kind != MIL_TYPE_TENSOR || t->rank != 4 || !mil_type_is_static(t) ||
      (t->dtype != MIL_DT_FP32 && t->dtype != MIL_DT_FP16))
    return false;
  double n = 4;
  for (int32_t i = 0; i < 4; i++) n *= (double)t->dims[i].size;
  const char *e = getenv("MIL_INTERP_REGION_MB");
  return !(e && *e) || n <= atof(e) * 1024 * 1024;
}

/* Ops that compute each output element from the same element of their
 * operands alone (and their scalar parameters): they give the same bytes
 * whatever order the elements are stored in, as long as every tensor
 * operand is stored in that order and has the output's shape. */
static bool elementwise(const mil_op *op, bool *binary) {
  static const char *const unary[] = {"relu", "relu6", "clip", "sigmoid", "sigmoid_hard", "silu", "tanh",
                                      "gelu", "leaky_relu", "elu", "softplus", "abs", "square"};
  static const char *const bin[] = {"add", "sub", "mul", "real_div", "maximum", "minimum"};
  for (size_t i = 0; i < sizeof unary / sizeof *unary; i++)
    if (strcmp(op->type, unary[i]) == 0) return !(*binary = false);
  for (size_t i = 0; i < sizeof bin / sizeof *bin; i++)
    if (strcmp(op->type, bin[i]) == 0) return (*binary = true);
  return false;
}

typedef struct op_at {
  const mil_op *op;
  int32_t i;
} op_at;

static int by_op(const void *x, const void *y) {
  const op_at *a = x, *b = y;
  return a->op < b->op ? -1 : a->op > b->op;
}

/* The index in the body of the op that defines v (sorted ops), or -1. */
static int32_t producer(const op_at *ops, int32_t n, const mil_var *v) {
  if (!v || !v->op) return -1;
  op_at key = {v->op, 0};
  const op_at *hit = bsearch(&key, ops, (size_t)n, sizeof *ops, by_op);
  return hit ? hit->i : -1;
}

/* The operand `name` of elementwise op: *var the region value it must be
 * (a var of the op's output type), or NULL when the operand reads the same
 * in either order: a one-element value, or a tensor whose right-aligned
 * rank-4 shape has C == 1 or H == W == 1 (a [N, C, 1, 1] gate, a per-pixel
 * map); false for any other operand. */
static bool operand_ok(const mil_op *op, const char *name, const mil_var **var) {
  *var = NULL;
  for (int32_t i = 0; i < op->n_inputs; i++) {
    if (strcmp(op->inputs[i].name, name) != 0) continue;
    if (op->inputs[i].n_args != 1) return false;
    const mil_var *v = op->inputs[i].args[0].use.var;
    if (!v) return op->inputs[i].args[0].value && op->inputs[i].args[0].value->numel == 1;
    const mil_type *t = v->type, *o = op->outputs[0]->type;
    if (!t || t->kind != MIL_TYPE_TENSOR || !mil_type_is_static(t) || t->rank > 4) return false;
    if (mil_type_equal(t, o) && !(v->op && mil_op_is_const(v->op))) {
      *var = v; /* full size: a region value */
      return true;
    }
    int64_t d[4] = {1, 1, 1, 1};
    for (int32_t k = 0; k < t->rank; k++) d[4 - t->rank + k] = t->dims[k].size;
    return d[1] == 1 || (d[2] == 1 && d[3] == 1);
  }
  return false;
}

/* Whether op reads v as the x of a reduce_mean / reduce_sum over axes 2
 * and 3 (its result, [N, C] or [N, C, 1, 1], reads the same in either
 * order; the kernel walks an NHWC x by strides). */
static bool spatial_reduce(const mil_op *op, const mil_var *v) {
  if ((strcmp(op->type, "reduce_mean") != 0 && strcmp(op->type, "reduce_sum") != 0) || interp_input_var(op, "x") != v ||
      interp_input_var(op, "axes") == v)
    return false;
  const mil_var *ax = interp_input_var(op, "axes");
  const mil_value *av = NULL;
  for (int32_t i = 0; i < op->n_inputs; i++)
    if (strcmp(op->inputs[i].name, "axes") == 0 && op->inputs[i].n_args == 1)
      av = op->inputs[i].args[0].value ? op->inputs[i].args[0].value : ax && ax->op && mil_op_is_const(ax->op) ? ax->val : NULL;
  if (!av || av->kind != MIL_VAL_TENSOR || av->numel != 2) return false;
  int64_t a0 = mil_value_get_i64(av, 0), a1 = mil_value_get_i64(av, 1);
  a0 = a0 < 0 ? a0 + 4 : a0, a1 = a1 < 0 ? a1 + 4 : a1;
  return (a0 == 2 && a1 == 3) || (a0 == 3 && a1 == 2);
}

/* concat along C (interleave false) and 2-D max_pool: ops that move
 * elements of their NHWC inputs into an NHWC result (tensor.c, pool.c walk
 * them so when flagged). */
static bool moves(const mil_op *op) {
  if (strcmp(op->type, "max_pool") == 0) {
    const mil_var *x = interp_input_var(op, "x");
    return x && x->type && x->type->rank == 4;
  }
  if (strcmp(op->type, "concat") != 0) return false;
  float axis = 0, inter = 0;
  for (int32_t i = 0; i < op->n_inputs; i++) {
    const mil_input *in = &op->inputs[i];
    const mil_value *v = in->n_args == 1 ? (in->args[0].value ? in->args[0].value : in->args[0].use.var ? in->args[0].use.var->val : NULL) : NULL;
    if (strcmp(in->name, "axis") == 0) {
      if (!v || v->numel != 1) return false;
      axis = (float)mil_value_get_f64(v, 0);
    } else if (strcmp(in->name, "interleave") == 0) {
      if (!v || v->numel != 1) return false;
      inter = (float)mil_value_get_f64(v, 0);
    } else if (strcmp(in->name, "values") == 0) {
      for (int32_t k = 0; k < in->n_args; k++)
        if (!in->args[k].use.var || !chain_type(in->args[k].use.var->type)) return false;
    }
  }
  return (axis == 1 || axis == -3) && inter == 0;
}

/* Whether region op reads v where an NHWC value may go: an elementwise
 * op's x / y, a concat's values, a max_pool's x (not a parameter). */
static bool region_input(const mil_op *op, const mil_var *v) {
  for (int32_t i = 0; i < op->n_inputs; i++) {
    const mil_input *in = &op->inputs[i];
    bool data = !strcmp(in->name, "x") || !strcmp(in->name, "y") || !strcmp(in->name, "values");
    for (int32_t k = 0; k < in->n_args; k++)
      if (in->args[k].use.var == v && !data) return false;
  }
  return true;
}

/* Conv chains (interp_fuse_nhwc): regions of the body whose values are
 * stored in NHWC order. A value is in a region when it is made by a conv
 * or by an elementwise op (relu, add, mul, ...) whose full-size tensor
 * operands are all in the region (others: one element, or a shape that
 * reads the same in either order, as a squeeze-and-excite gate [N, C, 1,
 * 1]), or by a concat along C or a 2-D max_pool of region values, and
 * every reader of it is a conv reading it as x, an elementwise op, concat
 * or max_pool of the region, or a reduce_mean / reduce_sum over H and W;
 * nothing else (no block output, no other op) ever sees it. The region's ops are
 * flagged INTERP_NHWC_OUT (a broadcasting elementwise op walks its operands
 * in NHWC order, concat and max_pool their inputs), the reductions
 * INTERP_NHWC_IN. Convs in a region write their result in NHWC
 * order and convs reading a region value take it so: oneDNN's NHWC
 * kernels (1x1 and depthwise included) run without reorders between them,
 * through residual adds and activations; conv.c converts where a conv runs
 * another path. Static rank-4 fp32 / fp16 values. The
 * region is the largest such set: candidates removed until every rule
 * holds. */
static void chain(interp_fuse_plan *fp, const mil_block *b) {
  int32_t n = fp->n_ops, i = 0;
  op_at *ops = malloc((size_t)(n ? n : 1) * sizeof *ops);
  uint8_t *in = calloc((size_t)(n ? n : 1), 1); /* op i's output is in a region */
  if (!ops || !in) {
    free(ops), free(in);
    return;
  }
  for (const mil_op *op = b->first; op; op = op->next, i++) ops[i] = (op_at){op, i};
  qsort(ops, (size_t)n, sizeof *ops, by_op);
  i = 0;
  for (const mil_op *op = b->first; op; op = op->next, i++) {
    bool binary;
    in[i] = op->n_outputs == 1 && !op->n_blocks && op->outputs[0]->n_uses > 0 && chain_type(op->outputs[0]->type) &&
            (strcmp(op->type, "conv") == 0 || elementwise(op, &binary) || moves(op));
  }
  for (bool changed = true; changed;) {
    changed = false;
    i = 0;
    for (const mil_op *op = b->first; op; op = op->next, i++) {
      if (!in[i]) continue;
      bool ok = true, binary = false;
      if (moves(op)) { /* a concat's values, a max_pool's x: all in the region */
        for (int32_t a = 0; a < op->n_inputs && ok; a++) {
          bool data = strcmp(op->inputs[a].name, "values") == 0 || strcmp(op->inputs[a].name, "x") == 0;
          for (int32_t k = 0; data && k < op->inputs[a].n_args && ok; k++) {
            int32_t p = producer(ops, n, op->inputs[a].args[k].use.var);
            ok = p >= 0 && in[p];
          }
        }
      }
      if (elementwise(op, &binary)) { /* its operands in the region */
        const char *names[2] = {"x", "y"};
        for (int k = 0; k < (binary ? 2 : 1) && ok; k++) {
          const mil_var *v;
          int32_t p;
          ok = operand_ok(op, names[k], &v) && (!v || ((p = producer(ops, n, v)) >= 0 && in[p]));
        }
      }
      for (const mil_use *u = op->outputs[0]->uses; u && ok; u = u->next_use) { /* its readers */
        int32_t j = u->op && !u->block && u->op->block == b ? producer(ops, n, u->op->n_outputs ? u->op->outputs[0] : NULL) : -1;
        bool here = u->op && !u->block && u->op->block == b;
        bool reader_conv = here && strcmp(u->op->type, "conv") == 0 && interp_input_var(u->op, "x") == op->outputs[0] &&
                           interp_input_var(u->op, "weight") != op->outputs[0] && interp_input_var(u->op, "bias") != op->outputs[0];
        ok = reader_conv || (here && spatial_reduce(u->op, op->outputs[0])) ||
             (j >= 0 && in[j] && strcmp(u->op->type, "conv") != 0 && region_input(u->op, op->outputs[0]));
      }
      if (!ok) in[i] = 0, changed = true;
    }
  }
  i = 0;
  for (const mil_op *op = b->first; op; op = op->next, i++) {
    int32_t p = producer(ops, n, interp_input_var(op, "x"));
    bool reads = p >= 0 && in[p];
    if (in[i]) fp->nhwc[i] |= INTERP_NHWC_OUT; /* a conv or elementwise op of a region */
    if (reads && (strcmp(op->type, "conv") == 0 || spatial_reduce(op, interp_input_var(op, "x")))) fp->nhwc[i] |= INTERP_NHWC_IN;
  }
  free(ops), free(in);
}

static interp_fuse_plan *plan_make(const mil_block *b) {
  interp_fuse_plan *fp = calloc(1, sizeof *fp);
  if (!fp) return NULL;
  for (const mil_op *op = b->first; op; op = op->next) fp->n_ops++;
  fp->ent = calloc((size_t)(fp->n_ops ? fp->n_ops : 1), sizeof *fp->ent);
  fp->nhwc = calloc((size_t)(fp->n_ops ? fp->n_ops : 1), 1);
  if (!fp->ent || !fp->nhwc) {
    plan_free(fp);
    return NULL;
  }
  int32_t i = 0;
  for (mil_op *op = b->first; op; op = op->next, i++) {
    if (strcmp(op->type, "conv") != 0 || op->n_outputs != 1 || op->n_blocks) continue;
    const mil_var *v = op->outputs[0];
    if (!v->type || v->type->kind != MIL_TYPE_TENSOR ||
        (v->type->dtype != MIL_DT_FP32 && v->type->dtype != MIL_DT_FP16))
      continue;
    interp_fuse_ent e = {0};
    e.partner2 = -1;
    e.is_conv = true;
    e.fp16 = v->type->dtype == MIL_DT_FP16;
    const mil_use *u = v->uses;
    const mil_op *sig = NULL, *mul = NULL, *add = NULL, *post = NULL;
    int32_t j = -1, k = -1; /* the readers' indices: they come later in the block */
    if (u && !u->next_use && u->op && !u->block && u->op->block == b && v->n_uses == 1 && fusable(u->op, v, &e)) {
      j = index_after(op->next, i + 1, u->op);
    } else if (!getenv("MIL_INTERP_NO_FUSE_ADD") && residual(op, v, b, &e, &add, &post)) {
      e.kind = INTERP_FUSE_ADD;
      j = index_after(op->next, i + 1, add);
      k = post ? index_after(op->next, i + 1, post) : -1;
      if (post && (k < 0 || fp->ent[k].kind)) continue;
    } else if (silu_pair(v, b, "sigmoid", &sig, &mul) ||
               (silu_pair(v, b, "sigmoid_hard", &sig, &mul) &&
                const_param(sig, "alpha", 0.2f, &e.lo) && const_param(sig, "beta", 0.5f, &e.hi))) {
      e.kind = strcmp(sig->type, "sigmoid") == 0 ? INTERP_FUSE_SILU : INTERP_FUSE_HSWISH;
      j = index_after(op->next, i + 1, mul);
      k = index_after(op->next, i + 1, sig);
      if (k < 0 || fp->ent[k].kind) continue;
    } else {
      continue;
    }
    if (j < 0 || fp->ent[j].kind) continue;
    e.partner = j;
    e.partner2 = k;
    fp->ent[i] = e;
    interp_fuse_ent a = e;
    a.partner = i, a.partner2 = -1, a.is_conv = false;
    fp->ent[j] = a;
    a.take_y = false; /* an add's relu takes its x */
    if (k >= 0) fp->ent[k] = a;
  }
  if (!getenv("MIL_INTERP_NO_NHWC")) chain(fp, b);
  return fp;
}

const interp_fuse_plan *interp_fuse_plan_get(interp_run *r, const mil_block *body) {
  if (!r->cache || r->observer || getenv("MIL_INTERP_NO_FUSE")) return NULL;
  char key[160];
  memset(key, 0, sizeof key);
  snprintf(key, sizeof key, "fuse-plan:%s", r->fn && r->fn->name ? r->fn->name : "");
  interp_fuse_plan *fp = interp_cache_get_obj(r->cache, key, sizeof key);
  if (fp) {
    int32_t n = 0; /* the same body (a family runs one function): checked all the same */
    for (const mil_op *op = body->first; op; op = op->next) n++;
    return n == fp->n_ops ? fp : NULL;
  }
  interp_fuse_plan *made = plan_make(body);
  if (!made) return NULL;
  fp = interp_cache_put_obj(r->cache, key, sizeof key, made, plan_free);
  if (!fp) plan_free(made); /* not kept: no fusion in this run */
  return fp;
}

const interp_fuse_ent *interp_fuse_at(const interp_fuse_plan *fp, int32_t index) {
  if (!fp || index < 0 || index >= fp->n_ops || !fp->ent[index].kind) return NULL;
  return &fp->ent[index];
}

int32_t interp_fuse_n_ops(const interp_fuse_plan *fp) { return fp ? fp->n_ops : 0; }

int interp_fuse_nhwc(const interp_fuse_plan *fp, int32_t index) {
  return fp && index >= 0 && index < fp->n_ops ? fp->nhwc[index] : 0;
}
