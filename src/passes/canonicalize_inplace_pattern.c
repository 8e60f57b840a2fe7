/* common::canonicalize_inplace_pattern — an in-place update is written as
 * op -> coreml_update_state(state, op's output); put each such update
 * immediately after the op that computes its value (the canonical order
 * prefer_state_in_downstream relies on).
 *
 *   main[CoreML8](%x: (2,fp16)(Tensor), %state: (2,fp16)(State)) {
 *     block0() {
 *       %r: (2,fp16)(Tensor) = read_state(input=%state, name="r")
 *       %m: (2,fp16)(Tensor) = mul(x=%r, y=%x, name="m")
 *       %a: (2,fp16)(Tensor) = add(x=%m, y=%x, name="a")
 *       %u: (2,fp16)(Tensor) = coreml_update_state(state=%state, value=%m, name="u")
 *     } -> (%a)
 *   }
 *
 * becomes
 *
 *   main[CoreML8](%x: (2,fp16)(Tensor), %state: (2,fp16)(State)) {
 *     block0() {
 *       %r: (2,fp16)(Tensor) = read_state(input=%state, name="r")
 *       %m: (2,fp16)(Tensor) = mul(x=%r, y=%x, name="m")
 *       %coreml_update_state_0: (2,fp16)(Tensor) = coreml_update_state(state=%state, value=%m, name="coreml_update_state_0")
 *       %a: (2,fp16)(Tensor) = add(x=%m, y=%x, name="a")
 *     } -> (%a)
 *   }
 *
 * Every coreml_update_state reading an output of an op (other than
 * read_state and coreml_update_state) is rebuilt just before the op that
 * followed that op when the block was first listed, its uses move to the
 * new update, and the old update is removed (dead_code_elimination never
 * removes state updates).
 *
 * Mirrors coremltools/converters/mil/mil/passes/defs/optimize_state.py
 * (canonicalize_inplace_pattern).
 */
#include <stdlib.h>
#include <string.h>

#include "passes/pass_internal.h"

#define PASS "canonicalize_inplace_pattern"

static int walk_block(pass_bld *c, mil_block *b, int depth);

/* The updates reading op's outputs, one per binding, oldest first. */
static int32_t update_children(const mil_op *op, mil_op **out, int32_t max) {
  int32_t n = 0;
  for (int32_t i = 0; i < op->n_outputs; i++) {
    int32_t start = n;
    for (const mil_use *u = op->outputs[i]->uses; u; u = u->next_use)
      if (u->op && strcmp(u->op->type, "coreml_update_state") == 0) {
        if (n < max) out[n] = u->op;
        n++;
      }
    /* use lists hold the newest binding first */
    for (int32_t a = start, z = (n < max ? n : max) - 1; a < z; a++, z--) {
      mil_op *t = out[a];
      out[a] = out[z];
      out[z] = t;
    }
  }
  return n;
}

static int transform(pass_bld *c, mil_op *op, mil_op *const *snap, int32_t n_snap, int32_t idx) {
  if (strcmp(op->type, "read_state") == 0 || strcmp(op->type, "coreml_update_state") == 0) return 0;
  mil_op *ups[64];
  int32_t n = update_children(op, ups, 64);
  if (n > 64) n = 64;
  int changed = 0;
  for (int32_t k = 0; k < n; k++) {
    mil_op *old = ups[k];
    if (old->block != op->block || old->n_outputs < 1) continue;
    /* the op that followed op in the first listing (still in the block) */
    mil_op *before = NULL;
    for (int32_t j = idx + 1; j < n_snap && !before; j++)
      if (snap[j]->block == op->block) before = snap[j];
    mil_status st = MIL_OK;
    pass_barg a[] = {PASS_BV("state", mil_op_input_var(old, "state")), PASS_BV("value", mil_op_input_var(old, "value"))};
    mil_op *nu = pass_bld_op(c, op->block, before, "coreml_update_state", NULL, 2, a, &st);
    if (!nu) return -(int)st;
    int r = pass_bld_try_replace(c, old, old->outputs[0], nu->outputs[0]);
    if (r < 0) return r;
    if (r > 0) {
      st = pass_remove_ops(&old, 1, c->d);
      if (st != MIL_OK) return -(int)st;
    }
    changed = 1;
  }
  return changed;
}

static int walk_block(pass_bld *c, mil_block *b, int depth) {
  if (depth > PASS_MAX_DEPTH) {
    mil_diag_error(c->d, MIL_ERR_UNSUPPORTED, PASS ": blocks nested deeper than %d levels", PASS_MAX_DEPTH);
    return -(int)MIL_ERR_UNSUPPORTED;
  }
  int32_t n = 0;
  mil_op **ops = malloc(((size_t)b->n_ops + 1) * sizeof *ops);
  if (!ops) return -(int)MIL_ERR_NOMEM;
  /* transform() only acts at an op an update of this block reads from: the
   * producers of the updates' operands (updates it builds read the same
   * operands, so the set does not grow) */
  const char *update = mil_program_find_string(c->p, "coreml_update_state", (size_t)-1);
  pass_ptrset readers = {0};
  bool ok = true;
  for (mil_op *op = b->first; op && n < b->n_ops; op = op->next) {
    ops[n++] = op;
    if (op->type != update) continue;
    for (int32_t i = 0; i < op->n_inputs; i++)
      for (int32_t a = 0; a < op->inputs[i].n_args; a++) {
        const mil_var *v = op->inputs[i].args[a].use.var;
        if (v && v->op) ok = ok && pass_ptrset_add(&readers, v->op);
      }
  }
  int rc = ok ? 0 : -(int)MIL_ERR_NOMEM;
  for (int32_t i = 0; i < n && rc >= 0; i++) {
    mil_op *op = ops[i];
    if (op->block != b) continue;
    for (int32_t k = 0; k < op->n_blocks && rc >= 0; k++) rc = walk_block(c, op->blocks[k], depth + 1);
    if (rc < 0) break;
    if (!pass_ptrset_has(&readers, op)) continue;
    int r = transform(c, op, ops, n, i);
    if (r < 0) rc = r;
    else c->changes += r;
  }
  pass_ptrset_free(&readers);
  free(ops);
  return rc;
}

static mil_status run(mil_program *p, const mil_pass_options *o, mil_pass_stats *stats, mil_diag *d) {
  (void)o;
  pass_bld c = {.p = p, .d = d, .pass = PASS};
  mil_status st = MIL_OK;
  for (int32_t i = 0; i < p->n_functions && st == MIL_OK; i++) {
    mil_function *f = p->functions[i];
    for (int32_t s = 0; s < f->n_specs && st == MIL_OK; s++) {
      int rc = walk_block(&c, f->specs[s].block, 0);
      if (rc < 0) st = (mil_status)(-rc);
    }
  }
  pass_bld_free(&c);
  if (stats) stats->changes += c.changes;
  return st;
}

static const char *const k_anchors[] = {"coreml_update_state", NULL};
const mil_pass_def pass_def_canonicalize_inplace_pattern = {
    "common::" PASS, "reorder slice_update/state patterns into the canonical in-place form", NULL, 0, run, k_anchors};
