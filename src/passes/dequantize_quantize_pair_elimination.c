/* common::dequantize_quantize_pair_elimination — a quantize that reads a
 * dequantize with the same scale, zero point and axis gives back the
 * dequantize's input, so its readers read that input directly.
 *
 *   main[CoreML7](%x: (2, 3, fp32)(Tensor)) {
 *     block0() {
 *       %s: (fp32)*(Scalar) = const(val=0.5, name="s")
 *       %dt: (string)*(Scalar) = const(val="int8", name="dt")
 *       %q0: (2, 3, int8)(Tensor) = quantize(input=%x, scale=%s, output_dtype=%dt, name="q0")
 *       %d0: (2, 3, fp32)(Tensor) = dequantize(input=%q0, scale=%s, name="d0")
 *       %q1: (2, 3, int8)(Tensor) = quantize(input=%d0, scale=%s, output_dtype=%dt, name="q1")
 *       %d1: (2, 3, fp32)(Tensor) = dequantize(input=%q1, scale=%s, name="d1")
 *     } -> (%d1)
 *   }
 *
 * becomes
 *
 *   main[CoreML7](%x: (2, 3, fp32)(Tensor)) {
 *     block0() {
 *       %s: (fp32)*(Scalar) = const(val=0.5, name="s")
 *       %dt: (string)*(Scalar) = const(val="int8", name="dt")
 *       %q0: (2, 3, int8)(Tensor) = quantize(input=%x, scale=%s, output_dtype=%dt, name="q0")
 *       %d1: (2, 3, fp32)(Tensor) = dequantize(input=%q0, scale=%s, name="d1")
 *     } -> (%d1)
 *   }
 *
 * A dequantize that is an output of its block is left alone. Each
 * matching quantize reader is removed; the dequantize is removed too when
 * no op reads it any more. Readers are visited in the order they were
 * bound, and, as coremltools iterates the list it shrinks, the reader that
 * follows a removed one is skipped in that sweep (blocks are swept until
 * nothing changes).
 *
 * Mirrors coremltools/converters/mil/mil/passes/defs/optimize_quantization.py
 * (dequantize_quantize_pair_elimination).
 */
#include <stdlib.h>
#include <string.h>

#include "passes/fuse_util_internal.h"
#include "passes/pass_internal.h"

#define PASS "dequantize_quantize_pair_elimination"

static bool is_output_of(const mil_var *v, const mil_block *b) {
  for (int32_t i = 0; i < b->n_outputs; i++)
    if (b->outputs[i].var == v) return true;
  return false;
}

/* numpy's `not np.any(a != b)` with broadcasting of a single element. */
static bool values_equal(const mil_value *a, const mil_value *b) {
  if (!a || !b || a->kind != MIL_VAL_TENSOR || b->kind != MIL_VAL_TENSOR) return a == b;
  if (a->numel != b->numel && a->numel != 1 && b->numel != 1) return false;
  int64_t n = a->numel > b->numel ? a->numel : b->numel;
  for (int64_t i = 0; i < n; i++)
    if (mil_value_get_f64(a, a->numel == 1 ? 0 : i) != mil_value_get_f64(b, b->numel == 1 ? 0 : i)) return false;
  return true;
}

static bool same_optional(const mil_op *a, const mil_op *b, const char *name) {
  bool ha = pass_bld_has(a, name), hb = pass_bld_has(b, name);
  if (ha != hb) return false;
  return !ha || values_equal(pass_input_value(a, name), pass_input_value(b, name));
}

static bool removable(const mil_op *deq, const mil_op *q) {
  return values_equal(pass_input_value(deq, "scale"), pass_input_value(q, "scale")) &&
         same_optional(deq, q, "zero_point") && same_optional(deq, q, "axis");
}

static int transform(pass_bld *c, mil_op *op) {
  if (strcmp(op->type, "dequantize") != 0 || op->n_outputs != 1) return 0;
  mil_var *out = op->outputs[0], *in = mil_op_input_var(op, "input");
  if (!in || is_output_of(out, op->block)) return 0;
  /* the readers, one entry per binding, oldest binding first (use lists
   * hold the newest first) */
  int32_t n = pass_n_op_uses(out);
  mil_op **kids = malloc(((size_t)n + 1) * sizeof *kids);
  if (!kids) return -(int)MIL_ERR_NOMEM;
  int32_t k = n;
  for (const mil_use *u = out->uses; u; u = u->next_use)
    if (u->op && k > 0) kids[--k] = u->op;
  bool any = false;
  for (int32_t i = 0; i < n; i++) {
    mil_op *q = kids[i];
    if (!q->block || strcmp(q->type, "quantize") != 0 || q->n_outputs != 1 || !removable(op, q)) continue;
    int r = pass_bld_try_replace(c, q, q->outputs[0], in);
    if (r < 0) {
      free(kids);
      return r;
    }
    if (r == 0) continue;
    mil_status st = pass_remove_ops(&q, 1, c->d);
    if (st != MIL_OK) {
      free(kids);
      return -(int)st;
    }
    any = true;
    i++; /* the shrinking list skips the next reader */
  }
  free(kids);
  if (any && pass_n_op_uses(out) == 0 && out->n_uses == 0) {
    mil_status st = pass_remove_ops(&op, 1, c->d);
    if (st != MIL_OK) return -(int)st;
  }
  return any ? 1 : 0;
}

/* The op types transform() can rewrite at (it returns 0 at any other). */
static const char *const k_types[] = {"dequantize", NULL};
/* The op types no rewrite can do without. */
static const char *const k_required[] = {"quantize", NULL};

static mil_status run(mil_program *p, const mil_pass_options *o, mil_pass_stats *stats, mil_diag *d) {
  (void)o;
  pass_walk_spec ws = {PASS, k_types, true, PASS_WALK_NESTED_FIXPOINT, true, k_required};
  return pass_bld_walk(p, d, &ws, transform, stats);
}

static const char *const k_anchors[] = {"quantize", NULL};
const mil_pass_def pass_def_dequantize_quantize_pair_elimination = {
    "common::" PASS, "remove dequantize -> quantize pairs that cancel", NULL, 0, run, k_anchors};
