/* common::concat_to_pixel_shuffle — two interleaved concats along H feeding
 * an interleaved concat along W are one channel concat and a pixel_shuffle
 * with upscale factor 2 (the fast up-convolution of FCRN).
 *
 *   main(%a: (1, 2, 3, 4, fp32)(Tensor), %b: (1, 2, 3, 4, fp32)(Tensor),
 *        %c: (1, 2, 3, 4, fp32)(Tensor), %d: (1, 2, 3, 4, fp32)(Tensor)) {
 *     block0() {
 *       %h: (int32)*(Scalar) = const(val=2, name="h")
 *       %w: (int32)*(Scalar) = const(val=3, name="w")
 *       %t: (bool)*(Scalar) = const(val=True, name="t")
 *       %h0: (1, 2, 6, 4, fp32)(Tensor) = concat(values=(%a, %b), axis=%h, interleave=%t, name="h0")
 *       %h1: (1, 2, 6, 4, fp32)(Tensor) = concat(values=(%c, %d), axis=%h, interleave=%t, name="h1")
 *       %o: (1, 2, 6, 8, fp32)(Tensor) = concat(values=(%h0, %h1), axis=%w, interleave=%t, name="o")
 *     } -> (%o)
 *   }
 *
 * becomes
 *
 *   main(...) {
 *     block0() {
 *       %h: (int32)*(Scalar) = const(val=2, name="h")
 *       %w: (int32)*(Scalar) = const(val=3, name="w")
 *       %t: (bool)*(Scalar) = const(val=True, name="t")
 *       %concat_0_axis_0: (int32)*(Scalar) = const(val=1, name="concat_0_axis_0")
 *       %concat_0_interleave_0: (bool)*(Scalar) = const(val=True, name="concat_0_interleave_0")
 *       %concat_0: (1, 8, 3, 4, fp32)(Tensor) = concat(values=(%a, %c, %b, %d), axis=%concat_0_axis_0, interleave=%concat_0_interleave_0, name="concat_0")
 *       %pixel_shuffle_0_upscale_factor_0: (int32)*(Scalar) = const(val=2, name="pixel_shuffle_0_upscale_factor_0")
 *       %o: (1, 2, 6, 8, fp32)(Tensor) = pixel_shuffle(x=%concat_0, upscale_factor=%pixel_shuffle_0_upscale_factor_0, name="pixel_shuffle_0")
 *     } -> (%o)
 *   }
 *
 * Conditions: the outer concat has rank-4 inputs, axis 3 (as written, not
 * -1), interleave true and exactly two inputs, each made by a concat with
 * interleave true, axis 2 and exactly two inputs. The new ops (fresh
 * names) go before the first inner concat and take the inputs
 * (a0, a1, b0, b1) in the order (a0, b0, a1, b1). Uses of the outer concat
 * after the first inner concat move to the pixel_shuffle; the three
 * concats are removed. The pattern is left alone where coremltools would
 * fail (an inner concat read elsewhere or an output, an input of the
 * second inner concat defined after the first). Function bodies only,
 * one sweep.
 *
 * Mirrors coremltools/converters/mil/mil/passes/defs/
 * optimize_tensor_operation.py (concat_to_pixel_shuffle).
 */
#include "passes/fuse_util_internal.h"
#include "passes/tensor_pass_internal.h"

static bool concat_ok(const mil_op *op, int64_t axis) {
  const mil_input *vals = mil_op_find_input(op, "values");
  const mil_value *iv = pass_input_value(op, "interleave"), *av = pass_input_value(op, "axis");
  if (!vals || vals->n_args != 2 || !iv || iv->numel != 1 || !mil_value_get_i64(iv, 0)) return false;
  if (!av || av->numel != 1 || mil_value_get_i64(av, 0) != axis) return false;
  for (int32_t i = 0; i < 2; i++)
    if (!vals->args[i].use.var) return false;
  return true;
}

/* The inner concat's output is read only by the outer concat. */
static bool only_feeds(const mil_op *inner, const mil_op *outer) {
  if (inner->n_outputs != 1) return false;
  for (const mil_use *u = inner->outputs[0]->uses; u; u = u->next_use)
    if (u->op != outer) return false;
  return true;
}

/* v is visible before op (defined outside op's block, or before op in it). */
static bool defined_before(const mil_var *v, const mil_op *op) {
  if (!v->op || v->op->block != op->block) return true;
  return v->op == op ? false : mil_op_is_before(v->op, op);
}

static int try_fuse(pass_t_ctx *c, mil_op *w) {
  if (!pass_t_is(w, "concat") || w->n_outputs != 1) return 0;
  const mil_input *vals = mil_op_find_input(w, "values");
  if (!vals || vals->n_args < 1 || !vals->args[0].use.var || pass_t_rank(vals->args[0].use.var) != 4) return 0;
  if (!concat_ok(w, 3)) return 0;
  mil_op *h0 = vals->args[0].use.var->op, *h1 = vals->args[1].use.var->op;
  if (!h0 || !h1 || !pass_t_is(h0, "concat") || !pass_t_is(h1, "concat")) return 0;
  if (!concat_ok(h0, 2) || !concat_ok(h1, 2) || h0 == h1) return 0;
  if (h0->block != w->block || h1->block != w->block) return 0;
  if (!only_feeds(h0, w) || !only_feeds(h1, w)) return 0;
  const mil_input *v0 = mil_op_find_input(h0, "values"), *v1 = mil_op_find_input(h1, "values");
  mil_var *all[4] = {v0->args[0].use.var, v1->args[0].use.var, v0->args[1].use.var, v1->args[1].use.var};
  if (!defined_before(all[1], h0) || !defined_before(all[3], h0)) return 0;
  mil_op *cc = pass_t_op(c, h0, "concat", NULL);
  if (!cc) return pass_t_oom(c);
  pass_t_tuple(cc, "values", 4, all);
  if (!pass_t_const(c, cc, "axis", pass_t_i32(c->p, 1)) || !pass_t_const(c, cc, "interleave", pass_t_bool(c->p, true)))
    return pass_t_oom(c);
  mil_status st = pass_t_finish(c, cc);
  if (st != MIL_OK) return -(int)st;
  mil_op *ps = pass_t_op(c, h0, "pixel_shuffle", NULL);
  if (!ps) return pass_t_oom(c);
  pass_t_var(ps, "x", cc->outputs[0]);
  if (!pass_t_const(c, ps, "upscale_factor", pass_t_i32(c->p, 2))) return pass_t_oom(c);
  if ((st = pass_t_finish(c, ps)) != MIL_OK) return -(int)st;
  int r = pass_t_replace(c, h0, w->outputs[0], ps->outputs[0]);
  if (r < 0) return r;
  mil_op *dead[3] = {w, h0, h1};
  if ((r = pass_t_remove(c, dead, 3)) < 0) return r;
  return 1;
}

/* The op types try_fuse() can rewrite at (it returns 0 at any other). */
static const char *const k_types[] = {"concat", NULL};

static int walk_fn(void *ud, mil_op *op) { return try_fuse(ud, op); }

static mil_status run(mil_program *p, const mil_pass_options *o, mil_pass_stats *st, mil_diag *d) {
  (void)o;
  pass_t_ctx c = {.p = p, .d = d, .pass = "concat_to_pixel_shuffle"};
  pass_walk_spec ws = {c.pass, k_types, false, PASS_WALK_NESTED_SKIP, true, NULL};
  mil_status s = pass_walk_run(p, d, &ws, walk_fn, &c, &c.changes);
  if (st) st->changes += c.changes;
  pass_t_free(&c);
  return s;
}

static const char *const k_anchors[] = {"concat", NULL};
const mil_pass_def pass_def_concat_to_pixel_shuffle = {
    "common::concat_to_pixel_shuffle", "replace nested interleaved concats with a concat and a pixel_shuffle", NULL,
    0, run, k_anchors};
