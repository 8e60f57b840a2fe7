/* common::prefer_state_in_downstream — when the value written to a state
 * is also read by later ops, let them read the coreml_update_state output
 * (the state's memory) instead of keeping the functional result alive.
 *
 *   main[CoreML8](%x: (2,fp16)(Tensor), %state: (2,fp16)(State)) {
 *     block0() {
 *       %r: (2,fp16)(Tensor) = read_state(input=%state, name="r")
 *       %m: (2,fp16)(Tensor) = mul(x=%r, y=%x, name="m")
 *       %u: (2,fp16)(Tensor) = coreml_update_state(state=%state, value=%m, name="u")
 *       %a: (2,fp16)(Tensor) = add(x=%m, y=%x, name="a")
 *     } -> (%a)
 *   }
 *
 * becomes
 *
 *   main[CoreML8](%x: (2,fp16)(Tensor), %state: (2,fp16)(State)) {
 *     block0() {
 *       %r: (2,fp16)(Tensor) = read_state(input=%state, name="r")
 *       %m: (2,fp16)(Tensor) = mul(x=%r, y=%x, name="m")
 *       %u: (2,fp16)(Tensor) = coreml_update_state(state=%state, value=%m, name="u")
 *       %a: (2,fp16)(Tensor) = add(x=%u, y=%x, name="a")
 *     } -> (%a)
 *   }
 *
 * Every use of the value after the update moves to the update's output,
 * block outputs included (a function output keeps its name, so the update
 * output takes it). Nothing changes when the value is read by no other op,
 * only by other updates, or is an input of the block that is also its
 * output. Relies on canonicalize_inplace_pattern having put each update
 * right after its value's producer.
 *
 * Mirrors coremltools/converters/mil/mil/passes/defs/optimize_state.py
 * (prefer_state_in_downstream).
 */
#include <string.h>

#include "passes/fuse_util_internal.h"
#include "passes/pass_internal.h"

#define PASS "prefer_state_in_downstream"

static bool is_block_input(const mil_var *v, const mil_block *b) {
  if (b->func && !b->parent) return v->func_input_of == b->func;
  return v->input_of == b;
}

static bool is_output_of(const mil_var *v, const mil_block *b) {
  for (int32_t i = 0; i < b->n_outputs; i++)
    if (b->outputs[i].var == v) return true;
  return false;
}

static int transform(pass_bld *c, mil_op *op) {
  if (strcmp(op->type, "coreml_update_state") != 0 || op->n_outputs < 1) return 0;
  mil_var *v = mil_op_input_var(op, "value");
  if (!v) return 0;
  if (is_output_of(v, op->block) && is_block_input(v, op->block)) return 0;
  bool other = false, non_update = false;
  for (const mil_use *u = v->uses; u; u = u->next_use) {
    if (!u->op || u->op == op) continue;
    other = true;
    if (strcmp(u->op->type, "coreml_update_state") != 0) non_update = true;
  }
  if (!other || !non_update) return 0;
  int r = pass_bld_try_replace(c, op, v, op->outputs[0]);
  return r;
}

/* The op types transform() can rewrite at (it returns 0 at any other). */
static const char *const k_types[] = {"coreml_update_state", NULL};

static mil_status run(mil_program *p, const mil_pass_options *o, mil_pass_stats *stats, mil_diag *d) {
  (void)o;
  pass_walk_spec ws = {PASS, k_types, false, PASS_WALK_NESTED_ONCE, true, NULL};
  return pass_bld_walk(p, d, &ws, transform, stats);
}

static const char *const k_anchors[] = {"coreml_update_state", NULL};
const mil_pass_def pass_def_prefer_state_in_downstream = {
    "common::" PASS, "let downstream ops read the state instead of a copy", NULL, 0, run, k_anchors};
