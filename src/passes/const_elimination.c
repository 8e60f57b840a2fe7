/* common::const_elimination — replace op outputs whose value is known at
 * compile time by const ops.
 *
 *   main(%x: (2, 4, fp32)(Tensor)) {
 *     block0() {
 *       %a: (2, 4, fp32)*(Tensor) = const(val=..., name="a")
 *       %b: (2, 4, fp32)*(Tensor) = const(val=..., name="b")
 *       %s: (2, 4, fp32)*(Tensor) = add(x=%a, y=%b, name="s")
 *       %o: (2, 4, fp32)(Tensor) = add(x=%x, y=%s, name="o")
 *     } -> (%o)
 *   }
 *
 * becomes
 *
 *   main(%x: (2, 4, fp32)(Tensor)) {
 *     block0() {
 *       %a: (2, 4, fp32)*(Tensor) = const(val=..., name="a")
 *       %b: (2, 4, fp32)*(Tensor) = const(val=..., name="b")
 *       %s: (2, 4, fp32)*(Tensor) = const(val=<a + b>, name="s")
 *       %o: (2, 4, fp32)(Tensor) = add(x=%x, y=%s, name="o")
 *     } -> (%o)
 *   }
 *
 * For every non-const op (nested blocks first), each output that can be
 * folded (it has a value and depends on no constexpr_* output; outputs of
 * `shape` always can) becomes a const op inserted before the op, named like
 * the output; the op's output is renamed "<name>_ignored" (an op all of
 * whose outputs were replaced is removed instead, and its outputs go with
 * it unrenamed). The inputs the folded op read are left for
 * dead_code_elimination.
 *
 * Option skip_const_by_size: an output that is not a scalar and has more
 * elements than this is not folded (and the op's remaining outputs are not
 * looked at).
 *
 * Values: coremltools infers values when it builds an op; a parsed program
 * keeps only the '*' marks, so the values of marked vars are inferred first
 * (pass_infer_marked_values). One walk then lists the ops that can be
 * folded, and only those are visited again.
 *
 * Mirrors coremltools/converters/mil/mil/passes/defs/cleanup/
 * const_elimination.py and Var.can_be_folded_to_const (mil/var.py).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "passes/pass_internal.h"

/* Reading ahead: op records lie in list order in memory
 * (mil_program_compact_ops), so in the walk the record PASS_WALK_AHEAD ops on is
 * most likely PASS_WALK_AHEAD records further; and the folding goes through a list,
 * so what the ops some places on will read is known. Asking for it early
 * keeps the walks from waiting on memory at every op (a prefetch of an
 * address that holds nothing is harmless). */

static const mil_pass_option_def k_opts[] = {
    {"skip_const_by_size", MIL_POPT_DOUBLE, NULL, false, false, 0, 0,
     "leave ops whose folded value would have more elements than this unfolded (None: fold everything)"},
};

typedef struct celim {
  mil_program *p;
  const char *shape; /* interned "shape", or NULL */
  const char *konst; /* interned "const", once a fold needs it */
  bool tracking;     /* var->aux holds the constexpr dependence of every op output */
  mil_op **cands;    /* the ops the folding walk may change, in walk order */
  int32_t n_cands, cap_cands;
  bool has_limit;
  double limit;
  int64_t changes;
  mil_diag *d;
} celim;

/* The rank of v's type as coremltools' len(var.shape): 0 for scalars. */
static int32_t var_rank(const mil_var *v) {
  if (!v->type || v->type->kind != MIL_TYPE_TENSOR) return 0;
  return v->type->rank > 0 ? v->type->rank : 0;
}

static const char *ignored_name(mil_program *p, const char *name) {
  size_t n = strlen(name);
  char *buf = malloc(n + 9);
  if (!buf) return NULL;
  memcpy(buf, name, n);
  memcpy(buf + n, "_ignored", 9);
  const char *s = mil_program_intern(p, buf, (size_t)-1);
  free(buf);
  return s;
}

/* coremltools' Var.can_be_folded_to_const needs to know which vars depend
 * on a constexpr_* output (not looking through `shape` ops). Such a var
 * comes after a constexpr_* op in the walk (nested blocks before their op,
 * definitions before uses), so until the walk meets one nothing depends on
 * one. At the first constexpr_* op, the dependence of every op output of
 * the program is recorded in var->aux (K_DEP or NULL) and read from there
 * on; the consts made by folding get NULL. Folding replaces only vars that
 * depend on nothing by consts, so the dependence of every other var stays
 * what it was when the pass started. Only op outputs are read back (a
 * block or function input never depends on one). */
static const char k_dep_marker;
#define K_DEP ((void *)&k_dep_marker)

static bool depends_on_constexpr(const mil_var *v) { return v && v->op && v->aux == K_DEP; }

/* Marks the outputs of the op being folded that were folded (until they
 * are renamed). */
static const char k_folded_marker;
#define K_FOLDED ((void *)&k_folded_marker)

static bool is_constexpr_type(const char *t) {
  return t[0] == 'c' && t[1] == 'o' && t[2] == 'n' && t[3] == 's' && strncmp(t, "constexpr_", 10) == 0;
}

/* Records whether op's outputs depend on a constexpr_* output. */
static void note_op(const celim *c, mil_op *op) {
  bool dep = false;
  if (op->type != c->shape) {
    dep = is_constexpr_type(op->type);
    for (int32_t i = 0; i < op->n_inputs && !dep; i++)
      for (int32_t a = 0; a < op->inputs[i].n_args && !dep; a++)
        dep = depends_on_constexpr(op->inputs[i].args[a].use.var);
  }
  for (int32_t i = 0; i < op->n_outputs; i++) op->outputs[i]->aux = dep ? K_DEP : NULL;
}

static bool mark_block(celim *c, mil_block *b, int depth) {
  if (depth > PASS_MAX_DEPTH) return false;
  for (mil_op *op = b->first; op; op = op->next) {
    for (int32_t i = 0; i < op->n_blocks; i++)
      if (!mark_block(c, op->blocks[i], depth + 1)) return false;
    note_op(c, op);
  }
  return true;
}

/* Records the dependence of every op output of the program. */
static mil_status start_tracking(celim *c) {
  for (int32_t fi = 0; fi < c->p->n_functions; fi++) {
    mil_function *f = c->p->functions[fi];
    for (int32_t s = 0; s < f->n_specs; s++)
      if (!mark_block(c, f->specs[s].block, 0))
        return mil_diag_error(c->d, MIL_ERR_UNSUPPORTED, "const_elimination: blocks nested deeper than %d levels",
                              PASS_MAX_DEPTH);
  }
  c->tracking = true;
  return MIL_OK;
}

/* mil_const_new(p, v->name, v->val) for an op output v: v->name is
 * interned already, so the op and its output take the pointer as it is
 * (interning an interned string that is not among the recently interned
 * ones hashes and probes it again; "const" is). */
static mil_op *const_of(celim *c, const mil_var *v) {
  if (!c->konst && !(c->konst = mil_program_intern(c->p, "const", (size_t)-1))) return NULL;
  mil_op *k = mil_op_new(c->p, c->konst, NULL);
  mil_var *nv = k ? mil_op_add_output(k, c->konst, v->val->type) : NULL;
  if (!nv) return NULL;
  k->name = v->name;
  nv->name = v->name;
  mil_var_set_value(nv, v->val);
  return k;
}

/* Folds output v of op into a const before op. The output is renamed
 * "<name>_ignored" by the caller when op stays. */
static mil_status fold_output(celim *c, mil_op *op, mil_var *v) {
  mil_op *k = const_of(c, v);
  if (!k) return mil_diag_error(c->d, MIL_ERR_NOMEM, "const_elimination: out of memory");
  mil_block_insert_before(op, k);
  mil_var *nv = k->outputs[0];
  nv->aux = NULL;
  if (!pass_replace_uses_after(op, v, nv))
    return mil_diag_error(c->d, MIL_ERR_INVALID, "const_elimination: cannot replace output %%%s of op '%s' (%s)",
                          v->name, op->name, op->type);
  c->changes++;
  return MIL_OK;
}

static bool push_candidate(celim *c, mil_op *op) {
  if (c->n_cands == c->cap_cands) {
    int32_t cap = c->cap_cands ? c->cap_cands * 2 : 256;
    mil_op **n = realloc(c->cands, (size_t)cap * sizeof *n);
    if (!n) return false;
    c->cands = n;
    c->cap_cands = cap;
  }
  c->cands[c->n_cands++] = op;
  return true;
}

/* The first walk (nested blocks before their op) lists the non-const ops
 * the folding walk can change: those with an output that has a value, and
 * those without outputs (removed as "all outputs replaced"). The folding
 * walk visits the ops in this same order and does nothing at the others. */
static mil_status prepare_block(celim *c, mil_block *b, int depth) {
  if (depth > PASS_MAX_DEPTH)
    return mil_diag_error(c->d, MIL_ERR_UNSUPPORTED, "const_elimination: blocks nested deeper than %d levels",
                          PASS_MAX_DEPTH);
  for (mil_op *op = b->first; op; op = op->next) {
    PASS_WALK_PREFETCH(op);
    for (int32_t i = 0; i < op->n_blocks; i++) {
      mil_status st = prepare_block(c, op->blocks[i], depth + 1);
      if (st != MIL_OK) return st;
    }
    if (mil_op_is_const(op)) continue;
    mil_status st;
    if (!c->tracking && is_constexpr_type(op->type) && (st = start_tracking(c)) != MIL_OK) return st;
    bool cand = op->n_outputs == 0;
    for (int32_t i = 0; i < op->n_outputs && !cand; i++) cand = op->outputs[i]->val != NULL;
    if (cand && !push_candidate(c, op)) return mil_diag_error(c->d, MIL_ERR_NOMEM, "const_elimination: out of memory");
  }
  return MIL_OK;
}

/* Folds the outputs of op that can be, removing op when that is all of
 * them; the folded outputs of an op that stays are renamed
 * "<name>_ignored" (those of a removed op are left with the op). */
static mil_status eliminate_op(celim *c, mil_op *op) {
  bool all_replaced = true;
  int32_t n_folded = 0;
  for (int32_t i = 0; i < op->n_outputs; i++) {
    mil_var *v = op->outputs[i];
    /* (outputs of shape ops never depend on constexpr ops here) */
    if (v->val && !(c->tracking && v->aux == K_DEP)) {
      if (c->has_limit && var_rank(v) > 0 && (double)v->val->numel > c->limit) {
        all_replaced = false;
        break;
      }
      mil_status st = fold_output(c, op, v);
      if (st != MIL_OK) return st;
      v->aux = K_FOLDED;
      n_folded++;
    } else {
      all_replaced = false;
    }
  }
  if (all_replaced) {
    if (mil_op_remove(op) != MIL_OK)
      return mil_diag_error(c->d, MIL_ERR_INVALID, "const_elimination: op '%s' (%s) is still used after folding",
                            op->name, op->type);
    return MIL_OK;
  }
  for (int32_t i = 0; i < op->n_outputs && n_folded > 0; i++) {
    mil_var *v = op->outputs[i];
    if (v->aux != K_FOLDED) continue;
    n_folded--;
    v->aux = NULL; /* it depends on nothing */
    const char *ign = ignored_name(op->program, v->name);
    if (!ign) return mil_diag_error(c->d, MIL_ERR_NOMEM, "const_elimination: out of memory");
    v->name = ign;
  }
  return MIL_OK;
}

static mil_status run(mil_program *p, const mil_pass_options *o, mil_pass_stats *stats, mil_diag *d) {
  mil_status st = pass_infer_marked_values(p, d);
  if (st != MIL_OK) return st;
  celim c;
  memset(&c, 0, sizeof c);
  c.d = d;
  c.has_limit = mil_pass_opt_is_set(o, "skip_const_by_size");
  c.limit = c.has_limit ? mil_pass_opt_double(o, "skip_const_by_size") : 0;
  c.p = p;
  c.shape = mil_program_find_string(p, "shape", (size_t)-1);
  for (int32_t fi = 0; fi < p->n_functions && st == MIL_OK; fi++) {
    mil_function *f = p->functions[fi];
    for (int32_t s = 0; s < f->n_specs && st == MIL_OK; s++) st = prepare_block(&c, f->specs[s].block, 0);
  }
  /* the folding walk (new consts go before the op being visited, which
   * is the only op it may remove) */
  for (int32_t i = 0; i < c.n_cands && st == MIL_OK; i++) {
    if (i + PASS_WALK_AHEAD < c.n_cands) PASS_PREFETCH(c.cands[i + PASS_WALK_AHEAD]);
    if (i + PASS_WALK_AHEAD / 2 < c.n_cands) {
      const mil_op *o = c.cands[i + PASS_WALK_AHEAD / 2];
      PASS_PREFETCH(o->outputs);
      PASS_PREFETCH(o->inputs);
    }
    if (i + PASS_WALK_AHEAD / 4 < c.n_cands) {
      const mil_op *o = c.cands[i + PASS_WALK_AHEAD / 4];
      if (o->n_outputs > 0) PASS_PREFETCH(o->outputs[0]);
      if (o->n_inputs > 0) PASS_PREFETCH(o->inputs[0].args);
    }
    st = eliminate_op(&c, c.cands[i]);
  }
  free(c.cands);
  if (stats) stats->changes += c.changes;
  return st;
}

const mil_pass_def pass_def_const_elimination = {"common::const_elimination",
                                                 "replace ops whose outputs are known at compile time by consts",
                                                 k_opts, 1, run, NULL};
