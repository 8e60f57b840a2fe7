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
 * the output; the op's output is renamed "<name>_ignored". An op all of
 * whose outputs were replaced is removed. The inputs the folded op read are
 * left for dead_code_elimination.
 *
 * Option skip_const_by_size: an output that is not a scalar and has more
 * elements than this is not folded (and the op's remaining outputs are not
 * looked at).
 *
 * Values: coremltools infers values when it builds an op; a parsed program
 * keeps only the '*' marks, so the values of marked vars are inferred first
 * (pass_infer_marked_values).
 *
 * Mirrors coremltools/converters/mil/mil/passes/defs/cleanup/
 * const_elimination.py and Var.can_be_folded_to_const (mil/var.py).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "passes/pass_internal.h"

static const mil_pass_option_def k_opts[] = {
    {"skip_const_by_size", MIL_POPT_DOUBLE, NULL, false, false, 0, 0,
     "leave ops whose folded value would have more elements than this unfolded (None: fold everything)"},
};

typedef struct celim {
  pass_nonrep *nr;
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

/* Folds output v of op into a const before op. */
static mil_status fold_output(celim *c, mil_op *op, mil_var *v) {
  mil_op *k = mil_const_new(op->program, v->name, v->val);
  if (!k || k->n_outputs != 1) return mil_diag_error(c->d, MIL_ERR_NOMEM, "const_elimination: out of memory");
  mil_block_insert_before(op, k);
  mil_var *nv = k->outputs[0];
  if (!pass_replace_uses_after(op, v, nv))
    return mil_diag_error(c->d, MIL_ERR_INVALID, "const_elimination: cannot replace output %%%s of op '%s' (%s)",
                          v->name, op->name, op->type);
  const char *ign = ignored_name(op->program, v->name);
  if (!ign) return mil_diag_error(c->d, MIL_ERR_NOMEM, "const_elimination: out of memory");
  v->name = ign;
  c->changes++;
  return MIL_OK;
}

static mil_status eliminate_block(celim *c, mil_block *b, int depth) {
  if (depth > PASS_MAX_DEPTH)
    return mil_diag_error(c->d, MIL_ERR_UNSUPPORTED, "const_elimination: blocks nested deeper than %d levels",
                          PASS_MAX_DEPTH);
  /* new consts are inserted before the op being visited, so walking on
   * through op->next visits exactly the ops that were there at the start */
  mil_op *next;
  for (mil_op *op = b->first; op; op = next) {
    next = op->next;
    if (mil_op_is_const(op)) continue;
    for (int32_t i = 0; i < op->n_blocks; i++) {
      mil_status st = eliminate_block(c, op->blocks[i], depth + 1);
      if (st != MIL_OK) return st;
    }
    bool all_replaced = true;
    for (int32_t i = 0; i < op->n_outputs; i++) {
      mil_var *v = op->outputs[i];
      /* (outputs of shape ops never depend on constexpr ops here) */
      if (pass_nonrep_can_fold(c->nr, v)) {
        if (c->has_limit && var_rank(v) > 0 && (double)v->val->numel > c->limit) {
          all_replaced = false;
          break;
        }
        mil_status st = fold_output(c, op, v);
        if (st != MIL_OK) return st;
      } else {
        all_replaced = false;
      }
    }
    if (all_replaced && mil_op_remove(op) != MIL_OK)
      return mil_diag_error(c->d, MIL_ERR_INVALID, "const_elimination: op '%s' (%s) is still used after folding",
                            op->name, op->type);
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
  c.nr = pass_nonrep_new(p);
  if (!c.nr) return mil_diag_error(d, MIL_ERR_NOMEM, "const_elimination: out of memory");
  for (int32_t fi = 0; fi < p->n_functions && st == MIL_OK; fi++) {
    mil_function *f = p->functions[fi];
    for (int32_t s = 0; s < f->n_specs && st == MIL_OK; s++) st = eliminate_block(&c, f->specs[s].block, 0);
  }
  pass_nonrep_free(c.nr);
  if (stats) stats->changes += c.changes;
  return st;
}

const mil_pass_def pass_def_const_elimination = {"common::const_elimination",
                                                 "replace ops whose outputs are known at compile time by consts",
                                                 k_opts, 1, run, NULL};
