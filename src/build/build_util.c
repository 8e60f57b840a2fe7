/* The builder's support (src/build/): fresh names by coremltools' rules,
 * consts with the builder's names, ranged and checked use replacement, op
 * removal, pointer sets and maps, coremltools' nonreplaceable vars, and
 * finishing a newly built op. The contract is in build/build.h.
 *
 * Mirrors coremltools' Builder._get_free_name / _add_const and the Block
 * methods (replace_uses_of_var_after_op, remove_ops), and
 * Var.nonreplaceable_vars_upstream / can_be_replaced_by_var. */
#include <stdlib.h>
#include <string.h>

#include "build/build.h"

#if defined(__GNUC__) || defined(__clang__)
#define PASS_PREFETCH(addr) __builtin_prefetch(addr)
#else
#define PASS_PREFETCH(addr) ((void)(addr))
#endif


/* ---------- a small pointer set (open addressing) ---------- */

/* pass_ptrset under a short name: the helpers below are its implementation. */
typedef pass_ptrset pset;

static size_t ph(const void *p) {
  uint64_t x = (uint64_t)(uintptr_t)p;
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  return (size_t)x;
}

/* Rehashes s into cap slots (a power of two above twice its keys). */
static bool pset_rehash(pset *s, size_t cap) {
  const void **k = calloc(cap, sizeof *k);
  if (!k) return false;
  for (size_t i = 0; i < s->cap; i++)
    if (s->keys[i]) {
      size_t j = ph(s->keys[i]) & (cap - 1);
      while (k[j]) j = (j + 1) & (cap - 1);
      k[j] = s->keys[i];
    }
  free(s->keys);
  s->keys = k;
  s->cap = cap;
  return true;
}

static bool pset_grow(pset *s) { return pset_rehash(s, s->cap ? s->cap * 2 : 64); }

static bool pset_has(const pset *s, const void *p) {
  if (!s->cap || !p) return false;
  size_t j = ph(p) & (s->cap - 1);
  while (s->keys[j]) {
    if (s->keys[j] == p) return true;
    j = (j + 1) & (s->cap - 1);
  }
  return false;
}

/* Room for n keys without growing; false on out of memory. */
static bool pset_reserve(pset *s, size_t n) {
  size_t cap = s->cap ? s->cap : 64;
  while ((n + 1) * 2 > cap) cap *= 2;
  return cap == s->cap || pset_rehash(s, cap);
}

/* Adds p, known not to be in s (not NULL); false on out of memory. */
static bool pset_add_new(pset *s, const void *p) {
  if ((s->n + 1) * 2 > s->cap && !pset_grow(s)) return false;
  size_t j = ph(p) & (s->cap - 1);
  while (s->keys[j]) j = (j + 1) & (s->cap - 1);
  s->keys[j] = p;
  s->n++;
  return true;
}

/* Adds p: 1 when added, 0 when it was there (or NULL), -1 on out of memory. */
static int pset_insert(pset *s, const void *p) {
  if (!p) return 0;
  if (s->cap) { /* one probe finds p or the free slot it would take */
    size_t j = ph(p) & (s->cap - 1);
    while (s->keys[j]) {
      if (s->keys[j] == p) return 0;
      j = (j + 1) & (s->cap - 1);
    }
    if ((s->n + 1) * 2 <= s->cap) {
      s->keys[j] = p;
      s->n++;
      return 1;
    }
  }
  return pset_add_new(s, p) ? 1 : -1;
}

/* Adds p; false on out of memory. */
static bool pset_add(pset *s, const void *p) { return pset_insert(s, p) >= 0; }

static void pset_free(pset *s) {
  free(s->keys);
  memset(s, 0, sizeof *s);
}

/* ---------- values bound to inputs ---------- */

const mil_value *pass_var_value(const mil_var *v) { return v ? v->val : NULL; }

const mil_value *pass_input_value(const mil_op *op, const char *name) {
  const mil_input *in = mil_op_find_input(op, name);
  if (!in || in->n_args != 1) return NULL;
  if (in->args[0].value) return in->args[0].value;
  return in->args[0].use.var ? in->args[0].use.var->val : NULL;
}

/* ---------- names ---------- */

struct pass_names {
  pset set; /* interned name pointers */
  mil_program *p;
};

static int collect_names(mil_op *op, void *ud) {
  pass_names *n = ud;
  if (!pset_add(&n->set, op->name)) return 1;
  for (int32_t i = 0; i < op->n_outputs; i++)
    if (!pset_add(&n->set, op->outputs[i]->name)) return 1;
  for (int32_t b = 0; b < op->n_blocks; b++)
    for (int32_t i = 0; i < op->blocks[b]->n_inputs; i++)
      if (!pset_add(&n->set, op->blocks[b]->inputs[i]->name)) return 1;
  return 0;
}

pass_names *pass_names_new(mil_program *p) {
  pass_names *n = calloc(1, sizeof *n);
  if (!n) return NULL;
  n->p = p;
  /* about two names per op (the op's and its output's) */
  int64_t ops = mil_program_count_ops(p);
  bool ok = pset_reserve(&n->set, ops > 0 ? (size_t)ops * 2 + 64 : 64);
  for (int32_t i = 0; i < p->n_functions && ok; i++)
    for (int32_t k = 0; k < p->functions[i]->n_inputs && ok; k++)
      ok = pset_add(&n->set, p->functions[i]->inputs[k]->name);
  if (!ok || mil_program_walk(p, collect_names, n) != 0) {
    pass_names_free(n);
    return NULL;
  }
  return n;
}

pass_names *pass_names_from(mil_program *p, const char *const *names, size_t count) {
  pass_names *n = calloc(1, sizeof *n);
  if (!n) return NULL;
  n->p = p;
  bool ok = pset_reserve(&n->set, count + 64);
  /* each slot is asked for a few names before it is probed: in a large
   * program every probe is a cache miss */
  enum { AHEAD = 16 };
  for (size_t i = 0; ok && i < count; i++) {
    if (i + AHEAD < count && names[i + AHEAD])
      PASS_PREFETCH(&n->set.keys[ph(names[i + AHEAD]) & (n->set.cap - 1)]);
    ok = pset_add(&n->set, names[i]);
  }
  if (!ok) {
    pass_names_free(n);
    return NULL;
  }
  return n;
}

void pass_names_free(pass_names *n) {
  if (!n) return;
  pset_free(&n->set);
  free(n);
}

bool pass_names_add(pass_names *n, const char *name) {
  const char *s = mil_program_intern(n->p, name, (size_t)-1);
  return s && pset_add(&n->set, s);
}

bool pass_names_add_interned(pass_names *n, const char *name) { return pset_add(&n->set, name); }

bool pass_names_has(const pass_names *n, const char *name) {
  /* interning an existing name returns the stored pointer */
  const char *s = mil_program_intern(n->p, name, (size_t)-1);
  return s && pset_has(&n->set, s);
}

size_t pass_put_u64(char *out, uint64_t k) {
  char tmp[20];
  size_t n = 0;
  do {
    tmp[n++] = (char)('0' + k % 10);
    k /= 10;
  } while (k);
  for (size_t i = 0; i < n; i++) out[i] = tmp[n - 1 - i];
  return n;
}

/* How coremltools names what a pass builds, and how libmil follows it.
 *
 * coremltools/converters/mil/mil/builder.py: an op built without a name
 * gets Builder._maybe_set_name -> _get_free_name(op_type); a Python value
 * bound to an input becomes a const named by _add_const ->
 * _get_free_name("<op_name>_<input>") (Builder._create_vars, for given
 * and for default inputs alike). _get_free_name(prefix) returns
 * "<prefix>_<name_count[prefix]>" and increments the count: a class-level
 * defaultdict(int) that never looks at the names the program holds, and
 * that ct.convert clears when it starts (converter.py,
 * _reset_conversion_state). So the new name can repeat one the program
 * already has (a loaded model's own "const_40", or the "108_transpose_x_0"
 * of the matmul fuse_transpose_matmul rebuilds). The DEFAULT pipeline
 * resolves that in common::dedup_op_and_var_names
 * (passes/defs/cleanup/dedup_op_and_var_names.py, _gen_new_name): walking
 * each function in order, a name seen before becomes "<name>_<j>" with the
 * smallest j >= 1 not seen; add_fp16_cast then derives "<name>_to_fp16"
 * from the result. Hence coremltools' "const_40_1_to_fp16" and
 * "108_transpose_x_0_1".
 *
 * libmil keeps the count per program (mil_program_name_count_next: 0 for a
 * program just read, as after the reset) and gives "<prefix>_<k>" when it
 * is free in n. When it is taken, libmil does not repeat it (a program
 * after any single pass must still bind by name): it gives
 * "<prefix>_<k>_<j>", the smallest j >= 1 free, which is what
 * dedup_op_and_var_names makes of the repeat when the earlier holder comes
 * first in the function (the consts a frontend made before the ops a pass
 * rebuilds), and records "<prefix>_<k>" as the name coremltools gave
 * (mil_program_name_intended_set). libmil's dedup_op_and_var_names walks
 * with the recorded names in place of the given ones, so when the holder
 * comes later, or is gone by then, it settles the names as coremltools'
 * pass does (the new op keeps "<prefix>_<k>", the holder gets the "_1").
 *
 * pass_name_counted makes "<prefix>_<k>", pass_names_claim settles the
 * suffix. */
size_t pass_name_counted(mil_program *p, char *buf, size_t len) {
  const char *key = mil_program_intern(p, buf, len);
  int64_t k = key ? mil_program_name_count_next(p, key) : -1;
  if (k < 0) return 0;
  buf[len] = '_';
  size_t m = len + 1 + pass_put_u64(buf + len + 1, (uint64_t)k);
  buf[m] = 0;
  return m;
}

const char *pass_names_claim(pass_names *n, mil_program *p, char *buf, size_t m) {
  const char *base = mil_program_intern(p, buf, m), *s = base;
  if (!s || !n) return s;
  if (pset_has(&n->set, s)) {
    buf[m] = '_';
    for (uint64_t j = 1;; j++) {
      size_t e = m + 1 + pass_put_u64(buf + m + 1, j);
      buf[e] = 0;
      s = mil_program_intern(p, buf, e);
      if (!s || !pset_has(&n->set, s)) break;
    }
    buf[m] = 0;
    if (s && !mil_program_name_intended_set(p, s, base)) s = NULL;
  }
  if (s && !pset_add_new(&n->set, s)) s = NULL;
  return s;
}

/* buf has room for len + 48 bytes and may be prefix itself. */
static const char *fresh_in(pass_names *n, mil_program *p, char *buf, const char *prefix, size_t len) {
  if (buf != prefix) memcpy(buf, prefix, len);
  size_t m = pass_name_counted(p, buf, len);
  return m ? pass_names_claim(n, p, buf, m) : NULL;
}

const char *pass_names_fresh(pass_names *n, mil_program *p, const char *prefix) {
  size_t len = strlen(prefix);
  char stack[256];
  char *buf = len + 48 <= sizeof stack ? stack : malloc(len + 48);
  if (!buf) return NULL;
  const char *s = fresh_in(n, p, buf, prefix, len);
  if (buf != stack) free(buf);
  return s;
}

mil_var *pass_const_named_before(mil_op *anchor, pass_names *names, const char *name, const mil_value *v) {
  mil_program *p = anchor->program;
  if (names && !pass_names_add(names, name)) return NULL;
  mil_op *c = mil_const_new(p, name, v);
  if (!c || c->n_outputs != 1) return NULL;
  mil_block_insert_before(anchor, c);
  return c->outputs[0];
}

mil_var *pass_const_before(mil_op *anchor, pass_names *names, const char *op_name, const char *input,
                           const mil_value *v) {
  /* the prefix "<op_name>_<input>", then "_<k>" */
  size_t lo = strlen(op_name), li = strlen(input), len = lo + 1 + li;
  char stack[256];
  char *buf = len + 48 <= sizeof stack ? stack : malloc(len + 48);
  if (!buf) return NULL;
  memcpy(buf, op_name, lo);
  buf[lo] = '_';
  memcpy(buf + lo + 1, input, li);
  const char *name = fresh_in(names, anchor->program, buf, buf, len);
  if (buf != stack) free(buf);
  if (!name) return NULL;
  mil_op *c = mil_const_new(anchor->program, name, v);
  if (!c || c->n_outputs != 1) return NULL;
  mil_block_insert_before(anchor, c);
  return c->outputs[0];
}

/* ---------- replacing and removing ---------- */

static bool is_function_output(const mil_var *v) {
  for (const mil_use *u = v->uses; u; u = u->next_use)
    if (u->block && !u->block->parent) return true;
  return false;
}

bool pass_replace_uses_after(mil_op *anchor, mil_var *old, mil_var *new_var) {
  if (old == new_var) return true;
  bool rename = is_function_output(old) && new_var->name != old->name;
  if (rename && new_var->func_input_of) return false;
  if (anchor) mil_var_replace_uses_after(old, new_var, anchor);
  else mil_var_replace_all_uses(old, new_var);
  /* rename only when the function output slot actually moved to new_var */
  if (rename && is_function_output(new_var) && !is_function_output(old)) new_var->name = old->name;
  return true;
}

/* Collects the constexpr_* outputs upstream of v into out (visited tracks
 * vars). false on out of memory. */
static bool upstream_constexpr(const mil_var *v, pset *visited, pset *out) {
  const mil_var **stack = NULL;
  size_t n = 0, cap = 0;
  bool ok = true;
#define PUSH(x)                                                           \
  do {                                                                    \
    if (n == cap) {                                                       \
      size_t nc = cap ? cap * 2 : 64;                                     \
      const mil_var **ns = realloc(stack, nc * sizeof *ns);               \
      if (!ns) {                                                          \
        ok = false;                                                       \
        break;                                                            \
      }                                                                   \
      stack = ns;                                                         \
      cap = nc;                                                           \
    }                                                                     \
    stack[n++] = (x);                                                     \
  } while (0)
  PUSH(v);
  while (ok && n) {
    const mil_var *x = stack[--n];
    if (pset_has(visited, x)) continue;
    if (!pset_add(visited, x)) {
      ok = false;
      break;
    }
    const mil_op *op = x->op;
    if (!op) continue;
    if (strncmp(op->type, "constexpr_", 10) == 0) {
      if (!pset_add(out, x)) ok = false;
      continue;
    }
    /* coremltools stops the propagation at shape ops (metadata only) */
    if (strcmp(op->type, "shape") == 0) continue;
    for (int32_t i = 0; i < op->n_inputs && ok; i++)
      for (int32_t a = 0; a < op->inputs[i].n_args && ok; a++)
        if (op->inputs[i].args[a].use.var) PUSH(op->inputs[i].args[a].use.var);
  }
#undef PUSH
  free(stack);
  return ok;
}

bool pass_can_replace_var(const mil_var *old, const mil_var *new_var) {
  pset vis_new = {0}, ce_new = {0}, vis_old = {0}, ce_old = {0};
  bool ok = upstream_constexpr(new_var, &vis_new, &ce_new) && upstream_constexpr(old, &vis_old, &ce_old);
  if (ok)
    for (size_t i = 0; i < ce_old.cap; i++)
      if (ce_old.keys[i] && !pset_has(&ce_new, ce_old.keys[i])) {
        ok = false;
        break;
      }
  pset_free(&vis_new);
  pset_free(&ce_new);
  pset_free(&vis_old);
  pset_free(&ce_old);
  return ok;
}

/* True when the use sits in one of the ops being removed (directly, or in
 * a block nested in one of them). */
static bool use_is_inside(const mil_use *u, const pset *ops) {
  const mil_op *op = u->op ? u->op : (u->block ? u->block->parent : NULL);
  for (int depth = 0; op && depth <= PASS_MAX_DEPTH; depth++) {
    if (pset_has(ops, op)) return true;
    op = op->block ? op->block->parent : NULL;
  }
  return false;
}

mil_status pass_remove_ops(mil_op *const *ops, int32_t n, mil_diag *d) {
  pset set = {0};
  for (int32_t i = 0; i < n; i++)
    if (!pset_add(&set, ops[i])) {
      pset_free(&set);
      return MIL_ERR_NOMEM;
    }
  for (int32_t i = 0; i < n; i++)
    for (int32_t k = 0; k < ops[i]->n_outputs; k++)
      for (const mil_use *u = ops[i]->outputs[k]->uses; u; u = u->next_use)
        if (!use_is_inside(u, &set)) {
          pset_free(&set);
          return mil_diag_error(d, MIL_ERR_INVALID, "cannot remove op '%s' (%s): its output %%%s is still %s",
                                ops[i]->name, ops[i]->type, ops[i]->outputs[k]->name,
                                u->op ? "used by another op" : "a block output");
        }
  /* Remove users before producers: reverse order first, repeat for the rest. */
  pset done = {0};
  size_t removed = 0, total = set.n;
  mil_status st = MIL_OK;
  while (removed < total && st == MIL_OK) {
    size_t round = 0;
    for (int32_t i = n - 1; i >= 0; i--) {
      mil_op *op = ops[i];
      if (pset_has(&done, op)) continue;
      /* fails, changing nothing, while a user outside op remains */
      if (mil_op_remove(op) != MIL_OK) continue;
      if (!pset_add(&done, op)) {
        st = MIL_ERR_NOMEM;
        break;
      }
      removed++;
      round++;
    }
    if (!round && st == MIL_OK) st = mil_diag_error(d, MIL_ERR_INVALID, "cannot remove ops: a use remains");
  }
  pset_free(&done);
  pset_free(&set);
  return st;
}

/* ---------- pointer sets and maps ---------- */

bool pass_ptrset_add(pass_ptrset *s, const void *p) { return pset_add(s, p); }
int pass_ptrset_insert(pass_ptrset *s, const void *p) { return pset_insert(s, p); }
bool pass_ptrset_reserve(pass_ptrset *s, size_t n) { return pset_reserve(s, n); }
bool pass_ptrset_has(const pass_ptrset *s, const void *p) { return pset_has(s, p); }

void pass_ptrset_free(pass_ptrset *s) {
  free(s->keys);
  memset(s, 0, sizeof *s);
}

static bool pmap_grow(pass_ptrmap *m) {
  size_t cap = m->cap ? m->cap * 2 : 64;
  const void **k = calloc(cap, sizeof *k);
  void **v = calloc(cap, sizeof *v);
  if (!k || !v) {
    free(k);
    free(v);
    return false;
  }
  for (size_t i = 0; i < m->cap; i++)
    if (m->keys[i]) {
      size_t j = ph(m->keys[i]) & (cap - 1);
      while (k[j]) j = (j + 1) & (cap - 1);
      k[j] = m->keys[i];
      v[j] = m->vals[i];
    }
  free(m->keys);
  free(m->vals);
  m->keys = k;
  m->vals = v;
  m->cap = cap;
  return true;
}

bool pass_ptrmap_put(pass_ptrmap *m, const void *key, void *val) {
  if (!key) return false;
  if ((m->n + 1) * 2 > m->cap && !pmap_grow(m)) return false;
  size_t j = ph(key) & (m->cap - 1);
  while (m->keys[j] && m->keys[j] != key) j = (j + 1) & (m->cap - 1);
  if (!m->keys[j]) {
    m->keys[j] = key;
    m->n++;
  }
  m->vals[j] = val;
  return true;
}

void *pass_ptrmap_get(const pass_ptrmap *m, const void *key) {
  if (!m->cap || !key) return NULL;
  size_t j = ph(key) & (m->cap - 1);
  while (m->keys[j]) {
    if (m->keys[j] == key) return m->vals[j];
    j = (j + 1) & (m->cap - 1);
  }
  return NULL;
}

void pass_ptrmap_free(pass_ptrmap *m) {
  free(m->keys);
  free(m->vals);
  memset(m, 0, sizeof *m);
}

/* ---------- nonreplaceable vars ---------- */

struct pass_nonrep {
  pset has; /* vars whose set is not empty */
};

static bool is_constexpr_op(const mil_op *op) { return op && strncmp(op->type, "constexpr_", 10) == 0; }
static bool is_shape_op(const mil_op *op) { return op && strcmp(op->type, "shape") == 0; }

bool pass_nonrep_note_op(pass_nonrep *nr, const mil_op *op) {
  if (is_shape_op(op)) return true;
  bool has = is_constexpr_op(op);
  for (int32_t i = 0; i < op->n_inputs && !has; i++)
    for (int32_t a = 0; a < op->inputs[i].n_args && !has; a++)
      has = pset_has(&nr->has, op->inputs[i].args[a].use.var);
  for (int32_t i = 0; has && i < op->n_outputs; i++)
    if (!pset_add(&nr->has, op->outputs[i])) return false;
  return true;
}

static bool nonrep_block(pass_nonrep *nr, mil_block *b, int depth) {
  if (depth > PASS_MAX_DEPTH) return false;
  for (mil_op *op = b->first; op; op = op->next) {
    for (int32_t i = 0; i < op->n_blocks; i++)
      if (!nonrep_block(nr, op->blocks[i], depth + 1)) return false;
    if (!pass_nonrep_note_op(nr, op)) return false;
  }
  return true;
}

pass_nonrep *pass_nonrep_new(mil_program *p) {
  pass_nonrep *nr = calloc(1, sizeof *nr);
  if (!nr) return NULL;
  for (int32_t i = 0; i < p->n_functions; i++) {
    mil_function *f = p->functions[i];
    for (int32_t s = 0; s < f->n_specs; s++)
      if (!nonrep_block(nr, f->specs[s].block, 0)) {
        pass_nonrep_free(nr);
        return NULL;
      }
  }
  return nr;
}

void pass_nonrep_free(pass_nonrep *nr) {
  if (!nr) return;
  pset_free(&nr->has);
  free(nr);
}

bool pass_nonrep_has(const pass_nonrep *nr, const mil_var *v) { return pset_has(&nr->has, v); }

bool pass_nonrep_can_fold(const pass_nonrep *nr, const mil_var *v) { return v->val && !pset_has(&nr->has, v); }

static bool op_reads(const mil_op *op, const mil_var *v) {
  for (int32_t i = 0; i < op->n_inputs; i++)
    for (int32_t a = 0; a < op->inputs[i].n_args; a++)
      if (op->inputs[i].args[a].use.var == v) return true;
  return false;
}

bool pass_nonrep_can_replace(const pass_nonrep *nr, const mil_var *old, const mil_var *new_var) {
  if (old == new_var || !pass_nonrep_has(nr, old)) return true;
  if (!pass_nonrep_has(nr, new_var)) return false;
  const mil_op *op = old->op, *nop = new_var->op;
  if (op && !is_constexpr_op(op) && !is_shape_op(op)) {
    /* old's set is the union of its producer's inputs' sets */
    bool covered = true;
    for (int32_t i = 0; i < op->n_inputs && covered; i++)
      for (int32_t a = 0; a < op->inputs[i].n_args && covered; a++) {
        const mil_var *x = op->inputs[i].args[a].use.var;
        if (!x || x == new_var || !pass_nonrep_has(nr, x)) continue;
        covered = nop && !is_constexpr_op(nop) && !is_shape_op(nop) && op_reads(nop, x);
      }
    if (covered) return true;
  }
  return pass_can_replace_var(old, new_var);
}

/* ---------- finishing new ops ---------- */

mil_status pass_finish_op(mil_op *op, mil_diag *d) {
  mil_status st = mil_op_add_defaults(op, d);
  if (st != MIL_OK) return st;
  mil_op_canonicalize_inputs(op);
  return mil_op_infer(op, d);
}
