/* common::merge_consecutive_paddings — fold a pad feeding a single pad into
 * one pad.
 *
 *   main(%x: (1, 2, 6, 8, fp32)(Tensor)) {
 *     block0() {
 *       %p1: (2,int32)*(Tensor) = const(val=[1, 1], name="p1")
 *       %m: (string)*(Scalar) = const(val="reflect", name="m")
 *       %cv: (fp32)*(Scalar) = const(val=0.0, name="cv")
 *       %a: (1, 2, 6, 10, fp32)(Tensor) = pad(x=%x, pad=%p1, mode=%m, constant_val=%cv, name="a")
 *       %p2: (4,int32)*(Tensor) = const(val=[1, 1, 0, 0], name="p2")
 *       %b: (1, 2, 8, 10, fp32)(Tensor) = pad(x=%a, pad=%p2, mode=%m, constant_val=%cv, name="b")
 *     } -> (%b)
 *   }
 *
 * becomes
 *
 *   main(%x: (1, 2, 6, 8, fp32)(Tensor)) {
 *     block0() {
 *       %p1: (2,int32)*(Tensor) = const(val=[1, 1], name="p1")
 *       %m: (string)*(Scalar) = const(val="reflect", name="m")
 *       %cv: (fp32)*(Scalar) = const(val=0.0, name="cv")
 *       %pad_0_pad_0: (4,int32)*(Tensor) = const(val=[1, 1, 1, 1], name="pad_0_pad_0")
 *       %pad_0_mode_0: (string)*(Scalar) = const(val="reflect", name="pad_0_mode_0")
 *       %pad_0_constant_val_0: (fp32)*(Scalar) = const(val=0.0, name="pad_0_constant_val_0")
 *       %b: (1, 2, 8, 10, fp32)(Tensor) = pad(x=%x, pad=%pad_0_pad_0, mode=%pad_0_mode_0, constant_val=%pad_0_constant_val_0, name="pad_0")
 *       %p2: (4,int32)*(Tensor) = const(val=[1, 1, 0, 0], name="p2")
 *     } -> (%b)
 *   }
 *
 * Conditions: the first pad's output is read by exactly one op (block
 * outputs aside), a pad with the same mode. The shorter pad list is
 * left-padded with zeros and the lists are added. With mode "constant" the
 * constant values must be equal; with any other mode no dim side may be
 * padded by both. The new pad (fresh name, consts for every input) goes
 * before the first pad. Only function bodies are visited (not nested
 * blocks), each until nothing changes.
 *
 * Mirrors coremltools/converters/mil/mil/passes/defs/optimize_repeat_ops.py
 * (merge_consecutive_paddings).
 */
#include <stdlib.h>
#include <string.h>

#include "passes/fuse_util_internal.h"
#include "passes/tensor_pass_internal.h"

#define MAX_PAD 256

static const mil_value *input_value_or_null(const mil_op *op, const char *name) {
  return pass_input_value(op, name);
}

static int try_merge(pass_t_ctx *c, mil_op *op) {
  if (!pass_t_is(op, "pad")) return 0;
  mil_op *child = pass_t_child(op, "pad");
  if (!child || child->block != op->block) return 0;
  const char *mode = pass_t_str_input(op, "mode"), *cmode = pass_t_str_input(child, "mode");
  if (!mode) mode = "constant";
  if (!cmode) cmode = "constant";
  if (strcmp(mode, cmode) != 0) return 0;
  int64_t a[MAX_PAD], b[MAX_PAD], n1, n2;
  if (!pass_t_ints(op, "pad", a, MAX_PAD, &n1) || !pass_t_ints(child, "pad", b, MAX_PAD, &n2)) return 0;
  int64_t n = n1 > n2 ? n1 : n2, fa[MAX_PAD], fb[MAX_PAD], fin[MAX_PAD];
  for (int64_t i = 0; i < n; i++) {
    fa[i] = i < n - n1 ? 0 : a[i - (n - n1)];
    fb[i] = i < n - n2 ? 0 : b[i - (n - n2)];
    fin[i] = fa[i] + fb[i];
  }
  const mil_value *cv = input_value_or_null(op, "constant_val");
  if (strcmp(mode, "constant") == 0) {
    const mil_value *ccv = input_value_or_null(child, "constant_val");
    double x = cv ? mil_value_get_f64(cv, 0) : 0.0, y = ccv ? mil_value_get_f64(ccv, 0) : 0.0;
    if ((cv && cv->numel != 1) || (ccv && ccv->numel != 1) || x != y) return 0;
  } else {
    for (int64_t i = 0; i < n; i++)
      if (fa[i] != 0 && fb[i] != 0) return 0;
  }
  if (pass_t_is_output_of(op->outputs[0], op->block)) return 0; /* coremltools could not remove it */
  mil_var *x = mil_op_input_var(op, "x");
  if (!x) return 0;
  mil_op *np = pass_t_op(c, op, "pad", NULL);
  if (!np) return pass_t_oom(c);
  pass_t_var(np, "x", x);
  if (!pass_t_const(c, np, "pad", pass_t_i32s(c->p, n, fin)) || !pass_t_const(c, np, "mode", pass_t_str(c->p, mode)))
    return pass_t_oom(c);
  if (cv && !pass_t_const(c, np, "constant_val", cv)) return pass_t_oom(c);
  mil_status st = pass_t_finish(c, np);
  if (st != MIL_OK) return -(int)st;
  int r = pass_t_replace(c, op, child->outputs[0], np->outputs[0]);
  if (r < 0) return r;
  mil_op *dead[2] = {op, child};
  if ((r = pass_t_remove(c, dead, 2)) < 0) return r;
  return 1;
}

/* The op types try_merge() can rewrite at (it returns 0 at any other). */
static const char *const k_types[] = {"pad", NULL};

static int walk_fn(void *ud, mil_op *op) { return try_merge(ud, op); }

static mil_status run(mil_program *p, const mil_pass_options *o, mil_pass_stats *st, mil_diag *d) {
  (void)o;
  pass_t_ctx c = {.p = p, .d = d, .pass = "merge_consecutive_paddings"};
  pass_walk_spec ws = {c.pass, k_types, true, PASS_WALK_NESTED_SKIP, true, NULL};
  mil_status s = pass_walk_run(p, d, &ws, walk_fn, &c, &c.changes);
  if (st) st->changes += c.changes;
  pass_t_free(&c);
  return s;
}

static const char *const k_anchors[] = {"pad", NULL};
const mil_pass_def pass_def_merge_consecutive_paddings = {
    "common::merge_consecutive_paddings", "merge a pad feeding a single pad into one pad", NULL, 0, run, k_anchors};
