/* common::loop_invariant_elimination — take loop variables that a
 * while_loop never changes out of the loop.
 *
 *   main(%a: (1, 2, fp32)(Tensor), %b: (1, 2, fp32)(Tensor)) {
 *     block0() {
 *       %w_0: (1, 2, fp32)(Tensor), %w_1: (1, 2, fp32)(Tensor) = while_loop(loop_vars=(%a, %b), name="w")
 *         w_cond(%a_x: (1, 2, fp32)(Tensor), %b_x: (1, 2, fp32)(Tensor)) {
 *           %c: (bool)(Scalar) = some_op(x=%a_x, y=%b_x, name="c")
 *         } -> (%c)
 *         w_body(%a_x: (1, 2, fp32)(Tensor), %b_x: (1, 2, fp32)(Tensor)) {
 *           %s: (1, 2, fp32)(Tensor) = add(x=%a_x, y=%b_x, name="s")
 *         } -> (%s, %b_x)
 *     } -> (%w_0, %w_1)
 *   }
 *
 * becomes
 *
 *   main(%a: (1, 2, fp32)(Tensor), %b: (1, 2, fp32)(Tensor)) {
 *     block0() {
 *       %w_1: (1, 2, fp32)(Tensor) = identity(x=%b, name="w_1")
 *       %w_0: (1, 2, fp32)(Tensor) = while_loop(loop_vars=(%a), name="w_renamed")
 *         w_cond(%a_x: (1, 2, fp32)(Tensor)) {
 *           %c: (bool)(Scalar) = some_op(x=%a_x, y=%b, name="c")
 *         } -> (%c)
 *         w_body(%a_x: (1, 2, fp32)(Tensor)) {
 *           %s: (1, 2, fp32)(Tensor) = add(x=%a_x, y=%b, name="s")
 *         } -> (%s)
 *     } -> (%w_0, %w_1)
 *   }
 *
 * Loop variable i is invariant when the body returns its own input i, or a
 * var defined outside the loop, at position i. Its block inputs are replaced
 * by the loop's initial value, and the loop loses that input and output;
 * uses of the output read the initial value instead, except that an output
 * of the enclosing block is kept under its name through an identity placed
 * before the loop (the loop op is then renamed "<name>_renamed" so names
 * stay unique). Nested blocks are handled first.
 *
 * Mirrors coremltools/converters/mil/mil/passes/defs/cleanup/
 * loop_invariant_elimination.py.
 */
#include <stdlib.h>
#include <string.h>

#include "passes/pass_internal.h"

typedef struct lie {
  mil_program *p;
  const char *while_loop; /* interned "while_loop" */
  int64_t changes;
  mil_diag *d;
} lie;

static bool is_output_of(const mil_var *v, const mil_block *b) {
  for (const mil_use *u = v->uses; u; u = u->next_use)
    if (!u->op && u->block == b) return true;
  return false;
}

/* True when v is defined outside `loop` (visible before it). */
static bool defined_outside(const mil_var *v, const mil_op *loop) {
  const mil_block *b = v->op ? v->op->block : v->input_of;
  for (int depth = 0; b && depth <= PASS_MAX_DEPTH; depth++) {
    if (b->parent == loop) return false;
    b = b->parent ? b->parent->block : NULL;
  }
  return true;
}

/* Fills inv[i] for each loop var; returns how many are invariant. */
static int32_t detect(const mil_op *loop, bool *inv, int32_t n) {
  int32_t k = 0;
  const mil_block *body = loop->n_blocks > 1 ? loop->blocks[1] : NULL;
  for (int32_t i = 0; i < n; i++) {
    inv[i] = false;
    if (!body || i >= body->n_inputs || i >= body->n_outputs) continue;
    const mil_var *out = body->outputs[i].var;
    inv[i] = out == body->inputs[i] || defined_outside(out, loop);
    k += inv[i];
  }
  return k;
}

static const mil_input *loop_vars(const mil_op *op) { return mil_op_find_input(op, "loop_vars"); }

static const char *suffixed(mil_program *p, const char *s, const char *suffix) {
  size_t a = strlen(s), b = strlen(suffix);
  char *buf = malloc(a + b + 1);
  if (!buf) return NULL;
  memcpy(buf, s, a);
  memcpy(buf + a, suffix, b + 1);
  const char *r = mil_program_intern(p, buf, (size_t)-1);
  free(buf);
  return r;
}

/* Whether op is a while_loop this pass can reason about. */
static bool usable_loop(const lie *c, const mil_op *op) {
  if (op->type != c->while_loop || op->n_blocks < 2) return false;
  const mil_input *lv = loop_vars(op);
  if (!lv) return false;
  int32_t n = lv->n_args;
  if (op->n_outputs != n || op->blocks[1]->n_inputs != n || op->blocks[1]->n_outputs != n) return false;
  for (int32_t i = 0; i < n; i++)
    if (!lv->args[i].use.var) return false;
  return true;
}

/* Phase 3 for one loop: drop its invariant loop vars. */
static mil_status eliminate(lie *c, mil_op *op) {
  const mil_input *lv = loop_vars(op);
  int32_t n = lv->n_args;
  bool *inv = calloc((size_t)n + 1, sizeof *inv);
  mil_var **keep = malloc(((size_t)n + 1) * sizeof *keep);
  if (!inv || !keep) {
    free(inv);
    free(keep);
    return mil_diag_error(c->d, MIL_ERR_NOMEM, "loop_invariant_elimination: out of memory");
  }
  int32_t k = detect(op, inv, n);
  if (k > 0) {
    mil_var **init = malloc(((size_t)n + 1) * sizeof *init);
    if (!init) {
      free(inv);
      free(keep);
      return mil_diag_error(c->d, MIL_ERR_NOMEM, "loop_invariant_elimination: out of memory");
    }
    for (int32_t i = 0; i < n; i++) init[i] = lv->args[i].use.var;
    /* inside the loop's blocks, the invariant inputs become the initial values */
    for (int32_t bi = 0; bi < op->n_blocks; bi++) {
      mil_block *b = op->blocks[bi];
      for (int32_t i = 0; i < n && i < b->n_inputs; i++)
        if (inv[i]) mil_var_replace_all_uses(b->inputs[i], init[i]);
      for (int32_t i = (n < b->n_inputs ? n : b->n_inputs) - 1; i >= 0; i--)
        if (inv[i]) mil_block_remove_input(b, i);
    }
    /* remaining uses of the invariant outputs read the initial values */
    for (int32_t i = 0; i < n; i++)
      if (inv[i]) pass_replace_uses_after(op, op->outputs[i], init[i]);
    /* rebuild loop_vars, the body outputs and the op outputs */
    int32_t m = 0;
    for (int32_t i = 0; i < n; i++)
      if (!inv[i]) keep[m++] = init[i];
    mil_op_remove_input(op, "loop_vars");
    mil_op_add_input_tuple(op, "loop_vars", m, keep);
    mil_block *body = op->blocks[1];
    m = 0;
    for (int32_t i = 0; i < n; i++)
      if (!inv[i]) keep[m++] = body->outputs[i].var;
    mil_block_set_outputs(body, m, keep);
    for (int32_t i = (n < op->n_outputs ? n : op->n_outputs) - 1; i >= 0; i--)
      if (inv[i] && mil_op_remove_output(op, i) != MIL_OK) {
        free(init);
        free(inv);
        free(keep);
        return mil_diag_error(c->d, MIL_ERR_INVALID,
                              "loop_invariant_elimination: op '%s': output %d is still used after the loop", op->name,
                              i);
      }
    c->changes += k;
    free(init);
  }
  free(inv);
  free(keep);
  return MIL_OK;
}

static mil_status eliminate_block(lie *c, mil_block *b, int depth) {
  if (depth > PASS_MAX_DEPTH)
    return mil_diag_error(c->d, MIL_ERR_UNSUPPORTED,
                          "loop_invariant_elimination: blocks nested deeper than %d levels", PASS_MAX_DEPTH);
  /* phases 1 and 2: nested blocks first; loops with invariants are renamed
   * and their invariant outputs that are outputs of b get an identity */
  mil_op *next;
  for (mil_op *op = b->first; op; op = next) {
    next = op->next;
    for (int32_t i = 0; i < op->n_blocks; i++) {
      mil_status st = eliminate_block(c, op->blocks[i], depth + 1);
      if (st != MIL_OK) return st;
    }
    if (!usable_loop(c, op)) continue;
    const mil_input *lv = loop_vars(op);
    int32_t n = lv->n_args;
    bool *inv = calloc((size_t)n + 1, sizeof *inv);
    if (!inv) return mil_diag_error(c->d, MIL_ERR_NOMEM, "loop_invariant_elimination: out of memory");
    if (detect(op, inv, n) > 0) {
      const char *nm = suffixed(c->p, op->name, "_renamed");
      if (!nm) {
        free(inv);
        return mil_diag_error(c->d, MIL_ERR_NOMEM, "loop_invariant_elimination: out of memory");
      }
      op->name = nm;
    }
    for (int32_t i = 0; i < n; i++) {
      mil_var *tgt = op->outputs[i];
      if (!inv[i] || !is_output_of(tgt, b)) continue;
      mil_op *id = mil_op_new(c->p, "identity", tgt->name);
      if (!id) {
        free(inv);
        return mil_diag_error(c->d, MIL_ERR_NOMEM, "loop_invariant_elimination: out of memory");
      }
      mil_block_insert_before(op, id);
      mil_op_add_input(id, "x", lv->args[i].use.var);
      mil_status st = pass_finish_op(id, c->d);
      if (st != MIL_OK) {
        free(inv);
        return st;
      }
      pass_replace_uses_after(op, tgt, id->outputs[0]);
    }
    free(inv);
  }
  /* phase 3 */
  for (mil_op *op = b->first; op; op = op->next) {
    if (!usable_loop(c, op)) continue;
    mil_status st = eliminate(c, op);
    if (st != MIL_OK) return st;
  }
  return MIL_OK;
}

static mil_status run(mil_program *p, const mil_pass_options *o, mil_pass_stats *stats, mil_diag *d) {
  lie c = {p, mil_program_find_string(p, "while_loop", (size_t)-1), 0, d};
  if (!c.while_loop) return MIL_OK; /* no while_loop op */
  mil_status st = MIL_OK;
  for (int32_t fi = 0; fi < p->n_functions && st == MIL_OK; fi++) {
    mil_function *f = p->functions[fi];
    for (int32_t s = 0; s < f->n_specs && st == MIL_OK; s++) st = eliminate_block(&c, f->specs[s].block, 0);
  }
  if (stats) stats->changes += c.changes;
  return st;
}

static const char *const k_anchors[] = {"while_loop", NULL};
const mil_pass_def pass_def_loop_invariant_elimination = {
    "common::loop_invariant_elimination", "move loop-invariant loop vars out of while_loop", NULL, 0, run, k_anchors};
