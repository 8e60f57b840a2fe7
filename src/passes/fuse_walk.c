/* The sweeps of the fusion passes (pass_fuse_run, pass_walk_run) and
 * coremltools' generic pattern matcher (pass_pat_detect). See
 * fuse_util_internal.h.
 *
 * A sweep is bound by loading every op of a block once, so it touches as
 * little of each op as it can: op->type compared with the program's
 * interned strings of the offered types, op->next, and op->n_blocks only
 * when some op of the program lies in a nested block; the records ahead
 * are requested while it goes (PASS_WALK_PREFETCH). A sweep that follows
 * another over the same block (the next round of a fixed point, the next
 * pattern of a pattern pass) takes the earlier snapshot instead of
 * walking again when the op counts prove it still complete (walk_reuse). */
#include <stdlib.h>
#include <string.h>

#include "passes/fuse_util_internal.h"

/* ---------- driver ---------- */

#define WALK_MAX_TYPES 16

typedef struct walk {
  mil_program *p;
  mil_diag *d;
  const pass_walk_spec *s;
  pass_walk_fn fn;
  void *ud;
  int64_t changes;
  const char *want[WALK_MAX_TYPES]; /* s->types with ops in p, interned */
  int n_want;
  bool every; /* more offered types than want[] holds: every op is offered */
  mil_op **stack; /* the snapshots of the blocks being swept, innermost last */
  size_t top, cap;
  /* the last snapshot of a function body, left at stack[0..n_kept) for
   * the next run over the same ops (see walk_reuse) */
  mil_block *kept_block;
  size_t n_kept;
} walk;

/* Resolves the offered types to the program's interned strings; false
 * when no op of any of them exists (nothing to offer). */
static bool walk_resolve(walk *w) {
  const char *const *t = w->s->types;
  /* a required type without ops: nothing can match */
  for (const char *const *r = w->s->required; r && *r; r++) {
    const char *in = mil_program_find_string(w->p, *r, (size_t)-1);
    if (!in || mil_program_count_op_type(w->p, in) == 0) return false;
  }
  if (!t) return true;
  bool any = false;
  w->n_want = 0;
  w->every = false;
  for (int i = 0; t[i]; i++) {
    const char *in = mil_program_find_string(w->p, t[i], (size_t)-1);
    if (!in || mil_program_count_op_type(w->p, in) == 0) continue;
    any = true;
    if (w->n_want < WALK_MAX_TYPES) w->want[w->n_want++] = in;
    else w->every = true; /* fn still returns 0 at the others */
  }
  return any;
}

static inline bool walk_wanted(const walk *w, const char *type) {
  if (!w->s->types || w->every) return true;
  for (int i = 0; i < w->n_want; i++)
    if (w->want[i] == type) return true;
  return false;
}

/* The same by name, for the few ops owning nested blocks (whose sweeps may
 * have changed which types exist since the snapshot). */
static bool walk_listed(const walk *w, const char *type) {
  const char *const *t = w->s->types;
  if (!t) return true;
  for (int i = 0; t[i]; i++)
    if (strcmp(t[i], type) == 0) return true;
  return false;
}

static bool walk_grow(walk *w) {
  size_t nc = w->cap ? w->cap * 2 : 256;
  mil_op **ns = realloc(w->stack, nc * sizeof *ns);
  if (!ns) return false;
  w->stack = ns;
  w->cap = nc;
  return true;
}

static int walk_oom(walk *w) {
  mil_diag_error(w->d, MIL_ERR_NOMEM, "%s: out of memory", w->s->pass);
  return -(int)MIL_ERR_NOMEM;
}

static int walk_sweep(walk *w, mil_block *b, int depth, size_t *kept);

/* Whether some op of p lies in a nested block (the ops of the function
 * bodies and specializations fall short of all ops). */
static bool walk_nested_ops(const mil_program *p) {
  int64_t top = 0;
  for (int32_t i = 0; i < p->n_functions; i++)
    for (int32_t k = 0; k < p->functions[i]->n_specs; k++) top += p->functions[i]->specs[k].block->n_ops;
  return top != mil_program_count_ops(p);
}

/* The op types of s->types that ops of p have now (interned, each once)
 * into out (room for WALK_MAX_TYPES) and the number of ops of those types
 * in all of p. -1 when that is not known: every op offered, too many
 * types, or counts by type unavailable. */
static int64_t walk_offered_now(const walk *w, const char **out, int *n_out) {
  const char *const *t = w->s->types;
  *n_out = 0;
  if (!t || w->every) return -1;
  int64_t total = 0;
  for (int i = 0; t[i]; i++) {
    const char *in = mil_program_find_string(w->p, t[i], (size_t)-1);
    if (!in) continue;
    bool dup = false;
    for (int k = 0; k < *n_out && !dup; k++) dup = out[k] == in;
    if (dup) continue;
    int64_t c = mil_program_count_op_type(w->p, in);
    if (c < 0 || *n_out == WALK_MAX_TYPES) return -1;
    if (c == 0) continue;
    out[(*n_out)++] = in;
    total += c;
  }
  return total;
}

/* The snapshot of a sweep from the one at [base, end) of an earlier
 * sweep of b instead of another walk over the block: the ops of it still
 * in b with an offered type. That is exactly what a walk would take when,
 * by the op counts, the program holds no other op of those types (none
 * was made since) and the ops kept are still in block order; whatever
 * happened meanwhile, this is checked here. Compacts them to [base, ...)
 * and returns their number, or 0 when a walk is needed. */
static size_t walk_reuse(walk *w, mil_block *b, size_t base, size_t end) {
  const char *types[WALK_MAX_TYPES];
  int n_types;
  int64_t total = walk_offered_now(w, types, &n_types);
  if (total <= 0) return 0;
  size_t n = base;
  for (size_t i = base; i < end; i++) {
    mil_op *op = w->stack[i];
    if (op->block != b) continue;
    bool offered = false;
    for (int k = 0; k < n_types && !offered; k++) offered = op->type == types[k];
    if (!offered) continue;
    if (n > base && !mil_op_is_before(w->stack[n - 1], op)) return 0;
    w->stack[n++] = op;
  }
  return (int64_t)(n - base) == total ? n - base : 0;
}

/* Sweeps b once, or until a sweep rewrites nothing. A function body's
 * last snapshot stays on the stack for the next run (walk_reuse decides
 * whether it can serve). Returns 0 or -(status). */
static int walk_block(walk *w, mil_block *b, int depth, bool fixpoint) {
  size_t base = w->top, kept = 0;
  if (base == 0 && w->kept_block == b) kept = w->n_kept;
  w->kept_block = NULL;
  w->n_kept = 0;
  w->top = base + kept;
  int r = 0;
  for (int round = 0; round < 100000; round++) {
    r = walk_sweep(w, b, depth, &kept);
    if (r <= 0 || !fixpoint) break;
  }
  if (r >= 0 && base == 0 && kept > 0) {
    w->kept_block = b;
    w->n_kept = kept;
  }
  w->top = base;
  return r < 0 ? r : 0;
}

/* One sweep over a snapshot of b's ops: the ops of an offered type and
 * those owning nested blocks (the others would be skipped anyway). The
 * *kept ops on top of the stack, an earlier sweep's snapshot of b, serve
 * when walk_reuse accepts them; otherwise a walk over b takes the
 * snapshot. It is left on the stack (*kept ops) for the next sweep when it
 * holds offered ops only. Returns 1 when fn rewrote something at an op of
 * b, 0 when not, -(status). */
static int walk_sweep(walk *w, mil_block *b, int depth, size_t *kept) {
  size_t base = w->top - *kept;
  size_t reuse = *kept;
  *kept = 0;
  w->top = base;
  if (depth > PASS_MAX_DEPTH) {
    mil_diag_error(w->d, MIL_ERR_UNSUPPORTED, "%s: blocks nested deeper than %d levels", w->s->pass,
                   PASS_MAX_DEPTH);
    return -(int)MIL_ERR_UNSUPPORTED;
  }
  bool offer = walk_resolve(w);
  /* nested blocks only matter when some hold ops: when the function
   * bodies hold every op of the program, the others are empty and a
   * sweep of one does nothing, so the walk need not look at n_blocks
   * (which lies in another cache line than type and next) */
  bool descend = w->s->nested != PASS_WALK_NESTED_SKIP && walk_nested_ops(w->p);
  if (!offer && !descend) return 0;
  /* the walk is bound by loading each op: up to four offered types are
   * compared in registers (an unused slot matches no type) */
  bool all = offer && (!w->s->types || w->every), many = offer && w->n_want > 4;
  const char *t0 = NULL, *t1 = NULL, *t2 = NULL, *t3 = NULL;
  if (offer && w->n_want > 0) t0 = w->want[0];
  if (offer && w->n_want > 1) t1 = w->want[1];
  if (offer && w->n_want > 2) t2 = w->want[2];
  if (offer && w->n_want > 3) t3 = w->want[3];
  if (reuse > 0 && !descend && !all) reuse = walk_reuse(w, b, base, base + reuse);
  else reuse = 0;
  if (reuse > 0) {
    w->top = base + reuse;
  } else {
    for (mil_op *op = b->first; op; op = op->next) {
      PASS_WALK_PREFETCH(op);
      const char *t = op->type;
      bool take = t == t0 || t == t1 || t == t2 || t == t3 || all || (many && walk_wanted(w, t));
      if (!take && !(descend && op->n_blocks > 0)) continue;
      if (w->top == w->cap && !walk_grow(w)) {
        w->top = base;
        return walk_oom(w);
      }
      /* what fn reads first of a candidate: its output array, and its
       * record's second line (inputs) */
      PASS_PREFETCH(op->outputs);
      PASS_PREFETCH((const char *)op + 64);
      w->stack[w->top++] = op;
    }
  }
  size_t end = w->top;
  int changed = 0, r = 0;
  for (size_t i = base; i < end && r >= 0; i++) {
    /* what fn reads of a candidate is a chain of dependent loads scattered
     * over the program: the record, the output and input arrays, the
     * output var and the argument records, then further. The walk above
     * requested the first links; while fn runs here, the next ones are
     * requested for the candidates after this one: the output var and the
     * input array of the 8th, then (fetched by the time it is reached) the
     * first two inputs' argument records and the output's use list of the
     * 4th. Only ops still in b are read (a removed op may have let go of
     * its arrays). Written out here: as a function, the compiler would
     * find it without effect and drop the call. */
    if (i + 8 < end && w->stack[i + 8]->block == b) {
      const mil_op *o = w->stack[i + 8];
      if (o->n_outputs > 0) PASS_PREFETCH(o->outputs[0]);
      PASS_PREFETCH(o->inputs);
    }
    if (i + 4 < end && w->stack[i + 4]->block == b) {
      const mil_op *o = w->stack[i + 4];
      for (int32_t k = 0; k < o->n_inputs && k < 2; k++) PASS_PREFETCH(o->inputs[k].args);
      if (o->n_outputs > 0) PASS_PREFETCH(o->outputs[0]->uses);
    }
    mil_op *op = w->stack[i];
    if (op->block != b) continue; /* removed by an earlier rewrite */
    if (descend)
      for (int32_t k = 0; k < op->n_blocks && r >= 0; k++)
        r = walk_block(w, op->blocks[k], depth + 1, w->s->nested == PASS_WALK_NESTED_FIXPOINT);
    if (r < 0 || op->block != b || (op->n_blocks > 0 && !w->s->visit_block_ops)) continue;
    if (op->n_blocks > 0 && !walk_listed(w, op->type)) continue;
    r = w->fn(w->ud, op);
    if (r > 0) {
      w->changes += r;
      changed = 1;
    }
  }
  /* a snapshot of offered ops only (no nested blocks taken with them) */
  if (r >= 0 && !descend && !all) *kept = end - base;
  w->top = base + *kept;
  return r < 0 ? r : changed;
}

/* The sweeps of every function body and specialization of w->p. */
static int walk_program(walk *w) {
  w->changes = 0;
  if (!walk_resolve(w)) return 0; /* no op of an offered (or a required) type anywhere */
  int r = 0;
  for (int32_t i = 0; i < w->p->n_functions && r >= 0; i++) {
    mil_function *f = w->p->functions[i];
    for (int32_t k = 0; k < f->n_specs && r >= 0; k++) r = walk_block(w, f->specs[k].block, 0, w->s->repeat);
  }
  return r;
}

mil_status pass_walk_run(mil_program *p, mil_diag *d, const pass_walk_spec *s, pass_walk_fn fn, void *ud,
                         int64_t *changes) {
  walk w = {.p = p, .d = d, .s = s, .fn = fn, .ud = ud};
  int r = walk_program(&w);
  free(w.stack);
  if (changes) *changes += w.changes;
  return r < 0 ? (mil_status)(-r) : MIL_OK;
}

typedef struct fuse_tramp {
  pass_fuse_ctx *c;
  pass_fuse_fn fn;
} fuse_tramp;

static int fuse_call(void *ud, mil_op *op) {
  fuse_tramp *t = ud;
  return t->fn(t->c, op);
}

mil_status pass_fuse_run_types(pass_fuse_ctx *c, pass_fuse_fn fn, bool repeat, bool visit_block_ops,
                               const char *const *types, const char *const *required, mil_pass_stats *st) {
  pass_walk_spec s = {c->pass, types, repeat, repeat ? PASS_WALK_NESTED_FIXPOINT : PASS_WALK_NESTED_ONCE,
                      visit_block_ops, required};
  fuse_tramp t = {c, fn};
  int64_t n = 0;
  mil_status r = pass_walk_run(c->p, c->d, &s, fuse_call, &t, &n);
  if (st) st->changes += n;
  return r;
}

mil_status pass_fuse_run(pass_fuse_ctx *c, pass_fuse_fn fn, bool repeat, bool visit_block_ops, mil_pass_stats *st) {
  return pass_fuse_run_types(c, fn, repeat, visit_block_ops, NULL, NULL, st);
}

/* ---------- generic pattern matcher ---------- */

bool pass_pat_prepare(pass_pat_prep *pp, const pass_pattern *pat, mil_program *p) {
  memset(pp, 0, sizeof *pp);
  pp->pat = pat;
  /* the ops reachable from the root (a pattern table may hold others) */
  bool used[PASS_PAT_MAX_OPS] = {false};
  int todo[PASS_PAT_MAX_OPS * PASS_PAT_MAX_CHILDREN + PASS_PAT_MAX_CHILDREN], n_todo = 0;
  for (int i = 0; i < pat->n_root; i++) todo[n_todo++] = pat->root[i];
  while (n_todo > 0) {
    int k = todo[--n_todo];
    if (k < 0 || k >= pat->n_ops || k >= PASS_PAT_MAX_OPS || used[k]) continue;
    used[k] = true;
    for (int i = 0; i < pat->ops[k].n_children; i++) todo[n_todo++] = pat->ops[k].children[i];
  }
  bool possible = true;
  int n = 0;
  for (int i = 0; i < pat->n_ops && i < PASS_PAT_MAX_OPS; i++) {
    const char *t = mil_program_find_string(p, pat->ops[i].type, (size_t)-1);
    pp->type[i] = t;
    if (!used[i]) continue;
    if (!t || mil_program_count_op_type(p, t) == 0) possible = false;
    bool dup = false;
    for (int k = 0; k < n && !dup; k++) dup = strcmp(pp->all_types[k], pat->ops[i].type) == 0;
    if (!dup) pp->all_types[n++] = pat->ops[i].type;
  }
  pp->all_types[n] = NULL;
  n = 0;
  for (int i = 0; i < pat->n_root; i++) {
    const char *t = pat->ops[pat->root[i]].type;
    bool dup = false;
    for (int k = 0; k < n && !dup; k++) dup = strcmp(pp->root_types[k], t) == 0;
    if (!dup) pp->root_types[n++] = t;
  }
  pp->root_types[n] = NULL;
  return possible;
}

mil_status pass_pat_run(mil_program *p, mil_diag *d, const char *pass, const pass_pattern *const *patterns, int n,
                        pass_fuse_fn fn, mil_pass_stats *st) {
  mil_status s = pass_infer_marked_values(p, d);
  if (s != MIL_OK) return s;
  pass_fuse_ctx c = {.p = p, .d = d, .pass = pass, .lazy_names = true};
  pass_pat_prep pp;
  c.ud = &pp;
  /* one walk state for all patterns: the last snapshot of one pattern's
   * sweeps may serve the next pattern's first sweep */
  fuse_tramp t = {&c, fn};
  walk w = {.p = p, .d = d, .fn = fuse_call, .ud = &t};
  int r = 0;
  for (int k = 0; k < n && r >= 0; k++) {
    if (!pass_pat_prepare(&pp, patterns[k], p)) continue;
    pass_walk_spec ws = {pass, pp.root_types, true, PASS_WALK_NESTED_FIXPOINT, true, pp.all_types};
    w.s = &ws;
    r = walk_program(&w);
    w.s = NULL;
    if (st) st->changes += w.changes;
  }
  free(w.stack);
  pass_fuse_ctx_free(&c);
  return r < 0 ? (mil_status)(-r) : MIL_OK;
}

/* The ops binding v, one entry per binding, oldest binding first (use
 * lists are newest first). Returns the count, or max + 1 as soon as it
 * exceeds max. */
static int child_bindings(const mil_var *v, mil_op **out, int max) {
  int n = 0;
  for (const mil_use *u = v->uses; u; u = u->next_use)
    if (u->op) {
      if (n == max) return max + 1;
      out[n++] = u->op;
    }
  for (int i = 0, j = n - 1; i < j; i++, j--) {
    mil_op *t = out[i];
    out[i] = out[j];
    out[j] = t;
  }
  return n;
}

static void pat_record(pass_pat_match *m, int pat_index, mil_op *op) {
  m->op[pat_index] = op;
  for (int i = 0; i < m->n_set; i++)
    if (m->set[i] == op) return;
  if (m->n_set < PASS_PAT_MAX_SET) m->set[m->n_set++] = op;
  else m->overflow = true;
}

/* Next permutation of a[0..n-1] in lexicographic order of positions;
 * false after the last. */
static bool next_perm(int *a, int n) {
  int i = n - 2;
  while (i >= 0 && a[i] >= a[i + 1]) i--;
  if (i < 0) return false;
  int j = n - 1;
  while (a[j] <= a[i]) j--;
  int t = a[i];
  a[i] = a[j];
  a[j] = t;
  for (int l = i + 1, r = n - 1; l < r; l++, r--) {
    t = a[l];
    a[l] = a[r];
    a[r] = t;
  }
  return true;
}

/* _pattern_detected: pat_index < 0 checks the root var's children. Op
 * types compare as interned pointers (pp->type). */
static bool pat_detected(const pass_pat_prep *pp, pass_pat_match *m, mil_op *prog_op, int pat_index, mil_var *root,
                         int depth) {
  const pass_pattern *pat = pp->pat;
  if (depth > PASS_PAT_MAX_OPS + 2) return false;
  const int *pchildren;
  int np;
  mil_var *v;
  if (pat_index >= 0) {
    const pass_pat_op *po = &pat->ops[pat_index];
    if (prog_op->type != pp->type[pat_index] || prog_op->n_outputs != 1 || prog_op->block != m->block) return false;
    pchildren = po->children;
    np = po->n_children;
    v = prog_op->outputs[0];
    if (np == 0) {
      if (m->final && m->final != prog_op) return false;
      m->final = prog_op;
      pat_record(m, pat_index, prog_op);
      return true;
    }
  } else {
    pchildren = pat->root;
    np = pat->n_root;
    v = root;
  }
  mil_op *kids[PASS_PAT_MAX_CHILDREN];
  if (v->n_uses < np || child_bindings(v, kids, PASS_PAT_MAX_CHILDREN) != np) return false;
  /* no permutation can match unless the kids' types are the pattern
   * children's types, counted with multiplicity */
  bool taken[PASS_PAT_MAX_CHILDREN] = {false};
  for (int i = 0; i < np; i++) {
    const char *t = pp->type[pchildren[i]];
    int k = 0;
    while (k < np && (taken[k] || kids[k]->type != t)) k++;
    if (k == np) return false;
    taken[k] = true;
  }
  /* itertools.permutations over the pattern children, in order */
  int perm[PASS_PAT_MAX_CHILDREN];
  for (int i = 0; i < np; i++) perm[i] = i;
  bool same = false;
  do {
    bool types = true;
    for (int i = 0; i < np && types; i++) types = pp->type[pchildren[perm[i]]] == kids[i]->type;
    if (!types) continue;
    bool ok = true;
    for (int i = 0; i < np && ok; i++) ok = pat_detected(pp, m, kids[i], pchildren[perm[i]], root, depth + 1);
    if (ok) {
      same = true;
      break;
    }
  } while (next_perm(perm, np));
  if (!same) return false;
  if (pat_index >= 0) pat_record(m, pat_index, prog_op);
  return true;
}

bool pass_pat_detect(const pass_pattern *pat, mil_op *op, pass_pat_match *m) {
  pass_pat_prep pp;
  return pass_pat_prepare(&pp, pat, op->program) && pass_pat_detect_prep(&pp, op, m);
}

bool pass_pat_detect_prep(const pass_pat_prep *pp, mil_op *op, pass_pat_match *m) {
  int n_root = pp->pat->n_root;
  for (int32_t i = 0; i < op->n_inputs; i++)
    for (int32_t a = 0; a < op->inputs[i].n_args; a++) {
      mil_var *root = op->inputs[i].args[a].use.var;
      /* the root's consumers must be exactly the pattern's first ops */
      if (!root || root->n_uses < n_root) continue;
      m->root = NULL;
      m->block = op->block;
      memset(m->op, 0, sizeof m->op);
      m->final = NULL;
      m->n_set = 0;
      m->overflow = false;
      if (!pat_detected(pp, m, NULL, -1, root, 0)) continue;
      if (m->overflow || !m->final) return false;
      m->root = root;
      for (int k = 0; k < m->n_set; k++)
        if (m->set[k] != m->final && pass_fuse_is_output_of(m->set[k]->outputs[0], m->block)) return false;
      return true;
    }
  return false;
}

/* ---------- passes built on the builder ---------- */

typedef struct bld_walk {
  pass_bld c; /* first: the walk's ud is the pass_bld too */
  pass_bld_fn fn;
} bld_walk;

static int bld_walk_at(void *ud, mil_op *op) {
  bld_walk *w = ud;
  return w->fn(&w->c, op);
}

mil_status pass_bld_walk(mil_program *p, mil_diag *d, const pass_walk_spec *spec, pass_bld_fn fn,
                         mil_pass_stats *stats) {
  bld_walk w = {{.p = p, .d = d, .pass = spec->pass}, fn};
  mil_status st = pass_walk_run(p, d, spec, bld_walk_at, &w, &w.c.changes);
  pass_bld_free(&w.c);
  if (stats) stats->changes += w.c.changes;
  return st;
}
