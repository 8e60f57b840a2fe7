/* common::use_reflection_padding — a concat of size-1 slices mirrored
 * around the original tensor is a reflect pad.
 *
 *   main(%x: (1, 2, 6, 8, fp32)(Tensor)) {
 *     block0() {
 *       %b0: (4,int32)*(Tensor) = const(val=[0, 0, 0, 1], name="b0")
 *       %e0: (4,int32)*(Tensor) = const(val=[0, 0, 0, 2], name="e0")
 *       %m: (4,bool)*(Tensor) = const(val=[True, True, True, False], name="m")
 *       %l: (1, 2, 6, 1, fp32)(Tensor) = slice_by_index(x=%x, begin=%b0, end=%e0, end_mask=%m, name="l")
 *       %b1: (4,int32)*(Tensor) = const(val=[0, 0, 0, -2], name="b1")
 *       %e1: (4,int32)*(Tensor) = const(val=[0, 0, 0, -1], name="e1")
 *       %r: (1, 2, 6, 1, fp32)(Tensor) = slice_by_index(x=%x, begin=%b1, end=%e1, end_mask=%m, name="r")
 *       %ax: (int32)*(Scalar) = const(val=3, name="ax")
 *       %f: (bool)*(Scalar) = const(val=False, name="f")
 *       %c: (1, 2, 6, 10, fp32)(Tensor) = concat(values=(%l, %x, %r), axis=%ax, interleave=%f, name="c")
 *     } -> (%c)
 *   }
 *
 * becomes
 *
 *   main(%x: (1, 2, 6, 8, fp32)(Tensor)) {
 *     block0() {
 *       ... the consts above ...
 *       %pad_0_pad_0: (2,int32)*(Tensor) = const(val=[1, 1], name="pad_0_pad_0")
 *       %pad_0_mode_0: (string)*(Scalar) = const(val="reflect", name="pad_0_mode_0")
 *       %pad_0_constant_val_0: (fp32)*(Scalar) = const(val=0.0, name="pad_0_constant_val_0")
 *       %c: (1, 2, 6, 10, fp32)(Tensor) = pad(x=%x, pad=%pad_0_pad_0, mode=%pad_0_mode_0, constant_val=%pad_0_constant_val_0, name="pad_0")
 *     } -> (%c)
 *   }
 *
 * Conditions, as coremltools checks them: the concat has an odd number
 * (>= 3) of inputs; the middle one is the original tensor x; every other
 * input is the output of a slice_by_index of x that is not a block output;
 * the first slice's end_mask (or, without one, "end equals the dim") has a
 * False entry, whose position is the axis; each slice takes one element
 * on that axis, at the mirrored position (counting from the middle
 * outwards: begin n/2, n/2-1, ... on the left, then -2, -3, ... or their
 * positive forms on the right). Only the last two axes can be padded. The
 * pad (fresh name) goes before the concat; the concat and the slices are
 * removed. Left alone where coremltools would fail (a slice also read
 * elsewhere). Function bodies only, one sweep.
 *
 * Mirrors coremltools/converters/mil/mil/passes/defs/
 * optimize_tensor_operation.py (use_reflection_padding).
 */
#include <stdlib.h>

#include "passes/fuse_util_internal.h"
#include "passes/tensor_pass_internal.h"

#define MAX_RANK 64

/* coremltools' resolve_end_mask: false when unknown. */
static bool end_mask(const mil_op *sl, bool *mask, int64_t *n) {
  const mil_input *in = mil_op_find_input(sl, "end_mask");
  if (in && in->n_args > 0) {
    const mil_value *v = pass_input_value(sl, "end_mask");
    if (!v || v->kind != MIL_VAL_TENSOR || v->numel > MAX_RANK) return false;
    for (int64_t i = 0; i < v->numel; i++) mask[i] = mil_value_get_i64(v, i) != 0;
    *n = v->numel;
    return true;
  }
  int64_t end[MAX_RANK], ne;
  mil_var *x = mil_op_input_var(sl, "x");
  if (!pass_t_ints(sl, "end", end, MAX_RANK, &ne) || pass_t_rank(x) < 0) return false;
  int64_t k = ne < x->type->rank ? ne : x->type->rank;
  for (int64_t i = 0; i < k; i++) mask[i] = x->type->dims[i].size >= 0 && end[i] == x->type->dims[i].size;
  *n = k;
  return true;
}

/* Every use of op's output is by `by`. */
static bool only_used_by(const mil_op *op, const mil_op *by) {
  for (const mil_use *u = op->outputs[0]->uses; u; u = u->next_use)
    if (u->op != by) return false;
  return true;
}

static int try_pad(pass_t_ctx *c, mil_op *cat) {
  if (!pass_t_is(cat, "concat") || cat->n_outputs != 1) return 0;
  const mil_input *vals = mil_op_find_input(cat, "values");
  if (!vals) return 0;
  int32_t n = vals->n_args;
  if (n % 2 != 1 || n == 1) return 0;
  mil_var *orig = vals->args[n / 2].use.var;
  if (!orig) return 0;
  int64_t axis = -1, begin_index = n / 2, mask_len = 0;
  bool have_mask = false;
  mil_op **slices = malloc((size_t)n * sizeof *slices);
  if (!slices) return pass_t_oom(c);
  int32_t ns = 0;
  int res = 0;
  for (int32_t i = 0; i < n; i++) {
    mil_var *v = vals->args[i].use.var;
    if (v == orig) {
      begin_index -= 2;
      continue;
    }
    mil_op *sl = v ? v->op : NULL;
    if (!sl || !pass_t_is(sl, "slice_by_index") || sl->n_outputs != 1) goto out;
    if (mil_op_input_var(sl, "x") != orig) goto out;
    if (pass_t_is_output_of(sl->outputs[0], cat->block)) goto out;
    if (!have_mask) {
      bool mask[MAX_RANK];
      if (!end_mask(sl, mask, &mask_len)) goto out;
      for (int64_t k = 0; k < mask_len && axis < 0; k++)
        if (!mask[k]) axis = k;
      if (axis < 0) goto out;
      have_mask = true;
    }
    int64_t end[MAX_RANK], beg[MAX_RANK], ne, nb;
    if (!pass_t_ints(sl, "end", end, MAX_RANK, &ne) || !pass_t_ints(sl, "begin", beg, MAX_RANK, &nb)) goto out;
    if (axis >= ne || axis >= nb || end[axis] - beg[axis] != 1) goto out;
    if (pass_t_rank(orig) <= axis) goto out;
    int64_t dim = orig->type->dims[axis].size;
    if (beg[axis] != begin_index && (dim < 0 || beg[axis] != begin_index + dim)) goto out;
    begin_index--;
    slices[ns++] = sl;
  }
  if (axis < 0) goto out;
  int64_t neg_axis = axis - mask_len, pad_size = ns / 2, pad[4] = {pad_size, pad_size, 0, 0};
  int32_t npad;
  if (neg_axis == -1) npad = 2;
  else if (neg_axis == -2) npad = 4;
  else goto out;
  for (int32_t i = 0; i < ns; i++)
    if (slices[i]->block != cat->block || !only_used_by(slices[i], cat)) goto out;
  mil_op *pd = pass_t_op(c, cat, "pad", NULL);
  if (!pd) {
    res = pass_t_oom(c);
    goto out;
  }
  pass_t_var(pd, "x", orig);
  if (!pass_t_const(c, pd, "pad", pass_t_i32s(c->p, npad, pad)) ||
      !pass_t_const(c, pd, "mode", pass_t_str(c->p, "reflect"))) {
    res = pass_t_oom(c);
    goto out;
  }
  mil_status st = pass_t_finish(c, pd);
  if (st != MIL_OK) {
    res = -(int)st;
    goto out;
  }
  if ((res = pass_t_replace(c, cat, cat->outputs[0], pd->outputs[0])) < 0) goto out;
  slices[ns++] = cat;
  if ((res = pass_t_remove(c, slices, ns)) < 0) goto out;
  res = 1;
out:
  free(slices);
  return res;
}

/* The op types try_pad() can rewrite at (it returns 0 at any other). */
static const char *const k_types[] = {"concat", NULL};

static int walk_fn(void *ud, mil_op *op) { return try_pad(ud, op); }

static mil_status run(mil_program *p, const mil_pass_options *o, mil_pass_stats *st, mil_diag *d) {
  (void)o;
  pass_t_ctx c = {.p = p, .d = d, .pass = "use_reflection_padding"};
  pass_walk_spec ws = {c.pass, k_types, false, PASS_WALK_NESTED_SKIP, true, NULL};
  mil_status s = pass_walk_run(p, d, &ws, walk_fn, &c, &c.changes);
  if (st) st->changes += c.changes;
  pass_t_free(&c);
  return s;
}

static const char *const k_anchors[] = {"concat", NULL};
const mil_pass_def pass_def_use_reflection_padding = {
    "common::use_reflection_padding", "replace a concat of mirrored size-1 slices with a reflect pad", NULL, 0,
    run, k_anchors};
