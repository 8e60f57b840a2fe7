/* Program equivalence (mil-text.md section 3): is there a one-to-one op
 * mapping that preserves op types, input bindings (mapped vars, or consts
 * of equal value), output types and nested blocks?
 *
 * How: the mapping of live ops is forced. A function output of A must be
 * the same output of B, so their producers correspond; an op pair's inputs
 * must bind corresponding vars, so their producers correspond in turn, and
 * so on backwards (a worklist, no recursion). Consts are compared by value
 * wherever they are bound, and matched among themselves as multisets by
 * value (exact bytes by hash first, then within tolerance). Ops no output
 * reaches (dead ops) are matched last, in A's program order, by a key made
 * of their type and the B-side identity of their inputs (sorted candidate
 * arrays, binary search). Finally every op of B must have been matched.
 * Linear apart from the n log n sorts. */
#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mil/equiv.h"
#include "mil/ops.h"
#include "mil/text.h"
#include "io/equiv_internal.h"

/* ---------- context ---------- */

/* Where a binding is checked, for messages. */
typedef struct site {
  const mil_op *a, *b; /* op pair whose input is checked, or the op owning the block */
  const char *input;   /* input name, or NULL for a block output */
  int32_t index;       /* arg index / block output index */
  bool function_output;
} site;

typedef struct pend {
  const mil_op *a, *b;
  site from;
} pend;

typedef struct eq {
  double rel;
  int ulps;
  const char *na, *nb;
  io_pmap op_ab, op_ba, var_ab, var_ba, blk_ab, blk_ba, sym_ab, sym_ba;
  pend *work;
  size_t nwork, capwork;
  bool failed, nomem;
  const char *func;
  const site *ctx; /* why the pair being checked corresponds, for messages */
  char msg[1024];
} eq;

static void fail(eq *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void fail(eq *e, const char *fmt, ...) {
  if (e->failed) return;
  e->failed = true;
  int k = snprintf(e->msg, sizeof e->msg, "function '%s': ", e->func ? e->func : "?");
  if (k < 0 || (size_t)k >= sizeof e->msg) return;
  va_list ap;
  va_start(ap, fmt);
  int m = vsnprintf(e->msg + k, sizeof e->msg - (size_t)k, fmt, ap);
  va_end(ap);
  const site *c = e->ctx;
  if (m < 0 || (size_t)(k + m) >= sizeof e->msg || !c) return;
  size_t len = (size_t)(k + m);
  if (c->function_output)
    snprintf(e->msg + len, sizeof e->msg - len, " (they correspond as producers of function output %d)",
             (int)c->index);
  else if (c->a && c->input)
    snprintf(e->msg + len, sizeof e->msg - len, " (they correspond as producers of input '%s' of op '%s' (%s) / '%s')",
             c->input, c->a->name, c->a->type, c->b->name);
  else if (c->a)
    snprintf(e->msg + len, sizeof e->msg - len,
             " (they correspond as producers of output %d of a block of op '%s' (%s) / '%s')", (int)c->index,
             c->a->name, c->a->type, c->b->name);
}

static void oom(eq *e) {
  e->nomem = true;
  fail(e, "out of memory");
}

static bool put2(eq *e, io_pmap *ab, io_pmap *ba, const void *a, const void *b) {
  if (!io_pmap_put(ab, a, b) || !io_pmap_put(ba, b, a)) {
    oom(e);
    return false;
  }
  return true;
}

/* ---------- types ---------- */

static bool dims_equal(eq *e, const mil_dim *a, const mil_dim *b) {
  if (a->variadic != b->variadic) return false;
  if (a->size >= 0 || b->size >= 0) return a->size == b->size;
  if (!a->sym || !b->sym) return !a->sym && !b->sym;
  const void *ma = io_pmap_get(&e->sym_ab, a->sym), *mb = io_pmap_get(&e->sym_ba, b->sym);
  if (ma || mb) return ma == b->sym && mb == a->sym;
  return put2(e, &e->sym_ab, &e->sym_ba, a->sym, b->sym);
}

static bool types_equal_d(eq *e, const mil_type *a, const mil_type *b, int depth) {
  if (!a || !b) return a == b;
  if (a->kind != b->kind || depth > 64) return false;
  switch (a->kind) {
  case MIL_TYPE_TENSOR:
    if (a->dtype != b->dtype || a->rank != b->rank || a->is_scalar != b->is_scalar) return false;
    for (int32_t i = 0; i < a->rank; i++)
      if (!dims_equal(e, &a->dims[i], &b->dims[i])) return false;
    return true;
  case MIL_TYPE_LIST: return dims_equal(e, &a->length, &b->length) && types_equal_d(e, a->elem, b->elem, depth + 1);
  case MIL_TYPE_TUPLE:
    if (a->n_elems != b->n_elems) return false;
    for (int32_t i = 0; i < a->n_elems; i++)
      if (!types_equal_d(e, a->elems[i], b->elems[i], depth + 1)) return false;
    return true;
  case MIL_TYPE_DICT: return types_equal_d(e, a->elem, b->elem, depth + 1) && types_equal_d(e, a->value, b->value, depth + 1);
  case MIL_TYPE_STATE: return types_equal_d(e, a->elem, b->elem, depth + 1);
  case MIL_TYPE_UNKNOWN: return true;
  }
  return false;
}
static bool types_equal(eq *e, const mil_type *a, const mil_type *b) { return types_equal_d(e, a, b, 0); }

/* ---------- descriptions ---------- */

static bool is_const_var(const mil_var *v) { return v && v->op && mil_op_is_const(v->op); }

static void desc_var(const mil_var *v, char *buf, size_t n) {
  if (!v) snprintf(buf, n, "nothing");
  else if (is_const_var(v)) {
    char s[256];
    io_value_summary(v->val, 0, s, sizeof s);
    snprintf(buf, n, "const %%%s [%s]", v->name, s);
  } else if (v->func_input_of) snprintf(buf, n, "function input %%%s", v->name);
  else if (v->input_of) snprintf(buf, n, "block input %%%s", v->name);
  else if (v->op) snprintf(buf, n, "%%%s from op '%s' (%s)", v->name, v->op->name, v->op->type);
  else snprintf(buf, n, "%%%s", v->name);
}

static void desc_site(eq *e, const site *s, char *buf, size_t n) {
  if (s->function_output) snprintf(buf, n, "output %d of the function", (int)s->index);
  else if (s->input)
    snprintf(buf, n, "op '%s' (%s) in %s vs op '%s' (%s) in %s: input '%s'%s", s->a->name, s->a->type, e->na,
             s->b->name, s->b->type, e->nb, s->input, "");
  else if (s->a)
    snprintf(buf, n, "output %d of a block of op '%s' (%s) in %s vs '%s' in %s", (int)s->index, s->a->name,
             s->a->type, e->na, s->b->name, e->nb);
  else snprintf(buf, n, "(dead op)");
}

/* ---------- forced matching ---------- */

static void push(eq *e, const mil_op *a, const mil_op *b, const site *from) {
  if (e->nwork == e->capwork) {
    size_t cap = e->capwork ? e->capwork * 2 : 256;
    pend *w = realloc(e->work, cap * sizeof *w);
    if (!w) {
      oom(e);
      return;
    }
    e->work = w;
    e->capwork = cap;
  }
  e->work[e->nwork].a = a;
  e->work[e->nwork].b = b;
  if (from) e->work[e->nwork].from = *from;
  else memset(&e->work[e->nwork].from, 0, sizeof(site));
  e->nwork++;
}

static void map_ops(eq *e, const mil_op *a, const mil_op *b, const site *s) {
  const void *ma = io_pmap_get(&e->op_ab, a), *mb = io_pmap_get(&e->op_ba, b);
  if (ma || mb) {
    if (ma == b && mb == a) return;
    char ws[512];
    desc_site(e, s, ws, sizeof ws);
    fail(e, "%s: op '%s' (%s) in %s would correspond to op '%s' (%s) in %s, but one of them already corresponds to "
            "another op",
         ws, a->name, a->type, e->na, b->name, b->type, e->nb);
    return;
  }
  if (strcmp(a->type, b->type) != 0 || a->n_outputs != b->n_outputs) {
    char ws[512];
    desc_site(e, s, ws, sizeof ws);
    fail(e, "%s: %s has op '%s' (%s), %s has op '%s' (%s)%s", ws, e->na, a->name, a->type, e->nb, b->name, b->type,
         strcmp(a->type, b->type) == 0 ? " with a different number of outputs" : "");
    return;
  }
  if (!put2(e, &e->op_ab, &e->op_ba, a, b)) return;
  for (int32_t i = 0; i < a->n_outputs; i++) {
    const mil_var *va = a->outputs[i], *vb = b->outputs[i];
    const void *xa = io_pmap_get(&e->var_ab, va), *xb = io_pmap_get(&e->var_ba, vb);
    if ((xa || xb) && !(xa == vb && xb == va)) {
      fail(e, "output %%%s of op '%s' (%s) in %s vs %%%s in %s: already bound differently", va->name, a->name,
           a->type, e->na, vb->name, e->nb);
      return;
    }
    if (!put2(e, &e->var_ab, &e->var_ba, va, vb)) return;
  }
  push(e, a, b, s);
}

/* va (in A) and vb (in B) are bound at the same place. */
static void bind_var(eq *e, const mil_var *va, const mil_var *vb, const site *s) {
  if (e->failed) return;
  if (!va || !vb) { /* an empty slot (only in programs under construction) */
    if (va != vb) {
      char ws[512];
      desc_site(e, s, ws, sizeof ws);
      fail(e, "%s: bound in %s only", ws, va ? e->na : e->nb);
    }
    return;
  }
  bool ca = is_const_var(va), cb = is_const_var(vb);
  if (ca || cb) {
    int64_t at = -1;
    if (ca && cb && types_equal(e, va->type, vb->type) && va->val && vb->val &&
        (va->val->kind != MIL_VAL_TENSOR ? io_value_close_depth(va->val, vb->val, e->rel, e->ulps, 0)
                                         : (at = io_tensor_diff(va->val, vb->val, e->rel, e->ulps)) == -1))
      return;
    char ws[512], da[400], db[400];
    desc_site(e, s, ws, sizeof ws);
    if (ca && cb && at >= 0) {
      char sa[256], sb[256];
      io_value_summary(va->val, at, sa, sizeof sa);
      io_value_summary(vb->val, at, sb, sizeof sb);
      fail(e, "%s: %s binds const %%%s [%s], %s binds const %%%s [%s]: values differ at element %lld", ws, e->na,
           va->name, sa, e->nb, vb->name, sb, (long long)at);
      return;
    }
    desc_var(va, da, sizeof da);
    desc_var(vb, db, sizeof db);
    fail(e, "%s: %s binds %s, %s binds %s", ws, e->na, da, e->nb, db);
    return;
  }
  const void *ma = io_pmap_get(&e->var_ab, va), *mb = io_pmap_get(&e->var_ba, vb);
  if (ma || mb || !va->op || !vb->op || va->out_index != vb->out_index) {
    if (ma == vb && mb == va) return;
    char ws[512], da[400], db[400];
    desc_site(e, s, ws, sizeof ws);
    desc_var(va, da, sizeof da);
    desc_var(vb, db, sizeof db);
    fail(e, "%s: %s binds %s, %s binds %s", ws, e->na, da, e->nb, db);
    return;
  }
  map_ops(e, va->op, vb->op, s);
}

static const mil_input *find_input(const mil_op *op, const char *name) {
  for (int32_t i = 0; i < op->n_inputs; i++)
    if (strcmp(op->inputs[i].name, name) == 0) return &op->inputs[i];
  return NULL;
}

static const mil_value *arg_value(const mil_arg *g) {
  if (g->value) return g->value;
  return is_const_var(g->use.var) ? g->use.var->val : NULL;
}

static void map_blocks(eq *e, const mil_block *ba, const mil_block *bb, const mil_op *pa, const mil_op *pb,
                       bool function_body);

/* Checks an op pair whose correspondence is established. */
static void process(eq *e, const mil_op *a, const mil_op *b, const site *from) {
  if (io_pmap_get(&e->blk_ab, a->block) != b->block) {
    fail(e, "op '%s' (%s) in %s and op '%s' in %s correspond but sit in blocks that do not", a->name, a->type, e->na,
         b->name, e->nb);
    return;
  }
  for (int32_t i = 0; i < a->n_outputs && !e->failed; i++)
    if (!types_equal(e, a->outputs[i]->type, b->outputs[i]->type)) {
      char ta[128], tb[128];
      mil_type_to_string(a->outputs[i]->type, ta, sizeof ta);
      mil_type_to_string(b->outputs[i]->type, tb, sizeof tb);
      fail(e, "op '%s' (%s) in %s vs op '%s' in %s: output %d has type %s vs %s", a->name, a->type, e->na, b->name,
           e->nb, (int)i, ta, tb);
    }
  for (int32_t i = 0; i < a->n_inputs && !e->failed; i++) {
    const mil_input *ia = &a->inputs[i], *ib = find_input(b, ia->name);
    if (!ib) {
      fail(e, "op '%s' (%s) in %s vs op '%s' in %s: input '%s' is bound in %s only", a->name, a->type, e->na,
           b->name, e->nb, ia->name, e->na);
      return;
    }
    if (ia->n_args != ib->n_args) {
      fail(e, "op '%s' (%s) in %s vs op '%s' in %s: input '%s' binds %d values vs %d", a->name, a->type, e->na,
           b->name, e->nb, ia->name, (int)ia->n_args, (int)ib->n_args);
      return;
    }
    for (int32_t k = 0; k < ia->n_args && !e->failed; k++) {
      const mil_arg *ga = &ia->args[k], *gb = &ib->args[k];
      site s = {a, b, ia->name, k, false};
      if (ga->value || gb->value) { /* a literal binding compares by value */
        const mil_value *xa = arg_value(ga), *xb = arg_value(gb);
        if (!xa || !xb || !io_value_close_depth(xa, xb, e->rel, e->ulps, 0)) {
          char sa[256], sb[256];
          io_value_summary(xa, 0, sa, sizeof sa);
          io_value_summary(xb, 0, sb, sizeof sb);
          fail(e, "op '%s' (%s) in %s vs op '%s' in %s: input '%s': %s binds [%s], %s binds [%s]", a->name, a->type,
               e->na, b->name, e->nb, ia->name, e->na, sa, e->nb, sb);
        }
        continue;
      }
      bind_var(e, ga->use.var, gb->use.var, &s);
    }
  }
  for (int32_t i = 0; i < b->n_inputs && !e->failed; i++)
    if (!find_input(a, b->inputs[i].name))
      fail(e, "op '%s' (%s) in %s vs op '%s' in %s: input '%s' is bound in %s only", a->name, a->type, e->na,
           b->name, e->nb, b->inputs[i].name, e->nb);
  if (!e->failed && a->n_blocks != b->n_blocks)
    fail(e, "op '%s' (%s) in %s has %d blocks, op '%s' in %s has %d", a->name, a->type, e->na, (int)a->n_blocks,
         b->name, e->nb, (int)b->n_blocks);
  for (int32_t i = 0; i < a->n_blocks && !e->failed; i++) map_blocks(e, a->blocks[i], b->blocks[i], a, b, false);
  (void)from;
}

static void drain(eq *e) {
  while (e->nwork && !e->failed) {
    pend p = e->work[--e->nwork];
    e->ctx = &p.from;
    process(e, p.a, p.b, &p.from);
    e->ctx = NULL;
  }
}

static void map_blocks(eq *e, const mil_block *ba, const mil_block *bb, const mil_op *pa, const mil_op *pb,
                       bool function_body) {
  const void *ma = io_pmap_get(&e->blk_ab, ba), *mb = io_pmap_get(&e->blk_ba, bb);
  if (ma || mb) {
    if (!(ma == bb && mb == ba)) fail(e, "a block corresponds to two blocks");
    return;
  }
  if (!put2(e, &e->blk_ab, &e->blk_ba, ba, bb)) return;
  const char *where = pa ? pa->name : "the function";
  if (ba->n_inputs != bb->n_inputs) {
    fail(e, "block of '%s': %d inputs in %s, %d in %s", where, (int)ba->n_inputs, e->na, (int)bb->n_inputs, e->nb);
    return;
  }
  for (int32_t i = 0; i < ba->n_inputs; i++) {
    if (!types_equal(e, ba->inputs[i]->type, bb->inputs[i]->type)) {
      fail(e, "block of '%s': input %d (%%%s / %%%s) has different types", where, (int)i, ba->inputs[i]->name,
           bb->inputs[i]->name);
      return;
    }
    if (!put2(e, &e->var_ab, &e->var_ba, ba->inputs[i], bb->inputs[i])) return;
  }
  if (ba->n_outputs != bb->n_outputs) {
    fail(e, "block of '%s': %d outputs in %s, %d in %s", where, (int)ba->n_outputs, e->na, (int)bb->n_outputs,
         e->nb);
    return;
  }
  for (int32_t i = 0; i < ba->n_outputs && !e->failed; i++) {
    site s = {pa, pb, NULL, i, function_body};
    bind_var(e, ba->outputs[i].var, bb->outputs[i].var, &s);
  }
}

/* ---------- matching what no output reaches ---------- */

static uint64_t mix(uint64_t h, uint64_t x) {
  h ^= x + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
  return h * 0x100000001b3ULL;
}

static uint64_t hstr(const char *s) {
  uint64_t h = 1469598103934665603ULL;
  for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ULL;
  return h;
}

/* dtype and constant dims only, so that values within tolerance and
 * renamed symbols hash alike */
static uint64_t htype(const mil_type *t) {
  if (!t) return 7;
  uint64_t h = mix((uint64_t)t->kind + 11, (uint64_t)t->dtype);
  h = mix(h, (uint64_t)(int64_t)t->rank);
  if (t->kind == MIL_TYPE_TENSOR)
    for (int32_t i = 0; i < t->rank; i++) h = mix(h, (uint64_t)t->dims[i].size);
  return h;
}

typedef struct cand {
  uint64_t key;
  const mil_op *op;
  uint64_t seq;
  size_t jump; /* next entry worth looking at (skips matched ones) */
} cand;

/* Candidates sorted by key, plus the same sorted by key and name so a
 * same-named candidate is found without scanning a large group. */
typedef struct candset {
  cand *by_key, *by_name;
  size_t n;
} candset;

static int cand_cmp(const void *x, const void *y) {
  const cand *a = x, *b = y;
  if (a->key != b->key) return a->key < b->key ? -1 : 1;
  return a->seq < b->seq ? -1 : a->seq > b->seq;
}

/* Key of a non-const op in B terms: type, arity, block, and for each input
 * (order-free) the identity of what it binds. side_a translates A's vars
 * through the mapping; false when an input has no counterpart yet. */
static bool op_key(eq *e, const mil_op *op, bool side_a, uint64_t *out) {
  const void *blk = side_a ? io_pmap_get(&e->blk_ab, op->block) : op->block;
  if (!blk) return false;
  uint64_t h = mix(hstr(op->type), (uint64_t)op->n_outputs);
  h = mix(mix(h, (uint64_t)op->n_blocks), (uint64_t)io_phash(blk));
  uint64_t sum = 0;
  for (int32_t i = 0; i < op->n_inputs; i++) {
    const mil_input *in = &op->inputs[i];
    uint64_t ih = mix(hstr(in->name), (uint64_t)in->n_args);
    for (int32_t k = 0; k < in->n_args; k++) {
      const mil_arg *g = &in->args[k];
      uint64_t ah;
      if (g->value) ah = mix(1, htype(g->value->type));
      else if (is_const_var(g->use.var)) ah = mix(1, htype(g->use.var->type));
      else {
        const void *t = side_a ? io_pmap_get(&e->var_ab, g->use.var) : g->use.var;
        if (!t) return false;
        ah = mix(3, (uint64_t)io_phash(t));
      }
      ih = mix(ih, ah);
    }
    sum += ih;
  }
  *out = mix(h, sum);
  return true;
}

/* Would a and b correspond, given the mapping so far? (no forcing) */
static bool try_match(eq *e, const mil_op *a, const mil_op *b) {
  if (strcmp(a->type, b->type) != 0 || a->n_outputs != b->n_outputs || a->n_inputs != b->n_inputs ||
      a->n_blocks != b->n_blocks)
    return false;
  if (io_pmap_get(&e->blk_ab, a->block) != b->block) return false;
  for (int32_t i = 0; i < a->n_outputs; i++)
    if (!types_equal(e, a->outputs[i]->type, b->outputs[i]->type)) return false;
  for (int32_t i = 0; i < a->n_inputs; i++) {
    const mil_input *ia = &a->inputs[i], *ib = find_input(b, ia->name);
    if (!ib || ia->n_args != ib->n_args) return false;
    for (int32_t k = 0; k < ia->n_args; k++) {
      const mil_arg *ga = &ia->args[k], *gb = &ib->args[k];
      const mil_value *xa = arg_value(ga), *xb = arg_value(gb);
      if (xa || xb) {
        if (!xa || !xb || !io_value_close_depth(xa, xb, e->rel, e->ulps, 0)) return false;
        if (!ga->value && !gb->value && !types_equal(e, ga->use.var->type, gb->use.var->type)) return false;
      } else if (io_pmap_get(&e->var_ab, ga->use.var) != gb->use.var)
        return false;
    }
  }
  return true;
}

static const char *op_func_name(const mil_op *op) {
  const mil_block *b = op->block;
  for (int depth = 0; b && depth < 1024; depth++) {
    if (b->func) return b->func->name;
    b = b->parent ? b->parent->block : NULL;
  }
  return "?";
}

typedef struct walk_ops {
  const mil_op **ops;
  size_t n, cap;
  bool nomem;
} walk_ops;

static int collect(mil_op *op, void *ud) {
  walk_ops *w = ud;
  if (w->n == w->cap) {
    size_t cap = w->cap ? w->cap * 2 : 256;
    const mil_op **o = realloc(w->ops, cap * sizeof *o);
    if (!o) {
      w->nomem = true;
      return 1;
    }
    w->ops = o;
    w->cap = cap;
  }
  w->ops[w->n++] = op;
  return 0;
}

static size_t lower_bound(const cand *c, size_t n, uint64_t key) {
  size_t lo = 0, hi = n;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    if (c[mid].key < key) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

static bool acceptable(eq *e, const mil_op *a, const mil_op *b, int mode) {
  if (io_pmap_get(&e->blk_ab, a->block) != b->block) return false;
  if (mode == 0) return try_match(e, a, b);
  const mil_var *va = a->outputs[0], *vb = b->outputs[0];
  return types_equal(e, va->type, vb->type) &&
         (mode == 1 ? va->val && vb->val && mil_value_equal(va->val, vb->val)
                    : io_value_close_depth(va->val, vb->val, e->rel, e->ulps, 0));
}

/* The first unmatched entry at or after i (following and compressing the
 * jump links, so matched entries are skipped in amortized O(1)). */
static size_t next_free(eq *e, cand *c, size_t n, size_t i) {
  size_t j = i;
  while (j < n && io_pmap_get(&e->op_ba, c[j].op)) j = c[j].jump > j ? c[j].jump : j + 1;
  while (i < j && i < n) {
    size_t nx = c[i].jump > i ? c[i].jump : i + 1;
    c[i].jump = j;
    i = nx;
  }
  return j;
}

/* A counterpart for a among the candidates with `key`: one with a's name
 * when there is such, else the first acceptable one. */
static const mil_op *pick(eq *e, candset *cs, uint64_t key, const mil_op *a, int mode) {
  if (cs->by_name) {
    uint64_t kn = mix(key, hstr(a->name));
    for (size_t i = lower_bound(cs->by_name, cs->n, kn); i < cs->n && cs->by_name[i].key == kn; i++) {
      const mil_op *b = cs->by_name[i].op;
      if (!io_pmap_get(&e->op_ba, b) && strcmp(a->name, b->name) == 0 && acceptable(e, a, b, mode)) return b;
    }
  }
  cand *c = cs->by_key;
  for (size_t i = next_free(e, c, cs->n, lower_bound(c, cs->n, key)); i < cs->n && c[i].key == key;
       i = next_free(e, c, cs->n, i + 1))
    if (acceptable(e, a, c[i].op, mode)) return c[i].op;
  return NULL;
}

static void candset_free(candset *cs) {
  free(cs->by_key);
  free(cs->by_name);
  memset(cs, 0, sizeof *cs);
}

static bool candset_alloc(candset *cs, size_t n, bool names) {
  memset(cs, 0, sizeof *cs);
  cs->by_key = malloc((n + 1) * sizeof *cs->by_key);
  cs->by_name = names ? malloc((n + 1) * sizeof *cs->by_name) : NULL;
  return cs->by_key && (!names || cs->by_name);
}

static void candset_add(candset *cs, uint64_t key, const mil_op *op, uint64_t seq) {
  cs->by_key[cs->n] = (cand){key, op, seq, 0};
  if (cs->by_name) cs->by_name[cs->n] = (cand){mix(key, hstr(op->name)), op, seq, 0};
  cs->n++;
}

static void candset_sort(candset *cs) {
  qsort(cs->by_key, cs->n, sizeof *cs->by_key, cand_cmp);
  if (cs->by_name) qsort(cs->by_name, cs->n, sizeof *cs->by_name, cand_cmp);
  for (size_t i = 0; i < cs->n; i++) cs->by_key[i].jump = i + 1;
}

static void match_rest(eq *e, const mil_program *pa, const mil_program *pb) {
  walk_ops wa = {0}, wb = {0};
  mil_program_walk((mil_program *)pa, collect, &wa);
  mil_program_walk((mil_program *)pb, collect, &wb);
  candset ops, cexact, cloose;
  bool ok = !wa.nomem && !wb.nomem;
  ok = candset_alloc(&ops, wb.n, true) && ok;
  ok = candset_alloc(&cexact, wb.n, true) && ok;
  ok = candset_alloc(&cloose, wb.n, false) && ok;
  if (!ok) {
    oom(e);
    goto done;
  }
  for (size_t i = 0; i < wb.n; i++) {
    const mil_op *b = wb.ops[i];
    if (io_pmap_get(&e->op_ba, b)) continue;
    uint64_t k;
    if (mil_op_is_const(b) && b->n_outputs == 1) {
      uint64_t base = mix(htype(b->outputs[0]->type), (uint64_t)io_phash(b->block));
      const mil_value *v = b->outputs[0]->val;
      candset_add(&cloose, base, b, i);
      candset_add(&cexact, mix(base, v ? mil_value_hash(v) : 0), b, i);
    } else if (op_key(e, b, false, &k)) {
      candset_add(&ops, k, b, i);
    }
  }
  candset_sort(&ops);
  candset_sort(&cexact);
  candset_sort(&cloose);
  /* non-const ops first (their nested blocks may hold consts) */
  for (size_t i = 0; i < wa.n && !e->failed; i++) {
    const mil_op *a = wa.ops[i];
    if (mil_op_is_const(a) || io_pmap_get(&e->op_ab, a)) continue;
    e->func = op_func_name(a);
    uint64_t k;
    const mil_op *b = op_key(e, a, true, &k) ? pick(e, &ops, k, a, 0) : NULL;
    if (!b) {
      fail(e, "op '%s' (%s) in %s has no counterpart in %s", a->name, a->type, e->na, e->nb);
      break;
    }
    map_ops(e, a, b, NULL);
    drain(e);
  }
  for (size_t i = 0; i < wa.n && !e->failed; i++) {
    const mil_op *a = wa.ops[i];
    if (!mil_op_is_const(a) || io_pmap_get(&e->op_ab, a)) continue;
    const mil_block *bb = io_pmap_get(&e->blk_ab, a->block);
    const mil_op *b = NULL;
    if (bb && a->n_outputs == 1) {
      uint64_t base = mix(htype(a->outputs[0]->type), (uint64_t)io_phash(bb));
      const mil_value *v = a->outputs[0]->val;
      b = pick(e, &cexact, mix(base, v ? mil_value_hash(v) : 0), a, 1);
      if (!b) b = pick(e, &cloose, base, a, 2);
    }
    if (!b) {
      e->func = op_func_name(a);
      char s[256];
      io_value_summary(a->n_outputs ? a->outputs[0]->val : NULL, 0, s, sizeof s);
      fail(e, "const '%s' [%s] in %s has no counterpart of equal value in %s", a->name, s, e->na, e->nb);
      break;
    }
    put2(e, &e->op_ab, &e->op_ba, a, b);
  }
  for (size_t i = 0; i < wb.n && !e->failed; i++) {
    const mil_op *b = wb.ops[i];
    if (io_pmap_get(&e->op_ba, b)) continue;
    e->func = op_func_name(b);
    if (mil_op_is_const(b)) {
      char s[256];
      io_value_summary(b->n_outputs ? b->outputs[0]->val : NULL, 0, s, sizeof s);
      fail(e, "const '%s' [%s] in %s has no counterpart of equal value in %s", b->name, s, e->nb, e->na);
    } else {
      fail(e, "op '%s' (%s) in %s has no counterpart in %s", b->name, b->type, e->nb, e->na);
    }
  }
done:
  candset_free(&ops);
  candset_free(&cexact);
  candset_free(&cloose);
  free(wa.ops);
  free(wb.ops);
}

/* ---------- functions ---------- */

static void match_function(eq *e, const mil_function *fa, const mil_function *fb) {
  e->func = fa->name;
  if (strcmp(fa->opset, fb->opset) != 0) {
    fail(e, "opset %s in %s, %s in %s", fa->opset, e->na, fb->opset, e->nb);
    return;
  }
  if (fa->n_inputs != fb->n_inputs) {
    fail(e, "%d inputs in %s, %d in %s", (int)fa->n_inputs, e->na, (int)fb->n_inputs, e->nb);
    return;
  }
  for (int32_t i = 0; i < fa->n_inputs; i++) {
    const mil_var *va = fa->inputs[i], *vb = fb->inputs[i];
    if (strcmp(va->name, vb->name) != 0 || !types_equal(e, va->type, vb->type)) {
      char ta[128], tb[128];
      mil_type_to_string(va->type, ta, sizeof ta);
      mil_type_to_string(vb->type, tb, sizeof tb);
      fail(e, "input %d is %%%s: %s in %s, %%%s: %s in %s", (int)i, va->name, ta, e->na, vb->name, tb, e->nb);
      return;
    }
    if (!put2(e, &e->var_ab, &e->var_ba, va, vb)) return;
  }
  if (fa->n_specs != fb->n_specs) {
    fail(e, "%d block specializations in %s, %d in %s", (int)fa->n_specs, e->na, (int)fb->n_specs, e->nb);
    return;
  }
  for (int32_t s = 0; s < fa->n_specs && !e->failed; s++) {
    const mil_block *bb = NULL;
    for (int32_t t = 0; t < fb->n_specs; t++)
      if (strcmp(fa->specs[s].opset, fb->specs[t].opset) == 0) bb = fb->specs[t].block;
    if (!bb) {
      fail(e, "block specialization %s is in %s only", fa->specs[s].opset, e->na);
      return;
    }
    const mil_block *ba = fa->specs[s].block;
    if (ba->n_outputs == bb->n_outputs)
      for (int32_t i = 0; i < ba->n_outputs; i++)
        if (strcmp(ba->outputs[i].var->name, bb->outputs[i].var->name) != 0) {
          fail(e, "output %d is %%%s in %s, %%%s in %s", (int)i, ba->outputs[i].var->name, e->na,
               bb->outputs[i].var->name, e->nb);
          return;
        }
    map_blocks(e, ba, bb, NULL, NULL, true);
    drain(e);
  }
}

/* ---------- identical ---------- */

typedef struct ident {
  eq *e;
  const char *why;
  char buf[1024];
} ident;

static int check_identical_block(ident *id, const mil_block *ba, int depth) {
  eq *e = id->e;
  const mil_block *bb = io_pmap_get(&e->blk_ab, ba);
  if (!bb || depth > 256) return 1;
  const mil_op *a = ba->first, *b = bb->first;
  for (int32_t pos = 0; a && b; pos++, a = a->next, b = b->next) {
    if (io_pmap_get(&e->op_ab, a) != b) {
      const mil_op *m = io_pmap_get(&e->op_ab, a);
      snprintf(id->buf, sizeof id->buf,
               "op order differs at position %d of a block: %s has op '%s' (%s) there, %s has op '%s' (%s) (the "
               "counterpart of '%s' is '%s')",
               (int)pos, e->na, a->name, a->type, e->nb, b->name, b->type, a->name, m ? m->name : "?");
      return 1;
    }
    if (!mil_names_match_modulo_counters(a->name, b->name)) {
      snprintf(id->buf, sizeof id->buf, "op '%s' (%s) in %s is named '%s' in %s", a->name, a->type, e->na, b->name,
               e->nb);
      return 1;
    }
    for (int32_t i = 0; i < a->n_outputs; i++)
      if (!mil_names_match_modulo_counters(a->outputs[i]->name, b->outputs[i]->name)) {
        snprintf(id->buf, sizeof id->buf, "output %d of op '%s' (%s) is %%%s in %s, %%%s in %s", (int)i, a->name,
                 a->type, a->outputs[i]->name, e->na, b->outputs[i]->name, e->nb);
        return 1;
      }
    for (int32_t i = 0; i < a->n_blocks; i++)
      if (check_identical_block(id, a->blocks[i], depth + 1)) return 1;
  }
  if (a || b) {
    snprintf(id->buf, sizeof id->buf, "a block has a different number of ops");
    return 1;
  }
  return 0;
}

/* ---------- entry ---------- */

mil_status mil_program_compare(const mil_program *a, const mil_program *b, const mil_equiv_options *opt,
                               mil_equiv_result *res, mil_diag *d) {
  eq e;
  memset(&e, 0, sizeof e);
  io_equiv_defaults(opt, &e.rel, &e.ulps);
  e.na = opt && opt->name_a ? opt->name_a : "A";
  e.nb = opt && opt->name_b ? opt->name_b : "B";
  mil_equiv_result local;
  if (!res) res = &local;
  memset(res, 0, sizeof *res);

  for (int32_t i = 0; i < a->n_functions && !e.failed; i++) {
    const mil_function *fb = mil_program_find_function(b, a->functions[i]->name);
    e.func = a->functions[i]->name;
    if (!fb) fail(&e, "the function is in %s only", e.na);
    else match_function(&e, a->functions[i], fb);
  }
  for (int32_t i = 0; i < b->n_functions && !e.failed; i++)
    if (!mil_program_find_function(a, b->functions[i]->name)) {
      e.func = b->functions[i]->name;
      fail(&e, "the function is in %s only", e.nb);
    }
  if (!e.failed) match_rest(&e, a, b);

  res->equivalent = !e.failed;
  if (e.failed) snprintf(res->diff, sizeof res->diff, "%s", e.msg);
  if (res->equivalent) {
    ident id = {&e, NULL, {0}};
    bool same = true;
    for (int32_t i = 0; i < a->n_functions && same; i++) {
      const mil_function *fa = a->functions[i];
      for (int32_t s = 0; s < fa->n_specs && same; s++)
        if (check_identical_block(&id, fa->specs[s].block, 0)) same = false;
    }
    if (same && a->n_functions == b->n_functions)
      for (int32_t i = 0; i < a->n_functions && same; i++)
        if (strcmp(a->functions[i]->name, b->functions[i]->name) != 0) {
          snprintf(id.buf, sizeof id.buf, "functions are in a different order");
          same = false;
        }
    res->identical = same;
    if (!same) snprintf(res->identical_diff, sizeof res->identical_diff, "%s", id.buf);
  } else {
    snprintf(res->identical_diff, sizeof res->identical_diff, "not equivalent");
  }

  mil_status st = MIL_OK;
  if (e.nomem) st = MIL_ERR_NOMEM;
  else if (!res->equivalent) st = mil_diag_error(d, MIL_ERR_INVALID, "programs differ: %s", res->diff);
  else if (opt && opt->identical && !res->identical)
    st = mil_diag_error(d, MIL_ERR_INVALID, "programs are equivalent but not identical: %s", res->identical_diff);
  free(e.work);
  io_pmap_free(&e.op_ab);
  io_pmap_free(&e.op_ba);
  io_pmap_free(&e.var_ab);
  io_pmap_free(&e.var_ba);
  io_pmap_free(&e.blk_ab);
  io_pmap_free(&e.blk_ba);
  io_pmap_free(&e.sym_ab);
  io_pmap_free(&e.sym_ba);
  return st;
}
