/* common::dedup_op_and_var_names — make op names and var names unique
 * within each function.
 *
 *   main(%x: (10, 20, fp32)(Tensor)) {
 *     block0() {
 *       %d0: (string)*(Scalar) = const(val="fp16", name="d0")
 *       %c: (10, 20, fp16)(Tensor) = cast(x=%x, dtype=%d0, name="c")
 *       %d1: (string)*(Scalar) = const(val="fp32", name="d1")
 *       %c: (10, 20, fp32)(Tensor) = cast(x=%c, dtype=%d1, name="c")
 *       %o: (10, 20, fp32)(Tensor) = square(x=%c, name="o")
 *     } -> (%o)
 *   }
 *
 * becomes
 *
 *   main(%x: (10, 20, fp32)(Tensor)) {
 *     block0() {
 *       %d0: (string)*(Scalar) = const(val="fp16", name="d0")
 *       %c: (10, 20, fp16)(Tensor) = cast(x=%x, dtype=%d0, name="c")
 *       %d1: (string)*(Scalar) = const(val="fp32", name="d1")
 *       %c_1: (10, 20, fp32)(Tensor) = cast(x=%c, dtype=%d1, name="c_1")
 *       %o: (10, 20, fp32)(Tensor) = square(x=%c_1, name="o")
 *     } -> (%o)
 *   }
 *
 * Function inputs and outputs keep their names (two different vars among
 * them with one name is an error). Then, walking the function (an op's
 * nested blocks, with their inputs, before the op itself), an op or var
 * whose name was already seen gets "<name>_<k>" with the smallest k >= 1
 * not seen yet. Op names and var names are tracked separately. A name a
 * pass gave in place of a repeat coremltools' builder made
 * (pass_names_claim: "const_40_1" for a second "const_40") is walked as
 * the name coremltools gave (mil_program_name_intended), so the repeat is
 * settled here in program order exactly as coremltools' pass settles it:
 * the first holder keeps "const_40", the next one gets "const_40_1".
 *
 * Mirrors coremltools/converters/mil/mil/passes/defs/cleanup/
 * dedup_op_and_var_names.py. Linear: the next k tried for each base name is
 * remembered (the smallest free k never decreases, since names are only
 * added).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "passes/pass_internal.h"

/* Reading ahead in the walks: op records lie in list order in memory
 * (mil_program_compact_ops), so the record PASS_WALK_AHEAD ops on is most likely
 * PASS_WALK_AHEAD records further. Asking for it early keeps a walk from waiting on
 * memory at every op (a prefetch of an address that holds no op is
 * harmless). */

typedef struct names {
  pass_ptrset seen; /* interned names */
  pass_ptrmap next; /* interned base name -> next k to try */
} names;

typedef struct dedup {
  mil_program *p;
  names vars, ops;
  pass_ptrset func_outputs; /* when the body has many outputs */
  const mil_block *body;
  int64_t changes;
  mil_diag *d;
  bool oom;
  char *buf;
  size_t cap;
} dedup;

/* coremltools' _gen_new_name: name itself when unseen, else the first free
 * "<name>_<k>", k >= 1. Records the result as seen. */
static const char *fresh(dedup *c, names *ns, const char *given) {
  if (!given) return given;
  /* the name coremltools' builder gave, where libmil gave another to
   * avoid a repeat (pass_names_claim) */
  const char *name = mil_program_name_intended(c->p, given);
  int added = pass_ptrset_insert(&ns->seen, name);
  if (added > 0) {
    if (name != given) c->changes++;
    return name;
  }
  if (added < 0) {
    c->oom = true;
    return name;
  }
  const char *out = name;
  {
    size_t len = strlen(name);
    if (c->cap < len + 24) {
      char *b = realloc(c->buf, len + 24);
      if (!b) {
        c->oom = true;
        return name;
      }
      c->buf = b;
      c->cap = len + 24;
    }
    uintptr_t k = (uintptr_t)pass_ptrmap_get(&ns->next, name);
    if (k == 0) k = 1;
    for (;; k++) {
      snprintf(c->buf, c->cap, "%s_%llu", name, (unsigned long long)k);
      out = mil_program_intern(c->p, c->buf, (size_t)-1);
      if (!out) {
        c->oom = true;
        return name;
      }
      if (!pass_ptrset_has(&ns->seen, out)) break;
    }
    if (!pass_ptrmap_put(&ns->next, name, (void *)(k + 1))) c->oom = true;
    c->changes++;
  }
  if (pass_ptrset_insert(&ns->seen, out) < 0) c->oom = true;
  return out;
}

static bool is_func_output(const dedup *c, const mil_var *v) {
  if (c->body->n_outputs > 16) return pass_ptrset_has(&c->func_outputs, v);
  for (int32_t i = 0; i < c->body->n_outputs; i++)
    if (c->body->outputs[i].var == v) return true;
  return false;
}

static mil_status dedup_block(dedup *c, mil_block *b, bool is_body, int depth) {
  if (depth > PASS_MAX_DEPTH)
    return mil_diag_error(c->d, MIL_ERR_UNSUPPORTED, "dedup_op_and_var_names: blocks nested deeper than %d levels",
                          PASS_MAX_DEPTH);
  if (!is_body)
    for (int32_t i = 0; i < b->n_inputs; i++) b->inputs[i]->name = fresh(c, &c->vars, b->inputs[i]->name);
  for (mil_op *op = b->first; op && !c->oom; op = op->next) {
    for (int32_t i = 0; i < op->n_blocks; i++) {
      mil_status st = dedup_block(c, op->blocks[i], false, depth + 1);
      if (st != MIL_OK) return st;
    }
    if (op->name) op->name = fresh(c, &c->ops, op->name);
    for (int32_t i = 0; i < op->n_outputs; i++) {
      mil_var *v = op->outputs[i];
      if (is_func_output(c, v)) continue;
      v->name = fresh(c, &c->vars, v->name);
    }
  }
  return c->oom ? mil_diag_error(c->d, MIL_ERR_NOMEM, "dedup_op_and_var_names: out of memory") : MIL_OK;
}

static void names_free(names *n) {
  pass_ptrset_free(&n->seen);
  pass_ptrmap_free(&n->next);
}

/* Checks the rule on function input and output names
 * (mil_function_io_names_ok) and seeds the seen var names with theirs. */
static mil_status seed_io(dedup *c, const mil_function *f, const mil_block *body) {
  char why[512];
  if (!mil_function_io_names_ok(f, body, NULL, why, sizeof why))
    return mil_diag_error(c->d, MIL_ERR_INVALID, "dedup_op_and_var_names: %s", why);
  int32_t n = f->n_inputs + body->n_outputs;
  for (int32_t i = 0; i < n; i++) {
    mil_var *v = i < f->n_inputs ? f->inputs[i] : body->outputs[i - f->n_inputs].var;
    if (!v) continue;
    if ((v->name && pass_ptrset_insert(&c->vars.seen, v->name) < 0) ||
        (i >= f->n_inputs && !pass_ptrset_add(&c->func_outputs, v)))
      return mil_diag_error(c->d, MIL_ERR_NOMEM, "dedup_op_and_var_names: out of memory");
  }
  return MIL_OK;
}

/* ---------- the check that no name repeats ----------
 *
 * Most programs have unique names, and the walk then renames nothing: the
 * names of a function are listed first (function inputs and outputs once
 * per var, nested block inputs, and op outputs other than function
 * outputs; op names apart), and only when one repeats does the walk
 * above run. Finding a repeat among n pointers: a bitmap of about 32n
 * bits, indexed by a hash, keeps in the cache; a pointer whose bit is
 * already set is a suspect (every second occurrence of a name is one),
 * and the suspects alone are then counted exactly. */

typedef struct name_list {
  const char **v;
  size_t n, cap;
  bool oom;
} name_list;

static void list_add(name_list *l, const char *s) {
  if (!s) return;
  if (l->n == l->cap) {
    size_t cap = l->cap ? l->cap * 2 : 1024;
    const char **g = realloc(l->v, cap * sizeof *g);
    if (!g) {
      l->oom = true;
      return;
    }
    l->v = g;
    l->cap = cap;
  }
  l->v[l->n++] = s;
}

static uint64_t name_hash(const char *s) {
  uint64_t x = (uint64_t)(uintptr_t)s;
  x ^= x >> 29;
  x *= 0xbf58476d1ce4e5b9ULL;
  return x ^ (x >> 32);
}

/* 1 when some pointer of l repeats, 0 when none does, -1 on out of
 * memory. */
static int has_repeat(const name_list *l) {
  size_t n = l->n;
  if (n < 2) return 0;
  size_t bits = 1024;
  while (bits < 32 * n) bits *= 2;
  uint64_t *bm = calloc(bits / 64, sizeof *bm);
  name_list sus = {0};
  if (!bm) return -1;
  for (size_t i = 0; i < n; i++) {
    size_t h = (size_t)(name_hash(l->v[i]) >> 20) & (bits - 1);
    uint64_t m = (uint64_t)1 << (h & 63);
    if (bm[h >> 6] & m) list_add(&sus, l->v[i]);
    bm[h >> 6] |= m;
  }
  free(bm);
  if (sus.oom) {
    free(sus.v);
    return -1;
  }
  if (!sus.n) return 0;
  /* the suspects, each with the number of times it occurs; a second,
   * small bitmap of them passes over most of the others */
  size_t cap = 16, sbits = 1024;
  while (cap < 2 * sus.n) cap *= 2;
  while (sbits < 16 * sus.n) sbits *= 2;
  const char **key = calloc(cap, sizeof *key);
  uint32_t *cnt = calloc(cap, sizeof *cnt);
  uint64_t *sbm = calloc(sbits / 64, sizeof *sbm);
  int r = -1;
  if (key && cnt && sbm) {
    for (size_t i = 0; i < sus.n; i++) {
      uint64_t h = name_hash(sus.v[i]);
      size_t b = (size_t)(h >> 20) & (sbits - 1), j = (size_t)h & (cap - 1);
      sbm[b >> 6] |= (uint64_t)1 << (b & 63);
      while (key[j] && key[j] != sus.v[i]) j = (j + 1) & (cap - 1);
      key[j] = sus.v[i];
    }
    r = 0;
    for (size_t i = 0; i < n && !r; i++) {
      uint64_t h = name_hash(l->v[i]);
      size_t b = (size_t)(h >> 20) & (sbits - 1), j = (size_t)h & (cap - 1);
      if (!(sbm[b >> 6] & ((uint64_t)1 << (b & 63)))) continue;
      while (key[j] && key[j] != l->v[i]) j = (j + 1) & (cap - 1);
      if (key[j] && ++cnt[j] > 1) r = 1;
    }
  }
  free(key);
  free(cnt);
  free(sbm);
  free(sus.v);
  return r;
}

/* Lists the names the walk of b would look at (see dedup_block); false
 * when b is nested too deep (the walk reports it) or out of memory. */
static bool list_block(const dedup *c, const mil_block *b, bool is_body, name_list *ops, name_list *vars, int depth) {
  if (depth > PASS_MAX_DEPTH) return false;
  if (!is_body)
    for (int32_t i = 0; i < b->n_inputs; i++) list_add(vars, b->inputs[i]->name);
  for (const mil_op *op = b->first; op; op = op->next) {
    PASS_WALK_PREFETCH(op);
    for (int32_t i = 0; i < op->n_blocks; i++)
      if (!list_block(c, op->blocks[i], false, ops, vars, depth + 1)) return false;
    list_add(ops, op->name);
    for (int32_t i = 0; i < op->n_outputs; i++)
      if (!is_func_output(c, op->outputs[i])) list_add(vars, op->outputs[i]->name);
  }
  return !ops->oom && !vars->oom;
}

/* True when the walk of f's body would rename nothing and report nothing:
 * no op name repeats, and no var name repeats among the function inputs
 * and outputs (each var once) and the vars the walk names. */
static bool all_unique(dedup *c, const mil_function *f, const mil_block *body, name_list *ops, name_list *vars) {
  ops->n = vars->n = 0;
  bool ok = true;
  int32_t n = f->n_inputs + body->n_outputs;
  pass_ptrset listed = {0}; /* the vars listed, when there are many */
  for (int32_t i = 0; i < n && ok; i++) {
    const mil_var *v = i < f->n_inputs ? f->inputs[i] : body->outputs[i - f->n_inputs].var;
    if (!v) continue;
    if (!v->name) ok = false; /* (the walk reports it) */
    if (i >= f->n_inputs && body->n_outputs > 16 && !pass_ptrset_add(&c->func_outputs, v)) ok = false;
    int again = 0; /* the same var listed before */
    if (n > 32) {
      again = 1 - pass_ptrset_insert(&listed, v);
      if (again > 1) ok = false;
    } else {
      for (int32_t j = 0; j < i && !again; j++)
        again = (j < f->n_inputs ? f->inputs[j] : body->outputs[j - f->n_inputs].var) == v;
    }
    if (!again) list_add(vars, v->name);
  }
  pass_ptrset_free(&listed);
  ok = ok && list_block(c, body, true, ops, vars, 0) && has_repeat(ops) == 0 && has_repeat(vars) == 0;
  pass_ptrset_free(&c->func_outputs);
  return ok;
}

static mil_status run(mil_program *p, const mil_pass_options *o, mil_pass_stats *stats, mil_diag *d) {
  mil_status st = MIL_OK;
  dedup c;
  memset(&c, 0, sizeof c);
  c.p = p;
  c.d = d;
  name_list op_names = {0}, var_names = {0};
  /* names given in place of a repeat coremltools made: the walk must run */
  bool intended = mil_program_name_intended_any(p);
  for (int32_t fi = 0; fi < p->n_functions && st == MIL_OK; fi++) {
    mil_function *f = p->functions[fi];
    for (int32_t s = 0; s < f->n_specs && st == MIL_OK; s++) {
      mil_block *body = f->specs[s].block;
      c.body = body;
      if (!intended && all_unique(&c, f, body, &op_names, &var_names)) continue;
      /* room for a name per op and output without growing */
      size_t n = (size_t)(mil_program_count_ops(p) + f->n_inputs) + 32;
      if (!pass_ptrset_reserve(&c.vars.seen, n) || !pass_ptrset_reserve(&c.ops.seen, n))
        st = mil_diag_error(d, MIL_ERR_NOMEM, "dedup_op_and_var_names: out of memory");
      else
        st = seed_io(&c, f, body);
      if (st == MIL_OK) st = dedup_block(&c, body, true, 0);
      names_free(&c.vars);
      names_free(&c.ops);
      pass_ptrset_free(&c.func_outputs);
    }
  }
  if (st == MIL_OK) mil_program_name_intended_clear(p);
  free(c.buf);
  free(op_names.v);
  free(var_names.v);
  if (stats) stats->changes += c.changes;
  return st;
}

const mil_pass_def pass_def_dedup_op_and_var_names = {
    "common::dedup_op_and_var_names", "make op and var names unique within each function", NULL, 0, run, NULL};
