/* common::dead_code_elimination — remove ops whose results reach no block
 * output.
 *
 *   main(%x: (2, 4, fp32)(Tensor)) {
 *     block0() {
 *       %w: (4, 2, fp32)*(Tensor) = const(val=..., name="w")
 *       %p: (2,int32)*(Tensor) = const(val=[1, 0], name="p")
 *       %t: (2, 4, fp32)*(Tensor) = transpose(x=%w, perm=%p, name="t")
 *       %r: (2, 4, fp32)(Tensor) = relu(x=%x, name="r")
 *       %s: (2, 4, fp32)(Tensor) = sigmoid(x=%x, name="s")
 *     } -> (%s)
 *   }
 *
 * becomes
 *
 *   main(%x: (2, 4, fp32)(Tensor)) {
 *     block0() {
 *       %s: (2, 4, fp32)(Tensor) = sigmoid(x=%x, name="s")
 *     } -> (%s)
 *   }
 *
 * Each block is walked backwards from its outputs (and from the outputs of
 * coreml_update_state ops, which write state and are kept for that): an op
 * none of whose outputs is used is removed, otherwise its inputs and the
 * vars its nested blocks read become used. Nested blocks of live ops are
 * cleaned the same way while walking. An op without outputs is removed.
 *
 * Mirrors coremltools/converters/mil/mil/passes/defs/cleanup/
 * dead_code_elimination.py. Linear in program size.
 */
#include <stdlib.h>
#include <string.h>

#include "passes/pass_internal.h"

typedef struct dce {
  pass_ptrset used; /* vars known to be used (one set per function suffices:
                     * a block's vars are only read inside that block) */
  mil_op **dead;    /* ops to remove, consumers before producers */
  int32_t n_dead, cap_dead;
  bool oom;
} dce;

static void mark(dce *c, const mil_var *v) {
  if (v && !pass_ptrset_add(&c->used, v)) c->oom = true;
}

static void push_dead(dce *c, mil_op *op) {
  if (c->n_dead == c->cap_dead) {
    int32_t cap = c->cap_dead ? c->cap_dead * 2 : 64;
    mil_op **n = realloc(c->dead, (size_t)cap * sizeof *n);
    if (!n) {
      c->oom = true;
      return;
    }
    c->dead = n;
    c->cap_dead = cap;
  }
  c->dead[c->n_dead++] = op;
}

static bool is_live(const dce *c, const mil_op *op) {
  for (int32_t i = 0; i < op->n_outputs; i++)
    if (pass_ptrset_has(&c->used, op->outputs[i])) return true;
  return false;
}

/* Marks what block b uses and records its dead ops. */
static mil_status sweep(dce *c, mil_block *b, int depth, mil_diag *d) {
  if (depth > PASS_MAX_DEPTH)
    return mil_diag_error(d, MIL_ERR_UNSUPPORTED, "dead_code_elimination: blocks nested deeper than %d levels",
                          PASS_MAX_DEPTH);
  for (int32_t i = 0; i < b->n_outputs; i++) mark(c, b->outputs[i].var);
  for (mil_op *op = b->first; op; op = op->next)
    if (strcmp(op->type, "coreml_update_state") == 0)
      for (int32_t i = 0; i < op->n_outputs; i++) mark(c, op->outputs[i]);
  for (mil_op *op = b->last; op && !c->oom; op = op->prev) {
    if (!is_live(c, op)) {
      push_dead(c, op);
      continue;
    }
    for (int32_t i = 0; i < op->n_inputs; i++)
      for (int32_t a = 0; a < op->inputs[i].n_args; a++) mark(c, op->inputs[i].args[a].use.var);
    for (int32_t i = 0; i < op->n_blocks; i++) {
      mil_status st = sweep(c, op->blocks[i], depth + 1, d);
      if (st != MIL_OK) return st;
    }
  }
  return c->oom ? mil_diag_error(d, MIL_ERR_NOMEM, "dead_code_elimination: out of memory") : MIL_OK;
}

static mil_status run(mil_program *p, const mil_pass_options *o, mil_pass_stats *stats, mil_diag *d) {
  mil_status st = MIL_OK;
  for (int32_t fi = 0; fi < p->n_functions && st == MIL_OK; fi++) {
    mil_function *f = p->functions[fi];
    for (int32_t s = 0; s < f->n_specs && st == MIL_OK; s++) {
      dce c;
      memset(&c, 0, sizeof c);
      st = sweep(&c, f->specs[s].block, 0, d);
      /* c.dead lists every block's dead ops consumers first */
      for (int32_t i = 0; i < c.n_dead && st == MIL_OK; i++) {
        if (mil_op_remove(c.dead[i]) != MIL_OK)
          st = mil_diag_error(d, MIL_ERR_INVALID, "dead_code_elimination: op '%s' (%s) is dead but still used",
                              c.dead[i]->name, c.dead[i]->type);
        else if (stats)
          stats->changes++;
      }
      pass_ptrset_free(&c.used);
      free(c.dead);
    }
  }
  return st;
}

const mil_pass_def pass_def_dead_code_elimination = {
    "common::dead_code_elimination", "remove ops whose results reach no function output", NULL, 0, run, NULL};
