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
 * Each block is walked backwards, removing ops at once: an op is dead when
 * none of its outputs is used, where the uses left are those of the live
 * ops after it (dead ones are already gone), of block outputs, and the
 * outputs of coreml_update_state ops (which write state) count as used.
 * An op without outputs is removed. The nested blocks of a live op are
 * cleaned the same way when the walk reaches it, before the ops in front
 * of it are looked at, so their dead ops no longer hold uses either.
 *
 * Mirrors coremltools/converters/mil/mil/passes/defs/cleanup/
 * dead_code_elimination.py. Linear in program size: a var's use count is
 * kept by the IR, so no set of used vars is needed.
 */
#include "passes/pass_internal.h"

/* Reading ahead in the walk: op records lie in list order in memory
 * (mil_program_compact_ops), so the record PASS_WALK_AHEAD ops before op is most
 * likely PASS_WALK_AHEAD records lower. Asking for it early keeps the walk from
 * waiting on memory at every op (a prefetch of an address that holds no
 * op is harmless). */

typedef struct dce {
  const char *update_state; /* interned "coreml_update_state", or NULL */
  int64_t changes;
  mil_diag *d;
} dce;

static bool is_live(const dce *c, const mil_op *op) {
  for (int32_t i = 0; i < op->n_outputs; i++)
    if (op->outputs[i]->n_uses > 0) return true;
  return op->n_outputs > 0 && op->type == c->update_state;
}

/* Removes the dead ops of b, last to first; nested blocks of live ops are
 * cleaned when reached. */
static mil_status sweep(dce *c, mil_block *b, int depth) {
  if (depth > PASS_MAX_DEPTH)
    return mil_diag_error(c->d, MIL_ERR_UNSUPPORTED, "dead_code_elimination: blocks nested deeper than %d levels",
                          PASS_MAX_DEPTH);
  /* while ops with inputs are being removed (hot), the input arrays of
   * the ops 6 before and the argument arrays of those 3 before are asked
   * for too: removing an op reads them */
  mil_op *prev, *near = NULL, *far = NULL;
  int hot = 0;
  for (mil_op *op = b->last; op; op = prev) {
    prev = op->prev;
    PASS_PREFETCH((const void *)((uintptr_t)op - PASS_WALK_AHEAD * sizeof(mil_op)));
    if (hot) {
      hot--;
      if (far) {
        PASS_PREFETCH(far->inputs);
        far = far->prev;
      }
      if (near) {
        for (int32_t i = 0; i < near->n_inputs && i < 4; i++) PASS_PREFETCH(near->inputs[i].args);
        near = near->prev;
      }
    }
    if (is_live(c, op)) {
      for (int32_t i = 0; i < op->n_blocks; i++) {
        mil_status st = sweep(c, op->blocks[i], depth + 1);
        if (st != MIL_OK) return st;
      }
      continue;
    }
    bool reads = op->n_inputs > 0;
    if (mil_op_remove(op) != MIL_OK)
      return mil_diag_error(c->d, MIL_ERR_INVALID, "dead_code_elimination: op '%s' (%s) is dead but still used",
                            op->name, op->type);
    c->changes++;
    if (!reads) continue;
    if (!hot) {
      near = prev;
      for (int k = 0; k < 3 && near; k++) near = near->prev;
      far = near;
      for (int k = 0; k < 3 && far; k++) far = far->prev;
    }
    hot = 16;
  }
  return MIL_OK;
}

static mil_status run(mil_program *p, const mil_pass_options *o, mil_pass_stats *stats, mil_diag *d) {
  (void)o;
  dce c = {mil_program_find_string(p, "coreml_update_state", (size_t)-1), 0, d};
  mil_status st = MIL_OK;
  for (int32_t fi = 0; fi < p->n_functions && st == MIL_OK; fi++) {
    mil_function *f = p->functions[fi];
    for (int32_t s = 0; s < f->n_specs && st == MIL_OK; s++) st = sweep(&c, f->specs[s].block, 0);
  }
  if (stats) stats->changes += c.changes;
  return st;
}

const mil_pass_def pass_def_dead_code_elimination = {
    "common::dead_code_elimination", "remove ops whose results reach no function output", NULL, 0, run, NULL};
