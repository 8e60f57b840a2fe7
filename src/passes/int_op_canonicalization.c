/* common::int_op_canonicalization — a quantized op that does no
 * floating-point arithmetic is written as dequantize -> op -> quantize;
 * run it directly on the quantized integers instead. Only reshape (the
 * iOS17 variant, which takes int8/uint8) qualifies.
 *
 *   main[CoreML7](%q: (5, 6, int8)(Tensor)) {
 *     block0() {
 *       %s: (fp32)*(Scalar) = const(val=0.1, name="s")
 *       %d: (5, 6, fp32)(Tensor) = dequantize(input=%q, scale=%s, name="d")
 *       %shape: (3,int32)*(Tensor) = const(val=[5, 2, 3], name="shape")
 *       %r: (5, 2, 3, fp32)(Tensor) = reshape(x=%d, shape=%shape, name="r")
 *       %dt: (string)*(Scalar) = const(val="int8", name="dt")
 *       %q2: (5, 2, 3, int8)(Tensor) = quantize(input=%r, scale=%s, output_dtype=%dt, name="q2")
 *     } -> (%q2)
 *   }
 *
 * becomes (the dequantize is left for dead_code_elimination: other ops may
 * read it)
 *
 *   main[CoreML7](%q: (5, 6, int8)(Tensor)) {
 *     block0() {
 *       %s: (fp32)*(Scalar) = const(val=0.1, name="s")
 *       %d: (5, 6, fp32)(Tensor) = dequantize(input=%q, scale=%s, name="d")
 *       %shape: (3,int32)*(Tensor) = const(val=[5, 2, 3], name="shape")
 *       %q2: (5, 2, 3, int8)(Tensor) = reshape(x=%q, shape=%shape, name="q2")
 *       %dt: (string)*(Scalar) = const(val="int8", name="dt")
 *     } -> (%q2)
 *   }
 *
 * Conditions: op's x is a dequantize output and op's only reader is a
 * quantize. The new op is named after the quantize's output and put where
 * op was. Blocks are swept until nothing changes.
 *
 * Mirrors coremltools/converters/mil/mil/passes/defs/optimize_quantization.py
 * (int_op_canonicalization).
 */
#include <string.h>

#include "passes/fuse_util_internal.h"
#include "passes/pass_internal.h"

#define PASS "int_op_canonicalization"

static int transform(pass_bld *c, mil_op *op) {
  if (strcmp(op->type, "reshape") != 0 || op->n_outputs != 1) return 0;
  int opset = pass_op_opset(op);
  const mil_op_def *def = mil_op_def_find("reshape", opset < 0 ? MIL_IOS18 : opset);
  if (!def || def->opset != MIL_IOS17) return 0;
  mil_var *x = mil_op_input_var(op, "x");
  if (!x || !x->op || strcmp(x->op->type, "dequantize") != 0) return 0;
  mil_op *q = pass_only_child_op(op->outputs[0]);
  if (!q || strcmp(q->type, "quantize") != 0 || q->n_outputs != 1) return 0;
  mil_status st = MIL_OK;
  pass_barg a[] = {PASS_BV("x", mil_op_input_var(x->op, "input")), PASS_BV("shape", mil_op_input_var(op, "shape"))};
  mil_var *nv = pass_bld_var(c, NULL, op, "reshape", q->outputs[0]->name, 2, a, &st);
  if (!nv) return -(int)st;
  int r = pass_bld_try_replace(c, q, q->outputs[0], nv);
  if (r <= 0) return r;
  mil_op *dead[2] = {op, q};
  st = pass_remove_ops(dead, 2, c->d);
  return st != MIL_OK ? -(int)st : 1;
}

/* The op types transform() can rewrite at (it returns 0 at any other). */
static const char *const k_types[] = {"reshape", NULL};
/* The op types no rewrite can do without. */
static const char *const k_required[] = {"dequantize", NULL};

static mil_status run(mil_program *p, const mil_pass_options *o, mil_pass_stats *stats, mil_diag *d) {
  (void)o;
  pass_walk_spec ws = {PASS, k_types, true, PASS_WALK_NESTED_FIXPOINT, true, k_required};
  return pass_bld_walk(p, d, &ws, transform, stats);
}

static const char *const k_anchors[] = {"quantize", NULL};
const mil_pass_def pass_def_int_op_canonicalization = {
    "common::" PASS, "drop dequantize -> op -> quantize around ops that accept ints", NULL, 0, run, k_anchors};
